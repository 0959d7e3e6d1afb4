// webgpu.test.mjs — the browser WebGPU path (src/webgpu/device_web.c + .js):
// training on WebGPU in the page matching the WASM engine step by step within
// 0.1%, pipelined steps bit-identical to one at a time, and a
// checkpoint uploaded with WebGPU chosen continuing on WebGPU as the CLI does.
// Headless Chromium with --enable-unsafe-webgpu exposes a SwiftShader adapter
// (correct, slow: a few seconds per tiny step), so shapes stay tiny.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { WEB, closeBrowser, losses, nativeCli, openApp, startBrowser, tmpDir, train, waitRun } from './helpers.mjs';

let browser, srv;

before(async () => ({ srv, browser } = await startBrowser()));
after(() => closeBrowser({ browser, srv }));

async function gpuOrSkip(t, page) {
  const gpu = await page.evaluate(() => window.tinytrain.caps.gpu);
  if (!gpu) {
    if (process.env.TT_REQUIRE_BROWSER) assert.fail('no WebGPU adapter in headless Chromium (--enable-unsafe-webgpu)');
    t.skip('no WebGPU adapter in this Chromium');
    return null;
  }
  return gpu;
}

test('WebGPU training in the page matches the WASM engine step by step within 0.1%', async (t) => {
  const ctx = await browser.newContext();
  const page = await openApp(ctx, srv.url);
  if (!(await gpuOrSkip(t, page))) return ctx.close();
  const steps = 3;
  await train(page, { steps, seed: 11, backend: 'webgpu' });
  await waitRun(page, 'done', 400000);
  const gpu = (await losses(page)).loss;
  assert.match(await page.locator('#engineInfo').innerText(), /browser/, 'trained on the WebGPU engine');
  await train(page, { steps, seed: 11, backend: 'single' });
  await waitRun(page, 'done', 120000);
  const cpu = (await losses(page)).loss;
  assert.equal(gpu.length, steps);
  assert.equal(cpu.length, steps);
  for (let i = 0; i < steps; i++) {
    const rel = Math.abs(gpu[i] - cpu[i]) / Math.abs(cpu[i]);
    assert.ok(rel <= 1e-3, `step ${i + 1}: WebGPU ${gpu[i]} vs WASM ${cpu[i]} (relative ${rel.toExponential(2)})`);
  }
  assert.deepEqual(page.errors, []);
  await ctx.close();
});

test('pipelined WebGPU training (step k+1 in flight while step k is read) is bit-identical to one step at a time', async (t) => {
  const ctx = await browser.newContext();
  const page = await openApp(ctx, srv.url);
  if (!(await gpuOrSkip(t, page))) return ctx.close();
  // Two runs of the Worker straight (not through the page's controls): the
  // same options, one with pipeline=0. Evals every 2 of 4 steps: the engine
  // pipelines steps 1->2 and 3->4 and must stop at the evals and the end.
  const runs = await page.evaluate(async () => {
    const corpus = new Uint8Array(await (await fetch('dist/corpus.txt')).arrayBuffer());
    const one = (pipe) => new Promise((resolve) => {
      const w = new Worker(new URL('./worker.js', location.href), { type: 'module' });
      const r = { losses: [], vals: [], pipelined: -1, errors: [] };
      w.onmessage = (e) => {
        const m = e.data;
        if (m.type === 'ready') {
          w.postMessage({ type: 'start', corpus, corpusName: 'corpus.txt',
            opts: `preset=tiny steps=4 seed=7 eval-every=2 eval-batches=1 backend=webgpu pipeline=${pipe}` });
        } else if (m.type === 'progress') {
          r.losses.push(...m.losses);
          r.vals.push(...m.vals);
          r.pipelined = m.pipelined;
        } else if (m.type === 'status' && m.run === 'done') {
          w.postMessage({ type: 'download' });
        } else if (m.type === 'checkpoint') {
          r.ckpt = Array.from(new Uint8Array(m.bytes));
          w.terminate();
          resolve(r);
        } else if (m.type === 'error') {
          r.errors.push(`${m.where}: ${m.message}`);
          if (m.where !== 'autosave') { w.terminate(); resolve(r); }
        }
      };
      w.postMessage({ type: 'init', variant: 'gpu', threads: 1 });
    });
    const piped = await one(1);
    const plain = await one(0);
    return { piped, plain };
  });
  const { piped, plain } = runs;
  assert.deepEqual(piped.errors, []);
  assert.deepEqual(plain.errors, []);
  assert.equal(plain.pipelined, 0, 'pipeline=0 never overlaps steps');
  assert.equal(piped.pipelined, 2, 'steps 1 and 3 were collected while the next one computed');
  assert.equal(piped.losses.length, 4);
  assert.deepEqual(piped.losses.map(([s]) => s), [1, 2, 3, 4]);
  for (const [s, x] of piped.losses) assert.ok(Number.isFinite(x), `step ${s}: loss ${x}`);
  assert.deepEqual(piped.losses, plain.losses, 'the same losses, bit for bit');
  assert.deepEqual(piped.vals.map(([s]) => s), [2, 4]);
  assert.deepEqual(piped.vals, plain.vals, 'the same validation losses, bit for bit');
  assert.ok(piped.ckpt && piped.ckpt.length > 0, 'a checkpoint came back');
  assert.ok(Buffer.from(piped.ckpt).equals(Buffer.from(plain.ckpt)), 'the same checkpoint, byte for byte');
  assert.deepEqual(page.errors, []);
  await ctx.close();
});

