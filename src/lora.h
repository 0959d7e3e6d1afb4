/* lora.h — LoRA models on the host (config.h has the layout): starting a LoRA
 * run from a trained base (attach) and folding the adapters back into the
 * base weights (merge, for "save merged" and every consumer of plain GPT-2
 * weights: the HF export, the sampler).
 *
 * The base tensors of a LoRA layout sit at the same offsets as in the layout
 * of the same config without LoRA (the adapters are appended after ln_f.b),
 * so a base parameter buffer is the first layout.base_total floats. */
#ifndef TT_LORA_H
#define TT_LORA_H

#include "config.h"

/* cfg with the LoRA fields cleared (rank 0, no targets, alpha 0). */
tt_model_config tt_lora_base_config(const tt_model_config *cfg);

/* out (layout of cfg: lo.total floats) = the base weights base_params
 * (lo.base_total floats, the layout of tt_lora_base_config(cfg)) followed by
 * fresh adapters drawn as tt_model_init_params draws them for seed
 * (lora_a N(0, 1/sqrt(in)) from stream TT_STREAM_INIT + tensor index,
 * lora_b 0). cfg->lora_rank must be > 0. */
int tt_lora_attach(const tt_model_config *cfg, const float *base_params, uint64_t seed, float *out, tt_status *st);

/* out (lo->total floats, a LoRA layout) = base (lo->base_total floats)
 * followed by adapters (the rest: lora_a, lora_b in layout order, as
 * tt_load_peft gives them). */
void tt_lora_join(const tt_layout *lo, const float *base, const float *adapters, float *out);

/* out (lo.base_total floats) = the base weights of params (a LoRA model of
 * cfg) with every targeted projection W += (alpha/R) * A B, each element's sum
 * over R accumulated in double and added to W in double before the one
 * rounding to float. c_attn's B (R, 3C) splits into the q, k and v weights.
 * cfg->lora_rank 0: a plain copy. out may not alias params. */
int tt_lora_merge(const tt_model_config *cfg, const float *params, float *out, tt_status *st);

#endif
