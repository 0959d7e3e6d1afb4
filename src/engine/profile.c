/* profile.c — the per-kernel profile of a training step, sorted and written
 * as JSON (profile.h) over the WebGPU backend's "webgpu.profile" extra. */
#include "profile.h"

#include <stdio.h>
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

static const char *prec_name(int precision) { return precision == TT_PRECISION_F16 ? "f16" : "f32"; }

static double sum_ms(const tt_webgpu_prof *rows, int n) {
    double sum = 0;
    for (int i = 0; i < n; i++) sum += rows[i].ms;
    return sum;
}

void tt_profile_table(tt_jw *j, const char *preset, const char *device, int precision, int reps,
                      const tt_webgpu_prof *rows, int n) {
    double tot = sum_ms(rows, n);
    tt_jw_printf(j, "profile: %s (%s) on %s, each site run %d times back to back\n", preset, prec_name(precision),
                 device, reps);
    tt_jw_printf(j, "  %-26s %-30s %5s %10s %6s %10s\n", "kernel", "detail", "sites", "ms/step", "share", "GFLOP/s");
    for (int i = 0; i < n; i++) {
        char gf[32] = "";
        if (rows[i].gflop > 0 && rows[i].ms > 0) snprintf(gf, sizeof gf, "%.1f", rows[i].gflop / rows[i].ms * 1e3);
        tt_jw_printf(j, "  %-26s %-30s %5d %10.3f %5.1f%% %10s\n", rows[i].kernel, rows[i].tag, rows[i].sites,
                     rows[i].ms, 100.0 * rows[i].ms / (tot > 0 ? tot : 1), gf);
    }
    tt_jw_printf(j, "  sum of the sites: %.3f ms (not the step time: the sites ran one at a time; bench times steps)\n",
                 tot);
}

void tt_profile_json(tt_jw *j, const char *preset, const char *device, int precision, int reps,
                     const tt_webgpu_prof *rows, int n) {
    double sum = sum_ms(rows, n);
    tt_jw_cstr(j, "{\"schema\":\"tinytrain.profile/1\",\"preset\":");
    tt_jw_string(j, preset, strlen(preset));
    tt_jw_cstr(j, ",\"device\":");
    tt_jw_string(j, device, strlen(device));
    tt_jw_printf(j, ",\"precision\":\"%s\",\"reps\":%d,\"sum_ms\":%.6f,\"kernels\":[",
                 prec_name(precision), reps, sum);
    for (int i = 0; i < n; i++) {
        tt_jw_printf(j, "%s{\"kernel\":\"%s\",\"detail\":", i ? "," : "", rows[i].kernel);
        tt_jw_string(j, rows[i].tag, strlen(rows[i].tag));
        tt_jw_printf(j, ",\"sites\":%d,\"ms\":%.6f,\"gflop\":%.6f}", rows[i].sites, rows[i].ms, rows[i].gflop);
    }
    tt_jw table;
    tt_jw_init(&table);
    tt_profile_table(&table, preset, device, precision, reps, rows, n);
    tt_jw_cstr(j, "],\"table\":");
    if (table.oom) j->oom = 1;
    else tt_jw_string(j, table.buf, table.len);
    tt_jw_free(&table);
    tt_jw_cstr(j, "}");
}
