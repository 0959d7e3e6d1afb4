/* ops_internal.h — helpers shared by the CPU op files (not a public API):
 * how element-wise and row-wise work is cut into chunks (sizes depend only
 * on the shapes, never on the thread count) and two SIMD row primitives. */
#ifndef TT_CPU_OPS_INTERNAL_H
#define TT_CPU_OPS_INTERNAL_H

#include "ops.h"
#include "simd.h"
#include "vmath.h"

#define TT_ELEM_CHUNK 8192 /* floats per chunk of element-wise work */

static inline int64_t tt_n_chunks(size_t n, size_t chunk) { return (int64_t)((n + chunk - 1) / chunk); }

/* rows per chunk for row-wise ops: about TT_ELEM_CHUNK floats */
static inline int tt_rows_per_chunk(int C) { return TT_MAX(1, TT_ELEM_CHUNK / TT_MAX(C, 1)); }

/* d[i] += s[i] */
static inline void tt_vec_add_inplace(float *d, const float *s, int C) {
    int i = 0;
    for (; i + TT_VW <= C; i += TT_VW) tt_vstore(d + i, tt_vload(d + i) + tt_vload(s + i));
    for (; i < C; i++) d[i] += s[i];
}

/* The matmul engine (matmul_engine.c) for other op files: C (M,N) = (or += when
 * accumulate) op(A) (M,K) . op(B) (K,N), where op(A)(i,k) = A[i*lda + k], or
 * A[k*lda + i] when transA, and op(B)(k,j) = B[k*ldb + j], or B[j*ldb + k]
 * when transB. Every output is one fma chain over k in order, whatever the
 * threads. Shared scratch: tt_mm_gemm_scratch(N, K). */
void tt_mm_gemm(tt_cpu *cpu, float *C, size_t ldc, int accumulate, const float *A, size_t lda, int transA,
                const float *B, size_t ldb, int transB, int M, int N, int K, const char *op);
size_t tt_mm_gemm_scratch(int N, int K);

#endif
