/* test_data.c — the corpus (data.h): split, hash, deterministic batches,
 * folders (sorting, .dat / hidden / binary skipping, symlink dedupe), the
 * default fortunes corpus, and every error case with temporary files. */
#define _DEFAULT_SOURCE
#include <dirent.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "train/data.h"
#include "rng.h"
#include "tt_test.h"

static void write_file(const char *dir, const char *name, const void *data, size_t n) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    if (n) fwrite(data, 1, n, f);
    fclose(f);
}

/* printable text of n bytes, varied so windows are distinguishable */
/* tokens w (n) are the bytes p (byte-level windows) */
static int same_bytes(const tt_token *w, const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (w[i] != p[i]) return 0;
    return 1;
}

static uint8_t *make_text(size_t n, uint64_t seed) {
    uint8_t *p = malloc(n);
    for (size_t i = 0; i < n; i++) {
        uint64_t r = tt_rand_u64(seed, TT_STREAM_TEST, i) % 64;
        p[i] = r == 0 ? '\n' : r == 1 ? ' ' : (uint8_t)('!' + (r - 2));
    }
    return p;
}

static int one_line(const char *msg) { return msg[0] && !strchr(msg, '\n'); }

TT_TEST(test_split_and_hash) {
    size_t sizes[] = {100, 101, 109, 999, 12345, 1000003};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        uint8_t *p = make_text(n, 7 + k);
        tt_corpus c;
        tt_status st;
        tt_status_clear(&st);
        CHECK(tt_corpus_from_memory(p, n, 8, &c, &st) == TT_OK);
        CHECK(c.n == n);
        CHECK(c.n_train == (size_t)((uint64_t)n * 9 / 10));
        CHECK(memcmp(c.bytes, p, n) == 0);
        /* FNV-1a 64, spelled out */
        uint64_t h = 14695981039346656037ull;
        for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
        CHECK(c.hash == h);
        tt_corpus_free(&c);
        free(p);
    }
    /* published FNV-1a 64 test vector: "a" -> af63dc4c8601ec8c (needs a corpus of >= 10*(ctx+1)-9 bytes: use ctx 1 and repeat) */
    uint8_t a[11];
    memset(a, 'a', sizeof a);
    tt_corpus c;
    CHECK(tt_corpus_from_memory(a, 11, 1, &c, NULL) == TT_OK);
    uint64_t h = 14695981039346656037ull;
    for (int i = 0; i < 11; i++) h = (h ^ 'a') * 1099511628211ull;
    CHECK(c.hash == h);
    tt_corpus_free(&c);
    uint64_t one = (14695981039346656037ull ^ 'a') * 1099511628211ull;
    CHECK(one == 0xaf63dc4c8601ec8cull);
}

TT_TEST(test_minimum_length) {
    /* both splits need ctx+1 bytes: n - floor(0.9 n) >= ctx + 1  <=>  n >= 10 (ctx+1) - 9 */
    int ctx = 32;
    size_t need = 10 * (size_t)(ctx + 1) - 9;
    uint8_t *p = make_text(need, 3);
    tt_corpus c;
    tt_status st;
    tt_status_clear(&st);
    CHECK(tt_corpus_from_memory(p, need, ctx, &c, &st) == TT_OK);
    CHECK(c.n - c.n_train == (size_t)ctx + 1);
    /* the only validation window is the whole validation split */
    tt_token win[33];
    tt_batch_val(&c, 0, 1, ctx, win);
    CHECK(same_bytes(win, p + c.n_train, (size_t)ctx + 1));
    tt_corpus_free(&c);
    tt_status_clear(&st);
    CHECK(tt_corpus_from_memory(p, need - 1, ctx, &c, &st) == TT_EINVAL);
    CHECK(strstr(st.msg, "too short") != NULL);
    CHECK(one_line(st.msg));
    CHECK(c.bytes == NULL);
    free(p);
}

