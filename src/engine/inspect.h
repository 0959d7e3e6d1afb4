/* inspect.h — looking inside a model for one prompt, the same on every
 * backend: the next-byte distribution at each position, every head's causal
 * attention probabilities, and a logit lens over the layers.
 *
 * A backend runs only its forward (backend.h, vtable.inspect) and hands back
 * the activations: the residual stream after the embedding and after each
 * block, and each layer's queries and keys. Everything from there is the
 * math of this file, shared by all backends (CPU, native WebGPU, WASM,
 * browser WebGPU), so two backends differ only by their float32 forwards:
 *   attention  A[l][h][i][j] = softmax_j<=i (q_i . k_j / sqrt(hs)), 0 for j > i
 *   lens       P[l][t] = softmax(ln_f(x_l[t]) . wte^T), l = 0 (embedding) .. L;
 *              P[L] is the model's own next-byte distribution
 * computed in double from the float activations and parameters, rounded to
 * float once at the end: the result is the exact math of those activations
 * to float rounding (relative 6e-8), so what differs between backends is
 * their forward's float32 rounding (about 1e-6 on the tiny presets).
 * The prompt is at most min(ctx, TT_INSPECT_MAX_T) bytes: the maps grow as
 * L * NH * T * T. Dropout never applies (inspection is inference); LoRA
 * adapters are part of the forward that produced q, k and the stream. */
#ifndef TT_INSPECT_H
#define TT_INSPECT_H

#include <stdint.h>

#include "backend.h"
#include "config.h"
#include "io/json.h"

/* longest prompt inspected, bytes (also at most the model's ctx): at gpt2's 12 x 12 heads the maps of
 * 128 bytes are 2.4 M numbers, about 12 MB of JSON */
#define TT_INSPECT_MAX_T 128
#define TT_INSPECT_MAX_K 16  /* most next bytes listed per position */

typedef struct {
    int T, L, NH, V;
    const char *backend; /* the backend whose forward ran ("cpu", "webgpu"); NULL from tt_inspect_from_acts */
    tt_token *tokens; /* (T) the prompt */
    float *attn;     /* (L, NH, T, T): row i over keys j, zero above the diagonal, each row sums to 1 */
    float *lens;     /* (L+1, T, V): next-byte probabilities read from the stream after the
                      * embedding (0) and after block l (l+1); lens[L] is the model's output */
} tt_inspect;

/* The longest prompt cfg can inspect: min(ctx, TT_INSPECT_MAX_T). */
int tt_inspect_max_len(const tt_model_config *cfg);
/* TT_OK when a prompt of T bytes can be inspected with cfg, else TT_EINVAL
 * and the one line that says why (empty, or longer than the limit, named). */
int tt_inspect_check(const tt_model_config *cfg, int64_t T, tt_status *st);

/* Runs be's inspect forward on tokens (1 <= T <= tt_inspect_max_len) and
 * fills out (allocated here; free with tt_inspect_free). params: the host
 * copy of the parameters the backend holds (ln_f and the tied head are read
 * from it). TT_EUNSUP when the backend has no inspect entry; TT_EINVAL for a
 * prompt out of range. */
int tt_inspect_run(tt_backend *be, const float *params, const tt_token *tokens, int T, tt_inspect *out, tt_status *st);

/* The math alone, from activations (what tt_inspect_run does after the
 * backend's forward; tests feed it activations of their own):
 * resid (L+1, T, C), q and k (L, T, C) with heads side by side. */
int tt_inspect_from_acts(const tt_model_config *cfg, const tt_layout *lo, const float *params, const tt_token *tokens,
                         int T, const float *resid, const float *q, const float *k, tt_inspect *out, tt_status *st);

void tt_inspect_free(tt_inspect *r);

/* The next-token logits (V) of one row xr (C) of the stream after the last
 * block: ln_f (the model's eps) and the tied head, in double from the float
 * row and parameters (the lens's math). x: C doubles of scratch. */
void tt_logits_of_row(const tt_model_config *cfg, const tt_layout *lo, const float *params, const float *xr, double *x,
                      double *logits);

/* The k most likely bytes of a distribution p (V), most likely first (ties:
 * the smaller byte first); k <= TT_INSPECT_MAX_K. */
void tt_inspect_top(const float *p, int V, int k, int *bytes, float *probs);

/* One JSON object (the CLI's `inspect --json` and the web app's view):
 *   {"backend":"cpu"|"webgpu" (when known), "bytes":[T], "n_layer":L, "n_head":NH, "top_k":K,
 *    "attention":[L][NH][T][T],
 *    "next":[T][K] of [byte, p]   the model's top-k next bytes at each position,
 *    "last":[V]                   the full distribution of the byte after the prompt,
 *    "lens":[L+1][T][K] of [byte, p]   row 0 the embedding, row l the output of block l}
 * Probabilities are written with 7 significant digits. 1 <= top_k <= TT_INSPECT_MAX_K. */
void tt_inspect_json(const tt_inspect *r, int top_k, tt_jw *j);

#endif
