/* peft.c — the peft adapter folder of a LoRA model (format in peft.h):
 * writing it from a LoRA model, reading it onto a base model. */
#include "peft.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* ---- reading ------------------------------------------------------------------ */

/* one entry of target_modules -> TT_LORA_* bits (peft matches a module whose
 * name is the entry or ends with "." + entry), 0 for what tinytrain has not */
static int target_bits(const char *m) {
    static const struct {
        const char *name;
        int bits;
    } map[] = {{"c_attn", 1 << TT_LORA_C_ATTN},      {"attn.c_attn", 1 << TT_LORA_C_ATTN},
               {"c_proj", 1 << TT_LORA_ATTN_C_PROJ | 1 << TT_LORA_MLP_C_PROJ},
               {"attn.c_proj", 1 << TT_LORA_ATTN_C_PROJ}, {"mlp.c_proj", 1 << TT_LORA_MLP_C_PROJ},
               {"c_fc", 1 << TT_LORA_C_FC},          {"mlp.c_fc", 1 << TT_LORA_C_FC}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(m, map[i].name)) return map[i].bits;
    return 0;
}

/* a member that must be absent, null, or the given "empty" value */
static int is_null(const tt_json_node *n) { return !n || n->type == TT_JNULL; }
static int is_empty(const tt_json_node *n) {
    return is_null(n) || ((n->type == TT_JARRAY || n->type == TT_JOBJECT) && n->count == 0);
}

/* adapter_config.json into cfg's LoRA fields */
static int read_adapter_config(const char *dir, tt_model_config *cfg, tt_status *st) {
    char path[4200];
    snprintf(path, sizeof path, "%s/adapter_config.json", dir);
    int fd;
    uint64_t size;
    char *text = NULL;
    struct stat sb;
    if (stat(path, &sb) != 0)
        return tt_fail(st, TT_EIO, "'%.300s' has no adapter_config.json (not a peft adapter folder)", dir);
    if (tt_open_regular(path, &fd, &size, st)) return st->code;
    if (size > (64u << 20)) {
        close(fd);
        return tt_fail(st, TT_EFORMAT, "'%.300s' is %llu bytes: too large for an adapter config", path,
                       (unsigned long long)size);
    }
    if (tt_read_all(fd, size, &text, st)) return tt_fail(st, TT_EIO, "cannot read '%.300s'", path);
    tt_json_doc d;
    tt_status js;
    tt_status_clear(&js);
    int rc = tt_json_parse(text, (size_t)size, 100000, &d, &js);
    free(text);
    if (rc) return tt_fail(st, TT_EFORMAT, "'%.300s' is not valid JSON: %.300s", path, js.msg);
    const tt_json_node *root = tt_json_root(&d), *n;
    int64_t r = 0;
    double alpha = 0;
#define BAD(...) (rc = tt_fail(st, TT_EFORMAT, __VA_ARGS__))
    if (root->type != TT_JOBJECT) BAD("'%.300s' is not a JSON object", path);
    else if (!(n = tt_json_get(&d, root, "peft_type")) || n->type != TT_JSTRING || strcmp(n->str, "LORA"))
        BAD("'%.300s': peft_type is not \"LORA\" (tinytrain reads LoRA adapters)", path);
    else if (tt_json_get_i64(tt_json_get(&d, root, "r"), &r) || r < 1 || r > 65536)
        BAD("'%.300s': r is not a rank in 1..65536", path);
    else if (tt_json_get_f64(tt_json_get(&d, root, "lora_alpha"), &alpha) || !(alpha > 0 && alpha <= 1e6))
        BAD("'%.300s': lora_alpha is not a number in (0, 1e6]", path);
    /* fan_in_fan_out: any value — on GPT-2's Conv1D layers peft sets it true
     * itself, and lora_A (r, in), lora_B (out, r) mean the same either way */
    else if (!is_null(n = tt_json_get(&d, root, "bias")) && (n->type != TT_JSTRING || strcmp(n->str, "none")))
        BAD("'%.300s': bias is not \"none\" (tinytrain's adapters train no biases)", path);
    else if ((n = tt_json_get(&d, root, "use_rslora")) && n->type == TT_JTRUE)
        BAD("'%.300s': use_rslora is true (tinytrain scales adapters by alpha / r)", path);
    else if ((n = tt_json_get(&d, root, "use_dora")) && n->type == TT_JTRUE)
        BAD("'%.300s': use_dora is true (tinytrain reads plain LoRA)", path);
    else if (!is_empty(tt_json_get(&d, root, "layers_to_transform")))
        BAD("'%.300s': layers_to_transform is set (tinytrain's adapters cover every layer)", path);
    else if (!is_empty(tt_json_get(&d, root, "modules_to_save")))
        BAD("'%.300s': modules_to_save is set (tinytrain reads adapters only)", path);
    else if (!is_empty(tt_json_get(&d, root, "rank_pattern")) || !is_empty(tt_json_get(&d, root, "alpha_pattern")))
        BAD("'%.300s': rank_pattern / alpha_pattern is set (tinytrain has one rank and alpha)", path);
    int targets = 0;
    n = tt_json_get(&d, root, "target_modules");
    if (rc) {
    } else if (n && n->type == TT_JSTRING && !strcmp(n->str, "all-linear")) {
        targets = TT_LORA_ALL;
    } else if (!n || n->type != TT_JARRAY || n->count == 0) {
        BAD("'%.300s': target_modules is not a list of GPT-2 module names", path);
    } else {
        for (const tt_json_node *m = tt_json_first(&d, n); m && !rc; m = tt_json_sibling(&d, m)) {
            int b = m->type == TT_JSTRING ? target_bits(m->str) : 0;
            if (!b)
                BAD("'%.300s': target module %s%.100s%s is not one of c_attn, attn.c_proj, mlp.c_proj, c_proj, c_fc",
                    path, m->type == TT_JSTRING ? "\"" : "", m->type == TT_JSTRING ? m->str : "(not a string)",
                    m->type == TT_JSTRING ? "\"" : "");
            targets |= b;
        }
    }
#undef BAD
    tt_json_free(&d);
    if (rc) return rc;
    cfg->lora_rank = (int)r;
    cfg->lora_alpha = (float)alpha;
    cfg->lora_targets = targets;
    return TT_OK;
}

