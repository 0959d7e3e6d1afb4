// reach.test.mjs — reach and guidance (issue 15): every upload reachable and
// operable by keyboard, ARIA tabs with arrow keys, presets sorted by size
// with their shape, plain-language capability chips, the learning rate shown
// exactly, whole steps on the chart, bits per byte beside the loss, a phone
// layout that follows the run, custom shapes, a shareable link, the
// first-visit guide, text from a URL (a second local server, cross-origin),
// and the benchmark's software-GPU default and Cancel.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { closeBrowser, losses, openApp, setupInfo, startBrowser, tmpDir, train, waitRun } from './helpers.mjs';
import { serve } from '../../scripts/serve.mjs';

let browser, srv;
before(async () => ({ srv, browser } = await startBrowser()));
after(() => closeBrowser({ browser, srv }));

// Presses Tab until the element with `id` has the focus; the number of presses, or -1.
async function tabTo(page, id, max = 80) {
  await page.evaluate(() => { document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0); });
  for (let i = 1; i <= max; i++) {
    await page.keyboard.press('Tab');
    if (await page.evaluate((x) => document.activeElement && document.activeElement.id === x, id)) return i;
  }
  return -1;
}

test('keyboard: both uploads are reached with Tab and open with Space; the text tabs are ARIA tabs with arrow keys', async () => {
  const ctx = await browser.newContext();
  const page = await openApp(ctx, srv.url);
  // Playwright turns Chromium's file-chooser interception on asynchronously when
  // the first listener is added; a listener added right before the key press can
  // lose that race and the picker opens natively, unseen. So listen from here on,
  // and record which input each chooser is for.
  const choosers = [];
  page.on('filechooser', async (fc) => choosers.push(await fc.element().evaluate((e) => e.id)));
  await page.evaluate(() => { window.__clicked = []; for (const id of ['ckptFile', 'corpusFile']) document.getElementById(id).addEventListener('click', () => window.__clicked.push(id)); });
  const opened = async (id) => {
    await page.waitForFunction((x) => window.__clicked.includes(x), id, { timeout: 10000 });
    for (let i = 0; i < 100 && !choosers.includes(id); i++) await page.waitForTimeout(100);
    assert.ok(choosers.includes(id), `a file chooser opened for ${id}: ${choosers}`);
  };
  assert.ok((await tabTo(page, 'ckptFile')) > 0, 'the checkpoint upload is in the Tab order');
  await page.keyboard.press('Space');
  await opened('ckptFile');

  // tabs: one in the Tab order, arrows move and select
  const sel = () => page.evaluate(() => [...document.querySelectorAll('.tabs [role=tab]')].map((t) => `${t.dataset.tab}:${t.getAttribute('aria-selected')}:${t.tabIndex}`));
  assert.deepEqual(await sel(), ['bundled:true:0', 'upload:false:-1', 'paste:false:-1', 'url:false:-1']);
  await page.focus('#tab-bundled');
  await page.keyboard.press('ArrowRight');
  assert.deepEqual(await sel(), ['bundled:false:-1', 'upload:true:0', 'paste:false:-1', 'url:false:-1']);
  assert.equal(await page.evaluate(() => document.activeElement.id), 'tab-upload');
  assert.equal(await page.isVisible('#panel-upload'), true);
  await page.keyboard.press('End');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'tab-url');
  await page.keyboard.press('ArrowRight');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'tab-bundled', 'wraps around');
  await page.keyboard.press('ArrowLeft');
  await page.keyboard.press('ArrowLeft');
  await page.keyboard.press('ArrowLeft'); // upload
  assert.equal(await page.evaluate(() => document.activeElement.id), 'tab-upload');
  // the text upload: next in the Tab order after its tab, opens with Space
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'corpusFile');
  await page.keyboard.press('Space');
  await opened('corpusFile');
  assert.deepEqual(page.errors, []);
  await ctx.close();
});

