#!/usr/bin/env bash
# ab.sh — the matmul kernel variants of dev/matmul/ against the product
# kernel on the GPU host, in one device call: builds dev_matmul_bench and
# bench_webgpu (Release), writes the variant kernel directories
# (make_variants.sh), then, in rounds (base, v1, .., vN, then vN, .., v1,
# base, and so on: drift of the clocks hits every configuration alike):
#   - every matmul product of the training step at gpt2 (12 layers, d 768,
#     ctx 1024, batch 8: 8192 rows) and at the shakespeare_char shape
#     (6 layers, d 384, ctx 256, batch 64: 16384 rows), planned tile and
#     split-K as in the step (build/dev_matmul_bench: ms per product, split-K
#     reduction included);
#   - the whole gpt2 step (build/bench_webgpu gpt2 STEPS 0, synchronous:
#     the median ms per step), step-rounds rounds, then base once more
#     while the budget lasts;
# and prints one table: per product ms and TFLOP/s of base, each variant's
# ms and its ratio to base (< 1 is faster), the per-step matmul total
# (each product times its count in the step) and the step time.
#
#   bash dev/matmul/ab.sh [--variants "bk8 interior remap all"] [--rounds 2]
#        [--step-rounds 1] [--budget 130] [--steps 5] [--smoke]
#
# --budget: seconds after which no further run starts (the build counts;
# default 130, with --smoke 900);
# each run also has its own timeout. --smoke: tiny products and the tiny
# preset (checks the script on a machine without a GPU, e.g. lavapipe).
# Environment: TINYTRAIN_WEBGPU_LIB (Dawn), as for every WebGPU run.
# Writes the variants and its raw outputs (out/) to build/dev-matmul-ab/. Exit 1 if the build fails.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
variants="bk8 interior remap all" rounds=2 srounds=1 budget= steps=5 smoke=0
while [ $# -gt 0 ]; do
  case "$1" in
    --variants) variants=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --step-rounds) srounds=$2; shift ;;
    --budget) budget=$2; shift ;;
    --steps) steps=$2; shift ;;
    --smoke) smoke=1 ;;
    -h|--help) sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "ab.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$budget" ] || { budget=130; [ $smoke = 1 ] && budget=900; }
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
if [ -z "${VK_DRIVER_FILES:-}" ]; then
  for icd in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json; do
    [ -f $icd ] && export VK_DRIVER_FILES=$icd && break
  done
fi

echo "== build ($(el) s)"
jobs=$(nproc 2>/dev/null || echo 4)
if ! { timeout 120 cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null &&
       timeout 120 cmake --build build -j"$jobs" --target dev_matmul_bench bench_webgpu >build/ab-build.log 2>&1; }; then
  echo "ab.sh: build failed:"; tail -20 build/ab-build.log 2>/dev/null; exit 1
fi
bash dev/matmul/make_variants.sh build/dev-matmul-ab >/dev/null || { echo "ab.sh: make_variants.sh failed"; exit 1; }
out=build/dev-matmul-ab/out
rm -rf "$out"; mkdir -p "$out"
echo "built in $(el) s"

# name count spec (count: times the product runs in one training step)
if [ $smoke = 1 ]; then
  preset=tiny reps=2 trials=1 mm_to=300 step_to=300
  specs="t.fwd 2 128,128,64,0,0,b
t.fwd_res 1 96,64,80,0,0,br
t.dx 2 128,96,64,0,1
t.dw 2 64,96,512,1,0,a"
else
  preset=gpt2 reps=10 trials=5 mm_to=60 step_to=60
  specs="g.fwd.qkv 36 8192,768,768,0,0,b
