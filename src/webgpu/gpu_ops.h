/* gpu_ops.h — the WebGPU op planners: the WGSL kernels as planned "sites".
 * Each tt_gop_<op>_* call compiles (or reuses) the kernel, writes its
 * constant arguments into a uniform slot and creates its bind group ONCE; a
 * training step then only replays sites (tt_gops_run). Shared C for native
 * and browser devices. The site core (kernel sources, pipeline cache,
 * uniform arena) is gpu_ops.c; each op's planner is src/webgpu/<op>.c with
 * its kernels in src/webgpu/wgsl/<op>_<part>.wgsl.
 *
 * Tensors are (buffer, element offset) references. Kernels bind whole
 * buffers and receive element offsets as uniforms, so a parameter tensor is
 * (params buffer, its offset from config.h). A buffer must not appear both as
 * an output and as another binding of the same site (WebGPU forbids writable
 * aliasing); the planners don't check this — the schedule guarantees it.
 *
 * Every op is a pair op_forward/op_backward with the argument order of the
 * CPU backend (outputs first), shapes in comments. */
#ifndef TT_GPU_OPS_H
#define TT_GPU_OPS_H

#include "device.h"
#include "rng.h"

typedef struct {
    tt_gpu_buf buf;
    uint32_t off; /* element offset (f32 or u32 elements) */
} tt_gref;

typedef struct {
    tt_gpu_kernel k;
    tt_gpu_group grp;
    uint32_t x, y, z;
    const char *name; /* kernel name (profiling) */
    double flops;     /* useful FLOPs of one dispatch (matmul, attention), 0 otherwise */
    char tag[64];     /* shape/plan detail for the profile (matmul: "MxNxK t128 z2 TA"), else "" */
} tt_gsite;

/* Per-step values read by crossentropy, crossentropy_loss_reduce and adamw_update (one uniform buffer). */
typedef struct {
    float lr, b1, b2, eps, wd, clip, bc1, bc2;
    float grad_scale; /* d(mean loss)/dlogit scale: 1/(B*T*n_micro) */
    float loss_scale; /* loss accumulation scale: 1/(valid_rows*n_micro) */
    uint32_t valid_rows;
    uint32_t t;       /* the AdamW step (1-based) bc1, bc2 are for; the loss scaler's skipped steps are taken
                       * from it on the device (adamw_update) */
    uint32_t pad[4];
} tt_gstep;

typedef struct tt_gops_kent tt_gops_kent;

typedef struct {
    tt_gpu *g;
    const tt_gpu_info *info;
    tt_gops_kent *cache;
    int n_cache, cap_cache;
    tt_gpu_buf *ubufs; /* uniform arena: slots of slot_bytes */
    int n_ubufs;
    uint32_t slot_bytes, slots_per_buf, used;
    tt_gpu_buf stepu;  /* tt_gstep */
    int tile;          /* matmul tile: 0 planned; 32, 64 or 128 forced (tests; hook TT_WEBGPU_TILE) */
    int unroll;        /* expand //!unroll blocks: 1 on GPUs, 0 on CPU adapters (tests; hook TT_WEBGPU_UNROLL) */
    int splitk;        /* matmul split-K slices: 0 planned, n forces n (tests; hook TT_WEBGPU_SPLITK) */
    int attn_pf;       /* attention prefetch: 0 planned, 1 forced on (tests; hook TT_WEBGPU_ATTN_PF), -1 forced off */
    int qkv_unbatched; /* as three dispatches: 1 the q, k, v projections, 2 their weight gradients (tests; hook
                        * TT_WEBGPU_QKV_BATCH: its bits say which run batched) */
    int attn_ds;       /* dS-storing attention backward: 0 planned, -1 forced off (tests; hook TT_WEBGPU_ATTN_DS=0) */
    int attn_split;    /* split dk/dv layout: 0 planned; else forced, TT_ATTN_SPLIT_FORCED | 1 split where it fits,
                        * TT_ATTN_SPLIT_FORCED plain (tests; hook TT_WEBGPU_ATTN_SPLIT=0|1) */
    uint64_t bind_cap; /* binding limit planned against when below the adapter's (hook TT_WEBGPU_MAX_BINDING_MIB), 0 none */
    tt_gpu_buf dropk;     /* dropout keys (tt_gops_drop_init): u32 [threshold, scale bits, 0, 0, k0, k1 per slot] */
    uint32_t dropk_slots;
    tt_gpu_buf split_buf; /* split-K partial products */
    size_t split_elems;
    tt_gpu_buf h16_buf;   /* f16 copies of the subgroup-matrix matmul's operands (matmul.c) */
    size_t h16_elems;
    tt_gpu_buf ds_buf;    /* attention dS tiles (the dS-storing backward; attention.c) */
    size_t ds_elems;
    tt_gpu_buf nil_buf;   /* 16 bytes bound at a binding the kernel leaves unused (attention.c) */
    int nil_ok;           /* nil_buf exists */
    int f16;           /* matmul operands rounded to f16, f32 accumulation (TT_PRECISION_F16; needs shader-f16) */
    tt_gpu_buf amp;    /* TT_PRECISION_F16: the loss scaler's state buffer, read by crossentropy and
                        * adamw_update, written by amp_update; amp_on 0: none */
    int amp_on;
    int n_sites;       /* statistics */
} tt_gops;

