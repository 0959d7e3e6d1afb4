#!/usr/bin/env bash
# ds_h200.sh — the dS-storing attention backward (attention.c: D, dk/dv
# storing dS, dq from dS; 5 causal products instead of 7) against the pair
# of kernels it replaces (forced by the test hook TT_WEBGPU_ATTN_DS=0), on
# the GPU host, in one device call:
#   1. bits, ops: build/test_webgpu_attention and build/test_webgpu_dropout
#      on the GPU (their ds cases compare both backwards bit for bit, with
#      the GPU's tiles, prefetch and constant loop bounds);
#   2. bits, training: gpt2, 4 steps, losses and grad norms of both
#      backwards and their final checkpoints (weights, AdamW moments)
#      compared (cmp: "bit-identical" or "DIFFERENT");
#   3. profile: build/tinytrain_hooks profile --preset gpt2 --detail, both
#      backwards; the attention rows (ms per step, GFLOP/s);
#   4. step: build/tinytrain_hooks bench --backend webgpu --preset gpt2
#      --steps STEPS --pipeline 0 (the training loop's step, synchronous
#      median), ds / pair / ds / pair.
# Prediction (gpt2 at batch 8, H200; the pair: fwd 8.7 ms at 17.8 TFLOP/s,
# dk/dv 15.9 at 19.5, dq 14.9 at 15.6, per step). One causal product is
# 96 slices x 1024*1025/2 pairs x 2*64 flops = 6.45 GFLOP per layer, 77.4
# per step.
#   attention_backward_dkdv (tag "... ds64 214MB"): the same 4 products
#     (309.6 GFLOP) plus its dS tiles written: 528 tiles of 32 x 32 per
#     slice = 208 MB per layer, 2.49 GB per step (0.6 ms of HBM at 4 TB/s,
#     mostly hidden behind the products): 16.2-16.8 ms.
#   attention_backward_dq_ds: 1 product (77.4 GFLOP) in 8.5 KiB of
#     workgroup memory instead of 47.3 (occupancy by registers, no exp, 2
#     barriers per tile instead of 4) at 20-30 TFLOP/s: 2.6-3.9 ms, plus
#     544 dS tiles of 64 x 16 per slice read = 214 MB per layer, 2.57 GB per
#     step (0.65 ms at 4 TB/s, partly hidden): 3-4.5 ms.
#   attention_backward_d: y and dy read once (50 MB per layer, 0.6 GB per
#     step): 0.2-0.3 ms.
# Backward 30.8 -> ~20.3 ms, step 155 -> ~145 ms; attention (fwd + bwd)
# 29 ms = ~20% of the step.
# --preset mega (head size 32: the dS-storing backward runs there too since
# dk/dv computes S as the dq kernel does): one causal product is 24 slices x
# 512*513/2 pairs x 2*32 flops x 14 layers = 2.8 GFLOP per step, two saved
# = ~0.4 ms at gpt2's ~13.5 TFLOP/s per product; mega's attention grids are
# small (192 dq workgroups, 32 key tiles on the longest row block), so the
# gain is mostly dq's per-tile latency (1 product, no exp, 2 barriers
# instead of 4) minus 14 more dispatches (D): step ~12.2 -> ~11.8 ms
# (11.6-12.3), bits identical ds vs pair.
#
#   bash dev/attention/ds_h200.sh [--steps 10] [--no-bits] [--preset gpt2] [--jobs N] [--data FILE]
#
# --data: the training corpus (default $TT_BENCH_DATA, else tinytrain's
# default, the fortunes collection).
#
# --preset: another preset for the training, profile and step runs (tiny:
# a smoke test of the script on lavapipe).
# Environment: TINYTRAIN_WEBGPU_LIB (Dawn), VK_DRIVER_FILES (set here to the
# NVIDIA ICD when unset and one is found). Raw outputs in build/dev-ds/
# (copied to $OUT/dev-ds when $OUT is a folder). Exit 1 if the build fails,
# 3 if the bits differ.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
steps=10 bits=1 preset=gpt2
. "$root/dev/attention/h200_lib.sh"
while [ $# -gt 0 ]; do
  case "$1" in
    --steps) steps=$2; shift ;;
    --no-bits) bits=0 ;;
    --preset) preset=$2; shift ;;
    *) dev_opt "$0" "$@"; shift $((dev_shift - 1)) ;;
  esac
  shift
