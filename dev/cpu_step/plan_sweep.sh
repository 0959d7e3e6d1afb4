#!/usr/bin/env bash
# plan_sweep.sh — the CPU matmul engine's compile-time blocking knobs
# (src/cpu/matmul_engine.c: MM_UNITS, MM_MC_TILES, MM_NC_TILES, MM_KC, MM_MR, MM_NV)
# against whole training steps: one tinytrain build per variant, a bits check
# (the loss after 10 mega steps must equal the first variant's: the blocking
# never changes a product's chain of fused multiply-adds), then
# `tinytrain bench --backend cpu` of every variant in turn, round after
# round, at mega and at the shakespeare_char shape (6 layers, d 384, 6 heads,
# ctx 256, batch 64), and a table of each variant's median and its ratio to
# the first variant's. About 6 minutes on a 16-core host with the defaults.
#
#   bash dev/cpu_step/plan_sweep.sh [--variants "name=FLAGS;..."] [--rounds N] [--rounds-sh N]
#                                   [--data FILE] [--jobs N] [--smoke]
#
# --variants: semicolon-separated name=CFLAGS (default below; the first is
# the reference). --rounds: rounds at mega (default 4); --rounds-sh: rounds
# at the shakespeare shape (default 2; 0 skips it). --smoke: the tiny preset
# with few steps, to check the script itself on a small machine.
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
variants="base=;u32=-DMM_UNITS=32;u96=-DMM_UNITS=96;mc16=-DMM_MC_TILES=16;nc8=-DMM_NC_TILES=8;kc128=-DMM_KC=128;kc384=-DMM_KC=384"
rounds=4 rounds_sh=2 jobs=$(nproc) smoke=0 data="$here/data/tinyshakespeare.txt"
while [ $# -gt 0 ]; do
  case "$1" in
    --variants) variants=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --rounds-sh) rounds_sh=$2; shift ;;
    --data) data=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    --smoke) smoke=1 ;;
    *) echo "plan_sweep.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
[ -f "$data" ] || { echo "plan_sweep.sh: no corpus at $data (pass --data)" >&2; exit 2; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
declare -a names=() flags=()
IFS=';' read -r -a specs <<< "$variants"
for s in "${specs[@]}"; do
  n=${s%%=*}
  case "$n" in ''|*[!A-Za-z0-9_]*) echo "plan_sweep.sh: bad variant name in '$s'" >&2; exit 2 ;; esac
  names+=("$n"); flags+=("${s#*=}")
done
[ ${#names[@]} -ge 1 ] || { echo "plan_sweep.sh: no variants" >&2; exit 2; }
per=$(( jobs / ${#names[@]} )); [ $per -ge 1 ] || per=1
for i in "${!names[@]}"; do
  ( cmake -S "$here" -B "$tmp/${names[$i]}" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_C_FLAGS=${flags[$i]}" > "$tmp/${names[$i]}.log" 2>&1 &&
      cmake --build "$tmp/${names[$i]}" --target tinytrain -j "$per" >> "$tmp/${names[$i]}.log" 2>&1 ) &
done
wait
for n in "${names[@]}"; do
  [ -x "$tmp/$n/tinytrain" ] || { echo "plan_sweep.sh: build of $n failed:"; tail -5 "$tmp/$n.log"; exit 1; }
done
if [ $smoke = 1 ]; then
  mega=(--preset tiny --steps 10 --warmup 2); sh=(--preset tiny --batch 4 --steps 10 --warmup 1); check=(--preset tiny)
  lm=tiny ls=tiny-b4
else
  lm=mega ls=shakespeare
  mega=(--preset mega --steps 12 --warmup 3)
  sh=(--preset small --layers 6 --d-model 384 --heads 6 --ctx 256 --batch 64 --steps 10 --warmup 2)
  check=(--preset mega)
fi
bench() { # variant, args... -> median ms (empty on failure)
  "$tmp/$1/tinytrain" bench --backend cpu --data "$data" --json "${@:2}" 2>/dev/null | grep -o '"median":[^,]*' | head -1 | cut -d: -f2
}
ref=""
for n in "${names[@]}"; do
  l=$("$tmp/$n/tinytrain" bench --backend cpu --data "$data" --json "${check[@]}" --steps 10 --warmup 0 2>/dev/null |
    grep -o '"final_loss":[^,]*' | cut -d: -f2)
  [ -n "$l" ] || { echo "plan_sweep.sh: $n did not run"; exit 1; }
  [ -z "$ref" ] && ref=$l
  if [ "$l" = "$ref" ]; then echo "bits: $n loss after 10 steps $l (same)"
  else echo "bits: $n loss after 10 steps $l DIFFERS from ${names[0]}'s $ref"; exit 1; fi
done
run() { # shape label, rounds, bench args...
  local s=$1 r=$2; shift 2
  for k in $(seq 1 "$r"); do
    for n in "${names[@]}"; do
      v=$(bench "$n" "$@"); [ -n "$v" ] || { echo "plan_sweep.sh: $n failed at $s" >&2; exit 1; }
      echo "$s $n $v" >> "$tmp/times"; echo "  $s round $k $n: $v ms/step"
    done
  done
}
run "$lm" "$rounds" "${mega[@]}" || exit 1
[ "$rounds_sh" -gt 0 ] && { run "$ls" "$rounds_sh" "${sh[@]}" || exit 1; }
echo
echo "medians of the rounds, ms/step (ratio to ${names[0]})"
awk -v order="${names[*]}" '
  { t[$1 " " $2] = t[$1 " " $2] " " $3; shapes[$1] = 1 }
  function med(s,   a, n, i, j, x) { n = split(s, a, " "); for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > x + 0; j--) a[j + 1] = a[j]; a[j + 1] = x }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
  END { nv = split(order, v, " "); printf "%-12s", "shape"; for (i = 1; i <= nv; i++) printf " %16s", v[i]; print ""
    for (s in shapes) { printf "%-12s", s; b = med(t[s " " v[1]])
      for (i = 1; i <= nv; i++) { m = med(t[s " " v[i]]); printf " %8.2f (%.3f)", m, m / b }; print "" } }' "$tmp/times"
