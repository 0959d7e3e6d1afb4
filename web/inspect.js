// inspect.js — the "Look inside" card: what the model computes for a prompt,
// from the engine's own inspection (src/engine/inspect.c through the Worker's
// `inspect` message; the same JSON as `tinytrain inspect --json`), on the
// run's backend (WASM or WebGPU). Owns: the card's controls (prompt, top-k,
// position, layer and head), the next-byte bar chart, the attention heatmap
// (a canvas with a text summary for screen readers) and the logit-lens
// table (layers x positions, top-1 byte, shaded by its probability).
// app.js only mounts it: mountInspect(ui) with the page's state object
// (ui.worker is the current Worker; the last result lands in ui.inspect).

const BYTE_NAMES = { 10: '↵', 9: '⇥', 32: '␣', 13: '␍' };
// a BPE model's tokens: the text of each id the result names (its "pieces"); null for a byte-level model
let pieces = null;
const pieceText = (b) => (pieces[b] === undefined ? `#${b}` : pieces[b].replace(/ /g, '␣').replace(/\n/g, '↵').replace(/\t/g, '⇥') || `#${b}`);
// a byte (or a BPE token) as one short visible token (printable ASCII as itself)
export function byteLabel(b) {
  if (pieces) return pieceText(b);
  if (BYTE_NAMES[b]) return BYTE_NAMES[b];
  if (b > 32 && b < 127) return String.fromCharCode(b);
  return 'x' + b.toString(16).padStart(2, '0');
}
// a byte for screen readers
function byteSpoken(b) {
  if (pieces) return `token “${pieces[b] === undefined ? b : pieces[b]}”`;
  if (b === 32) return 'space';
  if (b === 10) return 'new line';
  if (b === 9) return 'tab';
  if (b > 32 && b < 127) return `“${String.fromCharCode(b)}”`;
  return `byte ${b}`;
}
const pct = (p) => (100 * p >= 9.95 ? (100 * p).toFixed(0) : (100 * p).toFixed(1)) + '%';

function el(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (v !== false && v != null) e.setAttribute(k, v === true ? '' : v);
  }
  for (const k of kids) if (k != null) e.append(k);
  return e;
}

const TEMPLATE = `
  <div class="card-head">
    <h2 id="h-inspect">Look inside</h2>
    <span class="hint">what the model computes for a prompt: next-byte probabilities, attention, the logit lens</span>
  </div>
  <form class="inspect-form" novalidate>
    <div class="field grow"><label for="inspectPrompt">Prompt</label>
      <input id="inspectPrompt" type="text" value="The cat sat on the " autocomplete="off" spellcheck="false"
        aria-describedby="inspectHelp"></div>
    <div class="field"><label for="inspectTopK">Top-k</label>
      <input id="inspectTopK" type="number" min="1" max="16" step="1" value="5"></div>
    <div class="field"><span class="label" aria-hidden="true">&nbsp;</span>
      <button id="inspectBtn" type="submit" class="primary">Look inside</button></div>
  </form>
  <p id="inspectHelp" class="hint">Up to the model's context (at most 128 bytes). Runs on the engine that trains: WASM or WebGPU.</p>
  <div id="inspectStatus" class="status" role="status" aria-live="polite"></div>
  <div id="inspectOut" class="inspect-out" hidden>
    <div class="inspect-pos">
      <span class="label" id="inspectPosLabel">Position — choose a byte of the prompt</span>
      <div id="inspectBytes" class="inspect-bytes" role="radiogroup" aria-labelledby="inspectPosLabel"></div>
    </div>
    <div class="inspect-grid">
      <section class="inspect-next" aria-labelledby="h-inspect-next">
        <h3 id="h-inspect-next">Next byte</h3>
        <ol id="inspectBars" class="inspect-bars"></ol>
      </section>
      <section class="inspect-attn" aria-labelledby="h-inspect-attn">
        <h3 id="h-inspect-attn">Attention</h3>
        <div class="inspect-pick">
          <label>Layer <select id="inspectLayer"></select></label>
          <label>Head <select id="inspectHead"></select></label>
        </div>
        <canvas id="inspectMap" class="inspect-map" role="img"></canvas>
        <p id="inspectMapText" class="hint"></p>
      </section>
    </div>
    <section class="inspect-lens" aria-labelledby="h-inspect-lens">
      <h3 id="h-inspect-lens">Logit lens <span class="hint">— the most likely next byte read from each layer's output (shade: its probability)</span></h3>
      <div class="inspect-lens-wrap"><table id="inspectLens" class="inspect-lens-table"></table></div>
    </section>
  </div>`;

