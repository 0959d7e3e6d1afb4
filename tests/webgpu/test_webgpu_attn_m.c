/* test_webgpu_attn_m.c — the matmul-style FlashAttention-2 kernels
 * (attn_m_fwd, attn_m_bwd_dq, attn_m_bwd_dkdv; the default attention, TT_WEBGPU_ATTN=mt, field
 * tt_gops.att_mt, planned by src/webgpu/gpu_attn_m.c):
 *   - the tile plan: within every limit it is given (storage, invocations,
 *     at most 4 output blocks per thread), usable for head sizes <= 64 under
 *     WebGPU's default limits (16 KiB, 256), the expected tiles at the H200's
 *     limits (48 KiB, 1024), monotone in the storage limit;
 *   - forward y and logsumexp, backward dq, dk, dv (and D = rowsum(dy*y))
 *     against a float64 reference on random data, T = 1, 3, 5, 17, 33, 65,
 *     130, head sizes 3, 8, 12, 16, 17, 64 (some not multiples of 4), several
 *     B*NH; outputs poisoned (NaN) first; max |gpu - ref| / max |ref| <= 1e-5;
 *     a rerun gives bit-identical results (fixed summation order); both
 *     kinds of loop bounds (run-time on CPU adapters, constants on GPUs);
 *   - the same under smaller storage limits (16 KiB, 4 KiB: smaller tiles,
 *     more output blocks per thread; under 4 KiB head size 64 does not fit
 *     and the ops must fall back to the default kernels, still correct);
 *   - PF (pipelined tile loads, TT_WEBGPU_ATTN_PF) forced on and off on the
 *     same inputs: both checked as above and bit-identical to each other
 *     (T 1..130, head sizes 3, 5, 6, 16, 17, 64, both loop bounds, 4 KiB);
 *   - the backward variant TT_WEBGPU_ATTN_BWD=ds (attn_m2_bwd_dkdv +
 *     attn_m2_bwd_dq, tt_gops.att_bwd): its plan (limits, fallbacks, the
 *     H200's gpt2 tiles), the same shapes, bounds, limits and reruns as
 *     above, forced tiles (ds4, ds8), the site names it must plan;
 *   - end to end: the tiny preset's loss + full gradient and a few AdamW
 *     steps with TT_WEBGPU_ATTN=mt against the CPU backend (and with
 *     TT_WEBGPU_ATTN_BWD=ds).
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

/* ---- the plan (no device) ------------------------------------------------ */
TT_TEST(test_m_plan) {
    static const uint32_t lims[5] = {4096, 16384, 32768, 49152, 65536};
    static const uint32_t invs[3] = {64, 256, 1024};
    for (int which = 0; which < 3; which++)
        for (int hs = 1; hs <= 160; hs++)
            for (int li = 0; li < 5; li++)
                for (int ii = 0; ii < 3; ii++) {
                    tt_attn_m_tile t;
                    memset(&t, 0xff, sizeof t);
                    int ok = tt_gop_attn_m_plan(which, hs, lims[li], invs[ii], &t);
                    if (!ok) {
                        /* WebGPU's default limits must serve the presets' head sizes */
                        CHECK_MSG(!(hs <= 64 && lims[li] >= 16384 && invs[ii] >= 256), "which %d hs %d", which, hs);
                        continue;
                    }
                    uint32_t hs4 = (uint32_t)(hs + 3) / 4, tx = t.bc / 4;
                    CHECK(t.br % 4 == 0 && t.bc % 4 == 0 && t.br >= 4 && t.bc >= 4);
                    CHECK(t.nt == (t.br / 4) * tx && t.nt <= invs[ii]);
                    CHECK(t.bytes <= lims[li]);
                    CHECK(t.ob >= 1 && t.ob <= 4 && t.ob * tx >= hs4 && (t.ob - 1) * tx < hs4);
                    /* a larger limit never yields a smaller workgroup */
                    if (li + 1 < 5) {
                        tt_attn_m_tile u;
                        CHECK(tt_gop_attn_m_plan(which, hs, lims[li + 1], invs[ii], &u) &&
                              u.br * u.bc >= t.br * t.bc);
                    }
                }
    /* the H200's limits, head size 64: the tiles the kernel headers describe */
    tt_attn_m_tile t;
    CHECK(tt_gop_attn_m_plan(0, 64, 49152, 1024, &t) && t.br == 64 && t.bc == 32 && t.ob == 2 && t.nt == 128);
    CHECK(tt_gop_attn_m_plan(1, 64, 49152, 1024, &t) && t.br == 64 && t.bc == 16 && t.ob == 4);
    CHECK(tt_gop_attn_m_plan(2, 64, 49152, 1024, &t) && t.br == 32 && t.bc == 32 && t.ob == 2);
    CHECK(!tt_gop_attn_m_plan(0, 0, 49152, 1024, &t));
}

