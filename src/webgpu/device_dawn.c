/* device_dawn.c — the device layer (device.h) over the WebGPU C API of a
 * dlopen'ed implementation (Dawn from npm bun-webgpu-linux-x64, or whatever
 * $TINYTRAIN_WEBGPU_LIB names). Owns: library search and loading, adapter and
 * device creation with the adapter's real limits, handle tables, error scope
 * and uncaptured-error / device-lost reporting, waits; the work on an open
 * device (buffers, kernels, recording, read-back) is device_dawn_ops.c.
 *
 * Library search order:
 *   $TINYTRAIN_WEBGPU_LIB
 *   node_modules/bun-webgpu-linux-x64/libwebgpu_wrapper.so relative to the
 *     executable's directory and up to 3 parents, the source dir (fixed at
 *     build time), the cwd
 *   system names (libwebgpu_dawn.so, libwebgpu.so, libwgpu_native.so)
 * Not built for Emscripten (the browser has its own device layer).
 *
 * Faults, each one line (tt_status): library missing / wrong, no adapter,
 * a feature the caller requires that the adapter lacks ("adapter X lacks
 * feature Y"), device creation, WGSL compile errors (the first line of the
 * compiler's message, naming the kernel), buffers over maxBufferSize or
 * rejected by the implementation (error scopes: out of memory / validation),
 * uncaptured errors and device loss (recorded, reported by the next call).
 * Dawn's multi-line messages are cut to their first line (plus, for
 * uncaptured errors, the first "While ..." context line).
 *
 * Test hooks (hooks.h: read at each call in test builds, off in the product):
 *   TT_WEBGPU_REQUIRE_FEATURES=f1,f2  features tt_gpu_open must find on the
 *     adapter (timestamp-query, shader-f16, subgroups, subgroup-matrix)
 *   TT_WEBGPU_HIDE_FEATURES=f1,f2     features treated as absent from the
 *     adapter (to test the paths of an adapter without them anywhere)
 *   TT_WEBGPU_FAULT_SHADER=label      tt_gpu_kernel_create of the kernel with
 *     this label ("*": every kernel) compiles its WGSL with a syntax error
 *   TT_WEBGPU_FAULT_OOM=label         tt_gpu_buffer of the buffer with this
 *     label asks the implementation for more than maxBufferSize, skipping our
 *     own size check: the implementation's rejection comes back through the
 *     error scope, nothing is allocated
 *
 * Bounds-check hook (tests/webgpu/test_webgpu_bounds.sh; hook
 * TT_WEBGPU_BOUNDS_CHECK=1, read by tt_gpu_open; unset: nothing below
 * exists, no binding, no buffer, no cost). For kernels instrumented by
 * tests/tools/wgsl_bounds.py and loaded with TT_WEBGPU_WGSL_DIR (the kernel loader):
 * every bind group layout and bind group gets one more storage binding, @31,
 * a zeroed counter buffer (TT_BC_SLOTS u32) that the instrumented WGSL
 * counts into: slot (kind * 64 + file) * 4096 + line, kind 0 an array index
 * out of range, kind 1 a read of workgroup memory the workgroup has not
 * written; each invocation counts once per kind, at its violating site of
 * the highest slot. File numbers come from the "//!bounds_file N NAME" lines
 * the tool puts in common.wgsl. maxStorageBuffersPerShaderStage is reported
 * one lower (the planner leaves room for @31). tt_gpu_close reads the
 * counters and prints one stderr line:
 *   bounds check: clean (N kernels: NAME ...)     (instrumented pipelines
 *                                                  compiled, their names)
 *   bounds check: K invocations indexed out of range: FILE line L (count),
 *     ...; J invocations read unwritten workgroup memory: FILE line L ...
 *   bounds check: no instrumented kernel ... / not read (why)
 * Anything but "clean" is a failure to the test. */
#ifndef __EMSCRIPTEN__

#define _GNU_SOURCE
#include "device.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "device_dawn.h"
#include "hooks.h"

#ifndef TT_SOURCE_DIR_DEFAULT
#define TT_SOURCE_DIR_DEFAULT "."
#endif

