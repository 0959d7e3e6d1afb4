#!/usr/bin/env python3
"""gpt2_greedy_check.py — after a GPT-2 fine-tune, do transformers (the
merged export) and peft (the base folder + the adapter export) continue a
prompt exactly as `tinytrain sample` does?

  gpt2_greedy_check.py --tinytrain BIN --run RUN_CKPT --merged DIR [--base DIR --adapter DIR]
                       [--ids 464,2068,...] [--tokens 40]

tinytrain: `sample --ckpt RUN_CKPT --ids P --tokens N --temperature 0` (the
CPU sampler). transformers: GPT2LMHeadModel.from_pretrained(merged) in
float64, greedy over the full context (the prompt plus N stays within
n_positions). peft: PeftModel.from_pretrained(base, adapter), merged in
float64, the same. A difference where transformers' top-2 margin is below
1e-3 is reported as a near-tie and does not fail. Exit 0 iff every
continuation agrees."""
import argparse, json, subprocess, sys

import torch
from transformers import GPT2LMHeadModel

ap = argparse.ArgumentParser()
ap.add_argument("--tinytrain", required=True)
ap.add_argument("--run", required=True)
ap.add_argument("--merged", required=True)
ap.add_argument("--base")
ap.add_argument("--adapter")
ap.add_argument("--ids", default="464,2068,7586,21831,18045,625,262,16931,3290,13")
ap.add_argument("--tokens", type=int, default=40)
a = ap.parse_args()
ids = [int(x) for x in a.ids.split(",")]
p = subprocess.run([a.tinytrain, "sample", "--ckpt", a.run, "--ids", a.ids, "--tokens", str(a.tokens),
                    "--temperature", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
if p.returncode:
    print("tinytrain sample failed:", p.stderr.strip()[-500:]); sys.exit(1)
tt = json.loads(p.stdout)["generated"]


def greedy(m):
    seq, margins = list(ids), []
    with torch.no_grad():
        for _ in range(a.tokens):
            lg = m(torch.tensor([seq])).logits[0, -1]
            top = torch.topk(lg, 2)
            margins.append(float(top.values[0] - top.values[1]))
            seq.append(int(top.indices[0]))
    return seq[len(ids):], margins


def check(name, m):
    got, margins = greedy(m.double().eval())
    if got == tt:
        print(f"{name}: identical {len(tt)} greedy tokens"); return True
    k = next(i for i in range(len(tt)) if got[i] != tt[i])
    tie = margins[k] < 1e-3
    print(f"{name}: {'near-tie' if tie else 'DIFFERS'} at token {k} (tinytrain {tt[k]}, {name} {got[k]}, margin {margins[k]:.2e})")
    return tie


ok = check("transformers", GPT2LMHeadModel.from_pretrained(a.merged, torch_dtype=torch.float32))
if a.base and a.adapter:
    from peft import PeftModel
    pm = PeftModel.from_pretrained(GPT2LMHeadModel.from_pretrained(a.base, torch_dtype=torch.float32), a.adapter)
    ok = check("peft", pm.merge_and_unload()) and ok
sys.exit(0 if ok else 1)
