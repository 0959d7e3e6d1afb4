/* test_webgpu_split.c — parameter storage split over several GPU buffers
 * ("chunks", src/webgpu/plan.c) when params, grads and the AdamW moments
 * exceed one storage binding. The test hook TT_WEBGPU_MAX_BINDING_MIB (a
 * float, MiB) lowers the binding limit so that tiny, small and an odd-width
 * model (d_model 42: tensors at offsets not a multiple of 4, so chunks start
 * with a pad) split into 2..5 chunks; per model:
 *   - the chunks start at unit boundaries (tensor 2u of the layout) and each
 *     fits the limit;
 *   - loss and full gradient (loss_and_grad) bit-identical (memcmp) to the
 *     unsplit WebGPU run, and within 1e-5 of the CPU backend per tensor;
 *   - several AdamW steps (clipping active, one with 2 micro-batches): every
 *     loss and grad norm, then params, m and v bit-identical to the unsplit
 *     run; losses within 1e-5 of the CPU's, final weights close;
 *   - set_state / get_state round trip of distinct random params, m, v
 *     across the chunks (and m, v = NULL gives zeros);
 * and the refusals: a limit below the largest tensor names it in one line
 * (create and the preflight plan_bytes alike), a limit below a
 * pair that must share a buffer (wte + wpe) names both, a limit below an
 * activation names that buffer; the preflight accepts a limit that splits.
 * Small shapes (batch 2): lavapipe is slow. Skips (exit 0) without a WebGPU
 * library/adapter unless TT_REQUIRE_WEBGPU=1. */
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
#include "webgpu/webgpu_profile.h"

/* src/webgpu/backend.c (test accessor): chunk count; starts[i] = layout index of
 * chunk i's first parameter */

#define HOOK "TT_WEBGPU_MAX_BINDING_MIB"
#define MAXCH 64

static tt_backend *gpu_create(const tt_model_config *cfg, const char *limit_mib, tt_status *st) {
    tt_backend *be = NULL;
    if (limit_mib) setenv(HOOK, limit_mib, 1);
    else unsetenv(HOOK);
    int rc = tt_backend_webgpu_create(cfg, NULL, &be, st);
    unsetenv(HOOK);
    return rc == TT_OK ? be : NULL;
}

static void skip_or_fail_without_gpu(void) {
    tt_model_config c = {1, 32, 2, 16, 1, TT_VOCAB, 0, 0, 0.0f, 0, 0.0f};
    unsetenv(HOOK);
    tt_backend *be = tt_gtest_backend_or_skip(&c);
    printf("adapter: %s\n", be->desc.device);
    tt_backend_destroy(be);
}

static void random_tokens(tt_token *tok, size_t n, uint64_t seed) {
    for (size_t i = 0; i < n; i++) {
        uint64_t r = tt_rand_u64(seed, TT_STREAM_TEST, i);
        tok[i] = (r & 3) ? (uint8_t)(97 + (r >> 8) % 12) : (uint8_t)(r >> 16);
    }
}

static int same_bits(const float *a, const float *b, size_t n) { return memcmp(a, b, n * sizeof *a) == 0; }

static size_t first_diff(const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof *a) != 0) return i;
    return n;
}

/* the binding limit (bytes) the backend derives from the hook string */
static uint64_t hook_bytes(const char *mib) { return (uint64_t)(atof(mib) * 1048576.0); }

/* the chunks of be: 2..5, starting at units, each within lim bytes */
static void check_chunks(const tt_backend *be, uint64_t lim, int want_pad) {
    size_t starts[MAXCH];
    const tt_layout *lo = &be->layout;
    int n = tt_webgpu_param_chunks(be, starts, MAXCH);
    printf("  %d chunks, starting at", n);
    for (int i = 0; i < n && i < MAXCH; i++) printf(" %zu", starts[i]);
    printf(" (of %zu parameters, limit %llu bytes)\n", lo->total, (unsigned long long)lim);
    CHECK(n >= 2 && n <= 5);
    if (n < 1 || n > MAXCH) return;
    CHECK(starts[0] == 0);
    int padded = 0;
    for (int i = 0; i < n; i++) {
        int at_unit = 0;
        for (int t = 0; t < lo->n_tensors; t += 2) at_unit |= lo->t[t].offset == starts[i];
        CHECK_MSG(at_unit, "chunk %d starts at %zu, not at a unit (tensor 2u)", i, starts[i]);
        size_t end = i + 1 < n ? starts[i + 1] : lo->total;
        CHECK(end > starts[i]);
        CHECK_MSG(((starts[i] & 3) + (end - starts[i])) * 4 <= lim, "chunk %d: %zu floats over the limit", i,
                  end - starts[i]);
        padded |= (starts[i] & 3) != 0;
    }
    if (want_pad) CHECK_MSG(padded, "no chunk starts off a multiple of 4: the pad is not exercised");
}

