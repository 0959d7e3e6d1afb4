/* ref64.c — the float64 reference model (ref64.h). Deliberately naive:
 * direct loops over the math of each op, then the GPT built from them. */
#include "ref64.h"

#include <math.h>

#include "rng.h"
#include <stdlib.h>
#include <string.h>

double *ref_alloc(size_t n) {
    double *p = calloc(n ? n : 1, sizeof(double));
    if (!p) abort(); /* tests only */
    return p;
}

double *ref_from_float(const float *x, size_t n) {
    double *p = ref_alloc(n);
    for (size_t i = 0; i < n; i++) p[i] = x[i];
    return p;
}

void ref_to_float(float *dst, const double *x, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = (float)x[i];
}

/* ---- embedding ---- */

void ref_embedding_forward(double *out, const int32_t *inp, const double *wte, const double *wpe, int B, int T, int C) {
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            int tok = inp[b * T + t];
            for (int c = 0; c < C; c++)
                out[((size_t)b * T + t) * C + c] = wte[(size_t)tok * C + c] + wpe[(size_t)t * C + c];
        }
}

void ref_embedding_backward(double *dwte, double *dwpe, const double *dout, const int32_t *inp, int B, int T, int C,
                            int V) {
    if (dwte) memset(dwte, 0, (size_t)V * C * sizeof(double));
    if (dwpe) memset(dwpe, 0, (size_t)T * C * sizeof(double));
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            const double *d = dout + ((size_t)b * T + t) * C;
            int tok = inp[b * T + t];
            for (int c = 0; c < C; c++) {
                if (dwte) dwte[(size_t)tok * C + c] += d[c];
                if (dwpe) dwpe[(size_t)t * C + c] += d[c];
            }
        }
}

/* ---- dropout (rng.h's masks): element i times scale if kept, else 0 ---- */

static double drop_factor(float p, tt_dropout_key key, uint64_t i) {
    return tt_dropout_keep(key, tt_dropout_threshold(p), (uint32_t)i) ? (double)(1.0f / (1.0f - p)) : 0.0;
}

void ref_dropout_forward(double *out, const double *inp, float p, tt_dropout_key key, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = inp[i] * drop_factor(p, key, i);
}

void ref_dropout_backward(double *dinp, const double *dout, float p, tt_dropout_key key, size_t n) {
    ref_dropout_forward(dinp, dout, p, key, n);
}

/* ---- layernorm ---- */

static void ln_stats(const double *x, int C, double eps, double *mean, double *rstd) {
    double m = 0.0, v = 0.0;
    for (int c = 0; c < C; c++) m += x[c];
    m /= C;
    for (int c = 0; c < C; c++) v += (x[c] - m) * (x[c] - m);
    v /= C;
    *mean = m;
    *rstd = 1.0 / sqrt(v + eps);
}

void ref_layernorm_forward(double *out, double *stats, const double *inp, const double *weight, const double *bias,
                           int N, int C, double eps) {
    for (int i = 0; i < N; i++) {
        const double *x = inp + (size_t)i * C;
        double m, s;
        ln_stats(x, C, eps, &m, &s);
        for (int c = 0; c < C; c++) out[(size_t)i * C + c] = (x[c] - m) * s * weight[c] + bias[c];
        if (stats) stats[i] = m, stats[N + i] = s;
    }
}

void ref_layernorm_backward(double *dinp, double *dweight, double *dbias, const double *dout, const double *inp,
                            const double *weight, int N, int C, double eps) {
    if (dweight) memset(dweight, 0, (size_t)C * sizeof(double));
    if (dbias) memset(dbias, 0, (size_t)C * sizeof(double));
    for (int i = 0; i < N; i++) {
        const double *x = inp + (size_t)i * C, *dy = dout + (size_t)i * C;
        double m, s;
        ln_stats(x, C, eps, &m, &s);
        double a = 0.0, b = 0.0;
        for (int c = 0; c < C; c++) {
            double xh = (x[c] - m) * s, dn = dy[c] * weight[c];
            a += dn;
            b += dn * xh;
            if (dweight) dweight[c] += dy[c] * xh;
            if (dbias) dbias[c] += dy[c];
        }
        a /= C;
        b /= C;
        if (dinp)
            for (int c = 0; c < C; c++) {
                double xh = (x[c] - m) * s;
                dinp[(size_t)i * C + c] = (dy[c] * weight[c] - a - xh * b) * s;
            }
    }
}

