"""gpt2_step_torch.py — PyTorch's time for one fine-tuning step of a Hugging
Face GPT-2 folder: the PyTorch side of the GPT-2 fine-tune rows of
docs/BENCHMARKS.md, set beside `tinytrain bench --init-from FOLDER`.

  python3 bench/hf/gpt2_step_torch.py FOLDER [--mode full|lora] [--batch 8] [--ctx 1024]
      [--rank 8] [--alpha 8] [--warmup 3] [--steps 10]

The model is transformers' GPT2LMHeadModel as saved in FOLDER (gelu_new,
tied head), fp32, TF32 off, eager, dropout off. A step is what tinytrain's
bench times: forward, cross-entropy over B*T next tokens, backward,
clip_grad_norm_(1.0), AdamW (fused; lr 1e-4, weight decay 0.1 on matrices
for full, none on adapters) and the loss read back (.item()). --mode lora:
peft LoRA of rank R, alpha A on c_attn, attn.c_proj, mlp.c_fc and
mlp.c_proj (tinytrain's default targets), the base frozen. Random token ids:
speed only. One JSON line on stdout: median ms per step and tokens/s."""
import argparse, json, statistics, time

import torch
from transformers import GPT2LMHeadModel

ap = argparse.ArgumentParser()
ap.add_argument("folder")
ap.add_argument("--mode", choices=["full", "lora"], default="full")
ap.add_argument("--batch", type=int, default=8)
ap.add_argument("--ctx", type=int, default=1024)
ap.add_argument("--rank", type=int, default=8)
ap.add_argument("--alpha", type=float, default=8.0)
ap.add_argument("--warmup", type=int, default=3)
ap.add_argument("--steps", type=int, default=10)
a = ap.parse_args()

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
dev = "cuda"
m = GPT2LMHeadModel.from_pretrained(a.folder, torch_dtype=torch.float32, attn_implementation="sdpa")
m.config.resid_pdrop = m.config.embd_pdrop = m.config.attn_pdrop = 0.0
if a.mode == "lora":
    from peft import LoraConfig, get_peft_model
    cfg = LoraConfig(r=a.rank, lora_alpha=a.alpha, lora_dropout=0.0, fan_in_fan_out=True,
                     target_modules=["attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"])
    m = get_peft_model(m, cfg)
m = m.to(dev).train()
params = [p for p in m.parameters() if p.requires_grad]
decay = [p for p in params if p.dim() >= 2 and a.mode == "full"]
rest = [p for p in params if not (p.dim() >= 2 and a.mode == "full")]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                        lr=1e-4, fused=True)
V = m.config.vocab_size
g = torch.Generator(device=dev).manual_seed(1)
times = []
for i in range(a.warmup + a.steps):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    x = torch.randint(0, V, (a.batch, a.ctx + 1), device=dev, generator=g)
    out = m(input_ids=x[:, :-1])
    loss = torch.nn.functional.cross_entropy(out.logits.view(-1, V), x[:, 1:].reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, 1.0)
    opt.step()
    loss.item()
    if i >= a.warmup:
        times.append((time.perf_counter() - t0) * 1e3)
med = statistics.median(times)
print(json.dumps({"impl": "torch-cuda-fp32-eager" + ("-peft" if a.mode == "lora" else ""), "mode": a.mode,
                  "batch": a.batch, "ctx": a.ctx, "rank": a.rank if a.mode == "lora" else 0,
                  "trainable": sum(p.numel() for p in params), "ms_per_step": med,
                  "tokens_per_s": a.batch * a.ctx / (med * 1e-3), "peak_mem_gb": torch.cuda.max_memory_allocated() / 1e9,
                  "device": torch.cuda.get_device_name()}))
