/* fuzz_corpus.c — libFuzzer target over the corpus reader
 * (tt_corpus_from_memory: the binary check, the length rule and the 90/10
 * split; then both batch samplers on the result), and over the option
 * parser of the web app and the checkpoint metadata (tt_options_parse) on
 * the same bytes. Built and run by scripts/fuzz.sh; not a CMake test.
 *
 * Input layout: byte 0 picks ctx (1 + byte % 64), the rest is the corpus.
 * Contracts trapped on: a failure returns a status equal to st.code with a
 * non-empty message; a success gives splits that each hold ctx+1 bytes and
 * batch windows inside the corpus (ASan checks every read). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "train/data.h"
#include "train/options.h"

static void check(int ok) {
    if (!ok) __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    int ctx = 1 + data[0] % 64;
    tt_corpus c;
    tt_status st = {0};
    int rc = tt_corpus_from_memory(data + 1, size - 1, ctx, &c, &st);
    if (rc) {
        check(rc == st.code && st.msg[0] != 0);
    } else {
        check(c.n == size - 1 && c.n_train >= (size_t)ctx + 1 && c.n - c.n_train >= (size_t)ctx + 1);
        check(tt_corpus_check(&c, ctx, &st) == TT_OK);
        tt_token *out = malloc(((size_t)4 * (size_t)(ctx + 1)) * sizeof *out);
        if (out) {
            tt_batch_train(&c, data[0], (int64_t)size, 4, ctx, out);
            tt_batch_val(&c, (int64_t)size, 4, ctx, out);
            free(out);
        }
        tt_corpus_free(&c);
    }
    /* the same bytes as "name=value ..." options (NUL-terminated copy) */
    char *text = malloc(size);
    if (text) {
        memcpy(text, data + 1, size - 1);
        text[size - 1] = 0;
        tt_options o;
        tt_options_init(&o);
        tt_status os = {0};
        if (tt_options_parse(&o, text, &os)) check(os.msg[0] != 0);
        free(text);
    }
    return 0;
}
