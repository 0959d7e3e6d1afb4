/* matmul_engine.c — the matrix-multiply engine of the CPU backend
 * (matmul_engine.h): C(M,N) (+)= sum over segments of A_s . B_s, packed,
 * tiled and threaded; the linear-layer ops over it are matmul.c.
 *
 * Design (one source for every ISA through simd.h):
 *  - phase 1 packs B once per op into shared scratch: K blocks of KC rows,
 *    each cut into micro-panels of NR = NV vectors of columns (k-major,
 *    zero-padded), reading B plain or transposed, so NN, NT and TN products
 *    all run the same kernel and no separate transpose pass exists;
 *  - phase 2 (same pool wake, after a barrier) hands out output blocks of
 *    mc x nc (sizes depend only on the shape), costliest tasks first; a
 *    chain longer than KSLICE (weight gradients) runs as one such phase per
 *    K slice, all threads on the same slice, each thread on the same output
 *    blocks in every slice (bound chunks, runtime.h); a one-segment chain longer
 *    than two slices packs its B one slice ahead, in the previous phase,
 *    into one of two slice buffers (less scratch, and each slice is still
 *    in the caches when it is read), each thread its share of that pack at
 *    a point among its blocks that depends on the thread (mm_slots: a
 *    quarter of the threads read memory while the rest compute, not all at
 *    the end of the phase); a weight gradient's B (dY) is packed
 *    by row chunks (a few rows of every panel at a time, so its rows are
 *    read in address order as streams, not NR floats a row apart), and its
 *    bias gradient (B's column sums, in row order) is added by the output
 *    blocks of row 0 from the packed panels they compute with; for each K
 *    block a thread runs
 *    the register-blocked micro-kernel over its MR x NR tiles: MR*NV vector
 *    accumulators stay in registers for the whole K block, with one
 *    broadcast of A and NV vector loads of the packed B panel (L1-resident)
 *    per k. A row-major A is read in place (MR row streams);
 *  - a transposed A (the weight-gradient products dW = X^T . dY) is packed
 *    too, in the same phase as B (for a sliced chain one slice ahead): a
 *    few rows of X at a time, tile after tile, each MR-row tile gets a
 *    k-major panel, so
 *    the kernel streams its A contiguously instead of MR floats per row of X
 *    at a stride of lda (on many threads every output block meets its rows
 *    of X cold, and that strided first read is not prefetched as a stream);
 *    q, k and v share one packed X. A product whose scratch does not count
 *    a packed A (tt_mm_gemm) reads it in place, an edge tile (fewer than MR
 *    rows) through a zero-padded copy in thread scratch;
 *  - C is loaded/stored between K blocks, which is exact, so every output
 *    element is the same chain of fused multiply-adds whatever the tiling or
 *    the thread count. No partial sums, no reductions;
 *  - optional epilogues on the final value: GELU of the result into a second
 *    output (fc forward), and a product with GELU's derivative (the MLP's
 *    dinp), so the MLP needs no separate pass over its (N, 4C) activations;
 *  - a single-row forward (the sampler's one token) skips the packing and
 *    runs the same chain per output column straight from the weight rows
 *    (matmul.c): the same bits as the engine, at the cost of one read
 *    of the weights.
 * MM_KC / MM_UNITS / MM_MR / MM_NV / MM_MC_TILES / MM_NC_TILES / MM_KUNROLL
 * can be overridden at compile time (bench/ and dev/ harnesses). */

#include "matmul_engine.h"

static inline int64_t tt_mm_units(const tt_mm_job *j) { return (int64_t)j->mb * j->nb; }

#define TT_COLSUM_W (4 * TT_VW)
static inline int64_t tt_colsum_chunks(int OC) { return (OC + TT_COLSUM_W - 1) / TT_COLSUM_W; }

/* Tile MR x (NV vectors), one pair per ISA. AVX-512 (32 registers): 8 x 3,
 * 24 accumulators, 3 B vectors and a broadcast, 11 loads per 24 fused
 * multiply-adds. AVX/AVX2 (16 registers): 6 x 2. WebAssembly: V8 keeps few
 * values in its allocatable XMM registers and SIMD128 has no FMA (a product
 * needs a temporary), so a 6 x 2 tile spills there; 2 x 4 (8 accumulators,
 * 4 B vectors, one broadcast, one product) does not. A harness's MM_MR
 * alone takes 2 vectors; MM_NV sets the width. */
#if defined(MM_MR)
#define MR MM_MR
#define NV_ISA 2
#elif TT_VW >= 16
#define MR 8
#define NV_ISA 3
#elif defined(__wasm_simd128__)
#define MR 2
#define NV_ISA 4
#else
#define MR 6
#define NV_ISA 2
#endif
#if defined(MM_NV)
#define NV MM_NV
#else
#define NV NV_ISA
#endif
#define NR (NV * TT_VW)
#ifndef MM_KC
#define MM_KC 256
#endif
#ifndef MM_UNITS
#define MM_UNITS 48
#endif
#define KC MM_KC
#ifndef MM_MC_TILES
#define MM_MC_TILES 12
#endif
#define MC_MAX (MM_MC_TILES * MR)
#ifndef MM_NC_TILES
#define MM_NC_TILES 4
#endif
#define NC_MAX (MM_NC_TILES * NR)
#define UNITS_TARGET MM_UNITS

#if defined(__clang__) && defined(MM_KUNROLL)
#define KUNROLL _Pragma(TT_STR(clang loop unroll_count(MM_KUNROLL)))
#else
#define KUNROLL
#endif
#define TT_STR_(x) #x
#define TT_STR(x) TT_STR_(x)

/* per thread: an edge tile of a transposed A (KC x MR) and two edge tiles of C */
size_t tt_matmul_thread_scratch(void) { return (size_t)KC * MR + 2 * (size_t)MR * NR + 64; }

static inline int round_up(int x, int m) { return (x + m - 1) / m * m; }

static size_t tt_mm_packed_floats(int N, int K_total) { return (size_t)K_total * (size_t)round_up(N, NR); }

