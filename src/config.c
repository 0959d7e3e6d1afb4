/* config.c — presets, validation, parameter layout, size and FLOP estimates. */
#include "config.h"

#include <math.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* name: layers, d_model, heads, ctx, batch -> exact parameter count */
const tt_preset tt_presets[] = {
    {"tiny", {2, 48, 3, 32, 16, TT_VOCAB, 0, 0, 0.0f, 0, 0.0f}, 70464},
    {"small", {3, 96, 3, 64, 16, TT_VOCAB, 0, 0, 0.0f, 0, 0.0f}, 366432},
    {"medium", {4, 128, 4, 96, 16, TT_VOCAB, 0, 0, 0.0f, 0, 0.0f}, 838400},
    {"large", {6, 192, 6, 128, 12, TT_VOCAB, 0, 0, 0.0f, 0, 0.0f}, 2743296},
    {"xl", {8, 256, 8, 128, 8, TT_VOCAB, 0, 0, 0.0f, 0, 0.0f}, 6416896},
    {"huge", {12, 256, 8, 256, 8, TT_VOCAB, 0, 0, 0.0f, 0, 0.0f}, 9608704},
    {"massive", {14, 384, 12, 256, 4, TT_VOCAB, 0, 0, 0.0f, 0, 0.0f}, 25039872},
    {"mega", {14, 384, 12, 512, 2, TT_VOCAB, 0, 0, 0.0f, 0, 0.0f}, 25138176},
    {"behemoth", {24, 1280, 20, 512, 1, TT_VOCAB, 0, 0, 0.0f, 0, 0.0f}, 473244160},
    {"gpt2", {12, 768, 12, 1024, 8, TT_VOCAB, 0, 0, 0.0f, 0, 0.0f}, 86039040},
};
const int tt_n_presets = (int)(sizeof tt_presets / sizeof tt_presets[0]);

const tt_preset *tt_preset_find(const char *name) {
    if (!name) return NULL;
    for (int i = 0; i < tt_n_presets; i++)
        if (strcmp(tt_presets[i].name, name) == 0) return &tt_presets[i];
    return NULL;
}

const char *tt_preset_of(const tt_model_config *c) {
    for (int i = 0; i < tt_n_presets; i++) {
        const tt_model_config *p = &tt_presets[i].cfg;
        if (p->n_layer == c->n_layer && p->d_model == c->d_model && p->n_head == c->n_head && p->ctx == c->ctx &&
            p->batch == c->batch && p->vocab == c->vocab && p->act == c->act && tt_config_ln_eps(p) == tt_config_ln_eps(c))
            return tt_presets[i].name;
    }
    return NULL;
}

int tt_config_validate(const tt_model_config *c, tt_status *st) {
    if (c->n_layer < 1 || c->n_layer > 256) return tt_fail(st, TT_EINVAL, "layers must be in 1..256 (got %d)", c->n_layer);
    if (c->d_model < 1 || c->d_model > 16384) return tt_fail(st, TT_EINVAL, "d_model must be in 1..16384 (got %d)", c->d_model);
    if (c->n_head < 1 || c->n_head > c->d_model) return tt_fail(st, TT_EINVAL, "heads must be in 1..d_model (got %d)", c->n_head);
    if (c->d_model % c->n_head) return tt_fail(st, TT_EINVAL, "d_model (%d) must be divisible by heads (%d)", c->d_model, c->n_head);
    if (c->ctx < 1 || c->ctx > 65536) return tt_fail(st, TT_EINVAL, "ctx must be in 1..65536 (got %d)", c->ctx);
    if (c->batch < 1 || c->batch > 65536) return tt_fail(st, TT_EINVAL, "batch must be in 1..65536 (got %d)", c->batch);
    if (c->vocab < 1 || c->vocab > TT_TOK_MAX_VOCAB)
        return tt_fail(st, TT_EINVAL, "vocab must be in 1..%d (got %d)", TT_TOK_MAX_VOCAB, c->vocab);
    if (c->act != TT_ACT_GELU && c->act != TT_ACT_GELU_TANH) return tt_fail(st, TT_EINVAL, "unknown activation %d", c->act);
    if (!(c->ln_eps >= 0.0f) || c->ln_eps > 0.1f) return tt_fail(st, TT_EINVAL, "layer_norm_epsilon must be in (0, 0.1] (got %g)", (double)c->ln_eps);
    if (c->lora_rank < 0) return tt_fail(st, TT_EINVAL, "lora-rank must be >= 0 (got %d)", c->lora_rank);
    if (c->lora_rank > 0) {
        if (c->lora_targets <= 0 || (c->lora_targets & ~TT_LORA_ALL))
            return tt_fail(st, TT_EINVAL, "lora-targets must name at least one of c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj");
        for (int t = 0; t < TT_LORA_N_TARGETS; t++) {
            if (!(c->lora_targets & (1 << t))) continue;
            int64_t in, out;
            tt_lora_dims(c, t, &in, &out);
            int64_t lim = in < out ? in : out;
            if (c->lora_rank > lim)
                return tt_fail(st, TT_EINVAL, "lora-rank %d is larger than the %s layer allows (%lld x %lld: at most %lld)",
                               c->lora_rank, tt_lora_target_name(t), (long long)in, (long long)out, (long long)lim);
        }
        if (!(c->lora_alpha > 0.0f) || c->lora_alpha > 1e6f)
            return tt_fail(st, TT_EINVAL, "lora-alpha must be in (0, 1e6] (got %g)", (double)c->lora_alpha);
    }
    return TT_OK;
}

