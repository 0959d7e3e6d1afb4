// webgpu.test.mjs — the browser WebGPU path: the device layer's self-test
// (src/web/web_gpu_selftest.c through src/web/device_web.js), and training on
// WebGPU in the page matching the WASM engine step by step within 0.1%.
// Headless Chromium with --enable-unsafe-webgpu exposes a SwiftShader adapter
// (correct, slow: a few seconds per tiny step), so shapes stay tiny.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launch, losses, openApp, startServer, train, waitRun } from './helpers.mjs';

let browser, srv;

before(async () => {
  srv = await startServer(true);
  browser = await launch();
});

after(async () => {
  if (browser) await browser.close();
  if (srv) srv.server.close();
});

async function gpuOrSkip(t, page) {
  const gpu = await page.evaluate(() => window.tinytrain.caps.gpu);
  if (!gpu) {
    if (process.env.TT_REQUIRE_BROWSER) assert.fail('no WebGPU adapter in headless Chromium (--enable-unsafe-webgpu)');
    t.skip('no WebGPU adapter in this Chromium');
    return null;
  }
  return gpu;
}

test('the browser device layer passes its self-test', async (t) => {
  const ctx = await browser.newContext();
  const page = await openApp(ctx, srv.url);
  if (!(await gpuOrSkip(t, page))) return ctx.close();
  const r = await page.evaluate(() => new Promise((resolve) => {
    const w = new Worker(new URL('./worker.js', location.href), { type: 'module' });
    w.onmessage = (e) => {
      if (e.data.type === 'ready') w.postMessage({ type: 'selftest' });
      else if (e.data.type === 'selftest' || e.data.type === 'error') { w.terminate(); resolve(e.data); }
    };
    w.postMessage({ type: 'init', variant: 'gpu', threads: 1 });
  }));
  assert.equal(r.type, 'selftest', JSON.stringify(r));
  assert.ok(r.ok, r.message);
  assert.deepEqual(page.errors, []);
  await ctx.close();
});

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