/* K slice of the long chains (set_run); a multiple of KC */
#ifndef MM_KSLICE
#define MM_KSLICE (4 * KC)
#endif
#define KSLICE MM_KSLICE
_Static_assert(KSLICE % KC == 0, "a K slice is whole K blocks");

#define PA_MIN_N 256

/* packed transposed A of an M-row product over a K chain: whole K, or two
 * slices when the chain is double-buffered (tt_mm_plan) */
static size_t tt_mm_packed_a_floats(int M, int K) {
    return (size_t)(K > 2 * KSLICE ? 2 * KSLICE : K) * (size_t)round_up(M, MR);
}

/* offset of K block kb in a segment's packed B: whole K in order, or for a
 * double-buffered job slice kb / KSLICE in buffer (kb / KSLICE) % 2 */
static inline size_t kblock_off(const tt_mm_job *j, int kb, size_t npad) {
    if (!j->dbuf) return (size_t)kb * npad;
    return ((size_t)(kb / KSLICE % 2) * KSLICE + (size_t)(kb % KSLICE)) * npad;
}

/* plans blocking and the packed-B layout at pb; returns the floats of pb used */
static size_t tt_mm_plan(tt_mm_job *j, tt_cpu *cpu, float *pb) {
    int mc = TT_MIN(MC_MAX, round_up(j->M, MR));
    int nc = TT_MIN(NC_MAX, round_up(j->N, NR));
    for (;;) {
        int mb = (j->M + mc - 1) / mc, nb = (j->N + nc - 1) / nc;
        if ((int64_t)mb * nb >= UNITS_TARGET) break;
        if (mc >= 2 * MR && mc >= nc / 2) mc = round_up(mc / 2, MR);
        else if (nc >= 2 * NR) nc = round_up(nc / 2, NR);
        else if (mc >= 2 * MR) mc = round_up(mc / 2, MR);
        else break;
    }
    j->mc = mc;
    j->nc = nc;
    j->mb = (j->M + mc - 1) / mc;
    j->nb = (j->N + nc - 1) / nc;
    j->npanel = (j->N + NR - 1) / NR;
    j->cpu = cpu;
    j->pb = pb;
    size_t off = 0;
    j->pack_chunks = 0;
    j->ktotal = 0;
    for (int s = 0; s < j->nseg; s++) j->ktotal += j->seg[s].K;
    j->k0 = 0;
    j->k1 = j->ktotal;
    /* a single long chain (a weight gradient, K = tokens) is packed slice by
     * slice: two slices of scratch instead of K, and the slice computed next
     * is still in the caches when its compute phase reads it */
    j->dbuf = j->nseg == 1 && j->ktotal > 2 * KSLICE;
    j->pack_slice = 0;
    /* a weight gradient's B (dY, or X for the head) is long and read
     * plainly: packed by row chunks (pack_b_rows) */
    j->rowpack = j->nseg == 1 && j->seg[0].transA && !j->seg[0].transB;
    if (!j->dbuf || !j->rowpack) j->colsum = NULL; /* summed by a column-sum task instead */
    for (int s = 0; s < j->nseg; s++) {
        j->seg_off[s] = off;
        off += tt_mm_packed_floats(j->N, j->dbuf ? 2 * KSLICE : j->seg[s].K);
        j->pack_chunks += (int64_t)((j->seg[s].K + KC - 1) / KC) * j->npanel;
    }
    /* packing A costs a read and a write of M x K; it pays where each
     * packed element then feeds at least PA_MIN_N output columns */
    j->packa = j->packa && j->nseg == 1 && j->seg[0].transA && j->N >= PA_MIN_N;
    j->mpad = (size_t)round_up(j->M, MR);
    j->pa = NULL;
    j->packs_a = j->packa;
    if (j->packa) {
        j->pa = pb + off;
        off += tt_mm_packed_a_floats(j->M, j->ktotal);
    }
    return off;
}

/* ---- phase 1: pack one micro-panel of one K block ----
 * Layout of segment s: K block q (rows kb = q*KC .. kb+kc) starts at
 * seg_off[s] + kb * Npad; its panel p at + p * kc * NR, element (k, c) at
 * + k * NR + c. */
static float *pack_block(const tt_mm_job *j, int s, int q, int p) {
    const tt_mm_seg *sg = &j->seg[s];
    int kb = q * KC, kc = TT_MIN(KC, sg->K - kb);
    size_t npad = (size_t)j->npanel * NR;
    float *dst = j->pb + j->seg_off[s] + kblock_off(j, kb, npad) + (size_t)p * kc * NR;
    int j0 = p * NR, nc = TT_MIN(NR, j->N - j0);
    if (!sg->transB) {
        if (nc == NR) {
            for (int k = 0; k < kc; k++) {
                const float *src = sg->B + (size_t)(kb + k) * sg->ldb + j0;
                TT_UNROLL for (int v = 0; v < NV; v++) tt_vstore(dst + (size_t)k * NR + v * TT_VW, tt_vload(src + v * TT_VW));
            }
        } else {
            for (int k = 0; k < kc; k++) {
                const float *src = sg->B + (size_t)(kb + k) * sg->ldb + j0;
                float *d = dst + (size_t)k * NR;
                int cc = 0;
                for (; cc < nc; cc++) d[cc] = src[cc];
                for (; cc < NR; cc++) d[cc] = 0.0f;
            }
        }
    } else {
        /* B(k, j) = B[j*ldb + k]: read rows of the source, write columns of the panel */
        int cc = 0;
#if TT_HAVE_VTRANSPOSE
        /* TT_VW columns x TT_VW rows at a time through registers (whole-vector loads and stores) */
        for (; cc + TT_VW <= nc; cc += TT_VW) {
            const float *src = sg->B + (size_t)(j0 + cc) * sg->ldb + kb;
            int k = 0;
            for (; k + TT_VW <= kc; k += TT_VW) {
                tt_vf r[TT_VW];
                TT_UNROLL for (int l = 0; l < TT_VW; l++) r[l] = tt_vload(src + (size_t)l * sg->ldb + k);
                tt_vtranspose(r);
                TT_UNROLL for (int l = 0; l < TT_VW; l++) tt_vstore(dst + (size_t)(k + l) * NR + cc, r[l]);
            }
            for (; k < kc; k++)
                for (int l = 0; l < TT_VW; l++) dst[(size_t)k * NR + cc + l] = src[(size_t)l * sg->ldb + k];
        }
#endif
        for (; cc < nc; cc++) {
            const float *src = sg->B + (size_t)(j0 + cc) * sg->ldb + kb;
            for (int k = 0; k < kc; k++) dst[(size_t)k * NR + cc] = src[k];
        }
        for (cc = nc; cc < NR; cc++)
            for (int k = 0; k < kc; k++) dst[(size_t)k * NR + cc] = 0.0f;
    }
    return dst;
}

