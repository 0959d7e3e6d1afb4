// gpu_pause.test.mjs — pause, resume, stop and "continue +N steps" on the
// browser WebGPU engine while steps are in flight. The engine pipelines (step
// k+1 is submitted before step k's loss is read, src/web/web_api.c and the
// loop in web/worker.js) and must drain before a pause or stop is reported:
// no step lost or recorded twice, the autosave holds the reported step, and
// the losses equal those of a run that was never interrupted, bit for bit.
// Everything goes through the page's own controls; the per-step losses are
// the ones the chart draws (window.tinytrain.data).
//
// The runs use schedule=constant (added to the options the page sends; the page
// has no control for it): "continue +N" raises the total, and a cosine
// schedule depends on the total, so only a schedule that does not can make a
// stopped-and-continued run equal to a straight one.
// SwiftShader is slow (seconds per tiny step): few steps.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { closeBrowser, losses, openApp, readAutosave, startBrowser, train, waitRun } from './helpers.mjs';

const STEPS = 9;       // the straight run and the paused run
const STOP_STEPS = 6;  // the stopped run, then continued by STEPS - STOP_STEPS
const SEED = 21;

let browser, srv;
let ref = null; // the straight run: { loss, val, pipelined }

before(async () => ({ srv, browser } = await startBrowser()));
after(() => closeBrowser({ browser, srv }));

// A fresh context (its own, empty OPFS) with a page that records what the
// training Worker reports (progress, status, saved, error) and runs with a
// constant learning rate.
async function freshPage(t) {
  const ctx = await browser.newContext();
  await ctx.addInitScript(() => {
    const Native = window.Worker;
    const send = Native.prototype.postMessage;
    window.__ttLog = [];
    Native.prototype.postMessage = function (m, transfer) {
      if (m && m.type === 'start') m = { ...m, opts: m.opts + ' schedule=constant' };
      return send.call(this, m, transfer);
    };
    window.Worker = class extends Native {
      constructor(...args) {
        super(...args);
        this.addEventListener('message', (e) => {
          const m = e.data;
          if (!m || !['progress', 'status', 'saved', 'error', 'started'].includes(m.type)) return;
          window.__ttLog.push({ type: m.type, run: m.run, step: m.step, total: m.total, pipelined: m.pipelined,
            losses: m.losses, inFlightAtRequest: m.inFlightAtRequest, where: m.where, message: m.message });
        });
      }
    };
  });
  const page = await openApp(ctx, srv.url);
  const gpu = await page.evaluate(() => window.tinytrain.caps.gpu);
  if (!gpu) {
    if (process.env.TT_REQUIRE_BROWSER) assert.fail('no WebGPU adapter in headless Chromium (--enable-unsafe-webgpu)');
    t.skip('no WebGPU adapter in this Chromium');
    await ctx.close();
    return null;
  }
  return { ctx, page };
}

const log = (page) => page.evaluate(() => window.__ttLog);
const vals = (page) => page.evaluate(() => [...window.tinytrain.valMap.entries()].sort((a, b) => a[0] - b[0]));

// The run as the page shows it and as the autosave in OPFS holds it.
async function shown(page) {
  const ui = await page.evaluate(() => ({
    stepText: document.getElementById('stStep').textContent,
    x: [...window.tinytrain.data.x], loss: [...window.tinytrain.data.loss],
  }));
  const { meta, ckpt } = await readAutosave(page);
  return { ...ui, meta, ckpt };
}

const range = (n) => Array.from({ length: n }, (_, i) => i + 1);

// Waits until the page has at least `n` losses while still running, then
// clicks `button`; returns the state it settled in.
async function interrupt(page, n, button, want) {
  await page.waitForFunction((k) => window.tinytrain.data.x.length >= k, n, { timeout: 240000 });
  assert.equal(await page.evaluate(() => window.tinytrain.run), 'running', `still running after ${n} steps`);
  await page.click(button);
  await waitRun(page, [want, 'done'], 240000);
  return page.evaluate(() => window.tinytrain.run);
}

// After a pause or stop: the step the page reports is the number of losses
// it received (each step once, in order), and the autosave holds that step
// and those losses.
function checkSettled(s, total, status, what) {
  const k = s.x.length;
  assert.ok(k >= 2 && k < total, `${what} mid-run: ${k} of ${total}`);
  assert.deepEqual(s.x, range(k), `${what}: steps 1..${k}, none lost or repeated`);
  assert.equal(s.stepText, `${k} / ${total}`, `${what}: the step shown`);
  assert.equal(s.meta.step, k, `${what}: autosave metadata step`);
  assert.equal(s.meta.status, status, `${what}: autosave status`);
  assert.equal(s.ckpt.step, k, `${what}: checkpoint step`);
  assert.deepEqual(s.ckpt.losses, s.loss, `${what}: the checkpoint's loss history is what the page shows`);
  assert.equal(s.meta.loss, s.loss[k - 1], `${what}: autosaved loss`);
  assert.equal(s.ckpt.sched, 'constant');
}

// Steps in flight when the pause/stop reached the Worker, from the status
// message after log entry `from`.
async function inFlightReport(page, from, run) {
  const l = (await log(page)).slice(from);
  const st = l.filter((m) => m.type === 'status' && m.run === run && m.inFlightAtRequest != null);
  assert.equal(st.length, 1, `one ${run} status reports the steps in flight at the request: ${JSON.stringify(l.filter((m) => m.type === 'status'))}`);
  const n = st[0].inFlightAtRequest;
  assert.ok(Number.isInteger(n) && n >= 0 && n <= 2, `steps in flight: ${n}`);
  return n;
}

