/* tok_load.c — reading a byte-level BPE tokenizer from Hugging Face's files
 * (tokenizer.h): tokenizer.json, or vocab.json + merges.txt, from memory or
 * from a folder. Checks what the encoder relies on (every token in GPT-2's
 * byte-to-unicode alphabet, ids unique and in range, every merge's parts and
 * result in the vocabulary, all 256 bytes present) and refuses settings it
 * does not implement (a normalizer, another model or pre-tokenizer, a prefix
 * space, dropout, byte fallback, ...) with one line naming the file and the
 * field. */
#include "tok/tok_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/fileio.h"
#include "io/json.h"
#include "tok/unicode.h"

/* ------------------------------------------------------------ byte-level alphabet */

/* GPT-2's bytes_to_unicode: printable bytes stand for themselves, the other
 * 68 take U+0100.. in byte order. The inverse, code point -> byte (-1: not
 * in the alphabet), is made once per load. */
typedef struct {
    int16_t byte[324];
} bl_table;

static void bl_table_init(bl_table *t) {
    for (int i = 0; i < 324; i++) t->byte[i] = -1;
    int n = 0;
    for (int b = 0; b < 256; b++) {
        int printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
        t->byte[printable ? b : 256 + n++] = (int16_t)b;
    }
}

/* The bytes a byte-level token string s[0..n) stands for, into out (room for
 * n bytes); -1 if a character is not in the alphabet. */
static long bytelevel_decode(const bl_table *bl, const char *s, size_t n, uint8_t *out) {
    const uint8_t *u = (const uint8_t *)s;
    size_t i = 0, o = 0;
    while (i < n) {
        uint32_t cp;
        int l = tt_utf8_decode(u + i, n - i, &cp);
        int b = cp < 324 ? bl->byte[cp] : -1;
        if (b < 0) return -1;
        out[o++] = (uint8_t)b;
        i += (size_t)l;
    }
    return (long)o;
}

/* s as a short, printable, quoted excerpt for a message */
static const char *show(const char *s, size_t n, char buf[80]) {
    size_t o = 0;
    buf[o++] = '\'';
    for (size_t i = 0; i < n && o < 70; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f) o += (size_t)snprintf(buf + o, 80 - o, "\\x%02x", c);
        else buf[o++] = (char)c;
    }
    if (n > 0 && o >= 70) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o++] = '\'';
    buf[o] = 0;
    return buf;
}

/* ------------------------------------------------------------ builder */

/* bytes -> id of the vocabulary (added tokens included), for the merges */
typedef struct {
    const tt_tokenizer *t;
    int32_t *slot; /* id, or -1 */
    size_t mask;
} vmap;

static uint64_t bytes_hash(const uint8_t *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h ^ (h >> 31);
}

static int32_t vmap_get(const vmap *m, const uint8_t *p, size_t n) {
    const tt_tokenizer *t = m->t;
    for (size_t i = bytes_hash(p, n) & m->mask;; i = (i + 1) & m->mask) {
        int32_t id = m->slot[i];
        if (id < 0) return -1;
        size_t a = t->tok_off[id], b = t->tok_off[id + 1];
        if (b - a == n && memcmp(t->tok_bytes + a, p, n) == 0) return id;
    }
}

static int vmap_build(vmap *m, const tt_tokenizer *t, tt_status *st) {
    size_t cap = 64;
    while (cap < 2 * (size_t)t->vocab_size + 2) cap *= 2;
    m->t = t;
    m->slot = malloc(cap * sizeof *m->slot);
    if (!m->slot) return tt_fail(st, TT_ENOMEM, "out of memory (tokenizer vocabulary)");
    memset(m->slot, 0xff, cap * sizeof *m->slot);
    m->mask = cap - 1;
    for (int32_t id = 0; id < t->vocab_size; id++) {
        if (!t->tok_used[id]) continue;
        const uint8_t *p = t->tok_bytes + t->tok_off[id];
        size_t n = t->tok_off[id + 1] - t->tok_off[id];
        size_t i = bytes_hash(p, n) & m->mask;
        while (m->slot[i] >= 0) i = (i + 1) & m->mask;
        m->slot[i] = id;
    }
    return TT_OK;
}

/* One vocabulary entry as read: its text (byte-level alphabet, or an added
 * token's own text) and id. */
