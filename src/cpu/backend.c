/* backend.c — the CPU backend (backend.h): plans all memory once at
 * creation (parameters, gradients, AdamW moments, activations for
 * (batch, ctx), backward buffers, scratch), then runs the GPT forward,
 * backward, gradient norm, clipping and AdamW with the ops of ops.h. A step
 * allocates nothing. After each phase (forward, backward, optimizer) it
 * checks the ops' error slot (tt_cpu_status) and fails the step with the
 * op's message.
 *
 * Residual stream (llm.c's layout): x0 = wte[tok] + wpe[t]; per layer
 *   ln1 -> q,k,v -> causal attention -> o (+ x, fused)      = res2
 *   ln2 -> fc + gelu (fused) -> proj (+ res2, fused)        = res3 = next x
 * then ln_f and logits = x . wte^T (tied head), fused softmax + CE.
 * The logits buffer holds at most HEAD_CHUNK_BYTES: when all B*T rows fit
 * (every byte-level model up to 65536 rows) the head runs once, its
 * backward in backward(); otherwise the forward runs head -> CE -> head
 * backward (dln rows, dwte +=) on chunks of rows, each row's arithmetic
 * unchanged, so a vocabulary of 50257 at 8 x 1024 tokens needs 64 MiB of
 * logits, not 1.6 GB.
 *
 * Dropout (training steps with p > 0 only; rng.h keys one mask per
 * micro-batch, layer and site): x0 is dropped in place, the attention op
 * drops its probabilities, and the two residual branches become
 * matmul -> res = x + dropout(branch) instead of the fused matmul-residual.
 * The backward recomputes every mask from its key (nothing is stored, no
 * buffer is added): the branch gradients are masked into dln, which is free
 * at those points. With p = 0 the code path is exactly the one without.
 *
 * LoRA (config.h): each targeted projection adds the lora op's
 * s * (x A) B to its output (c_attn into the packed qkv, c_fc before the
 * GELU, the c_proj's into their branch before its dropout and residual
 * add); the base tensors get no gradient (their weight/bias products are
 * skipped), and AdamW and the
 * norm see only the adapters (the spans, adamw.c). Gradients and AdamW
 * moments exist only for the adapters: grads, m and v hold elements
 * [g0, total) of the layout (g0 = the base's size; 0 without LoRA), so a
 * frozen base costs its parameters alone. Without LoRA the step is the
 * plain one, call for call. */
#include "backend_cpu.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "simd.h"

typedef struct {
    float *ln1, *ln1_stats; /* (N,C) (2N) */
    float *qkv;             /* (N,3C) */
    float *atty;            /* (N,C) */
    float *att_stats;       /* (2,B,NH,T) */
    float *res2;            /* (N,C) */
    float *ln2, *ln2_stats;
    float *fch, *fchg;      /* (N,4C) */
    float *res3;            /* (N,C) */
} layer_acts;

typedef struct {
    tt_cpu cpu;
    int B, T, C, L, NH, V;
    int act;   /* the MLP's GELU (config.h tt_act) */
    float eps; /* LayerNorm epsilon (tt_config_ln_eps) */
    size_t total;
    size_t g0;     /* grads, m, v hold layout elements [g0, total): 0, or a LoRA model's base_total */
    float *params; /* (total) */
    float *grads, *m, *v; /* (total - g0) */
    void *raw[5];
    tt_span *spans;
    int64_t n_spans;
    double *partials;
    /* activations (one block) */
    int32_t *inp, *tgt; /* (B,T) */
    float *encoded;     /* (N,C) */
    layer_acts *layers;
    float *lnf, *lnf_stats;
    float *logits; /* (HR,V), becomes dlogits in place */
    int HR;        /* rows of logits: head_rows */
    float *losses; /* (N) */
    /* backward */
    float *dres, *dln, *datty; /* (N,C) */
    float *dqkv;               /* (N,3C) */
    float *dfch;               /* (N,4C) */
    /* LoRA (R > 0): h of every adapter, lora_h[l * TT_LORA_N_TARGETS + t]
     * (N,R) or NULL for a target without one, and the backward's dh (N,R) */
    int R;
    float lora_scale;
    float **lora_h;
    float *lora_dh;
    float last_loss, last_norm;
    double phase_s[3]; /* last step: forward, backward, optimizer (seconds, wall clock) */
    int has_phase;
} cpu_impl;

/* ---- memory plan ---- */

#define HEAD_CHUNK_BYTES ((size_t)64 << 20)

/* rows of the head + cross-entropy per pass (all B*T when they fit) */
static int head_rows(const tt_model_config *c) {
    size_t N = (size_t)c->batch * (size_t)c->ctx, r = HEAD_CHUNK_BYTES / ((size_t)c->vocab * sizeof(float));
    if (r < 1) r = 1;
    return (int)(r < N ? r : N);
}

