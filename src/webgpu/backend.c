/* backend.c — the WebGPU training backend (tt_backend_webgpu_create):
 * the buffer plan and the schedule of one training step as lists of kernel
 * sites (gpu_ops.h), all built once at creation. Shared C for native (Dawn)
 * and browser device layers: it only talks to device.h.
 *
 * Buffers: params, grads, m, v (layout.total floats each, the layout of
 * config.h; tensors addressed by element offset), each split into "chunks"
 * (one buffer per chunk, the same chunking for all four) when it exceeds the
 * adapter's maxStorageBufferBindingSize / maxBufferSize (see plan_chunks);
 * one buffer per activation tensor; a u32 token buffer (tokens, then the embedding-gradient
 * buckets); small stats (loss, grad norm) copied to alternating readback
 * buffers. A step = one command buffer per micro-batch (tokens are uploaded
 * between them with queue.writeBuffer); the last one also holds grad norm,
 * clip, AdamW and the stats copy. step() returns after the submit;
 * step_result() waits for the mapping of the most recent step's stats,
 * step_result_prev() for the step before it (the trainer submits step k+1,
 * then reads step k: two readback slots, the GPU never waits for the host).
 * Bias gradients are folded into the weight-gradient matmuls (a ones row)
 * where that is cheaper than a separate column sum (dw_db).
 * LoRA (config.h): the adapters live in params after the base; each
 * targeted projection gets the lora sites (lora.c) after its matmul, x A of
 * every adapter pair kept in lora-t for the backward. A frozen tensor
 * (trainable = 0) gets no gradient site, and the grad norm and AdamW run
 * over each chunk's trainable range [t0, t0 + tn) alone; without LoRA that
 * range is the whole chunk and the schedule is the plain model's.
 * With dropout the adapters' output joins its projection's branch before
 * the branch's dropout and residual add.
 * Nothing is allocated per step on the host.
 *
 * Dropout (tt_optim_args.dropout > 0): a second schedule (dfwd, dbwd),
 * planned once, at creation when tt_backend_opts.dropout says steps will
 * drop (else at the first step that asks, which then allocates): the attention
 * kernels' dropout variants, dropout sites on the embedding output and on
 * the two residual branches (the projection written without its residual,
 * then out = residual + mask * branch in place; backward: the branch
 * gradient mask * dres into the dq scratch, free until attention backward
 * writes it). Keys: one per (layer, site) of the micro-batch (slot
 * layer * 4 + site, the embedding's n_layer * 4 + TT_DROP_EMBED), written
 * before each micro-batch's submit like its tokens. Steps with p = 0, eval
 * and loss_and_grad run the first schedule, unchanged. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "gpu_ops.h"
#include "hooks.h"
#include "webgpu_profile.h"

typedef struct {
    tt_gpu_buf ln1, st1, q, k, v, y, att, res2, ln2, st2, h, g;
} wl_acts;

/* A chunk of the parameter-sized storage: parameters [g0, g0 + n) of the
 * layout, stored from buffer position pad in its own params, grads, m, v
 * buffers (and its own decay mask, bit i = parameter g0 + i). Chunks start
 * only at "units" (tensors 2u, 2u+1 of the layout: wte+wpe, each LayerNorm's
 * weight+bias, each matrix and its bias), the tensors kernel sites need in one
 * buffer (embedding: wte and wpe; LayerNorm: w and b, dw and db; the folded
 * bias gradient: dW then db). pad = g0 % 4 keeps every tensor's buffer
 * offset congruent mod 4 to its layout offset, so every site picks the same
 * (vec4 or not) kernel as in one buffer: splitting changes no arithmetic. */
typedef struct {
    size_t g0, n;
    uint32_t pad;
    int u0, u1;             /* units [u0, u1) */
    size_t t0, tn;          /* its trainable parameters [t0, t0 + tn) (all of it without LoRA; the adapters) */
    uint32_t part0, n_part; /* its grad-norm parts (tt_gop_adamw_chunks) */
    tt_gpu_buf p, g, m, v, mask;
} wchunk;

typedef struct {
    tt_gpu *g;
    tt_gops ops;
    int B, T, C, NH, L, V;
    size_t P;
    wchunk *ch;             /* parameter storage chunks (1 unless split) */
    int n_ch;
    tt_gpu_buf *pset, *gset; /* ch[i].p, ch[i].g as arrays (PR) */
    uint32_t n_part;        /* grad-norm parts: a function of the layout only, not of the chunking */
    tt_gpu_buf parts, tok, stats, part_cs, part_opt;
    tt_gpu_buf *res; /* L+1 residual streams */
    wl_acts *la;
    tt_gpu_buf lnf, stf, logits, losses;
    tt_gpu_buf dres, dtmp, dq, dk, dv, dg;
    tt_gpu_buf lora_t, lora_dt, lora_prod; /* LoRA: x A of every (layer, target), its gradient, t^T dout */
    size_t lora_slot;                      /* elements of one x A slot (rows * R, rounded up to 4) */
    tt_gpu_buf staging[2], stage_eval;
    int cur, last, pending[2];
    int res_ok[2];          /* res_loss/res_norm of a staging slot hold its step's result */
    float res_loss[2], res_norm[2];
    int64_t n_steps;        /* steps submitted */
    tt_gsite *fwd, *bwd, *opt;
    int n_fwd, n_bwd, n_opt, cap_fwd, cap_bwd;
    tt_gsite *dfwd, *dbwd;  /* the dropout schedule (planned by the first step with dropout) */
    int n_dfwd, n_dbwd;
    tt_dropout_key *dkeys;  /* (L+1)*4 keys of a micro-batch */
    uint32_t *dwords;       /* their upload: 4 + 2 * (L+1)*4 words */
    uint32_t *tokhost;
    size_t tok_words, bucket_off, pos_off;
    int biasfold;      /* bias grads folded into the dW matmuls: 2 where it pays (dw_db), 1 always, 0 never (test hook TT_WEBGPU_BIASFOLD) */
    int dry;           /* preflight: count bytes, allocate nothing */
    double plan_bytes; /* device memory of the plan */
    uint64_t bind_cap; /* test hook TT_WEBGPU_MAX_BINDING_MIB: a smaller binding limit than the adapter's */
    /* test hook TT_WEBGPU_FAULT_AT_STEP=N: the N-th step() of this backend
     * (1-based) reports a device error; TT_WEBGPU_FAULT_KIND=lost (default:
     * the device is gone, every later call fails too), error (only that
     * step fails before anything is submitted; the device stays usable) or
     * validation (a real WebGPU validation error: that step records one
     * dispatch over the adapter's workgroup-count limit, which the device
     * reports as an uncaptured error at submit; the device layer keeps it) */
    int64_t fault_at;
    int fault_lost;
    int fault_validation;
    int faulted; /* 1: simulated lost device */
    /* phase split (opt-in, tt_backend_opts.timestamps and an adapter with
     * timestamp-query): GPU timestamps at the start of the forward, backward
     * and optimizer passes of each micro-batch (slot 3i, 3i+1, 3i+2) and one
     * after the optimizer (3n), resolved into ts_stage[slot] with the stats.
     * Adds pass boundaries and one small query-resolve buffer per step, so
     * it stays off unless asked for. */
    int ts;                 /* timestamps recorded */
    const char *ts_why;     /* why phase_times is unavailable */
    char ts_why_buf[256];
    tt_gpu_buf ts_stage[2];
    int ts_n[2];            /* slots recorded by the step in readback slot i (0: none) */
    int ts_pending[2];
    uint64_t ts_host[64];
    double phase_ms[3];
    int has_phase;
} wgpu_impl;

#define WGPU_TS_SLOTS 64 /* up to (64-1)/3 = 21 micro-batches per step are timed */

static wgpu_impl *IMPL(tt_backend *be) { return (wgpu_impl *)be->impl; }
static const tt_backend_vtable wgpu_vt;

static void wgpu_destroy(tt_backend *be) {
    if (!be) return;
    wgpu_impl *w = IMPL(be);
    if (w) {
        tt_gops_free(&w->ops);
        if (w->g) tt_gpu_close(w->g);
        free(w->res);
        free(w->la);
        free(w->fwd);
        free(w->bwd);
        free(w->dfwd);
        free(w->dbwd);
        free(w->dkeys);
        free(w->dwords);
        free(w->opt);
        free(w->tokhost);
        free(w->ch);
        free(w->pset);
        free(w->gset);
        free(w);
    }
    tt_layout_free(&be->layout);
    free(be);
}

/* ---- buffer plan --------------------------------------------------------- */
/* In the dry run (preflight) only sizes are added up: a model that cannot
 * fit is refused before anything is allocated. */
static int mkbuf(wgpu_impl *w, size_t elems, const char *label, tt_gpu_buf *out, tt_status *st) {
    uint64_t bytes = (uint64_t)elems * 4;
    const tt_gpu_info *in = tt_gpu_get_info(w->g);
    if (w->dry) {
        uint64_t lim = in->max_storage_binding;
        if (w->bind_cap && w->bind_cap < lim) lim = w->bind_cap;
        w->plan_bytes += (double)bytes;
        *out = -1;
        if (bytes > lim)
            return tt_fail(st, TT_EUNSUP,
                           "webgpu: this model needs a %.4g MiB %s buffer but the adapter binds at most %.4g MiB "
                           "(maxStorageBufferBindingSize); use a smaller preset or batch",
                           bytes / 1048576.0, label, lim / 1048576.0);
        if (bytes > in->max_buffer)
            return tt_fail(st, TT_EUNSUP,
                           "webgpu: this model needs a %.4g MiB %s buffer; the adapter's maxBufferSize is %.4g MiB",
                           bytes / 1048576.0, label, in->max_buffer / 1048576.0);
        return TT_OK;
    }
    return tt_gpu_buffer(w->g, bytes, TT_GPU_STORAGE, label, out, st);
}

