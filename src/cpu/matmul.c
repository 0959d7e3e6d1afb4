/* matmul.c — the linear-layer ops of the CPU backend (ops.h): matmul (plain,
 * + residual, + GELU), the fused q/k/v projection and the tied output head,
 * each a set of products on the engine (matmul_engine.c: packing, tiling,
 * threads, and why every output is one fma chain), and the single-row
 * forward (the sampler's one token) beside it. */
#include "matmul_engine.h"

/* ---- single-row forward: out (OC) = inp (C) . W (C,OC) + bias (+ R) ----
 * Column chunks of MV_COLS; each output column is the engine's chain
 * (init = bias + R, then += inp[k] * W[k][j] in k order), read straight from
 * the rows of W. Run inline below MV_PARALLEL multiply-adds, where waking the
 * pool costs more than the work. */
#define MV_COLS 256
#define MV_PARALLEL (1 << 15)

static void mv_task(void *arg, int64_t chunk, int tid) {
    (void)tid;
    const tt_mm_job *j = arg;
    const tt_mm_seg *sg = &j->seg[0];
    int j0 = (int)chunk * MV_COLS, n = TT_MIN(j->N - j0, MV_COLS), nv = n - n % TT_VW;
    float acc[MV_COLS + TT_VW] __attribute__((aligned(64)));
    for (int c = 0; c < n; c++) {
        acc[c] = j->bias ? j->bias[j0 + c] : 0.0f;
        if (j->R) acc[c] += j->R[j0 + c];
    }
    for (int k = 0; k < sg->K; k++) {
        const float *w = sg->B + (size_t)k * sg->ldb + j0;
        float x = sg->A[k];
        tt_vf xv = tt_vdup(x);
        int c = 0;
        for (; c < nv; c += TT_VW) tt_vstore(acc + c, tt_vload(acc + c) + xv * tt_vload(w + c));
        for (; c < n; c++) acc[c] += x * w[c];
    }
    memcpy(j->C + j0, acc, (size_t)n * sizeof(float));
    if (j->gelu_out) {
        for (int c = n; c < nv + TT_VW; c++) acc[c] = 0.0f;
        for (int c = 0; c < n; c += TT_VW) tt_vstore(acc + c, tt_vact(tt_vload(acc + c), j->act));
        memcpy(j->gelu_out + j0, acc, (size_t)n * sizeof(float));
    }
}

static void mv_run(tt_cpu *cpu, tt_mm_job *j) {
    int64_t chunks = (j->N + MV_COLS - 1) / MV_COLS;
    if ((int64_t)j->seg[0].K * j->N >= MV_PARALLEL) tt_cpu_run1(cpu, mv_task, j, chunks);
    else
        for (int64_t c = 0; c < chunks; c++) mv_task(j, c, 0);
}

/* ---- the linear-layer ops ---- */

static void mm_forward(tt_cpu *cpu, float *out, float *gelu_out, const float *inp, const float *weight, const float *bias,
                       const float *resid, int N, int C, int OC, int act, const char *op) {
    tt_mm_job m = tt_mm_nn_job(out, (size_t)OC, inp, (size_t)C, weight, (size_t)OC, N, OC, C);
    m.bias = bias;
    m.R = resid;
    m.ldr = (size_t)OC;
    m.gelu_out = gelu_out;
    m.act = act;
    if (N == 1) {
        mv_run(cpu, &m);
        return;
    }
    tt_mm_set set = {{&m}, 1, {0}, 0, op};
    tt_mm_set_run(cpu, &set);
}

void tt_matmul_forward(tt_cpu *cpu, float *out, const float *inp, const float *weight, const float *bias, int N, int C,
                       int OC) {
    mm_forward(cpu, out, NULL, inp, weight, bias, NULL, N, C, OC, 0, "matmul forward");
}

void tt_matmul_residual_forward(tt_cpu *cpu, float *out, const float *inp, const float *weight, const float *bias,
                                const float *resid, int N, int C, int OC) {
    mm_forward(cpu, out, NULL, inp, weight, bias, resid, N, C, OC, 0, "matmul forward");
}

void tt_matmul_gelu_forward(tt_cpu *cpu, float *pre, float *out, const float *inp, const float *weight,
                            const float *bias, int N, int C, int OC, int act) {
    mm_forward(cpu, pre, out, inp, weight, bias, NULL, N, C, OC, act, "matmul forward");
}

static void mm_backward(tt_cpu *cpu, float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                        const float *weight, const float *gelu_inp, int N, int C, int OC, int act) {
    tt_mm_set set;
    memset(&set, 0, sizeof set);
    set.op = "matmul backward";
    tt_mm_job md, mw;
    tt_colsum_job cs;
    if (dinp) {
        /* dinp (N,C) = dout (N,OC) . weight^T: B(k=oc, j=c) = weight[c*OC + oc] */
        md = tt_mm_nn_job(dinp, (size_t)C, dout, (size_t)OC, weight, (size_t)OC, N, C, OC);
        md.seg[0].transB = 1;
        md.gelu_in = gelu_inp;
        md.act = act;
        set.jobs[set.n++] = &md;
    }
    if (dweight) {
        /* dweight (C,OC) += inp^T (C,N) . dout (N,OC): A(i=c, k=n) = inp[n*C + c] */
        mw = tt_mm_nn_job(dweight, (size_t)OC, inp, (size_t)C, dout, (size_t)OC, C, OC, N);
        mw.seg[0].transA = 1;
        mw.packa = 1;
        mw.accumulate = 1;
        mw.colsum = dbias; /* B is dout: the bias gradient is its column sums */
        set.jobs[set.n++] = &mw;
    }
    if (dbias) {
        cs = (tt_colsum_job){dbias, dout, (size_t)OC, N, OC};
        set.cs[set.ncs++] = &cs;
    }
    if (set.n || set.ncs) tt_mm_set_run(cpu, &set);
}

