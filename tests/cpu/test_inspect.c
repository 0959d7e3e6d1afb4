/* test_inspect.c — model inspection (src/engine/inspect.c) on the CPU backend
 * against the float64 reference (ref/ref64.c): the attention maps from the
 * reference forward's q and k, the logit lens from the reference's residual
 * stream, and the model's next-byte distribution from ref_gpt_forward's
 * logits; causality and row sums; the top-k order; the math of
 * tt_inspect_from_acts alone on the reference's activations; bad prompts. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "engine/backend_create.h"
#include "engine/inspect.h"
#include "model.h"
#include "ref64.h"
#include "rng.h"
#include "tt_test.h"

/* init, then every bias and LayerNorm parameter random too (no trivial paths) */
static float *model_params(const tt_model_config *c, const tt_layout *lo, uint64_t seed) {
    float *p = malloc(lo->total * sizeof *p);
    tt_model_init_params(c, lo, seed, p, NULL);
    for (int i = 0; i < lo->n_tensors; i++) {
        const tt_tensor_info *t = &lo->t[i];
        if (t->ndim == 2) continue;
        int gain = t->kind == TT_LN1W || t->kind == TT_LN2W || t->kind == TT_LNFW;
        for (size_t j = 0; j < t->numel; j++)
            p[t->offset + j] = (gain ? 1.0f : 0.0f) + 0.2f * (2.0f * tt_rand_uniform(seed + 1, TT_STREAM_TEST, t->offset + j) - 1.0f);
    }
    /* larger attention weights so that the maps are far from uniform */
    for (int l = 0; l < c->n_layer; l++)
        for (int w = 0; w < 2; w++) {
            float *m = p + tt_layout_offset(lo, c, w ? TT_KW : TT_QW, l);
            for (size_t j = 0; j < (size_t)c->d_model * c->d_model; j++) m[j] *= 8.0f;
        }
    return p;
}

/* The reference forward of one sequence: x (L+1, T, C) the residual stream,
 * q, k (L, T, C); the layer structure of ref_gpt_forward. */
static void ref_acts(const tt_model_config *cfg, const tt_layout *lo, const double *P, const int32_t *inp, int T,
                     double *x, double *q, double *k) {
    const int C = cfg->d_model, L = cfg->n_layer, NH = cfg->n_head;
    const size_t NC = (size_t)T * C;
    const double eps = cfg->ln_eps > 0.0f ? (double)cfg->ln_eps : 1e-5;
#define PD(kind, l) (P + tt_layout_offset(lo, cfg, (kind), (l)))
    double *ln = ref_alloc(NC), *qkv = ref_alloc(3 * NC), *tmp = ref_alloc(NC), *att = ref_alloc(NC),
           *res2 = ref_alloc(NC), *h = ref_alloc(4 * NC), *g = ref_alloc(4 * NC);
    ref_embedding_forward(x, inp, PD(TT_WTE, 0), PD(TT_WPE, 0), 1, T, C);
    const tt_tensor_kind wk[3] = {TT_QW, TT_KW, TT_VALW}, bk[3] = {TT_QB, TT_KB, TT_VALB};
    for (int l = 0; l < L; l++) {
        const double *xl = x + (size_t)l * NC;
        double *xn = x + (size_t)(l + 1) * NC;
        ref_layernorm_forward(ln, NULL, xl, PD(TT_LN1W, l), PD(TT_LN1B, l), T, C, eps);
        for (int s = 0; s < 3; s++) {
            ref_matmul_forward(tmp, ln, PD(wk[s], l), PD(bk[s], l), T, C, C);
            for (int t = 0; t < T; t++) memcpy(qkv + (size_t)t * 3 * C + (size_t)s * C, tmp + (size_t)t * C, C * sizeof(double));
            if (s < 2) memcpy((s ? k : q) + (size_t)l * NC, tmp, NC * sizeof(double));
        }
        ref_attention_forward(att, NULL, qkv, qkv + C, qkv + 2 * C, 3 * C, 1, T, C, NH);
        ref_matmul_forward(tmp, att, PD(TT_OW, l), PD(TT_OB, l), T, C, C);
        for (size_t i = 0; i < NC; i++) res2[i] = xl[i] + tmp[i];
        ref_layernorm_forward(ln, NULL, res2, PD(TT_LN2W, l), PD(TT_LN2B, l), T, C, eps);
        ref_matmul_forward(h, ln, PD(TT_FCW, l), PD(TT_FCB, l), T, C, 4 * C);
        ref_gelu_forward(g, h, 4 * NC, cfg->act);
        ref_matmul_forward(tmp, g, PD(TT_PROJW, l), PD(TT_PROJB, l), T, 4 * C, C);
        for (size_t i = 0; i < NC; i++) xn[i] = res2[i] + tmp[i];
    }
    free(ln), free(qkv), free(tmp), free(att), free(res2), free(h), free(g);
}

