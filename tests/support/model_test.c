/* model_test.c — helpers of the whole-model tests (model_test.h). */
#include "model_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cpu/backend_cpu.h"
#include "model.h"
#include "rng.h"
#include "tt_test.h"

tt_token *tt_test_tokens_vocab(int n_micro, int B, int T, uint64_t seed, int V) {
    size_t n = (size_t)n_micro * B * (T + 1);
    tt_token *t = malloc(n * sizeof *t);
    for (size_t i = 0; i < n; i++) t[i] = (tt_token)tt_rand_below(seed, TT_STREAM_TEST, i, (uint64_t)V);
    return t;
}

tt_token *tt_test_tokens(int n_micro, int B, int T, uint64_t seed) { return tt_test_tokens_vocab(n_micro, B, T, seed, 256); }

tt_backend *tt_test_cpu_backend(const tt_model_config *c, int threads) {
    tt_backend *be = NULL;
    tt_status st;
    int rc = tt_backend_cpu_create(c, &(tt_backend_opts){.threads = threads}, &be, &st);
    CHECK_MSG(rc == TT_OK, "create: %s", st.msg);
    return rc == TT_OK ? be : NULL;
}

tt_optim_args tt_test_optim_at(float lr, float clip, int step) {
    tt_optim_args a = {lr, 0.9f, 0.95f, 1e-8f, 0.1f, clip, 0, 0, 0.0f, 0, 0};
    a.bc1 = (float)(1.0 - pow(0.9, step));
    a.bc2 = (float)(1.0 - pow(0.95, step));
    return a;
}

float tt_test_loss_and_grad(tt_backend *be, const float *params, const tt_token *tok, float *g) {
    tt_status st;
    float loss = NAN;
    tt_test_poison(g, be->layout.total);
    CHECK_MSG(be->vt->set_state(be, params, NULL, NULL, &st) == TT_OK, "set_state: %s", st.msg);
    CHECK_MSG(be->vt->loss_and_grad(be, tok, &loss, g, &st) == TT_OK, "loss_and_grad: %s", st.msg);
    return loss;
}

float *tt_test_params(const tt_model_config *c, const tt_layout *lo, uint64_t seed) {
    float *p = malloc(lo->total * sizeof *p);
    tt_model_init_params(c, lo, seed, p, NULL);
    for (int i = 0; i < lo->n_tensors; i++) {
        const tt_tensor_info *t = &lo->t[i];
        if (t->ndim == 2 && t->kind != TT_LORA_B) continue;
        int gain = t->kind == TT_LN1W || t->kind == TT_LN2W || t->kind == TT_LNFW;
        float amp = t->kind == TT_LORA_B ? 0.05f : 0.1f;
        for (size_t j = 0; j < t->numel; j++)
            p[t->offset + j] = (gain ? 1.0f : 0.0f) + amp * (2.0f * tt_rand_uniform(seed + 1, TT_STREAM_TEST, t->offset + j) - 1.0f);
    }
    return p;
}

double tt_test_grad_err(const tt_layout *lo, int t0, int t1, const float *got, const double *ref, double report,
                        const char **worst) {
    double gmax = 0, worst_e = 0;
    if (worst) *worst = "";
    for (int i = t0; i < t1; i++)
        for (size_t j = lo->t[i].offset; j < lo->t[i].offset + lo->t[i].numel; j++)
            if (fabs(ref[j]) > gmax) gmax = fabs(ref[j]);
    for (int i = t0; i < t1; i++) {
        const tt_tensor_info *ti = &lo->t[i];
        double tmax = 0, dmax = 0;
        for (size_t j = ti->offset; j < ti->offset + ti->numel; j++) {
            if (fabs(ref[j]) > tmax) tmax = fabs(ref[j]);
            double d = fabs((double)got[j] - ref[j]);
            if (!(d <= dmax)) dmax = d; /* NaN propagates */
        }
        double e = dmax / (tmax > 1e-2 * gmax ? tmax : 1e-2 * gmax);
        if (report > 0 && !(e <= report)) fprintf(stderr, "  grad %s: rel err %.3g\n", ti->name, e);
        if (!(e <= worst_e) && !isnan(worst_e)) { /* the first NaN stays */
            worst_e = e;
            if (worst) *worst = ti->name;
        }
    }
    return worst_e;
}

double *tt_test_f64(const float *x, size_t n) {
    double *d = malloc(n * sizeof *d);
    for (size_t i = 0; d && i < n; i++) d[i] = x[i];
    return d;
}
