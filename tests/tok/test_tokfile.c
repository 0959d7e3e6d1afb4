/* test_tokfile.c — the token cache (src/tok/tokfile.h): a streamed build in
 * chunks gives exactly the ids of encoding the whole text at once (chunks as
 * small as 16 bytes, so the cut rule is exercised thousands of times), the
 * header (width u16 / u32, count, corpus hash), progress reports, reopening,
 * a stale key or another tokenizer rebuilds, a damaged or foreign file is
 * refused with one clear line (never rebuilt over, never changed), a failing
 * or changing source leaves the old file, and a stretch with no safe cut. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "io/fileio.h"
#include "tok/tokfile.h"
#include "tok_test.h"
#include "tt_test.h"

static uint32_t rng_state = 0x9e3779b9u;
static uint32_t rnd(uint32_t n) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return rng_state % n;
}

static int one_line(const char *m) {
    if (!m || !m[0]) return 0;
    for (const char *p = m; *p; p++)
        if (*p == '\n' || *p == '\r') return 0;
    return 1;
}

static const pair_s merges[] = {
    {"t", "h"}, {"th", "e"}, {" ", "the"}, {"a", "n"}, {" ", "an"}, {" an", "d"}, {"i", "n"}, {"in", "g"},
    {" ", " "}, {"  ", "  "}, {"\n", "\n"}, {"'", "s"}, {"e", "r"}, {"o", "u"}, {"1", "2"}, {" ", "a"},
};
#define N_MERGES ((int)(sizeof merges / sizeof merges[0]))

static tt_tokenizer *small_bpe(void) {
    char *json = make_tokenizer_json(merges, N_MERGES, 1, 0);
    tt_tokenizer *t = NULL;
    tt_status st;
    int rc = tt_tokenizer_from_json(json, strlen(json), "small", &t, &st);
    CHECK_MSG(rc == TT_OK, "%s", st.msg);
    free(json);
    return t;
}

/* A mixed text: words, contractions, runs of spaces and line ends (also
 * before words), tabs, numbers, unicode letters and spaces, apostrophes,
 * invalid bytes and the special token (also split around it). */
static char *make_text(size_t n, size_t *len) {
    static const char *const pool[] = {
        "the", " the", "and", " and", "ing", "er", "our", "'s", "'", "'t", " ", "  ", "   ", "\n", "\n\n", " \n",
        "\n  ", "\t", "\r\n", "12", "3", "caf\xc3\xa9", "\xe4\xb8\xad\xe6\x96\x87", "\xc2\xa0", "\xe3\x80\x80", "!", "...",
        "<|endoftext|>", "<|endoftext|>\n", " <|endoftext|> ", "<|", "\xff", "x", "a", "\xf0\x9f\x98\x80", "\xcc\x81",
    };
    char *s = malloc(n + 64);
    size_t k = 0;
    while (k < n) {
        const char *p = pool[rnd(sizeof pool / sizeof pool[0])];
        size_t l = strlen(p);
        memcpy(s + k, p, l);
        k += l;
    }
    *len = k;
    return s;
}

static int write_bytes(const char *path, const void *p, size_t n) {
    tt_status st;
    int rc = tt_write_atomic_buf(path, p, n, &st);
    CHECK_MSG(rc == TT_OK, "%s", st.msg);
    return rc;
}

static char *read_bytes(const char *path, size_t *n) {
    int fd;
    uint64_t size;
    char *b = NULL;
    tt_status st;
    if (tt_open_regular(path, &fd, &size, &st) || tt_read_all(fd, size, &b, &st)) return NULL;
    *n = (size_t)size;
    return b;
}