static tt_gref R(tt_gpu_buf b) {
    tt_gref r = {b, 0};
    return r;
}

/* Parameters that train: all, or with LoRA the adapters alone (config.h). */
static size_t trainable_count(const tt_layout *lo) {
    size_t n = 0;
    for (int i = 0; i < lo->n_tensors; i++) n += lo->t[i].trainable ? lo->t[i].numel : 0;
    return n;
}

/* The parameter-storage chunks: consecutive units packed greedily while the
 * chunk (pad included) stays within the adapter's binding and buffer limits
 * (the test hook TT_WEBGPU_MAX_BINDING_MIB lowers the first). One chunk
 * whenever the storage fits one buffer, so an unsplit model plans exactly as
 * before. A unit larger than the limit is refused, naming its tensor(s). Also
 * counts the grad-norm parts: each unit cut into parts of
 * tt_gop_norm_part_len(P) from its start. Host only (used by the preflight). */
static int plan_chunks(tt_backend *be, tt_status *st) {
    wgpu_impl *w = IMPL(be);
    const tt_layout *lo = &be->layout;
    const tt_gpu_info *in = tt_gpu_get_info(w->g);
    uint64_t bind = in->max_storage_binding;
    if (w->bind_cap && w->bind_cap < bind) bind = w->bind_cap;
    const char *which = bind <= in->max_buffer ? "maxStorageBufferBindingSize" : "maxBufferSize";
    const uint64_t lim = bind <= in->max_buffer ? bind : in->max_buffer;
    const int nu = lo->n_tensors / 2;
    free(w->ch);
    w->n_ch = 0;
    w->ch = calloc((size_t)(nu > 0 ? nu : 1), sizeof *w->ch);
    if (!w->ch) return tt_fail(st, TT_ENOMEM, "out of memory (webgpu chunks)");
    const size_t per = tt_gop_norm_part_len(trainable_count(lo));
    uint64_t parts = 0;
    for (int u = 0; u < nu; u++) {
        const tt_tensor_info *a = &lo->t[2 * u], *b = &lo->t[2 * u + 1];
        const size_t n = a->numel + b->numel;
        if (a->trainable != b->trainable)
            return tt_fail(st, TT_EINVAL, "webgpu: %s and %s must both train or both be frozen", a->name, b->name);
        if (((a->offset & 3) + (uint64_t)n) * 4 > lim) {
            const tt_tensor_info *big = a->numel >= b->numel ? a : b;
            if (((big->offset & 3) + (uint64_t)big->numel) * 4 > lim)
                return tt_fail(st, TT_EUNSUP,
                               "webgpu: parameter tensor %s needs %.4g MiB but the adapter binds at most %.4g MiB "
                               "(%s); use a smaller preset",
                               big->name, big->numel * 4 / 1048576.0, lim / 1048576.0, which);
            return tt_fail(st, TT_EUNSUP,
                           "webgpu: parameter tensors %s and %s must share one buffer (%.4g MiB) but the adapter "
                           "binds at most %.4g MiB (%s); use a smaller preset",
                           a->name, b->name, n * 4 / 1048576.0, lim / 1048576.0, which);
        }
        wchunk *c = w->n_ch ? &w->ch[w->n_ch - 1] : NULL;
        if (!c || ((uint64_t)c->pad + c->n + n) * 4 > lim) {
            c = &w->ch[w->n_ch++];
            c->g0 = a->offset;
            c->pad = (uint32_t)(a->offset & 3);
            c->n = 0;
            c->u0 = u;
            c->part0 = (uint32_t)parts;
            c->n_part = 0;
            c->t0 = c->tn = 0;
        }
        c->n += n;
        c->u1 = u + 1;
        if (!a->trainable) { /* frozen: no gradient, no parts, no update */
            if (c->tn)
                return tt_fail(st, TT_EINVAL, "webgpu: frozen tensor %s after trainable ones in one buffer", a->name);
            continue;
        }
        if (!c->tn) c->t0 = a->offset;
        c->tn += n;
        const uint64_t k = (n + per - 1) / per;
        c->n_part += (uint32_t)k;
        parts += k;
        if ((uint64_t)c->pad + c->n > 0xFFFFFFFFull || parts > 0xFFFFFFFFull)
            return tt_fail(st, TT_EUNSUP, "webgpu: a parameter buffer exceeds 32-bit indexing");
    }
    w->n_part = (uint32_t)parts;
    return TT_OK;
}

static int chunk_of(const wgpu_impl *w, size_t off) {
    int c = 0;
    while (c + 1 < w->n_ch && w->ch[c + 1].g0 <= off) c++;
    return c;
}

static uint64_t chunk_bytes(const wchunk *c) { return ((uint64_t)c->pad + c->n) * 4; }

/* a parameter-sized tensor: set = w->pset (params) or w->gset (grads) */
static tt_gref PR(tt_backend *be, const tt_gpu_buf *set, tt_tensor_kind kind, int layer) {
    wgpu_impl *w = IMPL(be);
    size_t off = tt_layout_offset(&be->layout, &be->cfg, kind, layer);
    const int c = chunk_of(w, off);
    tt_gref r = {set[c], (uint32_t)(off - w->ch[c].g0 + w->ch[c].pad)};
    return r;
}

/* tensor i of the layout in set */
static tt_gref PRI(tt_backend *be, const tt_gpu_buf *set, int i) {
    wgpu_impl *w = IMPL(be);
    const size_t off = be->layout.t[i].offset;
    const int c = chunk_of(w, off);
    tt_gref r = {set[c], (uint32_t)(off - w->ch[c].g0 + w->ch[c].pad)};
    return r;
}

/* 0: the tensor is frozen (the base of a LoRA model): no gradient sites */
static int trains(const tt_backend *be, tt_tensor_kind kind, int layer) {
    return be->layout.t[tt_layout_index(&be->cfg, kind, layer)].trainable;
}

#define FWD(call)                                                              \
    do {                                                                       \
        if (w->n_fwd + 4 > w->cap_fwd) return tt_fail(st, TT_EINVAL, "webgpu: site overflow"); \
        TT_CHECK(call);                                                        \
    } while (0)

static tt_gsite *fnext(wgpu_impl *w, int n) {
    tt_gsite *s = &w->fwd[w->n_fwd];
    w->n_fwd += n;
    return s;
}
static tt_gsite *bnext(wgpu_impl *w, int n) {
    tt_gsite *s = &w->bwd[w->n_bwd];
    w->n_bwd += n;
    return s;
}

#define BIASFOLD_MAX_FLOP 268435456.0 /* 2^28 flops: about the cost of the column sum's two dispatches */
/* dW (M,N) += X^T dY and db (N) += column sums of dY, X (BT,M), dY (BT,N):
 * one matmul with a ones row when W and b are adjacent in the layout (always
 * in config.h's layout) and folding pays, else a matmul plus the two-stage
 * column sum. The row is folded in where it fits the last tile row (M not a
 * multiple of the planned tile) or where the extra row of tiles is cheaper
 * than the column sum's two dispatches (its 2*tile*N*BT flops at most
 * BIASFOLD_MAX_FLOP). At gpt2 (M = 768 or 3072 on the 128 tile, 1.6-6.4
 * GFLOP per extra row) a 7th (25th) row of workgroups would run the whole K
 * loop for one row, so the column sum runs (docs/BENCHMARKS.md). The test
 * hook TT_WEBGPU_BIASFOLD=1 always folds, 0 never. */
static int dw_db(tt_backend *be, tt_gsite *s, tt_gref X, tt_gref dY, tt_tensor_kind kw, tt_tensor_kind kb, int l,
                 int M, int N, int BT, tt_status *st) {
    wgpu_impl *w = IMPL(be);
    tt_gref gw = PR(be, w->gset, kw, l), gb = PR(be, w->gset, kb, l);
    memset(s, 0, 4 * sizeof *s);
    int fold = w->biasfold == 1;
    if (w->biasfold == 2) {
        int tile;
        uint32_t splits, kchunk;
        tt_gop_matmul_plan(&w->ops, M + 1, N, BT, 1, &tile, &splits, &kchunk);
        fold = M % tile != 0 || 2.0 * tile * N * BT <= BIASFOLD_MAX_FLOP;
    }
    if (fold && gb.buf == gw.buf && gb.off == gw.off + (uint32_t)M * (uint32_t)N)
        return tt_gop_matmul_ex(&w->ops, s, gw, X, dY, NULL, NULL, M + 1, N, BT, 1, 0, 1, 1, st);
    TT_CHECK(tt_gop_matmul(&w->ops, s, gw, X, dY, NULL, NULL, M, N, BT, 1, 0, 1, st));
    return tt_gop_matmul_backward_bias(&w->ops, s + 2, gb, dY, R(w->part_cs), BT, N, st);
}

/* ---- LoRA: the adapters of target tg in layer l, when the model has them
 * (config.h). x A of every adapter pair is kept from forward to backward in
 * its slot of lora_t (slot k for the k-th pair of the layout). ---- */
#define LORA_FWD_SITES 5  /* tt_gop_lora_forward with 3 outputs */
#define LORA_BWD_SITES 14 /* tt_gop_lora_backward with 3 outputs */

static tt_gref lora_slot(tt_backend *be, int ia) {
    wgpu_impl *w = IMPL(be);
    tt_gref r = {w->lora_t, (uint32_t)((size_t)(ia - be->layout.n_base) / 2 * w->lora_slot)};
    return r;
}