#define TT_NODE_LIB "node_modules/bun-webgpu-linux-x64/libwebgpu_wrapper.so"

/* ---- bounds-check hook (the counters: device_dawn.h; counting kernels: device_dawn_ops.c) ---- */

/* the report line (tt_gpu_close, before the buffers go) */
static void bc_report(tt_gpu *g) {
    bcheck *bc = g->bc;
    tt_status st;
    if (bc->n_kernels == 0) {
        fprintf(stderr, "bounds check: no instrumented kernel was compiled (TT_WEBGPU_WGSL_DIR must name the output "
                        "of tests/tools/wgsl_bounds.py)\n");
        return;
    }
    uint32_t *c = malloc((size_t)TT_BC_SLOTS * 4);
    if (!c) {
        fprintf(stderr, "bounds check: not read (out of memory)\n");
        return;
    }
    if (tt_gpu_read_sync(g, bc->buf, 0, (uint64_t)TT_BC_SLOTS * 4, c, &st) != TT_OK) {
        fprintf(stderr, "bounds check: not read (%s)\n", st.msg);
        free(c);
        return;
    }
    char line[4096];
    size_t o = 0;
    int any = 0;
    static const char *what[2] = {"invocations indexed out of range", "invocations read unwritten workgroup memory"};
    for (int kind = 0; kind < 2; kind++) {
        uint64_t total = 0;
        int sites = 0;
        const uint32_t *ck = c + (size_t)kind * TT_BC_FILES * TT_BC_LINES;
        for (int i = 0; i < TT_BC_FILES * TT_BC_LINES; i++) total += ck[i];
        if (!total) continue;
        o += (size_t)snprintf(line + o, sizeof line - o, "%s%llu %s:", any ? "; " : "", (unsigned long long)total,
                              what[kind]);
        for (int i = 0; i < TT_BC_FILES * TT_BC_LINES && o < sizeof line - 160; i++) {
            if (!ck[i]) continue;
            int f = i / TT_BC_LINES;
            if (++sites > 12) {
                o += (size_t)snprintf(line + o, sizeof line - o, " ...");
                break;
            }
            if (bc->files[f][0])
                o += (size_t)snprintf(line + o, sizeof line - o, "%s %s line %d (%u)", sites > 1 ? "," : "",
                                      bc->files[f], i % TT_BC_LINES, ck[i]);
            else
                o += (size_t)snprintf(line + o, sizeof line - o, "%s file #%d line %d (%u)", sites > 1 ? "," : "", f,
                                      i % TT_BC_LINES, ck[i]);
        }
        any = 1;
    }
    free(c);
    if (any) {
        fprintf(stderr, "bounds check: %s\n", line);
        return;
    }
    o = 0;
    for (int i = 0; i < bc->n_names && o < sizeof line - 48; i++)
        o += (size_t)snprintf(line + o, sizeof line - o, " %s", bc->names[i]);
    fprintf(stderr, "bounds check: clean (%d kernels:%s)\n", bc->n_kernels, line);
}

/* ---- small helpers ------------------------------------------------------ */

static void sv_copy(char *dst, size_t cap, WGPUStringView v) {
    size_t n = 0;
    if (v.data) n = v.length == WGPU_STRLEN ? strlen(v.data) : v.length;
    if (n >= cap) n = cap - 1;
    if (n) memcpy(dst, v.data, n);
    dst[n] = 0;
    /* one line */
    for (size_t i = 0; i < n; i++)
        if (dst[i] == '\n' || dst[i] == '\r') dst[i] = ' ';
}

/* One line out of an implementation's message: its first non-empty line
 * (Dawn's WGSL errors follow it with the source line, a caret line and
 * "- While ..." context lines); with_context appends the first context line. */
