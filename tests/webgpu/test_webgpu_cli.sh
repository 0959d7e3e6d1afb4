#!/usr/bin/env bash
# test_webgpu_cli.sh — the WebGPU path of the `tinytrain` command line:
#   - a run trained on webgpu resumes on the cpu and continues its loss
#     history (loss.csv: 10 rows, steps 1..10);
#   - faults give one stderr line "tinytrain: error: ..." and exit 1, never a
#     crash: library not found, a wrong library, no adapter, a model too big
#     for the adapter's binding limit; `--backend auto` falls back to the cpu
#     with a notice that gives the reason;
#   - a device lost in the middle of training (test hook
#     TT_WEBGPU_FAULT_AT_STEP) saves the last good state first: the checkpoint
#     loads and resumes on the cpu;
#   - `tinytrain info` reports per preset whether it fits the adapter.
# Tiny preset, a generated corpus, a few steps (lavapipe is slow). Skips
# (exit 0, "SKIP: reason") without a WebGPU adapter unless
# TT_REQUIRE_WEBGPU=1.
set -u
. "$(dirname "$0")/../support/cli_lib.sh" gpucli

# ---------- is there an adapter? ----------
require_webgpu

make_text text.txt
COMMON=(--data text.txt --preset tiny --sample-tokens 0 --eval-batches 1)

# steps of loss.csv are exactly 1..N

# ---------- webgpu -> cpu through the CLI ----------
"$T" train --backend webgpu --steps 6 --out D "${COMMON[@]}" > g.out 2> g.err
check "train --backend webgpu exits 0" test $? -eq 0
check "it ran on webgpu" grep -q '^  backend .*(vulkan\|metal\|d3d12\|opengl' g.out
check "it wrote 6 loss rows" steps_continuous D/loss.csv 6
cp D/loss.csv gpu6.csv
"$T" train --resume D/checkpoint.safetensors --backend cpu --steps 10 --sample-tokens 0 --data text.txt > c.out 2> c.err
check "resume on --backend cpu exits 0" test $? -eq 0
check "resume starts at step 7" grep -q 'steps 7..10' c.out
check "resume ran on the cpu" grep -q '^  backend cpu' c.out
check "loss.csv has 10 rows, steps 1..10" steps_continuous D/loss.csv 10
check "the first 6 rows are the webgpu run's" bash -c "head -7 D/loss.csv | cut -d, -f1,2 | diff -q - <(cut -d, -f1,2 gpu6.csv)"
"$T" eval --ckpt D/checkpoint.safetensors --data text.txt --batches 1 > ev.out 2>&1
check "the checkpoint loads and is at step 10" grep -q '(step 10)' ev.out
# the same two runs on the cpu only (6 steps, then resumed to 10: the same
# stretched schedule): steps 7..10 agree with the switched run (0.1%)
"$T" train --backend cpu --steps 6 --out E "${COMMON[@]}" > /dev/null 2>&1
"$T" train --resume E/checkpoint.safetensors --backend cpu --steps 10 --sample-tokens 0 --data text.txt > /dev/null 2>&1
check "steps 7..10 after the switch match a cpu-only run (0.1%)" \
    awk -F, 'NR == FNR { a[$1] = $2; next } FNR > 7 { d = ($2 - a[$1]) / a[$1]; if (d < 0) d = -d; if (d > 1e-3) bad = 1; n++ } END { exit !(n == 4 && !bad) }' \
    E/loss.csv D/loss.csv

# ---------- library not found ----------
TINYTRAIN_WEBGPU_LIB=/nonexistent/libwebgpu.so "$T" train --backend webgpu --steps 2 --out L1 "${COMMON[@]}" > l1.out 2> l1.err
one_error "library not found: one error line, exit 1" $? l1.err
check "  ... naming the library" grep -q '/nonexistent/libwebgpu.so' l1.err
check "  ... and no checkpoint (nothing trained)" test ! -e L1/checkpoint.safetensors
TINYTRAIN_WEBGPU_LIB=/nonexistent/libwebgpu.so "$T" train --backend auto --steps 2 --out L2 "${COMMON[@]}" > l2.out 2> l2.err
check "library not found, --backend auto: exits 0" test $? -eq 0
check "  ... with a notice naming the reason and the cpu" grep -q '^tinytrain: webgpu unavailable (cannot load /nonexistent/libwebgpu.so.*); using the cpu backend' l2.err
check "  ... and trains on the cpu" grep -q '^  backend cpu' l2.out

