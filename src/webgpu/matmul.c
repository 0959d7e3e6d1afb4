/* matmul.c — the WebGPU matmul planner (gpu_ops.h): the launch plan (tile,
 * split-K), the kernel configuration of each tile, the product sites
 * (matmul.wgsl, its shared tiles in f16 under the f16 tier (tt_gops.f16);
 * then matmul_splitk_reduce.wgsl or matmul_colsum_final.wgsl for split-K
 * slices), the bias gradient (matmul_colsum.wgsl +
 * matmul_colsum_final.wgsl) and the two-stage column sums that LayerNorm's
 * weight gradients share. */
#include <stdio.h>
#include <string.h>

#include "gpu_ops.h"

/* The matmul launch plan: a pure function of the shape (never of the
 * adapter or of timings), so a given model trains bit-identically on every
 * GPU. Tiles are square, BM = BN in {128, 64, 32} (128: 8x8 outputs per
 * thread, 256 threads; 64: 4x4, 256 threads; 32: 4x4, 64 threads): the
 * largest tile giving >= TT_MM_TARGET workgroups (about four per SM of a
 * 132-SM GPU), where a product that may be split counts its K slices too
 * (slices of >= TT_MM_KMIN, at most MM_MAXSPLIT; partial products are added
 * in slice order by a second site, which also applies any epilogue): so a
 * big-K product keeps the efficient large tile and gains workgroups from
 * split-K. When no tile reaches the target: the 32 tile with the most
 * slices allowed. A long chain (K >= TT_MM_LONGK: weight gradients over
 * thousands of tokens) takes slices of at most TT_MM_KSLICE k even when
 * fewer reach the target: the workgroups are then more than the SMs' resident
 * slots several times over, and the tail of the last wave costs less
 * (docs/BENCHMARKS.md, the split-K sweep: 768x3072x8192 0.93x the time of
 * 4 slices with 8). A group of n products of one shape that run in one
 * dispatch (the q, k, v projections) counts the workgroups of all n, and a
 * product of such a group keeps that plan when it runs alone. A batch whose
 * products keep their lone plans' slices (the q, k, v weight gradients:
 * their bits are those of the lone products, whether batched or not) takes
 * the largest tile whose workgroups, all n products' slices counted, reach
 * half of TT_MM_TARGET (else the 32 tile): its slices are already the lone
 * plan's, so the batch only chooses how big a tile each workgroup runs, and
 * the bigger tile won where both were measured (shakespeare_char, 384x384x
 * 16384 x3 z16: 432 workgroups on the 128 tile 2.38 ms a step, 1728 on the
 * 64 tile 2.77 ms; docs/BENCHMARKS.md). The tile never changes the bits. */
#define MM_MAXSPLIT 16u

/* workgroups of one slice of a dispatch of n products */
static uint32_t mm_wgs(int n, int M, int N, int t) {
    return (uint32_t)n * (uint32_t)((M + t - 1) / t) * (uint32_t)((N + t - 1) / t);
}

void tt_gop_matmul_plan(const tt_gops *o, int n, int M, int N, int K, int splittable, int *tile_out,
                        uint32_t *splits_out, uint32_t *kchunk_out) {
    static const int tiles[3] = {128, 64, 32};
    int tile = o->tile;
    uint32_t splits = 1;
    uint32_t maxs = splittable ? (uint32_t)K / TT_MM_KMIN : 1;
    if (maxs > MM_MAXSPLIT) maxs = MM_MAXSPLIT;
    /* the split-K scratch (slices x M x N floats) stays within 128 MiB, the
     * binding size every WebGPU adapter offers: a shape-only rule (a safety
     * net: with the target and the 128 tile it never binds) */
    uint64_t cap = TT_MM_SCRATCH_FLOATS / ((uint64_t)M * (uint64_t)N);
    if (maxs > cap) maxs = (uint32_t)cap;
    if (maxs < 2) maxs = 1;
    if (tile == 32 || tile == 64 || tile == 128) { /* forced tile (tests) */
        uint32_t g = mm_wgs(n, M, N, tile);
        if (g < TT_MM_TARGET) splits = (TT_MM_TARGET + g - 1) / g;
    } else {
        tile = 0;
        for (int i = 0; i < 3 && !tile; i++) {
            uint32_t g = mm_wgs(n, M, N, tiles[i]), sp = g >= TT_MM_TARGET ? 1 : (TT_MM_TARGET + g - 1) / g;
            if (sp <= maxs) tile = tiles[i], splits = sp;
        }
        if (!tile) { /* not even the smallest tile with the most slices reaches the target */
            tile = 32;
            splits = maxs;
        }
    }
    if (splittable && (uint32_t)K >= TT_MM_LONGK && splits < ((uint32_t)K + TT_MM_KSLICE - 1) / TT_MM_KSLICE)
        splits = ((uint32_t)K + TT_MM_KSLICE - 1) / TT_MM_KSLICE;
    if (splits > maxs) splits = maxs;
    if (splittable && o->splitk > 0) splits = (uint32_t)o->splitk;
    uint32_t kchunk = (uint32_t)K;
    if (splits > 1) {
        kchunk = (((uint32_t)K + splits - 1) / splits + 15) / 16 * 16;
        splits = ((uint32_t)K + kchunk - 1) / kchunk;
    }
    if (splits < 2) {
        splits = 1;
        kchunk = (uint32_t)K;
    }
    *tile_out = tile;
    *splits_out = splits;
    *kchunk_out = kchunk;
}