/* out[j] (rows, out_width / n_out) += s (x A) B, x (rows, in) */
static int lora_fwd(tt_backend *be, int l, int tg, const tt_gref *out, int n_out, tt_gref x, tt_status *st) {
    wgpu_impl *w = IMPL(be);
    const int ia = tt_layout_lora_index(&be->cfg, l, tg, TT_LORA_A);
    if (ia < 0) return TT_OK;
    int64_t in, ow;
    tt_lora_dims(&be->cfg, tg, &in, &ow);
    if (w->n_fwd + 2 + n_out > w->cap_fwd) return tt_fail(st, TT_EINVAL, "webgpu: site overflow");
    return tt_gop_lora_forward(&w->ops, fnext(w, 2 + n_out), out, n_out, lora_slot(be, ia), x, PRI(be, w->pset, ia),
                               PRI(be, w->pset, ia + 1), w->B * w->T, (int)in, be->cfg.lora_rank, (int)ow / n_out,
                               tt_lora_scale(&be->cfg), st);
}

/* dA, dB +=, dx (rows, in) += the adapters' share, from dout[j] (rows, out_width / n_out) */
static int lora_bwd(tt_backend *be, int l, int tg, tt_gref dx, const tt_gref *dout, int n_out, tt_gref x,
                    tt_status *st) {
    wgpu_impl *w = IMPL(be);
    const int ia = tt_layout_lora_index(&be->cfg, l, tg, TT_LORA_A);
    if (ia < 0) return TT_OK;
    int64_t in, ow;
    tt_lora_dims(&be->cfg, tg, &in, &ow);
    const int n = 5 + 3 * n_out;
    if (w->n_bwd + n > w->cap_bwd) return tt_fail(st, TT_EINVAL, "webgpu: site overflow");
    return tt_gop_lora_backward(&w->ops, bnext(w, n), dx, PRI(be, w->gset, ia), PRI(be, w->gset, ia + 1), R(w->lora_dt),
                                R(w->lora_prod), dout, n_out, lora_slot(be, ia), x, PRI(be, w->pset, ia),
                                PRI(be, w->pset, ia + 1), w->B * w->T, (int)in, be->cfg.lora_rank, (int)ow / n_out,
                                tt_lora_scale(&be->cfg), st);
}

/* dropout key slot of (layer, site) */
static uint32_t dslot(int layer, int site) { return (uint32_t)(layer * 4 + site); }

/* The forward and backward sites of one micro-batch into w->fwd, w->bwd;
 * drop: the dropout schedule (see the header). */
static int plan_sched(tt_backend *be, int drop, tt_status *st) {
    wgpu_impl *w = IMPL(be);
    tt_gops *o = &w->ops;
    const int B = w->B, T = w->T, C = w->C, NH = w->NH, L = w->L, V = w->V;
    const int BT = B * T;
    const int C4 = 4 * C;
    const size_t nBTC = (size_t)BT * C;
    const tt_gpu_buf *P = w->pset, *G = w->gset;
    tt_gref tokens = R(w->tok);

    /* ---- forward ---- */
    FWD(tt_gop_embedding_forward(o, fnext(w, 1), R(drop ? w->dq : w->res[0]), tokens, PR(be, P, TT_WTE, -1),
                                 PR(be, P, TT_WPE, -1), B, T, C, st));
    if (drop) FWD(tt_gop_dropout(o, fnext(w, 1), R(w->res[0]), R(w->dq), nBTC, 0, dslot(L, TT_DROP_EMBED), st));
    for (int l = 0; l < L; l++) {
        wl_acts *a = &w->la[l];
        FWD(tt_gop_layernorm_forward(o, fnext(w, 1), R(a->ln1), R(a->st1), R(w->res[l]), PR(be, P, TT_LN1W, l),
                                     PR(be, P, TT_LN1B, l), BT, C, st));
        tt_gref qb = PR(be, P, TT_QB, l), kb = PR(be, P, TT_KB, l), vb = PR(be, P, TT_VALB, l);
        FWD(tt_gop_matmul(o, fnext(w, 2), R(a->q), R(a->ln1), PR(be, P, TT_QW, l), &qb, NULL, BT, C, C, 0, 0, 0, st));
        FWD(tt_gop_matmul(o, fnext(w, 2), R(a->k), R(a->ln1), PR(be, P, TT_KW, l), &kb, NULL, BT, C, C, 0, 0, 0, st));
        FWD(tt_gop_matmul(o, fnext(w, 2), R(a->v), R(a->ln1), PR(be, P, TT_VALW, l), &vb, NULL, BT, C, C, 0, 0, 0, st));
        const tt_gref qkv[3] = {R(a->q), R(a->k), R(a->v)};
        TT_CHECK(lora_fwd(be, l, TT_LORA_C_ATTN, qkv, 3, R(a->ln1), st));
        if (drop)
            FWD(tt_gop_attention_forward_drop(o, fnext(w, 1), R(a->y), R(a->att), R(a->q), R(a->k), R(a->v), B, T, C,
                                              NH, dslot(l, TT_DROP_ATTN), st));
        else FWD(tt_gop_attention_forward(o, fnext(w, 1), R(a->y), R(a->att), R(a->q), R(a->k), R(a->v), B, T, C, NH, st));
        tt_gref ob = PR(be, P, TT_OB, l), res = R(w->res[l]);
        FWD(tt_gop_matmul(o, fnext(w, 2), R(a->res2), R(a->y), PR(be, P, TT_OW, l), &ob, drop ? NULL : &res, BT, C, C, 0,
                          0, 0, st));
        TT_CHECK(lora_fwd(be, l, TT_LORA_ATTN_C_PROJ, (tt_gref[1]){R(a->res2)}, 1, R(a->y), st));
        if (drop) FWD(tt_gop_dropout(o, fnext(w, 1), R(a->res2), res, nBTC, 1, dslot(l, TT_DROP_ATTN_OUT), st));
        FWD(tt_gop_layernorm_forward(o, fnext(w, 1), R(a->ln2), R(a->st2), R(a->res2), PR(be, P, TT_LN2W, l),
                                     PR(be, P, TT_LN2B, l), BT, C, st));
        tt_gref fb = PR(be, P, TT_FCB, l);
        FWD(tt_gop_matmul(o, fnext(w, 2), R(a->h), R(a->ln2), PR(be, P, TT_FCW, l), &fb, NULL, BT, C4, C, 0, 0, 0,
                          st));
        TT_CHECK(lora_fwd(be, l, TT_LORA_C_FC, (tt_gref[1]){R(a->h)}, 1, R(a->ln2), st));
        FWD(tt_gop_gelu_forward(o, fnext(w, 1), R(a->g), R(a->h), (size_t)BT * C4, st));
        tt_gref pb = PR(be, P, TT_PROJB, l), res2 = R(a->res2);
        FWD(tt_gop_matmul(o, fnext(w, 2), R(w->res[l + 1]), R(a->g), PR(be, P, TT_PROJW, l), &pb, drop ? NULL : &res2,
                          BT, C, C4, 0, 0, 0, st));
        TT_CHECK(lora_fwd(be, l, TT_LORA_MLP_C_PROJ, (tt_gref[1]){R(w->res[l + 1])}, 1, R(a->g), st));
        if (drop) FWD(tt_gop_dropout(o, fnext(w, 1), R(w->res[l + 1]), res2, nBTC, 1, dslot(l, TT_DROP_MLP_OUT), st));
    }
    FWD(tt_gop_layernorm_forward(o, fnext(w, 1), R(w->lnf), R(w->stf), R(w->res[L]), PR(be, P, TT_LNFW, -1),
                                 PR(be, P, TT_LNFB, -1), BT, C, st));
    /* logits (BT,V) = lnf (BT,C) @ wte^T, wte stored (V,C) */
    FWD(tt_gop_matmul(o, fnext(w, 2), R(w->logits), R(w->lnf), PR(be, P, TT_WTE, -1), NULL, NULL, BT, V, C, 0, 1, 0,
                      st));
    FWD(tt_gop_crossentropy(o, fnext(w, 1), R(w->logits), R(w->losses), tokens, BT, V, T, st));
    FWD(tt_gop_crossentropy_loss_reduce(o, fnext(w, 1), R(w->stats), R(w->losses), st));

    /* ---- backward ---- */
#define BWD(n, call)                                                               \
    do {                                                                           \
        if (w->n_bwd + (n) > w->cap_bwd) return tt_fail(st, TT_EINVAL, "webgpu: site overflow"); \
        TT_CHECK(call);                                                            \
    } while (0)
    tt_gref part = R(w->part_cs);
    /* dlnf (BT,C) = dlogits (BT,V) @ wte (V,C); dwte += dlogits^T @ lnf */
    BWD(2, tt_gop_matmul(o, bnext(w, 2), R(w->dtmp), R(w->logits), PR(be, P, TT_WTE, -1), NULL, NULL, BT, C, V, 0, 0,
                         0, st));
    if (trains(be, TT_WTE, -1))
        BWD(2, tt_gop_matmul(o, bnext(w, 2), PR(be, G, TT_WTE, -1), R(w->logits), R(w->lnf), NULL, NULL, V, C, BT, 1, 0,
                             1, st));
    BWD(3, tt_gop_layernorm_backward(o, bnext(w, 3), R(w->dres), PR(be, G, TT_LNFW, -1), R(w->dtmp), R(w->res[L]),
                                     PR(be, P, TT_LNFW, -1), R(w->stf), part, BT, C, 0, st));
    if (!trains(be, TT_LNFW, -1)) w->n_bwd -= 2; /* frozen: the dinp site alone (its first) */
    for (int l = L - 1; l >= 0; l--) {
        wl_acts *a = &w->la[l];
        /* mlp proj: res[l+1] = g @ projw + projb + res2 (dropout: the branch's gradient mask * dres in dq) */
        const tt_gpu_buf dbr = drop ? w->dq : w->dres;
        if (drop) BWD(1, tt_gop_dropout(o, bnext(w, 1), R(w->dq), R(w->dres), nBTC, 0, dslot(l, TT_DROP_MLP_OUT), st));
        BWD(2, tt_gop_matmul(o, bnext(w, 2), R(w->dg), R(dbr), PR(be, P, TT_PROJW, l), NULL, NULL, BT, C4, C, 0, 1, 0,
                             st));
        if (trains(be, TT_PROJW, l)) BWD(4, dw_db(be, bnext(w, 4), R(a->g), R(dbr), TT_PROJW, TT_PROJB, l, C4, C, BT, st));
        TT_CHECK(lora_bwd(be, l, TT_LORA_MLP_C_PROJ, R(w->dg), (tt_gref[1]){R(dbr)}, 1, R(a->g), st));
        BWD(1, tt_gop_gelu_backward(o, bnext(w, 1), R(w->dg), R(a->h), (size_t)BT * C4, st));
        /* fc: h = ln2 @ fcw + fcb */
        BWD(2, tt_gop_matmul(o, bnext(w, 2), R(w->dtmp), R(w->dg), PR(be, P, TT_FCW, l), NULL, NULL, BT, C, C4, 0, 1,
                             0, st));
        if (trains(be, TT_FCW, l)) BWD(4, dw_db(be, bnext(w, 4), R(a->ln2), R(w->dg), TT_FCW, TT_FCB, l, C, C4, BT, st));
        TT_CHECK(lora_bwd(be, l, TT_LORA_C_FC, R(w->dtmp), (tt_gref[1]){R(w->dg)}, 1, R(a->ln2), st));
        BWD(3, tt_gop_layernorm_backward(o, bnext(w, 3), R(w->dres), PR(be, G, TT_LN2W, l), R(w->dtmp), R(a->res2),
                                         PR(be, P, TT_LN2W, l), R(a->st2), part, BT, C, 1, st));
        if (!trains(be, TT_LN2W, l)) w->n_bwd -= 2;
        /* attn out: res2 = y @ ow + ob + res[l] (dropout: as above; attention backward then overwrites dq) */
        if (drop) BWD(1, tt_gop_dropout(o, bnext(w, 1), R(w->dq), R(w->dres), nBTC, 0, dslot(l, TT_DROP_ATTN_OUT), st));
        BWD(2, tt_gop_matmul(o, bnext(w, 2), R(w->dtmp), R(dbr), PR(be, P, TT_OW, l), NULL, NULL, BT, C, C, 0, 1, 0,
                             st));
        if (trains(be, TT_OW, l)) BWD(4, dw_db(be, bnext(w, 4), R(a->y), R(dbr), TT_OW, TT_OB, l, C, C, BT, st));
        TT_CHECK(lora_bwd(be, l, TT_LORA_ATTN_C_PROJ, R(w->dtmp), (tt_gref[1]){R(dbr)}, 1, R(a->y), st));
        if (drop)
            BWD(2, tt_gop_attention_backward_drop(o, bnext(w, 2), R(w->dq), R(w->dk), R(w->dv), R(a->att), R(a->q),
                                                  R(a->k), R(a->v), R(a->y), R(w->dtmp), B, T, C, NH,
                                                  dslot(l, TT_DROP_ATTN), st));
        else
            BWD(2, tt_gop_attention_backward(o, bnext(w, 2), R(w->dq), R(w->dk), R(w->dv), R(a->att), R(a->q), R(a->k),
                                             R(a->v), R(a->y), R(w->dtmp), B, T, C, NH, st));
        /* q, k, v projections of ln1 */
        const tt_tensor_kind wk[3] = {TT_QW, TT_KW, TT_VALW}, bk[3] = {TT_QB, TT_KB, TT_VALB};
        const tt_gpu_buf dx[3] = {w->dq, w->dk, w->dv};
        for (int j = 0; j < 3; j++)
            BWD(2, tt_gop_matmul(o, bnext(w, 2), R(w->dtmp), R(dx[j]), PR(be, P, wk[j], l), NULL, NULL, BT, C, C, 0, 1,
                                 j > 0, st));
        for (int j = 0; j < 3; j++)
            if (trains(be, wk[j], l)) BWD(4, dw_db(be, bnext(w, 4), R(a->ln1), R(dx[j]), wk[j], bk[j], l, C, C, BT, st));
        const tt_gref dqkv[3] = {R(w->dq), R(w->dk), R(w->dv)};
        TT_CHECK(lora_bwd(be, l, TT_LORA_C_ATTN, R(w->dtmp), dqkv, 3, R(a->ln1), st));
        BWD(3, tt_gop_layernorm_backward(o, bnext(w, 3), R(w->dres), PR(be, G, TT_LN1W, l), R(w->dtmp), R(w->res[l]),
                                         PR(be, P, TT_LN1W, l), R(a->st1), part, BT, C, 1, st));
        if (!trains(be, TT_LN1W, l)) w->n_bwd -= 2;
    }
    if (trains(be, TT_WTE, -1)) {
        if (drop) BWD(1, tt_gop_dropout(o, bnext(w, 1), R(w->dq), R(w->dres), nBTC, 0, dslot(L, TT_DROP_EMBED), st));
        BWD(2, tt_gop_embedding_backward(o, bnext(w, 2), PR(be, G, TT_WTE, -1), PR(be, G, TT_WPE, -1),
                                         R(drop ? w->dq : w->dres), w->tok, (uint32_t)w->bucket_off, (uint32_t)w->pos_off,
                                         B, T, C, V, st));
    }
#undef BWD
    return TT_OK;
}

