/* test_webgpu_lora.c — LoRA on the WebGPU backend (src/webgpu/lora.c and
 * the adapters in schedule.c's schedule) against the CPU:
 *   - the merged model: out = x W + b + s (x A) B is the plain model with
 *     W' = W + s A B, so one LoRA forward + backward on the GPU must give
 *     the loss of W' on the CPU backend without LoRA, dA = s dW' B^T and
 *     dB = s A^T dW' from that model's dW' (float64 on the host), and a
 *     zero gradient for every frozen base tensor; eval the same loss;
 *   - a LoRA fine-tune (tiny, rank 8, every target, fortunes batches, the
 *     CLI's schedule) on the GPU against the same run on the CPU backend
 *     with LoRA (every step's loss within 0.1%, grad norms within 1%, the
 *     adapters close) and against a host reference built on the merged
 *     model (each step: merge, CPU loss + gradient, project to the adapters,
 *     float64 AdamW with clipping): the base tensors bit-identical to their
 *     start on both backends, the adapters moved;
 *   - parameter storage split into chunks, one of them holding base tensors
 *     and adapters: steps bit-identical to the unsplit backend.
 * Skips (exit 0) without a WebGPU adapter unless TT_REQUIRE_WEBGPU=1.
 * TT_LORA_STEPS sets the step count (default 30). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "gpu_test.h"
#include "model.h"
#include "model_test.h"
#include "ref64.h"
#include "rng.h"
#include "train/trainer.h"
#include "tt_test.h"
#include "webgpu/webgpu_profile.h"

static tt_model_config BASE, LCFG; /* the plain model and the same with LoRA */
static tt_layout BLO, LLO;
static tt_corpus CORPUS;
static int HAVE_CORPUS;
static tt_backend *GPU, *CPU_BASE, *CPU_LORA;

static tt_backend *make_cpu(const tt_model_config *cfg) {
    tt_status st;
    tt_backend *be = NULL;
    if (tt_backend_cpu_create(cfg, &(tt_backend_opts){0}, &be, &st)) {
        fprintf(stderr, "cpu backend: %s\n", st.msg);
        exit(1);
    }
    return be;
}

/* ---- the merged model ----
 * Target t of layer l as base weight pieces: c_attn is q|k|v (three (C,C)
 * matrices side by side), the others one matrix (in, out). */
typedef struct {
    int64_t in, out, width; /* width of one piece */
    int n;
    size_t off[3]; /* base weight pieces (in, width) */
    size_t a, b;   /* lora_a (in, R), lora_b (R, out) */
} target_view;

static int view(int l, int t, target_view *v) {
    const int ia = tt_layout_lora_index(&LCFG, l, t, TT_LORA_A);
    if (ia < 0) return 0;
    static const tt_tensor_kind K[4] = {TT_QW, TT_OW, TT_FCW, TT_PROJW};
    tt_lora_dims(&LCFG, t, &v->in, &v->out);
    v->n = t == TT_LORA_C_ATTN ? 3 : 1;
    v->width = v->out / v->n;
    for (int j = 0; j < v->n; j++)
        v->off[j] = tt_layout_offset(&LLO, &LCFG, t == TT_LORA_C_ATTN ? (tt_tensor_kind)(TT_QW + 2 * j) : K[t], l);
    v->a = LLO.t[ia].offset;
    v->b = LLO.t[ia + 1].offset;
    return 1;
}

static size_t wpos(const target_view *v, int64_t i, int64_t o) {
    return v->off[o / v->width] + (size_t)(i * v->width + o % v->width);
}

/* The merged weights and the adapters' gradient, element (i, o) of one
 * adapted weight at a time: p the LoRA model's parameters, s = alpha / R.
 * merge: base[W'] = W + s sum_r A[i,r] B[r,o];
 * project (from the merged model's gradient gb): dA[i,r] += s gb[W'] B[r,o],
 * dB[r,o] += s A[i,r] gb[W']. */
typedef struct {
    const float *p, *gb;
    float *base;
    double *g;
} elem_ctx;

