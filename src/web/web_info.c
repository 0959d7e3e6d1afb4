/* web_info.c — the engine's answers about a setup before a run (web_info.h):
 * presets, the option table, a setup's size and memory plan, a checkpoint's
 * header, a Hugging Face config's model and a text's identity, as JSON for
 * the page. Every number comes from the engine's own functions (config.h,
 * options.h, the CPU backend's plan, safetensors.h, hf.h, data.h); nothing
 * is computed here that the engine computes elsewhere. */
#include "web_info.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef __EMSCRIPTEN__
#include <emscripten.h>
#else
#define EMSCRIPTEN_KEEPALIVE
#endif

#include "config.h"
#include "cpu/backend_cpu.h"
#include "io/safetensors.h"
#include "tok/tokenizer.h"
#include "train/data.h"
#include "train/hf.h"
#include "train/runtok.h"
#include "train/train.h"
#include "train/trainer.h"

/* the answer of the last call (web_info.h: valid until the next one) */
static tt_jw out;

static tt_jw *begin(void) {
    if (!out.buf) tt_jw_init(&out);
    out.len = 0;
    out.oom = 0;
    return &out;
}

static const char *done(void) { return out.buf && !out.oom ? out.buf : "{\"error\":\"out of memory\"}"; }

static const char *fail(const char *msg) {
    tt_jw *j = begin();
    tt_jw_cstr(j, "{\"error\":");
    tt_jw_string(j, msg, strlen(msg));
    tt_jw_cstr(j, "}");
    return done();
}

/* a number, exact (doubles up to 2^53 are whole), null when not finite */
static void jnum(tt_jw *j, double x) {
    if (isfinite(x)) tt_jw_printf(j, "%.17g", x);
    else tt_jw_cstr(j, "null");
}

/* a float field as the engine stores it: the shortest text that reads back as the same float */
static void json_f32(tt_jw *j, float x) {
    if (isfinite(x)) tt_jw_printf(j, "%.9g", (double)x);
    else tt_jw_cstr(j, "null");
}

void tt_web_json_options(tt_jw *j, tt_opt_where group, const void *src) {
    char c[64];
    for (int i = 0; i < tt_option_count(); i++) {
        const tt_option *o = tt_option_at(i);
        if (o->where != group) continue;
        const char *p = (const char *)src + o->off;
        tt_jw_printf(j, ",\"%s\":", o->name);
        switch (o->type) {
        case TT_OPT_INT: tt_jw_printf(j, "%d", *(const int *)p); break;
        case TT_OPT_I64: tt_jw_printf(j, "%lld", (long long)*(const int64_t *)p); break;
        case TT_OPT_U64: tt_jw_printf(j, "%llu", (unsigned long long)*(const uint64_t *)p); break;
        case TT_OPT_F32: json_f32(j, *(const float *)p); break;
        case TT_OPT_F64: jnum(j, *(const double *)p); break;
        case TT_OPT_CHOICE: tt_jw_printf(j, "\"%s\"", tt_option_choice(o, *(const int *)p, c, sizeof c)); break;
        case TT_OPT_SET: tt_jw_printf(j, "\"%s\"", tt_option_set_text(o, *(const int *)p, c, sizeof c)); break;
        case TT_OPT_TEXT: tt_jw_cstr(j, "null"); break;
        }
    }
}

/* ---- presets and the option table -------------------------------------------------- */

EMSCRIPTEN_KEEPALIVE const char *tt_web_presets_json(void) {
    tt_jw *j = begin();
    tt_jw_cstr(j, "[");
    for (int i = 0; i < tt_n_presets; i++) {
        const tt_preset *p = &tt_presets[i];
        tt_jw_printf(j, "%s{\"name\":", i ? "," : "");
        tt_jw_string(j, p->name, strlen(p->name));
        tt_web_json_options(j, TT_OPT_MODEL, &p->cfg);
        tt_jw_printf(j, ",\"params\":%lld,\"step_flops\":", (long long)p->n_params);
        jnum(j, tt_config_step_flops(&p->cfg));
        tt_jw_cstr(j, ",\"lr\":"); /* the default learning rate for this size */
        json_f32(j, tt_default_lr(&p->cfg));
        tt_jw_cstr(j, "}");
    }
    tt_jw_cstr(j, "]");
    return done();
}

