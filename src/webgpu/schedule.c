/* schedule.c — the WebGPU backend's recorded training step
 * (backend_webgpu.h): the kernel sites (gpu_ops.h) of one micro-batch's
 * forward and backward and of the optimizer, planned once at creation; a
 * step replays them (step.c).
 *
 * Bias gradients are folded into the weight-gradient matmuls (a ones row)
 * where that is cheaper than a separate column sum (dw_db). The q, k, v
 * projections and their weight gradients run as one batched matmul each
 * where the buffers allow it (qkv_forward, qkv_dw).
 * LoRA (config.h): the adapters live in params after the base; each
 * targeted projection gets the lora sites (lora.c) after its matmul, x A of
 * every adapter pair kept in lora-t for the backward. A frozen tensor
 * (trainable = 0) gets no gradient site, and the grad norm and AdamW run
 * over each chunk's trainable range [t0, t0 + tn) alone; without LoRA that
 * range is the whole chunk and the schedule is the plain model's.
 * With dropout the adapters' output joins its projection's branch before
 * the branch's dropout and residual add.
 * The head and cross-entropy run in the forward where their logits fit one
 * buffer (WGPU_HEAD_LOGITS_BYTES); else in chunks of rows at the start of
 * the backward, each chunk's forward then its backward (the logits buffer
 * holds one chunk), and eval runs the chunks' forward alone (w->rec.evh).
 *
 * Dropout (tt_optim_args.dropout > 0): a second schedule (w->rec.dropout),
 * recorded by the same code as the plain one (plan_sched with drop = 1),
 * planned once, at creation when tt_backend_opts.dropout says steps will
 * drop (else at the first step that asks, which then allocates): the attention
 * kernels' dropout variants, dropout sites on the embedding output and on
 * the two residual branches (the projection written without its residual,
 * then out = residual + mask * branch in place; backward: the branch
 * gradient mask * dres into the dq scratch (w->plan.dq: the first third of
 * "dqkv" where dq, dk, dv share a buffer), free until attention backward
 * writes it). Keys: one per (layer, site) of the micro-batch (slot
 * layer * 4 + site, the embedding's n_layer * 4 + TT_DROP_EMBED), written
 * before each micro-batch's submit like its tokens. Steps with p = 0, eval
 * and loss_and_grad run the plain schedule. */
#include <stdlib.h>
#include <string.h>

#include "backend_webgpu.h"

static tt_gref R(tt_gpu_buf b) {
    tt_gref r = {b, 0};
    return r;
}

/* a parameter-sized tensor: set = w->plan.pset (params) or w->plan.gset (grads) */
static tt_gref PR(tt_backend *be, const tt_gpu_buf *set, tt_tensor_kind kind, int layer) {
    return tt_wgpu_param_at(IMPL(be), set, tt_layout_offset(&be->layout, &be->cfg, kind, layer));
}

/* tensor i of the layout in set */
static tt_gref PRI(tt_backend *be, const tt_gpu_buf *set, int i) {
    return tt_wgpu_param_at(IMPL(be), set, be->layout.t[i].offset);
}

/* 0: the tensor is frozen (the base of a LoRA model): no gradient sites */
static int trains(const tt_backend *be, tt_tensor_kind kind, int layer) {
    return be->layout.t[tt_layout_index(&be->cfg, kind, layer)].trainable;
}

/* a LayerNorm's weight-and-bias gradient: its place in the grads, or where
 * the LayerNorm is frozen (no gradient buffer: plan.c) a stand-in buffer
 * for the two gradient sites that the schedule then drops */
static tt_gref GLN(tt_backend *be, tt_tensor_kind kind, int layer) {
    if (!trains(be, kind, layer)) return R(IMPL(be)->plan.part_cs);
    return PR(be, IMPL(be)->plan.gset, kind, layer);
}

#define MMS TT_GOP_MM_SITES          /* one matmul's sites */
#define DWDB_SITES (TT_GOP_MM_SITES + 2) /* dw_db: a matmul and, unfolded, the bias's column sum */

