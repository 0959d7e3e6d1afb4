/* options.c — the option table (options.h), parsing and range checks of
 * option values, resolving a run's configs from defaults + given options,
 * and the train config's defaults and validation (train.h), which check the
 * table's ranges. */
#include "options.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainer.h"

#define M(f) TT_OPT_MODEL, offsetof(tt_model_config, f)
#define T(f) TT_OPT_TRAIN, offsetof(tt_train_config, f)
#define R(f) TT_OPT_RUN, offsetof(tt_run_config, f)
#define BIG 1e12
#define FMAX ((double)FLT_MAX)

static const tt_option table[] = {
    {"preset", TT_OPT_TEXT, TT_OPT_PRESET, 0, 0, 0, 0, 0, NULL, "small", "preset", "model preset (see `tinytrain info`)", 0, 0},
    {"tokenizer", TT_OPT_TEXT, TT_OPT_TOKENIZER, 0, 0, 0, 0, 0, NULL, "byte", "tokenizer",
     "byte, or GPT-2 BPE: a Hugging Face folder (tokenizer.json or vocab.json + merges.txt) or a tokenizer.json; "
     "the model's vocabulary is the tokenizer's; a resumed run keeps its own", 0, 1},
    {"layers", TT_OPT_INT, M(n_layer), 1, 256, 0, 0, NULL, "preset", "layers", "transformer blocks", 0, 0},
    {"d-model", TT_OPT_INT, M(d_model), 1, 16384, 0, 0, NULL, "preset", "d-model", "embedding width", 0, 0},
    {"heads", TT_OPT_INT, M(n_head), 1, 16384, 0, 0, NULL, "preset", "heads", "attention heads", 0, 0},
    {"ctx", TT_OPT_INT, M(ctx), 1, 65536, 0, 0, NULL, "preset", "ctx", "context length in tokens (bytes for a byte-level model)", 0, 0},
    {"batch", TT_OPT_INT, M(batch), 1, 65536, 0, 0, NULL, "preset", "batch", "sequences per micro-batch", 0, 0},
    {"lora-rank", TT_OPT_INT, M(lora_rank), 0, 65536, 0, 0, NULL, "0", "lora-rank",
     "LoRA adapter rank, 0 = off (the base is frozen, only the adapters train)", 0, 1},
    {"lora-alpha", TT_OPT_F32, M(lora_alpha), 0, 1e6, 1, 0, NULL, "8", "lora-alpha", "LoRA scale numerator: adapters add alpha/rank * x A B", 0, 1},
    {"lora-targets", TT_OPT_SET, M(lora_targets), 0, TT_LORA_ALL, 0, 0, "c_attn|attn.c_proj|mlp.c_fc|mlp.c_proj", "all",
     "lora-targets", "projections with adapters: comma list of c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj, c_proj (both), all",
     0, 1},
    {"steps", TT_OPT_I64, T(steps), 1, BIG, 0, 0, NULL, "2000", "steps", "optimizer steps", 0, 0},
    {"lr", TT_OPT_F32, T(lr), 0, 10, 1, 0, NULL, "5e-3, times 128/d-model above d-model 128", "learning rate",
     "peak learning rate", 1, 0},
    {"min-lr", TT_OPT_F32, T(min_lr), 0, 10, 0, 0, NULL, "lr/10", "min learning rate", "cosine floor", 1, 0},
    {"warmup", TT_OPT_I64, T(warmup), 0, BIG, 0, 0, NULL, "5% of steps, at most 100", "warmup", "linear warmup steps", 0, 0},
    {"schedule", TT_OPT_CHOICE, T(sched), 0, 1, 0, 0, "cosine|constant", "cosine", "schedule", "learning-rate schedule", 1, 0},
    {"beta1", TT_OPT_F32, T(beta1), 0, 1, 0, 1, NULL, "0.9", "beta1", "AdamW beta1", 1, 0},
    {"beta2", TT_OPT_F32, T(beta2), 0, 1, 0, 1, NULL, "0.95", "beta2", "AdamW beta2", 1, 0},
    {"eps", TT_OPT_F32, T(eps), 0, FMAX, 1, 0, NULL, "1e-8", "AdamW eps", "AdamW epsilon", 1, 0},
    {"weight-decay", TT_OPT_F32, T(weight_decay), 0, FMAX, 0, 0, NULL, "0.1", "weight decay", "AdamW weight decay on matrices", 1, 0},
    {"clip", TT_OPT_F32, T(clip), -FMAX, FMAX, 0, 0, NULL, "1.0", "clip", "global gradient-norm clip, <= 0 off", 1, 0},
    {"accum", TT_OPT_INT, T(accum), 1, 65536, 0, 0, NULL, "1", "accum", "micro-batches per optimizer step", 1, 0},
    {"seed", TT_OPT_U64, T(seed), 0, 18446744073709551615.0, 0, 0, NULL, "1337", "seed", "seed for weights and batches", 1, 0},
    {"dropout", TT_OPT_F32, T(dropout), 0, 1, 0, 1, NULL, "0", "dropout",
     "dropout probability on embeddings, attention and residual branches (training only)", 0, 1},
    {"precision", TT_OPT_CHOICE, T(precision), 0, 1, 0, 0, "f32|f16", "f32", "precision",
     "f32, or f16 mixed precision (WebGPU with shader-f16): f16 matmul operands with f32 accumulation, f32 "
     "weights, optimizer and reductions, dynamic loss scaling", 0, 1},
    {"eval-every", TT_OPT_I64, T(eval_every), 0, BIG, 0, 0, NULL, "100", "eval-every",
     "validation every N steps, 0 = only at the end", 0, 0},
    {"eval-batches", TT_OPT_INT, T(eval_batches), 1, 1000000, 0, 0, NULL, "8", "eval-batches", "fixed validation batches", 0, 0},
    {"backend", TT_OPT_CHOICE, R(backend), 0, 2, 0, 0, "auto|cpu|webgpu", "auto", "backend",
     "cpu | webgpu | auto (webgpu on a real GPU, else cpu)", 0, 0},
    {"threads", TT_OPT_INT, R(threads), 0, 1024, 0, 0, NULL, "0", "threads", "CPU threads, 0 = all cores", 0, 0},
    {"save-every", TT_OPT_I64, R(save_every), 0, BIG, 0, 0, NULL, "500", "save-every", "also save every N steps, 0 = off", 0, 0},
    {"save-seconds", TT_OPT_F64, R(save_seconds), 0, 1e9, 0, 0, NULL, "0", "save-seconds",
     "also save once S seconds passed since the last save, 0 = off", 0, 0},
    {"stop-after", TT_OPT_I64, R(stop_after), 0, BIG, 0, 0, NULL, "0", "stop-after",
     "stop (and save) after N steps of this run, 0 = never; resuming continues", 0, 0},
    {"target-val", TT_OPT_F64, R(target_val), 0, 1e9, 0, 0, NULL, "0", "target-val",
     "report the step and wall time at which the validation loss first reaches <= X, 0 = off", 0, 0},
    {"stop-at-target", TT_OPT_INT, R(stop_at_target), 0, 1, 0, 0, NULL, "0", "stop-at-target",
     "1: stop (and save) once --target-val is reached", 0, 0},
    {"pipeline", TT_OPT_INT, R(pipeline), 0, 1, 0, 0, NULL, "1", "pipeline",
     "1: overlap step k+1 with step k where the backend can (GPU)", 0, 0},
};
#define N_OPT ((int)(sizeof table / sizeof table[0]))

