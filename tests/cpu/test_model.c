/* test_model.c — the whole model on the CPU backend: parameter counts of
 * every preset, deterministic init, forward + backward of the tiny preset and
 * an odd config and LoRA configs against the float64 reference (ref/ref64.c),
 * eval, an overfit run, bit-identical training for 1, 2 and 3 threads,
 * gradient accumulation, one AdamW step (clipping active) against the
 * reference, a training step with dropout against the reference with the
 * same masks, and the behemoth memory plan. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cpu/backend_cpu.h"
#include "model.h"
#include "pool.h"
#include "ref64.h"
#include "rng.h"
#include "model_test.h"
#include "tt_test.h"

#define CHECK_REL_M(a, b, n)                                                   \
    do {                                                                       \
        double e_ = tt_test_max_rel_err((a), (b), (n));                        \
        CHECK_MSG(e_ < 1e-4, "%s vs %s: rel err %.3g", #a, #b, e_);           \
    } while (0)

TT_TEST(preset_param_counts) {
    for (int i = 0; i < tt_n_presets; i++) {
        const tt_preset *p = &tt_presets[i];
        tt_layout lo;
        tt_status st;
        CHECK(tt_config_validate(&p->cfg, &st) == TT_OK);
        CHECK_MSG(tt_config_param_count(&p->cfg) == p->n_params, "%s", p->name);
        CHECK(tt_layout_build(&p->cfg, &lo, &st) == TT_OK);
        CHECK_MSG((int64_t)lo.total == p->n_params, "%s: layout %zu vs %lld", p->name, lo.total, (long long)p->n_params);
        /* tensors tile the buffer without gaps */
        size_t off = 0;
        for (int t = 0; t < lo.n_tensors; t++) {
            CHECK(lo.t[t].offset == off);
            off += lo.t[t].numel;
        }
        CHECK(off == lo.total);
        tt_layout_free(&lo);
        CHECK(tt_preset_find(p->name) == p);
    }
    /* the numbers from the issue, independently of the table */
    CHECK(tt_preset_find("tiny")->n_params == 70464);
    CHECK(tt_preset_find("small")->n_params == 366432);
    CHECK(tt_preset_find("medium")->n_params == 838400);
    CHECK(tt_preset_find("large")->n_params == 2743296);
    CHECK(tt_preset_find("xl")->n_params == 6416896);
    CHECK(tt_preset_find("huge")->n_params == 9608704);
    CHECK(tt_preset_find("massive")->n_params == 25039872);
    CHECK(tt_preset_find("mega")->n_params == 25138176);
    CHECK(tt_preset_find("behemoth")->n_params == 473244160);
}

TT_TEST(init_is_deterministic) {
    tt_model_config c = tt_preset_find("tiny")->cfg;
    tt_layout lo;
    tt_status st;
    CHECK(tt_layout_build(&c, &lo, &st) == TT_OK);
    size_t n = lo.total;
    float *a = malloc(n * 4), *b = malloc(n * 4), *d = malloc(n * 4);
    tt_test_poison(a, n), tt_test_poison(b, n), tt_test_poison(d, n);
    tt_pool *pool = tt_pool_create(3);
    tt_model_init_params(&c, &lo, 1337, a, NULL);
    tt_model_init_params(&c, &lo, 1337, b, pool);
    tt_model_init_params(&c, &lo, 1338, d, pool);
    CHECK(memcmp(a, b, n * 4) == 0);
    size_t same = 0;
    for (size_t i = 0; i < n; i++) same += a[i] == d[i];
    /* a different seed changes every random element (only biases/gains agree) */
    size_t fixed = 0;
    for (int i = 0; i < lo.n_tensors; i++)
        if (lo.t[i].ndim == 1) fixed += lo.t[i].numel;
    CHECK_MSG(same <= fixed + 10, "%zu equal elements, %zu non-random", same, fixed);
    /* distributions: std 0.02 for wte, 0.02/sqrt(2L) for projections, biases 0, gains 1 */
    const tt_tensor_info *wte = &lo.t[tt_layout_index(&c, TT_WTE, 0)];
    const tt_tensor_info *pw = &lo.t[tt_layout_index(&c, TT_PROJW, 1)];
    double s2 = 0, p2 = 0;
    for (size_t j = 0; j < wte->numel; j++) s2 += (double)a[wte->offset + j] * a[wte->offset + j];
    for (size_t j = 0; j < pw->numel; j++) p2 += (double)a[pw->offset + j] * a[pw->offset + j];
    CHECK_CLOSE(sqrt(s2 / wte->numel), 0.02, 0.05, 0);
    CHECK_CLOSE(sqrt(p2 / pw->numel), 0.02 / sqrt(2.0 * c.n_layer), 0.05, 0);
    CHECK(a[tt_layout_offset(&lo, &c, TT_LN1W, 0)] == 1.0f && a[tt_layout_offset(&lo, &c, TT_QB, 1)] == 0.0f);
    tt_pool_destroy(pool);
    free(a), free(b), free(d);
    tt_layout_free(&lo);
}