static void check_ids(const tt_tokfile *f, const tt_tok_ids *want, const char *what) {
    int same = f->count == want->n;
    for (uint64_t i = 0; same && i < f->count; i++) same = tt_tokfile_id(f, i) == (uint32_t)want->ids[i];
    CHECK_MSG(same, "%s: the cached ids differ from one encode of the whole text (%llu vs %zu ids)", what,
              (unsigned long long)f->count, want->n);
    if (!same) {
        for (uint64_t i = 0; i < f->count && i < want->n; i++)
            if (tt_tokfile_id(f, i) != (uint32_t)want->ids[i]) {
                fprintf(stderr, "  first difference at id %llu: %u vs %d\n", (unsigned long long)i, tt_tokfile_id(f, i),
                        want->ids[i]);
                break;
            }
    }
}

typedef struct {
    int calls;
    uint64_t last_done, total, tokens;
    int monotonic;
} progress_log;

static void on_progress(void *ctx, uint64_t done, uint64_t total, uint64_t tokens) {
    progress_log *p = ctx;
    if (done < p->last_done || tokens < p->tokens) p->monotonic = 0;
    p->calls++;
    p->last_done = done;
    p->total = total;
    p->tokens = tokens;
}

static uint64_t fnv(const char *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)p[i]) * 0x100000001b3ull;
    return h;
}

/* ------------------------------------------------------------ tests */

TT_TEST(build_equals_whole_encode) {
    tt_tokenizer *t = small_bpe();
    if (!t) return;
    const char *dir = tt_test_tmpdir();
    char corpus[1024], cache[1024];
    snprintf(corpus, sizeof corpus, "%s/corpus.txt", dir);
    snprintf(cache, sizeof cache, "%s/corpus.tokens", dir);
    size_t n;
    char *text = make_text(200000, &n);
    write_bytes(corpus, text, n);
    tt_tok_ids want = {0};
    tt_status st;
    CHECK(tt_tokenizer_encode(t, text, n, &want, &st) == TT_OK);
    size_t chunks[] = {16, 17, 100, 4096, 0};
    for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
        tt_tokfile_key key;
        tt_tok_source src;
        CHECK(tt_tokfile_key_of_file(corpus, &key, &st) == TT_OK && key.bytes == n);
        CHECK(tt_tok_source_file(corpus, &src, &st) == TT_OK);
        progress_log pl = {0, 0, 0, 0, 1};
        tt_tokfile_build_opts o = {chunks[c], 0, on_progress, &pl};
        int rc = tt_tokfile_build(cache, t, &src, &key, &o, &st);
        tt_tok_source_close(&src);
        CHECK_MSG(rc == TT_OK, "chunk %zu: %s", chunks[c], st.msg);
        CHECK(pl.calls >= (chunks[c] ? (int)(n / (4 * chunks[c] + 64)) : 1) && pl.monotonic);
        CHECK(pl.last_done == n && pl.total == n && pl.tokens == want.n);
        tt_tokfile f;
        rc = tt_tokfile_open(cache, tt_tokenizer_hash(t), &key, &f, &st);
        CHECK_MSG(rc == TT_OK, "%s", st.msg);
        if (rc) continue;
        char what[64];
        snprintf(what, sizeof what, "chunks of %zu bytes", chunks[c]);
        check_ids(&f, &want, what);
        CHECK(f.width == 2 && f.vocab_size == tt_tokenizer_vocab_size(t));
        CHECK(f.corpus_bytes == n && f.corpus_hash == fnv(text, n) && f.tok_hash == tt_tokenizer_hash(t));
        struct stat sb;
        CHECK(stat(cache, &sb) == 0 && (uint64_t)sb.st_size == TT_TOKFILE_HEADER + 2 * f.count);
        tt_tokfile_close(&f);
        /* the ids decode to the corpus */
    }
    /* the ids decode to the text */
    char *back;
    size_t blen;
    CHECK(tt_tokenizer_decode(t, want.ids, want.n, &back, &blen, &st) == TT_OK && blen == n && memcmp(back, text, n) == 0);
    free(back);
    tt_tok_ids_free(&want);
    free(text);
    tt_tokenizer_free(t);
}

