/* gpu_ops.h — the WGSL kernels as planned "sites": each tt_gop_* call
 * compiles (or reuses) the kernel, writes its constant arguments into a
 * uniform slot and creates its bind group ONCE; a training step then only
 * replays sites (tt_gops_run). Shared C for native and browser devices.
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
    char tag[48];     /* shape/plan detail for the profile (matmul: "MxNxK t128 z2 TA"), else "" */
} tt_gsite;

/* Per-step values read by xent / loss_reduce / adamw (one uniform buffer). */
typedef struct {
    float lr, b1, b2, eps, wd, clip, bc1, bc2;
    float grad_scale; /* d(mean loss)/dlogit scale: 1/(B*T*n_micro) */
    float loss_scale; /* loss accumulation scale: 1/(valid_rows*n_micro) */
    uint32_t valid_rows;
    uint32_t pad[5];
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
    int tile;          /* matmul block tile: 0 auto, 32, 64 or 128 (env TT_WEBGPU_TILE; tests force each) */
    int unroll;        /* expand //!unroll blocks (1 on GPUs, 0 on CPU adapters; env TT_WEBGPU_UNROLL) */
    int splitk;        /* matmul split-K slices: 0 auto, n forces n (env TT_WEBGPU_SPLITK; tests) */
    int policy;        /* 0: shape-driven tiles/split-K (default); 1: first version (TT_WEBGPU_MMPOLICY=old) */
    uint32_t mm_target; /* workgroups the new policy aims at (0: TT_MM_TARGET; env TT_WEBGPU_MM_TARGET) */
    uint32_t mm_kmin;   /* smallest split-K slice (0: TT_MM_KMIN; env TT_WEBGPU_MM_KMIN) */
    int split_epi;     /* new policy: split-K also for products with bias/R/overwrite (1; env TT_WEBGPU_SPLITK_EPI=0: off) */
    unsigned mm_var;   /* matmul kernel variant: TT_MMV_* bits (env TT_WEBGPU_MMVAR, a comma list); 0: default kernel */
    uint32_t att_lanes; /* threads per attention row: 0 = 4; 1, 2, 4, 8 (env TT_WEBGPU_ATT_LANES; tests) */
    int att_tiled;     /* 1: tiled FlashAttention-2 kernels attn_t_* (env TT_WEBGPU_ATTN=tiled) */
    int att_mt;        /* 1 (default): matmul-style FlashAttention-2 kernels attn_m_* (gpu_attn_m.c); 0 with
                        * env TT_WEBGPU_ATTN=rows (attn_*) or =tiled (attn_t_*) */
    int att_bwd;       /* mt backward: 0 (default) attn_m_bwd_dq + attn_m_bwd_dkdv; 1 with env
                        * TT_WEBGPU_ATTN_BWD=ds[TB]: attn_m2_bwd_dkdv (S, dP once, dS stored) + attn_m2_bwd_dq
                        * (gpu_attn_m.c); att_bwd_tb: its tile TB (0: planned) */
    uint32_t att_bwd_tb;
    tt_gpu_buf att_ds_buf; /* TT_WEBGPU_ATTN_BWD=ds: the dS tiles (grown like split_buf) */
    size_t att_ds_elems;
    int subgroups;     /* subgroups tier for the row reductions of ln_fwd, ln_bwd_dx, xent, sumsq (*_sg.wgsl):
                        * env TT_WEBGPU_SUBGROUPS=1 (off by default; refused by tt_gops_init on an adapter
                        * without the feature); 2 (=tree, a test hook): the _sg kernels' fallback tree */
    tt_gpu_buf split_buf; /* split-K partial products */
    size_t split_elems;
    int n_sites;       /* statistics */
} tt_gops;

int tt_gops_init(tt_gops *o, tt_gpu *g, tt_status *st);
void tt_gops_free(tt_gops *o); /* GPU objects die with the device */
int tt_gops_set_step(tt_gops *o, const tt_gstep *s, tt_status *st);
void tt_gops_run(tt_gpu *g, const tt_gsite *s, int n);

