// gpu_lost.test.mjs — the browser's WebGPU device lost in the middle of a
// run (what a GPU reset or a crashed GPU process does to a tab). The device
// is really destroyed (GPUDevice.destroy() inside the training Worker, through
// a hook appended to a served copy of web/worker.js; the app itself has no
// such hook), while steps are in flight. What must hold:
//   - one error, naming the lost device, the step where training stopped
//     and the autosave that is kept; the run ends paused, the page lives;
//   - the autosave in OPFS is untouched: still the checkpoint and metadata
//     of the step saved before the loss (no write from an unreadable device
//     replaces it), with the losses the page showed up to that step;
//   - as the message says, a reload restores that step and training resumes
//     on a new device.
// The autosave point is made deterministic by a pause (which autosaves),
// then a resume and at least one more step before the device goes.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { launch, openApp, readAutosave, recordWorkers, tmpDir, train, waitRun, WEB } from './helpers.mjs';
import { serve } from '../../scripts/serve.mjs';

const STEPS = 20;
const HOOK = `
// test hook (tests/web/gpu_lost.test.mjs): destroy the GPU device on request
{
  const onm = self.onmessage;
  self.onmessage = (e) => {
    if (e.data && e.data.type === '__testLoseDevice') { if (M && M.ttGpuDevice) M.ttGpuDevice.destroy(); return; }
    onm(e);
  };
}
`;

let browser, srv, root;

before(async () => {
  root = tmpDir('tt-web-lost-');
  fs.cpSync(WEB, root, { recursive: true });
  fs.appendFileSync(path.join(root, 'worker.js'), HOOK);
  srv = await serve({ root, port: 0, isolation: true, quiet: true });
  browser = await launch();
});

after(async () => {
  if (browser) await browser.close();
  if (srv) srv.server.close();
  if (root) fs.rmSync(root, { recursive: true, force: true });
});

const log = (page) => page.evaluate(() => window.__ttLog);

test('WebGPU: the device lost mid-run: one clear error, the autosave kept as it was', async (t) => {
  const ctx = await browser.newContext();
  await recordWorkers(ctx);
  const page = await openApp(ctx, srv.url);
  if (!(await page.evaluate(() => window.tinytrain.caps.gpu))) {
    if (process.env.TT_REQUIRE_BROWSER) assert.fail('no WebGPU adapter in headless Chromium (--enable-unsafe-webgpu)');
    t.skip('no WebGPU adapter in this Chromium');
    await ctx.close();
    return;
  }
  await train(page, { steps: STEPS, backend: 'webgpu' });
  // pause (it autosaves the step it settles on), resume, one more step
  await page.waitForFunction(() => window.tinytrain.data.x.length >= 2, null, { timeout: 240000 });
  await page.click('#pauseBtn');
  await waitRun(page, 'paused', 240000);
  const k = await page.evaluate(() => window.tinytrain.data.x.length);
  const before = await readAutosave(page);
  assert.equal(before.meta.step, k, 'the pause autosaved its step');
  assert.equal(before.ckpt.step, k);
  await page.click('#pauseBtn'); // Resume
  await waitRun(page, 'running');
  await page.waitForFunction((n) => window.tinytrain.data.x.length > n, k, { timeout: 240000 });
  assert.equal(await page.evaluate(() => window.tinytrain.run), 'running', 'still running when the device goes');

  const from = (await log(page)).length;
  await page.evaluate(() => window.__ttWorkers.forEach((w) => w.postMessage({ type: '__testLoseDevice' })));
  await waitRun(page, ['paused', 'done', 'stopped'], 240000);
  assert.equal(await page.evaluate(() => window.tinytrain.run), 'paused', 'the run ends paused');
  await page.waitForFunction((f) => window.__ttLog.slice(f).some((m) => m.type === 'status'), from, { timeout: 60000 });

  const after = (await log(page)).slice(from);
  const errors = after.filter((m) => m.type === 'error');
  t.diagnostic('after the loss: ' + JSON.stringify(errors));
  assert.equal(errors.length, 1, 'one error: ' + JSON.stringify(errors));
  assert.equal(errors[0].where, 'train');
  assert.match(errors[0].message, /device lost/i);
  assert.match(errors[0].message, /at step \d+\): training stopped/);
  assert.ok(errors[0].message.includes(`The autosave of step ${k} is kept: reload the page to resume from it.`), errors[0].message);
  assert.ok(!errors[0].message.includes('\n'), 'one line');
  assert.deepEqual(after.filter((m) => m.type === 'saved'), [], 'no autosave after the loss');

  const shownLoss = await page.evaluate(() => [...window.tinytrain.data.loss]);
  const now = await readAutosave(page);
  assert.deepEqual(now, before, 'OPFS holds exactly the autosave made before the loss, byte for byte');
  assert.deepEqual(now.ckpt.losses, shownLoss.slice(0, k), "the kept checkpoint's losses are the ones the page showed");
  assert.deepEqual(page.errors.filter((e) => /^(pageerror|crash)/.test(e)), [], 'the page lives');

  // what the message promises: a reload restores step k and resumes on a new device
  await page.reload();
  await page.waitForFunction(() => document.body.dataset.ready === '1' && !document.getElementById('banner').hidden, null, { timeout: 60000 });
  const restored = await page.evaluate(() => ({ x: [...window.tinytrain.data.x], loss: [...window.tinytrain.data.loss], run: window.tinytrain.run }));
  assert.equal(restored.x.length, k, 'the reload restored the kept step');
  assert.deepEqual(restored.loss, shownLoss.slice(0, k));
  assert.equal(restored.run, 'paused');
  await page.click('#pauseBtn'); // Resume
  await page.waitForFunction((n) => window.tinytrain.data.x.length > n, k, { timeout: 240000 });
  assert.equal(await page.evaluate(() => window.tinytrain.runVariant), 'gpu', 'resumed on WebGPU');
  await ctx.close();
});
