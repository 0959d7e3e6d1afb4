/* trainer.h — the training loop over one backend (implemented in loop.c):
 * the loop state machine (tt_loop_*) that every front-end drives, and
 * tt_train_run, the blocking driver of the CLI: deterministic batches
 * (train.h rule), LR schedule, periodic validation on a fixed set of batches,
 * best-val tracking, periodic / final / interrupt checkpoints (plus the loss
 * CSV and SVG next to them), progress callbacks.
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
    TT_EV_SAVE,      /* a save point: s->params/m/v hold the state after s->step
                      * (tt_train_run: the checkpoint was written, path in saved_path) */
    TT_EV_HOLD,      /* held on request (tt_loop_hold): nothing in flight */
    TT_EV_END        /* the loop finished (or was stopped) */
} tt_event;

typedef struct {
    tt_event event;
    int64_t step;       /* optimizer steps completed */
    int64_t steps;      /* total steps of the run */
    float loss;         /* train loss of the last step (NAN before any) */
    float grad_norm;    /* pre-clip global norm of the last step (precision f16: not finite when the step
                         * overflowed and was skipped) */
    float loss_scale;   /* precision f16: the loss scaler after the last step (0: none) */
    int64_t scale_good; /* its clean steps in a row */
    int64_t scale_skipped; /* the steps it skipped so far (overflows) */
    float lr;           /* learning rate used by the last step */
    float val_loss;     /* last validation loss (NAN if none yet) */
    float best_val;     /* best validation loss (INFINITY if none) */
    int64_t best_val_step;
    double elapsed_s;   /* wall time of this run's steps so far (evals and saves excluded) */
    double tok_per_s;   /* training tokens per second (recent steps) */
    double eta_s;       /* estimated seconds to the last step (NAN if unknown) */
    int64_t tokens_per_step;
    const char *saved_path;
    int final;          /* TT_EV_SAVE: 1 for the save at the end of the run */
    int target_hit;     /* TT_EV_EVAL: this validation is the first at or below the trainer's target_val */
    int stopped;        /* TT_EV_END: 1 if stopped early (signal or callback) */
} tt_progress;

/* Return non-zero to stop the run (it is saved, then tt_train_run returns). */
typedef int (*tt_progress_fn)(void *user, const tt_progress *p);

typedef struct {
    tt_train_state *s;      /* model + train config + history; updated in place */
    const tt_corpus *corpus;
    tt_backend *be;
    const char *ckpt_path;  /* tt_train_run: NULL: never save */
    const char *csv_path;   /* tt_train_run: NULL: no loss CSV */
    const char *svg_path;   /* tt_train_run: NULL: no loss plot */
    int64_t save_every;     /* > 0: a save point every N steps (tt_train_run: only with ckpt_path) */
    double save_seconds;    /* > 0: a save point once this much wall time passed since the last one */
    tt_progress_fn progress; /* tt_train_run only */
    void *user;
    /* polled after every step; set from a SIGINT handler to save and stop */
    volatile sig_atomic_t *stop_flag;
    /* > 0: stop (saved, *stopped = 1) when this many steps are done. Exact
     * also for pipelined (GPU) backends, where a stop asked by the progress
     * callback or stop_flag takes effect one step later (the next step is
     * already running; it is completed and recorded, state stays consistent). */
    int64_t stop_at;
    /* 1: one step at a time also on backends that can overlap steps (tests) */
    int no_pipeline;
    /* > 0: record in s (target_*) the first validation at or below it, once
     * (a state that reached another target starts over); stop_at_target: then
     * stop, saved, as stop_at does */
    double target_val;
    int stop_at_target;
} tt_trainer;

/* The training loop as a resumable state machine: every front-end (the CLI
 * through tt_train_run, the browser through web_api.c) drives this one.
 * tt_loop_advance does the next unit of work and reports it as an event:
 *   START  once, after the state was uploaded to the backend;
 *   STEP   a step's loss was read and recorded (s->step advanced). On a
 *          backend with step_result_prev the next step was submitted before
 *          this one's loss was read (pipelining); never across a point that
 *          needs the weights after this step (an eval, a save point, the last
 *          step, stop_at, a stop or hold request);
 *   EVAL   validation at s->step (every eval_every steps and after the last);
 *   SAVE   a save point: the loop downloaded the backend state into s, the
 *          caller writes it (save_every / save_seconds cadence, at a hold
 *          with TT_HOLD_SAVE, and final = 1 at the end; never after an error);
 *   HOLD   held (tt_loop_hold): everything in flight was collected with the
 *          evals and saves it made due; advancing again repeats HOLD until
 *          tt_loop_hold(L, TT_HOLD_OFF);
 *   END    finished or stopped; the state in s is the backend's. Advancing
 *          again repeats END (tt_loop_set_steps can reopen the run).
 * Any error ends the machine (advance repeats it). Losses, weights and
 * checkpoints are those of a loop that runs one step at a time. */
