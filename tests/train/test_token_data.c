/* test_token_data.c — the corpus as token data (data.h, tt_corpus_open with
 * a BPE tokenizer): the token cache holds the ids of one whole-text encode,
 * the 90/10 split and the batch rule of train.h counted in tokens, the
 * validation windows inside the validation split, bits per byte from the
 * validation split's tokens and bytes, the cache reused while the text is the
 * same and rebuilt when it changes, the length rule in tokens, the byte
 * tokenizer giving today's byte corpus, and a folder's files as documents
 * separated by <|endoftext|>. */
#define _DEFAULT_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rng.h"
#include "tok/tokenizer.h"
#include "tok_test.h"
#include "train/data.h"
#include "tt_test.h"

static const pair_s merges[] = {{"t", "h"}, {"th", "e"}, {" ", "the"}, {"a", "n"}, {" ", "an"}, {" an", "d"}, {"e", "r"}};

static tt_tokenizer *small_bpe(void) {
    char *json = make_tokenizer_json(merges, (int)(sizeof merges / sizeof merges[0]), 1, 0);
    tt_tokenizer *t = NULL;
    tt_status st;
    tt_status_clear(&st);
    CHECK_MSG(tt_tokenizer_from_json(json, strlen(json), "test", &t, &st) == TT_OK, "%s", st.msg);
    free(json);
    return t;
}

/* words the merges apply to, lines and some non-ASCII text */
static char *make_words(size_t n_words, uint64_t seed, size_t *len) {
    static const char *const w[] = {"the", "and", "there", "an", "other", "cat", "sat", "é", "father", "then"};
    char *p = malloc(n_words * 8 + 2);
    size_t k = 0;
    for (size_t i = 0; i < n_words; i++) {
        const char *x = w[tt_rand_u64(seed, TT_STREAM_TEST, i) % 10];
        size_t m = strlen(x);
        memcpy(p + k, x, m);
        k += m;
        p[k++] = i % 11 == 10 ? '\n' : ' ';
    }
    *len = k;
    return p;
}

static void write_all(const char *path, const void *d, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    fwrite(d, 1, n, f);
    fclose(f);
}

TT_TEST(test_token_cache_split_batches_bpb) {
    const char *dir = tt_test_tmpdir();
    char path[4200];
    snprintf(path, sizeof path, "%s/text.txt", dir);
    size_t n = 0;
    char *text = make_words(6000, 3, &n);
    write_all(path, text, n);
    tt_tokenizer *tok = small_bpe();
    tt_status st;
    tt_status_clear(&st);
    tt_tok_ids ref = {0};
    CHECK(tt_tokenizer_encode(tok, text, n, &ref, &st) == TT_OK);

    const int T = 16, B = 4;
    tt_corpus c;
    CHECK_MSG(tt_corpus_open(path, tok, dir, T, NULL, NULL, &c, &st) == TT_OK, "%s", st.msg);
    CHECK(c.cache_built == 1 && c.bytes == NULL);
    CHECK(c.n == n && c.n_tok == ref.n && ref.n < n);
    for (uint64_t i = 0; i < c.n_tok; i++)
        if (tt_tokfile_id(&c.tokens, i) != (uint32_t)ref.ids[i]) {
            CHECK_MSG(0, "cache id %llu differs from the whole-text encode", (unsigned long long)i);
            break;
        }
    CHECK(c.n_tok_train == c.n_tok / 10 * 9 + (c.n_tok % 10) * 9 / 10);

    /* training windows: start = tt_rand_below(seed, BATCH, seq, n_tok_train - T), in tokens */
    tt_token *out = malloc((size_t)B * (T + 1) * sizeof *out);
    uint64_t seed = 7;
    for (int64_t first = 0; first < 24; first += B) {
        tt_batch_train(&c, seed, first, B, T, out);
        for (int b = 0; b < B; b++) {
            uint64_t start = tt_rand_below(seed, TT_STREAM_BATCH, (uint64_t)(first + b), c.n_tok_train - T);
            CHECK(start + T + 1 <= c.n_tok_train);
            for (int t = 0; t <= T; t++) CHECK(out[(size_t)b * (T + 1) + t] == (tt_token)ref.ids[start + t]);
        }
    }
    /* validation windows: inside the validation split */
    for (int64_t k = 0; k < 6; k++) {
        tt_batch_val(&c, k, B, T, out);
        for (int b = 0; b < B; b++) {
            const tt_token *w = out + (size_t)b * (T + 1);
            int found = 0;
            for (uint64_t s = c.n_tok_train; s + T + 1 <= c.n_tok && !found; s++) {
                int same = 1;
                for (int t = 0; t <= T && same; t++) same = w[t] == (tt_token)ref.ids[s + t];
                found = same;
            }
            CHECK_MSG(found, "validation window %lld.%d is not in the validation split", (long long)k, b);
        }
    }
    /* bits per byte: nats x (validation tokens / validation bytes) / ln 2 */
    uint64_t vb = 0;
    for (uint64_t i = c.n_tok_train; i < c.n_tok; i++) {
        size_t len = 0;
        tt_tokenizer_token(tok, ref.ids[i], &len);
        vb += len;
    }
    CHECK(c.val_bytes == vb);
    double want = 2.0 * (double)(c.n_tok - c.n_tok_train) / (double)vb / log(2.0);
    CHECK(fabs(tt_corpus_bpb(&c, 2.0) - want) < 1e-12 * want);
    CHECK(tt_corpus_tok_per_byte(&c) < 1.0);
    tt_corpus_free(&c);

    /* the same text again: the cache is reused; a changed text: rebuilt */
    CHECK(tt_corpus_open(path, tok, dir, T, NULL, NULL, &c, &st) == TT_OK);
    CHECK(c.cache_built == 0 && c.n_tok == ref.n);
    tt_corpus_free(&c);
    write_all(path, text, n - 40);
    CHECK(tt_corpus_open(path, tok, dir, T, NULL, NULL, &c, &st) == TT_OK);
    CHECK(c.cache_built == 1 && c.n == n - 40 && c.n_tok < ref.n);
    tt_corpus_free(&c);

    /* the length rule in tokens: both splits need ctx+1 tokens */
    int big = (int)(ref.n / 10);
    CHECK(tt_corpus_open(path, tok, dir, big, NULL, NULL, &c, &st) == TT_EINVAL);
    CHECK_MSG(strstr(st.msg, "tokens") != NULL, "%s", st.msg);

    /* the byte tokenizer: the byte corpus of tt_corpus_load */
    tt_tokenizer *bt = NULL;
    CHECK(tt_tokenizer_byte(&bt, &st) == TT_OK);
    tt_corpus a, b;
    CHECK(tt_corpus_open(path, bt, dir, T, NULL, NULL, &a, &st) == TT_OK);
    CHECK(tt_corpus_load(path, T, &b, &st) == TT_OK);
    CHECK(a.tokens.count == 0 && a.n == b.n && a.hash == b.hash && memcmp(a.bytes, b.bytes, a.n) == 0);
    CHECK(fabs(tt_corpus_bpb(&a, 2.0) - 2.0 / log(2.0)) < 1e-15);
    tt_corpus_free(&a);
    tt_corpus_free(&b);
    tt_tokenizer_free(bt);

    free(out);
    tt_tok_ids_free(&ref);
    tt_tokenizer_free(tok);
    free(text);
}

