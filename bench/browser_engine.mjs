// browser_engine.mjs — runs the web app's engine (web/worker.js with the
// WebAssembly module of web/dist and src/webgpu/device_web.js) headless under
// Node, so a machine without a browser can check and time exactly what the
// page runs. The Worker is a worker_threads thread given what a browser
// Worker has and this script can supply: `self`, postMessage/onmessage,
// navigator.gpu from Dawn's Node binding (npm `webgpu`, dawn.node), and
// fetch of file: URLs. Storage (OPFS) is absent: nothing is autosaved (Web
// Locks are Node's own navigator.locks, where this Node has them).
//
// Usage (Node >= 24 with JSPI: --experimental-wasm-jspi):
//   node --experimental-wasm-jspi bench/browser_engine.mjs [--variant gpu|single]
//        [--dawn PATH/dawn.node] [--toggles a,b] [--steps N] [--opts "batch=8 ctx=128"]
//        [--data FILE] [--json] [--profile [--reps N] [--detail]] PRESET...
//   ... --model DIR --opts "batch=4 ctx=256 lora-rank=8"   a fine-tune step of a Hugging Face
//        GPT-2 folder (config.json, model.safetensors, vocab.json + merges.txt or tokenizer.json)
//   ... --recipe RUN.json [--stop-after N] [--opts "precision=f16"] [--data FILE]
//        a whole training run of a run file (`tinytrain train --config`'s format) through the
//        page's own loop (the worker's runfileRead, then start): options = backend of the
//        variant (webgpu | cpu), then the file's (read by the engine), then save-every=0
//        save-seconds=0 (nothing is stored under Node), then --opts; a repeated option: the
//        later wins. The text: --data, else the file's "data" (relative to the file), else
//        data/tinyshakespeare.txt. Prints JSON lines as `tinytrain train --json` does
//        (start, step, eval {step, val_loss, best_val, best_val_step}, end); --stop-after N
//        ends after step N (and its evaluation, where one is due), the schedule the file's.
// Prints one line per preset: ms per step (median), tokens/s, the first
// losses; --json prints the worker's benchRow messages instead. --profile:
// then the step per WebGPU kernel, as `tinytrain profile` prints it (each
// dispatch site run --reps times back to back, default 20; --detail: per
// matmul shape). Exits 1 with
// one line when the engine or the adapter cannot be had (--recipe: also on
// any error the engine reports).
import { Worker } from 'node:worker_threads';
import { readFileSync, existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join, resolve } from 'node:path';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '..');

function fail(msg) { console.error('browser_engine: ' + msg); process.exit(1); }

