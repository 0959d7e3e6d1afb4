#!/usr/bin/env bash
# test_hf_gpt2.sh — Hugging Face GPT-2 folders that are not tinytrain's own
# (tests/tools/hf_gpt2_folder.py writes them with the standard library and is
# the float64 oracle of their logits):
#   1 a GPT-2-shaped model of vocab 1003, gelu_new, eps 1e-5 (and one of the
#     exact GELU and eps 1e-3), as transformers names it (prefix, lm_head =
#     wte, attn.bias buffers; and without the prefix): `sample --ids
#     --logits` on the CPU backend gives the oracle's logits (max abs 1e-4);
#     the KV-cached sampler's greedy continuation equals the full forward's;
#   2 the same weights stored as F16 and BF16 load (widened exactly): each
#     gives the oracle's logits of its stored values, and they stay within
#     their rounding of the F32 logits;
#   3 a tinytrain model exported (F32) and converted to F16: the export gives
#     the checkpoint's logits exactly, the F16 copy within its rounding;
#   4 `info FOLDER` names the shape, activation, vocab, dtype, tokenizer files;
#   5 train --init-from the folder (full and LoRA; ctx below n_positions):
#     the checkpoint records vocab, act; --ctx above n_positions, an unknown
#     activation and ids outside the vocabulary are refused with one line.
. "$(dirname "$0")/../support/cli_lib.sh" hf-gpt2
command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 0; }
PY="$(cd "$(dirname "$0")/../tools" && pwd)/hf_gpt2_folder.py"
IDS=5,900,17,1002,3,44,256,7,0,999

# maxdiff A B: the largest |a - b| over the logits of two files (the oracle's list or sample's JSON)
maxdiff() {
    python3 - "$1" "$2" <<'EOF'
import json, sys
def load(p):
    j = json.load(open(p))
    return j['logits'] if isinstance(j, dict) else j
a, b = load(sys.argv[1]), load(sys.argv[2])
assert len(a) == len(b) and all(len(x) == len(y) for x, y in zip(a, b)), 'shapes differ'
print(max(abs(p - q) for x, y in zip(a, b) for p, q in zip(x, y)))
EOF
}
below() { python3 -c "import sys; sys.exit(0 if float('$1') <= float('$2') else 1)"; }

# ---------- 1: the oracle ----------
mkdir g32 g32n gexact
python3 "$PY" make g32 --buffers --lm-head
python3 "$PY" make g32n --no-prefix
python3 "$PY" make gexact --act gelu --eps 1e-3 --seed 2
for m in g32 g32n gexact; do
    python3 "$PY" logits $m $IDS > $m.ref
    "$T" sample --ckpt $m --ids $IDS --logits --tokens 0 --backend cpu > $m.out 2> $m.err
    d=$(maxdiff $m.ref $m.out 2>&1)
    check "$m: the CPU forward's logits are the float64 oracle's (max abs $d)" below "$d" 1e-4
done
"$T" sample --ckpt g32 --ids $IDS --tokens 20 --temperature 0 > s1.out 2>&1
"$T" sample --ckpt g32 --ids $IDS --tokens 20 --backend cpu > s2.out 2>&1
check "the KV-cached sampler's greedy continuation is the full forward's" \
    test -n "$(grep -o '"generated":\[[0-9,]*\]' s1.out)" -a "$(grep -o '"generated":\[[0-9,]*\]' s1.out)" = "$(grep -o '"generated":\[[0-9,]*\]' s2.out)"

# ---------- 2: F16 and BF16 ----------
for dt in F16 BF16; do
    mkdir g$dt
    python3 "$PY" convert g32 g$dt --dtype $dt
    python3 "$PY" logits g$dt $IDS > g$dt.ref
    "$T" sample --ckpt g$dt --ids $IDS --logits --tokens 0 > g$dt.out 2>&1
    d=$(maxdiff g$dt.ref g$dt.out 2>&1)
    check "$dt: the logits of the stored values (max abs $d)" below "$d" 1e-4
    d=$(maxdiff g32.out g$dt.out 2>&1)
    check "$dt: within its rounding of the F32 logits (max abs $d)" below "$d" 0.5
    check "$dt: not the F32 weights (the rounding shows)" python3 -c "import sys; sys.exit(0 if float('$d') > 0 else 1)"
done

