/* checkpoint.c — full training state save/load and the Hugging Face GPT-2
 * weights-only export, as .safetensors (format in checkpoint.h).
 *
 * Save: written to <path>.tmp.<pid> in the target's directory, every write
 * checked, fflush + fsync, then rename over <path> and fsync of the directory
 * (best effort: some file systems cannot fsync a directory). On any failure
 * the temporary file is removed and <path> is untouched.
 *
 * Load checks, in order: safetensors structure (safetensors.c), metadata
 * format/version, config JSON (exact keys: the option table's names or their
 * aliases, options.h; tt_config_validate), train_config JSON (the same,
 * tt_train_config_validate), step/seed/corpus numbers
 * (strict decimal), loss_history (exactly `step` entries), val_history
 * ([step, loss] pairs, steps in [0, step], non-decreasing), best_val /
 * best_val_step, then every tensor of each group (params: the layout;
 * moments: its trainable tensors) present as F32 with its exact shape and no
 * other tensor but a frozen base tensor's moments (older LoRA files: all
 * zero, else refused). Only then is the state allocated (so allocation
 * is bounded by the size of the input) and the data copied in. Unknown
 * metadata keys are ignored (room for additions without a version bump).
 *
 * Export metadata: "format": "pt" (as checkpoint.h says) plus "tinytrain_config"
 * (the model config JSON), so an export is self-describing and the loader
 * can tell a user who passes one to `--resume` what it is.
 *
 * Metadata numbers: floats are written with %.9g (exact float round trip) and
 * non-finite ones as "nan"/"inf"/"-inf" (quoted inside JSON arrays). The
 * header limit (100,000,000 bytes) bounds the loss history at roughly 6
 * million steps (~16 bytes per entry). */
#define _FILE_OFFSET_BITS 64
#define _POSIX_C_SOURCE 200809L
#include "checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/fileio.h"
#include "hf.h"
#include "io/json.h"
#include "lora.h"
#include "options.h"
#include "io/safetensors.h"

#define CK_FORMAT "tinytrain-checkpoint"
#define CK_VERSION "1"

static const char *const group_prefix[3] = {"params.", "adam_m.", "adam_v."};

/* Whether group g of tensor i is a checkpoint's: params for every tensor,
 * moments for those of the trainable range (config.h tt_layout_train0: a
 * LoRA model's adapters, every tensor without LoRA). */
static int in_group(const tt_layout *lo, int g, int i) { return g == 0 || lo->t[i].offset >= tt_layout_train0(lo); }

/* ---------------- JSON of the configs ---------------- */

/* a model option older builds lack, at 0 (a feature that is off: LoRA) */
static int absent_at_zero(const tt_option *o, const char *p) {
    static const char zero[8] = {0};
    return o->where == TT_OPT_MODEL && o->may_be_absent && memcmp(p, zero, o->type == TT_OPT_I64 || o->type == TT_OPT_U64 || o->type == TT_OPT_F64 ? 8 : 4) == 0;
}

/* The config / train_config objects: one member per option of the group,
 * named as in the option table (options.h), plus the model's vocab, and its
 * architecture's variants where they are not tinytrain's own: "act"
 * ("gelu_new") and "ln_eps" (a number). A model option that may be absent is
 * left out at 0, so a model without LoRA (or a byte-level one with the exact
 * GELU and eps 1e-5) is written as older builds wrote it, and reads back as
 * one. */
static void options_json(tt_jw *w, tt_opt_where group, const void *src) {
    char c[64];
    int first = 1;
    tt_jw_raw(w, "{", 1);
    for (int i = 0; i < tt_option_count(); i++) {
        const tt_option *o = tt_option_at(i);
        if (o->where != group) continue;
        const char *p = (const char *)src + o->off;
        if (absent_at_zero(o, p)) continue;
        tt_jw_printf(w, "%s\"%s\":", first ? "" : ",", o->name);
        first = 0;
        switch (o->type) {
        case TT_OPT_INT: tt_jw_printf(w, "%d", *(const int *)p); break;
        case TT_OPT_I64: tt_jw_printf(w, "%lld", (long long)*(const int64_t *)p); break;
        case TT_OPT_U64: tt_jw_printf(w, "%llu", (unsigned long long)*(const uint64_t *)p); break;
        case TT_OPT_F32: tt_jw_f32(w, *(const float *)p); break;
        case TT_OPT_F64: tt_jw_printf(w, "%.17g", *(const double *)p); break;
        case TT_OPT_CHOICE: tt_jw_printf(w, "\"%s\"", tt_option_choice(o, *(const int *)p, c, sizeof c)); break;
        case TT_OPT_SET: tt_jw_printf(w, "\"%s\"", tt_option_set_text(o, *(const int *)p, c, sizeof c)); break;
        case TT_OPT_TEXT: tt_jw_cstr(w, "null"); break;
        }
    }
    if (group == TT_OPT_MODEL) {
        const tt_model_config *m = src;
        tt_jw_printf(w, ",\"vocab\":%d", m->vocab);
        if (m->act) tt_jw_printf(w, ",\"act\":\"%s\"", tt_act_name(m->act));
        if (m->ln_eps > 0.0f) tt_jw_cstr(w, ",\"ln_eps\":"), tt_jw_f32(w, m->ln_eps);
    }
    tt_jw_raw(w, "}", 1);
}

