/* embedding.c — token + position embedding, forward and backward (ops.h).
 * The backward scatter-adds into dwte by vocabulary rows: each chunk owns
 * a range of rows and scans the tokens in (b,t) order, so every row gets its
 * contributions in a fixed order and no two chunks write the same row. */
#include <string.h>

#include "ops_internal.h"

#define VROWS 4 /* vocabulary rows per chunk of the dwte scatter-add */
#define TROWS 4 /* positions per chunk of dwpe */

typedef struct {
    float *out;
    const int32_t *inp;
    const float *wte, *wpe;
    int B, T, C, V, rows;
    float *dwte, *dwpe;
    const float *dout;
} emb_ctx;

static void fwd_task(void *arg, int64_t chunk, int tid) {
    (void)tid;
    emb_ctx *e = arg;
    int N = e->B * e->T, C = e->C;
    int r0 = (int)chunk * e->rows, r1 = TT_MIN(N, r0 + e->rows);
    for (int r = r0; r < r1; r++) {
        float *o = e->out + (size_t)r * C;
        const float *a = e->wte + (size_t)e->inp[r] * C, *b = e->wpe + (size_t)(r % e->T) * C;
        int i = 0;
        for (; i + TT_VW <= C; i += TT_VW) tt_vstore(o + i, tt_vload(a + i) + tt_vload(b + i));
        for (; i < C; i++) o[i] = a[i] + b[i];
    }
}

void tt_embedding_forward(tt_cpu *cpu, float *out, const int32_t *inp, const float *wte, const float *wpe, int B, int T,
                          int C) {
    emb_ctx e = {out, inp, wte, wpe, B, T, C, 0, tt_rows_per_chunk(C), NULL, NULL, NULL};
    tt_cpu_run1(cpu, fwd_task, &e, tt_n_chunks((size_t)B * T, (size_t)e.rows));
}

/* Work is O(B*T*C) plus a scan of the tokens per chunk. */
static void dwte_task(void *arg, int64_t chunk, int tid) {
    (void)tid;
    emb_ctx *e = arg;
    int v0 = (int)chunk * VROWS, v1 = TT_MIN(e->V, v0 + VROWS);
    int N = e->B * e->T, C = e->C;
    for (int r = 0; r < N; r++) {
        int v = e->inp[r];
        if (v >= v0 && v < v1) tt_vec_add_inplace(e->dwte + (size_t)v * C, e->dout + (size_t)r * C, C);
    }
}

static void dwpe_task(void *arg, int64_t chunk, int tid) {
    (void)tid;
    emb_ctx *e = arg;
    int t0 = (int)chunk * TROWS, t1 = TT_MIN(e->T, t0 + TROWS);
    for (int t = t0; t < t1; t++)
        for (int b = 0; b < e->B; b++)
            tt_vec_add_inplace(e->dwpe + (size_t)t * e->C, e->dout + ((size_t)b * e->T + t) * e->C, e->C);
}

void tt_embedding_backward(tt_cpu *cpu, float *dwte, float *dwpe, const float *dout, const int32_t *inp, int B, int T,
                           int C, int V) {
    emb_ctx e = {NULL, inp, NULL, NULL, B, T, C, V, 0, dwte, dwpe, dout};
    tt_phase ph = {0};
    if (dwte) ph.t[ph.n_tasks++] = (tt_task){dwte_task, &e, (V + VROWS - 1) / VROWS};
    if (dwpe) ph.t[ph.n_tasks++] = (tt_task){dwpe_task, &e, (T + TROWS - 1) / TROWS};
    if (ph.n_tasks) tt_cpu_run(cpu, &ph, 1);
}
