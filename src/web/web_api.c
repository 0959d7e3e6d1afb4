/* web_api.c — the web app's C API (see web_api.h): options (the option
 * table, options.h), corpus, training-state lifetime, the training loop
 * (trainer.h's state machine, driven one event per call), checkpoints to and
 * from memory, token-by-token sampling and JSON read-outs for the page. It
 * owns no model code and no training rule: everything numeric goes through
 * trainer.h / backend.h / data.h / checkpoint.h / sample.h, and every run
 * is set up by train/run.h, the CLI's run setup. */
#include "web_api.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef __EMSCRIPTEN__
#include <emscripten.h>
#else
#define EMSCRIPTEN_KEEPALIVE
#endif

#include "backend.h"
#include "engine/backend_create.h"
#include "engine/profile.h"
#include "train/checkpoint.h"
#include "config.h"
#include "train/data.h"
#include "train/hf.h"
#include "io/json.h"
#include "train/options.h"
#include "train/run.h"
#include "train/runfile.h"
#include "cpu/sample.h"
#include "cpu/simd.h"
#include "io/peft.h"
#include "tok/tokenizer.h"
#include "train/train.h"
#include "train/trainer.h"
#include "web_info.h"
#include "web_inspect.h"
#include "web_sample.h"

#define TT_WEB_HF_MAX 12

struct tt_web {
    tt_status st;
    /* options */
    tt_options opts; /* as given (the run setup checks them), with the web's run defaults */
    char preset[32];
    tt_model_config cfg;
    tt_train_config tc;
    tt_run_config run;
    /* corpus: the text as bytes (and as WEB_TEXT in the module's file system);
     * a run with a BPE tokenizer trains on tcorpus, the text tokenized once */
    tt_corpus corpus;
    int have_corpus;
    tt_corpus tcorpus;
    int have_tcorpus;
    tt_runtok tok;   /* the run's tokenizer (its files kept in WEB_RUN, as the CLI keeps them in its run folder) */
    int have_tok;
    /* training */
    tt_train_state s;
    int have_state;
    tt_backend *be;
    tt_loop *loop;
    tt_progress p;   /* the last event */
    /* outputs */
    uint8_t *ckpt;
    size_t ckpt_len;
    int hf_n; /* the Hugging Face folder's files (tt_web_export_hf) */
    char hf_name[TT_WEB_HF_MAX][64];
    uint8_t *hf_data[TT_WEB_HF_MAX];
    size_t hf_len[TT_WEB_HF_MAX];
    tt_jw json;
    char info[256];
    /* sampling */
    tt_web_sampler *sampler;
    const uint8_t *piece; /* the bytes of the last token sampled */
    size_t piece_len;
    uint8_t piece_byte;
};

static int werr(tt_web *w, int code, const char *msg) { return tt_fail(&w->st, code, "%s", msg); }
static void hf_clear(tt_web *w);

static void clear_progress(tt_web *w) {
    memset(&w->p, 0, sizeof w->p);
    w->p.loss = w->p.grad_norm = w->p.lr = w->p.val_loss = NAN;
}

EMSCRIPTEN_KEEPALIVE tt_web *tt_web_new(void) {
    tt_web *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    tt_jw_init(&w->json);
    if (tt_web_options(w, "preset=tiny steps=200")) {
        free(w);
        return NULL;
    }
    clear_progress(w);
    w->s.best_val = INFINITY;
    w->s.best_val_step = -1;
    return w;
}

static void drop_run(tt_web *w) {
    if (w->sampler) tt_web_sampler_free(w->sampler);
    w->sampler = NULL;
    tt_loop_destroy(w->loop);
    w->loop = NULL;
    tt_backend_destroy(w->be);
    w->be = NULL;
    if (w->have_state) tt_state_free(&w->s);
    w->have_state = 0;
    if (w->have_tcorpus) tt_corpus_free(&w->tcorpus);
    w->have_tcorpus = 0;
    if (w->have_tok) tt_runtok_free(&w->tok);
    w->have_tok = 0;
    clear_progress(w);
}

EMSCRIPTEN_KEEPALIVE void tt_web_free(tt_web *w) {
    if (!w) return;
    drop_run(w);
    if (w->have_corpus) tt_corpus_free(&w->corpus);
    free(w->ckpt);
    hf_clear(w);
    tt_jw_free(&w->json);
    free(w);
}