int tt_gops_init(tt_gops *o, tt_gpu *g, tt_status *st);
void tt_gops_free(tt_gops *o); /* GPU objects die with the device */
int tt_gops_set_step(tt_gops *o, const tt_gstep *s, tt_status *st);
/* Dropout: the keys buffer that dropout sites read (once; n_slots keys),
 * and its contents for the next submit: threshold and scale of p (src/rng.h),
 * keys[slot] (slot: the site's key, e.g. layer * 4 + site). scratch: 4 +
 * 2 * n_slots words of the caller's (no allocation). */
int tt_gops_drop_init(tt_gops *o, uint32_t n_slots, tt_status *st);
int tt_gops_set_drop(tt_gops *o, float p, const tt_dropout_key *keys, uint32_t n_slots, uint32_t *scratch,
                     tt_status *st);
void tt_gops_run(tt_gpu *g, const tt_gsite *s, int n);

/* The kernel-source directive "//!unroll VAR CONST { block }" expanded (see
 * gpu_ops.c): unrolled (unroll = 1) or as a for loop; 0 with *out =
 * malloc'd source (NULL when src has none), or -1 with the reason in msg. A
 * pure function (tests call it). */
int tt_wgsl_unroll(const char *src, const char *prefix, int unroll, char **out, char *msg, size_t cap);
/* The whole source of kernel `name` under `prefix` (its constants, and the
 * markers that switch its variants on: DS_BIND, AMP_BIND, DROP_BIND), as
 * get_kernel compiles it: the prefix, common.wgsl, NAME.wgsl with its
 * //!include lines expanded, //!unroll blocks unrolled (unroll = 1) or
 * loops. 0 with *out malloc'ed, or an error status (a missing file, a bad
 * directive). Reads the embedded kernels (or TT_WEBGPU_WGSL_DIR's). */
int tt_gops_kernel_text(const char *name, const char *prefix, int unroll, char **out, tt_status *st);
/* Scratch ("part") sizes in floats for the two-stage reductions (column sums, grad norm). */
size_t tt_gop_colsum_part_elems(int rows, int N);
size_t tt_gop_adamw_part_elems(size_t n);

/* The sites of one matmul (every tt_gop_matmul* call below): the f16
 * copies of A and B (the subgroup-matrix variant of the f16 tier, else
 * empty), the product, the sum of its split-K slices (empty when K is not
 * split). */
#define TT_GOP_MM_SITES 4
#define TT_GOP_MM_PRODUCT 2 /* the product's site among them */

/* C (M,N) [+]= op(A) (M,K) @ op(B) (K,N) [+ bias (N)] [+ R (M,N)].
 * op(A) = A stored (M,K), or trans_a: stored (K,M); op(B) = B (K,N) or
 * trans_b: stored (N,K). bias, R may be NULL. C must be contiguous (ldc = N).
 * TT_GOP_MM_SITES sites. */
