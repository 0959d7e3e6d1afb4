/* test_webgpu_ops.c — the WebGPU kernels of every op but attention
 * (test_webgpu_attention.c) against a float64 reference on random data:
 * matmul on each tile the plan can pick (32, 64, 128), split-K, epilogues,
 * the folded bias row, unrolled and looped k steps (bit-identical); the
 * bias gradient, LayerNorm, GELU, embedding, cross-entropy, AdamW. Shapes
 * include 1, 3, 17, 65 and sizes that are not multiples of the tiles or of
 * 4. Outputs are poisoned (NaN) before each kernel runs. The float64
 * reference is ref/ref64.c's ops (the test only lays out their inputs: the
 * transposes, the ones rows, the offsets into shared buffers).
 *
 * Tolerance: max |gpu - ref| / max |ref| <= 1e-5 (fp32 kernels; tighter where
 * noted). Skips (exit 0) without a WebGPU library/adapter unless
 * TT_REQUIRE_WEBGPU=1, which CI sets on the lavapipe machine. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webgpu/gpu_ops.h"
#include "gpu_test.h"
#include "ref64.h"
#include "rng.h"
#include "tt_test.h"

static tt_gops O;

#define TOL 1e-5

static double cmp(tt_gpu_buf b, const double *ref, size_t n, const char *what, double tol) {
    float *got = malloc((n ? n : 1) * sizeof *got);
    tt_gtest_down(b, got, n);
    double e = tt_test_max_rel_err(got, ref, n);
    if (!(e <= tol)) fprintf(stderr, "  %s: max rel err %.3g > %.3g\n", what, e, tol);
    CHECK(e <= tol);
    free(got);
    return e;
}

/* ---- matmul ---- */
/* The float64 result of one product as tt_gop_matmul_ex computes it,
 * ref (M,N) = op(A) op(B) + bias + R + C0: op(A) (M,K) is A (am,K), or A^T
 * with A (K,am) stored, over am = M - ones rows, then ones rows of 1.0;
 * op(B) (K,N) is B (K,N), or B^T with B (N,K) stored; bias (N), R (M,N),
 * C0 (M,N) each NULL when the product has none. ref_matmul_forward on the
 * inputs laid out plainly. */
static void mm_ref(double *ref, const float *A, const float *B, const float *bias, const float *R, const float *C0, int M,
                   int N, int K, int ta, int tb, int ones) {
    const int am = M - ones;
    double *a = ref_alloc((size_t)M * K), *b = ref_alloc((size_t)K * N), *db = bias ? ref_from_float(bias, N) : NULL;
    for (int m = 0; m < M; m++)
        for (int k = 0; k < K; k++)
            a[(size_t)m * K + k] = m >= am ? 1.0 : ta ? A[(size_t)k * am + m] : A[(size_t)m * K + k];
    for (int k = 0; k < K; k++)
        for (int n = 0; n < N; n++) b[(size_t)k * N + n] = tb ? B[(size_t)n * K + k] : B[(size_t)k * N + n];
    ref_matmul_forward(ref, a, b, db, M, K, N);
    for (size_t i = 0; i < (size_t)M * N; i++) ref[i] += (R ? R[i] : 0.0) + (C0 ? C0[i] : 0.0);
    free(a), free(b), free(db);
}

/* One product's inputs and float64 reference. ones > 0: op(A) stores only
 * M - ones rows; the last ones rows are 1.0 (tt_gop_matmul_ex: bias
 * gradients folded into weight gradients) */
typedef struct {
    int M, N, K, ta, tb, flags, ones;
    int group; /* planned as one of a group of this many products (0, 1: alone) */
    float *A, *B, *bias, *Rm, *C0;
    double *ref;
} mm_prob;

/* offsets into the C and bias buffers: odd by default (scalar epilogues);
 * multiples of 4 let the split-K reductions take vec4 elements */
static int MM_COFF = 7, MM_BOFF = 5;

static void mm_prob_make(mm_prob *p, int M, int N, int K, int ta, int tb, int flags, int ones) {
    const int am = M - ones;
    *p = (mm_prob){M, N, K, ta, tb, flags, ones, 1, NULL, NULL, NULL, NULL, NULL, NULL};
    p->A = tt_gtest_rnd((size_t)am * K, -1, 1), p->B = tt_gtest_rnd((size_t)K * N, -1, 1);
    p->bias = tt_gtest_rnd((size_t)N + MM_BOFF, -1, 1), p->Rm = tt_gtest_rnd((size_t)M * N, -1, 1),
    p->C0 = tt_gtest_rnd((size_t)M * N + MM_COFF, -1, 1);
    p->ref = ref_alloc((size_t)M * N);
    mm_ref(p->ref, p->A, p->B, (flags & 2) ? p->bias + MM_BOFF : NULL, (flags & 4) ? p->Rm : NULL,
           (flags & 1) ? p->C0 + MM_COFF : NULL, M, N, K, ta, tb, ones);
}

static void mm_prob_free(mm_prob *p) {
    free(p->A), free(p->B), free(p->bias), free(p->Rm), free(p->C0), free(p->ref);
}

/* Run p under O's current settings (tile, split-K, unroll) on fresh
 * buffers (C poisoned unless accumulating), check it against the reference
 * and the untouched prefix of C; returns the whole C buffer (M*N + MM_COFF
 * floats, malloc'd). */