/* the next n forward (backward) sites of schedule sc */
static tt_gsite *fnext(wsched *sc, int n) {
    tt_gsite *s = &sc->fwd[sc->n_fwd];
    sc->n_fwd += n;
    return s;
}
static tt_gsite *bnext(wsched *sc, int n) {
    tt_gsite *s = &sc->bwd[sc->n_bwd];
    sc->n_bwd += n;
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
static int dw_fold(wgpu_impl *w, int M, int N, int BT) {
    if (w->rec.biasfold != 2) return w->rec.biasfold == 1;
    int tile;
    uint32_t splits, kchunk;
    tt_gop_matmul_plan(&w->ops, 1, M + 1, N, BT, 1, &tile, &splits, &kchunk);
    return M % tile != 0 || 2.0 * tile * N * BT <= BIASFOLD_MAX_FLOP;
}

static int dw_db(tt_backend *be, tt_gsite *s, tt_gref X, tt_gref dY, tt_tensor_kind kw, tt_tensor_kind kb, int l,
                 int M, int N, int BT, tt_status *st) {
    wgpu_impl *w = IMPL(be);
    tt_gref gw = PR(be, w->plan.gset, kw, l), gb = PR(be, w->plan.gset, kb, l);
    memset(s, 0, DWDB_SITES * sizeof *s);
    const int fold = dw_fold(w, M, N, BT);
    if (fold && gb.buf == gw.buf && gb.off == gw.off + (uint32_t)M * (uint32_t)N)
        return tt_gop_matmul_ex(&w->ops, s, gw, X, dY, NULL, NULL, M + 1, N, BT, 1, 0, 1, 1, st);
    TT_CHECK(tt_gop_matmul(&w->ops, s, gw, X, dY, NULL, NULL, M, N, BT, 1, 0, 1, st));
    return tt_gop_matmul_backward_bias(&w->ops, s + MMS, gb, dY, R(w->plan.part_cs), BT, N, st);
}

/* ---- LoRA: the adapters of target tg in layer l, when the model has them
 * (config.h). x A of every adapter pair is kept from forward to backward in
 * its slot of lora_t (slot k for the k-th pair of the layout). ---- */
#define LORA_FWD_SITES TT_GOP_LORA_FWD_SITES(3) /* the most of a target (c_attn: 3 outputs) */
#define LORA_BWD_SITES TT_GOP_LORA_BWD_SITES(3)

static tt_gref lora_slot(tt_backend *be, int ia) {
    wgpu_impl *w = IMPL(be);
    tt_gref r = {w->plan.lora_t, (uint32_t)((size_t)(ia - be->layout.n_base) / 2 * w->plan.lora_slot)};
    return r;
}

/* out[j] (rows, out_width / n_out) += s (x A) B, x (rows, in) */
static int lora_fwd(tt_backend *be, wsched *sc, int l, int tg, const tt_gref *out, int n_out, tt_gref x,
                    tt_status *st) {
    wgpu_impl *w = IMPL(be);
    const int ia = tt_layout_lora_index(&be->cfg, l, tg, TT_LORA_A);
    if (ia < 0) return TT_OK;
    int64_t in, ow;
    tt_lora_dims(&be->cfg, tg, &in, &ow);
    if (sc->n_fwd + TT_GOP_LORA_FWD_SITES(n_out) > w->rec.cap_fwd) return tt_fail(st, TT_EINVAL, "webgpu: site overflow");
    return tt_gop_lora_forward(&w->ops, fnext(sc, TT_GOP_LORA_FWD_SITES(n_out)), out, n_out, lora_slot(be, ia), x,
                               PRI(be, w->plan.pset, ia), PRI(be, w->plan.pset, ia + 1), w->plan.B * w->plan.T, (int)in,
                               be->cfg.lora_rank, (int)ow / n_out, tt_lora_scale(&be->cfg), st);
}

/* dA, dB +=, dx (rows, in) += the adapters' share, from dout[j] (rows, out_width / n_out) */
static int lora_bwd(tt_backend *be, wsched *sc, int l, int tg, tt_gref dx, const tt_gref *dout, int n_out,
                    tt_gref x, tt_status *st) {
    wgpu_impl *w = IMPL(be);
    const int ia = tt_layout_lora_index(&be->cfg, l, tg, TT_LORA_A);
    if (ia < 0) return TT_OK;
    int64_t in, ow;
    tt_lora_dims(&be->cfg, tg, &in, &ow);
    const int n = TT_GOP_LORA_BWD_SITES(n_out);
    if (sc->n_bwd + n > w->rec.cap_bwd) return tt_fail(st, TT_EINVAL, "webgpu: site overflow");
    return tt_gop_lora_backward(&w->ops, bnext(sc, n), dx, PRI(be, w->plan.gset, ia), PRI(be, w->plan.gset, ia + 1),
                                R(w->plan.lora_dt), R(w->plan.lora_prod), dout, n_out, lora_slot(be, ia), x,
                                PRI(be, w->plan.pset, ia), PRI(be, w->plan.pset, ia + 1), w->plan.B * w->plan.T,
                                (int)in, be->cfg.lora_rank, (int)ow / n_out, tt_lora_scale(&be->cfg), st);
}

/* q, k, v (BT,C) = ln1 (BT,C) @ W + b for W, b = the q, k, v weights and
 * biases of layer l: one batched matmul (MMS sites) when q, k, v follow each
 * other in one buffer (plan.c) and the three weight-and-bias units are
 * equally spaced in one parameter buffer (config.h's layout: q.w q.b k.w
 * k.b v.w v.b; a chunk boundary between them splits that), else three
 * matmuls (3 MMS sites). Each output is computed as by its own matmul. */
static int qkv_forward(tt_backend *be, wsched *sc, int l, tt_status *st) {
    wgpu_impl *w = IMPL(be);
    wl_acts *a = &w->plan.la[l];
    const int BT = w->plan.B * w->plan.T, C = w->plan.C;
    const tt_tensor_kind wk[3] = {TT_QW, TT_KW, TT_VALW}, bk[3] = {TT_QB, TT_KB, TT_VALB};
    tt_gref W[3], bias[3];
    for (int j = 0; j < 3; j++) W[j] = PR(be, w->plan.pset, wk[j], l), bias[j] = PR(be, w->plan.pset, bk[j], l);
    const uint32_t bstride = W[1].off - W[0].off, nout = (uint32_t)BT * (uint32_t)C;
    int batch = !(w->ops.qkv_unbatched & 1) && a->k.buf == a->q.buf && a->v.buf == a->q.buf && a->k.off == a->q.off + nout &&
                a->v.off == a->k.off + nout && W[1].off > W[0].off && tt_gop_matmul_batch_fits(&w->ops, 3, BT, C, C);
    for (int j = 0; j < 3 && batch; j++)
        batch = W[j].buf == W[0].buf && bias[j].buf == W[0].buf && W[j].off == W[0].off + (uint32_t)j * bstride &&
                bias[j].off == W[j].off + (uint32_t)(C * C);
    if (batch) {
        if (sc->n_fwd + MMS > w->rec.cap_fwd) return tt_fail(st, TT_EINVAL, "webgpu: site overflow");
        return tt_gop_matmul_batch(&w->ops, fnext(sc, MMS), 3, bstride, a->q, R(a->ln1), W[0], &bias[0], NULL, BT, C, C,
                                   0, 0, 0, 0, st);
    }
    const tt_gref out[3] = {a->q, a->k, a->v};
    for (int j = 0; j < 3; j++) {
        if (sc->n_fwd + MMS > w->rec.cap_fwd) return tt_fail(st, TT_EINVAL, "webgpu: site overflow");
        TT_CHECK(tt_gop_matmul_group(&w->ops, fnext(sc, MMS), 3, out[j], R(a->ln1), W[j], &bias[j], NULL, BT, C, C, 0, 0,
                                     0, 0, st));
    }
    return TT_OK;
}

/* The q, k, v weight and bias gradients of layer l, dW_j (C,C) += ln1^T d_j
 * and db_j += 1^T d_j for d = dq, dk, dv (BT,C): one batched matmul
 * (tt_gop_matmul_batch_solo: each product keeps its lone plan's split-K
 * slices, so every bit is dw_db's) when dq, dk, dv follow each other in one
 * buffer (plan.c), all three train and their units are equally spaced in
 * one gradient buffer (config.h's layout: q.w q.b k.w k.b v.w v.b, product
 * j's [dW; db] at j*(C+1)*C; a chunk boundary between them splits that);
 * the bias gradients folded into it where dw_db folds them (a ones row:
 * each product's output is its unit, M = C+1), else three column sums
 * after it (the products' outputs (C+1)*C apart, skipping the biases).
 * Else dw_db three times. The test hook TT_WEBGPU_QKV_BATCH=0 or 1 forces
 * the three. */
static int qkv_dw(tt_backend *be, wsched *sc, int l, tt_status *st) {
    wgpu_impl *w = IMPL(be);
    wl_acts *a = &w->plan.la[l];
    const int BT = w->plan.B * w->plan.T, C = w->plan.C;
    const tt_tensor_kind wk[3] = {TT_QW, TT_KW, TT_VALW}, bk[3] = {TT_QB, TT_KB, TT_VALB};
    const tt_gref dx[3] = {w->plan.dq, w->plan.dk, w->plan.dv};
    tt_gref gw[3], gb[3];
    for (int j = 0; j < 3; j++) gw[j] = PR(be, w->plan.gset, wk[j], l), gb[j] = PR(be, w->plan.gset, bk[j], l);
    const int fold = dw_fold(w, C, C, BT), M = fold ? C + 1 : C;
    const uint32_t nout = (uint32_t)BT * (uint32_t)C, cstride = gw[1].off - gw[0].off;
    int batch = !(w->ops.qkv_unbatched & 2) && gw[1].off > gw[0].off && (uint64_t)cstride >= (uint64_t)M * (uint64_t)C &&
                dx[1].buf == dx[0].buf && dx[2].buf == dx[0].buf && dx[1].off == dx[0].off + nout &&
                dx[2].off == dx[1].off + nout && tt_gop_matmul_batch_solo_fits(&w->ops, 3, M, C, BT);
    for (int j = 0; j < 3 && batch; j++)
        batch = trains(be, wk[j], l) && gw[j].buf == gw[0].buf && gb[j].buf == gw[0].buf &&
                gw[j].off == gw[0].off + (uint32_t)j * cstride && gb[j].off == gw[j].off + (uint32_t)(C * C);
    if (!batch) {
        for (int j = 0; j < 3; j++) {
            if (!trains(be, wk[j], l)) continue;
            if (sc->n_bwd + DWDB_SITES > w->rec.cap_bwd) return tt_fail(st, TT_EINVAL, "webgpu: site overflow");
            TT_CHECK(dw_db(be, bnext(sc, DWDB_SITES), R(a->ln1), dx[j], wk[j], bk[j], l, C, C, BT, st));
        }
        return TT_OK;
    }
    if (sc->n_bwd + MMS + 6 > w->rec.cap_bwd) return tt_fail(st, TT_EINVAL, "webgpu: site overflow");
    TT_CHECK(tt_gop_matmul_batch_solo(&w->ops, bnext(sc, MMS), 3, nout, cstride, gw[0], R(a->ln1), dx[0], NULL, NULL, M,
                                      C, BT, 1, 0, 1, fold, st));
    for (int j = 0; j < 3 && !fold; j++)
        TT_CHECK(tt_gop_matmul_backward_bias(&w->ops, bnext(sc, 2), gb[j], dx[j], R(w->plan.part_cs), BT, C, st));
    return TT_OK;
}

/* dropout key slot of (layer, site) */
static uint32_t dslot(int layer, int site) { return (uint32_t)(layer * 4 + site); }

/* The forward and backward sites of one micro-batch into sc (its arrays
 * hold w->rec.cap_fwd, w->rec.cap_bwd sites); drop: the dropout schedule (see the
 * header), the same sites in the same order but for the dropout ones. */
static int plan_sched(tt_backend *be, wsched *sc, int drop, tt_status *st) {
    wgpu_impl *w = IMPL(be);
    tt_gops *o = &w->ops;
    const int B = w->plan.B, T = w->plan.T, C = w->plan.C, NH = w->plan.NH, L = w->plan.L, V = w->plan.V;
    const int BT = B * T;
    const int C4 = 4 * C;
    const size_t nBTC = (size_t)BT * C;
    const tt_gpu_buf *P = w->plan.pset, *G = w->plan.gset;
    tt_gref tokens = R(w->plan.tok);
    const float eps = tt_config_ln_eps(&be->cfg);
    const int act = be->cfg.act;

    /* ---- forward ---- */
#define FWD(call)                                                                                                      \
    do {                                                                                                               \
        if (sc->n_fwd + MMS > w->rec.cap_fwd) return tt_fail(st, TT_EINVAL, "webgpu: site overflow");                  \
        TT_CHECK(call);                                                                                                \
    } while (0)
    FWD(tt_gop_embedding_forward(o, fnext(sc, 1), drop ? w->plan.dq : R(w->plan.res[0]), tokens, PR(be, P, TT_WTE, -1),
                                 PR(be, P, TT_WPE, -1), B, T, C, st));
    if (drop) FWD(tt_gop_dropout(o, fnext(sc, 1), R(w->plan.res[0]), w->plan.dq, nBTC, 0, dslot(L, TT_DROP_EMBED), st));
    for (int l = 0; l < L; l++) {
        wl_acts *a = &w->plan.la[l];
        FWD(tt_gop_layernorm_forward(o, fnext(sc, 1), R(a->ln1), R(a->st1), R(w->plan.res[l]), PR(be, P, TT_LN1W, l),
                                     PR(be, P, TT_LN1B, l), BT, C, eps, st));
        TT_CHECK(qkv_forward(be, sc, l, st));
        const tt_gref qkv[3] = {a->q, a->k, a->v};
        TT_CHECK(lora_fwd(be, sc, l, TT_LORA_C_ATTN, qkv, 3, R(a->ln1), st));
        if (drop)
            FWD(tt_gop_attention_forward_drop(o, fnext(sc, 1), R(a->y), R(a->att), a->q, a->k, a->v, B, T, C, NH,
                                              dslot(l, TT_DROP_ATTN), st));
        else FWD(tt_gop_attention_forward(o, fnext(sc, 1), R(a->y), R(a->att), a->q, a->k, a->v, B, T, C, NH, st));
        tt_gref ob = PR(be, P, TT_OB, l), res = R(w->plan.res[l]);
        FWD(tt_gop_matmul(o, fnext(sc, MMS), R(a->res2), R(a->y), PR(be, P, TT_OW, l), &ob, drop ? NULL : &res, BT, C, C, 0,
                          0, 0, st));
        TT_CHECK(lora_fwd(be, sc, l, TT_LORA_ATTN_C_PROJ, (tt_gref[1]){R(a->res2)}, 1, R(a->y), st));
        if (drop) FWD(tt_gop_dropout(o, fnext(sc, 1), R(a->res2), res, nBTC, 1, dslot(l, TT_DROP_ATTN_OUT), st));
        FWD(tt_gop_layernorm_forward(o, fnext(sc, 1), R(a->ln2), R(a->st2), R(a->res2), PR(be, P, TT_LN2W, l),
                                     PR(be, P, TT_LN2B, l), BT, C, eps, st));
        tt_gref fb = PR(be, P, TT_FCB, l);
        FWD(tt_gop_matmul(o, fnext(sc, MMS), R(a->h), R(a->ln2), PR(be, P, TT_FCW, l), &fb, NULL, BT, C4, C, 0, 0, 0,
                          st));
        TT_CHECK(lora_fwd(be, sc, l, TT_LORA_C_FC, (tt_gref[1]){R(a->h)}, 1, R(a->ln2), st));
        FWD(tt_gop_gelu_forward(o, fnext(sc, 1), R(a->g), R(a->h), (size_t)BT * C4, act, st));
        tt_gref pb = PR(be, P, TT_PROJB, l), res2 = R(a->res2);
        FWD(tt_gop_matmul(o, fnext(sc, MMS), R(w->plan.res[l + 1]), R(a->g), PR(be, P, TT_PROJW, l), &pb,
                          drop ? NULL : &res2, BT, C, C4, 0, 0, 0, st));
        TT_CHECK(lora_fwd(be, sc, l, TT_LORA_MLP_C_PROJ, (tt_gref[1]){R(w->plan.res[l + 1])}, 1, R(a->g), st));
        if (drop)
            FWD(tt_gop_dropout(o, fnext(sc, 1), R(w->plan.res[l + 1]), res2, nBTC, 1, dslot(l, TT_DROP_MLP_OUT), st));
    }
    FWD(tt_gop_layernorm_forward(o, fnext(sc, 1), R(w->plan.lnf), R(w->plan.stf), R(w->plan.res[L]),
                                 PR(be, P, TT_LNFW, -1), PR(be, P, TT_LNFB, -1), BT, C, eps, st));
    const int hr = w->plan.head_rows; /* 0: the whole head here; else in chunks (backend_webgpu.h) */
    if (!hr) {
        /* logits (BT,V) = lnf (BT,C) @ wte^T, wte stored (V,C) */
        FWD(tt_gop_matmul(o, fnext(sc, MMS), R(w->plan.logits), R(w->plan.lnf), PR(be, P, TT_WTE, -1), NULL, NULL, BT, V,
                          C, 0, 1, 0, st));
        FWD(tt_gop_crossentropy(o, fnext(sc, 1), R(w->plan.logits), R(w->plan.losses), tokens, BT, V, T, st));
        FWD(tt_gop_crossentropy_loss_reduce(o, fnext(sc, 1), R(w->plan.stats), R(w->plan.losses), st));
    } else if (!drop) { /* eval's head: the chunks' forward and the loss sum (after the plain forward) */
        const int n = tt_gop_head_crossentropy_sites(BT, hr, 0, 0);
        TT_CHECK(tt_gop_head_crossentropy(o, w->rec.evh, R(w->plan.logits), R(w->plan.losses), tokens, R(w->plan.lnf),
                                          PR(be, P, TT_WTE, -1), NULL, NULL, BT, C, V, w->plan.head_ldv, T, hr, st));
        TT_CHECK(tt_gop_crossentropy_loss_reduce(o, &w->rec.evh[n], R(w->plan.stats), R(w->plan.losses), st));
        w->rec.n_evh = n + 1;
    }

    /* ---- backward ---- */
#define BWD(n, call)                                                                                                   \
    do {                                                                                                               \
        if (sc->n_bwd + (n) > w->rec.cap_bwd) return tt_fail(st, TT_EINVAL, "webgpu: site overflow");                  \
        TT_CHECK(call);                                                                                                \
    } while (0)
    tt_gref part = R(w->plan.part_cs);
    if (!hr) {
        /* dlnf (BT,C) = dlogits (BT,V) @ wte (V,C); dwte += dlogits^T @ lnf */
        BWD(MMS, tt_gop_matmul(o, bnext(sc, MMS), R(w->plan.dtmp), R(w->plan.logits), PR(be, P, TT_WTE, -1), NULL, NULL,
                             BT, C, V, 0, 0, 0, st));
        if (trains(be, TT_WTE, -1))
            BWD(MMS, tt_gop_matmul(o, bnext(sc, MMS), PR(be, G, TT_WTE, -1), R(w->plan.logits), R(w->plan.lnf), NULL, NULL,
                                 V, C, BT, 1, 0, 1, st));
    } else { /* each chunk: logits, loss and dlogits, dlnf rows, dwte += (then the loss sum) */
        const int dw = trains(be, TT_WTE, -1), n = tt_gop_head_crossentropy_sites(BT, hr, 1, dw);
        const tt_gref dlnf = R(w->plan.dtmp), dwte = PR(be, G, TT_WTE, -1);
        BWD(n + 1, tt_gop_head_crossentropy(o, bnext(sc, n), R(w->plan.logits), R(w->plan.losses), tokens,
                                            R(w->plan.lnf), PR(be, P, TT_WTE, -1), &dlnf, dw ? &dwte : NULL, BT, C, V,
                                            w->plan.head_ldv, T, hr, st));
        BWD(1, tt_gop_crossentropy_loss_reduce(o, bnext(sc, 1), R(w->plan.stats), R(w->plan.losses), st));
    }
    BWD(3, tt_gop_layernorm_backward(o, bnext(sc, 3), R(w->plan.dres), GLN(be, TT_LNFW, -1), R(w->plan.dtmp),
                                     R(w->plan.res[L]), PR(be, P, TT_LNFW, -1), R(w->plan.stf), part, BT, C, 0, st));
    if (!trains(be, TT_LNFW, -1)) sc->n_bwd -= 2; /* frozen: the dinp site alone (its first) */
    for (int l = L - 1; l >= 0; l--) {
        wl_acts *a = &w->plan.la[l];
        /* mlp proj: res[l+1] = g @ projw + projb + res2 (dropout: the branch's gradient mask * dres in dq) */
        const tt_gref dbr = drop ? w->plan.dq : R(w->plan.dres);
        if (drop)
            BWD(1,
                tt_gop_dropout(o, bnext(sc, 1), w->plan.dq, R(w->plan.dres), nBTC, 0, dslot(l, TT_DROP_MLP_OUT), st));
        BWD(MMS, tt_gop_matmul(o, bnext(sc, MMS), R(w->plan.dg), dbr, PR(be, P, TT_PROJW, l), NULL, NULL, BT, C4, C, 0, 1,
                             0, st));
        if (trains(be, TT_PROJW, l)) BWD(DWDB_SITES, dw_db(be, bnext(sc, DWDB_SITES), R(a->g), dbr, TT_PROJW, TT_PROJB, l, C4, C, BT, st));
        TT_CHECK(lora_bwd(be, sc, l, TT_LORA_MLP_C_PROJ, R(w->plan.dg), (tt_gref[1]){dbr}, 1, R(a->g), st));
        BWD(1, tt_gop_gelu_backward(o, bnext(sc, 1), R(w->plan.dg), R(a->h), (size_t)BT * C4, act, st));
        /* fc: h = ln2 @ fcw + fcb */
        BWD(MMS, tt_gop_matmul(o, bnext(sc, MMS), R(w->plan.dtmp), R(w->plan.dg), PR(be, P, TT_FCW, l), NULL, NULL, BT, C,
                             C4, 0, 1, 0, st));
        if (trains(be, TT_FCW, l))
            BWD(DWDB_SITES, dw_db(be, bnext(sc, DWDB_SITES), R(a->ln2), R(w->plan.dg), TT_FCW, TT_FCB, l, C, C4, BT, st));
        TT_CHECK(lora_bwd(be, sc, l, TT_LORA_C_FC, R(w->plan.dtmp), (tt_gref[1]){R(w->plan.dg)}, 1, R(a->ln2), st));
        BWD(3, tt_gop_layernorm_backward(o, bnext(sc, 3), R(w->plan.dres), GLN(be, TT_LN2W, l), R(w->plan.dtmp),
                                         R(a->res2), PR(be, P, TT_LN2W, l), R(a->st2), part, BT, C, 1, st));
        if (!trains(be, TT_LN2W, l)) sc->n_bwd -= 2;
        /* attn out: res2 = y @ ow + ob + res[l] (dropout: as above; attention backward then overwrites dq) */
        if (drop)
            BWD(1,
                tt_gop_dropout(o, bnext(sc, 1), w->plan.dq, R(w->plan.dres), nBTC, 0, dslot(l, TT_DROP_ATTN_OUT), st));
        BWD(MMS, tt_gop_matmul(o, bnext(sc, MMS), R(w->plan.dtmp), dbr, PR(be, P, TT_OW, l), NULL, NULL, BT, C, C, 0, 1, 0,
                             st));
        if (trains(be, TT_OW, l)) BWD(DWDB_SITES, dw_db(be, bnext(sc, DWDB_SITES), R(a->y), dbr, TT_OW, TT_OB, l, C, C, BT, st));
        TT_CHECK(lora_bwd(be, sc, l, TT_LORA_ATTN_C_PROJ, R(w->plan.dtmp), (tt_gref[1]){dbr}, 1, R(a->y), st));
        if (drop)
            BWD(3, tt_gop_attention_backward_drop(o, bnext(sc, 3), w->plan.dq, w->plan.dk, w->plan.dv, R(a->att), a->q,
                                                  a->k, a->v, R(a->y), R(w->plan.dtmp), B, T, C, NH,
                                                  dslot(l, TT_DROP_ATTN), st));
        else
            BWD(3, tt_gop_attention_backward(o, bnext(sc, 3), w->plan.dq, w->plan.dk, w->plan.dv, R(a->att), a->q, a->k,
                                             a->v, R(a->y), R(w->plan.dtmp), B, T, C, NH, st));
        /* q, k, v projections of ln1 */
        const tt_tensor_kind wk[3] = {TT_QW, TT_KW, TT_VALW};
        const tt_gref dqkv[3] = {w->plan.dq, w->plan.dk, w->plan.dv};
        for (int j = 0; j < 3; j++)
            BWD(MMS, tt_gop_matmul(o, bnext(sc, MMS), R(w->plan.dtmp), dqkv[j], PR(be, P, wk[j], l), NULL, NULL, BT, C, C,
                                 0, 1, j > 0, st));
        TT_CHECK(qkv_dw(be, sc, l, st));
        TT_CHECK(lora_bwd(be, sc, l, TT_LORA_C_ATTN, R(w->plan.dtmp), dqkv, 3, R(a->ln1), st));
        BWD(3, tt_gop_layernorm_backward(o, bnext(sc, 3), R(w->plan.dres), GLN(be, TT_LN1W, l), R(w->plan.dtmp),
                                         R(w->plan.res[l]), PR(be, P, TT_LN1W, l), R(a->st1), part, BT, C, 1, st));
        if (!trains(be, TT_LN1W, l)) sc->n_bwd -= 2;
    }
    if (trains(be, TT_WTE, -1)) {
        if (drop)
            BWD(1, tt_gop_dropout(o, bnext(sc, 1), w->plan.dq, R(w->plan.dres), nBTC, 0, dslot(L, TT_DROP_EMBED), st));
        BWD(2, tt_gop_embedding_backward(o, bnext(sc, 2), PR(be, G, TT_WTE, -1), PR(be, G, TT_WPE, -1),
                                         drop ? w->plan.dq : R(w->plan.dres), w->plan.tok, (uint32_t)w->plan.bucket_off,
                                         (uint32_t)w->plan.pos_off, B, T, C, V, st));
    }
#undef FWD
#undef BWD
    return TT_OK;
}

/* The dropout schedule (once), its keys and their upload words. On failure
 * nothing stays planned: the next step with dropout tries again (and fails
 * the same way). */
int tt_wgpu_plan_dropout(tt_backend *be, tt_status *st) {
    wgpu_impl *w = IMPL(be);
    wsched *d = &w->rec.dropout;
    const uint32_t n_slots = (uint32_t)(w->plan.L + 1) * 4;
    memset(d, 0, sizeof *d);
    d->fwd = calloc((size_t)w->rec.cap_fwd, sizeof *d->fwd);
    d->bwd = calloc((size_t)w->rec.cap_bwd, sizeof *d->bwd);
    if (!w->rec.dkeys) w->rec.dkeys = calloc(n_slots, sizeof *w->rec.dkeys);
    if (!w->rec.dwords) w->rec.dwords = calloc(4 + 2 * (size_t)n_slots, sizeof *w->rec.dwords);
    int rc = (!d->fwd || !d->bwd || !w->rec.dkeys || !w->rec.dwords)
                 ? tt_fail(st, TT_ENOMEM, "out of memory (webgpu dropout)")
                 : TT_OK;
    if (rc == TT_OK) rc = tt_gops_drop_init(&w->ops, n_slots, st);
    if (rc == TT_OK) rc = plan_sched(be, d, 1, st);
    if (rc == TT_OK) rc = tt_gpu_check(w->g, st);
    if (rc) {
        free(d->fwd);
        free(d->bwd);
        memset(d, 0, sizeof *d);
    }
    return rc;
}

/* the keys of micro-batch `micro` of a step with dropout, uploaded */
int tt_wgpu_upload_drop_keys(tt_backend *be, const tt_optim_args *opt, int n_micro, int micro, tt_status *st) {
    wgpu_impl *w = IMPL(be);
    for (int l = 0; l <= w->plan.L; l++)
        for (int site = 0; site < 4; site++)
            w->rec.dkeys[dslot(l, site)] = tt_dropout_key_at(opt->seed, opt->step, n_micro, micro, w->plan.L, l, site);
    return tt_gops_set_drop(&w->ops, opt->dropout, w->rec.dkeys, (uint32_t)(w->plan.L + 1) * 4, w->rec.dwords, st);
}

/* The plain schedule (steps without dropout, eval, loss_and_grad) and the
 * optimizer's sites: grad norm, clip and AdamW over each chunk's trainable
 * range. The site arrays are sized for the dropout schedule too. */
int tt_wgpu_plan_schedule(tt_backend *be, tt_status *st) {
    wgpu_impl *w = IMPL(be);
    tt_gops *o = &w->ops;
    /* the dropout schedule adds 1 + 2L sites each way; LoRA its adapter sites */
    /* per layer: 10 other sites and 6 matmuls forward (q, k, v unbatched),
     * 38 and 12 backward; the head's matmuls within the 16 + 3 matmuls */
    w->rec.cap_fwd = 16 + 3 * MMS + (10 + 6 * MMS) * w->plan.L + 1;
    w->rec.cap_bwd = 16 + 3 * MMS + (38 + 12 * MMS) * w->plan.L + 1;
    if (be->cfg.lora_rank > 0) {
        w->rec.cap_fwd += w->plan.L * TT_LORA_N_TARGETS * LORA_FWD_SITES;
        w->rec.cap_bwd += w->plan.L * TT_LORA_N_TARGETS * LORA_BWD_SITES;
    }
    if (w->plan.head_rows) { /* the head's chunks (plan.c) */
        const int BT = w->plan.B * w->plan.T;
        w->rec.cap_bwd += tt_gop_head_crossentropy_sites(BT, w->plan.head_rows, 1, 1) + 1;
        w->rec.evh = calloc((size_t)tt_gop_head_crossentropy_sites(BT, w->plan.head_rows, 0, 0) + 1, sizeof *w->rec.evh);
        if (!w->rec.evh) return tt_fail(st, TT_ENOMEM, "out of memory (webgpu schedule)");
    }
    w->rec.plain.fwd = calloc((size_t)w->rec.cap_fwd, sizeof *w->rec.plain.fwd);
    w->rec.plain.bwd = calloc((size_t)w->rec.cap_bwd, sizeof *w->rec.plain.bwd);
    w->rec.opt = calloc((size_t)(2 * w->plan.n_ch + 1), sizeof *w->rec.opt); /* + the loss scaler's update */
    if (!w->rec.plain.fwd || !w->rec.plain.bwd || !w->rec.opt)
        return tt_fail(st, TT_ENOMEM, "out of memory (webgpu schedule)");
    TT_CHECK(plan_sched(be, &w->rec.plain, 0, st));
    /* ---- optimizer ---- */
    tt_gop_pchunk *pc = calloc((size_t)w->plan.n_ch, sizeof *pc);
    if (!pc) return tt_fail(st, TT_ENOMEM, "out of memory (webgpu schedule)");
    int n_pc = 0; /* the chunks' trainable ranges (every chunk whole without LoRA) */
    for (int i = 0; i < w->plan.n_ch; i++) {
        const wchunk *c = &w->plan.ch[i];
        if (!c->tn) continue;
        tt_gop_pchunk x = {c->p,   c->g, c->m, c->v, c->mask, c->pad + (uint32_t)(c->t0 - c->g0), (uint32_t)c->tn,
                           c->part0, c->n_part};
        pc[n_pc++] = x;
    }
    int rc = tt_gop_adamw_chunks(o, w->rec.opt, pc, n_pc, w->plan.parts, w->plan.n_part, w->plan.part_opt,
                                 w->plan.stats, st);
    free(pc);
    TT_CHECK(rc);
    w->rec.n_opt = 2 * n_pc + (o->amp_on ? 1 : 0);
    return TT_OK;
}
