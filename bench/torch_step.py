"""torch_step.py — PyTorch's time for one training step of tinytrain's model at
any shape: the PyTorch side of the compute-bound rows of bench/curve.sh
(docs/BENCHMARKS.md, "Compute-bound rows").

The model is tinytrain's: GPT-2 shaped, pre-LN, learned positions, tied head,
exact (erf) GELU, LayerNorm eps 1e-5, byte vocab 256, separate q/k/v
projections (as the WebGPU backend runs them), causal attention through
F.scaled_dot_product_attention. fp32 everywhere, TF32 off, eager.
A step is what `tinytrain bench` times: batch sampling on the device, forward,
cross-entropy, backward, clip_grad_norm_(1.0), AdamW (fused on CUDA; decay 0.1
on matrices), and the loss read back (.item(), which waits for the device), so
every step is timed alone on the host clock and the median is reported.
Random bytes and PyTorch's own init: speed only, no loss parity.

  python3 bench/torch_step.py --device cuda --shape shakespeare:6,384,6,256,64 \
      [--shape NAME:L,C,H,T,B ...] [--warmup 3] [--steps 10] [--min-time 1] \
      [--max-steps 1000] [--threads N] [--flops-only] [--profile N]

One JSON line per shape on stdout, in order. --profile N: after the timed
steps, N more steps under torch.profiler, and on stderr where a step's
device time goes (CUDA kernels; CPU: self CPU time of the ops), by kernel
and in three groups, matmuls, attention and the rest, to set beside
`tinytrain profile` (docs/BENCHMARKS.md, "where the gap to PyTorch CUDA
is"). --flops-only prints the shapes
and their FLOP counts without importing torch (tests use it to check that
both sides count the same FLOPs). Exit 2 on bad arguments."""
import argparse
import json
import math
import sys
import time

VOCAB = 256


def step_flops(layers, d_model, ctx, batch, vocab=VOCAB):
    """FLOPs of one training step, the formula of tt_config_step_flops
    (src/config.c), used for every row of the benchmark: 6 x (matmul weights:
    12 C^2 per layer + the tied head V C) x tokens, plus attention's QK^T and
    PV forward and backward over the causal half: 6 L B T^2 C."""
    C, L, T, B = float(d_model), float(layers), float(ctx), float(batch)
    mm_params = L * 12.0 * C * C + vocab * C
    return 6.0 * mm_params * B * T + 6.0 * L * B * T * T * C


def parse_shape(text):
    """'NAME:L,C,H,T,B' -> (name, (L, C, H, T, B))."""
    name, sep, dims = text.partition(":")
    try:
        vals = tuple(int(x) for x in dims.split(","))
    except ValueError:
        vals = ()
    if not sep or not name or len(vals) != 5 or min(vals) < 1:
        raise argparse.ArgumentTypeError("--shape needs NAME:layers,d_model,heads,ctx,batch (got '%s')" % text)
    L, C, H, T, B = vals
    if C % H:
        raise argparse.ArgumentTypeError("--shape %s: d_model %d is not a multiple of heads %d" % (name, C, H))
    return name, vals


def percentile(sorted_xs, q):
    """Linear-interpolated percentile q in [0, 1] of an ascending list."""
    if len(sorted_xs) == 1:
        return sorted_xs[0]
    pos = q * (len(sorted_xs) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(sorted_xs) - 1)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (pos - lo)


def build_model(torch, L, C, H, T):
    nn = torch.nn
    F = torch.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(C, eps=1e-5)
            self.q = nn.Linear(C, C)
            self.k = nn.Linear(C, C)
            self.v = nn.Linear(C, C)
            self.o = nn.Linear(C, C)
            self.ln2 = nn.LayerNorm(C, eps=1e-5)
            self.fc = nn.Linear(C, 4 * C)
            self.proj = nn.Linear(4 * C, C)

        def forward(self, x):  # x (B,T,C)
            Bn, Tn, _ = x.shape
            a = self.ln1(x)
            q, k, v = [m(a).view(Bn, Tn, H, C // H).transpose(1, 2) for m in (self.q, self.k, self.v)]
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B,H,T,C/H)
            x = x + self.o(y.transpose(1, 2).reshape(Bn, Tn, C))
            return x + self.proj(F.gelu(self.fc(self.ln2(x))))  # exact erf GELU

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(VOCAB, C)
            self.wpe = nn.Embedding(T, C)
            self.blocks = nn.ModuleList(Block() for _ in range(L))
            self.lnf = nn.LayerNorm(C, eps=1e-5)

        def forward(self, idx, tgt):  # idx, tgt (B,T) int64
            pos = torch.arange(idx.shape[1], device=idx.device)
            x = self.wte(idx) + self.wpe(pos)
            for b in self.blocks:
                x = b(x)
            logits = self.lnf(x) @ self.wte.weight.t()  # tied head, (B,T,V)
            return F.cross_entropy(logits.view(-1, VOCAB), tgt.view(-1))

    return GPT()


def bench_shape(torch, name, dims, dev, args):
    L, C, H, T, B = dims
    torch.manual_seed(1337)
    model = build_model(torch, L, C, H, T).to(dev)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    nodecay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": nodecay, "weight_decay": 0.0}],
                            lr=3e-4, betas=(0.9, 0.95), eps=1e-8, fused=(dev == "cuda"))
    data = torch.randint(0, VOCAB, (1 << 20,), device=dev)
    offs = torch.arange(T, device=dev)

    def step():
        ix = torch.randint(0, data.numel() - T - 1, (B,), device=dev)
        pos = ix[:, None] + offs[None, :]  # (B,T)
        x, y = data[pos], data[pos + 1]
        loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.item()  # waits for the device, as tinytrain reads its loss back

    for _ in range(args.warmup):
        step()
    times, loss = [], float("nan")
    t_all = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        loss = step()
        times.append((time.perf_counter() - t0) * 1e3)
        n = len(times)
        if n >= args.max_steps:
            break
        if n >= args.steps and time.perf_counter() - t_all >= args.min_time:
            break
    if args.profile:
        profile_steps(torch, name, step, dev, args.profile)
    s = sorted(times)
    med = percentile(s, 0.5)
    flops = step_flops(L, C, T, B)
    return {
        "shape": name, "layers": L, "d_model": C, "heads": H, "ctx": T, "batch": B,
        "params": sum(p.numel() for p in model.parameters()), "tokens_per_step": B * T,
        "warmup_steps": args.warmup, "measured_steps": len(times),
        "ms_per_step": {"median": round(med, 4), "mean": round(sum(times) / len(times), 4), "min": round(s[0], 4),
                        "p10": round(percentile(s, 0.1), 4), "p90": round(percentile(s, 0.9), 4),
                        "max": round(s[-1], 4)},
        "tokens_per_s": round(B * T / med * 1e3, 1), "step_flops": flops, "tflops": round(flops / (med * 1e-3) / 1e12, 4),
        "loss": round(loss, 5), "device": dev, "threads": torch.get_num_threads() if dev == "cpu" else 0,
        "tf32": bool(torch.backends.cuda.matmul.allow_tf32), "torch": torch.__version__,
    }