static float *mm_prob_run(const mm_prob *p) {
    tt_status st;
    const int M = p->M, N = p->N, K = p->K, am = M - p->ones, flags = p->flags;
    tt_gpu_buf bA = tt_gtest_up(p->A, (size_t)am * K), bB = tt_gtest_up(p->B, (size_t)K * N),
               bbias = tt_gtest_up(p->bias, (size_t)N + MM_BOFF), bR = tt_gtest_up(p->Rm, (size_t)M * N);
    tt_gpu_buf bC = (flags & 1) ? tt_gtest_up(p->C0, (size_t)M * N + MM_COFF) : tt_gtest_poisoned((size_t)M * N + MM_COFF);
    tt_gsite s[TT_GOP_MM_SITES];
    tt_gref C = {bC, (uint32_t)MM_COFF}, bi = {bbias, (uint32_t)MM_BOFF}, rr = tt_gtest_R(bR);
    tt_gtest_die_on(tt_gop_matmul_group(&O, s, p->group > 1 ? p->group : 1, C, tt_gtest_R(bA), tt_gtest_R(bB),
                                        (flags & 2) ? &bi : NULL, (flags & 4) ? &rr : NULL, M, N, K, p->ta, p->tb,
                                        flags & 1, p->ones, &st),
                    &st, "matmul plan");
    tt_gtest_run(s, TT_GOP_MM_SITES);
    float *got = malloc(((size_t)M * N + MM_COFF) * sizeof *got);
    tt_gtest_down(bC, got, (size_t)M * N + MM_COFF);
    double e = tt_test_max_rel_err(got + MM_COFF, p->ref, (size_t)M * N);
    if (!(e <= TOL)) {
        fprintf(stderr, "  matmul tile %d split %d unroll %d M%d N%d K%d ta%d tb%d flags%d ones%d: rel err %.3g\n",
                O.tile, O.splitk, O.unroll, M, N, K, p->ta, p->tb, flags, p->ones, e);
    }
    CHECK(e <= TOL);
    /* the prefix before c_off must be untouched */
    if (flags & 1)
        for (int i = 0; i < MM_COFF; i++) CHECK(got[i] == p->C0[i]);
    return got;
}

static void matmul_case_ex(int M, int N, int K, int ta, int tb, int flags, int ones) {
    mm_prob p;
    mm_prob_make(&p, M, N, K, ta, tb, flags, ones);
    free(mm_prob_run(&p));
    mm_prob_free(&p);
}

static void matmul_case(int M, int N, int K, int ta, int tb, int flags) { matmul_case_ex(M, N, K, ta, tb, flags, 0); }

TT_TEST(test_matmul_shapes) {
    /* odd shapes use scalar loads; all-multiples-of-4 shapes the vec4 path
     * (partial tiles included: 68 = 64 + 4, 36 < 64, 132 = 8 k steps + 4) */
    static const int shapes[][3] = {{1, 1, 1},   {3, 17, 65},  {17, 3, 1}, {65, 65, 17},
                                    {17, 65, 3}, {130, 67, 33}, {4, 8, 4}, {68, 36, 132}};
    /* 64x64 tiles (4x4 per thread) in all four transpose variants; 128x128
     * (8x8 per thread) in NN and TT only: each variant is a separate pipeline
     * and lavapipe needs ~15 s of LLVM time to compile one of the big ones */
    for (int tile = 32; tile <= 128; tile *= 2) {
        O.tile = tile;
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
            for (int t = 0; t < 4; t += tile == 128 ? 3 : 1)
                matmul_case(shapes[i][0], shapes[i][1], shapes[i][2], t & 1, t >> 1, (int)((i + t) % 8));
    }
    O.tile = 0;
}

/* bias gradient folded into the weight gradient: a ones row (or a few) of
 * op(A), both layouts of A, vec4 and scalar loads, with and without split-K */
TT_TEST(test_matmul_ones_rows) {
    for (int tile = 32; tile <= 64; tile *= 2) {
        O.tile = tile;
        for (int sp = 0; sp <= 2; sp += 2) {
            O.splitk = sp;
            matmul_case_ex(17, 65, 65, 1, 0, 1, 1);  /* am 16: vec4 loads of A^T */
            matmul_case_ex(33, 36, 132, 1, 0, 1, 1); /* am 32: the ones row alone in a tile of 32 */
            matmul_case_ex(9, 12, 40, 1, 0, 1, 3);   /* scalar loads, 3 ones rows */
            matmul_case_ex(21, 8, 36, 0, 0, 1, 1);   /* A not transposed */
        }
    }
    O.splitk = 0;
    O.tile = 0;
}

/* the launch plan is a pure function of the shape: check its promises on
 * the presets' shapes (enough workgroups, largest tile, bounded split-K) */
TT_TEST(test_matmul_plan) {
    tt_gops P = O;
    P.tile = 0, P.splitk = 0;
    static const int shp[][4] = {{2048, 256, 256, 0},  {2048, 1024, 256, 0}, {257, 256, 2048, 1}, {257, 1024, 2048, 1},
                                 {769, 768, 8192, 1},  {8192, 3072, 768, 0}, {1025, 256, 2048, 1}, {49, 48, 512, 1},
                                 {512, 48, 48, 0},     {256, 768, 8192, 1},  {1024, 384, 384, 0},  {5, 7, 16, 1},
                                 /* big products (the scratch cap, TT_MM_SCRATCH_FLOATS, must hold) */
                                 {4096, 4096, 8192, 1}, {1024, 4096, 65536, 1},
                                 /* the shakespeare_char shape's weight gradients (16384 tokens) */
                                 {385, 384, 16384, 1}, {1537, 384, 16384, 1}, {256, 384, 16384, 1}};
    for (size_t i = 0; i < 2 * (sizeof shp / sizeof shp[0]); i++) {
        /* each shape alone, then as one of a group of 3 (the q, k, v batch) */
        const size_t j = i % (sizeof shp / sizeof shp[0]);
        const int g = i < sizeof shp / sizeof shp[0] ? 1 : 3;
        int M = shp[j][0], N = shp[j][1], K = shp[j][2], sp = shp[j][3], tile;
        uint32_t splits, kchunk;
        tt_gop_matmul_plan(&P, g, M, N, K, sp, &tile, &splits, &kchunk);
        uint64_t wgs = (uint64_t)g * ((M + tile - 1) / tile) * ((N + tile - 1) / tile);
        printf("  plan %dx%dx%d x%d%s: tile %d, %u slices of %u, %llu workgroups\n", M, N, K, g, sp ? " (split ok)" : "",
               tile, splits, kchunk, (unsigned long long)(wgs * splits));
        CHECK(tile == 32 || tile == 64 || tile == 128);
        CHECK(splits >= 1 && splits <= 16 && (uint64_t)kchunk * splits >= (uint64_t)K &&
              (uint64_t)kchunk * (splits - 1) < (uint64_t)K);
        if (!sp) CHECK(splits == 1);
        CHECK((uint64_t)splits * M * N <= TT_MM_SCRATCH_FLOATS || splits == 1);
        if (splits > 1) CHECK(kchunk >= TT_MM_KMIN && kchunk % 16 == 0);
        uint64_t maxs = sp ? (uint64_t)K / TT_MM_KMIN : 1;
        if (maxs > 16) maxs = 16;
        if (maxs > TT_MM_SCRATCH_FLOATS / ((uint64_t)M * N)) maxs = TT_MM_SCRATCH_FLOATS / ((uint64_t)M * N);
        if (maxs < 2) maxs = 1;
        CHECK(splits <= maxs);
        /* a long chain: slices of at most TT_MM_KSLICE k, unless capped */
        if (sp && (uint32_t)K >= TT_MM_LONGK) CHECK(kchunk <= TT_MM_KSLICE || splits == maxs);
        /* either enough workgroups, or the smallest tile / most slices */
        CHECK(wgs * splits >= TT_MM_TARGET || tile == 32 || splits == maxs);
        if (tile < 128) { /* the next larger tile could not reach the target, even split */
            uint64_t big = (uint64_t)g * ((M + 2 * tile - 1) / (2 * tile)) * ((N + 2 * tile - 1) / (2 * tile));
            CHECK(big * maxs < TT_MM_TARGET);
        }
        int t2;
        uint32_t s2, k2;
        tt_gop_matmul_plan(&P, g, M, N, K, sp, &t2, &s2, &k2); /* deterministic */
        CHECK(t2 == tile && s2 == splits && k2 == kchunk);
    }
}

