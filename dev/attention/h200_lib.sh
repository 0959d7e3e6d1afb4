# h200_lib.sh — what the GPU-host harnesses of dev/attention/ and dev/matmul/
# share (sourced before their option parsing): the options every one takes
# (--jobs N, --data FILE, --help; dev_opt), the elapsed-time helper, the
# NVIDIA Vulkan ICD when VK_DRIVER_FILES is unset, and the build of their
# targets.
t0=$(date +%s)
jobs=$(nproc 2>/dev/null || echo 4) datafile=${TT_BENCH_DATA:-} data=()
# dev_opt SCRIPT "$@": the shared options; sets dev_shift (arguments used);
# --help prints the script's header comment, an unknown option exits 2
dev_opt() {
  local me=$1; shift
  dev_shift=1
  case "$1" in
    --jobs) jobs=$2; dev_shift=2 ;;
    --data) datafile=$2; data=(--data "$2"); dev_shift=2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$me"; exit 0 ;;
    *) echo "$(basename "$me"): unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
}
[ -n "$datafile" ] && data=(--data "$datafile")
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