/* names written by older builds (checkpoint metadata, saved web options) */
static const struct {
    const char *alias, *name;
} aliases[] = {
    {"n_layer", "layers"}, {"d_model", "d-model"}, {"n_head", "heads"}, {"min_lr", "min-lr"},
    {"sched", "schedule"}, {"weight_decay", "weight-decay"}, {"wd", "weight-decay"}, {"eval_every", "eval-every"},
    {"eval_batches", "eval-batches"},
};

int tt_option_count(void) { return N_OPT; }
const tt_option *tt_option_at(int i) { return i >= 0 && i < N_OPT ? &table[i] : NULL; }

const tt_option *tt_option_find(const char *name) {
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcmp(name, aliases[i].alias) == 0) name = aliases[i].name;
    for (int i = 0; i < N_OPT; i++)
        if (strcmp(name, table[i].name) == 0) return &table[i];
    return NULL;
}

const char *tt_option_choice(const tt_option *opt, int index, char *buf, size_t cap) {
    const char *p = opt->choices ? opt->choices : "";
    for (int i = 0; *p; i++) {
        const char *e = strchr(p, '|');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (i == index) {
            snprintf(buf, cap, "%.*s", (int)n, p);
            return buf;
        }
        p += n + (e ? 1 : 0);
    }
    return "?";
}