/* The dropout schedule (once): planned into the arrays of the plain one,
 * which are swapped back after. */
static int plan_drop(tt_backend *be, tt_status *st) {
    wgpu_impl *w = IMPL(be);
    const uint32_t n_slots = (uint32_t)(w->L + 1) * 4;
    tt_gsite *keep_f = w->fwd, *keep_b = w->bwd;
    const int keep_nf = w->n_fwd, keep_nb = w->n_bwd;
    w->dfwd = calloc((size_t)w->cap_fwd, sizeof *w->dfwd);
    w->dbwd = calloc((size_t)w->cap_bwd, sizeof *w->dbwd);
    w->dkeys = calloc(n_slots, sizeof *w->dkeys);
    w->dwords = calloc(4 + 2 * (size_t)n_slots, sizeof *w->dwords);
    if (!w->dfwd || !w->dbwd || !w->dkeys || !w->dwords) return tt_fail(st, TT_ENOMEM, "out of memory (webgpu dropout)");
    TT_CHECK(tt_gops_drop_init(&w->ops, n_slots, st));
    w->fwd = w->dfwd, w->bwd = w->dbwd, w->n_fwd = 0, w->n_bwd = 0;
    int rc = plan_sched(be, 1, st);
    w->n_dfwd = w->n_fwd, w->n_dbwd = w->n_bwd;
    w->fwd = keep_f, w->bwd = keep_b, w->n_fwd = keep_nf, w->n_bwd = keep_nb;
    if (rc == TT_OK) rc = tt_gpu_check(w->g, st);
    if (rc) { /* not planned: the next step with dropout tries again (and fails the same way) */
        free(w->dfwd);
        free(w->dbwd);
        w->dfwd = w->dbwd = NULL;
        w->n_dfwd = w->n_dbwd = 0;
    }
    return rc;
}

/* the keys of micro-batch `micro` of a step with dropout, uploaded */
static int upload_drop_keys(tt_backend *be, const tt_optim_args *opt, int n_micro, int micro, tt_status *st) {
    wgpu_impl *w = IMPL(be);
    for (int l = 0; l <= w->L; l++)
        for (int site = 0; site < 4; site++)
            w->dkeys[dslot(l, site)] = tt_dropout_key_at(opt->seed, opt->step, n_micro, micro, w->L, l, site);
    return tt_gops_set_drop(&w->ops, opt->dropout, w->dkeys, (uint32_t)(w->L + 1) * 4, w->dwords, st);
}

static int plan(tt_backend *be, tt_status *st) {
    wgpu_impl *w = IMPL(be);
    tt_gops *o = &w->ops;
    /* the dropout schedule adds 1 + 2L sites each way; LoRA its adapter sites */
    w->cap_fwd = 16 + 22 * w->L + 1;
    w->cap_bwd = 16 + 62 * w->L + 1;
    if (be->cfg.lora_rank > 0) {
        w->cap_fwd += w->L * TT_LORA_N_TARGETS * LORA_FWD_SITES;
        w->cap_bwd += w->L * TT_LORA_N_TARGETS * LORA_BWD_SITES;
    }
    w->fwd = calloc((size_t)w->cap_fwd, sizeof *w->fwd);
    w->bwd = calloc((size_t)w->cap_bwd, sizeof *w->bwd);
    w->opt = calloc((size_t)(2 * w->n_ch), sizeof *w->opt);
    if (!w->fwd || !w->bwd || !w->opt) return tt_fail(st, TT_ENOMEM, "out of memory (webgpu schedule)");
    TT_CHECK(plan_sched(be, 0, st));
    /* ---- optimizer ---- */
    tt_gop_pchunk *pc = calloc((size_t)w->n_ch, sizeof *pc);
    if (!pc) return tt_fail(st, TT_ENOMEM, "out of memory (webgpu schedule)");
    int n_pc = 0; /* the chunks' trainable ranges (every chunk whole without LoRA) */
    for (int i = 0; i < w->n_ch; i++) {
        const wchunk *c = &w->ch[i];
        if (!c->tn) continue;
        tt_gop_pchunk x = {c->p,   c->g, c->m, c->v, c->mask, c->pad + (uint32_t)(c->t0 - c->g0), (uint32_t)c->tn,
                           c->part0, c->n_part};
        pc[n_pc++] = x;
    }
    int rc = tt_gop_adamw_chunks(o, w->opt, pc, n_pc, w->parts, w->n_part, w->part_opt, w->stats, st);
    free(pc);
    TT_CHECK(rc);
    w->n_opt = 2 * n_pc;
    return TT_OK;
}