static void config_json(tt_jw *w, const tt_model_config *c) { options_json(w, TT_OPT_MODEL, c); }
static void train_json(tt_jw *w, const tt_train_config *tc) { options_json(w, TT_OPT_TRAIN, tc); }

/* Strict parse of a config / train_config object: every option of the group
 * (under its name or an alias an older build wrote; options.h) and, for the
 * model, vocab; nothing else. An option marked may_be_absent that is missing
 * keeps the value `out` holds (the caller zero-fills: 0 is each such
 * option's default). */
#define VOCAB_BIT 63
#define ACT_BIT 62
#define EPS_BIT 61

static int parse_fields(const char *what, const char *text, tt_opt_where group, void *out, tt_status *st) {
    tt_json_doc d;
    tt_status js = {0};
    if (tt_json_parse(text, strlen(text), 256, &d, &js))
        return tt_fail(st, TT_EFORMAT, "checkpoint: metadata '%s' is not valid JSON: %s", what, js.msg);
    const tt_json_node *root = tt_json_root(&d);
    int rc = TT_OK;
    uint64_t seen = 0;
    if (root->type != TT_JOBJECT) {
        rc = tt_fail(st, TT_EFORMAT, "checkpoint: metadata '%s' is not a JSON object", what);
        goto out;
    }
    for (const tt_json_node *c = tt_json_first(&d, root); c; c = tt_json_sibling(&d, c)) {
        const tt_option *o = tt_option_find(c->key);
        int bit = -1;
        tt_opt_type type = TT_OPT_INT;
        size_t off = 0;
        const char *name = c->key;
        if (o && o->where == group) {
            bit = (int)(o - tt_option_at(0));
            type = o->type;
            off = o->off;
            name = o->name;
        } else if (group == TT_OPT_MODEL && strcmp(c->key, "vocab") == 0) {
            bit = VOCAB_BIT;
            off = offsetof(tt_model_config, vocab);
        } else if (group == TT_OPT_MODEL && strcmp(c->key, "ln_eps") == 0) {
            bit = EPS_BIT;
            type = TT_OPT_F32;
            off = offsetof(tt_model_config, ln_eps);
        } else if (group == TT_OPT_MODEL && strcmp(c->key, "act") == 0) {
            bit = ACT_BIT;
            if (seen & (1ull << bit)) goto twice;
            seen |= 1ull << bit;
            int *act = (int *)((char *)out + offsetof(tt_model_config, act));
            if (c->type == TT_JSTRING && !strcmp(c->str, tt_act_name(TT_ACT_GELU_TANH))) *act = TT_ACT_GELU_TANH;
            else if (c->type == TT_JSTRING && !strcmp(c->str, tt_act_name(TT_ACT_GELU))) *act = TT_ACT_GELU;
            else {
                rc = tt_fail(st, TT_EFORMAT, "checkpoint: metadata '%s': bad value for 'act'", what);
                goto out;
            }
            continue;
        }
        if (bit < 0) {
            rc = tt_fail(st, TT_EFORMAT, "checkpoint: metadata '%s' has unknown field '%.40s'", what, c->key);
            goto out;
        }
        if (seen & (1ull << bit)) {
        twice:
            rc = tt_fail(st, TT_EFORMAT, "checkpoint: metadata '%s' gives '%s' twice", what, name);
            goto out;
        }
        seen |= 1ull << bit;
        char *p = (char *)out + off;
        int bad = 0;
        switch (type) {
        case TT_OPT_INT: {
            int64_t v;
            bad = tt_json_get_i64(c, &v) || v < INT_MIN || v > INT_MAX;
            if (!bad) *(int *)p = (int)v;
            break;
        }
        case TT_OPT_I64: bad = tt_json_get_i64(c, (int64_t *)p); break;
        case TT_OPT_U64: bad = tt_json_get_u64(c, (uint64_t *)p); break;
        case TT_OPT_F32: bad = c->type != TT_JNUMBER || tt_json_parse_f32_text(c->str, c->len, (float *)p); break;
        case TT_OPT_CHOICE: {
            char buf[32];
            bad = 1;
            for (int i = 0; c->type == TT_JSTRING && i <= (int)o->hi; i++)
                if (strcmp(c->str, tt_option_choice(o, i, buf, sizeof buf)) == 0) *(int *)p = i, bad = 0;
            break;
        }
        case TT_OPT_SET: bad = c->type != TT_JSTRING || tt_option_set_parse(o, c->str, (int *)p); break;
        default: bad = 1; break;
        }
        if (bad) {
            rc = tt_fail(st, TT_EFORMAT, "checkpoint: metadata '%s': bad value for '%s'", what, name);
            goto out;
        }
    }
    for (int i = 0; i < tt_option_count(); i++)
        if (tt_option_at(i)->where == group && !(seen & (1ull << i)) && !tt_option_at(i)->may_be_absent) {
            rc = tt_fail(st, TT_EFORMAT, "checkpoint: metadata '%s' lacks field '%s'", what, tt_option_at(i)->name);
            goto out;
        }
    if (group == TT_OPT_MODEL && !(seen & (1ull << VOCAB_BIT)))
        rc = tt_fail(st, TT_EFORMAT, "checkpoint: metadata '%s' lacks field 'vocab'", what);
out:
    tt_json_free(&d);
    return rc;
}

