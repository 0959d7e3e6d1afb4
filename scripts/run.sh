#!/usr/bin/env bash
# run.sh — the main job from a fresh clone: installs what is missing, builds,
# trains the default preset on the default corpus (the Debian `fortunes`
# collection) with live progress, saves the checkpoint + loss curve in
# runs/, and prints samples. Extra arguments go to `tinytrain train`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc 2>/dev/null || echo 2)" --target tinytrain
./build/tinytrain train --out runs/default "$@"
echo
for p in "The " "A man "; do
  ./build/tinytrain sample --ckpt runs/default/checkpoint.safetensors --prompt "$p" --tokens 200 --temperature 0.8
  echo; echo "---"
done
