/* gpu_attn_m.c — the matmul-style FlashAttention-2 kernels (variant
 * TT_WEBGPU_ATTN=mt, tt_gops.att_mt): tile planning and site creation for
 * attn_m_fwd, attn_m_bwd_dq (also writes D) and attn_m_bwd_dkdv, called
 * from tt_gop_attention_forward / _backward (gpu_ops.c) with the same
 * buffers and semantics as the default kernels.
 *
 * Every kernel: workgroup = one block of BR rows of one (b, h); tiles of BC
 * rows streamed; (BR/4) x (BC/4) threads, each a 4x4 register tile of the
 * score-like product and 4 rows x OB d-blocks of 4 of the output product
 * (OB = ceil(ceil(hs/4) / (BC/4)), at most 4). Workgroup memory (vec4 rows
 * of KS4 = ceil(hs/4) | 1 vec4, P/dS tiles of BC rows x PS4 = (BR/4) | 1):
 *   fwd   16 * (KS4 * (BR + 2 BC) + BC * PS4 + NT)          (Q, K, V, P, Red)
 *   dq    16 * (KS4 * (2 BR + 2 BC) + BC * PS4) + 8 BR       (Q, dY, K, V, dS, lse, D)
 *   dkdv  16 * (KS4 * (2 BR + 2 BC) + 2 BC * PS4) + 8 BC     (K, V, Q, dY, P, dS, lse, D)
 * (BR, BC): the first of a fixed list that fits the adapter's
 * maxComputeWorkgroupStorageSize and invocations (a pure function). When a
 * kernel has no fitting tile (large head sizes under small limits: e.g. head
 * size 64 under 4 KiB), the attention ops use the default kernels for both
 * forward and backward (tt_gop_attn_m_usable). Tuning (H200 measurements):
 * env TT_WEBGPU_ATTN_M_TILES overrides (BR, BC) per kernel (plan_o).
 * PF (prefix constant, pf_mode; env TT_WEBGPU_ATTN_PF): the three kernels
 * load the next streamed tile into registers while computing the current
 * one (bit-identical either way; on by default on GPUs where it costs at
 * most 8 vec4 per thread and tensor; the site tag says " pf"). The kernels
 * run with or without Dawn's robustness transform: every access is in bounds
 * by construction for the tiles planned here, given the run-time loop
 * bounds args[5..8] that bounds() writes (equal to the kernels' constants).
 *
 * Backward variant TT_WEBGPU_ATTN_BWD=ds[TB] (tt_gops.att_bwd; default off):
 * attn_m2_bwd_dkdv (attn_m_bwd_dkdv with square TB x TB tiles, also computing
 * D and storing every dS tile once into a scratch buffer) then
 * attn_m2_bwd_dq (dq = scale * dS K, one plain product): 5 causal products
 * instead of 7, S and dP computed once. Same two sites, bindings and
 * semantics (stats = [lse | D], dq, dk, dv written); deterministic. Needs 9
 * storage buffers per stage, TB >= 16 at head size 64 (20 KiB) and the
 * scratch (B*NH * nb(nb+1)/2 * TB^2 floats, 207 MB at gpt2) within one
 * binding; else the default backward runs (the site names / tags say which).
 * The scratch (tt_gops.att_ds_buf) is sized at plan time like split_buf and
 * not counted in backend_webgpu.c's device_bytes. Prediction (UNMEASURED,
 * kernel headers): gpt2 on the H200 backward attention ~44-48 ms vs 75.7. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_ops.h"

static uint32_t f2u(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* candidate (br, bc) for kernel `which`: 1 and *t filled when it fits */
static int fit(int which, uint64_t hs, uint64_t br, uint64_t bc, uint32_t storage, uint32_t max_inv, tt_attn_m_tile *t) {
    uint64_t hs4 = (hs + 3) / 4, ks4 = hs4 | 1, tx = bc / 4, nt = (br / 4) * tx, ps4 = (br / 4) | 1, bytes;
    uint64_t ob = tx ? (hs4 + tx - 1) / tx : 0;
    if (br < 4 || bc < 4 || br % 4 || bc % 4 || ob > 4 || nt > max_inv) return 0;
    if (which == 0) bytes = 16 * (ks4 * (br + 2 * bc) + bc * ps4 + nt);
    else if (which == 1) bytes = 16 * (ks4 * (2 * br + 2 * bc) + bc * ps4) + 8 * br;
    else bytes = 16 * (ks4 * (2 * br + 2 * bc) + 2 * bc * ps4) + 8 * bc;
    if (bytes > storage) return 0;
    t->br = (uint32_t)br;
    t->bc = (uint32_t)bc;
    t->ob = (uint32_t)ob;
    t->nt = (uint32_t)nt;
    t->bytes = (uint32_t)bytes;
    return 1;
}

