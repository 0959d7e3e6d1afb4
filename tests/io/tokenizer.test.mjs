// tokenizer.test.mjs — the byte-level tokenizer of an exported folder
// (src/train/hf.c), read by @huggingface/tokenizers (the tokenizers.js that
// transformers.js uses): every id is the byte of the same value, encode gives
// a text's UTF-8 bytes as ids, decode gives the text back, and for byte
// strings that are not UTF-8 (which no text API can take as input) the ids'
// tokens give back every byte exactly while decode replaces what is invalid
// with U+FFFD, as a UTF-8 decoder does.
// Run by tests/io/test_tokenizer.sh with TT_HF_DIR = the exported folder.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Tokenizer } from "@huggingface/tokenizers";

const dir = process.env.TT_HF_DIR;
const tokenizer = new Tokenizer(
  JSON.parse(readFileSync(`${dir}/tokenizer.json`, "utf8")),
  JSON.parse(readFileSync(`${dir}/tokenizer_config.json`, "utf8")),
);

// GPT-2's byte-to-unicode table, written out from its definition
const printable = (b) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
const byteChar = [];
for (let b = 0, n = 0; b < 256; b++) byteChar[b] = String.fromCodePoint(printable(b) ? b : 256 + n++);
const charByte = new Map(byteChar.map((c, b) => [c, b]));

// a deterministic generator (xorshift32) so a failure can be replayed
let seed = 0x9e3779b9;
const rand = (n) => {
  seed ^= seed << 13; seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5; seed >>>= 0;
  return seed % n;
};
const utf8 = new TextEncoder();
const lossy = new TextDecoder("utf-8");
const idsToBytes = (ids) => Uint8Array.from(ids.map((id) => charByte.get(tokenizer.id_to_token(id))));

test("vocabulary: 256 tokens, id i is byte i in GPT-2's byte-to-unicode alphabet", () => {
  const vocab = tokenizer.get_vocab();
  assert.equal(vocab.size, 256);
  for (let b = 0; b < 256; b++) {
    assert.equal(tokenizer.id_to_token(b), byteChar[b], `id ${b}`);
    assert.equal(tokenizer.token_to_id(byteChar[b]), b, `token of byte ${b}`);
  }
});

test("every single byte: encode -> [byte] -> decode (bytes >= 0x80 alone are not UTF-8: U+FFFD)", () => {
  for (let b = 0; b < 256; b++) {
    const bytes = Uint8Array.of(b);
    assert.deepEqual(idsToBytes([b]), bytes);
    assert.equal(tokenizer.decode([b]), lossy.decode(bytes), `decode of byte ${b}`);
    if (b < 0x80) {
      const text = String.fromCharCode(b);
      assert.deepEqual(tokenizer.encode(text).ids, [b], `encode of byte ${b}`);
      assert.equal(tokenizer.decode([b]), text);
    }
  }
});

test("random texts (ASCII, controls, NUL, spaces, 2-4 byte characters): ids are the UTF-8 bytes, decode is the text", () => {
  const pools = [[0x00, 0x1f], [0x20, 0x7e], [0x7f, 0x7ff], [0x800, 0xd7ff], [0xe000, 0xffff], [0x10000, 0x10ffff]];
  for (let k = 0; k < 300; k++) {
    let text = "";
    const n = rand(200);
    for (let i = 0; i < n; i++) {
      const [lo, hi] = pools[rand(pools.length)];
      text += String.fromCodePoint(lo + rand(hi - lo + 1));
    }
    if (k % 7 === 0) text = "  leading and trailing spaces, tabs\t and\nnew lines  ";
    const ids = tokenizer.encode(text).ids;
    assert.deepEqual(ids, Array.from(utf8.encode(text)), `encode of text ${k}`);
    assert.equal(tokenizer.decode(ids), text, `decode of text ${k}`);
  }
});

test("random byte strings, invalid UTF-8 included: the ids' tokens give every byte back; decode is the lossy UTF-8 text", () => {
  let invalid = 0;
  for (let k = 0; k < 300; k++) {
    const bytes = Uint8Array.from({ length: rand(300) }, () => rand(256));
    const ids = Array.from(bytes);
    assert.deepEqual(idsToBytes(ids), bytes, `bytes of string ${k}`);
    const text = tokenizer.decode(ids);
    assert.equal(text, lossy.decode(bytes), `decode of string ${k}`);
    if (text.includes("\ufffd")) invalid++;
    // what decode gives is text: encoding it gives its UTF-8 bytes again
    assert.deepEqual(tokenizer.encode(text).ids, Array.from(utf8.encode(text)));
  }
  assert.ok(invalid > 200, `only ${invalid} of 300 random byte strings were invalid UTF-8`);
});
