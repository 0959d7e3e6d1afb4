// app.test.mjs — end-to-end tests of the web app in Debian's Chromium
// (headless, through playwright-core): page health, WASM training, sampling,
// OPFS persistence across reloads, checkpoints shared with the native CLI,
// bad input, the single-thread fallback, the benchmark, and a screenshot of
// the trained state (test-results/web/trained.png).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { unzipSync } from 'fflate';
import { ARTIFACTS, WEB, closeBrowser, losses, mean, nativeCli, openApp, setupInfo, startBrowser, startServer, tmpDir, train, waitRun } from './helpers.mjs';

let browser, srv;

before(async () => {
  ({ srv, browser } = await startBrowser());
  fs.mkdirSync(ARTIFACTS, { recursive: true });
});
after(() => closeBrowser({ browser, srv }));

test('page loads cross-origin isolated, with capability chips and no console errors', async () => {
  const ctx = await browser.newContext();
  const page = await openApp(ctx, srv.url);
  const caps = await page.evaluate(() => window.tinytrain.caps);
  assert.equal(caps.isolated, true, 'COOP/COEP from serve.mjs make the page cross-origin isolated');
  assert.equal(caps.simd, true);
  assert.equal(caps.threads, true);
  const chips = await page.locator('#chips .chip').allTextContents();
  assert.ok(chips.some((c) => c === 'fast CPU math'), 'SIMD chip: ' + chips);
  assert.ok(chips.some((c) => c === `${caps.cores} CPU cores`), 'threads chip: ' + chips);
  const presets = await page.locator('#preset option').allTextContents();
  assert.ok(presets.length >= 8 && presets[0].startsWith('tiny'), 'presets from the engine: ' + presets);
  assert.match(await setupInfo(page), /70\.5K/);
  await page.waitForTimeout(300);
  assert.deepEqual(page.errors, []);
  await ctx.close();
});

test('WASM threads: training tiny makes the loss fall; sampling streams text; screenshot', async () => {
  const ctx = await browser.newContext({ viewport: { width: 1360, height: 1000 } });
  const page = await openApp(ctx, srv.url);
  await train(page, { steps: 80, backend: 'threads' });
  await waitRun(page, 'done');
  const { x, loss } = await losses(page);
  assert.equal(x.length, 80);
  assert.deepEqual(x.slice(0, 3), [1, 2, 3]);
  assert.ok(loss.every(Number.isFinite), 'finite losses');
  assert.ok(Math.abs(loss[0] - Math.log(256)) < 0.3, `first loss near ln 256: ${loss[0]}`);
  const first = mean(loss.slice(0, 5)), last = mean(loss.slice(-5));
  assert.ok(last < first - 1.0, `loss fell: ${first.toFixed(3)} -> ${last.toFixed(3)}`);
  const st = await page.evaluate(() => ({ variant: window.tinytrain.runVariant, val: document.getElementById('stVal').textContent }));
  assert.equal(st.variant, 'threads');
  assert.match(st.val, /^\d+\.\d{4}$/, 'a validation loss is shown');
  const info = await page.locator('#engineInfo').innerText();
  assert.match(info, /tiny/);

  // sampling: tokens stream into the output box
  await page.fill('#slen', '120');
  await page.click('#sampleBtn');
  await page.waitForFunction(() => !window.tinytrain.sampling, null, { timeout: 60000 });
  const out = await page.locator('#sampleOut').innerText();
  assert.ok(out.length >= 40, 'sample text: ' + JSON.stringify(out));
  assert.match(await page.locator('#sampleRate').innerText(), /120 tokens/);

  await page.screenshot({ path: path.join(ARTIFACTS, 'trained.png'), fullPage: true });
  assert.deepEqual(page.errors, []);
  await ctx.close();
});