static void limits(uint32_t *storage, uint32_t *max_inv) {
    if (*storage == 0) *storage = 16384;
    if (*max_inv == 0) *max_inv = 256;
    if (*max_inv > 256) *max_inv = 256; /* maxComputeWorkgroupSizeX default */
}

int tt_gop_attn_m_plan(int which, int hs, uint32_t storage, uint32_t max_inv, tt_attn_m_tile *t) {
    /* preference order per kernel (fwd, dq, dkdv): big blocks first (fewer
     * K/V re-reads, more threads). dq takes 64 x 16 before 32 x 32: a 64-row
     * query block reads each K/V tile half as often (H200, gpt2, head size
     * 64 where 64 x 32 does not fit 48 KiB: 245.9 vs 255.1 ms/step,
     * docs/BENCHMARKS.md run 4) */
    static const uint32_t cand[3][13][2] = {
        {{64, 32}, {32, 32}, {64, 16}, {32, 16}, {16, 32}, {16, 16}, {8, 32}, {8, 16}, {16, 8}, {8, 8}, {4, 16}, {4, 8}, {4, 4}},
        {{64, 32}, {64, 16}, {32, 32}, {32, 16}, {16, 32}, {16, 16}, {8, 32}, {8, 16}, {16, 8}, {8, 8}, {4, 16}, {4, 8}, {4, 4}},
        {{64, 32}, {32, 32}, {64, 16}, {32, 16}, {16, 32}, {16, 16}, {8, 32}, {8, 16}, {16, 8}, {8, 8}, {4, 16}, {4, 8}, {4, 4}}};
    if (hs < 1 || hs > 1024 || which < 0 || which > 2) return 0;
    limits(&storage, &max_inv);
    for (size_t c = 0; c < sizeof cand[0] / sizeof cand[0][0]; c++)
        if (fit(which, (uint64_t)hs, cand[which][c][0], cand[which][c][1], storage, max_inv, t)) return 1;
    return 0;
}

/* The plan, or the tuning override TT_WEBGPU_ATTN_M_TILES="BRxBC,BRxBC,BRxBC"
 * (fwd, dq, dkdv; e.g. "64x32,64x16,32x32") where that tile fits (an entry
 * that does not fit, or is malformed, is ignored: the profile tag shows the
 * tile used). */
static int plan_o(const tt_gops *o, int which, int hs, tt_attn_m_tile *t) {
    uint32_t storage = o->info->max_wg_storage, max_inv = o->info->max_invocations;
    const char *e = getenv("TT_WEBGPU_ATTN_M_TILES");
    if (e && hs >= 1 && hs <= 1024) {
        unsigned br[3], bc[3];
        limits(&storage, &max_inv);
        if (sscanf(e, "%ux%u,%ux%u,%ux%u", &br[0], &bc[0], &br[1], &bc[1], &br[2], &bc[2]) == 6 && br[which] <= 256 &&
            bc[which] <= 256 && fit(which, (uint64_t)hs, br[which], bc[which], storage, max_inv, t))
            return 1;
    }
    return tt_gop_attn_m_plan(which, hs, o->info->max_wg_storage, o->info->max_invocations, t);
}

