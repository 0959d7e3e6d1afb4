#!/usr/bin/env bash
# test_layers.sh — the folder layering of src/ (tests/tools/include_layers.py):
# no include cycle and no link cycle between src/ folders, every include and
# every cross-folder symbol reference pointing down the layer order.
# The checker is first shown what it must catch — an upward include, an
# include cycle, an include climbing with "..", a folder in no layer, an
# object calling up into a higher folder — each on a small fixture tree,
# then run on the real src/ (headers and sources) and the library's object
# files as this build compiled them.
set -euo pipefail
SRC=${TT_SOURCE_DIR:?set by ctest}
BIN=${TT_BINARY_DIR:?set by ctest}
TOOL=$SRC/tests/tools/include_layers.py
CC=${CC:-cc}
if ! command -v python3 > /dev/null; then
    echo "FAIL: python3 not found (scripts/setup.sh installs it)"
    exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

# expect_fail NAME PATTERN ARGS...: the tool must exit 1 and print PATTERN
expect_fail() {
    local name=$1 pat=$2
    shift 2
    local rc=0
    python3 "$TOOL" "$@" > "$tmp/out" 2>&1 || rc=$?
    if [ "$rc" -ne 1 ] || ! grep -qF -- "$pat" "$tmp/out"; then
        echo "FAIL: self-test '$name': want exit 1 and '$pat', got exit $rc:"
        cat "$tmp/out"
        fails=$((fails + 1))
    else
        echo "ok: self-test '$name' caught: $pat"
    fi
}
expect_pass() {
    local name=$1
    shift
    if ! python3 "$TOOL" "$@" > "$tmp/out" 2>&1; then
        echo "FAIL: self-test '$name' should pass:"
        cat "$tmp/out"
        fails=$((fails + 1))
    fi
}

# a fixture tree: base (.) < io < train
F=$tmp/src
LAY='. < io < train'
mkdir -p "$F/io" "$F/train"
printf '#include "tt.h"\n' > "$F/io/json.h"
printf 'int tt_x;\n' > "$F/tt.h"
printf '#include "io/json.h"\n#include "tt.h"\nint train_fn(void);\n' > "$F/train/state.h"
printf '#include "state.h"\nint train_fn(void) { return 1; }\n' > "$F/train/state.c"
expect_pass "clean tree" --src "$F" --layers "$LAY"

printf '#include "tt.h"\n#include "train/state.h"\n' > "$F/io/json.h"
expect_fail "upward include" "include: io -> train points to a higher layer" --src "$F" --layers "$LAY"
expect_fail "include cycle" "include cycle between folders: io <-> train" --src "$F" --layers "$LAY"
printf '#include "tt.h"\n' > "$F/io/json.h"

printf '#include "../train/state.h"\n' > "$F/io/plot.h"
expect_fail "climbing include" "climbs with '..'" --src "$F" --layers "$LAY"
rm "$F/io/plot.h"

mkdir -p "$F/misc"
printf '#include "tt.h"\n' > "$F/misc/x.h"
expect_fail "folder in no layer" "folder src/misc is in no layer" --src "$F" --layers "$LAY"
rm -r "$F/misc"

# link level: io/json.c calls train_fn (train/state.c) without including anything
# (objects are checked only where their source exists: a moved file's stale
# object in a build folder is not part of the library)
O=$tmp/obj/src
mkdir -p "$O/io" "$O/train"
printf 'int train_fn(void);\nint io_fn(void) { return train_fn(); }\n' > "$F/io/json.c"
"$CC" -c "$F/io/json.c" -o "$O/io/json.c.o"
"$CC" -c -I "$F" "$F/train/state.c" -o "$O/train/state.c.o"
expect_fail "upward call" "link: io -> train points to a higher layer" --src "$F" --layers "$LAY" --objects "$tmp/obj"
printf 'int io_fn(void) { return 2; }\n' > "$F/io/json.c"
"$CC" -c "$F/io/json.c" -o "$O/io/json.c.o"
expect_pass "clean objects" --src "$F" --layers "$LAY" --objects "$tmp/obj"

# file order inside a folder: train/plan.c calls into train/state.c, which
# comes later in "plan < state" (and is fine in "state < plan")
printf 'int train_fn(void);\nint plan_fn(void) { return train_fn(); }\n' > "$F/train/plan.c"
"$CC" -c "$F/train/plan.c" -o "$O/train/plan.c.o"
expect_fail "call to a later file" "link: train/plan.c -> train/state.c points to a later file of train/" \
    --src "$F" --layers "$LAY" --objects "$tmp/obj" --file-layers "train: plan < state"
expect_pass "call to an earlier file" --src "$F" --layers "$LAY" --objects "$tmp/obj" --file-layers "train: state < plan"

if [ "$fails" -ne 0 ]; then
    echo "FAIL: the layering check missed $fails planted fault(s)"
    exit 1
fi

# the real tree: every header and source of src/, and the objects of the
# library (ttcore: the product's hook-less hooks.c included) and of the CLI
objs=()
for d in ttcore_obj tthooks_off tinytrain; do
    if [ ! -d "$BIN/CMakeFiles/$d.dir" ]; then
        echo "FAIL: $BIN/CMakeFiles/$d.dir not found (build the tree first)"
        exit 1
    fi
    objs+=(--objects "$BIN/CMakeFiles/$d.dir")
done
python3 "$TOOL" --src "$SRC/src" "${objs[@]}"
