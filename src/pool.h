/* pool.h — persistent thread pool. Threads are created once (tt_pool_create)
 * and parked on a condition/spin between jobs; tt_pool_run never creates
 * threads. Work decomposition must never depend on the thread count if the
 * result is to be bit-identical for 1, 2 and N threads: callers split work
 * into fixed-size chunks and let threads take chunks (tt_pool_for). */
#ifndef TT_POOL_H
#define TT_POOL_H

#include <stddef.h>
#include <stdint.h>

typedef struct tt_pool tt_pool;

/* n_threads >= 1 (the caller's thread counts as one worker). NULL on failure. */
tt_pool *tt_pool_create(int n_threads);
void tt_pool_destroy(tt_pool *p);
int tt_pool_size(const tt_pool *p);

/* Run fn(ctx, tid, nthreads) on every thread (tid 0 is the caller); returns
 * when all are done. p may be NULL: runs fn(ctx, 0, 1). */
typedef void (*tt_pool_fn)(void *ctx, int tid, int nthreads);
void tt_pool_run(tt_pool *p, tt_pool_fn fn, void *ctx);

/* Parallel loop over chunks [0, n_chunks): fn(ctx, chunk) is called exactly
 * once per chunk, chunks handed out dynamically (atomic counter). */
typedef void (*tt_chunk_fn)(void *ctx, int64_t chunk);
void tt_pool_for(tt_pool *p, int64_t n_chunks, tt_chunk_fn fn, void *ctx);

/* Default thread count: physical/online CPUs (at least 1). */
int tt_default_threads(void);

#endif
