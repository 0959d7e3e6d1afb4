#!/usr/bin/env bash
# test_inspect.sh — `tinytrain inspect RUN --prompt TEXT`: the JSON is one
# valid object of the documented shape (layers x heads x T x T attention maps,
# causal, rows summing to 1; per-position top-k next bytes, most likely first;
# the full distribution after the prompt summing to 1; the logit lens with one
# row per layer plus the embedding, whose last row is the model's output), the
# run folder and the checkpoint file give the same result, the summary names
# the next byte, and every bad input is one line with a non-zero exit.
set -u
. "$(dirname "$0")/../support/cli_lib.sh" inspect

make_text text.txt
"$T" train --data text.txt --preset tiny --ctx 24 --steps 12 --out run --sample-tokens 0 --backend cpu > /dev/null 2>&1
check "a tiny run to inspect" test -s run/checkpoint.safetensors

PROMPT='the cat sat on'
"$T" inspect run --prompt "$PROMPT" --top 4 --json > a.json 2> a.err
check "inspect --json exits 0" test $? -eq 0
check "inspect --json writes nothing on stderr" test ! -s a.err
"$T" inspect run/checkpoint.safetensors --prompt "$PROMPT" --top 4 --json > b.json 2> /dev/null
check "a run folder and its checkpoint file give the same JSON" cmp -s a.json b.json

check "the JSON: causal maps with rows summing to 1, top-k next bytes, lens, distributions summing to 1" node -e '
const fs = require("fs");
const r = JSON.parse(fs.readFileSync("a.json", "utf8"));
const prompt = process.argv[1];
const T = prompt.length, L = 2, NH = 3, K = 4; // the tiny preset: 2 layers, 3 heads
const fail = (m) => { console.error(m); process.exit(1); };
if (JSON.stringify(r.bytes) !== JSON.stringify([...Buffer.from(prompt)])) fail("bytes");
if (r.backend !== "cpu" || r.n_layer !== L || r.n_head !== NH || r.top_k !== K) fail("header " + JSON.stringify([r.backend, r.n_layer, r.n_head, r.top_k]));
if (r.attention.length !== L) fail("layers");
for (const layer of r.attention) {
  if (layer.length !== NH) fail("heads");
  for (const map of layer) {
    if (map.length !== T) fail("rows");
    map.forEach((row, i) => {
      if (row.length !== T) fail("cols");
      let s = 0;
      row.forEach((p, j) => { if (j > i && p !== 0) fail(`not causal at ${i},${j}`); if (p < 0 || p > 1) fail("p range"); s += p; });
      if (Math.abs(s - 1) > 1e-5) fail(`row ${i} sums to ${s}`);
    });
  }
}
const topOk = (list) => list.length === K && list.every(([b, p], i) => b >= 0 && b < 256 && p >= 0 && p <= 1 && (i === 0 || p <= list[i - 1][1]));
if (r.next.length !== T || !r.next.every(topOk)) fail("next");
if (r.last.length !== 256) fail("last length");
const s = r.last.reduce((a, b) => a + b, 0);
if (Math.abs(s - 1) > 1e-5) fail("last sums to " + s);
const best = r.last.indexOf(Math.max(...r.last));
if (r.next[T - 1][0][0] !== best || Math.abs(r.next[T - 1][0][1] - r.last[best]) > 1e-7) fail("next[T-1] is not the top of last");
if (r.lens.length !== L + 1 || !r.lens.every((row) => row.length === T && row.every(topOk))) fail("lens shape");
if (JSON.stringify(r.lens[L]) !== JSON.stringify(r.next)) fail("the last lens row is not the model output");
for (let t = 0; t < T; t++) if (r.next[t].reduce((a, [, p]) => a + p, 0) > 1 + 1e-5) fail("top-k sums above 1");
' "$PROMPT"

"$T" inspect run --prompt "$PROMPT" > sum.out 2> sum.err
check "the summary exits 0 and names the next byte and the lens" bash -c "grep -q '^next byte after the prompt:' sum.out && grep -q '^  layer 2 ' sum.out && test ! -s sum.err"
"$T" inspect run --prompt x --top 16 --json > one.json 2> /dev/null
check "a one-byte prompt and --top 16 work" node -e 'const r = JSON.parse(require("fs").readFileSync("one.json")); process.exit(r.attention[0][0].length === 1 && r.next[0].length === 16 ? 0 : 1)'

# ---------- bad input: one line, non-zero exit, nothing written ----------
usage_error() { # usage_error NAME RC FILE: exit code 2, one stderr line
    if [ "$2" -eq 2 ] && [ "$(wc -l < "$3")" -eq 1 ] && grep -q '^tinytrain: error: ' "$3"; then ok "$1"; else bad "$1 (rc $2: $(head -c 300 "$3"))"; fi
}
"$T" inspect run --prompt '' > /dev/null 2> e1; usage_error "an empty prompt is refused" $? e1
long=$(head -c 25 /dev/zero | tr '\0' 'a') # the run's context is 24
"$T" inspect run --prompt "$long" > /dev/null 2> e2; usage_error "a prompt longer than the context is refused" $? e2
check "  ... and the message names the limit" grep -q '24 at most (its context)' e2
"$T" inspect run --prompt "$(head -c 24 /dev/zero | tr '\0' 'a')" --json > full.json 2> /dev/null
check "a prompt of exactly the context is taken" test -s full.json
"$T" inspect run --prompt abc --top 0 > /dev/null 2> e3; usage_error "--top 0 is refused" $? e3
"$T" inspect run --prompt abc --top 17 > /dev/null 2> e4; usage_error "--top 17 is refused" $? e4
"$T" inspect run --prompt abc --top x > /dev/null 2> e5; usage_error "--top x is refused" $? e5
"$T" inspect run > /dev/null 2> e6; usage_error "a missing --prompt is refused" $? e6
"$T" inspect --prompt abc > /dev/null 2> e7; usage_error "a missing RUN is refused" $? e7
"$T" inspect nowhere --prompt abc > /dev/null 2> e8; one_error "a missing run is one error line" $? e8
"$T" inspect run --prompt abc --backend gpu > /dev/null 2> e9; usage_error "an unknown backend is refused" $? e9
"$T" inspect --help > help.out 2>&1
check "inspect --help exits 0 and lists --prompt and --top" bash -c "grep -q -- '--prompt' help.out && grep -q -- '--top' help.out"
"$T" --help > main_help.out 2>&1
check "tinytrain --help lists inspect" grep -q '^  inspect ' main_help.out
check "nothing else was written into the run folder" test "$(ls run | sort | tr '\n' ' ')" = "$(ls run | grep -v inspect | sort | tr '\n' ' ')"

echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