typedef struct {
    const char *key;
    size_t key_len;
    int64_t id;
} ventry;

/* Fills the id -> bytes table from the vocabulary entries and the added
 * tokens (already in t->added). A vocabulary key equal to an added token's
 * text is that token (its text is taken as is); every other key must be in
 * the byte-level alphabet. */
static int fill_vocab(tt_tokenizer *t, const ventry *v, size_t nv, const char *name, tt_status *st) {
    char b1[80], b2[80];
    bl_table bl;
    bl_table_init(&bl);
    int64_t max_id = -1;
    size_t total = 0;
    for (size_t i = 0; i < nv; i++) {
        if (v[i].id < 0 || v[i].id >= TT_TOK_MAX_VOCAB)
            return tt_fail(st, TT_EFORMAT, "%s: token %s has id %lld (ids must be 0..%d)", name,
                           show(v[i].key, v[i].key_len, b1), (long long)v[i].id, TT_TOK_MAX_VOCAB - 1);
        if (v[i].key_len == 0) return tt_fail(st, TT_EFORMAT, "%s: the token of id %lld is empty", name, (long long)v[i].id);
        max_id = TT_MAX(max_id, v[i].id);
        total += v[i].key_len;
    }
    for (int k = 0; k < t->n_added; k++) {
        max_id = TT_MAX(max_id, t->added[k].id);
        total += t->added[k].len;
    }
    if (max_id < 0) return tt_fail(st, TT_EFORMAT, "%s: the vocabulary is empty", name);
    t->vocab_size = (int32_t)(max_id + 1);
    size_t V = (size_t)t->vocab_size;
    int32_t *src = malloc(V * sizeof *src); /* which entry gave each id: vocab i, or -2 - k for added k */
    t->tok_used = calloc(V, 1);
    t->tok_off = calloc(V + 1, sizeof *t->tok_off);
    t->tok_bytes = malloc(total + 1);
    if (!src || !t->tok_used || !t->tok_off || !t->tok_bytes) {
        free(src);
        return tt_fail(st, TT_ENOMEM, "out of memory (tokenizer vocabulary of %zu ids)", V);
    }
    for (size_t i = 0; i < V; i++) src[i] = -1;
    int rc = TT_OK;
    for (int k = 0; k < t->n_added && !rc; k++) {
        int32_t id = t->added[k].id;
        if (src[id] != -1)
            rc = tt_fail(st, TT_EFORMAT, "%s: added tokens %s and %s have the same id %ld", name,
                         show((const char *)t->added[-2 - src[id]].s, t->added[-2 - src[id]].len, b1),
                         show((const char *)t->added[k].s, t->added[k].len, b2), (long)id);
        src[id] = -2 - k;
    }
    for (size_t i = 0; i < nv && !rc; i++) {
        int32_t id = (int32_t)v[i].id;
        if (src[id] <= -2) {
            const tt_tok_added *a = &t->added[-2 - src[id]];
            if (a->len == v[i].key_len && memcmp(a->s, v[i].key, a->len) == 0) continue; /* the same token */
            rc = tt_fail(st, TT_EFORMAT, "%s: id %ld is the added token %s and the vocabulary token %s", name, (long)id,
                         show((const char *)a->s, a->len, b1), show(v[i].key, v[i].key_len, b2));
        } else if (src[id] >= 0) {
            rc = tt_fail(st, TT_EFORMAT, "%s: tokens %s and %s have the same id %ld", name,
                         show(v[src[id]].key, v[src[id]].key_len, b1), show(v[i].key, v[i].key_len, b2), (long)id);
        } else {
            src[id] = (int32_t)i;
        }
    }
    /* the bytes of each id, in id order */
    size_t o = 0;
    for (size_t id = 0; id < V && !rc; id++) {
        t->tok_off[id] = o;
        if (src[id] == -1) continue;
        t->tok_used[id] = 1;
        if (src[id] <= -2) {
            const tt_tok_added *a = &t->added[-2 - src[id]];
            memcpy(t->tok_bytes + o, a->s, a->len);
            o += a->len;
            continue;
        }
        const ventry *e = &v[src[id]];
        /* a key that is an added token's text (under another id) is taken as is */
        int is_added_text = 0;
        for (int k = 0; k < t->n_added && !is_added_text; k++)
            is_added_text = t->added[k].len == e->key_len && memcmp(t->added[k].s, e->key, e->key_len) == 0;
        long nb = is_added_text ? -1 : bytelevel_decode(&bl, e->key, e->key_len, t->tok_bytes + o);
        if (is_added_text) {
            memcpy(t->tok_bytes + o, e->key, e->key_len);
            nb = (long)e->key_len;
        }
        if (nb < 0) {
            rc = tt_fail(st, TT_EFORMAT,
                         "%s: token %s (id %ld) is not in GPT-2's byte-level alphabet: not a byte-level BPE vocabulary", name,
                         show(e->key, e->key_len, b1), (long)id);
            break;
        }
        o += (size_t)nb;
    }
    if (!rc) t->tok_off[V] = o;
    free(src);
    return rc;
}

