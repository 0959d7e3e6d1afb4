/* test_checkpoint.c — JSON reader/writer, safetensors reader/writer,
 * checkpoint save/load/export: exact round trips, Hugging Face names and
 * shapes, every class of malformed input (each must give a non-zero status,
 * a one-line message naming the problem, an empty state and no crash),
 * random bytes and random mutations, and atomic saves (a failed save never
 * touches the previous file). Runs in CI and under ASan/UBSan. */
#define _GNU_SOURCE
#include <errno.h>
#include <float.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "train/checkpoint.h"
#include "io/json.h"
#include "rng.h"
#include "io/safetensors.h"
#include "train/train.h"
#include "tt_test.h"

/* ------------------------------------------------------------ helpers */

static const tt_model_config small_cfg = {2, 8, 2, 8, 4, TT_VOCAB, 0, 0, 0.0f, 0, 0.0f};

static uint32_t rnd32(uint64_t seed, uint64_t i) { return (uint32_t)tt_rand_u64(seed, TT_STREAM_TEST, i); }

/* A random finite float with any exponent (random bit pattern). */
static float rnd_float_bits(uint64_t seed, uint64_t i) {
    for (uint64_t k = 0;; k++) {
        uint32_t b = rnd32(seed, i * 8 + k);
        float f;
        memcpy(&f, &b, 4);
        if (isfinite(f)) return f;
    }
}

static int one_line(const char *m) {
    if (!m || !m[0]) return 0;
    for (const char *p = m; *p; p++)
        if ((unsigned char)*p < 0x20) return 0;
    return 1;
}

static int state_is_empty(const tt_train_state *s) {
    return !s->params && !s->m && !s->v && !s->loss_hist && !s->val_step && !s->val_loss && !s->layout.t && s->step == 0;
}

/* A state with made-up moments and histories. */
static void make_state(tt_train_state *s, int64_t steps_done, uint64_t salt) {
    tt_train_config tc;
    tt_train_config_default(&tc, 1000);
    tc.lr = 3.14159e-4f;
    tc.min_lr = 1.7e-5f;
    tc.sched = TT_SCHED_CONSTANT;
    tc.seed = 0xDEADBEEFCAFEBABEull ^ salt;
    tc.warmup = 37;
    tc.beta2 = 0.999f;
    tc.eps = 1e-7f;
    tc.weight_decay = 0.05f;
    tc.clip = 0.5f;
    tc.accum = 3;
    tc.eval_every = 10;
    tc.eval_batches = 5;
    tt_status st = {0};
    int rc = tt_state_init(s, &small_cfg, &tc, &st);
    CHECK_MSG(rc == 0, "%s", st.msg);
    if (rc) return;
    size_t n = s->layout.total;
    tt_test_fill(s->m, n, 11 + salt, -1.0f, 1.0f);
    tt_test_fill(s->v, n, 12 + salt, 1e-9f, 1e-3f);
    for (size_t i = 0; i < n; i += 97) s->params[i] = rnd_float_bits(13 + salt, i); /* extreme values too */
    for (int64_t i = 0; i < steps_done; i++) {
        s->step = i + 1;
        CHECK(tt_state_push_loss(s, i % 5 == 4 ? rnd_float_bits(14 + salt, (uint64_t)i) : 6.0f * tt_rand_uniform(15 + salt, TT_STREAM_TEST, (uint64_t)i), &st) == 0);
        if (s->step % 10 == 0) CHECK(tt_state_push_val(s, s->step, 5.0f - 0.01f * (float)i + tt_rand_uniform(16, TT_STREAM_TEST, (uint64_t)i), &st) == 0);
    }
    s->corpus_hash = 0xFEDCBA9876543210ull ^ salt;
    s->corpus_bytes = 123456789012ull + salt;
}

static int feq(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

static void check_states_equal(const tt_train_state *a, const tt_train_state *b) {
    CHECK(memcmp(&a->cfg, &b->cfg, sizeof a->cfg) == 0);
    const tt_train_config *x = &a->tc, *y = &b->tc;
    CHECK(x->steps == y->steps && x->warmup == y->warmup && x->sched == y->sched && x->accum == y->accum);
    CHECK(x->seed == y->seed && x->eval_every == y->eval_every && x->eval_batches == y->eval_batches);
    CHECK(feq(x->lr, y->lr) && feq(x->min_lr, y->min_lr) && feq(x->beta1, y->beta1) && feq(x->beta2, y->beta2));
    CHECK(feq(x->eps, y->eps) && feq(x->weight_decay, y->weight_decay) && feq(x->clip, y->clip));
    CHECK(a->layout.total == b->layout.total);
    if (a->layout.total != b->layout.total || !a->params || !b->params) return;
    size_t bytes = a->layout.total * sizeof(float);
    CHECK(memcmp(a->params, b->params, bytes) == 0);
    CHECK(memcmp(a->m, b->m, bytes) == 0);
    CHECK(memcmp(a->v, b->v, bytes) == 0);
    CHECK(a->step == b->step);
    if (a->step == b->step && a->step > 0) CHECK(memcmp(a->loss_hist, b->loss_hist, (size_t)a->step * sizeof(float)) == 0);
    CHECK(a->n_val == b->n_val);
    if (a->n_val == b->n_val && a->n_val > 0) {
        CHECK(memcmp(a->val_step, b->val_step, (size_t)a->n_val * sizeof(int64_t)) == 0);
        CHECK(memcmp(a->val_loss, b->val_loss, (size_t)a->n_val * sizeof(float)) == 0);
    }
    CHECK(feq(a->best_val, b->best_val));
    CHECK(a->best_val_step == b->best_val_step);
    CHECK(a->target_step == b->target_step && feq(a->target_val, b->target_val) && a->target_s == b->target_s);
    CHECK(a->corpus_hash == b->corpus_hash && a->corpus_bytes == b->corpus_bytes);
}

static uint8_t *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(n > 0 ? (size_t)n : 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return b;
}

static int write_all(const char *path, const void *b, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return 1;
    int ok = fwrite(b, 1, n, f) == n;
    return fclose(f) != 0 || !ok;
}

static char g_dir[4096];
static const char *tpath(const char *name) {
    static char buf[4][4352];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", g_dir, name);
    return buf[k];
}

/* A valid small checkpoint in memory (saved through the real save path). */
static uint8_t *valid_ckpt(size_t *len, tt_train_state *keep) {
    tt_train_state s;
    make_state(&s, 37, 0);
    tt_status st = {0};
    const char *p = tpath("valid.safetensors");
    int rc = tt_checkpoint_save(p, &s, &st);
    CHECK_MSG(rc == 0, "%s", st.msg);
    if (keep) *keep = s;
    else tt_state_free(&s);
    return read_all(p, len);
}

static uint64_t hdr_len(const uint8_t *b) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | b[i];
    return v;
}

static uint8_t *with_header(const char *hdr, size_t hn, const uint8_t *data, size_t dn, size_t *out_len) {
    uint8_t *b = malloc(8 + hn + dn + 1);
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)((uint64_t)hn >> (8 * i));
    memcpy(b + 8, hdr, hn);
    if (dn) memcpy(b + 8 + hn, data, dn);
    *out_len = 8 + hn + dn;
    return b;
}

/* Replace the first occurrence of `from` in the header of a file by `to`. NULL if absent. */
static uint8_t *edit_header(const uint8_t *buf, size_t len, const char *from, const char *to, size_t *out_len) {
    size_t hn = (size_t)hdr_len(buf);
    const char *h = (const char *)buf + 8;
    const char *at = memmem(h, hn, from, strlen(from));
    CHECK_MSG(at != NULL, "test bug: '%s' not in header", from);
    if (!at) return NULL;
    size_t nn = hn - strlen(from) + strlen(to);
    char *nh = malloc(nn + 1);
    size_t pre = (size_t)(at - h);
    memcpy(nh, h, pre);
    memcpy(nh + pre, to, strlen(to));
    memcpy(nh + pre + strlen(to), at + strlen(from), hn - pre - strlen(from));
    uint8_t *r = with_header(nh, nn, buf + 8 + hn, len - 8 - hn, out_len);
    free(nh);
    return r;
}

/* Rewrite a valid checkpoint through the generic reader/writer with one change. */
typedef struct {
    const char *skip;         /* drop this tensor */
    const char *extra;        /* add an F32 (2) tensor of this name */
    const char *f16;          /* declare this tensor F16 (last dim doubled: same bytes) */
    const char *reshape;      /* give this tensor shape (s0, s1) (same numel) */
    int64_t s0, s1;
    const char *meta_key;     /* set (or with meta_val NULL: remove) a metadata key */
    const char *meta_val;
} mods;

