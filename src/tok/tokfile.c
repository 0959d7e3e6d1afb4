/* tokfile.c — the token cache (tokfile.h): streamed build with safe chunk
 * cuts, the file format, opening with its checks (mmap natively, a read in
 * the WebAssembly build), and the file source. */
#define _GNU_SOURCE
#include "tok/tokfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#if !defined(__EMSCRIPTEN__)
#include <sys/mman.h>
#endif

#include "io/fileio.h"
#include "tok/tok_internal.h"
#include "tok/unicode.h"

#define DEFAULT_CHUNK ((size_t)4 << 20)
#define MAX_CHUNK ((size_t)64 << 20) /* a run without a safe cut longer than this is cut anyway */

static const char magic[8] = {'T', 'T', 'T', 'O', 'K', 'E', 'N', 'S'};

/* ------------------------------------------------------------ little helpers */

static void put_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put_u64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get_u32(const uint8_t *p) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
    return v;
}
static uint64_t get_u64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}
static uint64_t fnv1a(uint64_t h, const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}
#define FNV_INIT 0xcbf29ce484222325ull

static int host_is_little_endian(void) {
    const uint16_t one = 1;
    return *(const uint8_t *)&one == 1;
}

/* the checksum of the ids: four lanes (by position), each step bijective in
 * both the state and the id, so any single changed id changes it */
typedef struct {
    uint64_t lane[4];
    uint64_t n;
} idsum;
static void idsum_init(idsum *c) {
    for (int i = 0; i < 4; i++) c->lane[i] = 0x243F6A8885A308D3ull * (uint64_t)(i + 1);
    c->n = 0;
}
static inline void idsum_add(idsum *c, uint32_t v) {
    uint64_t h = (c->lane[c->n & 3] ^ v) * 0x9E3779B97F4A7C15ull;
    c->lane[c->n & 3] = (h << 29) | (h >> 35);
    c->n++;
}
static uint64_t idsum_final(const idsum *c) {
    uint8_t b[40];
    for (int i = 0; i < 4; i++) put_u64(b + 8 * i, c->lane[i]);
    put_u64(b + 32, c->n);
    return fnv1a(FNV_INIT, b, sizeof b);
}

/* ------------------------------------------------------------ key and source */

int tt_tokfile_key_of_file(const char *path, tt_tokfile_key *key, tt_status *st) {
    struct stat sb;
    if (stat(path, &sb) != 0) return tt_fail(st, TT_EIO, "cannot open corpus '%.300s': %s", path, strerror(errno));
    uint8_t b[32];
    put_u64(b, (uint64_t)sb.st_size);
    put_u64(b + 8, (uint64_t)sb.st_mtim.tv_sec);
    put_u64(b + 16, (uint64_t)sb.st_mtim.tv_nsec);
    put_u64(b + 24, (uint64_t)sb.st_ino);
    key->bytes = (uint64_t)sb.st_size;
    key->stamp = fnv1a(FNV_INIT, b, sizeof b);
    return TT_OK;
}

typedef struct {
    int fd;
    char path[320];
} file_src;

static int64_t file_read(void *ctx, uint8_t *buf, size_t cap, tt_status *st) {
    file_src *f = ctx;
    for (;;) {
        ssize_t r = read(f->fd, buf, cap);
        if (r >= 0) return (int64_t)r;
        if (errno == EINTR) continue;
        return -tt_fail(st, TT_EIO, "cannot read '%s': %s", f->path, strerror(errno));
    }
}

static void file_close(void *ctx) {
    file_src *f = ctx;
    if (f->fd >= 0) close(f->fd);
    free(f);
}

int tt_tok_source_file(const char *path, tt_tok_source *src, tt_status *st) {
    memset(src, 0, sizeof *src);
    file_src *f = calloc(1, sizeof *f);
    if (!f) return tt_fail(st, TT_ENOMEM, "out of memory");
    uint64_t size;
    if (tt_open_regular(path, &f->fd, &size, st)) {
        free(f);
        return st ? st->code : TT_EIO;
    }
    snprintf(f->path, sizeof f->path, "%.300s", path);
    src->read = file_read;
    src->close = file_close;
    src->ctx = f;
    return TT_OK;
}

void tt_tok_source_close(tt_tok_source *src) {
    if (src && src->close) src->close(src->ctx);
    if (src) memset(src, 0, sizeof *src);
}

/* ------------------------------------------------------------ safe cuts */

