/* safetensors.c — validating .safetensors reader and streaming writer (see
 * safetensors.h for exactly what is accepted). */
#define _FILE_OFFSET_BITS 64
#define _POSIX_C_SOURCE 200809L
#include "safetensors.h"

#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct {
    const char *name;
    size_t size;
} dtypes[TT_ST_N_DTYPES] = {
    [TT_ST_BOOL] = {"BOOL", 1}, [TT_ST_U8] = {"U8", 1}, [TT_ST_I8] = {"I8", 1},
    [TT_ST_F8_E5M2] = {"F8_E5M2", 1}, [TT_ST_F8_E4M3] = {"F8_E4M3", 1},
    [TT_ST_I16] = {"I16", 2}, [TT_ST_U16] = {"U16", 2}, [TT_ST_F16] = {"F16", 2}, [TT_ST_BF16] = {"BF16", 2},
    [TT_ST_I32] = {"I32", 4}, [TT_ST_U32] = {"U32", 4}, [TT_ST_F32] = {"F32", 4},
    [TT_ST_F64] = {"F64", 8}, [TT_ST_I64] = {"I64", 8}, [TT_ST_U64] = {"U64", 8}, [TT_ST_C64] = {"C64", 8},
};

const char *tt_st_dtype_name(tt_st_dtype d) { return (unsigned)d < TT_ST_N_DTYPES ? dtypes[d].name : "?"; }
size_t tt_st_dtype_size(tt_st_dtype d) { return (unsigned)d < TT_ST_N_DTYPES ? dtypes[d].size : 0; }

int tt_st_dtype_parse(const char *name, tt_st_dtype *d) {
    for (int i = 0; i < TT_ST_N_DTYPES; i++)
        if (strcmp(name, dtypes[i].name) == 0) {
            *d = (tt_st_dtype)i;
            return 0;
        }
    return 1;
}

int tt_host_is_little_endian(void) {
    const uint32_t x = 1;
    unsigned char b;
    memcpy(&b, &x, 1);
    return b == 1;
}