const char *tt_act_name(int act) { return act == TT_ACT_GELU_TANH ? "gelu_new" : "gelu"; }

static void shape_of(const tt_model_config *c, tt_tensor_kind k, int *ndim, int64_t s[2]) {
    int64_t C = c->d_model;
    s[1] = 0;
    *ndim = 1;
    switch (k) {
    case TT_WTE: *ndim = 2; s[0] = c->vocab; s[1] = C; break;
    case TT_WPE: *ndim = 2; s[0] = c->ctx; s[1] = C; break;
    case TT_QW: case TT_KW: case TT_VALW: case TT_OW: *ndim = 2; s[0] = C; s[1] = C; break;
    case TT_FCW: *ndim = 2; s[0] = C; s[1] = 4 * C; break;
    case TT_PROJW: *ndim = 2; s[0] = 4 * C; s[1] = C; break;
    case TT_FCB: s[0] = 4 * C; break;
    default: s[0] = C; break;
    }
}

static const char *kind_suffix(tt_tensor_kind k) {
    switch (k) {
    case TT_WTE: return "wte.weight";
    case TT_WPE: return "wpe.weight";
    case TT_LN1W: return "ln_1.weight";
    case TT_LN1B: return "ln_1.bias";
    case TT_QW: return "attn.q.weight";
    case TT_QB: return "attn.q.bias";
    case TT_KW: return "attn.k.weight";
    case TT_KB: return "attn.k.bias";
    case TT_VALW: return "attn.v.weight";
    case TT_VALB: return "attn.v.bias";
    case TT_OW: return "attn.c_proj.weight";
    case TT_OB: return "attn.c_proj.bias";
    case TT_LN2W: return "ln_2.weight";
    case TT_LN2B: return "ln_2.bias";
    case TT_FCW: return "mlp.c_fc.weight";
    case TT_FCB: return "mlp.c_fc.bias";
    case TT_PROJW: return "mlp.c_proj.weight";
    case TT_PROJB: return "mlp.c_proj.bias";
    case TT_LNFW: return "ln_f.weight";
    case TT_LNFB: return "ln_f.bias";
    default: return "?";
    }
}

void tt_lora_dims(const tt_model_config *c, int target, int64_t *in, int64_t *out) {
    int64_t C = c->d_model;
    switch (target) {
    case TT_LORA_C_ATTN: *in = C; *out = 3 * C; break;
    case TT_LORA_C_FC: *in = C; *out = 4 * C; break;
    case TT_LORA_MLP_C_PROJ: *in = 4 * C; *out = C; break;
    default: *in = C; *out = C; break;
    }
}

const char *tt_lora_target_name(int target) {
    static const char *names[TT_LORA_N_TARGETS] = {"attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"};
    return target >= 0 && target < TT_LORA_N_TARGETS ? names[target] : "?";
}