# ---------- a wrong library (not a webgpu.h implementation) ----------
LIBM="$(ldconfig -p 2>/dev/null | awk '/libm\.so\.6 .*x86-64|libm\.so\.6 / { print $NF; exit }')"
[ -n "$LIBM" ] || LIBM=libm.so.6
TINYTRAIN_WEBGPU_LIB="$LIBM" "$T" train --backend webgpu --steps 2 --out W "${COMMON[@]}" > w.out 2> w.err
one_error "wrong library: one error line, exit 1" $? w.err
check "  ... saying what is wrong" grep -q 'lacks wgpu.* (wrong version?)' w.err

# ---------- no adapter (no Vulkan driver) ----------
VK_DRIVER_FILES=/nonexistent.json VK_ICD_FILENAMES=/nonexistent.json "$T" train --backend webgpu --steps 2 --out N "${COMMON[@]}" > n.out 2> n.err
one_error "no adapter: one error line, exit 1" $? n.err
check "  ... saying there is no adapter" grep -qi 'no .*adapter' n.err
VK_DRIVER_FILES=/nonexistent.json VK_ICD_FILENAMES=/nonexistent.json "$T" train --backend auto --steps 2 --out N2 "${COMMON[@]}" > n2.out 2> n2.err
check "no adapter, --backend auto: falls back to the cpu" bash -c "grep -q 'using the cpu backend' n2.err && grep -q '^  backend cpu' n2.out"

# ---------- a model too big for one storage binding (limit lowered by a test hook) ----------
TT_WEBGPU_MAX_BINDING_MIB=0.1 "$T" train --backend webgpu --steps 2 --out B1 "${COMMON[@]}" > b1.out 2> b1.err
one_error "too big for the adapter: one error line, exit 1" $? b1.err
check "  ... naming the limit" grep -q 'maxStorageBufferBindingSize' b1.err
TT_WEBGPU_MAX_BINDING_MIB=0.1 "$T" train --backend auto --steps 2 --out B2 "${COMMON[@]}" > b2.out 2> b2.err
check "too big, --backend auto: exits 0" test $? -eq 0
check "  ... the notice gives the reason and the cpu" grep -q '^tinytrain: webgpu unavailable (.*maxStorageBufferBindingSize.*); using the cpu backend' b2.err
check "  ... and trains on the cpu" grep -q '^  backend cpu' b2.out
TT_WEBGPU_MAX_BINDING_MIB=0.1 "$T" info > bi.out 2>&1
check "info: tiny is too big under the lowered limit" grep -qE '^tiny .* too big \(.*maxStorageBufferBindingSize' bi.out
check "info: tiny fits the real adapter" grep -qE '^tiny .* fits$' info.out
check "info --json has a gpu field per preset" bash -c "\"$T\" info --json | grep -q '\"name\":\"tiny\".*\"gpu\":\"fits\"'"

# ---------- device lost in the middle of training ----------
# saves at 2 and 4; the 5th step fails: the device cannot be read, the
# checkpoint holds step 4 (the last state downloaded before the fault)
TT_WEBGPU_FAULT_AT_STEP=5 "$T" train --backend webgpu --steps 8 --save-every 2 --out F "${COMMON[@]}" > f.out 2> f.err
one_error "device lost mid-training: one error line, exit 1" $? f.err
check "  ... says what was saved, honestly" grep -q 'device lost .*F/checkpoint.safetensors holds step 4, the last state downloaded before the fault' f.err
check "  ... the checkpoint exists" test -s F/checkpoint.safetensors
check "  ... loss.csv was cut to step 4" steps_continuous F/loss.csv 4
"$T" train --resume F/checkpoint.safetensors --backend cpu --steps 8 --sample-tokens 0 --data text.txt > fr.out 2> fr.err
check "  ... it loads and resumes on the cpu (steps 5..8)" bash -c "grep -q 'steps 5..8' fr.out && grep -q '^done: 8 steps' fr.out"
check "  ... the loss history continues (8 rows)" steps_continuous F/loss.csv 8
# the device still readable (kind error): the last completed step is read back
TT_WEBGPU_FAULT_AT_STEP=4 TT_WEBGPU_FAULT_KIND=error "$T" train --backend webgpu --steps 8 --save-every 2 --out F2 "${COMMON[@]}" > f2.out 2> f2.err
one_error "device error mid-training: one error line, exit 1" $? f2.err
check "  ... saved the last completed step read back from the device" grep -q 'saved the last completed step 3 (read back from the device)' f2.err
check "  ... loss.csv holds steps 1..3" steps_continuous F2/loss.csv 3

