#!/usr/bin/env bash
# test_dropout.sh — `tinytrain train --dropout` end to end on the CPU: a
# value outside [0, 1) or not a number, and a model whose mask indices would
# not fit 32 bits, get one "tinytrain: error: " line, a non-zero exit and no
# output folder; and dropout does what it should on a tiny corpus (tiny
# preset, 60 steps, same seed and batches): the training loss with dropout
# 0.3 is higher than without, the validation loss of the dropout run (eval
# never drops) is below its own training loss, and eval of its checkpoint
# gives the same loss twice and the loss the run recorded.
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

echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
