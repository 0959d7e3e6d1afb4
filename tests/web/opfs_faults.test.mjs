// opfs_faults.test.mjs — the autosave in the browser's private file system
// (OPFS) when a write cannot complete:
//   - storage full: the origin's quota is really lowered (the DevTools
//     protocol's Storage.overrideQuotaForOrigin) below what the next
//     checkpoint needs, so the browser itself refuses the write part way.
//     The run must stop paused with one message naming the full storage and
//     the autosave that is kept; OPFS holds that autosave byte for byte and
//     nothing else; the page's step, the downloadable checkpoint and the
//     engine agree; a reload restores the kept step; once space is back a
//     resume saves again.
//   - the tab killed during an autosave: a hook appended to a served copy of
//     web/worker.js (the app has none) stops the next checkpoint write half
//     way, or stops the save just before its metadata is written, and the
//     renderer is crashed there (Page.crash). A new tab must restore a whole
//     autosave, metadata and checkpoint of one step, and the folder must hold
//     nothing but that autosave.
// The save points are made deterministic by pauses (a pause autosaves).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { launch, listAutosave, openApp, readAutosave, recordWorkers, tmpDir, train, waitRun, WEB } from './helpers.mjs';
import { serve } from '../../scripts/serve.mjs';

const HOOK = `
// test hook (tests/web/opfs_faults.test.mjs): on request, stop the next
// autosave half way through its checkpoint write ('mid') or just before its
// metadata write ('beforeMeta'), and say so to the page; the test then
// crashes the tab. The stop blocks the Worker's thread (Atomics.wait) so that
// nothing after it runs.
{
  let fault = null;
  const stop = (where) => {
    self.postMessage({ type: '__testStopped', where });
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
  };
  const open = FileSystemFileHandle.prototype.createSyncAccessHandle;
  FileSystemFileHandle.prototype.createSyncAccessHandle = async function (...a) {
    const h = await open.apply(this, a);
    h.__ttName = this.name;
    return h;
  };
  const write = FileSystemSyncAccessHandle.prototype.write;
  FileSystemSyncAccessHandle.prototype.write = function (buf, o) {
    if (fault === 'mid' && /checkpoint/.test(this.__ttName) && buf.byteLength > 1) {
      fault = null;
      write.call(this, buf.subarray(0, buf.byteLength >> 1), o);
      this.flush();
      stop('mid ' + this.__ttName);
    }
    return write.call(this, buf, o);
  };
  const get = FileSystemDirectoryHandle.prototype.getFileHandle;
  FileSystemDirectoryHandle.prototype.getFileHandle = function (name, o) {
    if (fault === 'beforeMeta' && o && o.create && name.startsWith('meta.json')) {
      fault = null;
      stop('before ' + name);
    }
    return get.call(this, name, o);
  };
  const onm = self.onmessage;
  self.onmessage = (e) => {
    if (e.data && e.data.type === '__testFault') { fault = e.data.mode; return; }
    onm(e);
  };
}
`;

let browser, srv, hooked, root;

before(async () => {
  srv = await serve({ root: WEB, port: 0, isolation: true, quiet: true });
  root = tmpDir('tt-web-opfs-');
  fs.cpSync(WEB, root, { recursive: true });
  fs.appendFileSync(path.join(root, 'worker.js'), HOOK);
  hooked = await serve({ root, port: 0, isolation: true, quiet: true });
  browser = await launch();
});

after(async () => {
  if (browser) await browser.close();
  if (srv) srv.server.close();
  if (hooked) hooked.server.close();
  if (root) fs.rmSync(root, { recursive: true, force: true });
});

// A context whose pages log what the training Worker says.
async function newContext() {
  const ctx = await browser.newContext();
  await recordWorkers(ctx, ['progress', 'status', 'saved', 'error', '__testStopped']);
  return ctx;
}

const log = (page) => page.evaluate(() => window.__ttLog);
const shown = (page) => page.evaluate(() => ({ x: [...window.tinytrain.data.x], loss: [...window.tinytrain.data.loss],
  run: window.tinytrain.run, step: document.getElementById('stStep').textContent }));