/* The kernel-source directive "//!unroll VAR CONST { block }" expanded (see
 * gpu_ops.c): unrolled (unroll = 1) or as a for loop; 0 with *out =
 * malloc'd source (NULL when src has none), or -1 with the reason in msg. A
 * pure function (tests call it). */
int tt_wgsl_unroll(const char *src, const char *prefix, int unroll, char **out, char *msg, size_t cap);
/* Scratch ("part") sizes in floats for the two-stage reductions. */
size_t tt_gop_colsum_part_elems(int rows, int N);
size_t tt_gop_adamw_part_elems(size_t n);

/* C (M,N) [+]= op(A) (M,K) @ op(B) (K,N) [+ bias (N)] [+ R (M,N)].
 * op(A) = A stored (M,K), or trans_a: stored (K,M); op(B) = B (K,N) or
 * trans_b: stored (N,K). bias, R may be NULL. C must be contiguous (ldc = N).
 * 2 sites (the second adds split-K slices, with the epilogue when there is
 * one; empty when K is not split). */
int tt_gop_matmul(tt_gops *o, tt_gsite *s, tt_gref C, tt_gref A, tt_gref B, const tt_gref *bias, const tt_gref *R,
                  int M, int N, int K, int trans_a, int trans_b, int accumulate, tt_status *st);
/* As tt_gop_matmul, but op(A) stores only M - ones_rows rows (lda from that
 * count); its last ones_rows rows read as 1.0. With ones_rows = 1 and
 * C = [dW; db] contiguous ((in+1) x out, the parameter layout's W then b),
 * dW += X^T dY and db += 1^T dY in one product (bias gradient folded). */
int tt_gop_matmul_ex(tt_gops *o, tt_gsite *s, tt_gref C, tt_gref A, tt_gref B, const tt_gref *bias, const tt_gref *R,
                     int M, int N, int K, int trans_a, int trans_b, int accumulate, int ones_rows, tt_status *st);
/* The launch plan of a matmul, a pure function of (M, N, K, splittable) and
 * the policy fields above: square tile (32, 64, 128), split-K slices and
 * the k extent of a slice. splittable: accumulate without bias/R. */
/* matmul plan defaults (A/B on an H200, docs/BENCHMARKS.md: target 512 with
 * slices >= 128 beat 256/256 by 2-11% from small to gpt2) */
#define TT_MM_TARGET 512u
#define TT_MM_KMIN 128u
#define TT_MM_SCRATCH_FLOATS (32ull << 20) /* split-K scratch cap: 128 MiB of f32 */
void tt_gop_matmul_plan(const tt_gops *o, int M, int N, int K, int splittable, int *tile, uint32_t *splits,
                        uint32_t *kchunk);

/* Matmul kernel variants (matmul.wgsl's header says what each does and
 * what it is predicted to gain). Every variant gives results bit-identical
 * to the default kernel (same fma chain over k per output), so switching
 * never changes training numerics; they only change speed. */
#define TT_MMV_BK32 1u  /* "bk32": BK 32 for the 128 tile */
#define TT_MMV_DB 2u    /* "db": two shared-memory stages, one barrier per k tile */
#define TT_MMV_SWZ 4u   /* "swz": swizzled shared tiles (conflict-free transposing stores) */
#define TT_MMV_T64X8 8u /* "t64x8": 64 tile as 8x8 outputs per thread, 64 threads */
#define TT_MMV_ALL 15u
/* "tuned" (what runs when TT_WEBGPU_MMVAR is unset): db + swz on the 64 and
 * 32 tiles, the base kernel on the 128 tile. H200 A/B (docs/BENCHMARKS.md):
 * db,swz 3-13% faster from small to mega (64/32 tiles), 29% slower at gpt2
 * (128 tile). TT_WEBGPU_MMVAR=default selects the base kernel everywhere. */