/* One merge as read: the texts of its two parts. */
typedef struct {
    const char *a, *b;
    size_t a_len, b_len;
} mentry;

static int fill_merges(tt_tokenizer *t, const mentry *m, size_t nm, const char *name, tt_status *st) {
    bl_table bl;
    bl_table_init(&bl);
    vmap vm;
    TT_CHECK(vmap_build(&vm, t, st));
    size_t maxlen = 0;
    for (size_t r = 0; r < nm; r++) maxlen = TT_MAX(maxlen, m[r].a_len + m[r].b_len);
    uint8_t *buf = malloc(maxlen + 1);
    t->merges = malloc((nm ? nm : 1) * sizeof *t->merges);
    if (!buf || !t->merges) {
        free(buf);
        free(vm.slot);
        return tt_fail(st, TT_ENOMEM, "out of memory (%zu merges)", nm);
    }
    int rc = TT_OK;
    char b1[80], b2[80];
    for (size_t r = 0; r < nm && !rc; r++) {
        long na = bytelevel_decode(&bl, m[r].a, m[r].a_len, buf);
        long nb = na < 0 ? -1 : bytelevel_decode(&bl, m[r].b, m[r].b_len, buf + na);
        int32_t a = -1, b = -1, ab = -1;
        if (na > 0 && nb > 0) {
            a = vmap_get(&vm, buf, (size_t)na);
            b = vmap_get(&vm, buf + na, (size_t)nb);
            ab = vmap_get(&vm, buf, (size_t)(na + nb));
        }
        if (a < 0 || b < 0 || ab < 0) {
            const char *what = na <= 0 || a < 0 ? "its left part" : nb <= 0 || b < 0 ? "its right part" : "the merged token";
            rc = tt_fail(st, TT_EFORMAT, "%s: merge %zu (%s %s): %s is not in the vocabulary", name, r + 1,
                         show(m[r].a, m[r].a_len, b1), show(m[r].b, m[r].b_len, b2), what);
            break;
        }
        t->merges[r] = (tt_tok_merge){a, b, ab, 1};
    }
    t->n_merges = rc ? 0 : nm;
    free(buf);
    free(vm.slot);
    return rc;
}

static int add_added(tt_tokenizer *t, const char *s, size_t len, int64_t id, const char *name, tt_status *st) {
    if (len == 0) return tt_fail(st, TT_EFORMAT, "%s: an added token is empty", name);
    if (id < 0 || id >= TT_TOK_MAX_VOCAB)
        return tt_fail(st, TT_EFORMAT, "%s: added token id %lld out of range (0..%d)", name, (long long)id, TT_TOK_MAX_VOCAB - 1);
    tt_tok_added *a = realloc(t->added, (size_t)(t->n_added + 1) * sizeof *a);
    if (!a) return tt_fail(st, TT_ENOMEM, "out of memory (added tokens)");
    t->added = a;
    uint8_t *c = malloc(len);
    if (!c) return tt_fail(st, TT_ENOMEM, "out of memory (added tokens)");
    memcpy(c, s, len);
    t->added[t->n_added++] = (tt_tok_added){c, len, (int32_t)id};
    return TT_OK;
}

static void find_eot(tt_tokenizer *t) {
    static const char eot[] = "<|endoftext|>";
    for (int k = 0; k < t->n_added; k++)
        if (t->added[k].len == sizeof eot - 1 && memcmp(t->added[k].s, eot, sizeof eot - 1) == 0) t->eot = t->added[k].id;
}

