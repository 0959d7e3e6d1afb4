#!/usr/bin/env bash
# test_webgpu_bounds.sh — every WGSL kernel keeps its array indices in bounds
# and reads only workgroup memory it wrote (native WebGPU runs without
# Dawn's robustness transform and workgroup zero-fill, device_dawn.c).
# tests/tools/wgsl_bounds.py instruments a copy of src/webgpu/wgsl (every index
# checked against its array's length, every workgroup read against a
# written-bit mask); `tinytrain_hooks train` runs it through the test hooks
# (src/webgpu/hooks.h) TT_WEBGPU_WGSL_DIR (kernels read from that folder)
# and TT_WEBGPU_BOUNDS_CHECK=1 (device_dawn.c: the counters at binding 31,
# one "bounds check: ..." stderr line when the device closes):
#   - two training steps and an evaluation under the default settings
#     (three shapes: tiny, small, and an odd one: head size 11, T 37, batch
#     3, 2 micro-batches, so partial tiles, unaligned rows and the accumulate
#     paths run), a head size of 132 (the row attention kernels), the odd
#     shape and head size 132 with dropout 0.2 (the dropout kernel and the
#     attention kernels' dropout variants), head size 16 at T 37 with
#     dropout and the prefetch (the dS-storing attention backward: partial
#     tiles, its dropout variant), and the
#     odd shape with the plan choices GPUs or big shapes make forced by
#     hooks (TT_WEBGPU_ATTN_PF=1: the attention prefetch of GPUs;
#     TT_WEBGPU_ATTN_SPLIT=1 with it at head size 52, T 37: the split
#     dk/dv layout of GPUs, whose instrumented tile fits lavapipe's 32 KiB;
#     TT_WEBGPU_BIASFOLD=0: the separate bias-gradient column sums of big
#     shapes; TT_WEBGPU_SPLITK=3), the f16 tier with an injected overflow
#     (--precision f16, TT_WEBGPU_LOSS_SCALE_FAULT_AT_STEP=1), LoRA (test_webgpu_lora, whose
#     backends train adapters) and GPT-2's variants (test_webgpu_vocab:
#     gelu_new, vocabulary 997, the head in chunks) and test_webgpu_f16
#     (matmul_cast): each exits 0 and reports "clean", and together they
#     compiled every kernel file of src/webgpu/wgsl (the include-only ones
#     run inside others) but those on subgroup matrices (matmul_sgmat, attention_sgmat_*);
#   - the check can fail: the same tools on a copy with a planted
#     out-of-range index (gelu_forward.wgsl: loop bound n + 64) and a planted
#     unwritten workgroup read (layernorm_forward.wgsl: lane 0 skips its
#     store) must name both, file and line;
#   - the hooks themselves: an unreadable TT_WEBGPU_WGSL_DIR is one error
#     line naming the file; the bounds check without instrumented kernels
#     says so (not "clean") and leaves the embedded kernels working.
# Needs python3 (scripts/setup.sh installs it): without it the test fails.
# Skips (exit 0, "SKIP: reason") without a WebGPU adapter unless
# TT_REQUIRE_WEBGPU=1. About 100 s on 2 cores with lavapipe and a cold
# shader cache (mostly compiling the instrumented kernels), 20 s warm.
set -u
SRC="${TT_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
. "$(dirname "$0")/../support/cli_lib.sh" gpubounds

require_webgpu

if ! command -v python3 > /dev/null 2>&1; then
    echo "FAIL: python3 not found (tests/tools/wgsl_bounds.py needs it; scripts/setup.sh installs it)"
    exit 1
fi
BIN="${TT_BINARY_DIR:-$(dirname "$T")}"
GRID="$BIN/test_webgpu_grid"
if [ ! -x "$GRID" ]; then
    echo "FAIL: $GRID is not built (the planted-bug check runs it)"
    exit 1
fi

make_text text.txt
SHAPE_TINY=(--preset tiny)
SHAPE_SMALL=(--preset small) # the default preset
SHAPE_ODD=(--preset tiny --d-model 44 --heads 4 --ctx 37 --batch 3 --accum 2)
SHAPE_DS=(--preset tiny --d-model 64 --heads 4 --ctx 37 --batch 3 --accum 2) # head size 16: the dS-storing backward
SHAPE_SPLIT=(--preset tiny --d-model 208 --heads 4 --ctx 37 --batch 3 --accum 2) # head size 52: split dk/dv
SHAPE_WIDE=(--preset tiny --d-model 132 --heads 1 --layers 1 --ctx 19 --batch 2) # head size 132: no attention tile holds it
COMMON=(--data text.txt --steps 2 --eval-batches 1 --sample-tokens 0)