test('presets smallest first with their shape; plain chips; the exact learning rate; bits per byte; whole chart steps', async () => {
  const ctx = await browser.newContext();
  const page = await openApp(ctx, srv.url);
  const presets = await page.evaluate(() => window.tinytrain.presets.map((p) => ({ name: p.name, params: p.params, lr: p.lr })));
  const names = await page.locator('#preset option').evaluateAll((os) => os.map((o) => o.value));
  assert.deepEqual(names, [...presets].sort((a, b) => a.params - b.params).map((p) => p.name), 'sorted by size');
  const texts = await page.locator('#preset option').allTextContents();
  assert.ok(texts.every((t) => /\d+×\d+, ctx \d+/.test(t)), 'each shows its shape: ' + texts);
  assert.match(await setupInfo(page), /2 layers × 48 wide, 3 heads, context 32/);
  const chips = await page.locator('#chips .chip').allTextContents();
  assert.ok(!chips.some((c) => /SIMD128|Memory64|shader-f16/.test(c)), 'no jargon on the chips: ' + chips);
  // every preset's learning rate shows whole in its field
  for (const p of presets) {
    await page.selectOption('#preset', p.name);
    const f = await page.evaluate(() => { const e = document.getElementById('lr'); return { v: e.value, fits: e.scrollWidth <= e.clientWidth }; });
    assert.equal(Number(f.v), Number(p.lr.toPrecision(3)), p.name);
    assert.ok(f.fits, `${p.name}: ${f.v} fits its field`);
  }
  await page.selectOption('#preset', 'tiny');
  await train(page, { steps: 2 });
  await waitRun(page, 'done', 60000);
  const { loss } = await losses(page);
  assert.equal(await page.locator('#stBpb').innerText(), (loss[1] / Math.LN2).toFixed(3));
  // the x axis (drawn on a canvas): its tick positions and labels, as uPlot computed them
  const ticks = await page.evaluate(() => ({ at: [...window.tinytrain.chart.axes[0]._splits], text: [...window.tinytrain.chart.axes[0]._values] }));
  assert.ok(ticks.at.length > 0 && ticks.at.every(Number.isInteger), 'whole steps on the x axis: ' + ticks.at);
  assert.ok(ticks.text.every((t) => /^\d[\d,]*$/.test(t)), 'labels: ' + ticks.text);
  await ctx.close();
});

test('phone (375 px): Train brings the run into view, the step readout is whole, touch targets are 44 px', async () => {
  const ctx = await browser.newContext({ viewport: { width: 375, height: 740 }, isMobile: true, hasTouch: true });
  const page = await openApp(ctx, srv.url);
  const small = await page.evaluate(() => [...document.querySelectorAll('button, .button, select, input[type=number], input[type=text], .seg span')]
    .filter((e) => e.offsetParent && !e.closest('.u-legend, details:not([open])'))
    .map((e) => ({ id: e.id || e.textContent.trim().slice(0, 20), h: e.getBoundingClientRect().height }))
    .filter((r) => r.h < 44));
  assert.deepEqual(small, [], 'touch targets under 44 px');
  await page.fill('#steps', '5000');
  await page.click('#trainBtn');
  await waitRun(page, 'running', 60000);
  const top = await page.evaluate(() => document.getElementById('h-progress').getBoundingClientRect().top);
  assert.ok(top >= -5 && top < 740 / 2, `the run's card is in view after Train (top ${top})`);
  await page.waitForFunction(() => window.tinytrain.data.x.length >= 2, null, { timeout: 60000 });
  const st = await page.evaluate(() => { const e = document.getElementById('stStep'); return { t: e.textContent, fits: e.scrollWidth <= e.clientWidth + 1 }; });
  assert.match(st.t, /^[\d,]+ \/ 5,000$/);
  assert.ok(st.fits, 'the step readout is not cut: ' + st.t);
  await ctx.close();
});

