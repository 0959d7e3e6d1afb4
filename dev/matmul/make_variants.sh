#!/usr/bin/env bash
# make_variants.sh — writes the matmul kernel variants of
# dev/matmul/matmul_variant.wgsl as kernel directories for the test hook
# TT_WEBGPU_WGSL_DIR: OUT/<variant>/ is a copy of src/webgpu/wgsl/ whose
# matmul.wgsl is dev/matmul/matmul_variant.wgsl with its OPT_ constants set.
#   bash dev/matmul/make_variants.sh [OUT]      (default build/dev-matmul)
# Prints the variant names, one a line. Variants (128 tile only):
#   none     every option off (the product kernel, rewritten: a control)
#   pf       OPT_PF:    the prefetched k tile in named registers
#   db8      OPT_DB 8:  k step 8, two shared stages (16 KiB)
#   db16     OPT_DB 16: k step 16, two shared stages (32 KiB)
#   kv       OPT_KV:    op(A) not transposed kept k-contiguous in shared memory
#   pfdb16   pf + db16
#   kvdb16   kv + db16
#   all      pf + db16 + kv
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$root/build/dev-matmul}
names="none pf db8 db16 kv pfdb16 kvdb16 all"
# name -> OPT_PF OPT_DB OPT_KV
variant_opts() {
  case "$1" in
    none) echo "false 0u false" ;;
    pf) echo "true 0u false" ;;
    db8) echo "false 8u false" ;;
    db16) echo "false 16u false" ;;
    kv) echo "false 0u true" ;;
    pfdb16) echo "true 16u false" ;;
    kvdb16) echo "false 16u true" ;;
    all) echo "true 16u true" ;;
    *) return 1 ;;
  esac
}
for v in $names; do
  set -- $(variant_opts $v)
  rm -rf "$out/$v"
  mkdir -p "$out/$v"
  cp "$root"/src/webgpu/wgsl/*.wgsl "$out/$v/"
  sed -e "s/^const OPT_PF: bool = false;/const OPT_PF: bool = $1;/" \
      -e "s/^const OPT_DB: u32 = 0u;/const OPT_DB: u32 = $2;/" \
      -e "s/^const OPT_KV: bool = false;/const OPT_KV: bool = $3;/" \
      "$here/matmul_variant.wgsl" > "$out/$v/matmul.wgsl"
  grep -q "^const OPT_PF: bool = $1;" "$out/$v/matmul.wgsl" && grep -q "^const OPT_DB: u32 = $2;" "$out/$v/matmul.wgsl" &&
    grep -q "^const OPT_KV: bool = $3;" "$out/$v/matmul.wgsl" ||
    { echo "make_variants.sh: could not set the options of $v" >&2; exit 1; }
  echo "$v"
done
