/* loop.c — the training loop (trainer.h): the learning-rate schedule, the
 * batches and optimizer arguments of a step, validation, the loop state
 * machine (tt_loop_*: pipelining and where it stops, eval cadence, best-val,
 * save points, stop-at, divergence, recovery after a device error) and
 * tt_train_run, the blocking driver that writes checkpoints and curves.
 * Config defaults and validation live with the option table (options.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/checkpoint.h"
#include "io/plot.h"
#include "trainer.h"

float tt_lr_at(const tt_train_config *tc, int64_t step) {
    double lr = tc->lr, lo = tc->min_lr;
    if (step < 0) step = 0;
    if (tc->warmup > 0 && step < tc->warmup) return (float)(lr * (double)(step + 1) / (double)tc->warmup);
    if (tc->sched == TT_SCHED_CONSTANT) return (float)lr;
    int64_t span = tc->steps - tc->warmup;
    if (span <= 1 || step >= tc->steps) return (float)(step >= tc->steps ? lo : lr);
    /* progress 0 at the first step after warmup, 1 at the last step */
    double p = (double)(step - tc->warmup) / (double)(span - 1);
    return (float)(lo + 0.5 * (lr - lo) * (1.0 + cos(3.14159265358979323846 * p)));
}

float tt_default_lr(const tt_model_config *cfg) {
    double lr = 5e-3;
    if (cfg->d_model > 128) lr *= 128.0 / (double)cfg->d_model;
    return (float)lr;
}

/* ---------------- the loop ---------------- */

int tt_evaluate(tt_backend *be, const tt_corpus *c, int n_batches, tt_token *tokens, float *loss, tt_status *st) {
    int B = be->cfg.batch, T = be->cfg.ctx;
    double sum = 0.0;
    for (int k = 0; k < n_batches; k++) {
        tt_batch_val(c, k, B, T, tokens);
        float l = NAN;
        TT_CHECK(be->vt->eval(be, tokens, B, &l, st));
        sum += l;
    }
    *loss = (float)(sum / n_batches);
    return TT_OK;
}

int tt_write_curves(const tt_train_state *s, const char *csv_path, const char *svg_path, tt_status *st) {
    char title[160];
    snprintf(title, sizeof title, "tinytrain: %d layers, d_model %d, ctx %d, %lld params", s->cfg.n_layer, s->cfg.d_model,
             s->cfg.ctx, (long long)tt_config_param_count(&s->cfg));
    tt_curve c = {s->loss_hist, s->step, s->val_step, s->val_loss, s->n_val, title};
    if (csv_path) TT_CHECK(tt_plot_csv(csv_path, &c, st));
    if (svg_path) TT_CHECK(tt_plot_svg(svg_path, &c, st));
    return TT_OK;
}

static int same_cfg(const tt_model_config *a, const tt_model_config *b) {
    return a->n_layer == b->n_layer && a->d_model == b->d_model && a->n_head == b->n_head && a->ctx == b->ctx &&
           a->batch == b->batch && a->vocab == b->vocab && a->act == b->act &&
           tt_config_ln_eps(a) == tt_config_ln_eps(b);
}

void tt_step_tokens(const tt_corpus *c, const tt_train_config *tc, int64_t step, int B, int T, tt_token *out) {
    size_t micro = (size_t)B * (size_t)(T + 1);
    for (int i = 0; i < tc->accum; i++)
        tt_batch_train(c, tc->seed, (step * tc->accum + i) * B, B, T, out + (size_t)i * micro);
}

tt_optim_args tt_optim_args_at(const tt_train_config *tc, int64_t step) {
    tt_optim_args opt;
    opt.lr = tt_lr_at(tc, step);
    opt.beta1 = tc->beta1;
    opt.beta2 = tc->beta2;
    opt.eps = tc->eps;
    opt.weight_decay = tc->weight_decay;
    opt.clip = tc->clip;
    opt.bc1 = (float)(1.0 - pow((double)tc->beta1, (double)(step + 1)));
    opt.bc2 = (float)(1.0 - pow((double)tc->beta2, (double)(step + 1)));
    opt.dropout = tc->dropout;
    opt.seed = tc->seed;
    opt.step = step;
    return opt;
}

/* ---------------- the loop state machine ---------------- */

