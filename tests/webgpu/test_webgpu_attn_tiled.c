/* test_webgpu_attn_tiled.c — the opt-in tiled FlashAttention kernels
 * (attn_t_fwd, attn_t_bwd_dq, attn_t_bwd_dkdv; TT_WEBGPU_ATTN=tiled, field
 * tt_gops.att_tiled) against a float64 reference on random data:
 *   - forward y and logsumexp, backward dq, dk, dv (and D = rowsum(dy*y)),
 *     T = 1, 3, 5, 17, 33, 65, 130 (not multiples of the tiles), head sizes
 *     3, 8, 12, 16, 17, 64 (some not multiples of 4), several B*NH; outputs
 *     poisoned (NaN) first; max |gpu - ref| / max |ref| <= 1e-5;
 *   - all cases under the adapter's workgroup-storage limit, a few under
 *     smaller limits (16 KiB, 4 KiB: other tile sizes (BR, BC, rows and
 *     columns per thread) of the same kernels);
 *   - end to end: the tiny preset's loss + full gradient and a few AdamW
 *     steps with TT_WEBGPU_ATTN=tiled against the CPU backend.
 * Skips (exit 0) without a WebGPU library/adapter unless TT_REQUIRE_WEBGPU=1. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "config.h"
#include "gpu_ops.h"
#include "gpu_test.h"
#include "model.h"
#include "rng.h"
#include "tt_test.h"

static tt_gops O;
static tt_gpu_info INFO; /* the adapter's limits, storage limit overridden per pass */
static double WORST;

#define TOL 1e-5

static void cmp(tt_gpu_buf b, size_t off, const double *ref, size_t n, const char *what, int T, int hs) {
    float *got = malloc((off + n) * sizeof *got);
    tt_gtest_down(b, got, off + n);
    double e = tt_test_max_rel_err(got + off, ref, n);
    if (e > WORST || e != e) WORST = e;
    if (!(e <= TOL)) fprintf(stderr, "  %s T%d hs%d (storage %u): max rel err %.3g > %.3g\n", what, T, hs,
                             INFO.max_wg_storage, e, TOL);
    CHECK(e <= TOL);
    free(got);
}

static void attn_case(int B, int T, int NH, int hs) {
    tt_status st;
    tt_gtest_attn_prob P;
    tt_gtest_attn_make(&P, B, T, NH, hs);
    const int C = P.C;
    const size_t n = P.n, ns = P.ns;
    const tt_gpu_buf bq = P.bq, bk = P.bk, bv = P.bv, bdy = P.bdy;
    tt_gpu_buf by = tt_gtest_poisoned(n), bst = tt_gtest_poisoned(2 * ns), bdq = tt_gtest_poisoned(n),
               bdk = tt_gtest_poisoned(n), bdv = tt_gtest_poisoned(n);
    tt_gsite s[3];
    int rc = tt_gop_attention_forward(&O, &s[0], tt_gtest_R(by), tt_gtest_R(bst), tt_gtest_R(bq), tt_gtest_R(bk),
                                      tt_gtest_R(bv), B, T, C, NH, &st);
    tt_gtest_die_on(rc, &st, "attn fwd");
    if (!rc) {
        CHECK(strcmp(s[0].name, "attn_t_fwd") == 0);
        rc = tt_gop_attention_backward(&O, &s[1], tt_gtest_R(bdq), tt_gtest_R(bdk), tt_gtest_R(bdv), tt_gtest_R(bst),
                                       tt_gtest_R(bq), tt_gtest_R(bk), tt_gtest_R(bv), tt_gtest_R(by), tt_gtest_R(bdy),
                                       B, T, C, NH, &st);
        tt_gtest_die_on(rc, &st, "attn bwd");
    }
    if (!rc) {
        CHECK(strcmp(s[1].name, "attn_t_bwd_dq") == 0 && strcmp(s[2].name, "attn_t_bwd_dkdv") == 0);
        tt_gtest_run(s, 3); /* backward on the GPU's own y and lse, as the backend runs it */
        cmp(by, 0, P.y, n, "y", T, hs);
        cmp(bst, 0, P.lse, ns, "lse", T, hs);
        cmp(bst, ns, P.D, ns, "D", T, hs);
        cmp(bdq, 0, P.dq, n, "dq", T, hs);
        cmp(bdk, 0, P.dk, n, "dk", T, hs);
        cmp(bdv, 0, P.dv, n, "dv", T, hs);
    }
    tt_gtest_attn_free(&P);
}

static void all_cases(void) {
    /* B, T, NH, hs */
    static const int cases[][4] = {{1, 1, 1, 16}, {2, 3, 3, 8},   {1, 17, 2, 12}, {2, 65, 3, 16}, {1, 65, 1, 64},
                                   {1, 130, 2, 8}, {3, 17, 4, 12}, {1, 130, 1, 64}, {1, 33, 1, 17}, {2, 5, 2, 3}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        attn_case(cases[i][0], cases[i][1], cases[i][2], cases[i][3]);
}

TT_TEST(test_tiled_adapter_limit) {
    WORST = 0;
    all_cases();
    printf("  storage %u B: worst rel err %.3g\n", INFO.max_wg_storage, WORST);
}

/* smaller storage limits select smaller (BR, BC): 16 KiB is WebGPU's default
 * (the browser), 4 KiB forces the smallest tiles */
TT_TEST(test_tiled_small_limits) {
    uint32_t full = INFO.max_wg_storage;
    static const uint32_t lims[2] = {16384, 4096};
    for (int l = 0; l < 2; l++) {
        if (full && lims[l] >= full) continue;
        INFO.max_wg_storage = lims[l];
        WORST = 0;
        attn_case(1, 130, 1, 64);
        attn_case(2, 33, 2, 3);
        if (l == 0) attn_case(2, 65, 3, 12); /* each head size is 3 more pipelines to compile */
        printf("  storage %u B: worst rel err %.3g\n", INFO.max_wg_storage, WORST);
    }
    INFO.max_wg_storage = full;
}

/* ---- end to end: the tiny preset with TT_WEBGPU_ATTN=tiled vs the CPU ---- */
TT_TEST(test_tiled_training_vs_cpu) { tt_gtest_e2e_vs_cpu("tiny", "tiled", 31); }

int main(void) {
    tt_status st;
    tt_gpu *G = tt_gtest_open();
    tt_gtest_set_seed(5000);
    if (tt_gops_init(&O, G, &st)) {
        fprintf(stderr, "gops init: %s\n", st.msg);
        return 1;
    }
    INFO = *tt_gpu_get_info(G);
    O.info = &INFO;
    O.att_tiled = 1;
    O.att_mt = 0; /* the default attention is attn_m_* */
    printf("adapter: %s (%s), workgroup storage %u B, invocations %u\n", INFO.name, INFO.backend, INFO.max_wg_storage,
           INFO.max_invocations);
    RUN(test_tiled_adapter_limit);
    RUN(test_tiled_small_limits);
    tt_gops_free(&O);
    tt_gpu_close(G);
    RUN(test_tiled_training_vs_cpu);
    return tt_test_summary();
}