# ---------- 3: a tinytrain model, exported ----------
make_text text.txt
"$T" train --preset tiny --data text.txt --steps 3 --out A --sample-tokens 0 --threads 1 --backend cpu > a.out 2>&1
"$T" export A hf > /dev/null 2>&1
mkdir hf16 && python3 "$PY" convert hf hf16 --dtype F16
"$T" sample --ckpt A --ids 104,101,108,108,111 --logits --tokens 0 > a.logits 2>&1
"$T" sample --ckpt hf --ids 104,101,108,108,111 --logits --tokens 0 > hf.logits 2>&1
"$T" sample --ckpt hf16 --ids 104,101,108,108,111 --logits --tokens 0 > hf16.logits 2>&1
check "the export gives the checkpoint's logits exactly" test "$(maxdiff a.logits hf.logits)" = "0.0"
d=$(maxdiff a.logits hf16.logits 2>&1)
check "its F16 copy within its rounding (max abs $d)" below "$d" 0.05

# ---------- 4: info ----------
"$T" info gF16 > info.out 2>&1
check "info names the shape, activation, vocab and dtype" \
    grep -q "2 layers, d_model 24, 4 heads, ctx 40" info.out -a
check "  activation gelu_new, vocab 1003, F16" bash -c 'grep -q "gelu_new" info.out && grep -q "vocab      1003" info.out && grep -q "(F16)" info.out'
check "  no tokenizer files" grep -q "no tokenizer files" info.out
"$T" info gF16 --json --batch 2 --ctx 16 --lora-rank 4 > info.json 2>&1
python3 - info.json > ij.out 2>&1 <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
assert j['model']['vocab'] == 1003 and j['model']['ctx'] == 16 and j['model']['batch'] == 2 and j['n_positions'] == 40, j
assert j['activation'] == 'gelu_new' and j['dtype'] == 'F16' and j['lora_adapters']['rank'] == 4, j
assert 0 < j['lora']['cpu_bytes'] < j['full']['cpu_bytes'], j
print('info ok')
EOF
check "  --json: the run's batch, ctx and LoRA; a LoRA fine-tune needs less CPU memory than a full one" grep -q '^info ok' ij.out

# ---------- 5: fine-tunes and refusals ----------
"$T" train --init-from g32 --data text.txt --ctx 16 --batch 2 --steps 2 --out F --sample-tokens 0 --threads 1 --backend cpu > f.out 2>&1
check "train --init-from the folder (ctx 16 of 40 positions)" test $? -eq 0 -a -f F/checkpoint.safetensors
"$T" train --init-from g32 --data text.txt --ctx 16 --batch 2 --steps 2 --lora-rank 4 --out FL --sample-tokens 0 --threads 1 --backend cpu > fl.out 2>&1
check "  and a LoRA fine-tune of it" test $? -eq 0 -a -f FL/checkpoint.safetensors
python3 - F/checkpoint.safetensors > meta.out 2>&1 <<'EOF'
import json, struct, sys
b = open(sys.argv[1], 'rb').read()
c = json.loads(json.loads(b[8:8 + struct.unpack('<Q', b[:8])[0]])['__metadata__']['config'])
assert c['vocab'] == 1003 and c['act'] == 'gelu_new' and c['ctx'] == 16 and 'ln_eps' not in c, c
print('meta ok')
EOF
check "  the checkpoint records vocab 1003 and act gelu_new" grep -q '^meta ok' meta.out
"$T" sample --ckpt F --ids 1,2,3 --tokens 4 > fs.out 2>&1
check "  and samples ids from it" grep -q '"generated":\[[0-9]*,[0-9]*,[0-9]*,[0-9]*\]' fs.out
"$T" train --init-from g32 --data text.txt --ctx 64 --steps 2 --out R --sample-tokens 0 --backend cpu > r.out 2> r.err
one_error "--ctx beyond n_positions is refused" $? r.err
check "  nothing written" test ! -e R
mkdir relu && cp g32/model.safetensors relu/ && sed 's/"gelu_new"/"relu"/' g32/config.json > relu/config.json
"$T" sample --ckpt relu --ids 1 --tokens 1 > r.out 2> r.err
one_error "an unknown activation is refused" $? r.err
"$T" sample --ckpt g32 --ids 1,1003 --tokens 1 > r.out 2> r.err
rc=$?
check "ids outside the vocabulary: a usage error" test $rc -eq 2 -a "$(wc -l < r.err)" -eq 1
"$T" sample --ckpt g32 --prompt hello --tokens 1 > r.out 2> r.err
rc=$?
check "a text prompt for a model of another vocabulary is refused with one line" test $rc -ne 0 -a "$(wc -l < r.err)" -eq 1

echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
