"""torch_matmul.py — every matmul of a tinytrain WebGPU step against the same
product through PyTorch (cuBLAS) fp32, TF32 off: the per-matmul part of the
compute-bound benchmark (docs/BENCHMARKS.md, "Matmuls against cuBLAS").

Input: the JSON of `tinytrain profile --detail --json` (a file, or - for
stdin). Its matmul rows carry a shape tag "MxNxK [xBATCH] tTILE zSPLITS [TA]
[TB] [acc] [bias] [res] [ones]": C (M,N) = op(A) (M,K) x op(B) (K,N); xBATCH:
one dispatch computes BATCH such products (the q, k, v projections), each
counted here as a site of its own (so it is compared with BATCH separate
cuBLAS products, and its per-site time is the dispatch's / BATCH); TA: A is stored
(K,M) and read transposed; TB: B is stored (N,K); acc: C += the product;
bias: + a bias row (N); res: + a residual (M,N); ones: op(A)'s last row is
ones (the bias gradient folded into the weight-gradient product). Every
distinct product is timed through torch on CUDA with the operands laid out
as tinytrain holds them (.t() views of the stored tensors, which cuBLAS reads
transposed without a copy): `--inner` products back to back between two CUDA
events, median over `--reps` such measurements, divided by --inner — the way
`tinytrain profile` times a dispatch site (reps back to back, averaged).

Prints a table (per shape: sites, tinytrain ms, cuBLAS ms, speed vs cuBLAS =
cuBLAS ms / tinytrain ms, TFLOP/s of each) and totals: the matmul sites, the
split-K reductions and bias column sums tinytrain adds around them, attention,
and each one's share of the profile's sum of sites. --json FILE also writes
all of it as one JSON object ("tinytrain.matmul_vs_cublas/1").

  python3 bench/torch_matmul.py PROFILE.json|- [--reps 20] [--inner 10]
      [--timing torch|fake] [--json FILE] [--name SHAPE]

--timing fake replaces the GPU with a formula (2MNK FLOPs at 10 TFLOP/s) and
never imports torch: the test of the parsing, joining and tables
(tests/cli/test_bench_matmul.sh). Exit: 0; 2 for bad arguments or input;
1 when torch or CUDA is missing."""
import argparse
import json
import re
import sys

TAG_RE = re.compile(r"^(\d+)x(\d+)x(\d+)(?: x(\d+))? t(\d+) z(\d+)((?: [A-Za-z]+)*)$")
FLAGS = ("TA", "TB", "acc", "bias", "res", "ones")
GOAL = 0.80  # issue 13: every matmul shape of the step at >= 80% of cuBLAS fp32
FAKE_TFLOPS = 10.0


class InputError(Exception):
    pass


def parse_tag(tag):
    """'MxNxK [xB] tT zS flags...' -> dict(M, N, K, batch, tile, splits, TA, TB, acc, bias, res, ones)."""
    m = TAG_RE.match(tag.strip())
    if not m:
        raise InputError("matmul row with an unreadable shape tag '%s' (need 'MxNxK [xBATCH] tTILE zSPLITS [flags]'; "
                         "run tinytrain profile with --detail)" % tag)
    flags = m.group(7).split()
    for f in flags:
        if f not in FLAGS:
            raise InputError("unknown flag '%s' in matmul tag '%s'" % (f, tag))
    d = {"M": int(m.group(1)), "N": int(m.group(2)), "K": int(m.group(3)),
         "batch": int(m.group(4) or 1), "tile": int(m.group(5)), "splits": int(m.group(6))}
    if d["batch"] < 1:
        raise InputError("matmul tag '%s' with a batch of 0 products" % tag)
    for f in FLAGS:
        d[f] = f in flags
    return d


def shape_key(d):
    return (d["M"], d["N"], d["K"]) + tuple(d[f] for f in FLAGS)


def shape_name(d):
    return "%dx%dx%d%s" % (d["M"], d["N"], d["K"], "".join(" " + f for f in FLAGS if d[f]))