/* ---------------- atomic write (fileio.h) ---------------- */

typedef int (*body_fn)(FILE *f, const char *path, const void *ctx, tt_status *st);
typedef struct {
    body_fn body;
    const char *path;
    const void *ctx;
} write_job;

static int job_body(FILE *f, const void *ctx, tt_status *st) {
    const write_job *j = ctx;
    return j->body(f, j->path, j->ctx, st);
}

static int atomic_write(const char *path, body_fn body, const void *ctx, tt_status *st) {
    write_job j = {body, path, ctx};
    return tt_write_atomic(path, job_body, &j, st);
}

/* ---------------- save ---------------- */

static int check_state(const tt_train_state *s, tt_status *st) {
    if (!tt_host_is_little_endian()) return tt_fail(st, TT_EUNSUP, "checkpoints need a little-endian host");
    if (!s || !s->params || !s->m || !s->v || !s->layout.t) return tt_fail(st, TT_EINVAL, "checkpoint: state is not allocated");
    TT_CHECK(tt_config_validate(&s->cfg, st));
    tt_layout want;
    TT_CHECK(tt_layout_build(&s->cfg, &want, st));
    int same = s->layout.n_tensors == want.n_tensors && s->layout.n_base == want.n_base && s->layout.total == want.total;
    tt_layout_free(&want);
    if (!same || s->layout.total != (size_t)tt_config_param_count(&s->cfg))
        return tt_fail(st, TT_EINVAL, "checkpoint: state layout does not match its config");
    return TT_OK;
}

static int save_body(FILE *f, const char *path, const void *ctx, tt_status *st) {
    const tt_train_state *s = ctx;
    const tt_layout *lo = &s->layout;
    tt_st_writer w;
    tt_st_writer_init(&w, path);
    tt_jw j;
    tt_jw_init(&j);
    char name[64], num[32];
    int rc = TT_OK;
    for (int g = 0; g < 3 && !rc; g++)
        for (int i = 0; i < lo->n_tensors && !rc; i++) {
            if (!in_group(lo, g, i)) continue;
            snprintf(name, sizeof name, "%s%s", group_prefix[g], lo->t[i].name);
            rc = tt_st_writer_add(&w, name, TT_ST_F32, lo->t[i].ndim, lo->t[i].shape, st);
        }
#define META(k, v) \
    if (!rc) rc = tt_st_writer_meta(&w, k, v, st)
    META("format", CK_FORMAT);
    META("version", CK_VERSION);
    config_json(&j, &s->cfg);
    META("config", j.buf ? j.buf : "");
    j.len = 0;
    train_json(&j, &s->tc);
    META("train_config", j.buf ? j.buf : "");
    snprintf(num, sizeof num, "%lld", (long long)s->step);
    META("step", num);
    snprintf(num, sizeof num, "%llu", (unsigned long long)s->tc.seed);
    META("seed", num);
    snprintf(num, sizeof num, "%llu", (unsigned long long)s->corpus_hash);
    META("corpus_hash", num);
    snprintf(num, sizeof num, "%llu", (unsigned long long)s->corpus_bytes);
    META("corpus_bytes", num);
    j.len = 0;
    tt_jw_raw(&j, "[", 1);
    for (int64_t i = 0; i < s->step; i++) {
        if (i) tt_jw_raw(&j, ",", 1);
        tt_jw_f32(&j, s->loss_hist[i]);
    }
    tt_jw_raw(&j, "]", 1);
    META("loss_history", j.buf ? j.buf : "");
    j.len = 0;
    tt_jw_raw(&j, "[", 1);
    for (int64_t i = 0; i < s->n_val; i++) {
        tt_jw_printf(&j, i ? ",[%lld," : "[%lld,", (long long)s->val_step[i]);
        tt_jw_f32(&j, s->val_loss[i]);
        tt_jw_raw(&j, "]", 1);
    }
    tt_jw_raw(&j, "]", 1);
    META("val_history", j.buf ? j.buf : "");
    META("best_val", tt_json_fmt_f32(num, s->best_val));
    snprintf(num, sizeof num, "%lld", (long long)s->best_val_step);
    META("best_val_step", num);
    if (s->tc.precision == TT_PRECISION_F16) { /* optional: the loss scaler (absent: its initial state) */
        META("loss_scale", tt_json_fmt_f32(num, s->loss_scale));
        snprintf(num, sizeof num, "%lld", (long long)s->scale_good);
        META("loss_scale_good", num);
        snprintf(num, sizeof num, "%lld", (long long)s->scale_skipped);
        META("loss_scale_skipped", num);
    }
    if (s->tok_kind != 0) { /* optional: a BPE model names its tokenizer (absent: byte) */
        META("tokenizer", "bpe");
        snprintf(num, sizeof num, "%016llx", (unsigned long long)s->tok_hash);
        META("tokenizer_hash", num);
        if (s->tok_per_byte > 0) {
            snprintf(num, sizeof num, "%.17g", s->tok_per_byte);
            META("val_tokens_per_byte", num);
        }
    }
    if (s->init_from[0]) { /* optional: a run started from other weights says which */
        META("init_from", s->init_from);
        snprintf(num, sizeof num, "%016llx", (unsigned long long)s->init_hash);
        META("init_from_hash", num);
    }
    if (s->target_step > 0) { /* --target-val reached (older files and runs without it lack these) */
        META("target_val", tt_json_fmt_f32(num, s->target_val));
        snprintf(num, sizeof num, "%lld", (long long)s->target_step);
        META("target_step", num);
        snprintf(num, sizeof num, "%.17g", s->target_s);
        META("target_s", num);
    }
#undef META
    if (!rc && j.oom) rc = tt_fail(st, TT_ENOMEM, "out of memory (checkpoint metadata)");
    tt_jw_free(&j);
    if (!rc) rc = tt_st_writer_begin(&w, f, st);
    const size_t mbytes = tt_layout_train_count(lo) * sizeof(float);
    if (!rc) rc = tt_st_writer_data(&w, s->params, lo->total * sizeof(float), st);
    if (!rc) rc = tt_st_writer_data(&w, s->m, mbytes, st);
    if (!rc) rc = tt_st_writer_data(&w, s->v, mbytes, st);
    if (!rc) rc = tt_st_writer_end(&w, st);
    tt_st_writer_free(&w);
    return rc;
}

