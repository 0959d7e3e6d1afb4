/* test_webgpu_subgroups.c — the subgroups tier of the row reductions
 * (TT_WEBGPU_SUBGROUPS=1: ln_fwd_sg, ln_bwd_dx_sg, xent_sg, sumsq_sg).
 *
 * - gate: the switch on an adapter without the feature (hidden by
 *   TT_WEBGPU_HIDE_FEATURES=subgroups) is refused at backend creation with
 *   one line; an unknown value of the switch is refused too;
 * - parity: every _sg kernel against float64 on random rows (C = 1, 3, 17,
 *   48, 65, 127, 768; rows 1..130), per row within 1e-5 of the row's largest
 *   |reference|; outputs poisoned (NaN) before each run;
 * - determinism: the same inputs through a second, separately compiled set
 *   of pipelines give the same bits;
 * - the in-kernel fallback tree (TT_WEBGPU_SUBGROUPS=tree, the path taken
 *   when an adapter's subgroups are not blocks of consecutive invocations)
 *   matches float64 and gives the bits of the fp32 tree kernels;
 * - end to end on tiny and small with the tier on: loss, full gradient and 4
 *   AdamW steps against the CPU backend (tt_gtest_e2e_vs_cpu tolerances).
 * Skips (exit 0) without WebGPU unless TT_REQUIRE_WEBGPU=1; an adapter
 * without subgroups runs only the gate test. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "config.h"
#include "gpu_ops.h"
#include "gpu_test.h"
#include "rng.h"
#include "tt_test.h"

#define TOL 1e-5

static tt_gpu *G;
static tt_gops PLAIN, SG, SG2, TREE; /* tier off; on; on (own pipelines); fallback tree */
/* cases where the tier's bits differ from the fp32 tree's: 0 would mean the
 * subgroup path never ran (every workgroup fell back to the tree) */
static int n_sg_differs;

static int init_ops(tt_gops *o, const char *mode) {
    tt_status st;
    if (mode) setenv("TT_WEBGPU_SUBGROUPS", mode, 1);
    else unsetenv("TT_WEBGPU_SUBGROUPS");
    int rc = tt_gops_init(o, G, &st);
    unsetenv("TT_WEBGPU_SUBGROUPS");
    tt_gtest_die_on(rc, &st, "gops init");
    return rc;
}

/* max over rows of max|got - ref| / scale of the row: scale NULL = the
 * row's largest |ref| (a zero row: absolute). Outputs whose rows cancel
 * (LayerNorm dx, softmax - onehot) pass the size of their terms instead, the
 * scale that fp32 rounding works at, whichever reduction runs. */
static double row_err(const float *got, const double *ref, int rows, int C, const double *scale) {
    double worst = 0;
    for (int r = 0; r < rows; r++) {
        double m = 0, e = 0;
        for (int c = 0; c < C; c++) {
            double rv = ref[(size_t)r * C + c], d = fabs((double)got[(size_t)r * C + c] - rv);
            if (fabs(rv) > m) m = fabs(rv);
            if (!(d <= e)) e = d; /* NaN sticks */
        }
        if (scale) m = scale[r];
        double q = e / (m > 1e-30 ? m : 1.0);
        if (!(q <= worst)) worst = q;
    }
    return worst;
}

static void check_rows_s(const char *what, const char *mode, int rows, int C, const float *got, const double *ref,
                         const double *scale) {
    double e = row_err(got, ref, rows, C, scale);
    CHECK_MSG(e <= TOL, "%s (%s) rows %d C %d: per-row rel err %.3g", what, mode, rows, C, e);
}

static void check_rows(const char *what, const char *mode, int rows, int C, const float *got, const double *ref) {
    check_rows_s(what, mode, rows, C, got, ref, NULL);
}

static void check_bits(const char *what, int rows, int C, const float *a, const float *b) {
    CHECK_MSG(memcmp(a, b, (size_t)rows * C * sizeof *a) == 0, "%s rows %d C %d: not bit-identical", what, rows, C);
}

