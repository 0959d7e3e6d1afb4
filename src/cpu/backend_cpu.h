/* backend_cpu.h — extras of the CPU backend beyond backend.h (for tests
 * and the benchmarks): the memory plan and its scratch part. */
#ifndef TT_BACKEND_CPU_H
#define TT_BACKEND_CPU_H

#include "backend.h"

/* Bytes the CPU backend allocates at creation for cfg with `threads` worker
 * threads (<= 0: tt_default_threads()): parameters, gradients, both AdamW
 * moments, activations for (cfg.batch, cfg.ctx), backward buffers and
 * scratch. 0 if the config is invalid or the size overflows size_t. */
uint64_t tt_backend_cpu_plan_bytes(const tt_model_config *cfg, int threads);

/* Scratch floats (shared, per thread) one GPT forward + backward at
 * (cfg.batch, cfg.ctx) needs: the maximum of the ops' needs (ops.h). */
size_t tt_backend_cpu_shared_scratch(const tt_model_config *cfg);
size_t tt_backend_cpu_thread_scratch(const tt_model_config *cfg);

#endif
