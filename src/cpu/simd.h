/* simd.h — one SIMD source for every ISA, through GCC/Clang vector
 * extensions. TT_VW floats per vector: 16 with AVX-512, 8 with AVX/AVX2,
 * 4 with SSE, NEON and WebAssembly SIMD128 (or a plain scalar fallback
 * that the compiler still vectorises where it can). Kernels are written once
 * against tt_vf; the compiler emits the instructions of the target. */
#ifndef TT_SIMD_H
#define TT_SIMD_H

#include <string.h>

#if defined(__AVX512F__)
#define TT_VW 16
#define TT_ISA "avx512"
#elif defined(__AVX__)
#define TT_VW 8
#if defined(__FMA__)
#define TT_ISA "avx2+fma"
#else
#define TT_ISA "avx"
#endif
#elif defined(__wasm_simd128__)
#define TT_VW 4
#define TT_ISA "wasm-simd128"
#elif defined(__ARM_NEON) || defined(__aarch64__)
#define TT_VW 4
#define TT_ISA "neon"
#elif defined(__SSE2__)
#define TT_VW 4
#define TT_ISA "sse2"
#else
#define TT_VW 4
#define TT_ISA "generic"
#endif

/* full unrolling of a loop over a compile-time count (register tiles) */
#if defined(__clang__)
#define TT_UNROLL _Pragma("unroll")
#elif defined(__GNUC__)
#define TT_UNROLL _Pragma("GCC unroll 16")
#else
#define TT_UNROLL
#endif

typedef float tt_vf __attribute__((vector_size(TT_VW * 4)));

/* unaligned load/store (memcpy compiles to one vector move) */
static inline tt_vf tt_vload(const float *p) { tt_vf v; memcpy(&v, p, sizeof v); return v; }
static inline void tt_vstore(float *p, tt_vf v) { memcpy(p, &v, sizeof v); }
static inline float tt_vsum(tt_vf v) {
    float s = 0.0f;
    for (int i = 0; i < TT_VW; i++) s += v[i];
    return s;
}

/* tt_vsqrt: the square root of each lane, correctly rounded as IEEE 754
 * requires (the same bits as sqrtf per lane); one instruction where the ISA
 * has it, sqrtf lane by lane elsewhere. */
#if defined(__AVX512F__) || defined(__AVX__)
#include <immintrin.h>
#endif
#if defined(__AVX512F__)
static inline tt_vf tt_vsqrt(tt_vf x) { return (tt_vf)_mm512_sqrt_ps((__m512)x); }
#elif defined(__AVX__)
static inline tt_vf tt_vsqrt(tt_vf x) { return (tt_vf)_mm256_sqrt_ps((__m256)x); }
#else
#include <math.h>
static inline tt_vf tt_vsqrt(tt_vf x) {
    for (int i = 0; i < TT_VW; i++) x[i] = sqrtf(x[i]);
    return x;
}
#endif

/* tt_vtranspose(r): r[i][l] <- r[l][i], TT_VW rows of TT_VW floats, in
 * registers (values only move). log2(TT_VW) stages; the stage of block size b
 * swaps, in each 2b x 2b sub-block, the b x b block above the diagonal with
 * the one below it: (row i, lane l) with bit b of i != bit b of l goes to
 * (i ^ b, l ^ b), so after every stage each bit of the row index has changed
 * places with that bit of the lane index. TT_HAVE_VTRANSPOSE is 0 where the
 * compiler lacks __builtin_shufflevector (callers then copy lane by lane). */
#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 12)
#define TT_HAVE_VTRANSPOSE 1
/* lane l of the new rows i (bit b of i clear) and i + b, from x = r[i], y = r[i+b] */
#define TT_TLO(l, b, n) (((l) & (b)) ? (n) + (l) - (b) : (l))
#define TT_THI(l, b, n) (((l) & (b)) ? (n) + (l) : (l) + (b))
#define TT_T4(F, b, n) F(0, b, n), F(1, b, n), F(2, b, n), F(3, b, n)
#define TT_T8(F, b, n) TT_T4(F, b, n), F(4, b, n), F(5, b, n), F(6, b, n), F(7, b, n)
#define TT_T16(F, b, n)                                                                                     \
    TT_T8(F, b, n), F(8, b, n), F(9, b, n), F(10, b, n), F(11, b, n), F(12, b, n), F(13, b, n), F(14, b, n), \
        F(15, b, n)
#if TT_VW == 16
#define TT_TIDX(F, b) TT_T16(F, b, 16)
#elif TT_VW == 8
#define TT_TIDX(F, b) TT_T8(F, b, 8)
#else
#define TT_TIDX(F, b) TT_T4(F, b, 4)
#endif
#define TT_TSTAGE(r, b)                                                        \
    TT_UNROLL for (int i_ = 0; i_ < TT_VW; i_++)                                         \
        if (!(i_ & (b))) {                                                     \
            tt_vf x_ = r[i_], y_ = r[i_ + (b)];                                \
            r[i_] = __builtin_shufflevector(x_, y_, TT_TIDX(TT_TLO, b));       \
            r[i_ + (b)] = __builtin_shufflevector(x_, y_, TT_TIDX(TT_THI, b)); \
        }
static inline void tt_vtranspose(tt_vf r[TT_VW]) {
    TT_TSTAGE(r, 1)
    TT_TSTAGE(r, 2)
#if TT_VW >= 8
    TT_TSTAGE(r, 4)
#endif
#if TT_VW >= 16
    TT_TSTAGE(r, 8)
#endif
}
#else
#define TT_HAVE_VTRANSPOSE 0
#endif

#endif