/* What the next advance does. */
typedef enum {
    A_START,   /* upload the state, report START */
    A_STEP,    /* submit (and pipeline) the next step, read and record one step */
    A_EVAL,    /* the step just recorded: validation if due */
    A_SAVE,    /* the step just recorded: a save point if due */
    A_HELD,    /* drained on a hold: save if asked, then HOLD */
    A_FINISH,  /* download the state, report the final SAVE */
    A_END,     /* report END (repeatedly) */
    A_FAILED   /* an error ended the loop: repeat it */
} loop_action;

struct tt_loop {
    tt_trainer t;
    loop_action next;
    int stop;            /* tt_loop_stop, the progress callback, stop_flag or stop_at */
    int hold;            /* TT_HOLD_* */
    int pipe;            /* the backend can overlap steps and the trainer allows it */
    int64_t first;       /* s->step when the run started */
    int64_t submitted;   /* last step handed to the backend */
    int64_t host_step;   /* the step whose state s->params/m/v hold (-1: inconsistent) */
    int64_t tok_step[2]; /* the step whose tokens each slot holds (-1: none) */
    float lr_q[2];       /* lr of the step in each slot */
    int64_t n_pipelined;
    int64_t saved_step;  /* the step of the last save point */
    double t_last_save;
    double t_start, t_prev, step_time, first_step_time;
    tt_progress p;
    tt_status err;       /* A_FAILED: the error */
    tt_token *buf;       /* two token slots of a step + one validation batch */
    size_t per_step;
    const tt_loss_scaler *ls; /* precision f16: the backend's loss scaler */
};

int tt_loop_create(const tt_trainer *t, tt_loop **out, tt_status *st) {
    *out = NULL;
    tt_train_state *s = t->s;
    const tt_train_config *tc = &s->tc;
    TT_CHECK(tt_train_config_validate(tc, st));
    if (!same_cfg(&t->be->cfg, &s->cfg)) return tt_fail(st, TT_EMISMATCH, "backend and training state have different model configs");
    TT_CHECK(tt_dropout_check(&s->cfg, tc->dropout, st));
    TT_CHECK(tt_corpus_check(t->corpus, s->cfg.ctx, st));
    tt_loop *L = tt_calloc(sizeof *L, st);
    if (!L) return st ? st->code : TT_ENOMEM;
    const int B = s->cfg.batch, T = s->cfg.ctx;
    size_t micro = (size_t)B * (size_t)(T + 1);
    L->per_step = micro * (size_t)tc->accum;
    L->buf = tt_alloc((2 * L->per_step + micro) * sizeof *L->buf, st);
    if (!L->buf) {
        tt_free(L);
        return st ? st->code : TT_ENOMEM;
    }
    L->t = *t;
    if (tc->precision == TT_PRECISION_F16) {
        L->ls = t->be->vt->get_proc ? t->be->vt->get_proc(t->be, "loss_scaler") : NULL;
        if (!L->ls) {
            tt_free(L->buf);
            tt_free(L);
            return tt_fail(st, TT_EUNSUP, "--precision f16: the %s backend has no f16 tier (use --precision f32)",
                           t->be->desc.name ? t->be->desc.name : "chosen");
        }
    }
    L->next = A_START;
    L->pipe = t->be->vt->step_result_prev != NULL && !t->no_pipeline;
    L->tok_step[0] = L->tok_step[1] = -1;
    L->first = s->step;
    L->submitted = s->step - 1;
    L->host_step = L->saved_step = s->step;
    if (t->target_val > 0 && s->target_val != (float)t->target_val) s->target_step = 0, s->target_s = 0;
    *out = L;
    return TT_OK;
}

void tt_loop_destroy(tt_loop *L) {
    if (!L) return;
    tt_free(L->buf);
    tt_free(L);
}

void tt_loop_stop(tt_loop *L) { L->stop = 1; }
void tt_loop_hold(tt_loop *L, int mode) { L->hold = mode; }
int tt_loop_in_flight(const tt_loop *L) {
    int64_t n = L->submitted + 1 - L->t.s->step;
    return n > 0 ? (int)n : 0;
}
int64_t tt_loop_pipelined(const tt_loop *L) { return L->n_pipelined; }

