/* sample.c — KV-cached single-token inference and token picking (sample.h).
 * Per-token work: layer norms, the q/k/v/o, fc, proj and head mat-vecs
 * (parallel over column blocks through the pool when large), and attention
 * of one query over the cached keys/values. */
#include "sample.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pool.h"
#include "rng.h"
#include "simd.h"
enum { SIMD_W = TT_VW };

struct tt_sampler {
    tt_model_config cfg;
    tt_layout lo;
    const float *params;
    tt_pool *pool;
    int len;          /* tokens in the window */
    uint8_t *toks;    /* (ctx) tokens of the window */
    float *kc, *vc;   /* (L, ctx, C) caches */
    float *x;         /* (C) residual stream */
    float *h;         /* (C) normed input */
    float *q, *k, *v; /* (C) */
    float *y;         /* (C) attention output */
    float *f;         /* (4C) MLP hidden */
    float *att;       /* (ctx) scores */
    float *logits;    /* (V) */
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
    if (sc->top_k < 0 || sc->top_k > TT_VOCAB) return tt_fail(st, TT_EINVAL, "top-k must be in 0..%d (got %d)", TT_VOCAB, sc->top_k);
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
    if (rc) { free(s); return rc; }
    size_t C = (size_t)cfg->d_model, L = (size_t)cfg->n_layer, T = (size_t)cfg->ctx;
    s->toks = malloc(T);
    s->kc = tt_alloc(L * T * C * sizeof(float), st);
    s->vc = tt_alloc(L * T * C * sizeof(float), st);
    s->x = tt_alloc((10 * C + T + (size_t)cfg->vocab) * sizeof(float), st);
    if (!s->toks || !s->kc || !s->vc || !s->x) {
        tt_sampler_destroy(s);
        return tt_fail(st, TT_ENOMEM, "out of memory (sampler caches)");
    }
    s->h = s->x + C;
    s->q = s->h + C;
    s->k = s->q + C;
    s->v = s->k + C;
    s->y = s->v + C;
    s->f = s->y + C; /* 4C */
    s->att = s->f + 4 * C;
    s->logits = s->att + T;
    if (threads > 1) s->pool = tt_pool_create(threads);
    *out = s;
    return TT_OK;
}

void tt_sampler_destroy(tt_sampler *s) {
    if (!s) return;
    if (s->pool) tt_pool_destroy(s->pool);
    free(s->toks);
    tt_free(s->kc);
    tt_free(s->vc);
    tt_free(s->x);
    tt_layout_free(&s->lo);
    free(s);
}

void tt_sampler_reset(tt_sampler *s) { s->len = 0; }
const float *tt_sampler_logits(const tt_sampler *s) { return s->logits; }
int tt_sampler_len(const tt_sampler *s) { return s->len; }

/* ---- kernels ---- */

static const float *P(const tt_sampler *s, tt_tensor_kind kind, int layer) {
    return s->params + tt_layout_offset(&s->lo, &s->cfg, kind, layer);
}

// out (C), inp (C), w (C), b (C)
static void layernorm_forward(float *out, const float *inp, const float *w, const float *b, int C) {
    float mean = 0.0f;
    for (int i = 0; i < C; i++) mean += inp[i];
    mean /= (float)C;
    float var = 0.0f;
    for (int i = 0; i < C; i++) {
        float d = inp[i] - mean;
        var += d * d;
    }
    var /= (float)C;
    float rstd = 1.0f / sqrtf(var + 1e-5f);
    for (int i = 0; i < C; i++) out[i] = (inp[i] - mean) * rstd * w[i] + b[i];
}

#define COLS 256 /* columns per parallel chunk */

typedef struct {
    float *out;        // (OC)
    const float *inp;  // (IC)
    const float *w;    // (IC, OC)
    const float *bias; // (OC)
    int IC, OC;
    int accumulate;    // 1: out += inp.w + bias
} matvec_args;

