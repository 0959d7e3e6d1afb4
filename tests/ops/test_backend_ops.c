/* test_backend_ops.c — every op on every available backend against the
 * float64 reference (ref/ref64.h), forward and backward, on awkward shapes
 * (1, odd sizes, sizes that are not multiples of the SIMD width or of the
 * tiles, T not a multiple of the attention blocks). ggml's test-backend-ops
 * habit: one table of cases, one runner per backend.
 *
 * A case names an op, a direction and a shape; make_problem() draws its
 * inputs and computes the reference outputs; a backend's run() fills the
 * same outputs; compare() checks max |got - ref| / max |ref| per output.
 * Parameter gradients are returned alone (the backends' accumulate-into
 * contract is tested per backend, e.g. tests/cpu/test_ops.c).
 *
 * Backends: the CPU always. Adding one (WebGPU through the tt_gop_* planners
 * of src/webgpu/gpu_ops.h, with tests/support/gpu_test.h for upload and
 * read-back) means writing its run() for the ops of the table and one line
 * in BACKENDS; a backend returns SKIPPED for an op it does not have. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "ref64.h"
#include "rng.h"
#include "tt_test.h"

typedef enum { OP_EMBEDDING, OP_LAYERNORM, OP_MATMUL, OP_HEAD, OP_ATTENTION, OP_GELU, OP_CROSSENTROPY, OP_ADAMW } op_kind;
static const char *OP_NAMES[] = {"embedding", "layernorm", "matmul", "matmul (head, W^T)", "attention", "gelu",
                                 "crossentropy", "adamw"};
enum { FWD = 0, BWD = 1 };

/* d[] per op:
 *   embedding     B T C V          layernorm  N C
 *   matmul        N C OC           head       N C V
 *   attention     B T NH hs packed (packed: q, k, v interleaved in one (B,T,3C) buffer)
 *   gelu          n                crossentropy N V
 *   adamw         L C NH (a tiny model's layout; one step with clipping) */
typedef struct {
    op_kind op;
    int dir;
    int d[5];
    double tol;
} op_case;

static const op_case CASES[] = {
    {OP_EMBEDDING, FWD, {2, 17, 13, 256}, 1e-7},   {OP_EMBEDDING, BWD, {3, 5, 65, 256}, 1e-6},
    {OP_EMBEDDING, FWD, {1, 1, 1, 7}, 1e-7},       {OP_EMBEDDING, BWD, {2, 33, 17, 9}, 1e-6},
    {OP_LAYERNORM, FWD, {1, 1}, 2e-5},             {OP_LAYERNORM, FWD, {17, 65}, 2e-5},
    {OP_LAYERNORM, FWD, {65, 127}, 2e-5},          {OP_LAYERNORM, BWD, {3, 17}, 5e-5},
    {OP_LAYERNORM, BWD, {65, 33}, 5e-5},           {OP_LAYERNORM, BWD, {127, 129}, 5e-5},
    {OP_MATMUL, FWD, {1, 3, 17}, 1e-6},            {OP_MATMUL, FWD, {17, 65, 127}, 1e-6},
    {OP_MATMUL, FWD, {300, 290, 45}, 1e-6},        {OP_MATMUL, BWD, {1, 1, 1}, 1e-6},
    {OP_MATMUL, BWD, {17, 3, 65}, 1e-6},           {OP_MATMUL, BWD, {77, 260, 33}, 1e-6},
    {OP_HEAD, FWD, {17, 13, 256}, 1e-6},           {OP_HEAD, FWD, {1, 65, 17}, 1e-6},
    {OP_HEAD, BWD, {33, 17, 256}, 1e-6},           {OP_HEAD, BWD, {5, 3, 1}, 1e-6},
    {OP_ATTENTION, FWD, {1, 1, 1, 4, 1}, 2e-6},    {OP_ATTENTION, FWD, {2, 17, 3, 4, 1}, 2e-6},
    {OP_ATTENTION, FWD, {1, 65, 2, 17, 0}, 2e-6},  {OP_ATTENTION, FWD, {2, 33, 2, 16, 0}, 2e-6},
    {OP_ATTENTION, BWD, {1, 3, 3, 1, 1}, 1e-5},    {OP_ATTENTION, BWD, {2, 17, 3, 4, 0}, 1e-5},
    {OP_ATTENTION, BWD, {1, 65, 2, 17, 1}, 1e-5},  {OP_ATTENTION, BWD, {2, 33, 2, 16, 1}, 1e-5},
    {OP_GELU, FWD, {1}, 1e-6},                     {OP_GELU, FWD, {20001}, 1e-6},
    {OP_GELU, BWD, {17}, 1e-6},                    {OP_GELU, BWD, {8195}, 1e-6},
    {OP_CROSSENTROPY, FWD, {1, 256}, 2e-6},        {OP_CROSSENTROPY, FWD, {17, 3}, 2e-6},
    {OP_CROSSENTROPY, BWD, {3, 127}, 2e-6},        {OP_CROSSENTROPY, BWD, {65, 256}, 2e-6},
    {OP_ADAMW, FWD, {1, 12, 3}, 1e-6},             {OP_ADAMW, FWD, {2, 20, 2}, 1e-6},
};
#define N_CASES (int)(sizeof CASES / sizeof CASES[0])