void ref_layernorm_backward_scale(double *scale, const double *dout, const double *inp, const double *weight, int N,
                                  int C, double eps) {
    for (int i = 0; i < N; i++) {
        const double *x = inp + (size_t)i * C, *dy = dout + (size_t)i * C;
        double m, s;
        ln_stats(x, C, eps, &m, &s);
        double a = 0.0, b = 0.0;
        for (int c = 0; c < C; c++) {
            double g = dy[c] * weight[c];
            a += g;
            b += g * (x[c] - m) * s;
        }
        a /= C;
        b /= C;
        for (int c = 0; c < C; c++)
            scale[(size_t)i * C + c] = s * (fabs(dy[c] * weight[c]) + fabs(a) + fabs((x[c] - m) * s * b));
    }
}

/* ---- matmul ---- */

void ref_matmul_forward(double *out, const double *inp, const double *weight, const double *bias, int N, int C, int OC) {
    for (int i = 0; i < N; i++)
        for (int o = 0; o < OC; o++) {
            double s = bias ? bias[o] : 0.0;
            for (int c = 0; c < C; c++) s += inp[(size_t)i * C + c] * weight[(size_t)c * OC + o];
            out[(size_t)i * OC + o] = s;
        }
}

void ref_matmul_backward(double *dinp, double *dweight, double *dbias, const double *dout, const double *inp,
                         const double *weight, int N, int C, int OC) {
    if (dinp)
        for (int i = 0; i < N; i++)
            for (int c = 0; c < C; c++) {
                double s = 0.0;
                for (int o = 0; o < OC; o++) s += dout[(size_t)i * OC + o] * weight[(size_t)c * OC + o];
                dinp[(size_t)i * C + c] = s;
            }
    if (dweight)
        for (int c = 0; c < C; c++)
            for (int o = 0; o < OC; o++) {
                double s = 0.0;
                for (int i = 0; i < N; i++) s += inp[(size_t)i * C + c] * dout[(size_t)i * OC + o];
                dweight[(size_t)c * OC + o] = s;
            }
    if (dbias)
        for (int o = 0; o < OC; o++) {
            double s = 0.0;
            for (int i = 0; i < N; i++) s += dout[(size_t)i * OC + o];
            dbias[o] = s;
        }
}

void ref_head_forward(double *logits, const double *inp, const double *wte, int N, int C, int V) {
    for (int i = 0; i < N; i++)
        for (int v = 0; v < V; v++) {
            double s = 0.0;
            for (int c = 0; c < C; c++) s += inp[(size_t)i * C + c] * wte[(size_t)v * C + c];
            logits[(size_t)i * V + v] = s;
        }
}

void ref_head_backward(double *dinp, double *dwte, const double *dlogits, const double *inp, const double *wte, int N,
                       int C, int V) {
    if (dinp)
        for (int i = 0; i < N; i++)
            for (int c = 0; c < C; c++) {
                double s = 0.0;
                for (int v = 0; v < V; v++) s += dlogits[(size_t)i * V + v] * wte[(size_t)v * C + c];
                dinp[(size_t)i * C + c] = s;
            }
    if (dwte)
        for (int v = 0; v < V; v++)
            for (int c = 0; c < C; c++) {
                double s = 0.0;
                for (int i = 0; i < N; i++) s += dlogits[(size_t)i * V + v] * inp[(size_t)i * C + c];
                dwte[(size_t)v * C + c] = s;
            }
}

/* ---- attention ---- */

/* p[j] = softmax_j(scale * q . k_j) over j <= t for one head; returns the logsumexp */
static double att_probs(double *p, const double *q, const double *k, size_t ld, int t, int hs, double scale) {
    double mx = -INFINITY;
    for (int j = 0; j <= t; j++) {
        double s = 0.0;
        for (int d = 0; d < hs; d++) s += q[d] * k[(size_t)j * ld + d];
        p[j] = s * scale;
        if (p[j] > mx) mx = p[j];
    }
    double sum = 0.0;
    for (int j = 0; j <= t; j++) {
        p[j] = exp(p[j] - mx);
        sum += p[j];
    }
    for (int j = 0; j <= t; j++) p[j] /= sum;
    return mx + log(sum);
}

void ref_attention_forward(double *out, double *stats, const double *q, const double *k, const double *v, int ld, int B,
                           int T, int C, int NH) {
    ref_attention_forward_dropout(out, stats, q, k, v, ld, B, T, C, NH, 0.0f, (tt_dropout_key){0, 0});
}

