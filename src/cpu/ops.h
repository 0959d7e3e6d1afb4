/* ops.h — the CPU kernels of tinytrain: every op as a forward/backward pair
 * (llm.c style, same argument order, a shape comment on each pointer), all
 * parallel through the persistent pool (pool.h) and all SIMD through simd.h.
 *
 * Determinism: every op splits its work into chunks whose size depends only
 * on the shapes (never on the thread count), every output element is written
 * by exactly one chunk, and every reduction runs in a fixed order. Results
 * are therefore bit-identical for 1, 2 or N threads.
 *
 * Conventions:
 *  - N = number of rows (B*T tokens); matrices are row-major; weights are
 *    stored [in, out] (W (C, OC)), so a linear layer is out = inp . W + b.
 *  - Backward ops OVERWRITE dinp (the gradient w.r.t. an activation) unless
 *    stated otherwise, and ACCUMULATE (+=) into parameter gradients
 *    (dweight, dbias, dwte, dwpe), which is what gradient accumulation over
 *    micro-batches needs. A NULL gradient pointer skips that gradient.
 *  - Ops never allocate: scratch comes from a tt_cpu context sized at
 *    creation (see tt_cpu_create and the *_scratch functions). */
#ifndef TT_CPU_OPS_H
#define TT_CPU_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "config.h"
#include "pool.h"

typedef struct {
    tt_pool *pool;          /* NULL when threads == 1 */
    int nthreads;
    float *scratch;         /* shared scratch */
    size_t scratch_floats;
    float *tscratch;        /* per-thread scratch: thread t uses tscratch + t * tscratch_floats */
    size_t tscratch_floats;
    int error;              /* set (and the op skipped) if an op needed more scratch than planned */
    double spin_s;          /* how long a thread spins at a phase barrier before yielding */
} tt_cpu;

/* threads <= 0: tt_default_threads(). shared/thread: scratch floats needed
 * (the maximum over the ops that will run, from the functions below). */
int tt_cpu_create(tt_cpu *cpu, int threads, size_t shared_floats, size_t thread_floats, tt_status *st);
void tt_cpu_destroy(tt_cpu *cpu);

/* Scratch requirements (floats). Shared scratch must cover the largest need
 * of the ops a context runs (an op that would need more does nothing and
 * sets cpu->error); per-thread scratch is at least
 * tt_matmul_thread_scratch() (tt_cpu_create ensures it). */
size_t tt_matmul_thread_scratch(void);
size_t tt_attention_thread_scratch(int T, int hs);
size_t tt_matmul_forward_scratch(int N, int C, int OC);
size_t tt_matmul_backward_scratch(int N, int C, int OC);
size_t tt_qkv_forward_scratch(int N, int C);
size_t tt_qkv_backward_scratch(int N, int C);
size_t tt_head_forward_scratch(int N, int C, int V);
size_t tt_head_backward_scratch(int N, int C, int V);
size_t tt_layernorm_backward_scratch(int N, int C);
/* What one GPT forward + backward at (batch, ctx) of c needs: the maximum of
 * the above over its ops. */
size_t tt_model_shared_scratch(const tt_model_config *c);
size_t tt_model_thread_scratch(const tt_model_config *c);

/* ---- encoder: token + position embedding ---- */
void tt_encoder_forward(tt_cpu *cpu,
                        float *out,            // (B,T,C)
                        const int32_t *inp,    // (B,T) token ids in [0,V)
                        const float *wte,      // (V,C)
                        const float *wpe,      // (>=T,C)
                        int B, int T, int C);
void tt_encoder_backward(tt_cpu *cpu,
                         float *dwte,          // (V,C)  +=
                         float *dwpe,          // (>=T,C) +=
                         const float *dout,    // (B,T,C)
                         const int32_t *inp,   // (B,T)
                         int B, int T, int C, int V);

/* ---- layernorm (eps 1e-5), keeps mean and rstd for the backward ---- */
void tt_layernorm_forward(tt_cpu *cpu,
                          float *out,          // (N,C)
                          float *mean,         // (N)
                          float *rstd,         // (N)
                          const float *inp,    // (N,C)
                          const float *weight, // (C)
                          const float *bias,   // (C)
                          int N, int C);
