#!/bin/bash
# session 4 call 4: A/B of attention tiles (with PF), split-K epilogue, matmul target at the new defaults
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export TINYTRAIN_WEBGPU_LIB=$PWD/.carry/dawn/libwebgpu_wrapper.so TT_BENCH_PIPELINED=0
cd .snap
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build -j16 2>&1 | grep -E ' error'
cc -O2 -std=gnu11 -Isrc -Isrc/gpu tests/bench_webgpu.c build/libttcore.a -lpthread -lm -ldl -o build/bench_webgpu
ab() { local p=$1 n=$2 l=$3; shift 3
  r=$(env "$@" timeout 60 ./build/bench_webgpu $p $n 0 2>&1 | sed -n 's/.*step median \([0-9.]*\) ms.*/\1/p')
  printf '%-6s %-22s %s\n' $p "$l" "$r"; }
{
ab gpt2 5 default X=1
ab gpt2 5 dkdv32x16 TT_WEBGPU_ATTN_M_TILES=64x32,64x16,32x16
ab gpt2 5 fwd64x16 TT_WEBGPU_ATTN_M_TILES=64x16,64x16,32x32
ab gpt2 5 fwd32x32 TT_WEBGPU_ATTN_M_TILES=32x32,64x16,32x32
ab gpt2 5 dq32x16 TT_WEBGPU_ATTN_M_TILES=64x32,32x16,32x32
ab gpt2 5 epi0 TT_WEBGPU_SPLITK_EPI=0
ab gpt2 5 tgt384 TT_WEBGPU_MM_TARGET=384
ab gpt2 5 tgt768 TT_WEBGPU_MM_TARGET=768
ab gpt2 5 kmin256 TT_WEBGPU_MM_KMIN=256
ab gpt2 5 nowginit TT_WEBGPU_TOGGLES=disable_workgroup_init
ab gpt2 5 default2 X=1
for p in mega huge; do
ab $p 20 default X=1
ab $p 20 fold0 TT_WEBGPU_BIASFOLD=0
ab $p 20 epi0 TT_WEBGPU_SPLITK_EPI=0
ab $p 20 tgt256 TT_WEBGPU_MM_TARGET=256
ab $p 20 dkdv32x16 TT_WEBGPU_ATTN_M_TILES=64x32,64x32,32x16
ab $p 20 default2 X=1
done
} | tee $OUT/ab4.txt