static int ascii_space(uint8_t c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* Whether an added token may occupy s[q..] across p (start < p < end), also
 * one that the bytes after s[n) could complete. */
static int added_across(const tt_tokenizer *t, const uint8_t *s, size_t n, size_t p) {
    for (int k = 0; k < t->n_added; k++) {
        const tt_tok_added *a = &t->added[k];
        for (size_t q = p > a->len ? p - a->len + 1 : 0; q < p; q++) {
            size_t m = TT_MIN(a->len, n - q);
            if (memcmp(s + q, a->s, m) == 0) return 1;
        }
    }
    return 0;
}

/* Where s[0..n) can be cut so that encoding s[0..p) and s[p..) apart gives
 * the ids of encoding them together (0: nowhere). At p: an ASCII whitespace
 * byte after an ASCII byte that is not whitespace. Then the piece before p
 * (a letter, number or other run, or a contraction) ends at p whatever
 * follows, no piece before looked past p (a whitespace run's lookahead is
 * the only look past a piece's end), and the piece at p starts afresh either
 * way. The rightmost line end is preferred, else
 * the rightmost other whitespace, if it lies in the second half. */
static size_t find_cut(const tt_tokenizer *t, const uint8_t *s, size_t n) {
    if (t->kind == TT_TOK_BYTE) return n;
    size_t any = 0;
    for (size_t p = n - 1; p >= 1; p--) {
        if (any && p < n / 2) break;
        uint8_t c = s[p], d = s[p - 1];
        if (!ascii_space(c) || d >= 0x80 || ascii_space(d)) continue;
        if (t->n_added && added_across(t, s, n, p)) continue;
        if (c == '\n') return p;
        if (!any) any = p;
    }
    return any;
}

/* a character boundary in the second half of s[0..n) (n >= 8) */
static size_t char_cut(const uint8_t *s, size_t n) {
    size_t p = n / 2 + 1;
    while (p < n && (s[p] & 0xC0) == 0x80 && p < n / 2 + 4) p++;
    return p;
}

/* ------------------------------------------------------------ build */

typedef struct {
    tt_tokenizer *tok;
    const tt_tok_source *src;
    const tt_tokfile_key *key;
    const tt_tokfile_build_opts *opts;
    const char *path;
} build_ctx;

static int build_body(FILE *f, const void *vctx, tt_status *st) {
    const build_ctx *c = vctx;
    tt_tokenizer *tok = c->tok;
    size_t chunk = c->opts && c->opts->chunk_bytes ? c->opts->chunk_bytes : DEFAULT_CHUNK;
    if (chunk < 16) chunk = 16;
    size_t max_chunk = c->opts && c->opts->max_chunk_bytes ? c->opts->max_chunk_bytes : MAX_CHUNK;
    if (max_chunk < chunk) max_chunk = chunk;
    int width = tok->vocab_size <= 65536 ? 2 : 4;
    uint8_t header[TT_TOKFILE_HEADER] = {0};
    if (fwrite(header, 1, sizeof header, f) != sizeof header) return tt_fail(st, TT_EIO, "cannot write '%s'", c->path);
    size_t cap = chunk;
    uint8_t *buf = malloc(cap), *out = NULL;
    tt_tok_ids ids = {0};
    if (!buf) return tt_fail(st, TT_ENOMEM, "out of memory (token cache buffer)");
    uint64_t corpus_hash = FNV_INIT, bytes = 0, count = 0;
    idsum sum;
    idsum_init(&sum);
    size_t have = 0, out_cap = 0;
    int eof = 0, rc = TT_OK;
    while (!rc && (!eof || have)) {
        /* fill the buffer up to its end (or the end of the corpus) */
        size_t want = have < chunk ? chunk : TT_MIN(2 * have, max_chunk);
        if (want > cap) {
            uint8_t *nb = realloc(buf, want);
            if (!nb) {
                rc = tt_fail(st, TT_ENOMEM, "out of memory (token cache buffer of %zu bytes)", want);
                break;
            }
            buf = nb;
            cap = want;
        }
        while (!eof && have < want) {
            int64_t r = c->src->read(c->src->ctx, buf + have, want - have, st);
            if (r < 0) {
                rc = st ? st->code : TT_EIO;
                break;
            }
            if (r == 0) eof = 1;
            corpus_hash = fnv1a(corpus_hash, buf + have, (size_t)r);
            have += (size_t)r;
            bytes += (uint64_t)r;
        }
        if (rc) break;
        if (bytes > c->key->bytes) {
            rc = tt_fail(st, TT_EMISMATCH, "the corpus grew while it was tokenized (more than %llu bytes): tokenize again",
                         (unsigned long long)c->key->bytes);
            break;
        }
        size_t cut = have;
        if (!eof) {
            cut = find_cut(tok, buf, have);
            if (cut == 0) {
                if (have < max_chunk) continue; /* read more and look again */
                cut = char_cut(buf, have);
            }
        }
        ids.n = 0;
        if ((rc = tt_tokenizer_encode(tok, buf, cut, &ids, st))) break;
        if (ids.n * (size_t)width > out_cap) {
            out_cap = ids.n * (size_t)width;
            free(out);
            if (!(out = malloc(out_cap))) {
                rc = tt_fail(st, TT_ENOMEM, "out of memory (token cache)");
                break;
            }
        }
        for (size_t i = 0; i < ids.n; i++) {
            uint32_t v = (uint32_t)ids.ids[i];
            idsum_add(&sum, v);
            if (width == 2) out[2 * i] = (uint8_t)v, out[2 * i + 1] = (uint8_t)(v >> 8);
            else put_u32(out + 4 * i, v);
        }
        if (ids.n && fwrite(out, (size_t)width, ids.n, f) != ids.n) {
            rc = tt_fail(st, TT_EIO, "cannot write '%s': %s", c->path, strerror(errno));
            break;
        }
        count += ids.n;
        memmove(buf, buf + cut, have - cut);
        have -= cut;
        if (c->opts && c->opts->progress) c->opts->progress(c->opts->progress_ctx, bytes - have, c->key->bytes, count);
    }
    free(buf);
    free(out);
    tt_tok_ids_free(&ids);
    if (rc) return rc;
    if (bytes != c->key->bytes)
        return tt_fail(st, TT_EMISMATCH, "the corpus changed while it was tokenized (%llu bytes read, %llu expected): tokenize again",
                       (unsigned long long)bytes, (unsigned long long)c->key->bytes);
    memcpy(header, magic, 8);
    put_u32(header + 8, TT_TOKFILE_VERSION);
    put_u32(header + 12, (uint32_t)width);
    put_u32(header + 16, (uint32_t)tok->vocab_size);
    put_u64(header + 24, tok->hash);
    put_u64(header + 32, c->key->bytes);
    put_u64(header + 40, c->key->stamp);
    put_u64(header + 48, corpus_hash);
    put_u64(header + 56, count);
    put_u64(header + 64, idsum_final(&sum));
    put_u64(header + 120, fnv1a(FNV_INIT, header, 120));
    if (fseek(f, 0, SEEK_SET) != 0 || fwrite(header, 1, sizeof header, f) != sizeof header)
        return tt_fail(st, TT_EIO, "cannot write '%s': %s", c->path, strerror(errno));
    return TT_OK;
}

int tt_tokfile_build(const char *path, tt_tokenizer *tok, const tt_tok_source *src, const tt_tokfile_key *key,
                     const tt_tokfile_build_opts *opts, tt_status *st) {
    if (!host_is_little_endian()) return tt_fail(st, TT_EUNSUP, "token caches need a little-endian machine");
    build_ctx c = {tok, src, key, opts, path};
    return tt_write_atomic(path, build_body, &c, st);
}

/* ------------------------------------------------------------ open */

void tt_tokfile_close(tt_tokfile *f) {
    if (!f) return;
#if !defined(__EMSCRIPTEN__)
    if (f->mapped && f->base) munmap(f->base, f->len);
    else
#endif
        free(f->base);
    memset(f, 0, sizeof *f);
}

static int corrupt(const char *path, const char *why, tt_status *st) {
    return tt_fail(st, TT_EFORMAT, "token cache '%.300s' is damaged (%s): delete it and it is built again", path, why);
}

int tt_tokfile_open(const char *path, uint64_t tok_hash, const tt_tokfile_key *key, tt_tokfile *f, tt_status *st) {
    memset(f, 0, sizeof *f);
    if (!host_is_little_endian()) return tt_fail(st, TT_EUNSUP, "token caches need a little-endian machine");
    int fd;
    uint64_t size;
    TT_CHECK(tt_open_regular(path, &fd, &size, st));
    uint8_t h[TT_TOKFILE_HEADER];
    ssize_t r = size >= sizeof h ? pread(fd, h, sizeof h, 0) : 0;
    int rc = TT_OK;
    if (size < sizeof h || r != (ssize_t)sizeof h || memcmp(h, magic, 8) != 0)
        rc = size >= 8 && r >= 8 && memcmp(h, magic, 8) != 0
                 ? tt_fail(st, TT_EFORMAT, "'%.300s' is not a tinytrain token cache", path)
                 : corrupt(path, "shorter than its header", st);
    else if (get_u64(h + 120) != fnv1a(FNV_INIT, h, 120)) rc = corrupt(path, "header checksum", st);
    else if (get_u32(h + 8) != TT_TOKFILE_VERSION)
        rc = tt_fail(st, TT_EFORMAT, "token cache '%.300s' has format version %u; this build reads version %d: delete it",
                     path, get_u32(h + 8), TT_TOKFILE_VERSION);
    if (rc) {
        close(fd);
        return rc;
    }
    f->width = (int)get_u32(h + 12);
    f->vocab_size = (int32_t)get_u32(h + 16);
    f->tok_hash = get_u64(h + 24);
    f->corpus_bytes = get_u64(h + 32);
    f->corpus_stamp = get_u64(h + 40);
    f->corpus_hash = get_u64(h + 48);
    f->count = get_u64(h + 56);
    uint64_t want_sum = get_u64(h + 64);
    int zero = 1;
    for (int i = 72; i < 120; i++) zero &= h[i] == 0;
    if ((f->width != 2 && f->width != 4) || get_u32(h + 20) != 0 || !zero || f->vocab_size <= 0 ||
        f->vocab_size > TT_TOK_MAX_VOCAB || (f->width == 2 && f->vocab_size > 65536))
        rc = corrupt(path, "header fields", st);
    else if (f->count > (size - sizeof h) / (uint64_t)f->width || sizeof h + f->count * (uint64_t)f->width != size)
        rc = corrupt(path, "its size does not match its token count", st);
    else if (f->tok_hash != tok_hash)
        rc = tt_fail(st, TT_EMISMATCH, "token cache '%.300s' was made with another tokenizer", path);
    else if (key && (f->corpus_bytes != key->bytes || f->corpus_stamp != key->stamp))
        rc = tt_fail(st, TT_EMISMATCH, "token cache '%.300s' was made from another version of the corpus", path);
    else if (size > SIZE_MAX)
        rc = tt_fail(st, TT_EUNSUP, "token cache '%.300s' is too large for this build", path);
    if (rc) {
        close(fd);
        memset(f, 0, sizeof *f);
        return rc;
    }
    f->len = (size_t)size;
#if !defined(__EMSCRIPTEN__)
    f->base = mmap(NULL, f->len, PROT_READ, MAP_PRIVATE, fd, 0);
    if (f->base == MAP_FAILED) {
        f->base = NULL;
        rc = tt_fail(st, TT_EIO, "cannot map '%.300s': %s", path, strerror(errno));
    } else f->mapped = 1;
    close(fd);
#else
    char *all = NULL;
    if (tt_read_all(fd, size, &all, st)) rc = tt_fail(st, TT_EIO, "cannot read '%.300s'", path);
    f->base = all;
#endif
    if (rc) {
        memset(f, 0, sizeof *f);
        return rc;
    }
    f->ids = (const uint8_t *)f->base + sizeof h;
    /* one pass over the ids: their checksum and range */
    idsum sum;
    idsum_init(&sum);
    uint32_t max = 0;
    if (f->width == 2) {
        const uint16_t *p = f->ids;
        for (uint64_t i = 0; i < f->count; i++) {
            idsum_add(&sum, p[i]);
            max = TT_MAX(max, p[i]);
        }
    } else {
        const uint32_t *p = f->ids;
        for (uint64_t i = 0; i < f->count; i++) {
            idsum_add(&sum, p[i]);
            max = TT_MAX(max, p[i]);
        }
    }
    if (idsum_final(&sum) != want_sum) rc = corrupt(path, "checksum of the token ids", st);
    else if (f->count && max >= (uint32_t)f->vocab_size) rc = corrupt(path, "a token id beyond the vocabulary", st);
    if (rc) tt_tokfile_close(f);
    return rc;
}

int tt_tokfile_ensure(const char *path, tt_tokenizer *tok, const tt_tok_source *src, const tt_tokfile_key *key,
                      const tt_tokfile_build_opts *opts, tt_tokfile *f, int *built, tt_status *st) {
    *built = 0;
    struct stat sb;
    if (stat(path, &sb) == 0) {
        int rc = tt_tokfile_open(path, tok->hash, key, f, st);
        if (rc != TT_EMISMATCH) return rc;
    } else if (errno != ENOENT) {
        return tt_fail(st, TT_EIO, "cannot open '%.300s': %s", path, strerror(errno));
    }
    TT_CHECK(tt_tokfile_build(path, tok, src, key, opts, st));
    *built = 1;
    return tt_tokfile_open(path, tok->hash, key, f, st);
}
