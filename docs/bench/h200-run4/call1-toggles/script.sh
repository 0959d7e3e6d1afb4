#!/bin/bash
# session 4 call 1: Dawn toggles A/B + ds bwd + subgroups on gpt2/mega; profile; torch gpt2
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export TINYTRAIN_WEBGPU_LIB=$PWD/.carry/dawn/libwebgpu_wrapper.so TT_BENCH_PIPELINED=0
root=$PWD
cd .snap
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build -j16 2>&1 | grep -E ' error'
cc -O2 -std=gnu11 -Isrc -Isrc/gpu tests/bench_webgpu.c build/libttcore.a -lpthread -lm -ldl -o build/bench_webgpu
NR=disable_robustness; NW=disable_workgroup_init
for p in gpt2 mega xl; do
  n=20; [ $p = gpt2 ] && n=5
  for mode in default nr nw nrnw default2 dsbwd sg nrnw_ds; do
    case $mode in
      default|default2) env=(X=1) ;;
      nr) env=(TT_WEBGPU_TOGGLES=$NR) ;;
      nw) env=(TT_WEBGPU_TOGGLES=$NW) ;;
      nrnw) env=(TT_WEBGPU_TOGGLES=$NR,$NW) ;;
      dsbwd) env=(TT_WEBGPU_ATTN_BWD=ds) ;;
      sg) env=(TT_WEBGPU_SUBGROUPS=1) ;;
      nrnw_ds) env=(TT_WEBGPU_TOGGLES=$NR,$NW TT_WEBGPU_ATTN_BWD=ds) ;;
    esac
    r=$(env "${env[@]}" timeout 60 ./build/bench_webgpu $p $n 0 2>&1 | sed -n 's/.*step median \([0-9.]*\) ms.*/\1/p')
    printf '%-6s %-10s %s\n' $p $mode "$r"
  done
done | tee $OUT/toggles_ab.txt
TT_WEBGPU_TOGGLES=$NR,$NW timeout 90 ./build/tinytrain profile --preset gpt2 --reps 3 --detail > $OUT/gpt2_profile_nrnw.txt 2>&1
timeout 90 ./build/tinytrain profile --preset gpt2 --reps 3 --detail > $OUT/gpt2_profile_default.txt 2>&1
head -30 $OUT/gpt2_profile_nrnw.txt
timeout 120 python3 $root/.carry/torch_presets.py cuda eager fp32 gpt2,mega 2>&1 | tail -5 | tee $OUT/torch.txt
