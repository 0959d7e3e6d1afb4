// store.js — the autosave's files in the origin's private file system
// (OPFS) and the two Web Locks around them, for the training Worker
// (worker.js decides when to save and what; this file how).
//
// The autosave is the folder tinytrain/:
//   meta.json                  the commit record: the run's options and status,
//                              and the name and size of its checkpoint file
//   checkpoint-a.safetensors   the checkpoint meta.json names (or -b: the two
//   checkpoint-b.safetensors   alternate, one save to the next)
//   corpus.bin                 the run's training text
//   tok-<name>                 a BPE run's tokenizer files (vocab.json, merges.txt,
//                              tokenizer.json: meta.tokFiles names them), which
//                              the checkpoint needs beside it to be resumed
// A save writes the checkpoint into the slot meta.json does not name, then
// meta.json.tmp, then renames that over meta.json (the commit), then removes
// the old slot. A write that fails (storage full) or a tab killed at any
// point before the rename leaves meta.json and the files it names as they
// were; anything else in the folder is a leftover, removed at startup
// (cleanLeftovers). Every writer and the cleanup hold one Web Lock
// (tinytrain-opfs), so the cleanup of a second tab never removes a save in
// progress.
//
// One tab at a time owns the saved run: it holds the Web Lock OWNER_LOCK for
// as long as it lives (claimOwner). Another tab asks without waiting and is
// told the run is open elsewhere, then waits to hear when it is free
// (waitOwnerFree: the owner's tab closed). "Take over" first asks the owner
// to save its current state (askHandover / serveHandover), then steals the
// lock; the tab it is stolen from is told (onLost) and writes nothing more
// (writes check ownership inside the OPFS lock, which the new owner's
// restore takes after the steal).

const OPFS_DIR = 'tinytrain';
const SLOTS = ['checkpoint-a.safetensors', 'checkpoint-b.safetensors'];
const LEGACY_CHECKPOINT = 'checkpoint.safetensors'; // autosaves made before the slots
const OWNER_LOCK = 'tinytrain-run-owner';

const hasLocks = () => !!(self.navigator && navigator.locks);

// ---- ownership ---------------------------------------------------------------------

let owned = false;
export const isOwner = () => owned;

// Resolves true once this tab owns the saved run (steal: take it from
// another tab), false when another tab holds it. onLost runs when another
// tab steals it later.
export function claimOwner(steal, onLost) {
  if (owned) return Promise.resolve(true);
  if (!hasLocks()) { owned = true; return Promise.resolve(true); }
  return new Promise((resolve) => {
    const opt = steal ? { steal: true } : { ifAvailable: true };
    navigator.locks.request(OWNER_LOCK, opt, (lock) => {
      if (!lock) { resolve(false); return null; }
      owned = true;
      resolve(true);
      return new Promise(() => {}); // held for the Worker's life
    }).catch(() => {
      if (!owned) { resolve(false); return; }
      owned = false; // stolen by another tab
      onLost();
    });
  });
}

// Waits (queued, for the Worker's life) until no tab holds OWNER_LOCK — the
// tab that held it closed — then lets it go at once and calls onFree. One
// wait at a time; a tab that does not own the saved run waits, so that it can
// say when the run is free.
let waiting = false;
export function waitOwnerFree(onFree) {
  if (waiting || owned || !hasLocks()) return;
  waiting = true;
  navigator.locks.request(OWNER_LOCK, () => {
    waiting = false;
    if (!owned) onFree();
    return null; // released: the page claims it again (claimOwner) if it wants the run
  }).catch(() => { waiting = false; });
}

