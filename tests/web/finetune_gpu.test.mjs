// finetune_gpu.test.mjs — a LoRA fine-tune on the browser's WebGPU engine, in
// Debian's Chromium (SwiftShader adapter: correct, slow, so the shapes are
// tiny): a model trained by the native CLI on one text (the repository's
// Shakespeare) is fine-tuned in the page's training Worker with rank-8
// adapters on another text (C-like code from a fixed seed, cLikeText of
// helpers.mjs) on the gpu module. The validation loss on the new
// text falls at every evaluation from the base model's (evaluated by the
// native CLI on the same validation batches), the checkpoint it gives back
// keeps every base tensor byte-identical to the uploaded one and evaluates
// natively to the page's last validation loss, and the same fine-tune on the
// WASM engine gives the same training and validation losses within 0.1% per
// step. Driven through the Worker's messages (as webgpu.test.mjs does): the
// page's controls only forward the same start message.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { ROOT, cLikeText, closeBrowser, nativeCli, openApp, startBrowser, tmpDir } from './helpers.mjs';

let browser, srv;

before(async () => ({ srv, browser } = await startBrowser()));
after(() => closeBrowser({ browser, srv }));

// safetensors: header JSON and data section
function parseSt(buf) {
  const n = Number(buf.readBigUInt64LE(0));
  return { h: JSON.parse(buf.subarray(8, 8 + n).toString()), data: buf.subarray(8 + n) };
}
const tensorBytes = (st, k) => st.data.subarray(st.h[k].data_offsets[0], st.h[k].data_offsets[1]);

// One fine-tune in a fresh training Worker of the page, driven by its message
// protocol (web/worker.js): start {initFrom} -> progress... -> done ->
// download. Returns the per-step losses, the validation losses and the
// checkpoint's bytes (base64), or the errors it met.
function fineTune(page, { variant, opts, base, corpus }) {
  return page.evaluate(({ variant, opts, base, corpus }) => new Promise((resolve) => {
    const bytes = (b64) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const w = new Worker(new URL('./worker.js', location.href), { type: 'module' });
    const r = { losses: [], vals: [], errors: [], info: '' };
    const done = () => { w.terminate(); resolve(r); };
    w.onmessage = (e) => {
      const m = e.data;
      if (m.type === 'ready') {
        if (variant === 'gpu' && !m.gpu) { r.errors.push('no WebGPU device: ' + m.gpuError); done(); return; }
        w.postMessage({ type: 'start', corpus: bytes(corpus), corpusName: 'b.txt', opts,
          initFrom: bytes(base), initFromName: 'base.safetensors' });
      } else if (m.type === 'started') {
        r.info = m.info;
      } else if (m.type === 'progress') {
        r.losses.push(...m.losses);
        r.vals.push(...m.vals);
      } else if (m.type === 'status' && m.run === 'done') {
        w.postMessage({ type: 'download' });
      } else if (m.type === 'checkpoint') {
        const b = new Uint8Array(m.bytes);
        let s = '';
        for (let i = 0; i < b.length; i += 0x8000) s += String.fromCharCode(...b.subarray(i, i + 0x8000));
        r.ckpt = btoa(s);
        done();
      } else if (m.type === 'error') {
        r.errors.push(`${m.where}: ${m.message}`);
        if (m.where !== 'autosave') done();
      }
    };
    w.postMessage({ type: 'init', variant, threads: 1 });
  }), { variant, opts, base, corpus });
}

