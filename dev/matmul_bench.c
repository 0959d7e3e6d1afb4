/* matmul_bench.c — dev harness of dev/matmul/ (not a test, not in ctest):
 * bench/bench_matmul.c's timing of single WebGPU matmul products (ms per
 * product: the median of `trials`, each `reps` back-to-back products in one
 * command buffer, timed on the host from submit to the completed read-back
 * of 4 bytes, split-K reduction included; TFLOP/s = 2MNK / time), with the
 * operands allocated once for the largest spec and filled from one repeated
 * block of random values, so a list of step-sized products costs seconds of
 * setup instead of minutes of random numbers. Kernel variants are A/B'd by
 * separate runs under TT_WEBGPU_WGSL_DIR (dev/matmul/README.md).
 *
 *   build/dev_matmul_bench [reps=N] [trials=N] [unroll=0|1] [fill=uniform|gauss|zero] SPEC...
 *
 * fill: the operands' values (uniform in [-1, 1], the default; gauss: A and
 * R ~ N(0, 1) and B, bias ~ N(0, 0.02), the scales of a freshly initialised
 * step's activations and weights; zero: all zeros) — whether the kernel's
 * time depends on the data it multiplies (power, clocks).
 *
 * SPEC "M,N,K,ta,tb[,flags]" (flags: any of b = bias, r = residual R,
 * a = accumulate, tT = tile T (32, 64, 128), sS = S split-K slices (s1: no
 * split), xN = a batch of N products in one dispatch sharing A (the q, k, v
 * projections: B, bias and C of product p at p times their size), gN = one
 * product planned as a member of a group of N (tt_gop_matmul_group: what
 * the batch runs per product when it cannot be one dispatch); without t and
 * s the planned tile and split-K). One line per spec:
 *   SPEC TAG ms TFLOPS */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webgpu/device.h"
#include "webgpu/gpu_ops.h"
#include "gpu_test.h"
#include "webgpu/hooks.h"
#include "tt.h"

typedef struct {
    int M, N, K, ta, tb, bias, res, acc, tile, split, batch, group, lay;
} spec;

