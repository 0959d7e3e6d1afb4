/* test_dropout.c — the CPU dropout against the mask contract of rng.h: the
 * fraction kept is 1 - p over many elements, kept values are scaled by
 * 1/(1 - p), element i of a (B,T,C) tensor uses index i, different sites
 * draw independent masks, the same key gives the same bits on 1 and 3
 * threads (the element-wise op and attention forward + backward), and a mask
 * with p = 0 is bit for bit the op without dropout. The op-against-reference
 * cases are rows of tests/ops/test_backend_ops.c; the whole model with
 * dropout against the reference is in tests/cpu/test_model.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "cpu/ops.h"
#include "rng.h"
#include "tt_test.h"

static tt_cpu cpu1, cpu3;

/* |frac - expect| within 6 standard deviations of a binomial of n draws */
static void check_fraction(const char *what, double frac, double expect, size_t n) {
    double sd = sqrt(expect * (1.0 - expect) / (double)n);
    CHECK_MSG(fabs(frac - expect) <= 6.0 * sd + 1e-12, "%s: fraction %.5f, expected %.5f (sd %.5f)", what, frac, expect, sd);
}

TT_TEST(mask_keeps_one_minus_p_and_scales) {
    const size_t n = (size_t)1 << 20;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *z = malloc(n * sizeof *z);
    for (size_t i = 0; i < n; i++) x[i] = 1.0f;
    const float ps[3] = {0.1f, 0.5f, 0.9f};
    for (int k = 0; k < 3; k++) {
        float p = ps[k];
        tt_dropout_mask m = tt_dropout_mask_make(p, tt_dropout_key_at(7, 3, 2, 1, 4, 2, TT_DROP_ATTN_OUT));
        tt_dropout_mask m2 = tt_dropout_mask_make(p, tt_dropout_key_at(7, 3, 2, 1, 4, 2, TT_DROP_MLP_OUT));
        CHECK(m.threshold == (uint32_t)llround(p * 16777216.0) && m.scale == 1.0f / (1.0f - p));
        tt_dropout_forward(&cpu3, y, x, &m, n);
        tt_dropout_forward(&cpu3, z, x, &m2, n);
        size_t kept = 0, both = 0, index_ok = 0, value_ok = 0;
        for (size_t i = 0; i < n; i++) {
            kept += y[i] != 0.0f;
            both += y[i] != 0.0f && z[i] != 0.0f;
            index_ok += (y[i] != 0.0f) == tt_dropout_keep(m.key, m.threshold, (uint32_t)i);
            value_ok += y[i] == 0.0f || y[i] == m.scale;
        }
        char what[64];
        snprintf(what, sizeof what, "p %.1f kept", (double)p);
        check_fraction(what, (double)kept / n, 1.0 - p, n);
        snprintf(what, sizeof what, "p %.1f kept at two sites", (double)p);
        check_fraction(what, (double)both / n, (1.0 - p) * (1.0 - p), n);
        CHECK_MSG(index_ok == n, "p %.1f: %zu elements disagree with tt_dropout_keep(key, i)", (double)p, n - index_ok);
        CHECK_MSG(value_ok == n, "p %.1f: kept values are not 1/(1-p)", (double)p);
        /* the backward applies the same mask; the residual form adds the branch */
        tt_dropout_backward(&cpu1, z, x, &m, n);
        CHECK(memcmp(y, z, n * sizeof *y) == 0);
        tt_dropout_residual_forward(&cpu1, z, x, x, &m, n);
        size_t res_ok = 0;
        for (size_t i = 0; i < n; i++) res_ok += z[i] == 1.0f + y[i];
        CHECK(res_ok == n);
    }
    /* keys differ per step, micro-batch, layer and site */
    tt_dropout_key a = tt_dropout_key_at(1, 5, 2, 0, 3, 1, TT_DROP_ATTN);
    tt_dropout_key b[4] = {tt_dropout_key_at(1, 6, 2, 0, 3, 1, TT_DROP_ATTN), tt_dropout_key_at(1, 5, 2, 1, 3, 1, TT_DROP_ATTN),
                           tt_dropout_key_at(1, 5, 2, 0, 3, 2, TT_DROP_ATTN), tt_dropout_key_at(1, 5, 2, 0, 3, 1, TT_DROP_MLP_OUT)};
    for (int i = 0; i < 4; i++) CHECK_MSG(a.k0 != b[i].k0 || a.k1 != b[i].k1, "key %d equals the base key", i);
    free(x), free(y), free(z);
}

