/* device_dawn.c — the device layer (device.h) over the WebGPU C API of a
 * dlopen'ed implementation (Dawn from npm bun-webgpu-linux-x64, or whatever
 * $TINYTRAIN_WEBGPU_LIB names). Owns: library search and loading, adapter and
 * device creation with the adapter's real limits, handle tables, error scope
 * and uncaptured-error / device-lost reporting, waits.
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

#include "hooks.h"
#include "webgpu_min.h"

#ifndef TT_SOURCE_DIR_DEFAULT
#define TT_SOURCE_DIR_DEFAULT "."
#endif

#define TT_NODE_LIB "node_modules/bun-webgpu-linux-x64/libwebgpu_wrapper.so"

typedef struct {
#define X(ret, name, args) ret(*name) args;
    TT_WGPU_FUNCS(X)
#undef X
} wgpu_fns;

typedef struct {
    WGPUBuffer b;
    uint64_t size;
    int usage;
    int map_state; /* 0 idle, 1 map pending, 2 mapped ok, 3 map failed */
    uint64_t map_off, map_size;
    WGPUFuture map_future;
    char map_msg[160];
} gbuf;

typedef struct {
    WGPUComputePipeline p;
    WGPUBindGroupLayout bgl;
    int n_bind;
} gkern;

struct tt_gpu {
    void *lib;
    wgpu_fns f;
    WGPUInstance inst;
    WGPUAdapter adapter;
    WGPUDevice dev;
    WGPUQueue queue;
    int timed_wait;
    tt_gpu_info info;
    /* handle tables (grow only at creation time) */
    gbuf *bufs;
    int n_bufs, cap_bufs;
    gkern *kerns;
    int n_kerns, cap_kerns;
    WGPUBindGroup *groups;
    int n_groups, cap_groups;
    /* recording */
    WGPUCommandEncoder enc;
    WGPUComputePassEncoder pass;
    WGPUComputePipeline cur_pipe;
    /* timestamps */
    WGPUQuerySet qset;
    int n_ts;
    int ts_pending; /* index for the beginning of the next pass, -1 none */
    WGPUPassTimestampWrites tsw;
    /* asynchronous errors */
    int err_code;
    char err[400];
    int lost;
    /* request results */
    int req_done;
    int req_status;
    char req_msg[512];
    /* bounds-check hook (see the header); NULL unless TT_WEBGPU_BOUNDS_CHECK */
    struct bcheck *bc;
};

/* ---- bounds-check hook ---------------------------------------------------- */
#define TT_BC_BINDING 31
#define TT_BC_FILES 64
#define TT_BC_LINES 4096
#define TT_BC_SLOTS (2 * TT_BC_FILES * TT_BC_LINES) /* kinds x files x lines (tests/tools/wgsl_bounds.py) */
#define TT_BC_NAMES 96
typedef struct bcheck {
    tt_gpu_buf buf;              /* the counters */
    int n_kernels;               /* instrumented pipelines compiled */
    int n_names;
    char names[TT_BC_NAMES][40]; /* their distinct labels */
    char files[TT_BC_FILES][40]; /* file number -> NAME.wgsl */
} bcheck;

/* a kernel is being created: count it if instrumented (its WGSL declares the
 * counters), learn the file table from its source */
static void bc_note_kernel(bcheck *bc, const char *wgsl, const char *label) {
    if (!strstr(wgsl, "tt_bc_count")) return;
    bc->n_kernels++;
    const char *name = label ? label : "?";
    int seen = 0;
    for (int i = 0; i < bc->n_names && !seen; i++) seen = strcmp(bc->names[i], name) == 0;
    if (!seen && bc->n_names < TT_BC_NAMES) snprintf(bc->names[bc->n_names++], sizeof bc->names[0], "%s", name);
    for (const char *p = strstr(wgsl, "//!bounds_file "); p; p = strstr(p + 1, "//!bounds_file ")) {
        int n = 0;
        char file[40];
        if (sscanf(p + 15, "%d %39s", &n, file) == 2 && n > 0 && n < TT_BC_FILES && !bc->files[n][0])
            snprintf(bc->files[n], sizeof bc->files[n], "%s", file);
    }
}

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
static WGPUStringView sv(const char *s) {
    WGPUStringView v = {s, s ? WGPU_STRLEN : 0};
    return v;
}

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