/* ---- gate ---- */
TT_TEST(test_gate) {
    tt_status st;
    const tt_preset *pr = tt_preset_find("tiny");
    CHECK(pr != NULL);
    if (!pr) return;
    tt_model_config cfg = pr->cfg;
    setenv("TT_WEBGPU_HIDE_FEATURES", "subgroups", 1);
    setenv("TT_WEBGPU_SUBGROUPS", "1", 1);
    tt_backend *be = NULL;
    int rc = tt_backend_webgpu_create(&cfg, NULL, &be, &st);
    unsetenv("TT_WEBGPU_SUBGROUPS");
    unsetenv("TT_WEBGPU_HIDE_FEATURES");
    CHECK(rc == TT_EUNSUP);
    if (rc) {
        printf("  refused: %s\n", st.msg);
        CHECK(strstr(st.msg, "webgpu: TT_WEBGPU_SUBGROUPS=1 but adapter ") == st.msg);
        CHECK(strstr(st.msg, " lacks the subgroups feature") != NULL);
        CHECK(strchr(st.msg, '\n') == NULL);
    } else {
        tt_backend_destroy(be);
    }
    /* an unknown value is refused, whatever the adapter */
    tt_gops o;
    setenv("TT_WEBGPU_SUBGROUPS", "yes", 1);
    rc = tt_gops_init(&o, G, &st);
    unsetenv("TT_WEBGPU_SUBGROUPS");
    CHECK(rc == TT_EINVAL);
    if (rc) CHECK(strstr(st.msg, "TT_WEBGPU_SUBGROUPS") != NULL);
    else tt_gops_free(&o);
    /* "0" and unset: tier off */
    setenv("TT_WEBGPU_SUBGROUPS", "0", 1);
    rc = tt_gops_init(&o, G, &st);
    unsetenv("TT_WEBGPU_SUBGROUPS");
    CHECK(rc == TT_OK);
    if (!rc) {
        CHECK(o.subgroups == 0);
        tt_gops_free(&o);
    }
}

/* ---- layernorm ---- */
typedef struct {
    float *out, *mean, *rstd, *dx;
} ln_res;

static void ln_run(tt_gops *o, int rows, int C, tt_gpu_buf bx, tt_gpu_buf bwb, tt_gpu_buf bdy, const float *dx0,
                   ln_res *r) {
    tt_status st;
    size_t n = (size_t)rows * C;
    tt_gpu_buf bout = tt_gtest_poisoned(n), bst = tt_gtest_poisoned(2 * (size_t)rows), bdx = tt_gtest_up(dx0, n);
    tt_gpu_buf bg = tt_gtest_poisoned(2 * (size_t)C), part = tt_gtest_poisoned(tt_gop_colsum_part_elems(rows, 2 * C));
    tt_gsite s[4];
    tt_gref w = {bwb, 0}, b = {bwb, (uint32_t)C};
    int rc = tt_gop_layernorm_forward(o, &s[0], tt_gtest_R(bout), tt_gtest_R(bst), tt_gtest_R(bx), w, b, rows, C, &st);
    tt_gtest_die_on(rc, &st, "ln fwd plan");
    if (!rc) {
        rc = tt_gop_layernorm_backward(o, &s[1], tt_gtest_R(bdx), tt_gtest_R(bg), tt_gtest_R(bdy), tt_gtest_R(bx), w,
                                       tt_gtest_R(bst), tt_gtest_R(part), rows, C, 1, &st);
        tt_gtest_die_on(rc, &st, "ln bwd plan");
    }
    if (!rc) {
        /* the switch picks the kernels */
        CHECK(strcmp(s[0].name, o->subgroups ? "ln_fwd_sg" : "ln_fwd") == 0);
        CHECK(strcmp(s[1].name, o->subgroups ? "ln_bwd_dx_sg" : "ln_bwd_dx") == 0);
        tt_gtest_run(s, 4);
    }
    float *stt = malloc(2 * (size_t)rows * sizeof *stt);
    r->out = malloc(n * sizeof(float));
    r->dx = malloc(n * sizeof(float));
    r->mean = malloc((size_t)rows * sizeof(float));
    r->rstd = malloc((size_t)rows * sizeof(float));
    tt_gtest_down(bout, r->out, n);
    tt_gtest_down(bdx, r->dx, n);
    tt_gtest_down(bst, stt, 2 * (size_t)rows);
    memcpy(r->mean, stt, (size_t)rows * sizeof(float));
    memcpy(r->rstd, stt + rows, (size_t)rows * sizeof(float));
    free(stt);
    tt_gpu_buffer_free(G, bout), tt_gpu_buffer_free(G, bst), tt_gpu_buffer_free(G, bdx);
    tt_gpu_buffer_free(G, bg), tt_gpu_buffer_free(G, part);
}

