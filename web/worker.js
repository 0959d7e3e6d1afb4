// worker.js — the training Worker of the web app (a dedicated module Worker).
// Owns: loading one WebAssembly module (variant 'threads', 'single' or
// 'gpu'), opening the WebGPU device for the gpu variant, scheduling the
// engine's training loop (pause/resume/stop/+N are requests to it), token
// streaming for sampling, checkpoints to and from .safetensors bytes, the
// autosave policy and restore (the files and locks: store.js), the
// engine's answers about a setup (query: web_info.h) and the benchmark
// runner. The page (engine.js) only sends messages; the protocol is
// documented at the message switch below. No model code and no training rule lives here: when steps overlap,
// when to evaluate, when to save and when the run ends are decided by the C
// engine's loop (src/train/loop.c through src/web/web_api.c).

import { autosaveInterval } from './autosave.js';
import * as store from './store.js';

const CHUNK_MS = 60;           // advance the engine for this long between progress posts
// the engine's loop events (tt_event, src/train/trainer.h)
const EV = { START: 0, STEP: 1, EVAL: 2, SAVE: 3, HOLD: 4, END: 5 };

let M = null;          // the Emscripten module
let W = 0;             // tt_web handle
let variant = '';      // 'threads' | 'single' | 'gpu'
let threads = 1;
let gpuInfo = null;
let run = 'idle';      // idle | running | paused | stopped | done
let loopActive = false;
let opts = '';         // options string of the current run
let corpusName = '';
let corpusBytes = null; // Uint8Array of the current corpus
let backendName = 'cpu';
let sampling = null;   // { stop: bool }
let pendingSave = null; // { bytes, step, loss, status }: the engine's last save point, not yet in OPFS
let perf = { elapsed: 0, window: [] };
let pendingLoss = [], pendingVal = [];
let busy = Promise.resolve(); // serialises engine use between the loop, sampling, saves
let requestInFlight = null; // steps in flight when the last pause/stop arrived (reported with the status that follows)
let savedStep = 0;     // the step of the last autosave that reached OPFS
let deviceLost = false; // the GPU device was lost: its state is unreadable, the autosave in OPFS must stay as it is
let gpuLost = null;    // the GPUDeviceLostInfo, once the device's lost promise has settled
let gen = 0;           // the run's generation: a save made for an earlier run (or before a Forget) is never written
let autosaveOff = false; // the user removed this run's autosave (Forget): it is not written again
let lastWrite = { at: 0, step: -1 }; // the last autosave that reached OPFS (performance.now())
let kernelsBuilt = 0;  // GPU compute pipelines created so far
let startPhase = false; // a run is being built: kernel compiles are reported as its phase
let runTok = null;     // a BPE run's tokenizer files {name: bytes} (saved with its autosave and downloads); {} for bytes
let modelName = '';    // the model folder the run started from ('' for none)
let presetNames = [];  // the engine's presets

const post = (msg, transfer) => self.postMessage(msg, transfer || []);

// ---- engine helpers --------------------------------------------------------

// Engine entry points. In the gpu module, those that may reach the device
// layer's waits are JSPI promising exports (see loadModule) and return a
// Promise; the others return plain values. Always awaited.
function call(name, ...args) {
  return M['_' + name](...args);
}
// C entry points that can reach a GPU wait (buffer mapping, error scopes).
const GPU_ASYNC_EXPORTS = ['tt_web_init', 'tt_web_init_from', 'tt_web_init_from_path', 'tt_web_load',
  'tt_web_load_path', 'tt_web_advance', 'tt_web_checkpoint', 'tt_web_sample_start', 'tt_web_free', 'tt_web_inspect',
  'tt_web_profile'];
// JS imports of src/webgpu/device_web.js that may return a Promise.
const GPU_ASYNC_IMPORTS = ['ttjs_gpu_read_finish', 'ttjs_gpu_check'];
function heap() {
  // With pthreads + memory growth another thread may have grown the heap.
  const mem = M.wasmMemory || (M.asm && M.asm.memory);
  if (mem && M.HEAPU8.buffer !== mem.buffer) return new Uint8Array(mem.buffer);
  return M.HEAPU8;
}
function cstr(s) {
  const n = M.lengthBytesUTF8(s) + 1;
  const p = M._malloc(n);
  M.stringToUTF8(s, p, n);
  return p;
}
function readCString(p) {
  const h = heap();
  let e = p;
  while (h[e]) e++;
  return new TextDecoder().decode(h.slice(p, e));
}
async function withBytes(u8, fn) {
  const p = M._malloc(Math.max(1, u8.length));
  if (!p) throw new Error('out of memory copying ' + u8.length + ' bytes into the engine');
  heap().set(u8, p);
  try { return await fn(p, u8.length); } finally { M._free(p); }
}
function err() { return readCString(M._tt_web_error(W)); }
function check(rc, what) {
  if (rc !== 0) {
    const e = new Error(err() || `${what} failed (${rc})`);
    e.code = rc;
    throw e;
  }
}
function setOptions(o) {
  const p = cstr(o);
  try { check(M._tt_web_options(W, p), 'options'); } finally { M._free(p); }
}
// ---- model folders in the module's file system -------------------------------------
// A Hugging Face GPT-2 folder's files (bytes by name) are written into the
// module's memory file system and read there by the engine's own folder
// loader (src/train/hf.c, runtok.c: tt_web_init_from_path, tt_web_model_info).
const MODEL_FILES = ['config.json', 'model.safetensors', 'vocab.json', 'merges.txt', 'tokenizer.json',
  'tokenizer_config.json', 'special_tokens_map.json', 'generation_config.json'];