test('reload mid-run resumes from OPFS with the same step and loss', async () => {
  const ctx = await browser.newContext();
  const page = await openApp(ctx, srv.url);
  await train(page, { steps: 5000, seed: 7 });
  // wait for the first autosave while running
  await page.waitForFunction(() => /Autosaved step [1-9]/.test(document.getElementById('ckptStatus').textContent), null, { timeout: 120000 });
  const before1 = await losses(page);
  await page.reload();
  await page.waitForFunction(() => document.body.dataset.ready === '1' && !document.getElementById('banner').hidden, null, { timeout: 60000 });
  const restored = await page.evaluate(() => ({ x: [...window.tinytrain.data.x], loss: [...window.tinytrain.data.loss] }));
  const saved = restored.x.length;
  assert.ok(saved >= 1, 'restored some steps');
  // the restored history is exactly what the page showed before the reload
  const overlap = Math.min(saved, before1.x.length);
  assert.ok(overlap >= 1);
  assert.deepEqual(restored.loss.slice(0, overlap), before1.loss.slice(0, overlap));
  assert.match(await page.locator('#banner').innerText(), /continuing/);
  // it continues by itself, from there
  await page.waitForFunction((n) => window.tinytrain.data.x.length > n + 2, saved, { timeout: 60000 });
  const cont = await losses(page);
  assert.deepEqual(cont.x.slice(0, saved + 2), Array.from({ length: saved + 2 }, (_, i) => i + 1));

  // pause saves; a reload then shows the same step and loss, paused
  await page.click('#pauseBtn');
  await waitRun(page, 'paused');
  await page.waitForFunction(() => /Autosaved/.test(document.getElementById('ckptStatus').textContent));
  const p1 = await page.evaluate(() => ({ step: document.getElementById('stStep').textContent, loss: document.getElementById('stLoss').textContent,
    n: window.tinytrain.data.x.length, last: window.tinytrain.data.loss.at(-1) }));
  await page.reload();
  await page.waitForFunction(() => document.body.dataset.ready === '1' && !document.getElementById('banner').hidden, null, { timeout: 60000 });
  await waitRun(page, 'paused');
  const p2 = await page.evaluate(() => ({ step: document.getElementById('stStep').textContent, loss: document.getElementById('stLoss').textContent,
    n: window.tinytrain.data.x.length, last: window.tinytrain.data.loss.at(-1) }));
  assert.deepEqual(p2, p1);
  assert.deepEqual(page.errors, []);
  await ctx.close();
});

test('a downloaded checkpoint continues in the native CLI with the same losses as in the browser; its Hugging Face zip is what tinytrain export writes', async (t) => {
  const cli = nativeCli();
  if (!cli) {
    if (process.env.TT_REQUIRE_BROWSER) assert.fail('native CLI not found (set TINYTRAIN)');
    t.skip('native CLI not found (set TINYTRAIN or build build/tinytrain)');
    return;
  }
  const dir = tmpDir();
  const ctx = await browser.newContext({ acceptDownloads: true });
  const page = await openApp(ctx, srv.url);
  await train(page, { steps: 30, seed: 99 });
  await waitRun(page, 'done');
  const dlP = page.waitForEvent('download');
  await page.click('#downloadBtn');
  const dl = await dlP;
  assert.match(dl.suggestedFilename(), /^tinytrain-tiny-step30\.safetensors$/);
  const ckpt = path.join(dir, 'ckpt.safetensors');
  await dl.saveAs(ckpt);

  // the Hugging Face zip: the folder `tinytrain export` writes for that checkpoint, file for file, byte for byte
  const hfP = page.waitForEvent('download');
  await page.click('#hfBtn');
  const hf = await hfP;
  assert.equal(hf.suggestedFilename(), 'tinytrain-tiny-step30-hf.zip');
  const zipPath = path.join(dir, 'hf.zip');
  await hf.saveAs(zipPath);
  const zipped = unzipSync(new Uint8Array(fs.readFileSync(zipPath)));
  execFileSync(cli, ['export', ckpt, path.join(dir, 'hf')], { encoding: 'utf8' });
  const native = fs.readdirSync(path.join(dir, 'hf')).sort();
  assert.deepEqual(Object.keys(zipped).sort(), native.map((f) => `tinytrain-tiny-step30/${f}`));
  assert.ok(native.includes('model.safetensors') && native.includes('tokenizer.json') && native.includes('config.json'), native.join());
  for (const f of native)
    assert.ok(Buffer.from(zipped[`tinytrain-tiny-step30/${f}`]).equals(fs.readFileSync(path.join(dir, 'hf', f))), `${f} as tinytrain export writes it`);
  assert.match(await page.locator('#ckptStatus').innerText(), /from_pretrained/);

  // continue to 40 steps in the browser
  await page.fill('#moreN', '40');
  await page.click('#moreBtn');
  await page.waitForFunction(() => window.tinytrain.data.x.length === 40 && window.tinytrain.run === 'done', null, { timeout: 120000 });
  const web = (await losses(page)).loss.slice(30, 40);

  // ... and natively from the downloaded file, on the same text
  const out = execFileSync(cli, ['train', '--resume', ckpt, '--steps', '40', '--data', path.join(WEB, 'dist', 'corpus.txt'),
    '--out', path.join(dir, 'native'), '--json', '--sample-tokens', '0', '--threads', '2'], { encoding: 'utf8' });
  const nat = out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)).filter((e) => e.event === 'step');
  assert.deepEqual(nat.map((e) => e.step), Array.from({ length: 10 }, (_, i) => 31 + i));
  for (let i = 0; i < 10; i++) {
    const rel = Math.abs(nat[i].loss - web[i]) / Math.abs(web[i]);
    assert.ok(rel <= 1e-5, `step ${31 + i}: browser ${web[i]} native ${nat[i].loss} (rel ${rel})`);
  }
  assert.deepEqual(page.errors, []);
  await ctx.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

