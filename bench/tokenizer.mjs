// tokenizer.mjs — encoding throughput of Hugging Face's tokenizers.js
// (@huggingface/tokenizers, the tokenizer of transformers.js) on one thread,
// the counterpart of bench/bench_tokenizer.c: for each corpus file, REPS
// passes, each with a freshly constructed tokenizer (its word cache empty),
// timing encode alone, over the text in pieces of 512 k characters cut at
// line ends (one call on many megabytes runs out of memory). Prints one JSON
// line per file like bench_tokenizer.
//   node bench/tokenizer.mjs TOKENIZER_JSON FILE... [--reps N]
import { readFileSync } from "node:fs";
import { Tokenizer } from "@huggingface/tokenizers";

const args = process.argv.slice(2);
let reps = 5;
const files = [];
let tjPath = null;
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--reps") reps = Number(args[++i]);
  else if (!tjPath) tjPath = args[i];
  else files.push(args[i]);
}
const tj = JSON.parse(readFileSync(tjPath, "utf8"));
for (const f of files) {
  const text = readFileSync(f, "utf8");
  const bytes = Buffer.byteLength(text);
  const pieces = [];
  for (let i = 0; i < text.length;) {
    let j = Math.min(text.length, i + 512e3);
    if (j < text.length) {
      const nl = text.lastIndexOf("\n", j);
      if (nl > i) j = nl + 1;
    }
    pieces.push(text.slice(i, j));
    i = j;
  }
  const mbs = [];
  let tokens = 0;
  for (let r = 0; r < reps; r++) {
    const tok = new Tokenizer(tj, {});
    const t0 = performance.now();
    let n = 0;
    for (const p of pieces) n += tok.encode(p).ids.length;
    const dt = (performance.now() - t0) / 1e3;
    tokens = n;
    mbs.push(bytes / 1e6 / dt);
  }
  mbs.sort((a, b) => a - b);
  console.log(JSON.stringify({ file: f, bytes, tokens, mb_s_best: +mbs[reps - 1].toFixed(3), mb_s_median: +mbs[reps >> 1].toFixed(3) }));
}
