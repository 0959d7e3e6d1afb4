"""cublas_bf16.py — the products dev/f16/matmul_check.mjs times (the gpt2
step's at B 8, T 1024, and 4096^3) through PyTorch (cuBLAS) with bf16 inputs
and f32 accumulation, operands laid out as tinytrain holds them (a
transposed operand as a .t() view): the per-matmul yardstick of the f16 tier.
Median of 7 runs of 10 back-to-back products between CUDA events.
  python3 dev/f16/cublas_bf16.py        (one JSON line per shape)"""
import json
import torch

SHAPES = [("4096^3", 4096, 4096, 4096, 0, 0), ("qkv fwd", 8192, 2304, 768, 0, 0),
          ("attn proj fwd", 8192, 768, 768, 0, 0), ("fc fwd", 8192, 3072, 768, 0, 0),
          ("fc proj fwd", 8192, 768, 3072, 0, 0), ("head fwd", 8192, 50304, 768, 0, 1),
          ("dX fc proj", 8192, 3072, 768, 0, 1), ("dW fc", 768, 3072, 8192, 1, 0)]


def main():
    dev = "cuda"
    for name, M, N, K, ta, tb in SHAPES:
        a = torch.randn((K, M) if ta else (M, K), device=dev, dtype=torch.bfloat16)
        b = torch.randn((N, K) if tb else (K, N), device=dev, dtype=torch.bfloat16)
        A = a.t() if ta else a
        B = b.t() if tb else b
        for _ in range(20):
            torch.mm(A, B)
        times = []
        for _ in range(7):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(10):
                torch.mm(A, B)
            e.record()
            torch.cuda.synchronize()
            times.append(s.elapsed_time(e) / 10)
        ms = sorted(times)[3]
        print(json.dumps({"time": name, "M": M, "N": N, "K": K, "ta": ta, "tb": tb, "cublas_bf16_ms": round(ms, 4),
                          "cublas_bf16_tflops": round(2 * M * N * K / ms / 1e9, 1)}))


if __name__ == "__main__":
    main()