/* TT_WEBGPU_ATTN_BWD=ds: the plan (no device) */
TT_TEST(test_m2_plan) {
    static const uint32_t lims[4] = {4096, 16384, 32768, 49152};
    static const uint32_t invs[3] = {64, 256, 1024};
    tt_attn_m2_plan p;
    for (int hs = 1; hs <= 160; hs++)
        for (int li = 0; li < 4; li++)
            for (int ii = 0; ii < 3; ii++)
                for (uint32_t sb = 8; sb <= 10; sb++) {
                    int T = 1 + (hs * 37) % 300, B = 1 + hs % 3, NH = 1 + hs % 5;
                    memset(&p, 0xff, sizeof p);
                    int ok = tt_gop_attn_m2_plan(hs, B, T, NH, lims[li], invs[ii], sb, 1ull << 30, 0, &p);
                    if (sb < 9) { /* 9 storage buffers: no plan under WebGPU's default 8 */
                        CHECK(!ok);
                        continue;
                    }
                    if (!ok) {
                        /* square dk/dv tiles need TB >= 16 at head size 64 (at most 4 output
                         * blocks per thread): 20 KiB; so up to 32 under WebGPU's default 16 KiB */
                        CHECK_MSG(!(invs[ii] >= 256 && ((hs <= 64 && lims[li] >= 32768) ||
                                                        (hs <= 32 && lims[li] >= 16384))),
                                  "hs %d", hs);
                        continue;
                    }
                    uint32_t hs4 = (uint32_t)(hs + 3) / 4, ks4 = hs4 | 1, pk4 = (p.tb / 4) | 1;
                    uint64_t nb = ((uint64_t)T + p.tb - 1) / p.tb;
                    CHECK(p.tb % 4 == 0 && p.tb >= 4 && p.kv.br == p.tb && p.kv.bc == p.tb);
                    CHECK(p.kv.bytes <= lims[li] && p.kv.nt <= invs[ii] && p.kv.nt == (p.tb / 4) * (p.tb / 4));
                    CHECK(p.bq % p.tb == 0 && p.bq >= p.tb && p.nt_q == p.bq / 4 * p.tx && p.nt_q <= invs[ii]);
                    CHECK(p.bytes_q == 16 * (p.bq * pk4 + p.tb * ks4) && p.bytes_q <= lims[li]);
                    CHECK(p.ob >= 1 && p.ob <= 4 && p.ob * p.tx >= hs4 && (p.ob - 1) * p.tx < hs4);
                    CHECK(p.ds_elems == (uint64_t)B * NH * (nb * (nb + 1) / 2) * p.tb * p.tb);
                }
    /* the H200 (48 KiB, 1024 invocations), gpt2 (B 8, T 1024, 12 x 64) */
    CHECK(tt_gop_attn_m2_plan(64, 8, 1024, 12, 49152, 1024, 10, 4ull << 30, 0, &p) && p.tb == 32 && p.bq == 64 &&
          p.ob == 2 && p.tx == 8 && p.nt_q == 128 && p.kv.bytes == 44288 &&
          p.ds_elems == 8ull * 12 * 528 * 1024);
    /* the dS scratch over the binding limit (gpt2 under 128 MiB): no plan */
    CHECK(!tt_gop_attn_m2_plan(64, 8, 1024, 12, 49152, 1024, 10, 128ull << 20, 0, &p));
    /* a forced tile, where it fits; not where it does not */
    CHECK(tt_gop_attn_m2_plan(32, 1, 100, 2, 49152, 1024, 10, 1ull << 30, 8, &p) && p.tb == 8);
    CHECK(!tt_gop_attn_m2_plan(64, 1, 100, 2, 49152, 1024, 10, 1ull << 30, 8, &p)); /* TB 8: OB 8 > 4 */
    CHECK(!tt_gop_attn_m2_plan(64, 1, 100, 2, 16384, 1024, 10, 1ull << 30, 32, &p));
    CHECK(!tt_gop_attn_m2_plan(0, 1, 100, 2, 49152, 1024, 10, 1ull << 30, 0, &p));
}

