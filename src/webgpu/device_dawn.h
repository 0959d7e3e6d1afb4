/* device_dawn.h — the Dawn device layer's state, shared by its two files
 * (private to them): device_dawn.c opens and closes the device (library,
 * adapter, features, errors, waits), device_dawn_ops.c does the work
 * (buffers, kernels, recording, read-back, timestamps). */
#ifndef TT_DEVICE_DAWN_H
#define TT_DEVICE_DAWN_H

#include <stdint.h>

#include "device.h"
#include "webgpu_min.h"

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

static inline WGPUStringView tt_dawn_sv(const char *s) {
    WGPUStringView v = {s, s ? WGPU_STRLEN : 0};
    return v;
}

/* callbacks of error-scope pops (the result into g->req_*) and buffer maps */
void tt_dawn_on_pop(WGPUPopErrorScopeStatus status, WGPUErrorType type, WGPUStringView msg, void *u1, void *u2);
void tt_dawn_on_map(WGPUMapAsyncStatus status, WGPUStringView msg, void *u1, void *u2);

/* Wait for a future while *v == busy (its callback changes *v). Returns
 * early on device loss. */
void tt_dawn_wait_while(tt_gpu *g, WGPUFuture fut, volatile int *v, int busy);
static inline void tt_dawn_wait_future(tt_gpu *g, WGPUFuture fut, volatile int *flag) {
    tt_dawn_wait_while(g, fut, flag, 0);
}

#endif
