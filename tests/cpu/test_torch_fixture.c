/* test_torch_fixture.c — the CPU engine against an independent oracle:
 * PyTorch (transformers' GPT2LMHeadModel) on a tiny GPT-2, as llm.c's
 * test_gpt2 checks its C against a state file of the PyTorch model. The
 * fixture, tests/data/torch_fixture/, is made once on a machine with
 * PyTorch by tests/tools/make_torch_fixture.py (which says what it holds)
 * and committed; nothing here runs Python.
 *
 *   - the model folder (save_pretrained: config.json, model.safetensors)
 *     loads with tt_hf_load, the reader of `train --init-from`;
 *   - the loss and the gradient of every parameter of the CPU backend's
 *     loss_and_grad (the training step's forward and backward) match the
 *     fixture's, gradients mapped from the Hugging Face names and layout
 *     (Conv1D weights [in, out] as tinytrain's; c_attn split into q, k, v);
 *   - the eval forward gives the same loss;
 *   - the logits of every position of both sequences, fed one byte at a
 *     time to the sampler (the KV-cache forward of `tinytrain sample`),
 *     match the fixture's.
 * The oracle is float64 (stored as float32); the engine is float32, so the
 * tolerances are float32 rounding through two layers: loss and logits
 * 1e-5 of their size, each gradient tensor 1e-4 of its largest element
 * (floored at 1e-2 of the largest of all: the key bias's exact gradient is
 * 0, both sides hold rounding noise there; tt_test_grad_err). Measured
 * on the committed fixture: loss 8e-8, logits 7e-7, gradients 7e-6 (the
 * key bias, at the floor).
 *
 * Without the fixture the test fails and says how to make it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cpu/sample.h"
#include "train/hf.h"
#include "io/safetensors.h"
#include "model_test.h"
#include "tt_test.h"

#define FIXTURE_DIR "tests/data/torch_fixture"
#define TOL_LOSS 1e-5
#define TOL_LOGITS 1e-5
#define TOL_GRAD 1e-4

/* the fixture file's contents */
typedef struct {
    int B, T, V;
    int32_t *inputs, *targets; /* (B,T) */
    float *logits;             /* (B,T,V) */
    float loss;
} fixture;

/* tensor `name` of r: dtype and shape as given (ndim dims of shape), read into dst */
static int read_tensor(const tt_st_reader *r, const char *name, tt_st_dtype dtype, int ndim, const int64_t *shape,
                       void *dst) {
    tt_status st;
    const tt_st_tensor *t = tt_st_find(r, name);
    int ok = t && t->dtype == dtype && t->ndim == ndim;
    for (int i = 0; ok && i < ndim; i++) ok = t->shape[i] == shape[i];
    CHECK_MSG(ok, "fixture: tensor '%s' missing or not %s of the expected shape", name, tt_st_dtype_name(dtype));
    if (!ok) return -1;
    int rc = tt_st_read(r, t, 0, dst, (size_t)(t->end - t->begin), &st);
    CHECK_MSG(rc == TT_OK, "fixture: %s", st.msg);
    return rc;
}

/* where Hugging Face parameter `name` lives in tinytrain's layout: kind[0..n)
 * (n = 3 for c_attn: q, k, v side by side along the output dimension, else
 * 1) of *layer (-1 for the non-layer tensors); 0 for an unknown name */