static uint64_t rd_u64le(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

/* ---------------- reader ---------------- */

static int cmp_by_offset(const void *a, const void *b, const tt_st_tensor *t) {
    const tt_st_tensor *x = &t[*(const int *)a], *y = &t[*(const int *)b];
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}

/* qsort has no context argument in C11: sort small index arrays with a merge sort instead. */
static void sort_idx(int *v, int *tmp, int n, int (*cmp)(const void *, const void *, const tt_st_tensor *),
                     const tt_st_tensor *t) {
    if (n < 2) return;
    int h = n / 2;
    sort_idx(v, tmp, h, cmp, t);
    sort_idx(v + h, tmp, n - h, cmp, t);
    int i = 0, j = h, k = 0;
    while (i < h && j < n) tmp[k++] = cmp(&v[j], &v[i], t) < 0 ? v[j++] : v[i++];
    while (i < h) tmp[k++] = v[i++];
    while (j < n) tmp[k++] = v[j++];
    memcpy(v, tmp, (size_t)n * sizeof *v);
}

static int cmp_by_name(const void *a, const void *b, const tt_st_tensor *t) {
    return strcmp(t[*(const int *)a].name, t[*(const int *)b].name);
}

static int parse_tensor(const tt_json_doc *d, const tt_json_node *e, tt_st_tensor *t, uint64_t data_len, tt_status *st) {
    const char *nm = e->key;
    t->name = nm;
    if (e->key_len == 0) return tt_fail(st, TT_EFORMAT, "safetensors: empty tensor name");
    if (e->type != TT_JOBJECT) return tt_fail(st, TT_EFORMAT, "safetensors: tensor '%.80s': entry is not an object", nm);
    const tt_json_node *dt = NULL, *sh = NULL, *of = NULL;
    for (const tt_json_node *c = tt_json_first(d, e); c; c = tt_json_sibling(d, c)) {
        if (strcmp(c->key, "dtype") == 0) dt = c;
        else if (strcmp(c->key, "shape") == 0) sh = c;
        else if (strcmp(c->key, "data_offsets") == 0) of = c;
        else return tt_fail(st, TT_EFORMAT, "safetensors: tensor '%.80s': unexpected field '%.40s'", nm, c->key);
    }
    if (!dt || !sh || !of)
        return tt_fail(st, TT_EFORMAT, "safetensors: tensor '%.80s': missing '%s'", nm, !dt ? "dtype" : !sh ? "shape" : "data_offsets");
    if (dt->type != TT_JSTRING) return tt_fail(st, TT_EFORMAT, "safetensors: tensor '%.80s': dtype is not a string", nm);
    if (tt_st_dtype_parse(dt->str, &t->dtype))
        return tt_fail(st, TT_EFORMAT, "safetensors: tensor '%.80s': unknown dtype '%.20s'", nm, dt->str);
    if (sh->type != TT_JARRAY) return tt_fail(st, TT_EFORMAT, "safetensors: tensor '%.80s': shape is not an array", nm);
    if (sh->count > TT_ST_MAX_DIMS)
        return tt_fail(st, TT_EFORMAT, "safetensors: tensor '%.80s': %zu dims (at most %d supported)", nm, sh->count, TT_ST_MAX_DIMS);
    t->ndim = 0;
    uint64_t numel = 1;
    int overflow = 0;
    for (const tt_json_node *c = tt_json_first(d, sh); c; c = tt_json_sibling(d, c)) {
        int64_t v;
        if (tt_json_get_i64(c, &v) || v < 0)
            return tt_fail(st, TT_EFORMAT, "safetensors: tensor '%.80s': shape entries must be non-negative integers", nm);
        t->shape[t->ndim++] = v;
        if (v != 0 && numel > UINT64_MAX / (uint64_t)v) overflow = 1;
        else numel *= (uint64_t)v;
    }
    for (int i = 0; i < t->ndim; i++)
        if (t->shape[i] == 0) { numel = 0; overflow = 0; }
    size_t es = tt_st_dtype_size(t->dtype);
    if (overflow || numel > UINT64_MAX / es)
        return tt_fail(st, TT_EFORMAT, "safetensors: tensor '%.80s': shape product overflows", nm);
    t->numel = numel;
    uint64_t bytes = numel * es;
    if (of->type != TT_JARRAY || of->count != 2)
        return tt_fail(st, TT_EFORMAT, "safetensors: tensor '%.80s': data_offsets must be [begin, end]", nm);
    const tt_json_node *b0 = tt_json_first(d, of), *b1 = tt_json_sibling(d, b0);
    if (tt_json_get_u64(b0, &t->begin) || tt_json_get_u64(b1, &t->end))
        return tt_fail(st, TT_EFORMAT, "safetensors: tensor '%.80s': data_offsets must be unsigned integers", nm);
    if (t->begin > t->end)
        return tt_fail(st, TT_EFORMAT, "safetensors: tensor '%.80s': data_offsets begin %llu > end %llu", nm,
                       (unsigned long long)t->begin, (unsigned long long)t->end);
    if (t->end > data_len)
        return tt_fail(st, TT_EFORMAT, "safetensors: tensor '%.80s': data_offsets end %llu past the end of the data (%llu bytes)",
                       nm, (unsigned long long)t->end, (unsigned long long)data_len);
    if (t->end - t->begin != bytes)
        return tt_fail(st, TT_EFORMAT, "safetensors: tensor '%.80s': %s shape needs %llu bytes but data_offsets span %llu", nm,
                       tt_st_dtype_name(t->dtype), (unsigned long long)bytes, (unsigned long long)(t->end - t->begin));
    return TT_OK;
}

/* Parse + validate the header JSON (hdr, n bytes); data section has data_len bytes. */
static int parse_header(tt_st_reader *r, const char *hdr, size_t n, tt_status *st) {
    if (n < 2 || hdr[0] != '{') return tt_fail(st, TT_EFORMAT, "safetensors: header is not a JSON object");
    tt_status js = {0};
    if (tt_json_parse(hdr, n, TT_ST_MAX_NODES, &r->doc, &js))
        return tt_fail(st, js.code ? js.code : TT_EFORMAT, "safetensors: invalid header: %s", js.msg);
    const tt_json_doc *d = &r->doc;
    const tt_json_node *root = tt_json_root(d);
    if (!root || root->type != TT_JOBJECT) return tt_fail(st, TT_EFORMAT, "safetensors: header is not a JSON object");
    size_t cnt = root->count;
    if (cnt > (size_t)1 << 30) return tt_fail(st, TT_EFORMAT, "safetensors: too many tensors");
    r->t = calloc(cnt ? cnt : 1, sizeof *r->t);
    r->by_name = calloc(cnt ? cnt : 1, sizeof *r->by_name);
    int *tmp = calloc(cnt ? cnt : 1, sizeof *tmp);
    int rc = TT_OK;
    if (!r->t || !r->by_name || !tmp) { rc = tt_fail(st, TT_ENOMEM, "out of memory (safetensors header)"); goto out; }
    for (const tt_json_node *e = tt_json_first(d, root); e; e = tt_json_sibling(d, e)) {
        if (strcmp(e->key, "__metadata__") == 0) {
            if (e->type != TT_JOBJECT) { rc = tt_fail(st, TT_EFORMAT, "safetensors: __metadata__ is not an object"); goto out; }
            r->has_metadata = 1;
            r->meta = calloc(e->count ? e->count : 1, sizeof *r->meta);
            if (!r->meta) { rc = tt_fail(st, TT_ENOMEM, "out of memory (safetensors metadata)"); goto out; }
            for (const tt_json_node *m = tt_json_first(d, e); m; m = tt_json_sibling(d, m)) {
                if (m->type != TT_JSTRING) {
                    rc = tt_fail(st, TT_EFORMAT, "safetensors: __metadata__ value of '%.60s' is not a string", m->key);
                    goto out;
                }
                r->meta[r->n_meta].key = m->key;
                r->meta[r->n_meta].value = m->str;
                r->n_meta++;
            }
            continue;
        }
        tt_st_tensor *t = &r->t[r->n_tensors];
        if ((rc = parse_tensor(d, e, t, r->data_len, st))) goto out;
        r->by_name[r->n_tensors] = r->n_tensors;
        r->n_tensors++;
    }
    /* the data section must be tiled exactly: no gap, no overlap, nothing after */
    sort_idx(r->by_name, tmp, r->n_tensors, cmp_by_offset, r->t);
    uint64_t at = 0;
    for (int i = 0; i < r->n_tensors; i++) {
        const tt_st_tensor *t = &r->t[r->by_name[i]];
        if (t->begin < at) {
            rc = tt_fail(st, TT_EFORMAT, "safetensors: tensor '%.80s' overlaps another tensor (data_offsets [%llu, %llu])",
                         t->name, (unsigned long long)t->begin, (unsigned long long)t->end);
            goto out;
        }
        if (t->begin > at) {
            rc = tt_fail(st, TT_EFORMAT, "safetensors: data bytes [%llu, %llu) belong to no tensor", (unsigned long long)at,
                         (unsigned long long)t->begin);
            goto out;
        }
        at = t->end;
    }
    if (at != r->data_len) {
        rc = tt_fail(st, TT_EFORMAT, "safetensors: data section holds %llu bytes but the tensors cover %llu",
                     (unsigned long long)r->data_len, (unsigned long long)at);
        goto out;
    }
    sort_idx(r->by_name, tmp, r->n_tensors, cmp_by_name, r->t);
out:
    free(tmp);
    return rc;
}

static int check_prefix(tt_st_reader *r, const uint8_t *first8, uint64_t size, tt_status *st) {
    uint64_t n = rd_u64le(first8);
    if (n > TT_ST_MAX_HEADER)
        return tt_fail(st, TT_EFORMAT, "safetensors: header length %llu exceeds the limit of %llu bytes", (unsigned long long)n,
                       (unsigned long long)TT_ST_MAX_HEADER);
    if (n > size - 8)
        return tt_fail(st, TT_EFORMAT, "safetensors: header length %llu is larger than the file (%llu bytes)", (unsigned long long)n,
                       (unsigned long long)size);
    if (n < 2) return tt_fail(st, TT_EFORMAT, "safetensors: header length %llu is too small", (unsigned long long)n);
    r->header_len = n;
    r->data_start = 8 + n;
    r->data_len = size - 8 - n;
    r->file_size = size;
    return TT_OK;
}

int tt_st_open_mem(tt_st_reader *r, const uint8_t *buf, size_t len, tt_status *st) {
    memset(r, 0, sizeof *r);
    r->fd = -1;
    if (!buf || len < 8)
        return tt_fail(st, TT_EFORMAT, "safetensors: file too short (%zu bytes, need at least 8)", buf ? len : (size_t)0);
    r->mem = buf;
    int rc = check_prefix(r, buf, len, st);
    if (!rc) rc = parse_header(r, (const char *)buf + 8, (size_t)r->header_len, st);
    if (rc) tt_st_close(r);
    return rc;
}

static int pread_all(int fd, void *dst, size_t n, uint64_t off, size_t *got) {
    size_t done = 0;
    while (done < n) {
        ssize_t k = pread(fd, (char *)dst + done, n - done, (off_t)(off + done));
        if (k < 0) {
            if (errno == EINTR) continue;
            *got = done;
            return -1;
        }
        if (k == 0) break;
        done += (size_t)k;
    }
    *got = done;
    return 0;
}

int tt_st_open_file(tt_st_reader *r, const char *path, tt_status *st) {
    memset(r, 0, sizeof *r);
    r->fd = -1;
    int fd = -1;
    uint64_t size = 0;
    TT_CHECK(tt_open_regular(path, &fd, &size, st));
    r->fd = fd;
    uint8_t first[8];
    size_t got = 0;
    int rc;
    if (size < 8) {
        rc = tt_fail(st, TT_EFORMAT, "'%.300s': safetensors: file too short (%llu bytes, need at least 8)", path,
                     (unsigned long long)size);
        goto fail;
    }
    if (pread_all(fd, first, 8, 0, &got) || got != 8) {
        rc = tt_fail(st, TT_EIO, "cannot read '%.300s': %s", path, got != 8 ? "unexpected end of file" : strerror(errno));
        goto fail;
    }
    if ((rc = check_prefix(r, first, size, st))) goto fail;
    char *hdr = malloc((size_t)r->header_len);
    if (!hdr) {
        rc = tt_fail(st, TT_ENOMEM, "out of memory (safetensors header of %llu bytes)", (unsigned long long)r->header_len);
        goto fail;
    }
    if (pread_all(fd, hdr, (size_t)r->header_len, 8, &got) || got != r->header_len) {
        rc = tt_fail(st, TT_EIO, "cannot read '%.300s': %s", path, got != r->header_len ? "unexpected end of file" : strerror(errno));
        free(hdr);
        goto fail;
    }
    rc = parse_header(r, hdr, (size_t)r->header_len, st);
    free(hdr); /* the DOM holds its own copies */
    if (rc) goto fail;
    return TT_OK;
fail:
    tt_st_close(r);
    return rc;
}

void tt_st_close(tt_st_reader *r) {
    if (r->fd >= 0 && !r->mem) close(r->fd);
    tt_json_free(&r->doc);
    free(r->t);
    free(r->by_name);
    free(r->meta);
    memset(r, 0, sizeof *r);
    r->fd = -1;
}

const tt_st_tensor *tt_st_find(const tt_st_reader *r, const char *name) {
    int lo = 0, hi = r->n_tensors - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        const tt_st_tensor *t = &r->t[r->by_name[mid]];
        int c = strcmp(name, t->name);
        if (c == 0) return t;
        if (c < 0) hi = mid - 1;
        else lo = mid + 1;
    }
    return NULL;
}

