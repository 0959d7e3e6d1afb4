/* ops.c — the CPU context (pool + scratch), the phase/task runner, and the
 * row-wise and element-wise ops: encoder, layernorm, GELU, residual, fused
 * softmax + cross-entropy, grad norm and AdamW. (Linear layers live in
 * matmul.c, attention in attention.c.) */
#include <math.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <sched.h>

#include "ops_internal.h"
#include "spin.h"
#include "vmath.h"

/* ================= context ================= */

int tt_cpu_create(tt_cpu *cpu, int threads, size_t shared_floats, size_t thread_floats, tt_status *st) {
    memset(cpu, 0, sizeof *cpu);
    if (threads <= 0) threads = tt_default_threads();
    if (thread_floats < tt_matmul_thread_scratch()) thread_floats = tt_matmul_thread_scratch();
    thread_floats = (thread_floats + 15) & ~(size_t)15; /* keep every thread's block 64-byte aligned */
    if (threads > 1) {
        cpu->pool = tt_pool_create(threads);
        if (!cpu->pool) return tt_fail(st, TT_ENOMEM, "cannot create a pool of %d threads", threads);
        threads = tt_pool_size(cpu->pool);
    }
    cpu->nthreads = threads;
    cpu->spin_s = threads > tt_default_threads() ? TT_SPIN_OVERSUB_S : TT_SPIN_PURE_S;
    cpu->scratch_floats = shared_floats;
    cpu->tscratch_floats = thread_floats;
    cpu->scratch = tt_alloc((shared_floats ? shared_floats : 1) * sizeof(float), st);
    cpu->tscratch = cpu->scratch ? tt_alloc(thread_floats * (size_t)threads * sizeof(float), st) : NULL;
    if (!cpu->tscratch) {
        tt_cpu_destroy(cpu);
        return st ? st->code : TT_ENOMEM;
    }
    return TT_OK;
}

void tt_cpu_destroy(tt_cpu *cpu) {
    tt_pool_destroy(cpu->pool);
    tt_free(cpu->scratch);
    tt_free(cpu->tscratch);
    memset(cpu, 0, sizeof *cpu);
}

/* ================= phase runner ================= */

typedef struct {
    alignas(64) atomic_llong next;
} padded_counter;

typedef struct {
    const tt_phase *ph;
    int nph;
    int64_t start[TT_MAX_PHASES][TT_MAX_TASKS + 1];
    padded_counter ctr[TT_MAX_PHASES];
    double spin_s;
    alignas(64) atomic_int bar_count;
    alignas(64) atomic_int bar_sense;
} run_ctx;

static void barrier_wait(run_ctx *r, int nth, int *sense) {
    *sense = !*sense;
    if (atomic_fetch_add_explicit(&r->bar_count, 1, memory_order_acq_rel) == nth - 1) {
        atomic_store_explicit(&r->bar_count, 0, memory_order_relaxed);
        atomic_store_explicit(&r->bar_sense, *sense, memory_order_release);
        tt_cpu_wake(&r->bar_sense);
    } else {
        tt_spin sp;
        tt_spin_init(&sp);
        while (atomic_load_explicit(&r->bar_sense, memory_order_acquire) != *sense)
            if (!tt_spin_poll(&sp, r->spin_s)) tt_cpu_yield(&r->bar_sense, !*sense);
    }
}

static void run_phase_chunks(run_ctx *r, int p, int tid) {
    const tt_phase *ph = &r->ph[p];
    int64_t total = r->start[p][ph->n_tasks];
    int t = 0;
    for (;;) {
        int64_t c = atomic_fetch_add_explicit(&r->ctr[p].next, 1, memory_order_relaxed);
        if (c >= total) break;
        while (r->start[p][t + 1] <= c) t++; /* chunks are claimed in increasing order */
        ph->t[t].fn(ph->t[t].arg, c - r->start[p][t], tid);
    }
}

static void run_worker(void *vctx, int tid, int nth) {
    run_ctx *r = vctx;
    int sense = 0;
    for (int p = 0; p < r->nph; p++) {
        run_phase_chunks(r, p, tid);
        if (p + 1 < r->nph) barrier_wait(r, nth, &sense);
    }
}

