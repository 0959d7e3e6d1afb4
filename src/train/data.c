/* data.c — the corpus (data.h): reading a text file or a folder of text
 * files, validating it, the contiguous 90/10 split and deterministic batches.
 *
 * Folders: regular files sorted by name (byte order), subfolders recursed
 * (the default fortunes folder is read flat, so fortunes-off's off/ folder is
 * not mixed in); hidden files, fortune `.dat` index files and files that look
 * binary are skipped; the same file reached twice (fortunes' `.u8` symlinks)
 * is read once. Each file is followed by a '\n' if it lacks one.
 *
 * Batches: training window j starts at tt_rand_below(seed, TT_STREAM_BATCH,
 * j, n_train - T) (the rule in train.h). Validation window j starts at
 * floor(frac(j * phi) * (n_val - T)) + n_train, computed in 64-bit integers
 * (a Weyl sequence): evenly spread over the whole validation split for any
 * number of batches, independent of the seed, identical everywhere. */
#define _DEFAULT_SOURCE
#include "data.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/fileio.h"
#include "rng.h"

#define TT_MAX_DEPTH 16

static const char *const default_dirs[] = {
    "/usr/share/games/fortunes",       /* Debian, Ubuntu */
    "/usr/share/fortunes",             /* Fedora, Arch */
    "/usr/local/share/games/fortunes", /* BSD ports, source installs */
    "/usr/local/share/fortunes",
    "/opt/homebrew/share/fortunes",    /* Homebrew */
    "/opt/homebrew/share/games/fortunes",
};

const char *tt_default_corpus_dir(void) {
    for (size_t i = 0; i < sizeof default_dirs / sizeof default_dirs[0]; i++) {
        struct stat sb;
        if (stat(default_dirs[i], &sb) == 0 && S_ISDIR(sb.st_mode)) return default_dirs[i];
    }
    return default_dirs[0];
}

/* ---- growing byte buffer ---- */

typedef struct {
    uint8_t *p;
    size_t n, cap;
    int n_files, n_skipped_binary;
    size_t n_added; /* line ends appended to files that lacked one */
    const char *sep; /* NULL, or the document separator written after each file (a BPE run's <|endoftext|>) */
    /* (dev, ino) of files already read */
    struct { dev_t dev; ino_t ino; } *seen;
    size_t n_seen, cap_seen;
} buf_t;

static int buf_reserve(buf_t *b, size_t extra, tt_status *st) {
    if (b->n + extra < b->n) return tt_fail(st, TT_ENOMEM, "corpus too large");
    if (b->n + extra <= b->cap) return TT_OK;
    size_t cap = b->cap ? b->cap : (1u << 20);
    while (cap < b->n + extra) {
        if (cap > SIZE_MAX / 2) { cap = b->n + extra; break; }
        cap *= 2;
    }
    uint8_t *p = realloc(b->p, cap);
    if (!p) return tt_fail(st, TT_ENOMEM, "out of memory reading corpus (%.1f MiB)", cap / 1048576.0);
    b->p = p;
    b->cap = cap;
    return TT_OK;
}

/* Binary check: any NUL byte, or more than 10% of bytes in invalid UTF-8
 * sequences or non-whitespace C0 controls (backspace and ESC are allowed:
 * old text uses them for overstriking and colour). */