const TOK_FILES = ['tokenizer.json', 'vocab.json', 'merges.txt']; // a run's tokenizer (src/train/runtok.h)
const MODEL_DIR = '/tt_web/model', PROBE_DIR = '/tt_web/probe', LOAD_DIR = '/tt_web/load', RUN_DIR = '/tt_web/run';
function fsClear(dir) {
  const FS = M.FS;
  try { FS.mkdirTree(dir); } catch (e) { /* there */ }
  for (const n of FS.readdir(dir)) if (n !== '.' && n !== '..') FS.unlink(dir + '/' + n);
}
// files: {name: Uint8Array}; only a model folder's names are taken (a name
// with a folder in front, as a directory pick gives it, is cut to its last part)
function writeFolder(dir, files, skip) {
  fsClear(dir);
  const names = [];
  for (const [full, bytes] of Object.entries(files || {})) {
    const name = full.split('/').pop();
    if (!MODEL_FILES.includes(name) || (skip && skip.includes(name)) || !bytes) continue;
    M.FS.writeFile(dir + '/' + name, bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes));
    names.push(name);
  }
  return names;
}
function readFolder(dir, only) {
  const out = {};
  let names = [];
  try { names = M.FS.readdir(dir); } catch (e) { return out; }
  for (const n of names) if (n !== '.' && n !== '..' && (!only || only.includes(n))) out[n] = M.FS.readFile(dir + '/' + n);
  return out;
}
// The run's tokenizer files (the run folder's, as the CLI keeps them beside its checkpoint); {} for bytes.
const runTokFiles = () => (M._tt_web_tokenizer_kind(W) ? readFolder(RUN_DIR, TOK_FILES) : {});
// A new run from a model folder (files by name): tt_web_init_from_path;
// keepCtx: the options' ctx (a picked model), else the folder's own (a
// tinytrain export given to "Fine-tune from"). The weights file is dropped
// from the file system once the engine holds them.
async function initFromModel(model, keepCtx = true) {
  writeFolder(MODEL_DIR, model.files);
  model.files = null; // the file system holds them now: the message's copy can go while the engine loads
  const p = cstr(MODEL_DIR), name = cstr(model.name || '');
  try { check(await call('tt_web_init_from_path', W, p, name, keepCtx ? 1 : 0), 'init'); } finally {
    M._free(p); M._free(name);
    try { M.FS.unlink(MODEL_DIR + '/model.safetensors'); } catch (e) { /* not there */ }
  }
}
// A saved BPE run (checkpoint bytes + its tokenizer files) resumed from a run folder: tt_web_load_path.
async function loadRunFolder(ckpt, tok, force) {
  fsClear(LOAD_DIR);
  for (const [n, b] of Object.entries(tok)) if (TOK_FILES.includes(n)) M.FS.writeFile(LOAD_DIR + '/' + n, b);
  M.FS.writeFile(LOAD_DIR + '/checkpoint.safetensors', ckpt);
  const p = cstr(LOAD_DIR);
  try { check(await call('tt_web_load_path', W, p, force ? 1 : 0), 'checkpoint'); } finally {
    M._free(p);
    try { M.FS.unlink(LOAD_DIR + '/checkpoint.safetensors'); } catch (e) { /* gone */ }
  }
}
// A model folder described by the engine (web_info.h tt_web_model_info): from
// config.json and the tokenizer files alone (the weights are not needed).
function modelInfo(m) {
  writeFolder(PROBE_DIR, m.files, ['model.safetensors']);
  const p = cstr(PROBE_DIR), o = cstr(m.opts || '');
  try { return answerJson(M._tt_web_model_info(p, o, +m.heapLimit || 0)); } finally { M._free(p); M._free(o); }
}

// Run files through the engine's C code (src/train/runfile.c): read gives the
// options a file sets as name=value text, write the options text as a file.
function runfileCall(m) {
  const a = cstr(m.type === 'runfileRead' ? m.name || 'run file' : m.opts), b = m.type === 'runfileRead' ? cstr(m.text) : 0;
  try {
    const p = m.type === 'runfileRead' ? M._tt_web_runfile_read(W, a, b) : M._tt_web_runfile_write(W, a);
    if (!p) throw new Error(err() || 'run file failed');
    return readCString(p);
  } finally { M._free(a); if (b) M._free(b); }
}
// The engine's answers about a setup (src/web/web_info.h): pure functions of
// their arguments that touch no run, so they are answered at once, between
// two units of training work.
function answerJson(p) { return JSON.parse(readCString(p)); }
function withBytesNow(u8, fn) {
  const p = M._malloc(Math.max(1, u8.length));
  if (!p) return { error: 'out of memory copying ' + u8.length + ' bytes into the engine' };
  heap().set(u8, p);
  try { return fn(p, u8.length); } finally { M._free(p); }
}
function query(m) {
  switch (m.what) {
    case 'plan': {
      const p = cstr(m.opts || '');
      try { return answerJson(M._tt_web_plan(p)); } finally { M._free(p); }
    }
    case 'checkpointInfo': return withBytesNow(m.bytes, (p, n) => answerJson(M._tt_web_checkpoint_info(p, n)));
    case 'textInfo': return withBytesNow(m.bytes, (p, n) => answerJson(M._tt_web_text_info(p, n, m.ctx || 1)));
    case 'modelInfo': return modelInfo(m);
    case 'hfConfigInfo': return withBytesNow(m.bytes, (p, n) => answerJson(M._tt_web_hf_config_info(p, n)));
    default: return { error: 'unknown query ' + m.what };
  }
}
// Histories are float32 in C, printed with 9 significant digits: fround gives
// back the exact float, the same number the live getters return.
function stateJson() {
  const st = JSON.parse(readCString(M._tt_web_state_json(W)));
  st.loss = st.loss.map((x) => (x == null ? NaN : Math.fround(x)));
  st.val = st.val.map(([s, x]) => [s, x == null ? NaN : Math.fround(x)]);
  return st;
}
const info = () => readCString(M._tt_web_info(W));
function locked(fn) {
  const next = busy.then(fn, fn);
  busy = next.catch(() => {});
  return next;
}
const yieldNow = () => new Promise((r) => {
  const ch = new MessageChannel();
  ch.port1.onmessage = () => r();
  ch.port2.postMessage(0);
});

// the f16 x f16 -> f32 subgroup-matrix configuration the f16 tier's matmul
// uses (tensor cores): the largest the adapter lists with K dividing 16;
// none without subgroups and WGSL's subgroup_id (the matmul's subgroups
// share a workgroup's tiles), nor where WGSL lacks the builtins' template
// form on arrays of vec4<u32> (the kernels' form: a probe compiled once)
async function sgmatConfig(dev, ai) {
  if (!dev.features.has('chromium-experimental-subgroup-matrix') || !dev.features.has('shader-f16') ||
      !dev.features.has('subgroups') || !(navigator.gpu.wgslLanguageFeatures && navigator.gpu.wgslLanguageFeatures.has('subgroup_id')))
    return null;
  let best = null;
  for (const c of ai.subgroupMatrixConfigs || []) {
    if (c.componentType !== 'f16' || c.resultComponentType !== 'f32' || 16 % c.K) continue;
    if (!best || c.M * c.N * c.K > best.M * best.N * best.K) best = { M: c.M, N: c.N, K: c.K };
  }
  if (!best) return null;
  const L = `subgroup_matrix_left<f16, ${best.K}, ${best.M}>`;
  dev.pushErrorScope('validation');
  dev.createShaderModule({ code: 'enable f16;\nenable chromium_experimental_subgroup_matrix;\n' +
    'var<workgroup> t: array<vec4<u32>, 64>;\n@compute @workgroup_size(64) fn main() {\n' +
    `  let m = subgroupMatrixLoad<${L}, col_major>(&t, 0u, 2u);\n  subgroupMatrixStore<row_major>(&t, 0u, m, 2u);\n}\n` });
  return (await dev.popErrorScope()) ? null : best;
}