const args = process.argv.slice(2);
const o = { variant: 'gpu', dawn: '', toggles: '', steps: 20, stepsGiven: false, opts: '', data: '', model: '', recipe: '',
  stopAfter: 0, json: false, profile: false, reps: 20, detail: false, presets: [] };
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  const val = () => { if (i + 1 >= args.length) fail(`${a} needs a value`); return args[++i]; };
  if (a === '--variant') o.variant = val();
  else if (a === '--dawn') o.dawn = val();
  else if (a === '--toggles') o.toggles = val();
  else if (a === '--steps') { o.steps = Number(val()); o.stepsGiven = true; }
  else if (a === '--opts') o.opts = val();
  else if (a === '--data') o.data = val();
  else if (a === '--model') o.model = val();
  else if (a === '--recipe') o.recipe = val();
  else if (a === '--stop-after') o.stopAfter = Number(val());
  else if (a === '--json') o.json = true;
  else if (a === '--profile') o.profile = true;
  else if (a === '--reps') o.reps = Number(val());
  else if (a === '--detail') o.detail = true;
  else if (a === '-h' || a === '--help') {
    const lines = readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n');
    console.log(lines.slice(0, lines.findIndex((l) => l.startsWith('import '))).join('\n'));
    process.exit(0);
  } else if (a.startsWith('-')) fail(`unknown option ${a}`);
  else o.presets.push(a);
}
if (!['gpu', 'single'].includes(o.variant)) fail(`--variant must be gpu or single (the threads module needs browser Workers), not ${o.variant}`);
if (o.recipe) {
  if (o.presets.length || o.model) fail('--recipe trains the run file\'s model: give it without presets or --model');
  if (o.stepsGiven) fail('--steps times presets: with --recipe the run length is the file\'s, or --opts "steps=N"');
  if (!Number.isInteger(o.stopAfter) || o.stopAfter < 0) fail('--stop-after must be an integer >= 0 (0: the whole run)');
} else {
  if (o.stopAfter) fail('--stop-after goes with --recipe');
  if (!Number.isInteger(o.reps) || o.reps < 1 || o.reps > 1000) fail('--reps must be an integer in 1..1000');
  if (o.profile && o.variant !== 'gpu') fail('--profile times WebGPU kernels: it needs --variant gpu');
  if (!Number.isInteger(o.steps) || o.steps < 1) fail('--steps must be a positive integer');
  if (!o.presets.length && !o.model) fail('name at least one preset, or --model DIR, or --recipe RUN.json');
  if (o.presets.length && o.model) fail('give presets or --model, not both');
}
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
// a run file: its text goes to the engine (runfileRead), which turns it into
// options; only its "data" (the text, which the engine leaves to the page) is
// read here, relative to the file as `tinytrain train --config` takes it
let recipe = null;
if (o.recipe) {
  let text;
  try { text = readFileSync(o.recipe, 'utf8'); } catch (e) { fail(`cannot read the run file: ${e.message}`); }
  recipe = { text, data: '', plain: true };
  try {
    const j = JSON.parse(text);
    if (j && typeof j.data === 'string' && j.data) recipe.data = resolve(dirname(resolve(o.recipe)), j.data);
  } catch (e) { recipe.plain = false; /* the engine says what is wrong with it */ }
}
if (o.variant === 'gpu') {
  if (typeof WebAssembly.Suspending !== 'function') fail('this Node has no JSPI: use Node >= 24 with --experimental-wasm-jspi');
  if (!o.dawn) o.dawn = join(root, 'node_modules/webgpu/dist/linux-x64/dawn.node');
  o.dawn = resolve(o.dawn);
  if (!existsSync(o.dawn)) fail(`no Dawn Node binding at ${o.dawn} (npm package webgpu, or --dawn PATH)`);
}
const dist = { gpu: 'tinytrain_web_gpu', single: 'tinytrain_web_st' }[o.variant];
if (!existsSync(join(root, 'web/dist', dist + '.wasm'))) fail(`web/dist/${dist}.wasm is missing (bash scripts/build-wasm.sh)`);
const textPath = o.data || (recipe && recipe.data) || join(root, 'data/tinyshakespeare.txt');
let corpus;
try { corpus = new Uint8Array(readFileSync(textPath)); } catch (e) { fail(`cannot read the text: ${e.message}`); }

const worker = new Worker(new URL('./browser_engine_boot.mjs', import.meta.url), {
  workerData: { dawn: o.variant === 'gpu' ? o.dawn : '', toggles: o.toggles ? o.toggles.split(',') : [] },
});
const send = (m) => worker.postMessage(m);
const done = (code) => {
  const t = setTimeout(() => process.exit(code), 2000); // a thread stuck in the device: exit anyway
  worker.terminate().then(() => { clearTimeout(t); process.exit(code); });
};
worker.on('error', (e) => fail('the engine thread failed: ' + (e && e.stack || e)));

// ---- --recipe: a training run through the page's loop, as `tinytrain train --json` lines ----
// the engine's losses are float32: 9 significant digits give the float back (as the CLI prints them)
const f32 = (x) => (Number.isFinite(x) ? Number(x.toPrecision(9)) : null);
const line = (e) => console.log(JSON.stringify(e));
const rr = { gpu: null, opts: '', total: 0, evalEvery: 0, limit: 0, t0: 0, lastStep: 0, lastLoss: NaN,
  best: Infinity, bestStep: -1, limitVal: false, ended: false };