static void matvec_chunk(void *ctx, int64_t chunk) {
    const matvec_args *a = ctx;
    int j0 = (int)chunk * COLS, j1 = TT_MIN(a->OC, j0 + COLS);
    float acc[COLS] __attribute__((aligned(64)));
    int n = j1 - j0;
    for (int j = 0; j < n; j++) acc[j] = a->bias ? a->bias[j0 + j] : 0.0f;
    int nv = n - n % SIMD_W;
    for (int i = 0; i < a->IC; i++) {
        const float *wr = a->w + (size_t)i * (size_t)a->OC + j0;
        tt_vf xi = tt_vset1(a->inp[i]);
        int j = 0;
        for (; j < nv; j += SIMD_W) tt_vstore(acc + j, tt_vload(acc + j) + xi * tt_vload(wr + j));
        for (; j < n; j++) acc[j] += a->inp[i] * wr[j];
    }
    if (a->accumulate)
        for (int j = 0; j < n; j++) a->out[j0 + j] += acc[j];
    else
        memcpy(a->out + j0, acc, (size_t)n * sizeof(float));
}

// out (OC) (= or +=) inp (IC) . w (IC, OC) + bias (OC)
static void matvec_forward(tt_sampler *s, float *out, const float *inp, const float *w, const float *bias, int IC, int OC,
                           int accumulate) {
    matvec_args a = {out, inp, w, bias, IC, OC, accumulate};
    int64_t chunks = (OC + COLS - 1) / COLS;
    if (s->pool && chunks > 1 && (int64_t)IC * OC >= (1 << 15)) tt_pool_for(s->pool, chunks, matvec_chunk, &a);
    else
        for (int64_t c = 0; c < chunks; c++) matvec_chunk(&a, c);
}

typedef struct {
    float *logits;    // (V)
    const float *x;   // (C)
    const float *wte; // (V, C)
    int V, C;
} head_args;

#define HEAD_ROWS 32
static void head_chunk(void *ctx, int64_t chunk) {
    const head_args *a = ctx;
    int v0 = (int)chunk * HEAD_ROWS, v1 = TT_MIN(a->V, v0 + HEAD_ROWS);
    int nv = a->C - a->C % SIMD_W;
    for (int v = v0; v < v1; v++) {
        const float *row = a->wte + (size_t)v * (size_t)a->C;
        tt_vf acc = tt_vset1(0.0f);
        int i = 0;
        for (; i < nv; i += SIMD_W) acc += tt_vload(a->x + i) * tt_vload(row + i);
        float sum = tt_vsum(acc);
        for (; i < a->C; i++) sum += a->x[i] * row[i];
        a->logits[v] = sum;
    }
}

static float gelu(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }

/* forward of token tok at position pos = s->len (cache rows pos written) */
static void forward_token(tt_sampler *s, uint8_t tok) {
    const int C = s->cfg.d_model, NH = s->cfg.n_head, HS = C / NH, T = s->cfg.ctx;
    const int pos = s->len;
    const float *wte = P(s, TT_WTE, 0), *wpe = P(s, TT_WPE, 0);
    for (int i = 0; i < C; i++) s->x[i] = wte[(size_t)tok * C + i] + wpe[(size_t)pos * C + i];
    const float scale = 1.0f / sqrtf((float)HS);
    for (int l = 0; l < s->cfg.n_layer; l++) {
        float *kl = s->kc + ((size_t)l * T + pos) * C, *vl = s->vc + ((size_t)l * T + pos) * C;
        layernorm_forward(s->h, s->x, P(s, TT_LN1W, l), P(s, TT_LN1B, l), C);
        matvec_forward(s, s->q, s->h, P(s, TT_QW, l), P(s, TT_QB, l), C, C, 0);
        matvec_forward(s, kl, s->h, P(s, TT_KW, l), P(s, TT_KB, l), C, C, 0);
        matvec_forward(s, vl, s->h, P(s, TT_VALW, l), P(s, TT_VALB, l), C, C, 0);
        const float *kbase = s->kc + (size_t)l * T * C, *vbase = s->vc + (size_t)l * T * C;
        for (int hd = 0; hd < NH; hd++) {
            const float *qh = s->q + hd * HS;
            float mx = -INFINITY;
            for (int t = 0; t <= pos; t++) {
                const float *kt = kbase + (size_t)t * C + hd * HS;
                float d = 0.0f;
                for (int i = 0; i < HS; i++) d += qh[i] * kt[i];
                d *= scale;
                s->att[t] = d;
                if (d > mx) mx = d;
            }
            float sum = 0.0f;
            for (int t = 0; t <= pos; t++) {
                s->att[t] = expf(s->att[t] - mx);
                sum += s->att[t];
            }
            float inv = 1.0f / sum;
            float *yh = s->y + hd * HS;
            for (int i = 0; i < HS; i++) yh[i] = 0.0f;
            for (int t = 0; t <= pos; t++) {
                const float *vt = vbase + (size_t)t * C + hd * HS;
                float p = s->att[t] * inv;
                for (int i = 0; i < HS; i++) yh[i] += p * vt[i];
            }
        }
        matvec_forward(s, s->x, s->y, P(s, TT_OW, l), P(s, TT_OB, l), C, C, 1);
        layernorm_forward(s->h, s->x, P(s, TT_LN2W, l), P(s, TT_LN2B, l), C);
        matvec_forward(s, s->f, s->h, P(s, TT_FCW, l), P(s, TT_FCB, l), C, 4 * C, 0);
        for (int i = 0; i < 4 * C; i++) s->f[i] = gelu(s->f[i]);
        matvec_forward(s, s->x, s->f, P(s, TT_PROJW, l), P(s, TT_PROJB, l), 4 * C, C, 1);
    }
    layernorm_forward(s->h, s->x, P(s, TT_LNFW, 0), P(s, TT_LNFB, 0), C);
    head_args ha = {s->logits, s->h, wte, s->cfg.vocab, C};
    int64_t chunks = (ha.V + HEAD_ROWS - 1) / HEAD_ROWS;
    if (s->pool && (int64_t)ha.V * C >= (1 << 15)) tt_pool_for(s->pool, chunks, head_chunk, &ha);
    else
        for (int64_t c = 0; c < chunks; c++) head_chunk(&ha, c);
    s->toks[pos] = tok;
    s->len = pos + 1;
}