static int alloc_buffers(tt_backend *be, tt_status *st) {
    wgpu_impl *w = IMPL(be);
    const size_t B = (size_t)w->B, T = (size_t)w->T, C = (size_t)w->C, BT = B * T, V = (size_t)w->V;
    const size_t NH = (size_t)w->NH;
    TT_CHECK(plan_chunks(be, st));
    if (!w->dry) {
        free(w->pset);
        free(w->gset);
        w->pset = calloc((size_t)w->n_ch, sizeof *w->pset);
        w->gset = calloc((size_t)w->n_ch, sizeof *w->gset);
        if (!w->pset || !w->gset) return tt_fail(st, TT_ENOMEM, "out of memory (webgpu chunks)");
    }
    for (int i = 0; i < w->n_ch; i++) {
        wchunk *c = &w->ch[i];
        const size_t e = c->pad + c->n;
        TT_CHECK(mkbuf(w, e, "params", &c->p, st));
        TT_CHECK(mkbuf(w, e, "grads", &c->g, st));
        TT_CHECK(mkbuf(w, e, "adam-m", &c->m, st));
        TT_CHECK(mkbuf(w, e, "adam-v", &c->v, st));
        TT_CHECK(mkbuf(w, (c->n + 31) / 32, "decay-mask", &c->mask, st));
        if (!w->dry) w->pset[i] = c->p, w->gset[i] = c->g;
    }
    TT_CHECK(mkbuf(w, 2 * (size_t)w->n_part, "norm-parts", &w->parts, st));
    w->bucket_off = B * (T + 1);
    w->pos_off = w->bucket_off + V + 1;
    w->tok_words = w->pos_off + BT;
    TT_CHECK(mkbuf(w, w->tok_words, "tokens", &w->tok, st));
    TT_CHECK(mkbuf(w, 4, "stats", &w->stats, st));
    size_t pcs = tt_gop_colsum_part_elems((int)BT, (int)(4 * C));
    size_t pln = tt_gop_colsum_part_elems((int)BT, (int)(2 * C));
    TT_CHECK(mkbuf(w, pcs > pln ? pcs : pln, "colsum-scratch", &w->part_cs, st));
    TT_CHECK(mkbuf(w, w->n_part, "norm-scratch", &w->part_opt, st));
    for (int l = 0; l <= w->L; l++) TT_CHECK(mkbuf(w, BT * C, "residual", &w->res[l], st));
    for (int l = 0; l < w->L; l++) {
        wl_acts *a = &w->la[l];
        TT_CHECK(mkbuf(w, BT * C, "ln1", &a->ln1, st));
        TT_CHECK(mkbuf(w, 2 * BT, "ln1-stats", &a->st1, st));
        TT_CHECK(mkbuf(w, BT * C, "q", &a->q, st));
        TT_CHECK(mkbuf(w, BT * C, "k", &a->k, st));
        TT_CHECK(mkbuf(w, BT * C, "v", &a->v, st));
        TT_CHECK(mkbuf(w, BT * C, "attn-y", &a->y, st));
        TT_CHECK(mkbuf(w, 2 * B * NH * T, "attn-stats", &a->att, st));
        TT_CHECK(mkbuf(w, BT * C, "residual2", &a->res2, st));
        TT_CHECK(mkbuf(w, BT * C, "ln2", &a->ln2, st));
        TT_CHECK(mkbuf(w, 2 * BT, "ln2-stats", &a->st2, st));
        TT_CHECK(mkbuf(w, BT * 4 * C, "fc", &a->h, st));
        TT_CHECK(mkbuf(w, BT * 4 * C, "gelu", &a->g, st));
    }
    TT_CHECK(mkbuf(w, BT * C, "lnf", &w->lnf, st));
    TT_CHECK(mkbuf(w, 2 * BT, "lnf-stats", &w->stf, st));
    TT_CHECK(mkbuf(w, BT * V, "logits", &w->logits, st));
    TT_CHECK(mkbuf(w, BT, "losses", &w->losses, st));
    TT_CHECK(mkbuf(w, BT * C, "dres", &w->dres, st));
    TT_CHECK(mkbuf(w, BT * C, "dtmp", &w->dtmp, st));
    TT_CHECK(mkbuf(w, BT * C, "dq", &w->dq, st));
    TT_CHECK(mkbuf(w, BT * C, "dk", &w->dk, st));
    TT_CHECK(mkbuf(w, BT * C, "dv", &w->dv, st));
    TT_CHECK(mkbuf(w, BT * 4 * C, "dfc", &w->dg, st));
    if (be->cfg.lora_rank > 0) { /* x A of every adapter pair (slots of 4-aligned offsets), its gradient, t^T dout */
        const size_t Rk = (size_t)be->cfg.lora_rank, pairs = (size_t)(be->layout.n_tensors - be->layout.n_base) / 2;
        w->lora_slot = (BT * Rk + 3) / 4 * 4;
        TT_CHECK(mkbuf(w, pairs * w->lora_slot, "lora-t", &w->lora_t, st));
        TT_CHECK(mkbuf(w, BT * Rk, "lora-dt", &w->lora_dt, st));
        TT_CHECK(mkbuf(w, Rk * 4 * C, "lora-prod", &w->lora_prod, st));
    }
    if (w->dry) return TT_OK;
    for (int i = 0; i < 2; i++) TT_CHECK(tt_gpu_buffer(w->g, 16, TT_GPU_READBACK, "stats-readback", &w->staging[i], st));
    TT_CHECK(tt_gpu_buffer(w->g, 16, TT_GPU_READBACK, "eval-readback", &w->stage_eval, st));
    /* per chunk: the decay mask from the layout, the grad-norm part table
     * (each unit cut into parts of tt_gop_norm_part_len(P) from its start;
     * chunk-relative buffer positions) */
    const size_t per = tt_gop_norm_part_len(trainable_count(&be->layout));
    uint32_t *mask = NULL, *desc = calloc((size_t)2 * w->n_part, sizeof *desc);
    int rc = desc ? TT_OK : tt_fail(st, TT_ENOMEM, "out of memory (norm parts)");
    for (int i = 0; rc == TT_OK && i < w->n_ch; i++) {
        const wchunk *c = &w->ch[i];
        size_t nw = (c->n + 31) / 32;
        free(mask);
        mask = calloc(nw, sizeof *mask);
        if (!mask) {
            rc = tt_fail(st, TT_ENOMEM, "out of memory (decay mask)");
            break;
        }
        uint32_t p = c->part0;
        for (int u = c->u0; u < c->u1; u++) {
            const tt_tensor_info *a = &be->layout.t[2 * u];
            if (!a->trainable) continue; /* frozen: no parts; mask bit i is trainable parameter t0 + i */
            const size_t un = a->numel + be->layout.t[2 * u + 1].numel, pos = c->pad + (a->offset - c->g0);
            for (size_t k = 0; k < un; k += per, p++) {
                desc[2 * (size_t)p] = (uint32_t)(pos + k);
                desc[2 * (size_t)p + 1] = (uint32_t)(pos + (k + per < un ? k + per : un));
            }
            for (int t = 2 * u; t < 2 * u + 2; t++) {
                const tt_tensor_info *ti = &be->layout.t[t];
                if (!ti->decay) continue;
                for (size_t j = ti->offset - c->t0; j < ti->offset - c->t0 + ti->numel; j++)
                    mask[j >> 5] |= 1u << (j & 31);
            }
        }
        if (p != c->part0 + c->n_part) rc = tt_fail(st, TT_EINVAL, "webgpu: norm part table mismatch");
        if (rc == TT_OK) rc = tt_gpu_write(w->g, c->mask, 0, mask, nw * 4, st);
    }
    if (rc == TT_OK) rc = tt_gpu_write(w->g, w->parts, 0, desc, (uint64_t)w->n_part * 8, st);
    free(mask);
    free(desc);
    return rc;
}

/* ---- per-step helpers ---------------------------------------------------- */
/* after a simulated device loss (TT_WEBGPU_FAULT_AT_STEP) every call fails,
 * as every call on a lost device does */
static int fault_check(wgpu_impl *w, tt_status *st) {
    if (w->faulted) return tt_fail(st, TT_EDEVICE, "webgpu device lost (simulated by TT_WEBGPU_FAULT_AT_STEP)");
    return TT_OK;
}

static int upload_tokens(wgpu_impl *w, const uint8_t *tokens, int Brows, int buckets, tt_status *st) {
    size_t row = (size_t)w->T + 1;
    size_t n = (size_t)Brows * row;
    for (size_t i = 0; i < n; i++) w->tokhost[i] = tokens[i];
    for (size_t i = n; i < (size_t)w->B * row; i++) w->tokhost[i] = 0;
    size_t words = (size_t)w->B * row;
    if (buckets) {
        tt_gop_embedding_buckets(w->tokhost, w->B, w->T, w->V, w->tokhost + w->bucket_off, w->tokhost + w->pos_off);
        words = w->tok_words;
    }
    return tt_gpu_write(w->g, w->tok, 0, w->tokhost, words * 4, st);
}