float tt_lora_scale(const tt_model_config *c) { return c->lora_rank > 0 ? c->lora_alpha / (float)c->lora_rank : 0.0f; }

static int lora_n_targets(const tt_model_config *c) {
    int n = 0;
    for (int t = 0; t < TT_LORA_N_TARGETS; t++) n += (c->lora_targets >> t) & 1;
    return c->lora_rank > 0 ? n : 0;
}

int64_t tt_config_lora_count(const tt_model_config *c) {
    if (c->lora_rank <= 0) return 0;
    int64_t per = 0;
    for (int t = 0; t < TT_LORA_N_TARGETS; t++) {
        if (!(c->lora_targets & (1 << t))) continue;
        int64_t in, out;
        tt_lora_dims(c, t, &in, &out);
        per += (in + out) * c->lora_rank;
    }
    return per * c->n_layer;
}

int64_t tt_config_train_count(const tt_model_config *c) {
    return c->lora_rank > 0 ? tt_config_lora_count(c) : tt_config_param_count(c);
}

int tt_layout_lora_index(const tt_model_config *c, int layer, int target, tt_tensor_kind which) {
    if (c->lora_rank <= 0 || !(c->lora_targets & (1 << target)) || layer < 0 || layer >= c->n_layer) return -1;
    int k = 0;
    for (int t = 0; t < target; t++) k += (c->lora_targets >> t) & 1;
    return 4 + c->n_layer * TT_PER_LAYER + (layer * lora_n_targets(c) + k) * 2 + (which == TT_LORA_B);
}

int tt_layout_index(const tt_model_config *c, tt_tensor_kind kind, int layer) {
    if (kind == TT_WTE) return 0;
    if (kind == TT_WPE) return 1;
    if (kind == TT_LNFW) return 2 + c->n_layer * TT_PER_LAYER;
    if (kind == TT_LNFB) return 3 + c->n_layer * TT_PER_LAYER;
    return 2 + layer * TT_PER_LAYER + (int)(kind - TT_LN1W);
}

int tt_layout_build(const tt_model_config *c, tt_layout *lo, tt_status *st) {
    memset(lo, 0, sizeof *lo);
    TT_CHECK(tt_config_validate(c, st));
    int n = 4 + c->n_layer * TT_PER_LAYER;
    int n_all = n + 2 * c->n_layer * lora_n_targets(c);
    lo->t = calloc((size_t)n_all, sizeof *lo->t);
    if (!lo->t) return tt_fail(st, TT_ENOMEM, "out of memory (layout)");
    lo->n_tensors = n_all;
    lo->n_base = n;
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        tt_tensor_info *ti = &lo->t[i];
        if (i == 0) { ti->kind = TT_WTE; ti->layer = -1; }
        else if (i == 1) { ti->kind = TT_WPE; ti->layer = -1; }
        else if (i == n - 2) { ti->kind = TT_LNFW; ti->layer = -1; }
        else if (i == n - 1) { ti->kind = TT_LNFB; ti->layer = -1; }
        else { ti->kind = (tt_tensor_kind)(TT_LN1W + (i - 2) % TT_PER_LAYER); ti->layer = (i - 2) / TT_PER_LAYER; }
        shape_of(c, ti->kind, &ti->ndim, ti->shape);
        ti->numel = (size_t)ti->shape[0] * (size_t)(ti->ndim == 2 ? ti->shape[1] : 1);
        ti->offset = off;
        ti->decay = ti->ndim == 2 && c->lora_rank <= 0;
        ti->trainable = c->lora_rank <= 0;
        ti->lora_target = -1;
        off += ti->numel;
        if (ti->layer >= 0) snprintf(ti->name, sizeof ti->name, "h.%d.%s", ti->layer, kind_suffix(ti->kind));
        else snprintf(ti->name, sizeof ti->name, "%s", kind_suffix(ti->kind));
    }
    lo->base_total = off;
    for (int l = 0, i = n; l < c->n_layer; l++)
        for (int t = 0; t < TT_LORA_N_TARGETS; t++) {
            if (c->lora_rank <= 0 || !(c->lora_targets & (1 << t))) continue;
            int64_t in, out;
            tt_lora_dims(c, t, &in, &out);
            for (int ab = 0; ab < 2; ab++, i++) {
                tt_tensor_info *ti = &lo->t[i];
                ti->kind = ab ? TT_LORA_B : TT_LORA_A;
                ti->layer = l;
                ti->ndim = 2;
                ti->shape[0] = ab ? c->lora_rank : in;
                ti->shape[1] = ab ? out : c->lora_rank;
                ti->numel = (size_t)ti->shape[0] * (size_t)ti->shape[1];
                ti->offset = off;
                ti->decay = 0;
                ti->trainable = 1;
                ti->lora_target = t;
                off += ti->numel;
                snprintf(ti->name, sizeof ti->name, "h.%d.%s.lora_%c", l, tt_lora_target_name(t), ab ? 'b' : 'a');
            }
        }
    lo->total = off;
    return TT_OK;
}

