/* matmul_check.c — dev harness of dev/matmul/ (not a test, not in ctest):
 * runs a fixed list of small WebGPU matmul products (every tile, transposes,
 * split-K, bias / residual / accumulate, ones rows, odd sizes and offsets,
 * tiles wholly in range and not) on seeded random data and prints, per
 * product and tile, a hash of the output's bytes and its error against a
 * float64 reference; then batches of products (tt_gop_matmul_batch, each
 * product checked bit-identical to the same product planned alone as a
 * member of the group, tt_gop_matmul_group; tt_gop_matmul_batch_solo, the
 * weight-gradient batches, each product bit-identical to the product
 * alone, tt_gop_matmul_ex, and the gaps between strided outputs untouched). Run once with the embedded kernels and once with
 * TT_WEBGPU_WGSL_DIR set to a variant's kernel directory: equal lines mean
 * bit-identical outputs (dev/matmul/README.md).
 *
 *   build/dev_matmul_check [unroll=0|1] [tiles=128,64,32,0]
 *
 * unroll: //!unroll blocks expanded (as on GPUs) or loops (the adapter's
 * default otherwise). Exit 1 if a product fails or errs by more than 1e-4
 * of its largest reference value. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webgpu/device.h"
#include "webgpu/gpu_ops.h"
#include "gpu_test.h"
#include "webgpu/hooks.h"
#include "tt.h"
#include "tt_test.h"

typedef struct {
    int M, N, K, ta, tb;
    const char *flags; /* b bias, r residual, a accumulate */
    int ones;          /* ones rows of op(A) (bias gradient folded in) */
    int off;           /* element offset of every operand in its buffer */
    int split;         /* forced split-K slices (0: planned) */
} mm_case;

static const mm_case CASES[] = {
    /* tiles wholly in range on every tile size, every transpose */
    {256, 256, 64, 0, 0, "br", 0, 0, 0},
    {256, 256, 64, 0, 1, "a", 0, 0, 0},
    {256, 256, 64, 1, 0, "a", 0, 4, 0},
    {256, 256, 64, 1, 1, "", 0, 0, 0},
    /* some tiles in range, some at the edge; offsets multiples of 4 */
    {200, 136, 80, 0, 0, "bra", 0, 4, 0},
    {200, 136, 80, 0, 1, "br", 0, 8, 0},
    {200, 136, 80, 1, 0, "a", 0, 4, 0},
    {200, 136, 80, 1, 1, "b", 0, 0, 0},
    /* odd sizes and an odd offset: no vec4 loads */
    {131, 67, 37, 0, 0, "bra", 0, 1, 0},
    {131, 67, 37, 1, 1, "a", 0, 0, 0},
    {67, 131, 45, 0, 1, "b", 0, 3, 0},
    /* K not a multiple of 16 (of 8; of 16 but not 8 is impossible) */
    {128, 128, 24, 0, 0, "br", 0, 0, 0},
    {128, 128, 20, 0, 1, "", 0, 0, 0},
    {136, 128, 40, 1, 0, "a", 0, 0, 0},
    /* split-K: weight-gradient shapes (planned slices, forced ones, slice
     * boundaries off the k step) */
    {256, 128, 512, 1, 0, "a", 0, 0, 0},
    {128, 256, 384, 1, 0, "a", 0, 4, 3},
    {128, 128, 200, 1, 0, "a", 0, 0, 2},
    {256, 128, 512, 0, 0, "bra", 0, 0, 0},
    {128, 256, 512, 0, 1, "br", 0, 0, 4},
    /* ones rows (folded bias gradient), at a tile boundary and inside one */
    {129, 128, 256, 1, 0, "a", 1, 0, 0},
    {257, 64, 96, 1, 0, "a", 1, 0, 0},
    {100, 72, 64, 1, 0, "a", 1, 0, 0},
};
#define N_CASES (int)(sizeof CASES / sizeof CASES[0])

/* batches (tt_gop_matmul_batch): n products sharing A, B and bias of
 * product p at p*(K*N + N + gap) in one buffer (each bias after its
 * matrix, as in the parameter layout), outputs following each other; solo
 * (tt_gop_matmul_batch_solo): each product with its lone plan's slices,
 * its output at p*(M*N + cgap) */
