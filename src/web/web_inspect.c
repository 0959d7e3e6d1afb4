/* web_inspect.c — the web app's "Look inside" read-out (web_inspect.h): one
 * prompt through the session's backend, inspect.h's math and JSON: the same
 * code and messages as the CLI's `tinytrain inspect --json`. */
#include "web_inspect.h"

#include <stdlib.h>

#include "engine/inspect.h"

int tt_web_inspect_json(tt_backend *be, const float *params, const uint8_t *prompt, int n, int top_k, tt_jw *j,
                        tt_status *st) {
    if (top_k < 1 || top_k > TT_INSPECT_MAX_K)
        return tt_fail(st, TT_EINVAL, "top-k must be in 1..%d (got %d)", TT_INSPECT_MAX_K, top_k);
    tt_inspect r;
    tt_token *ids = malloc((size_t)(n > 0 ? n : 1) * sizeof *ids);
    if (!ids) return tt_fail(st, TT_ENOMEM, "out of memory (inspect prompt)");
    for (int i = 0; i < n; i++) ids[i] = prompt[i];
    int rc = tt_inspect_run(be, params, prompt ? ids : NULL, n, &r, st);
    free(ids);
    TT_CHECK(rc);
    j->len = 0;
    j->oom = 0;
    tt_inspect_json(&r, top_k, j);
    tt_inspect_free(&r);
    if (j->oom || !j->buf) return tt_fail(st, TT_ENOMEM, "out of memory writing the inspection");
    return TT_OK;
}