static void tt_mm_pack_task(void *arg, int64_t chunk, int tid) {
    (void)tid;
    const tt_mm_job *j = arg;
    int s = 0;
    int64_t c = chunk;
    for (;;) {
        int64_t n = (int64_t)((j->seg[s].K + KC - 1) / KC) * j->npanel;
        if (c < n) break;
        c -= n;
        s++;
    }
    pack_block(j, s, (int)(c / j->npanel), (int)(c % j->npanel));
}

/* a double-buffered job packed by panels (a long plain-A product): panel
 * `chunk` of K slice pack_slice, its K blocks in order */
static void tt_mm_pack_slice_task(void *arg, int64_t chunk, int tid) {
    (void)tid;
    const tt_mm_job *j = arg;
    int k0 = j->pack_slice * KSLICE, k1 = TT_MIN(j->ktotal, k0 + KSLICE);
    for (int kb = k0; kb < k1; kb += KC) pack_block(j, 0, kb / KC, (int)chunk);
}

/* ---- phase 1: pack a transposed A, and the B of a weight gradient ----
 * A(i, k) = A[k*lda + i]: the rows of the source are k. A chunk is PA_ROWS
 * consecutive k of one K block, all tiles, element (r, k) of tile t at
 * + k * MR + r (k-major), rows past M as zeros. The kernel then reads each
 * tile's A as one contiguous stream instead of MR floats at a stride of lda
 * per k. The chunk is copied PK_ROWS rows at a time, tile after tile: each
 * tile's panel gets PK_ROWS * MR contiguous floats, and the source rows are
 * read a few lines at a time per row, in address order (a row-by-row copy
 * into all tiles writes one line per tile per row pair, every tile's panel
 * kc * MR floats from the next: stores 4 KiB apart, half the copy rate). */
#define PA_ROWS 64
#ifndef PK_ROWS
#define PK_ROWS 16
#endif

static void pack_a_rows(const tt_mm_job *j, int q, int sub) {
    const tt_mm_seg *sg = &j->seg[0];
    int kb = q * KC, kc = TT_MIN(KC, sg->K - kb);
    int k0 = sub * PA_ROWS, k1 = TT_MIN(kc, k0 + PA_ROWS);
    int ntile = (int)(j->mpad / MR), full = j->M / MR;
    float *base = j->pa + kblock_off(j, kb, j->mpad);
    size_t ts = (size_t)kc * MR; /* one tile's panel */
    for (int r0 = k0; r0 < k1; r0 += PK_ROWS) {
        int n = TT_MIN(k1, r0 + PK_ROWS) - r0;
        const float *src = sg->A + (size_t)(kb + r0) * sg->lda;
        float *d = base + (size_t)r0 * MR;
        /* whole MR-float blocks (memcpy: the compiler may not assume src and d apart) */
        for (int t = 0; t < full; t++, d += ts)
            for (int k = 0; k < n; k++) memcpy(d + (size_t)k * MR, src + (size_t)k * sg->lda + (size_t)t * MR, MR * sizeof(float));
        /* the edge tile: rows past M are zeros */
        if (full < ntile)
            for (int k = 0; k < n; k++)
                for (int r = 0; r < MR; r++) d[(size_t)k * MR + r] = full * MR + r < j->M ? src[(size_t)k * sg->lda + full * MR + r] : 0.0f;
    }
}

/* B(k, j) = B[k*ldb + j] of a weight gradient (dY), K block q, rows
 * [sub * PA_ROWS, + PA_ROWS): the same rows in every panel, PK_ROWS rows at
 * a time, panel after panel (element (k, c) of panel p at + p * kc * NR +
 * k * NR + c, columns past N zero). Each source row is read a panel's
 * width at a time in address order, so the hardware streams it, where a
 * chunk of one panel over all rows reads NR floats per row, a row (and a
 * page) apart. */
#define PB_PANELS 16 /* panels per chunk (768 columns with NR = 48): chunks of a few hundred KiB */

static void pack_b_rows(const tt_mm_job *j, int q, int sub, int grp) {
    const tt_mm_seg *sg = &j->seg[0];
    int kb = q * KC, kc = TT_MIN(KC, sg->K - kb);
    int k0 = sub * PA_ROWS, k1 = TT_MIN(kc, k0 + PA_ROWS);
    int p0 = grp * PB_PANELS, p1 = TT_MIN(j->npanel, p0 + PB_PANELS);
    size_t ps = (size_t)kc * NR; /* one panel */
    float *base = j->pb + j->seg_off[0] + kblock_off(j, kb, (size_t)j->npanel * NR) + (size_t)p0 * ps;
    int full = TT_MIN(p1, j->N / NR) - p0, edge = p1 * NR > j->N ? j->N - (p1 - 1) * NR : 0;
    for (int r0 = k0; r0 < k1; r0 += PK_ROWS) {
        int n = TT_MIN(k1, r0 + PK_ROWS) - r0;
        const float *src = sg->B + (size_t)(kb + r0) * sg->ldb + (size_t)p0 * NR;
        float *d = base + (size_t)r0 * NR;
        for (int p = 0; p < full; p++, d += ps, src += NR)
            for (int k = 0; k < n; k++)
                TT_UNROLL for (int v = 0; v < NV; v++) tt_vstore(d + (size_t)k * NR + v * TT_VW, tt_vload(src + (size_t)k * sg->ldb + v * TT_VW));
        if (edge)
            for (int k = 0; k < n; k++) {
                int cc = 0;
                for (; cc < edge; cc++) d[(size_t)k * NR + cc] = src[(size_t)k * sg->ldb + cc];
                for (; cc < NR; cc++) d[(size_t)k * NR + cc] = 0.0f;
            }
    }
}

