#!/usr/bin/env node
// report.mjs — results.jsonl of bench/curve.sh -> report.md (tables:
// speed, throughput, loss parity, start-up and memory, skipped cells, machine)
// and speedup.svg (speedup over a baseline backend vs preset, one line per
// backend, log-scale y). Node, no dependencies.
//
//   node bench/report.mjs out/bench-X/results.jsonl [--out DIR] [--baseline wasm]
//
// Parity: for every result with losses (tinytrain backends; PyTorch rows have
// their own init and data and are excluded), drift at step k = (loss_k -
// ref_k) / ref_k, ref = the native CPU N-thread cell ("cpu") of the same
// preset. |drift| > 0.1% at any of steps 1, 10, 50 flags the cell.
// Exit: 0, or 2 for bad arguments / unreadable input.
import fs from 'node:fs';
import path from 'node:path';

export const DRIFT_LIMIT_PCT = 0.1;
export const LOSS_STEPS = ['1', '10', '50'];
const PARITY_REF = 'cpu';
const ORDER = ['cpu', 'cpu1', 'wasm', 'wasm1', 'webgpu', 'torch-cuda', 'torch-cpu'];
const COLORS = { cpu: '#1f77b4', cpu1: '#7fb2dc', wasm: '#ff7f0e', wasm1: '#ffbf80', webgpu: '#2ca02c',
  'torch-cuda': '#d62728', 'torch-cpu': '#9467bd' };
const EXTRA_COLORS = ['#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];

function fail(msg) {
  process.stderr.write(`report.mjs: error: ${msg}\n`);
  process.exit(2);
}

export function parseResults(text) {
  const rows = [];
  text.split('\n').forEach((line, i) => {
    line = line.trim();
    if (!line) return;
    let o;
    try { o = JSON.parse(line); } catch (e) { throw new Error(`line ${i + 1} is not JSON: ${e.message}`); }
    rows.push(o);
  });
  return rows;
}

// display name of a cell id, with the thread count where the rows say it
function backendName(label, rows) {
  const r = rows.find((x) => x.label === label && x.kind === 'result');
  const n = r && r.threads ? r.threads : null;
  switch (label) {
    case 'cpu': return `Native CPU${n ? ` (${n} threads)` : ''}`;
    case 'cpu1': return 'Native CPU (1 thread)';
    case 'wasm': return `WASM SIMD${n ? ` (${n} threads)` : ' (threads)'}`;
    case 'wasm1': return 'WASM SIMD (1 thread)';
    case 'webgpu': return 'WebGPU (native Dawn)';
    case 'torch-cuda': return 'PyTorch CUDA eager fp32';
    case 'torch-cpu': return 'PyTorch CPU eager fp32';
    default: return label;
  }
}

export function msOf(r) {
  if (!r || !r.ms_per_step) return null;
  const m = r.ms_per_step.median ?? r.ms_per_step.mean;
  return Number.isFinite(m) && m > 0 ? m : null;
}

// drift in percent of row r against reference row ref, per loss step (null where not comparable)
export function drifts(r, ref) {
  const out = {};
  for (const k of LOSS_STEPS) {
    const a = r?.loss?.[k], b = ref?.loss?.[k];
    out[k] = Number.isFinite(a) && Number.isFinite(b) && b !== 0 ? ((a - b) / b) * 100 : null;
  }
  return out;
}
export function flagged(d) {
  return LOSS_STEPS.some((k) => d[k] !== null && Math.abs(d[k]) > DRIFT_LIMIT_PCT);
}

export function analyse(rows) {
  const results = rows.filter((r) => r.kind === 'result');
  const skipped = rows.filter((r) => r.kind === 'skipped');
  // several machine rows (results.jsonl files of one host concatenated, e.g.
  // the CPU side and the GPU side measured in two calls): the first row's
  // facts, with every distinct commit listed
  const machines = rows.filter((r) => r.kind === 'machine');
  const machine = machines.length ? { ...machines[0] } : null;
  if (machine) {
    const commits = [...new Set(machines.map((m) => String(m.commit).slice(0, 12)))];
    machine.commit = commits.join(' + ');
  }
  const labels = [...new Set([...results, ...skipped].map((r) => r.label))].sort((a, b) => {
    const ia = ORDER.indexOf(a), ib = ORDER.indexOf(b);
    return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib) || a.localeCompare(b);
  });
  const paramsOf = {};
  for (const r of results) if (r.model && Number.isFinite(r.model.params)) paramsOf[r.preset] = r.model.params;
  const presets = [...new Set([...results, ...skipped].map((r) => r.preset))].sort(
    (a, b) => (paramsOf[a] ?? Infinity) - (paramsOf[b] ?? Infinity) || a.localeCompare(b));
  const cell = (label, preset) => results.find((r) => r.label === label && r.preset === preset) || null;
  const skip = (label, preset) => skipped.find((r) => r.label === label && r.preset === preset) || null;
  const parity = [];
  for (const p of presets) {
    const ref = cell(PARITY_REF, p);
    for (const l of labels) {
      const r = cell(l, p);
      if (!r || r.parity === false || !r.loss) continue;
      const d = l === PARITY_REF ? null : drifts(r, ref);
      parity.push({ preset: p, label: l, row: r, drift: d, flag: d ? flagged(d) : false, hasRef: !!ref });
    }
  }
  return { results, skipped, machine, labels, presets, cell, skip, parity, paramsOf };
}