/* per-tensor max error of the CPU gradient against the reference, relative
 * to the tensor's largest gradient — floored at 1e-3 of the largest gradient
 * of the model's trainable tensors, since some gradients are exactly zero in
 * exact arithmetic (the key bias: softmax ignores a constant added to every
 * score). A frozen tensor (the base of a LoRA model) must have none at all. */
static void compare_grads(const char *what, const tt_layout *lo, const float *g, const double *rg, double tol) {
    double gmax = 0;
    for (int i = 0; i < lo->n_tensors; i++)
        for (size_t j = 0; lo->t[i].trainable && j < lo->t[i].numel; j++) gmax = fmax(gmax, fabs(rg[lo->t[i].offset + j]));
    CHECK(gmax > 0);
    for (int i = 0; i < lo->n_tensors; i++) {
        const tt_tensor_info *t = &lo->t[i];
        double tmax = 1e-3 * gmax, emax = 0;
        for (size_t j = 0; j < t->numel; j++) {
            tmax = fmax(tmax, fabs(rg[t->offset + j]));
            double e = t->trainable ? fabs(g[t->offset + j] - rg[t->offset + j]) : fabs(g[t->offset + j]);
            emax = isnan(e) ? INFINITY : fmax(emax, e);
        }
        if (t->trainable) CHECK_MSG(emax <= tol * tmax, "%s: grad of %s rel err %.3g", what, t->name, emax / tmax);
        else CHECK_MSG(emax == 0, "%s: frozen %s has a gradient", what, t->name);
    }
}

static void check_model_vs_reference(const char *what, tt_model_config c, int threads) {
    tt_backend *be = tt_test_cpu_backend(&c, threads);
    if (!be) return;
    tt_status st;
    const tt_layout *lo = &be->layout;
    float *p = tt_test_params(&c, lo, 42);
    tt_token *tok = tt_test_tokens_vocab(1, c.batch, c.ctx, 7, c.vocab);
    float *g = malloc(lo->total * sizeof *g);
    float loss = tt_test_loss_and_grad(be, p, tok, g);
    double *dp = ref_from_float(p, lo->total), *rg = ref_alloc(lo->total);
    double rl = ref_gpt_loss_grad(&c, lo, dp, tok, c.batch, rg);
    CHECK_MSG(fabs(loss - rl) <= 1e-4 * fabs(rl), "%s: loss %.8g vs reference %.8g", what, loss, rl);
    CHECK_MSG(fabs(rl - log((double)c.vocab)) < 1.5, "%s: loss %.4g of a fresh model is not about ln(vocab)", what, rl);
    compare_grads(what, lo, g, rg, 1e-4);
    /* eval gives the same loss as the training forward, for the full and a smaller batch */
    float el = NAN;
    CHECK(be->vt->eval(be, tok, c.batch, &el, &st) == TT_OK);
    CHECK(el == loss);
    if (c.batch > 1) {
        double rl1 = ref_gpt_loss_grad(&c, lo, dp, tok, 1, NULL);
        CHECK(be->vt->eval(be, tok, 1, &el, &st) == TT_OK);
        CHECK_MSG(fabs(el - rl1) <= 1e-4 * fabs(rl1), "%s: eval B=1 %.8g vs %.8g", what, el, rl1);
    }
    /* a second loss_and_grad gives the same bits (grads are not accumulated across calls) */
    float *g2 = malloc(lo->total * sizeof *g2);
    float loss2;
    CHECK(be->vt->loss_and_grad(be, tok, &loss2, g2, &st) == TT_OK);
    CHECK(loss2 == loss && memcmp(g, g2, lo->total * sizeof *g) == 0);
    free(p), free(tok), free(g), free(g2), free(dp), free(rg);
    tt_backend_destroy(be);
}

