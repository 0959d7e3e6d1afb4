// app.js — the page side of the tinytrain web app: capability detection,
// backend choice, the controls, the live chart and stats, sampling output,
// checkpoint download/upload, restoring the autosaved run, and the in-page
// benchmark. All training happens in worker.js (a dedicated module Worker);
// this file only sends it messages and draws what comes back.
import uPlot from './dist/uPlot.esm.js';
import { mountInspect } from './inspect.js';
import { autosaveInterval } from './autosave.js';

const $ = (id) => document.getElementById(id);
const LN256 = Math.log(256);
const STORE = 'tinytrain.';

// ---- capabilities ------------------------------------------------------------

// Tiny hand-assembled modules: one returning a v128 (SIMD128), a shared
// memory (threads), a 64-bit memory (Memory64).
const WASM_SIMD = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 0x60, 0, 1, 0x7b, 3, 2, 1, 0, 0x0a, 0x16, 1, 0x14, 0, 0xfd, 0x0c,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0b]);
const WASM_SHARED = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 5, 4, 1, 3, 1, 1]);
const WASM_MEM64 = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 5, 3, 1, 4, 1]);

function validate(bytes) { try { return WebAssembly.validate(bytes); } catch (e) { return false; } }

async function detectCaps() {
  const caps = {
    simd: validate(WASM_SIMD),
    isolated: !!self.crossOriginIsolated,
    sab: typeof SharedArrayBuffer === 'function',
    wasmThreads: validate(WASM_SHARED),
    memory64: validate(WASM_MEM64),
    cores: navigator.hardwareConcurrency || 1,
    gpu: null,
  };
  caps.threads = caps.isolated && caps.sab && caps.wasmThreads;
  if (navigator.gpu) {
    try {
      const a = await navigator.gpu.requestAdapter({ powerPreference: 'high-performance' });
      if (a) {
        const info = a.info || (a.requestAdapterInfo ? await a.requestAdapterInfo() : {});
        const name = [info.vendor, info.architecture, info.description || info.device].filter(Boolean).join(' ') || 'WebGPU adapter';
        caps.gpu = {
          name,
          isCpu: /swiftshader|llvmpipe|lavapipe/i.test(name) || info.architecture === 'swiftshader',
          f16: a.features.has('shader-f16'),
          subgroups: a.features.has('subgroups'),
          maxBinding: a.limits.maxStorageBufferBindingSize,
          maxBuffer: a.limits.maxBufferSize,
        };
      }
    } catch (e) { caps.gpuError = e.message; }
  }
  return caps;
}

// What this browser can do, in plain words (the technical name in the tooltip).
function renderChips(caps) {
  const g = caps.gpu;
  const chips = [
    [caps.simd ? 'on' : 'off', caps.simd ? 'fast CPU math' : 'no fast CPU math', 'WebAssembly SIMD128'],
    [caps.threads ? 'on' : 'off', caps.threads ? `${caps.cores} CPU cores` : 'one CPU core',
      caps.threads ? 'WebAssembly threads' : caps.isolated ? 'WebAssembly threads are not available' :
        'threads need a cross-origin isolated page (COOP/COEP headers)'],
    [g ? (g.isCpu ? 'maybe' : 'on') : 'off', g ? (g.isCpu ? 'GPU: software only (slow)' : 'GPU available') : 'no GPU',
      g ? `WebGPU: ${g.name}${g.f16 ? ', shader-f16' : ''}${g.subgroups ? ', subgroups' : ''}` : 'no WebGPU adapter'],
    ['off', 'models up to 4 GB', 'this build has no Memory64 module: larger models train with the command-line tinytrain'],
  ];
  $('chips').innerHTML = '';
  for (const [cls, text, title] of chips) {
    const s = document.createElement('span');
    s.className = 'chip ' + cls;
    s.textContent = text;
    s.title = title;
    $('chips').appendChild(s);
  }
}

// ---- formatting ----------------------------------------------------------------

const fmtInt = (n) => Math.round(n).toLocaleString('en-US');
function fmtBytes(b) {
  const u = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  while (b >= 1024 && i < u.length - 1) { b /= 1024; i++; }
  return (i ? b.toFixed(b < 10 ? 1 : 0) : b) + ' ' + u[i];
}
function fmtParams(n) {
  if (n >= 1e9) return (n / 1e9).toFixed(2) + 'B';
  if (n >= 1e6) return (n / 1e6).toFixed(n >= 1e7 ? 1 : 2) + 'M';
  if (n >= 1e3) return (n / 1e3).toFixed(1) + 'K';
  return String(n);
}
function fmtTime(s) {
  if (s == null || !isFinite(s)) return '–';
  s = Math.max(0, s);
  if (s < 60) return s.toFixed(s < 10 ? 1 : 0) + ' s';
  const m = Math.floor(s / 60), r = Math.round(s % 60);
  if (m < 60) return `${m}m ${String(r).padStart(2, '0')}s`;
  const h = Math.floor(m / 60);
  return `${h}h ${String(m % 60).padStart(2, '0')}m`;
}
const fmtLoss = (x) => (x == null || !isFinite(x) ? '–' : x.toFixed(4));
// Bits per byte of a loss in nats per byte (the model reads bytes): 8 is a
// uniform guess over 256 values, good English text models reach about 1.
export function bpb(loss) { return loss / Math.LN2; }
const fmtBpb = (x) => (x == null || !isFinite(x) ? '–' : bpb(x).toFixed(3));
function fmtRate(x) {
  if (!x || !isFinite(x)) return '–';
  if (x >= 1e6) return (x / 1e6).toFixed(2) + 'M';
  if (x >= 1e4) return (x / 1e3).toFixed(1) + 'K';
  return Math.round(x).toLocaleString('en-US');
}

// ---- state ---------------------------------------------------------------------

const ui = {
  caps: null,
  presets: [],
  worker: null,
  workerVariant: '',
  ready: null,
  run: 'idle',
  corpusTab: 'bundled',
  uploadText: null,   // { name, bytes }
  bundled: null,      // Uint8Array
  chart: null,
  data: { x: [], loss: [], smooth: [], val: [], base: [] },
  valMap: new Map(),
  total: 0,
  sampling: false,
  runVariant: '',
};

// Engine variants: 'threads' (WASM SIMD + threads), 'single' (WASM SIMD, one
// thread), 'gpu' (WebGPU through the browser device layer). Auto picks WebGPU
// on a real GPU (a software adapter such as SwiftShader is slower than WASM),
// else threads when the page is cross-origin isolated, else one thread — the
// CLI's --backend auto makes the same choice.
function autoVariant() {
  const c = ui.caps;
  if (c.gpu && !c.gpu.isCpu && ui.gpuEngine) return 'gpu';
  return c.threads ? 'threads' : 'single';
}
function variantForChoice(choice) {
  const c = ui.caps;
  if (choice === 'single') return 'single';
  if (choice === 'threads') return c.threads ? 'threads' : 'single';
  if (choice === 'webgpu') return c.gpu && ui.gpuEngine ? 'gpu' : autoVariant();
  return autoVariant();
}
function backendChoice() { return document.querySelector('input[name=backend]:checked').value; }
function engineBackend(choice) { return variantForChoice(choice) === 'gpu' ? 'webgpu' : 'cpu'; }

function threadCount() { return Math.max(1, Math.min(ui.caps.cores || 1, 16)); }

// ---- worker --------------------------------------------------------------------

function startWorker(variant) {
  if (ui.worker && ui.workerVariant === variant) return ui.ready;
  if (ui.worker) ui.worker.terminate();
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
  w.addEventListener('message', (e) => onWorker(e.data));
  w.addEventListener('error', (e) => showError('The training worker failed: ' + (e.message || 'unknown error')));
  w.postMessage({ type: 'init', variant, threads: variant === 'threads' ? threadCount() : 1 });
  return ui.ready;
}

function onWorker(m) {
  switch (m.type) {
    case 'ready':
      break;
    case 'runfile':
    case 'runfileText':
      onRunfile(m);
      break;
    case 'started':
      onStarted(m);
      break;
    case 'progress':
      onProgress(m);
      break;
    case 'status':
      setRun(m.run);
      break;
    case 'phase':
      if (ui.run !== 'starting' && ui.run !== 'running') break;
      ui.phase = m.phase;
      renderPhase();
      break;
    case 'saved':
      ui.hasSaved = true;
      $('ckptStatus').className = 'status';
      $('ckptStatus').textContent = `Autosaved step ${fmtInt(m.step)} in this browser (${fmtBytes(m.bytes)})` +
        (m.nextIn && ui.run === 'running' && m.step < ui.total ? ` · next in about ${fmtTime(m.nextIn)}.` : '.');
      break;
    case 'cleared':
      onCleared(m);
      break;
    case 'ownerLost':
      showBanner('Another tab took over this run: training here stopped, and this tab no longer saves it. ' +
        'Continue in the other tab, or reload this one to take it back.', 'warn');
      ui.notOwner = true;
      break;
    case 'checkpoint': {
      saveBlob(m.bytes, m.name, 'application/octet-stream');
      setStatus('ckptStatus', `Downloaded ${m.name} (${fmtBytes(m.bytes.byteLength)}).`, 'ok');
      break;
    }
    case 'hfZip': {
      saveBlob(m.bytes, m.name, 'application/zip');
      setStatus('ckptStatus', `Downloaded ${m.name} (${fmtBytes(m.bytes.byteLength)}): unzip it, then ` +
        'AutoModelForCausalLM.from_pretrained(folder) and AutoTokenizer.from_pretrained(folder) load it in transformers.', 'ok');
      break;
    }
    case 'sampleStart':
      $('sampleOut').innerHTML = '';
      { const p = document.createElement('span'); p.className = 'prompt'; p.textContent = m.prompt; $('sampleOut').appendChild(p); }
      ui.sampleText = document.createTextNode('');
      $('sampleOut').appendChild(ui.sampleText);
      { const c = document.createElement('span'); c.className = 'cursor'; $('sampleOut').appendChild(c); ui.cursor = c; }
      break;
    case 'token':
      if (ui.sampleText) ui.sampleText.appendData(m.text);
      $('sampleRate').textContent = `${fmtInt(m.n)} tokens · ${m.tokPerSec.toFixed(0)} tok/s`;
      $('sampleOut').scrollTop = $('sampleOut').scrollHeight;
      break;
    case 'sampleDone':
      ui.sampling = false;
      if (ui.cursor) { ui.cursor.remove(); ui.cursor = null; }
      $('sampleRate').textContent = `${fmtInt(m.n)} tokens · ${m.tokPerSec.toFixed(0)} tok/s${m.stopped ? ' (stopped)' : ''}`;
      updateButtons();
      break;
    case 'restored':
      onRestored(m);
      break;
    case 'error':
      onWorkerError(m);
      break;
    case 'log':
      if (m.err) console.warn('[engine]', m.text); else console.log('[engine]', m.text);
      break;
  }
}

