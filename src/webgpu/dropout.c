/* dropout.c — the WebGPU dropout planner (gpu_ops.h): dropout.wgsl on a
 * (B,T,C) tensor with the masks of src/rng.h (element i of a key slot of
 * tt_gops.dropk), for the embedding output and the two residual branches;
 * the attention probabilities' masks live inside the attention kernels
 * (attention.c). Also the dropout-variant prefix every such site uses. */
#include <stdio.h>

#include "gpu_ops.h"

const char *tt_gops_drop_prefix(uint32_t bind, const char *base, char *buf, size_t cap) {
    snprintf(buf, cap, "%sconst DROP_BIND: u32 = %uu;\n", base ? base : "", bind);
    return buf;
}

int tt_gop_dropout(tt_gops *o, tt_gsite *s, tt_gref out, tt_gref src, size_t n, int add, uint32_t slot,
                   tt_status *st) {
    if (!o->dropk_slots || slot >= o->dropk_slots)
        return tt_fail(st, TT_EINVAL, "webgpu dropout: key slot %u outside the keys buffer (%u slots)", slot,
                       o->dropk_slots);
    if (out.buf == src.buf) return tt_fail(st, TT_EINVAL, "webgpu dropout: out and src must be different buffers");
    TT_CHECK(tt_gops_check_u32(n, "dropout", st));
    char wg[64], pf[160];
    snprintf(wg, sizeof wg, "const WG: u32 = %uu;\nconst ADD: bool = %s;\n", TT_WG_ELEM, add ? "true" : "false");
    uint32_t args[16] = {(uint32_t)n, out.off, src.off, slot};
    tt_gpu_buf bufs[3] = {out.buf, src.buf, o->dropk};
    static const uint8_t kinds[3] = {TT_GPU_BIND_RW, TT_GPU_BIND_READ, TT_GPU_BIND_READ};
    uint32_t x, y;
    tt_gops_grid1(o, tt_gops_stride_wgs(n, TT_WG_ELEM), &x, &y);
    return tt_gops_make_site(o, s, "dropout", tt_gops_drop_prefix(3, wg, pf, sizeof pf), args, 0, 3, bufs, kinds, x, y,
                             1, st);
}
