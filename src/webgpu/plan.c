/* plan.c — the WebGPU backend's buffer plan (backend_webgpu.h): every
 * device buffer a training step uses, sized once at creation, and the
 * preflight (plan_bytes) that adds the same sizes up without allocating.
 *
 * Buffers: params, grads, m, v (layout.total floats each, the layout of
 * config.h; tensors addressed by element offset), each split into "chunks"
 * (one buffer per chunk, the same chunking for all four) when it exceeds the
 * adapter's maxStorageBufferBindingSize / maxBufferSize (see plan_chunks);
 * a LoRA model's frozen base is in chunks of its own that hold parameters
 * alone (no grads, m, v or decay mask: handles -1);
 * one buffer per activation tensor (but q, k, v and their gradients dq, dk,
 * dv: three tensors in one buffer where that fits one binding, so their
 * projections and weight gradients run as batched matmuls); a u32 token buffer (tokens, then the
 * embedding-gradient buckets); the logits of the head, whole or one chunk of
 * rows (backend_webgpu.h, head_rows); small stats (loss, grad norm) copied to
 * alternating readback buffers; with LoRA, x A of every adapter pair kept
 * from forward to backward (lora-t). Each chunk's decay mask and grad-norm
 * part table are written here from the layout. */
#include <stdlib.h>
#include <string.h>

#include "backend_webgpu.h"

/* In the dry run (preflight) only sizes are added up: a model that cannot
 * fit is refused before anything is allocated. */
