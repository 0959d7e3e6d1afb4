#!/usr/bin/env bash
# test_webgpu_gpt2.sh — a Hugging Face GPT-2 folder (tests/data/gpt2_tiny:
# GPT-2's vocabulary of 50257, gelu_new, 2 layers of width 16) through
# `tinytrain` on WebGPU against the CPU:
#   - `sample --ids --logits`: the logits of every position (50257 each)
#     within 2e-5 of the CPU's;
#   - fine-tunes of 3 steps (full, and LoRA on the frozen base): every
#     step's loss within 1e-6 and grad norm within 1e-5 (relative) of the
#     CPU's, and the WebGPU checkpoint samples.
# Skips (exit 0, "SKIP: reason") without a WebGPU adapter unless
# TT_REQUIRE_WEBGPU=1.
set -u
SRC="${TT_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
. "$(dirname "$0")/../support/cli_lib.sh" gpugpt2

require_webgpu

FIX="$SRC/tests/data/gpt2_tiny"
IDS=464,2068,7586,21831,18045,625,262,16931,3290,13
make_text text.txt

# ---------- logits of a prompt ----------
for b in cpu webgpu; do
    "$T" sample --ckpt "$FIX" --ids $IDS --logits --tokens 0 --backend $b > l$b.out 2> l$b.err
    check "sample --ids --logits on $b exits 0" test $? -eq 0
done
check "  ... webgpu ran on a GPU adapter" grep -q '"backend":"webgpu"' lwebgpu.out
python3 - lcpu.out lwebgpu.out > lcmp.out 2>&1 <<'EOF'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
la, lb = a['logits'], b['logits']
assert len(la) == len(lb) == 10 and all(len(r) == 50257 for r in la + lb), (len(la), len(lb))
d = max(abs(x - y) for ra, rb in zip(la, lb) for x, y in zip(ra, rb))
spread = max(max(r) - min(r) for r in la)
print('maxdiff %.3g spread %.3g' % (d, spread))
assert spread > 1 and d < 2e-5, d
print('logits ok')
EOF
cat lcmp.out
check "  ... the 10 x 50257 logits agree within 2e-5" grep -q '^logits ok' lcmp.out

# ---------- fine-tunes ----------
# steps NAME: "step loss grad_norm" lines of a --json run's output
steps() { sed -n 's/^{"event":"step","step":\([0-9]*\),"steps":[0-9]*,"loss":\([^,]*\),"lr":[^,]*,"grad_norm":\([^,]*\),.*/\1 \2 \3/p' "$1"; }
for mode in full lora; do
    extra=()
    [ $mode = lora ] && extra=(--lora-rank 4)
    for b in cpu webgpu; do
        "$T" train --init-from "$FIX" --data text.txt --ctx 16 --batch 2 --steps 3 --out "$mode-$b" --sample-tokens 0 \
            --backend $b --json ${extra[@]+"${extra[@]}"} > "$mode-$b.out" 2> "$mode-$b.err"
        check "$mode fine-tune on $b exits 0" test $? -eq 0
        steps "$mode-$b.out" > "$mode-$b.steps"
    done
    check "  ... 3 steps each" bash -c "[ \$(wc -l < $mode-cpu.steps) -eq 3 ] && [ \$(wc -l < $mode-webgpu.steps) -eq 3 ]"
    check "  ... losses within 1e-6 and grad norms within 1e-5 of the cpu's" \
        awk 'NR == FNR { l[$1] = $2; g[$1] = $3; next }
             { dl = ($2 - l[$1]) / l[$1]; dg = ($3 - g[$1]) / g[$1]; if (dl < 0) dl = -dl; if (dg < 0) dg = -dg
               if (!($1 in l) || dl > 1e-6 || dg > 1e-5 || $2 < 5) bad = 1; n++ }
             END { exit bad || n != 3 }' "$mode-cpu.steps" "$mode-webgpu.steps"
done
"$T" sample --ckpt full-webgpu --ids 1,2,3 --tokens 4 > fs.out 2>&1
check "the webgpu fine-tune's checkpoint samples ids" grep -q '"generated":\[[0-9]*,[0-9]*,[0-9]*,[0-9]*\]' fs.out

echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
