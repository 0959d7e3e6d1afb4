/* web_api.c — the web app's C API (see web_api.h): options parsing, corpus,
 * training-state lifetime, split-phase steps, evaluation, checkpoints to and
 * from memory, token-by-token sampling and JSON read-outs for the page. It
 * owns no model code: everything numeric goes through train.h / backend.h /
 * data.h / checkpoint.h / sample.h. */
#include "web_api.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __EMSCRIPTEN__
#include <emscripten.h>
#else
#define EMSCRIPTEN_KEEPALIVE
#endif

#include "backend.h"
#include "checkpoint.h"
#include "config.h"
#include "data.h"
#include "pool.h"
#include "simd.h"
#include "train.h"
#include "trainer.h"
#include "web_sample.h"

enum { BE_CPU = 0, BE_WEBGPU = 1 };

struct tt_web {
    tt_status st;
    /* options */
    char preset[32];
    tt_model_config cfg;
    tt_train_config tc;
    int backend_kind;
    int threads;
    int min_lr_set;
    int pipeline; /* 1: submit step k+1 before collecting step k where the backend allows */
    /* corpus */
    tt_corpus corpus;
    int have_corpus;
    /* training */
    tt_train_state s;
    int have_state;
    tt_backend *be;
    uint8_t *tokens; /* (2, accum, B, T+1): step k uses slot k & 1 */
    uint8_t *valtok; /* (B, T+1) */
    int pending;     /* steps submitted and not collected: 0, 1 or 2 (pipelined) */
    float lr_q[2];   /* lr of the steps in flight, slot k & 1 */
    int64_t n_pipelined; /* steps of this run collected through step_result_prev */
    float last_loss, last_norm, last_lr, last_val;
    /* outputs */
    uint8_t *ckpt;
    size_t ckpt_len;
    char *json;
    size_t json_len, json_cap;
    char info[256];
    /* sampling */
    tt_web_sampler *sampler;
};

static int werr(tt_web *w, int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    w->st.code = code;
    vsnprintf(w->st.msg, sizeof w->st.msg, fmt, ap);
    va_end(ap);
    return code;
}

EMSCRIPTEN_KEEPALIVE tt_web *tt_web_new(void) {
    tt_web *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    const tt_preset *p = tt_preset_find("tiny");
    snprintf(w->preset, sizeof w->preset, "%s", p->name);
    w->cfg = p->cfg;
    tt_train_config_default(&w->tc, 200);
    w->threads = 0;
    w->pipeline = 1;
    w->last_loss = w->last_norm = w->last_lr = w->last_val = NAN;
    w->s.best_val = INFINITY;
    w->s.best_val_step = -1;
    return w;
}

static void drop_run(tt_web *w) {
    if (w->sampler) tt_web_sampler_free(w->sampler);
    w->sampler = NULL;
    tt_backend_destroy(w->be);
    w->be = NULL;
    if (w->have_state) tt_state_free(&w->s);
    w->have_state = 0;
    free(w->tokens);
    free(w->valtok);
    w->tokens = w->valtok = NULL;
    w->pending = 0;
    w->n_pipelined = 0;
    w->last_loss = w->last_norm = w->last_lr = w->last_val = NAN;
}

EMSCRIPTEN_KEEPALIVE void tt_web_free(tt_web *w) {
    if (!w) return;
    drop_run(w);
    if (w->have_corpus) tt_corpus_free(&w->corpus);
    free(w->ckpt);
    free(w->json);
    free(w);
}

EMSCRIPTEN_KEEPALIVE const char *tt_web_error(tt_web *w) { return w ? w->st.msg : "out of memory"; }

/* ---- options --------------------------------------------------------------- */

static int parse_num(tt_web *w, const char *key, const char *val, double lo, double hi, double *out) {
    char *end = NULL;
    double d = strtod(val, &end);
    if (!*val || (end && *end) || !isfinite(d)) return werr(w, TT_EINVAL, "%s: not a finite number: '%s'", key, val);
    if (d < lo || d > hi) return werr(w, TT_EINVAL, "%s must be in [%g, %g] (got %s)", key, lo, hi, val);
    *out = d;
    return TT_OK;
}

