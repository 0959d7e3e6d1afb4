/* test_sample.c — the sampler (sample.h): KV-cache logits against a float64
 * full recompute of the window (including the sliding window), agreement
 * with the training backend's loss, greedy / top-k / top-p / temperature
 * behaviour of the picker, and determinism of generation with a seed. */
#include <math.h>
#include <string.h>

#include "backend.h"
#include "config.h"
#include "model.h"
#include "ref64.h"
#include "rng.h"
#include "cpu/sample.h"
#include "tt_test.h"

/* ---- float64 reference (ref/ref64.h): full forward of tokens[0..n), logits of the last position ---- */
static void ref_forward(const tt_model_config *cfg, const tt_layout *lo, const float *p, const tt_token *tok, int n,
                        double *logits) {
    double *dp = ref_from_float(p, lo->total), *all = ref_alloc((size_t)n * cfg->vocab);
    int32_t *inp = malloc((size_t)n * sizeof *inp);
    for (int t = 0; t < n; t++) inp[t] = tok[t];
    ref_gpt_forward(cfg, lo, dp, inp, 1, n, all);
    memcpy(logits, all + (size_t)(n - 1) * cfg->vocab, (size_t)cfg->vocab * sizeof(double));
    free(dp), free(all), free(inp);
}

/* random model: init, then every tensor perturbed so no path is trivial */
static float *random_params(const tt_model_config *cfg, tt_layout *lo, uint64_t seed) {
    CHECK(tt_layout_build(cfg, lo, NULL) == TT_OK);
    float *p = malloc(lo->total * sizeof(float));
    tt_test_fill(p, lo->total, seed, -0.15f, 0.15f);
    for (int i = 0; i < lo->n_tensors; i++) {
        tt_tensor_info *t = &lo->t[i];
        if (t->kind == TT_LN1W || t->kind == TT_LN2W || t->kind == TT_LNFW)
            for (size_t j = 0; j < t->numel; j++) p[t->offset + j] += 1.0f; /* gains around 1 */
        if (t->kind == TT_WTE || t->kind == TT_WPE)
            for (size_t j = 0; j < t->numel; j++) p[t->offset + j] *= 4.0f;
    }
    return p;
}

static void check_kv_cache(const tt_model_config *cfg, int threads, int n_feed) {
    tt_layout lo;
    float *p = random_params(cfg, &lo, 77 + (uint64_t)cfg->d_model);
    tt_sampler *s = NULL;
    tt_status st;
    tt_status_clear(&st);
    CHECK(tt_sampler_create(cfg, p, threads, &s, &st) == TT_OK);
    if (!s) { free(p); tt_layout_free(&lo); return; }
    tt_token win[4096];
    int len = 0;
    double *ref = malloc(sizeof(double) * cfg->vocab);
    double worst = 0;
    int slid = 0;
    for (int i = 0; i < n_feed; i++) {
        tt_token tok = (tt_token)tt_rand_below(5, TT_STREAM_TEST, (uint64_t)i, 256);
        tt_sampler_feed(s, tok);
        /* the window the sampler should hold: slide to the last ctx/2 when full */
        if (len == cfg->ctx) {
            int keep = cfg->ctx / 2;
            memmove(win, win + (cfg->ctx - keep), (size_t)keep * sizeof *win);
            len = keep;
            slid++;
        }
        win[len++] = tok;
        CHECK(tt_sampler_len(s) == len);
        ref_forward(cfg, &lo, p, win, len, ref);
        double e = tt_test_max_rel_err(tt_sampler_logits(s), ref, (size_t)cfg->vocab);
        if (e > worst) worst = e;
    }
    CHECK(slid >= 2);
    CHECK_MSG(worst < 2e-5, "KV-cache logits vs float64 recompute: max rel err %.3g (C=%d threads=%d)", worst,
              cfg->d_model, threads);
    printf("  C=%d L=%d ctx=%d threads=%d: %d tokens, %d slides, max rel err %.2e\n", cfg->d_model, cfg->n_layer,
           cfg->ctx, threads, n_feed, slid, worst);
    free(ref);
    tt_sampler_destroy(s);
    free(p);
    tt_layout_free(&lo);
}

