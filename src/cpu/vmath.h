/* vmath.h — vectorised float math on tt_vf (simd.h) for the CPU kernels:
 * exp and erf, written once with vector extensions (no per-ISA intrinsics).
 * Polynomial coefficients were fitted for tinytrain (Chebyshev interpolation
 * in 40-digit arithmetic with mpmath):
 *   exp:  e^r on |r| <= ln2/2, degree 6 (interp. error 2e-9), times 2^n
 *   erf:  |x| < 1:  x * P(x^2), degree 6 in x^2 (error 1.2e-9)
 *         1 <= |x| < 4: 1 - exp(-x^2) * R(x), R degree 10 in (x-2.5)/1.5
 *           (error 5e-8 in R, i.e. < 2e-8 in erf)
 *         |x| >= 4: +-1 (erfc(4) = 1.5e-8 is below half an ulp of 1)
 * Results are deterministic (pure arithmetic, same on every thread). */
#ifndef TT_VMATH_H
#define TT_VMATH_H

#include <stdint.h>

#include "config.h"
#include "simd.h"

typedef int32_t tt_vi __attribute__((vector_size(TT_VW * 4)));

/* broadcast: x - (+0) is exactly x for every x (also -0), so compilers fold
 * it into one broadcast (or a broadcast memory operand); simd.h's
 * tt_vdup computes (+0) + x, which costs an add and turns -0 into +0. */
static inline tt_vf tt_vdup(float x) { return x - (tt_vf){0}; }

static inline tt_vf tt_vbits_f(tt_vi x) { tt_vf r; memcpy(&r, &x, sizeof r); return r; }
static inline tt_vi tt_vbits_i(tt_vf x) { tt_vi r; memcpy(&r, &x, sizeof r); return r; }
/* mask ? a : b  (mask lanes are all-ones or zero, as vector comparisons give) */
static inline tt_vf tt_vselect(tt_vi mask, tt_vf a, tt_vf b) {
    return tt_vbits_f((tt_vbits_i(a) & mask) | (tt_vbits_i(b) & ~mask));
}
static inline tt_vf tt_vmax(tt_vf a, tt_vf b) { return tt_vselect(a > b, a, b); }
static inline tt_vf tt_vmin(tt_vf a, tt_vf b) { return tt_vselect(a < b, a, b); }
static inline tt_vf tt_vabs(tt_vf a) { return tt_vbits_f(tt_vbits_i(a) & ((tt_vi){0} + 0x7fffffff)); }
static inline float tt_vhmax(tt_vf v) {
    float m = v[0];
    for (int i = 1; i < TT_VW; i++) m = v[i] > m ? v[i] : m;
    return m;
}

/* the core of tt_vexp: e^x for x in [-87.33, 88], lanes of under zeroed */
static inline tt_vf tt_vexp_core(tt_vf x, tt_vi under) {
    /* n = round(x / ln2) through the 1.5*2^23 trick; r = x - n*ln2 (Cody-Waite) */
    const tt_vf magic = tt_vdup(12582912.0f);
    tt_vf t = x * 1.44269504088896341f + magic;
    tt_vi n = tt_vbits_i(t) - tt_vbits_i(magic);
    tt_vf nf = t - magic;
    tt_vf r = x - nf * 0.693145751953125f;
    r = r - nf * 1.42860682030941723212e-6f;
    tt_vf p = tt_vdup(0.001394110843f);
    p = p * r + 0.008375126398f;
    p = p * r + 0.0416663529f;
    p = p * r + 0.1666641551f;
    p = p * r + 0.5000000047f;
    p = p * r + 1.000000038f;
    p = p * r + 1.0f;
    tt_vf scale = tt_vbits_f((n + 127) << 23);
    return tt_vbits_f(tt_vbits_i(p * scale) & ~under);
}

/* e^x; 0 for x < -87.3 (and for -inf), saturates at e^88 */
static inline tt_vf tt_vexp(tt_vf x) {
    const tt_vf lo = tt_vdup(-87.33f), hi = tt_vdup(88.0f);
    tt_vi under = x < lo;
    return tt_vexp_core(tt_vmin(tt_vmax(x, lo), hi), under);
}

/* tt_vexp of arguments x <= 88 (the softmax's x = s - max <= 0) without
 * its clamps, which change nothing there (below -87.33 the lane is zeroed
 * either way): the same bits as tt_vexp for every such x that is not NaN */
static inline tt_vf tt_vexp_le88(tt_vf x) { return tt_vexp_core(x, x < tt_vdup(-87.33f)); }

/* erf(x) for a vector x and the factor e = exp(-x*x) (computed here and
 * returned through *ex2 when non-NULL: GELU's backward needs it too). */
