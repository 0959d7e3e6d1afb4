#!/usr/bin/env bash
# test.sh — the whole test suite, from a fresh clone: installs what is missing
# (scripts/setup.sh --all), builds native (Release), a sanitizer build of the
# file readers, the WebAssembly build, then runs everything under ctest.
# The last line is ctest's own summary. CI (.ci/run) calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
jobs=$(nproc 2>/dev/null || echo 2)

bash scripts/setup.sh --all

echo "== build (native, Release)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$jobs"

echo "== build (AddressSanitizer + UBSan: file readers and CPU ops)"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DTT_SANITIZE=ON -DTT_NATIVE=ON >/dev/null
cmake --build build-asan -j"$jobs" --target test_checkpoint test_data tinytrain bench_ops
export TT_ASAN_DIR="$root/build-asan"

if [ -x scripts/build-wasm.sh ]; then
  echo "== build (WebAssembly)"
  bash scripts/build-wasm.sh
fi

# In CI nothing may skip silently: GPU tests must find lavapipe, browser tests Chromium.
if [ "${CI:-}" = true ]; then
  export TT_REQUIRE_WEBGPU=1 TT_REQUIRE_BROWSER=1 TT_REQUIRE_WASM=1
fi

echo "== tests"
cd build
ctest --output-on-failure -j"$jobs" --timeout 1200
