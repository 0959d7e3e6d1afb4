/* layernorm.c — the WebGPU LayerNorm planner (gpu_ops.h): forward
 * (layernorm_forward.wgsl: one workgroup per row, mean and rstd saved; the
 * model's epsilon a constant of its prefix) and
 * backward (layernorm_backward_dx.wgsl per row; the weight and bias
 * gradients as two-stage column sums: layernorm_backward_dwdb.wgsl, then
 * matmul_colsum_final.wgsl). */
#include <stdio.h>

#include "gpu_ops.h"

/* one workgroup per row, about 4 columns per thread */
static uint32_t wg_ln(int C) {
    uint32_t w = 32;
    while (w < 256 && w * 4 < (uint32_t)C) w *= 2;
    return w;
}

int tt_gop_layernorm_forward(tt_gops *o, tt_gsite *s, tt_gref out, tt_gref stats, tt_gref inp, tt_gref w, tt_gref b,
                             int rows, int C, float eps, tt_status *st) {
    if (w.buf != b.buf) return tt_fail(st, TT_EINVAL, "webgpu layernorm: w and b must share a buffer");
    if (stats.off != 0) return tt_fail(st, TT_EINVAL, "webgpu layernorm: stats must start its buffer");
    if (!(eps > 0.0f) || !(eps < 1.0f)) return tt_fail(st, TT_EINVAL, "webgpu layernorm: epsilon %g outside (0, 1)", (double)eps);
    char pf[96], pfe[160];
    /* the epsilon as a constant: %.9g gives back the same float */
    snprintf(pfe, sizeof pfe, "%sconst LN_EPS: f32 = %.9g;\n", tt_gops_wg_prefix(wg_ln(C), pf, sizeof pf), (double)eps);
    uint32_t args[16] = {(uint32_t)rows, (uint32_t)C, inp.off, w.off, b.off, out.off};
    tt_gpu_buf bufs[4] = {inp.buf, w.buf, out.buf, stats.buf};
    static const uint8_t kinds[4] = {TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_RW, TT_GPU_BIND_RW};
    uint32_t x, y;
    tt_gops_grid1(o, (uint64_t)rows, &x, &y);
    return tt_gops_make_site(o, s, "layernorm_forward", pfe, args, 0, 4, bufs,
                             kinds, x, y, 1, st);
}

int tt_gop_layernorm_backward(tt_gops *o, tt_gsite *s, tt_gref dinp, tt_gref dwb, tt_gref dout, tt_gref inp, tt_gref w,
                              tt_gref stats, tt_gref part, int rows, int C, int accum, tt_status *st) {
    char pf[96];
    uint32_t x, y;
    {
        uint32_t args[16] = {(uint32_t)rows, (uint32_t)C, dout.off, inp.off, w.off, dinp.off, accum ? 1u : 0u};
        tt_gpu_buf bufs[5] = {dout.buf, inp.buf, w.buf, stats.buf, dinp.buf};
        static const uint8_t kinds[5] = {TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_READ,
                                         TT_GPU_BIND_RW};
        tt_gops_grid1(o, (uint64_t)rows, &x, &y);
        TT_CHECK(tt_gops_make_site(o, &s[0], "layernorm_backward_dx", tt_gops_wg_prefix(wg_ln(C), pf, sizeof pf), args,
                                   0, 5, bufs, kinds, x, y, 1, st));
    }
    uint32_t ch = tt_gop_colsum_chunk(rows), nch = ((uint32_t)rows + ch - 1) / ch;
    {
        uint32_t args[16] = {(uint32_t)rows, (uint32_t)C, dout.off, inp.off, ch};
        tt_gpu_buf bufs[4] = {dout.buf, inp.buf, stats.buf, part.buf};
        static const uint8_t kinds[4] = {TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_RW};
        TT_CHECK(tt_gops_make_site(o, &s[1], "layernorm_backward_dwdb", tt_gops_wg_prefix(TT_WG_ELEM, pf, sizeof pf),
                                   args, 0, 4, bufs, kinds, ((uint32_t)C + TT_WG_ELEM - 1) / TT_WG_ELEM, nch, 1, st));
    }
    return tt_gop_colsum_final(o, &s[2], dwb, part, 2u * (uint32_t)C, nch, st);
}
