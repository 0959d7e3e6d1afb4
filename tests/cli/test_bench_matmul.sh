#!/usr/bin/env bash
# test_bench_matmul.sh — the per-matmul cuBLAS comparison (bench/torch_matmul.py,
# bench/matmul_vs_cublas.sh) without a GPU or torch: its parsing, joining,
# totals and tables on a real `tinytrain profile --detail --json` (the fixture
# tests/cli/data/profile_tiny.json, and a live profile when WebGPU is there),
# with the fake timing backend (--timing fake: 2MNK FLOPs at 10 TFLOP/s).
# Every expected value is recomputed here from the profile, independently of
# the script: each product of the profile once, its sites and time summed over
# the rows of its shape, transposes/flags from the tag, the fake cuBLAS time,
# speed ratios, TFLOP/s, the totals and shares, the JSON matching the table.
# Errors: unreadable input, a profile without shapes, an unknown tag flag,
# bad options exit 2 with one clear line; --timing torch without torch exits 1.
set -uo pipefail
src=${TT_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$src/tests/support/cli_lib.sh" bench-matmul
PY=python3
command -v $PY >/dev/null 2>&1 || { echo "SKIP: python3 not found"; exit 0; }
mm=$src/bench/torch_matmul.py
fixture=$src/tests/cli/data/profile_tiny.json

# verify PROFILE JSON TABLE: independent recomputation of every number
verify() {
    $PY - "$1" "$2" "$3" <<'EOF'
import json, re, sys
prof = json.load(open(sys.argv[1])); out = json.load(open(sys.argv[2])); table = open(sys.argv[3]).read()
fails = 0
def check(cond, msg):
    global fails
    print(("ok   " if cond else "FAIL ") + msg)
    if not cond: fails += 1
close = lambda a, b: abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))
# expected products: group the profile's matmul rows by "MxNxK" + flags (batch/tile/splits dropped);
# a batched row ("MxNxK xB tT zS ...") counts B sites per dispatch
exp = {}
for k in prof["kernels"]:
    if k["kernel"] != "matmul": continue
    parts = k["detail"].split()
    nb = 1
    if len(parts) > 1 and re.fullmatch(r"x\d+", parts[1]):
        nb = int(parts[1][1:]); parts = [parts[0]] + parts[2:]
    key = " ".join([parts[0]] + parts[3:])
    e = exp.setdefault(key, {"sites": 0, "ms": 0.0, "flags": set(parts[3:]), "mnk": [int(x) for x in parts[0].split("x")]})
    e["sites"] += k["sites"] * nb; e["ms"] += k["ms"]
rows = {r["shape"]: r for r in out["shapes"]}
check(len(out["shapes"]) == len(exp) and set(rows) == set(exp),
      "one row per distinct product of the profile (%d products from %d matmul rows)" %
      (len(exp), sum(1 for k in prof["kernels"] if k["kernel"] == "matmul")))
check(len(exp) >= 4 and any("TA" in e["flags"] for e in exp.values()) and any("bias" in e["flags"] for e in exp.values()),
      "the profile has transposed and bias products")
ok_rows = True
for key, e in exp.items():
    r = rows.get(key)
    if not r: ok_rows = False; continue
    M, N, K = e["mnk"]
    flop = 2.0 * M * N * K
    fake = flop / 10e12 * 1e3
    good = (r["M"], r["N"], r["K"]) == (M, N, K) and r["sites"] == e["sites"] and close(r["tinytrain_ms"], e["ms"]) \
        and all(r[f] == (f in e["flags"]) for f in ("TA", "TB", "acc", "bias", "res", "ones")) \
        and close(r["cublas_site_ms"], fake) and close(r["cublas_ms"], fake * e["sites"]) \
        and close(r["tinytrain_site_ms"], e["ms"] / e["sites"]) and close(r["cublas_tflops"], 10.0)
    if e["ms"] > 0:
        good = good and close(r["speed_vs_cublas"], fake / (e["ms"] / e["sites"])) \
            and close(r["tinytrain_tflops"], flop / (e["ms"] / e["sites"] * 1e-3) / 1e12)
    else:  # a site below the profile's resolution: no ratio rather than a division by zero
        good = good and r["speed_vs_cublas"] is None and r["tinytrain_tflops"] is None
    if not good: print("     row %s: %s" % (key, json.dumps(r))); ok_rows = False