/* ---- problems: inputs and reference outputs ---- */

#define MAX_T 8
typedef struct {
    const char *name;
    size_t n;
    float *f;    /* inputs: the data; outputs: what the backend wrote */
    double *ref; /* outputs only */
} tensor;

typedef struct {
    tensor in[MAX_T], out[MAX_T];
    int n_in, n_out;
    int32_t *tok; /* token ids / targets */
    tt_layout lo; /* adamw */
    tt_optim_args opt;
    float dscale;
} problem;

static uint64_t g_seed = 4242;

static float *add_in(problem *p, const char *name, size_t n, float lo, float hi) {
    tensor *t = &p->in[p->n_in++];
    t->name = name, t->n = n, t->f = malloc((n ? n : 1) * sizeof(float)), t->ref = NULL;
    tt_test_fill(t->f, n, g_seed++, lo, hi);
    return t->f;
}

static double *add_out(problem *p, const char *name, size_t n) {
    tensor *t = &p->out[p->n_out++];
    t->name = name, t->n = n, t->f = malloc((n ? n : 1) * sizeof(float)), t->ref = ref_alloc(n);
    return t->ref;
}

static double *D(const float *x, size_t n) { return ref_from_float(x, n); }

static int32_t *tokens(size_t n, int V) {
    int32_t *p = malloc((n ? n : 1) * sizeof *p);
    uint64_t s = g_seed++;
    for (size_t i = 0; i < n; i++) p[i] = (int32_t)tt_rand_below(s, TT_STREAM_TEST, i, (uint64_t)V);
    return p;
}

/* q, k, v of an attention case in its layout: packed (one (B,T,3C) buffer,
 * stride 3C) or separate (three (B,T,C) buffers, stride C) */
typedef struct {
    int B, T, NH, hs, C, ld;
    size_t nrow; /* floats of one q/k/v buffer */
} att_shape;

static att_shape att_dims(const op_case *c) {
    att_shape a = {c->d[0], c->d[1], c->d[2], c->d[3], c->d[2] * c->d[3], 0, 0};
    a.ld = c->d[4] ? 3 * a.C : a.C;
    a.nrow = (size_t)a.B * a.T * a.ld;
    return a;
}

