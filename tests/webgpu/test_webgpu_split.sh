#!/usr/bin/env bash
# test_webgpu_split.sh — `tinytrain` with the parameter storage split over
# several GPU buffers (src/webgpu/plan.c, "chunks"), forced by the test hook
# TT_WEBGPU_MAX_BINDING_MIB (a float, MiB) on tiny with batch 2 (0.09 MiB:
# 4 chunks of the 275 KiB of parameters; every activation still fits):
#   - a split run stopped after 6 steps and resumed (split again) to 10 has
#     exactly the losses (loss.csv) and final checkpoint (byte for byte) of an
#     uninterrupted unsplit run, and resumes on the cpu;
#   - a limit below the largest tensor: one error line naming it, exit 1;
#     `--backend auto` falls back to the cpu with that reason;
#   - `tinytrain info`'s gpu column follows the new rule: presets whose
#     parameters exceed the limit fit (split) when every tensor and
#     activation does, and the others name the tensor or buffer too big.
# Skips (exit 0, "SKIP: reason") without a WebGPU adapter unless
# TT_REQUIRE_WEBGPU=1.
set -u
. "$(dirname "$0")/../support/cli_lib.sh" gpusplit

require_webgpu

make_text text.txt
COMMON=(--data text.txt --preset tiny --batch 2 --sample-tokens 0 --eval-batches 1 --eval-every 5)
SPLIT=0.09

# ---------- the reference: unsplit, 10 steps without a stop ----------
"$T" train --backend webgpu --steps 10 --out U "${COMMON[@]}" > u.out 2> u.err
check "unsplit run exits 0" test $? -eq 0
check "  ... on webgpu" grep -q '^  backend .*(vulkan\|metal\|d3d12\|opengl' u.out

# ---------- split: 6 steps, stop, resume (split) to 10 ----------
TT_WEBGPU_MAX_BINDING_MIB=$SPLIT "$T" train --backend webgpu --steps 10 --stop-after 6 --out S "${COMMON[@]}" > s1.out 2> s1.err
check "split run (limit $SPLIT MiB) exits 0" test $? -eq 0
check "  ... on webgpu" grep -q '^  backend .*(vulkan\|metal\|d3d12\|opengl' s1.out
check "  ... stopped after 6 steps" steps_continuous S/loss.csv 6
TT_WEBGPU_MAX_BINDING_MIB=$SPLIT "$T" train --resume S/checkpoint.safetensors --backend webgpu --steps 10 --sample-tokens 0 --data text.txt > s2.out 2> s2.err
check "split resume exits 0" test $? -eq 0
check "  ... steps 7..10 on webgpu" bash -c "grep -q 'steps 7..10' s2.out && grep -q '^  backend .*(vulkan\|metal\|d3d12\|opengl' s2.out"
check "  ... loss.csv has steps 1..10" steps_continuous S/loss.csv 10
check "losses of the split, stopped + resumed run = the unsplit run's, bit for bit" \
    bash -c "diff <(cut -d, -f1,2 U/loss.csv) <(cut -d, -f1,2 S/loss.csv)"
check "the final checkpoints are byte-identical (weights, moments, histories)" cmp -s U/checkpoint.safetensors S/checkpoint.safetensors
"$T" train --resume S/checkpoint.safetensors --backend cpu --steps 12 --sample-tokens 0 --data text.txt > sc.out 2> sc.err
check "the split run's checkpoint resumes on the cpu (steps 11..12)" grep -q 'steps 11..12' sc.out

# ---------- a tensor larger than the limit ----------
TT_WEBGPU_MAX_BINDING_MIB=0.04 "$T" train --backend webgpu --steps 2 --out B1 "${COMMON[@]}" > b1.out 2> b1.err
one_error "a tensor over the limit: one error line, exit 1" $? b1.err
check "  ... naming the tensor and the limit" grep -q 'parameter tensor wte.weight needs .* MiB but the adapter binds at most .* (maxStorageBufferBindingSize)' b1.err
check "  ... and no checkpoint" test ! -e B1/checkpoint.safetensors
TT_WEBGPU_MAX_BINDING_MIB=0.04 "$T" train --backend auto --steps 2 --out B2 "${COMMON[@]}" > b2.out 2> b2.err
check "  ... --backend auto: the cpu trains, the notice gives the reason" \
    bash -c "grep -q '^tinytrain: webgpu unavailable (.*parameter tensor wte.weight.*); using the cpu backend' b2.err && grep -q '^  backend cpu' b2.out"

# ---------- info ----------
TT_WEBGPU_MAX_BINDING_MIB=8 "$T" info > i8.out 2>&1
check "info at 8 MiB: massive (100 MB of parameters) fits, split" grep -qE '^massive .* fits$' i8.out
check "info at 8 MiB: gpt2 is too big, naming its largest tensor" grep -qE '^gpt2 .* too big \(parameter tensor h\.0\.mlp\.c_fc\.weight needs 9 MiB .*maxStorageBufferBindingSize\)\)$' i8.out
TT_WEBGPU_MAX_BINDING_MIB=2 "$T" info > i2.out 2>&1
check "info at 2 MiB: medium is too big, naming the activation buffer" grep -qE '^medium .* too big \(this model needs a 3 MiB fc buffer' i2.out

echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