/* softmax over n in double, in place */
static void dsoftmax(double *x, int n) {
    double m = -INFINITY, s = 0;
    for (int i = 0; i < n; i++) m = fmax(m, x[i]);
    for (int i = 0; i < n; i++) s += x[i] = exp(x[i] - m);
    for (int i = 0; i < n; i++) x[i] /= s;
}

typedef struct {
    double *attn; /* (L,NH,T,T) */
    double *lens; /* (L+1,T,V) */
    double *out;  /* (T,V) softmax of ref_gpt_forward's logits */
    float *xf, *qf, *kf; /* the reference activations as floats */
} ref_view;

static void ref_view_make(const tt_model_config *cfg, const tt_layout *lo, const float *params, const tt_token *tok, int T,
                          ref_view *rv) {
    const int C = cfg->d_model, L = cfg->n_layer, NH = cfg->n_head, V = cfg->vocab, hs = C / NH;
    double *P = ref_from_float(params, lo->total);
    int32_t *inp = malloc((size_t)T * sizeof *inp);
    for (int t = 0; t < T; t++) inp[t] = tok[t];
    double *x = ref_alloc((size_t)(L + 1) * T * C), *q = ref_alloc((size_t)L * T * C), *k = ref_alloc((size_t)L * T * C);
    ref_acts(cfg, lo, P, inp, T, x, q, k);
    rv->attn = ref_alloc((size_t)L * NH * T * T);
    for (int l = 0; l < L; l++)
        for (int h = 0; h < NH; h++)
            for (int i = 0; i < T; i++) {
                double *a = rv->attn + (((size_t)l * NH + h) * T + i) * T;
                for (int j = 0; j <= i; j++) {
                    double s = 0;
                    for (int d = 0; d < hs; d++)
                        s += q[((size_t)l * T + i) * C + h * hs + d] * k[((size_t)l * T + j) * C + h * hs + d];
                    a[j] = s / sqrt((double)hs);
                }
                dsoftmax(a, i + 1);
            }
    rv->lens = ref_alloc((size_t)(L + 1) * T * V);
    double *ln = ref_alloc((size_t)T * C);
    for (int l = 0; l <= L; l++) {
        ref_layernorm_forward(ln, NULL, x + (size_t)l * T * C, P + tt_layout_offset(lo, cfg, TT_LNFW, 0),
                              P + tt_layout_offset(lo, cfg, TT_LNFB, 0), T, C,
                              cfg->ln_eps > 0.0f ? (double)cfg->ln_eps : 1e-5);
        double *pl = rv->lens + (size_t)l * T * V;
        ref_head_forward(pl, ln, P + tt_layout_offset(lo, cfg, TT_WTE, 0), T, C, V);
        for (int t = 0; t < T; t++) dsoftmax(pl + (size_t)t * V, V);
    }
    rv->out = ref_alloc((size_t)T * V);
    ref_gpt_forward(cfg, lo, P, inp, 1, T, rv->out);
    for (int t = 0; t < T; t++) dsoftmax(rv->out + (size_t)t * V, V);
    rv->xf = malloc((size_t)(L + 1) * T * C * sizeof(float));
    rv->qf = malloc((size_t)L * T * C * sizeof(float));
    rv->kf = malloc((size_t)L * T * C * sizeof(float));
    ref_to_float(rv->xf, x, (size_t)(L + 1) * T * C);
    ref_to_float(rv->qf, q, (size_t)L * T * C);
    ref_to_float(rv->kf, k, (size_t)L * T * C);
    free(P), free(inp), free(x), free(q), free(k), free(ln);
}

static void ref_view_free(ref_view *rv) {
    free(rv->attn), free(rv->lens), free(rv->out), free(rv->xf), free(rv->qf), free(rv->kf);
}

static double max_abs(const float *a, const double *b, size_t n) {
    double e = 0;
    for (size_t i = 0; i < n; i++) e = fmax(e, fabs((double)a[i] - b[i]));
    return e;
}

