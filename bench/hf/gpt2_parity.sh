#!/usr/bin/env bash
# gpt2_parity.sh — tinytrain against transformers on Hugging Face GPT-2 models,
# in one call on a GPU host (torch and transformers installed, no internet):
# tests/tools/gpt2_parity.py builds GPT2LMHeadModel(GPT2Config()) (124M) and a
# distilgpt2-shaped one (n_layer 6) with random weights (fixed seeds), saves
# them with save_pretrained (model.safetensors), then compares on four
# prompts of token ids: the logits of every position on --backend cpu and
# webgpu against transformers in float64 (max abs <= 1e-4), and the greedy
# 100-token continuations (the CPU sampler and the WebGPU forward) with
# transformers' (identical ids; a divergence at a near-tie is reported, not
# failed).
#
#   TINYTRAIN=build/tinytrain bash bench/hf/gpt2_parity.sh [OUTDIR] [extra gpt2_parity.py options]
#
# OUTDIR (default /tmp/gpt2_parity) receives the saved models and
# summary.json. WebGPU needs what any WebGPU run needs (TINYTRAIN_WEBGPU_LIB,
# the Vulkan loader); pass --backends cpu to leave it out. Exit 0 iff every
# check passed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-/tmp/gpt2_parity}
[ $# -gt 0 ] && shift
tt=${TINYTRAIN:-$root/build/tinytrain}
[ -x "$tt" ] || { echo "TINYTRAIN ($tt) is not an executable tinytrain binary; build it first" >&2; exit 2; }
python3 -c 'import torch, transformers' 2>/dev/null || { echo "needs python3 with torch and transformers" >&2; exit 2; }
mkdir -p "$out" || exit 2
s0=$(date +%s)
python3 "$root/tests/tools/gpt2_parity.py" --out "$out" --tinytrain "$tt" "$@"
rc=$?
echo "gpt2_parity rc=$rc wall $(( $(date +%s) - s0 )) s (summary: $out/summary.json)"
exit $rc