static void ln_free(ln_res *r) { free(r->out), free(r->mean), free(r->rstd), free(r->dx); }

static void ln_case(int rows, int C) {
    size_t n = (size_t)rows * C;
    float *x = tt_gtest_rnd(n, -2, 2), *wb = tt_gtest_rnd(2 * (size_t)C, -1.5f, 1.5f), *dy = tt_gtest_rnd(n, -1, 1),
          *dx0 = tt_gtest_rnd(n, -1, 1);
    /* a per-row offset so the mean is not ~0 (the variance pass then matters) */
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < C; c++) x[(size_t)r * C + c] += (float)(r % 7) - 3.0f;
    double *out = malloc(n * sizeof *out), *dx = malloc(n * sizeof *dx);
    double *mean = malloc((size_t)rows * sizeof *mean), *rstd = malloc((size_t)rows * sizeof *rstd);
    double *dxs = malloc((size_t)rows * sizeof *dxs); /* per row: max |dx0| + rstd * max |g| */
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * C;
        double mu = 0, var = 0, m1 = 0, m2 = 0;
        for (int c = 0; c < C; c++) mu += xr[c];
        mu /= C;
        for (int c = 0; c < C; c++) var += (xr[c] - mu) * (xr[c] - mu);
        var /= C;
        double rs = 1.0 / sqrt(var + 1e-5);
        mean[r] = mu;
        rstd[r] = rs;
        for (int c = 0; c < C; c++) {
            double xh = (xr[c] - mu) * rs, g = (double)dy[(size_t)r * C + c] * wb[c];
            out[(size_t)r * C + c] = xh * wb[c] + wb[C + c];
            m1 += g;
            m2 += g * xh;
        }
        m1 /= C;
        m2 /= C;
        double gm = 0, d0 = 0;
        for (int c = 0; c < C; c++) {
            double xh = (xr[c] - mu) * rs, g = (double)dy[(size_t)r * C + c] * wb[c];
            dx[(size_t)r * C + c] = dx0[(size_t)r * C + c] + rs * (g - m1 - xh * m2);
            if (fabs(g) > gm) gm = fabs(g);
            if (fabs(dx0[(size_t)r * C + c]) > d0) d0 = fabs(dx0[(size_t)r * C + c]);
        }
        dxs[r] = d0 + rs * gm;
    }
    tt_gpu_buf bx = tt_gtest_up(x, n), bwb = tt_gtest_up(wb, 2 * (size_t)C), bdy = tt_gtest_up(dy, n);
    ln_res a, b, t, p;
    ln_run(&SG, rows, C, bx, bwb, bdy, dx0, &a);
    ln_run(&SG2, rows, C, bx, bwb, bdy, dx0, &b);
    ln_run(&TREE, rows, C, bx, bwb, bdy, dx0, &t);
    ln_run(&PLAIN, rows, C, bx, bwb, bdy, dx0, &p);
    const ln_res *rs[2] = {&a, &t};
    const char *names[2] = {"sg", "tree"};
    for (int i = 0; i < 2; i++) {
        check_rows("ln out", names[i], rows, C, rs[i]->out, out);
        check_rows("ln mean", names[i], 1, rows, rs[i]->mean, mean); /* |mean| ~ 3: relative to the largest */
        check_rows("ln rstd", names[i], 1, rows, rs[i]->rstd, rstd);
        check_rows_s("ln dx", names[i], rows, C, rs[i]->dx, dx, dxs);
    }
    /* determinism: separately compiled pipelines, same bits */
    check_bits("ln out sg/sg2", rows, C, a.out, b.out);
    check_bits("ln mean sg/sg2", 1, rows, a.mean, b.mean);
    check_bits("ln rstd sg/sg2", 1, rows, a.rstd, b.rstd);
    check_bits("ln dx sg/sg2", rows, C, a.dx, b.dx);
    /* the fallback is the fp32 tree: same bits as ln_fwd / ln_bwd_dx */
    check_bits("ln out tree/plain", rows, C, t.out, p.out);
    check_bits("ln stats tree/plain", 1, rows, t.rstd, p.rstd);
    check_bits("ln dx tree/plain", rows, C, t.dx, p.dx);
    n_sg_differs += memcmp(a.out, p.out, n * sizeof(float)) != 0 || memcmp(a.rstd, p.rstd, (size_t)rows * 4) != 0 ||
                    memcmp(a.dx, p.dx, n * sizeof(float)) != 0;
    ln_free(&a), ln_free(&b), ln_free(&t), ln_free(&p);
    tt_gpu_buffer_free(G, bx), tt_gpu_buffer_free(G, bwb), tt_gpu_buffer_free(G, bdy);
    free(x), free(wb), free(dy), free(dx0), free(out), free(dx), free(mean), free(rstd), free(dxs);
}

