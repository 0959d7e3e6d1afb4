/* ref64.h — the float64 reference model of tinytrain: the readable
 * definition of what every backend computes (the role llm.c's train_gpt2.c
 * plays there). Each op's forward and backward, the whole GPT forward and
 * forward + backward, and the optimizer step, as plain loops over the math,
 * in double. The fast kernels (CPU SIMD in src/cpu, WebGPU in src/webgpu)
 * are tested against it (tests/ops/test_backend_ops.c runs every op on every
 * backend; tests/cpu/test_model.c the whole model). Linked into tests and
 * benchmarks only, never into the product.
 *
 * Conventions:
 *  - ref_<op>_forward/backward take the arguments of the CPU op of the same
 *    name (src/cpu/ops.h), in the same order, without the context, in
 *    double; what the reference recomputes instead of reading (the
 *    layernorm statistics, the attention output) is left out of a backward;
 *  - every output is OVERWRITTEN, gradients included: a backward returns the
 *    gradient of that op alone (the CPU ops accumulate parameter gradients;
 *    tests add the reference to the previous contents);
 *  - token ids are int32_t; NULL output pointers are skipped where noted. */
#ifndef TT_REF64_H
#define TT_REF64_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "config.h"
#include "rng.h"

/* helpers: malloc'd copies (free with free()); abort on out of memory */
double *ref_alloc(size_t n);                       /* zeroed */
double *ref_from_float(const float *x, size_t n);
void ref_to_float(float *dst, const double *x, size_t n);

/* ---- dropout with rng.h's mask of key: out[i] = inp[i] * (kept ? 1/(1-p) : 0)
 * (the scale rounded to float, as the backends use it); p = 0 copies ---- */
void ref_dropout_forward(double *out,           // (n) may alias inp
                         const double *inp,     // (n)
                         float p, tt_dropout_key key, size_t n);
void ref_dropout_backward(double *dinp,         // (n) may alias dout
                          const double *dout,   // (n)
                          float p, tt_dropout_key key, size_t n);

/* ---- embedding: out = wte[inp] + wpe[t] ---- */
void ref_embedding_forward(double *out,         // (B,T,C)
                           const int32_t *inp,  // (B,T)
                           const double *wte,   // (V,C)
                           const double *wpe,   // (>=T,C)
                           int B, int T, int C);
void ref_embedding_backward(double *dwte,       // (V,C) or NULL
                            double *dwpe,       // (T,C) or NULL (rows >= T untouched)
                            const double *dout, // (B,T,C)
                            const int32_t *inp, // (B,T)
                            int B, int T, int C, int V);

/* ---- layernorm, rstd = 1 / sqrt(var + eps) (tinytrain's and GPT-2's eps: 1e-5) ---- */
void ref_layernorm_forward(double *out,          // (N,C)
                           double *stats,        // (2N) mean then rstd, or NULL
                           const double *inp,    // (N,C)
                           const double *weight, // (C)
                           const double *bias,   // (C)
                           int N, int C, double eps);
void ref_layernorm_backward(double *dinp,         // (N,C) or NULL
                            double *dweight,      // (C) or NULL
                            double *dbias,        // (C) or NULL
                            const double *dout,   // (N,C)
                            const double *inp,    // (N,C)
                            const double *weight, // (C)
                            int N, int C, double eps);
/* the size of the terms whose sum is dinp: per element
 * rstd (|g| + |mean(g)| + |xh mean(g xh)|) with g = dout weight, xh the
 * normalised input. The terms cancel and rstd reaches 1/sqrt(eps) on a row of
 * equal values, so a float dinp is off by a few ulps of this, not of dinp:
 * the scale a test bounds the error of a layernorm backward by. */
void ref_layernorm_backward_scale(double *scale,        // (N,C)
                                  const double *dout,   // (N,C)
                                  const double *inp,    // (N,C)
                                  const double *weight, // (C)
                                  int N, int C, double eps);

