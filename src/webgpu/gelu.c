/* gelu.c — the WebGPU GELU planner (gpu_ops.h): exact (erf) GELU forward
 * and backward, grid-stride elementwise kernels (gelu_forward.wgsl,
 * gelu_backward.wgsl; the erf is common.wgsl's). */
#include "gpu_ops.h"

/* kernel `name` over n elements: reads inp, writes (or updates) out */
static int gelu_site(tt_gops *o, tt_gsite *s, const char *name, tt_gref out, tt_gref inp, size_t n, tt_status *st) {
    char pf[64];
    TT_CHECK(tt_gops_check_u32(n, "gelu", st));
    uint32_t args[16] = {(uint32_t)n, inp.off, out.off};
    tt_gpu_buf bufs[2] = {inp.buf, out.buf};
    static const uint8_t kinds[2] = {TT_GPU_BIND_READ, TT_GPU_BIND_RW};
    return tt_gops_make_site(o, s, name, tt_gops_wg_prefix(TT_WG_ELEM, pf, sizeof pf), args, 0, 2, bufs, kinds,
                             tt_gops_stride_wgs(n, TT_WG_ELEM), 1, 1, st);
}

int tt_gop_gelu_forward(tt_gops *o, tt_gsite *s, tt_gref out, tt_gref inp, size_t n, tt_status *st) {
    return gelu_site(o, s, "gelu_forward", out, inp, n, st);
}

int tt_gop_gelu_backward(tt_gops *o, tt_gsite *s, tt_gref d, tt_gref inp, size_t n, tt_status *st) {
    return gelu_site(o, s, "gelu_backward", d, inp, n, st);
}
