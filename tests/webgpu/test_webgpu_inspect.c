/* test_webgpu_inspect.c — model inspection (src/engine/inspect.c) on the WebGPU
 * backend against the CPU backend: the same model and prompt give attention
 * maps and next-byte / logit-lens probabilities within 1e-5 absolute, for a
 * prompt shorter than the context (the batch and the sequence padded) and
 * for the whole context; and the result does not depend on what the batch
 * held before (a training step in between). Tiny shapes: lavapipe is slow. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "engine/backend_create.h"
#include "gpu_test.h"
#include "engine/inspect.h"
#include "model.h"
#include "rng.h"
#include "tt_test.h"

static const tt_model_config cfg = {.n_layer = 2, .d_model = 32, .n_head = 4, .ctx = 16, .batch = 2, .vocab = TT_VOCAB};

static float *params_for(const tt_layout *lo, uint64_t seed) {
    float *p = malloc(lo->total * sizeof *p);
    tt_model_init_params(&cfg, lo, seed, p, NULL);
    for (size_t i = 0; i < lo->total; i++) p[i] += 0.05f * (2.0f * tt_rand_uniform(seed + 1, TT_STREAM_TEST, i) - 1.0f);
    for (int l = 0; l < cfg.n_layer; l++) /* sharper attention than at init */
        for (int w = 0; w < 2; w++) {
            float *m = p + tt_layout_offset(lo, &cfg, w ? TT_KW : TT_QW, l);
            for (size_t j = 0; j < (size_t)cfg.d_model * cfg.d_model; j++) m[j] *= 8.0f;
        }
    return p;
}

static double max_abs(const float *a, const float *b, size_t n) {
    double e = 0;
    for (size_t i = 0; i < n; i++) e = fmax(e, fabs((double)a[i] - b[i]));
    return e;
}

static void compare(tt_backend *cpu, tt_backend *gpu, const float *params, const tt_token *tok, int T) {
    tt_status st;
    tt_inspect a, b;
    int ra = tt_inspect_run(cpu, params, tok, T, &a, &st);
    CHECK_MSG(ra == TT_OK, "cpu: %s", st.msg);
    int rb = tt_inspect_run(gpu, params, tok, T, &b, &st);
    CHECK_MSG(rb == TT_OK, "webgpu: %s", st.msg);
    if (ra == TT_OK && rb == TT_OK) {
        const size_t na = (size_t)cfg.n_layer * cfg.n_head * T * T, nl = (size_t)(cfg.n_layer + 1) * T * cfg.vocab;
        double ea = max_abs(b.attn, a.attn, na), el = max_abs(b.lens, a.lens, nl);
        printf("T=%d: attention max abs diff %.3g, probabilities %.3g\n", T, ea, el);
        CHECK_MSG(ea <= 1e-5, "T=%d: attention maps differ by %.3g", T, ea);
        CHECK_MSG(el <= 1e-5, "T=%d: probabilities differ by %.3g", T, el);
        double peak = 0;
        for (size_t i = 0; i < na; i++) peak = fmax(peak, a.attn[i] * ((i / T) % T != 0));
        CHECK_MSG(peak > 0.5, "the test model's attention is too flat (%.3g)", peak);
    }
    tt_inspect_free(&a);
    tt_inspect_free(&b);
}

TT_TEST(webgpu_matches_cpu) {
    tt_status st;
    tt_backend *gpu = tt_gtest_backend_or_skip(&cfg);
    tt_backend *cpu = NULL;
    CHECK(tt_backend_create("cpu", &cfg, &(tt_backend_opts){.threads = 1}, &cpu, NULL, 0, &st) == TT_OK);
    float *params = params_for(&cpu->layout, 77);
    CHECK(cpu->vt->set_state(cpu, params, NULL, NULL, &st) == TT_OK);
    CHECK(gpu->vt->set_state(gpu, params, NULL, NULL, &st) == TT_OK);
    tt_token tok[16];
    for (int t = 0; t < 16; t++) tok[t] = (tt_token)tt_rand_below(78, TT_STREAM_TEST, (uint64_t)t, 256);
    compare(cpu, gpu, params, tok, 16);
    /* an eval of a full random batch first: the shorter prompt's padding must hide it */
    tt_token batch[2 * 17];
    for (int i = 0; i < 2 * 17; i++) batch[i] = (tt_token)tt_rand_below(79, TT_STREAM_TEST, (uint64_t)i, 256);
    float loss;
    CHECK(gpu->vt->eval(gpu, batch, 2, &loss, &st) == TT_OK);
    compare(cpu, gpu, params, tok + 3, 9);
    free(params);
    tt_backend_destroy(cpu);
    tt_backend_destroy(gpu);
}

int main(void) {
    RUN(webgpu_matches_cpu);
    return tt_test_summary();
}
