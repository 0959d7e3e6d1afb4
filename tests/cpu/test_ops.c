/* test_ops.c — what is particular to the CPU ops (src/cpu/ops.h); their
 * accuracy against the float64 reference on awkward shapes is
 * tests/ops/test_backend_ops.c. Here: finite-difference checks of the
 * reference backwards in float64; bit-identical results for 1 and 3
 * threads; the accumulate/overwrite contract of every gradient; fused forms
 * (residual, GELU, q/k/v) against the separate ops; the single-row matmul
 * and the decode attention the sampler runs; packed vs separate q/k/v;
 * in-place aliasing; a scratch plan too small is an error value. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/ops.h"
#include "ref64.h"
#include "rng.h"
#include "tt_test.h"

static tt_cpu cpu1, cpu3;

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
    int act;    /* gelu */
    double eps; /* layernorm */
    double *x, *w, *b, *wy, *y;
    int32_t *tok;
} fd_ctx;

static double obj_ln(void *v) {
    fd_ctx *c = v;
    ref_layernorm_forward(c->y, NULL, c->x, c->w, c->b, c->N, c->C, c->eps);
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
    ref_attention_forward(c->y, NULL, c->x, c->x + c->C, c->x + 2 * c->C, 3 * c->C, c->B, c->T, c->C, c->NH);
    return wsum(c->wy, c->y, (size_t)c->B * c->T * c->C);
}
static double obj_gelu(void *v) {
    fd_ctx *c = v;
    ref_gelu_forward(c->y, c->x, (size_t)c->N, c->act);
    return wsum(c->wy, c->y, (size_t)c->N);
}
static double obj_ce(void *v) {
    fd_ctx *c = v;
    return ref_crossentropy_forward(NULL, NULL, c->x, c->tok, c->N, c->V, 0.0);
}
static double obj_enc(void *v) {
    fd_ctx *c = v;
    ref_embedding_forward(c->y, c->tok, c->w, c->b, c->B, c->T, c->C);
    return wsum(c->wy, c->y, (size_t)c->B * c->T * c->C);
}

TT_TEST(fd_reference_backwards) {
    fd_ctx c;
    memset(&c, 0, sizeof c);
    /* layernorm, with the default eps and a large one (whose effect shows) */
    double *dx, *dw, *db;
    for (int e = 0; e < 2; e++) {
        c.N = 5, c.C = 13, c.eps = e ? 0.05 : 1e-5;
        size_t nc = (size_t)c.N * c.C;
        c.x = drand(nc, -2, 2), c.w = drand(c.C, 0.5, 1.5), c.b = drand(c.C, -0.5, 0.5), c.wy = drand(nc, -1, 1);
        c.y = ref_alloc(nc);
        dx = ref_alloc(nc), dw = ref_alloc(c.C), db = ref_alloc(c.C);
        ref_layernorm_backward(dx, dw, db, c.wy, c.x, c.w, c.N, c.C, c.eps);
        fd_check("layernorm dinp", obj_ln, &c, c.x, dx, nc);
        fd_check("layernorm dweight", obj_ln, &c, c.w, dw, c.C);
        fd_check("layernorm dbias", obj_ln, &c, c.b, db, c.C);
        free(c.x), free(c.w), free(c.b), free(c.wy), free(c.y), free(dx), free(dw), free(db);
    }
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
    ref_attention_backward(dx, dx + c.C, dx + 2 * c.C, NULL, c.x, c.x + c.C, c.x + 2 * c.C, c.wy, 3 * c.C, c.B, c.T, c.C, c.NH);
    fd_check("attention dqkv", obj_att, &c, c.x, dx, n3);
    free(c.x), free(c.wy), free(c.y), free(dx);
    /* gelu, exact and the tanh form */
    for (c.act = 0; c.act < 2; c.act++) {
        c.N = 50;
        c.x = drand(c.N, -5, 5), c.wy = drand(c.N, -1, 1), c.y = ref_alloc(c.N);
        dx = ref_alloc(c.N);
        ref_gelu_backward(dx, c.x, c.wy, c.N, c.act);
        fd_check(c.act ? "gelu (tanh)" : "gelu", obj_gelu, &c, c.x, dx, c.N);
        free(c.x), free(c.wy), free(c.y), free(dx);
    }
    /* cross-entropy (mean loss) */
    c.N = 3, c.V = 11;
    c.x = drand((size_t)c.N * c.V, -3, 3), c.tok = irand(c.N, c.V);
    dx = ref_alloc((size_t)c.N * c.V);
    ref_crossentropy_backward(dx, c.x, c.tok, c.N, c.V, 1.0 / c.N);
    fd_check("crossentropy", obj_ce, &c, c.x, dx, (size_t)c.N * c.V);
    free(c.x), free(c.tok), free(dx);
    /* encoder */
    c.B = 2, c.T = 3, c.C = 4, c.V = 5;
    c.tok = irand((size_t)c.B * c.T, c.V);
    c.w = drand((size_t)c.V * c.C, -1, 1), c.b = drand((size_t)c.T * c.C, -1, 1);
    c.wy = drand((size_t)c.B * c.T * c.C, -1, 1), c.y = ref_alloc((size_t)c.B * c.T * c.C);
    dw = ref_alloc((size_t)c.V * c.C), db = ref_alloc((size_t)c.T * c.C);
    ref_embedding_backward(dw, db, c.wy, c.tok, c.B, c.T, c.C, c.V);
    fd_check("embedding dwte", obj_enc, &c, c.w, dw, (size_t)c.V * c.C);
    fd_check("embedding dwpe", obj_enc, &c, c.b, db, (size_t)c.T * c.C);
    free(c.tok), free(c.w), free(c.b), free(c.wy), free(c.y), free(dw), free(db);
}

