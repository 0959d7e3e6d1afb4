/* test_webgpu_attention.c — the WebGPU attention kernels (planned by
 * src/webgpu/attention.c):
 *   - the tile plan of the tiled kernels (attention_forward,
 *     attention_backward_dq, attention_backward_dkdv): within every limit it
 *     is given (storage, invocations, at most 4 output blocks per thread),
 *     usable for head sizes <= 64 under WebGPU's default limits (16 KiB,
 *     256), the expected tiles at an H200's limits (48 KiB, 1024), monotone
 *     in the storage limit;
 *   - forward y and logsumexp, backward dq, dk, dv (and D = rowsum(dy*y))
 *     against a float64 reference on random data, T = 1, 3, 5, 17, 33, 65,
 *     130, head sizes 3, 8, 12, 16, 17, 64 (some not multiples of 4), several
 *     B*NH; outputs poisoned (NaN) first; max |gpu - ref| / max |ref| <= 1e-5;
 *     a rerun gives bit-identical results (fixed summation order); both
 *     kinds of loop bounds (run-time on CPU adapters, constants on GPUs, the
 *     latter with the prefetch GPUs plan);
 *   - the same under smaller storage limits (16 KiB: a browser's default,
 *     smaller tiles, more output blocks per thread; 4 KiB: head size 64
 *     does not fit and the row kernels run, still correct);
 *   - the split layout of dk/dv (2 threads per 4x4 tile,
 *     tt_gops.attn_split) forced on and off on the same inputs: both
 *     checked as above and bit-identical to each other;
 *   - PF (pipelined tile loads, tt_gops.attn_pf) forced on and off on the
 *     same inputs: both checked as above and bit-identical to each other;
 *   - the row kernels (attention_rows_*) where the tiled ones cannot hold
 *     the head: head sizes 130, 132 and 256.
 *   - the dS-storing backward (attention_backward_d, _dkdv storing dS,
 *     _dq_ds): planned for every head size the tiled kernels serve, its
 *     scratch layout replayed on the host, and against the float64
 *     reference and bit for bit against the pair of kernels, for head sizes
 *     with a power-of-two scale (1, 4, 16, 64) and without (3, 17, 20, 24,
 *     32, and every other case above, run both ways where it is planned).
 * Skips (exit 0) without a WebGPU library/adapter unless TT_REQUIRE_WEBGPU=1. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "webgpu/gpu_ops.h"
#include "gpu_test.h"
#include "tt_test.h"

static tt_gops O;
static tt_gpu_info INFO; /* the adapter's limits, storage limit overridden per pass */
static double WORST;
static int DS_CASES; /* cases run both ways: dS-storing backward and the pair */

#define TOL 1e-5

/* ---- the plan (no device) ------------------------------------------------ */
TT_TEST(test_plan) {
    static const uint32_t lims[5] = {4096, 16384, 32768, 49152, 65536};
    static const uint32_t invs[3] = {64, 256, 1024};
    for (int which = 0; which < 3; which++)
        for (int hs = 1; hs <= 160; hs++)
            for (int li = 0; li < 5; li++)
                for (int ii = 0; ii < 3; ii++) {
                    tt_attn_tile t;
                    memset(&t, 0xff, sizeof t);
                    int ok = tt_gop_attention_plan(which, hs, lims[li], invs[ii], &t);
                    if (!ok) {
                        /* WebGPU's default limits must serve the presets' head sizes */
                        CHECK_MSG(!(hs <= 64 && lims[li] >= 16384 && invs[ii] >= 256), "which %d hs %d", which, hs);
                        continue;
                    }
                    uint32_t hs4 = (uint32_t)(hs + 3) / 4, tx = t.bc / 4;
                    CHECK(t.br % 4 == 0 && t.bc % 4 == 0 && t.br >= 4 && t.bc >= 4);
                    CHECK(t.nt == (t.br / 4) * tx);
                    /* the backward kernels run two halves of nt threads */
                    CHECK(t.threads == (which ? 2 : 1) * t.nt && t.threads <= invs[ii]);
                    CHECK(t.bytes <= lims[li]);
                    CHECK(t.ob >= 1 && t.ob <= 4 && t.ob * tx >= hs4 && (t.ob - 1) * tx < hs4);
                    /* a larger limit never yields a smaller workgroup */
                    if (li + 1 < 5) {
                        tt_attn_tile u;
                        CHECK(tt_gop_attention_plan(which, hs, lims[li + 1], invs[ii], &u) &&
                              u.br * u.bc >= t.br * t.bc);
                    }
                }
    /* the H200's limits, head size 64: the tiles the kernel headers describe */
    tt_attn_tile t;
    CHECK(tt_gop_attention_plan(0, 64, 49152, 1024, &t) && t.br == 64 && t.bc == 32 && t.ob == 2 && t.nt == 128);
    CHECK(tt_gop_attention_plan(1, 64, 49152, 1024, &t) && t.br == 64 && t.bc == 16 && t.ob == 4 && t.threads == 128);
    CHECK(tt_gop_attention_plan(2, 64, 49152, 1024, &t) && t.br == 32 && t.bc == 32 && t.ob == 2 && t.threads == 128);
    CHECK(!tt_gop_attention_plan(0, 0, 49152, 1024, &t));
    /* the split layout there: 256 threads, one output block each; dk/dv only */
    CHECK(tt_gop_attention_plan(0, 64, 49152, 1024, &t) && t.spl == 1 && !tt_gop_attention_split(0, 64, 49152, 1024, &t));
    CHECK(tt_gop_attention_plan(2, 64, 49152, 1024, &t) && tt_gop_attention_split(2, 64, 49152, 1024, &t) &&
          t.threads == 256 && t.nt == 64 && t.ob == 1 && t.bytes == 44288 && t.spl == 2);
    CHECK(!tt_gop_attention_split(2, 64, 49152, 1024, &t)); /* once */
    CHECK(tt_gop_attention_plan(1, 64, 49152, 1024, &t) && !tt_gop_attention_split(1, 64, 49152, 1024, &t));
    /* within the limits, whole blocks per half, never for an odd ob */
    for (int which = 0; which < 3; which++)
        for (int hs = 1; hs <= 160; hs++)
            for (int li = 1; li < 5; li++)
                for (int ii = 0; ii < 3; ii++) {
                    tt_attn_tile u;
                    if (!tt_gop_attention_plan(which, hs, lims[li], invs[ii], &t)) continue;
                    u = t;
                    int ok = tt_gop_attention_split(which, hs, lims[li], invs[ii], &u);
                    uint32_t inv = invs[ii] < 256 ? invs[ii] : 256; /* the plan's cap */
                    CHECK(ok == (which == 2 && t.ob % 2 == 0 && 2 * t.threads <= inv));
                    if (ok)
                        CHECK(u.threads == 2 * t.threads && u.bytes == t.bytes && 2 * u.ob == t.ob &&
                              u.br == t.br && u.bc == t.bc && u.spl == 2);
                }
}

