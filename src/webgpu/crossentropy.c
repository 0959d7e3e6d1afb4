/* crossentropy.c — the WebGPU cross-entropy planner (gpu_ops.h): softmax +
 * cross-entropy fused with its backward (crossentropy.wgsl: per-row losses,
 * the logits overwritten by their scaled gradient) and the loss sum of a
 * step (crossentropy_loss_reduce.wgsl). */
#include "gpu_ops.h"

#define WG_XENT 64u /* softmax + cross-entropy rows (V = 256: 4 per thread) */

int tt_gop_crossentropy(tt_gops *o, tt_gsite *s, tt_gref logits, tt_gref losses, tt_gref tokens, int rows, int V,
                        int T, tt_status *st) {
    char pf[96];
    if (logits.off || losses.off || tokens.off)
        return tt_fail(st, TT_EINVAL, "webgpu crossentropy: tensors must start their buffers");
    uint32_t args[16] = {(uint32_t)rows, (uint32_t)V, (uint32_t)T};
    tt_gpu_buf bufs[3] = {tokens.buf, logits.buf, losses.buf};
    static const uint8_t kinds[3] = {TT_GPU_BIND_READ, TT_GPU_BIND_RW, TT_GPU_BIND_RW};
    uint32_t x, y;
    tt_gops_grid1(o, (uint64_t)rows, &x, &y);
    return tt_gops_make_site(o, s, "crossentropy", tt_gops_wg_prefix(WG_XENT, pf, sizeof pf), args, 1, 3, bufs, kinds, x, y, 1,
                     st);
}

int tt_gop_crossentropy_loss_reduce(tt_gops *o, tt_gsite *s, tt_gref stats, tt_gref losses, tt_status *st) {
    char pf[64];
    if (stats.off || losses.off) return tt_fail(st, TT_EINVAL, "webgpu loss: tensors must start their buffers");
    uint32_t args[16] = {0};
    tt_gpu_buf bufs[2] = {losses.buf, stats.buf};
    static const uint8_t kinds[2] = {TT_GPU_BIND_READ, TT_GPU_BIND_RW};
    return tt_gops_make_site(o, s, "crossentropy_loss_reduce", tt_gops_wg_prefix(TT_WG_ELEM, pf, sizeof pf), args, 1, 2, bufs, kinds, 1, 1, 1, st);
}