size_t tt_backend_cpu_shared_scratch(const tt_model_config *c) {
    int N = c->batch * c->ctx, C = c->d_model, V = c->vocab;
    int R = c->lora_rank > 0 ? c->lora_rank : 1;
    size_t s[12] = {
        tt_lora_scratch(N, C, 3 * C, R),        tt_lora_scratch(N, 4 * C, 4 * C, R),
        tt_matmul_forward_scratch(N, C, 4 * C), tt_matmul_forward_scratch(N, 4 * C, C),
        tt_matmul_backward_scratch(N, C, C),    tt_matmul_backward_scratch(N, C, 4 * C),
        tt_matmul_backward_scratch(N, 4 * C, C), tt_qkv_forward_scratch(N, C),
        tt_qkv_backward_scratch(N, C),          tt_head_forward_scratch(head_rows(c), C, V),
        tt_head_backward_scratch(head_rows(c), C, V), tt_layernorm_backward_scratch(N, C),
    };
    size_t m = 0;
    for (int i = 0; i < 12; i++) m = TT_MAX(m, s[i]);
    return m;
}

size_t tt_backend_cpu_thread_scratch(const tt_model_config *c) {
    return TT_MAX(tt_matmul_thread_scratch(), tt_attention_thread_scratch(c->ctx, c->d_model / c->n_head));
}

typedef struct {
    uint64_t act_floats;    /* activations + backward buffers (floats) */
    uint64_t shared, thread;/* scratch floats */
    uint64_t total;         /* bytes of everything */
} plan;

static int make_plan(const tt_model_config *c, int threads, plan *p) {
    uint64_t B = (uint64_t)c->batch, T = (uint64_t)c->ctx, C = (uint64_t)c->d_model, L = (uint64_t)c->n_layer;
    uint64_t NH = (uint64_t)c->n_head, V = (uint64_t)c->vocab, N = B * T;
    uint64_t P = (uint64_t)tt_config_param_count(c);
    uint64_t PT = c->lora_rank > 0 ? (uint64_t)tt_config_lora_count(c) : P; /* with grads and moments */
    uint64_t per_layer = N * C * (1 + 3 + 1 + 1 + 1 + 4 + 4 + 1) + 4 * N + 2 * B * NH * T;
    p->act_floats = 2 * N /* inp, tgt (int32) */ + N * C + L * per_layer + N * C + 2 * N + (uint64_t)head_rows(c) * V + N +
                    N * C * (1 + 1 + 1 + 3 + 4) + 16 * (L * 14 + 16) /* alignment slack */;
    if (c->lora_rank > 0) /* h of every adapter + dh, each 16-aligned */
        p->act_floats += (L * TT_LORA_N_TARGETS + 1) * (N * (uint64_t)c->lora_rank + 16);
    if (N > (uint64_t)INT32_MAX / 4 || N * 4 * C > (uint64_t)INT32_MAX * 16) return TT_EINVAL;
    p->shared = (uint64_t)tt_backend_cpu_shared_scratch(c);
    p->thread = ((uint64_t)tt_backend_cpu_thread_scratch(c) + 15) & ~(uint64_t)15;
    uint64_t n_spans = P / TT_SPAN_MAX + 4 + L * (TT_PER_LAYER + 2 * TT_LORA_N_TARGETS);
    p->total = 4 * (P + 3 * PT + p->act_floats + p->shared + p->thread * (uint64_t)threads) + 8 * n_spans + 6 * 64;
    if (p->total > (uint64_t)SIZE_MAX / 2) return TT_ENOMEM;
    return TT_OK;
}

uint64_t tt_backend_cpu_plan_bytes(const tt_model_config *cfg, int threads) {
    if (tt_config_validate(cfg, NULL) != TT_OK) return 0;
    if (threads <= 0) threads = tt_default_threads();
    plan p;
    if (make_plan(cfg, threads, &p) != TT_OK) return 0;
    return p.total;
}

/* zeroed, 64-byte aligned; calloc lets the OS hand out untouched zero pages */
static float *big_calloc(size_t floats, void **raw, tt_status *st) {
    size_t bytes = floats * sizeof(float) + 64;
    *raw = calloc(1, bytes);
    if (!*raw) {
        tt_fail(st, TT_ENOMEM, "out of memory: cannot allocate %.1f MiB for the CPU backend", bytes / 1048576.0);
        return NULL;
    }
    return (float *)(((uintptr_t)*raw + 63) & ~(uintptr_t)63);
}

/* ---- parameters ---- */

static inline float *PT(cpu_impl *c, const tt_backend *be, float *base, tt_tensor_kind k, int l) {
    (void)c;
    return base + tt_layout_offset(&be->layout, &be->cfg, k, l);
}

/* adapter `which` (TT_LORA_A / TT_LORA_B) of target t in layer l, NULL if none */
static inline float *LA(const tt_backend *be, float *base, int l, int t, tt_tensor_kind which) {
    int i = tt_layout_lora_index(&be->cfg, l, t, which);
    return i < 0 ? NULL : base + be->layout.t[i].offset;
}

/* out (N,OC) += s * (inp A) B for target t of layer l, if it has an adapter */
static void lora_fwd(tt_backend *be, int l, int t, float *out, const float *inp, int N, int C, int OC) {
    cpu_impl *c = be->impl;
    float *h = c->lora_h ? c->lora_h[l * TT_LORA_N_TARGETS + t] : NULL;
    if (!h) return;
    tt_lora_forward(&c->cpu, out, h, inp, LA(be, c->params, l, t, TT_LORA_A), LA(be, c->params, l, t, TT_LORA_B),
                    c->lora_scale, N, C, OC, c->R);
}

