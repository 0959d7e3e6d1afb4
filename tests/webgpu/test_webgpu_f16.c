/* test_webgpu_f16.c — the f16 tier of the WebGPU matmul (TT_PRECISION_F16,
 * tt_gops.f16): operands rounded to f16 in the shared tiles, products
 * accumulated in f32, against a float64 reference of the f16-rounded
 * inputs, on every tile (32, 64, 128), all four transposes, the epilogues
 * (bias, residual, accumulate; added in f32), split-K and the folded bias
 * row. Each case is also compared with the float64 product of the unrounded
 * inputs: the f16 kernel must sit much closer to the rounded reference (so
 * the test fails if the operands were not rounded, or rounded wrongly).
 *
 * Tolerance: max |gpu - ref16| / max |ref16| <= 1e-5 (f32 accumulation of
 * exact f16 x f16 products; the rounding of f32 to f16 is
 * round-to-nearest-even on lavapipe, as on GPUs). The subgroup-matrix
 * variant's operand copy (matmul_cast) exactly (its product kernel needs
 * subgroup matrices, which lavapipe lacks: dev/f16/matmul_check.mjs checks
 * it on a GPU host). Needs shader-f16: skips
 * (exit 0) without it, fails under TT_REQUIRE_WEBGPU=1 (lavapipe has it). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webgpu/gpu_ops.h"
#include "gpu_test.h"
#include "ref64.h"
#include "tt_test.h"

static tt_gops O;

/* f32 -> nearest f16 (ties to even) -> f32; overflow to infinity */
static float round_f16(float x) {
    if (!isfinite(x)) return x;
    float a = fabsf(x);
    if (a >= 65520.0f) return copysignf(INFINITY, x);
    int e;
    frexpf(a, &e);       /* a = f * 2^e, f in [0.5, 1) */
    int q = e - 11;      /* 11 significant bits */
    if (q < -24) q = -24; /* subnormal spacing 2^-24 */
    double s = ldexp(1.0, q);
    double r = nearbyint((double)a / s) * s; /* the default rounding mode: to nearest even */
    return copysignf((float)r, x);
}

typedef struct {
    int M, N, K, ta, tb, flags, ones;
} mm_case;

/* ref (M,N) = op(A) op(B) + bias + R + C0 in float64, op(A) (M,K) from A
 * (am = M - ones rows, then ones rows of 1.0), operands through rnd (NULL:
 * as they are) */
static void ref_mm(double *ref, const mm_case *c, const float *A, const float *B, const float *bias, const float *R,
                   const float *C0, float (*rnd)(float)) {
    const int M = c->M, N = c->N, K = c->K, am = M - c->ones;
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double s = 0.0;
            for (int k = 0; k < K; k++) {
                float a = m >= am ? 1.0f : c->ta ? A[(size_t)k * am + m] : A[(size_t)m * K + k];
                float b = c->tb ? B[(size_t)n * K + k] : B[(size_t)k * N + n];
                if (rnd) a = rnd(a), b = rnd(b);
                s += (double)a * (double)b;
            }
            if (c->flags & 2) s += bias[n];
            if (c->flags & 4) s += R[(size_t)m * N + n];
            if (c->flags & 1) s += C0[(size_t)m * N + n];
            ref[(size_t)m * N + n] = s;
        }
}