int tt_checkpoint_save(const char *path, const tt_train_state *s, tt_status *st) {
    TT_CHECK(check_state(s, st));
    if (s->step < 0) return tt_fail(st, TT_EINVAL, "checkpoint: negative step");
    if (s->step > 0 && (!s->loss_hist || s->loss_cap < s->step))
        return tt_fail(st, TT_EINVAL, "checkpoint: loss history holds fewer than %lld entries", (long long)s->step);
    if (s->n_val < 0 || (s->n_val > 0 && (!s->val_step || !s->val_loss)))
        return tt_fail(st, TT_EINVAL, "checkpoint: validation history is inconsistent");
    return atomic_write(path, save_body, s, st);
}

/* ---------------- export (Hugging Face GPT-2 names, hf.c) ---------------- */

int tt_export_hf(const char *path, const tt_train_state *s, tt_status *st) {
    TT_CHECK(check_state(s, st));
    const float *w;
    float *owned;
    TT_CHECK(tt_hf_merged(s, &w, &owned, st));
    tt_model_config c = tt_lora_base_config(&s->cfg);
    tt_jw j;
    tt_jw_init(&j);
    config_json(&j, &c);
    int rc = j.oom ? tt_fail(st, TT_ENOMEM, "out of memory") : tt_hf_write_safetensors(path, &c, w, "", j.buf, st);
    tt_jw_free(&j);
    free(owned);
    return rc;
}

/* ---------------- load ---------------- */

static void state_empty(tt_train_state *s) {
    memset(s, 0, sizeof *s);
    s->best_val = INFINITY;
    s->best_val_step = -1;
}

static const char *need_meta(const tt_st_reader *r, const char *key, tt_status *st) {
    const char *v = tt_st_meta_get(r, key);
    if (!v) tt_fail(st, TT_EFORMAT, "checkpoint: metadata '%s' is missing", key);
    return v;
}

static int meta_i64(const tt_st_reader *r, const char *key, int64_t *out, tt_status *st) {
    const char *v = need_meta(r, key, st);
    if (!v) return TT_EFORMAT;
    if (tt_json_parse_i64(v, strlen(v), out))
        return tt_fail(st, TT_EFORMAT, "checkpoint: metadata '%s' is not an integer ('%.40s')", key, v);
    return TT_OK;
}

static int meta_u64(const tt_st_reader *r, const char *key, uint64_t *out, tt_status *st) {
    const char *v = need_meta(r, key, st);
    if (!v) return TT_EFORMAT;
    if (tt_json_parse_u64(v, strlen(v), out))
        return tt_fail(st, TT_EFORMAT, "checkpoint: metadata '%s' is not an unsigned integer ('%.40s')", key, v);
    return TT_OK;
}

/* A float inside a history array: a number, or one of the strings "nan", "inf", "-inf". */
static int hist_float(tt_json_event ev, const tt_json_reader *jr, float *out) {
    if (ev == TT_JSON_NUMBER) return tt_json_parse_f32_text(jr->tok, jr->tok_len, out);
    if (ev == TT_JSON_STRING) { /* exactly "nan", "inf" or "-inf" (raw == decoded: no escapes) */
        if ((jr->tok_len == 3 && (!memcmp(jr->tok, "nan", 3) || !memcmp(jr->tok, "inf", 3))) ||
            (jr->tok_len == 4 && !memcmp(jr->tok, "-inf", 4)))
            return tt_json_parse_f32_text(jr->tok, jr->tok_len, out);
        return 1;
    }
    return 1;
}