void ref_attention_forward_dropout(double *out, double *stats, const double *q, const double *k, const double *v, int ld,
                                   int B, int T, int C, int NH, float drop, tt_dropout_key key) {
    int hs = C / NH;
    double scale = 1.0 / sqrt((double)hs);
    double *p = ref_alloc((size_t)T);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            size_t off = (size_t)b * T * ld + (size_t)h * hs;
            for (int t = 0; t < T; t++) {
                double lse = att_probs(p, q + off + (size_t)t * ld, k + off, (size_t)ld, t, hs, scale);
                size_t base = (((size_t)b * NH + h) * T + t) * (size_t)T;
                for (int j = 0; j <= t; j++) p[j] *= drop_factor(drop, key, base + (size_t)j); /* Pd = M.P*scale */
                double *o = out + ((size_t)b * T + t) * C + (size_t)h * hs;
                for (int d = 0; d < hs; d++) {
                    double s = 0.0;
                    for (int j = 0; j <= t; j++) s += p[j] * v[off + (size_t)j * ld + d];
                    o[d] = s;
                }
                if (stats) stats[((size_t)b * NH + h) * T + t] = lse;
            }
        }
    free(p);
}

void ref_attention_backward(double *dq, double *dk, double *dv, double *stats, const double *q, const double *k,
                            const double *v, const double *dout, int ld, int B, int T, int C, int NH) {
    ref_attention_backward_dropout(dq, dk, dv, stats, q, k, v, dout, ld, B, T, C, NH, 0.0f, (tt_dropout_key){0, 0});
}

void ref_attention_backward_dropout(double *dq, double *dk, double *dv, double *stats, const double *q, const double *k,
                                    const double *v, const double *dout, int ld, int B, int T, int C, int NH, float drop,
                                    tt_dropout_key key) {
    int hs = C / NH;
    double scale = 1.0 / sqrt((double)hs);
    double *p = ref_alloc((size_t)T), *dp = ref_alloc((size_t)T), *m = ref_alloc((size_t)T);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            size_t r = ((size_t)b * T + t) * ld;
            for (int c = 0; c < C; c++) dq[r + c] = dk[r + c] = dv[r + c] = 0.0;
        }
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            size_t off = (size_t)b * T * ld + (size_t)h * hs;
            for (int t = 0; t < T; t++) {
                const double *qt = q + off + (size_t)t * ld;
                const double *dO = dout + ((size_t)b * T + t) * C + (size_t)h * hs;
                att_probs(p, qt, k + off, (size_t)ld, t, hs, scale);
                size_t base = (((size_t)b * NH + h) * T + t) * (size_t)T;
                for (int j = 0; j <= t; j++) m[j] = drop_factor(drop, key, base + (size_t)j);
                /* out_t = sum_j m_j p_j v_j: dPd_j = dO . v_j ; dv_j += m_j p_j dO ; D = dO . out_t;
                 * dp_j = m_j dPd_j */
                double D = 0.0;
                for (int j = 0; j <= t; j++) {
                    const double *vj = v + off + (size_t)j * ld;
                    double *dvj = dv + off + (size_t)j * ld;
                    double s = 0.0;
                    for (int d = 0; d < hs; d++) {
                        s += dO[d] * vj[d];
                        dvj[d] += m[j] * p[j] * dO[d];
                    }
                    dp[j] = m[j] * s;
                    D += p[j] * dp[j];
                }
                if (stats) stats[(size_t)B * NH * T + ((size_t)b * NH + h) * T + t] = D;
                /* softmax backward, then the scaled dot products */
                double *dqt = dq + off + (size_t)t * ld;
                for (int j = 0; j <= t; j++) {
                    double ds = p[j] * (dp[j] - D) * scale;
                    const double *kj = k + off + (size_t)j * ld;
                    double *dkj = dk + off + (size_t)j * ld;
                    for (int d = 0; d < hs; d++) {
                        dqt[d] += ds * kj[d];
                        dkj[d] += ds * qt[d];
                    }
                }
            }
        }
    free(p);
    free(dp);
    free(m);
}

/* ---- GELU ---- */

double ref_gelu(double x) { return 0.5 * x * (1.0 + erf(x / sqrt(2.0))); }

/* u = sqrt(2/pi) (x + 0.044715 x^3) */
static double gelu_tanh_u(double x) { return sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x); }

double ref_gelu_tanh(double x) { return 0.5 * x * (1.0 + tanh(gelu_tanh_u(x))); }

