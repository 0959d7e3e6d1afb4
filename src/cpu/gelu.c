/* gelu.c — GELU, forward and backward (ops.h), element-wise: the exact form
 * 0.5 x (1 + erf(x / sqrt 2)) through vmath.h's vector erf, or GPT-2's tanh
 * form (act TT_ACT_GELU_TANH, vmath.h tt_vgelu_tanh). A tail
 * shorter than a vector goes through a zero-padded vector, so every element
 * takes the same arithmetic path. (The MLP itself uses the GELU fused into
 * the matmul epilogues of matmul_engine.c, bit-identical to these.) */
#include <string.h>

#include "ops_internal.h"

typedef struct {
    float *out;
    const float *inp, *dout;
    size_t n;
    int act;
} gelu_ctx;

static void fwd_task(void *arg, int64_t chunk, int tid) {
    (void)tid;
    gelu_ctx *g = arg;
    size_t lo = (size_t)chunk * TT_ELEM_CHUNK, hi = TT_MIN(g->n, lo + TT_ELEM_CHUNK);
    size_t i = lo;
    for (; i + TT_VW <= hi; i += TT_VW) {
        tt_vf x = tt_vload(g->inp + i);
        tt_vstore(g->out + i, tt_vact(x, g->act));
    }
    if (i < hi) {
        float buf[TT_VW] = {0};
        memcpy(buf, g->inp + i, (hi - i) * sizeof(float));
        tt_vf x = tt_vload(buf);
        tt_vstore(buf, tt_vact(x, g->act));
        memcpy(g->out + i, buf, (hi - i) * sizeof(float));
    }
}

void tt_gelu_forward(tt_cpu *cpu, float *out, const float *inp, size_t n, int act) {
    gelu_ctx g = {out, inp, NULL, n, act};
    tt_cpu_run1(cpu, fwd_task, &g, tt_n_chunks(n, TT_ELEM_CHUNK));
}

static void bwd_task(void *arg, int64_t chunk, int tid) {
    (void)tid;
    gelu_ctx *g = arg;
    size_t lo = (size_t)chunk * TT_ELEM_CHUNK, hi = TT_MIN(g->n, lo + TT_ELEM_CHUNK);
    size_t i = lo;
    for (; i + TT_VW <= hi; i += TT_VW) tt_vstore(g->out + i, tt_vact_grad(tt_vload(g->inp + i), g->act) * tt_vload(g->dout + i));
    if (i < hi) {
        float bx[TT_VW] = {0}, bd[TT_VW] = {0};
        memcpy(bx, g->inp + i, (hi - i) * sizeof(float));
        memcpy(bd, g->dout + i, (hi - i) * sizeof(float));
        tt_vstore(bx, tt_vact_grad(tt_vload(bx), g->act) * tt_vload(bd));
        memcpy(g->out + i, bx, (hi - i) * sizeof(float));
    }
}

void tt_gelu_backward(tt_cpu *cpu, float *dinp, const float *inp, const float *dout, size_t n, int act) {
    gelu_ctx g = {dinp, inp, dout, n, act};
    tt_cpu_run1(cpu, bwd_task, &g, tt_n_chunks(n, TT_ELEM_CHUNK));
}