EMSCRIPTEN_KEEPALIVE const char *tt_web_error(tt_web *w) { return w ? w->st.msg : "out of memory"; }

/* ---- options --------------------------------------------------------------- */

/* the web's run defaults (web_api.h) */
static void web_options_init(tt_options *o) {
    tt_options_init(o);
    o->run.backend = 1; /* cpu, unless given */
    o->run.save_every = 200;
    o->run.save_seconds = 10;
}

EMSCRIPTEN_KEEPALIVE int tt_web_options(tt_web *w, const char *opts) {
    tt_status_clear(&w->st);
    tt_options o;
    web_options_init(&o);
    TT_CHECK(tt_options_parse(&o, opts, &w->st));
    tt_model_config cfg;
    tt_train_config tc;
    TT_CHECK(tt_options_resolve(&o, NULL, NULL, &cfg, &tc, &w->st));
    snprintf(w->preset, sizeof w->preset, "%s", o.preset[0] ? o.preset : tt_option_find("preset")->def);
    w->opts = o;
    w->cfg = cfg;
    w->tc = tc;
    w->run = o.run;
    return TT_OK;
}

/* ---- run files (runfile.h: the format of `tinytrain train --config`) ---------- */

EMSCRIPTEN_KEEPALIVE const char *tt_web_runfile_read(tt_web *w, const char *name, const char *json) {
    tt_status_clear(&w->st);
    tt_options o;
    web_options_init(&o);
    char data[1024]; /* "data" is read and left to the page: the corpus is the one it holds */
    tt_model_config cfg;
    tt_train_config tc;
    if (tt_runfile_apply(&o, json, strlen(json), name && *name ? name : "run file", NULL, data, sizeof data, &w->st) ||
        tt_options_resolve(&o, NULL, NULL, &cfg, &tc, &w->st))
        return NULL;
    w->json.len = 0;
    w->json.oom = 0;
    tt_jw_cstr(&w->json, "");
    tt_runfile_given_text(&o, &w->json);
    if (w->json.oom) return tt_fail(&w->st, TT_ENOMEM, "out of memory"), NULL;
    return w->json.buf;
}

EMSCRIPTEN_KEEPALIVE const char *tt_web_runfile_write(tt_web *w, const char *opts) {
    tt_status_clear(&w->st);
    tt_options o;
    web_options_init(&o);
    tt_model_config cfg;
    tt_train_config tc;
    if (tt_options_parse(&o, opts, &w->st) || tt_options_resolve(&o, NULL, NULL, &cfg, &tc, &w->st)) return NULL;
    w->json.len = 0;
    w->json.oom = 0;
    tt_runfile_write(&w->json, &cfg, &tc, &o.run, NULL);
    if (w->json.oom) return tt_fail(&w->st, TT_ENOMEM, "out of memory"), NULL;
    return w->json.buf;
}

/* ---- corpus ------------------------------------------------------------------ */

/* The module's file system (MEMFS in the browser): the text, the token
 * cache, the run folder (its tokenizer files) and what the page writes there
 * (a model folder's files, a run folder to resume). */
#define WEB_DIR "/tt_web"
#define WEB_TEXT WEB_DIR "/text.txt"
#define WEB_CACHE WEB_DIR "/cache"
#define WEB_RUN WEB_DIR "/run"

static int ensure_dir(tt_web *w, const char *d) {
    if (mkdir(d, 0777) != 0 && errno != EEXIST) return tt_fail(&w->st, TT_EIO, "cannot create '%s': %s", d, strerror(errno));
    return TT_OK;
}

/* the text as WEB_TEXT, for tt_corpus_open (a BPE run tokenizes it once into WEB_CACHE); the old token cache goes */
static int text_to_file(tt_web *w, const uint8_t *bytes, size_t n) {
    TT_CHECK(ensure_dir(w, WEB_DIR));
    TT_CHECK(ensure_dir(w, WEB_CACHE));
    DIR *d = opendir(WEB_CACHE);
    struct dirent *e;
    char p[400];
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.' && snprintf(p, sizeof p, "%s/%s", WEB_CACHE, e->d_name) < (int)sizeof p) unlink(p);
    if (d) closedir(d);
    FILE *f = fopen(WEB_TEXT, "wb");
    int ok = f && fwrite(bytes, 1, n, f) == n;
    if (f && fclose(f) != 0) ok = 0;
    return ok ? TT_OK : werr(w, TT_EIO, "cannot keep the text in the module's file system");
}

