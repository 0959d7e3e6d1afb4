/* sample.h — text generation on the CPU from host parameters (a checkpoint's
 * weights), with a KV cache so each new token costs O(T) attention work.
 *
 * The sampler runs the same model as training (config.h layout) one token at
 * a time. When the context is full it slides: the last ctx/2 tokens are kept
 * and their cache is recomputed at positions 0.. (learned absolute positions
 * make shifting the cache impossible), so the model always sees at least
 * ctx/2 tokens of history and the amortised cost stays O(T) per token.
 *
 * Picking a token: temperature <= 0 (or top_k == 1) is greedy argmax (lowest
 * index on ties); otherwise softmax(logits / temperature), restricted to the
 * top_k most likely tokens (0 = all), then to the smallest set whose
 * probability reaches top_p (>= 1 = all), renormalised; the draw for the i-th
 * generated token uses tt_rand_uniform(seed, TT_STREAM_SAMPLE, i). */
#ifndef TT_SAMPLE_H
#define TT_SAMPLE_H

#include "config.h"

typedef struct {
    float temperature; /* <= 0: greedy */
    int top_k;         /* 0: no top-k */
    float top_p;       /* >= 1: no nucleus filtering */
    uint64_t seed;
    int64_t max_tokens;
} tt_sample_config;

void tt_sample_config_default(tt_sample_config *sc);
int tt_sample_config_validate(const tt_sample_config *sc, tt_status *st);

typedef struct tt_sampler tt_sampler;

/* params: layout-order weights (not copied; must outlive the sampler).
 * threads <= 1: single-threaded; otherwise a pool of that many threads.
 * Runs the CPU ops (src/cpu/ops.h) on one row per token. */
int tt_sampler_create(const tt_model_config *cfg, const float *params, int threads, tt_sampler **out, tt_status *st);
void tt_sampler_destroy(tt_sampler *s);
/* Forget all tokens (position 0). */
void tt_sampler_reset(tt_sampler *s);
/* Append one token; afterwards tt_sampler_logits() holds the logits (V) of
 * the next token. Slides the window when the context is full. */
void tt_sampler_feed(tt_sampler *s, tt_token tok); /* tok < cfg.vocab */
const float *tt_sampler_logits(const tt_sampler *s);
/* Tokens currently in the window (0 .. ctx). */
int tt_sampler_len(const tt_sampler *s);

/* A candidate of tt_sample_pick: probability and token id. */
typedef struct {
    float p;
    int32_t i;
} tt_sample_item;
/* Choose a token from logits (V values). draw: index of the random draw
 * (the i-th generated token uses draw i). work: V items of scratch. */
int tt_sample_pick(const float *logits, int V, const tt_sample_config *sc, uint64_t draw, tt_sample_item *work);
/* tt_sample_pick on the sampler's current logits, with its own scratch. */
int tt_sampler_pick(tt_sampler *s, const tt_sample_config *sc, uint64_t draw);

/* Called for every generated token; return non-zero to stop. */
typedef int (*tt_token_fn)(void *user, tt_token tok);
/* Feeds the prompt (ids < cfg.vocab; an empty prompt starts from byte '\n',
 * byte-level models only), then generates sc->max_tokens tokens, calling cb
 * for each. */
int tt_generate(tt_sampler *s, const tt_token *prompt, size_t n_prompt, const tt_sample_config *sc, tt_token_fn cb,
                void *user, tt_status *st);

#endif