TT_TEST(tiny_model_matches_reference) {
    check_model_vs_reference("tiny", tt_preset_find("tiny")->cfg, 2);
}

/* LoRA (each target alone, all of them; ranks 1, 4, 8): the reference
 * computes every gradient, the CPU only the adapters' */
TT_TEST(lora_model_matches_reference) {
    tt_model_config base = {2, 20, 4, 9, 3, TT_VOCAB, 0, 0, 0.0f, 0, 0.0f};
    for (int t = 0; t <= TT_LORA_N_TARGETS + 2; t++) {
        tt_model_config c = base;
        c.lora_rank = t < TT_LORA_N_TARGETS ? 4 : t == TT_LORA_N_TARGETS ? 1 : 8;
        c.lora_targets = t < TT_LORA_N_TARGETS ? 1 << t : t == TT_LORA_N_TARGETS + 2 ? 0x9 : TT_LORA_ALL;
        c.lora_alpha = 8.0f;
        char what[64];
        snprintf(what, sizeof what, "LoRA rank %d targets 0x%x", c.lora_rank, c.lora_targets);
        check_model_vs_reference(what, c, 1 + t % 3);
    }
}

TT_TEST(odd_model_matches_reference) {
    tt_model_config c = {1, 12, 3, 7, 3, TT_VOCAB, 0, 0, 0.0f, 0, 0.0f};
    check_model_vs_reference("L1 C12 H3 T7 B3", c, 3);
    tt_model_config c2 = {2, 20, 4, 33, 2, TT_VOCAB, 0, 0, 0.0f, 0, 0.0f}; /* head size 5, T past two SIMD widths */
    check_model_vs_reference("L2 C20 H4 T33 B2", c2, 1);
}

/* GPT-2's variants (gelu_new, another LayerNorm epsilon) and a vocabulary
 * that is not 256 nor a multiple of the SIMD width */
TT_TEST(gpt2_variants_match_reference) {
    tt_model_config c = {2, 20, 4, 9, 3, 1003, 0, 0, 0.0f, TT_ACT_GELU_TANH, 1e-3f};
    check_model_vs_reference("gelu_new, eps 1e-3, vocab 1003", c, 3);
    c.act = TT_ACT_GELU;
    check_model_vs_reference("gelu, eps 1e-3, vocab 1003", c, 1);
}

/* a vocabulary whose logits of B*T rows exceed the CPU backend's 64 MiB
 * logits buffer (50257 x 384 rows): the head and cross-entropy run on
 * chunks of rows, forward and backward, for a full model and a LoRA one
 * (frozen wte: no gradient) */
TT_TEST(big_vocab_head_runs_in_chunks) {
    tt_model_config c = {1, 8, 2, 48, 8, 50257, 0, 0, 0.0f, TT_ACT_GELU_TANH, 0.0f};
    CHECK((size_t)c.batch * c.ctx * c.vocab * sizeof(float) > ((size_t)64 << 20));
    check_model_vs_reference("vocab 50257, 384 rows", c, 2);
    c.lora_rank = 2, c.lora_targets = TT_LORA_ALL, c.lora_alpha = 4.0f;
    check_model_vs_reference("vocab 50257, 384 rows, LoRA", c, 3);
}