static double gelu_grad(double x, int act) {
    if (act == TT_ACT_GELU_TANH) {
        double t = tanh(gelu_tanh_u(x)), du = sqrt(2.0 / M_PI) * (1.0 + 3.0 * 0.044715 * x * x);
        return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du;
    }
    return 0.5 * (1.0 + erf(x / sqrt(2.0))) + x * exp(-0.5 * x * x) / sqrt(2.0 * M_PI);
}

void ref_gelu_forward(double *out, const double *inp, size_t n, int act) {
    for (size_t i = 0; i < n; i++) out[i] = act == TT_ACT_GELU_TANH ? ref_gelu_tanh(inp[i]) : ref_gelu(inp[i]);
}

void ref_gelu_backward(double *dinp, const double *inp, const double *dout, size_t n, int act) {
    for (size_t i = 0; i < n; i++) dinp[i] = gelu_grad(inp[i], act) * dout[i];
}

/* ---- cross-entropy ---- */

double ref_crossentropy_forward(double *losses, double *dlogits, const double *logits, const int32_t *targets, int N,
                                int V, double dscale) {
    double total = 0.0;
    for (int i = 0; i < N; i++) {
        const double *x = logits + (size_t)i * V;
        double mx = -INFINITY;
        for (int v = 0; v < V; v++) mx = x[v] > mx ? x[v] : mx;
        double sum = 0.0;
        for (int v = 0; v < V; v++) sum += exp(x[v] - mx);
        double lse = mx + log(sum);
        double l = lse - x[targets[i]];
        if (losses) losses[i] = l;
        total += l;
        if (dlogits)
            for (int v = 0; v < V; v++)
                dlogits[(size_t)i * V + v] = (exp(x[v] - lse) - (v == targets[i] ? 1.0 : 0.0)) * dscale;
    }
    return total / N;
}

void ref_crossentropy_backward(double *dlogits, const double *logits, const int32_t *targets, int N, int V,
                               double dscale) {
    ref_crossentropy_forward(NULL, dlogits, logits, targets, N, V, dscale);
}

/* ---- lora ---- */

void ref_lora_forward(double *out, double *h_out, const double *inp, const double *a, const double *b, double scale, int N,
                      int C, int OC, int R) {
    double *h = ref_alloc((size_t)N * R);
    for (int i = 0; i < N; i++)
        for (int r = 0; r < R; r++) {
            double acc = 0.0;
            for (int k = 0; k < C; k++) acc += inp[(size_t)i * C + k] * a[(size_t)k * R + r];
            h[(size_t)i * R + r] = scale * acc;
        }
    for (int i = 0; i < N; i++)
        for (int j = 0; j < OC; j++) {
            double acc = 0.0;
            for (int r = 0; r < R; r++) acc += h[(size_t)i * R + r] * b[(size_t)r * OC + j];
            out[(size_t)i * OC + j] = acc;
        }
    if (h_out) memcpy(h_out, h, (size_t)N * R * sizeof(double));
    free(h);
}

void ref_lora_backward(double *dinp, double *da, double *db, const double *dout, const double *inp, const double *a,
                       const double *b, double scale, int N, int C, int OC, int R) {
    double *h = ref_alloc((size_t)N * R), *dh = ref_alloc((size_t)N * R);
    for (int i = 0; i < N; i++)
        for (int r = 0; r < R; r++) {
            double acc = 0.0, dacc = 0.0;
            for (int k = 0; k < C; k++) acc += inp[(size_t)i * C + k] * a[(size_t)k * R + r];
            for (int j = 0; j < OC; j++) dacc += dout[(size_t)i * OC + j] * b[(size_t)r * OC + j];
            h[(size_t)i * R + r] = scale * acc;
            dh[(size_t)i * R + r] = scale * dacc;
        }
    if (db)
        for (int r = 0; r < R; r++)
            for (int j = 0; j < OC; j++) {
                double acc = 0.0;
                for (int i = 0; i < N; i++) acc += h[(size_t)i * R + r] * dout[(size_t)i * OC + j];
                db[(size_t)r * OC + j] = acc;
            }
    if (da)
        for (int k = 0; k < C; k++)
            for (int r = 0; r < R; r++) {
                double acc = 0.0;
                for (int i = 0; i < N; i++) acc += inp[(size_t)i * C + k] * dh[(size_t)i * R + r];
                da[(size_t)k * R + r] = acc;
            }
    if (dinp)
        for (int i = 0; i < N; i++)
            for (int k = 0; k < C; k++) {
                double acc = 0.0;
                for (int r = 0; r < R; r++) acc += dh[(size_t)i * R + r] * a[(size_t)k * R + r];
                dinp[(size_t)i * C + k] = acc;
            }
    free(h), free(dh);
}

