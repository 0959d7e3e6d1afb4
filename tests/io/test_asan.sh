#!/usr/bin/env bash
# test_asan.sh — the file readers and input validation under AddressSanitizer
# + UBSan: runs the sanitizer build's checkpoint and data tests, and feeds the
# sanitizer-built CLI corrupt checkpoints and bad corpora. The sanitizer tree
# is built by scripts/test.sh (build-asan, TT_ASAN_DIR). Without it: skip,
# unless TT_REQUIRE_ASAN=1 or CI=true.
set -u
dir=${TT_ASAN_DIR:-}
if [ -z "$dir" ] || [ ! -x "$dir/test_checkpoint" ]; then
  if [ "${TT_REQUIRE_ASAN:-}" = 1 ] || [ "${CI:-}" = true ]; then
    echo "FAIL: sanitizer build missing (TT_ASAN_DIR=$dir); scripts/test.sh builds it"; echo "0 passed, 1 failed"; exit 1
  fi
  echo "SKIP: no sanitizer build (set TT_ASAN_DIR; scripts/test.sh builds build-asan)"; exit 0
fi
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=99 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=99
pass=0; fail=0
ok() { pass=$((pass+1)); echo "ok   $1"; }
bad() { fail=$((fail+1)); echo "FAIL $1"; }

for t in test_checkpoint test_data; do
  if "$dir/$t" >/tmp/tt-asan-$$.log 2>&1; then ok "$t (asan+ubsan)"; else bad "$t (asan+ubsan)"; tail -20 /tmp/tt-asan-$$.log; fi
done

# bench_ops: every op row on its own buffers (sized for both C and V), with more positions than vocabulary rows (T > V)
if [ -x "$dir/bench_ops" ]; then
  if ASAN_OPTIONS=detect_leaks=0:exitcode=99 "$dir/bench_ops" tiny 2 1 T=300 >/tmp/tt-asan-$$.log 2>&1 \
     && grep -q "softmax+CE" /tmp/tt-asan-$$.log; then ok "bench_ops, every row, T > V (asan+ubsan)"
  else bad "bench_ops, every row, T > V (asan+ubsan)"; tail -20 /tmp/tt-asan-$$.log; fi
else
  bad "bench_ops missing in $dir (scripts/test.sh builds it)"
fi

tt="$dir/tinytrain"
tmp=$(mktemp -d); trap 'rm -rf "$tmp" /tmp/tt-asan-$$.log' EXIT
# a real checkpoint to corrupt
"$tt" train --preset tiny --steps 2 --eval-every 0 --sample-tokens 0 --backend cpu --threads 2 --out "$tmp/r" >/dev/null 2>&1 \
  && ok "cli trains under asan" || bad "cli trains under asan"
ck="$tmp/r/checkpoint.safetensors"
expect_clean_error() { # name, command...: exit 1 or 2 with one error line, never a sanitizer report (99) or a signal
  local name=$1; shift
  "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  if { [ $rc = 1 ] || [ $rc = 2 ]; } && grep -q '^tinytrain: error: ' "$tmp/err" && ! grep -q 'Sanitizer' "$tmp/err"; then ok "$name"
  else bad "$name (exit $rc)"; head -5 "$tmp/err"; fi
}
if [ -f "$ck" ]; then
  size=$(stat -c %s "$ck")
  head -c 7 "$ck" > "$tmp/trunc8"; expect_clean_error "truncated length" "$tt" sample --ckpt "$tmp/trunc8" --tokens 5
  head -c $((size / 2)) "$ck" > "$tmp/half"; expect_clean_error "truncated data" "$tt" sample --ckpt "$tmp/half" --tokens 5
  for i in 1 2 3 4 5 6 7 8; do
    cp "$ck" "$tmp/m$i"
    # overwrite 16 bytes inside the JSON header at a position derived from i
    printf '%016d' "$i" | dd of="$tmp/m$i" bs=1 seek=$((8 + i * 37)) conv=notrunc status=none
    "$tt" sample --ckpt "$tmp/m$i" --tokens 3 >/dev/null 2>"$tmp/err"; rc=$?
    if [ $rc -le 2 ] && ! grep -q Sanitizer "$tmp/err"; then ok "header mutation $i (exit $rc)"; else bad "header mutation $i (exit $rc)"; head -5 "$tmp/err"; fi
  done
  head -c 4096 /dev/urandom > "$tmp/rand"; expect_clean_error "random bytes" "$tt" eval --ckpt "$tmp/rand"
fi
: > "$tmp/empty.txt"; expect_clean_error "empty corpus" "$tt" train --preset tiny --steps 1 --data "$tmp/empty.txt" --out "$tmp/x"
head -c 5000 /dev/urandom > "$tmp/bin.txt"; expect_clean_error "binary corpus" "$tt" train --preset tiny --steps 1 --data "$tmp/bin.txt" --out "$tmp/y"
echo "$pass passed, $fail failed"
[ $fail = 0 ]
