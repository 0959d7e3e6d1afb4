#!/usr/bin/env bash
# gpt2_finetune.sh GPT2_DIR OUTDIR — a Hugging Face GPT-2 folder (with its
# tokenizer files) fine-tuned on TinyShakespeare on the GPU host, in one go:
#   1. LoRA (rank 8) and full fine-tunes on WebGPU (batch 4 x 256, 30 steps)
#      and on the CPU (batch 2 x 64, 8 steps): the validation loss of the
#      initial weights (train's "init" line) and after; each must fall;
#   2. the WebGPU LoRA run exported (merged and --adapter): transformers and
#      peft continue a prompt greedily as `tinytrain sample` does
#      (bench/hf/gpt2_greedy_check.py);
#   3. the GPT-2 fine-tune rows: `tinytrain bench --init-from` on WebGPU at
#      batch 8 x 1024, full and LoRA rank 8, then PyTorch fp32 eager and
#      PyTorch + peft (bench/hf/gpt2_step_torch.py) in the same call.
# TINYTRAIN: the binary (default build/tinytrain). Exit 1 if a check fails.
set -uo pipefail
g=$1 out=$2
tt=${TINYTRAIN:-build/tinytrain}
data=data/tinyshakespeare.txt
mkdir -p "$out"
fail=0
val() { sed -n 's/.*val loss \([0-9.]*\).*/\1/p' "$1" | $2; }
for b in webgpu cpu; do
  if [ $b = webgpu ]; then shape=(--batch 4 --ctx 256); n=30; else shape=(--batch 2 --ctx 64); n=8; fi
  for mode in lora full; do
    extra=(--lr 1e-4); [ $mode = lora ] && extra=(--lora-rank 8 --lr 2e-3)
    s0=$(date +%s)
    $tt train --init-from "$g" --data $data --out "$out/$b-$mode" --backend $b "${shape[@]}" --steps $n "${extra[@]}" \
      --eval-every $n --eval-batches 4 > "$out/$b-$mode.log" 2>&1 || { echo "$b $mode: failed"; tail -3 "$out/$b-$mode.log"; fail=1; continue; }
    v0=$(val "$out/$b-$mode.log" "head -1") v1=$(val "$out/$b-$mode.log" "tail -1")
    ok=$(python3 -c "print('falls' if $v1 < $v0 else 'DOES NOT FALL')")
    [ "$ok" = falls ] || fail=1
    echo "$b $mode: val loss $v0 -> $v1 after $n steps (${shape[*]}): $ok ($(( $(date +%s) - s0 )) s)"
  done
done
if [ -f "$out/webgpu-lora/checkpoint.safetensors" ]; then
  $tt export "$out/webgpu-lora" "$out/merged" --force > /dev/null 2>&1 &&
    $tt export "$out/webgpu-lora" "$out/adapter" --adapter --force > /dev/null 2>&1 &&
    python3 bench/hf/gpt2_greedy_check.py --tinytrain $tt --run "$out/webgpu-lora/checkpoint.safetensors" \
      --merged "$out/merged" --base "$g" --adapter "$out/adapter" || fail=1
  python3 -c "from transformers import AutoTokenizer; t=AutoTokenizer.from_pretrained('$out/merged'); print('AutoTokenizer on the export:', t('Hello world')['input_ids'])" 2>&1 | tail -1
fi
echo "== GPT-2 fine-tune step, batch 8 x 1024 (same call)"
for mode in full lora; do
  l=(); [ $mode = lora ] && l=(--lora-rank 8)
  timeout 120 $tt bench --init-from "$g" --data $data --backend webgpu --batch 8 --ctx 1024 --steps 10 --warmup 3 "${l[@]}" \
    2>&1 | grep -E '^(steady|rate|memory)' | sed "s/^/tinytrain webgpu $mode: /"
  timeout 120 python3 bench/hf/gpt2_step_torch.py "$g" --mode $mode --batch 8 --ctx 1024 2>&1 | tail -1
done
exit $fail