int tt_gop_matmul(tt_gops *o, tt_gsite *s, tt_gref C, tt_gref A, tt_gref B, const tt_gref *bias, const tt_gref *R,
                  int M, int N, int K, int trans_a, int trans_b, int accumulate, tt_status *st);
/* As tt_gop_matmul, but op(A) stores only M - ones_rows rows (lda from that
 * count); its last ones_rows rows read as 1.0. With ones_rows = 1 and
 * C = [dW; db] contiguous ((in+1) x out, the parameter layout's W then b),
 * dW += X^T dY and db += 1^T dY in one product (bias gradient folded). */
int tt_gop_matmul_ex(tt_gops *o, tt_gsite *s, tt_gref C, tt_gref A, tt_gref B, const tt_gref *bias, const tt_gref *R,
                     int M, int N, int K, int trans_a, int trans_b, int accumulate, int ones_rows, tt_status *st);
/* A batch of n products of one shape in one dispatch (+ one split-K
 * site), each computed exactly as tt_gop_matmul_group(n) computes it alone
 * (the same plan, k order and epilogue: bit-identical). Product p (0 <= p < n):
 * C_p = C + p*M*N and R_p = R + p*M*N (the outputs follow each other),
 * A shared, B_p = B + p*bstride, bias_p = bias + p*bstride (equally spaced
 * matrices with their biases: the layout's q, k, v units). n = 1 is
 * tt_gop_matmul_ex. A batch that tt_gop_matmul_batch_fits refuses is
 * refused (TT_EUNSUP). TT_GOP_MM_SITES sites. */
/* tt_gop_matmul_ex of one product planned as a member of a group of
 * `group` products of its shape (tt_gop_matmul_plan with n = group): what
 * tt_gop_matmul_batch(group) computes for it, for when the batch cannot
 * run as one dispatch. TT_GOP_MM_SITES sites. */
int tt_gop_matmul_group(tt_gops *o, tt_gsite *s, int group, tt_gref C, tt_gref A, tt_gref B, const tt_gref *bias,
                        const tt_gref *R, int M, int N, int K, int trans_a, int trans_b, int accumulate, int ones_rows,
                        tt_status *st);
int tt_gop_matmul_batch(tt_gops *o, tt_gsite *s, int n, uint32_t bstride, tt_gref C, tt_gref A, tt_gref B,
                        const tt_gref *bias, const tt_gref *R, int M, int N, int K, int trans_a, int trans_b,
                        int accumulate, int ones_rows, tt_status *st);
/* The subgroup-matrix matmul's prefix (matmul.c's header) for op(A), op(B)
 * of these transposes: 1 where its tiles fit adapter `in` (an f16 -> f32
 * configuration with K dividing 16, one subgroup size, the workgroup
 * limits), else 0; the f16 tier and the product's shape decide the rest */
int tt_gop_matmul_sgmat_prefix(const tt_gpu_info *in, int trans_a, int trans_b, char *pf, size_t cap);
/* The subgroup-matrix matmul's operand copy (matmul_cast.wgsl; needs
 * shader-f16): dst, an f16 buffer in f16 elements (dst.off, dld and dstride
 * multiples of 4), [p][r][c] (drows x dld) = f16(src[p*sstride + r*ld + c])
 * for r < rows, c < cols; else 1.0 for r < one_r, c < one_c (ones rows);
 * else 0 (padding); products p < nprod. 1 site. */
int tt_gop_matmul_cast(tt_gops *o, tt_gsite *s, tt_gref dst, tt_gref src, uint32_t rows, uint32_t cols, uint32_t ld,
                       uint32_t one_r, uint32_t one_c, uint32_t drows, uint32_t dld, uint32_t nprod, uint32_t sstride,
                       uint32_t dstride, tt_status *st);
/* 1 when a batch of n products of M x N x K fits the adapter (its split-K
 * scratch within one binding, its grid, 32-bit indexing); else the caller
 * plans the products one by one. */
