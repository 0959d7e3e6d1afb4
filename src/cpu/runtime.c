/* runtime.c — the CPU execution context (runtime.h): pool and scratch,
 * the error slot, the phase runner (all phases of an op in one wake of the
 * pool, a sense-reversing barrier between them) and parallel zero/copy. */
#include "runtime.h"

#include <stdalign.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "spin.h"

/* ================= context ================= */

int tt_cpu_create(tt_cpu *cpu, int threads, size_t shared_floats, size_t thread_floats, tt_status *st) {
    memset(cpu, 0, sizeof *cpu);
    if (threads <= 0) threads = tt_default_threads();
    thread_floats = (thread_floats + 15) & ~(size_t)15; /* keep every thread's block 64-byte aligned */
    if (threads > 1) {
        cpu->pool = tt_pool_create(threads);
        if (!cpu->pool) return tt_fail(st, TT_ENOMEM, "cannot create a pool of %d threads", threads);
        threads = tt_pool_size(cpu->pool);
    }
    cpu->nthreads = threads;
    cpu->spin_s = threads > tt_default_threads() ? TT_SPIN_OVERSUB_S : TT_SPIN_PURE_S;
    cpu->scratch_floats = shared_floats;
    cpu->tscratch_floats = thread_floats;
    cpu->scratch = tt_alloc((shared_floats ? shared_floats : 1) * sizeof(float), st);
    cpu->tscratch = cpu->scratch ? tt_alloc((thread_floats ? thread_floats : 16) * (size_t)threads * sizeof(float), st) : NULL;
    if (!cpu->tscratch) {
        tt_cpu_destroy(cpu);
        return st ? st->code : TT_ENOMEM;
    }
    return TT_OK;
}

void tt_cpu_destroy(tt_cpu *cpu) {
    tt_pool_destroy(cpu->pool);
    tt_free(cpu->scratch);
    tt_free(cpu->tscratch);
    memset(cpu, 0, sizeof *cpu);
}

/* ================= errors ================= */

void tt_cpu_fail(tt_cpu *cpu, const char *fmt, ...) {
    if (cpu->error) return;
    cpu->error = 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cpu->error_msg, sizeof cpu->error_msg, fmt, ap);
    va_end(ap);
}

int tt_cpu_need(tt_cpu *cpu, size_t shared, size_t thread, const char *op) {
    if (shared <= cpu->scratch_floats && thread <= cpu->tscratch_floats) return 1;
    tt_cpu_fail(cpu, "internal error: CPU %s needs %zu shared + %zu per-thread scratch floats, the plan has %zu + %zu",
                op, shared, thread, cpu->scratch_floats, cpu->tscratch_floats);
    return 0;
}

int tt_cpu_status(tt_cpu *cpu, tt_status *st) {
    if (!cpu->error) return TT_OK;
    cpu->error = 0;
    return tt_fail(st, TT_EINVAL, "%s", cpu->error_msg);
}

/* ================= phase runner ================= */

typedef struct {
    alignas(64) atomic_llong next;
} padded_counter;

/* threads that get a range of a phase's bound chunks (tt_phase); with more,
 * the bound chunks are claimed in order like the rest */
#define TT_BIND_MAX 64

typedef struct {
    const tt_phase *ph;
    int nph;
    int nth;
    int64_t start[TT_MAX_PHASES][TT_MAX_TASKS + 1];
    int64_t bound[TT_MAX_PHASES];
    padded_counter ctr[TT_MAX_PHASES]; /* the next unbound chunk */
    /* the next chunk of each thread's range (claims are a few per phase, so
     * the counters share cache lines) */
    atomic_llong own[TT_MAX_PHASES][TT_BIND_MAX];
    double spin_s;
    alignas(64) atomic_int bar_count;
    alignas(64) atomic_int bar_sense;
} run_ctx;

static void barrier_wait(run_ctx *r, int nth, int *sense) {
    *sense = !*sense;
    if (atomic_fetch_add_explicit(&r->bar_count, 1, memory_order_acq_rel) == nth - 1) {
        atomic_store_explicit(&r->bar_count, 0, memory_order_relaxed);
        atomic_store_explicit(&r->bar_sense, *sense, memory_order_release);
        tt_cpu_wake(&r->bar_sense);
    } else {
        tt_spin sp;
        tt_spin_init(&sp);
        while (atomic_load_explicit(&r->bar_sense, memory_order_acquire) != *sense)
            if (!tt_spin_poll(&sp, r->spin_s)) tt_cpu_yield(&r->bar_sense, !*sense);
    }
}

static inline void run_chunk(const run_ctx *r, int p, int64_t c, int tid) {
    const tt_phase *ph = &r->ph[p];
    int t = 0;
    while (r->start[p][t + 1] <= c) t++;
    ph->t[t].fn(ph->t[t].arg, c - r->start[p][t], tid);
}

