#!/usr/bin/env python3
"""hf_gpt2_folder.py — Hugging Face GPT-2 folders and their logits, with the
Python standard library only (no torch, no numpy): the oracle of
tests/cli/test_hf_gpt2.sh.

  hf_gpt2_folder.py make DIR --vocab V --layers L --embd C --heads H --positions P
                         [--act gelu_new|gelu|gelu_pytorch_tanh] [--eps E] [--dtype F32|F16|BF16]
                         [--seed S] [--no-prefix] [--lm-head] [--buffers]
      writes DIR/config.json and DIR/model.safetensors: a GPT2LMHeadModel of
      random weights (seed S; biases and LayerNorm parameters random too, so
      no path is trivial) stored as DTYPE, named as transformers names them
      ("transformer." prefix unless --no-prefix; --lm-head adds lm_head.weight
      = wte; --buffers adds the attn.bias / attn.masked_bias buffers).
  hf_gpt2_folder.py convert SRC DST --dtype F16|BF16
      DST = SRC with every tensor stored as DTYPE (round to nearest even).
  hf_gpt2_folder.py logits DIR IDS
      prints the logits (one JSON list per position) of token ids IDS
      ("1,2,3") by a float64 forward of GPT-2 (transformers' GPT2LMHeadModel
      math: pre-LayerNorm blocks, Conv1D weights [in, out], c_attn = [q|k|v],
      causal attention scaled by 1/sqrt(head size), the config's activation
      and layer_norm_epsilon, tied head) from the stored values.
"""
import json
import math
import random
import struct
import sys


# ---------------- safetensors ----------------