TT_TEST(test_kv_cache_matches_full_recompute) {
    /* widths that are not multiples of the SIMD width; 4C = 100 < one column chunk */
    tt_model_config a = {2, 25, 5, 10, 1, TT_VOCAB, 0, 0, 0.0f, 0, 0.0f};
    check_kv_cache(&a, 1, 27);
    /* wide enough that mat-vecs take the pool path with several column chunks */
    tt_model_config b = {1, 132, 4, 8, 1, TT_VOCAB, 0, 0, 0.0f, 0, 0.0f};
    check_kv_cache(&b, 3, 19);
    /* ctx 1: the window slides to nothing before each token */
    tt_model_config c = {1, 8, 2, 1, 1, TT_VOCAB, 0, 0, 0.0f, 0, 0.0f};
    check_kv_cache(&c, 1, 5);
    /* GPT-2's variants: gelu_new, another LayerNorm epsilon, a vocabulary of 1003 */
    tt_model_config d = {2, 24, 4, 12, 1, 1003, 0, 0, 0.0f, TT_ACT_GELU_TANH, 1e-3f};
    check_kv_cache(&d, 2, 30);
}

/* a big vocabulary picks as a small one: the same four likely tokens at
 * other ids among 50257 give the same draws under top-k (the rest is cut) */
TT_TEST(test_big_vocab_pick) {
    enum { V = 50257 };
    float *big = malloc(V * sizeof *big), small[256];
    tt_sample_item *wb = malloc(V * sizeof *wb), ws[256];
    for (int i = 0; i < V; i++) big[i] = -30.0f - (float)(i % 256) * 0.01f;
    for (int i = 0; i < 256; i++) small[i] = -30.0f - (float)i * 0.01f;
    const double pr[4] = {0.5, 0.3, 0.15, 0.05};
    const int at_s[4] = {200, 7, 64, 3}, at_b[4] = {50000, 7, 30001, 256};
    for (int j = 0; j < 4; j++) small[at_s[j]] = big[at_b[j]] = (float)log(pr[j]);
    tt_sample_config sc;
    tt_sample_config_default(&sc);
    sc.temperature = 1.0f;
    sc.top_p = 1.0f;
    for (int k = 1; k <= 4; k++) {
        sc.top_k = k;
        for (uint64_t d = 0; d < 500; d++) {
            int a = tt_sample_pick(small, 256, &sc, d, ws), b = tt_sample_pick(big, V, &sc, d, wb);
            int ja = -1, jb = -1;
            for (int j = 0; j < 4; j++) ja = at_s[j] == a ? j : ja, jb = at_b[j] == b ? j : jb;
            CHECK_MSG(ja >= 0 && ja < k && ja == jb, "top-k %d draw %d: %d (small) vs %d (big)", k, (int)d, a, b);
        }
    }
    /* greedy: the argmax, whatever the vocabulary */
    sc.temperature = 0.0f;
    CHECK(tt_sample_pick(big, V, &sc, 0, wb) == at_b[0]);
    free(big), free(wb);
}

/* The sampler runs the same model as training: its cross-entropy over a
 * window equals the CPU backend's eval loss on that window. */
