# h200_lib.sh — what the GPU-host harnesses of dev/attention/ share (sourced
# after their option parsing): the elapsed-time helper, the NVIDIA Vulkan
# ICD when VK_DRIVER_FILES is unset, and the build of their targets.
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
if [ -z "${VK_DRIVER_FILES:-}" ]; then
  for icd in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json \
             /etc/vulkan/icd.d/nvidia_icd.json; do
    [ -f $icd ] && export VK_DRIVER_FILES=$icd && break
  done
fi

# dev_build NAME TARGET...: configure and build build/ (log build/NAME-build.log); exit 1 on failure
dev_build() {
  local name=$1; shift
  echo "== build ($(el) s)"
  mkdir -p build
  if ! { timeout 200 cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >"build/$name-build.log" 2>&1 &&
         timeout 200 cmake --build build -j"$jobs" --target "$@" >>"build/$name-build.log" 2>&1; }; then
    echo "$name: build failed:"; tail -20 "build/$name-build.log" 2>/dev/null; exit 1
  fi
}
