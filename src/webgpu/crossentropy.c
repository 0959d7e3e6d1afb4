/* crossentropy.c — the WebGPU cross-entropy planner (gpu_ops.h): softmax +
 * cross-entropy fused with its backward (crossentropy.wgsl: per-row losses,
 * the logits overwritten by their scaled gradient), the loss sum of a step
 * (crossentropy_loss_reduce.wgsl), and the tied head with the cross-entropy
 * in chunks of rows (tt_gop_head_crossentropy: the logits of a chunk, its
 * loss and gradient, then its share of the head's backward, so the logits
 * buffer holds one chunk whatever rows * V is). */
#include <stdio.h>
#include <string.h>

#include "gpu_ops.h"

/* softmax + cross-entropy rows: 64 threads (V = 256: 4 per thread); large
 * vocabularies (GPT-2's 50257) 256 */
static uint32_t wg_xent(int V) { return V >= 8192 ? 256u : 64u; }

/* rows of logits ld apart (ld >= V; columns [V, ld) get gradient 0) */
static int xent_rows(tt_gops *o, tt_gsite *s, tt_gref logits, tt_gref losses, tt_gref tokens, int rows, int row0,
                     int V, int ld, int T, tt_status *st) {
    char pf[96];
    size_t np;
    if (logits.off || losses.off || tokens.off)
        return tt_fail(st, TT_EINVAL, "webgpu crossentropy: tensors must start their buffers");
    if (ld < V) return tt_fail(st, TT_EINVAL, "webgpu crossentropy: row stride %d < V %d", ld, V);
    TT_CHECK(tt_gops_check_u32((size_t)rows * (size_t)ld, "crossentropy logits", st));
    uint32_t args[16] = {(uint32_t)rows, (uint32_t)V, (uint32_t)T, (uint32_t)row0, (uint32_t)ld};
    tt_gpu_buf bufs[4] = {tokens.buf, logits.buf, losses.buf, o->amp};
    static const uint8_t kinds[4] = {TT_GPU_BIND_READ, TT_GPU_BIND_RW, TT_GPU_BIND_RW, TT_GPU_BIND_READ};
    uint32_t x, y;
    tt_gops_grid1(o, (uint64_t)rows, &x, &y);
    tt_gops_wg_prefix(wg_xent(V), pf, sizeof pf);
    np = strlen(pf);
    if (o->amp_on) snprintf(pf + np, sizeof pf - np, "const AMP_BIND: u32 = 5u;\n"); /* the gradient times the loss scale */
    return tt_gops_make_site(o, s, "crossentropy", pf, args, 1, o->amp_on ? 4 : 3, bufs, kinds, x, y, 1, st);
}

int tt_gop_crossentropy(tt_gops *o, tt_gsite *s, tt_gref logits, tt_gref losses, tt_gref tokens, int rows, int V,
                        int T, tt_status *st) {
    return xent_rows(o, s, logits, losses, tokens, rows, 0, V, V, T, st);
}

int tt_gop_crossentropy_loss_reduce(tt_gops *o, tt_gsite *s, tt_gref stats, tt_gref losses, tt_status *st) {
    char pf[64];
    if (stats.off || losses.off) return tt_fail(st, TT_EINVAL, "webgpu loss: tensors must start their buffers");
    uint32_t args[16] = {0};
    tt_gpu_buf bufs[2] = {losses.buf, stats.buf};
    static const uint8_t kinds[2] = {TT_GPU_BIND_READ, TT_GPU_BIND_RW};
    return tt_gops_make_site(o, s, "crossentropy_loss_reduce", tt_gops_wg_prefix(TT_WG_ELEM, pf, sizeof pf), args, 1, 2, bufs, kinds, 1, 1, 1, st);
}

int tt_gop_head_chunk_rows(int ldv, uint64_t budget) {
    uint64_t r = budget / (4u * (uint64_t)ldv);
    if (r >= 128) r -= r % 128; /* whole 128-row tiles of the head's matmuls */
    return r < 1 ? 1 : r > 0x7FFFFFFF ? 0x7FFFFFFF : (int)r;
}

int tt_gop_head_crossentropy_sites(int rows, int chunk, int backward, int dwte) {
    const int n = (rows + chunk - 1) / chunk;
    return n * (1 + TT_GOP_MM_SITES + (backward ? TT_GOP_MM_SITES + (dwte ? TT_GOP_MM_SITES : 0) : 0));
}

int tt_gop_head_crossentropy(tt_gops *o, tt_gsite *s, tt_gref logits, tt_gref losses, tt_gref tokens, tt_gref x,
                             tt_gref wte, const tt_gref *dx, const tt_gref *dwte, int rows, int C, int V, int ldv,
                             int T, int chunk, tt_status *st) {
    if (chunk < 1) return tt_fail(st, TT_EINVAL, "webgpu head: chunk of %d rows", chunk);
    if (ldv < V) return tt_fail(st, TT_EINVAL, "webgpu head: padded vocabulary %d < V %d", ldv, V);
    if (dwte && !dx) return tt_fail(st, TT_EINVAL, "webgpu head: dwte without dx");
    int k = 0;
    for (int r0 = 0; r0 < rows; r0 += chunk) {
        const int n = rows - r0 < chunk ? rows - r0 : chunk;
        const uint64_t xo = (uint64_t)r0 * (uint64_t)C;
        if (xo + x.off > 0xFFFFFFFFull || (dx && xo + dx->off > 0xFFFFFFFFull))
            return tt_fail(st, TT_EUNSUP, "webgpu head: offsets exceed 32-bit indexing");
        tt_gref xr = {x.buf, x.off + (uint32_t)xo};
        /* logits (n,ldv) = x[r0:] (n,C) @ wte^T, wte stored (V,C) (+ the ldv - V rows after it) */
        TT_CHECK(tt_gop_matmul(o, &s[k], logits, xr, wte, NULL, NULL, n, ldv, C, 0, 1, 0, st));
        k += TT_GOP_MM_SITES;
        TT_CHECK(xent_rows(o, &s[k], logits, losses, tokens, n, r0, V, ldv, T, st));
        k += 1;
        if (!dx) continue;
        /* dx[r0:] (n,C) = dlogits (n,ldv) @ wte (ldv,C) (the padded columns' dlogits 0) */
        tt_gref dxr = {dx->buf, dx->off + (uint32_t)xo};
        TT_CHECK(tt_gop_matmul(o, &s[k], dxr, logits, wte, NULL, NULL, n, C, ldv, 0, 0, 0, st));
        k += TT_GOP_MM_SITES;
        if (!dwte) continue;
        /* dwte (ldv,C) += dlogits^T (ldv,n) @ x[r0:] (n,C): the rows past V += 0 */
        TT_CHECK(tt_gop_matmul(o, &s[k], *dwte, logits, xr, NULL, NULL, ldv, C, n, 1, 0, 1, st));
        k += TT_GOP_MM_SITES;
    }
    return TT_OK;
}