/* tt_test_grad_err of a against the CPU's gradient over every tensor */
static double grad_err(const tt_layout *lo, const float *a, const float *cpu) {
    double *ref = tt_test_f64(cpu, lo->total);
    double e = tt_test_grad_err(lo, 0, lo->n_tensors, a, ref, 0, NULL);
    free(ref);
    return e;
}

#define N_STEPS 4

/* (1) + (2) on one model; limit_mib forces the split */
static void split_case(const char *name, const tt_model_config *cfg, const char *limit_mib, int want_pad) {
    tt_status st;
    printf("%s (L%d C%d NH%d T%d B%d), split at %s MiB:\n", name, cfg->n_layer, cfg->d_model, cfg->n_head, cfg->ctx,
           cfg->batch, limit_mib);
    tt_backend *one = gpu_create(cfg, NULL, &st);
    if (!one) fprintf(stderr, "  unsplit webgpu: %s\n", st.msg);
    tt_backend *sp = gpu_create(cfg, limit_mib, &st);
    if (!sp) fprintf(stderr, "  split webgpu: %s\n", st.msg);
    tt_backend *cpu = NULL;
    CHECK(tt_backend_cpu_create(cfg, &(tt_backend_opts){.threads = 0}, &cpu, &st) == TT_OK);
    CHECK(one && sp && cpu);
    if (!one || !sp || !cpu) goto out;
    CHECK(tt_webgpu_param_chunks(one, NULL, 0) == 1);
    check_chunks(sp, hook_bytes(limit_mib), want_pad);

    const size_t P = cpu->layout.total;
    const size_t micro = (size_t)cfg->batch * (cfg->ctx + 1);
    float *p0 = malloc(P * sizeof *p0);
    float *g1 = malloc(P * sizeof *g1), *g2 = malloc(P * sizeof *g2), *gc = malloc(P * sizeof *gc);
    float *a[3], *b[3], *c = malloc(P * sizeof *c);
    for (int i = 0; i < 3; i++) a[i] = malloc(P * sizeof *a[i]), b[i] = malloc(P * sizeof *b[i]);
    tt_token *tok = malloc((2 * micro) * sizeof *tok);
    tt_model_init_params(cfg, &cpu->layout, 1234, p0, NULL);
    tt_backend *all[3] = {one, sp, cpu};
    for (int i = 0; i < 3; i++) CHECK(all[i]->vt->set_state(all[i], p0, NULL, NULL, &st) == TT_OK);

    /* (1a) loss and gradient */
    random_tokens(tok, micro, 99);
    tt_test_poison(g1, P), tt_test_poison(g2, P);
    float l1 = 0, l2 = -1, lc = 0;
    CHECK(one->vt->loss_and_grad(one, tok, &l1, g1, &st) == TT_OK);
    int rc = sp->vt->loss_and_grad(sp, tok, &l2, g2, &st);
    if (rc) fprintf(stderr, "  split loss_and_grad: %s\n", st.msg);
    CHECK(rc == TT_OK);
    CHECK(cpu->vt->loss_and_grad(cpu, tok, &lc, gc, &st) == TT_OK);
    CHECK(same_bits(&l1, &l2, 1));
    size_t d = first_diff(g1, g2, P);
    CHECK_MSG(d == P, "gradient differs from the unsplit run at %zu: %.9g vs %.9g", d, d < P ? g1[d] : 0.0,
              d < P ? g2[d] : 0.0);
    double ge = grad_err(&cpu->layout, g2, gc);
    printf("  loss split %.8f unsplit %.8f cpu %.8f; gradient bit-identical %s, vs cpu worst rel %.3g\n", l2, l1, lc,
           d == P ? "yes" : "NO", ge);
    CHECK_CLOSE(l2, lc, 1e-5, 0);
    CHECK(ge <= 1e-5);

    /* (1b) AdamW steps: clipping active (clip below the norm), weight decay,
     * one step of 2 micro-batches */
    double worst_loss = 0;
    int steps_same = 1;
    for (int k = 0; k < N_STEPS; k++) {
        const int nm = k == 2 ? 2 : 1;
        random_tokens(tok, nm * micro, 1000 + (uint64_t)k);
        tt_optim_args o = {0};
        o.lr = 3e-3f, o.beta1 = 0.9f, o.beta2 = 0.95f, o.eps = 1e-8f, o.weight_decay = 0.1f, o.clip = 0.25f;
        o.bc1 = (float)(1.0 - pow(0.9, k + 1));
        o.bc2 = (float)(1.0 - pow(0.95, k + 1));
        float loss[3] = {0, 0, 0}, norm[3] = {0, 0, 0};
        for (int i = 0; i < 3; i++) {
            rc = all[i]->vt->step(all[i], tok, nm, &o, &st);
            if (!rc) rc = all[i]->vt->step_result(all[i], &loss[i], &norm[i], &st);
            if (rc) fprintf(stderr, "  step %d on %s: %s\n", k + 1, i == 1 ? "split" : all[i]->desc.name, st.msg);
            CHECK(rc == TT_OK);
        }
        int same = same_bits(&loss[0], &loss[1], 1) && same_bits(&norm[0], &norm[1], 1);
        steps_same &= same;
        CHECK_MSG(same, "step %d: split loss %.9g norm %.9g, unsplit %.9g %.9g", k + 1, loss[1], norm[1], loss[0],
                  norm[0]);
        CHECK(norm[1] > o.clip); /* the clip (and so the global norm) acts on every chunk */
        double e = fabs((double)loss[1] - loss[2]) / fabs((double)loss[2]);
        if (e > worst_loss) worst_loss = e;
        CHECK_CLOSE(loss[1], loss[2], 1e-5, 0);
        CHECK_CLOSE(norm[1], norm[2], 1e-4, 0);
        if (k == 0) printf("  step 1: loss %.8f (cpu %.8f), pre-clip norm %.6f (cpu %.6f)\n", loss[1], loss[2], norm[1], norm[2]);
    }
    for (int i = 0; i < 3; i++) tt_test_poison(a[i], P), tt_test_poison(b[i], P);
    CHECK(one->vt->get_state(one, a[0], a[1], a[2], &st) == TT_OK);
    CHECK(sp->vt->get_state(sp, b[0], b[1], b[2], &st) == TT_OK);
    CHECK(cpu->vt->get_state(cpu, c, NULL, NULL, &st) == TT_OK);
    static const char *what[3] = {"params", "adam m", "adam v"};
    int state_same = 1;
    for (int i = 0; i < 3; i++) {
        d = first_diff(a[i], b[i], P);
        state_same &= d == P;
        CHECK_MSG(d == P, "%s after %d steps differ from the unsplit run at %zu", what[i], N_STEPS, d);
    }
    double dmax = 0, pmax = 0;
    for (size_t j = 0; j < P; j++) {
        double e = fabs((double)b[0][j] - c[j]);
        if (!(e <= dmax)) dmax = e;
        if (fabs(c[j]) > pmax) pmax = fabs(c[j]);
    }
    printf("  %d steps: losses/norms bit-identical %s, params/m/v bit-identical %s; vs cpu: worst loss rel %.3g, "
           "weights max |diff| %.3g (max |w| %.3g)\n",
           N_STEPS, steps_same ? "yes" : "NO", state_same ? "yes" : "NO", worst_loss, dmax, pmax);
    CHECK(dmax <= 1e-3 * pmax);

    /* (2) set_state / get_state across the chunks: distinct random values */
    tt_test_fill(a[0], P, 501, -1.0f, 1.0f);
    tt_test_fill(a[1], P, 502, -0.1f, 0.1f);
    tt_test_fill(a[2], P, 503, 0.0f, 0.01f);
    CHECK(sp->vt->set_state(sp, a[0], a[1], a[2], &st) == TT_OK);
    for (int i = 0; i < 3; i++) tt_test_poison(b[i], P);
    CHECK(sp->vt->get_state(sp, b[0], b[1], b[2], &st) == TT_OK);
    for (int i = 0; i < 3; i++) CHECK_MSG(same_bits(a[i], b[i], P), "%s round trip differs", what[i]);
    /* only params and m asked for: v untouched in the caller's array */
    tt_test_poison(b[0], P), tt_test_poison(b[1], P);
    memcpy(b[2], p0, P * sizeof *p0);
    CHECK(sp->vt->get_state(sp, b[0], b[1], NULL, &st) == TT_OK);
    CHECK(same_bits(a[0], b[0], P) && same_bits(a[1], b[1], P) && same_bits(b[2], p0, P));
    /* m, v NULL: zeros in every chunk */
    CHECK(sp->vt->set_state(sp, p0, NULL, NULL, &st) == TT_OK);
    tt_test_poison(b[1], P), tt_test_poison(b[2], P);
    CHECK(sp->vt->get_state(sp, b[0], b[1], b[2], &st) == TT_OK);
    int zeros = same_bits(b[0], p0, P);
    for (size_t j = 0; j < P; j++) zeros &= b[1][j] == 0.0f && b[2][j] == 0.0f;
    CHECK(zeros);
    printf("  set_state/get_state round trip across chunks checked\n");

    free(p0), free(g1), free(g2), free(gc), free(c), free(tok);
    for (int i = 0; i < 3; i++) free(a[i]), free(b[i]);
out:
    tt_backend_destroy(one);
    tt_backend_destroy(sp);
    tt_backend_destroy(cpu);
}