typedef struct tt_loop tt_loop;

enum { TT_HOLD_OFF = 0, TT_HOLD = 1, TT_HOLD_SAVE = 2 };

/* Validates t (config, model match, corpus length) and allocates the token
 * buffers; nothing runs until the first advance. t is copied. */
int tt_loop_create(const tt_trainer *t, tt_loop **out, tt_status *st);
void tt_loop_destroy(tt_loop *L);
int tt_loop_advance(tt_loop *L, tt_progress *p, tt_status *st);
/* Stop as the CLI does: no new step; the step in flight is recorded; no
 * eval or save point after it except at the last step; then SAVE (final), END. */
void tt_loop_stop(tt_loop *L);
/* TT_HOLD / TT_HOLD_SAVE: hold (with a save point before HOLD); TT_HOLD_OFF: go on. */
void tt_loop_hold(tt_loop *L, int mode);
/* New total of steps (at least the steps done and in flight); reopens an ended run. */
int tt_loop_set_steps(tt_loop *L, int64_t steps, tt_status *st);
/* Brings the backend's state into s (a no-op when s is current); refused
 * while a step is in flight (hold first). */
int tt_loop_sync(tt_loop *L, tt_status *st);
int tt_loop_in_flight(const tt_loop *L);      /* steps submitted and not read (0..2) */
int64_t tt_loop_pipelined(const tt_loop *L);  /* steps read while the next one computed */
/* Brings s back to its last consistent state after a device error (TT_EDEVICE
 * from advance), for the caller to save: the device's state if it can still
 * be read, else the last state downloaded (history cut back to it).
 * *from_device says which; *lost_from..*lost_to are the steps lost (empty if
 * lost_from > lost_to). Returns TT_OK or TT_EDEVICE when nothing consistent
 * is left (the device failed while its state was being read). */
int tt_loop_recover(tt_loop *L, int *from_device, int64_t *lost_from, int64_t *lost_to);

/* Peak learning rate when none is given (the option table's default): 5e-3
 * up to d_model 128, then scaled by 128 / d_model (the choice and its runs
 * are in docs/BENCHMARKS.md). tt_train_config_default keeps 1e-3. */
float tt_default_lr(const tt_model_config *cfg);

/* The optimizer arguments of step `step` (0-based): learning rate from the
 * schedule, bias corrections 1-b^(step+1) computed in double. Every front-end
 * (trainer, bench, web) builds its steps with this. */
tt_optim_args tt_optim_args_at(const tt_train_config *tc, int64_t step);
/* The tokens of step `step`: tc->accum micro-batches of (B, T+1) tokens, by
 * the batch rule of train.h. */
void tt_step_tokens(const tt_corpus *c, const tt_train_config *tc, int64_t step, int B, int T, tt_token *out);

/* Runs steps s->step .. s->tc.steps - 1 (a loop over tt_loop_advance),
 * writing the checkpoint, CSV and SVG at save points and after an eval.
 * Returns TT_OK also when stopped early (*stopped = 1 then, if stopped is
 * non-NULL). After a device error the last consistent state is saved first
 * (tt_loop_recover) and the message says what was kept. */
int tt_train_run(const tt_trainer *t, int *stopped, tt_status *st);

/* Mean validation loss of s->tc.eval_batches fixed batches with the backend's
 * current weights. tokens: scratch of cfg.batch * (cfg.ctx + 1) tokens. */
int tt_evaluate(tt_backend *be, const tt_corpus *c, int n_batches, tt_token *tokens, float *loss, tt_status *st);

/* Writes the loss CSV and SVG of s (either path may be NULL). */
int tt_write_curves(const tt_train_state *s, const char *csv_path, const char *svg_path, tt_status *st);

#endif
