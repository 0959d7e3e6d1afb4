/* test_ops.c — every CPU op (src/cpu/ops.h), forward and backward, against
 * the float64 reference (ref/ref64.c) on random shapes, including
 * sizes that are not multiples of the SIMD width; finite-difference checks of
 * the reference backwards in float64; bit-identical results for 1 and 3
 * threads; the accumulate/overwrite contract of every gradient. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "ref64.h"
#include "rng.h"
#include "tt_test.h"

static tt_cpu cpu1, cpu3;
static const int SIZES[] = {1, 3, 17, 65, 127};
#define NSIZES 5

static uint64_t g_seed = 1000;

static float *frand(size_t n, float lo, float hi) {
    float *p = malloc((n ? n : 1) * sizeof *p);
    tt_test_fill(p, n, g_seed++, lo, hi);
    return p;
}

static float *fpoison(size_t n) {
    float *p = malloc((n ? n : 1) * sizeof *p);
    tt_test_poison(p, n);
    return p;
}

static float *fcopy(const float *x, size_t n) {
    float *p = malloc((n ? n : 1) * sizeof *p);
    memcpy(p, x, n * sizeof *p);
    return p;
}

static int32_t *irand(size_t n, int V) {
    int32_t *p = malloc((n ? n : 1) * sizeof *p);
    uint64_t s = g_seed++;
    for (size_t i = 0; i < n; i++) p[i] = (int32_t)tt_rand_below(s, TT_STREAM_TEST, i, (uint64_t)V);
    return p;
}

static int same_bits(const float *a, const float *b, size_t n) { return memcmp(a, b, n * sizeof(float)) == 0; }

/* ref + base, for accumulate checks */
static double *plus(const double *r, const float *base, size_t n) {
    double *p = ref_alloc(n);
    for (size_t i = 0; i < n; i++) p[i] = r[i] + base[i];
    return p;
}

#define CHECK_REL(a, b, n, tol)                                                                  \
    do {                                                                                         \
        double e_ = tt_test_max_rel_err((a), (b), (n));                                          \
        CHECK_MSG(e_ <= (tol), "%s vs %s: rel err %.3g > %.1g", #a, #b, e_, (double)(tol));      \
    } while (0)

/* Matmul-style results: |got - ref| <= 2 (K + 2) u sum_k |a_k b_k| per
 * element (the classic bound for a float dot product of length K, u = 2^-24),
 * with absref holding sum_k |a_k b_k| (+ |initial value|). A wrong index or
 * a missing term is orders of magnitude above it. */
static double *dabs(const float *x, size_t n) {
    double *d = ref_alloc(n);
    for (size_t i = 0; i < n; i++) d[i] = fabs((double)x[i]);
    return d;
}
static void check_bound(const char *what, const float *got, const double *ref, const double *absref, size_t n, int K) {
    double worst = 0.0;
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        double lim = 2.0 * (K + 2) * 5.97e-8 * absref[i] + 1e-30;
        double e = fabs((double)got[i] - ref[i]);
        if (!(e <= lim)) bad++;
        if (e / lim > worst || isnan(e)) worst = isnan(e) ? INFINITY : e / lim;
    }
    CHECK_MSG(bad == 0, "%s: %zu of %zu elements beyond the rounding bound (worst %.3g x bound)", what, bad, n, worst);
}
static double *add_abs(double *r, const float *base, size_t n) {
    for (size_t i = 0; i < n; i++) r[i] += fabs((double)base[i]);
    return r;
}

/* ================= finite differences on the reference ================= */

/* loss(x) = sum_i w_i f(x)_i, evaluated by a callback */
typedef double (*objective)(void *ctx);

/* checks analytic gradient g (of x, n) against central differences of obj
 * on up to 40 sampled coordinates */
static void fd_check(const char *what, objective obj, void *ctx, double *x, const double *g, size_t n) {
    double h = 1e-6, worst = 0.0;
    size_t step = n > 40 ? n / 40 : 1;
    double gmax = 1e-12;
    for (size_t i = 0; i < n; i++) gmax = fmax(gmax, fabs(g[i]));
    for (size_t i = 0; i < n; i += step) {
        double x0 = x[i];
        x[i] = x0 + h;
        double lp = obj(ctx);
        x[i] = x0 - h;
        double lm = obj(ctx);
        x[i] = x0;
        double fd = (lp - lm) / (2 * h);
        double e = fabs(fd - g[i]) / gmax;
        if (e > worst) worst = e;
    }
    CHECK_MSG(worst < 1e-6, "%s: finite-difference rel err %.3g", what, worst);
}

static double wsum(const double *w, const double *y, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += w[i] * y[i];
    return s;
}

static double *drand(size_t n, double lo, double hi) {
    float *f = frand(n, (float)lo, (float)hi);
    double *d = ref_from_float(f, n);
    free(f);
    /* add sub-float detail so the doubles are not float-representable */
    for (size_t i = 0; i < n; i++) d[i] += (hi - lo) * 1e-9 * (double)((i * 2654435761u) % 1000);
    return d;
}

typedef struct {
    int B, T, C, OC, V, NH, N;
    double *x, *w, *b, *wy, *y;
    int32_t *tok;
} fd_ctx;

static double obj_ln(void *v) {
    fd_ctx *c = v;
    ref_layernorm_forward(c->y, NULL, NULL, c->x, c->w, c->b, c->N, c->C);
    return wsum(c->wy, c->y, (size_t)c->N * c->C);
}
static double obj_mm(void *v) {
    fd_ctx *c = v;
    ref_matmul_forward(c->y, c->x, c->w, c->b, c->N, c->C, c->OC);
    return wsum(c->wy, c->y, (size_t)c->N * c->OC);
}
static double obj_head(void *v) {
    fd_ctx *c = v;
    ref_head_forward(c->y, c->x, c->w, c->N, c->C, c->V);
    return wsum(c->wy, c->y, (size_t)c->N * c->V);
}
static double obj_att(void *v) {
    fd_ctx *c = v;
    ref_attention_forward(c->y, NULL, c->x, c->B, c->T, c->C, c->NH);
    return wsum(c->wy, c->y, (size_t)c->B * c->T * c->C);
}
static double obj_gelu(void *v) {
    fd_ctx *c = v;
    ref_gelu_forward(c->y, c->x, (size_t)c->N);
    return wsum(c->wy, c->y, (size_t)c->N);
}
static double obj_ce(void *v) {
    fd_ctx *c = v;
    return ref_crossentropy(NULL, NULL, c->x, c->tok, c->N, c->V, 0.0);
}
static double obj_enc(void *v) {
    fd_ctx *c = v;
    ref_encoder_forward(c->y, c->tok, c->w, c->b, c->B, c->T, c->C);
    return wsum(c->wy, c->y, (size_t)c->B * c->T * c->C);
}