/* loss_history: a JSON array of floats. *out is malloc'd (free()). */
static int parse_loss_history(const char *text, float **out, int64_t *count, tt_status *st) {
    tt_json_reader jr;
    tt_status js = {0};
    tt_json_reader_init(&jr, text, strlen(text));
    float *a = NULL;
    int64_t n = 0, cap = 0;
    int rc = TT_OK;
    tt_json_event ev = tt_json_next(&jr, &js);
    if (ev != TT_JSON_ARR_BEGIN) goto bad;
    for (;;) {
        ev = tt_json_next(&jr, &js);
        if (ev == TT_JSON_ARR_END) break;
        float x;
        if (hist_float(ev, &jr, &x)) goto bad;
        if (n == cap) {
            int64_t nc = cap ? cap * 2 : 1024;
            float *p = realloc(a, (size_t)nc * sizeof *p);
            if (!p) { rc = tt_fail(st, TT_ENOMEM, "out of memory (loss history)"); goto fail; }
            a = p;
            cap = nc;
        }
        a[n++] = x;
    }
    if (tt_json_next(&jr, &js) != TT_JSON_END) goto bad;
    *out = a;
    *count = n;
    return TT_OK;
bad:
    rc = tt_fail(st, TT_EFORMAT, "checkpoint: metadata 'loss_history' is not a JSON array of numbers%s%s", js.msg[0] ? ": " : "", js.msg);
fail:
    free(a);
    return rc;
}

/* val_history: a JSON array of [step, loss] pairs. */
static int parse_val_history(const char *text, int64_t **steps, float **losses, int64_t *count, tt_status *st) {
    tt_json_reader jr;
    tt_status js = {0};
    tt_json_reader_init(&jr, text, strlen(text));
    int64_t *as = NULL;
    float *al = NULL;
    int64_t n = 0, cap = 0;
    int rc = TT_OK;
    if (tt_json_next(&jr, &js) != TT_JSON_ARR_BEGIN) goto bad;
    for (;;) {
        tt_json_event ev = tt_json_next(&jr, &js);
        if (ev == TT_JSON_ARR_END) break;
        if (ev != TT_JSON_ARR_BEGIN) goto bad;
        int64_t vs;
        float vl;
        if (tt_json_next(&jr, &js) != TT_JSON_NUMBER || tt_json_parse_i64(jr.tok, jr.tok_len, &vs)) goto bad;
        ev = tt_json_next(&jr, &js);
        if (hist_float(ev, &jr, &vl)) goto bad;
        if (tt_json_next(&jr, &js) != TT_JSON_ARR_END) goto bad;
        if (n == cap) {
            int64_t nc = cap ? cap * 2 : 64;
            int64_t *p = realloc(as, (size_t)nc * sizeof *p);
            if (!p) { rc = tt_fail(st, TT_ENOMEM, "out of memory (val history)"); goto fail; }
            as = p;
            float *q = realloc(al, (size_t)nc * sizeof *q);
            if (!q) { rc = tt_fail(st, TT_ENOMEM, "out of memory (val history)"); goto fail; }
            al = q;
            cap = nc;
        }
        as[n] = vs;
        al[n] = vl;
        n++;
    }
    if (tt_json_next(&jr, &js) != TT_JSON_END) goto bad;
    *steps = as;
    *losses = al;
    *count = n;
    return TT_OK;
bad:
    rc = tt_fail(st, TT_EFORMAT, "checkpoint: metadata 'val_history' is not a JSON array of [step, loss] pairs%s%s",
                 js.msg[0] ? ": " : "", js.msg);
fail:
    free(as);
    free(al);
    return rc;
}

/* The moments an older build wrote for a frozen base tensor of a LoRA
 * model: read in pieces (no allocation the size of the tensor), all zero. */
static int zero_moments(const tt_st_reader *r, const tt_st_tensor *t, const char *prefix, const char *name, tt_status *st) {
    uint32_t buf[1024];
    const uint64_t n = t->end - t->begin;
    for (uint64_t off = 0; off < n; off += sizeof buf) {
        const size_t k = n - off < sizeof buf ? (size_t)(n - off) : sizeof buf;
        TT_CHECK(tt_st_read(r, t, off, buf, k, st));
        for (size_t j = 0; j < k / 4; j++)
            if (buf[j] & 0x7fffffffu)
                return tt_fail(st, TT_EFORMAT, "checkpoint: tensor %s%s of the frozen base holds non-zero moments", prefix, name);
    }
    return TT_OK;
}