TT_TEST(width_u32_and_byte) {
    /* a vocabulary of more than 65536 ids: 4-byte ids */
    char *json = make_tokenizer_json(merges, N_MERGES, 0, 0);
    char *p = strstr(json, "\"added_tokens\":[]");
    sbuf s = {0};
    sb_put(&s, json, (size_t)(p - json));
    sb_str(&s, "\"added_tokens\":[{\"id\":70000,\"content\":\"<big>\",\"special\":true},"
               "{\"id\":70001,\"content\":\"x\\n y\",\"special\":true}]");
    sb_str(&s, p + strlen("\"added_tokens\":[]"));
    tt_tokenizer *big = NULL, *byte = NULL;
    tt_status st;
    CHECK_MSG(tt_tokenizer_from_json(s.p, s.n, "big", &big, &st) == TT_OK, "%s", st.msg);
    CHECK(tt_tokenizer_byte(&byte, &st) == TT_OK);
    free(json);
    free(s.p);
    if (!big || !byte) return;
    const char *dir = tt_test_tmpdir();
    char corpus[1024], cache[1024];
    snprintf(corpus, sizeof corpus, "%s/c.txt", dir);
    snprintf(cache, sizeof cache, "%s/c.tokens", dir);
    /* an added token with whitespace inside: never cut through */
    sbuf tx = {0};
    for (int i = 0; i < 300; i++) sb_str(&tx, rnd(2) ? "the <big> and\n\nthe<big>  ing  \n" : rnd(2) ? "ax\n y" : "x\n y x\n");
    const char *text = tx.p;
    write_bytes(corpus, text, strlen(text));
    tt_tokenizer *toks[2] = {big, byte};
    for (int k = 0; k < 2; k++) {
        tt_tokfile_key key;
        tt_tok_source src;
        CHECK(tt_tokfile_key_of_file(corpus, &key, &st) == TT_OK);
        CHECK(tt_tok_source_file(corpus, &src, &st) == TT_OK);
        tt_tokfile_build_opts o = {16, 0, NULL, NULL};
        CHECK(tt_tokfile_build(cache, toks[k], &src, &key, &o, &st) == TT_OK);
        tt_tok_source_close(&src);
        tt_tokfile f;
        CHECK_MSG(tt_tokfile_open(cache, tt_tokenizer_hash(toks[k]), &key, &f, &st) == TT_OK, "%s", st.msg);
        tt_tok_ids want = {0};
        CHECK(tt_tokenizer_encode(toks[k], text, strlen(text), &want, &st) == TT_OK);
        check_ids(&f, &want, k ? "byte" : "u32");
        CHECK(f.width == (k ? 2 : 4));
        if (k == 0) {
            int seen = 0;
            int seen2 = 0;
            for (uint64_t i = 0; i < f.count; i++) seen += tt_tokfile_id(&f, i) == 70000, seen2 += tt_tokfile_id(&f, i) == 70001;
            CHECK(seen > 100 && seen2 > 100);
        } else {
            CHECK(f.count == strlen(text));
        }
        tt_tok_ids_free(&want);
        tt_tokfile_close(&f);
    }
    free(tx.p);
    tt_tokenizer_free(big);
    tt_tokenizer_free(byte);
}

static int ensure(const char *cache, tt_tokenizer *t, const char *corpus, tt_tokfile *f, int *built, tt_status *st) {
    tt_tokfile_key key;
    tt_tok_source src;
    TT_CHECK(tt_tokfile_key_of_file(corpus, &key, st));
    TT_CHECK(tt_tok_source_file(corpus, &src, st));
    tt_tokfile_build_opts o = {64, 0, NULL, NULL};
    int rc = tt_tokfile_ensure(cache, t, &src, &key, &o, f, built, st);
    tt_tok_source_close(&src);
    return rc;
}

