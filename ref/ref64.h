/* ref64.h — the float64 reference of tinytrain (tests only): every op's
 * forward and backward, the whole GPT forward + backward, the optimizer.
 * Plain loops, no tricks, written from the math so that the fast kernels
 * (CPU SIMD, WebGPU) can be checked against it.
 *
 * Conventions (same shapes and argument order as src/cpu/ops.h):
 *  - everything is double; token ids are int32_t;
 *  - every output is OVERWRITTEN, gradients included: a backward returns the
 *    gradient of that op alone (the CPU ops accumulate parameter gradients;
 *    tests add the reference to the previous contents);
 *  - NULL output pointers are skipped where noted. */
#ifndef TT_REF64_H
#define TT_REF64_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "config.h"

/* helpers: malloc'd copies (free with free()) */
double *ref_alloc(size_t n);                       /* zeroed */
double *ref_from_float(const float *x, size_t n);
void ref_to_float(float *dst, const double *x, size_t n);

void ref_encoder_forward(double *out,           // (B,T,C)
                         const int32_t *inp,    // (B,T)
                         const double *wte,     // (V,C)
                         const double *wpe,     // (>=T,C)
                         int B, int T, int C);
void ref_encoder_backward(double *dwte,         // (V,C)
                          double *dwpe,         // (T,C) (rows >= T untouched)
                          const double *dout,   // (B,T,C)
                          const int32_t *inp,   // (B,T)
                          int B, int T, int C, int V);

void ref_layernorm_forward(double *out, double *mean, double *rstd,  // (N,C) (N) (N); mean/rstd may be NULL
                           const double *inp, const double *weight, const double *bias, int N, int C);
void ref_layernorm_backward(double *dinp, double *dweight, double *dbias,  // (N,C) (C) (C)
                            const double *dout, const double *inp, const double *weight, int N, int C);

void ref_matmul_forward(double *out,            // (N,OC)
                        const double *inp,      // (N,C)
                        const double *weight,   // (C,OC)
                        const double *bias,     // (OC) or NULL
                        int N, int C, int OC);
void ref_matmul_backward(double *dinp,          // (N,C) or NULL
                         double *dweight,       // (C,OC) or NULL
                         double *dbias,         // (OC) or NULL
                         const double *dout, const double *inp, const double *weight, int N, int C, int OC);

/* logits (N,V) = inp (N,C) . wte^T, wte (V,C) */
void ref_head_forward(double *logits, const double *inp, const double *wte, int N, int C, int V);
void ref_head_backward(double *dinp, double *dwte, const double *dlogits, const double *inp, const double *wte, int N,
                       int C, int V);

/* causal attention, qkv (B,T,3C) = [q|k|v], scale 1/sqrt(C/NH).
 * lse (B,NH,T) may be NULL. */
void ref_attention_forward(double *out, double *lse, const double *qkv, int B, int T, int C, int NH);
void ref_attention_backward(double *dqkv,       // (B,T,3C)
                            const double *dout, // (B,T,C)
                            const double *qkv, int B, int T, int C, int NH);

double ref_gelu(double x);
void ref_gelu_forward(double *out, const double *inp, size_t n);
void ref_gelu_backward(double *dinp, const double *inp, const double *dout, size_t n);

/* per-row losses (may be NULL), mean loss returned; dlogits (may be NULL) =
 * (softmax - onehot) * dscale */
double ref_crossentropy(double *losses, double *dlogits, const double *logits, const int32_t *targets, int N, int V,
                        double dscale);

/* ---- whole model ----
 * tokens (B, T+1) bytes with T = cfg->ctx (inputs [0,T), targets [1,T+1]).
 * Returns the mean token loss; grads (layout total, may be NULL) receives
 * d(mean loss)/d(params). B may differ from cfg->batch. */
double ref_gpt_loss_grad(const tt_model_config *cfg, const tt_layout *lo, const double *params, const uint8_t *tokens,
                         int B, double *grads);

/* ---- optimizer: one step with backend.h semantics ----
 * g_norm = ||grads||; scale = clip/(g_norm+1e-6) if clip > 0 and g_norm > clip;
 * AdamW on every tensor of the layout (decay where lo->t[i].decay).
 * Returns g_norm. */
double ref_optimizer_step(const tt_layout *lo, double *params, double *m, double *v, const double *grads,
                          const tt_optim_args *opt);

#endif
