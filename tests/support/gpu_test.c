/* gpu_test.c — helpers shared by the WebGPU kernel tests (see gpu_test.h):
 * device open/skip, random data, buffers, read-back, site submission, the
 * float64 causal attention (ref64.h) on the kernels' inputs. */
#include "gpu_test.h"

#include "backend.h"
#include "config.h"
#include "model.h"
#include "ref64.h"
#include "rng.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tt_test.h"

tt_gpu *tt_gtest_gpu;
static uint64_t seed_ctr = 1000;

/* no WebGPU here: skip (exit 0), or fail under TT_REQUIRE_WEBGPU=1 */
static void skip_or_fail(const char *why) {
    const char *req = getenv("TT_REQUIRE_WEBGPU");
    if (req && atoi(req)) {
        fprintf(stderr, "FAIL: TT_REQUIRE_WEBGPU=1 but WebGPU is unavailable: %s\n", why);
        exit(1);
    }
    printf("SKIP: %s\n", why);
    exit(0);
}

tt_backend *tt_gtest_backend_or_skip(const tt_model_config *cfg) {
    tt_status st;
    tt_backend *be = NULL;
    int rc = tt_backend_webgpu_create(cfg, NULL, &be, &st);
    if (rc == TT_EUNSUP) skip_or_fail(st.msg);
    if (rc) {
        fprintf(stderr, "webgpu backend: %s\n", st.msg);
        exit(1);
    }
    return be;
}

tt_gpu *tt_gtest_open(void) {
    tt_status st;
    tt_gpu *g = NULL;
    if (tt_gpu_open(NULL, &g, &st) != TT_OK) skip_or_fail(st.msg);
    tt_gtest_gpu = g;
    return g;
}

void tt_gtest_die_on(int rc, const tt_status *st, const char *what) {
    if (rc) {
        fprintf(stderr, "%s: %s\n", what, st->msg);
        tt_test_failed_checks++;
    }
}

void tt_gtest_set_seed(uint64_t seed) { seed_ctr = seed; }

float *tt_gtest_rnd(size_t n, float lo, float hi) {
    float *x = malloc((n ? n : 1) * sizeof *x);
    tt_test_fill(x, n, seed_ctr++, lo, hi);
    return x;
}

tt_gpu_buf tt_gtest_up(const void *x, size_t n) {
    tt_status st;
    tt_gpu_buf b = -1;
    int rc = tt_gpu_buffer(tt_gtest_gpu, n * 4, TT_GPU_STORAGE, "test", &b, &st);
    tt_gtest_die_on(rc, &st, "buffer");
    if (!rc && n) tt_gtest_die_on(tt_gpu_write(tt_gtest_gpu, b, 0, x, n * 4, &st), &st, "write");
    return b;
}

tt_gpu_buf tt_gtest_poisoned(size_t n) {
    float *p = malloc((n ? n : 1) * sizeof *p);
    tt_test_poison(p, n);
    tt_gpu_buf b = tt_gtest_up(p, n);
    free(p);
    return b;
}

void tt_gtest_down(tt_gpu_buf b, float *x, size_t n) {
    tt_status st;
    tt_gtest_die_on(tt_gpu_read_sync(tt_gtest_gpu, b, 0, n * 4, x, &st), &st, "read");
}

void tt_gtest_run(const tt_gsite *s, int n) {
    tt_status st;
    tt_gtest_die_on(tt_gpu_begin(tt_gtest_gpu, &st), &st, "begin");
    tt_gops_run(tt_gtest_gpu, s, n);
    tt_gtest_die_on(tt_gpu_submit(tt_gtest_gpu, &st), &st, "submit");
}

tt_gref tt_gtest_R(tt_gpu_buf b) {
    tt_gref r = {b, 0};
    return r;
}

void tt_gtest_attn_ref(int B, int T, int C, int NH, const float *q, const float *k, const float *v, const float *dy,
                       float p, tt_dropout_key key, double *y, double *lse, double *D, double *dq, double *dk, double *dv) {
    const size_t n = (size_t)B * T * C, ns = (size_t)B * NH * T;
    double *Q = ref_from_float(q, n), *K = ref_from_float(k, n), *V = ref_from_float(v, n), *DY = ref_from_float(dy, n);
    double *stats = ref_alloc(2 * ns); /* [lse | D] */
    ref_attention_forward_dropout(y, stats, Q, K, V, C, B, T, C, NH, p, key);
    ref_attention_backward_dropout(dq, dk, dv, stats, Q, K, V, DY, C, B, T, C, NH, p, key);
    memcpy(lse, stats, ns * sizeof *lse);
    if (D) memcpy(D, stats + ns, ns * sizeof *D);
    free(Q), free(K), free(V), free(DY), free(stats);
}

