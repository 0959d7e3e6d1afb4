/* web_api.h — the small C API the web app's Worker calls (through the
 * Emscripten module built by cmake/wasm.cmake). One tt_web handle is one
 * training session: options, corpus, training state, backend, the training
 * loop (trainer.h's state machine, the one the CLI runs) and a sampler. The
 * Worker only schedules: it calls tt_web_advance once per unit of work and
 * acts on the event it returns; every training decision (pipelining, evals,
 * save points, when to stop) is the loop's.
 *
 * Protocol (int functions return TT_OK = 0 or a tt status code unless said
 * otherwise; the one-line message is tt_web_error()):
 *   w = tt_web_new()
 *   tt_web_options(w, "preset=tiny steps=200 lr=1e-3 seed=1337 threads=4")
 *   tt_web_corpus(w, bytes, n)            validated (empty, binary, too short)
 *   tt_web_init(w)  or  tt_web_load(w, ckpt_bytes, n, force)  or  tt_web_init_from(w, ckpt_bytes, n, name)
 *     or tt_web_init_from_path(w, dir, name, keep_ctx)   a Hugging Face GPT-2 folder (config.json,
 *                      model.safetensors, vocab.json + merges.txt or tokenizer.json) the page
 *                      wrote into the module's file system, read by the CLI's loader; the run
 *                      takes its tokenizer: the text is tokenized once (data.h tt_corpus_open),
 *                      the tokenizer's files are kept in the run folder /tt_web/run
 *     or tt_web_load_path(w, dir, force)        a run folder there (checkpoint.safetensors and
 *                      its tokenizer files): how a BPE run is resumed
 *   loop: ev = tt_web_advance(w)          one unit of work; ev is an event
 *         (TT_EV_*: 0 START, 1 STEP, 2 EVAL, 3 SAVE, 4 HOLD, 5 END) or
 *         -code on error. SAVE: the checkpoint bytes are at
 *         tt_web_save_ptr(w), tt_web_save_len(w) long.
 *   tt_web_hold(w, 2)  pause: the loop finishes what is in flight, saves,
 *                      then answers HOLD; tt_web_hold(w, 1): the same
 *                      without the save (to read the state); 0: go on
 *   tt_web_set_steps(w, total)            a new total (reopens a finished run)
 *   tt_web_checkpoint(w) -> size; tt_web_save_ptr(w) -> bytes (.safetensors)
 *   tt_web_export_hf(w) -> n files of `tinytrain export` (the Hugging Face
 *                      folder, LoRA merged), after tt_web_checkpoint;
 *                      file i: tt_web_hf_name/ptr/len(w, i)
 *   tt_web_export_adapter(w) -> the same for `tinytrain export --adapter` (peft folder)
 *   tt_web_sample_start(w, prompt, max_tokens, temperature, top_k, top_p, seed)
 *   tt_web_sample_next(w) -> next token id or -1 when done / error; its bytes (a byte of a
 *                      byte-level model, a BPE token's, maybe part of a UTF-8 character) at
 *                      tt_web_sample_piece(w), tt_web_sample_piece_len(w) long
 *   tt_web_inspect(w, prompt, n, top_k) -> inspect.h's JSON (attention maps,
 *                      next bytes, logit lens) of the current model on the
 *                      run's backend, or NULL (tt_web_error); needs no step
 *                      in flight (the Worker settles the loop first)
 *   tt_web_profile(w, reps, detail) -> engine/profile.h's JSON: the run's step
 *                      per WebGPU kernel (the browser engine's --profile); the
 *                      run ends (the profile clobbers its state), or NULL
 *   tt_web_free(w)
 * Numbers are read with small getters (loss, step, ...); the state's
 * histories come out as JSON strings owned by the handle. What the engine
 * says about a setup before a run (presets, option table, sizes, memory
 * plans, checkpoint headers) is web_info.h. */
#ifndef TT_WEB_API_H
#define TT_WEB_API_H

#include <stddef.h>
#include <stdint.h>

typedef struct tt_web tt_web;

tt_web *tt_web_new(void);
void tt_web_free(tt_web *w);
const char *tt_web_error(tt_web *w);

