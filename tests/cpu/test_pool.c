/* test_pool.c — the persistent thread pool (src/pool.c): every thread runs
 * each job exactly once, every chunk of a parallel loop runs exactly once,
 * the wake path works both from the spin and from the sleeping state, and
 * the NULL / single-thread pools run inline; the phase runner (runtime.c)
 * runs every chunk of every phase once, bound ranges included, phase after
 * phase. */
#define _POSIX_C_SOURCE 200809L
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "pool.h"
#include "cpu/runtime.h"
#include "tt_test.h"

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

typedef struct {
    atomic_int calls[64];
    atomic_int bad_n;
    int expect_n;
    long payload[64];
} run_ctx;

static void run_fn(void *vctx, int tid, int n) {
    run_ctx *c = vctx;
    if (n != c->expect_n || tid < 0 || tid >= n) atomic_fetch_add(&c->bad_n, 1);
    else {
        atomic_fetch_add(&c->calls[tid], 1);
        c->payload[tid] = 1000L * tid + 7; /* plain write: must be visible after tt_pool_run */
    }
}

static int run_once(tt_pool *p, int n) {
    run_ctx c;
    memset(&c, 0, sizeof c);
    c.expect_n = n;
    tt_pool_run(p, run_fn, &c);
    int ok = atomic_load(&c.bad_n) == 0;
    for (int t = 0; t < n; t++) ok &= atomic_load(&c.calls[t]) == 1 && c.payload[t] == 1000L * t + 7;
    return ok;
}

TT_TEST(default_threads_positive) {
    int n = tt_default_threads();
    CHECK(n >= 1 && n <= 1024);
}

TT_TEST(run_calls_every_thread_once) {
    const int sizes[] = {1, 2, 3, 5};
    for (int s = 0; s < 4; s++) {
        tt_pool *p = tt_pool_create(sizes[s]);
        CHECK(p != NULL);
        if (!p) continue;
        CHECK(tt_pool_size(p) == sizes[s]);
        int ok = 1;
        for (int i = 0; i < 2000; i++) ok &= run_once(p, sizes[s]); /* back to back: the spin path */
        CHECK(ok);
        tt_pool_destroy(p);
    }
}

TT_TEST(run_wakes_sleeping_workers) {
    tt_pool *p = tt_pool_create(3);
    CHECK(p != NULL);
    if (!p) return;
    int ok = 1;
    for (int i = 0; i < 8; i++) {
        sleep_ms(i % 2 ? 1 : 60); /* long enough for the workers to park on the condvar */
        ok &= run_once(p, 3);
    }
    CHECK(ok);
    tt_pool_destroy(p);
}

typedef struct {
    atomic_int *hits;
    atomic_long sum;
} for_ctx;

static void for_fn(void *vctx, int64_t chunk) {
    for_ctx *c = vctx;
    atomic_fetch_add(&c->hits[chunk], 1);
    atomic_fetch_add(&c->sum, (long)chunk);
}

static int for_once(tt_pool *p, int64_t n) {
    for_ctx c;
    c.hits = calloc((size_t)(n > 0 ? n : 1), sizeof *c.hits);
    atomic_init(&c.sum, 0);
    tt_pool_for(p, n, for_fn, &c);
    int ok = 1;
    for (int64_t i = 0; i < n; i++) ok &= atomic_load(&c.hits[i]) == 1;
    ok &= atomic_load(&c.sum) == (n > 0 ? (long)(n * (n - 1) / 2) : 0);
    free(c.hits);
    return ok;
}

TT_TEST(for_runs_every_chunk_once) {
    const int64_t ns[] = {0, 1, 2, 7, 64, 1000, 100003};
    tt_pool *p3 = tt_pool_create(3);
    CHECK(p3 != NULL);
    for (int i = 0; i < 7; i++) {
        CHECK_MSG(for_once(p3, ns[i]), "3 threads, %lld chunks", (long long)ns[i]);
        CHECK_MSG(for_once(NULL, ns[i]), "NULL pool, %lld chunks", (long long)ns[i]);
    }
    int ok = 1;
    for (int i = 0; i < 500; i++) ok &= for_once(p3, 1 + i % 37);
    CHECK(ok);
    tt_pool_destroy(p3);
}

