/* json.c — strict JSON pull reader, DOM, number conversion and writer
 * (see json.h for the exact rules). */
#include "json.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N_VALUE, N_VALUE_OR_CLOSE, N_KEY_OR_CLOSE, N_KEY, N_COLON, N_COMMA_OR_CLOSE, N_END };

void tt_json_reader_init(tt_json_reader *r, const char *buf, size_t len) {
    memset(r, 0, sizeof *r);
    r->buf = buf;
    r->len = len;
    r->need = N_VALUE;
}

static tt_json_event rfail(tt_json_reader *r, tt_status *st, const char *what) {
    r->done = 2;
    if (r->pos < r->len) {
        unsigned char c = (unsigned char)r->buf[r->pos];
        if (c >= 0x20 && c < 0x7f)
            tt_fail(st, TT_EFORMAT, "JSON: %s at byte %zu (found '%c')", what, r->pos, c);
        else
            tt_fail(st, TT_EFORMAT, "JSON: %s at byte %zu (found byte 0x%02x)", what, r->pos, c);
    } else {
        tt_fail(st, TT_EFORMAT, "JSON: %s at byte %zu (end of input)", what, r->pos);
    }
    return TT_JSON_ERROR;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* 4 hex digits at s (bounds checked by caller) -> code unit, or -1. */
static long hex4(const char *s) {
    long v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(s[i]);
        if (h < 0) return -1;
        v = v * 16 + h;
    }
    return v;
}

/* Length of a valid UTF-8 multi-byte sequence at s (n bytes available), 0 if invalid. */
static size_t utf8_seq(const unsigned char *s, size_t n) {
    unsigned char c = s[0];
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c == 0xE0) { len = 3; lo = 0xA0; }
    else if (c >= 0xE1 && c <= 0xEC) len = 3;
    else if (c == 0xED) { len = 3; hi = 0x9F; }  /* no surrogates */
    else if (c >= 0xEE && c <= 0xEF) len = 3;
    else if (c == 0xF0) { len = 4; lo = 0x90; }
    else if (c >= 0xF1 && c <= 0xF3) len = 4;
    else if (c == 0xF4) { len = 4; hi = 0x8F; }
    else return 0;
    if (n < len) return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF) return 0;
    return len;
}

static size_t utf8_len_cp(long cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

/* Lex a string starting at r->pos (a '"'). Sets tok, tok_len, tok_decoded_len. */
static int lex_string(tt_json_reader *r, tt_status *st) {
    const char *b = r->buf;
    size_t n = r->len, i = r->pos + 1, dec = 0;
    for (;;) {
        if (i >= n) {
            r->pos = n;
            rfail(r, st, "unterminated string");
            return -1;
        }
        unsigned char c = (unsigned char)b[i];
        if (c == '"') break;
        if (c == '\\') {
            if (i + 1 >= n) { r->pos = i; rfail(r, st, "unterminated escape"); return -1; }
            char e = b[i + 1];
            if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't') {
                dec += 1;
                i += 2;
            } else if (e == 'u') {
                if (n - i < 6) { r->pos = i; rfail(r, st, "truncated \\u escape"); return -1; }
                long cp = hex4(b + i + 2);
                if (cp < 0) { r->pos = i; rfail(r, st, "invalid \\u escape"); return -1; }
                if (cp == 0) { r->pos = i; rfail(r, st, "\\u0000 is not allowed in strings"); return -1; }
                if (cp >= 0xDC00 && cp <= 0xDFFF) { r->pos = i; rfail(r, st, "unpaired low surrogate"); return -1; }
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    if (n - i < 12 || b[i + 6] != '\\' || b[i + 7] != 'u') { r->pos = i; rfail(r, st, "unpaired high surrogate"); return -1; }
                    long lo = hex4(b + i + 8);
                    if (lo < 0xDC00 || lo > 0xDFFF) { r->pos = i; rfail(r, st, "unpaired high surrogate"); return -1; }
                    dec += 4;
                    i += 12;
                } else {
                    dec += utf8_len_cp(cp);
                    i += 6;
                }
            } else {
                r->pos = i;
                rfail(r, st, "invalid escape in string");
                return -1;
            }
        } else if (c < 0x20) {
            r->pos = i;
            rfail(r, st, "control character in string");
            return -1;
        } else if (c < 0x80) {
            dec++;
            i++;
        } else {
            size_t k = utf8_seq((const unsigned char *)b + i, n - i);
            if (!k) { r->pos = i; rfail(r, st, "invalid UTF-8 in string"); return -1; }
            dec += k;
            i += k;
        }
    }
    r->tok = b + r->pos + 1;
    r->tok_len = i - (r->pos + 1);
    r->tok_decoded_len = dec;
    r->pos = i + 1;
    return 0;
}