TT_TEST(fd_reference_backwards) {
    fd_ctx c;
    memset(&c, 0, sizeof c);
    /* layernorm */
    c.N = 5, c.C = 13;
    size_t nc = (size_t)c.N * c.C;
    c.x = drand(nc, -2, 2), c.w = drand(c.C, 0.5, 1.5), c.b = drand(c.C, -0.5, 0.5), c.wy = drand(nc, -1, 1);
    c.y = ref_alloc(nc);
    double *dx = ref_alloc(nc), *dw = ref_alloc(c.C), *db = ref_alloc(c.C);
    ref_layernorm_backward(dx, dw, db, c.wy, c.x, c.w, c.N, c.C);
    fd_check("layernorm dinp", obj_ln, &c, c.x, dx, nc);
    fd_check("layernorm dweight", obj_ln, &c, c.w, dw, c.C);
    fd_check("layernorm dbias", obj_ln, &c, c.b, db, c.C);
    free(c.x), free(c.w), free(c.b), free(c.wy), free(c.y), free(dx), free(dw), free(db);
    /* matmul */
    c.N = 4, c.C = 7, c.OC = 5;
    c.x = drand((size_t)c.N * c.C, -1, 1), c.w = drand((size_t)c.C * c.OC, -1, 1), c.b = drand(c.OC, -1, 1);
    c.wy = drand((size_t)c.N * c.OC, -1, 1), c.y = ref_alloc((size_t)c.N * c.OC);
    dx = ref_alloc((size_t)c.N * c.C), dw = ref_alloc((size_t)c.C * c.OC), db = ref_alloc(c.OC);
    ref_matmul_backward(dx, dw, db, c.wy, c.x, c.w, c.N, c.C, c.OC);
    fd_check("matmul dinp", obj_mm, &c, c.x, dx, (size_t)c.N * c.C);
    fd_check("matmul dweight", obj_mm, &c, c.w, dw, (size_t)c.C * c.OC);
    fd_check("matmul dbias", obj_mm, &c, c.b, db, c.OC);
    free(c.x), free(c.w), free(c.b), free(c.wy), free(c.y), free(dx), free(dw), free(db);
    /* head */
    c.N = 4, c.C = 6, c.V = 9;
    c.x = drand((size_t)c.N * c.C, -1, 1), c.w = drand((size_t)c.V * c.C, -1, 1);
    c.wy = drand((size_t)c.N * c.V, -1, 1), c.y = ref_alloc((size_t)c.N * c.V);
    dx = ref_alloc((size_t)c.N * c.C), dw = ref_alloc((size_t)c.V * c.C);
    ref_head_backward(dx, dw, c.wy, c.x, c.w, c.N, c.C, c.V);
    fd_check("head dinp", obj_head, &c, c.x, dx, (size_t)c.N * c.C);
    fd_check("head dwte", obj_head, &c, c.w, dw, (size_t)c.V * c.C);
    free(c.x), free(c.w), free(c.wy), free(c.y), free(dx), free(dw);
    /* attention */
    c.B = 2, c.T = 5, c.C = 6, c.NH = 2;
    size_t n3 = (size_t)c.B * c.T * 3 * c.C, n1 = (size_t)c.B * c.T * c.C;
    c.x = drand(n3, -1.5, 1.5), c.wy = drand(n1, -1, 1), c.y = ref_alloc(n1);
    dx = ref_alloc(n3);
    ref_attention_backward(dx, c.wy, c.x, c.B, c.T, c.C, c.NH);
    fd_check("attention dqkv", obj_att, &c, c.x, dx, n3);
    free(c.x), free(c.wy), free(c.y), free(dx);
    /* gelu */
    c.N = 50;
    c.x = drand(c.N, -5, 5), c.wy = drand(c.N, -1, 1), c.y = ref_alloc(c.N);
    dx = ref_alloc(c.N);
    ref_gelu_backward(dx, c.x, c.wy, c.N);
    fd_check("gelu", obj_gelu, &c, c.x, dx, c.N);
    free(c.x), free(c.wy), free(c.y), free(dx);
    /* cross-entropy (mean loss) */
    c.N = 3, c.V = 11;
    c.x = drand((size_t)c.N * c.V, -3, 3), c.tok = irand(c.N, c.V);
    dx = ref_alloc((size_t)c.N * c.V);
    ref_crossentropy(NULL, dx, c.x, c.tok, c.N, c.V, 1.0 / c.N);
    fd_check("crossentropy", obj_ce, &c, c.x, dx, (size_t)c.N * c.V);
    free(c.x), free(c.tok), free(dx);
    /* encoder */
    c.B = 2, c.T = 3, c.C = 4, c.V = 5;
    c.tok = irand((size_t)c.B * c.T, c.V);
    c.w = drand((size_t)c.V * c.C, -1, 1), c.b = drand((size_t)c.T * c.C, -1, 1);
    c.wy = drand((size_t)c.B * c.T * c.C, -1, 1), c.y = ref_alloc((size_t)c.B * c.T * c.C);
    dw = ref_alloc((size_t)c.V * c.C), db = ref_alloc((size_t)c.T * c.C);
    ref_encoder_backward(dw, db, c.wy, c.tok, c.B, c.T, c.C, c.V);
    fd_check("encoder dwte", obj_enc, &c, c.w, dw, (size_t)c.V * c.C);
    fd_check("encoder dwpe", obj_enc, &c, c.b, db, (size_t)c.T * c.C);
    free(c.tok), free(c.w), free(c.b), free(c.wy), free(c.y), free(dw), free(db);
}

/* ================= CPU ops vs reference ================= */

