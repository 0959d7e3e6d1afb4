// runfile.test.mjs — the web app's run files and regularisation fields in
// Debian's Chromium: "Load run file…" fills the form from a run file (the
// JSON of `tinytrain train --config`, read by the engine's C code) and the
// next run uses every option it sets; "Save run file" writes the options as
// a file the native CLI resolves to the same values; a malformed file is
// refused with the engine's one-line message; the dropout field reaches the
// engine (the checkpoint's train_config); bits per byte are shown; the
// precision field: set by a run file, in the link, refused off WebGPU.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { closeBrowser, nativeCli, openApp, startBrowser, tmpDir, waitRun } from './helpers.mjs';

let browser, srv;

before(async () => ({ srv, browser } = await startBrowser()));
after(() => closeBrowser({ browser, srv }));

const loadRunFile = (page, name, obj) =>
  page.setInputFiles('#runFile', { name, mimeType: 'application/json', buffer: Buffer.from(typeof obj === 'string' ? obj : JSON.stringify(obj)) });

async function saveRunFile(page) {
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#runSaveBtn')]);
  const file = path.join(tmpDir(), 'run.json');
  await dl.saveAs(file);
  return file;
}

// the train_config of the checkpoint the app autosaved in OPFS
const savedTrainConfig = (page) => page.evaluate(async () => {
  const dir = await (await navigator.storage.getDirectory()).getDirectoryHandle('tinytrain');
  const meta = JSON.parse(await (await (await dir.getFileHandle('meta.json')).getFile()).text());
  const b = await (await (await dir.getFileHandle(meta.checkpoint || 'checkpoint.safetensors')).getFile()).arrayBuffer();
  const n = Number(new DataView(b).getBigUint64(0, true));
  return JSON.parse(JSON.parse(new TextDecoder().decode(new Uint8Array(b, 8, n))).__metadata__.train_config);
});

test('run file: load fills the form and the run uses it; save writes it back; the CLI reads the saved file', async () => {
  const ctx = await browser.newContext({ acceptDownloads: true });
  const page = await openApp(ctx, srv.url);
  const run = { preset: 'tiny', steps: 16, lr: 0.002, seed: 5, dropout: 0.15, beta2: 0.99, 'eval-every': 8, schedule: 'constant' };
  await loadRunFile(page, 'mine.json', run);
  await page.waitForFunction(() => /Loaded mine\.json/.test(document.getElementById('runfileStatus').textContent), null, { timeout: 30000 });
  assert.equal(await page.inputValue('#steps'), '16');
  assert.equal(await page.inputValue('#lr'), '0.002');
  assert.equal(await page.inputValue('#seed'), '5');
  assert.equal(await page.inputValue('#dropout'), '0.15');

  // Save: the form plus what only the file set (beta2, schedule, eval-every)
  const saved = JSON.parse(fs.readFileSync(await saveRunFile(page), 'utf8'));
  for (const [k, v] of Object.entries(run)) if (k !== 'preset') assert.equal(saved[k], v, `saved ${k}`);
  assert.equal(saved.layers, 2);
  const cli = nativeCli();
  if (cli) { // the same file through the native parser resolves to the same options
    const file = path.join(tmpDir(), 'again.json');
    fs.writeFileSync(file, JSON.stringify(saved));
    const back = JSON.parse(execFileSync(cli, ['train', '--config', file, '--print-config'], { encoding: 'utf8' }));
    assert.deepEqual(back, saved);
  }

  // the run uses the file's options, and the dropout field (changed after loading: the form wins) reaches the engine
  await page.fill('#dropout', '0.25');
  await page.click('#trainBtn');
  await waitRun(page, 'done');
  await page.waitForFunction(() => /Autosaved step 16/.test(document.getElementById('ckptStatus').textContent), null, { timeout: 60000 });
  const tc = await savedTrainConfig(page);
  assert.equal(tc.steps, 16);
  assert.equal(Math.fround(tc.dropout), Math.fround(0.25));
  assert.equal(Math.fround(tc.beta2), Math.fround(0.99));
  assert.equal(tc.schedule, 'constant');
  assert.equal(tc['eval-every'], 8);
  const loss = Number(await page.locator('#stVal').innerText()), bpb = Number(await page.locator('#stValBpb').innerText());
  assert.ok(Math.abs(bpb - loss / Math.LN2) < 2e-3, `val bpb ${bpb} beside val loss ${loss}`);
  assert.match(await page.locator('#stBpb').innerText(), /^\d+\.\d{3}$/, 'train bits per byte');
  assert.deepEqual(page.errors, []);
  await ctx.close();
});

