#!/bin/bash
# session 5 call 3: attention loops unrolled (experiment dir) A/B; parity tiny..mega at the unrolled matmul; gpt2 bench vs PyTorch side by side
root=$PWD
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export TINYTRAIN_WEBGPU_LIB=$root/.carry/dawn/libwebgpu_wrapper.so PYTHONUNBUFFERED=1
B=/tmp/bld
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build $B -j16 2>&1 | grep -E ' error'
cc -O2 -std=gnu11 -Isrc -Isrc/gpu tests/bench_webgpu.c $B/libttcore.a -lpthread -lm -ldl -o $B/bench_webgpu
cp $root/.carry/s5c3.sh $OUT/script.sh
git log --oneline -1 > $OUT/commit.txt 2>/dev/null; git status --short >> $OUT/commit.txt 2>/dev/null
A=$root/.carry/wv/attnu
{ echo "attn_m test, unrolled-attention dir:"; TT_WEBGPU_WGSL_DIR=$A timeout 120 $B/test_webgpu_attn_m 2>&1 | grep -E "FAIL|passed|CHECK" | head -5
  echo "ops test at the default (unrolled matmul):"; timeout 120 $B/test_webgpu_ops 2>&1 | grep -E "FAIL|passed|CHECK" | head -5; } | tee $OUT/tests.txt
export TT_BENCH_PIPELINED=0
ab() { local p=$1 n=$2 l=$3; shift 3
  r=$(env "$@" timeout 90 $B/bench_webgpu $p $n 0 2>&1 | sed -n 's/.*step median \([0-9.]*\) ms.*/\1/p')
  printf '%-6s %-12s %s\n' $p "$l" "$r"; }
{ for i in 1 2; do ab gpt2 5 default X=1; ab gpt2 5 attnu TT_WEBGPU_WGSL_DIR=$A; done
  for p in mega xl; do ab $p 20 default X=1; ab $p 20 attnu TT_WEBGPU_WGSL_DIR=$A; ab $p 20 default X=1; ab $p 20 attnu TT_WEBGPU_WGSL_DIR=$A; done
} 2>&1 | tee $OUT/step_ab.txt
unset TT_BENCH_PIPELINED
{ for i in 1 2; do
  timeout 100 $B/tinytrain bench --preset gpt2 --backend webgpu --data $root/.carry/corpus.txt --steps 20 2>&1 | grep -E "ms/step|step " | head -3
  timeout 100 python3 $root/.carry/torch_presets.py cuda eager fp32 gpt2 2>&1 | tail -1
done } 2>&1 | tee $OUT/gpt2_vs_torch.txt
{ for p in tiny small medium large xl huge massive mega; do
  echo "-- $p"; TT_PARITY_DATA=$root/.carry/corpus.txt TT_PARITY_PRESET=$p TT_PARITY_STEPS=50 timeout 60 $B/test_webgpu_parity 2>&1 | grep -iE 'worst|fail|passed'
done } 2>&1 | tee $OUT/parity.txt