/* the tile of a batch of n products of S slices each (see above) */
static int batch_tile(const tt_gops *o, int n, int M, int N, uint32_t S) {
    static const int tiles[3] = {128, 64, 32};
    if (o->tile == 32 || o->tile == 64 || o->tile == 128) return o->tile;
    for (int i = 0; i < 3; i++)
        if ((uint64_t)mm_wgs(n, M, N, tiles[i]) * S >= TT_MM_TARGET / 2) return tiles[i];
    return 32;
}

/* the plan of a batch of n products: the group plan of `group` products,
 * or (solo) each product's lone plan's slices with the batch's tile */
static void batch_plan(const tt_gops *o, int n, int group, int solo, int M, int N, int K, int *tile, uint32_t *splits,
                       uint32_t *kchunk) {
    tt_gop_matmul_plan(o, solo ? 1 : group, M, N, K, 1, tile, splits, kchunk);
    if (solo && n > 1) *tile = batch_tile(o, n, M, N, *splits);
}

void tt_gop_mm_kcfg(uint32_t wg_storage, int tile, int trans_b, tt_mm_kcfg *k) {
    uint32_t lim = wg_storage ? wg_storage : 16384;
    /* the 128 tile with B transposed: two stages of k step 8 (one barrier
     * per k tile) measured faster than one stage of 16; the other layouts
     * measured slower with it (docs/BENCHMARKS.md, "Matmul variants") */
    const int db8 = tile == 128 && trans_b;
    k->tm = tile == 128 ? 8 : 4;
    k->bk = db8 ? 8 : 16;
    k->stages = tile == 128 && !db8 ? 1 : 2;
    k->swz = tile == 128 ? 0 : 1;
    /* 2 tiles (A and B) of BK x tile floats per stage */
    k->bytes = (uint32_t)k->stages * (uint32_t)k->bk * 2u * (uint32_t)tile * 4u;
    if (k->bytes > lim && k->stages == 2) {
        k->stages = 1;
        k->bytes /= 2;
    }
    k->threads = (uint32_t)(tile / k->tm) * (uint32_t)(tile / k->tm);
}

static int mm_sites(tt_gops *o, tt_gsite *s, int n, int group, int solo, uint32_t bstride, uint32_t cstride,
                    tt_gref C, tt_gref A, tt_gref B, const tt_gref *bias, const tt_gref *R, int M, int N, int K,
                    int trans_a, int trans_b, int accumulate, int ones_rows, tt_status *st);
static int colsum_final(tt_gops *o, tt_gsite *s, tt_gref out, tt_gref part, uint32_t W, uint32_t n_chunks, uint32_t PW,
                        uint32_t ostride, tt_status *st);

int tt_gop_matmul(tt_gops *o, tt_gsite *s, tt_gref C, tt_gref A, tt_gref B, const tt_gref *bias, const tt_gref *R,
                  int M, int N, int K, int trans_a, int trans_b, int accumulate, tt_status *st) {
    return mm_sites(o, s, 1, 1, 0, 0, 0, C, A, B, bias, R, M, N, K, trans_a, trans_b, accumulate, 0, st);
}

int tt_gop_matmul_ex(tt_gops *o, tt_gsite *s, tt_gref C, tt_gref A, tt_gref B, const tt_gref *bias, const tt_gref *R,
                     int M, int N, int K, int trans_a, int trans_b, int accumulate, int ones_rows, tt_status *st) {
    return mm_sites(o, s, 1, 1, 0, 0, 0, C, A, B, bias, R, M, N, K, trans_a, trans_b, accumulate, ones_rows, st);
}