static int parse_int(tt_web *w, const char *key, const char *val, double lo, double hi, double *out) {
    TT_CHECK(parse_num(w, key, val, lo, hi, out));
    if (*out != floor(*out)) return werr(w, TT_EINVAL, "%s must be an integer (got %s)", key, val);
    return TT_OK;
}

/* Applies one key=value; pass 0 handles preset/steps (they reset defaults),
 * pass 1 the rest. */
static int apply_opt(tt_web *w, int pass, const char *key, const char *val) {
    double d = 0;
    if (!strcmp(key, "preset")) {
        if (pass) return TT_OK;
        const tt_preset *p = tt_preset_find(val);
        if (!p) return werr(w, TT_EINVAL, "unknown preset '%s'", val);
        snprintf(w->preset, sizeof w->preset, "%s", p->name);
        w->cfg = p->cfg;
        return TT_OK;
    }
    if (!strcmp(key, "steps")) {
        if (pass) return TT_OK;
        TT_CHECK(parse_int(w, key, val, 1, 1e12, &d));
        tt_train_config_default(&w->tc, (int64_t)d);
        return TT_OK;
    }
    if (!pass) return TT_OK;
    if (!strcmp(key, "layers")) { TT_CHECK(parse_int(w, key, val, 1, 256, &d)); w->cfg.n_layer = (int)d; }
    else if (!strcmp(key, "d_model")) { TT_CHECK(parse_int(w, key, val, 1, 16384, &d)); w->cfg.d_model = (int)d; }
    else if (!strcmp(key, "heads")) { TT_CHECK(parse_int(w, key, val, 1, 16384, &d)); w->cfg.n_head = (int)d; }
    else if (!strcmp(key, "ctx")) { TT_CHECK(parse_int(w, key, val, 1, 65536, &d)); w->cfg.ctx = (int)d; }
    else if (!strcmp(key, "batch")) { TT_CHECK(parse_int(w, key, val, 1, 65536, &d)); w->cfg.batch = (int)d; }
    else if (!strcmp(key, "lr")) {
        /* as the CLI: the cosine floor follows lr (lr/10) unless min_lr is given */
        TT_CHECK(parse_num(w, key, val, 0, 10, &d));
        w->tc.lr = (float)d;
        if (!w->min_lr_set) w->tc.min_lr = (float)d / 10.0f;
    } else if (!strcmp(key, "min_lr")) {
        TT_CHECK(parse_num(w, key, val, 0, 10, &d));
        w->tc.min_lr = (float)d;
        w->min_lr_set = 1;
    }
    else if (!strcmp(key, "warmup")) { TT_CHECK(parse_int(w, key, val, 0, 1e12, &d)); w->tc.warmup = (int64_t)d; }
    else if (!strcmp(key, "wd")) { TT_CHECK(parse_num(w, key, val, 0, 10, &d)); w->tc.weight_decay = (float)d; }
    else if (!strcmp(key, "clip")) { TT_CHECK(parse_num(w, key, val, 0, 1e9, &d)); w->tc.clip = (float)d; }
    else if (!strcmp(key, "accum")) { TT_CHECK(parse_int(w, key, val, 1, 4096, &d)); w->tc.accum = (int)d; }
    else if (!strcmp(key, "seed")) { TT_CHECK(parse_int(w, key, val, 0, 9007199254740991.0, &d)); w->tc.seed = (uint64_t)d; }
    else if (!strcmp(key, "eval_every")) { TT_CHECK(parse_int(w, key, val, 0, 1e12, &d)); w->tc.eval_every = (int64_t)d; }
    else if (!strcmp(key, "eval_batches")) { TT_CHECK(parse_int(w, key, val, 1, 4096, &d)); w->tc.eval_batches = (int)d; }
    else if (!strcmp(key, "threads")) { TT_CHECK(parse_int(w, key, val, 0, 1024, &d)); w->threads = (int)d; }
    else if (!strcmp(key, "pipeline")) { TT_CHECK(parse_int(w, key, val, 0, 1, &d)); w->pipeline = (int)d; }
    else if (!strcmp(key, "sched")) {
        if (!strcmp(val, "cosine")) w->tc.sched = TT_SCHED_COSINE;
        else if (!strcmp(val, "constant")) w->tc.sched = TT_SCHED_CONSTANT;
        else return werr(w, TT_EINVAL, "sched must be cosine or constant (got '%s')", val);
    } else if (!strcmp(key, "backend")) {
        if (!strcmp(val, "cpu") || !strcmp(val, "wasm")) w->backend_kind = BE_CPU;
        else if (!strcmp(val, "webgpu")) w->backend_kind = BE_WEBGPU;
        else return werr(w, TT_EINVAL, "backend must be cpu or webgpu (got '%s')", val);
    } else return werr(w, TT_EINVAL, "unknown option '%s'", key);
    return TT_OK;
}