static uint8_t *rewrite(const uint8_t *buf, size_t len, const mods *m, size_t *out_len) {
    tt_st_reader r;
    tt_status st = {0};
    int rc = tt_st_open_mem(&r, buf, len, &st);
    CHECK_MSG(rc == 0, "%s", st.msg);
    if (rc) return NULL;
    tt_st_writer w;
    tt_st_writer_init(&w, "memory");
    int meta_done = 0;
    for (int i = 0; i < r.n_meta; i++) {
        if (m->meta_key && strcmp(r.meta[i].key, m->meta_key) == 0) {
            meta_done = 1;
            if (m->meta_val) CHECK(tt_st_writer_meta(&w, m->meta_key, m->meta_val, &st) == 0);
            continue;
        }
        CHECK(tt_st_writer_meta(&w, r.meta[i].key, r.meta[i].value, &st) == 0);
    }
    if (m->meta_key && !meta_done && m->meta_val) CHECK(tt_st_writer_meta(&w, m->meta_key, m->meta_val, &st) == 0);
    for (int i = 0; i < r.n_tensors; i++) {
        const tt_st_tensor *t = &r.t[i];
        if (m->skip && strcmp(t->name, m->skip) == 0) continue;
        int64_t shp[TT_ST_MAX_DIMS];
        memcpy(shp, t->shape, sizeof shp);
        tt_st_dtype dt = t->dtype;
        int nd = t->ndim;
        if (m->f16 && strcmp(t->name, m->f16) == 0) {
            dt = TT_ST_F16;
            shp[nd - 1] *= 2;
        }
        if (m->reshape && strcmp(t->name, m->reshape) == 0) {
            nd = 2;
            shp[0] = m->s0;
            shp[1] = m->s1;
        }
        CHECK(tt_st_writer_add(&w, t->name, dt, nd, shp, &st) == 0);
    }
    int64_t two = 2;
    if (m->extra) CHECK(tt_st_writer_add(&w, m->extra, TT_ST_F32, 1, &two, &st) == 0);
    char *mb = NULL;
    size_t ml = 0;
    FILE *f = open_memstream(&mb, &ml);
    CHECK(tt_st_writer_begin(&w, f, &st) == 0);
    for (int i = 0; i < r.n_tensors; i++) {
        const tt_st_tensor *t = &r.t[i];
        if (m->skip && strcmp(t->name, m->skip) == 0) continue;
        size_t n = (size_t)(t->end - t->begin);
        void *tmp = malloc(n ? n : 1);
        CHECK(tt_st_read(&r, t, 0, tmp, n, &st) == 0);
        CHECK(tt_st_writer_data(&w, tmp, n, &st) == 0);
        free(tmp);
    }
    float xx[2] = {1.0f, 2.0f};
    if (m->extra) CHECK(tt_st_writer_data(&w, xx, sizeof xx, &st) == 0);
    CHECK_MSG(tt_st_writer_end(&w, &st) == 0, "%s", st.msg);
    fclose(f);
    tt_st_writer_free(&w);
    tt_st_close(&r);
    *out_len = ml;
    return (uint8_t *)mb;
}

/* Load must fail with a one-line message containing `kw` and leave the state empty. */
static void expect_fail_(const uint8_t *b, size_t n, const char *kw, const char *what, int line) {
    tt_train_state s;
    memset(&s, 0x5a, sizeof s); /* garbage in: must come back empty */
    tt_status st = {0};
    int rc = tt_checkpoint_load_mem(b, n, &s, &st);
    if (rc == 0) {
        fprintf(stderr, "line %d: %s: loaded although it should fail\n", line, what);
        tt_test_failed_checks++;
        tt_state_free(&s);
        return;
    }
    CHECK_MSG(rc == st.code, "line %d: %s", line, what);
    CHECK_MSG(one_line(st.msg), "line %d: %s: message not one line: '%s'", line, what, st.msg);
    CHECK_MSG(!kw || strstr(st.msg, kw), "line %d: %s: message '%s' lacks '%s'", line, what, st.msg, kw);
    CHECK_MSG(state_is_empty(&s), "line %d: %s: state not empty", line, what);
}
#define expect_fail(b, n, kw, what) expect_fail_(b, n, kw, what, __LINE__)

static void expect_load_(const uint8_t *b, size_t n, const char *what, int line) {
    tt_train_state s;
    tt_status st = {0};
    int rc = tt_checkpoint_load_mem(b, n, &s, &st);
    CHECK_MSG(rc == 0, "line %d: %s: %s", line, what, st.msg);
    if (!rc) tt_state_free(&s);
}
#define expect_load(b, n, what) expect_load_(b, n, what, __LINE__)

/* ------------------------------------------------------------ JSON */

static int parses(const char *s) {
    tt_json_doc d;
    tt_status st = {0};
    int rc = tt_json_parse(s, strlen(s), 1000, &d, &st);
    if (rc == 0) tt_json_free(&d);
    else if (!one_line(st.msg)) return -1;
    return rc == 0;
}

