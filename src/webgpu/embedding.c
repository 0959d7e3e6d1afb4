/* embedding.c — the WebGPU embedding planner (gpu_ops.h): forward
 * (embedding_forward.wgsl: wte[token] + wpe[t]) and backward
 * (embedding_backward_wpe.wgsl: position sums; embedding_backward_wte.wgsl:
 * per-token sums over the positions bucketed on the host by
 * tt_gop_embedding_buckets, in a fixed order). */
#include <string.h>

#include "gpu_ops.h"

int tt_gop_embedding_forward(tt_gops *o, tt_gsite *s, tt_gref out, tt_gref tokens, tt_gref wte, tt_gref wpe, int B,
                             int T, int C, tt_status *st) {
    char pf[64];
    if (wte.buf != wpe.buf) return tt_fail(st, TT_EINVAL, "webgpu embedding: wte and wpe must share a buffer");
    if (tokens.off) return tt_fail(st, TT_EINVAL, "webgpu embedding: tokens must start their buffer");
    size_t n = (size_t)B * T * C;
    TT_CHECK(tt_gops_check_u32(n, "embedding", st));
    uint32_t args[16] = {(uint32_t)B, (uint32_t)T, (uint32_t)C, wte.off, wpe.off, out.off};
    tt_gpu_buf bufs[3] = {tokens.buf, wte.buf, out.buf};
    static const uint8_t kinds[3] = {TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_RW};
    return tt_gops_make_site(o, s, "embedding_forward", tt_gops_wg_prefix(TT_WG_ELEM, pf, sizeof pf), args, 0, 3, bufs, kinds,
                     tt_gops_stride_wgs(n, TT_WG_ELEM), 1, 1, st);
}

int tt_gop_embedding_backward(tt_gops *o, tt_gsite *s, tt_gref dwte, tt_gref dwpe, tt_gref dout, tt_gpu_buf tok,
                              uint32_t bucket_off, uint32_t pos_off, int B, int T, int C, int V, tt_status *st) {
    char pf[64];
    if (dwte.buf != dwpe.buf) return tt_fail(st, TT_EINVAL, "webgpu embedding: dwte and dwpe must share a buffer");
    {
        uint32_t args[16] = {(uint32_t)B, (uint32_t)T, (uint32_t)C, dwpe.off, dout.off};
        tt_gpu_buf bufs[2] = {dout.buf, dwpe.buf};
        static const uint8_t kinds[2] = {TT_GPU_BIND_READ, TT_GPU_BIND_RW};
        TT_CHECK(tt_gops_make_site(o, &s[0], "embedding_backward_wpe", tt_gops_wg_prefix(TT_WG_ELEM, pf, sizeof pf), args, 0, 2, bufs, kinds,
                           tt_gops_stride_wgs((size_t)T * C, TT_WG_ELEM), 1, 1, st));
    }
    uint32_t args[16] = {(uint32_t)V, (uint32_t)C, dwte.off, bucket_off, pos_off, dout.off};
    tt_gpu_buf bufs[3] = {tok, dout.buf, dwte.buf};
    static const uint8_t kinds[3] = {TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_RW};
    return tt_gops_make_site(o, &s[1], "embedding_backward_wte", tt_gops_wg_prefix(TT_WG_ELEM, pf, sizeof pf), args, 0, 3, bufs, kinds,
                     tt_gops_stride_wgs((size_t)V * C, TT_WG_ELEM), 1, 1, st);
}

void tt_gop_embedding_buckets(const uint32_t *tokens, int B, int T, int V, uint32_t *offsets, uint32_t *pos) {
    memset(offsets, 0, (size_t)(V + 1) * sizeof *offsets);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) offsets[tokens[(size_t)b * (T + 1) + t] + 1]++;
    for (int v = 0; v < V; v++) offsets[v + 1] += offsets[v];
    /* stable placement: a running cursor per token (reuses pos order) */
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            uint32_t v = tokens[(size_t)b * (T + 1) + t];
            pos[offsets[v]++] = (uint32_t)(b * T + t);
        }
    /* offsets[v] now holds the end of bucket v: shift back */
    for (int v = V; v > 0; v--) offsets[v] = offsets[v - 1];
    offsets[0] = 0;
}