TT_TEST(encoder_matches_reference) {
    for (int si = 0; si < NSIZES; si++)
        for (int sj = 0; sj < 3; sj++) {
            int B = 1 + sj, T = SIZES[si] > 65 ? 65 : SIZES[si], C = SIZES[(si + sj) % NSIZES], V = 256;
            size_t n = (size_t)B * T * C;
            int32_t *tok = irand((size_t)B * T, V);
            float *wte = frand((size_t)V * C, -1, 1), *wpe = frand((size_t)T * C, -1, 1);
            float *out1 = fpoison(n), *out3 = fpoison(n);
            tt_encoder_forward(&cpu1, out1, tok, wte, wpe, B, T, C);
            tt_encoder_forward(&cpu3, out3, tok, wte, wpe, B, T, C);
            double *dwte = ref_from_float(wte, (size_t)V * C), *dwpe = ref_from_float(wpe, (size_t)T * C);
            double *ref = ref_alloc(n);
            ref_encoder_forward(ref, tok, dwte, dwpe, B, T, C);
            CHECK_REL(out1, ref, n, 1e-7);
            CHECK(same_bits(out1, out3, n));
            /* backward accumulates onto random gradients */
            float *dout = frand(n, -1, 1);
            float *g0te = frand((size_t)V * C, -1, 1), *g0pe = frand((size_t)T * C, -1, 1);
            float *gte1 = fcopy(g0te, (size_t)V * C), *gpe1 = fcopy(g0pe, (size_t)T * C);
            float *gte3 = fcopy(g0te, (size_t)V * C), *gpe3 = fcopy(g0pe, (size_t)T * C);
            tt_encoder_backward(&cpu1, gte1, gpe1, dout, tok, B, T, C, V);
            tt_encoder_backward(&cpu3, gte3, gpe3, dout, tok, B, T, C, V);
            double *ddout = ref_from_float(dout, n), *rte = ref_alloc((size_t)V * C), *rpe = ref_alloc((size_t)T * C);
            ref_encoder_backward(rte, rpe, ddout, tok, B, T, C, V);
            double *ete = plus(rte, g0te, (size_t)V * C), *epe = plus(rpe, g0pe, (size_t)T * C);
            CHECK_REL(gte1, ete, (size_t)V * C, 1e-6);
            CHECK_REL(gpe1, epe, (size_t)T * C, 1e-6);
            CHECK(same_bits(gte1, gte3, (size_t)V * C) && same_bits(gpe1, gpe3, (size_t)T * C));
            free(tok), free(wte), free(wpe), free(out1), free(out3), free(dwte), free(dwpe), free(ref), free(dout);
            free(g0te), free(g0pe), free(gte1), free(gpe1), free(gte3), free(gpe3), free(ddout), free(rte), free(rpe);
            free(ete), free(epe);
        }
}

TT_TEST(layernorm_matches_reference) {
    for (int si = 0; si < NSIZES; si++)
        for (int sj = 0; sj < NSIZES; sj++) {
            int N = SIZES[si], C = SIZES[sj];
            size_t n = (size_t)N * C;
            float *x = frand(n, -3, 3), *w = frand(C, 0.5f, 1.5f), *b = frand(C, -0.5f, 0.5f);
            /* give rows different means and scales */
            for (int i = 0; i < N; i++)
                for (int c = 0; c < C; c++) x[(size_t)i * C + c] = x[(size_t)i * C + c] * (1.0f + i % 4) + (float)(i % 7) - 3.0f;
            float *out = fpoison(n), *mean = fpoison(N), *rstd = fpoison(N);
            float *out3 = fpoison(n), *mean3 = fpoison(N), *rstd3 = fpoison(N);
            tt_layernorm_forward(&cpu1, out, mean, rstd, x, w, b, N, C);
            tt_layernorm_forward(&cpu3, out3, mean3, rstd3, x, w, b, N, C);
            double *dx = ref_from_float(x, n), *dw = ref_from_float(w, C), *db = ref_from_float(b, C);
            double *rout = ref_alloc(n), *rmean = ref_alloc(N), *rrstd = ref_alloc(N);
            ref_layernorm_forward(rout, rmean, rrstd, dx, dw, db, N, C);
            CHECK_REL(out, rout, n, 2e-5);
            CHECK_REL(mean, rmean, (size_t)N, 1e-5);
            /* rstd of a 1-wide row is 1/sqrt(eps): compare per element */
            for (int i = 0; i < N; i++) CHECK_CLOSE(rstd[i], rrstd[i], 2e-4, 0.0);
            CHECK(same_bits(out, out3, n) && same_bits(mean, mean3, N) && same_bits(rstd, rstd3, N));
            /* backward: overwrite and accumulate modes */
            float *dy = frand(n, -1, 1), *gw0 = frand(C, -1, 1), *gb0 = frand(C, -1, 1), *dx0 = frand(n, -1, 1);
            double *ddy = ref_from_float(dy, n), *rdx = ref_alloc(n), *rgw = ref_alloc(C), *rgb = ref_alloc(C);
            ref_layernorm_backward(rdx, rgw, rgb, ddy, dx, dw, N, C);
            for (int mode = 0; mode < 2; mode++) {
                float *gdx1 = mode ? fcopy(dx0, n) : fpoison(n), *gdx3 = mode ? fcopy(dx0, n) : fpoison(n);
                float *gw1 = fcopy(gw0, C), *gb1 = fcopy(gb0, C), *gw3 = fcopy(gw0, C), *gb3 = fcopy(gb0, C);
                tt_layernorm_backward(&cpu1, gdx1, gw1, gb1, dy, x, w, mean, rstd, N, C, mode);
                tt_layernorm_backward(&cpu3, gdx3, gw3, gb3, dy, x, w, mean, rstd, N, C, mode);
                double *edx = ref_alloc(n);
                for (size_t i = 0; i < n; i++) edx[i] = rdx[i] + (mode ? dx0[i] : 0.0);
                double *egw = plus(rgw, gw0, C), *egb = plus(rgb, gb0, C);
                /* C == 1: the normalised value is exactly 0 and dinp is pure rounding noise */
                if (C > 1) CHECK_REL(gdx1, edx, n, 5e-5);
                CHECK_REL(gw1, egw, (size_t)C, 2e-5);
                CHECK_REL(gb1, egb, (size_t)C, 2e-5);
                CHECK(same_bits(gdx1, gdx3, n) && same_bits(gw1, gw3, C) && same_bits(gb1, gb3, C));
                free(gdx1), free(gdx3), free(gw1), free(gb1), free(gw3), free(gb3), free(edx), free(egw), free(egb);
            }
            free(x), free(w), free(b), free(out), free(mean), free(rstd), free(out3), free(mean3), free(rstd3);
            free(dx), free(dw), free(db), free(rout), free(rmean), free(rrstd);
            free(dy), free(gw0), free(gb0), free(dx0), free(ddy), free(rdx), free(rgw), free(rgb);
        }
}

