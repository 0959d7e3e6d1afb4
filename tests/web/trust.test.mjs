// trust.test.mjs — the page is trustworthy about the user's own run (issue
// 29's tour of the page): a New run that fails keeps the old run on screen;
// the time estimate uses the speed a run measured; a fine-tune is labelled by
// its model's real shape; a takeover by another tab hands over the latest
// step, the tab that lost can take it back, and a busy banner goes when the
// other tab closes; the page's own Hugging Face export fine-tunes; run files
// and the discard question are keyboard-safe; LoRA without a model to start
// from is refused; the share link carries every option and checks it. Tiny
// preset, a few steps each.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { unzipSync } from 'fflate';
import { answer, autosaveBytes, closeBrowser, openApp, readAutosave, setupInfo, startBrowser, tabTo, tmpDir, train, waitRun } from './helpers.mjs';

let browser, srv;
before(async () => ({ srv, browser } = await startBrowser()));
after(() => closeBrowser({ browser, srv }));

const toast = (page) => page.locator('#toast').innerText();
const waitToast = (page, timeout = 30000) => page.waitForFunction(() => !document.getElementById('toast').hidden, null, { timeout });

// A finished tiny run of n steps in a fresh context: {ctx, page}.
async function trained(n, seed = 11) {
  const ctx = await browser.newContext();
  const page = await openApp(ctx, srv.url);
  await train(page, { steps: n, seed });
  await waitRun(page, 'done', 120000);
  await page.waitForFunction((k) => new RegExp(`Autosaved step ${k}\\b`).test(document.getElementById('ckptStatus').textContent), n, { timeout: 60000 });
  return { ctx, page };
}

test('a New run that fails keeps the old run on screen and usable, and says so; a short text is refused before asking', async () => {
  const { ctx, page } = await trained(12);
  const n = await page.evaluate(() => window.tinytrain.data.x.length);
  assert.equal(n, 12);
  // a text too short for the model: refused before the question, the run untouched
  await page.click('.tabs button[data-tab=paste]');
  await page.fill('#corpusText', 'too short');
  await page.click('#trainBtn');
  await page.waitForFunction(() => document.getElementById('corpusStatus').classList.contains('error'), null, { timeout: 10000 });
  assert.equal(await page.isVisible('#askDlg'), false, 'no question for a text the engine refuses');
  assert.equal(await page.evaluate(() => window.tinytrain.run), 'done');
  await page.click('.tabs button[data-tab=bundled]');
  // a fine-tune source whose header reads (tiny's shape) but whose weights are missing: it fails once asked
  const p = await page.evaluate(() => window.tinytrain.presets.find((x) => x.name === 'tiny'));
  const cfg = JSON.stringify({ layers: p.layers, 'd-model': p['d-model'], heads: p.heads, ctx: p.ctx, batch: p.batch, vocab: 256 });
  const head = Buffer.from(JSON.stringify({ __metadata__: { format: 'tinytrain-checkpoint', config: cfg } }));
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(head.length));
  await page.setInputFiles('#ftFile', { name: 'hollow.safetensors', mimeType: 'application/octet-stream', buffer: Buffer.concat([len, head]) });
  await page.waitForFunction(() => /fine-tunes hollow\.safetensors/.test(document.getElementById('ftStatus').textContent), null, { timeout: 30000 });
  await page.fill('#steps', '5');
  await page.click('#trainBtn');
  await answer(page, true);
  await page.waitForFunction(() => document.getElementById('ftStatus').classList.contains('error'), null, { timeout: 60000 });
  await waitRun(page, ['paused', 'done'], 60000);
  assert.equal(await page.evaluate(() => window.tinytrain.data.x.length), n, 'the old run\'s chart is back');
  assert.equal(await page.evaluate(() => window.tinytrain.lastStep), 12);
  assert.notEqual(await page.locator('#stStep').innerText(), '–', 'its stats are back');
  assert.equal(await page.isEnabled('#downloadBtn'), true, 'Download works');
  assert.equal(await page.isEnabled('#sampleBtn'), true, 'Generate works');
  assert.match(await page.locator('#banner').innerText(), /previous run .*kept/i);
  assert.equal((await readAutosave(page)).meta.step, 12, 'its autosave is kept');
  const dl = page.waitForEvent('download');
  await page.click('#downloadBtn');
  assert.match((await dl).suggestedFilename(), /step12\.safetensors$/);
  assert.deepEqual(page.errors, []);
  await ctx.close();
});

