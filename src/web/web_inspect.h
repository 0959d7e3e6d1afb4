/* web_inspect.h — model inspection for the web API (web_api.h's
 * tt_web_inspect): the JSON of inspect.h for the session's model on the
 * backend it trains on (WASM CPU or browser WebGPU). */
#ifndef TT_WEB_INSPECT_H
#define TT_WEB_INSPECT_H

#include <stdint.h>

#include "backend.h"
#include "io/json.h"
#include "tok/tokenizer.h"

/* Inspects prompt (n bytes; tok BPE: its tokens, else one per byte) with be, whose parameters params is the host
 * copy of (no step in flight), and writes inspect.h's JSON into j (reset
 * first). top_k in 1..TT_INSPECT_MAX_K. A prompt that is empty or longer
 * than the model inspects, or a top_k out of range: TT_EINVAL with a line
 * for the page. */
int tt_web_inspect_json(tt_backend *be, const float *params, const tt_tokenizer *tok, const uint8_t *prompt, int n,
                        int top_k, tt_jw *j, tt_status *st);

#endif