/* Space-separated name=value, the option table's names (options.h; older
 * names are read through its aliases); later ones win. The web's run
 * defaults: save-every 200, save-seconds 10, backend cpu. */
int tt_web_options(tt_web *w, const char *opts);
int tt_web_corpus(tt_web *w, const uint8_t *bytes, size_t n);
/* Run files, the JSON of `tinytrain train --config` (runfile.h), read and
 * written by the same C code. read: the options the file gives, as
 * tt_web_options text (validated and resolved; "data" is accepted and left to
 * the page), or NULL (tt_web_error names the file and key). write: the
 * options text resolved as a run file, or NULL. Both strings are the
 * handle's until its next JSON call. */
const char *tt_web_runfile_read(tt_web *w, const char *name, const char *json);
const char *tt_web_runfile_write(tt_web *w, const char *opts);
int tt_web_init(tt_web *w);
int tt_web_load(tt_web *w, const uint8_t *bytes, size_t n, int force);
/* Fine-tune: a new run from a checkpoint's weights (its shape; fresh
 * optimizer, schedule, corpus; the options' batch and LoRA). name: what the
 * checkpoint records as init_from. */
int tt_web_init_from(tt_web *w, const uint8_t *bytes, size_t n, const char *name);
int tt_web_init_from_path(tt_web *w, const char *path, const char *name, int keep_ctx);
int tt_web_load_path(tt_web *w, const char *path, int force);
int tt_web_set_steps(tt_web *w, double total_steps);

int tt_web_advance(tt_web *w);          /* event >= 0, or -code */
void tt_web_hold(tt_web *w, int mode);  /* 0 go on, 1 hold, 2 hold with a save */
int tt_web_in_flight(tt_web *w);        /* steps submitted and not read (0..2) */
double tt_web_pipelined(tt_web *w);     /* steps of this run read while the next computed */

double tt_web_step(tt_web *w);       /* optimizer steps completed */
double tt_web_total_steps(tt_web *w);
double tt_web_loss(tt_web *w);       /* loss of the last completed step */
double tt_web_grad_norm(tt_web *w);
double tt_web_val_loss(tt_web *w);   /* last validation loss (NaN if none) */
double tt_web_lr(tt_web *w);         /* lr of the last completed step */
double tt_web_tokens_per_step(tt_web *w);
double tt_web_n_params(tt_web *w);
double tt_web_bits_per_byte(tt_web *w, double nats); /* a loss in nats per token as bits per byte of the run's text */
int tt_web_tokenizer_kind(tt_web *w);                /* 0 byte, 1 BPE */
int tt_web_tokens_in_text(tt_web *w);                /* the text's length in the run's tokens */

int tt_web_checkpoint(tt_web *w);    /* the current state as a checkpoint: size in bytes, < 0 on error */
int tt_web_save_len(tt_web *w);      /* size of the last checkpoint (SAVE event or tt_web_checkpoint) */
const uint8_t *tt_web_save_ptr(tt_web *w);
int tt_web_export_hf(tt_web *w);     /* the state's Hugging Face folder: the number of files, < 0 on error */
const char *tt_web_hf_name(tt_web *w, int i);
const uint8_t *tt_web_hf_ptr(tt_web *w, int i);
int tt_web_hf_len(tt_web *w, int i);
int tt_web_export_adapter(tt_web *w); /* a LoRA run's peft folder: the number of files, < 0 on error */

int tt_web_sample_start(tt_web *w, const char *prompt, int max_tokens, float temperature, int top_k, float top_p, double seed);
int tt_web_sample_next(tt_web *w);
const uint8_t *tt_web_sample_piece(tt_web *w);
int tt_web_sample_piece_len(tt_web *w);

const char *tt_web_inspect(tt_web *w, const uint8_t *prompt, int n, int top_k); /* JSON owned by w, or NULL */
/* engine/profile.h's JSON of the run's step per kernel (WebGPU); the run ends (the profile clobbers its state) */
const char *tt_web_profile(tt_web *w, int reps, int detail);

const char *tt_web_state_json(tt_web *w); /* config (option names) + histories of the current state */
const char *tt_web_info(tt_web *w);        /* backend device name, ISA, threads */
int tt_web_has_webgpu(void);               /* 1 in the WebGPU module (tinytrain_web_gpu) */

#endif