static void make_problem(const op_case *c, problem *p) {
    memset(p, 0, sizeof *p);
    switch (c->op) {
    case OP_EMBEDDING: {
        int B = c->d[0], T = c->d[1], C = c->d[2], V = c->d[3];
        size_t n = (size_t)B * T * C;
        p->tok = tokens((size_t)B * T, V);
        float *wte = add_in(p, "wte", (size_t)V * C, -1, 1), *wpe = add_in(p, "wpe", (size_t)T * C, -1, 1);
        if (c->dir == FWD) {
            double *dwte = D(wte, (size_t)V * C), *dwpe = D(wpe, (size_t)T * C);
            ref_embedding_forward(add_out(p, "out", n), p->tok, dwte, dwpe, B, T, C);
            free(dwte), free(dwpe);
        } else {
            float *dout = add_in(p, "dout", n, -1, 1);
            double *dd = D(dout, n), *rte = add_out(p, "dwte", (size_t)V * C), *rpe = add_out(p, "dwpe", (size_t)T * C);
            ref_embedding_backward(rte, rpe, dd, p->tok, B, T, C, V);
            free(dd);
        }
        break;
    }
    case OP_LAYERNORM: {
        int N = c->d[0], C = c->d[1];
        size_t n = (size_t)N * C;
        float *x = add_in(p, "inp", n, -3, 3), *w = add_in(p, "weight", C, 0.5f, 1.5f), *b = add_in(p, "bias", C, -0.5f, 0.5f);
        for (int i = 0; i < N; i++) /* rows with different means and scales */
            for (int k = 0; k < C; k++) x[(size_t)i * C + k] = x[(size_t)i * C + k] * (1.0f + i % 4) + (float)(i % 7) - 3.0f;
        double *dx = D(x, n), *dw = D(w, C), *db = D(b, C);
        if (c->dir == FWD) {
            double *out = add_out(p, "out", n), *stats = add_out(p, "mean", N);
            double *both = ref_alloc(2 * (size_t)N);
            ref_layernorm_forward(out, both, dx, dw, db, N, C);
            memcpy(stats, both, (size_t)N * sizeof(double));
            free(both);
        } else {
            float *dout = add_in(p, "dout", n, -1, 1);
            double *dd = D(dout, n);
            /* C == 1: the normalised value is exactly 0 and dinp is rounding noise */
            double *rdx = add_out(p, "dinp", n), *rdw = add_out(p, "dweight", C), *rdb = add_out(p, "dbias", C);
            ref_layernorm_backward(rdx, rdw, rdb, dd, dx, dw, N, C);
            if (C == 1) memset(rdx, 0, n * sizeof(double));
            free(dd);
        }
        free(dx), free(dw), free(db);
        break;
    }
    case OP_MATMUL:
    case OP_HEAD: {
        int N = c->d[0], C = c->d[1], OC = c->d[2];
        float *x = add_in(p, "inp", (size_t)N * C, -1, 1), *w = add_in(p, "weight", (size_t)C * OC, -1, 1);
        float *b = c->op == OP_MATMUL ? add_in(p, "bias", OC, -1, 1) : NULL;
        double *dx = D(x, (size_t)N * C), *dw = D(w, (size_t)C * OC), *db = b ? D(b, OC) : NULL;
        if (c->dir == FWD) {
            double *out = add_out(p, "out", (size_t)N * OC);
            if (c->op == OP_MATMUL) ref_matmul_forward(out, dx, dw, db, N, C, OC);
            else ref_head_forward(out, dx, dw, N, C, OC);
        } else {
            float *dout = add_in(p, "dout", (size_t)N * OC, -1, 1);
            double *dd = D(dout, (size_t)N * OC);
            double *rdx = add_out(p, "dinp", (size_t)N * C), *rdw = add_out(p, "dweight", (size_t)C * OC);
            if (c->op == OP_MATMUL) ref_matmul_backward(rdx, rdw, add_out(p, "dbias", OC), dd, dx, dw, N, C, OC);
            else ref_head_backward(rdx, rdw, dd, dx, dw, N, C, OC);
            free(dd);
        }
        free(dx), free(dw), free(db);
        break;
    }
    case OP_ATTENTION: {
        att_shape a = att_dims(c);
        size_t n1 = (size_t)a.B * a.T * a.C, ns = (size_t)a.B * a.NH * a.T;
        /* packed: one buffer holds q|k|v (k = q + C, v = q + 2C) */
        float *q = add_in(p, "q", a.nrow, -2, 2);
        float *k = c->d[4] ? q + a.C : add_in(p, "k", a.nrow, -2, 2);
        float *v = c->d[4] ? q + 2 * a.C : add_in(p, "v", a.nrow, -2, 2);
        size_t span = c->d[4] ? a.nrow : a.nrow; /* doubles copied per input buffer */
        double *dq = D(q, span), *dk = c->d[4] ? dq + a.C : D(k, span), *dv = c->d[4] ? dq + 2 * a.C : D(v, span);
        double *out = ref_alloc(n1), *stats = ref_alloc(2 * ns);
        ref_attention_forward(out, stats, dq, dk, dv, a.ld, a.B, a.T, a.C, a.NH);
        if (c->dir == FWD) {
            memcpy(add_out(p, "out", n1), out, n1 * sizeof(double));
            memcpy(add_out(p, "lse", ns), stats, ns * sizeof(double));
        } else {
            float *dout = add_in(p, "dout", n1, -1, 1);
            double *dd = D(dout, n1);
            double *gq = ref_alloc(a.nrow), *gk = c->d[4] ? gq + a.C : ref_alloc(a.nrow), *gv = c->d[4] ? gq + 2 * a.C : ref_alloc(a.nrow);
            ref_attention_backward(gq, gk, gv, stats, dq, dk, dv, dd, a.ld, a.B, a.T, a.C, a.NH);
            /* outputs: dq, dk, dv as (B,T,C) each, and D */
            double *oq = add_out(p, "dq", n1), *ok = add_out(p, "dk", n1), *ov = add_out(p, "dv", n1);
            for (size_t r = 0; r < (size_t)a.B * a.T; r++)
                for (int j = 0; j < a.C; j++) {
                    oq[r * a.C + j] = gq[r * a.ld + j];
                    ok[r * a.C + j] = gk[r * a.ld + j];
                    ov[r * a.C + j] = gv[r * a.ld + j];
                }
            memcpy(add_out(p, "D", ns), stats + ns, ns * sizeof(double));
            free(dd), free(gq);
            if (!c->d[4]) free(gk), free(gv);
        }
        free(dq), free(out), free(stats);
        if (!c->d[4]) free(dk), free(dv);
        break;
    }
    case OP_GELU: {
        size_t n = (size_t)c->d[0];
        float *x = add_in(p, "inp", n, -7, 7);
        double *dx = D(x, n);
        if (c->dir == FWD) ref_gelu_forward(add_out(p, "out", n), dx, n);
        else {
            float *dout = add_in(p, "dout", n, -1, 1);
            double *dd = D(dout, n);
            ref_gelu_backward(add_out(p, "dinp", n), dx, dd, n);
            free(dd);
        }
        free(dx);
        break;
    }
    case OP_CROSSENTROPY: {
        int N = c->d[0], V = c->d[1];
        size_t nv = (size_t)N * V;
        float *lg = add_in(p, "logits", nv, -8, 8);
        p->tok = tokens(N, V);
        p->dscale = 1.0f / (float)(3 * N);
        double *dl = D(lg, nv);
        if (c->dir == FWD) ref_crossentropy_forward(add_out(p, "losses", N), NULL, dl, p->tok, N, V, p->dscale);
        else ref_crossentropy_backward(add_out(p, "dlogits", nv), dl, p->tok, N, V, p->dscale);
        free(dl);
        break;
    }
    case OP_ADAMW: {
        tt_model_config cfg = {c->d[0], c->d[1], c->d[2], 9, 2, TT_VOCAB};
        tt_layout_build(&cfg, &p->lo, NULL);
        size_t n = p->lo.total;
        float *pr = add_in(p, "params", n, -1, 1), *g = add_in(p, "grads", n, -1, 1);
        float *m = add_in(p, "m", n, -0.1f, 0.1f), *v = add_in(p, "v", n, 0, 0.01f);
        p->opt = (tt_optim_args){1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, 0, 0};
        p->opt.bc1 = (float)(1 - pow(0.9, 3)), p->opt.bc2 = (float)(1 - pow(0.95, 3));
        double *rp = add_out(p, "params", n), *rm = add_out(p, "m", n), *rv = add_out(p, "v", n);
        for (size_t i = 0; i < n; i++) rp[i] = pr[i], rm[i] = m[i], rv[i] = v[i];
        double *rg = D(g, n);
        ref_adamw_update(rp, rg, rm, rv, &p->lo, &p->opt);
        free(rg);
        break;
    }
    }
}

