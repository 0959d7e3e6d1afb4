/* lora.c — the lora op of the CPU backend (ops.h): a LoRA adapter's
 * contribution to a projection, out += s * (x A) B, and its backward, as four
 * products on the matmul engine (tt_mm_gemm, ops_internal.h) plus a scale of
 * the small (N,R) intermediate. The forward keeps h = s * (x A) for the
 * backward (dB = h^T dOut needs it; recomputing it would cost the x A product
 * again). Deterministic like every op: the engine's chains do not depend on
 * the thread count, the scale pass is element-wise. */
#include "ops_internal.h"

static void scale_inplace(float *x, size_t n, float s) {
    size_t i = 0;
    tt_vf sv = tt_vdup(s);
    for (; i + TT_VW <= n; i += TT_VW) tt_vstore(x + i, tt_vload(x + i) * sv);
    for (; i < n; i++) x[i] *= s;
}

size_t tt_lora_scratch(int N, int C, int OC, int R) {
    size_t s[6] = {tt_mm_gemm_scratch(R, C),  tt_mm_gemm_scratch(OC, R), tt_mm_gemm_scratch(OC, N),
                   tt_mm_gemm_scratch(R, OC), tt_mm_gemm_scratch(R, N),  tt_mm_gemm_scratch(C, R)};
    size_t m = 0;
    for (int i = 0; i < 6; i++) m = TT_MAX(m, s[i]);
    return m;
}

void tt_lora_forward(tt_cpu *cpu, float *out, float *h, const float *inp, const float *a, const float *b, float scale,
                     int N, int C, int OC, int R) {
    /* h (N,R) = inp (N,C) . a (C,R), then h *= scale */
    tt_mm_gemm(cpu, h, (size_t)R, 0, inp, (size_t)C, 0, a, (size_t)R, 0, N, R, C, "lora forward");
    scale_inplace(h, (size_t)N * R, scale);
    /* out (N,OC) += h (N,R) . b (R,OC) */
    tt_mm_gemm(cpu, out, (size_t)OC, 1, h, (size_t)R, 0, b, (size_t)OC, 0, N, OC, R, "lora forward");
}

void tt_lora_backward(tt_cpu *cpu, float *dinp, float *da, float *db, float *dh, const float *dout, const float *inp,
                      const float *a, const float *b, const float *h, float scale, int N, int C, int OC, int R) {
    /* db (R,OC) += h^T (R,N) . dout (N,OC): A(i=r, k=n) = h[n*R + r] */
    if (db) tt_mm_gemm(cpu, db, (size_t)OC, 1, h, (size_t)R, 1, dout, (size_t)OC, 0, R, OC, N, "lora backward");
    /* dh (N,R) = scale * dout (N,OC) . b^T: B(k=oc, j=r) = b[r*OC + oc] */
    tt_mm_gemm(cpu, dh, (size_t)R, 0, dout, (size_t)OC, 0, b, (size_t)OC, 1, N, R, OC, "lora backward");
    scale_inplace(dh, (size_t)N * R, scale);
    /* da (C,R) += inp^T (C,N) . dh (N,R): A(i=c, k=n) = inp[n*C + c] */
    if (da) tt_mm_gemm(cpu, da, (size_t)R, 1, inp, (size_t)C, 1, dh, (size_t)R, 0, C, R, N, "lora backward");
    /* dinp (N,C) += dh (N,R) . a^T: B(k=r, j=c) = a[c*R + r] */
    if (dinp) tt_mm_gemm(cpu, dinp, (size_t)C, 1, dh, (size_t)R, 0, a, (size_t)R, 1, N, C, R, "lora backward");
}
