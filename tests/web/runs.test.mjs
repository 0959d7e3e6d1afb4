// runs.test.mjs — nothing is lost silently (issue 15): New run, a checkpoint
// load and a preset change ask first; one tab at a time owns the saved run
// (the second is told and can take over, the first then stops and says
// why); Forget while training sticks; autosaves keep to their interval.
// Tiny preset, few steps: the whole file runs in about a minute.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { closeBrowser, listAutosave, openApp, readAutosave, startBrowser, tmpDir, train, waitRun } from './helpers.mjs';
import { autosaveInterval, AUTOSAVE_MIN_S } from '../../web/autosave.js';

let browser, srv;
before(async () => ({ srv, browser } = await startBrowser()));
after(() => closeBrowser({ browser, srv }));

// Answers the page's confirmation dialog (ok: the action; else Cancel) and returns its text.
async function answer(page, ok) {
  await page.waitForSelector('#askDlg[open]', { timeout: 10000 });
  const text = await page.locator('#askText').innerText();
  await page.click(ok ? '#askOk' : '#askCancel');
  await page.waitForSelector('#askDlg', { state: 'hidden' });
  return text;
}

// A context whose pages log the training Worker's messages (window.__ttLog).
async function loggedContext() {
  const ctx = await browser.newContext();
  await ctx.addInitScript(() => {
    const Native = window.Worker;
    window.__ttLog = [];
    window.Worker = class extends Native {
      constructor(...a) {
        super(...a);
        this.addEventListener('message', (e) => {
          const m = e.data;
          if (m && ['status', 'saved', 'error', 'ownerLost', 'cleared'].includes(m.type))
            window.__ttLog.push({ type: m.type, run: m.run, step: m.step, where: m.where, message: m.message, t: performance.now() });
        });
      }
    };
  });
  return ctx;
}
const log = (page) => page.evaluate(() => window.__ttLog);
const steps = (page) => page.evaluate(() => window.tinytrain.data.x.length);

test('New run while training asks first: Cancel keeps the run, Discard starts clean with no autosave error', async () => {
  const ctx = await loggedContext();
  const page = await openApp(ctx, srv.url);
  await train(page, { steps: 5000, seed: 3 });
  await page.waitForFunction(() => /Autosaved step [1-9]/.test(document.getElementById('ckptStatus').textContent), null, { timeout: 120000 });
  const n0 = await steps(page);
  await page.click('#trainBtn'); // "New run"
  const q = await answer(page, false);
  assert.match(q, /discard/i, q);
  assert.match(q, /tiny, step/, 'the question names the run: ' + q);
  await page.waitForFunction((n) => window.tinytrain.data.x.length > n + 2, n0, { timeout: 60000 });
  assert.equal(await page.evaluate(() => window.tinytrain.run), 'running', 'Cancel kept the run');

  // Discard: a fresh run from step 1 of a new seed, its own autosave, no error
  await page.fill('#seed', '4');
  await page.click('#trainBtn');
  await answer(page, true);
  await page.waitForFunction(() => window.tinytrain.run === 'running' && window.tinytrain.data.x.length >= 3 &&
    window.tinytrain.data.x.length < 1000, null, { timeout: 60000 });
  await page.click('#pauseBtn');
  await waitRun(page, 'paused');
  await page.waitForFunction(() => /Autosaved step/.test(document.getElementById('ckptStatus').textContent), null, { timeout: 60000 });
  const a = await readAutosave(page);
  const n1 = await steps(page);
  assert.equal(a.meta.step, n1, 'the autosave is the new run\'s');
  assert.deepEqual(a.ckpt.losses, await page.evaluate(() => window.tinytrain.data.loss.map(Math.fround)));
  const errs = (await log(page)).filter((m) => m.type === 'error');
  assert.deepEqual(errs, [], 'no error (no "autosave failed") after New run');
  assert.deepEqual(page.errors, []);
  await ctx.close();
});

