#!/usr/bin/env bash
# scripts/fuzz.sh — fuzz the file readers with libFuzzer, AddressSanitizer
# and UBSan: the checkpoint reader (tests/fuzz/fuzz_checkpoint.c:
# tt_checkpoint_load_mem + the JSON parser; seeds made from a real checkpoint
# of a tiny model), the corpus reader (tests/fuzz/fuzz_corpus.c: binary
# check, length rule, split, batches; and the option parser) or the
# tokenizer's readers (tests/fuzz/fuzz_tokenizer.c: tokenizer.json, vocab.json
# + merges.txt, the token cache) or the peft adapter reader
# (tests/fuzz/fuzz_peft.c: adapter_config.json + adapter_model.safetensors
# onto a tiny base; seeds: the folders tt_export_peft writes).
#
#   scripts/fuzz.sh [checkpoint|corpus|tokenizer|peft] [SECONDS]   (default: checkpoint, 60 s)
# Environment: FUZZ_DIR (work folder, default <repo>/build-fuzz), FUZZ_JOBS
# (parallel fuzzing processes, default 1), CC_FUZZ (default clang).
# The corpus grows in $FUZZ_DIR/corpus across runs; crashes land in
# $FUZZ_DIR/crashes/ and make the script exit non-zero. Reproduce one with
#   $FUZZ_DIR/fuzz_checkpoint $FUZZ_DIR/crashes/crash-...
set -euo pipefail

TARGET=checkpoint
case "${1:-}" in checkpoint|corpus|tokenizer|peft) TARGET=$1; shift ;; esac
SECS="${1:-60}"
case "$SECS" in '' | *[!0-9]*) echo "fuzz.sh: SECONDS must be a positive integer (got '$SECS')" >&2; exit 2 ;; esac
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${FUZZ_DIR:-$ROOT/build-fuzz}"
CC="${CC_FUZZ:-clang}"
JOBS="${FUZZ_JOBS:-1}"
command -v "$CC" >/dev/null 2>&1 || { echo "fuzz.sh: $CC not found (apt-get install clang)" >&2; exit 1; }