int tt_gop_matmul_group(tt_gops *o, tt_gsite *s, int group, tt_gref C, tt_gref A, tt_gref B, const tt_gref *bias,
                        const tt_gref *R, int M, int N, int K, int trans_a, int trans_b, int accumulate, int ones_rows,
                        tt_status *st) {
    if (group < 1) return tt_fail(st, TT_EINVAL, "webgpu matmul: a group of %d products", group);
    return mm_sites(o, s, 1, group, 0, 0, 0, C, A, B, bias, R, M, N, K, trans_a, trans_b, accumulate, ones_rows, st);
}

/* 1 when a batch of n products (planned by batch_plan) fits the adapter:
 * its split-K scratch within one binding, its grid, 32-bit indexing */
static int batch_fits(const tt_gops *o, int n, int solo, int M, int N, int K) {
    if (n < 1 || M <= 0 || N <= 0 || K <= 0) return 0;
    uint64_t lim = o->info->max_storage_binding ? o->info->max_storage_binding : (128ull << 20);
    if (o->info->max_buffer && o->info->max_buffer < lim) lim = o->info->max_buffer;
    uint32_t zl = o->info->max_wg_per_dim ? o->info->max_wg_per_dim : 65535;
    int tile;
    uint32_t splits, kchunk;
    batch_plan(o, n, n, solo, M, N, K, &tile, &splits, &kchunk);
    uint64_t out = (uint64_t)n * (uint64_t)M * (uint64_t)N, need = splits > 1 ? splits * out : 0;
    return need * 4 <= lim && need <= 0xFFFFFFFFull && out <= 0xFFFFFFFFull && (uint64_t)n * splits <= zl;
}

int tt_gop_matmul_batch_fits(const tt_gops *o, int n, int M, int N, int K) { return batch_fits(o, n, 0, M, N, K); }

int tt_gop_matmul_batch_solo_fits(const tt_gops *o, int n, int M, int N, int K) {
    return batch_fits(o, n, 1, M, N, K);
}

/* ---- the subgroup-matrix variant (the f16 tier on tensor cores) ---------
 * Under the f16 tier, on an adapter that lists an f16 x f16 -> f32
 * subgroup-matrix configuration SM x SN x SK (tt_gpu_info.sgmat_*; the
 * worker passes one only where WGSL has the subgroup_id builtin) and runs
 * subgroups of one size, a product runs matmul_sgmat.wgsl: sites s[0] and
 * s[1] copy op(A)'s and op(B)'s storage to f16 (matmul_cast.wgsl, zero-padded
 * to whole BM x BN blocks and k multiples of 16, ones rows written as 1.0)
 * into the f16 scratch (A's copy first, then each product's B), and the
 * product multiplies the copies: MM_SG_WM x MM_SG_WN subgroups per
 * workgroup share BK-deep tiles in workgroup memory, each with
 * MM_SG_TM x MM_SG_TN result matrices. The split-K plan is the tiles' (the
 * same slices; kchunk is a multiple of 16), and so is the second site.
 * By shape, a product keeps the f16 tiles where its copies would not fit
 * one binding, where its outputs are fewer than one result matrix (Dawn
 * then refuses the dispatch: a buffer a subgroup matrix is stored to must
 * hold one), and below MM_SG_MIN_FLOP, where two more dispatches and the
 * copies' traffic cost more than the tensor cores gain (the small presets
 * ran 1.1-2x slower with every product on them; docs/BENCHMARKS.md); by
 * device, where the workgroup (its invocations, its memory) exceeds the
 * adapter's limits. The variant changes the bits of the f16 tier only. */
#define MM_SG_WM 2
#define MM_SG_WN 2
#define MM_SG_TM 4
#define MM_SG_TN 4
#define MM_SG_BK 32
#define MM_SG_MIN_FLOP 1073741824.0 /* 2^30 */

typedef struct {
    int on, bm, bn;
    uint32_t gx, gy;
    char prefix[600];
} mm_sg;

static uint32_t round_up(uint32_t x, uint32_t m) { return (x + m - 1) / m * m; }

