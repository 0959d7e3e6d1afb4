# cli_lib.sh — shared set-up of the shell tests that drive the `tinytrain`
# binary: checks $TINYTRAIN, makes and enters a temp dir removed on exit,
# disables core dumps, and defines the ok / bad / check counters.
# Usage: . "$(dirname "$0")/support/cli_lib.sh" NAME   (NAME tags the temp dir)
T="${TINYTRAIN:-}"
if [ -z "$T" ] || [ ! -x "$T" ]; then
    echo "TINYTRAIN is not set to the built tinytrain binary" >&2
    exit 1
fi
WORK="$(mktemp -d "${TMPDIR:-/tmp}/tinytrain-${1:-test}-XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
cd "$WORK" || exit 1
ulimit -c 0 2>/dev/null

PASS=0
FAIL=0
ok() { PASS=$((PASS + 1)); echo "ok   $1"; }
bad() { FAIL=$((FAIL + 1)); echo "FAIL $1"; }
check() { # check NAME COMMAND...: the command must succeed
    local name="$1"; shift
    if "$@"; then ok "$name"; else bad "$name"; fi
}