static int looks_binary(const uint8_t *p, size_t n) {
    size_t bad = 0;
    for (size_t i = 0; i < n;) {
        uint8_t c = p[i];
        if (c == 0) return 1;
        if (c < 0x80) {
            if (c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v' && c != '\b' && c != 0x1b) bad++;
            i++;
            continue;
        }
        int len = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? (c <= 0xEF ? 3 : 0) : c >= 0xC2 ? 2 : 0;
        int ok = len > 0 && i + (size_t)len <= n;
        for (int k = 1; ok && k < len; k++) ok = (p[i + k] & 0xC0) == 0x80;
        if (ok) i += (size_t)len;
        else { bad++; i++; }
    }
    return bad * 10 > n;
}

/* Reads one regular file and appends it, streamed in chunks: a NUL byte
 * (which makes a file binary whatever follows) stops the read at once, and
 * the size limit is checked before anything is read. binary_is_error: 1 for
 * a file given directly, 0 inside a folder (skipped with a count). */
static int read_file(buf_t *b, const char *path, int binary_is_error, tt_status *st) {
    int fd = -1;
    uint64_t size = 0;
    TT_CHECK(tt_open_regular(path, &fd, &size, st)); /* a FIFO or device is refused, never waited on */
    if (size > TT_CORPUS_MAX_BYTES || b->n + size > TT_CORPUS_MAX_BYTES) {
        close(fd);
        return tt_fail(st, TT_EINVAL, "corpus too large: '%s' brings it to %.2f GiB; this build reads at most %.2f GiB",
                       path, (double)(b->n + size) / 1073741824.0, (double)TT_CORPUS_MAX_BYTES / 1073741824.0);
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return tt_fail(st, TT_EIO, "cannot open corpus file '%s': %s", path, strerror(errno));
    }
    size_t start = b->n;
    int has_nul = 0;
    while (!has_nul) {
        int rc = buf_reserve(b, 1u << 16, st);
        if (rc) { fclose(f); b->n = start; return rc; }
        size_t want = TT_MIN(b->cap - b->n, (size_t)1 << 20);
        size_t got = fread(b->p + b->n, 1, want, f);
        has_nul = got > 0 && memchr(b->p + b->n, 0, got) != NULL;
        b->n += got;
        if (got == 0) break;
        if (b->n - start > TT_CORPUS_MAX_BYTES) { /* the file grew while read */
            fclose(f);
            b->n = start;
            return tt_fail(st, TT_EINVAL, "corpus too large: '%s' grew past %.2f GiB while read", path,
                           (double)TT_CORPUS_MAX_BYTES / 1073741824.0);
        }
    }
    int err = ferror(f);
    fclose(f);
    if (err) { b->n = start; return tt_fail(st, TT_EIO, "error reading corpus file '%s'", path); }
    size_t len = b->n - start;
    if (len == 0) return TT_OK;
    if (has_nul || looks_binary(b->p + start, len)) {
        b->n = start;
        if (binary_is_error)
            return tt_fail(st, TT_EINVAL, "corpus '%s' looks binary (NUL bytes or mostly invalid UTF-8); give a text file", path);
        b->n_skipped_binary++;
        return TT_OK;
    }
    if (b->p[b->n - 1] != '\n') {
        TT_CHECK(buf_reserve(b, 1, st));
        b->p[b->n++] = '\n';
        b->n_added++;
    }
    b->n_files++;
    if (b->sep) { /* the file is a document: the separator follows it (the last one is cut off again) */
        size_t k = strlen(b->sep);
        TT_CHECK(buf_reserve(b, k, st));
        memcpy(b->p + b->n, b->sep, k);
        b->n += k;
    }
    return TT_OK;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int ends_with(const char *s, const char *suf) {
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcmp(s + n - m, suf) == 0;
}

static int seen_before(buf_t *b, const struct stat *sb, tt_status *st) {
    for (size_t i = 0; i < b->n_seen; i++)
        if (b->seen[i].dev == sb->st_dev && b->seen[i].ino == sb->st_ino) return 1;
    if (b->n_seen == b->cap_seen) {
        size_t cap = b->cap_seen ? b->cap_seen * 2 : 64;
        void *p = realloc(b->seen, cap * sizeof *b->seen);
        if (!p) return -tt_fail(st, TT_ENOMEM, "out of memory (corpus file list)");
        b->seen = p;
        b->cap_seen = cap;
    }
    b->seen[b->n_seen].dev = sb->st_dev;
    b->seen[b->n_seen].ino = sb->st_ino;
    b->n_seen++;
    return 0;
}

static int read_dir(buf_t *b, const char *dir, int recursive, int depth, tt_status *st) {
    DIR *d = opendir(dir);
    if (!d) return tt_fail(st, TT_EIO, "cannot open corpus folder '%s': %s", dir, strerror(errno));
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = TT_OK;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue; /* ., .., hidden */
        if (ends_with(e->d_name, ".dat")) continue; /* fortune index files */
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **p = realloc(names, cap * sizeof *names);
            if (!p) { rc = tt_fail(st, TT_ENOMEM, "out of memory (corpus file list)"); break; }
            names = p;
        }
        names[n] = strdup(e->d_name);
        if (!names[n]) { rc = tt_fail(st, TT_ENOMEM, "out of memory (corpus file list)"); break; }
        n++;
    }
    closedir(d);
    if (!rc && n > 0) qsort(names, n, sizeof *names, cmp_str);
    char path[4096];
    for (size_t i = 0; !rc && i < n; i++) {
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, names[i]) >= sizeof path) continue;
        struct stat lsb, sb;
        if (lstat(path, &lsb) != 0 || stat(path, &sb) != 0) continue; /* dangling link */
        if (S_ISDIR(sb.st_mode)) {
            /* never follow symlinked folders (loops) */
            if (recursive && !S_ISLNK(lsb.st_mode) && depth < TT_MAX_DEPTH) rc = read_dir(b, path, recursive, depth + 1, st);
            continue;
        }
        if (!S_ISREG(sb.st_mode)) continue;
        int seen = seen_before(b, &sb, st);
        if (seen < 0) { rc = -seen; break; }
        if (seen) continue;
        rc = read_file(b, path, 0, st);
    }
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    return rc;
}

