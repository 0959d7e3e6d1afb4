#!/bin/bash
# session 4 call 2: plan A/B under the new defaults (no robustness clamps, bias fold auto)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export TINYTRAIN_WEBGPU_LIB=$PWD/.carry/dawn/libwebgpu_wrapper.so TT_BENCH_PIPELINED=0
root=$PWD
cd .snap
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build -j16 2>&1 | grep -E ' error'
cc -O2 -std=gnu11 -Isrc -Isrc/gpu tests/bench_webgpu.c build/libttcore.a -lpthread -lm -ldl -o build/bench_webgpu
ab() { # preset steps label env...
  local p=$1 n=$2 l=$3; shift 3
  r=$(env "$@" timeout 60 ./build/bench_webgpu $p $n 0 2>&1 | sed -n 's/.*step median \([0-9.]*\) ms.*/\1/p')
  printf '%-6s %-22s %s\n' $p "$l" "$r"
}
for p in gpt2 mega huge; do
  n=20; [ $p = gpt2 ] && n=5
  ab $p $n default X=1
  ab $p $n robust TT_WEBGPU_ROBUST=1
  ab $p $n fold1 TT_WEBGPU_BIASFOLD=1
  ab $p $n fold0 TT_WEBGPU_BIASFOLD=0
  ab $p $n tgt256 TT_WEBGPU_MM_TARGET=256
  ab $p $n tgt1024 TT_WEBGPU_MM_TARGET=1024
  ab $p $n kmin256 TT_WEBGPU_MM_KMIN=256
  ab $p $n mm_dbswz TT_WEBGPU_MMVAR=db,swz
  ab $p $n mm_bk32 TT_WEBGPU_MMVAR=bk32,tuned
  ab $p $n mm_base TT_WEBGPU_MMVAR=default
  ab $p $n at_64x16 TT_WEBGPU_ATTN_M_TILES=64x32,64x16,32x32
  ab $p $n at_32x32f TT_WEBGPU_ATTN_M_TILES=32x32,32x32,32x32
  ab $p $n at_64x64f TT_WEBGPU_ATTN_M_TILES=64x64,32x32,32x32
  ab $p $n at_dkdv16x32 TT_WEBGPU_ATTN_M_TILES=64x32,32x32,16x32
  ab $p $n nowginit TT_WEBGPU_TOGGLES=disable_workgroup_init
  ab $p $n default2 X=1
done | tee $OUT/plan_ab.txt
timeout 90 ./build/tinytrain profile --preset gpt2 --reps 3 --detail > $OUT/gpt2_profile.txt 2>&1
timeout 90 ./build/tinytrain profile --preset mega --reps 5 --detail > $OUT/mega_profile.txt 2>&1
head -40 $OUT/mega_profile.txt