/* its gradient in grads (which hold elements from g0 on) */
static inline float *LG(const tt_backend *be, int l, int t, tt_tensor_kind which) {
    const cpu_impl *c = be->impl;
    int i = tt_layout_lora_index(&be->cfg, l, t, which);
    return i < 0 ? NULL : c->grads + (be->layout.t[i].offset - c->g0);
}

/* its backward: dinp (N,C) +=, adapter gradients += */
static void lora_bwd(tt_backend *be, int l, int t, float *dinp, const float *dout, const float *inp, int N, int C,
                     int OC) {
    cpu_impl *c = be->impl;
    float *h = c->lora_h ? c->lora_h[l * TT_LORA_N_TARGETS + t] : NULL;
    if (!h) return;
    tt_lora_backward(&c->cpu, dinp, LG(be, l, t, TT_LORA_A), LG(be, l, t, TT_LORA_B), c->lora_dh,
                     dout, inp, LA(be, c->params, l, t, TT_LORA_A), LA(be, c->params, l, t, TT_LORA_B), h,
                     c->lora_scale, N, C, OC, c->R);
}

static inline int has_lora(const cpu_impl *c, int l, int t) {
    return c->lora_h && c->lora_h[l * TT_LORA_N_TARGETS + t];
}

/* ---- forward / backward ---- */

/* every id of n tokens inside the vocabulary */
static int check_tokens(const cpu_impl *c, const tt_token *tokens, size_t n, tt_status *st) {
    for (size_t i = 0; i < n; i++)
        if (tokens[i] >= (tt_token)c->V)
            return tt_fail(st, TT_EINVAL, "token id %u is outside the model's vocabulary (0..%d)", (unsigned)tokens[i], c->V - 1);
    return TT_OK;
}

/* the (B, T+1) windows into inp and tgt; an id outside the vocabulary is an error */
static int load_tokens(cpu_impl *c, const tt_token *tokens, int B, tt_status *st) {
    int T = c->T;
    TT_CHECK(check_tokens(c, tokens, (size_t)B * (T + 1), st));
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            c->inp[b * T + t] = (int32_t)tokens[(size_t)b * (T + 1) + t];
            c->tgt[b * T + t] = (int32_t)tokens[(size_t)b * (T + 1) + t + 1];
        }
    return TT_OK;
}

/* dropout of one micro-batch of a training step (what keys its masks) */
typedef struct {
    float p;
    uint64_t seed;
    int64_t step;
    int n_micro, micro;
} drop_args;

static tt_dropout_mask drop_mask(const cpu_impl *c, const drop_args *d, int layer, int site) {
    return tt_dropout_mask_make(d->p, tt_dropout_key_at(d->seed, d->step, d->n_micro, d->micro, c->L, layer, site));
}

/* the attention probabilities' mask of layer l in *buf, NULL without dr */
static const tt_dropout_mask *attn_mask(const cpu_impl *c, const drop_args *dr, int l, tt_dropout_mask *buf) {
    if (!dr) return NULL;
    *buf = drop_mask(c, dr, l, TT_DROP_ATTN);
    return buf;
}

/* out = resid + dropout(inp . W + b) with dr, else the fused matmul-residual */
static void branch_forward(tt_backend *be, const drop_args *dr, int l, int site, int lora_target, float *out,
                           const float *inp, const float *w, const float *b, const float *resid, int N, int K, int C) {
    cpu_impl *c = be->impl;
    if (!dr) { /* out = resid + inp W + b (+ the adapter's s (inp A) B) */
        tt_matmul_residual_forward(&c->cpu, out, inp, w, b, resid, N, K, C);
        lora_fwd(be, l, lora_target, out, inp, N, K, C);
        return;
    }
    /* out = resid + dropout(inp W + b + s (inp A) B): the adapter is part of the branch */
    tt_dropout_mask m = drop_mask(c, dr, l, site);
    tt_matmul_forward(&c->cpu, out, inp, w, b, N, K, C);
    lora_fwd(be, l, lora_target, out, inp, N, K, C);
    tt_dropout_residual_forward(&c->cpu, out, out, resid, &m, (size_t)N * C);
}

/* the gradient of a residual branch's output: dres itself, or with dr its
 * masked copy in dln */
static const float *branch_backward(cpu_impl *c, const drop_args *dr, int l, int site, int N) {
    if (!dr) return c->dres;
    tt_dropout_mask m = drop_mask(c, dr, l, site);
    tt_dropout_backward(&c->cpu, c->dln, c->dres, &m, (size_t)N * c->C);
    return c->dln;
}

/* the head and cross-entropy on chunks of c->HR rows (N > HR): losses of
 * every row, and with with_grad the head's backward too (dln (N,C)
 * overwritten, dwte += unless the base is frozen); returns the mean loss,
 * summed as tt_crossentropy_forward sums it */
