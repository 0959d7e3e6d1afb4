#!/usr/bin/env python3
"""hf_check.py — a folder written by `tinytrain export` loads in transformers
with no extra code and continues a prompt greedily exactly as
`tinytrain sample --temperature 0` does.

    python3 bench/hf/hf_check.py DIR --prompt "The " --tokens 60 --expect sample.txt

DIR: the exported folder (or one written by save_pretrained). --expect: the
output of `tinytrain sample --ckpt ... --temperature 0 --prompt P --tokens N`
(the prompt, N bytes, a newline). Within the context the continuation comes
from transformers' generate(); past it, from tinytrain's sliding window
(greedy.py). Prints one JSON line; exit 1 on any
difference. Needs torch and transformers (the GPU host); runs on CUDA when
there is one, in float32."""
import argparse
import json
import os
import sys

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from greedy import greedy_windowed  # noqa: E402


def greedy(model, tok, prompt, n, device):
    """The prompt's ids (its UTF-8 bytes, checked) and the greedy continuation of n tokens as bytes."""
    enc = tok(prompt, return_tensors="pt")
    ids = enc.input_ids
    if ids[0].tolist() != list(prompt.encode("utf-8")):
        raise SystemExit(f"hf_check: the tokenizer does not give the prompt's bytes: {ids[0].tolist()}")
    if ids.shape[1] + n > model.config.n_positions:
        # past the context: tinytrain's sliding window, which generate() does not do
        return ids[0].tolist(), greedy_windowed(model, prompt.encode("utf-8"), n, device)
    with torch.no_grad():
        out = model.generate(ids.to(device), attention_mask=enc.attention_mask.to(device), max_new_tokens=n,
                             do_sample=False)
    return ids[0].tolist(), bytes(out[0, ids.shape[1]:].tolist())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("--prompt", default="The ")
    ap.add_argument("--tokens", type=int, default=60)
    ap.add_argument("--expect", help="tinytrain sample's output to compare with")
    ap.add_argument("--out", help="write the prompt and the continuation here (as tinytrain sample prints them)")
    a = ap.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = AutoModelForCausalLM.from_pretrained(a.dir).float().to(device).eval()
    tok = AutoTokenizer.from_pretrained(a.dir)
    prompt_ids, cont = greedy(model, tok, a.prompt, a.tokens, device)
    # the tokenizer's own decode gives the same text (bytes that are not UTF-8 become U+FFFD)
    decoded = tok.decode(prompt_ids + list(cont))
    text = a.prompt.encode("utf-8") + cont
    ok_decode = decoded == text.decode("utf-8", errors="replace")
    # sampling with the folder's generation_config.json runs too
    with torch.no_grad():
        sampled = model.generate(tok(a.prompt, return_tensors="pt").input_ids.to(device), max_new_tokens=8)
    res = {"check": "hf_load", "dir": a.dir, "model": type(model).__name__, "tokenizer": type(tok).__name__,
           "params": sum(p.numel() for p in model.parameters()), "tokens": len(cont), "decode_ok": ok_decode,
           "sample_ok": sampled.shape[1] == len(prompt_ids) + 8, "text": text.decode("utf-8", errors="replace")}
    if a.out:
        with open(a.out, "wb") as f:
            f.write(text + b"\n")
    if a.expect:
        want = open(a.expect, "rb").read()
        want = want[:-1] if want.endswith(b"\n") else want
        res["match"] = want == text
        if not res["match"]:
            k = next((i for i in range(min(len(want), len(text))) if want[i] != text[i]), min(len(want), len(text)))
            res["first_difference"] = k
            res["tinytrain"] = want.decode("utf-8", errors="replace")
    print(json.dumps(res))
    return 0 if res.get("match", True) and ok_decode and res["sample_ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