static uint64_t fnv1a64(const uint8_t *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static void human_bytes(char *out, size_t cap, double n) {
    if (n >= 1e6) snprintf(out, cap, "%.1f MB", n / 1e6);
    else if (n >= 1e3) snprintf(out, cap, "%.1f kB", n / 1e3);
    else snprintf(out, cap, "%.0f bytes", n);
}

/* the contiguous split: train = floor(0.9 n) bytes (without overflow) */
static size_t train_bytes(size_t n) { return n / 10 * 9 + (n % 10) * 9 / 10; }

static int length_check(size_t n, size_t added, int ctx, const char *what, tt_status *st) {
    if (ctx < 1) return tt_fail(st, TT_EINVAL, "ctx must be >= 1 (got %d)", ctx);
    const char *sp = what[0] ? " " : "";
    if (n == 0) return tt_fail(st, TT_EINVAL, "corpus%s%s is empty", sp, what);
    size_t n_train = train_bytes(n), need = (size_t)ctx + 1;
    if (n_train >= need && n - n_train >= need) return TT_OK;
    /* smallest n whose both splits hold ctx+1 bytes: n - floor(0.9 n) >= need  <=>  n >= 10 need - 9 */
    size_t min_n = 10 * need - 9;
    return tt_fail(st, TT_EINVAL,
                   "corpus%s%s is too short: %zu bytes%s, but the %s split needs at least ctx+1 = %zu bytes "
                   "(a corpus of at least %zu bytes for ctx %d)",
                   sp, what, n - added, added ? " (+ the line end it lacked)" : "", n_train < need ? "train" : "validation",
                   need, min_n, ctx);
}

/* token data: both splits hold ctx+1 tokens */
static int token_length_check(uint64_t n, int ctx, const char *what, tt_status *st) {
    if (ctx < 1) return tt_fail(st, TT_EINVAL, "ctx must be >= 1 (got %d)", ctx);
    uint64_t n_train = train_bytes((size_t)n), need = (uint64_t)ctx + 1;
    if (n_train >= need && n - n_train >= need) return TT_OK;
    return tt_fail(st, TT_EINVAL,
                   "corpus %.300s is too short: %llu tokens, but the %s split needs at least ctx+1 = %llu tokens "
                   "(a corpus of at least %llu tokens for ctx %d)",
                   what, (unsigned long long)n, n_train < need ? "train" : "validation", (unsigned long long)need,
                   (unsigned long long)(10 * need - 9), ctx);
}

int tt_corpus_check(const tt_corpus *c, int ctx, tt_status *st) {
    if (c->tokens.count) return token_length_check(c->n_tok, ctx, c->desc, st);
    return length_check(c->n, 0, ctx, "", st);
}

/* Split and length checks; takes ownership of bytes (freed on error). */
static int corpus_finish(uint8_t *bytes, size_t n, size_t added, int ctx, const char *what, tt_corpus *c,
                         tt_status *st) {
    memset(c, 0, sizeof *c);
    int rc = length_check(n, added, ctx, what, st);
    if (rc) {
        free(bytes);
        return rc;
    }
    c->bytes = bytes;
    c->n = n;
    c->n_train = train_bytes(n);
    c->val_bytes = n - c->n_train;
    c->hash = fnv1a64(bytes, n);
    return TT_OK;
}

int tt_corpus_from_memory(const uint8_t *bytes, size_t n, int ctx, tt_corpus *c, tt_status *st) {
    memset(c, 0, sizeof *c);
    if (n > TT_CORPUS_MAX_BYTES)
        return tt_fail(st, TT_EINVAL, "corpus too large: %.2f GiB; this build reads at most %.2f GiB",
                       (double)n / 1073741824.0, (double)TT_CORPUS_MAX_BYTES / 1073741824.0);
    if (n > 0 && looks_binary(bytes, n))
        return tt_fail(st, TT_EINVAL, "corpus looks binary (NUL bytes or mostly invalid UTF-8); give text");
    uint8_t *copy = malloc(n ? n : 1);
    if (!copy) return tt_fail(st, TT_ENOMEM, "out of memory (corpus, %zu bytes)", n);
    if (n) memcpy(copy, bytes, n);
    TT_CHECK(corpus_finish(copy, n, 0, ctx, "(memory)", c, st));
    char hb[32];
    human_bytes(hb, sizeof hb, (double)n);
    snprintf(c->desc, sizeof c->desc, "text (%s)", hb);
    return TT_OK;
}

/* tt_corpus_load; sep: a separator between the files of a folder (NULL: none) */
/* The corpus path (NULL or "": the default collection) and its stat, or the
 * one-line reason it cannot be had. */
static int corpus_path(const char **path, int *is_default, struct stat *sb, tt_status *st) {
    *is_default = !*path || !**path;
    if (*is_default) *path = tt_default_corpus_dir();
    if (stat(*path, sb) == 0) return TT_OK;
    if (*is_default)
        return tt_fail(st, TT_EIO,
                       "default corpus not found (%s): install the `fortunes` package (sudo apt-get install fortunes, "
                       "or run the setup script) or pass --data FILE",
                       *path);
    return tt_fail(st, TT_EIO, "cannot open corpus '%s': %s", *path, strerror(errno));
}

static int corpus_load(const char *path, int ctx, const char *sep, tt_corpus *c, tt_status *st) {
    memset(c, 0, sizeof *c);
    int is_default;
    struct stat sb;
    TT_CHECK(corpus_path(&path, &is_default, &sb, st));
    buf_t b;
    memset(&b, 0, sizeof b);
    b.sep = S_ISDIR(sb.st_mode) && sep && *sep ? sep : NULL;
    int rc;
    if (S_ISDIR(sb.st_mode)) rc = read_dir(&b, path, !is_default, 0, st);
    else if (S_ISREG(sb.st_mode)) rc = read_file(&b, path, 1, st);
    else rc = tt_fail(st, TT_EINVAL, "corpus '%s' is neither a file nor a folder", path);
    free(b.seen);
    if (rc) { free(b.p); return rc; }
    if (b.sep && b.n_files > 0) b.n -= strlen(b.sep); /* separators between documents, not after the last */
    if (b.n == 0) {
        free(b.p);
        if (S_ISDIR(sb.st_mode))
            return tt_fail(st, TT_EINVAL, "corpus folder '%s' has no text files%s", path,
                           b.n_skipped_binary ? " (only binary files)" : "");
        return tt_fail(st, TT_EINVAL, "corpus '%s' is empty", path);
    }
    char what[4200];
    snprintf(what, sizeof what, "'%s'", path);
    TT_CHECK(corpus_finish(b.p, b.n, b.n_added, ctx, what, c, st));
    char hb[32];
    human_bytes(hb, sizeof hb, (double)c->n);
    const char *base = strrchr(path, '/');
    base = base && base[1] ? base + 1 : path;
    if (S_ISDIR(sb.st_mode))
        snprintf(c->desc, sizeof c->desc, "%.160s (%d files, %s)", is_default ? "fortunes" : base, b.n_files, hb);
    else
        snprintf(c->desc, sizeof c->desc, "%.200s (%s)", base, hb);
    return TT_OK;
}

int tt_corpus_load(const char *path, int ctx, tt_corpus *c, tt_status *st) { return corpus_load(path, ctx, NULL, c, st); }

void tt_corpus_free(tt_corpus *c) {
    free(c->bytes);
    tt_tokfile_close(&c->tokens);
    memset(c, 0, sizeof *c);
}

/* token data: the ids [start, start + n) of the token cache */
static void copy_ids(const tt_corpus *c, uint64_t start, size_t n, tt_token *out) {
    const tt_tokfile *f = &c->tokens;
    if (f->width == 4)
        for (size_t i = 0; i < n; i++) out[i] = ((const uint32_t *)f->ids)[start + i];
    else
        for (size_t i = 0; i < n; i++) out[i] = ((const uint16_t *)f->ids)[start + i];
}

/* token data: the batch rule of the bytes (train.h), counted in tokens */
static void batch_train_ids(const tt_corpus *c, uint64_t seed, int64_t first_seq, int B, int T, tt_token *out) {
    uint64_t range = c->n_tok_train - (uint64_t)T;
    for (int b = 0; b < B; b++) {
        uint64_t start = tt_rand_below(seed, TT_STREAM_BATCH, (uint64_t)(first_seq + b), range);
        copy_ids(c, start, (size_t)T + 1, out + (size_t)b * (size_t)(T + 1));
    }
}

/* one window of T+1 tokens of the corpus from position start */
static void window(const tt_corpus *c, uint64_t start, int T, tt_token *out) {
    const uint8_t *p = c->bytes + start;
    for (int t = 0; t <= T; t++) out[t] = p[t];
}

void tt_batch_train(const tt_corpus *c, uint64_t seed, int64_t first_seq, int B, int T, tt_token *out) {
    if (c->tokens.count) {
        batch_train_ids(c, seed, first_seq, B, T, out);
        return;
    }
    uint64_t range = (uint64_t)(c->n_train - (size_t)T); /* starts 0 .. n_train-T-1 */
    for (int b = 0; b < B; b++) {
        uint64_t start = tt_rand_below(seed, TT_STREAM_BATCH, (uint64_t)(first_seq + b), range);
        window(c, start, T, out + (size_t)b * (size_t)(T + 1));
    }
}

/* high 64 bits of a * b */
static uint64_t mulhi64(uint64_t a, uint64_t b) {
    uint64_t al = (uint32_t)a, ah = a >> 32, bl = (uint32_t)b, bh = b >> 32;
    uint64_t ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
    uint64_t mid = (ll >> 32) + (uint32_t)lh + (uint32_t)hl;
    return hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
}

static void batch_val_ids(const tt_corpus *c, int64_t k, int B, int T, tt_token *out) {
    uint64_t range = c->n_tok - c->n_tok_train - (uint64_t)T;
    for (int b = 0; b < B; b++) {
        uint64_t j = (uint64_t)k * (uint64_t)B + (uint64_t)b;
        uint64_t start = c->n_tok_train + mulhi64(j * 0x9E3779B97F4A7C15ull, range);
        copy_ids(c, start, (size_t)T + 1, out + (size_t)b * (size_t)(T + 1));
    }
}

void tt_batch_val(const tt_corpus *c, int64_t k, int B, int T, tt_token *out) {
    if (c->tokens.count) {
        batch_val_ids(c, k, B, T, out);
        return;
    }
    size_t n_val = c->n - c->n_train;
    uint64_t range = (uint64_t)(n_val - (size_t)T);
    for (int b = 0; b < B; b++) {
        uint64_t j = (uint64_t)k * (uint64_t)B + (uint64_t)b;
        uint64_t frac = j * 0x9E3779B97F4A7C15ull; /* frac(j * phi) in units of 2^-64 */
        uint64_t start = c->n_train + mulhi64(frac, range);
        window(c, start, T, out + (size_t)b * (size_t)(T + 1));
    }
}

/* ---- token data (a BPE tokenizer) ---- */

double tt_corpus_tok_per_byte(const tt_corpus *c) {
    if (!c->tokens.count || !c->val_bytes) return 1.0;
    return (double)(c->n_tok - c->n_tok_train) / (double)c->val_bytes;
}

double tt_corpus_bpb(const tt_corpus *c, double nats) { return nats * tt_corpus_tok_per_byte(c) / log(2.0); }

/* a corpus read into memory (a folder) as a token source */
typedef struct {
    const uint8_t *p;
    size_t n, at;
} mem_src;

static int64_t mem_read(void *ctx, uint8_t *buf, size_t cap, tt_status *st) {
    (void)st;
    mem_src *m = ctx;
    size_t k = TT_MIN(cap, m->n - m->at);
    memcpy(buf, m->p + m->at, k);
    m->at += k;
    return (int64_t)k;
}

/* a text file, as tt_corpus_load checks it, on its first MiB (the rest is not read twice) */
static int head_is_text(const char *path, tt_status *st) {
    int fd = -1;
    uint64_t size = 0;
    TT_CHECK(tt_open_regular(path, &fd, &size, st));
    size_t want = (size_t)TT_MIN(size, (uint64_t)1 << 20), got = 0;
    uint8_t *p = malloc(want ? want : 1);
    if (!p) {
        close(fd);
        return tt_fail(st, TT_ENOMEM, "out of memory");
    }
    while (got < want) {
        ssize_t k = read(fd, p + got, want - got);
        if (k <= 0) break;
        got += (size_t)k;
    }
    close(fd);
    int bin = got > 0 && (memchr(p, 0, got) != NULL || looks_binary(p, got));
    free(p);
    if (bin) return tt_fail(st, TT_EINVAL, "corpus '%s' looks binary (NUL bytes or mostly invalid UTF-8); give a text file", path);
    return TT_OK;
}

int tt_corpus_open(const char *path, tt_tokenizer *tok, const char *cache_dir, int ctx, tt_tokfile_progress progress,
                   void *progress_ctx, tt_corpus *c, tt_status *st) {
    if (!tok || tt_tokenizer_kind(tok) != TT_TOK_BPE) return tt_corpus_load(path, ctx, c, st);
    memset(c, 0, sizeof *c);
    int is_default;
    struct stat sb;
    TT_CHECK(corpus_path(&path, &is_default, &sb, st));
    /* the cache's name: the corpus path made absolute */
    char full[PATH_MAX], cache[4400];
    const char *id = realpath(path, full) ? full : path;
    if ((size_t)snprintf(cache, sizeof cache, "%s/tokens-%016llx.bin", cache_dir && *cache_dir ? cache_dir : ".",
                         (unsigned long long)fnv1a64((const uint8_t *)id, strlen(id))) >= sizeof cache)
        return tt_fail(st, TT_EINVAL, "token cache path too long");
    tt_tok_source src;
    tt_tokfile_key key;
    tt_corpus text; /* a folder: read as tt_corpus_load does, then tokenized from memory */
    memset(&text, 0, sizeof text);
    mem_src ms = {0};
    int rc;
    /* a folder's files are documents: <|endoftext|> between them (the tokenizer's added token) */
    int32_t eot = tt_tokenizer_eot(tok);
    char sep[64] = "";
    size_t sep_len = 0;
    const uint8_t *e = eot >= 0 ? tt_tokenizer_token(tok, eot, &sep_len) : NULL;
    if (e && sep_len < sizeof sep) memcpy(sep, e, sep_len), sep[sep_len] = 0;
    if (S_ISDIR(sb.st_mode)) {
        TT_CHECK(corpus_load(path, 1, sep, &text, st));
        ms.p = text.bytes;
        ms.n = text.n;
        src.read = mem_read;
        src.close = NULL;
        src.ctx = &ms;
        key.bytes = text.n;
        key.stamp = text.hash;
        rc = TT_OK;
    } else {
        rc = tt_tokfile_key_of_file(path, &key, st);
        if (!rc) rc = head_is_text(path, st);
        if (!rc) rc = tt_tok_source_file(path, &src, st);
        if (!rc && key.bytes == 0) {
            tt_tok_source_close(&src);
            rc = tt_fail(st, TT_EINVAL, "corpus '%s' is empty", path);
        }
    }
    if (rc) {
        tt_corpus_free(&text);
        return rc;
    }
    tt_tokfile_build_opts bo = {0, 0, progress, progress_ctx};
    int built = 0;
    rc = tt_tokfile_ensure(cache, tok, &src, &key, &bo, &c->tokens, &built, st);
    tt_tok_source_close(&src);
    char desc_text[256];
    snprintf(desc_text, sizeof desc_text, "%s", text.desc);
    tt_corpus_free(&text);
    if (rc) {
        if (!strstr(st->msg, cache)) {
            char m[sizeof st->msg];
            snprintf(m, sizeof m, "%s", st->msg);
            tt_fail(st, rc, "token cache '%.200s': %.300s", cache, m);
        }
        memset(&c->tokens, 0, sizeof c->tokens);
        return rc;
    }
    c->cache_built = built;
    c->n = (size_t)c->tokens.corpus_bytes;
    c->hash = c->tokens.corpus_hash;
    c->n_tok = c->tokens.count;
    c->n_tok_train = train_bytes((size_t)c->n_tok);
    /* the validation split's text: the bytes of its tokens (a document separator is no text) */
    uint64_t vb = 0;
    for (uint64_t i = c->n_tok_train; i < c->n_tok; i++) {
        size_t len = 0;
        int32_t id = (int32_t)tt_tokfile_id(&c->tokens, i);
        if (id != eot) tt_tokenizer_token(tok, id, &len);
        vb += len;
    }
    c->val_bytes = vb;
    char hb[32];
    human_bytes(hb, sizeof hb, (double)c->n);
    const char *base = strrchr(path, '/');
    base = base && base[1] ? base + 1 : path;
    if (S_ISDIR(sb.st_mode)) snprintf(c->desc, sizeof c->desc, "%.200s, %llu tokens", is_default ? "fortunes" : desc_text,
                                      (unsigned long long)c->n_tok);
    else snprintf(c->desc, sizeof c->desc, "%.160s (%s, %llu tokens)", base, hb, (unsigned long long)c->n_tok);
    rc = tt_corpus_check(c, ctx, st);
    if (rc) tt_corpus_free(c);
    return rc;
}
