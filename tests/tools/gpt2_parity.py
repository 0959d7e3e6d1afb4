#!/usr/bin/env python3
"""gpt2_parity.py — tinytrain against transformers on Hugging Face GPT-2
models (for a host with torch and transformers; bench/hf/gpt2_parity.sh runs
it). No download: the models are GPT2LMHeadModel(GPT2Config(...)) with random
weights (torch.manual_seed), saved with save_pretrained (model.safetensors).

  gpt2_parity.py --out DIR [--tinytrain BIN] [--models gpt2,distilgpt2] [--backends cpu,webgpu]
                 [--tokens 100] [--tol 1e-4]

For each model (gpt2: GPT2Config(), 124M; distilgpt2: the same with
n_layer 6) and four prompts of token ids (lengths 1, 8, 33, 100, drawn from
a fixed seed):
  logits   `tinytrain sample --ckpt DIR --ids P --logits --tokens 0 --backend B`
           against transformers' logits of the model in float64 (and, for
           reference, float32): max |diff| <= tol over every position;
  greedy   `tinytrain sample --ckpt DIR --ids P --tokens N --temperature 0`
           (the CPU sampler, KV cache) and `--backend webgpu` (the full
           forward per token) against transformers' greedy continuation
           (float64, KV cache): identical ids. A divergence where
           transformers' top-2 margin is below 10*tol is reported as a
           near-tie (the float32 forward may pick either) and does not fail.
Prints one line per check and a JSON summary (DIR/summary.json); exit 0 iff
every check passed.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import torch
from transformers import GPT2Config, GPT2LMHeadModel


def run(cmd):
    t0 = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise RuntimeError('%s failed (%d): %s' % (' '.join(cmd), p.returncode, p.stderr.strip()[-2000:]))
    return json.loads(p.stdout), time.time() - t0


def torch_greedy(m, ids, n):
    """greedy continuation and the top-2 margin of each step (float64, KV cache)"""
    out, margins = [], []
    with torch.no_grad():
        r = m(torch.tensor([ids]), use_cache=True)
        past = r.past_key_values
        lg = r.logits[0, -1]
        for i in range(n):
            top = torch.topk(lg, 2)
            nxt = int(top.indices[0])
            out.append(nxt)
            margins.append(float(top.values[0] - top.values[1]))
            if i + 1 == n:
                break
            r = m(torch.tensor([[nxt]]), past_key_values=past, use_cache=True)
            past = r.past_key_values
            lg = r.logits[0, -1]
    return out, margins


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--out', required=True)
    ap.add_argument('--tinytrain', default=os.environ.get('TINYTRAIN', 'build/tinytrain'))
    ap.add_argument('--models', default='gpt2,distilgpt2')
    ap.add_argument('--backends', default='cpu,webgpu')
    ap.add_argument('--tokens', type=int, default=100)
    ap.add_argument('--tol', type=float, default=1e-4)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    shapes = {'gpt2': {}, 'distilgpt2': {'n_layer': 6}}
    g = torch.Generator().manual_seed(1234)
    summary, ok_all = {'checks': []}, True

    def report(name, ok, detail):
        nonlocal ok_all
        ok_all &= ok
        summary['checks'].append({'check': name, 'ok': ok, **detail})
        print('%s %s %s' % ('ok  ' if ok else 'FAIL', name, json.dumps(detail)), flush=True)

    for mi, name in enumerate(a.models.split(',')):
        torch.manual_seed(mi)
        cfg = GPT2Config(**shapes[name])
        m32 = GPT2LMHeadModel(cfg).eval()
        d = os.path.join(a.out, name)
        m32.save_pretrained(d, safe_serialization=True)
        m64 = GPT2LMHeadModel(cfg).eval()
        m64.load_state_dict(m32.state_dict())
        m64 = m64.double()
        V = cfg.vocab_size
        prompts = [torch.randint(0, V, (n,), generator=g).tolist() for n in (1, 8, 33, 100)]
        for pi, p in enumerate(prompts):
            ids = ','.join(map(str, p))
            with torch.no_grad():
                ref64 = m64(torch.tensor([p])).logits[0]
                ref32 = m32(torch.tensor([p])).logits[0].double()
            t32 = float((ref32 - ref64).abs().max())
            for be in a.backends.split(','):
                try:
                    j, secs = run([a.tinytrain, 'sample', '--ckpt', d, '--ids', ids, '--logits', '--tokens', '0',
                                   '--backend', be])
                    got = torch.tensor(j['logits'], dtype=torch.float64)
                    diff = float((got - ref64).abs().max())
                    report('%s prompt %d (%d ids) logits on %s' % (name, pi, len(p), be), diff <= a.tol,
                           {'max_abs': diff, 'torch_fp32_max_abs': t32, 'device': j.get('device'), 'seconds': round(secs, 2)})
                except Exception as e:  # noqa: BLE001 - one line per failed check
                    report('%s prompt %d logits on %s' % (name, pi, be), False, {'error': str(e)[:600]})
            want, margins = torch_greedy(m64, p, a.tokens)
            runs = [('cpu sampler', ['--temperature', '0'])]
            if 'webgpu' in a.backends.split(','):
                runs.append(('webgpu', ['--backend', 'webgpu']))
            for label, extra in runs:
                try:
                    j, secs = run([a.tinytrain, 'sample', '--ckpt', d, '--ids', ids, '--tokens', str(a.tokens)] + extra)
                    got = j['generated']
                    first = next((i for i, (x, y) in enumerate(zip(got, want)) if x != y), None)
                    if first is None and len(got) != len(want):
                        first = min(len(got), len(want))
                    near_tie = first is not None and first < len(margins) and margins[first] < 10 * a.tol
                    report('%s prompt %d greedy %d tokens, %s' % (name, pi, a.tokens, label), first is None or near_tie,
                           {'identical': first is None, 'first_difference': first,
                            'torch_margin_there': margins[first] if first is not None and first < len(margins) else None,
                            'seconds': round(secs, 2)})
                except Exception as e:  # noqa: BLE001
                    report('%s prompt %d greedy, %s' % (name, pi, label), False, {'error': str(e)[:600]})
    summary['ok'] = ok_all
    json.dump(summary, open(os.path.join(a.out, 'summary.json'), 'w'), indent=1)
    print('ALL OK' if ok_all else 'SOME CHECKS FAILED')
    sys.exit(0 if ok_all else 1)


if __name__ == '__main__':
    main()