test('two tabs: the second is told the run is open elsewhere; Take over stops the first, which says why', async () => {
  const ctx = await loggedContext();
  const a = await openApp(ctx, srv.url);
  await train(a, { steps: 5000, seed: 5 });
  await a.waitForFunction(() => /Autosaved step [1-9]/.test(document.getElementById('ckptStatus').textContent), null, { timeout: 120000 });
  const b = await openApp(ctx, srv.url);
  await b.waitForFunction(() => !document.getElementById('banner').hidden, null, { timeout: 30000 });
  assert.match(await b.locator('#banner').innerText(), /open in another tab/);
  assert.equal(await b.evaluate(() => window.tinytrain.run), 'idle', 'the second tab does not train the run');
  const na = await steps(a);
  await a.waitForFunction((n) => window.tinytrain.data.x.length > n + 2, na, { timeout: 60000 });
  assert.equal(await a.evaluate(() => window.tinytrain.run), 'running', 'the first tab trains on');
  // a checkpoint loaded in the second tab would take the run over: asked first; Cancel leaves the first tab training
  const dir = tmpDir();
  const ck = path.join(dir, 'other.safetensors');
  fs.writeFileSync(ck, Buffer.alloc(64, 7));
  await b.setInputFiles('#ckptFile', ck);
  assert.match(await answer(b, false), /Another tab has the saved run open/);
  const na2 = await steps(a);
  await a.waitForFunction((n) => window.tinytrain.data.x.length > n + 1, na2, { timeout: 60000 });
  assert.equal(await a.evaluate(() => window.tinytrain.run), 'running', 'Cancel: the first tab still trains');
  fs.rmSync(dir, { recursive: true, force: true });

  await b.click('#takeOverBtn');
  await b.waitForFunction(() => /Took over your run/.test(document.getElementById('banner').textContent), null, { timeout: 60000 });
  await a.waitForFunction(() => window.tinytrain.run === 'paused' && /moved to another tab/.test(document.getElementById('banner').textContent),
    null, { timeout: 60000 });
  // the first tab writes nothing more: the second tab's run and autosave move on alone
  const stepB = await b.evaluate(() => window.tinytrain.lastStep);
  await waitRun(b, ['running', 'paused']);
  if (await b.evaluate(() => window.tinytrain.run) === 'running') {
    await b.waitForFunction((n) => window.tinytrain.data.x.length > n + 2, stepB, { timeout: 60000 });
    await b.click('#pauseBtn');
    await waitRun(b, 'paused');
  }
  await b.waitForFunction(() => /Autosaved step/.test(document.getElementById('ckptStatus').textContent), null, { timeout: 60000 });
  const saved = await readAutosave(b);
  assert.equal(saved.meta.step, await steps(b), "the autosave is the second tab's");
  assert.deepEqual((await log(a)).filter((m) => m.type === 'error'), []);
  assert.deepEqual((await log(b)).filter((m) => m.type === 'error'), []);
  assert.deepEqual(a.errors, []);
  assert.deepEqual(b.errors, []);
  await ctx.close();
});

test('Forget while training sticks (no autosave brings it back) and says when nothing was saved', async () => {
  const ctx = await loggedContext();
  const page = await openApp(ctx, srv.url);
  // nothing saved yet: Forget says so
  await page.click('#forgetBtn');
  await page.waitForFunction(() => /Nothing is saved/.test(document.getElementById('ckptStatus').textContent), null, { timeout: 10000 });

  await train(page, { steps: 5000, seed: 6 });
  await page.waitForFunction(() => /Autosaved step [1-9]/.test(document.getElementById('ckptStatus').textContent), null, { timeout: 120000 });
  await page.click('#forgetBtn');
  assert.match(await answer(page, true), /Remove the saved run/);
  await page.waitForFunction(() => /removed/.test(document.getElementById('ckptStatus').textContent), null, { timeout: 10000 });
  const from = (await log(page)).length;
  // a pause is a save point, and the loop's own save points come every 200 steps: none may write
  const n = await steps(page);
  await page.waitForFunction((k) => window.tinytrain.data.x.length > k + 250, n, { timeout: 120000 });
  await page.click('#pauseBtn');
  await waitRun(page, 'paused');
  assert.deepEqual((await log(page)).slice(from).filter((m) => m.type === 'saved' || m.type === 'error'), []);
  const left = await page.evaluate(async () => {
    try { await (await navigator.storage.getDirectory()).getDirectoryHandle('tinytrain'); return 'folder'; } catch (e) { return 'none'; }
  });
  assert.equal(left, 'none', 'nothing saved after Forget');
  await page.reload();
  await page.waitForFunction(() => document.body.dataset.ready === '1');
  await page.waitForTimeout(500);
  assert.equal(await page.evaluate(() => window.tinytrain.run), 'idle', 'a reload has nothing to restore');
  assert.deepEqual(page.errors, []);
  await ctx.close();
});

