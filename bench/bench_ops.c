/* bench_ops.c — microbenchmark of the CPU backend (not a test, not in ctest):
 * steady-state ms of one full training step of a preset (and its forward /
 * backward / optimizer split from phase_times), and of each op at that
 * preset's shapes, with the achieved GFLOP/s of the matmuls: the per-op time
 * split of a step.
 *
 *   cmake --build build          (builds build/bench_ops, like every bench/bench_*.c)
 *   build/bench_ops [preset] [threads] [reps] [L=n] [C=n] [NH=n] [T=n] [B=n] [only=TEXT]
 *
 * L= C= NH= T= B= override the preset's layers, width, heads, context and
 * batch (e.g. the shakespeare_char shape: small 16 5 L=6 C=384 NH=6 T=256
 * B=64); only=TEXT runs just the rows whose label contains TEXT. Times are medians over `reps` repetitions after two warm-up runs;
 * with one thread they are the process's CPU time (CLOCK_PROCESS_CPUTIME_ID),
 * so time the shared machine gives to others does not count, else wall
 * time. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "cpu/backend_cpu.h"
#include "model.h"
#include "cpu/ops.h"
#include "rng.h"

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define MAXREP 1000
static double times[MAXREP];
static int use_cpu_time;
static const char *only; /* run only the rows whose label contains this */

