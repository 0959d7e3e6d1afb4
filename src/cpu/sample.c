/* sample.c — KV-cached single-token inference and token picking (sample.h).
 * One token runs the training model's ops (ops.h) on a single row: the
 * embedding, layernorms, single-row matmuls (q/k/v, output and MLP
 * projections with the residual and GELU fused as in training), attention of
 * the one query over the cached keys/values (tt_attention_decode) and the
 * tied head; the context's pool parallelises the larger ones. A LoRA model
 * samples as its merged weights (tt_lora_merge), made once at creation. */
#include "sample.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lora.h"
#include "ops.h"
#include "rng.h"

struct tt_sampler {
    tt_model_config cfg;
    tt_layout lo;
    const float *params;
    float *merged;    /* a LoRA model's merged weights (owned), else NULL */
    tt_cpu cpu;
    int len;          /* tokens in the window */
    tt_token *toks;   /* (ctx) tokens of the window */
    float *kc, *vc;   /* (L, ctx, C) caches */
    float *x;         /* (C) residual stream */
    float *h;         /* (C) normed input */
    float *stats;     /* (2) layernorm mean, rstd */
    float *q;         /* (C) */
    float *y;         /* (C) attention output */
    float *fpre, *f;  /* (4C) MLP hidden before and after GELU */
    float *logits;    /* (V) */
    tt_sample_item *pick; /* (V) tt_sample_pick's work */
};

void tt_sample_config_default(tt_sample_config *sc) {
    sc->temperature = 0.8f;
    sc->top_k = 40;
    sc->top_p = 0.95f;
    sc->seed = 1337;
    sc->max_tokens = 500;
}

int tt_sample_config_validate(const tt_sample_config *sc, tt_status *st) {
    if (!isfinite(sc->temperature) || sc->temperature < 0.0f || sc->temperature > 100.0f)
        return tt_fail(st, TT_EINVAL, "temperature must be in [0, 100] (got %g)", sc->temperature);
    if (sc->top_k < 0 || sc->top_k > TT_TOK_MAX_VOCAB)
        return tt_fail(st, TT_EINVAL, "top-k must be in 0..%d (got %d)", TT_TOK_MAX_VOCAB, sc->top_k);
    if (!isfinite(sc->top_p) || sc->top_p <= 0.0f || sc->top_p > 1.0f)
        return tt_fail(st, TT_EINVAL, "top-p must be in (0, 1] (got %g)", sc->top_p);
    if (sc->max_tokens < 0) return tt_fail(st, TT_EINVAL, "tokens must be >= 0 (got %lld)", (long long)sc->max_tokens);
    return TT_OK;
}

int tt_sampler_create(const tt_model_config *cfg, const float *params, int threads, tt_sampler **out, tt_status *st) {
    *out = NULL;
    tt_sampler *s = calloc(1, sizeof *s);
    if (!s) return tt_fail(st, TT_ENOMEM, "out of memory (sampler)");
    s->cfg = *cfg;
    s->params = params;
    int rc = tt_layout_build(cfg, &s->lo, st);
    if (rc) {
        free(s);
        return rc;
    }
    if (cfg->lora_rank > 0) {
        s->merged = malloc(s->lo.base_total * sizeof(float));
        if (!s->merged || tt_lora_merge(cfg, params, s->merged, st)) {
            rc = s->merged ? TT_EINVAL : tt_fail(st, TT_ENOMEM, "out of memory (sampler)");
            free(s->merged);
            tt_layout_free(&s->lo);
            free(s);
            return rc;
        }
        s->params = s->merged;
        s->cfg = tt_lora_base_config(cfg);
        tt_layout_free(&s->lo);
        if ((rc = tt_layout_build(&s->cfg, &s->lo, st))) {
            free(s->merged);
            free(s);
            return rc;
        }
    }
    size_t C = (size_t)cfg->d_model, L = (size_t)cfg->n_layer, T = (size_t)cfg->ctx, V = (size_t)cfg->vocab;
    size_t shared = tt_head_forward_scratch(1, cfg->d_model, cfg->vocab);
    size_t thread = TT_MAX(tt_matmul_thread_scratch(), tt_attention_thread_scratch(cfg->ctx, cfg->d_model / cfg->n_head));
    rc = tt_cpu_create(&s->cpu, threads > 1 ? threads : 1, shared, thread, st);
    if (rc) {
        tt_layout_free(&s->lo);
        free(s);
        return rc;
    }
    s->toks = malloc(T * sizeof *s->toks);
    s->pick = malloc(V * sizeof *s->pick);
    s->kc = tt_alloc(L * T * C * sizeof(float), st);
    s->vc = tt_alloc(L * T * C * sizeof(float), st);
    s->x = tt_alloc((12 * C + 2 + V) * sizeof(float), st);
    if (!s->toks || !s->pick || !s->kc || !s->vc || !s->x) {
        tt_sampler_destroy(s);
        return tt_fail(st, TT_ENOMEM, "out of memory (sampler caches)");
    }
    s->h = s->x + C;
    s->q = s->h + C;
    s->y = s->q + C;
    s->fpre = s->y + C; /* 4C */
    s->f = s->fpre + 4 * C;
    s->logits = s->f + 4 * C;
    s->stats = s->logits + V;
    *out = s;
    return TT_OK;
}