static float head_chunked(tt_backend *be, int N, int with_grad, float dscale) {
    cpu_impl *c = be->impl;
    tt_cpu *cpu = &c->cpu;
    const int C = c->C, V = c->V;
    const float *wte = PT(c, be, c->params, TT_WTE, 0);
    float *dwte = with_grad && !c->lora_h ? PT(c, be, c->grads, TT_WTE, 0) : NULL;
    for (int r0 = 0; r0 < N; r0 += c->HR) {
        const int n = TT_MIN(c->HR, N - r0);
        const float *x = c->lnf + (size_t)r0 * C;
        tt_head_forward(cpu, c->logits, x, wte, n, C, V);
        tt_crossentropy_forward(cpu, c->losses + r0, with_grad ? c->logits : NULL, c->logits, c->tgt + r0, n, V, dscale);
        if (with_grad) tt_head_backward(cpu, c->dln + (size_t)r0 * C, dwte, c->logits, x, wte, n, C, V);
    }
    double s = 0.0;
    for (int i = 0; i < N; i++) s += c->losses[i];
    return (float)(s / N);
}

/* returns the mean loss; with_grad: logits become dlogits scaled by dscale;
 * dr: this micro-batch's dropout, NULL for none */
static float forward(tt_backend *be, int B, int with_grad, float dscale, const drop_args *dr) {
    cpu_impl *c = be->impl;
    tt_cpu *cpu = &c->cpu;
    int T = c->T, C = c->C, NH = c->NH, V = c->V, N = B * T;
    float *p = c->params;
    tt_embedding_forward(cpu, c->encoded, c->inp, PT(c, be, p, TT_WTE, 0), PT(c, be, p, TT_WPE, 0), B, T, C);
    if (dr) {
        tt_dropout_mask m = drop_mask(c, dr, c->L, TT_DROP_EMBED);
        tt_dropout_forward(cpu, c->encoded, c->encoded, &m, (size_t)N * C);
    }
    float *x = c->encoded;
    for (int l = 0; l < c->L; l++) {
        layer_acts *a = &c->layers[l];
        tt_dropout_mask ma;
        tt_layernorm_forward(cpu, a->ln1, a->ln1_stats, x, PT(c, be, p, TT_LN1W, l), PT(c, be, p, TT_LN1B, l), N, C, c->eps);
        tt_qkv_forward(cpu, a->qkv, a->ln1, PT(c, be, p, TT_QW, l), PT(c, be, p, TT_QB, l), PT(c, be, p, TT_KW, l),
                       PT(c, be, p, TT_KB, l), PT(c, be, p, TT_VALW, l), PT(c, be, p, TT_VALB, l), N, C);
        lora_fwd(be, l, TT_LORA_C_ATTN, a->qkv, a->ln1, N, C, 3 * C);
        tt_attention_forward(cpu, a->atty, a->att_stats, a->qkv, a->qkv + C, a->qkv + 2 * C, 3 * C, B, T, C, NH,
                             attn_mask(c, dr, l, &ma));
        branch_forward(be, dr, l, TT_DROP_ATTN_OUT, TT_LORA_ATTN_C_PROJ, a->res2, a->atty, PT(c, be, p, TT_OW, l),
                       PT(c, be, p, TT_OB, l), x, N, C, C);
        tt_layernorm_forward(cpu, a->ln2, a->ln2_stats, a->res2, PT(c, be, p, TT_LN2W, l), PT(c, be, p, TT_LN2B, l), N, C, c->eps);
        if (has_lora(c, l, TT_LORA_C_FC)) { /* the adapter adds before the GELU */
            tt_matmul_forward(cpu, a->fch, a->ln2, PT(c, be, p, TT_FCW, l), PT(c, be, p, TT_FCB, l), N, C, 4 * C);
            lora_fwd(be, l, TT_LORA_C_FC, a->fch, a->ln2, N, C, 4 * C);
            tt_gelu_forward(cpu, a->fchg, a->fch, (size_t)N * 4 * C, c->act);
        } else {
            tt_matmul_gelu_forward(cpu, a->fch, a->fchg, a->ln2, PT(c, be, p, TT_FCW, l), PT(c, be, p, TT_FCB, l), N, C,
                                   4 * C, c->act);
        }
        branch_forward(be, dr, l, TT_DROP_MLP_OUT, TT_LORA_MLP_C_PROJ, a->res3, a->fchg, PT(c, be, p, TT_PROJW, l),
                       PT(c, be, p, TT_PROJB, l), a->res2, N, 4 * C, C);
        x = a->res3;
    }
    tt_layernorm_forward(cpu, c->lnf, c->lnf_stats, x, PT(c, be, p, TT_LNFW, 0), PT(c, be, p, TT_LNFB, 0), N, C, c->eps);
    if (N <= c->HR) { /* one pass; the head's backward runs in backward() */
        tt_head_forward(cpu, c->logits, c->lnf, PT(c, be, p, TT_WTE, 0), N, C, V);
        return tt_crossentropy_forward(cpu, c->losses, with_grad ? c->logits : NULL, c->logits, c->tgt, N, V, dscale);
    }
    return head_chunked(be, N, with_grad, dscale);
}

/* gradients accumulate into c->grads; needs forward(with_grad = 1) first,
 * with the same dr. GB: the gradient of a base tensor, NULL (skipped) when
 * the base is frozen. */