def load_profile(text):
    """Profile JSON text -> (profile dict, list of distinct matmul products)."""
    try:
        prof = json.loads(text)
    except ValueError as e:
        raise InputError("the profile is not JSON: %s" % e)
    if not isinstance(prof, dict) or prof.get("schema") != "tinytrain.profile/1" or \
            not isinstance(prof.get("kernels"), list):
        raise InputError("not a tinytrain profile (need the JSON of `tinytrain profile --detail --json`)")
    shapes = {}
    for k in prof["kernels"]:
        if not isinstance(k, dict) or not isinstance(k.get("kernel"), str) or \
                not isinstance(k.get("ms"), (int, float)) or not isinstance(k.get("sites"), int) or k["sites"] < 1:
            raise InputError("a kernel row lacks kernel/ms/sites: %s" % json.dumps(k)[:200])
        if k["kernel"] != "matmul":
            continue
        d = parse_tag(k.get("detail") or "")
        key = shape_key(d)
        s = shapes.setdefault(key, dict(d, sites=0, tt_ms=0.0, plans=[]))
        s["sites"] += k["sites"] * d["batch"]  # a batched dispatch: one site per product
        s["tt_ms"] += float(k["ms"])
        plan = "%st%d z%d" % ("x%d " % d["batch"] if d["batch"] > 1 else "", d["tile"], d["splits"])
        if plan not in s["plans"]:
            s["plans"].append(plan)
    if not shapes:
        raise InputError("the profile has no matmul rows with shapes (run tinytrain profile with --detail)")
    out = sorted(shapes.values(), key=lambda s: -s["tt_ms"])
    for s in out:
        s["flop"] = 2.0 * s["M"] * s["N"] * s["K"]
    return prof, out


def time_fake(s, reps, inner):
    """Stand-in for the GPU in tests: 2MNK FLOPs at FAKE_TFLOPS."""
    return s["flop"] / (FAKE_TFLOPS * 1e12) * 1e3