/* ---- matmul: out = inp . weight + bias ---- */
void ref_matmul_forward(double *out,            // (N,OC)
                        const double *inp,      // (N,C)
                        const double *weight,   // (C,OC)
                        const double *bias,     // (OC) or NULL
                        int N, int C, int OC);
void ref_matmul_backward(double *dinp,          // (N,C) or NULL
                         double *dweight,       // (C,OC) or NULL
                         double *dbias,         // (OC) or NULL
                         const double *dout,    // (N,OC)
                         const double *inp,     // (N,C)
                         const double *weight,  // (C,OC)
                         int N, int C, int OC);
/* the tied head: logits = inp . wte^T */
void ref_head_forward(double *logits,           // (N,V)
                      const double *inp,        // (N,C)
                      const double *wte,        // (V,C)
                      int N, int C, int V);
void ref_head_backward(double *dinp,            // (N,C) or NULL
                       double *dwte,            // (V,C) or NULL
                       const double *dlogits,   // (N,V)
                       const double *inp,       // (N,C)
                       const double *wte,       // (V,C)
                       int N, int C, int V);

/* ---- attention: causal, NH heads of hs = C/NH, scale 1/sqrt(hs); q, k, v
 * rows of stride ld (3C for a packed qkv: q = qkv, k = qkv + C, v = qkv + 2C) ---- */
void ref_attention_forward(double *out,         // (B,T,C)
                           double *stats,       // (2,B,NH,T): [0] logsumexp written; or NULL
                           const double *q,     // (B,T,ld)
                           const double *k,     // (B,T,ld)
                           const double *v,     // (B,T,ld)
                           int ld, int B, int T, int C, int NH);
void ref_attention_backward(double *dq,         // (B,T,ld) columns [0,C) overwritten
                            double *dk,         // (B,T,ld)
                            double *dv,         // (B,T,ld)
                            double *stats,      // (2,B,NH,T): [1] D = rowsum(dout * out) written; or NULL
                            const double *q,    // (B,T,ld)
                            const double *k,    // (B,T,ld)
                            const double *v,    // (B,T,ld)
                            const double *dout, // (B,T,C)
                            int ld, int B, int T, int C, int NH);

/* the same with dropout p of the probabilities, mask of key, element
 * ((b*NH + h)*T + t_query)*T + t_key: out = (M.P*scale) V (stats keep the
 * undropped logsumexp); backward dV = Pd^T dO, dP = M.(dO V^T)*scale,
 * dS = P.(dP - D), D = rowsum(dout * out). p = 0 is the plain op. */
void ref_attention_forward_dropout(double *out, double *stats, const double *q, const double *k, const double *v, int ld,
                                   int B, int T, int C, int NH, float p, tt_dropout_key key);
void ref_attention_backward_dropout(double *dq, double *dk, double *dv, double *stats, const double *q, const double *k,
                                    const double *v, const double *dout, int ld, int B, int T, int C, int NH, float p,
                                    tt_dropout_key key);

/* ---- gelu: act TT_ACT_GELU exact, 0.5 x (1 + erf(x / sqrt 2)) (ref_gelu);
 * act TT_ACT_GELU_TANH GPT-2's gelu_new, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
 * (ref_gelu_tanh) ---- */
double ref_gelu(double x);
double ref_gelu_tanh(double x);
void ref_gelu_forward(double *out,              // (n)
                      const double *inp,        // (n)
                      size_t n, int act);
void ref_gelu_backward(double *dinp,            // (n)
                       const double *inp,       // (n)
                       const double *dout,      // (n)
                       size_t n, int act);

/* ---- crossentropy: losses[i] = logsumexp(logits[i]) - logits[i][targets[i]];
 * returns the mean loss; dlogits = (softmax - onehot) * dscale ---- */