static void f16_case(int M, int N, int K, int ta, int tb, int flags, int ones) {
    mm_case c = {M, N, K, ta, tb, flags, ones};
    const int am = M - ones;
    const size_t MN = (size_t)M * N;
    float *A = tt_gtest_rnd((size_t)am * K, -1, 1), *B = tt_gtest_rnd((size_t)K * N, -1, 1);
    float *bias = tt_gtest_rnd((size_t)N, -1, 1), *R = tt_gtest_rnd(MN, -1, 1), *C0 = tt_gtest_rnd(MN, -1, 1);
    double *r16 = malloc(MN * sizeof *r16), *r32 = malloc(MN * sizeof *r32);
    ref_mm(r16, &c, A, B, bias, R, C0, round_f16);
    ref_mm(r32, &c, A, B, bias, R, C0, NULL);
    tt_gpu_buf bA = tt_gtest_up(A, (size_t)am * K), bB = tt_gtest_up(B, (size_t)K * N), bb = tt_gtest_up(bias, N),
               bR = tt_gtest_up(R, MN), bC = (flags & 1) ? tt_gtest_up(C0, MN) : tt_gtest_poisoned(MN);
    tt_gref rb = tt_gtest_R(bb), rr = tt_gtest_R(bR);
    tt_gsite s[TT_GOP_MM_SITES];
    tt_status st;
    tt_gtest_die_on(tt_gop_matmul_ex(&O, s, tt_gtest_R(bC), tt_gtest_R(bA), tt_gtest_R(bB), (flags & 2) ? &rb : NULL,
                                     (flags & 4) ? &rr : NULL, M, N, K, ta, tb, flags & 1, ones, &st),
                    &st, "f16 matmul plan");
    tt_gtest_run(s, TT_GOP_MM_SITES);
    float *got = malloc(MN * sizeof *got);
    tt_gtest_down(bC, got, MN);
    double e16 = tt_test_max_rel_err(got, r16, MN), e32 = tt_test_max_rel_err(got, r32, MN);
    const int ok = e16 <= 1e-5 && e32 > 10.0 * e16;
    if (!ok)
        fprintf(stderr, "  f16 matmul tile %d split %d M%d N%d K%d ta%d tb%d flags%d ones%d: rel err %.3g against the "
                        "f16-rounded reference, %.3g against the f32 one\n",
                O.tile, O.splitk, M, N, K, ta, tb, flags, ones, e16, e32);
    CHECK(ok);
    free(A), free(B), free(bias), free(R), free(C0), free(r16), free(r32), free(got);
}

TT_TEST(test_f16_matmul_tiles) {
    static const int shapes[][3] = {{3, 17, 65}, {17, 65, 3}, {68, 36, 132}, {40, 44, 48}};
    /* every layout on the 32 tile; the 64 and 128 tiles in one layout each
     * (lavapipe compiles each big-tile pipeline for ~10-15 s) */
    O.tile = 32;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int t = 0; t < 4; t++) f16_case(shapes[i][0], shapes[i][1], shapes[i][2], t & 1, t >> 1, (int)((i + t) % 8), 0);
    O.tile = 64;
    f16_case(68, 36, 132, 1, 1, 5, 0);
    O.tile = 128;
    f16_case(130, 67, 33, 0, 0, 7, 0);
    O.tile = 0;
}

TT_TEST(test_f16_matmul_splitk_ones) {
    O.tile = 32;
    O.splitk = 3;
    f16_case(20, 12, 260, 0, 0, 3, 0);
    f16_case(17, 65, 65, 1, 0, 1, 1); /* the folded bias row, split */
    O.splitk = 0;
    f16_case(33, 36, 132, 1, 0, 1, 1);
    O.tile = 0;
}

/* the same products at f32 (o->f16 = 0) still match the unrounded
 * reference: the tier is a plan choice, not a global switch */
