#!/usr/bin/env bash
# test_export_hf.sh — `tinytrain export RUN OUTDIR` (the Hugging Face folder)
# and `train --init-from`, end to end on a tiny model:
#   1 the folder: every JSON file parses; config.json says what transformers
#     needs (gpt2, exact GELU, eps 1e-5, n_positions = ctx, vocab 256, tied, the
#     dropout fields = the run's dropout (0.1 here),
#     no special tokens); model.safetensors holds exactly the GPT-2 tensors
#     (names and shapes written out here) with the checkpoint's values, c_attn
#     = [q | k | v]; the folder samples and evaluates as the checkpoint does;
#   2 export never clobbers: a non-empty OUTDIR is refused (unchanged), --force
#     replaces it, a run folder is never replaced, a file is not a folder;
#   3 --init-from a checkpoint, a run folder, an export and a save_pretrained-
#     style folder (lm_head.weight equal to wte, attn.bias buffers, names
#     without "transformer.", extra config keys) starts from the same weights:
#     the same weights hash and, at step 0, the same validation loss as `eval`
#     of the source; the checkpoint records the source;
#   4 refused with one line and nothing written: another shape, --resume
#     with --init-from, a folder without config.json, a vocab_size its wte
#     does not have, an unknown activation, a truncated model.safetensors, an
#     untied head, a missing tensor;
#   5 GPT-2's tanh GELU ("gelu_new") and another layer_norm_epsilon train:
#     the checkpoint records them, and the export writes them back.
. "$(dirname "$0")/../support/cli_lib.sh" export-hf
command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 0; }
make_text text.txt
"$T" train --preset tiny --data text.txt --steps 12 --dropout 0.1 --out A --sample-tokens 0 --threads 1 --backend cpu > a.out 2>&1
check "train the source model" test -f A/checkpoint.safetensors

# ---------- 1: the folder ----------
"$T" export A hf > export.out 2>&1
check "export RUN OUTDIR exits 0" test $? -eq 0
check "export writes the five files" bash -c 'for f in config.json model.safetensors generation_config.json tokenizer.json tokenizer_config.json; do test -s hf/$f || exit 1; done'
check "export leaves no temporary folder" bash -c '! ls -d hf.tmp.* hf.old.* 2>/dev/null | grep -q .'
python3 - A/checkpoint.safetensors hf > folder.out 2>&1 <<'EOF'
import json, struct, sys
ckpt, d = sys.argv[1], sys.argv[2]
def st(path):
    b = open(path, 'rb').read()
    n = struct.unpack('<Q', b[:8])[0]
    h = json.loads(b[8:8 + n])
    meta = h.pop('__metadata__', {})
    data = b[8 + n:]
    return h, meta, lambda k: data[h[k]['data_offsets'][0]:h[k]['data_offsets'][1]]
for f in ('config', 'generation_config', 'tokenizer', 'tokenizer_config'):
    json.load(open(f'{d}/{f}.json'))
c = json.load(open(f'{d}/config.json'))
ch, cmeta, cget = st(ckpt)
mc = json.loads(cmeta['config'])
L, C, H, T = mc['layers'], mc['d-model'], mc['heads'], mc['ctx']
want = {'model_type': 'gpt2', 'architectures': ['GPT2LMHeadModel'], 'activation_function': 'gelu',
        'layer_norm_epsilon': 1e-5, 'n_positions': T, 'n_ctx': T, 'n_embd': C, 'n_layer': L, 'n_head': H,
        'vocab_size': 256, 'tie_word_embeddings': True, 'bos_token_id': None, 'eos_token_id': None}
for k, v in want.items():
    assert c.get(k, 'absent') == v, f'config.json {k} = {c.get(k, "absent")!r}, want {v!r}'
drop = json.loads(cmeta['train_config'])['dropout']
for k in ('resid_pdrop', 'embd_pdrop', 'attn_pdrop'):
    assert abs(c[k] - drop) < 1e-7, f'{k} {c[k]} != dropout {drop}'
