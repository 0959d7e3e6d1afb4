#!/usr/bin/env bash
# test_web.sh — the browser tests (tests/web/*.test.mjs): Playwright
# (playwright-core from npm) drives Debian's Chromium headless against the
# web app served by scripts/serve.mjs; run by node's test runner.
# Skipped, with the reason, only when Chromium (or the web build, or the npm
# packages) is missing and TT_REQUIRE_BROWSER is not set; in CI it is set.
# Artifacts (the screenshot of a trained run): test-results/web/.
set -euo pipefail
src=${TT_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
chromium=${TT_CHROMIUM:-/usr/bin/chromium}

missing=""
[ -x "$chromium" ] || missing="chromium not installed ($chromium)"
[ -z "$missing" ] && ! command -v node >/dev/null 2>&1 && missing="node not installed"
[ -z "$missing" ] && [ ! -d "$src/node_modules/playwright-core" ] && missing="npm packages missing (npm ci)"
[ -z "$missing" ] && [ ! -f "$src/web/dist/tinytrain_web.js" ] && missing="web app not built (scripts/build-wasm.sh)"
if [ -n "$missing" ]; then
  if [ -n "${TT_REQUIRE_BROWSER:-}" ]; then echo "FAIL: $missing"; exit 1; fi
  echo "SKIP: $missing"
  exit 0
fi

export TT_CHROMIUM="$chromium"
# the native CLI for the checkpoint round trips (ctest sets TINYTRAIN)
[ -n "${TINYTRAIN:-}" ] && export TINYTRAIN
cd "$src"
exec node --test --test-concurrency=1 tests/web/*.test.mjs
