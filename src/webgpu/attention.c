/* attention.c — the WebGPU causal-attention planner (gpu_ops.h):
 * FlashAttention-2 written like the matmul (attention_forward.wgsl,
 * attention_backward_dq.wgsl (also writes D), attention_backward_dkdv.wgsl,
 * sharing attention_common.wgsl), and for head sizes whose tiles do not fit
 * the adapter (above 128, or large ones under small workgroup-memory
 * limits) the row-parallel kernels attention_rows_*.wgsl. Both store only
 * y and the row logsumexp; backward recomputes P. stats = [lse | D].
 *
 * Tiled kernels: workgroup = one block of BR rows of one (b, h); tiles of
 * BC rows streamed; NT = (BR/4) x (BC/4) threads, each a 4x4 register tile
 * of the score-like product and 4 rows x OB d-blocks of 4 of the output
 * product (OB = ceil(ceil(hs/4) / (BC/4)), at most 4). The backward kernels
 * run two such layouts (2 NT threads): one half computes P (and dv), the
 * other dP, dS (and dk), so a thread holds half the accumulators and twice
 * the threads share the same workgroup memory. Workgroup memory (vec4 rows
 * of KS4 = ceil(hs/4) | 1 vec4, P/dS tiles of BC rows x PS4 = (BR/4) | 1):
 *   fwd   16 * (KS4 * (BR + 2 BC) + BC * PS4 + NT)          (Q, K, V, P, Red)
 *   dq    16 * (KS4 * (2 BR + 2 BC) + BC * PS4) + 8 BR       (Q, dY, K, V, dS, lse, D)
 *   dkdv  16 * (KS4 * (2 BR + 2 BC) + 2 BC * PS4) + 8 BC     (K, V, Q, dY, P, dS, lse, D)
 * (BR, BC): the first of a fixed list that fits the adapter's
 * maxComputeWorkgroupStorageSize and invocations (a pure function). PF
 * (prefix constant): the kernels load the next streamed tile into registers
 * while computing the current one (bit-identical either way; on for GPUs
 * where it costs at most PF_MAX_SLOTS vec4 per thread and tensor; the site
 * tag says " pf"). The kernels run with or without Dawn's robustness
 * transform: every access is in bounds by construction for the tiles
 * planned here, given the run-time loop bounds args[5..8] that bounds()
 * writes (equal to the kernels' constants).
 *
 * Backward outputs at element offsets (args[10..11]): dq, dk, dv may share
 * one buffer (the backend's "dqkv"). WebGPU refuses two writable bindings
 * of overlapping ranges in one dispatch, so where dk and dv share a buffer
 * the dk/dv kernels write both through the dk binding (prefix KV1) and a
 * 16-byte placeholder (tt_gops.nil_buf) takes dv's binding.
 *
 * Dropout (the _drop ops): the same kernels in their dropout variant
 * (gpu_ops.c: prefix DROP_BIND, their "//!drop " lines, the keys buffer as
 * the last binding, the key slot in args[15]); forward drops the
 * probabilities that multiply V (the row sums l stay whole), backward
 * recomputes the masks: dV = Pd^T dY, dS = P (M dP scale - D).
 *
 * dS-storing backward (3 sites instead of 2): where the tiled kernels fit
 * and a dS scratch of B*NH * nb(nb+1)/2 * G^2 floats (the causal G x G blocks,
 * nb = ceil(T/G), G = the largest of the dq and dk/dv tiles' BR and BC)
 * fits one binding and one buffer of the adapter: attention_backward_d
 * (D, as the dq kernel's prologue computes it), attention_backward_dkdv in
 * its "//!ds " variant (also stores each tile's dS), then
 * attention_backward_dq_ds (dq = scale dS K in the dq kernel's layout and
 * order): 5 causal products instead of 7. Bit-identical to the pair, for
 * every head size: both backward kernels compute S as (q scale) . k (fma
 * chains over d in the same order; dk/dv accumulates dk = dS^T (q scale)),
 * so S, P and dS = P (dP - D) (dP and D the same chains) agree bit for bit;
 * masked entries are exact zeros in both. Shapes whose scratch does not fit
 * (or adapters with too few storage buffers per stage) run the pair.
 * The scratch (tt_gops.ds_buf) is sized at plan time like the split-K
 * scratch, shared by every layer, counted in the backend's memory figures.
 *
 * The f16 tier on subgroup matrices (attention_sgmat_*.wgsl, sharing
 * attention_common and attention_sgmat_common): under tt_gops.f16, on an
 * adapter that lists the 16 x 16 x 16 f16 x f16 -> f32 configuration and
 * runs subgroups of one size SG (a multiple of 16), for head sizes that are
 * multiples of 16, where the tiles fit (sga_prefix; with dropout too, in its
 * variant as above): the
 * forward attention_sgmat_forward, the backward attention_backward_d (D,
 * as the dS-storing backward), attention_sgmat_backward_dkdv, then
 * attention_sgmat_backward_dq. NSG = 4 subgroups a workgroup, a block of
 * BR = 64 rows (16 a subgroup), streamed tiles of BC rows (forward 64, the
 * backward 32), f16 operands, f32 accumulation, softmax and P, dS in f32
 * until rounded for their products; the same stats = [lse | D]. Workgroup
 * memory: two f16 tiles of BC x (HS + 8), per subgroup f32 16 x (BC + 4)
 * blocks (forward one, backward two) and f16 16 x (BC + 8) blocks (forward
 * and dq one, dk/dv two), the forward's rescale flags (4 NSG), and dk/dv's
 * lse and D of a tile (8 BC). Each pass
 * is chosen on its own: where one does not fit, it runs the f32 kernels
 * (the forward's only reach into the backward is lse).
 *
 * Row kernels (the fallback): LANES = 4 threads per row (query row in
 * attention_rows_forward and _backward_dq, key row in _backward_dkdv)
 * splitting the other side's rows of each tile, BR = 64 / LANES rows per
 * workgroup, key tiles of BC rows; BC is halved, then LANES dropped to 1,
 * until the tiles fit the adapter's workgroup storage. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gpu_ops.h"

/* args[0..4] of every attention kernel: B, T, C, NH, scale = 1/sqrt(hs) */
static void attn_args(uint32_t args[16], int B, int T, int C, int NH) {
    memset(args, 0, 16 * sizeof *args);
    args[0] = (uint32_t)B;
    args[1] = (uint32_t)T;
    args[2] = (uint32_t)C;
    args[3] = (uint32_t)NH;
    args[4] = tt_gops_f2u(1.0f / sqrtf((float)(C / NH)));
}