/* accumulate_dinp: 0 overwrites dinp, 1 adds to it (a residual stream). */
void tt_layernorm_backward(tt_cpu *cpu,
                           float *dinp,          // (N,C)
                           float *dweight,       // (C) +=
                           float *dbias,         // (C) +=
                           const float *dout,    // (N,C)
                           const float *inp,     // (N,C)
                           const float *weight,  // (C)
                           const float *mean,    // (N)
                           const float *rstd,    // (N)
                           int N, int C, int accumulate_dinp);

/* ---- matmul: out = inp . weight + bias (+ resid) ---- */
void tt_matmul_forward(tt_cpu *cpu,
                       float *out,            // (N,OC)
                       const float *inp,      // (N,C)
                       const float *weight,   // (C,OC)
                       const float *bias,     // (OC) or NULL
                       int N, int C, int OC);
/* out = resid + inp . weight + bias (fused residual; out may equal resid) */
void tt_matmul_residual_forward(tt_cpu *cpu,
                                float *out,          // (N,OC)
                                const float *inp,    // (N,C)
                                const float *weight, // (C,OC)
                                const float *bias,   // (OC) or NULL
                                const float *resid,  // (N,OC)
                                int N, int C, int OC);
void tt_matmul_backward(tt_cpu *cpu,
                        float *dinp,           // (N,C)  overwritten, or NULL
                        float *dweight,        // (C,OC) +=, or NULL
                        float *dbias,          // (OC)   +=, or NULL
                        const float *dout,     // (N,OC)
                        const float *inp,      // (N,C)
                        const float *weight,   // (C,OC)
                        int N, int C, int OC);

/* ---- fused with GELU (the MLP): same results, bit for bit, as the
 * separate ops, with one pass over the (N, 4C) activations less each ---- */
/* pre = inp . weight + bias; out = gelu(pre) */
void tt_matmul_gelu_forward(tt_cpu *cpu,
                            float *pre,              // (N,OC)
                            float *out,              // (N,OC)
                            const float *inp,        // (N,C)
                            const float *weight,     // (C,OC)
                            const float *bias,       // (OC) or NULL
                            int N, int C, int OC);
/* tt_matmul_backward whose dinp continues through GELU's backward:
 * dinp = (dout . weight^T) * gelu'(gelu_inp) */
void tt_matmul_gelu_backward(tt_cpu *cpu,
                             float *dinp,            // (N,C) overwritten
                             float *dweight,         // (C,OC) +=, or NULL
                             float *dbias,           // (OC) +=, or NULL
                             const float *dout,      // (N,OC)
                             const float *inp,       // (N,C)
                             const float *weight,    // (C,OC)
                             const float *gelu_inp,  // (N,C) the GELU's input (pre-activation)
                             int N, int C, int OC);

/* ---- q, k, v projections of one input into qkv (N,3C) = [q | k | v] ---- */
void tt_qkv_forward(tt_cpu *cpu,
                    float *qkv,                // (N,3C)
                    const float *inp,          // (N,C)
                    const float *wq, const float *bq,  // (C,C), (C)
                    const float *wk, const float *bk,
                    const float *wv, const float *bv,
                    int N, int C);
void tt_qkv_backward(tt_cpu *cpu,
                     float *dinp,              // (N,C) overwritten
                     float *dwq, float *dbq,   // (C,C), (C) +=
                     float *dwk, float *dbk,
                     float *dwv, float *dbv,
                     const float *dqkv,        // (N,3C)
                     const float *inp,         // (N,C)
                     const float *wq, const float *wk, const float *wv,
                     int N, int C);

/* ---- tied output head: logits = inp . wte^T ---- */
void tt_head_forward(tt_cpu *cpu,
                     float *logits,            // (N,V)
                     const float *inp,         // (N,C)
                     const float *wte,         // (V,C)
                     int N, int C, int V);
void tt_head_backward(tt_cpu *cpu,
                      float *dinp,             // (N,C) overwritten
                      float *dwte,             // (V,C) +=
                      const float *dlogits,    // (N,V)
                      const float *inp,        // (N,C)
                      const float *wte,        // (V,C)
                      int N, int C, int V);