/* ---- whole model ---- */

/* the dropout of one micro-batch: p, and what keys the masks (rng.h) */
typedef struct {
    float p;
    uint64_t seed;
    int64_t step;
    int n_micro, micro;
} gpt_drop;

static tt_dropout_key drop_key(const gpt_drop *dr, int n_layer, int layer, int site) {
    return tt_dropout_key_at(dr->seed, dr->step, dr->n_micro, dr->micro, n_layer, layer, site);
}

/* adapter (A or B) of target tg in layer l, NULL when it has none */
static const double *lora_ptr(const tt_model_config *cfg, const tt_layout *lo, const double *base, int l, int tg,
                              tt_tensor_kind ab) {
    int i = tt_layout_lora_index(cfg, l, tg, ab);
    return i < 0 ? NULL : base + lo->t[i].offset;
}

/* y (N,OC) += the delta of target tg's adapter in layer l (if any); tmp (N,max(C,OC)) */
static void lora_add(const tt_model_config *cfg, const tt_layout *lo, const double *params, int l, int tg, double *y,
                     const double *x, int N, int C, int OC, double *tmp) {
    const double *a = lora_ptr(cfg, lo, params, l, tg, TT_LORA_A), *b = lora_ptr(cfg, lo, params, l, tg, TT_LORA_B);
    if (!a) return;
    ref_lora_forward(tmp, NULL, x, a, b, tt_lora_scale(cfg), N, C, OC, cfg->lora_rank);
    for (size_t i = 0; i < (size_t)N * OC; i++) y[i] += tmp[i];
}

/* its backward: dx (N,C) += the adapter's input gradient; the adapter's gradients set */
static void lora_bwd(const tt_model_config *cfg, const tt_layout *lo, const double *params, double *grads, int l, int tg,
                     double *dx, const double *dy, const double *x, int N, int C, int OC, double *tmp) {
    const double *a = lora_ptr(cfg, lo, params, l, tg, TT_LORA_A), *b = lora_ptr(cfg, lo, params, l, tg, TT_LORA_B);
    if (!a) return;
    double *ga = (double *)lora_ptr(cfg, lo, grads, l, tg, TT_LORA_A), *gb = (double *)lora_ptr(cfg, lo, grads, l, tg, TT_LORA_B);
    ref_lora_backward(tmp, ga, gb, dy, x, a, b, tt_lora_scale(cfg), N, C, OC, cfg->lora_rank);
    for (size_t i = 0; i < (size_t)N * C; i++) dx[i] += tmp[i];
}

/* Forward of inp (B,T); logits (B,T,V) copied out if logits_out; with tgt,
 * returns the mean loss and, if grads, fills d(mean loss)/d(params).
 * dr: dropout at the four sites (backend.h), NULL for none. */