# ---------- instrument ----------
python3 "$SRC/tests/tools/wgsl_bounds.py" "$SRC/src/webgpu/wgsl" W > instr.out 2> instr.err
check "wgsl_bounds.py instruments every kernel file (exit 0)" test $? -eq 0
tail -1 instr.out
check "  ... no index site left unchecked" bash -c "grep -q ', 0 unchecked$' instr.out && [ ! -s instr.err ]"
[ -s instr.err ] && head -5 instr.err

# bounds_clean NAME RC LOG: the run exited 0 and its "bounds check:" lines
# are all "clean" (at least one); their kernel names go to kernels.txt
bounds_clean() {
    local name="$1" rc="$2" log="$3"
    if [ "$rc" -eq 0 ] && grep -q '^bounds check: ' "$log" && ! grep '^bounds check: ' "$log" | grep -qv '^bounds check: clean ('; then
        ok "$name: clean ($(grep -c '^bounds check: ' "$log") device(s))"
        sed -n 's/^bounds check: clean ([0-9]* kernels:\(.*\))$/\1/p' "$log" | tr ' ' '\n' | sed '/^$/d' >> kernels.txt
    else
        bad "$name (exit $rc): $(grep -m3 '^bounds check: \|error' "$log" | cut -c1-400)"
    fi
}
run_train() { # run_train NAME ENV... -- ARGS...: one instrumented training run
    local name="$1"; shift
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    local log="run-$name.log"
    env ${envs[@]+"${envs[@]}"} TT_WEBGPU_WGSL_DIR="$PWD/W" TT_WEBGPU_BOUNDS_CHECK=1 \
        "$T" train --backend webgpu --out "R-$name" "${COMMON[@]}" "$@" > "$log" 2>&1
    bounds_clean "$name" $? "$log"
}

# ---------- the default settings, then the forced plan choices ----------
: > kernels.txt
run_train default-tiny -- "${SHAPE_TINY[@]}"
run_train default-small -- "${SHAPE_SMALL[@]}"
run_train default-odd -- "${SHAPE_ODD[@]}"
run_train attn-rows -- "${SHAPE_WIDE[@]}"
run_train dropout-odd -- "${SHAPE_ODD[@]}" --dropout 0.2
run_train dropout-rows -- "${SHAPE_WIDE[@]}" --dropout 0.2
run_train attn-pf TT_WEBGPU_ATTN_PF=1 -- "${SHAPE_ODD[@]}"
run_train attn-ds TT_WEBGPU_ATTN_PF=1 -- "${SHAPE_DS[@]}" --dropout 0.2
run_train attn-split TT_WEBGPU_ATTN_SPLIT=1 TT_WEBGPU_ATTN_PF=1 -- "${SHAPE_SPLIT[@]}"
run_train biasfold-0 TT_WEBGPU_BIASFOLD=0 -- "${SHAPE_ODD[@]}"
run_train splitk-3 TT_WEBGPU_SPLITK=3 -- "${SHAPE_ODD[@]}"
# the f16 tier (f16 matmul tiles, the loss scaler: amp_update), with an overflow injected at step 1
run_train f16-odd TT_WEBGPU_LOSS_SCALE_FAULT_AT_STEP=1 -- "${SHAPE_ODD[@]}" --precision f16
# LoRA (the lora_*.wgsl kernels): test_webgpu_lora's odd shape (rank 3) and
# tiny (rank 8, every target) with a fine-tune of two steps
if [ -x "$BIN/test_webgpu_lora" ]; then
    TT_LORA_STEPS=2 TT_WEBGPU_WGSL_DIR="$PWD/W" TT_WEBGPU_BOUNDS_CHECK=1 "$BIN/test_webgpu_lora" > run-lora.log 2>&1
    bounds_clean lora $? run-lora.log
else
    bad "$BIN/test_webgpu_lora is not built (the LoRA kernels run in it)"
fi

# the f16 tier's kernels beyond a training run's: test_webgpu_f16 (the
# subgroup-matrix matmul's operand copy, matmul_cast: ragged, ones rows,
# batches; the loss scaler after skipped steps)
if [ -x "$BIN/test_webgpu_f16" ]; then
    TT_WEBGPU_WGSL_DIR="$PWD/W" TT_WEBGPU_BOUNDS_CHECK=1 "$BIN/test_webgpu_f16" > run-f16.log 2>&1
    bounds_clean f16 $? run-f16.log