int tt_loop_set_steps(tt_loop *L, int64_t steps, tt_status *st) {
    tt_train_state *s = L->t.s;
    int64_t done = s->step + tt_loop_in_flight(L);
    if (L->next == A_FAILED) return tt_fail(st, TT_EINVAL, "the run ended with an error: %s", L->err.msg);
    if (steps < done || steps < 1) return tt_fail(st, TT_EINVAL, "steps must be at least the steps done (%lld)", (long long)done);
    tt_train_config tc = s->tc;
    tc.steps = steps;
    TT_CHECK(tt_train_config_validate(&tc, st));
    s->tc.steps = steps;
    L->p.steps = steps;
    if (L->next == A_END && steps > s->step) {
        L->next = A_STEP;
        L->stop = 0;
    }
    return TT_OK;
}

static tt_token *tokens_of(tt_loop *L, int64_t k) {
    tt_token *slot = L->buf + (size_t)(k & 1) * L->per_step;
    if (L->tok_step[k & 1] != k) {
        tt_train_state *s = L->t.s;
        tt_step_tokens(L->t.corpus, &s->tc, k, s->cfg.batch, s->cfg.ctx, slot);
        L->tok_step[k & 1] = k;
    }
    return slot;
}

/* Hands step k to the backend and prepares the batch of step k+1 while an
 * asynchronous backend computes (backends copy the tokens at submission). */
static int submit(tt_loop *L, int64_t k, tt_status *st) {
    const tt_train_config *tc = &L->t.s->tc;
    tt_optim_args opt = tt_optim_args_at(tc, k);
    TT_CHECK(L->t.be->vt->step(L->t.be, tokens_of(L, k), tc->accum, &opt, st));
    L->submitted = k;
    L->lr_q[k & 1] = opt.lr;
    if (k + 1 < tc->steps) tokens_of(L, k + 1);
    return TT_OK;
}

static int stop_asked(const tt_loop *L) { return L->stop || (L->t.stop_flag && *L->t.stop_flag); }

static int save_time_due(const tt_loop *L) {
    return L->t.save_seconds > 0 && tt_now() - L->t_last_save >= L->t.save_seconds;
}

/* A step after which the weights are needed: it must not be overlapped. */
static int boundary(const tt_loop *L, int64_t after) {
    const tt_train_config *tc = &L->t.s->tc;
    return after >= tc->steps || (tc->eval_every > 0 && after % tc->eval_every == 0) ||
           (L->t.save_every > 0 && after % L->t.save_every == 0) || (L->t.stop_at > 0 && after >= L->t.stop_at) ||
           save_time_due(L);
}

static int download(tt_loop *L, tt_status *st) {
    tt_train_state *s = L->t.s;
    int rc = L->t.be->vt->get_state(L->t.be, s->params, s->m, s->v, st);
    if (!rc && L->ls) rc = L->ls->get(L->t.be, &s->loss_scale, &s->scale_good, &s->scale_skipped, st);
    L->host_step = rc ? -1 : s->step;
    return rc;
}

int tt_loop_sync(tt_loop *L, tt_status *st) {
    if (L->next == A_FAILED) return tt_fail(st, TT_EINVAL, "the run ended with an error: %s", L->err.msg);
    if (tt_loop_in_flight(L) > 0) return tt_fail(st, TT_EINVAL, "a step is in flight (hold the loop first)");
    if (L->next == A_START || L->host_step == L->t.s->step) return TT_OK;
    return download(L, st);
}

static void save_point(tt_loop *L, int final) {
    L->saved_step = L->t.s->step;
    L->t_last_save = tt_now();
    L->p.event = TT_EV_SAVE;
    L->p.final = final;
    L->p.saved_path = NULL;
}

/* Reads and records one step (submitting it first, and the next one when it
 * may overlap). */