TT_TEST(stale_and_reopen) {
    tt_tokenizer *t = small_bpe(), *byte = NULL;
    tt_status st;
    CHECK(tt_tokenizer_byte(&byte, &st) == TT_OK);
    if (!t || !byte) return;
    const char *dir = tt_test_tmpdir();
    char corpus[1024], cache[1024];
    snprintf(corpus, sizeof corpus, "%s/c.txt", dir);
    snprintf(cache, sizeof cache, "%s/c.tokens", dir);
    size_t n;
    char *text = make_text(5000, &n);
    write_bytes(corpus, text, n);
    tt_tokfile f;
    int built = -1;
    /* absent: built */
    CHECK_MSG(ensure(cache, t, corpus, &f, &built, &st) == TT_OK && built == 1, "%s", st.msg);
    tt_tokfile_close(&f);
    /* current: opened as it is */
    CHECK(ensure(cache, t, corpus, &f, &built, &st) == TT_OK && built == 0);
    tt_tok_ids want = {0};
    CHECK(tt_tokenizer_encode(t, text, n, &want, &st) == TT_OK);
    check_ids(&f, &want, "reopened");
    tt_tokfile_close(&f);
    /* the corpus changed (other bytes, same size; then its time stamp): stale, rebuilt */
    text[n / 2] = text[n / 2] == 'x' ? 'y' : 'x';
    write_bytes(corpus, text, n);
    tt_tokfile_key key;
    CHECK(tt_tokfile_key_of_file(corpus, &key, &st) == TT_OK);
    CHECK(tt_tokfile_open(cache, tt_tokenizer_hash(t), &key, &f, &st) == TT_EMISMATCH && one_line(st.msg) &&
          strstr(st.msg, "another version of the corpus"));
    CHECK(ensure(cache, t, corpus, &f, &built, &st) == TT_OK && built == 1);
    want.n = 0;
    CHECK(tt_tokenizer_encode(t, text, n, &want, &st) == TT_OK);
    check_ids(&f, &want, "rebuilt");
    tt_tokfile_close(&f);
    struct timeval tv[2] = {{1000000000, 0}, {1000000000, 0}};
    CHECK(utimes(corpus, tv) == 0);
    CHECK(ensure(cache, t, corpus, &f, &built, &st) == TT_OK && built == 1);
    tt_tokfile_close(&f);
    /* another tokenizer: stale, rebuilt with its ids */
    CHECK(tt_tokfile_key_of_file(corpus, &key, &st) == TT_OK);
    CHECK(tt_tokfile_open(cache, tt_tokenizer_hash(byte), &key, &f, &st) == TT_EMISMATCH &&
          strstr(st.msg, "another tokenizer"));
    CHECK(ensure(cache, byte, corpus, &f, &built, &st) == TT_OK && built == 1);
    CHECK(f.count == n && f.vocab_size == 256);
    for (uint64_t i = 0; i < f.count && i < n; i++)
        if (tt_tokfile_id(&f, i) != (uint8_t)text[i]) {
            CHECK(!"byte ids");
            break;
        }
    tt_tokfile_close(&f);
    /* no key: any corpus */
    CHECK(tt_tokfile_open(cache, tt_tokenizer_hash(byte), NULL, &f, &st) == TT_OK);
    tt_tokfile_close(&f);
    /* absent */
    char nope[1100];
    snprintf(nope, sizeof nope, "%s/nope.tokens", dir);
    CHECK(tt_tokfile_open(nope, 0, NULL, &f, &st) == TT_EIO && one_line(st.msg));
    tt_tok_ids_free(&want);
    free(text);
    tt_tokenizer_free(t);
    tt_tokenizer_free(byte);
}

