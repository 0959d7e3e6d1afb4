/* web_sample.h — token-by-token sampling for the web API: a thin adapter
 * from web_api.c to the shared sampler (sample.h), so the page can stream one
 * token per call. */
#ifndef TT_WEB_SAMPLE_H
#define TT_WEB_SAMPLE_H

#include "tok/tokenizer.h"
#include "train/train.h"

typedef struct tt_web_sampler tt_web_sampler;

/* s: the state whose params are current (the caller downloaded them); tok:
 * the model's tokenizer (NULL or byte: the prompt is bytes; BPE: encoded,
 * an empty prompt starts from <|endoftext|> as `tinytrain sample` does). */
int tt_web_sampler_new(const tt_train_state *s, const tt_tokenizer *tok, const char *prompt, int max_tokens, float temperature, int top_k,
                       float top_p, uint64_t seed, tt_web_sampler **out, tt_status *st);
/* *tok = next byte, or -1 when max_tokens were produced. */
int tt_web_sampler_next(tt_web_sampler *ws, int *tok, tt_status *st);
void tt_web_sampler_free(tt_web_sampler *ws);

#endif