/* the dS-storing backward's plan (no device): power-of-two scales only,
 * within the byte limit, the scratch size of the causal blocks */
TT_TEST(test_ds_plan) {
    tt_attn_ds p;
    const uint64_t big = 4ull << 30;
    /* gpt2 at batch 8 on the H200: 64 x 64 blocks, 16 * 17 / 2 per slice */
    CHECK(tt_gop_attention_ds_plan(64, 8, 1024, 12, 49152, 1024, big, &p) && p.g == 64 &&
          p.elems == 8ull * 12 * 136 * 4096);
    CHECK(!tt_gop_attention_ds_plan(64, 8, 1024, 12, 49152, 1024, p.elems * 4 - 1, &p) && p.elems == 0);
    CHECK(tt_gop_attention_ds_plan(64, 8, 1023, 12, 49152, 1024, big, &p) && p.elems == 8ull * 12 * 136 * 4096);
    CHECK(tt_gop_attention_ds_plan(64, 1, 65, 1, 49152, 1024, big, &p) && p.elems == 3ull * 4096);
    /* every head size the tiled kernels serve (the scale need not be a
     * power of two: both backward kernels compute S the same way) */
    for (int hs = 1; hs <= 160; hs++) {
        for (int l = 0; l < 2; l++) {
            uint32_t lim = l ? 16384 : 49152;
            tt_attn_tile t[3];
            int tiled = tt_gop_attention_plan(0, hs, lim, 256, &t[2]) && tt_gop_attention_plan(1, hs, lim, 256, &t[0]) &&
                        tt_gop_attention_plan(2, hs, lim, 256, &t[1]);
            int ok = tt_gop_attention_ds_plan(hs, 2, 33, 3, lim, 256, big, &p);
            CHECK_MSG(ok == tiled, "hs %d storage %u: ds %d, tiled %d", hs, lim, ok, tiled);
            if (!ok || !tiled) continue;
            CHECK(p.g % t[0].br == 0 && p.g % t[0].bc == 0 && p.g % t[1].br == 0 && p.g % t[1].bc == 0);
            uint64_t nb = (33 + p.g - 1) / p.g;
            CHECK(p.elems == 6 * nb * (nb + 1) / 2 * p.g * p.g);
        }
    }
    CHECK(tt_gop_attention_ds_plan(32, 8, 1024, 12, 49152, 1024, big, &p));  /* small ... mega */
    CHECK(!tt_gop_attention_ds_plan(132, 2, 33, 3, 49152, 1024, big, &p)); /* the row kernels */
    CHECK(!tt_gop_attention_ds_plan(64, 1, 33, 1, 4096, 1024, big, &p)); /* no tile holds it */
}

/* the f16 tier's subgroup-matrix kernels (no device): the workgroup memory
 * of each where it runs, and where it does not (attention.c's header) */
