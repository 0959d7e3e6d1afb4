#!/usr/bin/env bash
# ab.sh — the dev/attention variants against the shipped attention kernels,
# in one sitting. Builds bench_webgpu and tinytrain_hooks (Release; both
# link the test hooks), makes four kernel directories for the test hook
# TT_WEBGPU_WGSL_DIR (kernels.sh):
#   A base  src/webgpu/wgsl as it is
#   B var   the dk/dv variant "split" (dev/attention/wgsl)
#   C nopf  B with its prefetch off (kernels.sh --no-pf)
#   D dq    B plus the dq variant "split" (kernels.sh --dq)
# then, in this order (later stages are skipped, said so, once the budget
# would be passed; every command has a timeout):
#   1. check: 3 training steps of a head-size-64 model (T not a multiple of
#      the tiles) with A, B and D, checkpoints compared byte for byte with
#      A's (IDENTICAL = no bit changes at this adapter's plan)
#   2. gpt2 preset, round 1: build/bench_webgpu gpt2 5 10 for A B C D
#      (synchronous step median; the attention kernels' ms per step from
#      its per-kernel table, 10 reps)
#   3. shakespeare shape (6 layers, d 384, 6 heads, ctx 256, batch 64),
#      round 1: tinytrain_hooks bench (synchronous, 10 steps) A B C D
#   4. shakespeare: tinytrain_hooks profile --detail --reps 10, A B C D
#      (attention kernels: tile, ms per step, GFLOP/s)
#   5. gpt2 round 2 (no profile), 6. shakespeare round 2: A B C D again
#   7. the check of 1 with dropout 0.1
#   8. summary: mean step ms per kernel set and ratio to A
# Usage:
#   bash dev/attention/ab.sh            (the H200: TINYTRAIN_WEBGPU_LIB set)
#   bash dev/attention/ab.sh --smoke    (tiny shapes, e.g. lavapipe: checks
#                                        the script, not the speed)
# Options: --budget S (default 115, build included), --jobs N (build,
# default 16), --build DIR (default build). Exit 0 unless the build fails.
# With OUT set, the raw outputs are copied to $OUT/ab_attn at the end.
set -u
cd "$(dirname "$0")/../.."
smoke=0 budget=115 jobs=16 bdir=build
while [ $# -gt 0 ]; do
  case "$1" in
    --smoke) smoke=1 ;;
    --budget) budget=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    --build) bdir=$2; shift ;;
    *) echo "ab.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
t0=$(date +%s)
left() { echo $(( budget - ($(date +%s) - t0) )); }
# tmo CAP: a timeout of at most CAP seconds that ends before the budget does
tmo() { local l; l=$(left); [ "$l" -lt 1 ] && l=1; [ "$l" -lt "$1" ] && echo "$l" || echo "$1"; }
say() { printf '[ab %3ds] %s\n' $(( $(date +%s) - t0 )) "$*"; }

say "build ($bdir, Release, -j$jobs)"
timeout "$(tmo 90)" cmake -S . -B "$bdir" -DCMAKE_BUILD_TYPE=Release > /tmp/ab_attn_cmake.log 2>&1 &&
  timeout "$(tmo 90)" cmake --build "$bdir" -j"$jobs" --target bench_webgpu tinytrain_hooks > /tmp/ab_attn_build.log 2>&1 ||
  { echo "build failed or timed out:"; tail -20 /tmp/ab_attn_build.log /tmp/ab_attn_cmake.log 2>/dev/null; exit 1; }