static void sv_first_line(char *dst, size_t cap, WGPUStringView v, int with_context) {
    size_t n = 0;
    const char *s = v.data;
    if (s) n = v.length == WGPU_STRLEN ? strlen(s) : v.length;
    size_t i = 0, o = 0;
    while (i < n && (s[i] == '\n' || s[i] == '\r' || s[i] == ' ')) i++;
    while (i < n && s[i] != '\n' && s[i] != '\r' && o + 1 < cap) dst[o++] = s[i++];
    while (o > 0 && dst[o - 1] == ' ') o--;
    dst[o] = 0;
    if (!with_context) return;
    for (; i < n; i++) {
        if (s[i] != '\n') continue;
        size_t j = i + 1;
        while (j < n && (s[j] == ' ' || s[j] == '-')) j++;
        if (n - j < 6 || strncmp(s + j, "While ", 6) != 0) continue;
        size_t e = j;
        while (e < n && s[e] != '\n' && s[e] != '\r') e++;
        int w = snprintf(dst + o, cap - o, " (%.*s)", (int)(e - j), s + j);
        if (w < 0 || (size_t)w >= cap - o) dst[cap - 1] = 0;
        break;
    }
}

static void record_error(tt_gpu *g, int code, const char *what, WGPUStringView msg) {
    if (g->err_code) return; /* keep the first */
    char m[320];
    sv_first_line(m, sizeof m, msg, 1);
    g->err_code = code;
    snprintf(g->err, sizeof g->err, "webgpu %s: %s", what, m);
}

static void on_uncaptured(const WGPUDevice *d, WGPUErrorType type, WGPUStringView msg, void *u1, void *u2) {
    (void)d, (void)u2;
    tt_gpu *g = u1;
    const char *what = type == WGPUErrorType_OutOfMemory ? "out of memory" :
                       type == WGPUErrorType_Validation ? "validation error" : "internal error";
    record_error(g, type == WGPUErrorType_OutOfMemory ? TT_ENOMEM : TT_EDEVICE, what, msg);
}

static void on_lost(const WGPUDevice *d, WGPUDeviceLostReason reason, WGPUStringView msg, void *u1, void *u2) {
    (void)d, (void)u2;
    tt_gpu *g = u1;
    if (!g) return;
    if (reason == WGPUDeviceLostReason_Destroyed || reason == WGPUDeviceLostReason_CallbackCancelled) return;
    g->lost = 1;
    record_error(g, TT_EDEVICE, "device lost", msg);
}

/* a request (adapter, device) has completed: its status and message */
static void req_complete(tt_gpu *g, int status, WGPUStringView msg) {
    g->req_done = 1;
    g->req_status = status;
    sv_copy(g->req_msg, sizeof g->req_msg, msg);
}

static void on_adapter(WGPURequestAdapterStatus status, WGPUAdapter a, WGPUStringView msg, void *u1, void *u2) {
    (void)u2;
    tt_gpu *g = u1;
    if (status == WGPURequestAdapterStatus_Success) g->adapter = a;
    req_complete(g, (int)status, msg);
}

static void on_device(WGPURequestDeviceStatus status, WGPUDevice d, WGPUStringView msg, void *u1, void *u2) {
    (void)u2;
    tt_gpu *g = u1;
    if (status == WGPURequestDeviceStatus_Success) g->dev = d;
    req_complete(g, (int)status, msg);
}

void tt_dawn_on_pop(WGPUPopErrorScopeStatus status, WGPUErrorType type, WGPUStringView msg, void *u1, void *u2) {
    (void)u2;
    tt_gpu *g = u1;
    g->req_done = 1;
    g->req_status = status == WGPUPopErrorScopeStatus_Success ? (int)type : -1;
    sv_first_line(g->req_msg, sizeof g->req_msg, msg, 0);
}

void tt_dawn_on_map(WGPUMapAsyncStatus status, WGPUStringView msg, void *u1, void *u2) {
    gbuf *b = u1;
    (void)u2;
    if (status == WGPUMapAsyncStatus_Success) {
        b->map_state = 2;
    } else {
        b->map_state = 3;
        sv_copy(b->map_msg, sizeof b->map_msg, msg);
    }
}

