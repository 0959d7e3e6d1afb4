#!/usr/bin/env bash
# test_wasm.sh — the WebAssembly build of the CLI (SIMD128 + pthreads, run by
# Node) against the native CLI: same preset (tiny), seed, data and thread
# count for 20 steps; every step's loss must agree within 1e-4 relative (the
# two builds sum in different orders: AVX/NEON lanes against SIMD128, so the
# rounding differs and the gap grows with the steps). Then
# each build evaluates the checkpoint the other one wrote (the file format is
# shared): both validation losses must agree too. The 20 steps run twice:
# with dropout 0.1 (the same masks on both builds) and without.
# Needs build-wasm/ (scripts/build-wasm.sh; TT_WASM_DIR overrides). Without
# it the test is skipped with a reason, unless TT_REQUIRE_WASM is set (CI).
set -euo pipefail
src=${TT_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
native=${TINYTRAIN:-$src/build/tinytrain}
wdir=${TT_WASM_DIR:-$src/build-wasm}
wasm=$wdir/tinytrain.js

if [ ! -f "$wasm" ] || ! command -v node >/dev/null 2>&1; then
  why="WASM CLI not built ($wasm; run scripts/build-wasm.sh) or node missing"
  if [ -n "${TT_REQUIRE_WASM:-}" ]; then echo "FAIL: $why"; exit 1; fi
  echo "SKIP: $why"
  exit 0
fi
[ -x "$native" ] || { echo "FAIL: native CLI not found: $native"; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# data: the project's own headers (plain text, ~40 KB; both builds read the same file)
head -c 300000 "$src/data/tinyshakespeare.txt" > "$tmp/corpus.txt"  # fixed text: the bound does not move with the sources

for drop in 0.1 0; do
common=(train --preset tiny --steps 20 --seed 4242 --threads 2 --eval-every 10 --eval-batches 4
        --sample-tokens 0 --json --data "$tmp/corpus.txt" --dropout "$drop")
rm -rf "$tmp/native" "$tmp/wasm"
"$native" "${common[@]}" --out "$tmp/native" > "$tmp/native.jsonl"
node --no-experimental-fetch "$wasm" "${common[@]}" --out "$tmp/wasm" > "$tmp/wasm.jsonl"

echo "dropout $drop:"
node - "$tmp/native.jsonl" "$tmp/wasm.jsonl" <<'EOF'
const fs = require('fs');
const read = (f) => fs.readFileSync(f, 'utf8').split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
const [a, b] = [read(process.argv[2]), read(process.argv[3])];
const steps = (r) => r.filter((e) => e.event === 'step').map((e) => e.loss);
const evals = (r) => r.filter((e) => e.event === 'eval').map((e) => e.val_loss);
const la = steps(a), lb = steps(b);
let fail = 0;
if (la.length !== 20 || lb.length !== 20) { console.log(`FAIL: expected 20 steps, got native ${la.length}, wasm ${lb.length}`); process.exit(1); }
let worst = 0;
for (let i = 0; i < 20; i++) {
  if (!Number.isFinite(la[i]) || !Number.isFinite(lb[i])) { console.log(`FAIL: step ${i + 1}: non-finite loss`); fail = 1; continue; }
  const rel = Math.abs(la[i] - lb[i]) / Math.abs(la[i]);
  worst = Math.max(worst, rel);
  if (rel > 1e-4) { console.log(`FAIL: step ${i + 1}: native ${la[i]} wasm ${lb[i]} (rel ${rel.toExponential(2)})`); fail = 1; }
}
const va = evals(a), vb = evals(b);
if (va.length !== vb.length || va.length < 2) { console.log(`FAIL: validation passes: native ${va.length}, wasm ${vb.length}`); fail = 1; }
for (let i = 0; i < Math.min(va.length, vb.length); i++) {
  const rel = Math.abs(va[i] - vb[i]) / Math.abs(va[i]);
  worst = Math.max(worst, rel);
  if (!(rel <= 1e-4)) { console.log(`FAIL: val ${i}: native ${va[i]} wasm ${vb[i]}`); fail = 1; }
}
if (!(la[19] < la[0])) { console.log(`FAIL: loss did not fall (${la[0]} -> ${la[19]})`); fail = 1; }
console.log(`native vs wasm: 20 steps, loss ${la[0].toFixed(4)} -> ${la[19].toFixed(4)}, max relative difference ${worst.toExponential(2)}`);
process.exit(fail);
EOF
done

# cross-load: each build evaluates the other's checkpoint
"$native" eval --ckpt "$tmp/wasm/checkpoint.safetensors" --data "$tmp/corpus.txt" --threads 2 --json > "$tmp/eval_native.json"
node --no-experimental-fetch "$wasm" eval --ckpt "$tmp/native/checkpoint.safetensors" --data "$tmp/corpus.txt" --threads 2 --json > "$tmp/eval_wasm.json"
node - "$tmp/eval_native.json" "$tmp/eval_wasm.json" <<'EOF'
const fs = require('fs');
const get = (f) => {
  const l = fs.readFileSync(f, 'utf8').split('\n').find((x) => x.startsWith('{'));
  if (!l) { console.log(`FAIL: no JSON from eval (${f})`); process.exit(1); }
  const o = JSON.parse(l);
  const v = o.val_loss ?? o.loss;
  if (!Number.isFinite(v)) { console.log(`FAIL: eval gave no loss: ${l}`); process.exit(1); }
  return v;
};
const a = get(process.argv[2]), b = get(process.argv[3]);
const rel = Math.abs(a - b) / Math.abs(a);
console.log(`cross-loaded checkpoints: native eval of wasm ckpt ${a}, wasm eval of native ckpt ${b} (rel ${rel.toExponential(2)})`);
process.exit(rel <= 1e-5 ? 0 : 1);
EOF
echo "PASS: wasm CLI matches native"
