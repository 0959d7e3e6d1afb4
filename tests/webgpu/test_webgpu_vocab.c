/* test_webgpu_vocab.c — the WebGPU backend against the CPU backend on models
 * beyond the byte-level ones: a vocabulary that is not 256 (an odd 997) and
 * GPT-2's tanh GELU (gelu_new), and the head + cross-entropy in chunks of
 * rows (the schedule's head where the logits exceed one buffer; the test
 * hook TT_WEBGPU_HEAD_ROWS forces small chunks here, so several run):
 *   - one loss + full gradient (loss_and_grad) per model, every tensor
 *     close to the CPU's;
 *   - eval (the chunked head's forward alone) equal to the loss of
 *     loss_and_grad, and to the unchunked backend's eval;
 *   - a few optimizer steps: losses and grad norms close to the CPU's.
 * Skips (exit 0) without a WebGPU library/adapter unless TT_REQUIRE_WEBGPU=1. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "gpu_test.h"
#include "model.h"
#include "model_test.h"
#include "rng.h"
#include "tt_test.h"

typedef tt_token tok_t; /* the backends' token type */

/* a small model of vocabulary V and activation act */
static tt_model_config model(int V, int act) {
    tt_model_config c;
    memset(&c, 0, sizeof c);
    c.n_layer = 2, c.d_model = 32, c.n_head = 2, c.ctx = 16, c.batch = 3;
    c.vocab = V, c.act = act;
    return c;
}

static tt_backend *make_cpu(const tt_model_config *cfg) {
    tt_status st;
    tt_backend *be = NULL;
    if (tt_backend_cpu_create(cfg, &(tt_backend_opts){0}, &be, &st)) {
        fprintf(stderr, "cpu backend: %s\n", st.msg);
        exit(1);
    }
    return be;
}

/* the WebGPU backend with the head in chunks of head_rows rows (NULL: the
 * plan's own choice) */
static tt_backend *make_gpu(const tt_model_config *cfg, const char *head_rows) {
    if (head_rows) setenv("TT_WEBGPU_HEAD_ROWS", head_rows, 1);
    tt_backend *be = tt_gtest_backend_or_skip(cfg);
    unsetenv("TT_WEBGPU_HEAD_ROWS");
    return be;
}

static tok_t *random_tokens(const tt_model_config *cfg, uint64_t seed) {
    const size_t n = (size_t)cfg->batch * (cfg->ctx + 1);
    tok_t *t = malloc(n * sizeof *t);
    for (size_t i = 0; i < n; i++) t[i] = (tok_t)tt_rand_below(seed, TT_STREAM_TEST, i, (uint64_t)cfg->vocab);
    return t;
}

static float *init_params(const tt_backend *be, uint64_t seed) {
    float *p = malloc(be->layout.total * sizeof *p);
    tt_model_init_params(&be->cfg, &be->layout, seed, p, NULL);
    return p;
}

/* loss_and_grad of the CPU and the GPU (head in chunks of head_rows) on one
 * batch; eval of the same rows on the GPU, chunked and not */