const fmtMs = (x) => (x === null ? '–' : x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x >= 1 ? x.toFixed(2) : x.toFixed(3));
const fmtInt = (x) => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : '–');
const fmtRate = (x) => (!Number.isFinite(x) ? '–' : x >= 1e6 ? `${(x / 1e6).toFixed(2)}M` : x >= 1e3 ? `${(x / 1e3).toFixed(1)}k` : x.toFixed(0));
const fmtLoss = (x) => (Number.isFinite(x) ? x.toFixed(4) : '–');
const fmtDrift = (x) => (x === null ? '–' : x === 0 ? '0' : `${x >= 0 ? '+' : '−'}${Math.abs(x) < 0.001 && x !== 0 ? Math.abs(x).toExponential(1) : Math.abs(x).toFixed(3)}%`);
const fmtX = (x) => (x === null ? '–' : x >= 10 ? `${x.toFixed(1)}×` : `${x.toFixed(2)}×`);
const fmtParams = (x) => (!Number.isFinite(x) ? '?' : x >= 1e6 ? `${(x / 1e6).toFixed(1)}M` : `${(x / 1e3).toFixed(0)}K`);
const fmtMB = (b) => (!Number.isFinite(b) ? '–' : b >= 10e6 ? (b / 1e6).toFixed(0) : b >= 0.1e6 ? (b / 1e6).toFixed(1) : (b / 1e6).toFixed(3));
const mdEsc = (s) => String(s ?? '').replace(/\|/g, '\\|').replace(/\n/g, ' ');

