/* profile.c — the per-kernel profile of a training step, sorted and written
 * as JSON (profile.h) over the WebGPU backend's "webgpu.profile" extra. */
#include "profile.h"

#include <stdlib.h>
#include <string.h>

static int slowest_first(const void *a, const void *b) {
    double x = ((const tt_webgpu_prof *)a)->ms, y = ((const tt_webgpu_prof *)b)->ms;
    return x > y ? -1 : x < y;
}

int tt_profile(tt_backend *be, int reps, int detail, tt_webgpu_prof *rows, int *n, tt_status *st) {
    *n = 0;
    tt_webgpu_profile_fn profile =
        be->vt->get_proc ? (tt_webgpu_profile_fn)be->vt->get_proc(be, "webgpu.profile") : NULL;
    if (!profile)
        return tt_fail(st, TT_EUNSUP, "the %s backend has no kernel profile (WebGPU only; `tinytrain bench` "
                       "times whole steps on every backend)", be->desc.name);
    TT_CHECK(profile(be, reps, detail, rows, TT_PROFILE_MAX, n, st));
    qsort(rows, (size_t)*n, sizeof *rows, slowest_first);
    return TT_OK;
}

void tt_profile_json(tt_jw *j, const char *preset, const char *device, int precision, int reps,
                     const tt_webgpu_prof *rows, int n) {
    double sum = 0;
    for (int i = 0; i < n; i++) sum += rows[i].ms;
    tt_jw_cstr(j, "{\"schema\":\"tinytrain.profile/1\",\"preset\":");
    tt_jw_string(j, preset, strlen(preset));
    tt_jw_cstr(j, ",\"device\":");
    tt_jw_string(j, device, strlen(device));
    tt_jw_printf(j, ",\"precision\":\"%s\",\"reps\":%d,\"sum_ms\":%.6f,\"kernels\":[",
                 precision == TT_PRECISION_F16 ? "f16" : "f32", reps, sum);
    for (int i = 0; i < n; i++) {
        tt_jw_printf(j, "%s{\"kernel\":\"%s\",\"detail\":", i ? "," : "", rows[i].kernel);
        tt_jw_string(j, rows[i].tag, strlen(rows[i].tag));
        tt_jw_printf(j, ",\"sites\":%d,\"ms\":%.6f,\"gflop\":%.6f}", rows[i].sites, rows[i].ms, rows[i].gflop);
    }
    tt_jw_cstr(j, "]}");
}
