#!/bin/bash
# session 4 call 3: gpu-session.sh checks (A/B of the switches + parity through mega) + gpt2 profile
root=$PWD
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export TINYTRAIN_WEBGPU_LIB=$root/.carry/dawn/libwebgpu_wrapper.so TT_BENCH_DATA=$root/.carry/corpus.txt
cd .snap
TT_COMMIT=$(cat $root/.carry/commit) bash scripts/bench/gpu-session.sh $OUT checks 2>&1 | tail -50
timeout 60 ./build/tinytrain profile --preset gpt2 --reps 3 --detail > $OUT/gpt2_profile.txt 2>&1
head -16 $OUT/gpt2_profile.txt
