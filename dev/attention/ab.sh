#!/usr/bin/env bash
# ab.sh — the dev/attention variant against the shipped attention kernels,
# one sitting: builds the benches (Release), makes two kernel directories
# for the test hook TT_WEBGPU_WGSL_DIR (A, base: src/webgpu/wgsl as it is;
# B, variant: kernels.sh, the variant's files laid over it; C: the variant
# without its prefetch, kernels.sh --no-pf), then
#   1. check: a few training steps of a head-size-64 model (T not a multiple
#      of the tiles) on each, the checkpoints compared byte for byte
#      (identical = the variant changes no bit at this adapter's plan)
#   2. gpt2 preset: build/bench_webgpu gpt2 5 R (synchronous steps) in the
#      order A B C A B C (R = 10 profile reps in the first round, 0 in the
#      second); the step medians, and the attention kernels' ms per step
#      from its per-kernel table
#   3. shakespeare shape (6 layers, d 384, 6 heads, ctx 256, batch 64):
#      tinytrain_hooks bench (synchronous, 10 steps) A B C A B C, then one
#      tinytrain_hooks profile --detail each for the attention kernels
#   4. the check of 1 with dropout 0.1
# Every command has a timeout; stages are skipped (said so) once the budget
# (--budget S, default 115 s, build included) would be passed. Exit 0.
#   bash dev/attention/ab.sh            (the H200: TINYTRAIN_WEBGPU_LIB set)
#   bash dev/attention/ab.sh --smoke    (tiny shapes, e.g. lavapipe: checks
#                                        the script, not the speed)
# Options: --budget S, --jobs N (build, default 16), --build DIR (default build).
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
tmo() { local l; l=$(left); [ "$l" -lt "$1" ] && echo "$l" || echo "$1"; }
say() { printf '[ab %3ds] %s\n' $(( $(date +%s) - t0 )) "$*"; }

say "build ($bdir, Release, -j$jobs)"
timeout "$(tmo 90)" cmake -S . -B "$bdir" -DCMAKE_BUILD_TYPE=Release > /tmp/ab_attn_cmake.log 2>&1 &&
  timeout "$(tmo 90)" cmake --build "$bdir" -j"$jobs" --target bench_webgpu tinytrain_hooks > /tmp/ab_attn_build.log 2>&1 ||
  { echo "build failed or timed out:"; tail -20 /tmp/ab_attn_build.log /tmp/ab_attn_cmake.log 2>/dev/null; exit 1; }
TT=$bdir/tinytrain_hooks BW=$bdir/bench_webgpu
tmp=$(mktemp -d /tmp/ab_attn.XXXXXX); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/base" && cp src/webgpu/wgsl/*.wgsl "$tmp/base/"
bash dev/attention/kernels.sh "$tmp/var" > /dev/null && bash dev/attention/kernels.sh "$tmp/nopf" --no-pf > /dev/null ||
  { echo "kernels.sh failed"; exit 1; }
say "kernels: A base = src/webgpu/wgsl; B var = overlays $(cd dev/attention/wgsl && echo *.wgsl); C nopf = B, prefetch off"
kdir() { case $1 in A*) echo base ;; B*) echo var ;; C*) echo nopf ;; esac; }

if [ $smoke = 1 ]; then
  gpt2=tiny gsteps=3 greps=2
  check=(--layers 1 --d-model 128 --heads 2 --ctx 37 --batch 2)
  shake=(--layers 1 --d-model 128 --heads 2 --ctx 64 --batch 2)
else
  gpt2=gpt2 gsteps=5 greps=10
  check=(--layers 2 --d-model 256 --heads 4 --ctx 100 --batch 4)
  shake=(--layers 6 --d-model 384 --heads 6 --ctx 256 --batch 64)
fi

