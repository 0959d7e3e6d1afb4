#!/usr/bin/env bash
# split_h200.sh — the split layout of the attention dk/dv kernel (two
# threads per 4x4 tile: attention_backward_dkdv.wgsl SPL 2, 256 threads at
# head size 64 on a 48 KiB adapter; attention.c split_mode) against the
# plain layout, on the GPU host, in one device call. The test hook
# TT_WEBGPU_ATTN_SPLIT=0|1 forces the plain / split layout.
#   1. bits, ops: build/test_webgpu_attention on the GPU (test_split runs
#      both layouts on the GPU's tiles, constant loop bounds and prefetch,
#      with the dS-storing backward and the pair, and compares them bit for
#      bit and against float64; every other case runs the layout the GPU
#      plans);
#   2. bits, training: $preset, 3 steps, both layouts: losses, grad norms
#      and the final checkpoints compared ("bit-identical" or "DIFFERENT");
#   3. profile: build/tinytrain_hooks profile --detail, plain and split, at
#      gpt2 (12 layers, d 768, 12 heads, ctx 1024, batch 8) and the
#      shakespeare_char shape (6 layers, d 384, 6 heads, ctx 256, batch
#      64): the attention rows side by side (ms per step, GFLOP/s; a tag
#      ending in " s2" is the split layout). Every site is timed alone, so
#      each kernel's row is its own A/B;
#   4. (--step) the whole step: build/tinytrain_hooks bench --backend webgpu
#      --preset gpt2 --steps STEPS --pipeline 0, split and plain.
# Why: the plain dk/dv runs 128 threads holding ~100+ registers each in
# 43 KiB: ~16 warps per SM, too few to cover 4 barriers per tile and the
# shared-load latency; the split layout holds half the accumulators per
# thread in 256 threads on the same workgroup memory.
# Prediction (written before the run): dk/dv 16.6 -> 12-14 ms at gpt2.
# Measured (2026-12-02, H200, docs/BENCHMARKS.md): 16.66 -> 14.66 ms
# (0.880), shakespeare_char 2.66 -> 2.34 (0.880); bits identical. The same
# split of the forward measured 1.166x the time at gpt2 (0.982 at
# shakespeare_char) and was removed (docs/ARCHITECTURE.md, what did not
# work).
#
#   bash dev/attention/split_h200.sh [--no-bits] [--step] [--steps 10] [--preset gpt2] [--one-shape] [--jobs N] [--data FILE]
#
# --preset: the preset of the training and profile runs (--preset tiny
# --one-shape: a smoke test on lavapipe, where the hook forces the split
# layout as a GPU plans it). --one-shape: no shakespeare_char profile.
# Environment: TINYTRAIN_WEBGPU_LIB (Dawn), VK_DRIVER_FILES (set here to the
# NVIDIA ICD when unset and one is found). Raw outputs in build/dev-split/
# (copied to $OUT/dev-split when $OUT is a folder). Exit 1 if the build fails,
# 3 if the bits differ. About 2-3 minutes on the 16-core host.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
steps=10 bits=1 step=0 one=0 preset=gpt2
. "$root/dev/attention/h200_lib.sh"
while [ $# -gt 0 ]; do
  case "$1" in
    --steps) steps=$2; shift ;;
    --no-bits) bits=0 ;;
    --step) step=1 ;;
    --one-shape) one=1 ;;
    --preset) preset=$2; shift ;;
    *) dev_opt "$0" "$@"; shift $((dev_shift - 1)) ;;
  esac
  shift
done
targets=(tinytrain_hooks test_webgpu_attention)
dev_build split_h200 "${targets[@]}"
out=build/dev-split
rm -rf "$out"; mkdir -p "$out"
echo "built in $(el) s"
bad=0
# the layouts: split = dk/dv split as a GPU plans it (forced: also on
# lavapipe for the smoke test), plain = the plain layout
menv() { case "$1" in plain) echo TT_WEBGPU_ATTN_SPLIT=0 ;; *) echo TT_WEBGPU_ATTN_SPLIT=1 ;; esac; }