/* the end of thread v's range of the bound chunks of phase p */
static inline int64_t range_end(const run_ctx *r, int p, int v) { return (v + 1) * r->bound[p] / r->nth; }

static void run_phase_chunks(run_ctx *r, int p, int tid) {
    int64_t total = r->start[p][r->ph[p].n_tasks], c;
    if (r->bound[p])
        for (int64_t hi = range_end(r, p, tid); (c = atomic_fetch_add_explicit(&r->own[p][tid], 1, memory_order_relaxed)) < hi;)
            run_chunk(r, p, c, tid);
    while ((c = atomic_fetch_add_explicit(&r->ctr[p].next, 1, memory_order_relaxed)) < total) run_chunk(r, p, c, tid);
    if (r->bound[p])
        for (int d = 1; d < r->nth; d++) {
            int v = (tid + d) % r->nth;
            int64_t hi = range_end(r, p, v);
            while (atomic_load_explicit(&r->own[p][v], memory_order_relaxed) < hi &&
                   (c = atomic_fetch_add_explicit(&r->own[p][v], 1, memory_order_relaxed)) < hi)
                run_chunk(r, p, c, tid);
        }
}

static void run_worker(void *vctx, int tid, int nth) {
    run_ctx *r = vctx;
    int sense = 0;
    for (int p = 0; p < r->nph; p++) {
        run_phase_chunks(r, p, tid);
        if (p + 1 < r->nph) barrier_wait(r, nth, &sense);
    }
}

void tt_cpu_run(tt_cpu *cpu, const tt_phase *phases, int n_phases) {
    int64_t widest = 0; /* most chunks in one phase: with one, waking the pool only costs time */
    for (int p = 0; p < n_phases; p++) {
        int64_t n = 0;
        for (int t = 0; t < phases[p].n_tasks; t++) n += phases[p].t[t].n;
        widest = TT_MAX(widest, n);
    }
    if (!cpu->pool || cpu->nthreads <= 1 || widest <= 1) {
        for (int p = 0; p < n_phases; p++)
            for (int t = 0; t < phases[p].n_tasks; t++)
                for (int64_t i = 0; i < phases[p].t[t].n; i++) phases[p].t[t].fn(phases[p].t[t].arg, i, 0);
        return;
    }
    run_ctx r;
    r.ph = phases;
    r.nph = n_phases;
    r.nth = cpu->nthreads;
    for (int p = 0; p < n_phases; p++) {
        r.start[p][0] = 0;
        for (int t = 0; t < phases[p].n_tasks; t++) r.start[p][t + 1] = r.start[p][t] + phases[p].t[t].n;
        r.bound[p] = r.nth <= TT_BIND_MAX ? TT_MIN(phases[p].bound, r.start[p][phases[p].n_tasks]) : 0;
        atomic_init(&r.ctr[p].next, r.bound[p]);
        if (r.bound[p])
            for (int v = 0; v < r.nth; v++) atomic_init(&r.own[p][v], v * r.bound[p] / r.nth);
    }
    r.spin_s = cpu->spin_s;
    atomic_init(&r.bar_count, 0);
    atomic_init(&r.bar_sense, 0);
    tt_pool_run(cpu->pool, run_worker, &r);
}

void tt_cpu_run1(tt_cpu *cpu, tt_task_fn fn, void *arg, int64_t n) {
    tt_phase ph = {1, {{fn, arg, n}}, 0};
    tt_cpu_run(cpu, &ph, 1);
}

/* ================= zero / copy ================= */

#define COPY_CHUNK 8192 /* floats per chunk */

typedef struct {
    float *dst;
    const float *src;
    size_t n;
} copy_ctx;

static void zero_task(void *arg, int64_t i, int tid) {
    (void)tid;
    copy_ctx *c = arg;
    size_t lo = (size_t)i * COPY_CHUNK, hi = TT_MIN(c->n, lo + COPY_CHUNK);
    memset(c->dst + lo, 0, (hi - lo) * sizeof(float));
}

static void copy_task(void *arg, int64_t i, int tid) {
    (void)tid;
    copy_ctx *c = arg;
    size_t lo = (size_t)i * COPY_CHUNK, hi = TT_MIN(c->n, lo + COPY_CHUNK);
    memcpy(c->dst + lo, c->src + lo, (hi - lo) * sizeof(float));
}

void tt_cpu_zero(tt_cpu *cpu, float *x, size_t n) {
    copy_ctx c = {x, NULL, n};
    tt_cpu_run1(cpu, zero_task, &c, (int64_t)((n + COPY_CHUNK - 1) / COPY_CHUNK));
}

void tt_cpu_copy(tt_cpu *cpu, float *dst, const float *src, size_t n) {
    copy_ctx c = {dst, src, n};
    tt_cpu_run1(cpu, copy_task, &c, (int64_t)((n + COPY_CHUNK - 1) / COPY_CHUNK));
}