#define PA_SUBS (KC / PA_ROWS)
_Static_assert(KC % PA_ROWS == 0, "a K block is whole row chunks");

/* whole K (a job packed once): chunk = K block x row chunk */
static void tt_mm_pack_a_task(void *arg, int64_t chunk, int tid) {
    (void)tid;
    pack_a_rows(arg, (int)(chunk / PA_SUBS), (int)(chunk % PA_SUBS));
}

static inline int64_t pack_a_chunks(const tt_mm_job *j) { return (int64_t)((j->ktotal + KC - 1) / KC) * PA_SUBS; }

/* a double-buffered job: the K blocks of slice pack_slice x row chunks */
static void tt_mm_pack_a_slice_task(void *arg, int64_t chunk, int tid) {
    (void)tid;
    const tt_mm_job *j = arg;
    pack_a_rows(j, j->pack_slice * (KSLICE / KC) + (int)(chunk / PA_SUBS), (int)(chunk % PA_SUBS));
}

static inline int64_t pack_a_slice_chunks(const tt_mm_job *j) {
    int k0 = j->pack_slice * KSLICE, k1 = TT_MIN(j->ktotal, k0 + KSLICE);
    return (int64_t)((k1 - k0 + KC - 1) / KC) * PA_SUBS;
}

/* B by row chunks of at most PB_PANELS panels: whole K (chunk = K block x
 * row chunk x panel group), or the K blocks of slice pack_slice of a
 * double-buffered job */
static inline int pb_groups(const tt_mm_job *j) { return (j->npanel + PB_PANELS - 1) / PB_PANELS; }

static void tt_mm_pack_b_task(void *arg, int64_t chunk, int tid) {
    (void)tid;
    const tt_mm_job *j = arg;
    int64_t g = pb_groups(j), c = chunk / g;
    pack_b_rows(j, (int)(c / PA_SUBS), (int)(c % PA_SUBS), (int)(chunk % g));
}

static void tt_mm_pack_b_slice_task(void *arg, int64_t chunk, int tid) {
    (void)tid;
    const tt_mm_job *j = arg;
    int64_t g = pb_groups(j), c = chunk / g;
    pack_b_rows(j, j->pack_slice * (KSLICE / KC) + (int)(c / PA_SUBS), (int)(c % PA_SUBS), (int)(chunk % g));
}

/* the pack task of B for job j (the slice pack_slice of a double-buffered
 * one); *cost: floats per chunk */
static tt_task pack_b_task(tt_mm_job *j, double *cost) {
    if (j->rowpack) {
        *cost = (double)PA_ROWS * TT_MIN(j->npanel, PB_PANELS) * NR;
        return j->dbuf ? (tt_task){tt_mm_pack_b_slice_task, j, pack_a_slice_chunks(j) * pb_groups(j)}
                       : (tt_task){tt_mm_pack_b_task, j, pack_a_chunks(j) * pb_groups(j)};
    }
    *cost = (double)KSLICE * NR;
    return j->dbuf ? (tt_task){tt_mm_pack_slice_task, j, j->npanel} : (tt_task){tt_mm_pack_task, j, j->pack_chunks};
}

/* ---- the micro-kernel ----
 * acc (MR x NR) += A (MR x kc) . Bpanel (kc x NR). A element (r, k) is
 * ar[r][k] for row-major A, or a[k*ks + r] for transposed A. */
static inline __attribute__((always_inline)) void kloop_rows(int kc, const float *const *ar, const float *pb,
                                                             tt_vf acc[MR][NV]) {
    const float *a[MR];
    TT_UNROLL for (int r = 0; r < MR; r++) a[r] = ar[r];
    KUNROLL for (int k = 0; k < kc; k++) {
        tt_vf b[NV];
        TT_UNROLL for (int v = 0; v < NV; v++) b[v] = tt_vload(pb + v * TT_VW);
        TT_UNROLL for (int r = 0; r < MR; r++) {
            tt_vf x = tt_vdup(a[r][k]);
            TT_UNROLL for (int v = 0; v < NV; v++) acc[r][v] += x * b[v];
        }
        pb += NR;
    }
}

static inline __attribute__((always_inline)) void kloop_cols(int kc, const float *a, size_t ks, const float *pb,
                                                             tt_vf acc[MR][NV]) {
    KUNROLL for (int k = 0; k < kc; k++) {
        tt_vf b[NV];
        TT_UNROLL for (int v = 0; v < NV; v++) b[v] = tt_vload(pb + v * TT_VW);
        TT_UNROLL for (int r = 0; r < MR; r++) {
            tt_vf x = tt_vdup(a[r]);
            TT_UNROLL for (int v = 0; v < NV; v++) acc[r][v] += x * b[v];
        }
        a += ks;
        pb += NR;
    }
}

typedef struct {
    const tt_mm_job *j;
    float *edge_a;   /* KC x MR: zero-padded copy of an edge tile of a transposed A */
    float *edge_c;   /* MR x NR, thread scratch */
} tile_env;

/* One MR x NR tile of C at (i, jc) for K block [kb, kb+kc) of segment sg.
 * first: this is the first K block of the whole chain (initialise C). */