static double now(void) {
    if (!use_cpu_time) return tt_now();
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#define BENCH(label, flops, reps, code)                                                     \
    do {                                                                                    \
        if (only && !strstr(label, only)) break;                                            \
        for (int w_ = 0; w_ < 2; w_++) { code; }                                            \
        for (int r_ = 0; r_ < (reps); r_++) {                                               \
            double t0_ = now();                                                                \
            code;                                                                           \
            times[r_] = now() - t0_;                                                           \
        }                                                                                   \
        qsort(times, (size_t)(reps), sizeof(double), cmp_d);                                \
        double med_ = times[(reps) / 2];                                                    \
        if ((flops) > 0)                                                                    \
            printf("  %-34s %9.3f ms  %8.1f GFLOP/s\n", label, med_ * 1e3, (flops) / med_ * 1e-9); \
        else                                                                                \
            printf("  %-34s %9.3f ms\n", label, med_ * 1e3);                                \
    } while (0)

static void nop_task(void *arg, int64_t i, int tid) {
    (void)arg, (void)i, (void)tid;
}

static float *buf(size_t n, uint64_t seed) {
    float *p = tt_alloc(n * sizeof(float), NULL);
    for (size_t i = 0; i < n; i++) p[i] = 2.0f * tt_rand_uniform(seed, 9, i) - 1.0f;
    return p;
}

int main(int argc, char **argv) {
    const char *name = argc > 1 ? argv[1] : "tiny";
    int threads = argc > 2 ? atoi(argv[2]) : 0;
    int reps = argc > 3 ? atoi(argv[3]) : 10;
    if (reps < 1) reps = 1;
    if (reps > MAXREP) reps = MAXREP;
    const tt_preset *pr = tt_preset_find(name);
    if (!pr) {
        fprintf(stderr, "unknown preset %s\n", name);
        return 1;
    }
    tt_model_config c = pr->cfg;
    for (int i = 4; i < argc; i++) {
        int v = 0;
        if (sscanf(argv[i], "L=%d", &v) == 1) c.n_layer = v;
        else if (sscanf(argv[i], "C=%d", &v) == 1) c.d_model = v;
        else if (sscanf(argv[i], "NH=%d", &v) == 1) c.n_head = v;
        else if (sscanf(argv[i], "T=%d", &v) == 1) c.ctx = v;
        else if (sscanf(argv[i], "B=%d", &v) == 1) c.batch = v;
        else if (strncmp(argv[i], "only=", 5) == 0) only = argv[i] + 5;
        else {
            fprintf(stderr, "unknown argument %s\n", argv[i]);
            return 1;
        }
    }
    use_cpu_time = threads == 1;
    tt_status st;
    tt_backend *be;
    if (tt_backend_cpu_create(&c, &(tt_backend_opts){.threads = threads}, &be, &st)) {
        fprintf(stderr, "%s\n", st.msg);
        return 1;
    }
    int B = c.batch, T = c.ctx, C = c.d_model, NH = c.n_head, V = c.vocab, N = B * T;
    printf("preset %s, L=%d C=%d NH=%d B=%d T=%d, %s, %s time\n", name, c.n_layer, C, NH, B, T, be->desc.device,
           use_cpu_time ? "CPU" : "wall");
    float *p = malloc(be->layout.total * sizeof(float));
    tt_model_init_params(&c, &be->layout, 1, p, NULL);
    be->vt->set_state(be, p, NULL, NULL, &st);
    tt_token *tok = malloc(((size_t)B * (T + 1)) * sizeof *tok);
    for (size_t i = 0; i < (size_t)B * (T + 1); i++) tok[i] = (tt_token)tt_rand_below(1, 1, i, 256);
    tt_optim_args opt = {1e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, 0.1f, 0.05f, 0.0f, 0, 0};
    BENCH("full step (fwd+bwd+adamw)", tt_config_step_flops(&c), reps, be->vt->step(be, tok, 1, &opt, &st));
    if (!only || strstr("full step", only)) {
        double ms[3];
        if (be->vt->phase_times && be->vt->phase_times(be, ms, &st) == TT_OK)
            printf("  last step: forward %.3f ms, backward %.3f ms, optimizer %.3f ms\n", ms[0], ms[1], ms[2]);
    }

    /* ops at this preset's shapes */
    tt_cpu cpu;
    tt_cpu_create(&cpu, threads, tt_backend_cpu_shared_scratch(&c), tt_backend_cpu_thread_scratch(&c), &st);
    float *x = buf((size_t)N * 4 * C, 1), *y = buf((size_t)N * 4 * C, 2), *w = buf((size_t)4 * C * C, 3);
    float *b = buf((size_t)4 * C, 4), *dw = buf((size_t)(4 * C > V ? 4 * C : V) * C, 5) /* also dwte */, *db = buf((size_t)4 * C, 6);
    float *qkv = buf((size_t)N * 3 * C, 7), *dqkv = buf((size_t)N * 3 * C, 8), *ast = buf(2 * (size_t)B * NH * T, 9);
    float *lg = buf((size_t)N * V, 10), *wte = buf((size_t)V * C, 11), *lst = buf(2 * (size_t)N, 12), *losses = buf(N, 13);
    float *dx = buf((size_t)N * 4 * C, 14);
    int32_t *tg = malloc((size_t)N * sizeof *tg);
    for (int i = 0; i < N; i++) tg[i] = i % V;
    double f;
    BENCH("empty op (1 phase, 64 chunks)", 0, reps, tt_cpu_run1(&cpu, nop_task, NULL, 64));
    {
        tt_phase ph2[2] = {{1, {{nop_task, NULL, 64}}, 0}, {1, {{nop_task, NULL, 64}}, 0}};
        BENCH("empty op (2 phases, 64 chunks)", 0, reps, tt_cpu_run(&cpu, ph2, 2));
    }
    {
        tt_span *spans;
        int64_t ns;
        tt_spans_build(&be->layout, &spans, &ns, &st);
        size_t n = be->layout.total;
        float *pp = buf(n, 20), *gg = buf(n, 21), *mm = buf(n, 22), *vv = buf(n, 23);
        double *part = malloc((size_t)ns * sizeof(double));
        for (size_t i = 0; i < n; i++) vv[i] = fabsf(vv[i]);
        BENCH("grad norm", 0, reps, tt_adamw_grad_sumsq(&cpu, gg, spans, ns, part));
        BENCH("adamw", 0, reps, tt_adamw_update(&cpu, pp, gg, mm, vv, spans, ns, &opt, 0.5f, 0));
        free(spans), free(part);
    }
    {
        /* wpe and dwpe have T rows, wte and dwte V rows, whichever is more */
        float *emb = buf((size_t)N * C, 30), *wpe = buf((size_t)T * C, 31), *dwpe = buf((size_t)T * C, 32);
        float *dwte = buf((size_t)V * C, 33);
        BENCH("embedding fwd", 0, reps, tt_embedding_forward(&cpu, emb, tg, wte, wpe, B, T, C));
        BENCH("embedding bwd", 0, reps, tt_embedding_backward(&cpu, dwte, dwpe, emb, tg, B, T, C, V));
        tt_free(emb), tt_free(wpe), tt_free(dwpe), tt_free(dwte);
    }
    f = 2.0 * N * C * 3 * C;
    BENCH("qkv fwd", f, reps, tt_qkv_forward(&cpu, qkv, x, w, b, w, b, w, b, N, C));
    BENCH("qkv bwd", 2 * f, reps, tt_qkv_backward(&cpu, dx, dw, db, dw, db, dw, db, dqkv, x, w, w, w, N, C));
    BENCH("  qkv bwd dinp only (3 NT segments)", f, reps,
          tt_qkv_backward(&cpu, dx, NULL, NULL, NULL, NULL, NULL, NULL, dqkv, x, w, w, w, N, C));
    BENCH("  qkv bwd dweight only (3 TN)", f, reps,
          tt_qkv_backward(&cpu, NULL, dw, NULL, dw, NULL, dw, NULL, dqkv, x, w, w, w, N, C));
    f = 2.0 * N * C * 4 * C;
    BENCH("fc fwd (C -> 4C)", f, reps, tt_matmul_forward(&cpu, y, x, w, b, N, C, 4 * C));
    BENCH("fc bwd", 2 * f, reps, tt_matmul_backward(&cpu, dx, dw, db, y, x, w, N, C, 4 * C));
    BENCH("  fc bwd dinp only (NT)", f, reps, tt_matmul_backward(&cpu, dx, NULL, NULL, y, x, w, N, C, 4 * C));
    BENCH("  fc bwd dweight only (TN)", f, reps, tt_matmul_backward(&cpu, NULL, dw, NULL, y, x, w, N, C, 4 * C));
    BENCH("proj fwd (4C -> C)", f, reps, tt_matmul_residual_forward(&cpu, y, x, w, b, y, N, 4 * C, C));
    BENCH("proj bwd", 2 * f, reps, tt_matmul_backward(&cpu, dx, dw, db, y, x, w, N, 4 * C, C));
    BENCH("  proj bwd dinp only (NT)", f, reps, tt_matmul_backward(&cpu, dx, NULL, NULL, y, x, w, N, 4 * C, C));
    BENCH("  proj bwd dweight only (TN)", f, reps, tt_matmul_backward(&cpu, NULL, dw, NULL, y, x, w, N, 4 * C, C));
    f = 2.0 * N * C * C;
    BENCH("o fwd (C -> C)", f, reps, tt_matmul_residual_forward(&cpu, y, x, w, b, y, N, C, C));
    BENCH("o bwd", 2 * f, reps, tt_matmul_backward(&cpu, dx, dw, db, y, x, w, N, C, C));
    f = 2.0 * N * C * V;
    BENCH("head fwd", f, reps, tt_head_forward(&cpu, lg, x, wte, N, C, V));
    BENCH("head bwd", 2 * f, reps, tt_head_backward(&cpu, dx, dw, lg, x, wte, N, C, V));
    f = 2.0 * B * T * T * C; /* causal: half of QK^T and PV */
    tt_attention_forward(&cpu, y, ast, qkv, qkv + C, qkv + 2 * C, 3 * C, B, T, C, NH, NULL);
    BENCH("attention fwd", f, reps, tt_attention_forward(&cpu, y, ast, qkv, qkv + C, qkv + 2 * C, 3 * C, B, T, C, NH, NULL));
    BENCH("attention bwd", 2 * f, reps,
          tt_attention_backward(&cpu, dqkv, dqkv + C, dqkv + 2 * C, ast, qkv, qkv + C, qkv + 2 * C, y, x, 3 * C, B, T, C, NH, NULL));
    BENCH("layernorm fwd", 0, reps, tt_layernorm_forward(&cpu, y, lst, x, b, b, N, C, TT_LN_EPS_DEFAULT));
    BENCH("layernorm bwd", 0, reps, tt_layernorm_backward(&cpu, dx, db, db, y, x, b, lst, N, C, 1));
    BENCH("gelu fwd (N x 4C)", 0, reps, tt_gelu_forward(&cpu, y, x, (size_t)N * 4 * C, TT_ACT_GELU));
    BENCH("gelu bwd", 0, reps, tt_gelu_backward(&cpu, dx, x, y, (size_t)N * 4 * C, TT_ACT_GELU));
    BENCH("softmax+CE fwd+bwd", 0, reps, tt_crossentropy_forward(&cpu, losses, lg, lg, tg, N, V, 1e-3f));
    if (tt_cpu_status(&cpu, &st)) printf("  %s\n", st.msg);
    tt_backend_destroy(be);
    tt_cpu_destroy(&cpu);
    return 0;
}
