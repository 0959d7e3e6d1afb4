/* run.c — the one run setup (run.h): reading the source of a run (a
 * checkpoint to resume, weights to start from), the checks of options,
 * tokenizer, text and shape against it with their messages, the run's state
 * and its backend. */
#define _DEFAULT_SOURCE /* realpath */
#include "run.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/backend_create.h"
#include "io/peft.h"
#include "lora.h"
#include "train/checkpoint.h"

#define CKPT_FILE "checkpoint.safetensors" /* a run folder's checkpoint */

/* ---- reading the source -------------------------------------------------------- */

/* resume: a checkpoint file or a run folder (never a Hugging Face folder: weights only) */
static int read_checkpoint(const tt_run_source *src, tt_train_state *s, tt_status *st) {
    if (!src->path) return tt_checkpoint_load_mem(src->bytes, src->len, s, st);
    const char *path = src->path;
    char inner[4200];
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        snprintf(inner, sizeof inner, "%s/" CKPT_FILE, path);
        if (stat(inner, &sb) != 0) {
            snprintf(inner, sizeof inner, "%s/config.json", path);
            if (stat(inner, &sb) == 0)
                return tt_fail(st, TT_EINVAL, "cannot resume from '%s': a Hugging Face folder holds weights, not a "
                                              "training state (start a new run from it with init-from)", path);
            return tt_fail(st, TT_EIO, "cannot load checkpoint: '%s' is a folder without " CKPT_FILE, path);
        }
        path = inner;
    }
    if (tt_checkpoint_load(path, s, st)) {
        char m[sizeof st->msg];
        snprintf(m, sizeof m, "%s", st->msg);
        if (strstr(m, path)) return tt_fail(st, st->code, "cannot load checkpoint: %.480s", m);
        return tt_fail(st, st->code, "cannot load checkpoint '%.200s': %.280s", path, m);
    }
    return TT_OK;
}

/* init-from: the base weights of a checkpoint, a run folder or a Hugging Face
 * folder (whose model takes the run's ctx, else min(n_positions, 1024)) */
static int read_weights(const tt_run_source *src, int ctx, tt_hf_weights *w, tt_status *st) {
    int rc;
    if (src->path) {
        rc = tt_hf_load_ctx(src->path, ctx, w, st);
    } else {
        tt_train_state s;
        memset(&s, 0, sizeof s);
        rc = tt_checkpoint_load_mem(src->bytes, src->len, &s, st);
        if (!rc) rc = tt_hf_from_state(&s, w, st);
        tt_state_free(&s);
    }
    if (rc) {
        char m[sizeof st->msg];
        snprintf(m, sizeof m, "%s", st->msg);
        tt_fail(st, rc, "init-from: %.500s", m);
    }
    return rc;
}

static const char *source_name(const tt_run_source *src) {
    return src->name && *src->name ? src->name : src->path ? src->path : "uploaded checkpoint";
}

/* ---- the checks against the source ---------------------------------------------- */

/* resume: the model is the checkpoint's; the first difference, named */
static int check_resume_model(const tt_model_config *h, const tt_model_config *want, tt_status *st) {
    if (want->n_layer != h->n_layer || want->d_model != h->d_model || want->n_head != h->n_head || want->ctx != h->ctx ||
        want->batch != h->batch)
        return tt_fail(st, TT_EMISMATCH,
                       "config mismatch on resume: checkpoint has layers %d, d_model %d, heads %d, ctx %d, batch %d; "
                       "requested layers %d, d_model %d, heads %d, ctx %d, batch %d",
                       h->n_layer, h->d_model, h->n_head, h->ctx, h->batch, want->n_layer, want->d_model, want->n_head,
                       want->ctx, want->batch);
    if (want->lora_rank != h->lora_rank ||
        (h->lora_rank > 0 && (want->lora_targets != h->lora_targets || want->lora_alpha != h->lora_alpha)))
        return tt_fail(st, TT_EMISMATCH,
                       "config mismatch on resume: checkpoint has lora-rank %d, lora-alpha %g; requested lora-rank %d, "
                       "lora-alpha %g (a LoRA run on a trained model starts with init-from)",
                       h->lora_rank, (double)h->lora_alpha, want->lora_rank, (double)want->lora_alpha);
    return TT_OK;
}