export function mountInspect(ui, root = document.getElementById('inspectCard')) {
  if (!root) return;
  root.innerHTML = TEMPLATE;
  const $ = (id) => root.querySelector('#' + id);
  const st = { r: null, pos: 0, layer: 0, head: 0, next: 1, pending: null };

  function status(text, cls) {
    $('inspectStatus').className = 'status' + (cls ? ' ' + cls : '');
    $('inspectStatus').textContent = text;
  }

  // one request at a time to the current Worker; the answer carries the id
  function request(prompt, topK) {
    const w = ui.worker;
    if (!w) return Promise.reject(new Error('the engine is not loaded yet'));
    const id = st.next++;
    return new Promise((resolve, reject) => {
      const on = (e) => {
        const m = e.data;
        if (m.id !== id || (m.type !== 'inspection' && !(m.type === 'error' && m.where === 'inspect'))) return;
        w.removeEventListener('message', on);
        if (m.type === 'inspection') resolve(m);
        else reject(new Error(m.message));
      };
      w.addEventListener('message', on);
      w.postMessage({ type: 'inspect', id, prompt, topK });
    });
  }

  async function run(ev) {
    if (ev) ev.preventDefault();
    const prompt = $('inspectPrompt').value;
    const topK = Number($('inspectTopK').value);
    if (!prompt) return status('Type a prompt to look at.', 'error');
    if (!(Number.isInteger(topK) && topK >= 1 && topK <= 16)) return status('Top-k must be a whole number from 1 to 16.', 'error');
    $('inspectBtn').disabled = true;
    status('Running the model on the prompt…');
    const t0 = performance.now();
    try {
      const m = await request(prompt, topK);
      const engine = m.variant === 'gpu' ? 'WebGPU' : 'WASM';
      ui.inspect = { result: m.result, variant: m.variant, prompt };
      show(m.result);
      status(`${m.result.bytes.length} ${m.result.pieces ? 'tokens' : 'bytes'} through ${m.result.n_layer} layers × ${m.result.n_head} heads on ${engine} ` +
        `(${((performance.now() - t0) / 1000).toFixed(1)} s).`, 'ok');
    } catch (e) {
      status(e.message, 'error');
    } finally {
      $('inspectBtn').disabled = false;
    }
  }

  function show(r) {
    st.r = r;
    pieces = r.pieces || null;
    const T = r.bytes.length;
    st.pos = T - 1;
    st.layer = Math.min(st.layer, r.n_layer - 1);
    st.head = Math.min(st.head, r.n_head - 1);
    const fill = (sel, n, name, cur) => {
      sel.replaceChildren(...Array.from({ length: n }, (_, i) => el('option', { value: i, text: `${name} ${i + 1}` })));
      sel.value = String(cur);
    };
    fill($('inspectLayer'), r.n_layer, 'layer', st.layer);
    fill($('inspectHead'), r.n_head, 'head', st.head);
    // the prompt's bytes: one radio per position (arrow keys move, as a radio group)
    const bytes = $('inspectBytes');
    bytes.replaceChildren(...r.bytes.map((b, i) => el('button', {
      type: 'button', role: 'radio', class: 'inspect-byte', 'data-pos': i,
      'aria-label': `position ${i + 1}: ${byteSpoken(b)}`, text: byteLabel(b),
    })));
    $('inspectOut').hidden = false;
    renderLens();
    select(st.pos, false);
  }

  function select(pos, focus) {
    const r = st.r;
    st.pos = Math.max(0, Math.min(r.bytes.length - 1, pos));
    root.querySelectorAll('.inspect-byte').forEach((b, i) => {
      const on = i === st.pos;
      b.setAttribute('aria-checked', on ? 'true' : 'false');
      b.tabIndex = on ? 0 : -1;
      b.classList.toggle('on', on);
      if (on && focus) b.focus();
    });
    root.querySelectorAll('#inspectLens td').forEach((td) => td.classList.toggle('on', Number(td.dataset.pos) === st.pos));
    renderBars();
    renderMap();
  }

  function renderBars() {
    const r = st.r;
    const top = r.next[st.pos];
    const after = r.bytes.slice(0, st.pos + 1).map(byteLabel).join('');
    $('inspectBars').setAttribute('aria-label', `most likely bytes after position ${st.pos + 1}`);
    $('inspectBars').replaceChildren(...top.map(([b, p]) => el('li', { 'aria-label': `${byteSpoken(b)}: ${pct(p)}` },
      el('span', { class: 'inspect-bar-byte mono', text: byteLabel(b), 'aria-hidden': 'true' }),
      el('span', { class: 'inspect-bar-track', 'aria-hidden': 'true' },
        el('span', { class: 'inspect-bar', style: `width:${Math.max(0.5, 100 * p).toFixed(2)}%` })),
      el('span', { class: 'inspect-bar-p mono', text: pct(p), 'aria-hidden': 'true' }))));
    $('h-inspect-next').textContent = `Next byte after “${after.length > 24 ? '…' + after.slice(-24) : after}”`;
  }

  function renderMap() {
    const r = st.r;
    const T = r.bytes.length;
    const map = r.attention[st.layer][st.head];
    const cv = $('inspectMap');
    const cell = Math.max(4, Math.min(26, Math.floor(440 / T)));
    const lab = cell >= 12 ? 16 : 0; // byte labels along the axes when cells are large enough
    const dpr = window.devicePixelRatio || 1;
    const size = lab + T * cell;
    cv.width = size * dpr; cv.height = size * dpr;
    cv.style.width = size + 'px'; cv.style.height = size + 'px';
    const g = cv.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.fillStyle = '#0f1629';
    g.fillRect(0, 0, size, size);
    for (let i = 0; i < T; i++)
      for (let j = 0; j <= i; j++) {
        const p = map[i][j];
        const a = Math.sqrt(p); // sqrt: small weights stay visible
        g.fillStyle = `rgb(${Math.round(20 + a * 77)},${Math.round(27 + a * 197)},${Math.round(47 + a * 146)})`;
        g.fillRect(lab + j * cell, lab + i * cell, cell - (cell > 6 ? 1 : 0), cell - (cell > 6 ? 1 : 0));
      }
    // the chosen query row
    g.strokeStyle = '#8b7cf6';
    g.lineWidth = 2;
    g.strokeRect(lab + 1, lab + st.pos * cell + 1, (st.pos + 1) * cell - 2, cell - 2);
    if (lab) {
      g.fillStyle = '#8d97b5';
      g.font = `${Math.min(12, cell - 2)}px ui-monospace, monospace`;
      g.textAlign = 'center';
      g.textBaseline = 'middle';
      r.bytes.forEach((b, i) => {
        g.fillText(byteLabel(b).slice(0, 2), lab + i * cell + cell / 2, lab / 2);
        g.fillText(byteLabel(b).slice(0, 2), lab / 2, lab + i * cell + cell / 2);
      });
    }
    const row = map[st.pos];
    const order = row.map((p, j) => [p, j]).slice(0, st.pos + 1).sort((a, b) => b[0] - a[0]).slice(0, 3);
    const text = `Layer ${st.layer + 1}, head ${st.head + 1}: position ${st.pos + 1} (${byteSpoken(r.bytes[st.pos])}) attends most to ` +
      order.map(([p, j]) => `${byteSpoken(r.bytes[j])} at ${j + 1} (${pct(p)})`).join(', ') + '.';
    cv.setAttribute('aria-label', `attention map of layer ${st.layer + 1}, head ${st.head + 1}: rows are positions, ` +
      'columns the earlier positions they read from. ' + text);
    $('inspectMapText').textContent = text;
  }

  function renderLens() {
    const r = st.r;
    const T = r.bytes.length;
    const tbl = $('inspectLens');
    const head = el('tr', {}, el('th', { scope: 'col', text: 'after →' }),
      ...r.bytes.map((b, i) => el('th', { scope: 'col', class: 'mono', 'aria-label': `position ${i + 1}: ${byteSpoken(b)}`, text: byteLabel(b) })));
    const rows = r.lens.map((layer, l) => el('tr', {},
      el('th', { scope: 'row', text: l === 0 ? 'embedding' : `layer ${l}` },),
      ...layer.map((top, t) => {
        const [b, p] = top[0];
        const td = el('td', { class: 'mono', 'data-pos': t, title: `${l === 0 ? 'embedding' : 'layer ' + l}, after position ${t + 1}: ` +
          top.map(([bb, pp]) => `${byteLabel(bb)} ${pct(pp)}`).join(', '), text: byteLabel(b) });
        td.style.background = `rgba(97, 224, 193, ${(0.08 + 0.8 * p).toFixed(3)})`;
        if (p > 0.55) td.style.color = '#0b1020';
        td.setAttribute('aria-label', `${byteSpoken(b)}, ${pct(p)}`);
        return td;
      })));
    tbl.replaceChildren(el('caption', { class: 'sr-only', text: `logit lens: the top next byte after each of the ${T} positions, read after the embedding and each layer` }),
      el('thead', {}, head), el('tbody', {}, ...rows.reverse()));
  }

  root.querySelector('form').addEventListener('submit', run);
  $('inspectLayer').addEventListener('change', (e) => { st.layer = Number(e.target.value); renderMap(); });
  $('inspectHead').addEventListener('change', (e) => { st.head = Number(e.target.value); renderMap(); });
  $('inspectBytes').addEventListener('click', (e) => {
    const b = e.target.closest('.inspect-byte');
    if (b) select(Number(b.dataset.pos), true);
  });
  $('inspectBytes').addEventListener('keydown', (e) => {
    const d = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 }[e.key];
    if (e.key === 'Home' || e.key === 'End') { e.preventDefault(); select(e.key === 'Home' ? 0 : st.r.bytes.length - 1, true); }
    else if (d) { e.preventDefault(); select(st.pos + d, true); }
  });
  $('inspectLens').addEventListener('click', (e) => {
    const td = e.target.closest('td');
    if (td) select(Number(td.dataset.pos), false);
  });
}
