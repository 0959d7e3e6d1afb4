#!/usr/bin/env bash
# crash_test.sh — kill -9 at random moments (during steps and during saves),
# resume, repeat; at the end the checkpoint must be byte-identical to an
# uninterrupted run's, and every checkpoint left by a kill must load.
#   bash scripts/crash_test.sh [--kills N] [--backend cpu|webgpu] [--preset P]
#        [--steps S] [--tinytrain PATH] [--max-delay SECONDS]
# Kill delays are drawn uniformly over 0.8 of the length of an uninterrupted run
# (measured first, start-up included; --max-delay caps them), so kills land
# in start-up, steps and saves alike on any machine. A run that makes no
# progress for 3 kills in a row (a slow start-up) is let finish its next
# attempt, so every round ends.
# Prints one line per round and a summary: kills, resumes, checkpoints
# checked, and whether the final state matched. Exit 0 only if all held.
set -u
kills=20 backend=cpu preset=tiny steps=60 max_delay=0
tt=${TINYTRAIN:-$(cd "$(dirname "$0")/.." && pwd)/build/tinytrain}
while [ $# -gt 0 ]; do
  case "$1" in
    --kills) kills=$2; shift ;;
    --backend) backend=$2; shift ;;
    --preset) preset=$2; shift ;;
    --steps) steps=$2; shift ;;
    --tinytrain) tt=$2; shift ;;
    --max-delay) max_delay=$2; shift ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "crash_test.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
[ -x "$tt" ] || { echo "crash_test.sh: tinytrain not found: $tt" >&2; exit 2; }
tt=$(cd "$(dirname "$tt")" && pwd)/$(basename "$tt")
work=$(mktemp -d "${TMPDIR:-/tmp}/tinytrain-crash-XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 2
# a corpus that does not depend on the fortunes package
awk 'BEGIN { for (i = 0; i < 4000; i++) printf "line %d: the quick brown fox %d jumps over %d lazy dogs.\n", i, i * 7 % 13, i * 3 % 11 }' > corpus.txt
common=(--preset "$preset" --data corpus.txt --backend "$backend" --steps "$steps" --eval-every 7
        --save-every 1 --sample-tokens 0 --threads 2)

t_ref=$(date +%s.%N)
"$tt" train "${common[@]}" --out ref > ref.log 2>&1 || { echo "FAIL: the uninterrupted run failed: $(tail -1 ref.log)"; exit 1; }
span=$(awk -v a="$t_ref" -v b="$(date +%s.%N)" -v m="$max_delay" 'BEGIN { s = (b - a) * 0.8; if (m > 0 && s > m) s = m; printf "%.3f", s }')

killed=0 resumes=0 checked=0 unreadable=0 rounds=0 mismatches=0
rand_delay() { awk -v m="$span" -v s="$RANDOM$RANDOM" 'BEGIN { srand(s); printf "%.3f", 0.02 + rand() * m }'; }
ckpt_id() { [ -f run/checkpoint.safetensors ] && cksum < run/checkpoint.safetensors || echo none; }
while [ $killed -lt "$kills" ]; do
  rounds=$((rounds + 1))
  rm -rf run
  stuck=0
  # one interrupted run: start, kill -9 at a random moment, check, resume ... until it completes
  while :; do
    before=$(ckpt_id)
    if [ -f run/checkpoint.safetensors ]; then
      "$tt" train --resume run/checkpoint.safetensors --data corpus.txt --backend "$backend" --sample-tokens 0 \
          --threads 2 --save-every 1 > run.log 2>&1 &
      resumes=$((resumes + 1))
    else
      "$tt" train "${common[@]}" --out run > run.log 2>&1 &
    fi
    pid=$!
    if [ $stuck -lt 3 ]; then
      sleep "$(rand_delay)"
      if kill -9 $pid 2>/dev/null; then
        wait $pid 2>/dev/null
        killed=$((killed + 1))
        if [ "$(ckpt_id)" = "$before" ]; then stuck=$((stuck + 1)); else stuck=0; fi
        if [ -f run/checkpoint.safetensors ]; then
          checked=$((checked + 1))
          if ! "$tt" eval --ckpt run/checkpoint.safetensors --data corpus.txt --batches 1 > eval.log 2>&1; then
            unreadable=$((unreadable + 1))
            echo "FAIL: after kill $killed the checkpoint does not load: $(tail -1 eval.log)"
          fi
        fi
        continue
      fi
    fi
    # not killed (it ended first, or three kills in a row saw no progress): the run completes
    wait $pid; rc=$?
    stuck=0
    if [ $rc -ne 0 ]; then echo "FAIL: a run ended with exit $rc: $(tail -1 run.log)"; mismatches=$((mismatches + 1)); break; fi
    if grep -q '^done:\|already at step' run.log; then break; fi
  done
  if cmp -s ref/checkpoint.safetensors run/checkpoint.safetensors && cmp -s ref/loss.csv run/loss.csv; then
    echo "round $rounds: $killed kills so far; final checkpoint and loss.csv identical to the uninterrupted run"
  else
    mismatches=$((mismatches + 1))
    echo "FAIL: round $rounds: the final state differs from the uninterrupted run"
  fi
  leftovers=$(find run -name '*.tmp.*' | wc -l)
  [ "$leftovers" -eq 0 ] || { echo "FAIL: round $rounds left $leftovers temporary files"; mismatches=$((mismatches + 1)); }
done
echo "crash test ($backend, $preset, $steps steps, kills within ${span} s): $killed kills, $resumes resumes, $checked checkpoints checked after a kill, $unreadable unreadable, $rounds rounds, $mismatches mismatches"
[ $unreadable -eq 0 ] && [ $mismatches -eq 0 ]
