/* cmd_profile.c — `tinytrain profile`: time of every WebGPU kernel of one training step (the WebGPU backend's "webgpu.profile" extra). */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "webgpu/webgpu_profile.h"

static const opt_def profile_opts[] = {
    OPT_MODEL,
    {"reps", O_REPS, 1, "times each dispatch site runs back to back per measurement (default 20)"},
    {"detail", O_DETAIL, 0, "one row per matmul shape / attention tile instead of per kernel"},
    {"seed", O_SEED, 1, "seed for the weights (default 1337)"},
    {"json", O_JSON, 0, "print one JSON object"},
    {"help", O_HELP, 0, "this help"},
    {NULL, 0, 0, NULL}};


/* ------------------------------------------------------------------ */
/* profile: per-kernel time of one WebGPU training step (webgpu_profile.h).
 * After a warm-up of the whole schedule (pipelines compiled, the GPU's
 * clocks up), each dispatch site of the step (forward, backward, optimizer,
 * n_micro = 1) is timed alone: run `reps` times back to back in one submit,
 * host clock around a readback, minus an empty submit's cost. Rows
 * aggregate sites by kernel (or, --detail, by kernel and shape). The sum is
 * not the step time: a real step overlaps nothing, but it also skips the
 * per-site submit cost; `tinytrain bench` gives the step time. Default 20
 * reps: a site's burst of work must outlast the GPU's clock ramp (with 3,
 * the H200 gpt2 profile read the forward sites 30-70% high;
 * docs/BENCHMARKS.md run 5). */
static int cmp_prof(const void *a, const void *b) {
    double x = ((const tt_webgpu_prof *)a)->ms, y = ((const tt_webgpu_prof *)b)->ms;
    return x > y ? -1 : x < y;
}

int cmd_profile(int argc, char **argv) {
    opts o;
    int rc = command_args("profile", "Per-kernel time of one WebGPU training step (forward, backward, optimizer): every\n"
                     "dispatch site timed alone, summed per kernel, with GFLOP/s of matmuls and attention.\n"
                     "WebGPU only; `tinytrain bench` measures whole steps on every backend.", profile_opts, argc, argv, &o);
    if (rc) return rc < 0 ? 0 : rc;
    tt_model_config cfg;
    const char *preset_name = NULL;
    if ((rc = model_config(&o, NULL, DEFAULT_PRESET, &cfg, &preset_name))) return rc;
    int reps = o.set[O_REPS] ? o.reps : 20;
    tt_status st;
    tt_status_clear(&st);
    tt_backend *be = NULL;
    if ((rc = make_backend("webgpu", &cfg, &(tt_backend_opts){.threads = 1}, 1, &be))) return rc;
    size_t P = be->layout.total;
    float *p = malloc(P * sizeof *p);
    tt_webgpu_prof prof[256];
    int n = 0;
    if (!p) {
        rc = error_line(EXIT_FAIL, "out of memory");
        goto out;
    }
    tt_model_init_params(&be->cfg, &be->layout, o.set[O_SEED] ? o.seed : 1337, p, NULL);
    tt_webgpu_profile_fn profile = (tt_webgpu_profile_fn)be->vt->get_proc(be, "webgpu.profile");
    if (be->vt->set_state(be, p, NULL, NULL, &st) || profile(be, reps, o.set[O_DETAIL], prof, 256, &n, &st)) {
        rc = error_line(EXIT_FAIL, "profile: %s", st.msg);
        goto out;
    }
    qsort(prof, (size_t)n, sizeof *prof, cmp_prof);
    double tot = 0;
    for (int i = 0; i < n; i++) tot += prof[i].ms;
    if (o.json) {
        printf("{\"schema\":\"tinytrain.profile/1\",\"preset\":");
        json_str(stdout, preset_name ? preset_name : "", preset_name ? strlen(preset_name) : 0);
        printf(",\"device\":");
        json_str(stdout, be->desc.device, strlen(be->desc.device));
        printf(",\"reps\":%d,\"sum_ms\":%.6f,\"kernels\":[", reps, tot);
        for (int i = 0; i < n; i++) {
            printf("%s{\"kernel\":\"%s\",\"detail\":", i ? "," : "", prof[i].kernel);
            json_str(stdout, prof[i].tag, strlen(prof[i].tag));
            printf(",\"sites\":%d,\"ms\":%.6f,\"gflop\":%.6f}", prof[i].sites, prof[i].ms, prof[i].gflop);
        }
        printf("]}\n");
    } else {
        printf("profile: %s (%lld params) on %s, each site run %d times back to back\n",
               preset_name ? preset_name : "custom", (long long)tt_config_param_count(&cfg), be->desc.device, reps);
        printf("  %-16s %-30s %5s %10s %6s %10s\n", "kernel", "detail", "sites", "ms/step", "share", "GFLOP/s");
        for (int i = 0; i < n; i++) {
            char gf[32] = "";
            if (prof[i].gflop > 0 && prof[i].ms > 0) snprintf(gf, sizeof gf, "%.1f", prof[i].gflop / prof[i].ms * 1e3);
            printf("  %-16s %-30s %5d %10.3f %5.1f%% %10s\n", prof[i].kernel, prof[i].tag, prof[i].sites, prof[i].ms,
                   100.0 * prof[i].ms / (tot > 0 ? tot : 1), gf);
        }
        printf("  sum of the sites: %.3f ms (not the step time: see tinytrain bench)\n", tot);
    }
out:
    free(p);
    tt_backend_destroy(be);
    return rc;
}

