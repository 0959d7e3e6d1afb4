/* dropout.c — dropout of a (B,T,C) activation, forward and backward, and
 * the residual-branch form out = resid + dropout(branch) (ops.h). The mask
 * is never stored: each element's keep bit is a pure function of the site's
 * key and the element index (rng.h), so the backward recomputes it, and
 * every backend (C, WGSL) drops the same elements. Element-wise chunks of
 * TT_ELEM_CHUNK: one rounding per element, independent of the threads. */
#include "ops_internal.h"

tt_dropout_mask tt_dropout_mask_make(float p, tt_dropout_key key) {
    tt_dropout_mask d = {key, tt_dropout_threshold(p), 0.0f};
    d.scale = d.threshold ? 1.0f / (1.0f - p) : 1.0f;
    return d;
}

typedef struct {
    float *out;
    const float *inp, *resid;
    const tt_dropout_mask *d;
    size_t n;
} drop_ctx;

static void drop_task(void *arg, int64_t chunk, int tid) {
    (void)tid;
    drop_ctx *r = arg;
    size_t lo = (size_t)chunk * TT_ELEM_CHUNK, hi = TT_MIN(r->n, lo + TT_ELEM_CHUNK);
    for (size_t i = lo; i < hi; i++) r->out[i] = r->inp[i] * tt_dropout_factor(r->d, (uint32_t)i);
}

static void drop_residual_task(void *arg, int64_t chunk, int tid) {
    (void)tid;
    drop_ctx *r = arg;
    size_t lo = (size_t)chunk * TT_ELEM_CHUNK, hi = TT_MIN(r->n, lo + TT_ELEM_CHUNK);
    for (size_t i = lo; i < hi; i++) r->out[i] = r->resid[i] + r->inp[i] * tt_dropout_factor(r->d, (uint32_t)i);
}

static void run(tt_cpu *cpu, tt_task_fn fn, float *out, const float *inp, const float *resid, const tt_dropout_mask *d,
                size_t n, const char *op) {
    if ((uint64_t)n > (uint64_t)UINT32_MAX + 1) { /* size_t is 32 bits on wasm32 */
        tt_cpu_fail(cpu, "%s: %zu elements exceed the 32-bit element index of the dropout masks", op, n);
        return;
    }
    drop_ctx r = {out, inp, resid, d, n};
    tt_cpu_run1(cpu, fn, &r, tt_n_chunks(n, TT_ELEM_CHUNK));
}

void tt_dropout_forward(tt_cpu *cpu, float *out, const float *inp, const tt_dropout_mask *d, size_t n) {
    if (!tt_dropout_on(d)) {
        if (out != inp) tt_cpu_copy(cpu, out, inp, n);
        return;
    }
    run(cpu, drop_task, out, inp, NULL, d, n, "dropout forward");
}

void tt_dropout_backward(tt_cpu *cpu, float *dinp, const float *dout, const tt_dropout_mask *d, size_t n) {
    if (!tt_dropout_on(d)) {
        if (dinp != dout) tt_cpu_copy(cpu, dinp, dout, n);
        return;
    }
    run(cpu, drop_task, dinp, dout, NULL, d, n, "dropout backward");
}

void tt_dropout_residual_forward(tt_cpu *cpu, float *out, const float *inp, const float *resid, const tt_dropout_mask *d,
                                 size_t n) {
    static const tt_dropout_mask keep_all = {{0, 0}, 0, 1.0f};
    run(cpu, drop_residual_task, out, inp, resid, tt_dropout_on(d) ? d : &keep_all, n, "dropout residual forward");
}