/* ================= CPU contracts =================
 * Accuracy against the reference on awkward shapes is tests/ops/test_backend_ops.c;
 * here: 1 vs 3 threads give the same bits, parameter gradients accumulate,
 * NULL gradients are skipped, fused forms equal the separate ops, aliasing. */

/* got - base must equal the gradient computed from zero (up to rounding) */
static void check_accumulated(const char *what, const float *got, const float *base, const float *from_zero, size_t n) {
    double *e = ref_alloc(n);
    for (size_t i = 0; i < n; i++) e[i] = (double)base[i] + from_zero[i];
    double err = tt_test_max_rel_err(got, e, n);
    CHECK_MSG(err < 1e-6, "%s: accumulated gradient off by %.3g", what, err);
    free(e);
}

TT_TEST(embedding_threads_and_accumulate) {
    const int shapes[][4] = {{1, 1, 1, 7}, {2, 17, 13, 256}, {3, 65, 65, 256}};
    for (int s = 0; s < 3; s++) {
        int B = shapes[s][0], T = shapes[s][1], C = shapes[s][2], V = shapes[s][3];
        size_t n = (size_t)B * T * C, nte = (size_t)V * C, npe = (size_t)T * C;
        int32_t *tok = irand((size_t)B * T, V);
        float *wte = frand(nte, -1, 1), *wpe = frand(npe, -1, 1), *o1 = fpoison(n), *o3 = fpoison(n);
        tt_embedding_forward(&cpu1, o1, tok, wte, wpe, B, T, C);
        tt_embedding_forward(&cpu3, o3, tok, wte, wpe, B, T, C);
        CHECK(same_bits(o1, o3, n));
        float *dout = frand(n, -1, 1), *g0te = frand(nte, -1, 1), *g0pe = frand(npe, -1, 1);
        float *zte = calloc(nte, sizeof(float)), *zpe = calloc(npe, sizeof(float));
        float *gte1 = fcopy(g0te, nte), *gpe1 = fcopy(g0pe, npe), *gte3 = fcopy(g0te, nte), *gpe3 = fcopy(g0pe, npe);
        tt_embedding_backward(&cpu1, zte, zpe, dout, tok, B, T, C, V);
        tt_embedding_backward(&cpu1, gte1, gpe1, dout, tok, B, T, C, V);
        tt_embedding_backward(&cpu3, gte3, gpe3, dout, tok, B, T, C, V);
        check_accumulated("embedding dwte", gte1, g0te, zte, nte);
        check_accumulated("embedding dwpe", gpe1, g0pe, zpe, npe);
        CHECK(same_bits(gte1, gte3, nte) && same_bits(gpe1, gpe3, npe));
        free(tok), free(wte), free(wpe), free(o1), free(o3), free(dout), free(g0te), free(g0pe), free(zte), free(zpe);
        free(gte1), free(gpe1), free(gte3), free(gpe3);
    }
}

