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
# this recipe comes at 1500-2250; the evaluation due at that step is made);
# TORCH_MODE fp32 (default), bf16c, or none
# (no PyTorch run: the table has tinytrain's column alone; also read from the
# environment when the argument is left out). Needs TINYTRAIN_WEBGPU_LIB (and
# the Vulkan loader) as for any WebGPU run, python3 (the table), and for the
# PyTorch run torch with CUDA. Writes OUTDIR/tt.jsonl (+ tt.err),
# OUTDIR/torch.jsonl (+ torch.err) and prints the table.
#
# Environment (all optional; unset, the run is the native CLI's as always):
#   TT_ENGINE  native (default): build/tinytrain train --config RECIPE --backend webgpu
#                --json (TINYTRAIN: another binary);
#              browser: the web app's engine and training loop headless under
#                Node (bench/browser_engine.mjs --recipe RECIPE: web/worker.js,
#                web/dist's WebGPU module on Dawn's Node binding), the same
#                JSON lines; e.g. the f16 tier, which only it has on NVIDIA:
#                TT_ENGINE=browser TT_OPTS=precision=f16
#                TT_TOGGLES=allow_unsafe_apis,vulkan_enable_f16_on_nvidia
#   TT_OPTS    more engine options, name=value separated by spaces (later
#              wins over the recipe; native: given as --name value flags)
#   RECIPE     the run file (default recipes/shakespeare_char.json; the
#              PyTorch script is that recipe only: with another, TORCH_MODE=none)
#   NODE       browser: Node >= 24 (JSPI) (default: node on the PATH)
#   DAWN       browser: Dawn's Node binding (default: the npm package's,
#              node_modules/webgpu/dist/linux-x64/dawn.node)
#   TT_TOGGLES browser: Dawn toggles, comma-separated (browser_engine.mjs --toggles)
#
# Two tinytrain runs side by side (f32 against f16, no PyTorch):
#   TORCH_MODE=none TT_ENGINE=browser bash bench/quality.sh out/f32
#   TORCH_MODE=none TT_ENGINE=browser TT_OPTS=precision=f16 TT_TOGGLES=... bash bench/quality.sh out/f16
set -uo pipefail
out=${1:?usage: bench/quality.sh OUTDIR [SEED] [STOP_AFTER] [TORCH_MODE]}
seed=${2:-1337}
stop=${3:-0}
mode=${4:-${TORCH_MODE:-fp32}}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
tt=${TINYTRAIN:-$root/build/tinytrain}
engine=${TT_ENGINE:-native}
recipe=${RECIPE:-$root/recipes/shakespeare_char.json}
ttopts=${TT_OPTS:-}
case "$engine" in native|browser) ;; *) echo "quality.sh: TT_ENGINE must be native or browser, not $engine" >&2; exit 2 ;; esac
case "$mode" in fp32|bf16c|none) ;; *) echo "quality.sh: TORCH_MODE must be fp32, bf16c or none, not $mode" >&2; exit 2 ;; esac
mkdir -p "$out" || exit 2
stopflag=()
[ "$stop" -gt 0 ] && stopflag=(--stop-after "$stop")
s0=$(date +%s)
if [ "$engine" = native ]; then
  optflags=()
  for kv in $ttopts; do
    case "$kv" in *=*) optflags+=(--"${kv%%=*}" "${kv#*=}") ;; *) echo "quality.sh: TT_OPTS: '$kv' is not name=value" >&2; exit 2 ;; esac
  done
  "$tt" train --config "$recipe" --backend webgpu --seed "$seed" "${stopflag[@]}" "${optflags[@]}" \
    --out "$out/run" --json > "$out/tt.jsonl" 2> "$out/tt.err"
  echo "tinytrain rc=$? wall $(( $(date +%s) - s0 )) s"
else
  togflag=()
  [ -n "${TT_TOGGLES:-}" ] && togflag=(--toggles "$TT_TOGGLES")
  "${NODE:-node}" --experimental-wasm-jspi "$here/browser_engine.mjs" --recipe "$recipe" \
    --dawn "${DAWN:-$root/node_modules/webgpu/dist/linux-x64/dawn.node}" "${togflag[@]}" \
    --opts "backend=webgpu seed=$seed $ttopts" "${stopflag[@]}" > "$out/tt.jsonl" 2> "$out/tt.err"
  echo "tinytrain (browser engine${ttopts:+: $ttopts}) rc=$? wall $(( $(date +%s) - s0 )) s"
fi
thf=""
if [ "$mode" != none ]; then
  s1=$(date +%s)
  python3 "$here/torch_shakespeare.py" "$root/data/tinyshakespeare.txt" --mode "$mode" --seed "$seed" --stop-after "$stop" \
    > "$out/torch.jsonl" 2> "$out/torch.err"
  echo "torch rc=$? wall $(( $(date +%s) - s1 )) s"
  thf="$out/torch.jsonl"
fi
python3 - "$out/tt.jsonl" "$thf" <<'PY'
import json, sys
def lines(path):  # the JSON lines of a file; anything else (a driver's notice) is skipped
    try:
        with open(path) as f:
            return [json.loads(l) for l in f if l.startswith("{")]
    except OSError:
        return []
tt = {e["step"]: e["val_loss"] for e in lines(sys.argv[1]) if e.get("event") == "eval"}
th = {e["step"]: e for e in lines(sys.argv[2]) if "step" in e and "val" in e} if sys.argv[2] else None
f = lambda v: "%.4f" % v if isinstance(v, float) else "-"
if th is None:
    print("%6s %10s" % ("step", "tinytrain"))
    for s in sorted(tt):
        print("%6d %10s" % (s, f(tt[s])))
    ok = {s: v for s, v in tt.items() if isinstance(v, float)}
    if ok:
        b = min(ok, key=ok.get)
        print("best: tinytrain %.4f (step %d)" % (ok[b], b))
    sys.exit(0)
print("%6s %10s %14s %14s" % ("step", "tinytrain", "torch val_tt", "torch val"))
for s in sorted(set(tt) | set(th)):
    t = th.get(s, {})
    print("%6d %10s %14s %14s" % (s, f(tt.get(s)), f(t.get("val_tt")), f(t.get("val"))))
if tt and th:
    print("best: tinytrain %.4f | torch on tinytrain's windows %.4f | torch random %.4f" % (
        min(tt.values()), min(e["val_tt"] for e in th.values()), min(e["val"] for e in th.values())))
PY
