// controls.test.mjs — the controls match what happens (issue 15): a phase
// and a working Cancel while a run starts, "pausing…" at once, Resume after
// Stop, "continue to N steps", the setup panel showing the run in memory,
// nothing of the last run left on screen by a new one, the engine's WebGPU
// memory check against the adapter's limits, the measured time estimate, and the
// checkpoint messages (which text a checkpoint expects; a damaged file in a
// user's words with the technical text one click away).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { WEB, closeBrowser, losses, openApp, setupInfo, startBrowser, tmpDir, train, waitRun } from './helpers.mjs';

let browser, srv;
before(async () => ({ srv, browser } = await startBrowser()));
after(() => closeBrowser({ browser, srv }));

async function answer(page, ok) {
  await page.waitForSelector('#askDlg[open]', { timeout: 10000 });
  await page.click(ok ? '#askOk' : '#askCancel');
}

test('while a run starts: its phase and elapsed time show, and Cancel gets the page back', async () => {
  const ctx = await browser.newContext();
  const page = await openApp(ctx, srv.url);
  // the one-thread engine's module is held back by the test: the start hangs in "loading the engine"
  let release;
  const held = new Promise((r) => { release = r; });
  let holds = 1;
  await page.route('**/dist/tinytrain_web_st.wasm', async (route) => {
    if (holds-- > 0) await held;
    await route.continue().catch(() => {});
  });
  await page.fill('#steps', '20');
  await page.click('input[name=backend][value=single] + span');
  await page.click('#trainBtn');
  await page.waitForFunction(() => /^starting: .* · \d/.test(document.getElementById('runPill').textContent), null, { timeout: 10000 });
  assert.equal(await page.isVisible('#cancelStartBtn'), true, 'a Cancel while starting');
  assert.equal(await page.isEnabled('#cancelStartBtn'), true);
  await page.click('#cancelStartBtn');
  await waitRun(page, 'idle', 10000);
  assert.equal(await page.isVisible('#cancelStartBtn'), false);
  assert.equal(await page.isEnabled('#trainBtn'), true);
  release();
  // the page trains again afterwards
  await page.click('input[name=backend][value=auto] + span');
  await train(page, { steps: 8 });
  await waitRun(page, 'done', 60000);
  assert.equal((await losses(page)).x.length, 8);
  assert.deepEqual(page.errors.filter((e) => !/Failed to load resource|net::/.test(e)), []);
  await ctx.close();
});

test('pausing shows at once; Resume after Stop; "continue to N" ends at N', async () => {
  const ctx = await browser.newContext();
  const page = await openApp(ctx, srv.url);
  await train(page, { steps: 5000, seed: 21 });
  await page.waitForFunction(() => window.tinytrain.data.x.length >= 3, null, { timeout: 60000 });
  const pill = await page.evaluate(() => { document.getElementById('pauseBtn').click(); return document.getElementById('runPill').textContent; });
  assert.equal(pill, 'pausing…', 'the pause is acknowledged before the engine answers');
  await waitRun(page, 'paused');
  await page.click('#pauseBtn'); // Resume
  await waitRun(page, 'running');
  await page.click('#stopBtn');
  await waitRun(page, 'stopped');
  assert.equal(await page.locator('#pauseBtn').innerText(), 'Resume');
  assert.equal(await page.isEnabled('#pauseBtn'), true, 'a stopped run can be resumed');
  const k = (await losses(page)).x.length;
  await page.click('#pauseBtn');
  await page.waitForFunction((n) => window.tinytrain.data.x.length > n + 2, k, { timeout: 60000 });
  await page.click('#stopBtn');
  await waitRun(page, 'stopped');
  const k2 = (await losses(page)).x.length;
  assert.match(await page.locator('#moreBtn').innerText(), /Continue to/);
  const to = Math.max(k2 + 15, 110); // past the warm-up (100 steps): a total below it is refused
  await page.fill('#moreN', String(to));
  await page.click('#moreBtn');
  await waitRun(page, 'done', 60000);
  const { x } = await losses(page);
  assert.equal(x.length, to, 'continued to the total asked for, not 5000 + more');
  assert.equal(await page.locator('#stStep').innerText(), `${to} / ${to}`);
  assert.deepEqual(page.errors, []);
  await ctx.close();
});

