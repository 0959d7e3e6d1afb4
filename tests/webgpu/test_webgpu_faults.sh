#!/usr/bin/env bash
# test_webgpu_faults.sh — WebGPU faults through the `tinytrain` command line,
# each with one stderr line "tinytrain: error: ..." and exit 1 under
# `--backend webgpu`, and a notice plus a CPU run under `--backend auto`:
#   - a kernel whose WGSL does not compile (test hook TT_WEBGPU_FAULT_SHADER:
#     every kernel, or one by name): the line names the kernel and the
#     compiler's message; nothing is written (the hooks are read by
#     tinytrain_hooks, the CLI of the test build; the product tinytrain
#     beside it must ignore them);
#   - an adapter without a required feature (TT_WEBGPU_REQUIRE_FEATURES, the
#     feature hidden by TT_WEBGPU_HIDE_FEATURES so every adapter lacks it):
#     "adapter X lacks feature Y";
#   - GPU timestamps asked for (bench --phases) without the feature:
#     the bench still runs and reports the phase split unavailable, with why;
#   - a buffer of the plan the implementation refuses to allocate (test hook
#     TT_WEBGPU_FAULT_OOM=logits): one line, no checkpoint, nothing half written;
#   - a real WebGPU validation error inside a training step (test hook
#     TT_WEBGPU_FAULT_KIND=validation: a dispatch over the workgroup-count
#     limit) is reported, not silent: the checkpoint saved before it loads.
# Tiny preset, a generated corpus, a few steps (lavapipe is slow). Skips
# (exit 0, "SKIP: reason") without a WebGPU adapter unless
# TT_REQUIRE_WEBGPU=1.
set -u
. "$(dirname "$0")/../support/cli_lib.sh" gpufaults
# falls_back NAME OUT ERR PATTERN: exit 0, one notice line with the reason, the cpu trained
falls_back() {
    local name="$1" rc="$2" out="$3" err="$4" pat="$5"
    if [ "$rc" -eq 0 ] && grep -q "^tinytrain: webgpu unavailable (.*$pat.*); using the cpu backend" "$err" &&
        grep -q '^  backend cpu' "$out"; then
        ok "$name"
    else
        bad "$name (rc $rc, stderr: $(head -c 600 "$err"))"
    fi
}
# nothing_written DIR: no file at all under DIR (it may not exist)
nothing_written() { [ -z "$(find "$1" -type f 2>/dev/null)" ]; }

# ---------- is there an adapter? ----------
require_webgpu
ADAPTER="$(sed -n 's/^webgpu  *\(.*\) ([a-z0-9]*)$/\1/p' info.out)"

make_text text.txt
COMMON=(--data text.txt --preset tiny --sample-tokens 0 --eval-batches 1)

# ---------- shader compile error ----------
TT_WEBGPU_FAULT_SHADER='*' "$T" train --backend webgpu --steps 2 --out S1 "${COMMON[@]}" > s1.out 2> s1.err
one_error "shader compile error: one error line, exit 1" $? s1.err
check "  ... naming the kernel and the compiler's message" grep -q 'cannot compile kernel [a-z_]* (entry main): .*error' s1.err
check "  ... without the source excerpt or Dawn's call context" bash -c "! grep -q 'While\|tt_fault_hook' s1.err"
check "  ... and nothing written" nothing_written S1
TT_WEBGPU_FAULT_SHADER=matmul "$T" train --backend webgpu --steps 2 --out S2 "${COMMON[@]}" > s2.out 2> s2.err
one_error "one broken kernel (matmul): one error line, exit 1" $? s2.err
check "  ... naming that kernel" grep -q 'cannot compile kernel matmul ' s2.err
TT_WEBGPU_FAULT_SHADER=matmul "$T" train --backend auto --steps 2 --out S3 "${COMMON[@]}" > s3.out 2> s3.err
falls_back "shader compile error, --backend auto: notice, then the cpu trains" $? s3.out s3.err 'cannot compile kernel matmul'
check "  ... and saves its checkpoint" test -s S3/checkpoint.safetensors
# the product binary (next to this one, hooks compiled out) ignores them
PRODUCT="$(dirname "$T")/tinytrain"
if [ "$PRODUCT" != "$T" ] && [ -x "$PRODUCT" ]; then
    TT_WEBGPU_FAULT_SHADER='*' TT_WEBGPU_FAULT_OOM=logits "$PRODUCT" train --backend webgpu --steps 2 --out S4 "${COMMON[@]}" > s4.out 2> s4.err
    check "the product tinytrain ignores the test hooks (trains, exit 0, quiet stderr)" \
        bash -c "[ $? -eq 0 ] && [ ! -s s4.err ] && test -s S4/checkpoint.safetensors"
