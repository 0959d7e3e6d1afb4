#!/usr/bin/env bash
# test_runfile.sh — run files and recipes end to end: every shipped recipe
# (recipes/*.json) parses and validates (resolved with --print-config, no
# training); --print-config output fed back with --config resolves and trains
# the same run; flags win over the file wherever they stand; every malformed
# file gets one error line naming the file and the key, exit 2; one small
# recipe trains 5 steps; bits per byte beside the loss in the JSON events;
# --target-val / --stop-at-target.
set -u
. "$(dirname "$0")/../support/cli_lib.sh" runfile
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
make_text text.txt

# ---------- every shipped recipe resolves ----------
n=0
for r in "$ROOT"/recipes/*.json; do
    n=$((n + 1))
    name="$(basename "$r")"
    "$T" train --config "$r" --print-config > "$name.out" 2> "$name.err"
    rc=$?
    check "recipe $name resolves" test $rc -eq 0 -a ! -s "$name.err"
    data="$(sed -n 's/^  "data": "\(.*\)"$/\1/p' "$name.out")"
    if grep -q '"data"' "$r"; then check "recipe $name: its corpus exists ($data)" test -s "$data"; fi
done
check "recipes are shipped" test $n -ge 3
check "shakespeare_char has the nanoGPT recipe" grep -q '"dropout": 0.2' shakespeare_char.json.out

# ---------- the print-config round trip ----------
FLAGS=(--preset tiny --steps 6 --lr 3e-3 --warmup 2 --beta2 0.99 --dropout 0.1 --eval-every 3 --seed 7 --backend cpu --threads 2 --data text.txt)
"$T" train "${FLAGS[@]}" --print-config > a.json
"$T" train --config a.json --print-config > b.json
check "print-config output fed back prints the same" cmp -s a.json b.json
check "print-config holds the corpus" grep -q '"data": "/.*text.txt"' a.json
mkdir sub && cp a.json sub/a.json
"$T" train "${FLAGS[@]}" --out run_flags --sample-tokens 0 --json > flags.out 2>&1
"$T" train --config sub/a.json --out run_file --sample-tokens 0 --json > file.out 2>&1
check "the run file trains the same run as the flags (loss.csv)" cmp -s run_flags/loss.csv run_file/loss.csv
check "the run file trains the same run as the flags (checkpoint)" cmp -s run_flags/checkpoint.safetensors run_file/checkpoint.safetensors

# ---------- precedence: defaults < file < flags, regardless of order ----------
printf '{"preset": "tiny", "steps": 9, "weight_decay": 0.2, "schedule": "constant"}\n' > p.json
"$T" train --steps 7 --config p.json --print-config > p1.out
"$T" train --config p.json --steps 7 --print-config > p2.out
check "a flag before --config wins" grep -q '"steps": 7,' p1.out
check "a flag after --config wins" grep -q '"steps": 7,' p2.out
check "the file wins over defaults (alias weight_decay)" grep -q '"weight-decay": 0.2,' p1.out
check "a choice from the file" grep -q '"schedule": "constant",' p1.out
check "a default stays" grep -q '"beta1": 0.9,' p1.out
printf '{"data": "text.txt", "preset": "tiny"}\n' > sub/d.json && cp text.txt sub/
"$T" train --config sub/d.json --print-config > d.out
check "data is relative to the run file's folder" grep -q '"data": "/.*/sub/text.txt"' d.out