function onWorkerError(m) {
  if (m.where === 'corpus') { setStatus('corpusStatus', m.message, 'error'); setRun(ui.run === 'starting' ? 'idle' : ui.run); return; }
  if (m.where === 'owner') {
    if (ui.run === 'starting') setRun('idle');
    ui.notOwner = true;
    showError('Another tab has the saved run open. Take it over there, or close that tab, then try again.');
    return;
  }
  if (m.where === 'checkpoint') {
    const e = checkpointError(m);
    setStatus('ckptStatus', e.text, 'error', e.detail);
    if (m.mismatch) ui.forceNextUpload = true;
    return;
  }
  if (m.where === 'runfile') { setStatus('runfileStatus', m.message, 'error'); return; }
  if (m.where === 'finetune') {
    if (ui.run === 'starting') setRun('idle');
    setStatus('ftStatus', 'Could not fine-tune from that model.', 'error', m.message);
    return;
  }
  if (m.where === 'inspect') return; // said in the Look inside card (inspect.js)
  if (m.where === 'sample') { ui.sampling = false; setStatus('sampleRate', m.message, 'error'); updateButtons(); return; }
  if (m.where === 'options' || m.where === 'train') { if (ui.run === 'starting') setRun('idle'); }
  const warm = m.where === 'options' && /warmup \((\d+)\) must not exceed steps/.exec(m.message);
  if (warm) { showError(`Train at least ${warm[1]} steps in all: the first ${warm[1]} warm the learning rate up.`); return; }
  // an autosave that failed stays said next to the checkpoint buttons until the next one succeeds
  if (m.where === 'autosave') { setStatus('ckptStatus', m.message, 'error', m.detail); if (!m.storageFull) return; }
  showError(m.message);
}

// ---- controls -------------------------------------------------------------------

// A status line; `detail` (the technical text) goes one click away, in a <details>.
function setStatus(id, text, cls, detail) {
  const el = $(id);
  el.textContent = text;
  el.className = (id === 'sampleRate' ? 'hint' : 'status') + (cls ? ' ' + cls : '');
  if (detail) {
    const d = document.createElement('details');
    d.className = 'detail';
    const s = document.createElement('summary');
    s.textContent = 'details';
    const pre = document.createElement('code');
    pre.textContent = detail;
    d.append(s, pre);
    el.appendChild(d);
  }
}

function showBanner(text, cls, action) {
  const b = $('banner');
  b.hidden = false;
  b.className = 'banner' + (cls ? ' ' + cls : '');
  b.textContent = text;
  if (action) {
    const btn = document.createElement('button');
    btn.type = 'button';
    btn.id = action.id;
    btn.textContent = action.label;
    btn.addEventListener('click', action.onClick);
    b.append(' ', btn);
  }
}
function hideBanner() { $('banner').hidden = true; $('banner').textContent = ''; }

// A question before anything is discarded: resolves true for OK. One at a
// time; the dialog is modal (Escape cancels).
// Hands bytes to the browser as a download named name.
function saveBlob(bytes, name, type) {
  const url = URL.createObjectURL(new Blob([bytes], { type }));
  const a = document.createElement('a');
  a.href = url; a.download = name;
  document.body.appendChild(a); a.click(); a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

function ask(text, ok = 'Continue', cancel = 'Cancel') {
  const d = $('askDlg');
  $('askText').textContent = text;
  $('askOk').textContent = ok;
  $('askCancel').textContent = cancel;
  return new Promise((resolve) => {
    const done = (v) => { d.removeEventListener('close', onClose); if (d.open) d.close(); resolve(v); };
    const onClose = () => done(d.returnValue === 'ok');
    d.returnValue = '';
    d.addEventListener('close', onClose);
    d.showModal();
    $('askOk').focus();
  });
}

const hasRun = () => ['running', 'paused', 'stopped', 'done'].includes(ui.run);

// ---- "notify me when the run ends": a system notification (the tab may be in the background) ----

const NOTIFY_KEY = 'tinytrain.notify';

async function setNotify(on) {
  $('notifyNote').textContent = '';
  if (on && !('Notification' in window)) {
    $('notifyNote').textContent = 'This browser cannot show notifications.';
    on = false;
  } else if (on && Notification.permission !== 'granted') {
    const p = await Notification.requestPermission().catch(() => 'denied');
    if (p !== 'granted') {
      $('notifyNote').textContent = 'Notifications are blocked for this page: allow them in the browser\'s site settings.';
      on = false;
    }
  }
  $('notifyDone').checked = on;
  try { localStorage.setItem(NOTIFY_KEY, on ? '1' : '0'); } catch (e) { /* private mode: this page only */ }
}

function notifyDone() {
  if (!$('notifyDone').checked || !('Notification' in window) || Notification.permission !== 'granted') return;
  const d = ui.data, n = d.loss.length;
  const val = d.val.filter((v) => Number.isFinite(v)).pop();
  const body = `${runSummary()} · loss ${n ? d.loss[n - 1].toFixed(3) : '–'}` + (val !== undefined ? ` · validation ${val.toFixed(3)}` : '');
  try { new Notification('tinytrain: training finished', { body, tag: 'tinytrain-run' }); } catch (e) { /* a browser that only notifies from a service worker */ }
}
function runSummary() {
  const st = ui.runState;
  const step = ui.lastStep != null ? ui.lastStep : (st ? st.step : 0);
  return st ? `${st.preset}, step ${fmtInt(step)} of ${fmtInt(ui.total || st.steps)}` : 'the current run';
}

let toastTimer = 0;
function showError(msg, info) {
  const t = $('toast');
  t.textContent = msg;
  t.className = 'toast' + (info ? ' info' : '');
  t.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { t.hidden = true; }, 7000);
}

function setRun(run) {
  const was = ui.run;
  ui.run = run;
  if (run === 'done' && was === 'running') notifyDone();
  ui.pending = null; // a pause or stop asked for has arrived (or been overtaken)
  if (run !== 'starting') { clearInterval(ui.phaseTimer); ui.phaseTimer = 0; ui.phase = ''; }
  renderPhase();
  updateButtons();
  renderSetupNote();
}

// The pill says what is happening now: the run's state, a pause or stop on
// its way, or the phase of a run being set up with its elapsed time.
function renderPhase() {
  const pill = $('runPill');
  let text = ui.run, cls = ui.run;
  if (ui.pending) { text = ui.pending; cls = 'starting'; }
  else if (ui.run === 'starting') {
    const secs = ui.startAt ? (performance.now() - ui.startAt) / 1000 : 0;
    text = `starting: ${ui.phase || 'loading the engine'} · ${fmtTime(secs)}`;
  } else if (ui.run === 'running' && ui.phase && !ui.lastStep) text = `running · ${ui.phase}`; // before the first step
  pill.textContent = text;
  pill.className = 'pill ' + cls;
  $('cancelStartBtn').hidden = ui.run !== 'starting';
}

function updateButtons() {
  const r = ui.run;
  const have = hasRun();
  $('trainBtn').disabled = r === 'starting';
  $('trainBtn').textContent = have ? 'New run' : 'Train';
  $('pauseBtn').disabled = !(r === 'running' || r === 'paused' || r === 'stopped') || !!ui.pending;
  $('pauseBtn').textContent = r === 'paused' || r === 'stopped' ? 'Resume' : 'Pause';
  $('stopBtn').disabled = !(r === 'running' || r === 'paused') || !!ui.pending;
  $('moreBtn').disabled = !(r === 'paused' || r === 'stopped' || r === 'done');
  $('downloadBtn').disabled = !have;
  $('hfBtn').disabled = !have;
  $('sampleBtn').disabled = !have || ui.sampling;
  $('sampleStopBtn').disabled = !ui.sampling;
}

function requestRun(kind) {
  if (!ui.worker) return;
  if (kind === 'pause' || kind === 'stop') {
    ui.pending = kind === 'pause' ? 'pausing…' : 'stopping…';
    renderPhase();
    updateButtons();
  }
  ui.worker.postMessage({ type: kind });
}

function presetByName(n) { return ui.presets.find((p) => p.name === n); }

// GFLOP/s for the time estimate: measured by earlier runs in this browser
// (remembered per engine), else a modest guess.
// A measured speed (the probe, or a finished run) for an engine variant:
// { gflops, startS } or null.
function measuredSpeed(variant) {
  const v = parseFloat(localStorage.getItem(STORE + 'gflops.' + variant));
  if (!(v > 0)) return null;
  return { gflops: v, startS: parseFloat(localStorage.getItem(STORE + 'start.' + variant)) || 0 };
}
function gflopsGuess(variant) {
  const v = parseFloat(localStorage.getItem(STORE + 'gflops.' + variant));
  if (v > 0) return v;
  if (variant === 'gpu') return ui.caps.gpu && ui.caps.gpu.isCpu ? 0.3 : 40;
  return variant === 'threads' ? 2.5 * Math.min(threadCount(), 8) * 0.7 : 2.5;
}