// Trains tiny, pauses after a few steps (an autosave of step k), resumes and
// waits for a step past k. Returns k and the autosave.
async function trainPastAutosave(page) {
  await train(page, { steps: 5000, seed: 11 });
  await page.waitForFunction(() => window.tinytrain.data.x.length >= 2, null, { timeout: 120000 });
  await page.click('#pauseBtn');
  await waitRun(page, 'paused');
  const k = await page.evaluate(() => window.tinytrain.data.x.length);
  const saved = await readAutosave(page);
  assert.equal(saved.meta.step, k, 'the pause autosaved its step');
  assert.equal(saved.ckpt.step, k);
  await page.click('#pauseBtn'); // Resume
  await waitRun(page, 'running');
  await page.waitForFunction((n) => window.tinytrain.data.x.length > n, k, { timeout: 120000 });
  return { k, saved };
}

async function waitRestored(page) {
  await page.waitForFunction(() => document.body.dataset.ready === '1' && !document.getElementById('banner').hidden, null, { timeout: 60000 });
}

// The files of an autosave: its metadata, corpus and the checkpoint it names.
const autosaveFiles = (a) => ['corpus.bin', a.files.checkpoint, 'meta.json'].sort();

// The safetensors header's metadata of checkpoint bytes.
function ckptMeta(b) {
  const n = Number(b.readBigUInt64LE(0));
  return JSON.parse(b.subarray(8, 8 + n).toString('utf8')).__metadata__;
}

test('OPFS full: the run pauses with one message, the previous autosave is kept byte for byte and restores', async () => {
  const ctx = await newContext();
  const page = await openApp(ctx, srv.url);
  const { k, saved } = await trainPastAutosave(page);

  // the quota: what is used now plus half a checkpoint
  const cdp = await ctx.newCDPSession(page);
  const origin = new URL(srv.url).origin;
  const usage = (await page.evaluate(() => navigator.storage.estimate())).usage;
  await cdp.send('Storage.overrideQuotaForOrigin', { origin, quotaSize: usage + Math.floor(saved.files.checkpointBytes / 2) });
  const from = (await log(page)).length;
  // the next autosave (every 10 s while running) fails
  await page.waitForFunction((f) => window.__ttLog.slice(f).some((m) => m.type === 'error' || m.type === 'saved'), from, { timeout: 120000 });
  // OPFS: exactly the autosave of step k, and no piece of the failed write
  const now = await readAutosave(page);
  assert.deepEqual(now, saved, 'the autosave of step k, byte for byte');
  assert.deepEqual(await listAutosave(page), autosaveFiles(saved), 'no partial file left');
  // the run pauses by itself
  await waitRun(page, ['paused', 'stopped', 'done']);
  await page.waitForFunction((f) => window.__ttLog.slice(f).some((m) => m.type === 'status' && m.run === 'paused'), from, { timeout: 60000 });
  const after = (await log(page)).slice(from);
  const errors = after.filter((m) => m.type === 'error');
  assert.equal(errors.length, 1, 'one message: ' + JSON.stringify(errors));
  assert.equal(errors[0].where, 'autosave');
  assert.match(errors[0].message, new RegExp(`^Browser storage is full: step \\d+ could not be saved, the autosave of step ${k} is kept\\. ` +
    'Training is paused: free space or download the checkpoint, then resume\\.$'));
  assert.deepEqual(after.filter((m) => m.type === 'saved'), [], 'nothing saved after the failure');
  assert.equal(await page.evaluate(() => window.tinytrain.run), 'paused');
  assert.equal(await page.locator('#ckptStatus').innerText(), errors[0].message, 'the message stays next to the checkpoint buttons');

  // the state: the page, the engine's last step and a downloaded checkpoint agree
  const s = await shown(page);
  const last = after.filter((m) => m.type === 'progress').at(-1);
  assert.ok(s.x.length > k);
  assert.equal(last.step, s.x.length, "the engine's step is the page's");
  assert.deepEqual(s.x, Array.from({ length: s.x.length }, (_, i) => i + 1), 'every step once, in order');
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#downloadBtn')]);
  const dlPath = path.join(tmpDir('tt-web-dl-'), 'paused.safetensors');
  await download.saveAs(dlPath); // a copy here: the browser may be a shared one (run_web.sh)
  const md = ckptMeta(fs.readFileSync(dlPath));
  fs.rmSync(path.dirname(dlPath), { recursive: true, force: true });
  assert.equal(Number(md.step), s.x.length, 'the download holds the paused step');
  assert.deepEqual(JSON.parse(md.loss_history).map(Math.fround), s.loss, "the download's losses are the page's");

  assert.deepEqual(await readAutosave(page), saved, 'still the autosave of step k after the pause');
  assert.deepEqual(await listAutosave(page), autosaveFiles(saved));

  // a reload restores step k (the quota still low: restoring needs no space)
  await page.reload();
  await waitRestored(page);
  await waitRun(page, 'paused');
  const r = await shown(page);
  assert.equal(r.x.length, k, 'the reload restored the kept step');
  assert.deepEqual(r.loss, s.loss.slice(0, k));

  // space is back: a resume trains and saves again
  await cdp.send('Storage.overrideQuotaForOrigin', { origin });
  await page.click('#pauseBtn'); // Resume
  await page.waitForFunction((n) => window.tinytrain.data.x.length > n + 1, k, { timeout: 120000 });
  await page.click('#pauseBtn');
  await waitRun(page, 'paused');
  const n2 = await page.evaluate(() => window.tinytrain.data.x.length);
  const a2 = await readAutosave(page);
  assert.equal(a2.meta.step, n2);
  assert.equal(a2.ckpt.step, n2);
  assert.deepEqual(await listAutosave(page), autosaveFiles(a2));
  assert.deepEqual(page.errors.filter((e) => /^(pageerror|crash)/.test(e)), [], 'the page lives');
  await ctx.close();
});