TT_TEST(test_matmul_epilogues) {
    O.tile = 64;
    for (int f = 0; f < 8; f++) matmul_case(33, 70, 20, f & 1, (f >> 1) & 1, f);
    for (int f = 0; f < 8; f++) matmul_case(36, 72, 20, f & 1, (f >> 1) & 1, f);
    O.tile = 0;
}

/* split-K (weight gradients: C += A^T B): K cut into z slices whose partial
 * products are summed by a second site */
TT_TEST(test_matmul_splitk) {
    O.tile = 64;
    for (int sp = 2; sp <= 3; sp++) {
        O.splitk = sp;
        matmul_case(17, 65, 65, 1, 0, 1);
        matmul_case(68, 36, 132, 1, 0, 1);
        matmul_case(20, 12, 260, 0, 0, 1);
        matmul_case(5, 7, 16, 1, 0, 1); /* one k step: a single slice */
        /* with an epilogue (the slices are added by splitk_reduce, which
         * applies bias, R and accumulate in the kernel's order) */
        matmul_case(33, 70, 100, 0, 1, 6);
        matmul_case(36, 72, 96, 1, 1, 7);
        matmul_case(17, 9, 50, 0, 0, 0);
        matmul_case(20, 12, 260, 0, 0, 3);
        /* 4-aligned N and offsets: the reductions add vec4 elements */
        MM_COFF = 8, MM_BOFF = 4;
        matmul_case(36, 72, 96, 1, 1, 7);
        matmul_case(33, 20, 100, 0, 1, 6);
        matmul_case(20, 12, 260, 0, 0, 3);
        matmul_case(68, 36, 132, 1, 0, 1);
        MM_COFF = 7, MM_BOFF = 5;
    }
    O.splitk = 0;
    O.tile = 0;
}

/* the kernel configuration each tile gets (a pure function): the 128 tile
 * 8x8 outputs per thread, k step 16 in one stage, or with B transposed k
 * step 8 in two stages; the 64 and 32 tiles 4x4 in two swizzled stages; all
 * fit WebGPU's 16 KiB of workgroup memory */
TT_TEST(test_matmul_kcfg) {
    static const uint32_t lims[3] = {0, 16384, 49152};
    for (int l = 0; l < 3; l++)
        for (int t = 32; t <= 128; t *= 2)
            for (int tb = 0; tb < 2; tb++) {
                tt_mm_kcfg k;
                tt_gop_mm_kcfg(lims[l], t, tb, &k);
                CHECK(k.bytes <= 16384);
                if (t == 128)
                    CHECK(k.tm == 8 && k.bk == (tb ? 8 : 16) && k.stages == (tb ? 2 : 1) && k.swz == 0 &&
                          k.threads == 256 && k.bytes == 16384);
                else CHECK(k.tm == 4 && k.bk == 16 && k.stages == 2 && k.swz == 1 && k.threads == (t == 32 ? 64u : 256u));
            }
    tt_mm_kcfg k;
    tt_gop_mm_kcfg(8192, 64, 0, &k); /* below WebGPU's minimum: one stage */
    CHECK(k.stages == 1 && k.bytes == 8192);
}