static int do_step(tt_loop *L, tt_status *st) {
    tt_train_state *s = L->t.s;
    tt_backend *be = L->t.be;
    const tt_train_config *tc = &s->tc;
    const int64_t k = s->step;
    double t0 = tt_now();
    if (L->submitted < k) TT_CHECK(submit(L, k, st));
    else t0 = L->t_prev; /* submitted while the previous step was read: time from there */
    float lr_k = L->lr_q[k & 1];
    float loss = NAN, gn = NAN;
    if (L->pipe && !stop_asked(L) && !L->hold && !boundary(L, k + 1)) {
        TT_CHECK(submit(L, k + 1, st));
        TT_CHECK(be->vt->step_result_prev(be, &loss, &gn, st));
        L->n_pipelined++;
    } else {
        TT_CHECK(be->vt->step_result(be, &loss, &gn, st));
    }
    double now = tt_now(), dt = now - t0;
    L->t_prev = now;
    if (!isfinite(loss))
        return tt_fail(st, TT_EINVAL, "training diverged: loss is %s at step %lld (lr %g); try a lower learning rate",
                       isnan(loss) ? "NaN" : "infinite", (long long)(k + 1), lr_k);
    s->step = k + 1;
    TT_CHECK(tt_state_push_loss(s, loss, st));
    /* timing: the first step of a run (start-up, caches) is kept out of the rate */
    if (k == L->first) L->first_step_time = dt;
    else L->step_time += dt;
    int64_t done = k + 1 - L->first, measured = done - 1;
    double per = measured > 0 ? L->step_time / (double)measured : L->first_step_time;
    tt_progress *p = &L->p;
    p->event = TT_EV_STEP;
    p->step = s->step;
    p->loss = loss;
    p->grad_norm = gn;
    if (L->ls) L->ls->last(be, &p->loss_scale, &p->scale_good, &p->scale_skipped);
    p->lr = lr_k;
    p->elapsed_s = L->step_time + L->first_step_time;
    p->tok_per_s = per > 0 ? (double)p->tokens_per_step / per : 0.0;
    /* ETA from wall time per step (includes evals and saves) */
    double wall = tt_now() - L->t_start;
    p->eta_s = (double)(tc->steps - s->step) * (done > 0 ? wall / (double)done : per);
    if (L->t.stop_at > 0 && s->step >= L->t.stop_at) L->stop = 1;
    return TT_OK;
}

static int advance(tt_loop *L, tt_status *st) {
    tt_train_state *s = L->t.s;
    tt_backend *be = L->t.be;
    const tt_train_config *tc = &s->tc;
    tt_progress *p = &L->p;
    for (;;) {
        switch (L->next) {
        case A_START:
            s->corpus_hash = L->t.corpus->hash;
            s->corpus_bytes = L->t.corpus->n;
            s->tok_per_byte = tt_corpus_tok_per_byte(L->t.corpus);
            TT_CHECK(be->vt->set_state(be, s->params, s->m, s->v, st));
            if (L->ls) TT_CHECK(L->ls->set(be, s->loss_scale, s->scale_good, s->scale_skipped, st));
            L->t_start = L->t_prev = L->t_last_save = tt_now();
            memset(p, 0, sizeof *p);
            p->event = TT_EV_START;
            p->steps = tc->steps;
            p->step = s->step;
            p->loss = s->step > 0 && s->loss_hist ? s->loss_hist[s->step - 1] : NAN;
            p->grad_norm = NAN;
            p->loss_scale = L->ls ? s->loss_scale : 0.0f;
            p->scale_good = L->ls ? s->scale_good : 0;
            p->scale_skipped = L->ls ? s->scale_skipped : 0;
            p->lr = NAN;
            p->val_loss = s->n_val > 0 ? s->val_loss[s->n_val - 1] : NAN;
            p->best_val = s->best_val;
            p->best_val_step = s->best_val_step;
            p->eta_s = NAN;
            p->tokens_per_step = (int64_t)s->cfg.batch * s->cfg.ctx * tc->accum;
            L->next = A_STEP;
            return TT_OK;
        case A_STEP: {
            int in_flight = L->submitted >= s->step;
            if (s->step >= tc->steps || (stop_asked(L) && !in_flight)) {
                L->stop |= stop_asked(L);
                L->next = A_FINISH;
                continue;
            }
            if (L->hold && !in_flight) {
                L->next = A_HELD;
                continue;
            }
            TT_CHECK(do_step(L, st));
            L->next = A_EVAL;
            return TT_OK;
        }
        case A_EVAL: {
            /* a stop asked after the step (callback, flag) skips its eval, except at the last step and at
             * stop_at (a planned stop: the run resumed from there makes no eval of that step, an
             * uninterrupted one does) */
            int last = s->step == tc->steps, planned = L->t.stop_at > 0 && s->step == L->t.stop_at;
            L->next = A_SAVE;
            if ((!stop_asked(L) || last || planned) && (last || (tc->eval_every > 0 && s->step % tc->eval_every == 0))) {
                float vl = NAN;
                tt_token *valbuf = L->buf + 2 * L->per_step;
                TT_CHECK(tt_evaluate(be, L->t.corpus, tc->eval_batches, valbuf, &vl, st));
                TT_CHECK(tt_state_push_val(s, s->step, vl, st));
                p->event = TT_EV_EVAL;
                p->val_loss = vl;
                p->best_val = s->best_val;
                p->best_val_step = s->best_val_step;
                if (L->t.target_val > 0 && s->target_step == 0 && vl <= L->t.target_val) {
                    s->target_val = (float)L->t.target_val;
                    s->target_step = s->step;
                    s->target_s = tt_now() - L->t_start;
                    p->target_hit = 1;
                    if (L->t.stop_at_target) L->stop = 1;
                }
                return TT_OK;
            }
            continue;
        }
        case A_SAVE: {
            int last = s->step == tc->steps;
            L->next = A_STEP;
            if (stop_asked(L) || last) continue;
            int due = (L->t.save_every > 0 && s->step % L->t.save_every == 0) ||
                      (save_time_due(L) && L->submitted < s->step);
            if (!due) continue;
            TT_CHECK(download(L, st));
            save_point(L, 0);
            return TT_OK;
        }
        case A_HELD:
            if (L->hold == TT_HOLD_SAVE && L->saved_step != s->step) {
                TT_CHECK(download(L, st));
                save_point(L, 0);
                return TT_OK;
            }
            if (!L->hold) {
                L->next = A_STEP;
                continue;
            }
            p->event = TT_EV_HOLD;
            p->step = s->step;
            p->steps = tc->steps;
            return TT_OK;
        case A_FINISH:
            /* the state comes back into s; never after an error, so a
             * diverged or failed run does not overwrite the last good save */
            TT_CHECK(download(L, st));
            save_point(L, 1);
            L->next = A_END;
            return TT_OK;
        case A_END:
            p->event = TT_EV_END;
            p->step = s->step;
            p->steps = tc->steps;
            p->stopped = L->stop && s->step < tc->steps;
            return TT_OK;
        case A_FAILED:
            if (st) *st = L->err;
            return L->err.code ? L->err.code : TT_EINVAL;
        }
    }
}

