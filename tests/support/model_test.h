/* model_test.h — helpers of the whole-model tests on the CPU backend
 * (tests/cpu/test_model.c, test_lora.c): random token windows, a backend,
 * the optimizer arguments of step s. */
#ifndef TT_MODEL_TEST_H
#define TT_MODEL_TEST_H

#include "backend.h"

/* n_micro * B windows of T+1 random bytes (malloc'd) */
uint8_t *tt_test_tokens(int n_micro, int B, int T, uint64_t seed);
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
float tt_test_loss_and_grad(tt_backend *be, const float *params, const uint8_t *tok, float *g);

#endif
