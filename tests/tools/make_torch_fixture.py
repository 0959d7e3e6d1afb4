#!/usr/bin/env python3
"""make_torch_fixture.py — the independent oracle of tests/cpu/test_torch_fixture.c:
a tiny GPT-2 built and differentiated by PyTorch (transformers' GPT2LMHeadModel),
made once on a machine with torch, transformers and safetensors, and committed
under tests/data/torch_fixture/ (the role of llm.c's gpt2_124M_debug_state.bin).

    python3 tests/tools/make_torch_fixture.py --out tests/data/torch_fixture

writes into --out (created; an existing non-empty folder is refused):
  config.json, model.safetensors   save_pretrained of the model (float32 weights; the
                                   head is tied to wte, so lm_head.weight is not stored):
                                   what `tinytrain train --init-from DIR` reads
  generation_config.json           written by save_pretrained too (tinytrain ignores it)
  fixture.safetensors              input_ids I32 (B,T) and targets I32 (B,T): windows of
                                   T+1 random bytes (targets = inputs shifted by one);
                                   logits F32 (B,T,V); loss F32 (1), the mean token
                                   cross-entropy; grad.<name> F32 for every parameter
                                   <name> of model.named_parameters() (HF names and
                                   shapes: Conv1D weights [in, out], c_attn = [q | k | v]
                                   along the output dimension): d loss / d parameter.

The model: n_layer 2, n_embd 32, n_head 4, n_positions = T = 32, vocab 256, the
exact erf GELU ("gelu"), LayerNorm eps 1e-5 (tinytrain's), no dropout. Its weights
are float32, drawn from a fixed seed, every one of them random (the default init
leaves LayerNorm gains at 1 and biases at 0, which would hide a swapped gain and
bias). Logits, loss and gradients are computed in float64 on the CPU from those
float32 weights (no TF32, no device dependence) and stored as float32, so the
fixture is the exact function up to float32 rounding of the results.
"""
import argparse
import copy
import json
import os
import sys

import torch
import torch.nn.functional as F
import transformers
from safetensors.torch import save_file
from transformers import GPT2Config, GPT2LMHeadModel

SEED = 1234
B, T = 2, 32
N_LAYER, N_EMBD, N_HEAD, VOCAB = 2, 32, 4, 256


def build_model():
    cfg = GPT2Config(
        n_layer=N_LAYER, n_embd=N_EMBD, n_head=N_HEAD, n_positions=T, vocab_size=VOCAB,
        activation_function="gelu", layer_norm_epsilon=1e-5,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, summary_first_dropout=0.0,
        tie_word_embeddings=True, bos_token_id=None, eos_token_id=None,
    )
    torch.manual_seed(SEED)
    model = GPT2LMHeadModel(cfg).float().eval()
    g = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for name, p in model.named_parameters():
            r = torch.randn(p.shape, generator=g, dtype=torch.float32)
            if ".ln_" in name and name.endswith(".weight"):
                p.copy_(1.0 + 0.2 * r)  # LayerNorm gains around 1
            elif name.endswith(".bias"):
                p.copy_(0.1 * r)
            else:
                p.copy_(0.2 * r)  # wte, wpe, projections: attention far from uniform
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="folder to write (absent or empty)")
    out = ap.parse_args().out
    if os.path.isdir(out) and os.listdir(out):
        sys.exit("make_torch_fixture: %s is not empty" % out)
    os.makedirs(out, exist_ok=True)
    torch.set_grad_enabled(True)

    model = build_model()
    model.save_pretrained(out, safe_serialization=True)

    g = torch.Generator().manual_seed(SEED + 1)
    windows = torch.randint(0, VOCAB, (B, T + 1), generator=g)
    inputs, targets = windows[:, :T].contiguous(), windows[:, 1:].contiguous()

    # the oracle: float64 on the CPU, from the float32 weights just saved
    m64 = copy.deepcopy(model).double()
    logits = m64(input_ids=inputs).logits  # (B, T, V)
    loss = F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))
    loss.backward()
    params = dict(m64.named_parameters())  # tied lm_head.weight appears once, as transformer.wte.weight
    assert "transformer.wte.weight" in params and "lm_head.weight" not in params, sorted(params)

    # the saved folder is the model the oracle differentiated, and float32 agrees with it
    back = GPT2LMHeadModel.from_pretrained(out).float().eval()
    with torch.no_grad():
        l32 = back(input_ids=inputs).logits
    d32 = (l32.double() - logits.detach()).abs().max().item()
    print("float32 forward of the saved folder vs the float64 oracle: max |logit diff| %.3g" % d32)
    assert d32 < 1e-3, d32

    tensors = {
        "input_ids": inputs.to(torch.int32),
        "targets": targets.to(torch.int32),
        "logits": logits.detach().float().contiguous(),
        "loss": loss.detach().float().reshape(1),
    }
    for name, p in params.items():
        assert p.grad is not None, name
        tensors["grad." + name] = p.grad.float().contiguous()
    meta = {
        "what": "tinytrain's PyTorch oracle (tests/tools/make_torch_fixture.py)",
        "seed": str(SEED),
        "computed_in": "float64 on the CPU from the float32 weights of model.safetensors",
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "config": json.dumps({"n_layer": N_LAYER, "n_embd": N_EMBD, "n_head": N_HEAD, "n_positions": T,
                              "vocab_size": VOCAB, "batch": B}),
    }
    save_file(tensors, os.path.join(out, "fixture.safetensors"), metadata=meta)
    print("loss %.6f; %d parameters; wrote %s" % (loss.item(), sum(p.numel() for p in params.values()),
                                                  ", ".join(sorted(os.listdir(out)))))
    for f in sorted(os.listdir(out)):
        print("  %-24s %8d bytes" % (f, os.path.getsize(os.path.join(out, f))))


if __name__ == "__main__":
    main()