/* ---- kernels vs float64 ----------------------------------------------------- */
static int M2_RAN; /* cases that ran the ds backward */
/* the backward O will plan: the ds variant when selected and it fits */
static int m2_expected(int hs, int B, int T, int NH) {
    tt_attn_m2_plan p;
    uint64_t mb = INFO.max_storage_binding;
    if (INFO.max_buffer && (mb == 0 || INFO.max_buffer < mb)) mb = INFO.max_buffer;
    return O.att_bwd == 1 && tt_gop_attn_m2_plan(hs, B, T, NH, INFO.max_wg_storage, INFO.max_invocations,
                                                 INFO.max_storage_per_stage, mb, O.att_bwd_tb, &p);
}

static void cmp(tt_gpu_buf b, size_t off, const double *ref, size_t n, const char *what, int T, int hs) {
    float *got = malloc((off + n) * sizeof *got);
    tt_gtest_down(b, got, off + n);
    double e = tt_test_max_rel_err(got + off, ref, n);
    if (e > WORST || e != e) WORST = e;
    if (!(e <= TOL))
        fprintf(stderr, "  %s T%d hs%d (storage %u): max rel err %.3g > %.3g\n", what, T, hs, INFO.max_wg_storage, e,
                TOL);
    CHECK(e <= TOL);
    free(got);
}

/* bit-identical to the first run's read-back */
static void same_bits(tt_gpu_buf b, const float *first, size_t n, const char *what) {
    float *got = malloc(n * sizeof *got);
    tt_gtest_down(b, got, n);
    CHECK_MSG(memcmp(got, first, n * sizeof *got) == 0, "%s not bit-identical on a rerun", what);
    free(got);
}

/* one forward + backward as O plans it (TT_WEBGPU_ATTN_PF = pf, or as the
 * environment has it for NULL) into freshly poisoned outputs, checked
 * against the float64 reference (and, rerun, a second run's bits); the 5
 * outputs read back into out[] (malloc'd; NULL where nothing ran) */
