#!/usr/bin/env bash
# test_bench.sh — the benchmark harness (bench/curve.sh + report.mjs)
# in its CI smoke mode: tiny on every backend (+ small on native CPU), few
# steps. Checks the FORMAT, never a speed:
#   - curve.sh exits 0; results.jsonl: every line is JSON, one machine row,
#     every expected cell exactly once (a result, or "skipped" with a reason),
#     result rows carry every documented key with sane values (ordered
#     percentiles, tokens/s and GFLOP/s consistent with the median and with an
#     independent FLOP formula, losses finite);
#   - report.md holds the speed table and a parity summary whose count equals
#     drift flags recomputed here from results.jsonl;
#   - speedup.svg is well-formed XML with series lines, axis labels, legend;
#   - parity flags on crafted results: 0.2% drift flagged, 0.05% not;
#   - errors: unknown preset / backend exit 2 with a clear message, a missing
#     backend becomes a "skipped" row, malformed results make report.mjs exit 2.
# Needs node (report.mjs). The WASM CLI is optional unless TT_REQUIRE_WASM is
# set (then its cells must be results); WebGPU likewise with TT_REQUIRE_WEBGPU.
set -uo pipefail
src=${TT_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
native=${TINYTRAIN:-$src/build/tinytrain}
wasm=${TT_WASM_DIR:-$src/build-wasm}/tinytrain.js
curve=$src/bench/curve.sh
report=$src/bench/report.mjs

if ! command -v node >/dev/null 2>&1; then
  if [ -n "${TT_REQUIRE_WASM:-}" ]; then echo "FAIL: node not found"; exit 1; fi
  echo "SKIP: node not found (report.mjs needs it)"; exit 0
fi
[ -x "$native" ] || { echo "FAIL: native CLI not found: $native"; exit 1; }
if [ -n "${TT_REQUIRE_WASM:-}" ] && [ ! -f "$wasm" ]; then echo "FAIL: WASM CLI not built: $wasm"; exit 1; fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tinytrain-bench-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
PASS=0 FAIL=0
ok() { PASS=$((PASS + 1)); echo "ok   $1"; }
bad() { FAIL=$((FAIL + 1)); echo "FAIL $1"; }

# a fixed corpus: independent of the fortunes package and of the repository's sources
head -c 60000 "$src/data/tinyshakespeare.txt" > "$tmp/corpus.txt"

# ---------------------------------------------------------------- smoke run
TINYTRAIN=$native WASM_CLI=$wasm bash "$curve" --smoke --data "$tmp/corpus.txt" --out "$tmp/out" > "$tmp/curve.out" 2>&1
rc=$?
sed 's/^/     | /' "$tmp/curve.out" | tail -25
if [ $rc -eq 0 ]; then ok "curve.sh --smoke exits 0"; else bad "curve.sh --smoke exits 0 (got $rc)"; fi
grep -qE '^\[[0-9]+/[0-9]+\] cpu x tiny' "$tmp/curve.out" && ok "progress lines name the cell and how far" || bad "progress lines"
for f in results.jsonl report.md speedup.svg; do
  [ -s "$tmp/out/$f" ] && ok "writes $f" || bad "writes $f"
done

node --input-type=module - "$tmp/out" "$report" "${TT_REQUIRE_WASM:-}" "${TT_REQUIRE_WEBGPU:-}" > "$tmp/check.out" 2>&1 <<'EOF'
import fs from 'node:fs';
const [dir, reportPath, needWasm, needGpu] = process.argv.slice(2);
const { DRIFT_LIMIT_PCT } = await import(reportPath);
let fails = 0;
const ok = (c, m) => { console.log(`${c ? 'ok  ' : 'FAIL'} ${m}`); if (!c) fails++; };
const lines = fs.readFileSync(`${dir}/results.jsonl`, 'utf8').split('\n').filter((l) => l.trim());
let rows = [];
let parsed = true;
for (const [i, l] of lines.entries()) {
  try { rows.push(JSON.parse(l)); } catch (e) { parsed = false; console.log(`line ${i + 1}: ${l.slice(0, 120)}`); }
}
ok(parsed, `every line of results.jsonl is JSON (${lines.length} lines)`);
ok(rows.every((r) => r.schema === 'tinytrain.bench/1'), 'every row has schema tinytrain.bench/1');
const machine = rows.filter((r) => r.kind === 'machine');
ok(machine.length === 1 && machine[0].smoke === true && typeof machine[0].cpu === 'string' && machine[0].cores >= 1 &&
   typeof machine[0].commit === 'string' && /^\d{4}-\d\d-\d\dT/.test(machine[0].date), 'one machine row (cpu, cores, commit, date, smoke)');
const expected = ['cpu tiny', 'cpu small', 'cpu1 tiny', 'wasm tiny', 'wasm1 tiny', 'webgpu tiny', 'torch-cuda tiny', 'torch-cpu tiny'];
const cells = rows.filter((r) => r.kind === 'result' || r.kind === 'skipped').map((r) => `${r.label} ${r.preset}`);
ok(expected.every((c) => cells.filter((x) => x === c).length === 1) && cells.length === expected.length,
   `every smoke cell exactly once (${cells.join(', ')})`);
ok(rows.filter((r) => r.kind === 'skipped').every((r) => typeof r.reason === 'string' && r.reason.length > 5),
   'skipped rows carry a reason');
const results = rows.filter((r) => r.kind === 'result');
const mine = results.filter((r) => r.backend !== 'torch');
ok(mine.some((r) => r.label === 'cpu' && r.preset === 'tiny') && mine.some((r) => r.label === 'cpu' && r.preset === 'small'),
   'native CPU cells ran');
if (needWasm) ok(['wasm', 'wasm1'].every((l) => mine.some((r) => r.label === l)), 'WASM cells ran (TT_REQUIRE_WASM)');
if (needGpu) ok(mine.some((r) => r.label === 'webgpu'), 'WebGPU cell ran (TT_REQUIRE_WEBGPU)');
const num = (x) => typeof x === 'number' && Number.isFinite(x);
for (const r of mine) {
  const id = `${r.label} x ${r.preset}`;
  const m = r.ms_per_step || {};
  const c = r.model || {};
  const keysOk = ['label', 'preset', 'backend', 'runtime', 'device', 'date', 'commit', 'step_contains', 'data', 'isa']
    .every((k) => k === 'isa' ? typeof r.machine?.isa === 'string' : typeof r[k] === 'string' && r[k].length > 0);
  ok(keysOk && num(r.threads) && num(r.cell_wall_s) && num(r.peak_host_bytes) && 'gpu_buffer_bytes' in r &&
     num(r.machine?.cores) && typeof r.machine?.cpu === 'string', `${id}: descriptive keys`);
  ok(['median', 'mean', 'min', 'p10', 'p90', 'max'].every((k) => num(m[k]) && m[k] > 0) &&
     m.min <= m.p10 && m.p10 <= m.median && m.median <= m.p90 && m.p90 <= m.max, `${id}: ms_per_step ordered min<=p10<=median<=p90<=max`);
  ok(r.measured_steps >= 10 && r.warmup_steps === 2 && r.steps_run === r.warmup_steps + r.measured_steps,
     `${id}: >= 10 measured steps after warm-up`);
  ok(['corpus', 'create', 'upload', 'first_step', 'warmup_total'].every((k) => num(r.startup_ms?.[k]) && r.startup_ms[k] >= 0),
     `${id}: start-up split`);
  // independent FLOP count: 6 * (12 L C^2 + V C) * B T + 6 L B T^2 C
  const { layers: L, d_model: C, ctx: T, batch: B, vocab: V } = c;
  const flops = 6 * (12 * L * C * C + V * C) * B * T + 6 * L * B * T * T * C;
  const tok = B * T * (r.accum || 1);
  ok(Math.abs(r.gflop_per_step - flops / 1e9) <= 1e-6 * flops / 1e9 + 1e-6, `${id}: GFLOP/step = documented formula`);
  ok(r.tokens_per_step === tok && Math.abs(r.tokens_per_s - tok / (m.median / 1e3)) <= 1e-3 * r.tokens_per_s + 0.1 &&
     Math.abs(r.gflops - r.gflop_per_step / (m.median / 1e3)) <= 1e-3 * r.gflops + 1e-3, `${id}: tokens/s and GFLOP/s from the median`);
  ok(num(r.loss?.['1']) && num(r.loss?.['10']) && r.loss['50'] === null && num(r.final_loss),
     `${id}: loss after steps 1 and 10 (50 is null: only 12 steps ran)`);
  // memory of the backend's plan: GPU buffers hold at least params, grads, m, v (16 bytes per parameter)
  ok(num(r.backend_host_bytes) && r.backend_host_bytes > 0 &&
     (r.backend === 'webgpu' ? num(r.gpu_buffer_bytes) && r.gpu_buffer_bytes >= 16 * c.params : r.gpu_buffer_bytes === null),
     `${id}: backend_host_bytes > 0; gpu_buffer_bytes ${r.backend === 'webgpu' ? '>= 16 B/param' : 'null on a host backend'}`);
  // phase split: keys always there; on the CPU (native and WASM) three positive phases whose sum
  // fits in the median step (+10% + 0.05 ms: medians of separate phases) — a consistency check, not a speed
  const ph = r.phase_ms;
  ok('phase_ms' in r && typeof r.phase_source === 'string' && r.phase_source.length > 5 &&
     (ph === null || (['forward', 'backward', 'optimizer'].every((k) => num(ph[k]) && ph[k] >= 0) && ph.steps >= 1)),
     `${id}: phase_ms (object or null) and phase_source`);
  if (r.backend === 'cpu') {
    const sum = ph != null ? ph.forward + ph.backward + ph.optimizer : NaN;
    ok(ph != null && ph.forward > 0 && ph.backward > 0 && ph.optimizer > 0 && ph.steps === r.measured_steps &&
       // per-phase medians need not add up to the step's median when the box is busy (one
       // phase's slow steps are not another's): the sum is bounded by the step's p90
       sum <= m.p90 * 1.1 + 0.05,
       `${id}: CPU phases forward/backward/optimizer > 0, sum ${sum.toFixed(3)} <= p90 ${m.p90} (+tol; median ${m.median})`);
  }
}
// same corpus and seed everywhere
ok(new Set(mine.map((r) => `${r.data_hash}/${r.seed}`)).size === 1, 'every tinytrain cell used the same corpus and seed');

// report.md
const md = fs.readFileSync(`${dir}/report.md`, 'utf8');
ok(/^\| preset \| params \| GFLOP\/step \| Native CPU/m.test(md) && /^\| tiny \| 70K \| 0\.22 \| /m.test(md) && /^\| small \| /m.test(md),
   'report.md has the speed table with tiny and small');
ok(/^## Loss parity/m.test(md) && /^## Start-up/m.test(md) && /^## Machine and run/m.test(md), 'report.md has parity, start-up, machine sections');
ok(/^\| preset \| backend \| corpus ms .*\| backend host MB \| GPU buffers MB \|/m.test(md), 'report.md start-up table has backend host and GPU buffer columns');
ok(/^## Where a step's time goes/m.test(md) && /^\| tiny \| Native CPU[^|]*\| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|/m.test(md),
   'report.md has the forward/backward/optimizer split with the CPU cells');
const ref = Object.fromEntries(mine.filter((r) => r.label === 'cpu').map((r) => [r.preset, r]));
let compared = 0, flags = 0;
for (const r of mine) {
  if (r.label === 'cpu' || !ref[r.preset]) continue;
  compared++;
  const d = ['1', '10', '50'].map((k) => (num(r.loss[k]) && num(ref[r.preset].loss[k]) ? Math.abs(r.loss[k] / ref[r.preset].loss[k] - 1) * 100 : 0));
  if (d.some((x) => x > DRIFT_LIMIT_PCT)) flags++;
}
const mm = md.match(/Parity: (\d+) cells compared, (\d+) above 0\.1% drift/);
ok(mm && +mm[1] === compared && +mm[2] === flags, `parity summary matches drift recomputed here (${compared} compared, ${flags} flagged; report: ${mm ? mm[0] : 'none'})`);
ok((md.match(/⚠ > 0\.1%/g) || []).length === flags, 'one ⚠ mark per flagged cell');
process.exit(fails ? 1 : 0);
EOF
rc=$?
cat "$tmp/check.out" | while IFS= read -r l; do echo "$l"; done
PASS=$((PASS + $(grep -c '^ok' "$tmp/check.out"))); FAIL=$((FAIL + $(grep -c '^FAIL' "$tmp/check.out")))
[ $rc -eq 0 ] || [ "$(grep -c '^FAIL' "$tmp/check.out")" -gt 0 ] || bad "results/report checker crashed (exit $rc)"

# ---------------------------------------------------------------- SVG well-formed
svg_check() { # svg_check FILE: well-formed XML, an <svg> root, lines, axis labels, legend
  if command -v python3 >/dev/null 2>&1 && python3 -c 'import xml.etree.ElementTree' 2>/dev/null; then
    python3 - "$1" <<'EOF'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
ns = '{http://www.w3.org/2000/svg}'
assert root.tag == ns + 'svg', root.tag
texts = ' '.join(''.join(t.itertext()) for t in root.iter(ns + 'text'))
assert 'speedup' in texts and 'preset' in texts, 'axis labels'
assert any(g.get('class') == 'legend' for g in root.iter(ns + 'g')), 'legend'
series = [g for g in root.iter(ns + 'g') if g.get('class') == 'series']
assert series and all(list(g.iter(ns + 'circle')) for g in series), 'series with points'
print('svg ok: %d series' % len(series))
EOF
  else
    node - "$1" <<'EOF'
const s = require('fs').readFileSync(process.argv[2], 'utf8');
const stack = []; let m; const re = /<(\/?)([a-zA-Z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>/g; let last = 0, bad = 0;
while ((m = re.exec(s))) { if (/[<>]/.test(s.slice(last, m.index))) bad++; last = re.lastIndex;
  if (m[1]) { if (stack.pop() !== m[2]) bad++; } else if (!m[4]) stack.push(m[2]); }
if (bad || stack.length || !/^<svg /.test(s) || !/class="series"/.test(s) || !/class="legend"/.test(s) || !/speedup/.test(s)) process.exit(1);
console.log('svg ok');
EOF
  fi
}
if svg_check "$tmp/out/speedup.svg"; then ok "speedup.svg is well-formed XML with series, axis labels, legend"; else bad "speedup.svg well-formed"; fi

# ---------------------------------------------------------------- crafted parity
row() { # row LABEL PRESET L1 L10 L50 MS
  printf '{"schema":"tinytrain.bench/1","kind":"result","label":"%s","preset":"%s","model":{"params":1000},"backend":"x","threads":4,"ms_per_step":{"median":%s,"p10":%s,"p90":%s},"measured_steps":40,"warmup_steps":10,"gflop_per_step":1,"gflops":1,"tokens_per_s":1,"loss":{"1":%s,"10":%s,"50":%s},"startup_ms":{"create":1,"upload":1,"first_step":1,"warmup_total":1}}\n' \
    "$1" "$2" "$6" "$6" "$6" "$3" "$4" "$5"
}
mkdir -p "$tmp/craft"
{
  row cpu p1 5.0 4.0 3.0 10
  row webgpu p1 5.0 4.0 3.006 1      # +0.2% at step 50: flagged
  row wasm p1 5.0 4.0 3.0015 20      # +0.05%: not flagged
  row cpu1 p1 5.0 3.992 3.0 30       # -0.2% at step 10: flagged
  row wasm1 p1 5.0025 4.0 3.0 40     # +0.05% at step 1: not flagged
} > "$tmp/craft/results.jsonl"
node "$report" "$tmp/craft/results.jsonl" --out "$tmp/craft" > /dev/null 2>&1 || bad "report.mjs on crafted results"
cmd=$(cat "$tmp/craft/report.md")
grep -q 'Parity: 4 cells compared, 2 above 0.1% drift' <<< "$cmd" && ok "crafted: 2 of 4 cells flagged" || bad "crafted: parity summary"
grep -E '^\| p1 \| WebGPU' <<< "$cmd" | grep -q '⚠' && ok "crafted: +0.2% drift (step 50) flagged" || bad "crafted: +0.2% drift flagged"
grep -E '^\| p1 \| Native CPU \(1 thread\)' <<< "$cmd" | grep -q '⚠' && ok "crafted: -0.2% drift (step 10) flagged" || bad "crafted: -0.2% flagged"
grep -E '^\| p1 \| WASM SIMD \(4 threads\)' <<< "$cmd" | grep -q '| ok |' && ok "crafted: +0.05% drift not flagged" || bad "crafted: +0.05% not flagged"
grep -E '^\| p1 \| WASM SIMD \(1 thread\)' <<< "$cmd" | grep -q '| ok |' && ok "crafted: +0.05% drift at step 1 not flagged" || bad "crafted: step-1 0.05% not flagged"
grep -E '^\| p1 \| WebGPU' <<< "$cmd" | grep -q '+0.200%' && ok "crafted: drift printed as +0.200%" || bad "crafted: drift value"
# speedup columns: WebGPU 1 ms vs WASM 20 ms and CPU 10 ms
grep -E '^\| p1 \| 1K \|' <<< "$cmd" | grep -q '| 20.0× | 10.0× |' && ok "crafted: WebGPU speedup over WASM threads and native CPU" || bad "crafted: speedup columns"
svg_check "$tmp/craft/speedup.svg" > /dev/null && ok "crafted: speedup.svg well-formed" || bad "crafted: svg"

# ---------------------------------------------------------------- errors
TINYTRAIN=$native bash "$curve" --presets tiny,nonsense --out "$tmp/e1" > "$tmp/e1.out" 2>&1
[ $? -eq 2 ] && grep -q "unknown preset 'nonsense'" "$tmp/e1.out" && ok "unknown preset: exit 2, clear message" || bad "unknown preset"
TINYTRAIN=$native bash "$curve" --backends cpu,cuda --out "$tmp/e2" > "$tmp/e2.out" 2>&1
[ $? -eq 2 ] && grep -q "unknown backend 'cuda'" "$tmp/e2.out" && ok "unknown backend: exit 2, clear message" || bad "unknown backend"
TINYTRAIN=$native WASM_CLI=$tmp/none.js bash "$curve" --smoke --backends wasm --presets tiny --data "$tmp/corpus.txt" --out "$tmp/e3" > "$tmp/e3.out" 2>&1
[ $? -eq 0 ] && grep -q '"kind":"skipped","label":"wasm","preset":"tiny","reason":"WASM CLI not built' "$tmp/e3/results.jsonl" &&
  grep -q 'skipped \[1\]' "$tmp/e3/report.md" && ok "missing backend: a skipped row with its reason, not a crash" || bad "missing backend skipped"
printf '{"schema":"tinytrain.bench/1","kind":"machine"}\nnot json\n' > "$tmp/bad.jsonl"
node "$report" "$tmp/bad.jsonl" --out "$tmp/bad" > "$tmp/bad.out" 2>&1
[ $? -eq 2 ] && grep -q 'line 2 is not JSON' "$tmp/bad.out" && ok "malformed results: report.mjs exit 2 naming the line" || bad "malformed results"
"$native" bench --preset tiny --steps 9 > /dev/null 2> "$tmp/b.err"
[ $? -eq 2 ] && [ "$(wc -l < "$tmp/b.err")" -eq 1 ] && ok "bench --steps 9: one error line, exit 2" || bad "bench --steps 9"

echo "test_bench: $PASS passed, $FAIL failed"
[ $FAIL -eq 0 ]
