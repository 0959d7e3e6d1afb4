/* inspect.c — the model inspection shared by every backend (inspect.h):
 * from a backend's activations of one prompt to attention maps, logit-lens
 * distributions and their JSON. Double arithmetic, float results. */
#include "engine/inspect.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int tt_inspect_max_len(const tt_model_config *cfg) { return cfg->ctx < TT_INSPECT_MAX_T ? cfg->ctx : TT_INSPECT_MAX_T; }

int tt_inspect_check(const tt_model_config *cfg, int64_t T, tt_status *st) {
    const int max = tt_inspect_max_len(cfg);
    if (T < 1) return tt_fail(st, TT_EINVAL, "the prompt is empty: give at least one byte");
    if (T > max)
        return tt_fail(st, TT_EINVAL, "the prompt is %lld bytes; this model looks at %d at most (%s)", (long long)T, max,
                       cfg->ctx > TT_INSPECT_MAX_T ? "the inspection's limit" : "its context");
    return TT_OK;
}

void tt_inspect_free(tt_inspect *r) {
    if (!r) return;
    free(r->tokens);
    free(r->attn);
    free(r->lens);
    memset(r, 0, sizeof *r);
}

/* softmax of x (n) in place, in double */
static void softmax(double *x, int n) {
    double m = -INFINITY, s = 0.0;
    for (int i = 0; i < n; i++) m = x[i] > m ? x[i] : m;
    for (int i = 0; i < n; i++) s += x[i] = exp(x[i] - m);
    for (int i = 0; i < n; i++) x[i] /= s;
}

void tt_logits_of_row(const tt_model_config *cfg, const tt_layout *lo, const float *params, const float *xr, double *x,
                      double *logits) {
    const int C = cfg->d_model, V = cfg->vocab;
    const double eps = cfg->ln_eps > 0.0f ? (double)cfg->ln_eps : 1e-5; /* the default exactly 1e-5 */
    const float *wte = params + tt_layout_offset(lo, cfg, TT_WTE, 0);
    const float *gw = params + tt_layout_offset(lo, cfg, TT_LNFW, 0), *gb = params + tt_layout_offset(lo, cfg, TT_LNFB, 0);
    double mean = 0.0, var = 0.0;
    for (int c = 0; c < C; c++) mean += xr[c];
    mean /= C;
    for (int c = 0; c < C; c++) var += (xr[c] - mean) * (xr[c] - mean);
    const double rstd = 1.0 / sqrt(var / C + eps);
    for (int c = 0; c < C; c++) x[c] = (xr[c] - mean) * rstd * gw[c] + gb[c];
    for (int v = 0; v < V; v++) {
        const float *e = wte + (size_t)v * C;
        double s = 0.0;
        for (int c = 0; c < C; c++) s += x[c] * e[c];
        logits[v] = s;
    }
}

int tt_inspect_from_acts(const tt_model_config *cfg, const tt_layout *lo, const float *params, const tt_token *tokens,
                         int T, const float *resid, const float *q, const float *k, tt_inspect *out, tt_status *st) {
    memset(out, 0, sizeof *out);
    const int L = cfg->n_layer, NH = cfg->n_head, C = cfg->d_model, V = cfg->vocab, hs = C / NH;
    if (T < 1 || T > tt_inspect_max_len(cfg))
        return tt_fail(st, TT_EINVAL, "inspect: prompt of %d bytes outside 1..%d", T, tt_inspect_max_len(cfg));
    out->T = T, out->L = L, out->NH = NH, out->V = V;
    out->tokens = malloc((size_t)T * sizeof *out->tokens);
    out->attn = malloc((size_t)L * NH * T * T * sizeof(float));
    out->lens = malloc((size_t)(L + 1) * T * V * sizeof(float));
    double *row = malloc((size_t)(T > V ? T : V) * sizeof(double)), *x = malloc((size_t)C * sizeof(double));
    if (!out->tokens || !out->attn || !out->lens || !row || !x) {
        free(row);
        free(x);
        tt_inspect_free(out);
        return tt_fail(st, TT_ENOMEM, "out of memory (inspect, %d bytes of prompt)", T);
    }
    memcpy(out->tokens, tokens, (size_t)T * sizeof *out->tokens);
    /* attention: scores of query i against keys j <= i, per head */
    const double scale = 1.0 / sqrt((double)hs);
    for (int l = 0; l < L; l++)
        for (int h = 0; h < NH; h++)
            for (int i = 0; i < T; i++) {
                const float *qi = q + ((size_t)l * T + i) * C + (size_t)h * hs;
                for (int j = 0; j <= i; j++) {
                    const float *kj = k + ((size_t)l * T + j) * C + (size_t)h * hs;
                    double s = 0.0;
                    for (int d = 0; d < hs; d++) s += (double)qi[d] * kj[d];
                    row[j] = s * scale;
                }
                softmax(row, i + 1);
                float *a = out->attn + (((size_t)l * NH + h) * T + i) * T;
                for (int j = 0; j < T; j++) a[j] = j <= i ? (float)row[j] : 0.0f;
            }
    /* logit lens: ln_f and the tied head on every stream row */
    for (int l = 0; l <= L; l++)
        for (int t = 0; t < T; t++) {
            tt_logits_of_row(cfg, lo, params, resid + ((size_t)l * T + t) * C, x, row);
            softmax(row, V);
            float *p = out->lens + ((size_t)l * T + t) * V;
            for (int v = 0; v < V; v++) p[v] = (float)row[v];
        }
    free(row);
    free(x);
    return TT_OK;
}