/* the limit (MiB, as the hook's string) that splits the parameter storage
 * of cfg about three ways */
static void third(const tt_model_config *cfg, char *buf, size_t cap) {
    double bytes = (double)tt_config_param_count(cfg) * 4.0;
    snprintf(buf, cap, "%.6f", bytes / 3.0 / 1048576.0);
}

static tt_model_config with_batch(const char *preset, int batch) {
    tt_model_config c = tt_preset_find(preset)->cfg;
    c.batch = batch;
    return c;
}

TT_TEST(test_split_tiny) {
    tt_model_config c = with_batch("tiny", 2);
    char lim[32];
    third(&c, lim, sizeof lim);
    split_case("tiny", &c, lim, 0);
}

TT_TEST(test_split_small) {
    tt_model_config c = with_batch("small", 2);
    char lim[32];
    third(&c, lim, sizeof lim);
    split_case("small", &c, lim, 0);
}

/* d_model 42: units start at offsets that are not multiples of 4 */
TT_TEST(test_split_odd_width) {
    tt_model_config c = {2, 42, 3, 16, 2, TT_VOCAB, 0, 0, 0.0f, 0, 0.0f};
    char lim[32];
    third(&c, lim, sizeof lim);
    split_case("odd width", &c, lim, 1);
}

/* one line, the words asked for, EUNSUP; the preflight says the same */
static void refusal(const tt_model_config *cfg, const char *limit_mib, const char *want1, const char *want2) {
    tt_status st;
    tt_status_clear(&st);
    setenv(HOOK, limit_mib, 1);
    tt_backend *be = NULL;
    int rc = tt_backend_webgpu_create(cfg, NULL, &be, &st);
    printf("  limit %s MiB: %s\n", limit_mib, st.msg);
    CHECK(rc == TT_EUNSUP && be == NULL);
    tt_backend_destroy(be);
    CHECK(strchr(st.msg, '\n') == NULL);
    CHECK_MSG(strstr(st.msg, want1) != NULL, "message lacks '%s'", want1);
    if (want2) CHECK_MSG(strstr(st.msg, want2) != NULL, "message lacks '%s'", want2);
    CHECK(strstr(st.msg, "maxStorageBufferBindingSize") != NULL);
    /* the preflight of cfg on a small backend created with the hook set
     * (hooks are read when the backend is created) */
    tt_model_config probe = {1, 32, 2, 16, 1, TT_VOCAB, 0, 0, 0.0f, 0, 0.0f};
    tt_backend *g = gpu_create(&probe, limit_mib, &st);
    CHECK(g != NULL);
    if (g) {
        tt_status fs;
        tt_status_clear(&fs);
        CHECK(g->vt->plan_bytes(g, cfg, &(uint64_t){0}, &fs) == TT_EUNSUP);
        CHECK_MSG(strstr(fs.msg, want1) != NULL, "preflight message lacks '%s': %s", want1, fs.msg);
        tt_backend_destroy(g);
    }
    unsetenv(HOOK);
}