/* args[12..14]: the element offsets of q, k, v in their buffers (one
 * buffer may hold all three: the q, k, v projections' batched output) */
static void qkv_offs(uint32_t args[16], tt_gref q, tt_gref k, tt_gref v) {
    args[12] = q.off;
    args[13] = k.off;
    args[14] = v.off;
}

/* args[10..11] of the backward kernels: the element offsets of their
 * outputs, dq (o1) or dk (o1) and dv (o2) (one buffer may hold all three:
 * the weight gradients of q, k, v then run as one batched product) */
static void out_offs(uint32_t args[16], tt_gref o1, tt_gref o2) {
    args[10] = o1.off;
    args[11] = o2.off;
}

/* the dk/dv kernels' prefix constant KV1 (dk and dv in one buffer: both
 * written through the dk binding) and, for KV1, the placeholder at the dv
 * binding *dv_slot (see the header) */
static int kv_bind(tt_gops *o, tt_gref dk, tt_gref dv, char *pf, size_t cap, tt_gpu_buf *dv_slot, tt_status *st) {
    const int one = dk.buf == dv.buf;
    size_t n = strlen(pf);
    snprintf(pf + n, cap - n, "const KV1: bool = %s;\n", one ? "true" : "false");
    if (!one) return TT_OK;
    if (!o->nil_ok) {
        TT_CHECK(tt_gpu_buffer(o->g, 16, TT_GPU_STORAGE, "unused-binding", &o->nil_buf, st));
        o->nil_ok = 1;
    }
    *dv_slot = o->nil_buf;
    return TT_OK;
}

/* the dropout variant of a site with n_buf buffers: prefix, keys buffer,
 * slot (slot < 0: none, nothing changes) */
static int drop_site(const tt_gops *o, int slot, char *pf, size_t cap, uint32_t args[16], tt_gpu_buf *bufs, int *n_buf,
                     tt_status *st) {
    if (slot < 0) return TT_OK;
    if ((uint32_t)slot >= o->dropk_slots)
        return tt_fail(st, TT_EINVAL, "webgpu attention: dropout key slot %d outside the keys buffer (%u slots)", slot,
                       o->dropk_slots);
    char base[640];
    snprintf(base, sizeof base, "%s", pf);
    tt_gops_drop_prefix((uint32_t)(*n_buf + 1), base, pf, cap);
    args[15] = (uint32_t)slot;
    bufs[(*n_buf)++] = o->dropk;
    return TT_OK;
}

/* ---- tiled kernels: plan ------------------------------------------------ */
/* candidate (br, bc) for kernel `which`: 1 and *t filled when it fits */
static int fit(int which, uint64_t hs, uint64_t br, uint64_t bc, uint32_t storage, uint32_t max_inv, tt_attn_tile *t) {
    uint64_t hs4 = (hs + 3) / 4, ks4 = hs4 | 1, tx = bc / 4, nt = (br / 4) * tx, ps4 = (br / 4) | 1, bytes;
    uint64_t ob = tx ? (hs4 + tx - 1) / tx : 0, threads = which == 0 ? nt : 2 * nt;
    if (br < 4 || bc < 4 || br % 4 || bc % 4 || ob > 4 || threads > max_inv) return 0;
    if (which == 0) bytes = 16 * (ks4 * (br + 2 * bc) + bc * ps4 + nt);
    else if (which == 1) bytes = 16 * (ks4 * (2 * br + 2 * bc) + bc * ps4) + 8 * br;
    else bytes = 16 * (ks4 * (2 * br + 2 * bc) + 2 * bc * ps4) + 8 * bc;
    if (bytes > storage) return 0;
    t->br = (uint32_t)br;
    t->bc = (uint32_t)bc;
    t->ob = (uint32_t)ob;
    t->nt = (uint32_t)nt;
    t->threads = (uint32_t)threads;
    t->bytes = (uint32_t)bytes;
    t->spl = 1;
    return 1;
}

int tt_gop_attention_plan(int which, int hs, uint32_t storage, uint32_t max_inv, tt_attn_tile *t) {
    /* preference order per kernel (fwd, dq, dkdv): big blocks first (fewer
     * K/V re-reads, more threads). dq takes 64 x 16 before 32 x 32: a 64-row
     * query block reads each K/V tile half as often (at head size 64, where
     * 64 x 32 does not fit 48 KiB; docs/BENCHMARKS.md) */
    static const uint32_t cand[3][13][2] = {
        {{64, 32}, {32, 32}, {64, 16}, {32, 16}, {16, 32}, {16, 16}, {8, 32}, {8, 16}, {16, 8}, {8, 8}, {4, 16}, {4, 8}, {4, 4}},
        {{64, 32}, {64, 16}, {32, 32}, {32, 16}, {16, 32}, {16, 16}, {8, 32}, {8, 16}, {16, 8}, {8, 8}, {4, 16}, {4, 8}, {4, 4}},
        {{64, 32}, {32, 32}, {64, 16}, {32, 16}, {16, 32}, {16, 16}, {8, 32}, {8, 16}, {16, 8}, {8, 8}, {4, 16}, {4, 8}, {4, 4}}};
    if (hs < 1 || hs > 1024 || which < 0 || which > 2) return 0;
    if (storage == 0) storage = 16384;
    if (max_inv == 0) max_inv = 256;
    if (max_inv > 256) max_inv = 256; /* maxComputeWorkgroupSizeX default */
    for (size_t c = 0; c < sizeof cand[0] / sizeof cand[0][0]; c++)
        if (fit(which, (uint64_t)hs, cand[which][c][0], cand[which][c][1], storage, max_inv, t)) return 1;
    return 0;
}