static void merge_elem(const target_view *v, int64_t i, int64_t o, const elem_ctx *c) {
    const int R = LCFG.lora_rank;
    double acc = 0;
    for (int r = 0; r < R; r++) acc += (double)c->p[v->a + i * R + r] * c->p[v->b + r * v->out + o];
    c->base[wpos(v, i, o)] = (float)(c->p[wpos(v, i, o)] + tt_lora_scale(&LCFG) * acc);
}

static void project_elem(const target_view *v, int64_t i, int64_t o, const elem_ctx *c) {
    const int R = LCFG.lora_rank;
    const double d = tt_lora_scale(&LCFG) * c->gb[wpos(v, i, o)];
    for (int r = 0; r < R; r++) {
        c->g[v->a + i * R + r] += d * c->p[v->b + r * v->out + o];
        c->g[v->b + r * v->out + o] += d * c->p[v->a + i * R + r];
    }
}

static void each_adapted(void (*f)(const target_view *, int64_t, int64_t, const elem_ctx *), const elem_ctx *c) {
    for (int l = 0; l < LCFG.n_layer; l++)
        for (int t = 0; t < TT_LORA_N_TARGETS; t++) {
            target_view v;
            if (!view(l, t, &v)) continue;
            for (int64_t i = 0; i < v.in; i++)
                for (int64_t o = 0; o < v.out; o++) f(&v, i, o, c);
        }
}

/* base (BLO.total) = the base of p with W' = W + s A B on every target */
static void merge(const float *p, float *base) {
    memcpy(base, p, BLO.total * sizeof *base);
    each_adapted(merge_elem, &(elem_ctx){p, NULL, base, NULL});
}

/* g (LLO.total; base part zero) = the adapters' gradient from gb */
static void project(const float *p, const float *gb, double *g) {
    memset(g, 0, LLO.total * sizeof *g);
    each_adapted(project_elem, &(elem_ctx){p, gb, NULL, g});
}

static void random_tokens(tt_token *tok, size_t n, uint64_t seed) {
    for (size_t i = 0; i < n; i++) {
        uint64_t r = tt_rand_u64(seed, TT_STREAM_TEST, i);
        tok[i] = (r & 3) ? (uint8_t)(97 + (r >> 8) % 12) : (uint8_t)(r >> 16);
    }
}

/* the LoRA model's init with lora_b drawn too (it starts at zero, where
 * dA is zero and the forward ignores the adapters) */
static float *lora_params(uint64_t seed, float b_scale) {
    float *p = malloc(LLO.total * sizeof *p);
    tt_model_init_params(&LCFG, &LLO, seed, p, NULL);
    for (int i = LLO.n_base; i < LLO.n_tensors; i++)
        if (LLO.t[i].kind == TT_LORA_B && b_scale > 0)
            tt_test_fill(p + LLO.t[i].offset, LLO.t[i].numel, seed + 1000 + (uint64_t)i, -b_scale, b_scale);
    return p;
}