static int hf_place(const char *name, int n_layer, tt_tensor_kind kind[3], int *layer) {
    static const struct {
        const char *suffix;
        tt_tensor_kind k[3];
        int n;
    } per_layer[] = {
        {"ln_1.weight", {TT_LN1W}, 1},          {"ln_1.bias", {TT_LN1B}, 1},
        {"attn.c_attn.weight", {TT_QW, TT_KW, TT_VALW}, 3}, {"attn.c_attn.bias", {TT_QB, TT_KB, TT_VALB}, 3},
        {"attn.c_proj.weight", {TT_OW}, 1},     {"attn.c_proj.bias", {TT_OB}, 1},
        {"ln_2.weight", {TT_LN2W}, 1},          {"ln_2.bias", {TT_LN2B}, 1},
        {"mlp.c_fc.weight", {TT_FCW}, 1},       {"mlp.c_fc.bias", {TT_FCB}, 1},
        {"mlp.c_proj.weight", {TT_PROJW}, 1},   {"mlp.c_proj.bias", {TT_PROJB}, 1},
    };
    static const struct {
        const char *name;
        tt_tensor_kind k;
    } top[] = {{"transformer.wte.weight", TT_WTE}, {"transformer.wpe.weight", TT_WPE},
               {"transformer.ln_f.weight", TT_LNFW}, {"transformer.ln_f.bias", TT_LNFB}};
    *layer = -1;
    for (size_t i = 0; i < sizeof top / sizeof top[0]; i++)
        if (!strcmp(name, top[i].name)) return kind[0] = top[i].k, 1;
    int l, at = 0;
    if (sscanf(name, "transformer.h.%d.%n", &l, &at) != 1 || at == 0 || l < 0 || l >= n_layer) return 0;
    for (size_t i = 0; i < sizeof per_layer / sizeof per_layer[0]; i++)
        if (!strcmp(name + at, per_layer[i].suffix)) {
            memcpy(kind, per_layer[i].k, sizeof per_layer[i].k);
            *layer = l;
            return per_layer[i].n;
        }
    return 0;
}

/* the fixture's gradients in tinytrain's layout (ref, lo->total); every
 * tensor of lo exactly once, every gradient of the fixture used */
static void fixture_grads(const tt_st_reader *r, const tt_model_config *c, const tt_layout *lo, double *ref) {
    tt_status st;
    const int64_t C = c->d_model;
    int *seen = calloc((size_t)lo->n_tensors, sizeof *seen), n_grads = 0;
    for (int i = 0; i < r->n_tensors; i++) {
        const tt_st_tensor *t = &r->t[i];
        if (strncmp(t->name, "grad.", 5) != 0) continue;
        n_grads++;
        tt_tensor_kind kind[3];
        int layer, n = hf_place(t->name + 5, c->n_layer, kind, &layer);
        CHECK_MSG(n > 0, "fixture: gradient of '%s', which tinytrain's GPT-2 does not have", t->name + 5);
        if (n == 0) continue;
        /* the shape: tinytrain's tensor's, or for c_attn its q's with 3 times the columns */
        const tt_tensor_info *q = &lo->t[tt_layout_index(c, kind[0], layer)];
        int64_t want[2] = {q->shape[0], q->shape[1]};
        want[q->ndim - 1] *= n;
        int ok = t->dtype == TT_ST_F32 && t->ndim == q->ndim && t->shape[0] == want[0] && (q->ndim == 1 || t->shape[1] == want[1]);
        CHECK_MSG(ok, "fixture: '%s' is not F32 (%lld%s%lld)", t->name, (long long)want[0], q->ndim == 2 ? ", " : "",
                  q->ndim == 2 ? (long long)want[1] : 0LL);
        if (!ok) continue;
        const size_t numel = (size_t)t->numel;
        float *g = malloc(numel * sizeof *g);
        CHECK_MSG(tt_st_read(r, t, 0, g, numel * sizeof *g, &st) == TT_OK, "fixture: %s", st.msg);
        /* one tensor: the same layout (Conv1D [in, out] is tinytrain's); c_attn (rows, 3C):
         * columns [kC, (k+1)C) are part k (rows C for the weight, 1 for the bias) */
        const size_t rows = numel / (size_t)(3 * C);
        for (int k = 0; k < n; k++) {
            const int ti = tt_layout_index(c, kind[k], layer);
            seen[ti]++;
            double *dst = ref + lo->t[ti].offset;
            if (n == 1)
                for (size_t j = 0; j < numel; j++) dst[j] = g[j];
            else
                for (size_t row = 0; row < rows; row++)
                    for (int64_t j = 0; j < C; j++) dst[row * C + j] = g[row * 3 * C + k * C + j];
        }
        free(g);
    }
    for (int i = 0; i < lo->n_tensors; i++)
        CHECK_MSG(seen[i] == 1, "fixture: %s gradients for tinytrain's %s", seen[i] ? "two" : "no", lo->t[i].name);
    printf("  %d gradient tensors in the fixture, %d tensors in tinytrain's layout\n", n_grads, lo->n_tensors);
    free(seen);
}