static const int CS[] = {1, 3, 17, 48, 65, 127, 768};
#define N_CS (int)(sizeof CS / sizeof CS[0])

TT_TEST(test_layernorm_sg) {
    static const int rows[] = {1, 2, 17, 130};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < N_CS; j++) ln_case(rows[i], CS[j]);
}

/* ---- softmax + cross-entropy ---- */
static void xent_run(tt_gops *o, int rows, int V, int T, tt_gpu_buf btok, const float *lg, float *dl, float *loss) {
    tt_status st;
    size_t n = (size_t)rows * V;
    tt_gpu_buf blg = tt_gtest_up(lg, n), bl = tt_gtest_poisoned((size_t)rows);
    tt_gsite s;
    int rc = tt_gop_crossentropy(o, &s, tt_gtest_R(blg), tt_gtest_R(bl), tt_gtest_R(btok), rows, V, T, &st);
    tt_gtest_die_on(rc, &st, "xent plan");
    if (!rc) {
        CHECK(strcmp(s.name, o->subgroups ? "xent_sg" : "xent") == 0);
        tt_gtest_run(&s, 1);
    }
    tt_gtest_down(blg, dl, n);
    tt_gtest_down(bl, loss, (size_t)rows);
    tt_gpu_buffer_free(G, blg), tt_gpu_buffer_free(G, bl);
}

static void xent_case(int B, int T, int V, uint64_t seed) {
    tt_status st;
    int rows = B * T;
    size_t ntok = (size_t)B * (T + 1), n = (size_t)rows * V;
    uint32_t *tok = malloc(ntok * sizeof *tok);
    for (size_t i = 0; i < ntok; i++) tok[i] = (uint32_t)tt_rand_below(seed, TT_STREAM_TEST, i, (uint64_t)V);
    float *lg = tt_gtest_rnd(n, -8, 8);
    /* every other row has one logit of 100 at a random column: exp(x - max)
     * overflows unless the max is right (a wrong max is otherwise harmless) */
    for (int r = 0; r < rows; r += 2)
        lg[(size_t)r * V + tt_rand_below(seed, TT_STREAM_TEST, 1000003u + (uint64_t)r, (uint64_t)V)] = 100.0f;
    double gs = 1.0 / (rows * 2.0);
    double *dl = malloc(n * sizeof *dl), *loss = malloc((size_t)rows * sizeof *loss);
    for (int r = 0; r < rows; r++) {
        const float *x = lg + (size_t)r * V;
        double mx = -1e300, s = 0;
        for (int i = 0; i < V; i++) mx = x[i] > mx ? x[i] : mx;
        for (int i = 0; i < V; i++) s += exp(x[i] - mx);
        double lse = mx + log(s);
        uint32_t tg = tok[(size_t)(r / T) * (T + 1) + r % T + 1];
        loss[r] = lse - x[tg];
        for (int i = 0; i < V; i++) dl[(size_t)r * V + i] = (exp(x[i] - lse) - (i == (int)tg)) * gs;
    }
    tt_gstep sp;
    memset(&sp, 0, sizeof sp);
    sp.grad_scale = (float)gs;
    sp.loss_scale = 1.0f;
    sp.valid_rows = (uint32_t)rows;
    tt_gtest_die_on(tt_gops_set_step(&SG, &sp, &st), &st, "step uniforms");
    tt_gtest_die_on(tt_gops_set_step(&SG2, &sp, &st), &st, "step uniforms");
    tt_gtest_die_on(tt_gops_set_step(&TREE, &sp, &st), &st, "step uniforms");
    tt_gtest_die_on(tt_gops_set_step(&PLAIN, &sp, &st), &st, "step uniforms");
    tt_gpu_buf btok = tt_gtest_up(tok, ntok);
    float *d[4], *l[4];
    tt_gops *ops[4] = {&SG, &SG2, &TREE, &PLAIN};
    for (int i = 0; i < 4; i++) {
        d[i] = malloc(n * sizeof(float));
        l[i] = malloc((size_t)rows * sizeof(float));
        xent_run(ops[i], rows, V, T, btok, lg, d[i], l[i]);
    }
    static const char *names[3] = {"sg", "sg2", "tree"};
    double *gsr = malloc((size_t)rows * sizeof *gsr); /* |softmax - onehot| <= 1: the terms are ~grad_scale */
    for (int r = 0; r < rows; r++) gsr[r] = gs;
    for (int i = 0; i < 3; i++) {
        check_rows_s("xent dlogits", names[i], rows, V, d[i], dl, gsr);
        check_rows("xent loss", names[i], 1, rows, l[i], loss);
    }
    check_bits("xent dlogits sg/sg2", rows, V, d[0], d[1]);
    check_bits("xent loss sg/sg2", 1, rows, l[0], l[1]);
    check_bits("xent dlogits tree/plain", rows, V, d[2], d[3]);
    check_bits("xent loss tree/plain", 1, rows, l[2], l[3]);
    n_sg_differs += memcmp(d[0], d[3], n * sizeof(float)) != 0;
    for (int i = 0; i < 4; i++) free(d[i]), free(l[i]);
    tt_gpu_buffer_free(G, btok);
    free(tok), free(lg), free(dl), free(loss), free(gsr);
}