TT_TEST(test_batches_follow_the_rule) {
    size_t n = 50000;
    int T = 16, B = 8;
    uint8_t *p = make_text(n, 11);
    tt_corpus c;
    CHECK(tt_corpus_from_memory(p, n, T, &c, NULL) == TT_OK);
    tt_token *out = malloc((size_t)B * (T + 1) * sizeof *out), *out2 = malloc((size_t)2 * B * (T + 1) * sizeof *out2);
    uint64_t seed = 42;
    for (int64_t first = 0; first < 40; first += 8) {
        memset(out, 0, (size_t)B * (T + 1) * sizeof *out);
        tt_batch_train(&c, seed, first, B, T, out);
        for (int b = 0; b < B; b++) {
            uint64_t start = tt_rand_below(seed, TT_STREAM_BATCH, (uint64_t)(first + b), c.n_train - T);
            CHECK(start + T + 1 <= c.n_train);
            CHECK(same_bytes(out + (size_t)b * (T + 1), p + start, (size_t)T + 1));
        }
    }
    /* sequence numbers, not call boundaries, decide the windows */
    tt_batch_train(&c, seed, 0, 2 * B, T, out2);
    tt_batch_train(&c, seed, B, B, T, out);
    CHECK(memcmp(out2 + (size_t)B * (T + 1), out, (size_t)B * (T + 1) * sizeof *out) == 0);
    /* another seed gives other windows */
    tt_batch_train(&c, seed + 1, B, B, T, out2);
    CHECK(memcmp(out2, out, (size_t)B * (T + 1) * sizeof *out) != 0);
    /* windows reach the end of the train split but never cross it (many draws) */
    size_t max_start = 0;
    for (int64_t q = 0; q < 20000; q++) {
        uint64_t start = tt_rand_below(seed, TT_STREAM_BATCH, (uint64_t)q, c.n_train - T);
        if (start > max_start) max_start = start;
    }
    CHECK(max_start <= c.n_train - T - 1);
    CHECK(max_start > c.n_train - T - 1 - (c.n_train / 100));
    free(out);
    free(out2);
    tt_corpus_free(&c);
    free(p);
}

TT_TEST(test_val_batches_fixed_and_spread) {
    size_t n = 100000;
    int T = 32, B = 4;
    uint8_t *p = make_text(n, 5);
    tt_corpus c;
    CHECK(tt_corpus_from_memory(p, n, T, &c, NULL) == TT_OK);
    size_t n_val = c.n - c.n_train;
    tt_token *a = malloc((size_t)B * (T + 1) * sizeof *a), *b = malloc((size_t)B * (T + 1) * sizeof *b);
    int buckets[10] = {0};
    for (int64_t k = 0; k < 8; k++) {
        tt_batch_val(&c, k, B, T, a);
        tt_batch_val(&c, k, B, T, b);
        CHECK(memcmp(a, b, (size_t)B * (T + 1) * sizeof *a) == 0);
        for (int i = 0; i < B; i++) {
            /* find the window in the validation split */
            const tt_token *w = a + (size_t)i * (T + 1);
            int found = 0;
            for (size_t s = c.n_train; s + T + 1 <= c.n && !found; s++)
                if (same_bytes(w, p + s, (size_t)T + 1)) {
                    found = 1;
                    buckets[(s - c.n_train) * 10 / n_val]++;
                }
            CHECK(found);
        }
    }
    /* 32 windows spread over the split: every tenth of it gets at least one */
    for (int i = 0; i < 10; i++) CHECK_MSG(buckets[i] > 0, "validation tenth %d has no window", i);
    /* batch k of B equals windows k*B .. of a B=1 call sequence */
    tt_batch_val(&c, 3, B, T, a);
    for (int i = 0; i < B; i++) {
        tt_batch_val(&c, 3 * B + i, 1, T, b);
        CHECK(memcmp(a + (size_t)i * (T + 1), b, ((size_t)T + 1) * sizeof *a) == 0);
    }
    free(a);
    free(b);
    tt_corpus_free(&c);
    free(p);
}

