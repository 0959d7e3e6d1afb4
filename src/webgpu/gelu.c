/* gelu.c — the WebGPU GELU planner (gpu_ops.h): GELU forward and backward
 * by the model's activation (config.h tt_act), grid-stride elementwise
 * kernels: the exact (erf) form (gelu_forward.wgsl, gelu_backward.wgsl; the
 * erf is common.wgsl's) or the tanh form, GPT-2's gelu_new
 * (gelu_tanh_forward.wgsl, gelu_tanh_backward.wgsl). The form is chosen
 * here, when the site's pipeline is created. */
#include "config.h"
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

static int act_ok(int act, tt_status *st) {
    if (act != TT_ACT_GELU && act != TT_ACT_GELU_TANH) return tt_fail(st, TT_EINVAL, "webgpu gelu: unknown activation %d", act);
    return TT_OK;
}

int tt_gop_gelu_forward(tt_gops *o, tt_gsite *s, tt_gref out, tt_gref inp, size_t n, int act, tt_status *st) {
    TT_CHECK(act_ok(act, st));
    return gelu_site(o, s, act == TT_ACT_GELU_TANH ? "gelu_tanh_forward" : "gelu_forward", out, inp, n, st);
}

int tt_gop_gelu_backward(tt_gops *o, tt_gsite *s, tt_gref d, tt_gref inp, size_t n, int act, tt_status *st) {
    TT_CHECK(act_ok(act, st));
    return gelu_site(o, s, act == TT_ACT_GELU_TANH ? "gelu_tanh_backward" : "gelu_backward", d, inp, n, st);
}