static const char *const type_names[] = {"int", "i64", "u64", "f32", "f64", "choice", "text", "set"};
static const char *const group_names[] = {"preset", "model", "train", "run", "tokenizer"};

/* "a|b|c" as a JSON array of strings */
static void json_choices(tt_jw *j, const char *choices) {
    tt_jw_cstr(j, "[");
    for (const char *p = choices; *p;) {
        const char *e = strchr(p, '|');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (p != choices) tt_jw_cstr(j, ",");
        tt_jw_string(j, p, n);
        p += n + (e ? 1 : 0);
    }
    tt_jw_cstr(j, "]");
}

EMSCRIPTEN_KEEPALIVE const char *tt_web_options_json(void) {
    tt_jw *j = begin();
    tt_jw_cstr(j, "[");
    for (int i = 0; i < tt_option_count(); i++) {
        const tt_option *o = tt_option_at(i);
        tt_jw_printf(j, "%s{\"name\":\"%s\",\"type\":\"%s\",\"group\":\"%s\",\"min\":", i ? "," : "", o->name,
                     type_names[o->type], group_names[o->where]);
        jnum(j, o->lo);
        tt_jw_cstr(j, ",\"max\":");
        jnum(j, o->hi);
        tt_jw_printf(j, ",\"min_open\":%s,\"max_open\":%s,\"default\":", o->lo_open ? "true" : "false",
                     o->hi_open ? "true" : "false");
        tt_jw_string(j, o->def, strlen(o->def));
        if (o->choices) {
            tt_jw_cstr(j, ",\"choices\":");
            json_choices(j, o->choices);
        }
        tt_jw_cstr(j, ",\"label\":");
        tt_jw_string(j, o->label, strlen(o->label));
        tt_jw_cstr(j, ",\"help\":");
        tt_jw_string(j, o->help, strlen(o->help));
        tt_jw_cstr(j, "}");
    }
    tt_jw_cstr(j, "]");
    return done();
}

/* ---- a setup, sized --------------------------------------------------------------- */

/* Bytes of the training state of a model (train.h, tt_state_alloc): params
 * (layout.total floats) and both AdamW moments of the trainable elements (a
 * LoRA model's adapters, every parameter otherwise). */
static double state_bytes(const tt_model_config *c) {
    return sizeof(float) * ((double)tt_config_param_count(c) + 2.0 * (double)tt_config_train_count(c));
}

/* The setup's model and size:
 *   {"preset", <model options>, "accum", "lr", "params", "lora_params",
 *    "step_flops" (one micro-batch, tt_config_step_flops), "tokens_per_step",
 *    "backend", "threads", "state_bytes", "cpu_plan_bytes", "train_bytes"}
 * train_bytes = cpu_plan_bytes + state_bytes, the memory of a CPU run
 * (`tinytrain info`'s train_bytes for the same threads); null where the plan
 * cannot be made. */