/* the phase split of the step whose timestamps went to readback slot i */
static int finish_timestamps(wgpu_impl *w, int i, tt_status *st) {
    if (!w->ts_pending[i]) return TT_OK;
    int n = w->ts_n[i];
    w->ts_pending[i] = 0;
    TT_CHECK(tt_gpu_read_finish(w->g, w->ts_stage[i], w->ts_host, st));
    int nm = (n - 1) / 3, ok = 1;
    double ph[3] = {0, 0, 0};
    for (int j = 0; j < nm; j++) {
        const uint64_t *t = &w->ts_host[3 * j];
        if (t[1] < t[0] || t[2] < t[1] || t[3] < t[2]) ok = 0; /* unordered: no honest value */
        ph[0] += (double)(t[1] - t[0]) * 1e-6;
        ph[1] += (double)(t[2] - t[1]) * 1e-6;
    }
    ph[2] = (double)(w->ts_host[n - 1] - w->ts_host[n - 2]) * 1e-6;
    if (ok) {
        memcpy(w->phase_ms, ph, sizeof ph);
        w->has_phase = 1;
    }
    return TT_OK;
}

static int finish_pending(wgpu_impl *w, int i, tt_status *st) {
    TT_CHECK(finish_timestamps(w, i, st));
    if (!w->pending[i]) return TT_OK;
    float s[4];
    w->pending[i] = 0;
    TT_CHECK(tt_gpu_read_finish(w->g, w->staging[i], s, st));
    w->res_loss[i] = s[0];
    w->res_norm[i] = s[1];
    w->res_ok[i] = 1;
    return TT_OK;
}

/* zero a chunk's gradients: the whole buffer, or with LoRA its trainable
 * range (the frozen ones are never written) */
static void clear_grads(wgpu_impl *w, const wchunk *c) {
    if (c->tn == c->n) tt_gpu_clear(w->g, c->g, 0, chunk_bytes(c));
    else if (c->tn) tt_gpu_clear(w->g, c->g, ((uint64_t)c->pad + (c->t0 - c->g0)) * 4, (uint64_t)c->tn * 4);
}

static int wgpu_step(tt_backend *be, const uint8_t *tokens, int n_micro, const tt_optim_args *opt, tt_status *st) {
    wgpu_impl *w = IMPL(be);
    if (!tokens || !opt) return tt_fail(st, TT_EINVAL, "step: tokens or optimizer arguments missing");
    if (n_micro < 1) return tt_fail(st, TT_EINVAL, "step: n_micro must be >= 1 (got %d)", n_micro);
    if (!(opt->bc1 > 0.0f) || !(opt->bc2 > 0.0f)) return tt_fail(st, TT_EINVAL, "step: bias corrections must be > 0");
    TT_CHECK(tt_dropout_check(&be->cfg, opt->dropout, st)); /* [0, 1), 32-bit mask indices */
    TT_CHECK(fault_check(w, st));
    const int drop = opt->dropout > 0.0f;
    if (drop && !w->dfwd) TT_CHECK(plan_drop(be, st));
    const tt_gsite *sf = drop ? w->dfwd : w->fwd, *sb = drop ? w->dbwd : w->bwd;
    const int nf = drop ? w->n_dfwd : w->n_fwd, nb = drop ? w->n_dbwd : w->n_bwd;
    int bad_dispatch = 0;
    if (w->fault_at > 0 && w->n_steps + 1 == w->fault_at && w->fault_validation) {
        w->fault_at = 0;
        bad_dispatch = 1; /* fires once, in the first command buffer of this step */
    }
    if (w->fault_at > 0 && w->n_steps + 1 == w->fault_at) { /* fires once, before anything of the step is submitted */
        w->fault_at = 0;
        w->faulted = w->fault_lost;
        return tt_fail(st, TT_EDEVICE, "webgpu %s (simulated by TT_WEBGPU_FAULT_AT_STEP=%lld)",
                       w->fault_lost ? "device lost" : "device error", (long long)(w->n_steps + 1));
    }
    const double BT = (double)w->B * w->T;
    int cur = w->cur;
    TT_CHECK(finish_pending(w, cur, st)); /* the step before the previous one: long done */
    w->res_ok[cur] = 0;
    tt_gstep sp;
    memset(&sp, 0, sizeof sp);
    sp.lr = opt->lr;
    sp.b1 = opt->beta1;
    sp.b2 = opt->beta2;
    sp.eps = opt->eps;
    sp.wd = opt->weight_decay;
    sp.clip = opt->clip;
    sp.bc1 = opt->bc1;
    sp.bc2 = opt->bc2;
    sp.grad_scale = (float)(1.0 / (BT * n_micro));
    sp.loss_scale = (float)(1.0 / (BT * n_micro));
    sp.valid_rows = (uint32_t)BT;
    TT_CHECK(tt_gops_set_step(&w->ops, &sp, st));
    size_t mb = (size_t)w->B * (w->T + 1);
    const int ts = w->ts && 3 * n_micro + 1 <= WGPU_TS_SLOTS;
    for (int i = 0; i < n_micro; i++) {
        TT_CHECK(upload_tokens(w, tokens + (size_t)i * mb, w->B, 1, st));
        if (drop) TT_CHECK(upload_drop_keys(be, opt, n_micro, i, st));
        TT_CHECK(tt_gpu_begin(w->g, st));
        if (i == 0) {
            for (int c = 0; c < w->n_ch; c++) clear_grads(w, &w->ch[c]);
            tt_gpu_clear(w->g, w->stats, 0, 16);
        }
        if (ts) tt_gpu_timestamp(w->g, 3 * i);
        tt_gops_run(w->g, sf, nf);
        if (bad_dispatch && i == 0 && nf > 0) /* test hook: over maxComputeWorkgroupsPerDimension */
            tt_gpu_dispatch(w->g, sf[0].k, sf[0].grp, tt_gpu_get_info(w->g)->max_wg_per_dim + 1, 1, 1);
        if (ts) tt_gpu_timestamp(w->g, 3 * i + 1);
        tt_gops_run(w->g, sb, nb);
        if (ts) tt_gpu_timestamp(w->g, 3 * i + 2);
        if (i == n_micro - 1) {
            tt_gops_run(w->g, w->opt, w->n_opt);
            if (ts) {
                tt_gpu_timestamp(w->g, 3 * n_micro);
                tt_gpu_timestamps_resolve(w->g, 3 * n_micro + 1, w->ts_stage[cur]);
            }
            tt_gpu_copy(w->g, w->stats, 0, w->staging[cur], 0, 16);
        }
        TT_CHECK(tt_gpu_submit(w->g, st));
    }
    if (ts) {
        TT_CHECK(tt_gpu_read_start(w->g, w->ts_stage[cur], 0, (uint64_t)(3 * n_micro + 1) * 8, st));
        w->ts_n[cur] = 3 * n_micro + 1;
        w->ts_pending[cur] = 1;
    }
    TT_CHECK(tt_gpu_read_start(w->g, w->staging[cur], 0, 16, st));
    w->pending[cur] = 1;
    w->last = cur;
    w->cur = cur ^ 1;
    w->n_steps++;
    return TT_OK;
}

static int wgpu_step_result(tt_backend *be, float *loss, float *grad_norm, tt_status *st) {
    wgpu_impl *w = IMPL(be);
    TT_CHECK(fault_check(w, st));
    if (w->n_steps < 1) return tt_fail(st, TT_EINVAL, "webgpu: step_result before any step");
    TT_CHECK(finish_pending(w, w->last, st));
    if (!w->res_ok[w->last]) return tt_fail(st, TT_EINVAL, "webgpu: no result for the last step");
    if (loss) *loss = w->res_loss[w->last];
    if (grad_norm) *grad_norm = w->res_norm[w->last];
    return TT_OK;
}

/* the step before the most recent one (its readback slot is the other one;
 * step() keeps it until the next step() reuses the slot) */
static int wgpu_step_result_prev(tt_backend *be, float *loss, float *grad_norm, tt_status *st) {
    wgpu_impl *w = IMPL(be);
    int i = w->last ^ 1;
    TT_CHECK(fault_check(w, st));
    if (w->n_steps < 2) return tt_fail(st, TT_EINVAL, "webgpu: step_result_prev needs two steps");
    TT_CHECK(finish_pending(w, i, st));
    if (!w->res_ok[i]) return tt_fail(st, TT_EINVAL, "webgpu: no result for the previous step");
    if (loss) *loss = w->res_loss[i];
    if (grad_norm) *grad_norm = w->res_norm[i];
    return TT_OK;
}

