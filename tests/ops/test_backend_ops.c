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
 * Backends: the CPU always; WebGPU (the tt_gop_* planners of
 * src/webgpu/gpu_ops.h, with tests/support/gpu_test.h for upload and
 * read-back) where an adapter opens, else its cases are SKIPPED (FAILED
 * under TT_REQUIRE_WEBGPU=1). Every backend gets the same inputs and the
 * same tolerances. Adding one means writing its run() for the ops of the
 * table and one line in BACKENDS; a backend returns SKIPPED for an op it
 * does not have, and may add outputs of its own (extra_out).
 *
 * Filters (ctest runs the backends and op groups as separate tests,
 * CMakeLists.txt):
 *   test_backend_ops [--op NAME[,NAME..]]... [--skip-op NAME[,NAME..]]...
 *                    [--backend NAME[,NAME..]]...
 *   test_backend_ops --list      the op and backend names, cases per op
 * --op runs only the ops named (default: all), --skip-op leaves ops out
 * (so a last group of "every other op" takes any op added later).
 * Each case draws its inputs from its own seed (4242 + 64 x its index in
 * the table), so a filtered run checks the same numbers as the full one. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webgpu/gpu_ops.h"
#include "gpu_test.h"
#include "cpu/ops.h"
#include "ref64.h"
#include "rng.h"
#include "tt_test.h"

typedef enum { OP_EMBEDDING, OP_LAYERNORM, OP_MATMUL, OP_HEAD, OP_ATTENTION, OP_GELU, OP_CROSSENTROPY, OP_ADAMW, OP_DROPOUT,
               OP_LORA, OP_HEADXENT } op_kind;
#define N_OPS (OP_HEADXENT + 1)
/* the names --op takes, and the labels of the messages */
static const char *OP_KEYS[N_OPS] = {"embedding", "layernorm", "matmul", "head", "attention", "gelu",
                                     "crossentropy", "adamw", "dropout", "lora", "headxent"};
static const char *OP_NAMES[N_OPS] = {"embedding", "layernorm", "matmul", "matmul (head, W^T)", "attention", "gelu",
                                      "crossentropy", "adamw", "dropout", "lora", "head + crossentropy"};
enum { FWD = 0, BWD = 1 };

/* d[] per op:
 *   embedding     B T C V          layernorm  N C eps6 (eps = eps6 * 1e-6 as a float; 0: 1e-5)
 *   matmul        N C OC           head       N C V
 *   attention     B T NH hs packed (packed: q, k, v interleaved in one (B,T,3C) buffer)
 *   gelu          n act (tt_act)   crossentropy N V
 *   adamw         L C NH R (a tiny model's layout; one step with clipping;
 *                 R > 0: a LoRA layout, only the adapters update)
 *   lora          N C OC R target (target: TT_LORA_*, whose shape C -> OC has;
 *                 scale 8/R, peft's default alpha over R). Forward inputs inp
 *                 (N,C), a (C,R), b (R,OC), base (N,OC); outputs out = base +
 *                 scale (inp a) b and h = scale (inp a) (N,R). Backward inputs
 *                 inp, a, b, dout (N,OC); outputs dinp (the adapter's part),
 *                 da, db.
 *   dropout       B T C            (a (B,T,C) activation; element index (b*T + t)*C + c)
 *   headxent      N C V chunk      the tied head and cross-entropy of a model's
 *                 last rows: inputs x (N,C), wte (V,C), targets; forward: the
 *                 losses (N); backward: dx (N,C) and dwte (V,C) of the mean
 *                 scaled loss. The CPU runs its head and cross-entropy ops
 *                 over all rows; WebGPU in chunks of `chunk` rows
 *                 (tt_gop_head_crossentropy, the schedule's head where the
 *                 logits exceed one buffer).
 * drop: the dropout probability of a dropout case, and of the attention
 * probabilities in an attention case (0: none); the mask's key is the
 * problem's dkey (rng.h's contract: every backend drops the same elements). */
typedef struct {
    op_kind op;
    int dir;
    int d[5];
    double tol;
    float drop;
} op_case;