/* //!unroll (gpu_ops.c): the pure expansion, both ways, and its refusals */
TT_TEST(test_wgsl_unroll) {
    const char *pre = "const BK: u32 = 3u;\nconst Z: u32 = 0u;\nconst F: f32 = 2.0;\n";
    const char *src = "head\n    //!unroll kk BK\n    {\n        x[kk] = 1.0; // } a brace in a comment\n        "
                      "if (c) { y += 1.0; }\n    }\ntail\n";
    char *out = NULL, msg[160];
    CHECK(tt_wgsl_unroll(src, pre, 1, &out, msg, sizeof msg) == 0 && out);
    if (out) {
        CHECK(strncmp(out, "head\n    ", 9) == 0 && strstr(out, "}\ntail\n") != NULL);
        CHECK(strstr(out, "const kk = 0u;") && strstr(out, "const kk = 1u;") && strstr(out, "const kk = 2u;"));
        CHECK(!strstr(out, "const kk = 3u;") && !strstr(out, "//!unroll") && !strstr(out, "for ("));
        int n = 0; /* each copy keeps the whole block, its inner braces and comment included */
        for (const char *p = out; (p = strstr(p, "if (c) { y += 1.0; }")); p++) n++;
        CHECK(n == 3);
        free(out);
    }
    out = NULL;
    CHECK(tt_wgsl_unroll(src, pre, 0, &out, msg, sizeof msg) == 0 && out);
    if (out) {
        CHECK(strstr(out, "for (var kk = 0u; kk < 3u; kk++) {") && !strstr(out, "const kk"));
        CHECK(strstr(out, "}\ntail\n") != NULL);
        free(out);
    }
    out = (char *)1;
    CHECK(tt_wgsl_unroll("no directive here", pre, 1, &out, msg, sizeof msg) == 0 && out == NULL);
    /* the longest name, an empty body, nothing around: the loop header is longer than the
     * whole source (the first sizing let it overrun: found in review, fix checked under ASan) */
    const char *lv = "//!unroll aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa BK\n{}";
    for (int u = 0; u <= 1; u++) {
        out = NULL;
        CHECK(tt_wgsl_unroll(lv, pre, u, &out, msg, sizeof msg) == 0 && out);
        if (out) {
            CHECK(strlen(out) == (u ? 3 * strlen("{ const aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa = 0u;}") + 2
                                    : strlen("for (var aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa = 0u; aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa "
                                             "< 3u; aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa++) {}")));
            free(out);
        }
    }
    /* nested blocks (the subgroup-matrix attention's d x n loops): every copy of the inner
     * block inside every copy of the outer one, both ways */
    const char *nest = "//!unroll n BK\n{\n    //!unroll d BK\n    {\n        s[n] += q[d] * k[n][d];\n    }\n}\n";
    for (int u = 0; u <= 1; u++) {
        out = NULL;
        CHECK(tt_wgsl_unroll(nest, pre, u, &out, msg, sizeof msg) == 0 && out && !strstr(out, "//!unroll"));
        if (out && u) {
            int lets_n = 0, lets_d = 0, uses = 0;
            for (const char *p = out; (p = strstr(p, "const n = ")); p++) lets_n++;
            for (const char *p = out; (p = strstr(p, "const d = ")); p++) lets_d++;
            for (const char *p = out; (p = strstr(p, "s[n] += q[d] * k[n][d];")); p++) uses++;
            CHECK(lets_n == 3 && lets_d == 9 && uses == 9);
        }
        if (out && !u) CHECK(strstr(out, "for (var n = 0u; n < 3u; n++) {") && strstr(out, "for (var d = 0u; d < 3u; d++) {"));
        free(out);
    }
    const char *deep = "//!unroll a BK\n{\n//!unroll b BK\n{\n//!unroll c BK\n{\n//!unroll d BK\n{\n//!unroll e BK\n{ x = 1; }\n}\n}\n}\n}\n";
    out = NULL;
    CHECK(tt_wgsl_unroll(deep, pre, 1, &out, msg, sizeof msg) == -1 && out == NULL && strstr(msg, "deeper than 4"));
    static const char *bad[][2] = {
        {"//!unroll kk NOPE\n{ }\n", "not a u32 constant"}, /* not in the prefix */
        {"//!unroll kk Z\n{ }\n", "not a u32 constant"},    /* 0 copies */
        {"//!unroll kk F\n{ }\n", "not a u32 constant"},    /* not a u32 */
        {"//!unroll kk BK\nx = 1;\n", "not followed by"},
        {"//!unroll kk BK\n{ { }\n", "unbalanced"},
        {"//!unroll kk\n{ }\n", "bad //!unroll line"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        out = NULL;
        int rc = tt_wgsl_unroll(bad[i][0], pre, 1, &out, msg, sizeof msg);
        CHECK(rc == -1 && out == NULL && strstr(msg, bad[i][1]) != NULL);
        if (rc != -1 || !strstr(msg, bad[i][1])) fprintf(stderr, "  case %zu: rc %d msg '%s'\n", i, rc, msg);
    }
}

/* A batch of n products (tt_gop_matmul_batch: the q, k, v projections):
 * A shared, B_p and bias_p in one buffer at boff + p*bstride (each bias
 * right after its matrix, as in the parameter layout), C_p and R_p
 * following each other. Each C_p must be bit-identical (memcmp) to the same
 * product run alone as a member of the group (tt_gop_matmul_group), and
 * within TOL of float64; the batch writes
 * nothing outside its outputs; its tag names the batch. */
static void batch_case(int tile, int splitk, int n, int M, int N, int K, int ta, int tb, int flags, int ones, int gap) {
    tt_status st;
    const int am = M - ones;
    const size_t MN = (size_t)M * N, unit = (size_t)K * N + N, bstride = unit + (size_t)gap, boff = 4;
    const size_t nP = boff + (size_t)(n - 1) * bstride + unit;
    O.tile = tile, O.splitk = splitk;
    float *A = tt_gtest_rnd((size_t)am * K, -1, 1), *P = tt_gtest_rnd(nP, -1, 1),
          *Rm = tt_gtest_rnd((size_t)n * MN, -1, 1), *C0 = tt_gtest_rnd((size_t)n * MN + 2 * MM_COFF, -1, 1);
    tt_gpu_buf bA = tt_gtest_up(A, (size_t)am * K), bP = tt_gtest_up(P, nP), bR = tt_gtest_up(Rm, (size_t)n * MN);
    tt_gpu_buf bC = (flags & 1) ? tt_gtest_up(C0, (size_t)n * MN + 2 * MM_COFF)
                                : tt_gtest_poisoned((size_t)n * MN + 2 * MM_COFF);
    tt_gsite s[TT_GOP_MM_SITES];
    tt_gref C = {bC, (uint32_t)MM_COFF}, B = {bP, (uint32_t)boff}, bias = {bP, (uint32_t)(boff + (size_t)K * N)},
            rr = tt_gtest_R(bR);
    tt_gtest_die_on(tt_gop_matmul_batch(&O, s, n, (uint32_t)bstride, C, tt_gtest_R(bA), B, (flags & 2) ? &bias : NULL,
                                        (flags & 4) ? &rr : NULL, M, N, K, ta, tb, flags & 1, ones, &st),
                    &st, "matmul batch plan");
    char want[16];
    snprintf(want, sizeof want, " x%d ", n);
    CHECK_MSG(strstr(s[TT_GOP_MM_PRODUCT].tag, want) != NULL, "batch tag '%s'", s[TT_GOP_MM_PRODUCT].tag);
    CHECK(s[TT_GOP_MM_PRODUCT].flops == 2.0 * n * M * N * K);
    tt_gtest_run(s, TT_GOP_MM_SITES);
    float *got = malloc(((size_t)n * MN + 2 * MM_COFF) * sizeof *got);
    tt_gtest_down(bC, got, (size_t)n * MN + 2 * MM_COFF);
    for (int i = 0; i < MM_COFF; i++) { /* nothing written before or after the outputs */
        CHECK((flags & 1) ? got[i] == C0[i] : isnan(got[i]));
        const size_t j = MM_COFF + (size_t)n * MN + (size_t)i;
        CHECK((flags & 1) ? got[j] == C0[j] : isnan(got[j]));
    }
    for (int p = 0; p < n; p++) {
        /* product p alone: its own buffers, the same values */
        mm_prob q = {M, N, K, ta, tb, flags, ones, n, NULL, NULL, NULL, NULL, NULL, NULL};
        const float *Bp = P + boff + (size_t)p * bstride;
        float *one = malloc((MN + MM_COFF) * sizeof *one);
        q.A = A, q.B = (float *)Bp, q.Rm = Rm + (size_t)p * MN;
        q.bias = malloc(((size_t)N + MM_BOFF) * sizeof *q.bias);
        q.C0 = malloc((MN + MM_COFF) * sizeof *q.C0);
        for (int i = 0; i < MM_BOFF; i++) q.bias[i] = 0;
        memcpy(q.bias + MM_BOFF, Bp + (size_t)K * N, (size_t)N * sizeof *q.bias);
        for (int i = 0; i < MM_COFF; i++) q.C0[i] = 0;
        memcpy(q.C0 + MM_COFF, C0 + MM_COFF + (size_t)p * MN, MN * sizeof *q.C0);
        q.ref = ref_alloc(MN);
        mm_ref(q.ref, A, Bp, (flags & 2) ? Bp + (size_t)K * N : NULL, (flags & 4) ? q.Rm : NULL,
               (flags & 1) ? q.C0 + MM_COFF : NULL, M, N, K, ta, tb, ones);
        double e = tt_test_max_rel_err(got + MM_COFF + (size_t)p * MN, q.ref, MN);
        CHECK_MSG(e <= TOL, "batch tile %d split %d product %d of %d M%d N%d K%d ta%d tb%d flags%d ones%d: rel err %.3g",
                  tile, splitk, p, n, M, N, K, ta, tb, flags, ones, e);
        float *alone = mm_prob_run(&q);
        memcpy(one, alone, (MN + MM_COFF) * sizeof *one);
        CHECK_MSG(memcmp(one + MM_COFF, got + MM_COFF + (size_t)p * MN, MN * sizeof *one) == 0,
                  "batch tile %d split %d product %d of %d M%d N%d K%d ta%d tb%d flags%d ones%d: not bit-identical "
                  "to the product alone",
                  tile, splitk, p, n, M, N, K, ta, tb, flags, ones);
        free(alone), free(one), free(q.bias), free(q.C0), free(q.ref);
    }
    tt_gpu_buffer_free(tt_gtest_gpu, bA), tt_gpu_buffer_free(tt_gtest_gpu, bP), tt_gpu_buffer_free(tt_gtest_gpu, bR);
    tt_gpu_buffer_free(tt_gtest_gpu, bC);
    free(A), free(P), free(Rm), free(C0), free(got);
    O.tile = 0, O.splitk = 0;
}

TT_TEST(test_matmul_batch) {
    /* the q, k, v projection's layout (NN, bias, vec4 stride), unsplit and
     * split (the epilogue in splitk_reduce) */
    batch_case(64, 0, 3, 68, 36, 40, 0, 0, 2, 0, 0);
    batch_case(64, 2, 3, 68, 36, 40, 0, 0, 2, 0, 0);
    batch_case(32, 3, 3, 40, 36, 100, 0, 0, 6, 0, 4); /* + R, 3 slices */
    /* accumulating weight-gradient layout (TA, ones row, colsum_final), odd strides (scalar loads) */
    batch_case(32, 2, 3, 37, 20, 48, 1, 0, 1, 1, 3);
    batch_case(32, 0, 2, 17, 65, 33, 0, 1, 7, 0, 1);
    /* the planned tile and split of a q, k, v-like shape */
    batch_case(0, 0, 3, 96, 64, 64, 0, 0, 2, 0, 0);
    /* a shape the group plans with fewer slices than a lone product (64
     * tile: 4 slices alone, 2 as one of 3): the group's plan either way */
    {
        tt_gops P = O;
        P.tile = 0, P.splitk = 0;
        int t1, t3;
        uint32_t s1, s3, k1, k3;
        tt_gop_matmul_plan(&P, 1, 1024, 512, 512, 1, &t1, &s1, &k1);
        tt_gop_matmul_plan(&P, 3, 1024, 512, 512, 1, &t3, &s3, &k3);
        CHECK_MSG(s3 > 1 && s3 < s1, "group plan %d/%u, lone plan %d/%u", t3, s3, t1, s1);
        batch_case(0, 0, 3, 1024, 512, 512, 0, 0, 2, 0, 0);
    }
}

/* The unrolled matmul (the GPU default) against the loop (lavapipe's
 * default: LLVM needs twice as long over the unrolled tiles): bit-identical
 * C buffers (memcmp) and the float64 reference, each tile, each of the
 * three layouts the model uses, vec4 and scalar loads, a split. */
static void unroll_case(int tile, int splitk, int M, int N, int K, int ta, int tb, int flags, int ones) {
    mm_prob p;
    mm_prob_make(&p, M, N, K, ta, tb, flags, ones);
    const int saved = O.unroll;
    O.tile = tile, O.splitk = splitk, O.unroll = 0;
    float *ref = mm_prob_run(&p);
    O.unroll = 1;
    float *got = mm_prob_run(&p);
    int same = memcmp(ref, got, ((size_t)M * N + MM_COFF) * sizeof *got) == 0;
    if (!same)
        fprintf(stderr, "  unrolled tile %d split %d M%d N%d K%d ta%d tb%d flags%d: not bit-identical to the loop\n",
                tile, splitk, M, N, K, ta, tb, flags);
    CHECK(same);
    O.unroll = saved, O.tile = 0, O.splitk = 0;
    free(ref), free(got);
    mm_prob_free(&p);
}

TT_TEST(test_matmul_unroll) {
    /* the unrolled block holds only the shared-memory reads and fmas, which
     * depend on the tile alone (the layouts differ in the loads and stores
     * around it): each tile once, each layout once */
    unroll_case(128, 1, 132, 68, 100, 0, 0, 2, 0); /* NN, vec4, partial k tile, bias */
    unroll_case(32, 1, 67, 130, 75, 0, 1, 5, 0);   /* TB, scalar loads, accumulate + R */
    unroll_case(64, 3, 37, 72, 132, 1, 0, 1, 1);   /* TA with the ones row, 3 slices */
}

/* ---- layernorm ---- */
static void ln_case(int rows, int C) {
    tt_status st;
    size_t n = (size_t)rows * C;
    float *x = tt_gtest_rnd(n, -2, 2), *wb = tt_gtest_rnd(2 * (size_t)C + 3, -1.5f, 1.5f), *dy = tt_gtest_rnd(n, -1, 1),
          *dx0 = tt_gtest_rnd(n, -1, 1);
    float *g0 = tt_gtest_rnd(2 * (size_t)C + 3, -1, 1);
    const int woff = 3; /* w at 3, b at 3 + C */
    /* the kernels accumulate: dx = dx0 + dinp, [dw; db] = g0 + [dweight; dbias] */
    double *X = ref_from_float(x, n), *W = ref_from_float(wb + woff, (size_t)C), *B = ref_from_float(wb + woff + C, (size_t)C),
           *DY = ref_from_float(dy, n);
    double *out = ref_alloc(n), *st2 = ref_alloc(2 * (size_t)rows), *dx = ref_alloc(n), *dwb = ref_alloc(2 * (size_t)C);
    ref_layernorm_forward(out, st2, X, W, B, rows, C, 1e-5);
    ref_layernorm_backward(dx, dwb, dwb + C, DY, X, W, rows, C, 1e-5);
    for (size_t i = 0; i < n; i++) dx[i] += dx0[i];
    for (int c = 0; c < 2 * C; c++) dwb[c] += g0[woff + c];
    /* fp32 rounding of dx is bounded per element by the size of the terms
     * that cancel in it (ref_layernorm_backward_scale), not by dx */
    double *dx_scale = ref_alloc(n);
    ref_layernorm_backward_scale(dx_scale, DY, X, W, rows, C, 1e-5);
    for (size_t i = 0; i < n; i++) dx_scale[i] += fabs(dx0[i]);
    free(X), free(W), free(B), free(DY);
    tt_gpu_buf bx = tt_gtest_up(x, n), bwb = tt_gtest_up(wb, 2 * (size_t)C + 3), bout = tt_gtest_poisoned(n),
               bst = tt_gtest_poisoned(2 * (size_t)rows);
    tt_gpu_buf bdy = tt_gtest_up(dy, n), bdx = tt_gtest_up(dx0, n), bg = tt_gtest_up(g0, 2 * (size_t)C + 3);
    tt_gpu_buf part = tt_gtest_poisoned(tt_gop_colsum_part_elems(rows, 2 * C));
    tt_gsite s[4];
    tt_gref w = {bwb, (uint32_t)woff}, b = {bwb, (uint32_t)(woff + C)}, gw = {bg, (uint32_t)woff};
    tt_gtest_die_on(
        tt_gop_layernorm_forward(&O, &s[0], tt_gtest_R(bout), tt_gtest_R(bst), tt_gtest_R(bx), w, b, rows, C, 1e-5f, &st), &st,
        "ln plan");
    tt_gtest_die_on(tt_gop_layernorm_backward(&O, &s[1], tt_gtest_R(bdx), gw, tt_gtest_R(bdy), tt_gtest_R(bx), w,
                                              tt_gtest_R(bst), tt_gtest_R(part), rows, C, 1, &st),
                    &st, "ln bwd plan");
    tt_gtest_run(s, 4);
    cmp(bout, out, n, "ln out", TOL);
    cmp(bst, st2, 2 * (size_t)rows, "ln stats", TOL);
    {
        /* per element: 2^-16 (~500 fp32 ulps) of its own scale, far below any wrong term */
        float *got = malloc(n * sizeof *got);
        tt_gtest_down(bdx, got, n);
        double worst = 0;
        for (size_t i = 0; i < n; i++) {
            double e = fabs((double)got[i] - dx[i]) / (dx_scale[i] + 1e-30);
            if (!(e <= worst)) worst = e; /* NaN propagates */
        }
        if (!(worst <= 0x1p-16)) fprintf(stderr, "  ln dx (%d x %d): max error %.3g of its term scale > 2^-16\n", rows, C, worst);
        CHECK(worst <= 0x1p-16);
        free(got);
    }
    float *gg = malloc((2 * (size_t)C + 3) * sizeof *gg);
    tt_gtest_down(bg, gg, 2 * (size_t)C + 3);
    CHECK(tt_test_max_rel_err(gg + woff, dwb, 2 * (size_t)C) <= TOL);
    for (int i = 0; i < woff; i++) CHECK(gg[i] == g0[i]);
    free(gg);
    free(x), free(wb), free(dy), free(dx0), free(g0), free(out), free(st2), free(dx), free(dwb), free(dx_scale);
}

TT_TEST(test_layernorm) {
    static const int rows[] = {1, 3, 17, 65, 700};
    static const int cs[] = {1, 3, 17, 65, 130};
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++)
            if (!(rows[i] == 700 && cs[j] > 17)) ln_case(rows[i], cs[j]);
}