/* a folder's files are documents: <|endoftext|> between them, never after the last; no bytes in bpb */
TT_TEST(test_folder_documents) {
    const char *dir = tt_test_tmpdir();
    char sub[4200], cache[4200], path[4400];
    snprintf(sub, sizeof sub, "%s/docs", dir);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    CHECK(mkdir(sub, 0777) == 0 && mkdir(cache, 0777) == 0);
    size_t n[3];
    char *t[3];
    for (int i = 0; i < 3; i++) {
        t[i] = make_words(700, (uint64_t)(20 + i), &n[i]);
        t[i][n[i] - 1] = '\n';
        snprintf(path, sizeof path, "%s/doc%d.txt", sub, i);
        write_all(path, t[i], n[i]);
    }
    tt_tokenizer *tok = small_bpe();
    int32_t eot = tt_tokenizer_eot(tok);
    CHECK(eot >= 0);
    tt_status st;
    tt_status_clear(&st);
    tt_corpus c;
    CHECK_MSG(tt_corpus_open(sub, tok, cache, 8, NULL, NULL, &c, &st) == TT_OK, "%s", st.msg);
    /* the ids: doc0 <eot> doc1 <eot> doc2, as one encode of the joined text */
    char *joined = malloc(n[0] + n[1] + n[2] + 64);
    size_t k = 0;
    for (int i = 0; i < 3; i++) {
        memcpy(joined + k, t[i], n[i]);
        k += n[i];
        if (i < 2) memcpy(joined + k, "<|endoftext|>", 13), k += 13;
    }
    tt_tok_ids ref = {0};
    CHECK(tt_tokenizer_encode(tok, joined, k, &ref, &st) == TT_OK);
    CHECK(c.n == k && c.n_tok == ref.n);
    int n_eot = 0;
    for (uint64_t i = 0; i < c.n_tok && i < ref.n; i++) {
        CHECK(tt_tokfile_id(&c.tokens, i) == (uint32_t)ref.ids[i]);
        n_eot += ref.ids[i] == eot;
    }
    CHECK(n_eot == 2 && ref.ids[ref.n - 1] != eot);
    uint64_t vb = 0, vt = 0;
    for (uint64_t i = c.n_tok_train; i < c.n_tok; i++) {
        size_t len = 0;
        if (ref.ids[i] != eot) tt_tokenizer_token(tok, ref.ids[i], &len);
        vb += len;
        vt++;
    }
    CHECK(c.val_bytes == vb && fabs(tt_corpus_tok_per_byte(&c) - (double)vt / (double)vb) < 1e-12);
    tt_corpus_free(&c);
    tt_tok_ids_free(&ref);
    free(joined);
    for (int i = 0; i < 3; i++) free(t[i]);
    tt_tokenizer_free(tok);
}

int main(void) {
    RUN(test_token_cache_split_batches_bpb);
    RUN(test_folder_documents);
    return tt_test_summary();
}