/* Length of the longest JSON-number prefix of s[0..n), 0 if none. */
static size_t number_len(const char *s, size_t n) {
    size_t i = 0;
    if (i < n && s[i] == '-') i++;
    if (i >= n) return 0;
    if (s[i] == '0') i++;
    else if (s[i] >= '1' && s[i] <= '9') {
        while (i < n && s[i] >= '0' && s[i] <= '9') i++;
    } else return 0;
    if (i < n && s[i] == '.') {
        size_t j = ++i;
        while (i < n && s[i] >= '0' && s[i] <= '9') i++;
        if (i == j) return 0;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-')) i++;
        size_t j = i;
        while (i < n && s[i] >= '0' && s[i] <= '9') i++;
        if (i == j) return 0;
    }
    return i;
}

static void after_value(tt_json_reader *r) { r->need = r->depth == 0 ? N_END : N_COMMA_OR_CLOSE; }

tt_json_event tt_json_next(tt_json_reader *r, tt_status *st) {
    if (r->done == 1) return TT_JSON_END;
    if (r->done == 2) return tt_fail(st, TT_EFORMAT, "JSON: read after error"), TT_JSON_ERROR;
    const char *b = r->buf;
    for (;;) {
        while (r->pos < r->len && (b[r->pos] == ' ' || b[r->pos] == '\t' || b[r->pos] == '\n' || b[r->pos] == '\r')) r->pos++;
        if (r->need == N_END) {
            if (r->pos == r->len) {
                r->done = 1;
                return TT_JSON_END;
            }
            return rfail(r, st, "unexpected data after the JSON value");
        }
        if (r->pos >= r->len) return rfail(r, st, "unexpected end of JSON");
        char c = b[r->pos];
        char kind = r->depth ? (char)r->kind[r->depth - 1] : 0;
        switch (r->need) {
        case N_COLON:
            if (c != ':') return rfail(r, st, "expected ':'");
            r->pos++;
            r->need = N_VALUE;
            continue;
        case N_COMMA_OR_CLOSE:
            if (c == ',') {
                r->pos++;
                r->need = kind == 'o' ? N_KEY : N_VALUE;
                continue;
            }
            if ((c == ']' && kind == 'a') || (c == '}' && kind == 'o')) goto close;
            return rfail(r, st, kind == 'o' ? "expected ',' or '}'" : "expected ',' or ']'");
        case N_KEY_OR_CLOSE:
            if (c == '}') goto close;
            /* fall through */
        case N_KEY:
            if (c != '"') return rfail(r, st, "expected a string key");
            if (lex_string(r, st)) return TT_JSON_ERROR;
            r->need = N_COLON;
            return TT_JSON_KEY;
        case N_VALUE_OR_CLOSE:
            if (c == ']') goto close;
            /* fall through */
        default: /* N_VALUE */
            if (c == '{' || c == '[') {
                if (r->depth >= TT_JSON_MAX_DEPTH) return rfail(r, st, "nesting too deep");
                r->kind[r->depth++] = c == '{' ? 'o' : 'a';
                r->pos++;
                r->need = c == '{' ? N_KEY_OR_CLOSE : N_VALUE_OR_CLOSE;
                return c == '{' ? TT_JSON_OBJ_BEGIN : TT_JSON_ARR_BEGIN;
            }
            if (c == '"') {
                if (lex_string(r, st)) return TT_JSON_ERROR;
                after_value(r);
                return TT_JSON_STRING;
            }
            if (c == '-' || (c >= '0' && c <= '9')) {
                size_t k = number_len(b + r->pos, r->len - r->pos);
                if (!k) return rfail(r, st, "invalid number");
                if (k > TT_JSON_MAX_NUMBER) return rfail(r, st, "number too long");
                r->tok = b + r->pos;
                r->tok_len = k;
                r->pos += k;
                after_value(r);
                return TT_JSON_NUMBER;
            }
            static const char *lits[3] = {"true", "false", "null"};
            static const tt_json_event evs[3] = {TT_JSON_TRUE, TT_JSON_FALSE, TT_JSON_NULL};
            for (int i = 0; i < 3; i++) {
                size_t k = strlen(lits[i]);
                if (r->len - r->pos >= k && memcmp(b + r->pos, lits[i], k) == 0) {
                    r->tok = b + r->pos;
                    r->tok_len = k;
                    r->pos += k;
                    after_value(r);
                    return evs[i];
                }
            }
            return rfail(r, st, "expected a JSON value");
        }
    close:
        r->pos++;
        r->depth--;
        after_value(r);
        return c == '}' ? TT_JSON_OBJ_END : TT_JSON_ARR_END;
    }
}