TT_TEST(test_crossentropy_sg) {
    static const int bt[][2] = {{1, 1}, {1, 17}, {2, 65}};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < N_CS; j++) xent_case(bt[i][0], bt[i][1], CS[j], (uint64_t)(100 + 10 * i + j));
}

/* ---- grad norm partial sums (sumsq) ---- */
static void sumsq_run(tt_gops *o, size_t n, tt_gpu_buf bg, const float *p, float *parts, uint32_t np, float *norm) {
    tt_status st;
    size_t nw = (n + 31) / 32;
    uint32_t *mask = calloc(nw, sizeof *mask);
    float *z = calloc(n, sizeof *z);
    tt_gpu_buf bp = tt_gtest_up(p, n), bm = tt_gtest_up(z, n), bv = tt_gtest_up(z, n), bmask = tt_gtest_up(mask, nw);
    tt_gpu_buf part = tt_gtest_poisoned(tt_gop_adamw_part_elems(n)), bst = tt_gtest_poisoned(4);
    tt_gsite s[2];
    int rc = tt_gop_adamw(o, s, bp, bg, bm, bv, bmask, part, bst, n, &st);
    tt_gtest_die_on(rc, &st, "adamw plan");
    if (!rc) {
        CHECK(strcmp(s[0].name, o->subgroups ? "sumsq_sg" : "sumsq") == 0);
        tt_gtest_run(s, 2);
    }
    tt_gtest_down(part, parts, np);
    float stt[4];
    tt_gtest_down(bst, stt, 4);
    *norm = stt[1];
    tt_gpu_buffer_free(G, bp), tt_gpu_buffer_free(G, bm), tt_gpu_buffer_free(G, bv), tt_gpu_buffer_free(G, bmask);
    tt_gpu_buffer_free(G, part), tt_gpu_buffer_free(G, bst);
    free(mask), free(z);
}

