/* web_api.h — the small C API the web app's Worker calls (through the
 * Emscripten module built by cmake/wasm.cmake). One tt_web handle is one
 * training session: options, corpus, training state, backend, sampler. It
 * drives the same trainer pieces as the CLI (train.h, backend.h, data.h,
 * checkpoint.h, sample.h): no second model.
 *
 * Protocol (every int function returns TT_OK = 0 or a tt status code; the
 * one-line message is tt_web_error()):
 *   w = tt_web_new()
 *   tt_web_options(w, "preset=tiny steps=200 lr=1e-3 seed=1337 threads=4")
 *   tt_web_corpus(w, bytes, n)            validated (empty, binary, too short)
 *   tt_web_init(w)  or  tt_web_load(w, ckpt_bytes, n, force)
 *   loop: tt_web_submit(w); tt_web_collect(w)   one optimizer step (split
 *         phase: submit records/starts the step, collect waits for its loss)
 *         pipelined (WebGPU): submit; then while tt_web_can_submit_ahead(w):
         submit (step k+1 in flight), collect (step k's loss); collect
         always takes the oldest step in flight; eval/save/sample need none
         in flight (tt_web_in_flight(w) == 0)
         tt_web_eval(w)                  validation loss, pushed to history
 *   tt_web_save(w) -> size; tt_web_save_ptr(w) -> bytes (.safetensors)
 *   tt_web_sample_start(w, prompt, max_tokens, temperature, top_k, top_p, seed)
 *   tt_web_sample_next(w) -> next byte (0..255) or -1 when done / error
 *   tt_web_free(w)
 * Numbers are read with small getters (loss, step, ...); the preset table and
 * the state's histories come out as JSON strings owned by the handle. */
#ifndef TT_WEB_API_H
#define TT_WEB_API_H

#include <stddef.h>
#include <stdint.h>

typedef struct tt_web tt_web;

tt_web *tt_web_new(void);
void tt_web_free(tt_web *w);
const char *tt_web_error(tt_web *w);

/* Space-separated key=value: preset layers d_model heads ctx batch steps lr
 * min_lr warmup sched(cosine|constant) wd clip accum seed eval_every
 * eval_batches threads backend(cpu|webgpu) pipeline(0|1, default 1: overlap
 * step k+1 with step k on backends that can, i.e. WebGPU). Later keys
 * override earlier. */
int tt_web_options(tt_web *w, const char *opts);
int tt_web_corpus(tt_web *w, const uint8_t *bytes, size_t n);
int tt_web_init(tt_web *w);
int tt_web_load(tt_web *w, const uint8_t *bytes, size_t n, int force);
int tt_web_set_steps(tt_web *w, double total_steps);

int tt_web_submit(tt_web *w);
int tt_web_collect(tt_web *w);
int tt_web_can_submit_ahead(tt_web *w); /* 1: a second submit may overlap the step in flight */
int tt_web_in_flight(tt_web *w);        /* steps submitted and not collected (0..2) */
double tt_web_pipelined(tt_web *w);     /* steps of this run collected while the next computed */
int tt_web_eval(tt_web *w);

double tt_web_step(tt_web *w);       /* optimizer steps completed */
double tt_web_total_steps(tt_web *w);
double tt_web_loss(tt_web *w);       /* loss of the last completed step */
double tt_web_grad_norm(tt_web *w);
double tt_web_val_loss(tt_web *w);   /* last validation loss (NaN if none) */
double tt_web_lr(tt_web *w);         /* lr of the last completed step */
double tt_web_tokens_per_step(tt_web *w);
double tt_web_n_params(tt_web *w);
double tt_web_eval_every(tt_web *w);

int tt_web_save(tt_web *w);          /* returns size in bytes, < 0 on error */
const uint8_t *tt_web_save_ptr(tt_web *w);

int tt_web_sample_start(tt_web *w, const char *prompt, int max_tokens, float temperature, int top_k, float top_p, double seed);
int tt_web_sample_next(tt_web *w);

const char *tt_web_presets_json(tt_web *w);
const char *tt_web_state_json(tt_web *w); /* config + histories of the current state */
const char *tt_web_info(tt_web *w);        /* backend device name, ISA, threads */
int tt_web_has_webgpu(void);               /* 1 in the WebGPU module (tinytrain_web_gpu) */

#endif
