#!/usr/bin/env bash
# quality.sh — the shakespeare_char recipe (recipes/shakespeare_char.json)
# through tinytrain WebGPU and through PyTorch (bench/torch_shakespeare.py) in
# one call on a GPU host, scored on one yardstick: tinytrain's fixed
# validation windows, which the PyTorch script evaluates too (val_tt), beside
# nanoGPT's random-batch estimate (val). Runs one after the other, so the wall
# times compare.
#
#   bash bench/quality.sh OUTDIR [SEED] [STOP_AFTER] [TORCH_MODE]
#
# SEED (default 1337) seeds both; STOP_AFTER (default 0: the whole 5000-step
# schedule) cuts both runs short at the same step (the best validation of
# this recipe comes at 1500-2250); TORCH_MODE fp32 (default) or bf16c. Needs
# TINYTRAIN_WEBGPU_LIB (and the Vulkan loader) as for any WebGPU run, python3
# with torch and CUDA. Writes OUTDIR/tt.jsonl, OUTDIR/torch.jsonl and prints
# the table.
set -uo pipefail
out=${1:?usage: bench/quality.sh OUTDIR [SEED] [STOP_AFTER] [TORCH_MODE]}
seed=${2:-1337}
stop=${3:-0}
mode=${4:-fp32}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
tt=${TINYTRAIN:-$root/build/tinytrain}
mkdir -p "$out" || exit 2
stopflag=()
[ "$stop" -gt 0 ] && stopflag=(--stop-after "$stop")
s0=$(date +%s)
"$tt" train --config "$root/recipes/shakespeare_char.json" --backend webgpu --seed "$seed" "${stopflag[@]}" \
  --out "$out/run" --json > "$out/tt.jsonl" 2> "$out/tt.err"
echo "tinytrain rc=$? wall $(( $(date +%s) - s0 )) s"
s1=$(date +%s)
python3 "$here/torch_shakespeare.py" "$root/data/tinyshakespeare.txt" --mode "$mode" --seed "$seed" --stop-after "$stop" \
  > "$out/torch.jsonl" 2> "$out/torch.err"
echo "torch rc=$? wall $(( $(date +%s) - s1 )) s"
python3 - "$out/tt.jsonl" "$out/torch.jsonl" <<'PY'
import json, sys
tt = {e["step"]: e["val_loss"] for e in map(json.loads, open(sys.argv[1])) if e.get("event") == "eval"}
th = {e["step"]: e for e in map(json.loads, open(sys.argv[2])) if "step" in e and "val" in e}
print("%6s %10s %14s %14s" % ("step", "tinytrain", "torch val_tt", "torch val"))
for s in sorted(set(tt) | set(th)):
    t = th.get(s, {})
    f = lambda v: "%.4f" % v if isinstance(v, float) else "-"
    print("%6d %10s %14s %14s" % (s, f(tt.get(s)), f(t.get("val_tt")), f(t.get("val"))))
if tt and th:
    print("best: tinytrain %.4f | torch on tinytrain's windows %.4f | torch random %.4f" % (
        min(tt.values()), min(e["val_tt"] for e in th.values()), min(e["val"] for e in th.values())))
PY