static size_t put_utf8(char *o, long cp) {
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xC0 | (cp >> 6)); o[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

void tt_json_unescape(const char *raw, size_t raw_len, char *out) {
    size_t i = 0, o = 0;
    while (i < raw_len) {
        char c = raw[i];
        if (c != '\\') { out[o++] = c; i++; continue; }
        char e = raw[i + 1];
        switch (e) {
        case 'b': out[o++] = '\b'; i += 2; break;
        case 'f': out[o++] = '\f'; i += 2; break;
        case 'n': out[o++] = '\n'; i += 2; break;
        case 'r': out[o++] = '\r'; i += 2; break;
        case 't': out[o++] = '\t'; i += 2; break;
        case 'u': {
            long cp = hex4(raw + i + 2);
            i += 6;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                long lo = hex4(raw + i + 2);
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                i += 6;
            }
            o += put_utf8(out + o, cp);
            break;
        }
        default: out[o++] = e; i += 2; break; /* " \ / */
        }
    }
    out[o] = 0;
}

/* ---------------- DOM ---------------- */

static int cmp_key_ptr(const void *a, const void *b) {
    const tt_json_node *x = *(const tt_json_node *const *)a, *y = *(const tt_json_node *const *)b;
    size_t n = TT_MIN(x->key_len, y->key_len);
    int c = memcmp(x->key, y->key, n);
    if (c) return c;
    return x->key_len < y->key_len ? -1 : x->key_len > y->key_len;
}

/* Reject duplicate keys among the members of object node idx. */
static int check_dup_keys(tt_json_doc *d, size_t idx, tt_status *st) {
    size_t cnt = d->nodes[idx].count;
    if (cnt < 2) return TT_OK;
    const tt_json_node **v = malloc(cnt * sizeof *v);
    if (!v) return tt_fail(st, TT_ENOMEM, "out of memory (JSON)");
    size_t k = 0;
    for (size_t c = d->nodes[idx].child; c != TT_JSON_NONE; c = d->nodes[c].next) v[k++] = &d->nodes[c];
    qsort(v, k, sizeof *v, cmp_key_ptr);
    for (size_t i = 1; i < k; i++) {
        if (cmp_key_ptr(&v[i - 1], &v[i]) == 0) {
            int rc = tt_fail(st, TT_EFORMAT, "JSON: duplicate key \"%.64s\"", v[i]->key);
            free(v);
            return rc;
        }
    }
    free(v);
    return TT_OK;
}