test('the time estimate uses the speed a run measured, at once after the run, and is near what the run took', async () => {
  const ctx = await browser.newContext();
  const page = await openApp(ctx, srv.url);
  // WebGPU, not measured yet: the estimate counts the kernel compiles of its start (about 20 s on a software adapter)
  if (await page.evaluate(() => window.tinytrain.caps.gpu && window.tinytrain.gpuEngine)) {
    await page.fill('#steps', '1');
    await page.click('input[name=backend][value=webgpu] + span');
    await setupInfo(page);
    const soft = await page.evaluate(() => window.tinytrain.caps.gpu.isCpu);
    const gpu = await page.evaluate(() => window.tinytrain.estimate);
    assert.ok(gpu && gpu.secs >= (soft ? 15 : 2), `a WebGPU start compiles kernels: ${gpu && gpu.secs} s for one step`);
    await page.click('input[name=backend][value=auto] + span');
  } else if (process.env.TT_REQUIRE_BROWSER) assert.fail('no WebGPU engine in headless Chromium (--enable-unsafe-webgpu, JSPI)');
  await page.fill('#steps', '60');
  assert.match(await setupInfo(page), /rough guess/);
  const t0 = Date.now();
  await train(page, { steps: 60, seed: 2 });
  await waitRun(page, 'done', 120000);
  const took = (Date.now() - t0) / 1000;
  // nothing touched: the card says the measured estimate for the same setup
  await page.waitForFunction(() => /\(measured\)/.test(document.getElementById('presetInfo').textContent), null, { timeout: 10000 });
  const est = await page.evaluate(() => window.tinytrain.estimate);
  assert.ok(est && est.measured, 'the estimate is a measured one');
  assert.ok(est.secs > took / 3 && est.secs < took * 3, `estimate ${est.secs.toFixed(1)} s for a run that took ${took.toFixed(1)} s`);
  // another size on the same engine: from the measured speed too (the engine's FLOPs per step)
  await page.selectOption('#preset', 'small');
  await answer(page, true);
  assert.match(await setupInfo(page), /\(measured\)/);
  assert.deepEqual(page.errors, []);
  await ctx.close();
});

test('a fine-tune of a tiny checkpoint with "small" selected is labelled by its real shape, not "small"', async () => {
  const base = await trained(3, 4);
  const bytes = await autosaveBytes(base.page);
  await base.ctx.close();
  const ctx = await browser.newContext();
  const page = await openApp(ctx, srv.url);
  await page.setInputFiles('#ftFile', { name: 'base.safetensors', mimeType: 'application/octet-stream', buffer: bytes });
  await page.waitForFunction(() => /fine-tunes base\.safetensors/.test(document.getElementById('ftStatus').textContent), null, { timeout: 30000 });
  await page.selectOption('#preset', 'small');
  await page.fill('#steps', '2');
  await page.click('#trainBtn');
  await waitRun(page, 'done', 120000);
  const st = await page.evaluate(() => window.tinytrain.runState);
  const tiny = await page.evaluate(() => window.tinytrain.presets.find((x) => x.name === 'tiny'));
  assert.deepEqual([st.layers, st['d-model']], [tiny.layers, tiny['d-model']], 'the model is tiny-shaped');
  assert.notEqual(st.preset, 'small');
  assert.doesNotMatch(await page.locator('#engineInfo').innerText(), /^small/);
  const dl = page.waitForEvent('download');
  await page.click('#downloadBtn');
  const name = (await dl).suggestedFilename();
  assert.doesNotMatch(name, /small/, name);
  assert.match(name, /^tinytrain-(tiny|custom)-step2\.safetensors$/, name);
  assert.deepEqual(page.errors, []);
  await ctx.close();
});