tc = json.load(open(f'{d}/tokenizer_config.json'))
assert tc['tokenizer_class'] == 'PreTrainedTokenizerFast' and tc['model_max_length'] == T, tc
assert tc.get('clean_up_tokenization_spaces') is False, 'decode must not clean up spaces'
h, meta, get = st(f'{d}/model.safetensors')
assert meta.get('format') == 'pt', meta
names = {'transformer.wte.weight': [256, C], 'transformer.wpe.weight': [T, C],
         'transformer.ln_f.weight': [C], 'transformer.ln_f.bias': [C]}
for l in range(L):
    p = f'transformer.h.{l}.'
    names.update({p + 'ln_1.weight': [C], p + 'ln_1.bias': [C], p + 'attn.c_attn.weight': [C, 3 * C],
                  p + 'attn.c_attn.bias': [3 * C], p + 'attn.c_proj.weight': [C, C], p + 'attn.c_proj.bias': [C],
                  p + 'ln_2.weight': [C], p + 'ln_2.bias': [C], p + 'mlp.c_fc.weight': [C, 4 * C],
                  p + 'mlp.c_fc.bias': [4 * C], p + 'mlp.c_proj.weight': [4 * C, C], p + 'mlp.c_proj.bias': [C]})
assert set(h) == set(names), f'tensors: extra {set(h) - set(names)}, missing {set(names) - set(h)}'
for k, shape in names.items():
    assert h[k]['dtype'] == 'F32' and h[k]['shape'] == shape, f'{k}: {h[k]}'
    src = k[len('transformer.'):]
    if 'c_attn' in src:  # [q | k | v] along the output dimension
        parts = [cget('params.' + src.replace('c_attn', x)) for x in 'qkv']
        rows = C if src.endswith('weight') else 1
        w = 4 * C
        got = b''.join(b''.join(p[r * w:(r + 1) * w] for p in parts) for r in range(rows))
    else:
        got = cget('params.' + src)
    assert get(k) == got, f'{k}: values differ from the checkpoint'
print('folder ok')
EOF
check "folder contents: JSON, config values, GPT-2 tensors, values = checkpoint ($(tail -1 folder.out))" grep -q '^folder ok' folder.out
"$T" sample --ckpt A --temperature 0 --prompt "the cat " --tokens 40 > s_ckpt.out 2>&1
"$T" sample --ckpt hf --temperature 0 --prompt "the cat " --tokens 40 > s_hf.out 2>&1
check "the folder samples (greedy) as the checkpoint does" bash -c 'test -s s_hf.out && cmp -s s_ckpt.out s_hf.out'

