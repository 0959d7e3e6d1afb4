/* gpu_test.c — helpers shared by the WebGPU kernel tests (see gpu_test.h):
 * device open/skip, random data, buffers, read-back, site submission, the
 * float64 causal attention reference. */
#include "gpu_test.h"

#include "backend.h"
#include "config.h"
#include "model.h"
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
                       double *y, double *lse, double *D, double *dq, double *dk, double *dv) {
    int hs = C / NH;
    double sc = 1.0 / sqrt((double)hs);
    double *p = malloc((size_t)T * sizeof *p), *dp = malloc((size_t)T * sizeof *dp);
    memset(dq, 0, (size_t)B * T * C * sizeof *dq);
    memset(dk, 0, (size_t)B * T * C * sizeof *dk);
    memset(dv, 0, (size_t)B * T * C * sizeof *dv);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int i = 0; i < T; i++) {
                size_t ib = ((size_t)b * T + i) * C + (size_t)h * hs;
                double mx = -1e300;
                for (int j = 0; j <= i; j++) {
                    size_t jb = ((size_t)b * T + j) * C + (size_t)h * hs;
                    double s = 0;
                    for (int d = 0; d < hs; d++) s += (double)q[ib + d] * k[jb + d];
                    p[j] = s * sc;
                    if (p[j] > mx) mx = p[j];
                }
                double sum = 0;
                for (int j = 0; j <= i; j++) sum += exp(p[j] - mx);
                size_t row = ((size_t)b * NH + h) * T + i;
                lse[row] = mx + log(sum);
                for (int j = 0; j <= i; j++) p[j] = exp(p[j] - mx) / sum;
                for (int d = 0; d < hs; d++) {
                    double s = 0;
                    for (int j = 0; j <= i; j++) s += p[j] * v[((size_t)b * T + j) * C + (size_t)h * hs + d];
                    y[ib + d] = s;
                }
                /* backward of this row: dp_j = dy_i . v_j, D_i = sum_j p_j dp_j */
                double Di = 0;
                for (int j = 0; j <= i; j++) {
                    size_t jb = ((size_t)b * T + j) * C + (size_t)h * hs;
                    double s = 0;
                    for (int d = 0; d < hs; d++) s += (double)dy[ib + d] * v[jb + d];
                    dp[j] = s;
                    Di += p[j] * s;
                }
                if (D) D[row] = Di;
                for (int j = 0; j <= i; j++) {
                    size_t jb = ((size_t)b * T + j) * C + (size_t)h * hs;
                    double ds = p[j] * (dp[j] - Di) * sc;
                    for (int d = 0; d < hs; d++) {
                        dq[ib + d] += ds * k[jb + d];
                        dk[jb + d] += ds * q[ib + d];
                        dv[jb + d] += p[j] * dy[ib + d];
                    }
                }
            }
    free(p);
    free(dp);
}

void tt_gtest_attn_make(tt_gtest_attn_prob *p, int B, int T, int NH, int hs) {
    p->B = B, p->T = T, p->C = NH * hs, p->NH = NH;
    p->n = (size_t)B * T * p->C, p->ns = (size_t)B * NH * T;
    const size_t n = p->n, ns = p->ns;
    p->q = tt_gtest_rnd(n, -1.5f, 1.5f), p->k = tt_gtest_rnd(n, -1.5f, 1.5f), p->v = tt_gtest_rnd(n, -1, 1),
    p->dy = tt_gtest_rnd(n, -1, 1);
    p->y = malloc(n * sizeof *p->y), p->lse = malloc(ns * sizeof *p->lse), p->D = malloc(ns * sizeof *p->D);
    p->dq = malloc(n * sizeof *p->dq), p->dk = malloc(n * sizeof *p->dk), p->dv = malloc(n * sizeof *p->dv);
    tt_gtest_attn_ref(B, T, p->C, NH, p->q, p->k, p->v, p->dy, p->y, p->lse, p->D, p->dq, p->dk, p->dv);
    p->bq = tt_gtest_up(p->q, n), p->bk = tt_gtest_up(p->k, n), p->bv = tt_gtest_up(p->v, n);
    p->bdy = tt_gtest_up(p->dy, n);
}

void tt_gtest_attn_free(tt_gtest_attn_prob *p) {
    tt_gpu_buf ins[4] = {p->bq, p->bk, p->bv, p->bdy};
    for (int i = 0; i < 4; i++) tt_gpu_buffer_free(tt_gtest_gpu, ins[i]);
    free(p->q), free(p->k), free(p->v), free(p->dy);
    free(p->y), free(p->lse), free(p->D), free(p->dq), free(p->dk), free(p->dv);
}