test('precision: a run file sets the field; off WebGPU the note says f16 is refused and a run is, with one line; f32 trains', async () => {
  const ctx = await browser.newContext();
  const page = await openApp(ctx, srv.url);
  await page.click('input[name=backend][value=single] + span');
  assert.doesNotMatch(await page.locator('#backendNote').innerText(), /f16/, 'f32: no word on precision');
  await loadRunFile(page, 'half.json', { preset: 'tiny', steps: 4, precision: 'f16' });
  await page.waitForFunction(() => /Loaded half\.json/.test(document.getElementById('runfileStatus').textContent), null, { timeout: 30000 });
  assert.equal(await page.inputValue('#precision'), 'f16');
  assert.match(await page.locator('#backendNote').innerText(), /f16 mixed precision needs the WebGPU engine/);
  await page.click('#trainBtn');
  await page.waitForFunction(() => !document.getElementById('toast').hidden, null, { timeout: 60000 });
  const toast = await page.locator('#toast').innerText();
  assert.match(toast, /f16/);
  assert.equal(toast.split('\n').length, 1, 'one line: ' + toast);
  await page.selectOption('#precision', 'f32');
  assert.doesNotMatch(page.url(), /precision=/, 'f32 (the default) is not in the link');
  await page.selectOption('#precision', 'f16');
  assert.match(page.url(), /precision=f16/);
  await page.selectOption('#precision', 'f32');
  await page.click('#trainBtn');
  await waitRun(page, 'done');
  assert.deepEqual(page.errors, []);
  await ctx.close();
});

test('run file: a malformed file is refused with one line naming the file and key; the dropout field is checked', async () => {
  const ctx = await browser.newContext();
  const page = await openApp(ctx, srv.url);
  const status = () => page.locator('#runfileStatus').innerText();
  await loadRunFile(page, 'typo.json', { lrate: 0.1 });
  await page.waitForFunction(() => document.getElementById('runfileStatus').classList.contains('error'), null, { timeout: 30000 });
  assert.match(await status(), /^typo\.json: unknown key 'lrate' \(did you mean 'lr'\?\)$/);
  await loadRunFile(page, 'type.json', { dropout: '0.1' });
  await page.waitForFunction(() => /type\.json/.test(document.getElementById('runfileStatus').textContent), null, { timeout: 30000 });
  assert.match(await status(), /'dropout' must be a number/);
  await loadRunFile(page, 'notjson.json', '{"steps": 10,}');
  await page.waitForFunction(() => /notjson\.json/.test(document.getElementById('runfileStatus').textContent), null, { timeout: 30000 });
  assert.match(await status(), /not a valid run file/);
  assert.equal(await page.inputValue('#steps'), '300', 'a refused file changes nothing');

  await page.fill('#dropout', '1');
  await page.click('#runSaveBtn'); // the engine's option table checks it (its message)
  await page.waitForFunction(() => /dropout/.test(document.getElementById('runfileStatus').textContent), null, { timeout: 30000 });
  assert.match(await status(), /dropout must be in \[0, 1\) \(got 1\)/);
  assert.equal(await page.isDisabled('#loraRank'), true, 'LoRA rank is off until LoRA is on');
  await page.check('#loraOn');
  assert.equal(await page.isDisabled('#loraRank'), false);
  assert.deepEqual(page.errors, []);
  await ctx.close();
});
