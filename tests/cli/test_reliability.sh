#!/usr/bin/env bash
# test_reliability.sh — what a user who cannot afford to lose a run relies
# on (docs/RELIABILITY.md), one check per defect of the outside reliability
# test (issue 14), each of which failed on e11cfa2:
#   1 the output folder is locked: a second train into it is refused, naming
#     the first run's pid, and the first run's checkpoint survives;
#   2 planted links at the temporary-file names are never followed;
#   3 temporary files of a killed save are removed at the next start;
#   4 a FIFO given as a checkpoint is refused at once (no hang);
#   5 export never writes over a training checkpoint;
#   6 NaN/Inf weights are refused on load by sample, eval, export, resume;
#   7 the corpus is streamed: a binary file is refused from its first bytes,
#     a size limit is checked before reading, a FIFO is refused;
#   8 a resumed run may be shorter than its warmup, and --warmup may change;
#   9 small ones: empty and option-like paths, the largest seed, long paths,
#     no empty folder left by a failed run.
set -u
. "$(dirname "$0")/../support/cli_lib.sh" reliability
make_text text.txt
C=(--preset tiny --data text.txt --backend cpu --threads 1 --sample-tokens 0)

# ---------- 1: the lock ----------
"$T" train "${C[@]}" --steps 100000 --save-every 1 --out D > first.out 2>&1 &
first=$!
for i in $(seq 1 100); do [ -s D/checkpoint.safetensors ] && break; sleep 0.1; done
"$T" train "${C[@]}" --steps 20 --seed 2 --out D > second.out 2> second.err
one_error "a second run into a locked folder: one error line, exit 1" $? second.err
check "  ... naming the other run's pid" grep -q "in use by another tinytrain run (pid $first)" second.err
kill -INT $first; wait $first
"$T" train --resume D/checkpoint.safetensors --data text.txt --backend cpu --sample-tokens 0 --steps 1 > r.out 2>&1
check "  ... and the first run's checkpoint is its own (seed 1337), intact" bash -c "grep -q 'already at step' r.out || grep -q 'resuming' r.out"
"$T" train "${C[@]}" --steps 3 --out D2 > /dev/null 2>&1
check "the lock is released when a run ends (a new run into the folder works)" \
    bash -c "'$T' train --resume D2/checkpoint.safetensors --data text.txt --backend cpu --sample-tokens 0 --steps 4 > /dev/null 2>&1"

