#!/usr/bin/env bash
# get-dawn.sh — installs the native WebGPU implementation tinytrain loads at
# run time: Google's Dawn, prebuilt, from the npm package bun-webgpu-linux-x64
# (version pinned in package.json / package-lock.json) into ./node_modules.
# The binary finds it there (relative to the executable, the source dir or the
# cwd); TINYTRAIN_WEBGPU_LIB=/path/to/libwebgpu_wrapper.so overrides.
# Dawn needs a Vulkan driver: libvulkan1 plus a GPU driver, or Mesa's lavapipe
# (mesa-vulkan-drivers >= 25 from bookworm-backports; Dawn rejects 22.x).
set -euo pipefail
cd "$(dirname "$0")/.."
LIB=node_modules/bun-webgpu-linux-x64/libwebgpu_wrapper.so
if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
  echo "get-dawn.sh: only linux-x64 is wired up (npm has bun-webgpu-darwin-*/win32-* siblings)" >&2
  exit 1
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "get-dawn.sh: npm not found (install nodejs/npm first)" >&2
  exit 1
fi
if [ ! -f "$LIB" ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
if [ ! -f "$LIB" ]; then
  echo "get-dawn.sh: $LIB missing after npm ci" >&2
  exit 1
fi
echo "Dawn: $(pwd)/$LIB"
if ! ldconfig -p 2>/dev/null | grep -q 'libvulkan\.so\.1'; then
  echo "note: no Vulkan loader (libvulkan1) found; WebGPU will report no adapter" >&2
fi