else
    bad "$BIN/test_webgpu_f16 is not built (matmul_cast runs in it)"
fi

# GPT-2's variants (gelu_tanh_*.wgsl; vocabulary 997, the head and
# cross-entropy in chunks with padded logits rows, LoRA with a frozen wte):
# test_webgpu_vocab's models
if [ -x "$BIN/test_webgpu_vocab" ]; then
    TT_WEBGPU_WGSL_DIR="$PWD/W" TT_WEBGPU_BOUNDS_CHECK=1 "$BIN/test_webgpu_vocab" > run-vocab.log 2>&1
    bounds_clean vocab $? run-vocab.log
else
    bad "$BIN/test_webgpu_vocab is not built (the gelu_new kernels run in it)"
fi

# every kernel file (one with an entry point) was compiled instrumented and
# ran clean, but for those that need subgroup matrices, which lavapipe lacks
# (dev/f16/matmul_check.mjs and attn_check.mjs check them against float64 on a GPU;
# test_webgpu_sgmat_compile.sh compiles them here, stubbed)
missing=""
for f in "$SRC"/src/webgpu/wgsl/*.wgsl; do
    k=$(basename "$f" .wgsl)
    grep -q '@compute' "$f" || continue
    grep -q 'subgroupMatrixLoad' "$f" && { echo "note: $k needs subgroup matrices: not run here"; continue; }
    grep -qx "$k" kernels.txt || missing="$missing $k"
done
check "every kernel file of src/webgpu/wgsl ran instrumented${missing:+ (missing:$missing)}" test -z "$missing"

# ---------- it can fail: planted bugs ----------
mkdir P
cp "$SRC"/src/webgpu/wgsl/*.wgsl P/
sed -i 's/i < a\.n; i += stride/i < a.n + 64u; i += stride/' P/gelu_forward.wgsl
sed -i 's/^    red\[lid\] = v;$/    if (lid != 0u) { red[lid] = v; }/' P/layernorm_forward.wgsl
oob_line=$(grep -n 'out\[a\.out_off + i\]' P/gelu_forward.wgsl | cut -d: -f1)
wg_line=$(grep -n 'let r = red\[0\];' P/layernorm_forward.wgsl | cut -d: -f1)
check "planted: the copies differ from the kernels as intended" \
    bash -c "grep -q 'a.n + 64u' P/gelu_forward.wgsl && grep -q 'if (lid != 0u) { red\[lid\] = v; }' P/layernorm_forward.wgsl && [ -n '$oob_line' ] && [ -n '$wg_line' ]"
python3 "$SRC/tests/tools/wgsl_bounds.py" P PW > /dev/null 2> pinstr.err
check "  ... instrumented (exit 0)" test $? -eq 0
TT_WEBGPU_WGSL_DIR="$PWD/PW" TT_WEBGPU_BOUNDS_CHECK=1 "$GRID" > planted.log 2>&1
grep '^bounds check: ' planted.log | cut -c1-300
check "  ... the run reports violations, not clean" \
    bash -c "grep -q '^bounds check: ' planted.log && ! grep -q '^bounds check: clean' planted.log"
check "  ... the out-of-range index: gelu_forward.wgsl line $oob_line" \
    grep -qE "^bounds check: [0-9]+ invocations indexed out of range:.* gelu_forward\.wgsl line $oob_line \([0-9]+\)" planted.log
check "  ... the unwritten workgroup read: layernorm_forward.wgsl line $wg_line" \
    grep -qE "; [0-9]+ invocations read unwritten workgroup memory:.* layernorm_forward\.wgsl line $wg_line \([0-9]+\)" planted.log

# ---------- the hooks themselves ----------
TT_WEBGPU_WGSL_DIR="$PWD/nowhere" "$T" train --backend webgpu --out N "${COMMON[@]}" "${SHAPE_TINY[@]}" > n.out 2> n.err
one_error "TT_WEBGPU_WGSL_DIR without the files: one error line, exit 1" $? n.err
check "  ... naming the file it cannot read" grep -q "TT_WEBGPU_WGSL_DIR: cannot read $PWD/nowhere/common.wgsl" n.err
TT_WEBGPU_BOUNDS_CHECK=1 "$GRID" > plain.log 2>&1
check "bounds check on embedded kernels: they still pass (the extra binding is harmless)" test $? -eq 0
check "  ... and it says none was instrumented (not clean)" grep -q '^bounds check: no instrumented kernel' plain.log
"$GRID" > off.log 2>&1
check "hook off: no bounds check line" bash -c "[ $? -eq 0 ] && ! grep -q 'bounds check' off.log"

echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