g.fwd.attn_proj 12 8192,768,768,0,0,br
g.fwd.fc 12 8192,3072,768,0,0,b
g.fwd.mlp_proj 12 8192,768,3072,0,0,br
g.fwd.lm_head 1 8192,256,768,0,1
g.bwd.lm_head.dx 1 8192,768,256,0,0
g.bwd.lm_head.dw 1 256,768,8192,1,0,a
g.bwd.mlp_proj.dx 12 8192,3072,768,0,1
g.bwd.mlp_proj.dw 12 3072,768,8192,1,0,a
g.bwd.fc.dx 12 8192,768,3072,0,1
g.bwd.fc.dw 12 768,3072,8192,1,0,a
g.bwd.proj_q.dx 24 8192,768,768,0,1
g.bwd.kv.dx 24 8192,768,768,0,1,a
g.bwd.attn.dw 48 768,768,8192,1,0,a
s.fwd.qkv 18 16384,384,384,0,0,b
s.fwd.attn_proj 6 16384,384,384,0,0,br
s.fwd.fc 6 16384,1536,384,0,0,b
s.fwd.mlp_proj 6 16384,384,1536,0,0,br
s.fwd.lm_head 1 16384,256,384,0,1
s.bwd.lm_head.dx 1 16384,384,256,0,0
s.bwd.lm_head.dw 1 256,384,16384,1,0,a
s.bwd.mlp_proj.dx 6 16384,1536,384,0,1
s.bwd.mlp_proj.dw 6 1536,384,16384,1,0,a
s.bwd.fc.dx 6 16384,384,1536,0,1
s.bwd.fc.dw 6 384,1536,16384,1,0,a
s.bwd.proj_q.dx 12 16384,384,384,0,1
s.bwd.kv.dx 12 16384,384,384,0,1,a
s.bwd.attn.dw 24 384,384,16384,1,0,a"
fi
echo "$specs" > "$out/specs.txt"
speclist=$(echo "$specs" | awk '{print $3}')
cfgs="base $variants"
for v in $variants; do
  [ -f build/dev-matmul-ab/$v/matmul.wgsl ] || { echo "ab.sh: no variant $v (make_variants.sh knows: $(bash dev/matmul/make_variants.sh /tmp/ab-names.$$ | tr '\n' ' '))"; rm -rf /tmp/ab-names.$$; exit 2; }
done

# run KIND CFG ROUND TIMEOUT CMD...: one run unless the budget is spent
# (it must leave room for the longest run of its kind so far)
declare -A longest
run() {
  local kind=$1 cfg=$2 r=$3 to=$4; shift 4
  local need=${longest[$kind]:-10}
  if [ $(( $(el) + need )) -gt "$budget" ]; then echo "  skip $kind $cfg round $r: budget ($(el) s spent, ~$need s needed)"; return; fi
  local dir= s=$(date +%s)
  [ "$cfg" != base ] && dir=$root/build/dev-matmul-ab/$cfg
  env ${dir:+TT_WEBGPU_WGSL_DIR=$dir} TT_BENCH_PIPELINED=0 timeout "$to" "$@" > "$out/$kind.$cfg.$r" 2> "$out/$kind.$cfg.$r.err"
  local rc=$? d=$(( $(date +%s) - s ))
  [ "$d" -gt "${longest[$kind]:-0}" ] && longest[$kind]=$d
  if [ $rc != 0 ]; then echo "  $kind $cfg round $r: FAILED (exit $rc$([ $rc = 124 ] && echo ', timeout')): $(tail -1 "$out/$kind.$cfg.$r.err")"
  else echo "  $kind $cfg round $r: ${d} s"; fi
}

# round r of the products, then round r of the step, and so on (so a spent
# budget still leaves whole rounds of both); even rounds in reverse order;
# the base step once more at the end
rcfgs=$(echo $cfgs | tr ' ' '\n' | tac | tr '\n' ' ')
last=$rounds; [ "$srounds" -gt "$last" ] && last=$srounds
for r in $(seq 1 "$last"); do
  order=$cfgs; [ $((r % 2)) = 0 ] && order=$rcfgs
  if [ "$r" -le "$rounds" ]; then
    echo "== matmul products, round $r: $order ($(el) s)"
    for c in $order; do run mm "$c" "$r" "$mm_to" ./build/dev_matmul_bench reps=$reps trials=$trials $speclist; done
  fi
  if [ "$r" -le "$srounds" ]; then
    echo "== whole step, round $r: bench_webgpu $preset $steps 0 ($(el) s)"
    for c in $order; do run step "$c" "$r" "$step_to" ./build/bench_webgpu "$preset" "$steps" 0; done
  fi
