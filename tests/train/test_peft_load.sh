#!/usr/bin/env bash
# test_peft_load.sh — a peft LoRA folder read back onto its base (io/peft.h
# tt_load_peft, the CLI's --adapter DIR): a tiny base trained on corpus A,
# two LoRA runs on corpus B (rank 4, alpha 6, c_attn + mlp.c_proj; rank 2,
# every projection), each exported with `export --adapter`; then base +
# adapter gives the LoRA run's eval, sample text, inspect output and merged
# export exactly, `train --init-from BASE --adapter DIR` starts at the run's
# validation loss with the adapter's LoRA config, an F16 copy of the adapter
# (peft's "all-linear" and the GPT2Model name prefix) loads within f16
# rounding, and every kind of bad folder, wrong base or disagreeing option is
# one clear line, a non-zero exit and nothing written.
. "$(dirname "$0")/../support/cli_lib.sh" peftload

make_text A.txt
make_c_text B.txt 400 7
COMMON=(--preset tiny --threads 2 --sample-tokens 0 --save-every 0)
jget() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

"$T" train "${COMMON[@]}" --steps 40 --data A.txt --out base > base.log 2>&1 || { bad "base run"; cat base.log; exit 1; }
"$T" train "${COMMON[@]}" --init-from base --lora-rank 4 --lora-alpha 6 --lora-targets c_attn,mlp.c_proj --steps 20 \
    --lr 5e-3 --data B.txt --out ft > ft.log 2>&1 || { bad "LoRA run (c_attn, mlp.c_proj)"; cat ft.log; exit 1; }
"$T" train "${COMMON[@]}" --init-from base --lora-rank 2 --steps 20 --lr 5e-3 --data B.txt --out fa > fa.log 2>&1 ||
    { bad "LoRA run (all)"; cat fa.log; exit 1; }
"$T" export ft ad --adapter > /dev/null 2>&1 && "$T" export fa ada --adapter > /dev/null 2>&1 || { bad "export --adapter"; exit 1; }
ok "base, two LoRA runs, their peft folders"

# eval: base + adapter = the LoRA run (same batches), and not the base alone
for p in "ft ad" "fa ada"; do
    set -- $p
    "$T" eval --ckpt "$1" --data B.txt --batches 3 --json > "e_$1.json" 2>&1 || bad "eval $1"
    "$T" eval --ckpt base --adapter "$2" --data B.txt --batches 3 --json > "e_$2.json" 2>&1 || bad "eval base --adapter $2"
    python3 - "e_$1.json" "e_$2.json" <<'PY' && ok "eval base --adapter $2 = eval $1" || bad "eval base --adapter $2 = eval $1"
import json, sys
a, b = (json.load(open(f))['val_loss'] for f in sys.argv[1:3])
print('val loss: run %.9g, base + adapter %.9g' % (a, b))
assert abs(a - b) <= 1e-5 * abs(a), (a, b)
PY
done
"$T" eval --ckpt base --data B.txt --batches 3 --json > e_base.json 2>&1 || bad "eval base"
test "$(jget e_base.json 'd["val_loss"]')" != "$(jget e_ad.json 'd["val_loss"]')" && ok "the adapter changes the base's eval" ||
    bad "the adapter changes the base's eval"
test "$(jget e_ad.json 'd["adapter"]')" = "ad" && ok "eval --json names the adapter" || bad "eval --json names the adapter"

# sample: the same text for the same seed
"$T" sample --ckpt ft --tokens 80 --seed 7 > s_ft.txt 2>&1 && "$T" sample --ckpt base --adapter ad --tokens 80 --seed 7 > s_ad.txt 2>&1 &&
    cmp -s s_ft.txt s_ad.txt && [ -s s_ft.txt ] && ok "sample with the adapter = sample of the run" || bad "sample with the adapter = sample of the run"
"$T" sample --ckpt base --tokens 80 --seed 7 > s_base.txt 2>&1
cmp -s s_base.txt s_ad.txt && bad "the adapter changes the sample" || ok "the adapter changes the sample"

# inspect: the same JSON
"$T" inspect ft --prompt "static int f" --json > i_ft.json 2>&1 && "$T" inspect base --adapter ad --prompt "static int f" --json > i_ad.json 2>&1 &&
    cmp -s i_ft.json i_ad.json && ok "inspect with the adapter = inspect of the run" || bad "inspect with the adapter = inspect of the run"