test('a checkpoint from the native CLI loads in the browser and continues', async (t) => {
  const cli = nativeCli();
  if (!cli) {
    if (process.env.TT_REQUIRE_BROWSER) assert.fail('native CLI not found (set TINYTRAIN)');
    t.skip('native CLI not found');
    return;
  }
  const dir = tmpDir();
  const corpus = path.join(WEB, 'dist', 'corpus.txt');
  execFileSync(cli, ['train', '--preset', 'tiny', '--steps', '12', '--seed', '5', '--data', corpus, '--out', path.join(dir, 'a'),
    '--json', '--sample-tokens', '0', '--threads', '2'], { encoding: 'utf8' });
  const out = execFileSync(cli, ['train', '--resume', path.join(dir, 'a', 'checkpoint.safetensors'), '--steps', '16', '--data', corpus,
    '--out', path.join(dir, 'b'), '--json', '--sample-tokens', '0', '--threads', '2'], { encoding: 'utf8' });
  const nat = out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)).filter((e) => e.event === 'step');
  assert.equal(nat.length, 4);

  const ctx = await browser.newContext();
  const page = await openApp(ctx, srv.url);
  await page.setInputFiles('#ckptFile', path.join(dir, 'a', 'checkpoint.safetensors'));
  // the load message can be replaced at once by the autosave that follows a load ("Autosaved step 12 ...")
  await page.waitForFunction(() => /Loaded a checkpoint at step 12|Autosaved step 12 /.test(document.getElementById('ckptStatus').textContent) &&
    window.tinytrain.data.x.length === 12, null, { timeout: 120000 })
    .catch(async (e) => { // say what the page shows instead of a bare timeout
      const shown = await page.evaluate(() => ['ckptStatus', 'corpusStatus'].map((id) => document.getElementById(id).textContent).join(' | '));
      throw new Error(`${e.message}; page status: ${shown}; errors: ${page.errors.join('; ')}`);
    });
  await waitRun(page, 'done'); // the CLI run had 12 steps: it is complete
  const h = await losses(page);
  assert.equal(h.x.length, 12, 'the loss history comes with the checkpoint');
  await page.fill('#moreN', '16');
  await page.click('#moreBtn');
  await page.waitForFunction(() => window.tinytrain.data.x.length === 16 && window.tinytrain.run === 'done', null, { timeout: 60000 });
  const web = (await losses(page)).loss.slice(12);
  for (let i = 0; i < 4; i++) {
    const rel = Math.abs(nat[i].loss - web[i]) / Math.abs(nat[i].loss);
    assert.ok(rel <= 1e-5, `step ${13 + i}: native ${nat[i].loss} browser ${web[i]}`);
  }
  assert.deepEqual(page.errors, []);
  await ctx.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