/* init-from: the shape asked for (a preset, shape options) is the source's; the first difference, named */
static int check_init_shape(const tt_options *o, const char *name, const tt_model_config *src, tt_status *st) {
    const tt_preset *p = o->preset[0] ? tt_preset_find(o->preset) : NULL;
    tt_model_config want = p ? p->cfg : *src;
    if (tt_options_given(o, "layers")) want.n_layer = o->model.n_layer;
    if (tt_options_given(o, "d-model")) want.d_model = o->model.d_model;
    if (tt_options_given(o, "heads")) want.n_head = o->model.n_head;
    if (tt_options_given(o, "ctx")) want.ctx = o->model.ctx;
    const struct {
        const char *name;
        int src, run;
    } f[] = {{"layers", src->n_layer, want.n_layer}, {"d-model", src->d_model, want.d_model},
             {"heads", src->n_head, want.n_head}, {"ctx", src->ctx, want.ctx}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (f[i].src != f[i].run)
            return tt_fail(st, TT_EMISMATCH, "init-from: %.300s has %s %d, the run asks for %d", name, f[i].name, f[i].src,
                           f[i].run);
    return TT_OK;
}

/* resume: the text is the one the checkpoint was trained on */
static int check_text(const tt_train_state *s, const tt_corpus *c, tt_status *st) {
    if (s->corpus_hash == c->hash && s->corpus_bytes == c->n) return TT_OK;
    return tt_fail(st, TT_EMISMATCH,
                   "corpus mismatch on resume: the checkpoint was trained on another text (%llu bytes, hash %016llx); "
                   "this one is %.200s: %zu bytes, hash %016llx; resume on the text it was trained on",
                   (unsigned long long)s->corpus_bytes, (unsigned long long)s->corpus_hash, c->desc, c->n,
                   (unsigned long long)c->hash);
}

/* init-from with an adapter: the folder's adapters on the source's weights;
 * the LoRA options given must be the folder's. base becomes the run's base
 * model config, its LoRA fields the folder's. */
static int read_adapter(tt_run *r, const tt_options *o, const tt_run_source *src, tt_model_config *base, tt_status *st) {
    tt_model_config a;
    if (tt_load_peft(src->adapter, &r->init.cfg, &a, &r->adapters, st)) {
        char m[sizeof st->msg];
        snprintf(m, sizeof m, "%s", st->msg);
        return tt_fail(st, st->code, "adapter '%.200s': %.500s", src->adapter, m);
    }
    char given[96] = "", have[96] = "";
    if (tt_options_given(o, "lora-rank") && o->model.lora_rank != a.lora_rank)
        snprintf(given, sizeof given, "lora-rank %d", o->model.lora_rank), snprintf(have, sizeof have, "r %d", a.lora_rank);
    else if (tt_options_given(o, "lora-alpha") && o->model.lora_alpha != a.lora_alpha)
        snprintf(given, sizeof given, "lora-alpha %g", (double)o->model.lora_alpha),
            snprintf(have, sizeof have, "lora_alpha %g", (double)a.lora_alpha);
    else if (tt_options_given(o, "lora-targets") && o->model.lora_targets != a.lora_targets) {
        const tt_option *t = tt_option_find("lora-targets");
        char g[80], h[80];
        snprintf(given, sizeof given, "lora-targets %s", tt_option_set_text(t, o->model.lora_targets, g, sizeof g));
        snprintf(have, sizeof have, "targets %s", tt_option_set_text(t, a.lora_targets, h, sizeof h));
    }
    if (given[0])
        return r->bad_options = 1, tt_fail(st, TT_EMISMATCH, "%s disagrees with the adapter '%.200s' (%s): leave it out, "
                                                             "the adapter's config decides", given, src->adapter, have);
    *base = a;
    return TT_OK;
}

/* ---- the tokenizer ------------------------------------------------------------------ */

static void tok_text(const tt_runtok *rt, char *buf, size_t cap) {
    if (!rt->tok || tt_tokenizer_kind(rt->tok) != TT_TOK_BPE) snprintf(buf, cap, "byte");
    else snprintf(buf, cap, "BPE (%d ids, hash %016llx)", (int)tt_tokenizer_vocab_size(rt->tok),
                  (unsigned long long)tt_tokenizer_hash(rt->tok));
}

static uint64_t tok_id(const tt_runtok *rt) {
    return rt->tok && tt_tokenizer_kind(rt->tok) == TT_TOK_BPE ? tt_tokenizer_hash(rt->tok) : 0;
}

/* the tokenizer option given, loaded; one line naming it on failure */
static int given_tokenizer(const tt_options *o, tt_runtok *rt, tt_status *st) {
    if (!tt_runtok_load(o->tokenizer, rt, st)) return TT_OK;
    if (strncmp(st->msg, "tokenizer", 9) == 0) return st->code;
    char m[sizeof st->msg];
    snprintf(m, sizeof m, "%s", st->msg);
    return tt_fail(st, st->code, "tokenizer: %.480s", m);
}

static int plan_tokenizer(tt_run *r, const tt_options *o, const tt_run_source *src, tt_status *st) {
    char a[96], b[96];
    tt_runtok given;
    memset(&given, 0, sizeof given);
    switch (src->kind) {
    case TT_RUN_FRESH:
        if (given_tokenizer(o, &r->tok, st)) return r->bad_options = 1, st->code;
        return TT_OK;
    case TT_RUN_RESUME:
        if (src->path) TT_CHECK(tt_runtok_for_state(src->path, &r->s, &r->tok, st));
        else if (r->s.tok_kind)
            return tt_fail(st, TT_EINVAL, "this checkpoint was trained with a BPE tokenizer: resume it from its run folder, "
                                          "where its tokenizer files are");
        else TT_CHECK(tt_runtok_load("byte", &r->tok, st));
        if (!o->tokenizer[0]) return TT_OK;
        TT_CHECK(given_tokenizer(o, &given, st));
        if (tok_id(&given) != tok_id(&r->tok)) {
            tok_text(&r->tok, a, sizeof a);
            tok_text(&given, b, sizeof b);
            tt_runtok_free(&given);
            return tt_fail(st, TT_EMISMATCH, "tokenizer mismatch on resume: the checkpoint was trained with the %s tokenizer; "
                                             "--tokenizer %.200s is %s", a, o->tokenizer, b);
        }
        tt_runtok_free(&given);
        return TT_OK;
    case TT_RUN_INIT_FROM: {
        int found = 0;
        /* a model of 256 ids is byte-level (our exports carry a byte-level tokenizer.json); another
         * vocabulary comes with its tokenizer's files beside the weights */
        if (src->path && r->init.cfg.vocab != TT_VOCAB) {
            char dir[4200];
            struct stat sb;
            snprintf(dir, sizeof dir, "%s", src->path);
            if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
                char *sl = strrchr(dir, '/');
                if (!sl) snprintf(dir, sizeof dir, ".");
                else if (sl == dir) dir[1] = 0;
                else *sl = 0;
            }
            TT_CHECK(tt_runtok_load_dir(dir, &found, &r->tok, st));
            if (!found) tt_runtok_free(&r->tok);
        }
        if (o->tokenizer[0]) {
            TT_CHECK(given_tokenizer(o, &given, st));
            if (found && tok_id(&given) != tok_id(&r->tok)) {
                tok_text(&r->tok, a, sizeof a);
                tok_text(&given, b, sizeof b);
                tt_runtok_free(&given);
                return tt_fail(st, TT_EMISMATCH, "init-from: %.200s comes with its own %s tokenizer; --tokenizer %.100s is %s",
                               source_name(src), a, o->tokenizer, b);
            }
            if (found) tt_runtok_free(&given);
            else r->tok = given;
        } else if (!found) {
            TT_CHECK(tt_runtok_load("byte", &r->tok, st));
        }
        int32_t v = tt_tokenizer_vocab_size(r->tok.tok);
        if (!found && !o->tokenizer[0] && v < r->init.cfg.vocab) { /* no tokenizer came with the weights: bytes */
            snprintf(r->tok_note, sizeof r->tok_note,
                     "%.200s has a vocabulary of %d and no tokenizer files: the text goes in as bytes (ids 0..255); "
                     "give --tokenizer for its own", source_name(src), r->init.cfg.vocab);
            return TT_OK;
        }
        if (v != r->init.cfg.vocab) {
            tok_text(&r->tok, a, sizeof a);
            return tt_fail(st, TT_EMISMATCH, "init-from: the weights of %.200s have a vocabulary of %d tokens, the %s tokenizer "
                                             "has %d (give the tokenizer the model was trained with: --tokenizer)",
                           source_name(src), r->init.cfg.vocab, a, (int)v);
        }
        return TT_OK;
    }
    }
    return TT_OK;
}