TT_TEST(test_matches_backend_loss) {
    tt_model_config cfg = {2, 48, 3, 32, 1, TT_VOCAB, 0, 0, 0.0f, 0, 0.0f};
    tt_layout lo;
    float *p = random_params(&cfg, &lo, 99);
    tt_token tok[33];
    for (int i = 0; i < 33; i++) tok[i] = (uint8_t)("The quick brown fox jumps over the lazy dog"[i]);
    tt_sampler *s = NULL;
    CHECK(tt_sampler_create(&cfg, p, 1, &s, NULL) == TT_OK);
    double ce = 0;
    for (int t = 0; t < 32; t++) {
        tt_sampler_feed(s, tok[t]);
        const float *lg = tt_sampler_logits(s);
        double mx = -INFINITY, sum = 0;
        for (int v = 0; v < 256; v++) mx = fmax(mx, lg[v]);
        for (int v = 0; v < 256; v++) sum += exp(lg[v] - mx);
        ce += -(lg[tok[t + 1]] - mx - log(sum));
    }
    ce /= 32;
    tt_backend *be = NULL;
    tt_status st;
    tt_status_clear(&st);
    CHECK(tt_backend_cpu_create(&cfg, &(tt_backend_opts){.threads = 1}, &be, &st) == TT_OK);
    if (be) {
        float loss = NAN;
        CHECK(be->vt->set_state(be, p, NULL, NULL, &st) == TT_OK);
        CHECK(be->vt->eval(be, tok, 1, &loss, &st) == TT_OK);
        CHECK_CLOSE(loss, ce, 1e-5, 1e-6);
        tt_backend_destroy(be);
    }
    tt_sampler_destroy(s);
    free(p);
    tt_layout_free(&lo);
}

TT_TEST(test_greedy) {
    float lg[256];
    tt_sample_item work[256];
    tt_sample_config sc;
    tt_sample_config_default(&sc);
    for (int trial = 0; trial < 50; trial++) {
        tt_test_fill(lg, 256, 1000 + (uint64_t)trial, -3.0f, 3.0f);
        int best = 0;
        for (int i = 1; i < 256; i++)
            if (lg[i] > lg[best]) best = i;
        sc.temperature = 1.0f;
        sc.top_k = 1;
        sc.top_p = 1.0f;
        for (uint64_t d = 0; d < 5; d++) CHECK(tt_sample_pick(lg, 256, &sc, d, work) == best);
        sc.top_k = 0;
        sc.temperature = 0.0f;
        CHECK(tt_sample_pick(lg, 256, &sc, 0, work) == best);
    }
}

/* frequencies of many draws match the restricted, renormalised distribution */
static void draw_freq(const float *lg, const tt_sample_config *sc, int n, double *freq) {
    tt_sample_item work[256];
    memset(freq, 0, 256 * sizeof(double));
    for (int i = 0; i < n; i++) freq[tt_sample_pick(lg, 256, sc, (uint64_t)i, work)] += 1.0 / n;
}

TT_TEST(test_top_k_top_p_temperature) {
    float lg[256];
    for (int i = 0; i < 256; i++) lg[i] = -30.0f - (float)i * 0.01f; /* negligible mass */
    double pr[4] = {0.5, 0.3, 0.15, 0.05};
    int at[4] = {200, 7, 64, 3}; /* not in index order */
    for (int j = 0; j < 4; j++) lg[at[j]] = (float)log(pr[j]);
    double freq[256];
    const int N = 40000;
    tt_sample_config sc;
    tt_sample_config_default(&sc);
    sc.temperature = 1.0f;
    /* full distribution */
    sc.top_k = 0;
    sc.top_p = 1.0f;
    draw_freq(lg, &sc, N, freq);
    for (int j = 0; j < 4; j++) CHECK_CLOSE(freq[at[j]], pr[j], 0, 0.012);
    /* top-p 0.7: {0.5, 0.3} reach it */
    sc.top_p = 0.7f;
    draw_freq(lg, &sc, N, freq);
    CHECK_CLOSE(freq[at[0]], 0.5 / 0.8, 0, 0.012);
    CHECK_CLOSE(freq[at[1]], 0.3 / 0.8, 0, 0.012);
    CHECK(freq[at[2]] == 0 && freq[at[3]] == 0);
    /* top-p 0.45: the top byte alone */
    sc.top_p = 0.45f;
    draw_freq(lg, &sc, 2000, freq);
    CHECK_CLOSE(freq[at[0]], 1.0, 0, 1e-9);
    /* top-k 3 */
    sc.top_p = 1.0f;
    sc.top_k = 3;
    draw_freq(lg, &sc, N, freq);
    for (int j = 0; j < 3; j++) CHECK_CLOSE(freq[at[j]], pr[j] / 0.95, 0, 0.012);
    CHECK(freq[at[3]] == 0);
    /* top-k 3 then top-p 0.8 of the renormalised three: 0.526 + 0.316 >= 0.8 */
    sc.top_p = 0.8f;
    draw_freq(lg, &sc, N, freq);
    CHECK_CLOSE(freq[at[0]], 0.5 / 0.8, 0, 0.012);
    CHECK(freq[at[2]] == 0);
    /* temperature 2: p^(1/2), renormalised */
    sc.top_k = 0;
    sc.top_p = 1.0f;
    sc.temperature = 2.0f;
    draw_freq(lg, &sc, N, freq);
    double z = 0;
    for (int j = 0; j < 4; j++) z += sqrt(pr[j]);
    for (int j = 0; j < 4; j++) CHECK_CLOSE(freq[at[j]], sqrt(pr[j]) / z, 0, 0.012);
}

