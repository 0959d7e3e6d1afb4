// browser_engine.mjs — runs the web app's engine (web/worker.js with the
// WebAssembly module of web/dist and src/webgpu/device_web.js) headless under
// Node, so a machine without a browser can check and time exactly what the
// page runs. The Worker is a worker_threads thread given what a browser
// Worker has and this script can supply: `self`, postMessage/onmessage,
// navigator.gpu from Dawn's Node binding (npm `webgpu`, dawn.node), and
// fetch of file: URLs. Storage (OPFS, Web Locks) is absent: the bench
// message needs none.
//
// Usage (Node >= 24 with JSPI: --experimental-wasm-jspi):
//   node --experimental-wasm-jspi bench/browser_engine.mjs [--variant gpu|single]
//        [--dawn PATH/dawn.node] [--toggles a,b] [--steps N] [--opts "batch=8 ctx=128"]
//        [--data FILE] [--json] PRESET...
//   ... --model DIR --opts "batch=4 ctx=256 lora-rank=8"   a fine-tune step of a Hugging Face
//        GPT-2 folder (config.json, model.safetensors, vocab.json + merges.txt or tokenizer.json)
// Prints one line per preset: ms per step (median), tokens/s, the first
// losses; --json prints the worker's benchRow messages instead. Exits 1 with
// one line when the engine or the adapter cannot be had.
import { Worker } from 'node:worker_threads';
import { readFileSync, existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { dirname, join, resolve } from 'node:path';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '..');

function fail(msg) { console.error('browser_engine: ' + msg); process.exit(1); }

const args = process.argv.slice(2);
const o = { variant: 'gpu', dawn: '', toggles: '', steps: 20, opts: '', data: '', model: '', json: false, presets: [] };
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  const val = () => { if (i + 1 >= args.length) fail(`${a} needs a value`); return args[++i]; };
  if (a === '--variant') o.variant = val();
  else if (a === '--dawn') o.dawn = val();
  else if (a === '--toggles') o.toggles = val();
  else if (a === '--steps') o.steps = Number(val());
  else if (a === '--opts') o.opts = val();
  else if (a === '--data') o.data = val();
  else if (a === '--model') o.model = val();
  else if (a === '--json') o.json = true;
  else if (a === '-h' || a === '--help') { console.log(readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n').slice(0, 18).join('\n')); process.exit(0); }
  else if (a.startsWith('-')) fail(`unknown option ${a}`);
  else o.presets.push(a);
}
if (!['gpu', 'single'].includes(o.variant)) fail(`--variant must be gpu or single (the threads module needs browser Workers), not ${o.variant}`);
if (!Number.isInteger(o.steps) || o.steps < 1) fail('--steps must be a positive integer');
if (!o.presets.length && !o.model) fail('name at least one preset, or --model DIR');
if (o.presets.length && o.model) fail('give presets or --model, not both');
let model = null;
if (o.model) {
  const files = {};
  for (const f of ['config.json', 'model.safetensors', 'vocab.json', 'merges.txt', 'tokenizer.json']) {
    const p = join(o.model, f);
    if (existsSync(p)) files[f] = new Uint8Array(readFileSync(p));
  }
  if (!files['config.json'] || !files['model.safetensors']) fail(`${o.model}: not a Hugging Face GPT-2 folder (config.json and model.safetensors needed)`);
  model = { files, name: o.model.replace(/\/+$/, '').split('/').pop() };
}
if (o.variant === 'gpu') {
  if (typeof WebAssembly.Suspending !== 'function') fail('this Node has no JSPI: use Node >= 24 with --experimental-wasm-jspi');
  if (!o.dawn) o.dawn = join(root, 'node_modules/webgpu/dist/linux-x64/dawn.node');
  o.dawn = resolve(o.dawn);
  if (!existsSync(o.dawn)) fail(`no Dawn Node binding at ${o.dawn} (npm package webgpu, or --dawn PATH)`);
}
const dist = { gpu: 'tinytrain_web_gpu', single: 'tinytrain_web_st' }[o.variant];
if (!existsSync(join(root, 'web/dist', dist + '.wasm'))) fail(`web/dist/${dist}.wasm is missing (bash scripts/build-wasm.sh)`);
let corpus;
try { corpus = new Uint8Array(readFileSync(o.data || join(root, 'data/tinyshakespeare.txt'))); } catch (e) { fail(`cannot read the text: ${e.message}`); }

const worker = new Worker(new URL('./browser_engine_boot.mjs', import.meta.url), {
  workerData: { dawn: o.variant === 'gpu' ? o.dawn : '', toggles: o.toggles ? o.toggles.split(',') : [] },
});
const send = (m) => worker.postMessage(m);
worker.on('error', (e) => fail('the engine thread failed: ' + (e && e.stack || e)));
worker.on('message', (m) => {
  if (m.type === 'ready') {
    if (o.variant === 'gpu' && !m.gpu) fail('no WebGPU device: ' + (m.gpuError || 'unknown'));
    if (!o.json) console.log(`# engine ${o.variant}: ${m.isa}${m.gpu ? ` · ${m.gpu.name} (f16 ${m.gpu.f16}, subgroups ${m.gpu.subgroups})` : ''}`);
    send({ type: 'bench', presets: o.presets, model, steps: o.steps, opts: o.opts, corpus });
  } else if (m.type === 'benchRow') {
    if (o.json) console.log(JSON.stringify(m));
    else console.log(`${m.preset}\t${m.ms.toFixed(2)} ms/step\t${Math.round(m.tokensPerStep / m.ms * 1000)} tok/s\tloss ${m.losses.slice(0, 3).map((x) => x.toFixed(6)).join(' ')} … ${m.losses[m.losses.length - 1].toFixed(6)}`);
  } else if (m.type === 'benchDone') {
    worker.terminate().then(() => process.exit(0));
  } else if (m.type === 'error') {
    fail(`${m.where}: ${m.message}`);
  } else if (m.type === 'log' && m.err) {
    process.stderr.write(m.text + '\n');
  }
});
send({ type: 'init', variant: o.variant, threads: 1 });