test('takeover: the new tab gets the latest step; the tab that lost can take it back; a busy banner goes when the other tab closes', async () => {
  const ctx = await browser.newContext();
  const a = await openApp(ctx, srv.url);
  await train(a, { steps: 20000, seed: 9 });
  await a.waitForFunction(() => /Autosaved step [1-9]/.test(document.getElementById('ckptStatus').textContent), null, { timeout: 120000 });
  const b = await openApp(ctx, srv.url);
  await b.waitForFunction(() => !document.getElementById('banner').hidden, null, { timeout: 30000 });
  assert.match(await b.locator('#banner').innerText(), /open in another tab/);
  // the first tab trains well past its last autosave
  const saved = Number(/Autosaved step (\d+)/.exec(await a.locator('#ckptStatus').innerText())[1]);
  await a.waitForFunction((s) => window.tinytrain.lastStep > s + 30, saved, { timeout: 60000 });
  const atClick = await a.evaluate(() => window.tinytrain.lastStep);
  await b.click('#takeOverBtn');
  await b.waitForFunction(() => window.tinytrain.runState && /Took over|Restored/.test(document.getElementById('banner').textContent), null, { timeout: 60000 });
  const got = await b.evaluate(() => window.tinytrain.runState.step);
  assert.ok(got >= atClick, `the new tab resumed from step ${got}; the other tab was at ${atClick} (last autosave ${saved})`);
  assert.match(await b.locator('#banner').innerText(), new RegExp(`Took over .*step ${got.toLocaleString('en-US')}`));
  // the tab that lost says so and can take it back
  await a.waitForFunction(() => /moved to another tab/.test(document.getElementById('banner').textContent), null, { timeout: 30000 });
  assert.equal(await a.isVisible('#takeBackBtn'), true, 'a Take back button');
  // b pauses; a takes it back and gets b's step
  await waitRun(b, 'running', 30000);
  await b.click('#pauseBtn');
  await waitRun(b, 'paused');
  const stepB = await b.evaluate(() => window.tinytrain.lastStep);
  await a.click('#takeBackBtn');
  await a.waitForFunction(() => /Took over/.test(document.getElementById('banner').textContent), null, { timeout: 60000 });
  assert.equal(await a.evaluate(() => window.tinytrain.runState.step), stepB);
  await b.waitForFunction(() => /moved to another tab/.test(document.getElementById('banner').textContent), null, { timeout: 30000 });
  // a third tab is told the run is busy; when a (the owner) closes, its banner goes and the run is its own
  const c = await openApp(ctx, srv.url);
  await c.waitForFunction(() => /open in another tab/.test(document.getElementById('banner').textContent), null, { timeout: 30000 });
  await a.close();
  await b.close();
  await c.waitForFunction(() => !/open in another tab/.test(document.getElementById('banner').textContent) &&
    ['paused', 'running', 'done'].includes(window.tinytrain.run), null, { timeout: 30000 });
  assert.ok(await c.evaluate(() => window.tinytrain.lastStep) >= stepB);
  assert.deepEqual(c.errors, []);
  await ctx.close();
});

test('"Fine-tune from…" takes the page\'s own Hugging Face export: the zip, or its model.safetensors with config.json', async () => {
  const base = await trained(3, 5);
  const dl = base.page.waitForEvent('download');
  await base.page.click('#hfBtn');
  const dir = tmpDir();
  const zip = path.join(dir, 'export.zip');
  await (await dl).saveAs(zip);
  await base.ctx.close();
  const files = unzipSync(fs.readFileSync(zip));
  const pick = (end) => Object.entries(files).find(([n]) => n.endsWith('/' + end))[1];
  for (const choice of ['zip', 'pair']) {
    const ctx = await browser.newContext();
    const page = await openApp(ctx, srv.url);
    if (choice === 'zip') await page.setInputFiles('#ftFile', zip);
    else await page.setInputFiles('#ftFile', [
      { name: 'model.safetensors', mimeType: 'application/octet-stream', buffer: Buffer.from(pick('model.safetensors')) },
      { name: 'config.json', mimeType: 'application/json', buffer: Buffer.from(pick('config.json')) }]);
    await page.waitForFunction(() => /fine-tunes/.test(document.getElementById('ftStatus').textContent) ||
      document.getElementById('ftStatus').classList.contains('error'), null, { timeout: 30000 });
    assert.match(await page.locator('#ftStatus').innerText(), /fine-tunes/, choice);
    await page.fill('#steps', '2');
    await page.click('#trainBtn');
    await page.waitForFunction(() => window.tinytrain.run === 'done' || document.getElementById('ftStatus').classList.contains('error') ||
      !document.getElementById('toast').hidden, null, { timeout: 120000 });
    assert.equal(await page.evaluate(() => window.tinytrain.run), 'done', `${choice}: ${await page.locator('#ftStatus').innerText()}`);
    assert.equal(await page.evaluate(() => window.tinytrain.lastStep), 2);
    assert.deepEqual(page.errors, []);
    await ctx.close();
  }
  fs.rmSync(dir, { recursive: true, force: true });
});