check(ok_rows, "per product: sites and time summed over its rows, flags, fake cuBLAS time, speed, TFLOP/s")
t = out["totals"]
mm = sum(e["ms"] for e in exp.values())
epi = sum(k["ms"] for k in prof["kernels"] if k["kernel"].startswith("matmul_"))
att = sum(k["ms"] for k in prof["kernels"] if k["kernel"].startswith("attention"))
cb = sum(2.0 * e["mnk"][0] * e["mnk"][1] * e["mnk"][2] / 10e12 * 1e3 * e["sites"] for e in exp.values())
S = prof["sum_ms"]
check(epi > 0 and att > 0, "the profile has split-K/colsum epilogues and attention sites")
check(close(t["matmul_ms"], mm) and close(t["matmul_epilogue_ms"], epi) and close(t["attention_ms"], att) and close(t["cublas_ms"], cb),
      "totals: matmul %.3f, epilogues %.3f, attention %.3f, cuBLAS %.6f ms" % (mm, epi, att, cb))
check(close(t["matmul_share"], mm / S) and close(t["attention_share"], att / S) and close(t["matmul_epilogue_share"], epi / S),
      "shares of the profile's sum of sites")
check(mm > 0 and close(t["speed_vs_cublas"], cb / mm) and close(t["speed_vs_cublas_with_epilogues"], cb / (mm + epi)),
      "total speed vs cuBLAS, with and without the epilogues")
check(t["sites"] == sum(e["sites"] for e in exp.values()) and t["shapes"] == len(exp), "total sites and shapes")
below = sum(1 for r in out["shapes"] if r["speed_vs_cublas"] is not None and r["speed_vs_cublas"] < out["goal"])
check(t["below_goal"] == below, "shapes below the goal counted (%d)" % below)
lines = table.splitlines()
check(all(any(l.startswith(key + " ") and re.search(r"\s%d\s" % e["sites"], l) for l in lines) for key, e in exp.items()),
      "the table has a line per product with its sites")
check(sum(1 for l in lines if "< 80%" in l) == below, "the table marks the products below 80% of cuBLAS")
check(any(l.startswith("matmul sites (sum)") and ("%.3f" % mm) in l for l in lines) and
      any(l.startswith("share of the step") and ("%.1f%%" % (100 * att / S)) in l for l in lines),
      "the table has the totals line and the shares")
check(out["schema"] == "tinytrain.matmul_vs_cublas/1" and out["timing"] == "fake", "JSON schema and timing named")
sys.exit(1 if fails else 0)
EOF
}

# ---------------------------------------------------------------- the fixture
$PY "$mm" "$fixture" --timing fake --reps 3 --json fx.json > fx.txt 2> fx.err
rc=$?
[ $rc -eq 0 ] && ok "torch_matmul.py --timing fake on the fixture exits 0" || bad "fixture run exits 0 (rc $rc: $(cat fx.err))"
grep -q 'fake timing' fx.txt && ok "the table says the timing is fake" || bad "the table names the fake timing"
if verify "$fixture" fx.json fx.txt > v.out; then ok "fixture: every number recomputed"; else bad "fixture: recomputation"; fi
sed 's/^/     | /' v.out
$PY "$mm" - --timing fake < "$fixture" > stdin.txt 2>&1
cmp -s <(grep -v '^matmuls of' stdin.txt) <(grep -v '^matmuls of' fx.txt) && ok "reads the profile from stdin (-)" ||
    bad "stdin gives the same table"

# a product faster than the fake cuBLAS is not marked; a site that timed 0 ms has no ratio
$PY -c "
import json; p = json.load(open('$fixture'))
m = [k for k in p['kernels'] if k['kernel'] == 'matmul']
m[0]['ms'] = 1e-7; m[1]['ms'] = 0.0
json.dump(p, open('fast.json', 'w'))"
$PY "$mm" fast.json --timing fake --json fast.out.json > fast.txt 2> fast.err
if [ $? -eq 0 ] && verify fast.json fast.out.json fast.txt > v3.out; then ok "a fast product and a 0 ms site: every number recomputed"
else bad "a fast product and a 0 ms site"; sed 's/^/     | /' v3.out; cat fast.err; fi

# a batched site ("MxNxK x3 ...": three products in one dispatch) counts as three sites of its product
$PY -c "
import json; p = json.load(open('$fixture'))
k = next(k for k in p['kernels'] if k['kernel'] == 'matmul' and k['detail'].endswith(' bias'))
d = k['detail'].split(' ', 1); k['detail'] = d[0] + ' x3 ' + d[1]
json.dump(p, open('batch.json', 'w'))"
$PY "$mm" batch.json --timing fake --json batch.out.json > batch.txt 2> batch.err
if [ $? -eq 0 ] && verify batch.json batch.out.json batch.txt > v4.out; then ok "a batched (x3) site: every number recomputed"
else bad "a batched (x3) site"; sed 's/^/     | /' v4.out; cat batch.err; fi

