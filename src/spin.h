/* spin.h — the waiting policy shared by the thread pool (pool.c) and the
 * phase barrier of the CPU ops (runtime.c).
 *
 * A waiter first spins on plain loads for a fixed TIME (not a fixed count),
 * so back-to-back ops find their threads awake whatever the CPU speed. The
 * spin uses a CPU pause hint only every 256 polls: inside a virtual machine
 * a tight PAUSE loop triggers pause-loop exits (the hypervisor deschedules
 * the spinning vCPU), which makes wake-ups slow. After the spin phase the
 * caller yields (tt_cpu_yield) or sleeps. */
#ifndef TT_SPIN_H
#define TT_SPIN_H

#include "tt.h"

#if defined(__EMSCRIPTEN__)
#include <emscripten/threading.h>
#else
#include <sched.h>
#endif

/* Give the CPU away briefly while waiting for the 32-bit word *addr to
 * change from old. Under Emscripten sched_yield() is a no-op, so a waiting
 * Worker would keep its core through the whole yield phase and, on a busy
 * machine, starve the thread it waits for. There the waiter sleeps on the
 * word itself (Atomics.wait through emscripten_futex_wait, returning at once
 * if the word already changed) and whoever changes it calls tt_cpu_wake;
 * the 0.2 ms cap makes a missed wake cost time, never a hang. Natively it is
 * sched_yield() and tt_cpu_wake does nothing. */
static inline void tt_cpu_yield(const void *addr, int old) {
#if defined(__EMSCRIPTEN__)
    emscripten_futex_wait((volatile void *)addr, (uint32_t)old, 0.2);
#else
    (void)addr;
    (void)old;
    sched_yield();
#endif
}

static inline void tt_cpu_wake(const void *addr) {
#if defined(__EMSCRIPTEN__)
    emscripten_futex_wake((volatile void *)addr, 0x7fffffff);
#else
    (void)addr;
#endif
}

static inline void tt_cpu_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#else
    __asm__ __volatile__("" ::: "memory");
#endif
}

typedef struct {
    unsigned n;
    double t0;
} tt_spin;

static inline void tt_spin_init(tt_spin *s) {
    s->n = 0;
    s->t0 = 0.0;
}

/* One poll of a wait. Returns 1 while the wait is younger than limit_s
 * seconds (keep spinning), 0 afterwards (time to yield or sleep). */
static inline int tt_spin_poll(tt_spin *s, double limit_s) {
    if ((++s->n & 255u) != 0) return 1;
    tt_cpu_pause();
    double now = tt_now();
    if (s->t0 == 0.0) s->t0 = now;
    return now - s->t0 < limit_s;
}

#ifndef TT_SPIN_PURE_S
#define TT_SPIN_PURE_S 5e-6    /* pure spinning before yielding */
#endif
#define TT_SPIN_YIELD_S 3e-3   /* then yielding, before a worker sleeps */
#define TT_SPIN_OVERSUB_S 5e-6 /* pure spinning when there are more threads than CPUs */

#endif
