/* profile.c — per-kernel timing of the WebGPU backend's recorded schedule
 * (tt_wgpu_profile; its entry point is tt_webgpu_profile of webgpu_profile.h,
 * in backend.c: `tinytrain profile`, reached through
 * be->vt->get_proc(be, "webgpu.profile")). Reads the schedule, runs it
 * site by site after step.c's steps in flight are finished. */
#include <stdio.h>
#include <string.h>

#include "backend_webgpu.h"
#include "webgpu_profile.h"

#define WARM_S 0.5 /* seconds of whole-schedule warm-up before timing */

/* n sites run reps times back to back in one submit, host clock around a
 * 16-byte readback */
static int time_sites(wgpu_impl *w, const tt_gsite *s, int n, int reps, double *sec, tt_status *st) {
    float tmp[4];
    double t0 = tt_now();
    TT_CHECK(tt_gpu_begin(w->g, st));
    for (int r = 0; s && r < reps; r++) tt_gops_run(w->g, s, n);
    tt_gpu_copy(w->g, w->plan.stats, 0, w->plan.stage_eval, 0, 16);
    TT_CHECK(tt_gpu_submit(w->g, st));
    TT_CHECK(tt_gpu_read_start(w->g, w->plan.stage_eval, 0, 16, st));
    TT_CHECK(tt_gpu_read_finish(w->g, w->plan.stage_eval, tmp, st));
    *sec = tt_now() - t0;
    return TT_OK;
}

int tt_wgpu_profile(wgpu_impl *w, int reps, int detail, tt_webgpu_prof *out, int max, int *n, tt_status *st) {
    *n = 0;
    if (reps < 1) reps = 1;
    TT_CHECK(tt_wgpu_finish_pending(w, 0, st));
    TT_CHECK(tt_wgpu_finish_pending(w, 1, st));
    double empty = 1e30, t;
    for (int i = 0; i < 5; i++) {
        TT_CHECK(time_sites(w, NULL, 0, 0, &t, st));
        if (t < empty) empty = t;
    }
    const tt_gsite *lists[3] = {w->rec.plain.fwd, w->rec.plain.bwd, w->rec.opt};
    const int counts[3] = {w->rec.plain.n_fwd, w->rec.plain.n_bwd, w->rec.n_opt};
    /* warm-up: the whole schedule in step order, repeated for at least
     * WARM_S: every pipeline compiled and the GPU's clocks up before the
     * first site is timed. Without it the H200 gpt2b8 profile read the
     * batched q, k, v projections at 1.02 ms a dispatch against 0.74 ms
     * both alone and inside whole steps (measured by omitting them,
     * dev/step_omit.c; docs/BENCHMARKS.md) */
    double w0 = tt_now();
    for (int round = 0; round < 2 || tt_now() - w0 < WARM_S; round++)
        for (int l = 0; l < 3; l++) TT_CHECK(time_sites(w, lists[l], counts[l], 1, &t, st));
    for (int l = 0; l < 3; l++)
        for (int i = 0; i < counts[l]; i++) {
            const tt_gsite *s = &lists[l][i];
            if (!s->x || !s->name) continue;
            double best = 1e30;
            for (int k = 0; k < 2; k++) { /* the first run may include lazy compilation */
                TT_CHECK(time_sites(w, s, 1, reps, &t, st));
                if (t < best) best = t;
            }
            double ms = (best - empty) / reps * 1e3;
            if (ms < 0) ms = 0;
            int j = 0;
            const char *tag = detail ? s->tag : "";
            while (j < *n && (strcmp(out[j].kernel, s->name) != 0 || strcmp(out[j].tag, tag) != 0)) j++;
            if (j == *n) {
                if (*n == max) continue;
                memset(&out[j], 0, sizeof out[j]);
                out[j].kernel = s->name;
                snprintf(out[j].tag, sizeof out[j].tag, "%s", tag);
                (*n)++;
            }
            out[j].sites++;
            out[j].ms += ms;
            out[j].gflop += s->flops * 1e-9;
        }
    return TT_OK;
}
