/* rng.c — Philox4x32-10 and the distributions built on it. */
#include "rng.h"

#include <math.h>

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

void tt_philox(uint64_t seed, uint32_t stream, uint64_t index, uint32_t out[4]) {
    uint32_t c0 = (uint32_t)index, c1 = (uint32_t)(index >> 32), c2 = stream, c3 = 0x7474u; /* "tt" */
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)PHILOX_M0 * c0;
        uint64_t p1 = (uint64_t)PHILOX_M1 * c2;
        uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
        uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
        c0 = n0; c1 = n1; c2 = n2; c3 = n3;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}

uint64_t tt_rand_u64(uint64_t seed, uint32_t stream, uint64_t index) {
    uint32_t o[4];
    tt_philox(seed, stream, index, o);
    return ((uint64_t)o[0] << 32) | o[1];
}

float tt_rand_uniform(uint64_t seed, uint32_t stream, uint64_t index) {
    return (float)(tt_rand_u64(seed, stream, index) >> 40) * (1.0f / 16777216.0f);
}

uint64_t tt_rand_below(uint64_t seed, uint32_t stream, uint64_t index, uint64_t n) {
    uint64_t x = tt_rand_u64(seed, stream, index);
    /* multiply-high of x * n */
    uint64_t xl = (uint32_t)x, xh = x >> 32, nl = (uint32_t)n, nh = n >> 32;
    uint64_t ll = xl * nl, lh = xl * nh, hl = xh * nl, hh = xh * nh;
    uint64_t mid = (ll >> 32) + (uint32_t)lh + (uint32_t)hl;
    return hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
}

float tt_rand_normal(uint64_t seed, uint32_t stream, uint64_t index) {
    uint32_t o[4];
    tt_philox(seed, stream, index, o);
    /* u1 in (0, 1], u2 in [0, 1), 53-bit */
    uint64_t a = ((uint64_t)o[0] << 21) ^ (o[1] >> 11);
    uint64_t b = ((uint64_t)o[2] << 21) ^ (o[3] >> 11);
    double u1 = ((double)(a & ((1ull << 53) - 1)) + 1.0) * (1.0 / 9007199254740992.0);
    double u2 = (double)(b & ((1ull << 53) - 1)) * (1.0 / 9007199254740992.0);
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

tt_dropout_key tt_dropout_key_at(uint64_t seed, int64_t step, int n_micro, int micro, int n_layer, int layer, int site) {
    uint64_t idx = (((uint64_t)step * (uint64_t)n_micro + (uint64_t)micro) * (uint64_t)(n_layer + 1) + (uint64_t)layer) * 4u +
                   (uint64_t)site;
    uint32_t o[4];
    tt_philox(seed, TT_STREAM_DROPOUT, idx, o);
    tt_dropout_key k = {o[0], o[1]};
    return k;
}

uint32_t tt_dropout_threshold(float p) {
    if (!(p > 0.0f)) return 0;
    if (p >= 1.0f) return 1u << 24;
    return (uint32_t)llround((double)p * 16777216.0);
}