TT_TEST(test_f16_off_is_f32) {
    O.f16 = 0;
    O.tile = 32;
    const int M = 17, N = 65, K = 65;
    mm_case c = {M, N, K, 0, 0, 0, 0};
    float *A = tt_gtest_rnd((size_t)M * K, -1, 1), *B = tt_gtest_rnd((size_t)K * N, -1, 1);
    double *r32 = malloc((size_t)M * N * sizeof *r32);
    ref_mm(r32, &c, A, B, NULL, NULL, NULL, NULL);
    tt_gpu_buf bA = tt_gtest_up(A, (size_t)M * K), bB = tt_gtest_up(B, (size_t)K * N), bC = tt_gtest_poisoned((size_t)M * N);
    tt_gsite s[TT_GOP_MM_SITES];
    tt_status st;
    tt_gtest_die_on(tt_gop_matmul(&O, s, tt_gtest_R(bC), tt_gtest_R(bA), tt_gtest_R(bB), NULL, NULL, M, N, K, 0, 0, 0, &st),
                    &st, "f32 matmul plan");
    tt_gtest_run(s, TT_GOP_MM_SITES);
    float *got = malloc((size_t)M * N * sizeof *got);
    tt_gtest_down(bC, got, (size_t)M * N);
    CHECK(tt_test_max_rel_err(got, r32, (size_t)M * N) <= 1e-6);
    free(A), free(B), free(r32), free(got);
    O.f16 = 1;
    O.tile = 0;
}

/* grad norm + clip + AdamW under the loss scaler (adamw_update's "//!amp"
 * lines, then amp_update): the grads hold S times the gradient; the update
 * matches the float64 AdamW of the true gradient, the norm is the true one,
 * the scaler counts the clean step (and doubles S after the interval); a
 * gradient with an infinity changes no parameter or moment, halves S and
 * counts a skipped step. The reference is AdamW's step 3; with `skipped`
 * earlier skipped steps the step is numbered 3 + skipped and its host bias
 * corrections are those of that number (wrong on purpose): the device must
 * take them for step 3 */
static void amp_adamw_case(size_t n, float clip, float S, float good, int overflow, int skipped) {
    tt_status st;
    tt_gtest_adamw_prob a;
    tt_gtest_adamw_make(&a, n, clip, 9);
    const float *p = a.p, *m = a.m, *v = a.v;
    const double *rp = a.rp, *rm = a.rm, *rv = a.rv, norm = a.norm;
    float *gs = malloc(n * sizeof *gs);
    for (size_t i = 0; i < n; i++) gs[i] = a.g[i] * S;
    if (overflow) gs[n / 2] = INFINITY;
    a.sp.t = 3 + (uint32_t)skipped;
    if (skipped) a.sp.bc1 = 1.0f - powf(a.sp.b1, (float)a.sp.t), a.sp.bc2 = 1.0f - powf(a.sp.b2, (float)a.sp.t);
    tt_gtest_die_on(tt_gops_set_step(&O, &a.sp, &st), &st, "step uniforms");
    const float ls0[4] = {S, good, (float)skipped, 0};
    tt_gpu_buf bp = tt_gtest_up(p, n), bg = tt_gtest_up(gs, n), bm = tt_gtest_up(m, n), bv = tt_gtest_up(v, n),
               bmask = tt_gtest_up(a.mask, a.nw), bls = tt_gtest_up(ls0, 4);
    tt_gpu_buf part = tt_gtest_poisoned(tt_gop_adamw_part_elems(n)), bst = tt_gtest_poisoned(8);
    O.amp = bls, O.amp_on = 1;
    tt_gsite s[3];
    tt_gtest_die_on(tt_gop_adamw(&O, s, bp, bg, bm, bv, bmask, part, bst, n, &st), &st, "amp adamw");
    O.amp_on = 0;
    tt_gtest_run(s, 3);
    float *got = malloc(n * sizeof *got), *gm = malloc(n * sizeof *gm), *gv = malloc(n * sizeof *gv), stt[8], ls[4];
    tt_gtest_down(bp, got, n);
    tt_gtest_down(bm, gm, n);
    tt_gtest_down(bv, gv, n);
    tt_gtest_down(bst, stt, 8);
    tt_gtest_down(bls, ls, 4);
    if (overflow) {
        CHECK(!memcmp(got, p, n * sizeof *got) && !memcmp(gm, m, n * sizeof *gm) && !memcmp(gv, v, n * sizeof *gv));
        CHECK(!isfinite(stt[1]));
        CHECK(ls[0] == S / 2 && ls[1] == 0 && stt[2] == S / 2 && stt[3] == 0);
        CHECK(ls[2] == skipped + 1 && stt[4] == skipped + 1);
    } else {
        double *dref = malloc(n * sizeof *dref);
        float *dgot = malloc(n * sizeof *dgot);
        for (size_t i = 0; i < n; i++) dref[i] = rp[i] - p[i], dgot[i] = (float)((double)got[i] - p[i]);
        double e = tt_test_max_rel_err(dgot, dref, n);
        if (!(e <= 1e-4)) fprintf(stderr, "  amp adamw n=%zu S=%g update rel err %.3g\n", n, S, e);
        CHECK(e <= 1e-4);
        CHECK(tt_test_max_rel_err(gm, rm, n) <= 1e-5 && tt_test_max_rel_err(gv, rv, n) <= 1e-5);
        CHECK_CLOSE(stt[1], norm, 1e-5, 0);
        const int grow = good + 1 >= TT_LOSS_SCALE_INTERVAL;
        CHECK(ls[0] == (grow ? 2 * S : S) && ls[1] == (grow ? 0 : good + 1));
        CHECK(stt[2] == ls[0] && stt[3] == ls[1]);
        CHECK(ls[2] == skipped && stt[4] == skipped);
        free(dref), free(dgot);
    }
    tt_gtest_adamw_free(&a);
    free(gs), free(got), free(gm),
        free(gv);
}

