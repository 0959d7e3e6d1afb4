#!/usr/bin/env bash
# chaos.sh — how far two f32 runs drift in 50 steps when one starts from the
# other's weights rounded once to f16 (a perturbation of at most 2^-11 per
# weight, far below what f16 matmul operands add at every step): the yardstick
# for the f16 tier's "50-step loss parity" (docs/BENCHMARKS.md, the f16 tier).
# CPU only, minutes on two cores.
#   bash dev/f16/chaos.sh OUTDIR [PRESETS] [SEEDS]
# For each preset and seed: one step of training (the start point, so the
# run is the preset's from a trained step), that checkpoint's weights rounded
# to f16 and back, then 50 f32 steps from each with
# --init-from; prints per pair the worst and median relative difference of
# the step losses and how many steps differ by more than 1%. F16=1 adds the
# pair the tier is judged by: WebGPU f32 and --precision f16 from the same
# start point (any adapter with shader-f16; lavapipe: minutes per run).
set -euo pipefail
out=${1:?usage: dev/f16/chaos.sh OUTDIR [PRESETS] [SEEDS]}
presets=${2:-tiny small medium large}
seeds=${3:-1 2 3}
root=$(cd "$(dirname "$0")/../.." && pwd)
tt=${TINYTRAIN:-$root/build/tinytrain}
data=${TT_DATA:-$root/data/tinyshakespeare.txt}
mkdir -p "$out"
for p in $presets; do for s in $seeds; do
  d=$out/${p}_$s
  "$tt" train --preset "$p" --seed "$s" --steps 1 --backend cpu --eval-every 0 --save-every 0 --data "$data" \
    --out "$d/start" --sample-tokens 0 > /dev/null 2>&1
  python3 - "$d/start/checkpoint.safetensors" "$d/rounded/checkpoint.safetensors" <<'PY'
import json, os, struct, sys
src, dst = sys.argv[1:3]
f = open(src, "rb").read()
n = struct.unpack("<Q", f[:8])[0]
head, data = json.loads(f[8:8 + n]), bytearray(f[8 + n:])
for k, v in head.items():
    if k == "__metadata__" or v["dtype"] != "F32":
        continue
    a, b = v["data_offsets"]
    xs = struct.unpack("<%df" % ((b - a) // 4), data[a:b])
    data[a:b] = struct.pack("<%df" % len(xs), *[struct.unpack("<e", struct.pack("<e", x))[0] for x in xs])
os.makedirs(os.path.dirname(dst), exist_ok=True)
open(dst, "wb").write(f[:8 + n] + bytes(data))
PY
  run() { # NAME INIT FLAGS...: 50 steps from INIT
    local name=$1 init=$2; shift 2
    "$tt" train --preset "$p" --seed "$s" --steps 50 --init-from "$d/$init" --eval-every 0 --save-every 0 \
      --data "$data" --out "$d/run_$name" --sample-tokens 0 --json "$@" > "$d/$name.jsonl" 2> /dev/null
  }
  run start start --backend cpu
  run rounded rounded --backend cpu
  pairs=("f32, rounded start:start:rounded")
  if [ "${F16:-0}" = 1 ]; then
    run gpu_f32 start --backend webgpu
    run gpu_f16 start --backend webgpu --precision f16
    pairs+=("webgpu f32, f16:gpu_f32:gpu_f16")
  fi
  for pr in "${pairs[@]}"; do
    IFS=: read -r what x y <<< "$pr"
    python3 - "$p" "$s" "$what" "$d/$x.jsonl" "$d/$y.jsonl" <<'PY'
import json, statistics, sys
loss = lambda f: [json.loads(l)["loss"] for l in open(f) if '"event":"step"' in l]
a, b = loss(sys.argv[4]), loss(sys.argv[5])
r = [abs(x - y) / x for x, y in zip(a, b)]
print("%-8s seed %s, %-17s %d steps, worst %.2e (step %d), median %.1e, %d steps over 1%%" % (
    sys.argv[1], sys.argv[2], sys.argv[3] + ":", len(r), max(r), r.index(max(r)) + 1, statistics.median(r),
    sum(v > 0.01 for v in r)))
PY
  done
done; done
