/* layernorm.c — LayerNorm (epsilon eps, the model's tt_config_ln_eps), forward and backward (ops.h). The
 * forward keeps its statistics in one buffer, mean then rstd, as the WebGPU
 * backend does. The backward writes each row chunk's partial dweight/dbias
 * to shared scratch and sums the partials in chunk order in a second phase
 * (a fixed reduction order for any thread count). */
#include <math.h>
#include <string.h>

#include "ops_internal.h"

#define LN_ROWS 32 /* rows per chunk of the backward's partial sums */
#define LN_COLS (4 * TT_VW)

/* sum of a row in a fixed order: TT_VW lanes, then the lanes, then the tail */
static inline float row_sum(const float *x, int n) {
    tt_vf acc = tt_vdup(0.0f);
    int i = 0;
    for (; i + TT_VW <= n; i += TT_VW) acc += tt_vload(x + i);
    float s = tt_vsum(acc);
    for (; i < n; i++) s += x[i];
    return s;
}

typedef struct {
    float *out, *mean, *rstd;
    const float *inp, *weight, *bias;
    int N, C, rows;
    float eps;
    /* backward */
    float *dinp, *dweight, *dbias, *partial;
    const float *dout;
    const float *cmean, *crstd;
    int accumulate, n_row_chunks;
} ln_ctx;

static void fwd_task(void *arg, int64_t chunk, int tid) {
    (void)tid;
    ln_ctx *l = arg;
    int C = l->C;
    int r0 = (int)chunk * l->rows, r1 = TT_MIN(l->N, r0 + l->rows);
    for (int r = r0; r < r1; r++) {
        const float *x = l->inp + (size_t)r * C;
        float m = row_sum(x, C) / (float)C;
        tt_vf acc = tt_vdup(0.0f);
        int i = 0;
        for (; i + TT_VW <= C; i += TT_VW) {
            tt_vf d = tt_vload(x + i) - m;
            acc += d * d;
        }
        float var = tt_vsum(acc);
        for (; i < C; i++) var += (x[i] - m) * (x[i] - m);
        var /= (float)C;
        float s = 1.0f / sqrtf(var + l->eps);
        float *o = l->out + (size_t)r * C;
        i = 0;
        for (; i + TT_VW <= C; i += TT_VW)
            tt_vstore(o + i, (tt_vload(x + i) - m) * s * tt_vload(l->weight + i) + tt_vload(l->bias + i));
        for (; i < C; i++) o[i] = (x[i] - m) * s * l->weight[i] + l->bias[i];
        l->mean[r] = m;
        l->rstd[r] = s;
    }
}

void tt_layernorm_forward(tt_cpu *cpu, float *out, float *stats, const float *inp, const float *weight,
                          const float *bias, int N, int C, float eps) {
    ln_ctx l;
    memset(&l, 0, sizeof l);
    l.eps = eps;
    l.out = out, l.mean = stats, l.rstd = stats + N, l.inp = inp, l.weight = weight, l.bias = bias;
    l.N = N, l.C = C, l.rows = tt_rows_per_chunk(C);
    tt_cpu_run1(cpu, fwd_task, &l, tt_n_chunks((size_t)N, (size_t)l.rows));
}

size_t tt_layernorm_backward_scratch(int N, int C) {
    return (size_t)((N + LN_ROWS - 1) / LN_ROWS) * 2 * (size_t)C;
}