/* ---- the calls --------------------------------------------------------------------- */

int tt_run_plan(tt_run *r, const tt_options *o, const tt_run_source *src, tt_status *st) {
    memset(r, 0, sizeof *r);
    r->s.best_val = INFINITY;
    r->s.best_val_step = -1;
    r->src = *src;
    r->opts = *o;
    switch (src->kind) {
    case TT_RUN_FRESH:
        if (tt_options_resolve(o, NULL, NULL, &r->cfg, &r->tc, st)) return r->bad_options = 1, st->code;
        TT_CHECK(plan_tokenizer(r, o, src, st));
        r->cfg.vocab = tt_tokenizer_vocab_size(r->tok.tok); /* the model's vocabulary is the tokenizer's */
        if (tt_config_validate(&r->cfg, st)) return r->bad_options = 1, st->code;
        if (r->cfg.lora_rank > 0) /* adapters on random frozen weights learn next to nothing */
            return r->bad_options = 1,
                   tt_fail(st, TT_EINVAL, "lora-rank %d needs a trained model to fine-tune: LoRA trains adapters on frozen "
                                          "weights, and a new run's weights are random (give init-from)", r->cfg.lora_rank);
        break;
    case TT_RUN_RESUME: {
        TT_CHECK(read_checkpoint(src, &r->s, st));
        TT_CHECK(tt_options_check_resume(o, &r->s.tc, st));
        tt_model_config want;
        if (tt_options_resolve(o, &r->s.cfg, &r->s.tc, &want, &r->tc, st)) return r->bad_options = 1, st->code;
        TT_CHECK(check_resume_model(&r->s.cfg, &want, st));
        TT_CHECK(plan_tokenizer(r, o, src, st));
        r->cfg = r->s.cfg;
        r->ckpt_steps = r->s.tc.steps;
        r->ckpt_warmup = r->s.tc.warmup;
        break;
    }
    case TT_RUN_INIT_FROM: {
        TT_CHECK(read_weights(src, tt_options_given(o, "ctx") ? o->model.ctx : 0, &r->init, st));
        TT_CHECK(check_init_shape(o, source_name(src), &r->init.cfg, st));
        tt_model_config base = r->init.cfg;
        if (src->adapter) TT_CHECK(read_adapter(r, o, src, &base, st));
        if (tt_options_resolve(o, &base, NULL, &r->cfg, &r->tc, st)) return r->bad_options = 1, st->code;
        if (src->adapter) { /* the adapter's LoRA, whatever preset the options name */
            r->cfg.lora_rank = base.lora_rank;
            r->cfg.lora_alpha = base.lora_alpha;
            r->cfg.lora_targets = base.lora_targets;
            TT_CHECK(tt_config_validate(&r->cfg, st));
        }
        TT_CHECK(plan_tokenizer(r, o, src, st));
        break;
    }
    default: return tt_fail(st, TT_EINVAL, "unknown run source");
    }
    if (src->adapter && src->kind != TT_RUN_INIT_FROM)
        return r->bad_options = 1, tt_fail(st, TT_EINVAL, "an adapter goes with init-from (the base model it adapts)");
    r->preset = tt_preset_of(&r->cfg);
    return TT_OK;
}

