// render.js — what the page draws from its state: number formats, the
// capability chips, status lines, banner and toast, the run pill and the
// buttons, the setup's size card (from the engine's plan), the live loss
// chart and stats, the benchmark's table and chart. Nothing here talks to
// the engine or decides anything.
import uPlot from './dist/uPlot.esm.js';
import { ui, hasRun } from './state.js';

export const $ = (id) => document.getElementById(id);
// the loss of a uniform guess over the model's vocabulary (ln 256 for bytes)
let uniform = { vocab: 256, loss: Math.log(256) };

// ---- formatting ----------------------------------------------------------------

export const fmtInt = (n) => Math.round(n).toLocaleString('en-US');
export function fmtBytes(b) {
  const u = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  while (b >= 1024 && i < u.length - 1) { b /= 1024; i++; }
  return (i ? b.toFixed(b < 10 ? 1 : 0) : b) + ' ' + u[i];
}
export function fmtParams(n) {
  if (n >= 1e9) return (n / 1e9).toFixed(2) + 'B';
  if (n >= 1e6) return (n / 1e6).toFixed(n >= 1e7 ? 1 : 2) + 'M';
  if (n >= 1e3) return (n / 1e3).toFixed(1) + 'K';
  return String(n);
}
export function fmtTime(s) {
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
const fmtBits = (x) => (x == null || !isFinite(x) ? '–' : x.toFixed(3));
function fmtRate(x) {
  if (!x || !isFinite(x)) return '–';
  if (x >= 1e6) return (x / 1e6).toFixed(2) + 'M';
  if (x >= 1e4) return (x / 1e3).toFixed(1) + 'K';
  return Math.round(x).toLocaleString('en-US');
}

// ---- capabilities ------------------------------------------------------------------

// What this browser can do, in plain words (the technical name in the tooltip).
export function renderChips(caps) {
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

// ---- messages ----------------------------------------------------------------------

// A status line; `detail` (the technical text) goes one click away, in a <details>.
export function setStatus(id, text, cls, detail) {
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

export function showBanner(text, cls, action) {
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
export function hideBanner() { $('banner').hidden = true; $('banner').textContent = ''; }

let toastTimer = 0;
export function showError(msg, info) {
  const t = $('toast');
  t.textContent = msg;
  t.className = 'toast' + (info ? ' info' : '');
  t.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { t.hidden = true; }, 7000);
}

// Hands bytes to the browser as a download named name.
export function saveBlob(bytes, name, type) {
  const url = URL.createObjectURL(new Blob([bytes], { type }));
  const a = document.createElement('a');
  a.href = url; a.download = name;
  document.body.appendChild(a); a.click(); a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

// ---- the run's state ----------------------------------------------------------------

// The pill says what is happening now: the run's state, a pause or stop on
// its way, or the phase of a run being set up with its elapsed time.
export function renderPhase() {
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

export function updateButtons() {
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

export function runSummary() {
  const st = ui.runState;
  const step = ui.lastStep != null ? ui.lastStep : (st ? st.step : 0);
  return st ? `${st.preset}, step ${fmtInt(step)} of ${fmtInt(ui.total || st.steps)}` : 'the current run';
}

// The setup panel shows the current run's settings after it starts or is
// restored; once changed it is the next run's, and says so.
export function renderSetupNote() {
  const el = $('setupNote');
  if (!el) return;
  if (!hasRun() && ui.run !== 'starting') { el.textContent = 'Settings for a new run.'; el.className = 'hint'; return; }
  el.textContent = ui.setupIsNext ? `Settings for the NEXT run (press New run). The current run keeps its own: ${runSummary()}.`
    : 'Settings of the current run. Change any to set up the next one.';
  el.className = ui.setupIsNext ? 'hint warn' : 'hint';
}

// ---- the setup's size -----------------------------------------------------------------

// What to expect from a size, in words.
function expectation(params) {
  if (params < 200e3) return 'learns spelling and short words in a minute or two';
  if (params < 3e6) return 'word-like text after a few thousand steps';
  if (params < 30e6) return 'phrases after long training; slow in a browser';
  return 'a big model: hours per thousand steps here, the CLI is faster';
}

// The size card from the engine's plan p (tt_web_plan) and the page's
// verdict: {memory (bytes shown), tooBig, refusal (a reason not to start),
// secs (estimate), measured, custom}. A plan the engine refused shows its
// reason.
export function renderPresetInfo(p, v) {
  const box = $('presetInfo');
  box.innerHTML = '';
  const cells = p.error ? [['setup', p.error, 'warn']] : [
    ['parameters', fmtParams(p.params)],
    ['memory', fmtBytes(v.memory), v.tooBig ? 'warn' : ''],
    ['est. time', v.refusal ? v.refusal : '≈ ' + fmtTime(v.secs) + (v.measured ? ' (measured)' : ' (rough guess)'), v.refusal ? 'warn' : ''],
    ['shape', `${p.layers} layers × ${p['d-model']} wide, ${p.heads} heads, context ${p.ctx}` + (v.custom ? ' (custom)' : '')],
    ['expect', expectation(p.params)],
  ];
  for (const [k, val, cls] of cells) {
    const d = document.createElement('div');
    d.innerHTML = `<span class="k">${k}</span><span class="v ${cls || ''}"></span>`;
    d.querySelector('.v').textContent = val;
    box.appendChild(d);
  }
  box.title = p.error ? '' : `${p.layers} layers · d_model ${p['d-model']} · ${p.heads} heads · context ${p.ctx} · batch ${p.batch}`;
}

// ---- chart and stats ------------------------------------------------------------------

export function resetChart(state) {
  const d = ui.data;
  d.x = []; d.loss = []; d.smooth = []; d.val = []; d.base = [];
  ui.valMap = new Map();
  const vocab = state && state.vocab > 1 ? state.vocab : 256;
  if (vocab !== uniform.vocab) {
    uniform = { vocab, loss: Math.log(vocab) };
    if (ui.chart) { ui.chart.destroy(); ui.chart = null; } // its legend names the vocabulary: drawn again
  }
  if (state) {
    for (const [s, l] of state.val) ui.valMap.set(s, l);
    state.loss.forEach((l, i) => pushPoint(i + 1, l));
  }
  ui.total = state ? state.steps : 0;
  drawChart();
}

export function pushPoint(step, loss) {
  const d = ui.data;
  d.x.push(step); d.loss.push(loss); d.smooth.push(loss);
  d.val.push(ui.valMap.has(step) ? ui.valMap.get(step) : null);
  d.base.push(uniform.loss);
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

export function updateStats(m) {
  $('stStep').textContent = `${fmtInt(m.step)} / ${fmtInt(m.total)}`;
  $('stLoss').textContent = fmtLoss(m.loss);
  // bits per byte: the engine's (a BPE model's loss is per token), else of a byte-level loss
  $('stBpb').textContent = m.bpb !== undefined ? fmtBits(m.bpb) : fmtBpb(m.loss);
  $('stVal').textContent = fmtLoss(m.val);
  $('stValBpb').textContent = m.valBpb !== undefined ? fmtBits(m.valBpb) : fmtBpb(m.val);
  if (m.tokPerSec !== undefined) $('stTok').textContent = fmtRate(m.tokPerSec);
  if (m.elapsed !== undefined) $('stElapsed').textContent = fmtTime(m.elapsed);
  $('stEta').textContent = m.step >= m.total ? 'done' : (m.run === 'running' ? fmtTime(m.eta) : '–');
  $('bar').style.width = (m.total ? (100 * m.step) / m.total : 0).toFixed(2) + '%';
}

const STEP_INCRS = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1e3, 2e3, 2500, 5e3, 1e4, 2e4, 25e3, 5e4, 1e5, 2e5, 25e4, 5e5, 1e6];

function chartSize(el, h) {
  return { width: Math.max(280, el.clientWidth), height: h };
}

export function drawChart() {
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
        { label: `ln ${uniform.vocab} (uniform)`, stroke: '#f5b14c', width: 1, dash: [6, 6], points: { show: false }, value: () => uniform.loss.toFixed(3) },
      ],
    }, data, el);
    if (ui.chartObs) ui.chartObs.disconnect();
    ui.chartObs = new ResizeObserver(() => ui.chart && ui.chart.setSize(chartSize(el, 300)));
    ui.chartObs.observe(el);
  } else {
    ui.chart.setData(data);
  }
}

// ---- benchmark ------------------------------------------------------------------------

function fmtDrift(d) {
  if (d === 0) return 'exact';
  return d < 1e-4 ? d.toExponential(1) : (d * 100).toFixed(2) + '%';
}

// The table header for the variants (ref: the one speedups are against).
export function benchHeader(variants, others) {
  const table = $('benchTable');
  table.hidden = false;
  table.querySelector('thead tr').innerHTML = '<th>preset</th><th>params</th>' +
    variants.map((v) => `<th>${v.label}<br><span class="hint">ms/step</span></th>`).join('') +
    others.map((v) => `<th>${v.label}<br><span class="hint">speedup · drift</span></th>`).join('');
}

// results: preset -> variant key -> {ms, losses}
export function drawBench(presets, variants, ref, others, results, presetByName) {
  const tb = $('benchTable').querySelector('tbody');
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