static void backward(tt_backend *be, int B, const drop_args *dr) {
    cpu_impl *c = be->impl;
    tt_cpu *cpu = &c->cpu;
    int T = c->T, C = c->C, NH = c->NH, V = c->V, N = B * T;
    float *p = c->params, *g = c->grads;
    const int frozen = c->lora_h != NULL;
#define GB(k, l) (frozen ? NULL : PT(c, be, g, (k), (l)))
    float *xl = c->L > 0 ? c->layers[c->L - 1].res3 : c->encoded;
    if (N <= c->HR) /* else head_chunked did it in the forward */
        tt_head_backward(cpu, c->dln, GB(TT_WTE, 0), c->logits, c->lnf, PT(c, be, p, TT_WTE, 0), N, C, V);
    tt_layernorm_backward(cpu, c->dres, GB(TT_LNFW, 0), GB(TT_LNFB, 0), c->dln, xl, PT(c, be, p, TT_LNFW, 0),
                          c->lnf_stats, N, C, 0);
    for (int l = c->L - 1; l >= 0; l--) {
        layer_acts *a = &c->layers[l];
        const float *xin = l > 0 ? c->layers[l - 1].res3 : c->encoded;
        const float *dmlp = branch_backward(c, dr, l, TT_DROP_MLP_OUT, N); /* dres, or its masked copy in dln */
        if (has_lora(c, l, TT_LORA_MLP_C_PROJ)) { /* the adapter's dinp joins before GELU's backward */
            tt_matmul_backward(cpu, c->dfch, GB(TT_PROJW, l), GB(TT_PROJB, l), dmlp, a->fchg, PT(c, be, p, TT_PROJW, l),
                               N, 4 * C, C);
            lora_bwd(be, l, TT_LORA_MLP_C_PROJ, c->dfch, dmlp, a->fchg, N, 4 * C, C);
            tt_gelu_backward(cpu, c->dfch, a->fch, c->dfch, (size_t)N * 4 * C, c->act);
        } else {
            tt_matmul_gelu_backward(cpu, c->dfch, GB(TT_PROJW, l), GB(TT_PROJB, l), dmlp, a->fchg,
                                    PT(c, be, p, TT_PROJW, l), a->fch, N, 4 * C, C, c->act);
        }
        tt_matmul_backward(cpu, c->dln, GB(TT_FCW, l), GB(TT_FCB, l), c->dfch, a->ln2, PT(c, be, p, TT_FCW, l), N, C,
                           4 * C);
        lora_bwd(be, l, TT_LORA_C_FC, c->dln, c->dfch, a->ln2, N, C, 4 * C);
        tt_layernorm_backward(cpu, c->dres, GB(TT_LN2W, l), GB(TT_LN2B, l), c->dln, a->res2, PT(c, be, p, TT_LN2W, l),
                              a->ln2_stats, N, C, 1);
        const float *dattn = branch_backward(c, dr, l, TT_DROP_ATTN_OUT, N);
        tt_matmul_backward(cpu, c->datty, GB(TT_OW, l), GB(TT_OB, l), dattn, a->atty, PT(c, be, p, TT_OW, l), N, C, C);
        lora_bwd(be, l, TT_LORA_ATTN_C_PROJ, c->datty, dattn, a->atty, N, C, C);
        tt_dropout_mask ma;
        tt_attention_backward(cpu, c->dqkv, c->dqkv + C, c->dqkv + 2 * C, a->att_stats, a->qkv, a->qkv + C,
                              a->qkv + 2 * C, a->atty, c->datty, 3 * C, B, T, C, NH, attn_mask(c, dr, l, &ma));
        tt_qkv_backward(cpu, c->dln, GB(TT_QW, l), GB(TT_QB, l), GB(TT_KW, l), GB(TT_KB, l), GB(TT_VALW, l),
                        GB(TT_VALB, l), c->dqkv, a->ln1, PT(c, be, p, TT_QW, l), PT(c, be, p, TT_KW, l),
                        PT(c, be, p, TT_VALW, l), N, C);
        lora_bwd(be, l, TT_LORA_C_ATTN, c->dln, c->dqkv, a->ln1, N, C, 3 * C);
        if (frozen && l == 0) break; /* nothing below layer 0's adapters trains */
        tt_layernorm_backward(cpu, c->dres, GB(TT_LN1W, l), GB(TT_LN1B, l), c->dln, xin, PT(c, be, p, TT_LN1W, l),
                              a->ln1_stats, N, C, 1);
    }
    if (!frozen) {
        if (dr) {
            tt_dropout_mask m = drop_mask(c, dr, c->L, TT_DROP_EMBED);
            tt_dropout_backward(cpu, c->dres, c->dres, &m, (size_t)N * C);
        }
        tt_embedding_backward(cpu, PT(c, be, g, TT_WTE, 0), PT(c, be, g, TT_WPE, 0), c->dres, c->inp, B, T, C, V);
    }
#undef GB
}

/* ---- vtable ---- */

