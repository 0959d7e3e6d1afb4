/* cli.h — what the `tinytrain` commands (src/cli/cmd_<command>.c) share:
 * exit codes, the option ids and parsed options, the one-line error and
 * notice printers, option parsing and help, model/backend/checkpoint set-up,
 * output folder checks, number formats and JSON output on stdout (written
 * through src/io/json's writer). */
#ifndef TT_CLI_H
#define TT_CLI_H

#define _GNU_SOURCE
#include <stdio.h>
#include <stdint.h>

#include "backend.h"
#include "engine/backend_create.h"
#include "train/checkpoint.h"
#include "config.h"
#include "train/data.h"
#include "model.h"
#include "io/plot.h"
#include "pool.h"
#include "rng.h"
#include "cpu/sample.h"
#include "cpu/simd.h"
#include "train/trainer.h"
#include "train/runtok.h"

#define EXIT_USAGE 2
#define EXIT_FAIL 1
#define EXIT_INTERRUPTED 130

/* Default optimizer steps of `tinytrain train` (any preset): about two to
 * three minutes for the default preset on a 2-core machine. */
#define DEFAULT_STEPS 2000
#define DEFAULT_PRESET "small"
#define CKPT_NAME "checkpoint.safetensors"

enum {
    O_HELP = 1, O_PRESET, O_LAYERS, O_DMODEL, O_HEADS, O_CTX, O_BATCH, O_STEPS, O_LR, O_MINLR, O_WARMUP, O_SCHED,
    O_ACCUM, O_SEED, O_EVAL_EVERY, O_EVAL_BATCHES, O_DATA, O_OUT, O_RESUME, O_THREADS, O_BACKEND, O_JSON,
    O_SAVE_EVERY, O_SAMPLE_TOKENS, O_CKPT, O_PROMPT, O_TEMP, O_TOPK, O_TOPP, O_TOKENS, O_BATCHES, O_WARMUP_STEPS,
    O_LOG_EVERY, O_WD, O_CLIP, O_STOP_AFTER, O_MIN_TIME, O_MAX_STEPS, O_LABEL, O_REPS, O_DETAIL, O_PHASES, O_PIPELINE,
    O_FORCE, O_INIT_FROM, O_CONFIG, O_PRINT_CONFIG, O_ADAPTER, O_ADAPTER_IN, O_IDS, O_LOGITS,
    O_TABLE /* an option of the training option table (src/train/options.c), passed on by name */
};

typedef struct {
    const char *name;
    int id;
    int has_arg;
    const char *help;
} opt_def;

#define OPT_MODEL                                                                                   \
    {"preset", O_PRESET, 1, "model preset (see `tinytrain info`)"},                                 \
        {"layers", O_LAYERS, 1, "override: transformer blocks"},                                    \
        {"d-model", O_DMODEL, 1, "override: embedding width"},                                      \
        {"heads", O_HEADS, 1, "override: attention heads"},                                         \
        {"ctx", O_CTX, 1, "override: context length (bytes)"},                                      \
        {"batch", O_BATCH, 1, "override: sequences per micro-batch"}

typedef struct {
    int set[64];
    const char *preset;
    int layers, d_model, heads, ctx, batch;
    int64_t steps, warmup, eval_every, save_every, sample_tokens, tokens, bench_warmup, log_every, stop_after;
    float lr, min_lr, temperature, top_p, wd, clip, min_time;
    int64_t max_steps;
    int sched, accum, eval_batches, threads, top_k, json, batches, reps, pipeline, print_config;
    uint64_t seed;
    const char *data, *out, *resume, *backend, *ckpt, *prompt, *label, *init_from, *config;
    const char *adapter; /* --adapter DIR (export: --merge-adapter DIR): a peft LoRA folder to load onto the model */
    const char *ids; /* --ids: token ids, comma-separated */
    int logits;      /* --logits */
    /* O_TABLE options as given, in order: applied with tt_options_set by the command */
    const char *table_name[8], *table_val[8];
    int n_table;
} opts;


int error_line(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void notice(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* option parsing: returns 0, or an exit code (help asked: -1) */
int parse_opts(const char *cmd, const opt_def *defs, int argc, char **argv, int first, opts *o);
const char *opt_name(const opt_def *defs, int id);
void command_help(const char *cmd, const char *what, const opt_def *defs);
/* A command's arguments into *o (zeroed first): 0, -1 when --help was asked
 * and printed (the command then exits 0), or an exit code. */
int command_args(const char *cmd, const char *what, const opt_def *defs, int argc, char **argv, opts *o);
void usage(FILE *f);
void usage_opts(FILE *f, const opt_def *defs);

void preset_list(char *buf, size_t cap);
int model_config(const opts *o, const tt_model_config *base, const char *default_preset, tt_model_config *cfg,
                 const char **preset_name);
int make_backend(const char *kind, const tt_model_config *cfg, const tt_backend_opts *bo, int quiet, tt_backend **be);
int table_options(const opts *o, tt_model_config *cfg, tt_train_config *tc);
/* A checkpoint file, a run folder (its checkpoint.safetensors) or a Hugging
 * Face folder (hf.h: weights only, step 0, default train config). adapter
 * (NULL: none): a peft LoRA folder (io/peft.h) loaded onto it; the model is
 * then that LoRA model, its base the weights at path (a LoRA model's
 * adapters merged in). */
int load_ckpt(const char *path, const char *adapter, tt_train_state *s);
/* load_ckpt and the model's tokenizer (train/runtok.h: the files beside the
 * checkpoint, checked against its hash; a Hugging Face folder's own) */
int load_model(const char *path, const char *adapter, tt_train_state *s, tt_runtok *rt);
/* the option --adapter DIR of the commands that read a model */
#define OPT_ADAPTER_IN {"adapter", O_ADAPTER_IN, 1, "DIR: a peft LoRA adapter folder to load onto the model"}
int make_dirs(const char *path);
int check_out_dir(const char *dir, int *created);
/* path, or its first and last 60 characters when it is too long for a message line */
const char *short_path(const char *path, char *buf, size_t cap);
void fmt_duration(char *out, size_t cap, double s);
void fmt_rate(char *out, size_t cap, double x);
void fmt_count(char *out, size_t cap, int64_t x);

/* JSON on a stream: a string (escaped), a number (non-finite: null), a
 * model config object, and `,"key":"value"` */
void json_str(FILE *f, const char *s, size_t n);
void json_num(FILE *f, double x);
void json_cfg(FILE *f, const tt_model_config *c);
void json_key_str(FILE *f, const char *key, const char *val);

/* cmd_sample.c: generation shared with train's closing sample */
int print_sample(const tt_model_config *cfg, const float *params, const tt_tokenizer *tok, const char *prompt,
                 const tt_sample_config *sc, int threads, int json);
int sampler_threads(const tt_model_config *cfg, const opts *o);
const char *default_ckpt(void);

/* the commit this binary was built from (cmake/commit.cmake) */
extern const char tt_build_commit[];

int cmd_train(int argc, char **argv);
int cmd_sample(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);

#endif