int tt_loop_advance(tt_loop *L, tt_progress *p, tt_status *st) {
    tt_status local;
    tt_status_clear(&local);
    if (!st) st = &local;
    /* an event keeps the last step's numbers; the event fields are per event */
    L->p.saved_path = NULL;
    L->p.final = 0;
    L->p.target_hit = 0;
    int rc = advance(L, st);
    if (rc && L->next != A_FAILED) {
        L->err = *st;
        if (!L->err.code) L->err.code = rc;
        L->next = A_FAILED;
    }
    if (!rc && p) *p = L->p;
    return rc;
}

int tt_loop_recover(tt_loop *L, int *from_device, int64_t *lost_from, int64_t *lost_to) {
    tt_train_state *s = L->t.s;
    tt_backend *be = L->t.be;
    const int64_t submitted = L->submitted;
    /* steps completed or handed to the device since the last download */
    const int64_t done = submitted + 1 > s->step ? submitted + 1 : s->step;
    const size_t P = s->layout.total, PT = tt_layout_train_count(&s->layout);
    tt_status st2;
    tt_status_clear(&st2);
    *from_device = 0;
    float *buf = malloc((P + 2 * PT) * sizeof *buf);
    if (buf && be->vt->get_state(be, buf, buf + P, buf + P + PT, &st2) == TT_OK) {
        if (submitted == s->step) { /* pipelined: the last submitted step's loss is not recorded yet */
            float l = NAN, gn = NAN;
            if (be->vt->step_result(be, &l, &gn, &st2) == TT_OK && isfinite(l)) {
                s->step++; /* push_loss records at index step - 1 */
                if (tt_state_push_loss(s, l, &st2) != TT_OK) s->step--;
            }
        }
        float ls = s->loss_scale;
        int64_t lg = s->scale_good, lk = s->scale_skipped;
        if (submitted + 1 == s->step && (!L->ls || L->ls->get(be, &ls, &lg, &lk, &st2) == TT_OK)) {
            s->loss_scale = ls;
            s->scale_good = lg;
            s->scale_skipped = lk;
            memcpy(s->params, buf, P * sizeof *buf);
            memcpy(s->m, buf + P, PT * sizeof *buf);
            memcpy(s->v, buf + P + PT, PT * sizeof *buf);
            *from_device = 1;
        }
    }
    free(buf);
    if (!*from_device) {
        if (L->host_step < 0) return TT_EDEVICE;
        s->step = L->host_step;
        while (s->n_val > 0 && s->val_step[s->n_val - 1] > L->host_step) s->n_val--;
        s->best_val = INFINITY;
        s->best_val_step = -1;
        for (int64_t i = 0; i < s->n_val; i++)
            if (s->val_loss[i] < s->best_val) s->best_val = s->val_loss[i], s->best_val_step = s->val_step[i];
    }
    *lost_from = s->step + 1;
    *lost_to = done;
    return TT_OK;
}

