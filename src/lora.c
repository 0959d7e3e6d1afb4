/* lora.c — LoRA attach (a trained base + fresh adapters) and merge
 * (W += s * A B) on host parameter buffers (lora.h). */
#include "lora.h"

#include <stdlib.h>
#include <string.h>

#include "model.h"

tt_model_config tt_lora_base_config(const tt_model_config *cfg) {
    tt_model_config b = *cfg;
    b.lora_rank = 0;
    b.lora_targets = 0;
    b.lora_alpha = 0.0f;
    return b;
}

int tt_lora_attach(const tt_model_config *cfg, const float *base_params, uint64_t seed, float *out, tt_status *st) {
    if (cfg->lora_rank <= 0) return tt_fail(st, TT_EINVAL, "lora attach: the model has no LoRA adapters (lora-rank 0)");
    tt_layout lo;
    TT_CHECK(tt_layout_build(cfg, &lo, st));
    memcpy(out, base_params, lo.base_total * sizeof(float));
    tt_model_init_tensors(cfg, &lo, seed, out, NULL, lo.n_base, lo.n_tensors);
    tt_layout_free(&lo);
    return TT_OK;
}

void tt_lora_join(const tt_layout *lo, const float *base, const float *adapters, float *out) {
    memcpy(out, base, lo->base_total * sizeof(float));
    memcpy(out + lo->base_total, adapters, (lo->total - lo->base_total) * sizeof(float));
}

/* W (in, out_w) += s * A[:, :] B[:, col0 : col0 + out_w]; A (in, R), B (R, ldb) */
static void merge_one(float *W, int64_t in, int64_t out_w, const float *A, const float *B, int64_t ldb, int64_t col0,
                      int R, double s) {
    for (int64_t i = 0; i < in; i++)
        for (int64_t j = 0; j < out_w; j++) {
            double acc = 0.0;
            for (int r = 0; r < R; r++) acc += (double)A[i * R + r] * (double)B[(int64_t)r * ldb + col0 + j];
            W[i * out_w + j] = (float)((double)W[i * out_w + j] + s * acc);
        }
}

int tt_lora_merge(const tt_model_config *cfg, const float *params, float *out, tt_status *st) {
    tt_layout lo;
    TT_CHECK(tt_layout_build(cfg, &lo, st));
    memcpy(out, params, lo.base_total * sizeof(float));
    const double s = (double)cfg->lora_alpha / (double)(cfg->lora_rank > 0 ? cfg->lora_rank : 1);
    const int R = cfg->lora_rank;
    const int64_t C = cfg->d_model;
    for (int l = 0; l < cfg->n_layer && R > 0; l++)
        for (int t = 0; t < TT_LORA_N_TARGETS; t++) {
            int ia = tt_layout_lora_index(cfg, l, t, TT_LORA_A), ib = tt_layout_lora_index(cfg, l, t, TT_LORA_B);
            if (ia < 0) continue;
            const float *A = params + lo.t[ia].offset, *B = params + lo.t[ib].offset;
            int64_t in, ow;
            tt_lora_dims(cfg, t, &in, &ow);
            switch (t) {
            case TT_LORA_C_ATTN: {
                const tt_tensor_kind qkv[3] = {TT_QW, TT_KW, TT_VALW};
                for (int k = 0; k < 3; k++)
                    merge_one(out + tt_layout_offset(&lo, cfg, qkv[k], l), C, C, A, B, ow, k * C, R, s);
                break;
            }
            case TT_LORA_ATTN_C_PROJ: merge_one(out + tt_layout_offset(&lo, cfg, TT_OW, l), in, ow, A, B, ow, 0, R, s); break;
            case TT_LORA_C_FC: merge_one(out + tt_layout_offset(&lo, cfg, TT_FCW, l), in, ow, A, B, ow, 0, R, s); break;
            default: merge_one(out + tt_layout_offset(&lo, cfg, TT_PROJW, l), in, ow, A, B, ow, 0, R, s); break;
            }
        }
    tt_layout_free(&lo);
    return TT_OK;
}
