/* tokenizer.c — the tokenizer handle (tokenizer.h): the byte kind, GPT-2's
 * pre-tokenizer, byte-level BPE (merges applied by rank with a min-heap over
 * a linked list of symbols, as Hugging Face tokenizers does, behind a cache
 * of whole words), the added tokens split, decode, and the content hash.
 * Reading Hugging Face files is tok_load.c. */
#include "tok/tok_internal.h"

#include <stdlib.h>
#include <string.h>

#include "tok/unicode.h"

#define WC_SLOTS ((size_t)1 << 16)      /* word cache slots (a power of two), at most half used */
#define WC_MAX_WORD 255                 /* longer words are merged every time */
#define WC_BYTES ((size_t)4 << 20)      /* cache arenas: cleared whole when full */
#define WC_IDS ((size_t)1 << 20)

void tt_tok_ids_free(tt_tok_ids *v) {
    if (!v) return;
    free(v->ids);
    v->ids = NULL;
    v->n = v->cap = 0;
}

static int ids_reserve(tt_tok_ids *v, size_t extra, tt_status *st) {
    if (extra <= v->cap - v->n) return TT_OK;
    if (extra > (SIZE_MAX / sizeof(int32_t)) / 2 - v->n) return tt_fail(st, TT_ENOMEM, "out of memory (token ids)");
    size_t cap = v->cap ? v->cap : 256;
    while (cap - v->n < extra) cap *= 2;
    int32_t *p = realloc(v->ids, cap * sizeof *p);
    if (!p) return tt_fail(st, TT_ENOMEM, "out of memory (%zu token ids)", cap);
    v->ids = p;
    v->cap = cap;
    return TT_OK;
}

/* ------------------------------------------------------------ handle */

tt_tokenizer *tt_tok_alloc(tt_tok_kind kind) {
    tt_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->kind = kind;
    t->eot = -1;
    return t;
}

void tt_tokenizer_free(tt_tokenizer *t) {
    if (!t) return;
    free(t->tok_bytes);
    free(t->tok_off);
    free(t->tok_used);
    free(t->merges);
    free(t->pm_key);
    free(t->pm_rank);
    for (int i = 0; i < t->n_added; i++) free(t->added[i].s);
    free(t->added);
    free(t->wc);
    free(t->wc_bytes);
    free(t->wc_ids);
    free(t->ws_sym);
    free(t->ws_prev);
    free(t->ws_next);
    free(t->ws_heap_key);
    free(t->ws_heap_id);
    free(t);
}

tt_tok_kind tt_tokenizer_kind(const tt_tokenizer *t) { return t->kind; }
const char *tt_tokenizer_kind_name(const tt_tokenizer *t) { return t->kind == TT_TOK_BYTE ? "byte" : "bpe"; }
int32_t tt_tokenizer_vocab_size(const tt_tokenizer *t) { return t->vocab_size; }
size_t tt_tokenizer_n_merges(const tt_tokenizer *t) { return t->n_merges; }
int32_t tt_tokenizer_eot(const tt_tokenizer *t) { return t->eot; }
uint64_t tt_tokenizer_hash(const tt_tokenizer *t) { return t->hash; }

const uint8_t *tt_tokenizer_token(const tt_tokenizer *t, int32_t id, size_t *len) {
    *len = 0;
    if (id < 0 || id >= t->vocab_size || !t->tok_used[id]) return NULL;
    *len = t->tok_off[id + 1] - t->tok_off[id];
    return t->tok_bytes + t->tok_off[id];
}

/* ------------------------------------------------------------ hash */

typedef struct {
    uint64_t h;
} fnv;
static void fnv_bytes(fnv *f, const void *p, size_t n) {
    const uint8_t *b = p;
    uint64_t h = f->h;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    f->h = h;
}
static void fnv_u64(fnv *f, uint64_t x) {
    uint8_t b[8];
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(x >> (8 * i));
    fnv_bytes(f, b, 8);
}

/* FNV-1a 64 over a canonical little-endian serialization: a tag, the kind,
 * the vocabulary (each id's length and bytes; unused ids as length 2^64-1),
 * the live merges in rank order (left id, right id) and the added tokens (id,
 * length, bytes). */