async function openGpu() {
  if (!self.navigator || !navigator.gpu) throw new Error('this browser has no WebGPU (navigator.gpu)');
  const a = await navigator.gpu.requestAdapter({ powerPreference: 'high-performance' });
  if (!a) throw new Error('no WebGPU adapter');
  const names = ['maxStorageBufferBindingSize', 'maxBufferSize', 'maxComputeWorkgroupStorageSize', 'maxComputeInvocationsPerWorkgroup',
    'maxComputeWorkgroupSizeX', 'maxComputeWorkgroupSizeY', 'maxComputeWorkgroupSizeZ', 'maxComputeWorkgroupsPerDimension',
    'maxStorageBuffersPerShaderStage', 'maxUniformBufferBindingSize', 'maxBindGroups'];
  const requiredLimits = {};
  for (const n of names) if (a.limits[n] !== undefined) requiredLimits[n] = a.limits[n];
  const requiredFeatures = ['shader-f16', 'subgroups', 'chromium-experimental-subgroup-matrix'].filter((f) => a.features.has(f));
  const dev = await a.requestDevice({ requiredLimits, requiredFeatures });
  // the engine compiles its kernels as a run is built: each one is counted
  // and, while a run starts, said to the page ("compiling GPU kernels: 7")
  const create = dev.createComputePipeline.bind(dev);
  dev.createComputePipeline = (d) => {
    kernelsBuilt++;
    if (startPhase) post({ type: 'phase', phase: `compiling GPU kernels: ${kernelsBuilt}` });
    return create(d);
  };
  const ai = a.info || {};
  const name = [ai.vendor, ai.architecture, ai.description || ai.device].filter(Boolean).join(' ') || 'WebGPU adapter';
  gpuInfo = { name, isCpu: /swiftshader|llvmpipe|lavapipe|cpu/i.test(name + ' ' + (ai.architecture || '')),
    subgroupMin: ai.subgroupMinSize || 0, subgroupMax: ai.subgroupMaxSize || 0,
    f16: dev.features.has('shader-f16'), subgroups: dev.features.has('subgroups'), sgmat: await sgmatConfig(dev, ai) };
  return dev;
}

async function loadModule(v, nthreads) {
  const url = { threads: './dist/tinytrain_web.js', single: './dist/tinytrain_web_st.js', gpu: './dist/tinytrain_web_gpu.js' }[v];
  if (!url) throw new Error('unknown engine variant ' + v);
  const factory = (await import(url)).default;
  const cfg = {
    ttPoolSize: v === 'threads' ? Math.max(1, nthreads) : 0,
    print: (t) => post({ type: 'log', text: t }),
    printErr: (t) => post({ type: 'log', text: t, err: true }),
  };
  let gpuError = null, dev = null;
  if (v === 'gpu') {
    // JSPI: the device layer's waits suspend the wasm stack (no Asyncify).
    if (typeof WebAssembly.Suspending !== 'function' || typeof WebAssembly.promising !== 'function')
      throw new Error('the WebGPU engine needs JavaScript Promise Integration (WebAssembly.Suspending), which this browser lacks');
    try { dev = await openGpu(); } catch (e) { gpuError = 'webgpu: ' + e.message; }
    const wasmUrl = new URL(url.replace(/\.js$/, '.wasm'), import.meta.url);
    cfg.instantiateWasm = (info, receiveInstance) => {
      for (const n of GPU_ASYNC_IMPORTS) info.env[n] = new WebAssembly.Suspending(info.env[n]);
      WebAssembly.instantiateStreaming(fetch(wasmUrl), info).then(({ instance, module }) => {
        const ex = { ...instance.exports };
        for (const n of GPU_ASYNC_EXPORTS) ex[n] = WebAssembly.promising(instance.exports[n]);
        receiveInstance({ exports: ex }, module);
      }, (e) => post({ type: 'error', where: 'init', message: 'could not instantiate the WebGPU engine: ' + e.message }));
      return {};
    };
  }
  const mod = await factory(cfg);
  if (v === 'gpu') {
    if (dev) {
      mod.ttGpuDevice = dev; mod.ttGpuInfo = gpuInfo;
      dev.lost.then((info) => { gpuLost = info; });
    } else mod.ttGpuError = gpuError;
  }
  return mod;
}

// ---- training loop ----------------------------------------------------------

function snapshot(extra) {
  const step = M._tt_web_step(W), total = M._tt_web_total_steps(W);
  const tps = M._tt_web_tokens_per_step(W);
  const win = perf.window;
  let rate = 0; // steps/s over the recent window
  if (win.length >= 2) {
    const a = win[0], b = win[win.length - 1];
    if (b.t > a.t) rate = (b.step - a.step) / ((b.t - a.t) / 1000);
  }
  const msg = {
    type: 'progress', step, total, run,
    loss: M._tt_web_loss(W), val: M._tt_web_val_loss(W), lr: M._tt_web_lr(W), gradNorm: M._tt_web_grad_norm(W),
    bpb: M._tt_web_bits_per_byte(W, M._tt_web_loss(W)), valBpb: M._tt_web_bits_per_byte(W, M._tt_web_val_loss(W)),
    tokPerSec: rate * tps, stepsPerSec: rate, elapsed: perf.elapsed,
    eta: rate > 0 ? (total - step) / rate : null,
    losses: pendingLoss, vals: pendingVal, pipelined: M._tt_web_pipelined(W),
    ...extra,
  };
  pendingLoss = []; pendingVal = [];
  return msg;
}

// One unit of the engine's work (tt_web_advance); records what the page and
// the autosave need from its event and returns the event.
async function rawAdvance() {
  const ev = await call('tt_web_advance', W);
  if (ev < 0) {
    const e = new Error(err() || `training failed (${-ev})`);
    e.code = -ev;
    throw e;
  }
  return ev;
}

async function advance() {
  const ev = await rawAdvance();
  const step = M._tt_web_step(W);
  if (ev === EV.STEP) {
    startPhase = false;
    const now = performance.now();
    pendingLoss.push([step, M._tt_web_loss(W)]);
    perf.window.push({ t: now, step });
    while (perf.window.length > 2 && now - perf.window[0].t > 5000) perf.window.shift();
  } else if (ev === EV.EVAL) {
    pendingVal.push([step, M._tt_web_val_loss(W)]);
  } else if (ev === EV.SAVE) {
    const p = M._tt_web_save_ptr(W);
    // the run's status at this save point: the save of the last step is the
    // finished run's, though END comes in a later event
    const status = step >= M._tt_web_total_steps(W) && run !== 'stopped' ? 'done' : run;
    pendingSave = { bytes: heap().slice(p, p + M._tt_web_save_len(W)), step, loss: M._tt_web_loss(W), status, gen };
  }
  return ev;
}

// Lets the engine finish what is in flight (with the evaluations and saves
// it makes due) so its state can be read: a hold while running, released
// after. A paused or finished run is settled already.
async function settle() {
  const running = run === 'running';
  if (running) M._tt_web_hold(W, 1);
  try {
    for (;;) {
      const ev = await advance();
      if (ev === EV.HOLD || ev === EV.END) break;
    }
  } finally {
    if (running && run === 'running') M._tt_web_hold(W, 0);
  }
}

// Pause and stop: the engine finishes the steps in flight, saves, and holds.
function requestHold(state) {
  if (loopActive && run === 'running') requestInFlight = M._tt_web_in_flight(W);
  run = state;
  M._tt_web_hold(W, 2);
  loop();
}