static inline __attribute__((always_inline)) void tile(const tile_env *e, const tt_mm_seg *sg, const float *pb,
                                                       int kb, int kc, int i, int rows, int jc, int cols, int first,
                                                       int last, int transA) {
    const tt_mm_job *j = e->j;
    float *c = j->C + (size_t)i * j->ldc + jc;
    size_t ldc = j->ldc;
    int full = rows == MR && cols == NR;
    int load_c = !first || j->accumulate;
    tt_vf acc[MR][NV];
    /* initial values */
    if (full) {
        if (load_c) {
            TT_UNROLL for (int r = 0; r < MR; r++) TT_UNROLL for (int v = 0; v < NV; v++) acc[r][v] = tt_vload(c + (size_t)r * ldc + v * TT_VW);
        } else {
            tt_vf b0[NV];
            TT_UNROLL for (int v = 0; v < NV; v++) b0[v] = j->bias ? tt_vload(j->bias + jc + v * TT_VW) : tt_vdup(0.0f);
            TT_UNROLL for (int r = 0; r < MR; r++) TT_UNROLL for (int v = 0; v < NV; v++) acc[r][v] = b0[v];
            if (j->R) {
                const float *R = j->R + (size_t)i * j->ldr + jc;
                TT_UNROLL for (int r = 0; r < MR; r++) TT_UNROLL for (int v = 0; v < NV; v++) acc[r][v] += tt_vload(R + (size_t)r * j->ldr + v * TT_VW);
            }
        }
    } else {
        float *t = e->edge_c;
        memset(t, 0, (size_t)MR * NR * sizeof(float));
        for (int r = 0; r < rows; r++)
            for (int cc = 0; cc < cols; cc++) {
                float x;
                if (load_c) x = c[(size_t)r * ldc + cc];
                else {
                    x = j->bias ? j->bias[jc + cc] : 0.0f;
                    if (j->R) x += j->R[(size_t)(i + r) * j->ldr + jc + cc];
                }
                t[r * NR + cc] = x;
            }
        TT_UNROLL for (int r = 0; r < MR; r++) TT_UNROLL for (int v = 0; v < NV; v++) acc[r][v] = tt_vload(t + r * NR + v * TT_VW);
    }
    /* the K loop */
    if (!transA) {
        const float *ar[MR];
        TT_UNROLL for (int r = 0; r < MR; r++) ar[r] = sg->A + (size_t)(i + (r < rows ? r : 0)) * sg->lda + kb;
        kloop_rows(kc, ar, pb, acc);
    } else if (j->pa) {
        /* the tile's panel of packed A (zero rows past M) */
        kloop_cols(kc, j->pa + kblock_off(j, kb, j->mpad) + (size_t)(i / MR) * kc * MR, MR, pb, acc);
    } else {
        /* A(i+r, kb+k) = A[(kb+k)*lda + i+r], read in place */
        const float *a = sg->A + (size_t)kb * sg->lda + i;
        size_t as = sg->lda;
        if (rows < MR) {
            float *t = e->edge_a;
            for (int k = 0; k < kc; k++) {
                int r = 0;
                for (; r < rows; r++) t[k * MR + r] = a[(size_t)k * as + r];
                for (; r < MR; r++) t[k * MR + r] = 0.0f;
            }
            a = t;
            as = MR;
        }
        kloop_cols(kc, a, as, pb, acc);
    }
    /* store, with the epilogues after the final K block */
    if (full) {
        if (last && j->gelu_in) {
            const float *g = j->gelu_in + (size_t)i * ldc + jc;
            for (int r = 0; r < MR; r++)
                for (int v = 0; v < NV; v++) acc[r][v] = acc[r][v] * tt_vact_grad(tt_vload(g + (size_t)r * ldc + v * TT_VW), j->act);
        }
        TT_UNROLL for (int r = 0; r < MR; r++) TT_UNROLL for (int v = 0; v < NV; v++) tt_vstore(c + (size_t)r * ldc + v * TT_VW, acc[r][v]);
        if (last && j->gelu_out) {
            float *g = j->gelu_out + (size_t)i * ldc + jc;
            for (int r = 0; r < MR; r++)
                for (int v = 0; v < NV; v++) tt_vstore(g + (size_t)r * ldc + v * TT_VW, tt_vact(acc[r][v], j->act));
        }
    } else {
        float *t = e->edge_c;
        TT_UNROLL for (int r = 0; r < MR; r++) TT_UNROLL for (int v = 0; v < NV; v++) tt_vstore(t + r * NR + v * TT_VW, acc[r][v]);
        if (last && j->gelu_in) {
            /* the same vector function as the full tiles, on a zero-padded copy */
            float *x = e->edge_c + MR * NR;
            memset(x, 0, (size_t)MR * NR * sizeof(float));
            for (int r = 0; r < rows; r++)
                for (int cc = 0; cc < cols; cc++) x[r * NR + cc] = j->gelu_in[(size_t)(i + r) * ldc + jc + cc];
            for (int q = 0; q < MR * NR; q += TT_VW) tt_vstore(t + q, tt_vload(t + q) * tt_vact_grad(tt_vload(x + q), j->act));
        }
        for (int r = 0; r < rows; r++)
            for (int cc = 0; cc < cols; cc++) c[(size_t)r * ldc + cc] = t[r * NR + cc];
        if (last && j->gelu_out) {
            for (int q = 0; q < MR * NR; q += TT_VW) tt_vstore(t + q, tt_vact(tt_vload(t + q), j->act));
            for (int r = 0; r < rows; r++)
                for (int cc = 0; cc < cols; cc++) j->gelu_out[(size_t)(i + r) * ldc + jc + cc] = t[r * NR + cc];
        }
    }
}

static void tile_rows(const tile_env *e, const tt_mm_seg *sg, const float *pb, int kb, int kc, int i, int rows,
                      int jc, int cols, int first, int last) {
    tile(e, sg, pb, kb, kc, i, rows, jc, cols, first, last, 0);
}

static void tile_cols(const tile_env *e, const tt_mm_seg *sg, const float *pb, int kb, int kc, int i, int rows,
                      int jc, int cols, int first, int last) {
    tile(e, sg, pb, kb, kc, i, rows, jc, cols, first, last, 1);
}

/* the bias gradient of a double-buffered weight gradient: cs[c] += the
 * kc rows of packed panel b in k order, for its nc columns. The output
 * blocks of row 0 add each K block of their panels before computing it
 * (the panel is then in L1 for the tiles); K blocks run in order within a
 * slice and slices in phase order, so every sum is the chain a column-sum
 * task computes over the rows of dY. */