EMSCRIPTEN_KEEPALIVE int tt_web_corpus(tt_web *w, const uint8_t *bytes, size_t n) {
    tt_status_clear(&w->st);
    tt_corpus c;
    memset(&c, 0, sizeof c);
    TT_CHECK(tt_corpus_from_memory(bytes, n, w->cfg.ctx, &c, &w->st));
    int rc = text_to_file(w, bytes, n);
    if (rc) {
        tt_corpus_free(&c);
        return rc;
    }
    if (w->have_corpus) tt_corpus_free(&w->corpus);
    w->corpus = c;
    w->have_corpus = 1;
    return TT_OK;
}

/* ---- run lifetime -------------------------------------------------------------- */

/* The loop of the run in w->s on w->be, held: tt_web_hold(w, 0) starts it */
static int make_loop(tt_web *w) {
    tt_trainer t;
    memset(&t, 0, sizeof t);
    t.s = &w->s;
    t.corpus = w->have_tcorpus ? &w->tcorpus : &w->corpus;
    t.be = w->be;
    t.save_every = w->run.save_every;
    t.save_seconds = w->run.save_seconds;
    t.no_pipeline = !w->run.pipeline;
    TT_CHECK(tt_loop_create(&t, &w->loop, &w->st));
    tt_loop_hold(w->loop, TT_HOLD_SAVE);
    snprintf(w->info, sizeof w->info, "%s", w->be->desc.device);
    return TT_OK;
}

/* A run from a source through the run setup (train/run.h) on the corpus
 * held, options o. keep: the current run stays until the source passed its
 * checks (a load that fails leaves it as it was); else it goes first (a new
 * run). */
static int open_run(tt_web *w, const tt_options *o, const tt_run_source *src, int keep) {
    if (!keep) drop_run(w);
    if (!w->have_corpus) return werr(w, TT_EINVAL, "no corpus loaded");
    tt_run *r = tt_calloc(sizeof *r, &w->st);
    if (!r) return TT_ENOMEM;
    int rc = tt_run_plan(r, o, src, &w->st);
    /* the text in the run's tokens: a BPE tokenizer's run reads it as the CLI does (tt_corpus_open) */
    int bpe = !rc && r->tok.tok && tt_tokenizer_kind(r->tok.tok) == TT_TOK_BPE;
    tt_corpus tc;
    memset(&tc, 0, sizeof tc);
    if (bpe) rc = tt_corpus_open(WEB_TEXT, r->tok.tok, WEB_CACHE, r->cfg.ctx, NULL, NULL, &tc, &w->st);
    if (!rc) rc = tt_run_open(r, bpe ? &tc : &w->corpus, &w->st);
    if (!rc) {
        drop_run(w);
        rc = tt_run_make_backend(r, &w->st);
    }
    /* the tokenizer's files in the run folder, as `tinytrain train` keeps them beside its checkpoint */
    if (!rc && bpe) rc = ensure_dir(w, WEB_RUN);
    if (!rc && bpe) rc = tt_runtok_save(&r->tok, WEB_RUN, &w->st);
    if (!rc) { /* the state, the backend, the tokenizer and the tokens are the handle's from here */
        w->s = r->s;
        memset(&r->s, 0, sizeof r->s);
        w->have_state = 1;
        w->be = r->be;
        r->be = NULL;
        w->tok = r->tok;
        memset(&r->tok, 0, sizeof r->tok);
        w->have_tok = 1;
        if (bpe) {
            w->tcorpus = tc;
            memset(&tc, 0, sizeof tc);
            w->have_tcorpus = 1;
        }
        w->cfg = w->s.cfg;
        w->tc = w->s.tc;
        rc = make_loop(w);
    }
    if (bpe) tt_corpus_free(&tc);
    tt_run_close(r);
    tt_free(r);
    if (rc) {
        tt_status keep_st = w->st;
        drop_run(w);
        w->st = keep_st;
    }
    return rc;
}

/* The run's label (the state's "preset", the download's name) from the
 * model's real shape: the preset of that shape (whatever the batch), else
 * "custom". */
