/* model.h — host-side model state: parameter initialisation from the
 * counter-based RNG (identical on every backend and thread count).
 *   embeddings and matrices: N(0, 0.02)
 *   attn.c_proj and mlp.c_proj weights: N(0, 0.02 / sqrt(2 * n_layer))
 *   biases 0, LayerNorm gains 1.
 *   LoRA: lora_a N(0, 1/sqrt(in)), lora_b 0 (config.h).
 * Tensor i of the layout draws element j from stream TT_STREAM_INIT + i, index j. */
#ifndef TT_MODEL_H
#define TT_MODEL_H

#include "config.h"
#include "pool.h"

/* params: layout->total floats. pool may be NULL. */
void tt_model_init_params(const tt_model_config *c, const tt_layout *lo, uint64_t seed, float *params, tt_pool *pool);
/* The same draws for tensors [t0, t1) of the layout only (the rest of params
 * untouched): tt_lora_attach initialises the adapters of a trained base. */
void tt_model_init_tensors(const tt_model_config *c, const tt_layout *lo, uint64_t seed, float *params, tt_pool *pool,
                           int t0, int t1);

#endif