/* attention forward + backward with a mask on 1 and 3 threads: same bits;
 * with p = 0 the same bits as without a mask; with p > 0 different */
static void attention_threads(int B, int T, int NH, int hs, float p) {
    int C = NH * hs;
    size_t nqkv = (size_t)B * T * 3 * C, n1 = (size_t)B * T * C, ns = 2 * (size_t)B * NH * T;
    float *qkv = malloc(nqkv * 4), *dout = malloc(n1 * 4);
    tt_test_fill(qkv, nqkv, 11, -2, 2);
    tt_test_fill(dout, n1, 12, -1, 1);
    float *o[3], *s[3], *g[3];
    for (int k = 0; k < 3; k++) o[k] = malloc(n1 * 4), s[k] = malloc(ns * 4), g[k] = malloc(nqkv * 4);
    tt_dropout_mask m = tt_dropout_mask_make(p, tt_dropout_key_at(3, 1, 1, 0, 2, 1, TT_DROP_ATTN));
    tt_dropout_mask m0 = tt_dropout_mask_make(0.0f, m.key);
    const tt_dropout_mask *masks[3] = {&m, &m, p > 0 ? &m0 : &m};
    tt_cpu *cpus[3] = {&cpu1, &cpu3, &cpu3};
    for (int k = 0; k < 3; k++) {
        tt_attention_forward(cpus[k], o[k], s[k], qkv, qkv + C, qkv + 2 * C, 3 * C, B, T, C, NH, masks[k]);
        tt_attention_backward(cpus[k], g[k], g[k] + C, g[k] + 2 * C, s[k], qkv, qkv + C, qkv + 2 * C, o[k], dout, 3 * C, B,
                              T, C, NH, masks[k]);
    }
    /* a NULL mask: the reference bits for p = 0 */
    float *on = malloc(n1 * 4), *sn = malloc(ns * 4), *gn = malloc(nqkv * 4);
    tt_attention_forward(&cpu3, on, sn, qkv, qkv + C, qkv + 2 * C, 3 * C, B, T, C, NH, NULL);
    tt_attention_backward(&cpu3, gn, gn + C, gn + 2 * C, sn, qkv, qkv + C, qkv + 2 * C, on, dout, 3 * C, B, T, C, NH, NULL);
    char what[80];
    snprintf(what, sizeof what, "attention B%d T%d NH%d hs%d p %.1f", B, T, NH, hs, (double)p);
    CHECK_MSG(memcmp(o[0], o[1], n1 * 4) == 0 && memcmp(s[0], s[1], ns * 4) == 0, "%s: forward differs 1 vs 3 threads", what);
    for (size_t r = 0; r < (size_t)B * T; r++)
        CHECK_MSG(memcmp(g[0] + r * 3 * C, g[1] + r * 3 * C, (size_t)3 * C * 4) == 0, "%s: backward differs at row %zu", what, r);
    if (p > 0) {
        CHECK_MSG(memcmp(o[2], on, n1 * 4) == 0, "%s: p = 0 mask differs from no mask", what);
        CHECK_MSG(memcmp(o[0], on, n1 * 4) != 0, "%s: dropout changed nothing", what);
        /* the logsumexp is that of the undropped scores */
        CHECK(memcmp(s[0], sn, ns / 2 * 4) == 0);
        for (size_t r = 0; r < (size_t)B * T; r++)
            CHECK_MSG(memcmp(g[2] + r * 3 * C, gn + r * 3 * C, (size_t)3 * C * 4) == 0, "%s: p = 0 backward differs", what);
    }
    for (int k = 0; k < 3; k++) free(o[k]), free(s[k]), free(g[k]);
    free(qkv), free(dout), free(on), free(sn), free(gn);
}