EMSCRIPTEN_KEEPALIVE int tt_web_options(tt_web *w, const char *opts) {
    tt_status_clear(&w->st);
    w->min_lr_set = 0;
    w->pipeline = 1;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1 && opts && strstr(opts, "min_lr=")) w->min_lr_set = 1;
        const char *p = opts ? opts : "";
        while (*p) {
            while (*p == ' ' || *p == '\t' || *p == '\n') p++;
            if (!*p) break;
            const char *e = p;
            while (*e && *e != ' ' && *e != '\t' && *e != '\n') e++;
            char tok[160];
            size_t n = (size_t)(e - p);
            if (n >= sizeof tok) return werr(w, TT_EINVAL, "option too long");
            memcpy(tok, p, n);
            tok[n] = 0;
            char *eq = strchr(tok, '=');
            if (!eq) return werr(w, TT_EINVAL, "option '%s' is not key=value", tok);
            *eq = 0;
            TT_CHECK(apply_opt(w, pass, tok, eq + 1));
            p = e;
        }
    }
    TT_CHECK(tt_config_validate(&w->cfg, &w->st));
    TT_CHECK(tt_train_config_validate(&w->tc, &w->st));
    return TT_OK;
}

/* ---- corpus ------------------------------------------------------------------ */

EMSCRIPTEN_KEEPALIVE int tt_web_corpus(tt_web *w, const uint8_t *bytes, size_t n) {
    tt_status_clear(&w->st);
    tt_corpus c;
    memset(&c, 0, sizeof c);
    TT_CHECK(tt_corpus_from_memory(bytes, n, w->cfg.ctx, &c, &w->st));
    if (w->have_corpus) tt_corpus_free(&w->corpus);
    w->corpus = c;
    w->have_corpus = 1;
    return TT_OK;
}

/* ---- run lifetime -------------------------------------------------------------- */

static int make_backend(tt_web *w) {
    const tt_model_config *cfg = &w->s.cfg;
    tt_backend_opts bo = {.threads = w->threads};
    int rc = tt_backend_create(w->backend_kind == BE_WEBGPU ? "webgpu" : "cpu", cfg, &bo, &w->be, NULL, 0, &w->st);
    if (rc) return rc;
    TT_CHECK(w->be->vt->set_state(w->be, w->s.params, w->s.m, w->s.v, &w->st));
    size_t row = (size_t)cfg->ctx + 1;
    w->tokens = malloc(2 * (size_t)w->s.tc.accum * (size_t)cfg->batch * row);
    w->valtok = malloc((size_t)cfg->batch * row);
    if (!w->tokens || !w->valtok) return werr(w, TT_ENOMEM, "out of memory (token buffers)");
    snprintf(w->info, sizeof w->info, "%s", w->be->desc.device);
    return TT_OK;
}

static int need_corpus(tt_web *w, int ctx) {
    if (!w->have_corpus) return werr(w, TT_EINVAL, "no corpus loaded");
    /* both splits must hold more than ctx+1 bytes */
    if (w->corpus.n_train <= (size_t)ctx + 1 || w->corpus.n - w->corpus.n_train <= (size_t)ctx + 1)
        return werr(w, TT_EINVAL, "corpus too short for ctx %d: %zu bytes (each split needs more than %d)", ctx, w->corpus.n, ctx + 1);
    return TT_OK;
}