done
dev_build ds_h200 tinytrain tinytrain_hooks test_webgpu_attention test_webgpu_dropout
out=build/dev-ds
rm -rf "$out"; mkdir -p "$out"
echo "built in $(el) s"
bad=0

if [ $bits = 1 ]; then
  echo "== bits, ops ($(el) s)"
  for t in test_webgpu_attention test_webgpu_dropout; do
    if TT_REQUIRE_WEBGPU=1 timeout 300 ./build/$t >"$out/$t.log" 2>&1; then
      echo "$t: passed $(grep -h 'dS-storing' "$out/$t.log" | head -1 | sed 's/^ */(/; s/$/)/')"
    else
      echo "$t: FAILED"; tail -15 "$out/$t.log"; bad=1
    fi
  done
  echo "== bits, training: $preset, 4 steps ($(el) s)"
  extract() { sed -n 's/^{"event":"step","step":\([0-9]*\),"steps":[0-9]*,"loss":\([^,]*\),"lr":[^,]*,"grad_norm":\([^,]*\),.*/step \1 loss \2 gn \3/p' "$1"; }
  for m in ds pair; do
    env_=(); [ $m = pair ] && env_=(TT_WEBGPU_ATTN_DS=0)
    env "${env_[@]}" timeout 300 ./build/tinytrain_hooks train --backend webgpu --preset "$preset" --json --sample-tokens 0 \
      --save-every 0 --stop-after 4 "${data[@]}" --out "$out/train-$m" >"$out/train-$m.jsonl" 2>"$out/train-$m.err"
    extract "$out/train-$m.jsonl" >"$out/train-$m.txt"
  done
  cat "$out/train-ds.txt"
  if [ -s "$out/train-ds.txt" ] && cmp -s "$out/train-ds.txt" "$out/train-pair.txt" &&
     cmp -s "$out/train-ds/checkpoint.safetensors" "$out/train-pair/checkpoint.safetensors"; then
    echo "training: bit-identical ($(wc -l <"$out/train-ds.txt") steps, and the final checkpoints)"
  else
    echo "training: DIFFERENT"; diff "$out/train-ds.txt" "$out/train-pair.txt" | head; for f in "$out"/train-*.err; do tail -n 3 "$f"; done; bad=1
  fi
fi

echo "== profile: $preset --detail ($(el) s)"
for m in ds pair; do
  env_=(); [ $m = pair ] && env_=(TT_WEBGPU_ATTN_DS=0)
  env "${env_[@]}" timeout 400 ./build/tinytrain_hooks profile --preset "$preset" --detail >"$out/profile-$m.txt" 2>&1
  echo "-- $m"; grep -E '^  (attention|kernel)' "$out/profile-$m.txt"; grep 'sum of the sites' "$out/profile-$m.txt"
done

echo "== step: tinytrain bench $preset, $steps synchronous steps, ds pair ds pair ($(el) s)"
for m in ds pair ds pair; do
  env_=(X=1); [ $m = pair ] && env_=(TT_WEBGPU_ATTN_DS=0)
  env "${env_[@]}" timeout 300 ./build/tinytrain_hooks bench --backend webgpu --preset "$preset" --steps "$steps" \
    --pipeline 0 --data "${datafile:-data/tinyshakespeare.txt}" >"$out/bench-$m.txt" 2>&1
  echo "$m: $(grep -E '^steady' "$out/bench-$m.txt" | head -1)"
done
[ -d "${OUT:-}" ] && cp -r "$out" "$OUT/dev-ds"
echo "done in $(el) s"
[ $bad = 0 ] || exit 3