static double gpt_run(const tt_model_config *cfg, const tt_layout *lo, const double *params, const int32_t *inp,
                      const int32_t *tgt, int B, int T, double *logits_out, double *grads, const gpt_drop *dr) {
    const gpt_drop nodrop = {0.0f, 0, 0, 1, 0};
    if (!dr) dr = &nodrop;
    int C = cfg->d_model, L = cfg->n_layer, NH = cfg->n_head, V = cfg->vocab;
    int N = B * T;
    size_t NC = (size_t)N * C;
#define PR(k, l) (params + tt_layout_offset(lo, cfg, (k), (l)))
#define GR(k, l) (grads + tt_layout_offset(lo, cfg, (k), (l)))
    double *ltmp = ref_alloc(4 * NC);
#define LORA_ADD(l, tg, y, xin, Cin, OC) lora_add(cfg, lo, params, (l), (tg), (y), (xin), N, (Cin), (OC), ltmp)
#define LORA_BWD(l, tg, dx, dy, xin, Cin, OC) lora_bwd(cfg, lo, params, grads, (l), (tg), (dx), (dy), (xin), N, (Cin), (OC), ltmp)
    /* activations: x[l] is the input of layer l, x[L] the input of ln_f */
    const double eps = cfg->ln_eps > 0.0f ? (double)cfg->ln_eps : 1e-5; /* tt_config_ln_eps (the default: 1e-5 exactly) */
    double **x = malloc((size_t)(L + 1) * sizeof *x);
    double **ln1 = malloc((size_t)L * sizeof *ln1), **qkv = malloc((size_t)L * sizeof *qkv);
    double **att = malloc((size_t)L * sizeof *att), **res2 = malloc((size_t)L * sizeof *res2);
    double **ln2 = malloc((size_t)L * sizeof *ln2), **fch = malloc((size_t)L * sizeof *fch);
    double **fchg = malloc((size_t)L * sizeof *fchg);
    if (!x || !ln1 || !qkv || !att || !res2 || !ln2 || !fch || !fchg) abort();
    x[0] = ref_alloc(NC);
    ref_embedding_forward(x[0], inp, PR(TT_WTE, 0), PR(TT_WPE, 0), B, T, C);
    ref_dropout_forward(x[0], x[0], dr->p, drop_key(dr, L, L, TT_DROP_EMBED), NC);
    double *tmp = ref_alloc(NC);
    const tt_tensor_kind wk[3] = {TT_QW, TT_KW, TT_VALW}, bk[3] = {TT_QB, TT_KB, TT_VALB};
    for (int l = 0; l < L; l++) {
        ln1[l] = ref_alloc(NC);
        qkv[l] = ref_alloc(3 * NC);
        att[l] = ref_alloc(NC);
        res2[l] = ref_alloc(NC);
        ln2[l] = ref_alloc(NC);
        fch[l] = ref_alloc(4 * NC);
        fchg[l] = ref_alloc(4 * NC);
        x[l + 1] = ref_alloc(NC);
        ref_layernorm_forward(ln1[l], NULL, x[l], PR(TT_LN1W, l), PR(TT_LN1B, l), N, C, eps);
        for (int s = 0; s < 3; s++) {
            ref_matmul_forward(tmp, ln1[l], PR(wk[s], l), PR(bk[s], l), N, C, C);
            for (int i = 0; i < N; i++) memcpy(qkv[l] + (size_t)i * 3 * C + (size_t)s * C, tmp + (size_t)i * C, (size_t)C * sizeof(double));
        }
        LORA_ADD(l, TT_LORA_C_ATTN, qkv[l], ln1[l], C, 3 * C);
        ref_attention_forward_dropout(att[l], NULL, qkv[l], qkv[l] + C, qkv[l] + 2 * C, 3 * C, B, T, C, NH, dr->p,
                                      drop_key(dr, L, l, TT_DROP_ATTN));
        ref_matmul_forward(tmp, att[l], PR(TT_OW, l), PR(TT_OB, l), N, C, C);
        LORA_ADD(l, TT_LORA_ATTN_C_PROJ, tmp, att[l], C, C);
        ref_dropout_forward(tmp, tmp, dr->p, drop_key(dr, L, l, TT_DROP_ATTN_OUT), NC);
        for (size_t i = 0; i < NC; i++) res2[l][i] = x[l][i] + tmp[i];
        ref_layernorm_forward(ln2[l], NULL, res2[l], PR(TT_LN2W, l), PR(TT_LN2B, l), N, C, eps);
        ref_matmul_forward(fch[l], ln2[l], PR(TT_FCW, l), PR(TT_FCB, l), N, C, 4 * C);
        LORA_ADD(l, TT_LORA_C_FC, fch[l], ln2[l], C, 4 * C);
        ref_gelu_forward(fchg[l], fch[l], 4 * NC, cfg->act);
        ref_matmul_forward(tmp, fchg[l], PR(TT_PROJW, l), PR(TT_PROJB, l), N, 4 * C, C);
        LORA_ADD(l, TT_LORA_MLP_C_PROJ, tmp, fchg[l], 4 * C, C);
        ref_dropout_forward(tmp, tmp, dr->p, drop_key(dr, L, l, TT_DROP_MLP_OUT), NC);
        for (size_t i = 0; i < NC; i++) x[l + 1][i] = res2[l][i] + tmp[i];
    }
    double *lnf = ref_alloc(NC), *logits = ref_alloc((size_t)N * V), *dlogits = ref_alloc((size_t)N * V);
    ref_layernorm_forward(lnf, NULL, x[L], PR(TT_LNFW, 0), PR(TT_LNFB, 0), N, C, eps);
    ref_head_forward(logits, lnf, PR(TT_WTE, 0), N, C, V);
    if (logits_out) memcpy(logits_out, logits, (size_t)N * V * sizeof(double));
    double loss = tgt ? ref_crossentropy_forward(NULL, dlogits, logits, tgt, N, V, 1.0 / N) : 0.0;

    if (tgt && grads) {
        memset(grads, 0, lo->total * sizeof(double));
        double *dx = ref_alloc(NC), *dln = ref_alloc(NC), *dtmp = ref_alloc(NC), *dq = ref_alloc(NC);
        double *dqkv = ref_alloc(3 * NC), *dfch = ref_alloc(4 * NC), *dfchg = ref_alloc(4 * NC);
        double *gw2 = ref_alloc((size_t)V * C), *dbr = ref_alloc(NC);
        /* head + ln_f */
        ref_head_backward(dln, gw2, dlogits, lnf, PR(TT_WTE, 0), N, C, V);
        for (size_t i = 0; i < (size_t)V * C; i++) GR(TT_WTE, 0)[i] += gw2[i];
        ref_layernorm_backward(dx, GR(TT_LNFW, 0), GR(TT_LNFB, 0), dln, x[L], PR(TT_LNFW, 0), N, C, eps);
        for (int l = L - 1; l >= 0; l--) {
            /* x[l+1] = res2 + proj(gelu(fc(ln2(res2)))) */
            ref_dropout_backward(dbr, dx, dr->p, drop_key(dr, L, l, TT_DROP_MLP_OUT), NC);
            ref_matmul_backward(dfchg, GR(TT_PROJW, l), GR(TT_PROJB, l), dbr, fchg[l], PR(TT_PROJW, l), N, 4 * C, C);
            LORA_BWD(l, TT_LORA_MLP_C_PROJ, dfchg, dbr, fchg[l], 4 * C, C);
            ref_gelu_backward(dfch, fch[l], dfchg, 4 * NC, cfg->act);
            ref_matmul_backward(dln, GR(TT_FCW, l), GR(TT_FCB, l), dfch, ln2[l], PR(TT_FCW, l), N, C, 4 * C);
            LORA_BWD(l, TT_LORA_C_FC, dln, dfch, ln2[l], C, 4 * C);
            ref_layernorm_backward(dtmp, GR(TT_LN2W, l), GR(TT_LN2B, l), dln, res2[l], PR(TT_LN2W, l), N, C, eps);
            for (size_t i = 0; i < NC; i++) dx[i] += dtmp[i]; /* dx = d res2 */
            /* res2 = x[l] + o(att(qkv(ln1(x[l])))) */
            ref_dropout_backward(dbr, dx, dr->p, drop_key(dr, L, l, TT_DROP_ATTN_OUT), NC);
            ref_matmul_backward(dtmp, GR(TT_OW, l), GR(TT_OB, l), dbr, att[l], PR(TT_OW, l), N, C, C);
            LORA_BWD(l, TT_LORA_ATTN_C_PROJ, dtmp, dbr, att[l], C, C);
            ref_attention_backward_dropout(dqkv, dqkv + C, dqkv + 2 * C, NULL, qkv[l], qkv[l] + C, qkv[l] + 2 * C, dtmp,
                                           3 * C, B, T, C, NH, dr->p, drop_key(dr, L, l, TT_DROP_ATTN));
            memset(dln, 0, NC * sizeof(double));
            for (int s = 0; s < 3; s++) {
                for (int i = 0; i < N; i++) memcpy(dq + (size_t)i * C, dqkv + (size_t)i * 3 * C + (size_t)s * C, (size_t)C * sizeof(double));
                ref_matmul_backward(dtmp, GR(wk[s], l), GR(bk[s], l), dq, ln1[l], PR(wk[s], l), N, C, C);
                for (size_t i = 0; i < NC; i++) dln[i] += dtmp[i];
            }
            LORA_BWD(l, TT_LORA_C_ATTN, dln, dqkv, ln1[l], C, 3 * C);
            ref_layernorm_backward(dtmp, GR(TT_LN1W, l), GR(TT_LN1B, l), dln, x[l], PR(TT_LN1W, l), N, C, eps);
            for (size_t i = 0; i < NC; i++) dx[i] += dtmp[i];
        }
        ref_dropout_backward(dx, dx, dr->p, drop_key(dr, L, L, TT_DROP_EMBED), NC);
        ref_embedding_backward(gw2, GR(TT_WPE, 0), dx, inp, B, T, C, V);
        for (size_t i = 0; i < (size_t)V * C; i++) GR(TT_WTE, 0)[i] += gw2[i];
        free(dx), free(dln), free(dtmp), free(dq), free(dqkv), free(dfch), free(dfchg), free(gw2), free(dbr);
    }
    for (int l = 0; l < L; l++) {
        free(ln1[l]), free(qkv[l]), free(att[l]), free(res2[l]), free(ln2[l]), free(fch[l]), free(fchg[l]);
    }
    for (int l = 0; l <= L; l++) free(x[l]);
    free(x), free(ln1), free(qkv), free(att), free(res2), free(ln2), free(fch), free(fchg);
    free(tmp), free(lnf), free(logits), free(dlogits), free(ltmp);
#undef LORA_ADD
#undef LORA_BWD
#undef PR
#undef GR
    return loss;
}

