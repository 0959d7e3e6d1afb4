/* crossentropy.c — fused softmax + cross-entropy over the logits, forward
 * (per-row losses and their mean) and backward (dlogits), in one pass per
 * row (ops.h). The logits themselves come from the tied head, a matmul
 * (tt_head_forward in matmul.c). */
#include <math.h>
#include <string.h>

#include "ops_internal.h"

typedef struct {
    float *losses, *dlogits;
    const float *logits;
    const int32_t *targets;
    int N, V, rows;
    float dscale;
} ce_ctx;

static void ce_task(void *arg, int64_t chunk, int tid) {
    (void)tid;
    ce_ctx *c = arg;
    int V = c->V;
    int r0 = (int)chunk * c->rows, r1 = TT_MIN(c->N, r0 + c->rows);
    const tt_vf ninf = tt_vdup(-INFINITY);
    for (int r = r0; r < r1; r++) {
        const float *x = c->logits + (size_t)r * V;
        int tgt = c->targets[r];
        /* max */
        tt_vf vm = ninf;
        int i = 0;
        for (; i + TT_VW <= V; i += TT_VW) vm = tt_vmax(vm, tt_vload(x + i));
        float m = tt_vhmax(vm);
        for (; i < V; i++) m = x[i] > m ? x[i] : m;
        /* sum of exp, through padded vectors for the tail (exp(-inf) = 0) */
        tt_vf vs = tt_vdup(0.0f);
        for (i = 0; i + TT_VW <= V; i += TT_VW) vs += tt_vexp(tt_vload(x + i) - m);
        if (i < V) {
            float buf[TT_VW];
            for (int k = 0; k < TT_VW; k++) buf[k] = i + k < V ? x[i + k] : -INFINITY;
            vs += tt_vexp(tt_vload(buf) - m);
        }
        float sum = tt_vsum(vs);
        float lse = m + logf(sum);
        float xt = x[tgt];
        if (c->losses) c->losses[r] = lse - xt;
        if (c->dlogits) {
            float *d = c->dlogits + (size_t)r * V;
            float inv = c->dscale / sum;
            for (i = 0; i + TT_VW <= V; i += TT_VW) tt_vstore(d + i, tt_vexp(tt_vload(x + i) - m) * inv);
            if (i < V) {
                float buf[TT_VW] = {0};
                memcpy(buf, x + i, (size_t)(V - i) * sizeof(float));
                tt_vstore(buf, tt_vexp(tt_vload(buf) - m) * inv);
                memcpy(d + i, buf, (size_t)(V - i) * sizeof(float));
            }
            d[tgt] -= c->dscale;
        }
    }
}

static inline int ce_rows(int V) { return TT_MAX(1, 4096 / TT_MAX(V, 1)); }

float tt_crossentropy_forward(tt_cpu *cpu, float *losses, float *dlogits, const float *logits, const int32_t *targets,
                              int N, int V, float dscale) {
    ce_ctx c = {losses, dlogits, logits, targets, N, V, ce_rows(V), dscale};
    tt_cpu_run1(cpu, ce_task, &c, tt_n_chunks((size_t)N, (size_t)c.rows));
    double s = 0.0;
    for (int i = 0; i < N; i++) s += losses[i];
    return (float)(s / N);
}

void tt_crossentropy_backward(tt_cpu *cpu, float *dlogits, const float *logits, const int32_t *targets, int N, int V,
                              float dscale) {
    ce_ctx c = {NULL, dlogits, logits, targets, N, V, ce_rows(V), dscale};
    tt_cpu_run1(cpu, ce_task, &c, tt_n_chunks((size_t)N, (size_t)c.rows));
}