static void label_run(tt_web *w) {
    const char *preset = "custom";
    tt_model_config c = w->s.cfg;
    for (int i = 0; i < tt_n_presets; i++) {
        c.batch = tt_presets[i].cfg.batch;
        const char *p = tt_preset_of(&c);
        if (p && strcmp(p, tt_presets[i].name) == 0) {
            preset = p;
            break;
        }
    }
    snprintf(w->preset, sizeof w->preset, "%s", preset);
}

EMSCRIPTEN_KEEPALIVE int tt_web_init(tt_web *w) {
    tt_status_clear(&w->st);
    const tt_run_source src = {.kind = TT_RUN_FRESH};
    return open_run(w, &w->opts, &src, 0);
}

/* Fine-tuning: a new run (step 0, fresh AdamW state and schedule, the
 * options and corpus given) that starts from the weights of a checkpoint in
 * memory (a LoRA checkpoint: its merged weights). The model's shape is the
 * checkpoint's: the page's preset and shape fields are not asked for; batch
 * and LoRA come from the options (LoRA: the checkpoint's weights become the
 * frozen base, the adapters start fresh). */
static int init_from(tt_web *w, const tt_run_source *src, int keep_ctx) {
    tt_status_clear(&w->st);
    tt_options o = w->opts;
    static const char *const shape[] = {"preset", "layers", "d-model", "heads", "ctx"};
    for (size_t i = 0; i < sizeof shape / sizeof shape[0]; i++)
        if (!(keep_ctx && i == 4)) tt_options_forget(&o, shape[i]);
    TT_CHECK(open_run(w, &o, src, 0));
    label_run(w); /* the run is the source's model, not the options' preset */
    return TT_OK;
}

EMSCRIPTEN_KEEPALIVE int tt_web_init_from(tt_web *w, const uint8_t *bytes, size_t n, const char *name) {
    const tt_run_source src = {.kind = TT_RUN_INIT_FROM, .bytes = bytes, .len = n, .name = name};
    return init_from(w, &src, 0);
}

/* The same from a folder in the module's file system: a Hugging Face GPT-2
 * folder (config.json, model.safetensors and its tokenizer files, written
 * there by the page: a model picked or linked, or a tinytrain export given to
 * "Fine-tune from") or a run folder, read by the CLI's loader (train/hf.h,
 * runtok.h). keep_ctx: a ctx given in the options is kept (a picked model
 * trains at any ctx up to its n_positions, default min(n_positions, 1024));
 * 0: the folder's own ctx, as for a checkpoint. */
EMSCRIPTEN_KEEPALIVE int tt_web_init_from_path(tt_web *w, const char *path, const char *name, int keep_ctx) {
    const tt_run_source src = {.kind = TT_RUN_INIT_FROM, .path = path, .name = name && *name ? name : NULL};
    return init_from(w, &src, keep_ctx);
}

/* A saved run, resumed as it was saved: the checkpoint's model and training
 * options (the handle's run options: backend, threads, save cadence). force:
 * go on with the corpus held even if the checkpoint was trained on another. */
static int load(tt_web *w, const tt_run_source *src) {
    tt_status_clear(&w->st);
    tt_options o;
    tt_options_init(&o);
    o.run = w->opts.run;
    TT_CHECK(open_run(w, &o, src, 1));
    label_run(w);
    if (w->s.step > 0) w->p.loss = w->s.loss_hist[w->s.step - 1];
    if (w->s.n_val > 0) w->p.val_loss = w->s.val_loss[w->s.n_val - 1];
    return TT_OK;
}

EMSCRIPTEN_KEEPALIVE int tt_web_load(tt_web *w, const uint8_t *bytes, size_t n, int force) {
    const tt_run_source src = {.kind = TT_RUN_RESUME, .bytes = bytes, .len = n, .any_text = force, .open_done = 1};
    return load(w, &src);
}

/* A run folder in the module's file system (checkpoint.safetensors and the
 * tokenizer files beside it, as `tinytrain train` writes them), resumed: the
 * way a checkpoint of a BPE tokenizer is loaded (its tokenizer is read from
 * the folder and checked by hash). */
