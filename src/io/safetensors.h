/* safetensors.h — generic, validating reader and streaming writer of the
 * .safetensors format (https://github.com/huggingface/safetensors):
 *
 *   [u64 little-endian N][N bytes of JSON header][data section]
 *
 * The header is a JSON object: "__metadata__" (optional) maps strings to
 * strings; every other key is a tensor name mapping to
 *   {"dtype": "F32", "shape": [d0, d1, ...], "data_offsets": [begin, end]}
 * with offsets in bytes relative to the start of the data section.
 *
 * What the reader accepts (anything else is TT_EFORMAT with a one-line message):
 *   - the file holds at least 8 bytes; 2 <= N <= TT_ST_MAX_HEADER (100,000,000
 *     bytes, the limit of the reference implementation) and 8 + N <= file size;
 *   - the header starts with '{' and is one strict JSON object (json.h rules;
 *     at most TT_ST_MAX_NODES (2^20) JSON values, i.e. at most ~64 MB of DOM
 *     for any header; trailing spaces — the reference
 *     writer's alignment padding — are fine);
 *   - tensor entries have exactly the keys dtype, shape, data_offsets; dtype is
 *     one of the names below; shape has at most TT_ST_MAX_DIMS non-negative
 *     integer dims; data_offsets are two unsigned integers begin <= end;
 *   - numel * dtype size == end - begin, computed without overflow;
 *   - names are unique (duplicate JSON keys are rejected) and non-empty;
 *   - the data section is covered EXACTLY: sorted by offset, the tensors tile
 *     [0, data_len) with no gap and no overlap, data_len = file size - 8 - N
 *     (the reference implementation's rule). So every byte range handed out
 *     is in bounds and a truncated or padded file is an error.
 *   - "__metadata__", when present, is an object whose values are all strings.
 * Sub-byte dtypes (F4, F6_*) are not supported and are reported as unknown.
 *
 * The writer pads the header with spaces so the data section starts at a
 * multiple of 8 bytes, and streams tensor bytes given in declaration order. */
#ifndef TT_SAFETENSORS_H
#define TT_SAFETENSORS_H

#include <stdio.h>

#include "json.h"

#define TT_ST_MAX_HEADER 100000000ull
#define TT_ST_MAX_DIMS 8
#define TT_ST_MAX_NODES ((size_t)1 << 20)

typedef enum {
    TT_ST_BOOL = 0, TT_ST_U8, TT_ST_I8, TT_ST_F8_E5M2, TT_ST_F8_E4M3, TT_ST_I16, TT_ST_U16,
    TT_ST_F16, TT_ST_BF16, TT_ST_I32, TT_ST_U32, TT_ST_F32, TT_ST_F64, TT_ST_I64, TT_ST_U64,
    TT_ST_C64,
    TT_ST_N_DTYPES
} tt_st_dtype;

const char *tt_st_dtype_name(tt_st_dtype d);
size_t tt_st_dtype_size(tt_st_dtype d);
/* 0 and *d set if name is a known dtype, else non-zero. */
int tt_st_dtype_parse(const char *name, tt_st_dtype *d);

typedef struct {
    const char *name;       /* points into the parsed header */
    tt_st_dtype dtype;
    int ndim;
    int64_t shape[TT_ST_MAX_DIMS];
    uint64_t numel;
    uint64_t begin, end;    /* byte range relative to the data section */
} tt_st_tensor;

typedef struct {
    const char *key, *value;
} tt_st_meta;

typedef struct {
    /* source: memory (mem != NULL) or an open file descriptor */
    const uint8_t *mem;
    int fd;
    uint64_t file_size;
    uint64_t header_len;    /* N */
    uint64_t data_start;    /* 8 + N: absolute offset of the data section */
    uint64_t data_len;
    tt_json_doc doc;        /* owns every string below */
    tt_st_tensor *t;        /* n_tensors, in header order */
    int n_tensors;
    int *by_name;           /* indices into t sorted by name (for tt_st_find) */
    tt_st_meta *meta;
    int n_meta;
    int has_metadata;       /* "__metadata__" was present */
} tt_st_reader;

/* Validate and index a file held in memory (buf must outlive the reader). */
int tt_st_open_mem(tt_st_reader *r, const uint8_t *buf, size_t len, tt_status *st);
/* Open and validate a file; reads only the header into memory. */
int tt_st_open_file(tt_st_reader *r, const char *path, tt_status *st);
void tt_st_close(tt_st_reader *r);

const tt_st_tensor *tt_st_find(const tt_st_reader *r, const char *name);
/* Metadata value or NULL. */
const char *tt_st_meta_get(const tt_st_reader *r, const char *key);
/* Copy bytes [off, off + n) of tensor t's data into dst (bounds checked). */
int tt_st_read(const tt_st_reader *r, const tt_st_tensor *t, uint64_t off, void *dst, size_t n, tt_status *st);
/* n elements of tensor t from element off, as floats: F32 as stored, F16 and
 * BF16 widened (exact); any other dtype is TT_EFORMAT. A 16-bit tensor is
 * read into the upper half of dst and widened in place, ascending (element
 * i's float never reaches the 16-bit values after it). */
int tt_st_read_f32(const tt_st_reader *r, const tt_st_tensor *t, size_t off, size_t n, float *dst, tt_status *st);

/* ---- streaming writer ----
 *   tt_st_writer w; tt_st_writer_init(&w);
 *   tt_st_writer_add(&w, name, dtype, ndim, shape, st);  ... (declaration order = data order)
 *   tt_st_writer_meta(&w, key, value, st); ...
 *   tt_st_writer_begin(&w, f, st);          writes length + header
 *   tt_st_writer_data(&w, bytes, n, st); ... exactly the declared bytes, in order
 *   tt_st_writer_end(&w, st);               checks the byte count, fflush
 *   tt_st_writer_free(&w);
 * Every fwrite/fflush result is checked; errors name errno's text. */
typedef struct {
    tt_jw meta;          /* "key":"value" pairs, comma separated */
    tt_jw tensors;       /* "name":{...} entries, comma separated */
    int n_meta, n_tensors;
    uint64_t total;      /* data bytes declared */
    uint64_t written;    /* data bytes written so far */
    FILE *f;
    const char *what;    /* name used in error messages (e.g. the path) */
} tt_st_writer;

void tt_st_writer_init(tt_st_writer *w, const char *what);
int tt_st_writer_add(tt_st_writer *w, const char *name, tt_st_dtype dtype, int ndim, const int64_t *shape, tt_status *st);
int tt_st_writer_meta(tt_st_writer *w, const char *key, const char *value, tt_status *st);
int tt_st_writer_begin(tt_st_writer *w, FILE *f, tt_status *st);
int tt_st_writer_data(tt_st_writer *w, const void *bytes, size_t n, tt_status *st);
int tt_st_writer_end(tt_st_writer *w, tt_status *st);
void tt_st_writer_free(tt_st_writer *w);

/* 1 on a little-endian host (the format's byte order; the only kind supported). */
int tt_host_is_little_endian(void);

#endif
