#!/usr/bin/env bash
# recipes.sh — every shipped recipe (recipes/*.json) trained as written, one
# after the other, and the figures recipes/README.md quotes: best validation
# loss (bits per byte), the step it came at, the run's wall time, with the
# machine, date and commit beside them.
#
#   bash bench/recipes.sh OUTDIR [RECIPE ...]     # default: every recipes/*.json
#   bash bench/recipes.sh out/recipes quick_cpu shakespeare_small
#
# Each recipe runs on the backend it names (the CPU recipes on all cores,
# shakespeare_char on WebGPU; a recipe that names none gets --backend webgpu,
# so it fails with a reason instead of crawling on a CPU). A recipe whose
# corpus is missing (fortunes_small needs the fortunes collection, which the
# GPU host lacks) is skipped with that reason. On a GPU host the run takes
# about 5 minutes (shakespeare_char ~3.5, the CPU recipes ~1).
#
# On a bare GPU host it sets itself up as bench/gpu-session.sh does: the
# Vulkan loader from .gl/*.deb, VK_DRIVER_FILES at the NVIDIA ICD, Dawn from
# .carry/dawn/ (carry .gl and .carry); it builds build/tinytrain when missing.
# Writes OUTDIR/<recipe>.jsonl (the run's --json lines), OUTDIR/<recipe>.err,
# OUTDIR/summary.md (the table) and prints the table.
set -u
out=${1:?usage: bench/recipes.sh OUTDIR [RECIPE ...]}
shift
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
cd "$root" || exit 2
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)

if ls .gl/*.deb >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig; fi
if [ -z "${VK_DRIVER_FILES:-}" ]; then
  for icd in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json; do
    [ -f $icd ] && export VK_DRIVER_FILES=$icd && break
  done
fi
if [ -z "${TINYTRAIN_WEBGPU_LIB:-}" ]; then
  if [ -f .carry/dawn/libwebgpu_wrapper.so ]; then
    export TINYTRAIN_WEBGPU_LIB=$PWD/.carry/dawn/libwebgpu_wrapper.so
  elif [ -f .carry/dawn/libwebgpu_wrapper.so.xz ]; then
    mkdir -p /tmp/dawn && xz -dc .carry/dawn/libwebgpu_wrapper.so.xz > /tmp/dawn/libwebgpu_wrapper.so &&
      export TINYTRAIN_WEBGPU_LIB=/tmp/dawn/libwebgpu_wrapper.so
  fi
fi
tt=${TINYTRAIN:-$root/build/tinytrain}
if [ ! -x "$tt" ]; then
  cm=(); [ -f .carry/commit ] && cm=(-DTT_COMMIT="$(cat .carry/commit)")
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${cm[@]}" >/dev/null &&
    cmake --build build -j"$(nproc)" --target tinytrain >/dev/null || { echo "recipes.sh: build failed" >&2; exit 1; }
fi
commit=${TT_COMMIT:-$(cat .carry/commit 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)}
cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
machine="$cpu, $(nproc) cores${gpu:+; $gpu}"
date=$(date -u +%Y-%m-%d)

names=("$@")
[ ${#names[@]} -eq 0 ] && for f in recipes/*.json; do names+=("$(basename "$f" .json)"); done

rows=()
for r in "${names[@]}"; do
  f=recipes/$r.json
  [ -f "$f" ] || { rows+=("| \`$r.json\` | skipped: no such recipe | | | | |"); continue; }
  # the corpus the run would read, and the backend it names
  resolved=$("$tt" train --config "$f" --print-config 2>&1)
  data=$(printf '%s\n' "$resolved" | sed -n 's/^ *"data": *"\(.*\)",\{0,1\}$/\1/p')
  backend=$(printf '%s\n' "$resolved" | sed -n 's/^ *"backend": *"\(.*\)",\{0,1\}$/\1/p')
  if [ -z "$data" ] && [ ! -e /usr/share/games/fortunes ]; then
    rows+=("| \`$r.json\` | skipped: no corpus (the fortunes collection is not installed) | | | | |"); continue
  fi
  extra=(); [ "$backend" = auto ] || [ -z "$backend" ] && extra=(--backend webgpu)
  echo "== $r ($(date -u +%H:%M:%S))" >&2
  "$tt" train --config "$f" "${extra[@]}" --out "$out/run-$r" --json > "$out/$r.jsonl" 2> "$out/$r.err"
  rc=$?
  end=$(grep '"event":"end"' "$out/$r.jsonl" | tail -1)
  start=$(grep -m1 '"event":"start"' "$out/$r.jsonl")
  if [ $rc -ne 0 ] || [ -z "$end" ]; then
    rows+=("| \`$r.json\` | failed (exit $rc): $(grep -m1 'error' "$out/$r.err" | cut -c1-120) | | | | |"); continue
  fi
  num() { printf '%s\n' "$1" | sed -n "s/.*\"$2\":\([-0-9.e]*\).*/\1/p"; }
  str() { printf '%s\n' "$1" | sed -n "s/.*\"$2\":\"\([^\"]*\)\".*/\1/p"; }
  rows+=("$(printf '| `%s.json` | %s | %.3f (%.3f) | %s of %s | %.0f s | %s, %s, `%s` |' "$r" "$(str "$start" backend)" \
    "$(num "$end" best_val)" "$(num "$end" best_val_bpb)" "$(num "$end" best_val_step)" "$(num "$end" steps)" \
    "$(num "$end" wall_s)" "$machine" "$date" "$commit")")
done

{
  echo "| recipe | backend | best val loss (bpb) | at step | wall time | machine, date, commit |"
  echo "|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
} | tee "$out/summary.md"
