#!/usr/bin/env bash
# ab.sh — the matmul kernel variants of dev/matmul/ against the product
# kernel on the GPU host, in one device call: builds dev_matmul_check,
# dev_matmul_bench and tinytrain_hooks (Release), writes the variant kernel
# directories (make_variants.sh), then, each run only while the budget lasts:
#   1. bits: build/dev_matmul_check tiles=128,0 (44 small products on the
#      128 tile, where the options act, and on the planned tiles: every
#      transpose, split-K, epilogue, odd size) with the embedded kernels and
#      with each variant, the k loop as the GPU runs it; the output hashes
#      compared with cmp ("bit-identical" or "DIFFERENT");
#   2. the whole gpt2 step (build/tinytrain_hooks bench --backend webgpu
#      --preset gpt2 --steps STEPS --pipeline 0 on data/tinyshakespeare.txt,
#      synchronous: the median ms per step), round 1 in the order base v1 .. vN, round 2
#      in the reverse order (odd rounds forward, even rounds reversed, so
#      clock drift hits every configuration alike), then base once more;
#   3. every matmul product of the training step at gpt2 (12 layers, d 768,
#      ctx 1024, batch 8: 8192 rows) and at the shakespeare_char shape
#      (6 layers, d 384, ctx 256, batch 64: 16384 rows), planned tile and
#      split-K as in the step (build/dev_matmul_bench: ms per product, split-K
#      reduction included), in rounds ordered as the step's;
# and prints one table: the bits verdicts, per product ms and TFLOP/s of
# base, each variant's ms and its ratio to base (< 1 is faster), the
# per-step matmul total (each product times its count in the step), and the
# step medians of every round with their mean and ratio to base.
#
#   bash dev/matmul/ab.sh [--variants "pf db8 db16 kv"] [--rounds 2]
#        [--step-rounds 2] [--budget 240] [--steps 10] [--no-bits] [--smoke]
#
# --budget: seconds after which no further run starts (the build counts;
# a run starts only if the longest run of its kind so far still fits;
# default 240, with --smoke 1500); each run also has its own timeout.
# --smoke: tiny products, the tiny preset and the bits check on the 128
# tile only, loop form (checks the script on a machine without a GPU, e.g.
# lavapipe). Environment: TINYTRAIN_WEBGPU_LIB (Dawn), VK_DRIVER_FILES (set
# here to the NVIDIA ICD when unset and one is found).
# Writes the variants and its raw outputs (out/) to build/dev-matmul-ab/
# (copied to $OUT/matmul-ab when $OUT is a folder). Exit 1 if the build
# fails, 2 on a bad option or variant, 3 if a variant's bits differ.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
variants="pf db8 db16 kv" rounds=2 srounds=2 budget= steps=10 smoke=0 bits=1
while [ $# -gt 0 ]; do
  case "$1" in
    --variants) variants=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --step-rounds) srounds=$2; shift ;;
    --budget) budget=$2; shift ;;
    --steps) steps=$2; shift ;;
    --no-bits) bits=0 ;;
    --smoke) smoke=1 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "ab.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$budget" ] || { budget=240; [ $smoke = 1 ] && budget=1500; }
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
if [ -z "${VK_DRIVER_FILES:-}" ] && [ $smoke = 0 ]; then
  for icd in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json \
             /etc/vulkan/icd.d/nvidia_icd.json; do
    [ -f $icd ] && export VK_DRIVER_FILES=$icd && break
  done
fi

echo "== build ($(el) s)"
jobs=$(nproc 2>/dev/null || echo 4)
[ $smoke = 1 ] && jobs=2
mkdir -p build
if ! { timeout 150 cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >build/ab-build.log 2>&1 &&
       timeout 150 cmake --build build -j"$jobs" --target dev_matmul_check dev_matmul_bench tinytrain_hooks >>build/ab-build.log 2>&1; }; then
  echo "ab.sh: build failed:"; tail -20 build/ab-build.log 2>/dev/null; exit 1
fi
bash dev/matmul/make_variants.sh build/dev-matmul-ab >/dev/null || { echo "ab.sh: make_variants.sh failed"; exit 1; }
out=build/dev-matmul-ab/out
rm -rf "$out"; mkdir -p "$out"
echo "built in $(el) s"

# name count spec (count: times the product runs in one training step)
if [ $smoke = 1 ]; then
  preset=tiny reps=2 trials=1 mm_to=600 step_to=600 bits_to=900 bits_args="unroll=0 tiles=128"
  specs="t.fwd 2 128,128,64,0,0,b
t.fwd_res 1 96,64,80,0,0,br
t.dx 2 128,96,64,0,1
t.dw 2 64,96,512,1,0,a"
else
  preset=gpt2 reps=10 trials=5 mm_to=60 step_to=60 bits_to=60 bits_args="tiles=128,0"
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
# the whole step: the training loop's, synchronous (tinytrain bench)
step_cmd=(./build/tinytrain_hooks bench --backend webgpu --preset "$preset" --steps "$steps" --pipeline 0
          --data data/tinyshakespeare.txt)
cfgs="base $variants"
for v in $variants; do
  [ -f build/dev-matmul-ab/$v/matmul.wgsl ] || { echo "ab.sh: no variant $v (make_variants.sh knows: $(ls build/dev-matmul-ab | grep -v '^out$' | tr '\n' ' '))"; exit 2; }
done

