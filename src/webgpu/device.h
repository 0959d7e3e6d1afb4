/* device.h — the GPU device layer: the ~20 functions everything above it
 * (kernels, the training-step schedule) uses to talk to a WebGPU device.
 *
 * Two implementations: device_dawn.c (webgpu.h through a dlopen'ed Dawn)
 * and, for the browser, a JavaScript one over navigator.gpu. Nothing above
 * this header knows which one runs. Objects are small integer handles
 * (>= 0), which map directly onto JS-side tables in the browser.
 *
 * Model of use:
 *   open -> create buffers, kernels (WGSL compute pipelines with an explicit
 *   bind group layout), bind groups (once) -> per step: begin, dispatch...,
 *   copy/clear, submit; readback by mapping a READBACK buffer after submit
 *   (read_start) and waiting for it later (read_finish).
 * Errors: every function returning int returns TT_OK or a tt_status code
 * with a one-line message. Asynchronous WebGPU errors (validation, OOM,
 * device lost) are recorded by the device and reported by the next
 * tt_gpu_check / read_finish / submit; they are never silent. */
#ifndef TT_GPU_DEVICE_H
#define TT_GPU_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "tt.h"

typedef struct tt_gpu tt_gpu;
typedef int32_t tt_gpu_buf;    /* buffer handle */
typedef int32_t tt_gpu_kernel; /* compute pipeline + its bind group layout */
typedef int32_t tt_gpu_group;  /* bind group for one kernel */

/* buffer usage */
enum {
    TT_GPU_STORAGE = 1,  /* storage binding + copy src/dst (the default tensor buffer) */
    TT_GPU_UNIFORM = 2,  /* uniform binding + copy dst */
    TT_GPU_READBACK = 4  /* map-read + copy dst (staging for readback) */
};

/* binding kinds, in binding-index order of a kernel's bind group 0 */
enum {
    TT_GPU_BIND_UNIFORM = 0, /* var<uniform> */
    TT_GPU_BIND_READ = 1,    /* var<storage, read> */
    TT_GPU_BIND_RW = 2       /* var<storage, read_write> */
};

typedef struct {
    char name[128];          /* adapter description, e.g. "NVIDIA H200" */
    char backend[16];        /* "vulkan", "metal", ... */
    int is_cpu;              /* software adapter (lavapipe, SwiftShader) */
    uint64_t max_storage_binding; /* maxStorageBufferBindingSize */
    uint64_t max_buffer;          /* maxBufferSize */
    uint64_t max_uniform_binding;
    uint32_t max_storage_per_stage;
    uint32_t max_wg_storage;      /* maxComputeWorkgroupStorageSize */
    uint32_t max_invocations;     /* maxComputeInvocationsPerWorkgroup */
    uint32_t max_wg_per_dim;      /* maxComputeWorkgroupsPerDimension */
    uint32_t min_uniform_align;   /* minUniformBufferOffsetAlignment */
    uint32_t min_storage_align;
    int has_timestamps, has_f16, has_subgroups;
    int has_subgroup_matrix; /* adapter offers Dawn's experimental subgroup matrices */
    uint32_t sgmat_m, sgmat_n, sgmat_k; /* its f16 x f16 -> f32 configuration (M x N x K), 0: none */
    uint32_t subgroup_min, subgroup_max;
    int robust;              /* shader bounds clamping on (Dawn's robustness transform); native default off, see device_dawn.c */
    char lib_path[256];      /* which implementation was loaded */
} tt_gpu_info;

typedef struct {
    const char *lib_path;    /* NULL: search (see device_dawn.c) */
    int want_timestamps;     /* request timestamp-query if the adapter has it */
    int force_fallback;      /* ask for the software (fallback) adapter */
} tt_gpu_options;

typedef struct {
    tt_gpu_buf buf;
    uint64_t offset; /* bytes */
    uint64_t size;   /* bytes; 0 = to the end of the buffer */
} tt_gpu_binding;

