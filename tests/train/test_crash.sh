#!/usr/bin/env bash
# test_crash.sh — the crash-safety harness (scripts/crash_test.sh), short:
# kill -9 at random moments during steps and saves, resume, repeat; the
# final checkpoint and loss.csv must be byte-identical to an uninterrupted
# run and every checkpoint left by a kill must load. CPU: >= 20 kills;
# WebGPU (lavapipe in CI): >= 5 kills, skipped without an adapter unless
# TT_REQUIRE_WEBGPU=1. The long runs' figures: docs/RELIABILITY.md.
set -u
src=${TT_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
T=${TINYTRAIN:-$src/build/tinytrain}
fail=0
bash "$src/scripts/crash_test.sh" --tinytrain "$T" --backend cpu --kills 20 --steps 40 | tail -1 || fail=1
if "$T" info 2>/dev/null | grep -q '^webgpu  *unavailable'; then
  if [ "${TT_REQUIRE_WEBGPU:-0}" = 1 ]; then echo "FAIL: TT_REQUIRE_WEBGPU=1 but WebGPU is unavailable"; fail=1
  else echo "SKIP: webgpu part: no adapter"; fi
else
  bash "$src/scripts/crash_test.sh" --tinytrain "$T" --backend webgpu --kills 5 --steps 30 | tail -1 || fail=1
fi
exit $fail