// ---- the model's shape -----------------------------------------------------------
// A preset, or a custom shape (layers, width, heads, context) in the Shape
// fields. Sizes as the engine counts them (src/config.c: parameters, train
// bytes, step FLOPs), so a custom shape is estimated like a preset.
const SHAPE_KEYS = [['layers', 'layers'], ['dmodel', 'd-model'], ['heads', 'heads'], ['ctx', 'ctx']];
function shapeOf(p) { return { layers: p.layers, 'd-model': p['d-model'], heads: p.heads, ctx: p.ctx, batch: p.batch }; }
function paramCount(c) {
  const C = c['d-model'], L = c.layers;
  return 256 * C + c.ctx * C + L * (12 * C * C + 13 * C) + 2 * C;
}
function trainBytes(c, batch) {
  const P = paramCount(c), BT = batch * c.ctx, C = c['d-model'], L = c.layers;
  let act = L * BT * (20 * C + 4) + BT * (2 * C + 2 * 256 + 4);
  act += 3 * BT * 4 * C + 16 * C * C;
  return 16 * P + 4 * act;
}
function stepFlops(c, batch) {
  const C = c['d-model'], L = c.layers, T = c.ctx;
  return 6 * (L * 12 * C * C + 256 * C) * batch * T + 6 * L * batch * T * T * C;
}
// The shape the setup asks for: the preset's, with any custom field that differs.
function chosenShape() {
  const p = presetByName($('preset').value);
  const c = shapeOf(p);
  for (const [id, key] of SHAPE_KEYS) {
    const v = Number($(id).value);
    if (Number.isInteger(v) && v > 0) c[key] = v;
  }
  return c;
}
function isCustom(c, p) { return SHAPE_KEYS.some(([, k]) => c[k] !== p[k]); }
function fillShape(p) { for (const [id, key] of SHAPE_KEYS) $(id).value = p[key]; }

// Host memory of a run: the CPU engine holds weights, gradients, both AdamW
// moments and activations; the WebGPU engine keeps only weights + moments on
// the host (its device memory is checked against the adapter: gpuRefusal).
function memoryNeed(c, batch, variant) {
  if (variant === 'gpu') return paramCount(c) * 12 + 64 * 2 ** 20;
  return trainBytes(c, batch);
}
const WASM_LIMIT = 3.5 * 2 ** 30;

// The WebGPU adapter's limits against the run's device memory: the largest
// single buffer (the weights, or an activation of (B, T, 4C), or the
// attention scores (B, heads, T, T)) must fit maxBufferSize and a binding
// maxStorageBufferBindingSize; a software adapter (SwiftShader, lavapipe)
// draws on the host's memory, counted like wasm. null when it fits.
function gpuRefusal(c, batch) {
  const g = ui.caps.gpu;
  if (!g) return null;
  const total = trainBytes(c, batch);
  const biggest = Math.max(paramCount(c) * 4, batch * c.ctx * 4 * c['d-model'] * 4, batch * c.heads * c.ctx * c.ctx * 4);
  const maxBuf = g.maxBuffer || Infinity, maxBind = g.maxBinding || Infinity;
  if (biggest > maxBuf)
    return `This model needs a GPU buffer of ${fmtBytes(biggest)}; this GPU allows at most ${fmtBytes(maxBuf)} per buffer. ` +
      'Pick a smaller size or batch, or use WebAssembly.';
  if (biggest > 8 * maxBind)
    return `This model needs ${fmtBytes(biggest)} in one place; this GPU binds at most ${fmtBytes(maxBind)} at a time. Pick a smaller size or batch.`;
  if (g.isCpu && total > WASM_LIMIT)
    return `This model needs about ${fmtBytes(total)} of GPU memory; ${g.name} is a software GPU that would use this computer's memory ` +
      'and take hours per step. Pick a smaller size, or use a real GPU.';
  return null;
}

// What to expect from a size, in words.
function expectation(params) {
  if (params < 200e3) return 'learns spelling and short words in a minute or two';
  if (params < 3e6) return 'word-like text after a few thousand steps';
  if (params < 30e6) return 'phrases after long training; slow in a browser';
  return 'a big model: hours per thousand steps here, the CLI is faster';
}

function renderPresetInfo() {
  const p = presetByName($('preset').value);
  if (!p) return;
  const c = chosenShape();
  const batch = Math.max(1, parseInt($('batch').value, 10) || p.batch);
  const steps = Math.max(1, parseInt($('steps').value, 10) || 1);
  const flops = stepFlops(c, batch);
  const choice = backendChoice();
  const variant = variantForChoice(choice);
  const bytes = memoryNeed(c, batch, variant);
  const speed = measuredSpeed(variant);
  const secs = steps * flops / ((speed ? speed.gflops : gflopsGuess(variant)) * 1e9) + (speed ? speed.startS || 0 : 0);
  const tooBig = bytes > WASM_LIMIT;
  const gpuBad = variant === 'gpu' ? gpuRefusal(c, batch) : null;
  const params = paramCount(c);
  $('presetInfo').innerHTML = '';
  const cells = [
    ['parameters', fmtParams(params)],
    ['memory', fmtBytes(bytes), tooBig ? 'warn' : ''],
    ['est. time', tooBig ? 'too big for the browser: use the CLI' : gpuBad ? 'too big for this GPU' :
      '≈ ' + fmtTime(secs) + (speed ? ' (measured)' : ' (rough guess)'), tooBig || gpuBad ? 'warn' : ''],
    ['shape', `${c.layers} layers × ${c['d-model']} wide, ${c.heads} heads, context ${c.ctx}` + (isCustom(c, p) ? ' (custom)' : '')],
    ['expect', expectation(params)],
  ];
  for (const [k, v, cls] of cells) {
    const d = document.createElement('div');
    d.innerHTML = `<span class="k">${k}</span><span class="v ${cls || ''}"></span>`;
    d.querySelector('.v').textContent = v;
    $('presetInfo').appendChild(d);
  }
  $('presetInfo').title = `${c.layers} layers · d_model ${c['d-model']} · ${c.heads} heads · context ${c.ctx} · batch ${batch}`;
}

function renderBackendNote() {
  const c = ui.caps;
  const choice = backendChoice();
  const notes = [];
  if (choice === 'auto') {
    const v = variantForChoice('auto');
    notes.push(`Using ${v === 'gpu' ? `WebGPU on ${c.gpu.name}` : v === 'threads' ? `WebAssembly SIMD with ${threadCount()} threads` : 'WebAssembly SIMD, one thread'}.`);
    if (v !== 'gpu' && c.gpu && c.gpu.isCpu) notes.push(`(${c.gpu.name} is a software GPU: slower than WASM, pick it by hand.)`);
  } else if (choice === 'threads' && !c.threads) {
    notes.push('Threads need a cross-origin isolated page (COOP/COEP headers); falling back to one thread.');
  } else if (choice === 'threads') {
    notes.push(`WebAssembly SIMD with ${threadCount()} threads.`);
  } else if (choice === 'single') {
    notes.push('WebAssembly SIMD on one thread.');
  } else if (choice === 'webgpu') {
    notes.push(c.gpu ? `WebGPU on ${c.gpu.name}${c.gpu.isCpu ? ' (a software adapter: correct but slow)' : ''}.` : 'No WebGPU adapter in this browser.');
  }
  if (!c.isolated) notes.push('Page is not cross-origin isolated.');
  $('backendNote').textContent = notes.join(' ');
}