/* ---- bias gradient (column sums) ---- */
TT_TEST(test_bias_backward) {
    static const int shapes[][2] = {{1, 1}, {3, 17}, {65, 3}, {17, 65}, {700, 33}, {9000, 5}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        tt_status st;
        int rows = shapes[i][0], N = shapes[i][1];
        float *d = tt_gtest_rnd((size_t)rows * N, -1, 1), *g0 = tt_gtest_rnd((size_t)N + 2, -1, 1);
        /* the kernel accumulates: ref = g0 + dbias */
        double *D = ref_from_float(d, (size_t)rows * N), *ref = ref_alloc((size_t)N);
        ref_matmul_backward(NULL, NULL, ref, D, NULL, NULL, rows, 0, N);
        for (int n = 0; n < N; n++) ref[n] += g0[2 + n];
        free(D);
        tt_gpu_buf bd = tt_gtest_up(d, (size_t)rows * N), bg = tt_gtest_up(g0, (size_t)N + 2);
        tt_gpu_buf part = tt_gtest_poisoned(tt_gop_colsum_part_elems(rows, N));
        tt_gsite s[2];
        tt_gref db = {bg, 2};
        tt_gtest_die_on(tt_gop_matmul_backward_bias(&O, s, db, tt_gtest_R(bd), tt_gtest_R(part), rows, N, &st), &st,
                        "bias plan");
        tt_gtest_run(s, 2);
        float *got = malloc(((size_t)N + 2) * sizeof *got);
        tt_gtest_down(bg, got, (size_t)N + 2);
        CHECK(tt_test_max_rel_err(got + 2, ref, (size_t)N) <= TOL);
        CHECK(got[0] == g0[0] && got[1] == g0[1]);
        free(got), free(d), free(g0), free(ref);
    }
}

