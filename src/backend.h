/* backend.h — the one interface between the trainer and a compute backend
 * (CPU, WebGPU native, WebGPU browser). Nothing above this header knows which
 * backend runs. A backend owns device copies of parameters, gradients, AdamW
 * moments and activations, planned once at creation; step() allocates nothing.
 *
 * One training step (tt_backend_vtable.step):
 *   for each micro-batch i < n_micro:  forward(tokens_i) -> mean CE loss
 *                                      backward, grads += dL_i / n_micro
 *   g_norm = ||grads||_2 (global, pre-clip)
 *   scale  = clip / (g_norm + 1e-6) if g_norm > clip else 1   (PyTorch clip_grad_norm_)
 *   AdamW on every parameter with grad * scale:
 *     p -= lr * wd * p                      (only tensors with decay=1)
 *     m = b1*m + (1-b1)*g ;  v = b2*v + (1-b2)*g*g
 *     p -= lr * (m / bc1) / (sqrt(v / bc2) + eps)
 *   with bc1 = 1 - b1^t, bc2 = 1 - b2^t computed by the caller in double.
 *   grads are zeroed for the next step.
 * The loss reported is the mean over micro-batches of each micro-batch's mean
 * token loss. step() may return before the work is done (GPU); step_result()
 * waits for the most recent step and returns its loss and pre-clip norm. */
#ifndef TT_BACKEND_H
#define TT_BACKEND_H

#include "config.h"

typedef struct {
    float lr;
    float beta1, beta2, eps;
    float weight_decay;
    float clip;        /* <= 0: no clipping */
    float bc1, bc2;    /* bias corrections 1-b1^t, 1-b2^t (caller computes) */
} tt_optim_args;

typedef struct tt_backend tt_backend;

typedef struct {
    const char *name; /* "cpu", "webgpu" */
    void (*destroy)(tt_backend *be);
    /* Upload full state. m, v may be NULL (zeros). Arrays have layout.total floats. */
    int (*set_state)(tt_backend *be, const float *params, const float *m, const float *v, tt_status *st);
    /* Download state; any pointer may be NULL to skip it. Waits for pending work. */
    int (*get_state)(tt_backend *be, float *params, float *m, float *v, tt_status *st);
    /* tokens: (n_micro, B, T+1) bytes, B = cfg.batch, T = cfg.ctx. inputs are
     * [.., 0:T], targets [.., 1:T+1]. */
    int (*step)(tt_backend *be, const uint8_t *tokens, int n_micro, const tt_optim_args *opt, tt_status *st);
    int (*step_result)(tt_backend *be, float *loss, float *grad_norm, tt_status *st);
    /* Forward only: mean loss over (B, T) with B <= cfg.batch. Synchronous. */
    int (*eval)(tt_backend *be, const uint8_t *tokens, int B, float *loss, tt_status *st);
    /* Optional (may be NULL): mean loss AND full gradient of one micro-batch
     * without updating; grads (layout.total floats) overwritten. For tests. */
    int (*loss_and_grad)(tt_backend *be, const uint8_t *tokens, float *loss, float *grads, tt_status *st);
    /* Optional (may be NULL; then callers use step() then step_result()):
     * pipelining for asynchronous backends. Waits for and returns the loss
     * and pre-clip norm of the step BEFORE the most recent one, so a caller
     * can submit step k+1 before reading step k (the device never idles).
     * Valid once after each step() that follows another step(). */
    int (*step_result_prev)(tt_backend *be, float *loss, float *grad_norm, tt_status *st);
    /* Optional (may be NULL: not measurable): the time split of the most
     * recent step whose result has been read back (step_result or
     * step_result_prev), ms[0] forward (+ loss), ms[1] backward, ms[2]
     * optimizer (grad norm + clip + AdamW), milliseconds summed over the
     * micro-batches. TT_EUNSUP with the reason when this backend instance
     * cannot measure it (e.g. WebGPU without timestamp queries). CPU: host
     * wall clock around the phases; WebGPU: GPU timestamps between passes. */
    int (*phase_times)(tt_backend *be, double ms[3], tt_status *st);
} tt_backend_vtable;

struct tt_backend {
    const tt_backend_vtable *vt;
    tt_model_config cfg;
    tt_layout layout;
    char device_name[128]; /* e.g. "cpu avx2+fma x16 threads", "NVIDIA H200 (vulkan)" */
    /* Memory the backend allocated at creation (its plan; nothing is added
     * per step): device_bytes = GPU buffers (0 for host backends);
     * host_bytes = host heap of the backend (CPU: parameters, grads, AdamW
     * moments, activations, scratch; WebGPU: its small staging arrays).
     * Excludes the caller's own state and the runtime/driver. */
    uint64_t device_bytes;
    uint64_t host_bytes;
    void *impl;
};

/* CPU backend: threads <= 0 means tt_default_threads(). */
int tt_backend_cpu_create(const tt_model_config *cfg, int threads, tt_backend **out, tt_status *st);
/* WebGPU backend (native Dawn through dlopen, or the browser device layer).
 * Returns TT_EUNSUP with a clear message when no library / adapter exists. */
int tt_backend_webgpu_create(const tt_model_config *cfg, tt_backend **out, tt_status *st);
/* Preflight on the device of an existing webgpu backend: TT_OK if a model
 * of cfg would fit it (every buffer within the adapter's binding and buffer
 * limits), else TT_EUNSUP with the reason; *bytes (may be NULL) gets the
 * device memory of the plan. Allocates nothing on the device. */
int tt_backend_webgpu_fits(tt_backend *gpu, const tt_model_config *cfg, double *bytes, tt_status *st);

static inline void tt_backend_destroy(tt_backend *be) {
    if (be) be->vt->destroy(be);
}

#endif