TT_TEST(test_refusals) {
    tt_model_config c = with_batch("tiny", 2); /* wte 48 KiB, wte + wpe 54 KiB, logits 64 KiB */
    const double wte = 256.0 * 48 * 4, pair = (256.0 + 32) * 48 * 4;
    char lim[32];
    /* below the largest single tensor */
    snprintf(lim, sizeof lim, "%.6f", (wte - 4096) / 1048576.0);
    refusal(&c, lim, "parameter tensor wte.weight needs", NULL);
    /* wte fits alone, but wte + wpe (one buffer for the embedding) does not */
    snprintf(lim, sizeof lim, "%.6f", (wte + pair) / 2 / 1048576.0);
    refusal(&c, lim, "wte.weight and wpe.weight must share one buffer", NULL);
    /* parameters split fine, an activation does not fit: named */
    tt_model_config t16 = with_batch("tiny", 16); /* fc 384 KiB, logits 512 KiB */
    refusal(&t16, "0.3", "MiB fc buffer", NULL);

    /* the preflight accepts a limit that splits, and counts all four copies;
     * each preflight on a small backend created with the hooks it plans by */
    tt_status st;
    tt_model_config probe = {1, 32, 2, 16, 1, TT_VOCAB, 0, 0, 0.0f, 0, 0.0f};
    tt_backend *g = gpu_create(&probe, NULL, &st);
    setenv("TT_WEBGPU_ATTN_DS", "0",
           1); /* without the attention dS scratch (its own limit check: the pair runs where it does not fit) */
    tt_backend *g_one = gpu_create(&probe, NULL, &st);
    third(&c, lim, sizeof lim);
    tt_backend *g_split = gpu_create(&probe, lim, &st);
    unsetenv("TT_WEBGPU_ATTN_DS");
    CHECK(g && g_one && g_split);
    if (g && g_one && g_split) {
        uint64_t b_one = 0, b_split = 0, b_ds = 0;
        CHECK(g->vt->plan_bytes(g, &c, &b_ds, &st) == TT_OK);
        CHECK(g_one->vt->plan_bytes(g_one, &c, &b_one, &st) == TT_OK);
        CHECK(b_ds > b_one); /* tiny: head size 16, the scratch counted */
        int rc = g_split->vt->plan_bytes(g_split, &c, &b_split, &st);
        if (rc) fprintf(stderr, "  preflight at %s MiB: %s\n", lim, st.msg);
        CHECK(rc == TT_OK);
        printf("  preflight: fits unsplit (%llu bytes) and split at %s MiB (%llu bytes)\n", (unsigned long long)b_one, lim,
               (unsigned long long)b_split);
        CHECK(b_split >= 16.0 * tt_config_param_count(&c));
        CHECK(b_split >= b_one && b_split <= b_one + 1024); /* pads and masks per chunk only */
    }
    tt_backend_destroy(g);
    tt_backend_destroy(g_one);
    tt_backend_destroy(g_split);
}

