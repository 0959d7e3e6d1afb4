/* peft.h — a LoRA model's adapters as the folder Hugging Face peft reads
 * (PeftModel.from_pretrained(GPT2LMHeadModel.from_pretrained(base), dir)):
 *
 *   adapter_config.json        peft_type "LORA", task_type "CAUSAL_LM", r,
 *                              lora_alpha, target_modules (GPT-2 module
 *                              suffixes: "c_attn", "c_fc", "c_proj" for both
 *                              projections or "attn.c_proj" / "mlp.c_proj"
 *                              for one), fan_in_fan_out true (GPT-2's Conv1D),
 *                              lora_dropout 0, bias "none",
 *                              base_model_name_or_path, inference_mode true
 *   adapter_model.safetensors  F32, for every layer l and target module M:
 *                              base_model.model.transformer.h.<l>.<M>.lora_A.weight (r, in)
 *                              base_model.model.transformer.h.<l>.<M>.lora_B.weight (out, r)
 *                              (peft's nn.Linear layout: the transposes of
 *                              tinytrain's lora_a (in, r) and lora_b (r, out))
 *
 * peft computes out += (alpha / r) * lora_B(lora_A(x)), tinytrain's
 * s * (x A) B: the same function. Both files are written atomically; the
 * folder is created if missing.
 *
 * Reading (tt_load_peft) takes the folder peft's save_pretrained writes for
 * a GPT-2 (GPT2LMHeadModel) base, ours or another's:
 *   adapter_config.json        peft_type "LORA"; r; lora_alpha; target_modules
 *                              a list of the suffixes above (also
 *                              "attn.c_attn", "mlp.c_fc") or "all-linear";
 *                              bias absent, null or "none"; fan_in_fan_out,
 *                              lora_dropout and the other fields any (peft
 *                              itself turns fan_in_fan_out on for GPT-2's
 *                              Conv1D: the tensors mean the same).
 *                              Refused: use_rslora or use_dora true, a
 *                              layers_to_transform, modules_to_save,
 *                              rank_pattern or alpha_pattern, a target module
 *                              tinytrain has no adapter for (a full module
 *                              path, a regex string)
 *   adapter_model.safetensors  F32, F16 or BF16 (widened to F32); for every
 *                              layer and targeted module its lora_A.weight and
 *                              lora_B.weight under the names above (or under
 *                              "base_model.model.h.<l>." for a GPT2Model
 *                              base); every tensor used, every shape the
 *                              base's.
 * Anything else is one line naming the file, the field or the tensor. */
#ifndef TT_PEFT_H
#define TT_PEFT_H

#include "config.h"

/* params: the parameter buffer of a LoRA model of cfg (lora_rank > 0).
 * base_model: written as base_model_name_or_path (NULL: null). */
int tt_export_peft(const char *dir, const tt_model_config *cfg, const float *params, const char *base_model,
                   tt_status *st);

/* The adapters of the peft folder dir on a base model of shape base (lora
 * off): cfg = base with lora_rank, lora_alpha and lora_targets from
 * adapter_config.json; *adapters (tt_alloc, free with tt_free) =
 * tt_config_lora_count(cfg) floats, the part of cfg's parameter buffer after
 * its base tensors (config.h: layout.base_total on), in tinytrain's layout
 * (lora_a (in, R) = lora_A^T, lora_b (R, out) = lora_B^T). So the model's
 * full buffer is the base's params followed by *adapters. Nothing is set on
 * failure. */
int tt_load_peft(const char *dir, const tt_model_config *base, tt_model_config *cfg, float **adapters, tt_status *st);

#endif