/* Open the library, an adapter and a device with the adapter's real limits.
 * TT_EUNSUP: no library / no adapter; TT_EDEVICE: device creation failed. */
int tt_gpu_open(const tt_gpu_options *opt, tt_gpu **out, tt_status *st);
void tt_gpu_close(tt_gpu *g);
const tt_gpu_info *tt_gpu_get_info(const tt_gpu *g);

int tt_gpu_buffer(tt_gpu *g, uint64_t bytes, int usage, const char *label, tt_gpu_buf *out, tt_status *st);
void tt_gpu_buffer_free(tt_gpu *g, tt_gpu_buf b);
/* queue.writeBuffer: ordered before every later submit. offset, bytes % 4 == 0. */
int tt_gpu_write(tt_gpu *g, tt_gpu_buf b, uint64_t offset, const void *data, uint64_t bytes, tt_status *st);

/* Compile WGSL (entry point `entry`) with bind group 0 laid out as
 * kinds[0..n_bind) at bindings 0..n_bind-1. Compile errors -> TT_EDEVICE
 * with the first message line. */
int tt_gpu_kernel_create(tt_gpu *g, const char *wgsl, const char *entry, int n_bind, const uint8_t *kinds,
                         const char *label, tt_gpu_kernel *out, tt_status *st);
int tt_gpu_group_create(tt_gpu *g, tt_gpu_kernel k, int n, const tt_gpu_binding *b, tt_gpu_group *out,
                        tt_status *st);

/* Recording: one command encoder with one compute pass at a time. */
int tt_gpu_begin(tt_gpu *g, tt_status *st);
void tt_gpu_dispatch(tt_gpu *g, tt_gpu_kernel k, tt_gpu_group grp, uint32_t x, uint32_t y, uint32_t z);
void tt_gpu_copy(tt_gpu *g, tt_gpu_buf src, uint64_t src_off, tt_gpu_buf dst, uint64_t dst_off, uint64_t bytes);
void tt_gpu_clear(tt_gpu *g, tt_gpu_buf b, uint64_t off, uint64_t bytes);
int tt_gpu_submit(tt_gpu *g, tt_status *st);

/* Readback through a TT_GPU_READBACK buffer: start mapping after the submit
 * that filled it; finish waits, copies bytes to dst and unmaps. */
int tt_gpu_read_start(tt_gpu *g, tt_gpu_buf b, uint64_t offset, uint64_t bytes, tt_status *st);
int tt_gpu_read_finish(tt_gpu *g, tt_gpu_buf b, void *dst, tt_status *st);
/* 1 if a read_start on b is outstanding (not yet finished). */
int tt_gpu_read_pending(const tt_gpu *g, tt_gpu_buf b);

/* Report (and keep) any asynchronous error or device loss. */
int tt_gpu_check(tt_gpu *g, tt_status *st);

/* Optional GPU timestamps (TT_EUNSUP without the feature): n slots;
 * tt_gpu_timestamp writes slot i between dispatches of the current pass;
 * tt_gpu_timestamps_resolve (before submit) copies them to readback buffer
 * rb (8 bytes per slot, nanoseconds, u64). */
int tt_gpu_timestamps_init(tt_gpu *g, int n, tt_status *st);
void tt_gpu_timestamp(tt_gpu *g, int i);
void tt_gpu_timestamps_resolve(tt_gpu *g, int n, tt_gpu_buf staging);

/* Convenience over the above (not in a hot path): synchronous read of
 * bytes from any STORAGE buffer through a temporary readback buffer. */
int tt_gpu_read_sync(tt_gpu *g, tt_gpu_buf b, uint64_t offset, uint64_t bytes, void *dst, tt_status *st);
/* A handle table *arr of *cap elements of elem bytes, n in use: doubled
 * (first: first_cap) when full. 0, or -1 out of memory (*arr unchanged). */
int tt_gpu_grow(void **arr, int *cap, int n, size_t elem, int first_cap);

#endif