TT_TEST(damaged_files_refused) {
    tt_tokenizer *t = small_bpe();
    if (!t) return;
    tt_status st;
    const char *dir = tt_test_tmpdir();
    char corpus[1024], cache[1024], other[1024];
    snprintf(corpus, sizeof corpus, "%s/c.txt", dir);
    snprintf(cache, sizeof cache, "%s/c.tokens", dir);
    snprintf(other, sizeof other, "%s/o.tokens", dir);
    size_t n;
    char *text = make_text(3000, &n);
    write_bytes(corpus, text, n);
    tt_tokfile f;
    int built;
    CHECK(ensure(cache, t, corpus, &f, &built, &st) == TT_OK);
    tt_tokfile_close(&f);
    tt_tokfile_key key;
    CHECK(tt_tokfile_key_of_file(corpus, &key, &st) == TT_OK);
    size_t len;
    char *good = read_bytes(cache, &len);
    if (!good) return;
    /* one byte changed anywhere: refused (header, reserved bytes, ids) */
    size_t spots[] = {0, 9, 13, 17, 21, 30, 56, 60, 64, 80, 121, TT_TOKFILE_HEADER, TT_TOKFILE_HEADER + 1, len / 2, len - 1};
    for (size_t k = 0; k < sizeof spots / sizeof spots[0]; k++) {
        char *bad = malloc(len);
        memcpy(bad, good, len);
        bad[spots[k]] ^= (char)(1 + rnd(255));
        write_bytes(other, bad, len);
        int rc = tt_tokfile_open(other, tt_tokenizer_hash(t), &key, &f, &st);
        CHECK_MSG(rc == TT_EFORMAT && one_line(st.msg) && (strstr(st.msg, "damaged") || strstr(st.msg, "not a tinytrain")),
                  "byte %zu changed: rc %d '%s'", spots[k], rc, st.msg);
        CHECK(f.ids == NULL && f.count == 0);
        free(bad);
    }
    /* cut short, one byte longer, empty, a text file */
    size_t lens[] = {0, 7, 100, TT_TOKFILE_HEADER, len - 1, len + 1};
    for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
        char *bad = calloc(1, len + 1);
        memcpy(bad, good, TT_MIN(len, lens[k]));
        write_bytes(other, bad, lens[k]);
        int rc = tt_tokfile_open(other, tt_tokenizer_hash(t), &key, &f, &st);
        CHECK_MSG(rc == TT_EFORMAT && one_line(st.msg), "length %zu: rc %d '%s'", lens[k], rc, st.msg);
        free(bad);
    }
    write_bytes(other, text, n);
    CHECK(tt_tokfile_open(other, tt_tokenizer_hash(t), &key, &f, &st) == TT_EFORMAT &&
          strstr(st.msg, "is not a tinytrain token cache"));
    /* ensure refuses a damaged cache and leaves it as it is */
    char *bad = malloc(len);
    memcpy(bad, good, len);
    bad[len - 2] ^= 0x40;
    write_bytes(cache, bad, len);
    CHECK(ensure(cache, t, corpus, &f, &built, &st) == TT_EFORMAT && built == 0 && strstr(st.msg, "delete it"));
    size_t len2;
    char *after = read_bytes(cache, &len2);
    CHECK(after && len2 == len && memcmp(after, bad, len) == 0);
    free(after);
    free(bad);
    free(good);
    free(text);
    tt_tokenizer_free(t);
}

/* a source that fails after some bytes, or gives more than promised */
typedef struct {
    const char *text;
    size_t n, pos, fail_at;
} mem_src;
static int64_t mem_read(void *ctx, uint8_t *buf, size_t cap, tt_status *st) {
    mem_src *m = ctx;
    if (m->pos >= m->fail_at) return -tt_fail(st, TT_EIO, "read error (test)");
    size_t k = TT_MIN(cap, TT_MIN(m->n - m->pos, m->fail_at - m->pos));
    memcpy(buf, m->text + m->pos, k);
    m->pos += k;
    return (int64_t)k;
}