/* f16 bits -> float (exact) */
static float half_to_float(uint16_t h) {
    const int e = (h >> 10) & 31, m = h & 1023;
    float v = e == 0 ? ldexpf((float)m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexpf((float)(1024 + m), e - 25);
    return (h & 0x8000) ? -v : v;
}

/* matmul_cast (the subgroup-matrix matmul's operand copy): nprod products of
 * rows x cols (leading dimension ld, sstride apart, after `off` floats) into
 * drows x dld f16 (dstride apart, after dst_off halves), ones in
 * [0, one_r) x [0, one_c) outside the data, zeros in the rest; every element
 * equal to the f16 rounding of its source (values past f16's range:
 * infinite), the padding written over poisoned memory */
static void cast_case(uint32_t rows, uint32_t cols, uint32_t ld, uint32_t off, uint32_t one_r, uint32_t one_c,
                      uint32_t drows, uint32_t dld, uint32_t nprod, uint32_t sstride, uint32_t dst_off,
                      uint32_t dstride) {
    tt_status st;
    const size_t nsrc = off + (size_t)(nprod - 1) * sstride + (size_t)rows * ld;
    float *S = tt_gtest_rnd(nsrc, -3, 3);
    S[off] = 1e5f;                      /* beyond f16: infinite */
    if (rows * cols > 1) S[off + 1] = 3e-7f; /* an f16 subnormal */
    const size_t nh = dst_off + (size_t)(nprod - 1) * dstride + (size_t)drows * dld, nw = (nh + 1) / 2;
    tt_gpu_buf bs = tt_gtest_up(S, nsrc), bd = tt_gtest_poisoned(nw);
    tt_gsite s[1];
    const tt_gref dst = {bd, dst_off}, src = {bs, off};
    tt_gtest_die_on(tt_gop_matmul_cast(&O, s, dst, src, rows, cols, ld, one_r, one_c, drows, dld, nprod, sstride,
                                       dstride, &st),
                    &st, "cast plan");
    tt_gtest_run(s, 1);
    float *w = malloc(nw * sizeof *w);
    uint16_t *h = malloc(nw * 2 * sizeof *h);
    tt_gtest_down(bd, w, nw);
    memcpy(h, w, nw * sizeof *w);
    int bad = 0;
    for (uint32_t p = 0; p < nprod; p++)
        for (uint32_t r = 0; r < drows; r++)
            for (uint32_t c = 0; c < dld; c++) {
                float want = r < rows && c < cols ? round_f16(S[off + (size_t)p * sstride + (size_t)r * ld + c])
                             : r < one_r && c < one_c ? 1.0f
                                                      : 0.0f;
                float got = half_to_float(h[dst_off + (size_t)p * dstride + (size_t)r * dld + c]);
                if (!(got == want) && bad++ < 3)
                    printf("  cast %ux%u: [%u][%u][%u] %g, want %g\n", rows, cols, p, r, c, got, want);
            }
    CHECK_MSG(bad == 0, "matmul_cast %ux%u -> %ux%u x%u: %d wrong", rows, cols, drows, dld, nprod, bad);
    free(S), free(w), free(h);
}

TT_TEST(test_f16_matmul_cast) {
    cast_case(5, 7, 9, 3, 0, 0, 16, 16, 1, 0, 0, 0);         /* padding both ways, ld > cols, an offset */
    cast_case(3, 16, 16, 0, 8, 16, 16, 16, 1, 0, 4, 0);      /* ones rows 3..7 (op(A) stored with ones rows) */
    cast_case(16, 5, 5, 0, 16, 9, 16, 64, 1, 0, 0, 0);       /* ones columns (a transposed op(A)) */
    cast_case(6, 10, 11, 1, 0, 0, 16, 12, 3, 6 * 11 + 10, 8, 16 * 12 + 4); /* a batch of 3 (q, k, v: B then bias) */
    tt_status st;
    tt_gsite s[1];
    const tt_gref g = {tt_gtest_poisoned(64), 2};
    CHECK(tt_gop_matmul_cast(&O, s, g, g, 4, 4, 4, 0, 0, 4, 4, 1, 0, 0, &st) == TT_EINVAL); /* dst.off not 4-aligned */
    const tt_gref g0 = {g.buf, 0};
    CHECK(tt_gop_matmul_cast(&O, s, g0, g0, 5, 4, 4, 0, 0, 4, 4, 1, 0, 0, &st) == TT_EINVAL); /* rows past drows */
}

TT_TEST(test_f16_amp_adamw) {
    amp_adamw_case(1000, 1.0f, 65536.0f, 0, 0, 0);                           /* no clipping (norm < 1) */
    amp_adamw_case(3001, 0.5f, 1024.0f, 7, 0, 0);                            /* clipped */
    amp_adamw_case(1000, 1.0f, 256.0f, TT_LOSS_SCALE_INTERVAL - 1, 0, 0);    /* the scale doubles */
    amp_adamw_case(1000, 1.0f, 65536.0f, 5, 1, 0);                           /* an overflow: skipped, halved */
    amp_adamw_case(1000, 1.0f, 32768.0f, 0, 0, 2);                           /* after 2 skipped: step 3's corrections */
    amp_adamw_case(1000, 1.0f, 32768.0f, 3, 1, 2);                           /* a third overflow */
}

int main(void) {
    tt_gpu *G = tt_gtest_open();
    tt_gtest_set_seed(3000);
    const tt_gpu_info *in = tt_gpu_get_info(G);
    printf("adapter: %s (%s)\n", in->name, in->backend);
    if (!in->has_f16) {
        const char *req = getenv("TT_REQUIRE_WEBGPU");
        int must = req && strcmp(req, "1") == 0;
        printf("%s: adapter %s lacks shader-f16\n", must ? "FAIL" : "SKIP", in->name);
        return must;
    }
    tt_status st;
    if (tt_gops_init(&O, G, &st)) {
        fprintf(stderr, "gops init: %s\n", st.msg);
        return 1;
    }
    O.f16 = 1;
    RUN(test_f16_matmul_tiles);
    RUN(test_f16_matmul_splitk_ones);
    RUN(test_f16_off_is_f32);
    RUN(test_f16_amp_adamw);
    RUN(test_f16_matmul_cast);
    tt_gops_free(&O);
    tt_gpu_close(G);
    return tt_test_summary();
}
