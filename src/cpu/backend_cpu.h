/* backend_cpu.h — extras of the CPU backend beyond backend.h (for tests,
 * `tinytrain info` and the benchmark): the memory plan. */
#ifndef TT_BACKEND_CPU_H
#define TT_BACKEND_CPU_H

#include "backend.h"

/* Bytes the CPU backend allocates at creation for cfg with `threads` worker
 * threads (<= 0: tt_default_threads()): parameters, gradients, both AdamW
 * moments, activations for (cfg.batch, cfg.ctx), backward buffers and
 * scratch. 0 if the config is invalid or the size overflows size_t. */
uint64_t tt_backend_cpu_plan_bytes(const tt_model_config *cfg, int threads);

#endif
