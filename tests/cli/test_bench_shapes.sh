#!/usr/bin/env bash
# test_bench_shapes.sh — the compute-bound rows of the speed curve
# (bench/curve.sh shape rows, bench/shapes.sh, bench/torch_step.py,
# report.mjs's "Compute-bound shapes" table), on a tiny --shape so it runs
# here. Checks the FORMAT and the bookkeeping, never a speed:
#   - a --shape row runs on cpu (and webgpu where there is an adapter) with
#     the shape's dimensions, named by the shape, marked shape: true; PyTorch
#     cells are results or skipped with a reason;
#   - tinytrain and PyTorch count the same FLOPs: tinytrain's gflop_per_step
#     (tt_config_step_flops) equals torch_step.py's step_flops for the same
#     shape, and gpt2b8 is the gpt2 preset (same dimensions, same FLOPs as
#     `tinytrain info`);
#   - report.md has the compute-bound table with ms and TFLOP/s per cell;
#   - bad --shape / --shape-steps / torch_step.py --shape exit 2.
set -uo pipefail
src=${TT_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$src/tests/support/cli_lib.sh" bench-shapes
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 not found"; exit 0; }
command -v node >/dev/null 2>&1 || { echo "SKIP: node not found (report.mjs needs it)"; exit 0; }
curve=$src/bench/curve.sh
step=$src/bench/torch_step.py
make_text corpus.txt

TINYTRAIN=$T bash "$curve" --shape mini:1,32,2,16,8 --presets mini --backends cpu,webgpu,torch-cuda,torch-cpu \
    --shape-steps 10 --shape-warmup 1 --min-time 0 --data corpus.txt --out out > curve.out 2>&1
rc=$?
sed 's/^/     | /' curve.out | tail -12
[ $rc -eq 0 ] && ok "curve.sh with a --shape row exits 0" || bad "curve.sh --shape exits 0 (rc $rc)"
python3 "$step" --flops-only --shape mini:1,32,2,16,8 > flops.json 2> flops.err
[ $? -eq 0 ] && ok "torch_step.py --flops-only runs without torch" || bad "torch_step.py --flops-only ($(cat flops.err))"

python3 - out/results.jsonl flops.json <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
fl = json.loads(open(sys.argv[2]).readline())
fails = 0
def check(c, m):
    global fails
    print(("ok   " if c else "FAIL ") + m)
    fails += not c
cells = {(r["label"], r["preset"]): r for r in rows if r["kind"] in ("result", "skipped")}
check(sorted(cells) == sorted((b, "mini") for b in ("cpu", "webgpu", "torch-cuda", "torch-cpu")),
      "one cell per backend for the shape (%s)" % sorted(cells))
check(all(r.get("shape") is True for r in cells.values()), "every cell of the shape is marked shape: true")
check(all(r["kind"] == "result" or len(r.get("reason", "")) > 5 for r in cells.values()), "skipped cells carry a reason")
cpu = cells.get(("cpu", "mini"), {})
check(cpu.get("kind") == "result", "the native CPU cell ran")
m = cpu.get("model", {})
check([m.get(k) for k in ("layers", "d_model", "heads", "ctx", "batch")] == [1, 32, 2, 16, 8],
      "it ran the shape's dimensions (%s)" % m)
check(cpu.get("warmup_steps") == 1 and cpu.get("measured_steps", 0) >= 10, "with the shape steps (1 warm-up, >= 10)")
res = [r for r in cells.values() if r["kind"] == "result"]
# (gflop_per_step is printed to 6 decimals of a GFLOP: 500 FLOPs of rounding)
same = all(abs(r["gflop_per_step"] * 1e9 - fl["step_flops"]) <= 500 + 1e-9 * fl["step_flops"] for r in res)
check(fl["step_flops"] > 0 and same,
      "every result counts the FLOPs of torch_step.py's formula (%.6g; %s)" % (fl["step_flops"],
      ", ".join("%s %.6g" % (r["label"], r["gflop_per_step"] * 1e9) for r in res)))
# (gflops is printed to 3 decimals, gflop_per_step to 6, the median to 4 decimals of a ms)
check(all(abs(r["gflops"] - r["gflop_per_step"] / (r["ms_per_step"]["median"] * 1e-3)) <= 1e-3 + 2e-3 * r["gflops"] for r in res),
      "GFLOP/s = FLOPs / median step on every result")
machine = [r for r in rows if r["kind"] == "machine"]
check(len(machine) == 1 and machine[0].get("shape_steps") == 10 and machine[0].get("shape_warmup") == 1,
      "the machine row records the shape steps")
sys.exit(1 if fails else 0)
EOF
[ $? -eq 0 ] && ok "results.jsonl: shape rows" || bad "results.jsonl: shape rows"

if grep -q '^## Compute-bound shapes' out/report.md &&
   grep -qE '^\| mini \| 1 / 32 / 2 / 16 / 8 \| 128 \| [0-9.]+ \| .*[0-9.]+ \([0-9.]+\)' out/report.md; then
    ok "report.md: the compute-bound table has the shape with ms (TFLOP/s)"
else
    bad "report.md: compute-bound table"; sed -n '/Compute-bound/,/^TFLOP/p' out/report.md
fi

# gpt2b8 is the gpt2 preset: same dimensions, same FLOPs on both sides
. "$src/bench/shapes.sh"
read -r L C H Tc B <<< "$(tt_shape_dims gpt2b8)"
python3 "$step" --flops-only --shape "gpt2b8:$L,$C,$H,$Tc,$B" > g.json
"$T" info --json > info.json
python3 - info.json g.json <<'EOF'
import json, sys
p = next(p for p in json.load(open(sys.argv[1]))["presets"] if p["name"] == "gpt2")
g = json.loads(open(sys.argv[2]).readline())
m = p["model"]
ok = [m[k] for k in ("layers", "d_model", "heads", "ctx", "batch")] == [g[k] for k in ("layers", "d_model", "heads", "ctx", "batch")]
ok = ok and abs(p["step_flops"] - g["step_flops"]) <= 1e-9 * p["step_flops"]
sys.exit(0 if ok else 1)
EOF
[ $? -eq 0 ] && ok "gpt2b8 = the gpt2 preset (dimensions, FLOPs of tinytrain info = torch_step.py)" || bad "gpt2b8 vs the gpt2 preset"
tt_shape_dims shakespeare > /dev/null && [ "$(tt_shape_dims shakespeare)" = "6 384 6 256 64" ] &&
    ok "shakespeare is nanoGPT's shakespeare_char shape" || bad "the shakespeare shape"

# errors
for args in "--shape mini:1,32,2,16" "--shape tiny:1,32,2,16,8" "--shape Bad:1,2,3,4,5" "--shape-steps 5"; do
    TINYTRAIN=$T bash "$curve" $args --backends cpu --out e > e.out 2> e.err
    rc=$?
    [ $rc -eq 2 ] && grep -q '^curve.sh: error: ' e.err && ok "curve.sh $args: exit 2" || bad "curve.sh $args: exit 2 (rc $rc: $(cat e.err))"
done
for s in "x:1,2,3" "x:1,32,3,16,8" "x:0,32,2,16,8"; do
    python3 "$step" --flops-only --shape "$s" > /dev/null 2> e.err
    [ $? -eq 2 ] && ok "torch_step.py --shape $s: exit 2" || bad "torch_step.py --shape $s: exit 2"
done

echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