TT_TEST(layernorm_threads_and_accumulate) {
    const int shapes[][2] = {{1, 1}, {17, 65}, {127, 129}};
    for (int sh = 0; sh < 3; sh++) {
        int N = shapes[sh][0], C = shapes[sh][1];
        size_t n = (size_t)N * C;
        float *x = frand(n, -3, 3), *w = frand(C, 0.5f, 1.5f), *b = frand(C, -0.5f, 0.5f);
        float *out = fpoison(n), *st = fpoison(2 * (size_t)N), *out3 = fpoison(n), *st3 = fpoison(2 * (size_t)N);
        tt_layernorm_forward(&cpu1, out, st, x, w, b, N, C, TT_LN_EPS_DEFAULT);
        tt_layernorm_forward(&cpu3, out3, st3, x, w, b, N, C, TT_LN_EPS_DEFAULT);
        CHECK(same_bits(out, out3, n) && same_bits(st, st3, 2 * (size_t)N));
        float *dy = frand(n, -1, 1), *gw0 = frand(C, -1, 1), *gb0 = frand(C, -1, 1), *dx0 = frand(n, -1, 1);
        float *zdx = fpoison(n), *zw = calloc(C, sizeof(float)), *zb = calloc(C, sizeof(float));
        tt_layernorm_backward(&cpu1, zdx, zw, zb, dy, x, w, st, N, C, 0);
        for (int mode = 0; mode < 2; mode++) {
            float *gdx1 = mode ? fcopy(dx0, n) : fpoison(n), *gdx3 = mode ? fcopy(dx0, n) : fpoison(n);
            float *gw1 = fcopy(gw0, C), *gb1 = fcopy(gb0, C), *gw3 = fcopy(gw0, C), *gb3 = fcopy(gb0, C);
            tt_layernorm_backward(&cpu1, gdx1, gw1, gb1, dy, x, w, st, N, C, mode);
            tt_layernorm_backward(&cpu3, gdx3, gw3, gb3, dy, x, w, st, N, C, mode);
            if (mode && C > 1) check_accumulated("layernorm dinp (accumulate_dinp)", gdx1, dx0, zdx, n);
            if (!mode) CHECK(same_bits(gdx1, zdx, n));
            check_accumulated("layernorm dweight", gw1, gw0, zw, C);
            check_accumulated("layernorm dbias", gb1, gb0, zb, C);
            CHECK(same_bits(gdx1, gdx3, n) && same_bits(gw1, gw3, C) && same_bits(gb1, gb3, C));
            free(gdx1), free(gdx3), free(gw1), free(gb1), free(gw3), free(gb3);
        }
        free(x), free(w), free(b), free(out), free(st), free(out3), free(st3), free(dy), free(gw0), free(gb0), free(dx0);
        free(zdx), free(zw), free(zb);
    }
}

static void check_matmul(int N, int C, int OC) {
    size_t no = (size_t)N * OC, nc = (size_t)N * C, co = (size_t)C * OC;
    float *x = frand(nc, -1, 1), *w = frand(co, -1, 1), *b = frand(OC, -1, 1), *r = frand(no, -1, 1);
    char what[128];
    /* forward, 1 and 3 threads */
    float *o1 = fpoison(no), *o3 = fpoison(no);
    tt_matmul_forward(&cpu1, o1, x, w, b, N, C, OC);
    tt_matmul_forward(&cpu3, o3, x, w, b, N, C, OC);
    snprintf(what, sizeof what, "matmul %dx%dx%d", N, C, OC);
    CHECK_MSG(same_bits(o1, o3, no), "%s fwd: 1 vs 3 threads differ", what);
    /* the fused residual, in place (out == resid), against the reference */
    double *dxd = ref_from_float(x, nc), *dwd = ref_from_float(w, co), *dbd = ref_from_float(b, OC);
    double *ax = dabs(x, nc), *aw = dabs(w, co), *ab = dabs(b, OC), *ref = ref_alloc(no), *aref = ref_alloc(no);
    ref_matmul_forward(ref, dxd, dwd, dbd, N, C, OC);
    ref_matmul_forward(aref, ax, aw, ab, N, C, OC);
    double *eres = plus(ref, r, no);
    add_abs(aref, r, no);
    memcpy(o1, r, no * sizeof(float));
    tt_matmul_residual_forward(&cpu3, o1, x, w, b, o1, N, C, OC);
    check_bound("matmul residual fwd", o1, eres, aref, no, C + 1);
    /* backward: threads, accumulation, NULL gradients skipped */
    float *dy = frand(no, -1, 1), *gw0 = frand(co, -1, 1), *gb0 = frand(OC, -1, 1);
    float *zw = calloc(co, sizeof(float)), *zb = calloc(OC, sizeof(float)), *zdx = fpoison(nc);
    tt_matmul_backward(&cpu1, zdx, zw, zb, dy, x, w, N, C, OC);
    float *dx1 = fpoison(nc), *dx3 = fpoison(nc);
    float *gw1 = fcopy(gw0, co), *gw3 = fcopy(gw0, co), *gb1 = fcopy(gb0, OC), *gb3 = fcopy(gb0, OC);
    tt_matmul_backward(&cpu1, dx1, gw1, gb1, dy, x, w, N, C, OC);
    tt_matmul_backward(&cpu3, dx3, gw3, gb3, dy, x, w, N, C, OC);
    CHECK(same_bits(dx1, zdx, nc));
    check_accumulated("matmul dweight", gw1, gw0, zw, co);
    check_accumulated("matmul dbias", gb1, gb0, zb, OC);
    CHECK_MSG(same_bits(dx1, dx3, nc) && same_bits(gw1, gw3, co) && same_bits(gb1, gb3, OC),
              "%s bwd: 1 vs 3 threads differ", what);
    float *gw_keep = fcopy(gw0, co);
    tt_matmul_backward(&cpu3, dx3, NULL, NULL, dy, x, w, N, C, OC);
    CHECK(same_bits(dx1, dx3, nc));
    tt_matmul_backward(&cpu3, NULL, gw_keep, NULL, dy, x, w, N, C, OC);
    CHECK(same_bits(gw_keep, gw1, co));
    free(x), free(w), free(b), free(r), free(o1), free(o3), free(dxd), free(dwd), free(dbd), free(ax), free(aw), free(ab);
    free(ref), free(aref), free(eres), free(dy), free(gw0), free(gb0), free(zw), free(zb), free(zdx);
    free(dx1), free(dx3), free(gw1), free(gw3), free(gb1), free(gb3), free(gw_keep);
}