int tt_option_set_parse(const tt_option *opt, const char *text, int *mask) {
    /* extra spellings: GPT-2 module suffixes as peft's target_modules names them */
    static const struct {
        const char *word;
        int bits;
    } extra[] = {{"all", TT_LORA_ALL},
                 {"c_proj", 1 << TT_LORA_ATTN_C_PROJ | 1 << TT_LORA_MLP_C_PROJ},
                 {"c_fc", 1 << TT_LORA_C_FC},
                 {"attn.c_attn", 1 << TT_LORA_C_ATTN}};
    int m = 0;
    const char *p = text;
    char buf[32], word[32];
    for (;;) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 0 || n >= sizeof word) return -1;
        memcpy(word, p, n);
        word[n] = 0;
        int bits = 0;
        for (int i = 0; i <= (int)opt->hi && !bits; i++)
            if ((int)opt->hi >> i & 1 && strcmp(tt_option_choice(opt, i, buf, sizeof buf), word) == 0) bits = 1 << i;
        for (size_t k = 0; k < sizeof extra / sizeof extra[0] && !bits; k++)
            if (strcmp(extra[k].word, word) == 0) bits = extra[k].bits & (int)opt->hi;
        if (!bits) return -1;
        m |= bits;
        if (!e) break;
        p = e + 1;
    }
    *mask = m;
    return 0;
}

const char *tt_option_set_text(const tt_option *opt, int mask, char *buf, size_t cap) {
    char c[32];
    size_t k = 0;
    if (cap) buf[0] = 0;
    for (int i = 0; i < 31 && k < cap; i++)
        if (mask >> i & 1) k += (size_t)snprintf(buf + k, cap - k, "%s%s", k ? "," : "", tt_option_choice(opt, i, c, sizeof c));
    return buf;
}

static int choice_index(const tt_option *opt, const char *val) {
    char buf[32];
    for (int i = 0; i <= (int)opt->hi; i++)
        if (strcmp(tt_option_choice(opt, i, buf, sizeof buf), val) == 0) return i;
    return -1;
}

static size_t type_size(tt_opt_type t) {
    return t == TT_OPT_INT || t == TT_OPT_CHOICE || t == TT_OPT_SET ? sizeof(int) : t == TT_OPT_F32 ? sizeof(float) : 8;
}

static void *field(const tt_option *opt, tt_model_config *m, tt_train_config *t, tt_run_config *r) {
    char *base = opt->where == TT_OPT_MODEL ? (char *)m : opt->where == TT_OPT_TRAIN ? (char *)t : (char *)r;
    return base + opt->off;
}

/* "in [0, 1)", ">= 0", "a finite number" */
static void range_text(const tt_option *opt, char *buf, size_t cap) {
    int ints = opt->type == TT_OPT_INT || opt->type == TT_OPT_I64 || opt->type == TT_OPT_U64;
    if (ints && opt->hi < BIG) snprintf(buf, cap, "an integer in %.17g..%.17g", opt->lo, opt->hi);
    else if (ints) snprintf(buf, cap, "an integer >= %.17g", opt->lo);
    else if (opt->lo <= -FMAX && opt->hi >= FMAX) snprintf(buf, cap, "a finite number");
    else if (opt->hi >= FMAX) snprintf(buf, cap, "a finite number %s %g", opt->lo_open ? ">" : ">=", opt->lo);
    else snprintf(buf, cap, "in %c%g, %g%c", opt->lo_open ? '(' : '[', opt->lo, opt->hi, opt->hi_open ? ')' : ']');
}