static void attn_run(int B, int T, int NH, int hs, int rerun, const char *pf, tt_gpu_buf bq, tt_gpu_buf bk,
                     tt_gpu_buf bv, tt_gpu_buf bdy, const double *const ref[6], float *out[5]) {
    tt_status st;
    int C = NH * hs;
    size_t n = (size_t)B * T * C, ns = (size_t)B * NH * T;
    char prev[16] = "";
    const char *pe = getenv("TT_WEBGPU_ATTN_PF");
    int had = pe != NULL;
    if (had) snprintf(prev, sizeof prev, "%s", pe);
    if (pf) setenv("TT_WEBGPU_ATTN_PF", pf, 1);
    tt_gpu_buf by = tt_gtest_poisoned(n), bst = tt_gtest_poisoned(2 * ns), bdq = tt_gtest_poisoned(n),
               bdk = tt_gtest_poisoned(n), bdv = tt_gtest_poisoned(n);
    tt_gpu_buf outs[5] = {by, bst, bdq, bdk, bdv};
    size_t lens[5] = {n, 2 * ns, n, n, n};
    for (int i = 0; i < 5; i++) out[i] = NULL;
    int mt = tt_gop_attn_m_usable(&O, hs);
    int m2 = mt && m2_expected(hs, B, T, NH);
    if (m2) M2_RAN++;
    tt_gsite s[3];
    int rc = tt_gop_attention_forward(&O, &s[0], tt_gtest_R(by), tt_gtest_R(bst), tt_gtest_R(bq), tt_gtest_R(bk),
                                      tt_gtest_R(bv), B, T, C, NH, &st);
    tt_gtest_die_on(rc, &st, "attn fwd");
    if (!rc) {
        CHECK(strcmp(s[0].name, mt ? "attn_m_fwd" : "attn_fwd") == 0);
        rc = tt_gop_attention_backward(&O, &s[1], tt_gtest_R(bdq), tt_gtest_R(bdk), tt_gtest_R(bdv), tt_gtest_R(bst),
                                       tt_gtest_R(bq), tt_gtest_R(bk), tt_gtest_R(bv), tt_gtest_R(by), tt_gtest_R(bdy),
                                       B, T, C, NH, &st);
        tt_gtest_die_on(rc, &st, "attn bwd");
    }
    if (pf) { /* restore the caller's environment */
        if (had) setenv("TT_WEBGPU_ATTN_PF", prev, 1);
        else unsetenv("TT_WEBGPU_ATTN_PF");
    }
    if (!rc) {
        if (m2)
            CHECK(strcmp(s[1].name, "attn_m2_bwd_dkdv") == 0 && strcmp(s[2].name, "attn_m2_bwd_dq") == 0);
        else
            CHECK(strcmp(s[1].name, mt ? "attn_m_bwd_dq" : "attn_bwd_dq") == 0 &&
                  strcmp(s[2].name, mt ? "attn_m_bwd_dkdv" : "attn_bwd_dkdv") == 0);
        if (pf && mt) { /* the profile tag says whether the kernel pipelines */
            int on = strcmp(pf, "1") == 0;
            CHECK_MSG((strstr(s[0].tag, " pf") != NULL) == on, "fwd tag '%s' (PF %s)", s[0].tag, pf);
            if (!m2)
                CHECK_MSG((strstr(s[1].tag, " pf") != NULL) == on && (strstr(s[2].tag, " pf") != NULL) == on,
                          "bwd tags '%s' '%s' (PF %s)", s[1].tag, s[2].tag, pf);
        }
        tt_gtest_run(s, 3); /* backward on the GPU's own y and lse, as the backend runs it */
        cmp(by, 0, ref[0], n, "y", T, hs);
        cmp(bst, 0, ref[1], ns, "lse", T, hs);
        cmp(bst, ns, ref[2], ns, "D", T, hs);
        cmp(bdq, 0, ref[3], n, "dq", T, hs);
        cmp(bdk, 0, ref[4], n, "dk", T, hs);
        cmp(bdv, 0, ref[5], n, "dv", T, hs);
        for (int i = 0; i < 5; i++) {
            out[i] = malloc(lens[i] * sizeof(float));
            tt_gtest_down(outs[i], out[i], lens[i]);
        }
        if (rerun) {
            tt_gtest_run(s, 3);
            static const char *names[5] = {"y", "stats", "dq", "dk", "dv"};
            for (int i = 0; i < 5; i++) same_bits(outs[i], out[i], lens[i], names[i]);
        }
    }
    for (int i = 0; i < 5; i++) tt_gpu_buffer_free(tt_gtest_gpu, outs[i]);
}

/* random inputs, the float64 reference, attn_run; pf: run with PF forced on
 * ("1") and off ("0") on the same inputs, each checked as above, and the
 * outputs compared bit for bit (pipelining moves loads, never arithmetic) */
