/* checkpoint.h — full training state and weights-only export as
 * .safetensors (https://github.com/huggingface/safetensors format: u64 LE
 * header length, JSON header, raw little-endian tensor bytes).
 *
 * Full checkpoint tensors (F32): "params.<name>" for every tensor of the
 * layout (tinytrain names, see config.c), "adam_m.<name>" and
 * "adam_v.<name>" for every tensor that trains (config.h tt_layout_train0:
 * all of them without LoRA, a LoRA model's adapters alone: its frozen base
 * has no moments); in that order, each group in layout order. A LoRA
 * checkpoint may also hold adam_m./adam_v. tensors of base tensors (older
 * builds wrote them): the loader accepts them if all zero and ignores them.
 * "__metadata__" (all values strings, as the format requires):
 *   format "tinytrain-checkpoint", version "1", config (JSON of the model
 *   config), train_config (JSON), step, seed, corpus_hash, corpus_bytes,
 *   loss_history (JSON array), val_history (JSON array of [step, loss]),
 *   best_val, best_val_step; and, for a run started with --init-from (optional),
 *   init_from (the path) and init_from_hash (16 hex digits, hf.h's hash);
 *   for a BPE model (optional; absent = byte) tokenizer "bpe" and
 *   tokenizer_hash (16 hex digits, tt_tokenizer_hash) and val_tokens_per_byte
 *   (the validation split's tokens per byte: loss x it / ln 2 = bits per
 *   byte, for the histories); the tokenizer's files
 *   are not in the checkpoint but beside it (train/runtok.h); for a run
 *   with precision f16 (optional; absent = the initial state) loss_scale
 *   and loss_scale_good (and loss_scale_skipped; absent = 0), the loss
 *   scaler after the last step (backend.h).
 * Writes are atomic: <path>.tmp.<pid>, fsync, rename, fsync(dir).
 *
 * Export: weights only with Hugging Face GPT-2 names and shapes (wte.weight,
 * wpe.weight, h.N.ln_1.weight, h.N.attn.c_attn.weight (C, 3C) = [q|k|v] along
 * the output dim, h.N.attn.c_attn.bias, h.N.attn.c_proj.*, h.N.ln_2.*,
 * h.N.mlp.c_fc.*, h.N.mlp.c_proj.*, ln_f.*), metadata format "pt"; written by
 * hf.c, which also writes the whole Hugging Face folder. A LoRA model exports
 * its merged weights (tt_lora_merge, src/lora.h); its adapters alone go to a
 * peft folder (src/io/peft.h). */
#ifndef TT_CHECKPOINT_H
#define TT_CHECKPOINT_H

#include "train.h"

int tt_checkpoint_save(const char *path, const tt_train_state *s, tt_status *st);
/* Loads into a fresh state (allocates; s is overwritten). Validates the whole
 * file; on any error s is left freed/empty and a one-line message is set. */
int tt_checkpoint_load(const char *path, tt_train_state *s, tt_status *st);
/* Same, from memory (used by the fuzz target and the browser). */
int tt_checkpoint_load_mem(const uint8_t *buf, size_t len, tt_train_state *s, tt_status *st);
int tt_export_hf(const char *path, const tt_train_state *s, tt_status *st);
/* What lies at path: TT_FILE_ABSENT, TT_FILE_CHECKPOINT (a tinytrain
 * training checkpoint: its header says so), or TT_FILE_OTHER (anything else,
 * an export included). Reads only the header; never blocks on a FIFO. */
enum { TT_FILE_ABSENT = 0, TT_FILE_CHECKPOINT = 1, TT_FILE_OTHER = 2 };
int tt_checkpoint_probe(const char *path);

#endif