TT_TEST(test_lora_vs_merged) {
    tt_status st;
    float *p = lora_params(7, 0.05f), *base = malloc(BLO.total * sizeof *base);
    merge(p, base);
    CHECK(GPU->vt->set_state(GPU, p, NULL, NULL, &st) == TT_OK);
    CHECK(CPU_BASE->vt->set_state(CPU_BASE, base, NULL, NULL, &st) == TT_OK);
    size_t ntok = (size_t)LCFG.batch * (LCFG.ctx + 1);
    tt_token *tok = malloc((ntok) * sizeof *tok);
    random_tokens(tok, ntok, 11);
    float *gb = malloc(BLO.total * sizeof *gb), *gg = malloc(LLO.total * sizeof *gg);
    double *ref = malloc(LLO.total * sizeof *ref);
    tt_test_poison(gg, LLO.total);
    float lc = 0, lg = 0;
    CHECK(CPU_BASE->vt->loss_and_grad(CPU_BASE, tok, &lc, gb, &st) == TT_OK);
    int rc = GPU->vt->loss_and_grad(GPU, tok, &lg, gg, &st);
    if (rc) fprintf(stderr, "gpu loss_and_grad: %s\n", st.msg);
    CHECK(rc == TT_OK);
    printf("  loss merged cpu %.7f lora gpu %.7f\n", lc, lg);
    CHECK_CLOSE(lg, lc, 1e-5, 0);
    project(p, gb, ref);
    const char *worst = "";
    double e = tt_test_grad_err(&LLO, LLO.n_base, LLO.n_tensors, gg, ref, 0, &worst); /* the adapters */
    printf("  adapter gradients: worst rel err %.3g (%s)\n", e, worst);
    CHECK(e <= 1e-4);
    int frozen_zero = 1;
    for (size_t j = 0; j < BLO.total; j++) frozen_zero &= gg[j] == 0.0f;
    CHECK_MSG(frozen_zero, "a frozen base tensor got a gradient");
    /* eval: the same forward, fewer rows */
    float ec = 0, eg = 0;
    int B = LCFG.batch > 1 ? LCFG.batch - 1 : 1;
    CHECK(CPU_BASE->vt->eval(CPU_BASE, tok, B, &ec, &st) == TT_OK);
    CHECK(GPU->vt->eval(GPU, tok, B, &eg, &st) == TT_OK);
    CHECK_CLOSE(eg, ec, 1e-5, 0);
    free(p), free(base), free(tok), free(gb), free(gg), free(ref);
}

/* ---- the fine-tune ---- */

static void product_config(tt_train_config *tc) {
    tt_train_config_default(tc, 2000); /* the CLI's run: warmup 100, cosine to lr/10 */
    tc->lr = 1e-3f;
    tc->min_lr = tc->lr / 10.0f;
}

static tt_optim_args args_at(const tt_train_config *tc, int k) {
    tt_optim_args o = {0};
    o.lr = tt_lr_at(tc, k);
    o.beta1 = tc->beta1, o.beta2 = tc->beta2, o.eps = tc->eps, o.weight_decay = tc->weight_decay, o.clip = tc->clip;
    o.bc1 = (float)(1.0 - pow((double)tc->beta1, k + 1));
    o.bc2 = (float)(1.0 - pow((double)tc->beta2, k + 1));
    return o;
}

/* one step of the host reference: merged CPU loss + gradient, the adapters'
 * gradient, clip + AdamW (ref64.h's, float64 moments) on the adapters alone
 * (the trainable tensors of the LoRA layout; none of them decays) */
static void ref_step(float *p, double *m, double *v, double *g, float *base, float *gb, const tt_token *tok,
                     const tt_optim_args *o, float *loss, float *norm) {
    tt_status st;
    merge(p, base);
    CHECK(CPU_BASE->vt->set_state(CPU_BASE, base, NULL, NULL, &st) == TT_OK);
    CHECK(CPU_BASE->vt->loss_and_grad(CPU_BASE, tok, loss, gb, &st) == TT_OK);
    project(p, gb, g);
    double *pd = ref_from_float(p, LLO.total);
    *norm = (float)ref_adamw_update(pd, g, m, v, &LLO, o);
    for (size_t j = BLO.total; j < LLO.total; j++) p[j] = (float)pd[j];
    free(pd);
}

static int base_unchanged(tt_backend *be, const float *p0, float *buf) {
    tt_status st;
    if (be->vt->get_state(be, buf, NULL, NULL, &st)) return 0;
    return memcmp(buf, p0, BLO.total * sizeof *buf) == 0;
}