function initControls() {
  const sel = $('preset');
  sel.innerHTML = '';
  // smallest first, each with its shape
  ui.presets.sort((a, b) => a.params - b.params);
  for (const p of ui.presets) {
    const o = document.createElement('option');
    o.value = p.name;
    o.textContent = `${p.name} — ${fmtParams(p.params)} params · ${p.layers}×${p['d-model']}, ctx ${p.ctx}`;
    sel.appendChild(o);
  }
  sel.value = localStorage.getItem(STORE + 'preset') || 'tiny';
  if (!presetByName(sel.value)) sel.value = 'tiny';
  const sizeDefaults = () => {
    const p = presetByName(sel.value);
    $('batch').value = p.batch;
    fillShape(p);
    if (p.lr > 0) $('lr').value = Number(p.lr.toPrecision(3)); // the CLI's default for this size
  };
  sizeDefaults();
  ui.presetShown = sel.value;
  sel.addEventListener('change', async () => {
    if (sel.value === ui.presetShown) return;
    // a run in memory stays until New run; say so before the setup moves on
    if (hasRun() && !ui.setupIsNext) {
      const ok = await ask(`The current run (${runSummary()}) stays as it is until you press New run, which replaces it. ` +
        'Set up the next run with this size?', 'Set up next run');
      if (!ok) { sel.value = ui.presetShown; return; }
    }
    ui.presetShown = sel.value;
    localStorage.setItem(STORE + 'preset', sel.value);
    ui.runfileOpts = ''; // another size: the loaded run file's model no longer applies
    sizeDefaults();
    markSetupNext();
    renderPresetInfo();
  });
  for (const id of ['steps', 'batch', 'layers', 'dmodel', 'heads', 'ctx']) $(id).addEventListener('input', renderPresetInfo);
  for (const id of ['steps', 'lr', 'batch', 'seed', 'layers', 'dmodel', 'heads', 'ctx']) {
    $(id).addEventListener('input', markSetupNext);
    $(id).addEventListener('change', writeHash);
  }
  sel.addEventListener('change', writeHash);
  $('shareBtn').addEventListener('click', shareLink);
  $('probeBtn').addEventListener('click', probeSpeed);
  $('guideClose').addEventListener('click', () => { localStorage.setItem(STORE + 'guided', '1'); $('guide').hidden = true; });
  if (!localStorage.getItem(STORE + 'guided')) $('guide').hidden = false;
  initRunfileControls();
  for (const r of document.querySelectorAll('input[name=backend]')) {
    r.addEventListener('change', () => { renderBackendNote(); renderPresetInfo(); writeHash(); });
  }
  // WebGPU: selectable once the engine reports a browser GPU backend
  const gpuRadio = document.querySelector('input[name=backend][value=webgpu]');
  gpuRadio.disabled = !(ui.caps.gpu && ui.gpuEngine);
  gpuRadio.parentElement.title = !ui.caps.gpu ? 'No WebGPU adapter in this browser' : ui.caps.gpu.name;
  if (!ui.caps.threads) {
    const t = document.querySelector('input[name=backend][value=threads]');
    t.disabled = true;
    t.parentElement.title = 'Needs a cross-origin isolated page (COOP/COEP)';
  }

  initTabs();
  $('moreN').addEventListener('input', () => { ui.moreEdited = true; });
  $('corpusUrlBtn').addEventListener('click', fetchCorpusUrl);
  $('corpusUrl').addEventListener('keydown', (e) => { if (e.key === 'Enter') fetchCorpusUrl(); });
  $('corpusFile').addEventListener('change', () => readCorpusFile($('corpusFile').files[0]));
  const drop = $('drop');
  drop.addEventListener('dragover', (e) => { e.preventDefault(); drop.classList.add('over'); });
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  drop.addEventListener('drop', (e) => { e.preventDefault(); drop.classList.remove('over'); readCorpusFile(e.dataTransfer.files[0]); });
  $('corpusText').addEventListener('input', describeCorpus);

  $('trainBtn').addEventListener('click', startTraining);
  $('cancelStartBtn').addEventListener('click', cancelStart);
  $('pauseBtn').addEventListener('click', () => requestRun(ui.run === 'paused' || ui.run === 'stopped' ? 'resume' : 'pause'));
  $('stopBtn').addEventListener('click', () => requestRun('stop'));
  $('notifyDone').addEventListener('change', () => setNotify($('notifyDone').checked));
  if (localStorage.getItem(NOTIFY_KEY) === '1' && 'Notification' in window && Notification.permission === 'granted') $('notifyDone').checked = true;
  $('moreBtn').addEventListener('click', () => {
    const total = Number($('moreN').value);
    const at = ui.lastStep || 0;
    if (!(Number.isInteger(total) && total > at)) { showError(`Continue to a whole number of steps past the current step (${fmtInt(at)}).`); return; }
    ui.worker.postMessage({ type: 'more', total });
  });
  $('downloadBtn').addEventListener('click', () => ui.worker && ui.worker.postMessage({ type: 'download' }));
  $('hfBtn').addEventListener('click', () => ui.worker && ui.worker.postMessage({ type: 'exportHf' }));
  $('ckptFile').addEventListener('change', uploadCheckpoint);
  $('ftFile').addEventListener('change', chooseInitFrom);
  $('ftClear').addEventListener('click', () => setInitFrom(null));
  $('forgetBtn').addEventListener('click', forgetSaved);
  $('sampleBtn').addEventListener('click', startSampling);
  $('sampleStopBtn').addEventListener('click', () => ui.worker && ui.worker.postMessage({ type: 'sampleStop' }));
  $('prompt').addEventListener('keydown', (e) => { if (e.key === 'Enter' && !$('sampleBtn').disabled) startSampling(); });
  $('benchBtn').addEventListener('click', runBenchmark);
  $('benchCancelBtn').addEventListener('click', () => { ui.benchCancelled = true; if (ui.benchCancel) ui.benchCancel(); });
}

// ---- shareable link ----------------------------------------------------------------
// The setup as the page's URL hash (#preset=tiny&steps=300&…): opening the
// link restores it. Only settings: no text, no weights.
const HASH_FIELDS = ['steps', 'lr', 'batch', 'seed'];
function writeHash() {
  const q = new URLSearchParams();
  q.set('preset', $('preset').value);
  for (const id of HASH_FIELDS) q.set(id, $(id).value);
  const p = presetByName($('preset').value);
  const c = chosenShape();
  if (p && isCustom(c, p)) for (const [id, key] of SHAPE_KEYS) q.set(key, c[key]);
  q.set('backend', backendChoice());
  history.replaceState(null, '', '#' + q.toString());
}
function readHash() {
  if (location.hash.length < 2) return false;
  const q = new URLSearchParams(location.hash.slice(1));
  if (q.has('preset') && presetByName(q.get('preset'))) {
    $('preset').value = q.get('preset');
    ui.presetShown = q.get('preset');
    fillShape(presetByName(q.get('preset')));
    $('batch').value = presetByName(q.get('preset')).batch;
  }
  for (const id of HASH_FIELDS) if (q.has(id) && q.get(id) !== '' && isFinite(Number(q.get(id)))) $(id).value = q.get(id);
  for (const [id, key] of SHAPE_KEYS) if (q.has(key) && Number(q.get(key)) > 0) { $(id).value = q.get(key); $('shapeBox').open = true; }
  const b = q.get('backend');
  const r = b && document.querySelector(`input[name=backend][value="${CSS.escape(b)}"]`);
  if (r && !r.disabled) r.checked = true;
  return true;
}
async function shareLink() {
  writeHash();
  try {
    await navigator.clipboard.writeText(location.href);
    setStatus('shareStatus', 'Link copied: it opens this page with these settings.', 'ok');
  } catch (e) {
    setStatus('shareStatus', 'Copy this link: ' + location.href);
  }
}

// ---- speed probe -------------------------------------------------------------------
// A few steps of the chosen size on the chosen engine, in a Worker of its
// own: the time estimate then uses the measured speed (and start-up time).
async function probeSpeed() {
  const p = presetByName($('preset').value);
  const variant = variantForChoice(backendChoice());
  const b = { variant, backend: variant === 'gpu' ? 'webgpu' : 'cpu' };
  $('probeBtn').disabled = true;
  setStatus('probeStatus', 'Measuring a few steps…');
  const t0 = performance.now();
  let first = 0;
  try {
    const corpus = await bundledCorpus();
    await runBenchWorker(b, [p.name], 2, corpus.slice(), (row) => {
      first = (performance.now() - t0) / 1000;
      const g = p.step_flops / (row.ms / 1000) / 1e9;
      localStorage.setItem(STORE + 'gflops.' + variant, g.toFixed(3));
      // start-up: what the probe took beyond its three steps
      localStorage.setItem(STORE + 'start.' + variant, Math.max(0, first - 3 * row.ms / 1000).toFixed(1));
    });
    setStatus('probeStatus', `Measured: ${fmtTime(first)} for the first steps.`, 'ok');
  } catch (e) {
    setStatus('probeStatus', 'Could not measure: ' + e.message, 'error');
  } finally { $('probeBtn').disabled = false; renderPresetInfo(); }
}

// ---- corpus -----------------------------------------------------------------------

// The training-text tabs follow the ARIA tabs pattern: one tab in the Tab
// order (the selected one), arrow keys / Home / End move between tabs and
// select them, aria-selected says which.
function selectTab(b, focus) {
  const tabs = [...document.querySelectorAll('.tabs [role=tab]')];
  ui.corpusTab = b.dataset.tab;
  for (const x of tabs) {
    const on = x === b;
    x.classList.toggle('active', on);
    x.setAttribute('aria-selected', on ? 'true' : 'false');
    x.tabIndex = on ? 0 : -1;
  }
  for (const p of document.querySelectorAll('.tabpanel')) p.hidden = p.dataset.panel !== ui.corpusTab;
  if (focus) b.focus();
  describeCorpus();
}
function initTabs() {
  const tabs = [...document.querySelectorAll('.tabs [role=tab]')];
  for (const b of tabs) {
    b.addEventListener('click', () => selectTab(b, false));
    b.addEventListener('keydown', (e) => {
      const i = tabs.indexOf(b);
      const to = { ArrowRight: i + 1, ArrowDown: i + 1, ArrowLeft: i - 1, ArrowUp: i - 1, Home: 0, End: tabs.length - 1 }[e.key];
      if (to === undefined) return;
      e.preventDefault();
      selectTab(tabs[(to + tabs.length) % tabs.length], true);
    });
  }
}

// Text from a URL, fetched by the page (the site must allow it: CORS).
async function fetchCorpusUrl() {
  const u = $('corpusUrl').value.trim();
  let url;
  try { url = new URL(u, location.href); } catch (e) { setStatus('corpusStatus', 'That is not a web address.', 'error'); return; }
  if (!/^https?:$/.test(url.protocol)) { setStatus('corpusStatus', 'Give an http:// or https:// address.', 'error'); return; }
  setStatus('corpusStatus', `Fetching ${url.href}…`);
  $('corpusUrlBtn').disabled = true;
  try {
    const r = await fetch(url.href, { mode: 'cors' });
    if (!r.ok) throw Object.assign(new Error(`the server answered ${r.status} ${r.statusText}`), { user: `Could not fetch the text (HTTP ${r.status}).` });
    const n = Number(r.headers.get('content-length') || 0);
    if (n > 512 * 2 ** 20) throw Object.assign(new Error(`${n} bytes`), { user: 'That file is larger than the 512 MB the browser trainer takes.' });
    const bytes = new Uint8Array(await r.arrayBuffer());
    const name = decodeURIComponent(url.pathname.split('/').pop() || url.host);
    ui.urlText = { name, url: url.href, bytes };
    describeCorpus();
  } catch (e) {
    ui.urlText = null;
    setStatus('corpusStatus', e.user || 'Could not fetch the text: the address is unreachable, or the site does not allow other pages to read it (CORS).',
      'error', e.message);
  } finally { $('corpusUrlBtn').disabled = false; }
}

async function bundledCorpus() {
  if (!ui.bundled) {
    const r = await fetch('dist/corpus.txt');
    if (!r.ok) throw new Error('the bundled sample text is missing (dist/corpus.txt: HTTP ' + r.status + ')');
    ui.bundled = new Uint8Array(await r.arrayBuffer());
  }
  return ui.bundled;
}

async function readCorpusFile(f) {
  if (!f) return;
  if (f.size > 512 * 2 ** 20) { setStatus('corpusStatus', `${f.name} is ${fmtBytes(f.size)}; the browser trainer takes up to 512 MB.`, 'error'); return; }
  ui.uploadText = { name: f.name, bytes: new Uint8Array(await f.arrayBuffer()) };
  describeCorpus();
}