void tt_sampler_feed(tt_sampler *s, uint8_t tok) {
    const int T = s->cfg.ctx;
    if (s->len == T) {
        /* slide: keep the last T/2 tokens (at least 0 when T == 1), recompute their cache */
        int keep = T / 2;
        uint8_t tmp[65536];
        memcpy(tmp, s->toks + (T - keep), (size_t)keep);
        s->len = 0;
        for (int i = 0; i < keep; i++) forward_token(s, tmp[i]);
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

int tt_sample_pick(const float *logits, int V, const tt_sample_config *sc, uint64_t draw) {
    if (sc->temperature <= 0.0f || sc->top_k == 1 || V > TT_VOCAB) return argmax(logits, V);
    float prob[TT_VOCAB];
    int idx[TT_VOCAB]; /* indices sorted by prob, descending */
    float mx = logits[argmax(logits, V)];
    double sum = 0.0;
    for (int i = 0; i < V; i++) {
        prob[i] = expf((logits[i] - mx) / sc->temperature);
        sum += prob[i];
    }
    /* insertion sort by probability, descending; ties keep the lower index first */
    for (int i = 0; i < V; i++) {
        int j = i;
        while (j > 0 && prob[idx[j - 1]] < prob[i]) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = i;
    }
    int n = V;
    if (sc->top_k > 0 && sc->top_k < n) {
        n = sc->top_k;
        sum = 0.0;
        for (int i = 0; i < n; i++) sum += prob[idx[i]];
    }
    if (sc->top_p < 1.0f) {
        double cum = 0.0, target = (double)sc->top_p * sum;
        int m = 0;
        while (m < n) {
            cum += prob[idx[m++]];
            if (cum >= target) break;
        }
        n = m;
        sum = cum;
    }
    double u = (double)tt_rand_uniform(sc->seed, TT_STREAM_SAMPLE, draw) * sum, cum = 0.0;
    for (int i = 0; i < n; i++) {
        cum += prob[idx[i]];
        if (u < cum) return idx[i];
    }
    return idx[n - 1];
}

int tt_generate(tt_sampler *s, const uint8_t *prompt, size_t n_prompt, const tt_sample_config *sc, tt_token_fn cb,
                void *user, tt_status *st) {
    TT_CHECK(tt_sample_config_validate(sc, st));
    if (s->cfg.vocab != TT_VOCAB) return tt_fail(st, TT_EINVAL, "vocab must be %d", TT_VOCAB);
    tt_sampler_reset(s);
    if (n_prompt == 0) tt_sampler_feed(s, '\n');
    for (size_t i = 0; i < n_prompt; i++) tt_sampler_feed(s, prompt[i]);
    for (int64_t i = 0; i < sc->max_tokens; i++) {
        int tok = tt_sample_pick(s->logits, s->cfg.vocab, sc, (uint64_t)i);
        if (cb && cb(user, (uint8_t)tok)) break;
        if (i + 1 < sc->max_tokens) tt_sampler_feed(s, (uint8_t)tok);
    }
    return TT_OK;
}
