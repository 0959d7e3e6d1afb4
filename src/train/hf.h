/* hf.h — the Hugging Face GPT-2 folder: what `tinytrain export RUN DIR`
 * writes and what `train --init-from`, `sample --ckpt` and `eval --ckpt`
 * read. docs/HUGGINGFACE.md describes the folder for users.
 *
 * The folder (written into DIR.tmp.<pid> beside DIR, then renamed):
 *   config.json             GPT2LMHeadModel: the model's activation ("gelu" exact
 *                           erf, "gelu_new" tanh form), LayerNorm eps (1e-5 unless
 *                           the model has another), n_positions = n_ctx = ctx, its
 *                           vocab_size, tied head, dropout fields from the run, no
 *                           special tokens (bos/eos null: every byte is text, none
 *                           ends a sequence)
 *   model.safetensors       F32, GPT-2 names under "transformer.", Conv1D [in, out];
 *                           c_attn = [q | k | v] along the output dimension
 *   generation_config.json  tinytrain sample's defaults (temperature, top-k, top-p)
 *   tokenizer.json          (byte-level models, vocab 256, only) byte-level: a BPE model with no merges over GPT-2's
 *                           byte-to-unicode alphabet, ByteLevel pre-tokenizer (no
 *                           prefix space, no regex split) and decoder: id i = byte i
 *   tokenizer_config.json   PreTrainedTokenizerFast, model_max_length = ctx, no
 *                           clean-up of spaces on decode
 * A model with a BPE tokenizer (tt_hf_export_dir_tok) has instead the
 * tokenizer's own files (tokenizer.json and/or vocab.json + merges.txt, as
 * given), tokenizer_config.json (GPT2Tokenizer) and special_tokens_map.json
 * with "<|endoftext|>" as bos, eos and unk, its id in config.json.
 *
 * Reading accepts a tinytrain checkpoint, a run folder holding one, or a
 * folder with config.json + model.safetensors: our export, a save_pretrained
 * of such a model or a Hugging Face GPT-2 (any vocab_size; activation_function
 * "gelu" exact, "gelu_new" / "gelu_pytorch_tanh" the tanh form; its
 * layer_norm_epsilon; tensors F32, F16 or BF16, widened to F32; names with or
 * without "transformer.", lm_head.weight absent or equal to wte, attn.bias /
 * attn.masked_bias buffers ignored). Anything that would compute differently
 * in tinytrain (another activation, an untied head, attention scaling
 * options, n_inner != 4 n_embd) is refused with one line. */
#ifndef TT_HF_H
#define TT_HF_H

#include "train.h"
#include "train/runtok.h"

/* The GPT-2 tensors of a base model (lora off in c) under `prefix` ("" or
 * "transformer."), as .safetensors written atomically to path; metadata
 * format "pt" plus "tinytrain_config" when config_json is not NULL. */
int tt_hf_write_safetensors(const char *path, const tt_model_config *c, const float *base, const char *prefix,
                            const char *config_json, tt_status *st);

/* Writes the folder for s into dir. dir may be absent or an empty folder; a
 * non-empty folder is replaced only with force, and never one that holds a
 * tinytrain training checkpoint. Nothing at dir changes on failure. */
typedef struct {
    float temperature;
    int top_k;
    float top_p;
} tt_hf_generation; /* generation_config.json: the sampling defaults of `tinytrain sample` */
int tt_hf_export_dir(const char *dir, const tt_train_state *s, const tt_hf_generation *gen, int force, tt_status *st);
/* The same for a model with a BPE tokenizer (runtok.h; NULL or byte: as
 * above): its files as it was given them (tokenizer.json and/or vocab.json +
 * merges.txt, byte for byte), tokenizer_config.json and
 * special_tokens_map.json with "<|endoftext|>" as bos, eos and unk (as
 * transformers' GPT-2 folders have), and its id as bos/eos_token_id in
 * config.json and generation_config.json. */
int tt_hf_export_dir_tok(const char *dir, const tt_train_state *s, const tt_hf_generation *gen, const tt_runtok *rt,
                         int force, tt_status *st);

/* The weights a model hands on: its base, with LoRA adapters merged in.
 * *w points at s->params (no LoRA) or at *owned (free with tt_free). */
int tt_hf_merged(const tt_train_state *s, const float **w, float **owned, tt_status *st);

typedef struct {
    tt_model_config cfg; /* the source's shape, lora off; batch: a checkpoint's own, else the batch of
                          * the preset of this shape, else the default preset's; a folder's ctx:
                          * tt_hf_load_ctx's */
    float *params;       /* tt_config_param_count(&cfg) floats, layout order (tt_alloc) */
    uint64_t hash;       /* FNV-1a 64 of the params' bytes: the same weights give the same hash from any source */
    int from_checkpoint; /* 1: a tinytrain checkpoint (batch is its own) */
    char file[4200];     /* the file the weights came from */
    int n_positions;     /* a folder's n_positions (0 for a checkpoint) */
    const char *dtype;   /* a folder's stored dtype ("F32", "F16", "BF16"; NULL for a checkpoint) */
} tt_hf_weights;

/* The ctx a Hugging Face folder's model gets unless asked: min(n_positions, this). */
#define TT_HF_DEFAULT_CTX 1024
/* ctx > 0: a folder's model gets this ctx (at most its n_positions; wpe keeps
 * its first ctx rows), 0: min(n_positions, TT_HF_DEFAULT_CTX). A checkpoint
 * keeps its own ctx either way. */
int tt_hf_load_ctx(const char *path, int ctx, tt_hf_weights *w, tt_status *st);
/* A Hugging Face folder's model from its config.json alone (params NULL,
 * hash 0, dtype NULL): the shape, ctx and batch tt_hf_load_ctx gives, with
 * the same checks, before any weights are read. */
int tt_hf_describe(const char *dir, int ctx, tt_hf_weights *w, tt_status *st);
/* tt_hf_load_ctx(path, 0, ...) */
int tt_hf_load(const char *path, tt_hf_weights *w, tt_status *st);
/* The same from a training state already read (a checkpoint in memory): its
 * base weights with LoRA merged, lora off in cfg; file is left "". */
int tt_hf_from_state(const tt_train_state *s, tt_hf_weights *w, tt_status *st);
void tt_hf_weights_free(tt_hf_weights *w);
/* FNV-1a 64 of n floats' bytes */
uint64_t tt_hf_hash(const float *p, size_t n);

#endif