# ---------- 2: export never clobbers ----------
md5() { cat hf/* | md5sum; }
before=$(md5)
"$T" export A hf > e.out 2> e.err
one_error "export into a non-empty folder: refused" $? e.err
check "  the folder is unchanged" test "$(md5)" = "$before"
check "  the message names --force" grep -q -- '--force' e.err
echo extra > hf/extra.txt
"$T" export A hf --force > e.out 2> e.err
check "export --force replaces the folder" test $? -eq 0 -a -s hf/config.json -a ! -e hf/extra.txt
"$T" export A A --force > e.out 2> e.err
one_error "export --force onto a run folder (a training checkpoint): refused" $? e.err
check "  the checkpoint is intact" "$T" eval --ckpt A --data text.txt --batches 1 --json > /dev/null
echo x > afile
"$T" export A afile > e.out 2> e.err
one_error "export onto a file: refused" $? e.err
mkdir empty
"$T" export --ckpt A/checkpoint.safetensors --out empty > e.out 2>&1
check "export into an empty folder (--ckpt / --out) works" test -s empty/model.safetensors

# ---------- 3: --init-from ----------
# save_pretrained-style folder: no "transformer." prefix, lm_head.weight = wte, attn.bias buffers, extra keys
python3 - hf sp <<'EOF'
import json, os, struct, sys
src, d = sys.argv[1], sys.argv[2]
os.makedirs(d)
b = open(f'{src}/model.safetensors', 'rb').read()
n = struct.unpack('<Q', b[:8])[0]
h = json.loads(b[8:8 + n]); h.pop('__metadata__')
data = b[8 + n:]
t = {k[len('transformer.'):]: data[v['data_offsets'][0]:v['data_offsets'][1]] for k, v in h.items()}
shapes = {k[len('transformer.'):]: v['shape'] for k, v in h.items()}
t['lm_head.weight'] = t['wte.weight']; shapes['lm_head.weight'] = shapes['wte.weight']
T = shapes['wpe.weight'][0]
L = json.load(open(f'{src}/config.json'))['n_layer']
for l in range(L):
    t[f'h.{l}.attn.bias'] = struct.pack('<f', 1.0) * (T * T); shapes[f'h.{l}.attn.bias'] = [1, 1, T, T]
hdr, off, out = {'__metadata__': {'format': 'pt'}}, 0, []
for k in sorted(t):
    hdr[k] = {'dtype': 'F32', 'shape': shapes[k], 'data_offsets': [off, off + len(t[k])]}
    off += len(t[k]); out.append(t[k])
hj = json.dumps(hdr).encode()
open(f'{d}/model.safetensors', 'wb').write(struct.pack('<Q', len(hj)) + hj + b''.join(out))
c = json.load(open(f'{src}/config.json'))
c.update({'transformers_version': '4.57.0', 'dtype': 'float32', 'summary_type': 'cls_index'})
json.dump(c, open(f'{d}/config.json', 'w'))
EOF
val() { sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p" "$2" | head -1; }
"$T" eval --ckpt A --data text.txt --batches 4 --json > ev.out 2>&1
ref=$(val val_loss ev.out)
for src in A/checkpoint.safetensors A hf sp; do
    tag=$(echo "$src" | tr '/.' '__')
    "$T" train --init-from "$src" --data text.txt --steps 2 --eval-batches 4 --batch 16 --out "I_$tag" --sample-tokens 0 --backend cpu \
        --threads 1 --json > "i_$tag.out" 2> "i_$tag.err"
    check "init-from $src: runs" test $? -eq 0
    got=$(val init_val_loss "i_$tag.out")
    check "init-from $src: step-0 val loss $got = eval of the source $ref" test -n "$got" -a "$got" = "$ref"
    h=$(val init_hash "i_$tag.out")
    [ "$src" = A/checkpoint.safetensors ] && hash0=$h
    check "init-from $src: weights hash $h is the source's" test -n "$h" -a "$h" = "$hash0"
done
check "init-from: the run starts at step 1 of its own schedule" grep -q '"start_step":0' i_hf.out
python3 - I_hf/checkpoint.safetensors "$hash0" > meta.out 2>&1 <<'EOF'
import json, struct, sys
b = open(sys.argv[1], 'rb').read()
m = json.loads(b[8:8 + struct.unpack('<Q', b[:8])[0]])['__metadata__']
assert m['init_from'].endswith('/hf') and m['init_from_hash'] == sys.argv[2].strip('"'), m
print('meta ok')
EOF
check "init-from: the checkpoint records the source path and hash" grep -q '^meta ok' meta.out
"$T" train --resume I_hf/checkpoint.safetensors --data text.txt --steps 3 --sample-tokens 0 --threads 1 --backend cpu --json > r.out 2>&1
check "a resumed init-from run keeps the record" grep -q '"init_from":".*/hf"' r.out

# ---------- 4: refused ----------
refused() { # refused NAME ARGS...: exit 1, one error line, no run folder left
    local name="$1"; shift
    "$T" train "$@" --data text.txt --steps 2 --out R --sample-tokens 0 --backend cpu > r.out 2> r.err
    one_error "$name" $? r.err
    check "  nothing written" test ! -e R
    echo "     $(cat r.err)"
}
refused "init-from a model of another shape (--d-model)" --init-from hf --d-model 64
check "  the message names the mismatch" grep -q "init-from: hf has d-model 48, the run asks for 64" r.err
refused "init-from with a preset of another shape" --init-from hf --preset small
mkdir nocfg && cp hf/model.safetensors nocfg/
refused "init-from a folder without config.json" --init-from nocfg
cp -r hf vocab && sed -i 's/"vocab_size": 256/"vocab_size": 300/' vocab/config.json
refused "init-from a folder of another vocab" --init-from vocab
cp -r hf act && sed -i 's/"activation_function": "gelu"/"activation_function": "relu"/' act/config.json
refused "init-from a folder with an activation tinytrain lacks" --init-from act
check "  the message names it" grep -q '"relu"' r.err
cp -r hf trunc && truncate -s -100 trunc/model.safetensors
refused "init-from a truncated model.safetensors" --init-from trunc
cp -r sp untied && python3 - untied/model.safetensors <<'EOF'
import json, struct, sys
b = bytearray(open(sys.argv[1], 'rb').read())
n = struct.unpack('<Q', b[:8])[0]
o = json.loads(b[8:8 + n])['lm_head.weight']['data_offsets'][0] + 8 + n
b[o:o + 4] = struct.pack('<f', 123.0)
open(sys.argv[1], 'wb').write(b)
EOF
refused "init-from an untied head" --init-from untied
check "  the message says so" grep -q "untied" r.err
cp -r hf nofc && python3 - nofc/model.safetensors <<'EOF'
import json, struct, sys
b = open(sys.argv[1], 'rb').read()
n = struct.unpack('<Q', b[:8])[0]
h = json.loads(b[8:8 + n]); data = b[8 + n:]
k = 'transformer.h.1.mlp.c_fc.bias'
o = h.pop(k)['data_offsets']
for v in h.values():
    if 'data_offsets' in v and v['data_offsets'][0] >= o[1]:
        v['data_offsets'] = [x - (o[1] - o[0]) for x in v['data_offsets']]
hj = json.dumps(h).encode()
open(sys.argv[1], 'wb').write(struct.pack('<Q', len(hj)) + hj + data[:o[0]] + data[o[1]:])
EOF
refused "init-from a folder missing a tensor" --init-from nofc
"$T" train --init-from hf --resume A/checkpoint.safetensors --data text.txt > r.out 2> r.err
check "--init-from with --resume: one usage line, exit 2" test $? -eq 2 -a "$(wc -l < r.err)" -eq 1
"$T" sample --ckpt vocab --tokens 5 > r.out 2> r.err
one_error "sample from a bad folder: one line" $? r.err

# ---------- 5: GPT-2's variants ----------
cp -r hf tanh && sed -i 's/"activation_function": "gelu"/"activation_function": "gelu_new"/; s/"layer_norm_epsilon": 1e-05/"layer_norm_epsilon": 0.001/' tanh/config.json
"$T" train --init-from tanh --data text.txt --steps 2 --out G --sample-tokens 0 --threads 1 --backend cpu > g.out 2>&1
check "init-from a folder with gelu_new and eps 1e-3 trains" test $? -eq 0 -a -f G/checkpoint.safetensors
python3 - G/checkpoint.safetensors > meta.out 2>&1 <<'EOF'
import json, struct, sys
b = open(sys.argv[1], 'rb').read()
c = json.loads(json.loads(b[8:8 + struct.unpack('<Q', b[:8])[0]])['__metadata__']['config'])
assert c['act'] == 'gelu_new' and abs(c['ln_eps'] - 1e-3) < 1e-9 and c['vocab'] == 256, c
print('meta ok')
EOF
check "  the checkpoint records act gelu_new and ln_eps 0.001" grep -q '^meta ok' meta.out
"$T" export G Ghf > /dev/null 2>&1
python3 - Ghf/config.json > cfg.out 2>&1 <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
assert c['activation_function'] == 'gelu_new' and c['layer_norm_epsilon'] == 0.001 and c['vocab_size'] == 256, c
print('config ok')
EOF
check "  the export writes activation_function gelu_new and layer_norm_epsilon 0.001" grep -q '^config ok' cfg.out
"$T" eval --ckpt G --data text.txt --json > e1.out 2>&1
"$T" eval --ckpt Ghf --data text.txt --json > e2.out 2>&1
check "  the export evaluates as the checkpoint does" test -n "$(grep -o '"val_loss":[^,}]*' e1.out)" -a "$(grep -o '"val_loss":[^,}]*' e1.out)" = "$(grep -o '"val_loss":[^,}]*' e2.out)"

echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