void tt_gtest_attn_make(tt_gtest_attn_prob *p, int B, int T, int NH, int hs) {
    p->B = B, p->T = T, p->C = NH * hs, p->NH = NH;
    p->n = (size_t)B * T * p->C, p->ns = (size_t)B * NH * T;
    const size_t n = p->n, ns = p->ns;
    p->q = tt_gtest_rnd(n, -1.5f, 1.5f), p->k = tt_gtest_rnd(n, -1.5f, 1.5f), p->v = tt_gtest_rnd(n, -1, 1),
    p->dy = tt_gtest_rnd(n, -1, 1);
    p->y = malloc(n * sizeof *p->y), p->lse = malloc(ns * sizeof *p->lse), p->D = malloc(ns * sizeof *p->D);
    p->dq = malloc(n * sizeof *p->dq), p->dk = malloc(n * sizeof *p->dk), p->dv = malloc(n * sizeof *p->dv);
    tt_gtest_attn_ref(B, T, p->C, NH, p->q, p->k, p->v, p->dy, 0.0f, (tt_dropout_key){0, 0}, p->y, p->lse, p->D, p->dq, p->dk,
                      p->dv);
    p->bq = tt_gtest_up(p->q, n), p->bk = tt_gtest_up(p->k, n), p->bv = tt_gtest_up(p->v, n);
    p->bdy = tt_gtest_up(p->dy, n);
}

void tt_gtest_attn_free(tt_gtest_attn_prob *p) {
    tt_gpu_buf ins[4] = {p->bq, p->bk, p->bv, p->bdy};
    for (int i = 0; i < 4; i++) tt_gpu_buffer_free(tt_gtest_gpu, ins[i]);
    free(p->q), free(p->k), free(p->v), free(p->dy);
    free(p->y), free(p->lse), free(p->D), free(p->dq), free(p->dk), free(p->dv);
}

void tt_gtest_adamw_make(tt_gtest_adamw_prob *a, size_t n, float clip, uint64_t mask_seed) {
    memset(a, 0, sizeof *a);
    a->n = n;
    a->p = tt_gtest_rnd(n, -1, 1), a->g = tt_gtest_rnd(n, -0.5f, 0.5f), a->m = tt_gtest_rnd(n, -0.1f, 0.1f);
    a->v = tt_gtest_rnd(n, 0, 0.01f);
    a->nw = (n + 31) / 32;
    a->mask = malloc(a->nw * sizeof *a->mask);
    for (size_t i = 0; i < a->nw; i++) a->mask[i] = (uint32_t)tt_rand_u64(mask_seed, TT_STREAM_TEST, i);
    tt_gstep *sp = &a->sp;
    sp->lr = 1e-2f, sp->b1 = 0.9f, sp->b2 = 0.95f, sp->eps = 1e-8f, sp->wd = 0.1f, sp->clip = clip;
    sp->bc1 = 1.0f - powf(0.9f, 3), sp->bc2 = 1.0f - powf(0.95f, 3);
    const tt_optim_args opt = {.lr = sp->lr, .beta1 = sp->b1, .beta2 = sp->b2, .eps = sp->eps, .weight_decay = sp->wd,
                               .clip = sp->clip, .bc1 = sp->bc1, .bc2 = sp->bc2};
    a->rp = ref_from_float(a->p, n), a->rm = ref_from_float(a->m, n), a->rv = ref_from_float(a->v, n);
    double *G = ref_from_float(a->g, n);
    a->norm = ref_adamw_update_masked(a->rp, G, a->rm, a->rv, a->mask, n, &opt);
    free(G);
}

void tt_gtest_adamw_free(tt_gtest_adamw_prob *a) {
    free(a->p), free(a->g), free(a->m), free(a->v), free(a->mask), free(a->rp), free(a->rm), free(a->rv);
    memset(a, 0, sizeof *a);
}