TT_TEST(test_file_errors) {
    const char *dir = tt_test_tmpdir();
    char path[4096];
    tt_corpus c;
    tt_status st;

    /* missing */
    snprintf(path, sizeof path, "%s/nope.txt", dir);
    tt_status_clear(&st);
    CHECK(tt_corpus_load(path, 8, &c, &st) != TT_OK);
    CHECK(strstr(st.msg, "nope.txt") != NULL && one_line(st.msg));

    /* empty */
    write_file(dir, "empty.txt", "", 0);
    snprintf(path, sizeof path, "%s/empty.txt", dir);
    tt_status_clear(&st);
    CHECK(tt_corpus_load(path, 8, &c, &st) == TT_EINVAL);
    CHECK(strstr(st.msg, "empty") != NULL && one_line(st.msg));

    /* binary: NUL bytes inside otherwise-text */
    uint8_t *t = make_text(5000, 1);
    t[2500] = 0;
    write_file(dir, "nul.bin", t, 5000);
    snprintf(path, sizeof path, "%s/nul.bin", dir);
    tt_status_clear(&st);
    CHECK(tt_corpus_load(path, 8, &c, &st) == TT_EINVAL);
    CHECK(strstr(st.msg, "binary") != NULL && one_line(st.msg));

    /* binary: random high bytes, no NUL */
    uint8_t hi[4000];
    for (int i = 0; i < 4000; i++) hi[i] = (uint8_t)(0x80 + tt_rand_below(9, TT_STREAM_TEST, (uint64_t)i, 128));
    write_file(dir, "high.bin", hi, sizeof hi);
    snprintf(path, sizeof path, "%s/high.bin", dir);
    tt_status_clear(&st);
    CHECK(tt_corpus_load(path, 8, &c, &st) == TT_EINVAL);
    CHECK(strstr(st.msg, "binary") != NULL);

    /* text with valid multi-byte UTF-8 and a few Latin-1 bytes is text */
    t[2500] = 'x';
    memcpy(t + 100, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9); /* é € 😀 */
    t[300] = 0xe9;                                             /* Latin-1 é */
    write_file(dir, "utf8.txt", t, 5000);
    snprintf(path, sizeof path, "%s/utf8.txt", dir);
    tt_status_clear(&st);
    CHECK(tt_corpus_load(path, 8, &c, &st) == TT_OK);
    CHECK(c.n == 5000 + (t[4999] != '\n'));
    CHECK(memcmp(c.bytes, t, 5000) == 0);
    tt_corpus_free(&c);

    /* too short for ctx */
    write_file(dir, "short.txt", "hello world, this is short\n", 27);
    snprintf(path, sizeof path, "%s/short.txt", dir);
    tt_status_clear(&st);
    CHECK(tt_corpus_load(path, 32, &c, &st) == TT_EINVAL);
    CHECK(strstr(st.msg, "too short") != NULL && strstr(st.msg, "ctx") != NULL && one_line(st.msg));

    /* an empty folder and a folder of binaries */
    char sub[4096];
    snprintf(sub, sizeof sub, "%s/emptydir", dir);
    mkdir(sub, 0777);
    tt_status_clear(&st);
    CHECK(tt_corpus_load(sub, 8, &c, &st) == TT_EINVAL);
    CHECK(strstr(st.msg, "no text files") != NULL);
    snprintf(sub, sizeof sub, "%s/bindir", dir);
    mkdir(sub, 0777);
    write_file(sub, "a.bin", hi, sizeof hi);
    tt_status_clear(&st);
    CHECK(tt_corpus_load(sub, 8, &c, &st) == TT_EINVAL);
    CHECK(strstr(st.msg, "binary") != NULL);
    free(t);
}

