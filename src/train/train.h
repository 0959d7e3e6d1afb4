/* train.h — training configuration, the full training state (what a
 * checkpoint holds) and the trainer loop.
 *
 * Determinism: batch b of micro-batch i of optimizer step s (0-based) is the
 * window starting at tt_rand_below(seed, TT_STREAM_BATCH, seq, n_train - T)
 * with seq = (s * accum + i) * B + b. So the data cursor IS (seed, step): a
 * resumed run sees exactly the batches the uninterrupted run would. */
#ifndef TT_TRAIN_H
#define TT_TRAIN_H

#include "backend.h"
#include "config.h"

typedef enum { TT_SCHED_COSINE = 0, TT_SCHED_CONSTANT = 1 } tt_sched;

typedef struct {
    int64_t steps;        /* total optimizer steps of the run */
    float lr;             /* peak learning rate */
    float min_lr;         /* cosine floor */
    int64_t warmup;       /* linear warmup steps */
    tt_sched sched;
    float beta1, beta2, eps, weight_decay, clip;
    int accum;            /* micro-batches per optimizer step */
    uint64_t seed;
    int64_t eval_every;   /* validation every N steps (0: only at the end) */
    int eval_batches;     /* fixed validation batches */
    float dropout;        /* dropout probability in [0, 1), training steps only */
    int precision;        /* TT_PRECISION_*: f32, or f16 mixed precision (backend.h) */
} tt_train_config;

/* Defaults that train well on the presets (lr 1e-3 peak, warmup 5% capped at
 * 100, cosine to lr/10, AdamW 0.9/0.95/1e-8, wd 0.1, clip 1.0, accum 1,
 * eval every 100 steps on 8 batches, seed 1337). */
void tt_train_config_default(tt_train_config *tc, int64_t steps);
int tt_train_config_validate(const tt_train_config *tc, tt_status *st);
/* Learning rate for optimizer step `step` (0-based). */
float tt_lr_at(const tt_train_config *tc, int64_t step);

typedef struct {
    tt_model_config cfg;
    tt_train_config tc;
    tt_layout layout;
    float *params;           /* layout.total floats */
    /* the AdamW moments of the trainable range only (config.h): m[i], v[i]
     * belong to layout element tt_layout_train0 + i, tt_layout_train_count
     * floats each (a LoRA model's adapters; the whole layout without LoRA) */
    float *m, *v;
    int64_t step;            /* optimizer steps completed */
    /* history: train loss of each completed step (index = step - 1) */
    float *loss_hist;
    int64_t loss_cap;
    /* validation history */
    int64_t n_val, val_cap;
    int64_t *val_step;
    float *val_loss;
    float best_val;          /* INFINITY if none */
    int64_t best_val_step;   /* -1 if none */
    /* the first validation at or below the run's --target-val (target_step 0:
     * not reached): its step and the wall time of the run segment that got there */
    float target_val;
    int64_t target_step;
    double target_s;
    /* corpus identity, checked on resume (not the text itself) */
    uint64_t corpus_hash;
    uint64_t corpus_bytes;
    /* the model's tokenizer (tokenizer.h): 0 byte, 1 BPE, with its content
     * hash (tt_tokenizer_hash; 0 for byte); its files are kept beside the
     * checkpoint (train/runtok.h) */
    int tok_kind;
    uint64_t tok_hash;
    /* tokens per byte of the validation split the run trained on (data.h;
     * 1 for byte, 0 where not recorded): a loss in nats per token times this
     * / ln 2 is bits per byte */
    double tok_per_byte;
    /* where the weights came from (train --init-from): the path (with an
     * adapter: "<path> + adapter <folder>") and the FNV-1a 64 hash of the
     * base weights read there (hf.h); "" if none */
    char init_from[4096];
    uint64_t init_hash;
    /* the loss scaler (tc.precision f16; backend.h tt_loss_scaler) after
     * the last completed step: its scale, clean steps in a row and the
     * steps it skipped (overflows) so far */
    float loss_scale;
    int64_t scale_good;
    int64_t scale_skipped;
} tt_train_state;

/* Allocate + initialise a fresh state (params from tc->seed). */
int tt_state_init(tt_train_state *s, const tt_model_config *cfg, const tt_train_config *tc, tt_status *st);
/* Allocate an empty state for cfg (params/m/v zero), e.g. before loading. */
int tt_state_alloc(tt_train_state *s, const tt_model_config *cfg, tt_status *st);
void tt_state_free(tt_train_state *s);
int tt_state_push_loss(tt_train_state *s, float loss, tt_status *st);
int tt_state_push_val(tt_train_state *s, int64_t step, float loss, tt_status *st);

#endif