static void check_matmul(int N, int C, int OC) {
    float *x = frand((size_t)N * C, -1, 1), *w = frand((size_t)C * OC, -1, 1), *b = frand(OC, -1, 1);
    float *r = frand((size_t)N * OC, -1, 1);
    size_t no = (size_t)N * OC, nc = (size_t)N * C, co = (size_t)C * OC;
    char what[128];
    double *dxd = ref_from_float(x, nc), *dwd = ref_from_float(w, co), *dbd = ref_from_float(b, OC);
    double *ax = dabs(x, nc), *aw = dabs(w, co), *ab = dabs(b, OC);
    double *ref = ref_alloc(no), *refnb = ref_alloc(no), *aref = ref_alloc(no), *arefnb = ref_alloc(no);
    ref_matmul_forward(ref, dxd, dwd, dbd, N, C, OC);
    ref_matmul_forward(refnb, dxd, dwd, NULL, N, C, OC);
    ref_matmul_forward(aref, ax, aw, ab, N, C, OC);
    ref_matmul_forward(arefnb, ax, aw, NULL, N, C, OC);
    /* forward with and without bias, 1 and 3 threads */
    float *o1 = fpoison(no), *o3 = fpoison(no);
    tt_matmul_forward(&cpu1, o1, x, w, b, N, C, OC);
    tt_matmul_forward(&cpu3, o3, x, w, b, N, C, OC);
    snprintf(what, sizeof what, "matmul fwd %dx%dx%d", N, C, OC);
    check_bound(what, o1, ref, aref, no, C);
    CHECK_MSG(same_bits(o1, o3, no), "%s: 1 vs 3 threads differ", what);
    tt_matmul_forward(&cpu3, o3, x, w, NULL, N, C, OC);
    check_bound(what, o3, refnb, arefnb, no, C);
    /* fused residual, in place (out == resid) */
    double *eres = plus(ref, r, no);
    add_abs(aref, r, no);
    memcpy(o1, r, no * sizeof(float));
    tt_matmul_residual_forward(&cpu3, o1, x, w, b, o1, N, C, OC);
    check_bound("matmul residual fwd", o1, eres, aref, no, C + 1);
    /* backward */
    float *dy = frand(no, -1, 1), *gw0 = frand(co, -1, 1), *gb0 = frand(OC, -1, 1);
    double *ddy = ref_from_float(dy, no), *ady = dabs(dy, no);
    double *rdx = ref_alloc(nc), *rgw = ref_alloc(co), *rgb = ref_alloc(OC);
    double *adx = ref_alloc(nc), *agw = ref_alloc(co), *agb = ref_alloc(OC);
    ref_matmul_backward(rdx, rgw, rgb, ddy, dxd, dwd, N, C, OC);
    ref_matmul_backward(adx, agw, agb, ady, ax, aw, N, C, OC);
    double *egw = plus(rgw, gw0, co), *egb = plus(rgb, gb0, OC);
    add_abs(agw, gw0, co);
    add_abs(agb, gb0, OC);
    float *dx1 = fpoison(nc), *dx3 = fpoison(nc);
    float *gw1 = fcopy(gw0, co), *gw3 = fcopy(gw0, co), *gb1 = fcopy(gb0, OC), *gb3 = fcopy(gb0, OC);
    tt_matmul_backward(&cpu1, dx1, gw1, gb1, dy, x, w, N, C, OC);
    tt_matmul_backward(&cpu3, dx3, gw3, gb3, dy, x, w, N, C, OC);
    snprintf(what, sizeof what, "matmul bwd %dx%dx%d dinp", N, C, OC);
    check_bound(what, dx1, rdx, adx, nc, OC);
    snprintf(what, sizeof what, "matmul bwd %dx%dx%d dweight", N, C, OC);
    check_bound(what, gw1, egw, agw, co, N + 1);
    snprintf(what, sizeof what, "matmul bwd %dx%dx%d dbias", N, C, OC);
    check_bound(what, gb1, egb, agb, OC, N + 1);
    CHECK_MSG(same_bits(dx1, dx3, nc) && same_bits(gw1, gw3, co) && same_bits(gb1, gb3, OC),
              "matmul bwd %dx%dx%d: 1 vs 3 threads differ", N, C, OC);
    /* NULL gradients are skipped */
    float *gw_keep = fcopy(gw0, co);
    tt_matmul_backward(&cpu3, dx3, NULL, NULL, dy, x, w, N, C, OC);
    CHECK(same_bits(dx1, dx3, nc));
    tt_matmul_backward(&cpu3, NULL, gw_keep, NULL, dy, x, w, N, C, OC);
    CHECK(same_bits(gw_keep, gw1, co));
    free(x), free(w), free(b), free(r), free(dxd), free(dwd), free(dbd), free(ax), free(aw), free(ab);
    free(ref), free(refnb), free(aref), free(arefnb), free(o1), free(o3), free(eres), free(dy), free(gw0), free(gb0);
    free(ddy), free(ady), free(rdx), free(rgw), free(rgb), free(adx), free(agw), free(agb), free(egw), free(egb);
    free(dx1), free(dx3), free(gw1), free(gw3), free(gb1), free(gb3), free(gw_keep);
}

TT_TEST(matmul_matches_reference) {
    for (int a = 0; a < NSIZES; a++)
        for (int b = 0; b < NSIZES; b++)
            for (int c = 0; c < NSIZES; c++) check_matmul(SIZES[a], SIZES[b], SIZES[c]);
    /* several K blocks (K > 256) and several row/column blocks */
    check_matmul(300, 290, 45);
    check_matmul(77, 520, 300);
    check_matmul(600, 48, 192);
}

