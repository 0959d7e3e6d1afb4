#!/usr/bin/env bash
# build-wasm.sh — builds the WebAssembly targets of cmake/wasm.cmake with
# Emscripten (Debian's 3.1.6) and assembles the web app's web/dist/:
#   build-wasm/tinytrain.js (+ .wasm, .worker.js)   the CLI under Node:
#       node --no-experimental-fetch build-wasm/tinytrain.js train --preset tiny ...
#   web/dist/tinytrain_web{,_st,_gpu}.js/.wasm       the web modules (threads, single, WebGPU)
#   web/dist/uPlot.esm.js, uPlot.min.css             chart library (from node_modules)
#   web/dist/fflate.js                               zip writer for the Hugging Face download (from node_modules)
#   web/dist/corpus.txt                              the bundled sample text
# Options: --clean starts from an empty build folder. Env: TT_WASM_BUILD
# (build folder). No Memory64 module: see cmake/wasm.cmake for why.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
bdir=${TT_WASM_BUILD:-$root/build-wasm}
jobs=$(nproc 2>/dev/null || echo 2)
for a in "$@"; do
  case "$a" in
    --clean) rm -rf "$bdir" ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "build-wasm.sh: unknown option $a" >&2; exit 2 ;;
  esac
done

if ! command -v emcmake >/dev/null 2>&1; then
  echo "build-wasm.sh: Emscripten not found (install it: scripts/setup.sh --all, or apt-get install emscripten)" >&2
  exit 1
fi
# emcc 3.1.6 runs its JS tools with the system node: it needs Debian's node modules
export NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}

emcmake cmake -S "$root" -B "$bdir" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$bdir" -j"$jobs"

# --- web/dist ---------------------------------------------------------------
dist="$root/web/dist"
mkdir -p "$dist"
for f in "$bdir"/web/tinytrain_web*.js "$bdir"/web/tinytrain_web*.wasm; do
  [ -e "$f" ] && cp "$f" "$dist/"
done
if [ -f node_modules/fflate/esm/browser.js ]; then
  cp node_modules/fflate/esm/browser.js "$dist/fflate.js"
else
  echo "build-wasm.sh: node_modules/fflate missing (run npm ci): the page cannot zip a Hugging Face folder" >&2
fi
if [ -d node_modules/uplot/dist ]; then
  cp node_modules/uplot/dist/uPlot.esm.js node_modules/uplot/dist/uPlot.min.css "$dist/"
else
  echo "build-wasm.sh: node_modules/uplot missing (run npm ci): the page's charts will not load" >&2
fi

# Bundled sample text: the first ~500 KB of the fortunes collection (the CLI's
# default corpus), whole files in name order, .dat indexes and links skipped.
fdir=""
for d in /usr/share/games/fortunes /usr/share/fortune /usr/share/fortunes; do
  [ -d "$d" ] && { fdir=$d; break; }
done
if [ -n "$fdir" ]; then
  tmp="$dist/corpus.txt.tmp"
  : > "$tmp"
  for f in $(find "$fdir" -maxdepth 1 -type f ! -name '*.dat' ! -name '*.u8' ! -name 'ascii-art' | LC_ALL=C sort); do
    cat "$f" >> "$tmp"
    [ "$(stat -c %s "$tmp")" -ge 500000 ] && break
  done
  mv "$tmp" "$dist/corpus.txt"
else
  echo "build-wasm.sh: the fortunes collection is not installed (apt-get install fortunes): no bundled sample text" >&2
fi

echo "wasm: CLI $bdir/tinytrain.js, web app web/dist/ ($(ls "$dist" | tr '\n' ' '))"