// Cheap checks here; the engine validates again (binary, too short) and its
// message is shown the same way.
function precheck(bytes) {
  if (!bytes || bytes.length === 0) return 'The text is empty.';
  let nul = 0;
  for (let i = 0; i < Math.min(bytes.length, 65536); i++) if (bytes[i] === 0) nul++;
  if (nul) return 'This looks like a binary file (it contains NUL bytes); give plain text.';
  return null;
}

function describeCorpus() {
  let text = '', cls = '';
  if (ui.corpusTab === 'bundled') text = ui.bundled ? `fortunes sample · ${fmtBytes(ui.bundled.length)}` : 'fortunes sample';
  else if (ui.corpusTab === 'upload') {
    if (!ui.uploadText) text = 'No file chosen yet.';
    else {
      const e = precheck(ui.uploadText.bytes);
      text = e || `${ui.uploadText.name} · ${fmtBytes(ui.uploadText.bytes.length)}`;
      cls = e ? 'error' : '';
    }
  } else if (ui.corpusTab === 'url') {
    if (!ui.urlText) text = 'No text fetched yet.';
    else {
      const e = precheck(ui.urlText.bytes);
      text = e || `${ui.urlText.name} · ${fmtBytes(ui.urlText.bytes.length)} from ${new URL(ui.urlText.url).host}`;
      cls = e ? 'error' : '';
    }
  } else {
    const n = new TextEncoder().encode($('corpusText').value).length;
    text = n ? `${fmtBytes(n)} of pasted text` : 'Nothing pasted yet.';
  }
  setStatus('corpusStatus', text, cls);
}

async function currentCorpus() {
  if (ui.corpusTab === 'bundled') return { name: 'fortunes sample', bytes: await bundledCorpus() };
  if (ui.corpusTab === 'upload') {
    if (!ui.uploadText) throw new Error('Choose a text file first.');
    return { name: ui.uploadText.name, bytes: ui.uploadText.bytes };
  }
  if (ui.corpusTab === 'url') {
    if (!ui.urlText) throw new Error('Fetch a text from an address first.');
    return { name: ui.urlText.url, bytes: ui.urlText.bytes };
  }
  return { name: 'pasted text', bytes: new TextEncoder().encode($('corpusText').value) };
}

// ---- run files, dropout, LoRA (issue 12) ------------------------------------------------
// A run file is the JSON of `tinytrain train --config`; the worker reads and
// writes it through the engine's own C code (src/train/runfile.c via
// tt_web_runfile_read / _write), so the browser and the CLI accept the same files.

// What the loaded run file gives beyond the form's fields (its model shape,
// optimizer settings...), as name=value text put before the form's options.
function runfileOptions() { return ui.runfileOpts ? ui.runfileOpts + ' ' : ''; }

function regularisationOptions() {
  const d = Number($('dropout').value);
  if (!(d >= 0 && d < 1)) throw new Error('Dropout must be a number in [0, 1).');
  let s = ` dropout=${d}`;
  if ($('loraOn').checked) s += ` lora-rank=${readInt('loraRank', 1, 4096, 'LoRA rank')}`;
  return s;
}

function initRunfileControls() {
  $('loraOn').addEventListener('change', () => { $('loraRank').disabled = !$('loraOn').checked; });
  $('runFile').addEventListener('change', async () => {
    const f = $('runFile').files[0];
    $('runFile').value = '';
    if (!f) return;
    if (f.size > 1 << 20) { setStatus('runfileStatus', `${f.name}: a run file is at most 1 MB.`, 'error'); return; }
    ui.runfileName = f.name;
    ui.worker.postMessage({ type: 'runfileRead', name: f.name, text: await f.text() });
  });
  $('runSaveBtn').addEventListener('click', () => {
    let opts;
    try { opts = formOptions(); } catch (e) { setStatus('runfileStatus', e.message, 'error'); return; }
    ui.worker.postMessage({ type: 'runfileWrite', opts });
  });
}

function onRunfile(m) {
  if (m.type === 'runfileText') { // Save: the resolved options as a file
    const a = document.createElement('a');
    a.href = URL.createObjectURL(new Blob([m.text], { type: 'application/json' }));
    a.download = 'tinytrain-run.json';
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 10000);
    setStatus('runfileStatus', 'Saved tinytrain-run.json (train it with: tinytrain train --config tinytrain-run.json).', 'ok');
    return;
  }
  // Load: the form shows what the file sets; the rest of it goes with the next run
  const given = Object.fromEntries(m.opts.split(' ').filter(Boolean).map((kv) => kv.split('=')));
  if (given.preset && presetByName(given.preset)) { $('preset').value = given.preset; $('preset').dispatchEvent(new Event('change')); }
  const fields = { steps: 'steps', lr: 'lr', batch: 'batch', seed: 'seed', dropout: 'dropout' };
  for (const [k, id] of Object.entries(fields)) if (given[k] !== undefined) $(id).value = given[k];
  if (given['lora-rank'] !== undefined) {
    $('loraOn').checked = Number(given['lora-rank']) > 0;
    if ($('loraOn').checked) $('loraRank').value = given['lora-rank'];
    $('loraRank').disabled = !$('loraOn').checked;
  }
  ui.runfileOpts = m.opts;
  renderPresetInfo();
  setStatus('runfileStatus', `Loaded ${ui.runfileName || 'the run file'}: the next run uses its options.`, 'ok');
}

// ---- training --------------------------------------------------------------------------

function readInt(id, lo, hi, what) {
  const v = Number($(id).value);
  if (!Number.isInteger(v) || v < lo || v > hi) throw new Error(`${what} must be a whole number between ${lo} and ${hi}.`);
  return v;
}

// The engine options (name=value) of the setup form; throws a user-facing message.
function formOptions() {
  const steps = readInt('steps', 1, 1e9, 'Steps');
  const batch = readInt('batch', 1, 4096, 'Batch');
  const seed = readInt('seed', 0, 2 ** 53 - 1, 'Seed');
  const lr = Number($('lr').value);
  if (!(lr > 0 && lr <= 1)) throw new Error('Learning rate must be a number in (0, 1].');
  // the page's eval cadence, then the loaded run file, then the form's fields (filled from the file)
  return `eval-every=${Math.max(10, Math.round(steps / 25))} ` + runfileOptions() +
    `preset=${$('preset').value} steps=${steps} lr=${lr} batch=${batch} seed=${seed} backend=${engineBackend(backendChoice())}` +
    regularisationOptions();
}

async function startTraining() {
  let corpus, opts;
  try {
    const batch = readInt('batch', 1, 4096, 'Batch');
    const choice = backendChoice();
    const pr = presetByName($('preset').value);
    const form = chosenShape();
    if (form['d-model'] % form.heads) throw new Error(`Width (${form['d-model']}) must be a multiple of heads (${form.heads}).`);
    opts = formOptions();
    if (isCustom(form, pr)) opts += ` layers=${form.layers} d-model=${form['d-model']} heads=${form.heads} ctx=${form.ctx}`;
    // a fine-tune has the shape of the model it starts from: size that one
    const c = ui.initFrom && ui.initFrom.shape ? { ...form, ...ui.initFrom.shape } : form;
    // the engine's timed save points no more often than the autosave writes them
    opts += ` save-seconds=${Math.ceil(autosaveInterval(paramCount(c) * 12))}`;
    const variant = variantForChoice(choice);
    const need = memoryNeed(c, batch, variant);
    if (need > WASM_LIMIT)
      throw new Error(`This model needs about ${fmtBytes(need)} of memory; a browser page can use at most 4 GB. ` +
        'Pick a smaller size or batch, or train it with the command-line tinytrain.');
    const gpuBad = variant === 'gpu' ? gpuRefusal(c, batch) : null;
    if (gpuBad) throw new Error(gpuBad);
  } catch (e) { showError(e.message); return; }
  try {
    corpus = await currentCorpus();
  } catch (e) { setStatus('corpusStatus', e.message, 'error'); return; }
  const bad = precheck(corpus.bytes);
  if (bad) { setStatus('corpusStatus', bad, 'error'); return; }
  describeCorpus();
  if (hasRun() && !(await ask(`Start a new run? The current run (${runSummary()}) is discarded, and its autosave in this browser ` +
    'is removed. Download its checkpoint first to keep it.', 'Discard and start new'))) return;
  let steal = false;
  if (ui.notOwner) {
    if (!(await ask('Another tab has the saved run open. Starting here replaces that run; the other tab stops training.', 'Take over and start'))) return;
    steal = true;
  }
  clearRunView();
  // one column (a phone): bring the run's card into view
  if (matchMedia('(max-width: 960px)').matches) $('h-progress').scrollIntoView({ block: 'start' });
  ui.startAt = performance.now();
  setRun('starting');
  ui.phaseTimer = setInterval(renderPhase, 500);
  const variant = variantForChoice(backendChoice());
  try {
    await startWorker(variant);
  } catch (e) { setRun('idle'); showError(e.message); return; }
  if (ui.run !== 'starting') return; // cancelled while the engine loaded
  ui.runVariant = variant;
  rememberText(corpus.bytes, corpus.name);
  ui.startMsg = { type: 'start', opts, corpus: corpus.bytes.slice(), corpusName: corpus.name, steal };
  if (ui.initFrom) { // fine-tune: this run starts from the chosen model's weights (once)
    ui.startMsg.initFrom = ui.initFrom.bytes;
    ui.startMsg.initFromName = ui.initFrom.name;
    setInitFrom(null);
  }
  ui.worker.postMessage(ui.startMsg);
  ui.notOwner = false;
}

// What the last run left on screen: banner, rates, sample text, statuses.
function clearRunView() {
  hideBanner();
  for (const id of ['stStep', 'stLoss', 'stVal', 'stTok', 'stElapsed', 'stEta', 'stBpb', 'stValBpb']) if ($(id)) $(id).textContent = '–';
  $('bar').style.width = '0%';
  $('sampleOut').textContent = '';
  setStatus('sampleRate', '');
  setStatus('ckptStatus', '');
  $('engineInfo').textContent = '';
  ui.lastStep = 0;
  resetChart(null);
}