int tt_gop_attention_split(int which, int hs, uint32_t storage, uint32_t max_inv, tt_attn_tile *t) {
    uint32_t hs4 = ((uint32_t)hs + 3) / 4, tx = t->bc / 4, plain = 2 * t->nt;
    if (storage == 0) storage = 16384;
    if (max_inv == 0) max_inv = 256;
    if (max_inv > 256) max_inv = 256;
    /* an even ob: the halves hold whole blocks, no more idle ones than before */
    if (which != 2 || t->spl != 1 || t->threads != plain || t->ob % 2 || 2 * plain > max_inv || t->bytes > storage)
        return 0;
    t->threads = 2 * plain;
    t->spl = 2;
    t->ob = (hs4 + 2 * tx - 1) / (2 * tx);
    return 1;
}

static int plan_o(const tt_gops *o, int which, int hs, tt_attn_tile *t) {
    return tt_gop_attention_plan(which, hs, o->info->max_wg_storage, o->info->max_invocations, t);
}

/* 1 when all three tiled kernels fit this adapter for head size hs */
static int tiled_usable(const tt_gops *o, int hs) {
    tt_attn_tile t;
    return plan_o(o, 0, hs, &t) && plan_o(o, 1, hs, &t) && plan_o(o, 2, hs, &t);
}

/* PF: on for GPUs where a thread's share of a streamed tile is at most
 * PF_MAX_SLOTS vec4 per tensor (NK = ceil(BC*HS4/threads): 4 (fwd), 2 (dq),
 * 4 (dkdv) for the head-size-64 tiles of a 48 KiB adapter; the small tiles
 * of 16 KiB adapters would hold 16+ per tensor, 2 tensors: register
 * spills), off on CPU adapters (no latency to hide; compile time);
 * tests force it on (tt_gops.attn_pf, hook TT_WEBGPU_ATTN_PF=1). */
#define PF_MAX_SLOTS 8u
/* NK: a thread's vec4 slots of a streamed BC x HS4 tile */
static uint32_t tile_nk(int hs, const tt_attn_tile *t) {
    return (t->bc * (((uint32_t)hs + 3) / 4) + t->threads - 1) / t->threads;
}

static int pf_mode(const tt_gops *o, int hs, const tt_attn_tile *t) {
    if (o->attn_pf) return o->attn_pf > 0;
    return !o->info->is_cpu && tile_nk(hs, t) <= PF_MAX_SLOTS;
}

/* the split layout of dk/dv (SPL 2, tt_gop_attention_split): GPUs, where
 * it fits, without dropout; CPU adapters keep the plain layout (nothing to
 * gain, compile time); tests force it on or off (tt_gops.attn_split, hook
 * TT_WEBGPU_ATTN_SPLIT) */
static int split_mode(const tt_gops *o, int which, int hs, int drop, tt_attn_tile *t) {
    int on = o->attn_split & TT_ATTN_SPLIT_FORCED ? o->attn_split & 1 : !o->info->is_cpu;
    if (which != 2 || drop || !on) return 0;
    return tt_gop_attention_split(which, hs, o->info->max_wg_storage, o->info->max_invocations, t);
}

/* the plan of kernel `which`, its prefix in pf, whether it pipelines
 * (*pf_on); dk/dv's with its layout (SPL; drop: a dropout site) */
static int prep(const tt_gops *o, int which, int hs, int drop, tt_attn_tile *t, int *pf_on, char *pf, size_t cap,
                tt_status *st) {
    static const char *names[3] = {"attention_forward", "attention_backward_dq", "attention_backward_dkdv"};
    if (!plan_o(o, which, hs, t))
        return tt_fail(st, TT_EUNSUP, "webgpu %s: head size %d does not fit the adapter's workgroup limits", names[which],
                       hs);
    if (which == 2) split_mode(o, which, hs, drop, t); /* t: the split tile (threads, ob, spl) */
    *pf_on = pf_mode(o, hs, t);
    snprintf(pf, cap, "const HS: u32 = %du;\nconst BR: u32 = %uu;\nconst BC: u32 = %uu;\nconst OB: u32 = %uu;\n"
                      "const VEC: bool = %s;\nconst DYN: bool = %s;\nconst PF: bool = %s;\n",
             hs, t->br, t->bc, t->ob, hs % 4 == 0 ? "true" : "false", o->info->is_cpu ? "true" : "false",
             *pf_on ? "true" : "false");
    if (which == 2) {
        size_t n = strlen(pf);
        snprintf(pf + n, cap - n, "const SPL: u32 = %uu;\n", t->spl);
    }
    return TT_OK;
}

/* args[5..8]: the loop bounds HS4, BC, NK, NL as run-time values (DYN; the
 * kernels' constants of the same names, attention_common.wgsl: their loops
 * and register slots stay in bounds because these equal them) */
static void bounds(uint32_t args[16], int hs, const tt_attn_tile *t) {
    args[5] = (uint32_t)(hs + 3) / 4;
    args[6] = t->bc;
    args[7] = tile_nk(hs, t);
    args[8] = (t->bc + t->threads - 1) / t->threads;
}

static void tag(tt_gsite *s, const tt_attn_tile *t, int pf_on) {
    snprintf(s->tag, sizeof s->tag, "br%u bc%u ob%u nt%u %uB%s%s", t->br, t->bc, t->ob, t->threads, t->bytes,
             pf_on ? " pf" : "", t->spl == 2 ? " s2" : "");
}

static const uint8_t FWD_KINDS[6] = {TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_READ,
                                     TT_GPU_BIND_RW,   TT_GPU_BIND_RW,   TT_GPU_BIND_READ};

static int tiled_forward(tt_gops *o, tt_gsite *s, tt_gref y, tt_gref stats, tt_gref q, tt_gref k, tt_gref v, int B,
                         int T, int C, int NH, int slot, tt_status *st) {
    char pf[320];
    int pf_on;
    tt_attn_tile t;
    int hs = C / NH;
    TT_CHECK(prep(o, 0, hs, slot >= 0, &t, &pf_on, pf, sizeof pf, st));
    uint32_t args[16];
    attn_args(args, B, T, C, NH);
    qkv_offs(args, q, k, v);
    bounds(args, hs, &t);
    tt_gpu_buf bufs[6] = {q.buf, k.buf, v.buf, y.buf, stats.buf};
    int nb = 5;
    TT_CHECK(drop_site(o, slot, pf, sizeof pf, args, bufs, &nb, st));
    TT_CHECK(tt_gops_make_site(o, s, "attention_forward", pf, args, 0, nb, bufs, FWD_KINDS, ((uint32_t)T + t.br - 1) / t.br,
                               (uint32_t)NH, (uint32_t)B, st));
    s->flops = 2.0 * B * T * (T + 1.0) * C; /* causal: T(T+1)/2 pairs x 2 products x 2 flops x C */
    tag(s, &t, pf_on);
    return TT_OK;
}

