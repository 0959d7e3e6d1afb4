#!/usr/bin/env bash
# test_trajectory.sh — the numerics lock: fixed training runs must reproduce
# the recorded loss trajectories bit for bit (every step's loss and pre-clip
# grad norm, every validation loss, printed with 9 significant digits, which
# round-trips a float exactly). The records live in tests/train/golden/, one file
# per run; a file records the run on one kind of machine:
#   cpu_*     native CPU backend: depends on the SIMD width, so the file name
#             carries the ISA that `tinytrain info` reports (avx512, avx2, ...)
#   webgpu_*  WebGPU on Mesa lavapipe (the CI adapter): depends on the
#             adapter too (its LLVM vector width), named like the CPU ones
#   wasm_*    the WebAssembly CLI under Node: the same bits on every host
# A run whose record does not exist for this machine is reported SKIP with
# the reason (and fails under TT_REQUIRE_TRAJECTORY=1); any difference fails.
#   bash tests/train/test_trajectory.sh --record   writes the records for this machine
set -euo pipefail
src=${TT_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
tt=${TINYTRAIN:-$src/build/tinytrain}
wasm=${TT_WASM_DIR:-$src/build-wasm}/tinytrain.js
gold=$src/tests/train/golden
record=0
[ "${1:-}" = --record ] && record=1
[ -x "$tt" ] || { echo "FAIL: tinytrain not found: $tt"; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
info=$("$tt" info 2>/dev/null || true)
isa=$(printf '%s\n' "$info" | sed -n 's/^cpu *SIMD \([a-z0-9_]*\).*/\1/p')
[ -n "$isa" ] || { echo "FAIL: cannot read the CPU ISA from 'tinytrain info'"; exit 1; }
adapter=$(printf '%s\n' "$info" | sed -n 's/^webgpu *\(.*\)/\1/p' | head -1)

# step/eval lines of a --json run, reduced to the numbers that must not move
extract() {
  sed -n -e 's/^{"event":"step","step":\([0-9]*\),"steps":[0-9]*,"loss":\([^,]*\),"lr":\([^,]*\),"grad_norm":\([^,]*\),.*/step \1 loss \2 lr \3 gn \4/p' \
         -e 's/^{"event":"eval","step":\([0-9]*\),"val_loss":\([^,]*\),.*/eval \1 val \2/p' "$1"
}

fails=0 skips=0 runs=0
# check NAME RECORD-FILE COMMAND...
check() {
  local name=$1 file=$2; shift 2
  local out=$tmp/$name.jsonl
  if ! "$@" > "$out" 2> "$tmp/$name.err"; then
    echo "FAIL: $name: the run failed: $(tail -1 "$tmp/$name.err")"; fails=$((fails + 1)); return
  fi
  extract "$out" > "$tmp/$name.txt"
  [ -s "$tmp/$name.txt" ] || { echo "FAIL: $name: no step lines"; fails=$((fails + 1)); return; }
  runs=$((runs + 1))
  if [ $record = 1 ]; then
    cp "$tmp/$name.txt" "$gold/$file"; echo "recorded $file ($(wc -l < "$gold/$file") lines)"; return
  fi
  if [ ! -f "$gold/$file" ]; then
    echo "SKIP: $name: no record $file for this machine"; skips=$((skips + 1)); return
  fi
  if cmp -s "$gold/$file" "$tmp/$name.txt"; then
    echo "ok   $name: $(wc -l < "$tmp/$name.txt") lines bit-identical to $file"
  else
    echo "FAIL: $name differs from $file (first differences, -recorded +now):"
    { diff "$gold/$file" "$tmp/$name.txt" | grep "^[<>]" | head -6; } || true  # a difference must not end the script (pipefail)
    fails=$((fails + 1))
  fi
}

common=(train --json --sample-tokens 0 --threads 2 --save-every 0)
# the default run (preset small, 2000-step schedule, fortunes): its first 101 steps and the eval at 100
check cpu_default "cpu_${isa}_default.txt" "$tt" "${common[@]}" --backend cpu --stop-after 101 --out "$tmp/cpu_default"
# the 50-step parity runs (tiny and small, default schedule)
check cpu_tiny "cpu_${isa}_tiny50.txt" "$tt" "${common[@]}" --backend cpu --preset tiny --stop-after 50 --out "$tmp/cpu_tiny"
if [ "${adapter#llvmpipe}" != "$adapter" ]; then
  check webgpu_tiny "webgpu_${isa}_lavapipe_tiny50.txt" "$tt" "${common[@]}" --backend webgpu --preset tiny --stop-after 50 --out "$tmp/gpu_tiny"
  check webgpu_small "webgpu_${isa}_lavapipe_small50.txt" "$tt" "${common[@]}" --backend webgpu --preset small --stop-after 50 --out "$tmp/gpu_small"
else
  echo "SKIP: webgpu runs: the adapter is not lavapipe (${adapter:-none})"; skips=$((skips + 1))
fi
if [ -f "$wasm" ] && command -v node >/dev/null 2>&1; then
  check wasm_tiny "wasm_tiny50.txt" node --no-experimental-fetch "$wasm" "${common[@]}" --preset tiny --stop-after 50 --out "$tmp/wasm_tiny"
else
  echo "SKIP: wasm run: $wasm or node missing"; skips=$((skips + 1))
fi

[ $record = 1 ] && exit 0
echo "trajectory: $runs runs, $fails failed, $skips skipped"
[ $fails = 0 ] || exit 1
if [ $skips -gt 0 ] && [ -n "${TT_REQUIRE_TRAJECTORY:-}" ]; then echo "FAIL: skips with TT_REQUIRE_TRAJECTORY set"; exit 1; fi
exit 0