EMSCRIPTEN_KEEPALIVE int tt_web_init(tt_web *w) {
    tt_status_clear(&w->st);
    drop_run(w);
    TT_CHECK(need_corpus(w, w->cfg.ctx));
    int rc = tt_state_init(&w->s, &w->cfg, &w->tc, &w->st);
    if (rc) return rc;
    w->have_state = 1;
    w->s.corpus_hash = w->corpus.hash;
    w->s.corpus_bytes = w->corpus.n;
    rc = make_backend(w);
    if (rc) {
        tt_status keep = w->st;
        drop_run(w);
        w->st = keep;
    }
    return rc;
}

EMSCRIPTEN_KEEPALIVE int tt_web_load(tt_web *w, const uint8_t *bytes, size_t n, int force) {
    tt_status_clear(&w->st);
    tt_train_state s;
    memset(&s, 0, sizeof s);
    TT_CHECK(tt_checkpoint_load_mem(bytes, n, &s, &w->st));
    if (w->have_corpus && !force && (s.corpus_hash != w->corpus.hash || s.corpus_bytes != w->corpus.n)) {
        tt_state_free(&s);
        return werr(w, TT_EMISMATCH,
                    "checkpoint was trained on another corpus (%llu bytes, hash %016llx); this one is %zu bytes",
                    (unsigned long long)s.corpus_bytes, (unsigned long long)s.corpus_hash, w->corpus.n);
    }
    int rc = w->have_corpus ? TT_OK : werr(w, TT_EINVAL, "no corpus loaded");
    if (!rc) rc = need_corpus(w, s.cfg.ctx);
    if (rc) {
        tt_state_free(&s);
        return rc;
    }
    drop_run(w);
    w->s = s;
    w->have_state = 1;
    w->cfg = s.cfg;
    w->tc = s.tc;
    for (int i = 0; i < tt_n_presets; i++)
        if (!memcmp(&tt_presets[i].cfg, &s.cfg, sizeof s.cfg)) snprintf(w->preset, sizeof w->preset, "%s", tt_presets[i].name);
    if (s.step > 0) w->last_loss = s.loss_hist[s.step - 1];
    if (s.n_val > 0) w->last_val = s.val_loss[s.n_val - 1];
    rc = make_backend(w);
    if (rc) {
        tt_status keep = w->st;
        drop_run(w);
        w->st = keep;
    }
    return rc;
}

EMSCRIPTEN_KEEPALIVE int tt_web_set_steps(tt_web *w, double total) {
    tt_status_clear(&w->st);
    if (!w->have_state) return werr(w, TT_EINVAL, "no training run");
    int64_t done = w->s.step + w->pending; /* steps in flight count as done */
    if (!(total >= (double)done && total <= 1e12)) return werr(w, TT_EINVAL, "steps must be at least the steps done (%lld)", (long long)done);
    w->s.tc.steps = (int64_t)total;
    w->tc.steps = w->s.tc.steps;
    return TT_OK;
}

/* ---- steps ---------------------------------------------------------------------- */

/* Pipelining, as tt_train_run (src/train.c): with a backend that has
 * step_result_prev (WebGPU), step k+1 may be submitted while step k is in
 * flight, then collect() reads step k's loss (step_result_prev) while k+1
 * computes. Never across a point that needs the weights after step k: the
 * last step or an eval (saves, pauses, stops and sampling are the Worker's:
 * it collects every step in flight first, and save/eval/sample refuse while
 * one is). Step k's batch, lr and bias corrections depend on k only, so the
 * losses, weights and checkpoints are those of the one-at-a-time loop.
 * Option pipeline=0 turns it off; the CPU backend never pipelines. */
static int can_submit_ahead(const tt_web *w) {
    if (!w->have_state || !w->be || w->pending != 1 || !w->pipeline || !w->be->vt->step_result_prev) return 0;
    const tt_train_config *tc = &w->s.tc;
    int64_t after = w->s.step + 1; /* steps done once the step in flight is collected */
    if (after >= tc->steps) return 0;
    if (tc->eval_every > 0 && after % tc->eval_every == 0) return 0;
    return 1;
}