EMSCRIPTEN_KEEPALIVE const char *tt_web_plan(const char *opts) {
    tt_status st;
    tt_status_clear(&st);
    tt_options o;
    tt_options_init(&o);
    tt_model_config cfg;
    tt_train_config tc;
    if (tt_options_parse(&o, opts ? opts : "", &st) || tt_options_resolve(&o, NULL, NULL, &cfg, &tc, &st))
        return fail(st.msg);
    const char *preset = o.preset[0] ? o.preset : tt_option_find("preset")->def;
    int threads = o.run.threads;
    uint64_t plan = tt_backend_cpu_plan_bytes(&cfg, threads);
    double state = state_bytes(&cfg);
    tt_jw *j = begin();
    tt_jw_cstr(j, "{\"preset\":");
    tt_jw_string(j, preset, strlen(preset));
    tt_web_json_options(j, TT_OPT_MODEL, &cfg);
    tt_jw_printf(j, ",\"vocab\":%d,\"accum\":%d,\"lr\":", cfg.vocab, tc.accum);
    json_f32(j, tc.lr);
    tt_jw_printf(j, ",\"params\":%lld,\"lora_params\":%lld,\"step_flops\":", (long long)tt_config_param_count(&cfg),
                 (long long)tt_config_lora_count(&cfg));
    jnum(j, tt_config_step_flops(&cfg));
    tt_jw_cstr(j, ",\"tokens_per_step\":");
    jnum(j, (double)cfg.batch * cfg.ctx * tc.accum);
    tt_jw_printf(j, ",\"backend\":\"%s\",\"threads\":%d,\"state_bytes\":", tt_run_backend(&o.run), threads);
    jnum(j, state);
    tt_jw_cstr(j, ",\"cpu_plan_bytes\":");
    jnum(j, plan ? (double)plan : NAN);
    tt_jw_cstr(j, ",\"train_bytes\":");
    jnum(j, plan ? (double)plan + state : NAN);
    tt_jw_cstr(j, "}");
    return done();
}

/* ---- a checkpoint's header ------------------------------------------------------------ */

/* A config object of a file's metadata (the option table's names, vocab) as
 * options text, resolved and validated by the option table. */
static int config_from_json(const char *what, const char *text, tt_model_config *cfg, tt_status *st) {
    tt_json_doc d;
    tt_status js = {0};
    if (tt_json_parse(text, strlen(text), 256, &d, &js))
        return tt_fail(st, TT_EFORMAT, "metadata '%s' is not valid JSON: %s", what, js.msg);
    const tt_json_node *root = tt_json_root(&d);
    char opts[1024] = "";
    size_t k = 0;
    int rc = root->type == TT_JOBJECT ? TT_OK : tt_fail(st, TT_EFORMAT, "metadata '%s' is not a JSON object", what);
    for (const tt_json_node *c = rc ? NULL : tt_json_first(&d, root); c && !rc; c = tt_json_sibling(&d, c)) {
        const tt_option *opt = tt_option_find(c->key);
        if (strcmp(c->key, "vocab") == 0) {
            int64_t v;
            if (tt_json_get_i64(c, &v) || v != TT_VOCAB)
                rc = tt_fail(st, TT_EFORMAT, "metadata '%s': vocab must be %d (byte-level)", what, TT_VOCAB);
        } else if (!opt || opt->where != TT_OPT_MODEL) {
            rc = tt_fail(st, TT_EFORMAT, "metadata '%s' has unknown field '%.40s'", what, c->key);
        } else if ((c->type != TT_JNUMBER && c->type != TT_JSTRING) || strpbrk(c->str, " \t\n=") ||
                   k + strlen(opt->name) + c->len + 3 >= sizeof opts) {
            rc = tt_fail(st, TT_EFORMAT, "metadata '%s': bad value for '%s'", what, opt->name);
        } else {
            k += (size_t)snprintf(opts + k, sizeof opts - k, "%s=%s ", opt->name, c->str);
        }
    }
    tt_json_free(&d);
    if (rc) return rc;
    tt_options o;
    tt_options_init(&o);
    tt_train_config tc;
    tt_status os = {0};
    if (tt_options_parse(&o, opts, &os) || tt_options_resolve(&o, NULL, NULL, cfg, &tc, &os))
        return tt_fail(st, TT_EFORMAT, "metadata '%s': %s", what, os.msg);
    return TT_OK;
}

/* ,"key":value for a u64 metadata value (null when absent, an error when not a number) */
static int meta_u64(tt_jw *j, const tt_st_reader *r, const char *key, int hex, tt_status *st) {
    const char *v = tt_st_meta_get(r, key);
    uint64_t x;
    tt_jw_printf(j, ",\"%s\":", key);
    if (!v) {
        tt_jw_cstr(j, "null");
        return TT_OK;
    }
    if (tt_json_parse_u64(v, strlen(v), &x)) return tt_fail(st, TT_EFORMAT, "metadata '%s' is not a number", key);
    if (hex) tt_jw_printf(j, "\"%016llx\"", (unsigned long long)x);
    else tt_jw_printf(j, "%llu", (unsigned long long)x);
    return TT_OK;
}

