/* gpu_test.h — helpers shared by the WebGPU kernel tests (tests only):
 * opening the device (skip, or fail under TT_REQUIRE_WEBGPU=1), random
 * host data, device buffers (uploaded or poisoned with NaN), read-back,
 * recording + submitting sites, and ref64.h's float64 causal attention on
 * the kernels' float inputs.
 * One device per test process: tt_gtest_open sets tt_gtest_gpu, which the
 * buffer helpers use. A failed device call prints "what: message" and
 * counts as a failed check (tt_test_failed_checks). */
#ifndef TT_GPU_TEST_H
#define TT_GPU_TEST_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "rng.h"
#include "webgpu/gpu_ops.h"

extern tt_gpu *tt_gtest_gpu;

/* Open the default adapter into tt_gtest_gpu and return it; without one,
 * print "SKIP: ..." and exit(0), or with TT_REQUIRE_WEBGPU=1 print
 * "FAIL: ..." and exit(1). */
tt_gpu *tt_gtest_open(void);
/* A WebGPU backend for cfg; without an adapter/library (TT_EUNSUP) print
 * "SKIP: ..." and exit(0), or under TT_REQUIRE_WEBGPU=1 "FAIL: ..." and
 * exit(1); any other creation error: print it and exit(1). */
tt_backend *tt_gtest_backend_or_skip(const tt_model_config *cfg);
/* rc != 0: print "what: st->msg" to stderr and count a failed check */
void tt_gtest_die_on(int rc, const tt_status *st, const char *what);

/* Seed of the next tt_gtest_rnd (incremented by each call). */
void tt_gtest_set_seed(uint64_t seed);
/* malloc'd n floats in [lo, hi) (tt_test_fill), one fresh seed per call */
float *tt_gtest_rnd(size_t n, float lo, float hi);

tt_gpu_buf tt_gtest_up(const void *x, size_t n);       /* storage buffer of n 4-byte words, = x */
tt_gpu_buf tt_gtest_poisoned(size_t n);                 /* storage buffer of n floats, all NaN */
void tt_gtest_down(tt_gpu_buf b, float *x, size_t n);   /* read the first n floats back (sync) */
void tt_gtest_run(const tt_gsite *s, int n);            /* begin, record n sites, submit */
tt_gref tt_gtest_R(tt_gpu_buf b);                       /* {b, offset 0} */

/* The float64 causal attention of ref64.h (ref_attention_forward_dropout,
 * ref_attention_backward_dropout) on the float inputs as the GPU kernels
 * take them: q, k, v, dy (B,T,C) with NH heads of hs = C/NH, dropout p of
 * the probabilities with mask key (p = 0: none); y, dq, dk, dv (B,T,C);
 * lse and D = rowsum(dy*y) (B,NH,T); D may be NULL. */
void tt_gtest_attn_ref(int B, int T, int C, int NH, const float *q, const float *k, const float *v, const float *dy,
                       float p, tt_dropout_key key, double *y, double *lse, double *D, double *dq, double *dk, double *dv);

/* A random causal-attention problem: q, k uniform in [-1.5, 1.5), v, dy in
 * [-1, 1), each (B,T,C) with C = NH*hs, drawn in that order; its float64
 * reference without dropout (tt_gtest_attn_ref, D included) and the inputs
 * uploaded. */
typedef struct {
    int B, T, C, NH;
    size_t n, ns; /* B*T*C, B*NH*T */
    float *q, *k, *v, *dy;
    double *y, *lse, *D, *dq, *dk, *dv;
    tt_gpu_buf bq, bk, bv, bdy;
} tt_gtest_attn_prob;
void tt_gtest_attn_make(tt_gtest_attn_prob *p, int B, int T, int NH, int hs);
void tt_gtest_attn_free(tt_gtest_attn_prob *p); /* host arrays and input buffers */

/* A random AdamW problem of n parameters, drawn in this order: p in [-1, 1),
 * g in [-0.5, 0.5), m in [-0.1, 0.1), v in [0, 0.01); the decay mask's
 * words from tt_rand_u64(mask_seed, TT_STREAM_TEST, i); the step uniforms
 * (lr 1e-2, betas 0.9 / 0.95, eps 1e-8, weight decay 0.1, clip, the bias
 * corrections of step 3) and the float64 masked AdamW of g from them:
 * rp, rm, rv after the update, norm the global grad norm before clipping. */
typedef struct {
    size_t n, nw;
    float *p, *g, *m, *v;
    uint32_t *mask;
    tt_gstep sp;
    double *rp, *rm, *rv, norm;
} tt_gtest_adamw_prob;
void tt_gtest_adamw_make(tt_gtest_adamw_prob *a, size_t n, float clip, uint64_t mask_seed);
void tt_gtest_adamw_free(tt_gtest_adamw_prob *a);

#endif