static void attn_case_pf(int B, int T, int NH, int hs, int rerun, int pf) {
    tt_gtest_attn_prob P;
    tt_gtest_attn_make(&P, B, T, NH, hs);
    const size_t n = P.n, ns = P.ns;
    const tt_gpu_buf bq = P.bq, bk = P.bk, bv = P.bv, bdy = P.bdy;
    const double *const ref[6] = {P.y, P.lse, P.D, P.dq, P.dk, P.dv};
    static const char *names[5] = {"y", "stats", "dq", "dk", "dv"};
    size_t lens[5] = {n, 2 * ns, n, n, n};
    float *got[2][5];
    attn_run(B, T, NH, hs, rerun, pf ? "1" : NULL, bq, bk, bv, bdy, ref, got[0]);
    if (pf) {
        attn_run(B, T, NH, hs, 0, "0", bq, bk, bv, bdy, ref, got[1]);
        for (int i = 0; i < 5; i++)
            if (got[0][i] && got[1][i])
                CHECK_MSG(memcmp(got[0][i], got[1][i], lens[i] * sizeof(float)) == 0,
                          "%s: PF on / off not bit-identical (B%d T%d NH%d hs%d, storage %u)", names[i], B, T, NH, hs,
                          INFO.max_wg_storage);
    }
    for (int m = 0; m < (pf ? 2 : 1); m++)
        for (int i = 0; i < 5; i++) free(got[m][i]);
    tt_gtest_attn_free(&P);
}

static void attn_case(int B, int T, int NH, int hs, int rerun) { attn_case_pf(B, T, NH, hs, rerun, 0); }

TT_TEST(test_m_adapter_limit) {
    /* B, T, NH, hs */
    static const int cases[][4] = {{1, 1, 1, 16}, {2, 3, 3, 8},    {1, 17, 2, 12}, {2, 65, 3, 16}, {1, 65, 1, 64},
                                   {1, 130, 2, 8}, {3, 17, 4, 12}, {1, 130, 1, 64}, {1, 33, 1, 17}, {2, 5, 2, 3}};
    WORST = 0;
    CHECK(tt_gop_attn_m_usable(&O, 64) && tt_gop_attn_m_usable(&O, 3) && tt_gop_attn_m_usable(&O, 17));
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        attn_case(cases[i][0], cases[i][1], cases[i][2], cases[i][3], i == 3 || i == 7);
    printf("  storage %u B: worst rel err %.3g\n", INFO.max_wg_storage, WORST);
}

/* CPU adapters get run-time loop bounds (DYN, compile time on lavapipe),
 * GPUs constant ones: run the other kind here too */
TT_TEST(test_m_other_bounds) {
    int cpu = INFO.is_cpu;
    INFO.is_cpu = !cpu;
    WORST = 0;
    attn_case(2, 65, 2, 6, 1);
    printf("  %s loop bounds: worst rel err %.3g\n", cpu ? "constant" : "run-time", WORST);
    INFO.is_cpu = cpu;
}

/* smaller storage limits select smaller (BR, BC) and more output blocks per
 * thread: 16 KiB is WebGPU's default (the browser); under 4 KiB head size 64
 * falls back to the default kernels */
TT_TEST(test_m_small_limits) {
    uint32_t full = INFO.max_wg_storage;
    static const uint32_t lims[2] = {16384, 4096};
    for (int l = 0; l < 2; l++) {
        if (full && lims[l] >= full) continue;
        INFO.max_wg_storage = lims[l];
        WORST = 0;
        if (l == 0) {
            CHECK(tt_gop_attn_m_usable(&O, 64));
            attn_case(1, 130, 1, 64, 0);
            attn_case(2, 65, 3, 12, 0);
        } else {
            CHECK(!tt_gop_attn_m_usable(&O, 64) && tt_gop_attn_m_usable(&O, 17));
            attn_case(1, 33, 1, 64, 0); /* default kernels */
            attn_case(1, 65, 2, 17, 0);
        }
        attn_case(2, 33, 2, 3, 0);
        printf("  storage %u B: worst rel err %.3g\n", INFO.max_wg_storage, WORST);
    }
    INFO.max_wg_storage = full;
}