async function loop() {
  if (loopActive) return;
  loopActive = true;
  let ended = false;
  try {
    while (!ended && run !== 'idle') {
      const msg = await locked(async () => {
        const t0 = performance.now();
        do {
          const ev = await advance();
          if (ev === EV.END && run !== 'stopped') run = 'done';
          ended = ev === EV.HOLD || ev === EV.END;
        } while (!ended && performance.now() - t0 < CHUNK_MS);
        perf.elapsed += (performance.now() - t0) / 1000;
        return snapshot();
      });
      if (ended) { // the last chunk: its save points reach OPFS before the page hears the run settled
        await writeSave();
        await markPausedSave();
        post(msg);
      } else {
        post(msg);
        await writeSave();
        await yieldNow();
      }
    }
  } catch (e) {
    run = 'paused';
    // a lost device first fails the step in flight (its readback's mapping is
    // rejected); the device's lost promise settles just after
    if (M.ttGpuDevice && !gpuLost) await Promise.race([M.ttGpuDevice.lost, new Promise((r) => setTimeout(r, 1000))]);
    if (gpuLost || /device lost/i.test(e.message)) deviceLost = true;
    post({ type: 'error', where: 'train', message: deviceLost ? lostMessage(e.message) : e.message });
    post(snapshot());
  } finally {
    loopActive = false;
  }
  if (run === 'idle') return; // a new run replaced this one
  post({ type: 'status', run, inFlightAtRequest: requestInFlight });
  requestInFlight = null;
}

// A pause that settles on a step a timed save already wrote (as running)
// makes no save of its own: the autosave is written again as paused, so a
// reload comes back paused, as the run was left.
async function markPausedSave() {
  if (run !== 'paused' || deviceLost || lastWrite.step !== M._tt_web_step(W) || lastWrite.status === 'paused') return;
  const bytes = await locked(() => checkpointBytes());
  await writeAutosave({ bytes, step: lastWrite.step, loss: M._tt_web_loss(W), status: 'paused' }, true);
}

function resetPerf() {
  perf = { elapsed: 0, window: [] };
  pendingLoss = []; pendingVal = [];
}

// ---- autosave policy and ownership ---------------------------------------------
function autosaveDue(snap) {
  if (snap.status && snap.status !== 'running') return true;
  if (lastWrite.step < 0) return true; // the first save of a run
  return (performance.now() - lastWrite.at) / 1000 >= autosaveInterval(snap.bytes.length);
}

function onOwnerLost() {
  gen++;
  pendingSave = null;
  if (run === 'running') requestHold('paused');
  post({ type: 'ownerLost', run, step: W ? M._tt_web_step(W) : 0 });
  store.waitOwnerFree(onOwnerFree);
}
// the tab that owned the saved run closed: the page may claim it
const onOwnerFree = () => post({ type: 'ownerFree' });

// Another tab takes the run over (store.serveHandover): the run here pauses
// and its current state is saved (with the status it had, so the other tab
// goes on as this one did); resolves with the step saved.
async function handOver() {
  if (!W || run === 'idle' || deviceLost) return null;
  const status = run;
  if (run === 'running') requestHold('paused');
  while (loopActive) await yieldNow();
  const bytes = await locked(() => checkpointBytes());
  const step = M._tt_web_step(W);
  await writeAutosave({ bytes, step, loss: M._tt_web_loss(W), status: status === 'running' ? 'running' : run }, true);
  return savedStep === step ? step : null;
}
const claimOwner = (steal) => store.claimOwner(steal, onOwnerLost);

let corpusSaved = false; // corpus.bin holds the current run's corpus
let storageFull = false; // an autosave failed for lack of storage: none is tried until the run is resumed

// The current state as checkpoint bytes (a paused or finished run, or one
// settled first).
async function checkpointBytes() {
  await settle();
  const n = await call('tt_web_checkpoint', W);
  if (n < 0) throw new Error(err());
  const p = M._tt_web_save_ptr(W);
  return heap().slice(p, p + n);
}

// The message of a lost device (a GPU reset, the GPU process gone): where the
// run stopped and what is kept.
function lostMessage(m) {
  const why = gpuLost ? 'webgpu: device lost: ' + String(gpuLost.message || gpuLost.reason || 'no reason given').split('\n')[0] : m;
  return why + ` (at step ${M._tt_web_step(W)}): training stopped. ` + (savedStep > 0
    ? `The autosave of step ${savedStep} is kept: reload the page to resume from it.`
    : 'No autosave had been made yet.');
}

// The browser refused the bytes of an autosave (its storage quota is used
// up). The run pauses rather than train on with nothing saved: the state in
// memory is whole, and the user can download it or free space and resume;
// the saves the pause makes are not tried (storageFull), so the message is
// said once.
function onStorageFull(snap) {
  const step = snap.step;
  storageFull = true;
  const pausing = run === 'running' && snap.status !== 'done'; // the last step's save: the run ends anyway
  if (pausing) requestHold('paused');
  const kept = savedStep > 0 ? `the autosave of step ${savedStep} is kept` : 'no autosave of this run is in this browser';
  post({ type: 'error', where: 'autosave', storageFull: true,
    message: `Browser storage is full: step ${step} could not be saved, ${kept}. ` +
      (pausing || run === 'paused' ? 'Training is paused: free space or download the checkpoint, then resume.'
        : 'Free space or download the checkpoint.') });
}

// Writes a save point to OPFS (store.save), unless it belongs to an earlier
// run, this tab no longer owns the saved run, the user removed this run's
// autosave, or the interval policy says it is too soon (autosaveDue). Checked
// again inside the OPFS lock: a New run or a Forget that came in while this
// save waited for the lock wins.
async function writeAutosave(snap, force) {
  if (!W || deviceLost || storageFull) return;
  const g = snap.gen === undefined ? gen : snap.gen;
  if (g !== gen || !store.isOwner() || autosaveOff) return;
  if (!force && !autosaveDue(snap)) return;
  try {
    const tok = runTok || {};
    const meta = { version: 2, opts, corpusName, variant, backend: backendName, status: snap.status || run, step: snap.step,
      loss: snap.loss, savedAt: Date.now(), elapsed: perf.elapsed, tokFiles: Object.keys(tok), model: modelName || undefined };
    const wrote = await store.save(() => g === gen && !autosaveOff,
      { ckpt: snap.bytes, corpus: corpusSaved ? null : corpusBytes, tok: corpusSaved ? null : tok, meta });
    if (!wrote) return;
    corpusSaved = true;
    savedStep = snap.step;
    lastWrite = { at: performance.now(), step: snap.step, status: meta.status };
    post({ type: 'saved', where: 'opfs', step: snap.step, bytes: snap.bytes.length, nextIn: autosaveInterval(snap.bytes.length) });
  } catch (e) {
    if (store.isStorageFull(e)) onStorageFull(snap);
    else {
      const kept = savedStep > 0 ? `the autosave of step ${savedStep} is kept` : 'no earlier autosave of this run is in this browser';
      post({ type: 'error', where: 'autosave', message: `Autosave of step ${snap.step} failed, ${kept}.`, detail: String(e && e.message || e) });
    }
  }
}