/* ---- gelu (and through it the fp32 erf), exact and tanh (gelu_new) ---- */

static void gelu_case(int act) {
    tt_status st;
    const size_t n = 4099;
    float *x = tt_gtest_rnd(n, -7, 7);
    /* dense sweep over the approximation's branch points, and extremes */
    for (size_t i = 0; i < 2000; i++) x[i] = -4.0f + 8.0f * (float)i / 2000.0f;
    x[2000] = 0.0f, x[2001] = -0.0f, x[2002] = 0.70710678f, x[2003] = -0.70710678f, x[2004] = 12.0f,
    x[2005] = -12.0f, x[2006] = 1e-30f, x[2007] = -30.0f;
    float *d = tt_gtest_rnd(n, -1, 1);
    double *X = ref_from_float(x, n), *Dd = ref_from_float(d, n), *ry = ref_alloc(n), *rd = ref_alloc(n);
    ref_gelu_forward(ry, X, n, act);
    ref_gelu_backward(rd, X, Dd, n, act);
    free(X), free(Dd);
    tt_gpu_buf bx = tt_gtest_up(x, n), by = tt_gtest_poisoned(n), bd = tt_gtest_up(d, n);
    tt_gsite s[2];
    tt_gtest_die_on(tt_gop_gelu_forward(&O, &s[0], tt_gtest_R(by), tt_gtest_R(bx), n, act, &st), &st, "gelu plan");
    tt_gtest_die_on(tt_gop_gelu_backward(&O, &s[1], tt_gtest_R(bd), tt_gtest_R(bx), n, act, &st), &st, "gelu bwd plan");
    tt_gtest_run(s, 2);
    float *y = malloc(n * sizeof *y), *g = malloc(n * sizeof *g);
    tt_gtest_down(by, y, n);
    tt_gtest_down(bd, g, n);
    /* pointwise: |err| <= 1e-6 |ref| + 2e-7 (the erf approximation is ~1e-7 absolute) */
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(fabs(y[i] - ry[i]) <= 1e-6 * fabs(ry[i]) + 2e-7 * (1 + fabs(x[i])))) {
            if (bad++ < 5) fprintf(stderr, "  gelu(%.9g) = %.9g, ref %.9g\n", x[i], y[i], ry[i]);
        }
        if (!(fabs(g[i] - rd[i]) <= 1e-6 * fabs(rd[i]) + 4e-7 * (1 + fabs(x[i])))) {
            if (bad++ < 5) fprintf(stderr, "  gelu'(%.9g)*d = %.9g, ref %.9g\n", x[i], g[i], rd[i]);
        }
    }
    CHECK(bad == 0);
    free(x), free(d), free(ry), free(rd), free(y), free(g);
}