const char *tt_st_meta_get(const tt_st_reader *r, const char *key) {
    for (int i = 0; i < r->n_meta; i++)
        if (strcmp(r->meta[i].key, key) == 0) return r->meta[i].value;
    return NULL;
}

/* IEEE half and bfloat16 to float, exactly (every value of both is a float) */
static float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1F, m = h & 0x3FF, u;
    if (e == 0x1F) u = sign | 0x7F800000u | (m << 13);           /* inf, nan */
    else if (e) u = sign | ((e + 112) << 23) | (m << 13);         /* normal */
    else if (!m) u = sign;                                        /* zero */
    else {                                                        /* subnormal: m * 2^-24 */
        float f = (float)m * 5.9604644775390625e-8f;
        return sign ? -f : f;
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static float bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

int tt_st_read_f32(const tt_st_reader *r, const tt_st_tensor *t, size_t off, size_t n, float *dst, tt_status *st) {
    if (t->dtype != TT_ST_F32 && t->dtype != TT_ST_F16 && t->dtype != TT_ST_BF16)
        return tt_fail(st, TT_EFORMAT, "safetensors: tensor '%.80s' is %s, not F32, F16 or BF16", t->name, tt_st_dtype_name(t->dtype));
    if (t->dtype == TT_ST_F32) return tt_st_read(r, t, (uint64_t)off * 4, dst, n * 4, st);
    unsigned char *raw = (unsigned char *)dst + 2 * n;
    TT_CHECK(tt_st_read(r, t, (uint64_t)off * 2, raw, n * 2, st));
    for (size_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, raw + 2 * i, 2);
        dst[i] = t->dtype == TT_ST_F16 ? f16_to_f32(h) : bf16_to_f32(h);
    }
    return TT_OK;
}

