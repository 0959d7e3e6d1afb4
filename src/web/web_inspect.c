/* web_inspect.c — the web app's "Look inside" read-out (web_inspect.h): one
 * prompt through the session's backend, inspect.h's math and JSON: the same
 * code and messages as the CLI's `tinytrain inspect --json`; a BPE model's
 * prompt is encoded with its tokenizer and the JSON adds "pieces", the text
 * of each token id it names. */
#include "web_inspect.h"

#include <stdlib.h>

#include "engine/inspect.h"
#include "tok/tokenizer.h"

/* ,"pieces":{"id":"text",...}: the text of every token id the JSON names
 * (the prompt's and each listed top-k), so the page can label BPE tokens */
static void pieces(const tt_inspect *r, int top_k, const tt_tokenizer *tok, tt_jw *j) {
    uint8_t *seen = calloc((size_t)r->V, 1);
    if (!seen) {
        j->oom = 1;
        return;
    }
    for (int t = 0; t < r->T; t++) seen[r->tokens[t]] = 1;
    int b[TT_INSPECT_MAX_K];
    float pr[TT_INSPECT_MAX_K];
    for (int l = 0; l <= r->L; l++)
        for (int t = 0; t < r->T; t++) {
            tt_inspect_top(r->lens + ((size_t)l * r->T + t) * r->V, r->V, top_k, b, pr);
            for (int i = 0; i < top_k; i++) seen[b[i]] = 1;
        }
    tt_jw_cstr(j, ",\"pieces\":{");
    int first = 1;
    for (int v = 0; v < r->V; v++) {
        if (!seen[v]) continue;
        size_t len = 0;
        const uint8_t *p = tt_tokenizer_token(tok, v, &len);
        tt_jw_printf(j, "%s\"%d\":", first ? "" : ",", v);
        tt_jw_string(j, p ? (const char *)p : "", p ? len : 0);
        first = 0;
    }
    tt_jw_cstr(j, "}");
    free(seen);
}

int tt_web_inspect_json(tt_backend *be, const float *params, const tt_tokenizer *tok, const uint8_t *prompt, int n,
                        int top_k, tt_jw *j, tt_status *st) {
    if (top_k < 1 || top_k > TT_INSPECT_MAX_K)
        return tt_fail(st, TT_EINVAL, "top-k must be in 1..%d (got %d)", TT_INSPECT_MAX_K, top_k);
    int bpe = tok && tt_tokenizer_kind(tok) == TT_TOK_BPE;
    tt_inspect r;
    tt_tok_ids v = {0};
    tt_token *ids = NULL;
    int rc = TT_OK;
    if (bpe && n > 0) rc = tt_tokenizer_encode((tt_tokenizer *)tok, prompt, (size_t)n, &v, st);
    int nt = bpe ? (int)v.n : n;
    if (!rc) {
        ids = malloc((size_t)(nt > 0 ? nt : 1) * sizeof *ids);
        if (!ids) rc = tt_fail(st, TT_ENOMEM, "out of memory (inspect prompt)");
    }
    for (int i = 0; !rc && i < nt; i++) ids[i] = bpe ? (tt_token)v.ids[i] : prompt[i];
    tt_tok_ids_free(&v);
    if (!rc) rc = tt_inspect_run(be, params, prompt ? ids : NULL, nt, &r, st);
    free(ids);
    TT_CHECK(rc);
    j->len = 0;
    j->oom = 0;
    tt_inspect_json(&r, top_k, j);
    if (bpe && !j->oom && j->len > 0 && j->buf[j->len - 1] == '}') { /* the object goes on: the tokens' text */
        j->len--;
        pieces(&r, top_k, tok, j);
        tt_jw_cstr(j, "}");
    }
    tt_inspect_free(&r);
    if (j->oom || !j->buf) return tt_fail(st, TT_ENOMEM, "out of memory writing the inspection");
    return TT_OK;
}