static void sleep_us(long us) {
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

/* Wait for a future while *v == busy (its callback changes *v). Returns
 * early on device loss. */
void tt_dawn_wait_while(tt_gpu *g, WGPUFuture fut, volatile int *v, int busy) {
    long backoff = 0;
    int spins = 0;
    while (*v == busy) {
        if (g->timed_wait) {
            WGPUFutureWaitInfo wi = {fut, 0};
            WGPUWaitStatus ws = g->f.wgpuInstanceWaitAny(g->inst, 1, &wi, 100000000ull /* 100 ms */);
            if (ws == WGPUWaitStatus_Success || ws == WGPUWaitStatus_TimedOut) {
                if (*v != busy || g->lost) break;
                if (ws == WGPUWaitStatus_TimedOut) continue;
            } else {
                g->timed_wait = 0; /* fall back to polling */
            }
        }
        g->f.wgpuInstanceProcessEvents(g->inst);
        if (*v != busy || g->lost) break;
        if (++spins > 64) {
            backoff = backoff ? TT_MIN(backoff * 2, 2000) : 20;
            sleep_us(backoff);
        }
    }
}

/* ---- library loading ---------------------------------------------------- */
static void *try_open(const char *path, char *used, size_t cap) {
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h) snprintf(used, cap, "%.255s", path);
    return h;
}

static void *find_library(const char *explicit_path, char *used, size_t cap, char *why, size_t wcap) {
    void *h;
    const char *env = explicit_path ? explicit_path : getenv("TINYTRAIN_WEBGPU_LIB");
    if (env && *env) {
        h = try_open(env, used, cap);
        if (!h) snprintf(why, wcap, "cannot load %s: %s", env, dlerror());
        return h;
    }
    char path[4096];
    char exe[2048];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        for (int up = 0; up <= 3; up++) {
            char *slash = strrchr(exe, '/');
            if (!slash) break;
            *slash = 0;
            snprintf(path, sizeof path, "%s/%s", exe[0] ? exe : "/", TT_NODE_LIB);
            if ((h = try_open(path, used, cap))) return h;
        }
    }
    snprintf(path, sizeof path, "%s/%s", TT_SOURCE_DIR_DEFAULT, TT_NODE_LIB);
    if ((h = try_open(path, used, cap))) return h;
    if ((h = try_open("./" TT_NODE_LIB, used, cap))) return h;
    static const char *sys[] = {"libwebgpu_dawn.so", "libwebgpu.so", "libwgpu_native.so", "libwebgpu_wrapper.so"};
    for (size_t i = 0; i < sizeof sys / sizeof sys[0]; i++)
        if ((h = try_open(sys[i], used, cap))) return h;
    snprintf(why, wcap,
             "no WebGPU library found (run scripts/get-dawn.sh, or set TINYTRAIN_WEBGPU_LIB to a webgpu.h "
             "implementation such as libwebgpu_wrapper.so)");
    return NULL;
}

static const char *backend_name(WGPUBackendType t) {
    switch (t) {
    case WGPUBackendType_Vulkan: return "vulkan";
    case WGPUBackendType_Metal: return "metal";
    case WGPUBackendType_D3D12: return "d3d12";
    case WGPUBackendType_D3D11: return "d3d11";
    case WGPUBackendType_OpenGL: return "opengl";
    case WGPUBackendType_OpenGLES: return "opengles";
    case WGPUBackendType_WebGPU: return "webgpu";
    case WGPUBackendType_Null: return "null";
    default: return "unknown";
    }
}

/* The Vulkan loader and Dawn print warnings straight to stderr while they
 * look for drivers ("Found no drivers!", stack locations): the user gets one
 * line from us instead. TT_WEBGPU_VERBOSE=1 lets them through. Only around
 * instance and adapter creation, where nothing else of ours is running. */
static int quiet_stderr_begin(void) {
    const char *v = getenv("TT_WEBGPU_VERBOSE");
    if (v && atoi(v)) return -1;
    fflush(stderr);
    int saved = dup(2);
    if (saved < 0) return -1;
    int nul = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (nul < 0) {
        close(saved);
        return -1;
    }
    dup2(nul, 2);
    close(nul);
    return saved;
}

static void quiet_stderr_end(int saved) {
    if (saved < 0) return;
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
}

