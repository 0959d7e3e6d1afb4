/* matmul_engine.h — the CPU matrix-multiply engine (matmul_engine.c) as the
 * linear-layer ops (matmul.c) and tt_mm_gemm drive it: a job describes one
 * product, a set of jobs (+ column sums) runs in one pool wake. Private to
 * src/cpu. */
#ifndef TT_CPU_MATMUL_ENGINE_H
#define TT_CPU_MATMUL_ENGINE_H

#include <string.h>

#include "ops_internal.h"

/* ---- the engine: C(M,N) (+)= sum over segments of A_s(M,K_s) . B_s(K_s,N) ----
 * A_s element (i,k) is A[i*lda + k] (transA = 0) or A[k*lda + i] (transA = 1);
 * B_s element (k,j) is B[k*ldb + j] (transB = 0) or B[j*ldb + k] (transB = 1).
 * Initial value of C: its old contents if accumulate, else
 * bias[j] (if bias) + R[i*ldr + j] (if R). The K dimension of all segments is
 * one chain: every output element is acc = init, then acc += a*b for every k
 * of every segment in order, independent of tiling and thread count. */
typedef struct {
    const float *A;
    size_t lda;
    int transA;
    const float *B;
    size_t ldb;
    int transB;
    int K;
} tt_mm_seg;

typedef struct {
    int M, N;
    int nseg;
    tt_mm_seg seg[3];
    float *C;
    size_t ldc;
    int accumulate;
    const float *bias;
    const float *R;
    size_t ldr;
    /* epilogues on the final value (row stride ldc): gelu_out = gelu(C), and
     * C = acc * gelu'(gelu_in) (the GELU backward fused into a dinp product) */
    float *gelu_out;
    const float *gelu_in;
    int act;               /* the GELU of both epilogues (config.h tt_act; 0: exact) */
    /* filled by tt_mm_plan */
    int mc, nc, mb, nb, npanel;
    float *pb;             /* packed B, segment s at pb + seg_off[s] */
    size_t seg_off[3];
    int64_t pack_chunks;   /* sum over segments of K blocks x panels */
    int dbuf;              /* B packed one K slice at a time into two buffers (see set_run) */
    int pack_slice;        /* a double-buffered job's pack task: the K slice it packs */
    float *colsum;         /* with dbuf: colsum[j] += sum over k of B(k, j), summed by the output
                            * blocks of row 0 in their compute phases (the bias gradient of a
                            * weight-gradient product; NULL: none) */
    int rowpack;           /* B (plain, one segment) is packed by row chunks (weight gradients) */
    int packa;             /* a transposed A (one segment) is packed into MR-row panels at pa
                            * (the ops whose scratch functions count it set this) */
    float *pa;             /* packed A: K block kb at pa + kblock_off(kb, mpad), tile i/MR at
                            * + (i/MR) * kc * MR, element (r, k) at + k * MR + r, rows past M zero */
    size_t mpad;           /* M rounded up to MR */
    int packs_a;           /* this job packs pa (0: an earlier job of the set packs the same A there) */
    int ktotal;            /* K of the whole chain (all segments) */
    int k0, k1;            /* this compute phase: K blocks whose chain offset is in [k0, k1) */
    tt_cpu *cpu;
} tt_mm_job;

/* column sums: db[j] += sum_i dout[i*ld + j], chunks of TT_COLSUM_W columns */
typedef struct {
    float *db;
    const float *dout;
    size_t ld;
    int N, OC;
} tt_colsum_job;

/* a set of products and column sums run in one wake (tt_mm_set_run) */
typedef struct {
    tt_mm_job *jobs[4];
    int n;
    tt_colsum_job *cs[3];
    int ncs;
    const char *op; /* for the error message */
} tt_mm_set;

/* a plain NN product C (M,N) = A (M,K) . B (K,N); callers set the rest */
static inline tt_mm_job tt_mm_nn_job(float *C, size_t ldc, const float *A, size_t lda, const float *B, size_t ldb, int M,
                                     int N, int K) {
    tt_mm_job j;
    memset(&j, 0, sizeof j);
    j.M = M;
    j.N = N;
    j.nseg = 1;
    j.seg[0] = (tt_mm_seg){A, lda, 0, B, ldb, 0, K};
    j.C = C;
    j.ldc = ldc;
    return j;
}

/* plans every job of m into the shared scratch and runs them: packing,
 * then the output blocks (slice by slice for long K chains), with the column
 * sums; errors (scratch) go to cpu's error slot under m->op */
void tt_mm_set_run(tt_cpu *cpu, tt_mm_set *m);

#endif