typedef struct {
    mm_case c;
    int n, gap, solo, cgap;
} mm_bcase;

static const mm_bcase BCASES[] = {
    /* the q, k, v projections (NN, bias): in range, at the edge, split */
    {{256, 128, 64, 0, 0, "b", 0, 0, 0}, 3, 0, 0, 0},
    {{200, 136, 80, 0, 0, "b", 0, 0, 0}, 3, 0, 0, 0},
    {{256, 128, 512, 0, 0, "b", 0, 0, 2}, 3, 0, 0, 0},
    /* residual and accumulate in the epilogue, odd stride (no vec4) */
    {{131, 67, 37, 0, 0, "bra", 0, 0, 0}, 3, 1, 0, 0},
    /* weight-gradient layout: TA, ones row, planned split-K (colsum_final) */
    {{129, 128, 256, 1, 0, "a", 1, 0, 0}, 3, 0, 0, 0},
    {{128, 256, 384, 1, 0, "a", 0, 0, 3}, 2, 4, 0, 0},
    /* the q, k, v weight gradients (solo): bias folded (outputs adjacent),
     * or not (outputs a bias row apart), unsplit, a long chain split as
     * planned (K >= 4096), odd sizes (scalar loads and reduction) */
    {{97, 96, 128, 1, 0, "a", 1, 0, 0}, 3, 0, 1, 0},
    {{96, 96, 128, 1, 0, "a", 0, 0, 0}, 3, 0, 1, 96},
    {{129, 128, 4096, 1, 0, "a", 1, 0, 0}, 3, 0, 1, 0},
    {{128, 128, 4096, 1, 0, "a", 0, 0, 0}, 3, 0, 1, 128},
    {{37, 20, 48, 1, 0, "a", 0, 0, 2}, 3, 3, 1, 20},
    {{37, 20, 48, 1, 0, "a", 0, 0, 0}, 3, 3, 1, 21},
};
#define N_BCASES (int)(sizeof BCASES / sizeof BCASES[0])