/* ---- features ------------------------------------------------------------ */
static const struct {
    const char *name; /* the WebGPU spelling */
    WGPUFeatureName f;
} tt_features[] = {
    {"timestamp-query", WGPUFeatureName_TimestampQuery},
    {"shader-f16", WGPUFeatureName_ShaderF16},
    {"subgroups", WGPUFeatureName_Subgroups},
    {"subgroup-matrix", WGPUFeatureName_ChromiumExperimentalSubgroupMatrix},
};
#define TT_N_FEATURES (sizeof tt_features / sizeof tt_features[0])

static const char *feature_name(WGPUFeatureName f) {
    for (size_t i = 0; i < TT_N_FEATURES; i++)
        if (tt_features[i].f == f) return tt_features[i].name;
    return "?";
}

/* 1 if name is in the comma/space separated list */
static int in_list(const char *list, const char *name) {
    size_t len = strlen(name);
    for (const char *p = list; p && *p;) {
        size_t n = strcspn(p, ", ");
        if (n == len && strncmp(p, name, n) == 0) return 1;
        p += n;
        while (*p == ',' || *p == ' ') p++;
    }
    return 0;
}

/* the adapter has feature f (and the test hook TT_WEBGPU_HIDE_FEATURES does not hide it) */
static int adapter_has(tt_gpu *g, WGPUFeatureName f) {
    if (in_list(tt_hook_get(TT_HOOK_HIDE_FEATURES), feature_name(f))) return 0;
    return g->f.wgpuAdapterHasFeature(g->adapter, f) ? 1 : 0;
}

/* Features the caller requires (test hook TT_WEBGPU_REQUIRE_FEATURES, a comma
 * list): an adapter without one is refused with "adapter X lacks feature Y".
 * *want_ts is set when timestamp-query is among them. */
static int check_required_features(tt_gpu *g, int *want_ts, tt_status *st) {
    const char *e = tt_hook_get(TT_HOOK_REQUIRE_FEATURES);
    if (!e) return TT_OK;
    const char *p = e;
    while (*p) {
        size_t n = strcspn(p, ", ");
        if (n) {
            size_t i = 0;
            while (i < TT_N_FEATURES && !(strlen(tt_features[i].name) == n && strncmp(p, tt_features[i].name, n) == 0))
                i++;
            if (i == TT_N_FEATURES)
                return tt_fail(st, TT_EINVAL,
                               "TT_WEBGPU_REQUIRE_FEATURES: unknown feature '%.*s' (known: timestamp-query, shader-f16, "
                               "subgroups, subgroup-matrix)",
                               (int)TT_MIN(n, 64), p);
            if (!adapter_has(g, tt_features[i].f))
                return tt_fail(st, TT_EUNSUP, "WebGPU: adapter %s lacks feature %s (required by TT_WEBGPU_REQUIRE_FEATURES)",
                               g->info.name, tt_features[i].name);
            if (tt_features[i].f == WGPUFeatureName_TimestampQuery) *want_ts = 1;
        }
        p += n;
        while (*p == ',' || *p == ' ') p++;
    }
    return TT_OK;
}

static int request_adapter(tt_gpu *g, int fallback) {
    WGPURequestAdapterOptions o;
    memset(&o, 0, sizeof o);
    o.featureLevel = WGPUFeatureLevel_Core;
    o.powerPreference = WGPUPowerPreference_HighPerformance;
    o.forceFallbackAdapter = fallback ? 1 : 0;
    WGPURequestAdapterCallbackInfo ci;
    memset(&ci, 0, sizeof ci);
    ci.mode = WGPUCallbackMode_AllowProcessEvents;
    ci.callback = on_adapter;
    ci.userdata1 = g;
    g->req_done = 0;
    WGPUFuture f = g->f.wgpuInstanceRequestAdapter(g->inst, &o, ci);
    tt_dawn_wait_future(g, f, &g->req_done);
    return g->adapter != NULL;
}

