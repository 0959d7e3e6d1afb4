// app.js — the page side of the tinytrain web app: capability detection,
// the controls and what they set going (train, pause, load, fine-tune,
// sample, benchmark), restoring the autosaved run, the shareable link and
// run files. The page's state is state.js, what it draws render.js, and
// every engine question (sizes, memory, ranges, checkpoint headers, text
// identity) goes to the engine through engine.js; all training happens in
// worker.js. This file keeps no engine formula or range: a value the engine
// refuses comes back as the engine's message.
import { mountInspect } from './inspect.js';
import { mountModel, restoreModel, chosenModel, modelPlan, modelFiles } from './model.js';
import { autosaveInterval } from './autosave.js';
import * as engine from './engine.js';
import {
  STORE, WASM_LIMIT, ui, presetByName, hasRun, autoVariant, variantForChoice, backendChoice, engineBackend, threadCount,
  variantThreads, measuredSpeed, gflopsGuess, startGuess, rememberSpeed, rememberText, knownTextName,
} from './state.js';
import {
  $, fmtInt, fmtBytes, fmtParams, fmtTime, renderChips, setStatus, showBanner, hideBanner, showError, saveBlob,
  renderPhase, updateButtons, runSummary, renderSetupNote, renderPresetInfo, resetChart, pushPoint, drawChart,
  updateStats, benchHeader, drawBench,
} from './render.js';

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
        };
      }
    } catch (e) { caps.gpuError = e.message; }
  }
  return caps;
}

// ---- the worker ----------------------------------------------------------------

function startWorker(variant) {
  return engine.startWorker(variant, variantThreads(variant), onWorker,
    (why) => showError('The training worker failed: ' + why)).then((r) => {
    if (r.gpu && !ui.engineGpu) { ui.engineGpu = r.gpu; if (ui.options) renderBackendNote(); } // the WebGPU engine's device
    return r;
  });
}

// What --precision f16 does here, in a sentence: the WebGPU engine's device
// (ui.engineGpu, its ready message: shader-f16, the subgroup-matrix
// configuration its matmuls use) once it has started, else the adapter's
// features as the page saw them.
function precisionNote(variant) {
  const g = ui.engineGpu || ui.caps.gpu;
  if (variant !== 'gpu') return 'f16 mixed precision needs the WebGPU engine: this engine refuses it (choose f32).';
  if (!g || !g.f16) return `${g ? g.name : 'This GPU'} has no f16 arithmetic for WebGPU: f16 is refused (choose f32).`;
  if (ui.engineGpu && ui.engineGpu.sgmat) return 'f16 mixed precision: matmuls and attention on the GPU\'s matrix units (tensor cores).';
  return 'f16 mixed precision: f16 operands, f32 sums' + (ui.engineGpu ? ' (this browser exposes no matrix units to WebGPU).' : '.');
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
      ui.runStartAt = m.loaded ? 0 : ui.startAt; // a new run: its start is timed (the estimate's startS)
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
      showBanner(`This run moved to another tab at step ${fmtInt(m.step)}: training here stopped, and this tab no longer saves it. ` +
        'Continue in the other tab, or take it back here (from the other tab\'s latest step).', 'warn',
        { id: 'takeBackBtn', label: 'Take it back', onClick: takeOver });
      ui.notOwner = true;
      ui.owns = false;
      ui.lostRun = true;
      break;
    case 'ownerFree': // the tab that had the saved run closed: it opens here
      if (!ui.notOwner) break;
      hideBanner();
      setTimeout(() => {
        if (ui.notOwner && ui.worker && (!hasRun() || ui.lostRun)) ui.worker.postMessage({ type: 'restore' });
      }, 1000);
      break;
    case 'checkpoint': {
      saveBlob(m.bytes, m.name, 'application/octet-stream');
      setStatus('ckptStatus', `Downloaded ${m.name} (${fmtBytes(m.bytes.byteLength)}).`, 'ok');
      break;
    }
    case 'adapterZip':
      saveBlob(m.bytes, m.name, 'application/zip');
      setStatus('ckptStatus', `Downloaded ${m.name} (${fmtBytes(m.bytes.byteLength)}): the LoRA adapters as a peft folder ` +
        '(PeftModel.from_pretrained(base, folder)).', 'ok');
      break;
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
    case 'kept':
      onKept(m);
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
  // a New run that failed on a fresh engine (another variant): the run it was to replace comes back from its autosave
  if (ui.run === 'starting' && ui.restoreOnFail && ['options', 'train', 'corpus', 'finetune'].includes(m.where)) {
    ui.restoreOnFail = false;
    ui.worker.postMessage({ type: 'restore' });
  }
  if (m.where === 'corpus') { corpusStatus(m.message, 'error'); setRun(ui.run === 'starting' ? 'idle' : ui.run); return; }
  if (m.where === 'owner') {
    if (ui.run === 'starting') setRun('idle');
    ui.notOwner = true; ui.owns = false;
    showError('Another tab has the saved run open. Take it over there, or close that tab, then try again.');
    return;
  }
  if (m.where === 'checkpoint') {
    checkpointError(m).then((e) => setStatus('ckptStatus', e.text, 'error', e.detail));
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

// A question before anything is discarded: resolves true for OK. One at a
// time; the dialog is modal (Escape cancels).
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
    $('askCancel').focus(); // the safe choice: Enter keeps things as they are
  });
}

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

