/* test_webgpu_grid.c — shapes whose natural launch exceeds the adapter's
 * maxComputeWorkgroupsPerDimension (65,535 by default): gpt2-sized
 * elementwise work (B*T*4C = 8*1024*3072 = 25M elements) would need 98,304
 * workgroups of 256 in one dimension. gpu_ops.c keeps every grid within the
 * limit (grid-stride loops capped at 32,768 workgroups; one-workgroup-per-row
 * kernels folded into 2-D, the WGSL indexing rows from x and y):
 *   - GELU forward over 65,535 * 256 + 1001 elements (one element per
 *     thread would need 65,540 workgroups);
 *   - LayerNorm forward over 65,541 rows (one workgroup per row: the grid
 *     is folded into 2-D, y = 2).
 * Each against the float64 reference (ref/ref64.c) on random data, outputs poisoned first;
 * the planned grids are checked to stay within the limit (and the LayerNorm
 * one to really use y). Skips (exit 0) without a WebGPU adapter unless
 * TT_REQUIRE_WEBGPU=1. Cheap kernels: a few seconds on lavapipe. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webgpu/gpu_ops.h"
#include "ref64.h"
#include "tt_test.h"

static tt_gpu *G;
static tt_gops O;
static uint32_t LIM;

static tt_gpu_buf upload(const float *x, size_t n) {
    tt_status st;
    tt_gpu_buf b = -1;
    if (tt_gpu_buffer(G, n * 4, TT_GPU_STORAGE, "test", &b, &st) || tt_gpu_write(G, b, 0, x, n * 4, &st)) {
        fprintf(stderr, "upload: %s\n", st.msg);
        tt_test_failed_checks++;
    }
    return b;
}

static int run_site(const tt_gsite *s, int n) {
    tt_status st;
    int rc = tt_gpu_begin(G, &st);
    if (!rc) {
        tt_gops_run(G, s, n);
        rc = tt_gpu_submit(G, &st);
    }
    if (rc) fprintf(stderr, "run: %s\n", st.msg);
    return rc;
}

TT_TEST(test_gelu_beyond_one_dimension) {
    tt_status st;
    const size_t n = (size_t)65535 * 256 + 1001;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    tt_test_fill(x, n, 41, -4, 4);
    tt_test_poison(y, n);
    tt_gpu_buf bx = upload(x, n), by = upload(y, n);
    tt_gsite s;
    memset(&s, 0, sizeof s);
    tt_gref out = {by, 0}, inp = {bx, 0};
    int rc = tt_gop_gelu_forward(&O, &s, out, inp, n, &st);
    if (rc) fprintf(stderr, "gelu plan: %s\n", st.msg);
    CHECK(rc == TT_OK);
    printf("  gelu: %zu elements (%zu workgroups of 256 at one per thread), grid %ux%ux%u, limit %u\n", n,
           (n + 255) / 256, s.x, s.y, s.z, LIM);
    CHECK(s.x <= LIM && s.y <= LIM && s.z <= LIM);
    CHECK(rc == TT_OK && run_site(&s, 1) == TT_OK);
    CHECK(tt_gpu_read_sync(G, by, 0, n * 4, y, &st) == TT_OK);
    double emax = 0, rmax = 0;
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        double r = ref_gelu(x[i]), e = fabs((double)y[i] - r);
        if (!(e <= 1e-5 * fabs(r) + 1e-6)) bad++;
        if (!(e <= emax)) emax = e; /* NaN (poison left) counts */
        if (fabs(r) > rmax) rmax = fabs(r);
    }
    printf("  gelu: max |err| %.3g (max |ref| %.3g), %zu elements off\n", emax, rmax, bad);
    CHECK(bad == 0);
    CHECK(emax <= 1e-5 * rmax);
    /* the tail really was written (the last workgroups' elements) */
    CHECK(y[n - 1] == y[n - 1] && fabs(y[n - 1] - ref_gelu(x[n - 1])) <= 1e-5 * (fabs(ref_gelu(x[n - 1])) + 1));
    free(x), free(y);
}

