#!/usr/bin/env python3
"""make_gpt2_fixture.py OUT_DIR — writes tests/data/gpt2_tiny: a GPT-2 with
GPT-2's vocabulary (50257) and a tiny body, random weights from transformers
(GPT2LMHeadModel(GPT2Config(...)), seed 1234), saved as transformers saves it
(config.json, model.safetensors in float16), and reference.json: what
transformers computes from exactly those float16 weights in float32.

reference.json:
  prompts     [[id, ...], ...]     token ids (GPT-2 ids; any, no tokenizer needed)
  columns     [v, ...]             the vocabulary columns whose logits are kept
  logits      [prompt][pos][col]   logits at those columns, every position
  lse         [prompt][pos]        log-sum-exp over the whole vocabulary
  loss        [prompt]             mean next-token cross-entropy (nats) over the prompt
  greedy      [prompt][k]          20 greedy tokens after each prompt (full context)
Run on a host with torch + transformers (the GPU host); the folder is checked in."""
import json, os, sys

import torch
from transformers import GPT2Config, GPT2LMHeadModel

out = sys.argv[1]
torch.manual_seed(1234)
cfg = GPT2Config(vocab_size=50257, n_positions=64, n_embd=16, n_layer=2, n_head=2,
                 activation_function="gelu_new", layer_norm_epsilon=1e-5, initializer_range=0.3,
                 resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
m = GPT2LMHeadModel(cfg).eval()
# biases and LayerNorm parameters are zero/one at init: make them count
with torch.no_grad():
    for n, p in m.named_parameters():
        if p.dim() == 1:
            p.add_(torch.randn_like(p) * 0.2)
m = m.half()
os.makedirs(out, exist_ok=True)
m.save_pretrained(out, safe_serialization=True)
m = m.float()  # the same float16 values, computed in float32

g = torch.Generator().manual_seed(7)
prompts = [[464, 2068, 7586, 21831, 18045, 625, 262, 16931, 3290, 13],
           [50256, 15496, 11, 995, 0],
           torch.randint(0, 50257, (40,), generator=g).tolist(),
           [50256]]
columns = sorted(set(torch.randint(0, 50257, (24,), generator=g).tolist()) | {0, 13, 50255, 50256})
ref = {"prompts": prompts, "columns": columns, "logits": [], "lse": [], "loss": [], "greedy": []}
with torch.no_grad():
    for p in prompts:
        x = torch.tensor([p])
        lg = m(x).logits[0].double()
        ref["logits"].append(lg[:, columns].tolist())
        ref["lse"].append(torch.logsumexp(lg, dim=-1).tolist())
        if len(p) > 1:
            ref["loss"].append(torch.nn.functional.cross_entropy(lg[:-1], x[0, 1:]).item())
        else:
            ref["loss"].append(None)
        seq = list(p)
        for _ in range(20):
            seq.append(int(m(torch.tensor([seq[-64:]])).logits[0, -1].argmax()))
        ref["greedy"].append(seq[len(p):])
with open(os.path.join(out, "reference.json"), "w") as f:
    json.dump(ref, f)
print("wrote", out, "params", sum(p.numel() for p in m.parameters()))