static uint64_t content_hash(const tt_tokenizer *t) {
    fnv f = {0xcbf29ce484222325ull};
    fnv_bytes(&f, "tinytrain tokenizer 1", 21);
    fnv_u64(&f, (uint64_t)t->kind);
    fnv_u64(&f, (uint64_t)t->vocab_size);
    for (int32_t i = 0; i < t->vocab_size; i++) {
        if (!t->tok_used[i]) {
            fnv_u64(&f, UINT64_MAX);
            continue;
        }
        fnv_u64(&f, t->tok_off[i + 1] - t->tok_off[i]);
        fnv_bytes(&f, t->tok_bytes + t->tok_off[i], t->tok_off[i + 1] - t->tok_off[i]);
    }
    uint64_t live = 0;
    for (size_t r = 0; r < t->n_merges; r++) live += t->merges[r].live != 0;
    fnv_u64(&f, live);
    for (size_t r = 0; r < t->n_merges; r++)
        if (t->merges[r].live) {
            fnv_u64(&f, (uint64_t)t->merges[r].a);
            fnv_u64(&f, (uint64_t)t->merges[r].b);
        }
    fnv_u64(&f, (uint64_t)t->n_added);
    for (int i = 0; i < t->n_added; i++) {
        fnv_u64(&f, (uint64_t)t->added[i].id);
        fnv_u64(&f, t->added[i].len);
        fnv_bytes(&f, t->added[i].s, t->added[i].len);
    }
    return f.h;
}

/* ------------------------------------------------------------ pair map */

static inline size_t pm_slot(uint64_t key, size_t mask) {
    return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & mask;
}

int32_t tt_tok_pair_rank(const tt_tokenizer *t, int32_t a, int32_t b) {
    uint64_t key = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
    for (size_t i = pm_slot(key, t->pm_mask);; i = (i + 1) & t->pm_mask) {
        uint64_t k = t->pm_key[i];
        if (k == key) return t->pm_rank[i];
        if (k == UINT64_MAX) return -1;
    }
}

/* The map of the merges; a pair given twice keeps its last rank (as Hugging
 * Face tokenizers does), the earlier one is marked not live. */
static int pm_build(tt_tokenizer *t, tt_status *st) {
    size_t cap = 64;
    while (cap < 2 * t->n_merges + 2) cap *= 2;
    t->pm_key = malloc(cap * sizeof *t->pm_key);
    t->pm_rank = malloc(cap * sizeof *t->pm_rank);
    if (!t->pm_key || !t->pm_rank) return tt_fail(st, TT_ENOMEM, "out of memory (tokenizer merges)");
    memset(t->pm_key, 0xff, cap * sizeof *t->pm_key);
    t->pm_mask = cap - 1;
    for (size_t r = 0; r < t->n_merges; r++) {
        tt_tok_merge *m = &t->merges[r];
        m->live = 1;
        uint64_t key = ((uint64_t)(uint32_t)m->a << 32) | (uint32_t)m->b;
        size_t i = pm_slot(key, t->pm_mask);
        while (t->pm_key[i] != UINT64_MAX && t->pm_key[i] != key) i = (i + 1) & t->pm_mask;
        if (t->pm_key[i] == key) t->merges[t->pm_rank[i]].live = 0;
        t->pm_key[i] = key;
        t->pm_rank[i] = (int32_t)r;
    }
    return TT_OK;
}

int tt_tok_finish(tt_tokenizer *t, const char *name, tt_status *st) {
    if (t->kind == TT_TOK_BPE) {
        TT_CHECK(pm_build(t, st));
        /* each byte's symbol: the single-byte token (not an added token) */
        for (int b = 0; b < 256; b++) t->byte_id[b] = -1;
        for (int32_t id = 0; id < t->vocab_size; id++)
            if (t->tok_used[id] && t->tok_off[id + 1] - t->tok_off[id] == 1) {
                int is_added = 0;
                for (int k = 0; k < t->n_added; k++) is_added |= t->added[k].id == id;
                uint8_t b = t->tok_bytes[t->tok_off[id]];
                if (!is_added && t->byte_id[b] < 0) t->byte_id[b] = id;
            }
        for (int b = 0; b < 256; b++)
            if (t->byte_id[b] < 0)
                return tt_fail(st, TT_EFORMAT,
                               "%s: the vocabulary has no token for byte 0x%02x: not a byte-level BPE vocabulary", name, b);
        memset(t->added_first, 0, sizeof t->added_first);
        t->n_first = 0;
        for (int k = 0; k < t->n_added; k++) {
            uint8_t b = t->added[k].s[0];
            if (!t->added_first[b]) t->n_first++;
            t->added_first[b] = 1;
            t->only_first = b;
        }
        t->wc = calloc(WC_SLOTS, sizeof *t->wc);
        t->wc_bytes = malloc(WC_BYTES);
        t->wc_ids = malloc(WC_IDS * sizeof *t->wc_ids);
        if (!t->wc || !t->wc_bytes || !t->wc_ids) return tt_fail(st, TT_ENOMEM, "out of memory (tokenizer cache)");
    }
    t->hash = content_hash(t);
    return TT_OK;
}

