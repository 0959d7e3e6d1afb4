/* ops.h — the CPU ops of tinytrain, grouped by op family; family X lives in
 * src/cpu/X.c (dropout, embedding, layernorm, matmul, attention, gelu,
 * residual, crossentropy, lora, adamw). Every op is a forward/backward pair (llm.c style,
 * a shape comment on each pointer), parallel through the context's pool
 * (runtime.h) and SIMD through simd.h. The float64 reference of each op is
 * ref_<op>_forward/backward in ref/ref64.h, same argument order.
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
 *  - Ops never allocate: scratch comes from the tt_cpu context, sized at
 *    creation from the *_scratch functions. An op whose need exceeds the
 *    context's scratch skips its work and records the error in the context
 *    (tt_cpu_status, runtime.h). */
#ifndef TT_CPU_OPS_H
#define TT_CPU_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "config.h"
#include "rng.h"
#include "runtime.h"

/* ================= dropout (dropout.c) =================
 * One mask of rng.h's contract: element i is kept iff
 * tt_dropout_keep(key, threshold, i), kept values are multiplied by scale.
 * A NULL mask, or threshold 0 (p = 0), is no dropout: the ops that take a
 * mask then run exactly their code without it. */
typedef struct {
    tt_dropout_key key;
    uint32_t threshold; /* tt_dropout_threshold(p) */
    float scale;        /* 1.0f / (1.0f - p) */
} tt_dropout_mask;
tt_dropout_mask tt_dropout_mask_make(float p, tt_dropout_key key);
static inline int tt_dropout_on(const tt_dropout_mask *d) { return d && d->threshold; }
/* the factor of element i: scale if kept, else 0 */
static inline float tt_dropout_factor(const tt_dropout_mask *d, uint32_t i) {
    return tt_dropout_keep(d->key, d->threshold, i) ? d->scale : 0.0f;
}
/* out[i] = inp[i] * factor(i); element index i = position in the (B,T,C)
 * tensor, (b*T + t)*C + c; out may alias inp. n < 2^32. */
void tt_dropout_forward(tt_cpu *cpu,
                        float *out,            // (n)
                        const float *inp,      // (n)
                        const tt_dropout_mask *d, size_t n);
/* dinp[i] = dout[i] * factor(i) (the mask recomputed from the key); dinp may alias dout */
void tt_dropout_backward(tt_cpu *cpu,
                         float *dinp,          // (n) overwritten
                         const float *dout,    // (n)
                         const tt_dropout_mask *d, size_t n);
/* a residual branch: out = resid + dropout(inp) (out may alias inp or resid);
 * its backward is tt_dropout_backward for the branch, identity for resid */
void tt_dropout_residual_forward(tt_cpu *cpu,
                                 float *out,          // (n)
                                 const float *inp,    // (n) the branch
                                 const float *resid,  // (n)
                                 const tt_dropout_mask *d, size_t n);

/* ================= embedding (embedding.c) ================= */
/* out = wte[inp] + wpe[t] */
void tt_embedding_forward(tt_cpu *cpu,
                          float *out,            // (B,T,C)
                          const int32_t *inp,    // (B,T) token ids in [0,V)
                          const float *wte,      // (V,C)
                          const float *wpe,      // (>=T,C)
                          int B, int T, int C);
void tt_embedding_backward(tt_cpu *cpu,
                           float *dwte,          // (V,C)  +=
                           float *dwpe,          // (>=T,C) +=
                           const float *dout,    // (B,T,C)
                           const int32_t *inp,   // (B,T)
                           int B, int T, int C, int V);

/* ================= layernorm (layernorm.c), epsilon eps (tt_config_ln_eps) =================
 * rstd = 1 / sqrt(var + eps); the backward reads rstd from the stats. */
void tt_layernorm_forward(tt_cpu *cpu,
                          float *out,          // (N,C)
                          float *stats,        // (2N): mean (N), then rstd (N)
                          const float *inp,    // (N,C)
                          const float *weight, // (C)
                          const float *bias,   // (C)
                          int N, int C, float eps);
/* accumulate_dinp: 0 overwrites dinp, 1 adds to it (a residual stream).
 * Shared scratch: tt_layernorm_backward_scratch(N, C). */