EMSCRIPTEN_KEEPALIVE int tt_web_load_path(tt_web *w, const char *path, int force) {
    const tt_run_source src = {.kind = TT_RUN_RESUME, .path = path, .any_text = force, .open_done = 1};
    return load(w, &src);
}

EMSCRIPTEN_KEEPALIVE int tt_web_set_steps(tt_web *w, double total) {
    tt_status_clear(&w->st);
    if (!w->loop) return werr(w, TT_EINVAL, "no training run");
    if (!(total >= 1 && total <= 1e12)) return werr(w, TT_EINVAL, "steps must be in 1..1e12");
    TT_CHECK(tt_loop_set_steps(w->loop, (int64_t)total, &w->st));
    w->tc.steps = w->s.tc.steps;
    return TT_OK;
}

/* ---- the loop ---------------------------------------------------------------------- */

/* The state as .safetensors bytes in w->ckpt (written through a file of the
 * module's memory file system: the checkpoint writer is file based). */
#define CKPT_TMP "/tmp/tt_web.safetensors"

/* The whole file at path into a malloc'ed buffer; the file is removed. */
static int take_file(tt_web *w, const char *path, uint8_t **out, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return werr(w, TT_EIO, "cannot reopen a file the engine wrote");
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    uint8_t *buf = n > 0 && fseek(f, 0, SEEK_SET) == 0 ? malloc((size_t)n) : NULL;
    size_t got = buf ? fread(buf, 1, (size_t)n, f) : 0;
    fclose(f);
    remove(path);
    if (!buf || got != (size_t)n) {
        free(buf);
        return werr(w, TT_EIO, "cannot read back a file the engine wrote");
    }
    if (n > 0x7fffffff) {
        free(buf);
        return werr(w, TT_EUNSUP, "a file larger than 2 GiB");
    }
    *out = buf;
    *len = (size_t)n;
    return TT_OK;
}

static int to_memory(tt_web *w) {
    TT_CHECK(tt_checkpoint_save(CKPT_TMP, &w->s, &w->st));
    uint8_t *buf;
    size_t n;
    TT_CHECK(take_file(w, CKPT_TMP, &buf, &n));
    free(w->ckpt);
    w->ckpt = buf;
    w->ckpt_len = n;
    return TT_OK;
}

EMSCRIPTEN_KEEPALIVE int tt_web_advance(tt_web *w) {
    tt_status_clear(&w->st);
    if (!w->loop) return -werr(w, TT_EINVAL, "no training run");
    tt_progress p;
    int rc = tt_loop_advance(w->loop, &p, &w->st);
    if (rc) return -rc;
    w->p = p;
    if (p.event == TT_EV_SAVE) {
        rc = to_memory(w);
        if (rc) return -rc;
    }
    return (int)p.event;
}

EMSCRIPTEN_KEEPALIVE void tt_web_hold(tt_web *w, int mode) {
    if (w->loop) tt_loop_hold(w->loop, mode == 2 ? TT_HOLD_SAVE : mode ? TT_HOLD : TT_HOLD_OFF);
}
EMSCRIPTEN_KEEPALIVE int tt_web_in_flight(tt_web *w) { return w->loop ? tt_loop_in_flight(w->loop) : 0; }
EMSCRIPTEN_KEEPALIVE double tt_web_pipelined(tt_web *w) { return w->loop ? (double)tt_loop_pipelined(w->loop) : 0; }

/* ---- getters ---------------------------------------------------------------------- */

EMSCRIPTEN_KEEPALIVE double tt_web_step(tt_web *w) { return w->have_state ? (double)w->s.step : 0; }
EMSCRIPTEN_KEEPALIVE double tt_web_total_steps(tt_web *w) { return w->have_state ? (double)w->s.tc.steps : (double)w->tc.steps; }
EMSCRIPTEN_KEEPALIVE double tt_web_loss(tt_web *w) { return w->p.loss; }
EMSCRIPTEN_KEEPALIVE double tt_web_grad_norm(tt_web *w) { return w->p.grad_norm; }
EMSCRIPTEN_KEEPALIVE double tt_web_val_loss(tt_web *w) { return w->p.val_loss; }
EMSCRIPTEN_KEEPALIVE double tt_web_lr(tt_web *w) { return w->p.lr; }
EMSCRIPTEN_KEEPALIVE double tt_web_tokens_per_step(tt_web *w) {
    const tt_model_config *c = w->have_state ? &w->s.cfg : &w->cfg;
    int accum = w->have_state ? w->s.tc.accum : w->tc.accum;
    return (double)c->batch * c->ctx * accum;
}
/* Bits per byte of a loss in nats per token on the run's text (data.h:
 * tokens per byte of the validation split; byte-level: nats / ln 2). */