int tt_json_parse(const char *buf, size_t len, size_t max_nodes, tt_json_doc *d, tt_status *st) {
    memset(d, 0, sizeof *d);
    if (len > SIZE_MAX - 2) return tt_fail(st, TT_EINVAL, "JSON: input too large");
    d->arena = malloc(len + 1);
    if (!d->arena) return tt_fail(st, TT_ENOMEM, "out of memory (JSON, %zu bytes)", len);
    size_t apos = 0;
    tt_json_reader r;
    tt_json_reader_init(&r, buf, len);
    size_t cont[TT_JSON_MAX_DEPTH], last[TT_JSON_MAX_DEPTH];
    int sp = 0;
    const char *key = NULL;
    size_t key_len = 0;
    int rc = TT_OK;
    for (;;) {
        tt_json_event ev = tt_json_next(&r, st);
        if (ev == TT_JSON_ERROR) { rc = st ? st->code : TT_EFORMAT; if (!rc) rc = TT_EFORMAT; goto fail; }
        if (ev == TT_JSON_END) break;
        if (ev == TT_JSON_KEY) {
            char *o = d->arena + apos;
            tt_json_unescape(r.tok, r.tok_len, o);
            key = o;
            key_len = r.tok_decoded_len;
            apos += key_len + 1;
            continue;
        }
        if (ev == TT_JSON_OBJ_END || ev == TT_JSON_ARR_END) {
            sp--;
            if (ev == TT_JSON_OBJ_END && (rc = check_dup_keys(d, cont[sp], st))) goto fail;
            continue;
        }
        if (d->n >= max_nodes) {
            rc = tt_fail(st, TT_EFORMAT, "JSON: more than %zu values", max_nodes);
            goto fail;
        }
        if (d->n == d->cap) {
            size_t cap = d->cap ? d->cap * 2 : 64;
            if (cap > max_nodes) cap = max_nodes;
            tt_json_node *p = realloc(d->nodes, cap * sizeof *p);
            if (!p) { rc = tt_fail(st, TT_ENOMEM, "out of memory (JSON nodes)"); goto fail; }
            d->nodes = p;
            d->cap = cap;
        }
        size_t idx = d->n++;
        tt_json_node *nd = &d->nodes[idx];
        memset(nd, 0, sizeof *nd);
        nd->child = nd->next = TT_JSON_NONE;
        if (sp > 0 && r.kind[sp - 1] == 'o') {
            nd->key = key;
            nd->key_len = key_len;
        }
        switch (ev) {
        case TT_JSON_OBJ_BEGIN: nd->type = TT_JOBJECT; break;
        case TT_JSON_ARR_BEGIN: nd->type = TT_JARRAY; break;
        case TT_JSON_TRUE: nd->type = TT_JTRUE; break;
        case TT_JSON_FALSE: nd->type = TT_JFALSE; break;
        case TT_JSON_NULL: nd->type = TT_JNULL; break;
        case TT_JSON_STRING: {
            nd->type = TT_JSTRING;
            char *o = d->arena + apos;
            tt_json_unescape(r.tok, r.tok_len, o);
            nd->str = o;
            nd->len = r.tok_decoded_len;
            apos += nd->len + 1;
            break;
        }
        default: { /* NUMBER */
            nd->type = TT_JNUMBER;
            char *o = d->arena + apos;
            memcpy(o, r.tok, r.tok_len);
            o[r.tok_len] = 0;
            nd->str = o;
            nd->len = r.tok_len;
            apos += r.tok_len + 1;
            break;
        }
        }
        if (sp > 0) {
            tt_json_node *par = &d->nodes[cont[sp - 1]];
            if (par->count == 0) par->child = idx;
            else d->nodes[last[sp - 1]].next = idx;
            last[sp - 1] = idx;
            par->count++;
        }
        if (ev == TT_JSON_OBJ_BEGIN || ev == TT_JSON_ARR_BEGIN) cont[sp++] = idx;
    }
    return TT_OK;
fail:
    tt_json_free(d);
    return rc;
}

