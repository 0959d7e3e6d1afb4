/* train.c — training configuration (train.h: defaults, validation, the
 * learning-rate schedule) and the training loop (trainer.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "plot.h"
#include "trainer.h"

void tt_train_config_default(tt_train_config *tc, int64_t steps) {
    memset(tc, 0, sizeof *tc);
    tc->steps = steps;
    tc->lr = 1e-3f;
    tc->min_lr = tc->lr / 10.0f;
    tc->warmup = TT_MIN((int64_t)100, steps / 20);
    tc->sched = TT_SCHED_COSINE;
    tc->beta1 = 0.9f;
    tc->beta2 = 0.95f;
    tc->eps = 1e-8f;
    tc->weight_decay = 0.1f;
    tc->clip = 1.0f;
    tc->accum = 1;
    tc->seed = 1337;
    tc->eval_every = 100;
    tc->eval_batches = 8;
}

int tt_train_config_validate(const tt_train_config *tc, tt_status *st) {
    if (tc->steps < 1) return tt_fail(st, TT_EINVAL, "steps must be >= 1 (got %lld)", (long long)tc->steps);
    if (!isfinite(tc->lr) || tc->lr <= 0.0f) return tt_fail(st, TT_EINVAL, "learning rate must be a finite number > 0 (got %g)", tc->lr);
    if (tc->lr > 10.0f) return tt_fail(st, TT_EINVAL, "learning rate %g is too large (max 10)", tc->lr);
    if (!isfinite(tc->min_lr) || tc->min_lr < 0.0f || tc->min_lr > tc->lr)
        return tt_fail(st, TT_EINVAL, "min learning rate must be finite and in [0, lr = %g] (got %g)", tc->lr, tc->min_lr);
    if (tc->warmup < 0) return tt_fail(st, TT_EINVAL, "warmup must be >= 0 (got %lld)", (long long)tc->warmup);
    if (tc->warmup > tc->steps)
        return tt_fail(st, TT_EINVAL, "warmup (%lld) must not exceed steps (%lld)", (long long)tc->warmup, (long long)tc->steps);
    if (tc->sched != TT_SCHED_COSINE && tc->sched != TT_SCHED_CONSTANT) return tt_fail(st, TT_EINVAL, "unknown LR schedule %d", (int)tc->sched);
    if (!(tc->beta1 >= 0.0f && tc->beta1 < 1.0f)) return tt_fail(st, TT_EINVAL, "beta1 must be in [0, 1) (got %g)", tc->beta1);
    if (!(tc->beta2 >= 0.0f && tc->beta2 < 1.0f)) return tt_fail(st, TT_EINVAL, "beta2 must be in [0, 1) (got %g)", tc->beta2);
    if (!isfinite(tc->eps) || tc->eps <= 0.0f) return tt_fail(st, TT_EINVAL, "AdamW eps must be finite and > 0 (got %g)", tc->eps);
    if (!isfinite(tc->weight_decay) || tc->weight_decay < 0.0f)
        return tt_fail(st, TT_EINVAL, "weight decay must be finite and >= 0 (got %g)", tc->weight_decay);
    if (!isfinite(tc->clip)) return tt_fail(st, TT_EINVAL, "clip must be finite (<= 0 disables it; got %g)", tc->clip);
    if (tc->accum < 1 || tc->accum > 65536) return tt_fail(st, TT_EINVAL, "accum must be in 1..65536 (got %d)", tc->accum);
    if (tc->eval_every < 0) return tt_fail(st, TT_EINVAL, "eval-every must be >= 0 (got %lld)", (long long)tc->eval_every);
    if (tc->eval_batches < 1 || tc->eval_batches > 1000000)
        return tt_fail(st, TT_EINVAL, "eval-batches must be in 1..1000000 (got %d)", tc->eval_batches);
    return TT_OK;
}

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

int tt_evaluate(tt_backend *be, const tt_corpus *c, int n_batches, uint8_t *tokens, float *loss, tt_status *st) {
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

/* host_step: the step whose weights s->params/m/v hold (-1: a download
 * failed half way, the host copy is not consistent) */