int tt_tokenizer_byte(tt_tokenizer **out, tt_status *st) {
    *out = NULL;
    tt_tokenizer *t = tt_tok_alloc(TT_TOK_BYTE);
    if (!t) return tt_fail(st, TT_ENOMEM, "out of memory (tokenizer)");
    t->vocab_size = 256;
    t->tok_bytes = malloc(256);
    t->tok_off = malloc(257 * sizeof *t->tok_off);
    t->tok_used = malloc(256);
    if (!t->tok_bytes || !t->tok_off || !t->tok_used) {
        tt_tokenizer_free(t);
        return tt_fail(st, TT_ENOMEM, "out of memory (tokenizer)");
    }
    for (int i = 0; i < 256; i++) {
        t->tok_bytes[i] = (uint8_t)i;
        t->tok_off[i] = (size_t)i;
        t->tok_used[i] = 1;
        t->byte_id[i] = i;
    }
    t->tok_off[256] = 256;
    int rc = tt_tok_finish(t, "byte", st);
    if (rc) {
        tt_tokenizer_free(t);
        return rc;
    }
    *out = t;
    return TT_OK;
}

/* ------------------------------------------------------------ pre-tokenizer */

/* the class of the character at s[i] and its length in bytes */
static inline int cls_at(const uint8_t *s, size_t n, size_t i, int *len) {
    uint8_t c = s[i];
    if (c < 0x80) {
        *len = 1;
        return tt_uc_stage2[tt_uc_stage1[0]][c];
    }
    uint32_t cp;
    *len = tt_utf8_decode(s + i, n - i, &cp);
    return tt_uc_class(cp);
}

size_t tt_pretok_next(const uint8_t *s, size_t n, size_t i) {
    uint8_t c = s[i];
    /* 's|'t|'re|'ve|'m|'ll|'d */
    if (c == '\'' && i + 1 < n) {
        uint8_t d = s[i + 1];
        if (d == 's' || d == 't' || d == 'm' || d == 'd') return i + 2;
        if (i + 2 < n) {
            uint8_t e = s[i + 2];
            if ((d == 'r' && e == 'e') || (d == 'v' && e == 'e') || (d == 'l' && e == 'l')) return i + 3;
        }
    }
    int len, k = cls_at(s, n, i, &len);
    size_t j = i + (size_t)len;
    /* " ?" before a letter, number or other run */
    if (c == ' ' && j < n) {
        int len2, k2 = cls_at(s, n, j, &len2);
        if (k2 != TT_UC_SPACE) {
            k = k2;
            j += (size_t)len2;
        }
    }
    if (k != TT_UC_SPACE) { /* \p{L}+ | \p{N}+ | [^\s\p{L}\p{N}]+ */
        while (j < n) {
            int l;
            if (cls_at(s, n, j, &l) != k) break;
            j += (size_t)l;
        }
        return j;
    }
    /* \s+(?!\S) | \s+ : a run that reaches the end is taken whole; one followed
     * by a non-space gives up its last character (which then starts the next
     * piece), unless it is that one character alone */
    size_t last = i;
    while (j < n) {
        int l;
        if (cls_at(s, n, j, &l) != TT_UC_SPACE) break;
        last = j;
        j += (size_t)l;
    }
    if (j == n) return n;
    return last > i ? last : j;
}

/* ------------------------------------------------------------ BPE */

static int ws_reserve(tt_tokenizer *t, size_t n, tt_status *st) {
    if (n <= t->ws_cap) return TT_OK;
    size_t cap = t->ws_cap ? t->ws_cap : 256;
    while (cap < n) cap *= 2;
    /* the heap holds at most n - 1 initial pairs + 2 per merge */
    int32_t *sym = realloc(t->ws_sym, cap * sizeof *sym);
    if (sym) t->ws_sym = sym;
    int32_t *prev = realloc(t->ws_prev, cap * sizeof *prev);
    if (prev) t->ws_prev = prev;
    int32_t *next = realloc(t->ws_next, cap * sizeof *next);
    if (next) t->ws_next = next;
    uint64_t *hk = realloc(t->ws_heap_key, 3 * cap * sizeof *hk);
    if (hk) t->ws_heap_key = hk;
    int32_t *hi = realloc(t->ws_heap_id, 3 * cap * sizeof *hi);
    if (hi) t->ws_heap_id = hi;
    if (!sym || !prev || !next || !hk || !hi) return tt_fail(st, TT_ENOMEM, "out of memory (a word of %zu bytes)", n);
    t->ws_cap = cap;
    return TT_OK;
}