TT_TEST(overfits_a_short_string) {
    tt_model_config c = {2, 32, 2, 32, 4, TT_VOCAB, 0, 0, 0.0f, 0, 0.0f};
    tt_backend *be = tt_test_cpu_backend(&c, 2);
    if (!be) return;
    tt_status st;
    const char *text = "tinytrain learns this line by heart. tinytrain learns this line by heart.";
    size_t len = strlen(text);
    tt_token *tok = malloc(((size_t)c.batch * (c.ctx + 1)) * sizeof *tok);
    for (int b = 0; b < c.batch; b++)
        for (int t = 0; t <= c.ctx; t++) tok[b * (c.ctx + 1) + t] = (uint8_t)text[(size_t)(b * 9 + t) % len];
    float *p = malloc(be->layout.total * sizeof *p);
    tt_model_init_params(&c, &be->layout, 5, p, NULL);
    CHECK(be->vt->set_state(be, p, NULL, NULL, &st) == TT_OK);
    float loss = INFINITY, first = 0, norm = 0;
    for (int s = 1; s <= 300 && loss > 0.02f; s++) {
        tt_optim_args a = tt_test_optim_at(3e-3f, 1.0f, s);
        CHECK(be->vt->step(be, tok, 1, &a, &st) == TT_OK);
        CHECK(be->vt->step_result(be, &loss, &norm, &st) == TT_OK);
        if (s == 1) first = loss;
    }
    CHECK(first > 5.0f);
    CHECK_MSG(loss < 0.05f, "overfit loss %.4f", loss);
    float el;
    CHECK(be->vt->eval(be, tok, c.batch, &el, &st) == TT_OK);
    CHECK_MSG(el < 0.05f, "eval after overfit %.4f", el);
    free(tok), free(p);
    tt_backend_destroy(be);
}

TT_TEST(training_is_bit_identical_across_threads) {
    tt_model_config c = tt_preset_find("tiny")->cfg;
    c.batch = 4;
    const int steps = 5, threads[3] = {1, 2, 3};
    float losses[3][5], norms[3][5];
    float *w[3] = {0}, *mm[3] = {0}, *vv[3] = {0};
    tt_token *tok = tt_test_tokens(2 * steps, c.batch, c.ctx, 99);
    for (int k = 0; k < 3; k++) {
        tt_backend *be = tt_test_cpu_backend(&c, threads[k]);
        if (!be) return;
        tt_status st;
        size_t n = be->layout.total;
        float *p = malloc(n * sizeof *p);
        tt_model_init_params(&c, &be->layout, 1337, p, NULL);
        CHECK(be->vt->set_state(be, p, NULL, NULL, &st) == TT_OK);
        for (int s = 0; s < steps; s++) {
            tt_optim_args a = tt_test_optim_at(1e-3f, 1.0f, s + 1);
            CHECK(be->vt->step(be, tok + (size_t)s * 2 * c.batch * (c.ctx + 1), 2, &a, &st) == TT_OK);
            CHECK(be->vt->step_result(be, &losses[k][s], &norms[k][s], &st) == TT_OK);
        }
        w[k] = malloc(n * 4), mm[k] = malloc(n * 4), vv[k] = malloc(n * 4);
        CHECK(be->vt->get_state(be, w[k], mm[k], vv[k], &st) == TT_OK);
        if (k > 0) {
            CHECK_MSG(memcmp(losses[k], losses[0], sizeof losses[0]) == 0, "%d threads: losses differ", threads[k]);
            CHECK_MSG(memcmp(norms[k], norms[0], sizeof norms[0]) == 0, "%d threads: norms differ", threads[k]);
            CHECK_MSG(memcmp(w[k], w[0], n * 4) == 0, "%d threads: weights differ", threads[k]);
            CHECK(memcmp(mm[k], mm[0], n * 4) == 0 && memcmp(vv[k], vv[0], n * 4) == 0);
        }
        CHECK(memcmp(w[k], p, n * 4) != 0); /* it did train */
        free(p);
        tt_backend_destroy(be);
    }
    CHECK(losses[0][4] < losses[0][0]);
    for (int k = 0; k < 3; k++) free(w[k]), free(mm[k]), free(vv[k]);
    free(tok);
}

