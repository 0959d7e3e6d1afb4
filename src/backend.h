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
    /* dropout of this step (embeddings, attention probabilities, residual
     * branches; rng.h says how masks are keyed): p = 0 is no dropout. eval()
     * and sampling never drop. */
    float dropout;
    uint64_t seed;     /* the run's seed, keys the masks */
    int64_t step;      /* 0-based optimizer step, keys the masks */
} tt_optim_args;

typedef struct tt_backend tt_backend;

typedef enum { TT_BACKEND_CPU = 0, TT_BACKEND_WEBGPU = 1 } tt_backend_kind;

/* What a backend is, for front-ends (the CLI's info/bench lines, the web
 * app): filled at creation, constant afterwards. */
typedef struct {
    tt_backend_kind kind;
    const char *name;      /* "cpu", "webgpu" */
    int is_software;       /* a CPU, or a GPU adapter that is a software renderer (lavapipe, SwiftShader) */
    char device[128];      /* e.g. "cpu avx512, 16 threads", "NVIDIA H200 (vulkan)" */
    char detail[256];      /* one line of device facts that change what runs (WebGPU: optional features,
                            * binding limit, robustness); "" when there is nothing to add */
    /* Memory the backend allocated at creation (its plan; nothing is added
     * per step): device_bytes = GPU buffers (0 for host backends);
     * host_bytes = host heap of the backend (CPU: parameters, grads, AdamW
     * moments, activations, scratch; WebGPU: its small staging arrays).
     * Excludes the caller's own state and the runtime/driver. */
    uint64_t device_bytes;
    uint64_t host_bytes;
} tt_backend_desc;

/* Arithmetic of a backend's products (the option "precision"):
 * TT_PRECISION_F32 everything in f32 (the bit-exact reference);
 * TT_PRECISION_F16 mixed precision as PyTorch's autocast: matmul operands
 * rounded to f16, products accumulated in f32; weights, AdamW state and
 * every reduction (LayerNorm statistics, softmax, loss, grad norm) stay f32;
 * dynamic loss scaling (tt_loss_scaler). Only a WebGPU device with
 * shader-f16 offers it; other backends refuse it at creation. */
enum { TT_PRECISION_F32 = 0, TT_PRECISION_F16 = 1 };

/* Dynamic loss scaling (TT_PRECISION_F16), as torch.cuda.amp.GradScaler:
 * the loss gradient is multiplied by `scale`; grads are unscaled before
 * the norm, clip and AdamW; a step whose unscaled grad norm is not finite
 * changes nothing (parameters, moments), halves the scale and counts as
 * skipped: AdamW's bias corrections count only the steps it took (as in
 * PyTorch, where a skipped step never reaches the optimizer); after
 * TT_LOSS_SCALE_INTERVAL clean steps in a row the scale doubles. The state
 * lives on the device (no host round trip between steps); a backend that
 * has it returns this table from get_proc("loss_scaler"). */
#define TT_LOSS_SCALE_INIT 65536.0f
#define TT_LOSS_SCALE_INTERVAL 2000
#define TT_LOSS_SCALE_MAX_SKIPPED 16777216 /* 2^24: the device counts skipped steps in an f32 */
typedef struct {
    /* set the state (before the first step of a run or a resume) */
    int (*set)(tt_backend *be, float scale, int64_t good, int64_t skipped, tt_status *st);
    /* the state after the last completed step (waits for pending work) */
    int (*get)(tt_backend *be, float *scale, int64_t *good, int64_t *skipped, tt_status *st);
    /* the state after the step last read by step_result / step_result_prev
     * (no wait) */
    void (*last)(tt_backend *be, float *scale, int64_t *good, int64_t *skipped);
} tt_loss_scaler;

/* Creation options; zero-initialised means the defaults. */
typedef struct {
    int threads;    /* CPU worker threads, <= 0: tt_default_threads() */
    int timestamps; /* 1: measure phase_times (CPU: host clock; WebGPU: timestamp queries, refused
                     * with TT_EUNSUP where the adapter lacks them); 0: phase_times returns TT_EUNSUP */
    int dropout;    /* 1: steps will ask for dropout: a backend that plans a separate dropout
                     * schedule (WebGPU) plans it at creation, so no step allocates; 0: it plans
                     * it at the first step that asks (that step allocates once) */
    int precision;  /* TT_PRECISION_*; a backend without the tier refuses it (one line, TT_EUNSUP) */
} tt_backend_opts;