test('the setup shows the restored run; a new run leaves nothing of the last one on screen', async () => {
  const ctx = await browser.newContext();
  const page = await openApp(ctx, srv.url);
  await train(page, { steps: 5000, seed: 23, lr: 0.004 });
  await page.waitForFunction(() => window.tinytrain.data.x.length >= 3, null, { timeout: 60000 });
  await page.click('#pauseBtn');
  await waitRun(page, 'paused');
  await page.fill('#slen', '20');
  await page.click('#sampleBtn');
  await page.waitForFunction(() => !window.tinytrain.sampling, null, { timeout: 60000 });
  await page.goto(srv.url + '#'); // a plain reload, no settings in the link
  await page.reload();
  await page.waitForFunction(() => document.body.dataset.ready === '1' && !document.getElementById('banner').hidden, null, { timeout: 60000 });
  await waitRun(page, 'paused');
  assert.equal(await page.inputValue('#steps'), '5000', "the restored run's steps");
  assert.equal(await page.inputValue('#seed'), '23');
  assert.equal(Number(await page.inputValue('#lr')), 0.004);
  assert.match(await page.locator('#setupNote').innerText(), /current run/);
  // sample, then a new run: banner, sample text and rates go
  await page.click('#sampleBtn');
  await page.waitForFunction(() => !window.tinytrain.sampling, null, { timeout: 60000 });
  assert.ok((await page.locator('#sampleOut').innerText()).length > 0);
  await page.fill('#steps', '10');
  await page.click('#trainBtn');
  await answer(page, true);
  await waitRun(page, ['running', 'done'], 60000); // the new run (the old one was paused: not a state to stop at)
  assert.equal(await page.isHidden('#banner'), true, 'the "Restored" banner is gone: ' + await page.locator('#banner').innerText());
  assert.equal(await page.locator('#sampleOut').innerText(), '', 'the old sample is gone');
  await waitRun(page, 'done', 60000);
  assert.equal((await losses(page)).x.length, 10);
  assert.deepEqual(page.errors, []);
  await ctx.close();
});

test('WebGPU: a model larger than the adapter allows is refused by the engine before it trains, with its reason', async (t) => {
  const ctx = await browser.newContext();
  // an adapter with small limits (the test stands in for a small GPU): the served worker.js caps what
  // the WebGPU device reports, so the engine's own preflight (its buffer plan) sees a small GPU
  await ctx.route(/\/worker\.js$/, async (route) => {
    const res = await route.fetch();
    const body = (await res.text()) + `
if (self.GPUSupportedLimits) {
  for (const [name, cap] of [['maxStorageBufferBindingSize', 512 * 1024], ['maxBufferSize', 1024 * 1024]]) {
    const d = Object.getOwnPropertyDescriptor(GPUSupportedLimits.prototype, name);
    Object.defineProperty(GPUSupportedLimits.prototype, name, { get() { return Math.min(d.get.call(this), cap); } });
  }
}`;
    await route.fulfill({ response: res, body });
  });
  const page = await openApp(ctx, srv.url);
  if (!(await page.evaluate(() => window.tinytrain.caps.gpu && window.tinytrain.gpuEngine))) {
    if (process.env.TT_REQUIRE_BROWSER) assert.fail('no WebGPU engine in headless Chromium (--enable-unsafe-webgpu, JSPI)');
    t.skip('no WebGPU engine in this Chromium');
    await ctx.close();
    return;
  }
  await page.selectOption('#preset', 'medium');
  await page.fill('#steps', '20');
  await page.click('input[name=backend][value=webgpu] + span');
  await setupInfo(page);
  await page.click('#trainBtn');
  await page.waitForSelector('#toast:not([hidden])', { timeout: 120000 });
  // the engine's reason (src/webgpu/plan.c): what the model needs, and what the adapter binds
  assert.match(await page.locator('#toast').innerText(), /^webgpu backend unavailable: this model needs .* MiB.* but the adapter binds at most 0\.5 MiB/);
  await waitRun(page, 'idle', 10000);
  assert.equal(await page.evaluate(() => window.tinytrain.data.x.length), 0, 'nothing trained');
  await ctx.close();
});

test('the time estimate is a measured one after the probe', async () => {
  const ctx = await browser.newContext();
  const page = await openApp(ctx, srv.url);
  assert.match(await setupInfo(page), /rough guess/);
  await page.click('#probeBtn');
  await page.waitForFunction(() => /Measured|Could not/.test(document.getElementById('probeStatus').textContent), null, { timeout: 60000 });
  assert.match(await page.locator('#probeStatus').innerText(), /Measured/);
  assert.match(await setupInfo(page), /≈ .*\(measured\)/);
  await ctx.close();
});