/* 2 micro-batches of B == one step on the concatenated 2B batch: compare the
 * loss and the first moment m = (1 - beta1) * grad (lr = 0, no clipping) */
TT_TEST(grad_accumulation_matches_big_batch) {
    tt_model_config c = {2, 24, 2, 16, 3, TT_VOCAB, 0, 0, 0.0f, 0, 0.0f}, c2 = c;
    c2.batch = 2 * c.batch;
    tt_backend *a = tt_test_cpu_backend(&c, 2), *b = tt_test_cpu_backend(&c2, 2);
    if (!a || !b) return;
    tt_status st;
    size_t n = a->layout.total;
    float *p = tt_test_params(&c, &a->layout, 3);
    tt_token *tok = tt_test_tokens(2, c.batch, c.ctx, 11); /* (2, B, T+1) == (2B, T+1) */
    CHECK(a->vt->set_state(a, p, NULL, NULL, &st) == TT_OK);
    CHECK(b->vt->set_state(b, p, NULL, NULL, &st) == TT_OK);
    tt_optim_args o = tt_test_optim_at(0.0f, 0.0f, 1);
    o.weight_decay = 0.0f;
    CHECK(a->vt->step(a, tok, 2, &o, &st) == TT_OK);
    CHECK(b->vt->step(b, tok, 1, &o, &st) == TT_OK);
    float la, lb, na, nb;
    a->vt->step_result(a, &la, &na, &st);
    b->vt->step_result(b, &lb, &nb, &st);
    CHECK_CLOSE(la, lb, 1e-6, 0);
    CHECK_CLOSE(na, nb, 1e-5, 0);
    float *ma = malloc(n * 4), *mb = malloc(n * 4), *pa = malloc(n * 4);
    CHECK(a->vt->get_state(a, pa, ma, NULL, &st) == TT_OK);
    CHECK(b->vt->get_state(b, NULL, mb, NULL, &st) == TT_OK);
    CHECK(memcmp(pa, p, n * 4) == 0); /* lr 0, no decay: weights unchanged */
    double *dmb = ref_from_float(mb, n);
    compare_grads("accumulated vs big batch", &a->layout, ma, dmb, 1e-5);
    /* and the gradient is the reference gradient of the 2B batch */
    double *dp = ref_from_float(p, n), *rg = ref_alloc(n);
    ref_gpt_loss_grad(&c2, &b->layout, dp, tok, c2.batch, rg);
    for (size_t i = 0; i < n; i++) rg[i] *= 1.0 - 0.9;
    compare_grads("accumulated vs reference", &a->layout, ma, rg, 1e-4);
    free(p), free(tok), free(ma), free(mb), free(pa), free(dmb), free(dp), free(rg);
    tt_backend_destroy(a);
    tt_backend_destroy(b);
}

/* one full step (forward, backward, norm, clip, AdamW) against the reference,
 * from a non-zero optimizer state so the update is smooth in the gradient */
