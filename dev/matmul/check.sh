#!/usr/bin/env bash
# check.sh — every matmul variant against the product kernel, bit for bit:
# build/dev_matmul_check (dev/matmul_check.c: small products on every tile,
# transposes, split-K, bias / residual / accumulate, ones rows, odd sizes)
# once with the embedded kernels and once per variant directory
# (make_variants.sh, through TT_WEBGPU_WGSL_DIR), with the k loop as a loop
# and unrolled (as on GPUs); the output hashes must be equal line for line.
# Then `ctest -R backend_ops` per variant (float64 reference).
#   bash dev/matmul/check.sh [--variants "pf kv"] [--tiles 128,64,32,0] [--unroll "0 1"] [--no-ctest]
# (--tiles 128: the options act on the 128 tile only; the variant none on
# every tile covers the shared code of the others.)
# Run from the repository root after `cmake -S . -B build`. Exit 1 on a difference.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
variants="none pf db8 db16 kv all" ctest=1 tiles=128,64,32,0 unrolls="0 1"
while [ $# -gt 0 ]; do
  case "$1" in
    --variants) variants=$2; shift ;;
    --tiles) tiles=$2; shift ;;
    --unroll) unrolls=$2; shift ;;
    --no-ctest) ctest=0 ;;
    *) echo "check.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
cmake --build build -j2 --target dev_matmul_check test_backend_ops >/dev/null || { echo "check.sh: build failed" >&2; exit 1; }
bash dev/matmul/make_variants.sh build/dev-matmul >/dev/null || exit 1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
for u in $unrolls; do
  ./build/dev_matmul_check unroll=$u tiles=$tiles > "$tmp/base.$u" 2> "$tmp/base.$u.err" || { echo "base unroll $u: FAILED"; cat "$tmp/base.$u.err"; fail=1; }
  for v in $variants; do
    TT_WEBGPU_WGSL_DIR=$root/build/dev-matmul/$v ./build/dev_matmul_check unroll=$u tiles=$tiles > "$tmp/$v.$u" 2> "$tmp/$v.$u.err"
    rc=$?
    n=$(grep -c hash "$tmp/$v.$u")
    if [ $rc = 0 ] && cmp -s "$tmp/base.$u" "$tmp/$v.$u"; then
      echo "$v unroll $u: bit-identical ($n products)"
    else
      echo "$v unroll $u: DIFFERENT (exit $rc)"; diff "$tmp/base.$u" "$tmp/$v.$u" | head -20; tail -3 "$tmp/$v.$u.err"; fail=1
    fi
  done
done
if [ $ctest = 1 ]; then
  for v in $variants; do
    if (cd build && TT_WEBGPU_WGSL_DIR=$root/build/dev-matmul/$v ctest -R backend_ops --output-on-failure > "$tmp/ctest.$v" 2>&1); then
      echo "$v: ctest -R backend_ops passed"
    else
      echo "$v: ctest -R backend_ops FAILED"; tail -20 "$tmp/ctest.$v"; fail=1
    fi
  done
fi
exit $fail
