/* hf.c — the Hugging Face GPT-2 folder (hf.h): the tensor writer shared with
 * the single-file export (checkpoint.c), the folder writer (config, weights,
 * generation config, byte-level tokenizer) and the reader of checkpoints and
 * folders that `--init-from`, `sample` and `eval` use. */
#define _FILE_OFFSET_BITS 64
#define _XOPEN_SOURCE 700
#include "hf.h"
#include "lora.h"

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint.h"
#include "io/fileio.h"
#include "io/json.h"
#include "io/safetensors.h"

uint64_t tt_hf_hash(const float *p, size_t n) {
    const unsigned char *b = (const unsigned char *)p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n * sizeof(float); i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* ---------------- the GPT-2 tensors ---------------- */

/* GPT-2 module names of the per-layer tensors (c_attn stands for q|k|v). */
static const struct {
    const char *suffix;
    tt_tensor_kind kind;
} gpt2_layer[] = {{"ln_1.weight", TT_LN1W},       {"ln_1.bias", TT_LN1B},       {"attn.c_attn.weight", TT_QW},
                  {"attn.c_attn.bias", TT_QB},    {"attn.c_proj.weight", TT_OW}, {"attn.c_proj.bias", TT_OB},
                  {"ln_2.weight", TT_LN2W},       {"ln_2.bias", TT_LN2B},       {"mlp.c_fc.weight", TT_FCW},
                  {"mlp.c_fc.bias", TT_FCB},      {"mlp.c_proj.weight", TT_PROJW}, {"mlp.c_proj.bias", TT_PROJB}};
#define N_GPT2_LAYER ((int)(sizeof gpt2_layer / sizeof gpt2_layer[0]))
static const struct {
    const char *name;
    tt_tensor_kind kind;
} gpt2_top[] = {{"wte.weight", TT_WTE}, {"wpe.weight", TT_WPE}, {"ln_f.weight", TT_LNFW}, {"ln_f.bias", TT_LNFB}};

/* Tensor k of the GPT-2 list (top tensors first, then layer by layer) */
typedef struct {
    char name[96];
    tt_tensor_kind kind;
    int layer;
    int64_t shape[2];
    int ndim;
} gpt2_tensor;

static int gpt2_count(const tt_model_config *c) { return 4 + c->n_layer * N_GPT2_LAYER; }

static void gpt2_at(const tt_model_config *c, const tt_layout *lo, const char *prefix, int k, gpt2_tensor *g) {
    if (k < 2 || k >= gpt2_count(c) - 2) { /* wte, wpe ... ln_f.weight, ln_f.bias */
        int i = k < 2 ? k : k - gpt2_count(c) + 4;
        g->kind = gpt2_top[i].kind;
        g->layer = 0;
        snprintf(g->name, sizeof g->name, "%s%s", prefix, gpt2_top[i].name);
    } else {
        int l = (k - 2) / N_GPT2_LAYER, j = (k - 2) % N_GPT2_LAYER;
        g->kind = gpt2_layer[j].kind;
        g->layer = l;
        snprintf(g->name, sizeof g->name, "%sh.%d.%s", prefix, l, gpt2_layer[j].suffix);
    }
    const tt_tensor_info *ti = &lo->t[tt_layout_index(c, g->kind, g->layer)];
    g->ndim = ti->ndim;
    g->shape[0] = ti->shape[0];
    g->shape[1] = ti->shape[1];
    if (g->kind == TT_QW) g->shape[1] = 3 * (int64_t)c->d_model; /* (C, 3C) */
    if (g->kind == TT_QB) g->shape[0] = 3 * (int64_t)c->d_model; /* (3C) */
}

typedef struct {
    const tt_model_config *c;
    const float *base;
    const char *path, *prefix, *config_json;
} st_job;

static int st_body(FILE *f, const void *ctx, tt_status *st) {
    const st_job *j = ctx;
    const tt_model_config *c = j->c;
    const int64_t C = c->d_model;
    tt_layout lo;
    TT_CHECK(tt_layout_build(c, &lo, st));
    tt_st_writer w;
    tt_st_writer_init(&w, j->path);
    gpt2_tensor g;
    int rc = TT_OK;
    for (int k = 0; k < gpt2_count(c) && !rc; k++) {
        gpt2_at(c, &lo, j->prefix, k, &g);
        rc = tt_st_writer_add(&w, g.name, TT_ST_F32, g.ndim, g.shape, st);
    }
    if (!rc) rc = tt_st_writer_meta(&w, "format", "pt", st);
    if (!rc && j->config_json) rc = tt_st_writer_meta(&w, "tinytrain_config", j->config_json, st);
    if (!rc) rc = tt_st_writer_begin(&w, f, st);
    for (int k = 0; k < gpt2_count(c) && !rc; k++) {
        gpt2_at(c, &lo, j->prefix, k, &g);
        const tt_tensor_info *ti = &lo.t[tt_layout_index(c, g.kind, g.layer)];
        if (g.kind == TT_QW) { /* row i = [q.w[i, :] | k.w[i, :] | v.w[i, :]] */
            const float *q = j->base + ti->offset, *kw = j->base + tt_layout_offset(&lo, c, TT_KW, g.layer),
                        *v = j->base + tt_layout_offset(&lo, c, TT_VALW, g.layer);
            for (int64_t i = 0; i < C && !rc; i++) {
                rc = tt_st_writer_data(&w, q + i * C, (size_t)C * sizeof(float), st);
                if (!rc) rc = tt_st_writer_data(&w, kw + i * C, (size_t)C * sizeof(float), st);
                if (!rc) rc = tt_st_writer_data(&w, v + i * C, (size_t)C * sizeof(float), st);
            }
        } else if (g.kind == TT_QB) { /* q.b, k.b, v.b follow each other in the layout */
            rc = tt_st_writer_data(&w, j->base + ti->offset, (size_t)C * sizeof(float), st);
            if (!rc) rc = tt_st_writer_data(&w, j->base + tt_layout_offset(&lo, c, TT_KB, g.layer), (size_t)C * sizeof(float), st);
            if (!rc) rc = tt_st_writer_data(&w, j->base + tt_layout_offset(&lo, c, TT_VALB, g.layer), (size_t)C * sizeof(float), st);
        } else {
            rc = tt_st_writer_data(&w, j->base + ti->offset, ti->numel * sizeof(float), st);
        }
    }
    if (!rc) rc = tt_st_writer_end(&w, st);
    tt_st_writer_free(&w);
    tt_layout_free(&lo);
    return rc;
}

int tt_hf_write_safetensors(const char *path, const tt_model_config *c, const float *base, const char *prefix,
                            const char *config_json, tt_status *st) {
    if (!tt_host_is_little_endian()) return tt_fail(st, TT_EUNSUP, "exports need a little-endian host");
    if (c->lora_rank) return tt_fail(st, TT_EINVAL, "export: merge the LoRA adapters first");
    st_job j = {c, base, path, prefix, config_json};
    return tt_write_atomic(path, st_body, &j, st);
}

/* ---------------- LoRA: the merged base ---------------- */

int tt_hf_merged(const tt_train_state *s, const float **w, float **owned, tt_status *st) {
    *owned = NULL;
    *w = s->params;
    if (s->cfg.lora_rank == 0) return TT_OK;
    /* a LoRA run hands on the GPT-2 its adapters form: W + alpha/R * A B */
    *owned = tt_alloc(s->layout.base_total * sizeof(float), st);
    if (!*owned) return TT_ENOMEM;
    int rc = tt_lora_merge(&s->cfg, s->params, *owned, st);
    if (rc) {
        free(*owned);
        *owned = NULL;
        return rc;
    }
    *w = *owned;
    return TT_OK;
}

/* ---------------- the folder's text files ---------------- */

/* shortest %g that reads back as the same float */
static void jw_float(tt_jw *w, float x) {
    char b[32];
    for (int p = 6; p <= 9; p++) {
        snprintf(b, sizeof b, "%.*g", p, (double)x);
        if (strtof(b, NULL) == x) break;
    }
    tt_jw_cstr(w, b);
}

static void special_ids(tt_jw *w, int eot) {
    if (eot >= 0) tt_jw_printf(w, "  \"bos_token_id\": %d,\n  \"eos_token_id\": %d,\n", eot, eot);
    else tt_jw_cstr(w, "  \"bos_token_id\": null,\n  \"eos_token_id\": null,\n");
}

static void config_text(tt_jw *w, const tt_model_config *c, float dropout, int eot) {
    tt_jw_printf(w, "{\n  \"architectures\": [\"GPT2LMHeadModel\"],\n  \"model_type\": \"gpt2\",\n"
                    "  \"activation_function\": \"%s\",\n  \"layer_norm_epsilon\": ", tt_act_name(c->act));
    if (c->ln_eps > 0.0f) jw_float(w, c->ln_eps);
    else tt_jw_cstr(w, "1e-05");
    tt_jw_cstr(w, ",\n");
    tt_jw_printf(w, "  \"n_positions\": %d,\n  \"n_ctx\": %d,\n  \"n_embd\": %d,\n  \"n_layer\": %d,\n  \"n_head\": %d,\n"
                    "  \"n_inner\": null,\n  \"vocab_size\": %d,\n", c->ctx, c->ctx, c->d_model, c->n_layer, c->n_head, c->vocab);
    const char *drop[3] = {"resid_pdrop", "embd_pdrop", "attn_pdrop"};
    for (int i = 0; i < 3; i++) {
        tt_jw_printf(w, "  \"%s\": ", drop[i]);
        jw_float(w, dropout);
        tt_jw_cstr(w, ",\n");
    }
    tt_jw_cstr(w, "  \"tie_word_embeddings\": true,\n");
    special_ids(w, eot);
    tt_jw_cstr(w, "  \"scale_attn_weights\": true,\n  \"scale_attn_by_inverse_layer_idx\": false,\n"
                  "  \"reorder_and_upcast_attn\": false,\n  \"initializer_range\": 0.02,\n  \"use_cache\": true\n}\n");
}

static void generation_text(tt_jw *w, const tt_hf_generation *sc, int eot) {
    tt_jw_cstr(w, "{\n");
    special_ids(w, eot);
    tt_jw_cstr(w, "  \"do_sample\": true,\n  \"temperature\": ");
    jw_float(w, sc->temperature);
    tt_jw_printf(w, ",\n  \"top_k\": %d,\n  \"top_p\": ", sc->top_k);
    jw_float(w, sc->top_p);
    tt_jw_cstr(w, "\n}\n");
}

/* GPT-2's byte-to-unicode table: the printable bytes '!'..'~', 0xA1..0xAC and
 * 0xAE..0xFF stand for themselves; the other 68 bytes, in increasing order,
 * for U+0100, U+0101, ... */
static unsigned byte_char(int b) {
    int n = 0;
    for (int x = 0; x < 256; x++) {
        int printable = (x >= '!' && x <= '~') || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE && x <= 0xFF);
        if (x == b) return printable ? (unsigned)b : 256u + (unsigned)n;
        if (!printable) n++;
    }
    return 0;
}

