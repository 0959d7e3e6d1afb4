/* device_web.c — the GPU device layer (src/webgpu/device.h) for WebAssembly.
 *
 * Built with TT_WEB_GPU (the web app's tinytrain_web_gpu module): a thin C
 * shim over the JavaScript implementation in device_web.js (navigator.gpu).
 * Handles are indices into JS-side tables; 64-bit sizes travel as doubles
 * (exact below 2^53); failures come back as a tt status code with the
 * one-line message fetched from JS. Two calls may wait for the GPU —
 * ttjs_gpu_read_finish (a buffer mapping) and ttjs_gpu_check (pending error
 * scopes): the Worker wraps them as JSPI suspending imports (and the entry
 * points that reach them as promising exports), so the C caller sees a
 * blocking call while the browser's event loop keeps running.
 *
 * Built without TT_WEB_GPU (the CLI under Node, the CPU web modules): every
 * entry point reports TT_EUNSUP, so `--backend webgpu` / backend=webgpu fail
 * with a clear message instead of a link error. */
#include <stdlib.h>
#include <string.h>

#include "webgpu/device.h"

#ifdef TT_WEB_GPU

#include <stdio.h>

/* device_web.js */
extern int ttjs_gpu_open(int want_timestamps, double *vals, int n_vals, char *name, int name_cap);
extern void ttjs_gpu_close(void);
extern void ttjs_gpu_message(char *buf, int cap);
extern int ttjs_gpu_buffer(double bytes, int usage, const char *label);
extern void ttjs_gpu_buffer_free(int b);
extern int ttjs_gpu_write(int b, double offset, const void *data, double bytes);
extern int ttjs_gpu_kernel(const char *wgsl, const char *entry, int n_bind, const uint8_t *kinds, const char *label);
extern int ttjs_gpu_group(int k, int n, const double *bindings);
extern int ttjs_gpu_begin(void);
extern void ttjs_gpu_dispatch(int k, int grp, int x, int y, int z);
extern void ttjs_gpu_copy(int src, double src_off, int dst, double dst_off, double bytes);
extern void ttjs_gpu_clear(int b, double off, double bytes);
extern int ttjs_gpu_submit(void);
extern int ttjs_gpu_read_start(int b, double offset, double bytes);
extern int ttjs_gpu_read_finish(int b, void *dst); /* may suspend (JSPI) */
extern int ttjs_gpu_read_pending(int b);
extern int ttjs_gpu_check(void);                  /* may suspend (JSPI) */

struct tt_gpu {
    tt_gpu_info info;
};

static int js_fail(tt_status *st, int code) {
    char msg[400];
    msg[0] = 0;
    ttjs_gpu_message(msg, (int)sizeof msg);
    return tt_fail(st, code ? code : TT_EDEVICE, "%s", msg[0] ? msg : "webgpu: error");
}

enum { V_MAX_STORAGE, V_MAX_BUFFER, V_MAX_UNIFORM, V_STORAGE_PER_STAGE, V_WG_STORAGE, V_INVOCATIONS, V_WG_PER_DIM,
       V_UNIFORM_ALIGN, V_STORAGE_ALIGN, V_TIMESTAMPS, V_F16, V_SUBGROUPS, V_SG_MIN, V_SG_MAX, V_IS_CPU, V_SUBGROUP_MATRIX,
       V_SGM_M, V_SGM_N, V_SGM_K, V_N };

int tt_gpu_open(const tt_gpu_options *opt, tt_gpu **out, tt_status *st) {
    *out = NULL;
    tt_gpu *g = calloc(1, sizeof *g);
    if (!g) return tt_fail(st, TT_ENOMEM, "out of memory (webgpu device)");
    double v[V_N];
    memset(v, 0, sizeof v);
    int rc = ttjs_gpu_open(opt && opt->want_timestamps, v, V_N, g->info.name, (int)sizeof g->info.name);
    if (rc) {
        free(g);
        return js_fail(st, rc);
    }
    tt_gpu_info *in = &g->info;
    snprintf(in->backend, sizeof in->backend, "browser");
    snprintf(in->lib_path, sizeof in->lib_path, "navigator.gpu");
    in->max_storage_binding = (uint64_t)v[V_MAX_STORAGE];
    in->max_buffer = (uint64_t)v[V_MAX_BUFFER];
    in->max_uniform_binding = (uint64_t)v[V_MAX_UNIFORM];
    in->max_storage_per_stage = (uint32_t)v[V_STORAGE_PER_STAGE];
    in->max_wg_storage = (uint32_t)v[V_WG_STORAGE];
    in->max_invocations = (uint32_t)v[V_INVOCATIONS];
    in->max_wg_per_dim = (uint32_t)v[V_WG_PER_DIM];
    in->min_uniform_align = (uint32_t)v[V_UNIFORM_ALIGN];
    in->min_storage_align = (uint32_t)v[V_STORAGE_ALIGN];
    in->has_timestamps = v[V_TIMESTAMPS] != 0;
    in->has_f16 = v[V_F16] != 0;
    in->has_subgroups = v[V_SUBGROUPS] != 0;
    in->subgroup_min = (uint32_t)v[V_SG_MIN];
    in->subgroup_max = (uint32_t)v[V_SG_MAX];
    in->is_cpu = v[V_IS_CPU] != 0;
    in->has_subgroup_matrix = v[V_SUBGROUP_MATRIX] != 0;
    if (in->has_subgroup_matrix && in->has_f16) {
        in->sgmat_m = (uint32_t)v[V_SGM_M];
        in->sgmat_n = (uint32_t)v[V_SGM_N];
        in->sgmat_k = (uint32_t)v[V_SGM_K];
    }
    *out = g;
    return TT_OK;
}