void tt_json_free(tt_json_doc *d) {
    free(d->nodes);
    free(d->arena);
    memset(d, 0, sizeof *d);
}

const tt_json_node *tt_json_first(const tt_json_doc *d, const tt_json_node *c) {
    if (!c || (c->type != TT_JARRAY && c->type != TT_JOBJECT) || c->child == TT_JSON_NONE) return NULL;
    return &d->nodes[c->child];
}

const tt_json_node *tt_json_sibling(const tt_json_doc *d, const tt_json_node *n) {
    if (!n || n->next == TT_JSON_NONE) return NULL;
    return &d->nodes[n->next];
}

const tt_json_node *tt_json_get(const tt_json_doc *d, const tt_json_node *obj, const char *key) {
    if (!obj || obj->type != TT_JOBJECT) return NULL;
    for (const tt_json_node *c = tt_json_first(d, obj); c; c = tt_json_sibling(d, c))
        if (strcmp(c->key, key) == 0) return c;
    return NULL;
}

/* ---------------- numbers ---------------- */

int tt_json_parse_u64(const char *s, size_t n, uint64_t *out) {
    if (n == 0 || n > 20) return 1;
    if (s[0] == '0' && n > 1) return 1;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return 1;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10) return 1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

int tt_json_parse_i64(const char *s, size_t n, int64_t *out) {
    if (n == 0) return 1;
    int neg = s[0] == '-';
    uint64_t v;
    if (tt_json_parse_u64(s + neg, n - (size_t)neg, &v)) return 1;
    if (neg) {
        if (v > (uint64_t)INT64_MAX + 1) return 1;
        *out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
    } else {
        if (v > (uint64_t)INT64_MAX) return 1;
        *out = (int64_t)v;
    }
    return 0;
}

/* Copy a grammar-checked number into a NUL-terminated buffer. */
static int number_copy(const char *s, size_t n, char buf[TT_JSON_MAX_NUMBER + 1]) {
    if (n == 0 || n > TT_JSON_MAX_NUMBER || number_len(s, n) != n) return 1;
    memcpy(buf, s, n);
    buf[n] = 0;
    return 0;
}

int tt_json_parse_f64(const char *s, size_t n, double *out) {
    char buf[TT_JSON_MAX_NUMBER + 1];
    if (number_copy(s, n, buf)) return 1;
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    if (end != buf + n || !isfinite(v)) return 1;
    *out = v;
    return 0;
}

int tt_json_parse_f32_text(const char *s, size_t n, float *out) {
    if (n == 3 && memcmp(s, "nan", 3) == 0) { *out = NAN; return 0; }
    if (n == 3 && memcmp(s, "inf", 3) == 0) { *out = INFINITY; return 0; }
    if (n == 4 && memcmp(s, "-inf", 4) == 0) { *out = -INFINITY; return 0; }
    char buf[TT_JSON_MAX_NUMBER + 1];
    if (number_copy(s, n, buf)) return 1;
    char *end;
    errno = 0;
    float v = strtof(buf, &end); /* correctly rounded decimal -> float */
    if (end != buf + n || !isfinite(v)) return 1;
    *out = v;
    return 0;
}

int tt_json_get_i64(const tt_json_node *n, int64_t *out) {
    if (!n || n->type != TT_JNUMBER) return 1;
    return tt_json_parse_i64(n->str, n->len, out);
}

int tt_json_get_u64(const tt_json_node *n, uint64_t *out) {
    if (!n || n->type != TT_JNUMBER) return 1;
    return tt_json_parse_u64(n->str, n->len, out);
}

