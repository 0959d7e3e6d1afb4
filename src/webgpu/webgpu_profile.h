/* webgpu_profile.h — the WebGPU backend's extra beyond backend.h: per-kernel
 * timing of its training step (`tinytrain profile`),
 * reached through be->vt->get_proc(be, "webgpu.profile"). */
#ifndef TT_WEBGPU_PROFILE_H
#define TT_WEBGPU_PROFILE_H

#include "backend.h"

typedef struct {
    const char *kernel; /* WGSL kernel name, e.g. "matmul" */
    char tag[64];       /* detailed profile: the site's shape/plan ("" otherwise) */
    int sites;          /* dispatch sites of one step using it */
    double ms;          /* summed time of those sites in one step */
    double gflop;       /* their useful GFLOPs (matmul, attention), else 0 */
} tt_webgpu_prof;

/* Times every dispatch site of one step (forward, backward, optimizer with
 * n_micro = 1): each site is dispatched `reps` times back to back in one
 * submit, timed on the host around a readback, minus the cost of an empty
 * submit + readback, divided by reps. Entries are aggregated by kernel name
 * into out[0..*n) (max entries) — by kernel name and, when
 * detail != 0, also by the site's shape tag (matmul shapes). CLOBBERS the backend's activations,
 * gradients, parameters and moments: use a throwaway backend, or set_state
 * afterwards. be must be a "webgpu" backend. */
int tt_webgpu_profile(tt_backend *be, int reps, int detail, tt_webgpu_prof *out, int max, int *n, tt_status *st);
typedef int (*tt_webgpu_profile_fn)(tt_backend *be, int reps, int detail, tt_webgpu_prof *out, int max, int *n,
                                    tt_status *st);

/* How many chunks the parameter storage of a webgpu backend is split into (1:
 * unsplit; 0: not a webgpu backend); starts (may be NULL) gets the layout
 * index of the first parameter of chunks 0..min(count, max)-1. */
int tt_webgpu_param_chunks(const tt_backend *be, size_t *starts, int max);

/* The device's adapter facts (limits, features), NULL if be is not "webgpu". */
const void *tt_webgpu_info(const tt_backend *be); /* a const tt_gpu_info * (device.h) */

#endif