void tt_sampler_destroy(tt_sampler *s) {
    if (!s) return;
    tt_cpu_destroy(&s->cpu);
    free(s->toks);
    free(s->pick);
    tt_free(s->kc);
    tt_free(s->vc);
    tt_free(s->x);
    tt_layout_free(&s->lo);
    free(s->merged);
    free(s);
}

void tt_sampler_reset(tt_sampler *s) { s->len = 0; }
const float *tt_sampler_logits(const tt_sampler *s) { return s->logits; }
int tt_sampler_len(const tt_sampler *s) { return s->len; }

/* ---- one token ---- */

static const float *P(const tt_sampler *s, tt_tensor_kind kind, int layer) {
    return s->params + tt_layout_offset(&s->lo, &s->cfg, kind, layer);
}

/* forward of token tok at position pos = s->len (cache rows pos written) */
static void forward_token(tt_sampler *s, tt_token tok) {
    tt_cpu *cpu = &s->cpu;
    const int C = s->cfg.d_model, NH = s->cfg.n_head, T = s->cfg.ctx;
    const int pos = s->len;
    const float eps = tt_config_ln_eps(&s->cfg);
    const int32_t tok32 = (int32_t)tok;
    const float *wte = P(s, TT_WTE, 0);
    tt_embedding_forward(cpu, s->x, &tok32, wte, P(s, TT_WPE, 0) + (size_t)pos * C, 1, 1, C);
    for (int l = 0; l < s->cfg.n_layer; l++) {
        float *kl = s->kc + (size_t)l * T * C, *vl = s->vc + (size_t)l * T * C;
        tt_layernorm_forward(cpu, s->h, s->stats, s->x, P(s, TT_LN1W, l), P(s, TT_LN1B, l), 1, C, eps);
        tt_matmul_forward(cpu, s->q, s->h, P(s, TT_QW, l), P(s, TT_QB, l), 1, C, C);
        tt_matmul_forward(cpu, kl + (size_t)pos * C, s->h, P(s, TT_KW, l), P(s, TT_KB, l), 1, C, C);
        tt_matmul_forward(cpu, vl + (size_t)pos * C, s->h, P(s, TT_VALW, l), P(s, TT_VALB, l), 1, C, C);
        tt_attention_decode(cpu, s->y, s->q, kl, vl, C, pos + 1, C, NH);
        tt_matmul_residual_forward(cpu, s->x, s->y, P(s, TT_OW, l), P(s, TT_OB, l), s->x, 1, C, C);
        tt_layernorm_forward(cpu, s->h, s->stats, s->x, P(s, TT_LN2W, l), P(s, TT_LN2B, l), 1, C, eps);
        tt_matmul_gelu_forward(cpu, s->fpre, s->f, s->h, P(s, TT_FCW, l), P(s, TT_FCB, l), 1, C, 4 * C, s->cfg.act);
        tt_matmul_residual_forward(cpu, s->x, s->f, P(s, TT_PROJW, l), P(s, TT_PROJB, l), s->x, 1, 4 * C, C);
    }
    tt_layernorm_forward(cpu, s->h, s->stats, s->x, P(s, TT_LNFW, 0), P(s, TT_LNFB, 0), 1, C, eps);
    tt_head_forward(cpu, s->logits, s->h, wte, 1, C, s->cfg.vocab);
    s->toks[pos] = tok;
    s->len = pos + 1;
}

void tt_sampler_feed(tt_sampler *s, tt_token tok) {
    const int T = s->cfg.ctx;
    if (s->len == T) {
        /* slide: keep the last T/2 tokens (at least 0 when T == 1), recompute
         * their cache (forward_token rewrites toks[i] with the same id) */
        int keep = T / 2;
        memmove(s->toks, s->toks + (T - keep), (size_t)keep * sizeof *s->toks);
        s->len = 0;
        for (int i = 0; i < keep; i++) forward_token(s, s->toks[i]);
    }
    forward_token(s, tok);
}