test('checkpoint upload: a text mismatch names the text it expects; a damaged file says so with details one click away', async () => {
  const dir = tmpDir();
  const ctx = await browser.newContext({ acceptDownloads: true });
  const page = await openApp(ctx, srv.url);
  await train(page, { steps: 6, seed: 31 });
  await waitRun(page, 'done', 60000);
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#downloadBtn')]);
  const ckpt = path.join(dir, 'a.safetensors');
  await dl.saveAs(ckpt);
  const bundled = fs.readFileSync(path.join(WEB, 'dist', 'corpus.txt'));

  const fresh = await openApp(ctx, srv.url);
  await fresh.evaluate(() => { for (const k of Object.keys(localStorage)) if (k.startsWith('tinytrain.texts')) localStorage.removeItem(k); });
  await fresh.click('.tabs [data-tab=paste]');
  const pasted = 'a different text to train on. '.repeat(200);
  await fresh.fill('#corpusText', pasted);
  await fresh.setInputFiles('#ckptFile', ckpt);
  // the first tab still owns the saved run: loading here asks before taking it over
  await fresh.waitForSelector('#askDlg[open]', { timeout: 10000 });
  assert.match(await fresh.locator('#askText').innerText(), /Another tab has the saved run open/);
  await fresh.click('#askOk');
  await fresh.waitForFunction(() => document.getElementById('ckptStatus').classList.contains('error'), null, { timeout: 30000 });
  const msg = await fresh.locator('#ckptStatus').innerText();
  assert.match(msg, /the built-in fortunes sample/, msg);
  assert.ok(msg.includes(bundled.length.toLocaleString('en-US') + ' bytes'), 'the expected size: ' + msg);
  assert.match(msg, /hash [0-9a-f]{16}/);
  assert.ok(msg.includes(`is ${Buffer.byteLength(pasted).toLocaleString('en-US')} bytes`), 'the chosen text\'s size: ' + msg);
  assert.doesNotMatch(msg, /0 bytes, hash 0000000000000000/);

  // a damaged file: the header length points past the end
  const bad = path.join(dir, 'bad.safetensors');
  const b = fs.readFileSync(ckpt);
  b.writeBigUInt64LE(2338328219631577204n, 0);
  fs.writeFileSync(bad, b);
  await fresh.click('.tabs [data-tab=bundled]');
  await fresh.evaluate(() => { document.getElementById('ckptStatus').className = 'status'; });
  await fresh.setInputFiles('#ckptFile', bad);
  await fresh.waitForFunction(() => document.getElementById('ckptStatus').classList.contains('error'), null, { timeout: 30000 });
  const status = fresh.locator('#ckptStatus');
  assert.match(await status.evaluate((e) => e.firstChild.textContent), /^bad\.safetensors is not a tinytrain checkpoint, or it is damaged/);
  assert.equal(await status.locator('details').count(), 1, 'the technical detail is in a <details>');
  assert.equal(await status.locator('details code').isVisible(), false, 'folded until asked for');
  await status.locator('details summary').click();
  assert.match(await status.locator('details code').innerText(), /header|length|exceeds|size/i);
  assert.deepEqual(fresh.errors, []);
  await ctx.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

test('"notify me when the run ends": one notification when a run finishes; blocked notifications say so and stay off', async () => {
  // the page's notifications are recorded (headless Chromium shows none)
  const record = () => {
    window.__notes = [];
    const N = window.Notification;
    window.Notification = class extends N { constructor(title, o) { super(title, o); window.__notes.push({ title, body: o && o.body }); } };
  };
  const ctx = await browser.newContext({ permissions: ['notifications'] });
  await ctx.addInitScript(record);
  const page = await openApp(ctx, srv.url);
  await page.check('#notifyDone');
  await page.waitForFunction(() => localStorage.getItem('tinytrain.notify') === '1');
  assert.equal(await page.isChecked('#notifyDone'), true);
  await train(page, { steps: 5, seed: 3 });
  await waitRun(page, 'done', 60000);
  await page.waitForFunction(() => window.__notes.length > 0, null, { timeout: 10000 });
  const notes = await page.evaluate(() => window.__notes);
  assert.equal(notes.length, 1, JSON.stringify(notes));
  assert.equal(notes[0].title, 'tinytrain: training finished');
  assert.match(notes[0].body, /tiny, step 5 of 5 · loss \d+\.\d{3}/);
  // a reload keeps the choice
  await page.reload();
  await page.waitForFunction(() => document.body.dataset.ready === '1', null, { timeout: 60000 });
  assert.equal(await page.isChecked('#notifyDone'), true);
  assert.deepEqual(page.errors, []);
  await ctx.close();

  const ctx2 = await browser.newContext(); // no permission: the request is refused
  await ctx2.addInitScript(() => { Notification.requestPermission = async () => 'denied'; });
  const p2 = await openApp(ctx2, srv.url);
  await p2.click('#notifyDone');
  await p2.waitForFunction(() => /blocked/.test(document.getElementById('notifyNote').textContent));
  assert.equal(await p2.isChecked('#notifyDone'), false);
  await ctx2.close();
});