int tt_gop_attn_m_usable(const tt_gops *o, int hs) {
    tt_attn_m_tile t;
    return plan_o(o, 0, hs, &t) && plan_o(o, 1, hs, &t) && plan_o(o, 2, hs, &t);
}

/* PF (software pipelining in attn_m_fwd, attn_m_bwd_dq, attn_m_bwd_dkdv:
 * the next streamed tile's global loads go to registers while the current
 * tile is computed; bit-identical results either way). Env
 * TT_WEBGPU_ATTN_PF, read at site creation: unset (default) on for GPUs
 * where a thread's share of a streamed tile is at most PF_MAX_SLOTS vec4 per
 * tensor (NK = ceil(BC*HS4/NT) = ceil(16*HS4/BR): 4 (fwd), 8 (dq, dkdv) for
 * the H200's head-size-64 tiles; the small tiles of 16 KiB adapters would
 * hold 16+ per tensor, 2 tensors: register spills), off on CPU adapters (no
 * latency to hide; lavapipe's compile time); "0" off (A/B); "1" on for
 * every tile and adapter (tests). -1: the kernel has no PF constant
 * (attn_m2_bwd_dkdv). */
#define PF_MAX_SLOTS 8u
/* NK: a thread's vec4 slots of a streamed BC x HS4 tile */
static uint32_t tile_nk(int hs, const tt_attn_m_tile *t) { return (t->bc * (((uint32_t)hs + 3) / 4) + t->nt - 1) / t->nt; }

static int pf_mode(const tt_gops *o, int hs, const tt_attn_m_tile *t) {
    const char *e = getenv("TT_WEBGPU_ATTN_PF");
    if (e && strcmp(e, "0") == 0) return 0;
    if (e && strcmp(e, "1") == 0) return 1;
    return !o->info->is_cpu && tile_nk(hs, t) <= PF_MAX_SLOTS;
}

static int tile_prefix(const tt_gops *o, const char *name, int hs, const tt_attn_m_tile *t, int pf_on, char *pf,
                       size_t cap, tt_status *st) {
    snprintf(pf, cap, "const HS: u32 = %du;\nconst BR: u32 = %uu;\nconst BC: u32 = %uu;\nconst OB: u32 = %uu;\n"
                      "const VEC: bool = %s;\nconst DYN: bool = %s;\n%s",
             hs, t->br, t->bc, t->ob, hs % 4 == 0 ? "true" : "false", o->info->is_cpu ? "true" : "false",
             pf_on < 0 ? "" : pf_on ? "const PF: bool = true;\n" : "const PF: bool = false;\n");
    /* the pipeline cache keys on name|prefix in 200 chars */
    if (strlen(pf) + 24 > 200) return tt_fail(st, TT_EINVAL, "webgpu %s: kernel prefix too long", name);
    return TT_OK;
}

/* the kernel's prefix and the site's profile tag */
/* the plan of kernel `which`, its prefix in pf, whether it pipelines (*pf_on) */
static int prep(const tt_gops *o, int which, int hs, tt_attn_m_tile *t, int *pf_on, char *pf, size_t cap,
                tt_status *st) {
    static const char *names[3] = {"attn_m_fwd", "attn_m_bwd_dq", "attn_m_bwd_dkdv"};
    if (!plan_o(o, which, hs, t))
        return tt_fail(st, TT_EUNSUP, "webgpu %s: head size %d does not fit the adapter's workgroup limits", names[which],
                       hs);
    *pf_on = pf_mode(o, hs, t);
    return tile_prefix(o, names[which], hs, t, *pf_on, pf, cap, st);
}

/* args[5..8]: the loop bounds HS4, BC, NK, NL as run-time values (DYN; the
 * kernels' constants of the same names, attn_m_common.wgsl: their loops and
 * register slots stay in bounds because these equal them) */
static void bounds(uint32_t args[16], int hs, const tt_attn_m_tile *t) {
    args[5] = (uint32_t)(hs + 3) / 4;
    args[6] = t->bc;
    args[7] = tile_nk(hs, t);
    args[8] = (t->bc + t->nt - 1) / t->nt;
}

