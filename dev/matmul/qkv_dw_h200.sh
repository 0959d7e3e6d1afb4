#!/usr/bin/env bash
# qkv_dw_h200.sh — the q, k, v weight gradients of a layer as one batched
# matmul (schedule.c qkv_dw: tt_gop_matmul_batch_solo, "CxCxBT x3 ... TA
# acc" in a profile) against three dispatches, on the GPU host, in one
# device call. The test hook TT_WEBGPU_QKV_BATCH=1 runs them as three
# (the forward's q, k, v batch stays on: bit 0), 3 (the default) batched.
#   1. bits, ops: build/test_webgpu_split (test_qkv_unbatched: batched and
#      unbatched gradients bit-identical, bias folded or not, split-K or
#      not), build/test_webgpu_attention (dq, dk, dv in one buffer), and
#      build/dev_matmul_check on the planned tile (the "solo" batch lines:
#      each product bit-identical to the product alone);
#   2. bits, training: the shakespeare_char shape, 3 steps, both ways:
#      losses, grad norms and the final checkpoints compared;
#   3. profile: build/tinytrain_hooks profile --detail, three and batched,
#      at the shakespeare_char shape (6 layers, d 384, 6 heads, ctx 256,
#      batch 64) and gpt2: the weight-gradient rows of the C x C x BT shape
#      (unbatched: the q, k, v products share their row with the attention
#      output projection's, L sites of the 4L), matmul_colsum_final, and
#      the sum of the sites;
#   4. (--step) the whole step at the shakespeare_char shape: tinytrain_hooks
#      bench, batched and three, ABAB.
# Prediction (written before the run): shakespeare_char, the planned batch
# is t64 z16 x3 (the solo plan's 16 slices; 1728 workgroups), 0.164 ms per
# product in dev_matmul_bench against 0.173-0.187 alone: -0.03 to -0.07 ms
# per layer, -0.2 to -0.4 ms per step, plus two fewer split-K reductions
# per layer; gpt2 (t128 z15 x3): no change (within +-0.2 ms of the step).
#
#   bash dev/matmul/qkv_dw_h200.sh [--no-bits] [--step] [--smoke] [--jobs N] [--data FILE]
#
# --smoke: the tiny preset instead of both shapes (a check of the script on
# lavapipe: there the bias gradient is folded, "49x48x512 x3 ... ones").
#
# Environment: TINYTRAIN_WEBGPU_LIB (Dawn), VK_DRIVER_FILES (set to the
# NVIDIA ICD when unset and one is found). Raw outputs in build/dev-qkv-dw/
# (copied to $OUT/dev-qkv-dw when $OUT is a folder). Exit 1 if the build
# fails, 3 if the bits differ. About 2-3 minutes on the 16-core host.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
bits=1 step=0 smoke=0
. "$root/dev/attention/h200_lib.sh"
while [ $# -gt 0 ]; do
  case "$1" in
    --no-bits) bits=0 ;;
    --step) step=1 ;;
    --smoke) smoke=1 ;;
    *) dev_opt "$0" "$@"; shift $((dev_shift - 1)) ;;
  esac
  shift
done
dev_build qkv_dw tinytrain_hooks test_webgpu_split test_webgpu_attention dev_matmul_check
out=build/dev-qkv-dw
rm -rf "$out"; mkdir -p "$out"
echo "built in $(el) s"
bad=0
menv() { case "$1" in three) echo TT_WEBGPU_QKV_BATCH=1 ;; *) echo TT_WEBGPU_QKV_BATCH=3 ;; esac; }
shk=(--layers 6 --d-model 384 --heads 6 --ctx 256 --batch 64)
# the profiled shapes: name C BT L
shapes=("shakespeare 384 16384 6" "gpt2 768 8192 12")
if [ $smoke = 1 ]; then shk=(--preset tiny); shapes=("tiny 48 512 2"); fi