// Crashes the tab at the hook's stop in the next autosave (made by a pause),
// opens the app in a new tab of the same browser profile and checks what it
// restored.
async function killDuringAutosave(t, mode) {
  const ctx = await newContext();
  const page = await openApp(ctx, hooked.url);
  const { k, saved } = await trainPastAutosave(page);
  await page.evaluate((m) => window.__ttWorkers.forEach((w) => w.postMessage({ type: '__testFault', mode: m })), mode);
  await page.click('#pauseBtn');
  await page.waitForFunction(() => window.__ttLog.some((m) => m.type === '__testStopped'), null, { timeout: 120000 });
  const stopped = (await log(page)).find((m) => m.type === '__testStopped');
  t.diagnostic('stopped at ' + stopped.where);
  const before = await shown(page);
  const k2 = before.x.length;
  assert.ok(k2 > k);
  const cdp = await ctx.newCDPSession(page);
  const crashed = new Promise((r) => page.once('crash', r));
  cdp.send('Page.crash').catch(() => {});
  await crashed;
  await page.close();

  const page2 = await openApp(ctx, hooked.url);
  await waitRestored(page2);
  await waitRun(page2, 'paused');
  const r = await shown(page2);
  const a = await readAutosave(page2);
  t.diagnostic(`autosave before ${k}, save cut off at ${k2}, restored ${r.x.length}`);
  assert.ok(r.x.length === k || r.x.length === k2, `restored the old (${k}) or the new (${k2}) autosave, not ${r.x.length}`);
  assert.equal(a.meta.step, a.ckpt.step, 'metadata and checkpoint of one save');
  assert.equal(a.ckpt.step, r.x.length);
  if (r.x.length === k) assert.deepEqual(a, saved, 'the old autosave, byte for byte');
  assert.deepEqual(r.loss, before.loss.slice(0, r.x.length), 'the restored losses are the ones the page showed');
  assert.deepEqual(await listAutosave(page2), autosaveFiles(a), 'the cut-off write was cleaned up');
  // and the run goes on, saving again
  await page2.click('#pauseBtn'); // Resume
  await page2.waitForFunction((n) => window.tinytrain.data.x.length > n, r.x.length, { timeout: 120000 });
  await page2.click('#pauseBtn');
  await waitRun(page2, 'paused');
  const a3 = await readAutosave(page2);
  assert.equal(a3.meta.step, await page2.evaluate(() => window.tinytrain.data.x.length));
  assert.deepEqual(await listAutosave(page2), autosaveFiles(a3));
  assert.deepEqual(page2.errors.filter((e) => /^(pageerror|crash)/.test(e)), [], 'the new tab lives');
  await ctx.close();
}

test('tab killed half way through an autosave\'s checkpoint write: the previous autosave restores, the partial file is removed', async (t) => {
  await killDuringAutosave(t, 'mid');
});

test('tab killed after the checkpoint write, before the metadata: one whole autosave restores, leftovers removed', async (t) => {
  await killDuringAutosave(t, 'beforeMeta');
});
