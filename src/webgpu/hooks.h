/* hooks.h — the WebGPU backend's test hooks: environment variables that
 * force a fault or a plan choice so a test can reach a path the default run
 * does not take. They are read only in test builds: hooks.c is compiled
 * twice, without TT_TEST_HOOKS into the product library ttcore (every hook
 * reads as off) and with it into ttcore_hooks, which the test executables
 * and tinytrain_hooks (the CLI for the shell tests) link.
 *
 *   TT_WEBGPU_WGSL_DIR=DIR         kernel sources from DIR/NAME.wgsl instead of
 *                                  the embedded copies (instrumented kernels)
 *   TT_WEBGPU_BOUNDS_CHECK=1       counters for instrumented kernels at binding
 *                                  31, reported when the device closes
 *   TT_WEBGPU_FAULT_SHADER=label   that kernel ("*": every one) fails to compile
 *   TT_WEBGPU_FAULT_OOM=label      that buffer is refused by the implementation
 *   TT_WEBGPU_FAULT_AT_STEP=N      the N-th step() reports a device fault of
 *   TT_WEBGPU_FAULT_KIND=K         kind lost (default), error or validation
 *   TT_WEBGPU_HIDE_FEATURES=f,..   adapter features treated as absent
 *   TT_WEBGPU_REQUIRE_FEATURES=f,.. features tt_gpu_open must find
 *   TT_WEBGPU_MAX_BINDING_MIB=N    plan as if one binding held at most N MiB
 *   TT_WEBGPU_TILE=32|64|128       matmul tile forced
 *   TT_WEBGPU_SPLITK=N             matmul split-K slices forced (splittable products)
 *   TT_WEBGPU_UNROLL=0|1           //!unroll blocks as loops / unrolled
 *   TT_WEBGPU_BIASFOLD=0|1         bias gradients never / always folded into dW
 *   TT_WEBGPU_ATTN_PF=1            attention prefetch on (GPUs only by default)
 *   TT_WEBGPU_ATTN_DS=0            attention backward without stored dS (the pair of kernels)
 *   TT_WEBGPU_QKV_BATCH=0|1|2|3    which q, k, v products run batched (default 3): bit 0 the projections
 *                                  (else three dispatches, each with the group's plan), bit 1 their
 *                                  weight gradients (else three, each its lone plan, as batched); 0: none
 *   TT_WEBGPU_ATTN_SPLIT=0|1       attention dk/dv in the plain / split layout (two threads
 *                                  per 4x4 tile, where it fits; GPUs only by default)
 *   TT_WEBGPU_HEAD_ROWS=N          the head and cross-entropy in chunks of N rows (plan.c;
 *                                  by default only where the logits exceed 128 MiB)
 *   TT_WEBGPU_LOSS_SCALE_FAULT_AT_STEP=N  (--precision f16) the N-th step() seeds an infinite
 *                                  loss gradient: an overflow the loss scaler must skip
 *
 * An empty value is the same as unset. */
#ifndef TT_WEBGPU_HOOKS_H
#define TT_WEBGPU_HOOKS_H

typedef enum {
    TT_HOOK_WGSL_DIR,
    TT_HOOK_BOUNDS_CHECK,
    TT_HOOK_FAULT_SHADER,
    TT_HOOK_FAULT_OOM,
    TT_HOOK_FAULT_AT_STEP,
    TT_HOOK_FAULT_KIND,
    TT_HOOK_HIDE_FEATURES,
    TT_HOOK_REQUIRE_FEATURES,
    TT_HOOK_MAX_BINDING_MIB,
    TT_HOOK_TILE,
    TT_HOOK_SPLITK,
    TT_HOOK_UNROLL,
    TT_HOOK_BIASFOLD,
    TT_HOOK_ATTN_PF,
    TT_HOOK_ATTN_DS,
    TT_HOOK_QKV_BATCH,
    TT_HOOK_ATTN_SPLIT,
    TT_HOOK_HEAD_ROWS,
    TT_HOOK_LOSS_SCALE_FAULT_AT_STEP,
    TT_HOOK_COUNT
} tt_hook;

/* The hook's value, or NULL when it is off (unset, empty, or a product build). */
const char *tt_hook_get(tt_hook h);

#endif