TT_TEST(test_gelu) { gelu_case(TT_ACT_GELU); }
TT_TEST(test_gelu_tanh) { gelu_case(TT_ACT_GELU_TANH); }

/* ---- embedding ---- */
TT_TEST(test_embedding) {
    static const int shapes[][4] = {{1, 1, 1, 3}, {2, 3, 17, 5}, {3, 17, 65, 256}, {2, 65, 3, 7}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        tt_status st;
        int B = shapes[si][0], T = shapes[si][1], C = shapes[si][2], V = shapes[si][3];
        size_t ntok = (size_t)B * (T + 1), n = (size_t)B * T * C;
        uint32_t *tok = malloc((ntok + V + 1 + (size_t)B * T) * sizeof *tok);
        for (size_t i = 0; i < ntok; i++)
            tok[i] = (uint32_t)tt_rand_below(77, TT_STREAM_TEST, i + si * 1000, (uint64_t)V);
        uint32_t boff = (uint32_t)ntok, poff = boff + (uint32_t)V + 1;
        tt_gop_embedding_buckets(tok, B, T, V, tok + boff, tok + poff);
        /* params: [junk 2][wte V*C][wpe T*C] */
        size_t np = 2 + (size_t)V * C + (size_t)T * C;
        float *p = tt_gtest_rnd(np, -1, 1), *dout = tt_gtest_rnd(n, -1, 1), *g0 = tt_gtest_rnd(np, -1, 1);
        /* the inputs: the first T of each row of T + 1 tokens; the gradients accumulate into g0 */
        int32_t *inp = malloc((size_t)B * T * sizeof *inp);
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++) inp[b * T + t] = (int32_t)tok[(size_t)b * (T + 1) + t];
        double *P = ref_from_float(p, np), *Dout = ref_from_float(dout, n), *out = ref_alloc(n), *g = ref_alloc(np);
        ref_embedding_forward(out, inp, P + 2, P + 2 + (size_t)V * C, B, T, C);
        ref_embedding_backward(g + 2, g + 2 + (size_t)V * C, Dout, inp, B, T, C, V);
        for (size_t i = 0; i < np; i++) g[i] += g0[i];
        free(inp), free(P), free(Dout);
        tt_gpu_buf btok = tt_gtest_up(tok, ntok + V + 1 + (size_t)B * T), bp = tt_gtest_up(p, np),
                   bout = tt_gtest_poisoned(n), bd = tt_gtest_up(dout, n), bg = tt_gtest_up(g0, np);
        tt_gsite s[3];
        tt_gref wte = {bp, 2}, wpe = {bp, (uint32_t)(2 + V * C)}, gte = {bg, 2}, gpe = {bg, (uint32_t)(2 + V * C)};
        tt_gtest_die_on(tt_gop_embedding_forward(&O, &s[0], tt_gtest_R(bout), tt_gtest_R(btok), wte, wpe, B, T, C, &st),
                        &st, "embed");
        tt_gtest_die_on(
            tt_gop_embedding_backward(&O, &s[1], gte, gpe, tt_gtest_R(bd), btok, boff, poff, B, T, C, V, &st), &st,
            "embed bwd");
        tt_gtest_run(s, 3);
        cmp(bout, out, n, "embed out", 1e-6);
        cmp(bg, g, np, "embed grads", TOL);
        free(tok), free(p), free(dout), free(g0), free(out), free(g);
    }
}