typedef struct {
    void (*destroy)(tt_backend *be);
    /* Upload full state. params has layout.total floats; m, v cover only the
     * trainable range [tt_layout_train0, total) (config.h: a LoRA model's
     * adapters, else the whole layout), tt_layout_train_count floats each,
     * element i being layout element train0 + i; m, v may be NULL (zeros).
     * A frozen tensor (a LoRA model's base) has no moments. */
    int (*set_state)(tt_backend *be, const float *params, const float *m, const float *v, tt_status *st);
    /* Download state (the sizes of set_state); any pointer may be NULL to
     * skip it. Waits for pending work. */
    int (*get_state)(tt_backend *be, float *params, float *m, float *v, tt_status *st);
    /* tokens: (n_micro, B, T+1) token ids (< cfg.vocab), B = cfg.batch, T = cfg.ctx. inputs are
     * [.., 0:T], targets [.., 1:T+1]. */
    int (*step)(tt_backend *be, const tt_token *tokens, int n_micro, const tt_optim_args *opt, tt_status *st);
    int (*step_result)(tt_backend *be, float *loss, float *grad_norm, tt_status *st);
    /* Forward only: mean loss over (B, T) with B <= cfg.batch. Synchronous. */
    int (*eval)(tt_backend *be, const tt_token *tokens, int B, float *loss, tt_status *st);
    /* Optional (may be NULL): mean loss AND full gradient of one micro-batch
     * without updating; grads (layout.total floats) overwritten. For tests. */
    int (*loss_and_grad)(tt_backend *be, const tt_token *tokens, float *loss, float *grads, tt_status *st);
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
     * cannot measure it (created without opts.timestamps, or WebGPU without
     * timestamp queries). CPU: host wall clock around the phases; WebGPU: GPU
     * timestamps between passes. */
    int (*phase_times)(tt_backend *be, double ms[3], tt_status *st);
    /* Memory a backend of this kind on this device would allocate for cfg
     * (its plan, computed without allocating): CPU host bytes with this
     * backend's thread count; WebGPU device bytes of the buffer plan, or
     * TT_EUNSUP with the reason when it exceeds the adapter's limits. */
    int (*plan_bytes)(tt_backend *be, const tt_model_config *cfg, uint64_t *bytes, tt_status *st);
    /* Optional (may be NULL): a backend-specific extra by name, NULL when
     * this backend has none of that name (ggml's get_proc_address habit):
     * "webgpu.profile" -> tt_webgpu_profile_fn (webgpu_profile.h). */
    void *(*get_proc)(tt_backend *be, const char *name);
    /* Optional (may be NULL: this backend cannot inspect): the forward of one
     * sequence of T tokens (1 <= T <= cfg.ctx), for inspect.h, and the
     * activations it needs: resid (L+1, T, C) the residual stream after the
     * embedding, then after each block; q, k (L, T, C) each layer's queries
     * and keys (heads side by side). The eval forward (no dropout; LoRA
     * adapters included) on a batch padded to the plan: positions past T do
     * not change 0..T-1 (causal). Synchronous; parameters and optimizer
     * state are untouched, activation buffers overwritten (call it between
     * steps, none in flight). */
    int (*inspect)(tt_backend *be, const tt_token *tokens, int T, float *resid, float *q, float *k, tt_status *st);
} tt_backend_vtable;

struct tt_backend {
    const tt_backend_vtable *vt;
    tt_backend_desc desc;
    tt_model_config cfg;
    tt_layout layout;
    void *impl;
};

/* The per-kind constructors (src/cpu/backend.c, src/webgpu/backend.c);
 * front-ends create a backend through engine/backend_create.h, which picks
 * the kind. */
int tt_backend_cpu_create(const tt_model_config *cfg, const tt_backend_opts *opts, tt_backend **out, tt_status *st);
int tt_backend_webgpu_create(const tt_model_config *cfg, const tt_backend_opts *opts, tt_backend **out, tt_status *st);

static inline void tt_backend_destroy(tt_backend *be) {
    if (be) be->vt->destroy(be);
}

#endif
