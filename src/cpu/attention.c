/* attention.c — causal multi-head self-attention, forward and backward
 * (ops.h), with FlashAttention's memory behaviour: no (B,NH,T,T) matrix is
 * stored, only the statistics of each query row (logsumexp by the forward,
 * D = rowsum(dout * out) by the backward, one buffer as on the WebGPU
 * backend); the backward recomputes the scores. q, k, v are separate
 * pointers with a common row stride, so the packed (B,T,3C) projection output
 * is read in place. Also the single-query form the sampler runs against its
 * key/value cache (tt_attention_decode), on the forward's row kernel.
 *
 * Forward work units (hs a multiple of the vector width) are slices of a
 * head: its query blocks paired latest with earliest, so slices cost the
 * same, and the keys transposed once per slice; a head is cut into slices
 * only when there are too few heads to go round (FWD_UNITS). Otherwise
 * (b, h, block of QB queries), latest blocks first. Backward units are
 * whole (b, h) pairs, so one thread accumulates dK and dV of its head in
 * private scratch: race-free and in a fixed order (the last query block's
 * sums go straight to the outputs). When the heads leave the last round of threads at
 * most half busy (B*NH mod threads <= threads/2), those heads are cut in two
 * parts that recompute the scores of the (late queries x early keys)
 * rectangle instead (see bwd_split_at), so every thread gets about the same
 * work. Scores of one query row are computed against a transposed copy of K
 * (hs x T, per-thread scratch) so the key index is the vector dimension; the
 * blocked kernels also read each query block transposed (the micro-kernel
 * then broadcasts from one pointer) and the right operand of the P V
 * products (V, and K for dQ) from a contiguous copy of the head.
 * Every reduction runs in a fixed order: results do not depend on threads.
 *
 * Dropout of the probabilities (a tt_dropout_mask, ops.h): the forward
 * multiplies each row's exponentials by the mask factors after their sum is
 * taken (the logsumexp stays that of the undropped row); the backward
 * recomputes the same factors from the key, so no mask is stored. */
#include <limits.h>
#include <math.h>
#include <string.h>

#include "ops_internal.h"
#include "vmath.h"

#define QB 32 /* queries per forward work unit / backward block */
#define FWD_UNITS 48 /* blocked forward: heads split into slices up to this many units */

static inline int vec_count(int n) { return (n + TT_VW - 1) / TT_VW; }
static inline size_t tpad(int T) { return (size_t)vec_count(T) * TT_VW; }

size_t tt_attention_thread_scratch(int T, int hs) {
    size_t tp = tpad(T);
    size_t simple = 4 * (size_t)hs * tp + 2 * tp;
    /* forward: kT, S, inv, XT, V; backward: kT, vT, P, dS, XT, K, dK, dV */
    size_t blocked = 2 * (size_t)hs * tp + 3 * (size_t)T * hs + 2 * (size_t)QB * tp + QB + (size_t)hs * QB;
    return TT_MAX(simple, blocked) + 64;
}

/* XT (hs, ld) <- rows [0, n) of X (row stride ldx), columns [0, hs); the
 * padding up to a whole vector is zeroed. Blocks of TT_VW rows: each row of
 * XT gets one whole vector per block, so the TT_VW source rows stay in L1
 * and no two stores of a block land in the same line (a row-at-a-time copy
 * writes hs lines ld apart per source row, which alias in L1 when ld is a
 * power of two). */
static void transpose_head(float *XT, size_t ld, const float *X, size_t ldx, int n, int hs) {
    for (int j0 = 0; j0 < n; j0 += TT_VW) {
        int m = TT_MIN(TT_VW, n - j0);
        const float *x = X + (size_t)j0 * ldx;
        int d = 0;
#if TT_HAVE_VTRANSPOSE
        /* TT_VW x TT_VW blocks through registers: whole-vector loads and stores */
        for (; d + TT_VW <= hs; d += TT_VW) {
            tt_vf r[TT_VW];
            if (m == TT_VW) {
                TT_UNROLL for (int l = 0; l < TT_VW; l++) r[l] = tt_vload(x + (size_t)l * ldx + d);
            } else
                for (int l = 0; l < TT_VW; l++) r[l] = l < m ? tt_vload(x + (size_t)l * ldx + d) : tt_vdup(0.0f);
            tt_vtranspose(r);
            TT_UNROLL for (int l = 0; l < TT_VW; l++) tt_vstore(XT + (size_t)(d + l) * ld + j0, r[l]);
        }
#endif
        if (m == TT_VW) {
            for (; d < hs; d++) {
                tt_vf v;
                TT_UNROLL for (int l = 0; l < TT_VW; l++) v[l] = x[(size_t)l * ldx + d];
                tt_vstore(XT + (size_t)d * ld + j0, v);
            }
        } else {
            for (; d < hs; d++) {
                tt_vf v = tt_vdup(0.0f);
                for (int l = 0; l < m; l++) v[l] = x[(size_t)l * ldx + d];
                tt_vstore(XT + (size_t)d * ld + j0, v);
            }
        }
    }
}

/* Xc (n, hs) <- rows [0, n) of X (row stride ldx), columns [0, hs): the
 * right operand of pv_block contiguous, so its j-loop's rows spread over
 * all L1 sets (rows 3C apart in the packed q/k/v fall into few) */
static void copy_head(float *Xc, const float *X, size_t ldx, int n, int hs) {
    for (int j = 0; j < n; j++) memcpy(Xc + (size_t)j * hs, X + (size_t)j * ldx, (size_t)hs * sizeof(float));
}