static void cpu_destroy(tt_backend *be) {
    if (!be) return;
    cpu_impl *c = be->impl;
    if (c) {
        tt_cpu_destroy(&c->cpu);
        for (int i = 0; i < 5; i++) free(c->raw[i]);
        free(c->spans);
        free(c->partials);
        free(c->layers);
        free(c->lora_h);
        free(c);
    }
    tt_layout_free(&be->layout);
    free(be);
}

static int cpu_set_state(tt_backend *be, const float *params, const float *m, const float *v, tt_status *st) {
    cpu_impl *c = be->impl;
    if (!params) return tt_fail(st, TT_EINVAL, "set_state: params is NULL");
    const size_t n = c->total - c->g0;
    tt_cpu_copy(&c->cpu, c->params, params, c->total);
    if (m) tt_cpu_copy(&c->cpu, c->m, m, n);
    else tt_cpu_zero(&c->cpu, c->m, n);
    if (v) tt_cpu_copy(&c->cpu, c->v, v, n);
    else tt_cpu_zero(&c->cpu, c->v, n);
    return TT_OK;
}

static int cpu_get_state(tt_backend *be, float *params, float *m, float *v, tt_status *st) {
    (void)st;
    cpu_impl *c = be->impl;
    const size_t n = c->total - c->g0;
    if (params) tt_cpu_copy(&c->cpu, params, c->params, c->total);
    if (m) tt_cpu_copy(&c->cpu, m, c->m, n);
    if (v) tt_cpu_copy(&c->cpu, v, c->v, n);
    return TT_OK;
}

static int cpu_step(tt_backend *be, const tt_token *tokens, int n_micro, const tt_optim_args *opt, tt_status *st) {
    cpu_impl *c = be->impl;
    if (!tokens || !opt) return tt_fail(st, TT_EINVAL, "step: tokens or optimizer arguments missing");
    if (n_micro < 1) return tt_fail(st, TT_EINVAL, "step: n_micro must be >= 1 (got %d)", n_micro);
    if (!(opt->bc1 > 0.0f) || !(opt->bc2 > 0.0f)) return tt_fail(st, TT_EINVAL, "step: bias corrections must be > 0");
    int B = c->B, T = c->T;
    TT_CHECK(tt_dropout_check(&be->cfg, opt->dropout, st));
    TT_CHECK(check_tokens(c, tokens, (size_t)n_micro * B * (T + 1), st)); /* before any gradient accumulates */
    drop_args d = {opt->dropout, opt->seed, opt->step, n_micro, 0};
    const drop_args *dr = opt->dropout > 0.0f ? &d : NULL;
    float dscale = (float)(1.0 / ((double)B * T * n_micro));
    double loss = 0.0, tf = 0.0, tb = 0.0;
    double t0 = tt_now();
    for (int i = 0; i < n_micro; i++) {
        d.micro = i;
        TT_CHECK(load_tokens(c, tokens + (size_t)i * B * (T + 1), B, st));
        loss += forward(be, B, 1, dscale, dr);
        TT_CHECK(tt_cpu_status(&c->cpu, st));
        double t1 = tt_now();
        backward(be, B, dr);
        TT_CHECK(tt_cpu_status(&c->cpu, st));
        double t2 = tt_now();
        tf += t1 - t0;
        tb += t2 - t1;
        t0 = t2;
    }
    double norm = sqrt(tt_adamw_grad_sumsq(&c->cpu, c->grads, c->spans, c->n_spans, c->partials));
    float scale = 1.0f;
    if (opt->clip > 0.0f && norm > opt->clip) scale = (float)(opt->clip / (norm + 1e-6));
    tt_adamw_update(&c->cpu, c->params + c->g0, c->grads, c->m, c->v, c->spans, c->n_spans, opt, scale, 1);
    TT_CHECK(tt_cpu_status(&c->cpu, st));
    c->phase_s[0] = tf;
    c->phase_s[1] = tb;
    c->phase_s[2] = tt_now() - t0;
    c->has_phase = 1;
    c->last_loss = (float)(loss / n_micro);
    c->last_norm = (float)norm;
    return TT_OK;
}

static int cpu_step_result(tt_backend *be, float *loss, float *grad_norm, tt_status *st) {
    (void)st;
    cpu_impl *c = be->impl;
    if (loss) *loss = c->last_loss;
    if (grad_norm) *grad_norm = c->last_norm;
    return TT_OK;
}

static int cpu_eval(tt_backend *be, const tt_token *tokens, int B, float *loss, tt_status *st) {
    cpu_impl *c = be->impl;
    if (!tokens || !loss) return tt_fail(st, TT_EINVAL, "eval: tokens or loss missing");
    if (B < 1 || B > c->B) return tt_fail(st, TT_EINVAL, "eval: batch %d outside 1..%d", B, c->B);
    TT_CHECK(load_tokens(c, tokens, B, st));
    *loss = forward(be, B, 0, 0.0f, NULL);
    return tt_cpu_status(&c->cpu, st);
}

