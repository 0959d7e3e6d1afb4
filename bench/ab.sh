#!/usr/bin/env bash
# ab.sh — two tinytrain builds side by side in one sitting: for each preset,
# `tinytrain bench` of build A, then B, then A, then B (ABAB, so drift of
# the machine's clocks hits both), then the medians and the ratio B/A; and,
# with --check-steps N, the first N training steps of each preset on both
# builds compared line by line (loss, lr, grad norm: bit-identical or not).
#   bash bench/ab.sh A_TINYTRAIN B_TINYTRAIN [--backend webgpu] [--presets tiny,small,...]
#        [--check-steps 50] [--data PATH] [--steps 40]
# A name in --presets may also be a compute-bound shape of bench/shapes.sh
# (shakespeare, gpt2b8).
# Prints one line per preset; exit 1 if a check differs.
set -u
A=$1 B=$2; shift 2
backend=webgpu presets="tiny small medium large xl huge massive mega gpt2" check=0 data="" steps=40
while [ $# -gt 0 ]; do
  case "$1" in
    --backend) backend=$2; shift ;;
    --presets) presets=${2//,/ }; shift ;;
    --check-steps) check=$2; shift ;;
    --data) data=$2; shift ;;
    --steps) steps=$2; shift ;;
    *) echo "ab.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
. "$(dirname "$0")/shapes.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
d=(); [ -n "$data" ] && d=(--data "$data")
med() { sed -n 's/.*"ms_per_step":{"median":\([0-9.e+-]*\).*/\1/p' "$1"; }
fail=0
printf '%-8s %10s %10s %10s %10s %8s  %s\n' preset A1_ms B1_ms A2_ms B2_ms B/A check
for p in $presets; do
  m=(--preset "$p"); a=$(tt_shape_args "$p") && m=($a)
  r=()
  for run in A1 B1 A2 B2; do
    bin=$A; [ "${run#B}" != "$run" ] && bin=$B
    "$bin" bench --backend "$backend" "${m[@]}" --steps "$steps" "${d[@]}" --json > "$tmp/$p.$run.json" 2> "$tmp/$p.$run.err"
    r+=("$(med "$tmp/$p.$run.json")")
  done
  ratio=$(awk -v a1="${r[0]}" -v b1="${r[1]}" -v a2="${r[2]}" -v b2="${r[3]}" 'BEGIN { if (a1 + a2 > 0) printf "%.3f", (b1 + b2) / (a1 + a2); else print "-" }')
  c="-"
  if [ "$check" -gt 0 ]; then
    for run in A B; do
      bin=$A; [ $run = B ] && bin=$B
      "$bin" train --backend "$backend" "${m[@]}" "${d[@]}" --stop-after "$check" --save-every 0 --sample-tokens 0 \
          --json --out "$tmp/$p.$run.out" 2> /dev/null |
        sed -n 's/^{"event":"step","step":\([0-9]*\),"steps":[0-9]*,"loss":\([^,]*\),"lr":\([^,]*\),"grad_norm":\([^,]*\),.*/\1 \2 \3 \4/p' > "$tmp/$p.$run.steps"
    done
    n=$(wc -l < "$tmp/$p.A.steps")
    if [ "$n" -eq "$check" ] && cmp -s "$tmp/$p.A.steps" "$tmp/$p.B.steps"; then c="identical($n)"; else c="DIFFER"; fail=1; fi
  fi
  printf '%-8s %10s %10s %10s %10s %8s  %s\n' "$p" "${r[0]:--}" "${r[1]:--}" "${r[2]:--}" "${r[3]:--}" "$ratio" "$c"
done
exit $fail
