#!/usr/bin/env bash
# test_dropout.sh — `tinytrain train --dropout` end to end on the CPU: a
# value outside [0, 1) or not a number, and a model whose mask indices would
# not fit 32 bits, get one "tinytrain: error: " line, a non-zero exit and no
# output folder; and dropout does what it should on a tiny corpus (tiny
# preset, 60 steps, same seed and batches): the training loss with dropout
# 0.3 is higher than without, the validation loss of the dropout run (eval
# never drops) is below its own training loss, and eval of its checkpoint
# gives the same loss twice and the loss the run recorded. `tinytrain bench`
# takes the same --dropout and --lora-* options: its first step's loss equals
# the training run's, and a bad value gets the training option's one line.
set -u
. "$(dirname "$0")/../support/cli_lib.sh" dropout

make_text text.txt

# ---------- bad values ----------
for v in 1 -0.1 x nan 1.5; do
    "$T" train --data text.txt --preset tiny --steps 2 --dropout "$v" --out "bad_$v" > /dev/null 2> bad.err
    rc=$?
    if [ "$rc" -ne 0 ] && [ "$(wc -l < bad.err)" -eq 1 ] && grep -q '^tinytrain: error: dropout must be in \[0, 1)' bad.err; then
        ok "--dropout $v: one line, exit $rc"
    else
        bad "--dropout $v (rc $rc, stderr: $(head -c 400 bad.err))"
    fi
    check "--dropout $v writes nothing" test ! -e "bad_$v"
done
# batch*heads*ctx*ctx = 2^33: the attention masks' element index would not fit 32 bits
"$T" train --data text.txt --preset tiny --ctx 65536 --batch 2 --heads 1 --steps 2 --dropout 0.1 --out big > /dev/null 2> big.err
rc=$?
if [ "$rc" -ne 0 ] && [ "$(wc -l < big.err)" -eq 1 ] && grep -q '^tinytrain: error: dropout needs .*2^32' big.err; then
    ok "dropout on a model past the 32-bit mask index: one line, exit $rc"
else
    bad "dropout past the 32-bit index (rc $rc, stderr: $(head -c 400 big.err))"
fi
check "... writes nothing" test ! -e big

# ---------- dropout regularises, eval does not drop ----------
for d in 0 0.3; do
    "$T" train --data text.txt --preset tiny --steps 60 --eval-every 60 --dropout "$d" --out "r$d" --sample-tokens 0 \
        --backend cpu > "train$d.out" 2>&1
    check "train --dropout $d exits 0" test $? -eq 0
done
mean_last() { awk -F, 'NR > 1 && $1 > 40 { s += $2; n++ } END { printf "%.6f\n", s / n }' "$1"; }
final_val() { awk -F, 'NR > 1 && $3 != "" { v = $3 } END { print v }' "$1"; }
t0="$(mean_last r0/loss.csv)" t3="$(mean_last r0.3/loss.csv)" v3="$(final_val r0.3/loss.csv)"
echo "     train loss (steps 41..60): dropout 0 $t0, dropout 0.3 $t3; validation of the dropout run $v3"
check "dropout 0.3 trains at a higher loss than dropout 0" awk -v a="$t3" -v b="$t0" 'BEGIN { exit !(a > b) }'
check "the dropout run validates below its training loss (eval does not drop)" \
    awk -v v="$v3" -v t="$t3" 'BEGIN { exit !(v != "" && v < t) }'
"$T" eval --ckpt r0.3/checkpoint.safetensors --data text.txt --json > e1.out 2>&1
"$T" eval --ckpt r0.3/checkpoint.safetensors --data text.txt --json > e2.out 2>&1
check "eval of the dropout checkpoint is deterministic" cmp -s e1.out e2.out
ev="$(sed -n 's/.*"val_loss":\([0-9.]*\).*/\1/p' e1.out)"
check "eval gives the validation loss the run recorded ($v3)" \
    awk -v e="$ev" -v v="$v3" 'BEGIN { exit !(e != "" && sprintf("%.6g", e) == sprintf("%.6g", v)) }'

# ---------- bench: the training step with dropout / LoRA ----------
jget() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, {"d": d}))' "$@"; }
"$T" train --data text.txt --preset tiny --steps 2 --dropout 0.3 --out rb --json 2> /dev/null | grep '"event":"step","step":1,' > tr1.out
"$T" bench --data text.txt --preset tiny --steps 10 --warmup 1 --dropout 0.3 --json > bd.json 2> bd.err
"$T" bench --data text.txt --preset tiny --steps 10 --warmup 1 --json > b0.json 2> /dev/null
tl="$(sed -n 's/.*"loss":\([0-9.]*\).*/\1/p' tr1.out)"
check "bench --dropout 0.3 records dropout 0.3" test "$(jget bd.json 'd["dropout"]')" = "0.3"
check "bench --dropout 0.3: step 1 loss = the training run's step 1 ($tl)" \
    awk -v a="$(jget bd.json 'd["loss"]["1"]')" -v b="$tl" 'BEGIN { exit !(b != "" && sprintf("%.8g", a) == sprintf("%.8g", b)) }'
check "bench without dropout: another step 1 loss" \
    awk -v a="$(jget b0.json 'd["loss"]["1"]')" -v b="$tl" 'BEGIN { exit !(sprintf("%.8g", a) != sprintf("%.8g", b)) }'
"$T" bench --data text.txt --preset tiny --steps 10 --warmup 1 --lora-rank 4 --json > bl.json 2> /dev/null
check "bench --lora-rank 4: adapters start at zero (step 1 loss as without)" test "$(jget bl.json 'd["loss"]["1"]')" = "$(jget b0.json 'd["loss"]["1"]')"
check "bench --lora-rank 4: only adapters train (step 10 loss differs)" test "$(jget bl.json 'd["loss"]["10"]')" != "$(jget b0.json 'd["loss"]["10"]')"
check "bench --lora-rank 4 records the rank" test "$(jget bl.json 'd["lora_rank"]')" = "4"
for a in "--dropout 1" "--lora-rank 999" "--lora-targets nope"; do
    # shellcheck disable=SC2086
    "$T" bench --data text.txt --preset tiny --steps 10 $a > /dev/null 2> bb.err
    rc=$?
    check "bench $a: one error line, exit 2" test "$rc" -eq 2 -a "$(wc -l < bb.err)" -eq 1
done

echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