/* s[j] = scale * sum_d x[d] * XT[d][j] for j in [0, nvec*VW) */
static void row_scores(float *s, const float *x, const float *XT, size_t ld, int hs, int nvec, float scale) {
    int jv = 0;
    for (; jv + 4 <= nvec; jv += 4) {
        tt_vf a0 = tt_vdup(0.0f), a1 = a0, a2 = a0, a3 = a0;
        const float *col = XT + (size_t)jv * TT_VW;
        for (int d = 0; d < hs; d++) {
            tt_vf xd = tt_vdup(x[d]);
            const float *r = col + (size_t)d * ld;
            a0 += xd * tt_vload(r);
            a1 += xd * tt_vload(r + TT_VW);
            a2 += xd * tt_vload(r + 2 * TT_VW);
            a3 += xd * tt_vload(r + 3 * TT_VW);
        }
        tt_vstore(s + (size_t)jv * TT_VW, a0 * scale);
        tt_vstore(s + (size_t)(jv + 1) * TT_VW, a1 * scale);
        tt_vstore(s + (size_t)(jv + 2) * TT_VW, a2 * scale);
        tt_vstore(s + (size_t)(jv + 3) * TT_VW, a3 * scale);
    }
    for (; jv < nvec; jv++) {
        tt_vf a0 = tt_vdup(0.0f);
        const float *col = XT + (size_t)jv * TT_VW;
        for (int d = 0; d < hs; d++) a0 += tt_vdup(x[d]) * tt_vload(col + (size_t)d * ld);
        tt_vstore(s + (size_t)jv * TT_VW, a0 * scale);
    }
}

/* o[d] = sum_{j<n} p[j] * Y[j][d] (Y row stride ldy), d in [0, hs).
 * Four interleaved chains over j (j mod 4), combined in a fixed order. */
static void weighted_rows(float *o, const float *p, const float *Y, size_t ldy, int n, int hs) {
    int d = 0;
    for (; d + TT_VW <= hs; d += TT_VW) {
        tt_vf a0 = tt_vdup(0.0f), a1 = a0, a2 = a0, a3 = a0;
        int j = 0;
        for (; j + 4 <= n; j += 4) {
            const float *y = Y + (size_t)j * ldy + d;
            a0 += tt_vdup(p[j]) * tt_vload(y);
            a1 += tt_vdup(p[j + 1]) * tt_vload(y + ldy);
            a2 += tt_vdup(p[j + 2]) * tt_vload(y + 2 * ldy);
            a3 += tt_vdup(p[j + 3]) * tt_vload(y + 3 * ldy);
        }
        for (; j < n; j++) a0 += tt_vdup(p[j]) * tt_vload(Y + (size_t)j * ldy + d);
        tt_vstore(o + d, (a0 + a1) + (a2 + a3));
    }
    for (; d < hs; d++) {
        float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
        int j = 0;
        for (; j + 4 <= n; j += 4) {
            const float *y = Y + (size_t)j * ldy + d;
            a0 += p[j] * y[0];
            a1 += p[j + 1] * y[ldy];
            a2 += p[j + 2] * y[2 * ldy];
            a3 += p[j + 3] * y[3 * ldy];
        }
        for (; j < n; j++) a0 += p[j] * Y[(size_t)j * ldy + d];
        o[d] = (a0 + a1) + (a2 + a3);
    }
}

/* y[d] += a * x[d] */
static inline void axpy(float *y, float a, const float *x, int hs) {
    int d = 0;
    tt_vf va = tt_vdup(a);
    for (; d + TT_VW <= hs; d += TT_VW) tt_vstore(y + d, tt_vload(y + d) + va * tt_vload(x + d));
    for (; d < hs; d++) y[d] += a * x[d];
}