export function renderMarkdown(a, baseline) {
  const { labels, presets, cell, skip, parity, machine, results, skipped } = a;
  const L = [];
  const names = Object.fromEntries(labels.map((l) => [l, backendName(l, results)]));
  const notes = []; // skipped reasons, numbered
  const noteFor = (reason) => {
    let i = notes.indexOf(reason);
    if (i < 0) { notes.push(reason); i = notes.length - 1; }
    return i + 1;
  };
  const cellMs = (l, p) => {
    const r = cell(l, p);
    if (r) return fmtMs(msOf(r)) + (r.ms_per_step?.median == null ? '\\*' : '');
    const s = skip(l, p);
    return s ? `skipped [${noteFor(s.reason)}]` : '–';
  };
  const ratio = (num, den, p) => {
    const x = msOf(cell(num, p)), y = msOf(cell(den, p));
    return x && y ? y / x : null;
  };
  L.push('# tinytrain benchmark');
  L.push('');
  if (machine) {
    L.push(`${machine.date} · commit \`${machine.commit}\` · ${machine.cpu || 'unknown CPU'}, ${machine.cores} cores` +
      (machine.gpu ? ` · ${machine.gpu}${machine.gpu_driver ? ` (driver ${machine.gpu_driver})` : ''}` : '') +
      (machine.webgpu_adapter ? ` · WebGPU adapter: ${machine.webgpu_adapter}` : '') +
      (machine.smoke ? ' · **smoke run (few steps: not a measurement)**' : ''));
    L.push('');
  }
  // what a step contains, once per distinct definition, naming the cells it applies to
  const defs = new Map();
  for (const r of results) {
    if (!r.step_contains) continue;
    if (!defs.has(r.step_contains)) defs.set(r.step_contains, []);
    if (!defs.get(r.step_contains).includes(names[r.label])) defs.get(r.step_contains).push(names[r.label]);
  }
  for (const [text, who] of defs) L.push(`**A step** (${who.join(', ')}): ${mdEsc(text).replace(/\.$/, '')}.`, '');
  const measured = results.find((r) => r.backend !== 'torch');
  if (measured) {
    L.push(`Each tinytrain cell: same weights (seed ${measured.seed}) and the same text batches (${mdEsc(measured.data)}) on every backend; ` +
      `${measured.warmup_steps} warm-up steps from init (not timed), then ≥ ${Math.min(...results.filter((r) => r.measured_steps).map((r) => r.measured_steps))} timed steps; ` +
      'the median is reported. PyTorch cells (\\*) are the mean of the reference script\'s timed steps, with its own init and random data: speed context only.', '');
  }

  // 1. speed
  const hasGpu = labels.includes('webgpu');
  L.push('## Steady-state ms per step (median, lower is better)', '');
  const head = ['preset', 'params', 'GFLOP/step', ...labels.map((l) => names[l])];
  if (hasGpu && labels.includes('wasm')) head.push('WebGPU vs WASM threads');
  if (hasGpu && labels.includes('cpu')) head.push('WebGPU vs native CPU');
  L.push(`| ${head.join(' | ')} |`, `|${head.map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`);
  for (const p of presets) {
    const any = results.find((r) => r.preset === p && Number.isFinite(r.gflop_per_step));
    const row = [p, fmtParams(a.paramsOf[p]), any ? any.gflop_per_step.toFixed(2) : '–', ...labels.map((l) => cellMs(l, p))];
    if (hasGpu && labels.includes('wasm')) row.push(fmtX(ratio('webgpu', 'wasm', p)));
    if (hasGpu && labels.includes('cpu')) row.push(fmtX(ratio('webgpu', 'cpu', p)));
    L.push(`| ${row.join(' | ')} |`);
  }
  L.push('');
  L.push(`Speedup over ${names[baseline] || baseline} (the chart): ms/step of the baseline ÷ ms/step of the backend, same preset.`, '');

  // 1b. compute-bound shapes: ms and TFLOP/s side by side, tinytrain vs PyTorch
  const shapes = computeShapes(a);
  if (shapes.length) {
    const pairs = [['webgpu', 'torch-cuda', 'WebGPU vs PyTorch CUDA'], ['cpu', 'torch-cpu', 'CPU vs PyTorch CPU']]
      .filter(([x, y]) => labels.includes(x) && labels.includes(y));
    const cols = ['webgpu', 'torch-cuda', 'cpu', 'torch-cpu'].filter((l) => labels.includes(l));
    L.push('## Compute-bound shapes: ms per step (TFLOP/s)', '');
    const h = ['shape', 'layers / d / heads / ctx / batch', 'tokens/step', 'GFLOP/step', ...cols.map((l) => names[l]), ...pairs.map((x) => x[2])];
    L.push(`| ${h.join(' | ')} |`, `|${h.map((_, i) => (i < 2 ? '---' : '---:')).join('|')}|`);
    for (const p of shapes) {
      const any = results.find((r) => r.preset === p && r.model);
      const m = any?.model;
      const g = results.find((r) => r.preset === p && Number.isFinite(r.gflop_per_step));
      const row = [p, m ? `${m.layers} / ${m.d_model} / ${m.heads} / ${m.ctx} / ${m.batch}` : '–',
        m ? fmtInt(m.ctx * m.batch) : '–', g ? g.gflop_per_step.toFixed(1) : '–',
        ...cols.map((l) => {
          const r = cell(l, p);
          if (!r) return cellMs(l, p);
          return `${cellMs(l, p)} (${Number.isFinite(r.gflops) ? (r.gflops / 1000).toFixed(2) : '–'})`;
        }),
        ...pairs.map(([x, y]) => fmtX(ratio(x, y, p)))];
      L.push(`| ${row.join(' | ')} |`);
    }
    L.push('', 'TFLOP/s = the step\'s FLOPs by one formula for every row, tinytrain and PyTorch alike (tt_config_step_flops: ' +
      '6 × (12·layers·d² + 256·d) × tokens + 6 × layers × batch × ctx² × d; docs/BENCHMARKS.md) ÷ the median step. ' +
      'Ratios: PyTorch ms ÷ tinytrain ms (above 1×: tinytrain is faster).', '');
  }

  // spread
  L.push('<details><summary>Spread of the measured steps (p10 / median / p90 ms, steps measured)</summary>', '');
  L.push(`| preset | ${labels.map((l) => names[l]).join(' | ')} |`, `|---|${labels.map(() => '---:').join('|')}|`);
  for (const p of presets) {
    L.push(`| ${p} | ${labels.map((l) => {
      const r = cell(l, p);
      if (!r || r.ms_per_step?.median == null) return r ? `${fmtMs(msOf(r))} (mean)` : '–';
      const m = r.ms_per_step;
      return `${fmtMs(m.p10)} / ${fmtMs(m.median)} / ${fmtMs(m.p90)} (${r.measured_steps})`;
    }).join(' | ')} |`);
  }
  L.push('', '</details>', '');

  // 2. throughput
  L.push('## Throughput: tokens/s (GFLOP/s)', '');
  L.push(`| preset | ${labels.map((l) => names[l]).join(' | ')} |`, `|---|${labels.map(() => '---:').join('|')}|`);
  for (const p of presets) {
    L.push(`| ${p} | ${labels.map((l) => {
      const r = cell(l, p);
      if (!r) return '–';
      return `${fmtRate(r.tokens_per_s)} (${Number.isFinite(r.gflops) ? r.gflops.toFixed(r.gflops >= 100 ? 0 : 1) : '–'})`;
    }).join(' | ')} |`);
  }
  L.push('', 'GFLOP/s = tt_config_step_flops (docs/BENCHMARKS.md) ÷ median step time.', '');

  // 3. parity
  const compared = parity.filter((x) => x.drift);
  const nflag = compared.filter((x) => x.flag).length;
  L.push('## Loss parity against the native CPU run', '');
  L.push(`Parity: ${compared.length} cells compared, ${nflag} above ${DRIFT_LIMIT_PCT}% drift.` +
    (nflag ? ' Flagged cells are marked ⚠.' : ''), '');
  L.push('| preset | backend | loss @1 | loss @10 | loss @50 | drift @1 | drift @10 | drift @50 | |',
    '|---|---|---:|---:|---:|---:|---:|---:|---|');
  for (const x of parity) {
    const r = x.row, d = x.drift;
    const mark = x.label === PARITY_REF ? 'reference' : !x.hasRef ? 'no reference' : x.flag ? `⚠ > ${DRIFT_LIMIT_PCT}%` : 'ok';
    L.push(`| ${x.preset} | ${names[x.label]} | ${LOSS_STEPS.map((k) => fmtLoss(r.loss[k])).join(' | ')} | ` +
      `${LOSS_STEPS.map((k) => (d ? fmtDrift(d[k]) : '–')).join(' | ')} | ${mark} |`);
  }
  L.push('');

  // 4. start-up and memory
  L.push('## Start-up (not in the step time) and memory', '');
  L.push('| preset | backend | corpus ms | create ms | upload ms | first step ms | warm-up total ms | peak host MB | backend host MB | GPU buffers MB | cell wall s |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const p of presets) for (const l of labels) {
    const r = cell(l, p);
    if (!r || !r.startup_ms) continue;
    const s = r.startup_ms;
    L.push(`| ${p} | ${names[l]} | ${fmtMs(s.corpus ?? null)} | ${fmtMs(s.create)} | ${fmtMs(s.upload)} | ${fmtMs(s.first_step)} | ` +
      `${fmtMs(s.warmup_total)} | ${Number.isFinite(r.peak_host_bytes) ? (r.peak_host_bytes / 1e6).toFixed(0) : '–'} | ` +
      `${fmtMB(r.backend_host_bytes)} | ${fmtMB(r.gpu_buffer_bytes)} | ${r.cell_wall_s ?? '–'} |`);
  }
  L.push('', '"create" includes WebGPU device creation and pipeline compilation; "first step" is the first (untimed) step; ' +
    '"cell wall" is the whole process (runtime and module load, corpus, start-up, all steps). Peak host memory: getrusage ' +
    'maxrss (native) or the WASM linear memory size. "backend host" / "GPU buffers": what the backend allocated at creation ' +
    '(its memory plan: parameters, gradients, AdamW moments, activations, scratch; nothing is added per step); – where not reported.', '');

  // 4b. phase split
  const split = results.filter((r) => r.phase_ms && Number.isFinite(r.phase_ms.forward));
  if (split.length) {
    L.push('## Where a step\'s time goes: forward / backward / optimizer', '');
    L.push('| preset | backend | forward ms | backward ms | optimizer ms | rest of the step ms | split |',
      '|---|---|---:|---:|---:|---:|---|');
    for (const p of presets) for (const l of labels) {
      const r = cell(l, p);
      if (!r) continue;
      const f = r.phase_ms;
      if (!f || !Number.isFinite(f.forward)) {
        if (r.backend !== 'torch' && 'phase_ms' in r) L.push(`| ${p} | ${names[l]} | – | – | – | – | not measured: ${mdEsc(r.phase_source || '')} |`);
        continue;
      }
      const sum = f.forward + f.backward + f.optimizer, ms = msOf(r);
      const pct = (x) => (sum > 0 ? Math.round((100 * x) / sum) : 0);
      L.push(`| ${p} | ${names[l]} | ${fmtMs(f.forward)} | ${fmtMs(f.backward)} | ${fmtMs(f.optimizer)} | ` +
        `${Number.isFinite(ms) ? fmtMs(ms - sum) : '–'} | ${pct(f.forward)} / ${pct(f.backward)} / ${pct(f.optimizer)} % |`);
    }
    L.push('', 'Medians over the timed steps of each phase separately (so they need not add up to the median step). ' +
      'CPU: host wall clock inside the backend\'s step; WebGPU: GPU timestamps at pass boundaries, only with ' +
      '`tinytrain bench --phases`. "Rest": median step − the three phases (batch sampling, submission, the loss read back).', '');
  }

  // 5. skipped
  if (skipped.length) {
    L.push('## Skipped cells', '');
    for (const s of skipped) noteFor(s.reason);
    notes.forEach((n, i) => {
      const who = skipped.filter((s) => s.reason === n).map((s) => `${s.label} × ${s.preset}`).join(', ');
      L.push(`${i + 1}. ${mdEsc(n)} — ${who}`);
    });
    L.push('');
  }

  // 6. machine
  if (machine) {
    L.push('## Machine and run', '');
    const kv = [['date', machine.date], ['commit', machine.commit], ['CPU', `${machine.cpu} (${machine.cores} cores)`],
      ['memory', machine.mem_bytes ? `${(machine.mem_bytes / 2 ** 30).toFixed(0)} GiB` : ''], ['OS', machine.os],
      ['GPU', machine.gpu ? `${machine.gpu}${machine.gpu_driver ? `, driver ${machine.gpu_driver}` : ''}` : ''],
      ['WebGPU adapter', machine.webgpu_adapter], ['WebGPU library', machine.webgpu_lib], ['Node', machine.node],
      ['PyTorch', machine.torch ? `${machine.torch}${machine.torch_gpu ? ` on ${machine.torch_gpu}` : ''}` : ''],
      ['threads (cpu, wasm)', machine.threads], ['steps', `${machine.warmup} warm-up + ≥ ${machine.steps} measured (min ${machine.min_time} s)` +
        (Number.isFinite(machine.shape_steps) ? `; compute-bound shapes: ${machine.shape_warmup} warm-up + ≥ ${machine.shape_steps} measured` : '')],
      ['data', machine.data], ['command', `\`${machine.command}\``]];
    L.push('| | |', '|---|---|');
    for (const [k, v] of kv) if (v !== '' && v !== undefined && v !== null) L.push(`| ${k} | ${mdEsc(v)} |`);
    L.push('');
  }
  return L.join('\n');
}

