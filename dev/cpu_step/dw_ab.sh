#!/usr/bin/env bash
# dw_ab.sh — the weight-gradient products (dW = X^T . dY) of the CPU step,
# old build against this tree: bench/bench_ops rows "dweight only" (plus the
# whole "bwd" rows of fc and proj) at the shakespeare_char shape (6 layers,
# d 384, 6 heads, ctx 256, batch 64) and at mega, on N threads (default all
# cores) and on 1 thread, rounds alternating old/new, one table:
#
#   shape        threads  row                          old_ms   new_ms  new/old
#
#   bash dev/cpu_step/dw_ab.sh OLD [--threads N] [--rounds R] [--only TEXT] [--smoke]
#
# --only: the bench_ops rows to time instead (its only=TEXT: rows whose
# label contains TEXT), e.g. --only attention for the attention rows.
#
# OLD: a commit of this checkout (built from `git archive`) or the source
# directory of the old tree. --smoke: the
# tiny preset with a long token chain, to check the script on a small
# machine. About 2 minutes on a 16-core host.
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
old=${1:?usage: dw_ab.sh OLD [--threads N] [--rounds R] [--only TEXT] [--smoke]}; shift
threads=$(nproc) rounds=2 smoke=0 only=" bwd"
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) threads=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --only) only=$2; shift ;;
    --smoke) smoke=1 ;;
    *) echo "dw_ab.sh: unknown option $1" >&2; exit 1 ;;
  esac
  shift
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
jobs=$(( $(nproc) > 2 ? $(nproc) / 2 : 1 ))
build() { cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release > "$2.log" 2>&1 && cmake --build "$2" --target bench_ops -j "$jobs" >> "$2.log" 2>&1 || { echo "dw_ab.sh: build of $1 failed (see $2.log)" >&2; tail -5 "$2.log" >&2; exit 1; }; }
if [ -d "$old" ]; then oldsrc=$(cd "$old" && pwd)
else
  oldsrc=$tmp/old-src
  mkdir -p "$oldsrc" && git -C "$here" archive "$old" | tar -x -C "$oldsrc" || { echo "dw_ab.sh: cannot archive $old" >&2; exit 1; }
fi
build "$oldsrc" "$tmp/old" & build "$here" "$tmp/new" & wait
[ -x "$tmp/old/bench_ops" ] && [ -x "$tmp/new/bench_ops" ] || exit 1
if [ $smoke = 1 ]; then
  shapes=("tiny:tiny T=256 B=12")
else
  shapes=("shakespeare:small L=6 C=384 NH=6 T=256 B=64" "mega:mega L=14")
fi
tlist="$threads"; [ "$threads" != 1 ] && tlist="$threads 1"
printf '%-12s %7s  %-36s %9s %9s %8s\n' shape threads row old_ms new_ms new/old
for sh in "${shapes[@]}"; do
  name=${sh%%:*} args=${sh#*:}
  for t in $tlist; do
    reps=9; [ "$t" = 1 ] && reps=3
    for r in $(seq "$rounds"); do
      for b in old new; do
        "$tmp/$b/bench_ops" "${args%% *}" "$t" "$reps" ${args#* } "only=$only" >> "$tmp/$name.$t.$b" 2>&1 || echo "dw_ab.sh: $b $name $t threads failed" >&2
      done
    done
    # every "LABEL  X ms" row: median over the rounds, old and new side by side
    awk -v shape="$name" -v t="$t" '
      function row(  i, l) { for (i = 1; i <= NF; i++) if ($i == "ms") break; if (i > NF || i < 3) return "";
                             l = $1; for (k = 2; k <= i - 2; k++) l = l " " $k; val = $(i - 1); return l }
      FNR == 1 { f++ }
      { l = row(); if (l == "" || l ~ /^(preset|last)/) next; if (!(l in seen)) { seen[l] = 1; order[++n] = l }
        c = ++cnt[f, l]; v[f, l, c] = val }
      function med(f, l,   m, i, j, x, a) { m = cnt[f, l]; if (!m) return "-"; for (i = 1; i <= m; i++) a[i] = v[f, l, i] + 0
                             for (i = 2; i <= m; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
                             return a[int((m + 1) / 2)] }
      END { for (i = 1; i <= n; i++) { o = med(1, order[i]); w = med(2, order[i])
              printf "%-12s %7s  %-36s %9s %9s %8s\n", shape, t, order[i], o, w, (o + 0 > 0 && w != "-") ? sprintf("%.3f", w / o) : "-" } }
    ' "$tmp/$name.$t.old" "$tmp/$name.$t.new"
  done
done