TT_TEST(test_sgmat_plan) {
    tt_gpu_info nv = {0}; /* an NVIDIA adapter under Dawn with the f16 toggle */
    nv.max_wg_storage = 49152;
    nv.max_invocations = 1024;
    nv.sgmat_m = nv.sgmat_n = nv.sgmat_k = 16;
    nv.subgroup_min = nv.subgroup_max = 32;
    /* gpt2's head size 64: Q/K/V tiles, S, P, the 4 subgroups' rescale flags (forward); S and dP, dS (dq);
     * P and dS, lse and D (dk/dv) */
    CHECK(tt_gop_attention_sgmat_plan(0, 64, &nv) == 2 * 2 * 64 * 72 + 64 * 68 * 4 + 64 * 72 * 2 + 4 * 4); /* 45072 */
    CHECK(tt_gop_attention_sgmat_plan(1, 64, &nv) == 2 * 2 * 32 * 72 + 2 * 64 * 36 * 4 + 64 * 40 * 2); /* 32768 */
    CHECK(tt_gop_attention_sgmat_plan(2, 64, &nv) == 2 * 2 * 32 * 72 + 2 * 64 * 36 * 4 + 2 * 64 * 40 * 2 + 8 * 32);
    CHECK(tt_gop_attention_sgmat_plan(0, 16, &nv) && tt_gop_attention_sgmat_plan(1, 16, &nv) &&
          tt_gop_attention_sgmat_plan(2, 32, &nv));
    /* head size 128: wider than the forward's 64-key tile (O passes through it); the backward fits */
    CHECK(!tt_gop_attention_sgmat_plan(0, 128, &nv) && tt_gop_attention_sgmat_plan(1, 128, &nv) == 40960 &&
          tt_gop_attention_sgmat_plan(2, 128, &nv) == 46336);
    CHECK(tt_gop_attention_sgmat_plan(1, 192, &nv) == 49152 && !tt_gop_attention_sgmat_plan(2, 192, &nv)); /* 54528 B */
    for (int hs = 1; hs <= 64; hs++)                  /* whole 16 x 16 blocks only */
        for (int w = 0; w < 3; w++) CHECK_MSG(!tt_gop_attention_sgmat_plan(w, hs, &nv) == !!(hs % 16), "hs %d", hs);
    CHECK(!tt_gop_attention_sgmat_plan(3, 64, &nv) && !tt_gop_attention_sgmat_plan(-1, 64, &nv));
    tt_gpu_info x = nv; /* 32 KiB of workgroup memory: dq alone fits, so the backward runs f32 */
    x.max_wg_storage = 32768;
    CHECK(!tt_gop_attention_sgmat_plan(0, 64, &x) && tt_gop_attention_sgmat_plan(1, 64, &x) &&
          !tt_gop_attention_sgmat_plan(2, 64, &x));
    x = nv; /* subgroups of 64 (4 lanes a row): head size 16 leaves the dq tile's 512 elements to 256 lanes */
    x.subgroup_min = x.subgroup_max = 64;
    CHECK(tt_gop_attention_sgmat_plan(0, 16, &x) && !tt_gop_attention_sgmat_plan(1, 16, &x) &&
          tt_gop_attention_sgmat_plan(1, 64, &x) && tt_gop_attention_sgmat_plan(2, 64, &x));
    x.max_invocations = 128; /* 4 subgroups of 64 do not fit */
    CHECK(!tt_gop_attention_sgmat_plan(0, 64, &x));
    x = nv; /* subgroup sizes that vary, or of 8: no row of lanes */
    x.subgroup_min = 16;
    CHECK(!tt_gop_attention_sgmat_plan(0, 64, &x));
    x.subgroup_min = x.subgroup_max = 8;
    CHECK(!tt_gop_attention_sgmat_plan(0, 64, &x));
    x = nv; /* no 16 x 16 x 16 configuration (another shape, or none) */
    x.sgmat_m = x.sgmat_n = x.sgmat_k = 8;
    CHECK(!tt_gop_attention_sgmat_plan(0, 64, &x));
    x.sgmat_m = x.sgmat_n = x.sgmat_k = 0;
    CHECK(!tt_gop_attention_sgmat_plan(2, 64, &x));
}

/* vec4 index of the scratch layout (attention_backward_dkdv's ds_store,
 * attention_backward_dq_ds's ld_ds) inside one slice: rows i..i+3, key j */
static size_t ds_idx(uint32_t g, uint32_t i, uint32_t j) {
    uint32_t qb = i / g;
    return ((size_t)qb * (qb + 1) / 2 + j / g) * (g * g / 4) + (j % g) * (g / 4) + (i % g) / 4;
}

/* the scratch layout as the kernels index it, replayed on the host for one
 * slice: every dk/dv store inside the slice's causal blocks (kb <= qb < nb,
 * so inside the scratch: the bounds check instruments only the reads), and
 * every entry key <= row < T that attention_backward_dq_ds reads stored */
TT_TEST(test_ds_layout) {
    static const int hss[5] = {4, 16, 64, 32, 17}, Ts[9] = {1, 3, 4, 17, 37, 64, 65, 130, 200};
    static const uint32_t lims[3] = {16384, 32768, 49152};
    for (int a = 0; a < 5; a++)
        for (int l = 0; l < 3; l++)
            for (int b = 0; b < 9; b++) {
                uint32_t T = (uint32_t)Ts[b];
                tt_attn_ds p;
                tt_attn_tile q, kv;
                int ok = tt_gop_attention_ds_plan(hss[a], 1, (int)T, 1, lims[l], 1024, 1ull << 32, &p) &&
                         tt_gop_attention_plan(1, hss[a], lims[l], 1024, &q) &&
                         tt_gop_attention_plan(2, hss[a], lims[l], 1024, &kv);
                CHECK(ok);
                if (!ok) continue;
                const uint32_t g = p.g, nb = (T + g - 1) / g;
                const size_t n4 = (size_t)p.elems / 4;
                unsigned char *written = calloc(n4 * 4, 1);
                int bad = 0, miss = 0;
                for (uint32_t j0 = 0; j0 < T; j0 += kv.br) {
                    uint32_t i_first = j0 / kv.bc * kv.bc, n_tiles = (T - i_first + kv.bc - 1) / kv.bc;
                    for (uint32_t t = 0; t < n_tiles; t++)
                        for (uint32_t e = 0; e < kv.br * (kv.bc / 4); e++) {
                            uint32_t j = j0 + e / (kv.bc / 4), i = i_first + t * kv.bc + 4 * (e % (kv.bc / 4));
                            size_t x = ds_idx(g, i, j);
                            if (j / g > i / g || i / g >= nb || x >= n4) bad++;
                            else memset(written + 4 * x, 1, 4);
                        }
                }
                for (uint32_t i0 = 0; i0 < T; i0 += q.br) {
                    uint32_t end = T < i0 + q.br ? T : i0 + q.br, n_tiles = (end - 1) / q.bc + 1;
                    for (uint32_t j = 0; j < n_tiles * q.bc; j++)
                        for (uint32_t t4 = 0; t4 < q.br / 4; t4++) {
                            uint32_t i = i0 + 4 * t4;
                            size_t x = ds_idx(g, i, j);
                            if (x >= n4) {
                                bad++;
                                continue;
                            }
                            for (uint32_t c = 0; c < 4; c++)
                                if (i + c < T && j <= i + c && !written[4 * x + c]) miss++;
                        }
                }
                CHECK_MSG(bad == 0 && miss == 0, "hs %d storage %u T %u (g %u): %d outside, %d unwritten", hss[a],
                          lims[l], T, g, bad, miss);
                free(written);
            }
}