static void on_pop(WGPUPopErrorScopeStatus status, WGPUErrorType type, WGPUStringView msg, void *u1, void *u2) {
    (void)u2;
    tt_gpu *g = u1;
    g->req_done = 1;
    g->req_status = status == WGPUPopErrorScopeStatus_Success ? (int)type : -1;
    sv_first_line(g->req_msg, sizeof g->req_msg, msg, 0);
}

static void on_map(WGPUMapAsyncStatus status, WGPUStringView msg, void *u1, void *u2) {
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
static void wait_while(tt_gpu *g, WGPUFuture fut, volatile int *v, int busy) {
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

static void wait_future(tt_gpu *g, WGPUFuture fut, volatile int *flag) { wait_while(g, fut, flag, 0); }

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
    wait_future(g, f, &g->req_done);
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
    dd.label = sv("tinytrain");
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
    wait_future(g, f, &g->req_done);
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

/* ---- error scopes around object creation --------------------------------- */
static void scope_push(tt_gpu *g) {
    g->f.wgpuDevicePushErrorScope(g->dev, WGPUErrorFilter_OutOfMemory);
    g->f.wgpuDevicePushErrorScope(g->dev, WGPUErrorFilter_Validation);
}

/* Pops both scopes; returns TT_OK or the first error with "what: message". */
static int scope_pop(tt_gpu *g, const char *what, tt_status *st) {
    int rc = TT_OK;
    for (int i = 0; i < 2; i++) {
        WGPUPopErrorScopeCallbackInfo ci;
        memset(&ci, 0, sizeof ci);
        ci.mode = WGPUCallbackMode_AllowProcessEvents;
        ci.callback = on_pop;
        ci.userdata1 = g;
        g->req_done = 0;
        g->req_msg[0] = 0;
        WGPUFuture f = g->f.wgpuDevicePopErrorScope(g->dev, ci);
        wait_future(g, f, &g->req_done);
        if (rc == TT_OK && g->req_done && g->req_status != WGPUErrorType_NoError && g->req_status != -1) {
            int oom = g->req_status == WGPUErrorType_OutOfMemory;
            rc = tt_fail(st, oom ? TT_ENOMEM : TT_EDEVICE, "%s: %s%s", what, oom ? "out of device memory: " : "",
                         g->req_msg);
        }
    }
    if (rc == TT_OK && g->err_code) rc = tt_fail(st, g->err_code, "%s", g->err);
    return rc;
}

/* ---- buffers ------------------------------------------------------------- */
int tt_gpu_buffer(tt_gpu *g, uint64_t bytes, int usage, const char *label, tt_gpu_buf *out, tt_status *st) {
    *out = -1;
    if (bytes == 0) bytes = 4;
    if (bytes > g->info.max_buffer) /* before rounding up, which could wrap */
        return tt_fail(st, TT_ENOMEM, "webgpu: buffer %s of %.1f MiB exceeds this adapter's maxBufferSize (%.1f MiB)",
                       label ? label : "", bytes / 1048576.0, g->info.max_buffer / 1048576.0);
    bytes = (bytes + 15) & ~(uint64_t)15; /* whole-buffer bindings as array<vec4<f32>> */
    const char *oom = tt_hook_get(TT_HOOK_FAULT_OOM); /* test hook: see the header */
    if (oom && label && strcmp(oom, label) == 0 && g->info.max_buffer < UINT64_MAX - 64)
        bytes = (g->info.max_buffer + 64) & ~(uint64_t)15; /* the implementation must refuse it */
    else if (bytes > g->info.max_buffer)
        return tt_fail(st, TT_ENOMEM, "webgpu: buffer %s of %.1f MiB exceeds this adapter's maxBufferSize (%.1f MiB)",
                       label ? label : "", bytes / 1048576.0, g->info.max_buffer / 1048576.0);
    if (tt_gpu_grow((void **)&g->bufs, &g->cap_bufs, g->n_bufs, sizeof *g->bufs, 64))
        return tt_fail(st, TT_ENOMEM, "out of memory (gpu buffers)");
    WGPUBufferDescriptor d;
    memset(&d, 0, sizeof d);
    d.label = sv(label);
    d.size = bytes;
    if (usage & TT_GPU_READBACK) d.usage = WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst;
    else if (usage & TT_GPU_UNIFORM) d.usage = WGPUBufferUsage_Uniform | WGPUBufferUsage_CopyDst;
    else d.usage = WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst;
    scope_push(g);
    WGPUBuffer b = g->f.wgpuDeviceCreateBuffer(g->dev, &d);
    char what[160];
    snprintf(what, sizeof what, "webgpu: cannot create buffer %s (%.1f MiB)", label ? label : "", bytes / 1048576.0);
    int rc = scope_pop(g, what, st);
    if (rc || !b) {
        if (b) g->f.wgpuBufferRelease(b);
        return rc ? rc : tt_fail(st, TT_EDEVICE, "%s", what);
    }
    gbuf *gb = &g->bufs[g->n_bufs];
    memset(gb, 0, sizeof *gb);
    gb->b = b;
    gb->size = bytes;
    gb->usage = usage;
    *out = g->n_bufs++;
    return TT_OK;
}

void tt_gpu_buffer_free(tt_gpu *g, tt_gpu_buf h) {
    if (!g || h < 0 || h >= g->n_bufs || !g->bufs[h].b) return;
    gbuf *b = &g->bufs[h];
    if (b->map_state == 1) wait_while(g, b->map_future, (volatile int *)&b->map_state, 1);
    if (b->map_state == 2) g->f.wgpuBufferUnmap(b->b);
    g->f.wgpuBufferDestroy(b->b);
    g->f.wgpuBufferRelease(b->b);
    b->b = NULL;
}

int tt_gpu_write(tt_gpu *g, tt_gpu_buf h, uint64_t offset, const void *data, uint64_t bytes, tt_status *st) {
    if (h < 0 || h >= g->n_bufs || !g->bufs[h].b) return tt_fail(st, TT_EINVAL, "webgpu: bad buffer handle");
    if ((offset | bytes) & 3) return tt_fail(st, TT_EINVAL, "webgpu: write offset/size not a multiple of 4");
    if (offset + bytes > g->bufs[h].size) return tt_fail(st, TT_EINVAL, "webgpu: write past the end of a buffer");
    if (bytes) g->f.wgpuQueueWriteBuffer(g->queue, g->bufs[h].b, offset, data, (size_t)bytes);
    return tt_gpu_check(g, st);
}

/* ---- kernels ------------------------------------------------------------- */
int tt_gpu_kernel_create(tt_gpu *g, const char *wgsl, const char *entry, int n_bind, const uint8_t *kinds,
                         const char *label, tt_gpu_kernel *out, tt_status *st) {
    *out = -1;
    if (n_bind < 0 || n_bind > 16) return tt_fail(st, TT_EINVAL, "webgpu: too many bindings");
    if (tt_gpu_grow((void **)&g->kerns, &g->cap_kerns, g->n_kerns, sizeof *g->kerns, 32))
        return tt_fail(st, TT_ENOMEM, "out of memory (gpu kernels)");
    WGPUBindGroupLayoutEntry e[17];
    memset(e, 0, sizeof e);
    for (int i = 0; i < n_bind; i++) {
        e[i].binding = (uint32_t)i;
        e[i].visibility = WGPUShaderStage_Compute;
        e[i].buffer.type = kinds[i] == TT_GPU_BIND_UNIFORM ? WGPUBufferBindingType_Uniform :
                           kinds[i] == TT_GPU_BIND_READ    ? WGPUBufferBindingType_ReadOnlyStorage :
                                                             WGPUBufferBindingType_Storage;
    }
    if (g->bc) { /* bounds-check hook: the counters at @31 */
        e[n_bind].binding = TT_BC_BINDING;
        e[n_bind].visibility = WGPUShaderStage_Compute;
        e[n_bind].buffer.type = WGPUBufferBindingType_Storage;
    }
    char what[160];
    snprintf(what, sizeof what, "webgpu: cannot compile kernel %s (entry %s)", label ? label : "", entry);
    char *broken = NULL; /* test hook TT_WEBGPU_FAULT_SHADER: see the header */
    const char *fs = tt_hook_get(TT_HOOK_FAULT_SHADER);
    if (fs && (strcmp(fs, "*") == 0 || (label && strcmp(fs, label) == 0))) {
        static const char tail[] = "\nfn tt_fault_hook( {\n";
        size_t n = strlen(wgsl);
        broken = malloc(n + sizeof tail);
        if (!broken) return tt_fail(st, TT_ENOMEM, "out of memory (kernel source)");
        memcpy(broken, wgsl, n);
        memcpy(broken + n, tail, sizeof tail);
        wgsl = broken;
    }
    scope_push(g);
    WGPUBindGroupLayoutDescriptor bd;
    memset(&bd, 0, sizeof bd);
    bd.label = sv(label);
    bd.entryCount = (size_t)n_bind + (g->bc ? 1 : 0);
    bd.entries = e;
    WGPUBindGroupLayout bgl = g->f.wgpuDeviceCreateBindGroupLayout(g->dev, &bd);
    WGPUShaderSourceWGSL src;
    memset(&src, 0, sizeof src);
    src.chain.sType = WGPUSType_ShaderSourceWGSL;
    src.code = sv(wgsl);
    WGPUShaderModuleDescriptor sd;
    memset(&sd, 0, sizeof sd);
    sd.nextInChain = &src.chain;
    sd.label = sv(label);
    WGPUShaderModule sm = g->f.wgpuDeviceCreateShaderModule(g->dev, &sd);
    WGPUPipelineLayoutDescriptor pd;
    memset(&pd, 0, sizeof pd);
    pd.bindGroupLayoutCount = 1;
    pd.bindGroupLayouts = &bgl;
    WGPUPipelineLayout pl = g->f.wgpuDeviceCreatePipelineLayout(g->dev, &pd);
    WGPUComputePipelineDescriptor cd;
    memset(&cd, 0, sizeof cd);
    cd.label = sv(label);
    cd.layout = pl;
    cd.compute.module = sm;
    cd.compute.entryPoint = sv(entry);
    WGPUComputePipeline p = g->f.wgpuDeviceCreateComputePipeline(g->dev, &cd);
    int rc = scope_pop(g, what, st);
    free(broken);
    if (sm) g->f.wgpuShaderModuleRelease(sm);
    if (pl) g->f.wgpuPipelineLayoutRelease(pl);
    if (rc || !p || !bgl) {
        if (p) g->f.wgpuComputePipelineRelease(p);
        if (bgl) g->f.wgpuBindGroupLayoutRelease(bgl);
        return rc ? rc : tt_fail(st, TT_EDEVICE, "%s: creation failed", what);
    }
    if (g->bc) bc_note_kernel(g->bc, wgsl, label);
    gkern *k = &g->kerns[g->n_kerns];
    k->p = p;
    k->bgl = bgl;
    k->n_bind = n_bind;
    *out = g->n_kerns++;
    return TT_OK;
}

int tt_gpu_group_create(tt_gpu *g, tt_gpu_kernel kh, int n, const tt_gpu_binding *b, tt_gpu_group *out,
                        tt_status *st) {
    *out = -1;
    if (kh < 0 || kh >= g->n_kerns) return tt_fail(st, TT_EINVAL, "webgpu: bad kernel handle");
    gkern *k = &g->kerns[kh];
    if (n != k->n_bind || n > 16) return tt_fail(st, TT_EINVAL, "webgpu: bind group needs %d bindings (got %d)", k->n_bind, n);
    if (tt_gpu_grow((void **)&g->groups, &g->cap_groups, g->n_groups, sizeof *g->groups, 128))
        return tt_fail(st, TT_ENOMEM, "out of memory (gpu bind groups)");
    WGPUBindGroupEntry e[17];
    memset(e, 0, sizeof e);
    for (int i = 0; i < n; i++) {
        if (b[i].buf < 0 || b[i].buf >= g->n_bufs || !g->bufs[b[i].buf].b)
            return tt_fail(st, TT_EINVAL, "webgpu: bad buffer handle in binding %d", i);
        gbuf *gb = &g->bufs[b[i].buf];
        e[i].binding = (uint32_t)i;
        e[i].buffer = gb->b;
        e[i].offset = b[i].offset;
        e[i].size = b[i].size ? b[i].size : gb->size - b[i].offset;
    }
    if (g->bc) { /* bounds-check hook: the counters at @31 */
        e[n].binding = TT_BC_BINDING;
        e[n].buffer = g->bufs[g->bc->buf].b;
        e[n].size = g->bufs[g->bc->buf].size;
    }
    WGPUBindGroupDescriptor d;
    memset(&d, 0, sizeof d);
    d.layout = k->bgl;
    d.entryCount = (size_t)n + (g->bc ? 1 : 0);
    d.entries = e;
    scope_push(g);
    WGPUBindGroup grp = g->f.wgpuDeviceCreateBindGroup(g->dev, &d);
    int rc = scope_pop(g, "webgpu: bind group", st);
    if (rc || !grp) {
        if (grp) g->f.wgpuBindGroupRelease(grp);
        return rc ? rc : tt_fail(st, TT_EDEVICE, "webgpu: bind group creation failed");
    }
    g->groups[g->n_groups] = grp;
    *out = g->n_groups++;
    return TT_OK;
}

/* ---- recording ----------------------------------------------------------- */
int tt_gpu_begin(tt_gpu *g, tt_status *st) {
    if (g->enc) return tt_fail(st, TT_EINVAL, "webgpu: begin while recording");
    TT_CHECK(tt_gpu_check(g, st));
    g->enc = g->f.wgpuDeviceCreateCommandEncoder(g->dev, NULL);
    if (!g->enc) return tt_fail(st, TT_EDEVICE, "webgpu: cannot create a command encoder");
    g->cur_pipe = NULL;
    return TT_OK;
}

static void end_pass(tt_gpu *g) {
    if (!g->pass) return;
    g->f.wgpuComputePassEncoderEnd(g->pass);
    g->f.wgpuComputePassEncoderRelease(g->pass);
    g->pass = NULL;
    g->cur_pipe = NULL;
}

static void ensure_pass(tt_gpu *g) {
    if (g->pass) return;
    WGPUComputePassDescriptor d;
    memset(&d, 0, sizeof d);
    if (g->ts_pending >= 0 && g->qset) {
        memset(&g->tsw, 0, sizeof g->tsw);
        g->tsw.querySet = g->qset;
        g->tsw.beginningOfPassWriteIndex = (uint32_t)g->ts_pending;
        g->tsw.endOfPassWriteIndex = WGPU_QUERY_SET_INDEX_UNDEFINED;
        d.timestampWrites = &g->tsw;
        g->ts_pending = -1;
    }
    g->pass = g->f.wgpuCommandEncoderBeginComputePass(g->enc, &d);
}

void tt_gpu_dispatch(tt_gpu *g, tt_gpu_kernel k, tt_gpu_group grp, uint32_t x, uint32_t y, uint32_t z) {
    if (!g->enc || x == 0 || y == 0 || z == 0) return;
    ensure_pass(g);
    WGPUComputePipeline p = g->kerns[k].p;
    if (p != g->cur_pipe) {
        g->f.wgpuComputePassEncoderSetPipeline(g->pass, p);
        g->cur_pipe = p;
    }
    g->f.wgpuComputePassEncoderSetBindGroup(g->pass, 0, g->groups[grp], 0, NULL);
    g->f.wgpuComputePassEncoderDispatchWorkgroups(g->pass, x, y, z);
}

void tt_gpu_copy(tt_gpu *g, tt_gpu_buf src, uint64_t src_off, tt_gpu_buf dst, uint64_t dst_off, uint64_t bytes) {
    if (!g->enc || bytes == 0) return;
    end_pass(g);
    g->f.wgpuCommandEncoderCopyBufferToBuffer(g->enc, g->bufs[src].b, src_off, g->bufs[dst].b, dst_off, bytes);
}

void tt_gpu_clear(tt_gpu *g, tt_gpu_buf b, uint64_t off, uint64_t bytes) {
    if (!g->enc || bytes == 0) return;
    end_pass(g);
    g->f.wgpuCommandEncoderClearBuffer(g->enc, g->bufs[b].b, off, bytes);
}

int tt_gpu_submit(tt_gpu *g, tt_status *st) {
    if (!g->enc) return tt_fail(st, TT_EINVAL, "webgpu: submit without begin");
    end_pass(g);
    WGPUCommandBuffer cb = g->f.wgpuCommandEncoderFinish(g->enc, NULL);
    g->f.wgpuCommandEncoderRelease(g->enc);
    g->enc = NULL;
    if (!cb) return tt_fail(st, TT_EDEVICE, "webgpu: command encoding failed");
    g->f.wgpuQueueSubmit(g->queue, 1, &cb);
    g->f.wgpuCommandBufferRelease(cb);
    return tt_gpu_check(g, st);
}

/* ---- readback ------------------------------------------------------------ */
int tt_gpu_read_start(tt_gpu *g, tt_gpu_buf h, uint64_t offset, uint64_t bytes, tt_status *st) {
    if (h < 0 || h >= g->n_bufs || !(g->bufs[h].usage & TT_GPU_READBACK))
        return tt_fail(st, TT_EINVAL, "webgpu: read_start needs a READBACK buffer");
    gbuf *b = &g->bufs[h];
    if (b->map_state != 0) return tt_fail(st, TT_EINVAL, "webgpu: readback buffer already mapping");
    if ((offset & 7) || (bytes & 3) || offset + bytes > b->size)
        return tt_fail(st, TT_EINVAL, "webgpu: bad readback range");
    WGPUBufferMapCallbackInfo ci;
    memset(&ci, 0, sizeof ci);
    ci.mode = WGPUCallbackMode_AllowProcessEvents;
    ci.callback = on_map;
    ci.userdata1 = b;
    b->map_state = 1;
    b->map_off = offset;
    b->map_size = bytes;
    b->map_msg[0] = 0;
    b->map_future = g->f.wgpuBufferMapAsync(b->b, WGPUMapMode_Read, (size_t)offset, (size_t)bytes, ci);
    return TT_OK;
}

int tt_gpu_read_pending(const tt_gpu *g, tt_gpu_buf h) {
    return h >= 0 && h < g->n_bufs && g->bufs[h].map_state != 0;
}

int tt_gpu_read_finish(tt_gpu *g, tt_gpu_buf h, void *dst, tt_status *st) {
    if (h < 0 || h >= g->n_bufs) return tt_fail(st, TT_EINVAL, "webgpu: bad buffer handle");
    gbuf *b = &g->bufs[h];
    if (b->map_state == 0) return tt_fail(st, TT_EINVAL, "webgpu: read_finish without read_start");
    /* the callback writes map_state from 1 to 2/3 */
    volatile int *state = (volatile int *)&b->map_state;
    wait_while(g, b->map_future, state, 1);
    if (*state == 1) {
        /* device lost while waiting */
        b->map_state = 0;
        return tt_fail(st, TT_EDEVICE, "%s", g->err[0] ? g->err : "webgpu: device lost during readback");
    }
    if (*state == 3) {
        b->map_state = 0;
        if (g->err_code) return tt_fail(st, g->err_code, "%s", g->err);
        return tt_fail(st, TT_EDEVICE, "webgpu: readback failed: %s", b->map_msg);
    }
    const void *p = g->f.wgpuBufferGetConstMappedRange(b->b, (size_t)b->map_off, (size_t)b->map_size);
    int rc = TT_OK;
    if (!p) rc = tt_fail(st, TT_EDEVICE, "webgpu: mapped range unavailable");
    else if (dst) memcpy(dst, p, (size_t)b->map_size);
    g->f.wgpuBufferUnmap(b->b);
    b->map_state = 0;
    if (rc == TT_OK) rc = tt_gpu_check(g, st);
    return rc;
}

/* ---- timestamps ---------------------------------------------------------- */
int tt_gpu_timestamps_init(tt_gpu *g, int n, tt_status *st) {
    if (!g->info.has_timestamps) return tt_fail(st, TT_EUNSUP, "webgpu: adapter has no timestamp-query");
    if (g->qset) return TT_OK;
    WGPUQuerySetDescriptor d;
    memset(&d, 0, sizeof d);
    d.type = WGPUQueryType_Timestamp;
    d.count = (uint32_t)n;
    scope_push(g);
    g->qset = g->f.wgpuDeviceCreateQuerySet(g->dev, &d);
    int rc = scope_pop(g, "webgpu: timestamp query set", st);
    if (rc) return rc;
    g->n_ts = n;
    return TT_OK;
}

void tt_gpu_timestamp(tt_gpu *g, int i) {
    if (!g->qset || i < 0 || i >= g->n_ts) return;
    end_pass(g);
    g->ts_pending = i;
    /* an empty pass records the timestamp even if nothing follows */
    ensure_pass(g);
}

void tt_gpu_timestamps_resolve(tt_gpu *g, int n, tt_gpu_buf staging) {
    if (!g->qset || !g->enc || n <= 0) return;
    end_pass(g);
    /* resolve needs a QueryResolve buffer: we use a private one per call */
    WGPUBufferDescriptor d;
    memset(&d, 0, sizeof d);
    d.size = (uint64_t)n * 8;
    d.usage = WGPUBufferUsage_QueryResolve | WGPUBufferUsage_CopySrc;
    WGPUBuffer rb = g->f.wgpuDeviceCreateBuffer(g->dev, &d);
    g->f.wgpuCommandEncoderResolveQuerySet(g->enc, g->qset, 0, (uint32_t)n, rb, 0);
    g->f.wgpuCommandEncoderCopyBufferToBuffer(g->enc, rb, 0, g->bufs[staging].b, 0, (uint64_t)n * 8);
    g->f.wgpuBufferRelease(rb); /* kept alive by the encoder */
}

#endif /* __EMSCRIPTEN__ */
