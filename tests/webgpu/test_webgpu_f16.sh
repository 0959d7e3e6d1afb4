#!/usr/bin/env bash
# test_webgpu_f16.sh — `--precision f16` (mixed precision with dynamic loss
# scaling) through the command line, on an adapter with shader-f16:
#   - 8 steps track the f32 run within 1% at every step, and the --json
#     step lines carry the loss scaler (65536, clean steps counting up);
#   - refusals, one error line and nothing written: the adapter without
#     shader-f16 (test hook TT_WEBGPU_HIDE_FEATURES), the cpu backend;
#   - an injected overflow (test hook TT_WEBGPU_LOSS_SCALE_FAULT_AT_STEP=3):
#     step 3 is skipped (its tensors are those of a run that stopped at
#     step 2, bit for bit), the scale halves, the clean count restarts and
#     training continues;
#   - resume is exact: 3 steps (with an overflow at step 2, so the saved
#     scaler is not the initial one and AdamW's later steps take the bias
#     corrections of one step fewer), then resumed to 6, gives the loss
#     history and tensors of 6 steps in one run.
# Tiny preset, a generated corpus. Skips (exit 0, "SKIP: reason") without a
# WebGPU adapter unless TT_REQUIRE_WEBGPU=1 (lavapipe offers shader-f16).
set -u
. "$(dirname "$0")/../support/cli_lib.sh" gpuf16

require_webgpu

make_text text.txt
COMMON=(--data text.txt --preset tiny --sample-tokens 0 --eval-batches 1 --backend webgpu)
# the tensor bytes (params, m, v) closing a checkpoint: tensors RUN CKPT, the
# parameter count from RUN.json's start line
tensors() { tail -c $((3 * 4 * $(grep -o '"params":[0-9]*' "$1.json" | head -1 | cut -d: -f2))) "$2"; }

# ---------- f16 tracks f32 ----------
"$T" train --steps 8 --out F32 --json "${COMMON[@]}" > f32.json 2> f32.err
check "f32 run exits 0" test $? -eq 0
"$T" train --steps 8 --out F16 --json --precision f16 "${COMMON[@]}" > f16.json 2> f16.err
check "f16 run exits 0" test $? -eq 0
check "f16 loss within 1% of f32 at each of 8 steps" bash -c "paste -d' ' \
    <(grep '\"event\":\"step\"' f32.json | grep -o '\"loss\":[0-9.e+-]*' | cut -d: -f2) \
    <(grep '\"event\":\"step\"' f16.json | grep -o '\"loss\":[0-9.e+-]*' | cut -d: -f2) | \
    awk '{ d = (\$2 - \$1) / \$1; if (d < 0) d = -d; if (d > 0.01) bad = 1; n++ } END { exit !(n == 8 && !bad) }'"
check "the f16 run differs from f32 (f16 operands)" bash -c "! cmp -s <(grep -o '\"loss\":[0-9.e+-]*' f32.json) <(grep -o '\"loss\":[0-9.e+-]*' f16.json)"
check "step lines carry the loss scaler" grep -q '"step":8,.*"loss_scale":65536,"scale_good":8,"skipped":false' f16.json
check "f32 step lines carry none" bash -c "! grep -q loss_scale f32.json"
check "the checkpoint records the precision" grep -aqF '\"precision\":\"f16\"' F16/checkpoint.safetensors

# ---------- refusals ----------
TT_WEBGPU_HIDE_FEATURES=shader-f16 "$T" train --steps 2 --out R1 --precision f16 "${COMMON[@]}" > r1.out 2> r1.err
one_error "no shader-f16: one error line, exit 1" $? r1.err
check "  ... naming the missing feature and what to use" grep -q 'shader-f16.*--precision f32' r1.err
check "  ... and nothing written" test ! -e R1/checkpoint.safetensors
"$T" train --steps 2 --out R2 --data text.txt --preset tiny --sample-tokens 0 --backend cpu --precision f16 > r2.out 2> r2.err
one_error "cpu backend: one error line, exit 1" $? r2.err
check "  ... saying f16 needs WebGPU with shader-f16" grep -q 'precision f16 needs a WebGPU device with shader-f16' r2.err
check "  ... and nothing written" test ! -e R2/checkpoint.safetensors

# ---------- an overflow is skipped ----------
FIX=(--warmup 0 --schedule constant --precision f16 --json)
TT_WEBGPU_LOSS_SCALE_FAULT_AT_STEP=3 "$T" train --steps 5 --out O "${FIX[@]}" "${COMMON[@]}" > o.json 2> o.err
check "overflow run exits 0" test $? -eq 0
check "step 2 clean at 65536" grep -q '"step":2,.*"loss_scale":65536,"scale_good":2,"skipped":false' o.json
check "step 3 skipped, grad norm null, scale halved, count reset" \
    grep -q '"step":3,.*"grad_norm":null,.*"loss_scale":32768,"scale_good":0,"skipped":true' o.json
check "step 5 clean again, one step skipped so far" \
    grep -q '"step":5,.*"loss_scale":32768,"scale_good":2,"skipped":false,"skipped_steps":1' o.json
check "the checkpoint holds the scaler" grep -aq '"loss_scale":"32768","loss_scale_good":"2","loss_scale_skipped":"1"' O/checkpoint.safetensors
TT_WEBGPU_LOSS_SCALE_FAULT_AT_STEP=3 "$T" train --steps 3 --out O3 "${FIX[@]}" "${COMMON[@]}" > o3.json 2>&1
"$T" train --steps 2 --out O2 "${FIX[@]}" "${COMMON[@]}" > o2.json 2>&1
check "the skipped step changed no tensor (= a run stopped at step 2)" \
    cmp -s <(tensors o3 O3/checkpoint.safetensors) <(tensors o2 O2/checkpoint.safetensors)
check "  ... while a clean step changes them" \
    bash -c "! cmp -s <(tail -c $((3 * 4 * 70464)) O/checkpoint.safetensors) <(tail -c $((3 * 4 * 70464)) O2/checkpoint.safetensors)"

# ---------- resume is exact ----------
TT_WEBGPU_LOSS_SCALE_FAULT_AT_STEP=2 "$T" train --steps 6 --out S --precision f16 "${COMMON[@]}" --json > s.json 2>&1
check "straight run exits 0" test $? -eq 0
TT_WEBGPU_LOSS_SCALE_FAULT_AT_STEP=2 "$T" train --steps 6 --stop-after 3 --out P --precision f16 "${COMMON[@]}" --json > p.json 2>&1
check "the first part saved its scaler after an overflow" \
    grep -aq '"loss_scale":"32768","loss_scale_good":"1","loss_scale_skipped":"1"' P/checkpoint.safetensors
"$T" train --resume P/checkpoint.safetensors --steps 6 --sample-tokens 0 --data text.txt --backend webgpu --json > q.json 2>&1
check "resume exits 0" test $? -eq 0
check "  ... resumed in f16" grep -q '"step":6,.*"loss_scale":32768,"scale_good":4' q.json
check "loss history identical to the straight run" cmp -s <(cut -d, -f1,2 S/loss.csv) <(cut -d, -f1,2 P/loss.csv)
check "tensors identical to the straight run" cmp -s <(tensors s S/checkpoint.safetensors) <(tensors s P/checkpoint.safetensors)

echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