/* PF (software pipelining of the streamed tiles' global loads; gpu_attn_m.c
 * pf_mode, env TT_WEBGPU_ATTN_PF): forced on and off on the same inputs,
 * both within the float64 tolerance and bit-identical to each other, on
 * awkward T (1, 3, 17, 65, 130) and head sizes (3, 5, 17 per element; 16,
 * 64): whole and partial per-thread shares of a tile (NK, NL), both kinds of
 * loop bounds, and under 4 KiB the smallest tiles (fewer threads than tile
 * rows: two lse/D rows per thread in attn_m_bwd_dkdv). Few head sizes: each
 * is 3 more kernels for lavapipe to compile (~5-10 s each set) */
TT_TEST(test_m_pf) {
    static const int cases[][4] = {{1, 1, 1, 16}, {2, 3, 2, 3},   {1, 17, 2, 5},   {2, 65, 2, 16},
                                   {1, 130, 1, 64}, {1, 130, 2, 3}, {1, 65, 1, 5}, {1, 3, 1, 64}, {1, 33, 1, 17}};
    uint32_t full = INFO.max_wg_storage;
    int cpu = INFO.is_cpu;
    WORST = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        attn_case_pf(cases[i][0], cases[i][1], cases[i][2], cases[i][3], i == 4, 1);
    printf("  PF on/off, storage %u B: worst rel err %.3g\n", INFO.max_wg_storage, WORST);
    INFO.is_cpu = !cpu;
    WORST = 0;
    attn_case_pf(2, 65, 2, 6, 0, 1);
    printf("  PF on/off, %s loop bounds: worst rel err %.3g\n", cpu ? "constant" : "run-time", WORST);
    INFO.is_cpu = cpu;
    if (!full || full > 4096) {
        INFO.max_wg_storage = 4096;
        WORST = 0;
        attn_case_pf(1, 65, 2, 6, 0, 1); /* attn_m_bwd_dkdv 8x16: 8 threads, 16 rows */
        attn_case_pf(2, 33, 2, 3, 0, 1);
        printf("  PF on/off, storage %u B: worst rel err %.3g\n", INFO.max_wg_storage, WORST);
        INFO.max_wg_storage = full;
    }
}

/* TT_WEBGPU_ATTN_BWD=ds (attn_m2_bwd_dkdv + attn_m2_bwd_dq): every shape of
 * test_m_adapter_limit, the other loop bounds, smaller storage limits
 * (16 KiB: head size 64 falls back to the mt backward; 4 KiB: to the default
 * kernels), forced tiles TB 4 and 8 (several dS tiles per row block, BQ = 2 TB sub-tiles
 * above the diagonal), and under 8 storage buffers per stage the default
 * mt backward (site names checked in attn_case) */