TT_TEST(matmul_threads_and_accumulate) {
    const int shapes[][3] = {{1, 3, 17}, {17, 65, 127}, {127, 1, 65}, {300, 290, 45}, {77, 520, 300}, {600, 48, 192}};
    for (int s = 0; s < 6; s++) check_matmul(shapes[s][0], shapes[s][1], shapes[s][2]);
}

/* A long K (more than one of the engine's K slices, and more slices than
 * fit one pool wake) keeps every element's chain: acc = init, then one fused
 * multiply-add per k in k order. With FMA the chain is computed here with
 * fmaf and must match bit for bit; the thread checks run everywhere. */
TT_TEST(matmul_long_k_keeps_each_chain) {
    check_matmul(4200, 20, 36);  /* dweight: K = 4200 tokens */
    check_matmul(70, 2100, 19);  /* forward and dinp: K = 2100 */
#if defined(__FMA__)
    /* dweight: K = 4200 tokens; and with an output of >= 256 columns (X^T
     * packed one slice ahead) over 21 rows (an edge tile) and an odd last K
     * block (2301 tokens), and with more than one chunk of panels (530
     * columns) */
    for (int sh = 0; sh < 3; sh++) {
        int N = sh ? 2301 : 4200, C = sh ? 21 : 20, OC = sh == 2 ? 530 : sh ? 260 : 36;
        float *x = frand((size_t)N * C, -1, 1), *dy = frand((size_t)N * OC, -1, 1), *w = frand((size_t)C * OC, -1, 1);
        float *gw0 = frand((size_t)C * OC, -1, 1), *gw = fcopy(gw0, (size_t)C * OC);
        tt_matmul_backward(&cpu3, NULL, gw, NULL, dy, x, w, N, C, OC);
        int bad = 0;
        for (int c = 0; c < C; c++)
            for (int o = 0; o < OC; o++) {
                float acc = gw0[c * OC + o];
                for (int n = 0; n < N; n++) acc = fmaf(x[(size_t)n * C + c], dy[(size_t)n * OC + o], acc);
                bad += memcmp(&acc, &gw[c * OC + o], sizeof acc) != 0;
            }
        CHECK_MSG(bad == 0, "dweight %dx%dx%d: %d elements differ from the k-order fma chain", N, C, OC, bad);
        free(x), free(dy), free(w), free(gw0), free(gw);
    }
    {
        int N = 7, C = 2100, OC = 19;
        float *x = frand((size_t)N * C, -1, 1), *w = frand((size_t)C * OC, -1, 1), *b = frand(OC, -1, 1);
        float *out = fpoison((size_t)N * OC);
        tt_matmul_forward(&cpu3, out, x, w, b, N, C, OC);
        int bad = 0;
        for (int i = 0; i < N; i++)
            for (int o = 0; o < OC; o++) {
                float acc = b[o];
                for (int k = 0; k < C; k++) acc = fmaf(x[(size_t)i * C + k], w[(size_t)k * OC + o], acc);
                bad += memcmp(&acc, &out[i * OC + o], sizeof acc) != 0;
            }
        CHECK_MSG(bad == 0, "forward %dx%dx%d: %d elements differ from the k-order fma chain", N, C, OC, bad);
        free(x), free(w), free(b), free(out);
    }
#endif
    /* the bias gradient over a long K: db + the column's values in row order
     * (also over several column blocks, an edge panel and an odd last K block) */
    for (int sh = 0; sh < 3; sh++) {
        int N = sh ? 2301 : 4200, C = sh ? 21 : 20, OC = sh == 2 ? 530 : sh ? 260 : 36;
        float *x = frand((size_t)N * C, -1, 1), *dy = frand((size_t)N * OC, -1, 1), *w = frand((size_t)C * OC, -1, 1);
        float *gw = frand((size_t)C * OC, -1, 1), *gb0 = frand(OC, -1, 1), *gb = fcopy(gb0, OC);
        tt_matmul_backward(&cpu3, NULL, gw, gb, dy, x, w, N, C, OC);
        int bad = 0;
        for (int o = 0; o < OC; o++) {
            float acc = gb0[o];
            for (int n = 0; n < N; n++) acc += dy[(size_t)n * OC + o];
            bad += memcmp(&acc, &gb[o], sizeof acc) != 0;
        }
        CHECK_MSG(bad == 0, "dbias %dx%d: %d elements differ from the row-order sum", N, OC, bad);
        free(x), free(dy), free(w), free(gw), free(gb0), free(gb);
    }
    CHECK(tt_cpu_status(&cpu3, NULL) == TT_OK);
}