/* ---- causal multi-head self-attention (FlashAttention-style memory: only
 * the per-row logsumexp is kept; scores are recomputed in the backward).
 * qkv rows are [q | k | v], head h uses columns h*hs .. (h+1)*hs of each;
 * scale 1/sqrt(hs). Needs tt_attention_thread_scratch(T, hs) per thread. */
void tt_attention_forward(tt_cpu *cpu,
                          float *out,          // (B,T,C)
                          float *lse,          // (B,NH,T) logsumexp of the scaled scores
                          const float *qkv,    // (B,T,3C)
                          int B, int T, int C, int NH);
void tt_attention_backward(tt_cpu *cpu,
                           float *dqkv,        // (B,T,3C) overwritten
                           const float *dout,  // (B,T,C)
                           const float *qkv,   // (B,T,3C)
                           const float *out,   // (B,T,C) the forward output
                           const float *lse,   // (B,NH,T)
                           int B, int T, int C, int NH);

/* ---- GELU, exact: 0.5 x (1 + erf(x / sqrt 2)) ---- */
void tt_gelu_forward(tt_cpu *cpu,
                     float *out,               // (n)
                     const float *inp,         // (n)
                     size_t n);
/* dinp may alias dout */
void tt_gelu_backward(tt_cpu *cpu,
                      float *dinp,             // (n) overwritten
                      const float *inp,        // (n)
                      const float *dout,       // (n)
                      size_t n);

/* ---- residual: out = inp1 + inp2 ---- */
void tt_residual_forward(tt_cpu *cpu,
                         float *out,           // (n) may alias an input
                         const float *inp1,    // (n)
                         const float *inp2,    // (n)
                         size_t n);
void tt_residual_backward(tt_cpu *cpu,
                          float *dinp1,        // (n) +=
                          float *dinp2,        // (n) +=
                          const float *dout,   // (n)
                          size_t n);

/* ---- fused softmax + cross-entropy ----
 * forward: losses[i] = logsumexp(logits[i]) - logits[i][targets[i]];
 * returns the mean loss (summed in double, fixed order). If dlogits is not
 * NULL it also writes the backward in the same pass:
 *   dlogits = (softmax(logits) - onehot(target)) * dscale
 * (dlogits may alias logits). tt_crossentropy_backward is the same kernel
 * without the loss. */
float tt_crossentropy_forward(tt_cpu *cpu,
                              float *losses,          // (N)
                              float *dlogits,         // (N,V) or NULL
                              const float *logits,    // (N,V)
                              const int32_t *targets, // (N)
                              int N, int V, float dscale);
void tt_crossentropy_backward(tt_cpu *cpu,
                              float *dlogits,         // (N,V) overwritten, may alias logits
                              const float *logits,    // (N,V)
                              const int32_t *targets, // (N)
                              int N, int V, float dscale);

/* ---- optimizer ----
 * The parameter buffer is cut into spans: fixed pieces of at most
 * TT_SPAN_MAX floats that never cross a tensor boundary (so each span knows
 * whether weight decay applies). Spans depend only on the layout, which
 * makes the norm's reduction order independent of the thread count. */
#define TT_SPAN_MAX 16384
typedef struct {
    size_t off;
    size_t len;
    int decay;
} tt_span;
/* *spans malloc'd (free with free()). */
int tt_spans_build(const tt_layout *lo, tt_span **spans, int64_t *n_spans, tt_status *st);
/* Sum of squares of g over all spans, in double: per-span partials (written
 * to partials, n_spans doubles), then summed in span order. */
double tt_grad_sumsq(tt_cpu *cpu, const float *g, const tt_span *spans, int64_t n_spans, double *partials);
/* AdamW (backend.h semantics) with g = grads * grad_scale; if zero_grads,
 * grads are set to 0 afterwards (in the same pass). */
void tt_adamw_update(tt_cpu *cpu, float *params, float *grads, float *m, float *v,
                     const tt_span *spans, int64_t n_spans, const tt_optim_args *opt,
                     float grad_scale, int zero_grads);

/* ---- small helpers (parallel) ---- */
void tt_cpu_zero(tt_cpu *cpu, float *x, size_t n);
void tt_cpu_copy(tt_cpu *cpu, float *dst, const float *src, size_t n);

#endif
