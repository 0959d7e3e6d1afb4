/* web_sample.h — token-by-token sampling for the web API: a thin adapter
 * from web_api.c to the shared sampler (sample.h), so the page can stream one
 * byte per call. */
#ifndef TT_WEB_SAMPLE_H
#define TT_WEB_SAMPLE_H

#include "train/train.h"

typedef struct tt_web_sampler tt_web_sampler;

/* s: the state whose params are current (the caller downloaded them). */
int tt_web_sampler_new(const tt_train_state *s, const char *prompt, int max_tokens, float temperature, int top_k,
                       float top_p, uint64_t seed, tt_web_sampler **out, tt_status *st);
/* *tok = next byte, or -1 when max_tokens were produced. */
int tt_web_sampler_next(tt_web_sampler *ws, int *tok, tt_status *st);
void tt_web_sampler_free(tt_web_sampler *ws);

#endif