static int cpu_loss_and_grad(tt_backend *be, const tt_token *tokens, float *loss, float *grads, tt_status *st) {
    cpu_impl *c = be->impl;
    if (!tokens || !loss || !grads) return tt_fail(st, TT_EINVAL, "loss_and_grad: missing argument");
    int B = c->B, T = c->T;
    tt_cpu_zero(&c->cpu, c->grads, c->total - c->g0);
    TT_CHECK(load_tokens(c, tokens, B, st));
    *loss = forward(be, B, 1, (float)(1.0 / ((double)B * T)), NULL);
    TT_CHECK(tt_cpu_status(&c->cpu, st));
    backward(be, B, NULL);
    TT_CHECK(tt_cpu_status(&c->cpu, st));
    tt_cpu_zero(&c->cpu, grads, c->g0);
    tt_cpu_copy(&c->cpu, grads + c->g0, c->grads, c->total - c->g0);
    tt_cpu_zero(&c->cpu, c->grads, c->total - c->g0);
    return TT_OK;
}

/* host wall clock of the last step's phases (three tt_now() per micro-batch
 * in step(); forward includes loading the tokens, optimizer = grad norm +
 * clip + AdamW) */
static int cpu_phase_times(tt_backend *be, double ms[3], tt_status *st) {
    cpu_impl *c = be->impl;
    if (!c->has_phase) return tt_fail(st, TT_EINVAL, "phase_times: no step has run yet");
    for (int i = 0; i < 3; i++) ms[i] = c->phase_s[i] * 1e3;
    return TT_OK;
}

static int cpu_plan_bytes(tt_backend *be, const tt_model_config *cfg, uint64_t *bytes, tt_status *st) {
    cpu_impl *c = be->impl;
    *bytes = 0;
    TT_CHECK(tt_config_validate(cfg, st));
    *bytes = tt_backend_cpu_plan_bytes(cfg, c->cpu.nthreads);
    if (!*bytes) return tt_fail(st, TT_ENOMEM, "CPU backend memory plan exceeds the address space");
    return TT_OK;
}

/* backend.h inspect: the eval forward on one sequence padded with zeros to
 * ctx, then the first T rows of the stream and of q, k (packed in qkv) */
static int cpu_inspect(tt_backend *be, const tt_token *tokens, int T, float *resid, float *q, float *k, tt_status *st) {
    cpu_impl *c = be->impl;
    if (!tokens || !resid || !q || !k) return tt_fail(st, TT_EINVAL, "inspect: missing argument");
    if (T < 1 || T > c->T) return tt_fail(st, TT_EINVAL, "inspect: %d tokens outside 1..%d", T, c->T);
    const size_t C = (size_t)c->C, rows = (size_t)T;
    TT_CHECK(check_tokens(c, tokens, (size_t)T, st));
    for (int t = 0; t < c->T; t++) c->inp[t] = t < T ? (int32_t)tokens[t] : 0;
    for (int t = 0; t < c->T; t++) c->tgt[t] = 0;
    forward(be, 1, 0, 0.0f, NULL);
    TT_CHECK(tt_cpu_status(&c->cpu, st));
    memcpy(resid, c->encoded, rows * C * sizeof(float));
    for (int l = 0; l < c->L; l++) {
        const layer_acts *a = &c->layers[l];
        memcpy(resid + (size_t)(l + 1) * rows * C, a->res3, rows * C * sizeof(float));
        for (size_t t = 0; t < rows; t++) {
            memcpy(q + ((size_t)l * rows + t) * C, a->qkv + t * 3 * C, C * sizeof(float));
            memcpy(k + ((size_t)l * rows + t) * C, a->qkv + t * 3 * C + C, C * sizeof(float));
        }
    }
    return TT_OK;
}

static const tt_backend_vtable cpu_vtable = {
    cpu_destroy, cpu_set_state, cpu_get_state, cpu_step, cpu_step_result, cpu_eval, cpu_loss_and_grad,
    NULL, /* step_result_prev: steps are synchronous, nothing to pipeline */
    cpu_phase_times,
    cpu_plan_bytes,
    NULL, /* get_proc: no extras */
    cpu_inspect,
};