/* ------------------------------------------------------------ tokenizer.json */

/* the JSON reader's message, on one line (it may quote a key holding a line end) */
static void json_msg(const tt_status *st, char msg[sizeof st->msg]) {
    snprintf(msg, sizeof st->msg, "%s", st->msg);
    for (char *p = msg; *p; p++)
        if ((unsigned char)*p < 0x20) *p = ' ';
}

static int is_null_or_absent(const tt_json_node *n) { return !n || n->type == TT_JNULL; }
static int is_false_or_absent(const tt_json_node *n) { return !n || n->type == TT_JNULL || n->type == TT_JFALSE; }
static int is_empty_str_or_absent(const tt_json_node *n) {
    return !n || n->type == TT_JNULL || (n->type == TT_JSTRING && n->len == 0);
}

static int str_is(const tt_json_node *n, const char *s) { return n && n->type == TT_JSTRING && strcmp(n->str, s) == 0; }

/* the "type" of a component object, for messages */
static const char *type_of(const tt_json_doc *d, const tt_json_node *n) {
    if (!n) return "(absent)";
    if (n->type == TT_JNULL) return "null";
    if (n->type != TT_JOBJECT) return "(not an object)";
    const tt_json_node *ty = tt_json_get(d, n, "type");
    return ty && ty->type == TT_JSTRING ? ty->str : "(no type)";
}

static int check_settings(const tt_json_doc *d, const tt_json_node *root, const tt_json_node *model, const char *name,
                          tt_status *st) {
    if (!str_is(tt_json_get(d, model, "type"), "BPE"))
        return tt_fail(st, TT_EUNSUP, "%s: model %s is not supported (tinytrain reads byte-level BPE)", name, type_of(d, model));
    const tt_json_node *n = tt_json_get(d, root, "normalizer");
    if (!is_null_or_absent(n))
        return tt_fail(st, TT_EUNSUP, "%s: normalizer %s is not supported (tinytrain reads GPT-2's byte-level BPE: no normalizer)",
                       name, type_of(d, n));
    const tt_json_node *pt = tt_json_get(d, root, "pre_tokenizer");
    if (!pt || pt->type != TT_JOBJECT || !str_is(tt_json_get(d, pt, "type"), "ByteLevel"))
        return tt_fail(st, TT_EUNSUP, "%s: pre_tokenizer %s is not supported (tinytrain reads GPT-2's byte-level BPE: ByteLevel)",
                       name, type_of(d, pt));
    if (!is_false_or_absent(tt_json_get(d, pt, "add_prefix_space")))
        return tt_fail(st, TT_EUNSUP, "%s: pre_tokenizer add_prefix_space true is not supported", name);
    const tt_json_node *ur = tt_json_get(d, pt, "use_regex");
    if (ur && ur->type != TT_JTRUE)
        return tt_fail(st, TT_EUNSUP, "%s: pre_tokenizer use_regex false is not supported", name);
    const tt_json_node *dec = tt_json_get(d, root, "decoder");
    if (!is_null_or_absent(dec) && !(dec->type == TT_JOBJECT && str_is(tt_json_get(d, dec, "type"), "ByteLevel")))
        return tt_fail(st, TT_EUNSUP, "%s: decoder %s is not supported (ByteLevel)", name, type_of(d, dec));
    const tt_json_node *dr = tt_json_get(d, model, "dropout");
    double p = 0;
    if (!is_null_or_absent(dr) && (tt_json_get_f64(dr, &p) || p != 0))
        return tt_fail(st, TT_EUNSUP, "%s: model dropout is not supported (it must be null)", name);
    static const char *const off[] = {"byte_fallback", "ignore_merges", "fuse_unk"};
    for (int i = 0; i < 3; i++)
        if (!is_false_or_absent(tt_json_get(d, model, off[i])))
            return tt_fail(st, TT_EUNSUP, "%s: model %s true is not supported", name, off[i]);
    static const char *const empty[] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (int i = 0; i < 2; i++)
        if (!is_empty_str_or_absent(tt_json_get(d, model, empty[i])))
            return tt_fail(st, TT_EUNSUP, "%s: model %s is not supported (it must be empty or null)", name, empty[i]);
    return TT_OK;
}