int tt_gop_matmul_cast(tt_gops *o, tt_gsite *s, tt_gref dst, tt_gref src, uint32_t rows, uint32_t cols, uint32_t ld,
                       uint32_t one_r, uint32_t one_c, uint32_t drows, uint32_t dld, uint32_t nprod, uint32_t sstride,
                       uint32_t dstride, tt_status *st) {
    if (dld % 4 || dst.off % 4 || dstride % 4 || !nprod || cols > dld || rows > drows || one_c > dld || one_r > drows ||
        (nprod > 1 && dstride < drows * dld))
        return tt_fail(st, TT_EINVAL, "webgpu matmul_cast: bad layout (%ux%u into %ux%u)", rows, cols, drows, dld);
    uint64_t n4 = (uint64_t)nprod * drows * (dld / 4);
    const uint64_t end = dst.off + (uint64_t)(nprod - 1) * dstride + (uint64_t)drows * dld;
    TT_CHECK(tt_gops_check_u32((size_t)end, "matmul_cast", st));
    char pf[64];
    uint32_t args[16] = {rows, cols, ld, src.off, one_r, one_c, dld, drows, dst.off, nprod, sstride, dstride};
    tt_gpu_buf bufs[2] = {src.buf, dst.buf};
    static const uint8_t kinds[2] = {TT_GPU_BIND_READ, TT_GPU_BIND_RW};
    snprintf(pf, sizeof pf, "enable f16;\nconst WG: u32 = %uu;\n", TT_WG_ELEM);
    TT_CHECK(tt_gops_make_site(o, s, "matmul_cast", pf, args, 0, 2, bufs, kinds,
                               tt_gops_stride_wgs((size_t)n4, TT_WG_ELEM), 1, 1, st));
    snprintf(s->tag, sizeof s->tag, "%ux%u x%u", drows, dld, nprod);
    return TT_OK;
}

int tt_gop_matmul_sgmat_prefix(const tt_gpu_info *in, int trans_a, int trans_b, char *pf, size_t cap) {
    if (!in->sgmat_m || !in->sgmat_n || !in->sgmat_k || 16 % in->sgmat_k || !in->subgroup_max ||
        in->subgroup_min != in->subgroup_max)
        return 0;
    const uint32_t sgs = in->subgroup_max, nt = MM_SG_WM * MM_SG_WN * sgs;
    const uint32_t pm = MM_SG_TM * in->sgmat_m, pn = MM_SG_TN * in->sgmat_n, bk = MM_SG_BK;
    const uint32_t bm = MM_SG_WM * pm, bn = MM_SG_WN * pn;
    /* workgroup memory: the tiles' parts (one per row or column of subgroups, rows padded by 8
     * f16) and a result matrix per subgroup; each unrolled chunk of a tile lies in one part */
    const uint64_t wgmem = 2ull * MM_SG_WM * (trans_a ? bk * (pm + 8) : pm * (bk + 8)) +
                           2ull * MM_SG_WN * (trans_b ? pn * (bk + 8) : bk * (pn + 8)) +
                           4ull * MM_SG_WM * MM_SG_WN * in->sgmat_m * in->sgmat_n;
    if (nt > in->max_invocations || wgmem > in->max_wg_storage || bk % in->sgmat_k || (pm * bk) % (8 * nt) ||
        (pn * bk) % (8 * nt))
        return 0;
    snprintf(pf, cap,
             "diagnostic(off, chromium.subgroup_matrix_uniformity);\nenable f16;\nenable subgroups;\n"
             "enable chromium_experimental_subgroup_matrix;\nconst SM: u32 = %uu;\nconst SN: u32 = %uu;\n"
             "const SK: u32 = %uu;\nconst TM: u32 = %uu;\nconst TN: u32 = %uu;\nconst TMN: u32 = %uu;\n"
             "const SG: u32 = %uu;\nconst WM: u32 = %uu;\nconst WN: u32 = %uu;\nconst BK: u32 = %uu;\n"
             "const AQ: u32 = %uu;\nconst BQ: u32 = %uu;\nconst KQ: u32 = %uu;\nconst TRANS_A: bool = %s;\n"
             "const TRANS_B: bool = %s;\n",
             in->sgmat_m, in->sgmat_n, in->sgmat_k, MM_SG_TM, MM_SG_TN, MM_SG_TM * MM_SG_TN, sgs, MM_SG_WM, MM_SG_WN, bk,
             bm * bk / (8 * nt), bn * bk / (8 * nt), bk / in->sgmat_k, trans_a ? "true" : "false",
             trans_b ? "true" : "false");
    return 1;
}