# check DROPOUT: checkpoints after 3 steps, base vs variant
check() {
  local k
  for k in base var; do
    [ "$(left)" -lt 8 ] && { say "skip check dropout $1: time budget"; return; }
    TT_WEBGPU_WGSL_DIR=$tmp/$k timeout "$(tmo 30)" "$TT" train --backend webgpu "${check[@]}" --steps 3 --dropout "$1" \
      --eval-every 0 --save-every 0 --sample-tokens 0 --json --out "$tmp/run.$k" > "$tmp/run.$k.log" 2>&1 ||
      { say "check dropout $1: $k run failed: $(grep -v '^{' "$tmp/run.$k.log" | tail -1)"; return; }
  done
  if cmp -s "$tmp/run.base/checkpoint.safetensors" "$tmp/run.var/checkpoint.safetensors"; then
    say "check dropout $1 (${check[*]}, 3 steps): checkpoints IDENTICAL"
  else
    say "check dropout $1 (${check[*]}, 3 steps): checkpoints DIFFER; losses base/variant:"
    for k in base var; do grep -o '"loss":[^,]*' "$tmp/run.$k.log" | tr '\n' ' '; echo; done
  fi
}
check 0

# the attention rows of bench_webgpu's per-kernel table: "name ms" pairs
attn_rows() { awk '$1 ~ /^attention/ { for (i = 1; i <= NF; i++) if ($i == "ms") { printf "%s %s  ", $1, $(i-1); break } }' "$1"; }
say "$gpt2: bench_webgpu $gpt2 $gsteps R, A B C A B C (synchronous step median ms; attention kernels ms/step from the profile, round 1)"
for run in A1 B1 C1 A2 B2 C2; do
  k=$(kdir $run) r=$greps; [ "${run#?}" = 2 ] && r=0
  [ "$(left)" -lt 15 ] && { say "skip $gpt2 $run: time budget"; continue; }
  TT_WEBGPU_WGSL_DIR=$tmp/$k TT_BENCH_PIPELINED=0 timeout "$(tmo 45)" "$BW" $gpt2 $gsteps $r > "$tmp/g.$run" 2> "$tmp/g.$run.err"
  med=$(sed -n 's/.*step median \([0-9.]*\) ms.*/\1/p' "$tmp/g.$run" | head -1)
  printf '  %-3s %-4s step %9s ms   %s\n' $run $k "${med:-failed}" "$(attn_rows "$tmp/g.$run")"
  [ -z "$med" ] && tail -3 "$tmp/g.$run.err"
done

med_json() { sed -n 's/.*"ms_per_step":{"median":\([0-9.e+-]*\).*/\1/p' "$1"; }
say "shape ${shake[*]}: tinytrain bench (synchronous, 10 steps) A B C A B C"
for run in A1 B1 C1 A2 B2 C2; do
  k=$(kdir $run)
  [ "$(left)" -lt 10 ] && { say "skip shape $run: time budget"; continue; }
  TT_WEBGPU_WGSL_DIR=$tmp/$k timeout "$(tmo 30)" "$TT" bench --backend webgpu "${shake[@]}" --steps 10 --warmup 3 \
    --pipeline 0 --json > "$tmp/s.$run" 2> "$tmp/s.$run.err"
  med=$(med_json "$tmp/s.$run")
  printf '  %-3s %-4s step %9s ms\n' $run $k "${med:-failed}"
  [ -z "$med" ] && tail -3 "$tmp/s.$run.err"
done
say "shape ${shake[*]}: tinytrain profile --reps 10 (attention kernels, ms/step)"
for k in base var nopf; do
  [ "$(left)" -lt 10 ] && { say "skip profile $k: time budget"; continue; }
  TT_WEBGPU_WGSL_DIR=$tmp/$k timeout "$(tmo 30)" "$TT" profile "${shake[@]}" --reps 10 --detail > "$tmp/p.$k" 2> "$tmp/p.$k.err"
  printf '  %-4s %s\n' $k "$(awk '$1 ~ /^attention/ { t = $2; for (i = 3; i <= NF - 4; i++) t = t " " $i; printf "%s [%s] %s ms %s GFLOP/s; ", $1, t, $(NF-2), $NF }' "$tmp/p.$k")"
  [ -s "$tmp/p.$k" ] || tail -3 "$tmp/p.$k.err"
done

check 0.1
say "done"
exit 0