EMSCRIPTEN_KEEPALIVE int tt_web_can_submit_ahead(tt_web *w) { return can_submit_ahead(w); }
EMSCRIPTEN_KEEPALIVE int tt_web_in_flight(tt_web *w) { return w->pending; }
EMSCRIPTEN_KEEPALIVE double tt_web_pipelined(tt_web *w) { return (double)w->n_pipelined; }

EMSCRIPTEN_KEEPALIVE int tt_web_submit(tt_web *w) {
    tt_status_clear(&w->st);
    if (!w->have_state || !w->be) return werr(w, TT_EINVAL, "no training run");
    if (w->pending && !can_submit_ahead(w)) return werr(w, TT_EINVAL, "a step is already in flight");
    tt_train_state *s = &w->s;
    const tt_train_config *tc = &s->tc;
    int B = s->cfg.batch, T = s->cfg.ctx;
    int64_t step = s->step + w->pending;
    /* two token slots: the step in flight keeps its batch while the next is sampled */
    size_t per_step = (size_t)tc->accum * (size_t)B * (size_t)(T + 1);
    uint8_t *tok = w->tokens + (size_t)(step & 1) * per_step;
    tt_step_tokens(&w->corpus, tc, step, B, T, tok);
    tt_optim_args o = tt_optim_args_at(tc, step);
    TT_CHECK(w->be->vt->step(w->be, tok, tc->accum, &o, &w->st));
    w->lr_q[step & 1] = o.lr;
    w->pending++;
    return TT_OK;
}

/* Collects the oldest step in flight: step_result_prev when a newer one was
 * submitted after it, step_result otherwise. */
EMSCRIPTEN_KEEPALIVE int tt_web_collect(tt_web *w) {
    tt_status_clear(&w->st);
    if (!w->pending) return werr(w, TT_EINVAL, "no step in flight");
    float loss = NAN, norm = NAN;
    int two = w->pending == 2;
    int64_t k = w->s.step;
    int rc = two ? w->be->vt->step_result_prev(w->be, &loss, &norm, &w->st)
                 : w->be->vt->step_result(w->be, &loss, &norm, &w->st);
    if (rc) {
        w->pending = 0;
        return rc;
    }
    if (!isfinite(loss)) {
        w->pending = 0;
        return werr(w, TT_EINVAL, "loss is not finite at step %lld (lr too high?)", (long long)k + 1);
    }
    w->pending--;
    if (two) w->n_pipelined++;
    w->s.step++;
    TT_CHECK(tt_state_push_loss(&w->s, loss, &w->st));
    w->last_loss = loss;
    w->last_norm = norm;
    w->last_lr = w->lr_q[k & 1];
    return TT_OK;
}

EMSCRIPTEN_KEEPALIVE int tt_web_eval(tt_web *w) {
    tt_status_clear(&w->st);
    if (!w->have_state || !w->be) return werr(w, TT_EINVAL, "no training run");
    if (w->pending) return werr(w, TT_EINVAL, "collect the step in flight first");
    float v = NAN;
    TT_CHECK(tt_evaluate(w->be, &w->corpus, w->s.tc.eval_batches, w->valtok, &v, &w->st));
    TT_CHECK(tt_state_push_val(&w->s, w->s.step, v, &w->st));
    w->last_val = v;
    return TT_OK;
}

/* ---- getters ---------------------------------------------------------------------- */

EMSCRIPTEN_KEEPALIVE double tt_web_step(tt_web *w) { return w->have_state ? (double)w->s.step : 0; }
EMSCRIPTEN_KEEPALIVE double tt_web_total_steps(tt_web *w) { return w->have_state ? (double)w->s.tc.steps : (double)w->tc.steps; }
EMSCRIPTEN_KEEPALIVE double tt_web_loss(tt_web *w) { return w->last_loss; }
EMSCRIPTEN_KEEPALIVE double tt_web_grad_norm(tt_web *w) { return w->last_norm; }
EMSCRIPTEN_KEEPALIVE double tt_web_val_loss(tt_web *w) { return w->last_val; }
EMSCRIPTEN_KEEPALIVE double tt_web_lr(tt_web *w) { return w->last_lr; }
EMSCRIPTEN_KEEPALIVE double tt_web_eval_every(tt_web *w) { return w->have_state ? (double)w->s.tc.eval_every : (double)w->tc.eval_every; }
EMSCRIPTEN_KEEPALIVE double tt_web_tokens_per_step(tt_web *w) {
    const tt_model_config *c = w->have_state ? &w->s.cfg : &w->cfg;
    int accum = w->have_state ? w->s.tc.accum : w->tc.accum;
    return (double)c->batch * c->ctx * accum;
}
EMSCRIPTEN_KEEPALIVE double tt_web_n_params(tt_web *w) {
    return (double)tt_config_param_count(w->have_state ? &w->s.cfg : &w->cfg);
}

