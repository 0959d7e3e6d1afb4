#!/usr/bin/env node
// serve.mjs — a small static file server for the web app (web/) that sends
// the headers WebAssembly threads need: Cross-Origin-Opener-Policy
// same-origin + Cross-Origin-Embedder-Policy require-corp (the page becomes
// cross-origin isolated, so SharedArrayBuffer exists).
//   node scripts/serve.mjs [--port 8080] [--host 127.0.0.1] [--root web] [--no-isolation] [--cors]
//   npm run serve
// --no-isolation leaves the two headers out (to try the single-thread
// fallback). --cors lets pages of any origin read the files (a text host
// for the page's "From a URL", tested in CI). --port 0 picks a free port; the chosen URL is printed as
// "serving http://HOST:PORT/". Also usable from tests: import { serve }.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.wasm': 'application/wasm',
  '.txt': 'text/plain; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.safetensors': 'application/octet-stream',
  '.map': 'application/json',
};

export function serve({ root, port = 8080, host = '127.0.0.1', isolation = true, cors = false, quiet = false } = {}) {
  const base = path.resolve(root);
  const server = http.createServer((req, res) => {
    const headers = {
      'Cache-Control': 'no-cache',
      'Cross-Origin-Resource-Policy': cors ? 'cross-origin' : 'same-origin',
      'X-Content-Type-Options': 'nosniff',
    };
    if (cors) headers['Access-Control-Allow-Origin'] = '*';
    if (isolation) {
      headers['Cross-Origin-Opener-Policy'] = 'same-origin';
      headers['Cross-Origin-Embedder-Policy'] = 'require-corp';
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { ...headers, Allow: 'GET, HEAD' });
      return res.end();
    }
    let rel;
    try {
      rel = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    } catch (e) {
      res.writeHead(400, headers);
      return res.end('bad request');
    }
    let file = path.join(base, rel);
    if (!file.startsWith(base + path.sep) && file !== base) {
      res.writeHead(403, headers);
      return res.end('forbidden');
    }
    fs.stat(file, (err, st) => {
      if (!err && st.isDirectory()) {
        file = path.join(file, 'index.html');
        st = fs.existsSync(file) ? fs.statSync(file) : null;
        err = st ? null : new Error('no index');
      }
      if (err || !st.isFile()) {
        res.writeHead(404, { ...headers, 'Content-Type': 'text/plain; charset=utf-8' });
        return res.end('not found: ' + rel);
      }
      const type = TYPES[path.extname(file).toLowerCase()] || 'application/octet-stream';
      res.writeHead(200, { ...headers, 'Content-Type': type, 'Content-Length': st.size });
      if (req.method === 'HEAD') return res.end();
      fs.createReadStream(file).pipe(res);
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      const a = server.address();
      const url = `http://${host}:${a.port}/`;
      if (!quiet) console.log(`serving ${url} (${base}${isolation ? ', cross-origin isolated' : ', NOT isolated'})`);
      resolve({ server, url, port: a.port });
    });
  });
}

const isMain = process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isMain) {
  const args = process.argv.slice(2);
  const here = path.dirname(fileURLToPath(import.meta.url));
  const o = { root: path.join(here, '..', 'web'), port: Number(process.env.PORT || 8080), host: '127.0.0.1', isolation: true };
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === '--port') o.port = Number(args[++i]);
    else if (a === '--host') o.host = args[++i];
    else if (a === '--root') o.root = args[++i];
    else if (a === '--no-isolation') o.isolation = false;
    else if (a === '--cors') o.cors = true;
    else if (a === '-h' || a === '--help') {
      console.log('usage: node scripts/serve.mjs [--port N] [--host H] [--root DIR] [--no-isolation] [--cors]');
      process.exit(0);
    } else {
      console.error('serve.mjs: unknown option ' + a);
      process.exit(2);
    }
  }
  if (!fs.existsSync(path.join(o.root, 'dist', 'tinytrain_web.js')))
    console.warn('serve.mjs: web/dist is missing or incomplete — build it first: bash scripts/build-wasm.sh');
  serve(o).catch((e) => {
    console.error('serve.mjs: ' + e.message);
    process.exit(1);
  });
}
