/* fuzz_tokenizer.c — libFuzzer target over the tokenizer's file readers
 * (src/tok): tokenizer.json, vocab.json + merges.txt and the token cache.
 * Built and run by scripts/fuzz.sh (`scripts/fuzz.sh tokenizer`); not a
 * CMake test.
 *
 * Input layout: byte 0 picks the reader (% 3): 0 tokenizer.json = the rest;
 * 1 vocab.json and merges.txt = the rest split at its first NUL; 2 a token
 * cache file = the rest, opened with the byte tokenizer's hash. A loaded
 * tokenizer then encodes its own input and decodes it back.
 * Contracts trapped on: a failure returns st.code with a one-line message
 * and no tokenizer; a success round-trips bytes exactly; an opened token
 * cache has only ids below its vocabulary size (ASan checks every read). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/fileio.h"
#include "tok/tokenizer.h"
#include "tok/tokfile.h"

static void check(int ok) {
    if (!ok) __builtin_trap();
}

static void check_error(int rc, const tt_status *st) {
    check(rc == st->code && st->msg[0] != 0 && !strchr(st->msg, '\n'));
}

static void round_trip(tt_tokenizer *t, const uint8_t *text, size_t n) {
    tt_tok_ids ids = {0};
    tt_status st = {0};
    check(tt_tokenizer_encode(t, text, n, &ids, &st) == TT_OK);
    check(ids.n <= n);
    char *back = NULL;
    size_t len = 0;
    check(tt_tokenizer_decode(t, ids.ids, ids.n, &back, &len, &st) == TT_OK);
    check(len == n && (n == 0 || memcmp(back, text, n) == 0));
    free(back);
    tt_tok_ids_free(&ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    int mode = data[0] % 3;
    const char *body = (const char *)data + 1;
    size_t n = size - 1;
    tt_tokenizer *t = NULL;
    tt_status st = {0};
    int rc;
    if (mode == 0) {
        rc = tt_tokenizer_from_json(body, n, "fuzz.json", &t, &st);
    } else if (mode == 1) {
        const char *nul = memchr(body, 0, n);
        size_t vn = nul ? (size_t)(nul - body) : n;
        rc = tt_tokenizer_from_vocab_merges(body, vn, nul ? nul + 1 : "", nul ? n - vn - 1 : 0, "fuzz", &t, &st);
    } else {
        tt_tokenizer *byte = NULL;
        check(tt_tokenizer_byte(&byte, &st) == TT_OK);
        char path[64];
        snprintf(path, sizeof path, "/tmp/fuzz_tokfile.%ld", (long)getpid());
        check(tt_write_atomic_buf(path, body, n, &st) == TT_OK);
        tt_tokfile f;
        rc = tt_tokfile_open(path, tt_tokenizer_hash(byte), NULL, &f, &st);
        if (rc) check_error(rc, &st);
        else {
            for (uint64_t i = 0; i < f.count; i++) check(tt_tokfile_id(&f, i) < (uint32_t)f.vocab_size);
            tt_tokfile_close(&f);
        }
        unlink(path);
        tt_tokenizer_free(byte);
        return 0;
    }
    if (rc) {
        check_error(rc, &st);
        check(t == NULL);
        return 0;
    }
    round_trip(t, data, size);
    tt_tokenizer_free(t);
    return 0;
}
