/* adamw.c — the WebGPU optimizer planner (gpu_ops.h): the global gradient
 * norm as fixed parts (adamw_sumsq.wgsl, per parameter chunk), then clip +
 * AdamW (adamw_update.wgsl, which re-sums the parts in one fixed order),
 * and with TT_PRECISION_F16 the loss scaler's update (amp_update.wgsl). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "gpu_ops.h"

static uint32_t adamw_nparts(size_t n) {
    size_t p = (n + TT_WG_ELEM * 8 - 1) / (TT_WG_ELEM * 8);
    if (p > 1024) p = 1024;
    return (uint32_t)(p ? p : 1);
}

size_t tt_gop_adamw_part_elems(size_t n) { return adamw_nparts(n); }

size_t tt_gop_norm_part_len(size_t n) {
    uint32_t np = adamw_nparts(n);
    return (n + np - 1) / np;
}

int tt_gop_adamw_chunks(tt_gops *o, tt_gsite *s, const tt_gop_pchunk *ch, int n_chunks, tt_gpu_buf desc,
                        uint32_t n_part, tt_gpu_buf part, tt_gpu_buf stats, tt_status *st) {
    char pf[96];
    for (int c = 0; c < n_chunks; c++) {
        if (ch[c].part0 + ch[c].n_part > n_part)
            return tt_fail(st, TT_EINVAL, "webgpu adamw: chunk %d's parts exceed the part table", c);
        uint32_t args[16] = {ch[c].part0};
        tt_gpu_buf bufs[3] = {desc, ch[c].grads, part};
        static const uint8_t kinds[3] = {TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_RW};
        TT_CHECK(tt_gops_make_site(o, &s[c], "adamw_sumsq", tt_gops_wg_prefix(TT_WG_ELEM, pf, sizeof pf), args, 0, 3, bufs,
                           kinds, ch[c].n_part ? ch[c].n_part : 1, 1, 1, st));
        if (!ch[c].n_part) s[c].x = 0; /* nothing to sum: an empty dispatch */
    }
    for (int c = 0; c < n_chunks; c++) {
        uint32_t np = adamw_nparts(ch[c].n);
        uint32_t per = (uint32_t)(((size_t)ch[c].n + np - 1) / np);
        uint32_t args[16] = {ch[c].n, per, n_part, ch[c].base, c == 0 ? 1u : 0u};
        tt_gpu_buf bufs[8] = {part, ch[c].mask, ch[c].params, ch[c].grads, ch[c].m, ch[c].v, stats, o->amp};
        static const uint8_t kinds[8] = {TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_RW, TT_GPU_BIND_READ,
                                         TT_GPU_BIND_RW,   TT_GPU_BIND_RW,   TT_GPU_BIND_RW, TT_GPU_BIND_READ};
        tt_gops_wg_prefix(TT_WG_ELEM, pf, sizeof pf);
        if (o->amp_on) /* unscale, skip a step that overflowed */
            snprintf(pf + strlen(pf), sizeof pf - strlen(pf), "const AMP_BIND: u32 = 9u;\n");
        TT_CHECK(tt_gops_make_site(o, &s[n_chunks + c], "adamw_update", pf, args, 1, o->amp_on ? 8 : 7, bufs, kinds,
                                   np, 1, 1, st));
    }
    if (o->amp_on) { /* the loss scaler's update, after every chunk's update */
        uint32_t args[16] = {TT_LOSS_SCALE_INTERVAL};
        tt_gpu_buf bufs[2] = {o->amp, stats};
        static const uint8_t kinds[2] = {TT_GPU_BIND_RW, TT_GPU_BIND_RW};
        TT_CHECK(tt_gops_make_site(o, &s[2 * n_chunks], "amp_update", "", args, 0, 2, bufs, kinds, 1, 1, 1, st));
    }
    return TT_OK;
}

int tt_gop_adamw(tt_gops *o, tt_gsite *s, tt_gpu_buf params, tt_gpu_buf grads, tt_gpu_buf m, tt_gpu_buf v,
                 tt_gpu_buf mask, tt_gpu_buf part, tt_gpu_buf stats, size_t n, tt_status *st) {
    TT_CHECK(tt_gops_check_u32(n, "parameter count", st));
    /* one chunk: parts of tt_gop_norm_part_len(n) elements from 0 */
    size_t per = tt_gop_norm_part_len(n);
    uint32_t np = (uint32_t)((n + per - 1) / per);
    uint32_t *d = malloc((size_t)np * 2 * sizeof *d);
    if (!d) return tt_fail(st, TT_ENOMEM, "out of memory (norm parts)");
    for (uint32_t p = 0; p < np; p++) {
        d[2 * p] = (uint32_t)(p * per);
        d[2 * p + 1] = (uint32_t)((p + 1) * per < n ? (p + 1) * per : n);
    }
    tt_gpu_buf db; /* lives as long as the device, as the sites' other objects */
    int rc = tt_gpu_buffer(o->g, (uint64_t)np * 8, TT_GPU_STORAGE, "norm-parts", &db, st);
    if (rc == TT_OK) rc = tt_gpu_write(o->g, db, 0, d, (uint64_t)np * 8, st);
    free(d);
    TT_CHECK(rc);
    tt_gop_pchunk c = {params, grads, m, v, mask, 0, (uint32_t)n, 0, np};
    return tt_gop_adamw_chunks(o, s, &c, 1, db, np, part, stats, st);
}