/* the GELU-fused linear ops give the same bits as the separate ops */
TT_TEST(matmul_gelu_fused_matches_separate_ops) {
    const int shapes[][3] = {{1, 3, 17}, {17, 65, 127}, {65, 48, 192}, {127, 17, 65}, {300, 290, 45}, {40, 300, 64}};
    for (int s = 0; s < 6; s++) {
        int N = shapes[s][0], C = shapes[s][1], OC = shapes[s][2];
        size_t nc = (size_t)N * C, no = (size_t)N * OC, co = (size_t)C * OC;
        float *x = frand(nc, -2, 2), *w = frand(co, -1, 1), *b = frand(OC, -1, 1);
        float *pre1 = fpoison(no), *out1 = fpoison(no), *pre2 = fpoison(no), *out2 = fpoison(no), *pre3 = fpoison(no), *out3 = fpoison(no);
        tt_matmul_gelu_forward(&cpu1, pre1, out1, x, w, b, N, C, OC);
        tt_matmul_gelu_forward(&cpu3, pre3, out3, x, w, b, N, C, OC);
        tt_matmul_forward(&cpu1, pre2, x, w, b, N, C, OC);
        tt_gelu_forward(&cpu1, out2, pre2, no);
        CHECK_MSG(same_bits(pre1, pre2, no) && same_bits(out1, out2, no), "fused fwd %dx%dx%d differs", N, C, OC);
        CHECK(same_bits(pre1, pre3, no) && same_bits(out1, out3, no));
        /* backward of a layer whose input went through GELU: x plays the pre-activation */
        float *dy = frand(no, -1, 1), *gw0 = frand(co, -1, 1), *gb0 = frand(OC, -1, 1);
        float *dx1 = fpoison(nc), *dx2 = fpoison(nc), *dx3 = fpoison(nc);
        float *gw1 = fcopy(gw0, co), *gw2 = fcopy(gw0, co), *gw3 = fcopy(gw0, co);
        float *gb1 = fcopy(gb0, OC), *gb2 = fcopy(gb0, OC), *gb3 = fcopy(gb0, OC);
        float *gx = frand(nc, -3, 3); /* GELU input */
        tt_matmul_gelu_backward(&cpu1, dx1, gw1, gb1, dy, x, w, gx, N, C, OC);
        tt_matmul_gelu_backward(&cpu3, dx3, gw3, gb3, dy, x, w, gx, N, C, OC);
        tt_matmul_backward(&cpu1, dx2, gw2, gb2, dy, x, w, N, C, OC);
        tt_gelu_backward(&cpu1, dx2, gx, dx2, nc);
        CHECK_MSG(same_bits(dx1, dx2, nc) && same_bits(gw1, gw2, co) && same_bits(gb1, gb2, OC),
                  "fused bwd %dx%dx%d differs", N, C, OC);
        CHECK(same_bits(dx1, dx3, nc) && same_bits(gw1, gw3, co) && same_bits(gb1, gb3, OC));
        free(x), free(w), free(b), free(pre1), free(out1), free(pre2), free(out2), free(pre3), free(out3);
        free(dy), free(gw0), free(gb0), free(dx1), free(dx2), free(dx3), free(gw1), free(gw2), free(gw3);
        free(gb1), free(gb2), free(gb3), free(gx);
    }
}

TT_TEST(qkv_matches_reference) {
    const int Ns[] = {1, 17, 65}, Cs[] = {1, 12, 48, 65};
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 4; b++) {
            int N = Ns[a], C = Cs[b];
            size_t nc = (size_t)N * C, cc = (size_t)C * C;
            float *x = frand(nc, -1, 1), *w[3], *bb[3], *gw0[3], *gb0[3];
            for (int i = 0; i < 3; i++) w[i] = frand(cc, -1, 1), bb[i] = frand(C, -1, 1), gw0[i] = frand(cc, -1, 1), gb0[i] = frand(C, -1, 1);
            float *qkv1 = fpoison(3 * nc), *qkv3 = fpoison(3 * nc);
            tt_qkv_forward(&cpu1, qkv1, x, w[0], bb[0], w[1], bb[1], w[2], bb[2], N, C);
            tt_qkv_forward(&cpu3, qkv3, x, w[0], bb[0], w[1], bb[1], w[2], bb[2], N, C);
            CHECK(same_bits(qkv1, qkv3, 3 * nc));
            float *dqkv = frand(3 * nc, -1, 1);
            float *dx1 = fpoison(nc), *dx3 = fpoison(nc), *gw1[3], *gb1[3], *gw3[3], *gb3[3];
            for (int i = 0; i < 3; i++) gw1[i] = fcopy(gw0[i], cc), gb1[i] = fcopy(gb0[i], C), gw3[i] = fcopy(gw0[i], cc), gb3[i] = fcopy(gb0[i], C);
            tt_qkv_backward(&cpu1, dx1, gw1[0], gb1[0], gw1[1], gb1[1], gw1[2], gb1[2], dqkv, x, w[0], w[1], w[2], N, C);
            tt_qkv_backward(&cpu3, dx3, gw3[0], gb3[0], gw3[1], gb3[1], gw3[2], gb3[2], dqkv, x, w[0], w[1], w[2], N, C);
            CHECK(same_bits(dx1, dx3, nc));
            /* reference: three separate linear layers */
            double *dx = ref_from_float(x, nc), *ax = dabs(x, nc);
            double *ref = ref_alloc(3 * nc), *aref = ref_alloc(3 * nc), *rdx = ref_alloc(nc), *adx = ref_alloc(nc);
            double *tmp = ref_alloc(nc), *atmp = ref_alloc(nc), *dsl = ref_alloc(nc), *adsl = ref_alloc(nc);
            double *rgw = ref_alloc(cc), *rgb = ref_alloc(C), *agw = ref_alloc(cc), *agb = ref_alloc(C);
            for (int i = 0; i < 3; i++) {
                double *dw = ref_from_float(w[i], cc), *db = ref_from_float(bb[i], C), *aw = dabs(w[i], cc), *ab = dabs(bb[i], C);
                ref_matmul_forward(tmp, dx, dw, db, N, C, C);
                ref_matmul_forward(atmp, ax, aw, ab, N, C, C);
                for (int r = 0; r < N; r++) {
                    memcpy(ref + (size_t)r * 3 * C + (size_t)i * C, tmp + (size_t)r * C, (size_t)C * sizeof(double));
                    memcpy(aref + (size_t)r * 3 * C + (size_t)i * C, atmp + (size_t)r * C, (size_t)C * sizeof(double));
                    for (int c = 0; c < C; c++) {
                        dsl[(size_t)r * C + c] = dqkv[(size_t)r * 3 * C + (size_t)i * C + c];
                        adsl[(size_t)r * C + c] = fabs(dsl[(size_t)r * C + c]);
                    }
                }
                ref_matmul_backward(tmp, rgw, rgb, dsl, dx, dw, N, C, C);
                for (size_t k = 0; k < nc; k++) rdx[k] += tmp[k];
                ref_matmul_backward(atmp, agw, agb, adsl, ax, aw, N, C, C);
                for (size_t k = 0; k < nc; k++) adx[k] += atmp[k];
                double *egw = plus(rgw, gw0[i], cc), *egb = plus(rgb, gb0[i], C);
                add_abs(agw, gw0[i], cc);
                add_abs(agb, gb0[i], C);
                check_bound("qkv dweight", gw1[i], egw, agw, cc, N + 1);
                check_bound("qkv dbias", gb1[i], egb, agb, C, N + 1);
                CHECK(same_bits(gw1[i], gw3[i], cc) && same_bits(gb1[i], gb3[i], C));
                free(dw), free(db), free(aw), free(ab), free(egw), free(egb);
            }
            check_bound("qkv fwd", qkv1, ref, aref, 3 * nc, C);
            check_bound("qkv dinp", dx1, rdx, adx, nc, 3 * C);
            for (int i = 0; i < 3; i++) free(w[i]), free(bb[i]), free(gw0[i]), free(gb0[i]), free(gw1[i]), free(gb1[i]), free(gw3[i]), free(gb3[i]);
            free(x), free(qkv1), free(qkv3), free(dqkv), free(dx1), free(dx3), free(dx), free(ax), free(ref), free(aref);
            free(rdx), free(adx), free(tmp), free(atmp), free(dsl), free(adsl), free(rgw), free(rgb), free(agw), free(agb);
        }
}