void tt_layernorm_backward(tt_cpu *cpu,
                           float *dinp,          // (N,C)
                           float *dweight,       // (C) +=
                           float *dbias,         // (C) +=
                           const float *dout,    // (N,C)
                           const float *inp,     // (N,C)
                           const float *weight,  // (C)
                           const float *stats,   // (2N) from the forward
                           int N, int C, int accumulate_dinp);
size_t tt_layernorm_backward_scratch(int N, int C);

/* ================= matmul (matmul.c) =================
 * out = inp . weight + bias, and its fused forms. Shared scratch: the
 * tt_*_scratch of each op below; per-thread scratch: tt_matmul_thread_scratch(). */
void tt_matmul_forward(tt_cpu *cpu,
                       float *out,            // (N,OC)
                       const float *inp,      // (N,C)
                       const float *weight,   // (C,OC)
                       const float *bias,     // (OC) or NULL
                       int N, int C, int OC);
void tt_matmul_backward(tt_cpu *cpu,
                        float *dinp,           // (N,C)  overwritten, or NULL
                        float *dweight,        // (C,OC) +=, or NULL
                        float *dbias,          // (OC)   +=, or NULL
                        const float *dout,     // (N,OC)
                        const float *inp,      // (N,C)
                        const float *weight,   // (C,OC)
                        int N, int C, int OC);
/* out = resid + inp . weight + bias (the residual fused; out may equal resid) */
void tt_matmul_residual_forward(tt_cpu *cpu,
                                float *out,          // (N,OC)
                                const float *inp,    // (N,C)
                                const float *weight, // (C,OC)
                                const float *bias,   // (OC) or NULL
                                const float *resid,  // (N,OC)
                                int N, int C, int OC);
/* with GELU (the MLP), bit for bit the separate ops:
 * pre = inp . weight + bias; out = gelu(pre) */
void tt_matmul_gelu_forward(tt_cpu *cpu,
                            float *pre,              // (N,OC)
                            float *out,              // (N,OC)
                            const float *inp,        // (N,C)
                            const float *weight,     // (C,OC)
                            const float *bias,       // (OC) or NULL
                            int N, int C, int OC, int act);
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
                             int N, int C, int OC, int act);
/* the q, k, v projections of one input into qkv (N,3C) = [q | k | v] */
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
/* the tied output head: logits = inp . wte^T */
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
size_t tt_matmul_thread_scratch(void);
size_t tt_matmul_forward_scratch(int N, int C, int OC);
size_t tt_matmul_backward_scratch(int N, int C, int OC);
size_t tt_qkv_forward_scratch(int N, int C);
size_t tt_qkv_backward_scratch(int N, int C);
size_t tt_head_forward_scratch(int N, int C, int V);
size_t tt_head_backward_scratch(int N, int C, int V);

/* ================= attention (attention.c) =================
 * Causal multi-head self-attention, scale 1/sqrt(hs), hs = C/NH; head h uses
 * columns h*hs .. (h+1)*hs of q, k, v. q, k, v rows have stride ld (C for
 * separate tensors; 3C for the packed qkv: q = qkv, k = qkv + C, v = qkv + 2C).
 * Per-thread scratch: tt_attention_thread_scratch(T, hs).
 * drop (NULL: none): dropout of the attention probabilities, element
 * ((b*NH + h)*T + t_query)*T + t_key; out = (M.P*scale) V, stats keep the
 * logsumexp of the undropped scores, and the backward recomputes the mask
 * (dV = Pd^T dO, dP = M.(dO V^T)*scale, dS = P.(dP - D), D = rowsum(dO.out)). */
void tt_attention_forward(tt_cpu *cpu,
                          float *out,          // (B,T,C)
                          float *stats,        // (2,B,NH,T): [0] logsumexp of the scaled scores; [1] left to the backward
                          const float *q,      // (B,T,ld)
                          const float *k,      // (B,T,ld)
                          const float *v,      // (B,T,ld)
                          int ld, int B, int T, int C, int NH, const tt_dropout_mask *drop);
