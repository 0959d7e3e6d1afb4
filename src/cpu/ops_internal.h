/* ops_internal.h — shared machinery of the CPU kernels (not a public API):
 * the phase/task runner that executes a list of parallel loops inside ONE
 * wake of the pool (a barrier separates phases), and the matmul job engine
 * used by every linear layer. */
#ifndef TT_CPU_OPS_INTERNAL_H
#define TT_CPU_OPS_INTERNAL_H

#include "ops.h"
#include "simd.h"

/* A task is a loop of n independent chunks: fn(arg, i, tid) for i in [0,n).
 * tid selects the caller's per-thread scratch; it never changes results. */
typedef void (*tt_task_fn)(void *arg, int64_t i, int tid);
typedef struct {
    tt_task_fn fn;
    void *arg;
    int64_t n;
} tt_task;

#define TT_MAX_TASKS 8
#define TT_MAX_PHASES 4
/* The chunks of all tasks of one phase are handed out together; phase p+1
 * starts after every chunk of phase p has finished. */
typedef struct {
    int n_tasks;
    tt_task t[TT_MAX_TASKS];
} tt_phase;

void tt_cpu_run(tt_cpu *cpu, const tt_phase *phases, int n_phases);
/* one task, one phase */
void tt_cpu_run1(tt_cpu *cpu, tt_task_fn fn, void *arg, int64_t n);

static inline float *tt_cpu_tscratch(const tt_cpu *cpu, int tid) {
    return cpu->tscratch + (size_t)tid * cpu->tscratch_floats;
}

/* ---- matmul engine: C(M,N) (+)= sum over segments of A_s(M,K_s) . B_s(K_s,N) ----
 * A_s element (i,k) is A[i*lda + k] (transA = 0) or A[k*lda + i] (transA = 1);
 * B_s element (k,j) is B[k*ldb + j] (transB = 0) or B[j*ldb + k] (transB = 1).
 * Initial value of C: its old contents if accumulate, else
 * bias[j] (if bias) + R[i*ldr + j] (if R). The K dimension of all segments is
 * one chain: every output element is acc = init, then acc += a*b for every k
 * of every segment in order — independent of tiling and thread count.
 *
 * An op runs a matmul in two phases of one pool wake: phase 1 packs B into
 * shared scratch (tt_mm_pack_task, tt_mm_pack_chunks), phase 2 computes the
 * output blocks (tt_mm_task, tt_mm_units). tt_mm_plan(job, pb) lays the
 * packed B out at pb and returns the floats it uses (tt_mm_packed_floats). */
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
    /* filled by tt_mm_plan */
    int mc, nc, mb, nb, npanel;
    float *pb;             /* packed B, segment s at pb + seg_off[s] */
    size_t seg_off[3];
    int64_t pack_chunks;   /* sum over segments of K blocks x panels */
    tt_cpu *cpu;
} tt_mm_job;

/* plans blocking and the packed-B layout at pb; returns floats of pb used */
size_t tt_mm_plan(tt_mm_job *j, tt_cpu *cpu, float *pb);
/* packed-B floats a job of this shape needs (without planning) */
size_t tt_mm_packed_floats(int N, int K_total);
static inline int64_t tt_mm_units(const tt_mm_job *j) { return (int64_t)j->mb * j->nb; }
void tt_mm_pack_task(void *arg, int64_t chunk, int tid);
void tt_mm_task(void *arg, int64_t unit, int tid);

/* column sums: db[j] += sum_i dout[i*ld + j], chunks of TT_COLSUM_W columns */
typedef struct {
    float *db;
    const float *dout;
    size_t ld;
    int N, OC;
} tt_colsum_job;
#define TT_COLSUM_W (4 * TT_VW)
static inline int64_t tt_colsum_chunks(int OC) { return (OC + TT_COLSUM_W - 1) / TT_COLSUM_W; }
void tt_colsum_task(void *arg, int64_t chunk, int tid);

#endif