/* {"format", "model": {<model options>, "vocab"}, "params", "base_opts",
 *  "step", "corpus_bytes", "corpus_hash" (16 hex digits), "init_from"}:
 * base_opts is the model a fine-tune from this file keeps (tt_web_init_from:
 * its shape; batch and LoRA come from the run's options), as options text.
 * step, corpus_* and init_from are null in a weights-only export. The file is
 * validated as the safetensors reader does (safetensors.h), not loaded. */
EMSCRIPTEN_KEEPALIVE const char *tt_web_checkpoint_info(const uint8_t *bytes, size_t n) {
    tt_status st;
    tt_status_clear(&st);
    tt_st_reader r;
    if (tt_st_open_mem(&r, bytes, n, &st)) return fail(st.msg);
    const char *fmt = tt_st_meta_get(&r, "format");
    int ckpt = fmt && strcmp(fmt, "tinytrain-checkpoint") == 0;
    const char *key = ckpt ? "config" : "tinytrain_config";
    const char *cfg_text = tt_st_meta_get(&r, key);
    tt_model_config cfg;
    int rc = cfg_text ? config_from_json(key, cfg_text, &cfg, &st)
                      : tt_fail(&st, TT_EFORMAT, "not a tinytrain checkpoint or export (no '%s' metadata)", key);
    tt_jw *j = begin();
    if (!rc) {
        tt_jw_cstr(j, "{\"format\":");
        tt_jw_string(j, fmt, strlen(fmt));
        tt_jw_cstr(j, ",\"model\":{\"vocab\":256");
        tt_web_json_options(j, TT_OPT_MODEL, &cfg);
        tt_jw_printf(j, "},\"params\":%lld,\"base_opts\":\"layers=%d d-model=%d heads=%d ctx=%d\"",
                     (long long)tt_config_param_count(&cfg), cfg.n_layer, cfg.d_model, cfg.n_head, cfg.ctx);
        rc = meta_u64(j, &r, "step", 0, &st);
    }
    if (!rc) rc = meta_u64(j, &r, "corpus_bytes", 0, &st);
    if (!rc) rc = meta_u64(j, &r, "corpus_hash", 1, &st);
    if (!rc) {
        const char *from = tt_st_meta_get(&r, "init_from");
        tt_jw_cstr(j, ",\"init_from\":");
        if (from) tt_jw_string(j, from, strlen(from));
        else tt_jw_cstr(j, "null");
        tt_jw_cstr(j, "}");
    }
    tt_st_close(&r);
    return rc ? fail(st.msg) : done();
}

/* ---- a Hugging Face folder's config ------------------------------------------------- */

/* {"format": "hf", "model", "params", "base_opts", "step": null, ...} as for
 * a checkpoint, from config.json read as tt_hf_load_ctx reads a folder's
 * (train/hf.h), through a folder of the module's memory file system. */
#define HF_CFG_DIR "/tmp/tt_web_hf_config"

EMSCRIPTEN_KEEPALIVE const char *tt_web_hf_config_info(const uint8_t *bytes, size_t n) {
    tt_status st;
    tt_status_clear(&st);
    mkdir(HF_CFG_DIR, 0700);
    FILE *f = fopen(HF_CFG_DIR "/config.json", "wb");
    int bad = !f || fwrite(bytes, 1, n, f) != n;
    if (f && fclose(f)) bad = 1;
    tt_hf_weights w;
    int rc = bad ? tt_fail(&st, TT_EIO, "cannot hold config.json") : tt_hf_describe(HF_CFG_DIR, 0, &w, &st);
    const tt_model_config cfg = w.cfg;
    remove(HF_CFG_DIR "/config.json");
    rmdir(HF_CFG_DIR);
    if (rc) return fail(st.msg);
    tt_jw *j = begin();
    tt_jw_printf(j, "{\"format\":\"hf\",\"model\":{\"vocab\":%d", cfg.vocab);
    tt_web_json_options(j, TT_OPT_MODEL, &cfg);
    tt_jw_printf(j, "},\"params\":%lld,\"base_opts\":\"layers=%d d-model=%d heads=%d ctx=%d\"", (long long)tt_config_param_count(&cfg),
                 cfg.n_layer, cfg.d_model, cfg.n_head, cfg.ctx);
    tt_jw_cstr(j, ",\"step\":null,\"corpus_bytes\":null,\"corpus_hash\":null,\"init_from\":null}");
    return done();
}