/* phase 1: dinp for LN_ROWS rows, and that chunk's partial dweight/dbias */
static void bwd_rows_task(void *arg, int64_t chunk, int tid) {
    (void)tid;
    ln_ctx *l = arg;
    int C = l->C;
    int r0 = (int)chunk * LN_ROWS, r1 = TT_MIN(l->N, r0 + LN_ROWS);
    float *pw = l->partial + (size_t)chunk * 2 * C, *pb = pw + C;
    memset(pw, 0, 2 * (size_t)C * sizeof(float));
    for (int r = r0; r < r1; r++) {
        const float *x = l->inp + (size_t)r * C, *dy = l->dout + (size_t)r * C, *w = l->weight;
        float m = l->cmean[r], s = l->crstd[r];
        /* a = mean(dy*w), b = mean(dy*w*xhat) */
        tt_vf va = tt_vdup(0.0f), vb = tt_vdup(0.0f);
        int i = 0;
        for (; i + TT_VW <= C; i += TT_VW) {
            tt_vf xh = (tt_vload(x + i) - m) * s;
            tt_vf dn = tt_vload(dy + i) * tt_vload(w + i);
            va += dn;
            vb += dn * xh;
            tt_vstore(pw + i, tt_vload(pw + i) + tt_vload(dy + i) * xh);
            tt_vstore(pb + i, tt_vload(pb + i) + tt_vload(dy + i));
        }
        float a = tt_vsum(va), b = tt_vsum(vb);
        for (; i < C; i++) {
            float xh = (x[i] - m) * s, dn = dy[i] * w[i];
            a += dn;
            b += dn * xh;
            pw[i] += dy[i] * xh;
            pb[i] += dy[i];
        }
        a /= (float)C;
        b /= (float)C;
        float *dx = l->dinp + (size_t)r * C;
        i = 0;
        if (l->accumulate) {
            for (; i + TT_VW <= C; i += TT_VW) {
                tt_vf xh = (tt_vload(x + i) - m) * s;
                tt_vf dn = tt_vload(dy + i) * tt_vload(w + i);
                tt_vstore(dx + i, tt_vload(dx + i) + (dn - a - xh * b) * s);
            }
            for (; i < C; i++) {
                float xh = (x[i] - m) * s, dn = dy[i] * w[i];
                dx[i] += (dn - a - xh * b) * s;
            }
        } else {
            for (; i + TT_VW <= C; i += TT_VW) {
                tt_vf xh = (tt_vload(x + i) - m) * s;
                tt_vf dn = tt_vload(dy + i) * tt_vload(w + i);
                tt_vstore(dx + i, (dn - a - xh * b) * s);
            }
            for (; i < C; i++) {
                float xh = (x[i] - m) * s, dn = dy[i] * w[i];
                dx[i] = (dn - a - xh * b) * s;
            }
        }
    }
}

/* phase 2: dweight/dbias += the chunk partials, summed in chunk order */
static void bwd_cols_task(void *arg, int64_t chunk, int tid) {
    (void)tid;
    ln_ctx *l = arg;
    int C = l->C;
    int c0 = (int)chunk * LN_COLS, c1 = TT_MIN(C, c0 + LN_COLS);
    for (int c = c0; c < c1; c++) {
        float sw = 0.0f, sb = 0.0f;
        for (int k = 0; k < l->n_row_chunks; k++) {
            sw += l->partial[(size_t)k * 2 * C + c];
            sb += l->partial[(size_t)k * 2 * C + C + c];
        }
        if (l->dweight) l->dweight[c] += sw;
        if (l->dbias) l->dbias[c] += sb;
    }
}

void tt_layernorm_backward(tt_cpu *cpu, float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                           const float *weight, const float *stats, int N, int C, int accumulate_dinp) {
    if (!tt_cpu_need(cpu, tt_layernorm_backward_scratch(N, C), 0, "layernorm backward")) return;
    ln_ctx l;
    memset(&l, 0, sizeof l);
    l.dinp = dinp, l.dweight = dweight, l.dbias = dbias, l.dout = dout, l.inp = inp, l.weight = weight;
    l.cmean = stats, l.crstd = stats + N, l.N = N, l.C = C, l.accumulate = accumulate_dinp;
    l.n_row_chunks = (N + LN_ROWS - 1) / LN_ROWS;
    l.partial = cpu->scratch;
    tt_phase ph[2] = {{1, {{bwd_rows_task, &l, l.n_row_chunks}}, 0}, {1, {{bwd_cols_task, &l, (C + LN_COLS - 1) / LN_COLS}}, 0}};
    tt_cpu_run(cpu, ph, (dweight || dbias) ? 2 : 1);
}