// Cancel while a run is being set up (loading the engine, building the
// model, compiling GPU kernels: one call the engine cannot interrupt): the
// Worker is ended and a fresh one loaded; a saved run, which the new run had
// not replaced yet, is restored again.
async function cancelStart() {
  if (ui.run !== 'starting') return;
  // the engine that last loaded (the one being loaded may be what hangs)
  const variant = ui.readyVariant || ui.workerVariant;
  if (ui.worker) ui.worker.terminate();
  ui.worker = null;
  setRun('idle');
  setStatus('ckptStatus', 'Start cancelled.');
  try { await startWorker(variant); } catch (e) { showError(e.message); return; }
  if (await readSavedMeta()) ui.worker.postMessage({ type: 'restore' });
}

// Forget: remove the saved run from this browser; the run in memory is not
// autosaved again (until "Autosave again").
async function forgetSaved() {
  if (!ui.worker) return;
  const meta = await readSavedMeta();
  if (meta && !(await ask(`Remove the saved run (${meta.opts.match(/preset=(\S+)/)?.[1] || 'run'}, step ${fmtInt(meta.step)}) from this browser?` +
    (hasRun() ? ' The run on screen stays, but is no longer autosaved.' : ''), 'Remove'))) return;
  ui.worker.postMessage({ type: 'clearSaved' });
}

function onCleared(m) {
  if (m.notOwner) { setStatus('ckptStatus', 'The saved run belongs to another tab: forget it there.', 'error'); return; }
  ui.hasSaved = false;
  const text = m.removed ? 'The saved run was removed from this browser.' : 'Nothing is saved in this browser.';
  if (!m.autosaveOff) { setStatus('ckptStatus', text); return; }
  setStatus('ckptStatus', text + ' This run is no longer autosaved: download it to keep it. ');
  const b = document.createElement('button');
  b.type = 'button'; b.className = 'link'; b.id = 'autosaveOnBtn'; b.textContent = 'Autosave again';
  b.addEventListener('click', () => { ui.worker.postMessage({ type: 'autosaveOn' }); setStatus('ckptStatus', 'Autosave is on again.'); });
  $('ckptStatus').appendChild(b);
}

// The setup panel shows the current run's settings after it starts or is
// restored; once changed it is the next run's, and says so.
function renderSetupNote() {
  const el = $('setupNote');
  if (!el) return;
  if (!hasRun() && ui.run !== 'starting') { el.textContent = 'Settings for a new run.'; el.className = 'hint'; return; }
  el.textContent = ui.setupIsNext ? `Settings for the NEXT run (press New run). The current run keeps its own: ${runSummary()}.`
    : 'Settings of the current run. Change any to set up the next one.';
  el.className = ui.setupIsNext ? 'hint warn' : 'hint';
}
// The shortest decimal that is the same float32 (the engine keeps lr as a float).
function shortestF32(x) {
  for (let p = 1; p <= 9; p++) {
    const y = Number(x.toPrecision(p));
    if (Math.fround(y) === Math.fround(x)) return y;
  }
  return x;
}
function markSetupNext() {
  if (!hasRun()) return;
  ui.setupIsNext = true;
  renderSetupNote();
}
function showRunSettings(st) {
  if (presetByName(st.preset)) { $('preset').value = st.preset; ui.presetShown = st.preset; }
  $('steps').value = st.steps;
  $('batch').value = st.batch;
  fillShape(st);
  $('seed').value = st.seed;
  if (st.lr > 0) $('lr').value = shortestF32(st.lr);
  ui.setupIsNext = false;
  renderPresetInfo();
  renderSetupNote();
}

function resetChart(state) {
  const d = ui.data;
  d.x = []; d.loss = []; d.smooth = []; d.val = []; d.base = [];
  ui.valMap = new Map();
  if (state) {
    for (const [s, l] of state.val) ui.valMap.set(s, l);
    state.loss.forEach((l, i) => pushPoint(i + 1, l));
  }
  ui.total = state ? state.steps : 0;
  drawChart();
}

function pushPoint(step, loss) {
  const d = ui.data;
  d.x.push(step); d.loss.push(loss); d.smooth.push(loss);
  d.val.push(ui.valMap.has(step) ? ui.valMap.get(step) : null);
  d.base.push(LN256);
}

// Smoothed train loss: an exponential moving average whose span grows with
// the run (about 1/40 of the steps shown), debiased at the start, so short
// runs are not drawn lagging behind their own points.
function smooth() {
  const d = ui.data, n = d.loss.length;
  const span = Math.max(1, Math.min(200, n / 40));
  const a = 1 - 2 / (span + 1);
  let m = 0, w = 0;
  for (let i = 0; i < n; i++) {
    m = a * m + (1 - a) * d.loss[i];
    w = a * w + (1 - a);
    d.smooth[i] = m / w;
  }
}

function onStarted(m) {
  const st = m.state;
  ui.runState = st;
  ui.lastStep = st.step;
  resetChart(st);
  showRunSettings(st);
  $('engineInfo').textContent = `${st.preset}: ${fmtParams(st.params)} params · ${st.layers}×${st['d-model']}, ${st.heads} heads, ctx ${st.ctx}, batch ${st.batch} · ${m.info}`;
  if (m.loaded) setStatus('ckptStatus', `Loaded a checkpoint at step ${fmtInt(st.step)}. Continue training, or Generate.`, 'ok');
  setContinueTarget(st.steps, st.step);
  updateStats({ step: st.step, total: st.steps, loss: st.loss.length ? st.loss[st.loss.length - 1] : NaN, val: st.val.length ? st.val[st.val.length - 1][1] : NaN });
}

function onProgress(m) {
  for (const [s, l] of m.vals) {
    ui.valMap.set(s, l);
    const i = ui.data.x.lastIndexOf(s);
    if (i >= 0) ui.data.val[i] = l;
  }
  for (const [s, l] of m.losses) {
    pushPoint(s, l);
  }
  // validation after the last pushed point
  for (const [s, l] of m.vals) {
    const i = ui.data.x.lastIndexOf(s);
    if (i >= 0) ui.data.val[i] = l;
  }
  ui.total = m.total;
  ui.lastStep = m.step;
  if (ui.phase && m.step > 0) { ui.phase = ''; renderPhase(); }
  if (m.run !== 'running') setContinueTarget(m.total, m.step);
  updateStats(m);
  if (m.losses.length || m.vals.length) drawChart();
  if (m.run === 'done' || m.run === 'paused' || m.run === 'stopped') rememberSpeed(m);
}

// "Continue to N steps": the field holds a total, at least one step past now.
function setContinueTarget(total, step) {
  const want = Math.max(total, step) + Math.max(100, Math.round(Math.max(total, 1) / 2));
  if (!ui.moreEdited || !(Number($('moreN').value) > step)) $('moreN').value = want;
}

function rememberSpeed(m) {
  const st = ui.runState;
  if (!st || !m.stepsPerSec) return;
  const g = stepFlops(shapeOf(st), st.batch) * m.stepsPerSec / 1e9;
  if (g > 0 && isFinite(g)) localStorage.setItem(STORE + 'gflops.' + ui.runVariant, g.toFixed(3));
}

function updateStats(m) {
  $('stStep').textContent = `${fmtInt(m.step)} / ${fmtInt(m.total)}`;
  $('stLoss').textContent = fmtLoss(m.loss);
  $('stBpb').textContent = fmtBpb(m.loss);
  $('stVal').textContent = fmtLoss(m.val);
  $('stValBpb').textContent = fmtBpb(m.val);
  if (m.tokPerSec !== undefined) $('stTok').textContent = fmtRate(m.tokPerSec);
  if (m.elapsed !== undefined) $('stElapsed').textContent = fmtTime(m.elapsed);
  $('stEta').textContent = m.step >= m.total ? 'done' : (m.run === 'running' ? fmtTime(m.eta) : '–');
  $('bar').style.width = (m.total ? (100 * m.step) / m.total : 0).toFixed(2) + '%';
}

const STEP_INCRS = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1e3, 2e3, 2500, 5e3, 1e4, 2e4, 25e3, 5e4, 1e5, 2e5, 25e4, 5e5, 1e6];

function chartSize(el, h) {
  return { width: Math.max(280, el.clientWidth), height: h };
}

