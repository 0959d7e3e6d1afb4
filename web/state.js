// state.js — the page's state (window.tinytrain, for tests and the curious)
// and what it decides from it alone: which engine variant runs, the thread
// count, speeds measured in this browser, and the names of texts trained on
// here. No engine number is computed here: sizes, ranges and memory come
// from the engine (engine.js).

export const STORE = 'tinytrain.';
// A browser page's memory: wasm32 addresses 4 GB, and the page needs some of
// it besides the run (this build has no Memory64 module: cmake/wasm.cmake).
export const WASM_LIMIT = 3.5 * 2 ** 30;

export const ui = {
  caps: null,
  presets: [],        // the engine's preset table (tt_web_presets_json)
  options: [],        // the engine's option table (tt_web_options_json)
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
  plan: null,         // the engine's plan of the setup on screen (tt_web_plan), or {error}
};

export const presetByName = (n) => ui.presets.find((p) => p.name === n);
export const hasRun = () => ['running', 'paused', 'stopped', 'done'].includes(ui.run);

// Engine variants: 'threads' (WASM SIMD + threads), 'single' (WASM SIMD, one
// thread), 'gpu' (WebGPU through the browser device layer). Auto picks WebGPU
// on a real GPU (a software adapter such as SwiftShader is slower than WASM),
// else threads when the page is cross-origin isolated, else one thread — the
// CLI's --backend auto makes the same choice.
export function autoVariant() {
  const c = ui.caps;
  if (c.gpu && !c.gpu.isCpu && ui.gpuEngine) return 'gpu';
  return c.threads ? 'threads' : 'single';
}
export function variantForChoice(choice) {
  const c = ui.caps;
  if (choice === 'single') return 'single';
  if (choice === 'threads') return c.threads ? 'threads' : 'single';
  if (choice === 'webgpu') return c.gpu && ui.gpuEngine ? 'gpu' : autoVariant();
  return autoVariant();
}
export function backendChoice() { return document.querySelector('input[name=backend]:checked').value; }
export function engineBackend(choice) { return variantForChoice(choice) === 'gpu' ? 'webgpu' : 'cpu'; }
export function threadCount() { return Math.max(1, Math.min(ui.caps.cores || 1, 16)); }
// The engine's thread count of a variant (its worker's threads= option).
export const variantThreads = (variant) => (variant === 'threads' ? threadCount() : 1);

// GFLOP/s for the time estimate: measured by earlier runs in this browser
// (remembered per engine), else a modest guess.
// A measured speed (the probe, or a finished run) for an engine variant:
// { gflops, startS } or null.
export function measuredSpeed(variant) {
  const v = parseFloat(localStorage.getItem(STORE + 'gflops.' + variant));
  if (!(v > 0)) return null;
  return { gflops: v, startS: parseFloat(localStorage.getItem(STORE + 'start.' + variant)) || 0 };
}
export function gflopsGuess(variant) {
  const v = parseFloat(localStorage.getItem(STORE + 'gflops.' + variant));
  if (v > 0) return v;
  if (variant === 'gpu') return ui.caps.gpu && ui.caps.gpu.isCpu ? 0.3 : 40;
  return variant === 'threads' ? 2.5 * Math.min(threadCount(), 8) * 0.7 : 2.5;
}
export function rememberSpeed(variant, gflops, startS) {
  if (!(gflops > 0 && isFinite(gflops))) return;
  localStorage.setItem(STORE + 'gflops.' + variant, gflops.toFixed(3));
  if (startS !== undefined) localStorage.setItem(STORE + 'start.' + variant, Math.max(0, startS).toFixed(1));
}

// The names of texts this browser trained on, by size and hash (the engine's
// identity of a text: engine.textInfo), so a checkpoint can say which text it
// expects.
export function rememberText(info, name) {
  try {
    const known = JSON.parse(localStorage.getItem(STORE + 'texts') || '{}');
    known[`${info.bytes}:${info.hash}`] = name;
    const keys = Object.keys(known);
    for (const k of keys.slice(0, Math.max(0, keys.length - 50))) delete known[k];
    localStorage.setItem(STORE + 'texts', JSON.stringify(known));
  } catch (e) { /* storage off: names are a nicety */ }
}
export function knownTextName(bytes, hash) {
  try { return JSON.parse(localStorage.getItem(STORE + 'texts') || '{}')[`${bytes}:${hash}`] || null; } catch (e) { return null; }
}