TT_TEST(head_matches_reference) {
    const int Vs[] = {256, 1, 17};
    for (int a = 0; a < NSIZES; a++)
        for (int b = 0; b < NSIZES; b++)
            for (int c = 0; c < 3; c++) {
                int N = SIZES[a], C = SIZES[b], V = Vs[c];
                size_t nc = (size_t)N * C, nv = (size_t)N * V, vc = (size_t)V * C;
                float *x = frand(nc, -1, 1), *wte = frand(vc, -1, 1), *dl = frand(nv, -1, 1), *g0 = frand(vc, -1, 1);
                float *lg1 = fpoison(nv), *lg3 = fpoison(nv);
                tt_head_forward(&cpu1, lg1, x, wte, N, C, V);
                tt_head_forward(&cpu3, lg3, x, wte, N, C, V);
                double *dx = ref_from_float(x, nc), *dw = ref_from_float(wte, vc), *ref = ref_alloc(nv);
                double *ax = dabs(x, nc), *aw = dabs(wte, vc), *adl = dabs(dl, nv), *aref = ref_alloc(nv);
                double *agx = ref_alloc(nc), *agw = ref_alloc(vc);
                ref_head_forward(ref, dx, dw, N, C, V);
                ref_head_forward(aref, ax, aw, N, C, V);
                ref_head_backward(agx, agw, adl, ax, aw, N, C, V);
                add_abs(agw, g0, vc);
                check_bound("head fwd", lg1, ref, aref, nv, C);
                CHECK(same_bits(lg1, lg3, nv));
                float *gx1 = fpoison(nc), *gx3 = fpoison(nc), *gw1 = fcopy(g0, vc), *gw3 = fcopy(g0, vc);
                tt_head_backward(&cpu1, gx1, gw1, dl, x, wte, N, C, V);
                tt_head_backward(&cpu3, gx3, gw3, dl, x, wte, N, C, V);
                double *ddl = ref_from_float(dl, nv), *rgx = ref_alloc(nc), *rgw = ref_alloc(vc);
                ref_head_backward(rgx, rgw, ddl, dx, dw, N, C, V);
                double *egw = plus(rgw, g0, vc);
                check_bound("head dinp", gx1, rgx, agx, nc, V);
                check_bound("head dwte", gw1, egw, agw, vc, N + 1);
                CHECK(same_bits(gx1, gx3, nc) && same_bits(gw1, gw3, vc));
                free(ax), free(aw), free(adl), free(aref), free(agx), free(agw);
                free(x), free(wte), free(dl), free(g0), free(lg1), free(lg3), free(dx), free(dw), free(ref);
                free(gx1), free(gx3), free(gw1), free(gw3), free(ddl), free(rgx), free(rgw), free(egw);
            }
}

static void check_attention(int B, int T, int C, int NH) {
    size_t n3 = (size_t)B * T * 3 * C, n1 = (size_t)B * T * C, nl = (size_t)B * NH * T;
    float *qkv = frand(n3, -2, 2), *dout = frand(n1, -1, 1);
    float *o1 = fpoison(n1), *o3 = fpoison(n1), *l1 = fpoison(nl), *l3 = fpoison(nl);
    tt_attention_forward(&cpu1, o1, l1, qkv, B, T, C, NH);
    tt_attention_forward(&cpu3, o3, l3, qkv, B, T, C, NH);
    double *dq = ref_from_float(qkv, n3), *ro = ref_alloc(n1), *rl = ref_alloc(nl);
    ref_attention_forward(ro, rl, dq, B, T, C, NH);
    CHECK_MSG(tt_test_max_rel_err(o1, ro, n1) < 2e-6, "attention fwd B=%d T=%d C=%d NH=%d: %.3g", B, T, C, NH,
              tt_test_max_rel_err(o1, ro, n1));
    CHECK_REL(l1, rl, nl, 2e-6);
    CHECK(same_bits(o1, o3, n1) && same_bits(l1, l3, nl));
    float *g1 = fpoison(n3), *g3 = fpoison(n3);
    tt_attention_backward(&cpu1, g1, dout, qkv, o1, l1, B, T, C, NH);
    tt_attention_backward(&cpu3, g3, dout, qkv, o1, l1, B, T, C, NH);
    double *dd = ref_from_float(dout, n1), *rg = ref_alloc(n3);
    ref_attention_backward(rg, dd, dq, B, T, C, NH);
    CHECK_MSG(tt_test_max_rel_err(g1, rg, n3) < 1e-5, "attention bwd B=%d T=%d C=%d NH=%d: %.3g", B, T, C, NH,
              tt_test_max_rel_err(g1, rg, n3));
    CHECK(same_bits(g1, g3, n3));
    free(qkv), free(dout), free(o1), free(o3), free(l1), free(l3), free(dq), free(ro), free(rl), free(g1), free(g3);
    free(dd), free(rg);
}