TT=$bdir/tinytrain_hooks BW=$bdir/bench_webgpu
tmp=$(mktemp -d /tmp/ab_attn.XXXXXX)
# the raw outputs (bench tables, profiles, train logs) go to $OUT/ab_attn when OUT is set (the device call's folder)
trap '[ -n "${OUT:-}" ] && mkdir -p "$OUT/ab_attn" && cp "$tmp"/[gsp].* "$tmp"/run.*.log "$OUT/ab_attn/" 2>/dev/null; rm -rf "$tmp"' EXIT
mkdir -p "$tmp/A" && cp src/webgpu/wgsl/*.wgsl "$tmp/A/"
{ bash dev/attention/kernels.sh "$tmp/B" && bash dev/attention/kernels.sh "$tmp/C" --no-pf &&
  bash dev/attention/kernels.sh "$tmp/D" --dq; } > /dev/null || { echo "kernels.sh failed"; exit 1; }
SETS="A B C D"
say "kernels: A base; B dkdv split; C = B without prefetch; D = B + dq split"

if [ $smoke = 1 ]; then
  gpt2=tiny gsteps=3 greps=2
  check=(--layers 1 --d-model 128 --heads 2 --ctx 37 --batch 2)
  shake=(--layers 1 --d-model 128 --heads 2 --ctx 64 --batch 2)
else
  gpt2=gpt2 gsteps=5 greps=10
  check=(--layers 2 --d-model 256 --heads 4 --ctx 100 --batch 4)
  shake=(--layers 6 --d-model 384 --heads 6 --ctx 256 --batch 64)
fi

# check DROPOUT: checkpoints after 3 steps, B and D against A
check() {
  local k
  for k in A B D; do
    [ "$(left)" -lt 8 ] && { say "skip check dropout $1: time budget"; return; }
    rm -rf "$tmp/run.$k"
    TT_WEBGPU_WGSL_DIR=$tmp/$k timeout "$(tmo 30)" "$TT" train --backend webgpu "${check[@]}" --steps 3 --dropout "$1" \
      --eval-every 0 --save-every 0 --sample-tokens 0 --json --out "$tmp/run.$k" > "$tmp/run.$k.log" 2>&1 ||
      { say "check dropout $1: $k run failed: $(grep -v '^{' "$tmp/run.$k.log" | tail -1)"; return; }
  done
  for k in B D; do
    if cmp -s "$tmp/run.A/checkpoint.safetensors" "$tmp/run.$k/checkpoint.safetensors"; then
      say "check dropout $1 (${check[*]}, 3 steps): $k vs A checkpoints IDENTICAL"
    else
      say "check dropout $1 (${check[*]}, 3 steps): $k vs A checkpoints DIFFER; losses A / $k:"
      for r in A $k; do grep -o '"loss":[^,]*' "$tmp/run.$r.log" | tr '\n' ' '; echo; done
    fi
  done
}

# the attention rows of bench_webgpu's per-kernel table: "name ms" pairs
attn_rows() { awk '$1 ~ /^attention/ { for (i = 1; i <= NF; i++) if ($i == "ms") { printf "%s %s  ", $1, $(i-1); break } }' "$1"; }
# gpt2 ROUND REPS: bench_webgpu for every set
gpt2_round() {
  local k med
  say "$gpt2 round $1: bench_webgpu $gpt2 $gsteps $2 (synchronous step median ms; attention kernels ms/step)"
  for k in $SETS; do
    [ "$(left)" -lt 15 ] && { say "skip $gpt2 $k$1: time budget"; continue; }
    TT_WEBGPU_WGSL_DIR=$tmp/$k TT_BENCH_PIPELINED=0 timeout "$(tmo 45)" "$BW" $gpt2 $gsteps $2 > "$tmp/g.$k$1" 2> "$tmp/g.$k$1.err"
    med=$(sed -n 's/.*step median \([0-9.]*\) ms.*/\1/p' "$tmp/g.$k$1" | head -1)
    echo "${med:-}" > "$tmp/gm.$k$1"
    printf '  %-3s step %9s ms   %s\n' $k$1 "${med:-failed}" "$(attn_rows "$tmp/g.$k$1")"
    [ -z "$med" ] && tail -3 "$tmp/g.$k$1.err"
  done
}
med_json() { sed -n 's/.*"ms_per_step":{"median":\([0-9.e+-]*\).*/\1/p' "$1"; }
# shape ROUND: tinytrain bench for every set
shape_round() {
  local k med
  say "shape ${shake[*]} round $1: tinytrain bench (synchronous, 10 steps; step median ms)"
  for k in $SETS; do
    [ "$(left)" -lt 10 ] && { say "skip shape $k$1: time budget"; continue; }
    TT_WEBGPU_WGSL_DIR=$tmp/$k timeout "$(tmo 30)" "$TT" bench --backend webgpu "${shake[@]}" --steps 10 --warmup 3 \
      --pipeline 0 --json > "$tmp/s.$k$1" 2> "$tmp/s.$k$1.err"
    med=$(med_json "$tmp/s.$k$1")
    echo "${med:-}" > "$tmp/sm.$k$1"
    printf '  %-3s step %9s ms\n' $k$1 "${med:-failed}"
    [ -z "$med" ] && tail -3 "$tmp/s.$k$1.err"
  done
}

check 0
gpt2_round 1 $greps
shape_round 1
say "shape ${shake[*]}: tinytrain profile --detail --reps 10 (attention kernels: [tile] ms/step GFLOP/s)"
for k in $SETS; do
  [ "$(left)" -lt 10 ] && { say "skip profile $k: time budget"; continue; }
  TT_WEBGPU_WGSL_DIR=$tmp/$k timeout "$(tmo 30)" "$TT" profile "${shake[@]}" --reps 10 --detail > "$tmp/p.$k" 2> "$tmp/p.$k.err"
  printf '  %s  %s\n' $k "$(awk '$1 ~ /^attention/ { t = $2; for (i = 3; i <= NF - 4; i++) t = t " " $i; printf "%s [%s] %s %s; ", $1, t, $(NF-2), $NF }' "$tmp/p.$k")"
  [ -s "$tmp/p.$k" ] || tail -3 "$tmp/p.$k.err"
done
gpt2_round 2 0
shape_round 2
check 0.1

# summary: mean of the rounds' medians per set, and the ratio to A
mean() { cat "$@" 2>/dev/null | awk 'NF { s += $1; n++ } END { if (n) printf "%.2f", s / n; else printf "-" }'; }
say "summary (mean of the rounds' step medians, ms; ratio to A)"
ga=$(mean "$tmp"/gm.A?) sa=$(mean "$tmp"/sm.A?)
for k in $SETS; do
  g=$(mean "$tmp"/gm.$k?) s=$(mean "$tmp"/sm.$k?)
  printf '  %s  %-6s %9s ms (%s)   shape %9s ms (%s)\n' $k $gpt2 "$g" \
    "$(awk -v x="$g" -v y="$ga" 'BEGIN { if (x + 0 > 0 && y + 0 > 0) printf "%.3f", x / y; else printf "-" }')" "$s" \
    "$(awk -v x="$s" -v y="$sa" 'BEGIN { if (x + 0 > 0 && y + 0 > 0) printf "%.3f", x / y; else printf "-" }')"
done
say "done"
exit 0