def read_st(path):
    b = open(path, 'rb').read()
    n = struct.unpack('<Q', b[:8])[0]
    h = json.loads(b[8:8 + n])
    data = b[8 + n:]
    out = {}
    for k, v in h.items():
        if k == '__metadata__':
            continue
        s, e = v['data_offsets']
        raw = data[s:e]
        dt = v['dtype']
        if dt == 'F32':
            vals = list(struct.unpack('<%df' % (len(raw) // 4), raw))
        elif dt == 'F16':
            vals = list(struct.unpack('<%de' % (len(raw) // 2), raw))
        elif dt == 'BF16':
            vals = [struct.unpack('<f', struct.pack('<I', x << 16))[0] for x in struct.unpack('<%dH' % (len(raw) // 2), raw)]
        else:
            raise SystemExit('unsupported dtype ' + dt)
        out[k] = (v['shape'], vals, dt)
    return out


def to_bf16_bits(x):
    u = struct.unpack('<I', struct.pack('<f', x))[0]
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF


def pack(vals, dt):
    if dt == 'F32':
        return struct.pack('<%df' % len(vals), *vals)
    if dt == 'F16':
        return struct.pack('<%de' % len(vals), *vals)
    if dt == 'BF16':
        return struct.pack('<%dH' % len(vals), *[to_bf16_bits(v) for v in vals])
    raise SystemExit('unsupported dtype ' + dt)


def write_st(path, tensors):
    """tensors: list of (name, shape, values, dtype)"""
    header, blobs, off = {}, [], 0
    for name, shape, vals, dt in tensors:
        blob = pack(vals, dt)
        header[name] = {'dtype': dt, 'shape': shape, 'data_offsets': [off, off + len(blob)]}
        blobs.append(blob)
        off += len(blob)
    header['__metadata__'] = {'format': 'pt'}
    hj = json.dumps(header).encode()
    hj += b' ' * ((8 - len(hj) % 8) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(hj)) + hj + b''.join(blobs))


# ---------------- make / convert ----------------

def make(argv):
    a = {'--vocab': 1003, '--layers': 2, '--embd': 24, '--heads': 4, '--positions': 40, '--act': 'gelu_new',
         '--eps': 1e-5, '--dtype': 'F32', '--seed': 1}
    flags = set()
    d = argv[0]
    i = 1
    while i < len(argv):
        if argv[i] in ('--no-prefix', '--lm-head', '--buffers'):
            flags.add(argv[i])
            i += 1
        else:
            a[argv[i]] = argv[i + 1]
            i += 2
    V, L, C, H, P = (int(a[k]) for k in ('--vocab', '--layers', '--embd', '--heads', '--positions'))
    eps, dt = float(a['--eps']), a['--dtype']
    rng = random.Random(int(a['--seed']))
    cfg = {'architectures': ['GPT2LMHeadModel'], 'model_type': 'gpt2', 'vocab_size': V, 'n_positions': P, 'n_ctx': P,
           'n_embd': C, 'n_layer': L, 'n_head': H, 'n_inner': None, 'activation_function': a['--act'],
           'layer_norm_epsilon': eps, 'resid_pdrop': 0.1, 'embd_pdrop': 0.1, 'attn_pdrop': 0.1,
           'initializer_range': 0.02, 'bos_token_id': V - 1, 'eos_token_id': V - 1, 'tie_word_embeddings': True,
           'scale_attn_weights': True, 'use_cache': True, 'torch_dtype': {'F32': 'float32', 'F16': 'float16',
                                                                        'BF16': 'bfloat16'}[dt]}
    json.dump(cfg, open(d + '/config.json', 'w'), indent=2)
    pre = '' if '--no-prefix' in flags else 'transformer.'

    def rnd(n, s, mean=0.0):
        return [mean + rng.gauss(0.0, s) for _ in range(n)]

    t = [(pre + 'wte.weight', [V, C], rnd(V * C, 0.3), dt), (pre + 'wpe.weight', [P, C], rnd(P * C, 0.1), dt)]
    for l in range(L):
        h = '%sh.%d.' % (pre, l)
        t += [(h + 'ln_1.weight', [C], rnd(C, 0.1, 1.0), dt), (h + 'ln_1.bias', [C], rnd(C, 0.1), dt),
              (h + 'attn.c_attn.weight', [C, 3 * C], rnd(3 * C * C, 0.3), dt),
              (h + 'attn.c_attn.bias', [3 * C], rnd(3 * C, 0.1), dt),
              (h + 'attn.c_proj.weight', [C, C], rnd(C * C, 0.2), dt), (h + 'attn.c_proj.bias', [C], rnd(C, 0.1), dt),
              (h + 'ln_2.weight', [C], rnd(C, 0.1, 1.0), dt), (h + 'ln_2.bias', [C], rnd(C, 0.1), dt),
              (h + 'mlp.c_fc.weight', [C, 4 * C], rnd(4 * C * C, 0.2), dt),
              (h + 'mlp.c_fc.bias', [4 * C], rnd(4 * C, 0.1), dt),
              (h + 'mlp.c_proj.weight', [4 * C, C], rnd(4 * C * C, 0.1), dt),
              (h + 'mlp.c_proj.bias', [C], rnd(C, 0.1), dt)]
        if '--buffers' in flags:
            t += [(h + 'attn.bias', [1, 1, P, P], [1.0 if j <= i else 0.0 for i in range(P) for j in range(P)], dt),
                  (h + 'attn.masked_bias', [], [-1e4], dt)]
    t += [(pre + 'ln_f.weight', [C], rnd(C, 0.1, 1.0), dt), (pre + 'ln_f.bias', [C], rnd(C, 0.1), dt)]
    if '--lm-head' in flags:
        t.append(('lm_head.weight', [V, C], t[0][2], dt))
    write_st(d + '/model.safetensors', t)


def convert(argv):
    src, dst, dt = argv[0], argv[1], argv[3]
    import shutil
    shutil.copy(src + '/config.json', dst + '/config.json')
    ts = read_st(src + '/model.safetensors')
    write_st(dst + '/model.safetensors', [(k, s, v, dt) for k, (s, v, _) in ts.items()])


# ---------------- the float64 forward ----------------

def layernorm(x, w, b, eps):
    m = sum(x) / len(x)
    v = sum((a - m) ** 2 for a in x) / len(x)
    r = 1.0 / math.sqrt(v + eps)
    return [(a - m) * r * g + c for a, g, c in zip(x, w, b)]


def linear(x, w, b, n_out):
    """x (n_in) . w (n_in, n_out) + b"""
    out = list(b)
    for i, xi in enumerate(x):
        row = w[i * n_out:(i + 1) * n_out]
        for j in range(n_out):
            out[j] += xi * row[j]
    return out


def gelu(x, act):
    if act == 'gelu':
        return 0.5 * x * (1.0 + math.erf(x / math.sqrt(2.0)))
    return 0.5 * x * (1.0 + math.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def logits(argv):
    d, ids = argv[0], [int(x) for x in argv[1].split(',')]
    cfg = json.load(open(d + '/config.json'))
    ts = read_st(d + '/model.safetensors')
    pre = 'transformer.' if 'transformer.wte.weight' in ts else ''
    W = {k[len(pre):] if k.startswith(pre) else k: v[1] for k, v in ts.items()}
    C, H, L, V = cfg['n_embd'], cfg['n_head'], cfg['n_layer'], cfg['vocab_size']
    eps, act, hs = cfg.get('layer_norm_epsilon', 1e-5), cfg.get('activation_function', 'gelu_new'), C // H
    T = len(ids)
    x = [[W['wte.weight'][i * C + c] + W['wpe.weight'][t * C + c] for c in range(C)] for t, i in enumerate(ids)]
    for l in range(L):
        p = 'h.%d.' % l
        hln = [layernorm(r, W[p + 'ln_1.weight'], W[p + 'ln_1.bias'], eps) for r in x]
        qkv = [linear(r, W[p + 'attn.c_attn.weight'], W[p + 'attn.c_attn.bias'], 3 * C) for r in hln]
        y = [[0.0] * C for _ in range(T)]
        for h in range(H):
            for i in range(T):
                q = qkv[i][h * hs:(h + 1) * hs]
                s = [sum(a * b for a, b in zip(q, qkv[j][C + h * hs:C + (h + 1) * hs])) / math.sqrt(hs) for j in range(i + 1)]
                m = max(s)
                e = [math.exp(a - m) for a in s]
                z = sum(e)
                for j in range(i + 1):
                    v = qkv[j][2 * C + h * hs:2 * C + (h + 1) * hs]
                    for c in range(hs):
                        y[i][h * hs + c] += e[j] / z * v[c]
        o = [linear(r, W[p + 'attn.c_proj.weight'], W[p + 'attn.c_proj.bias'], C) for r in y]
        x = [[a + b for a, b in zip(r, s)] for r, s in zip(x, o)]
        h2 = [layernorm(r, W[p + 'ln_2.weight'], W[p + 'ln_2.bias'], eps) for r in x]
        f = [[gelu(a, act) for a in linear(r, W[p + 'mlp.c_fc.weight'], W[p + 'mlp.c_fc.bias'], 4 * C)] for r in h2]
        o = [linear(r, W[p + 'mlp.c_proj.weight'], W[p + 'mlp.c_proj.bias'], C) for r in f]
        x = [[a + b for a, b in zip(r, s)] for r, s in zip(x, o)]
    wte = W['wte.weight']
    out = []
    for r in x:
        xf = layernorm(r, W['ln_f.weight'], W['ln_f.bias'], eps)
        out.append([sum(a * b for a, b in zip(xf, wte[v * C:(v + 1) * C])) for v in range(V)])
    json.dump(out, sys.stdout)
    print()


if __name__ == '__main__':
    {'make': make, 'convert': convert, 'logits': logits}[sys.argv[1]](sys.argv[2:])
