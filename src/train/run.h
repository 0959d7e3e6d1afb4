/* run.h — the one run setup of every front-end (`tinytrain train`, the web
 * API): from the options given and a source to a training state and a
 * backend ready for the loop (trainer.h), with one set of rules and messages.
 *
 * Sources:
 *   fresh       weights from the seed, step 0 (no LoRA: adapters need a trained base);
 *   resume      a checkpoint's state. Its model and hyper-parameters are the
 *               run's: an option given that differs is a mismatch (a LoRA run
 *               on a trained model starts with init-from instead); the length
 *               (steps), the warmup and the eval cadence may change. The text
 *               must be the one it was trained on (size and hash);
 *   init-from   the weights of a checkpoint (LoRA merged), a run folder or a
 *               Hugging Face folder (io/hf.h); a new run: fresh optimizer and
 *               schedule, step 0. The model's shape is the source's (a preset or
 *               shape option given that differs is refused); batch and LoRA come
 *               from the options (LoRA: the weights become the frozen base, the
 *               adapters start fresh, so the model starts as the source).
 *               With an adapter (a peft folder, io/peft.h) the run is a LoRA
 *               run of its rank, alpha and targets (lora-rank, lora-alpha,
 *               lora-targets given must be the same) whose adapters start as
 *               the folder's: the model starts as base + adapter. The run
 *               records "<source> + adapter <folder>" as its init-from.
 *   Every run: both splits of the text hold more than ctx tokens.
 *
 * The tokenizer (option "tokenizer", runtok.h) is part of the model: a fresh
 * run takes the option's (byte by default; the model's vocabulary is the
 * tokenizer's); a resume the checkpoint's, read from the files beside it and
 * checked by hash (a --tokenizer given must be the same one); init-from the
 * source's (a Hugging Face folder's tokenizer files, a run's), or the option's
 * where the source has none; its vocabulary must be the weights' (weights of
 * a larger vocabulary without any tokenizer take the text as bytes, said in
 * tok_note). The front-end
 * loads the text with r->tok (tt_corpus_open) and keeps the tokenizer's files
 * in the run folder (tt_runtok_save).
 *
 * Three calls, in order, each a front-end's point to act between:
 *   tt_run_plan          reads the source, checks the options against it and
 *                        resolves the run's configs (no text needed: a front-end
 *                        names its output, prints the config, loads the text
 *                        for that ctx);
 *   tt_run_open          checks the text and builds the state;
 *   tt_run_make_backend  creates the backend for it.
 * Errors are one line in st; nothing is left to free on failure but what
 * tt_run_close frees (call it in every case). */
#ifndef TT_RUN_H
#define TT_RUN_H

#include "train/hf.h"
#include "train/runtok.h"
#include "data.h"
#include "options.h"
#include "train.h"

typedef enum { TT_RUN_FRESH = 0, TT_RUN_RESUME, TT_RUN_INIT_FROM } tt_run_kind;

typedef struct {
    tt_run_kind kind;
    const char *path;     /* resume: a checkpoint or a run folder; init-from: also a Hugging Face folder */
    const uint8_t *bytes; /* or a checkpoint in memory (path NULL) */
    size_t len;
    const char *name;     /* init-from: what the run records as its source (NULL: the path made
                           * absolute; for bytes "uploaded checkpoint") */
    const char *adapter;  /* init-from: a peft LoRA folder (io/peft.h) whose adapters the run starts
                           * from (NULL: fresh adapters) */
    int any_text;         /* resume: go on with another text than the checkpoint's */
    int open_done;        /* resume at or past its last step: 1 builds it all the same (to show it, or
                           * to extend it); 0: tt_run_open stops after the checks with done = 1 */
} tt_run_source;

typedef struct {
    tt_run_source src;
    tt_options opts;
    /* tt_run_plan */
    tt_model_config cfg;  /* the run's model */
    tt_train_config tc;   /* the run's training config */
    const char *preset;   /* the preset of cfg's shape and batch, NULL for a custom shape */
    tt_runtok tok;        /* the model's tokenizer and its files */
    char tok_note[400];   /* init-from weights of another vocabulary without a tokenizer: what the run does, or "" */
    int bad_options;      /* the failure is the options' own (a usage error), not the source's */
    /* tt_run_open */
    tt_train_state s;     /* the state the loop starts from (s.cfg = cfg, s.tc = tc); a front-end
                           * may move it out (and zero it here) */
    int done;             /* resume: the checkpoint is at the run's last step already */
    char note[2][320];    /* resume: what the run changes from its checkpoint (warmup, the schedule's
                           * length), for the user; "" where nothing */
    /* tt_run_make_backend */
    tt_backend *be;       /* a front-end may move it out (and set it NULL here) */
    char backend_note[400]; /* what the backend choice has to say (auto fell back, ...), or "" */
    /* private */
    tt_hf_weights init;   /* init-from: the source's weights until tt_run_open */
    float *adapters;      /* init-from with an adapter: its adapters (io/peft.h) until tt_run_open */
    int64_t ckpt_steps, ckpt_warmup; /* resume: the checkpoint's schedule */
} tt_run;

int tt_run_plan(tt_run *r, const tt_options *o, const tt_run_source *src, tt_status *st);
int tt_run_open(tt_run *r, const tt_corpus *c, tt_status *st);
int tt_run_make_backend(tt_run *r, tt_status *st);
void tt_run_close(tt_run *r);

#endif