TT_TEST(same_mask_on_any_thread_count) {
    attention_threads(2, 70, 2, 16, 0.3f); /* the blocked path (hs a multiple of the vector width), 3 query blocks */
    attention_threads(3, 33, 3, 5, 0.5f);  /* the row path */
    attention_threads(1, 17, 1, 32, 0.1f);
    const size_t n = 3 * 8192 + 77;
    float *x = malloc(n * 4), *r = malloc(n * 4), *y1 = malloc(n * 4), *y3 = malloc(n * 4);
    tt_test_fill(x, n, 5, -1, 1);
    tt_test_fill(r, n, 6, -1, 1);
    tt_dropout_mask m = tt_dropout_mask_make(0.25f, tt_dropout_key_at(9, 0, 1, 0, 1, 1, TT_DROP_EMBED));
    tt_dropout_forward(&cpu1, y1, x, &m, n);
    tt_dropout_forward(&cpu3, y3, x, &m, n);
    CHECK(memcmp(y1, y3, n * 4) == 0);
    tt_dropout_residual_forward(&cpu1, y1, x, r, &m, n);
    tt_dropout_residual_forward(&cpu3, y3, x, r, &m, n);
    CHECK(memcmp(y1, y3, n * 4) == 0);
    /* p = 0: a copy, and the residual form is the plain sum */
    tt_dropout_mask m0 = tt_dropout_mask_make(0.0f, m.key);
    tt_dropout_forward(&cpu3, y3, x, &m0, n);
    CHECK(memcmp(y3, x, n * 4) == 0);
    tt_dropout_residual_forward(&cpu3, y3, x, r, &m0, n);
    for (size_t i = 0; i < n; i++) y1[i] = r[i] + x[i];
    CHECK(memcmp(y1, y3, n * 4) == 0);
    free(x), free(r), free(y1), free(y3);
}

/* the model shapes whose mask indices would not fit 32 bits are refused */
TT_TEST(index_limit_is_checked) {
    tt_status st;
    tt_model_config c = {1, 64, 4, 1024, 1024, TT_VOCAB, 0, 0, 0.0f, 0, 0.0f}; /* B*NH*T*T = 2^32: fits */
    CHECK(tt_dropout_check(&c, 0.1f, &st) == TT_OK);
    c.batch = 1025;
    CHECK(tt_dropout_check(&c, 0.1f, &st) == TT_EINVAL && strstr(st.msg, "2^32"));
    CHECK(tt_dropout_check(&c, 0.0f, &st) == TT_OK); /* no dropout: no limit */
    tt_model_config w = {1, 16384, 1, 512, 600, TT_VOCAB, 0, 0, 0.0f, 0, 0.0f}; /* B*T*C > 2^32 */
    CHECK(tt_dropout_check(&w, 0.5f, &st) == TT_EINVAL);
    CHECK(tt_dropout_check(&c, 1.0f, &st) == TT_EINVAL && strstr(st.msg, "[0, 1)"));
    CHECK(tt_dropout_check(&c, -0.1f, &st) == TT_EINVAL);
    CHECK(tt_dropout_check(&c, NAN, &st) == TT_EINVAL);
}

int main(void) {
    tt_status st;
    size_t thread = tt_attention_thread_scratch(70, 32);
    if (tt_cpu_create(&cpu1, 1, 0, thread, &st) || tt_cpu_create(&cpu3, 3, 0, thread, &st)) {
        fprintf(stderr, "cpu context: %s\n", st.msg);
        return 1;
    }
    RUN(mask_keeps_one_minus_p_and_scales);
    RUN(same_mask_on_any_thread_count);
    RUN(index_limit_is_checked);
    tt_cpu_destroy(&cpu1);
    tt_cpu_destroy(&cpu3);
    return tt_test_summary();
}