static void check_adamw_step(tt_model_config c) {
    tt_backend *be = tt_test_cpu_backend(&c, 3);
    if (!be) return;
    tt_status st;
    const tt_layout *lo = &be->layout;
    size_t n = lo->total;
    /* the backend's moments cover the trainable range [bt, n) (a LoRA model's
     * adapters); the reference keeps them for the whole layout */
    const size_t bt = tt_layout_train0(lo), nt = n - bt;
    float *p = tt_test_params(&c, lo, 8);
    float *m = malloc(n * 4), *v = malloc(n * 4);
    tt_test_fill(m, n, 21, -1e-3f, 1e-3f);
    tt_test_fill(v, n, 22, 1e-6f, 1e-5f);
    tt_token *tok = tt_test_tokens(1, c.batch, c.ctx, 23);
    double *dp = ref_from_float(p, n), *dm = ref_from_float(m, n), *dv = ref_from_float(v, n), *rg = ref_alloc(n);
    double rl = ref_gpt_loss_grad(&c, lo, dp, tok, c.batch, rg);
    /* the norm over the trainable tensors: a LoRA model's frozen base takes no part */
    double gn = 0;
    for (int t = 0; t < lo->n_tensors; t++)
        for (size_t j = 0; lo->t[t].trainable && j < lo->t[t].numel; j++) gn += rg[lo->t[t].offset + j] * rg[lo->t[t].offset + j];
    gn = sqrt(gn);
    tt_optim_args a = tt_test_optim_at(1e-2f, (float)(0.5 * gn), 3); /* clipping active */
    double rn = ref_adamw_update(dp, rg, dm, dv, lo, &a);
    CHECK(be->vt->set_state(be, p, m + bt, v + bt, &st) == TT_OK);
    CHECK(be->vt->step(be, tok, 1, &a, &st) == TT_OK);
    float loss, norm;
    CHECK(be->vt->step_result(be, &loss, &norm, &st) == TT_OK);
    CHECK_CLOSE(loss, rl, 1e-5, 0);
    CHECK_CLOSE(norm, rn, 1e-4, 0);
    CHECK(norm > a.clip);
    float *p2 = malloc(n * 4), *m2 = malloc(nt * 4), *v2 = malloc(nt * 4);
    CHECK(be->vt->get_state(be, p2, m2, v2, &st) == TT_OK);
    /* compare the updates (p2 - p), not the weights, so the test sees the step */
    double *rdelta = ref_alloc(n);
    float *delta = malloc(n * 4);
    for (size_t i = 0; i < n; i++) {
        rdelta[i] = dp[i] - p[i];
        delta[i] = p2[i] - p[i];
    }
    double e = tt_test_max_rel_err(delta, rdelta, n);
    CHECK_MSG(e < 1e-3, "update rel err %.3g", e);
    CHECK_REL_M(m2, dm + bt, nt);
    CHECK_REL_M(v2, dv + bt, nt);
    /* a LoRA model's base: weights bit-identical after the step */
    CHECK(memcmp(p2, p, bt * 4) == 0);
    free(p), free(m), free(v), free(tok), free(dp), free(dm), free(dv), free(rg), free(p2), free(m2), free(v2);
    free(rdelta), free(delta);
    tt_backend_destroy(be);
}

TT_TEST(adamw_step_matches_reference_with_clipping) {
    tt_model_config c = {1, 16, 2, 8, 2, TT_VOCAB, 0, 0, 0.0f, 0, 0.0f};
    check_adamw_step(c);
    c.lora_rank = 4, c.lora_targets = TT_LORA_ALL, c.lora_alpha = 8.0f; /* only the adapters step */
    check_adamw_step(c);
}

/* A training step with dropout against the float64 reference with the same
 * masks: 2 micro-batches (each keyed by its own micro index), loss and the
 * accumulated gradient read back as AdamW's first moment (beta1 = 0, lr = 0,
 * no clipping: m = grad exactly). Also: the same step twice gives the same
 * bits, another step index draws other masks, and eval does not drop. */