static int in_range(const tt_option *opt, double x) {
    if (!isfinite(x)) return 0;
    if (opt->lo_open ? !(x > opt->lo) : !(x >= opt->lo)) return 0;
    if (opt->hi_open ? !(x < opt->hi) : !(x <= opt->hi)) return 0;
    return 1;
}

static int bad(const tt_option *opt, const char *got, tt_status *st) {
    char r[96];
    if (opt->type == TT_OPT_SET)
        return tt_fail(st, TT_EINVAL, "%s must be a comma list of %s, c_proj or all (got %.60s)", opt->label,
                       "c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj", got);
    if (opt->type == TT_OPT_CHOICE) {
        snprintf(r, sizeof r, "%s", opt->choices);
        for (char *p = r; *p; p++)
            if (*p == '|') *p = ',';
        return tt_fail(st, TT_EINVAL, "%s must be one of %s (got %s)", opt->label, r, got);
    }
    range_text(opt, r, sizeof r);
    return tt_fail(st, TT_EINVAL, "%s must be %s (got %s)", opt->label, r, got);
}

static int parse_value(const tt_option *opt, const char *val, void *dst, tt_status *st) {
    char *end = NULL;
    errno = 0;
    switch (opt->type) {
    case TT_OPT_INT:
    case TT_OPT_I64: {
        long long x = strtoll(val, &end, 10);
        if (!*val || *end || errno || !in_range(opt, (double)x)) return bad(opt, val, st);
        if (opt->type == TT_OPT_INT) *(int *)dst = (int)x;
        else *(int64_t *)dst = x;
        return TT_OK;
    }
    case TT_OPT_U64: {
        unsigned long long x = strtoull(val, &end, 10);
        if (!*val || *end || errno || val[0] == '-' || !in_range(opt, (double)x)) return bad(opt, val, st);
        *(uint64_t *)dst = x;
        return TT_OK;
    }
    case TT_OPT_F32:
    case TT_OPT_F64: {
        double x = strtod(val, &end);
        if (!*val || *end) return bad(opt, val, st);
        if (opt->type == TT_OPT_F32) {
            float f = (float)x;
            if (!in_range(opt, f)) return bad(opt, val, st);
            *(float *)dst = f;
        } else {
            if (!in_range(opt, x)) return bad(opt, val, st);
            *(double *)dst = x;
        }
        return TT_OK;
    }
    case TT_OPT_CHOICE: {
        int i = choice_index(opt, val);
        if (i < 0) return bad(opt, val, st);
        *(int *)dst = i;
        return TT_OK;
    }
    case TT_OPT_SET: {
        int m;
        if (tt_option_set_parse(opt, val, &m)) return bad(opt, val, st);
        *(int *)dst = m;
        return TT_OK;
    }
    case TT_OPT_TEXT: break;
    }
    return TT_OK;
}

void tt_options_init(tt_options *o) {
    memset(o, 0, sizeof *o);
    o->run.backend = 0;
    o->run.threads = 0;
    o->run.save_every = 500;
    o->run.pipeline = 1;
}

int tt_options_set(tt_options *o, const char *name, const char *value, tt_status *st) {
    const tt_option *opt = tt_option_find(name);
    if (!opt) return tt_fail(st, TT_EINVAL, "unknown option '%.60s'", name);
    if (opt->where == TT_OPT_PRESET) {
        if (!tt_preset_find(value)) {
            char list[400] = "";
            for (int i = 0; i < tt_n_presets; i++) {
                size_t n = strlen(list);
                snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", tt_presets[i].name);
            }
            return tt_fail(st, TT_EINVAL, "unknown preset '%.40s' (valid: %s)", value, list);
        }
        snprintf(o->preset, sizeof o->preset, "%s", value);
    } else if (opt->where == TT_OPT_TOKENIZER) {
        if (!value[0] || strlen(value) >= sizeof o->tokenizer)
            return tt_fail(st, TT_EINVAL, "tokenizer must be byte or a path of at most %zu bytes", sizeof o->tokenizer - 1);
        snprintf(o->tokenizer, sizeof o->tokenizer, "%s", value);
    } else {
        TT_CHECK(parse_value(opt, value, field(opt, &o->model, &o->train, &o->run), st));
    }
    o->given |= 1ull << (opt - table);
    return TT_OK;
}

