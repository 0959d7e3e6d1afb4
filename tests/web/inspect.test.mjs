// inspect.test.mjs — the "Look inside" view (web/inspect.js, the Worker's
// inspect message, src/web/web_inspect.c, src/engine/inspect.c): the same model
// inspected on the WebGPU engine and on the WASM engine agrees to 1e-5 in
// every attention map and next-byte / logit-lens probability; the card in
// the page shows a trained model's next bytes, attention heatmap and logit
// lens, is operable by keyboard and labelled for screen readers, says what
// is wrong with a bad prompt, and its screenshot is kept as an artifact
// (docs/img/inspect.png in the README is this picture).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ARTIFACTS, closeBrowser, openApp, startBrowser, train, waitRun } from './helpers.mjs';

let browser, srv;

before(async () => ({ srv, browser } = await startBrowser()));
after(() => closeBrowser({ browser, srv }));

const PROMPT = 'The cat sat on the mat. ';

// largest |a - b| over two nested arrays of numbers of the same shape
function maxDiff(a, b, where) {
  if (Array.isArray(a)) {
    assert.ok(Array.isArray(b) && a.length === b.length, `${where}: shapes differ`);
    return a.reduce((m, x, i) => Math.max(m, maxDiff(x, b[i], `${where}[${i}]`)), 0);
  }
  assert.equal(typeof a, 'number', where);
  return Math.abs(a - b);
}

// top-k lists [[byte, p], ...] of two engines: the same probabilities to tol,
// the same bytes except where two neighbours are tied within tol
function compareTop(ga, wa, tol, where) {
  assert.equal(ga.length, wa.length, where);
  let worst = 0;
  ga.forEach(([gb, gp], i) => {
    const [wb, wp] = wa[i];
    worst = Math.max(worst, Math.abs(gp - wp));
    if (gb !== wb) {
      const tied = (i > 0 && Math.abs(wa[i - 1][1] - wp) <= tol) || (i + 1 < wa.length && Math.abs(wa[i + 1][1] - wp) <= tol);
      assert.ok(tied, `${where}[${i}]: byte ${gb} on WebGPU vs ${wb} on WASM`);
    }
  });
  return worst;
}