void tt_layout_free(tt_layout *lo) {
    free(lo->t);
    memset(lo, 0, sizeof *lo);
}

size_t tt_layout_train0(const tt_layout *lo) { return lo->n_base < lo->n_tensors ? lo->base_total : 0; }

size_t tt_layout_train_count(const tt_layout *lo) { return lo->total - tt_layout_train0(lo); }

size_t tt_layout_offset(const tt_layout *lo, const tt_model_config *c, tt_tensor_kind kind, int layer) {
    return lo->t[tt_layout_index(c, kind, layer)].offset;
}

int64_t tt_config_param_count(const tt_model_config *c) {
    int64_t C = c->d_model, L = c->n_layer;
    int64_t per = 2 * C + 4 * (C * C + C) + 2 * C + (C * 4 * C + 4 * C) + (4 * C * C + C);
    return (int64_t)c->vocab * C + (int64_t)c->ctx * C + L * per + 2 * C + tt_config_lora_count(c);
}

double tt_config_train_bytes(const tt_model_config *c) {
    double P = (double)tt_config_param_count(c);
    double BT = (double)c->batch * c->ctx, C = c->d_model, L = c->n_layer, V = c->vocab;
    /* params; grads, m, v of the trainable ones (a LoRA model's frozen base has none) */
    double PT = (double)tt_config_train_count(c);
    double bytes = 4.0 * (P + 3.0 * PT);
    /* the logits: at most 64 MiB of rows at a time (the CPU backend's head runs in chunks) */
    double rows = fmin(BT, fmax(1.0, floor((double)(64 << 20) / (4.0 * V))));
    /* activations: per layer ~ 12 C-wide + 2 4C-wide rows per token, + stats */
    double act = L * BT * (12.0 * C + 8.0 * C + 4.0) + BT * (2.0 * C + 4.0) + 2.0 * rows * V;
    /* backward scratch: a few (BT, 4C) buffers */
    act += 3.0 * BT * 4.0 * C + 4.0 * C * C * 4.0;
    return bytes + 4.0 * act;
}

double tt_config_step_flops(const tt_model_config *c) {
    double C = c->d_model, L = c->n_layer, T = c->ctx, B = c->batch;
    double mm_params = L * 12.0 * C * C + (double)c->vocab * C;
    return 6.0 * mm_params * B * T + 6.0 * L * B * T * T * C;
}

int tt_dropout_check(const tt_model_config *c, float p, tt_status *st) {
    if (!(p >= 0.0f && p < 1.0f)) return tt_fail(st, TT_EINVAL, "dropout must be in [0, 1) (got %g)", (double)p);
    if (p == 0.0f) return TT_OK;
    const uint64_t lim = (uint64_t)1 << 32, B = (uint64_t)c->batch, T = (uint64_t)c->ctx;
    if (B * (uint64_t)c->n_head * T * T > lim || B * T * (uint64_t)c->d_model > lim)
        return tt_fail(st, TT_EINVAL,
                       "dropout needs batch*heads*ctx*ctx and batch*ctx*d-model at most 2^32 (the masks' 32-bit element "
                       "index); got batch %d, heads %d, ctx %d, d-model %d: lower the batch (use --accum) or the context",
                       c->batch, c->n_head, c->ctx, c->d_model);
    return TT_OK;
}