done
echo "== whole step: base again ($(el) s)"
run step base $((srounds + 1)) "$step_to" ./build/bench_webgpu "$preset" "$steps" 0
grep -h '^# adapter' "$out"/mm.base.1 2>/dev/null | head -1

python3 - "$out" "$rounds" "$cfgs" "$srounds" > "$out/table.txt" <<'PY'
import sys, os, re
out, rounds, cfgs, srounds = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), int(sys.argv[4])
specs = [l.split() for l in open(os.path.join(out, 'specs.txt')) if l.strip()]
def mean(xs):
    return sum(xs) / len(xs) if xs else None
# ms[cfg][spec] = list over rounds; tag[spec] from base
ms, tag, step = {}, {}, {}
for c in cfgs:
    ms[c], step[c] = {}, []
    for r in range(1, max(rounds, srounds + 1) + 1):
        p = os.path.join(out, 'mm.%s.%d' % (c, r))
        if os.path.exists(p):
            for l in open(p):
                f = l.split()
                if len(f) == 4 and not l.startswith('#'):
                    try: ms[c].setdefault(f[0], []).append(float(f[2]))
                    except ValueError: pass
                    if c == 'base': tag[f[0]] = f[1].replace('_', ' ')
        p = os.path.join(out, 'step.%s.%d' % (c, r))
        if os.path.exists(p):
            m = re.search(r'step median ([0-9.]+) ms', open(p).read())
            if m: step[c].append(float(m.group(1)))
def fmt(x, w, d):
    return ('%*.*f' % (w, d, x)) if x is not None else '%*s' % (w, '-')
vs = cfgs[1:]
print()
print('ms per product: mean over rounds of the median of trials; x/base < 1 is faster; TF = TFLOP/s')
hdr = '%-20s %5s %-28s %8s %6s' % ('product', 'count', 'M x N x K (base plan)', 'base ms', 'TF')
for v in vs: hdr += ' %11s %6s %6s' % (v[:8] + ' ms', 'TF', 'x/base')
print(hdr)
tot = {}
for name, count, sp in specs:
    M, N, K = [int(x) for x in sp.split(',')[:3]]
    fl = 2.0 * M * N * K
    b = mean(ms['base'].get(sp, []))
    line = '%-20s %5s %-28s %8s %6s' % (name, count, tag.get(sp, sp)[:28], fmt(b, 8, 4), fmt(fl / b * 1e-9 if b else None, 6, 1))
    grp = name.split('.')[0]
    for c in cfgs:
        x = mean(ms[c].get(sp, []))
        t = tot.setdefault((grp, c), [0.0, True])
        if x is None: t[1] = False
        else: t[0] += int(count) * x
        if c == 'base': continue
        line += ' %11s %6s %6s' % (fmt(x, 11, 4), fmt(fl / x * 1e-9 if x else None, 6, 1), fmt(x / b if x and b else None, 6, 3))
    print(line)
print()
print('matmul ms per training step (each product x its count; "-" where a run is missing)')
for grp in sorted(set(g for g, _ in tot)):
    b = tot[(grp, 'base')]
    line = '  %-6s base %9s' % (grp, fmt(b[0] if b[1] else None, 9, 2))
    for v in vs:
        t = tot[(grp, v)]
        x = t[0] if t[1] else None
        line += '   %s %9s (%s)' % (v, fmt(x, 9, 2), fmt(x / b[0] if x is not None and b[1] and b[0] else None, 5, 3))
    print(line)
print()
b = mean(step['base'])
line = 'whole step (bench_webgpu, synchronous median ms per run, mean of runs): base %s' % fmt(b, 8, 2)
if step['base']: line += ' [' + ' '.join('%.2f' % x for x in step['base']) + ']'
print(line)
for v in vs:
    x = mean(step[v])
    print('  %-10s %8s  x/base %s  [%s]' % (v, fmt(x, 8, 2), fmt(x / b if x and b else None, 6, 3), ' '.join('%.2f' % y for y in step[v])))
PY
cat "$out/table.txt"
[ -n "${OUT:-}" ] && [ -d "$OUT" ] && cp -r "$out" "$OUT/matmul-ab" 2>/dev/null
echo "ab.sh: done in $(el) s (raw outputs in $out${OUT:+, copied to \$OUT/matmul-ab})"
