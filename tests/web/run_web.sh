#!/usr/bin/env bash
# run_web.sh FILE... — runs browser test files (tests/web/*.test.mjs) with
# node's test runner: Playwright (playwright-core from npm) drives Debian's
# Chromium headless against the web app served by scripts/serve.mjs. One
# Chromium (browser_server.mjs) is shared by the files, which run
# TT_WEB_JOBS at a time (default 2); each file works in browser contexts of
# its own (own storage and OPFS) and its own server, so files do not see
# each other. Used by test_web.sh and test_web_gpu.sh (the ctest entries).
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

# the shared Chromium: its endpoint is the server's first line of output
tmp=$(mktemp -d)
mkfifo "$tmp/in"
node tests/web/browser_server.mjs < "$tmp/in" > "$tmp/ws" &
server=$!
exec 3> "$tmp/in" # the server lives while this end is open
cleanup() { exec 3>&-; kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
for _ in $(seq 1 300); do [ -s "$tmp/ws" ] && break; kill -0 "$server" 2>/dev/null || break; sleep 0.1; done
ws=$(head -n 1 "$tmp/ws")
[ -n "$ws" ] || { echo "FAIL: the shared Chromium did not start"; exit 1; }
export TT_BROWSER_WS="$ws"

node --test --test-concurrency="${TT_WEB_JOBS:-2}" "$@"