int tt_gop_matmul_batch_fits(const tt_gops *o, int n, int M, int N, int K);
/* A batch of n products in one dispatch (+ one split-K site) as
 * tt_gop_matmul_batch, but each product keeps the split-K slices of its
 * lone plan (tt_gop_matmul_plan with n = 1): each C_p bit-identical to
 * tt_gop_matmul_ex of that product alone; the tile is planned for the
 * batch (matmul.c; the tile never changes the bits). C_p = C + p*cstride
 * and R_p = R + p*cstride, cstride >= M*N (0: M*N): the q, k, v weight
 * gradients, each unit's dW (or [dW; db] with a ones row) followed by its
 * bias gradient. Refused (TT_EUNSUP) where tt_gop_matmul_batch_solo_fits
 * says no. TT_GOP_MM_SITES sites. */
int tt_gop_matmul_batch_solo(tt_gops *o, tt_gsite *s, int n, uint32_t bstride, uint32_t cstride, tt_gref C, tt_gref A,
                             tt_gref B, const tt_gref *bias, const tt_gref *R, int M, int N, int K, int trans_a,
                             int trans_b, int accumulate, int ones_rows, tt_status *st);
int tt_gop_matmul_batch_solo_fits(const tt_gops *o, int n, int M, int N, int K);
/* The launch plan of a matmul, a pure function of (n, M, N, K, splittable)
 * and the forcing fields above: square tile (32, 64, 128), split-K slices
 * and the k extent of a slice. n: the products of the group it belongs to
 * (1 for a lone product; their workgroups count together). splittable:
 * split-K may be used. */
#define TT_MM_TARGET 512u /* workgroups (counting split-K slices) the plan aims at */
#define TT_MM_KMIN 128u   /* the smallest split-K slice */
#define TT_MM_LONGK 4096u   /* a chain at least this long (weight gradients over >= 4096 tokens) ... */
#define TT_MM_KSLICE 1024u  /* ... is split into slices of at most this many k (within MM_MAXSPLIT) */
#define TT_MM_SCRATCH_FLOATS (32ull << 20) /* split-K scratch cap: 128 MiB of f32 */
void tt_gop_matmul_plan(const tt_gops *o, int n, int M, int N, int K, int splittable, int *tile,
                        uint32_t *splits, uint32_t *kchunk);
/* The kernel configuration of a square tile on an adapter with wg_storage
 * bytes of workgroup memory (0: WebGPU's 16384), for a product whose B is
 * stored transposed (trans_b: N x K, the input gradients dY W^T) or not:
 * outputs per thread (tm x tm), k step, shared-memory stages, swizzled
 * shared tiles. The 128 tile: 8x8 outputs, plain tiles, k step 16 in one
 * stage, or with trans_b k step 8 in two stages (the same 16 KiB); the 64
 * and 32 tiles: 4x4 outputs, k step 16, two stages (one if they do not
 * fit), swizzled. A pure function; every configuration gives the same
 * bits (matmul.wgsl). */
typedef struct {
    int tm, bk, stages, swz;
    uint32_t threads, bytes;
} tt_mm_kcfg;
void tt_gop_mm_kcfg(uint32_t wg_storage, int tile, int trans_b, tt_mm_kcfg *k);

/* out (rows,C), stats (2*rows: mean then rstd; own buffer), inp (rows,C),
 * w (C), b (C) (w and b in one buffer); eps: the epsilon added to the
 * variance (tt_config_ln_eps), a constant of the kernel. 1 site. */
int tt_gop_layernorm_forward(tt_gops *o, tt_gsite *s, tt_gref out, tt_gref stats, tt_gref inp, tt_gref w, tt_gref b,
                             int rows, int C, float eps, tt_status *st);
/* dinp (rows,C) (+= if accum), dwb (2C: dw then db, +=), dout (rows,C),
 * inp (rows,C), w (C), stats (2*rows), part (colsum_part_elems(rows, 2C)). 3 sites. */
int tt_gop_layernorm_backward(tt_gops *o, tt_gsite *s, tt_gref dinp, tt_gref dwb, tt_gref dout, tt_gref inp, tt_gref w,
                              tt_gref stats, tt_gref part, int rows, int C, int accum, tt_status *st);

/* db (N) += column sums of dout (rows,N); part (colsum_part_elems). 2 sites. */
int tt_gop_matmul_backward_bias(tt_gops *o, tt_gsite *s, tt_gref db, tt_gref dout, tt_gref part, int rows, int N,
                                tt_status *st);