/* The two backward sites: names[0] (D and dq; reads q, k, v, y, dy, writes
 * stats' D half and dq) then names[1] (dk, dv; reads q, k, v, dy, stats),
 * each with its prefix, arguments and row blocks of br[i] rows. */
static int backward_sites(tt_gops *o, tt_gsite *s, const char *const names[2], char pf[2][256],
                          uint32_t args[2][16], const uint32_t br[2], tt_gref dq, tt_gref dk, tt_gref dv, tt_gref stats,
                          tt_gref q, tt_gref k, tt_gref v, tt_gref y, tt_gref dy, int B, int T, int C, int NH,
                          int slot, tt_status *st) {
    static const uint8_t kinds[8] = {TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_READ,
                                     TT_GPU_BIND_READ, TT_GPU_BIND_RW,   TT_GPU_BIND_RW,   TT_GPU_BIND_READ};
    tt_gpu_buf bufs[2][8] = {{q.buf, k.buf, v.buf, y.buf, dy.buf, stats.buf, dq.buf},
                             {q.buf, k.buf, v.buf, dy.buf, stats.buf, dk.buf, dv.buf}};
    static const double share[2] = {1.5, 2.0}; /* causal products of each: 3 and 4 of the forward's 2 */
    TT_CHECK(kv_bind(o, dk, dv, pf[1], sizeof pf[1], &bufs[1][6], st));
    for (int i = 0; i < 2; i++) {
        int nb = 7;
        TT_CHECK(drop_site(o, slot, pf[i], sizeof pf[i], args[i], bufs[i], &nb, st));
        TT_CHECK(tt_gops_make_site(o, &s[i], names[i], pf[i], args[i], 0, nb, bufs[i], kinds,
                                   ((uint32_t)T + br[i] - 1) / br[i], (uint32_t)NH, (uint32_t)B, st));
        s[i].flops = 2.0 * B * T * (T + 1.0) * C * share[i];
    }
    return TT_OK;
}

static int tiled_backward(tt_gops *o, tt_gsite *s, tt_gref dq, tt_gref dk, tt_gref dv, tt_gref stats, tt_gref q,
                          tt_gref k, tt_gref v, tt_gref y, tt_gref dy, int B, int T, int C, int NH, int slot,
                          tt_status *st) {
    static const char *const names[2] = {"attention_backward_dq", "attention_backward_dkdv"};
    char pf[2][256];
    int pf_on[2];
    tt_attn_tile t[2];
    uint32_t args[2][16], br[2];
    int hs = C / NH;
    for (int i = 0; i < 2; i++) {
        TT_CHECK(prep(o, 1 + i, hs, slot >= 0, &t[i], &pf_on[i], pf[i], sizeof pf[i], st));
        attn_args(args[i], B, T, C, NH);
        qkv_offs(args[i], q, k, v);
        bounds(args[i], hs, &t[i]);
        br[i] = t[i].br;
    }
    out_offs(args[0], dq, dq);
    out_offs(args[1], dk, dv);
    TT_CHECK(backward_sites(o, s, names, pf, args, br, dq, dk, dv, stats, q, k, v, y, dy, B, T, C, NH, slot, st));
    for (int i = 0; i < 2; i++) tag(&s[i], &t[i], pf_on[i]);
    return TT_OK;
}

/* attention_backward_d: D = rowsum(dY o Y) into stats' second half, one
 * thread per row (the dS-storing and the subgroup-matrix backward) */
static int d_site(tt_gops *o, tt_gsite *s, tt_gref y, tt_gref dy, tt_gref stats, int B, int T, int C, int NH,
                  tt_status *st) {
    char pf[128];
    uint32_t args[16], x, yy;
    int hs = C / NH;
    attn_args(args, B, T, C, NH);
    snprintf(pf, sizeof pf, "const HS: u32 = %du;\nconst VEC: bool = %s;\nconst WG: u32 = %uu;\n", hs,
             hs % 4 == 0 ? "true" : "false", TT_WG_ELEM);
    static const uint8_t kinds[3] = {TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_RW};
    tt_gpu_buf bufs[3] = {y.buf, dy.buf, stats.buf};
    tt_gops_grid1(o, ((uint64_t)B * NH * T + TT_WG_ELEM - 1) / TT_WG_ELEM, &x, &yy);
    TT_CHECK(tt_gops_make_site(o, s, "attention_backward_d", pf, args, 0, 3, bufs, kinds, x, yy, 1, st));
    snprintf(s->tag, sizeof s->tag, "rows %d", B * NH * T);
    return TT_OK;
}

/* ---- the f16 tier on subgroup matrices -------------------------------------- */
#define SGA_NSG 4u
static const uint32_t SGA_BC[3] = {64, 32, 32}; /* forward, dq, dk/dv */

static uint64_t sga_bytes(int which, uint64_t hs, uint64_t bc) {
    const uint64_t tiles = 2 * 2 * bc * (hs + 8), rows = SGA_NSG * 16, f32b = rows * (bc + 4) * 4,
                   f16b = rows * (bc + 8) * 2;
    if (which == 0) return tiles + f32b + f16b + 4 * SGA_NSG;
    if (which == 1) return tiles + 2 * f32b + f16b;
    return tiles + 2 * f32b + 2 * f16b + 8 * bc;
}