int tt_inspect_run(tt_backend *be, const float *params, const tt_token *tokens, int T, tt_inspect *out, tt_status *st) {
    memset(out, 0, sizeof *out);
    const tt_model_config *cfg = &be->cfg;
    if (!be->vt->inspect) return tt_fail(st, TT_EUNSUP, "the %s backend cannot inspect a model", be->desc.name);
    TT_CHECK(tt_inspect_check(cfg, tokens ? T : 0, st));
    const size_t C = (size_t)cfg->d_model, L = (size_t)cfg->n_layer;
    float *resid = malloc((L + 1) * T * C * sizeof(float)), *q = malloc(L * T * C * sizeof(float) + 4),
          *k = malloc(L * T * C * sizeof(float) + 4);
    int rc = resid && q && k ? TT_OK : tt_fail(st, TT_ENOMEM, "out of memory (inspect activations)");
    if (!rc) rc = be->vt->inspect(be, tokens, T, resid, q, k, st);
    if (!rc) rc = tt_inspect_from_acts(cfg, &be->layout, params, tokens, T, resid, q, k, out, st);
    if (!rc) out->backend = be->desc.name;
    free(resid);
    free(q);
    free(k);
    return rc;
}

void tt_inspect_top(const float *p, int V, int k, int *bytes, float *probs) {
    int n = 0;
    for (int v = 0; v < V; v++) {
        /* insertion into the sorted list; only a strictly larger value moves up, so ties keep the smaller byte first */
        if (n == k && !(p[v] > probs[k - 1])) continue;
        int i = n < k ? n++ : k - 1;
        while (i > 0 && p[v] > probs[i - 1]) {
            probs[i] = probs[i - 1];
            bytes[i] = bytes[i - 1];
            i--;
        }
        probs[i] = p[v];
        bytes[i] = v;
    }
}

static void jprob(tt_jw *j, float x) { tt_jw_printf(j, "%.7g", (double)x); }

static void jtop(tt_jw *j, const float *p, int V, int k) {
    int b[TT_INSPECT_MAX_K];
    float pr[TT_INSPECT_MAX_K];
    tt_inspect_top(p, V, k, b, pr);
    tt_jw_cstr(j, "[");
    for (int i = 0; i < k; i++) {
        tt_jw_printf(j, "%s[%d,", i ? "," : "", b[i]);
        jprob(j, pr[i]);
        tt_jw_cstr(j, "]");
    }
    tt_jw_cstr(j, "]");
}

void tt_inspect_json(const tt_inspect *r, int top_k, tt_jw *j) {
    const int T = r->T, L = r->L, NH = r->NH, V = r->V;
    int k = top_k < 1 ? 1 : top_k > TT_INSPECT_MAX_K ? TT_INSPECT_MAX_K : top_k;
    if (k > V) k = V;
    tt_jw_cstr(j, "{");
    if (r->backend) {
        tt_jw_cstr(j, "\"backend\":");
        tt_jw_string(j, r->backend, strlen(r->backend));
        tt_jw_cstr(j, ",");
    }
    tt_jw_cstr(j, "\"bytes\":[");
    for (int t = 0; t < T; t++) tt_jw_printf(j, "%s%u", t ? "," : "", (unsigned)r->tokens[t]);
    tt_jw_printf(j, "],\"n_layer\":%d,\"n_head\":%d,\"top_k\":%d,\"attention\":[", L, NH, k);
    for (int l = 0; l < L; l++) {
        tt_jw_cstr(j, l ? ",[" : "[");
        for (int h = 0; h < NH; h++) {
            tt_jw_cstr(j, h ? ",[" : "[");
            for (int i = 0; i < T; i++) {
                tt_jw_cstr(j, i ? ",[" : "[");
                const float *a = r->attn + (((size_t)l * NH + h) * T + i) * T;
                for (int jj = 0; jj < T; jj++) {
                    if (jj) tt_jw_cstr(j, ",");
                    if (jj > i) tt_jw_cstr(j, "0");
                    else jprob(j, a[jj]);
                }
                tt_jw_cstr(j, "]");
            }
            tt_jw_cstr(j, "]");
        }
        tt_jw_cstr(j, "]");
    }
    const float *out = r->lens + (size_t)L * T * V;
    tt_jw_cstr(j, "],\"next\":[");
    for (int t = 0; t < T; t++) {
        if (t) tt_jw_cstr(j, ",");
        jtop(j, out + (size_t)t * V, V, k);
    }
    tt_jw_cstr(j, "],\"last\":[");
    for (int v = 0; v < V; v++) {
        if (v) tt_jw_cstr(j, ",");
        jprob(j, out[(size_t)(T - 1) * V + v]);
    }
    tt_jw_cstr(j, "],\"lens\":[");
    for (int l = 0; l <= L; l++) {
        tt_jw_cstr(j, l ? ",[" : "[");
        for (int t = 0; t < T; t++) {
            if (t) tt_jw_cstr(j, ",");
            jtop(j, r->lens + ((size_t)l * T + t) * V, V, k);
        }
        tt_jw_cstr(j, "]");
    }
    tt_jw_cstr(j, "]}");
}
