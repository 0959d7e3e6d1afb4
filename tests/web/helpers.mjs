// helpers.mjs — shared setup of the browser tests (tests/web/*.test.mjs):
// the static server (scripts/serve.mjs), Debian's Chromium through
// playwright-core (never a downloaded browser; one shared by the files when
// test_web.sh started it), pages that record console
// errors, small waits on the app's state (window.tinytrain), and fixed
// generated texts for tests whose loss bars must not move with the
// repository's docs or sources.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { serve } from '../../scripts/serve.mjs';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const WEB = path.join(ROOT, 'web');
export const ARTIFACTS = process.env.TT_ARTIFACT_DIR || path.join(ROOT, 'test-results', 'web');
export const CHROMIUM = process.env.TT_CHROMIUM || '/usr/bin/chromium';

export function nativeCli() {
  const cands = [process.env.TINYTRAIN, path.join(ROOT, 'build', 'tinytrain')].filter(Boolean);
  return cands.find((p) => fs.existsSync(p)) || null;
}

export async function startServer(isolation = true) {
  return serve({ root: WEB, port: 0, isolation, quiet: true });
}

export const CHROMIUM_ARGS = ['--no-sandbox', '--no-first-run', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--disable-quic', '--enable-unsafe-webgpu'];

// Chromium for a test file: the shared one test_web.sh started
// (browser_server.mjs, TT_BROWSER_WS), else a browser of its own. Either way
// browser.close() ends what this file made (a connected browser closes the
// file's contexts and disconnects; the shared one lives on).
export async function launch() {
  if (process.env.TT_BROWSER_WS) return chromium.connect(process.env.TT_BROWSER_WS);
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
}

// The server and browser a test file shares (its before hook starts them,
// its after hook closes them): { srv, browser }. When the browser fails to
// launch, the server is closed before the error goes on.
export async function startBrowser(isolation = true) {
  const srv = await startServer(isolation);
  try {
    return { srv, browser: await launch() };
  } catch (e) {
    srv.server.close();
    throw e;
  }
}

export async function closeBrowser({ browser, srv }) {
  if (browser) await browser.close();
  if (srv) srv.server.close();
}

export function tmpDir(prefix = 'tt-web-') {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

// A page of the app with every console error and uncaught exception recorded.
export async function openApp(context, url) {
  const page = await context.newPage();
  page.errors = [];
  page.on('console', (m) => { if (m.type() === 'error') page.errors.push('console: ' + m.text()); });
  page.on('pageerror', (e) => page.errors.push('pageerror: ' + e.message));
  page.on('crash', () => page.errors.push('crash'));
  await page.goto(url);
  await waitReady(page);
  return page;
}

export async function waitReady(page) {
  await page.waitForFunction(() => document.body.dataset.ready === '1', null, { timeout: 60000 });
}

export async function waitRun(page, states, timeout = 180000) {
  const want = Array.isArray(states) ? states : [states];
  await page.waitForFunction((w) => w.includes(window.tinytrain.run), want, { timeout });
}

// The setup's size card once the engine has answered for the setup on screen
// (app.js asks it on every change: data-pending is "1" until it answers).
export async function setupInfo(page) {
  await page.waitForFunction(() => document.getElementById('presetInfo').dataset.pending === '0', null, { timeout: 30000 });
  return page.locator('#presetInfo').innerText();
}

export async function losses(page) {
  return page.evaluate(() => ({ x: [...window.tinytrain.data.x], loss: [...window.tinytrain.data.loss] }));
}

export async function train(page, { preset = 'tiny', steps = 40, seed = 1337, lr = null, backend = null } = {}) {
  await page.selectOption('#preset', preset);
  await page.fill('#steps', String(steps));
  await page.fill('#seed', String(seed));
  if (lr != null) await page.fill('#lr', String(lr));
  if (backend) await page.click(`input[name=backend][value=${backend}] + span`);
  await page.click('#trainBtn');
  // a WebGPU start compiles every kernel first: about a minute on a software adapter with a cold cache
  await page.waitForFunction(() => window.tinytrain.run !== 'starting' && window.tinytrain.run !== 'idle', null, { timeout: 240000 });
}

export function mean(a) { return a.reduce((s, x) => s + x, 0) / a.length; }

// n small C functions drawn from a fixed LCG seed: the same text on every
// machine and at every commit (a style the Shakespeare-trained bases of the
// fine-tune tests never saw). make_c_text in tests/support/cli_lib.sh writes
// the same bytes for the shell tests.
export function cLikeText(n, seed) {
  let x = seed >>> 0;
  const pick = (a) => { x = (Math.imul(x, 1664525) + 1013904223) >>> 0; return a[(x >>> 16) % a.length]; };
  const names = ['acc', 'row', 'col', 'tile', 'sum', 'k', 'n', 'buf', 'len', 'off'];
  const types = ['int', 'float', 'size_t', 'uint32_t'];
  const ops = ['+', '-', '*', '^', '&'];
  const lines = [];
  for (let i = 0; i < n; i++) {
    const t = pick(types), a = pick(names), b = pick(names.filter((v) => v !== a));
    lines.push(`static ${t} f${i}(${t} ${a}, ${t} ${b}) {`, `    ${t} r = ${a} ${pick(ops)} ${b};`,
      `    for (int i = 0; i < ${pick(['4', '8', '16', 'n'])}; i++) r ${pick(ops)}= ${pick([a, b, 'i'])};`, '    return r;', '}', '');
  }
  return lines.join('\n');
}

// The app's autosave in the page's OPFS (tinytrain/): SHA-256 of the
// checkpoint and metadata files, the metadata's step, status and loss, the
// checkpoint's step, loss history (as float32) and schedule, and which file
// holds the checkpoint (the one meta.json names; checkpoint.safetensors in
// autosaves made before it named one) with its size.
export async function readAutosave(page) {
  return page.evaluate(async () => {
    const dir = await (await navigator.storage.getDirectory()).getDirectoryHandle('tinytrain');
    const read = async (name) => (await (await dir.getFileHandle(name)).getFile()).arrayBuffer();
    const hex = async (b) => [...new Uint8Array(await crypto.subtle.digest('SHA-256', b))].map((x) => x.toString(16).padStart(2, '0')).join('');
    const metaB = await read('meta.json');
    const meta = JSON.parse(new TextDecoder().decode(metaB));
    const ckName = meta.checkpoint || 'checkpoint.safetensors';
    const ckB = await read(ckName);
    const n = Number(new DataView(ckB).getBigUint64(0, true));
    const md = JSON.parse(new TextDecoder().decode(new Uint8Array(ckB, 8, n))).__metadata__;
    return {
      sha: { meta: await hex(metaB), ckpt: await hex(ckB) },
      meta: { step: meta.step, status: meta.status, loss: meta.loss },
      ckpt: { step: Number(md.step), losses: JSON.parse(md.loss_history).map(Math.fround), sched: JSON.parse(md.train_config).schedule },
      files: { checkpoint: ckName, checkpointBytes: ckB.byteLength },
    };
  });
}

// The names of the files in the page's OPFS folder tinytrain/, sorted.
export async function listAutosave(page) {
  return page.evaluate(async () => {
    const dir = await (await navigator.storage.getDirectory()).getDirectoryHandle('tinytrain');
    const names = [];
    for await (const [name] of dir.entries()) names.push(name);
    return names.sort();
  });
}

// Every page of ctx keeps its Workers in window.__ttWorkers and records what
// they post, for the message types given, in window.__ttLog
// ({type, run, step, where, message}).
export async function recordWorkers(ctx, types = ['progress', 'status', 'saved', 'error']) {
  await ctx.addInitScript((types) => {
    const Native = window.Worker;
    window.__ttLog = [];
    window.__ttWorkers = [];
    window.Worker = class extends Native {
      constructor(...args) {
        super(...args);
        window.__ttWorkers.push(this);
        this.addEventListener('message', (e) => {
          const m = e.data;
          if (!m || !types.includes(m.type)) return;
          window.__ttLog.push({ type: m.type, run: m.run, step: m.step, where: m.where, message: m.message });
        });
      }
    };
  }, types);
}

// Presses Tab until the element with `id` has the focus; the number of presses, or -1.
export async function tabTo(page, id, max = 80) {
  await page.evaluate(() => { document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0); });
  for (let i = 1; i <= max; i++) {
    await page.keyboard.press('Tab');
    if (await page.evaluate((x) => document.activeElement && document.activeElement.id === x, id)) return i;
  }
  return -1;
}

// Answers the page's confirmation dialog (ok: the action; else Cancel) and returns its text.
export async function answer(page, ok) {
  await page.waitForSelector('#askDlg[open]', { timeout: 10000 });
  const text = await page.locator('#askText').innerText();
  await page.click(ok ? '#askOk' : '#askCancel');
  await page.waitForSelector('#askDlg', { state: 'hidden' });
  return text;
}

// The autosaved checkpoint's bytes (a Buffer), from the page's OPFS.
export async function autosaveBytes(page) {
  const b64 = await page.evaluate(async () => {
    const dir = await (await navigator.storage.getDirectory()).getDirectoryHandle('tinytrain');
    const meta = JSON.parse(await (await (await dir.getFileHandle('meta.json')).getFile()).text());
    const b = new Uint8Array(await (await (await dir.getFileHandle(meta.checkpoint || 'checkpoint.safetensors')).getFile()).arrayBuffer());
    let s = '';
    for (let i = 0; i < b.length; i += 0x8000) s += String.fromCharCode(...b.subarray(i, i + 0x8000));
    return btoa(s);
  });
  return Buffer.from(b64, 'base64');
}