test('autosaves while training keep to the interval; a large checkpoint is written less often', async () => {
  assert.equal(autosaveInterval(850e3), AUTOSAVE_MIN_S);
  assert.ok(autosaveInterval(287e6) >= 120, 'a 287 MB checkpoint: minutes apart, not every step');
  const ctx = await loggedContext();
  const page = await openApp(ctx, srv.url);
  await train(page, { steps: 5000, seed: 8 });
  // the loop makes a save point every 200 steps; the writes are 10 s apart
  const n = await steps(page);
  await page.waitForFunction((k) => window.tinytrain.data.x.length > k + 450, n, { timeout: 180000 });
  const saves = (await log(page)).filter((m) => m.type === 'saved');
  assert.ok(saves.length >= 1, 'the first save point is written');
  for (let i = 1; i < saves.length; i++)
    assert.ok(saves[i].t - saves[i - 1].t >= AUTOSAVE_MIN_S * 1000 - 50, `autosaves ${saves[i].t - saves[i - 1].t} ms apart`);
  // a pause always writes
  await page.click('#pauseBtn');
  await waitRun(page, 'paused');
  await page.waitForFunction(() => /Autosaved step/.test(document.getElementById('ckptStatus').textContent));
  assert.equal((await readAutosave(page)).meta.step, await steps(page));
  await ctx.close();
});

test('a checkpoint load and a preset change ask before replacing a run', async () => {
  const ctx = await browser.newContext();
  const page = await openApp(ctx, srv.url);
  await train(page, { steps: 30, seed: 9 });
  await waitRun(page, 'done');
  // preset change: asked; Cancel puts the old size back
  await page.selectOption('#preset', 'small');
  assert.match(await answer(page, false), /current run/);
  assert.equal(await page.inputValue('#preset'), 'tiny');
  assert.match(await page.locator('#setupNote').innerText(), /current run/);
  await page.selectOption('#preset', 'small');
  await answer(page, true);
  assert.match(await page.locator('#setupNote').innerText(), /NEXT run/);
  // checkpoint load: asked; Cancel keeps the run
  const dir = tmpDir();
  const junk = path.join(dir, 'x.safetensors');
  fs.writeFileSync(junk, Buffer.alloc(64, 7));
  await page.setInputFiles('#ckptFile', junk);
  assert.match(await answer(page, false), /replaces the current run/);
  assert.equal(await page.evaluate(() => window.tinytrain.run), 'done');
  assert.deepEqual(page.errors, []);
  fs.rmSync(dir, { recursive: true, force: true });
  await ctx.close();
});

test('an autosave that fails keeps the previous one and says what happened, the detail one click away', async () => {
  const ctx = await loggedContext();
  // the served worker.js gets a hook: on request, the next checkpoint file cannot be created
  const page = await ctx.newPage();
  page.errors = [];
  page.on('pageerror', (e) => page.errors.push(e.message));
  await page.route(/\/worker\.js$/, async (route) => {
    const res = await route.fetch();
    const body = (await res.text()) + `
{
  let failNext = false;
  self.addEventListener('message', (e) => { if (e.data && e.data.type === '__failNextSave') failNext = true; });
  const get = FileSystemDirectoryHandle.prototype.getFileHandle;
  FileSystemDirectoryHandle.prototype.getFileHandle = function (name, o) {
    if (failNext && o && o.create && /^checkpoint-/.test(name)) { failNext = false; return Promise.reject(new DOMException('disk on fire (test)', 'InvalidStateError')); }
    return get.call(this, name, o);
  };
}`;
    await route.fulfill({ response: res, body });
  });
  await page.goto(srv.url);
  await page.waitForFunction(() => document.body.dataset.ready === '1', null, { timeout: 60000 });
  await train(page, { steps: 5000, seed: 12 });
  await page.waitForFunction(() => window.tinytrain.data.x.length >= 2, null, { timeout: 60000 });
  await page.click('#pauseBtn');
  await waitRun(page, 'paused');
  await page.waitForFunction(() => /Autosaved step/.test(document.getElementById('ckptStatus').textContent), null, { timeout: 30000 });
  const kept = await readAutosave(page);
  const files = await listAutosave(page);
  await page.click('#pauseBtn'); // Resume
  await page.waitForFunction((n) => window.tinytrain.data.x.length > n + 1, kept.meta.step, { timeout: 60000 });
  await page.evaluate(() => window.tinytrain.worker.postMessage({ type: '__failNextSave' }));
  await page.click('#pauseBtn');
  await waitRun(page, 'paused');
  await page.waitForFunction(() => document.getElementById('ckptStatus').classList.contains('error'), null, { timeout: 30000 });
  const status = page.locator('#ckptStatus');
  const said = await status.evaluate((e) => e.firstChild.textContent);
  assert.match(said, new RegExp(`^Autosave of step \\d+ failed, the autosave of step ${kept.meta.step} is kept\\.$`));
  await status.locator('details summary').click();
  assert.match(await status.locator('details code').innerText(), /disk on fire/);
  assert.deepEqual(await readAutosave(page), kept, 'the previous autosave, byte for byte');
  assert.deepEqual(await listAutosave(page), files, 'nothing of the failed save is left');
  assert.deepEqual(page.errors, []);
  await ctx.close();
});
