/* web_inspect.c — the web app's "Look inside" read-out (web_inspect.h): one
 * prompt through the session's backend, inspect.h's math and JSON. The same
 * code the CLI's `tinytrain inspect --json` runs; only the checks are worded
 * for the page. */
#include "web_inspect.h"

#include "inspect.h"

int tt_web_inspect_json(tt_backend *be, const float *params, const uint8_t *prompt, int n, int top_k, tt_jw *j,
                        tt_status *st) {
    const int max = tt_inspect_max_len(&be->cfg);
    if (n < 1) return tt_fail(st, TT_EINVAL, "type a prompt to look at (at least one character)");
    if (n > max)
        return tt_fail(st, TT_EINVAL, "the prompt is %d bytes; this model looks at %d at most (its context%s)", n, max,
                       be->cfg.ctx > TT_INSPECT_MAX_T ? ", capped at 256" : "");
    if (top_k < 1 || top_k > TT_INSPECT_MAX_K)
        return tt_fail(st, TT_EINVAL, "top-k must be in 1..%d (got %d)", TT_INSPECT_MAX_K, top_k);
    tt_inspect r;
    TT_CHECK(tt_inspect_run(be, params, prompt, n, &r, st));
    j->len = 0;
    j->oom = 0;
    tt_inspect_json(&r, top_k, j);
    tt_inspect_free(&r);
    if (j->oom || !j->buf) return tt_fail(st, TT_ENOMEM, "out of memory writing the inspection");
    return TT_OK;
}