static int read_added(tt_tokenizer *t, const tt_json_doc *d, const tt_json_node *root, const char *name, tt_status *st) {
    const tt_json_node *at = tt_json_get(d, root, "added_tokens");
    if (is_null_or_absent(at)) return TT_OK;
    if (at->type != TT_JARRAY) return tt_fail(st, TT_EFORMAT, "%s: added_tokens is not an array", name);
    size_t k = 0;
    for (const tt_json_node *a = tt_json_first(d, at); a; a = tt_json_sibling(d, a), k++) {
        const tt_json_node *id = a->type == TT_JOBJECT ? tt_json_get(d, a, "id") : NULL;
        const tt_json_node *content = a->type == TT_JOBJECT ? tt_json_get(d, a, "content") : NULL;
        int64_t v;
        if (!id || !content || content->type != TT_JSTRING || tt_json_get_i64(id, &v))
            return tt_fail(st, TT_EFORMAT, "%s: added token %zu lacks an integer \"id\" or a string \"content\"", name, k + 1);
        static const char *const flags[] = {"lstrip", "rstrip", "single_word"};
        for (int f = 0; f < 3; f++)
            if (!is_false_or_absent(tt_json_get(d, a, flags[f]))) {
                char b[80];
                return tt_fail(st, TT_EUNSUP, "%s: added token %s: %s true is not supported", name,
                               show(content->str, content->len, b), flags[f]);
            }
        TT_CHECK(add_added(t, content->str, content->len, v, name, st));
    }
    return TT_OK;
}

static int read_vocab_obj(const tt_json_doc *d, const tt_json_node *vocab, const char *name, ventry **out, size_t *n,
                          tt_status *st) {
    *out = NULL;
    *n = 0;
    if (!vocab || vocab->type != TT_JOBJECT) return tt_fail(st, TT_EFORMAT, "%s: the vocabulary is not an object", name);
    ventry *v = malloc((vocab->count ? vocab->count : 1) * sizeof *v);
    if (!v) return tt_fail(st, TT_ENOMEM, "out of memory (vocabulary)");
    size_t k = 0;
    for (const tt_json_node *e = tt_json_first(d, vocab); e; e = tt_json_sibling(d, e), k++) {
        int64_t id;
        if (tt_json_get_i64(e, &id)) {
            char b[80];
            free(v);
            return tt_fail(st, TT_EFORMAT, "%s: the id of token %s is not an integer", name, show(e->key, e->key_len, b));
        }
        v[k] = (ventry){e->key, e->key_len, id};
    }
    *out = v;
    *n = k;
    return TT_OK;
}

/* the parts of a merge: "a b" (exactly one space) */
static int split_merge(const char *s, size_t n, mentry *m) {
    const char *sp = memchr(s, ' ', n);
    if (!sp || sp == s || sp == s + n - 1 || memchr(sp + 1, ' ', (size_t)(s + n - sp - 1))) return -1;
    *m = (mentry){s, sp + 1, (size_t)(sp - s), (size_t)(s + n - sp - 1)};
    return 0;
}