static void null_fn(void *vctx, int tid, int n) {
    int *c = vctx;
    c[0] += 1;
    c[1] = tid;
    c[2] = n;
}

TT_TEST(null_and_single_pools_run_inline) {
    int c[3] = {0, -1, -1};
    tt_pool_run(NULL, null_fn, c);
    CHECK(c[0] == 1 && c[1] == 0 && c[2] == 1);
    CHECK(tt_pool_size(NULL) == 1);
    tt_pool *p = tt_pool_create(1);
    CHECK(p != NULL);
    tt_pool_run(p, null_fn, c);
    CHECK(c[0] == 2 && c[1] == 0 && c[2] == 1);
    tt_pool_destroy(p);
    tt_pool_destroy(NULL); /* no-op */
    p = tt_pool_create(0);  /* clamped to 1 */
    CHECK(p && tt_pool_size(p) == 1);
    tt_pool_destroy(p);
}

TT_TEST(create_destroy_repeatedly) {
    int ok = 1;
    for (int i = 0; i < 30; i++) {
        tt_pool *p = tt_pool_create(1 + i % 4);
        ok &= p != NULL;
        if (p) {
            if (i % 3 == 0) ok &= run_once(p, 1 + i % 4);
            tt_pool_destroy(p); /* also right after creation, with workers still starting */
        }
    }
    CHECK(ok);
}

/* phase runner: chunk counts per (phase, task), every chunk once, and a
 * phase's chunks only after all of the previous phase's */
typedef struct {
    atomic_int hits[4][2][40];
    atomic_int done[4];
    atomic_int bad;
    int n[4][2];
} phases_ctx;

typedef struct {
    phases_ctx *c;
    int p, t;
} phase_arg;

static void phase_fn(void *varg, int64_t i, int tid) {
    phase_arg *a = varg;
    phases_ctx *c = a->c;
    if (tid < 0 || tid >= 3) atomic_fetch_add(&c->bad, 1);
    if (a->p > 0 && atomic_load(&c->done[a->p - 1]) != c->n[a->p - 1][0] + c->n[a->p - 1][1]) atomic_fetch_add(&c->bad, 1);
    atomic_fetch_add(&c->hits[a->p][a->t][i], 1);
    atomic_fetch_add(&c->done[a->p], 1);
}

TT_TEST(phases_run_every_chunk_once_bound_or_not) {
    tt_cpu cpu;
    CHECK(tt_cpu_create(&cpu, 3, 16, 16, NULL) == TT_OK);
    /* bound: none, inside the first task, across both tasks, past the end */
    const int64_t bounds[][4] = {{0, 7, 12, 100}, {1, 2, 40, 3}, {30, 0, 5, 17}};
    const int counts[4][2] = {{10, 5}, {3, 30}, {17, 1}, {2, 2}};
    int ok = 1;
    for (int rep = 0; rep < 60; rep++) {
        phases_ctx c;
        memset(&c, 0, sizeof c);
        phase_arg args[4][2];
        tt_phase ph[4];
        memset(ph, 0, sizeof ph);
        for (int p = 0; p < 4; p++) {
            ph[p].n_tasks = 2;
            ph[p].bound = bounds[rep % 3][p];
            for (int t = 0; t < 2; t++) {
                c.n[p][t] = counts[p][t];
                args[p][t] = (phase_arg){&c, p, t};
                ph[p].t[t] = (tt_task){phase_fn, &args[p][t], counts[p][t]};
            }
        }
        tt_cpu_run(&cpu, ph, 4);
        ok &= atomic_load(&c.bad) == 0;
        for (int p = 0; p < 4; p++)
            for (int t = 0; t < 2; t++)
                for (int i = 0; i < 40; i++) ok &= atomic_load(&c.hits[p][t][i]) == (i < counts[p][t]);
    }
    CHECK(ok);
    tt_cpu_destroy(&cpu);
}

int main(void) {
    RUN(default_threads_positive);
    RUN(phases_run_every_chunk_once_bound_or_not);
    RUN(run_calls_every_thread_once);
    RUN(run_wakes_sleeping_workers);
    RUN(for_runs_every_chunk_once);
    RUN(null_and_single_pools_run_inline);
    RUN(create_destroy_repeatedly);
    return tt_test_summary();
}
