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

#include "engine/profile.h"

static const opt_def profile_opts[] = {
    OPT_MODEL,
    {"reps", O_REPS, 1, "times each dispatch site runs back to back per measurement (default 20)"},
    {"detail", O_DETAIL, 0, "one row per matmul shape / attention tile instead of per kernel"},
    {"seed", O_SEED, 1, "seed for the weights (default 1337)"},
    {"precision", O_TABLE, 1, "f32 (default) or f16 mixed precision (WebGPU with shader-f16), as in training"},
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
    tt_train_config tc;
    tt_train_config_default(&tc, 1);
    if ((rc = table_options(&o, &cfg, &tc))) return rc; /* precision */
    int precision = tc.precision;
    tt_backend *be = NULL;
    if ((rc = make_backend("webgpu", &cfg, &(tt_backend_opts){.threads = 1, .precision = precision}, 1, &be))) return rc;
    size_t P = be->layout.total;
    float *p = malloc(P * sizeof *p);
    tt_webgpu_prof prof[TT_PROFILE_MAX];
    int n = 0;
    if (!p) {
        rc = error_line(EXIT_FAIL, "out of memory");
        goto out;
    }
    tt_model_init_params(&be->cfg, &be->layout, o.set[O_SEED] ? o.seed : 1337, p, NULL);
    if (be->vt->set_state(be, p, NULL, NULL, &st) || tt_profile(be, reps, o.set[O_DETAIL], prof, &n, &st)) {
        rc = error_line(EXIT_FAIL, "profile: %s", st.msg);
        goto out;
    }
    tt_jw j;
    tt_jw_init(&j);
    const char *name = preset_name ? preset_name : "custom";
    if (o.json) tt_profile_json(&j, name, be->desc.device, precision, reps, prof, n);
    else tt_profile_table(&j, name, be->desc.device, precision, reps, prof, n);
    if (j.oom) rc = error_line(EXIT_FAIL, "out of memory");
    else printf(o.json ? "%s\n" : "%s", j.buf);
    tt_jw_free(&j);
out:
    free(p);
    tt_backend_destroy(be);
    return rc;
}