static int mkbuf(wgpu_impl *w, size_t elems, const char *label, tt_gpu_buf *out, tt_status *st) {
    uint64_t bytes = (uint64_t)elems * 4;
    const tt_gpu_info *in = tt_gpu_get_info(w->g);
    if (w->plan.dry) {
        uint64_t lim = in->max_storage_binding;
        if (w->plan.bind_cap && w->plan.bind_cap < lim) lim = w->plan.bind_cap;
        w->plan.plan_bytes += (double)bytes;
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

/* three tensors of n elements: one buffer at offsets 0, n, 2n when `one`
 * (names[0]), else a buffer each (names[1..3]) */
static int mkbuf3(wgpu_impl *w, size_t n, int one, const char *const names[4], tt_gref *x, tt_gref *y, tt_gref *z,
                  tt_status *st) {
    memset(x, 0, sizeof *x), memset(y, 0, sizeof *y), memset(z, 0, sizeof *z);
    if (!one) {
        TT_CHECK(mkbuf(w, n, names[1], &x->buf, st));
        TT_CHECK(mkbuf(w, n, names[2], &y->buf, st));
        return mkbuf(w, n, names[3], &z->buf, st);
    }
    TT_CHECK(mkbuf(w, 3 * n, names[0], &x->buf, st));
    y->buf = z->buf = x->buf;
    y->off = (uint32_t)n;
    z->off = (uint32_t)(2 * n);
    return TT_OK;
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
static int plan_chunks(wgpu_impl *w, const tt_layout *lo, tt_status *st) {
    const tt_gpu_info *in = tt_gpu_get_info(w->g);
    uint64_t bind = in->max_storage_binding;
    if (w->plan.bind_cap && w->plan.bind_cap < bind) bind = w->plan.bind_cap;
    const char *which = bind <= in->max_buffer ? "maxStorageBufferBindingSize" : "maxBufferSize";
    const uint64_t lim = bind <= in->max_buffer ? bind : in->max_buffer;
    const int nu = lo->n_tensors / 2;
    free(w->plan.ch);
    w->plan.n_ch = 0;
    w->plan.ch = calloc((size_t)(nu > 0 ? nu : 1), sizeof *w->plan.ch);
    if (!w->plan.ch) return tt_fail(st, TT_ENOMEM, "out of memory (webgpu chunks)");
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
        wchunk *c = w->plan.n_ch ? &w->plan.ch[w->plan.n_ch - 1] : NULL;
        /* a new chunk where the limit is reached, and where the frozen base
         * ends (a frozen chunk has no gradient, moments or mask) */
        if (!c || ((uint64_t)c->pad + c->n + n) * 4 > lim || (a->trainable && !c->tn && c->n)) {
            c = &w->plan.ch[w->plan.n_ch++];
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
    w->plan.n_part = (uint32_t)parts;
    return TT_OK;
}

/* the parameter at layout offset off in set (w->plan.pset or w->plan.gset): its
 * chunk's buffer, at its position there */
tt_gref tt_wgpu_param_at(const wgpu_impl *w, const tt_gpu_buf *set, size_t off) {
    int c = 0;
    while (c + 1 < w->plan.n_ch && w->plan.ch[c + 1].g0 <= off) c++;
    tt_gref r = {set[c], (uint32_t)(off - w->plan.ch[c].g0 + w->plan.ch[c].pad)};
    return r;
}

/* The plan: chunks, then every buffer in a fixed order. In the dry run
 * (w->plan.dry) only sizes and limits are checked; else the buffers are created
 * and the decay masks and grad-norm part tables written. */
int tt_wgpu_alloc_buffers(wgpu_impl *w, const tt_model_config *cfg, const tt_layout *lo, tt_status *st) {
    const size_t B = (size_t)w->plan.B, T = (size_t)w->plan.T, C = (size_t)w->plan.C, BT = B * T, V = (size_t)w->plan.V;
    const size_t NH = (size_t)w->plan.NH;
    TT_CHECK(plan_chunks(w, lo, st));
    if (!w->plan.dry) {
        free(w->plan.pset);
        free(w->plan.gset);
        w->plan.pset = calloc((size_t)w->plan.n_ch, sizeof *w->plan.pset);
        w->plan.gset = calloc((size_t)w->plan.n_ch, sizeof *w->plan.gset);
        if (!w->plan.pset || !w->plan.gset) return tt_fail(st, TT_ENOMEM, "out of memory (webgpu chunks)");
    }
    for (int i = 0; i < w->plan.n_ch; i++) {
        wchunk *c = &w->plan.ch[i];
        const size_t e = c->pad + c->n;
        TT_CHECK(mkbuf(w, e, "params", &c->p, st));
        c->g = c->m = c->v = c->mask = -1; /* frozen (a LoRA model's base): parameters alone */
        if (c->tn) {
            TT_CHECK(mkbuf(w, e, "grads", &c->g, st));
            TT_CHECK(mkbuf(w, e, "adam-m", &c->m, st));
            TT_CHECK(mkbuf(w, e, "adam-v", &c->v, st));
            TT_CHECK(mkbuf(w, (c->n + 31) / 32, "decay-mask", &c->mask, st));
        }
        if (!w->plan.dry) w->plan.pset[i] = c->p, w->plan.gset[i] = c->g;
    }
    TT_CHECK(mkbuf(w, 2 * (size_t)w->plan.n_part, "norm-parts", &w->plan.parts, st));
    w->plan.bucket_off = B * (T + 1);
    w->plan.pos_off = w->plan.bucket_off + V + 1;
    w->plan.tok_words = w->plan.pos_off + BT;
    TT_CHECK(mkbuf(w, w->plan.tok_words, "tokens", &w->plan.tok, st));
    TT_CHECK(mkbuf(w, 8, "stats", &w->plan.stats, st)); /* loss, norm, the loss scaler [scale, clean, skipped] */
    w->plan.lscale = -1;
    if (w->ops.f16) TT_CHECK(mkbuf(w, 4, "loss-scale", &w->plan.lscale, st));
    size_t pcs = tt_gop_colsum_part_elems((int)BT, (int)(4 * C));
    size_t pln = tt_gop_colsum_part_elems((int)BT, (int)(2 * C));
    TT_CHECK(mkbuf(w, pcs > pln ? pcs : pln, "colsum-scratch", &w->plan.part_cs, st));
    TT_CHECK(mkbuf(w, w->plan.n_part, "norm-scratch", &w->plan.part_opt, st));
    /* q, k, v (and dq, dk, dv) in one buffer when it fits one binding (and
     * the offsets keep the attention kernels' vec4 loads) */
    const tt_gpu_info *in = tt_gpu_get_info(w->g);
    uint64_t lim = in->max_storage_binding;
    if (w->plan.bind_cap && w->plan.bind_cap < lim) lim = w->plan.bind_cap;
    if (in->max_buffer < lim) lim = in->max_buffer;
    const int qkv_one = (BT * C) % 4 == 0 && (uint64_t)3 * BT * C * 4 <= lim;
    for (int l = 0; l <= w->plan.L; l++) TT_CHECK(mkbuf(w, BT * C, "residual", &w->plan.res[l], st));
    for (int l = 0; l < w->plan.L; l++) {
        wl_acts *a = &w->plan.la[l];
        TT_CHECK(mkbuf(w, BT * C, "ln1", &a->ln1, st));
        TT_CHECK(mkbuf(w, 2 * BT, "ln1-stats", &a->st1, st));
        static const char *const qkv_names[4] = {"qkv", "q", "k", "v"};
        TT_CHECK(mkbuf3(w, BT * C, qkv_one, qkv_names, &a->q, &a->k, &a->v, st));
        TT_CHECK(mkbuf(w, BT * C, "attn-y", &a->y, st));
        TT_CHECK(mkbuf(w, 2 * B * NH * T, "attn-stats", &a->att, st));
        TT_CHECK(mkbuf(w, BT * C, "residual2", &a->res2, st));
        TT_CHECK(mkbuf(w, BT * C, "ln2", &a->ln2, st));
        TT_CHECK(mkbuf(w, 2 * BT, "ln2-stats", &a->st2, st));
        TT_CHECK(mkbuf(w, BT * 4 * C, "fc", &a->h, st));
        TT_CHECK(mkbuf(w, BT * 4 * C, "gelu", &a->g, st));
    }
    TT_CHECK(mkbuf(w, BT * C, "lnf", &w->plan.lnf, st));
    TT_CHECK(mkbuf(w, 2 * BT, "lnf-stats", &w->plan.stf, st));
    /* the head: whole where its logits fit WGPU_HEAD_LOGITS_BYTES and one binding, else in chunks of rows */
    {
        uint64_t budget = WGPU_HEAD_LOGITS_BYTES < lim ? WGPU_HEAD_LOGITS_BYTES : lim;
        /* chunked logits rows padded to a multiple of 4 (vec4 loads in the head's matmuls) where
         * the rows read past wte exist: wpe's (tt_gop_head_crossentropy) */
        const size_t vp = (V + 3) / 4 * 4;
        const int wpe_follows = lo->n_tensors > 1 && lo->t[1].offset == lo->t[0].offset + V * C;
        w->plan.head_ldv = wpe_follows && vp - V <= T ? (int)vp : (int)V;
        w->plan.head_rows = 0;
        if (w->plan.head_force > 0) w->plan.head_rows = w->plan.head_force < (int)BT ? w->plan.head_force : (int)BT;
        else if ((uint64_t)BT * V * 4 > budget) w->plan.head_rows = tt_gop_head_chunk_rows(w->plan.head_ldv, budget);
    }
    TT_CHECK(mkbuf(w, w->plan.head_rows ? (size_t)w->plan.head_rows * w->plan.head_ldv : BT * V, "logits",
                   &w->plan.logits, st));
    TT_CHECK(mkbuf(w, BT, "losses", &w->plan.losses, st));
    TT_CHECK(mkbuf(w, BT * C, "dres", &w->plan.dres, st));
    TT_CHECK(mkbuf(w, BT * C, "dtmp", &w->plan.dtmp, st));
    static const char *const dqkv_names[4] = {"dqkv", "dq", "dk", "dv"};
    TT_CHECK(mkbuf3(w, BT * C, qkv_one, dqkv_names, &w->plan.dq, &w->plan.dk, &w->plan.dv, st));
    TT_CHECK(mkbuf(w, BT * 4 * C, "dfc", &w->plan.dg, st));
    if (cfg->lora_rank > 0) { /* x A of every adapter pair (slots of 4-aligned offsets), its gradient, t^T dout */
        const size_t Rk = (size_t)cfg->lora_rank, pairs = (size_t)(lo->n_tensors - lo->n_base) / 2;
        w->plan.lora_slot = (BT * Rk + 3) / 4 * 4;
        TT_CHECK(mkbuf(w, pairs * w->plan.lora_slot, "lora-t", &w->plan.lora_t, st));
        TT_CHECK(mkbuf(w, BT * Rk, "lora-dt", &w->plan.lora_dt, st));
        TT_CHECK(mkbuf(w, Rk * 4 * C, "lora-prod", &w->plan.lora_prod, st));
    }
    if (w->plan.dry) return TT_OK;
    for (int i = 0; i < 2; i++)
        TT_CHECK(tt_gpu_buffer(w->g, 32, TT_GPU_READBACK, "stats-readback", &w->plan.staging[i], st));
    TT_CHECK(tt_gpu_buffer(w->g, 16, TT_GPU_READBACK, "eval-readback", &w->plan.stage_eval, st));
    /* per chunk: the decay mask from the layout, the grad-norm part table
     * (each unit cut into parts of tt_gop_norm_part_len(P) from its start;
     * chunk-relative buffer positions) */
    const size_t per = tt_gop_norm_part_len(trainable_count(lo));
    uint32_t *mask = NULL, *desc = calloc((size_t)2 * w->plan.n_part, sizeof *desc);
    int rc = desc ? TT_OK : tt_fail(st, TT_ENOMEM, "out of memory (norm parts)");
    for (int i = 0; rc == TT_OK && i < w->plan.n_ch; i++) {
        const wchunk *c = &w->plan.ch[i];
        if (!c->tn) continue; /* frozen: no mask, no parts */
        size_t nw = (c->n + 31) / 32;
        free(mask);
        mask = calloc(nw, sizeof *mask);
        if (!mask) {
            rc = tt_fail(st, TT_ENOMEM, "out of memory (decay mask)");
            break;
        }
        uint32_t p = c->part0;
        for (int u = c->u0; u < c->u1; u++) {
            const tt_tensor_info *a = &lo->t[2 * u];
            if (!a->trainable) continue; /* frozen: no parts; mask bit i is trainable parameter t0 + i */
            const size_t un = a->numel + lo->t[2 * u + 1].numel, pos = c->pad + (a->offset - c->g0);
            for (size_t k = 0; k < un; k += per, p++) {
                desc[2 * (size_t)p] = (uint32_t)(pos + k);
                desc[2 * (size_t)p + 1] = (uint32_t)(pos + (k + per < un ? k + per : un));
            }
            for (int t = 2 * u; t < 2 * u + 2; t++) {
                const tt_tensor_info *ti = &lo->t[t];
                if (!ti->decay) continue;
                for (size_t j = ti->offset - c->t0; j < ti->offset - c->t0 + ti->numel; j++)
                    mask[j >> 5] |= 1u << (j & 31);
            }
        }
        if (p != c->part0 + c->n_part) rc = tt_fail(st, TT_EINVAL, "webgpu: norm part table mismatch");
        if (rc == TT_OK) rc = tt_gpu_write(w->g, c->mask, 0, mask, nw * 4, st);
    }
    if (rc == TT_OK) rc = tt_gpu_write(w->g, w->plan.parts, 0, desc, (uint64_t)w->plan.n_part * 8, st);
    free(mask);
    free(desc);
    return rc;
}

/* the preflight: the plan of cfg on gpu's device (its binding cap and
 * attention plan choice, tt_gops), counted, not allocated */
int tt_wgpu_plan_bytes(const wgpu_impl *gpu, const tt_model_config *cfg, uint64_t *bytes, tt_status *st) {
    *bytes = 0;
    TT_CHECK(tt_config_validate(cfg, st));
    tt_layout lo;
    wgpu_impl w;
    memset(&w, 0, sizeof w);
    w.g = gpu->g;
    w.plan.B = cfg->batch, w.plan.T = cfg->ctx, w.plan.C = cfg->d_model;
    w.plan.NH = cfg->n_head, w.plan.L = cfg->n_layer, w.plan.V = cfg->vocab;
    w.plan.P = (size_t)tt_config_param_count(cfg);
    w.plan.bind_cap = gpu->ops.bind_cap;
    w.plan.head_force = gpu->plan.head_force;
    w.plan.dry = 1;
    TT_CHECK(tt_layout_build(cfg, &lo, st));
    w.plan.res = calloc((size_t)w.plan.L + 1, sizeof *w.plan.res);
    w.plan.la = calloc((size_t)w.plan.L, sizeof *w.plan.la);
    int rc = (!w.plan.res || !w.plan.la) ? tt_fail(st, TT_ENOMEM, "out of memory (webgpu preflight)")
                                         : tt_wgpu_alloc_buffers(&w, cfg, &lo, st);
    if (rc == TT_OK && (uint64_t)w.plan.P > 0xFFFFFFFFull)
        rc = tt_fail(st, TT_EUNSUP, "webgpu: %zu parameters exceed 32-bit indexing", w.plan.P);
    if (rc == TT_OK && gpu->ops.attn_ds >= 0) { /* + the attention backward's dS scratch where it runs (attention.c) */
        const tt_gpu_info *in = tt_gpu_get_info(w.g);
        uint64_t lim = in->max_storage_binding;
        if (w.plan.bind_cap && w.plan.bind_cap < lim) lim = w.plan.bind_cap;
        if (in->max_buffer && in->max_buffer < lim) lim = in->max_buffer;
        tt_attn_ds ds;
        if ((in->max_storage_per_stage == 0 || in->max_storage_per_stage >= 8) &&
            tt_gop_attention_ds_plan(w.plan.C / w.plan.NH, w.plan.B, w.plan.T, w.plan.NH, in->max_wg_storage,
                                     in->max_invocations, lim, &ds))
            w.plan.plan_bytes += 4.0 * (double)ds.elems;
    }
    if (rc == TT_OK) *bytes = (uint64_t)w.plan.plan_bytes;
    free(w.plan.res);
    free(w.plan.la);
    free(w.plan.ch);
    tt_layout_free(&lo);
    return rc;
}