/* causal, rows summing to 1, lens rows summing to 1 */
static void check_shape(const tt_inspect *r) {
    double worst_row = 0, above = 0;
    for (int l = 0; l < r->L; l++)
        for (int h = 0; h < r->NH; h++)
            for (int i = 0; i < r->T; i++) {
                const float *a = r->attn + (((size_t)l * r->NH + h) * r->T + i) * r->T;
                double s = 0;
                for (int j = 0; j < r->T; j++) {
                    if (j > i) above = fmax(above, fabs(a[j]));
                    else s += a[j];
                }
                worst_row = fmax(worst_row, fabs(s - 1));
            }
    CHECK_MSG(above == 0, "attention above the diagonal: %g", above);
    CHECK_MSG(worst_row < 1e-5, "attention row sums off by %g", worst_row);
    double worst = 0;
    for (int l = 0; l <= r->L; l++)
        for (int t = 0; t < r->T; t++) {
            double s = 0;
            for (int v = 0; v < r->V; v++) s += r->lens[((size_t)l * r->T + t) * r->V + v];
            worst = fmax(worst, fabs(s - 1));
        }
    CHECK_MSG(worst < 1e-5, "lens rows sum off by %g", worst);
}

static void cpu_vs_ref(tt_model_config cfg, int T, uint64_t seed) {
    tt_status st;
    tt_layout lo;
    CHECK(tt_layout_build(&cfg, &lo, &st) == TT_OK);
    float *params = model_params(&cfg, &lo, seed);
    tt_token tok[256];
    for (int t = 0; t < T; t++) tok[t] = (tt_token)tt_rand_below(seed, TT_STREAM_TEST, 1000 + t, 256);
    ref_view rv;
    ref_view_make(&cfg, &lo, params, tok, T, &rv);
    tt_backend *be = NULL;
    CHECK_MSG(tt_backend_create("cpu", &cfg, &(tt_backend_opts){.threads = 2}, &be, NULL, 0, &st) == TT_OK, "%s", st.msg);
    if (!be) return;
    CHECK(be->vt->set_state(be, params, NULL, NULL, &st) == TT_OK);
    tt_inspect r;
    int rc = tt_inspect_run(be, params, tok, T, &r, &st);
    CHECK_MSG(rc == TT_OK, "inspect: %s", st.msg);
    if (rc == TT_OK) {
        const int L = cfg.n_layer, NH = cfg.n_head, V = cfg.vocab;
        CHECK(r.T == T && r.L == L && r.NH == NH && r.V == V);
        CHECK(memcmp(r.tokens, tok, (size_t)T) == 0);
        double ea = max_abs(r.attn, rv.attn, (size_t)L * NH * T * T);
        double el = max_abs(r.lens, rv.lens, (size_t)(L + 1) * T * V);
        double eo = max_abs(r.lens + (size_t)L * T * V, rv.out, (size_t)T * V);
        CHECK_MSG(ea < 1e-5, "attention maps vs reference: max abs err %.3g", ea);
        CHECK_MSG(el < 1e-5, "logit lens vs reference: max abs err %.3g", el);
        CHECK_MSG(eo < 1e-5, "next-byte probabilities vs ref_gpt_forward: max abs err %.3g", eo);
        /* the maps are not trivially uniform: some row puts most of its mass on one key */
        double peak = 0; /* over rows past the first (whose one key always gets 1) */
        for (size_t i = 0; i < (size_t)L * NH * T * T; i++) peak = fmax(peak, rv.attn[i] * ((i / T) % T != 0));
        CHECK_MSG(T == 1 || peak > 0.5, "test model's attention is too flat (peak %.3g)", peak);
        check_shape(&r);
        tt_inspect_free(&r);
    }
    /* the math alone on the reference's own activations: the exact values to float rounding */
    rc = tt_inspect_from_acts(&cfg, &lo, params, tok, T, rv.xf, rv.qf, rv.kf, &r, &st);
    CHECK_MSG(rc == TT_OK, "from_acts: %s", st.msg);
    if (rc == TT_OK) {
        double ea = max_abs(r.attn, rv.attn, (size_t)cfg.n_layer * cfg.n_head * T * T);
        double el = max_abs(r.lens, rv.lens, (size_t)(cfg.n_layer + 1) * T * cfg.vocab);
        CHECK_MSG(ea < 2e-6, "from_acts attention: %.3g", ea);
        CHECK_MSG(el < 2e-6, "from_acts lens: %.3g", el);
        tt_inspect_free(&r);
    }
    tt_backend_destroy(be);
    ref_view_free(&rv);
    free(params);
    tt_layout_free(&lo);
}

TT_TEST(cpu_matches_reference_tiny_shape) {
    tt_model_config c = {.n_layer = 2, .d_model = 32, .n_head = 4, .ctx = 16, .batch = 3, .vocab = TT_VOCAB};
    cpu_vs_ref(c, 11, 5); /* a prompt shorter than the context: padded rows must not leak in */
    cpu_vs_ref(c, 16, 6); /* the whole context */
    cpu_vs_ref(c, 1, 7);  /* one byte */
}

TT_TEST(cpu_matches_reference_odd_shape) {
    tt_model_config c = {.n_layer = 3, .d_model = 24, .n_head = 3, .ctx = 9, .batch = 1, .vocab = TT_VOCAB};
    cpu_vs_ref(c, 7, 9);
}

