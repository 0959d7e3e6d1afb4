/* peft.c — the peft adapter folder of a LoRA model (format in peft.h). */
#include "peft.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fileio.h"
#include "json.h"
#include "safetensors.h"

/* "transformer.h.<l>." + the GPT-2 module of target t */
static void module_name(char *buf, size_t cap, int l, int t) {
    snprintf(buf, cap, "base_model.model.transformer.h.%d.%s", l, tt_lora_target_name(t));
}

typedef struct {
    const tt_model_config *cfg;
    const tt_layout *lo;
    const float *params;
} peft_job;

/* rows of the transpose of src (rows, cols): row j = src[:, j] */
static int put_transposed(tt_st_writer *w, const float *src, int64_t rows, int64_t cols, float *row, tt_status *st) {
    for (int64_t j = 0; j < cols; j++) {
        for (int64_t i = 0; i < rows; i++) row[i] = src[i * cols + j];
        TT_CHECK(tt_st_writer_data(w, row, (size_t)rows * sizeof(float), st));
    }
    return TT_OK;
}

static int tensors_body(FILE *f, const void *ctx, tt_status *st) {
    const peft_job *j = ctx;
    const tt_model_config *c = j->cfg;
    const int64_t R = c->lora_rank;
    tt_st_writer w;
    tt_st_writer_init(&w, "adapter_model.safetensors");
    char name[160], mod[128];
    int rc = TT_OK;
    for (int l = 0; l < c->n_layer && !rc; l++)
        for (int t = 0; t < TT_LORA_N_TARGETS && !rc; t++) {
            if (tt_layout_lora_index(c, l, t, TT_LORA_A) < 0) continue;
            int64_t in, out;
            tt_lora_dims(c, t, &in, &out);
            module_name(mod, sizeof mod, l, t);
            int64_t sa[2] = {R, in}, sb[2] = {out, R};
            snprintf(name, sizeof name, "%s.lora_A.weight", mod);
            rc = tt_st_writer_add(&w, name, TT_ST_F32, 2, sa, st);
            snprintf(name, sizeof name, "%s.lora_B.weight", mod);
            if (!rc) rc = tt_st_writer_add(&w, name, TT_ST_F32, 2, sb, st);
        }
    if (!rc) rc = tt_st_writer_meta(&w, "format", "pt", st);
    if (!rc) rc = tt_st_writer_begin(&w, f, st);
    float *row = malloc((size_t)(4 * c->d_model + 1) * sizeof *row);
    if (!rc && !row) rc = tt_fail(st, TT_ENOMEM, "out of memory (adapter export)");
    for (int l = 0; l < c->n_layer && !rc; l++)
        for (int t = 0; t < TT_LORA_N_TARGETS && !rc; t++) {
            int ia = tt_layout_lora_index(c, l, t, TT_LORA_A), ib = tt_layout_lora_index(c, l, t, TT_LORA_B);
            if (ia < 0) continue;
            int64_t in, out;
            tt_lora_dims(c, t, &in, &out);
            /* lora_A.weight (R, in) = A^T; lora_B.weight (out, R) = B^T */
            rc = put_transposed(&w, j->params + j->lo->t[ia].offset, in, R, row, st);
            if (!rc) rc = put_transposed(&w, j->params + j->lo->t[ib].offset, R, out, row, st);
        }
    if (!rc) rc = tt_st_writer_end(&w, st);
    free(row);
    tt_st_writer_free(&w);
    return rc;
}

/* target_modules: suffixes peft matches against module names ("c_proj"
 * would take both projections, so one projection alone is named in full) */
static void target_modules(tt_jw *j, int targets) {
    const int ap = targets >> TT_LORA_ATTN_C_PROJ & 1, mp = targets >> TT_LORA_MLP_C_PROJ & 1;
    int first = 1;
    tt_jw_raw(j, "[", 1);
#define MOD(s) (tt_jw_printf(j, "%s\"%s\"", first ? "" : ", ", s), first = 0)
    if (targets >> TT_LORA_C_ATTN & 1) MOD("c_attn");
    if (ap && mp) MOD("c_proj");
    else if (ap) MOD("attn.c_proj");
    else if (mp) MOD("mlp.c_proj");
    if (targets >> TT_LORA_C_FC & 1) MOD("c_fc");
#undef MOD
    tt_jw_raw(j, "]", 1);
}

int tt_export_peft(const char *dir, const tt_model_config *cfg, const float *params, const char *base_model,
                   tt_status *st) {
    if (cfg->lora_rank <= 0) return tt_fail(st, TT_EINVAL, "this model has no LoRA adapters (lora-rank 0)");
    if (!tt_host_is_little_endian()) return tt_fail(st, TT_EUNSUP, "safetensors needs a little-endian host");
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return tt_fail(st, TT_EIO, "cannot create folder '%s': %s", dir, strerror(errno));
    tt_layout lo;
    TT_CHECK(tt_layout_build(cfg, &lo, st));
    char path[4200];
    peft_job job = {cfg, &lo, params};
    snprintf(path, sizeof path, "%s/adapter_model.safetensors", dir);
    int rc = tt_write_atomic(path, tensors_body, &job, st);
    tt_jw j;
    tt_jw_init(&j);
    tt_jw_printf(&j, "{\n  \"peft_type\": \"LORA\",\n  \"task_type\": \"CAUSAL_LM\",\n  \"r\": %d,\n  \"lora_alpha\": ",
                 cfg->lora_rank);
    tt_jw_f32(&j, cfg->lora_alpha);
    tt_jw_cstr(&j, ",\n  \"lora_dropout\": 0.0,\n  \"target_modules\": ");
    target_modules(&j, cfg->lora_targets);
    tt_jw_cstr(&j, ",\n  \"fan_in_fan_out\": true,\n  \"bias\": \"none\",\n  \"modules_to_save\": null,\n"
                   "  \"init_lora_weights\": true,\n  \"layers_to_transform\": null,\n  \"layers_pattern\": null,\n"
                   "  \"inference_mode\": true,\n  \"revision\": null,\n  \"base_model_name_or_path\": ");
    if (base_model) tt_jw_string(&j, base_model, strlen(base_model));
    else tt_jw_cstr(&j, "null");
    tt_jw_cstr(&j, "\n}\n");
    snprintf(path, sizeof path, "%s/adapter_config.json", dir);
    if (!rc && j.oom) rc = tt_fail(st, TT_ENOMEM, "out of memory (adapter config)");
    if (!rc) rc = tt_write_atomic_buf(path, j.buf, j.len, st);
    tt_jw_free(&j);
    tt_layout_free(&lo);
    return rc;
}