static void tokenizer_text(tt_jw *w) {
    static const char *const byte_level = "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": true, "
                                          "\"use_regex\": false}";
    tt_jw_printf(w, "{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n  \"added_tokens\": [],\n"
                    "  \"normalizer\": null,\n  \"pre_tokenizer\": %s,\n  \"post_processor\": null,\n  \"decoder\": %s,\n",
                 byte_level, byte_level);
    tt_jw_cstr(w, "  \"model\": {\n    \"type\": \"BPE\",\n    \"dropout\": null,\n    \"unk_token\": null,\n"
                  "    \"continuing_subword_prefix\": null,\n    \"end_of_word_suffix\": null,\n    \"fuse_unk\": false,\n"
                  "    \"vocab\": {");
    for (int b = 0; b < 256; b++) {
        unsigned u = byte_char(b);
        char s[3];
        size_t n = 1;
        if (u < 0x80) s[0] = (char)u;
        else s[0] = (char)(0xC0 | (u >> 6)), s[1] = (char)(0x80 | (u & 0x3F)), n = 2;
        tt_jw_cstr(w, b % 8 ? " " : "\n      ");
        tt_jw_string(w, s, n);
        tt_jw_printf(w, ": %d%s", b, b < 255 ? "," : "\n    },\n");
    }
    tt_jw_cstr(w, "    \"merges\": []\n  }\n}\n");
}