static int sg_setup(tt_gops *o, tt_gsite *s, mm_sg *sg, tt_gref A, tt_gref B, int n, int M, int N, int K, int am,
                    int trans_a, int trans_b, uint32_t lda, uint32_t ldb, uint32_t bstride, uint32_t args[16],
                    tt_gpu_buf bufs[7], tt_status *st) {
    const tt_gpu_info *in = o->info;
    memset(sg, 0, sizeof *sg);
    if (!o->f16 || !tt_gop_matmul_sgmat_prefix(in, trans_a, trans_b, sg->prefix, sizeof sg->prefix)) return TT_OK;
    if (2.0 * n * M * N * K < MM_SG_MIN_FLOP || (uint64_t)n * M * N < (uint64_t)in->sgmat_m * in->sgmat_n) return TT_OK;
    const uint32_t bm = MM_SG_WM * MM_SG_TM * in->sgmat_m, bn = MM_SG_WN * MM_SG_TN * in->sgmat_n;
    const uint32_t Kp = round_up((uint32_t)K, 16), Mp = round_up((uint32_t)M, bm), Np = round_up((uint32_t)N, bn);
    const uint32_t a_dr = trans_a ? Kp : Mp, a_dld = trans_a ? Mp : Kp;
    const uint32_t b_dr = trans_b ? Np : Kp, b_dld = trans_b ? Kp : Np;
    const uint64_t na = (uint64_t)a_dr * a_dld, nb = (uint64_t)b_dr * b_dld, need = na + (uint64_t)n * nb;
    if (need * 2 > tt_gops_binding_limit(o) || need > 0xFFFFFFFFull) return TT_OK; /* the f16 tiles */
    if (need > o->h16_elems) {
        TT_CHECK(tt_gpu_buffer(o->g, need * 2, TT_GPU_STORAGE, "f16-operands", &o->h16_buf, st));
        o->h16_elems = (size_t)need;
    }
    const tt_gref h0 = {o->h16_buf, 0}, h1 = {o->h16_buf, (uint32_t)na};
    const uint32_t m = (uint32_t)M, nn = (uint32_t)N, k = (uint32_t)K, ma = (uint32_t)am;
    TT_CHECK(tt_gop_matmul_cast(o, &s[0], h0, A, trans_a ? k : ma, trans_a ? ma : k, lda, trans_a ? k : m,
                                trans_a ? m : k, a_dr, a_dld, 1, 0, 0, st));
    TT_CHECK(tt_gop_matmul_cast(o, &s[1], h1, B, trans_b ? nn : k, trans_b ? k : nn, ldb, 0, 0, b_dr, b_dld,
                                (uint32_t)n, bstride, (uint32_t)nb, st));
    args[3] = a_dld;       /* lda, ldb: the copies' */
    args[4] = b_dld;
    args[6] = 0;           /* a_off */
    args[7] = (uint32_t)na; /* b_off */
    args[13] = (uint32_t)nb; /* per product: B's copy (the ones rows are in A's) */
    bufs[0] = bufs[1] = o->h16_buf;
    sg->on = 1;
    sg->bm = (int)bm;
    sg->bn = (int)bn;
    sg->gx = Np / bn;
    sg->gy = Mp / bm;
    return TT_OK;
}

/* the sites of n products in one dispatch, planned as a group of `group`
 * products (group >= n: a product of a group run alone keeps the group's
 * plan, so its bits do not depend on whether the group was batched) or,
 * solo, each with its lone plan's slices (batch_plan); product p's C and R
 * at p*cstride (0: M*N) */
