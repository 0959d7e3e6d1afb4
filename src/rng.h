/* rng.h — counter-based random numbers (Philox4x32-10, Salmon et al. 2011).
 *
 * Every random value in tinytrain is a pure function of (seed, stream, index):
 * no generator state, so the same seed gives bit-identical weights and batches
 * on every backend, thread count and platform, in any order of generation.
 * Streams in use are listed below; index is the element / draw number. */
#ifndef TT_RNG_H
#define TT_RNG_H

#include <stdint.h>

enum {
    TT_STREAM_INIT = 0x100,   /* + tensor index: weight init */
    TT_STREAM_BATCH = 0x1,    /* training batch offsets: index = global sequence number */
    TT_STREAM_VAL = 0x2,      /* validation batch offsets */
    TT_STREAM_SAMPLE = 0x3,   /* token sampling */
    TT_STREAM_TEST = 0x4,     /* tests */
    TT_STREAM_DROPOUT = 0x5   /* dropout keys: index = tt_dropout_site_index(...) */
};

/* Four 32-bit words for (seed, stream, index). */
void tt_philox(uint64_t seed, uint32_t stream, uint64_t index, uint32_t out[4]);
/* 64 random bits. */
uint64_t tt_rand_u64(uint64_t seed, uint32_t stream, uint64_t index);
/* Uniform in [0, 1) with 24 bits (exactly representable as float). */
float tt_rand_uniform(uint64_t seed, uint32_t stream, uint64_t index);
/* Uniform integer in [0, n) (n > 0), by 64x64 multiply-high (bias < 2^-32). */
uint64_t tt_rand_below(uint64_t seed, uint32_t stream, uint64_t index, uint64_t n);
/* Standard normal (Box-Muller in double, rounded to float). */
float tt_rand_normal(uint64_t seed, uint32_t stream, uint64_t index);

/* Dropout masks. One mask per (micro-batch, layer, site): the host draws a
 * 64-bit key (k0, k1) = tt_philox(seed, TT_STREAM_DROPOUT, site_index)[0..1]
 * and every backend (C, WGSL) derives element i's bits with the same 32-bit
 * integer hash, so CPU, WebGPU and WASM drop the same elements:
 *   site_index = ((step * n_micro + micro) * (n_layer + 1) + layer) * 4 + site
 *   (embedding: layer = n_layer, site TT_DROP_EMBED)
 *   bits = tt_dropout_bits(k0, k1, i)
 *   keep  <=>  (bits >> 8) >= threshold,  threshold = tt_dropout_threshold(p)
 *   kept values are multiplied by scale = 1.0f / (1.0f - p) (float).
 * Element index i within a site: (B,T,C) tensors (b*T + t)*C + c; attention
 * probabilities (B,NH,T,T) ((b*NH + h)*T + t_query)*T + t_key. */
enum { TT_DROP_ATTN = 0, TT_DROP_ATTN_OUT = 1, TT_DROP_MLP_OUT = 2, TT_DROP_EMBED = 3 };
typedef struct {
    uint32_t k0, k1;
} tt_dropout_key;
tt_dropout_key tt_dropout_key_at(uint64_t seed, int64_t step, int n_micro, int micro, int n_layer, int layer, int site);
/* round(p * 2^24): P(keep) = 1 - threshold / 2^24 */
uint32_t tt_dropout_threshold(float p);
static inline uint32_t tt_dropout_mix(uint32_t x) {
    x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; x ^= x >> 16;
    return x;
}
static inline uint32_t tt_dropout_bits(tt_dropout_key k, uint32_t i) {
    return tt_dropout_mix(tt_dropout_mix(i ^ k.k0) ^ k.k1);
}
static inline int tt_dropout_keep(tt_dropout_key k, uint32_t threshold, uint32_t i) {
    return (tt_dropout_bits(k, i) >> 8) >= threshold;
}

#endif
