// browser_engine_boot.mjs — the worker_threads side of browser_engine.mjs:
// gives the thread what web/worker.js expects of a browser's module Worker
// (self, postMessage/onmessage, importScripts' presence for Emscripten's
// environment test, location, navigator.gpu from Dawn's Node binding, fetch
// of file: URLs), then imports web/worker.js unchanged.
import { parentPort, workerData } from 'node:worker_threads';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';

const workerUrl = new URL('../web/worker.js', import.meta.url);
globalThis.self = globalThis;
self.location = { href: workerUrl.href };
globalThis.importScripts = () => { throw new Error('importScripts is not available here'); };
self.postMessage = (m, transfer) => parentPort.postMessage(m, transfer);
const early = []; // messages that arrive before worker.js has set onmessage
parentPort.on('message', (data) => { if (self.onmessage) self.onmessage({ data }); else early.push(data); });

const netFetch = globalThis.fetch;
globalThis.fetch = async (url, init) => {
  const u = new URL(String(url), workerUrl);
  if (u.protocol !== 'file:') return netFetch(url, init);
  const body = await readFile(u);
  const type = u.pathname.endsWith('.wasm') ? 'application/wasm' : 'application/octet-stream';
  return new Response(body, { headers: { 'Content-Type': type } });
};

if (workerData.dawn) {
  const { create, globals } = createRequire(import.meta.url)(workerData.dawn);
  Object.assign(globalThis, globals);
  const gpu = create(workerData.toggles.length ? [`enable-dawn-features=${workerData.toggles.join(',')}`] : []);
  Object.defineProperty(globalThis.navigator, 'gpu', { value: gpu, configurable: true });
}

await import(workerUrl.href);
for (const data of early.splice(0)) self.onmessage({ data });