/* 1 when a step of be has a batched q, k, v weight-gradient site (profile
 * tag "... x3 ... TA ..."); profiling clobbers be's state */
static int has_batched_dw(tt_backend *be) {
    tt_webgpu_profile_fn prof = (tt_webgpu_profile_fn)be->vt->get_proc(be, "webgpu.profile");
    tt_webgpu_prof rows[256];
    int n = 0, found = 0;
    tt_status st;
    if (!prof || prof(be, 1, 1, rows, 256, &n, &st) != TT_OK) return -1;
    for (int i = 0; i < n; i++)
        if (strcmp(rows[i].kernel, "matmul") == 0 && strstr(rows[i].tag, " x3 ") && strstr(rows[i].tag, " TA"))
            found = 1;
    return found;
}

/* the q, k, v projections and their weight gradients as three dispatches
 * each (hook TT_WEBGPU_QKV_BATCH=0: each projection with the batch's group
 * plan, each weight gradient with its lone plan) give the batched run's
 * loss and gradient bit for bit. The weight gradients' batch is run in
 * each of its layouts (the extra hooks): bias gradients folded (a ones row,
 * the products' outputs adjacent) or not (three column sums, the outputs
 * (C+1)*C apart), unsplit (the matmul writes the strided outputs) or
 * split-K (the reduction does). */
