#!/usr/bin/env bash
# test_cli.sh — the `tinytrain` command line end to end, in a temp dir, on the
# tiny preset with a few steps: train (the README's main command, shortened),
# exact resume through the CLI, sample, eval, info, export, bench, Ctrl-C, and
# every bad input: exit code 1 or 2, exactly one stderr line starting with
# "tinytrain: error: ", never a crash (signal exit / core dump).
set -u
. "$(dirname "$0")/../support/cli_lib.sh" cli

# a text corpus that does not depend on the fortunes package: 60 kB of varied lines
make_text text.txt

# ---------- the main command (default corpus when installed), shortened ----------
if [ -d /usr/share/games/fortunes ] || [ -d /usr/share/fortunes ]; then DATA=(); echo "     (default corpus: fortunes)"; else DATA=(--data text.txt); echo "     (fortunes not installed: using a generated corpus)"; fi
"$T" train --preset tiny --steps 20 --eval-every 10 "${DATA[@]}" > train.out 2> train.err
rc=$?
check "train exits 0" test $rc -eq 0
check "train writes the checkpoint" test -s runs/tiny/checkpoint.safetensors
check "train writes loss.csv (header + 20 rows)" test "$(wc -l < runs/tiny/loss.csv)" -eq 21
check "loss.csv has validation at steps 10 and 20" test "$(grep -cE '^(10|20),[0-9.]+,[0-9.]+$' runs/tiny/loss.csv)" -eq 2
check "train writes loss.svg" grep -q '</svg>' runs/tiny/loss.svg
check "train prints progress lines when piped" grep -q '^step 20/20' train.out
check "train prints a summary" grep -q '^done: 20 steps' train.out
check "train prints a sample" grep -q '^--- sample' train.out
check "train writes no errors" bash -c "! grep -q error train.err"

# ---------- resume continues the run ----------
"$T" train --resume runs/tiny/checkpoint.safetensors --steps 26 --sample-tokens 0 --backend cpu > resume.out 2> resume.err
check "resume exits 0" test $? -eq 0
check "resume starts at step 21" grep -q 'steps 21..26' resume.out
check "resume extends loss.csv" test "$(wc -l < runs/tiny/loss.csv)" -eq 27

# ---------- exact resume through the CLI: straight == stopped + resumed ----------
"$T" train --data text.txt --preset tiny --steps 24 --eval-every 8 --out a --sample-tokens 0 --backend cpu > /dev/null 2>&1
"$T" train --data text.txt --preset tiny --steps 24 --eval-every 8 --out b --stop-after 11 --backend cpu > stop.out 2>&1
check "--stop-after exits 0 and says so" grep -q 'stopped (--stop-after) at step 11 of 24' stop.out
"$T" train --resume b/checkpoint.safetensors --data text.txt --sample-tokens 0 --backend cpu > /dev/null 2>&1
check "resumed loss curve is identical to the straight run" cmp -s a/loss.csv b/loss.csv
check "resumed checkpoint is byte-identical to the straight run" cmp -s a/checkpoint.safetensors b/checkpoint.safetensors
# a stop at a step whose evaluation is due makes it (the resumed run starts after it)
"$T" train --data text.txt --preset tiny --steps 24 --eval-every 8 --out c --stop-after 16 --backend cpu > /dev/null 2>&1
"$T" train --resume c/checkpoint.safetensors --data text.txt --sample-tokens 0 --backend cpu > /dev/null 2>&1
check "stopped at an eval step + resumed: the same loss curve (with its eval) as the straight run" cmp -s a/loss.csv c/loss.csv

# ---------- sample ----------
"$T" sample --ckpt a/checkpoint.safetensors --prompt "The cat " --tokens 60 --seed 3 > s1.out 2> s1.err
check "sample exits 0" test $? -eq 0
check "sample starts with the prompt" test "$(head -c 8 s1.out)" = "The cat "
check "sample prints prompt + 60 bytes + newline" test "$(wc -c < s1.out)" -eq 69
"$T" sample --ckpt a/checkpoint.safetensors --prompt "The cat " --tokens 60 --seed 3 > s2.out 2>&1
check "sample is deterministic with a seed" cmp -s s1.out s2.out
"$T" sample --ckpt a/checkpoint.safetensors --prompt "The cat " --tokens 60 --seed 4 > s3.out 2>&1
check "another seed gives another sample" bash -c '! cmp -s s1.out s3.out'
"$T" sample --ckpt a/checkpoint.safetensors --tokens 20 --json > s4.out 2>&1
check "sample --json prints one object" grep -q '^{"event":"sample","prompt":"","text":' s4.out

# ---------- eval, info, export, bench ----------
"$T" eval --ckpt a/checkpoint.safetensors --data text.txt > eval.out 2>&1
check "eval exits 0 and prints the loss" grep -q '^val loss [0-9.]* (' eval.out
"$T" eval --ckpt a/checkpoint.safetensors --data text.txt --json > evalj.out 2>&1
check "eval --json" grep -q '"same_corpus":true' evalj.out
"$T" info > info.out 2>&1
check "info exits 0" test $? -eq 0
check "info lists presets with exact parameter counts" grep -qE '^small +3 +96 +3 +64 +16 +366,432' info.out
check "info reports the SIMD ISA" grep -q '^cpu  *SIMD ' info.out
check "info reports webgpu" grep -q '^webgpu ' info.out
"$T" info --json > infoj.out 2>&1
check "info --json" grep -q '"presets":\[{"name":"tiny"' infoj.out
"$T" export --ckpt a/checkpoint.safetensors --out model.safetensors > export.out 2>&1
check "export exits 0" test $? -eq 0
check "export uses Hugging Face names" bash -c 'head -c 20000 model.safetensors | grep -aq "h.0.attn.c_attn.weight" && head -c 20000 model.safetensors | grep -aq "\"wte.weight\""'
check "export holds no optimizer state" bash -c '! head -c 20000 model.safetensors | grep -aq adam_m'
"$T" bench --backend cpu --preset tiny --steps 10 --warmup 1 > bench.out 2>&1
check "bench prints steady-state ms/step" grep -q '^steady .* ms/step median over 10 steps' bench.out
check "bench prints tokens/s and GFLOP/s" grep -q 'tokens/s, .* GFLOP/s' bench.out
"$T" bench --backend cpu --preset tiny --steps 10 --warmup 1 --json > benchj.out 2>&1
check "bench --json" grep -q '"ms_per_step":{"median":' benchj.out
"$T" --help > help.out 2>&1
check "--help" grep -q 'usage: tinytrain' help.out
"$T" train --help > thelp.out 2>&1
check "train --help lists options" grep -q -- '--resume' thelp.out