function drawChart() {
  const el = $('chart');
  const d = ui.data;
  smooth();
  const data = [d.x, d.loss, d.smooth, d.val, d.base];
  if (!ui.chart) {
    const css = getComputedStyle(document.documentElement);
    const muted = css.getPropertyValue('--muted').trim() || '#8d97b5';
    const grid = 'rgba(141,151,181,0.12)';
    const axis = { stroke: muted, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
    ui.chart = new uPlot({
      ...chartSize(el, 300),
      scales: { x: { time: false, range: (u, lo, hi) => [Math.floor(lo ?? 0), Math.max(Math.ceil(hi ?? 1), Math.floor(lo ?? 0) + 1)] },
        y: { auto: true } },
      // whole steps on the x axis, however few points
      axes: [{ ...axis, label: 'step', incrs: STEP_INCRS, values: (u, v) => v.map((x) => fmtInt(x)) },
        { ...axis, label: 'loss (nats)', size: 60 }],
      legend: { live: true },
      cursor: { drag: { x: true, y: false } },
      series: [
        { label: 'step' },
        { label: 'train', stroke: 'rgba(97,224,193,0.35)', width: 1, points: { show: false }, value: (u, v) => fmtLoss(v) },
        { label: 'train (smoothed)', stroke: '#61e0c1', width: 2, points: { show: false }, value: (u, v) => fmtLoss(v) },
        { label: 'validation', stroke: '#8b7cf6', width: 2, spanGaps: true, points: { show: true, size: 6, fill: '#8b7cf6' }, value: (u, v) => fmtLoss(v) },
        { label: 'ln 256 (uniform)', stroke: '#f5b14c', width: 1, dash: [6, 6], points: { show: false }, value: () => LN256.toFixed(3) },
      ],
    }, data, el);
    new ResizeObserver(() => ui.chart.setSize(chartSize(el, 300))).observe(el);
  } else {
    ui.chart.setData(data);
  }
}

// ---- restore ---------------------------------------------------------------------------

async function readSavedMeta() {
  try {
    const root = await navigator.storage.getDirectory();
    const dir = await root.getDirectoryHandle('tinytrain');
    const fh = await dir.getFileHandle('meta.json');
    return JSON.parse(await (await fh.getFile()).text());
  } catch (e) { return null; }
}

function onRestored(m) {
  if (!m.found) {
    if (m.busy) {
      ui.notOwner = true;
      showBanner('Your saved run is open in another tab. One tab trains it at a time.', 'warn',
        { id: 'takeOverBtn', label: 'Take over here', onClick: takeOver });
    } else if (m.message) setStatus('ckptStatus', 'Could not restore the saved run: ' + m.message, 'error');
    setRun('idle');
    return;
  }
  ui.notOwner = false;
  ui.hasSaved = true;
  onStarted({ state: m.state, info: m.info });
  const st = m.state;
  updateStats({ step: st.step, total: st.steps, loss: m.meta.loss, val: st.val.length ? st.val[st.val.length - 1][1] : NaN, elapsed: m.meta.elapsed });
  showBanner(`Restored your run from this browser: ${st.preset}, step ${fmtInt(st.step)} of ${fmtInt(st.steps)}` +
    (m.meta.status === 'running' ? ' — continuing.' : '.'));
  if (m.meta.corpusName) setStatus('corpusStatus', `Run trained on: ${m.meta.corpusName}`);
  if (m.meta.status === 'running') ui.worker.postMessage({ type: 'resume' });
}

// Takes the saved run over from the tab that has it open: that tab stops.
async function takeOver() {
  hideBanner();
  const meta = await readSavedMeta();
  let variant = ui.workerVariant;
  if (meta && meta.variant === 'threads' && ui.caps.threads) variant = 'threads';
  else if (meta && meta.variant === 'single') variant = 'single';
  try { await startWorker(variant); } catch (e) { showError(e.message); return; }
  ui.runVariant = variant;
  ui.worker.postMessage({ type: 'restore', steal: true });
}

// ---- checkpoints ------------------------------------------------------------------------

// FNV-1a 64 of bytes as 16 hex digits: the engine's text hash (src/train/data.c),
// in 16-bit limbs (no BigInt in the loop).
export function textHash(bytes) {
  let a0 = 0x2325, a1 = 0x8422, a2 = 0x9ce4, a3 = 0xcbf2;
  for (let i = 0; i < bytes.length; i++) {
    a0 ^= bytes[i];
    // h * (2^40 + 0x1b3)
    let t0 = a0 * 0x1b3, t1 = a1 * 0x1b3, t2 = a2 * 0x1b3 + ((a0 & 0xff) << 8), t3 = a3 * 0x1b3 + (a0 >> 8) + ((a1 & 0xff) << 8);
    t1 += t0 >>> 16; t2 += t1 >>> 16; t3 += t2 >>> 16;
    a0 = t0 & 0xffff; a1 = t1 & 0xffff; a2 = t2 & 0xffff; a3 = t3 & 0xffff;
  }
  return [a3, a2, a1, a0].map((x) => x.toString(16).padStart(4, '0')).join('');
}

// The names of texts this browser trained on, by size and hash, so a
// checkpoint can say which text it expects.
function rememberText(bytes, name) {
  try {
    const known = JSON.parse(localStorage.getItem(STORE + 'texts') || '{}');
    known[`${bytes.length}:${textHash(bytes)}`] = name;
    const keys = Object.keys(known);
    for (const k of keys.slice(0, Math.max(0, keys.length - 50))) delete known[k];
    localStorage.setItem(STORE + 'texts', JSON.stringify(known));
  } catch (e) { /* storage off: names are a nicety */ }
}
function textName(bytes, hash) {
  if (ui.bundled && ui.bundled.length === bytes && textHash(ui.bundled) === hash) return 'the built-in fortunes sample';
  try { return JSON.parse(localStorage.getItem(STORE + 'texts') || '{}')[`${bytes}:${hash}`] || null; } catch (e) { return null; }
}

// The text a .safetensors checkpoint was trained on, from its header
// (corpus_bytes, corpus_hash); null when the header cannot be read.
function checkpointText(bytes) {
  try {
    const n = Number(new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true));
    if (!(n > 0 && n <= bytes.length - 8)) return null;
    const md = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n))).__metadata__;
    if (!md || md.corpus_bytes === undefined) return null;
    return { bytes: Number(md.corpus_bytes), hash: BigInt(md.corpus_hash).toString(16).padStart(16, '0'), preset: md.preset || '' };
  } catch (e) { return null; }
}

// A failed checkpoint load in a user's words; the engine's own text one click away.
function checkpointError(m) {
  const up = ui.upload || {};
  if (m.mismatch && up.want) {
    const want = up.want;
    const name = textName(want.bytes, want.hash);
    const chosen = up.corpus;
    return {
      text: `${up.name} was trained on ${name ? name + ' — ' : 'another text: '}${fmtInt(want.bytes)} bytes, hash ${want.hash}. ` +
        `The chosen text (${chosen.name}) is ${fmtInt(chosen.bytes)} bytes, hash ${chosen.hash}. ` +
        'Choose the text it was trained on and load it again, or load it again to go on with the chosen text.',
      detail: m.message,
    };
  }
  if (m.mismatch) return { text: `${up.name || 'The checkpoint'} was trained on another text. Load it again to use the chosen text anyway.`, detail: m.message };
  if (/out of memory/i.test(m.message)) return { text: `${up.name || 'The checkpoint'} is too large for the memory this page can use.`, detail: m.message };
  return { text: `${up.name || 'This file'} is not a tinytrain checkpoint, or it is damaged (cut short or changed). ` +
    'Use a .safetensors file saved by tinytrain (Download, or the CLI).', detail: m.message };
}

// ---- fine-tuning: the next run starts from a trained model's weights ----------------------

// model: {name, bytes} or null. The next Train starts from its weights with a
// fresh optimizer and schedule, on the chosen text and options (the model's
// shape is the checkpoint's; with LoRA on, its weights stay frozen).
function setInitFrom(model) {
  ui.initFrom = model;
  $('ftClear').hidden = !model;
  setStatus('ftStatus', model ? `The next run fine-tunes ${model.name}: its weights, a fresh optimizer, the text and ` +
    'options chosen here (its own shape).' : '');
}

async function chooseInitFrom() {
  const f = $('ftFile').files[0];
  $('ftFile').value = '';
  if (!f) return;
  let bytes;
  try { bytes = new Uint8Array(await f.arrayBuffer()); } catch (e) { setStatus('ftStatus', 'Could not read the file: ' + e.message, 'error'); return; }
  if (bytes.length < 16) { setStatus('ftStatus', `${f.name} is not a tinytrain checkpoint: it is only ${bytes.length} bytes long.`, 'error'); return; }
  setInitFrom({ name: f.name, bytes, shape: safetensorsShape(bytes) });
}

// The model shape a .safetensors file records (a tinytrain checkpoint's
// "config", an export's "tinytrain_config" metadata), or null: the page sizes
// a fine-tune by the model it starts from, not by the form (the engine
// validates the file itself).
export function safetensorsShape(bytes) {
  try {
    const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const n = Number(dv.getBigUint64(0, true));
    if (!(n > 0 && 8 + n <= bytes.length && n < 1e8)) return null;
    const meta = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n))).__metadata__ || {};
    const cfg = JSON.parse(meta.config || meta.tinytrain_config || 'null');
    const shape = {};
    for (const k of ['layers', 'd-model', 'heads', 'ctx']) {
      if (!(Number.isInteger(cfg[k]) && cfg[k] > 0)) return null;
      shape[k] = cfg[k];
    }
    return shape;
  } catch (e) { return null; }
}

async function uploadCheckpoint() {
  const f = $('ckptFile').files[0];
  $('ckptFile').value = '';
  if (!f) return;
  let bytes;
  try {
    bytes = new Uint8Array(await f.arrayBuffer());
  } catch (e) { setStatus('ckptStatus', 'Could not read the file: ' + e.message, 'error'); return; }
  if (bytes.length < 16) {
    setStatus('ckptStatus', `${f.name} is not a tinytrain checkpoint: it is only ${bytes.length} bytes long.`, 'error');
    return;
  }
  if (hasRun() && !ui.forceNextUpload && !(await ask(`Load ${f.name}? It replaces the current run (${runSummary()}) and its autosave. ` +
    'Download the current run first to keep it.', 'Load checkpoint'))) return;
  const steal = !!ui.notOwner;
  if (steal && !(await ask(`Another tab has the saved run open. Loading ${f.name} here replaces that run; the other tab stops training.`,
    'Take over and load'))) return;
  let corpus;
  try { corpus = await currentCorpus(); } catch (e) { setStatus('corpusStatus', e.message, 'error'); return; }
  const bad = precheck(corpus.bytes);
  if (bad) { setStatus('corpusStatus', bad, 'error'); return; }
  // the loaded run continues on the engine chosen in Setup, as a new run would
  const variant = variantForChoice(backendChoice());
  try { await startWorker(variant); } catch (e) { showError(e.message); return; }
  ui.runVariant = variant;
  setStatus('ckptStatus', `Loading ${f.name}…`);
  const force = !!ui.forceNextUpload;
  ui.forceNextUpload = false;
  ui.upload = { name: f.name, want: checkpointText(bytes), corpus: { name: corpus.name, bytes: corpus.bytes.length, hash: textHash(corpus.bytes) } };
  ui.worker.postMessage({ type: 'upload', bytes, corpus: corpus.bytes.slice(), corpusName: corpus.name, force, steal });
  ui.notOwner = false; // the worker claims the saved run first (an 'owner' error says when it cannot)
}

