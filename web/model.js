// model.js — "Start from a model": a Hugging Face GPT-2 folder (config.json,
// model.safetensors, vocab.json + merges.txt or tokenizer.json) picked from
// disk or given as links (the Hub's `.../resolve/main/` addresses), which the
// next run fine-tunes. Owns: reading the picked files; downloading linked
// files into the browser's private file system (OPFS: tinytrain-models/),
// resumable (the weights in parts of PART bytes, each part a whole file: a
// cut download goes on from the last whole part with an HTTP Range request)
// with a progress bar; the cache, kept until the user removes it ("Remove
// cached model"), so a reload does not download again; the engine's word on
// the model (worker.js modelInfo: web_info.h tt_web_model_info — its shape
// and what a LoRA or full fine-tune needs in memory) and the one-line refusal
// when it does not fit. app.js asks chosenModel() / modelPlan() when a run
// starts and puts modelFiles() into the start message.
import * as engine from './engine.js';
import { $, fmtBytes, fmtParams, setStatus } from './render.js';

const CACHE_DIR = 'tinytrain-models';
const LAST_KEY = 'tinytrain.model';   // the cached model chosen last (its cache key), restored on reload
const PART = 1 << 20;                 // bytes per cached part of a large file (a cut download loses less than this)
const NEEDED = ['config.json', 'model.safetensors'];
const TOKENIZER = [['vocab.json', 'merges.txt'], ['tokenizer.json']];
const OPTIONAL = ['tokenizer_config.json', 'special_tokens_map.json', 'generation_config.json'];

// the chosen model: {name, source: 'disk' | 'link', key (cache key of a link), files: {name: Uint8Array} (disk) | null, info}
let chosen = null;
let busy = false;

export const chosenModel = () => chosen;