// the compute-bound rows (named shapes at real batch sizes), in the order of the presets list
export function computeShapes(a) {
  return a.presets.filter((p) => [...a.results, ...a.skipped].some((r) => r.preset === p && r.shape === true));
}

const xmlEsc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

export function renderSvg(a, baseline) {
  const { labels, cell, results } = a;
  // presets without a baseline result have no speedup: left off the x axis, named in a note
  const presets = a.presets.filter((p) => msOf(cell(baseline, p)));
  const dropped = a.presets.filter((p) => !msOf(cell(baseline, p)));
  const W = 820, H = 480, m = { l: 78, r: 215, t: 56, b: 78 };
  const pw = W - m.l - m.r, ph = H - m.t - m.b;
  const bname = backendName(baseline, results);
  const lines = labels.filter((l) => l !== baseline).map((l) => ({
    label: l, name: backendName(l, results),
    pts: presets.map((p, i) => {
      const x = msOf(cell(l, p)), y = msOf(cell(baseline, p));
      return x && y ? { i, v: y / x } : null;
    }),
  })).filter((s) => s.pts.some((p) => p));
  const vals = lines.flatMap((s) => s.pts.filter(Boolean).map((p) => p.v));
  const lo = Math.min(1, ...vals), hi = Math.max(1, ...vals);
  // y range: from the 1-2-5 step at or below the smallest value to the one at or above the largest
  const steps125 = (v, up) => {
    const e = Math.floor(Math.log10(v));
    const c = [1, 2, 5, 10].map((f) => f * 10 ** e);
    return up ? c.find((x) => x >= v * (1 - 1e-9)) : [...c].reverse().find((x) => x <= v * (1 + 1e-9));
  };
  let ylo = steps125(lo, false), yhi = steps125(hi, true);
  if (yhi / ylo < 4) { ylo = steps125(ylo / 1.5, false); yhi = steps125(yhi * 1.5, true); }
  const e0 = Math.floor(Math.log10(ylo)), e1 = Math.ceil(Math.log10(yhi));
  const ly = (v) => m.t + ph - ((Math.log10(v) - Math.log10(ylo)) / (Math.log10(yhi) - Math.log10(ylo))) * ph;
  const nx = Math.max(presets.length, 1);
  const lx = (i) => m.l + (nx === 1 ? pw / 2 : (i / (nx - 1)) * pw);
  const o = [];
  o.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif" font-size="12">`);
  o.push(`<title>tinytrain: speedup over ${xmlEsc(bname)} per preset</title>`);
  o.push(`<rect x="0" y="0" width="${W}" height="${H}" fill="#ffffff"/>`);
  o.push(`<text x="${m.l}" y="24" font-size="16" font-weight="600" fill="#222">Training-step speedup over ${xmlEsc(bname)}</text>`);
  const mach = a.machine;
  o.push(`<text x="${m.l}" y="42" font-size="11" fill="#666">${xmlEsc(mach ? `${mach.date.slice(0, 10)} · ${mach.gpu || mach.webgpu_adapter || ''} · ${mach.cpu} (${mach.cores} cores) · commit ${mach.commit}` : '')}</text>`);
  // grid + y ticks (1-2-5 per decade)
  o.push('<g class="grid" stroke="#e6e6e6" stroke-width="1">');
  const yt = [];
  for (let e = e0; e <= e1; e++) for (const f of [1, 2, 5]) {
    const v = f * 10 ** e;
    if (v >= ylo * 0.999 && v <= yhi * 1.001) yt.push(v);
  }
  for (const v of yt) o.push(`<line x1="${m.l}" x2="${m.l + pw}" y1="${ly(v).toFixed(1)}" y2="${ly(v).toFixed(1)}"${Number.isInteger(Math.log10(v)) ? '' : ' stroke-dasharray="2,3"'}/>`);
  for (let i = 0; i < presets.length; i++) o.push(`<line x1="${lx(i).toFixed(1)}" x2="${lx(i).toFixed(1)}" y1="${m.t}" y2="${m.t + ph}"/>`);
  o.push('</g>');
  o.push(`<line x1="${m.l}" x2="${m.l + pw}" y1="${ly(1).toFixed(1)}" y2="${ly(1).toFixed(1)}" stroke="#444" stroke-width="1.2" stroke-dasharray="6,4"/>`);
  o.push(`<text x="${m.l + 6}" y="${(ly(1) + 14).toFixed(1)}" fill="#444" font-size="11" stroke="#ffffff" stroke-width="4" stroke-linejoin="round" paint-order="stroke">baseline: ${xmlEsc(bname)} = 1×</text>`);
  // axes
  o.push(`<g class="axes" stroke="#333" stroke-width="1"><line x1="${m.l}" x2="${m.l}" y1="${m.t}" y2="${m.t + ph}"/><line x1="${m.l}" x2="${m.l + pw}" y1="${m.t + ph}" y2="${m.t + ph}"/></g>`);
  o.push('<g class="yticks" fill="#333" text-anchor="end">');
  for (const v of yt) o.push(`<text x="${m.l - 6}" y="${(ly(v) + 4).toFixed(1)}">${v >= 1 ? v : v.toPrecision(1)}×</text>`);
  o.push('</g>');
  o.push('<g class="xticks" fill="#333" text-anchor="middle">');
  presets.forEach((p, i) => {
    o.push(`<text x="${lx(i).toFixed(1)}" y="${m.t + ph + 18}">${xmlEsc(p)}</text>`);
    o.push(`<text x="${lx(i).toFixed(1)}" y="${m.t + ph + 32}" fill="#777" font-size="10">${fmtParams(a.paramsOf[p])}</text>`);
  });
  o.push('</g>');
  o.push(`<text x="${m.l + pw / 2}" y="${H - 18}" text-anchor="middle" fill="#222">preset (parameters)</text>`);
  if (dropped.length) o.push(`<text x="${W - 8}" y="${H - 6}" text-anchor="end" fill="#888" font-size="10">not shown (no ${xmlEsc(bname)} result): ${xmlEsc(dropped.join(', '))}</text>`);
  o.push(`<text transform="translate(20 ${m.t + ph / 2}) rotate(-90)" text-anchor="middle" fill="#222">speedup (×, log scale; higher is faster)</text>`);
  // series (PyTorch, the reference for context, dashed)
  const dash = (label) => (label.startsWith('torch') ? ' stroke-dasharray="6,3"' : '');
  let extra = 0;
  const color = {};
  for (const s of lines) color[s.label] = COLORS[s.label] || EXTRA_COLORS[extra++ % EXTRA_COLORS.length];
  for (const s of lines) {
    o.push(`<g class="series" data-backend="${xmlEsc(s.label)}" stroke="${color[s.label]}" fill="${color[s.label]}">`);
    let run = [];
    const flush = () => {
      if (run.length > 1) o.push(`<polyline fill="none" stroke-width="2.2" stroke-linejoin="round"${dash(s.label)} points="${run.map((p) => `${lx(p.i).toFixed(1)},${ly(p.v).toFixed(1)}`).join(' ')}"/>`);
      run = [];
    };
    for (const p of s.pts) { if (p) run.push(p); else flush(); }
    flush();
    for (const p of s.pts) if (p) o.push(`<circle cx="${lx(p.i).toFixed(1)}" cy="${ly(p.v).toFixed(1)}" r="3.5"><title>${xmlEsc(`${s.name}, ${presets[p.i]}: ${fmtX(p.v)}`)}</title></circle>`);
    o.push('</g>');
  }
  // legend
  const lgx = m.l + pw + 18;
  o.push(`<g class="legend" transform="translate(${lgx} ${m.t})">`);
  o.push(`<text x="0" y="0" font-weight="600" fill="#222">backend</text>`);
  lines.forEach((s, k) => {
    const y = 20 + k * 20;
    o.push(`<line x1="0" x2="22" y1="${y - 4}" y2="${y - 4}" stroke="${color[s.label]}" stroke-width="2.5"${dash(s.label)}/><circle cx="11" cy="${y - 4}" r="3.5" fill="${color[s.label]}"/>`);
    o.push(`<text x="30" y="${y}" fill="#222">${xmlEsc(s.name)}</text>`);
  });
  if (!lines.length) o.push(`<text x="0" y="20" fill="#888">no data</text>`);
  o.push('</g>');
  o.push('</svg>');
  return o.join('\n') + '\n';
}

