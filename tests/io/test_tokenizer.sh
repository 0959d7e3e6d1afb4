#!/usr/bin/env bash
# test_tokenizer.sh — the exported folder's byte-level tokenizer read by an
# independent implementation (@huggingface/tokenizers from npm, run by node):
# tests/io/tokenizer.test.mjs. Exports a tiny model trained for two steps.
# Skipped, with the reason, when node or the npm package is missing, unless
# TT_REQUIRE_BROWSER is set (as tests/web/test_web.sh; CI sets it).
set -uo pipefail
src=${TT_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
missing=""
! command -v node >/dev/null 2>&1 && missing="node not installed"
[ -z "$missing" ] && [ ! -d "$src/node_modules/@huggingface/tokenizers" ] && missing="npm packages missing (npm ci)"
if [ -n "$missing" ]; then
  if [ -n "${TT_REQUIRE_BROWSER:-}" ]; then echo "FAIL: $missing"; exit 1; fi
  echo "SKIP: $missing"
  exit 0
fi
. "$(dirname "$0")/../support/cli_lib.sh" tokenizer
make_text text.txt
"$T" train --preset tiny --data text.txt --steps 2 --out run --sample-tokens 0 --threads 1 --backend cpu > train.out 2>&1 || { cat train.out; exit 1; }
"$T" export run hf > export.out 2>&1 || { cat export.out; exit 1; }
# node resolves the package from the test file's folder upwards: run the copy in the source tree
TT_HF_DIR="$WORK/hf" node --test "$src/tests/io/tokenizer.test.mjs"
