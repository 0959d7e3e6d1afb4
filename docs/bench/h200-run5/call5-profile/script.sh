#!/bin/bash
# session 5 call 5: gpt2 profile at e26a3f5 with 3 and with 20 repetitions per site (the profile-artefact check)
root=$PWD
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export TINYTRAIN_WEBGPU_LIB=$root/.carry/dawn/libwebgpu_wrapper.so
B=/tmp/bld
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build $B -j16 2>&1 | grep -E ' error'
cp $root/.carry/s5c5.sh $OUT/script.sh
timeout 100 $B/tinytrain profile --preset gpt2 --reps 3 --detail > $OUT/gpt2_profile_r3.txt 2>&1
timeout 200 $B/tinytrain profile --preset gpt2 --reps 20 --detail > $OUT/gpt2_profile_r20.txt 2>&1
head -16 $OUT/gpt2_profile_r3.txt; head -16 $OUT/gpt2_profile_r20.txt
