#!/usr/bin/env bash
# test_web.sh — the browser tests of the page (tests/web/*.test.mjs except
# the WebGPU files, which test_web_gpu.sh runs): run_web.sh says how.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
files=()
for f in "$here"/*.test.mjs; do
  grep -qx "$(basename "$f")" < <(bash "$here/test_web_gpu.sh" --list) || files+=("$f")
done
exec bash "$here/run_web.sh" "${files[@]}"