if [ $bits = 1 ]; then
  echo "== bits, ops ($(el) s)"
  for t in test_webgpu_split test_webgpu_attention; do
    if TT_REQUIRE_WEBGPU=1 timeout 300 ./build/$t >"$out/$t.log" 2>&1; then
      echo "$t: passed ($(grep -h -m1 '^adapter:' "$out/$t.log"))"
    else
      echo "$t: FAILED"; tail -15 "$out/$t.log"; bad=1
    fi
  done
  grep -h 'q, k, v unbatched' "$out/test_webgpu_split.log"
  if timeout 300 ./build/dev_matmul_check tiles=0 >"$out/matmul_check.txt" 2>&1; then
    echo "dev_matmul_check tiles=0: passed; $(grep -c ' solo .*= products alone' "$out/matmul_check.txt") solo batches bit-identical to their products alone"
  else
    echo "dev_matmul_check: FAILED"; grep -E 'FAIL' "$out/matmul_check.txt" | head; bad=1
  fi
  echo "== bits, training: the shakespeare_char shape, 3 steps ($(el) s)"
  extract() { sed -n 's/^{"event":"step","step":\([0-9]*\),"steps":[0-9]*,"loss":\([^,]*\),"lr":[^,]*,"grad_norm":\([^,]*\),.*/step \1 loss \2 gn \3/p' "$1"; }
  for m in batched three; do
    env "$(menv $m)" timeout 300 ./build/tinytrain_hooks train --backend webgpu "${shk[@]}" --json --sample-tokens 0 \
      --save-every 0 --stop-after 3 "${data[@]}" --out "$out/train-$m" >"$out/train-$m.jsonl" 2>"$out/train-$m.err"
    extract "$out/train-$m.jsonl" >"$out/train-$m.txt"
  done
  cat "$out/train-batched.txt"
  if [ -s "$out/train-batched.txt" ] && cmp -s "$out/train-batched.txt" "$out/train-three.txt" &&
     cmp -s "$out/train-batched/checkpoint.safetensors" "$out/train-three/checkpoint.safetensors"; then
    echo "training: bit-identical ($(wc -l <"$out/train-batched.txt") steps, and the final checkpoints)"
  else
    echo "training: DIFFERENT"; diff "$out/train-batched.txt" "$out/train-three.txt" | head; for f in "$out"/train-*.err; do tail -n 3 "$f"; done; bad=1
  fi
fi

# the rows of a --detail profile for a C x C x BT weight gradient and the colsum reduction, and the sum
rows() { # rows FILE C BT
  grep -E "^  matmul +$2x$2x$3 .*TA acc|^  matmul +$(( $2 + 1 ))x$2x$3 .*TA acc|^  matmul_colsum_final|sum of the sites" "$1"
}
for sh in "${shapes[@]}"; do
  read -r s C BT L <<<"$sh"
  case $s in gpt2) args=(--preset gpt2) ;; *) args=("${shk[@]}") ;; esac
  echo "== profile: $s ${args[*]} --detail ($(el) s)"
  for m in three batched; do
    env "$(menv $m)" timeout 300 ./build/tinytrain_hooks profile "${args[@]}" --detail >"$out/profile-$s-$m.txt" 2>&1 ||
      { echo "profile $s $m failed:"; tail -5 "$out/profile-$s-$m.txt"; }
    echo "  $m:"; rows "$out/profile-$s-$m.txt" $C $BT | sed 's/^/  /'
  done
  # q, k, v weight gradients per step: three = the shared row's ms * 3/4 (3L of its 4L sites), batched = the x3 row
  awk -v C=$C -v BT=$BT -v L=$L '
    function ms_of(line,   n) { n = split(line, f, " "); return (f[n] ~ /%$/) ? f[n - 1] : f[n - 2] }
    FNR == 1 { file++ }
    $1 == "matmul" && ($2 == C "x" C "x" BT || $2 == (C + 1) "x" C "x" BT) && / TA acc/ {
      if (file == 1 && $3 !~ /^x3$/) three = ms_of($0) * 3 / 4
      if (file == 2 && $3 == "x3") batched = ms_of($0) }
    /sum of the sites/ { sum[file] = $5 }
    END { printf "  q, k, v dW per step: three %.3f ms, batched %.3f ms (%+.3f); sum of the sites %s -> %s ms (%+.3f)\n",
                 three, batched, batched - three, sum[1], sum[2], sum[2] - sum[1] }' \
    "$out/profile-$s-three.txt" "$out/profile-$s-batched.txt"
done

if [ $step = 1 ]; then
  echo "== step: tinytrain_hooks bench at the shakespeare_char shape, batched and three, ABAB ($(el) s)"
  for m in batched three batched three; do
    env "$(menv $m)" timeout 300 ./build/tinytrain_hooks bench --backend webgpu "${shk[@]}" --steps 40 "${data[@]}" \
      >>"$out/bench-$m.txt" 2>&1
    echo "$m: $(grep -iE 'median' "$out/bench-$m.txt" | tail -1)"
  done
fi
# the text outputs only
[ -d "${OUT:-}" ] && mkdir -p "$OUT/dev-qkv-dw" && cp "$out"/*.txt "$out"/*.log "$OUT/dev-qkv-dw/" 2>/dev/null
echo "done in $(el) s"
[ $bad = 0 ] || exit 3