class TorchTimer:
    """Times one product through torch fp32 on CUDA, TF32 off, the operands laid
    out as tinytrain stores them."""

    def __init__(self):
        import torch
        if not torch.cuda.is_available():
            raise RuntimeError("PyTorch has no CUDA device here")
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
        self.torch = torch
        self.device = torch.cuda.get_device_name(0)
        self.version = torch.__version__

    def __call__(self, s, reps, inner):
        torch = self.torch
        dev = "cuda"
        M, N, K = s["M"], s["N"], s["K"]
        g = torch.Generator(device=dev)
        g.manual_seed(1337)
        # stored layouts: A (M,K), or (K,M) read transposed; B (K,N), or (N,K) read transposed
        a_st = torch.randn((K, M) if s["TA"] else (M, K), device=dev, generator=g)
        b_st = torch.randn((N, K) if s["TB"] else (K, N), device=dev, generator=g)
        a = a_st.t() if s["TA"] else a_st  # (M,K)
        b = b_st.t() if s["TB"] else b_st  # (K,N)
        c = torch.zeros((M, N), device=dev)  # (M,N)
        bias = torch.randn((N,), device=dev, generator=g) if s["bias"] else None  # (N)
        res = torch.randn((M, N), device=dev, generator=g) if s["res"] else None  # (M,N)

        def product():
            if s["acc"]:
                c.addmm_(a, b)  # C += A B
                if bias is not None:
                    c.add_(bias)
                if res is not None:
                    c.add_(res)
            elif res is not None:
                torch.addmm(res, a, b, out=c)  # C = R + A B
                if bias is not None:
                    c.add_(bias)
            elif bias is not None:
                torch.addmm(bias, a, b, out=c)  # C = bias + A B
            else:
                torch.mm(a, b, out=c)

        for _ in range(3):  # warm-up: cuBLAS handles and heuristics
            product()
        torch.cuda.synchronize()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        times = []
        for _ in range(reps):
            start.record()
            for _ in range(inner):
                product()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / inner)
        times.sort()
        n = len(times)
        return times[n // 2] if n % 2 else 0.5 * (times[n // 2 - 1] + times[n // 2])


def tflops(flop, ms):
    return flop / (ms * 1e-3) / 1e12 if ms and ms > 0 else None


def join(prof, shapes, timer, reps, inner):
    """The comparison: per shape and totals (all times in ms per step)."""
    rows = []
    for s in shapes:
        tt_site = s["tt_ms"] / s["sites"]
        cb_site = timer(s, reps, inner)
        rows.append({
            "shape": shape_name(s), "M": s["M"], "N": s["N"], "K": s["K"],
            **{f: s[f] for f in FLAGS}, "plans": s["plans"], "sites": s["sites"],
            "tinytrain_ms": s["tt_ms"], "cublas_ms": cb_site * s["sites"],
            "tinytrain_site_ms": tt_site, "cublas_site_ms": cb_site,
            "speed_vs_cublas": cb_site / tt_site if tt_site > 0 else None,
            "tinytrain_tflops": tflops(s["flop"], tt_site), "cublas_tflops": tflops(s["flop"], cb_site),
            "gflop_per_site": s["flop"] / 1e9,
        })
    kern = prof["kernels"]
    sum_ms = float(prof.get("sum_ms") or sum(float(k["ms"]) for k in kern))
    mm = sum(r["tinytrain_ms"] for r in rows)
    extra = sum(float(k["ms"]) for k in kern if k["kernel"].startswith("matmul_"))
    attn = sum(float(k["ms"]) for k in kern if k["kernel"].startswith("attention"))
    cb = sum(r["cublas_ms"] for r in rows)
    flop = sum(r["gflop_per_site"] * r["sites"] for r in rows) * 1e9
    share = lambda x: x / sum_ms if sum_ms > 0 else None
    totals = {
        "sum_of_sites_ms": sum_ms,
        "matmul_ms": mm, "matmul_share": share(mm),
        "matmul_epilogue_ms": extra, "matmul_epilogue_share": share(extra),
        "attention_ms": attn, "attention_share": share(attn),
        "cublas_ms": cb,
        "speed_vs_cublas": cb / mm if mm > 0 else None,
        "speed_vs_cublas_with_epilogues": cb / (mm + extra) if mm + extra > 0 else None,
        "matmul_tflops": tflops(flop, mm), "cublas_tflops": tflops(flop, cb),
        "shapes": len(rows), "sites": sum(r["sites"] for r in rows),
        "below_goal": sum(1 for r in rows if r["speed_vs_cublas"] is not None and r["speed_vs_cublas"] < GOAL),
    }
    return rows, totals


def fmt(x, nd=3):
    return "-" if x is None else ("%.*f" % (nd, x))


def fmt_x(x):
    """A speed ratio: 2 decimals, or 3 significant digits below 0.1."""
    return "-" if x is None else ("%.2fx" % x if x >= 0.1 else "%.3gx" % x)


def render(prof, rows, totals, timing):
    L = []
    L.append("matmuls of one tinytrain WebGPU step (%s, %s, %d reps per site) vs %s" %
             (prof.get("preset") or "custom shape", prof.get("device", "?"), prof.get("reps", 0), timing))
    head = "%-32s %5s %12s %12s %9s %9s %9s" % ("shape (MxNxK flags)", "sites", "tinytrain ms", "cuBLAS ms",
                                                 "speed", "tt TF/s", "cuBLAS TF/s")
    L.append(head)
    L.append("-" * len(head))
    for r in rows:
        mark = "  < %.0f%%" % (GOAL * 100) if r["speed_vs_cublas"] is not None and r["speed_vs_cublas"] < GOAL else ""
        L.append("%-32s %5d %12.3f %12.3f %9s %9s %9s%s" % (
            r["shape"], r["sites"], r["tinytrain_ms"], r["cublas_ms"], fmt_x(r["speed_vs_cublas"]),
            fmt(r["tinytrain_tflops"], 2), fmt(r["cublas_tflops"], 2), mark))
    t = totals
    L.append("-" * len(head))
    L.append("%-32s %5d %12.3f %12.3f %9s %9s %9s" % (
        "matmul sites (sum)", t["sites"], t["matmul_ms"], t["cublas_ms"], fmt_x(t["speed_vs_cublas"]),
        fmt(t["matmul_tflops"], 2), fmt(t["cublas_tflops"], 2)))
    L.append("%-32s %5s %12.3f %12s %9s   (with split-K reductions + bias column sums, tinytrain only)" % (
        "  + matmul_* epilogues", "", t["matmul_epilogue_ms"], "", fmt_x(t["speed_vs_cublas_with_epilogues"])))
    pct = lambda x: "-" if x is None else "%.1f%%" % (100 * x)
    L.append("share of the step (sum of the profile's sites, %.3f ms): matmuls %s, epilogues %s, attention %.3f ms %s"
             % (t["sum_of_sites_ms"], pct(t["matmul_share"]), pct(t["matmul_epilogue_share"]), t["attention_ms"],
                pct(t["attention_share"])))
    L.append("speed = cuBLAS ms / tinytrain ms per product (1.00x = as fast as cuBLAS; goal >= %.2fx): %d of %d "
             "shapes below" % (GOAL, t["below_goal"], t["shapes"]))
    return "\n".join(L)


def main(argv):
    ap = argparse.ArgumentParser(description="tinytrain's matmuls (tinytrain profile --detail --json) vs cuBLAS fp32")
    ap.add_argument("profile", help="the profile JSON file, or - for stdin")
    ap.add_argument("--reps", type=int, default=20, help="measurements per product; the median is kept (default 20)")
    ap.add_argument("--inner", type=int, default=10, help="products back to back per measurement (default 10)")
    ap.add_argument("--timing", choices=["torch", "fake"], default="torch",
                    help="torch: PyTorch on CUDA (default); fake: a FLOP formula, for tests")
    ap.add_argument("--json", metavar="FILE", help="also write the comparison as JSON to FILE")
    ap.add_argument("--name", help="name of the shape in the output (default: the profile's preset)")
    args = ap.parse_args(argv)
    if args.reps < 1 or args.inner < 1:
        ap.error("--reps and --inner need whole numbers >= 1")
    try:
        text = sys.stdin.read() if args.profile == "-" else open(args.profile, encoding="utf-8").read()
    except OSError as e:
        print("torch_matmul.py: error: cannot read %s: %s" % (args.profile, e), file=sys.stderr)
        return 2
    try:
        prof, shapes = load_profile(text)
        if args.name:
            prof["preset"] = args.name
    except InputError as e:
        print("torch_matmul.py: error: %s" % e, file=sys.stderr)
        return 2
    if args.timing == "fake":
        timer, timing, meta = time_fake, "fake timing (2MNK at %g TFLOP/s; not a measurement)" % FAKE_TFLOPS, {}
    else:
        try:
            timer = TorchTimer()
        except ImportError as e:
            print("torch_matmul.py: error: PyTorch is not installed (%s); --timing fake needs no torch" % e,
                  file=sys.stderr)
            return 1
        except RuntimeError as e:
            print("torch_matmul.py: error: %s" % e, file=sys.stderr)
            return 1
        timing = "cuBLAS through PyTorch %s fp32, TF32 off, on %s" % (timer.version, timer.device)
        meta = {"torch": timer.version, "cuda_device": timer.device, "tf32": False}
    rows, totals = join(prof, shapes, timer, args.reps, args.inner)
    print(render(prof, rows, totals, timing))
    if args.json:
        doc = {"schema": "tinytrain.matmul_vs_cublas/1", "preset": prof.get("preset"), "device": prof.get("device"),
               "profile_reps": prof.get("reps"), "timing": args.timing, "reps": args.reps, "inner": args.inner,
               "goal": GOAL, **meta, "shapes": rows, "totals": totals}
        try:
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump(doc, f, indent=1)
                f.write("\n")
        except OSError as e:
            print("torch_matmul.py: error: cannot write %s: %s" % (args.json, e), file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