# ---------- Ctrl-C saves and exits cleanly ----------
"$T" train --data text.txt --preset tiny --steps 1000000 --out int --json --backend cpu > int.out 2> int.err &
pid=$!
for _ in $(seq 1 300); do grep -q '"event":"step"' int.out 2>/dev/null && break; sleep 0.1; done
kill -INT $pid
wait $pid
rc=$?
check "Ctrl-C exits with 130" test $rc -eq 130
check "Ctrl-C saves a checkpoint" test -s int/checkpoint.safetensors
check "Ctrl-C reports the stop" grep -q '"event":"end".*"stopped":true' int.out
"$T" train --resume int/checkpoint.safetensors --data text.txt --stop-after 2 --sample-tokens 0 --backend cpu > int2.out 2>&1
check "the interrupted run resumes" grep -q 'stopped (--stop-after)' int2.out

# ---------- bad input: exit 1/2, one line "tinytrain: error: ...", no crash ----------
printf 'abc\000def\n%.0s' $(seq 1 200) > binary.txt
head -c 4000 /dev/urandom | tr -d '\000' > random.bin 2>/dev/null || true
: > empty.txt
echo "too short for ctx" > short.txt
mkdir -p emptydir
echo "not a folder" > afile
head -c 100 a/checkpoint.safetensors > truncated.safetensors
printf 'garbage that is not a checkpoint' > garbage.safetensors

expect_error() { # expect_error NAME ARGS...
    local name="$1"; shift
    "$T" "$@" > err.out 2> err.err
    local rc=$?
    local lines first
    lines=$(wc -l < err.err)
    first=$(head -c 18 err.err)
    if [ $rc -ne 1 ] && [ $rc -ne 2 ]; then
        bad "$name: exit code $rc (want 1 or 2)"; cat err.err
    elif [ "$lines" -ne 1 ] || [ "$first" != "tinytrain: error: " ]; then
        bad "$name: stderr is not one 'tinytrain: error:' line"; cat err.err
    else
        ok "$name -> $(cat err.err)"
    fi
}
expect_error "missing corpus" train --data nope.txt --backend cpu
expect_error "empty corpus" train --data empty.txt --backend cpu
expect_error "binary corpus (NUL)" train --data binary.txt --backend cpu
[ -s random.bin ] && expect_error "binary corpus (random bytes)" train --data random.bin --backend cpu
expect_error "folder without text" train --data emptydir --backend cpu
expect_error "corpus shorter than ctx+1" train --data short.txt --preset tiny --backend cpu
expect_error "unknown preset" train --preset nope
expect_error "unknown option" train --bogus 1
expect_error "unknown command" frobnicate
expect_error "stray argument" train extra
expect_error "missing option value" train --steps
expect_error "steps = 0" train --steps 0
expect_error "steps < 0" train --steps -5
expect_error "steps not a number" train --steps ten
expect_error "lr NaN" train --lr nan
expect_error "lr inf" train --lr inf
expect_error "lr negative" train --lr -0.01
expect_error "bad schedule" train --schedule linear
expect_error "heads do not divide d_model" train --d-model 50 --heads 3
expect_error "unwritable output path" train --data text.txt --preset tiny --out afile/sub --backend cpu
if [ "$(id -u)" != 0 ]; then
    mkdir -p ro && chmod 555 ro
    expect_error "read-only output folder" train --data text.txt --preset tiny --out ro --backend cpu
fi
expect_error "corrupt checkpoint (garbage)" sample --ckpt garbage.safetensors
expect_error "corrupt checkpoint (truncated)" sample --ckpt truncated.safetensors
expect_error "corrupt checkpoint on resume" train --resume truncated.safetensors
expect_error "missing checkpoint" eval --ckpt nope.safetensors --data text.txt
expect_error "config mismatch on resume" train --resume a/checkpoint.safetensors --data text.txt --d-model 96
expect_error "train config mismatch on resume" train --resume a/checkpoint.safetensors --data text.txt --lr 0.1
sed "s/cat/cow/" text.txt > other.txt
expect_error "corpus mismatch on resume" train --resume a/checkpoint.safetensors --data other.txt
expect_error "sample: top-p 0" sample --ckpt a/checkpoint.safetensors --top-p 0
expect_error "sample: negative temperature" sample --ckpt a/checkpoint.safetensors --temperature -1
expect_error "export to an unwritable path" export --ckpt a/checkpoint.safetensors --out afile/x.safetensors
expect_error "bench with too few steps" bench --steps 3
expect_error "unknown backend" bench --backend nonsense

echo "$PASS passed, $FAIL failed"
[ $FAIL -eq 0 ]