TT_TEST(test_lora_finetune) {
    tt_status st;
    if (!HAVE_CORPUS) {
        fprintf(stderr, "  no corpus: the fine-tune needs the default corpus (fortunes)\n");
        CHECK(HAVE_CORPUS);
        return;
    }
    const char *e = getenv("TT_LORA_STEPS");
    const int steps = e && atoi(e) > 0 ? atoi(e) : 30;
    tt_train_config tc;
    product_config(&tc);
    float *p0 = lora_params(tc.seed, 0.0f); /* the product's init: lora_b = 0 */
    const size_t P = LLO.total, micro = (size_t)LCFG.batch * (LCFG.ctx + 1);
    float *pr = malloc(P * sizeof *pr), *base = malloc(BLO.total * sizeof *base), *gb = malloc(BLO.total * sizeof *gb);
    double *m = calloc(P, sizeof *m), *v = calloc(P, sizeof *v), *g = malloc(P * sizeof *g);
    memcpy(pr, p0, P * sizeof *pr);
    CHECK(GPU->vt->set_state(GPU, p0, NULL, NULL, &st) == TT_OK);
    CHECK(CPU_LORA->vt->set_state(CPU_LORA, p0, NULL, NULL, &st) == TT_OK);
    tt_token *tok = malloc((micro) * sizeof *tok);
    double worst[2] = {0, 0}, worst_norm[2] = {0, 0};
    float first = 0, last = 0;
    for (int k = 0; k < steps; k++) {
        tt_batch_train(&CORPUS, tc.seed, (int64_t)k * LCFG.batch, LCFG.batch, LCFG.ctx, tok);
        const tt_optim_args o = args_at(&tc, k);
        float lr = 0, nr = 0, lc = 0, nc = 0, lg = 0, ng = 0;
        ref_step(pr, m, v, g, base, gb, tok, &o, &lr, &nr);
        CHECK(CPU_LORA->vt->step(CPU_LORA, tok, 1, &o, &st) == TT_OK);
        CHECK(CPU_LORA->vt->step_result(CPU_LORA, &lc, &nc, &st) == TT_OK);
        int rc = GPU->vt->step(GPU, tok, 1, &o, &st);
        if (!rc) rc = GPU->vt->step_result(GPU, &lg, &ng, &st);
        if (rc) {
            fprintf(stderr, "gpu step %d: %s\n", k, st.msg);
            CHECK(rc == TT_OK);
            break;
        }
        const double ec = fabs((double)lg - lc) / fabs((double)lc), er = fabs((double)lg - lr) / fabs((double)lr);
        const double nc_e = fabs((double)ng - nc) / fabs((double)nc), nr_e = fabs((double)ng - nr) / fabs((double)nr);
        worst[0] = ec > worst[0] ? ec : worst[0], worst[1] = er > worst[1] ? er : worst[1];
        worst_norm[0] = nc_e > worst_norm[0] ? nc_e : worst_norm[0];
        worst_norm[1] = nr_e > worst_norm[1] ? nr_e : worst_norm[1];
        if (k < 3 || k == steps - 1 || !(ec <= 1e-3 && er <= 1e-3) || getenv("TT_PARITY_VERBOSE"))
            printf("  step %3d loss gpu %.6f cpu %.6f merged-ref %.6f  norm gpu %.5f cpu %.5f ref %.5f\n", k + 1, lg,
                   lc, lr, ng, nc, nr);
        CHECK(ec <= 1e-3 && er <= 1e-3);
        if (k == 0) first = lg;
        last = lg;
    }
    printf("  %d steps rank %d: worst loss rel diff gpu-cpu %.3g, gpu-ref %.3g; grad norm %.3g, %.3g\n", steps,
           LCFG.lora_rank, worst[0], worst[1], worst_norm[0], worst_norm[1]);
    CHECK(worst_norm[0] <= 1e-2 && worst_norm[1] <= 1e-2);
    CHECK(last < first); /* the adapters learn */
    float *pg = malloc(P * sizeof *pg), *pc = malloc(P * sizeof *pc);
    CHECK_MSG(base_unchanged(GPU, p0, pg), "webgpu changed a frozen base tensor");
    CHECK_MSG(base_unchanged(CPU_LORA, p0, pc), "cpu changed a frozen base tensor");
    double maxd = 0, maxdc = 0, maxmove = 0;
    for (size_t j = BLO.total; j < P; j++) {
        double d = fabs((double)pg[j] - pr[j]), dc = fabs((double)pg[j] - pc[j]), mv = fabs((double)pr[j] - p0[j]);
        if (!(d <= maxd)) maxd = d;
        if (!(dc <= maxdc)) maxdc = dc;
        if (mv > maxmove) maxmove = mv;
    }
    printf("  adapters: max |gpu - ref| %.3g, max |gpu - cpu| %.3g, max |moved| %.3g\n", maxd, maxdc, maxmove);
    CHECK(maxmove > 0);
    CHECK(maxd <= 0.02 * maxmove && maxdc <= 0.02 * maxmove);
    free(p0), free(pr), free(base), free(gb), free(m), free(v), free(g), free(tok), free(pg), free(pc);
}

