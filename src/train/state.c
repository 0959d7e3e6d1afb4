/* state.c — the training state (train.h): allocation, fresh init, history. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "train.h"

int tt_state_alloc(tt_train_state *s, const tt_model_config *cfg, tt_status *st) {
    memset(s, 0, sizeof *s);
    s->cfg = *cfg;
    s->best_val = INFINITY;
    s->best_val_step = -1;
    s->loss_scale = TT_LOSS_SCALE_INIT;
    TT_CHECK(tt_layout_build(cfg, &s->layout, st));
    size_t mbytes = tt_layout_train_count(&s->layout) * sizeof(float);
    s->params = tt_calloc(s->layout.total * sizeof(float), st);
    s->m = s->params ? tt_calloc(mbytes, st) : NULL;
    s->v = s->m ? tt_calloc(mbytes, st) : NULL;
    if (!s->v) {
        tt_state_free(s);
        return st ? st->code : TT_ENOMEM;
    }
    return TT_OK;
}

int tt_state_init(tt_train_state *s, const tt_model_config *cfg, const tt_train_config *tc, tt_status *st) {
    TT_CHECK(tt_train_config_validate(tc, st));
    TT_CHECK(tt_state_alloc(s, cfg, st));
    s->tc = *tc;
    tt_model_init_params(cfg, &s->layout, tc->seed, s->params, NULL);
    return TT_OK;
}

void tt_state_free(tt_train_state *s) {
    tt_free(s->params);
    tt_free(s->m);
    tt_free(s->v);
    free(s->loss_hist);
    free(s->val_step);
    free(s->val_loss);
    tt_layout_free(&s->layout);
    memset(s, 0, sizeof *s);
    s->best_val = INFINITY;
    s->best_val_step = -1;
    s->loss_scale = TT_LOSS_SCALE_INIT;
}

int tt_state_push_loss(tt_train_state *s, float loss, tt_status *st) {
    /* called after s->step advanced: stores the loss of step s->step at index s->step - 1 */
    if (s->step < 1) return tt_fail(st, TT_EINVAL, "loss history: no step completed");
    if (s->step > s->loss_cap) {
        int64_t cap = s->loss_cap ? s->loss_cap : 1024;
        while (cap < s->step) cap *= 2;
        float *p = realloc(s->loss_hist, (size_t)cap * sizeof *p);
        if (!p) return tt_fail(st, TT_ENOMEM, "out of memory (loss history)");
        s->loss_hist = p;
        s->loss_cap = cap;
    }
    s->loss_hist[s->step - 1] = loss;
    return TT_OK;
}

int tt_state_push_val(tt_train_state *s, int64_t step, float loss, tt_status *st) {
    if (s->n_val == s->val_cap) {
        int64_t cap = s->val_cap ? s->val_cap * 2 : 64;
        int64_t *a = realloc(s->val_step, (size_t)cap * sizeof *a);
        if (!a) return tt_fail(st, TT_ENOMEM, "out of memory (val history)");
        s->val_step = a;
        float *b = realloc(s->val_loss, (size_t)cap * sizeof *b);
        if (!b) return tt_fail(st, TT_ENOMEM, "out of memory (val history)");
        s->val_loss = b;
        s->val_cap = cap;
    }
    s->val_step[s->n_val] = step;
    s->val_loss[s->n_val] = loss;
    s->n_val++;
    if (loss < s->best_val) {
        s->best_val = loss;
        s->best_val_step = step;
    }
    return TT_OK;
}