# run KIND CFG ROUND TIMEOUT CMD...: one run unless the budget is spent
# (it must leave room for the longest run of its kind so far, or a first
# guess)
declare -A longest
longest=([bits]=8 [step]=20 [mm]=15)
run() {
  local kind=$1 cfg=$2 r=$3 to=$4; shift 4
  local need=${longest[$kind]}
  if [ $(( $(el) + need )) -gt "$budget" ]; then echo "  skip $kind $cfg round $r: budget ($(el) s spent, ~$need s needed)"; return 1; fi
  local dir= s=$(date +%s)
  [ "$cfg" != base ] && dir=$root/build/dev-matmul-ab/$cfg
  env ${dir:+TT_WEBGPU_WGSL_DIR=$dir} timeout "$to" "$@" > "$out/$kind.$cfg.$r" 2> "$out/$kind.$cfg.$r.err"
  local rc=$? d=$(( $(date +%s) - s ))
  [ "$d" -gt "${longest[$kind]}" ] && longest[$kind]=$d
  if [ $rc != 0 ]; then echo "  $kind $cfg round $r: FAILED (exit $rc$([ $rc = 124 ] && echo ', timeout')): $(tail -1 "$out/$kind.$cfg.$r.err")"
  else echo "  $kind $cfg round $r: ${d} s"; fi
  return $rc
}

# 1. bits: each variant's output hashes against the embedded kernel's
bitsbad=0
if [ $bits = 1 ]; then
  echo "== bits: build/dev_matmul_check $bits_args ($(el) s)"
  if run bits base 1 "$bits_to" ./build/dev_matmul_check $bits_args; then
    for v in $variants; do
      if run bits "$v" 1 "$bits_to" ./build/dev_matmul_check $bits_args; then
        n=$(grep -c hash "$out/bits.$v.1")
        if cmp -s "$out/bits.base.1" "$out/bits.$v.1"; then echo "bits $v: bit-identical to the embedded kernel ($n products)" >> "$out/bits.txt"
        else echo "bits $v: DIFFERENT from the embedded kernel" >> "$out/bits.txt"; bitsbad=1
             diff "$out/bits.base.1" "$out/bits.$v.1" | head -6 >> "$out/bits.txt"; fi
      elif [ -s "$out/bits.$v.1" ] || [ -s "$out/bits.$v.1.err" ]; then echo "bits $v: FAILED ($(tail -1 "$out/bits.$v.1.err"))" >> "$out/bits.txt"; bitsbad=1
      else echo "bits $v: not run (budget)" >> "$out/bits.txt"; fi
    done
  else
    echo "bits: the embedded kernel's run failed or was skipped; no verdict" >> "$out/bits.txt"
  fi
  sed 's/^/  /' "$out/bits.txt"
fi

# 2-4. the step rounds first (the deciding figure), the base step once
# more, then the product rounds; odd rounds base v1 .. vN, even rounds
# reversed
rcfgs=$(echo $cfgs | tr ' ' '\n' | tac | tr '\n' ' ')
last=$rounds; [ "$srounds" -gt "$last" ] && last=$srounds
for r in $(seq 1 "$srounds"); do
  order=$cfgs; [ $((r % 2)) = 0 ] && order=$rcfgs
  echo "== whole step, round $r: ${step_cmd[*]} ($(el) s)"
  for c in $order; do run step "$c" "$r" "$step_to" "${step_cmd[@]}"; done
done
echo "== whole step: base again ($(el) s)"
run step base $((srounds + 1)) "$step_to" "${step_cmd[@]}"
for r in $(seq 1 "$rounds"); do
  order=$cfgs; [ $((r % 2)) = 0 ] && order=$rcfgs
  echo "== matmul products, round $r: $order ($(el) s)"
  for c in $order; do run mm "$c" "$r" "$mm_to" ./build/dev_matmul_bench reps=$reps trials=$trials $speclist; done
done
grep -h '^# adapter' "$out"/mm.base.1 2>/dev/null | head -1

python3 - "$out" "$((last + 1))" "$cfgs" > "$out/table.txt" <<'PY'
import sys, os, re
out, last, cfgs = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
specs = [l.split() for l in open(os.path.join(out, 'specs.txt')) if l.strip()]
def mean(xs):
    return sum(xs) / len(xs) if xs else None
# ms[cfg][spec] = list over rounds; tag[spec] from base; step[cfg] = [(round, ms)]
ms, tag, step = {}, {}, {}
for c in cfgs:
    ms[c], step[c] = {}, []
    for r in range(1, last + 2):
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
            m = re.search(r'^steady +([0-9.]+) ms/step median', open(p).read(), re.M)
            if m: step[c].append((r, float(m.group(1))))
def fmt(x, w, d):
    return ('%*.*f' % (w, d, x)) if x is not None else '%*s' % (w, '-')
vs = cfgs[1:]
p = os.path.join(out, 'bits.txt')
if os.path.exists(p):
    print()
    print('bits (build/dev_matmul_check output hashes against the embedded kernel):')
    for l in open(p): print('  ' + l.rstrip())
print()
print('whole step (tinytrain bench, synchronous step median ms of each run; x/base: mean over rounds against the base mean)')
b = mean([x for _, x in step['base']])
for c in cfgs:
    xs = [x for _, x in step[c]]
    x = mean(xs)
    line = '  %-10s mean %8s  x/base %6s   runs: %s' % (c, fmt(x, 8, 2), fmt(x / b if x and b else None, 6, 3),
                                                     ' '.join('r%d %.2f' % (r, y) for r, y in step[c]) or '-')
    print(line)
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
PY
cat "$out/table.txt"
[ -n "${OUT:-}" ] && [ -d "$OUT" ] && cp -r "$out" "$OUT/matmul-ab" 2>/dev/null
echo "ab.sh: done in $(el) s (raw outputs in $out${OUT:+, copied to \$OUT/matmul-ab})"
[ $bitsbad = 0 ] || { echo "ab.sh: a variant's bits differ from the embedded kernel (see above)"; exit 3; }