test('bad corpus and corrupt checkpoint uploads show an error, not a broken page', async () => {
  const dir = tmpDir();
  const ctx = await browser.newContext();
  const page = await openApp(ctx, srv.url);

  // empty paste
  await page.click('.tabs button[data-tab=paste]');
  await page.fill('#corpusText', '');
  await page.click('#trainBtn');
  await page.waitForFunction(() => document.getElementById('corpusStatus').classList.contains('error'));
  assert.match(await page.locator('#corpusStatus').innerText(), /empty/i);

  // too short for the context (the engine's own check)
  await page.fill('#corpusText', 'hello world, this is short.');
  await page.click('#trainBtn');
  await page.waitForFunction(() => /short/i.test(document.getElementById('corpusStatus').textContent), null, { timeout: 30000 });
  assert.ok(await page.locator('#corpusStatus').evaluate((e) => e.classList.contains('error')));
  assert.equal(await page.evaluate(() => window.tinytrain.run), 'idle');

  // binary upload
  const bin = path.join(dir, 'image.bin');
  const b = Buffer.alloc(20000);
  for (let i = 0; i < b.length; i++) b[i] = (i * 7919) % 256;
  fs.writeFileSync(bin, b);
  await page.click('.tabs button[data-tab=upload]');
  await page.setInputFiles('#corpusFile', bin);
  await page.click('#trainBtn');
  await page.waitForFunction(() => /binary/i.test(document.getElementById('corpusStatus').textContent), null, { timeout: 30000 });

  // corrupt checkpoints: random bytes, and a valid header length pointing past the end
  await page.click('.tabs button[data-tab=bundled]');
  const junk = path.join(dir, 'junk.safetensors');
  fs.writeFileSync(junk, Buffer.from('this is not a safetensors file at all, just text'));
  await page.setInputFiles('#ckptFile', junk);
  await page.waitForFunction(() => document.getElementById('ckptStatus').classList.contains('error'), null, { timeout: 30000 });
  const msg1 = await page.locator('#ckptStatus').innerText();
  assert.ok(msg1.length > 10 && !/undefined/.test(msg1), msg1);
  const trunc = path.join(dir, 'trunc.safetensors');
  const hdr = Buffer.alloc(8);
  hdr.writeBigUInt64LE(4096n);
  fs.writeFileSync(trunc, Buffer.concat([hdr, Buffer.from('{"__metadata__":{"format":"tinytrain-checkpoint"')]));
  await page.evaluate(() => { document.getElementById('ckptStatus').className = 'status'; });
  await page.setInputFiles('#ckptFile', trunc);
  await page.waitForFunction(() => document.getElementById('ckptStatus').classList.contains('error'), null, { timeout: 30000 });

  // the page still trains afterwards
  await train(page, { steps: 5 });
  await waitRun(page, 'done', 60000);
  assert.equal((await losses(page)).x.length, 5);
  assert.deepEqual(page.errors.filter((e) => !/Failed to load resource/.test(e)), []);
  await ctx.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

test('the benchmark runs every available backend and fills the table', async () => {
  const ctx = await browser.newContext();
  const page = await openApp(ctx, srv.url);
  await page.selectOption('#benchPresets', 'tiny');
  await page.fill('#benchSteps', '3');
  await page.click('#benchBtn');
  await page.waitForFunction(() => /^Done/.test(document.getElementById('benchStatus').textContent) ||
    /failed/.test(document.getElementById('benchStatus').textContent), null, { timeout: 400000 });
  assert.match(await page.locator('#benchStatus').innerText(), /^Done/);
  const cells = await page.locator('#benchTable tbody tr').first().locator('td').allTextContents();
  assert.equal(cells[0], 'tiny');
  assert.ok(cells.slice(2).every((c) => c !== '…'), 'all cells filled: ' + cells);
  assert.deepEqual(page.errors, []);
  await ctx.close();
});

test('on a host without COOP/COEP, ?coi=sw isolates the page through the service worker', async () => {
  const plain = await startServer(false);
  try {
    const ctx = await browser.newContext();
    const page = await ctx.newPage();
    page.errors = [];
    page.on('pageerror', (e) => page.errors.push(e.message));
    await page.goto(plain.url + '?coi=sw');
    await page.waitForFunction(() => document.body.dataset.ready === '1', null, { timeout: 60000 });
    const caps = await page.evaluate(() => window.tinytrain.caps);
    assert.equal(caps.isolated, true, 'isolated after the service worker reload');
    assert.equal(caps.threads, true);
    assert.deepEqual(page.errors, []);
    await ctx.close();
  } finally {
    plain.server.close();
  }
});

test('without cross-origin isolation the page falls back to single-thread WASM', async () => {
  const plain = await startServer(false);
  try {
    const ctx = await browser.newContext();
    const page = await openApp(ctx, plain.url);
    const caps = await page.evaluate(() => window.tinytrain.caps);
    assert.equal(caps.isolated, false);
    assert.equal(caps.threads, false);
    await train(page, { steps: 12 });
    await waitRun(page, 'done', 60000);
    assert.equal(await page.evaluate(() => window.tinytrain.runVariant), 'single');
    const { loss } = await losses(page);
    assert.equal(loss.length, 12);
    assert.ok(loss.every(Number.isFinite));
    assert.deepEqual(page.errors, []);
    await ctx.close();
  } finally {
    plain.server.close();
  }
});