// The engine's pending save point, if any.
async function writeSave() {
  const snap = pendingSave;
  pendingSave = null;
  if (snap) await writeAutosave(snap);
}

async function restore() {
  const saved = await store.readSaved();
  if (!saved) return { found: false };
  if (!saved.meta) return { found: false, message: saved.message };
  const { meta, corpus, ckpt, tok } = saved;
  const r = await locked(async () => {
    setOptions(meta.opts);
    await withBytes(corpus, async (p, n) => check(await call('tt_web_corpus', W, p, n), 'corpus'));
    if (tok && Object.keys(tok).length) await loadRunFolder(ckpt, tok, 0);
    else await withBytes(ckpt, async (p, n) => check(await call('tt_web_load', W, p, n, 0), 'checkpoint'));
    return { state: stateJson(), info: info() };
  });
  runTok = runTokFiles();
  modelName = meta.model || '';
  opts = meta.opts; corpusName = meta.corpusName; corpusBytes = corpus; corpusSaved = true;
  backendName = meta.backend || 'cpu';
  resetPerf();
  perf.elapsed = meta.elapsed || 0;
  savedStep = r.state.step;
  storageFull = false;
  autosaveOff = false;
  gen++;
  lastWrite = { at: performance.now(), step: r.state.step };
  run = r.state.step >= r.state.steps ? 'done' : 'paused';
  return { found: true, meta, ...r };
}

// The run in the engine as checkpoint bytes with what goes with it (its
// options, text and status), held: a New run that fails puts it back
// (putBack). was: its status before the New run stopped its loop.
async function captureRun(was) {
  M._tt_web_hold(W, 1);
  for (;;) {
    const ev = await advance();
    if (ev === EV.HOLD || ev === EV.END) break;
  }
  const n = await call('tt_web_checkpoint', W);
  if (n < 0) throw new Error(err());
  const p = M._tt_web_save_ptr(W);
  return { bytes: heap().slice(p, p + n), opts, corpusName, corpusBytes, backendName, modelName, elapsed: perf.elapsed, savedStep, autosaveOff, was };
}

// A New run failed (why): the run it was to replace is loaded back as it was
// (paused), and the page told (kept {state, info, run, message}); its
// autosave was never touched.
async function putBack(prev, why) {
  try {
    const r = await locked(async () => {
      setOptions(prev.opts);
      await withBytes(prev.corpusBytes, async (p, n) => check(await call('tt_web_corpus', W, p, n), 'corpus'));
      await withBytes(prev.bytes, async (p, n) => check(await call('tt_web_load', W, p, n, 1), 'checkpoint'));
      return { state: stateJson(), info: info() };
    });
    opts = prev.opts; corpusName = prev.corpusName; corpusBytes = prev.corpusBytes; backendName = prev.backendName; modelName = prev.modelName;
    corpusSaved = false;
    resetPerf();
    perf.elapsed = prev.elapsed;
    savedStep = prev.savedStep;
    autosaveOff = prev.autosaveOff;
    gen++;
    lastWrite = { at: performance.now(), step: r.state.step };
    run = r.state.step >= r.state.steps ? 'done' : 'paused';
    post({ type: 'kept', ...r, run, was: prev.was, message: why });
    post({ type: 'status', run });
  } catch (e) {
    post({ type: 'kept', failed: true, message: e.message });
  }
}

// Removes the saved run; true when there was one.
async function clearSaved() {
  const removed = await store.removeSaved();
  corpusSaved = false;
  storageFull = false;
  savedStep = 0;
  lastWrite = { at: 0, step: -1 };
  return removed;
}

// ---- sampling -------------------------------------------------------------------------

async function sample(m) {
  if (sampling) sampling.stop = true;
  const me = { stop: false };
  sampling = me;
  const dec = new TextDecoder('utf-8');
  let n = 0;
  const t0 = performance.now();
  try {
    await locked(async () => {
      await settle(); // sample the weights of the last recorded step
      const p = cstr(m.prompt || '');
      try {
        check(await call('tt_web_sample_start', W, p, m.length | 0, +m.temperature, m.topK | 0, +m.topP, +m.seed), 'sample');
      } finally { M._free(p); }
    });
    post({ type: 'sampleStart', prompt: m.prompt || '' });
    for (;;) {
      if (me.stop) break;
      let text = '', done = false;
      await locked(() => {
        const t = performance.now();
        const bytes = [];
        while (performance.now() - t < 30) {
          const tok = M._tt_web_sample_next(W);
          if (tok < 0) { done = true; break; }
          // the token's bytes (a BPE token may end inside a UTF-8 character: the decoder streams)
          const p = M._tt_web_sample_piece(W), len = M._tt_web_sample_piece_len(W);
          const h = heap();
          for (let i = 0; i < len; i++) bytes.push(h[p + i]);
          n++;
        }
        text = dec.decode(new Uint8Array(bytes), { stream: !done });
      });
      const secs = (performance.now() - t0) / 1000;
      post({ type: 'token', text, n, tokPerSec: secs > 0 ? n / secs : 0 });
      if (done) break;
      await yieldNow();
    }
  } catch (e) {
    post({ type: 'error', where: 'sample', message: e.message });
  } finally {
    if (sampling === me) sampling = null;
    const secs = (performance.now() - t0) / 1000;
    post({ type: 'sampleDone', n, tokPerSec: secs > 0 ? n / secs : 0, stopped: me.stop });
  }
}

// ---- inspection (the "Look inside" card, web/inspect.js) -------------------------------------
// The engine's inspect.h JSON for the model of the last recorded step, on the
// run's backend; the loop is settled first, as for sampling.
async function inspect(m) {
  try {
    const json = await locked(async () => {
      if (run !== 'idle') await settle();
      return withBytes(new TextEncoder().encode(m.prompt || ''), async (p, n) => {
        const r = await call('tt_web_inspect', W, p, n, m.topK | 0);
        if (!r) throw new Error(err() || 'inspect failed');
        return readCString(r);
      });
    });
    post({ type: 'inspection', id: m.id, result: JSON.parse(json), variant });
  } catch (e) {
    post({ type: 'error', where: 'inspect', id: m.id, message: e.message });
  }
}

// ---- benchmark ----------------------------------------------------------------------------
// One warm-up step, then `steps` timed steps (the time between two steps'
// losses reaching the Worker, steps overlapping where the engine pipelines,
// as in training); median ms. Same seed and batches on every backend, so the
// losses double as a drift check. No evaluation and no save point inside.