static int mm_sites(tt_gops *o, tt_gsite *s, int n, int group, int solo, uint32_t bstride, uint32_t cstride,
                    tt_gref C, tt_gref A, tt_gref B, const tt_gref *bias, const tt_gref *R, int M, int N, int K,
                    int trans_a, int trans_b, int accumulate, int ones_rows, tt_status *st) {
    if (M <= 0 || N <= 0 || K <= 0) return tt_fail(st, TT_EINVAL, "webgpu matmul: bad shape %dx%dx%d", M, N, K);
    if (ones_rows < 0 || ones_rows >= M)
        return tt_fail(st, TT_EINVAL, "webgpu matmul: %d ones rows out of range for M = %d", ones_rows, M);
    if (n < 1 || (n > 1 && !batch_fits(o, n, solo, M, N, K)))
        return tt_fail(st, TT_EUNSUP, "webgpu matmul: a batch of %d products of %dx%dx%d does not fit this adapter", n,
                       M, N, K);
    const size_t MN = (size_t)M * N;
    memset(s, 0, TT_GOP_MM_SITES * sizeof *s);
    if (n == 1) bstride = 0, cstride = 0; /* product 0 alone: no strides */
    if (n > 1 && cstride == 0) cstride = (uint32_t)MN; /* batch_fits: n*M*N within 32 bits */
    if (n > 1 && (size_t)cstride < MN)
        return tt_fail(st, TT_EINVAL, "webgpu matmul: batch outputs %u apart overlap (%zu each)", cstride, MN);
    const size_t W = (size_t)n * MN;                            /* the outputs of the batch (split-K: the scratch) */
    const size_t WC = (size_t)(n - 1) * cstride + MN;           /* their extent in C (and R) */
    TT_CHECK(tt_gops_check_u32(WC + C.off, "matmul output", st));
    TT_CHECK(tt_gops_check_u32((size_t)(n - 1) * bstride + B.off + (bias ? bias->off : 0), "matmul batch", st));
    if (R) TT_CHECK(tt_gops_check_u32(WC + R->off, "matmul residual", st));
    const int am = M - ones_rows; /* rows of op(A) actually stored */
    int tile;
    uint32_t splits, kchunk;
    /* split-K for every product: the slices are added into C by
     * matmul_colsum_final (accumulating products without an epilogue) or by
     * matmul_splitk_reduce, which applies bias, R and accumulate */
    const int plain = accumulate && !bias && !R;
    batch_plan(o, n, group, solo, M, N, K, &tile, &splits, &kchunk);
    tt_mm_kcfg kc;
    tt_gop_mm_kcfg(o->info->max_wg_storage, tile, trans_b, &kc);
    uint32_t lda = (uint32_t)(trans_a ? am : K), ldb = (uint32_t)(trans_b ? K : N);
    int vec = ((A.off | B.off | lda | ldb | bstride) & 3) == 0;
    /* split-K: z slices of K write partial products to scratch, a second
     * site adds them into C in slice order; a batch's grid z is
     * slice * n + product */
    uint32_t gx = (uint32_t)((N + tile - 1) / tile), gy = (uint32_t)((M + tile - 1) / tile);
    char prefix[480];
    /* the shared tiles' element (SV, SE): f32, or with o->f16 the operands
     * rounded to f16 as they are stored; the fma chains read them back as
     * f32 (an f16 x f16 product is exact in f32): f16 operands, f32
     * accumulation */
    snprintf(prefix, sizeof prefix,
             "%sconst BM: u32 = %du;\nconst BN: u32 = %du;\nconst BK: u32 = %du;\nconst TM: u32 = %du;\n"
             "const TN: u32 = %du;\nconst TRANS_A: bool = %s;\nconst TRANS_B: bool = %s;\nconst VEC: bool = %s;\n"
             "const STAGES: u32 = %du;\nconst SWZ: bool = %s;\nalias SE = %s;\nalias SV = vec4<SE>;\n",
             o->f16 ? "enable f16;\n" : "", tile, tile, kc.bk, kc.tm, kc.tm, trans_a ? "true" : "false",
             trans_b ? "true" : "false", vec ? "true" : "false", kc.stages, kc.swz ? "true" : "false",
             o->f16 ? "f16" : "f32");
    tt_gref Cdst = C;
    if (splits > 1) {
        size_t need = (size_t)splits * W;
        TT_CHECK(tt_gops_check_u32(need, "split-k scratch", st));
        if (need > o->split_elems) {
            TT_CHECK(tt_gpu_buffer(o->g, (uint64_t)need * 4, TT_GPU_STORAGE, "split-k-scratch", &o->split_buf, st));
            o->split_elems = need;
        }
        Cdst.buf = o->split_buf;
        Cdst.off = 0;
    }
    uint32_t args[16] = {0};
    args[0] = (uint32_t)M;
    args[1] = (uint32_t)N;
    args[2] = (uint32_t)K;
    args[3] = lda;
    args[4] = ldb;
    args[5] = cstride;
    args[6] = A.off;
    args[7] = B.off;
    args[8] = Cdst.off;
    args[9] = bias ? bias->off : 0;
    args[10] = R ? R->off : 0;
    args[11] = (accumulate ? 1u : 0u) | (bias ? 2u : 0u) | (R ? 4u : 0u);
    args[12] = kchunk;
    args[13] = (uint32_t)am;
    args[14] = (uint32_t)n; /* products */
    args[15] = bstride;     /* per product: B and bias */
    tt_gpu_buf bufs[7] = {A.buf, B.buf, Cdst.buf, bias ? bias->buf : A.buf, R ? R->buf : A.buf, A.buf, B.buf};
    static const uint8_t kinds[7] = {TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_RW,  TT_GPU_BIND_READ,
                                     TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_READ};
    tt_gsite *ps = &s[TT_GOP_MM_PRODUCT]; /* s[0], s[1]: the f16 copies of the subgroup-matrix variant */
    mm_sg sg;
    TT_CHECK(sg_setup(o, s, &sg, A, B, n, M, N, K, am, trans_a, trans_b, lda, ldb, bstride, args, bufs, st));
    if (sg.on)
        TT_CHECK(tt_gops_make_site(o, ps, "matmul_sgmat", sg.prefix, args, 0, 6, bufs, kinds, sg.gx, sg.gy,
                                   splits * (uint32_t)n, st));
    else
        TT_CHECK(tt_gops_make_site(o, ps, "matmul", prefix, args, 0, 7, bufs, kinds, gx, gy, splits * (uint32_t)n, st));
    ps->flops = 2.0 * n * M * N * K;
    /* the profile's shape tag: enough to redo the same product elsewhere
     * (bench/torch_matmul.py): " xN" for a batch of N products, transposes,
     * accumulate into C, bias, residual R, and "ones" when op(A)'s last rows
     * are ones (the bias gradient); zS: the split-K slices of each product */
    char flags[32], nb[16] = "";
    snprintf(flags, sizeof flags, "%s%s%s%s%s%s", trans_a ? " TA" : "", trans_b ? " TB" : "", accumulate ? " acc" : "",
             bias ? " bias" : "", R ? " res" : "", ones_rows ? " ones" : "");
    if (n > 1) snprintf(nb, sizeof nb, " x%d", n);
    char tl[16];
    if (sg.on) snprintf(tl, sizeof tl, "sg%dx%d", sg.bm, sg.bn);
    else snprintf(tl, sizeof tl, "t%d", tile);
    if (snprintf(ps->tag, sizeof ps->tag, "%dx%dx%d%s %s z%u%s", M, N, K, nb, tl, splits, flags) >=
        (int)sizeof ps->tag)
        ps->tag[0] = 0; /* never a cut tag: an empty one says "no shape" */
    if (splits > 1 && plain) {
        tt_gref part = {o->split_buf, 0};
        TT_CHECK(colsum_final(o, &s[3], C, part, (uint32_t)W, splits, (uint32_t)MN, cstride, st));
    } else if (splits > 1) {
        char pf[96];
        /* vec4 elements when every row, offset and product stride is
         * 4-aligned (same adds, same bits); sizes and offsets in elements */
        uint32_t v = ((N | C.off | bstride | cstride | (bias ? bias->off : 0) | (R ? R->off : 0)) & 3) == 0 ? 4 : 1;
        uint32_t x, y, We = (uint32_t)W / v;
        uint32_t a2[16] = {We,       splits,          C.off / v,      (uint32_t)N / v, (bias ? bias->off : 0) / v,
                           (R ? R->off : 0) / v, args[11], (uint32_t)MN / v, bstride / v, cstride / v};
        tt_gpu_buf b2[4] = {o->split_buf, bias ? bias->buf : o->split_buf, R ? R->buf : o->split_buf, C.buf};
        static const uint8_t k2s[4] = {TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_READ, TT_GPU_BIND_RW};
        tt_gops_grid1(o, ((uint64_t)We + TT_WG_ELEM - 1) / TT_WG_ELEM, &x, &y);
        snprintf(pf, sizeof pf, "const WG: u32 = %uu;\nalias E = %s;\n", TT_WG_ELEM, v == 4 ? "vec4<f32>" : "f32");
        TT_CHECK(tt_gops_make_site(o, &s[3], "matmul_splitk_reduce", pf, a2, 0, 4, b2, k2s, x, y, 1, st));
    }
    return TT_OK;
}