static const op_case CASES[] = {
    {OP_EMBEDDING, FWD, {2, 17, 13, 256}, 1e-7, 0},      {OP_EMBEDDING, BWD, {3, 5, 65, 256}, 1e-6, 0},
    {OP_EMBEDDING, FWD, {1, 1, 1, 7}, 1e-7, 0},          {OP_EMBEDDING, BWD, {2, 33, 17, 9}, 1e-6, 0},
    {OP_LAYERNORM, FWD, {1, 1}, 2e-5, 0},                {OP_LAYERNORM, FWD, {17, 65}, 2e-5, 0},
    {OP_LAYERNORM, FWD, {65, 127}, 2e-5, 0},             {OP_LAYERNORM, BWD, {3, 17}, 5e-5, 0},
    {OP_LAYERNORM, BWD, {65, 33}, 5e-5, 0},              {OP_LAYERNORM, BWD, {127, 129}, 5e-5, 0},
    {OP_MATMUL, FWD, {1, 3, 17}, 1e-6, 0},               {OP_MATMUL, FWD, {17, 65, 127}, 1e-6, 0},
    {OP_MATMUL, FWD, {300, 290, 45}, 1e-6, 0},           {OP_MATMUL, BWD, {1, 1, 1}, 1e-6, 0},
    {OP_MATMUL, BWD, {17, 3, 65}, 1e-6, 0},              {OP_MATMUL, BWD, {77, 260, 33}, 1e-6, 0},
    {OP_HEAD, FWD, {17, 13, 256}, 1e-6, 0},              {OP_HEAD, FWD, {1, 65, 17}, 1e-6, 0},
    {OP_HEAD, BWD, {33, 17, 256}, 1e-6, 0},              {OP_HEAD, BWD, {5, 3, 1}, 1e-6, 0},
    {OP_ATTENTION, FWD, {1, 1, 1, 4, 1}, 2e-6, 0},       {OP_ATTENTION, FWD, {2, 17, 3, 4, 1}, 2e-6, 0},
    {OP_ATTENTION, FWD, {1, 65, 2, 17, 0}, 2e-6, 0},     {OP_ATTENTION, FWD, {2, 33, 2, 16, 0}, 2e-6, 0},
    {OP_ATTENTION, BWD, {1, 3, 3, 1, 1}, 1e-5, 0},       {OP_ATTENTION, BWD, {2, 17, 3, 4, 0}, 1e-5, 0},
    {OP_ATTENTION, BWD, {1, 65, 2, 17, 1}, 1e-5, 0},     {OP_ATTENTION, BWD, {2, 33, 2, 16, 1}, 1e-5, 0},
    {OP_GELU, FWD, {1}, 1e-6, 0},                        {OP_GELU, FWD, {20001}, 1e-6, 0},
    {OP_GELU, BWD, {17}, 1e-6, 0},                       {OP_GELU, BWD, {8195}, 1e-6, 0},
    {OP_CROSSENTROPY, FWD, {1, 256}, 2e-6, 0},           {OP_CROSSENTROPY, FWD, {17, 3}, 2e-6, 0},
    {OP_CROSSENTROPY, BWD, {3, 127}, 2e-6, 0},           {OP_CROSSENTROPY, BWD, {65, 256}, 2e-6, 0},
    {OP_ADAMW, FWD, {1, 12, 3}, 1e-6, 0},                {OP_ADAMW, FWD, {2, 20, 2}, 1e-6, 0},
    /* dropout, and attention with dropout of its probabilities */
    {OP_DROPOUT, FWD, {2, 17, 13}, 1e-7, 0.1f},          {OP_DROPOUT, FWD, {1, 1, 1}, 1e-7, 0.5f},
    {OP_DROPOUT, FWD, {3, 33, 257}, 1e-7, 0.5f},         {OP_DROPOUT, BWD, {2, 17, 13}, 1e-7, 0.1f},
    {OP_DROPOUT, BWD, {3, 65, 129}, 1e-7, 0.5f},
    {OP_ATTENTION, FWD, {2, 17, 3, 4, 1}, 2e-6, 0.1f},   {OP_ATTENTION, FWD, {1, 65, 2, 16, 0}, 2e-6, 0.5f},
    {OP_ATTENTION, FWD, {2, 70, 2, 32, 1}, 2e-6, 0.1f},  {OP_ATTENTION, FWD, {1, 33, 2, 17, 1}, 2e-6, 0.5f},
    {OP_ATTENTION, BWD, {1, 3, 3, 1, 1}, 1e-5, 0.5f},    {OP_ATTENTION, BWD, {2, 17, 3, 4, 0}, 1e-5, 0.1f},
    {OP_ATTENTION, BWD, {1, 65, 2, 17, 1}, 1e-5, 0.5f},  {OP_ATTENTION, BWD, {2, 33, 2, 16, 1}, 1e-5, 0.1f},
    {OP_ATTENTION, BWD, {2, 70, 2, 32, 0}, 1e-5, 0.5f},
    /* LoRA */
    {OP_ADAMW, FWD, {2, 12, 3, 4}, 1e-6, 0},
    {OP_LORA, FWD, {1, 3, 9, 1, 0}, 1e-6, 0},            {OP_LORA, FWD, {17, 13, 39, 4, 0}, 1e-6, 0},
    {OP_LORA, FWD, {33, 17, 17, 8, 1}, 1e-6, 0},         {OP_LORA, FWD, {65, 9, 36, 8, 2}, 1e-6, 0},
    {OP_LORA, FWD, {31, 52, 13, 4, 3}, 1e-6, 0},         {OP_LORA, BWD, {1, 3, 9, 1, 0}, 3e-6, 0},
    {OP_LORA, BWD, {17, 13, 39, 4, 0}, 3e-6, 0},         {OP_LORA, BWD, {33, 17, 17, 8, 1}, 3e-6, 0},
    {OP_LORA, BWD, {65, 9, 36, 8, 2}, 3e-6, 0},          {OP_LORA, BWD, {31, 52, 13, 4, 3}, 3e-6, 0},
    {OP_LORA, BWD, {300, 20, 60, 8, 0}, 3e-6, 0},
    /* the architecture's variants (GPT-2: gelu_new, another eps) and vocabularies that are not 256 */
    {OP_GELU, FWD, {1, TT_ACT_GELU_TANH}, 1e-6, 0},      {OP_GELU, FWD, {20001, TT_ACT_GELU_TANH}, 1e-6, 0},
    {OP_GELU, BWD, {17, TT_ACT_GELU_TANH}, 1e-6, 0},     {OP_GELU, BWD, {8195, TT_ACT_GELU_TANH}, 1e-6, 0},
    {OP_LAYERNORM, FWD, {17, 65, 1000}, 2e-5, 0},        {OP_LAYERNORM, BWD, {65, 33, 1000}, 5e-5, 0},
    {OP_HEAD, FWD, {17, 13, 1000}, 1e-6, 0},             {OP_HEAD, FWD, {3, 16, 1003}, 1e-6, 0},
    {OP_HEAD, BWD, {9, 17, 1003}, 1e-6, 0},              {OP_CROSSENTROPY, FWD, {5, 1000}, 2e-6, 0},
    {OP_CROSSENTROPY, BWD, {3, 1003}, 2e-6, 0},          {OP_CROSSENTROPY, FWD, {2, 50257}, 2e-6, 0},
    /* vocabularies other than 256: 1000, an odd 997, GPT-2's 50257 */
    {OP_EMBEDDING, FWD, {2, 9, 12, 997}, 1e-7, 0},       {OP_EMBEDDING, BWD, {2, 33, 8, 1000}, 1e-6, 0},
    {OP_EMBEDDING, BWD, {3, 17, 5, 997}, 1e-6, 0},       {OP_HEAD, FWD, {17, 12, 997}, 1e-6, 0},
    {OP_HEAD, BWD, {33, 8, 1000}, 1e-6, 0},              {OP_CROSSENTROPY, FWD, {5, 997}, 2e-6, 0},
    {OP_CROSSENTROPY, BWD, {9, 1000}, 2e-6, 0},          {OP_CROSSENTROPY, FWD, {3, 50257}, 2e-6, 0},
    {OP_CROSSENTROPY, BWD, {2, 50257}, 2e-6, 0},
    /* the head and cross-entropy in chunks (WebGPU): several chunks, a last
     * partial one, one chunk of all rows */
    {OP_HEADXENT, FWD, {37, 12, 997, 8}, 2e-6, 0},       {OP_HEADXENT, FWD, {20, 8, 1000, 20}, 2e-6, 0},
    {OP_HEADXENT, BWD, {37, 12, 997, 8}, 5e-6, 0},       {OP_HEADXENT, BWD, {33, 16, 1000, 16}, 5e-6, 0},
    {OP_HEADXENT, BWD, {5, 4, 256, 1}, 5e-6, 0},
};
#define N_CASES (int)(sizeof CASES / sizeof CASES[0])

/* ---- problems: inputs and reference outputs ---- */

/* a layernorm case's epsilon as the float the backends get */
static float case_eps_f(const op_case *c) { return c->d[2] ? (float)(c->d[2] * 1e-6) : TT_LN_EPS_DEFAULT; }
static double case_eps(const op_case *c) { return c->d[2] ? (double)case_eps_f(c) : 1e-5; }

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
    float drop;          /* the case's dropout probability */
    tt_dropout_key dkey; /* its mask's key */
} problem;

