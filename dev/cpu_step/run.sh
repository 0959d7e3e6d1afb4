#!/usr/bin/env bash
# run.sh — CPU training step of two tinytrain builds side by side, plus
# PyTorch CPU eager, at the mega preset and the shakespeare_char shape
# (6 layers, d 384, 6 heads, ctx 256, batch 64), on the same cores, in one
# sitting (about 3 minutes on a 16-core host).
#
#   bash dev/cpu_step/run.sh OLD [--new BIN] [--rounds N] [--no-torch] [--anchors DIR] [--jobs N] [--data FILE] [--smoke]
#
# --data: the corpus the steps read (default data/tinyshakespeare.txt; the
# step time does not depend on it, but tinytrain needs one).
#
# OLD: a commit (built from `git archive`, needs the .git of this checkout),
# a source directory of the old tree, or a built tinytrain binary. The new
# build is this tree (or --new BIN). Trees are built (Release,
# -march=native, target tinytrain only) under $TMPDIR. --smoke: tiny shapes
# and few steps, to check the script itself on a small machine.
# Each round runs `tinytrain bench --backend cpu` old then new (mega: 5
# warm-up + 20 steps; shakespeare: 3 + 10), so drift of the machine hits
# both, then (unless --no-torch) PyTorch's step at that shape; the table
# has the medians of all rounds' medians and the ratios.
# torch: shared/anchors/torch_presets.py's step (default anchors: ../shared/anchors
# next to this tree, or shared/anchors inside it).
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
old=${1:?usage: run.sh OLD [--rounds N] [--no-torch] [--anchors DIR]}; shift
rounds=2 torch=1 jobs=$(nproc) anchors="" newbin="" smoke=0 data="$here/data/tinyshakespeare.txt"
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift ;;
    --no-torch) torch=0 ;;
    --anchors) anchors=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    --new) newbin=$2; shift ;;
    --smoke) smoke=1 ;;
    --data) data=$2; shift ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
if [ -z "$anchors" ]; then
  for d in "$here/../shared/anchors" "$here/shared/anchors"; do [ -f "$d/torch_presets.py" ] && anchors=$d && break; done
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
t0=$(date +%s)
build() { # src dir -> build dir with bin/tinytrain
  mkdir -p "$2/bin"
  cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release > "$2.log" 2>&1 && cmake --build "$2" --target tinytrain -j "$jobs" >> "$2.log" 2>&1 &&
    ln -sf "$2/tinytrain" "$2/bin/tinytrain"
}
link() { mkdir -p "$2/bin" && ln -sf "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")" "$2/bin/tinytrain"; }
if [ -f "$old" ] && [ -x "$old" ]; then link "$old" "$tmp/old"; p1=""
else
  if [ -d "$old" ]; then oldsrc=$(cd "$old" && pwd)
  else oldsrc=$tmp/old-src; mkdir -p "$oldsrc"; git -C "$here" archive "$old" | tar -x -C "$oldsrc" || { echo "run.sh: cannot archive $old" >&2; exit 1; }
  fi
  build "$oldsrc" "$tmp/old" & p1=$!
fi
if [ -n "$newbin" ]; then link "$newbin" "$tmp/new"; p2=""
else build "$here" "$tmp/new" & p2=$!
fi
[ -z "$p1" ] || wait $p1 || { echo "run.sh: old build failed:"; tail -20 "$tmp/old.log"; exit 1; }
[ -z "$p2" ] || wait $p2 || { echo "run.sh: new build failed:"; tail -20 "$tmp/new.log"; exit 1; }
echo "builds ready in $(( $(date +%s) - t0 )) s; $(nproc) CPUs:$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
med() { sed -n 's/.*"ms_per_step":{"median":\([0-9.e+-]*\).*/\1/p' "$1"; }
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "-"; else if (NR % 2) print a[(NR+1)/2]; else printf "%.3f\n", (a[NR/2]+a[NR/2+1])/2}'; }
declare -A shape=([mega]="--preset mega" [shakespeare]="--layers 6 --d-model 384 --heads 6 --ctx 256 --batch 64")
declare -A steps=([mega]="--warmup 5 --steps 20" [shakespeare]="--warmup 3 --steps 10")
declare -A tsteps=([mega]=20 [shakespeare]=8)
if [ "$smoke" = 1 ]; then
  shape=([mega]="--preset tiny" [shakespeare]="--layers 1 --d-model 48 --heads 3 --ctx 32 --batch 4")
  steps=([mega]="--warmup 1 --steps 10" [shakespeare]="--warmup 1 --steps 10")
fi
declare -A res tres
torch_ok=0
if [ "$torch" = 1 ] && [ -n "$anchors" ]; then torch_ok=1
elif [ "$torch" = 1 ]; then echo "  torch: no anchors dir (torch_presets.py) found; pass --anchors DIR"; fi
declare -A targ=([mega]="mega:${tsteps[mega]}" [shakespeare]="shakespeare:${tsteps[shakespeare]}")
[ "$smoke" = 1 ] && targ=([mega]="mega=2,48,3,32,16:3" [shakespeare]="shakespeare=1,48,3,32,4:3")
for s in mega shakespeare; do
  for r in $(seq 1 "$rounds"); do
    for b in old new; do
      # shellcheck disable=SC2086
      "$tmp/$b/bin/tinytrain" bench --backend cpu --data "$data" ${shape[$s]} ${steps[$s]} --json > "$tmp/$s.$b.$r.json" 2> "$tmp/$s.$b.$r.err"
      v=$(med "$tmp/$s.$b.$r.json"); res[$s.$b]="${res[$s.$b]:-} $v"
      echo "  $s $b round $r: ${v:-FAILED ($(tail -1 "$tmp/$s.$b.$r.err"))} ms/step"
    done
    if [ $torch_ok = 1 ]; then
      # PyTorch in every round too, so the machine's drift hits all three
      if python3 "$here/dev/cpu_step/torch_cpu.py" "$anchors" "${targ[$s]}" > "$tmp/torch.$s.$r.json" 2> "$tmp/torch.$s.$r.err"; then
        v=$(sed -n 's/.*"ms_per_step": \([0-9.]*\).*/\1/p' "$tmp/torch.$s.$r.json"); tres[$s]="${tres[$s]:-} $v"
        echo "  $s torch round $r: $v ms/step ($(sed -n 's/.*"threads": \([0-9]*\).*/\1/p' "$tmp/torch.$s.$r.json") threads)"
      else echo "  $s torch round $r: FAILED ($(tail -1 "$tmp/torch.$s.$r.err"))"; fi
    fi
  done
done
printf '\n%-12s %10s %10s %10s %9s %11s %11s\n' shape old_ms new_ms torch_ms new/old torch/old torch/new
for s in mega shakespeare; do
  o=$(echo "${res[$s.old]}" | median) n=$(echo "${res[$s.new]}" | median) t=$(echo "${tres[$s]:-}" | median); [ "$t" = - ] && t=""
  awk -v s="$s" -v o="$o" -v n="$n" -v t="$t" 'function r(a, b) { return (a > 0 && b > 0) ? sprintf("%.3f", a / b) : "-" }
    BEGIN { printf "%-12s %10s %10s %10s %9s %11s %11s\n", s, o, n, (t == "" ? "-" : t), r(n, o), r(t, o), r(t, n) }'
done
echo "total $(( $(date +%s) - t0 )) s"