static int run_forward_only(tt_backend *be, const uint8_t *tokens, int Brows, int with_backward, float *loss,
                            tt_status *st) {
    wgpu_impl *w = IMPL(be);
    const double bt = (double)Brows * w->T;
    TT_CHECK(fault_check(w, st));
    tt_gstep sp;
    memset(&sp, 0, sizeof sp);
    sp.grad_scale = with_backward ? (float)(1.0 / bt) : 0.0f;
    sp.loss_scale = (float)(1.0 / bt);
    sp.valid_rows = (uint32_t)bt;
    TT_CHECK(tt_gops_set_step(&w->ops, &sp, st));
    TT_CHECK(upload_tokens(w, tokens, Brows, with_backward, st));
    TT_CHECK(tt_gpu_begin(w->g, st));
    for (int c = 0; with_backward && c < w->n_ch; c++) tt_gpu_clear(w->g, w->ch[c].g, 0, chunk_bytes(&w->ch[c]));
    tt_gpu_clear(w->g, w->stats, 0, 16);
    tt_gops_run(w->g, w->fwd, w->n_fwd);
    if (with_backward) tt_gops_run(w->g, w->bwd, w->n_bwd);
    tt_gpu_copy(w->g, w->stats, 0, w->stage_eval, 0, 16);
    TT_CHECK(tt_gpu_submit(w->g, st));
    float s[4];
    TT_CHECK(tt_gpu_read_start(w->g, w->stage_eval, 0, 16, st));
    TT_CHECK(tt_gpu_read_finish(w->g, w->stage_eval, s, st));
    *loss = s[0];
    return TT_OK;
}

static int wgpu_eval(tt_backend *be, const uint8_t *tokens, int B, float *loss, tt_status *st) {
    wgpu_impl *w = IMPL(be);
    if (!tokens || !loss) return tt_fail(st, TT_EINVAL, "eval: tokens or loss missing");
    if (B < 1 || B > w->B) return tt_fail(st, TT_EINVAL, "eval batch %d out of range 1..%d", B, w->B);
    return run_forward_only(be, tokens, B, 0, loss, st);
}

static int wgpu_loss_and_grad(tt_backend *be, const uint8_t *tokens, float *loss, float *grads, tt_status *st) {
    wgpu_impl *w = IMPL(be);
    if (!tokens || !loss || !grads) return tt_fail(st, TT_EINVAL, "loss_and_grad: missing argument");
    TT_CHECK(fault_check(w, st));
    TT_CHECK(run_forward_only(be, tokens, w->B, 1, loss, st));
    for (int i = 0; i < w->n_ch; i++) {
        const wchunk *c = &w->ch[i];
        TT_CHECK(tt_gpu_read_sync(w->g, c->g, (uint64_t)c->pad * 4, (uint64_t)c->n * 4, grads + c->g0, st));
    }
    return TT_OK;
}

static int wgpu_set_state(tt_backend *be, const float *params, const float *m, const float *v, tt_status *st) {
    wgpu_impl *w = IMPL(be);
    TT_CHECK(fault_check(w, st));
    for (int i = 0; i < w->n_ch; i++) {
        const wchunk *c = &w->ch[i];
        const uint64_t off = (uint64_t)c->pad * 4, bytes = (uint64_t)c->n * 4;
        TT_CHECK(tt_gpu_write(w->g, c->p, off, params + c->g0, bytes, st));
        if (m) TT_CHECK(tt_gpu_write(w->g, c->m, off, m + c->g0, bytes, st));
        if (v) TT_CHECK(tt_gpu_write(w->g, c->v, off, v + c->g0, bytes, st));
    }
    if (!m || !v) {
        TT_CHECK(tt_gpu_begin(w->g, st));
        for (int i = 0; i < w->n_ch; i++) {
            if (!m) tt_gpu_clear(w->g, w->ch[i].m, 0, chunk_bytes(&w->ch[i]));
            if (!v) tt_gpu_clear(w->g, w->ch[i].v, 0, chunk_bytes(&w->ch[i]));
        }
        TT_CHECK(tt_gpu_submit(w->g, st));
    }
    return TT_OK;
}

static int wgpu_get_state(tt_backend *be, float *params, float *m, float *v, tt_status *st) {
    wgpu_impl *w = IMPL(be);
    TT_CHECK(fault_check(w, st));
    for (int i = 0; i < w->n_ch; i++) {
        const wchunk *c = &w->ch[i];
        const uint64_t off = (uint64_t)c->pad * 4, bytes = (uint64_t)c->n * 4;
        if (params) TT_CHECK(tt_gpu_read_sync(w->g, c->p, off, bytes, params + c->g0, st));
        if (m) TT_CHECK(tt_gpu_read_sync(w->g, c->m, off, bytes, m + c->g0, st));
        if (v) TT_CHECK(tt_gpu_read_sync(w->g, c->v, off, bytes, v + c->g0, st));
    }
    return TT_OK;
}

/* ---- profiling ------------------------------------------------------------ */
static int time_sites(wgpu_impl *w, const tt_gsite *s, int reps, double *sec, tt_status *st) {
    float tmp[4];
    double t0 = tt_now();
    TT_CHECK(tt_gpu_begin(w->g, st));
    for (int r = 0; s && r < reps; r++) tt_gops_run(w->g, s, 1);
    tt_gpu_copy(w->g, w->stats, 0, w->stage_eval, 0, 16);
    TT_CHECK(tt_gpu_submit(w->g, st));
    TT_CHECK(tt_gpu_read_start(w->g, w->stage_eval, 0, 16, st));
    TT_CHECK(tt_gpu_read_finish(w->g, w->stage_eval, tmp, st));
    *sec = tt_now() - t0;
    return TT_OK;
}

int tt_webgpu_profile(tt_backend *be, int reps, int detail, tt_webgpu_prof *out, int max, int *n, tt_status *st) {
    *n = 0;
    if (!be || be->vt != &wgpu_vt) return tt_fail(st, TT_EINVAL, "profile: not a webgpu backend");
    wgpu_impl *w = IMPL(be);
    if (reps < 1) reps = 1;
    TT_CHECK(finish_pending(w, 0, st));
    TT_CHECK(finish_pending(w, 1, st));
    double empty = 1e30, t;
    for (int i = 0; i < 5; i++) {
        TT_CHECK(time_sites(w, NULL, 0, &t, st));
        if (t < empty) empty = t;
    }
    const tt_gsite *lists[3] = {w->fwd, w->bwd, w->opt};
    const int counts[3] = {w->n_fwd, w->n_bwd, w->n_opt};
    for (int l = 0; l < 3; l++)
        for (int i = 0; i < counts[l]; i++) {
            const tt_gsite *s = &lists[l][i];
            if (!s->x || !s->name) continue;
            double best = 1e30;
            for (int k = 0; k < 2; k++) { /* the first run may include lazy compilation */
                TT_CHECK(time_sites(w, s, reps, &t, st));
                if (t < best) best = t;
            }
            double ms = (best - empty) / reps * 1e3;
            if (ms < 0) ms = 0;
            int j = 0;
            const char *tag = detail ? s->tag : "";
            while (j < *n && (strcmp(out[j].kernel, s->name) != 0 || strcmp(out[j].tag, tag) != 0)) j++;
            if (j == *n) {
                if (*n == max) continue;
                memset(&out[j], 0, sizeof out[j]);
                out[j].kernel = s->name;
                snprintf(out[j].tag, sizeof out[j].tag, "%s", tag);
                (*n)++;
            }
            out[j].sites++;
            out[j].ms += ms;
            out[j].gflop += s->flops * 1e-9;
        }
    return TT_OK;
}

const void *tt_webgpu_info(const tt_backend *be) {
    if (!be || be->vt != &wgpu_vt) return NULL;
    return tt_gpu_get_info(((const wgpu_impl *)be->impl)->g);
}

/* How many chunks the parameter storage of a webgpu backend is split into (1:
 * unsplit; 0: not a webgpu backend); starts (may be NULL) gets the layout
 * index of the first parameter of chunks 0..min(count, max)-1. For tests
 * (test_webgpu_split.c and test_webgpu_lora.c declare it; not in a header yet). */
int tt_webgpu_param_chunks(const tt_backend *be, size_t *starts, int max) {
    if (!be || be->vt != &wgpu_vt) return 0;
    const wgpu_impl *w = (const wgpu_impl *)be->impl;
    for (int i = 0; starts && i < w->n_ch && i < max; i++) starts[i] = w->ch[i].g0;
    return w->n_ch;
}

/* test hook TT_WEBGPU_MAX_BINDING_MIB=N (N may be a fraction): plan as if the adapter bound at most
 * N MiB per storage buffer, to exercise the preflight refusal cheaply */
static uint64_t binding_cap(void) {
    const char *e = tt_hook_get(TT_HOOK_MAX_BINDING_MIB);
    double mib = e ? atof(e) : 0.0;
    return mib > 0 ? (uint64_t)(mib * 1048576.0) : 0;
}

static int wgpu_phase_times(tt_backend *be, double ms[3], tt_status *st) {
    wgpu_impl *w = IMPL(be);
    if (!w->ts) return tt_fail(st, TT_EUNSUP, "%s", w->ts_why ? w->ts_why : "webgpu: no GPU timestamps");
    if (!w->has_phase) return tt_fail(st, TT_EINVAL, "webgpu: no timed step has been read back yet");
    memcpy(ms, w->phase_ms, sizeof w->phase_ms);
    return TT_OK;
}

static int wgpu_fits(tt_backend *gpu, const tt_model_config *cfg, double *bytes, tt_status *st);

static int wgpu_plan_bytes(tt_backend *be, const tt_model_config *cfg, uint64_t *bytes, tt_status *st) {
    double b = 0;
    int rc = wgpu_fits(be, cfg, &b, st);
    *bytes = rc == TT_OK ? (uint64_t)b : 0;
    return rc;
}

static void *wgpu_get_proc(tt_backend *be, const char *name) {
    (void)be;
    if (strcmp(name, "webgpu.profile") == 0) return (void *)tt_webgpu_profile;
    return NULL;
}

/* backend.h inspect: the recorded forward on one sequence (row 0, padded
 * with zeros to ctx; the other rows of the batch zeros), then the first T
 * rows of the residual streams and of each layer's q and k read back */