TT_TEST(test_layernorm_rows_folded_2d) {
    tt_status st;
    const int rows = 65541, C = 8;
    const size_t n = (size_t)rows * C;
    float *x = malloc(n * sizeof *x), *wb = malloc(2 * C * sizeof *wb), *y = malloc(n * sizeof *y);
    float *stats = malloc(2 * (size_t)rows * sizeof *stats);
    tt_test_fill(x, n, 43, -2, 2);
    tt_test_fill(wb, 2 * C, 44, -1.5f, 1.5f);
    tt_test_poison(y, n);
    tt_test_poison(stats, 2 * (size_t)rows);
    tt_gpu_buf bx = upload(x, n), bw = upload(wb, 2 * C), by = upload(y, n), bs = upload(stats, 2 * (size_t)rows);
    tt_gsite s;
    memset(&s, 0, sizeof s);
    tt_gref out = {by, 0}, rs = {bs, 0}, inp = {bx, 0}, w = {bw, 0}, b = {bw, (uint32_t)C};
    int rc = tt_gop_layernorm_forward(&O, &s, out, rs, inp, w, b, rows, C, &st);
    if (rc) fprintf(stderr, "ln plan: %s\n", st.msg);
    CHECK(rc == TT_OK);
    printf("  layernorm: %d rows (one workgroup each), grid %ux%ux%u, limit %u\n", rows, s.x, s.y, s.z, LIM);
    CHECK(s.x <= LIM && s.y <= LIM && s.z <= LIM);
    CHECK((uint64_t)s.x * s.y >= (uint64_t)rows);
    if (LIM < (uint32_t)rows) CHECK(s.y > 1); /* the 2-D fold is exercised */
    CHECK(rc == TT_OK && run_site(&s, 1) == TT_OK);
    CHECK(tt_gpu_read_sync(G, by, 0, n * 4, y, &st) == TT_OK);
    CHECK(tt_gpu_read_sync(G, bs, 0, 2 * (size_t)rows * 4, stats, &st) == TT_OK);
    double *X = ref_from_float(x, n), *W = ref_from_float(wb, C), *Bb = ref_from_float(wb + C, C);
    double *ry = ref_alloc(n), *rst = ref_alloc(2 * (size_t)rows); /* out; mean then rstd */
    ref_layernorm_forward(ry, rst, X, W, Bb, rows, C, 1e-5);
    double emax = 0, rmax = 0, smax = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)y[i] - ry[i]);
        if (!(e <= emax)) emax = e;
        if (fabs(ry[i]) > rmax) rmax = fabs(ry[i]);
    }
    for (int r = 0; r < rows; r++) {
        double mean = rst[r], rstd = rst[rows + r];
        double es = fabs((double)stats[r] - mean) + fabs((double)stats[rows + r] - rstd) / rstd;
        if (!(es <= smax)) smax = es;
    }
    free(X), free(W), free(Bb), free(ry), free(rst);
    printf("  layernorm: max |err| %.3g (max |ref| %.3g), stats err %.3g\n", emax, rmax, smax);
    CHECK(emax <= 1e-5 * rmax);
    CHECK(smax <= 1e-5);
    free(x), free(wb), free(y), free(stats);
}

int main(void) {
    tt_status st;
    if (tt_gpu_open(NULL, &G, &st) != TT_OK) {
        const char *req = getenv("TT_REQUIRE_WEBGPU");
        if (req && atoi(req)) {
            fprintf(stderr, "FAIL: TT_REQUIRE_WEBGPU=1 but WebGPU is unavailable: %s\n", st.msg);
            return 1;
        }
        printf("SKIP: %s\n", st.msg);
        return 0;
    }
    if (tt_gops_init(&O, G, &st)) {
        fprintf(stderr, "gops: %s\n", st.msg);
        return 1;
    }
    LIM = tt_gpu_get_info(G)->max_wg_per_dim ? tt_gpu_get_info(G)->max_wg_per_dim : 65535;
    printf("adapter %s: maxComputeWorkgroupsPerDimension %u\n", tt_gpu_get_info(G)->name, LIM);
    RUN(test_gelu_beyond_one_dimension);
    RUN(test_layernorm_rows_folded_2d);
    tt_gops_free(&O);
    tt_gpu_close(G);
    return tt_test_summary();
}
