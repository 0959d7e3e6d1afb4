#!/usr/bin/env bash
# ops.sh — where the CPU step's time goes, op by op, and how each op scales
# from one thread to all cores: bench/bench_ops (one full step, then every op
# of the step at its shapes) at the shakespeare_char shape (6 layers, d 384,
# 6 heads, ctx 256, batch 64) and at the mega preset, on 1 thread and on N
# threads, joined into one table per shape:
#
#   op                                 1t_ms     Nt_ms  speedup  eff  Nt_GFLOP/s
#
# speedup = 1t_ms / Nt_ms, eff = speedup / N (1.0: the op scales perfectly).
# An op with a low eff is where the threads lose time (too few work units,
# memory bandwidth, a serial part, barriers). With one thread bench_ops
# reports process CPU time, with more it reports wall time.
#
#   bash dev/cpu_step/ops.sh [BUILD_DIR] [--threads N] [--shapes "shakespeare mega"] [--reps1 R] [--repsn R]
#
# --shapes tiny: the tiny preset, to check the script on a small machine.
#
# BUILD_DIR: a configured build tree of this checkout (default build; the
# target bench_ops is built there if missing). --threads: the N of the
# comparison (default: all cores). About 3 minutes on a 16-core host
# (one thread at batch 64 is ~8 s a step).
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
bdir=build threads=$(nproc) shapes="shakespeare mega" reps1=3 repsn=9
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then bdir=$1; shift; fi
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) threads=$2; shift ;;
    --shapes) shapes=$2; shift ;;
    --reps1) reps1=$2; shift ;;
    --repsn) repsn=$2; shift ;;
    *) echo "ops.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
case "$bdir" in /*) ;; *) bdir=$here/$bdir ;; esac
if [ ! -x "$bdir/bench_ops" ]; then
  [ -f "$bdir/CMakeCache.txt" ] || cmake -S "$here" -B "$bdir" -DCMAKE_BUILD_TYPE=Release > /dev/null || exit 1
  cmake --build "$bdir" --target bench_ops -j "$(nproc)" > /dev/null || { echo "ops.sh: cannot build bench_ops" >&2; exit 1; }
fi
declare -A args=([shakespeare]="small R L=6 C=384 NH=6 T=256 B=64" [mega]="mega R" [tiny]="tiny R")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
echo "$(nproc) CPUs:$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2); comparing 1 and $threads threads"
for s in $shapes; do
  a=${args[$s]:-}
  [ -n "$a" ] || { echo "ops.sh: unknown shape $s" >&2; exit 2; }
  # shellcheck disable=SC2086
  set -- $a
  p=$1; shift 2
  "$bdir/bench_ops" "$p" 1 "$reps1" "$@" > "$tmp/$s.1" 2>&1 || { echo "$s 1 thread failed:"; tail -3 "$tmp/$s.1"; continue; }
  "$bdir/bench_ops" "$p" "$threads" "$repsn" "$@" > "$tmp/$s.n" 2>&1 || { echo "$s $threads threads failed:"; tail -3 "$tmp/$s.n"; continue; }
  echo
  echo "== $s: $(head -1 "$tmp/$s.n" | sed 's/, [0-9]* threads*, wall time//')"
  grep 'last step' "$tmp/$s.1" | sed 's/^ */  1 thread:  /'
  grep 'last step' "$tmp/$s.n" | sed "s/^ */  $threads threads: /"
  # rows: "  <label, 34 wide> <ms> ms [<gflops> GFLOP/s]" -> f[1] ms, f[3] GFLOP/s
  awk -v n="$threads" '
    function row(line, f) { lab = substr(line, 3, 35); sub(/ +$/, "", lab); split(substr(line, 38), f, " "); return lab }
    FNR == 1 { file++ }
    / ms/ && !/last step/ {
      lab = row($0, f)
      if (file == 1) { t1[lab] = f[1] } else { order[++k] = lab; tn[lab] = f[1]; g[lab] = (f[4] == "GFLOP/s") ? f[3] : "" }
    }
    END {
      printf "  %-36s %10s %10s %8s %5s %11s\n", "op", "1t_ms", n "t_ms", "speedup", "eff", n "t_GFLOP/s"
      for (i = 1; i <= k; i++) {
        lab = order[i]; a = t1[lab]; b = tn[lab]
        sp = (a > 0 && b > 0) ? a / b : 0
        printf "  %-36s %10s %10s %8s %5s %11s\n", lab, a, b, sp ? sprintf("%.2f", sp) : "-", sp ? sprintf("%.2f", sp / n) : "-", g[lab]
      }
    }' "$tmp/$s.1" "$tmp/$s.n"
done