function main(argv) {
  let input = null, outDir = null, baseline = 'wasm';
  for (let i = 0; i < argv.length; i++) {
    const x = argv[i];
    if (x === '--out') outDir = argv[++i];
    else if (x === '--baseline') baseline = argv[++i];
    else if (x === '-h' || x === '--help') {
      process.stdout.write('usage: node report.mjs RESULTS.jsonl [--out DIR] [--baseline ID]\n');
      return 0;
    } else if (x.startsWith('--')) fail(`unknown option ${x}`);
    else if (input) fail(`unexpected argument ${x}`);
    else input = x;
  }
  if (!input) fail('no results file given (usage: node report.mjs RESULTS.jsonl [--out DIR] [--baseline ID])');
  if (!baseline) fail('--baseline needs a backend id');
  let text;
  try { text = fs.readFileSync(input, 'utf8'); } catch (e) { fail(`cannot read ${input}: ${e.message}`); }
  let rows;
  try { rows = parseResults(text); } catch (e) { fail(`${input}: ${e.message}`); }
  const a = analyse(rows);
  if (!a.results.some((r) => r.label === baseline)) {
    const alt = ['wasm', 'cpu', ...a.labels].find((l) => a.results.some((r) => r.label === l));
    if (alt && alt !== baseline) process.stderr.write(`report.mjs: no results for baseline '${baseline}': using '${alt}'\n`);
    baseline = alt || baseline;
  }
  outDir = outDir || path.dirname(input);
  fs.mkdirSync(outDir, { recursive: true });
  fs.writeFileSync(path.join(outDir, 'report.md'), renderMarkdown(a, baseline) + '\n');
  fs.writeFileSync(path.join(outDir, 'speedup.svg'), renderSvg(a, baseline));
  const nflag = a.parity.filter((x) => x.flag).length;
  process.stdout.write(`report.mjs: ${a.results.length} results, ${a.skipped.length} skipped, ${nflag} parity flags -> ${path.join(outDir, 'report.md')}, speedup.svg\n`);
  return 0;
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith('report.mjs')) process.exit(main(process.argv.slice(2)));