static void grad_case_lora(int V, int act, const char *head_rows, int lora_rank) {
    tt_status st;
    tt_model_config cfg = model(V, act);
    if (lora_rank) cfg.lora_rank = lora_rank, cfg.lora_alpha = 8.0f, cfg.lora_targets = TT_LORA_ALL;
    printf("  vocab %d, %s, head rows %s%s\n", V, tt_act_name(act), head_rows ? head_rows : "(plan)",
           lora_rank ? ", LoRA (frozen wte)" : "");
    tt_backend *gpu = make_gpu(&cfg, head_rows), *cpu = make_cpu(&cfg);
    const size_t P = cpu->layout.total;
    float *p = init_params(cpu, 7);
    /* weights 4x the init's: the MLP's inputs reach where the two GELUs differ */
    for (size_t i = 0; i < P; i++) p[i] *= 4.0f;
    CHECK(cpu->vt->set_state(cpu, p, NULL, NULL, &st) == TT_OK);
    CHECK(gpu->vt->set_state(gpu, p, NULL, NULL, &st) == TT_OK);
    tok_t *tok = random_tokens(&cfg, 11);
    float *gc = malloc(P * sizeof *gc), *gg = malloc(P * sizeof *gg);
    tt_test_poison(gg, P);
    float lc = 0, lg = 0, le = 0;
    CHECK(cpu->vt->loss_and_grad(cpu, tok, &lc, gc, &st) == TT_OK);
    int rc = gpu->vt->loss_and_grad(gpu, tok, &lg, gg, &st);
    if (rc) fprintf(stderr, "gpu loss_and_grad: %s\n", st.msg);
    CHECK(rc == TT_OK);
    CHECK(gpu->vt->eval(gpu, tok, cfg.batch, &le, &st) == TT_OK);
    printf("    loss cpu %.7f gpu %.7f, eval gpu %.7f\n", lc, lg, le);
    CHECK(lc > 1.0f && lc < 3.0 * log((double)V)); /* not a degenerate loss */
    CHECK_CLOSE(lg, lc, 1e-5, 0);
    CHECK(le == lg); /* the same forward sites */
    const char *worst_name;
    double *ref = tt_test_f64(gc, P);
    double worst = tt_test_grad_err(&cpu->layout, 0, cpu->layout.n_tensors, gg, ref, 1e-5, &worst_name);
    free(ref);
    printf("    worst gradient rel err %.3g (%s)\n", worst, worst_name);
    CHECK(worst <= 1e-5);
    if (act == TT_ACT_GELU_TANH) { /* the other GELU's gradients are far outside that: the test sees the form */
        tt_model_config ce = cfg;
        ce.act = TT_ACT_GELU;
        tt_backend *cpu_exact = make_cpu(&ce);
        float le2 = 0;
        CHECK(cpu_exact->vt->set_state(cpu_exact, p, NULL, NULL, &st) == TT_OK);
        CHECK(cpu_exact->vt->loss_and_grad(cpu_exact, tok, &le2, gc, &st) == TT_OK);
        ref = tt_test_f64(gc, P);
        const double other = tt_test_grad_err(&cpu->layout, 0, cpu->layout.n_tensors, gg, ref, 1.0, &worst_name);
        free(ref);
        printf("    against the exact GELU's gradients: worst rel err %.3g (%s)\n", other, worst_name);
        CHECK(other > 10 * worst && other > 1e-4);
        tt_backend_destroy(cpu_exact);
    }
    if (head_rows) { /* the plan's own head gives the same loss to rounding */
        tt_backend *plain = make_gpu(&cfg, NULL);
        float lp = 0;
        CHECK(plain->vt->set_state(plain, p, NULL, NULL, &st) == TT_OK);
        CHECK(plain->vt->eval(plain, tok, cfg.batch, &lp, &st) == TT_OK);
        CHECK_CLOSE(le, lp, 1e-6, 0);
        /* the chunks ran: the logits buffer holds one chunk */
        printf("    device memory: head in chunks %.1f KiB, whole %.1f KiB\n", gpu->desc.device_bytes / 1024.0,
               plain->desc.device_bytes / 1024.0);
        CHECK(gpu->desc.device_bytes < plain->desc.device_bytes);
        tt_backend_destroy(plain);
    }
    free(p), free(tok), free(gc), free(gg);
    tt_backend_destroy(gpu);
    tt_backend_destroy(cpu);
}

static void grad_case(int V, int act, const char *head_rows) { grad_case_lora(V, act, head_rows, 0); }

