#!/usr/bin/env bash
# test_tokenize_cli.sh — `tinytrain tokenize` end to end: ids as a JSON array
# (byte and a small byte-level BPE folder, from --text, --file and standard
# input), --decode back to the exact bytes, the same ids from tokenizer.json
# and from vocab.json + merges.txt, and every bad input: exit code 1 (or 2
# for a bad command line) with exactly one stderr line "tinytrain: error: ...".
set -u
. "$(dirname "$0")/../support/cli_lib.sh" tokenize

usage_error() { # usage_error NAME RC FILE: exit code 2 and one error line
    if [ "$2" -eq 2 ] && [ "$(wc -l < "$3")" -eq 1 ] && grep -q '^tinytrain: error: ' "$3"; then ok "$1"
    else bad "$1 (rc $2, stderr: $(head -c 400 "$3"))"; fi
}

# a small byte-level BPE: the 256 bytes, a few merges, <|endoftext|>, written
# both ways (python3 is a build dependency: src/tok/gen_unicode.py)
python3 - <<'PY'
import json, os
def ch(b):
    pr = [x for x in range(256) if 0x21 <= x <= 0x7e or 0xa1 <= x <= 0xac or 0xae <= x <= 0xff]
    if b in pr: return chr(b)
    return chr(256 + [x for x in range(256) if x not in pr].index(b))
def bl(s): return "".join(ch(b) for b in s.encode())
vocab = {ch(b): b for b in range(256)}
merges = [("t", "h"), ("th", "e"), (" ", "the"), ("a", "n"), (" ", "an"), (" an", "d"), ("'", "s")]
for a, b in merges: vocab[bl(a + b)] = len(vocab)
vocab["<|endoftext|>"] = len(vocab)
os.makedirs("tj"); os.makedirs("vm")
tj = {"version": "1.0", "added_tokens": [{"id": vocab["<|endoftext|>"], "content": "<|endoftext|>", "special": True}],
      "normalizer": None, "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
      "post_processor": None, "decoder": {"type": "ByteLevel"},
      "model": {"type": "BPE", "vocab": vocab, "merges": [[bl(a), bl(b)] for a, b in merges]}}
json.dump(tj, open("tj/tokenizer.json", "w"), ensure_ascii=False)
json.dump(vocab, open("vm/vocab.json", "w"))
open("vm/merges.txt", "w").write("#version: 0.2\n" + "".join(f"{bl(a)} {bl(b)}\n" for a, b in merges))
PY

# ---------- encode ----------
out=$("$T" tokenize byte --text "hé!")
check "byte: ids are the UTF-8 bytes" test "$out" = "[104,195,169,33]"
out=$("$T" tokenize tj --text "the and the's<|endoftext|> x")
check "bpe: merges and the special token" test "$out" = "[257,261,258,262,263,32,120]"
out2=$("$T" tokenize vm --text "the and the's<|endoftext|> x")
check "vocab.json + merges.txt give the same ids" test "$out" = "$out2"
out3=$("$T" tokenize tj/tokenizer.json --text "the and the's<|endoftext|> x")
check "a tokenizer.json file gives the same ids" test "$out" = "$out3"
out=$("$T" tokenize tj --text "")
check "empty text: []" test "$out" = "[]"

# ---------- round trips: any bytes (invalid UTF-8, NUL, CR) ----------
printf 'the and\r\n\n  x\x00\xff\xfe the<|endoftext|>\t caf\xc3\xa9 ' > in.bin
for tk in byte tj vm; do
    "$T" tokenize $tk --file in.bin > ids.json
    "$T" tokenize $tk --decode --file ids.json > back.bin
    check "$tk: --file then --decode gives the bytes back" cmp -s in.bin back.bin
    "$T" tokenize $tk < in.bin | "$T" tokenize $tk --decode > back2.bin
    check "$tk: standard input both ways" cmp -s in.bin back2.bin
done
"$T" tokenize tj --help > help.out
check "--help exits 0 and says what it does" grep -q 'usage: tinytrain tokenize' help.out

# ---------- bad input: one line, non-zero ----------
"$T" tokenize > o 2> e; usage_error "no tokenizer" $? e
"$T" tokenize byte --bogus > o 2> e; usage_error "unknown option" $? e
"$T" tokenize byte --text > o 2> e; usage_error "--text without a value" $? e
"$T" tokenize byte --text a --file b > o 2> e; usage_error "--text and --file" $? e
"$T" tokenize byte extra --text a > o 2> e; usage_error "a second TOKENIZER" $? e
"$T" tokenize nowhere --text a > o 2> e; one_error "a tokenizer that does not exist" $? e
mkdir empty
"$T" tokenize empty --text a > o 2> e; one_error "a folder without tokenizer files" $? e
echo '{"model":{"type":"Unigram"}}' > bad.json
"$T" tokenize bad.json --text a > o 2> e; one_error "a tokenizer.json of another model" $? e
check "  ... naming it" grep -q 'model Unigram is not supported' e
head -c 3000 tj/tokenizer.json > cut.json
"$T" tokenize cut.json --text a > o 2> e; one_error "a truncated tokenizer.json" $? e
"$T" tokenize byte --file missing.txt > o 2> e; one_error "--file that does not exist" $? e
"$T" tokenize byte --file . > o 2> e; one_error "--file a folder" $? e
"$T" tokenize byte --decode --text '[1, 2' > o 2> e; one_error "--decode: broken JSON" $? e
"$T" tokenize byte --decode --text '{"a":1}' > o 2> e; one_error "--decode: not an array" $? e
"$T" tokenize byte --decode --text '[1, "x"]' > o 2> e; one_error "--decode: not an id" $? e
"$T" tokenize byte --decode --text '[1.5]' > o 2> e; one_error "--decode: a fraction" $? e
"$T" tokenize byte --decode --text '[256]' > o 2> e; one_error "--decode: an id out of range" $? e
check "  ... naming it" grep -q 'token id 256 at position 0' e
"$T" tokenize tj --decode --text '[-1]' > o 2> e; one_error "--decode: a negative id" $? e

echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