TT_TEST(json_strict) {
    const char *good[] = {"{}", "[]", "0", "-0", "1.5e-3", "-12.25E+2", "\"x\"", "true", " \t\r\n{\"a\" : [1, 2, {\"b\": null}]} \n",
                          "\"\\u00e9\\ud83d\\ude00\\n\\/\"", "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"", "[false,true,null]"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) CHECK_MSG(parses(good[i]) == 1, "should parse: %s", good[i]);
    const char *bad[] = {"",          " ",           "[1,]",        "{\"a\":1,}", "01",          "1.",           ".5",
                         "-",         "+1",          "1e",          "NaN",        "Infinity",    "[1 2]",        "{\"a\" 1}",
                         "{a:1}",     "\"abc",       "\"\\x\"",     "\"\\ud800\"", "\"\\udc00\"", "\"\\ud800\\u0041\"", "\"\\u0000\"",
                         "\"\\u12\"", "\"a\tb\"",    "\"\xc0\x80\"", "\"\xed\xa0\x80\"", "\"\xf5\x80\x80\x80\"", "\"\xe2\x82\"",
                         "[1]x",      "{} {}",       "// c\n1",     "{\"a\":1,\"a\":2}", "[tru]",  "nul", "\xef\xbb\xbf{}", "'a'",
                         "{\"a\":1 \"b\":2}", "[1,2]]", "[[1,2]", "{\"a\"}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) CHECK_MSG(parses(bad[i]) == 0, "should fail cleanly: %s", bad[i]);
    /* depth limit: exactly TT_JSON_MAX_DEPTH nested arrays is fine, one more is not */
    char deep[2 * TT_JSON_MAX_DEPTH + 8];
    for (int extra = 0; extra < 2; extra++) {
        int d = TT_JSON_MAX_DEPTH + extra, k = 0;
        for (int i = 0; i < d; i++) deep[k++] = '[';
        for (int i = 0; i < d; i++) deep[k++] = ']';
        deep[k] = 0;
        CHECK(parses(deep) == !extra);
    }
    /* decoding, DOM navigation, node limit */
    tt_json_doc d;
    tt_status st = {0};
    const char *doc = "{\"k\\\"ey\":\"\\u00e9\\ud83d\\ude00\\t\",\"n\":[1,-2,3.5],\"e\":{}}";
    CHECK(tt_json_parse(doc, strlen(doc), 100, &d, &st) == 0);
    const tt_json_node *root = tt_json_root(&d);
    const tt_json_node *k = tt_json_get(&d, root, "k\"ey");
    CHECK(k && k->type == TT_JSTRING && strcmp(k->str, "\xc3\xa9\xf0\x9f\x98\x80\t") == 0 && k->len == 7);
    const tt_json_node *n = tt_json_get(&d, root, "n");
    CHECK(n && n->type == TT_JARRAY && n->count == 3);
    int64_t iv = 0;
    double dv = 0;
    const tt_json_node *c0 = tt_json_first(&d, n), *c1 = tt_json_sibling(&d, c0), *c2 = tt_json_sibling(&d, c1);
    CHECK(tt_json_get_i64(c0, &iv) == 0 && iv == 1);
    CHECK(tt_json_get_i64(c1, &iv) == 0 && iv == -2);
    CHECK(tt_json_get_i64(c2, &iv) != 0 && tt_json_get_f64(c2, &dv) == 0 && dv == 3.5);
    CHECK(tt_json_sibling(&d, c2) == NULL);
    CHECK(tt_json_get(&d, root, "e")->count == 0 && tt_json_get(&d, root, "zz") == NULL);
    tt_json_free(&d);
    CHECK(tt_json_parse("[1,2,3]", 7, 3, &d, &st) != 0 && one_line(st.msg));
    CHECK(tt_json_parse("[1,2,3]", 7, 4, &d, &st) == 0);
    tt_json_free(&d);
}

TT_TEST(json_numbers) {
    int64_t i;
    uint64_t u;
    float f;
    double d;
    CHECK(tt_json_parse_i64("9223372036854775807", 19, &i) == 0 && i == INT64_MAX);
    CHECK(tt_json_parse_i64("-9223372036854775808", 20, &i) == 0 && i == INT64_MIN);
    CHECK(tt_json_parse_i64("9223372036854775808", 19, &i) != 0);
    CHECK(tt_json_parse_i64("-9223372036854775809", 20, &i) != 0);
    CHECK(tt_json_parse_u64("18446744073709551615", 20, &u) == 0 && u == UINT64_MAX);
    CHECK(tt_json_parse_u64("18446744073709551616", 20, &u) != 0);
    CHECK(tt_json_parse_u64("99999999999999999999", 20, &u) != 0);
    const char *badint[] = {"", "-", "01", "1.0", "1e3", " 1", "1 ", "+1", "0x10", "abc", "12a", "--1"};
    for (size_t k = 0; k < sizeof badint / sizeof badint[0]; k++) {
        CHECK_MSG(tt_json_parse_i64(badint[k], strlen(badint[k]), &i) != 0, "%s", badint[k]);
        CHECK_MSG(tt_json_parse_u64(badint[k], strlen(badint[k]), &u) != 0, "%s", badint[k]);
    }
    CHECK(tt_json_parse_u64("-1", 2, &u) != 0);
    CHECK(tt_json_parse_f32_text("3.40282347e+38", 14, &f) == 0 && f == FLT_MAX);
    CHECK(tt_json_parse_f32_text("3.5e38", 6, &f) != 0);
    CHECK(tt_json_parse_f32_text("1e-50", 5, &f) == 0 && f == 0.0f);
    CHECK(tt_json_parse_f32_text("-0", 2, &f) == 0 && f == 0.0f && signbit(f));
    CHECK(tt_json_parse_f32_text("nan", 3, &f) == 0 && isnan(f));
    CHECK(tt_json_parse_f32_text("-inf", 4, &f) == 0 && isinf(f) && f < 0);
    CHECK(tt_json_parse_f32_text("NaN", 3, &f) != 0 && tt_json_parse_f32_text("1.5 ", 4, &f) != 0);
    CHECK(tt_json_parse_f64("1e400", 5, &d) != 0 && tt_json_parse_f64("0x1p3", 5, &d) != 0);
    /* "1.5" inside a longer buffer: only n bytes are looked at */
    CHECK(tt_json_parse_f64("1.5999", 3, &d) == 0 && d == 1.5);
    /* %.9g round trip of 200k random finite floats, all exponents */
    char buf[32];
    int bad = 0;
    for (uint64_t k = 0; k < 200000; k++) {
        float x = rnd_float_bits(77, k), y = 0;
        tt_json_fmt_f32(buf, x);
        if (tt_json_parse_f32_text(buf, strlen(buf), &y) != 0 || !feq(x, y)) bad++;
    }
    CHECK_MSG(bad == 0, "%d floats did not round-trip", bad);
}

TT_TEST(json_writer) {
    /* every byte 1..255 that is valid as a string (ASCII + a few UTF-8 sequences) survives escaping */
    char src[200];
    size_t n = 0;
    for (int c = 1; c < 128; c++) src[n++] = (char)c;
    const char *u = "\xc3\xa9\xf0\x9f\x98\x80";
    memcpy(src + n, u, strlen(u));
    n += strlen(u);
    tt_jw w;
    tt_jw_init(&w);
    tt_jw_cstr(&w, "{\"s\":");
    tt_jw_string(&w, src, n);
    tt_jw_cstr(&w, ",\"f\":[");
    tt_jw_f32(&w, 1.25f);
    tt_jw_cstr(&w, ",");
    tt_jw_f32(&w, NAN);
    tt_jw_cstr(&w, ",");
    tt_jw_f32(&w, -INFINITY);
    tt_jw_printf(&w, "],\"big\":\"%0300d\"}", 7);
    CHECK(!w.oom);
    tt_json_doc d;
    tt_status st = {0};
    int rc = tt_json_parse(w.buf, w.len, 100, &d, &st);
    CHECK_MSG(rc == 0, "%s", st.msg);
    if (!rc) {
        const tt_json_node *s = tt_json_get(&d, tt_json_root(&d), "s");
        CHECK(s && s->len == n && memcmp(s->str, src, n) == 0);
        const tt_json_node *f = tt_json_get(&d, tt_json_root(&d), "f");
        CHECK(f && f->count == 3);
        const tt_json_node *f1 = tt_json_sibling(&d, tt_json_first(&d, f));
        CHECK(f1 && f1->type == TT_JSTRING && strcmp(f1->str, "nan") == 0);
        const tt_json_node *big = tt_json_get(&d, tt_json_root(&d), "big");
        CHECK(big && big->len == 300 && big->str[299] == '7');
        tt_json_free(&d);
    }
    tt_jw_free(&w);
}

/* ------------------------------------------------------------ safetensors */

TT_TEST(safetensors_generic) {
    const char *p = tpath("generic.safetensors");
    FILE *f = fopen(p, "wb");
    CHECK(f != NULL);
    if (!f) return;
    tt_st_writer w;
    tt_status st = {0};
    tt_st_writer_init(&w, p);
    uint8_t u8[5] = {1, 2, 3, 4, 250};
    int64_t i64[6];
    double f64[3] = {1.5, -2.25, 1e300};
    for (int i = 0; i < 6; i++) i64[i] = (int64_t)rnd32(5, (uint64_t)i) * -1000003;
    int64_t s_u8[1] = {5}, s_i64[2] = {2, 3}, s_f64[1] = {3}, s_zero[2] = {4, 0};
    CHECK(tt_st_writer_add(&w, "bytes", TT_ST_U8, 1, s_u8, &st) == 0);
    CHECK(tt_st_writer_add(&w, "a/b \"quoted\" name", TT_ST_I64, 2, s_i64, &st) == 0);
    CHECK(tt_st_writer_add(&w, "empty", TT_ST_BF16, 2, s_zero, &st) == 0);
    CHECK(tt_st_writer_add(&w, "scalar", TT_ST_F64, 0, NULL, &st) == 0);
    CHECK(tt_st_writer_add(&w, "doubles", TT_ST_F64, 1, s_f64, &st) == 0);
    CHECK(tt_st_writer_meta(&w, "note", "line1\nline2 \"q\"", &st) == 0);
    CHECK(tt_st_writer_begin(&w, f, &st) == 0);
    CHECK(tt_st_writer_data(&w, u8, 5, &st) == 0);
    CHECK(tt_st_writer_data(&w, i64, sizeof i64, &st) == 0);
    CHECK(tt_st_writer_data(&w, f64, 8, &st) == 0);
    CHECK(tt_st_writer_end(&w, &st) != 0); /* not all declared bytes yet */
    CHECK(tt_st_writer_data(&w, f64, sizeof f64 + 8, &st) != 0); /* more than declared */
    CHECK(tt_st_writer_data(&w, f64, sizeof f64, &st) == 0);
    CHECK_MSG(tt_st_writer_end(&w, &st) == 0, "%s", st.msg);
    tt_st_writer_free(&w);
    fclose(f);

    size_t len = 0;
    uint8_t *buf = read_all(p, &len);
    CHECK(buf && (8 + hdr_len(buf)) % 8 == 0 && len == 8 + hdr_len(buf) + 5 + 48 + 8 + 24);
    for (int mode = 0; mode < 2 && buf; mode++) {
        tt_st_reader r;
        int rc = mode ? tt_st_open_file(&r, p, &st) : tt_st_open_mem(&r, buf, len, &st);
        CHECK_MSG(rc == 0, "%s", st.msg);
        if (rc) continue;
        CHECK(r.n_tensors == 5 && r.n_meta == 1);
        CHECK(strcmp(tt_st_meta_get(&r, "note"), "line1\nline2 \"q\"") == 0);
        const tt_st_tensor *t = tt_st_find(&r, "a/b \"quoted\" name");
        CHECK(t && t->dtype == TT_ST_I64 && t->ndim == 2 && t->shape[0] == 2 && t->shape[1] == 3 && t->numel == 6);
        int64_t back[6];
        if (t) CHECK(tt_st_read(&r, t, 0, back, sizeof back, &st) == 0 && memcmp(back, i64, sizeof back) == 0);
        if (t) CHECK(tt_st_read(&r, t, 8, back, sizeof back, &st) != 0); /* out of the tensor */
        t = tt_st_find(&r, "empty");
        CHECK(t && t->numel == 0 && t->begin == t->end && t->dtype == TT_ST_BF16);
        t = tt_st_find(&r, "scalar");
        double sc = 0;
        CHECK(t && t->ndim == 0 && t->numel == 1 && tt_st_read(&r, t, 0, &sc, 8, &st) == 0 && sc == 1.5);
        t = tt_st_find(&r, "doubles");
        double dd[3];
        CHECK(t && tt_st_read(&r, t, 0, dd, sizeof dd, &st) == 0 && memcmp(dd, f64, sizeof dd) == 0);
        t = tt_st_find(&r, "bytes");
        uint8_t bb[5];
        CHECK(t && tt_st_read(&r, t, 0, bb, 5, &st) == 0 && memcmp(bb, u8, 5) == 0);
        CHECK(tt_st_find(&r, "nope") == NULL && tt_st_find(&r, "") == NULL);
        tt_st_close(&r);
    }
    /* writing to a full device fails cleanly */
    FILE *full = fopen("/dev/full", "wb");
    if (full) {
        tt_st_writer_init(&w, "/dev/full");
        int64_t big[1] = {1 << 20};
        float *z = calloc(1 << 20, sizeof(float));
        int rc = tt_st_writer_add(&w, "x", TT_ST_F32, 1, big, &st);
        if (!rc) rc = tt_st_writer_begin(&w, full, &st);
        if (!rc) rc = tt_st_writer_data(&w, z, (size_t)4 << 20, &st);
        if (!rc) rc = tt_st_writer_end(&w, &st);
        CHECK(rc != 0 && one_line(st.msg) && strstr(st.msg, "/dev/full"));
        tt_st_writer_free(&w);
        free(z);
        fclose(full);
    }
    free(buf);
}

/* ------------------------------------------------------------ checkpoints */

TT_TEST(checkpoint_round_trip) {
    tt_train_state a, b, c;
    make_state(&a, 37, 0);
    CHECK(a.n_val == 3 && a.step == 37);
    a.target_val = 1.5f; /* --target-val reached at step 20 (optional metadata) */
    a.target_step = 20;
    a.target_s = 12.345678901234567;
    tt_status st = {0};
    const char *p = tpath("rt.safetensors"), *p2 = tpath("rt2.safetensors");
    CHECK_MSG(tt_checkpoint_save(p, &a, &st) == 0, "%s", st.msg);
    CHECK_MSG(tt_checkpoint_load(p, &b, &st) == 0, "%s", st.msg);
    check_states_equal(&a, &b);
    /* the same bytes through the in-memory reader */
    size_t len = 0, len2 = 0;
    uint8_t *buf = read_all(p, &len);
    CHECK(buf != NULL);
    CHECK_MSG(tt_checkpoint_load_mem(buf, len, &c, &st) == 0, "%s", st.msg);
    check_states_equal(&a, &c);
    /* saving the loaded state reproduces the file byte for byte */
    CHECK(tt_checkpoint_save(p2, &b, &st) == 0);
    uint8_t *buf2 = read_all(p2, &len2);
    CHECK(buf2 && len == len2 && memcmp(buf, buf2, len) == 0);
    /* no temporary file left behind */
    char tmp[4400];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", p, (long)getpid());
    CHECK(access(tmp, F_OK) != 0);
    /* a resumed state keeps growing its history */
    b.step++;
    CHECK(tt_state_push_loss(&b, 1.0f, &st) == 0 && b.loss_hist[37] == 1.0f && b.loss_hist[36] == a.loss_hist[36]);
    CHECK(tt_state_push_val(&b, b.step, 0.5f, &st) == 0 && b.n_val == 4 && b.best_val == 0.5f);
    tt_state_free(&a);
    tt_state_free(&b);
    tt_state_free(&c);
    free(buf);
    free(buf2);

    /* step 0, no history at all; then non-finite history values */
    make_state(&a, 0, 1);
    CHECK(tt_checkpoint_save(p, &a, &st) == 0);
    CHECK_MSG(tt_checkpoint_load(p, &b, &st) == 0, "%s", st.msg);
    check_states_equal(&a, &b);
    CHECK(b.step == 0 && b.n_val == 0 && isinf(b.best_val) && b.best_val_step == -1);
    tt_state_free(&a);
    tt_state_free(&b);
    make_state(&a, 12, 2);
    a.loss_hist[3] = NAN;
    a.loss_hist[4] = INFINITY;
    a.loss_hist[5] = -INFINITY;
    a.loss_hist[6] = -0.0f;
    a.val_loss[0] = NAN;
    CHECK(tt_checkpoint_save(p, &a, &st) == 0);
    CHECK_MSG(tt_checkpoint_load(p, &b, &st) == 0, "%s", st.msg);
    if (b.loss_hist) {
        CHECK(isnan(b.loss_hist[3]) && isinf(b.loss_hist[4]) && b.loss_hist[4] > 0 && isinf(b.loss_hist[5]) && b.loss_hist[5] < 0);
        CHECK(feq(b.loss_hist[6], -0.0f) && feq(b.loss_hist[7], a.loss_hist[7]) && isnan(b.val_loss[0]));
    }
    tt_state_free(&a);
    tt_state_free(&b);
}

/* a BPE model's checkpoint names its tokenizer (kind and hash); a byte model's does not */
TT_TEST(checkpoint_tokenizer) {
    tt_train_state a, b;
    tt_status st = {0};
    const char *p = tpath("tok.safetensors");
    make_state(&a, 5, 0);
    CHECK(tt_checkpoint_save(p, &a, &st) == 0);
    size_t len = 0;
    uint8_t *buf = read_all(p, &len);
    CHECK(buf && !memmem(buf, len, "tokenizer", 9));
    CHECK(tt_checkpoint_load(p, &b, &st) == 0 && b.tok_kind == 0 && b.tok_hash == 0);
    tt_state_free(&b);
    free(buf);
    a.tok_kind = 1;
    a.tok_hash = 0x0123456789abcdefull;
    a.tok_per_byte = 0.2987654321012345;
    CHECK(tt_checkpoint_save(p, &a, &st) == 0);
    CHECK_MSG(tt_checkpoint_load(p, &b, &st) == 0, "%s", st.msg);
    CHECK(b.tok_kind == 1 && b.tok_hash == 0x0123456789abcdefull && b.tok_per_byte == a.tok_per_byte);
    tt_state_free(&b);
    buf = read_all(p, &len);
    size_t n = 0;
    uint8_t *e = buf ? edit_header(buf, len, "\"bpe\"", "\"bpx\"", &n) : NULL;
    if (e) expect_fail(e, n, "tokenizer", "an unknown tokenizer kind");
    free(e);
    e = buf ? edit_header(buf, len, "0123456789abcdef", "0123456789abcdeg", &n) : NULL;
    if (e) expect_fail(e, n, "tokenizer_hash", "a tokenizer hash that is not hex");
    free(e);
    e = buf ? edit_header(buf, len, "0.2987654321012345", "-0.2987654321012", &n) : NULL;
    if (e) expect_fail(e, n, "val_tokens_per_byte", "a negative tokens per byte");
    free(e);
    e = buf ? edit_header(buf, len, "\"tokenizer_hash\"", "\"tokenizer_hasx\"", &n) : NULL;
    if (e) expect_fail(e, n, "tokenizer_hash", "a tokenizer without its hash");
    free(e);
    free(buf);
    tt_state_free(&a);
}

TT_TEST(checkpoint_long_history) {
    /* a million steps of history (about 16 MB of header) round-trips exactly */
    tt_train_state a, b;
    make_state(&a, 0, 3);
    const int64_t N = 1000000;
    tt_status st = {0};
    for (int64_t i = 0; i < N; i++) {
        a.step = i + 1;
        if (tt_state_push_loss(&a, rnd_float_bits(99, (uint64_t)i), &st)) break;
    }
    for (int64_t k = 1; k <= 1000; k++) tt_state_push_val(&a, k * 1000, rnd_float_bits(98, (uint64_t)k), &st);
    const char *p = tpath("long.safetensors");
    CHECK_MSG(tt_checkpoint_save(p, &a, &st) == 0, "%s", st.msg);
    CHECK_MSG(tt_checkpoint_load(p, &b, &st) == 0, "%s", st.msg);
    check_states_equal(&a, &b);
    tt_state_free(&a);
    tt_state_free(&b);
    unlink(p);
}

TT_TEST(checkpoint_export_hf) {
    tt_train_state s;
    make_state(&s, 5, 4);
    for (size_t i = 0; i < s.layout.total; i++) s.params[i] = (float)i + 0.5f; /* every value distinct */
    tt_status st = {0};
    const char *p = tpath("export.safetensors");
    CHECK_MSG(tt_export_hf(p, &s, &st) == 0, "%s", st.msg);
    tt_st_reader r;
    int rc = tt_st_open_file(&r, p, &st);
    CHECK_MSG(rc == 0, "%s", st.msg);
    if (rc) { tt_state_free(&s); return; }
    const int64_t C = small_cfg.d_model, L = small_cfg.n_layer, V = small_cfg.vocab, T = small_cfg.ctx;
    CHECK(r.n_tensors == 4 + 12 * L);
    CHECK(tt_st_meta_get(&r, "format") && strcmp(tt_st_meta_get(&r, "format"), "pt") == 0);
    /* expected HF GPT-2 names and shapes, written out independently of the layout code */
    struct { char name[64]; int64_t s0, s1; } want[64];
    int nw = 0;
#define WANT(nm, a, b) do { snprintf(want[nw].name, 64, "%s", nm); want[nw].s0 = a; want[nw].s1 = b; nw++; } while (0)
    WANT("wte.weight", V, C);
    WANT("wpe.weight", T, C);
    WANT("ln_f.weight", C, 0);
    WANT("ln_f.bias", C, 0);
    for (int l = 0; l < L; l++) {
        char b[64];
#define WL(suf, a, bb) do { snprintf(b, sizeof b, "h.%d.%s", l, suf); WANT(b, a, bb); } while (0)
        WL("ln_1.weight", C, 0); WL("ln_1.bias", C, 0);
        WL("attn.c_attn.weight", C, 3 * C); WL("attn.c_attn.bias", 3 * C, 0);
        WL("attn.c_proj.weight", C, C); WL("attn.c_proj.bias", C, 0);
        WL("ln_2.weight", C, 0); WL("ln_2.bias", C, 0);
        WL("mlp.c_fc.weight", C, 4 * C); WL("mlp.c_fc.bias", 4 * C, 0);
        WL("mlp.c_proj.weight", 4 * C, C); WL("mlp.c_proj.bias", C, 0);
    }
    for (int i = 0; i < nw; i++) {
        const tt_st_tensor *t = tt_st_find(&r, want[i].name);
        CHECK_MSG(t != NULL, "missing %s", want[i].name);
        if (!t) continue;
        CHECK_MSG(t->dtype == TT_ST_F32 && t->ndim == (want[i].s1 ? 2 : 1) && t->shape[0] == want[i].s0 &&
                      (!want[i].s1 || t->shape[1] == want[i].s1), "shape of %s", want[i].name);
    }
    /* values: c_attn = [q|k|v] along the output dim; everything else copied as is */
    float *buf = malloc(s.layout.total * sizeof(float));
    const tt_layout *lo = &s.layout;
    for (int l = 0; l < L; l++) {
        char nm[64];
        snprintf(nm, sizeof nm, "h.%d.attn.c_attn.weight", l);
        const tt_st_tensor *t = tt_st_find(&r, nm);
        if (!t || tt_st_read(&r, t, 0, buf, (size_t)(3 * C * C) * 4, &st)) { CHECK(0); continue; }
        const float *q = s.params + tt_layout_offset(lo, &small_cfg, TT_QW, l), *k = s.params + tt_layout_offset(lo, &small_cfg, TT_KW, l),
                    *v = s.params + tt_layout_offset(lo, &small_cfg, TT_VALW, l);
        int bad = 0;
        for (int64_t i = 0; i < C; i++)
            for (int64_t j = 0; j < 3 * C; j++) {
                float e = j < C ? q[i * C + j] : j < 2 * C ? k[i * C + j - C] : v[i * C + j - 2 * C];
                bad += !feq(buf[i * 3 * C + j], e);
            }
        CHECK_MSG(bad == 0, "c_attn.weight layer %d: %d wrong", l, bad);
        snprintf(nm, sizeof nm, "h.%d.attn.c_attn.bias", l);
        t = tt_st_find(&r, nm);
        if (!t || tt_st_read(&r, t, 0, buf, (size_t)(3 * C) * 4, &st)) { CHECK(0); continue; }
        const float *qb = s.params + tt_layout_offset(lo, &small_cfg, TT_QB, l), *kb = s.params + tt_layout_offset(lo, &small_cfg, TT_KB, l),
                    *vb = s.params + tt_layout_offset(lo, &small_cfg, TT_VALB, l);
        for (int64_t j = 0; j < C; j++) CHECK(feq(buf[j], qb[j]) && feq(buf[C + j], kb[j]) && feq(buf[2 * C + j], vb[j]));
        struct { const char *suf; tt_tensor_kind kind; } same[] = {
            {"ln_1.weight", TT_LN1W}, {"ln_1.bias", TT_LN1B}, {"attn.c_proj.weight", TT_OW}, {"attn.c_proj.bias", TT_OB},
            {"ln_2.weight", TT_LN2W}, {"ln_2.bias", TT_LN2B}, {"mlp.c_fc.weight", TT_FCW}, {"mlp.c_fc.bias", TT_FCB},
            {"mlp.c_proj.weight", TT_PROJW}, {"mlp.c_proj.bias", TT_PROJB}};
        for (size_t m = 0; m < sizeof same / sizeof same[0]; m++) {
            snprintf(nm, sizeof nm, "h.%d.%s", l, same[m].suf);
            const tt_tensor_info *ti = &lo->t[tt_layout_index(&small_cfg, same[m].kind, l)];
            t = tt_st_find(&r, nm);
            CHECK_MSG(t && tt_st_read(&r, t, 0, buf, ti->numel * 4, &st) == 0 && memcmp(buf, s.params + ti->offset, ti->numel * 4) == 0,
                      "values of %s", nm);
        }
    }
    const char *top[] = {"wte.weight", "wpe.weight", "ln_f.weight", "ln_f.bias"};
    tt_tensor_kind topk[] = {TT_WTE, TT_WPE, TT_LNFW, TT_LNFB};
    for (int m = 0; m < 4; m++) {
        const tt_tensor_info *ti = &lo->t[tt_layout_index(&small_cfg, topk[m], 0)];
        const tt_st_tensor *t = tt_st_find(&r, top[m]);
        CHECK_MSG(t && tt_st_read(&r, t, 0, buf, ti->numel * 4, &st) == 0 && memcmp(buf, s.params + ti->offset, ti->numel * 4) == 0,
                  "values of %s", top[m]);
    }
    free(buf);
    tt_st_close(&r);
    /* an export is not a training checkpoint */
    tt_train_state b;
    CHECK(tt_checkpoint_load(p, &b, &st) != 0 && strstr(st.msg, "weights-only") && state_is_empty(&b));
    tt_state_free(&s);
}

TT_TEST(checkpoint_malformed) {
    size_t len = 0, n = 0;
    tt_train_state keep;
    uint8_t *v = valid_ckpt(&len, &keep);
    if (!v) return;
    uint8_t *b;
    const size_t hn = (size_t)hdr_len(v), ds = 8 + hn, dl = len - ds;
    char from[256], to[256];

    /* sanity: the helpers themselves produce loadable files */
    expect_load(v, len, "valid");
    mods none = {0};
    b = rewrite(v, len, &none, &n);
    expect_load(b, n, "rewrite without change");
    free(b);
    b = edit_header(v, len, "\"format\"", "\"format\"", &n);
    expect_load(b, n, "edit without change");
    free(b);
    {   /* header padded with extra trailing spaces (as the reference writer does) */
        char *h = malloc(hn + 16);
        memcpy(h, v + 8, hn);
        memset(h + hn, ' ', 16);
        b = with_header(h, hn + 16, v + ds, dl, &n);
        expect_load(b, n, "padded header");
        free(b);
        free(h);
    }

    /* framing */
    expect_fail(v, 0, "too short", "empty file");
    expect_fail(NULL, 0, "too short", "NULL buffer");
    expect_fail(v, 5, "too short", "truncated header length");
    b = malloc(len);
    memcpy(b, v, len);
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)((uint64_t)len >> (8 * i));
    expect_fail(b, len, "larger than the file", "header length > file");
    uint64_t huge = 200000000ull;
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(huge >> (8 * i));
    expect_fail(b, len, "limit", "oversized header");
    memset(b, 0xff, 8);
    expect_fail(b, len, "limit", "header length 2^64-1");
    free(b);
    expect_fail(v, 8 + hn / 2, "larger than the file", "cut inside the header");
    expect_fail(v, len - 4, "past the end", "truncated data section");
    expect_fail(v, ds + 10, "past the end", "data section mostly gone");
    expect_fail(v, ds, "past the end", "no data section");
    b = malloc(len + 8);
    memcpy(b, v, len);
    memset(b + len, 0, 8);
    expect_fail(b, len + 8, "data section holds", "trailing bytes after the data");
    free(b);

    /* header JSON */
    static const char *hdrs[][2] = {
        {"{not json}", "JSON"},        {"{\"a\":", "JSON"},         {"[1,2,3]", "not a JSON object"}, {"  {}", "not a JSON object"},
        {"\"str\"", "not a JSON object"}, {"{}x", "JSON"},        {"{\"x\":1}", "not an object"},   {"{\"__metadata__\":[]}", "__metadata__"},
        {"{\"__metadata__\":{\"format\":1}}", "not a string"}, {"{\"t\":{\"dtype\":\"F32\",\"shape\":[1]}}", "missing"},
    };
    for (size_t i = 0; i < sizeof hdrs / sizeof hdrs[0]; i++) {
        b = with_header(hdrs[i][0], strlen(hdrs[i][0]), v + ds, dl, &n);
        expect_fail(b, n, hdrs[i][1], hdrs[i][0]);
        free(b);
    }
    b = with_header("{}", 2, NULL, 0, &n);
    expect_fail(b, n, "format", "empty header, no data");
    free(b);

    /* tensor entries (the first tensor is params.wte.weight (256, 8) at [0, 8192)) */
    const char *wte = "\"params.wte.weight\":{\"dtype\":\"F32\",\"shape\":[256,8],\"data_offsets\":[0,8192]}";
    static const char *ed[][3] = {
        {"\"dtype\":\"F32\",\"shape\":[256,8]", "\"dtype\":\"F33\",\"shape\":[256,8]", "unknown dtype"},
        {"\"dtype\":\"F32\",\"shape\":[256,8]", "\"dtype\":\"f32\",\"shape\":[256,8]", "unknown dtype"},
        {"\"dtype\":\"F32\",\"shape\":[256,8]", "\"dtype\":32,\"shape\":[256,8]", "not a string"},
        {"\"shape\":[256,8]", "\"shape\":[256,9]", "needs"},
        {"\"shape\":[256,8]", "\"shape\":[-256,8]", "non-negative"},
        {"\"shape\":[256,8]", "\"shape\":[256.0,8]", "non-negative integers"},
        {"\"shape\":[256,8]", "\"shape\":[4294967296,4294967296,4294967296]", "overflow"},
        {"\"shape\":[256,8]", "\"shape\":[1,1,1,1,1,1,1,1,256,8]", "dims"},
        {"\"shape\":[256,8]", "\"shape\":{}", "not an array"},
        {"\"data_offsets\":[0,8192]", "\"data_offsets\":[8192,0]", "begin"},
        {"\"data_offsets\":[0,8192]", "\"data_offsets\":[0,8192,0]", "[begin, end]"},
        {"\"data_offsets\":[0,8192]", "\"data_offsets\":[0.0,8192]", "unsigned"},
        {"\"data_offsets\":[0,8192]", "\"data_offsets\":[-1,8191]", "unsigned"},
        {"\"data_offsets\":[0,8192]", "\"data_offsets\":[18446744073709551615,8192]", "begin"},
        {"\"data_offsets\":[0,8192]", "\"data_offsets\":[18446744073709551616,8192]", "unsigned"},
        {"\"data_offsets\":[0,8192]", "\"data_offsets\":[4,8196]", "belong to no tensor"},
        {"\"dtype\":\"F32\",\"shape\":[256,8]", "\"dtype\":\"F32\",\"foo\":1,\"shape\":[256,8]", "unexpected field"},
        {"\"dtype\":\"F32\",\"shape\":[256,8]", "\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[256,8]", "duplicate"},
        {"\"params.wte.weight\":{", "\"\":{", "empty tensor name"},
        {"\"params.wte.weight\":{", "\"params.wpe.weight\":{", "duplicate"},
        {"\"params.wte.weight\":{\"dtype\":\"F32\"", "\"params.wte.weight\\n\\u0001\":{\"dtype\":\"F99\"", "params.wte.weight??"},
        {"\"version\":\"1\"", "\"version\":1", "not a string"},
        {"\"version\":\"1\"", "\"version\":\"1\",\"version\":\"1\"", "duplicate"},
    };
    CHECK_MSG(memmem(v + 8, hn, wte, strlen(wte)) != NULL, "test bug: first tensor entry changed format");
    for (size_t i = 0; i < sizeof ed / sizeof ed[0]; i++) {
        b = edit_header(v, len, ed[i][0], ed[i][1], &n);
        if (b) expect_fail(b, n, ed[i][2], ed[i][1]);
        free(b);
    }
    /* overlap of two same-size tensors; data_offsets past the end of the file */
    snprintf(from, sizeof from, "\"params.h.0.ln_1.bias\":{\"dtype\":\"F32\",\"shape\":[8],\"data_offsets\":[8480,8512]}");
    snprintf(to, sizeof to, "\"params.h.0.ln_1.bias\":{\"dtype\":\"F32\",\"shape\":[8],\"data_offsets\":[8448,8480]}");
    b = edit_header(v, len, from, to, &n);
    if (b) expect_fail(b, n, "overlaps", "overlapping offsets");
    free(b);
    snprintf(from, sizeof from, "\"data_offsets\":[%zu,%zu]", dl - 32, dl);
    snprintf(to, sizeof to, "\"data_offsets\":[%zu,%zu]", dl - 28, dl + 4);
    b = edit_header(v, len, from, to, &n);
    if (b) expect_fail(b, n, "past the end", "data_offsets past EOF");
    free(b);

    /* structurally valid safetensors, wrong as a checkpoint */
    struct { mods m; const char *kw; } sem[] = {
        {{.skip = "adam_m.h.1.mlp.c_fc.bias"}, "'adam_m.h.1.mlp.c_fc.bias' is missing"},
        {{.extra = "params.h.2.ln_1.weight"}, "unexpected tensor 'params.h.2.ln_1.weight'"},
        {{.f16 = "params.h.0.attn.q.weight"}, "F16"},
        {{.reshape = "adam_v.wpe.weight", .s0 = 16, .s1 = 4}, "shape (16, 4)"},
        {{.reshape = "params.h.1.ln_2.bias", .s0 = 8, .s1 = 1}, "shape"},
        {{.meta_key = "format", .meta_val = "safetensors"}, "not a tinytrain checkpoint"},
        {{.meta_key = "format", .meta_val = NULL}, "not a tinytrain checkpoint"},
        {{.meta_key = "version", .meta_val = "2"}, "version"},
        {{.meta_key = "version", .meta_val = NULL}, "version"},
        {{.meta_key = "config", .meta_val = "{\"n_layer\":2,\"d_model\":16,\"n_head\":2,\"ctx\":8,\"batch\":4,\"vocab\":256}"}, "shape"},
        {{.meta_key = "config", .meta_val = "{\"n_layer\":3,\"d_model\":8,\"n_head\":2,\"ctx\":8,\"batch\":4,\"vocab\":256}"}, "missing"},
        {{.meta_key = "config", .meta_val = "{\"n_layer\":1,\"d_model\":8,\"n_head\":2,\"ctx\":8,\"batch\":4,\"vocab\":256}"}, "unexpected tensor"},
        {{.meta_key = "config", .meta_val = "{\"n_layer\":2,\"d_model\":8,\"n_head\":2,\"ctx\":16,\"batch\":4,\"vocab\":256}"}, "shape"},
        {{.meta_key = "config", .meta_val = "{\"n_layer\":2,\"d_model\":8,\"n_head\":3,\"ctx\":8,\"batch\":4,\"vocab\":256}"}, "invalid config"},
        {{.meta_key = "config", .meta_val = "{\"n_layer\":2,\"d_model\":8,\"n_head\":2,\"ctx\":8,\"batch\":4}"}, "lacks field 'vocab'"},
        {{.meta_key = "config", .meta_val = "{\"n_layer\":2,\"d_model\":8,\"n_head\":2,\"ctx\":8,\"batch\":4,\"vocab\":256,\"x\":1}"}, "unknown field"},
        {{.meta_key = "config", .meta_val = "{\"n_layer\":2.0,\"d_model\":8,\"n_head\":2,\"ctx\":8,\"batch\":4,\"vocab\":256}"}, "bad value"},
        {{.meta_key = "config", .meta_val = "{\"n_layer\":4294967298,\"d_model\":8,\"n_head\":2,\"ctx\":8,\"batch\":4,\"vocab\":256}"}, "bad value"},
        {{.meta_key = "config", .meta_val = "{\"n_layer\":2,"}, "not valid JSON"},
        {{.meta_key = "config", .meta_val = "[]"}, "not a JSON object"},
        {{.meta_key = "config", .meta_val = NULL}, "'config' is missing"},
        {{.meta_key = "train_config", .meta_val = "{}"}, "lacks field"},
        {{.meta_key = "step", .meta_val = "abc"}, "'step' is not an integer"},
        {{.meta_key = "step", .meta_val = "37a"}, "'step' is not an integer"},
        {{.meta_key = "step", .meta_val = "37.0"}, "'step' is not an integer"},
        {{.meta_key = "step", .meta_val = " 37"}, "'step' is not an integer"},
        {{.meta_key = "step", .meta_val = ""}, "'step' is not an integer"},
        {{.meta_key = "step", .meta_val = "3.7e1"}, "'step' is not an integer"},
        {{.meta_key = "step", .meta_val = "99999999999999999999"}, "'step' is not an integer"},
        {{.meta_key = "step", .meta_val = "-1"}, "negative step"},
        {{.meta_key = "step", .meta_val = "36"}, "loss_history has 37 entries but step is 36"},
        {{.meta_key = "step", .meta_val = NULL}, "'step' is missing"},
        {{.meta_key = "seed", .meta_val = "1"}, "seed"},
        {{.meta_key = "corpus_hash", .meta_val = "-1"}, "corpus_hash"},
        {{.meta_key = "corpus_bytes", .meta_val = "0x10"}, "corpus_bytes"},
        {{.meta_key = "loss_history", .meta_val = "[1,2"}, "loss_history"},
        {{.meta_key = "loss_history", .meta_val = "{}"}, "loss_history"},
        {{.meta_key = "loss_history", .meta_val = "[\"x\"]"}, "loss_history"},
        {{.meta_key = "loss_history", .meta_val = "[\"1.5\"]"}, "loss_history"},
        {{.meta_key = "loss_history", .meta_val = "[1,,2]"}, "loss_history"},
        {{.meta_key = "loss_history", .meta_val = "[NaN]"}, "loss_history"},
        {{.meta_key = "loss_history", .meta_val = "[1e39]"}, "loss_history"},
        {{.meta_key = "loss_history", .meta_val = "[]"}, "loss_history has 0 entries"},
        {{.meta_key = "val_history", .meta_val = "[[1]]"}, "val_history"},
        {{.meta_key = "val_history", .meta_val = "[[1,2,3]]"}, "val_history"},
        {{.meta_key = "val_history", .meta_val = "[[1.5,2]]"}, "val_history"},
        {{.meta_key = "val_history", .meta_val = "[[50,1.0]]"}, "val_history step 50"},
        {{.meta_key = "val_history", .meta_val = "[[20,1],[10,1]]"}, "val_history step 10"},
        {{.meta_key = "val_history", .meta_val = "[[-1,1]]"}, "val_history step -1"},
        {{.meta_key = "val_history", .meta_val = "[1,2]"}, "val_history"},
        {{.meta_key = "best_val", .meta_val = "abc"}, "best_val"},
        {{.meta_key = "best_val_step", .meta_val = "-2"}, "best_val_step"},
        {{.meta_key = "best_val_step", .meta_val = "38"}, "best_val_step"},
        {{.meta_key = "target_step", .meta_val = "abc"}, "'target_step' is not an integer"},
        {{.meta_key = "target_step", .meta_val = "0"}, "'target_val' is missing"},
    };
    for (size_t i = 0; i < sizeof sem / sizeof sem[0]; i++) {
        b = rewrite(v, len, &sem[i].m, &n);
        if (b) expect_fail(b, n, sem[i].kw, sem[i].kw);
        free(b);
    }
    /* train_config problems: take the saved one and break one field at a time */
    tt_st_reader r;
    tt_status st = {0};
    CHECK(tt_st_open_mem(&r, v, len, &st) == 0);
    char *tc = strdup(tt_st_meta_get(&r, "train_config"));
    tt_st_close(&r);
    struct { const char *from, *to, *kw; } tce[] = {
        {"\"lr\":", "\"lr\":-", "invalid train_config"},
        {"\"schedule\":\"constant\"", "\"schedule\":\"linear\"", "bad value for 'schedule'"},
        {"\"accum\":3", "\"accum\":0", "invalid train_config"},
        {"\"accum\":3", "\"accum\":3,\"zz\":0", "unknown field"},
        {"\"seed\":", "\"seed\":-", "bad value for 'seed'"},
        {"\"steps\":1000", "\"steps\":\"1000\"", "bad value for 'steps'"},
        {"\"beta1\":0.899999976", "\"beta1\":1", "invalid train_config"},
    };
    for (size_t i = 0; i < sizeof tce / sizeof tce[0]; i++) {
        char *at = strstr(tc, tce[i].from);
        CHECK_MSG(at != NULL, "test bug: '%s' not in train_config %s", tce[i].from, tc);
        if (!at) continue;
        char mod[2048];
        snprintf(mod, sizeof mod, "%.*s%s%s", (int)(at - tc), tc, tce[i].to, at + strlen(tce[i].from));
        mods m = {.meta_key = "train_config", .meta_val = mod};
        b = rewrite(v, len, &m, &n);
        if (b) expect_fail(b, n, tce[i].kw, mod);
        free(b);
    }
    free(tc);

    /* through the file API: the message names the file */
    const char *bp = tpath("bad.safetensors");
    write_all(bp, v, len / 2);
    tt_train_state s;
    CHECK(tt_checkpoint_load(bp, &s, &st) != 0 && one_line(st.msg) && strstr(st.msg, bp) && state_is_empty(&s));
    CHECK(tt_checkpoint_load(tpath("does-not-exist"), &s, &st) == TT_EIO && strstr(st.msg, "does-not-exist") && state_is_empty(&s));
    CHECK(tt_checkpoint_load(g_dir, &s, &st) != 0 && one_line(st.msg) && state_is_empty(&s));
    write_all(bp, "", 0);
    CHECK(tt_checkpoint_load(bp, &s, &st) != 0 && strstr(st.msg, "too short"));
    free(v);
    tt_state_free(&keep);
}

TT_TEST(checkpoint_random_bytes) {
    size_t len = 0;
    uint8_t *v = valid_ckpt(&len, NULL);
    if (!v) return;
    uint8_t *b = malloc(4096);
    int fails = 0;
    for (uint64_t k = 0; k < 1000; k++) {
        size_t n = rnd32(1000 + k, 0) % 2048;
        for (size_t i = 0; i < n; i++) b[i] = (uint8_t)rnd32(2000 + k, i);
        if (k % 2 && n >= 10) { /* plausible framing: a header length that fits, a '{' */
            uint64_t h = 2 + rnd32(3000 + k, 0) % (n - 9);
            for (int i = 0; i < 8; i++) b[i] = (uint8_t)(h >> (8 * i));
            b[8] = '{';
        }
        tt_train_state s;
        tt_status st = {0};
        int rc = tt_checkpoint_load_mem(b, n, &s, &st);
        if (rc == 0 || !one_line(st.msg) || !state_is_empty(&s)) fails++;
        if (rc == 0) tt_state_free(&s);
    }
    CHECK_MSG(fails == 0, "%d random strings not rejected cleanly", fails);
    /* every truncation inside the header and a spread of them in the data */
    const size_t hn = (size_t)hdr_len(v);
    fails = 0;
    for (size_t cut = 0; cut < len; cut += cut < 8 + hn + 64 ? 1 : 97) {
        tt_train_state s;
        tt_status st = {0};
        int rc = tt_checkpoint_load_mem(v, cut, &s, &st);
        if (rc == 0 || !one_line(st.msg) || !state_is_empty(&s)) fails++;
        if (rc == 0) tt_state_free(&s);
    }
    CHECK_MSG(fails == 0, "%d truncations not rejected cleanly", fails);
    free(b);
    free(v);
}

TT_TEST(checkpoint_mutations) {
    size_t len = 0;
    uint8_t *v = valid_ckpt(&len, NULL);
    if (!v) return;
    const size_t ds = 8 + (size_t)hdr_len(v);
    uint8_t *b = malloc(len);
    int bad = 0, header_rejected = 0, header_total = 0, data_total = 0;
    for (uint64_t k = 0; k < 1000; k++) {
        memcpy(b, v, len);
        /* half the mutations land in the header, half anywhere */
        size_t pos = k % 2 ? rnd32(4000 + k, 0) % ds : rnd32(4000 + k, 0) % len;
        uint8_t nb = (uint8_t)(1 + rnd32(5000 + k, 0) % 255);
        b[pos] ^= nb; /* always a different byte */
        tt_train_state s;
        tt_status st = {0};
        int rc = tt_checkpoint_load_mem(b, len, &s, &st);
        if (pos >= ds) {
            data_total++;
            /* tensor bytes: must load, with exactly the mutated bytes, unless the
             * flip made a value non-finite (the loader refuses those) */
            if (rc && strstr(st.msg, "non-finite") && one_line(st.msg) && state_is_empty(&s)) continue;
            if (rc) { bad++; fprintf(stderr, "data mutation at %zu rejected: %s\n", pos, st.msg); continue; }
        } else {
            header_total++;
            if (rc) {
                header_rejected++;
                if (!one_line(st.msg) || !state_is_empty(&s)) bad++;
                continue;
            }
        }
        /* loaded: the tensors are the file's data section (params, m, v in layout order) */
        size_t bytes = s.layout.total * sizeof(float);
        if (3 * bytes != len - ds || memcmp(s.params, b + ds, bytes) || memcmp(s.m, b + ds + bytes, bytes) ||
            memcmp(s.v, b + ds + 2 * bytes, bytes)) {
            bad++;
            fprintf(stderr, "mutation at %zu loaded wrong data\n", pos);
        }
        tt_state_free(&s);
    }
    CHECK_MSG(bad == 0, "%d mutations mishandled", bad);
    /* the header is guarded: most single-byte changes there are caught */
    CHECK_MSG(header_rejected * 2 > header_total, "only %d of %d header mutations rejected", header_rejected, header_total);
    CHECK(data_total > 100);
    free(b);
    free(v);
}

/* ------------------------------------------------------------ atomic saves */

static int same_file(const char *p, const uint8_t *want, size_t n) {
    size_t len = 0;
    uint8_t *b = read_all(p, &len);
    int ok = b && len == n && memcmp(b, want, n) == 0;
    free(b);
    return ok;
}

static int count_tmp_files(const char *path) {
    char t[4400];
    snprintf(t, sizeof t, "%s.tmp.%ld", path, (long)getpid());
    struct stat sb;
    return stat(t, &sb) == 0 && S_ISREG(sb.st_mode);
}

TT_TEST(checkpoint_atomic) {
    tt_train_state a, b2;
    make_state(&a, 20, 5);
    make_state(&b2, 30, 6);
    tt_status st = {0};
    const char *p = tpath("atomic.safetensors");
    CHECK(tt_checkpoint_save(p, &a, &st) == 0);
    size_t len = 0, len2 = 0;
    uint8_t *orig = read_all(p, &len);
    CHECK(orig != NULL);
    CHECK(tt_checkpoint_save(tpath("b2.safetensors"), &b2, &st) == 0);
    free(read_all(tpath("b2.safetensors"), &len2));
    CHECK(len2 > 5000);

    /* a full disk (simulated with RLIMIT_FSIZE: writes past the limit fail with EFBIG),
     * at several points: inside the header, inside the data, near the end */
    struct rlimit old;
    CHECK(getrlimit(RLIMIT_FSIZE, &old) == 0);
    void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
    rlim_t limits[] = {100, 5000, (rlim_t)len2 / 2, (rlim_t)len2 - 1};
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        struct rlimit lim = old;
        lim.rlim_cur = limits[i];
        if (old.rlim_max != RLIM_INFINITY && lim.rlim_cur > old.rlim_max) continue;
        CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
        int rc = tt_checkpoint_save(p, &b2, &st);
        CHECK(setrlimit(RLIMIT_FSIZE, &old) == 0);
        CHECK_MSG(rc != 0, "save under a %llu byte limit succeeded", (unsigned long long)limits[i]);
        CHECK_MSG(one_line(st.msg) && strstr(st.msg, p) && strstr(st.msg, strerror(EFBIG)), "message: %s", st.msg);
        CHECK(same_file(p, orig, len));
        CHECK(!count_tmp_files(p));
    }
    signal(SIGXFSZ, prev);

    /* the temporary file cannot be created (a directory sits at its name) */
    char tmpname[4400];
    snprintf(tmpname, sizeof tmpname, "%s.tmp.%ld", p, (long)getpid());
    CHECK(mkdir(tmpname, 0755) == 0);
    CHECK(tt_checkpoint_save(p, &b2, &st) != 0 && one_line(st.msg) && strstr(st.msg, p));
    CHECK(same_file(p, orig, len));
    rmdir(tmpname);

    /* an unwritable directory (only meaningful when not root: root ignores modes) */
    char dir[4400], inner[4500];
    snprintf(dir, sizeof dir, "%s/ro", g_dir);
    snprintf(inner, sizeof inner, "%s/ck.safetensors", dir);
    CHECK(mkdir(dir, 0755) == 0);
    CHECK(tt_checkpoint_save(inner, &a, &st) == 0);
    CHECK(chmod(dir, 0555) == 0);
    if (geteuid() != 0) {
        CHECK(tt_checkpoint_save(inner, &b2, &st) != 0 && one_line(st.msg) && strstr(st.msg, inner));
        CHECK(same_file(inner, orig, len));
    } else {
        printf("     (running as root: read-only directory check skipped)\n");
    }
    chmod(dir, 0755);
    /* a directory that does not exist */
    snprintf(inner, sizeof inner, "%s/no/such/dir/ck.safetensors", g_dir);
    CHECK(tt_checkpoint_save(inner, &a, &st) == TT_EIO && one_line(st.msg) && strstr(st.msg, "no/such/dir"));
    CHECK(tt_export_hf(inner, &a, &st) == TT_EIO && one_line(st.msg));
    /* rename onto a non-empty directory fails; nothing is left behind */
    snprintf(inner, sizeof inner, "%s/ro", g_dir);
    CHECK(tt_checkpoint_save(inner, &a, &st) != 0 && one_line(st.msg));
    CHECK(!count_tmp_files(inner));
    /* the empty path and an unallocated state */
    CHECK(tt_checkpoint_save("", &a, &st) != 0 && one_line(st.msg));
    tt_train_state z;
    memset(&z, 0, sizeof z);
    CHECK(tt_checkpoint_save(p, &z, &st) != 0 && one_line(st.msg));
    /* a step count without the history behind it */
    a.step += 5000;
    CHECK(tt_checkpoint_save(p, &a, &st) != 0 && strstr(st.msg, "loss history"));
    a.step -= 5000;
    CHECK(same_file(p, orig, len));
    /* and after all that, a normal save still replaces the file */
    CHECK(tt_checkpoint_save(p, &b2, &st) == 0);
    tt_train_state c;
    CHECK(tt_checkpoint_load(p, &c, &st) == 0);
    check_states_equal(&b2, &c);
    tt_state_free(&c);
    tt_state_free(&a);
    tt_state_free(&b2);
    free(orig);
}

int main(void) {
    snprintf(g_dir, sizeof g_dir, "%s", tt_test_tmpdir());
    RUN(json_strict);
    RUN(json_numbers);
    RUN(json_writer);
    RUN(safetensors_generic);
    RUN(checkpoint_round_trip);
    RUN(checkpoint_tokenizer);
    RUN(checkpoint_long_history);
    RUN(checkpoint_export_hf);
    RUN(checkpoint_malformed);
    RUN(checkpoint_random_bytes);
    RUN(checkpoint_mutations);
    RUN(checkpoint_atomic);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (strstr(g_dir, "tinytrain-test-")) (void)!system(cmd);
    return tt_test_summary();
}