/* ---- checkpoints ---------------------------------------------------------------------- */

#define CKPT_TMP "/tmp/tt_web.safetensors"

EMSCRIPTEN_KEEPALIVE int tt_web_save(tt_web *w) {
    tt_status_clear(&w->st);
    if (!w->have_state || !w->be) return -werr(w, TT_EINVAL, "no training run");
    if (w->pending) return -werr(w, TT_EINVAL, "collect the step in flight first");
    int rc = w->be->vt->get_state(w->be, w->s.params, w->s.m, w->s.v, &w->st);
    if (rc) return -rc;
    rc = tt_checkpoint_save(CKPT_TMP, &w->s, &w->st);
    if (rc) return -rc;
    FILE *f = fopen(CKPT_TMP, "rb");
    if (!f) return -werr(w, TT_EIO, "cannot reopen the checkpoint");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = n > 0 ? malloc((size_t)n) : NULL;
    size_t got = buf ? fread(buf, 1, (size_t)n, f) : 0;
    fclose(f);
    remove(CKPT_TMP);
    if (!buf || got != (size_t)n) {
        free(buf);
        return -werr(w, TT_EIO, "cannot read the checkpoint back");
    }
    free(w->ckpt);
    w->ckpt = buf;
    w->ckpt_len = (size_t)n;
    if (n > 0x7fffffff) return -werr(w, TT_EUNSUP, "checkpoint larger than 2 GiB");
    return (int)n;
}

EMSCRIPTEN_KEEPALIVE const uint8_t *tt_web_save_ptr(tt_web *w) { return w->ckpt; }

/* ---- sampling ---------------------------------------------------------------------- */

EMSCRIPTEN_KEEPALIVE int tt_web_sample_start(tt_web *w, const char *prompt, int max_tokens, float temperature, int top_k,
                                             float top_p, double seed) {
    tt_status_clear(&w->st);
    if (!w->have_state || !w->be) return werr(w, TT_EINVAL, "no model yet: train or load a checkpoint first");
    if (w->pending) return werr(w, TT_EINVAL, "collect the step in flight first");
    if (max_tokens < 1 || max_tokens > 1000000) return werr(w, TT_EINVAL, "length must be in 1..1000000");
    if (!(temperature >= 0 && temperature <= 100)) return werr(w, TT_EINVAL, "temperature must be in [0, 100]");
    if (top_k < 0) return werr(w, TT_EINVAL, "top-k must be >= 0");
    if (!(top_p > 0 && top_p <= 1)) return werr(w, TT_EINVAL, "top-p must be in (0, 1]");
    TT_CHECK(w->be->vt->get_state(w->be, w->s.params, NULL, NULL, &w->st));
    if (w->sampler) tt_web_sampler_free(w->sampler);
    w->sampler = NULL;
    return tt_web_sampler_new(&w->s, prompt ? prompt : "", max_tokens, temperature, top_k, top_p, (uint64_t)seed,
                              &w->sampler, &w->st);
}

EMSCRIPTEN_KEEPALIVE int tt_web_sample_next(tt_web *w) {
    if (!w->sampler) return -1;
    int tok = -1;
    int rc = tt_web_sampler_next(w->sampler, &tok, &w->st);
    if (rc || tok < 0) {
        tt_web_sampler_free(w->sampler);
        w->sampler = NULL;
        return -1;
    }
    return tok;
}

/* ---- JSON read-outs ------------------------------------------------------------------ */

static void jreset(tt_web *w) { w->json_len = 0; if (w->json) w->json[0] = 0; }

