#!/bin/bash
# session 5 call 2: profile-artefact check (gpt2 profile, 3 vs 20 reps), unrolled k loop, outputs-per-thread, rect (K<=1024) A/B
root=$PWD
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export TINYTRAIN_WEBGPU_LIB=$root/.carry/dawn/libwebgpu_wrapper.so
B=/tmp/bld
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build $B -j16 2>&1 | grep -E ' error'
cc -O2 -std=gnu11 -Isrc -Isrc/gpu tests/bench_matmul.c $B/libttcore.a -lpthread -lm -ldl -o $B/bench_matmul
cc -O2 -std=gnu11 -Isrc -Isrc/gpu tests/bench_webgpu.c $B/libttcore.a -lpthread -lm -ldl -o $B/bench_webgpu
cp $root/.carry/s5c2.sh $OUT/script.sh
BIG="8192,3072,768,0,0,b 8192,3072,768,0,1 8192,3072,768,1,0"
NARROW="8192,768,768,0,0,b 8192,768,768,0,1 8192,768,3072,0,0,br 8192,768,3072,0,1"
DW="768,3072,8192,1,0,a 3072,768,8192,1,0,a 768,768,8192,1,0,a"
U=$root/.carry/wv/unroll
{
timeout 60 $B/bench_matmul $BIG $NARROW $DW rect=1 $NARROW
TT_WEBGPU_WGSL_DIR=$U timeout 90 $B/bench_matmul $BIG $NARROW $DW rect=1 $NARROW
echo "TMTN 8x4"; TT_WEBGPU_MM_TMTN=8x4 timeout 60 $B/bench_matmul $BIG $NARROW $DW
echo "TMTN 4x8"; TT_WEBGPU_MM_TMTN=4x8 timeout 60 $B/bench_matmul $BIG $NARROW $DW
echo "TMTN 8x8 on rect"; TT_WEBGPU_MM_TMTN=8x8 timeout 60 $B/bench_matmul rect=1 $NARROW
echo "unroll + TMTN 8x4"; TT_WEBGPU_MM_TMTN=8x4 TT_WEBGPU_WGSL_DIR=$U timeout 90 $B/bench_matmul $BIG $NARROW $DW
timeout 60 $B/bench_matmul $BIG $NARROW $DW
} 2>&1 | tee $OUT/mm.txt
export TT_BENCH_PIPELINED=0
ab() { local p=$1 n=$2 l=$3; shift 3
  r=$(env "$@" timeout 90 $B/bench_webgpu $p $n 0 2>&1 | sed -n 's/.*step median \([0-9.]*\) ms.*/\1/p')
  printf '%-6s %-12s %s\n' $p "$l" "$r"; }
{ for i in 1 2; do
  ab gpt2 5 default X=1; ab gpt2 5 rect TT_WEBGPU_MMRECT=1; ab gpt2 5 unroll TT_WEBGPU_WGSL_DIR=$U
  ab gpt2 5 unroll+rect TT_WEBGPU_WGSL_DIR=$U TT_WEBGPU_MMRECT=1
  done
  for p in mega xl; do ab $p 20 default X=1; ab $p 20 unroll TT_WEBGPU_WGSL_DIR=$U; ab $p 20 default X=1; ab $p 20 unroll TT_WEBGPU_WGSL_DIR=$U; done
} 2>&1 | tee $OUT/step_ab.txt
TT_PROFILE_DETAIL=1 timeout 120 $B/bench_webgpu gpt2 3 3 2>&1 | grep -A45 "^profile" > $OUT/gpt2_profile_r3.txt
TT_PROFILE_DETAIL=1 timeout 120 $B/bench_webgpu gpt2 3 20 2>&1 | grep -A45 "^profile" > $OUT/gpt2_profile_r20.txt
head -16 $OUT/gpt2_profile_r3.txt; head -16 $OUT/gpt2_profile_r20.txt