/* dst (rows, cols) = the transpose of src (cols, rows) */
static void transpose(const float *src, int64_t rows, int64_t cols, float *dst) {
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) dst[i * cols + j] = src[j * rows + i];
}

/* the adapters of adapter_model.safetensors into out (the layout's adapter
 * part, from lo->base_total) */
static int read_adapter_tensors(const char *dir, const tt_model_config *c, const tt_layout *lo, float *out,
                                tt_status *st) {
    char path[4200];
    snprintf(path, sizeof path, "%s/adapter_model.safetensors", dir);
    struct stat sb;
    if (stat(path, &sb) != 0)
        return tt_fail(st, TT_EIO, "'%.300s' has adapter_config.json but no adapter_model.safetensors", dir);
    tt_st_reader r;
    if (tt_st_open_file(&r, path, st)) {
        char m[sizeof st->msg];
        snprintf(m, sizeof m, "%s", st->msg);
        return tt_fail(st, st->code, "'%.300s': %.400s", path, m);
    }
    /* the prefix of peft's names: its wrapper's "base_model.model." over GPT2LMHeadModel's "transformer." */
    static const char *const prefixes[] = {"base_model.model.transformer.", "base_model.model."};
    const char *prefix = prefixes[0];
    for (int i = 0; i < r.n_tensors; i++)
        if (!strncmp(r.t[i].name, prefixes[1], strlen(prefixes[1])) &&
            strncmp(r.t[i].name, prefixes[0], strlen(prefixes[0])))
            prefix = prefixes[1];
    const int64_t R = c->lora_rank;
    char *used = calloc((size_t)r.n_tensors + 1, 1);
    float *tmp = malloc((size_t)(4 * c->d_model) * (size_t)R * sizeof *tmp);
    int rc = used && tmp ? TT_OK : tt_fail(st, TT_ENOMEM, "out of memory (adapter read)");
    char name[200];
    for (int l = 0; l < c->n_layer && !rc; l++)
        for (int t = 0; t < TT_LORA_N_TARGETS && !rc; t++)
            for (int ab = 0; ab < 2 && !rc; ab++) {
                int idx = tt_layout_lora_index(c, l, t, ab ? TT_LORA_B : TT_LORA_A);
                if (idx < 0) continue;
                int64_t in, outw;
                tt_lora_dims(c, t, &in, &outw);
                snprintf(name, sizeof name, "%sh.%d.%s.lora_%c.weight", prefix, l, tt_lora_target_name(t), ab ? 'B' : 'A');
                const tt_st_tensor *x = tt_st_find(&r, name);
                /* peft's shapes: lora_A.weight (r, in), lora_B.weight (out, r) */
                const int64_t rows = ab ? outw : R, cols = ab ? R : in;
                if (!x) {
                    rc = tt_fail(st, TT_EFORMAT, "'%.300s' has no tensor %s (adapter_config.json targets it)", path, name);
                } else if (x->ndim != 2 || x->shape[0] != rows || x->shape[1] != cols) {
                    char shape[64] = "(";
                    for (int k = 0; k < x->ndim && k < 4; k++)
                        snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%lld", k ? ", " : "",
                                 (long long)x->shape[k]);
                    rc = tt_fail(st, TT_EMISMATCH, "'%.300s': tensor %s is %s), this base model needs (%lld, %lld)", path,
                                 name, shape, (long long)rows, (long long)cols);
                } else if (!(rc = tt_st_read_f32(&r, x, 0, (size_t)(rows * cols), tmp, st))) {
                    used[x - r.t] = 1;
                    /* tinytrain's lora_a (in, R) = lora_A^T, lora_b (R, out) = lora_B^T */
                    transpose(tmp, cols, rows, out + (lo->t[idx].offset - lo->base_total));
                }
            }
    for (int i = 0; i < r.n_tensors && !rc; i++)
        if (!used[i]) {
            const char *nm = r.t[i].name;
            int l = -1;
            if (!strncmp(nm, prefix, strlen(prefix)) && sscanf(nm + strlen(prefix), "h.%d.", &l) == 1 && l >= c->n_layer)
                rc = tt_fail(st, TT_EMISMATCH, "'%.300s': tensor %.150s is for layer %d, this base model has %d layers", path,
                             nm, l, c->n_layer);
            else
                rc = tt_fail(st, TT_EFORMAT, "'%.300s': tensor %.150s is not an adapter of the modules adapter_config.json "
                                             "targets", path, nm);
        }
    free(used);
    free(tmp);
    tt_st_close(&r);
    return rc;
}