static void colsum_panel(float *cs, const float *b, int kc, int nc) {
    if (nc == NR) {
        tt_vf acc[NV];
        TT_UNROLL for (int v = 0; v < NV; v++) acc[v] = tt_vload(cs + v * TT_VW);
        for (int k = 0; k < kc; k++) TT_UNROLL for (int v = 0; v < NV; v++) acc[v] += tt_vload(b + (size_t)k * NR + v * TT_VW);
        TT_UNROLL for (int v = 0; v < NV; v++) tt_vstore(cs + v * TT_VW, acc[v]);
    } else {
        for (int c = 0; c < nc; c++) {
            float x = cs[c];
            for (int k = 0; k < kc; k++) x += b[(size_t)k * NR + c];
            cs[c] = x;
        }
    }
}

/* ---- phase 2: one output block ---- */
static void tt_mm_task(void *arg, int64_t unit, int tid) {
    const tt_mm_job *j = arg;
    float *ts = tt_cpu_tscratch(j->cpu, tid);
    int ib = (int)(unit / j->nb), jb = (int)(unit % j->nb);
    int i0 = ib * j->mc, rows = TT_MIN(j->mc, j->M - i0);
    int j0 = jb * j->nc, cols = TT_MIN(j->nc, j->N - j0);
    tile_env e = {j, ts, ts + (size_t)KC * MR};
    size_t npad = (size_t)j->npanel * NR;
    int g = 0; /* chain offset of the segment */
    for (int s = 0; s < j->nseg; g += j->seg[s].K, s++) {
        const tt_mm_seg *sg = &j->seg[s];
        for (int kb = 0; kb < sg->K; kb += KC) {
            if (g + kb < j->k0 || g + kb >= j->k1) continue;
            int kc = TT_MIN(KC, sg->K - kb);
            int first = g + kb == 0;
            int last = s == j->nseg - 1 && kb + kc == sg->K;
            const float *blk = j->pb + j->seg_off[s] + kblock_off(j, kb, npad);
            for (int jc = j0; jc < j0 + cols; jc += NR) {
                const float *pb = blk + (size_t)(jc / NR) * kc * NR;
                int nc = TT_MIN(NR, j0 + cols - jc);
                if (j->colsum && i0 == 0) colsum_panel(j->colsum + jc, pb, kc, nc);
                for (int i = i0; i < i0 + rows; i += MR) {
                    int nr = TT_MIN(MR, i0 + rows - i);
                    if (sg->transA) tile_cols(&e, sg, pb, kb, kc, i, nr, jc, nc, first, last);
                    else tile_rows(&e, sg, pb, kb, kc, i, nr, jc, nc, first, last);
                }
            }
        }
    }
}

/* ---- column sums (bias gradients) ---- */
static void tt_colsum_task(void *arg, int64_t chunk, int tid) {
    (void)tid;
    const tt_colsum_job *c = arg;
    int j0 = (int)chunk * TT_COLSUM_W, j1 = TT_MIN(c->OC, j0 + TT_COLSUM_W);
    if (j1 - j0 == TT_COLSUM_W) {
        tt_vf acc[4];
        for (int v = 0; v < 4; v++) acc[v] = tt_vload(c->db + j0 + v * TT_VW);
        for (int i = 0; i < c->N; i++) {
            const float *row = c->dout + (size_t)i * c->ld + j0;
            for (int v = 0; v < 4; v++) acc[v] += tt_vload(row + v * TT_VW);
        }
        for (int v = 0; v < 4; v++) tt_vstore(c->db + j0 + v * TT_VW, acc[v]);
    } else {
        float acc[TT_COLSUM_W];
        for (int jj = j0; jj < j1; jj++) acc[jj - j0] = c->db[jj];
        for (int i = 0; i < c->N; i++) {
            const float *row = c->dout + (size_t)i * c->ld;
            for (int jj = j0; jj < j1; jj++) acc[jj - j0] += row[jj];
        }
        for (int jj = j0; jj < j1; jj++) c->db[jj] = acc[jj - j0];
    }
}

/* ---- running a set of matmul jobs (+ column sums) in one wake ---- */

/* phase 2's tasks: the costliest chunks first (a weight gradient's blocks
 * run the whole token slice, column sums read N rows), so the short ones
 * fill in at the end instead of a few long ones trailing while the other
 * threads wait. Outputs are disjoint, so the order changes no result. */
static void sort_tasks(tt_phase *ph, double *cost) {
    for (int a = 1; a < ph->n_tasks; a++) /* stable insertion sort */
        for (int b = a; b > 0 && cost[b] > cost[b - 1]; b--) {
            double tc = cost[b];
            cost[b] = cost[b - 1], cost[b - 1] = tc;
            tt_task tt = ph->t[b];
            ph->t[b] = ph->t[b - 1], ph->t[b - 1] = tt;
        }
}

/* A phase's output blocks are bound (tt_phase): dealt to the threads in
 * contiguous ranges, in each product's row-major block order, so a thread's
 * consecutive blocks share their rows of A and it reads a few row blocks of
 * A and the panels of B they need, instead of blocks claimed one by one from
 * all over the grid (every thread then reads most of the packed B, which the
 * pack phase left in other cores' caches). Where a phase has double-buffered
 * jobs (weight gradients), only their blocks are bound and go first: every
 * slice deals them to the threads in the same ranges, so a thread keeps its
 * blocks of C, slice after slice, in its own core's caches. The other tasks
 * keep their order after the bound ones; unbound chunks are claimed in order,
 * and a thread done with its range takes over the rest of other ranges. */
static int bound_task(const tt_task *t, int dbuf_only) {
    return t->fn == tt_mm_task && (!dbuf_only || ((const tt_mm_job *)t->arg)->dbuf);
}

