/* options.h — the one table of training options. Each option is listed once
 * with its one name, used as the CLI flag (--name), the web option key
 * (name=value) and the key in a checkpoint's config / train_config metadata;
 * its type, where it goes (model config, train config, run), default, valid
 * range and help text. tt_train_config_validate checks the train options
 * against the same ranges, so every front-end accepts the same values.
 * Names written by older builds (n_layer, weight_decay, wd, sched, ...) are
 * read through an alias list (tt_option_find); nothing writes them. */
#ifndef TT_OPTIONS_H
#define TT_OPTIONS_H

#include "train.h"

/* TT_OPT_SET: a comma list of the names in `choices` ("a|b|c"), stored as
 * an int bitmask (bit i: name i); the extra words of tt_option_set_parse are
 * read too. Written back as the comma list of canonical names. */
typedef enum { TT_OPT_INT, TT_OPT_I64, TT_OPT_U64, TT_OPT_F32, TT_OPT_F64, TT_OPT_CHOICE, TT_OPT_TEXT, TT_OPT_SET } tt_opt_type;
/* TT_OPT_TOKENIZER: the run's tokenizer (text, in tt_options.tokenizer): a
 * property of the model, recorded in a checkpoint by kind and hash
 * (checkpoint.h), its files kept in the run folder (train/runtok.h). */
typedef enum { TT_OPT_PRESET, TT_OPT_MODEL, TT_OPT_TRAIN, TT_OPT_RUN, TT_OPT_TOKENIZER } tt_opt_where;

/* Run options: how a run is driven, not what is trained (not in checkpoints). */
typedef struct {
    int backend;          /* index into "auto|cpu|webgpu" (tt_run_backend) */
    int threads;          /* CPU threads, 0: all cores */
    int64_t save_every;   /* save every N steps, 0: off */
    double save_seconds;  /* also save when this much wall time passed since the last save, 0: off */
    int64_t stop_after;   /* stop (saved) after N steps of this run, 0: never */
    int pipeline;         /* 1: overlap step k+1 with step k where the backend can */
    double target_val;    /* > 0: report when the validation loss first reaches <= this (0: off) */
    int stop_at_target;   /* 1: stop (saved) there */
} tt_run_config;

typedef struct {
    const char *name;     /* the one spelling */
    tt_opt_type type;
    tt_opt_where where;
    size_t off;           /* field offset in tt_model_config / tt_train_config / tt_run_config */
    double lo, hi;        /* valid range; lo_open / hi_open make an end exclusive */
    int lo_open, hi_open;
    const char *choices;  /* TT_OPT_CHOICE: "a|b|c", stored as the index; TT_OPT_SET: the names of the bits */
    const char *def;      /* default, as text */
    const char *label;    /* what error messages call it */
    const char *help;
    int keep_on_resume;   /* a resumed run must keep the checkpoint's value */
    int may_be_absent;    /* checkpoints written before this option existed lack it: its default applies */
} tt_option;

int tt_option_count(void);
const tt_option *tt_option_at(int i);
/* By name or by an alias written by an older build; NULL if unknown. */
const tt_option *tt_option_find(const char *name);

/* Options given by a user, before defaults are filled in. */
typedef struct {
    char preset[32];
    char tokenizer[4096]; /* "byte" or a tokenizer path (train/runtok.h); "" = not given */
    tt_model_config model;
    tt_train_config train;
    tt_run_config run;
    uint64_t given;       /* bit i: option i was given */
} tt_options;

/* Empty (nothing given), run options at their defaults. */
void tt_options_init(tt_options *o);
/* Parses value for option `name` (or an alias), checks its range and stores
 * it. A one-line error names the option. */
int tt_options_set(tt_options *o, const char *name, const char *value, tt_status *st);
/* Space-separated name=value pairs (the web's form); later ones win. */
int tt_options_parse(tt_options *o, const char *text, tt_status *st);
int tt_options_given(const tt_options *o, const char *name);
/* As if option `name` had not been given (its default applies again). */
void tt_options_forget(tt_options *o, const char *name);
/* The model and train config of a run: from base_model (NULL: the preset
 * given or the default preset) and base_train (NULL: defaults for the steps
 * given: warmup 5% of steps up to 100, lr tt_default_lr of the model, min-lr
 * lr/10), then every option given. Both are validated. */
int tt_options_resolve(const tt_options *o, const tt_model_config *base_model, const tt_train_config *base_train,
                       tt_model_config *cfg, tt_train_config *tc, tt_status *st);
/* A resumed run: every given option marked keep_on_resume equals the
 * checkpoint's (else TT_EMISMATCH naming the first that differs). */
int tt_options_check_resume(const tt_options *o, const tt_train_config *ckpt, tt_status *st);
/* "auto", "cpu" or "webgpu" */
const char *tt_run_backend(const tt_run_config *r);
/* Text of a choice value (e.g. the schedule) or "?". */
const char *tt_option_choice(const tt_option *opt, int index, char *buf, size_t cap);
/* A TT_OPT_SET value: text -> bitmask. Words: the names of `choices`, "all"
 * (every bit), and for lora-targets the GPT-2/peft spellings "c_proj" (both
 * projections), "c_fc", "attn.c_attn". Returns 0, or -1 for an unknown or
 * empty list. */
int tt_option_set_parse(const tt_option *opt, const char *text, int *mask);
/* bitmask -> "name,name" in bit order ("" for 0). */
const char *tt_option_set_text(const tt_option *opt, int mask, char *buf, size_t cap);

#endif
