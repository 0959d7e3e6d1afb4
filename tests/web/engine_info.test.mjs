// engine_info.test.mjs — the page shows the engine's numbers, not its own:
// for every preset, the parameters, memory and FLOPs the page shows equal
// what `tinytrain info --json` prints (the WebAssembly CLI, so the CPU
// backend's memory plan is the same ISA's, SIMD128, at the page's thread
// count); the page's preset table is the CLI's; the form's ranges are the
// option table's (a value the engine takes is taken, one it refuses comes
// back as its message).
// Needs build-wasm/tinytrain.js (scripts/build-wasm.sh; TT_WASM_DIR
// overrides); skipped without it unless TT_REQUIRE_BROWSER is set (CI).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { ROOT, closeBrowser, openApp, setupInfo, startBrowser } from './helpers.mjs';

const WASM_CLI = path.join(process.env.TT_WASM_DIR || path.join(ROOT, 'build-wasm'), 'tinytrain.js');

let browser, srv;
before(async () => ({ srv, browser } = await startBrowser()));
after(() => closeBrowser({ browser, srv }));

// The CLI prints numbers with 9 significant digits (%.9g); the page keeps them whole.
const as9 = (x) => (x == null ? null : Number(Number(x).toPrecision(9)));

// The size card as {label: text}.
async function cells(page) {
  await setupInfo(page);
  return page.evaluate(() => Object.fromEntries([...document.querySelectorAll('#presetInfo > div')]
    .map((d) => [d.querySelector('.k').textContent, d.querySelector('.v').textContent])));
}

test('for every preset the page shows the engine\'s parameters, memory and FLOPs (tinytrain info --json)', async (t) => {
  if (!fs.existsSync(WASM_CLI)) {
    if (process.env.TT_REQUIRE_BROWSER) assert.fail(`WASM CLI not built (${WASM_CLI}; run scripts/build-wasm.sh)`);
    t.skip(`WASM CLI not built (${WASM_CLI})`);
    return;
  }
  const ctx = await browser.newContext();
  const page = await openApp(ctx, srv.url);
  const threads = await page.evaluate(() => window.tinytrain.plan.threads);
  assert.ok(threads >= 1, 'the plan names its threads');
  const info = JSON.parse(execFileSync('node', ['--no-experimental-fetch', WASM_CLI, 'info', '--json', '--threads', String(threads)],
    { encoding: 'utf8' }));
  assert.equal(info.isa, 'wasm-simd128');
  const presets = await page.evaluate(() => window.tinytrain.presets.map((p) => ({ name: p.name, params: p.params, step_flops: p.step_flops })));
  assert.deepEqual(presets.map((p) => p.name).sort(), info.presets.map((p) => p.name).sort(), 'the same presets');
  const fmt = await page.evaluate(async () => {
    const r = await import('./render.js');
    window.__fmt = r;
    return true;
  });
  assert.ok(fmt);
  for (const cli of info.presets) {
    await page.selectOption('#preset', cli.name);
    const shown = await cells(page);
    const plan = await page.evaluate(() => window.tinytrain.plan);
    const m = cli.model;
    assert.deepEqual([plan.layers, plan['d-model'], plan.heads, plan.ctx, plan.batch, plan.vocab],
      [m.layers, m.d_model, m.heads, m.ctx, m.batch, m.vocab], `${cli.name}: shape`);
    assert.equal(plan.params, m.params, `${cli.name}: parameters`);
    assert.equal(presets.find((p) => p.name === cli.name).params, m.params, `${cli.name}: the preset table's parameters`);
    assert.equal(as9(plan.step_flops), cli.step_flops, `${cli.name}: FLOPs per step`);
    assert.equal(as9(presets.find((p) => p.name === cli.name).step_flops), cli.step_flops, `${cli.name}: the preset table's FLOPs`);
    assert.equal(plan.threads, threads);
    assert.equal(as9(plan.train_bytes), cli.train_bytes, `${cli.name}: memory of a CPU run`);
    // what the card says: the same numbers, in the page's words
    const want = await page.evaluate((c) => ({ params: window.__fmt.fmtParams(c.model.params),
      memory: c.train_bytes == null ? null : window.__fmt.fmtBytes(c.train_bytes) }), cli);
    assert.equal(shown.parameters, want.params, `${cli.name}: parameters shown`);
    if (want.memory) assert.equal(shown.memory, want.memory, `${cli.name}: memory shown`);
    else assert.match(shown['est. time'], /too big for the browser/, `${cli.name}: no CPU plan in wasm32: too big`);
    assert.match(shown.shape, new RegExp(`^${m.layers} layers × ${m.d_model} wide, ${m.heads} heads, context ${m.ctx}$`));
  }
  assert.deepEqual(page.errors, []);
  await ctx.close();
});

test('the form takes the option table\'s ranges; a value the engine refuses shows its message', async () => {
  const ctx = await browser.newContext();
  const page = await openApp(ctx, srv.url);
  const table = await page.evaluate(() => Object.fromEntries(window.tinytrain.options.map((o) => [o.name, o])));
  for (const [id, name] of [['batch', 'batch'], ['layers', 'layers'], ['dmodel', 'd-model'], ['heads', 'heads'], ['ctx', 'ctx'], ['steps', 'steps'], ['lr', 'lr']]) {
    const f = await page.evaluate((x) => ({ min: document.getElementById(x).min, max: document.getElementById(x).max }), id);
    assert.equal(Number(f.min), table[name].min, `${id} min`);
    if (table[name].max <= Number.MAX_SAFE_INTEGER) assert.equal(Number(f.max), table[name].max, `${id} max`);
  }
  // inside the engine's ranges (batch up to 65536, lr up to 10): taken
  await page.fill('#batch', '5000');
  await page.fill('#lr', '5');
  assert.doesNotMatch(await setupInfo(page), /must be/);
  assert.equal(await page.evaluate(() => window.tinytrain.plan.batch), 5000);
  // outside: the engine's own line, on the card and when Train is pressed
  await page.fill('#batch', String(table.batch.max + 1));
  assert.match(await setupInfo(page), new RegExp(`batch must be an integer in 1\\.\\.${table.batch.max} \\(got ${table.batch.max + 1}\\)`));
  await page.click('#trainBtn');
  await page.waitForSelector('#toast:not([hidden])', { timeout: 10000 });
  assert.match(await page.locator('#toast').innerText(), /batch must be an integer/);
  assert.equal(await page.evaluate(() => window.tinytrain.run), 'idle');
  await page.fill('#batch', '16');
  await page.click('#shapeBox summary');
  await page.fill('#heads', '5');
  assert.match(await setupInfo(page), /must be divisible by heads/);
  assert.deepEqual(page.errors, []);
  await ctx.close();
});