typedef struct {
    uint8_t buf[512];
    int n;
} collect;
static int collect_fn(void *u, tt_token t) {
    collect *c = u;
    if (c->n < 512) c->buf[c->n++] = (uint8_t)t;
    return 0;
}

static int stop_after_3(void *u, tt_token t) {
    collect_fn(u, t);
    return ((collect *)u)->n >= 3;
}

TT_TEST(test_generate_deterministic) {
    tt_model_config cfg = {2, 32, 4, 16, 1, TT_VOCAB, 0, 0, 0.0f, 0, 0.0f};
    tt_layout lo;
    float *p = random_params(&cfg, &lo, 5);
    tt_sampler *s = NULL;
    CHECK(tt_sampler_create(&cfg, p, 1, &s, NULL) == TT_OK);
    tt_sample_config sc;
    tt_sample_config_default(&sc);
    sc.max_tokens = 100; /* > ctx: slides several times */
    sc.temperature = 1.0f;
    sc.top_k = 0;
    sc.top_p = 1.0f;
    collect a = {{0}, 0}, b = {{0}, 0}, c = {{0}, 0};
    const tt_token prompt[5] = {'H', 'e', 'l', 'l', 'o'};
    CHECK(tt_generate(s, prompt, 5, &sc, collect_fn, &a, NULL) == TT_OK);
    CHECK(tt_generate(s, prompt, 5, &sc, collect_fn, &b, NULL) == TT_OK);
    sc.seed += 1;
    CHECK(tt_generate(s, prompt, 5, &sc, collect_fn, &c, NULL) == TT_OK);
    CHECK(a.n == 100 && b.n == 100 && c.n == 100);
    CHECK(memcmp(a.buf, b.buf, 100) == 0);
    CHECK(memcmp(a.buf, c.buf, 100) != 0);
    /* a callback can stop generation */
    collect d = {{0}, 0};
    sc.max_tokens = 50;
    CHECK(tt_generate(s, NULL, 0, &sc, stop_after_3, &d, NULL) == TT_OK);
    CHECK(d.n == 3);
    tt_status st;
    tt_status_clear(&st);
    sc.max_tokens = -1;
    CHECK(tt_generate(s, NULL, 0, &sc, collect_fn, &a, &st) == TT_EINVAL);
    sc.max_tokens = 10;
    sc.top_p = 0.0f;
    CHECK(tt_generate(s, NULL, 0, &sc, collect_fn, &a, &st) == TT_EINVAL);
    CHECK(strstr(st.msg, "top-p") != NULL);
    sc.top_p = 1.0f;
    sc.temperature = NAN;
    CHECK(tt_generate(s, NULL, 0, &sc, collect_fn, &a, &st) == TT_EINVAL);
    tt_sampler_destroy(s);
    free(p);
    tt_layout_free(&lo);
}

int main(void) {
    RUN(test_kv_cache_matches_full_recompute);
    RUN(test_matches_backend_loss);
    RUN(test_greedy);
    RUN(test_top_k_top_p_temperature);
    RUN(test_big_vocab_pick);
    RUN(test_generate_deterministic);
    return tt_test_summary();
}