TT_TEST(test_m2_kernels) {
    static const int cases[][4] = {{1, 1, 1, 16}, {2, 3, 3, 8},    {1, 17, 2, 12}, {2, 65, 3, 16}, {1, 65, 1, 64},
                                   {1, 130, 2, 8}, {3, 17, 4, 12}, {1, 130, 1, 64}, {1, 33, 1, 17}, {2, 5, 2, 3}};
    tt_gpu_info full = INFO;
    O.att_bwd = 1;
    O.att_bwd_tb = 0;
    if (INFO.max_storage_per_stage < 9) INFO.max_storage_per_stage = 9; /* the device's own limit is >= 10 here */
    M2_RAN = 0;
    WORST = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        attn_case(cases[i][0], cases[i][1], cases[i][2], cases[i][3], i == 3 || i == 7);
    CHECK(M2_RAN == (int)(sizeof cases / sizeof cases[0]));
    printf("  ds, storage %u B: worst rel err %.3g (%d cases)\n", INFO.max_wg_storage, WORST, M2_RAN);
    INFO.is_cpu = !full.is_cpu;
    WORST = 0;
    attn_case(2, 65, 2, 6, 1);
    printf("  ds, %s loop bounds: worst rel err %.3g\n", full.is_cpu ? "constant" : "run-time", WORST);
    INFO.is_cpu = full.is_cpu;
    static const uint32_t lims[2] = {16384, 4096};
    for (int l = 0; l < 2; l++) {
        if (full.max_wg_storage && lims[l] >= full.max_wg_storage) continue;
        INFO.max_wg_storage = lims[l];
        WORST = 0;
        M2_RAN = 0;
        if (l == 0) {
            attn_case(1, 130, 1, 64, 0); /* 16x16 tiles need 20 KiB: the mt backward */
            attn_case(2, 65, 3, 12, 0);
            attn_case(1, 130, 2, 32, 0);
            CHECK(M2_RAN == 2);
        } else {
            attn_case(1, 33, 1, 64, 0); /* default kernels */
            attn_case(1, 65, 2, 17, 0);
            CHECK(M2_RAN == 1);
        }
        printf("  ds, storage %u B: worst rel err %.3g\n", INFO.max_wg_storage, WORST);
    }
    INFO.max_wg_storage = full.max_wg_storage;
    static const uint32_t tbs[2] = {4, 8};
    for (int i = 0; i < 2; i++) {
        O.att_bwd_tb = tbs[i];
        WORST = 0;
        M2_RAN = 0;
        attn_case(2, 33, 2, 12, i == 0);
        attn_case(1, 17, 1, 4 * (int)tbs[i], 0); /* OB = 4 */
        attn_case(1, 17, 1, 64, 0);              /* does not fit TB 4, 8: the mt backward */
        CHECK(M2_RAN == 2);
        printf("  ds%u: worst rel err %.3g\n", tbs[i], WORST);
    }
    O.att_bwd_tb = 0;
    INFO.max_storage_per_stage = 8; /* WebGPU's default: the mt backward */
    M2_RAN = 0;
    attn_case(1, 17, 2, 8, 0);
    CHECK(M2_RAN == 0);
    INFO = full;
    O.att_bwd = 0;
}

/* ---- end to end: the tiny preset with TT_WEBGPU_ATTN=mt vs the CPU ---- */
TT_TEST(test_m_training_vs_cpu) { tt_gtest_e2e_vs_cpu("tiny", "mt", 37); }
TT_TEST(test_m2_training_vs_cpu) {
    setenv("TT_WEBGPU_ATTN_BWD", "ds", 1);
    tt_gtest_e2e_vs_cpu("tiny", "mt", 38);
    unsetenv("TT_WEBGPU_ATTN_BWD");
}

int main(void) {
    tt_status st;
    RUN(test_m_plan);
    RUN(test_m2_plan);
    tt_gpu *G = tt_gtest_open();
    tt_gtest_set_seed(7000);
    if (tt_gops_init(&O, G, &st)) {
        fprintf(stderr, "gops init: %s\n", st.msg);
        return 1;
    }
    INFO = *tt_gpu_get_info(G);
    O.info = &INFO;
    O.att_mt = 1;
    printf("adapter: %s (%s), workgroup storage %u B, invocations %u\n", INFO.name, INFO.backend, INFO.max_wg_storage,
           INFO.max_invocations);
    RUN(test_m_adapter_limit);
    RUN(test_m_other_bounds);
    RUN(test_m_small_limits);
    RUN(test_m2_kernels);
    RUN(test_m_pf);
    /* the e2e test needs the mt kernels for the tiny preset's head size */
    CHECK(tt_gop_attn_m_usable(&O, tt_preset_find("tiny")->cfg.d_model / tt_preset_find("tiny")->cfg.n_head));
    {
        /* the ds backward must be what the tiny preset plans on this adapter */
        const tt_model_config *c = &tt_preset_find("tiny")->cfg;
        O.att_bwd = 1;
        CHECK(m2_expected(c->d_model / c->n_head, c->batch, c->ctx, c->n_head));
        O.att_bwd = 0;
    }
    tt_gops_free(&O);
    tt_gpu_close(G);
    RUN(test_m_training_vs_cpu);
    RUN(test_m2_training_vs_cpu);
    return tt_test_summary();
}