async function bench(m) {
  try {
    const rows = m.model ? [m.model.name || 'model'] : m.presets;
    for (const preset of rows) {
      const o = (m.model ? '' : `preset=${preset} `) + `steps=${m.steps + 1} seed=1337 eval-every=0 save-every=0 save-seconds=0` +
        ` backend=${variant === 'gpu' ? 'webgpu' : 'cpu'}` + (variant === 'threads' ? ` threads=${threads}` : ' threads=1') +
        (m.opts ? ' ' + m.opts : '');
      setOptions(o);
      await withBytes(m.corpus, async (p, n) => check(await call('tt_web_corpus', W, p, n), 'corpus'));
      if (m.model) await initFromModel(m.model);
      else check(await call('tt_web_init', W), 'init');
      M._tt_web_hold(W, 0);
      const losses = [], times = [];
      let t0 = performance.now();
      for (let i = 0; i <= m.steps; i++) {
        while ((await rawAdvance()) !== EV.STEP);
        const now = performance.now();
        losses.push(M._tt_web_loss(W));
        if (i > 0) times.push(now - t0);
        await yieldNow();
        t0 = performance.now();
      }
      times.sort((a, b) => a - b);
      const mid = times.length >> 1;
      const ms = times.length % 2 ? times[mid] : (times[mid - 1] + times[mid]) / 2;
      const row = { type: 'benchRow', preset, ms, times, losses, tokensPerStep: M._tt_web_tokens_per_step(W), info: info(),
        params: M._tt_web_n_params(W), state: stateJson() };
      if (m.profile) { // the step per kernel (engine/profile.h); the run ends with it
        const r = await call('tt_web_profile', W, m.profile.reps | 0, m.profile.detail ? 1 : 0);
        if (!r) throw new Error(err() || 'profile failed');
        row.profile = JSON.parse(readCString(r));
      }
      post(row);
    }
    post({ type: 'benchDone' });
  } catch (e) {
    post({ type: 'error', where: 'bench', message: e.message });
  }
}

// A folder's files as one zip (fflate, copied into dist/ by build-wasm.sh),
// stored, not deflated: float weights hardly compress.
async function zipFolder(dir, files) {
  const { zipSync } = await import('./dist/fflate.js');
  const tree = {};
  for (const [name, bytes] of Object.entries(files)) tree[`${dir}/${name}`] = [bytes, { level: 0 }];
  return zipSync(tree);
}
// A run folder zip (what `download` gives for a BPE run): {ckpt, tok, name}, or null for other bytes.
async function runZip(bytes) {
  if (!(bytes.length > 4 && bytes[0] === 0x50 && bytes[1] === 0x4b)) return null; // "PK"
  const { unzipSync } = await import('./dist/fflate.js');
  let files;
  try { files = unzipSync(bytes); } catch (e) { throw new Error('the zip cannot be read: ' + e.message); }
  const out = { ckpt: null, tok: {}, name: '' };
  for (const [path, b] of Object.entries(files)) {
    const parts = path.split('/'), n = parts.pop();
    if (n === 'checkpoint.safetensors') { out.ckpt = b; out.name = (parts.pop() || '').replace(/-step\d+$/, '').replace(/^tinytrain-/, ''); }
    else if (TOK_FILES.includes(n)) out.tok[n] = b;
  }
  if (!out.ckpt) throw new Error('the zip holds no checkpoint.safetensors (a run folder has one)');
  return out;
}
// what a download is called: the model folder the run came from, else its preset
const modelTag = (st) => (modelName ? modelName.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 60) : st.preset || 'custom');

// ---- messages ----------------------------------------------------------------------------
// page -> worker:
//   init {variant, threads}                 load the module; -> ready {presets, options (the option table), isa, webgpu, gpu}
//   query {id, what: plan {opts} | checkpointInfo {bytes} | hfConfigInfo {bytes} | textInfo {bytes, ctx}
//          | modelInfo {files: {name: bytes}, opts, heapLimit?}}   -> answer {id, result}:
//                                            modelInfo: a model folder from config.json (+ tokenizer files; the
//                                            weights are not needed) and its full / LoRA memory (tt_web_model_info)
//                                            web_info.h's JSON (result.error: the engine's reason to refuse)
//   start {opts, corpus: Uint8Array, corpusName, initFrom?, initFromConfig?, initFromName?}   a new run (from the seed, or
//                                            a fine-tune from a checkpoint's bytes, or from a Hugging Face model.safetensors
//                                            with its config.json); -> started, progress..., status; on failure error, then kept
//   start {..., model: {files: {name: Uint8Array}, name}}   fine-tune a Hugging Face GPT-2 folder's files
//                                            (config.json, model.safetensors, vocab.json + merges.txt or
//                                            tokenizer.json): the engine's folder loader, the model's tokenizer for
//                                            the text, sampling and downloads; opts give batch, ctx, lora-*, backend
//   progress carries loss (nats per token) and bpb (bits per byte of the text), val and valBpb
//   pause | resume | stop | more {total}      continue to a total of `total` steps (or {n}: n more)
//   sample {prompt, length, temperature, topK, topP, seed} | sampleStop   -> sampleStart, token..., sampleDone
//   inspect {id, prompt, topK}               -> inspection {id, result (src/inspect.h's JSON), variant}
//   download                                 -> checkpoint {bytes, name}
//   download                                 a BPE run: -> checkpoint {bytes (zip of the run folder: checkpoint.safetensors
//                                            + its tokenizer files, what `tinytrain train --resume` reads), name, files}
//   exportHf                                 -> hfZip {bytes, name}: `tinytrain export`'s Hugging Face folder, zipped
//   exportAdapter                            -> adapterZip {bytes, name, files}: `tinytrain export --adapter`'s peft folder, zipped
//   upload {bytes, corpus?, corpusName?, force}   load a .safetensors, or a run folder's zip (a BPE run's download:
//                                            checkpoint.safetensors + its tokenizer files); -> started {state, loaded}, or error
//                                            {where: 'checkpoint', mismatch, want, chosen} (the texts, {bytes, hash})
//   start, upload and restore first claim the saved run for this tab (Web Lock OWNER_LOCK; {steal: true} takes
//   it from another tab, which gets ownerLost); without it: error {where: 'owner'} or restored {busy: true}
//   restore {steal?}                         OPFS -> restored {found, meta, state, tookOver, handedStep} | {found: false, busy};
//                                            steal: the owning tab saves its current state first (handedStep: its step, or
//                                            null when it did not answer); a tab without the run hears ownerFree when the
//                                            owner's tab closes
//   clearSaved                               Forget -> cleared {removed, autosaveOff}: this run is not autosaved again
//   autosaveOn                               autosave this run again (after a Forget)
//   bench {presets, steps, corpus, opts?}    -> benchRow {preset, ms, times, losses, tokensPerStep, info, params, state}..., benchDone
//                                            (opts: more options, e.g. 'batch=8')
//                                            (profile {reps, detail}: then the step per kernel, benchRow.profile:
//                                            engine/profile.h's JSON; the run ends with it)
//   bench {model: {files: {name: Uint8Array}, name}, opts, steps, corpus}   one row for a model folder: a fine-tune
//                                            of it (opts: e.g. 'batch=4 ctx=256 lora-rank=8'), one warm-up step then
//                                            `steps` timed; benchRow.preset is model.name; ms the median step
// worker -> page: phase {phase} while a run is being set up; saved {step, bytes, nextIn}; ownerLost {run, step}; ownerFree;
//   kept {state, info, run, message} | {failed, message}: a New run failed, the run it was to replace is back (paused);
//   error {where, message, detail?} (where: init | corpus | options | train | checkpoint | sample | inspect | runfile | finetune | autosave | bench;
//   autosave with storageFull: true when the browser's storage refused it: the run pauses)
//   status {run, inFlightAtRequest?}: after a pause/stop of a running loop, how many steps were in flight
//   when the request arrived (they are collected, recorded and saved before the status is sent)

