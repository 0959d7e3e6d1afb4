/* web_info.h — what the engine says about a setup before any run exists:
 * the page asks these instead of keeping copies of engine formulas, ranges
 * or file parsers (web/engine.js calls them through the Worker). No handle
 * and no run: each call is a pure function of its arguments and returns a
 * JSON string owned by the module (valid until the next call of this file),
 * {"error": "one line"} on bad input.
 *
 *   tt_web_presets_json()     the preset table: name, model options, params, step_flops, lr
 *   tt_web_options_json()     the option table (options.h): name, type, group, range, default, choices, label, help
 *   tt_web_plan(opts)         a setup (tt_web_options text) resolved and sized: its model, params,
 *                             step FLOPs, the CPU backend's memory plan and the training state's bytes
 *   tt_web_checkpoint_info(bytes, n)   a .safetensors file's header as the engine reads it: the model
 *                             it records (as options text too), and for a training checkpoint its step and text
 *   tt_web_hf_config_info(bytes, n)    a Hugging Face folder's config.json: the model it describes, as
 *                             `train --init-from FOLDER` loads it (the same fields as a checkpoint's)
 *   tt_web_text_info(bytes, n, ctx)    a training text as the engine takes it: size and hash (data.h),
 *                             or the engine's reason to refuse it for this context length
 *   tt_web_model_info(path, opts, heap_limit)   a Hugging Face GPT-2 folder in the module's file
 *                             system (from its config.json): the model, its tokenizer files, and
 *                             what a full and a LoRA fine-tune need in the engine's memory, with
 *                             "fits" and a one-line "why" where not (web_info.c says the fields)
 *
 * Memory of a run (tt_web_plan), as `tinytrain info` counts it: the CPU
 * backend's plan for these threads (backend.h plan_bytes: parameters,
 * gradients, moments, activations, scratch) plus the training state the
 * trainer keeps beside any backend (train.h: params and both moments of
 * the trainable elements: a LoRA model's adapters alone).
 * A WebGPU run holds the state on the host and its buffers on the device;
 * the device plan needs the adapter, so the WebGPU backend checks it when
 * the run is created (its message says what does not fit). */
#ifndef TT_WEB_INFO_H
#define TT_WEB_INFO_H

#include <stddef.h>
#include <stdint.h>

#include "io/json.h"
#include "train/options.h"

const char *tt_web_presets_json(void);
const char *tt_web_options_json(void);
const char *tt_web_plan(const char *opts);
const char *tt_web_checkpoint_info(const uint8_t *bytes, size_t n);
const char *tt_web_text_info(const uint8_t *bytes, size_t n, int ctx);
const char *tt_web_model_info(const char *path, const char *opts, double heap_limit);
const char *tt_web_hf_config_info(const uint8_t *bytes, size_t n);

/* ,"name":value for every option of a group of src (the option table's
 * names), as checkpoints write them; shared with web_api.c. */
void tt_web_json_options(tt_jw *j, tt_opt_where group, const void *src);

#endif