static void check_dropout_step(const char *what, tt_model_config c, int threads, float p) {
    tt_backend *be = tt_test_cpu_backend(&c, threads);
    if (!be) return;
    tt_status st;
    const tt_layout *lo = &be->layout;
    size_t n = lo->total;
    float *prm = tt_test_params(&c, lo, 31);
    tt_token *tok = tt_test_tokens(2, c.batch, c.ctx, 32);
    tt_optim_args o = {0.0f, 0.0f, 0.95f, 1e-8f, 0.0f, 0.0f, 1.0f, 1.0f, p, 4242, 6};
    float loss[3], norm, *m = malloc(n * 4), *m2 = malloc(n * 4);
    for (int k = 0; k < 3; k++) {
        o.step = k < 2 ? 6 : 7;
        CHECK(be->vt->set_state(be, prm, NULL, NULL, &st) == TT_OK);
        CHECK_MSG(be->vt->step(be, tok, 2, &o, &st) == TT_OK, "%s: %s", what, st.msg);
        CHECK(be->vt->step_result(be, &loss[k], &norm, &st) == TT_OK);
        CHECK(be->vt->get_state(be, NULL, k == 0 ? m : m2, NULL, &st) == TT_OK);
        if (k == 1) CHECK_MSG(loss[1] == loss[0] && memcmp(m, m2, n * 4) == 0, "%s: the same step differs", what);
    }
    CHECK_MSG(loss[2] != loss[0], "%s: step 7 drew the masks of step 6", what);
    double *dp = ref_from_float(prm, n), *rg = ref_alloc(n), *rg1 = ref_alloc(n);
    double rl = 0.0;
    for (int i = 0; i < 2; i++) {
        rl += 0.5 * ref_gpt_loss_grad_dropout(&c, lo, dp, tok + (size_t)i * c.batch * (c.ctx + 1), c.batch, rg1, p, 4242,
                                              6, 2, i);
        for (size_t j = 0; j < n; j++) rg[j] += 0.5 * rg1[j];
    }
    CHECK_MSG(fabs(loss[0] - rl) <= 1e-5 * fabs(rl), "%s: loss %.8g vs reference %.8g", what, loss[0], rl);
    compare_grads(what, lo, m, rg, 1e-4);
    /* the gradient without dropout is far from it: the masks are in play */
    double *rg0 = ref_alloc(n);
    for (int i = 0; i < 2; i++) {
        ref_gpt_loss_grad(&c, lo, dp, tok + (size_t)i * c.batch * (c.ctx + 1), c.batch, rg1);
        for (size_t j = 0; j < n; j++) rg0[j] += 0.5 * rg1[j];
    }
    double gmax = 0, dmax = 0;
    for (size_t j = 0; j < n; j++) gmax = fmax(gmax, fabs(rg[j])), dmax = fmax(dmax, fabs(rg[j] - rg0[j]));
    free(rg0);
    CHECK_MSG(dmax > 0.05 * gmax, "%s: dropout %.2f changed the gradient by only %.3g of its max", what, (double)p,
              dmax / gmax);
    /* eval never drops */
    float el = NAN;
    CHECK(be->vt->set_state(be, prm, NULL, NULL, &st) == TT_OK);
    CHECK(be->vt->eval(be, tok, c.batch, &el, &st) == TT_OK);
    double re = ref_gpt_loss_grad(&c, lo, dp, tok, c.batch, NULL);
    CHECK_MSG(fabs(el - re) <= 1e-5 * fabs(re), "%s: eval %.8g vs undropped reference %.8g", what, el, re);
    free(prm), free(tok), free(m), free(m2), free(dp), free(rg), free(rg1);
    tt_backend_destroy(be);
}

TT_TEST(dropout_step_matches_reference) {
    tt_model_config c = {2, 32, 2, 40, 2, TT_VOCAB, 0, 0, 0.0f, 0, 0.0f}; /* head size 16, two query blocks */
    check_dropout_step("dropout 0.1 L2 C32 H2 T40 B2", c, 3, 0.1f);
    tt_model_config c2 = {1, 20, 4, 13, 3, TT_VOCAB, 0, 0, 0.0f, 0, 0.0f}; /* head size 5: the row kernels */
    check_dropout_step("dropout 0.5 L1 C20 H4 T13 B3", c2, 2, 0.5f);
}