/* the min-heap of candidate merges: key = (rank << 32) | position */
static inline void heap_push(uint64_t *key, int32_t *id, size_t *n, uint64_t k, int32_t v) {
    size_t i = (*n)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (key[p] <= k) break;
        key[i] = key[p];
        id[i] = id[p];
        i = p;
    }
    key[i] = k;
    id[i] = v;
}

static inline void heap_pop(uint64_t *key, int32_t *id, size_t *n) {
    size_t m = --(*n);
    uint64_t k = key[m];
    int32_t v = id[m];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= m) break;
        if (c + 1 < m && key[c + 1] < key[c]) c++;
        if (key[c] >= k) break;
        key[i] = key[c];
        id[i] = id[c];
        i = c;
    }
    key[i] = k;
    id[i] = v;
}

static inline void push_pair(tt_tokenizer *t, size_t *hn, int32_t pos, int32_t a, int32_t b) {
    int32_t r = tt_tok_pair_rank(t, a, b);
    if (r >= 0)
        heap_push(t->ws_heap_key, t->ws_heap_id, hn, ((uint64_t)(uint32_t)r << 32) | (uint32_t)pos, t->merges[r].id);
}

/* Merges the byte-level symbols of w[0..n) (n >= 2) by rank; appends the ids
 * to out (room reserved by the caller) and returns how many. The lowest
 * (rank, position) first; an entry whose pair has changed since it was
 * pushed is skipped (the check of Hugging Face tokenizers: the pair now there
 * must merge into the same id). */
static size_t bpe_word(tt_tokenizer *t, const uint8_t *w, size_t n, int32_t *out) {
    int32_t *sym = t->ws_sym, *prev = t->ws_prev, *next = t->ws_next;
    uint64_t *hk = t->ws_heap_key;
    int32_t *hid = t->ws_heap_id;
    size_t hn = 0;
    for (size_t i = 0; i < n; i++) {
        sym[i] = t->byte_id[w[i]];
        prev[i] = (int32_t)i - 1;
        next[i] = i + 1 < n ? (int32_t)i + 1 : -1;
    }
    for (size_t i = 0; i + 1 < n; i++) push_pair(t, &hn, (int32_t)i, sym[i], sym[i + 1]);
    while (hn) {
        uint64_t k = hk[0];
        int32_t new_id = hid[0];
        heap_pop(hk, hid, &hn);
        int32_t i = (int32_t)(uint32_t)k;
        if (sym[i] < 0) continue;
        int32_t j = next[i];
        if (j < 0) continue;
        int32_t r = tt_tok_pair_rank(t, sym[i], sym[j]);
        if (r < 0 || t->merges[r].id != new_id) continue;
        sym[i] = new_id;
        sym[j] = -1;
        next[i] = next[j];
        if (next[j] >= 0) prev[next[j]] = i;
        if (prev[i] >= 0) push_pair(t, &hn, prev[i], sym[prev[i]], new_id);
        if (next[i] >= 0) push_pair(t, &hn, i, new_id, sym[next[i]]);
    }
    size_t m = 0;
    for (int32_t i = 0; i >= 0; i = next[i]) out[m++] = sym[i];
    return m;
}

static inline uint64_t word_hash(const uint8_t *w, size_t n) {
    uint64_t h = 0x243F6A8885A308D3ull ^ (n * 0x9E3779B97F4A7C15ull);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t x;
        memcpy(&x, w + i, 8);
        h = (h ^ x) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    if (i < n) {
        uint64_t x = 0;
        memcpy(&x, w + i, n - i);
        h = (h ^ x) * 0xc4ceb9fe1a85ec53ull;
    }
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    return h | 1; /* 0 marks an empty slot */
}

static void wc_clear(tt_tokenizer *t) {
    memset(t->wc, 0, WC_SLOTS * sizeof *t->wc);
    t->wc_used = t->wc_bytes_n = t->wc_ids_n = 0;
}