static int load_reader(const tt_st_reader *r, tt_train_state *s, tt_status *st) {
    if (!tt_host_is_little_endian()) return tt_fail(st, TT_EUNSUP, "checkpoints need a little-endian host");
    const char *fmt = tt_st_meta_get(r, "format");
    if (!fmt) return tt_fail(st, TT_EFORMAT, "not a tinytrain checkpoint (no 'format' metadata)");
    if (strcmp(fmt, CK_FORMAT) != 0) {
        if (strcmp(fmt, "pt") == 0 && tt_st_meta_get(r, "tinytrain_config"))
            return tt_fail(st, TT_EFORMAT, "this is a weights-only export, not a training checkpoint");
        return tt_fail(st, TT_EFORMAT, "not a tinytrain checkpoint (format '%.40s')", fmt);
    }
    const char *ver = need_meta(r, "version", st);
    if (!ver) return TT_EFORMAT;
    if (strcmp(ver, CK_VERSION) != 0)
        return tt_fail(st, TT_EFORMAT, "unsupported checkpoint version '%.20s' (this build reads version %s)", ver, CK_VERSION);

    tt_model_config cfg;
    tt_train_config tc;
    memset(&cfg, 0, sizeof cfg);
    memset(&tc, 0, sizeof tc);
    const char *v;
    tt_status cs = {0};
    if (!(v = need_meta(r, "config", st))) return TT_EFORMAT;
    TT_CHECK(parse_fields("config", v, TT_OPT_MODEL, &cfg, st));
    if (cfg.lora_rank == 0) cfg.lora_targets = 0, cfg.lora_alpha = 0.0f; /* LoRA off: nothing of it kept */
    if (tt_config_validate(&cfg, &cs)) return tt_fail(st, TT_EFORMAT, "checkpoint: invalid config: %s", cs.msg);
    if (!(v = need_meta(r, "train_config", st))) return TT_EFORMAT;
    TT_CHECK(parse_fields("train_config", v, TT_OPT_TRAIN, &tc, st));
    if (tt_train_config_validate(&tc, &cs)) return tt_fail(st, TT_EFORMAT, "checkpoint: invalid train_config: %s", cs.msg);

    int64_t step, best_step;
    uint64_t seed, chash, cbytes;
    TT_CHECK(meta_i64(r, "step", &step, st));
    if (step < 0) return tt_fail(st, TT_EFORMAT, "checkpoint: negative step %lld", (long long)step);
    TT_CHECK(meta_u64(r, "seed", &seed, st));
    if (seed != tc.seed)
        return tt_fail(st, TT_EFORMAT, "checkpoint: seed %llu disagrees with train_config seed %llu", (unsigned long long)seed,
                       (unsigned long long)tc.seed);
    TT_CHECK(meta_u64(r, "corpus_hash", &chash, st));
    TT_CHECK(meta_u64(r, "corpus_bytes", &cbytes, st));
    TT_CHECK(meta_i64(r, "best_val_step", &best_step, st));
    if (best_step < -1 || best_step > step)
        return tt_fail(st, TT_EFORMAT, "checkpoint: best_val_step %lld outside [-1, step %lld]", (long long)best_step, (long long)step);
    float best_val;
    if (!(v = need_meta(r, "best_val", st))) return TT_EFORMAT;
    if (tt_json_parse_f32_text(v, strlen(v), &best_val)) return tt_fail(st, TT_EFORMAT, "checkpoint: metadata 'best_val' is not a number");
    int tok_kind = 0;
    uint64_t tok_hash = 0;
    double tok_per_byte = 0.0;
    if ((v = tt_st_meta_get(r, "tokenizer"))) { /* may be absent: byte */
        const char *h = tt_st_meta_get(r, "tokenizer_hash");
        char *end = NULL;
        if (strcmp(v, "bpe") == 0 && h && strlen(h) == 16) tok_hash = strtoull(h, &end, 16);
        if (strcmp(v, "bpe") != 0 || !h || strlen(h) != 16 || !end || *end)
            return tt_fail(st, TT_EFORMAT, "checkpoint: metadata tokenizer / tokenizer_hash are not \"bpe\" and 16 hex digits");
        tok_kind = 1;
        if ((v = tt_st_meta_get(r, "val_tokens_per_byte")) && /* may be absent */
            (tt_json_parse_f64(v, strlen(v), &tok_per_byte) || !(tok_per_byte > 0 && tok_per_byte <= 1e6)))
            return tt_fail(st, TT_EFORMAT, "checkpoint: metadata 'val_tokens_per_byte' is not a positive number");
    }
    float target_val = 0;
    int64_t target_step = 0;
    double target_s = 0;
    float loss_scale = TT_LOSS_SCALE_INIT;
    int64_t scale_good = 0, scale_skipped = 0;
    if ((v = tt_st_meta_get(r, "loss_scale"))) { /* may be absent */
        int bad = tt_json_parse_f32_text(v, strlen(v), &loss_scale) || !(loss_scale > 0) || !isfinite(loss_scale);
        if (!bad) TT_CHECK(meta_i64(r, "loss_scale_good", &scale_good, st));
        if (bad || scale_good < 0 || scale_good >= TT_LOSS_SCALE_INTERVAL)
            return tt_fail(st, TT_EFORMAT, "checkpoint: metadata loss_scale / loss_scale_good are not a loss "
                                           "scaler's state (a finite scale > 0, 0..%d clean steps)",
                           TT_LOSS_SCALE_INTERVAL - 1);
        if (tt_st_meta_get(r, "loss_scale_skipped")) { /* may be absent (older checkpoints: none counted) */
            TT_CHECK(meta_i64(r, "loss_scale_skipped", &scale_skipped, st));
            if (scale_skipped < 0 || scale_skipped > TT_LOSS_SCALE_MAX_SKIPPED || scale_skipped > step)
                return tt_fail(st, TT_EFORMAT, "checkpoint: metadata loss_scale_skipped %lld is not 0..step",
                               (long long)scale_skipped);
        }
    }
    if (tt_st_meta_get(r, "target_step")) { /* may be absent */
        TT_CHECK(meta_i64(r, "target_step", &target_step, st));
        if (!(v = need_meta(r, "target_val", st))) return TT_EFORMAT;
        int bad = tt_json_parse_f32_text(v, strlen(v), &target_val) || !(target_val > 0);
        if (!(v = need_meta(r, "target_s", st))) return TT_EFORMAT;
        bad |= tt_json_parse_f64(v, strlen(v), &target_s) || !(target_s >= 0);
        if (bad || target_step < 1 || target_step > step)
            return tt_fail(st, TT_EFORMAT, "checkpoint: metadata target_val / target_step / target_s are not a reached "
                                           "target (step in [1, %lld])", (long long)step);
    }

    /* tensors: every tensor of each group (in_group), F32, exact shape, nothing
     * else; and, as older builds wrote a LoRA model, optionally the moments of
     * frozen base tensors, which must be all zero (a frozen tensor has none) */
    tt_layout lo;
    tt_status ls = {0};
    if (tt_layout_build(&cfg, &lo, &ls)) return tt_fail(st, ls.code, "checkpoint: %s", ls.msg);
    const tt_st_tensor **found = calloc((size_t)(3 * lo.n_tensors), sizeof *found);
    int rc = found ? TT_OK : tt_fail(st, TT_ENOMEM, "out of memory");
    int n_found = 0;
    char name[64];
    for (int g = 0; g < 3 && !rc; g++)
        for (int i = 0; i < lo.n_tensors && !rc; i++) {
            const tt_tensor_info *ti = &lo.t[i];
            snprintf(name, sizeof name, "%s%s", group_prefix[g], ti->name);
            const tt_st_tensor *t = tt_st_find(r, name);
            if (!t && !in_group(&lo, g, i)) continue;
            if (!t) rc = tt_fail(st, TT_EFORMAT, "checkpoint: tensor '%s' is missing", name);
            else if (t->dtype != TT_ST_F32)
                rc = tt_fail(st, TT_EFORMAT, "checkpoint: tensor '%s' has dtype %s (expected F32)", name, tt_st_dtype_name(t->dtype));
            else if (t->ndim != ti->ndim || t->shape[0] != ti->shape[0] || (ti->ndim == 2 && t->shape[1] != ti->shape[1])) {
                char got[96] = "", want[48];
                size_t k = 0;
                for (int d = 0; d < t->ndim && k < sizeof got - 24; d++)
                    k += (size_t)snprintf(got + k, sizeof got - k, d ? ", %lld" : "%lld", (long long)t->shape[d]);
                if (ti->ndim == 2) snprintf(want, sizeof want, "%lld, %lld", (long long)ti->shape[0], (long long)ti->shape[1]);
                else snprintf(want, sizeof want, "%lld", (long long)ti->shape[0]);
                rc = tt_fail(st, TT_EFORMAT, "checkpoint: tensor '%s' has shape (%s), config needs (%s)", name, got, want);
            }
            found[g * lo.n_tensors + i] = t;
            n_found++;
        }
    if (!rc && r->n_tensors != n_found) {
        /* all expected present and names unique: anything else is extra */
        char *used = calloc((size_t)r->n_tensors, 1);
        if (!used) rc = tt_fail(st, TT_ENOMEM, "out of memory");
        else {
            for (int k = 0; k < 3 * lo.n_tensors; k++)
                if (found[k]) used[found[k] - r->t] = 1;
            for (int k = 0; k < r->n_tensors; k++)
                if (!used[k]) {
                    rc = tt_fail(st, TT_EFORMAT, "checkpoint: unexpected tensor '%.80s'", r->t[k].name);
                    break;
                }
            free(used);
        }
    }
    if (rc) {
        free(found);
        tt_layout_free(&lo);
        return rc;
    }

    /* histories */
    float *loss = NULL, *vloss = NULL;
    int64_t nloss = 0, nval = 0, *vstep = NULL;
    if (!(v = need_meta(r, "loss_history", st))) rc = TT_EFORMAT;
    if (!rc) rc = parse_loss_history(v, &loss, &nloss, st);
    if (!rc && nloss != step)
        rc = tt_fail(st, TT_EFORMAT, "checkpoint: loss_history has %lld entries but step is %lld", (long long)nloss, (long long)step);
    if (!rc && !(v = need_meta(r, "val_history", st))) rc = TT_EFORMAT;
    if (!rc) rc = parse_val_history(v, &vstep, &vloss, &nval, st);
    for (int64_t i = 0; !rc && i < nval; i++)
        if (vstep[i] < 0 || vstep[i] > step || (i && vstep[i] < vstep[i - 1]))
            rc = tt_fail(st, TT_EFORMAT, "checkpoint: val_history step %lld out of order or outside [0, %lld]", (long long)vstep[i],
                         (long long)step);

    /* allocate (bounded: the tensors were checked against the input size) and copy */
    if (!rc) rc = tt_state_alloc(s, &cfg, st);
    if (rc) {
        free(loss);
        free(vstep);
        free(vloss);
        free(found);
        tt_layout_free(&lo);
        state_empty(s);
        return rc;
    }
    s->tc = tc;
    s->step = step;
    s->loss_hist = loss;
    s->loss_cap = nloss;
    s->n_val = s->val_cap = nval;
    s->val_step = vstep;
    s->val_loss = vloss;
    s->best_val = best_val;
    s->best_val_step = best_step;
    s->target_val = target_val;
    s->target_step = target_step;
    s->target_s = target_s;
    s->loss_scale = loss_scale;
    s->scale_good = scale_good;
    s->scale_skipped = scale_skipped;
    s->corpus_hash = chash;
    s->corpus_bytes = cbytes;
    s->tok_kind = tok_kind;
    s->tok_hash = tok_hash;
    s->tok_per_byte = tok_per_byte;
    if ((v = tt_st_meta_get(r, "init_from")) && (size_t)snprintf(s->init_from, sizeof s->init_from, "%s", v) < sizeof s->init_from) {
        const char *h = tt_st_meta_get(r, "init_from_hash");
        s->init_hash = h ? strtoull(h, NULL, 16) : 0;
    } else {
        s->init_from[0] = 0;
    }
    /* m, v hold the trainable range only (train.h): element k of the layout at k - t0 */
    const size_t t0 = tt_layout_train0(&lo);
    float *dst[3] = {s->params, s->m, s->v};
#define AT(g, i) (dst[g] + (lo.t[i].offset - ((g) ? t0 : 0)))
    for (int g = 0; g < 3 && !rc; g++)
        for (int i = 0; i < lo.n_tensors && !rc; i++) {
            const tt_st_tensor *t = found[g * lo.n_tensors + i];
            if (in_group(&lo, g, i)) rc = tt_st_read(r, t, 0, AT(g, i), lo.t[i].numel * sizeof(float), st);
            else if (t) rc = zero_moments(r, t, group_prefix[g], lo.t[i].name, st);
        }
    /* weights and moments must be finite: a NaN or Inf would train, sample
     * and evaluate to garbage without any other error */
    for (int g = 0; g < 3 && !rc; g++)
        for (int i = 0; i < lo.n_tensors && !rc; i++) {
            if (!in_group(&lo, g, i)) continue;
            const float *x = AT(g, i);
            for (size_t k = 0; k < lo.t[i].numel; k++)
                if (!isfinite(x[k])) {
                    rc = tt_fail(st, TT_EFORMAT, "tensor %s%s holds a non-finite value (%s at element %zu)",
                                 group_prefix[g], lo.t[i].name, isnan(x[k]) ? "NaN" : "Inf", k);
                    break;
                }
        }
#undef AT
    free(found);
    tt_layout_free(&lo);
    if (rc) tt_state_free(s);
    return rc;
}