#define TT_MMV_TUNED 16u
/* Parse a comma list of variant names ("", "default" or NULL: 0). Returns 0,
 * or -1 naming the unknown item in msg. */
int tt_gop_mm_var_parse(const char *s, unsigned *bits, char *msg, size_t cap);
/* The names of the bits, comma-separated ("default" for 0). */
const char *tt_gop_mm_var_str(unsigned bits, char *buf, size_t cap);
/* The kernel a square tile gets under variant bits on an adapter with
 * wg_storage bytes of workgroup memory (0: WebGPU's 16384): outputs per
 * thread (tm x tm), k step, shared stages (bk32 drops to BK 16, then db to
 * one stage, while the tiles do not fit), swizzle. A pure function. */
typedef struct {
    int tm, bk, stages, swz;
    uint32_t threads, bytes;
} tt_mm_kcfg;
void tt_gop_mm_kcfg(unsigned bits, uint32_t wg_storage, int tile, tt_mm_kcfg *k);

/* out (rows,C), stats (2*rows: mean then rstd; own buffer), inp (rows,C),
 * w (C), b (C) (w and b in one buffer). 1 site. */
int tt_gop_layernorm_forward(tt_gops *o, tt_gsite *s, tt_gref out, tt_gref stats, tt_gref inp, tt_gref w, tt_gref b,
                             int rows, int C, tt_status *st);
/* dinp (rows,C) (+= if accum), dwb (2C: dw then db, +=), dout (rows,C),
 * inp (rows,C), w (C), stats (2*rows), part (colsum_part_elems(rows, 2C)). 3 sites. */
int tt_gop_layernorm_backward(tt_gops *o, tt_gsite *s, tt_gref dinp, tt_gref dwb, tt_gref dout, tt_gref inp, tt_gref w,
                              tt_gref stats, tt_gref part, int rows, int C, int accum, tt_status *st);

/* db (N) += column sums of dout (rows,N); part (colsum_part_elems). 2 sites. */
int tt_gop_bias_backward(tt_gops *o, tt_gsite *s, tt_gref db, tt_gref dout, tt_gref part, int rows, int N,
                         tt_status *st);

/* out (n) = gelu(inp (n)); 1 site.  d (n) *= gelu'(inp); 1 site. */
int tt_gop_gelu_forward(tt_gops *o, tt_gsite *s, tt_gref out, tt_gref inp, size_t n, tt_status *st);
int tt_gop_gelu_backward(tt_gops *o, tt_gsite *s, tt_gref d, tt_gref inp, size_t n, tt_status *st);

/* y (B,T,C), stats (2*B*NH*T: lse then D; own buffer), q, k, v (B,T,C). 1 site. */
int tt_gop_attention_forward(tt_gops *o, tt_gsite *s, tt_gref y, tt_gref stats, tt_gref q, tt_gref k, tt_gref v,
                             int B, int T, int C, int NH, tt_status *st);
/* dq, dk, dv (B,T,C) overwritten; stats as above (D written); q, k, v, y,
 * dy (B,T,C). 2 sites. */
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
/* stats[0] += loss_scale * sum(losses[0:valid_rows]). 1 site. */
int tt_gop_loss_reduce(tt_gops *o, tt_gsite *s, tt_gref stats, tt_gref losses, tt_status *st);

/* Global norm -> stats[1], clip, AdamW on n elements (params, grads, m, v
 * whole buffers, offset 0); mask: u32 decay bits; part (adamw_part_elems). 2 sites. */
int tt_gop_adamw(tt_gops *o, tt_gsite *s, tt_gpu_buf params, tt_gpu_buf grads, tt_gpu_buf m, tt_gpu_buf v,
                 tt_gpu_buf mask, tt_gpu_buf part, tt_gpu_buf stats, size_t n, tt_status *st);