uint64_t tt_gop_attention_sgmat_plan(int which, int hs, const tt_gpu_info *in) {
    if (which < 0 || which > 2 || hs < 16 || hs % 16 || hs > 1024) return 0;
    const uint32_t sg = in->subgroup_max, bc = SGA_BC[which], br = SGA_NSG * 16, nth = SGA_NSG * sg, h = (uint32_t)hs;
    if (in->sgmat_m != 16 || in->sgmat_n != 16 || in->sgmat_k != 16 || !sg || in->subgroup_min != sg || sg % 16)
        return 0;
    const uint32_t lpr = sg / 16; /* lanes per row */
    if (nth > in->max_invocations || bc % lpr || h % lpr || (br * h) % (4 * nth) || (bc * h) % (4 * nth) ||
        (which == 0 && h > bc))
        return 0;
    const uint64_t bytes = sga_bytes(which, h, bc);
    return bytes <= in->max_wg_storage ? bytes : 0;
}

const char *tt_gop_attention_sgmat_name(int which) {
    static const char *const names[3] = {"attention_sgmat_forward", "attention_sgmat_backward_dq",
                                         "attention_sgmat_backward_dkdv"};
    return which >= 0 && which < 3 ? names[which] : NULL;
}

int tt_gop_attention_sgmat_buffers(int which) {
    static const int n[3] = {5, 6, 7};
    return which >= 0 && which < 3 ? n[which] : 0;
}

/* each lane's skew (SKEW: 2 bits a lane of 32, lane L at bit 2L; used by
 * the forward and dq): a lane owns CPL = BC/LPR columns of a row of its
 * subgroup's f32 16 x BC blocks
 * (rows BC + 4 apart), so lanes start in the same of the 32 four-byte banks;
 * each takes the first of the next 4 banks no lane before it took, and
 * starts its loops over its columns that far in. Every step of such a loop
 * then reads each bank of Sw and Dw once (the f16 blocks' stores at most
 * twice). The skew changes no value but the order of a lane's sum. */
static uint64_t sga_skew(uint32_t bc, uint32_t lpr) {
    const uint32_t cpl = bc / lpr;
    uint32_t used = 0;
    uint64_t r = 0;
    for (uint32_t L = 0; L < 32; L++) {
        const uint32_t st = (L / lpr) * (bc + 4) + (L % lpr) * cpl;
        uint32_t k = 0;
        while (k < 4 && (used >> ((st + k) % 32) & 1u)) k++;
        if (k == 4) k = 0;
        used |= 1u << ((st + k) % 32);
        r |= (uint64_t)k << (2 * L);
    }
    return r;
}

uint64_t tt_gop_attention_sgmat_prefix(int which, int hs, const tt_gpu_info *in, char *pf, size_t cap) {
    const uint64_t bytes = tt_gop_attention_sgmat_plan(which, hs, in);
    if (!bytes) return 0;
    const uint32_t sg = in->subgroup_max, bc = SGA_BC[which], br = SGA_NSG * 16, nth = SGA_NSG * sg, h = (uint32_t)hs;
    const uint64_t skew = sga_skew(bc, sg / 16);
    const int len = snprintf(pf, cap,
             "diagnostic(off, chromium.subgroup_matrix_uniformity);\nenable f16;\nenable subgroups;\n"
             "enable chromium_experimental_subgroup_matrix;\nconst HS: u32 = %uu;\nconst BR: u32 = %uu;\n"
             "const BC: u32 = %uu;\nconst VEC: bool = true;\nconst SG: u32 = %uu;\nconst NSG: u32 = %uu;\n"
             "const DK: u32 = %uu;\nconst NB: u32 = %uu;\nconst QQ: u32 = %uu;\nconst KQ: u32 = %uu;\n"
             "const SKEW = vec2<u32>(%uu, %uu);\n",
             h, br, bc, sg, SGA_NSG, h / 16, bc / 16, br * h / (4 * nth), bc * h / (4 * nth), (uint32_t)skew,
             (uint32_t)(skew >> 32));
    return len > 0 && (size_t)len < cap ? bytes : 0;
}

/* 1, the prefix of kernel `which` (0 forward, 1 dq, 2 dk/dv) in pf and its
 * workgroup bytes when its subgroup-matrix variant runs for this op (the
 * f16 tier, the plan), else 0 */
static int sga_prefix(const tt_gops *o, int which, int hs, char *pf, size_t cap, uint64_t *bytes) {
    *bytes = o->f16 ? tt_gop_attention_sgmat_prefix(which, hs, o->info, pf, cap) : 0;
    return *bytes != 0;
}

/* 1 when the backward of this op runs on subgroup matrices (dq and dk/dv both) */
static int sga_backward_on(const tt_gops *o, int hs) {
    return o->f16 && tt_gop_attention_sgmat_plan(1, hs, o->info) && tt_gop_attention_sgmat_plan(2, hs, o->info);
}

static void sga_tag(tt_gsite *s, int which, uint64_t bytes) {
    snprintf(s->tag, sizeof s->tag, "sgmat br%u bc%u nsg%u %uB", SGA_NSG * 16, SGA_BC[which], SGA_NSG,
             (unsigned)bytes);
}

/* the forward on subgroup matrices: 0 (nothing made) where it does not run here */
static int sga_forward(tt_gops *o, tt_gsite *s, int *made, tt_gref y, tt_gref stats, tt_gref q, tt_gref k, tt_gref v,
                       int B, int T, int C, int NH, int slot, tt_status *st) {
    char pf[640];
    uint64_t bytes;
    *made = 0;
    if (!sga_prefix(o, 0, C / NH, pf, sizeof pf, &bytes)) return TT_OK;
    uint32_t args[16];
    attn_args(args, B, T, C, NH);
    qkv_offs(args, q, k, v);
    tt_gpu_buf bufs[6] = {q.buf, k.buf, v.buf, y.buf, stats.buf};
    int nb = tt_gop_attention_sgmat_buffers(0);
    TT_CHECK(drop_site(o, slot, pf, sizeof pf, args, bufs, &nb, st));
    TT_CHECK(tt_gops_make_site(o, s, tt_gop_attention_sgmat_name(0), pf, args, 0, nb, bufs, FWD_KINDS,
                               ((uint32_t)T + SGA_NSG * 16 - 1) / (SGA_NSG * 16), (uint32_t)NH, (uint32_t)B, st));
    s->flops = 2.0 * B * T * (T + 1.0) * C;
    sga_tag(s, 0, bytes);
    *made = 1;
    return TT_OK;
}

