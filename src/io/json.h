/* json.h — a small, strict, bounds-checked JSON (RFC 8259) reader and a
 * writer helper. Owns: the pull reader, the DOM built on it, strict number
 * conversion, and the growable output buffer used to write JSON.
 *
 * Strictness (everything else is an error with a one-line message that names
 * the byte offset):
 *   - exactly one value, surrounded only by JSON whitespace (space, tab, CR, LF);
 *   - no trailing commas, no comments, no NaN/Infinity literals, no BOM;
 *   - strings: valid UTF-8 (no overlongs, no surrogates), no raw control
 *     characters, only the standard escapes, \u surrogate pairs must pair up,
 *     and \u0000 is rejected (decoded strings are NUL-terminated C strings);
 *   - numbers follow the JSON grammar exactly; a number longer than
 *     TT_JSON_MAX_NUMBER characters is rejected;
 *   - nesting deeper than TT_JSON_MAX_DEPTH is rejected;
 *   - DOM: duplicate keys in one object are rejected; the caller passes a
 *     maximum node count so hostile input cannot make the DOM huge.
 * The reader never reads outside [buf, buf + len) and needs no NUL terminator.
 *
 * Numbers are converted with strtod in the C locale (tinytrain never calls
 * setlocale; a non-'.' decimal point would make conversion fail, not misparse). */
#ifndef TT_JSON_H
#define TT_JSON_H

#include "tt.h"

#define TT_JSON_MAX_DEPTH 64
#define TT_JSON_MAX_NUMBER 400

typedef enum {
    TT_JSON_ERROR = -1,
    TT_JSON_END = 0,     /* the whole document was read */
    TT_JSON_OBJ_BEGIN,
    TT_JSON_OBJ_END,
    TT_JSON_ARR_BEGIN,
    TT_JSON_ARR_END,
    TT_JSON_KEY,         /* tok = raw (still escaped) key text, without quotes */
    TT_JSON_STRING,      /* tok = raw (still escaped) string text, without quotes */
    TT_JSON_NUMBER,      /* tok = number text (grammar already checked) */
    TT_JSON_TRUE,
    TT_JSON_FALSE,
    TT_JSON_NULL
} tt_json_event;

/* ---- pull reader ---- */
typedef struct {
    const char *buf;
    size_t len, pos;
    int depth;
    uint8_t kind[TT_JSON_MAX_DEPTH];  /* 'a' array / 'o' object per open level */
    int need;                         /* internal: what may come next */
    const char *tok;                  /* current token text (into buf) */
    size_t tok_len;
    size_t tok_decoded_len;           /* KEY/STRING: length after unescaping */
    int done;
} tt_json_reader;

void tt_json_reader_init(tt_json_reader *r, const char *buf, size_t len);
/* Next event; TT_JSON_ERROR sets st. After TT_JSON_END or an error, keeps
 * returning the same. */
tt_json_event tt_json_next(tt_json_reader *r, tt_status *st);
/* Unescape a KEY/STRING token (already validated by the reader) into out,
 * which must hold tok_decoded_len + 1 bytes; NUL-terminates. */
void tt_json_unescape(const char *raw, size_t raw_len, char *out);

/* ---- DOM ---- */
typedef enum {
    TT_JNULL = 0, TT_JFALSE, TT_JTRUE, TT_JNUMBER, TT_JSTRING, TT_JARRAY, TT_JOBJECT
} tt_json_type;

#define TT_JSON_NONE ((size_t)-1)

typedef struct {
    tt_json_type type;
    const char *key;   /* object member: decoded key (NUL-terminated); else NULL */
    size_t key_len;
    const char *str;   /* STRING: decoded text; NUMBER: number text; NUL-terminated */
    size_t len;
    size_t child;      /* ARRAY/OBJECT: index of the first child or TT_JSON_NONE */
    size_t count;      /* ARRAY/OBJECT: number of children */
    size_t next;       /* index of the next sibling or TT_JSON_NONE */
} tt_json_node;

typedef struct {
    tt_json_node *nodes; /* nodes[0] is the root */
    size_t n, cap;
    char *arena;         /* all decoded strings and number texts */
} tt_json_doc;

/* Parse buf[0..len) into doc (which owns copies of everything it needs; buf
 * may be freed afterwards). At most max_nodes values. On error doc is empty. */
int tt_json_parse(const char *buf, size_t len, size_t max_nodes, tt_json_doc *doc, tt_status *st);
void tt_json_free(tt_json_doc *doc);
static inline const tt_json_node *tt_json_root(const tt_json_doc *d) { return d->n ? &d->nodes[0] : NULL; }
/* First child / next sibling, NULL at the end. */
const tt_json_node *tt_json_first(const tt_json_doc *d, const tt_json_node *container);
const tt_json_node *tt_json_sibling(const tt_json_doc *d, const tt_json_node *n);
/* Object member by key (linear), NULL if absent or obj is not an object. */
const tt_json_node *tt_json_get(const tt_json_doc *d, const tt_json_node *obj, const char *key);

/* ---- strict number conversion (text need not be NUL-terminated) ----
 * i64/u64: JSON integer grammar only (-?(0|[1-9][0-9]*)), no fraction or
 * exponent, range-checked. f64: full JSON number grammar, finite result.
 * f32_text additionally accepts exactly "nan", "inf", "-inf" (how tinytrain
 * writes non-finite values) and rejects values outside float range. */
int tt_json_parse_i64(const char *s, size_t n, int64_t *out);
int tt_json_parse_u64(const char *s, size_t n, uint64_t *out);
int tt_json_parse_f64(const char *s, size_t n, double *out);
int tt_json_parse_f32_text(const char *s, size_t n, float *out);
/* Node helpers: 0 on success, non-zero if the node is absent / of the wrong type / out of range. */
int tt_json_get_i64(const tt_json_node *n, int64_t *out);
int tt_json_get_u64(const tt_json_node *n, uint64_t *out);
int tt_json_get_f64(const tt_json_node *n, double *out);

/* ---- writer: a growable NUL-terminated buffer; errors are sticky ---- */
typedef struct {
    char *buf;
    size_t len, cap;
    int oom;   /* an allocation failed: content is incomplete */
} tt_jw;

void tt_jw_init(tt_jw *w);
void tt_jw_free(tt_jw *w);
void tt_jw_raw(tt_jw *w, const char *s, size_t n);
void tt_jw_cstr(tt_jw *w, const char *s);                 /* raw, no escaping */
void tt_jw_printf(tt_jw *w, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void tt_jw_string(tt_jw *w, const char *s, size_t n);      /* quoted + escaped */
/* A float that round-trips exactly: %.9g; non-finite as "nan"/"inf"/"-inf" (quoted). */
void tt_jw_f32(tt_jw *w, float x);
/* Format a float as %.9g (non-finite: nan/inf/-inf, unquoted) into buf[32]. */
const char *tt_json_fmt_f32(char buf[32], float x);

#endif