// The hand-over between tabs, before a takeover: the tab that takes the run
// asks (askHandover) on a BroadcastChannel; the owner pauses, saves its
// current state and answers with its step (serveHandover's onAsk), so the
// new tab resumes from the latest step, not from the last timed autosave.
const HANDOVER = 'tinytrain-handover';
export function serveHandover(onAsk) {
  if (typeof BroadcastChannel !== 'function' || !hasLocks()) return; // no owner without Web Locks (the engine under Node)
  const ch = new BroadcastChannel(HANDOVER);
  ch.onmessage = async (e) => {
    if (!e.data || e.data.type !== 'ask' || !owned) return;
    let step = null;
    try { step = await onAsk(); } catch (err) { /* answered without a step: the taker uses the last autosave */ }
    ch.postMessage({ type: 'done', id: e.data.id, step });
  };
}
// Resolves with the owner's answer ({step}) or null after timeoutMs (no
// owner, or one that cannot answer: a frozen tab).
export function askHandover(timeoutMs) {
  if (typeof BroadcastChannel !== 'function') return Promise.resolve(null);
  const ch = new BroadcastChannel(HANDOVER);
  const id = Math.random().toString(36).slice(2);
  return new Promise((resolve) => {
    const end = (v) => { clearTimeout(timer); ch.close(); resolve(v); };
    const timer = setTimeout(() => end(null), timeoutMs);
    ch.onmessage = (e) => { if (e.data && e.data.type === 'done' && e.data.id === id) end({ step: e.data.step }); };
    ch.postMessage({ type: 'ask', id });
  });
}

// ---- files ---------------------------------------------------------------------------

async function opfsDir() {
  if (!self.navigator || !navigator.storage || !navigator.storage.getDirectory) return null;
  const root = await navigator.storage.getDirectory();
  return root.getDirectoryHandle(OPFS_DIR, { create: true });
}

function opfsLocked(fn) {
  return hasLocks() ? navigator.locks.request('tinytrain-opfs', fn) : fn();
}

export const isStorageFull = (e) => !!e && e.name === 'QuotaExceededError';

// Writes bytes as the whole content of dir/name. A sync access handle that
// runs out of quota may store part of the bytes and return the error code
// (-8, no space) as an unsigned byte count instead of throwing (Chromium):
// every count is checked, and a short write throws QuotaExceededError like
// the other write paths.
async function writeBytes(dir, name, bytes) {
  const fh = await dir.getFileHandle(name, { create: true });
  if (!fh.createSyncAccessHandle) {
    const w = await fh.createWritable(); // the file changes only at close
    try {
      await w.write(bytes);
    } catch (e) {
      await w.abort().catch(() => {});
      throw e;
    }
    await w.close();
    return;
  }
  const h = await fh.createSyncAccessHandle();
  try {
    h.truncate(0);
    let off = 0;
    while (off < bytes.length) {
      const k = h.write(bytes.subarray(off), { at: off });
      if (!(k > 0 && k <= bytes.length - off)) {
        const code = k > bytes.length - off ? k | 0 : 0;
        if (code === 0 || code === -8)
          throw new DOMException(`the browser stored ${off} of the ${bytes.length} bytes of ${name}`, 'QuotaExceededError');
        throw new Error(`could not write ${name} (error ${code})`);
      }
      off += k;
    }
    h.flush();
  } finally { h.close(); }
}

async function renameOver(dir, from, to) {
  const fh = await dir.getFileHandle(from);
  if (fh.move) {
    await fh.move(dir, to);
    return;
  }
  // no rename: a writable stream replaces the file's content only at close
  const w = await (await dir.getFileHandle(to, { create: true })).createWritable();
  await w.write(await (await fh.getFile()).arrayBuffer());
  await w.close();
  await dir.removeEntry(from);
}

// Replaces dir/name as a whole: the bytes go to name.tmp, renamed over name.
async function writeReplace(dir, name, bytes) {
  await writeBytes(dir, name + '.tmp', bytes);
  await renameOver(dir, name + '.tmp', name);
}

async function removeQuiet(dir, name) {
  try { await dir.removeEntry(name); } catch (e) { /* not there */ }
}

async function readFile(dir, name) {
  try {
    const fh = await dir.getFileHandle(name);
    return new Uint8Array(await (await fh.getFile()).arrayBuffer());
  } catch (e) { return null; }
}

// The committed autosave's metadata; null when there is none. Throws when
// meta.json cannot be parsed.
async function readMeta(dir) {
  const b = await readFile(dir, 'meta.json');
  return b ? JSON.parse(new TextDecoder().decode(b)) : null;
}
const metaCheckpoint = (meta) => meta.checkpoint || LEGACY_CHECKPOINT;

