/* pool.c — the persistent thread pool (pool.h).
 *
 * Threads are created once in tt_pool_create and live until tt_pool_destroy.
 * A job is published by bumping a generation counter; parked workers spin on
 * it for a short while (so back-to-back ops wake in microseconds), then
 * yield, then sleep on a condition variable (policy in spin.h). The
 * caller runs tid 0 itself and then waits for the others on a completion
 * counter. Only pthreads and C11
 * atomics are used, so the same code runs under Emscripten pthreads.
 *
 * Not reentrant: one tt_pool_run at a time per pool, and never from inside a
 * job running on the same pool. */
#define _GNU_SOURCE
#include "pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tt.h"

#include "spin.h"

#define TT_CACHELINE 64

typedef struct {
    alignas(TT_CACHELINE) atomic_uint gen;       /* job generation */
    alignas(TT_CACHELINE) atomic_int done;       /* workers finished with the current job */
    alignas(TT_CACHELINE) atomic_int sleepers;   /* workers blocked on the condvar */
    alignas(TT_CACHELINE) atomic_int stop;
} pool_sync;

struct tt_pool {
    int n;                 /* threads including the caller */
    double spin_s;         /* pure-spin time of a waiter (short when oversubscribed) */
    pthread_t *threads;    /* n - 1 workers */
    pool_sync *sync;       /* cache-line aligned */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* current job (written by the caller before gen is bumped) */
    tt_pool_fn fn;
    void *ctx;
};

typedef struct {
    tt_pool *p;
    int tid;
} worker_arg;

static void *worker_main(void *arg) {
    worker_arg wa = *(worker_arg *)arg;
    free(arg);
    tt_pool *p = wa.p;
    pool_sync *s = p->sync;
    /* generation 0 is the state at creation: a worker that starts late must
     * still run the first job, so it does not read the current value */
    unsigned seen = 0;
    for (;;) {
        /* wait for a new generation: spin, then yield, then sleep */
        unsigned g;
        tt_spin sp;
        tt_spin_init(&sp);
        for (;;) {
            g = atomic_load_explicit(&s->gen, memory_order_acquire);
            if (g != seen) break;
            if (tt_spin_poll(&sp, p->spin_s)) continue;
            if (tt_now() - sp.t0 < p->spin_s + TT_SPIN_YIELD_S) {
                tt_cpu_yield(&s->gen, (int)seen);
                continue;
            }
            pthread_mutex_lock(&p->mu);
            atomic_fetch_add(&s->sleepers, 1); /* seq_cst: pairs with the caller's gen store */
            while ((g = atomic_load(&s->gen)) == seen) pthread_cond_wait(&p->cv, &p->mu);
            atomic_fetch_sub(&s->sleepers, 1);
            pthread_mutex_unlock(&p->mu);
            break;
        }
        seen = g;
        if (atomic_load_explicit(&s->stop, memory_order_acquire)) break;
        p->fn(p->ctx, wa.tid, p->n);
        /* only the last worker's arrival can release the caller */
        if (atomic_fetch_add_explicit(&s->done, 1, memory_order_acq_rel) == p->n - 2) tt_cpu_wake(&s->done);
    }
    return NULL;
}

static void publish(tt_pool *p) {
    pool_sync *s = p->sync;
    atomic_fetch_add(&s->gen, 1); /* seq_cst */
    tt_cpu_wake(&s->gen);         /* Emscripten: waiters in tt_cpu_yield */
    if (atomic_load(&s->sleepers) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
}

tt_pool *tt_pool_create(int n_threads) {
    if (n_threads < 1) n_threads = 1;
    if (n_threads > 1024) n_threads = 1024;
    tt_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->n = n_threads;
    /* more threads than CPUs: spinning would steal the CPU a worker needs */
    p->spin_s = n_threads > tt_default_threads() ? TT_SPIN_OVERSUB_S : TT_SPIN_PURE_S;
    p->sync = tt_calloc(sizeof *p->sync, NULL);
    p->threads = calloc((size_t)n_threads, sizeof *p->threads);
    if (!p->sync || !p->threads) {
        tt_free(p->sync);
        free(p->threads);
        free(p);
        return NULL;
    }
    atomic_init(&p->sync->gen, 0);
    atomic_init(&p->sync->done, 0);
    atomic_init(&p->sync->sleepers, 0);
    atomic_init(&p->sync->stop, 0);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    for (int i = 1; i < n_threads; i++) {
        worker_arg *wa = malloc(sizeof *wa);
        int ok = wa != NULL;
        if (ok) {
            wa->p = p;
            wa->tid = i;
            ok = pthread_create(&p->threads[i - 1], NULL, worker_main, wa) == 0;
            if (!ok) free(wa);
        }
        if (!ok) {
            /* run with the threads we have: shrink the pool */
            p->n = i;
            break;
        }
    }
    return p;
}

void tt_pool_destroy(tt_pool *p) {
    if (!p) return;
    atomic_store(&p->sync->stop, 1);
    publish(p);
    for (int i = 1; i < p->n; i++) pthread_join(p->threads[i - 1], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    tt_free(p->sync);
    free(p->threads);
    free(p);
}

int tt_pool_size(const tt_pool *p) { return p ? p->n : 1; }

void tt_pool_run(tt_pool *p, tt_pool_fn fn, void *ctx) {
    if (!p || p->n == 1) {
        fn(ctx, 0, 1);
        return;
    }
    pool_sync *s = p->sync;
    p->fn = fn;
    p->ctx = ctx;
    atomic_store_explicit(&s->done, 0, memory_order_relaxed);
    publish(p); /* release: fn/ctx/done visible before the new generation */
    fn(ctx, 0, p->n);
    int target = p->n - 1;
    tt_spin sp;
    tt_spin_init(&sp);
    int d;
    while ((d = atomic_load_explicit(&s->done, memory_order_acquire)) != target)
        if (!tt_spin_poll(&sp, p->spin_s)) tt_cpu_yield(&s->done, d);
}

/* ---- tt_pool_for: dynamic chunks from one shared counter ---- */

typedef struct {
    alignas(TT_CACHELINE) atomic_llong next;
    int64_t n;
    tt_chunk_fn fn;
    void *ctx;
} for_job;

static void for_worker(void *vctx, int tid, int nthreads) {
    (void)tid;
    (void)nthreads;
    for_job *j = vctx;
    for (;;) {
        int64_t c = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
        if (c >= j->n) break;
        j->fn(j->ctx, c);
    }
}

void tt_pool_for(tt_pool *p, int64_t n_chunks, tt_chunk_fn fn, void *ctx) {
    if (n_chunks <= 0) return;
    if (!p || p->n == 1 || n_chunks == 1) {
        for (int64_t c = 0; c < n_chunks; c++) fn(ctx, c);
        return;
    }
    for_job j;
    atomic_init(&j.next, 0);
    j.n = n_chunks;
    j.fn = fn;
    j.ctx = ctx;
    tt_pool_run(p, for_worker, &j);
}

int tt_default_threads(void) {
    int n = 0;
#if defined(__linux__) && defined(CPU_COUNT)
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
#endif
    if (n < 1) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        n = c > 0 ? (int)c : 1;
    }
    if (n > 1024) n = 1024;
    return n;
}
