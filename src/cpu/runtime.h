/* runtime.h — the execution context of the CPU ops: a persistent thread pool
 * (pool.h), scratch memory planned once at creation, the phase runner that
 * runs a list of parallel loops inside one wake of the pool, and the error
 * slot an op fills when its plan is wrong.
 *
 * Errors: an op that cannot run (its scratch need exceeds the plan) records
 * a one-line message in the context and skips its work; the first message
 * wins. Callers check with tt_cpu_status() after each phase of work (the
 * backend does it after the forward, the backward and the optimizer) and
 * fail with that message. */
#ifndef TT_CPU_RUNTIME_H
#define TT_CPU_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "pool.h"
#include "tt.h"

typedef struct {
    tt_pool *pool;          /* NULL when threads == 1 */
    int nthreads;
    float *scratch;         /* shared scratch */
    size_t scratch_floats;
    float *tscratch;        /* per-thread scratch: thread t uses tscratch + t * tscratch_floats */
    size_t tscratch_floats;
    double spin_s;          /* how long a thread spins at a phase barrier before yielding */
    int error;              /* an op failed (see tt_cpu_status) */
    char error_msg[200];
} tt_cpu;

/* threads <= 0: tt_default_threads(). shared/thread: scratch floats needed
 * (the maximum over the ops that will run, from the *_scratch functions of
 * ops.h). Per-thread scratch is raised to tt_matmul_thread_scratch(). */
int tt_cpu_create(tt_cpu *cpu, int threads, size_t shared_floats, size_t thread_floats, tt_status *st);
void tt_cpu_destroy(tt_cpu *cpu);

/* TT_OK, or the first recorded op failure as TT_EINVAL with its message
 * (then the error is cleared, so the context can run again). */
int tt_cpu_status(tt_cpu *cpu, tt_status *st);
/* Records an op failure (kept only if it is the first since the last
 * tt_cpu_status). */
void tt_cpu_fail(tt_cpu *cpu, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* 1 if the context's scratch covers `shared` shared and `thread` per-thread
 * floats; otherwise records "<op> needs ..." and returns 0. */
int tt_cpu_need(tt_cpu *cpu, size_t shared, size_t thread, const char *op);

/* ---- the phase runner ----
 * A task is a loop of n independent chunks: fn(arg, i, tid) for i in [0,n).
 * tid selects the caller's per-thread scratch; it never changes results. */
typedef void (*tt_task_fn)(void *arg, int64_t i, int tid);
typedef struct {
    tt_task_fn fn;
    void *arg;
    int64_t n;
} tt_task;

#define TT_MAX_TASKS 12
#define TT_MAX_PHASES 4
/* The chunks of all tasks of one phase are handed out together; phase p+1
 * starts after every chunk of phase p has finished. Chunks are numbered
 * across the tasks in order; the first `bound` of them are dealt to the
 * threads in contiguous ranges (thread t of n: [t*bound/n, (t+1)*bound/n)),
 * so consecutive phases with the same ranges give each chunk the same
 * thread (its output stays in that core's caches); a thread runs its own
 * range, then the rest of the phase claimed in order, then what is left of
 * other threads' ranges. bound 0: all chunks claimed in order. Which thread
 * runs a chunk never changes a result. */
typedef struct {
    int n_tasks;
    tt_task t[TT_MAX_TASKS];
    int64_t bound;
} tt_phase;

void tt_cpu_run(tt_cpu *cpu, const tt_phase *phases, int n_phases);
/* one task, one phase */
void tt_cpu_run1(tt_cpu *cpu, tt_task_fn fn, void *arg, int64_t n);

static inline float *tt_cpu_tscratch(const tt_cpu *cpu, int tid) {
    return cpu->tscratch + (size_t)tid * cpu->tscratch_floats;
}

/* parallel helpers */
void tt_cpu_zero(tt_cpu *cpu, float *x, size_t n);
void tt_cpu_copy(tt_cpu *cpu, float *dst, const float *src, size_t n);

#endif