async function onMessage(m) {
  switch (m.type) {
    case 'init': {
      variant = m.variant; threads = m.threads || 1;
      try {
        M = await loadModule(variant, threads);
        W = M._tt_web_new();
        if (!W) throw new Error('out of memory');
        await store.cleanLeftovers().catch(() => {});
        presetNames = answerJson(M._tt_web_presets_json()).map((p) => p.name);
        store.serveHandover(handOver);
        post({ type: 'ready', variant, threads, presets: answerJson(M._tt_web_presets_json()), options: answerJson(M._tt_web_options_json()), isa: info(),
          webgpu: !!M._tt_web_has_webgpu(), gpu: gpuInfo, gpuError: M.ttGpuError || null });
      } catch (e) {
        post({ type: 'error', where: 'init', message: 'could not load the WebAssembly module: ' + e.message });
      }
      break;
    }
    case 'start': {
      if (!(await claimOwner(!!m.steal))) { post({ type: 'error', where: 'owner', message: 'another tab holds the saved run' }); break; }
      if (sampling) sampling.stop = true;
      gen++; // the old run's last save point is never written: this run replaces it
      pendingSave = null;
      const was = run;
      run = 'idle';
      while (loopActive) await yieldNow();
      pendingSave = null;
      // the old run as it is now, put back if the new one cannot start
      let prev = null;
      if (W && was !== 'idle') {
        try { prev = await locked(() => captureRun(was)); } catch (e) { prev = null; }
      }
      post({ type: 'phase', phase: 'building the model' + (/backend=webgpu/.test(m.opts) ? ' and compiling GPU kernels' : '') });
      const o = m.opts + (variant === 'threads' ? ` threads=${threads}` : ' threads=1');
      const res = await locked(async () => {
        try { setOptions(o); } catch (e) { return { where: 'options', message: e.message }; }
        try {
          await withBytes(m.corpus, async (p, n) => check(await call('tt_web_corpus', W, p, n), 'corpus'));
        } catch (e) { return { where: 'corpus', message: e.message }; }
        startPhase = true; // until the first step: kernels may compile there too
        try {
          if (m.model) await initFromModel(m.model); // fine-tune a model folder's files (Hugging Face GPT-2)
          else if (m.initFromConfig) { // a Hugging Face folder's model.safetensors and config.json (the page's own export)
            await initFromModel({ files: { 'config.json': m.initFromConfig, 'model.safetensors': m.initFrom },
              name: m.initFromName || 'uploaded checkpoint' }, false);
          } else if (m.initFrom) { // fine-tune: a new run from an uploaded checkpoint's weights
            const name = cstr(m.initFromName || 'uploaded checkpoint');
            try { await withBytes(m.initFrom, async (p, n) => check(await call('tt_web_init_from', W, p, n, name), 'init')); }
            finally { M._free(name); }
          } else check(await call('tt_web_init', W), 'init');
        } catch (e) { startPhase = false; return { where: m.initFrom || m.model ? 'finetune' : 'train', message: e.message }; }
        runTok = runTokFiles();
        return null;
      });
      if (res) {
        post({ type: 'error', ...res });
        if (prev) await putBack(prev, res.message);
        break;
      }
      modelName = m.model ? m.model.name || 'model' : '';
      opts = o; corpusName = m.corpusName || 'corpus'; corpusBytes = m.corpus; corpusSaved = false;
      backendName = /backend=webgpu/.test(o) ? 'webgpu' : 'cpu';
      await clearSaved();
      gen++;
      autosaveOff = false;
      resetPerf();
      savedStep = 0;
      run = 'running';
      M._tt_web_hold(W, 0);
      post({ type: 'started', state: stateJson(), info: info() });
      post({ type: 'status', run });
      loop();
      break;
    }
    case 'pause':
      if (run === 'running') requestHold('paused');
      break;
    case 'resume':
      if (W && !store.isOwner() && (run === 'paused' || run === 'stopped')) { // taken over by another tab: it trains the run now
        post({ type: 'error', where: 'owner', message: 'another tab holds the saved run' });
        break;
      }
      if (W && (run === 'paused' || run === 'stopped')) {
        if (M._tt_web_step(W) >= M._tt_web_total_steps(W)) { run = 'done'; post({ type: 'status', run }); break; }
        run = 'running';
        storageFull = false;
        perf.window = [];
        M._tt_web_hold(W, 0);
        post({ type: 'status', run });
        loop();
      }
      break;
    case 'stop':
      if (run === 'running' || run === 'paused') requestHold('stopped');
      break;
    case 'more': {
      if (!W || run === 'idle') break;
      if (!store.isOwner()) { post({ type: 'error', where: 'owner', message: 'another tab holds the saved run' }); break; }
      while (loopActive) await yieldNow();
      try {
        const total = m.total !== undefined ? Number(m.total) : M._tt_web_total_steps(W) + (m.n | 0);
        if (!(total > M._tt_web_step(W))) throw new Error(`the run is at step ${M._tt_web_step(W)}: continue to a later step`);
        await locked(() => check(M._tt_web_set_steps(W, total), 'steps'));
      } catch (e) { post({ type: 'error', where: 'options', message: e.message }); break; }
      run = 'running';
      storageFull = false;
      perf.window = [];
      M._tt_web_hold(W, 0);
      post(await locked(() => snapshot()));
      post({ type: 'status', run });
      loop();
      break;
    }
    case 'sample':
      sample(m);
      break;
    case 'inspect':
      inspect(m);
      break;
    case 'sampleStop':
      if (sampling) sampling.stop = true;
      break;
    case 'download': {
      try {
        const r = await locked(async () => ({ bytes: await checkpointBytes(), st: stateJson() }));
        const tok = runTok || {};
        if (Object.keys(tok).length) { // a BPE run: its run folder (checkpoint + tokenizer files), as `tinytrain train` writes it
          const dir = `tinytrain-${modelTag(r.st)}-step${r.st.step}`;
          const bytes = await zipFolder(dir, { 'checkpoint.safetensors': r.bytes, ...tok });
          post({ type: 'checkpoint', bytes, name: `${dir}-run.zip`, files: ['checkpoint.safetensors', ...Object.keys(tok)] }, [bytes.buffer]);
        } else post({ type: 'checkpoint', bytes: r.bytes, name: `tinytrain-${r.st.preset}-step${r.st.step}.safetensors` }, [r.bytes.buffer]);
      } catch (e) { post({ type: 'error', where: 'checkpoint', message: e.message }); }
      break;
    }
    case 'exportAdapter':
    case 'exportHf': {
      const adapter = m.type === 'exportAdapter';
      try {
        const r = await locked(async () => {
          await checkpointBytes(); // the weights on the host: the export reads them there
          const n = adapter ? M._tt_web_export_adapter(W) : M._tt_web_export_hf(W);
          if (n < 0) throw new Error(err());
          const files = {};
          for (let i = 0; i < n; i++) {
            const p = M._tt_web_hf_ptr(W, i);
            files[readCString(M._tt_web_hf_name(W, i))] = heap().slice(p, p + M._tt_web_hf_len(W, i));
          }
          return { files, st: stateJson() };
        });
        const dir = `tinytrain-${modelTag(r.st)}-step${r.st.step}${adapter ? '-adapter' : ''}`;
        const bytes = await zipFolder(dir, r.files);
        post({ type: adapter ? 'adapterZip' : 'hfZip', bytes, name: `${dir}${adapter ? '' : '-hf'}.zip`, files: Object.keys(r.files) },
          [bytes.buffer]);
      } catch (e) {
        post({ type: 'error', where: 'checkpoint', message: (adapter ? 'adapter export: ' : 'Hugging Face export: ') + e.message });
      }
      break;
    }
    case 'upload': {
      if (!(await claimOwner(!!m.steal))) { post({ type: 'error', where: 'owner', message: 'another tab holds the saved run' }); break; }
      if (run === 'running') requestHold('paused');
      while (loopActive) await yieldNow();
      await writeSave();
      let st;
      try {
        st = await locked(async () => {
          if (m.corpus) {
            await withBytes(m.corpus, async (p, n) => check(await call('tt_web_corpus', W, p, n), 'corpus'));
          }
          // the run options the engine builds the loaded run with: this worker's backend and threads
          setOptions(`backend=${variant === 'gpu' ? 'webgpu' : 'cpu'}` + (variant === 'threads' ? ` threads=${threads}` : ' threads=1'));
          const folder = await runZip(m.bytes);
          if (folder) await loadRunFolder(folder.ckpt, folder.tok, m.force);
          else await withBytes(m.bytes, async (p, n) => check(await call('tt_web_load', W, p, n, m.force ? 1 : 0), 'checkpoint'));
          runTok = runTokFiles();
          modelName = folder ? folder.name : '';
          return stateJson();
        });
      } catch (e) {
        const err = { type: 'error', where: 'checkpoint', message: e.message, mismatch: e.code === 7 };
        if (err.mismatch) { // which text the checkpoint expects and which was chosen, as the engine identifies texts
          const want = query({ what: 'checkpointInfo', bytes: m.bytes });
          err.want = want.error ? null : { bytes: want.corpus_bytes, hash: want.corpus_hash };
          err.chosen = query({ what: 'textInfo', bytes: m.corpus || corpusBytes });
        }
        post(err);
        post({ type: 'status', run });
        break;
      }
      if (m.corpus) { corpusBytes = m.corpus; corpusName = m.corpusName || corpusName; }
      opts = (presetNames.includes(st.preset) ? `preset=${st.preset} ` : '') + `layers=${st.layers} d-model=${st['d-model']} heads=${st.heads} ctx=${st.ctx} batch=${st.batch}` +
        ` steps=${st.steps} seed=${st.seed}` + (variant === 'threads' ? ` threads=${threads}` : ' threads=1') +
        (variant === 'gpu' ? ' backend=webgpu' : '');
      backendName = variant === 'gpu' ? 'webgpu' : 'cpu';
      corpusSaved = false;
      savedStep = 0;
      resetPerf();
      run = st.step >= st.steps ? 'done' : 'paused';
      post({ type: 'started', state: st, info: info(), loaded: true });
      await clearSaved();
      gen++;
      autosaveOff = false;
      try {
        const bytes = await locked(() => checkpointBytes());
        await writeAutosave({ bytes, step: st.step, loss: M._tt_web_loss(W), status: run }, true);
      } catch (e) { post({ type: 'error', where: 'autosave', message: 'autosave failed: ' + e.message }); }
      post({ type: 'status', run });
      break;
    }
    case 'restore': {
      // a takeover: the owner saves its current state first (it answers with the step), then the lock is stolen
      const handed = m.steal && !store.isOwner() ? await store.askHandover(10000) : null;
      if (!(await claimOwner(!!m.steal))) {
        post({ type: 'restored', found: false, busy: true });
        store.waitOwnerFree(onOwnerFree);
        break;
      }
      try {
        const r = await restore();
        post({ type: 'restored', ...r, tookOver: !!m.steal, handedStep: handed ? handed.step : null });
        if (r.found) post({ type: 'status', run });
      } catch (e) {
        post({ type: 'restored', found: false, message: e.message });
      }
      break;
    }
    case 'runfileRead': // a run file's JSON -> runfile {opts} (the options it gives), or error where 'runfile'
    case 'runfileWrite': { // options text -> runfileText {text}: the same options as a run file
      try {
        const text = await locked(() => runfileCall(m));
        post(m.type === 'runfileRead' ? { type: 'runfile', opts: text } : { type: 'runfileText', text });
      } catch (e) { post({ type: 'error', where: 'runfile', message: e.message }); }
      break;
    }
    case 'clearSaved': {
      // Forget: the saved run goes, and this run is not autosaved again
      // (a later pause or the loop's next save point would bring it back)
      if (!store.isOwner() && !(await claimOwner(false))) { post({ type: 'cleared', removed: false, notOwner: true }); break; }
      gen++;
      pendingSave = null;
      autosaveOff = !!W && run !== 'idle';
      const removed = await clearSaved();
      post({ type: 'cleared', removed, autosaveOff });
      break;
    }
    case 'autosaveOn': // undo a Forget for the run in memory: the next save point writes again
      autosaveOff = false;
      lastWrite = { at: 0, step: -1 };
      if (run === 'paused' || run === 'stopped' || run === 'done') {
        try {
          const bytes = await locked(() => checkpointBytes());
          await writeAutosave({ bytes, step: M._tt_web_step(W), loss: M._tt_web_loss(W), status: run }, true);
        } catch (e) { post({ type: 'error', where: 'autosave', message: 'autosave failed: ' + e.message }); }
      }
      break;
    case 'bench':
      await bench(m);
      break;
    case 'query': // {id, what, ...}: the engine's answer about a setup -> answer {id, result}
      try {
        post({ type: 'answer', id: m.id, result: query(m) });
      } catch (e) { post({ type: 'answer', id: m.id, result: { error: e.message } }); }
      break;
    default:
      post({ type: 'error', where: 'protocol', message: 'unknown message ' + m.type });
  }
}

self.onmessage = (e) => { onMessage(e.data); };
