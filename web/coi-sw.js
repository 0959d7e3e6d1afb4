// coi-sw.js — optional service worker for static hosts that cannot send the
// COOP/COEP headers WebAssembly threads need (e.g. GitHub Pages). It serves
// every same-origin response of the app again with
//   Cross-Origin-Opener-Policy: same-origin
//   Cross-Origin-Embedder-Policy: require-corp
// so the page becomes cross-origin isolated after one reload. Opt in with
// <html data-coi="sw"> in index.html (or ?coi=sw in the address); app.js
// registers it. Without it, the app runs single-threaded WASM (or WebGPU).
self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (e) => e.waitUntil(self.clients.claim()));
self.addEventListener('fetch', (e) => {
  const req = e.request;
  if (new URL(req.url).origin !== self.location.origin) return; // leave cross-origin requests alone
  if (req.cache === 'only-if-cached' && req.mode !== 'same-origin') return;
  e.respondWith(fetch(req).then((res) => {
    if (!res || res.status === 0 || res.type === 'opaque') return res;
    const h = new Headers(res.headers);
    h.set('Cross-Origin-Opener-Policy', 'same-origin');
    h.set('Cross-Origin-Embedder-Policy', 'require-corp');
    h.set('Cross-Origin-Resource-Policy', 'same-origin');
    return new Response(res.body, { status: res.status, statusText: res.statusText, headers: h });
  }));
});