static void bind_tasks(tt_phase *ph) {
    tt_task t[TT_MAX_TASKS];
    int n = 0, dbuf_only = 0;
    for (int a = 0; a < ph->n_tasks; a++) dbuf_only |= bound_task(&ph->t[a], 1);
    ph->bound = 0;
    for (int a = 0; a < ph->n_tasks; a++)
        if (bound_task(&ph->t[a], dbuf_only)) {
            t[n++] = ph->t[a];
            ph->bound += ph->t[a].n;
        }
    for (int a = 0; a < ph->n_tasks; a++)
        if (!bound_task(&ph->t[a], dbuf_only)) t[n++] = ph->t[a];
    memcpy(ph->t, t, (size_t)n * sizeof *t);
}

/* A slice phase's bound output blocks and its packing of the next slice,
 * dealt together: thread t of n gets the blocks [t*U/n, (t+1)*U/n) (the
 * same in every slice, as bound chunks) and the pack chunks [t*P/n,
 * (t+1)*P/n), and runs its pack chunks at a point of its blocks that
 * depends on t (before them, a third or two thirds in, after them). The
 * pack is a pass over memory (the next slice of dY and X) and the blocks are
 * multiply-adds from the caches: run by all threads at the end of the phase,
 * the pack has every core wait on memory at once; staggered, a quarter of
 * the threads pack while the others compute. One task of n slots of S
 * chunks (the runtime deals thread t the chunks [t*S, (t+1)*S)); which
 * thread runs a chunk, and when in the phase, changes no result: the blocks'
 * outputs are disjoint and the pack writes the slice buffer no block of this
 * phase reads. */
#define SLOT_POS 4 /* positions of a thread's pack chunks among its blocks */

typedef struct {
    tt_task t[TT_MAX_TASKS]; /* the bound block tasks (nb of them), then the pack tasks */
    int nt, nb;
    int64_t U, P, S;         /* blocks, pack chunks, chunks per slot */
    int n;                   /* threads */
} mm_slots;

/* chunk i of the tasks [a, b) of s (numbered across them in order) */
static void slot_run(const mm_slots *s, int a, int b, int64_t i, int tid) {
    for (int k = a; k < b; k++) {
        if (i < s->t[k].n) {
            s->t[k].fn(s->t[k].arg, i, tid);
            return;
        }
        i -= s->t[k].n;
    }
}

static void tt_mm_slot_task(void *arg, int64_t chunk, int tid) {
    const mm_slots *s = arg;
    int t = (int)(chunk / s->S), g = TT_MIN(s->n, SLOT_POS);
    int64_t o = chunk % s->S;
    int64_t u0 = t * s->U / s->n, nu = (t + 1) * s->U / s->n - u0;
    int64_t p0 = t * s->P / s->n, np = (t + 1) * s->P / s->n - p0;
    int64_t pos = g > 1 ? nu * (t % g) / (g - 1) : nu; /* blocks before the pack chunks */
    if (o < pos) slot_run(s, 0, s->nb, u0 + o, tid);
    else if (o < pos + np) slot_run(s, s->nb, s->nt, p0 + o - pos, tid);
    else if (o < nu + np) slot_run(s, 0, s->nb, u0 + o - np, tid);
}

static int slice_pack_task(const tt_task *t) {
    return t->fn == tt_mm_pack_b_slice_task || t->fn == tt_mm_pack_slice_task || t->fn == tt_mm_pack_a_slice_task;
}

/* replaces phase ph's bound blocks (first, after bind_tasks) and its slice
 * pack tasks by one task of slots in *s (with more than one thread and
 * something to pack) */
static void stagger_pack(tt_phase *ph, mm_slots *s, int nthreads) {
    int64_t U = 0, P = 0;
    int nb = 0;
    for (int a = 0; a < ph->n_tasks; a++) {
        if (U < ph->bound) U += ph->t[a].n, nb++;
        else if (slice_pack_task(&ph->t[a])) P += ph->t[a].n;
    }
    if (nthreads < 2 || !U || !P) return;
    memset(s, 0, sizeof *s);
    tt_task rest[TT_MAX_TASKS];
    int nr = 0;
    for (int a = 0; a < ph->n_tasks; a++) {
        if (a < nb) s->t[s->nt++] = ph->t[a];
        else if (!slice_pack_task(&ph->t[a])) rest[nr++] = ph->t[a];
    }
    s->nb = s->nt;
    for (int a = nb; a < ph->n_tasks; a++)
        if (slice_pack_task(&ph->t[a])) s->t[s->nt++] = ph->t[a];
    s->U = U, s->P = P, s->n = nthreads;
    for (int t = 0; t < nthreads; t++)
        s->S = TT_MAX(s->S, (t + 1) * U / nthreads - t * U / nthreads + (t + 1) * P / nthreads - t * P / nthreads);
    ph->t[0] = (tt_task){tt_mm_slot_task, s, s->S * nthreads};
    memcpy(ph->t + 1, rest, (size_t)nr * sizeof *rest);
    ph->n_tasks = 1 + nr;
    ph->bound = s->S * nthreads;
}

/* Products with a long K chain (weight gradients: K = tokens) run their K
 * in slices of KSLICE, one compute phase each, all threads on the same
 * slice: the slice's rows of A and packed B are read from memory once and
 * shared through the caches by every output block, instead of each block
 * streaming the whole K of its rows and columns on its own. C is stored and
 * reloaded between slices (exact), so every element keeps its chain. */

/* a column sum that a double-buffered job of the set computes while packing */
static int summed_in_pack(const tt_mm_set *m, const tt_colsum_job *cs) {
    for (int i = 0; i < m->n; i++)
        if (m->jobs[i]->colsum == cs->db) return 1;
    return 0;
}

