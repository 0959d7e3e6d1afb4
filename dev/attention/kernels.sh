#!/usr/bin/env bash
# kernels.sh — a kernel directory for the test hook TT_WEBGPU_WGSL_DIR
# (src/webgpu/hooks.h): every shipped kernel (src/webgpu/wgsl) with the
# variant's files (dev/attention/wgsl) laid over them.
#   bash dev/attention/kernels.sh OUT_DIR [--no-pf]     (prints OUT_DIR)
# --no-pf: the variant with its prefetch off whatever the plan's PF says
# (its line "const PF2: bool = PF;" made false): fewer registers per thread.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:?usage: kernels.sh OUT_DIR [--no-pf]}
mkdir -p "$out"
cp "$root"/src/webgpu/wgsl/*.wgsl "$out"/
cp "$here"/wgsl/*.wgsl "$out"/
if [ "${2:-}" = --no-pf ]; then
  f="$out"/attention_backward_dkdv.wgsl
  grep -q '^const PF2: bool = PF;$' "$f" || { echo "kernels.sh: no PF2 line in $f" >&2; exit 1; }
  sed -i 's/^const PF2: bool = PF;$/const PF2: bool = false;/' "$f"
fi
echo "$out"
