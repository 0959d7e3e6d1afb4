// finetune.test.mjs — fine-tuning in the web app, in Debian's Chromium: a
// model trained by the native CLI on one text (the repository's Shakespeare)
// is chosen with "Fine-tune from…"; the next run starts from its weights
// (fresh optimizer, step 0) on an uploaded text (C-like code from a fixed
// seed) with LoRA on; the run's checkpoint records where it started, keeps
// the uploaded weights frozen under rank-4 adapters, and evaluates (by the
// native CLI, on the new text) below the model it started from by a bar.
// Both texts are fixed, so the bar does not move with the repository's docs
// or sources. A damaged file is refused in plain words, the engine's line one
// click away. A model too big for the page is refused by its own size, not
// the form's.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { ROOT, autosaveBytes, cLikeText, launch, nativeCli, openApp, startServer, tmpDir, waitRun } from './helpers.mjs';

let browser, srv;

before(async () => {
  srv = await startServer(true);
  browser = await launch();
});

after(async () => {
  if (browser) await browser.close();
  if (srv) srv.server.close();
});

const evalLoss = (cli, ckpt, data) =>
  JSON.parse(execFileSync(cli, ['eval', '--ckpt', ckpt, '--data', data, '--json'], { encoding: 'utf8' }).trim().split('\n').pop());

test('fine-tune from a checkpoint: a new run from its weights with LoRA, recorded, better on the new text than its start', async (t) => {
  const cli = nativeCli();
  if (!cli) { t.skip('no native tinytrain to train the base model'); return; }
  const dir = tmpDir();
  // the base: the tiny preset on the repository's Shakespeare
  const textA = path.join(ROOT, 'data', 'tinyshakespeare.txt');
  execFileSync(cli, ['train', '--preset', 'tiny', '--steps', '150', '--data', textA, '--out', path.join(dir, 'base'),
    '--backend', 'cpu', '--sample-tokens', '0'], { stdio: 'ignore' });
  const base = path.join(dir, 'base', 'checkpoint.safetensors');
  // the new text: C-like code drawn from a fixed seed (a style the base never saw), uploaded to the page
  const textB = path.join(dir, 'b.txt');
  fs.writeFileSync(textB, cLikeText(1500, 7));

  const ctx = await browser.newContext();
  const page = await openApp(ctx, srv.url);
  await page.setInputFiles('#ftFile', { name: 'base.safetensors', mimeType: 'application/octet-stream', buffer: fs.readFileSync(base) });
  await page.waitForFunction(() => /fine-tunes base\.safetensors/.test(document.getElementById('ftStatus').textContent));
  await page.click('.tabs button[data-tab=upload]');
  await page.setInputFiles('#corpusFile', textB);
  await page.waitForFunction(() => /^b\.txt · /.test(document.getElementById('corpusStatus').textContent));
  await page.selectOption('#preset', 'tiny');
  await page.fill('#steps', '60');
  await page.fill('#lr', '0.01');
  await page.check('#loraOn');
  await page.fill('#loraRank', '4');
  await page.click('#trainBtn');
  await waitRun(page, 'done');
  await page.waitForFunction(() => /Autosaved step 60/.test(document.getElementById('ckptStatus').textContent), null, { timeout: 60000 });
  assert.equal(await page.locator('#ftStatus').innerText(), '', 'the choice is used once');

  const ft = path.join(dir, 'ft.safetensors');
  fs.writeFileSync(ft, await autosaveBytes(page));
  const n = Number(fs.readFileSync(ft).readBigUInt64LE(0));
  const md = JSON.parse(fs.readFileSync(ft).subarray(8, 8 + n).toString()).__metadata__;
  assert.equal(md.init_from, 'base.safetensors');
  const cfg = JSON.parse(md.config);
  assert.equal(cfg['lora-rank'], 4);
  assert.equal(Number(md.step), 60);
  const before = evalLoss(cli, base, textB), after = evalLoss(cli, ft, textB);
  assert.equal(after.same_corpus, true, 'the run trained on the uploaded text (the CLI matches its data hash)');
  // measured: 4.5098 from the base, 3.6876 fine-tuned (a drop of 0.82; the native CLI's same
  // fine-tune gives the same loss, and drops 0.25 after 5 steps, 0.60 after 15): the bar fails
  // a fine-tune that barely trains and leaves room for other machines
  const drop = before.val_loss - after.val_loss;
  t.diagnostic(`val loss on the new text: ${before.val_loss} from the base, ${after.val_loss} fine-tuned (drop ${drop.toFixed(4)}, bar 0.4)`);
  assert.ok(drop > 0.4, `val on the new text: ${before.val_loss} from the base, ${after.val_loss} fine-tuned (drop ${drop}, bar 0.4)`);
  assert.deepEqual(page.errors, []);
  await ctx.close();
});

test('fine-tune from a damaged file: refused in plain words, the engine\'s line one click away', async () => {
  const ctx = await browser.newContext();
  const page = await openApp(ctx, srv.url);
  // the engine reads the file's header when it is chosen (tt_web_checkpoint_info): refused there
  await page.setInputFiles('#ftFile', { name: 'junk.safetensors', mimeType: 'application/octet-stream', buffer: Buffer.alloc(4096, 7) });
  await page.waitForFunction(() => document.getElementById('ftStatus').classList.contains('error'), null, { timeout: 30000 });
  assert.match(await page.locator('#ftStatus').innerText(), /Could not fine-tune from that model/);
  assert.equal(await page.locator('#ftStatus details').count(), 1);
  assert.match(await page.locator('#ftStatus details code').textContent(), /safetensors|header/i, "the engine's line");
  assert.equal(await page.evaluate(() => window.tinytrain.initFrom), null, 'the next run is not a fine-tune');
  await ctx.close();
});

test('fine-tune from a model too big for the page: sized by the model, not the form (tiny), refused before the engine starts', async () => {
  const ctx = await browser.newContext();
  const page = await openApp(ctx, srv.url);
  // a .safetensors header that records a 48 x 6400 model (no tensors: the page refuses it before the engine reads them)
  const cfg = JSON.stringify({ layers: 48, 'd-model': 6400, heads: 50, ctx: 1024, batch: 8, vocab: 256 });
  const head = Buffer.from(JSON.stringify({ __metadata__: { format: 'tinytrain-checkpoint', config: cfg } }));
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(head.length));
  await page.setInputFiles('#ftFile', { name: 'huge.safetensors', mimeType: 'application/octet-stream', buffer: Buffer.concat([len, head]) });
  await page.waitForFunction(() => /fine-tunes huge\.safetensors/.test(document.getElementById('ftStatus').textContent), null, { timeout: 30000 });
  await page.selectOption('#preset', 'tiny');
  await page.fill('#steps', '20');
  await page.click('#trainBtn');
  await page.waitForFunction(() => !document.getElementById('toast').hidden, null, { timeout: 10000 });
  assert.match(await page.locator('#toast').innerText(), /needs about [\d.]+ GB of memory/);
  assert.equal(await page.evaluate(() => window.tinytrain.run), 'idle', 'nothing started');
  await ctx.close();
});