test('keyboard: "Load run file…" is in the Tab order and opens with Enter; the discard question starts on Cancel', async () => {
  const { ctx, page } = await trained(3, 6);
  const choosers = [];
  page.on('filechooser', async (fc) => choosers.push(await fc.element().evaluate((e) => e.id)));
  assert.ok((await tabTo(page, 'runFile')) > 0, 'Load run file… is in the Tab order');
  await page.keyboard.press('Enter');
  for (let i = 0; i < 100 && !choosers.includes('runFile'); i++) await page.waitForTimeout(100);
  assert.ok(choosers.includes('runFile'), 'Enter opened the file chooser');
  await page.click('#trainBtn'); // New run: asks first
  await page.waitForSelector('#askDlg[open]');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'askCancel', 'the safe choice has the focus');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#askDlg', { state: 'hidden' });
  assert.equal(await page.evaluate(() => window.tinytrain.run), 'done', 'Enter kept the run');
  assert.equal(await page.evaluate(() => window.tinytrain.data.x.length), 3);
  await ctx.close();
});

test('LoRA with nothing to fine-tune from is refused with one line; nothing trains', async () => {
  const ctx = await browser.newContext();
  const page = await openApp(ctx, srv.url);
  await page.check('#loraOn');
  await page.fill('#steps', '5');
  await page.click('#trainBtn');
  await waitToast(page, 60000);
  const msg = await toast(page);
  assert.match(msg, /lora/i);
  assert.match(msg, /init-from|fine-tune/i);
  assert.equal(msg.split('\n').length, 1, msg);
  await waitRun(page, 'idle', 10000);
  assert.equal(await page.evaluate(() => window.tinytrain.data.x.length), 0, 'nothing trained');
  await ctx.close();
});

test('the share link carries LoRA, dropout and a URL text; a bad link says so once and keeps the defaults', async () => {
  const ctx = await browser.newContext();
  const page = await openApp(ctx, srv.url);
  await page.fill('#steps', '77');
  await page.fill('#dropout', '0.1');
  await page.check('#loraOn');
  await page.fill('#loraRank', '4');
  await page.click('.tabs button[data-tab=url]');
  const textUrl = new URL('dist/corpus.txt', srv.url).href;
  await page.fill('#corpusUrl', textUrl);
  await page.click('#shareBtn');
  await page.waitForFunction(() => document.getElementById('shareStatus').textContent !== '');
  const url = page.url();
  assert.match(url, /lora-rank=4/);
  assert.match(url, /dropout=0\.1/);
  assert.match(url, /steps=77/);
  assert.match(url, /text=/);
  const other = await openApp(await browser.newContext(), url);
  assert.equal(await other.isChecked('#loraOn'), true);
  assert.equal(await other.inputValue('#loraRank'), '4');
  assert.equal(Number(await other.inputValue('#dropout')), 0.1);
  assert.equal(await other.inputValue('#steps'), '77');
  assert.equal(await other.getAttribute('#tab-url', 'aria-selected'), 'true');
  assert.equal(await other.inputValue('#corpusUrl'), textUrl);
  await other.context().close();
  for (const bad of ['#steps=-5', '#preset=tiny&lr=abc', '#nonsense=3']) {
    const p2 = await openApp(await browser.newContext(), srv.url + bad);
    await waitToast(p2, 10000);
    assert.match(await toast(p2), /link/i, bad);
    assert.equal(await p2.inputValue('#steps'), await p2.evaluate(() => document.getElementById('steps').defaultValue), `${bad}: defaults kept`);
    assert.notEqual(await p2.inputValue('#lr'), 'abc');
    await p2.context().close();
  }
  await ctx.close();
});
