#!/usr/bin/env bash
# test_web_gpu.sh [PART] — the browser tests that train or inspect on the
# page's WebGPU engine (Chromium's SwiftShader adapter: every run compiles
# the engine's kernels first, about 20 s on the 2-core box): run_web.sh says
# how. Three parts, so that each ctest entry (CMakeLists.txt registers one per
# part) stays well inside its timeout: `train` (training on WebGPU, its
# fine-tune and device loss), `state` (pause/resume and inspection) and
# `model` (a Hugging Face GPT-2 folder fine-tuned on WASM and WebGPU).
# No PART: all. --list [PART] prints the files (test_web.sh runs the others).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
TRAIN=(webgpu.test.mjs finetune_gpu.test.mjs gpu_lost.test.mjs)
STATE=(gpu_pause.test.mjs inspect.test.mjs)
MODEL=(gpt2.test.mjs)
list=0
[ "${1:-}" = --list ] && { list=1; shift; }
case "${1:-all}" in
  train) files=("${TRAIN[@]}") ;;
  state) files=("${STATE[@]}") ;;
  model) files=("${MODEL[@]}") ;;
  all) files=("${TRAIN[@]}" "${STATE[@]}" "${MODEL[@]}") ;;
  *) echo "test_web_gpu.sh: unknown part '$1' (train, state, model)" >&2; exit 2 ;;
esac
if [ $list = 1 ]; then printf '%s\n' "${files[@]}"; exit 0; fi
exec bash "$here/run_web.sh" "${files[@]/#/$here/}"