int tt_json_get_f64(const tt_json_node *n, double *out) {
    if (!n || n->type != TT_JNUMBER) return 1;
    return tt_json_parse_f64(n->str, n->len, out);
}

/* ---------------- writer ---------------- */

void tt_jw_init(tt_jw *w) { memset(w, 0, sizeof *w); }

void tt_jw_free(tt_jw *w) {
    free(w->buf);
    memset(w, 0, sizeof *w);
}

static int jw_reserve(tt_jw *w, size_t extra) {
    if (w->oom) return 1;
    if (extra > SIZE_MAX - w->len - 1) { w->oom = 1; return 1; }
    size_t need = w->len + extra + 1;
    if (need <= w->cap) return 0;
    size_t cap = w->cap ? w->cap : 256;
    while (cap < need) cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *p = realloc(w->buf, cap);
    if (!p) { w->oom = 1; return 1; }
    w->buf = p;
    w->cap = cap;
    return 0;
}

void tt_jw_raw(tt_jw *w, const char *s, size_t n) {
    if (jw_reserve(w, n)) return;
    memcpy(w->buf + w->len, s, n);
    w->len += n;
    w->buf[w->len] = 0;
}

void tt_jw_cstr(tt_jw *w, const char *s) { tt_jw_raw(w, s, strlen(s)); }

void tt_jw_printf(tt_jw *w, const char *fmt, ...) {
    char small[128];
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int k = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (k < 0) { w->oom = 1; va_end(ap2); return; }
    if ((size_t)k < sizeof small) {
        tt_jw_raw(w, small, (size_t)k);
    } else if (!jw_reserve(w, (size_t)k)) {
        vsnprintf(w->buf + w->len, (size_t)k + 1, fmt, ap2);
        w->len += (size_t)k;
    }
    va_end(ap2);
}

void tt_jw_string(tt_jw *w, const char *s, size_t n) {
    tt_jw_raw(w, "\"", 1);
    size_t run = 0; /* bytes copied verbatim in one go */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char ubuf[8];
        switch (c) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        default:
            if (c < 0x20 || c == 0x7f) {
                snprintf(ubuf, sizeof ubuf, "\\u%04x", c);
                esc = ubuf;
            } else if (c >= 0x80) {
                /* valid UTF-8 passes through; a stray byte becomes U+FFFD,
                 * so the output is always valid JSON text */
                size_t len = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xC2 && c <= 0xDF ? 2 : 0;
                int ok = len > 0 && i + len <= n;
                for (size_t k = 1; ok && k < len; k++) ok = ((unsigned char)s[i + k] & 0xC0) == 0x80;
                if (ok) { /* no overlongs, no surrogates, nothing above U+10FFFF (as the reader) */
                    unsigned char c1 = (unsigned char)s[i + 1];
                    ok = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 > 0x9F) && !(c == 0xF0 && c1 < 0x90) &&
                         !(c == 0xF4 && c1 > 0x8F);
                }
                if (ok) {
                    run += len;
                    i += len - 1;
                    continue;
                }
                esc = "\\ufffd";
            }
        }
        if (esc) {
            tt_jw_raw(w, s + i - run, run);
            run = 0;
            tt_jw_cstr(w, esc);
        } else {
            run++;
        }
    }
    tt_jw_raw(w, s + n - run, run);
    tt_jw_raw(w, "\"", 1);
}

const char *tt_json_fmt_f32(char buf[32], float x) {
    if (isnan(x)) snprintf(buf, 32, "nan");
    else if (isinf(x)) snprintf(buf, 32, x > 0 ? "inf" : "-inf");
    else snprintf(buf, 32, "%.9g", (double)x);
    return buf;
}

void tt_jw_f32(tt_jw *w, float x) {
    char b[32];
    tt_json_fmt_f32(b, x);
    if (isfinite(x)) tt_jw_cstr(w, b);
    else tt_jw_string(w, b, strlen(b));
}