TT_TEST(failing_sources_keep_the_old_file) {
    tt_tokenizer *t = small_bpe();
    if (!t) return;
    tt_status st;
    const char *dir = tt_test_tmpdir();
    char cache[1024];
    snprintf(cache, sizeof cache, "%s/m.tokens", dir);
    const char *text = "the and the\n\nand  ing 12 the's\n";
    size_t n = strlen(text);
    mem_src m = {text, n, 0, (size_t)-1};
    tt_tok_source src = {mem_read, NULL, &m};
    tt_tokfile_key key = {n, 42};
    tt_tokfile_build_opts o = {16, 0, NULL, NULL};
    CHECK(tt_tokfile_build(cache, t, &src, &key, &o, &st) == TT_OK);
    size_t len;
    char *before = read_bytes(cache, &len);
    /* a read error half way */
    m = (mem_src){text, n, 0, n / 2};
    CHECK(tt_tokfile_build(cache, t, &src, &(tt_tokfile_key){n, 43}, &o, &st) == TT_EIO && strstr(st.msg, "read error"));
    /* more bytes than the key says, and fewer */
    m = (mem_src){text, n, 0, (size_t)-1};
    CHECK(tt_tokfile_build(cache, t, &src, &(tt_tokfile_key){n - 5, 44}, &o, &st) == TT_EMISMATCH && one_line(st.msg));
    m = (mem_src){text, n, 0, (size_t)-1};
    CHECK(tt_tokfile_build(cache, t, &src, &(tt_tokfile_key){n + 5, 45}, &o, &st) == TT_EMISMATCH &&
          strstr(st.msg, "changed while it was tokenized"));
    size_t len2;
    char *after = read_bytes(cache, &len2);
    CHECK(before && after && len == len2 && memcmp(before, after, len) == 0);
    tt_tokfile f;
    CHECK(tt_tokfile_open(cache, tt_tokenizer_hash(t), &key, &f, &st) == TT_OK);
    tt_tokfile_close(&f);
    /* no temporary file left behind */
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", cache, (long)getpid());
    CHECK(access(tmp, F_OK) != 0);
    free(before);
    free(after);
    tt_tokenizer_free(t);
}

TT_TEST(no_safe_cut) {
    /* letters and other characters without whitespace, longer than the
     * largest chunk: cut at a character boundary; the bytes come back */
    tt_tokenizer *t = small_bpe();
    if (!t) return;
    tt_status st;
    const char *dir = tt_test_tmpdir();
    char cache[1024];
    snprintf(cache, sizeof cache, "%s/n.tokens", dir);
    sbuf s = {0};
    for (int i = 0; i < 3000; i++) sb_str(&s, rnd(3) ? "the" : rnd(2) ? "\xe4\xb8\xad" : "!");
    mem_src m = {s.p, s.n, 0, (size_t)-1};
    tt_tok_source src = {mem_read, NULL, &m};
    tt_tokfile_key key = {s.n, 1};
    tt_tokfile_build_opts o = {64, 256, NULL, NULL};
    CHECK_MSG(tt_tokfile_build(cache, t, &src, &key, &o, &st) == TT_OK, "%s", st.msg);
    tt_tokfile f;
    CHECK(tt_tokfile_open(cache, tt_tokenizer_hash(t), &key, &f, &st) == TT_OK);
    int32_t *ids = malloc(f.count * sizeof *ids);
    for (uint64_t i = 0; i < f.count; i++) ids[i] = (int32_t)tt_tokfile_id(&f, i);
    char *back;
    size_t blen;
    CHECK(tt_tokenizer_decode(t, ids, f.count, &back, &blen, &st) == TT_OK && blen == s.n && memcmp(back, s.p, s.n) == 0);
    free(back);
    free(ids);
    tt_tokfile_close(&f);
    free(s.p);
    tt_tokenizer_free(t);
}

int main(void) {
    RUN(build_equals_whole_encode);
    RUN(width_u32_and_byte);
    RUN(stale_and_reopen);
    RUN(damaged_files_refused);
    RUN(failing_sources_keep_the_old_file);
    RUN(no_safe_cut);
    return tt_test_summary();
}
