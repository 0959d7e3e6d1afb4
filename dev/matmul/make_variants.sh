#!/usr/bin/env bash
# make_variants.sh — writes the matmul kernel variants of
# dev/matmul/matmul_variant.wgsl as kernel directories for the test hook
# TT_WEBGPU_WGSL_DIR: OUT/<variant>/ is a copy of src/webgpu/wgsl/ whose
# matmul.wgsl is dev/matmul/matmul_variant.wgsl with its OPT_ constants set.
#   bash dev/matmul/make_variants.sh [OUT]      (default build/dev-matmul)
# Prints the variant names, one a line. Variants:
#   none      every option off (the product kernel, rewritten: a control)
#   bk8       OPT_BK8:      128 tile, k step 8, two shared stages
#   interior  OPT_INTERIOR: unchecked loop and stores for tiles wholly in range
#   remap     OPT_REMAP:    128 tile, conflict-free transposing shared stores
#   bk8int    OPT_BK8 + OPT_INTERIOR
#   all       all three
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$root/build/dev-matmul}
variant_opts() {
  case "$1" in
    none) echo "false false false" ;;
    bk8) echo "true false false" ;;
    interior) echo "false true false" ;;
    remap) echo "false false true" ;;
    bk8int) echo "true true false" ;;
    all) echo "true true true" ;;
    *) return 1 ;;
  esac
}
for v in none bk8 interior remap bk8int all; do
  set -- $(variant_opts $v)
  rm -rf "$out/$v"
  mkdir -p "$out/$v"
  cp "$root"/src/webgpu/wgsl/*.wgsl "$out/$v/"
  sed -e "s/^const OPT_BK8: bool = false;/const OPT_BK8: bool = $1;/" \
      -e "s/^const OPT_INTERIOR: bool = false;/const OPT_INTERIOR: bool = $2;/" \
      -e "s/^const OPT_REMAP: bool = false;/const OPT_REMAP: bool = $3;/" \
      "$here/matmul_variant.wgsl" > "$out/$v/matmul.wgsl"
  grep -q "^const OPT_BK8: bool = $1;" "$out/$v/matmul.wgsl" && grep -q "^const OPT_INTERIOR: bool = $2;" "$out/$v/matmul.wgsl" &&
    grep -q "^const OPT_REMAP: bool = $3;" "$out/$v/matmul.wgsl" ||
    { echo "make_variants.sh: could not set the options of $v" >&2; exit 1; }
  echo "$v"
done