void tt_cpu_run(tt_cpu *cpu, const tt_phase *phases, int n_phases) {
    if (!cpu->pool || cpu->nthreads <= 1) {
        for (int p = 0; p < n_phases; p++)
            for (int t = 0; t < phases[p].n_tasks; t++)
                for (int64_t i = 0; i < phases[p].t[t].n; i++) phases[p].t[t].fn(phases[p].t[t].arg, i, 0);
        return;
    }
    run_ctx r;
    r.ph = phases;
    r.nph = n_phases;
    for (int p = 0; p < n_phases; p++) {
        r.start[p][0] = 0;
        for (int t = 0; t < phases[p].n_tasks; t++) r.start[p][t + 1] = r.start[p][t] + phases[p].t[t].n;
        atomic_init(&r.ctr[p].next, 0);
    }
    r.spin_s = cpu->spin_s;
    atomic_init(&r.bar_count, 0);
    atomic_init(&r.bar_sense, 0);
    tt_pool_run(cpu->pool, run_worker, &r);
}

void tt_cpu_run1(tt_cpu *cpu, tt_task_fn fn, void *arg, int64_t n) {
    tt_phase ph = {1, {{fn, arg, n}}};
    tt_cpu_run(cpu, &ph, 1);
}

/* ================= small helpers ================= */

#define ELEM_CHUNK 8192 /* floats per chunk of element-wise work */

static inline int64_t n_chunks(size_t n, size_t chunk) { return (int64_t)((n + chunk - 1) / chunk); }

typedef struct {
    float *dst;
    const float *src;
    size_t n;
} copy_ctx;

static void zero_task(void *arg, int64_t i, int tid) {
    (void)tid;
    copy_ctx *c = arg;
    size_t lo = (size_t)i * ELEM_CHUNK, hi = TT_MIN(c->n, lo + ELEM_CHUNK);
    memset(c->dst + lo, 0, (hi - lo) * sizeof(float));
}

static void copy_task(void *arg, int64_t i, int tid) {
    (void)tid;
    copy_ctx *c = arg;
    size_t lo = (size_t)i * ELEM_CHUNK, hi = TT_MIN(c->n, lo + ELEM_CHUNK);
    memcpy(c->dst + lo, c->src + lo, (hi - lo) * sizeof(float));
}

void tt_cpu_zero(tt_cpu *cpu, float *x, size_t n) {
    copy_ctx c = {x, NULL, n};
    tt_cpu_run1(cpu, zero_task, &c, n_chunks(n, ELEM_CHUNK));
}

void tt_cpu_copy(tt_cpu *cpu, float *dst, const float *src, size_t n) {
    copy_ctx c = {dst, src, n};
    tt_cpu_run1(cpu, copy_task, &c, n_chunks(n, ELEM_CHUNK));
}

/* sum of a row in a fixed order: TT_VW lanes, then the lanes, then the tail */
static inline float row_sum(const float *x, int n) {
    tt_vf acc = tt_vdup(0.0f);
    int i = 0;
    for (; i + TT_VW <= n; i += TT_VW) acc += tt_vload(x + i);
    float s = tt_vsum(acc);
    for (; i < n; i++) s += x[i];
    return s;
}

/* rows per chunk for row-wise ops: about ELEM_CHUNK floats */
static inline int rows_per_chunk(int C) { return TT_MAX(1, ELEM_CHUNK / TT_MAX(C, 1)); }

/* ================= encoder ================= */

typedef struct {
    float *out;
    const int32_t *inp;
    const float *wte, *wpe;
    int B, T, C, V, rows;
    float *dwte, *dwpe;
    const float *dout;
} enc_ctx;