/* ---- kernels vs float64 ----------------------------------------------------- */
/* 1 when the tiled kernels serve head size hs under O's limits */
static int tiled_usable(int hs) {
    tt_attn_tile t;
    for (int which = 0; which < 3; which++)
        if (!tt_gop_attention_plan(which, hs, INFO.max_wg_storage, INFO.max_invocations, &t)) return 0;
    return 1;
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

/* one forward + backward as O plans it (prefetch pf: 1 forced on, -1
 * forced off, 0 as planned) into freshly poisoned outputs, checked against
 * the float64 reference (and, rerun, a second run's bits); the 5 outputs
 * read back into out[] (malloc'd; NULL where nothing ran) */
/* OUT_PACKED: dq, dk, dv in one poisoned buffer at offsets 4, 4 + n4,
 * 4 + 2 n4 (n4: B*T*C rounded up to 4; the backend's layout when the q, k,
 * v weight gradients run as one batch), the gaps checked untouched */
static int OUT_PACKED;

static void attn_run(int B, int T, int NH, int hs, int rerun, int pf, tt_gref bq, tt_gref bk, tt_gref bv,
                     tt_gpu_buf bdy, const double *const ref[6], float *out[5]) {
    tt_status st;
    int C = NH * hs;
    size_t n = (size_t)B * T * C, ns = (size_t)B * NH * T, n4 = (n + 3) / 4 * 4;
    tt_gpu_buf by = tt_gtest_poisoned(n), bst = tt_gtest_poisoned(2 * ns), bdq, bdk, bdv, bo = 0;
    size_t offs[5] = {0, 0, 0, 0, 0};
    if (OUT_PACKED) {
        bo = tt_gtest_poisoned(4 + 3 * n4 + 4);
        bdq = bdk = bdv = bo;
        offs[2] = 4, offs[3] = 4 + n4, offs[4] = 4 + 2 * n4;
    } else
        bdq = tt_gtest_poisoned(n), bdk = tt_gtest_poisoned(n), bdv = tt_gtest_poisoned(n);
    tt_gpu_buf outs[5] = {by, bst, bdq, bdk, bdv};
    size_t lens[5] = {n, 2 * ns, n, n, n};
    const tt_gref gdq = {bdq, (uint32_t)offs[2]}, gdk = {bdk, (uint32_t)offs[3]}, gdv = {bdv, (uint32_t)offs[4]};
    for (int i = 0; i < 5; i++) out[i] = NULL;
    int tiled = tiled_usable(hs), ds = tt_gop_attention_ds_elems(&O, B, T, C, NH, 0) > 0;
    tt_attn_tile ft;
    /* the split dk/dv where it fits: forced, or planned (GPUs); the forward has one layout */
    int split[3] = {0, 0, 0};
    split[2] = tiled && (O.attn_split & TT_ATTN_SPLIT_FORCED ? O.attn_split & 1 : !INFO.is_cpu) &&
               tt_gop_attention_plan(2, hs, INFO.max_wg_storage, INFO.max_invocations, &ft) &&
               tt_gop_attention_split(2, hs, INFO.max_wg_storage, INFO.max_invocations, &ft);
    O.attn_pf = pf;
    tt_gsite s[4];
    int rc = tt_gop_attention_forward(&O, &s[0], tt_gtest_R(by), tt_gtest_R(bst), bq, bk, bv, B, T, C, NH, &st);
    tt_gtest_die_on(rc, &st, "attn fwd");
    if (!rc) {
        CHECK(strcmp(s[0].name, tiled ? "attention_forward" : "attention_rows_forward") == 0);
        CHECK_MSG((strstr(s[0].tag, " s2") != NULL) == split[0], "fwd tag '%s' (split %d)", s[0].tag, split[0]);
        rc = tt_gop_attention_backward(&O, &s[1], gdq, gdk, gdv, tt_gtest_R(bst), bq, bk, bv, tt_gtest_R(by), tt_gtest_R(bdy), B, T, C, NH, &st);
        tt_gtest_die_on(rc, &st, "attn bwd");
    }
    O.attn_pf = 0;
    if (!rc) {
        if (ds) /* D, dk/dv storing dS, dq from dS */
            CHECK(strcmp(s[1].name, "attention_backward_d") == 0 && strcmp(s[2].name, "attention_backward_dkdv") == 0 &&
                  strcmp(s[3].name, "attention_backward_dq_ds") == 0 && strstr(s[2].tag, " ds") &&
                  strstr(s[3].tag, " ds"));
        else
            CHECK(strcmp(s[1].name, tiled ? "attention_backward_dq" : "attention_rows_backward_dq") == 0 &&
                  strcmp(s[2].name, tiled ? "attention_backward_dkdv" : "attention_rows_backward_dkdv") == 0 &&
                  s[3].x == 0 && s[3].name == NULL);
        if (tiled)
            CHECK_MSG((strstr(s[2].tag, " s2") != NULL) == split[2], "dk/dv tag '%s' (split %d)", s[2].tag, split[2]);
        if (pf && tiled) { /* the profile tag says whether the kernel pipelines */
            int on = pf > 0;
            const tt_gsite *b0 = &s[ds ? 3 : 1], *b1 = &s[2];
            CHECK_MSG((strstr(s[0].tag, " pf") != NULL) == on, "fwd tag '%s' (PF %d)", s[0].tag, pf);
            CHECK_MSG((strstr(b0->tag, " pf") != NULL) == on && (strstr(b1->tag, " pf") != NULL) == on,
                      "bwd tags '%s' '%s' (PF %d)", b0->tag, b1->tag, pf);
        }
        tt_gtest_run(s, 4); /* backward on the GPU's own y and lse, as the backend runs it */
        cmp(by, 0, ref[0], n, "y", T, hs);
        cmp(bst, 0, ref[1], ns, "lse", T, hs);
        cmp(bst, ns, ref[2], ns, "D", T, hs);
        cmp(bdq, offs[2], ref[3], n, "dq", T, hs);
        cmp(bdk, offs[3], ref[4], n, "dk", T, hs);
        cmp(bdv, offs[4], ref[5], n, "dv", T, hs);
        for (int i = 0; i < 5; i++) {
            float *all = malloc((offs[i] + lens[i]) * sizeof(float));
            tt_gtest_down(outs[i], all, offs[i] + lens[i]);
            out[i] = malloc(lens[i] * sizeof(float));
            memcpy(out[i], all + offs[i], lens[i] * sizeof(float));
            free(all);
        }
        if (OUT_PACKED) { /* nothing written outside the three outputs */
            const size_t tot = 4 + 3 * n4 + 4;
            float *all = malloc(tot * sizeof *all);
            tt_gtest_down(bo, all, tot);
            for (size_t i = 0; i < tot; i++) {
                const int inside = (i >= 4 && i < 4 + n) || (i >= 4 + n4 && i < 4 + n4 + n) ||
                                   (i >= 4 + 2 * n4 && i < 4 + 2 * n4 + n);
                if (!inside) CHECK_MSG(isnan(all[i]), "packed outputs: element %zu outside dq, dk, dv written", i);
            }
            free(all);
        }
        if (rerun && !OUT_PACKED) {
            tt_gtest_run(s, 4);
            static const char *names[5] = {"y", "stats", "dq", "dk", "dv"};
            for (int i = 0; i < 5; i++) same_bits(outs[i], out[i], lens[i], names[i]);
        }
    }
    for (int i = 0; i < (OUT_PACKED ? 3 : 5); i++) tt_gpu_buffer_free(tt_gtest_gpu, outs[i]);
}

/* random inputs, the float64 reference, attn_run; pf: run with PF forced on
 * and off on the same inputs, each checked as above, and the outputs
 * compared bit for bit (pipelining moves loads, never arithmetic) */
static void attn_case_pf(int B, int T, int NH, int hs, int rerun, int pf) {
    tt_gtest_attn_prob P;
    tt_gtest_attn_make(&P, B, T, NH, hs);
    const size_t n = P.n, ns = P.ns;
    const tt_gref bq = tt_gtest_R(P.bq), bk = tt_gtest_R(P.bk), bv = tt_gtest_R(P.bv);
    const tt_gpu_buf bdy = P.bdy;
    const double *const ref[6] = {P.y, P.lse, P.D, P.dq, P.dk, P.dv};
    static const char *names[5] = {"y", "stats", "dq", "dk", "dv"};
    size_t lens[5] = {n, 2 * ns, n, n, n};
    float *got[2][5];
    attn_run(B, T, NH, hs, rerun, pf ? 1 : 0, bq, bk, bv, bdy, ref, got[0]);
    if (tt_gop_attention_ds_elems(&O, B, T, NH * hs, NH, 0)) {
        /* the dS-storing backward against the pair of kernels: the same bits */
        float *pair[5];
        O.attn_ds = -1;
        attn_run(B, T, NH, hs, 0, pf ? 1 : 0, bq, bk, bv, bdy, ref, pair);
        O.attn_ds = 0;
        DS_CASES++;
        for (int i = 0; i < 5; i++) {
            if (got[0][i] && pair[i])
                CHECK_MSG(memcmp(got[0][i], pair[i], lens[i] * sizeof(float)) == 0,
                          "%s: dS-storing backward not bit-identical to the pair (B%d T%d NH%d hs%d, storage %u)",
                          names[i], B, T, NH, hs, INFO.max_wg_storage);
            free(pair[i]);
        }
    }
    if (pf) {
        attn_run(B, T, NH, hs, 0, -1, bq, bk, bv, bdy, ref, got[1]);
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

/* q, k, v in one buffer at offsets (multiples of 4; the backend's batched
 * q, k, v projection output), then also dq, dk, dv in one buffer at
 * offsets (OUT_PACKED): within the float64 reference and bit-identical to
 * the same inputs and outputs in three buffers each */
static void attn_case_packed(int B, int T, int NH, int hs) {
    tt_gtest_attn_prob P;
    tt_gtest_attn_make(&P, B, T, NH, hs);
    const size_t n = P.n, ns = P.ns, n4 = (n + 3) / 4 * 4, off = 4;
    const double *const ref[6] = {P.y, P.lse, P.D, P.dq, P.dk, P.dv};
    static const char *names[5] = {"y", "stats", "dq", "dk", "dv"};
    size_t lens[5] = {n, 2 * ns, n, n, n};
    float *host = tt_gtest_rnd(off + 3 * n4, -1, 1); /* gaps hold junk the kernels must not read */
    tt_gtest_down(P.bq, host + off, n);
    tt_gtest_down(P.bk, host + off + n4, n);
    tt_gtest_down(P.bv, host + off + 2 * n4, n);
    tt_gpu_buf bqkv = tt_gtest_up(host, off + 3 * n4);
    tt_gref q = {bqkv, (uint32_t)off}, k = {bqkv, (uint32_t)(off + n4)}, v = {bqkv, (uint32_t)(off + 2 * n4)};
    float *got[4][5];
    attn_run(B, T, NH, hs, 0, 0, tt_gtest_R(P.bq), tt_gtest_R(P.bk), tt_gtest_R(P.bv), P.bdy, ref, got[0]);
    attn_run(B, T, NH, hs, 0, 0, q, k, v, P.bdy, ref, got[1]);
    OUT_PACKED = 1;
    attn_run(B, T, NH, hs, 0, 0, q, k, v, P.bdy, ref, got[2]);
    /* where the dS-storing backward runs, the pair of kernels too */
    const int nm = tt_gop_attention_ds_elems(&O, B, T, NH * hs, NH, 0) ? 4 : 3;
    if (nm == 4) {
        O.attn_ds = -1;
        attn_run(B, T, NH, hs, 0, 0, q, k, v, P.bdy, ref, got[3]);
        O.attn_ds = 0;
    }
    OUT_PACKED = 0;
    for (int i = 0; i < 5; i++) {
        for (int m = 1; m < nm; m++)
            if (got[0][i] && got[m][i])
                CHECK_MSG(memcmp(got[0][i], got[m][i], lens[i] * sizeof(float)) == 0,
                          "%s: q, k, v in one buffer%s not bit-identical to three (B%d T%d NH%d hs%d)", names[i],
                          m >= 2 ? " (and dq, dk, dv)" : "", B, T, NH, hs);
        for (int m = 0; m < nm; m++) free(got[m][i]);
    }
    tt_gpu_buffer_free(tt_gtest_gpu, bqkv);
    free(host);
    tt_gtest_attn_free(&P);
}

/* q, k, v at offsets: tiled with vec4 and scalar loads, the row kernels;
 * an offset not a multiple of 4 is refused */
TT_TEST(test_packed_qkv) {
    WORST = 0;
    attn_case_packed(2, 17, 2, 16);  /* tiled, vec4 */
    attn_case_packed(1, 9, 3, 6);    /* tiled, scalar loads */
    attn_case_packed(1, 17, 1, 130); /* row kernels */
    tt_gtest_attn_prob P;
    tt_gtest_attn_make(&P, 1, 4, 1, 8);
    tt_gsite s[1];
    tt_status st;
    tt_gpu_buf by = tt_gtest_poisoned(P.n), bst = tt_gtest_poisoned(2 * P.ns);
    tt_gref q = {P.bq, 2};
    CHECK(tt_gop_attention_forward(&O, s, tt_gtest_R(by), tt_gtest_R(bst), q, tt_gtest_R(P.bk), tt_gtest_R(P.bv), 1, 4,
                                   8, 1, &st) == TT_EINVAL);
    tt_gpu_buffer_free(tt_gtest_gpu, by), tt_gpu_buffer_free(tt_gtest_gpu, bst);
    tt_gtest_attn_free(&P);
    printf("  q, k, v in one buffer: worst rel err %.3g\n", WORST);
}

TT_TEST(test_adapter_limit) {
    /* B, T, NH, hs */
    static const int cases[][4] = {{1, 1, 1, 16}, {2, 3, 3, 8},    {1, 17, 2, 12}, {2, 65, 3, 16}, {1, 65, 1, 64},
                                   {1, 130, 2, 8}, {3, 17, 4, 12}, {1, 130, 1, 64}, {1, 33, 1, 17}, {2, 5, 2, 3}};
    WORST = 0;
    CHECK(tiled_usable(64) && tiled_usable(3) && tiled_usable(17));
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        attn_case(cases[i][0], cases[i][1], cases[i][2], cases[i][3], i == 3 || i == 7);
    printf("  storage %u B: worst rel err %.3g\n", INFO.max_wg_storage, WORST);
}

/* CPU adapters get run-time loop bounds (DYN, compile time on lavapipe),
 * GPUs constant ones and, for small per-thread shares, the prefetch: run
 * the other kind here too */
TT_TEST(test_other_bounds) {
    int cpu = INFO.is_cpu;
    INFO.is_cpu = !cpu;
    WORST = 0;
    attn_case(2, 65, 2, 6, 1);
    printf("  %s loop bounds: worst rel err %.3g\n", cpu ? "constant" : "run-time", WORST);
    INFO.is_cpu = cpu;
}

/* smaller storage limits select smaller (BR, BC) and more output blocks per
 * thread: 16 KiB is WebGPU's default (the browser); under 4 KiB head size 64
 * falls back to the row kernels */
TT_TEST(test_small_limits) {
    uint32_t full = INFO.max_wg_storage;
    static const uint32_t lims[2] = {16384, 4096};
    for (int l = 0; l < 2; l++) {
        if (full && lims[l] >= full) continue;
        INFO.max_wg_storage = lims[l];
        WORST = 0;
        if (l == 0) {
            CHECK(tiled_usable(64));
            attn_case(1, 130, 1, 64, 0);
            attn_case(2, 65, 3, 12, 0);
        } else {
            CHECK(!tiled_usable(64) && tiled_usable(17));
            attn_case(1, 33, 1, 64, 0); /* row kernels */
            attn_case(1, 65, 2, 17, 0);
        }
        attn_case(2, 33, 2, 3, 0);
        printf("  storage %u B: worst rel err %.3g\n", INFO.max_wg_storage, WORST);
    }
    INFO.max_wg_storage = full;
}

/* PF (software pipelining of the streamed tiles' global loads; attention.c
 * pf_mode): forced on and off on the same inputs, both within the float64
 * tolerance and bit-identical to each other, on awkward T (1, 3, 17, 65,
 * 130) and head sizes (3, 5, 17 per element; 16, 64): whole and partial
 * per-thread shares of a tile (NK, NL), and under 4 KiB the smallest tiles
 * (fewer threads than tile rows: two lse/D rows per thread in
 * attention_backward_dkdv). */
TT_TEST(test_pf) {
    static const int cases[][4] = {{1, 1, 1, 16}, {2, 3, 2, 3},   {1, 17, 2, 5},   {2, 65, 2, 16},
                                   {1, 130, 1, 64}, {1, 130, 2, 3}, {1, 65, 1, 5}, {1, 3, 1, 64}, {1, 33, 1, 17}};
    uint32_t full = INFO.max_wg_storage;
    /* its own seed: D at T = 1 is one 16-term fp32 dot product, whose
     * relative error can exceed 1e-5 for inputs with heavy cancellation */
    tt_gtest_set_seed(7300);
    WORST = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        attn_case_pf(cases[i][0], cases[i][1], cases[i][2], cases[i][3], i == 4, 1);
    printf("  PF on/off, storage %u B: worst rel err %.3g\n", INFO.max_wg_storage, WORST);
    if (!full || full > 4096) {
        INFO.max_wg_storage = 4096;
        WORST = 0;
        attn_case_pf(1, 65, 2, 6, 0, 1); /* attention_backward_dkdv 8x16: 8 threads, 16 rows */
        attn_case_pf(2, 33, 2, 3, 0, 1);
        printf("  PF on/off, storage %u B: worst rel err %.3g\n", INFO.max_wg_storage, WORST);
        INFO.max_wg_storage = full;
    }
}

/* the dS-storing backward against the float64 reference and bit for bit
 * against the pair of kernels (attn_case_pf): head sizes whose scale
 * 1/sqrt(hs) is a power of two (1, 4, 16, 64) and others (32: the presets
 * small ... mega; 24, 20, 3, 17: odd multiples and no multiple of 4), T not
 * a multiple of any tile, T = 1, several B*NH, the prefetch forced on and
 * off, WebGPU's default 16 KiB (other tiles, other scratch blocks), and
 * a binding limit below the scratch: the pair runs */
TT_TEST(test_ds) {
    static const int cases[][4] = {{1, 1, 1, 16}, {2, 3, 2, 4},  {1, 65, 2, 16}, {2, 130, 1, 64}, {1, 33, 3, 1},
                                   {2, 17, 2, 4}, {1, 97, 1, 64}, {2, 130, 2, 32}, {1, 65, 1, 32}, {2, 37, 2, 24},
                                   {1, 70, 1, 20}, {1, 33, 2, 3}, {2, 17, 1, 17}};
    uint32_t full = INFO.max_wg_storage;
    uint64_t bind = INFO.max_storage_binding;
    WORST = 0;
    int n0 = DS_CASES;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        attn_case_pf(cases[i][0], cases[i][1], cases[i][2], cases[i][3], i == 3, i % 2);
    if (!full || full > 16384) {
        INFO.max_wg_storage = 16384;
        attn_case_pf(1, 130, 1, 64, 0, 1);
        attn_case_pf(2, 37, 2, 16, 0, 0);
        attn_case_pf(1, 65, 2, 32, 0, 1);
        attn_case_pf(1, 37, 1, 20, 0, 0);
        INFO.max_wg_storage = full;
    }
    CHECK(DS_CASES - n0 >= 13);
    /* one slice of T = 65 at head size 64 needs 3 blocks of 64 x 64: 48 KiB */
    tt_attn_ds p;
    CHECK(tt_gop_attention_ds_plan(64, 1, 65, 1, INFO.max_wg_storage, INFO.max_invocations, bind, &p));
    INFO.max_storage_binding = p.elems * 4 - 4;
    CHECK(tt_gop_attention_ds_elems(&O, 1, 65, 64, 1, 0) == 0);
    attn_case(1, 65, 1, 64, 0); /* the pair (names checked in attn_run) */
    INFO.max_storage_binding = bind;
    /* WebGPU's default 8 storage buffers per stage: without dropout only */
    uint32_t sb = INFO.max_storage_per_stage;
    INFO.max_storage_per_stage = 8;
    CHECK(tt_gop_attention_ds_elems(&O, 1, 65, 64, 1, 0) > 0 && tt_gop_attention_ds_elems(&O, 1, 65, 64, 1, 1) == 0);
    INFO.max_storage_per_stage = 7;
    CHECK(tt_gop_attention_ds_elems(&O, 1, 65, 64, 1, 0) == 0);
    INFO.max_storage_per_stage = sb;
    printf("  adapter: %u storage buffers per stage\n", sb);
    printf("  dS-storing backward: %d cases bit-identical to the pair, worst rel err %.3g\n", DS_CASES - n0, WORST);
}

/* the split layout of dk/dv (two threads per 4x4 tile, attention.c
 * split_mode; GPUs only by default) forced on and off on the
 * same inputs: within the float64 tolerance and bit-identical to each
 * other, with run-time and constant loop bounds, the prefetch on and off,
 * the dS-storing backward and the pair: head size 64 (ob 2 -> 1 at 32
 * KiB, 4 -> 2 at 16 KiB), 37 (per-element loads, ob 2), T around the
 * tiles */
static void attn_case_split(int B, int T, int NH, int hs, int pf) {
    tt_gtest_attn_prob P;
    tt_gtest_attn_make(&P, B, T, NH, hs);
    const double *const ref[6] = {P.y, P.lse, P.D, P.dq, P.dk, P.dv};
    static const char *names[5] = {"y", "stats", "dq", "dk", "dv"};
    size_t lens[5] = {P.n, 2 * P.ns, P.n, P.n, P.n};
    float *got[2][5];
    for (int m = 0; m < 2; m++) {
        O.attn_split = TT_ATTN_SPLIT_FORCED | (m ? 0 : 1);
        attn_run(B, T, NH, hs, m == 0, pf, tt_gtest_R(P.bq), tt_gtest_R(P.bk), tt_gtest_R(P.bv), P.bdy, ref, got[m]);
    }
    O.attn_split = 0;
    for (int i = 0; i < 5; i++) {
        if (got[0][i] && got[1][i])
            CHECK_MSG(memcmp(got[0][i], got[1][i], lens[i] * sizeof(float)) == 0,
                      "%s: split / plain dk/dv not bit-identical (B%d T%d NH%d hs%d, storage %u)", names[i], B, T,
                      NH, hs, INFO.max_wg_storage);
        free(got[0][i]), free(got[1][i]);
    }
    tt_gtest_attn_free(&P);
}

TT_TEST(test_split) {
    uint32_t full = INFO.max_wg_storage;
    int cpu = INFO.is_cpu;
    WORST = 0;
    attn_case_split(1, 130, 1, 64, 0);
    attn_case_split(2, 33, 2, 37, 0);
    INFO.is_cpu = !cpu; /* the other kind of loop bounds, with the prefetch */
    attn_case_split(1, 65, 2, 64, 1);
    INFO.is_cpu = cpu;
    attn_case_split(1, 3, 1, 64, -1);
    O.attn_ds = -1; /* dk/dv without the dS store */
    attn_case_split(2, 37, 1, 64, 1);
    O.attn_ds = 0;
    if (!full || full > 16384) {
        INFO.max_wg_storage = 16384;
        attn_case_split(1, 37, 1, 64, 1);
        INFO.max_wg_storage = full;
    }
    printf("  split dk/dv layout: worst rel err %.3g\n", WORST);
}

/* the row kernels where no tile holds the head (more than 4 output blocks
 * per thread): tiles partly outside T, rows that own fewer keys than lanes,
 * a head size that is not a multiple of 4 */
TT_TEST(test_rows) {
    static const int cases[][4] = {{1, 1, 1, 132}, {2, 3, 2, 132}, {1, 17, 1, 130}, {2, 33, 1, 132}, {1, 9, 1, 256}};
    WORST = 0;
    CHECK(!tiled_usable(130) && !tiled_usable(132) && !tiled_usable(256));
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        attn_case(cases[i][0], cases[i][1], cases[i][2], cases[i][3], i == 3);
    printf("  row kernels: worst rel err %.3g\n", WORST);
}

int main(void) {
    tt_status st;
    RUN(test_plan);
    RUN(test_ds_plan);
    RUN(test_sgmat_plan);
    RUN(test_ds_layout);
    tt_gpu *G = tt_gtest_open();
    tt_gtest_set_seed(7000);
    if (tt_gops_init(&O, G, &st)) {
        fprintf(stderr, "gops init: %s\n", st.msg);
        return 1;
    }
    INFO = *tt_gpu_get_info(G);
    O.info = &INFO;
    printf("adapter: %s (%s), workgroup storage %u B, invocations %u\n", INFO.name, INFO.backend, INFO.max_wg_storage,
           INFO.max_invocations);
    RUN(test_adapter_limit);
    RUN(test_other_bounds);
    RUN(test_small_limits);
    RUN(test_pf);
    RUN(test_split);
    RUN(test_rows);
    RUN(test_packed_qkv);
    RUN(test_ds);
    /* the presets' head sizes (16, 32, 64) take the tiled kernels */
    for (int i = 0; i < tt_n_presets; i++) {
        const tt_model_config *c = &tt_presets[i].cfg;
        CHECK(tiled_usable(c->d_model / c->n_head));
    }
    tt_gops_free(&O);
    tt_gpu_close(G);
    return tt_test_summary();
}
