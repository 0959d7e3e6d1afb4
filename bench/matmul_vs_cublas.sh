#!/usr/bin/env bash
# matmul_vs_cublas.sh — every matmul of one tinytrain WebGPU training step
# against the same product through PyTorch (cuBLAS) fp32, TF32 off, measured
# in the same call: `tinytrain profile --detail --json` times each dispatch
# site of the step, then bench/torch_matmul.py times each distinct product
# (shape, transposes, accumulate / bias / residual) on CUDA and prints the
# table and totals (matmuls, split-K epilogues, attention, share of the step).
# Methodology: docs/BENCHMARKS.md ("Matmuls against cuBLAS").
#
#   bench/matmul_vs_cublas.sh shakespeare            # a named shape (bench/shapes.sh)
#   bench/matmul_vs_cublas.sh gpt2                   # a preset
#   bench/matmul_vs_cublas.sh --layers 6 --d-model 384 --heads 6 --ctx 256 --batch 64
#   bench/matmul_vs_cublas.sh shakespeare --out DIR --reps 20 --timing fake
#
# The first argument may be a shape or preset name; every other tinytrain
# model option (--preset, --layers, --d-model, --heads, --ctx, --batch) passes
# through to `tinytrain profile`. Own options:
#   --out DIR       where profile.json, matmul_vs_cublas.json and .txt go
#                   (default out/matmul-<name>-<UTC time>)
#   --reps N        repetitions per site of the profile (default 20) and
#                   measurements per product of the torch side (default 20)
#   --inner N       products back to back per torch measurement (default 10)
#   --timing torch|fake   fake: no GPU on the torch side (a FLOP formula; tests)
# Environment: TINYTRAIN (default build/tinytrain), PYTHON (python3),
#   TINYTRAIN_WEBGPU_LIB (Dawn, as for every WebGPU run).
# Exit: 0; 2 for bad arguments; 1 when a side failed (the message says which).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
. "$here/shapes.sh"

die() { echo "matmul_vs_cublas.sh: error: $1" >&2; exit "${2:-1}"; }
TINYTRAIN=${TINYTRAIN:-$root/build/tinytrain}
PYTHON=${PYTHON:-python3}

name="" out="" reps=20 inner=10 timing=torch model=()
if [ $# -gt 0 ] && [[ "$1" != -* ]]; then
  name=$1; shift
  if d=$(tt_shape_dims "$name"); then
    set -- $(tt_shape_args "$name") "$@"
  else
    set -- --preset "$name" "$@"
  fi
fi
while [ $# -gt 0 ]; do
  a=$1; v=${2:-}
  case "$a" in
    --preset|--layers|--d-model|--heads|--ctx|--batch)
      [ -n "$v" ] || die "$a needs a value" 2
      model+=("$a" "$v"); [ "$a" = --preset ] && [ -z "$name" ] && name=$v; shift ;;
    --out) out=$v; shift ;;
    --reps) reps=$v; shift ;;
    --inner) inner=$v; shift ;;
    --timing) timing=$v; shift ;;
    -h|--help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$a' (see --help)" 2 ;;
  esac
  shift
done
[[ "$reps" =~ ^[1-9][0-9]*$ ]] || die "--reps needs a whole number >= 1 (got '$reps')" 2
[[ "$inner" =~ ^[1-9][0-9]*$ ]] || die "--inner needs a whole number >= 1 (got '$inner')" 2
case "$timing" in torch|fake) ;; *) die "--timing is torch or fake (got '$timing')" 2 ;; esac
[ -n "$name" ] || name=custom
[ -x "$TINYTRAIN" ] || die "native CLI not found: $TINYTRAIN (build it, or set TINYTRAIN)"
[ -n "$out" ] || out="$root/out/matmul-$name-$(date -u +%Y%m%d-%H%M%S)"
mkdir -p "$out" || die "cannot create output folder '$out'"

echo "matmul_vs_cublas.sh: $name (${model[*]}), profile reps $reps, output $out"
t0=$(date +%s)
"$TINYTRAIN" profile "${model[@]}" --detail --json --reps "$reps" > "$out/profile.json" 2> "$out/profile.err" ||
  die "tinytrain profile failed: $(tail -1 "$out/profile.err")"
echo "matmul_vs_cublas.sh: tinytrain profile took $(( $(date +%s) - t0 )) s"
"$PYTHON" "$here/torch_matmul.py" "$out/profile.json" --name "$name" --reps "$reps" --inner "$inner" \
  --timing "$timing" --json "$out/matmul_vs_cublas.json" | tee "$out/matmul_vs_cublas.txt"
rc=${PIPESTATUS[0]}
[ "$rc" = 0 ] || die "bench/torch_matmul.py failed (exit $rc)"
echo "matmul_vs_cublas.sh: wrote $out/profile.json, matmul_vs_cublas.json, matmul_vs_cublas.txt ($(( $(date +%s) - t0 )) s)"