static int wgpu_inspect(tt_backend *be, const uint8_t *tokens, int T, float *resid, float *q, float *k, tt_status *st) {
    wgpu_impl *w = IMPL(be);
    if (!tokens || !resid || !q || !k) return tt_fail(st, TT_EINVAL, "inspect: missing argument");
    if (T < 1 || T > w->T) return tt_fail(st, TT_EINVAL, "inspect: %d bytes outside 1..%d", T, w->T);
    uint8_t *row = calloc((size_t)w->T + 1, 1);
    if (!row) return tt_fail(st, TT_ENOMEM, "out of memory (inspect)");
    memcpy(row, tokens, (size_t)T);
    float loss;
    int rc = run_forward_only(be, row, 1, 0, &loss, st);
    free(row);
    TT_CHECK(rc);
    const uint64_t bytes = (uint64_t)T * w->C * 4, n = (uint64_t)T * w->C;
    for (int l = 0; l <= w->L; l++) TT_CHECK(tt_gpu_read_sync(w->g, w->res[l], 0, bytes, resid + l * n, st));
    for (int l = 0; l < w->L; l++) {
        TT_CHECK(tt_gpu_read_sync(w->g, w->la[l].q, 0, bytes, q + l * n, st));
        TT_CHECK(tt_gpu_read_sync(w->g, w->la[l].k, 0, bytes, k + l * n, st));
    }
    return TT_OK;
}

static const tt_backend_vtable wgpu_vt = {
    wgpu_destroy,     wgpu_set_state, wgpu_get_state,     wgpu_step,
    wgpu_step_result, wgpu_eval,      wgpu_loss_and_grad, wgpu_step_result_prev,
    wgpu_phase_times, wgpu_plan_bytes,    wgpu_get_proc,  wgpu_inspect,
};

static int wgpu_fits(tt_backend *gpu, const tt_model_config *cfg, double *bytes, tt_status *st) {
    if (bytes) *bytes = 0;
    if (!gpu || gpu->vt != &wgpu_vt) return tt_fail(st, TT_EINVAL, "fits: not a webgpu backend");
    TT_CHECK(tt_config_validate(cfg, st));
    tt_backend be;
    wgpu_impl w;
    memset(&be, 0, sizeof be);
    memset(&w, 0, sizeof w);
    be.vt = &wgpu_vt;
    be.cfg = *cfg;
    be.impl = &w;
    w.g = IMPL(gpu)->g;
    w.B = cfg->batch, w.T = cfg->ctx, w.C = cfg->d_model, w.NH = cfg->n_head, w.L = cfg->n_layer, w.V = cfg->vocab;
    w.P = (size_t)tt_config_param_count(cfg);
    w.bind_cap = binding_cap();
    w.dry = 1;
    TT_CHECK(tt_layout_build(cfg, &be.layout, st));
    w.res = calloc((size_t)w.L + 1, sizeof *w.res);
    w.la = calloc((size_t)w.L, sizeof *w.la);
    int rc = (!w.res || !w.la) ? tt_fail(st, TT_ENOMEM, "out of memory (webgpu preflight)") : alloc_buffers(&be, st);
    if (rc == TT_OK && (uint64_t)w.P > 0xFFFFFFFFull)
        rc = tt_fail(st, TT_EUNSUP, "webgpu: %zu parameters exceed 32-bit indexing", w.P);
    if (bytes) *bytes = w.plan_bytes;
    free(w.res);
    free(w.la);
    free(w.ch);
    tt_layout_free(&be.layout);
    return rc;
}

int tt_backend_webgpu_create(const tt_model_config *cfg, const tt_backend_opts *opts, tt_backend **out, tt_status *st) {
    *out = NULL;
    TT_CHECK(tt_config_validate(cfg, st));
    tt_backend *be = calloc(1, sizeof *be);
    wgpu_impl *w = calloc(1, sizeof *w);
    if (!be || !w) {
        free(be);
        free(w);
        return tt_fail(st, TT_ENOMEM, "out of memory (webgpu backend)");
    }
    be->vt = &wgpu_vt;
    be->cfg = *cfg;
    be->impl = w;
    int rc = tt_layout_build(cfg, &be->layout, st);
    if (rc) {
        free(w);
        free(be);
        return rc;
    }
    w->B = cfg->batch;
    w->T = cfg->ctx;
    w->C = cfg->d_model;
    w->NH = cfg->n_head;
    w->L = cfg->n_layer;
    w->V = cfg->vocab;
    w->P = be->layout.total;
    {
        const char *e = tt_hook_get(TT_HOOK_BIASFOLD);
        w->biasfold = e ? (atoi(e) != 0) : 2;
        w->bind_cap = binding_cap();
        e = tt_hook_get(TT_HOOK_FAULT_AT_STEP);
        w->fault_at = e ? atoll(e) : 0;
        e = tt_hook_get(TT_HOOK_FAULT_KIND);
        w->fault_validation = e && strcmp(e, "validation") == 0;
        w->fault_lost = !(e && (strcmp(e, "error") == 0 || w->fault_validation));
    }
    tt_gpu_options go;
    memset(&go, 0, sizeof go);
    {
        go.want_timestamps = opts && opts->timestamps;
    }
    rc = tt_gpu_open(&go, &w->g, st);
    if (rc == TT_OK) {
        const tt_gpu_info *in = tt_gpu_get_info(w->g);
        be->desc.kind = TT_BACKEND_WEBGPU;
        be->desc.name = "webgpu";
        be->desc.is_software = in->is_cpu;
        snprintf(be->desc.device, sizeof be->desc.device, "%.100s (%.15s)", in->name, in->backend);
        char sgs[48] = "no subgroups";
        if (in->has_subgroups) snprintf(sgs, sizeof sgs, "subgroups (size %u..%u)", in->subgroup_min, in->subgroup_max);
        snprintf(be->desc.detail, sizeof be->desc.detail,
                 "%s, %s, %s; storage binding up to %.0f MiB; bounds clamps and workgroup zero-fill %s", sgs,
                 in->has_f16 ? "shader-f16" : "no shader-f16",
                 in->has_subgroup_matrix ? "subgroup-matrix" : "no subgroup-matrix",
                 in->max_storage_binding / 1048576.0, in->robust ? "on" : "off (TT_WEBGPU_ROBUST=1 turns it on)");
        rc = tt_gops_init(&w->ops, w->g, st);
    }
    if (rc == TT_OK) {
        w->res = calloc((size_t)w->L + 1, sizeof *w->res);
        w->la = calloc((size_t)w->L, sizeof *w->la);
        w->tokhost = calloc((size_t)w->B * (w->T + 1) + (size_t)w->V + 1 + (size_t)w->B * w->T, sizeof *w->tokhost);
        if (!w->res || !w->la || !w->tokhost) rc = tt_fail(st, TT_ENOMEM, "out of memory (webgpu plan)");
    }
    if (rc == TT_OK) {
        w->dry = 1;
        rc = alloc_buffers(be, st);
        w->dry = 0;
    }
    if (rc == TT_OK) rc = alloc_buffers(be, st);
    if (rc == TT_OK) {
        be->desc.device_bytes = (uint64_t)w->plan_bytes + 3 * 16; /* + the three 16-byte readback buffers */
        be->desc.host_bytes = (uint64_t)((size_t)w->B * (w->T + 1) + (size_t)w->V + 1 + (size_t)w->B * w->T) * 4;
        w->ts_why = "webgpu: phase split needs GPU timestamps; created without timestamps (bench --phases asks for them; "
                    "they add pass boundaries to the step)";
    }
    if (rc == TT_OK && go.want_timestamps) {
        tt_status ts_st;
        tt_status_clear(&ts_st);
        if (!tt_gpu_get_info(w->g)->has_timestamps) {
            snprintf(w->ts_why_buf, sizeof w->ts_why_buf,
                     "webgpu: adapter %.100s lacks feature timestamp-query (asked for by --phases), so "
                     "no phase split",
                     tt_gpu_get_info(w->g)->name);
            w->ts_why = w->ts_why_buf;
        } else if (tt_gpu_timestamps_init(w->g, WGPU_TS_SLOTS, &ts_st) == TT_OK &&
                   tt_gpu_buffer(w->g, WGPU_TS_SLOTS * 8, TT_GPU_READBACK, "timestamp-readback", &w->ts_stage[0], &ts_st) ==
                       TT_OK &&
                   tt_gpu_buffer(w->g, WGPU_TS_SLOTS * 8, TT_GPU_READBACK, "timestamp-readback", &w->ts_stage[1], &ts_st) ==
                       TT_OK) {
            w->ts = 1;
            be->desc.device_bytes += 2 * WGPU_TS_SLOTS * 8;
        } else {
            snprintf(w->ts_why_buf, sizeof w->ts_why_buf, "webgpu: GPU timestamps failed (%.180s), so no phase split",
                     ts_st.msg);
            w->ts_why = w->ts_why_buf;
        }
    }
    if (rc == TT_OK) rc = plan(be, st);
    if (rc == TT_OK && opts && opts->dropout) rc = plan_drop(be, st);
    if (rc == TT_OK) /* + kernel-argument uniforms and the split-K scratch of gpu_ops, sized by plan() */
        be->desc.device_bytes += (uint64_t)w->ops.n_ubufs * w->ops.slot_bytes * w->ops.slots_per_buf +
                                 sizeof(tt_gstep) + (uint64_t)w->ops.split_elems * 4;
    if (rc == TT_OK) rc = tt_gpu_check(w->g, st);
    if (rc) {
        wgpu_destroy(be);
        return rc;
    }
    *out = be;
    return TT_OK;
}