def kernel_group(name):
    """'matmul', 'attention' or 'other' for a CUDA kernel or CPU op name."""
    n = name.lower()
    if any(k in n for k in ("gemm", "xmma", "aten::mm", "aten::addmm", "aten::bmm")):
        return "matmul"
    if any(k in n for k in ("fmha", "attention", "flash")):
        return "attention"
    return "other"


def profile_steps(torch, name, step, dev, n, top=15):
    """n steps under torch.profiler; per step: device (CUDA) or self CPU time by
    kernel and by group, on stderr."""
    from torch.profiler import ProfilerActivity, profile
    act = ProfilerActivity.CUDA if dev == "cuda" else ProfilerActivity.CPU
    with profile(activities=[act]) as prof:
        for _ in range(n):
            step()
        if dev == "cuda":
            torch.cuda.synchronize()
    rows = {}
    if dev == "cuda":
        for e in prof.events():
            if e.device_type == torch.autograd.DeviceType.CUDA:
                rows[e.name] = rows.get(e.name, 0.0) + e.time_range.elapsed_us() / 1e3 / n
    else:
        for e in prof.key_averages():
            rows[e.key] = rows.get(e.key, 0.0) + e.self_cpu_time_total / 1e3 / n
    total = sum(rows.values()) or 1.0
    groups = {"matmul": 0.0, "attention": 0.0, "other": 0.0}
    for k, v in rows.items():
        groups[kernel_group(k)] += v
    err = sys.stderr
    print("profile %s (%s, %d steps): %.3f ms a step; %s" % (
        name, dev, n, total, ", ".join("%s %.3f ms (%.1f%%)" % (g, v, 100 * v / total) for g, v in groups.items())),
        file=err)
    for k, v in sorted(rows.items(), key=lambda kv: -kv[1])[:top]:
        print("  %9.3f ms %5.1f%%  %-9s %s" % (v, 100 * v / total, kernel_group(k), k[:120]), file=err)


def main(argv):
    ap = argparse.ArgumentParser(description="PyTorch time of one tinytrain-shaped training step (fp32, TF32 off, eager)")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--shape", type=parse_shape, action="append", required=True,
                    help="NAME:layers,d_model,heads,ctx,batch (repeatable)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps first (default 3)")
    ap.add_argument("--steps", type=int, default=10, help="timed steps at least (default 10)")
    ap.add_argument("--min-time", type=float, default=1.0, help="time more steps until they take S seconds (default 1)")
    ap.add_argument("--max-steps", type=int, default=1000, help="cap on timed steps (default 1000)")
    ap.add_argument("--threads", type=int, default=0, help="CPU threads (default: PyTorch's default, all cores)")
    ap.add_argument("--flops-only", action="store_true", help="print the shapes and FLOP counts; no torch")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="then N steps under torch.profiler: where the step's time goes, on stderr")
    args = ap.parse_args(argv)
    if (args.warmup < 0 or args.steps < 1 or args.max_steps < args.steps or args.min_time < 0 or args.threads < 0
            or args.profile < 0):
        ap.error("need --warmup >= 0, 1 <= --steps <= --max-steps, --min-time >= 0, --threads >= 0, --profile >= 0")
    if args.flops_only:
        for name, (L, C, H, T, B) in args.shape:
            print(json.dumps({"shape": name, "layers": L, "d_model": C, "heads": H, "ctx": T, "batch": B,
                              "tokens_per_step": B * T, "step_flops": step_flops(L, C, T, B)}), flush=True)
        return 0
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    if args.device == "cuda" and not torch.cuda.is_available():
        print("torch_step.py: error: PyTorch has no CUDA device here", file=sys.stderr)
        return 1
    if args.threads:
        torch.set_num_threads(args.threads)
    for name, dims in args.shape:
        r = bench_shape(torch, name, dims, args.device, args)
        print(json.dumps(r), flush=True)
        if args.device == "cuda":
            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