void tt_attention_backward(tt_cpu *cpu,
                           float *dq,          // (B,T,ld) overwritten (columns [0,C))
                           float *dk,          // (B,T,ld) overwritten
                           float *dv,          // (B,T,ld) overwritten
                           float *stats,       // (2,B,NH,T): [0] read; [1] D = rowsum(dout * out) written
                           const float *q,     // (B,T,ld)
                           const float *k,     // (B,T,ld)
                           const float *v,     // (B,T,ld)
                           const float *out,   // (B,T,C) the forward output
                           const float *dout,  // (B,T,C)
                           int ld, int B, int T, int C, int NH, const tt_dropout_mask *drop);
/* One query (the last position) against n cached keys/values: the row of the
 * forward for query n-1. Per-thread scratch: tt_attention_thread_scratch(n, hs). */
void tt_attention_decode(tt_cpu *cpu,
                         float *out,           // (C)
                         const float *q,       // (C)
                         const float *k,       // (n,ldk)
                         const float *v,       // (n,ldk)
                         int ldk, int n, int C, int NH);
size_t tt_attention_thread_scratch(int T, int hs);

/* ================= gelu (gelu.c) =================
 * act TT_ACT_GELU: exact, 0.5 x (1 + erf(x / sqrt 2));
 * act TT_ACT_GELU_TANH: GPT-2's gelu_new, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
 * The fused matmul forms above take the same act. */
void tt_gelu_forward(tt_cpu *cpu,
                     float *out,               // (n)
                     const float *inp,         // (n)
                     size_t n, int act);
/* dinp may alias dout */
void tt_gelu_backward(tt_cpu *cpu,
                      float *dinp,             // (n) overwritten
                      const float *inp,        // (n)
                      const float *dout,       // (n)
                      size_t n, int act);

/* ================= crossentropy (crossentropy.c): fused softmax + cross-entropy =================
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

/* ================= lora (lora.c): a LoRA adapter on a projection =================
 * out += scale * (inp . a) . b, scale = alpha / R (config.h). The forward
 * saves h = scale * (inp . a) for the backward. Backward, with
 * dh = scale * dout . b^T:  db += h^T dout,  da += inp^T dh,  dinp += dh a^T.
 * A NULL da / db / dinp skips that product. Shared scratch:
 * tt_lora_scratch(N, C, OC, R). */
void tt_lora_forward(tt_cpu *cpu,
                     float *out,               // (N,OC) +=
                     float *h,                 // (N,R) written: scale * inp . a
                     const float *inp,         // (N,C)
                     const float *a,           // (C,R)
                     const float *b,           // (R,OC)
                     float scale, int N, int C, int OC, int R);
void tt_lora_backward(tt_cpu *cpu,
                      float *dinp,             // (N,C) +=, or NULL
                      float *da,               // (C,R) +=, or NULL
                      float *db,               // (R,OC) +=, or NULL
                      float *dh,               // (N,R) work buffer (overwritten)
                      const float *dout,       // (N,OC)
                      const float *inp,        // (N,C)
                      const float *a,          // (C,R)
                      const float *b,          // (R,OC)
                      const float *h,          // (N,R) from the forward
                      float scale, int N, int C, int OC, int R);
size_t tt_lora_scratch(int N, int C, int OC, int R);

/* ================= adamw (adamw.c): grad norm, clip, AdamW =================
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
/* *spans malloc'd (free with free()). Only trainable tensors get spans: a
 * frozen tensor (the base of a LoRA model) has no gradient, takes no part in
 * the norm and is never updated. */
int tt_spans_build(const tt_layout *lo, tt_span **spans, int64_t *n_spans, tt_status *st);
/* Sum of squares of g over all spans, in double: per-span partials (written
 * to partials, n_spans doubles), then summed in span order. */
double tt_adamw_grad_sumsq(tt_cpu *cpu,
                           const float *g,          // (total)
                           const tt_span *spans, int64_t n_spans,
                           double *partials);       // (n_spans)
/* AdamW (backend.h semantics) with g = grads * grad_scale (the clip scale);
 * if zero_grads, grads are set to 0 afterwards (in the same pass). */
void tt_adamw_update(tt_cpu *cpu,
                     float *params,              // (total)
                     float *grads,               // (total)
                     float *m, float *v,         // (total) AdamW moments
                     const tt_span *spans, int64_t n_spans, const tt_optim_args *opt,
                     float grad_scale, int zero_grads);

#endif