int tt_st_read(const tt_st_reader *r, const tt_st_tensor *t, uint64_t off, void *dst, size_t n, tt_status *st) {
    uint64_t span = t->end - t->begin;
    if (off > span || n > span - off)
        return tt_fail(st, TT_EINVAL, "safetensors: read of %zu bytes at %llu outside tensor '%.80s'", n, (unsigned long long)off, t->name);
    if (n == 0) return TT_OK;
    uint64_t at = r->data_start + t->begin + off;
    if (r->mem) {
        memcpy(dst, r->mem + at, n);
        return TT_OK;
    }
    size_t got = 0;
    if (pread_all(r->fd, dst, n, at, &got)) return tt_fail(st, TT_EIO, "read error: %s", strerror(errno));
    if (got != n) return tt_fail(st, TT_EIO, "safetensors: file shrank while reading tensor '%.80s'", t->name);
    return TT_OK;
}

/* ---------------- writer ---------------- */

void tt_st_writer_init(tt_st_writer *w, const char *what) {
    memset(w, 0, sizeof *w);
    tt_jw_init(&w->meta);
    tt_jw_init(&w->tensors);
    w->what = what ? what : "safetensors file";
}

void tt_st_writer_free(tt_st_writer *w) {
    tt_jw_free(&w->meta);
    tt_jw_free(&w->tensors);
}

