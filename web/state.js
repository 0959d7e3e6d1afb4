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

// The time estimate's speeds. Measured ones (the probe, or a run that went
// straight through) are remembered per engine variant and model size (the
// FLOPs of one step, the engine's count): [{flops, gflops, startS}], startS
// the seconds before the first step (loading the engine, building the model,
// compiling GPU kernels). An estimate takes the measurement of the nearest
// size; without one, a first guess.
const speeds = (variant) => {
  try {
    const a = JSON.parse(localStorage.getItem(STORE + 'speeds.' + variant) || '[]');
    return Array.isArray(a) ? a.filter((e) => e && e.flops > 0 && e.gflops > 0) : [];
  } catch (e) { return []; }
};
const sizeGap = (a, b) => Math.abs(Math.log(a / b));
// { gflops, startS } measured for a variant, nearest to a step of `flops` FLOPs, or null.
export function measuredSpeed(variant, flops) {
  const a = speeds(variant);
  if (!a.length) return null;
  const e = a.reduce((best, x) => (sizeGap(x.flops, flops) < sizeGap(best.flops, flops) ? x : best));
  return { gflops: e.gflops, startS: e.startS >= 0 ? e.startS : startGuess(variant) };
}
// First guesses, from runs of the presets in Chromium (about 10 GFLOP/s per
// WASM SIMD thread on a laptop core, a little less per thread with more);
// a WebGPU start compiles the engine's kernels (seconds on a GPU, about 20 s
// on a software adapter).
export function gflopsGuess(variant) {
  if (variant === 'gpu') return ui.caps.gpu && ui.caps.gpu.isCpu ? 0.3 : 40;
  return variant === 'threads' ? 10 * Math.min(threadCount(), 8) * 0.75 : 10;
}
export function startGuess(variant) {
  if (variant === 'gpu') return ui.caps.gpu && ui.caps.gpu.isCpu ? 25 : 5;
  return 1;
}
// Remembers a measured speed for a variant and step size (startS undefined:
// the one known for that size, if any).
export function rememberSpeed(variant, flops, gflops, startS) {
  if (!(gflops > 0 && isFinite(gflops) && flops > 0)) return;
  const a = speeds(variant);
  const old = a.find((e) => sizeGap(e.flops, flops) < 0.01);
  const keep = a.filter((e) => e !== old);
  const start = startS >= 0 && isFinite(startS) ? +startS.toFixed(2) : old && old.startS >= 0 ? old.startS : undefined;
  keep.push({ flops, gflops: +gflops.toFixed(3), startS: start });
  try { localStorage.setItem(STORE + 'speeds.' + variant, JSON.stringify(keep.slice(-16))); } catch (e) { /* storage off */ }
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