static void free_problem(problem *p) {
    for (int i = 0; i < p->n_in; i++) free(p->in[i].f);
    for (int i = 0; i < p->n_out; i++) free(p->out[i].f), free(p->out[i].ref);
    free(p->tok);
    if (p->lo.t) tt_layout_free(&p->lo);
}

/* ---- the CPU backend ---- */

enum { RAN = 0, SKIPPED = 1, FAILED = 2 };

static tt_cpu g_cpu;

static int cpu_run(const op_case *c, problem *p) {
    tt_cpu *cpu = &g_cpu;
    float **in = (float *[MAX_T]){0};
    for (int i = 0; i < p->n_in; i++) in[i] = p->in[i].f;
    float *o[MAX_T] = {0};
    for (int i = 0; i < p->n_out; i++) {
        o[i] = p->out[i].f;
        tt_test_poison(o[i], p->out[i].n);
    }
    switch (c->op) {
    case OP_EMBEDDING:
        if (c->dir == FWD) tt_embedding_forward(cpu, o[0], p->tok, in[0], in[1], c->d[0], c->d[1], c->d[2]);
        else {
            memset(o[0], 0, p->out[0].n * sizeof(float)), memset(o[1], 0, p->out[1].n * sizeof(float));
            tt_embedding_backward(cpu, o[0], o[1], in[2], p->tok, c->d[0], c->d[1], c->d[2], c->d[3]);
        }
        break;
    case OP_LAYERNORM: {
        int N = c->d[0], C = c->d[1];
        float *stats = malloc(2 * (size_t)N * sizeof(float)), *out = malloc((size_t)N * C * sizeof(float));
        tt_layernorm_forward(cpu, out, stats, in[0], in[1], in[2], N, C);
        if (c->dir == FWD) memcpy(o[0], out, (size_t)N * C * sizeof(float)), memcpy(o[1], stats, (size_t)N * sizeof(float));
        else {
            memset(o[1], 0, (size_t)C * sizeof(float)), memset(o[2], 0, (size_t)C * sizeof(float));
            tt_layernorm_backward(cpu, o[0], o[1], o[2], in[3], in[0], in[1], stats, N, C, 0);
            if (C == 1) memset(o[0], 0, (size_t)N * sizeof(float)); /* rounding noise around 0 */
        }
        free(stats), free(out);
        break;
    }
    case OP_MATMUL:
    case OP_HEAD: {
        int N = c->d[0], C = c->d[1], OC = c->d[2];
        if (c->dir == FWD) {
            if (c->op == OP_MATMUL) tt_matmul_forward(cpu, o[0], in[0], in[1], in[2], N, C, OC);
            else tt_head_forward(cpu, o[0], in[0], in[1], N, C, OC);
        } else {
            for (int i = 1; i < p->n_out; i++) memset(o[i], 0, p->out[i].n * sizeof(float));
            if (c->op == OP_MATMUL) tt_matmul_backward(cpu, o[0], o[1], o[2], in[3], in[0], in[1], N, C, OC);
            else tt_head_backward(cpu, o[0], o[1], in[2], in[0], in[1], N, C, OC);
        }
        break;
    }
    case OP_ATTENTION: {
        att_shape a = att_dims(c);
        size_t n1 = (size_t)a.B * a.T * a.C, ns = (size_t)a.B * a.NH * a.T;
        const float *q = in[0], *k = c->d[4] ? q + a.C : in[1], *v = c->d[4] ? q + 2 * a.C : in[2];
        float *out = malloc(n1 * sizeof(float)), *stats = malloc(2 * ns * sizeof(float));
        tt_attention_forward(cpu, out, stats, q, k, v, a.ld, a.B, a.T, a.C, a.NH);
        if (c->dir == FWD) {
            memcpy(o[0], out, n1 * sizeof(float)), memcpy(o[1], stats, ns * sizeof(float));
        } else {
            const float *dout = in[c->d[4] ? 1 : 3];
            size_t nb = c->d[4] ? a.nrow : 3 * a.nrow;
            float *g = malloc(nb * sizeof(float));
            tt_test_poison(g, nb);
            float *gq = g, *gk = c->d[4] ? g + a.C : g + a.nrow, *gv = c->d[4] ? g + 2 * a.C : g + 2 * a.nrow;
            tt_attention_backward(cpu, gq, gk, gv, stats, q, k, v, out, dout, a.ld, a.B, a.T, a.C, a.NH);
            for (size_t r = 0; r < (size_t)a.B * a.T; r++)
                for (int j = 0; j < a.C; j++) {
                    o[0][r * a.C + j] = gq[r * a.ld + j];
                    o[1][r * a.C + j] = gk[r * a.ld + j];
                    o[2][r * a.C + j] = gv[r * a.ld + j];
                }
            memcpy(o[3], stats + ns, ns * sizeof(float));
            free(g);
        }
        free(out), free(stats);
        break;
    }
    case OP_GELU:
        if (c->dir == FWD) tt_gelu_forward(cpu, o[0], in[0], (size_t)c->d[0]);
        else tt_gelu_backward(cpu, o[0], in[0], in[1], (size_t)c->d[0]);
        break;
    case OP_CROSSENTROPY:
        if (c->dir == FWD) tt_crossentropy_forward(cpu, o[0], NULL, in[0], p->tok, c->d[0], c->d[1], p->dscale);
        else tt_crossentropy_backward(cpu, o[0], in[0], p->tok, c->d[0], c->d[1], p->dscale);
        break;
    case OP_ADAMW: {
        size_t n = p->lo.total;
        tt_span *spans;
        int64_t ns;
        if (tt_spans_build(&p->lo, &spans, &ns, NULL)) return FAILED;
        double *part = malloc((size_t)ns * sizeof(double));
        float *g = malloc(n * sizeof(float));
        memcpy(o[0], in[0], n * sizeof(float)), memcpy(g, in[1], n * sizeof(float));
        memcpy(o[1], in[2], n * sizeof(float)), memcpy(o[2], in[3], n * sizeof(float));
        double norm = sqrt(tt_adamw_grad_sumsq(cpu, g, spans, ns, part));
        float scale = norm > p->opt.clip ? (float)(p->opt.clip / (norm + 1e-6)) : 1.0f;
        tt_adamw_update(cpu, o[0], g, o[1], o[2], spans, ns, &p->opt, scale, 1);
        free(spans), free(part), free(g);
        break;
    }
    }
    tt_status st;
    if (tt_cpu_status(cpu, &st)) {
        fprintf(stderr, "  cpu: %s\n", st.msg);
        return FAILED;
    }
    return RAN;
}

