/* bench_webgpu.c — benchmark of the WebGPU backend (not a test, not in
 * ctest): steady-state ms per training step of a preset (n_micro = 1), in
 * two call patterns: "sync" (step, then step_result: the host waits for
 * every step) and "pipelined" (the trainer's pattern since tt_train_run
 * pipelines: step k+1 submitted before the loss of step k is read, through
 * step_result_prev); tokens/s, GFLOP/s, then the per-kernel breakdown of one
 * step (tt_webgpu_profile). Progress goes to stderr as it happens (stdout is
 * line-buffered), so a slow preset (gpt2) shows where the time goes.
 *
 *   cmake --build build          (builds build/bench_webgpu, like every bench/bench_*.c)
 *   build/bench_webgpu [preset] [steps] [profile reps]
 *
 * Pipeline compilation and the first steps are excluded (warm-up); the sync
 * step time is the median over `steps`, the pipelined one the mean of
 * `steps` back-to-back steps. profile reps 0 skips the profile. Env:
 * TT_BENCH_PIPELINED=0 skips the pipelined measurement; the test hooks
 * (src/webgpu/hooks.h: benches link the test library) apply. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "model.h"
#include "rng.h"
#include "webgpu/device.h"
#include "webgpu/gpu_ops.h"
#include "webgpu/webgpu_profile.h"

static int cmpd(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static int cmpp(const void *a, const void *b) {
    double x = ((const tt_webgpu_prof *)a)->ms, y = ((const tt_webgpu_prof *)b)->ms;
    return x > y ? -1 : x < y;
}

int main(int argc, char **argv) {
    const char *name = argc > 1 ? argv[1] : "small";
    int steps = argc > 2 ? atoi(argv[2]) : 20;
    int reps = argc > 3 ? atoi(argv[3]) : 10;
    const tt_preset *pr = tt_preset_find(name);
    if (!pr || steps < 1) {
        fprintf(stderr, "usage: bench_webgpu [preset] [steps] [profile reps]\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    tt_status st;
    tt_backend *be;
    fprintf(stderr, "[bench] %s: %lld params, B=%d T=%d C=%d L=%d; creating the webgpu backend...\n", name,
            (long long)tt_config_param_count(&pr->cfg), pr->cfg.batch, pr->cfg.ctx, pr->cfg.d_model, pr->cfg.n_layer);
    double t0 = tt_now();
    if (tt_backend_webgpu_create(&pr->cfg, NULL, &be, &st)) {
        fprintf(stderr, "webgpu: %s\n", st.msg);
        printf("preset %s: webgpu backend refused/failed: %s\n", name, st.msg);
        return 1;
    }
    double t_create = tt_now() - t0;
    fprintf(stderr, "[bench] created in %.2f s on %s\n", t_create, be->desc.device);
    const tt_gpu_info *gi = tt_webgpu_info(be);
    if (gi)
        printf("adapter %s: subgroups %d (%u..%u), shader-f16 %d, subgroup-matrix %d, timestamps %d, max binding %.0f MiB, "
               "wg storage %u B, max invocations %u\n",
               gi->name, gi->has_subgroups, gi->subgroup_min, gi->subgroup_max, gi->has_f16, gi->has_subgroup_matrix,
               gi->has_timestamps, gi->max_storage_binding / 1048576.0, gi->max_wg_storage, gi->max_invocations);
    if (gi) { /* the matmul kernel of each tile (tt_gop_mm_kcfg) */
        tt_mm_kcfg k128, k128t, k64, k32;
        tt_gop_mm_kcfg(gi->max_wg_storage, 128, 0, &k128);
        tt_gop_mm_kcfg(gi->max_wg_storage, 128, 1, &k128t);
        tt_gop_mm_kcfg(gi->max_wg_storage, 64, 0, &k64);
        tt_gop_mm_kcfg(gi->max_wg_storage, 32, 0, &k32);
        printf("matmul kernels: tile 128 %dx%d/thread BK %d %d stage(s) swz %d (B transposed: BK %d %d stage(s)); "
               "tile 64 %dx%d/thread %u threads %d stage(s) swz %d; tile 32 %d stage(s) swz %d\n",
               k128.tm, k128.tm, k128.bk, k128.stages, k128.swz, k128t.bk, k128t.stages, k64.tm, k64.tm, k64.threads,
               k64.stages, k64.swz, k32.stages, k32.swz);
    }
    size_t P = be->layout.total, ntok = (size_t)pr->cfg.batch * (pr->cfg.ctx + 1);
    float *p = malloc(P * sizeof *p);
    uint8_t *tok = malloc(ntok);
    tt_model_init_params(&be->cfg, &be->layout, 1337, p, NULL);
    if (be->vt->set_state(be, p, NULL, NULL, &st)) {
        fprintf(stderr, "set_state: %s\n", st.msg);
        return 1;
    }
    tt_optim_args o = {1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, 0.1f, 0.05f, 0.0f, 0, 0};
    double *ms = malloc((size_t)steps * sizeof *ms);
    float loss = 0, gn = 0;
    int warm = 3;
    for (int k = 0; k < warm + steps; k++) {
        for (size_t i = 0; i < ntok; i++) tok[i] = (uint8_t)(97 + tt_rand_below(1, TT_STREAM_TEST, k * ntok + i, 26));
        double a = tt_now();
        if (be->vt->step(be, tok, 1, &o, &st) || be->vt->step_result(be, &loss, &gn, &st)) {
            fprintf(stderr, "step: %s\n", st.msg);
            printf("preset %s: step %d failed: %s\n", name, k, st.msg);
            return 1;
        }
        double dt = (tt_now() - a) * 1e3;
        if (k == 0) printf("first step (includes lazy pipeline compilation): %.1f ms\n", dt);
        if (k < warm || dt > 500 || k == warm + steps - 1)
            fprintf(stderr, "[bench] sync step %d/%d: %.1f ms, loss %.4f\n", k + 1, warm + steps, dt, loss);
        if (k >= warm) ms[k - warm] = dt;
    }
    qsort(ms, (size_t)steps, sizeof *ms, cmpd);
    double med = ms[steps / 2];
    double flops = tt_config_step_flops(&pr->cfg);
    double toks = (double)pr->cfg.batch * pr->cfg.ctx;
    printf("preset %s on %s: create %.2f s; step median %.3f ms (min %.3f, max %.3f) over %d steps\n", name,
           be->desc.device, t_create, med, ms[0], ms[steps - 1], steps);
    printf("  %.0f tokens/s, %.1f GFLOP/s, loss %.4f\n", toks / med * 1e3, flops / med * 1e-6, loss);
    const char *pe = getenv("TT_BENCH_PIPELINED");
    if (!(pe && atoi(pe) == 0) && be->vt->step_result_prev) {
        /* the trainer's pattern: submit k+1, then read k (tokens prepared
         * for k+1 before its submit, as tt_train_run does) */
        for (size_t i = 0; i < ntok; i++) tok[i] = (uint8_t)(97 + tt_rand_below(2, TT_STREAM_TEST, i, 26));
        double a = tt_now();
        int rc = be->vt->step(be, tok, 1, &o, &st);
        for (int k = 1; !rc && k < steps; k++) {
            for (size_t i = 0; i < ntok; i++)
                tok[i] = (uint8_t)(97 + tt_rand_below(2, TT_STREAM_TEST, (uint64_t)k * ntok + i, 26));
            rc = be->vt->step(be, tok, 1, &o, &st);
            if (!rc) rc = be->vt->step_result_prev(be, &loss, &gn, &st);
        }
        if (!rc) rc = be->vt->step_result(be, &loss, &gn, &st);
        if (rc) {
            fprintf(stderr, "pipelined step: %s\n", st.msg);
            return 1;
        }
        double per = (tt_now() - a) / steps * 1e3;
        printf("  pipelined: %.3f ms/step (mean of %d back-to-back steps), %.0f tokens/s, %.1f GFLOP/s\n", per, steps,
               toks / per * 1e3, flops / per * 1e-6);
    }
    if (reps > 0) {
        fprintf(stderr, "[bench] profiling every kernel site (%d reps each)...\n", reps);
        tt_webgpu_prof prof[256];
        int n = 0;
        const char *de = getenv("TT_PROFILE_DETAIL"); /* 1: per matmul shape / attention tile */
        if (tt_webgpu_profile(be, reps, de && atoi(de) > 0, prof, 256, &n, &st)) {
            fprintf(stderr, "profile: %s\n", st.msg);
            return 1;
        }
        qsort(prof, (size_t)n, sizeof *prof, cmpp);
        double tot = 0;
        for (int i = 0; i < n; i++) tot += prof[i].ms;
        printf("  per kernel (each site run %d times back to back; sum %.3f ms):\n", reps, tot);
        for (int i = 0; i < n; i++)
            printf("    %-16s %-28s %4d sites %9.3f ms %5.1f%%%s", prof[i].kernel, prof[i].tag, prof[i].sites, prof[i].ms,
                   100.0 * prof[i].ms / (tot > 0 ? tot : 1), prof[i].gflop > 0 ? "" : "\n"),
                prof[i].gflop > 0 ? printf("  %8.1f GFLOP/s\n", prof[i].gflop / (prof[i].ms > 0 ? prof[i].ms : 1e-9) * 1e3)
                                  : 0;
    }
    tt_backend_destroy(be);
    free(p), free(tok), free(ms);
    return 0;
}