# ---------------------------------------------------------------- errors
err2() { # err2 NAME STDIN-FILE ARGS...: exit 2, one line "torch_matmul.py: error: ..."
    local name=$1 in=$2; shift 2
    $PY "$mm" "$@" --timing fake < "$in" > e.out 2> e.err
    local rc=$?
    if [ $rc -eq 2 ] && grep -q '^torch_matmul.py: error: ' e.err && [ "$(grep -c . e.err)" -le 3 ]; then ok "$name"
    else bad "$name (rc $rc: $(head -c 300 e.err))"; fi
}
echo 'not json' > bad.json
err2 "not JSON: exit 2" /dev/null bad.json
echo '{"schema":"other"}' > other.json
err2 "not a profile: exit 2" /dev/null other.json
$PY -c "
import json; p = json.load(open('$fixture'))
for k in p['kernels']: k['detail'] = ''
json.dump(p, open('nodetail.json', 'w'))
p = json.load(open('$fixture'))
next(k for k in p['kernels'] if k['kernel'] == 'matmul')['detail'] += ' xyz'
json.dump(p, open('badflag.json', 'w'))"
err2 "a profile without --detail: exit 2" /dev/null nodetail.json
grep -q -- '--detail' e.err && ok "the message says to use --detail" || bad "the message names --detail"
err2 "an unknown tag flag: exit 2" /dev/null badflag.json
err2 "a missing file: exit 2" /dev/null does-not-exist.json
$PY "$mm" "$fixture" --reps 0 --timing fake > /dev/null 2> e.err; [ $? -eq 2 ] && ok "--reps 0: exit 2" || bad "--reps 0: exit 2"
if ! $PY -c 'import torch' 2> /dev/null; then
    $PY "$mm" "$fixture" > /dev/null 2> e.err
    rc=$?
    [ $rc -eq 1 ] && grep -q 'PyTorch is not installed' e.err && ok "--timing torch without torch: exit 1, says so" ||
        bad "--timing torch without torch (rc $rc: $(cat e.err))"
fi

# ---------------------------------------------------------------- live: matmul_vs_cublas.sh
"$T" info > info.out 2>&1
if grep -q '^webgpu ' info.out && ! grep -q '^webgpu  *unavailable' info.out; then
    TINYTRAIN=$T bash "$src/bench/matmul_vs_cublas.sh" --layers 1 --d-model 32 --heads 2 --ctx 16 --batch 8 \
        --timing fake --out live --reps 3 > live.out 2>&1
    rc=$?
    [ $rc -eq 0 ] && ok "matmul_vs_cublas.sh on a live profile exits 0" || bad "matmul_vs_cublas.sh exits 0 (rc $rc: $(tail -3 live.out))"
    if [ -s live/profile.json ] && verify live/profile.json live/matmul_vs_cublas.json live/matmul_vs_cublas.txt > v2.out; then
        ok "live profile: every number recomputed"
    else bad "live profile: recomputation"; sed 's/^/     | /' v2.out 2> /dev/null; fi
    # the live tags carry the step's flags: the forward products add a bias, the weight gradients accumulate
    grep -q '"detail": *"[0-9x]* t[0-9]* z[0-9]*[^"]* bias' live/profile.json &&
    grep -q '"detail": *"[0-9x]* t[0-9]* z[0-9]* TA acc ones"' live/profile.json &&
        ok "profile tags carry bias / acc / ones" || bad "profile tags carry bias / acc / ones"
    grep -q '"detail": *"[0-9]*x[0-9]*x[0-9]* x3 t[0-9]* z[0-9]* bias"' live/profile.json &&
        ok "the q, k, v projections are one batched site (x3)" || bad "the q, k, v projections are one batched site (x3)"
else
    echo "note: no WebGPU adapter: the live profile part is skipped"
fi
bash "$src/bench/matmul_vs_cublas.sh" tiny --timing nope > /dev/null 2> e.err
[ $? -eq 2 ] && grep -q 'timing' e.err && ok "matmul_vs_cublas.sh: bad --timing exits 2" || bad "matmul_vs_cublas.sh: bad --timing"

echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