static void enc_fwd_task(void *arg, int64_t chunk, int tid) {
    (void)tid;
    enc_ctx *e = arg;
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

void tt_encoder_forward(tt_cpu *cpu, float *out, const int32_t *inp, const float *wte, const float *wpe, int B, int T,
                        int C) {
    enc_ctx e = {out, inp, wte, wpe, B, T, C, 0, rows_per_chunk(C), NULL, NULL, NULL};
    tt_cpu_run1(cpu, enc_fwd_task, &e, n_chunks((size_t)B * T, (size_t)e.rows));
}

static inline void vec_add_inplace(float *d, const float *s, int C) {
    int i = 0;
    for (; i + TT_VW <= C; i += TT_VW) tt_vstore(d + i, tt_vload(d + i) + tt_vload(s + i));
    for (; i < C; i++) d[i] += s[i];
}

#define ENC_VROWS 4 /* vocabulary rows per chunk of the dwte scatter-add */
#define ENC_TROWS 4 /* positions per chunk of dwpe */

/* dwte: each chunk owns vocabulary rows [v0, v1) and scans the tokens in
 * (b,t) order, so every row receives its contributions in a fixed order and
 * no two chunks write the same row. Work is O(B*T*C) plus a byte scan. */
static void enc_dwte_task(void *arg, int64_t chunk, int tid) {
    (void)tid;
    enc_ctx *e = arg;
    int v0 = (int)chunk * ENC_VROWS, v1 = TT_MIN(e->V, v0 + ENC_VROWS);
    int N = e->B * e->T, C = e->C;
    for (int r = 0; r < N; r++) {
        int v = e->inp[r];
        if (v >= v0 && v < v1) vec_add_inplace(e->dwte + (size_t)v * C, e->dout + (size_t)r * C, C);
    }
}

static void enc_dwpe_task(void *arg, int64_t chunk, int tid) {
    (void)tid;
    enc_ctx *e = arg;
    int t0 = (int)chunk * ENC_TROWS, t1 = TT_MIN(e->T, t0 + ENC_TROWS);
    for (int t = t0; t < t1; t++)
        for (int b = 0; b < e->B; b++) vec_add_inplace(e->dwpe + (size_t)t * e->C, e->dout + ((size_t)b * e->T + t) * e->C, e->C);
}

void tt_encoder_backward(tt_cpu *cpu, float *dwte, float *dwpe, const float *dout, const int32_t *inp, int B, int T,
                         int C, int V) {
    enc_ctx e = {NULL, inp, NULL, NULL, B, T, C, V, 0, dwte, dwpe, dout};
    tt_phase ph = {0};
    if (dwte) ph.t[ph.n_tasks++] = (tt_task){enc_dwte_task, &e, (V + ENC_VROWS - 1) / ENC_VROWS};
    if (dwpe) ph.t[ph.n_tasks++] = (tt_task){enc_dwpe_task, &e, (T + ENC_TROWS - 1) / ENC_TROWS};
    if (ph.n_tasks) tt_cpu_run(cpu, &ph, 1);
}

/* ================= layernorm ================= */

#define LN_EPS 1e-5f
#define LN_ROWS 32 /* rows per chunk of the backward's partial sums */

typedef struct {
    float *out, *mean, *rstd;
    const float *inp, *weight, *bias;
    int N, C, rows;
    /* backward */
    float *dinp, *dweight, *dbias, *partial;
    const float *dout;
    const float *cmean, *crstd;
    int accumulate, n_row_chunks;
} ln_ctx;

static void ln_fwd_task(void *arg, int64_t chunk, int tid) {
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
        float s = 1.0f / sqrtf(var + LN_EPS);
        float *o = l->out + (size_t)r * C;
        i = 0;
        for (; i + TT_VW <= C; i += TT_VW)
            tt_vstore(o + i, (tt_vload(x + i) - m) * s * tt_vload(l->weight + i) + tt_vload(l->bias + i));
        for (; i < C; i++) o[i] = (x[i] - m) * s * l->weight[i] + l->bias[i];
        l->mean[r] = m;
        l->rstd[r] = s;
    }
}

void tt_layernorm_forward(tt_cpu *cpu, float *out, float *mean, float *rstd, const float *inp, const float *weight,
                          const float *bias, int N, int C) {
    ln_ctx l;
    memset(&l, 0, sizeof l);
    l.out = out, l.mean = mean, l.rstd = rstd, l.inp = inp, l.weight = weight, l.bias = bias;
    l.N = N, l.C = C, l.rows = rows_per_chunk(C);
    tt_cpu_run1(cpu, ln_fwd_task, &l, n_chunks((size_t)N, (size_t)l.rows));
}

size_t tt_layernorm_backward_scratch(int N, int C) {
    return (size_t)((N + LN_ROWS - 1) / LN_ROWS) * 2 * (size_t)C;
}

