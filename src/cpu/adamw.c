/* adamw.c — the optimizer step (ops.h): the parameter spans, the global
 * gradient norm (per-span partial sums in double, added in span order) and
 * AdamW with the clip scale applied to the gradients, optionally zeroing them
 * in the same pass. The clip scale itself is computed by the caller
 * (backend.c) from the norm. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops_internal.h"

int tt_spans_build(const tt_layout *lo, tt_span **spans, int64_t *n_spans, tt_status *st) {
    int64_t n = 0;
    for (int i = 0; i < lo->n_tensors; i++)
        if (lo->t[i].trainable) n += (int64_t)((lo->t[i].numel + TT_SPAN_MAX - 1) / TT_SPAN_MAX);
    tt_span *s = malloc((size_t)(n ? n : 1) * sizeof *s);
    if (!s) return tt_fail(st, TT_ENOMEM, "out of memory (parameter spans)");
    int64_t k = 0;
    for (int i = 0; i < lo->n_tensors; i++) {
        const tt_tensor_info *t = &lo->t[i];
        if (!t->trainable) continue;
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

double tt_adamw_grad_sumsq(tt_cpu *cpu, const float *g, const tt_span *spans, int64_t n_spans, double *partials) {
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
        tt_vf den = tt_vsqrt(vv / bc2) + eps;
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