/* LoRA on one projection (lora.c), scale = alpha / R. The adapter B (R,
 * n_out*w) is read as n_out column blocks of width w: n_out = 3 for c_attn
 * (q, k, v, w = C), else 1.
 * forward: t (rows,R) = x (rows,in) @ A (in,R);
 *          out[j] (rows,w) += scale * t @ B[:, j*w .. (j+1)*w) for j < n_out.
 * TT_GOP_LORA_FWD_SITES(n_out) sites. */
#define TT_GOP_LORA_FWD_SITES(n_out) (TT_GOP_MM_SITES + (n_out))
int tt_gop_lora_forward(tt_gops *o, tt_gsite *s, const tt_gref *out, int n_out, tt_gref t, tt_gref x, tt_gref A,
                        tt_gref Bm, int rows, int in, int R, int w, float scale, tt_status *st);
/* backward: dt (rows,R) = scale * sum_j dout[j] (rows,w) @ B_j^T (overwritten);
 *           dB (R, n_out*w) block j += scale * t^T @ dout[j] (prod (R,w): scratch);
 *           dA (in,R) += x^T @ dt;  dx (rows,in) += dt @ A^T.
 * t (rows,R) as the forward wrote it. TT_GOP_LORA_BWD_SITES(n_out) sites. */
#define TT_GOP_LORA_BWD_SITES(n_out) (1 + (TT_GOP_MM_SITES + 1) * (n_out) + 2 * TT_GOP_MM_SITES)
int tt_gop_lora_backward(tt_gops *o, tt_gsite *s, tt_gref dx, tt_gref dA, tt_gref dB, tt_gref dt, tt_gref prod,
                         const tt_gref *dout, int n_out, tt_gref t, tt_gref x, tt_gref A, tt_gref Bm, int rows, int in,
                         int R, int w, float scale, tt_status *st);

/* out (n) = gelu(inp (n)); 1 site.  d (n) *= gelu'(inp); 1 site. act: the
 * form (config.h tt_act: TT_ACT_GELU exact, TT_ACT_GELU_TANH gelu_new). */
int tt_gop_gelu_forward(tt_gops *o, tt_gsite *s, tt_gref out, tt_gref inp, size_t n, int act, tt_status *st);
int tt_gop_gelu_backward(tt_gops *o, tt_gsite *s, tt_gref d, tt_gref inp, size_t n, int act, tt_status *st);

/* y (B,T,C), stats (2*B*NH*T: lse then D; own buffer), q, k, v (B,T,C). 1 site. */
int tt_gop_attention_forward(tt_gops *o, tt_gsite *s, tt_gref y, tt_gref stats, tt_gref q, tt_gref k, tt_gref v,
                             int B, int T, int C, int NH, tt_status *st);
/* dq, dk, dv (B,T,C) overwritten; stats as above (D written); q, k, v, y,
 * dy (B,T,C). 3 sites (the last empty where the pair of kernels runs;
 * attention.c). */
int tt_gop_attention_backward(tt_gops *o, tt_gsite *s, tt_gref dq, tt_gref dk, tt_gref dv, tt_gref stats, tt_gref q,
                              tt_gref k, tt_gref v, tt_gref y, tt_gref dy, int B, int T, int C, int NH,
                              tt_status *st);

/* out (B,T,C) = wte[tok] + wpe[t]; tokens u32 (B,T+1); wte, wpe in one buffer. 1 site. */
int tt_gop_embedding_forward(tt_gops *o, tt_gsite *s, tt_gref out, tt_gref tokens, tt_gref wte, tt_gref wpe, int B,
                             int T, int C, tt_status *st);
/* dwte (V,C) +=, dwpe (T,C) += (one buffer), dout (B,T,C); tok: u32 buffer
 * holding the bucket offsets (V+1) at bucket_off and positions (B*T) at
 * pos_off (tt_gop_embedding_buckets). 2 sites. */
int tt_gop_embedding_backward(tt_gops *o, tt_gsite *s, tt_gref dwte, tt_gref dwpe, tt_gref dout, tt_gpu_buf tok,
                              uint32_t bucket_off, uint32_t pos_off, int B, int T, int C, int V, tt_status *st);
