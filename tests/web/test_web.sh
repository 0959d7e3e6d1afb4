#!/usr/bin/env bash
# test_web.sh [PART] — the browser tests of the page (tests/web/*.test.mjs
# except the WebGPU files, which test_web_gpu.sh runs): run_web.sh says how.
# Four parts, so that each ctest entry (CMakeLists.txt registers one per
# part) stays well inside its timeout: `app` (training, checkpoints with the
# CLI, the engine's answers, a GPT-2 folder), `state` (the saved run: two tabs, Forget,
# autosave intervals and faults), `controls` (the run's controls, run files,
# fine-tunes) and `page` (every other file: reach, the trust tour). No PART:
# all of them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
APP=(app.test.mjs engine_info.test.mjs gpt2.test.mjs)
STATE=(runs.test.mjs opfs_faults.test.mjs)
CONTROLS=(controls.test.mjs runfile.test.mjs finetune.test.mjs)
part=${1:-all}
case "$part" in app | state | controls | page | all) ;; *) echo "test_web.sh: unknown part '$part' (app, state, controls, page)" >&2; exit 2 ;; esac
files=()
for f in "$here"/*.test.mjs; do
  b=$(basename "$f")
  grep -qx "$b" < <(bash "$here/test_web_gpu.sh" --list) && continue
  in=page
  for x in "${APP[@]}"; do [ "$x" = "$b" ] && in=app; done
  for x in "${STATE[@]}"; do [ "$x" = "$b" ] && in=state; done
  for x in "${CONTROLS[@]}"; do [ "$x" = "$b" ] && in=controls; done
  [ "$part" = all ] || [ "$part" = "$in" ] || continue
  files+=("$f")
done
exec bash "$here/run_web.sh" "${files[@]}"