static int read_fixture(const tt_st_reader *r, const tt_model_config *c, fixture *fx) {
    const tt_st_tensor *t = tt_st_find(r, "logits");
    CHECK_MSG(t && t->ndim == 3, "fixture: no (B,T,V) logits");
    if (!t || t->ndim != 3) return -1;
    fx->B = (int)t->shape[0], fx->T = (int)t->shape[1], fx->V = (int)t->shape[2];
    /* the engine's training forward runs at T = ctx, with batch B */
    CHECK_MSG(fx->T == c->ctx && fx->V == c->vocab && fx->B >= 1 && fx->B <= 64,
              "fixture: logits (%d,%d,%d) do not fit the model (ctx %d, vocab %d)", fx->B, fx->T, fx->V, c->ctx, c->vocab);
    if (fx->T != c->ctx || fx->V != c->vocab || fx->B < 1 || fx->B > 64) return -1;
    const size_t bt = (size_t)fx->B * fx->T;
    fx->inputs = malloc(bt * sizeof *fx->inputs), fx->targets = malloc(bt * sizeof *fx->targets);
    fx->logits = malloc(bt * fx->V * sizeof *fx->logits);
    const int64_t sh[3] = {fx->B, fx->T, fx->V}, one = 1;
    if (read_tensor(r, "input_ids", TT_ST_I32, 2, sh, fx->inputs) || read_tensor(r, "targets", TT_ST_I32, 2, sh, fx->targets) ||
        read_tensor(r, "logits", TT_ST_F32, 3, sh, fx->logits) || read_tensor(r, "loss", TT_ST_F32, 1, &one, &fx->loss))
        return -1;
    /* windows of T + 1 bytes: targets are the inputs shifted by one */
    int ok = 1;
    for (size_t i = 0; i < bt; i++) {
        ok &= fx->inputs[i] >= 0 && fx->inputs[i] < fx->V && fx->targets[i] >= 0 && fx->targets[i] < fx->V;
        if (i % fx->T != (size_t)fx->T - 1) ok &= fx->targets[i] == fx->inputs[i + 1];
    }
    CHECK_MSG(ok, "fixture: targets are not the inputs shifted by one, or ids outside [0, V)");
    return ok ? 0 : -1;
}

/* r open and fx filled (0), or nothing held (-1) */
static int load_fixture(const char *file, const tt_model_config *c, fixture *fx, tt_st_reader *r) {
    tt_status st;
    memset(fx, 0, sizeof *fx);
    if (tt_st_open_file(r, file, &st)) {
        CHECK_MSG(0, "fixture: %s", st.msg);
        return -1;
    }
    if (read_fixture(r, c, fx)) {
        tt_st_close(r);
        free(fx->inputs), free(fx->targets), free(fx->logits);
        return -1;
    }
    return 0;
}
static void fixture_free(fixture *fx, tt_st_reader *r) {
    free(fx->inputs), free(fx->targets), free(fx->logits);
    tt_st_close(r);
}