/* Appends the ids of one piece w[0..n) to out (room reserved). */
static int encode_word(tt_tokenizer *t, const uint8_t *w, size_t n, tt_tok_ids *out, tt_status *st) {
    if (n == 1) {
        out->ids[out->n++] = t->byte_id[w[0]];
        return TT_OK;
    }
    if (n > WC_MAX_WORD) {
        TT_CHECK(ws_reserve(t, n, st));
        out->n += bpe_word(t, w, n, out->ids + out->n);
        return TT_OK;
    }
    uint64_t h = word_hash(w, n);
    size_t i = (size_t)h & (WC_SLOTS - 1);
    for (;; i = (i + 1) & (WC_SLOTS - 1)) {
        tt_tok_wc_slot *s = &t->wc[i];
        if (!s->h) break;
        if (s->h == h && s->blen == n && memcmp(t->wc_bytes + s->boff, w, n) == 0) {
            memcpy(out->ids + out->n, t->wc_ids + s->ioff, s->nid * sizeof(int32_t));
            out->n += s->nid;
            return TT_OK;
        }
    }
    TT_CHECK(ws_reserve(t, n, st));
    int32_t *ids = out->ids + out->n;
    size_t m = bpe_word(t, w, n, ids);
    out->n += m;
    if (t->wc_used >= WC_SLOTS / 2 || t->wc_bytes_n + n > WC_BYTES || t->wc_ids_n + m > WC_IDS) {
        wc_clear(t);
        i = (size_t)h & (WC_SLOTS - 1);
    }
    tt_tok_wc_slot *s = &t->wc[i];
    s->h = h;
    s->boff = (uint32_t)t->wc_bytes_n;
    s->ioff = (uint32_t)t->wc_ids_n;
    s->blen = (uint16_t)n;
    s->nid = (uint16_t)m;
    memcpy(t->wc_bytes + t->wc_bytes_n, w, n);
    memcpy(t->wc_ids + t->wc_ids_n, ids, m * sizeof *ids);
    t->wc_bytes_n += n;
    t->wc_ids_n += m;
    t->wc_used++;
    return TT_OK;
}

/* A stretch of text without added tokens: pre-tokenized, each piece merged. */
static int encode_segment(tt_tokenizer *t, const uint8_t *s, size_t n, tt_tok_ids *out, tt_status *st) {
    size_t pos = 0;
    while (pos < n) {
        size_t end = tt_pretok_next(s, n, pos);
        TT_CHECK(encode_word(t, s + pos, end - pos, out, st));
        pos = end;
    }
    return TT_OK;
}

/* The longest added token at s[0..n), or -1. */
static int match_added(const tt_tokenizer *t, const uint8_t *s, size_t n) {
    int best = -1;
    size_t best_len = 0;
    for (int k = 0; k < t->n_added; k++) {
        const tt_tok_added *a = &t->added[k];
        if (a->len > best_len && a->len <= n && memcmp(a->s, s, a->len) == 0) {
            best = k;
            best_len = a->len;
        }
    }
    return best;
}

int tt_tokenizer_encode(tt_tokenizer *t, const void *text, size_t len, tt_tok_ids *out, tt_status *st) {
    const uint8_t *s = text;
    /* every token holds at least one byte: len ids at most */
    TT_CHECK(ids_reserve(out, len, st));
    if (t->kind == TT_TOK_BYTE) {
        for (size_t i = 0; i < len; i++) out->ids[out->n + i] = s[i];
        out->n += len;
        return TT_OK;
    }
    size_t seg = 0, i = 0;
    while (i < len && t->n_added) {
        if (t->n_first == 1) {
            const uint8_t *p = memchr(s + i, t->only_first, len - i);
            if (!p) break;
            i = (size_t)(p - s);
        } else if (!t->added_first[s[i]]) {
            i++;
            continue;
        }
        int k = match_added(t, s + i, len - i);
        if (k < 0) {
            i++;
            continue;
        }
        TT_CHECK(encode_segment(t, s + seg, i - seg, out, st));
        out->ids[out->n++] = t->added[k].id;
        i += t->added[k].len;
        seg = i;
    }
    return encode_segment(t, s + seg, len - seg, out, st);
}

int tt_tokenizer_decode(const tt_tokenizer *t, const int32_t *ids, size_t n, char **text, size_t *len,
                        tt_status *st) {
    *text = NULL;
    *len = 0;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t id = ids[i];
        if (id < 0 || id >= t->vocab_size || !t->tok_used[id])
            return tt_fail(st, TT_EINVAL, "token id %ld at position %zu is not in the vocabulary (ids 0..%ld)", (long)id,
                           i, (long)t->vocab_size - 1);
        total += t->tok_off[id + 1] - t->tok_off[id];
    }
    char *p = malloc(total + 1);
    if (!p) return tt_fail(st, TT_ENOMEM, "out of memory (decoding %zu bytes)", total);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        size_t a = t->tok_off[ids[i]], b = t->tok_off[ids[i] + 1];
        memcpy(p + o, t->tok_bytes + a, b - a);
        o += b - a;
    }
    p[o] = 0;
    *text = p;
    *len = o;
    return TT_OK;
}
