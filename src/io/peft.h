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
 * folder is created if missing. */
#ifndef TT_PEFT_H
#define TT_PEFT_H

#include "config.h"

/* params: the parameter buffer of a LoRA model of cfg (lora_rank > 0).
 * base_model: written as base_model_name_or_path (NULL: null). */
int tt_export_peft(const char *dir, const tt_model_config *cfg, const float *params, const char *base_model,
                   tt_status *st);

#endif
