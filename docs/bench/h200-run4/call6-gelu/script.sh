#!/bin/bash
# session 4 call 6: vec4 GELU A/B at gpt2 (sync), the pipelined bench, torch gpt2 side by side
root=$PWD
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export TINYTRAIN_WEBGPU_LIB=$root/.carry/dawn/libwebgpu_wrapper.so TT_BENCH_PIPELINED=0
cd .snap
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build -j16 2>&1 | grep -E ' error'
cc -O2 -std=gnu11 -Isrc -Isrc/gpu tests/bench_webgpu.c build/libttcore.a -lpthread -lm -ldl -o build/bench_webgpu
ab() { local p=$1 n=$2 l=$3; shift 3
  r=$(env "$@" timeout 60 ./build/bench_webgpu $p $n 0 2>&1 | sed -n 's/.*step median \([0-9.]*\) ms.*/\1/p')
  printf '%-6s %-12s %s\n' $p "$l" "$r"; }
{ ab gpt2 5 gelu4 X=1; ab gpt2 5 gelu1 TT_WEBGPU_GELU4=0; ab gpt2 5 gelu4 X=1; ab gpt2 5 gelu1 TT_WEBGPU_GELU4=0
  ab mega 20 gelu4 X=1; ab mega 20 gelu1 TT_WEBGPU_GELU4=0; } | tee $OUT/gelu_ab.txt
unset TT_BENCH_PIPELINED
timeout 100 ./build/tinytrain bench --preset gpt2 --backend webgpu --data $root/.carry/corpus.txt --steps 20 2>&1 | tail -4 | tee $OUT/gpt2_bench.txt
timeout 100 python3 $root/.carry/torch_presets.py cuda eager fp32 gpt2 2>&1 | tail -2 | tee $OUT/torch_gpt2.txt
timeout 100 ./build/tinytrain bench --preset gpt2 --backend webgpu --data $root/.carry/corpus.txt --steps 20 2>&1 | tail -2 | tee -a $OUT/gpt2_bench.txt