/* ---------------- the CLI's blocking driver ---------------- */

static int write_files(const tt_trainer *t, tt_status *st) {
    if (t->ckpt_path) TT_CHECK(tt_checkpoint_save(t->ckpt_path, t->s, st));
    return tt_write_curves(t->s, t->csv_path, t->svg_path, st);
}

/* After a device error (st holds it) in the middle of a run: save the last
 * good state, then report the error and what was saved in one line. */
static int rescue(const tt_trainer *t, tt_loop *L, tt_status *st) {
    char why[300];
    snprintf(why, sizeof why, "%.280s", st && st->msg[0] ? st->msg : "device error");
    int from_device = 0;
    int64_t lost_from = 0, lost_to = -1;
    if (tt_loop_recover(L, &from_device, &lost_from, &lost_to) != TT_OK)
        return tt_fail(st, TT_EDEVICE, "%s; no consistent state could be saved (the device failed while its state "
                       "was being read)", why);
    tt_train_state *s = t->s;
    tt_status st2;
    tt_status_clear(&st2);
    if (tt_checkpoint_save(t->ckpt_path, s, &st2) != TT_OK)
        return tt_fail(st, TT_EDEVICE, "%s; saving the checkpoint failed too: %.200s", why, st2.msg);
    tt_write_curves(s, t->csv_path, t->svg_path, &st2); /* best effort: the checkpoint is what matters */
    if (from_device)
        return tt_fail(st, TT_EDEVICE, "%s; saved the last completed step %lld (read back from the device) to %s", why,
                       (long long)s->step, t->ckpt_path);
    char lost[64] = "";
    if (lost_to >= lost_from) snprintf(lost, sizeof lost, "; steps %lld..%lld are lost", (long long)lost_from, (long long)lost_to);
    return tt_fail(st, TT_EDEVICE, "%s; the device could not be read back, so %s holds step %lld, the last state "
                   "downloaded before the fault%s", why, t->ckpt_path, (long long)s->step, lost);
}

int tt_train_run(const tt_trainer *t, int *stopped, tt_status *st) {
    if (stopped) *stopped = 0;
    tt_trainer lt = *t;
    if (!t->ckpt_path) lt.save_every = 0, lt.save_seconds = 0; /* periodic saves write the checkpoint */
    tt_loop *L = NULL;
    TT_CHECK(tt_loop_create(&lt, &L, st));
    const int files = t->ckpt_path || t->csv_path || t->svg_path;
    tt_progress p;
    int rc;
    int64_t first = t->s->step;
    for (;;) {
        rc = tt_loop_advance(L, &p, st);
        if (rc) break;
        int ask = 0;
        if (p.event == TT_EV_SAVE) {
            if (!files) continue;
            rc = write_files(t, st);
            if (rc) break;
            if (!t->ckpt_path) continue;
            p.saved_path = t->ckpt_path;
            ask = t->progress && t->progress(t->user, &p);
            if (!p.final && ask) tt_loop_stop(L);
            continue;
        }
        if (t->progress) ask = t->progress(t->user, &p);
        if (p.event == TT_EV_END) {
            if (stopped) *stopped = p.stopped;
            break;
        }
        if (ask) tt_loop_stop(L);
        if (p.event == TT_EV_EVAL && p.step < p.steps && !stop_asked(L) && (t->csv_path || t->svg_path)) {
            rc = tt_write_curves(t->s, t->csv_path, t->svg_path, st);
            if (rc) break;
        }
    }
    /* a device error once training was under way: save the last good state
     * first (not for other errors: a diverged run keeps its last checkpoint) */
    if (rc == TT_EDEVICE && t->ckpt_path && (tt_loop_in_flight(L) > 0 || t->s->step > first)) rc = rescue(t, L, st);
    tt_loop_destroy(L);
    return rc;
}