test('WebGPU: a straight pipelined run (the reference)', async (t) => {
  const p = await freshPage(t);
  if (!p) return;
  const { ctx, page } = p;
  await train(page, { steps: STEPS, seed: SEED, backend: 'webgpu' });
  await waitRun(page, 'done', 400000);
  assert.equal(await page.evaluate(() => window.tinytrain.runVariant), 'gpu');
  const { x, loss } = await losses(page);
  assert.deepEqual(x, range(STEPS));
  assert.ok(loss.every(Number.isFinite), 'finite losses: ' + loss);
  const l = await log(page);
  const prog = l.filter((m) => m.type === 'progress');
  const pipelined = Math.max(...prog.map((m) => m.pipelined));
  assert.ok(pipelined >= 1, 'steps overlapped (pipelined collects: ' + pipelined + ')');
  assert.deepEqual(prog.flatMap((m) => m.losses).map(([s]) => s), range(STEPS), 'each step reported once');
  const v = await vals(page);
  assert.deepEqual(v.map(([s]) => s), [STEPS], 'validation at the last step');
  const s = await shown(page);
  assert.equal(s.meta.status, 'done');
  assert.equal(s.ckpt.step, STEPS);
  assert.deepEqual(s.ckpt.losses, loss);
  assert.deepEqual(l.filter((m) => m.type === 'error'), []);
  assert.deepEqual(page.errors, []);
  ref = { loss, val: v, pipelined };
  await ctx.close();
});

test('WebGPU: pause with steps in flight, resume, finish: the same losses bit for bit', async (t) => {
  if (!ref) return t.skip('no reference run');
  const p = await freshPage(t);
  if (!p) return;
  const { ctx, page } = p;
  await train(page, { steps: STEPS, seed: SEED, backend: 'webgpu' });
  // The Worker nearly always has a step in flight while running (it drains
  // only to autosave, every 10 s); should a pause land in that short gap,
  // resume and pause once more: one pause must catch steps in flight.
  let inFlight = 0;
  for (let tries = 0; tries < 2 && inFlight === 0; tries++) {
    if (tries) {
      await page.click('#pauseBtn'); // Resume
      await waitRun(page, 'running');
    }
    const have = await page.evaluate(() => window.tinytrain.data.x.length);
    const from = (await log(page)).length;
    const got = await interrupt(page, Math.max(2, have + 1), '#pauseBtn', 'paused');
    assert.equal(got, 'paused', 'the pause took effect before the end');
    const s = await shown(page);
    checkSettled(s, STEPS, 'paused', 'paused');
    assert.deepEqual(s.loss, ref.loss.slice(0, s.x.length), 'losses up to the pause');
    inFlight = await inFlightReport(page, from, 'paused');
    t.diagnostic(`paused at step ${s.x.length} with ${inFlight} step(s) in flight`);
    // the last progress says paused at that step
    const lastProg = (await log(page)).filter((m) => m.type === 'progress').at(-1);
    assert.equal(lastProg.step, s.x.length);
    assert.equal(lastProg.run, 'paused');
  }
  assert.ok(inFlight >= 1, 'a pause arrived while steps were in flight');

  await page.click('#pauseBtn'); // Resume
  await waitRun(page, 'done', 400000);
  const { x, loss } = await losses(page);
  assert.deepEqual(x, range(STEPS), 'every step once');
  assert.deepEqual(loss, ref.loss, 'the same losses as the straight run, bit for bit');
  assert.deepEqual(await vals(page), ref.val, 'the same validation loss');
  const e = await shown(page);
  assert.equal(e.ckpt.step, STEPS);
  assert.deepEqual(e.ckpt.losses, ref.loss);
  assert.deepEqual((await log(page)).filter((m) => m.type === 'error'), []);
  assert.deepEqual(page.errors, []);
  await ctx.close();
});

test('WebGPU: stop with steps in flight, then continue to N: the expected total and the same losses bit for bit', async (t) => {
  if (!ref) return t.skip('no reference run');
  const p = await freshPage(t);
  if (!p) return;
  const { ctx, page } = p;
  await train(page, { steps: STOP_STEPS, seed: SEED, backend: 'webgpu' });
  const got = await interrupt(page, 2, '#stopBtn', 'stopped');
  assert.equal(got, 'stopped', 'the stop took effect before the end');
  const s = await shown(page);
  checkSettled(s, STOP_STEPS, 'stopped', 'stopped');
  assert.deepEqual(s.loss, ref.loss.slice(0, s.x.length), 'losses up to the stop');
  const inFlight = await inFlightReport(page, 0, 'stopped');
  t.diagnostic(`stopped at step ${s.x.length} with ${inFlight} step(s) in flight`);

  await page.fill('#moreN', String(STEPS));
  await page.click('#moreBtn');
  await page.waitForFunction((n) => window.tinytrain.run === 'done' && window.tinytrain.data.x.length >= n, STEPS, { timeout: 400000 });
  const { x, loss } = await losses(page);
  assert.deepEqual(x, range(STEPS), 'continued to the new total, every step once');
  assert.equal(await page.locator('#stStep').innerText(), `${STEPS} / ${STEPS}`);
  assert.deepEqual(loss, ref.loss, 'the same losses as the straight run, bit for bit');
  assert.deepEqual(await vals(page), ref.val, 'the same validation loss');
  const e = await shown(page);
  assert.equal(e.meta.status, 'done');
  assert.equal(e.ckpt.step, STEPS);
  assert.deepEqual(e.ckpt.losses, ref.loss);
  assert.deepEqual((await log(page)).filter((m) => m.type === 'error'), []);
  assert.deepEqual(page.errors, []);
  await ctx.close();
});