static void tag(tt_gsite *s, const tt_attn_m_tile *t, int pf_on) {
    snprintf(s->tag, sizeof s->tag, "br%u bc%u ob%u nt%u %uB%s", t->br, t->bc, t->ob, t->nt, t->bytes,
             pf_on ? " pf" : "");
}

int tt_gop_attn_m_forward(tt_gops *o, tt_gsite *s, tt_gref y, tt_gref stats, tt_gref q, tt_gref k, tt_gref v, int B,
                          int T, int C, int NH, tt_status *st) {
    char pf[200];
    int pf_on;
    tt_attn_m_tile t;
    int hs = C / NH;
    if (q.off || k.off || v.off || y.off || stats.off)
        return tt_fail(st, TT_EINVAL, "webgpu attention: tensors must start their buffers");
    TT_CHECK(prep(o, 0, hs, &t, &pf_on, pf, sizeof pf, st));
    uint32_t args[16] = {(uint32_t)B, (uint32_t)T, (uint32_t)C, (uint32_t)NH, f2u(1.0f / sqrtf((float)hs))};
    bounds(args, hs, &t);
    tt_gpu_buf bufs[5] = {q.buf, k.buf, v.buf, y.buf, stats.buf};
    static const uint8_t kinds[5] = {TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_RW,
                                     TT_GPU_BIND_RW};
    TT_CHECK(tt_gops_make_site(o, s, "attn_m_fwd", pf, args, 0, 5, bufs, kinds, ((uint32_t)T + t.br - 1) / t.br,
                               (uint32_t)NH, (uint32_t)B, st));
    s->flops = 2.0 * B * T * (T + 1.0) * C; /* causal: T(T+1)/2 pairs x 2 products x 2 flops x C */
    tag(s, &t, pf_on);
    return TT_OK;
}

/* ---- TT_WEBGPU_ATTN_BWD=ds: attn_m2_bwd_dkdv + attn_m2_bwd_dq ------------
 * The default backward computes S = QK^T and dP = dY V^T twice (in dq and in
 * dk/dv: 7 causal products). Here attn_m2_bwd_dkdv (attn_m_bwd_dkdv with
 * square tiles TB x TB) also computes D and stores each dS tile once
 * (B*NH * nb(nb+1)/2 tiles of TB*TB floats: 207 MB at gpt2), and
 * attn_m2_bwd_dq is one plain product dq = scale * dS K: 5 products. The
 * kernel headers give the layout and the (UNMEASURED) speed prediction.
 * Needs 9 storage buffers per stage and the scratch within one binding;
 * else (or if no tile fits) the default backward runs. */
int tt_gop_attn_m2_plan(int hs, int B, int T, int NH, uint32_t storage, uint32_t max_inv, uint32_t max_sb,
                        uint64_t max_binding, uint32_t tb_force, tt_attn_m2_plan *p) {
    static const uint32_t tbs[4] = {32, 16, 8, 4};
    if (hs < 1 || hs > 1024 || B < 1 || T < 1 || NH < 1 || max_sb < 9) return 0;
    limits(&storage, &max_inv);
    if (max_binding == 0) max_binding = 128ull << 20;
    uint64_t hs4 = ((uint64_t)hs + 3) / 4, ks4 = hs4 | 1;
    uint32_t ob = hs4 <= 4 ? 1 : hs4 <= 16 ? 2 : 4;
    uint32_t tx = (uint32_t)((hs4 + ob - 1) / ob);
    for (int c = 0; c < 4; c++) {
        uint32_t tb = tbs[c];
        if (tb_force && tb != tb_force) continue;
        if (!fit(2, (uint64_t)hs, tb, tb, storage, max_inv, &p->kv)) continue;
        int ok = 0;
        for (uint32_t mq = 2; mq >= 1 && !ok; mq--) {
            uint64_t bq = (uint64_t)mq * tb, nt = bq / 4 * tx, pk4 = (tb / 4) | 1;
            uint64_t bytes = 16 * (bq * pk4 + tb * ks4);
            if (nt > max_inv || bytes > storage) continue;
            p->bq = (uint32_t)bq;
            p->nt_q = (uint32_t)nt;
            p->bytes_q = (uint32_t)bytes;
            ok = 1;
        }
        if (!ok) continue;
        uint64_t nb = ((uint64_t)T + tb - 1) / tb;
        uint64_t elems = (uint64_t)B * NH * (nb * (nb + 1) / 2) * tb * tb;
        if (elems * 4 > max_binding || elems >= (1ull << 32)) continue;
        p->tb = tb;
        p->ob = ob;
        p->tx = tx;
        p->ds_elems = elems;
        return 1;
    }
    return 0;
}