void tt_gpu_close(tt_gpu *g) {
    if (!g) return;
    ttjs_gpu_close();
    free(g);
}

const tt_gpu_info *tt_gpu_get_info(const tt_gpu *g) { return &g->info; }

int tt_gpu_buffer(tt_gpu *g, uint64_t bytes, int usage, const char *label, tt_gpu_buf *out, tt_status *st) {
    (void)g;
    int h = ttjs_gpu_buffer((double)bytes, usage, label ? label : "");
    if (h < 0) return js_fail(st, -h);
    *out = h;
    return TT_OK;
}

void tt_gpu_buffer_free(tt_gpu *g, tt_gpu_buf b) {
    (void)g;
    ttjs_gpu_buffer_free(b);
}

int tt_gpu_write(tt_gpu *g, tt_gpu_buf b, uint64_t offset, const void *data, uint64_t bytes, tt_status *st) {
    (void)g;
    if ((offset & 3) || (bytes & 3)) return tt_fail(st, TT_EINVAL, "webgpu: write offset and size must be multiples of 4");
    int rc = ttjs_gpu_write(b, (double)offset, data, (double)bytes);
    return rc ? js_fail(st, rc) : TT_OK;
}

int tt_gpu_kernel_create(tt_gpu *g, const char *wgsl, const char *entry, int n_bind, const uint8_t *kinds,
                         const char *label, tt_gpu_kernel *out, tt_status *st) {
    (void)g;
    int h = ttjs_gpu_kernel(wgsl, entry, n_bind, kinds, label ? label : "");
    if (h < 0) return js_fail(st, -h);
    *out = h;
    return TT_OK;
}

int tt_gpu_group_create(tt_gpu *g, tt_gpu_kernel k, int n, const tt_gpu_binding *b, tt_gpu_group *out,
                        tt_status *st) {
    (void)g;
    double flat[3 * 32];
    if (n < 0 || n > 32) return tt_fail(st, TT_EINVAL, "webgpu: %d bindings (at most 32)", n);
    for (int i = 0; i < n; i++) {
        flat[3 * i] = b[i].buf;
        flat[3 * i + 1] = (double)b[i].offset;
        flat[3 * i + 2] = (double)b[i].size;
    }
    int h = ttjs_gpu_group(k, n, flat);
    if (h < 0) return js_fail(st, -h);
    *out = h;
    return TT_OK;
}

int tt_gpu_begin(tt_gpu *g, tt_status *st) {
    (void)g;
    int rc = ttjs_gpu_begin();
    return rc ? js_fail(st, rc) : TT_OK;
}

void tt_gpu_dispatch(tt_gpu *g, tt_gpu_kernel k, tt_gpu_group grp, uint32_t x, uint32_t y, uint32_t z) {
    (void)g;
    ttjs_gpu_dispatch(k, grp, (int)x, (int)y, (int)z);
}

void tt_gpu_copy(tt_gpu *g, tt_gpu_buf src, uint64_t src_off, tt_gpu_buf dst, uint64_t dst_off, uint64_t bytes) {
    (void)g;
    ttjs_gpu_copy(src, (double)src_off, dst, (double)dst_off, (double)bytes);
}

void tt_gpu_clear(tt_gpu *g, tt_gpu_buf b, uint64_t off, uint64_t bytes) {
    (void)g;
    ttjs_gpu_clear(b, (double)off, (double)bytes);
}

int tt_gpu_submit(tt_gpu *g, tt_status *st) {
    (void)g;
    int rc = ttjs_gpu_submit();
    return rc ? js_fail(st, rc) : TT_OK;
}

int tt_gpu_read_start(tt_gpu *g, tt_gpu_buf b, uint64_t offset, uint64_t bytes, tt_status *st) {
    (void)g;
    if ((offset & 7) || (bytes & 3)) return tt_fail(st, TT_EINVAL, "webgpu: bad readback range");
    int rc = ttjs_gpu_read_start(b, (double)offset, (double)bytes);
    return rc ? js_fail(st, rc) : TT_OK;
}

int tt_gpu_read_finish(tt_gpu *g, tt_gpu_buf b, void *dst, tt_status *st) {
    (void)g;
    int rc = ttjs_gpu_read_finish(b, dst);
    return rc ? js_fail(st, rc) : TT_OK;
}

int tt_gpu_read_pending(const tt_gpu *g, tt_gpu_buf b) {
    (void)g;
    return ttjs_gpu_read_pending(b);
}