static uint64_t fnv(const float *x, size_t n) {
    uint64_t h = 1469598103934665603ull;
    const unsigned char *p = (const unsigned char *)x;
    for (size_t i = 0; i < n * 4; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/* one case on one tile: 0 ok, 1 failed */
static int run_case(tt_gops *o, int ci, const mm_case *c) {
    const int M = c->M, N = c->N, K = c->K, am = M - c->ones, off = c->off;
    const int bias = strchr(c->flags, 'b') != NULL, res = strchr(c->flags, 'r') != NULL,
              acc = strchr(c->flags, 'a') != NULL;
    const size_t nA = (size_t)am * K, nB = (size_t)K * N, nC = (size_t)M * N;
    tt_gtest_set_seed(1000 + (uint64_t)ci);
    float *A = tt_gtest_rnd(nA + off, -1, 1), *B = tt_gtest_rnd(nB + off, -1, 1), *C0 = tt_gtest_rnd(nC + off, -1, 1),
          *bi = tt_gtest_rnd((size_t)N + off, -1, 1), *R = tt_gtest_rnd(nC + off, -1, 1);
    float *C = malloc(nC * sizeof *C);
    tt_gpu_buf bA = tt_gtest_up(A, nA + off), bB = tt_gtest_up(B, nB + off), bC = tt_gtest_up(C0, nC + off),
               bb = tt_gtest_up(bi, (size_t)N + off), bR = tt_gtest_up(R, nC + off);
    tt_gref gA = {bA, (uint32_t)off}, gB = {bB, (uint32_t)off}, gC = {bC, (uint32_t)off}, gb = {bb, (uint32_t)off},
            gR = {bR, (uint32_t)off};
    tt_gsite s[TT_GOP_MM_SITES];
    tt_status st;
    o->splitk = c->split;
    int rc = tt_gop_matmul_ex(o, s, gC, gA, gB, bias ? &gb : NULL, res ? &gR : NULL, M, N, K, c->ta, c->tb, acc,
                              c->ones, &st);
    int bad = 0;
    if (rc) {
        printf("case %2d %dx%dx%d: FAILED: %s\n", ci, M, N, K, st.msg);
        bad = 1;
    } else {
        tt_gtest_run(s, TT_GOP_MM_SITES);
        float *full = malloc((nC + off) * sizeof *full);
        tt_gtest_down(bC, full, nC + off);
        memcpy(C, full + off, nC * sizeof *C);
        free(full);
        /* float64 reference: rows >= am of op(A) are ones */
        double emax = 0, rmax = 0;
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                double r = 0;
                for (int k = 0; k < K; k++) {
                    double av = m >= am ? 1.0 : c->ta ? A[off + (size_t)k * am + m] : A[off + (size_t)m * K + k];
                    double bv = c->tb ? B[off + (size_t)n * K + k] : B[off + (size_t)k * N + n];
                    r += av * bv;
                }
                if (bias) r += bi[off + n];
                if (res) r += R[off + (size_t)m * N + n];
                if (acc) r += C0[off + (size_t)m * N + n];
                double e = fabs(r - C[(size_t)m * N + n]);
                if (!(e <= emax)) emax = e; /* NaN propagates */
                if (fabs(r) > rmax) rmax = fabs(r);
            }
        double rel = emax / (rmax > 0 ? rmax : 1);
        bad = !(rel <= 1e-4);
        printf("case %2d %-32s hash %016llx rel.err %.2e%s\n", ci, s[TT_GOP_MM_PRODUCT].tag, (unsigned long long)fnv(C, nC), rel,
               bad ? "  FAIL" : "");
    }
    tt_gpu_buffer_free(tt_gtest_gpu, bA), tt_gpu_buffer_free(tt_gtest_gpu, bB), tt_gpu_buffer_free(tt_gtest_gpu, bC);
    tt_gpu_buffer_free(tt_gtest_gpu, bb), tt_gpu_buffer_free(tt_gtest_gpu, bR);
    free(A), free(B), free(C0), free(bi), free(R), free(C);
    return bad;
}

/* one batch case on one tile: the batch, then each product alone on the
 * same values; prints the batch's hash and whether every product is
 * bit-identical to its product alone. 0 ok, 1 failed */
static int run_batch(tt_gops *o, int bi, const mm_bcase *bc) {
    const mm_case *c = &bc->c;
    const int M = c->M, N = c->N, K = c->K, am = M - c->ones, n = bc->n;
    const int bias = strchr(c->flags, 'b') != NULL, res = strchr(c->flags, 'r') != NULL,
              acc = strchr(c->flags, 'a') != NULL;
    const size_t nA = (size_t)am * K, MN = (size_t)M * N, unit = (size_t)K * N + N, bstride = unit + (size_t)bc->gap;
    const size_t cs = MN + (size_t)bc->cgap, nP = (size_t)(n - 1) * bstride + unit, nC = (size_t)(n - 1) * cs + MN;
    tt_gtest_set_seed(2000 + (uint64_t)bi);
    float *A = tt_gtest_rnd(nA, -1, 1), *P = tt_gtest_rnd(nP, -1, 1), *C0 = tt_gtest_rnd(nC, -1, 1),
          *R = tt_gtest_rnd(nC, -1, 1), *C = malloc(nC * sizeof *C), *C1 = malloc(MN * sizeof *C1);
    tt_gpu_buf bA = tt_gtest_up(A, nA), bP = tt_gtest_up(P, nP), bC = tt_gtest_up(C0, nC), bR = tt_gtest_up(R, nC);
    tt_gref gA = {bA, 0}, gB = {bP, 0}, gb = {bP, (uint32_t)((size_t)K * N)}, gC = {bC, 0}, gR = {bR, 0};
    tt_gsite s[TT_GOP_MM_SITES];
    tt_status st;
    o->splitk = c->split;
    int bad = 0;
    int rc = bc->solo ? tt_gop_matmul_batch_solo(o, s, n, (uint32_t)bstride, (uint32_t)cs, gC, gA, gB, bias ? &gb : NULL,
                                                 res ? &gR : NULL, M, N, K, c->ta, c->tb, acc, c->ones, &st)
                      : tt_gop_matmul_batch(o, s, n, (uint32_t)bstride, gC, gA, gB, bias ? &gb : NULL,
                                            res ? &gR : NULL, M, N, K, c->ta, c->tb, acc, c->ones, &st);
    if (rc) {
        printf("batch %d %dx%dx%d x%d: FAILED: %s\n", bi, M, N, K, n, st.msg);
        bad = 1;
    } else {
        tt_gtest_run(s, TT_GOP_MM_SITES);
        tt_gtest_down(bC, C, nC);
        char tag[64];
        snprintf(tag, sizeof tag, "%s", s[TT_GOP_MM_PRODUCT].tag);
        int same = 1;
        for (size_t i = 0; i < nC; i++) /* the gaps between strided outputs untouched */
            if (i % cs >= MN) same &= memcmp(&C[i], &C0[i], sizeof *C) == 0;
        for (int p = 0; p < n && !bad; p++) { /* product p alone, on its own buffers */
            tt_gpu_buf b1 = tt_gtest_up(C0 + (size_t)p * cs, MN), r1 = tt_gtest_up(R + (size_t)p * cs, MN);
            tt_gref g1 = {b1, 0}, gr1 = {r1, 0}, gB1 = {bP, (uint32_t)(p * bstride)},
                    gb1 = {bP, (uint32_t)(p * bstride + (size_t)K * N)};
            if (tt_gop_matmul_group(o, s, bc->solo ? 1 : n, g1, gA, gB1, bias ? &gb1 : NULL, res ? &gr1 : NULL, M, N, K,
                                    c->ta, c->tb, acc, c->ones, &st)) {
                printf("batch %d product %d alone: FAILED: %s\n", bi, p, st.msg);
                bad = 1;
            } else {
                tt_gtest_run(s, TT_GOP_MM_SITES);
                tt_gtest_down(b1, C1, MN);
                same &= memcmp(C1, C + (size_t)p * cs, MN * sizeof *C1) == 0;
            }
            tt_gpu_buffer_free(tt_gtest_gpu, b1), tt_gpu_buffer_free(tt_gtest_gpu, r1);
        }
        bad |= !same;
        printf("batch %d %-32s%s hash %016llx %s%s\n", bi, tag, bc->solo ? " solo" : "", (unsigned long long)fnv(C, nC),
               same ? "= products alone" : "!= products alone", bad ? "  FAIL" : "");
    }
    tt_gpu_buffer_free(tt_gtest_gpu, bA), tt_gpu_buffer_free(tt_gtest_gpu, bP), tt_gpu_buffer_free(tt_gtest_gpu, bC);
    tt_gpu_buffer_free(tt_gtest_gpu, bR);
    free(A), free(P), free(C0), free(R), free(C), free(C1);
    return bad;
}

int main(int argc, char **argv) {
    int unroll = -1, tiles[8] = {128, 64, 32, 0}, nt = 4;
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "unroll=", 7) == 0) unroll = atoi(argv[i] + 7) != 0;
        else if (strncmp(argv[i], "tiles=", 6) == 0) {
            nt = 0;
            for (char *p = argv[i] + 6; *p && nt < 8; p += strcspn(p, ","), p += *p == ',') tiles[nt++] = atoi(p);
        } else {
            fprintf(stderr, "usage: dev_matmul_check [unroll=0|1] [tiles=128,64,32,0]\n");
            return 2;
        }
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    tt_gpu *g = tt_gtest_open();
    tt_status st;
    tt_gops o;
    if (tt_gops_init(&o, g, &st)) {
        fprintf(stderr, "dev_matmul_check: %s\n", st.msg);
        return 1;
    }
    if (unroll >= 0) o.unroll = unroll;
    const char *wdir = tt_hook_get(TT_HOOK_WGSL_DIR);
    fprintf(stderr, "dev_matmul_check: %s, unroll %d, kernels from %s\n", tt_gpu_get_info(g)->name, o.unroll,
            wdir ? wdir : "(embedded)");
    int bad = 0;
    for (int t = 0; t < nt; t++) {
        o.tile = tiles[t];
        printf("tile %d (0: planned), unroll %d\n", tiles[t], o.unroll);
        for (int ci = 0; ci < N_CASES; ci++) bad |= run_case(&o, ci, &CASES[ci]);
        for (int bi = 0; bi < N_BCASES; bi++) bad |= run_batch(&o, bi, &BCASES[bi]);
    }
    tt_gops_free(&o);
    tt_gpu_close(g);
    return bad || tt_test_failed_checks;
}