static int save_all(const tt_trainer *t, int64_t *host_step, tt_status *st) {
    tt_train_state *s = t->s;
    if (t->ckpt_path) {
        int rc = t->be->vt->get_state(t->be, s->params, s->m, s->v, st);
        if (rc) {
            *host_step = -1;
            return rc;
        }
        *host_step = s->step;
        TT_CHECK(tt_checkpoint_save(t->ckpt_path, s, st));
    }
    return tt_write_curves(s, t->csv_path, t->svg_path, st);
}

/* After a device error (TT_EDEVICE) in the middle of a run: save the last
 * good state, then report the error and what was saved in one line.
 *   - the device can still be read (the failed step never reached it): its
 *     state is that of the last step handed to it (`submitted`, 0-based);
 *     the loss of that step is fetched if the loop had not read it yet;
 *   - the device is gone: the host copy from the last download (the start
 *     of the run or the last periodic save, step host_step) is saved and the
 *     history is cut back to it; the steps after it are lost and say so.
 * st holds the device error on entry and the combined message on return. */
static int rescue(const tt_trainer *t, int64_t submitted, int64_t host_step, tt_status *st) {
    tt_train_state *s = t->s;
    tt_backend *be = t->be;
    char why[300];
    snprintf(why, sizeof why, "%.280s", st && st->msg[0] ? st->msg : "device error");
    /* steps completed or handed to the device since the last download */
    const int64_t done = submitted + 1 > s->step ? submitted + 1 : s->step;
    const size_t P = s->layout.total;
    tt_status st2;
    tt_status_clear(&st2);
    int from_device = 0;
    float *buf = malloc(3 * P * sizeof *buf);
    if (buf && be->vt->get_state(be, buf, buf + P, buf + 2 * P, &st2) == TT_OK) {
        if (submitted == s->step) { /* pipelined: the last submitted step's loss is not recorded yet */
            float l = NAN, gn = NAN;
            if (be->vt->step_result(be, &l, &gn, &st2) == TT_OK && isfinite(l)) {
                s->step++; /* push_loss records at index step - 1 */
                if (tt_state_push_loss(s, l, &st2) != TT_OK) s->step--;
            }
        }
        if (submitted + 1 == s->step) {
            memcpy(s->params, buf, P * sizeof *buf);
            memcpy(s->m, buf + P, P * sizeof *buf);
            memcpy(s->v, buf + 2 * P, P * sizeof *buf);
            from_device = 1;
        }
    }
    free(buf);
    if (!from_device) {
        if (host_step < 0)
            return tt_fail(st, TT_EDEVICE, "%s; no consistent state could be saved (the device failed while its state "
                           "was being read)", why);
        s->step = host_step;
        while (s->n_val > 0 && s->val_step[s->n_val - 1] > host_step) s->n_val--;
        s->best_val = INFINITY;
        s->best_val_step = -1;
        for (int64_t i = 0; i < s->n_val; i++)
            if (s->val_loss[i] < s->best_val) s->best_val = s->val_loss[i], s->best_val_step = s->val_step[i];
    }
    if (tt_checkpoint_save(t->ckpt_path, s, &st2) != TT_OK)
        return tt_fail(st, TT_EDEVICE, "%s; saving the checkpoint failed too: %.200s", why, st2.msg);
    tt_write_curves(s, t->csv_path, t->svg_path, &st2); /* best effort: the checkpoint is what matters */
    if (from_device)
        return tt_fail(st, TT_EDEVICE, "%s; saved the last completed step %lld (read back from the device) to %s", why,
                       (long long)s->step, t->ckpt_path);
    char lost[64] = "";
    if (done > s->step) snprintf(lost, sizeof lost, "; steps %lld..%lld are lost", (long long)s->step + 1, (long long)done);
    return tt_fail(st, TT_EDEVICE, "%s; the device could not be read back, so %s holds step %lld, the last state "
                   "downloaded before the fault%s", why, t->ckpt_path, (long long)s->step, lost);
}

static int same_cfg(const tt_model_config *a, const tt_model_config *b) {
    return a->n_layer == b->n_layer && a->d_model == b->d_model && a->n_head == b->n_head && a->ctx == b->ctx &&
           a->batch == b->batch && a->vocab == b->vocab;
}

void tt_step_tokens(const tt_corpus *c, const tt_train_config *tc, int64_t step, int B, int T, uint8_t *out) {
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
    return opt;
}

static int submit_step(tt_backend *be, const tt_train_config *tc, int64_t k, const uint8_t *tokens, tt_status *st) {
    tt_optim_args opt = tt_optim_args_at(tc, k);
    return be->vt->step(be, tokens, tc->accum, &opt, st);
}