/* ---- picking ---- */

static int argmax(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* the order of the candidates: probability descending, ties by the lower
 * index first (a total order: any sort gives the same sequence) */
static inline int item_before(const tt_sample_item *a, const tt_sample_item *b) {
    return a->p > b->p || (a->p == b->p && a->i < b->i);
}

static int item_cmp(const void *x, const void *y) {
    const tt_sample_item *a = x, *b = y;
    return item_before(a, b) ? -1 : item_before(b, a) ? 1 : 0;
}

/* min-heap on the order (the root is the candidate that comes last) */
static void heap_down(tt_sample_item *h, int n, int i) {
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && item_before(&h[m], &h[l])) m = l;
        if (r < n && item_before(&h[m], &h[r])) m = r;
        if (m == i) return;
        tt_sample_item t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

int tt_sample_pick(const float *logits, int V, const tt_sample_config *sc, uint64_t draw, tt_sample_item *work) {
    if (sc->temperature <= 0.0f || sc->top_k == 1) return argmax(logits, V);
    tt_sample_item *it = work;
    float mx = logits[argmax(logits, V)];
    double sum = 0.0;
    for (int i = 0; i < V; i++) {
        it[i].p = expf((logits[i] - mx) / sc->temperature);
        it[i].i = i;
        sum += it[i].p;
    }
    int n = V;
    if (sc->top_k > 0 && sc->top_k < V) {
        /* the top k: a heap of the k best seen so far, then sorted */
        int k = sc->top_k;
        for (int i = k / 2 - 1; i >= 0; i--) heap_down(it, k, i);
        for (int i = k; i < V; i++)
            if (item_before(&it[i], &it[0])) {
                it[0] = it[i];
                heap_down(it, k, 0);
            }
        qsort(it, (size_t)k, sizeof *it, item_cmp);
        n = k;
        sum = 0.0;
        for (int i = 0; i < n; i++) sum += it[i].p;
    } else {
        qsort(it, (size_t)V, sizeof *it, item_cmp);
    }
    if (sc->top_p < 1.0f) {
        double cum = 0.0, target = (double)sc->top_p * sum;
        int m = 0;
        while (m < n) {
            cum += it[m++].p;
            if (cum >= target) break;
        }
        n = m;
        sum = cum;
    }
    double u = (double)tt_rand_uniform(sc->seed, TT_STREAM_SAMPLE, draw) * sum, cum = 0.0;
    for (int i = 0; i < n; i++) {
        cum += it[i].p;
        if (u < cum) return it[i].i;
    }
    return it[n - 1].i;
}

int tt_sampler_pick(tt_sampler *s, const tt_sample_config *sc, uint64_t draw) {
    return tt_sample_pick(s->logits, s->cfg.vocab, sc, draw, s->pick);
}

int tt_generate(tt_sampler *s, const tt_token *prompt, size_t n_prompt, const tt_sample_config *sc, tt_token_fn cb,
                void *user, tt_status *st) {
    TT_CHECK(tt_sample_config_validate(sc, st));
    if (n_prompt == 0 && s->cfg.vocab != TT_VOCAB)
        return tt_fail(st, TT_EINVAL, "an empty prompt starts from byte '\\n'; a model of vocabulary %d needs a prompt",
                       s->cfg.vocab);
    for (size_t i = 0; i < n_prompt; i++)
        if (prompt[i] >= (tt_token)s->cfg.vocab)
            return tt_fail(st, TT_EINVAL, "prompt token %u is outside the vocabulary (0..%d)", (unsigned)prompt[i],
                           s->cfg.vocab - 1);
    tt_sampler_reset(s);
    if (n_prompt == 0) tt_sampler_feed(s, '\n');
    for (size_t i = 0; i < n_prompt; i++) tt_sampler_feed(s, prompt[i]);
    for (int64_t i = 0; i < sc->max_tokens; i++) {
        TT_CHECK(tt_cpu_status(&s->cpu, st));
        int tok = tt_sampler_pick(s, sc, (uint64_t)i);
        if (cb && cb(user, (tt_token)tok)) break;
        if (i + 1 < sc->max_tokens) tt_sampler_feed(s, (tt_token)tok);
    }
    return tt_cpu_status(&s->cpu, st);
}