/* src/webgpu/backend.c (test accessor): chunk count; starts[i] = the first
 * parameter of chunk i */

/* Parameter storage split into chunks (the test hook
 * TT_WEBGPU_MAX_BINDING_MIB): a few steps bit-identical to the unsplit
 * backend (losses, grad norms, params, m, v). The frozen base is in chunks
 * of its own (no chunk holds both base tensors and adapters), which hold no
 * gradients or moments: the LoRA model's plan takes less device memory than
 * the plain model's, whose every tensor has params, grads, m and v. */
TT_TEST(test_lora_split) {
    tt_status st;
    static const char *limits[] = {"0.07", "0.1", "0.15"};
    const size_t P = LLO.total, micro = (size_t)LCFG.batch * (LCFG.ctx + 1);
    int straddled = 0;
    float *p0 = lora_params(5, 0.05f);
    tt_token *tok = malloc((micro) * sizeof *tok);
    float *a[3], *b[3];
    for (int i = 0; i < 3; i++) a[i] = malloc(P * sizeof(float)), b[i] = malloc(P * sizeof(float));
    for (size_t li = 0; li < sizeof limits / sizeof *limits; li++) {
        setenv("TT_WEBGPU_MAX_BINDING_MIB", limits[li], 1);
        tt_backend *sp = NULL;
        int rc = tt_backend_webgpu_create(&LCFG, NULL, &sp, &st);
        unsetenv("TT_WEBGPU_MAX_BINDING_MIB");
        if (rc) fprintf(stderr, "  split backend (%s MiB): %s\n", limits[li], st.msg);
        CHECK(rc == TT_OK);
        if (rc) continue;
        size_t starts[64];
        const int n = tt_webgpu_param_chunks(sp, starts, 64);
        for (int c = 0; c < n && c < 64; c++) {
            const size_t end = c + 1 < n ? starts[c + 1] : P;
            straddled |= starts[c] < BLO.total && end > BLO.total;
        }
        CHECK(GPU->vt->set_state(GPU, p0, NULL, NULL, &st) == TT_OK);
        CHECK(sp->vt->set_state(sp, p0, NULL, NULL, &st) == TT_OK);
        tt_train_config tc;
        product_config(&tc);
        int same = 1;
        for (int k = 0; k < 3; k++) {
            random_tokens(tok, micro, 100 + (uint64_t)k);
            tt_optim_args o = args_at(&tc, k);
            o.lr = 1e-2f, o.clip = 0.05f; /* large steps, clipping active */
            float l1 = 0, n1 = 0, l2 = 0, n2 = 0;
            CHECK(GPU->vt->step(GPU, tok, 1, &o, &st) == TT_OK && GPU->vt->step_result(GPU, &l1, &n1, &st) == TT_OK);
            CHECK(sp->vt->step(sp, tok, 1, &o, &st) == TT_OK && sp->vt->step_result(sp, &l2, &n2, &st) == TT_OK);
            same &= l1 == l2 && n1 == n2;
        }
        CHECK(GPU->vt->get_state(GPU, a[0], a[1], a[2], &st) == TT_OK);
        CHECK(sp->vt->get_state(sp, b[0], b[1], b[2], &st) == TT_OK);
        for (int i = 0; i < 3; i++) /* params, then m and v of the adapters */
            same &= memcmp(a[i], b[i], (i ? tt_layout_train_count(&LLO) : P) * sizeof(float)) == 0;
        same &= memcmp(b[0], p0, BLO.total * sizeof(float)) == 0;
        printf("  %s MiB: %d chunks, %s\n", limits[li], n, same ? "bit-identical to unsplit, base unchanged" : "DIFFERENT");
        CHECK(n > 1 && same);
        tt_backend_destroy(sp);
    }
    CHECK_MSG(!straddled, "a chunk holds both base tensors and adapters");
    uint64_t lora_bytes = 0, base_bytes = 0;
    CHECK(GPU->vt->plan_bytes(GPU, &LCFG, &lora_bytes, &st) == TT_OK);
    CHECK(GPU->vt->plan_bytes(GPU, &BASE, &base_bytes, &st) == TT_OK);
    printf("  device plan: LoRA %.3f MiB, plain %.3f MiB (base %.3f MiB of params)\n", lora_bytes / 1048576.0,
           base_bytes / 1048576.0, BLO.total * 4 / 1048576.0);
    CHECK_MSG(lora_bytes + 2 * 4 * (uint64_t)BLO.total < base_bytes, "the frozen base has gradients or moments");
    for (int i = 0; i < 3; i++) free(a[i]), free(b[i]);
    free(p0), free(tok);
}