/* ---- cross-entropy + loss reduce ---- */
TT_TEST(test_crossentropy) {
    static const int shapes[][3] = {{1, 1, 256}, {3, 3, 3}, {2, 17, 256}, {1, 65, 17}, {3, 65, 300}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        tt_status st;
        int B = shapes[si][0], T = shapes[si][1], V = shapes[si][2], rows = B * T;
        size_t ntok = (size_t)B * (T + 1), n = (size_t)rows * V;
        uint32_t *tok = malloc(ntok * sizeof *tok);
        for (size_t i = 0; i < ntok; i++)
            tok[i] = (uint32_t)tt_rand_below(5, TT_STREAM_TEST, i + si * 977, (uint64_t)V);
        float *lg = tt_gtest_rnd(n, -8, 8);
        double gs = 1.0 / (rows * 2.0), ls = 1.0 / (rows * 3.0);
        /* the targets: the last T of each row of T + 1 tokens */
        int32_t *tgt = malloc((size_t)rows * sizeof *tgt);
        for (int r = 0; r < rows; r++) tgt[r] = (int32_t)tok[(size_t)(r / T) * (T + 1) + r % T + 1];
        double *L = ref_from_float(lg, n), *dl = ref_alloc(n), *loss = ref_alloc((size_t)rows);
        double total = rows * ref_crossentropy_forward(loss, dl, L, tgt, rows, V, gs);
        free(tgt), free(L);
        tt_gstep sp;
        memset(&sp, 0, sizeof sp);
        sp.grad_scale = (float)gs;
        sp.loss_scale = (float)ls;
        sp.valid_rows = (uint32_t)rows;
        tt_gtest_die_on(tt_gops_set_step(&O, &sp, &st), &st, "step uniforms");
        float stats0[4] = {0.25f, 0, 0, 0};
        tt_gpu_buf btok = tt_gtest_up(tok, ntok), blg = tt_gtest_up(lg, n), bl = tt_gtest_poisoned((size_t)rows),
                   bst = tt_gtest_up(stats0, 4);
        tt_gsite s[2];
        tt_gtest_die_on(
            tt_gop_crossentropy(&O, &s[0], tt_gtest_R(blg), tt_gtest_R(bl), tt_gtest_R(btok), rows, V, T, &st), &st,
            "xent");
        tt_gtest_die_on(tt_gop_crossentropy_loss_reduce(&O, &s[1], tt_gtest_R(bst), tt_gtest_R(bl), &st), &st, "loss reduce");
        tt_gtest_run(s, 2);
        cmp(bl, loss, (size_t)rows, "xent loss", TOL);
        cmp(blg, dl, n, "xent dlogits", TOL);
        float got[4];
        tt_gtest_down(bst, got, 4);
        CHECK_CLOSE(got[0], 0.25 + total * ls, 1e-5, 0);
        free(tok), free(lg), free(dl), free(loss);
    }
}

/* ---- grad norm + clip + AdamW ---- */
static void adamw_case(size_t n, float clip, uint64_t seed) {
    tt_status st;
    tt_gtest_adamw_prob a;
    tt_gtest_adamw_make(&a, n, clip, seed);
    const float *p = a.p;
    const double *rp = a.rp;
    tt_gtest_die_on(tt_gops_set_step(&O, &a.sp, &st), &st, "step uniforms");
    tt_gpu_buf bp = tt_gtest_up(a.p, n), bg = tt_gtest_up(a.g, n), bm = tt_gtest_up(a.m, n), bv = tt_gtest_up(a.v, n),
               bmask = tt_gtest_up(a.mask, a.nw);
    tt_gpu_buf part = tt_gtest_poisoned(tt_gop_adamw_part_elems(n)), bst = tt_gtest_poisoned(4);
    tt_gsite s[2];
    tt_gtest_die_on(tt_gop_adamw(&O, s, bp, bg, bm, bv, bmask, part, bst, n, &st), &st, "adamw");
    tt_gtest_run(s, 2);
    /* parameters move by ~lr: compare the update, relative to its size */
    float *got = malloc(n * sizeof *got);
    tt_gtest_down(bp, got, n);
    double *dref = malloc(n * sizeof *dref);
    float *dgot = malloc(n * sizeof *dgot);
    for (size_t i = 0; i < n; i++) {
        dref[i] = rp[i] - p[i];
        dgot[i] = (float)((double)got[i] - p[i]);
    }
    double e = tt_test_max_rel_err(dgot, dref, n);
    if (!(e <= 1e-4)) fprintf(stderr, "  adamw n=%zu update rel err %.3g\n", n, e);
    CHECK(e <= 1e-4); /* p - p0 loses ~7 bits to cancellation in fp32 */
    CHECK(tt_test_max_rel_err(got, rp, n) <= 1e-6);
    cmp(bm, a.rm, n, "adam m", TOL);
    cmp(bv, a.rv, n, "adam v", TOL);
    float stt[4];
    tt_gtest_down(bst, stt, 4);
    CHECK_CLOSE(stt[1], a.norm, 1e-5, 0);
    tt_gtest_adamw_free(&a);
    free(got), free(dref), free(dgot);
}

TT_TEST(test_adamw) {
    adamw_case(1, 1.0f, 1);
    adamw_case(33, 0.5f, 2);     /* clipped */
    adamw_case(1000, 0.0f, 3);   /* no clipping */
    adamw_case(70001, 1e6f, 4);  /* norm below clip */
    adamw_case(300007, 1.0f, 5); /* many partial sums */
}

int main(void) {
    tt_gpu *G = tt_gtest_open();
    tt_gtest_set_seed(1000);
    tt_status st;
    if (tt_gops_init(&O, G, &st)) {
        fprintf(stderr, "gops init: %s\n", st.msg);
        return 1;
    }
    printf("adapter: %s (%s)\n", tt_gpu_get_info(G)->name, tt_gpu_get_info(G)->backend);
    RUN(test_matmul_shapes);
    RUN(test_matmul_epilogues);
    RUN(test_matmul_splitk);
    RUN(test_matmul_ones_rows);
    RUN(test_matmul_plan);
    RUN(test_matmul_kcfg);
    RUN(test_wgsl_unroll);
    RUN(test_matmul_unroll);
    RUN(test_matmul_batch);
    RUN(test_layernorm);
    RUN(test_bias_backward);
    RUN(test_gelu);
    RUN(test_gelu_tanh);
    RUN(test_embedding);
    RUN(test_crossentropy);
    RUN(test_adamw);
    tt_gops_free(&O);
    tt_gpu_close(G);
    return tt_test_summary();
}