/* a single row (the sampler's token) skips the engine's packing: the same
 * bits as that row computed among others, for every forward form */
TT_TEST(matmul_single_row_matches_engine) {
    const int shapes[][2] = {{3, 17}, {48, 192}, {65, 300}, {192, 48}, {260, 1030}};
    for (int s = 0; s < 5; s++) {
        int C = shapes[s][0], OC = shapes[s][1];
        float *x = frand(2 * (size_t)C, -1, 1), *w = frand((size_t)C * OC, -1, 1), *b = frand(OC, -1, 1);
        float *r = frand(2 * (size_t)OC, -1, 1);
        float *o2 = fpoison(2 * (size_t)OC), *g2 = fpoison(2 * (size_t)OC), *o1 = fpoison(OC), *g1 = fpoison(OC);
        tt_matmul_forward(&cpu3, o2, x, w, b, 2, C, OC);
        tt_matmul_forward(&cpu3, o1, x, w, b, 1, C, OC);
        CHECK_MSG(same_bits(o1, o2, OC), "single row %dx%d differs", C, OC);
        tt_matmul_residual_forward(&cpu3, o2, x, w, NULL, r, 2, C, OC);
        tt_matmul_residual_forward(&cpu1, o1, x, w, NULL, r, 1, C, OC);
        CHECK_MSG(same_bits(o1, o2, OC), "single row residual %dx%d differs", C, OC);
        for (int act = 0; act < 2; act++) {
            tt_matmul_gelu_forward(&cpu3, o2, g2, x, w, b, 2, C, OC, act);
            tt_matmul_gelu_forward(&cpu3, o1, g1, x, w, b, 1, C, OC, act);
            CHECK_MSG(same_bits(o1, o2, OC) && same_bits(g1, g2, OC), "single row gelu (%s) %dx%d differs",
                      tt_act_name(act), C, OC);
        }
        free(x), free(w), free(b), free(r), free(o2), free(g2), free(o1), free(g1);
    }
}

