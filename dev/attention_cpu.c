/* attention_cpu.c — dev harness for src/cpu/attention.c (not a test, not in
 * ctest): a checksum of every output bit of the forward and backward at a
 * list of shapes (so an old and a new build can be compared bit for bit),
 * and the median ms of each at one shape.
 *
 *   build/dev_attention_cpu sum [threads]
 *       one line per case: shape, FNV-1a hash of out+lse and of dq,dk,dv,D
 *       (cases: hs 64 and 32, T not a multiple of the blocks, hs not a
 *       multiple of the vector width, dropout on and off)
 *   build/dev_attention_cpu time THREADS REPS B T C NH [WHICH]
 *       median ms of forward and backward (one thread: process CPU time;
 *       WHICH 1: forward only, 2: backward only, for profiles)
 *
 * Inputs are fixed pseudo-random values (the same in every build). */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu/ops.h"
#include "tt.h"

static float *fill(size_t n, uint32_t seed) {
    tt_status st;
    float *p = tt_alloc(n * sizeof(float), &st);
    uint32_t s = seed * 2654435761u + 12345u;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        p[i] = ((float)(s >> 8) / 16777216.0f - 0.5f) * 2.0f;
    }
    return p;
}

static uint64_t fnv(uint64_t h, const float *p, size_t n) {
    const unsigned char *b = (const unsigned char *)p;
    for (size_t i = 0; i < n * sizeof(float); i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

typedef struct {
    float *qkv, *dqkv, *out, *dout, *stats;
} bufs;

static bufs make(int B, int T, int C, int NH) {
    bufs b;
    size_t N = (size_t)B * T;
    b.qkv = fill(N * 3 * C, 1), b.dqkv = fill(N * 3 * C, 2), b.out = fill(N * C, 3), b.dout = fill(N * C, 4);
    b.stats = fill(2 * (size_t)B * NH * T, 5);
    return b;
}
static void unmake(bufs *b) { tt_free(b->qkv), tt_free(b->dqkv), tt_free(b->out), tt_free(b->dout), tt_free(b->stats); }

static int cpu_for(tt_cpu *cpu, int threads, int T, int hs) {
    tt_status st;
    return tt_cpu_create(cpu, threads, 0, tt_attention_thread_scratch(T, hs), &st);
}

static void fwd(tt_cpu *cpu, bufs *b, int B, int T, int C, int NH, const tt_dropout_mask *d) {
    tt_attention_forward(cpu, b->out, b->stats, b->qkv, b->qkv + C, b->qkv + 2 * C, 3 * C, B, T, C, NH, d);
}
static void bwd(tt_cpu *cpu, bufs *b, int B, int T, int C, int NH, const tt_dropout_mask *d) {
    tt_attention_backward(cpu, b->dqkv, b->dqkv + C, b->dqkv + 2 * C, b->stats, b->qkv, b->qkv + C, b->qkv + 2 * C, b->out,
                          b->dout, 3 * C, B, T, C, NH, d);
}

static int cmpd(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double clk(int cputime) {
    if (!cputime) return tt_now();
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "sum")) {
        int threads = argc > 2 ? atoi(argv[2]) : 1;
        static const int cases[][5] = {/* B, T, C, NH, dropout */
                                       {4, 256, 384, 6, 0}, {2, 512, 384, 12, 0}, {3, 100, 128, 2, 0}, {2, 77, 96, 2, 0},
                                       {3, 200, 256, 4, 1},  {2, 130, 96, 3, 1},   {1, 33, 24, 2, 0}, {2, 64, 48, 2, 1},
                                       {5, 96, 128, 2, 0},   {1, 300, 64, 2, 0}};
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            int B = cases[i][0], T = cases[i][1], C = cases[i][2], NH = cases[i][3];
            tt_dropout_key key = tt_dropout_key_at(7, 3, 1, 0, 2, 1, 1);
            tt_dropout_mask m = tt_dropout_mask_make(0.2f, key);
            const tt_dropout_mask *d = cases[i][4] ? &m : NULL;
            tt_cpu cpu;
            if (cpu_for(&cpu, threads, T, C / NH)) return 1;
            bufs b = make(B, T, C, NH);
            fwd(&cpu, &b, B, T, C, NH, d);
            uint64_t hf = fnv(fnv(1469598103934665603ull, b.out, (size_t)B * T * C), b.stats, (size_t)B * NH * T);
            bwd(&cpu, &b, B, T, C, NH, d);
            uint64_t hb = fnv(1469598103934665603ull, b.dqkv, (size_t)B * T * 3 * C);
            hb = fnv(hb, b.stats + (size_t)B * NH * T, (size_t)B * NH * T);
            tt_status st;
            if (tt_cpu_status(&cpu, &st)) printf("error: %s\n", st.msg);
            printf("B%d T%d C%d NH%d drop%d  fwd %016llx  bwd %016llx\n", B, T, C, NH, cases[i][4], (unsigned long long)hf,
                   (unsigned long long)hb);
            unmake(&b);
            tt_cpu_destroy(&cpu);
        }
        return 0;
    }
    if (argc >= 8 && !strcmp(argv[1], "time")) {
        int threads = atoi(argv[2]), reps = atoi(argv[3]), B = atoi(argv[4]), T = atoi(argv[5]), C = atoi(argv[6]),
            NH = atoi(argv[7]);
        int which = argc > 8 ? atoi(argv[8]) : 0; /* 1: forward only, 2: backward only */
        tt_cpu cpu;
        if (cpu_for(&cpu, threads, T, C / NH)) return 1;
        bufs b = make(B, T, C, NH);
        double *tf = malloc((size_t)reps * sizeof(double)), *tb = malloc((size_t)reps * sizeof(double));
        int ct = threads == 1;
        fwd(&cpu, &b, B, T, C, NH, NULL), bwd(&cpu, &b, B, T, C, NH, NULL);
        for (int r = 0; r < reps; r++) {
            double t0 = clk(ct);
            if (which != 2) fwd(&cpu, &b, B, T, C, NH, NULL);
            double t1 = clk(ct);
            if (which != 1) bwd(&cpu, &b, B, T, C, NH, NULL);
            double t2 = clk(ct);
            tf[r] = t1 - t0, tb[r] = t2 - t1;
        }
        qsort(tf, (size_t)reps, sizeof(double), cmpd), qsort(tb, (size_t)reps, sizeof(double), cmpd);
        printf("fwd %.3f ms  bwd %.3f ms\n", tf[reps / 2] * 1e3, tb[reps / 2] * 1e3);
        return 0;
    }
    fprintf(stderr, "usage: dev_attention_cpu sum [threads] | time THREADS REPS B T C NH [1|2]\n");
    return 1;
}