static int m2_backward(tt_gops *o, tt_gsite *s, const tt_attn_m2_plan *p, tt_gref dq, tt_gref dk, tt_gref dv,
                       tt_gref stats, tt_gref q, tt_gref k, tt_gref v, tt_gref y, tt_gref dy, int B, int T, int C,
                       int NH, tt_status *st) {
    char pf[200];
    int hs = C / NH;
    if (p->ds_elems > o->att_ds_elems) { /* grown at plan time, never inside a step (as split_buf) */
        TT_CHECK(tt_gpu_buffer(o->g, p->ds_elems * 4, TT_GPU_STORAGE, "attn-ds-scratch", &o->att_ds_buf, st));
        o->att_ds_elems = (size_t)p->ds_elems;
    }
    uint32_t args[16] = {(uint32_t)B, (uint32_t)T, (uint32_t)C, (uint32_t)NH, f2u(1.0f / sqrtf((float)hs))};
    args[5] = (uint32_t)(hs + 3) / 4;
    args[6] = p->tb;
    TT_CHECK(tile_prefix(o, "attn_m2_bwd_dkdv", hs, &p->kv, -1, pf, sizeof pf, st));
    {
        tt_gpu_buf bufs[9] = {q.buf, k.buf, v.buf, y.buf, dy.buf, stats.buf, dk.buf, dv.buf, o->att_ds_buf};
        static const uint8_t kinds[9] = {TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_READ,
                                         TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_RW,
                                         TT_GPU_BIND_RW,   TT_GPU_BIND_RW,   TT_GPU_BIND_RW};
        TT_CHECK(tt_gops_make_site(o, &s[0], "attn_m2_bwd_dkdv", pf, args, 0, 9, bufs, kinds,
                                   ((uint32_t)T + p->tb - 1) / p->tb, (uint32_t)NH, (uint32_t)B, st));
        s[0].flops = 2.0 * B * T * (T + 1.0) * C * 2.0; /* S, dP, dV, dK */
        snprintf(s[0].tag, sizeof s[0].tag, "ds tb%u ob%u nt%u %uB %.0fMB", p->tb, p->kv.ob, p->kv.nt, p->kv.bytes,
                 p->ds_elems * 4.0 / 1e6);
    }
    snprintf(pf, sizeof pf,
             "const HS: u32 = %du;\nconst TB: u32 = %uu;\nconst BQ: u32 = %uu;\nconst OB: u32 = %uu;\n"
             "const TX: u32 = %uu;\nconst VEC: bool = %s;\nconst DYN: bool = %s;\n",
             hs, p->tb, p->bq, p->ob, p->tx, hs % 4 == 0 ? "true" : "false", o->info->is_cpu ? "true" : "false");
    if (strlen(pf) + 24 > 200) return tt_fail(st, TT_EINVAL, "webgpu attn_m2_bwd_dq: kernel prefix too long");
    args[6] = p->tb / 4;
    tt_gpu_buf bufs[3] = {k.buf, o->att_ds_buf, dq.buf};
    static const uint8_t kinds[3] = {TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_RW};
    TT_CHECK(tt_gops_make_site(o, &s[1], "attn_m2_bwd_dq", pf, args, 0, 3, bufs, kinds,
                               ((uint32_t)T + p->bq - 1) / p->bq, (uint32_t)NH, (uint32_t)B, st));
    s[1].flops = 2.0 * B * T * (T + 1.0) * C * 0.5; /* dS K */
    snprintf(s[1].tag, sizeof s[1].tag, "ds tb%u bq%u ob%u nt%u %uB", p->tb, p->bq, p->ob, p->nt_q, p->bytes_q);
    return TT_OK;
}