test('LoRA rank 8 fine-tune on WebGPU in the page: val loss on the new text falls, base frozen, WASM parity within 0.1%', async (t) => {
  const cli = nativeCli();
  if (!cli) { t.skip('no native tinytrain to train the base model'); return; }
  const ctx = await browser.newContext();
  const page = await openApp(ctx, srv.url);
  if (!(await page.evaluate(() => window.tinytrain.caps.gpu))) {
    await ctx.close();
    if (process.env.TT_REQUIRE_BROWSER) assert.fail('no WebGPU adapter in headless Chromium (--enable-unsafe-webgpu)');
    t.skip('no WebGPU adapter in this Chromium');
    return;
  }
  const dir = tmpDir();
  // the base: a very small model (SwiftShader runs a few MFLOP/s per kernel)
  // on the repository's Shakespeare; both texts are fixed, so the losses
  // below do not move with the repository's docs or sources
  const shape = ['--layers', '1', '--d-model', '32', '--heads', '2', '--ctx', '16', '--batch', '16'];
  const textA = path.join(ROOT, 'data', 'tinyshakespeare.txt');
  execFileSync(cli, ['train', ...shape, '--steps', '1000', '--lr', '0.01', '--data', textA, '--out', path.join(dir, 'base'),
    '--backend', 'cpu', '--threads', '1', '--sample-tokens', '0', '--save-every', '0'], { stdio: 'ignore' });
  const baseBuf = fs.readFileSync(path.join(dir, 'base', 'checkpoint.safetensors'));
  // the new text: C-like code drawn from a fixed seed (a style the base never saw)
  const textB = path.join(dir, 'b.txt');
  fs.writeFileSync(textB, cLikeText(1500, 7));

  // few steps: each is about a second on SwiftShader, after some 40 s of kernel compiles
  const steps = 6, evalEvery = 3, evalBatches = 4;
  const common = `batch=16 steps=${steps} lr=0.02 schedule=constant lora-rank=8 seed=5 eval-every=${evalEvery} ` +
    `eval-batches=${evalBatches} save-every=0 save-seconds=0`;
  const args = { base: baseBuf.toString('base64'), corpus: fs.readFileSync(textB).toString('base64') };
  const gpu = await fineTune(page, { variant: 'gpu', opts: common + ' backend=webgpu', ...args });
  assert.deepEqual(gpu.errors, []);
  assert.match(gpu.info, /browser/, 'the run is on the WebGPU engine: ' + gpu.info);
  const cpu = await fineTune(page, { variant: 'single', opts: common + ' backend=cpu', ...args });
  assert.deepEqual(cpu.errors, []);
  assert.match(cpu.info, /wasm/, 'the other run is on the WASM engine: ' + cpu.info);

  // parity: every step's training loss and every validation loss within 0.1%
  assert.deepEqual(gpu.losses.map(([s]) => s), Array.from({ length: steps }, (_, i) => i + 1));
  assert.deepEqual(cpu.losses.map(([s]) => s), gpu.losses.map(([s]) => s));
  assert.deepEqual(gpu.vals.map(([s]) => s), [evalEvery, steps]);
  assert.deepEqual(cpu.vals.map(([s]) => s), [evalEvery, steps]);
  const near = (what, a, b) => {
    const rel = Math.abs(a - b) / Math.abs(b);
    assert.ok(Number.isFinite(a) && rel <= 1e-3, `${what}: ${a} vs ${b} (relative ${rel.toExponential(2)})`);
  };
  gpu.losses.forEach(([s, x], i) => near(`step ${s}, WebGPU vs WASM`, x, cpu.losses[i][1]));
  gpu.vals.forEach(([s, x], i) => near(`val at step ${s}, WebGPU vs WASM`, x, cpu.vals[i][1]));

  // the validation loss on the new text falls at every evaluation, from the
  // base model's on the same batches (the fine-tune starts with lora_b = 0:
  // the base's function)
  const evalLoss = (ckpt) => JSON.parse(execFileSync(cli, ['eval', '--ckpt', ckpt, '--data', textB, '--batches', String(evalBatches),
    '--json'], { encoding: 'utf8' }).trim().split('\n').pop()).val_loss;
  const base = evalLoss(path.join(dir, 'base', 'checkpoint.safetensors'));
  const vals = gpu.vals.map(([, x]) => x), last = vals[vals.length - 1];
  t.diagnostic(`val loss on the new text: ${base} from the base, then ${vals.join(', ')}`);
  assert.ok([base, ...vals].every((x, i, a) => i === 0 || x < a[i - 1]) && last < base - 0.1,
    `val loss on the new text: ${base} from the base, then ${vals.join(', ')} in the WebGPU fine-tune`);
  // the checkpoint the page gives back holds the adapters that made that loss (the native CLI agrees)
  const ftPath = path.join(dir, 'ft-webgpu.safetensors');
  fs.writeFileSync(ftPath, Buffer.from(gpu.ckpt, 'base64'));
  near('val at the last step, the page vs the native CLI on its checkpoint', last, evalLoss(ftPath));

  // the checkpoints: LoRA rank 8 recorded, every base tensor byte-identical to the uploaded model's
  const src = parseSt(baseBuf);
  const baseKeys = Object.keys(src.h).filter((k) => k.startsWith('params.'));
  assert.ok(baseKeys.length > 0);
  for (const [name, r] of [['WebGPU', gpu], ['WASM', cpu]]) {
    const ft = parseSt(Buffer.from(r.ckpt, 'base64'));
    const md = ft.h.__metadata__;
    assert.equal(md.init_from, 'base.safetensors');
    assert.equal(JSON.parse(md.config)['lora-rank'], 8);
    assert.equal(Number(md.step), steps);
    assert.equal(Number(JSON.parse(md.config).batch), 16);
    for (const k of baseKeys) assert.ok(ft.h[k] && tensorBytes(ft, k).equals(tensorBytes(src, k)), `${name}: base tensor ${k} changed`);
    const adapters = Object.keys(ft.h).filter((k) => k.startsWith('params.') && k.includes('.lora_'));
    assert.equal(adapters.length, 2 * 4, `${name}: an A and a B per target of the one layer`);
    assert.ok(adapters.some((k) => k.includes('lora_b') && tensorBytes(ft, k).some((x) => x !== 0)), `${name}: the adapters trained`);
  }
  assert.deepEqual(page.errors, []);
  await ctx.close();
});