# ---------- malformed run files: one line naming the file and key, exit 2 ----------
bad_file() { # bad_file NAME CONTENT KEY-TEXT
    printf '%s' "$2" > bad.json
    "$T" train --config bad.json --print-config > bad.out 2> bad.err
    local rc=$?
    if [ $rc -eq 2 ] && [ "$(wc -l < bad.err)" -eq 1 ] && grep -q '^tinytrain: error: bad.json: ' bad.err &&
        grep -qF -- "$3" bad.err && [ ! -s bad.out ]; then
        ok "$1"
    else
        bad "$1 (rc $rc: $(head -c 300 bad.err))"
    fi
}
bad_file "not JSON" '{"lr": 1e-3,}' "not a valid run file"
bad_file "not an object" '[{"lr": 1e-3}]' "JSON object"
bad_file "unknown key, closest name suggested" '{"lrate": 1e-3}' "unknown key 'lrate' (did you mean 'lr'?)"
bad_file "unknown key far from any name" '{"zzzzzzzzzz": 1}' "unknown key 'zzzzzzzzzz'"
bad_file "a string for a number" '{"lr": "1e-3"}' "'lr' must be a number"
bad_file "a fraction for an integer" '{"steps": 2.5}' "'steps'"
bad_file "a number for a choice" '{"schedule": 1}' "'schedule' must be a string"
bad_file "null" '{"dropout": null}' "'dropout' must be a number"
bad_file "out of range" '{"dropout": 1}' "'dropout'"
bad_file "negative steps" '{"steps": -5}' "'steps'"
bad_file "unknown choice" '{"schedule": "linear"}' "'schedule'"
bad_file "duplicate key" '{"lr": 1e-3, "lr": 2e-3}' 'duplicate key "lr"'
bad_file "a key and its older name" '{"weight-decay": 0.1, "wd": 0.2}' "given twice"
bad_file "data not a string" '{"data": 3}' "'data' must be a non-empty string"
"$T" train --config missing.json > m.out 2> m.err
check "a missing run file: one line naming it" test $? -ne 0 -a "$(wc -l < m.err)" -eq 1
check "a missing run file: the message names it" grep -q "missing.json" m.err

# ---------- one small recipe trains 5 steps; bits per byte; the target ----------
"$T" train --config "$ROOT/recipes/quick_cpu.json" --steps 5 --warmup 1 --eval-every 5 --threads 2 --out q --sample-tokens 0 --json > q.out 2> q.err
check "quick_cpu trains 5 steps" test $? -eq 0 -a -s q/checkpoint.safetensors
check "step events carry bpb = loss / ln 2" node -e '
const ls = require("fs").readFileSync("q.out", "utf8").trim().split("\n").map(JSON.parse);
const st = ls.filter((e) => e.event === "step"), ev = ls.filter((e) => e.event === "eval"), end = ls.find((e) => e.event === "end");
const near = (b, l) => Math.abs(b - l / Math.LN2) < 1e-5 * b;
process.exit(st.length === 5 && st.every((e) => near(e.bpb, e.loss)) && ev.length === 1 && near(ev[0].val_bpb, ev[0].val_loss) &&
             near(end.best_val_bpb, end.best_val) ? 0 : 1);'
"$T" train --preset tiny --data text.txt --steps 12 --eval-every 2 --target-val 100 --stop-at-target 1 --backend cpu \
    --threads 2 --out tgt --sample-tokens 0 --json > tgt.out 2> tgt.err
check "--stop-at-target stops at the first eval at or below the target" grep -q '"event":"end","step":2,"steps":12,"stopped":true' tgt.out
check "the target is reported once" test "$(grep -c '"event":"target","step":2,' tgt.out)" -eq 1
"$T" train --data text.txt --resume tgt/checkpoint.safetensors --target-val 100 --backend cpu --threads 2 --sample-tokens 0 --json > tgt2.out 2>&1
check "a resumed run keeps the target (saved in the checkpoint), not reported again" \
    bash -c 'grep -q "\"target_step\":2," tgt2.out && ! grep -q "\"event\":\"target\"" tgt2.out'
"$T" train --preset tiny --data text.txt --steps 4 --eval-every 2 --target-val 0.01 --backend cpu --threads 2 --out tgt3 --sample-tokens 0 > tgt3.out 2>&1
check "an unreached target is said" grep -q "target val loss 0.01 not reached" tgt3.out

echo "runfile: $PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
