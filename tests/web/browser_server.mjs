// browser_server.mjs — one headless Chromium shared by the browser test
// files that test_web.sh runs side by side (playwright-core's browser
// server): started once, it prints its WebSocket endpoint as one line and
// lives until it is sent SIGTERM (or its stdin closes). helpers.mjs's
// launch() connects to it when TT_BROWSER_WS names it; each test file still
// works in contexts of its own (own storage, own OPFS), so the files do not
// see each other.
import { chromium } from 'playwright-core';
import { CHROMIUM, CHROMIUM_ARGS } from './helpers.mjs';

const server = await chromium.launchServer({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
process.stdout.write(server.wsEndpoint() + '\n');
const stop = async () => { await server.close().catch(() => {}); process.exit(0); };
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
process.stdin.on('end', stop);
process.stdin.resume();
