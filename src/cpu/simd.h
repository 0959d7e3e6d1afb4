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
static inline tt_vf tt_vset1(float x) { return x - (tt_vf){0}; } /* broadcast; keeps -0 */
static inline float tt_vsum(tt_vf v) {
    float s = 0.0f;
    for (int i = 0; i < TT_VW; i++) s += v[i];
    return s;
}

#endif