/* ---- the table runner ---- */

typedef struct {
    const char *name;
    int (*run)(const op_case *c, problem *p);
} backend;

static const backend BACKENDS[] = {
    {"cpu", cpu_run},
};

static void case_label(const op_case *c, char *buf, size_t cap) {
    int nd = c->op == OP_ATTENTION ? 5 : c->op == OP_EMBEDDING ? 4 : c->op == OP_GELU ? 1 : c->op == OP_LAYERNORM || c->op == OP_CROSSENTROPY ? 2 : 3;
    int k = snprintf(buf, cap, "%s %s [", OP_NAMES[c->op], c->dir == FWD ? "fwd" : "bwd");
    for (int i = 0; i < nd && k < (int)cap; i++) k += snprintf(buf + k, cap - (size_t)k, i ? " %d" : "%d", c->d[i]);
    if (k < (int)cap) snprintf(buf + k, cap - (size_t)k, "]");
}

TT_TEST(every_op_on_every_backend) {
    int ran = 0, skipped = 0;
    for (size_t b = 0; b < sizeof BACKENDS / sizeof BACKENDS[0]; b++)
        for (int i = 0; i < N_CASES; i++) {
            const op_case *c = &CASES[i];
            char label[96];
            case_label(c, label, sizeof label);
            problem p;
            make_problem(c, &p);
            int rc = BACKENDS[b].run(c, &p);
            if (rc == SKIPPED) skipped++;
            CHECK_MSG(rc != FAILED, "%s %s: the backend failed", BACKENDS[b].name, label);
            if (rc == RAN) {
                ran++;
                for (int k = 0; k < p.n_out; k++) {
                    double e = tt_test_max_rel_err(p.out[k].f, p.out[k].ref, p.out[k].n);
                    CHECK_MSG(e <= c->tol, "%s %s: %s max rel err %.3g > %.1g", BACKENDS[b].name, label, p.out[k].name, e,
                              c->tol);
                }
            }
            free_problem(&p);
        }
    printf("  %d op cases run, %d skipped\n", ran, skipped);
}

int main(void) {
    tt_status st;
    /* scratch for the largest case of the table */
    size_t shared = TT_MAX(tt_matmul_backward_scratch(300, 290, 45), tt_matmul_backward_scratch(77, 260, 33));
    shared = TT_MAX(shared, tt_head_backward_scratch(33, 17, 256));
    shared = TT_MAX(shared, tt_layernorm_backward_scratch(127, 129));
    size_t thread = TT_MAX(tt_matmul_thread_scratch(), tt_attention_thread_scratch(65, 17));
    if (tt_cpu_create(&g_cpu, 3, shared, thread, &st)) {
        fprintf(stderr, "cpu context: %s\n", st.msg);
        return 1;
    }
    RUN(every_op_on_every_backend);
    tt_cpu_destroy(&g_cpu);
    return tt_test_summary();
}