int tt_gop_matmul_batch(tt_gops *o, tt_gsite *s, int n, uint32_t bstride, tt_gref C, tt_gref A, tt_gref B,
                        const tt_gref *bias, const tt_gref *R, int M, int N, int K, int trans_a, int trans_b,
                        int accumulate, int ones_rows, tt_status *st) {
    return mm_sites(o, s, n, n, 0, bstride, 0, C, A, B, bias, R, M, N, K, trans_a, trans_b, accumulate, ones_rows,
                    st);
}

int tt_gop_matmul_batch_solo(tt_gops *o, tt_gsite *s, int n, uint32_t bstride, uint32_t cstride, tt_gref C, tt_gref A,
                             tt_gref B, const tt_gref *bias, const tt_gref *R, int M, int N, int K, int trans_a,
                             int trans_b, int accumulate, int ones_rows, tt_status *st) {
    return mm_sites(o, s, n, 1, 1, bstride, cstride, C, A, B, bias, R, M, N, K, trans_a, trans_b, accumulate,
                    ones_rows, st);
}

/* ---- two-stage column sums ----------------------------------------------
 * Stage 1 (matmul_colsum, layernorm_backward_dwdb): chunks of
 * tt_gop_colsum_chunk(rows) rows (short serial chains: 16 rows, up to 128
 * chunks), one partial row per chunk; stage 2 (matmul_colsum_final) adds
 * the partial rows in chunk order. */