int tt_st_writer_add(tt_st_writer *w, const char *name, tt_st_dtype dtype, int ndim, const int64_t *shape, tt_status *st) {
    if (!name || !*name || strcmp(name, "__metadata__") == 0) return tt_fail(st, TT_EINVAL, "safetensors writer: bad tensor name");
    if ((unsigned)dtype >= TT_ST_N_DTYPES) return tt_fail(st, TT_EINVAL, "safetensors writer: bad dtype");
    if (ndim < 0 || ndim > TT_ST_MAX_DIMS) return tt_fail(st, TT_EINVAL, "safetensors writer: bad ndim %d", ndim);
    uint64_t numel = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) return tt_fail(st, TT_EINVAL, "safetensors writer: negative dim");
        if (shape[i] && numel > UINT64_MAX / (uint64_t)shape[i]) return tt_fail(st, TT_EINVAL, "safetensors writer: size overflow");
        numel *= (uint64_t)shape[i];
    }
    size_t es = tt_st_dtype_size(dtype);
    if (numel > UINT64_MAX / es || numel * es > UINT64_MAX - w->total) return tt_fail(st, TT_EINVAL, "safetensors writer: size overflow");
    uint64_t bytes = numel * es;
    if (w->n_tensors) tt_jw_raw(&w->tensors, ",", 1);
    tt_jw_string(&w->tensors, name, strlen(name));
    tt_jw_printf(&w->tensors, ":{\"dtype\":\"%s\",\"shape\":[", tt_st_dtype_name(dtype));
    for (int i = 0; i < ndim; i++) tt_jw_printf(&w->tensors, i ? ",%lld" : "%lld", (long long)shape[i]);
    tt_jw_printf(&w->tensors, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)w->total, (unsigned long long)(w->total + bytes));
    w->total += bytes;
    w->n_tensors++;
    if (w->tensors.oom) return tt_fail(st, TT_ENOMEM, "out of memory (safetensors header)");
    return TT_OK;
}