TT_TEST(cpu_matches_pytorch) {
    tt_status st;
    char dir[4200], file[4300];
    snprintf(dir, sizeof dir, "%s", tt_test_src_path(FIXTURE_DIR));
    snprintf(file, sizeof file, "%s/fixture.safetensors", dir);
    struct stat sb;
    if (stat(file, &sb) != 0) {
        fprintf(stderr, "fixture missing: %s: make it with `python3 tests/tools/make_torch_fixture.py --out %s` on a machine "
                        "with torch and transformers, and commit the folder\n", file, FIXTURE_DIR);
        CHECK(!"fixture missing");
        return;
    }
    tt_hf_weights w;
    int rc = tt_hf_load(dir, &w, &st);
    CHECK_MSG(rc == TT_OK, "tt_hf_load %s: %s", dir, st.msg);
    if (rc) return;
    tt_model_config c = w.cfg;
    printf("  model: %d layers, d_model %d, %d heads, ctx %d, vocab %d\n", c.n_layer, c.d_model, c.n_head, c.ctx, c.vocab);
    fixture fx;
    tt_st_reader r;
    if (load_fixture(file, &c, &fx, &r)) {
        tt_hf_weights_free(&w);
        return;
    }
    const int B = fx.B, T = fx.T, V = fx.V;
    c.batch = B;

    /* training forward + backward */
    tt_backend *be = tt_test_cpu_backend(&c, 2);
    if (!be) {
        fixture_free(&fx, &r);
        tt_hf_weights_free(&w);
        return;
    }
    const tt_layout *lo = &be->layout;
    tt_token *tok = malloc(((size_t)B * (T + 1)) * sizeof *tok);
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) tok[(size_t)b * (T + 1) + t] = (tt_token)fx.inputs[b * T + t];
        tok[(size_t)b * (T + 1) + T] = (tt_token)fx.targets[b * T + T - 1];
    }
    float *g = malloc(lo->total * sizeof *g);
    double *rg = calloc(lo->total, sizeof *rg);
    float loss = tt_test_loss_and_grad(be, w.params, tok, g);
    double el = fabs((double)loss - fx.loss) / fabs((double)fx.loss);
    printf("  loss %.7f, PyTorch %.7f: rel err %.3g\n", loss, fx.loss, el);
    CHECK(el <= TOL_LOSS);
    fixture_grads(&r, &c, lo, rg);
    const char *worst;
    double eg = tt_test_grad_err(lo, 0, lo->n_tensors, g, rg, TOL_GRAD, &worst);
    printf("  gradients: worst rel err %.3g (%s)\n", eg, worst);
    CHECK(eg <= TOL_GRAD);
    float ev = NAN;
    CHECK(be->vt->eval(be, tok, B, &ev, &st) == TT_OK);
    CHECK_MSG(fabs((double)ev - fx.loss) <= TOL_LOSS * fabs((double)fx.loss), "eval loss %.7f vs %.7f", ev, fx.loss);

    /* logits, one byte at a time through the sampler */
    tt_sampler *s = NULL;
    rc = tt_sampler_create(&c, w.params, 1, &s, &st);
    CHECK_MSG(rc == TT_OK, "sampler: %s", st.msg);
    if (!rc) {
        float *lg = malloc((size_t)B * T * V * sizeof *lg);
        for (int b = 0; b < B; b++) {
            tt_sampler_reset(s);
            for (int t = 0; t < T; t++) {
                tt_sampler_feed(s, (tt_token)fx.inputs[b * T + t]);
                memcpy(lg + ((size_t)b * T + t) * V, tt_sampler_logits(s), (size_t)V * sizeof *lg);
            }
        }
        double *rl = tt_test_f64(fx.logits, (size_t)B * T * V);
        double e = tt_test_max_rel_err(lg, rl, (size_t)B * T * V);
        printf("  logits (%d x %d x %d): max rel err %.3g\n", B, T, V, e);
        CHECK(e <= TOL_LOGITS);
        free(lg), free(rl);
        tt_sampler_destroy(s);
    }
    free(tok), free(g), free(rg);
    tt_backend_destroy(be);
    fixture_free(&fx, &r);
    tt_hf_weights_free(&w);
}

int main(void) {
    RUN(cpu_matches_pytorch);
    return tt_test_summary();
}
