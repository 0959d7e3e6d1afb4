#!/usr/bin/env bash
# test_web.sh [PART] — the browser tests of the page (tests/web/*.test.mjs
# except the WebGPU files, which test_web_gpu.sh runs): run_web.sh says how.
# Three parts, so that each ctest entry (CMakeLists.txt registers one per
# part) stays well inside its timeout: `app` (training, checkpoints with the
# CLI, the engine's answers, run files, fine-tunes), `state` (the saved run:
# two tabs, Forget, autosave intervals and faults) and `page` (every other
# file: controls, reach, the trust tour). No PART: all of them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
APP=(app.test.mjs engine_info.test.mjs runfile.test.mjs finetune.test.mjs)
STATE=(runs.test.mjs opfs_faults.test.mjs)
part=${1:-all}
case "$part" in app | state | page | all) ;; *) echo "test_web.sh: unknown part '$part' (app, state, page)" >&2; exit 2 ;; esac
files=()
for f in "$here"/*.test.mjs; do
  b=$(basename "$f")
  grep -qx "$b" < <(bash "$here/test_web_gpu.sh" --list) && continue
  in_app=0; in_state=0
  for x in "${APP[@]}"; do [ "$x" = "$b" ] && in_app=1; done
  for x in "${STATE[@]}"; do [ "$x" = "$b" ] && in_state=1; done
  case "$part" in
    app) [ $in_app = 1 ] || continue ;;
    state) [ $in_state = 1 ] || continue ;;
    page) [ $in_app = 0 ] && [ $in_state = 0 ] || continue ;;
  esac
  files+=("$f")
done
exec bash "$here/run_web.sh" "${files[@]}"