/* Host side of the embedding backward: positions of inputs bucketed by
 * token (stable counting sort). tokens (B, T+1) u32; offsets (V+1), pos (B*T). */
void tt_gop_embedding_buckets(const uint32_t *tokens, int B, int T, int V, uint32_t *offsets, uint32_t *pos);

/* losses (rows) = CE; logits (rows,V) <- dlogits * grad_scale; targets from
 * tokens u32 (B,T+1) (rows = B*T). 1 site. */
int tt_gop_crossentropy(tt_gops *o, tt_gsite *s, tt_gref logits, tt_gref losses, tt_gref tokens, int rows, int V,
                        int T, tt_status *st);
/* The tied head and softmax + cross-entropy over rows in chunks of `chunk`
 * rows (the logits buffer holds chunk * ldv floats, whatever rows * V is).
 * For each chunk [r0, r0 + n): logits (n,ldv) = x[r0:] (n,C) @ wte^T (wte
 * (V,C)); losses[r0:] = CE over the first V columns and logits <- dlogits *
 * grad_scale (as tt_gop_crossentropy, targets from tokens u32 (B,T+1));
 * then, when dx: dx[r0:] (n,C) = dlogits @ wte, and when dwte: dwte (V,C)
 * += dlogits^T @ x[r0:]. ldv >= V pads the logits rows (ldv % 4 == 0 keeps
 * the head's matmuls on vec4 loads): the ldv - V rows after wte in its
 * buffer are read (they must exist and be finite: the layout's wpe), their
 * logits ignored, their dlogits 0, so dx is unchanged and those rows of
 * dwte get += 0 (values unchanged). Sites: tt_gop_head_crossentropy_sites
 * (3 per chunk forward, + 2 for dx, + 2 for dwte). The loss sum is not
 * included (tt_gop_crossentropy_loss_reduce). */
int tt_gop_head_crossentropy(tt_gops *o, tt_gsite *s, tt_gref logits, tt_gref losses, tt_gref tokens, tt_gref x,
                             tt_gref wte, const tt_gref *dx, const tt_gref *dwte, int rows, int C, int V, int ldv,
                             int T, int chunk, tt_status *st);
int tt_gop_head_crossentropy_sites(int rows, int chunk, int backward, int dwte);
/* rows of a head chunk whose logits (rows of ldv floats) take at most
 * `budget` bytes (whole 128-row tiles where at least one fits; at least 1) */
int tt_gop_head_chunk_rows(int ldv, uint64_t budget);
/* stats[0] += loss_scale * sum(losses[0:valid_rows]). 1 site. */
int tt_gop_crossentropy_loss_reduce(tt_gops *o, tt_gsite *s, tt_gref stats, tt_gref losses, tt_status *st);

/* Global norm -> stats[1], clip, AdamW on n elements (params, grads, m, v
 * whole buffers, offset 0); mask: u32 decay bits; part (adamw_part_elems). 2 sites. */
int tt_gop_adamw(tt_gops *o, tt_gsite *s, tt_gpu_buf params, tt_gpu_buf grads, tt_gpu_buf m, tt_gpu_buf v,
                 tt_gpu_buf mask, tt_gpu_buf part, tt_gpu_buf stats, size_t n, tt_status *st);

/* The same over parameter storage split into chunks (several buffers each
 * within the binding limit; plan.c). The norm's partial sums are
 * "parts": part p = sum of g^2 over element positions [desc[2p], desc[2p+1])
 * of ONE chunk's grads buffer (256 lanes strided, fma in order, then a fixed
 * tree), and every adamw site re-sums all n_part parts in one fixed order: the
 * norm depends only on the part table, never on how chunks group the parts.
 * 2 * n_chunks sites: adamw_sumsq of every chunk, then adamw_update of every chunk
 * (the first writes stats[1]); with the loss scaler (tt_gops.amp_on) the
 * updates unscale and skip an overflowed step, and one more site
 * (amp_update) updates the scaler. tt_gop_adamw = one chunk whose parts are
 * tt_gop_norm_part_len(n) long (it uploads that table itself). */