FLAGS=(-std=gnu11 -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all -I"$ROOT/src" -I"$ROOT/src/io" -I"$ROOT/src/train" -I"$ROOT/src/cpu" -I"$ROOT/src/webgpu")
mkdir -p "$OUT/obj" "$OUT/corpus" "$OUT/crashes"
rm -rf "$OUT/seeds" && mkdir -p "$OUT/seeds"
rm -f "$OUT"/obj/*.o "$OUT/libttfuzz.a"

echo "fuzz.sh: building with $("$CC" --version | head -1)"
# The library sources (src/*.c, src/io, src/engine, src/train), coverage-instrumented; the linker takes from
# the archive only what the checkpoint reader needs.
# A file that does not compile is skipped with a warning (if the reader needs
# it, the link below fails and says which symbol is missing).
# the tokenizer's Unicode table is generated (src/tok/unicode.cmake does the same in a build)
python3 "$ROOT/src/tok/gen_unicode.py" /usr/share/unicode/UnicodeData.txt /usr/share/unicode/PropList.txt "$OUT/tt_unicode_table.c"
for f in "$ROOT"/src/*.c "$ROOT"/src/io/*.c "$ROOT"/src/engine/*.c "$ROOT"/src/train/*.c "$ROOT"/src/tok/*.c "$OUT/tt_unicode_table.c"; do
    "$CC" "${FLAGS[@]}" -fsanitize=fuzzer-no-link -c "$f" -o "$OUT/obj/$(basename "${f%.c}").o" ||
        echo "fuzz.sh: warning: skipping $f (does not compile)" >&2
done
ar rcs "$OUT/libttfuzz.a" "$OUT"/obj/*.o
for t in checkpoint corpus tokenizer peft; do
    "$CC" "${FLAGS[@]}" -fsanitize=fuzzer "$ROOT/tests/fuzz/fuzz_$t.c" "$OUT/libttfuzz.a" -lm -lpthread -ldl \
        -o "$OUT/fuzz_$t"
done

# Seeds from real files (the binary writes them when TT_FUZZ_MAKE_SEEDS is set).
TT_FUZZ_MAKE_SEEDS="$OUT/seeds" "$OUT/fuzz_checkpoint"
echo "fuzz.sh: $(ls "$OUT/seeds" | wc -l) seeds in $OUT/seeds"

# A dictionary of the format's words helps the mutator reach deep checks.
cat >"$OUT/checkpoint.dict" <<'EOF'
"__metadata__"
"dtype"
"shape"
"data_offsets"
"F32"
"F16"
"BF16"
"I64"
"U8"
"format"
"version"
"tinytrain-checkpoint"
"pt"
"config"
"train_config"
"step"
"seed"
"loss_history"
"val_history"
"best_val"
"best_val_step"
"corpus_hash"
"corpus_bytes"
"params."
"adam_m."
"adam_v."
"wte.weight"
"h.0.attn.q.weight"
"\"nan\""
"\"inf\""
"\\u"
"\\ud83d\\ude00"
"18446744073709551615"
"9223372036854775808"
"1e39"
"-0"
EOF

mkdir -p "$OUT/corpus-$TARGET"
if [ "$TARGET" = checkpoint ]; then
    RUN_IN=("$OUT/corpus-checkpoint" "$OUT/seeds" -dict="$OUT/checkpoint.dict")
elif [ "$TARGET" = peft ]; then
    rm -rf "$OUT/seeds-peft" && mkdir -p "$OUT/seeds-peft"
    TT_FUZZ_MAKE_SEEDS="$OUT/seeds-peft" "$OUT/fuzz_peft"
    { cat "$OUT/checkpoint.dict"; printf '"%s"\n' peft_type LORA r lora_alpha target_modules fan_in_fan_out bias none \
        use_rslora use_dora layers_to_transform modules_to_save rank_pattern alpha_pattern all-linear c_attn c_proj c_fc \
        attn.c_proj mlp.c_proj base_model.model.transformer.h.1. .lora_A.weight .lora_B.weight; } > "$OUT/peft.dict"
    RUN_IN=("$OUT/corpus-peft" "$OUT/seeds-peft" -dict="$OUT/peft.dict")
elif [ "$TARGET" = tokenizer ]; then
    # seeds: a small byte-level BPE as tokenizer.json (byte 0 = 0) and as vocab.json NUL merges.txt (byte 0 = 1)
    rm -rf "$OUT/seeds-tokenizer" && mkdir -p "$OUT/seeds-tokenizer"
    python3 - "$OUT/seeds-tokenizer" <<'PY'
import json, sys
pr = [x for x in range(256) if 0x21 <= x <= 0x7e or 0xa1 <= x <= 0xac or 0xae <= x <= 0xff]
np = [x for x in range(256) if x not in pr]
ch = lambda b: chr(b) if b in pr else chr(256 + np.index(b))
bl = lambda s: "".join(ch(b) for b in s.encode())
vocab = {ch(b): b for b in range(256)}
merges = [("t", "h"), ("th", "e"), (" ", "the"), ("a", "n"), ("'", "s")]
for a, b in merges: vocab[bl(a + b)] = len(vocab)
vocab["<|endoftext|>"] = len(vocab)
tj = {"added_tokens": [{"id": vocab["<|endoftext|>"], "content": "<|endoftext|>", "special": True}], "normalizer": None,
      "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False}, "decoder": {"type": "ByteLevel"},
      "model": {"type": "BPE", "vocab": vocab, "merges": [f"{bl(a)} {bl(b)}" for a, b in merges]}}
open(sys.argv[1] + "/json", "wb").write(b"\0" + json.dumps(tj).encode())
open(sys.argv[1] + "/vm", "wb").write(b"\1" + json.dumps(vocab).encode() + b"\0#version: 0.2\n" +
                                      "".join(f"{bl(a)} {bl(b)}\n" for a, b in merges).encode())
PY
    RUN_IN=("$OUT/corpus-tokenizer" "$OUT/seeds-tokenizer")
else
    RUN_IN=("$OUT/corpus-corpus")
fi
echo "fuzz.sh: fuzzing the $TARGET reader for ${SECS}s (jobs: $JOBS)"
set +e
if [ "$JOBS" -gt 1 ]; then
    "$OUT/fuzz_$TARGET" "${RUN_IN[@]}" -max_total_time="$SECS" \
        -timeout=20 -rss_limit_mb=2048 -max_len=65536 -artifact_prefix="$OUT/crashes/" -print_final_stats=1 \
        -jobs="$JOBS" -workers="$JOBS"
else
    "$OUT/fuzz_$TARGET" "${RUN_IN[@]}" -max_total_time="$SECS" \
        -timeout=20 -rss_limit_mb=2048 -max_len=65536 -artifact_prefix="$OUT/crashes/" -print_final_stats=1
fi
rc=$?
set -e
if [ $rc -ne 0 ] || ls "$OUT"/crashes/crash-* "$OUT"/crashes/leak-* "$OUT"/crashes/timeout-* "$OUT"/crashes/oom-* >/dev/null 2>&1; then
    echo "fuzz.sh: FAILED (exit $rc); see $OUT/crashes/" >&2
    exit 1
fi
echo "fuzz.sh: no crashes in ${SECS}s ($TARGET); corpus: $(ls "$OUT/corpus-$TARGET" | wc -l) inputs"