TT_TEST(top_k_order) {
    float p[TT_VOCAB];
    for (int v = 0; v < TT_VOCAB; v++) p[v] = tt_rand_uniform(3, TT_STREAM_TEST, (uint64_t)v);
    p[17] = p[200] = 2.0f; /* a tie: the smaller byte first */
    int b[TT_INSPECT_MAX_K];
    float q[TT_INSPECT_MAX_K];
    tt_inspect_top(p, TT_VOCAB, TT_INSPECT_MAX_K, b, q);
    CHECK(b[0] == 17 && b[1] == 200);
    for (int i = 0; i < TT_INSPECT_MAX_K; i++) {
        int above = 0; /* exactly i bytes are more likely (or tied and smaller) */
        for (int v = 0; v < TT_VOCAB; v++) above += p[v] > p[b[i]] || (p[v] == p[b[i]] && v < b[i]);
        CHECK_MSG(above == i, "rank %d: byte %d has %d above it", i, b[i], above);
        CHECK(q[i] == p[b[i]]);
    }
}

TT_TEST(json_is_what_the_view_reads) {
    tt_model_config c = {.n_layer = 1, .d_model = 16, .n_head = 2, .ctx = 8, .batch = 1, .vocab = TT_VOCAB};
    tt_status st;
    tt_layout lo;
    CHECK(tt_layout_build(&c, &lo, &st) == TT_OK);
    float *params = model_params(&c, &lo, 21);
    tt_backend *be = NULL;
    CHECK(tt_backend_create("cpu", &c, &(tt_backend_opts){.threads = 1}, &be, NULL, 0, &st) == TT_OK);
    CHECK(be->vt->set_state(be, params, NULL, NULL, &st) == TT_OK);
    const tt_token tok[3] = {'a', '"', 0xE9};
    tt_inspect r;
    CHECK(tt_inspect_run(be, params, tok, 3, &r, &st) == TT_OK);
    tt_jw j;
    tt_jw_init(&j);
    tt_inspect_json(&r, 4, &j);
    tt_json_doc d;
    CHECK_MSG(tt_json_parse(j.buf, j.len, 1000000, &d, &st) == TT_OK, "%s", st.msg);
    const tt_json_node *root = tt_json_root(&d);
    const tt_json_node *att = tt_json_get(&d, root, "attention"), *lens = tt_json_get(&d, root, "lens"),
                       *next = tt_json_get(&d, root, "next"), *last = tt_json_get(&d, root, "last");
    CHECK(att && att->count == 1 && lens && lens->count == 2 && next && next->count == 3 && last && last->count == 256);
    int64_t k = 0;
    CHECK(tt_json_get_i64(tt_json_get(&d, root, "top_k"), &k) == 0 && k == 4);
    double s = 0, x;
    for (const tt_json_node *n = tt_json_first(&d, last); n; n = tt_json_sibling(&d, n)) s += tt_json_get_f64(n, &x) ? 99 : x;
    CHECK_MSG(fabs(s - 1) < 1e-5, "last sums to %.9g", s);
    tt_json_free(&d);
    tt_jw_free(&j);
    tt_inspect_free(&r);
    tt_backend_destroy(be);
    free(params);
    tt_layout_free(&lo);
}

TT_TEST(bad_prompts_are_refused) {
    tt_model_config c = {.n_layer = 1, .d_model = 16, .n_head = 2, .ctx = 8, .batch = 1, .vocab = TT_VOCAB};
    tt_status st;
    tt_backend *be = NULL;
    CHECK(tt_backend_create("cpu", &c, &(tt_backend_opts){.threads = 1}, &be, NULL, 0, &st) == TT_OK);
    float *params = calloc(be->layout.total, sizeof(float));
    tt_token tok[9] = {'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 0};
    tt_inspect r;
    CHECK(tt_inspect_run(be, params, tok, 0, &r, &st) == TT_EINVAL);
    CHECK(strstr(st.msg, "empty") != NULL);
    CHECK(tt_inspect_run(be, params, tok, 9, &r, &st) == TT_EINVAL);
    CHECK(strstr(st.msg, "9 bytes; this model looks at 8 at most") != NULL);
    CHECK(tt_inspect_run(be, params, tok, 8, &r, &st) == TT_OK);
    tt_inspect_free(&r);
    free(params);
    tt_backend_destroy(be);
}

int main(void) {
    RUN(cpu_matches_reference_tiny_shape);
    RUN(cpu_matches_reference_odd_shape);
    RUN(top_k_order);
    RUN(json_is_what_the_view_reads);
    RUN(bad_prompts_are_refused);
    return tt_test_summary();
}
