/* bench_matmul.c — benchmark (not a test, not in ctest) of single WebGPU
 * matmul products, for kernel and plan A/B runs side by side in one process:
 * ms per product (the median of `trials`, each `reps` back-to-back products
 * in one command buffer, timed on the host from submit to the completed
 * read-back of 4 bytes: so split-K products include their reduction site)
 * and TFLOP/s (2MNK / time).
 *
 *   cmake --build build          (builds build/bench_matmul, like every bench/bench_*.c)
 *   build/bench_matmul [setting | spec]...
 *
 * Arguments are taken in order. A spec "M,N,K,ta,tb[,flags]" (flags: any
 * of b = bias, r = residual R, a = accumulate) runs one product under the
 * current settings; a setting changes them for the specs after it:
 *   tile=T       forced tile (0: planned)     split=N  forced split-K (0: planned)
 *   unroll=0|1   //!unroll blocks unrolled or loops
 *   reps=N trials=N
 * The test hooks (src/webgpu/hooks.h; benches link the test library) apply
 * first (tt_gops_init), so a kernel directory (TT_WEBGPU_WGSL_DIR) is A/B'd
 * by separate runs. Inputs are
 * uniform random in [-1, 1) (never zeros); operands live in their own
 * buffers (each product gets fresh ones). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webgpu/device.h"
#include "webgpu/gpu_ops.h"
#include "gpu_test.h"
#include "webgpu/hooks.h"
#include "tt.h"

static int cmpd(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* n random floats in [-1, 1) on the device (tt_gtest_rnd, tt_gtest_up) */
static tt_gpu_buf upload_rand(size_t n) {
    float *h = tt_gtest_rnd(n, -1.0f, 1.0f);
    tt_gpu_buf b = tt_gtest_up(h, n);
    free(h);
    return b;
}

int main(int argc, char **argv) {
    tt_status st;
    tt_gpu *g;
    tt_gpu_options go = {0};
    if (tt_gpu_open(&go, &g, &st)) {
        fprintf(stderr, "bench_matmul: %s\n", st.msg);
        return 1;
    }
    tt_gtest_gpu = g; /* the test helpers' device */
    setvbuf(stdout, NULL, _IOLBF, 0);
    tt_gops o;
    if (tt_gops_init(&o, g, &st)) {
        fprintf(stderr, "bench_matmul: %s\n", st.msg);
        return 1;
    }
    const tt_gpu_info *in = tt_gpu_get_info(g);
    const char *wdir = tt_hook_get(TT_HOOK_WGSL_DIR);
    printf("adapter %s; kernels from %s\n", in->name, wdir ? wdir : "(embedded)");
    int reps = 20, trials = 7;
    for (int ai = 1; ai < argc; ai++) {
        const char *a = argv[ai];
        if (strncmp(a, "tile=", 5) == 0) { o.tile = atoi(a + 5); continue; }
        if (strncmp(a, "split=", 6) == 0) { o.splitk = atoi(a + 6); continue; }
        if (strncmp(a, "unroll=", 7) == 0) { o.unroll = atoi(a + 7) != 0; continue; }
        if (strncmp(a, "reps=", 5) == 0) { reps = atoi(a + 5); continue; }
        if (strncmp(a, "trials=", 7) == 0) { trials = atoi(a + 7); continue; }
        int M, N, K, ta, tb, nc = 0;
        char fl[8] = "";
        if (sscanf(a, "%d,%d,%d,%d,%d%n", &M, &N, &K, &ta, &tb, &nc) < 5 || M <= 0 || N <= 0 || K <= 0 || reps < 1 ||
            trials < 1) {
            fprintf(stderr, "bench_matmul: bad argument '%s' (spec M,N,K,ta,tb[,flags] or a setting)\n", a);
            return 2;
        }
        if (a[nc] == ',') snprintf(fl, sizeof fl, "%s", a + nc + 1);
        const int bias = strchr(fl, 'b') != NULL, res = strchr(fl, 'r') != NULL, acc = strchr(fl, 'a') != NULL;
        tt_gpu_buf bA = upload_rand((size_t)M * K), bB = upload_rand((size_t)K * N), bC = upload_rand((size_t)M * N),
                   bb = upload_rand((size_t)N), bR = upload_rand((size_t)M * N);
        if (bA < 0 || bB < 0 || bC < 0 || bb < 0 || bR < 0) {
            fprintf(stderr, "bench_matmul %s: cannot allocate the operands (above)\n", a);
            return 1;
        }
        tt_gsite s[TT_GOP_MM_SITES];
        tt_gref C = {bC, 0}, A = {bA, 0}, B = {bB, 0}, bi = {bb, 0}, rr = {bR, 0};
        if (tt_gop_matmul(&o, s, C, A, B, bias ? &bi : NULL, res ? &rr : NULL, M, N, K, ta, tb, acc, &st)) {
            fprintf(stderr, "bench_matmul %s: %s\n", a, st.msg);
            return 1;
        }
        int ns = TT_GOP_MM_SITES;
        double *ms = malloc((size_t)(trials + 1) * sizeof *ms);
        float tmp[4];
        for (int t = 0; t <= trials; t++) { /* trial 0 warms up (pipeline, caches) */
            double t0 = tt_now();
            if (tt_gpu_begin(g, &st)) break;
            for (int r = 0; r < reps; r++) tt_gops_run(g, s, ns);
            if (tt_gpu_submit(g, &st) || tt_gpu_read_sync(g, bC, 0, 4, tmp, &st) || tt_gpu_check(g, &st)) {
                fprintf(stderr, "bench_matmul %s: %s\n", a, st.msg);
                return 1;
            }
            ms[t] = (tt_now() - t0) * 1e3 / reps;
        }
        qsort(ms + 1, (size_t)trials, sizeof *ms, cmpd);
        double med = ms[1 + trials / 2];
        printf("%-22s %-26s unroll %d %8.4f ms  %6.2f TFLOP/s  (min %.4f max %.4f)\n", a, s[TT_GOP_MM_PRODUCT].tag, o.unroll, med,
               2.0 * M * N * K / med * 1e-9, ms[1], ms[trials]);
        free(ms);
        tt_gpu_buffer_free(g, bA), tt_gpu_buffer_free(g, bB), tt_gpu_buffer_free(g, bC);
        tt_gpu_buffer_free(g, bb), tt_gpu_buffer_free(g, bR);
    }
    tt_gops_free(&o);
    tt_gpu_close(g);
    return 0;
}
