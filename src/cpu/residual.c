/* residual.c — the residual connection out = inp1 + inp2, forward and
 * backward (ops.h). The training forward fuses it into the output
 * projections (tt_matmul_residual_forward, matmul.c); these stand-alone
 * forms serve the sampler and the tests. */
#include "ops_internal.h"

typedef struct {
    float *a, *b;
    const float *x, *y;
    size_t n;
} res_ctx;

static void fwd_task(void *arg, int64_t chunk, int tid) {
    (void)tid;
    res_ctx *r = arg;
    size_t lo = (size_t)chunk * TT_ELEM_CHUNK, hi = TT_MIN(r->n, lo + TT_ELEM_CHUNK), i = lo;
    for (; i + TT_VW <= hi; i += TT_VW) tt_vstore(r->a + i, tt_vload(r->x + i) + tt_vload(r->y + i));
    for (; i < hi; i++) r->a[i] = r->x[i] + r->y[i];
}

void tt_residual_forward(tt_cpu *cpu, float *out, const float *inp1, const float *inp2, size_t n) {
    res_ctx r = {out, NULL, inp1, inp2, n};
    tt_cpu_run1(cpu, fwd_task, &r, tt_n_chunks(n, TT_ELEM_CHUNK));
}

static void bwd_task(void *arg, int64_t chunk, int tid) {
    (void)tid;
    res_ctx *r = arg;
    size_t lo = (size_t)chunk * TT_ELEM_CHUNK, hi = TT_MIN(r->n, lo + TT_ELEM_CHUNK);
    if (r->a) tt_vec_add_inplace(r->a + lo, r->x + lo, (int)(hi - lo));
    if (r->b) tt_vec_add_inplace(r->b + lo, r->x + lo, (int)(hi - lo));
}

void tt_residual_backward(tt_cpu *cpu, float *dinp1, float *dinp2, const float *dout, size_t n) {
    res_ctx r = {dinp1, dinp2, dout, NULL, n};
    tt_cpu_run1(cpu, bwd_task, &r, tt_n_chunks(n, TT_ELEM_CHUNK));
}