static int tokenizer_json(const char *buf, size_t len, const char *name, tt_tokenizer *t, tt_status *st) {
    tt_json_doc d;
    if (tt_json_parse(buf, len, len + 16, &d, st)) {
        char msg[sizeof st->msg];
        json_msg(st, msg);
        return tt_fail(st, TT_EFORMAT, "%s: %s", name, msg);
    }
    int rc = TT_OK;
    ventry *v = NULL;
    mentry *m = NULL;
    const tt_json_node *root = tt_json_root(&d);
    const tt_json_node *model = root && root->type == TT_JOBJECT ? tt_json_get(&d, root, "model") : NULL;
    if (!model || model->type != TT_JOBJECT) {
        rc = tt_fail(st, TT_EFORMAT, "%s: no \"model\" object: not a Hugging Face tokenizer.json", name);
        goto done;
    }
    if ((rc = check_settings(&d, root, model, name, st))) goto done;
    if ((rc = read_added(t, &d, root, name, st))) goto done;
    size_t nv;
    if ((rc = read_vocab_obj(&d, tt_json_get(&d, model, "vocab"), name, &v, &nv, st))) goto done;
    if ((rc = fill_vocab(t, v, nv, name, st))) goto done;
    const tt_json_node *merges = tt_json_get(&d, model, "merges");
    if (!merges || merges->type != TT_JARRAY) {
        rc = tt_fail(st, TT_EFORMAT, "%s: model.merges is missing or not an array", name);
        goto done;
    }
    m = malloc((merges->count ? merges->count : 1) * sizeof *m);
    if (!m) {
        rc = tt_fail(st, TT_ENOMEM, "out of memory (merges)");
        goto done;
    }
    size_t k = 0;
    for (const tt_json_node *e = tt_json_first(&d, merges); e; e = tt_json_sibling(&d, e), k++) {
        int ok = 0;
        if (e->type == TT_JSTRING) {
            ok = split_merge(e->str, e->len, &m[k]) == 0;
        } else if (e->type == TT_JARRAY && e->count == 2) {
            const tt_json_node *a = tt_json_first(&d, e), *b = tt_json_sibling(&d, a);
            if (a->type == TT_JSTRING && b->type == TT_JSTRING && a->len && b->len) {
                m[k] = (mentry){a->str, b->str, a->len, b->len};
                ok = 1;
            }
        }
        if (!ok) {
            rc = tt_fail(st, TT_EFORMAT, "%s: merge %zu is neither \"a b\" nor [\"a\", \"b\"]", name, k + 1);
            goto done;
        }
    }
    rc = fill_merges(t, m, k, name, st);
done:
    free(v);
    free(m);
    tt_json_free(&d);
    return rc;
}

static int finish(tt_tokenizer *t, int rc, const char *name, tt_tokenizer **out, tt_status *st) {
    if (!rc) {
        find_eot(t);
        rc = tt_tok_finish(t, name, st);
    }
    if (rc) {
        tt_tokenizer_free(t);
        return rc;
    }
    *out = t;
    return TT_OK;
}

int tt_tokenizer_from_json(const char *buf, size_t len, const char *name, tt_tokenizer **out, tt_status *st) {
    *out = NULL;
    if (!name) name = "tokenizer.json";
    tt_tokenizer *t = tt_tok_alloc(TT_TOK_BPE);
    if (!t) return tt_fail(st, TT_ENOMEM, "out of memory (tokenizer)");
    return finish(t, tokenizer_json(buf, len, name, t, st), name, out, st);
}

/* ------------------------------------------------------------ vocab.json + merges.txt */

static int vocab_merges(const char *vbuf, size_t vlen, const char *mbuf, size_t mlen, const char *name,
                        tt_tokenizer *t, tt_status *st) {
    char vname[300], mname[300];
    snprintf(vname, sizeof vname, "%s%svocab.json", name, name[0] ? "/" : "");
    snprintf(mname, sizeof mname, "%s%smerges.txt", name, name[0] ? "/" : "");
    tt_json_doc d;
    if (tt_json_parse(vbuf, vlen, vlen + 16, &d, st)) {
        char msg[sizeof st->msg];
        json_msg(st, msg);
        return tt_fail(st, TT_EFORMAT, "%s: %s", vname, msg);
    }
    ventry *v = NULL;
    mentry *m = NULL;
    size_t nv;
    int rc = read_vocab_obj(&d, tt_json_root(&d), vname, &v, &nv, st);
    /* the special token of GPT-2's files */
    for (size_t i = 0; i < nv && !rc; i++)
        if (v[i].key_len == 13 && memcmp(v[i].key, "<|endoftext|>", 13) == 0)
            rc = add_added(t, v[i].key, v[i].key_len, v[i].id, vname, st);
    if (!rc) rc = fill_vocab(t, v, nv, vname, st);
    /* merges.txt: lines; an optional "#version" first line; empty lines skipped */
    size_t cap = 0;
    for (size_t i = 0; i < mlen; i++) cap += mbuf[i] == '\n';
    if (!rc && !(m = malloc((cap + 1) * sizeof *m))) rc = tt_fail(st, TT_ENOMEM, "out of memory (merges)");
    size_t k = 0, line = 0;
    for (size_t pos = 0; pos < mlen && !rc;) {
        const char *nl = memchr(mbuf + pos, '\n', mlen - pos);
        size_t end = nl ? (size_t)(nl - mbuf) : mlen;
        size_t n = end - pos;
        line++;
        if (n && mbuf[pos + n - 1] == '\r') n--;
        if (n && !(line == 1 && n >= 8 && memcmp(mbuf + pos, "#version", 8) == 0)) {
            if (memchr(mbuf + pos, 0, n)) rc = tt_fail(st, TT_EFORMAT, "%s: line %zu holds a NUL byte", mname, line);
            else if (split_merge(mbuf + pos, n, &m[k])) {
                char b[80];
                rc = tt_fail(st, TT_EFORMAT, "%s: line %zu is not two tokens separated by one space: %s", mname, line,
                             show(mbuf + pos, n, b));
            } else k++;
        }
        pos = end + 1;
    }
    if (!rc) rc = fill_merges(t, m, k, mname, st);
    free(v);
    free(m);
    tt_json_free(&d);
    return rc;
}

