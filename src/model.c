/* model.c — deterministic parameter initialisation. */
#include "model.h"

#include <math.h>
#include <string.h>

#include "rng.h"

#define INIT_CHUNK 65536

typedef struct {
    const tt_layout *lo;
    uint64_t seed;
    float *params;
    float resid_std;
    int64_t *chunk_start; /* cumulative chunk counts per tensor */
} init_ctx;

static void init_chunk(void *vctx, int64_t chunk) {
    init_ctx *c = vctx;
    int ti = 0;
    while (c->chunk_start[ti + 1] <= chunk) ti++;
    const tt_tensor_info *t = &c->lo->t[ti];
    size_t lo = (size_t)(chunk - c->chunk_start[ti]) * INIT_CHUNK;
    size_t hi = TT_MIN(t->numel, lo + INIT_CHUNK);
    float *p = c->params + t->offset;
    switch (t->kind) {
    case TT_LN1W: case TT_LN2W: case TT_LNFW:
        for (size_t j = lo; j < hi; j++) p[j] = 1.0f;
        break;
    case TT_WTE: case TT_WPE: case TT_QW: case TT_KW: case TT_VALW: case TT_FCW:
    case TT_OW: case TT_PROJW: {
        float std = (t->kind == TT_OW || t->kind == TT_PROJW) ? c->resid_std : 0.02f;
        for (size_t j = lo; j < hi; j++) p[j] = std * tt_rand_normal(c->seed, TT_STREAM_INIT + (uint32_t)ti, j);
        break;
    }
    case TT_LORA_A: {
        float std = (float)(1.0 / sqrt((double)t->shape[0]));
        for (size_t j = lo; j < hi; j++) p[j] = std * tt_rand_normal(c->seed, TT_STREAM_INIT + (uint32_t)ti, j);
        break;
    }
    default:
        for (size_t j = lo; j < hi; j++) p[j] = 0.0f;
    }
}

void tt_model_init_tensors(const tt_model_config *cfg, const tt_layout *lo, uint64_t seed, float *params, tt_pool *pool,
                           int t0, int t1) {
    /* chunk_start[i]: first chunk of tensor i; tensors outside [t0, t1) get none */
    int64_t starts[4 + 256 * (TT_PER_LAYER + 2 * TT_LORA_N_TARGETS) + 1];
    starts[0] = 0;
    for (int i = 0; i < lo->n_tensors; i++)
        starts[i + 1] = starts[i] + (i >= t0 && i < t1 ? (int64_t)((lo->t[i].numel + INIT_CHUNK - 1) / INIT_CHUNK) : 0);
    init_ctx c = {lo, seed, params, (float)(0.02 / sqrt(2.0 * cfg->n_layer)), starts};
    tt_pool_for(pool, starts[lo->n_tensors], init_chunk, &c);
}

void tt_model_init_params(const tt_model_config *cfg, const tt_layout *lo, uint64_t seed, float *params, tt_pool *pool) {
    tt_model_init_tensors(cfg, lo, seed, params, pool, 0, lo->n_tensors);
}