void tt_mm_set_run(tt_cpu *cpu, tt_mm_set *m) {
    size_t need = 0;
    for (int i = 0; i < m->n; i++) need += tt_mm_plan(m->jobs[i], cpu, cpu->scratch + need);
    if (!tt_cpu_need(cpu, need, m->n ? tt_matmul_thread_scratch() : 0, m->op)) return;
    /* jobs with the same transposed A (q, k and v's weight gradients all
     * read the layer input) share one packed copy */
    for (int i = 0; i < m->n; i++)
        for (int k = 0; k < i && m->jobs[i]->packs_a; k++) {
            const tt_mm_job *a = m->jobs[k], *b = m->jobs[i];
            if (a->packs_a && a->seg[0].A == b->seg[0].A && a->seg[0].lda == b->seg[0].lda && a->M == b->M &&
                a->ktotal == b->ktotal && a->dbuf == b->dbuf) {
                m->jobs[i]->pa = a->pa;
                m->jobs[i]->packs_a = 0;
            }
        }
    int nslice = 1;
    for (int i = 0; i < m->n; i++) nslice = TT_MAX(nslice, (m->jobs[i]->ktotal + KSLICE - 1) / KSLICE);
    tt_phase ph[TT_MAX_PHASES];
    int nph = 0;
    memset(ph, 0, sizeof ph);
    if (m->n) {
        for (int i = 0; i < m->n; i++) {
            tt_mm_job *j = m->jobs[i];
            double c;
            ph[0].t[ph[0].n_tasks++] = pack_b_task(j, &c);
            if (j->packs_a)
                ph[0].t[ph[0].n_tasks++] = j->dbuf ? (tt_task){tt_mm_pack_a_slice_task, j, pack_a_slice_chunks(j)}
                                                   : (tt_task){tt_mm_pack_a_task, j, pack_a_chunks(j)};
        }
        nph = 1;
    }
    /* slice q: the jobs with K left past q * KSLICE (a short-K job runs
     * whole in slice 0); jobs are copied per slice, as the pool reads them
     * while later slices are set up */
    tt_mm_job jq[TT_MAX_PHASES][4], jp[TT_MAX_PHASES][4];
    mm_slots sl[TT_MAX_PHASES];
    for (int q = 0; q < nslice; q++) {
        tt_phase *p = &ph[nph];
        double cost[TT_MAX_TASKS];
        /* a double-buffered job packs slice q + 1 (the other buffer) while
         * slice q is computed; small chunks, so they fill in at the end */
        for (int i = 0; i < m->n; i++) {
            tt_mm_job *j = &jp[nph][i];
            *j = *m->jobs[i];
            if (!j->dbuf || (q + 1) * KSLICE >= j->ktotal) continue;
            j->pack_slice = q + 1;
            p->t[p->n_tasks] = pack_b_task(j, &cost[p->n_tasks]);
            p->n_tasks++;
            if (j->packs_a) {
                cost[p->n_tasks] = (double)PA_ROWS * j->mpad;
                p->t[p->n_tasks++] = (tt_task){tt_mm_pack_a_slice_task, j, pack_a_slice_chunks(j)};
            }
        }
        for (int i = 0; i < m->n; i++) {
            tt_mm_job *j = &jq[nph][i];
            *j = *m->jobs[i];
            int one = j->ktotal <= KSLICE;
            if (one && q > 0) continue;
            j->k0 = one ? 0 : q * KSLICE;
            j->k1 = one ? j->ktotal : TT_MIN(j->ktotal, (q + 1) * KSLICE);
            if (j->k0 >= j->ktotal) continue;
            cost[p->n_tasks] = (double)j->mc * j->nc * (double)(j->k1 - j->k0);
            p->t[p->n_tasks++] = (tt_task){tt_mm_task, j, tt_mm_units(j)};
        }
        if (q == 0)
            for (int i = 0; i < m->ncs; i++) {
                if (summed_in_pack(m, m->cs[i])) continue;
                /* memory-bound: a column chunk reads N rows of TT_COLSUM_W floats */
                cost[p->n_tasks] = 4.0 * m->cs[i]->N * TT_COLSUM_W;
                p->t[p->n_tasks++] = (tt_task){tt_colsum_task, m->cs[i], tt_colsum_chunks(m->cs[i]->OC)};
            }
        sort_tasks(p, cost);
        bind_tasks(p);
        stagger_pack(p, &sl[nph], cpu->nthreads);
        nph++;
        if (nph == TT_MAX_PHASES || q == nslice - 1) {
            tt_cpu_run(cpu, ph, nph);
            nph = 0;
            memset(ph, 0, sizeof ph);
        }
    }
}

/* ---- a general product for other op files (ops_internal.h) ---- */

void tt_mm_gemm(tt_cpu *cpu, float *C, size_t ldc, int accumulate, const float *A, size_t lda, int transA,
                const float *B, size_t ldb, int transB, int M, int N, int K, const char *op) {
    tt_mm_job m = tt_mm_nn_job(C, ldc, A, lda, B, ldb, M, N, K);
    m.seg[0].transA = transA;
    m.seg[0].transB = transB;
    m.accumulate = accumulate;
    tt_mm_set set = {{&m}, 1, {0}, 0, op};
    tt_mm_set_run(cpu, &set);
}

size_t tt_mm_gemm_scratch(int N, int K) { return tt_mm_packed_floats(N, K); }

/* ---- scratch needs ---- */

/* packed B of a weight gradient's chain over N tokens (tt_mm_plan: two
 * slices when it is double-buffered) */
static size_t tt_mm_dw_floats(int cols, int N) { return tt_mm_packed_floats(cols, N > 2 * KSLICE ? 2 * KSLICE : N); }

size_t tt_matmul_forward_scratch(int N, int C, int OC) { (void)N; return tt_mm_packed_floats(OC, C); }
size_t tt_matmul_backward_scratch(int N, int C, int OC) {
    return tt_mm_packed_floats(C, OC) + tt_mm_dw_floats(OC, N) + tt_mm_packed_a_floats(C, N);
}
size_t tt_qkv_forward_scratch(int N, int C) { (void)N; return 3 * tt_mm_packed_floats(C, C); }
size_t tt_qkv_backward_scratch(int N, int C) {
    return tt_mm_packed_floats(C, 3 * C) + 3 * (tt_mm_dw_floats(C, N) + tt_mm_packed_a_floats(C, N));
}
size_t tt_head_forward_scratch(int N, int C, int V) { (void)N; return tt_mm_packed_floats(V, C); }
size_t tt_head_backward_scratch(int N, int C, int V) {
    return tt_mm_packed_floats(C, V) + tt_mm_dw_floats(C, N) + tt_mm_packed_a_floats(V, N);
}