# export --merge-adapter: the Hugging Face folder of the run, byte for byte
"$T" export base m_ad --merge-adapter ad > /dev/null 2>&1 && "$T" export ft m_ft > /dev/null 2>&1 &&
    cmp -s m_ad/model.safetensors m_ft/model.safetensors && ok "export --merge-adapter = export of the run" ||
    bad "export --merge-adapter = export of the run"

# train --init-from BASE --adapter DIR: the run's LoRA, starting where the LoRA run ended
"$T" train "${COMMON[@]}" --init-from base --adapter ad --steps 2 --eval-batches 3 --data B.txt --out tr --json > tr.json 2> tr.err ||
    { bad "train --init-from base --adapter ad"; cat tr.err; }
python3 - tr.json e_ad.json tr/checkpoint.safetensors <<'PY' && ok "train --adapter starts at the run's eval, with its LoRA config" || bad "train --adapter starts at the run's eval, with its LoRA config"
import json, struct, sys
start = json.loads(open(sys.argv[1]).readline())
want = json.load(open(sys.argv[2]))['val_loss']
print('init val loss %.9g, run %.9g; init_from %s' % (start['init_val_loss'], want, start['init_from']))
assert abs(start['init_val_loss'] - want) <= 1e-5 * want, (start, want)
assert ' + adapter ' in start['init_from'] and start['init_from'].endswith('/ad'), start
b = open(sys.argv[3], 'rb').read()
h = json.loads(b[8:8 + struct.unpack('<Q', b[:8])[0]])
cfg = json.loads(h['__metadata__']['config'])
assert cfg['lora-rank'] == 4 and float(cfg['lora-alpha']) == 6 and cfg['lora-targets'] == 'c_attn,mlp.c_proj', cfg
assert h['__metadata__']['init_from'].endswith('/ad') and ' + adapter ' in h['__metadata__']['init_from'], h['__metadata__']['init_from']
PY
"$T" train "${COMMON[@]}" --init-from base --adapter ad --lora-rank 4 --lora-alpha 6 --lora-targets c_attn,mlp.c_proj --steps 1 \
    --data B.txt --out tr2 > tr2.log 2>&1 && ok "train --adapter with the same LoRA options" || bad "train --adapter with the same LoRA options"