# ---------- 2: planted links are not followed ----------
mkdir -p L
echo precious > target.txt
for name in loss.csv loss.svg checkpoint.safetensors .tinytrain-write-test; do
    rm -rf L/* L/.t* 2>/dev/null
    # exec keeps the shell's pid, so the link sits exactly at the name tinytrain will use
    bash -c 'ln -s "$PWD/target.txt" "L/'"$name"'.tmp.$$" 2>/dev/null || ln -s "$PWD/target.txt" "L/'"$name"'.$$"; exec "$0" "$@"' \
        "$T" train "${C[@]}" --steps 3 --eval-every 1 --out L > l.out 2> l.err
    check "a link planted at $name's temporary name: the target is unchanged" test "$(cat target.txt)" = precious
done

# ---------- 3: stale temporary files ----------
"$T" train "${C[@]}" --steps 4 --out S > /dev/null 2>&1
sh -c 'exit 0' & dead=$!; wait $dead   # a pid that no longer runs
head -c 100000 /dev/urandom > "S/checkpoint.safetensors.tmp.$dead"
cp S/loss.csv "S/loss.csv.tmp.$dead"
"$T" train --resume S/checkpoint.safetensors --data text.txt --backend cpu --sample-tokens 0 --steps 6 > s.out 2> s.err
check "temporary files of a dead process are removed at start" \
    bash -c "[ ! -e S/checkpoint.safetensors.tmp.$dead ] && [ ! -e S/loss.csv.tmp.$dead ]"
check "  ... and it says so" grep -q 'removed 2 temporary files' s.err

# ---------- 4: a FIFO is refused, never waited on ----------
mkfifo fifo
for cmd in "sample --ckpt fifo" "eval --ckpt fifo --data text.txt" "export --ckpt fifo --out x.safetensors" \
           "train --resume fifo --data text.txt"; do
    timeout 20 "$T" $cmd > f.out 2> f.err
    rc=$?
    check "FIFO as a checkpoint ($cmd): no hang" test $rc -ne 124
    one_error "  ... one error line, exit 1" $rc f.err
    check "  ... saying it is a FIFO" grep -q 'is a FIFO, not a regular file' f.err
done

# ---------- 5: export never replaces a training checkpoint ----------
cp S/checkpoint.safetensors before.safetensors
"$T" export --ckpt S/checkpoint.safetensors --out S/checkpoint.safetensors > e.out 2> e.err
one_error "export onto the checkpoint it reads: one error line, exit 1" $? e.err
check "  ... the checkpoint is unchanged" cmp -s before.safetensors S/checkpoint.safetensors
"$T" export --ckpt S/checkpoint.safetensors --out D2/checkpoint.safetensors > e.out 2> e.err
one_error "export onto another training checkpoint: refused" $? e.err
"$T" export --ckpt S/checkpoint.safetensors --out S/model.safetensors > /dev/null 2>&1
check "export to a fresh file still works" test -s S/model.safetensors
"$T" train "${C[@]}" --steps 3 --out S/exp > /dev/null 2>&1
cp S/model.safetensors S/exp/checkpoint.safetensors
"$T" train "${C[@]}" --steps 3 --out S/exp > t.out 2> t.err
one_error "train into a folder whose checkpoint.safetensors is an export: refused" $? t.err

# ---------- 6: non-finite weights ----------
cp S/checkpoint.safetensors nan.safetensors
# the first float of the data section (after the u64 header length and the header) becomes NaN
hlen=$(od -An -t u8 -N 8 nan.safetensors | tr -d ' ')
printf '\x00\x00\xc0\x7f' | dd of=nan.safetensors bs=1 seek=$((8 + hlen)) conv=notrunc 2> /dev/null
for cmd in "sample --ckpt nan.safetensors" "eval --ckpt nan.safetensors --data text.txt" \
           "export --ckpt nan.safetensors --out n.safetensors" "train --resume nan.safetensors --data text.txt --steps 9"; do
    "$T" $cmd > n.out 2> n.err
    one_error "NaN weight ($cmd): one error line, exit 1" $? n.err
    check "  ... naming the tensor and the NaN" grep -q 'holds a non-finite value (NaN' n.err
done

# ---------- 7: the corpus is streamed, checked early and capped ----------
truncate -s 2G zeros.bin   # sparse: no disk used
( ulimit -v 1000000; "$T" train "${C[@]}" --data zeros.bin --steps 2 --out Z > z.out 2> z.err )
one_error "a 2 GiB file of zeros, under a 1 GB memory limit: one error line, exit 1" $? z.err
check "  ... found binary from its first bytes (not out of memory)" grep -q 'looks binary' z.err
rm -f zeros.bin
truncate -s 65G huge.txt
"$T" train "${C[@]}" --data huge.txt --steps 2 --out Z > z.out 2> z.err
one_error "a corpus above the size limit: one error line, exit 1" $? z.err
check "  ... naming the limit, before reading anything" grep -q 'corpus too large.*reads at most' z.err
rm -f huge.txt
printf 'a' > one.txt
"$T" train "${C[@]}" --data one.txt --steps 2 --out Z > z.out 2> z.err
check "a 1-byte corpus is reported as 1 byte" grep -q 'too short: 1 bytes (+ the line end it lacked)' z.err
mkfifo cfifo
timeout 20 "$T" train "${C[@]}" --data cfifo --steps 2 --out Z > z.out 2> z.err
rc=$?
check "a FIFO as the corpus: refused at once" bash -c "[ $rc -eq 1 ] && [ \$(wc -l < z.err) -eq 1 ]"

# ---------- 8: a resumed run shorter than its warmup ----------
"$T" train "${C[@]}" --steps 200 --warmup 100 --stop-after 20 --out W > /dev/null 2>&1
"$T" train --resume W/checkpoint.safetensors --data text.txt --backend cpu --sample-tokens 0 --steps 60 > w.out 2> w.err
check "resume with --steps below the warmup trains to the end" bash -c "grep -q '^done: 60 steps' w.out"
check "  ... saying the warmup is cut" grep -q 'shorter than its warmup' w.err
"$T" train "${C[@]}" --steps 200 --warmup 100 --stop-after 20 --out W2 > /dev/null 2>&1
"$T" train --resume W2/checkpoint.safetensors --data text.txt --backend cpu --sample-tokens 0 --warmup 30 --steps 40 > w.out 2> w.err
check "resume with another --warmup trains to the end" bash -c "grep -q '^done: 40 steps' w.out"

# ---------- 9: small ones ----------
"$T" train "${C[@]}" --steps 2 --out "" > o.out 2> o.err
rc=$?
check "--out '': exit 2 (a bad command line)" test $rc -eq 2
check "  ... one line saying the path is empty (not 'Success')" bash -c "[ \$(wc -l < o.err) -eq 1 ] && grep -q 'needs a path' o.err && ! grep -q Success o.err"
"$T" train "${C[@]}" --steps 2 --out --steps > o.out 2> o.err
rc=$?
check "--out --steps is refused (no folder named --steps)" bash -c "[ $rc -ne 0 ] && [ ! -e ./--steps ] && grep -q 'needs a path' o.err"
"$T" train --preset tiny --data "" --steps 2 > o.out 2> o.err
check "--data '' is refused, not the default corpus" grep -q 'needs a path' o.err
"$T" train "${C[@]}" --steps 2 --seed 18446744073709551615 --out SEED > o.out 2> o.err
check "the largest seed a checkpoint holds is accepted" test -s SEED/checkpoint.safetensors
long=$(printf 'x%.0s' $(seq 1 5000))
"$T" train "${C[@]}" --steps 2 --out "$long/y" > o.out 2> o.err
check "a 5000-character --out keeps the reason in the message" grep -q 'File name too long\|too long' o.err
printf 'ab' > tiny.txt
"$T" train --preset tiny --data tiny.txt --backend cpu --steps 2 --out EMPTY > o.out 2> o.err
check "a failed run leaves no empty output folder" test ! -e EMPTY

echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