double ref_crossentropy_forward(double *losses,         // (N) or NULL
                                double *dlogits,        // (N,V) or NULL
                                const double *logits,   // (N,V)
                                const int32_t *targets, // (N)
                                int N, int V, double dscale);
void ref_crossentropy_backward(double *dlogits,         // (N,V)
                               const double *logits,    // (N,V)
                               const int32_t *targets,  // (N)
                               int N, int V, double dscale);

/* ---- lora: a LoRA adapter's contribution to a projection ----
 * out = scale * (inp . a) . b (the delta alone; the model adds it to the
 * base projection), h = scale * (inp . a). Backward with dh = scale * dout . b^T:
 * dinp = dh . a^T (the adapter's part of the input gradient), da = inp^T dh,
 * db = scale * (inp . a)^T dout. */
void ref_lora_forward(double *out,              // (N,OC)
                      double *h,                // (N,R) scale * inp . a, or NULL
                      const double *inp,        // (N,C)
                      const double *a,          // (C,R)
                      const double *b,          // (R,OC)
                      double scale, int N, int C, int OC, int R);
void ref_lora_backward(double *dinp,            // (N,C) or NULL
                       double *da,              // (C,R) or NULL
                       double *db,              // (R,OC) or NULL
                       const double *dout,      // (N,OC)
                       const double *inp,       // (N,C)
                       const double *a,         // (C,R)
                       const double *b,         // (R,OC)
                       double scale, int N, int C, int OC, int R);

/* ---- adamw: one optimizer step with backend.h semantics ----
 * g_norm = ||grads||; scale = clip/(g_norm+1e-6) if clip > 0 and g_norm > clip;
 * AdamW on every trainable tensor of the layout (decay where lo->t[i].decay);
 * the norm is over trainable tensors only, frozen ones are left as they are.
 * Returns g_norm. */
double ref_adamw_update(double *params,         // (lo->total)
                        const double *grads,    // (lo->total)
                        double *m, double *v,   // (lo->total)
                        const tt_layout *lo, const tt_optim_args *opt);
/* the same over n elements, all trainable, element i decaying where bit
 * i % 32 of decay[i / 32] is set (the WebGPU kernel's mask); the norm is
 * over all n. Returns g_norm. */
double ref_adamw_update_masked(double *params,       // (n)
                               const double *grads,  // (n)
                               double *m, double *v, // (n)
                               const uint32_t *decay, // (ceil(n/32))
                               size_t n, const tt_optim_args *opt);

/* ---- the whole GPT (the layer structure of src/cpu/backend.c) ----
 * With LoRA (cfg->lora_rank > 0) every targeted projection adds
 * ref_lora_forward's delta; grads then hold the gradient of every tensor,
 * frozen base included (what the backends skip).
 * logits (B,T,V) of the inputs inp (B,T), T <= cfg->ctx. */
void ref_gpt_forward(const tt_model_config *cfg, const tt_layout *lo, const double *params, const int32_t *inp, int B,
                     int T, double *logits);
/* tokens (B, T+1) token ids with T = cfg->ctx (inputs [0,T), targets [1,T+1]).
 * Returns the mean token loss; grads (layout total, may be NULL) receives
 * d(mean loss)/d(params). B may differ from cfg->batch. */
double ref_gpt_loss_grad(const tt_model_config *cfg, const tt_layout *lo, const double *params, const tt_token *tokens,
                         int B, double *grads);
/* The same for micro-batch `micro` of n_micro of optimizer step `step`
 * with dropout p at the four sites of a training step (embedding output,
 * attention probabilities, after the attention and MLP output projections),
 * masks keyed by tt_dropout_key_at(seed, step, n_micro, micro, ...). */
double ref_gpt_loss_grad_dropout(const tt_model_config *cfg, const tt_layout *lo, const double *params,
                                 const tt_token *tokens, int B, double *grads, float p, uint64_t seed, int64_t step,
                                 int n_micro, int micro);

#endif