/* the GELU-fused linear ops give the same bits as the separate ops */
TT_TEST(matmul_gelu_fused_matches_separate_ops) {
    const int shapes[][3] = {{1, 3, 17}, {17, 65, 127}, {65, 48, 192}, {127, 17, 65}, {300, 290, 45}, {40, 300, 64}};
    for (int s = 0; s < 12; s++) { /* each shape with the exact GELU, then with the tanh form */
        int N = shapes[s % 6][0], C = shapes[s % 6][1], OC = shapes[s % 6][2], act = s / 6;
        size_t nc = (size_t)N * C, no = (size_t)N * OC, co = (size_t)C * OC;
        float *x = frand(nc, -2, 2), *w = frand(co, -1, 1), *b = frand(OC, -1, 1);
        float *pre1 = fpoison(no), *out1 = fpoison(no), *pre2 = fpoison(no), *out2 = fpoison(no), *pre3 = fpoison(no), *out3 = fpoison(no);
        tt_matmul_gelu_forward(&cpu1, pre1, out1, x, w, b, N, C, OC, act);
        tt_matmul_gelu_forward(&cpu3, pre3, out3, x, w, b, N, C, OC, act);
        tt_matmul_forward(&cpu1, pre2, x, w, b, N, C, OC);
        tt_gelu_forward(&cpu1, out2, pre2, no, act);
        CHECK_MSG(same_bits(pre1, pre2, no) && same_bits(out1, out2, no), "fused fwd %dx%dx%d differs", N, C, OC);
        CHECK(same_bits(pre1, pre3, no) && same_bits(out1, out3, no));
        /* backward of a layer whose input went through GELU: x plays the pre-activation */
        float *dy = frand(no, -1, 1), *gw0 = frand(co, -1, 1), *gb0 = frand(OC, -1, 1);
        float *dx1 = fpoison(nc), *dx2 = fpoison(nc), *dx3 = fpoison(nc);
        float *gw1 = fcopy(gw0, co), *gw2 = fcopy(gw0, co), *gw3 = fcopy(gw0, co);
        float *gb1 = fcopy(gb0, OC), *gb2 = fcopy(gb0, OC), *gb3 = fcopy(gb0, OC);
        float *gx = frand(nc, -3, 3); /* GELU input */
        tt_matmul_gelu_backward(&cpu1, dx1, gw1, gb1, dy, x, w, gx, N, C, OC, act);
        tt_matmul_gelu_backward(&cpu3, dx3, gw3, gb3, dy, x, w, gx, N, C, OC, act);
        tt_matmul_backward(&cpu1, dx2, gw2, gb2, dy, x, w, N, C, OC);
        tt_gelu_backward(&cpu1, dx2, gx, dx2, nc, act);
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

TT_TEST(head_threads) {
    const int shapes[][3] = {{1, 1, 1}, {17, 65, 256}, {65, 127, 17}};
    for (int s = 0; s < 3; s++) {
        int N = shapes[s][0], C = shapes[s][1], V = shapes[s][2];
        size_t nc = (size_t)N * C, nv = (size_t)N * V, vc = (size_t)V * C;
        float *x = frand(nc, -1, 1), *wte = frand(vc, -1, 1), *dl = frand(nv, -1, 1), *g0 = frand(vc, -1, 1);
        float *lg1 = fpoison(nv), *lg3 = fpoison(nv);
        tt_head_forward(&cpu1, lg1, x, wte, N, C, V);
        tt_head_forward(&cpu3, lg3, x, wte, N, C, V);
        CHECK(same_bits(lg1, lg3, nv));
        float *gx1 = fpoison(nc), *gx3 = fpoison(nc), *gw1 = fcopy(g0, vc), *gw3 = fcopy(g0, vc), *z = calloc(vc, sizeof(float));
        tt_head_backward(&cpu1, gx1, z, dl, x, wte, N, C, V);
        tt_head_backward(&cpu1, gx1, gw1, dl, x, wte, N, C, V);
        tt_head_backward(&cpu3, gx3, gw3, dl, x, wte, N, C, V);
        check_accumulated("head dwte", gw1, g0, z, vc);
        CHECK(same_bits(gx1, gx3, nc) && same_bits(gw1, gw3, vc));
        free(x), free(wte), free(dl), free(g0), free(lg1), free(lg3), free(gx1), free(gx3), free(gw1), free(gw3), free(z);
    }
}

/* 1 vs 3 threads; the packed (B,T,3C) layout gives the same bits as separate
 * q, k, v; the decode form (one query over cached keys) matches the last
 * row of the forward */
static void check_attention(int B, int T, int C, int NH) {
    size_t n3 = (size_t)B * T * 3 * C, n1 = (size_t)B * T * C, ns = 2 * (size_t)B * NH * T;
    float *qkv = frand(n3, -2, 2), *dout = frand(n1, -1, 1);
    float *o1 = fpoison(n1), *o3 = fpoison(n1), *s1 = fpoison(ns), *s3 = fpoison(ns);
    tt_attention_forward(&cpu1, o1, s1, qkv, qkv + C, qkv + 2 * C, 3 * C, B, T, C, NH, NULL);
    tt_attention_forward(&cpu3, o3, s3, qkv, qkv + C, qkv + 2 * C, 3 * C, B, T, C, NH, NULL);
    CHECK(same_bits(o1, o3, n1) && same_bits(s1, s3, ns / 2));
    /* separate tensors */
    float *q = fpoison(n1), *k = fpoison(n1), *v = fpoison(n1), *os = fpoison(n1), *ss = fpoison(ns);
    for (size_t r = 0; r < (size_t)B * T; r++) {
        memcpy(q + r * C, qkv + r * 3 * C, (size_t)C * sizeof(float));
        memcpy(k + r * C, qkv + r * 3 * C + C, (size_t)C * sizeof(float));
        memcpy(v + r * C, qkv + r * 3 * C + 2 * C, (size_t)C * sizeof(float));
    }
    tt_attention_forward(&cpu3, os, ss, q, k, v, C, B, T, C, NH, NULL);
    CHECK(same_bits(o1, os, n1) && same_bits(s1, ss, ns / 2));
    float *g1 = fpoison(n3), *g3 = fpoison(n3);
    tt_attention_backward(&cpu1, g1, g1 + C, g1 + 2 * C, s1, qkv, qkv + C, qkv + 2 * C, o1, dout, 3 * C, B, T, C, NH, NULL);
    tt_attention_backward(&cpu3, g3, g3 + C, g3 + 2 * C, s3, qkv, qkv + C, qkv + 2 * C, o1, dout, 3 * C, B, T, C, NH, NULL);
    CHECK(same_bits(g1, g3, n3) && same_bits(s1, s3, ns));
    float *dq = fpoison(n1), *dk = fpoison(n1), *dv = fpoison(n1);
    tt_attention_backward(&cpu3, dq, dk, dv, ss, q, k, v, os, dout, C, B, T, C, NH, NULL);
    int same = 1;
    for (size_t r = 0; r < (size_t)B * T; r++)
        same &= same_bits(dq + r * C, g1 + r * 3 * C, C) && same_bits(dk + r * C, g1 + r * 3 * C + C, C) &&
                same_bits(dv + r * C, g1 + r * 3 * C + 2 * C, C);
    CHECK_MSG(same && same_bits(ss, s1, ns), "attention B=%d T=%d C=%d NH=%d: packed and separate layouts differ", B, T, C, NH);
    /* decode: query T-1 of batch 0 against its T keys */
    float *y = fpoison(C);
    tt_attention_decode(&cpu3, y, q + (size_t)(T - 1) * C, k, v, C, T, C, NH);
    double *ry = ref_alloc(C);
    for (int c = 0; c < C; c++) ry[c] = o1[(size_t)(T - 1) * C + c];
    CHECK_MSG(tt_test_max_rel_err(y, ry, C) < 2e-6, "attention decode T=%d C=%d NH=%d: %.3g", T, C, NH,
              tt_test_max_rel_err(y, ry, C));
    free(qkv), free(dout), free(o1), free(o3), free(s1), free(s3), free(q), free(k), free(v), free(os), free(ss);
    free(g1), free(g3), free(dq), free(dk), free(dv), free(y), free(ry);
}

TT_TEST(attention_threads_layouts_decode) {
    const int Ts[] = {1, 3, 17, 65, 127};
    /* (C, NH): head sizes 4, 16, 17, 32, 1, 64 */
    const int CN[][2] = {{12, 3}, {48, 3}, {34, 2}, {64, 2}, {3, 3}, {64, 1}};
    for (int t = 0; t < 5; t++)
        for (int c = 0; c < 6; c++) check_attention(1 + (t + c) % 3, Ts[t], CN[c][0], CN[c][1]);
    /* 4 heads of 4 query blocks on 3 threads: the backward splits the fourth head in two */
    check_attention(1, 127, 128, 4);
}

TT_TEST(gelu_threads_and_aliasing) {
    const size_t ns[] = {1, 17, 20000};
    for (int k = 0; k < 6; k++) { /* the exact GELU, then the tanh form */
        size_t n = ns[k % 3];
        int act = k / 3;
        float *x = frand(n, -7, 7), *dy = frand(n, -1, 1);
        float *y1 = fpoison(n), *y3 = fpoison(n), *dx1 = fpoison(n), *dx3 = fpoison(n);
        tt_gelu_forward(&cpu1, y1, x, n, act);
        tt_gelu_forward(&cpu3, y3, x, n, act);
        tt_gelu_backward(&cpu1, dx1, x, dy, n, act);
        tt_gelu_backward(&cpu3, dx3, x, dy, n, act);
        CHECK(same_bits(y1, y3, n) && same_bits(dx1, dx3, n));
        /* in place (dinp aliasing dout) */
        float *dyc = fcopy(dy, n);
        tt_gelu_backward(&cpu3, dyc, x, dyc, n, act);
        CHECK(same_bits(dyc, dx1, n));
        free(x), free(dy), free(y1), free(y3), free(dx1), free(dx3), free(dyc);
    }
}

TT_TEST(crossentropy_threads_and_aliasing) {
    const int shapes[][2] = {{1, 256}, {17, 3}, {65, 256}};
    for (int a = 0; a < 3; a++) {
        int N = shapes[a][0], V = shapes[a][1];
        size_t nv = (size_t)N * V;
        float *lg = frand(nv, -8, 8);
        int32_t *tg = irand(N, V);
        float dscale = 1.0f / (float)(N * 3);
        float *loss1 = fpoison(N), *loss3 = fpoison(N), *d1 = fpoison(nv), *d3 = fcopy(lg, nv);
        float m1 = tt_crossentropy_forward(&cpu1, loss1, d1, lg, tg, N, V, dscale);
        float m3 = tt_crossentropy_forward(&cpu3, loss3, d3, d3, tg, N, V, dscale); /* in place */
        double s = 0;
        for (int i = 0; i < N; i++) s += loss1[i];
        CHECK(m1 == (float)(s / N));
        CHECK(m1 == m3 && same_bits(loss1, loss3, N) && same_bits(d1, d3, nv));
        float *d4 = fpoison(nv);
        tt_crossentropy_backward(&cpu3, d4, lg, tg, N, V, dscale);
        CHECK(same_bits(d1, d4, nv));
        free(lg), free(tg), free(loss1), free(loss3), free(d1), free(d3), free(d4);
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

TT_TEST(adamw_spans_threads_decay) {
    tt_model_config cfg = {2, 20, 2, 9, 2, TT_VOCAB, 0, 0, 0.0f, 0, 0.0f};
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
    double ss1 = tt_adamw_grad_sumsq(&cpu1, g, spans, ns, part), ss3 = tt_adamw_grad_sumsq(&cpu3, g, spans, ns, part);
    double rss = 0;
    for (size_t i = 0; i < n; i++) rss += (double)g[i] * g[i];
    CHECK_CLOSE(ss1, rss, 1e-6, 0);
    CHECK(ss1 == ss3);
    tt_optim_args a = {1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, 0, 0, 0.0f, 0, 0};
    a.bc1 = (float)(1 - pow(0.9, 3)), a.bc2 = (float)(1 - pow(0.95, 3));
    double norm = sqrt(rss);
    CHECK(norm > a.clip); /* clipping active */
    float scale = (float)(a.clip / (norm + 1e-6));
    float *p1 = fcopy(p, n), *m1 = fcopy(m, n), *v1 = fcopy(v, n), *g1 = fcopy(g, n);
    float *p3 = fcopy(p, n), *m3 = fcopy(m, n), *v3 = fcopy(v, n), *g3 = fcopy(g, n);
    tt_adamw_update(&cpu1, p1, g1, m1, v1, spans, ns, &a, scale, 1);
    tt_adamw_update(&cpu3, p3, g3, m3, v3, spans, ns, &a, scale, 0);
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
    free(g3), free(pz), free(gz), free(mz), free(vz), free(spans);
    tt_layout_free(&lo);
}

/* an op that needs more scratch than the context has leaves its output
 * alone and records an error: tt_cpu_status reports it once, as a value
 * with a one-line message naming the op */
TT_TEST(scratch_overflow_is_an_error) {
    tt_cpu small;
    tt_status st;
    CHECK(tt_cpu_create(&small, 2, 16, 16, &st) == TT_OK);
    float *x = frand(64 * 64, -1, 1), *w = frand(64 * 64, -1, 1), *o = frand(64 * 64, -1, 1), *o0 = fcopy(o, 64 * 64);
    float *stats = frand(128, 0.5f, 1), *qkv = frand(64 * 3 * 64, -1, 1);
    CHECK(tt_cpu_status(&small, &st) == TT_OK);
    tt_matmul_forward(&small, o, x, w, NULL, 64, 64, 64);
    CHECK(same_bits(o, o0, 64 * 64));
    /* a second failure keeps the first message */
    tt_layernorm_backward(&small, o, NULL, NULL, x, x, w, stats, 64, 64, 0);
    CHECK(same_bits(o, o0, 64 * 64));
    CHECK(tt_cpu_status(&small, &st) == TT_EINVAL);
    CHECK_MSG(strstr(st.msg, "matmul forward") != NULL, "message: %s", st.msg);
    CHECK(tt_cpu_status(&small, &st) == TT_OK); /* cleared */
    tt_layernorm_backward(&small, o, NULL, NULL, x, x, w, stats, 64, 64, 0);
    CHECK(tt_cpu_status(&small, &st) == TT_EINVAL && strstr(st.msg, "layernorm backward"));
    tt_attention_forward(&small, o, stats, qkv, qkv + 64, qkv + 128, 192, 1, 64, 64, 2, NULL);
    CHECK(same_bits(o, o0, 64 * 64));
    CHECK(tt_cpu_status(&small, &st) == TT_EINVAL && strstr(st.msg, "attention forward"));
    free(x), free(w), free(o), free(o0), free(stats), free(qkv);
    tt_cpu_destroy(&small);
}

int main(void) {
    tt_status st;
    /* scratch for the largest shapes below (600 rows, 520 x 300 matrices, V = 256) */
    size_t shared = tt_matmul_backward_scratch(600, 520, 300);
    shared = TT_MAX(shared, tt_matmul_backward_scratch(600, 300, 520));
    shared = TT_MAX(shared, tt_matmul_backward_scratch(2301, 21, 530)); /* the long-K dweight */
    shared = TT_MAX(shared, tt_head_backward_scratch(127, 127, 256));
    shared = TT_MAX(shared, tt_qkv_backward_scratch(65, 65));
    shared = TT_MAX(shared, tt_layernorm_backward_scratch(127, 129));
    size_t thread = TT_MAX(tt_attention_thread_scratch(127, 64), tt_matmul_thread_scratch());
    if (tt_cpu_create(&cpu1, 1, shared, thread, &st) || tt_cpu_create(&cpu3, 3, shared, thread, &st)) {
        fprintf(stderr, "cpu context: %s\n", st.msg);
        return 1;
    }
    CHECK(cpu3.nthreads == 3);
    RUN(fd_reference_backwards);
    RUN(embedding_threads_and_accumulate);
    RUN(layernorm_threads_and_accumulate);
    RUN(matmul_threads_and_accumulate);
    RUN(matmul_long_k_keeps_each_chain);
    RUN(matmul_single_row_matches_engine);
    RUN(matmul_gelu_fused_matches_separate_ops);
    RUN(qkv_matches_reference);
    RUN(head_threads);
    RUN(attention_threads_layouts_decode);
    RUN(gelu_threads_and_aliasing);
    RUN(crossentropy_threads_and_aliasing);
    RUN(adamw_spans_threads_decay);
    RUN(scratch_overflow_is_an_error);
    CHECK(tt_cpu_status(&cpu1, &st) == TT_OK && tt_cpu_status(&cpu3, &st) == TT_OK);
    tt_cpu_destroy(&cpu1);
    tt_cpu_destroy(&cpu3);
    return tt_test_summary();
}