/* ---- a training text -------------------------------------------------------------- */

/* {"bytes", "hash"}: the text as tt_corpus_from_memory takes it for a model
 * of context ctx (the identity a checkpoint records: size and FNV-1a 64
 * hash, 16 hex digits), or its reason to refuse it. */
EMSCRIPTEN_KEEPALIVE const char *tt_web_text_info(const uint8_t *bytes, size_t n, int ctx) {
    tt_status st;
    tt_status_clear(&st);
    tt_corpus c;
    if (tt_corpus_from_memory(bytes, n, ctx, &c, &st)) return fail(st.msg);
    tt_jw *j = begin();
    tt_jw_printf(j, "{\"bytes\":%zu,\"hash\":\"%016llx\"}", c.n, (unsigned long long)c.hash);
    tt_corpus_free(&c);
    return done();
}

/* ---- a model folder ------------------------------------------------------------------- */

/* The largest heap of the web modules (cmake/wasm.cmake: -sMAXIMUM_MEMORY=4GB, wasm32). */
#define TT_WEB_HEAP_MAX 4294967296.0

/* One fine-tune of the folder's model (full or LoRA) as the engine sizes it:
 * the CPU backend's plan (cpu runs), the training state (params and the
 * trainable elements' two moments, train.h), and the loader's copy of the weights that is alive
 * while the state is built; host = what the module's heap must hold at the
 * peak. A WebGPU run keeps its buffers on the device (checked against the
 * adapter when the run is built), the state and the loader's copy on the host. */
static void model_run(tt_jw *j, const char *kind, const tt_model_config *c, int threads, int webgpu, double limit) {
    uint64_t plan = webgpu ? 0 : tt_backend_cpu_plan_bytes(c, threads);
    double state = state_bytes(c);
    tt_model_config base = *c;
    base.lora_rank = 0;
    double loader = 4.0 * (double)tt_config_param_count(&base);
    double host = (double)plan + state + loader;
    tt_jw_printf(j, ",\"%s\":{\"params\":%lld,\"trained_params\":%lld", kind, (long long)tt_config_param_count(c),
                 (long long)tt_config_train_count(c));
    tt_jw_cstr(j, ",\"cpu_plan_bytes\":");
    jnum(j, webgpu ? NAN : (double)plan);
    tt_jw_cstr(j, ",\"state_bytes\":");
    jnum(j, state);
    tt_jw_cstr(j, ",\"loader_bytes\":");
    jnum(j, loader);
    tt_jw_cstr(j, ",\"host_bytes\":");
    jnum(j, host);
    int fits = (webgpu || plan) && host <= limit;
    tt_jw_printf(j, ",\"fits\":%s", fits ? "true" : "false");
    if (!fits) {
        char why[300];
        if (!webgpu && !plan) /* tt_backend_cpu_plan_bytes: 0 past what this build addresses */
            snprintf(why, sizeof why, "a %s fine-tune on the CPU needs more memory than this browser engine can address (%.2f GB)",
                     c->lora_rank > 0 ? "LoRA" : "full", TT_WEB_HEAP_MAX / 1e9);
        else
            snprintf(why, sizeof why, "a %s fine-tune needs %.2f GB in the engine's memory; this browser engine has %.2f GB at most",
                     c->lora_rank > 0 ? "LoRA" : "full", host / 1e9, limit / 1e9);
        tt_jw_cstr(j, ",\"why\":");
        tt_jw_string(j, why, strlen(why));
    }
    tt_jw_cstr(j, "}");
}