void ref_gpt_forward(const tt_model_config *cfg, const tt_layout *lo, const double *params, const int32_t *inp, int B,
                     int T, double *logits) {
    gpt_run(cfg, lo, params, inp, NULL, B, T, logits, NULL, NULL);
}

double ref_gpt_loss_grad(const tt_model_config *cfg, const tt_layout *lo, const double *params, const tt_token *tokens,
                         int B, double *grads) {
    return ref_gpt_loss_grad_dropout(cfg, lo, params, tokens, B, grads, 0.0f, 0, 0, 1, 0);
}

double ref_gpt_loss_grad_dropout(const tt_model_config *cfg, const tt_layout *lo, const double *params,
                                 const tt_token *tokens, int B, double *grads, float p, uint64_t seed, int64_t step,
                                 int n_micro, int micro) {
    const gpt_drop dr = {p, seed, step, n_micro, micro};
    int T = cfg->ctx, N = B * T;
    int32_t *inp = malloc((size_t)N * sizeof *inp), *tgt = malloc((size_t)N * sizeof *tgt);
    if (!inp || !tgt) abort();
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            inp[b * T + t] = (int32_t)tokens[(size_t)b * (T + 1) + t];
            tgt[b * T + t] = (int32_t)tokens[(size_t)b * (T + 1) + t + 1];
        }
    double loss = gpt_run(cfg, lo, params, inp, tgt, B, T, NULL, grads, &dr);
    free(inp), free(tgt);
    return loss;
}