// Removes the files no committed autosave names: temporary files, the
// checkpoint slot of a save that failed or was cut off by a closed or
// crashed tab, all of them when nothing was committed. An unreadable
// meta.json leaves the folder as it is.
export async function cleanLeftovers() {
  const dir = await opfsDir();
  if (!dir) return;
  await opfsLocked(async () => {
    let meta;
    try { meta = await readMeta(dir); } catch (e) { return; }
    const keep = new Set(meta ? ['meta.json', 'corpus.bin', metaCheckpoint(meta), ...(meta.tokFiles || []).map((n) => 'tok-' + n)] : []);
    const gone = [];
    for await (const [name, h] of dir.entries()) if (h.kind === 'file' && !keep.has(name)) gone.push(name);
    for (const name of gone) await removeQuiet(dir, name);
  });
}

// One save, committed by the rename of meta.json: ckpt (bytes) into the free
// slot, corpus (bytes, or null when corpus.bin holds it already), then meta
// (an object; the slot's name and size are added). On failure, what it wrote
// is removed again (the space it took is given back) and the error thrown.
async function commitSave(dir, { ckpt, corpus, tok, meta }) {
  const old = await readMeta(dir).catch(() => null);
  const oldCkpt = old ? metaCheckpoint(old) : null;
  const slot = oldCkpt === SLOTS[0] ? SLOTS[1] : SLOTS[0];
  try {
    if (corpus) await writeReplace(dir, 'corpus.bin', corpus);
    if (tok) for (const [name, bytes] of Object.entries(tok)) await writeReplace(dir, 'tok-' + name, bytes);
    await writeBytes(dir, slot, ckpt);
    const m = { ...meta, checkpoint: slot, checkpointBytes: ckpt.length };
    await writeReplace(dir, 'meta.json', new TextEncoder().encode(JSON.stringify(m)));
  } catch (e) {
    for (const name of [slot, 'meta.json.tmp', 'corpus.bin.tmp']) await removeQuiet(dir, name);
    throw e;
  }
  if (oldCkpt && oldCkpt !== slot) await removeQuiet(dir, oldCkpt);
}

// Writes a save (commitSave) under the OPFS lock, unless wanted() — asked
// again inside the lock, after waiting for it — says no or this tab does not
// own the saved run. True when it was written.
export async function save(wanted, snap) {
  return opfsLocked(async () => {
    if (!owned || !wanted()) return false;
    const dir = await opfsDir();
    if (!dir) return false;
    await commitSave(dir, snap);
    return true;
  });
}

// The committed autosave: {meta, corpus, ckpt, tok}, {message} when it cannot be
// used, or null when there is none.
export async function readSaved() {
  const dir = await opfsDir();
  if (!dir) return null;
  return opfsLocked(async () => {
    let meta;
    try { meta = await readMeta(dir); } catch (e) { return { message: 'saved run metadata is corrupt' }; }
    if (!meta) return null;
    const corpus = await readFile(dir, 'corpus.bin');
    const ckpt = await readFile(dir, metaCheckpoint(meta));
    const tok = {};
    for (const name of meta.tokFiles || []) tok[name] = await readFile(dir, 'tok-' + name);
    if (!corpus || !ckpt || Object.values(tok).some((b) => !b)) return { message: 'saved run is incomplete' };
    if (meta.checkpointBytes != null && ckpt.length !== meta.checkpointBytes)
      return { message: `saved checkpoint has ${ckpt.length} of its ${meta.checkpointBytes} bytes` };
    return { meta, corpus, ckpt, tok };
  });
}

// Removes the saved run; true when there was one.
export async function removeSaved() {
  let removed = false;
  try {
    const root = await navigator.storage.getDirectory();
    await opfsLocked(async () => {
      try {
        const dir = await root.getDirectoryHandle(OPFS_DIR);
        removed = !!(await readFile(dir, 'meta.json'));
      } catch (e) { return; }
      await root.removeEntry(OPFS_DIR, { recursive: true });
    });
  } catch (e) { /* nothing saved */ }
  return removed;
}