EMSCRIPTEN_KEEPALIVE double tt_web_bits_per_byte(tt_web *w, double nats) {
    if (w->have_tcorpus) return tt_corpus_bpb(&w->tcorpus, nats);
    return w->have_corpus ? tt_corpus_bpb(&w->corpus, nats) : nats / log(2.0);
}
/* the run's tokenizer: 0 byte, 1 BPE; its vocabulary */
EMSCRIPTEN_KEEPALIVE int tt_web_tokenizer_kind(tt_web *w) {
    return w->have_tok && w->tok.tok && tt_tokenizer_kind(w->tok.tok) == TT_TOK_BPE;
}
EMSCRIPTEN_KEEPALIVE int tt_web_tokens_in_text(tt_web *w) {
    return w->have_tcorpus ? (int)w->tcorpus.n_tok : w->have_corpus ? (int)w->corpus.n : 0;
}
EMSCRIPTEN_KEEPALIVE double tt_web_n_params(tt_web *w) {
    return (double)tt_config_param_count(w->have_state ? &w->s.cfg : &w->cfg);
}

/* ---- checkpoints ---------------------------------------------------------------------- */

EMSCRIPTEN_KEEPALIVE int tt_web_checkpoint(tt_web *w) {
    tt_status_clear(&w->st);
    if (!w->loop) return -werr(w, TT_EINVAL, "no training run");
    int rc = tt_loop_sync(w->loop, &w->st);
    if (!rc) rc = to_memory(w);
    return rc ? -rc : (int)w->ckpt_len;
}

EMSCRIPTEN_KEEPALIVE int tt_web_save_len(tt_web *w) { return (int)w->ckpt_len; }
EMSCRIPTEN_KEEPALIVE const uint8_t *tt_web_save_ptr(tt_web *w) { return w->ckpt; }

/* The Hugging Face folder of the state (src/train/hf.h, what `tinytrain export`
 * writes: config, weights with LoRA merged, generation config, tokenizer)
 * through the module's memory file system, each file read into the handle
 * for the page to pack. The weights are the host copy: tt_web_checkpoint
 * brings them there first. */
#define HF_TMP "/tmp/tt_web_hf"

static void hf_clear(tt_web *w) {
    for (int i = 0; i < w->hf_n; i++) free(w->hf_data[i]);
    w->hf_n = 0;
}

/* the files of the folder HF_TMP into the handle (the folder goes) */
static int take_folder(tt_web *w) {
    int rc = TT_OK;
    DIR *d = opendir(HF_TMP);
    if (!d) return -werr(w, TT_EIO, "cannot list the exported folder");
    struct dirent *e;
    while (!rc && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        if (w->hf_n == TT_WEB_HF_MAX || strlen(e->d_name) >= sizeof w->hf_name[0]) {
            rc = werr(w, TT_EUNSUP, "unexpected file in the exported folder");
            break;
        }
        char path[128];
        snprintf(path, sizeof path, "%s/%s", HF_TMP, e->d_name);
        snprintf(w->hf_name[w->hf_n], sizeof w->hf_name[0], "%s", e->d_name);
        rc = take_file(w, path, &w->hf_data[w->hf_n], &w->hf_len[w->hf_n]);
        if (!rc) w->hf_n++;
    }
    closedir(d);
    rmdir(HF_TMP);
    if (rc) {
        hf_clear(w);
        return -rc;
    }
    return w->hf_n;
}

EMSCRIPTEN_KEEPALIVE int tt_web_export_hf(tt_web *w) {
    tt_status_clear(&w->st);
    hf_clear(w);
    if (!w->have_state) return -werr(w, TT_EINVAL, "no model to export");
    tt_sample_config sc;
    tt_sample_config_default(&sc);
    const tt_hf_generation gen = {sc.temperature, sc.top_k, sc.top_p};
    int rc = tt_hf_export_dir_tok(HF_TMP, &w->s, &gen, w->have_tok ? &w->tok : NULL, 1, &w->st);
    if (rc) return -rc;
    return take_folder(w);
}