static void jprintf(tt_web *w, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = w->json_cap - w->json_len;
        int n = w->json ? vsnprintf(w->json + w->json_len, room, fmt, ap) : -1;
        va_end(ap);
        if (n >= 0 && (size_t)n < room) {
            w->json_len += (size_t)n;
            return;
        }
        size_t cap = w->json_cap ? w->json_cap * 2 : 4096;
        while (n >= 0 && cap < w->json_len + (size_t)n + 1) cap *= 2;
        char *p = realloc(w->json, cap);
        if (!p) return; /* keeps what fits; the page sees truncated JSON as an error */
        w->json = p;
        w->json_cap = cap;
    }
}

static void jnum(tt_web *w, double x) {
    if (isfinite(x)) jprintf(w, "%.9g", x);
    else jprintf(w, "null");
}

EMSCRIPTEN_KEEPALIVE const char *tt_web_presets_json(tt_web *w) {
    jreset(w);
    jprintf(w, "[");
    for (int i = 0; i < tt_n_presets; i++) {
        const tt_preset *p = &tt_presets[i];
        const tt_model_config *c = &p->cfg;
        jprintf(w, "%s{\"name\":\"%s\",\"layers\":%d,\"d_model\":%d,\"heads\":%d,\"ctx\":%d,\"batch\":%d,\"params\":%lld,"
                   "\"train_bytes\":",
                i ? "," : "", p->name, c->n_layer, c->d_model, c->n_head, c->ctx, c->batch, (long long)p->n_params);
        jnum(w, tt_config_train_bytes(c));
        jprintf(w, ",\"step_flops\":");
        jnum(w, tt_config_step_flops(c));
        jprintf(w, ",\"lr\":"); /* the CLI's default learning rate for this size */
        jnum(w, tt_default_lr(c));
        jprintf(w, "}");
    }
    jprintf(w, "]");
    return w->json ? w->json : "[]";
}

EMSCRIPTEN_KEEPALIVE const char *tt_web_state_json(tt_web *w) {
    jreset(w);
    const tt_model_config *c = w->have_state ? &w->s.cfg : &w->cfg;
    const tt_train_config *tc = w->have_state ? &w->s.tc : &w->tc;
    jprintf(w, "{\"preset\":\"%s\",\"layers\":%d,\"d_model\":%d,\"heads\":%d,\"ctx\":%d,\"batch\":%d,\"params\":%lld,",
            w->preset, c->n_layer, c->d_model, c->n_head, c->ctx, c->batch, (long long)tt_config_param_count(c));
    jprintf(w, "\"steps\":%lld,\"lr\":", (long long)tc->steps);
    jnum(w, tc->lr);
    jprintf(w, ",\"seed\":%llu,\"accum\":%d,\"eval_every\":%lld,\"eval_batches\":%d,", (unsigned long long)tc->seed, tc->accum,
            (long long)tc->eval_every, tc->eval_batches);
    jprintf(w, "\"step\":%lld,\"corpus_bytes\":%zu,\"loss\":[", w->have_state ? (long long)w->s.step : 0LL,
            w->have_corpus ? w->corpus.n : (size_t)0);
    if (w->have_state)
        for (int64_t i = 0; i < w->s.step; i++) {
            if (i) jprintf(w, ",");
            jnum(w, w->s.loss_hist[i]);
        }
    jprintf(w, "],\"val\":[");
    if (w->have_state)
        for (int64_t i = 0; i < w->s.n_val; i++) {
            jprintf(w, "%s[%lld,", i ? "," : "", (long long)w->s.val_step[i]);
            jnum(w, w->s.val_loss[i]);
            jprintf(w, "]");
        }
    jprintf(w, "]}");
    return w->json ? w->json : "{}";
}

EMSCRIPTEN_KEEPALIVE const char *tt_web_info(tt_web *w) {
    if (!w->be) snprintf(w->info, sizeof w->info, "%s", TT_ISA);
    return w->info;
}

/* 1 in the module built with the browser WebGPU device layer (tinytrain_web_gpu). */
EMSCRIPTEN_KEEPALIVE int tt_web_has_webgpu(void) {
#ifdef TT_WEB_GPU
    return 1;
#else
    return 0;
#endif
}