// ---- sampling ----------------------------------------------------------------------------

function startSampling() {
  const temp = Number($('temp').value), topk = Number($('topk').value), topp = Number($('topp').value), len = Number($('slen').value);
  if (!(temp >= 0 && temp <= 5)) return setStatus('sampleRate', 'Temperature must be between 0 and 5.', 'error');
  if (!(Number.isInteger(topk) && topk >= 0)) return setStatus('sampleRate', 'Top-k must be a whole number ≥ 0 (0 = off).', 'error');
  if (!(topp > 0 && topp <= 1)) return setStatus('sampleRate', 'Top-p must be in (0, 1].', 'error');
  if (!(Number.isInteger(len) && len >= 1 && len <= 100000)) return setStatus('sampleRate', 'Length must be 1 to 100000 tokens.', 'error');
  ui.sampling = true;
  updateButtons();
  setStatus('sampleRate', '');
  ui.worker.postMessage({ type: 'sample', prompt: $('prompt').value, temperature: temp, topK: topk, topP: topp, length: len,
    seed: Math.floor(Math.random() * 2 ** 31) });
}

// ---- benchmark ----------------------------------------------------------------------------

// The backends the benchmark runs: a software GPU (SwiftShader, lavapipe)
// only when asked for (it takes minutes).
function benchVariants() {
  const v = [{ key: 'single', label: 'WASM 1 thread', variant: 'single', backend: 'cpu' }];
  if (ui.caps.threads) v.push({ key: 'threads', label: `WASM ${threadCount()} threads`, variant: 'threads', backend: 'cpu' });
  if (ui.caps.gpu && ui.gpuEngine && (!ui.caps.gpu.isCpu || $('benchSoft').checked))
    v.push({ key: 'webgpu', label: ui.caps.gpu.isCpu ? 'WebGPU (software)' : 'WebGPU', variant: 'gpu', backend: 'webgpu' });
  return v;
}

// Runs presets on one engine in a Worker of its own; ui.benchCancel ends it.
function runBenchWorker(b, presets, steps, corpus, onRow) {
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
    w.postMessage({ type: 'init', variant: b.variant, threads: b.variant === 'threads' ? threadCount() : 1 });
  });
}

function fmtDrift(d) {
  if (d === 0) return 'exact';
  return d < 1e-4 ? d.toExponential(1) : (d * 100).toFixed(2) + '%';
}

async function runBenchmark() {
  const presets = $('benchPresets').value.split(',');
  const steps = Math.max(2, parseInt($('benchSteps').value, 10) || 6);
  const variants = benchVariants();
  // speedups and drift are measured against multithreaded WASM SIMD (the
  // CPU path a browser user has), or single-threaded where threads are off
  const ref = variants.find((v) => v.key === 'threads') || variants[0];
  const others = variants.filter((v) => v !== ref);
  const btn = $('benchBtn');
  btn.disabled = true;
  $('benchCancelBtn').disabled = false;
  ui.benchCancelled = false;
  const results = {}; // preset -> key -> {ms, losses}
  const table = $('benchTable');
  table.hidden = false;
  table.querySelector('thead tr').innerHTML = '<th>preset</th><th>params</th>' +
    variants.map((v) => `<th>${v.label}<br><span class="hint">ms/step</span></th>`).join('') +
    others.map((v) => `<th>${v.label}<br><span class="hint">speedup · drift</span></th>`).join('');
  const draw = () => {
    const tb = table.querySelector('tbody');
    tb.innerHTML = '';
    for (const p of presets) {
      const r = results[p] || {};
      const tr = document.createElement('tr');
      const pr = presetByName(p);
      let html = `<td>${p}</td><td>${pr ? fmtParams(pr.params) : ''}</td>`;
      const ms = variants.map((v) => (r[v.key] ? r[v.key].ms : null));
      const best = Math.min(...ms.filter((x) => x != null));
      for (const x of ms) html += `<td class="${x === best ? 'best' : ''}">${x == null ? '…' : x.toFixed(x < 10 ? 2 : 1)}</td>`;
      const rr = r[ref.key];
      for (const v of others) {
        const x = r[v.key];
        if (!x || !rr) { html += '<td>…</td>'; continue; }
        let drift = 0;
        for (let i = 0; i < Math.min(x.losses.length, rr.losses.length); i++)
          drift = Math.max(drift, Math.abs(x.losses[i] - rr.losses[i]) / Math.abs(rr.losses[i]));
        html += `<td>${(rr.ms / x.ms).toFixed(2)}× · ${fmtDrift(drift)}</td>`;
      }
      tr.innerHTML = html;
      tb.appendChild(tr);
    }
    drawBenchChart(presets, ref, others, results);
  };
  draw();
  try {
    const corpus = await bundledCorpus();
    for (const [i, v] of variants.entries()) {
      if (ui.benchCancelled) throw Object.assign(new Error('cancelled'), { cancelled: true });
      setStatus('benchStatus', `Running ${v.label} (${i + 1} of ${variants.length})…`);
      await runBenchWorker(v, presets, steps, corpus.slice(), (row) => {
        results[row.preset] = results[row.preset] || {};
        results[row.preset][v.key] = { ms: row.ms, losses: row.losses };
        draw();
      });
    }
    setStatus('benchStatus', `Done: median ms per step over ${steps} steps after one warm-up step. Speedup and drift (largest relative ` +
      `loss difference, step by step, same seed and batches) are against ${ref.label}.`, 'ok');
  } catch (e) {
    if (e.cancelled) setStatus('benchStatus', 'Benchmark cancelled.');
    else setStatus('benchStatus', 'Benchmark failed: ' + e.message, 'error');
  } finally {
    btn.disabled = false;
    $('benchCancelBtn').disabled = true;
    ui.benchCancel = null;
  }
}

function drawBenchChart(presets, ref, others, results) {
  const el = $('benchChart');
  if (!others.length) { el.innerHTML = ''; return; }
  const xs = presets.map((_, i) => i);
  const series = others.map((v) => presets.map((p) => {
    const r = results[p] || {};
    return r[v.key] && r[ref.key] ? r[ref.key].ms / r[v.key].ms : null;
  }));
  const colors = ['#61e0c1', '#8b7cf6', '#f5b14c'];
  const data = [xs, ...series];
  if (ui.benchChart && ui.benchChart.series.length !== series.length + 1) { ui.benchChart.destroy(); ui.benchChart = null; }
  if (!ui.benchChart) {
    const grid = 'rgba(141,151,181,0.12)';
    const axis = { stroke: '#8d97b5', grid: { stroke: grid }, ticks: { stroke: grid } };
    ui.benchChart = new uPlot({
      width: Math.max(280, el.clientWidth), height: 220,
      scales: { x: { time: false, range: [-0.3, presets.length - 0.7] }, y: { range: (u, lo, hi) => [0, Math.max(2, (hi || 1) * 1.15)] } },
      axes: [{ ...axis, splits: () => xs, values: (u, vals) => vals.map((v) => presets[v] || '') },
        { ...axis, label: 'speedup', size: 60, values: (u, vals) => vals.map((v) => v + '×') }],
      series: [{ label: 'preset', value: (u, v) => presets[v] || '' },
        ...others.map((v, i) => ({ label: `${v.label} vs ${ref.label}`, stroke: colors[i], width: 2, points: { show: true, size: 8, fill: colors[i] },
          value: (u, x) => (x == null ? '–' : x.toFixed(2) + '×') }))],
    }, data, el);
  } else {
    ui.benchChart.setData(data);
  }
}

// ---- start --------------------------------------------------------------------------------

// Static hosts that cannot send COOP/COEP: with <html data-coi="sw"> (or
// ?coi=sw) a service worker (coi-sw.js) adds them, and one reload makes the
// page cross-origin isolated. Returns true when a reload is under way.
async function isolateWithServiceWorker() {
  const want = document.documentElement.dataset.coi === 'sw' || new URL(location.href).searchParams.get('coi') === 'sw';
  if (!want || self.crossOriginIsolated || !('serviceWorker' in navigator) || !window.isSecureContext) return false;
  try {
    await navigator.serviceWorker.register(new URL('./coi-sw.js', import.meta.url));
    await navigator.serviceWorker.ready;
    if (sessionStorage.getItem(STORE + 'coi-reload')) return false; // tried once: run without threads
    sessionStorage.setItem(STORE + 'coi-reload', '1');
    location.reload();
    return true;
  } catch (e) {
    console.warn('tinytrain: service-worker isolation failed:', e.message);
  }
  return false;
}

async function main() {
  if (await isolateWithServiceWorker()) return;
  sessionStorage.removeItem(STORE + 'coi-reload');
  ui.caps = await detectCaps();
  renderChips(ui.caps);
  window.tinytrain = ui; // for tests and the curious
  // the WebGPU engine (tinytrain_web_gpu) suspends on GPU readbacks through JSPI
  ui.gpuEngine = !!ui.caps.gpu && typeof WebAssembly.Suspending === 'function';
  // Restore the autosaved run, if any, with the engine it used.
  const meta = await readSavedMeta();
  let variant = variantForChoice('auto');
  if (meta && meta.variant === 'threads' && ui.caps.threads) variant = 'threads';
  else if (meta && meta.variant === 'gpu' && ui.caps.gpu) variant = 'gpu';
  else if (meta && meta.variant === 'single') variant = 'single';
  let ready;
  try {
    ready = await startWorker(variant);
  } catch (e) {
    showError(e.message);
    return;
  }
  ui.presets = ready.presets;
  ui.runVariant = variant;
  initControls();
  readHash();
  renderBackendNote();
  renderPresetInfo();
  describeCorpus();
  bundledCorpus().then(describeCorpus).catch((e) => setStatus('corpusStatus', e.message, 'error'));
  drawChart();
  mountInspect(ui);
  setRun('idle');
  if (meta) ui.worker.postMessage({ type: 'restore' });
  document.body.dataset.ready = '1';
}

main();