int tt_backend_cpu_create(const tt_model_config *cfg, const tt_backend_opts *opts, tt_backend **out, tt_status *st) {
    *out = NULL;
    int threads = opts ? opts->threads : 0;
    TT_CHECK(tt_config_validate(cfg, st));
    /* no f16 tier: the CPU's SIMD kernels gain nothing from f16 operands */
    if (opts && opts->precision != TT_PRECISION_F32)
        return tt_fail(st, TT_EUNSUP,
                       "--precision f16 needs a WebGPU device with shader-f16; the cpu backend trains in f32 (use "
                       "--precision f32 or --backend webgpu)");
    if (threads <= 0) threads = tt_default_threads();
    plan pl;
    int rc = make_plan(cfg, threads, &pl);
    if (rc == TT_EINVAL) return tt_fail(st, TT_EINVAL, "batch x ctx x d_model too large for the CPU backend");
    if (rc) return tt_fail(st, TT_ENOMEM, "CPU backend memory plan exceeds the address space");
    tt_backend *be = calloc(1, sizeof *be);
    cpu_impl *c = calloc(1, sizeof *c);
    if (!be || !c) {
        free(be);
        free(c);
        return tt_fail(st, TT_ENOMEM, "out of memory (CPU backend)");
    }
    be->vt = &cpu_vtable;
    be->cfg = *cfg;
    be->impl = c;
    rc = tt_layout_build(cfg, &be->layout, st);
    if (rc) goto fail;
    c->B = cfg->batch, c->T = cfg->ctx, c->C = cfg->d_model, c->L = cfg->n_layer, c->NH = cfg->n_head, c->V = cfg->vocab;
    c->act = cfg->act, c->eps = tt_config_ln_eps(cfg);
    c->HR = head_rows(cfg);
    c->total = be->layout.total;
    c->g0 = tt_layout_train0(&be->layout);
    rc = TT_ENOMEM;
    if (!(c->params = big_calloc(c->total, &c->raw[0], st))) goto fail;
    if (!(c->grads = big_calloc(c->total - c->g0, &c->raw[1], st))) goto fail;
    if (!(c->m = big_calloc(c->total - c->g0, &c->raw[2], st))) goto fail;
    if (!(c->v = big_calloc(c->total - c->g0, &c->raw[3], st))) goto fail;
    float *act = big_calloc((size_t)pl.act_floats, &c->raw[4], st);
    if (!act) goto fail;
    c->layers = calloc((size_t)c->L, sizeof *c->layers);
    c->R = cfg->lora_rank > 0 ? cfg->lora_rank : 0;
    c->lora_scale = tt_lora_scale(cfg);
    if (c->R > 0) c->lora_h = calloc((size_t)c->L * TT_LORA_N_TARGETS, sizeof *c->lora_h);
    if (!c->layers || (c->R > 0 && !c->lora_h)) {
        tt_fail(st, TT_ENOMEM, "out of memory (CPU backend)");
        goto fail;
    }
    rc = tt_spans_build(&be->layout, &c->spans, &c->n_spans, st);
    if (rc) goto fail;
    for (int64_t i = 0; i < c->n_spans; i++) { /* into grads, m, v (and params + g0) */
        if (c->spans[i].off < c->g0) {
            rc = tt_fail(st, TT_EINVAL, "internal error: a trainable tensor inside the frozen base");
            goto fail;
        }
        c->spans[i].off -= c->g0;
    }
    c->partials = malloc((size_t)c->n_spans * sizeof(double) + 8);
    if (!c->partials) {
        rc = tt_fail(st, TT_ENOMEM, "out of memory (CPU backend)");
        goto fail;
    }
    {
        size_t N = (size_t)c->B * c->T, C = (size_t)c->C;
        float *q = act;
#define TAKE(n) (q += (((size_t)(n)) + 15) & ~(size_t)15, q - ((((size_t)(n)) + 15) & ~(size_t)15))
        c->inp = (int32_t *)TAKE(N);
        c->tgt = (int32_t *)TAKE(N);
        c->encoded = TAKE(N * C);
        for (int l = 0; l < c->L; l++) {
            layer_acts *a = &c->layers[l];
            a->ln1 = TAKE(N * C);
            a->ln1_stats = TAKE(2 * N);
            a->qkv = TAKE(3 * N * C);
            a->atty = TAKE(N * C);
            a->att_stats = TAKE(2 * (size_t)c->B * c->NH * c->T);
            a->res2 = TAKE(N * C);
            a->ln2 = TAKE(N * C);
            a->ln2_stats = TAKE(2 * N);
            a->fch = TAKE(4 * N * C);
            a->fchg = TAKE(4 * N * C);
            a->res3 = TAKE(N * C);
        }
        c->lnf = TAKE(N * C);
        c->lnf_stats = TAKE(2 * N);
        c->logits = TAKE((size_t)c->HR * (size_t)c->V);
        c->losses = TAKE(N);
        c->dres = TAKE(N * C);
        c->dln = TAKE(N * C);
        c->datty = TAKE(N * C);
        c->dqkv = TAKE(3 * N * C);
        c->dfch = TAKE(4 * N * C);
        if (c->R > 0) {
            for (int l = 0; l < c->L; l++)
                for (int t = 0; t < TT_LORA_N_TARGETS; t++)
                    if (tt_layout_lora_index(cfg, l, t, TT_LORA_A) >= 0)
                        c->lora_h[l * TT_LORA_N_TARGETS + t] = TAKE(N * (size_t)c->R);
            c->lora_dh = TAKE(N * (size_t)c->R);
        }
#undef TAKE
        if ((size_t)(q - act) > pl.act_floats) {
            rc = tt_fail(st, TT_EINVAL, "internal error: CPU activation plan too small");
            goto fail;
        }
    }
    rc = tt_cpu_create(&c->cpu, threads, (size_t)pl.shared, (size_t)pl.thread, st);
    if (rc) goto fail;
    be->desc.kind = TT_BACKEND_CPU;
    be->desc.name = "cpu";
    be->desc.is_software = 1;
    be->desc.host_bytes = pl.total;
    be->desc.device_bytes = 0;
    snprintf(be->desc.device, sizeof be->desc.device, "cpu %s, %d thread%s", TT_ISA, c->cpu.nthreads,
             c->cpu.nthreads == 1 ? "" : "s");
    *out = be;
    return TT_OK;
fail:
    cpu_destroy(be);
    return rc ? rc : TT_ENOMEM;
}
