/* backend_create.c — the one backend constructor (backend_create.h: kind
 * "cpu" | "webgpu" | "auto") over the per-kind constructors of
 * src/cpu/backend.c and src/webgpu/backend.c; the rule for "auto" lives here only. */
#include "backend_create.h"

#include <stdio.h>
#include <string.h>

const tt_model_config tt_probe_config = {1, 32, 2, 16, 1, TT_VOCAB, 0, 0, 0.0f, 0, 0.0f};

int tt_backend_create(const char *kind, const tt_model_config *cfg, const tt_backend_opts *opts, tt_backend **out,
                      char *notice, size_t notice_cap, tt_status *st) {
    *out = NULL;
    if (notice && notice_cap) notice[0] = 0;
    if (strcmp(kind, "cpu") == 0) return tt_backend_cpu_create(cfg, opts, out, st);
    int is_auto = strcmp(kind, "auto") == 0;
    if (!is_auto && strcmp(kind, "webgpu") != 0)
        return tt_fail(st, TT_EINVAL, "unknown backend '%.40s' (valid: cpu, webgpu, auto)", kind);
    tt_status gst;
    tt_status_clear(&gst);
    int rc = tt_backend_webgpu_create(cfg, opts, out, &gst);
    if (!is_auto) {
        if (rc && st) *st = gst;
        return rc;
    }
    /* auto: a hardware adapter trains; a software renderer or no adapter
     * leaves the work to the CPU backend, saying why */
    if (rc == TT_OK && !(*out)->desc.is_software) return TT_OK;
    if (opts && opts->precision == TT_PRECISION_F16) { /* the cpu backend has no f16 tier: say why not webgpu */
        char why[300];
        snprintf(why, sizeof why, "%.280s", rc == TT_OK ? (*out)->desc.device : gst.msg);
        if (rc == TT_OK) tt_backend_destroy(*out);
        *out = NULL;
        return tt_fail(st, TT_EUNSUP,
                       "--precision f16 needs a WebGPU GPU with shader-f16; auto found none (%s%s): use --precision "
                       "f32, or --backend webgpu for a software adapter",
                       rc == TT_OK ? "software renderer " : "", why);
    }
    if (rc == TT_OK) {
        if (notice) snprintf(notice, notice_cap, "webgpu adapter '%s' is a software renderer; using the cpu backend",
                             (*out)->desc.device);
        tt_backend_destroy(*out);
        *out = NULL;
    } else if (notice) {
        snprintf(notice, notice_cap, "webgpu unavailable (%.300s); using the cpu backend", gst.msg);
    }
    return tt_backend_cpu_create(cfg, opts, out, st);
}

void tt_backend_fail_line(const char *kind, tt_status *st) {
    char m[sizeof st->msg];
    const char *why = strncmp(st->msg, "webgpu: ", 8) == 0 ? st->msg + 8 : st->msg;
    snprintf(m, sizeof m, "%s", why);
    if (strcmp(kind, "webgpu") == 0) tt_fail(st, st->code, "webgpu backend unavailable: %.480s", m);
    else tt_fail(st, st->code, "%.40s backend: %.480s", kind, m);
}