/* the variant's plan on this adapter (0: not selected or does not fit) */
static int m2_plan_o(const tt_gops *o, int hs, int B, int T, int NH, tt_attn_m2_plan *p) {
    const tt_gpu_info *in = o->info;
    uint64_t mb = in->max_storage_binding;
    if (in->max_buffer && (mb == 0 || in->max_buffer < mb)) mb = in->max_buffer;
    return o->att_bwd == 1 && tt_gop_attn_m2_plan(hs, B, T, NH, in->max_wg_storage, in->max_invocations,
                                                  in->max_storage_per_stage, mb, o->att_bwd_tb, p);
}

int tt_gop_attn_m_backward(tt_gops *o, tt_gsite *s, tt_gref dq, tt_gref dk, tt_gref dv, tt_gref stats, tt_gref q,
                           tt_gref k, tt_gref v, tt_gref y, tt_gref dy, int B, int T, int C, int NH, tt_status *st) {
    char pf[200];
    int pf_on;
    tt_attn_m_tile t;
    tt_attn_m2_plan p2;
    int hs = C / NH;
    if (q.off || k.off || v.off || y.off || dy.off || dq.off || dk.off || dv.off || stats.off)
        return tt_fail(st, TT_EINVAL, "webgpu attention: tensors must start their buffers");
    if (m2_plan_o(o, hs, B, T, NH, &p2))
        return m2_backward(o, s, &p2, dq, dk, dv, stats, q, k, v, y, dy, B, T, C, NH, st);
    uint32_t args[16] = {(uint32_t)B, (uint32_t)T, (uint32_t)C, (uint32_t)NH, f2u(1.0f / sqrtf((float)hs))};
    TT_CHECK(prep(o, 1, hs, &t, &pf_on, pf, sizeof pf, st));
    bounds(args, hs, &t);
    {
        tt_gpu_buf bufs[7] = {q.buf, k.buf, v.buf, y.buf, dy.buf, stats.buf, dq.buf};
        static const uint8_t kinds[7] = {TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_READ,
                                         TT_GPU_BIND_READ, TT_GPU_BIND_RW,   TT_GPU_BIND_RW};
        TT_CHECK(tt_gops_make_site(o, &s[0], "attn_m_bwd_dq", pf, args, 0, 7, bufs, kinds,
                                   ((uint32_t)T + t.br - 1) / t.br, (uint32_t)NH, (uint32_t)B, st));
        s[0].flops = 2.0 * B * T * (T + 1.0) * C * 1.5;
        tag(&s[0], &t, pf_on);
    }
    TT_CHECK(prep(o, 2, hs, &t, &pf_on, pf, sizeof pf, st));
    bounds(args, hs, &t);
    tt_gpu_buf bufs[7] = {q.buf, k.buf, v.buf, dy.buf, stats.buf, dk.buf, dv.buf};
    static const uint8_t kinds[7] = {TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_READ,
                                     TT_GPU_BIND_READ, TT_GPU_BIND_RW,   TT_GPU_BIND_RW};
    TT_CHECK(tt_gops_make_site(o, &s[1], "attn_m_bwd_dkdv", pf, args, 0, 7, bufs, kinds,
                               ((uint32_t)T + t.br - 1) / t.br, (uint32_t)NH, (uint32_t)B, st));
    s[1].flops = 2.0 * B * T * (T + 1.0) * C * 2.0;
    tag(&s[1], &t, pf_on);
    return TT_OK;
}
