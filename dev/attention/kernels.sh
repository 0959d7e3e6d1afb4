#!/usr/bin/env bash
# kernels.sh — a kernel directory for the test hook TT_WEBGPU_WGSL_DIR
# (src/webgpu/hooks.h): every shipped kernel (src/webgpu/wgsl) with the
# variant's files (dev/attention/wgsl) laid over them.
#   bash dev/attention/kernels.sh OUT_DIR      (prints OUT_DIR)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:?usage: kernels.sh OUT_DIR}
mkdir -p "$out"
cp "$root"/src/webgpu/wgsl/*.wgsl "$out"/
cp "$here"/wgsl/*.wgsl "$out"/
echo "$out"