static void qkv_pair(const char *biasfold, const char *splitk) {
    tt_model_config c = with_batch("small", 2);
    tt_status st;
    if (biasfold) setenv("TT_WEBGPU_BIASFOLD", biasfold, 1);
    if (splitk) setenv("TT_WEBGPU_SPLITK", splitk, 1);
    tt_backend *b1 = gpu_create(&c, NULL, &st), *b3 = NULL;
    setenv("TT_WEBGPU_QKV_BATCH", "0", 1);
    CHECK(tt_backend_webgpu_create(&c, NULL, &b3, &st) == TT_OK);
    unsetenv("TT_WEBGPU_QKV_BATCH");
    CHECK(b1 && b3);
    if (b1 && b3) {
        const size_t P = b1->layout.total, micro = (size_t)c.batch * (c.ctx + 1);
        float *p0 = malloc(P * sizeof *p0), *g1 = malloc(P * sizeof *g1), *g3 = malloc(P * sizeof *g3);
        tt_token *tok = malloc((micro) * sizeof *tok);
        tt_model_init_params(&c, &b1->layout, 77, p0, NULL);
        random_tokens(tok, micro, 5);
        float l1 = 0, l3 = -1;
        CHECK(b1->vt->set_state(b1, p0, NULL, NULL, &st) == TT_OK && b3->vt->set_state(b3, p0, NULL, NULL, &st) == TT_OK);
        CHECK(b1->vt->loss_and_grad(b1, tok, &l1, g1, &st) == TT_OK);
        CHECK(b3->vt->loss_and_grad(b3, tok, &l3, g3, &st) == TT_OK);
        size_t d = first_diff(g1, g3, P);
        printf("  q, k, v unbatched (bias fold %s, split-K %s): loss %.8f vs %.8f, gradient bit-identical %s\n",
               biasfold ? biasfold : "planned", splitk ? splitk : "planned", l3, l1, d == P ? "yes" : "NO");
        CHECK(same_bits(&l1, &l3, 1));
        CHECK_MSG(d == P, "gradient differs at %zu", d);
        /* the batched backend has the batched weight-gradient site, the other not */
        CHECK_MSG(has_batched_dw(b1) == 1, "no batched q, k, v weight-gradient site");
        CHECK_MSG(has_batched_dw(b3) == 0, "a batched q, k, v weight-gradient site with the hook off");
        free(p0), free(g1), free(g3), free(tok);
    }
    unsetenv("TT_WEBGPU_BIASFOLD");
    unsetenv("TT_WEBGPU_SPLITK");
    tt_backend_destroy(b1);
    tt_backend_destroy(b3);
}

TT_TEST(test_qkv_unbatched) {
    qkv_pair(NULL, NULL); /* small at batch 2: folded, unsplit */
    qkv_pair("0", NULL);
    qkv_pair("0", "3");
    qkv_pair("1", "3");
}

int main(void) {
    skip_or_fail_without_gpu();
    RUN(test_qkv_unbatched);
    RUN(test_split_tiny);
    RUN(test_split_small);
    RUN(test_split_odd_width);
    RUN(test_refusals);
    return tt_test_summary();
}