static int cmpd(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* a device buffer of n floats holding the random block repeated */
static tt_gpu_buf filled(tt_gpu *g, size_t n, const float *blk, size_t nblk, const char *label) {
    tt_status st;
    tt_gpu_buf b;
    if (tt_gpu_buffer(g, (uint64_t)(n ? n : 1) * 4, TT_GPU_STORAGE, label, &b, &st)) {
        fprintf(stderr, "dev_matmul_bench: %s: %s\n", label, st.msg);
        return -1;
    }
    for (size_t i = 0; i < n; i += nblk) {
        size_t c = n - i < nblk ? n - i : nblk;
        if (tt_gpu_write(g, b, (uint64_t)i * 4, blk, (uint64_t)c * 4, &st)) {
            fprintf(stderr, "dev_matmul_bench: %s: %s\n", label, st.msg);
            return -1;
        }
    }
    return b;
}

int main(int argc, char **argv) {
    int reps = 10, trials = 5, unroll = -1, n = 0;
    const char *fill = "uniform";
    spec *sp = calloc((size_t)argc, sizeof *sp);
    char **txt = calloc((size_t)argc, sizeof *txt);
    size_t maxA = 1, maxB = 1, maxC = 1, maxN = 1;
    for (int ai = 1; ai < argc; ai++) {
        const char *a = argv[ai];
        if (strncmp(a, "reps=", 5) == 0) { reps = atoi(a + 5); continue; }
        if (strncmp(a, "trials=", 7) == 0) { trials = atoi(a + 7); continue; }
        if (strncmp(a, "unroll=", 7) == 0) { unroll = atoi(a + 7) != 0; continue; }
        if (strncmp(a, "fill=", 5) == 0) {
            fill = a + 5;
            if (strcmp(fill, "uniform") && strcmp(fill, "gauss") && strcmp(fill, "zero")) {
                fprintf(stderr, "dev_matmul_bench: bad fill '%s' (uniform, gauss or zero)\n", fill);
                return 2;
            }
            continue;
        }
        spec s = {0};
        int nc = 0;
        if (sscanf(a, "%d,%d,%d,%d,%d%n", &s.M, &s.N, &s.K, &s.ta, &s.tb, &nc) < 5 || s.M <= 0 || s.N <= 0 ||
            s.K <= 0) {
            fprintf(stderr, "dev_matmul_bench: bad argument '%s' (spec M,N,K,ta,tb[,flags] or a setting)\n", a);
            return 2;
        }
        const char *fl = a[nc] == ',' ? a + nc + 1 : "";
        s.bias = strchr(fl, 'b') != NULL, s.res = strchr(fl, 'r') != NULL, s.acc = strchr(fl, 'a') != NULL;
        if (strchr(fl, 't')) s.tile = atoi(strchr(fl, 't') + 1);
        if (strchr(fl, 's')) s.split = atoi(strchr(fl, 's') + 1);
        s.batch = strchr(fl, 'x') ? atoi(strchr(fl, 'x') + 1) : 1;
        s.group = strchr(fl, 'g') ? atoi(strchr(fl, 'g') + 1) : 1;
        s.lay = strchr(fl, 'L') != NULL;
        if (s.batch < 1 || s.batch > 8 || s.group < 1 || s.group > 8) {
            fprintf(stderr, "dev_matmul_bench: bad batch or group in '%s' (x1..x8, g1..g8)\n", a);
            return 2;
        }
        if ((strchr(fl, 't') && s.tile != 32 && s.tile != 64 && s.tile != 128) ||
            (strchr(fl, 's') && (s.split < 1 || s.split > 16))) {
            fprintf(stderr, "dev_matmul_bench: bad tile or split in '%s' (t32|t64|t128, s1..s16)\n", a);
            return 2;
        }
        if ((size_t)s.M * s.K > maxA) maxA = (size_t)s.M * s.K;
        if ((size_t)(s.K + s.lay) * s.N * s.batch > maxB) maxB = (size_t)(s.K + s.lay) * s.N * s.batch;
        if ((size_t)s.M * s.N * s.batch > maxC) maxC = (size_t)s.M * s.N * s.batch;
        /* bias of product p at p * K * N (the batch's bstride) */
        if ((size_t)(s.batch - 1) * s.K * s.N + s.N > maxN) maxN = (size_t)(s.batch - 1) * s.K * s.N + s.N;
        txt[n] = argv[ai];
        sp[n++] = s;
    }
    if (reps < 1 || trials < 1) {
        fprintf(stderr, "dev_matmul_bench: reps and trials must be >= 1\n");
        return 2;
    }
    tt_status st;
    tt_gpu *g;
    tt_gpu_options go = {0};
    if (tt_gpu_open(&go, &g, &st)) {
        fprintf(stderr, "dev_matmul_bench: %s\n", st.msg);
        return 1;
    }
    tt_gtest_gpu = g;
    setvbuf(stdout, NULL, _IOLBF, 0);
    tt_gops o;
    if (tt_gops_init(&o, g, &st)) {
        fprintf(stderr, "dev_matmul_bench: %s\n", st.msg);
        return 1;
    }
    if (unroll >= 0) o.unroll = unroll;
    const char *wdir = tt_hook_get(TT_HOOK_WGSL_DIR);
    printf("# adapter %s; kernels from %s; unroll %d; reps %d trials %d\n", tt_gpu_get_info(g)->name,
           wdir ? wdir : "(embedded)", o.unroll, reps, trials);
    const size_t nblk = (size_t)1 << 20;
    float *blk = tt_gtest_rnd(nblk, -1.0f, 1.0f), *wblk = malloc(nblk * sizeof *wblk);
    if (strcmp(fill, "gauss") == 0) /* Box-Muller over pairs of the uniform block */
        for (size_t i = 0; i + 1 < nblk; i += 2) {
            double u = (blk[i] + 1.0) * 0.5 * (1.0 - 1e-7) + 1e-7, v = (blk[i + 1] + 1.0) * 0.5;
            double r = sqrt(-2.0 * log(u));
            blk[i] = (float)(r * cos(6.283185307179586 * v)), blk[i + 1] = (float)(r * sin(6.283185307179586 * v));
        }
    for (size_t i = 0; i < nblk; i++) {
        if (strcmp(fill, "zero") == 0) blk[i] = 0.0f;
        wblk[i] = strcmp(fill, "gauss") == 0 ? 0.02f * blk[i] : blk[i];
    }
    printf("# fill %s\n", fill);
    tt_gpu_buf bA = filled(g, maxA, blk, nblk, "A"), bB = filled(g, maxB, wblk, nblk, "B"),
               bC = filled(g, maxC, blk, nblk, "C"), bR = filled(g, maxC, blk, nblk, "R"),
               bb = filled(g, maxN, wblk, nblk, "bias");
    free(blk), free(wblk);
    if (bA < 0 || bB < 0 || bC < 0 || bR < 0 || bb < 0) return 1;
    double *ms = malloc((size_t)(trials + 1) * sizeof *ms);
    for (int i = 0; i < n; i++) {
        const spec *s = &sp[i];
        tt_gsite site[TT_GOP_MM_SITES];
        tt_gref C = {bC, 0}, A = {bA, 0}, B = {bB, 0}, bi = {bb, 0}, rr = {bR, 0};
        if (s->lay) bi.buf = bB, bi.off = (uint32_t)((size_t)s->K * s->N);
        o.tile = s->tile, o.splitk = s->split;
        int bad = s->batch > 1
                      ? tt_gop_matmul_batch(&o, site, s->batch, (uint32_t)((size_t)(s->K + s->lay) * s->N), C, A, B,
                                            s->bias ? &bi : NULL, s->res ? &rr : NULL, s->M, s->N, s->K, s->ta, s->tb,
                                            s->acc, 0, &st)
                      : tt_gop_matmul_group(&o, site, s->group, C, A, B, s->bias ? &bi : NULL, s->res ? &rr : NULL,
                                            s->M, s->N, s->K, s->ta, s->tb, s->acc, 0, &st);
        if (bad) {
            fprintf(stderr, "dev_matmul_bench %s: %s\n", txt[i], st.msg);
            return 1;
        }
        int ns = TT_GOP_MM_SITES;
        float tmp[4];
        for (int t = 0; t <= trials; t++) { /* trial 0 warms up (pipeline, caches) */
            double t0 = tt_now();
            if (tt_gpu_begin(g, &st)) break;
            for (int r = 0; r < reps; r++) tt_gops_run(g, site, ns);
            if (tt_gpu_submit(g, &st) || tt_gpu_read_sync(g, bC, 0, 4, tmp, &st) || tt_gpu_check(g, &st)) {
                fprintf(stderr, "dev_matmul_bench %s: %s\n", txt[i], st.msg);
                return 1;
            }
            ms[t] = (tt_now() - t0) * 1e3 / reps;
        }
        qsort(ms + 1, (size_t)trials, sizeof *ms, cmpd);
        double med = ms[1 + trials / 2];
        char tag[64];
        snprintf(tag, sizeof tag, "%s", site[TT_GOP_MM_PRODUCT].tag);
        for (char *p = tag; *p; p++)
            if (*p == ' ') *p = '_';
        printf("%s %s %.4f %.2f\n", txt[i], tag, med, 2.0 * s->batch * s->M * s->N * s->K / med * 1e-9);
    }
    free(ms), free(sp), free(txt);
    tt_gpu_buffer_free(g, bA), tt_gpu_buffer_free(g, bB), tt_gpu_buffer_free(g, bC);
    tt_gpu_buffer_free(g, bR), tt_gpu_buffer_free(g, bb);
    tt_gops_free(&o);
    tt_gpu_close(g);
    return 0;
}