int tt_options_parse(tt_options *o, const char *text, tt_status *st) {
    const char *p = text ? text : "";
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == '\n') p++;
        if (!*p) break;
        const char *e = p;
        while (*e && *e != ' ' && *e != '\t' && *e != '\n') e++;
        char tok[160];
        size_t n = (size_t)(e - p);
        if (n >= sizeof tok) return tt_fail(st, TT_EINVAL, "option too long: '%.40s...'", p);
        memcpy(tok, p, n);
        tok[n] = 0;
        char *eq = strchr(tok, '=');
        if (!eq) return tt_fail(st, TT_EINVAL, "option '%s' is not name=value", tok);
        *eq = 0;
        TT_CHECK(tt_options_set(o, tok, eq + 1, st));
        p = e;
    }
    return TT_OK;
}

static int given(const tt_options *o, const tt_option *opt) { return opt && (o->given >> (opt - table) & 1); }
int tt_options_given(const tt_options *o, const char *name) { return given(o, tt_option_find(name)); }
void tt_options_forget(tt_options *o, const char *name) {
    const tt_option *opt = tt_option_find(name);
    if (!opt) return;
    o->given &= ~(1ull << (opt - table));
    if (opt->where == TT_OPT_PRESET) o->preset[0] = 0;
    if (opt->where == TT_OPT_TOKENIZER) o->tokenizer[0] = 0;
}

int tt_options_resolve(const tt_options *o, const tt_model_config *base_model, const tt_train_config *base_train,
                       tt_model_config *cfg, tt_train_config *tc, tt_status *st) {
    if (base_model && !o->preset[0]) {
        *cfg = *base_model;
    } else {
        const tt_preset *p = tt_preset_find(o->preset[0] ? o->preset : table[0].def);
        if (!p) return tt_fail(st, TT_EINVAL, "unknown preset '%s'", o->preset);
        *cfg = p->cfg;
    }
    if (base_train) {
        *tc = *base_train;
    } else {
        tt_train_config_default(tc, given(o, tt_option_find("steps")) ? o->train.steps : 2000);
        tc->lr = tt_default_lr(cfg);
    }
    tt_run_config run_unused;
    for (int i = 0; i < N_OPT; i++) {
        const tt_option *opt = &table[i];
        if (!given(o, opt) || (opt->where != TT_OPT_MODEL && opt->where != TT_OPT_TRAIN)) continue;
        void *dst = field(opt, cfg, tc, &run_unused);
        const void *src = field(opt, (tt_model_config *)&o->model, (tt_train_config *)&o->train, &run_unused);
        memcpy(dst, src, type_size(opt->type));
    }
    /* the cosine floor follows the peak unless given */
    if (!base_train && !given(o, tt_option_find("min-lr"))) tc->min_lr = tc->lr / 10.0f;
    /* a resumed run cut shorter than its warmup ends inside it */
    if (base_train && !given(o, tt_option_find("warmup")) && tc->warmup > tc->steps) tc->warmup = tc->steps;
    /* LoRA: the table's defaults for what a LoRA run leaves out; nothing of it without a rank */
    if (cfg->lora_rank > 0) {
        if (cfg->lora_alpha <= 0.0f) cfg->lora_alpha = 8.0f;
        if (!cfg->lora_targets) cfg->lora_targets = TT_LORA_ALL;
    } else {
        cfg->lora_rank = cfg->lora_targets = 0;
        cfg->lora_alpha = 0.0f;
    }
    TT_CHECK(tt_config_validate(cfg, st));
    TT_CHECK(tt_train_config_validate(tc, st));
    return tt_dropout_check(cfg, tc->dropout, st);
}