test('a custom shape trains; the setup travels in a link; the first-visit guide goes once dismissed', async () => {
  const ctx = await browser.newContext();
  const page = await openApp(ctx, srv.url);
  assert.equal(await page.isVisible('#guide'), true, 'the guide on a first visit');
  await page.click('#guideClose');
  assert.equal(await page.isVisible('#guide'), false);

  await page.click('#shapeBox summary');
  await page.fill('#layers', '1');
  await page.fill('#dmodel', '32');
  await page.fill('#heads', '2');
  await page.fill('#ctx', '24');
  await page.fill('#seed', '77');
  await page.locator('#seed').dispatchEvent('change');
  assert.match(await setupInfo(page), /1 layers × 32 wide, 2 heads, context 24 \(custom\)/);
  await train(page, { steps: 4, seed: 77 });
  await waitRun(page, 'done', 60000);
  const st = await page.evaluate(() => window.tinytrain.runState);
  assert.deepEqual([st.layers, st['d-model'], st.heads, st.ctx], [1, 32, 2, 24]);
  const url = page.url();
  assert.match(url, /#.*layers=1.*d-model=32.*heads=2.*ctx=24/);

  const other = await openApp(await browser.newContext(), url);
  assert.equal(await other.inputValue('#seed'), '77');
  assert.equal(await other.inputValue('#steps'), '4');
  assert.equal(await other.inputValue('#layers'), '1');
  assert.equal(await other.inputValue('#dmodel'), '32');
  assert.equal(await other.inputValue('#ctx'), '24');
  await other.context().close();

  await page.reload();
  await page.waitForFunction(() => document.body.dataset.ready === '1');
  assert.equal(await page.isVisible('#guide'), false, 'dismissed is remembered');
  await ctx.close();
});

test('text from a URL: fetched from another (CORS) server, trained on; an unreachable one is explained', async () => {
  const dir = tmpDir();
  const text = 'The quick brown fox jumps over the lazy dog. '.repeat(300);
  fs.writeFileSync(path.join(dir, 'fox.txt'), text);
  const host = await serve({ root: dir, port: 0, isolation: false, cors: true, quiet: true });
  try {
    const ctx = await browser.newContext();
    const page = await openApp(ctx, srv.url);
    await page.click('#tab-url');
    await page.fill('#corpusUrl', host.url + 'fox.txt');
    await page.click('#corpusUrlBtn');
    await page.waitForFunction(() => /fox\.txt · /.test(document.getElementById('corpusStatus').textContent), null, { timeout: 20000 });
    await train(page, { steps: 4 });
    await waitRun(page, 'done', 60000);
    assert.equal(await page.evaluate(() => window.tinytrain.runState.corpus_bytes), Buffer.byteLength(text));
    await page.fill('#corpusUrl', host.url + 'missing.txt');
    await page.click('#corpusUrlBtn');
    await page.waitForFunction(() => document.getElementById('corpusStatus').classList.contains('error'), null, { timeout: 20000 });
    assert.match(await page.locator('#corpusStatus').innerText(), /HTTP 404/);
    await ctx.close();
  } finally {
    host.server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('the benchmark leaves a software GPU out unless asked, and can be cancelled', async () => {
  const ctx = await browser.newContext();
  const page = await openApp(ctx, srv.url);
  await page.evaluate(() => { // stand in for a software adapter
    const t = window.tinytrain;
    t.caps.gpu = { ...(t.caps.gpu || {}), name: 'SwiftShader', isCpu: true };
    t.gpuEngine = true;
  });
  await page.selectOption('#benchPresets', 'tiny,small,medium,large');
  await page.fill('#benchSteps', '50');
  await page.click('#benchBtn');
  const heads = await page.locator('#benchTable thead th').allTextContents();
  assert.ok(!heads.some((h) => /WebGPU/.test(h)), 'no software GPU column: ' + heads);
  await page.waitForFunction(() => /Running/.test(document.getElementById('benchStatus').textContent));
  assert.match(await page.locator('#benchStatus').innerText(), /\(1 of \d\)/);
  await page.click('#benchCancelBtn');
  await page.waitForFunction(() => /cancelled/.test(document.getElementById('benchStatus').textContent), null, { timeout: 10000 });
  assert.equal(await page.isEnabled('#benchBtn'), true);
  await ctx.close();
});