uint32_t tt_gop_colsum_chunk(int rows) {
    uint32_t c = (uint32_t)((rows + 127) / 128);
    return c < 16 ? 16 : c;
}

size_t tt_gop_colsum_part_elems(int rows, int N) {
    uint32_t ch = tt_gop_colsum_chunk(rows);
    return (size_t)((rows + ch - 1) / ch) * (size_t)N;
}

/* outputs j of product j / PW at out + (j / PW)*ostride + j % PW (PW = W:
 * contiguous) */
static int colsum_final(tt_gops *o, tt_gsite *s, tt_gref out, tt_gref part, uint32_t W, uint32_t n_chunks, uint32_t PW,
                        uint32_t ostride, tt_status *st) {
    char pf[128];
    if (part.off != 0) return tt_fail(st, TT_EINVAL, "webgpu: reduction scratch must start its buffer");
    if (PW == 0 || PW >= W) PW = W, ostride = W;
    /* vec4 elements (4 neighbouring columns) when W, the product size and
     * stride and the offset are 4-aligned: the same adds in the same order */
    uint32_t v = ((W | PW | ostride | out.off) & 3) == 0 ? 4 : 1;
    uint32_t args[16] = {W / v, n_chunks, out.off / v, PW / v, ostride / v};
    tt_gpu_buf bufs[2] = {part.buf, out.buf};
    static const uint8_t kinds[2] = {TT_GPU_BIND_READ, TT_GPU_BIND_RW};
    /* lanes per column: about 4 chunks per lane, at most 16 lanes */
    uint32_t lanes = 1;
    while (lanes < 16 && lanes * 4 < n_chunks) lanes *= 2;
    uint32_t cw = TT_WG_ELEM / lanes, x, y;
    tt_gops_grid1(o, ((uint64_t)W / v + cw - 1) / cw, &x, &y);
    snprintf(pf, sizeof pf, "const WG: u32 = %uu;\nconst LANES: u32 = %uu;\nalias E = %s;\n", TT_WG_ELEM, lanes,
             v == 4 ? "vec4<f32>" : "f32");
    return tt_gops_make_site(o, s, "matmul_colsum_final", pf, args, 0, 2, bufs, kinds, x, y, 1, st);
}

int tt_gop_colsum_final(tt_gops *o, tt_gsite *s, tt_gref out, tt_gref part, uint32_t W, uint32_t n_chunks,
                        tt_status *st) {
    return colsum_final(o, s, out, part, W, n_chunks, W, W, st);
}

int tt_gop_matmul_backward_bias(tt_gops *o, tt_gsite *s, tt_gref db, tt_gref dout, tt_gref part, int rows, int N,
                                tt_status *st) {
    char pf[64];
    uint32_t ch = tt_gop_colsum_chunk(rows), nch = ((uint32_t)rows + ch - 1) / ch;
    uint32_t args[16] = {(uint32_t)rows, (uint32_t)N, dout.off, ch};
    tt_gpu_buf bufs[2] = {dout.buf, part.buf};
    static const uint8_t kinds[2] = {TT_GPU_BIND_READ, TT_GPU_BIND_RW};
    TT_CHECK(tt_gops_make_site(o, &s[0], "matmul_colsum", tt_gops_wg_prefix(TT_WG_ELEM, pf, sizeof pf), args, 0, 2,
                               bufs, kinds, ((uint32_t)N + TT_WG_ELEM - 1) / TT_WG_ELEM, nch, 1, st));
    return tt_gop_colsum_final(o, &s[1], db, part, (uint32_t)N, nch, st);
}