function requestRun(kind) {
  if (!ui.worker) return;
  if (kind === 'pause' || kind === 'stop') {
    ui.runStartAt = 0; // no longer a straight run: its start is not timed
    ui.pending = kind === 'pause' ? 'pausing…' : 'stopping…';
    renderPhase();
    updateButtons();
  }
  ui.worker.postMessage({ type: kind });
}

// ---- the setup: options for the engine, and the engine's plan of them -------------
// A preset, or a custom shape (layers, width, heads, context) in the Shape
// fields; the other fields as typed. The engine resolves and checks them
// (its option table) and sizes the result (tt_web_plan): the page shows
// what it says, or the reason it refuses.

const SHAPE_KEYS = [['layers', 'layers'], ['dmodel', 'd-model'], ['heads', 'heads'], ['ctx', 'ctx']];
// form field -> engine option: ranges, defaults and help come from the engine's option table
const FIELD_OPTIONS = { steps: 'steps', lr: 'lr', batch: 'batch', seed: 'seed', dropout: 'dropout', loraRank: 'lora-rank',
  layers: 'layers', dmodel: 'd-model', heads: 'heads', ctx: 'ctx', precision: 'precision' };

const fieldText = (id) => $(id).value.replace(/\s+/g, '');
function fillShape(p) { for (const [id, key] of SHAPE_KEYS) $(id).value = p[key]; }
function isCustom() {
  const p = presetByName($('preset').value);
  return !!p && SHAPE_KEYS.some(([id, key]) => fieldText(id) !== String(p[key]));
}

// The form's ranges and help from the engine's option table.
function applyOptionTable() {
  for (const [id, name] of Object.entries(FIELD_OPTIONS)) {
    const o = ui.options.find((x) => x.name === name), el = $(id);
    if (!o || !el) continue;
    el.title = `${o.help} (${o.name})`;
    if (el.tagName === 'SELECT') continue;
    const whole = o.type === 'int' || o.type === 'i64' || o.type === 'u64';
    el.min = o.min;
    if (o.max != null && o.max <= Number.MAX_SAFE_INTEGER) el.max = o.max; else el.removeAttribute('max');
    if (whole) el.step = '1';
  }
}

// The engine options (name=value) of the setup form, as typed.
function formOptions() {
  const steps = Number(fieldText('steps'));
  let s = (Number.isInteger(steps) && steps > 0 ? `eval-every=${Math.max(10, Math.round(steps / 25))} ` : '') + // the page's eval cadence
    runfileOptions() + // then the loaded run file, then the form's fields (filled from the file)
    `preset=${$('preset').value} steps=${fieldText('steps')} lr=${fieldText('lr')} batch=${fieldText('batch')}` +
    ` seed=${fieldText('seed')} dropout=${fieldText('dropout')} precision=${$('precision').value}`;
  if ($('loraOn').checked) s += ` lora-rank=${fieldText('loraRank')}`;
  if (isCustom()) for (const [id, key] of SHAPE_KEYS) s += ` ${key}=${fieldText(id)}`;
  return s + ` backend=${engineBackend(backendChoice())}`;
}

// The options the engine sizes for a variant: the form's, a fine-tune's
// model (the checkpoint's shape: engine.checkpointInfo's base_opts), the
// variant's threads.
function planOptions(variant) {
  return formOptions() + (ui.initFrom ? ' ' + ui.initFrom.baseOpts : '') + ` threads=${variantThreads(variant)}`;
}

// What the page makes of the engine's plan p for a variant: the memory a run
// takes in the page (a CPU run: the CPU backend's plan and the state; a
// WebGPU run: the state on the host, its buffers on the device, which the
// engine checks against the adapter when the run is created), whether the
// page can hold it, and the time estimate.
function verdict(p, variant) {
  // no CPU plan: more than this build addresses
  const memory = variant === 'gpu' || p.train_bytes == null ? p.state_bytes : p.train_bytes;
  const tooBig = memory > WASM_LIMIT || (variant !== 'gpu' && p.train_bytes == null);
  const g = ui.caps.gpu;
  // a software GPU (SwiftShader, lavapipe) draws on this computer's memory
  const softTooBig = variant === 'gpu' && g && g.isCpu && !(p.train_bytes <= WASM_LIMIT);
  const flops = p.step_flops * p.accum; // the engine's FLOPs of one step
  const speed = measuredSpeed(variant, flops);
  const steps = Number(fieldText('steps')) || 1;
  const secs = steps * flops / ((speed ? speed.gflops : gflopsGuess(variant)) * 1e9) + (speed ? speed.startS : startGuess(variant));
  let refusal = null, message = null;
  if (tooBig) {
    refusal = 'too big for the browser: use the CLI';
    message = `This model needs about ${fmtBytes(memory)} of memory; a browser page can use at most 4 GB. ` +
      'Pick a smaller size or batch, or train it with the command-line tinytrain.';
  } else if (softTooBig) {
    refusal = 'too big for this GPU';
    message = `This model needs about ${fmtBytes(p.train_bytes || memory)} of GPU memory; ${g.name} is a software GPU that would use ` +
      'this computer\'s memory and take hours per step. Pick a smaller size, or use a real GPU.';
  }
  return { memory, tooBig, refusal, message, secs, measured: !!speed, custom: isCustom() };
}