typedef struct {
    tt_gpu_buf params, grads, m, v; /* the chunk's buffers */
    tt_gpu_buf mask;                /* u32 decay bits of the chunk, bit i = its parameter i */
    uint32_t base;                  /* buffer position of the chunk's first parameter */
    uint32_t n;                     /* parameters in the chunk */
    uint32_t part0, n_part;         /* its parts in the table */
} tt_gop_pchunk;
int tt_gop_adamw_chunks(tt_gops *o, tt_gsite *s, const tt_gop_pchunk *ch, int n_chunks, tt_gpu_buf desc,
                        uint32_t n_part, tt_gpu_buf part, tt_gpu_buf stats, tt_status *st);
/* Length of a norm part for n parameters in all: a pure function of n (at
 * most ~1024 parts of >= 2048, as adamw_part_elems). */
size_t tt_gop_norm_part_len(size_t n);

/* Dropout (dropout.c; masks of src/rng.h, keys in tt_gops.dropk, slot =
 * the site's key): n elements, out (n) = src (n) + mask * out when add
 * (a residual branch, in place), else out = mask * src. 1 site. */
int tt_gop_dropout(tt_gops *o, tt_gsite *s, tt_gref out, tt_gref src, size_t n, int add, uint32_t slot,
                   tt_status *st);
/* The attention pair with dropout on its probabilities (FlashAttention's
 * rule, masks recomputed in backward from the key of slot), element
 * ((b*NH + h)*T + t_query)*T + t_key of the slot. Same sites as without. */
int tt_gop_attention_forward_drop(tt_gops *o, tt_gsite *s, tt_gref y, tt_gref stats, tt_gref q, tt_gref k, tt_gref v,
                                  int B, int T, int C, int NH, uint32_t slot, tt_status *st);
int tt_gop_attention_backward_drop(tt_gops *o, tt_gsite *s, tt_gref dq, tt_gref dk, tt_gref dv, tt_gref stats,
                                   tt_gref q, tt_gref k, tt_gref v, tt_gref y, tt_gref dy, int B, int T, int C, int NH,
                                   uint32_t slot, tt_status *st);

/* The attention tiles (attention.c): kernel `which` (0 attention_forward,
 * 1 attention_backward_dq, 2 attention_backward_dkdv) gets the first
 * candidate (BR, BC) that fits the adapter (workgroup storage bytes,
 * invocations; 0: WebGPU's defaults); a pure function. Returns 1, or 0 when
 * none fits (then the attention_rows_* kernels run). */
typedef struct {
    uint32_t br, bc; /* rows per workgroup block, rows per streamed tile (multiples of 4) */
    uint32_t ob;     /* output d-blocks of 4 per thread (1..4) */
    uint32_t nt;      /* threads of one (br/4) x (bc/4) layout */
    uint32_t threads; /* the workgroup: nt (forward), 2 nt (backward: two halves); twice that split */
    uint32_t spl;     /* 1, or 2 in the split layout (tt_gop_attention_split) */
    uint32_t bytes;  /* workgroup memory */
} tt_attn_tile;
int tt_gop_attention_plan(int which, int hs, uint32_t storage, uint32_t max_inv, tt_attn_tile *t);
#define TT_ATTN_SPLIT_FORCED 4 /* tt_gops.attn_split: forced, bit 0 says split */
/* The split layout of dk/dv (attention.c; SPL 2 of
 * attention_backward_dkdv.wgsl): 1 and *t rewritten (threads doubled, ob
 * halved) when the tile t of kernel `which` (2: dk/dv; the others have no
 * split layout) and head size hs admits it under these limits: an even
 * number of output blocks per thread in the plain layout, the doubled
 * threads; a pure function. Bit-identical to the plain layout. */
int tt_gop_attention_split(int which, int hs, uint32_t storage, uint32_t max_inv, tt_attn_tile *t);
/* The dS-storing backward (attention.c): 1 and *p filled where it runs for
 * head size hs at (B, T, NH) under these limits (max_bytes: one binding and
 * one buffer), else 0; a pure function. */
typedef struct {
    uint32_t g;     /* scratch block size (a multiple of the dq and dk/dv tiles' BR and BC) */
    uint64_t elems; /* scratch floats: B*NH * nb(nb+1)/2 * g^2, nb = ceil(T/g) */
} tt_attn_ds;
int tt_gop_attention_ds_plan(int hs, int B, int T, int NH, uint32_t storage, uint32_t max_inv, uint64_t max_bytes,
                             tt_attn_ds *p);