fi

# ---------- an adapter without a required feature ----------
export TT_WEBGPU_HIDE_FEATURES=timestamp-query
TT_WEBGPU_REQUIRE_FEATURES=timestamp-query "$T" train --backend webgpu --steps 2 --out R1 "${COMMON[@]}" > r1.out 2> r1.err
one_error "missing feature: one error line, exit 1" $? r1.err
check "  ... 'adapter X lacks feature Y'" grep -qF "adapter $ADAPTER lacks feature timestamp-query" r1.err
check "  ... and nothing written" nothing_written R1
TT_WEBGPU_REQUIRE_FEATURES=timestamp-query "$T" train --backend auto --steps 2 --out R2 "${COMMON[@]}" > r2.out 2> r2.err
falls_back "missing feature, --backend auto: notice, then the cpu trains" $? r2.out r2.err 'lacks feature timestamp-query'
TT_WEBGPU_REQUIRE_FEATURES=no-such-feature "$T" train --backend webgpu --steps 2 --out R3 "${COMMON[@]}" > r3.out 2> r3.err
one_error "an unknown required feature: one error line, exit 1" $? r3.err
check "  ... naming it" grep -q "unknown feature 'no-such-feature'" r3.err
# timestamps are optional: asked for without the feature, the bench runs and says why there is no phase split
"$T" bench --phases --backend webgpu --preset tiny --steps 10 --warmup 1 --data text.txt > t1.out 2> t1.err
check "timestamps asked for without the feature: the bench runs (exit 0, quiet stderr)" bash -c "[ $? -eq 0 ] && [ ! -s t1.err ]"
check "  ... one line says the phase split is unavailable, and why" \
    bash -c "[ \$(grep -c 'timestamp-query' t1.out) -eq 1 ] && grep -qF 'phases   not measured: webgpu: adapter $ADAPTER lacks feature timestamp-query' t1.out"
check "  ... and the step time is still measured" grep -q '^steady .* ms/step' t1.out
unset TT_WEBGPU_HIDE_FEATURES

# ---------- a plan buffer the implementation refuses (as out of memory) ----------
TT_WEBGPU_FAULT_OOM=logits "$T" train --backend webgpu --steps 2 --out O1 "${COMMON[@]}" > o1.out 2> o1.err
one_error "refused allocation: one error line, exit 1" $? o1.err
check "  ... naming the buffer" grep -q 'cannot create buffer logits' o1.err
check "  ... no checkpoint, nothing half written" nothing_written O1
TT_WEBGPU_FAULT_OOM=logits "$T" train --backend auto --steps 2 --out O2 "${COMMON[@]}" > o2.out 2> o2.err
falls_back "refused allocation, --backend auto: notice, then the cpu trains" $? o2.out o2.err 'cannot create buffer logits'
TT_WEBGPU_FAULT_OOM=logits "$T" bench --backend webgpu --preset tiny --steps 10 --warmup 1 --data text.txt > o3.out 2> o3.err
one_error "refused allocation in bench: one error line, exit 1" $? o3.err

# ---------- a real validation error inside a step: reported, never silent ----------
TT_WEBGPU_FAULT_AT_STEP=3 TT_WEBGPU_FAULT_KIND=validation "$T" train --backend webgpu --steps 6 --save-every 2 --out V "${COMMON[@]}" > v.out 2> v.err
one_error "validation error in step 3: one error line, exit 1" $? v.err
check "  ... it is the device's validation error" grep -q 'webgpu validation error: .*DispatchWorkgroups' v.err
check "  ... and says which step the checkpoint holds" grep -q 'V/checkpoint.safetensors holds step 2' v.err
check "  ... loss.csv holds steps 1..2" steps_continuous V/loss.csv 2
"$T" eval --ckpt V/checkpoint.safetensors --data text.txt --batches 1 > ve.out 2>&1
check "  ... the checkpoint loads (step 2)" grep -q '(step 2)' ve.out

echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