/* A LoRA run's adapters as the peft folder of `tinytrain export --adapter`
 * (io/peft.h), files as tt_web_export_hf's; after tt_web_checkpoint. */
EMSCRIPTEN_KEEPALIVE int tt_web_export_adapter(tt_web *w) {
    tt_status_clear(&w->st);
    hf_clear(w);
    if (!w->have_state) return -werr(w, TT_EINVAL, "no model to export");
    if (w->s.cfg.lora_rank <= 0) return -werr(w, TT_EINVAL, "not a LoRA run (lora-rank 0): download the merged model instead");
    int rc = tt_export_peft(HF_TMP, &w->s.cfg, w->s.params, NULL, &w->st);
    if (rc) return -rc;
    return take_folder(w);
}

EMSCRIPTEN_KEEPALIVE const char *tt_web_hf_name(tt_web *w, int i) { return i >= 0 && i < w->hf_n ? w->hf_name[i] : ""; }
EMSCRIPTEN_KEEPALIVE const uint8_t *tt_web_hf_ptr(tt_web *w, int i) { return i >= 0 && i < w->hf_n ? w->hf_data[i] : NULL; }
EMSCRIPTEN_KEEPALIVE int tt_web_hf_len(tt_web *w, int i) { return i >= 0 && i < w->hf_n ? (int)w->hf_len[i] : 0; }

/* ---- sampling ---------------------------------------------------------------------- */

EMSCRIPTEN_KEEPALIVE int tt_web_sample_start(tt_web *w, const char *prompt, int max_tokens, float temperature, int top_k,
                                             float top_p, double seed) {
    tt_status_clear(&w->st);
    if (!w->loop) return werr(w, TT_EINVAL, "no model yet: train or load a checkpoint first");
    if (max_tokens < 1 || max_tokens > 1000000) return werr(w, TT_EINVAL, "length must be in 1..1000000");
    if (!(temperature >= 0 && temperature <= 100)) return werr(w, TT_EINVAL, "temperature must be in [0, 100]");
    if (top_k < 0) return werr(w, TT_EINVAL, "top-k must be >= 0");
    if (!(top_p > 0 && top_p <= 1)) return werr(w, TT_EINVAL, "top-p must be in (0, 1]");
    TT_CHECK(tt_loop_sync(w->loop, &w->st));
    if (w->sampler) tt_web_sampler_free(w->sampler);
    w->sampler = NULL;
    return tt_web_sampler_new(&w->s, w->have_tok ? w->tok.tok : NULL, prompt ? prompt : "", max_tokens, temperature,
                              top_k, top_p, (uint64_t)seed, &w->sampler, &w->st);
}

EMSCRIPTEN_KEEPALIVE const uint8_t *tt_web_sample_piece(tt_web *w) { return w->piece; }
EMSCRIPTEN_KEEPALIVE int tt_web_sample_piece_len(tt_web *w) { return (int)w->piece_len; }

EMSCRIPTEN_KEEPALIVE int tt_web_sample_next(tt_web *w) {
    if (!w->sampler) return -1;
    int tok = -1;
    w->piece_len = 0;
    int rc = tt_web_sampler_next(w->sampler, &tok, &w->st);
    if (!rc && tok >= 0) { /* the token's bytes: a byte for a byte-level model, a BPE token's (maybe part of a character) */
        const uint8_t *b = w->have_tok && w->tok.tok ? tt_tokenizer_token(w->tok.tok, tok, &w->piece_len) : NULL;
        if (!b) {
            w->piece_byte = (uint8_t)tok;
            b = &w->piece_byte;
            w->piece_len = tok < 256 ? 1 : 0;
        }
        w->piece = b;
    }
    if (rc || tok < 0) {
        tt_web_sampler_free(w->sampler);
        w->sampler = NULL;
        return -1;
    }
    return tok;
}

/* ---- inspection (web_inspect.c) ------------------------------------------------------- */