int tt_gpu_open(const tt_gpu_options *opt, tt_gpu **out, tt_status *st) {
    *out = NULL;
    tt_gpu_options defopt;
    memset(&defopt, 0, sizeof defopt);
    if (!opt) opt = &defopt;
    tt_gpu *g = calloc(1, sizeof *g);
    if (!g) return tt_fail(st, TT_ENOMEM, "out of memory (gpu)");
    g->ts_pending = -1;
    char why[512] = {0};
    g->lib = find_library(opt->lib_path, g->info.lib_path, sizeof g->info.lib_path, why, sizeof why);
    if (!g->lib) {
        free(g);
        return tt_fail(st, TT_EUNSUP, "%s", why);
    }
#define X(ret, name, args)                                                                               \
    g->f.name = (ret(*) args)dlsym(g->lib, #name);                                                       \
    if (!g->f.name) {                                                                                    \
        tt_fail(st, TT_EUNSUP, "WebGPU library %s lacks %s (wrong version?)", g->info.lib_path, #name); \
        dlclose(g->lib);                                                                                 \
        free(g);                                                                                         \
        return TT_EUNSUP;                                                                                \
    }
    TT_WGPU_FUNCS(X)
#undef X
    /* instance with timed WaitAny if the library allows it */
    WGPUInstanceDescriptor idesc;
    memset(&idesc, 0, sizeof idesc);
    idesc.features.timedWaitAnyEnable = 1;
    idesc.features.timedWaitAnyMaxCount = 1;
    int quiet = quiet_stderr_begin();
    g->inst = g->f.wgpuCreateInstance(&idesc);
    g->timed_wait = g->inst != NULL;
    if (!g->inst) g->inst = g->f.wgpuCreateInstance(NULL);
    if (!g->inst) {
        quiet_stderr_end(quiet);
        tt_gpu_close(g);
        return tt_fail(st, TT_EUNSUP, "WebGPU: cannot create an instance (%s)", g->info.lib_path);
    }
    if (!request_adapter(g, opt->force_fallback) && !opt->force_fallback) request_adapter(g, 1);
    quiet_stderr_end(quiet);
    if (!g->adapter) {
        tt_fail(st, TT_EUNSUP, "WebGPU: no adapter found%s%s (is a Vulkan driver installed? e.g. mesa-vulkan-drivers; "
                "TT_WEBGPU_VERBOSE=1 shows the driver's messages)",
                g->req_msg[0] ? ": " : "", g->req_msg);
        tt_gpu_close(g);
        return TT_EUNSUP;
    }
    WGPUAdapterInfo ai;
    memset(&ai, 0, sizeof ai);
    int null_backend = 0;
    if (g->f.wgpuAdapterGetInfo(g->adapter, &ai) == WGPUStatus_Success) {
        null_backend = ai.backendType == WGPUBackendType_Null;
        char dev[96], desc[96];
        sv_copy(dev, sizeof dev, ai.device);
        sv_copy(desc, sizeof desc, ai.description);
        snprintf(g->info.name, sizeof g->info.name, "%s", dev[0] ? dev : desc);
        snprintf(g->info.backend, sizeof g->info.backend, "%s", backend_name(ai.backendType));
        g->info.is_cpu = ai.adapterType == WGPUAdapterType_CPU;
        g->info.subgroup_min = ai.subgroupMinSize;
        g->info.subgroup_max = ai.subgroupMaxSize;
        g->f.wgpuAdapterInfoFreeMembers(ai);
    }
    if (null_backend) {
        /* Dawn's "Null backend" computes nothing: it is what is left when no
         * Vulkan/Metal/D3D driver loads */
        tt_gpu_close(g);
        return tt_fail(st, TT_EUNSUP,
                       "WebGPU: no GPU adapter (only Dawn's null backend; is a Vulkan driver installed? e.g. "
                       "mesa-vulkan-drivers; TT_WEBGPU_VERBOSE=1 shows the driver's messages)");
    }
    int want_ts = opt->want_timestamps;
    {
        int rc = check_required_features(g, &want_ts, st);
        if (rc) {
            tt_gpu_close(g);
            return rc;
        }
    }
    WGPULimits lim;
    memset(&lim, 0, sizeof lim);
    if (g->f.wgpuAdapterGetLimits(g->adapter, &lim) != WGPUStatus_Success) {
        tt_gpu_close(g);
        return tt_fail(st, TT_EDEVICE, "WebGPU: cannot read adapter limits");
    }
    lim.nextInChain = NULL;
    WGPUFeatureName feats[4];
    size_t nf = 0;
    if (adapter_has(g, WGPUFeatureName_Subgroups)) {
        feats[nf++] = WGPUFeatureName_Subgroups;
        g->info.has_subgroups = 1;
    }
    if (adapter_has(g, WGPUFeatureName_ShaderF16)) {
        feats[nf++] = WGPUFeatureName_ShaderF16;
        g->info.has_f16 = 1;
    }
    if (want_ts && adapter_has(g, WGPUFeatureName_TimestampQuery)) {
        feats[nf++] = WGPUFeatureName_TimestampQuery;
        g->info.has_timestamps = 1;
    }
    g->info.has_subgroup_matrix =
        adapter_has(g, WGPUFeatureName_ChromiumExperimentalSubgroupMatrix) ? 1 : 0;
    /* Dawn toggles: keep timestamps in nanoseconds, unquantized, and run
     * without the robustness transform (the clamp Dawn adds to every array
     * index) and without the zero-fill of workgroup memory at every
     * workgroup's start (their cost: docs/BENCHMARKS.md). Every kernel keeps its accesses in bounds
     * and writes its workgroup memory before reading it, by construction
     * (tests run on lavapipe with this same setting, and
     * test_webgpu_bounds.sh checks both on instrumented kernels), so the
     * clamps and fills only cost time. TT_WEBGPU_ROBUST=1 turns both back
     * on (a browser always has them). */
    const char *enabled[2], *disabled[1] = {"timestamp_quantization"};
    size_t nen = 0, ndis = 1;
    const char *rb = getenv("TT_WEBGPU_ROBUST");
    g->info.robust = rb && *rb && strcmp(rb, "0") != 0;
    if (!g->info.robust) {
        enabled[nen++] = "disable_robustness";
        enabled[nen++] = "disable_workgroup_init";
    }
    WGPUDawnTogglesDescriptor toggles;
    memset(&toggles, 0, sizeof toggles);
    toggles.chain.sType = WGPUSType_DawnTogglesDescriptor;
    toggles.enabledToggleCount = nen;
    toggles.enabledToggles = enabled;
    toggles.disabledToggleCount = ndis;
    toggles.disabledToggles = disabled;
    WGPUDeviceDescriptor dd;
    memset(&dd, 0, sizeof dd);
    dd.nextInChain = &toggles.chain;
    dd.label = tt_dawn_sv("tinytrain");
    dd.requiredFeatureCount = nf;
    dd.requiredFeatures = feats;
    dd.requiredLimits = &lim;
    dd.deviceLostCallbackInfo.mode = WGPUCallbackMode_AllowProcessEvents;
    dd.deviceLostCallbackInfo.callback = on_lost;
    dd.deviceLostCallbackInfo.userdata1 = g;
    dd.uncapturedErrorCallbackInfo.callback = on_uncaptured;
    dd.uncapturedErrorCallbackInfo.userdata1 = g;
    WGPURequestDeviceCallbackInfo dci;
    memset(&dci, 0, sizeof dci);
    dci.mode = WGPUCallbackMode_AllowProcessEvents;
    dci.callback = on_device;
    dci.userdata1 = g;
    g->req_done = 0;
    g->req_msg[0] = 0;
    WGPUFuture f = g->f.wgpuAdapterRequestDevice(g->adapter, &dd, dci);
    tt_dawn_wait_future(g, f, &g->req_done);
    if (!g->dev) {
        tt_fail(st, TT_EDEVICE, "WebGPU: device creation failed on %s: %s", g->info.name, g->req_msg);
        tt_gpu_close(g);
        return TT_EDEVICE;
    }
    WGPULimits dl;
    memset(&dl, 0, sizeof dl);
    if (g->f.wgpuDeviceGetLimits(g->dev, &dl) != WGPUStatus_Success) dl = lim;
    g->info.max_storage_binding = dl.maxStorageBufferBindingSize;
    g->info.max_buffer = dl.maxBufferSize;
    g->info.max_uniform_binding = dl.maxUniformBufferBindingSize;
    g->info.max_storage_per_stage = dl.maxStorageBuffersPerShaderStage;
    g->info.max_wg_storage = dl.maxComputeWorkgroupStorageSize;
    g->info.max_invocations = dl.maxComputeInvocationsPerWorkgroup;
    g->info.max_wg_per_dim = dl.maxComputeWorkgroupsPerDimension;
    g->info.min_uniform_align = dl.minUniformBufferOffsetAlignment;
    g->info.min_storage_align = dl.minStorageBufferOffsetAlignment;
    g->queue = g->f.wgpuDeviceGetQueue(g->dev);
    const char *bce = tt_hook_get(TT_HOOK_BOUNDS_CHECK); /* test hook: see the header */
    if (bce && strcmp(bce, "0") != 0) {
        bcheck *bc = calloc(1, sizeof *bc);
        if (!bc) {
            tt_gpu_close(g);
            return tt_fail(st, TT_ENOMEM, "out of memory (bounds check)");
        }
        int rc = tt_gpu_buffer(g, (uint64_t)TT_BC_SLOTS * 4, TT_GPU_STORAGE, "bounds-check", &bc->buf, st);
        if (rc) {
            free(bc);
            tt_gpu_close(g);
            return rc;
        }
        g->bc = bc;
        if (g->info.max_storage_per_stage) g->info.max_storage_per_stage--; /* @31 takes one */
    }
    *out = g;
    return TT_OK;
}

void tt_gpu_close(tt_gpu *g) {
    if (!g) return;
    if (g->pass) {
        g->f.wgpuComputePassEncoderEnd(g->pass);
        g->f.wgpuComputePassEncoderRelease(g->pass);
    }
    if (g->enc) g->f.wgpuCommandEncoderRelease(g->enc);
    g->pass = NULL;
    g->enc = NULL;
    if (g->bc) {
        if (g->dev && g->queue) bc_report(g);
        free(g->bc);
        g->bc = NULL;
    }
    for (int i = 0; i < g->n_groups; i++)
        if (g->groups[i]) g->f.wgpuBindGroupRelease(g->groups[i]);
    for (int i = 0; i < g->n_kerns; i++) {
        if (g->kerns[i].p) g->f.wgpuComputePipelineRelease(g->kerns[i].p);
        if (g->kerns[i].bgl) g->f.wgpuBindGroupLayoutRelease(g->kerns[i].bgl);
    }
    for (int i = 0; i < g->n_bufs; i++)
        if (g->bufs[i].b) {
            g->f.wgpuBufferDestroy(g->bufs[i].b);
            g->f.wgpuBufferRelease(g->bufs[i].b);
        }
    if (g->qset) {
        g->f.wgpuQuerySetDestroy(g->qset);
        g->f.wgpuQuerySetRelease(g->qset);
    }
    if (g->queue) g->f.wgpuQueueRelease(g->queue);
    if (g->dev) {
        g->f.wgpuDeviceDestroy(g->dev);
        g->f.wgpuDeviceRelease(g->dev);
    }
    if (g->adapter) g->f.wgpuAdapterRelease(g->adapter);
    if (g->inst) {
        g->f.wgpuInstanceProcessEvents(g->inst);
        g->f.wgpuInstanceRelease(g->inst);
    }
    /* The library stays loaded: Dawn keeps threads and atexit state that a
     * dlclose would pull out from under it. */
    free(g->bufs);
    free(g->kerns);
    free(g->groups);
    free(g);
}

const tt_gpu_info *tt_gpu_get_info(const tt_gpu *g) { return &g->info; }

int tt_gpu_check(tt_gpu *g, tt_status *st) {
    if (g->err_code) return tt_fail(st, g->err_code, "%s", g->err);
    return TT_OK;
}

#endif /* __EMSCRIPTEN__ */