// Asks the engine for the plan of the setup on screen and shows it. The card
// says data-pending="1" while the engine has not answered.
let planSeq = 0;
async function refreshSetup(tries = 0) {
  const seq = ++planSeq;
  $('presetInfo').dataset.pending = '1';
  const variant = variantForChoice(backendChoice());
  let p;
  try {
    p = await engine.plan(planOptions(variant));
  } catch (e) { // the engine was replaced (Cancel, another variant): ask the next one
    if (seq === planSeq && tries < 20) setTimeout(() => { if (seq === planSeq) refreshSetup(tries + 1); }, 250);
    return;
  }
  if (seq !== planSeq) return;
  ui.plan = p;
  ui.estimate = p.error ? null : verdict(p, variant);
  renderPresetInfo(p, ui.estimate);
  $('presetInfo').dataset.pending = '0';
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
  if ($('precision').value === 'f16') notes.push(precisionNote(variantForChoice(choice)));
  if (!c.isolated) notes.push('Page is not cross-origin isolated.');
  $('backendNote').textContent = notes.join(' ');
}

function initControls() {
  applyOptionTable();
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
    refreshSetup();
  });
  for (const id of ['steps', 'lr', 'batch', 'seed', 'dropout', 'loraRank', 'layers', 'dmodel', 'heads', 'ctx']) $(id).addEventListener('input', () => refreshSetup());
  $('loraOn').addEventListener('change', () => refreshSetup());
  for (const id of ['steps', 'lr', 'batch', 'seed', 'layers', 'dmodel', 'heads', 'ctx']) {
    $(id).addEventListener('input', markSetupNext);
    $(id).addEventListener('change', writeHash);
  }
  sel.addEventListener('change', writeHash);
  for (const id of ['dropout', 'loraOn', 'loraRank']) $(id).addEventListener('change', writeHash);
  $('precision').addEventListener('change', () => { renderBackendNote(); refreshSetup(); writeHash(); });
  $('shareBtn').addEventListener('click', shareLink);
  $('probeBtn').addEventListener('click', probeSpeed);
  $('guideClose').addEventListener('click', () => { localStorage.setItem(STORE + 'guided', '1'); $('guide').hidden = true; });
  if (!localStorage.getItem(STORE + 'guided')) $('guide').hidden = false;
  initRunfileControls();
  // the file pickers open with Enter as with Space (a file input opens on Space only)
  for (const id of ['runFile', 'ckptFile', 'ftFile', 'corpusFile']) {
    $(id).addEventListener('keydown', (e) => { if (e.key === 'Enter') { e.preventDefault(); $(id).click(); } });
  }
  for (const r of document.querySelectorAll('input[name=backend]')) {
    r.addEventListener('change', () => { renderBackendNote(); refreshSetup(); writeHash(); });
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
  $('pauseBtn').addEventListener('click', () => {
    const resume = ui.run === 'paused' || ui.run === 'stopped';
    if (resume && ui.notOwner) { takeOver(); return; } // the run moved to another tab: Resume takes it back
    requestRun(resume ? 'resume' : 'pause');
  });
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
  { // the LoRA adapters alone (peft folder), beside the merged Hugging Face folder
    const b = document.createElement('button');
    b.id = 'adapterBtn'; b.type = 'button'; b.disabled = true; b.textContent = 'Adapters (peft .zip)';
    b.title = 'A LoRA run\'s adapters as the folder Hugging Face peft loads — what tinytrain export --adapter writes';
    $('hfBtn').after(b);
    b.addEventListener('click', () => ui.worker && ui.worker.postMessage({ type: 'exportAdapter' }));
    new MutationObserver(() => { b.disabled = $('hfBtn').disabled; }).observe($('hfBtn'), { attributes: true, attributeFilter: ['disabled'] });
  }
  mountModel($('ftStatus').parentElement, { options: () => planOptions(ui.runVariant || 'single'), onChange: () => refreshSetup() });
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
// The setup as the page's URL hash (#preset=tiny&steps=300&lora-rank=8&…):
// opening the link restores it. Keys are the engine's option names: every
// form option that differs from what the page would show by default, the
// backend choice, and the text where it is one a link can name (text=URL;
// the built-in sample is the default). No weights, no uploaded or pasted
// text. Opening a link, the engine checks its values (tt_web_plan: the option
// table's ranges); a link it refuses is said once and the defaults stay.
const LINK_FIELDS = ['steps', 'lr', 'batch', 'seed', 'dropout'];
function formDefault(id) {
  const p = presetByName($('preset').value);
  if (id === 'batch') return p.batch;
  if (id === 'lr') return p.lr > 0 ? Number(p.lr.toPrecision(3)) : Number($(id).defaultValue);
  return Number($(id).defaultValue);
}
function writeHash() {
  const q = new URLSearchParams();
  q.set('preset', $('preset').value);
  for (const id of LINK_FIELDS) if (Number(fieldText(id)) !== formDefault(id)) q.set(FIELD_OPTIONS[id], fieldText(id));
  if ($('loraOn').checked) q.set('lora-rank', fieldText('loraRank'));
  if ($('precision').value !== 'f32') q.set('precision', $('precision').value);
  if (isCustom()) for (const [id, key] of SHAPE_KEYS) q.set(key, fieldText(id));
  if (backendChoice() !== 'auto') q.set('backend', backendChoice());
  if (ui.corpusTab === 'url' && $('corpusUrl').value.trim()) q.set('text', $('corpusUrl').value.trim());
  history.replaceState(null, '', '#' + q.toString());
}
async function readHash() {
  if (location.hash.length < 2) return false;
  const q = new URLSearchParams(location.hash.slice(1));
  const refuse = (why) => { showError(`This link's settings were not used (${why}): the page shows its defaults.`); return false; };
  const names = new Set(['preset', ...Object.values(FIELD_OPTIONS), 'backend', 'text']);
  for (const k of q.keys()) if (!names.has(k)) return refuse(`unknown setting '${k}'`);
  const b = q.get('backend');
  const radio = b && document.querySelector(`input[name=backend][value="${CSS.escape(b)}"]`);
  if (b && !radio) return refuse(`unknown backend '${b}'`);
  let text = null;
  if (q.has('text')) {
    try { text = new URL(q.get('text')); } catch (e) { /* refused below */ }
    if (!text || !/^https?:$/.test(text.protocol)) return refuse('the text is not an http(s) address');
  }
  // the engine checks every value against its option table
  const opts = [...q].filter(([k]) => k !== 'backend' && k !== 'text').map(([k, v]) => `${k}=${v.replace(/\s+/g, '')}`).join(' ');
  const p = await engine.plan(opts).catch((e) => ({ error: e.message }));
  if (p.error) return refuse(p.error);
  if (q.has('preset')) {
    $('preset').value = q.get('preset');
    ui.presetShown = q.get('preset');
    const pr = presetByName(q.get('preset'));
    fillShape(pr);
    $('batch').value = pr.batch;
    if (pr.lr > 0) $('lr').value = Number(pr.lr.toPrecision(3));
  }
  for (const [id, name] of Object.entries(FIELD_OPTIONS)) if (q.has(name) && id !== 'loraRank') $(id).value = q.get(name);
  if (SHAPE_KEYS.some(([, key]) => q.has(key))) $('shapeBox').open = true;
  $('loraOn').checked = q.has('lora-rank') && Number(q.get('lora-rank')) > 0;
  if ($('loraOn').checked) $('loraRank').value = q.get('lora-rank');
  $('loraRank').disabled = !$('loraOn').checked;
  if (radio && !radio.disabled) radio.checked = true;
  if (text) {
    selectTab(document.querySelector('.tabs [role=tab][data-tab=url]'), false);
    $('corpusUrl').value = text.href;
    fetchCorpusUrl();
  }
  return true;
}
async function shareLink() {
  writeHash();
  const own = ui.corpusTab === 'upload' || ui.corpusTab === 'paste' ? ' Your own text is not in it: the link opens with the built-in sample.' : '';
  try {
    await navigator.clipboard.writeText(location.href);
    setStatus('shareStatus', 'Link copied: it opens this page with these settings.' + own, 'ok');
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
  $('probeBtn').disabled = true;
  setStatus('probeStatus', 'Measuring a few steps…');
  const t0 = performance.now();
  let first = 0;
  try {
    const corpus = await bundledCorpus();
    await engine.runBenchWorker({ variant }, variantThreads(variant), [p.name], 2, corpus.slice(), (row) => {
      first = (performance.now() - t0) / 1000;
      // start-up: what the probe took beyond its three steps
      rememberSpeed(variant, p.step_flops, p.step_flops / (row.ms / 1000) / 1e9, first - 3 * row.ms / 1000);
    });
    setStatus('probeStatus', `Measured: ${fmtTime(first)} for the first steps.`, 'ok');
  } catch (e) {
    setStatus('probeStatus', 'Could not measure: ' + e.message, 'error');
  } finally { $('probeBtn').disabled = false; refreshSetup(); }
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
  try { url = new URL(u, location.href); } catch (e) { corpusStatus('That is not a web address.', 'error'); return; }
  if (!/^https?:$/.test(url.protocol)) { corpusStatus('Give an http:// or https:// address.', 'error'); return; }
  corpusStatus(`Fetching ${url.href}…`);
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
    corpusStatus(e.user || 'Could not fetch the text: the address is unreachable, or the site does not allow other pages to read it (CORS).',
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
  if (f.size > 512 * 2 ** 20) { corpusStatus(`${f.name} is ${fmtBytes(f.size)}; the browser trainer takes up to 512 MB.`, 'error'); return; }
  ui.uploadText = { name: f.name, bytes: new Uint8Array(await f.arrayBuffer()) };
  describeCorpus();
}

// The text's status line. Every write counts, so an engine answer that
// arrives after a newer line is dropped.
let corpusSeq = 0;
function corpusStatus(text, cls, detail) {
  corpusSeq++;
  setStatus('corpusStatus', text, cls, detail);
}

// The chosen text in a line; an uploaded or fetched one as the engine takes
// it (its reason to refuse it, if any: empty, binary).
async function describeCorpus() {
  let text = '', bytes = null;
  if (ui.corpusTab === 'bundled') text = ui.bundled ? `fortunes sample · ${fmtBytes(ui.bundled.length)}` : 'fortunes sample';
  else if (ui.corpusTab === 'upload') {
    if (!ui.uploadText) text = 'No file chosen yet.';
    else { text = `${ui.uploadText.name} · ${fmtBytes(ui.uploadText.bytes.length)}`; bytes = ui.uploadText.bytes; }
  } else if (ui.corpusTab === 'url') {
    if (!ui.urlText) text = 'No text fetched yet.';
    else { text = `${ui.urlText.name} · ${fmtBytes(ui.urlText.bytes.length)} from ${new URL(ui.urlText.url).host}`; bytes = ui.urlText.bytes; }
  } else {
    const n = new TextEncoder().encode($('corpusText').value).length;
    text = n ? `${fmtBytes(n)} of pasted text` : 'Nothing pasted yet.';
  }
  corpusStatus(text);
  if (!bytes) return;
  const seq = corpusSeq;
  const t = await engine.textInfo(bytes.slice()).catch(() => ({}));
  if (t.error && seq === corpusSeq) corpusStatus(t.error, 'error');
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

// The chosen text, checked by the engine for a model of context ctx:
// {name, bytes, info: {bytes, hash}}, or null (the engine's reason shown).
async function checkedCorpus(ctx) {
  let corpus;
  try { corpus = await currentCorpus(); } catch (e) { corpusStatus(e.message, 'error'); return null; }
  const info = await engine.textInfo(corpus.bytes.slice(), ctx);
  if (info.error) { corpusStatus(info.error, 'error'); return null; }
  return { ...corpus, info };
}

// ---- run files ------------------------------------------------------------------------
// A run file is the JSON of `tinytrain train --config`; the worker reads and
// writes it through the engine's own C code (src/train/runfile.c via
// tt_web_runfile_read / _write), so the browser and the CLI accept the same files.

// What the loaded run file gives beyond the form's fields (its model shape,
// optimizer settings...), as name=value text put before the form's options.
function runfileOptions() { return ui.runfileOpts ? ui.runfileOpts + ' ' : ''; }

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
  $('runSaveBtn').addEventListener('click', () => ui.worker.postMessage({ type: 'runfileWrite', opts: formOptions() }));
}

function onRunfile(m) {
  if (m.type === 'runfileText') { // Save: the resolved options as a file
    saveBlob(m.text, 'tinytrain-run.json', 'application/json');
    setStatus('runfileStatus', 'Saved tinytrain-run.json (train it with: tinytrain train --config tinytrain-run.json).', 'ok');
    return;
  }
  // Load: the form shows what the file sets; the rest of it goes with the next run
  const given = Object.fromEntries(m.opts.split(' ').filter(Boolean).map((kv) => kv.split('=')));
  if (given.preset && presetByName(given.preset)) { $('preset').value = given.preset; $('preset').dispatchEvent(new Event('change')); }
  // the form's option fields but the shape (the preset's) and LoRA's (below)
  for (const [id, k] of Object.entries(FIELD_OPTIONS))
    if (id !== 'loraRank' && !SHAPE_KEYS.some(([sid]) => sid === id) && given[k] !== undefined) $(id).value = given[k];
  if (given['lora-rank'] !== undefined) {
    $('loraOn').checked = Number(given['lora-rank']) > 0;
    if ($('loraOn').checked) $('loraRank').value = given['lora-rank'];
    $('loraRank').disabled = !$('loraOn').checked;
  }
  ui.runfileOpts = m.opts;
  renderBackendNote();
  refreshSetup();
  setStatus('runfileStatus', `Loaded ${ui.runfileName || 'the run file'}: the next run uses its options.`, 'ok');
}

// ---- training --------------------------------------------------------------------------

async function startTraining() {
  const variant = variantForChoice(backendChoice());
  let opts = formOptions();
  // the engine checks and sizes the setup first; a fine-tune has the shape of the model it starts from
  // (a model folder's: model.js asks the engine about it)
  const model = chosenModel();
  const p = model ? await modelPlan(planOptions(variant)) : await engine.plan(planOptions(variant)).catch((e) => ({ error: e.message }));
  if (p.error) { showError(p.error); return; }
  const v = model ? {} : verdict(p, variant);
  if (v.message) { showError(v.message); return; }
  // the engine's timed save points no more often than the autosave writes them
  opts += ` save-seconds=${Math.ceil(autosaveInterval(p.state_bytes))}`;
  const corpus = await checkedCorpus(p.ctx);
  if (!corpus) return;
  describeCorpus();
  if (hasRun() && !(await ask(`Start a new run? The current run (${runSummary()}) is discarded, and its autosave in this browser ` +
    'is removed. Download its checkpoint first to keep it.', 'Discard and start new'))) return;
  // this tab's own claim (it may have passed to a tab waiting for it while this one switched engines) is taken back
  let steal = !!ui.owns;
  if (ui.notOwner) {
    if (!(await ask('Another tab has the saved run open. Starting here replaces that run; the other tab stops training.', 'Take over and start'))) return;
    steal = true;
  }
  const hadRun = hasRun(), oldWorker = ui.worker;
  clearRunView();
  // one column (a phone): bring the run's card into view
  if (matchMedia('(max-width: 960px)').matches) $('h-progress').scrollIntoView({ block: 'start' });
  ui.startAt = performance.now();
  setRun('starting');
  ui.phaseTimer = setInterval(renderPhase, 500);
  try {
    await startWorker(variant);
  } catch (e) { setRun('idle'); showError(e.message); return; }
  if (ui.run !== 'starting') return; // cancelled while the engine loaded
  // the old run's engine is gone with its Worker: should this run fail, its autosave is restored
  ui.restoreOnFail = hadRun && ui.worker !== oldWorker && !!(await readSavedMeta());
  ui.runVariant = variant;
  rememberText(corpus.info, corpus.name);
  ui.startMsg = { type: 'start', opts, corpus: corpus.bytes.slice(), corpusName: corpus.name, steal };
  let transfer = [];
  if (model) {
    try { ({ transfer, ...ui.startMsg.model } = await modelFiles()); } catch (e) { setRun('idle'); showError(e.message); return; }
  } else if (ui.initFrom) { // fine-tune: this run starts from the chosen model's weights (once)
    ui.startMsg.initFrom = ui.initFrom.bytes;
    ui.startMsg.initFromConfig = ui.initFrom.config;
    ui.startMsg.initFromName = ui.initFrom.name;
    setInitFrom(null);
  }
  ui.worker.postMessage(ui.startMsg, transfer);
  delete ui.startMsg.model; // the Worker has its copy: the page does not keep the weights
  ui.notOwner = false;
}

// A New run failed and the worker put the run it was to replace back (its
// autosave was never touched): it is shown again, paused, and said so.
function onKept(m) {
  ui.replacing = null;
  if (m.failed) { showError('The new run could not start, and the previous run could not be put back: ' + m.message); return; }
  onStarted({ state: m.state, info: m.info });
  const st = m.state;
  const last = st.loss.length ? st.loss[st.loss.length - 1] : NaN;
  updateStats({ step: st.step, total: st.steps, loss: last, val: st.val.length ? st.val[st.val.length - 1][1] : NaN });
  setRun(m.run);
  showBanner(`The new run did not start (${m.message}). Your previous run is kept as it was: ${st.preset}, step ${fmtInt(st.step)} of ` +
    `${fmtInt(st.steps)}${m.run === 'paused' ? ', paused' : ''}.`, 'warn');
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
  engine.stopWorker();
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
  refreshSetup();
  renderSetupNote();
}

function onStarted(m) {
  ui.owns = true; // the worker claimed the saved run for this tab first
  ui.restoreOnFail = false;
  ui.runStartAt = 0;
  const st = m.state;
  ui.runState = st;
  ui.lastStep = st.step;
  ui.runFlops = null;
  // the FLOPs of one of this run's steps, for the speed it measures (rememberRunSpeed)
  engine.plan(`layers=${st.layers} d-model=${st['d-model']} heads=${st.heads} ctx=${st.ctx} batch=${st.batch} accum=${st.accum}`)
    .then((p) => { if (ui.runState === st && !p.error) ui.runFlops = p.step_flops * p.accum; }, () => {});
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
  if ((m.run === 'done' || m.run === 'paused' || m.run === 'stopped') && ui.runFlops && m.stepsPerSec) {
    // a run that went straight from Train to its end also measured its start (engine, model, kernels)
    const startS = m.run === 'done' && ui.runStartAt ? (performance.now() - ui.runStartAt) / 1000 - m.step / m.stepsPerSec : undefined;
    ui.runStartAt = 0;
    rememberSpeed(ui.runVariant, ui.runFlops, ui.runFlops * m.stepsPerSec / 1e9, startS);
    refreshSetup(); // the estimate on screen is a measured one from now on
  }
}

// "Continue to N steps": the field holds a total, at least one step past now.
function setContinueTarget(total, step) {
  const want = Math.max(total, step) + Math.max(100, Math.round(Math.max(total, 1) / 2));
  if (!ui.moreEdited || !(Number($('moreN').value) > step)) $('moreN').value = want;
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
      ui.notOwner = true; ui.owns = false;
      showBanner('Your saved run is open in another tab. One tab trains it at a time.', 'warn',
        { id: 'takeOverBtn', label: 'Take over here', onClick: takeOver });
    } else if (m.message) setStatus('ckptStatus', 'Could not restore the saved run: ' + m.message, 'error');
    setRun('idle');
    return;
  }
  ui.notOwner = false;
  ui.lostRun = false;
  ui.hasSaved = true;
  onStarted({ state: m.state, info: m.info });
  const st = m.state;
  updateStats({ step: st.step, total: st.steps, loss: m.meta.loss, val: st.val.length ? st.val[st.val.length - 1][1] : NaN, elapsed: m.meta.elapsed });
  const where = m.tookOver ? (m.handedStep != null ? 'Took over your run from the other tab at its latest step'
    : 'Took over your run from its last autosave (the other tab did not answer)') : 'Restored your run from its last autosave in this browser';
  showBanner(`${where}: ${st.preset}, step ${fmtInt(st.step)} of ${fmtInt(st.steps)}` +
    (m.meta.status === 'running' ? ' — continuing.' : '.'));
  if (m.meta.corpusName) corpusStatus(`Run trained on: ${m.meta.corpusName}`);
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

// The name of a text by the engine's identity of it ({bytes, hash}): the
// bundled sample, or one this browser trained on.
async function textName(t) {
  if (ui.bundled && ui.bundled.length === t.bytes) {
    const b = await engine.textInfo(ui.bundled.slice()).catch(() => ({}));
    if (b.hash === t.hash) return 'the built-in fortunes sample';
  }
  return knownTextName(t.bytes, t.hash);
}

// A failed checkpoint load in a user's words; the engine's own text one click
// away. A text mismatch names both texts ({bytes, hash}, from the worker).
async function checkpointError(m) {
  const up = ui.upload || {};
  if (m.mismatch && m.want && m.chosen && !m.chosen.error) {
    const name = await textName(m.want);
    return {
      text: `${up.name} was trained on ${name ? name + ' — ' : 'another text: '}${fmtInt(m.want.bytes)} bytes, hash ${m.want.hash}. ` +
        `The chosen text (${up.corpusName}) is ${fmtInt(m.chosen.bytes)} bytes, hash ${m.chosen.hash}. ` +
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

// model: {name, bytes, baseOpts} or null. The next Train starts from its
// weights with a fresh optimizer and schedule, on the chosen text and options
// (the model's shape is the checkpoint's, baseOpts as the engine reads it
// from the header; with LoRA on, its weights stay frozen).
function setInitFrom(model) {
  ui.initFrom = model;
  $('ftClear').hidden = !model;
  setStatus('ftStatus', model ? `The next run fine-tunes ${model.name}: its weights, a fresh optimizer, the text and ` +
    'options chosen here (its own shape).' : '');
  refreshSetup();
}

// The model files chosen: a tinytrain checkpoint, or a Hugging Face export
// (`tinytrain export`'s folder, the page's "For Hugging Face" zip): its zip,
// or its model.safetensors with config.json. -> {name, bytes, config?}
async function initFromFiles(files) {
  const read = async (f) => new Uint8Array(await f.arrayBuffer());
  if (files.length === 1 && /\.zip$/i.test(files[0].name)) {
    const { unzipSync } = await import('./dist/fflate.js');
    let entries;
    try { entries = unzipSync(await read(files[0])); } catch (e) { throw new Error(`${files[0].name} is not a zip file (${e.message})`); }
    const find = (n) => Object.keys(entries).find((k) => k === n || k.endsWith('/' + n));
    const model = find('model.safetensors'), config = find('config.json');
    if (!model || !config) throw new Error(`${files[0].name} holds no model.safetensors with config.json (a Hugging Face folder)`);
    return { name: files[0].name, bytes: entries[model], config: entries[config] };
  }
  const model = files.find((f) => /\.safetensors$/i.test(f.name)) || (files.length === 1 ? files[0] : null);
  const config = files.find((f) => /\.json$/i.test(f.name));
  if (!model) throw new Error('choose a .safetensors file (with its config.json for a Hugging Face model)');
  return { name: model.name, bytes: await read(model), config: config ? await read(config) : null };
}

async function chooseInitFrom() {
  const files = [...$('ftFile').files];
  $('ftFile').value = '';
  if (!files.length) return;
  let m;
  try { m = await initFromFiles(files); } catch (e) { setInitFrom(null); setStatus('ftStatus', 'Could not fine-tune from that model: ' + e.message, 'error'); return; }
  // a Hugging Face model is read as its folder is (config.json), a checkpoint by its header
  const info = await (m.config ? engine.hfConfigInfo(m.config.slice()) : engine.checkpointInfo(m.bytes.slice())).catch((e) => ({ error: e.message }));
  if (info.error) {
    setInitFrom(null);
    const hf = !m.config && /'tinytrain_config'|format 'pt'/.test(info.error);
    setStatus('ftStatus', hf ? `${m.name} is a Hugging Face model: choose it together with its config.json, or the export's zip.`
      : `Could not fine-tune from that model: ${m.name} is not a tinytrain checkpoint or a Hugging Face GPT-2 model, or it is damaged.`,
    'error', info.error);
    return;
  }
  setInitFrom({ name: m.name, bytes: m.bytes, config: m.config, baseOpts: info.base_opts });
}

async function uploadCheckpoint() {
  const f = $('ckptFile').files[0];
  $('ckptFile').value = '';
  if (!f) return;
  let bytes;
  try {
    bytes = new Uint8Array(await f.arrayBuffer());
  } catch (e) { setStatus('ckptStatus', 'Could not read the file: ' + e.message, 'error'); return; }
  if (hasRun() && !ui.forceNextUpload && !(await ask(`Load ${f.name}? It replaces the current run (${runSummary()}) and its autosave. ` +
    'Download the current run first to keep it.', 'Load checkpoint'))) return;
  const steal = !!ui.notOwner || !!ui.owns;
  if (ui.notOwner && !(await ask(`Another tab has the saved run open. Loading ${f.name} here replaces that run; the other tab stops training.`,
    'Take over and load'))) return;
  const corpus = await checkedCorpus(1);
  if (!corpus) return;
  // the loaded run continues on the engine chosen in Setup, as a new run would
  const variant = variantForChoice(backendChoice());
  try { await startWorker(variant); } catch (e) { showError(e.message); return; }
  ui.runVariant = variant;
  setStatus('ckptStatus', `Loading ${f.name}…`);
  const force = !!ui.forceNextUpload;
  ui.forceNextUpload = false;
  ui.upload = { name: f.name, corpusName: corpus.name };
  rememberText(corpus.info, corpus.name);
  ui.worker.postMessage({ type: 'upload', bytes, corpus: corpus.bytes.slice(), corpusName: corpus.name, force, steal });
  ui.notOwner = false; // the worker claims the saved run first (an 'owner' error says when it cannot)
}

// ---- sampling ----------------------------------------------------------------------------

// The engine checks the ranges (tt_web_sample_start); whole numbers are the page's to ask for.
function startSampling() {
  const temp = Number($('temp').value), topk = Number($('topk').value), topp = Number($('topp').value), len = Number($('slen').value);
  if (!Number.isInteger(topk)) return setStatus('sampleRate', 'Top-k must be a whole number (0 = off).', 'error');
  if (!Number.isInteger(len)) return setStatus('sampleRate', 'Length must be a whole number of tokens.', 'error');
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
  const v = [{ key: 'single', label: 'WASM 1 thread', variant: 'single' }];
  if (ui.caps.threads) v.push({ key: 'threads', label: `WASM ${threadCount()} threads`, variant: 'threads' });
  if (ui.caps.gpu && ui.gpuEngine && (!ui.caps.gpu.isCpu || $('benchSoft').checked))
    v.push({ key: 'webgpu', label: ui.caps.gpu.isCpu ? 'WebGPU (software)' : 'WebGPU', variant: 'gpu' });
  return v;
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
  benchHeader(variants, others);
  const draw = () => drawBench(presets, variants, ref, others, results, presetByName);
  draw();
  try {
    const corpus = await bundledCorpus();
    for (const [i, v] of variants.entries()) {
      if (ui.benchCancelled) throw Object.assign(new Error('cancelled'), { cancelled: true });
      setStatus('benchStatus', `Running ${v.label} (${i + 1} of ${variants.length})…`);
      await engine.runBenchWorker(v, variantThreads(v.variant), presets, steps, corpus.slice(), (row) => {
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
  let variant = autoVariant();
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
  ui.options = ready.options;
  ui.runVariant = variant;
  initControls();
  await readHash();
  renderBackendNote();
  describeCorpus();
  bundledCorpus().then(describeCorpus).catch((e) => corpusStatus(e.message, 'error'));
  drawChart();
  mountInspect(ui);
  setRun('idle');
  await refreshSetup();
  await restoreModel().catch(() => false);
  if (meta) ui.worker.postMessage({ type: 'restore' });
  document.body.dataset.ready = '1';
}

main();
