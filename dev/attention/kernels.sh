#!/usr/bin/env bash
# kernels.sh — a kernel directory for the test hook TT_WEBGPU_WGSL_DIR
# (src/webgpu/hooks.h): every shipped kernel (src/webgpu/wgsl) with the
# variant's files (dev/attention/wgsl) laid over them.
#   bash dev/attention/kernels.sh OUT_DIR [--no-pf] [--dq]    (prints OUT_DIR)
# --no-pf: the dk/dv variant with its prefetch off whatever the plan's PF
# says (its line "const PF2: bool = PF;" made false): fewer registers.
# --dq: the dq kernel's variant (dev/attention/wgsl-dq) laid over as well.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:?usage: kernels.sh OUT_DIR [--no-pf] [--dq]}
shift
nopf=0 dq=0
for o in "$@"; do
  case $o in
    --no-pf) nopf=1 ;;
    --dq) dq=1 ;;
    *) echo "kernels.sh: unknown option $o" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
cp "$root"/src/webgpu/wgsl/*.wgsl "$out"/
cp "$here"/wgsl/*.wgsl "$out"/
[ $dq = 1 ] && cp "$here"/wgsl-dq/*.wgsl "$out"/
if [ $nopf = 1 ]; then
  f="$out"/attention_backward_dkdv.wgsl
  grep -q '^const PF2: bool = PF;$' "$f" || { echo "kernels.sh: no PF2 line in $f" >&2; exit 1; }
  sed -i 's/^const PF2: bool = PF;$/const PF2: bool = false;/' "$f"
fi
echo "$out"