test('the same model inspected on WebGPU and on WASM agrees to 1e-5 (attention maps, next-byte and lens probabilities)', async (t) => {
  const ctx = await browser.newContext();
  const page = await openApp(ctx, srv.url);
  const gpu = await page.evaluate(() => window.tinytrain.caps.gpu);
  if (!gpu) {
    if (process.env.TT_REQUIRE_BROWSER) assert.fail('no WebGPU adapter in headless Chromium (--enable-unsafe-webgpu)');
    t.skip('no WebGPU adapter in this Chromium');
    return ctx.close();
  }
  // Two Workers straight: a WebGPU run trains 1 step and inspects, then its
  // checkpoint goes to a WASM Worker, which inspects the same weights.
  const r = await page.evaluate(async (prompt) => {
    const corpus = new Uint8Array(await (await fetch('dist/corpus.txt')).arrayBuffer());
    const drive = (variant, script) => new Promise((resolve) => {
      const w = new Worker(new URL('./worker.js', location.href), { type: 'module' });
      const out = { errors: [], times: [] };
      const t0 = performance.now();
      const done = () => { w.terminate(); resolve(out); };
      w.onmessage = (e) => {
        const m = e.data;
        if (m.type !== 'log' && m.type !== 'progress') out.times.push(`${m.type}${m.run ? ':' + m.run : ''} ${((performance.now() - t0) / 1000).toFixed(1)}s`);
        if (m.type === 'error' && m.where !== 'autosave') { out.errors.push(`${variant} ${m.where}: ${m.message}`); done(); return; }
        script(w, m, out, done);
      };
      w.postMessage({ type: 'init', variant, threads: 1 });
    });
    const g = await drive('gpu', (w, m, out, done) => {
      if (m.type === 'ready') {
        w.postMessage({ type: 'start', corpus, corpusName: 'corpus.txt', opts: 'preset=tiny steps=1 seed=5 eval-every=0 backend=webgpu' });
      } else if (m.type === 'status' && m.run === 'done' && !out.asked) {
        out.asked = true;
        w.postMessage({ type: 'inspect', id: 1, prompt, topK: 5 });
      } else if (m.type === 'inspection') {
        out.result = m.result;
        out.variant = m.variant;
        w.postMessage({ type: 'download' });
      } else if (m.type === 'checkpoint') {
        out.ckpt = new Uint8Array(m.bytes);
        done();
      }
    });
    if (!g.ckpt) return { g, c: null };
    const c = await drive('single', (w, m, out, done) => {
      if (m.type === 'ready') w.postMessage({ type: 'upload', bytes: g.ckpt, corpus, corpusName: 'corpus.txt', force: false });
      else if (m.type === 'started' && m.loaded) w.postMessage({ type: 'inspect', id: 7, prompt, topK: 5 });
      else if (m.type === 'inspection') { out.result = m.result; out.variant = m.variant; done(); }
    });
    return { g: { ...g, ckpt: null }, c };
  }, PROMPT).catch((e) => ({ error: e.message }));
  assert.equal(r.error, undefined, r.error);
  assert.deepEqual(r.g.errors, []);
  assert.ok(r.c, 'the WASM worker ran');
  assert.deepEqual(r.c.errors, []);
  const G = r.g.result, W = r.c.result;
  assert.ok(G && W, 'both engines answered');
  assert.equal(r.g.variant, 'gpu');
  assert.equal(G.backend, 'webgpu', 'the GPU engine inspected on its WebGPU backend');
  assert.equal(r.c.variant, 'single');
  assert.equal(W.backend, 'cpu', 'the WASM engine inspected on its CPU backend');
  assert.deepEqual(G.bytes, [...Buffer.from(PROMPT)]);
  assert.deepEqual(W.bytes, G.bytes);
  assert.equal(G.n_layer, W.n_layer);
  assert.equal(G.n_head, W.n_head);
  const TOL = 1e-5;
  const dMap = maxDiff(G.attention, W.attention, 'attention');
  const dLast = maxDiff(G.last, W.last, 'last');
  let dTop = 0;
  G.next.forEach((top, i) => { dTop = Math.max(dTop, compareTop(top, W.next[i], TOL, `next[${i}]`)); });
  G.lens.forEach((layer, l) => layer.forEach((top, i) => { dTop = Math.max(dTop, compareTop(top, W.lens[l][i], TOL, `lens[${l}][${i}]`)); }));
  console.log(`# WebGPU worker: ${r.g.times.join(', ')}; WASM worker: ${r.c.times.join(', ')}`);
  console.log(`# WebGPU vs WASM: attention ${dMap.toExponential(2)}, last ${dLast.toExponential(2)}, top-k/lens ${dTop.toExponential(2)}`);
  assert.ok(dMap <= TOL, `attention maps differ by ${dMap}`);
  assert.ok(dLast <= TOL, `next-byte distributions differ by ${dLast}`);
  assert.ok(dTop <= TOL, `top-k / lens probabilities differ by ${dTop}`);
  // not trivially equal: the maps are not uniform and the model has learned something
  const row = W.attention[0][0][W.bytes.length - 1];
  assert.ok(Math.max(...row) - Math.min(...row) > 1e-3, 'attention rows are not uniform');
  assert.deepEqual(page.errors, []);
  await ctx.close();
});