TT_TEST(test_folder) {
    const char *dir = tt_test_tmpdir();
    char sub[4096], path[4096];
    uint8_t *a = make_text(3000, 21), *b = make_text(2000, 22), *d = make_text(1500, 23);
    a[2999] = '\n';
    b[1999] = 'x'; /* no trailing newline: one is added */
    d[1499] = '\n';
    write_file(dir, "b_second", b, 2000);
    write_file(dir, "a_first", a, 3000);
    write_file(dir, "a_first.dat", "\x00\x00\x00\x02junk", 8); /* fortune index: skipped */
    write_file(dir, ".hidden", "hidden text\n", 12);
    uint8_t hi[500];
    for (int i = 0; i < 500; i++) hi[i] = (uint8_t)(i * 7 + 1);
    hi[10] = 0;
    write_file(dir, "c_binary", hi, 500); /* binary in a folder: skipped */
    snprintf(path, sizeof path, "%s/a_first.u8", dir);
    CHECK(symlink("a_first", path) == 0); /* same file twice: read once */
    snprintf(sub, sizeof sub, "%s/d_sub", dir);
    mkdir(sub, 0777);
    write_file(sub, "inner", d, 1500);

    tt_corpus c;
    tt_status st;
    tt_status_clear(&st);
    CHECK(tt_corpus_load(dir, 16, &c, &st) == TT_OK);
    size_t want = 3000 + 2001 + 1500;
    CHECK_MSG(c.n == want, "n %zu want %zu", c.n, want);
    if (c.n == want) {
        CHECK(memcmp(c.bytes, a, 3000) == 0);
        CHECK(memcmp(c.bytes + 3000, b, 2000) == 0);
        CHECK(c.bytes[5000] == '\n');
        CHECK(memcmp(c.bytes + 5001, d, 1500) == 0);
    }
    CHECK(strstr(c.desc, "3 files") != NULL);
    tt_corpus_free(&c);
    free(a);
    free(b);
    free(d);
}

TT_TEST(test_default_corpus) {
    const char *dir = tt_default_corpus_dir();
    CHECK(dir && dir[0] == '/');
    struct stat sb;
    if (stat(dir, &sb) != 0) {
        /* not installed here: the error must say how to get it */
        tt_corpus c;
        tt_status st;
        tt_status_clear(&st);
        CHECK(tt_corpus_load(NULL, 64, &c, &st) != TT_OK);
        CHECK(strstr(st.msg, "fortunes") != NULL && one_line(st.msg));
        printf("  (default corpus not installed; checked the error only)\n");
        return;
    }
    /* expected size: regular, non-symlink, non-.dat, non-hidden files at the top level */
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    if (!d) return;
    size_t want = 0;
    int files = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (e->d_name[0] == '.' || (l > 4 && strcmp(e->d_name + l - 4, ".dat") == 0)) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat ls;
        if (lstat(path, &ls) != 0 || !S_ISREG(ls.st_mode)) continue;
        FILE *f = fopen(path, "rb");
        if (!f) continue;
        int last = '\n';
        if (ls.st_size > 0) {
            fseek(f, -1, SEEK_END);
            last = fgetc(f);
        }
        fclose(f);
        want += (size_t)ls.st_size + (ls.st_size > 0 && last != '\n');
        files += ls.st_size > 0;
    }
    closedir(d);
    tt_corpus c;
    tt_status st;
    tt_status_clear(&st);
    CHECK(tt_corpus_load(NULL, 64, &c, &st) == TT_OK);
    CHECK_MSG(c.n == want, "default corpus %zu bytes, expected %zu", c.n, want);
    char nf[32];
    snprintf(nf, sizeof nf, "%d files", files);
    CHECK_MSG(strstr(c.desc, nf) != NULL, "desc '%s'", c.desc);
    CHECK(strstr(c.desc, "fortunes") != NULL);
    CHECK(memchr(c.bytes, 0, c.n) == NULL);
    printf("  default corpus: %s\n", c.desc);
    tt_corpus_free(&c);
    /* "" means the default too */
    CHECK(tt_corpus_load("", 64, &c, &st) == TT_OK);
    CHECK(c.n == want);
    tt_corpus_free(&c);
}

int main(void) {
    RUN(test_split_and_hash);
    RUN(test_minimum_length);
    RUN(test_batches_follow_the_rule);
    RUN(test_val_batches_fixed_and_spread);
    RUN(test_file_errors);
    RUN(test_folder);
    RUN(test_default_corpus);
    return tt_test_summary();
}