static void tokenizer_config_text(tt_jw *w, const tt_model_config *c) {
    tt_jw_printf(w, "{\n  \"tokenizer_class\": \"PreTrainedTokenizerFast\",\n  \"model_max_length\": %d,\n"
                    "  \"clean_up_tokenization_spaces\": false,\n  \"add_prefix_space\": false,\n"
                    "  \"added_tokens_decoder\": {}\n}\n", c->ctx);
}

/* ---------------- the folder writer ---------------- */

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}
static void remove_tree(const char *dir) { nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

/* 0: absent, 1: an empty folder, 2: a folder with entries, 3: not a folder */
static int dir_state(const char *dir) {
    struct stat sb;
    if (lstat(dir, &sb) != 0) return 0;
    if (!S_ISDIR(sb.st_mode)) return 3;
    DIR *d = opendir(dir);
    if (!d) return 2;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n ? 2 : 1;
}

static int write_text(const char *dir, const char *name, const tt_jw *w, tt_status *st) {
    if (w->oom) return tt_fail(st, TT_ENOMEM, "out of memory");
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return tt_write_atomic_buf(path, w->buf, w->len, st);
}

static void fsync_dir(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

static void fsync_parent(const char *path) {
    char p[4200];
    snprintf(p, sizeof p, "%s", path);
    char *sl = strrchr(p, '/');
    if (!sl) snprintf(p, sizeof p, ".");
    else if (sl == p) p[1] = 0;
    else *sl = 0;
    fsync_dir(p);
}

/* a BPE tokenizer's config, as transformers' GPT-2 folders have it: "<|endoftext|>" is bos, eos and unk */
static void bpe_tokenizer_config_text(tt_jw *w, const tt_model_config *c, const tt_tokenizer *t) {
    int32_t eot = tt_tokenizer_eot(t);
    size_t n = 0;
    const uint8_t *e = eot >= 0 ? tt_tokenizer_token(t, eot, &n) : NULL;
    tt_jw_cstr(w, "{\n  \"add_bos_token\": false,\n  \"add_prefix_space\": false,\n  \"added_tokens_decoder\": {");
    if (e) {
        tt_jw_printf(w, "\n    \"%d\": {\n      \"content\": ", (int)eot);
        tt_jw_string(w, (const char *)e, n);
        tt_jw_cstr(w, ",\n      \"lstrip\": false,\n      \"normalized\": true,\n      \"rstrip\": false,\n"
                      "      \"single_word\": false,\n      \"special\": true\n    }\n  ");
    }
    tt_jw_cstr(w, "},\n");
    const char *keys[3] = {"bos_token", "eos_token", "unk_token"};
    for (int i = 0; i < 3 && e; i++) {
        tt_jw_printf(w, "  \"%s\": ", keys[i]);
        tt_jw_string(w, (const char *)e, n);
        tt_jw_cstr(w, ",\n");
    }
    tt_jw_printf(w, "  \"clean_up_tokenization_spaces\": false,\n  \"errors\": \"replace\",\n  \"model_max_length\": %d,\n"
                    "  \"pad_token\": null,\n  \"tokenizer_class\": \"GPT2Tokenizer\"\n}\n", c->ctx);
}

static void special_tokens_map_text(tt_jw *w, const tt_tokenizer *t) {
    int32_t eot = tt_tokenizer_eot(t);
    size_t n = 0;
    const uint8_t *e = eot >= 0 ? tt_tokenizer_token(t, eot, &n) : NULL;
    tt_jw_cstr(w, "{");
    const char *keys[3] = {"bos_token", "eos_token", "unk_token"};
    for (int i = 0; i < 3 && e; i++) {
        tt_jw_printf(w, "%s\n  \"%s\": ", i ? "," : "", keys[i]);
        tt_jw_string(w, (const char *)e, n);
    }
    tt_jw_cstr(w, e ? "\n}\n" : "}\n");
}

/* a file of the tokenizer, byte for byte, into dir */
static int copy_into(const char *from, const char *dir, const char *name, tt_status *st) {
    int fd;
    uint64_t size;
    char *buf = NULL, path[4400];
    TT_CHECK(tt_open_regular(from, &fd, &size, st));
    if (tt_read_all(fd, size, &buf, st)) return tt_fail(st, st->code, "cannot read '%.300s'", from);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int rc = tt_write_atomic_buf(path, buf, (size_t)size, st);
    free(buf);
    return rc;
}

/* the files of the folder, into dir */
static int write_files(const char *dir, const tt_model_config *c, const float *w, float dropout, const tt_hf_generation *gen,
                       const tt_runtok *rt, tt_status *st) {
    char path[4400];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    int rc = tt_hf_write_safetensors(path, c, w, "transformer.", NULL, st);
    const tt_tokenizer *bpe = rt && rt->tok && tt_tokenizer_kind(rt->tok) == TT_TOK_BPE ? rt->tok : NULL;
    int eot = bpe ? (int)tt_tokenizer_eot(bpe) : -1;
    tt_jw j;
    tt_jw_init(&j);
    if (!rc) config_text(&j, c, dropout, eot), rc = write_text(dir, "config.json", &j, st);
    if (!rc) j.len = 0, generation_text(&j, gen, eot), rc = write_text(dir, "generation_config.json", &j, st);
    if (!bpe && c->vocab == TT_VOCAB) { /* byte-level: the tokenizer is ours */
        if (!rc) j.len = 0, tokenizer_text(&j), rc = write_text(dir, "tokenizer.json", &j, st);
        if (!rc) j.len = 0, tokenizer_config_text(&j, c), rc = write_text(dir, "tokenizer_config.json", &j, st);
    } else if (bpe) { /* the run's tokenizer: its files as given, GPT-2's special tokens */
        for (int i = 0; i < TT_RUNTOK_FILES && !rc; i++)
            if (rt->files[i][0]) rc = copy_into(rt->files[i], dir, tt_runtok_names[i], st);
        if (!rc) j.len = 0, bpe_tokenizer_config_text(&j, c, bpe), rc = write_text(dir, "tokenizer_config.json", &j, st);
        if (!rc) j.len = 0, special_tokens_map_text(&j, bpe), rc = write_text(dir, "special_tokens_map.json", &j, st);
    }
    tt_jw_free(&j);
    return rc;
}

int tt_hf_export_dir(const char *dir, const tt_train_state *s, const tt_hf_generation *gen, int force, tt_status *st) {
    return tt_hf_export_dir_tok(dir, s, gen, NULL, force, st);
}

int tt_hf_export_dir_tok(const char *dir_in, const tt_train_state *s, const tt_hf_generation *gen, const tt_runtok *rt,
                         int force, tt_status *st) {
    if (s->tok_kind && (!rt || !rt->tok || tt_tokenizer_kind(rt->tok) != TT_TOK_BPE || tt_tokenizer_hash(rt->tok) != s->tok_hash))
        return tt_fail(st, TT_EINVAL, "the model was trained with a BPE tokenizer (hash %016llx): export it with its tokenizer",
                       (unsigned long long)s->tok_hash);
    char dir[4096], tmp[4200], old[4200];
    size_t n = dir_in ? strlen(dir_in) : 0;
    if (n == 0 || n >= sizeof dir) return tt_fail(st, TT_EINVAL, "the output folder name is empty or too long");
    memcpy(dir, dir_in, n + 1);
    while (n > 1 && dir[n - 1] == '/') dir[--n] = 0;
    int state = dir_state(dir);
    if (state == 3) return tt_fail(st, TT_EINVAL, "'%s' exists and is not a folder", dir);
    if (state == 2) {
        snprintf(tmp, sizeof tmp, "%s/checkpoint.safetensors", dir);
        if (tt_checkpoint_probe(tmp) == TT_FILE_CHECKPOINT)
            return tt_fail(st, TT_EINVAL, "'%s' holds a training checkpoint; an export never replaces it (choose another folder)", dir);
        if (!force) return tt_fail(st, TT_EINVAL, "'%s' exists and is not empty; pass --force to replace it", dir);
    }
    const float *w;
    float *owned;
    TT_CHECK(tt_hf_merged(s, &w, &owned, st));
    tt_model_config c = s->cfg;
    c.lora_rank = c.lora_targets = 0;
    c.lora_alpha = 0.0f;
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", dir, (long)getpid());
    snprintf(old, sizeof old, "%s.old.%ld", dir, (long)getpid());
    int rc = TT_OK;
    if (mkdir(tmp, 0777) != 0) rc = tt_fail(st, TT_EIO, "cannot create '%s': %s", tmp, strerror(errno));
    else rc = write_files(tmp, &c, w, s->tc.dropout, gen, rt, st);
    if (!rc) {
        fsync_dir(tmp);
        if (state == 2) { /* --force: the old folder goes aside, the new one in, then the old one away */
            if (rename(dir, old) != 0) rc = tt_fail(st, TT_EIO, "cannot move '%s' aside: %s", dir, strerror(errno));
            else if (rename(tmp, dir) != 0) {
                rc = tt_fail(st, TT_EIO, "cannot rename '%s' to '%s': %s", tmp, dir, strerror(errno));
                (void)rename(old, dir);
            } else remove_tree(old);
        } else if (rename(tmp, dir) != 0) {
            rc = tt_fail(st, TT_EIO, "cannot rename '%s' to '%s': %s", tmp, dir, strerror(errno));
        }
    }
    if (rc) remove_tree(tmp);
    else fsync_parent(dir);
    tt_free(owned);
    return rc;
}

/* ---------------- reading ---------------- */

void tt_hf_weights_free(tt_hf_weights *w) {
    tt_free(w->params);
    memset(w, 0, sizeof *w);
}

int tt_hf_from_state(const tt_train_state *s, tt_hf_weights *out, tt_status *st) {
    memset(out, 0, sizeof *out);
    const float *w;
    float *owned;
    TT_CHECK(tt_hf_merged(s, &w, &owned, st));
    out->cfg = s->cfg;
    out->cfg.lora_rank = out->cfg.lora_targets = 0;
    out->cfg.lora_alpha = 0.0f;
    size_t n = (size_t)tt_config_param_count(&out->cfg);
    out->params = tt_alloc(n * sizeof(float), st);
    int rc = out->params ? TT_OK : TT_ENOMEM;
    if (!rc) {
        memcpy(out->params, w, n * sizeof(float));
        out->hash = tt_hf_hash(out->params, n);
        out->from_checkpoint = 1;
    }
    tt_free(owned);
    return rc;
}

static int load_checkpoint(const char *path, tt_hf_weights *out, tt_status *st) {
    tt_train_state s;
    TT_CHECK(tt_checkpoint_load(path, &s, st));
    int rc = tt_hf_from_state(&s, out, st);
    if (!rc) snprintf(out->file, sizeof out->file, "%s", path);
    tt_state_free(&s);
    return rc;
}

static int read_file(const char *path, char **buf, size_t *len, tt_status *st) {
    int fd;
    uint64_t size;
    TT_CHECK(tt_open_regular(path, &fd, &size, st));
    if (size > (1u << 22)) {
        close(fd);
        return tt_fail(st, TT_EFORMAT, "'%s' is larger than 4 MiB", path);
    }
    if (tt_read_all(fd, size, buf, st)) return tt_fail(st, st->code, "cannot read '%s'", path);
    *len = (size_t)size;
    return TT_OK;
}

/* config.json members: absent or null take the default (def < 0: required) */
static int cfg_int(const tt_json_doc *d, const tt_json_node *root, const char *key, int def, int *out, const char *file,
                   tt_status *st) {
    const tt_json_node *n = tt_json_get(d, root, key);
    int64_t v;
    if (!n || n->type == TT_JNULL) {
        if (def < 0) return tt_fail(st, TT_EFORMAT, "'%s' lacks \"%s\"", file, key);
        *out = def;
        return TT_OK;
    }
    if (tt_json_get_i64(n, &v) || v < 1 || v > (1 << 24))
        return tt_fail(st, TT_EFORMAT, "'%s': \"%s\" is not a positive integer", file, key);
    *out = (int)v;
    return TT_OK;
}

static int cfg_bool(const tt_json_doc *d, const tt_json_node *root, const char *key, int def, const char *file, int *out,
                    tt_status *st) {
    const tt_json_node *n = tt_json_get(d, root, key);
    *out = def;
    if (!n || n->type == TT_JNULL) return TT_OK;
    if (n->type != TT_JTRUE && n->type != TT_JFALSE) return tt_fail(st, TT_EFORMAT, "'%s': \"%s\" is not true or false", file, key);
    *out = n->type == TT_JTRUE;
    return TT_OK;
}

/* GPT-2's config.json into c (batch 1; ctx = n_positions, *n_pos too) */
static int parse_config(const char *file, tt_model_config *c, int *tied, int *n_pos, tt_status *st) {
    char *text = NULL;
    size_t len = 0;
    TT_CHECK(read_file(file, &text, &len, st));
    tt_json_doc d;
    tt_status js;
    tt_status_clear(&js);
    int rc = tt_json_parse(text, len, 100000, &d, &js);
    free(text);
    if (rc) return tt_fail(st, TT_EFORMAT, "'%s' is not valid JSON: %s", file, js.msg);
    const tt_json_node *root = tt_json_root(&d), *n;
    memset(c, 0, sizeof *c);
    int v = 0, inner = 0, scale = 1, by_layer = 0, cross = 0;
    double eps = 1e-5;
    const char *act = "gelu_new";
    if (root->type != TT_JOBJECT) rc = tt_fail(st, TT_EFORMAT, "'%s' is not a JSON object", file);
    else if (!(n = tt_json_get(&d, root, "model_type")) || n->type != TT_JSTRING || strcmp(n->str, "gpt2"))
        rc = tt_fail(st, TT_EFORMAT, "'%s': model_type is %s%.40s%s, not \"gpt2\"", file, n && n->type == TT_JSTRING ? "\"" : "",
                     n ? (n->type == TT_JSTRING ? n->str : "not a string") : "missing", n && n->type == TT_JSTRING ? "\"" : "");
    if (!rc) rc = cfg_int(&d, root, "vocab_size", -1, &v, file, st);
    c->vocab = v;
    if (!rc) rc = cfg_int(&d, root, "n_layer", -1, &c->n_layer, file, st);
    if (!rc) rc = cfg_int(&d, root, "n_embd", -1, &c->d_model, file, st);
    if (!rc) rc = cfg_int(&d, root, "n_head", -1, &c->n_head, file, st);
    if (!rc) rc = cfg_int(&d, root, "n_positions", -1, &c->ctx, file, st);
    *n_pos = c->ctx;
    if (!rc) rc = cfg_int(&d, root, "n_inner", 4 * c->d_model, &inner, file, st);
    if (!rc && inner != 4 * c->d_model)
        rc = tt_fail(st, TT_EFORMAT, "'%s': n_inner is %d; tinytrain's MLP is 4 x n_embd = %d", file, inner, 4 * c->d_model);
    if (!rc && (n = tt_json_get(&d, root, "activation_function"))) act = n->type == TT_JSTRING ? n->str : "?";
    if (!rc) {
        if (!strcmp(act, "gelu")) c->act = TT_ACT_GELU;
        else if (!strcmp(act, "gelu_new") || !strcmp(act, "gelu_pytorch_tanh")) c->act = TT_ACT_GELU_TANH;
        else
            rc = tt_fail(st, TT_EFORMAT, "'%s': activation_function is \"%.40s\"; tinytrain computes \"gelu\" (exact erf) and "
                                         "\"gelu_new\" / \"gelu_pytorch_tanh\" (the tanh form)", file, act);
    }
    if (!rc && (n = tt_json_get(&d, root, "layer_norm_epsilon")) && n->type != TT_JNULL && tt_json_get_f64(n, &eps))
        rc = tt_fail(st, TT_EFORMAT, "'%s': layer_norm_epsilon is not a number", file);
    if (!rc && !(eps > 0.0 && eps <= 0.1))
        rc = tt_fail(st, TT_EFORMAT, "'%s': layer_norm_epsilon is %g; tinytrain takes (0, 0.1]", file, eps);
    /* the default (1e-5, tinytrain's and GPT-2's) stays 0 in the config: the same model as tinytrain's own */
    if (!rc) c->ln_eps = (float)eps == TT_LN_EPS_DEFAULT ? 0.0f : (float)eps;
    if (!rc) rc = cfg_bool(&d, root, "tie_word_embeddings", 1, file, tied, st);
    if (!rc) rc = cfg_bool(&d, root, "scale_attn_weights", 1, file, &scale, st);
    if (!rc) rc = cfg_bool(&d, root, "scale_attn_by_inverse_layer_idx", 0, file, &by_layer, st);
    if (!rc) rc = cfg_bool(&d, root, "add_cross_attention", 0, file, &cross, st);
    if (!rc && (!scale || by_layer || cross))
        rc = tt_fail(st, TT_EFORMAT, "'%s': %s is not what tinytrain computes", file,
                     !scale ? "scale_attn_weights false" : by_layer ? "scale_attn_by_inverse_layer_idx true" : "cross-attention");
    tt_json_free(&d);
    tt_status cs;
    tt_status_clear(&cs);
    c->batch = 1;
    if (!rc && tt_config_validate(c, &cs)) rc = tt_fail(st, TT_EFORMAT, "'%s': %s", file, cs.msg);
    return rc;
}

static int is_buffer(const char *name, const char *prefix) {
    size_t pl = strlen(prefix), n = strlen(name);
    if (strncmp(name, prefix, pl) || strncmp(name + pl, "h.", 2)) return 0;
    return (n > 10 && !strcmp(name + n - 10, ".attn.bias")) || (n > 17 && !strcmp(name + n - 17, ".attn.masked_bias"));
}

static int load_tensors(const tt_st_reader *r, const char *file, int tied, int n_pos, tt_hf_weights *w, tt_status *st) {
    const tt_model_config *c = &w->cfg;
    const int64_t C = c->d_model;
    const char *prefix = tt_st_find(r, "transformer.wte.weight") ? "transformer." : "";
    if (!*prefix && !tt_st_find(r, "wte.weight"))
        return tt_fail(st, TT_EFORMAT, "'%s' holds no transformer.wte.weight (not a GPT-2 model)", file);
    tt_layout lo;
    TT_CHECK(tt_layout_build(c, &lo, st));
    char *used = calloc((size_t)r->n_tensors + 1, 1);
    const size_t block = (size_t)1 << 20; /* lm_head is compared to wte block by block */
    float *tmp = tt_alloc(TT_MAX((size_t)(3 * C * C), block) * sizeof(float), st);
    int rc = used && tmp ? TT_OK : tt_fail(st, TT_ENOMEM, "out of memory");
    gpt2_tensor g;
    tt_st_dtype dt = TT_ST_F32;
    for (int k = 0; k < gpt2_count(c) && !rc; k++) {
        gpt2_at(c, &lo, prefix, k, &g);
        if (g.kind == TT_WPE) g.shape[0] = n_pos; /* the file's rows; the model keeps the first ctx */
        const tt_st_tensor *t = tt_st_find(r, g.name);
        if (!t) {
            rc = tt_fail(st, TT_EFORMAT, "'%s' lacks tensor '%s'", file, g.name);
            break;
        }
        used[t - r->t] = 1;
        if (k == 0) dt = t->dtype;
        if (t->dtype != TT_ST_F32 && t->dtype != TT_ST_F16 && t->dtype != TT_ST_BF16)
            rc = tt_fail(st, TT_EFORMAT, "'%s': tensor '%s' is %s; tinytrain reads F32, F16 and BF16", file, g.name,
                         tt_st_dtype_name(t->dtype));
        else if (t->ndim != g.ndim || t->shape[0] != g.shape[0] || (g.ndim == 2 && t->shape[1] != g.shape[1]))
            rc = tt_fail(st, TT_EFORMAT, "'%s': tensor '%s' has the wrong shape for config.json (expected (%lld%s%lld))", file,
                         g.name, (long long)g.shape[0], g.ndim == 2 ? ", " : "", g.ndim == 2 ? (long long)g.shape[1] : 0LL);
        if (rc) break;
        const tt_tensor_info *ti = &lo.t[tt_layout_index(c, g.kind, g.layer)];
        if (g.kind == TT_QW || g.kind == TT_QB) { /* [q | k | v] along the output dimension */
            const int rows = g.kind == TT_QW ? (int)C : 1;
            rc = tt_st_read_f32(r, t, 0, (size_t)(rows * 3 * C), tmp, st);
            tt_tensor_kind part[3] = {g.kind, g.kind == TT_QW ? TT_KW : TT_KB, g.kind == TT_QW ? TT_VALW : TT_VALB};
            for (int p = 0; p < 3 && !rc; p++) {
                float *dst = w->params + tt_layout_offset(&lo, c, part[p], g.layer);
                for (int i = 0; i < rows; i++) memcpy(dst + (size_t)i * C, tmp + (size_t)i * 3 * C + (size_t)p * C, (size_t)C * sizeof(float));
            }
        } else { /* wpe: its first ctx rows (ti->numel) */
            rc = tt_st_read_f32(r, t, 0, ti->numel, w->params + ti->offset, st);
        }
    }
    int head = 0;
    for (int k = 0; k < r->n_tensors && !rc; k++) {
        const tt_st_tensor *t = &r->t[k];
        if (used[k] || is_buffer(t->name, prefix)) continue;
        if (strcmp(t->name, "lm_head.weight") != 0) {
            rc = tt_fail(st, TT_EFORMAT, "'%s': unexpected tensor '%.80s' (not part of a GPT-2 model tinytrain computes)", file, t->name);
            break;
        }
        const float *wte = w->params + tt_layout_offset(&lo, c, TT_WTE, 0);
        const size_t n = (size_t)c->vocab * (size_t)C;
        if ((t->dtype != TT_ST_F32 && t->dtype != TT_ST_F16 && t->dtype != TT_ST_BF16) || t->ndim != 2 ||
            t->shape[0] != c->vocab || t->shape[1] != C)
            rc = tt_fail(st, TT_EFORMAT, "'%s': lm_head.weight is not a (%d, %lld) F32, F16 or BF16 tensor", file, c->vocab,
                         (long long)C);
        for (size_t o = 0; o < n && !rc; o += block) {
            size_t m = TT_MIN(block, n - o);
            if (!(rc = tt_st_read_f32(r, t, o, m, tmp, st)) && memcmp(tmp, wte + o, m * sizeof(float)) != 0)
                rc = tt_fail(st, TT_EFORMAT, "'%s': lm_head.weight differs from the token embedding (an untied head); tinytrain "
                                             "models tie the output head to wte", file);
        }
        head = 1;
    }
    if (!rc && !tied && !head)
        rc = tt_fail(st, TT_EFORMAT, "'%s': tie_word_embeddings is false and there is no lm_head.weight", file);
    size_t total = (size_t)tt_config_param_count(c);
    for (size_t i = 0; i < total && !rc; i++)
        if (!isfinite(w->params[i])) rc = tt_fail(st, TT_EFORMAT, "'%s' holds a non-finite weight (element %zu)", file, i);
    if (!rc) w->dtype = tt_st_dtype_name(dt);
    free(used);
    tt_free(tmp);
    tt_layout_free(&lo);
    return rc;
}

/* a folder's model from its config.json: shape, ctx, batch (no weights) */
static int folder_shape(const char *dir, int ctx, tt_hf_weights *w, int *tied, tt_status *st) {
    char file[4200];
    int n_pos = 0;
    snprintf(file, sizeof file, "%s/config.json", dir);
    TT_CHECK(parse_config(file, &w->cfg, tied, &n_pos, st));
    /* ctx: the one asked for (at most n_positions: wpe keeps its first rows), else n_positions up to 1024 */
    if (ctx > n_pos)
        return tt_fail(st, TT_EINVAL, "'%s' has %d positions (n_positions); ctx %d is longer", dir, n_pos, ctx);
    w->cfg.ctx = ctx > 0 ? ctx : TT_MIN(n_pos, TT_HF_DEFAULT_CTX);
    w->n_positions = n_pos;
    /* batch: the preset of this shape, else the default preset's */
    w->cfg.batch = tt_preset_find("small")->cfg.batch;
    for (int i = 0; i < tt_n_presets; i++) {
        const tt_model_config *p = &tt_presets[i].cfg;
        if (p->n_layer == w->cfg.n_layer && p->d_model == w->cfg.d_model && p->n_head == w->cfg.n_head && p->ctx == w->cfg.ctx)
            w->cfg.batch = p->batch;
    }
    return TT_OK;
}

int tt_hf_describe(const char *dir, int ctx, tt_hf_weights *w, tt_status *st) {
    memset(w, 0, sizeof *w);
    int tied = 1;
    return folder_shape(dir, ctx, w, &tied, st);
}

static int load_folder(const char *dir, int ctx, tt_hf_weights *w, tt_status *st) {
    char file[4200];
    int tied = 1, n_pos;
    TT_CHECK(folder_shape(dir, ctx, w, &tied, st));
    n_pos = w->n_positions;
    snprintf(file, sizeof file, "%s/model.safetensors", dir);
    struct stat sb;
    if (stat(file, &sb) != 0) {
        char other[4200];
        snprintf(other, sizeof other, "%s/model.safetensors.index.json", dir);
        if (stat(other, &sb) == 0)
            return tt_fail(st, TT_EFORMAT, "'%s' holds a sharded model; save it as one file (save_pretrained(..., "
                                           "max_shard_size=\"100GB\"))", dir);
        snprintf(other, sizeof other, "%s/pytorch_model.bin", dir);
        if (stat(other, &sb) == 0)
            return tt_fail(st, TT_EFORMAT, "'%s' holds pytorch_model.bin only; save with save_pretrained(..., "
                                           "safe_serialization=True) for model.safetensors", dir);
        return tt_fail(st, TT_EFORMAT, "'%s' has no model.safetensors", dir);
    }
    tt_st_reader r;
    if (tt_st_open_file(&r, file, st)) {
        if (!strstr(st->msg, file)) {
            char m[sizeof st->msg];
            snprintf(m, sizeof m, "%s", st->msg);
            return tt_fail(st, st->code, "'%.300s': %.400s", file, m);
        }
        return st->code;
    }
    size_t n = (size_t)tt_config_param_count(&w->cfg);
    w->params = tt_calloc(n * sizeof(float), st);
    int rc = w->params ? load_tensors(&r, file, tied, n_pos, w, st) : TT_ENOMEM;
    tt_st_close(&r);
    snprintf(w->file, sizeof w->file, "%s", file);
    return rc;
}

int tt_hf_load(const char *path, tt_hf_weights *w, tt_status *st) { return tt_hf_load_ctx(path, 0, w, st); }

int tt_hf_load_ctx(const char *path, int ctx, tt_hf_weights *w, tt_status *st) {
    memset(w, 0, sizeof *w);
    struct stat sb;
    int rc;
    if (!path || !*path) return tt_fail(st, TT_EINVAL, "no path given");
    if (stat(path, &sb) != 0) return tt_fail(st, TT_EIO, "'%s': %s", path, strerror(errno));
    if (S_ISDIR(sb.st_mode)) {
        char f[4400];
        snprintf(f, sizeof f, "%s/config.json", path);
        if (stat(f, &sb) == 0) rc = load_folder(path, ctx, w, st);
        else {
            snprintf(f, sizeof f, "%s/checkpoint.safetensors", path);
            if (stat(f, &sb) == 0) rc = load_checkpoint(f, w, st);
            else rc = tt_fail(st, TT_EFORMAT, "'%s' holds neither config.json (a Hugging Face folder) nor checkpoint.safetensors "
                                              "(a tinytrain run)", path);
        }
    } else {
        rc = load_checkpoint(path, w, st);
    }
    if (rc) {
        tt_hf_weights_free(w);
        return rc;
    }
    if (!w->from_checkpoint) w->hash = tt_hf_hash(w->params, (size_t)tt_config_param_count(&w->cfg));
    return TT_OK;
}