EMSCRIPTEN_KEEPALIVE const char *tt_web_inspect(tt_web *w, const uint8_t *prompt, int n, int top_k) {
    tt_status_clear(&w->st);
    if (!w->loop) {
        werr(w, TT_EINVAL, "no model yet: train or load a checkpoint first");
        return NULL;
    }
    if (tt_loop_sync(w->loop, &w->st)) return NULL;
    if (tt_web_inspect_json(w->be, w->s.params, w->have_tok ? w->tok.tok : NULL, prompt, n, top_k, &w->json, &w->st))
        return NULL;
    return w->json.buf;
}

/* ---- kernel profile (engine/profile.h) -------------------------------------------------- */

/* The run's step profiled per kernel (the browser engine's --profile, as
 * `tinytrain profile`): the loop synced, every dispatch site timed. The
 * profile clobbers the backend's state, so the run ends with it (its
 * checkpoint, if wanted, is to be taken first). */
EMSCRIPTEN_KEEPALIVE const char *tt_web_profile(tt_web *w, int reps, int detail) {
    tt_status_clear(&w->st);
    if (!w->loop) {
        werr(w, TT_EINVAL, "no training run to profile");
        return NULL;
    }
    if (reps < 1 || reps > 1000) {
        werr(w, TT_EINVAL, "profile reps must be in 1..1000");
        return NULL;
    }
    tt_webgpu_prof *rows = tt_calloc(TT_PROFILE_MAX * sizeof *rows, &w->st);
    int n = 0;
    int rc = rows ? tt_loop_sync(w->loop, &w->st) : TT_ENOMEM;
    if (!rc) rc = tt_profile(w->be, reps, detail, rows, &n, &w->st);
    if (!rc) {
        w->json.len = 0;
        w->json.oom = 0;
        tt_profile_json(&w->json, w->preset, w->be->desc.device, w->s.tc.precision, reps, rows, n);
        if (w->json.oom) rc = werr(w, TT_ENOMEM, "out of memory");
    }
    tt_free(rows);
    drop_run(w);
    return rc ? NULL : w->json.buf;
}

/* ---- JSON read-outs ------------------------------------------------------------------ */

static void jnum(tt_jw *j, double x) {
    if (isfinite(x)) tt_jw_printf(j, "%.9g", x);
    else tt_jw_cstr(j, "null");
}

static const char *jdone(tt_web *w, const char *fallback) { return w->json.buf && !w->json.oom ? w->json.buf : fallback; }

EMSCRIPTEN_KEEPALIVE const char *tt_web_state_json(tt_web *w) {
    tt_jw *j = &w->json;
    j->len = 0;
    j->oom = 0;
    const tt_model_config *c = w->have_state ? &w->s.cfg : &w->cfg;
    const tt_train_config *tc = w->have_state ? &w->s.tc : &w->tc;
    tt_jw_cstr(j, "{\"preset\":");
    tt_jw_string(j, w->preset, strlen(w->preset));
    tt_web_json_options(j, TT_OPT_MODEL, c);
    tt_web_json_options(j, TT_OPT_TRAIN, tc);
    tt_jw_printf(j, ",\"vocab\":%d,\"params\":%lld,\"step\":%lld,\"corpus_bytes\":%zu,\"loss\":[", c->vocab,
                 (long long)tt_config_param_count(c), w->have_state ? (long long)w->s.step : 0LL, w->have_corpus ? w->corpus.n : (size_t)0);
    if (w->have_state)
        for (int64_t i = 0; i < w->s.step; i++) {
            if (i) tt_jw_cstr(j, ",");
            jnum(j, w->s.loss_hist[i]);
        }
    tt_jw_cstr(j, "],\"val\":[");
    if (w->have_state)
        for (int64_t i = 0; i < w->s.n_val; i++) {
            tt_jw_printf(j, "%s[%lld,", i ? "," : "", (long long)w->s.val_step[i]);
            jnum(j, w->s.val_loss[i]);
            tt_jw_cstr(j, "]");
        }
    tt_jw_cstr(j, "]}");
    return jdone(w, "{}");
}

EMSCRIPTEN_KEEPALIVE const char *tt_web_info(tt_web *w) {
    if (!w->be) snprintf(w->info, sizeof w->info, "%s", TT_ISA);
    return w->info;
}

/* 1 in the module built with the browser WebGPU device layer (tinytrain_web_gpu). */
EMSCRIPTEN_KEEPALIVE int tt_web_has_webgpu(void) {
#ifdef TT_WEB_GPU
    return 1;
#else
    return 0;
#endif
}