# an F16 copy of the all-targets adapter, named for a GPT2Model base, target_modules "all-linear": within f16 rounding
python3 - ada ada16 <<'PY'
import json, os, struct, sys
src, dst = sys.argv[1:3]
os.makedirs(dst)
c = json.load(open(src + '/adapter_config.json'))
c['target_modules'] = 'all-linear'
json.dump(c, open(dst + '/adapter_config.json', 'w'))
b = open(src + '/adapter_model.safetensors', 'rb').read()
n = struct.unpack('<Q', b[:8])[0]
h = json.loads(b[8:8 + n])
data = b[8 + n:]
out, hdr, off = b'', {}, 0
for k, v in h.items():
    if k == '__metadata__':
        hdr[k] = v
        continue
    x = struct.unpack('<%df' % ((v['data_offsets'][1] - v['data_offsets'][0]) // 4), data[v['data_offsets'][0]:v['data_offsets'][1]])
    raw = struct.pack('<%de' % len(x), *x)
    hdr[k.replace('base_model.model.transformer.', 'base_model.model.')] = {'dtype': 'F16', 'shape': v['shape'], 'data_offsets': [off, off + len(raw)]}
    out += raw
    off += len(raw)
j = json.dumps(hdr).encode()
j += b' ' * (-len(j) % 8)
open(dst + '/adapter_model.safetensors', 'wb').write(struct.pack('<Q', len(j)) + j + out)
PY
"$T" eval --ckpt base --adapter ada16 --data B.txt --batches 3 --json > e_ada16.json 2> e_ada16.err || { bad "eval with the F16 adapter"; cat e_ada16.err; }
python3 - e_ada.json e_ada16.json e_base.json <<'PY' && ok "F16 adapter (all-linear, GPT2Model names) within f16 rounding" || bad "F16 adapter (all-linear, GPT2Model names) within f16 rounding"
import json, sys
a, b, c = (json.load(open(f))['val_loss'] for f in sys.argv[1:4])
print('val loss: F32 adapter %.7f, F16 %.7f, base %.7f' % (a, b, c))
assert abs(a - b) < 1e-3 and abs(a - b) < abs(a - c) / 10, (a, b, c)
PY

# ---- refusals: one line, exit 1 (usage: 2), nothing written ----
mutate() { # mutate SRC DST PYTHON: a copy of folder SRC at DST, then PYTHON run with c = its config (written back), d = DST
    cp -r "$1" "$2"
    python3 - "$2" "$3" <<'PY'
import json, os, struct, sys
d = sys.argv[1]
c = json.load(open(d + '/adapter_config.json'))
def drop_tensor(name):
    p = d + '/adapter_model.safetensors'
    b = open(p, 'rb').read()
    n = struct.unpack('<Q', b[:8])[0]
    h = json.loads(b[8:8 + n]); data = b[8 + n:]
    out, hdr, off = b'', {}, 0
    for k, v in h.items():
        if k == '__metadata__' or k == name:
            if k != name: hdr[k] = v
            continue
        raw = data[v['data_offsets'][0]:v['data_offsets'][1]]
        hdr[k] = dict(v, data_offsets=[off, off + len(raw)]); out += raw; off += len(raw)
    j = json.dumps(hdr).encode(); j += b' ' * (-len(j) % 8)
    open(p, 'wb').write(struct.pack('<Q', len(j)) + j + out)
exec(sys.argv[2])
json.dump(c, open(d + '/adapter_config.json', 'w'))
PY
}
refuse() { # refuse NAME ADAPTER PATTERN: eval base --adapter ADAPTER is one error line matching PATTERN
    "$T" eval --ckpt base --adapter "$2" --data B.txt --batches 1 > r.out 2> r.err
    local rc=$?
    if [ $rc -eq 1 ] && [ "$(wc -l < r.err)" -eq 1 ] && grep -q "^tinytrain: error: .*$3" r.err && [ ! -s r.out ]; then
        ok "refused: $1"
    else
        bad "refused: $1 (rc $rc: $(head -c 400 r.err))"
    fi
}
mkdir notjson empty
echo '{"peft_type": "LORA",' > notjson/adapter_config.json
sum_ad="$(cat ad/* | cksum)"
refuse "no such folder" nowhere "nowhere"
refuse "a file, not a folder" A.txt "not a folder"
refuse "a folder without adapter_config.json" empty "no adapter_config.json"
refuse "bad JSON" notjson "not valid JSON"
mutate ad pt 'c["peft_type"] = "PREFIX_TUNING"'; refuse "peft_type not LORA" pt "peft_type"
mutate ad ff 'c["fan_in_fan_out"] = False'  # as a peft config for GPT-2 may be saved: peft turns it on for Conv1D
"$T" eval --ckpt base --adapter ff --data B.txt --batches 3 --json > e_ff.json 2> e_ff.err &&
    python3 -c 'import json,sys; a,b=(json.load(open(f))["val_loss"] for f in sys.argv[1:]); assert a == b, (a, b)' e_ff.json e_ad.json &&
    ok "fan_in_fan_out false: the same adapter" || bad "fan_in_fan_out false: the same adapter ($(head -c 300 e_ff.err))"
mutate ad rs 'c["use_rslora"] = True'; refuse "use_rslora" rs "use_rslora"
mutate ad bi 'c["bias"] = "all"'; refuse "bias all" bi "bias"
mutate ad lt 'c["layers_to_transform"] = [0]'; refuse "layers_to_transform" lt "layers_to_transform"
mutate ad tm 'c["target_modules"] = ["q_proj", "v_proj"]'; refuse "a target module GPT-2 lacks" tm '"q_proj"'
mutate ad re 'c["target_modules"] = ".*c_attn"'; refuse "a regex target_modules" re "target_modules"
mutate ad nr 'c["r"] = "four"'; refuse "r not a number" nr "r is not"
mutate ad nt 'os.remove(d + "/adapter_model.safetensors")'; refuse "no adapter_model.safetensors" nt "no adapter_model.safetensors"
mutate ad mt 'drop_tensor("base_model.model.transformer.h.1.mlp.c_proj.lora_B.weight")'
refuse "a targeted tensor missing" mt "h.1.mlp.c_proj.lora_B.weight"
mutate ad rk 'c["r"] = 2'; refuse "r disagrees with the tensors" rk "lora_A.weight is (4, 48), this base model needs (2, 48)"
mutate ad tg 'c["target_modules"] = ["c_attn"]'; refuse "a tensor of an untargeted module" tg "mlp.c_proj.lora_A.weight is not an adapter"
mutate ad js 'open(d + "/adapter_model.safetensors", "wb").write(b"\x08\x00\x00\x00")'; refuse "a broken safetensors" js "adapter_model.safetensors"
# the wrong base: another width, fewer layers
"$T" train "${COMMON[@]}" --d-model 32 --heads 2 --steps 2 --data A.txt --out narrow > /dev/null 2>&1 &&
    "$T" train "${COMMON[@]}" --layers 1 --steps 2 --data A.txt --out short > /dev/null 2>&1 || bad "the other bases"
"$T" eval --ckpt narrow --adapter ad --data B.txt --batches 1 > r.out 2> r.err
one_error "adapter on a narrower base" $? r.err
grep -q "h.0.attn.c_attn.lora_A.weight is (4, 48), this base model needs (4, 32)" r.err && ok "the mismatch names the tensor" ||
    bad "the mismatch names the tensor ($(cat r.err))"
"$T" eval --ckpt short --adapter ad --data B.txt --batches 1 > r.out 2> r.err
one_error "adapter on a base with fewer layers" $? r.err
grep -q "is for layer 1, this base model has 1 layers" r.err && ok "the extra layer is named" || bad "the extra layer is named ($(cat r.err))"
# sample, inspect, export say the same line
"$T" sample --ckpt base --adapter pt --tokens 5 > r.out 2> r.err; one_error "sample with a bad adapter" $? r.err
"$T" inspect base --adapter pt --prompt ab > r.out 2> r.err; one_error "inspect with a bad adapter" $? r.err
"$T" export base bad_out --merge-adapter pt > r.out 2> r.err; one_error "export --merge-adapter with a bad adapter" $? r.err
[ ! -e bad_out ] && ok "the refused export wrote nothing" || bad "the refused export wrote nothing"
# train: a bad adapter writes nothing; a LoRA option that disagrees, or --adapter without --init-from, is a usage error
"$T" train "${COMMON[@]}" --init-from narrow --adapter ad --steps 2 --data B.txt --out tr_bad > r.out 2> r.err
one_error "train --adapter on the wrong base" $? r.err
[ ! -e tr_bad ] && ok "the refused run wrote nothing" || bad "the refused run wrote nothing"
usage_error() { # usage_error NAME RC FILE PATTERN
    if [ "$2" -eq 2 ] && [ "$(wc -l < "$3")" -eq 1 ] && grep -q "^tinytrain: error: .*$4" "$3"; then ok "$1"; else bad "$1 (rc $2: $(head -c 400 "$3"))"; fi
}
for opt in "--lora-rank 8:lora-rank 8 disagrees with the adapter.*r 4" "--lora-alpha 8:lora-alpha 8 disagrees.*lora_alpha 6" \
    "--lora-targets all:lora-targets .* disagrees.*targets c_attn,mlp.c_proj"; do
    "$T" train "${COMMON[@]}" --init-from base --adapter ad ${opt%%:*} --steps 2 --data B.txt --out tr_opt > r.out 2> r.err
    usage_error "train --adapter ${opt%%:*} refused" $? r.err "${opt#*:}"
done
[ ! -e tr_opt ] && ok "the refused runs wrote nothing" || bad "the refused runs wrote nothing"
"$T" train "${COMMON[@]}" --adapter ad --steps 2 --data B.txt --out tr_no > r.out 2> r.err
usage_error "train --adapter without --init-from refused" $? r.err "--adapter goes with --init-from"
[ "$(cat ad/* | cksum)" = "$sum_ad" ] && ok "the adapter folder is untouched" || bad "the adapter folder is untouched"

echo "peft_load: $PASS ok, $FAIL failed"
[ "$FAIL" -eq 0 ]