int tt_train_run(const tt_trainer *t, int *stopped, tt_status *st) {
    tt_train_state *s = t->s;
    tt_backend *be = t->be;
    const tt_train_config *tc = &s->tc;
    const int B = s->cfg.batch, T = s->cfg.ctx;
    if (stopped) *stopped = 0;
    TT_CHECK(tt_train_config_validate(tc, st));
    if (!same_cfg(&be->cfg, &s->cfg)) return tt_fail(st, TT_EMISMATCH, "backend and training state have different model configs");
    if (t->corpus->n_train < (size_t)T + 1 || t->corpus->n - t->corpus->n_train < (size_t)T + 1)
        return tt_fail(st, TT_EINVAL, "corpus too short for ctx %d", T);

    size_t micro = (size_t)B * (size_t)(T + 1), per_step = micro * (size_t)tc->accum;
    uint8_t *buf = tt_alloc(2 * per_step + micro, st);
    if (!buf) return st ? st->code : TT_ENOMEM;
    uint8_t *bufs[2] = {buf, buf + per_step}, *valbuf = buf + 2 * per_step;
    int rc = TT_OK, stop = 0;

    s->corpus_hash = t->corpus->hash;
    s->corpus_bytes = t->corpus->n;
    rc = be->vt->set_state(be, s->params, s->m, s->v, st);
    int64_t host_step = s->step; /* s->params/m/v are the weights after this step */

    tt_progress p;
    memset(&p, 0, sizeof p);
    p.steps = tc->steps;
    p.step = s->step;
    p.loss = s->step > 0 && s->loss_hist ? s->loss_hist[s->step - 1] : NAN;
    p.grad_norm = NAN;
    p.lr = NAN;
    p.val_loss = s->n_val > 0 ? s->val_loss[s->n_val - 1] : NAN;
    p.best_val = s->best_val;
    p.best_val_step = s->best_val_step;
    p.eta_s = NAN;
    p.tokens_per_step = (int64_t)B * T * tc->accum;
    if (!rc && t->progress) {
        p.event = TT_EV_START;
        if (t->progress(t->user, &p)) stop = 1;
    }

    /* Pipelining (backends with step_result_prev, i.e. the GPU): step k+1 is
     * submitted before the loss of step k is read, so the device never waits
     * for the host. Never across a point that needs the weights after step k
     * (the last step, an eval, a save): there the loop waits as before. A
     * stop (callback or flag) seen while step k+1 is in flight lets k+1
     * finish and be recorded, then stops: the state stays consistent and
     * resumable. Losses, weights and checkpoints are those of the
     * synchronous loop. TT_TRAIN_PIPELINE=0 turns it off. */
    int pipe = be->vt->step_result_prev != NULL;
    {
        const char *e = getenv("TT_TRAIN_PIPELINE");
        if (e && atoi(e) == 0) pipe = 0;
    }
    const int64_t first = s->step;
    int64_t submitted = first - 1; /* last step handed to the backend */
    double t_start = tt_now(), step_time = 0.0, first_step_time = 0.0, t_prev = t_start;
    if (!rc && first < tc->steps) tt_step_tokens(t->corpus, tc, first, B, T, bufs[first & 1]);
    for (int64_t k = first; !rc && k < tc->steps; k++) {
        if (stop && submitted < k) break;
        double t0 = tt_now();
        float lr_k = tt_lr_at(tc, k);
        if (submitted < k) {
            rc = submit_step(be, tc, k, bufs[k & 1], st);
            if (rc) break;
            submitted = k;
            /* the next batch is prepared while an asynchronous backend computes this step */
            if (k + 1 < tc->steps) tt_step_tokens(t->corpus, tc, k + 1, B, T, bufs[(k + 1) & 1]);
        } else {
            t0 = t_prev; /* submitted in the previous iteration: time from there */
        }
        int64_t after = k + 1;
        int boundary = after >= tc->steps || (tc->eval_every > 0 && after % tc->eval_every == 0) ||
                       (t->save_every > 0 && t->ckpt_path && after % t->save_every == 0) ||
                       (t->stop_at > 0 && after >= t->stop_at);
        float loss = NAN, gn = NAN;
        if (pipe && !stop && !boundary && !(t->stop_flag && *t->stop_flag)) {
            rc = submit_step(be, tc, k + 1, bufs[(k + 1) & 1], st);
            if (rc) break;
            submitted = k + 1;
            if (k + 2 < tc->steps) tt_step_tokens(t->corpus, tc, k + 2, B, T, bufs[(k + 2) & 1]);
            rc = be->vt->step_result_prev(be, &loss, &gn, st);
        } else {
            rc = be->vt->step_result(be, &loss, &gn, st);
        }
        if (rc) break;
        double now = tt_now(), dt = now - t0;
        t_prev = now;
        if (!isfinite(loss)) {
            rc = tt_fail(st, TT_EINVAL, "training diverged: loss is %s at step %lld (lr %g); try a lower --lr",
                         isnan(loss) ? "NaN" : "infinite", (long long)(k + 1), lr_k);
            break;
        }
        s->step = k + 1;
        rc = tt_state_push_loss(s, loss, st);
        if (rc) break;
        /* timing: the first step of a run (start-up, caches) is kept out of the rate */
        if (k == first) first_step_time = dt;
        else step_time += dt;
        int64_t done = k + 1 - first, measured = done - 1;
        double per = measured > 0 ? step_time / (double)measured : first_step_time;
        p.event = TT_EV_STEP;
        p.step = s->step;
        p.loss = loss;
        p.grad_norm = gn;
        p.lr = lr_k;
        p.elapsed_s = step_time + first_step_time;
        p.tok_per_s = per > 0 ? (double)p.tokens_per_step / per : 0.0;
        {
            /* ETA from wall time per step (includes evals and saves) */
            double wall = tt_now() - t_start;
            p.eta_s = (double)(tc->steps - s->step) * (done > 0 ? wall / (double)done : per);
        }
        if (t->progress && t->progress(t->user, &p)) stop = 1;
        if (t->stop_flag && *t->stop_flag) stop = 1;
        if (t->stop_at > 0 && s->step >= t->stop_at) stop = 1;

        int last = s->step == tc->steps;
        if ((!stop || last) && (last || (tc->eval_every > 0 && s->step % tc->eval_every == 0))) {
            float vl = NAN;
            rc = tt_evaluate(be, t->corpus, tc->eval_batches, valbuf, &vl, st);
            if (!rc) rc = tt_state_push_val(s, s->step, vl, st);
            if (rc) break;
            p.event = TT_EV_EVAL;
            p.val_loss = vl;
            p.best_val = s->best_val;
            p.best_val_step = s->best_val_step;
            if (t->progress && t->progress(t->user, &p)) stop = 1;
            if (!last && !stop && (t->csv_path || t->svg_path)) {
                rc = tt_write_curves(s, t->csv_path, t->svg_path, st);
                if (rc) break;
            }
        }
        if (!stop && !last && t->save_every > 0 && s->step % t->save_every == 0 && t->ckpt_path) {
            rc = save_all(t, &host_step, st);
            if (rc) break;
            p.event = TT_EV_SAVE;
            p.saved_path = t->ckpt_path;
            if (t->progress && t->progress(t->user, &p)) stop = 1;
        }
        if (t->stop_flag && *t->stop_flag) stop = 1;
    }

    /* final save (also after a stop); never after an error, so a diverged or
     * failed run does not overwrite the last good checkpoint */
    if (!rc && (t->ckpt_path || t->csv_path || t->svg_path)) {
        rc = save_all(t, &host_step, st);
        if (!rc && t->ckpt_path) {
            p.event = TT_EV_SAVE;
            p.saved_path = t->ckpt_path;
            if (t->progress) t->progress(t->user, &p);
        }
    } else if (!rc) {
        /* no files: still bring the trained weights back into the state */
        rc = be->vt->get_state(be, s->params, s->m, s->v, st);
    }
    /* a device error once training was under way: save the last good state
     * first (not for other errors: a diverged run keeps its last checkpoint) */
    if (rc == TT_EDEVICE && t->ckpt_path && submitted >= first) rc = rescue(t, submitted, host_step, st);
    if (!rc) {
        p.event = TT_EV_END;
        p.stopped = stop && s->step < tc->steps;
        if (t->progress) t->progress(t->user, &p);
        if (stopped) *stopped = p.stopped;
    }
    tt_free(buf);
    return rc;
}