// ---- OPFS cache ------------------------------------------------------------------------
async function cacheRoot(create = true) {
  if (!navigator.storage || !navigator.storage.getDirectory) return null;
  const root = await navigator.storage.getDirectory();
  try { return await root.getDirectoryHandle(CACHE_DIR, { create }); } catch (e) { return null; }
}
const keyOf = (base) => base.replace(/^https?:\/\//, '').replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 200);
async function modelDir(key, create) {
  const root = await cacheRoot(create);
  if (!root) return null;
  try { return await root.getDirectoryHandle(key, { create }); } catch (e) { return null; }
}
async function readJson(dir, name) {
  try { return JSON.parse(await (await (await dir.getFileHandle(name)).getFile()).text()); } catch (e) { return null; }
}
async function writeFile(dir, name, bytes) {
  const w = await (await dir.getFileHandle(name, { create: true })).createWritable();
  await w.write(bytes);
  await w.close(); // the file changes only here: a part is whole or absent
}
async function readFile(dir, name) {
  return new Uint8Array(await (await (await dir.getFileHandle(name)).getFile()).arrayBuffer());
}

// a linked file into the cache: small ones whole, large ones in parts; onBytes(n) as bytes arrive
async function download(dir, url, name, manifest, onBytes) {
  const done = manifest.files[name];
  if (done && done.complete) { onBytes(done.size); return true; }
  let have = 0, parts = 0;
  for (;; parts++) { // the whole parts from an earlier, cut download
    try { const f = await (await dir.getFileHandle(`${name}.part${parts}`)).getFile(); if (f.size !== PART) break; have += f.size; } catch (e) { break; }
  }
  onBytes(have);
  const r = await fetch(url, have ? { headers: { Range: `bytes=${have}-` } } : {});
  if (r.status === 404) return false;
  if (!r.ok) throw new Error(`${name}: HTTP ${r.status}`);
  if (have && r.status !== 206) { have = 0; parts = 0; onBytes(0); } // no ranges: from the start
  const total = have + Number(r.headers.get('Content-Length') || 0);
  onBytes(have, total);
  const reader = r.body.getReader();
  let buf = new Uint8Array(PART), fill = 0;
  for (;;) {
    const { done: end, value } = await reader.read();
    if (value) {
      let off = 0;
      while (off < value.length) {
        const k = Math.min(PART - fill, value.length - off);
        buf.set(value.subarray(off, off + k), fill);
        fill += k; off += k; have += k;
        if (fill === PART) { await writeFile(dir, `${name}.part${parts++}`, buf); fill = 0; }
      }
      onBytes(have, total);
    }
    if (end) break;
  }
  if (fill || parts === 0) await writeFile(dir, `${name}.part${parts++}`, buf.subarray(0, fill));
  if (total && have !== total) throw new Error(`${name}: ${have} of ${total} bytes arrived`);
  manifest.files[name] = { complete: true, size: have, parts };
  await writeFile(dir, 'manifest.json', new TextEncoder().encode(JSON.stringify(manifest)));
  return true;
}

async function readCached(dir, name, entry) {
  const out = new Uint8Array(entry.size);
  let off = 0;
  for (let i = 0; i < entry.parts; i++) { const b = await readFile(dir, `${name}.part${i}`); out.set(b, off); off += b.length; }
  return out;
}

// The cached files of a model: {name: bytes}; `only` limits the names (the weights are read last, at the start of a run).
async function cachedFiles(key, only) {
  const dir = await modelDir(key, false);
  const manifest = dir && (await readJson(dir, 'manifest.json'));
  if (!manifest) return null;
  const files = {};
  for (const [name, e] of Object.entries(manifest.files)) if (e.complete && (!only || only.includes(name))) files[name] = await readCached(dir, name, e);
  return { files, manifest };
}

// ---- the engine's word ---------------------------------------------------------------------
// opts: the setup's engine options (batch, ctx, LoRA, backend); heapLimit: bytes the engine may use (0: its 4 GB)
function describe(files, opts) {
  const small = {};
  for (const [n, b] of Object.entries(files)) if (n !== 'model.safetensors') small[n] = b.slice();
  return engine.modelInfo(small, opts, heapLimit());
}
// a lower limit for the engine's memory than the module's 4 GB (bytes), from the page's link (#heap-limit=N), for tests of refusals
function heapLimit() {
  const m = /[#&]heap-limit=(\d+)/.exec(location.hash);
  return m ? Number(m[1]) : 0;
}
function needText(r) {
  return r.fits ? fmtBytes(r.host_bytes) : 'does not fit';
}
function showInfo(info, name) {
  const el = $('modelInfo');
  if (info.error) { el.textContent = ''; return; }
  const m = info.model;
  el.textContent = `${name}: GPT-2, ${m.layers} layers, d ${m['d-model']}, ${m.heads} heads, ctx ${m.ctx} of ${info.n_positions}, ` +
    `vocabulary ${m.vocab} (${info.tokenizer === 'bpe' ? 'its BPE tokenizer' : 'no tokenizer files: bytes'}), ` +
    `${fmtParams(info.full.params)} parameters. Memory in the engine: LoRA (${fmtParams(info.lora.trained_params)} trained) ` +
    `${needText(info.lora)}, full ${needText(info.full)}.`;
}
// The one line that refuses a model for a setup (LoRA when the options ask for it, else full), or ''.
function refusal(info, opts) {
  if (info.error) return info.error;
  const lora = /(^|\s)lora-rank=[1-9]/.test(opts);
  const r = lora ? info.lora : info.full;
  return r.fits ? '' : `This model is too large for the page: ${r.why}` + (!lora && info.lora.fits ? ' (a LoRA fine-tune fits).' : '.');
}

// The model for a run with these options, as app.js asks it when Train is
// pressed: {error} (one line), else {ctx, state_bytes}.
export async function modelPlan(opts) {
  if (!chosen) return { error: 'no model chosen' };
  const files = chosen.files || (await cachedFiles(chosen.key, ['config.json', ...TOKENIZER.flat()])).files;
  const info = await describe(files, opts).catch((e) => ({ error: e.message }));
  const no = refusal(info, opts);
  if (no) return { error: no };
  const lora = /(^|\s)lora-rank=[1-9]/.test(opts);
  return { ctx: info.model.ctx, state_bytes: (lora ? info.lora : info.full).state_bytes };
}

// The files of the chosen model for the start message ({name, files}), and
// the buffers the message may transfer rather than copy: a cached model's
// files are read fresh from OPFS for this message (the Worker then holds the
// only copy of the weights); picked files stay the page's for the next run.
export async function modelFiles() {
  if (!chosen) return null;
  if (chosen.files) return { name: chosen.name, files: chosen.files, transfer: [] };
  const c = await cachedFiles(chosen.key);
  if (!c) throw new Error(`the cached model ${chosen.name} is gone: choose it again`);
  return { name: chosen.name, files: c.files, transfer: Object.values(c.files).map((b) => b.buffer) };
}

// ---- choosing ------------------------------------------------------------------------------
async function choose(model, files, opts) {
  const info = await describe(files, opts).catch((e) => ({ error: e.message }));
  if (info.error) { setModel(null); setStatus('modelStatus', `Could not use ${model.name}: ${info.error}`, 'error'); return false; }
  const no = refusal(info, opts);
  if (no && !info.lora.fits) { setModel(null); showInfo(info, model.name); setStatus('modelStatus', no, 'error'); return false; }
  setModel({ ...model, info });
  showInfo(info, model.name);
  setStatus('modelStatus', `The next run fine-tunes ${model.name} (its shape and tokenizer; the text, batch, ctx and LoRA chosen here).` +
    (no ? ' ' + no : ''), no ? 'warn' : 'ok');
  return true;
}

function setModel(m) {
  chosen = m;
  $('modelClear').hidden = !m;
  if (!m) { $('modelInfo').textContent = ''; }
  if (hooks.onChange) hooks.onChange(m);
}

async function pickFiles(list) {
  const files = {};
  for (const f of list) {
    const name = (f.webkitRelativePath || f.name).split('/').pop();
    if ([...NEEDED, ...TOKENIZER.flat(), ...OPTIONAL].includes(name)) files[name] = new Uint8Array(await f.arrayBuffer());
  }
  const missing = NEEDED.filter((n) => !files[n]);
  if (missing.length) { setStatus('modelStatus', `The folder lacks ${missing.join(' and ')}: pick config.json, model.safetensors and the tokenizer files.`, 'error'); return; }
  const dirName = list[0] && list[0].webkitRelativePath ? list[0].webkitRelativePath.split('/')[0] : 'model';
  await choose({ name: dirName, source: 'disk', files }, files, hooks.options());
}

// A folder of links: config.json first (the engine says what it is and whether it fits before the weights come).
async function fetchLinks(text) {
  let base = text.trim();
  if (!/^https?:\/\//.test(base)) { setStatus('modelStatus', 'Give a link (https://…/resolve/main/ or one of its files).', 'error'); return; }
  base = base.replace(/\/[^/]*\.(json|txt|safetensors)(\?.*)?$/, '').replace(/\/+$/, '');
  const key = keyOf(base);
  const name = base.split('/').slice(-3, -2)[0] || base.split('/').pop();
  const dir = await modelDir(key, true);
  if (!dir) { setStatus('modelStatus', 'This browser has no private file system (OPFS) to keep the model in.', 'error'); return; }
  const manifest = (await readJson(dir, 'manifest.json')) || { base, files: {} };
  const bar = $('modelProgress');
  try {
    busy = true;
    setStatus('modelStatus', `Fetching ${name}'s config and tokenizer…`);
    if (!(await download(dir, `${base}/config.json`, 'config.json', manifest, () => {}))) throw new Error('config.json not found at that link');
    let tok = false;
    for (const set of TOKENIZER) {
      let all = true;
      for (const n of set) all = all && (await download(dir, `${base}/${n}`, n, manifest, () => {}));
      if (all) { tok = true; break; }
    }
    const small = (await cachedFiles(key, ['config.json', ...TOKENIZER.flat()])).files;
    const info = await describe(small, hooks.options()).catch((e) => ({ error: e.message }));
    if (info.error || !info.lora.fits) { // refused before the weights are downloaded
      setModel(null);
      if (!info.error) showInfo(info, name);
      setStatus('modelStatus', info.error ? `Could not use ${name}: ${info.error}` : refusal(info, 'lora-rank=8'), 'error');
      return;
    }
    if (!tok) setStatus('modelStatus', `${name} has no tokenizer files: its text would be read as bytes.`, 'warn');
    bar.hidden = false;
    bar.value = 0;
    const t0 = performance.now();
    await download(dir, `${base}/model.safetensors`, 'model.safetensors', manifest, (n, total) => {
      if (total) bar.max = total;
      bar.value = n;
      const secs = (performance.now() - t0) / 1000;
      setStatus('modelStatus', `Downloading ${name}'s weights: ${fmtBytes(n)}` + (secs > 1 ? ` (${fmtBytes(n / secs)}/s)` : '') + '…');
    }).then((ok) => { if (!ok) throw new Error('model.safetensors not found at that link'); });
    localStorage.setItem(LAST_KEY, JSON.stringify({ key, name }));
    await choose({ name, source: 'link', key }, small, hooks.options());
  } catch (e) {
    setStatus('modelStatus', `Download of ${name} stopped: ${e.message}. Fetch again to go on from where it stopped.`, 'error');
  } finally {
    busy = false;
    bar.hidden = true;
  }
}

async function removeCached() {
  try { await (await navigator.storage.getDirectory()).removeEntry(CACHE_DIR, { recursive: true }); } catch (e) { /* none */ }
  localStorage.removeItem(LAST_KEY);
  if (chosen && chosen.source === 'link') setModel(null);
  setStatus('modelStatus', 'Removed the cached model files from this browser.', 'ok');
}

// ---- mounting --------------------------------------------------------------------------------
const hooks = { options: () => '', onChange: null };

// anchor: the element the "Start from a model" field goes after; options():
// the setup's engine options; onChange(model|null) when the choice changes.
export function mountModel(anchor, { options, onChange }) {
  hooks.options = options;
  hooks.onChange = onChange;
  const f = document.createElement('div');
  f.className = 'field model';
  f.innerHTML = `<span class="label">Start from a model <span class="hint">(a Hugging Face GPT-2 folder: config.json, model.safetensors, vocab.json + merges.txt)</span></span>
    <div class="actions">
      <label class="button upload" id="modelFilesLabel"><input id="modelFiles" class="visually-hidden" type="file" multiple>Pick files…</label>
      <label class="button upload" id="modelDirLabel"><input id="modelDir" class="visually-hidden" type="file" webkitdirectory>Pick folder…</label>
      <button id="modelClear" type="button" class="ghost" hidden>Don't use it</button>
    </div>
    <div class="actions">
      <input id="modelUrl" type="url" placeholder="https://huggingface.co/openai-community/gpt2/resolve/main/" aria-label="link to a model folder">
      <button id="modelFetch" type="button">Fetch</button>
      <button id="modelRemove" type="button" class="ghost" title="Delete the downloaded model files from this browser">Remove cached model</button>
    </div>
    <progress id="modelProgress" hidden></progress>
    <div id="modelInfo" class="hint"></div>
    <div id="modelStatus" class="status" role="status"></div>`;
  anchor.after(f);
  for (const id of ['modelFiles', 'modelDir']) $(id).addEventListener('change', async () => { const l = [...$(id).files]; $(id).value = ''; if (l.length) await pickFiles(l); });
  $('modelFetch').addEventListener('click', () => { if (!busy) fetchLinks($('modelUrl').value); });
  $('modelUrl').addEventListener('keydown', (e) => { if (e.key === 'Enter' && !busy) fetchLinks($('modelUrl').value); });
  $('modelClear').addEventListener('click', () => { setModel(null); setStatus('modelStatus', ''); });
  $('modelRemove').addEventListener('click', removeCached);
  $('ckptFile').accept += ',.zip'; // a fine-tuned model's run folder (its Download) loads back too
}

// The cached model chosen last, chosen again from the cache (no download), once the engine is ready.
export async function restoreModel() {
  let last;
  try { last = JSON.parse(localStorage.getItem(LAST_KEY) || 'null'); } catch (e) { last = null; }
  if (!last) return false;
  const c = await cachedFiles(last.key, ['config.json', ...TOKENIZER.flat()]);
  if (!c || !(c.manifest.files['model.safetensors'] || {}).complete) return false;
  $('modelUrl').value = c.manifest.base || '';
  return choose({ name: last.name, source: 'link', key: last.key }, c.files, hooks.options());
}