/* the backward on subgroup matrices, where both kernels run here: s[0] D
 * (d_site), s[1] dk/dv, s[2] dq */
static int sga_backward(tt_gops *o, tt_gsite *s, int *made, tt_gref dq, tt_gref dk, tt_gref dv, tt_gref stats,
                        tt_gref q, tt_gref k, tt_gref v, tt_gref y, tt_gref dy, int B, int T, int C, int NH, int slot,
                        tt_status *st) {
    char pf[2][640];
    uint64_t bytes[2];
    *made = 0;
    if (!sga_backward_on(o, C / NH)) return TT_OK;
    sga_prefix(o, 1, C / NH, pf[0], sizeof pf[0], &bytes[0]);
    sga_prefix(o, 2, C / NH, pf[1], sizeof pf[1], &bytes[1]);
    TT_CHECK(d_site(o, &s[0], y, dy, stats, B, T, C, NH, st));
    uint32_t args[2][16];
    for (int i = 0; i < 2; i++) {
        attn_args(args[i], B, T, C, NH);
        qkv_offs(args[i], q, k, v);
    }
    out_offs(args[0], dq, dq);
    out_offs(args[1], dk, dv);
    const uint32_t gx = ((uint32_t)T + SGA_NSG * 16 - 1) / (SGA_NSG * 16);
    {
        static const uint8_t kinds[8] = {TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_READ,
                                         TT_GPU_BIND_READ, TT_GPU_BIND_RW,   TT_GPU_BIND_RW,   TT_GPU_BIND_READ};
        tt_gpu_buf bufs[8] = {q.buf, k.buf, v.buf, dy.buf, stats.buf, dk.buf, dv.buf};
        int nb = tt_gop_attention_sgmat_buffers(2);
        TT_CHECK(kv_bind(o, dk, dv, pf[1], sizeof pf[1], &bufs[6], st));
        TT_CHECK(drop_site(o, slot, pf[1], sizeof pf[1], args[1], bufs, &nb, st));
        TT_CHECK(tt_gops_make_site(o, &s[1], tt_gop_attention_sgmat_name(2), pf[1], args[1], 0, nb, bufs, kinds, gx,
                                   (uint32_t)NH, (uint32_t)B, st));
        s[1].flops = 2.0 * B * T * (T + 1.0) * C * 2.0; /* 4 causal products */
        sga_tag(&s[1], 2, bytes[1]);
    }
    {
        static const uint8_t kinds[7] = {TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_READ,
                                         TT_GPU_BIND_READ, TT_GPU_BIND_RW,   TT_GPU_BIND_READ};
        tt_gpu_buf bufs[7] = {q.buf, k.buf, v.buf, dy.buf, stats.buf, dq.buf};
        int nb = tt_gop_attention_sgmat_buffers(1);
        TT_CHECK(drop_site(o, slot, pf[0], sizeof pf[0], args[0], bufs, &nb, st));
        TT_CHECK(tt_gops_make_site(o, &s[2], tt_gop_attention_sgmat_name(1), pf[0], args[0], 0, nb, bufs, kinds, gx,
                                   (uint32_t)NH, (uint32_t)B, st));
        s[2].flops = 2.0 * B * T * (T + 1.0) * C * 1.5; /* 3 causal products */
        sga_tag(&s[2], 1, bytes[0]);
    }
    *made = 1;
    return TT_OK;
}

/* ---- the dS-storing backward --------------------------------------------- */
int tt_gop_attention_ds_plan(int hs, int B, int T, int NH, uint32_t storage, uint32_t max_inv, uint64_t max_bytes,
                             tt_attn_ds *p) {
    tt_attn_tile t[3];
    memset(p, 0, sizeof *p);
    if (B < 1 || T < 1 || NH < 1) return 0;
    for (int i = 0; i < 3; i++)
        if (!tt_gop_attention_plan(i, hs, storage, max_inv, &t[i])) return 0;
    uint32_t g = 0, d[4] = {t[1].br, t[1].bc, t[2].br, t[2].bc};
    for (int i = 0; i < 4; i++) g = d[i] > g ? d[i] : g;
    for (int i = 0; i < 4; i++)
        if (g % d[i]) return 0; /* the plan's tiles are powers of two: never */
    uint64_t nb = ((uint64_t)T + g - 1) / g;
    uint64_t elems = (uint64_t)B * (uint64_t)NH * (nb * (nb + 1) / 2) * g * g;
    if (elems * 4 > max_bytes || elems / 4 > 0xFFFFFFFFull) return 0;
    p->g = g;
    p->elems = elems;
    return 1;
}

/* the plan for this adapter (0 when forced off: tt_gops.attn_ds < 0). The
 * storing attention_backward_dkdv binds 8 storage buffers (q, k, v, dy,
 * stats, dk, dv, dS), 9 with dropout's keys: one more than the pair's
 * kernels, and WebGPU's default maxStorageBuffersPerShaderStage is 8 */
static int ds_plan_o(const tt_gops *o, int B, int T, int C, int NH, int drop, tt_attn_ds *p) {
    uint64_t lim = tt_gops_binding_limit(o);
    uint32_t sb = o->info->max_storage_per_stage ? o->info->max_storage_per_stage : 8;
    if (o->attn_ds < 0 || sb < 8u + (drop ? 1u : 0u)) {
        memset(p, 0, sizeof *p);
        return 0;
    }
    return tt_gop_attention_ds_plan(C / NH, B, T, NH, o->info->max_wg_storage, o->info->max_invocations, lim, p);
}

size_t tt_gop_attention_ds_elems(const tt_gops *o, int B, int T, int C, int NH, int drop) {
    if (sga_backward_on(o, C / NH)) return 0; /* the subgroup-matrix backward stores no dS */
    tt_attn_ds p;
    return ds_plan_o(o, B, T, C, NH, drop, &p) ? (size_t)p.elems : 0;
}

/* s[0] attention_backward_d, s[1] attention_backward_dkdv (dS stored),
 * s[2] attention_backward_dq_ds */