/* The same over parameter storage split into chunks (several buffers each
 * within the binding limit; backend_webgpu.c). The norm's partial sums are
 * "parts": part p = sum of g^2 over element positions [desc[2p], desc[2p+1])
 * of ONE chunk's grads buffer (256 lanes strided, fma in order, then a fixed
 * tree), and every adamw site re-sums all n_part parts in one fixed order: the
 * norm depends only on the part table, never on how chunks group the parts.
 * 2 * n_chunks sites: sumsq of every chunk, then adamw of every chunk (the
 * first writes stats[1]). tt_gop_adamw = one chunk whose parts are
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

/* ---- matmul-style attention (gpu_attn_m.c; TT_WEBGPU_ATTN=mt) ---- */
/* Internal to the planners: tt_gop_* site creation (gpu_ops.c make_site):
 * bindings = [args slot, (step uniforms)?, bufs...]. */
int tt_gops_make_site(tt_gops *o, tt_gsite *s, const char *name, const char *prefix, const uint32_t args[16],
                      int use_step, int n_buf, const tt_gpu_buf *bufs, const uint8_t *buf_kinds, uint32_t x,
                      uint32_t y, uint32_t z, tt_status *st);
typedef struct {
    uint32_t br, bc; /* rows per workgroup block, rows per streamed tile (multiples of 4) */
    uint32_t ob;     /* output d-blocks of 4 per thread (1..4) */
    uint32_t nt;     /* threads: (br/4) * (bc/4) */
    uint32_t bytes;  /* workgroup memory */
} tt_attn_m_tile;
/* Tiles of kernel `which` (0 attn_m_fwd, 1 attn_m_bwd_dq, 2 attn_m_bwd_dkdv):
 * the first candidate that fits (storage bytes, invocations); a pure
 * function. Returns 1, or 0 when none fits. */
int tt_gop_attn_m_plan(int which, int hs, uint32_t storage, uint32_t max_inv, tt_attn_m_tile *t);
/* 1 when all three kernels fit this adapter (o->info) for head size hs; the
 * attention ops fall back to the default kernels otherwise. */
int tt_gop_attn_m_usable(const tt_gops *o, int hs);
/* TT_WEBGPU_ATTN_BWD=ds (attn_m2_bwd_dkdv + attn_m2_bwd_dq): the dk/dv
 * kernel's square tile TB (keys per workgroup = queries per streamed tile,
 * also the dS storage tile), the dq kernel's rows per workgroup BQ (a
 * multiple of TB), output d-blocks OB and d-threads TX, and the dS scratch
 * (floats: B*NH * nb(nb+1)/2 * TB*TB, nb = ceil(T/TB)). A pure function of
 * the shapes and limits (tb_force: 0, or the TB to use where it fits).
 * Returns 1, or 0 when it does not fit (then the default backward runs). */
typedef struct {
    tt_attn_m_tile kv;       /* attn_m2_bwd_dkdv: br = bc = TB */
    uint32_t tb, bq, ob, tx, nt_q, bytes_q;
    uint64_t ds_elems;
} tt_attn_m2_plan;
int tt_gop_attn_m2_plan(int hs, int B, int T, int NH, uint32_t storage, uint32_t max_inv, uint32_t max_sb,
                        uint64_t max_binding, uint32_t tb_force, tt_attn_m2_plan *p);
/* As tt_gop_attention_forward / _backward (same buffers and semantics). */
int tt_gop_attn_m_forward(tt_gops *o, tt_gsite *s, tt_gref y, tt_gref stats, tt_gref q, tt_gref k, tt_gref v, int B,
                          int T, int C, int NH, tt_status *st);
int tt_gop_attn_m_backward(tt_gops *o, tt_gsite *s, tt_gref dq, tt_gref dk, tt_gref dv, tt_gref stats, tt_gref q,
                           tt_gref k, tt_gref v, tt_gref y, tt_gref dy, int B, int T, int C, int NH, tt_status *st);

#endif