int tt_st_writer_meta(tt_st_writer *w, const char *key, const char *value, tt_status *st) {
    if (w->n_meta) tt_jw_raw(&w->meta, ",", 1);
    tt_jw_string(&w->meta, key, strlen(key));
    tt_jw_raw(&w->meta, ":", 1);
    tt_jw_string(&w->meta, value, strlen(value));
    w->n_meta++;
    if (w->meta.oom) return tt_fail(st, TT_ENOMEM, "out of memory (safetensors metadata)");
    return TT_OK;
}

static int werr(tt_st_writer *w, tt_status *st) {
    int e = errno;
    return tt_fail(st, TT_EIO, "cannot write '%.300s': %s", w->what, e ? strerror(e) : "write error");
}

int tt_st_writer_begin(tt_st_writer *w, FILE *f, tt_status *st) {
    tt_jw h;
    tt_jw_init(&h);
    tt_jw_raw(&h, "{", 1);
    if (w->n_meta) {
        tt_jw_cstr(&h, "\"__metadata__\":{");
        tt_jw_raw(&h, w->meta.buf, w->meta.len);
        tt_jw_raw(&h, "}", 1);
        if (w->n_tensors) tt_jw_raw(&h, ",", 1);
    }
    if (w->n_tensors) tt_jw_raw(&h, w->tensors.buf, w->tensors.len);
    tt_jw_raw(&h, "}", 1);
    while ((8 + h.len) % 8) tt_jw_raw(&h, " ", 1);
    if (h.oom) {
        tt_jw_free(&h);
        return tt_fail(st, TT_ENOMEM, "out of memory (safetensors header)");
    }
    if (h.len > TT_ST_MAX_HEADER) {
        size_t n = h.len;
        tt_jw_free(&h);
        return tt_fail(st, TT_EINVAL, "safetensors header of %zu bytes exceeds the %llu byte limit (history too long?)", n,
                       (unsigned long long)TT_ST_MAX_HEADER);
    }
    uint8_t pre[8];
    uint64_t n = h.len;
    for (int i = 0; i < 8; i++) pre[i] = (uint8_t)(n >> (8 * i));
    w->f = f;
    errno = 0;
    int ok = fwrite(pre, 1, 8, f) == 8 && fwrite(h.buf, 1, h.len, f) == h.len;
    tt_jw_free(&h);
    if (!ok) return werr(w, st);
    return TT_OK;
}

int tt_st_writer_data(tt_st_writer *w, const void *bytes, size_t n, tt_status *st) {
    if (!w->f) return tt_fail(st, TT_EINVAL, "safetensors writer: data before begin");
    if (n > w->total - w->written) return tt_fail(st, TT_EINVAL, "safetensors writer: more data than declared");
    if (n == 0) return TT_OK;
    errno = 0;
    if (fwrite(bytes, 1, n, w->f) != n) return werr(w, st);
    w->written += n;
    return TT_OK;
}

int tt_st_writer_end(tt_st_writer *w, tt_status *st) {
    if (!w->f) return tt_fail(st, TT_EINVAL, "safetensors writer: end before begin");
    if (w->written != w->total)
        return tt_fail(st, TT_EINVAL, "safetensors writer: %llu of %llu data bytes written", (unsigned long long)w->written,
                       (unsigned long long)w->total);
    errno = 0;
    if (fflush(w->f) != 0 || ferror(w->f)) return werr(w, st);
    return TT_OK;
}