int tt_gpu_check(tt_gpu *g, tt_status *st) {
    (void)g;
    int rc = ttjs_gpu_check();
    return rc ? js_fail(st, rc) : TT_OK;
}

/* Timestamp queries inside compute passes are not exposed by browsers
 * (only pass-boundary timestampWrites): profiling is a native feature. */
int tt_gpu_timestamps_init(tt_gpu *g, int n, tt_status *st) {
    (void)g;
    (void)n;
    return tt_fail(st, TT_EUNSUP, "webgpu: no timestamp queries in the browser device layer");
}
void tt_gpu_timestamp(tt_gpu *g, int i) {
    (void)g;
    (void)i;
}
void tt_gpu_timestamps_resolve(tt_gpu *g, int n, tt_gpu_buf staging) {
    (void)g;
    (void)n;
    (void)staging;
}

#else /* !TT_WEB_GPU: no WebGPU in this WebAssembly build */

static int none(tt_status *st) {
#ifdef __EMSCRIPTEN__
    return tt_fail(st, TT_EUNSUP,
                   "webgpu: not available in this WebAssembly build (the web app's WebGPU engine is the "
                   "tinytrain_web_gpu module; Node has no WebGPU)");
#else
    return tt_fail(st, TT_EUNSUP, "webgpu: not built");
#endif
}

int tt_gpu_open(const tt_gpu_options *opt, tt_gpu **out, tt_status *st) {
    (void)opt;
    *out = NULL;
    return none(st);
}
void tt_gpu_close(tt_gpu *g) { (void)g; }
const tt_gpu_info *tt_gpu_get_info(const tt_gpu *g) {
    (void)g;
    static tt_gpu_info zero;
    return &zero;
}
int tt_gpu_buffer(tt_gpu *g, uint64_t bytes, int usage, const char *label, tt_gpu_buf *out, tt_status *st) {
    (void)g, (void)bytes, (void)usage, (void)label;
    *out = -1;
    return none(st);
}
void tt_gpu_buffer_free(tt_gpu *g, tt_gpu_buf b) { (void)g, (void)b; }
int tt_gpu_write(tt_gpu *g, tt_gpu_buf b, uint64_t offset, const void *data, uint64_t bytes, tt_status *st) {
    (void)g, (void)b, (void)offset, (void)data, (void)bytes;
    return none(st);
}
int tt_gpu_kernel_create(tt_gpu *g, const char *wgsl, const char *entry, int n_bind, const uint8_t *kinds,
                         const char *label, tt_gpu_kernel *out, tt_status *st) {
    (void)g, (void)wgsl, (void)entry, (void)n_bind, (void)kinds, (void)label;
    *out = -1;
    return none(st);
}
int tt_gpu_group_create(tt_gpu *g, tt_gpu_kernel k, int n, const tt_gpu_binding *b, tt_gpu_group *out,
                        tt_status *st) {
    (void)g, (void)k, (void)n, (void)b;
    *out = -1;
    return none(st);
}
int tt_gpu_begin(tt_gpu *g, tt_status *st) {
    (void)g;
    return none(st);
}
void tt_gpu_dispatch(tt_gpu *g, tt_gpu_kernel k, tt_gpu_group grp, uint32_t x, uint32_t y, uint32_t z) {
    (void)g, (void)k, (void)grp, (void)x, (void)y, (void)z;
}
void tt_gpu_copy(tt_gpu *g, tt_gpu_buf src, uint64_t src_off, tt_gpu_buf dst, uint64_t dst_off, uint64_t bytes) {
    (void)g, (void)src, (void)src_off, (void)dst, (void)dst_off, (void)bytes;
}
void tt_gpu_clear(tt_gpu *g, tt_gpu_buf b, uint64_t off, uint64_t bytes) { (void)g, (void)b, (void)off, (void)bytes; }
int tt_gpu_submit(tt_gpu *g, tt_status *st) {
    (void)g;
    return none(st);
}
int tt_gpu_read_start(tt_gpu *g, tt_gpu_buf b, uint64_t offset, uint64_t bytes, tt_status *st) {
    (void)g, (void)b, (void)offset, (void)bytes;
    return none(st);
}
int tt_gpu_read_finish(tt_gpu *g, tt_gpu_buf b, void *dst, tt_status *st) {
    (void)g, (void)b, (void)dst;
    return none(st);
}
int tt_gpu_read_pending(const tt_gpu *g, tt_gpu_buf b) {
    (void)g, (void)b;
    return 0;
}
int tt_gpu_check(tt_gpu *g, tt_status *st) {
    (void)g;
    return none(st);
}
int tt_gpu_timestamps_init(tt_gpu *g, int n, tt_status *st) {
    (void)g, (void)n;
    return none(st);
}
void tt_gpu_timestamp(tt_gpu *g, int i) { (void)g, (void)i; }
void tt_gpu_timestamps_resolve(tt_gpu *g, int n, tt_gpu_buf staging) { (void)g, (void)n, (void)staging; }

#endif
