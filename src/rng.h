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
    TT_STREAM_TEST = 0x4      /* tests */
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

#endif