/* the seed of the next random input; each case starts at its own (CASE_SEED) */
static uint64_t g_seed;
#define CASE_SEED(i) (4242 + 64 * (uint64_t)(i)) /* a case draws fewer than 64 */

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
    if (c->drop > 0.0f || c->op == OP_DROPOUT) {
        p->drop = c->drop;
        p->dkey = tt_dropout_key_at(g_seed++, 0, 1, 0, 1, 0, TT_DROP_ATTN);
    }
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
        const double eps = case_eps(c);
        float *x = add_in(p, "inp", n, -3, 3), *w = add_in(p, "weight", C, 0.5f, 1.5f), *b = add_in(p, "bias", C, -0.5f, 0.5f);
        for (int i = 0; i < N; i++) /* rows with different means and scales */
            for (int k = 0; k < C; k++) x[(size_t)i * C + k] = x[(size_t)i * C + k] * (1.0f + i % 4) + (float)(i % 7) - 3.0f;
        double *dx = D(x, n), *dw = D(w, C), *db = D(b, C);
        if (c->dir == FWD) {
            double *out = add_out(p, "out", n), *stats = add_out(p, "mean", N);
            double *both = ref_alloc(2 * (size_t)N);
            ref_layernorm_forward(out, both, dx, dw, db, N, C, eps);
            memcpy(stats, both, (size_t)N * sizeof(double));
            free(both);
        } else {
            float *dout = add_in(p, "dout", n, -1, 1);
            double *dd = D(dout, n);
            /* C == 1: the normalised value is exactly 0 and dinp is rounding noise */
            double *rdx = add_out(p, "dinp", n), *rdw = add_out(p, "dweight", C), *rdb = add_out(p, "dbias", C);
            ref_layernorm_backward(rdx, rdw, rdb, dd, dx, dw, N, C, eps);
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
        ref_attention_forward_dropout(out, stats, dq, dk, dv, a.ld, a.B, a.T, a.C, a.NH, p->drop, p->dkey);
        if (c->dir == FWD) {
            memcpy(add_out(p, "out", n1), out, n1 * sizeof(double));
            memcpy(add_out(p, "lse", ns), stats, ns * sizeof(double));
        } else {
            float *dout = add_in(p, "dout", n1, -1, 1);
            double *dd = D(dout, n1);
            double *gq = ref_alloc(a.nrow), *gk = c->d[4] ? gq + a.C : ref_alloc(a.nrow), *gv = c->d[4] ? gq + 2 * a.C : ref_alloc(a.nrow);
            ref_attention_backward_dropout(gq, gk, gv, stats, dq, dk, dv, dd, a.ld, a.B, a.T, a.C, a.NH, p->drop, p->dkey);
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
        if (c->dir == FWD) ref_gelu_forward(add_out(p, "out", n), dx, n, c->d[1]);
        else {
            float *dout = add_in(p, "dout", n, -1, 1);
            double *dd = D(dout, n);
            ref_gelu_backward(add_out(p, "dinp", n), dx, dd, n, c->d[1]);
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
    case OP_HEADXENT: {
        const int N = c->d[0], C = c->d[1], V = c->d[2];
        const size_t nv = (size_t)N * V;
        float *x = add_in(p, "inp", (size_t)N * C, -1, 1), *w = add_in(p, "wte", (size_t)V * C, -1, 1);
        p->tok = tokens(N, V);
        p->dscale = 1.0f / (float)(3 * N);
        double *dx = D(x, (size_t)N * C), *dw = D(w, (size_t)V * C), *lg = ref_alloc(nv);
        ref_head_forward(lg, dx, dw, N, C, V);
        if (c->dir == FWD) ref_crossentropy_forward(add_out(p, "losses", N), NULL, lg, p->tok, N, V, p->dscale);
        else {
            double *dl = ref_alloc(nv);
            ref_crossentropy_backward(dl, lg, p->tok, N, V, p->dscale);
            double *rdx = add_out(p, "dinp", (size_t)N * C), *rdw = add_out(p, "dwte", (size_t)V * C);
            ref_head_backward(rdx, rdw, dl, dx, dw, N, C, V);
            free(dl);
        }
        free(dx), free(dw), free(lg);
        break;
    }
    case OP_DROPOUT: {
        size_t n = (size_t)c->d[0] * c->d[1] * c->d[2];
        float *x = add_in(p, c->dir == FWD ? "inp" : "dout", n, -2, 2);
        double *dx = D(x, n);
        if (c->dir == FWD) ref_dropout_forward(add_out(p, "out", n), dx, p->drop, p->dkey, n);
        else ref_dropout_backward(add_out(p, "dinp", n), dx, p->drop, p->dkey, n);
        free(dx);
        break;
    }
    case OP_LORA: {
        int N = c->d[0], C = c->d[1], OC = c->d[2], R = c->d[3];
        double scale = 8.0 / R;
        float *x = add_in(p, "inp", (size_t)N * C, -1, 1), *a = add_in(p, "a", (size_t)C * R, -1, 1);
        float *b = add_in(p, "b", (size_t)R * OC, -1, 1);
        double *dx = D(x, (size_t)N * C), *da = D(a, (size_t)C * R), *db = D(b, (size_t)R * OC);
        if (c->dir == FWD) {
            float *base = add_in(p, "base", (size_t)N * OC, -1, 1);
            double *out = add_out(p, "out", (size_t)N * OC), *h = add_out(p, "h", (size_t)N * R);
            ref_lora_forward(out, h, dx, da, db, scale, N, C, OC, R);
            for (size_t i = 0; i < (size_t)N * OC; i++) out[i] += base[i];
        } else {
            float *dout = add_in(p, "dout", (size_t)N * OC, -1, 1);
            double *dd = D(dout, (size_t)N * OC);
            double *rdx = add_out(p, "dinp", (size_t)N * C), *rda = add_out(p, "da", (size_t)C * R);
            ref_lora_backward(rdx, rda, add_out(p, "db", (size_t)R * OC), dd, dx, da, db, scale, N, C, OC, R);
            free(dd);
        }
        free(dx), free(da), free(db);
        break;
    }
    case OP_ADAMW: {
        /* d[3] > 0: a LoRA layout of that rank (frozen base, adapters train) */
        tt_model_config cfg = {c->d[0], c->d[1], c->d[2], 9, 2, TT_VOCAB, c->d[3], c->d[3] ? TT_LORA_ALL : 0, 8.0f, 0, 0.0f};
        tt_layout_build(&cfg, &p->lo, NULL);
        size_t n = p->lo.total;
        float *pr = add_in(p, "params", n, -1, 1), *g = add_in(p, "grads", n, -1, 1);
        float *m = add_in(p, "m", n, -0.1f, 0.1f), *v = add_in(p, "v", n, 0, 0.01f);
        p->opt = (tt_optim_args){1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, 0, 0, 0.0f, 0, 0};
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
        tt_layernorm_forward(cpu, out, stats, in[0], in[1], in[2], N, C, case_eps_f(c));
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
        tt_dropout_mask dm = tt_dropout_mask_make(p->drop, p->dkey);
        tt_attention_forward(cpu, out, stats, q, k, v, a.ld, a.B, a.T, a.C, a.NH, &dm);
        if (c->dir == FWD) {
            memcpy(o[0], out, n1 * sizeof(float)), memcpy(o[1], stats, ns * sizeof(float));
        } else {
            const float *dout = in[c->d[4] ? 1 : 3];
            size_t nb = c->d[4] ? a.nrow : 3 * a.nrow;
            float *g = malloc(nb * sizeof(float));
            tt_test_poison(g, nb);
            float *gq = g, *gk = c->d[4] ? g + a.C : g + a.nrow, *gv = c->d[4] ? g + 2 * a.C : g + 2 * a.nrow;
            tt_attention_backward(cpu, gq, gk, gv, stats, q, k, v, out, dout, a.ld, a.B, a.T, a.C, a.NH, &dm);
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
        if (c->dir == FWD) tt_gelu_forward(cpu, o[0], in[0], (size_t)c->d[0], c->d[1]);
        else tt_gelu_backward(cpu, o[0], in[0], in[1], (size_t)c->d[0], c->d[1]);
        break;
    case OP_CROSSENTROPY:
        if (c->dir == FWD) tt_crossentropy_forward(cpu, o[0], NULL, in[0], p->tok, c->d[0], c->d[1], p->dscale);
        else tt_crossentropy_backward(cpu, o[0], in[0], p->tok, c->d[0], c->d[1], p->dscale);
        break;
    case OP_HEADXENT: {
        const int N = c->d[0], C = c->d[1], V = c->d[2];
        float *lg = malloc((size_t)N * V * sizeof(float));
        tt_head_forward(cpu, lg, in[0], in[1], N, C, V);
        if (c->dir == FWD) tt_crossentropy_forward(cpu, o[0], NULL, lg, p->tok, N, V, p->dscale);
        else {
            float *dl = malloc((size_t)N * V * sizeof(float));
            tt_crossentropy_backward(cpu, dl, lg, p->tok, N, V, p->dscale);
            memset(o[1], 0, p->out[1].n * sizeof(float));
            tt_head_backward(cpu, o[0], o[1], dl, in[0], in[1], N, C, V);
            free(dl);
        }
        free(lg);
        break;
    }
    case OP_DROPOUT: {
        tt_dropout_mask dm = tt_dropout_mask_make(p->drop, p->dkey);
        if (c->dir == FWD) tt_dropout_forward(cpu, o[0], in[0], &dm, p->out[0].n);
        else tt_dropout_backward(cpu, o[0], in[0], &dm, p->out[0].n);
        break;
    }
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
    case OP_LORA: {
        int N = c->d[0], C = c->d[1], OC = c->d[2], R = c->d[3];
        float scale = 8.0f / (float)R;
        if (c->dir == FWD) {
            memcpy(o[0], in[3], (size_t)N * OC * sizeof(float));
            tt_lora_forward(cpu, o[0], o[1], in[0], in[1], in[2], scale, N, C, OC, R);
        } else {
            /* h from the forward, then the backward into zeroed gradients */
            float *h = malloc((size_t)N * R * sizeof(float)), *dh = malloc((size_t)N * R * sizeof(float));
            float *junk = malloc((size_t)N * OC * sizeof(float));
            tt_lora_forward(cpu, junk, h, in[0], in[1], in[2], scale, N, C, OC, R);
            for (int i = 0; i < 3; i++) memset(o[i], 0, p->out[i].n * sizeof(float));
            tt_lora_backward(cpu, o[0], o[1], o[2], dh, in[3], in[0], in[1], in[2], h, scale, N, C, OC, R);
            free(h), free(dh), free(junk);
        }
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

/* ---- the WebGPU backend ----
 * The tt_gop_* planners of src/webgpu/gpu_ops.h on the problem's inputs:
 * upload, plan the op's sites, run them, read back. Outputs start poisoned
 * (NaN), parameter gradients at zero (the GPU accumulates into them). The
 * GPU contracts differ from the CPU ones, and the runner adapts:
 *  - tokens are u32 (B,T+1) with the targets one column right
 *    (crossentropy: one batch row of T = N), and the embedding backward
 *    reads them bucketed by token (tt_gop_embedding_buckets);
 *  - wte and wpe, LayerNorm's w and b, and its dw and db share one buffer;
 *  - crossentropy is one kernel: losses and the logits overwritten by
 *    dlogits * grad_scale (the step uniforms);
 *  - the head (logits = inp . wte^T) is a matmul with trans_b, its backward
 *    two matmuls (the product's schedule, src/webgpu/schedule.c);
 *  - matmul's dW and db: the product folds db into dW (a ones row of op(A))
 *    or sums columns; both paths run, the second as extra outputs;
 *  - attention takes q, k, v as three (B,T,C) buffers: a packed (B,T,3C)
 *    case is split on the host; its backward reads y and lse of a forward;
 *  - adamw: whole buffers with a u32 decay mask built from the layout; the
 *    grad norm (stats[1]) is an extra output; a LoRA layout updates the
 *    adapters' range alone (its own parts and mask, as a backend chunk's
 *    trainable range);
 *  - lora: c_attn's output (and its gradient) is q, k, v, three buffers
 *    reading column blocks of b; t = inp a is kept unscaled (h = scale * t
 *    is compared); the backward reads t from a forward first.
 *  - dropout: the case's key in slot 0 of the planner's keys buffer
 *    (tt_gops_set_drop); attention with dropout runs the kernels' dropout
 *    variants (tt_gop_attention_*_drop), the dropout op tt_gop_dropout.
 * Without an adapter every case is SKIPPED (FAILED under TT_REQUIRE_WEBGPU=1). */

static tt_gops g_gops;
static int g_gpu_ok;         /* 1 device and planner ready, 0 no adapter, -1 the planner failed */
static char g_gpu_why[600];  /* why not */

#define GPU_MAXBUF 24
static tt_gpu_buf g_gbuf[GPU_MAXBUF];
static int g_ngbuf, g_gbuf_over;

static tt_gpu_buf gkeep(tt_gpu_buf b) {
    if (g_ngbuf < GPU_MAXBUF) g_gbuf[g_ngbuf++] = b;
    else g_gbuf_over = 1;
    return b;
}
static tt_gpu_buf gup(const void *x, size_t n) { return gkeep(tt_gtest_up(x, n)); }
static tt_gpu_buf gpois(size_t n) { return gkeep(tt_gtest_poisoned(n)); }
static tt_gpu_buf gzero(size_t n) {
    float *z = calloc(n ? n : 1, sizeof *z);
    tt_gpu_buf b = gup(z, n);
    free(z);
    return b;
}
/* n floats from element off of b into dst */
static void gdown(tt_gpu_buf b, size_t off, float *dst, size_t n) {
    float *t = malloc((off + n) * sizeof *t);
    tt_gtest_down(b, t, off + n);
    memcpy(dst, t + off, n * sizeof *t);
    free(t);
}
static tt_gref GR(tt_gpu_buf b, size_t off) {
    tt_gref r = {b, (uint32_t)off};
    return r;
}
/* an output only this backend has: its reference copied from src */
static float *extra_out(problem *p, const char *name, const double *src, size_t n) {
    memcpy(add_out(p, name, n), src, n * sizeof(double));
    return p->out[p->n_out - 1].f;
}
/* tokens (B,T+1) u32 of the inputs (B,T); the last column 0 (any valid id) */
static uint32_t *gpu_tokens(const int32_t *tok, int B, int T, size_t extra) {
    uint32_t *u = calloc((size_t)B * (T + 1) + extra, sizeof *u);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) u[(size_t)b * (T + 1) + t] = (uint32_t)tok[(size_t)b * T + t];
    return u;
}

static int gpu_run(const op_case *c, problem *p) {
    const char *req = getenv("TT_REQUIRE_WEBGPU");
    if (g_gpu_ok == 0) return req && atoi(req) ? FAILED : SKIPPED;
    if (g_gpu_ok < 0) return FAILED;
    tt_gops *O = &g_gops;
    tt_status st;
    /* dropout: the case's key in slot 0 of the keys buffer, its p */
    const int drop = c->op == OP_DROPOUT || c->drop > 0.0f;
    uint32_t dwords[6];
    if (drop && tt_gops_set_drop(O, p->drop, &p->dkey, 1, dwords, &st)) {
        fprintf(stderr, "  webgpu dropout keys: %s\n", st.msg);
        return FAILED;
    }
    tt_gsite s[48];
    int ns = 0, rc = RAN;
    const int failed0 = tt_test_failed_checks;
    memset(s, 0, sizeof s);
    g_ngbuf = 0, g_gbuf_over = 0;
    float **in = (float *[MAX_T]){0};
    for (int i = 0; i < p->n_in; i++) in[i] = p->in[i].f;
    float **o = (float *[MAX_T]){0};
    for (int i = 0; i < p->n_out; i++) o[i] = p->out[i].f, tt_test_poison(o[i], p->out[i].n);
#define PLAN(call)                                                              \
    do {                                                                        \
        if ((call)) {                                                           \
            fprintf(stderr, "  webgpu plan: %s\n", st.msg);                     \
            rc = FAILED;                                                        \
            goto done;                                                          \
        }                                                                       \
    } while (0)
    switch (c->op) {
    case OP_EMBEDDING: {
        const int B = c->d[0], T = c->d[1], C = c->d[2], V = c->d[3];
        const size_t n = (size_t)B * T * C, ntok = (size_t)B * (T + 1), VC = (size_t)V * C, TC = (size_t)T * C;
        uint32_t *tok = gpu_tokens(p->tok, B, T, (size_t)V + 1 + (size_t)B * T);
        const uint32_t boff = (uint32_t)ntok, poff = boff + (uint32_t)V + 1;
        tt_gop_embedding_buckets(tok, B, T, V, tok + boff, tok + poff);
        tt_gpu_buf btok = gup(tok, ntok + V + 1 + (size_t)B * T);
        free(tok);
        if (c->dir == FWD) {
            float *wp = malloc((VC + TC) * sizeof *wp); /* [wte (V,C); wpe (T,C)] */
            memcpy(wp, in[0], VC * sizeof *wp), memcpy(wp + VC, in[1], TC * sizeof *wp);
            tt_gpu_buf bw = gup(wp, VC + TC), bo = gpois(n);
            free(wp);
            PLAN(tt_gop_embedding_forward(O, &s[ns], GR(bo, 0), GR(btok, 0), GR(bw, 0), GR(bw, VC), B, T, C, &st));
            ns += 1;
            tt_gtest_run(s, ns);
            gdown(bo, 0, o[0], n);
        } else {
            tt_gpu_buf bg = gzero(VC + TC), bd = gup(in[2], n);
            PLAN(tt_gop_embedding_backward(O, &s[ns], GR(bg, 0), GR(bg, VC), GR(bd, 0), btok, boff, poff, B, T, C, V,
                                           &st));
            ns += 2;
            tt_gtest_run(s, ns);
            gdown(bg, 0, o[0], VC), gdown(bg, VC, o[1], TC);
        }
        break;
    }
    case OP_LAYERNORM: {
        const int N = c->d[0], C = c->d[1];
        const size_t n = (size_t)N * C;
        const float eps = case_eps_f(c); /* a constant of the kernel (its prefix) */
        float *wb = malloc(2 * (size_t)C * sizeof *wb); /* [w (C); b (C)] */
        memcpy(wb, in[1], C * sizeof *wb), memcpy(wb + C, in[2], C * sizeof *wb);
        tt_gpu_buf bx = gup(in[0], n), bwb = gup(wb, 2 * (size_t)C), bo = gpois(n), bst = gpois(2 * (size_t)N);
        free(wb);
        PLAN(tt_gop_layernorm_forward(O, &s[ns], GR(bo, 0), GR(bst, 0), GR(bx, 0), GR(bwb, 0), GR(bwb, C), N, C, eps, &st));
        ns += 1;
        if (c->dir == FWD) {
            tt_gtest_run(s, ns);
            gdown(bo, 0, o[0], n), gdown(bst, 0, o[1], (size_t)N);
        } else {
            tt_gpu_buf bd = gup(in[3], n), bdx = gpois(n), bg = gzero(2 * (size_t)C); /* [dw; db] */
            tt_gpu_buf part = gpois(tt_gop_colsum_part_elems(N, 2 * C));
            PLAN(tt_gop_layernorm_backward(O, &s[ns], GR(bdx, 0), GR(bg, 0), GR(bd, 0), GR(bx, 0), GR(bwb, 0),
                                           GR(bst, 0), GR(part, 0), N, C, 0, &st));
            ns += 3;
            tt_gtest_run(s, ns);
            gdown(bdx, 0, o[0], n), gdown(bg, 0, o[1], (size_t)C), gdown(bg, C, o[2], (size_t)C);
            if (C == 1) memset(o[0], 0, (size_t)N * sizeof(float)); /* rounding noise around 0 */
        }
        break;
    }
    case OP_MATMUL:
    case OP_HEAD: {
        /* matmul: weight (C,OC); head: weight = wte (V,C) with V = OC */
        const int N = c->d[0], C = c->d[1], OC = c->d[2], head = c->op == OP_HEAD;
        const size_t nx = (size_t)N * C, nw = (size_t)C * OC, ny = (size_t)N * OC;
        tt_gpu_buf bx = gup(in[0], nx), bw = gup(in[1], nw);
        if (c->dir == FWD) {
            tt_gpu_buf bo = gpois(ny), bb = head ? -1 : gup(in[2], (size_t)OC);
            tt_gref bias = GR(bb, 0);
            PLAN(tt_gop_matmul(O, &s[ns], GR(bo, 0), GR(bx, 0), GR(bw, 0), head ? NULL : &bias, NULL, N, OC, C, 0, head,
                               0, &st));
            ns += TT_GOP_MM_SITES;
            tt_gtest_run(s, ns);
            gdown(bo, 0, o[0], ny);
        } else if (head) {
            tt_gpu_buf bd = gup(in[2], ny), bdx = gpois(nx), bg = gzero(nw);
            /* dinp (N,C) = dlogits (N,V) @ wte (V,C); dwte (V,C) += dlogits^T @ inp */
            PLAN(tt_gop_matmul(O, &s[ns], GR(bdx, 0), GR(bd, 0), GR(bw, 0), NULL, NULL, N, C, OC, 0, 0, 0, &st));
            ns += TT_GOP_MM_SITES;
            PLAN(tt_gop_matmul(O, &s[ns], GR(bg, 0), GR(bd, 0), GR(bx, 0), NULL, NULL, OC, C, N, 1, 0, 1, &st));
            ns += TT_GOP_MM_SITES;
            tt_gtest_run(s, ns);
            gdown(bdx, 0, o[0], nx), gdown(bg, 0, o[1], nw);
        } else {
            float *ow2 = extra_out(p, "dweight (column-sum path)", p->out[1].ref, nw);
            float *ob2 = extra_out(p, "dbias (column-sum path)", p->out[2].ref, (size_t)OC);
            tt_gpu_buf bd = gup(in[3], ny), bdx = gpois(nx), bg = gzero(nw + OC); /* [dW (C,OC); db (OC)] */
            tt_gpu_buf bg2 = gzero(nw), bb2 = gzero((size_t)OC), part = gpois(tt_gop_colsum_part_elems(N, OC));
            /* dinp (N,C) = dout (N,OC) @ W^T */
            PLAN(tt_gop_matmul(O, &s[ns], GR(bdx, 0), GR(bd, 0), GR(bw, 0), NULL, NULL, N, C, OC, 0, 1, 0, &st));
            ns += TT_GOP_MM_SITES;
            /* [dW; db] += [inp^T; 1] @ dout: the bias gradient folded (one ones row) */
            PLAN(tt_gop_matmul_ex(O, &s[ns], GR(bg, 0), GR(bx, 0), GR(bd, 0), NULL, NULL, C + 1, OC, N, 1, 0, 1, 1, &st));
            ns += TT_GOP_MM_SITES;
            /* dW += inp^T @ dout, db += column sums of dout */
            PLAN(tt_gop_matmul(O, &s[ns], GR(bg2, 0), GR(bx, 0), GR(bd, 0), NULL, NULL, C, OC, N, 1, 0, 1, &st));
            ns += TT_GOP_MM_SITES;
            PLAN(tt_gop_matmul_backward_bias(O, &s[ns], GR(bb2, 0), GR(bd, 0), GR(part, 0), N, OC, &st));
            ns += 2;
            tt_gtest_run(s, ns);
            gdown(bdx, 0, o[0], nx), gdown(bg, 0, o[1], nw), gdown(bg, nw, o[2], (size_t)OC);
            gdown(bg2, 0, ow2, nw), gdown(bb2, 0, ob2, (size_t)OC);
        }
        break;
    }
    case OP_ATTENTION: {
        att_shape a = att_dims(c);
        const size_t n1 = (size_t)a.B * a.T * a.C, nsr = (size_t)a.B * a.NH * a.T;
        /* q, k, v as three (B,T,C) buffers (split from the packed rows) */
        tt_gpu_buf bqkv[3];
        float *tmp = malloc(n1 * sizeof *tmp);
        for (int j = 0; j < 3; j++) {
            const float *src = c->d[4] ? in[0] + (size_t)j * a.C : in[j];
            for (size_t r = 0; r < (size_t)a.B * a.T; r++) memcpy(tmp + r * a.C, src + r * a.ld, (size_t)a.C * sizeof *tmp);
            bqkv[j] = gup(tmp, n1);
        }
        free(tmp);
        tt_gpu_buf by = gpois(n1), bst = gpois(2 * nsr); /* stats: lse then D */
        if (drop)
            PLAN(tt_gop_attention_forward_drop(O, &s[ns], GR(by, 0), GR(bst, 0), GR(bqkv[0], 0), GR(bqkv[1], 0),
                                               GR(bqkv[2], 0), a.B, a.T, a.C, a.NH, 0, &st));
        else
            PLAN(tt_gop_attention_forward(O, &s[ns], GR(by, 0), GR(bst, 0), GR(bqkv[0], 0), GR(bqkv[1], 0),
                                          GR(bqkv[2], 0), a.B, a.T, a.C, a.NH, &st));
        ns += 1;
        if (c->dir == FWD) {
            tt_gtest_run(s, ns);
            gdown(by, 0, o[0], n1), gdown(bst, 0, o[1], nsr);
        } else {
            tt_gpu_buf bdy = gup(in[c->d[4] ? 1 : 3], n1), bdq = gpois(n1), bdk = gpois(n1), bdv = gpois(n1);
            if (drop)
                PLAN(tt_gop_attention_backward_drop(O, &s[ns], GR(bdq, 0), GR(bdk, 0), GR(bdv, 0), GR(bst, 0),
                                                    GR(bqkv[0], 0), GR(bqkv[1], 0), GR(bqkv[2], 0), GR(by, 0),
                                                    GR(bdy, 0), a.B, a.T, a.C, a.NH, 0, &st));
            else
                PLAN(tt_gop_attention_backward(O, &s[ns], GR(bdq, 0), GR(bdk, 0), GR(bdv, 0), GR(bst, 0),
                                               GR(bqkv[0], 0), GR(bqkv[1], 0), GR(bqkv[2], 0), GR(by, 0), GR(bdy, 0),
                                               a.B, a.T, a.C, a.NH, &st));
            ns += 3;
            tt_gtest_run(s, ns);
            gdown(bdq, 0, o[0], n1), gdown(bdk, 0, o[1], n1), gdown(bdv, 0, o[2], n1), gdown(bst, nsr, o[3], nsr);
        }
        break;
    }
    case OP_DROPOUT: { /* forward and backward alike: out = mask * in (the residual form is the backend's) */
        const size_t n = p->out[0].n;
        tt_gpu_buf bx = gup(in[0], n), bo = gpois(n);
        PLAN(tt_gop_dropout(O, &s[ns], GR(bo, 0), GR(bx, 0), n, 0, 0, &st));
        ns += 1;
        tt_gtest_run(s, ns);
        gdown(bo, 0, o[0], n);
        break;
    }
    case OP_GELU: {
        const size_t n = (size_t)c->d[0];
        const int act = c->d[1]; /* the kernel's form, chosen when its site is planned */
        tt_gpu_buf bx = gup(in[0], n);
        if (c->dir == FWD) {
            tt_gpu_buf bo = gpois(n);
            PLAN(tt_gop_gelu_forward(O, &s[ns], GR(bo, 0), GR(bx, 0), n, act, &st));
            ns += 1;
            tt_gtest_run(s, ns);
            gdown(bo, 0, o[0], n);
        } else {
            tt_gpu_buf bd = gup(in[1], n); /* in place: d = dout * gelu'(inp) */
            PLAN(tt_gop_gelu_backward(O, &s[ns], GR(bd, 0), GR(bx, 0), n, act, &st));
            ns += 1;
            tt_gtest_run(s, ns);
            gdown(bd, 0, o[0], n);
        }
        break;
    }
    case OP_CROSSENTROPY: {
        /* one batch row of T = N: targets at tokens[1..N] */
        const int N = c->d[0], V = c->d[1];
        const size_t nv = (size_t)N * V;
        uint32_t *tok = calloc((size_t)N + 1, sizeof *tok);
        for (int r = 0; r < N; r++) tok[r + 1] = (uint32_t)p->tok[r];
        tt_gpu_buf btok = gup(tok, (size_t)N + 1), blg = gup(in[0], nv), bl = gpois((size_t)N);
        free(tok);
        tt_gstep sp;
        memset(&sp, 0, sizeof sp);
        sp.grad_scale = p->dscale, sp.loss_scale = 1.0f / (float)N, sp.valid_rows = (uint32_t)N;
        PLAN(tt_gops_set_step(O, &sp, &st));
        PLAN(tt_gop_crossentropy(O, &s[ns], GR(blg, 0), GR(bl, 0), GR(btok, 0), N, V, N, &st));
        ns += 1;
        tt_gtest_run(s, ns);
        if (c->dir == FWD) gdown(bl, 0, o[0], (size_t)N);
        else gdown(blg, 0, o[0], nv);
        break;
    }
    case OP_HEADXENT: {
        /* one batch row of T = N (targets at tokens[1..N]); logits hold one
         * chunk of rows padded to ldv = V rounded up to 4: wte's buffer has
         * ldv - V more rows (finite values the head must ignore), dwte's
         * extra rows must keep their values */
        const int N = c->d[0], C = c->d[1], V = c->d[2], ch = c->d[3], ldv = (V + 3) / 4 * 4;
        const size_t VC = (size_t)V * C, PC = (size_t)ldv * C;
        uint32_t *tok = calloc((size_t)N + 1, sizeof *tok);
        for (int r = 0; r < N; r++) tok[r + 1] = (uint32_t)p->tok[r];
        float *wp = malloc(PC * sizeof *wp), *gp = calloc(PC, sizeof *gp), *gback = malloc(PC * sizeof *gback);
        memcpy(wp, in[1], VC * sizeof *wp);
        for (size_t i = VC; i < PC; i++) wp[i] = 3.0f - (float)(i % 7), gp[i] = 1.5f;
        tt_gpu_buf btok = gup(tok, (size_t)N + 1), bx = gup(in[0], (size_t)N * C), bw = gup(wp, PC);
        tt_gpu_buf blg = gpois((size_t)ch * ldv), bl = gpois((size_t)N);
        free(tok), free(wp);
        tt_gstep sp;
        memset(&sp, 0, sizeof sp);
        sp.grad_scale = p->dscale, sp.loss_scale = 1.0f / (float)N, sp.valid_rows = (uint32_t)N;
        PLAN(tt_gops_set_step(O, &sp, &st));
        const int bwd = c->dir == BWD, n = tt_gop_head_crossentropy_sites(N, ch, bwd, bwd);
        tt_gsite *hs = calloc((size_t)n, sizeof *hs);
        tt_gpu_buf bdx = bwd ? gpois((size_t)N * C) : -1, bdw = bwd ? gup(gp, PC) : -1;
        free(gp);
        const tt_gref dx = GR(bdx, 0), dw = GR(bdw, 0);
        if (tt_gop_head_crossentropy(O, hs, GR(blg, 0), GR(bl, 0), GR(btok, 0), GR(bx, 0), GR(bw, 0), bwd ? &dx : NULL,
                                     bwd ? &dw : NULL, N, C, V, ldv, N, ch, &st)) {
            fprintf(stderr, "  webgpu plan: %s\n", st.msg);
            free(hs), free(gback);
            rc = FAILED;
            goto done;
        }
        tt_gtest_run(hs, n);
        free(hs);
        if (!bwd) gdown(bl, 0, o[0], (size_t)N);
        else {
            gdown(bdx, 0, o[0], (size_t)N * C), gdown(bdw, 0, gback, PC);
            memcpy(o[1], gback, VC * sizeof *gback);
            int kept = 1;
            for (size_t i = VC; i < PC; i++) kept &= gback[i] == 1.5f;
            CHECK_MSG(kept, "webgpu headxent: the padded rows of dwte changed");
        }
        free(gback);
        break;
    }
    case OP_ADAMW: {
        /* the trainable range [t0, n): all of it, or a LoRA layout's
         * adapters alone, as a backend chunk's trainable range (pchunk base
         * t0, its own norm parts; mask bit i = parameter t0 + i) */
        const size_t n = p->lo.total, t0 = tt_layout_train0(&p->lo), nt = n - t0;
        const size_t nw = (nt + 31) / 32;
        uint32_t *mask = calloc(nw, sizeof *mask);
        for (int t = 0; t < p->lo.n_tensors; t++)
            if (p->lo.t[t].decay && p->lo.t[t].trainable)
                for (size_t j = p->lo.t[t].offset - t0; j < p->lo.t[t].offset - t0 + p->lo.t[t].numel; j++)
                    mask[j >> 5] |= 1u << (j & 31);
        double ss = 0;
        for (size_t i = t0; i < n; i++) ss += (double)in[1][i] * in[1][i];
        const double norm = sqrt(ss);
        float *onorm = extra_out(p, "grad norm", &norm, 1);
        tt_gpu_buf bp = gup(in[0], n), bg = gup(in[1], n), bm = gup(in[2], n), bv = gup(in[3], n), bmask = gup(mask, nw);
        tt_gpu_buf part = gpois(tt_gop_adamw_part_elems(nt)), bst = gpois(4);
        free(mask);
        const tt_optim_args *q = &p->opt;
        tt_gstep sp;
        memset(&sp, 0, sizeof sp);
        sp.lr = q->lr, sp.b1 = q->beta1, sp.b2 = q->beta2, sp.eps = q->eps, sp.wd = q->weight_decay, sp.clip = q->clip;
        sp.bc1 = q->bc1, sp.bc2 = q->bc2;
        PLAN(tt_gops_set_step(O, &sp, &st));
        if (!t0) {
            PLAN(tt_gop_adamw(O, &s[ns], bp, bg, bm, bv, bmask, part, bst, n, &st));
        } else {
            const size_t per = tt_gop_norm_part_len(nt);
            const uint32_t np = (uint32_t)((nt + per - 1) / per);
            uint32_t *desc = malloc((size_t)np * 2 * sizeof *desc);
            for (uint32_t k = 0; k < np; k++) {
                desc[2 * k] = (uint32_t)(t0 + k * per);
                desc[2 * k + 1] = (uint32_t)(t0 + ((k + 1) * per < nt ? (k + 1) * per : nt));
            }
            tt_gpu_buf bdesc = gup(desc, 2 * (size_t)np);
            free(desc);
            tt_gop_pchunk pc = {bp, bg, bm, bv, bmask, (uint32_t)t0, (uint32_t)nt, 0, np};
            PLAN(tt_gop_adamw_chunks(O, &s[ns], &pc, 1, bdesc, np, part, bst, &st));
        }
        ns += 2;
        tt_gtest_run(s, ns);
        gdown(bp, 0, o[0], n), gdown(bm, 0, o[1], n), gdown(bv, 0, o[2], n), gdown(bst, 1, onorm, 1);
        break;
    }
    case OP_LORA: {
        /* c_attn (target 0): out and dout as q, k, v, three (N, OC/3)
         * buffers, b read as three column blocks; the GPU keeps t = inp a
         * unscaled (h = scale * t is compared); dinp, da, db accumulate
         * into zeroed buffers, after a forward that wrote t */
        const int N = c->d[0], C = c->d[1], OC = c->d[2], R = c->d[3], n_out = c->d[4] == TT_LORA_C_ATTN ? 3 : 1;
        const int w = OC / n_out;
        const float scale = 8.0f / (float)R;
        const size_t nx = (size_t)N * C, nb = (size_t)N * w, nt = (size_t)N * R, na = (size_t)C * R;
        tt_gpu_buf bx = gup(in[0], nx), ba = gup(in[1], na), bb = gup(in[2], (size_t)R * OC), bt = gpois(nt);
        tt_gpu_buf blk[3];
        tt_gref out[3];
        float *tmp = malloc(nb * sizeof *tmp);
        const float *src = in[3]; /* forward: base (N,OC); backward: dout (N,OC) */
        for (int j = 0; j < n_out; j++) {
            for (int r = 0; r < N; r++) memcpy(tmp + (size_t)r * w, src + (size_t)r * OC + (size_t)j * w, (size_t)w * sizeof *tmp);
            blk[j] = gup(tmp, nb);
            out[j] = GR(blk[j], 0);
        }
        if (c->dir == FWD) {
            PLAN(tt_gop_lora_forward(O, &s[ns], out, n_out, GR(bt, 0), GR(bx, 0), GR(ba, 0), GR(bb, 0), N, C, R, w, scale,
                                     &st));
            ns += TT_GOP_LORA_FWD_SITES(n_out);
            tt_gtest_run(s, ns);
            for (int j = 0; j < n_out; j++) {
                gdown(blk[j], 0, tmp, nb);
                for (int r = 0; r < N; r++) memcpy(o[0] + (size_t)r * OC + (size_t)j * w, tmp + (size_t)r * w, (size_t)w * sizeof *tmp);
            }
            gdown(bt, 0, o[1], nt);
            for (size_t i = 0; i < nt; i++) o[1][i] *= scale;
        } else {
            tt_gpu_buf junk[3];
            for (int j = 0; j < n_out; j++) junk[j] = gzero(nb);
            tt_gref jr[3] = {GR(junk[0], 0), GR(junk[n_out > 1 ? 1 : 0], 0), GR(junk[n_out > 1 ? 2 : 0], 0)};
            PLAN(tt_gop_lora_forward(O, &s[ns], jr, n_out, GR(bt, 0), GR(bx, 0), GR(ba, 0), GR(bb, 0), N, C, R, w, scale,
                                     &st));
            ns += TT_GOP_LORA_FWD_SITES(n_out);
            tt_gpu_buf bdx = gzero(nx), bda = gzero(na), bdb = gzero((size_t)R * OC), bdt = gpois(nt), bpr = gpois((size_t)R * w);
            PLAN(tt_gop_lora_backward(O, &s[ns], GR(bdx, 0), GR(bda, 0), GR(bdb, 0), GR(bdt, 0), GR(bpr, 0), out, n_out,
                                      GR(bt, 0), GR(bx, 0), GR(ba, 0), GR(bb, 0), N, C, R, w, scale, &st));
            ns += TT_GOP_LORA_BWD_SITES(n_out);
            tt_gtest_run(s, ns);
            gdown(bdx, 0, o[0], nx), gdown(bda, 0, o[1], na), gdown(bdb, 0, o[2], (size_t)R * OC);
        }
        free(tmp);
        break;
    }
    }
done:
#undef PLAN
    for (int i = 0; i < g_ngbuf; i++) tt_gpu_buffer_free(tt_gtest_gpu, g_gbuf[i]);
    if (g_gbuf_over) fprintf(stderr, "  webgpu: more than %d buffers in one case\n", GPU_MAXBUF), rc = FAILED;
    if (tt_test_failed_checks != failed0) rc = FAILED; /* a device call failed (printed by gpu_test.c) */
    return rc;
}

/* the device and the planner, or g_gpu_why */
static void gpu_open(void) {
    tt_status st;
    tt_gpu *g = NULL;
    if (tt_gpu_open(NULL, &g, &st) != TT_OK) {
        snprintf(g_gpu_why, sizeof g_gpu_why, "%s", st.msg);
        return;
    }
    tt_gtest_gpu = g;
    if (tt_gops_init(&g_gops, g, &st) || tt_gops_drop_init(&g_gops, 1, &st)) {
        snprintf(g_gpu_why, sizeof g_gpu_why, "gops init: %s", st.msg);
        g_gpu_ok = -1;
        return;
    }
    g_gpu_ok = 1;
    printf("webgpu adapter: %s (%s)\n", tt_gpu_get_info(g)->name, tt_gpu_get_info(g)->backend);
}

static void gpu_close(void) {
    if (g_gpu_ok) tt_gops_free(&g_gops);
    if (tt_gtest_gpu) tt_gpu_close(tt_gtest_gpu);
}

/* ---- the table runner ---- */

typedef struct {
    const char *name;
    int (*run)(const op_case *c, problem *p);
} backend;

static const backend BACKENDS[] = {
    {"cpu", cpu_run},
    {"webgpu", gpu_run},
};

static void case_label(const op_case *c, char *buf, size_t cap) {
    int nd = c->op == OP_ATTENTION || c->op == OP_LORA ? 5 : c->op == OP_ADAMW ? 4 : c->op == OP_EMBEDDING ? 4 : c->op == OP_GELU || c->op == OP_CROSSENTROPY ? 2 : c->op == OP_HEADXENT ? 4 : 3;
    int k = snprintf(buf, cap, "%s %s [", OP_NAMES[c->op], c->dir == FWD ? "fwd" : "bwd");
    for (int i = 0; i < nd && k < (int)cap; i++) k += snprintf(buf + k, cap - (size_t)k, i ? " %d" : "%d", c->d[i]);
    if (k < (int)cap) k += snprintf(buf + k, cap - (size_t)k, "]");
    if (c->drop > 0.0f && k < (int)cap) snprintf(buf + k, cap - (size_t)k, " dropout %.1f", (double)c->drop);
}

/* the filters: ops and backends to run (all when none is named), ops left out */
static int g_want_op[N_OPS], g_skip_op[N_OPS], g_want_backend[sizeof BACKENDS / sizeof BACKENDS[0]];
static int g_backend; /* the backend run_backend runs */
#define N_BACKENDS (int)(sizeof BACKENDS / sizeof BACKENDS[0])

/* the selected cases on backend g_backend; every backend gets the same inputs */
static void run_backend(void) {
    const backend *be = &BACKENDS[g_backend];
    int ran = 0, skipped = 0;
    for (int i = 0; i < N_CASES; i++) {
        const op_case *c = &CASES[i];
        if (!g_want_op[c->op] || g_skip_op[c->op]) continue;
        char label[96];
        case_label(c, label, sizeof label);
        problem p;
        g_seed = CASE_SEED(i);
        make_problem(c, &p);
        CHECK_MSG(g_seed < CASE_SEED(i + 1), "case %d (%s) draws more than 64 seeds", i, label);
        int rc = be->run(c, &p);
        if (rc == SKIPPED) skipped++;
        CHECK_MSG(rc != FAILED, "%s %s: the backend failed", be->name, label);
        if (rc == RAN) {
            ran++;
            for (int k = 0; k < p.n_out; k++) {
                double e = tt_test_max_rel_err(p.out[k].f, p.out[k].ref, p.out[k].n);
                CHECK_MSG(e <= c->tol, "%s %s: %s max rel err %.3g > %.1g", be->name, label, p.out[k].name, e, c->tol);
            }
        }
        free_problem(&p);
    }
    printf("  %s: %d op cases run, %d skipped\n", be->name, ran, skipped);
    CHECK_MSG(ran + skipped > 0, "no case selected (--op and --skip-op leave no op)");
}

/* NAME[,NAME..] of names[n]: sets want[] of each; -1 naming the first unknown one */
static int select_names(const char *list, const char *const *names, int n, int *want, const char **bad) {
    char buf[256];
    int named = 0;
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save), named++) {
        int k = 0;
        while (k < n && strcmp(tok, names[k]) != 0) k++;
        if (k == n) {
            static char unknown[256];
            snprintf(unknown, sizeof unknown, "%s", tok);
            *bad = unknown;
            return -1;
        }
        want[k] = 1;
    }
    *bad = "";
    return named ? 0 : -1;
}

static void list_names(void) {
    printf("ops (--op):\n");
    for (int op = 0; op < N_OPS; op++) {
        int n = 0;
        for (int i = 0; i < N_CASES; i++) n += CASES[i].op == (op_kind)op;
        printf("  %-13s %2d cases  %s\n", OP_KEYS[op], n, OP_NAMES[op]);
    }
    printf("backends (--backend):\n");
    for (int b = 0; b < N_BACKENDS; b++) printf("  %s\n", BACKENDS[b].name);
}

static int usage_error(const char *fmt, const char *arg) {
    fprintf(stderr, "test_backend_ops: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (usage: test_backend_ops [--op NAMES] [--skip-op NAMES] [--backend NAMES] | --list)\n");
    return 2;
}

int main(int argc, char **argv) {
    tt_status st;
    const char *backend_names[N_BACKENDS];
    for (int b = 0; b < N_BACKENDS; b++) backend_names[b] = BACKENDS[b].name;
    int any_op = 0, any_backend = 0;
    for (int i = 1; i < argc; i++) {
        const char *bad = NULL;
        if (!strcmp(argv[i], "--list")) {
            list_names();
            return 0;
        } else if (!strcmp(argv[i], "--op") || !strcmp(argv[i], "--skip-op") || !strcmp(argv[i], "--backend")) {
            const int is_op = strcmp(argv[i], "--backend") != 0, skip = !strcmp(argv[i], "--skip-op");
            if (i + 1 == argc) return usage_error("%s needs a name", argv[i]);
            if (select_names(argv[i + 1], is_op ? OP_KEYS : backend_names, is_op ? N_OPS : N_BACKENDS,
                             skip ? g_skip_op : is_op ? g_want_op : g_want_backend, &bad))
                return !bad[0] ? usage_error("%s needs a name", argv[i])
                               : usage_error(is_op ? "unknown op '%s' (--list names them)"
                                                   : "unknown backend '%s' (--list names them)",
                                             bad);
            any_op |= is_op && !skip, any_backend |= !is_op;
            i++;
        } else {
            return usage_error("unknown argument '%s'", argv[i]);
        }
    }
    for (int op = 0; op < N_OPS && !any_op; op++) g_want_op[op] = 1;
    for (int b = 0; b < N_BACKENDS && !any_backend; b++) g_want_backend[b] = 1;
    const int want_cpu = g_want_backend[0], want_gpu = g_want_backend[1];
    if (want_cpu) {
        /* scratch for the largest case of the table */
        size_t shared = TT_MAX(tt_matmul_backward_scratch(300, 290, 45), tt_matmul_backward_scratch(77, 260, 33));
        shared = TT_MAX(shared, tt_head_backward_scratch(33, 17, 256));
        shared = TT_MAX(shared, tt_layernorm_backward_scratch(127, 129));
        shared = TT_MAX(shared, tt_lora_scratch(300, 52, 60, 8));
        size_t thread = TT_MAX(tt_matmul_thread_scratch(), tt_attention_thread_scratch(70, 32));
        if (tt_cpu_create(&g_cpu, 3, shared, thread, &st)) {
            fprintf(stderr, "cpu context: %s\n", st.msg);
            return 1;
        }
    }
    if (want_gpu) {
        gpu_open();
        if (g_gpu_ok <= 0) {
            const char *req = getenv("TT_REQUIRE_WEBGPU");
            if (g_gpu_ok < 0) fprintf(stderr, "FAIL: webgpu: %s\n", g_gpu_why);
            else if (req && atoi(req)) fprintf(stderr, "FAIL: TT_REQUIRE_WEBGPU=1 but WebGPU is unavailable: %s\n", g_gpu_why);
            else printf("webgpu: SKIP: %s\n", g_gpu_why);
        }
    }
    for (g_backend = 0; g_backend < N_BACKENDS; g_backend++)
        if (g_want_backend[g_backend]) tt_test_run(BACKENDS[g_backend].name, run_backend);
    if (want_gpu) gpu_close();
    if (want_cpu) tt_cpu_destroy(&g_cpu);
    return tt_test_summary();
}
