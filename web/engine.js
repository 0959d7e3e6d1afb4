// engine.js — the page's client of the engine: the training Worker
// (worker.js: one WebAssembly module, variant 'threads', 'single' or 'gpu')
// and the questions the page asks the C engine about a setup before any run
// (src/web/web_info.h): a setup's size and memory plan, a checkpoint's
// header, a text's identity. The page keeps no copy of an engine formula,
// range or file parser: it asks here.
import { ui } from './state.js';

let pending = new Map(); // query id -> { resolve, reject }
let nextId = 1;

function failPending(why) {
  for (const { reject } of pending.values()) reject(new Error(why));
  pending = new Map();
}

// Starts (or keeps) the Worker of a variant; resolves with its ready message
// ({presets, options, isa, webgpu, gpu}). Every other message goes to
// onMessage; engine answers settle their queries.
export function startWorker(variant, threads, onMessage, onFail) {
  if (ui.worker && ui.workerVariant === variant) return ui.ready;
  stopWorker();
  const w = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
  ui.worker = w;
  ui.workerVariant = variant;
  ui.ready = new Promise((resolve, reject) => {
    const onReady = (e) => {
      if (e.data.type === 'ready') { w.removeEventListener('message', onReady); ui.readyVariant = variant; resolve(e.data); }
      else if (e.data.type === 'error' && e.data.where === 'init') { w.removeEventListener('message', onReady); reject(new Error(e.data.message)); }
    };
    w.addEventListener('message', onReady);
  });
  ui.ready.catch(() => failPending('the engine did not load'));
  w.addEventListener('message', (e) => {
    const m = e.data;
    if (m.type === 'answer') {
      const q = pending.get(m.id);
      pending.delete(m.id);
      if (q) q.resolve(m.result);
      return;
    }
    onMessage(m);
  });
  w.addEventListener('error', (e) => onFail(e.message || 'unknown error'));
  w.postMessage({ type: 'init', variant, threads });
  return ui.ready;
}

// Ends the Worker (its run with it); open questions are refused.
export function stopWorker() {
  if (ui.worker) ui.worker.terminate();
  ui.worker = null;
  failPending('the engine was stopped');
}

// One question to the engine of the current Worker, once it is ready:
// resolves with its JSON answer ({error} when the engine refuses).
async function query(what, args, transfer) {
  if (!ui.worker) throw new Error('the engine is not loaded');
  await ui.ready;
  const id = nextId++;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    ui.worker.postMessage({ type: 'query', id, what, ...args }, transfer || []);
  });
}

// A setup (engine options text) resolved and sized by the engine
// (tt_web_plan): its model, params, step_flops, accum, state_bytes (the
// training state every backend keeps on the host) and train_bytes (a CPU
// run: the CPU backend's plan for these threads + the state).
export const plan = (opts) => query('plan', { opts });
// The header of a .safetensors file (tt_web_checkpoint_info): model,
// base_opts (what a fine-tune keeps), step, corpus_bytes, corpus_hash.
export const checkpointInfo = (bytes) => query('checkpointInfo', { bytes });
// A Hugging Face folder's config.json as `train --init-from FOLDER` reads it
// (tt_web_hf_config_info): the same fields as checkpointInfo (format 'hf').
export const hfConfigInfo = (bytes) => query('hfConfigInfo', { bytes });
// A text as the engine takes it for a model of context ctx
// (tt_web_text_info): {bytes, hash}, or {error} (empty, binary, too short).
export const textInfo = (bytes, ctx = 1) => query('textInfo', { bytes, ctx });
// A Hugging Face GPT-2 folder's small files ({name: bytes}: config.json and
// the tokenizer's; no weights needed) as the engine reads it
// (tt_web_model_info): model, tokenizer, and the full / LoRA fine-tune's
// memory with fits / why for these options; heapLimit (bytes, 0: 4 GB).
export const modelInfo = (files, opts, heapLimit = 0) => query('modelInfo', { files, opts, heapLimit });

// Runs presets on one engine in a Worker of its own (the benchmark and the
// speed probe); ui.benchCancel ends it. onRow gets each {preset, ms, losses}.
export function runBenchWorker(b, threads, presets, steps, corpus, onRow) {
  return new Promise((resolve, reject) => {
    const w = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
    ui.benchCancel = () => { w.terminate(); reject(Object.assign(new Error('cancelled'), { cancelled: true })); };
    w.onmessage = (e) => {
      const m = e.data;
      if (m.type === 'ready') w.postMessage({ type: 'bench', presets, steps, corpus });
      else if (m.type === 'benchRow') onRow(m);
      else if (m.type === 'benchDone') { w.terminate(); resolve(); }
      else if (m.type === 'error') { w.terminate(); reject(new Error(m.message)); }
    };
    w.onerror = (e) => { w.terminate(); reject(new Error(e.message || 'benchmark worker failed')); };
    w.postMessage({ type: 'init', variant: b.variant, threads });
  });
}