/* the model under test: base plus LoRA of the given rank, alpha and targets */
static void setup(const tt_model_config *base, int rank, float alpha, int targets) {
    tt_status st;
    BASE = *base;
    LCFG = BASE;
    LCFG.lora_rank = rank;
    LCFG.lora_targets = targets;
    LCFG.lora_alpha = alpha;
    if (tt_layout_build(&BASE, &BLO, &st) || tt_layout_build(&LCFG, &LLO, &st)) {
        fprintf(stderr, "layout: %s\n", st.msg);
        exit(1);
    }
    GPU = tt_gtest_backend_or_skip(&LCFG);
    CPU_BASE = make_cpu(&BASE);
    CPU_LORA = make_cpu(&LCFG);
    printf("L %d C %d NH %d T %d B %d + LoRA rank %d alpha %g targets 0x%x: webgpu on %s\n", LCFG.n_layer,
           LCFG.d_model, LCFG.n_head, LCFG.ctx, LCFG.batch, rank, alpha, targets, GPU->desc.device);
}

static void teardown(void) {
    tt_backend_destroy(GPU);
    tt_backend_destroy(CPU_BASE);
    tt_backend_destroy(CPU_LORA);
    tt_layout_free(&BLO), tt_layout_free(&LLO);
}

int main(void) {
    tt_status st;
    const tt_model_config tiny = tt_preset_find("tiny")->cfg;
    /* an odd shape: partial tiles, unaligned rows, rank 3, two targets
     * (c_attn's thirds and mlp.c_proj's 4C input) */
    tt_model_config odd = tiny;
    odd.d_model = 44, odd.n_head = 4, odd.ctx = 37, odd.batch = 3;
    setup(&odd, 3, 5.0f, 1 << TT_LORA_C_ATTN | 1 << TT_LORA_MLP_C_PROJ);
    RUN(test_lora_vs_merged);
    teardown();
    /* tiny, rank 8, every target, s = 1.5 (not a power of two) */
    setup(&tiny, 8, 12.0f, TT_LORA_ALL);
    HAVE_CORPUS = tt_corpus_load(NULL, LCFG.ctx, &CORPUS, &st) == TT_OK;
    if (!HAVE_CORPUS) fprintf(stderr, "default corpus: %s\n", st.msg);
    RUN(test_lora_vs_merged);
    RUN(test_lora_finetune);
    teardown();
    /* batch 2: activations within the lowered binding limits */
    tt_model_config small_batch = tiny;
    small_batch.batch = 2;
    setup(&small_batch, 8, 12.0f, TT_LORA_ALL);
    RUN(test_lora_split);
    teardown();
    if (HAVE_CORPUS) tt_corpus_free(&CORPUS);
    return tt_test_summary();
}