const evalDue = (s) => s === rr.total || (rr.evalEvery > 0 && s % rr.evalEvery === 0);
function recipeEnd(stopped) {
  if (rr.ended) return;
  rr.ended = true;
  line({ event: 'end', step: rr.lastStep, steps: rr.total, stopped, loss: f32(rr.lastLoss),
    best_val: rr.bestStep >= 0 ? f32(rr.best) : null, best_val_step: rr.bestStep,
    wall_s: Number(((performance.now() - rr.t0) / 1000).toFixed(3)) });
  if (!stopped) { done(0); return; }
  // cut short: the engine is asked to stop and the thread ended once its loop
  // has settled (a thread terminated inside a Dawn call takes the process down)
  send({ type: 'stop' });
  setTimeout(() => done(0), 120000).unref();
}
function onRecipe(m) {
  if (rr.ended) {
    if (m.type === 'status' && m.run !== 'running') done(0);
    return;
  }
  if (m.type === 'runfile') {
    if (!o.data && !recipe.plain) fail(`${o.recipe}: its "data" cannot be read here (not plain JSON): give the text with --data`);
    rr.opts = [`backend=${o.variant === 'gpu' ? 'webgpu' : 'cpu'}`, m.opts, 'save-every=0 save-seconds=0', o.opts]
      .filter((x) => x && x.trim()).join(' ');
    send({ type: 'start', opts: rr.opts, corpus, corpusName: textPath.split('/').pop() });
  } else if (m.type === 'started') {
    const st = m.state;
    rr.total = st.steps; rr.evalEvery = st['eval-every'] || 0;
    rr.limit = o.stopAfter > 0 && o.stopAfter < rr.total ? o.stopAfter : 0;
    rr.t0 = performance.now();
    line({ event: 'start', engine: 'browser', variant: o.variant, device: rr.gpu, backend: m.info,
      model: { layers: st.layers, d_model: st['d-model'], heads: st.heads, ctx: st.ctx, batch: st.batch, vocab: st.vocab, params: st.params },
      steps: rr.total, seed: st.seed, opts: rr.opts, corpus: textPath, stop_after: rr.limit || undefined });
  } else if (m.type === 'progress') {
    // a chunk's steps and evaluations in step order (an evaluation after its step)
    const ev = [...(m.losses || []).map(([s, v]) => [s, 0, v]), ...(m.vals || []).map(([s, v]) => [s, 1, v])]
      .filter(([s]) => !rr.limit || s <= rr.limit).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    for (const [s, kind, v] of ev) {
      if (kind === 0) {
        rr.lastStep = s; rr.lastLoss = v;
        line({ event: 'step', step: s, steps: rr.total, loss: f32(v) });
      } else {
        if (v < rr.best) { rr.best = v; rr.bestStep = s; }
        if (s === rr.limit) rr.limitVal = true;
        line({ event: 'eval', step: s, val_loss: f32(v), best_val: rr.bestStep >= 0 ? f32(rr.best) : null, best_val_step: rr.bestStep });
      }
    }
    if (rr.limit && rr.lastStep >= rr.limit && (!evalDue(rr.limit) || rr.limitVal)) recipeEnd(true);
  } else if (m.type === 'status') {
    if (m.run === 'done') recipeEnd(false);
    else if (m.run !== 'running') fail(`the run ended ${m.run} at step ${rr.lastStep}`);
  }
}

worker.on('message', (m) => {
  if (m.type === 'ready') {
    if (o.variant === 'gpu' && !m.gpu) fail('no WebGPU device: ' + (m.gpuError || 'unknown'));
    if (recipe) {
      rr.gpu = m.gpu ? m.gpu.name : null;
      send({ type: 'runfileRead', name: o.recipe, text: recipe.text });
      return;
    }
    if (!o.json) console.log(`# engine ${o.variant}: ${m.isa}${m.gpu ? ` · ${m.gpu.name} (f16 ${m.gpu.f16}, subgroups ${m.gpu.subgroups}, subgroup matrices ${m.gpu.sgmat ? `${m.gpu.sgmat.M}x${m.gpu.sgmat.N}x${m.gpu.sgmat.K}` : 'none'})` : ''}`);
    send({ type: 'bench', presets: o.presets, model, steps: o.steps, opts: o.opts, corpus,
      profile: o.profile ? { reps: o.reps, detail: o.detail } : undefined });
  } else if (m.type === 'error') {
    fail(`${m.where}: ${m.message}`);
  } else if (m.type === 'log') {
    if (m.err) process.stderr.write(m.text + '\n');
  } else if (recipe) {
    onRecipe(m);
  } else if (m.type === 'benchRow') {
    if (o.json) console.log(JSON.stringify(m));
    else {
      console.log(`${m.preset}\t${m.ms.toFixed(2)} ms/step\t${Math.round(m.tokensPerStep / m.ms * 1000)} tok/s\tloss ${m.losses.slice(0, 3).map((x) => x.toFixed(6)).join(' ')} … ${m.losses[m.losses.length - 1].toFixed(6)}`);
      if (m.profile) process.stdout.write(m.profile.table); // engine/profile.c's table, as `tinytrain profile` prints it
    }
  } else if (m.type === 'benchDone') {
    done(0);
  }
});
send({ type: 'init', variant: o.variant, threads: 1 });