/* A Hugging Face GPT-2 folder (or a run folder) in the module's file system,
 * described from config.json (train/hf.h: tt_hf_describe, the loader's own
 * checks; no weights read) with what a full and a LoRA fine-tune of it need
 * (as `tinytrain info FOLDER` counts them):
 *   {"model": {<model options>, "vocab"}, "n_positions", "activation",
 *    "tokenizer": "bpe" | "none", "tokenizer_files": [...],
 *    "full": {...}, "lora": {...}, "heap_limit"}
 * each run {"params", "trained_params", "cpu_plan_bytes", "state_bytes",
 * "loader_bytes", "host_bytes", "fits", "why"?}. opts: tt_web_options text
 * for batch, ctx, lora-rank / lora-targets / lora-alpha (LoRA default: rank
 * 8 on every projection), threads and backend. heap_limit: the bytes the
 * page allows the engine (0: the module's maximum, 4 GiB); more is refused. */
EMSCRIPTEN_KEEPALIVE const char *tt_web_model_info(const char *path, const char *opts, double heap_limit) {
    tt_status st;
    tt_status_clear(&st);
    tt_options o;
    tt_options_init(&o);
    if (tt_options_parse(&o, opts ? opts : "", &st)) return fail(st.msg);
    static const char *const shape[] = {"preset", "layers", "d-model", "heads"};
    for (size_t i = 0; i < sizeof shape / sizeof shape[0]; i++) tt_options_forget(&o, shape[i]);
    tt_hf_weights w;
    int ctx = tt_options_given(&o, "ctx") ? o.model.ctx : 0;
    if (tt_hf_describe(path, ctx, &w, &st)) return fail(st.msg);
    tt_options_forget(&o, "ctx");
    tt_model_config cfg;
    tt_train_config tc;
    if (tt_options_resolve(&o, &w.cfg, NULL, &cfg, &tc, &st)) return fail(st.msg);
    tt_model_config full = cfg, lora = cfg;
    full.lora_rank = 0;
    if (lora.lora_rank <= 0) lora.lora_rank = 8, lora.lora_targets = TT_LORA_ALL, lora.lora_alpha = 8.0f;
    if (tt_config_validate(&lora, &st)) return fail(st.msg);
    tt_runtok rt;
    int found = 0;
    if (tt_runtok_load_dir(path, &found, &rt, &st)) return fail(st.msg);
    int bpe = found && tt_tokenizer_kind(rt.tok) == TT_TOK_BPE;
    int32_t tv = bpe ? tt_tokenizer_vocab_size(rt.tok) : 0;
    tt_jw *j = begin();
    tt_jw_cstr(j, "{\"model\":{\"vocab\":");
    tt_jw_printf(j, "%d", full.vocab);
    tt_web_json_options(j, TT_OPT_MODEL, &full);
    tt_jw_printf(j, "},\"n_positions\":%d,\"activation\":\"%s\",\"tokenizer\":\"%s\",\"tokenizer_vocab\":%d,\"tokenizer_files\":[",
                 w.n_positions, tt_act_name(full.act), bpe ? "bpe" : "none", (int)tv);
    int k = 0;
    for (int i = 0; i < TT_RUNTOK_FILES; i++)
        if (found && rt.files[i][0]) tt_jw_printf(j, "%s\"%s\"", k++ ? "," : "", tt_runtok_names[i]);
    tt_jw_cstr(j, "]");
    tt_runtok_free(&rt);
    double limit = heap_limit > 0 && heap_limit < TT_WEB_HEAP_MAX ? heap_limit : TT_WEB_HEAP_MAX;
    int webgpu = o.run.backend == 2;
    tt_jw_printf(j, ",\"backend\":\"%s\",\"heap_limit\":", webgpu ? "webgpu" : "cpu");
    jnum(j, limit);
    model_run(j, "full", &full, o.run.threads, webgpu, limit);
    model_run(j, "lora", &lora, o.run.threads, webgpu, limit);
    tt_jw_cstr(j, "}");
    return done();
}
