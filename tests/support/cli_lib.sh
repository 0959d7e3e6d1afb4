# cli_lib.sh — shared set-up of the shell tests that drive the `tinytrain`
# binary: checks $TINYTRAIN, makes and enters a temp dir removed on exit,
# disables core dumps, and defines the ok / bad / check counters and the
# helpers below (one_error, steps_continuous, make_text, make_c_text,
# require_webgpu).
# Usage: . "$(dirname "$0")/../support/cli_lib.sh" NAME   (NAME tags the temp dir)
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
one_error() { # one_error NAME RC FILE: exit code 1, exactly one stderr line "tinytrain: error: ..."
    local name="$1" rc="$2" f="$3"
    if [ "$rc" -eq 1 ] && [ "$(wc -l < "$f")" -eq 1 ] && grep -q '^tinytrain: error: ' "$f"; then
        ok "$name"
    else
        bad "$name (rc $rc, stderr: $(head -c 600 "$f"))"
    fi
}
steps_continuous() { # steps_continuous FILE N: the steps of a loss.csv are exactly 1..N
    awk -F, -v n="$2" 'NR == 1 { next } { if ($1 != NR - 1) bad = 1; rows++ } END { exit !(rows == n && !bad) }' "$1"
}
make_text() { # make_text FILE: a 60 kB text corpus that does not depend on the fortunes package
    local words=(the cat sat on a mat and dog ran to see big red sun it was very warm today we go home quick brown fox)
    local i=0
    while [ $i -lt 2500 ]; do
        echo "${words[$((i % 25))]} ${words[$(((i * 7 + 3) % 25))]} ${words[$(((i * 13 + 5) % 25))]} number $i."
        i=$((i + 1))
    done > "$1"
}
make_c_text() { # make_c_text FILE N SEED: N small C functions from a fixed LCG seed, the same bytes
    # as cLikeText(N, SEED) of tests/web/helpers.mjs: a fixed text in a style unlike make_text's
    # (the LCG's products stay below 2^53: exact in awk's doubles)
    awk -v n="$2" -v seed="$3" '
    function pick(k) { x = (1664525 * x + 1013904223) % 4294967296; return int(x / 65536) % k }
    BEGIN {
        x = seed % 4294967296
        split("acc row col tile sum k n buf len off", names, " "); nn = 10
        split("int float size_t uint32_t", types, " ")
        split("+ - * ^ &", ops, " ")
        split("4 8 16 n", bounds, " ")
        for (i = 0; i < n; i++) {
            t = types[pick(4) + 1]; a = names[pick(nn) + 1]
            m = 0; for (j = 1; j <= nn; j++) if (names[j] != a) other[++m] = names[j]
            b = other[pick(m) + 1]
            printf "static %s f%d(%s %s, %s %s) {\n", t, i, t, a, t, b
            printf "    %s r = %s %s %s;\n", t, a, ops[pick(5) + 1], b
            lim = bounds[pick(4) + 1]; op = ops[pick(5) + 1]; k = pick(3)
            printf "    for (int i = 0; i < %s; i++) r %s= %s;\n", lim, op, (k == 0 ? a : k == 1 ? b : "i")
            printf "    return r;\n}\n"
            if (i < n - 1) printf "\n"
        }
    }' > "$1"
}
require_webgpu() { # skip the test (exit 0, "SKIP: why") without a WebGPU adapter, unless TT_REQUIRE_WEBGPU=1;
    # leaves `tinytrain info` in info.out
    "$T" info > info.out 2>&1
    if ! grep -q '^webgpu ' info.out || grep -q '^webgpu  *unavailable' info.out; then
        local why
        why="$(sed -n 's/^webgpu  *\(unavailable: \)\{0,1\}//p' info.out)"
        if [ "${TT_REQUIRE_WEBGPU:-0}" = "1" ]; then
            echo "FAIL: TT_REQUIRE_WEBGPU=1 but WebGPU is unavailable: $why"
            exit 1
        fi
        echo "SKIP: $why"
        exit 0
    fi
}
