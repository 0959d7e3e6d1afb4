#!/bin/bash
# session 5 call 4: the full curve at the final kernels, GPU backends first
root=$PWD
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export TINYTRAIN_WEBGPU_LIB=$root/.carry/dawn/libwebgpu_wrapper.so PYTHONUNBUFFERED=1
export TT_COMMIT=$(cat $root/.carry/commit) TORCH_ANCHOR=$root/.carry/torch_presets.py WASM_CLI=$root/.wasmcli/tinytrain.js
cd .snap
mkdir -p .carry && cp $root/.carry/node.xz .carry/
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build -j16 2>&1 | grep -E ' error|Built target tinytrain$'
./build/tinytrain info | tail -4 > $OUT/info.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw --format=csv >> $OUT/info.txt 2>&1
bash scripts/bench/curve.sh --data $root/.carry/corpus.txt --out $OUT/curve --budget 430 --cell-timeout 110 \
  --backends webgpu,torch-cuda,cpu,wasm,torch-cpu,cpu1,wasm1 2>&1 | tail -30
cp $root/.carry/s5c4.sh $OUT/script.sh; cp -r $OUT/curve/. $OUT/ 2>/dev/null; ls $OUT