TT_TEST(attention_matches_reference) {
    const int Ts[] = {1, 3, 17, 65, 127};
    /* (C, NH): head sizes 4, 16, 17, 32, 1, 64 */
    const int CN[][2] = {{12, 3}, {48, 3}, {34, 2}, {64, 2}, {3, 3}, {64, 1}};
    for (int t = 0; t < 5; t++)
        for (int c = 0; c < 6; c++) {
            if (Ts[t] == 127 && c != 1 && c != 3) continue; /* keep the reference cheap */
            check_attention(1 + (t + c) % 3, Ts[t], CN[c][0], CN[c][1]);
        }
}

TT_TEST(gelu_matches_reference) {
    const size_t ns[] = {1, 3, 17, 65, 127, 20000};
    for (int k = 0; k < 6; k++) {
        size_t n = ns[k];
        float *x = frand(n, -7, 7), *dy = frand(n, -1, 1);
        float *y1 = fpoison(n), *y3 = fpoison(n), *dx1 = fpoison(n), *dx3 = fpoison(n);
        tt_gelu_forward(&cpu1, y1, x, n);
        tt_gelu_forward(&cpu3, y3, x, n);
        double *dxd = ref_from_float(x, n), *ry = ref_alloc(n), *ddy = ref_from_float(dy, n), *rdx = ref_alloc(n);
        ref_gelu_forward(ry, dxd, n);
        ref_gelu_backward(rdx, dxd, ddy, n);
        /* elementwise: |err| <= 1e-6 * (1 + |ref|) */
        int bad = 0;
        for (size_t i = 0; i < n; i++) bad += !(fabs(y1[i] - ry[i]) <= 1e-6 * (1 + fabs(ry[i])));
        CHECK_MSG(bad == 0, "gelu fwd n=%zu: %d elements off", n, bad);
        tt_gelu_backward(&cpu1, dx1, x, dy, n);
        tt_gelu_backward(&cpu3, dx3, x, dy, n);
        bad = 0;
        for (size_t i = 0; i < n; i++) bad += !(fabs(dx1[i] - rdx[i]) <= 1e-6 * (1 + fabs(rdx[i])));
        CHECK_MSG(bad == 0, "gelu bwd n=%zu: %d elements off", n, bad);
        CHECK(same_bits(y1, y3, n) && same_bits(dx1, dx3, n));
        /* in place (dinp aliasing dout) */
        float *dyc = fcopy(dy, n);
        tt_gelu_backward(&cpu3, dyc, x, dyc, n);
        CHECK(same_bits(dyc, dx1, n));
        free(x), free(dy), free(y1), free(y3), free(dx1), free(dx3), free(dxd), free(ry), free(ddy), free(rdx), free(dyc);
    }
}

TT_TEST(residual_matches_reference) {
    const size_t ns[] = {1, 3, 17, 65, 127, 20000};
    for (int k = 0; k < 6; k++) {
        size_t n = ns[k];
        float *a = frand(n, -1, 1), *b = frand(n, -1, 1), *d = frand(n, -1, 1), *ga = frand(n, -1, 1), *gb = frand(n, -1, 1);
        float *o = fpoison(n);
        tt_residual_forward(&cpu3, o, a, b, n);
        int bad = 0;
        for (size_t i = 0; i < n; i++) bad += o[i] != a[i] + b[i];
        CHECK(bad == 0);
        float *ga1 = fcopy(ga, n), *gb1 = fcopy(gb, n);
        tt_residual_backward(&cpu3, ga1, gb1, d, n);
        bad = 0;
        for (size_t i = 0; i < n; i++) bad += ga1[i] != ga[i] + d[i] || gb1[i] != gb[i] + d[i];
        CHECK(bad == 0);
        free(a), free(b), free(d), free(ga), free(gb), free(o), free(ga1), free(gb1);
    }
}

TT_TEST(crossentropy_matches_reference) {
    const int Vs[] = {256, 1, 3, 17, 127};
    for (int a = 0; a < 4; a++)
        for (int c = 0; c < 5; c++) {
            int N = SIZES[a], V = Vs[c];
            size_t nv = (size_t)N * V;
            float *lg = frand(nv, -8, 8);
            int32_t *tg = irand(N, V);
            float dscale = 1.0f / (float)(N * 3);
            float *loss1 = fpoison(N), *loss3 = fpoison(N), *d1 = fpoison(nv), *d3 = fcopy(lg, nv);
            float m1 = tt_crossentropy_forward(&cpu1, loss1, d1, lg, tg, N, V, dscale);
            float m3 = tt_crossentropy_forward(&cpu3, loss3, d3, d3, tg, N, V, dscale); /* in place */
            double *dl = ref_from_float(lg, nv), *rl = ref_alloc(N), *rd = ref_alloc(nv);
            double rm = ref_crossentropy(rl, rd, dl, tg, N, V, dscale);
            CHECK_CLOSE(m1, rm, 2e-6, 1e-6);
            CHECK_REL(loss1, rl, (size_t)N, 2e-6);
            CHECK_REL(d1, rd, nv, 2e-6);
            CHECK(m1 == m3 && same_bits(loss1, loss3, N) && same_bits(d1, d3, nv));
            float *d4 = fpoison(nv);
            tt_crossentropy_backward(&cpu3, d4, lg, tg, N, V, dscale);
            CHECK(same_bits(d1, d4, nv));
            free(lg), free(tg), free(loss1), free(loss3), free(d1), free(d3), free(dl), free(rl), free(rd), free(d4);
        }
    /* extreme logits stay finite */
    int V = 256;
    float *lg = frand(V, -1, 1);
    lg[5] = 80.0f;
    lg[6] = -80.0f;
    int32_t tg = 6;
    float l, d[256];
    float m = tt_crossentropy_forward(&cpu1, &l, d, lg, &tg, 1, V, 1.0f);
    CHECK(isfinite(m) && fabs(m - 160.0f) < 0.01f);
    CHECK(fabsf(d[5] - 1.0f) < 1e-6f && fabsf(d[6] + 1.0f) < 1e-6f);
    free(lg);
}

