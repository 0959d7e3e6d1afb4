#!/usr/bin/env python3
"""continue_in_transformers.py — the way out of one machine: a folder written
by `tinytrain export` keeps training in PyTorch with transformers, on the same
byte tokenizer, and is saved with save_pretrained so that
`tinytrain train --init-from OUT` (and `tinytrain sample --ckpt OUT`) read it.

    python3 bench/hf/continue_in_transformers.py DIR CORPUS OUT [--steps 300] [--batch 16] [--lr 3e-4]
    accelerate launch --num_processes 8 bench/hf/continue_in_transformers.py DIR CORPUS OUT   # DDP, 8 GPUs

The corpus is split as tinytrain splits it (first 90% train, last 10%
validation); batches are random windows of n_positions + 1 bytes; AdamW
(0.9, 0.95, eps 1e-8, weight decay on matrices), gradient clip 1.0, cosine
schedule after a linear warmup, float32. Prints JSON lines: the validation
loss before, the loss of the first step (it continues from tinytrain's last
loss: the model is not restarted), every --log-every steps, the end; then
writes OUT (model, config, generation config, tokenizer) and, with
--greedy-out, the greedy continuation of --prompt as `tinytrain sample
--temperature 0` prints it. Uses accelerate when it is installed (one process
or many), plain torch otherwise."""
import argparse
import json
import math
import sys
import time

import torch
import torch.nn.functional as F
from transformers import AutoModelForCausalLM, AutoTokenizer


def log(obj):
    print(json.dumps(obj), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("corpus")
    ap.add_argument("out")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=16, help="sequences per step and process")
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--min-lr", type=float, default=None, help="cosine floor (default lr/10)")
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--eval-batches", type=int, default=8)
    ap.add_argument("--log-every", type=int, default=50)
    ap.add_argument("--prompt", default="The ")
    ap.add_argument("--tokens", type=int, default=60)
    ap.add_argument("--greedy-out", help="write the prompt and its greedy continuation here after training")
    a = ap.parse_args()
    min_lr = a.lr / 10 if a.min_lr is None else a.min_lr

    try:
        from accelerate import Accelerator
        acc = Accelerator()
    except ImportError:
        acc = None
    device = acc.device if acc else torch.device("cuda" if torch.cuda.is_available() else "cpu")
    rank, world = (acc.process_index, acc.num_processes) if acc else (0, 1)
    main_proc = rank == 0

    model = AutoModelForCausalLM.from_pretrained(a.dir).float().to(device)
    tok = AutoTokenizer.from_pretrained(a.dir)
    T, V = model.config.n_positions, model.config.vocab_size

    data = open(a.corpus, "rb").read()
    # the same byte tokenizer: a text's ids are its UTF-8 bytes, so the corpus bytes are its ids
    text = data[:T].decode("utf-8", errors="ignore")  # one context: no over-length warning
    if tok(text).input_ids != list(text.encode("utf-8")):
        raise SystemExit("continue_in_transformers: the folder's tokenizer is not the byte tokenizer")
    ids = torch.tensor(list(data), dtype=torch.long)
    n_train = int(len(ids) * 0.9)
    if n_train < T + 2 or len(ids) - n_train < T + 2:
        raise SystemExit(f"continue_in_transformers: the corpus is too short for windows of {T + 1} bytes")
    train, val = ids[:n_train], ids[n_train:]
    gen = torch.Generator().manual_seed(a.seed * 1000003 + rank)

    def windows(src, starts):
        return torch.stack([src[s:s + T + 1] for s in starts]).to(device)

    def loss_of(m, x):
        logits = m(input_ids=x[:, :-1]).logits
        return F.cross_entropy(logits.reshape(-1, V), x[:, 1:].reshape(-1))

    def val_loss(m):
        """mean loss over fixed windows spread evenly over the validation split"""
        m.eval()
        n = a.eval_batches * a.batch
        starts = [int(i * (len(val) - T - 1) / max(1, n - 1)) for i in range(n)]
        with torch.no_grad():
            tot = sum(loss_of(m, windows(val, starts[i:i + a.batch])).item() for i in range(0, n, a.batch))
        m.train()
        return tot / a.eval_batches

    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95), eps=1e-8)
    v0 = val_loss(model) if main_proc else float("nan")
    if acc:
        model, opt = acc.prepare(model, opt)
    if main_proc:
        log({"event": "start", "dir": a.dir, "processes": world, "device": str(device), "params":
             sum(p.numel() for p in model.parameters()), "ctx": T, "batch": a.batch * world, "val_loss": v0})

    def lr_at(step):
        if step < a.warmup:
            return a.lr * (step + 1) / a.warmup
        p = (step - a.warmup) / max(1, a.steps - a.warmup)
        return min_lr + 0.5 * (a.lr - min_lr) * (1 + math.cos(math.pi * min(1.0, p)))

    model.train()
    t0 = time.time()
    first = last = None
    for step in range(a.steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        x = windows(train, torch.randint(0, n_train - T - 1, (a.batch,), generator=gen).tolist())
        loss = loss_of(model, x)
        opt.zero_grad(set_to_none=True)
        if acc:
            acc.backward(loss)
            gn = acc.clip_grad_norm_(model.parameters(), a.clip) if a.clip > 0 else None
        else:
            loss.backward()
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip) if a.clip > 0 else None
        opt.step()
        lv = (acc.gather(loss.detach()).mean() if acc else loss.detach()).item()
        first = lv if first is None else first
        last = lv
        if main_proc and (step == 0 or (step + 1) % a.log_every == 0 or step + 1 == a.steps):
            log({"event": "step", "step": step + 1, "loss": lv, "lr": lr_at(step),
                 "grad_norm": None if gn is None else float(gn)})
    wall = time.time() - t0
    if acc:
        acc.wait_for_everyone()
        model = acc.unwrap_model(model)
    if not main_proc:
        return 0
    v1 = val_loss(model)
    model.save_pretrained(a.out, safe_serialization=True)
    tok.save_pretrained(a.out)
    res = {"event": "end", "steps": a.steps, "first_loss": first, "last_loss": last, "val_before": v0, "val_after": v1,
           "seconds": wall, "out": a.out}
    if a.greedy_out:
        model.eval()
        enc = tok(a.prompt, return_tensors="pt")
        with torch.no_grad():
            out = model.generate(enc.input_ids.to(device), attention_mask=enc.attention_mask.to(device),
                                 max_new_tokens=a.tokens, do_sample=False)
        with open(a.greedy_out, "wb") as f:
            f.write(bytes(out[0].tolist()) + b"\n")
        res["greedy_out"] = a.greedy_out
    log(res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