test('the Look inside card: next bytes, attention heatmap and logit lens of the trained model, by keyboard, labelled', async () => {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await openApp(ctx, srv.url);
  await train(page, { preset: 'tiny', steps: 60, seed: 3, backend: 'single' });
  await waitRun(page, 'done', 120000);
  const card = page.locator('#inspectCard');
  await card.scrollIntoViewIfNeeded();
  // every control has an accessible name
  for (const [role, name] of [['textbox', 'Prompt'], ['spinbutton', 'Top-k'], ['button', 'Look inside']])
    assert.equal(await card.getByRole(role, { name, exact: true }).count(), 1, `${role} "${name}"`);
  // bad input is said in the card
  await card.getByRole('textbox', { name: 'Prompt', exact: true }).fill('');
  await card.getByRole('button', { name: 'Look inside' }).click();
  assert.match(await page.locator('#inspectStatus').innerText(), /Type a prompt/);
  await card.getByRole('textbox', { name: 'Prompt', exact: true }).fill('x'.repeat(40)); // the tiny preset's context is 32
  await card.getByRole('button', { name: 'Look inside' }).click();
  await page.waitForFunction(() => /40 bytes.*32 at most/.test(document.querySelector('#inspectStatus').textContent), null, { timeout: 30000 });
  assert.match(await page.locator('#inspectStatus').getAttribute('class'), /error/);
  // by keyboard: type the prompt, Tab to top-k, Tab to the button, Enter
  await card.getByRole('textbox', { name: 'Prompt', exact: true }).fill('');
  await card.getByRole('textbox', { name: 'Prompt', exact: true }).focus();
  await page.keyboard.type(PROMPT);
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'inspectTopK');
  await page.keyboard.press('Control+A');
  await page.keyboard.type('6');
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'inspectBtn');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => window.tinytrain.inspect && !document.querySelector('#inspectOut').hidden, null, { timeout: 60000 });
  const res = await page.evaluate(() => window.tinytrain.inspect);
  const T = PROMPT.length, L = res.result.n_layer, NH = res.result.n_head;
  assert.equal(res.variant, 'single');
  assert.equal(res.result.top_k, 6);
  assert.deepEqual(res.result.bytes, [...Buffer.from(PROMPT)]);
  for (const layer of res.result.attention)
    for (const map of layer)
      map.forEach((row, i) => {
        assert.ok(row.slice(i + 1).every((p) => p === 0), 'causal');
        assert.ok(Math.abs(row.reduce((a, b) => a + b, 0) - 1) < 1e-5, 'rows sum to 1');
      });
  // next-byte bars of the last position: top-k, labelled, matching the engine
  const bars = card.locator('#inspectBars li');
  assert.equal(await bars.count(), 6);
  const [b0, p0] = res.result.next[T - 1][0];
  assert.match(await bars.first().getAttribute('aria-label'), new RegExp(`${(100 * p0).toFixed(0)}`));
  assert.ok(b0 >= 0);
  // position picker: a radio group operated with arrow keys
  const radios = card.getByRole('radio');
  assert.equal(await radios.count(), T);
  assert.equal(await radios.nth(T - 1).getAttribute('aria-checked'), 'true');
  await radios.nth(T - 1).focus();
  await page.keyboard.press('ArrowLeft');
  assert.equal(await radios.nth(T - 2).getAttribute('aria-checked'), 'true');
  assert.equal(await page.evaluate(() => document.activeElement.getAttribute('aria-label')), await radios.nth(T - 2).getAttribute('aria-label'));
  const firstBar = await bars.first().getAttribute('aria-label');
  const [b1] = res.result.next[T - 2][0];
  assert.ok(firstBar.length > 0 && b1 >= 0, 'the bars follow the chosen position');
  // layer / head pickers by keyboard change the heatmap's description
  const map = card.locator('#inspectMap');
  assert.match(await map.getAttribute('aria-label'), /layer 1, head 1/);
  await card.getByRole('combobox', { name: 'Head' }).focus();
  await page.keyboard.press('ArrowDown');
  await page.waitForFunction(() => /head 2/.test(document.querySelector('#inspectMap').getAttribute('aria-label')));
  const drawn = await page.evaluate(() => {
    const c = document.querySelector('#inspectMap');
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    const colours = new Set();
    for (let i = 0; i < d.length; i += 4 * 7) colours.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
    return { w: c.width, colours: colours.size };
  });
  assert.ok(drawn.w > 0 && drawn.colours > 8, `the heatmap is drawn (${drawn.colours} colours)`);
  // the logit lens: one row per layer plus the embedding, one column per position
  const lens = card.locator('#inspectLens');
  assert.equal(await lens.locator('tbody tr').count(), L + 1);
  assert.equal(await lens.locator('thead th').count(), T + 1);
  assert.equal(await lens.locator('tbody td').count(), (L + 1) * T);
  assert.equal(await lens.locator('tbody tr').first().locator('th').innerText(), `layer ${L}`);
  assert.equal(NH, 3);
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  await card.screenshot({ path: path.join(ARTIFACTS, 'inspect.png') });
  assert.deepEqual(page.errors, []);
  await ctx.close();
});