/* resume: what the run changes from its checkpoint, in the user's words */
static void resume_notes(tt_run *r) {
    const tt_train_config *tc = &r->tc;
    if (tc->warmup != r->ckpt_warmup) {
        if (tt_options_given(&r->opts, "warmup"))
            snprintf(r->note[0], sizeof r->note[0], "warmup changes from %lld to %lld steps from here on",
                     (long long)r->ckpt_warmup, (long long)tc->warmup);
        else
            snprintf(r->note[0], sizeof r->note[0], "the run is now shorter than its warmup: warmup %lld -> %lld steps",
                     (long long)r->ckpt_warmup, (long long)tc->warmup);
    }
    if (tc->steps != r->ckpt_steps) {
        tt_train_config was = *tc;
        was.steps = r->ckpt_steps;
        int64_t k = r->s.step;
        snprintf(r->note[1], sizeof r->note[1],
                 "the run changes from %lld to %lld steps, which %s its cosine schedule from here on "
                 "(lr %.3g at step %lld instead of %.3g)",
                 (long long)r->ckpt_steps, (long long)tc->steps, tc->steps > r->ckpt_steps ? "stretches" : "compresses",
                 tt_lr_at(tc, k), (long long)k + 1, tt_lr_at(&was, k));
    }
}

int tt_run_open(tt_run *r, const tt_corpus *c, tt_status *st) {
    tt_train_state *s = &r->s;
    /* the text must be in the run's tokens: token data made with its tokenizer, or bytes for byte */
    int bpe = r->tok.tok && tt_tokenizer_kind(r->tok.tok) == TT_TOK_BPE;
    if (bpe != (c->tokens.count > 0) || (bpe && c->tokens.tok_hash != tt_tokenizer_hash(r->tok.tok)))
        return tt_fail(st, TT_EINVAL, "the text was loaded for another tokenizer than the run's (%s): load it with the "
                                      "run's tokenizer (tt_corpus_open)", bpe ? "BPE" : "byte");
    switch (r->src.kind) {
    case TT_RUN_RESUME:
        if (!r->src.any_text) TT_CHECK(check_text(s, c, st));
        TT_CHECK(tt_corpus_check(c, r->cfg.ctx, st));
        r->done = s->step >= r->tc.steps;
        if (r->done && !r->src.open_done) return TT_OK;
        resume_notes(r);
        s->tc = r->tc;
        return TT_OK;
    case TT_RUN_FRESH:
        TT_CHECK(tt_corpus_check(c, r->cfg.ctx, st));
        TT_CHECK(tt_state_init(s, &r->cfg, &r->tc, st));
        tt_runtok_mark(&r->tok, s);
        return TT_OK;
    case TT_RUN_INIT_FROM: {
        TT_CHECK(tt_corpus_check(c, r->cfg.ctx, st));
        TT_CHECK(tt_state_init(s, &r->cfg, &r->tc, st));
        tt_runtok_mark(&r->tok, s);
        /* the base tensors lead the layout; LoRA adapters keep the fresh init tt_state_init gave
         * them (lora_a drawn, lora_b zero: the model starts as the source) */
        /* an adapter's: the folder's adapters instead (io/peft.h: the part after the base) */
        if (r->adapters) tt_lora_join(&s->layout, r->init.params, r->adapters, s->params);
        else memcpy(s->params, r->init.params, s->layout.base_total * sizeof(float));
        char full[PATH_MAX], afull[PATH_MAX];
        const char *name = r->src.name && *r->src.name ? r->src.name
                           : r->src.path                ? (realpath(r->src.path, full) ? full : r->src.path)
                                                        : "uploaded checkpoint";
        if (r->src.adapter)
            snprintf(s->init_from, sizeof s->init_from, "%.2000s + adapter %.2000s", name,
                     realpath(r->src.adapter, afull) ? afull : r->src.adapter);
        else
            snprintf(s->init_from, sizeof s->init_from, "%s", name);
        tt_free(r->adapters);
        r->adapters = NULL;
        s->init_hash = r->init.hash;
        tt_hf_weights_free(&r->init);
        return TT_OK;
    }
    }
    return tt_fail(st, TT_EINVAL, "unknown run source");
}

int tt_run_make_backend(tt_run *r, tt_status *st) {
    const char *kind = tt_run_backend(&r->opts.run);
    tt_backend_opts bo = {.threads = r->opts.run.threads, .dropout = r->s.tc.dropout > 0.0f,
                          .precision = r->s.tc.precision};
    if (!tt_backend_create(kind, &r->s.cfg, &bo, &r->be, r->backend_note, sizeof r->backend_note, st)) return TT_OK;
    r->be = NULL;
    tt_backend_fail_line(kind, st);
    return st->code;
}

void tt_run_close(tt_run *r) {
    tt_backend_destroy(r->be);
    r->be = NULL;
    tt_state_free(&r->s);
    tt_hf_weights_free(&r->init);
    tt_free(r->adapters);
    r->adapters = NULL;
    tt_runtok_free(&r->tok);
}