static void value_text(const tt_option *opt, const void *p, char *buf, size_t cap) {
    char c[32];
    switch (opt->type) {
    case TT_OPT_INT: snprintf(buf, cap, "%d", *(const int *)p); break;
    case TT_OPT_I64: snprintf(buf, cap, "%lld", (long long)*(const int64_t *)p); break;
    case TT_OPT_U64: snprintf(buf, cap, "%llu", (unsigned long long)*(const uint64_t *)p); break;
    case TT_OPT_F32: snprintf(buf, cap, "%g", *(const float *)p); break;
    case TT_OPT_F64: snprintf(buf, cap, "%g", *(const double *)p); break;
    case TT_OPT_CHOICE: snprintf(buf, cap, "%s", tt_option_choice(opt, *(const int *)p, c, sizeof c)); break;
    case TT_OPT_SET: tt_option_set_text(opt, *(const int *)p, buf, cap); break;
    case TT_OPT_TEXT: snprintf(buf, cap, "?"); break;
    }
}

int tt_options_check_resume(const tt_options *o, const tt_train_config *ckpt, tt_status *st) {
    tt_run_config r;
    tt_model_config m;
    for (int i = 0; i < N_OPT; i++) {
        const tt_option *opt = &table[i];
        if (!opt->keep_on_resume || !given(o, opt)) continue;
        const void *a = field(opt, (tt_model_config *)&o->model, (tt_train_config *)&o->train, &r);
        const void *b = field(opt, &m, (tt_train_config *)ckpt, &r);
        char va[48], vb[48];
        value_text(opt, a, va, sizeof va);
        value_text(opt, b, vb, sizeof vb);
        int same = opt->type == TT_OPT_F32 ? *(const float *)a == *(const float *)b
                   : opt->type == TT_OPT_U64 || opt->type == TT_OPT_I64 ? *(const int64_t *)a == *(const int64_t *)b
                                                                         : *(const int *)a == *(const int *)b;
        if (!same)
            return tt_fail(st, TT_EMISMATCH, "config mismatch on resume: --%s %s but the checkpoint was trained with %s",
                           opt->name, va, vb);
    }
    return TT_OK;
}

const char *tt_run_backend(const tt_run_config *r) {
    static const char *const names[] = {"auto", "cpu", "webgpu"};
    return r->backend >= 0 && r->backend < 3 ? names[r->backend] : "auto";
}

/* ---------------- train config: defaults and validation ---------------- */

void tt_train_config_default(tt_train_config *tc, int64_t steps) {
    memset(tc, 0, sizeof *tc);
    tc->steps = steps;
    tc->lr = 1e-3f;
    tc->min_lr = tc->lr / 10.0f;
    tc->warmup = TT_MIN((int64_t)100, steps / 20);
    tc->sched = TT_SCHED_COSINE;
    tc->beta1 = 0.9f;
    tc->beta2 = 0.95f;
    tc->eps = 1e-8f;
    tc->weight_decay = 0.1f;
    tc->clip = 1.0f;
    tc->accum = 1;
    tc->seed = 1337;
    tc->eval_every = 100;
    tc->eval_batches = 8;
    tc->dropout = 0.0f;
}

int tt_train_config_validate(const tt_train_config *tc, tt_status *st) {
    tt_model_config m;
    tt_run_config r;
    for (int i = 0; i < N_OPT; i++) {
        const tt_option *opt = &table[i];
        if (opt->where != TT_OPT_TRAIN) continue;
        const void *p = field(opt, &m, (tt_train_config *)tc, &r);
        double x = opt->type == TT_OPT_INT || opt->type == TT_OPT_CHOICE ? *(const int *)p
                   : opt->type == TT_OPT_I64                             ? (double)*(const int64_t *)p
                   : opt->type == TT_OPT_U64                             ? (double)*(const uint64_t *)p
                                                                          : (double)*(const float *)p;
        if (!in_range(opt, x)) {
            char got[48];
            if (opt->type == TT_OPT_CHOICE) snprintf(got, sizeof got, "%d", *(const int *)p);
            else value_text(opt, p, got, sizeof got);
            return bad(opt, got, st);
        }
    }
    if (tc->min_lr > tc->lr)
        return tt_fail(st, TT_EINVAL, "min learning rate must be in [0, lr = %g] (got %g)", tc->lr, tc->min_lr);
    if (tc->warmup > tc->steps)
        return tt_fail(st, TT_EINVAL, "warmup (%lld) must not exceed steps (%lld)", (long long)tc->warmup, (long long)tc->steps);
    return TT_OK;
}