if [ $bits = 1 ]; then
  echo "== bits, ops ($(el) s)"
  if TT_REQUIRE_WEBGPU=1 timeout 300 ./build/test_webgpu_attention >"$out/test_webgpu_attention.log" 2>&1; then
    echo "test_webgpu_attention: passed ($(grep -h -m1 '^adapter:' "$out/test_webgpu_attention.log");" \
         "$(grep -h -m1 'split layouts' "$out/test_webgpu_attention.log" | sed 's/^ *//'))"
  else
    echo "test_webgpu_attention: FAILED"; tail -15 "$out/test_webgpu_attention.log"; bad=1
  fi
  echo "== bits, training: $preset, 3 steps ($(el) s)"
  extract() { sed -n 's/^{"event":"step","step":\([0-9]*\),"steps":[0-9]*,"loss":\([^,]*\),"lr":[^,]*,"grad_norm":\([^,]*\),.*/step \1 loss \2 gn \3/p' "$1"; }
  for m in split plain; do
    env "$(menv $m)" timeout 300 ./build/tinytrain_hooks train --backend webgpu --preset "$preset" --json --sample-tokens 0 \
      --save-every 0 --stop-after 3 "${data[@]}" --out "$out/train-$m" >"$out/train-$m.jsonl" 2>"$out/train-$m.err"
    extract "$out/train-$m.jsonl" >"$out/train-$m.txt"
  done
  cat "$out/train-split.txt"
  if [ -s "$out/train-split.txt" ] && cmp -s "$out/train-split.txt" "$out/train-plain.txt" &&
     cmp -s "$out/train-split/checkpoint.safetensors" "$out/train-plain/checkpoint.safetensors"; then
    echo "training: bit-identical ($(wc -l <"$out/train-split.txt") steps, and the final checkpoints)"
  else
    echo "training: DIFFERENT"; diff "$out/train-split.txt" "$out/train-plain.txt" | head; for f in "$out"/train-*.err; do tail -n 3 "$f"; done; bad=1
  fi
fi

# attention rows of a --detail profile: kernel ms GFLOP/s detail
rows() {
  awk '/^  attention/ { n = NF; if ($n ~ /%$/) { ms = $(n - 1); gf = "-"; k = n - 3 } else { ms = $(n - 2); gf = $n; k = n - 4 }
                        d = ""; for (i = 2; i <= k; i++) d = d (i > 2 ? " " : "") $i
                        printf "%s %s %s %s\n", $1, ms, gf, d }' "$1"
}
side() { # side NAME: the attention rows of profile-NAME-{plain,split} side by side
  local a="$out/profile-$1-plain.txt" b="$out/profile-$1-split.txt"
  printf '  %-26s %10s %9s %10s %9s %7s   %s\n' kernel "plain ms" "GFLOP/s" "split ms" "GFLOP/s" ratio "split tile"
  rows "$a" >"$out/rows-$1-plain.txt"; rows "$b" >"$out/rows-$1-split.txt"
  awk 'NR == FNR { ms[$1] = $2; gf[$1] = $3; next }
       { t = $4; for (i = 5; i <= NF; i++) t = t " " $i
         r = (ms[$1] > 0) ? sprintf("%.3f", $2 / ms[$1]) : "-"
         printf "  %-26s %10s %9s %10s %9s %7s   %s\n", $1, ms[$1], gf[$1], $2, $3, r, t
         sa += ms[$1]; sb += $2 }
       END { printf "  %-26s %10.3f %9s %10.3f %9s %7.3f\n", "attention (all)", sa, "", sb, "", (sa > 0 ? sb / sa : 0) }' \
    "$out/rows-$1-plain.txt" "$out/rows-$1-split.txt"
  for m in plain split; do echo "  $m: $(grep 'sum of the sites' "$out/profile-$1-$m.txt")"; done
}
shapes=("$preset"); [ $one = 1 ] || shapes+=(shakespeare)
for s in "${shapes[@]}"; do
  if [ "$s" = shakespeare ]; then args=(--preset "$preset" --layers 6 --d-model 384 --heads 6 --ctx 256 --batch 64)
  else args=(--preset "$s"); fi
  echo "== profile: ${args[*]} --detail ($(el) s)"
  for m in plain split; do
    env "$(menv $m)" timeout 300 ./build/tinytrain_hooks profile "${args[@]}" --detail >"$out/profile-$s-$m.txt" 2>&1 ||
      { echo "profile $s $m failed:"; tail -5 "$out/profile-$s-$m.txt"; }
  done
  side "$s"
done

if [ $step = 1 ]; then
  echo "== step: tinytrain bench $preset, $steps synchronous steps, split and plain dk/dv ($(el) s)"
  for m in split plain split plain; do
    env "$(menv $m)" timeout 300 ./build/tinytrain_hooks bench --backend webgpu --preset "$preset" --steps "$steps" \
      --pipeline 0 --data "${datafile:-data/tinyshakespeare.txt}" >>"$out/bench-$m.txt" 2>&1
    echo "$m: $(grep -E '^steady' "$out/bench-$m.txt" | tail -1)"
  done
fi
# the text outputs only (the checkpoints are hundreds of MB at gpt2)
[ -d "${OUT:-}" ] && mkdir -p "$OUT/dev-split" && cp "$out"/*.txt "$out"/*.log "$OUT/dev-split/" 2>/dev/null
echo "done in $(el) s"
[ $bad = 0 ] || exit 3
