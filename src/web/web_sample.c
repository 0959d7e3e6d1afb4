/* web_sample.c — token-by-token sampling for the web API (web_sample.h):
 * the same steps as tt_generate (sample.h) — reset, feed the prompt (an
 * empty prompt starts from "\n"), pick with draw i, feed — but one token per
 * call, so the Worker can stream bytes and stay responsive. The sampler
 * works on its own copy of the weights: training may go on meanwhile. */
#include "web_sample.h"

#include <stdlib.h>
#include <string.h>

#include "cpu/sample.h"

struct tt_web_sampler {
    tt_sampler *s;
    float *params; /* private copy of the weights */
    tt_sample_config sc;
    int64_t i;     /* tokens generated so far */
};

int tt_web_sampler_new(const tt_train_state *s, const tt_tokenizer *tok, const char *prompt, int max_tokens, float temperature, int top_k,
                       float top_p, uint64_t seed, tt_web_sampler **out, tt_status *st) {
    *out = NULL;
    tt_web_sampler *ws = calloc(1, sizeof *ws);
    if (!ws) return tt_fail(st, TT_ENOMEM, "out of memory (sampler)");
    tt_sample_config_default(&ws->sc);
    ws->sc.temperature = temperature;
    ws->sc.top_k = top_k;
    ws->sc.top_p = top_p;
    ws->sc.seed = seed;
    ws->sc.max_tokens = max_tokens;
    int rc = tt_sample_config_validate(&ws->sc, st);
    if (!rc) {
        size_t bytes = s->layout.total * sizeof(float);
        ws->params = tt_alloc(bytes, st);
        if (!ws->params) rc = st ? st->code : TT_ENOMEM;
        else memcpy(ws->params, s->params, bytes);
    }
    if (!rc) rc = tt_sampler_create(&s->cfg, ws->params, 1, &ws->s, st);
    if (rc) {
        tt_web_sampler_free(ws);
        return rc;
    }
    tt_sampler_reset(ws->s);
    size_t n = strlen(prompt);
    if (tok && tt_tokenizer_kind(tok) == TT_TOK_BPE) { /* as `tinytrain sample`: an empty prompt starts a document */
        tt_tok_ids v = {0};
        if (n) rc = tt_tokenizer_encode((tt_tokenizer *)tok, prompt, n, &v, st);
        else if (tt_tokenizer_eot(tok) >= 0) tt_sampler_feed(ws->s, (tt_token)tt_tokenizer_eot(tok));
        if (!rc && n && v.n == 0) rc = tt_fail(st, TT_EINVAL, "the prompt has no tokens");
        for (size_t k = 0; !rc && k < v.n; k++) tt_sampler_feed(ws->s, (tt_token)v.ids[k]);
        tt_tok_ids_free(&v);
        if (rc) {
            tt_web_sampler_free(ws);
            return rc;
        }
    } else {
        if (n == 0) tt_sampler_feed(ws->s, '\n');
        for (size_t k = 0; k < n; k++) tt_sampler_feed(ws->s, (uint8_t)prompt[k]); /* byte-level: one token per byte */
    }
    *out = ws;
    return TT_OK;
}

int tt_web_sampler_next(tt_web_sampler *ws, int *tok, tt_status *st) {
    (void)st;
    *tok = -1;
    if (ws->i >= ws->sc.max_tokens) return TT_OK;
    int t = tt_sampler_pick(ws->s, &ws->sc, (uint64_t)ws->i);
    ws->i++;
    if (ws->i < ws->sc.max_tokens) tt_sampler_feed(ws->s, (tt_token)t);
    *tok = t;
    return TT_OK;
}

void tt_web_sampler_free(tt_web_sampler *ws) {
    if (!ws) return;
    tt_sampler_destroy(ws->s);
    tt_free(ws->params);
    free(ws);
}
