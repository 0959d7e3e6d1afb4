/* model_test.h — helpers of the whole-model tests (tests/cpu/test_model.c,
 * test_lora.c, tests/webgpu/test_webgpu_{parity,split,lora}.c): random token
 * windows, a CPU backend, the optimizer arguments of step s, random
 * parameters, and the per-tensor error of one gradient against another. */
#ifndef TT_MODEL_TEST_H
#define TT_MODEL_TEST_H

#include "backend.h"

/* n_micro * B windows of T+1 random bytes (malloc'd) */
tt_token *tt_test_tokens(int n_micro, int B, int T, uint64_t seed);
/* the same with ids drawn from 0 .. V-1 */
tt_token *tt_test_tokens_vocab(int n_micro, int B, int T, uint64_t seed, int V);
/* a CPU backend for c (CHECKs that creation succeeds; NULL if not) */
tt_backend *tt_test_cpu_backend(const tt_model_config *c, int threads);
/* AdamW 0.9 / 0.95 / 1e-8, weight decay 0.1, bias corrections of step (1-based) */
tt_optim_args tt_test_optim_at(float lr, float clip, int step);
/* params (malloc'd) from the model init, then every bias and LayerNorm
 * parameter and every lora_b made random too, so that no gradient path is
 * trivially zero or one */
float *tt_test_params(const tt_model_config *c, const tt_layout *lo, uint64_t seed);
/* set_state(params), then loss_and_grad of tok (one batch) into g (poisoned
 * first); CHECKs both calls; returns the loss */
float tt_test_loss_and_grad(tt_backend *be, const float *params, const tt_token *tok, float *g);

/* The per-tensor error of got against ref over tensors [t0, t1) of lo:
 * max |got - ref| / max(max |ref| of the tensor, 1e-2 * max |ref| over those
 * tensors). The floor keeps a tensor whose exact gradient is 0 (attention's
 * k bias: softmax ignores a per-row constant), where both sides hold only
 * rounding noise, from dividing by noise. Returns the worst tensor's error
 * (NaN anywhere: NaN) and names it in *worst (if not NULL); a tensor above
 * report (> 0) gets a line on stderr. */
double tt_test_grad_err(const tt_layout *lo, int t0, int t1, const float *got, const double *ref, double report,
                        const char **worst);
/* n floats as doubles (malloc'd), for a float reference */
double *tt_test_f64(const float *x, size_t n);

#endif