/* a few AdamW steps on both backends: losses and grad norms close */
static void steps_case(int V, int act, const char *head_rows) {
    tt_status st;
    const tt_model_config cfg = model(V, act);
    tt_backend *gpu = make_gpu(&cfg, head_rows), *cpu = make_cpu(&cfg);
    float *p = init_params(cpu, 3);
    CHECK(cpu->vt->set_state(cpu, p, NULL, NULL, &st) == TT_OK);
    CHECK(gpu->vt->set_state(gpu, p, NULL, NULL, &st) == TT_OK);
    double worst = 0;
    for (int k = 0; k < 4; k++) {
        tok_t *tok = random_tokens(&cfg, 100 + (uint64_t)k);
        tt_optim_args o;
        memset(&o, 0, sizeof o);
        o.lr = 3e-3f, o.beta1 = 0.9f, o.beta2 = 0.95f, o.eps = 1e-8f, o.weight_decay = 0.1f, o.clip = 1.0f;
        o.bc1 = 1.0f - powf(0.9f, (float)(k + 1)), o.bc2 = 1.0f - powf(0.95f, (float)(k + 1));
        o.step = k, o.seed = 1;
        float l1 = 0, n1 = 0, l2 = 0, n2 = 0;
        CHECK(cpu->vt->step(cpu, tok, 1, &o, &st) == TT_OK && cpu->vt->step_result(cpu, &l1, &n1, &st) == TT_OK);
        int rc = gpu->vt->step(gpu, tok, 1, &o, &st);
        if (rc == TT_OK) rc = gpu->vt->step_result(gpu, &l2, &n2, &st);
        if (rc) fprintf(stderr, "gpu step: %s\n", st.msg);
        CHECK(rc == TT_OK);
        const double e = fmax(fabs(l1 - l2) / fabs(l1), fabs(n1 - n2) / fabs(n1));
        worst = fmax(worst, e);
        free(tok);
    }
    printf("  vocab %d, %s, head rows %s: 4 steps, worst loss/norm rel diff %.3g\n", V, tt_act_name(act),
           head_rows ? head_rows : "(plan)", worst);
    CHECK(worst < 1e-4);
    free(p);
    tt_backend_destroy(gpu);
    tt_backend_destroy(cpu);
}

/* 3 * 16 = 48 rows: chunks of 7 rows (6 whole, one of 6) */
TT_TEST(test_byte_model_chunked_head) { grad_case(256, TT_ACT_GELU, "7"); }
TT_TEST(test_byte_model_chunked_head_steps) { steps_case(256, TT_ACT_GELU, "7"); }
/* vocabulary 997: the plain head (logits (48, 997)), and in chunks of 10
 * rows (logits rows padded to 1000 inside) */
TT_TEST(test_vocab_997) { grad_case(997, TT_ACT_GELU, NULL); }
TT_TEST(test_vocab_997_chunked_head) { grad_case(997, TT_ACT_GELU, "10"); }
TT_TEST(test_vocab_997_steps) { steps_case(997, TT_ACT_GELU, "10"); }
/* GPT-2's variant: gelu_new, vocabulary 997, the head plain and in chunks */
TT_TEST(test_gelu_new_997) { grad_case(997, TT_ACT_GELU_TANH, NULL); }
TT_TEST(test_gelu_new_997_chunked_head) { grad_case(997, TT_ACT_GELU_TANH, "10"); }
TT_TEST(test_gelu_new_997_steps) { steps_case(997, TT_ACT_GELU_TANH, "10"); }
/* LoRA on a frozen base: the chunked head without wte's gradient */
TT_TEST(test_lora_997_chunked_head) { grad_case_lora(997, TT_ACT_GELU_TANH, "10", 4); }

int main(void) {
    tt_model_config c = model(256, TT_ACT_GELU);
    tt_backend *probe = tt_gtest_backend_or_skip(&c); /* exits 0 (skip) without an adapter */
    tt_backend_destroy(probe);
    RUN(test_byte_model_chunked_head);
    RUN(test_byte_model_chunked_head_steps);
    RUN(test_vocab_997);
    RUN(test_vocab_997_chunked_head);
    RUN(test_vocab_997_steps);
    RUN(test_gelu_new_997);
    RUN(test_gelu_new_997_chunked_head);
    RUN(test_gelu_new_997_steps);
    RUN(test_lora_997_chunked_head);
    return tt_test_summary();
}
