#!/usr/bin/env bash
# test_web_gpu.sh — the browser tests that train or inspect on the page's
# WebGPU engine (Chromium's SwiftShader adapter: every run compiles the
# engine's kernels first, about 20 s on the 2-core box): run_web.sh says
# how. --list prints the files (test_web.sh runs the others).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
GPU_FILES=(finetune_gpu.test.mjs gpu_lost.test.mjs gpu_pause.test.mjs inspect.test.mjs webgpu.test.mjs)
if [ "${1:-}" = --list ]; then printf '%s\n' "${GPU_FILES[@]}"; exit 0; fi
exec bash "$here/run_web.sh" "${GPU_FILES[@]/#/$here/}"