TT_TEST(grad_norm_and_adamw_match_reference) {
    tt_model_config cfg = {2, 20, 2, 9, 2, TT_VOCAB};
    tt_layout lo;
    tt_status st;
    CHECK(tt_layout_build(&cfg, &lo, &st) == TT_OK);
    tt_span *spans;
    int64_t ns;
    CHECK(tt_spans_build(&lo, &spans, &ns, &st) == TT_OK);
    /* spans cover the buffer exactly, in order, never crossing a tensor */
    size_t covered = 0;
    for (int64_t i = 0; i < ns; i++) {
        CHECK(spans[i].off == covered && spans[i].len > 0 && spans[i].len <= TT_SPAN_MAX);
        covered += spans[i].len;
    }
    CHECK(covered == lo.total);
    size_t n = lo.total;
    float *g = frand(n, -1, 1), *p = frand(n, -1, 1), *m = frand(n, -0.1f, 0.1f), *v = frand(n, 0, 0.01f);
    double *part = malloc((size_t)ns * sizeof(double));
    double ss1 = tt_grad_sumsq(&cpu1, g, spans, ns, part), ss3 = tt_grad_sumsq(&cpu3, g, spans, ns, part);
    double rss = 0;
    for (size_t i = 0; i < n; i++) rss += (double)g[i] * g[i];
    CHECK_CLOSE(ss1, rss, 1e-6, 0);
    CHECK(ss1 == ss3);
    tt_optim_args a = {1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, 0, 0};
    a.bc1 = (float)(1 - pow(0.9, 3)), a.bc2 = (float)(1 - pow(0.95, 3));
    double norm = sqrt(rss);
    CHECK(norm > a.clip); /* clipping active */
    float scale = (float)(a.clip / (norm + 1e-6));
    float *p1 = fcopy(p, n), *m1 = fcopy(m, n), *v1 = fcopy(v, n), *g1 = fcopy(g, n);
    float *p3 = fcopy(p, n), *m3 = fcopy(m, n), *v3 = fcopy(v, n), *g3 = fcopy(g, n);
    tt_adamw_update(&cpu1, p1, g1, m1, v1, spans, ns, &a, scale, 1);
    tt_adamw_update(&cpu3, p3, g3, m3, v3, spans, ns, &a, scale, 0);
    double *rp = ref_from_float(p, n), *rm = ref_from_float(m, n), *rv = ref_from_float(v, n), *rg = ref_from_float(g, n);
    double rn = ref_optimizer_step(&lo, rp, rm, rv, rg, &a);
    CHECK_CLOSE(rn, norm, 1e-9, 0);
    CHECK_REL(p1, rp, n, 1e-6);
    CHECK_REL(m1, rm, n, 1e-6);
    CHECK_REL(v1, rv, n, 1e-6);
    CHECK(same_bits(p1, p3, n) && same_bits(m1, m3, n) && same_bits(v1, v3, n));
    int zero = 1;
    for (size_t i = 0; i < n; i++) zero &= g1[i] == 0.0f;
    CHECK(zero);                   /* zero_grads = 1 */
    CHECK(same_bits(g3, g, n));    /* zero_grads = 0 */
    /* weight decay only where the layout says so: a bias with zero gradient
     * and zero moments must not move, a matrix must shrink */
    float *pz = fcopy(p, n), *gz = calloc(n, sizeof(float)), *mz = calloc(n, sizeof(float)), *vz = calloc(n, sizeof(float));
    tt_adamw_update(&cpu3, pz, gz, mz, vz, spans, ns, &a, 1.0f, 1);
    size_t qb = tt_layout_offset(&lo, &cfg, TT_QB, 0), qw = tt_layout_offset(&lo, &cfg, TT_QW, 0);
    CHECK(pz[qb] == p[qb]);
    CHECK(pz[qw] == p[qw] - a.lr * a.weight_decay * p[qw]);
    free(g), free(p), free(m), free(v), free(part), free(p1), free(m1), free(v1), free(g1), free(p3), free(m3), free(v3);
    free(g3), free(rp), free(rm), free(rv), free(rg), free(pz), free(gz), free(mz), free(vz), free(spans);
    tt_layout_free(&lo);
}

/* an op that needs more scratch than the context has leaves its output
 * alone and flags the context instead of writing out of bounds */
TT_TEST(scratch_overflow_is_refused) {
    tt_cpu small;
    tt_status st;
    CHECK(tt_cpu_create(&small, 2, 16, 0, &st) == TT_OK);
    float *x = frand(64 * 64, -1, 1), *w = frand(64 * 64, -1, 1), *o = frand(64 * 64, -1, 1), *o0 = fcopy(o, 64 * 64);
    tt_matmul_forward(&small, o, x, w, NULL, 64, 64, 64);
    CHECK(small.error == 1);
    CHECK(same_bits(o, o0, 64 * 64));
    free(x), free(w), free(o), free(o0);
    tt_cpu_destroy(&small);
}

int main(void) {
    tt_status st;
    /* scratch for the largest shapes below (600 rows, 520 x 300 matrices, V = 256) */
    size_t shared = tt_matmul_backward_scratch(600, 520, 300);
    shared = TT_MAX(shared, tt_matmul_backward_scratch(600, 300, 520));
    shared = TT_MAX(shared, tt_head_backward_scratch(127, 127, 256));
    shared = TT_MAX(shared, tt_qkv_backward_scratch(65, 65));
    shared = TT_MAX(shared, tt_layernorm_backward_scratch(127, 127));
    size_t thread = tt_attention_thread_scratch(127, 64);
    if (tt_cpu_create(&cpu1, 1, shared, thread, &st) || tt_cpu_create(&cpu3, 3, shared, thread, &st)) {
        fprintf(stderr, "cpu context: %s\n", st.msg);
        return 1;
    }
    CHECK(cpu3.nthreads == 3);
    RUN(fd_reference_backwards);
    RUN(encoder_matches_reference);
    RUN(layernorm_matches_reference);
    RUN(matmul_matches_reference);
    RUN(matmul_gelu_fused_matches_separate_ops);
    RUN(qkv_matches_reference);
    RUN(head_matches_reference);
    RUN(attention_matches_reference);
    RUN(gelu_matches_reference);
    RUN(residual_matches_reference);
    RUN(crossentropy_matches_reference);
    RUN(grad_norm_and_adamw_match_reference);
    RUN(scratch_overflow_is_refused);
    CHECK(cpu1.error == 0 && cpu3.error == 0);
    tt_cpu_destroy(&cpu1);
    tt_cpu_destroy(&cpu3);
    return tt_test_summary();
}