/* ---- adamw ---- */

/* the clip factor of a gradient norm (backend.h) */
static double adamw_clip_scale(double norm, const tt_optim_args *opt) {
    return (opt->clip > 0 && norm > opt->clip) ? opt->clip / (norm + 1e-6) : 1.0;
}

/* one element's step, its gradient times scale; decay: weight decay applies */
static void adamw_element(double *p, double g, double *m, double *v, int decay, double scale, const tt_optim_args *opt) {
    double lr = opt->lr, b1 = opt->beta1, b2 = opt->beta2, eps = opt->eps, wd = opt->weight_decay;
    double bc1 = opt->bc1, bc2 = opt->bc2;
    g *= scale;
    if (decay) *p -= lr * wd * *p;
    *m = b1 * *m + (1 - b1) * g;
    *v = b2 * *v + (1 - b2) * g * g;
    *p -= lr * (*m / bc1) / (sqrt(*v / bc2) + eps);
}

double ref_adamw_update(double *params, const double *grads, double *m, double *v, const tt_layout *lo,
                        const tt_optim_args *opt) {
    double ss = 0.0;
    for (int t = 0; t < lo->n_tensors; t++)
        for (size_t j = lo->t[t].offset; lo->t[t].trainable && j < lo->t[t].offset + lo->t[t].numel; j++)
            ss += grads[j] * grads[j];
    double norm = sqrt(ss), scale = adamw_clip_scale(norm, opt);
    for (int t = 0; t < lo->n_tensors; t++) {
        const tt_tensor_info *ti = &lo->t[t];
        if (!ti->trainable) continue;
        for (size_t j = ti->offset; j < ti->offset + ti->numel; j++)
            adamw_element(&params[j], grads[j], &m[j], &v[j], ti->decay, scale, opt);
    }
    return norm;
}

double ref_adamw_update_masked(double *params, const double *grads, double *m, double *v, const uint32_t *decay, size_t n,
                               const tt_optim_args *opt) {
    double ss = 0.0;
    for (size_t j = 0; j < n; j++) ss += grads[j] * grads[j];
    double norm = sqrt(ss), scale = adamw_clip_scale(norm, opt);
    for (size_t j = 0; j < n; j++)
        adamw_element(&params[j], grads[j], &m[j], &v[j], (int)((decay[j >> 5] >> (j & 31)) & 1u), scale, opt);
    return norm;
}