static inline float dot(const float *a, const float *b, int n) {
    tt_vf acc = tt_vdup(0.0f);
    int i = 0;
    for (; i + TT_VW <= n; i += TT_VW) acc += tt_vload(a + i) * tt_vload(b + i);
    float s = tt_vsum(acc);
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

/* out[i] = tt_vhmax(v[i]) (max) or tt_vsum(v[i]) (!max), i in [0, n): TT_VW
 * rows at a time transposed, so lane l of one running vector follows row
 * l's scalar chain (the same operations in the same order: the same bits)
 * and the rows' chains run side by side instead of one after another. */
static void rows_reduce(float *out, tt_vf *v, int n, int max) {
    int i = 0;
#if TT_HAVE_VTRANSPOSE
    for (; i < n; i += TT_VW) {
        int m = TT_MIN(TT_VW, n - i);
        tt_vf r[TT_VW];
        if (m == TT_VW) {
            TT_UNROLL for (int l = 0; l < TT_VW; l++) r[l] = v[i + l];
        } else
            for (int l = 0; l < TT_VW; l++) r[l] = l < m ? v[i + l] : tt_vdup(0.0f);
        tt_vtranspose(r);
        tt_vf a;
        if (max) {
            a = r[0];
            TT_UNROLL for (int l = 1; l < TT_VW; l++) a = tt_vmax(r[l], a);
        } else {
            a = tt_vdup(0.0f);
            TT_UNROLL for (int l = 0; l < TT_VW; l++) a += r[l];
        }
        if (m == TT_VW)
            tt_vstore(out + i, a);
        else
            for (int l = 0; l < m; l++) out[i + l] = a[l];
    }
#endif
    for (; i < n; i++) out[i] = max ? tt_vhmax(v[i]) : tt_vsum(v[i]);
}

/* s[j] = x for j in (t, lim), lim a multiple of TT_VW above t */
static inline void fill_past(float *s, int t, int lim, float x) {
    int j = (t + 1) / TT_VW * TT_VW;
    tt_vi lane;
    for (int l = 0; l < TT_VW; l++) lane[l] = l;
    tt_vf vx = tt_vdup(x);
    if (j < lim) tt_vstore(s + j, tt_vselect(lane + j > t, vx, tt_vload(s + j)));
    for (j += TT_VW; j < lim; j += TT_VW) tt_vstore(s + j, vx);
}

/* the mask factors of keys [j, j + TT_VW) of the query row whose element
 * index starts at base (0 past the query t: causally masked) */
static inline tt_vf drop_vec(const tt_dropout_mask *drop, size_t base, int j, int t) {
    float m[TT_VW];
    for (int l = 0; l < TT_VW; l++) m[l] = j + l <= t ? tt_dropout_factor(drop, (uint32_t)(base + (size_t)(j + l))) : 0.0f;
    return tt_vload(m);
}

/* the element index ((b*NH + h)*T + tq)*T + tk of the probabilities fits 32 bits */
static int drop_fits(tt_cpu *cpu, int B, int NH, int T, const char *op) {
    if ((uint64_t)B * (uint64_t)NH * (uint64_t)T * (uint64_t)T <= (uint64_t)UINT32_MAX + 1) return 1;
    tt_cpu_fail(cpu, "%s: B*NH*T*T exceeds the 32-bit element index of the dropout masks", op);
    return 0;
}

/* p[j] *= factor for j in [0, n): the dropout of one forward row */
static void drop_row(float *p, const tt_dropout_mask *drop, size_t base, int n) {
    for (int j = 0; j < n; j++) p[j] *= tt_dropout_factor(drop, (uint32_t)(base + (size_t)j));
}

typedef struct {
    tt_cpu *cpu;
    const tt_dropout_mask *drop;  /* NULL: no dropout */
    float *out, *lse, *D;         /* lse, D: (B,NH,T) halves of the stats buffer */
    float *dq, *dk, *dv;
    const float *q, *k, *v;       /* row stride ld */
    const float *dout, *fout;
    size_t ld;
    int B, T, C, NH, hs, nqb;
    int nslice;                   /* blocked forward: units per head */
    int nwhole, kb;               /* blocked backward: heads run whole (the rest in two parts), split block */
    float scale;
} att_ctx;

/* One query row against keys [0, n): scores against the transposed keys kT
 * (hs, ld), softmax, o = sum_j p_j V_j (V row stride ldv); returns the
 * logsumexp of the scaled scores. s: scratch of vec_count(n) vectors. */
static float attend_row(float *o, const float *q, const float *kT, size_t ld, const float *V, size_t ldv, int n, int hs,
                        float scale, float *s, const tt_dropout_mask *drop, size_t drop_base) {
    int nvec = vec_count(n);
    row_scores(s, q, kT, ld, hs, nvec, scale);
    for (int j = n; j < nvec * TT_VW; j++) s[j] = -INFINITY;
    tt_vf vm = tt_vdup(-INFINITY);
    for (int jv = 0; jv < nvec; jv++) vm = tt_vmax(vm, tt_vload(s + (size_t)jv * TT_VW));
    float m = tt_vhmax(vm);
    tt_vf vs = tt_vdup(0.0f);
    for (int jv = 0; jv < nvec; jv++) {
        tt_vf p = tt_vexp_le88(tt_vload(s + (size_t)jv * TT_VW) - m);
        tt_vstore(s + (size_t)jv * TT_VW, p);
        vs += p;
    }
    float sum = tt_vsum(vs);
    if (drop) drop_row(s, drop, drop_base, n);
    weighted_rows(o, s, V, ldv, n, hs);
    float inv = 1.0f / sum;
    for (int d = 0; d < hs; d++) o[d] *= inv;
    return m + logf(sum);
}

/* forward unit: chunk -> (query block, b, h); latest query blocks first */
static void att_fwd_simple(void *arg, int64_t chunk, int tid) {
    att_ctx *a = arg;
    int T = a->T, C = a->C, NH = a->NH, hs = a->hs;
    int bh = (int)(chunk % ((int64_t)a->B * NH));
    int qb = a->nqb - 1 - (int)(chunk / ((int64_t)a->B * NH));
    int b = bh / NH, h = bh % NH;
    int t0 = qb * QB, t1 = TT_MIN(T, t0 + QB);
    size_t ld = tpad(T), lq = a->ld;
    float *kT = tt_cpu_tscratch(a->cpu, tid);
    float *s = kT + (size_t)hs * ld;
    size_t off = (size_t)b * T * lq + (size_t)h * hs;
    transpose_head(kT, ld, a->k + off, lq, t1, hs);
    for (int t = t0; t < t1; t++) {
        float *o = a->out + ((size_t)b * T + t) * C + (size_t)h * hs;
        size_t si = ((size_t)b * NH + h) * T + t;
        a->lse[si] = attend_row(o, a->q + off + (size_t)t * lq, kT, ld, a->v + off, lq, t + 1, hs, a->scale, s, a->drop,
                                si * (size_t)T);
    }
}

/* The head's keys and values transposed (kT, vT: (hs, ld)) and its dK, dV
 * accumulators (T, hs) zeroed, at the start of the caller's thread
 * scratch; returns the floats after them. */
static float *bwd_head_begin(const att_ctx *a, int tid, size_t off, float **kT, float **vT, float **dK, float **dV) {
    int T = a->T, hs = a->hs;
    size_t ld = tpad(T);
    *kT = tt_cpu_tscratch(a->cpu, tid);
    *vT = *kT + (size_t)hs * ld;
    *dK = *vT + (size_t)hs * ld;
    *dV = *dK + (size_t)T * hs;
    transpose_head(*kT, ld, a->k + off, a->ld, T, hs);
    transpose_head(*vT, ld, a->v + off, a->ld, T, hs);
    memset(*dK, 0, (size_t)T * hs * sizeof(float));
    memset(*dV, 0, (size_t)T * hs * sizeof(float));
    return *dV + (size_t)T * hs;
}

/* dk, dv of the head <- its accumulators */
static void bwd_head_end(const att_ctx *a, size_t off, const float *dK, const float *dV) {
    for (int t = 0; t < a->T; t++) {
        memcpy(a->dk + off + (size_t)t * a->ld, dK + (size_t)t * a->hs, (size_t)a->hs * sizeof(float));
        memcpy(a->dv + off + (size_t)t * a->ld, dV + (size_t)t * a->hs, (size_t)a->hs * sizeof(float));
    }
}

/* backward unit: one (b, h) */
static void att_bwd_simple(void *arg, int64_t chunk, int tid) {
    att_ctx *a = arg;
    int T = a->T, C = a->C, NH = a->NH, hs = a->hs;
    int b = (int)(chunk / NH), h = (int)(chunk % NH);
    size_t ld = tpad(T), lq = a->ld;
    size_t off = (size_t)b * T * lq + (size_t)h * hs;
    float *kT, *vT, *dk, *dv;
    float *p = bwd_head_begin(a, tid, off, &kT, &vT, &dk, &dv); /* (ld) */
    float *ds = p + ld;                                          /* (ld) */
    const float *K = a->k + off;
    const float scale = a->scale;
    for (int t = 0; t < T; t++) {
        const float *q = a->q + off + (size_t)t * lq;
        const float *dO = a->dout + ((size_t)b * T + t) * C + (size_t)h * hs;
        const float *O = a->fout + ((size_t)b * T + t) * C + (size_t)h * hs;
        size_t si = ((size_t)b * NH + h) * T + t;
        float l = a->lse[si];
        int n = t + 1, nvec = vec_count(n);
        float D = dot(dO, O, hs);
        a->D[si] = D;
        row_scores(p, q, kT, ld, hs, nvec, scale);
        row_scores(ds, dO, vT, ld, hs, nvec, 1.0f); /* dp */
        for (int j = n; j < nvec * TT_VW; j++) p[j] = -INFINITY;
        if (a->drop) /* dP = M.dPd*scale, dS = P.(dP - D), p <- Pd for dV */
            for (int jv = 0; jv < nvec; jv++) {
                tt_vf pv = tt_vexp_le88(tt_vload(p + (size_t)jv * TT_VW) - l), m = drop_vec(a->drop, si * (size_t)T, jv * TT_VW, t);
                tt_vstore(ds + (size_t)jv * TT_VW, pv * (m * tt_vload(ds + (size_t)jv * TT_VW) - D));
                tt_vstore(p + (size_t)jv * TT_VW, pv * m);
            }
        else
            for (int jv = 0; jv < nvec; jv++) {
                tt_vf pv = tt_vexp_le88(tt_vload(p + (size_t)jv * TT_VW) - l);
                tt_vstore(p + (size_t)jv * TT_VW, pv);
                tt_vstore(ds + (size_t)jv * TT_VW, pv * (tt_vload(ds + (size_t)jv * TT_VW) - D));
            }
        /* dq_t = scale * sum_j ds_j k_j */
        float *dq = a->dq + off + (size_t)t * lq;
        weighted_rows(dq, ds, K, lq, n, hs);
        for (int d = 0; d < hs; d++) dq[d] *= scale;
        /* dk_j += scale ds_j q_t ; dv_j += p_j dO_t */
        for (int j = 0; j < n; j++) {
            axpy(dk + (size_t)j * hs, scale * ds[j], q, hs);
            axpy(dv + (size_t)j * hs, p[j], dO, hs);
        }
    }
    bwd_head_end(a, off, dk, dv);
}

/* ================= blocked path (hs a multiple of the vector width) =================
 * Queries are processed in blocks of QB rows and, inside a block, in groups
 * of MQ rows that share register tiles: the score block S = Q K^T, the
 * output P V, and the backward's dS K, dS^T Q and P^T dO are all small
 * register-blocked products (MQ rows x 2 vectors of accumulators). Row
 * group g of a block only looks at keys [0, t0 + g_last], rounded up to a
 * whole vector; scores of keys past a row's own query are masked to 0. */

#if defined(ATT_MQ)
#define MQ ATT_MQ
#elif TT_VW >= 16
#define MQ 8
#else
#define MQ 4
#endif

/* keys (rounded up to whole vectors) that row group starting at q0 sees */
static inline int group_lim(int t0, int q0, int nq) {
    int nr = TT_MIN(MQ, nq - q0);
    return vec_count(t0 + q0 + nr) * TT_VW;
}

/* XT (hs, QB) <- the nq rows of a query block X (row stride ldx),
 * transposed, zero past nq: the left operand of scores_block, so the
 * micro-kernel broadcasts its MQ values of each d from one pointer. */
static void pack_block(float *XT, const float *X, size_t ldx, int nq, int hs) {
    transpose_head(XT, QB, X, ldx, nq, hs);
    for (int q = (int)tpad(nq); q < QB; q++)
        for (int d = 0; d < hs; d++) XT[(size_t)d * QB + q] = 0.0f;
}

/* S[q*lds + j] = scale * sum_d X[q][d] * YT[d*ldy + j], X packed by
 * pack_block (XT[d*QB + q]), for q in [0,nq), j in [0, min(group_lim(q's
 * group), jlim)); jlim a multiple of 2 vectors, so a column is computed in
 * the same pass as without the limit */
static void scores_block(float *S, size_t lds, const float *XT, int nq, int t0, const float *YT, size_t ldy, int hs,
                         float scale, int jlim) {
    for (int q0 = 0; q0 < nq; q0 += MQ) {
        int nr = TT_MIN(MQ, nq - q0), nvec = TT_MIN(group_lim(t0, q0, nq), jlim) / TT_VW;
        const float *x = XT + q0;
        int jv = 0;
        for (; jv + 2 <= nvec; jv += 2) {
            tt_vf acc[MQ][2];
            TT_UNROLL for (int r = 0; r < MQ; r++) acc[r][0] = acc[r][1] = tt_vdup(0.0f);
            const float *y = YT + (size_t)jv * TT_VW, *xd = x;
            for (int d = 0; d < hs; d++, y += ldy, xd += QB) {
                tt_vf b0 = tt_vload(y), b1 = tt_vload(y + TT_VW);
                TT_UNROLL for (int r = 0; r < MQ; r++) {
                    tt_vf a = tt_vdup(xd[r]);
                    acc[r][0] += a * b0;
                    acc[r][1] += a * b1;
                }
            }
            for (int r = 0; r < nr; r++) {
                tt_vstore(S + (size_t)(q0 + r) * lds + (size_t)jv * TT_VW, acc[r][0] * scale);
                tt_vstore(S + (size_t)(q0 + r) * lds + (size_t)(jv + 1) * TT_VW, acc[r][1] * scale);
            }
        }
        if (jv < nvec) {
            tt_vf acc[MQ];
            TT_UNROLL for (int r = 0; r < MQ; r++) acc[r] = tt_vdup(0.0f);
            const float *y = YT + (size_t)jv * TT_VW, *xd = x;
            for (int d = 0; d < hs; d++, y += ldy, xd += QB) {
                tt_vf b0 = tt_vload(y);
                TT_UNROLL for (int r = 0; r < MQ; r++) acc[r] += tt_vdup(xd[r]) * b0;
            }
            for (int r = 0; r < nr; r++) tt_vstore(S + (size_t)(q0 + r) * lds + (size_t)jv * TT_VW, acc[r] * scale);
        }
    }
}

/* O[q*ldo + c] = (rs ? rs[q] : alpha) * sum_{j < t0+g_last+1} P[q*ldp + j] * Y[j*ldy + c]
 * for c in [0, hs), hs a multiple of TT_VW */
static void pv_block(float *O, size_t ldo, const float *P, size_t ldp, int nq, int t0, const float *Y, size_t ldy, int hs,
                     const float *rs, float alpha) {
    for (int q0 = 0; q0 < nq; q0 += MQ) {
        int nr = TT_MIN(MQ, nq - q0), nj = t0 + q0 + nr;
        const float *p[MQ];
        TT_UNROLL for (int r = 0; r < MQ; r++) p[r] = P + (size_t)(q0 + (r < nr ? r : 0)) * ldp;
        int c = 0;
        for (; c + 2 * TT_VW <= hs; c += 2 * TT_VW) {
            tt_vf acc[MQ][2];
            TT_UNROLL for (int r = 0; r < MQ; r++) acc[r][0] = acc[r][1] = tt_vdup(0.0f);
            const float *pj = p[0];
            size_t pr[MQ];
            TT_UNROLL for (int r = 0; r < MQ; r++) pr[r] = (size_t)(p[r] - p[0]);
            for (int j = 0; j < nj; j++, pj++) {
                const float *y = Y + (size_t)j * ldy + c;
                tt_vf y0 = tt_vload(y), y1 = tt_vload(y + TT_VW);
                TT_UNROLL for (int r = 0; r < MQ; r++) {
                    tt_vf a = tt_vdup(pj[pr[r]]);
                    acc[r][0] += a * y0;
                    acc[r][1] += a * y1;
                }
            }
            for (int r = 0; r < nr; r++) {
                float sc = rs ? rs[q0 + r] : alpha;
                tt_vstore(O + (size_t)(q0 + r) * ldo + c, acc[r][0] * sc);
                tt_vstore(O + (size_t)(q0 + r) * ldo + c + TT_VW, acc[r][1] * sc);
            }
        }
        if (c < hs) {
            tt_vf acc[MQ];
            TT_UNROLL for (int r = 0; r < MQ; r++) acc[r] = tt_vdup(0.0f);
            for (int j = 0; j < nj; j++) {
                tt_vf y0 = tt_vload(Y + (size_t)j * ldy + c);
                TT_UNROLL for (int r = 0; r < MQ; r++) acc[r] += tt_vdup(p[r][j]) * y0;
            }
            for (int r = 0; r < nr; r++) tt_vstore(O + (size_t)(q0 + r) * ldo + c, acc[r] * (rs ? rs[q0 + r] : alpha));
        }
    }
}

/* O[(j-k0)*ldo + c] <- G[(j-k0)*ldg + c] + alpha * sum_q P[q*ldp + j] *
 * X[q*ldx + c], j in [k0, nk) (k0 a multiple of MQ), q over the rows whose
 * query t0 + q >= j (the others hold zeros there); O is G except for the
 * last query block, which writes the finished rows to their output. Rows j
 * of the block's own queries (j >= t0) get their first term here, G's
 * contents are ignored: 0 + x, as an fma with a zero addend (the bits of
 * adding to a zeroed row); rows j < t0 accumulate. */
static void ptx_block(float *O, size_t ldo, const float *G, size_t ldg, const float *P, size_t ldp, int nq, int t0,
                      int k0, int nk, const float *X, size_t ldx, int hs, float alpha) {
    const tt_vf zero = tt_vdup(0.0f);
    for (int j0 = k0; j0 < nk; j0 += MQ) {
        int nr = TT_MIN(MQ, nk - j0), qs = TT_MAX(0, j0 - t0), first = j0 >= t0;
        if (qs >= nq) continue;
        int c = 0;
        for (; c + 2 * TT_VW <= hs; c += 2 * TT_VW) {
            tt_vf acc[MQ][2];
            TT_UNROLL for (int r = 0; r < MQ; r++) acc[r][0] = acc[r][1] = tt_vdup(0.0f);
            for (int q = qs; q < nq; q++) {
                const float *x = X + (size_t)q * ldx + c, *p = P + (size_t)q * ldp + j0;
                tt_vf x0 = tt_vload(x), x1 = tt_vload(x + TT_VW);
                TT_UNROLL for (int r = 0; r < MQ; r++) {
                    tt_vf a = tt_vdup(p[r]);
                    acc[r][0] += a * x0;
                    acc[r][1] += a * x1;
                }
            }
            for (int r = 0; r < nr; r++) {
                const float *g = G + (size_t)(j0 + r - k0) * ldg + c;
                float *o = O + (size_t)(j0 + r - k0) * ldo + c;
                tt_vf g0 = first ? zero : tt_vload(g), g1 = first ? zero : tt_vload(g + TT_VW);
                tt_vstore(o, g0 + acc[r][0] * alpha);
                tt_vstore(o + TT_VW, g1 + acc[r][1] * alpha);
            }
        }
        if (c < hs) {
            tt_vf acc[MQ];
            TT_UNROLL for (int r = 0; r < MQ; r++) acc[r] = tt_vdup(0.0f);
            for (int q = qs; q < nq; q++) {
                tt_vf x0 = tt_vload(X + (size_t)q * ldx + c);
                const float *p = P + (size_t)q * ldp + j0;
                TT_UNROLL for (int r = 0; r < MQ; r++) acc[r] += tt_vdup(p[r]) * x0;
            }
            for (int r = 0; r < nr; r++) {
                const float *g = G + (size_t)(j0 + r - k0) * ldg + c;
                tt_vstore(O + (size_t)(j0 + r - k0) * ldo + c, (first ? zero : tt_vload(g)) + acc[r] * alpha);
            }
        }
    }
}

/* One query block qb of head (b, h) against the head's transposed keys kT
 * (hs, ld; at least the block's t1 rows): scores, softmax, P V. */
static void fwd_block(const att_ctx *a, int b, int h, int qb, const float *kT, const float *V, float *S, float *inv,
                      float *XT) {
    int T = a->T, C = a->C, NH = a->NH, hs = a->hs;
    int t0 = qb * QB, t1 = TT_MIN(T, t0 + QB), nq = t1 - t0;
    size_t ld = tpad(T), lq = a->ld;
    size_t off = (size_t)b * T * lq + (size_t)h * hs;
    pack_block(XT, a->q + off + (size_t)t0 * lq, lq, nq, hs);
    scores_block(S, ld, XT, nq, t0, kT, ld, hs, a->scale, INT_MAX);
    /* softmax of the rows, each step over all rows of the block before the
     * next (the row maxima and sums reduced TT_VW rows at a time) */
    tt_vf acc[QB];
    float m[QB], sum[QB];
    for (int q = 0; q < nq; q++) {
        int t = t0 + q, lim = group_lim(t0, q / MQ * MQ, nq);
        float *s = S + (size_t)q * ld;
        fill_past(s, t, lim, -INFINITY);
        tt_vf vm = tt_vdup(-INFINITY);
        for (int j = 0; j < lim; j += TT_VW) vm = tt_vmax(vm, tt_vload(s + j));
        acc[q] = vm;
    }
    rows_reduce(m, acc, nq, 1);
    for (int q = 0; q < nq; q++) {
        int lim = group_lim(t0, q / MQ * MQ, nq);
        float *s = S + (size_t)q * ld;
        tt_vf vs = tt_vdup(0.0f);
        for (int j = 0; j < lim; j += TT_VW) {
            tt_vf p = tt_vexp_le88(tt_vload(s + j) - m[q]);
            tt_vstore(s + j, p);
            vs += p;
        }
        acc[q] = vs;
    }
    rows_reduce(sum, acc, nq, 0);
    for (int q = 0; q < nq; q++) {
        int t = t0 + q;
        inv[q] = 1.0f / sum[q];
        size_t si = ((size_t)b * NH + h) * T + t;
        a->lse[si] = m[q] + logf(sum[q]);
        if (a->drop) drop_row(S + (size_t)q * ld, a->drop, si * (size_t)T, t + 1);
    }
    pv_block(a->out + ((size_t)b * T + t0) * C + (size_t)h * hs, (size_t)C, S, ld, nq, t0, V, (size_t)hs, hs, inv, 1.0f);
}

/* Forward unit: slice u of head (b, h). The head's query blocks pair up as
 * items (nqb-1-i, i) (the middle block alone when nqb is odd), so every
 * item costs about the same; slice u takes items u, u + nslice, ... and
 * transposes the keys once, up to its latest block (nqb-1-u). One slice per
 * head unless there are too few heads to go round the threads. */
static inline int fwd_items(int nqb) { return (nqb + 1) / 2; }

static int fwd_slices(int B, int NH, int nqb) {
    int heads = B * NH, want = (FWD_UNITS + heads - 1) / heads;
    return TT_MAX(1, TT_MIN(want, fwd_items(nqb)));
}

static void att_fwd_blocked(void *arg, int64_t chunk, int tid) {
    att_ctx *a = arg;
    int T = a->T, NH = a->NH, hs = a->hs, nqb = a->nqb;
    int bh = (int)(chunk / a->nslice), u = (int)(chunk % a->nslice);
    int b = bh / NH, h = bh % NH;
    size_t ld = tpad(T), lq = a->ld;
    float *kT = tt_cpu_tscratch(a->cpu, tid);
    float *S = kT + (size_t)hs * ld; /* (QB, ld) */
    float *inv = S + (size_t)QB * ld;
    float *XT = inv + QB;             /* (hs, QB) */
    float *V = XT + (size_t)hs * QB;  /* (nt, hs) */
    size_t off = (size_t)b * T * lq + (size_t)h * hs;
    int nt = TT_MIN(T, (nqb - u) * QB);
    transpose_head(kT, ld, a->k + off, lq, nt, hs);
    copy_head(V, a->v + off, lq, nt, hs);
    for (int i = u; i < fwd_items(nqb); i += a->nslice) {
        fwd_block(a, b, h, nqb - 1 - i, kT, V, S, inv, XT);
        if (i != nqb - 1 - i) fwd_block(a, b, h, i, kT, V, S, inv, XT);
    }
}

/* Backward of head (b, h), query blocks in order, as one of three parts:
 *   BWD_WHOLE  every query block, every key;
 *   BWD_EARLY  the keys before Kb = kb*QB: query blocks before kb whole, and
 *              for the later blocks only the scores of those keys, for their
 *              dK, dV rows (each tile's scores, dS and dK, dV sums are the
 *              ones BWD_WHOLE computes);
 *   BWD_LATE   the query blocks from kb on, their dQ in full and dK, dV of
 *              the keys from Kb on.
 * EARLY and LATE together give every output the bits of WHOLE: a dQ row is
 * one part's sum over its keys in order, a dK or dV row one part's sum over
 * the query blocks in order; they only both compute the scores of the
 * (late query, early key) rectangle. */
enum { BWD_WHOLE, BWD_EARLY, BWD_LATE };

static void bwd_blocked_part(const att_ctx *a, int tid, int b, int h, int part) {
    int T = a->T, C = a->C, NH = a->NH, hs = a->hs;
    int Kb = part == BWD_WHOLE ? T : TT_MIN(T, a->kb * QB);
    int k0 = part == BWD_LATE ? Kb : 0, k1 = part == BWD_EARLY ? Kb : T; /* dK, dV rows of this part */
    size_t ld = tpad(T), lq = a->ld;
    size_t off = (size_t)b * T * lq + (size_t)h * hs;
    int nt = part == BWD_EARLY ? Kb : T; /* keys the part reads */
    float *kT = tt_cpu_tscratch(a->cpu, tid), *vT = kT + (size_t)hs * ld; /* (hs, ld) */
    float *P = vT + (size_t)hs * ld, *dS = P + (size_t)QB * ld;           /* (QB, ld) */
    float *XT = dS + (size_t)QB * ld;                                     /* (hs, QB) */
    float *Kc = XT + (size_t)hs * QB;                                     /* (nt, hs) */
    float *dK = Kc + (size_t)T * hs, *dV = dK + (size_t)T * hs;          /* rows [k0, k1): (k1 - k0, hs) */
    transpose_head(kT, ld, a->k + off, lq, nt, hs);
    transpose_head(vT, ld, a->v + off, lq, nt, hs);
    copy_head(Kc, a->k + off, lq, nt, hs);
    const float *Q = a->q + off;
    const float *dO = a->dout + (size_t)b * T * C + (size_t)h * hs, *O = a->fout + (size_t)b * T * C + (size_t)h * hs;
    const float *lse = a->lse + ((size_t)b * NH + h) * T;
    float *Drow = a->D + ((size_t)b * NH + h) * T;
    float *dQ = a->dq + off;
    for (int t0 = part == BWD_LATE ? Kb : 0; t0 < T; t0 += QB) {
        int t1 = TT_MIN(T, t0 + QB), nq = t1 - t0, nkv = vec_count(t1) * TT_VW;
        int early = part == BWD_EARLY && t0 >= Kb; /* only keys [0, Kb), all before the block's queries */
        int jlim = early ? Kb : INT_MAX;
        pack_block(XT, Q + (size_t)t0 * lq, lq, nq, hs);
        scores_block(P, ld, XT, nq, t0, kT, ld, hs, a->scale, jlim);
        pack_block(XT, dO + (size_t)t0 * C, (size_t)C, nq, hs);
        scores_block(dS, ld, XT, nq, t0, vT, ld, hs, 1.0f, jlim); /* dP */
        /* D = rowsum(dO * O) of all rows first: their loads of O overlap */
        tt_vf acc[QB];
        float Dq[QB];
        for (int q = 0; q < nq; q++) {
            const float *x = dO + (size_t)(t0 + q) * C, *y = O + (size_t)(t0 + q) * C;
            tt_vf s = tt_vdup(0.0f);
            for (int d = 0; d < hs; d += TT_VW) s += tt_vload(x + d) * tt_vload(y + d);
            acc[q] = s;
        }
        rows_reduce(Dq, acc, nq, 0);
        for (int q = 0; q < nq; q++) {
            int t = t0 + q, lim = early ? Kb : group_lim(t0, q / MQ * MQ, nq);
            float *p = P + (size_t)q * ld, *ds = dS + (size_t)q * ld;
            float D = Dq[q], l = lse[t];
            if (!early) Drow[t] = D;
            if (!early) fill_past(p, t, lim, -INFINITY);
            if (a->drop) { /* dP = M.dPd*scale, dS = P.(dP - D), p <- Pd for dV */
                size_t base = (((size_t)b * NH + h) * T + t) * (size_t)T;
                for (int j = 0; j < lim; j += TT_VW) {
                    tt_vf pv = tt_vexp_le88(tt_vload(p + j) - l), m = drop_vec(a->drop, base, j, t);
                    tt_vstore(ds + j, pv * (m * tt_vload(ds + j) - D));
                    tt_vstore(p + j, pv * m);
                }
            } else
                for (int j = 0; j < lim; j += TT_VW) {
                    tt_vf pv = tt_vexp_le88(tt_vload(p + j) - l);
                    tt_vstore(p + j, pv);
                    tt_vstore(ds + j, pv * (tt_vload(ds + j) - D));
                }
            if (!early)
                for (int j = lim; j < nkv; j += TT_VW) tt_vstore(p + j, tt_vdup(0.0f)), tt_vstore(ds + j, tt_vdup(0.0f));
        }
        if (!early) pv_block(dQ + (size_t)t0 * lq, lq, dS, ld, nq, t0, Kc, (size_t)hs, hs, NULL, a->scale);
        /* the last block finishes every row [k0, k1) of dK, dV: into the outputs */
        int kend = TT_MIN(t1, k1), last = t1 == T;
        float *oK = last ? a->dk + off + (size_t)k0 * lq : dK, *oV = last ? a->dv + off + (size_t)k0 * lq : dV;
        size_t lo = last ? lq : (size_t)hs;
        ptx_block(oK, lo, dK, (size_t)hs, dS, ld, nq, t0, k0, kend, Q + (size_t)t0 * lq, lq, hs, a->scale);
        ptx_block(oV, lo, dV, (size_t)hs, P, ld, nq, t0, k0, kend, dO + (size_t)t0 * C, (size_t)C, hs, 1.0f);
    }
}

/* Work of the parts in score tiles (QB x QB, a tile of S = Q K^T, dP, dQ,
 * dK, dV is 5 units; diagonal tiles counted whole) with nqb query blocks
 * cut at block kb: EARLY does the triangle before kb and S, dP, dK, dV of
 * the rectangle; LATE the rest of the triangle less dK, dV of the
 * rectangle. */
static int64_t bwd_early_cost(int nqb, int kb) {
    return 5 * (int64_t)kb * (kb + 1) / 2 + 4 * (int64_t)kb * (nqb - kb);
}
static int64_t bwd_late_cost(int nqb, int kb) {
    return 5 * ((int64_t)nqb * (nqb + 1) / 2 - (int64_t)kb * (kb + 1) / 2) - 2 * (int64_t)kb * (nqb - kb);
}

/* The split block: the kb in [1, nqb) with the least costly larger part. */
static int bwd_split_at(int nqb) {
    int best = 1;
    int64_t best_cost = INT64_MAX;
    for (int kb = 1; kb < nqb; kb++) {
        int64_t c = TT_MAX(bwd_early_cost(nqb, kb), bwd_late_cost(nqb, kb));
        if (c < best_cost) best = kb, best_cost = c;
    }
    return best;
}

/* Heads run whole: all of them, unless the last round of whole heads would
 * leave more than half the threads idle: then those r = heads mod threads
 * heads are split in two (2r units, at most one per thread, each well under
 * a whole head's time, which the last round would otherwise take). Whole
 * heads come first, then LATE, EARLY of each split head: the costly units
 * start first. Splitting more heads gains nothing: a thread would run two
 * parts, which cost more than one whole head. */
static int bwd_whole_heads(int heads, int threads, int nqb) {
    int r = heads % threads;
    if (nqb < 2 || r == 0 || 2 * r > threads) return heads;
    return heads - r;
}

static void att_bwd_blocked(void *arg, int64_t chunk, int tid) {
    att_ctx *a = arg;
    int bh, part = BWD_WHOLE;
    if (chunk < a->nwhole)
        bh = (int)chunk;
    else {
        int64_t u = chunk - a->nwhole;
        bh = a->nwhole + (int)(u / 2);
        part = u % 2 == 0 ? BWD_LATE : BWD_EARLY;
    }
    bwd_blocked_part(a, tid, bh / a->NH, bh % a->NH, part);
}

/* ================= public ops ================= */

void tt_attention_forward(tt_cpu *cpu, float *out, float *stats, const float *q, const float *k, const float *v,
                          int ld, int B, int T, int C, int NH, const tt_dropout_mask *drop) {
    att_ctx a;
    memset(&a, 0, sizeof a);
    a.cpu = cpu, a.drop = tt_dropout_on(drop) ? drop : NULL;
    a.out = out, a.lse = stats, a.q = q, a.k = k, a.v = v, a.ld = (size_t)ld;
    a.B = B, a.T = T, a.C = C, a.NH = NH, a.hs = C / NH;
    a.nqb = (T + QB - 1) / QB;
    a.scale = 1.0f / sqrtf((float)a.hs);
    if (a.drop && !drop_fits(cpu, B, NH, T, "attention forward")) return;
    if (!tt_cpu_need(cpu, 0, tt_attention_thread_scratch(T, a.hs), "attention forward")) return;
    if (a.hs % TT_VW == 0) {
        a.nslice = fwd_slices(B, NH, a.nqb);
        tt_cpu_run1(cpu, att_fwd_blocked, &a, (int64_t)B * NH * a.nslice);
    } else
        tt_cpu_run1(cpu, att_fwd_simple, &a, (int64_t)B * NH * a.nqb);
}

void tt_attention_backward(tt_cpu *cpu, float *dq, float *dk, float *dv, float *stats, const float *q, const float *k,
                           const float *v, const float *out, const float *dout, int ld, int B, int T, int C, int NH,
                           const tt_dropout_mask *drop) {
    att_ctx a;
    memset(&a, 0, sizeof a);
    a.cpu = cpu, a.drop = tt_dropout_on(drop) ? drop : NULL;
    a.dq = dq, a.dk = dk, a.dv = dv, a.q = q, a.k = k, a.v = v, a.ld = (size_t)ld;
    a.dout = dout, a.fout = out, a.lse = stats, a.D = stats + (size_t)B * NH * T;
    a.B = B, a.T = T, a.C = C, a.NH = NH, a.hs = C / NH;
    a.scale = 1.0f / sqrtf((float)a.hs);
    if (a.drop && !drop_fits(cpu, B, NH, T, "attention backward")) return;
    if (!tt_cpu_need(cpu, 0, tt_attention_thread_scratch(T, a.hs), "attention backward")) return;
    if (a.hs % TT_VW == 0) {
        int heads = B * NH, nqb = (T + QB - 1) / QB;
        a.nwhole = bwd_whole_heads(heads, cpu->pool ? cpu->nthreads : 1, nqb);
        a.kb = bwd_split_at(nqb);
        tt_cpu_run1(cpu, att_bwd_blocked, &a, (int64_t)a.nwhole + 2 * (int64_t)(heads - a.nwhole));
    } else
        tt_cpu_run1(cpu, att_bwd_simple, &a, (int64_t)B * NH);
}

/* ---- one query against cached keys (the sampler's token): one unit per
 * head; each transposes its n keys and runs the forward's row kernel ---- */
typedef struct {
    tt_cpu *cpu;
    float *out;
    const float *q, *k, *v;
    size_t ldk;
    int n, hs;
    float scale;
} dec_ctx;

static void att_decode_task(void *arg, int64_t h, int tid) {
    dec_ctx *a = arg;
    size_t ld = tpad(a->n), off = (size_t)h * a->hs;
    float *kT = tt_cpu_tscratch(a->cpu, tid);
    float *s = kT + (size_t)a->hs * ld;
    transpose_head(kT, ld, a->k + off, a->ldk, a->n, a->hs);
    attend_row(a->out + off, a->q + off, kT, ld, a->v + off, a->ldk, a->n, a->hs, a->scale, s, NULL, 0);
}

void tt_attention_decode(tt_cpu *cpu, float *out, const float *q, const float *k, const float *v, int ldk, int n, int C,
                         int NH) {
    dec_ctx a = {cpu, out, q, k, v, (size_t)ldk, n, C / NH, 1.0f / sqrtf((float)(C / NH))};
    if (!tt_cpu_need(cpu, 0, tt_attention_thread_scratch(n, a.hs), "attention decode")) return;
    if ((int64_t)n * C >= (1 << 14)) tt_cpu_run1(cpu, att_decode_task, &a, NH);
    else
        for (int h = 0; h < NH; h++) att_decode_task(&a, h, 0);
}
