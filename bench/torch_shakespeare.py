#!/usr/bin/env python3
"""torch_shakespeare.py — the PyTorch reference of recipes/shakespeare_char.json:
nanoGPT's shakespeare_char recipe on tinytrain's model (pre-LN GPT-2 blocks,
learned positions, tied head, exact GELU, byte vocabulary 256, biases, LayerNorm
eps 1e-5), nanoGPT's initialisation (N(0, 0.02), residual projections
/ sqrt(2 L), zero biases). Bytes as tokens, 90/10 split; 6 layers, d 384,
6 heads, ctx 256, batch 64; lr 1e-3 cosine to 1e-4 after 100 warm-up steps;
AdamW (0.9, 0.99), weight decay 0.1 on matrices, clip 1.0; dropout on the
embedding sum, the attention probabilities and both residual branches.

Every --eval-every steps the model is scored two ways, so the two engines can
be compared on one yardstick:
  val      nanoGPT's estimate: 50 batches of random windows of the split;
  val_tt   tinytrain's: the same --eval-batches fixed windows its trainer
           uses (src/train/data.c tt_batch_val: window j of the split starts
           at n_train + mulhi64(j * 0x9E3779B97F4A7C15, n_val - ctx)).

    python3 bench/torch_shakespeare.py data/tinyshakespeare.txt --mode bf16c --seed 1 --stop-after 2500

Prints one JSON line per eval and a summary line. Needs torch and a CUDA GPU
(the GPU host). TF32 is off: fp32 means fp32."""
import argparse
import json
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("data")
ap.add_argument("--mode", choices=["fp32", "bf16c"], default="fp32", help="fp32 eager, or bf16 autocast + torch.compile")
ap.add_argument("--dropout", type=float, default=0.2)
ap.add_argument("--steps", type=int, default=5000, help="length of the schedule")
ap.add_argument("--stop-after", type=int, default=0, help="stop after this many steps (0: the whole schedule)")
ap.add_argument("--seed", type=int, default=1337)
ap.add_argument("--eval-every", type=int, default=250)
ap.add_argument("--eval-batches", type=int, default=20, help="tinytrain's fixed validation batches (the recipe's 20)")
a = ap.parse_args()

L, D, H, T, B = 6, 384, 6, 256, 64
raw = open(a.data, "rb").read()
data = torch.tensor(list(raw), dtype=torch.long)
n_train = len(raw) // 10 * 9 + (len(raw) % 10) * 9 // 10  # floor(0.9 n), as tinytrain splits
tr, va = data[:n_train].cuda(), data[n_train:].cuda()
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
p_drop = a.dropout


class Block(nn.Module):
    def __init__(s):
        super().__init__()
        s.ln1 = nn.LayerNorm(D); s.qkv = nn.Linear(D, 3 * D); s.o = nn.Linear(D, D)
        s.ln2 = nn.LayerNorm(D); s.fc = nn.Linear(D, 4 * D); s.proj = nn.Linear(4 * D, D); s.drop = nn.Dropout(p_drop)

    def forward(s, x):
        b, t, c = x.shape
        q, k, v = s.qkv(s.ln1(x)).split(D, 2)
        q, k, v = [z.view(b, t, H, D // H).transpose(1, 2) for z in (q, k, v)]
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=p_drop if s.training else 0.0)
        x = x + s.drop(s.o(y.transpose(1, 2).reshape(b, t, c)))
        return x + s.drop(s.proj(F.gelu(s.fc(s.ln2(x)))))


class GPT(nn.Module):
    def __init__(s):
        super().__init__()
        s.tok = nn.Embedding(256, D); s.pos = nn.Embedding(T, D); s.drop = nn.Dropout(p_drop)
        s.blocks = nn.ModuleList(Block() for _ in range(L)); s.lnf = nn.LayerNorm(D)

    def forward(s, idx, tgt):
        x = s.drop(s.tok(idx) + s.pos(torch.arange(idx.shape[1], device=idx.device)))
        for blk in s.blocks:
            x = blk(x)
        return F.cross_entropy((s.lnf(x) @ s.tok.weight.t()).view(-1, 256), tgt.view(-1))


torch.manual_seed(a.seed)
m = GPT().cuda()
for name, p in m.named_parameters():
    if p.dim() >= 2:
        torch.nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * L) if name.endswith(("o.weight", "proj.weight")) else 0.02)
    elif name.endswith("bias"):
        torch.nn.init.zeros_(p)
decay = [p for p in m.parameters() if p.dim() >= 2]
nodecay = [p for p in m.parameters() if p.dim() < 2]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": nodecay, "weight_decay": 0.0}],
                        lr=1e-3, betas=(0.9, 0.99), eps=1e-8, fused=True)
fwd = torch.compile(m) if a.mode == "bf16c" else m
amp = torch.autocast("cuda", dtype=torch.bfloat16) if a.mode == "bf16c" else torch.autocast("cuda", enabled=False)


def random_batch(src):
    ix = torch.randint(0, len(src) - T - 1, (B,), device="cuda")
    off = ix[:, None] + torch.arange(T, device="cuda")
    return src[off], src[off + 1]


# tinytrain's validation windows (tt_batch_val), as offsets into the split
n_val = len(data) - n_train
tt_starts = [((j * 0x9E3779B97F4A7C15) % (1 << 64)) * (n_val - T) >> 64 for j in range(a.eval_batches * B)]
tt_off = torch.tensor(tt_starts, dtype=torch.long, device="cuda")[:, None] + torch.arange(T, device="cuda")


def lr_at(i):  # tinytrain's tt_lr_at for this recipe
    if i < 100:
        return 1e-3 * (i + 1) / 100
    r = (i - 100) / (a.steps - 100 - 1)
    return 1e-4 + 0.5 * (1e-3 - 1e-4) * (1 + math.cos(math.pi * r))


@torch.no_grad()
def evaluate():
    m.eval()
    rnd = 0.0
    for _ in range(50):
        x, y = random_batch(va)
        with amp:
            rnd += fwd(x, y).item()
    fixed = 0.0
    for k in range(a.eval_batches):
        off = tt_off[k * B:(k + 1) * B]
        with amp:
            fixed += fwd(va[off], va[off + 1]).item()
    m.train()
    return rnd / 50, fixed / a.eval_batches


stop = a.stop_after or a.steps
best = best_tt = 9e9
best_at = best_tt_at = 0
t0 = time.perf_counter()
eval_s = 0.0
for i in range(stop):
    for g in opt.param_groups:
        g["lr"] = lr_at(i)
    x, y = random_batch(tr)
    with amp:
        loss = fwd(x, y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
    opt.step()
    opt.zero_grad(set_to_none=True)
    if (i + 1) % a.eval_every == 0 or i + 1 == stop:
        te = time.perf_counter()
        v, vt = evaluate()
        eval_s += time.perf_counter() - te
        if v < best:
            best, best_at = v, i + 1
        if vt < best_tt:
            best_tt, best_tt_at = vt, i + 1
        print(json.dumps({"step": i + 1, "val": round(v, 4), "val_tt": round(vt, 4), "train": round(loss.item(), 4),
                          "t": round(time.perf_counter() - t0, 1)}), flush=True)
torch.cuda.synchronize()
print(json.dumps({"summary": True, "mode": a.mode, "dropout": p_drop, "seed": a.seed, "steps": stop,
                  "best_val": round(best, 4), "best_val_step": best_at, "best_val_tt": round(best_tt, 4),
                  "best_val_tt_step": best_tt_at, "wall_s": round(time.perf_counter() - t0, 1),
                  "eval_s": round(eval_s, 1)}), flush=True)