static void sumsq_case(size_t n) {
    tt_status st;
    float *g = tt_gtest_rnd(n, -0.5f, 0.5f), *p = tt_gtest_rnd(n, -1, 1);
    size_t per = tt_gop_norm_part_len(n);
    uint32_t np = (uint32_t)((n + per - 1) / per);
    double *ref = calloc(np, sizeof *ref), ss = 0;
    for (size_t i = 0; i < n; i++) {
        ref[i / per] += (double)g[i] * g[i];
        ss += (double)g[i] * g[i];
    }
    tt_gstep sp;
    memset(&sp, 0, sizeof sp);
    sp.lr = 1e-3f, sp.b1 = 0.9f, sp.b2 = 0.95f, sp.eps = 1e-8f, sp.bc1 = 0.1f, sp.bc2 = 0.05f;
    tt_gops *ops[4] = {&SG, &SG2, &TREE, &PLAIN};
    float *parts[4], norm[4];
    tt_gpu_buf bg = tt_gtest_up(g, n);
    for (int i = 0; i < 4; i++) {
        tt_gtest_die_on(tt_gops_set_step(ops[i], &sp, &st), &st, "step uniforms");
        parts[i] = malloc(np * sizeof(float));
        sumsq_run(ops[i], n, bg, p, parts[i], np, &norm[i]);
    }
    static const char *names[3] = {"sg", "sg2", "tree"};
    for (int i = 0; i < 3; i++) {
        double e = 0;
        for (uint32_t k = 0; k < np; k++) {
            double q = fabs(parts[i][k] - ref[k]) / ref[k];
            if (!(q <= e)) e = q;
        }
        CHECK_MSG(e <= TOL, "sumsq parts (%s) n %zu: rel err %.3g", names[i], n, e);
        CHECK_MSG(fabs(norm[i] - sqrt(ss)) <= TOL * sqrt(ss), "grad norm (%s) n %zu: %.9g vs %.9g", names[i], n,
                  norm[i], sqrt(ss));
    }
    check_bits("sumsq parts sg/sg2", 1, (int)np, parts[0], parts[1]);
    check_bits("sumsq parts tree/plain", 1, (int)np, parts[2], parts[3]);
    CHECK(memcmp(&norm[0], &norm[1], sizeof(float)) == 0);
    n_sg_differs += memcmp(parts[0], parts[3], np * sizeof(float)) != 0;
    for (int i = 0; i < 4; i++) free(parts[i]);
    tt_gpu_buffer_free(G, bg);
    free(g), free(p), free(ref);
}

TT_TEST(test_sumsq_sg) {
    static const size_t ns[] = {1, 3, 17, 255, 257, 2048 * 3 + 5, 70001};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) sumsq_case(ns[i]);
}

/* ---- end to end against the CPU, tier on ---- */
TT_TEST(test_e2e_tiny_sg) {
    setenv("TT_WEBGPU_SUBGROUPS", "1", 1);
    tt_gtest_e2e_vs_cpu("tiny", "mt", 41);
    unsetenv("TT_WEBGPU_SUBGROUPS");
}

TT_TEST(test_e2e_small_sg) {
    setenv("TT_WEBGPU_SUBGROUPS", "1", 1);
    tt_gtest_e2e_vs_cpu("small", "mt", 43);
    unsetenv("TT_WEBGPU_SUBGROUPS");
}

int main(void) {
    unsetenv("TT_WEBGPU_SUBGROUPS");
    G = tt_gtest_open();
    tt_gtest_set_seed(5000);
    const tt_gpu_info *in = tt_gpu_get_info(G);
    printf("adapter: %s (%s), subgroups %s, sizes %u..%u\n", in->name, in->backend, in->has_subgroups ? "yes" : "no",
           in->subgroup_min, in->subgroup_max);
    RUN(test_gate);
    if (!in->has_subgroups) {
        printf("SKIP: adapter %s lacks the subgroups feature: kernel tests not run\n", in->name);
        tt_gpu_close(G);
        return tt_test_summary();
    }
    if (init_ops(&PLAIN, NULL) || init_ops(&SG, "1") || init_ops(&SG2, "1") || init_ops(&TREE, "tree"))
        return tt_test_summary();
    CHECK(PLAIN.subgroups == 0 && SG.subgroups == 1 && SG2.subgroups == 1 && TREE.subgroups == 2);
    RUN(test_layernorm_sg);
    RUN(test_crossentropy_sg);
    RUN(test_sumsq_sg);
    printf("the subgroup path changed the bits in %d kernel cases\n", n_sg_differs);
    CHECK_MSG(n_sg_differs > 0, "the _sg kernels always took their fallback tree on this adapter (subgroups not blocks "
                                "of consecutive invocations?)");
    RUN(test_e2e_tiny_sg);
    RUN(test_e2e_small_sg);
    tt_gops_free(&PLAIN), tt_gops_free(&SG), tt_gops_free(&SG2), tt_gops_free(&TREE);
    tt_gpu_close(G);
    return tt_test_summary();
}