/* Messages quote names from the file: keep them to one printable line. */
static int finish(int rc, tt_train_state *s, const char *path, tt_status *st) {
    if (!rc) return TT_OK;
    if (st) {
        if (path && !strstr(st->msg, path)) {
            char tmp[sizeof st->msg];
            snprintf(tmp, sizeof tmp, "%s", st->msg);
            snprintf(st->msg, sizeof st->msg, "'%.200s': %.300s", path, tmp);
        }
        for (char *p = st->msg; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
        if (!st->msg[0]) snprintf(st->msg, sizeof st->msg, "checkpoint load failed");
        st->code = rc;
    }
    state_empty(s);
    return rc;
}

int tt_checkpoint_load_mem(const uint8_t *buf, size_t len, tt_train_state *s, tt_status *st) {
    state_empty(s);
    tt_st_reader r;
    int rc = tt_st_open_mem(&r, buf, len, st);
    if (!rc) {
        rc = load_reader(&r, s, st);
        tt_st_close(&r);
    }
    return finish(rc, s, NULL, st);
}

int tt_checkpoint_load(const char *path, tt_train_state *s, tt_status *st) {
    state_empty(s);
    if (!path || !*path) return finish(tt_fail(st, TT_EINVAL, "no checkpoint path given"), s, NULL, st);
    tt_st_reader r;
    int rc = tt_st_open_file(&r, path, st);
    if (!rc) {
        rc = load_reader(&r, s, st);
        tt_st_close(&r);
    }
    return finish(rc, s, path, st);
}

int tt_checkpoint_probe(const char *path) {
    struct stat sb;
    if (lstat(path, &sb) != 0) return TT_FILE_ABSENT;
    tt_st_reader r;
    tt_status st;
    tt_status_clear(&st);
    if (tt_st_open_file(&r, path, &st)) return TT_FILE_OTHER;
    const char *fmt = tt_st_meta_get(&r, "format");
    int kind = fmt && strcmp(fmt, CK_FORMAT) == 0 ? TT_FILE_CHECKPOINT : TT_FILE_OTHER;
    tt_st_close(&r);
    return kind;
}
