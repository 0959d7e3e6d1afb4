#!/usr/bin/env bash
# setup.sh — installs what tinytrain needs on Debian/Ubuntu, idempotently.
#   scripts/setup.sh           core: C compiler, CMake, the fortunes corpus,
#                              the Unicode data files (tokenizer tables),
#                              Vulkan loader + Mesa lavapipe and Dawn (WebGPU),
#                              python3 (the tokenizer's table generator, test tools)
#   scripts/setup.sh --all     core + web: Emscripten, Node/npm, Chromium,
#                              npm packages (Playwright driver, chart library, Node 24 and
#                              Dawn's Node binding for the browser engine under Node)
# Nothing is downloaded at run time: Debian packages by name, npm packages
# pinned in package.json / package-lock.json. Safe to run again: it installs
# only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

want_web=0
for a in "$@"; do
  case "$a" in
    --all|--web) want_web=1 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option $a" >&2; exit 2 ;;
  esac
done

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive

. /etc/os-release 2>/dev/null || true
missing=()
need_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed" || missing+=("$1"); }
have_cmd() { command -v "$1" >/dev/null 2>&1; }

for p in gcc make cmake pkg-config fortunes libvulkan1 xz-utils; do need_pkg "$p"; done
# unicode-data: the Unicode Character Database the tokenizer's class table is generated from (src/tok/unicode.cmake)
need_pkg unicode-data
# fortunes: the plain-text collection is split over fortunes + fortunes-min on Debian
need_pkg fortunes-min
# python3: the build runs src/tok/gen_unicode.py; tests/webgpu/test_webgpu_bounds.sh runs tests/tools/wgsl_bounds.py (any python3 on PATH will do)
have_cmd python3 || missing+=(python3)
if [ $want_web = 1 ]; then
  for p in emscripten chromium; do need_pkg "$p"; done
  have_cmd node || missing+=(nodejs)
  have_cmd npm || missing+=(npm)
fi

# Mesa lavapipe (software Vulkan) must be >= 25 for Dawn: on bookworm it comes
# from bookworm-backports; newer releases ship a new enough one.
mesa_ok=0
if v=$(dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null); then
  case "$v" in 2[5-9].*|[3-9][0-9].*) mesa_ok=1 ;; esac
fi
backports=0
if [ $mesa_ok = 0 ]; then
  if [ "${VERSION_CODENAME:-}" = bookworm ]; then
    backports=1
    if ! grep -rqs "bookworm-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
      echo "setup: enabling bookworm-backports (for mesa-vulkan-drivers 25.x)"
      echo "deb http://deb.debian.org/debian bookworm-backports main" | $SUDO tee /etc/apt/sources.list.d/tinytrain-backports.list >/dev/null
      missing+=(__update)
    fi
  else
    missing+=(mesa-vulkan-drivers)
  fi
fi

if [ ${#missing[@]} -gt 0 ] || [ $backports = 1 ]; then
  echo "setup: installing ${missing[*]} $([ $backports = 1 ] && echo 'mesa-vulkan-drivers (backports)')"
  $SUDO apt-get update -qq
  pk=()
  for p in "${missing[@]}"; do [ "$p" = __update ] || pk+=("$p"); done
  if [ ${#pk[@]} -gt 0 ]; then
    $SUDO apt-get install -y -qq --no-install-recommends "${pk[@]}" >/dev/null
  fi
  if [ $backports = 1 ]; then
    $SUDO apt-get install -y -qq --no-install-recommends -t bookworm-backports mesa-vulkan-drivers >/dev/null
  fi
fi

# npm packages (Dawn for native WebGPU; Playwright driver + chart library for the web app;
# Node 24 (JSPI) + Dawn's Node binding: the browser engine run headless, bench/browser_engine.mjs)
if have_cmd npm; then
  if [ ! -f node_modules/.package-lock.json ] || ! cmp -s package-lock.json node_modules/.tt-lock 2>/dev/null; then
    echo "setup: npm ci"
    npm ci --no-audit --no-fund --loglevel=error
    cp package-lock.json node_modules/.tt-lock
  fi
else
  echo "setup: npm not found; native WebGPU (Dawn) will be unavailable (run scripts/setup.sh --all)"
fi
echo "setup: ok"