int tt_load_peft(const char *dir, const tt_model_config *base, tt_model_config *cfg, float **adapters, tt_status *st) {
    *adapters = NULL;
    if (base->lora_rank > 0) return tt_fail(st, TT_EINVAL, "a peft adapter goes on a base model without LoRA");
    if (!tt_host_is_little_endian()) return tt_fail(st, TT_EUNSUP, "safetensors needs a little-endian host");
    struct stat sb;
    if (stat(dir, &sb) != 0) return tt_fail(st, TT_EIO, "adapter folder '%.300s': %s", dir, strerror(errno));
    if (!S_ISDIR(sb.st_mode)) return tt_fail(st, TT_EINVAL, "'%.300s' is not a folder (a peft adapter is a folder)", dir);
    tt_model_config c = *base;
    TT_CHECK(read_adapter_config(dir, &c, st));
    tt_status vs;
    tt_status_clear(&vs);
    if (tt_config_validate(&c, &vs))
        return tt_fail(st, TT_EMISMATCH, "the adapter in '%.300s' does not fit this base model: %.300s", dir, vs.msg);
    tt_layout lo;
    TT_CHECK(tt_layout_build(&c, &lo, st));
    float *a = tt_alloc((lo.total - lo.base_total) * sizeof(float), st);
    int rc = a ? read_adapter_tensors(dir, &c, &lo, a, st) : st->code;
    tt_layout_free(&lo);
    if (rc) {
        tt_free(a);
        return rc;
    }
    *cfg = c;
    *adapters = a;
    return TT_OK;
}