test('a checkpoint uploaded with WebGPU chosen continues on the WebGPU engine, as the native CLI continues it', async (t) => {
  const cli = nativeCli();
  if (!cli) {
    if (process.env.TT_REQUIRE_BROWSER) assert.fail('native CLI not found (set TINYTRAIN)');
    return t.skip('native CLI not found');
  }
  const ctx = await browser.newContext();
  const page = await openApp(ctx, srv.url);
  if (!(await gpuOrSkip(t, page))) return ctx.close();
  const dir = tmpDir();
  const corpus = path.join(WEB, 'dist', 'corpus.txt');
  const run = (args) => execFileSync(cli, [...args, '--data', corpus, '--json', '--sample-tokens', '0', '--threads', '1'], { encoding: 'utf8' });
  run(['train', '--preset', 'tiny', '--steps', '4', '--seed', '5', '--out', path.join(dir, 'a')]);
  const ckpt = path.join(dir, 'a', 'checkpoint.safetensors');
  const nat = run(['train', '--resume', ckpt, '--steps', '6', '--out', path.join(dir, 'b')]).split('\n')
    .filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)).filter((e) => e.event === 'step').map((e) => e.loss);
  assert.equal(nat.length, 2);

  await page.click('input[name=backend][value=webgpu] + span');
  await page.setInputFiles('#ckptFile', ckpt);
  await page.waitForFunction(() => window.tinytrain.data.x.length === 4, null, { timeout: 400000 });
  await waitRun(page, 'done', 400000);
  const info = await page.locator('#engineInfo').innerText();
  assert.doesNotMatch(info, /wasm-simd128/, `the uploaded run is on WebGPU, not the CPU engine: ${info}`);
  await page.fill('#moreN', '6');
  await page.click('#moreBtn');
  await page.waitForFunction(() => window.tinytrain.data.x.length === 6 && window.tinytrain.run === 'done', null, { timeout: 400000 });
  const web = (await losses(page)).loss.slice(4, 6);
  for (let i = 0; i < 2; i++) {
    const rel = Math.abs(web[i] - nat[i]) / Math.abs(nat[i]);
    assert.ok(rel <= 1e-3, `step ${5 + i}: WebGPU ${web[i]} vs native CPU ${nat[i]} (relative ${rel.toExponential(2)})`);
  }
  assert.deepEqual(page.errors, []);
  await ctx.close();
  fs.rmSync(dir, { recursive: true, force: true });
});