static int ds_backward(tt_gops *o, tt_gsite *s, const tt_attn_ds *p, tt_gref dq, tt_gref dk, tt_gref dv,
                       tt_gref stats, tt_gref q, tt_gref k, tt_gref v, tt_gref y, tt_gref dy, int B, int T, int C,
                       int NH, int slot, tt_status *st) {
    int hs = C / NH;
    if (p->elems > o->ds_elems) {
        TT_CHECK(tt_gpu_buffer(o->g, (uint64_t)p->elems * 4, TT_GPU_STORAGE, "attn-ds-scratch", &o->ds_buf, st));
        o->ds_elems = (size_t)p->elems;
    }
    TT_CHECK(d_site(o, &s[0], y, dy, stats, B, T, C, NH, st));
    char pf[2][320], ds[64];
    int pf_on[2];
    tt_attn_tile t[2];
    uint32_t args[2][16];
    snprintf(ds, sizeof ds, "const DSG: u32 = %uu;\n", p->g);
    for (int i = 0; i < 2; i++) { /* 0: dq (the dq kernel's plan), 1: dk/dv */
        TT_CHECK(prep(o, 1 + i, hs, slot >= 0, &t[i], &pf_on[i], pf[i], sizeof pf[i], st));
        strncat(pf[i], ds, sizeof pf[i] - strlen(pf[i]) - 1);
        attn_args(args[i], B, T, C, NH);
        qkv_offs(args[i], q, k, v);
        bounds(args[i], hs, &t[i]);
    }
    out_offs(args[0], dq, dq);
    out_offs(args[1], dk, dv);
    /* dS tile slots of dq_ds's prefetch: BC keys x BR/4 row groups (args p9) */
    args[0][9] = (t[0].bc * (t[0].br / 4) + t[0].threads - 1) / t[0].threads;
    {
        static const uint8_t kinds[9] = {TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_READ,
                                         TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_RW,
                                         TT_GPU_BIND_RW,   TT_GPU_BIND_RW,   TT_GPU_BIND_READ};
        tt_gpu_buf bufs[9] = {q.buf, k.buf, v.buf, dy.buf, stats.buf, dk.buf, dv.buf, o->ds_buf};
        int nb = 8;
        strncat(pf[1], "const DS_BIND: u32 = 8u;\n", sizeof pf[1] - strlen(pf[1]) - 1);
        TT_CHECK(kv_bind(o, dk, dv, pf[1], sizeof pf[1], &bufs[6], st));
        TT_CHECK(drop_site(o, slot, pf[1], sizeof pf[1], args[1], bufs, &nb, st));
        TT_CHECK(tt_gops_make_site(o, &s[1], "attention_backward_dkdv", pf[1], args[1], 0, nb, bufs, kinds,
                                   ((uint32_t)T + t[1].br - 1) / t[1].br, (uint32_t)NH, (uint32_t)B, st));
        s[1].flops = 2.0 * B * T * (T + 1.0) * C * 2.0; /* 4 causal products */
    }
    {
        static const uint8_t kinds[5] = {TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_READ,
                                         TT_GPU_BIND_RW};
        tt_gpu_buf bufs[5] = {q.buf, k.buf, v.buf, o->ds_buf, dq.buf};
        TT_CHECK(tt_gops_make_site(o, &s[2], "attention_backward_dq_ds", pf[0], args[0], 0, 5, bufs, kinds,
                                   ((uint32_t)T + t[0].br - 1) / t[0].br, (uint32_t)NH, (uint32_t)B, st));
        s[2].flops = 2.0 * B * T * (T + 1.0) * C * 0.5; /* 1 causal product */
    }
    /* tags: the tile as the pair's (dq_ds: its own workgroup memory, K and
     * dS tiles only), then "ds", the block size and the scratch */
    uint32_t ks4 = ((uint32_t)(hs + 3) / 4) | 1u, ps4 = (t[0].br / 4) | 1u;
    t[0].bytes = 16 * (t[0].bc * ks4 + t[0].bc * ps4);
    for (int i = 0; i < 2; i++) {
        tt_gsite *si = &s[2 - i];
        char base[64];
        tag(si, &t[i], pf_on[i]);
        snprintf(base, sizeof base, "%s", si->tag);
        snprintf(si->tag, sizeof si->tag, "%.40s ds%u %.0fMB", base, p->g, p->elems * 4 / 1e6);
    }
    return TT_OK;
}

/* ---- row kernels (fallback) ---------------------------------------------- */
static int rows_plan(const tt_gops *o, int C, int NH, uint32_t *br_out, char *pf, size_t cap, tt_status *st) {
    int hs = C / NH;
    if (hs > 256) return tt_fail(st, TT_EUNSUP, "webgpu attention: head size %d > 256 not supported", hs);
    int bc = 1024 / hs;
    if (bc > 64) bc = 64;
    if (bc < 4) bc = 4;
    int p = 1;
    while (p * 2 <= bc) p *= 2;
    uint32_t lanes = 4;
    uint32_t budget = o->info->max_wg_storage ? o->info->max_wg_storage : 16384;
    uint32_t BC = (uint32_t)p, BR, XO;
    for (;;) {
        BR = lanes > 1 ? 64 / lanes : 64;
        XO = 1;
        if (lanes > 1) {
            uint32_t x1 = BR * 2 * (uint32_t)hs, x2 = BR * ((uint32_t)hs + 2);
            XO = x1 > x2 ? x1 : x2;
        }
        uint32_t bytes = 4 * (2 * BC * ((uint32_t)hs + 1) + 2 * BC + (lanes > 1 ? XO : 1));
        if (bytes <= budget) break;
        if (BC > 4) BC /= 2;
        else if (lanes > 1) lanes = 1, BC = (uint32_t)p;
        else
            return tt_fail(st, TT_EUNSUP,
                           "webgpu attention: head size %d needs more workgroup memory than the adapter has", hs);
    }
    *br_out = BR;
    snprintf(pf, cap, "const HS: u32 = %du;\nconst BR: u32 = %uu;\nconst BC: u32 = %uu;\nconst LANES: u32 = %uu;\nconst XO: u32 = %uu;\n",
             hs, BR, BC, lanes, XO);
    return TT_OK;
}

