#!/bin/bash
# session 5 call 1: matmul micro-bench (layouts, epilogues, rect tiles, variants, kernel dirs) + gpt2/mega step A/B
root=$PWD
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export TINYTRAIN_WEBGPU_LIB=$root/.carry/dawn/libwebgpu_wrapper.so
B=/tmp/bld
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build $B -j16 2>&1 | grep -E ' error'
cc -O2 -std=gnu11 -Isrc -Isrc/gpu tests/bench_matmul.c $B/libttcore.a -lpthread -lm -ldl -o $B/bench_matmul
cc -O2 -std=gnu11 -Isrc -Isrc/gpu tests/bench_webgpu.c $B/libttcore.a -lpthread -lm -ldl -o $B/bench_webgpu
cp $root/.carry/s5c1.sh $OUT/script.sh
BIG="8192,3072,768,0,0,b 8192,3072,768,0,0 8192,3072,768,0,1 8192,3072,768,0,1,b 8192,3072,768,1,0 8192,3072,768,1,1"
NARROW="8192,768,768,0,0,b 8192,768,768,0,0,br 8192,768,768,0,1 8192,768,3072,0,0,br 8192,768,3072,0,1"
DW="768,3072,8192,1,0,a 3072,768,8192,1,0,a 768,768,8192,1,0,a"
{
timeout 120 $B/bench_matmul $BIG $NARROW $DW split=1 $NARROW split=0 tile=128x64 $NARROW tile=64x128 $NARROW tile=0 \
   var=swz $BIG var=bk32 $BIG var=db $BIG var=default $BIG
for d in nopf ws; do
  TT_WEBGPU_WGSL_DIR=$root/.carry/wv/$d timeout 90 $B/bench_matmul $BIG $NARROW $DW
done
timeout 60 $B/bench_matmul $BIG
} 2>&1 | tee $OUT/mm.txt
export TT_BENCH_PIPELINED=0
ab() { local p=$1 n=$2 l=$3; shift 3
  r=$(env "$@" timeout 90 $B/bench_webgpu $p $n 0 2>&1 | sed -n 's/.*step median \([0-9.]*\) ms.*/\1/p')
  printf '%-6s %-12s %s\n' $p "$l" "$r"; }
{ for i in 1 2; do
  ab gpt2 5 default X=1; ab gpt2 5 rect TT_WEBGPU_MMRECT=1
  ab gpt2 5 nopf TT_WEBGPU_WGSL_DIR=$root/.carry/wv/nopf; ab gpt2 5 ws TT_WEBGPU_WGSL_DIR=$root/.carry/wv/ws
  done
  ab mega 20 default X=1; ab mega 20 rect TT_WEBGPU_MMRECT=1; ab mega 20 default X=1; ab mega 20 rect TT_WEBGPU_MMRECT=1
} 2>&1 | tee $OUT/step_ab.txt