/* The f16 tier's subgroup-matrix variant of attention kernel `which` (0
 * forward, 1 dq, 2 dk/dv; attention.c's header): its workgroup memory in
 * bytes where it runs on adapter `in` at head size hs (the 16 x 16 x 16 f16
 * configuration, one subgroup size, a multiple of 16, the tiles within the
 * adapter's limits), else 0. The backward runs it where dq and dk/dv both
 * do (with dropout too: the kernels' dropout variant); the f32 tier runs
 * the f32 kernels. A pure function. */
uint64_t tt_gop_attention_sgmat_plan(int which, int hs, const tt_gpu_info *in);
/* its kernel's name and, where the plan fits, its constant prefix in pf
 * and the plan's bytes returned (else 0; dk/dv's KV1 is the site's; the
 * names: attention_sgmat_forward, attention_sgmat_backward_dq,
 * attention_sgmat_backward_dkdv) */
const char *tt_gop_attention_sgmat_name(int which);
uint64_t tt_gop_attention_sgmat_prefix(int which, int hs, const tt_gpu_info *in, char *pf, size_t cap);
/* the storage buffers its site binds (forward 5, dq 6, dk/dv 7; 0 for a bad
 * `which`): the dropout variant's keys buffer is the next binding */
int tt_gop_attention_sgmat_buffers(int which);
/* its scratch floats on o's adapter, with dropout or not (0: the pair of
 * kernels runs; also where the adapter binds fewer storage buffers per
 * stage than the storing kernel's 8, 9 with dropout) */
size_t tt_gop_attention_ds_elems(const tt_gops *o, int B, int T, int C, int NH, int drop);

/* ---- internal to the planners (gpu_ops.c and the <op>.c files) ---------- */
#define TT_WG_ELEM 256u /* elementwise / reduction workgroup size */
/* A site: kernel NAME (NAME.wgsl after the constant prefix), bindings =
 * [args slot, (step uniforms if use_step)?, bufs...], grid (x, y, z). */
int tt_gops_make_site(tt_gops *o, tt_gsite *s, const char *name, const char *prefix, const uint32_t args[16],
                      int use_step, int n_buf, const tt_gpu_buf *bufs, const uint8_t *buf_kinds, uint32_t x,
                      uint32_t y, uint32_t z, tt_status *st);
/* 1-D count of workgroups folded into x*y within the adapter's limit. */
void tt_gops_grid1(const tt_gops *o, uint64_t nwg, uint32_t *x, uint32_t *y);
/* grid-stride kernels: enough workgroups of wg to cover n, at most 32768 */
uint32_t tt_gops_stride_wgs(size_t n, uint32_t wg);
/* the bytes one storage binding may span: the adapter's binding and buffer
 * limits (128 MiB when unknown), or the test hook's cap below them */
uint64_t tt_gops_binding_limit(const tt_gops *o);
/* base (may be NULL) + "const DROP_BIND: u32 = bind;": the prefix of a
 * dropout variant whose keys buffer is binding bind (gpu_ops.c) */
const char *tt_gops_drop_prefix(uint32_t bind, const char *base, char *buf, size_t cap);
/* "const WG: u32 = wg;" into buf */
const char *tt_gops_wg_prefix(uint32_t wg, char *buf, size_t cap);
/* TT_EUNSUP naming what when v does not fit 32-bit indexing */
int tt_gops_check_u32(size_t v, const char *what, tt_status *st);
uint32_t tt_gops_f2u(float f); /* the bits of f */
/* Two-stage column sums (matmul.c), shared by the bias gradient, the
 * LayerNorm weight gradients and split-K: rows per stage-1 chunk, and stage
 * 2 (out (W) += the n_chunks partial rows of part, in chunk order). */
uint32_t tt_gop_colsum_chunk(int rows);
int tt_gop_colsum_final(tt_gops *o, tt_gsite *s, tt_gref out, tt_gref part, uint32_t W, uint32_t n_chunks,
                        tt_status *st);

#endif