static int rows_forward(tt_gops *o, tt_gsite *s, tt_gref y, tt_gref stats, tt_gref q, tt_gref k, tt_gref v, int B,
                        int T, int C, int NH, int slot, tt_status *st) {
    char pf[256];
    uint32_t br;
    TT_CHECK(rows_plan(o, C, NH, &br, pf, sizeof pf, st));
    uint32_t args[16];
    attn_args(args, B, T, C, NH);
    qkv_offs(args, q, k, v);
    tt_gpu_buf bufs[6] = {q.buf, k.buf, v.buf, y.buf, stats.buf};
    int nb = 5;
    TT_CHECK(drop_site(o, slot, pf, sizeof pf, args, bufs, &nb, st));
    TT_CHECK(tt_gops_make_site(o, s, "attention_rows_forward", pf, args, 0, nb, bufs, FWD_KINDS, ((uint32_t)T + br - 1) / br,
                               (uint32_t)NH, (uint32_t)B, st));
    s->flops = 2.0 * B * T * (T + 1.0) * C;
    return TT_OK;
}

static int rows_backward(tt_gops *o, tt_gsite *s, tt_gref dq, tt_gref dk, tt_gref dv, tt_gref stats, tt_gref q,
                         tt_gref k, tt_gref v, tt_gref y, tt_gref dy, int B, int T, int C, int NH, int slot,
                         tt_status *st) {
    static const char *const names[2] = {"attention_rows_backward_dq", "attention_rows_backward_dkdv"};
    char pf[2][256];
    uint32_t args[2][16], br[2];
    TT_CHECK(rows_plan(o, C, NH, &br[0], pf[0], sizeof pf[0], st));
    memcpy(pf[1], pf[0], sizeof pf[0]);
    br[1] = br[0];
    attn_args(args[0], B, T, C, NH);
    qkv_offs(args[0], q, k, v);
    attn_args(args[1], B, T, C, NH);
    qkv_offs(args[1], q, k, v);
    out_offs(args[0], dq, dq);
    out_offs(args[1], dk, dv);
    return backward_sites(o, s, names, pf, args, br, dq, dk, dv, stats, q, k, v, y, dy, B, T, C, NH, slot, st);
}

/* ---- the op ---------------------------------------------------------------- */
static int forward_op(tt_gops *o, tt_gsite *s, tt_gref y, tt_gref stats, tt_gref q, tt_gref k, tt_gref v, int B, int T,
                      int C, int NH, int slot, tt_status *st) {
    if (((q.off | k.off | v.off) & 3) || y.off || stats.off)
        return tt_fail(st, TT_EINVAL, "webgpu attention: y and stats must start their buffers, q, k, v at multiples of 4");
    int made;
    TT_CHECK(sga_forward(o, s, &made, y, stats, q, k, v, B, T, C, NH, slot, st));
    if (made) return TT_OK;
    if (tiled_usable(o, C / NH)) return tiled_forward(o, s, y, stats, q, k, v, B, T, C, NH, slot, st);
    return rows_forward(o, s, y, stats, q, k, v, B, T, C, NH, slot, st);
}

static int backward_op(tt_gops *o, tt_gsite *s, tt_gref dq, tt_gref dk, tt_gref dv, tt_gref stats, tt_gref q,
                       tt_gref k, tt_gref v, tt_gref y, tt_gref dy, int B, int T, int C, int NH, int slot,
                       tt_status *st) {
    if (((q.off | k.off | v.off | dq.off | dk.off | dv.off) & 3) || y.off || dy.off || stats.off)
        return tt_fail(st, TT_EINVAL, "webgpu attention: y, dy and stats must start their buffers, q, k, v and the "
                                      "outputs at multiples of 4");
    int made;
    TT_CHECK(sga_backward(o, s, &made, dq, dk, dv, stats, q, k, v, y, dy, B, T, C, NH, slot, st));
    if (made) return TT_OK;
    tt_attn_ds p;
    if (ds_plan_o(o, B, T, C, NH, slot >= 0, &p))
        return ds_backward(o, s, &p, dq, dk, dv, stats, q, k, v, y, dy, B, T, C, NH, slot, st);
    memset(&s[2], 0, sizeof s[2]); /* the pair: two sites */
    if (tiled_usable(o, C / NH)) return tiled_backward(o, s, dq, dk, dv, stats, q, k, v, y, dy, B, T, C, NH, slot, st);
    return rows_backward(o, s, dq, dk, dv, stats, q, k, v, y, dy, B, T, C, NH, slot, st);
}

int tt_gop_attention_forward(tt_gops *o, tt_gsite *s, tt_gref y, tt_gref stats, tt_gref q, tt_gref k, tt_gref v,
                             int B, int T, int C, int NH, tt_status *st) {
    return forward_op(o, s, y, stats, q, k, v, B, T, C, NH, -1, st);
}

int tt_gop_attention_backward(tt_gops *o, tt_gsite *s, tt_gref dq, tt_gref dk, tt_gref dv, tt_gref stats, tt_gref q,
                              tt_gref k, tt_gref v, tt_gref y, tt_gref dy, int B, int T, int C, int NH,
                              tt_status *st) {
    return backward_op(o, s, dq, dk, dv, stats, q, k, v, y, dy, B, T, C, NH, -1, st);
}

int tt_gop_attention_forward_drop(tt_gops *o, tt_gsite *s, tt_gref y, tt_gref stats, tt_gref q, tt_gref k, tt_gref v,
                                  int B, int T, int C, int NH, uint32_t slot, tt_status *st) {
    if (slot > 0x7fffffffu) return tt_fail(st, TT_EINVAL, "webgpu attention: bad dropout slot");
    return forward_op(o, s, y, stats, q, k, v, B, T, C, NH, (int)slot, st);
}

int tt_gop_attention_backward_drop(tt_gops *o, tt_gsite *s, tt_gref dq, tt_gref dk, tt_gref dv, tt_gref stats,
                                   tt_gref q, tt_gref k, tt_gref v, tt_gref y, tt_gref dy, int B, int T, int C, int NH,
                                   uint32_t slot, tt_status *st) {
    if (slot > 0x7fffffffu) return tt_fail(st, TT_EINVAL, "webgpu attention: bad dropout slot");
    return backward_op(o, s, dq, dk, dv, stats, q, k, v, y, dy, B, T, C, NH, (int)slot, st);
}