TT_TEST(bad_arguments_are_errors) {
    tt_model_config c = {1, 8, 2, 4, 2, TT_VOCAB, 0, 0, 0.0f, 0, 0.0f};
    tt_backend *be = tt_test_cpu_backend(&c, 1);
    if (!be) return;
    tt_status st;
    tt_token tok[2 * 5] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    tt_optim_args a = tt_test_optim_at(1e-3f, 1.0f, 1);
    float l;
    CHECK(be->vt->step(be, tok, 0, &a, &st) == TT_EINVAL);
    CHECK(be->vt->step(be, NULL, 1, &a, &st) == TT_EINVAL);
    CHECK(be->vt->eval(be, tok, 0, &l, &st) == TT_EINVAL);
    CHECK(be->vt->eval(be, tok, 3, &l, &st) == TT_EINVAL);
    CHECK(be->vt->set_state(be, NULL, NULL, NULL, &st) == TT_EINVAL);
    /* a token id outside the vocabulary (the last of the second micro-batch): refused before anything runs */
    float *g = malloc(be->layout.total * sizeof *g);
    tt_token big[2 * 2 * 5];
    for (int i = 0; i < 20; i++) big[i] = (tt_token)(i * 13 % 256);
    big[19] = 256;
    CHECK(be->vt->step(be, big, 2, &a, &st) == TT_EINVAL && strstr(st.msg, "256") && strstr(st.msg, "vocabulary"));
    CHECK(be->vt->eval(be, big + 10, 2, &l, &st) == TT_EINVAL);
    CHECK(be->vt->loss_and_grad(be, big + 10, &l, g, &st) == TT_EINVAL);
    free(g);
    tt_backend_destroy(be);
    tt_model_config bad = {1, 10, 3, 4, 2, TT_VOCAB, 0, 0, 0.0f, 0, 0.0f}; /* 10 % 3 != 0 */
    tt_backend *b2 = NULL;
    CHECK(tt_backend_cpu_create(&bad, &(tt_backend_opts){.threads = 1}, &b2, &st) == TT_EINVAL && b2 == NULL);
    CHECK(strlen(st.msg) > 0 && strchr(st.msg, '\n') == NULL);
}

TT_TEST(behemoth_plan_allocates) {
    const tt_preset *pr = tt_preset_find("behemoth");
    tt_model_config c = pr->cfg;
    uint64_t plan = tt_backend_cpu_plan_bytes(&c, 16);
    uint64_t state = 16ull * (uint64_t)pr->n_params; /* params, grads, m, v */
    if (sizeof(size_t) < 8) {
        /* a 32-bit address space (wasm32) cannot hold it: a clean refusal */
        tt_backend *be = NULL;
        tt_status st;
        CHECK(plan == 0);
        CHECK(tt_backend_cpu_create(&c, &(tt_backend_opts){.threads = 1}, &be, &st) == TT_ENOMEM && be == NULL);
        return;
    }
    double est = tt_config_train_bytes(&c);
    printf("     behemoth: plan %.2f GiB (params+grads+moments %.2f GiB), estimate %.2f GiB\n", plan / 1073741824.0,
           state / 1073741824.0, est / 1073741824.0);
    CHECK(plan > state);
    CHECK(plan < state + state / 4);   /* activations are small next to the state at B=1 */
    CHECK((double)plan <= est * 1.25 && (double)plan >= est * 0.75);
    /* sizes are 64-bit: the plan of a config past 4 GiB of activations too */
    tt_model_config big = {8, 4096, 32, 4096, 64, TT_VOCAB, 0, 0, 0.0f, 0, 0.0f};
    CHECK(tt_backend_cpu_plan_bytes(&big, 4) > (1ull << 32));
    /* the allocation itself succeeds (pages stay untouched until used) */
    tt_backend *be = NULL;
    tt_status st;
    int rc = tt_backend_cpu_create(&c, &(tt_backend_opts){.threads = 1}, &be, &st);
    CHECK_MSG(rc == TT_OK, "behemoth create: %s", st.msg);
    if (be) {
        CHECK((int64_t)be->layout.total == pr->n_params);
        CHECK(strstr(be->desc.device, "cpu") != NULL);
        tt_backend_destroy(be);
    }
}

int main(void) {
    RUN(preset_param_counts);
    RUN(init_is_deterministic);
    RUN(tiny_model_matches_reference);
    RUN(odd_model_matches_reference);
    RUN(lora_model_matches_reference);
    RUN(gpt2_variants_match_reference);
    RUN(big_vocab_head_runs_in_chunks);
    RUN(overfits_a_short_string);
    RUN(training_is_bit_identical_across_threads);
    RUN(grad_accumulation_matches_big_batch);
    RUN(adamw_step_matches_reference_with_clipping);
    RUN(dropout_step_matches_reference);
    RUN(bad_arguments_are_errors);
    RUN(behemoth_plan_allocates);
    return tt_test_summary();
}