static inline tt_vf tt_verf_ex(tt_vf x, tt_vf *ex2) {
    tt_vf ax = tt_vabs(x);
    tt_vf e = tt_vexp(-(x * x));
    if (ex2) *ex2 = e;
    /* |x| < 1 */
    tt_vf u = x * x;
    tt_vf p = tt_vdup(7.875875063e-5f);
    p = p * u - 0.0008016864287f;
    p = p * u + 0.005189087423f;
    p = p * u - 0.02685421201f;
    p = p * u + 0.1128359472f;
    p = p * u - 0.3761262667f;
    p = p * u + 1.128379166f;
    tt_vf small = ax * p;
    /* 1 <= |x| < 4 */
    tt_vf t = (tt_vmin(ax, tt_vdup(4.0f)) - 2.5f) * (1.0f / 1.5f);
    tt_vf q = tt_vdup(9.294974299e-5f);
    q = q * t - 0.0002451864515f;
    q = q * t + 0.0003764772747f;
    q = q * t - 0.0009162726026f;
    q = q * t + 0.002418384229f;
    q = q * t - 0.005611233637f;
    q = q * t + 0.01248669964f;
    q = q * t - 0.02699793742f;
    q = q * t + 0.05611062799f;
    q = q * t - 0.1115213905f;
    q = q * t + 0.2108063641f;
    tt_vf large = 1.0f - e * q;
    tt_vf r = tt_vselect(ax < 1.0f, small, tt_vselect(ax < 4.0f, large, tt_vdup(1.0f)));
    /* copy the sign of x */
    tt_vi sign = tt_vbits_i(x) & ((tt_vi){0} + (int32_t)0x80000000u);
    return tt_vbits_f(tt_vbits_i(r) | sign);
}

static inline tt_vf tt_verf(tt_vf x) { return tt_verf_ex(x, NULL); }

/* exact GELU and its derivative:
 *   gelu(x)  = 0.5 x (1 + erf(x / sqrt 2))
 *   gelu'(x) = 0.5 (1 + erf(x / sqrt 2)) + x exp(-x^2 / 2) / sqrt(2 pi) */
#define TT_GELU_S 0.70710678118654752f /* 1/sqrt(2) */
#define TT_GELU_P 0.39894228040143268f /* 1/sqrt(2 pi) */
static inline tt_vf tt_vgelu(tt_vf x) { return 0.5f * x * (1.0f + tt_verf(x * TT_GELU_S)); }
static inline tt_vf tt_vgelu_grad(tt_vf x) {
    tt_vf e;
    tt_vf erf = tt_verf_ex(x * TT_GELU_S, &e); /* e = exp(-x^2/2) */
    return 0.5f * (1.0f + erf) + x * e * TT_GELU_P;
}

/* GPT-2's GELU (Hugging Face "gelu_new"), the tanh form, and its derivative:
 *   gelu_tanh(x)  = 0.5 x (1 + tanh(u)) = x s,   u = sqrt(2/pi) (x + 0.044715 x^3),
 *                   s = sigmoid(2u) = 1 / (1 + e^(-2u))  (no cancellation near 0)
 *   gelu_tanh'(x) = s + x s (1 - s) 2 u',      u' = sqrt(2/pi) (1 + 3 * 0.044715 x^2),
 *                   s (1 - s) = e^(-2u) s^2
 * The derivative reads x clamped to [-30, 30], where it is exactly 0 or 1
 * in float (no inf * 0 for huge inputs). */
#define TT_GELU_TANH_K 0.79788456080286536f /* sqrt(2/pi) */
#define TT_GELU_TANH_A 0.044715f
static inline tt_vf tt_vgelu_tanh(tt_vf x) {
    tt_vf u = TT_GELU_TANH_K * (x + TT_GELU_TANH_A * x * x * x);
    return x / (1.0f + tt_vexp(-2.0f * u));
}
static inline tt_vf tt_vgelu_tanh_grad(tt_vf x) {
    x = tt_vmin(tt_vmax(x, tt_vdup(-30.0f)), tt_vdup(30.0f));
    tt_vf x2 = x * x;
    tt_vf u = TT_GELU_TANH_K * x * (1.0f + TT_GELU_TANH_A * x2);
    tt_vf e = tt_vexp(-2.0f * u);
    tt_vf s = 1.0f / (1.0f + e);
    tt_vf du = TT_GELU_TANH_K * (1.0f + (3.0f * TT_GELU_TANH_A) * x2);
    return s + 2.0f * x * ((e * s) * s) * du; /* s (1 - s) = e s^2: no cancellation as s -> 1 */
}

/* the MLP activation act (config.h tt_act) and its derivative */
static inline tt_vf tt_vact(tt_vf x, int act) { return act == TT_ACT_GELU_TANH ? tt_vgelu_tanh(x) : tt_vgelu(x); }
static inline tt_vf tt_vact_grad(tt_vf x, int act) {
    return act == TT_ACT_GELU_TANH ? tt_vgelu_tanh_grad(x) : tt_vgelu_grad(x);
}

#endif
