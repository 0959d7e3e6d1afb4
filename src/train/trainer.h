/* trainer.h — the training loop over one backend (implemented in train.c):
 * deterministic batches (train.h rule), LR schedule, periodic validation on a
 * fixed set of batches, best-val tracking, periodic / final / interrupt
 * checkpoints (plus the loss CSV and SVG next to them), progress callbacks.
 *
 * The state `s` is the source of truth between calls: the loop uploads
 * s->params/m/v to the backend at the start, continues from s->step, pushes
 * each step's loss into s's history, and downloads the backend state into s
 * before every save and at the end. A run that is stopped (callback, stop
 * flag) is saved and can be resumed exactly. */
#ifndef TT_TRAINER_H
#define TT_TRAINER_H

#include <signal.h>

#include "data.h"
#include "train.h"

typedef enum {
    TT_EV_START = 0, /* before the first step (step = s->step) */
    TT_EV_STEP,      /* an optimizer step completed */
    TT_EV_EVAL,      /* a validation pass completed (val_loss set) */
    TT_EV_SAVE,      /* a checkpoint was written (path in saved_path) */
    TT_EV_END        /* the loop finished (or was stopped) */
} tt_event;

typedef struct {
    tt_event event;
    int64_t step;       /* optimizer steps completed */
    int64_t steps;      /* total steps of the run */
    float loss;         /* train loss of the last step (NAN before any) */
    float grad_norm;    /* pre-clip global norm of the last step */
    float lr;           /* learning rate used by the last step */
    float val_loss;     /* last validation loss (NAN if none yet) */
    float best_val;     /* best validation loss (INFINITY if none) */
    int64_t best_val_step;
    double elapsed_s;   /* wall time of this run's steps so far (evals and saves excluded) */
    double tok_per_s;   /* training tokens per second (recent steps) */
    double eta_s;       /* estimated seconds to the last step (NAN if unknown) */
    int64_t tokens_per_step;
    const char *saved_path;
    int stopped;        /* TT_EV_END: 1 if stopped early (signal or callback) */
} tt_progress;

/* Return non-zero to stop the run (it is saved, then tt_train_run returns). */
typedef int (*tt_progress_fn)(void *user, const tt_progress *p);

typedef struct {
    tt_train_state *s;      /* model + train config + history; updated in place */
    const tt_corpus *corpus;
    tt_backend *be;
    const char *ckpt_path;  /* NULL: never save */
    const char *csv_path;   /* NULL: no loss CSV */
    const char *svg_path;   /* NULL: no loss plot */
    int64_t save_every;     /* > 0: also save every N steps */
    tt_progress_fn progress;
    void *user;
    /* polled after every step; set from a SIGINT handler to save and stop */
    volatile sig_atomic_t *stop_flag;
    /* > 0: stop (saved, *stopped = 1) when this many steps are done. Exact
     * also for pipelined (GPU) backends, where a stop asked by the progress
     * callback or stop_flag takes effect one step later (the next step is
     * already running; it is completed and recorded, state stays consistent). */
    int64_t stop_at;
} tt_trainer;

/* Peak learning rate the CLI uses when none is given: 5e-3 up to d_model
 * 128, then scaled by 128 / d_model (5e-3 beat 1e-3 clearly on tiny, small
 * and medium in 1000-2500-step fortune runs: val loss 1.91 vs 2.07 for small
 * at 1500 steps; 1.2e-2 diverged). tt_train_config_default keeps 1e-3. */
float tt_default_lr(const tt_model_config *cfg);

/* The optimizer arguments of step `step` (0-based): learning rate from the
 * schedule, bias corrections 1-b^(step+1) computed in double. Every front-end
 * (trainer, bench, web) builds its steps with this. */
tt_optim_args tt_optim_args_at(const tt_train_config *tc, int64_t step);
/* The tokens of step `step`: tc->accum micro-batches of (B, T+1) bytes, by
 * the batch rule of train.h. */
void tt_step_tokens(const tt_corpus *c, const tt_train_config *tc, int64_t step, int B, int T, uint8_t *out);

/* Runs steps s->step .. s->tc.steps - 1. Returns TT_OK also when stopped
 * early (*stopped = 1 then, if stopped is non-NULL). */
int tt_train_run(const tt_trainer *t, int *stopped, tt_status *st);

/* Mean validation loss of s->tc.eval_batches fixed batches with the backend's
 * current weights. tokens: scratch of cfg.batch * (cfg.ctx + 1) bytes. */
int tt_evaluate(tt_backend *be, const tt_corpus *c, int n_batches, uint8_t *tokens, float *loss, tt_status *st);

/* Writes the loss CSV and SVG of s (either path may be NULL). */
int tt_write_curves(const tt_train_state *s, const char *csv_path, const char *svg_path, tt_status *st);

#endif