# ---------- info: the adapter's optional features ----------
check "info: a features line under the adapter" grep -qE '^          (no subgroups|subgroups \(size [0-9]+\.\.[0-9]+\)), (no )?shader-f16, (no )?subgroup-matrix; storage binding up to [0-9]+ MiB; bounds clamps and workgroup zero-fill off \(TT_WEBGPU_ROBUST=1 turns it on\)$' info.out
TT_WEBGPU_ROBUST=1 "$T" info > ir.out 2>&1
check "info: TT_WEBGPU_ROBUST=1 shows Dawn's clamps and zero-fill on" grep -qE 'MiB; bounds clamps and workgroup zero-fill on$' ir.out
"$T" info --json > ij.out
check "info --json: the same facts as a detail field" grep -qE '"detail":"[^"]*storage binding up to [0-9]+ MiB; bounds clamps and workgroup zero-fill off' ij.out
TT_WEBGPU_HIDE_FEATURES=subgroups,shader-f16 "$T" info > ih.out 2>&1
check "info: an adapter without subgroups / shader-f16 says so" grep -qE '^          no subgroups, no shader-f16, ' ih.out

# ---------- profile: every kernel of one step, timed alone ----------
"$T" profile --preset tiny --reps 1 > pr.out 2> pr.err
check "profile: exits 0, nothing on stderr" bash -c "test -s pr.out && ! test -s pr.err"
# tiny: head size 16, the dS-storing attention backward (attention_backward_d, dkdv, dq_ds)
for k in matmul attention_forward attention_backward_d attention_backward_dkdv attention_backward_dq_ds layernorm_forward crossentropy adamw_update adamw_sumsq; do
    check "  ... has a row for $k" grep -qE "^  $k +[0-9]+ +[0-9.]+ " pr.out
done
check "  ... the shares add up to 100%" awk '/^  [a-z_]+ +[0-9]+ +[0-9.]+ +[0-9.]+%/ { s += $4 } END { exit !(s > 99.0 && s < 101.0) }' pr.out
"$T" profile --preset tiny --reps 1 --detail --json > pj.out 2> pj.err
check "profile --detail --json: one JSON object whose kernels sum to sum_ms, matmul rows carry their shape, its table the rows in order" node -e '
  const j = JSON.parse(require("fs").readFileSync("pj.out", "utf8"));
  const sum = j.kernels.reduce((a, k) => a + k.ms, 0);
  const mm = j.kernels.filter((k) => k.kernel === "matmul");
  if (j.schema !== "tinytrain.profile/1" || Math.abs(sum - j.sum_ms) > 1e-6 * Math.max(1, j.sum_ms)) process.exit(1);
  if (mm.length < 4 || !mm.every((k) => /^\d+x\d+x\d+( x\d+)? t\d+ z\d+/.test(k.detail) && k.gflop > 0)) process.exit(1);
  // "table": the text the CLI prints, a row per kernel in the same order
  const t = j.table.split("\n").filter((l) => l);
  if (t.length !== j.kernels.length + 3 || !t[0].startsWith("profile: tiny (f32) on ") || !/^  sum of the sites: [0-9.]+ ms/.test(t.at(-1))) process.exit(1);
  if (!j.kernels.every((k, i) => t[i + 2].trim().startsWith(k.kernel + " ") && t[i + 2].includes(k.ms.toFixed(3)))) process.exit(1);'
"$T" profile --preset tiny --reps 0 > p0.out 2> p0.err
check "profile --reps 0: a usage error (exit 2), one line naming the range" bash -c "test $? -eq 2 && test \$(wc -l < p0.err) -eq 1 && grep -q 'reps must be in 1..1000' p0.err"
"$T" profile --preset tiny --precision f64 > pf.out 2> pf.err
check "profile --precision f64: a usage error (exit 2), one line naming the values" bash -c "test $? -eq 2 && test \$(wc -l < pf.err) -eq 1 && grep -q 'f32,f16' pf.err"
TINYTRAIN_WEBGPU_LIB=/nonexistent/lib.so "$T" profile --preset tiny > pn.out 2> pn.err
one_error "profile without a WebGPU library: one error line" $? pn.err

echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