int tt_tokenizer_from_vocab_merges(const char *vocab, size_t vocab_len, const char *merges, size_t merges_len,
                                   const char *name, tt_tokenizer **out, tt_status *st) {
    *out = NULL;
    if (!name) name = "";
    tt_tokenizer *t = tt_tok_alloc(TT_TOK_BPE);
    if (!t) return tt_fail(st, TT_ENOMEM, "out of memory (tokenizer)");
    return finish(t, vocab_merges(vocab, vocab_len, merges, merges_len, name, t, st), name[0] ? name : "tokenizer", out, st);
}

/* ------------------------------------------------------------ files */

static int read_file(const char *path, char **buf, size_t *len, tt_status *st) {
    int fd;
    uint64_t size;
    TT_CHECK(tt_open_regular(path, &fd, &size, st));
    if (size > (uint64_t)1 << 31) {
        close(fd);
        return tt_fail(st, TT_EINVAL, "'%.300s' is too large for a tokenizer file (%llu bytes)", path, (unsigned long long)size);
    }
    if (tt_read_all(fd, size, buf, st)) return tt_fail(st, st->code, "cannot read '%.300s'", path);
    *len = (size_t)size;
    return TT_OK;
}

static int exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

int tt_tokenizer_load(const char *path, tt_tokenizer **out, tt_status *st) {
    *out = NULL;
    if (!path || !*path) return tt_fail(st, TT_EINVAL, "no tokenizer given (a Hugging Face folder, a tokenizer.json or \"byte\")");
    if (strcmp(path, "byte") == 0) return tt_tokenizer_byte(out, st);
    struct stat sb;
    if (stat(path, &sb) != 0) return tt_fail(st, TT_EIO, "cannot open tokenizer '%.300s': %s", path, strerror(errno));
    size_t plen = strlen(path);
    char *p = malloc(plen + 16);
    if (!p) return tt_fail(st, TT_ENOMEM, "out of memory");
    char *buf = NULL, *buf2 = NULL;
    size_t len = 0, len2 = 0;
    int rc;
    if (!S_ISDIR(sb.st_mode)) {
        rc = read_file(path, &buf, &len, st);
        if (!rc) rc = tt_tokenizer_from_json(buf, len, path, out, st);
    } else if (snprintf(p, plen + 16, "%s/tokenizer.json", path), exists(p)) {
        rc = read_file(p, &buf, &len, st);
        if (!rc) rc = tt_tokenizer_from_json(buf, len, p, out, st);
    } else {
        char *q = malloc(plen + 16);
        if (!q) {
            free(p);
            return tt_fail(st, TT_ENOMEM, "out of memory");
        }
        snprintf(p, plen + 16, "%s/vocab.json", path);
        snprintf(q, plen + 16, "%s/merges.txt", path);
        if (!exists(p) || !exists(q))
            rc = tt_fail(st, TT_EIO, "folder '%.300s' has no tokenizer.json (nor vocab.json + merges.txt)", path);
        else {
            rc = read_file(p, &buf, &len, st);
            if (!rc) rc = read_file(q, &buf2, &len2, st);
            if (!rc) rc = tt_tokenizer_from_vocab_merges(buf, len, buf2, len2, path, out, st);
        }
        free(q);
    }
    free(buf);
    free(buf2);
    free(p);
    return rc;
}
