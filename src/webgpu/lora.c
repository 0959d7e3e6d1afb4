/* lora.c — the WebGPU LoRA planner (gpu_ops.h): the low-rank update
 * out += s * (x A) B of one targeted projection and its backward, s =
 * alpha / R (config.h). The products whose inner dimension is large run on
 * the matmul planner (t = x A; t^T dout; dA += x^T dt; dx += dt A^T); the
 * ones with inner dimension R or a column block of the adapter (c_attn's
 * q, k, v thirds of B, row stride 3C) run on the lora kernels:
 * lora_forward.wgsl (out += s t B), lora_backward_dt.wgsl (dt = s dout B^T,
 * summed over the thirds), lora_backward_db.wgsl (dB += s t^T dout, from the
 * contiguous product into B's column block). */
#include <string.h>

#include "gpu_ops.h"

static int lora_check(int rows, int in, int R, int w, int n_out, tt_status *st) {
    if (rows <= 0 || in <= 0 || R <= 0 || w <= 0 || (n_out != 1 && n_out != 3))
        return tt_fail(st, TT_EINVAL, "webgpu lora: bad shape rows %d in %d rank %d width %d outputs %d", rows, in, R,
                       w, n_out);
    return tt_gops_check_u32((size_t)rows * (size_t)(w > R ? w : R), "lora", st);
}

/* an elementwise-grid site of kernel `name` over n threads */
static int lora_site(tt_gops *o, tt_gsite *s, const char *name, const uint32_t args[16], int n_buf,
                     const tt_gpu_buf *bufs, const uint8_t *kinds, size_t n, tt_status *st) {
    char pf[64];
    uint32_t x, y;
    tt_gops_grid1(o, ((uint64_t)n + TT_WG_ELEM - 1) / TT_WG_ELEM, &x, &y);
    return tt_gops_make_site(o, s, name, tt_gops_wg_prefix(TT_WG_ELEM, pf, sizeof pf), args, 0, n_buf, bufs, kinds, x,
                             y, 1, st);
}

int tt_gop_lora_forward(tt_gops *o, tt_gsite *s, const tt_gref *out, int n_out, tt_gref t, tt_gref x, tt_gref A,
                        tt_gref Bm, int rows, int in, int R, int w, float scale, tt_status *st) {
    TT_CHECK(lora_check(rows, in, R, w, n_out, st));
    /* t (rows,R) = x (rows,in) @ A (in,R) */
    TT_CHECK(tt_gop_matmul(o, s, t, x, A, NULL, NULL, rows, R, in, 0, 0, 0, st));
    for (int j = 0; j < n_out; j++) {
        uint32_t args[16] = {(uint32_t)rows * (uint32_t)w, (uint32_t)w, (uint32_t)R, (uint32_t)(n_out * w), t.off,
                             Bm.off + (uint32_t)(j * w), out[j].off, tt_gops_f2u(scale)};
        tt_gpu_buf bufs[3] = {t.buf, Bm.buf, out[j].buf};
        static const uint8_t kinds[3] = {TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_RW};
        TT_CHECK(lora_site(o, &s[TT_GOP_MM_SITES + j], "lora_forward", args, 3, bufs, kinds, (size_t)rows * w, st));
        s[TT_GOP_MM_SITES + j].flops = 2.0 * rows * w * R;
    }
    return TT_OK;
}

int tt_gop_lora_backward(tt_gops *o, tt_gsite *s, tt_gref dx, tt_gref dA, tt_gref dB, tt_gref dt, tt_gref prod,
                         const tt_gref *dout, int n_out, tt_gref t, tt_gref x, tt_gref A, tt_gref Bm, int rows, int in,
                         int R, int w, float scale, tt_status *st) {
    TT_CHECK(lora_check(rows, in, R, w, n_out, st));
    const uint32_t ldb = (uint32_t)(n_out * w), fs = tt_gops_f2u(scale);
    int k = 0;
    { /* dt (rows,R) = s * sum_j dout_j (rows,w) @ B_j^T */
        const tt_gref d1 = n_out > 1 ? dout[1] : dout[0], d2 = n_out > 1 ? dout[2] : dout[0];
        uint32_t args[16] = {(uint32_t)rows * (uint32_t)R, (uint32_t)w, (uint32_t)R, ldb, (uint32_t)n_out, Bm.off,
                             dt.off, fs, dout[0].off, d1.off, d2.off};
        tt_gpu_buf bufs[5] = {dout[0].buf, d1.buf, d2.buf, Bm.buf, dt.buf};
        static const uint8_t kinds[5] = {TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_READ,
                                         TT_GPU_BIND_RW};
        TT_CHECK(lora_site(o, &s[k], "lora_backward_dt", args, 5, bufs, kinds, (size_t)rows * R, st));
        s[k++].flops = 2.0 * rows * R * w * n_out;
    }
    for (int j = 0; j < n_out; j++) {
        /* prod (R,w) = t^T (R,rows) @ dout_j (rows,w); dB_j += s * prod */
        TT_CHECK(tt_gop_matmul(o, &s[k], prod, t, dout[j], NULL, NULL, R, w, rows, 1, 0, 0, st));
        k += TT_GOP_MM_SITES;
        uint32_t args[16] = {(uint32_t)R * (uint32_t)w, (uint32_t)w, ldb, prod.off, dB.off + (uint32_t)(j * w), fs};
        tt_gpu_buf bufs[2] = {prod.buf, dB.buf};
        static const uint8_t kinds[2] = {TT_GPU_BIND_READ, TT_GPU_BIND_RW};
        TT_CHECK(lora_site(o, &s[k++], "lora_backward_db", args, 2, bufs, kinds, (size_t)R * w, st));
    }
    /* dA (in,R) += x^T (in,rows) @ dt (rows,R) */
    TT_CHECK(tt_gop_matmul(o, &s[k], dA, x, dt, NULL, NULL, in, R, rows, 1, 0, 1, st));
    k += TT_GOP_MM_SITES;
    /* dx (rows,in) += dt (rows,R) @ A^T (A stored (in,R)) */
    TT_CHECK(tt_gop_matmul(o, &s[k], dx, dt, A, NULL, NULL, rows, in, R, 0, 1, 1, st));
    return TT_OK;
}