void tt_matmul_backward(tt_cpu *cpu, float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                        const float *weight, int N, int C, int OC) {
    mm_backward(cpu, dinp, dweight, dbias, dout, inp, weight, NULL, N, C, OC, 0);
}

void tt_matmul_gelu_backward(tt_cpu *cpu, float *dinp, float *dweight, float *dbias, const float *dout,
                             const float *inp, const float *weight, const float *gelu_inp, int N, int C, int OC,
                             int act) {
    mm_backward(cpu, dinp, dweight, dbias, dout, inp, weight, gelu_inp, N, C, OC, act);
}

void tt_qkv_forward(tt_cpu *cpu, float *qkv, const float *inp, const float *wq, const float *bq, const float *wk,
                    const float *bk, const float *wv, const float *bv, int N, int C) {
    tt_mm_job m[3];
    const float *w[3] = {wq, wk, wv}, *b[3] = {bq, bk, bv};
    tt_mm_set set;
    memset(&set, 0, sizeof set);
    set.op = "qkv forward";
    for (int i = 0; i < 3; i++) {
        m[i] = tt_mm_nn_job(qkv + (size_t)i * C, (size_t)3 * C, inp, (size_t)C, w[i], (size_t)C, N, C, C);
        m[i].bias = b[i];
        set.jobs[set.n++] = &m[i];
    }
    tt_mm_set_run(cpu, &set);
}

void tt_qkv_backward(tt_cpu *cpu, float *dinp, float *dwq, float *dbq, float *dwk, float *dbk, float *dwv, float *dbv,
                     const float *dqkv, const float *inp, const float *wq, const float *wk, const float *wv, int N,
                     int C) {
    tt_mm_set set;
    memset(&set, 0, sizeof set);
    set.op = "qkv backward";
    tt_mm_job md, mw[3];
    tt_colsum_job cs[3];
    const float *w[3] = {wq, wk, wv};
    float *dw[3] = {dwq, dwk, dwv}, *db[3] = {dbq, dbk, dbv};
    if (dinp) {
        /* dinp = dq . wq^T + dk . wk^T + dv . wv^T: one K chain of three segments */
        md = tt_mm_nn_job(dinp, (size_t)C, dqkv, (size_t)3 * C, wq, (size_t)C, N, C, C);
        md.nseg = 3;
        for (int i = 0; i < 3; i++) md.seg[i] = (tt_mm_seg){dqkv + (size_t)i * C, (size_t)3 * C, 0, w[i], (size_t)C, 1, C};
        set.jobs[set.n++] = &md;
    }
    for (int i = 0; i < 3; i++) {
        if (dw[i]) {
            mw[i] = tt_mm_nn_job(dw[i], (size_t)C, inp, (size_t)C, dqkv + (size_t)i * C, (size_t)3 * C, C, C, N);
            mw[i].seg[0].transA = 1;
            mw[i].packa = 1;
            mw[i].accumulate = 1;
            mw[i].colsum = db[i];
            set.jobs[set.n++] = &mw[i];
        }
        if (db[i]) {
            cs[i] = (tt_colsum_job){db[i], dqkv + (size_t)i * C, (size_t)3 * C, N, C};
            set.cs[set.ncs++] = &cs[i];
        }
    }
    if (set.n || set.ncs) tt_mm_set_run(cpu, &set);
}

void tt_head_forward(tt_cpu *cpu, float *logits, const float *inp, const float *wte, int N, int C, int V) {
    /* logits (N,V) = inp (N,C) . wte^T: B(k=c, j=v) = wte[v*C + c] */
    tt_mm_job m = tt_mm_nn_job(logits, (size_t)V, inp, (size_t)C, wte, (size_t)C, N, V, C);
    m.seg[0].transB = 1;
    tt_mm_set set = {{&m}, 1, {0}, 0, "head forward"};
    tt_mm_set_run(cpu, &set);
}

void tt_head_backward(tt_cpu *cpu, float *dinp, float *dwte, const float *dlogits, const float *inp, const float *wte,
                      int N, int C, int V) {
    tt_mm_set set;
    memset(&set, 0, sizeof set);
    set.op = "head backward";
    tt_mm_job md, mw;
    if (dinp) {
        /* dinp (N,C) = dlogits (N,V) . wte (V,C) */
        md = tt_mm_nn_job(dinp, (size_t)C, dlogits, (size_t)V, wte, (size_t)C, N, C, V);
        set.jobs[set.n++] = &md;
    }
    if (dwte) {
        /* dwte (V,C) += dlogits^T (V,N) . inp (N,C) */
        mw = tt_mm_nn_job(dwte, (size_t)C, dlogits, (size_t)V, inp, (size_t)C, V, C, N);
        mw.seg[0].transA = 1;
        mw.packa = 1;
        mw.accumulate = 1;
        set.jobs[set.n++] = &mw;
    }
    if (set.n) tt_mm_set_run(cpu, &set);
}
