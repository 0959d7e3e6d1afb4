#!/bin/bash
# session 4 call 7: the bounds check on the H200's own plans (48 KiB tiles, PF on, 128 tiles)
root=$PWD
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export TINYTRAIN_WEBGPU_LIB=$root/.carry/dawn/libwebgpu_wrapper.so
cd .snap
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build -j16 2>&1 | grep -E ' error'
python3 tests/tools/wgsl_bounds.py src/gpu/wgsl /tmp/W > /dev/null || echo "instrument failed"
run() { local l=$1; shift
  env "$@" TT_WEBGPU_WGSL_DIR=/tmp/W TT_WEBGPU_BOUNDS_CHECK=1 timeout 90 ./build/tinytrain bench --backend webgpu --data $root/.carry/corpus.txt --steps 10 --warmup 2 $BARGS > /tmp/b.log 2>&1
  echo "$l rc=$? $(grep -m1 'bounds check' /tmp/b.log | cut -c1-300) $(grep -m1 'error' /tmp/b.log | cut -c1-200)"; }
{
for p in tiny medium large xl huge massive mega; do BARGS="--preset $p" run "$p default"; done
BARGS="--preset gpt2" run "gpt2 dq32x32" TT_WEBGPU_ATTN_M_TILES=64x32,32x32,32x32
BARGS="--preset gpt2" run "gpt2 default(dq64x16)" X=1
BARGS="--preset mega" run "mega ds" TT_WEBGPU_ATTN_BWD=ds
BARGS="--preset xl" run "xl sg" TT_WEBGPU_SUBGROUPS=1
} | tee $OUT/bounds_h200.txt