size_t tt_model_shared_scratch(const tt_model_config *c) {
    int N = c->batch * c->ctx, C = c->d_model, V = c->vocab;
    size_t s[10] = {
        tt_matmul_forward_scratch(N, C, 4 * C), tt_matmul_forward_scratch(N, 4 * C, C),
        tt_matmul_backward_scratch(N, C, C),    tt_matmul_backward_scratch(N, C, 4 * C),
        tt_matmul_backward_scratch(N, 4 * C, C), tt_qkv_forward_scratch(N, C),
        tt_qkv_backward_scratch(N, C),          tt_head_forward_scratch(N, C, V),
        tt_head_backward_scratch(N, C, V),      tt_layernorm_backward_scratch(N, C),
    };
    size_t m = 0;
    for (int i = 0; i < 10; i++) m = TT_MAX(m, s[i]);
    return m;
}

size_t tt_model_thread_scratch(const tt_model_config *c) {
    return TT_MAX(tt_matmul_thread_scratch(), tt_attention_thread_scratch(c->ctx, c->d_model / c->n_head));
}

/* phase 1: dinp for LN_ROWS rows, and that chunk's partial dweight/dbias */
static void ln_bwd_rows_task(void *arg, int64_t chunk, int tid) {
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

#define LN_COLS (4 * TT_VW)

/* phase 2: dweight/dbias += the chunk partials, summed in chunk order */
static void ln_bwd_cols_task(void *arg, int64_t chunk, int tid) {
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
                           const float *weight, const float *mean, const float *rstd, int N, int C,
                           int accumulate_dinp) {
    ln_ctx l;
    memset(&l, 0, sizeof l);
    l.dinp = dinp, l.dweight = dweight, l.dbias = dbias, l.dout = dout, l.inp = inp, l.weight = weight;
    l.cmean = mean, l.crstd = rstd, l.N = N, l.C = C, l.accumulate = accumulate_dinp;
    l.n_row_chunks = (N + LN_ROWS - 1) / LN_ROWS;
    l.partial = cpu->scratch;
    if (tt_layernorm_backward_scratch(N, C) > cpu->scratch_floats) {
        cpu->error = 1;
        return;
    }
    tt_phase ph[2] = {{1, {{ln_bwd_rows_task, &l, l.n_row_chunks}}}, {1, {{ln_bwd_cols_task, &l, (C + LN_COLS - 1) / LN_COLS}}}};
    tt_cpu_run(cpu, ph, (dweight || dbias) ? 2 : 1);
}

/* ================= GELU ================= */


typedef struct {
    float *out;
    const float *inp, *dout;
    size_t n;
} ew_ctx;

static void gelu_fwd_task(void *arg, int64_t chunk, int tid) {
    (void)tid;
    ew_ctx *g = arg;
    size_t lo = (size_t)chunk * ELEM_CHUNK, hi = TT_MIN(g->n, lo + ELEM_CHUNK);
    size_t i = lo;
    for (; i + TT_VW <= hi; i += TT_VW) {
        tt_vf x = tt_vload(g->inp + i);
        tt_vstore(g->out + i, tt_vgelu(x));
    }
    if (i < hi) { /* tail through a padded vector, so every element takes the same path */
        float buf[TT_VW] = {0};
        memcpy(buf, g->inp + i, (hi - i) * sizeof(float));
        tt_vf x = tt_vload(buf);
        tt_vstore(buf, tt_vgelu(x));
        memcpy(g->out + i, buf, (hi - i) * sizeof(float));
    }
}

void tt_gelu_forward(tt_cpu *cpu, float *out, const float *inp, size_t n) {
    ew_ctx g = {out, inp, NULL, n};
    tt_cpu_run1(cpu, gelu_fwd_task, &g, n_chunks(n, ELEM_CHUNK));
}


static void gelu_bwd_task(void *arg, int64_t chunk, int tid) {
    (void)tid;
    ew_ctx *g = arg;
    size_t lo = (size_t)chunk * ELEM_CHUNK, hi = TT_MIN(g->n, lo + ELEM_CHUNK);
    size_t i = lo;
    for (; i + TT_VW <= hi; i += TT_VW) tt_vstore(g->out + i, tt_vgelu_grad(tt_vload(g->inp + i)) * tt_vload(g->dout + i));
    if (i < hi) {
        float bx[TT_VW] = {0}, bd[TT_VW] = {0};
        memcpy(bx, g->inp + i, (hi - i) * sizeof(float));
        memcpy(bd, g->dout + i, (hi - i) * sizeof(float));
        tt_vstore(bx, tt_vgelu_grad(tt_vload(bx)) * tt_vload(bd));
        memcpy(g->out + i, bx, (hi - i) * sizeof(float));
    }
}

void tt_gelu_backward(tt_cpu *cpu, float *dinp, const float *inp, const float *dout, size_t n) {
    ew_ctx g = {dinp, inp, dout, n};
    tt_cpu_run1(cpu, gelu_bwd_task, &g, n_chunks(n, ELEM_CHUNK));
}

/* ================= residual ================= */

typedef struct {
    float *a, *b;
    const float *x, *y;
    size_t n;
} res_ctx;

static void res_fwd_task(void *arg, int64_t chunk, int tid) {
    (void)tid;
    res_ctx *r = arg;
    size_t lo = (size_t)chunk * ELEM_CHUNK, hi = TT_MIN(r->n, lo + ELEM_CHUNK), i = lo;
    for (; i + TT_VW <= hi; i += TT_VW) tt_vstore(r->a + i, tt_vload(r->x + i) + tt_vload(r->y + i));
    for (; i < hi; i++) r->a[i] = r->x[i] + r->y[i];
}

void tt_residual_forward(tt_cpu *cpu, float *out, const float *inp1, const float *inp2, size_t n) {
    res_ctx r = {out, NULL, inp1, inp2, n};
    tt_cpu_run1(cpu, res_fwd_task, &r, n_chunks(n, ELEM_CHUNK));
}

static void res_bwd_task(void *arg, int64_t chunk, int tid) {
    (void)tid;
    res_ctx *r = arg;
    size_t lo = (size_t)chunk * ELEM_CHUNK, hi = TT_MIN(r->n, lo + ELEM_CHUNK);
    if (r->a) vec_add_inplace(r->a + lo, r->x + lo, (int)(hi - lo));
    if (r->b) vec_add_inplace(r->b + lo, r->x + lo, (int)(hi - lo));
}

void tt_residual_backward(tt_cpu *cpu, float *dinp1, float *dinp2, const float *dout, size_t n) {
    res_ctx r = {dinp1, dinp2, dout, NULL, n};
    tt_cpu_run1(cpu, res_bwd_task, &r, n_chunks(n, ELEM_CHUNK));
}

/* ================= softmax + cross-entropy ================= */

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

float tt_crossentropy_forward(tt_cpu *cpu, float *losses, float *dlogits, const float *logits, const int32_t *targets,
                              int N, int V, float dscale) {
    ce_ctx c = {losses, dlogits, logits, targets, N, V, TT_MAX(1, 4096 / TT_MAX(V, 1)), dscale};
    tt_cpu_run1(cpu, ce_task, &c, n_chunks((size_t)N, (size_t)c.rows));
    double s = 0.0;
    for (int i = 0; i < N; i++) s += losses[i];
    return (float)(s / N);
}

void tt_crossentropy_backward(tt_cpu *cpu, float *dlogits, const float *logits, const int32_t *targets, int N, int V,
                              float dscale) {
    ce_ctx c = {NULL, dlogits, logits, targets, N, V, TT_MAX(1, 4096 / TT_MAX(V, 1)), dscale};
    tt_cpu_run1(cpu, ce_task, &c, n_chunks((size_t)N, (size_t)c.rows));
}

/* ================= grad norm and AdamW ================= */

int tt_spans_build(const tt_layout *lo, tt_span **spans, int64_t *n_spans, tt_status *st) {
    int64_t n = 0;
    for (int i = 0; i < lo->n_tensors; i++) n += (int64_t)((lo->t[i].numel + TT_SPAN_MAX - 1) / TT_SPAN_MAX);
    tt_span *s = malloc((size_t)(n ? n : 1) * sizeof *s);
    if (!s) return tt_fail(st, TT_ENOMEM, "out of memory (parameter spans)");
    int64_t k = 0;
    for (int i = 0; i < lo->n_tensors; i++) {
        const tt_tensor_info *t = &lo->t[i];
        for (size_t o = 0; o < t->numel; o += TT_SPAN_MAX)
            s[k++] = (tt_span){t->offset + o, TT_MIN((size_t)TT_SPAN_MAX, t->numel - o), t->decay};
    }
    *spans = s;
    *n_spans = n;
    return TT_OK;
}

typedef struct {
    const tt_span *spans;
    const float *g;
    double *partials;
    /* adamw */
    float *p, *grads, *m, *v;
    const tt_optim_args *opt;
    float scale;
    int zero;
} opt_ctx;

#define SUMSQ_BLOCK 512

static void sumsq_task(void *arg, int64_t i, int tid) {
    (void)tid;
    opt_ctx *o = arg;
    const float *g = o->g + o->spans[i].off;
    size_t n = o->spans[i].len;
    double total = 0.0;
    for (size_t b = 0; b < n; b += SUMSQ_BLOCK) {
        size_t e = TT_MIN(n, b + SUMSQ_BLOCK), j = b;
        tt_vf acc = tt_vdup(0.0f);
        for (; j + TT_VW <= e; j += TT_VW) {
            tt_vf x = tt_vload(g + j);
            acc += x * x;
        }
        float s = tt_vsum(acc);
        for (; j < e; j++) s += g[j] * g[j];
        total += s;
    }
    o->partials[i] = total;
}

double tt_grad_sumsq(tt_cpu *cpu, const float *g, const tt_span *spans, int64_t n_spans, double *partials) {
    opt_ctx o;
    memset(&o, 0, sizeof o);
    o.spans = spans, o.g = g, o.partials = partials;
    tt_cpu_run1(cpu, sumsq_task, &o, n_spans);
    double s = 0.0;
    for (int64_t i = 0; i < n_spans; i++) s += partials[i];
    return s;
}

static void adamw_task(void *arg, int64_t i, int tid) {
    (void)tid;
    opt_ctx *o = arg;
    const tt_optim_args *a = o->opt;
    size_t off = o->spans[i].off, n = o->spans[i].len;
    float *p = o->p + off, *g = o->grads + off, *m = o->m + off, *v = o->v + off;
    const float lr = a->lr, b1 = a->beta1, b2 = a->beta2, eps = a->eps;
    const float dec = o->spans[i].decay ? lr * a->weight_decay : 0.0f;
    const float ib1 = 1.0f - b1, ib2 = 1.0f - b2, bc1 = a->bc1, bc2 = a->bc2;
    const float scale = o->scale;
    size_t j = 0;
    for (; j + TT_VW <= n; j += TT_VW) {
        tt_vf gg = tt_vload(g + j) * scale;
        tt_vf pp = tt_vload(p + j);
        pp = pp - dec * pp;
        tt_vf mm = b1 * tt_vload(m + j) + ib1 * gg;
        tt_vf vv = b2 * tt_vload(v + j) + ib2 * gg * gg;
        tt_vf vh = vv / bc2, den;
        for (int k = 0; k < TT_VW; k++) den[k] = sqrtf(vh[k]);
        den += eps;
        pp = pp - lr * (mm / bc1) / den;
        tt_vstore(p + j, pp);
        tt_vstore(m + j, mm);
        tt_vstore(v + j, vv);
        if (o->zero) tt_vstore(g + j, tt_vdup(0.0f));
    }
    for (; j < n; j++) {
        float gg = g[j] * scale;
        float pp = p[j];
        pp = pp - dec * pp;
        float mm = b1 * m[j] + ib1 * gg;
        float vv = b2 * v[j] + ib2 * gg * gg;
        pp = pp - lr * (mm / bc1) / (sqrtf(vv / bc2) + eps);
        p[j] = pp;
        m[j] = mm;
        v[j] = vv;
        if (o->zero) g[j] = 0.0f;
    }
}

void tt_adamw_update(tt_cpu *cpu, float *params, float *grads, float *m, float *v, const tt_span *spans,
                     int64_t n_spans, const tt_optim_args *opt, float grad_scale, int zero_grads) {
    opt_ctx o;
    memset(&o, 0, sizeof o);
    o.spans = spans, o.p = params, o.grads = grads, o.m = m, o.v = v, o.opt = opt, o.scale = grad_scale;
    o.zero = zero_grads;
    tt_cpu_run1(cpu, adamw_task, &o, n_spans);
}
