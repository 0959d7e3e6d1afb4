/* main.c — the `tinytrain` command-line tool: train, sample, eval, info,
 * export, bench. Owns argument parsing, output formats (live progress line on
 * a terminal, plain lines when piped, JSON lines with --json) and the mapping
 * of every bad input to one line "tinytrain: error: ..." on stderr with exit
 * code 2 (bad command line / option value) or 1 (anything else). */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "checkpoint.h"
#include "config.h"
#include "data.h"
#include "model.h"
#include "plot.h"
#include "pool.h"
#include "rng.h"
#include "sample.h"
#include "simd.h"
#include "trainer.h"
#include "webgpu_profile.h"

#define EXIT_USAGE 2
#define EXIT_FAIL 1
#define EXIT_INTERRUPTED 130

/* Default optimizer steps of `tinytrain train` (any preset): about two to
 * three minutes for the default preset on a 2-core machine. */
#define DEFAULT_STEPS 2000
#define DEFAULT_PRESET "small"
#define CKPT_NAME "checkpoint.safetensors"

static int error_line(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int error_line(int code, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* exactly one line */
    for (char *p = msg; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' ';
    fflush(stdout);
    fprintf(stderr, "tinytrain: error: %s\n", msg);
    return code;
}

static void notice(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void notice(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fflush(stdout);
    fprintf(stderr, "tinytrain: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* ------------------------------------------------------------------ */
/* options                                                             */
/* ------------------------------------------------------------------ */

enum {
    O_HELP = 1, O_PRESET, O_LAYERS, O_DMODEL, O_HEADS, O_CTX, O_BATCH, O_STEPS, O_LR, O_MINLR, O_WARMUP, O_SCHED,
    O_ACCUM, O_SEED, O_EVAL_EVERY, O_EVAL_BATCHES, O_DATA, O_OUT, O_RESUME, O_THREADS, O_BACKEND, O_JSON,
    O_SAVE_EVERY, O_SAMPLE_TOKENS, O_CKPT, O_PROMPT, O_TEMP, O_TOPK, O_TOPP, O_TOKENS, O_BATCHES, O_WARMUP_STEPS,
    O_LOG_EVERY, O_WD, O_CLIP, O_STOP_AFTER, O_MIN_TIME, O_MAX_STEPS, O_LABEL, O_REPS, O_DETAIL
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

static const opt_def train_opts[] = {
    OPT_MODEL,
    {"steps", O_STEPS, 1, "optimizer steps (default 2000)"},
    {"lr", O_LR, 1, "peak learning rate (default 5e-3, times 128/d_model above d_model 128)"},
    {"min-lr", O_MINLR, 1, "cosine floor (default lr/10)"},
    {"warmup", O_WARMUP, 1, "linear warmup steps (default 5% of steps, at most 100)"},
    {"schedule", O_SCHED, 1, "cosine | constant"},
    {"weight-decay", O_WD, 1, "AdamW weight decay on matrices (default 0.1)"},
    {"clip", O_CLIP, 1, "global gradient-norm clip, <= 0 off (default 1.0)"},
    {"accum", O_ACCUM, 1, "micro-batches per optimizer step (default 1)"},
    {"seed", O_SEED, 1, "seed for weights and batches (default 1337)"},
    {"eval-every", O_EVAL_EVERY, 1, "validation every N steps, 0 = only at the end (default 100)"},
    {"eval-batches", O_EVAL_BATCHES, 1, "fixed validation batches (default 8)"},
    {"save-every", O_SAVE_EVERY, 1, "also save the checkpoint every N steps (default 500)"},
    {"data", O_DATA, 1, "text file or folder (default: the fortunes collection)"},
    {"out", O_OUT, 1, "output folder for checkpoint, CSV, SVG (default runs/<preset>)"},
    {"resume", O_RESUME, 1, "continue from a checkpoint"},
    {"threads", O_THREADS, 1, "CPU threads (default: all cores)"},
    {"backend", O_BACKEND, 1, "cpu | webgpu | auto (default auto: webgpu on a real GPU, else cpu)"},
    {"stop-after", O_STOP_AFTER, 1, "stop (and save) after N steps of this run; --resume continues"},
    {"log-every", O_LOG_EVERY, 1, "plain progress line every N steps when not on a terminal"},
    {"sample-tokens", O_SAMPLE_TOKENS, 1, "bytes of sample text printed after training (default 400, 0 = none)"},
    {"json", O_JSON, 0, "JSON lines on stdout"},
    {"help", O_HELP, 0, "this help"},
    {NULL, 0, 0, NULL}};

static const opt_def sample_opts[] = {
    {"ckpt", O_CKPT, 1, "checkpoint (default runs/" DEFAULT_PRESET "/" CKPT_NAME ")"},
    {"prompt", O_PROMPT, 1, "text to continue (default: a new line)"},
    {"temperature", O_TEMP, 1, "0 = greedy (default 0.8)"},
    {"top-k", O_TOPK, 1, "keep the k most likely bytes, 0 = all (default 40)"},
    {"top-p", O_TOPP, 1, "nucleus probability, 1 = off (default 0.95)"},
    {"tokens", O_TOKENS, 1, "bytes to generate (default 500)"},
    {"seed", O_SEED, 1, "sampling seed (default 1337)"},
    {"threads", O_THREADS, 1, "CPU threads for generation"},
    {"json", O_JSON, 0, "print one JSON object"},
    {"help", O_HELP, 0, "this help"},
    {NULL, 0, 0, NULL}};

static const opt_def eval_opts[] = {
    {"ckpt", O_CKPT, 1, "checkpoint (default runs/" DEFAULT_PRESET "/" CKPT_NAME ")"},
    {"data", O_DATA, 1, "text file or folder (default: the fortunes collection)"},
    {"batches", O_BATCHES, 1, "validation batches (default: the checkpoint's eval-batches)"},
    {"threads", O_THREADS, 1, "CPU threads"},
    {"backend", O_BACKEND, 1, "cpu | webgpu | auto (default cpu)"},
    {"json", O_JSON, 0, "print one JSON object"},
    {"help", O_HELP, 0, "this help"},
    {NULL, 0, 0, NULL}};

static const opt_def info_opts[] = {
    {"threads", O_THREADS, 1, "CPU threads to report"},
    {"json", O_JSON, 0, "print one JSON object"},
    {"help", O_HELP, 0, "this help"},
    {NULL, 0, 0, NULL}};

static const opt_def export_opts[] = {
    {"ckpt", O_CKPT, 1, "checkpoint (default runs/" DEFAULT_PRESET "/" CKPT_NAME ")"},
    {"out", O_OUT, 1, "output .safetensors (default model.safetensors next to the checkpoint)"},
    {"help", O_HELP, 0, "this help"},
    {NULL, 0, 0, NULL}};

static const opt_def bench_opts[] = {
    OPT_MODEL,
    {"backend", O_BACKEND, 1, "cpu | webgpu | auto (default cpu)"},
    {"steps", O_STEPS, 1, "measured steps after warm-up, >= 10 (default 40: 50 steps from init)"},
    {"warmup", O_WARMUP_STEPS, 1, "warm-up steps from init, not timed (default 10)"},
    {"min-time", O_MIN_TIME, 1, "measure more steps until the measured ones take >= S seconds (default 0)"},
    {"max-steps", O_MAX_STEPS, 1, "cap on measured steps when --min-time extends the run (default 1000)"},
    {"threads", O_THREADS, 1, "CPU threads (default: all cores)"},
    {"accum", O_ACCUM, 1, "micro-batches per step (default 1)"},
    {"data", O_DATA, 1, "text file or folder for the batches (default: the fortunes collection)"},
    {"seed", O_SEED, 1, "seed for weights and batches (default 1337)"},
    {"label", O_LABEL, 1, "name of this cell in the JSON output (e.g. cpu-16t)"},
    {"json", O_JSON, 0, "print one JSON object"},
    {"help", O_HELP, 0, "this help"},
    {NULL, 0, 0, NULL}};

static const opt_def profile_opts[] = {
    OPT_MODEL,
    {"reps", O_REPS, 1, "times each dispatch site runs back to back per measurement (default 20)"},
    {"detail", O_DETAIL, 0, "one row per matmul shape / attention tile instead of per kernel"},
    {"seed", O_SEED, 1, "seed for the weights (default 1337)"},
    {"json", O_JSON, 0, "print one JSON object"},
    {"help", O_HELP, 0, "this help"},
    {NULL, 0, 0, NULL}};

typedef struct {
    int set[64];
    const char *preset;
    int layers, d_model, heads, ctx, batch;
    int64_t steps, warmup, eval_every, save_every, sample_tokens, tokens, bench_warmup, log_every, stop_after;
    float lr, min_lr, temperature, top_p, wd, clip, min_time;
    int64_t max_steps;
    int sched, accum, eval_batches, threads, top_k, json, batches, reps;
    uint64_t seed;
    const char *data, *out, *resume, *backend, *ckpt, *prompt, *label;
} opts;

static int parse_i64(const char *s, int64_t *v) {
    if (!s || !*s) return 0;
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (errno || *end) return 0;
    *v = x;
    return 1;
}

static int parse_f32(const char *s, float *v) {
    if (!s || !*s) return 0;
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (*end) return 0;
    *v = (float)x; /* NaN / inf / overflow pass through: validation names them */
    return 1;
}

static const char *opt_name(const opt_def *defs, int id) {
    for (const opt_def *d = defs; d->name; d++)
        if (d->id == id) return d->name;
    return "?";
}

static int bad_value(const char *name, const char *val, const char *what) {
    return error_line(EXIT_USAGE, "invalid value '%s' for --%s (expected %s)", val, name, what);
}

static int set_int(const char *name, const char *val, int lo, int hi, int *out) {
    int64_t x;
    if (!parse_i64(val, &x)) return bad_value(name, val, "an integer");
    if (x < lo || x > hi) return error_line(EXIT_USAGE, "--%s must be in %d..%d (got %s)", name, lo, hi, val);
    *out = (int)x;
    return 0;
}

static void usage_opts(FILE *f, const opt_def *defs) {
    for (const opt_def *d = defs; d->name; d++) {
        char left[64];
        snprintf(left, sizeof left, "--%s%s", d->name, d->has_arg ? " X" : "");
        fprintf(f, "  %-20s %s\n", left, d->help);
    }
}

static void usage(FILE *f) {
    fprintf(f,
            "tinytrain %s — train small GPT language models on bytes, on the CPU or WebGPU\n\n"
            "usage: tinytrain <command> [options]\n\n"
            "commands:\n"
            "  train    train a model (default: preset " DEFAULT_PRESET " on the fortunes collection), then print a sample\n"
            "  sample   generate text from a checkpoint\n"
            "  eval     validation loss of a checkpoint on a corpus\n"
            "  info     presets, memory estimates, CPU ISA, WebGPU availability\n"
            "  export   weights-only .safetensors with Hugging Face GPT-2 names\n"
            "  bench    steady-state speed of one training step\n"
            "  profile  time of every WebGPU kernel of one training step\n\n"
            "`tinytrain <command> --help` lists the options of a command.\n",
            TT_VERSION);
}

/* Parses argv[first..argc) against defs. Returns 0, or an exit code (help: -1). */
static int parse_opts(const char *cmd, const opt_def *defs, int argc, char **argv, int first, opts *o) {
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0) a = "--help";
        if (strncmp(a, "--", 2) != 0 || !a[2])
            return error_line(EXIT_USAGE, "unexpected argument '%s' for '%s' (options start with --; see tinytrain %s --help)", a, cmd, cmd);
        char name[64];
        const char *eq = strchr(a + 2, '=');
        size_t nl = eq ? (size_t)(eq - (a + 2)) : strlen(a + 2);
        if (nl >= sizeof name) nl = sizeof name - 1;
        memcpy(name, a + 2, nl);
        name[nl] = 0;
        const opt_def *d = NULL;
        for (const opt_def *p = defs; p->name; p++)
            if (strcmp(p->name, name) == 0) d = p;
        if (!d) return error_line(EXIT_USAGE, "unknown option '--%s' for '%s' (see tinytrain %s --help)", name, cmd, cmd);
        const char *val = NULL;
        if (d->has_arg) {
            if (eq) val = eq + 1;
            else if (i + 1 < argc) val = argv[++i];
            else return error_line(EXIT_USAGE, "option --%s needs a value", name);
        } else if (eq) {
            return error_line(EXIT_USAGE, "option --%s takes no value", name);
        }
        o->set[d->id] = 1;
        int rc = 0;
        int64_t x;
        switch (d->id) {
        case O_HELP:
            return -1;
        case O_PRESET: o->preset = val; break;
        case O_LAYERS: rc = set_int(name, val, 1, 256, &o->layers); break;
        case O_DMODEL: rc = set_int(name, val, 1, 16384, &o->d_model); break;
        case O_HEADS: rc = set_int(name, val, 1, 16384, &o->heads); break;
        case O_CTX: rc = set_int(name, val, 1, 65536, &o->ctx); break;
        case O_BATCH: rc = set_int(name, val, 1, 65536, &o->batch); break;
        case O_STEPS:
            if (!parse_i64(val, &o->steps)) rc = bad_value(name, val, "an integer");
            break;
        case O_WARMUP:
            if (!parse_i64(val, &o->warmup)) rc = bad_value(name, val, "an integer");
            break;
        case O_WARMUP_STEPS:
            if (!parse_i64(val, &o->bench_warmup) || o->bench_warmup < 0) rc = bad_value(name, val, "an integer >= 0");
            break;
        case O_EVAL_EVERY:
            if (!parse_i64(val, &o->eval_every)) rc = bad_value(name, val, "an integer");
            break;
        case O_SAVE_EVERY:
            if (!parse_i64(val, &o->save_every) || o->save_every < 0) rc = bad_value(name, val, "an integer >= 0");
            break;
        case O_MIN_TIME:
            if (!parse_f32(val, &o->min_time) || !(o->min_time >= 0 && o->min_time <= 3600))
                rc = bad_value(name, val, "seconds in 0..3600");
            break;
        case O_MAX_STEPS:
            if (!parse_i64(val, &o->max_steps) || o->max_steps < 10 || o->max_steps > 1000000)
                rc = bad_value(name, val, "an integer in 10..1000000");
            break;
        case O_LABEL: o->label = val; break;
        case O_STOP_AFTER:
            if (!parse_i64(val, &o->stop_after) || o->stop_after < 1) rc = bad_value(name, val, "an integer >= 1");
            break;
        case O_LOG_EVERY:
            if (!parse_i64(val, &o->log_every) || o->log_every < 1) rc = bad_value(name, val, "an integer >= 1");
            break;
        case O_SAMPLE_TOKENS:
            if (!parse_i64(val, &o->sample_tokens) || o->sample_tokens < 0) rc = bad_value(name, val, "an integer >= 0");
            break;
        case O_TOKENS:
            if (!parse_i64(val, &o->tokens) || o->tokens < 0) rc = bad_value(name, val, "an integer >= 0");
            break;
        case O_LR:
            if (!parse_f32(val, &o->lr)) rc = bad_value(name, val, "a number");
            break;
        case O_MINLR:
            if (!parse_f32(val, &o->min_lr)) rc = bad_value(name, val, "a number");
            break;
        case O_WD:
            if (!parse_f32(val, &o->wd)) rc = bad_value(name, val, "a number");
            break;
        case O_CLIP:
            if (!parse_f32(val, &o->clip)) rc = bad_value(name, val, "a number");
            break;
        case O_TEMP:
            if (!parse_f32(val, &o->temperature)) rc = bad_value(name, val, "a number");
            break;
        case O_TOPP:
            if (!parse_f32(val, &o->top_p)) rc = bad_value(name, val, "a number");
            break;
        case O_SCHED:
            if (strcmp(val, "cosine") == 0) o->sched = TT_SCHED_COSINE;
            else if (strcmp(val, "constant") == 0) o->sched = TT_SCHED_CONSTANT;
            else rc = bad_value(name, val, "cosine or constant");
            break;
        case O_ACCUM: rc = set_int(name, val, 1, 65536, &o->accum); break;
        case O_EVAL_BATCHES: rc = set_int(name, val, 1, 1000000, &o->eval_batches); break;
        case O_BATCHES: rc = set_int(name, val, 1, 1000000, &o->batches); break;
        case O_THREADS: rc = set_int(name, val, 1, 1024, &o->threads); break;
        case O_REPS: rc = set_int(name, val, 1, 1000, &o->reps); break;
        case O_DETAIL: break;
        case O_TOPK: rc = set_int(name, val, 0, TT_VOCAB, &o->top_k); break;
        case O_SEED:
            if (!parse_i64(val, &x) || x < 0) rc = bad_value(name, val, "an integer >= 0");
            else o->seed = (uint64_t)x;
            break;
        case O_DATA: o->data = val; break;
        case O_OUT: o->out = val; break;
        case O_RESUME: o->resume = val; break;
        case O_CKPT: o->ckpt = val; break;
        case O_PROMPT: o->prompt = val; break;
        case O_BACKEND:
            if (strcmp(val, "cpu") && strcmp(val, "webgpu") && strcmp(val, "auto")) rc = bad_value(name, val, "cpu, webgpu or auto");
            o->backend = val;
            break;
        case O_JSON: o->json = 1; break;
        }
        if (rc) return rc;
    }
    return 0;
}

static void command_help(const char *cmd, const char *what, const opt_def *defs) {
    printf("usage: tinytrain %s [options]\n%s\n\noptions:\n", cmd, what);
    usage_opts(stdout, defs);
}

/* ------------------------------------------------------------------ */
/* shared helpers                                                      */
/* ------------------------------------------------------------------ */

static void preset_list(char *buf, size_t cap) {
    buf[0] = 0;
    for (int i = 0; i < tt_n_presets; i++) {
        size_t n = strlen(buf);
        snprintf(buf + n, cap - n, "%s%s", i ? ", " : "", tt_presets[i].name);
    }
}

/* Model config from --preset (or base) + overrides. Returns 0 or an exit code. */
static int model_config(const opts *o, const tt_model_config *base, const char *default_preset, tt_model_config *cfg,
                        const char **preset_name) {
    const char *name = o->preset ? o->preset : default_preset;
    if (o->preset || !base) {
        const tt_preset *p = tt_preset_find(name);
        if (!p) {
            char list[512];
            preset_list(list, sizeof list);
            return error_line(EXIT_USAGE, "unknown preset '%s' (valid: %s)", name, list);
        }
        *cfg = p->cfg;
    } else {
        *cfg = *base;
        name = NULL;
    }
    if (o->set[O_LAYERS]) cfg->n_layer = o->layers;
    if (o->set[O_DMODEL]) cfg->d_model = o->d_model;
    if (o->set[O_HEADS]) cfg->n_head = o->heads;
    if (o->set[O_CTX]) cfg->ctx = o->ctx;
    if (o->set[O_BATCH]) cfg->batch = o->batch;
    tt_status st;
    tt_status_clear(&st);
    if (tt_config_validate(cfg, &st)) return error_line(EXIT_USAGE, "invalid model: %s", st.msg);
    if (preset_name) *preset_name = name;
    return 0;
}

/* name of the preset whose model config equals c, or NULL */
static const char *preset_of(const tt_model_config *c) {
    for (int i = 0; i < tt_n_presets; i++) {
        const tt_model_config *p = &tt_presets[i].cfg;
        if (p->n_layer == c->n_layer && p->d_model == c->d_model && p->n_head == c->n_head && p->ctx == c->ctx &&
            p->batch == c->batch && p->vocab == c->vocab)
            return tt_presets[i].name;
    }
    return NULL;
}

/* Creates the backend named kind (cpu | webgpu | auto). Returns 0 or an exit code. */
static int make_backend(const char *kind, const tt_model_config *cfg, int threads, int quiet, tt_backend **be) {
    tt_status st;
    tt_status_clear(&st);
    char why[400];
    tt_backend_opts bo = {.threads = threads};
    if (tt_backend_create(kind, cfg, &bo, be, why, sizeof why, &st)) {
        if (strcmp(kind, "webgpu") == 0) return error_line(EXIT_FAIL, "webgpu backend unavailable: %s", st.msg);
        return error_line(EXIT_FAIL, "%s backend: %s", kind, st.msg);
    }
    if (why[0] && !quiet) notice("%s", why);
    return 0;
}

static int load_ckpt(const char *path, tt_train_state *s) {
    tt_status st;
    tt_status_clear(&st);
    if (tt_checkpoint_load(path, s, &st)) {
        if (strstr(st.msg, path)) return error_line(EXIT_FAIL, "cannot load checkpoint: %s", st.msg);
        return error_line(EXIT_FAIL, "cannot load checkpoint '%s': %s", path, st.msg);
    }
    return 0;
}

/* mkdir -p */
static int make_dirs(const char *path) {
    char buf[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf) return -1;
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] == '/' || buf[i] == 0) {
            char c = buf[i];
            buf[i] = 0;
            if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
            buf[i] = c;
        }
    }
    struct stat sb;
    if (stat(path, &sb) != 0) return -1;
    if (!S_ISDIR(sb.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

/* The output folder exists (created) and is writable. */
static int check_out_dir(const char *dir) {
    if (make_dirs(dir) != 0) return error_line(EXIT_FAIL, "cannot create output folder '%s': %s", dir, strerror(errno));
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/.tinytrain-write-test.%ld", dir, (long)getpid());
    FILE *f = fopen(probe, "wb");
    if (!f || fputs("x", f) == EOF || fclose(f) != 0) {
        int e = errno;
        if (f) remove(probe);
        return error_line(EXIT_FAIL, "output folder '%s' is not writable: %s", dir, strerror(e));
    }
    remove(probe);
    return 0;
}

static void fmt_duration(char *out, size_t cap, double s) {
    if (!isfinite(s) || s < 0) { snprintf(out, cap, "?"); return; }
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(out, cap, "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
    else snprintf(out, cap, "%ld:%02ld", t / 60, t % 60);
}

static void fmt_rate(char *out, size_t cap, double x) {
    if (x >= 1e6) snprintf(out, cap, "%.2fM", x / 1e6);
    else if (x >= 1e3) snprintf(out, cap, "%.1fk", x / 1e3);
    else snprintf(out, cap, "%.0f", x);
}

static void fmt_count(char *out, size_t cap, int64_t x) {
    char tmp[32];
    snprintf(tmp, sizeof tmp, "%lld", (long long)x);
    size_t n = strlen(tmp), j = 0;
    for (size_t i = 0; i < n && j + 2 < cap; i++) {
        out[j++] = tmp[i];
        if ((n - i - 1) % 3 == 0 && i + 1 < n && tmp[0] != '-') out[j++] = ',';
    }
    out[j] = 0;
}

/* JSON helpers (stdout) */
static void json_str(FILE *f, const char *s, size_t n) {
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c == '\n') fputs("\\n", f);
        else if (c == '\r') fputs("\\r", f);
        else if (c == '\t') fputs("\\t", f);
        else if (c < 0x20 || c == 0x7f) fprintf(f, "\\u%04x", c);
        else if (c >= 0x80) {
            /* pass valid UTF-8 through, escape stray bytes as U+FFFD */
            int len = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xC2 && c <= 0xDF ? 2 : 0;
            int ok = len > 0 && i + (size_t)len <= n;
            for (int k = 1; ok && k < len; k++) ok = ((unsigned char)s[i + k] & 0xC0) == 0x80;
            if (ok) {
                fwrite(s + i, 1, (size_t)len, f);
                i += (size_t)len - 1;
            } else {
                fputs("\\ufffd", f);
            }
        } else fputc(c, f);
    }
    fputc('"', f);
}

static void json_num(FILE *f, double x) {
    if (isfinite(x)) fprintf(f, "%.9g", x);
    else fputs("null", f);
}

static void json_cfg(FILE *f, const tt_model_config *c) {
    fprintf(f, "{\"layers\":%d,\"d_model\":%d,\"heads\":%d,\"ctx\":%d,\"batch\":%d,\"vocab\":%d,\"params\":%lld}", c->n_layer,
            c->d_model, c->n_head, c->ctx, c->batch, c->vocab, (long long)tt_config_param_count(c));
}

/* ------------------------------------------------------------------ */
/* train                                                               */
/* ------------------------------------------------------------------ */

static volatile sig_atomic_t g_stop = 0;
static void on_signal(int sig) {
    (void)sig;
    g_stop = 1;
}

typedef struct {
    int json, tty;
    int64_t log_every;
    double last_draw;
    int line_open;   /* a \r progress line is on screen */
    int64_t stop_at; /* --stop-after: stop when this step completes (0: never) */
} progress_ctx;

static void clear_line(progress_ctx *pc) {
    if (pc->line_open) {
        fputs("\r\033[K", stdout);
        pc->line_open = 0;
    }
}

static int on_progress(void *user, const tt_progress *p) {
    progress_ctx *pc = user;
    char eta[32], rate[32];
    fmt_duration(eta, sizeof eta, p->eta_s);
    fmt_rate(rate, sizeof rate, p->tok_per_s);
    if (pc->json) {
        switch (p->event) {
        case TT_EV_STEP:
            printf("{\"event\":\"step\",\"step\":%lld,\"steps\":%lld,\"loss\":", (long long)p->step, (long long)p->steps);
            json_num(stdout, p->loss);
            fputs(",\"lr\":", stdout);
            json_num(stdout, p->lr);
            fputs(",\"grad_norm\":", stdout);
            json_num(stdout, p->grad_norm);
            fputs(",\"tok_per_s\":", stdout);
            json_num(stdout, p->tok_per_s);
            fputs(",\"elapsed_s\":", stdout);
            json_num(stdout, p->elapsed_s);
            fputs(",\"eta_s\":", stdout);
            json_num(stdout, p->eta_s);
            fputs("}\n", stdout);
            fflush(stdout);
            return pc->stop_at > 0 && p->step >= pc->stop_at;
        case TT_EV_EVAL:
            printf("{\"event\":\"eval\",\"step\":%lld,\"val_loss\":", (long long)p->step);
            json_num(stdout, p->val_loss);
            fputs(",\"best_val\":", stdout);
            json_num(stdout, p->best_val);
            printf(",\"best_val_step\":%lld}\n", (long long)p->best_val_step);
            break;
        case TT_EV_SAVE:
            printf("{\"event\":\"save\",\"step\":%lld,\"path\":", (long long)p->step);
            json_str(stdout, p->saved_path, strlen(p->saved_path));
            fputs("}\n", stdout);
            break;
        default: break;
        }
        fflush(stdout);
        return 0;
    }
    if (p->event == TT_EV_STEP) {
        int stop = pc->stop_at > 0 && p->step >= pc->stop_at;
        if (pc->tty) {
            double now = tt_now();
            if (now - pc->last_draw < 0.1 && p->step != p->steps && !stop) return stop;
            pc->last_draw = now;
            char val[32] = "";
            if (isfinite(p->val_loss)) snprintf(val, sizeof val, " | val %.4f", p->val_loss);
            printf("\rstep %lld/%lld | loss %.4f%s | %s tok/s | ETA %s\033[K", (long long)p->step, (long long)p->steps,
                   p->loss, val, rate, eta);
            pc->line_open = 1;
            fflush(stdout);
        } else if (p->step % pc->log_every == 0 || p->step == p->steps) {
            printf("step %lld/%lld  loss %.4f  lr %.3g  %s tok/s  ETA %s\n", (long long)p->step, (long long)p->steps,
                   p->loss, p->lr, rate, eta);
            fflush(stdout);
        }
        return stop;
    } else if (p->event == TT_EV_EVAL) {
        clear_line(pc);
        printf("step %lld/%lld  val loss %.4f%s  (train %.4f)\n", (long long)p->step, (long long)p->steps, p->val_loss,
               p->best_val_step == p->step ? "  best" : "", p->loss);
        fflush(stdout);
    } else if (p->event == TT_EV_END) {
        clear_line(pc);
        fflush(stdout);
    }
    return 0;
}

typedef struct {
    int json;
    char *buf;
    size_t n, cap;
} sample_sink;

static int on_token(void *user, uint8_t tok) {
    sample_sink *ss = user;
    if (ss->json) {
        if (ss->n == ss->cap) {
            size_t cap = ss->cap ? ss->cap * 2 : 1024;
            char *p = realloc(ss->buf, cap);
            if (!p) return 1;
            ss->buf = p;
            ss->cap = cap;
        }
        ss->buf[ss->n++] = (char)tok;
    } else {
        fputc(tok, stdout);
        fflush(stdout);
    }
    return 0;
}

/* generate and print a sample (plain or JSON) */
static int print_sample(const tt_model_config *cfg, const float *params, const char *prompt, const tt_sample_config *sc,
                        int threads, int json) {
    tt_status st;
    tt_status_clear(&st);
    tt_sampler *smp = NULL;
    if (tt_sampler_create(cfg, params, threads, &smp, &st)) return error_line(EXIT_FAIL, "sampler: %s", st.msg);
    sample_sink ss = {json, NULL, 0, 0};
    size_t np = prompt ? strlen(prompt) : 0;
    if (!json && np) {
        fputs(prompt, stdout);
        fflush(stdout);
    }
    int rc = tt_generate(smp, (const uint8_t *)prompt, np, sc, on_token, &ss, &st);
    tt_sampler_destroy(smp);
    if (rc) {
        free(ss.buf);
        return error_line(EXIT_FAIL, "sampling: %s", st.msg);
    }
    if (json) {
        fputs("{\"event\":\"sample\",\"prompt\":", stdout);
        json_str(stdout, prompt ? prompt : "", np);
        fputs(",\"text\":", stdout);
        json_str(stdout, ss.buf ? ss.buf : "", ss.n);
        printf(",\"tokens\":%zu,\"seed\":%llu,\"temperature\":", ss.n, (unsigned long long)sc->seed);
        json_num(stdout, sc->temperature);
        printf(",\"top_k\":%d,\"top_p\":", sc->top_k);
        json_num(stdout, sc->top_p);
        fputs("}\n", stdout);
    } else {
        fputc('\n', stdout);
    }
    fflush(stdout);
    free(ss.buf);
    return 0;
}

static int sampler_threads(const tt_model_config *cfg, const opts *o) {
    if (o->set[O_THREADS]) return o->threads;
    return cfg->d_model >= 256 ? TT_MIN(tt_default_threads(), 8) : 1;
}

static int cmd_train(int argc, char **argv) {
    opts o;
    memset(&o, 0, sizeof o);
    int rc = parse_opts("train", train_opts, argc, argv, 2, &o);
    if (rc == -1) {
        command_help("train",
                     "Train a model on a text file or folder (default: the fortunes collection), saving the checkpoint,\n"
                     "loss.csv and loss.svg to the output folder, then print a sample.",
                     train_opts);
        return 0;
    }
    if (rc) return rc;

    tt_status st;
    tt_status_clear(&st);
    tt_train_state s;
    memset(&s, 0, sizeof s);
    tt_model_config cfg;
    tt_train_config tc;
    const char *preset_name = NULL;
    int resuming = o.resume != NULL;
    int64_t old_steps = 0; /* resume with another --steps: the schedule the checkpoint was trained with */

    if (resuming) {
        if ((rc = load_ckpt(o.resume, &s))) return rc;
        tt_model_config want;
        if ((rc = model_config(&o, &s.cfg, DEFAULT_PRESET, &want, NULL))) goto done;
        const tt_model_config *h = &s.cfg;
        if (want.n_layer != h->n_layer || want.d_model != h->d_model || want.n_head != h->n_head || want.ctx != h->ctx ||
            want.batch != h->batch) {
            rc = error_line(EXIT_FAIL,
                            "config mismatch on resume: checkpoint has layers %d, d_model %d, heads %d, ctx %d, batch %d; "
                            "requested layers %d, d_model %d, heads %d, ctx %d, batch %d",
                            h->n_layer, h->d_model, h->n_head, h->ctx, h->batch, want.n_layer, want.d_model, want.n_head,
                            want.ctx, want.batch);
            goto done;
        }
        cfg = s.cfg;
        tc = s.tc;
        preset_name = preset_of(&cfg);
        /* training hyper-parameters are the checkpoint's; a different explicit value is a mismatch */
#define MISMATCH(id, cond, fmt, a, b)                                                                                \
    if (o.set[id] && (cond)) {                                                                                       \
        rc = error_line(EXIT_FAIL, "config mismatch on resume: --%s " fmt " but the checkpoint was trained with " fmt, \
                        opt_name(train_opts, id), a, b);                                                             \
        goto done;                                                                                                   \
    }
        MISMATCH(O_LR, o.lr != tc.lr, "%g", o.lr, tc.lr)
        MISMATCH(O_MINLR, o.min_lr != tc.min_lr, "%g", o.min_lr, tc.min_lr)
        MISMATCH(O_WARMUP, o.warmup != tc.warmup, "%lld", (long long)o.warmup, (long long)tc.warmup)
        MISMATCH(O_SCHED, o.sched != (int)tc.sched, "%s", o.sched ? "constant" : "cosine", tc.sched ? "constant" : "cosine")
        MISMATCH(O_WD, o.wd != tc.weight_decay, "%g", o.wd, tc.weight_decay)
        MISMATCH(O_CLIP, o.clip != tc.clip, "%g", o.clip, tc.clip)
        MISMATCH(O_ACCUM, o.accum != tc.accum, "%d", o.accum, tc.accum)
        MISMATCH(O_SEED, o.seed != tc.seed, "%llu", (unsigned long long)o.seed, (unsigned long long)tc.seed)
#undef MISMATCH
        if (o.set[O_STEPS] && o.steps != tc.steps) old_steps = tc.steps;
        if (o.set[O_STEPS]) tc.steps = o.steps;
        if (o.set[O_EVAL_EVERY]) tc.eval_every = o.eval_every;
        if (o.set[O_EVAL_BATCHES]) tc.eval_batches = o.eval_batches;
    } else {
        if ((rc = model_config(&o, NULL, DEFAULT_PRESET, &cfg, &preset_name))) return rc;
        if (o.set[O_STEPS] && o.steps < 1)
            return error_line(EXIT_USAGE, "steps must be >= 1 (got %lld)", (long long)o.steps);
        tt_train_config_default(&tc, o.set[O_STEPS] ? o.steps : DEFAULT_STEPS);
        tc.lr = o.set[O_LR] ? o.lr : tt_default_lr(&cfg);
        tc.min_lr = tc.lr / 10.0f;
        if (o.set[O_MINLR]) tc.min_lr = o.min_lr;
        if (o.set[O_WARMUP]) tc.warmup = o.warmup;
        if (o.set[O_SCHED]) tc.sched = (tt_sched)o.sched;
        if (o.set[O_WD]) tc.weight_decay = o.wd;
        if (o.set[O_CLIP]) tc.clip = o.clip;
        if (o.set[O_ACCUM]) tc.accum = o.accum;
        if (o.set[O_SEED]) tc.seed = o.seed;
        if (o.set[O_EVAL_EVERY]) tc.eval_every = o.eval_every;
        if (o.set[O_EVAL_BATCHES]) tc.eval_batches = o.eval_batches;
    }
    if (tt_train_config_validate(&tc, &st)) {
        rc = error_line(EXIT_USAGE, "%s", st.msg);
        goto done;
    }

    /* output folder: checked before anything slow */
    char out_dir[4096], ckpt_path[4200], csv_path[4200], svg_path[4200];
    if (o.out) snprintf(out_dir, sizeof out_dir, "%s", o.out);
    else if (resuming) {
        snprintf(out_dir, sizeof out_dir, "%s", o.resume);
        char *sl = strrchr(out_dir, '/');
        if (sl == out_dir) out_dir[1] = 0; /* "/ckpt" -> "/" */
        else if (sl) *sl = 0;
        else snprintf(out_dir, sizeof out_dir, ".");
    } else snprintf(out_dir, sizeof out_dir, "runs/%s", preset_name ? preset_name : DEFAULT_PRESET);
    if ((rc = check_out_dir(out_dir))) goto done;
    snprintf(ckpt_path, sizeof ckpt_path, "%s/%s", out_dir, CKPT_NAME);
    snprintf(csv_path, sizeof csv_path, "%s/loss.csv", out_dir);
    snprintf(svg_path, sizeof svg_path, "%s/loss.svg", out_dir);

    tt_corpus corpus;
    memset(&corpus, 0, sizeof corpus);
    if (tt_corpus_load(o.data, cfg.ctx, &corpus, &st)) {
        rc = error_line(EXIT_FAIL, "%s", st.msg);
        goto done;
    }
    if (resuming) {
        if (s.corpus_hash != corpus.hash) {
            rc = error_line(EXIT_FAIL,
                            "corpus mismatch on resume: the checkpoint was trained on a different corpus (%llu bytes, hash "
                            "%016llx); this one is %s (hash %016llx) — pass the same --data",
                            (unsigned long long)s.corpus_bytes, (unsigned long long)s.corpus_hash, corpus.desc,
                            (unsigned long long)corpus.hash);
            goto done_corpus;
        }
        if (s.step >= tc.steps) {
            notice("checkpoint '%s' is already at step %lld of %lld; pass --steps N (more than %lld) to train further",
                   o.resume, (long long)s.step, (long long)tc.steps, (long long)s.step);
            rc = 0;
            goto done_corpus;
        }
        if (old_steps > 0 && !o.json) {
            tt_train_config was = tc;
            was.steps = old_steps;
            notice("the run changes from %lld to %lld steps, which %s its cosine schedule from here on "
                   "(lr %.3g at step %lld instead of %.3g)",
                   (long long)old_steps, (long long)tc.steps, tc.steps > old_steps ? "stretches" : "compresses",
                   tt_lr_at(&tc, s.step), (long long)s.step + 1, tt_lr_at(&was, s.step));
        }
        s.tc = tc;
    } else {
        if (tt_state_init(&s, &cfg, &tc, &st)) {
            rc = error_line(EXIT_FAIL, "%s", st.msg);
            goto done_corpus;
        }
    }

    tt_backend *be = NULL;
    const char *bk = o.backend ? o.backend : "auto";
    if ((rc = make_backend(bk, &cfg, o.set[O_THREADS] ? o.threads : 0, o.json, &be))) goto done_corpus;

    progress_ctx pc = {o.json, !o.json && isatty(STDOUT_FILENO), 1, 0.0, 0, 0};
    if (o.set[O_STOP_AFTER]) pc.stop_at = s.step + o.stop_after;
    pc.log_every = o.set[O_LOG_EVERY] ? o.log_every : TT_MAX((int64_t)1, tc.steps / 50);
    {
        char params[32];
        fmt_count(params, sizeof params, tt_config_param_count(&cfg));
        int64_t tok_step = (int64_t)cfg.batch * cfg.ctx * tc.accum;
        if (o.json) {
            fputs("{\"event\":\"start\",\"model\":", stdout);
            json_cfg(stdout, &cfg);
            printf(",\"preset\":");
            json_str(stdout, preset_name ? preset_name : "", preset_name ? strlen(preset_name) : 0);
            printf(",\"steps\":%lld,\"start_step\":%lld,\"lr\":", (long long)tc.steps, (long long)s.step);
            json_num(stdout, tc.lr);
            printf(",\"accum\":%d,\"seed\":%llu,\"tokens_per_step\":%lld,\"backend\":", tc.accum, (unsigned long long)tc.seed,
                   (long long)tok_step);
            json_str(stdout, be->desc.device, strlen(be->desc.device));
            fputs(",\"corpus\":", stdout);
            json_str(stdout, corpus.desc, strlen(corpus.desc));
            fputs(",\"out\":", stdout);
            json_str(stdout, out_dir, strlen(out_dir));
            fputs("}\n", stdout);
        } else {
            printf("tinytrain %s: %s model (%d layers, d_model %d, %d heads, ctx %d), %s params\n",
                   resuming ? "resuming" : "training", preset_of(&cfg) ? preset_of(&cfg) : "custom", cfg.n_layer, cfg.d_model,
                   cfg.n_head, cfg.ctx, params);
            printf("  data    %s: %zu train / %zu validation bytes\n", corpus.desc, corpus.n_train, corpus.n - corpus.n_train);
            printf("  run     steps %lld..%lld, batch %d x %d%s = %lld tokens/step, lr %g (%s, warmup %lld), seed %llu\n",
                   (long long)s.step + 1, (long long)tc.steps, cfg.batch, cfg.ctx, tc.accum > 1 ? " x accum" : "",
                   (long long)tok_step, tc.lr, tc.sched == TT_SCHED_COSINE ? "cosine" : "constant", (long long)tc.warmup,
                   (unsigned long long)tc.seed);
            printf("  backend %s\n  output  %s/ (%s, loss.csv, loss.svg)\n", be->desc.device, out_dir, CKPT_NAME);
            fflush(stdout);
        }
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESETHAND; /* a second Ctrl-C kills at once (the checkpoint write is atomic) */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    tt_trainer tr;
    memset(&tr, 0, sizeof tr);
    tr.s = &s;
    tr.corpus = &corpus;
    tr.be = be;
    tr.ckpt_path = ckpt_path;
    tr.csv_path = csv_path;
    tr.svg_path = svg_path;
    tr.save_every = o.set[O_SAVE_EVERY] ? o.save_every : 500;
    tr.progress = on_progress;
    tr.user = &pc;
    tr.stop_flag = &g_stop;
    tr.stop_at = o.set[O_STOP_AFTER] ? s.step + o.stop_after : 0; /* exact even when GPU steps overlap */
    int stopped = 0;
    double t0 = tt_now();
    int trc = tt_train_run(&tr, &stopped, &st);
    double wall = tt_now() - t0;
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    clear_line(&pc);
    tt_backend_destroy(be);
    if (trc) {
        rc = error_line(EXIT_FAIL, "%s", st.msg);
        goto done_corpus;
    }
    if (o.json) {
        printf("{\"event\":\"end\",\"step\":%lld,\"steps\":%lld,\"stopped\":%s,\"loss\":", (long long)s.step,
               (long long)tc.steps, stopped ? "true" : "false");
        json_num(stdout, s.step > 0 ? s.loss_hist[s.step - 1] : NAN);
        fputs(",\"best_val\":", stdout);
        json_num(stdout, s.best_val);
        printf(",\"best_val_step\":%lld,\"wall_s\":", (long long)s.best_val_step);
        json_num(stdout, wall);
        fputs(",\"checkpoint\":", stdout);
        json_str(stdout, ckpt_path, strlen(ckpt_path));
        fputs("}\n", stdout);
    } else {
        char dur[32];
        fmt_duration(dur, sizeof dur, wall);
        if (stopped)
            printf("%s at step %lld of %lld; saved %s\ncontinue with: tinytrain train --resume %s\n",
                   g_stop ? "interrupted" : "stopped (--stop-after)", (long long)s.step, (long long)tc.steps, ckpt_path,
                   ckpt_path);
        else
            printf("done: %lld steps in %s, final train loss %.4f, best val loss %.4f (step %lld)\nsaved %s, %s, %s\n",
                   (long long)s.step, dur, s.step > 0 ? s.loss_hist[s.step - 1] : NAN, s.best_val,
                   (long long)s.best_val_step, ckpt_path, csv_path, svg_path);
    }
    fflush(stdout);
    if (stopped) {
        rc = g_stop ? EXIT_INTERRUPTED : 0;
        goto done_corpus;
    }
    int64_t n_sample = o.set[O_SAMPLE_TOKENS] ? o.sample_tokens : 400;
    if (n_sample > 0) {
        tt_sample_config sc;
        tt_sample_config_default(&sc);
        sc.max_tokens = n_sample;
        sc.seed = tc.seed;
        if (!o.json) printf("\n--- sample (temperature %.1f, top-k %d, top-p %.2f) ---\n", sc.temperature, sc.top_k, sc.top_p);
        rc = print_sample(&cfg, s.params, NULL, &sc, sampler_threads(&cfg, &o), o.json);
        if (!rc && !o.json) printf("---\nmore: tinytrain sample --ckpt %s --prompt \"...\"\n", ckpt_path);
    }
done_corpus:
    tt_corpus_free(&corpus);
done:
    tt_state_free(&s);
    return rc;
}

/* ------------------------------------------------------------------ */
/* sample, eval, export                                                */
/* ------------------------------------------------------------------ */

static const char *default_ckpt(void) { return "runs/" DEFAULT_PRESET "/" CKPT_NAME; }

static int cmd_sample(int argc, char **argv) {
    opts o;
    memset(&o, 0, sizeof o);
    int rc = parse_opts("sample", sample_opts, argc, argv, 2, &o);
    if (rc == -1) {
        command_help("sample", "Generate text from a checkpoint (streams bytes as they come).", sample_opts);
        return 0;
    }
    if (rc) return rc;
    tt_sample_config sc;
    tt_sample_config_default(&sc);
    if (o.set[O_TEMP]) sc.temperature = o.temperature;
    if (o.set[O_TOPK]) sc.top_k = o.top_k;
    if (o.set[O_TOPP]) sc.top_p = o.top_p;
    if (o.set[O_TOKENS]) sc.max_tokens = o.tokens;
    if (o.set[O_SEED]) sc.seed = o.seed;
    tt_status st;
    tt_status_clear(&st);
    if (tt_sample_config_validate(&sc, &st)) return error_line(EXIT_USAGE, "%s", st.msg);
    tt_train_state s;
    memset(&s, 0, sizeof s);
    if ((rc = load_ckpt(o.ckpt ? o.ckpt : default_ckpt(), &s))) return rc;
    rc = print_sample(&s.cfg, s.params, o.prompt, &sc, sampler_threads(&s.cfg, &o), o.json);
    tt_state_free(&s);
    return rc;
}

static int cmd_eval(int argc, char **argv) {
    opts o;
    memset(&o, 0, sizeof o);
    int rc = parse_opts("eval", eval_opts, argc, argv, 2, &o);
    if (rc == -1) {
        command_help("eval", "Mean validation loss of a checkpoint over fixed validation batches of a corpus.", eval_opts);
        return 0;
    }
    if (rc) return rc;
    tt_status st;
    tt_status_clear(&st);
    tt_train_state s;
    memset(&s, 0, sizeof s);
    const char *path = o.ckpt ? o.ckpt : default_ckpt();
    if ((rc = load_ckpt(path, &s))) return rc;
    tt_corpus c;
    if (tt_corpus_load(o.data, s.cfg.ctx, &c, &st)) {
        tt_state_free(&s);
        return error_line(EXIT_FAIL, "%s", st.msg);
    }
    tt_backend *be = NULL;
    uint8_t *tok = NULL;
    int n = o.set[O_BATCHES] ? o.batches : (s.tc.eval_batches > 0 ? s.tc.eval_batches : 8);
    if ((rc = make_backend(o.backend ? o.backend : "cpu", &s.cfg, o.set[O_THREADS] ? o.threads : 0, 1, &be))) goto out;
    tok = malloc((size_t)s.cfg.batch * (size_t)(s.cfg.ctx + 1));
    if (!tok) {
        rc = error_line(EXIT_FAIL, "out of memory");
        goto out;
    }
    float loss = NAN;
    if (be->vt->set_state(be, s.params, NULL, NULL, &st) || tt_evaluate(be, &c, n, tok, &loss, &st)) {
        rc = error_line(EXIT_FAIL, "eval: %s", st.msg);
        goto out;
    }
    int same = c.hash == s.corpus_hash;
    if (o.json) {
        fputs("{\"checkpoint\":", stdout);
        json_str(stdout, path, strlen(path));
        printf(",\"step\":%lld,\"corpus\":", (long long)s.step);
        json_str(stdout, c.desc, strlen(c.desc));
        printf(",\"same_corpus\":%s,\"batches\":%d,\"tokens\":%lld,\"val_loss\":", same ? "true" : "false", n,
               (long long)n * s.cfg.batch * s.cfg.ctx);
        json_num(stdout, loss);
        fputs(",\"bits_per_byte\":", stdout);
        json_num(stdout, loss / log(2.0));
        fputs("}\n", stdout);
    } else {
        printf("%s (step %lld) on %s%s\nval loss %.4f (%.3f bits/byte) over %d batches x %d x %d bytes\n", path,
               (long long)s.step, c.desc, same ? "" : " (not the training corpus)", loss, loss / log(2.0), n, s.cfg.batch,
               s.cfg.ctx);
    }
out:
    free(tok);
    tt_backend_destroy(be);
    tt_corpus_free(&c);
    tt_state_free(&s);
    return rc;
}

static int cmd_export(int argc, char **argv) {
    opts o;
    memset(&o, 0, sizeof o);
    int rc = parse_opts("export", export_opts, argc, argv, 2, &o);
    if (rc == -1) {
        command_help("export", "Write the weights with Hugging Face GPT-2 tensor names (model.safetensors).", export_opts);
        return 0;
    }
    if (rc) return rc;
    const char *path = o.ckpt ? o.ckpt : default_ckpt();
    char out[4200];
    if (o.out) snprintf(out, sizeof out, "%s", o.out);
    else {
        snprintf(out, sizeof out, "%s", path);
        char *sl = strrchr(out, '/');
        if (sl) snprintf(sl + 1, sizeof out - (size_t)(sl + 1 - out), "model.safetensors");
        else snprintf(out, sizeof out, "model.safetensors");
    }
    tt_train_state s;
    memset(&s, 0, sizeof s);
    if ((rc = load_ckpt(path, &s))) return rc;
    tt_status st;
    tt_status_clear(&st);
    if (tt_export_hf(out, &s, &st)) rc = error_line(EXIT_FAIL, "export to '%s': %s", out, st.msg);
    else printf("wrote %s (%lld parameters, Hugging Face GPT-2 names)\n", out, (long long)tt_config_param_count(&s.cfg));
    tt_state_free(&s);
    return rc;
}

/* ------------------------------------------------------------------ */
/* info                                                                */
/* ------------------------------------------------------------------ */

/* Host memory of a CPU training run: the CPU backend's exact plan (params,
 * grads, moments, activations, scratch) plus the trainer's own copy of
 * params and both moments (the checkpointable state). */
static double cpu_train_bytes(tt_backend *cpu, const tt_model_config *c) {
    uint64_t b = 0;
    tt_status st;
    tt_status_clear(&st);
    if (!cpu || cpu->vt->plan_bytes(cpu, c, &b, &st)) return NAN;
    return (double)b + 12.0 * (double)tt_config_param_count(c);
}

static int cmd_info(int argc, char **argv) {
    opts o;
    memset(&o, 0, sizeof o);
    int rc = parse_opts("info", info_opts, argc, argv, 2, &o);
    if (rc == -1) {
        command_help("info", "Presets, memory estimates, the CPU's SIMD ISA, threads and WebGPU availability.", info_opts);
        return 0;
    }
    if (rc) return rc;
    int threads = o.set[O_THREADS] ? o.threads : tt_default_threads();
    tt_backend *gpu = NULL, *cpu = NULL;
    tt_status st;
    tt_status_clear(&st);
    if (tt_backend_create("cpu", &tt_probe_config, &(tt_backend_opts){.threads = threads}, &cpu, NULL, 0, &st))
        return error_line(EXIT_FAIL, "cpu backend: %s", st.msg);
    /* the adapter probe: a minimal model, so that no preset's size decides availability */
    int gpu_rc = tt_backend_create("webgpu", &tt_probe_config, NULL, &gpu, NULL, 0, &st);
    char gpu_desc[600];
    if (gpu_rc == TT_OK) snprintf(gpu_desc, sizeof gpu_desc, "%s", gpu->desc.device);
    else snprintf(gpu_desc, sizeof gpu_desc, "%s", st.msg);
    char gpu_detail[256] = "";
    if (gpu_rc == TT_OK) snprintf(gpu_detail, sizeof gpu_detail, "%s", gpu->desc.detail);
    /* per preset: does it fit the detected adapter (preflight, nothing allocated)? */
    char(*gpu_fit)[160] = calloc((size_t)tt_n_presets, sizeof *gpu_fit);
    if (!gpu_fit) {
        tt_backend_destroy(gpu);
        return error_line(EXIT_FAIL, "out of memory");
    }
    for (int i = 0; i < tt_n_presets; i++) {
        tt_status fs;
        tt_status_clear(&fs);
        uint64_t bytes = 0;
        if (gpu_rc != TT_OK) snprintf(gpu_fit[i], sizeof gpu_fit[i], "-");
        else if (gpu->vt->plan_bytes(gpu, &tt_presets[i].cfg, &bytes, &fs) == TT_OK)
            snprintf(gpu_fit[i], sizeof gpu_fit[i], "fits");
        else {
            /* the reason without the "webgpu: " prefix and the advice after ';' */
            const char *m = strncmp(fs.msg, "webgpu: ", 8) == 0 ? fs.msg + 8 : fs.msg;
            int len = (int)strcspn(m, ";");
            snprintf(gpu_fit[i], sizeof gpu_fit[i], "too big (%.*s)", len, m);
        }
    }
    tt_backend_destroy(gpu);
    const char *corpus_dir = tt_default_corpus_dir();
    struct stat sb;
    int corpus_found = stat(corpus_dir, &sb) == 0;
    if (o.json) {
        printf("{\"version\":\"%s\",\"isa\":\"%s\",\"simd_width\":%d,\"threads\":%d,\"webgpu\":{\"available\":%s,\"%s\":",
               TT_VERSION, TT_ISA, TT_VW, threads, gpu_rc == TT_OK ? "true" : "false", gpu_rc == TT_OK ? "device" : "reason");
        json_str(stdout, gpu_desc, strlen(gpu_desc));
        if (gpu_detail[0]) {
            fputs(",\"detail\":", stdout);
            json_str(stdout, gpu_detail, strlen(gpu_detail));
        }
        fputs("},\"default_corpus\":", stdout);
        json_str(stdout, corpus_dir, strlen(corpus_dir));
        printf(",\"default_corpus_found\":%s,\"presets\":[", corpus_found ? "true" : "false");
        for (int i = 0; i < tt_n_presets; i++) {
            const tt_preset *p = &tt_presets[i];
            printf("%s{\"name\":\"%s\",\"model\":", i ? "," : "", p->name);
            json_cfg(stdout, &p->cfg);
            fputs(",\"train_bytes\":", stdout);
            json_num(stdout, cpu_train_bytes(cpu, &p->cfg));
            fputs(",\"step_flops\":", stdout);
            json_num(stdout, tt_config_step_flops(&p->cfg));
            fputs(",\"gpu\":", stdout);
            json_str(stdout, gpu_fit[i], strlen(gpu_fit[i]));
            fputs("}", stdout);
        }
        fputs("]}\n", stdout);
        free(gpu_fit);
        tt_backend_destroy(cpu);
        return 0;
    }
    printf("tinytrain %s\n\n", TT_VERSION);
    printf("%-9s %6s %7s %5s %5s %5s %13s %11s %10s  %s\n", "preset", "layers", "d_model", "heads", "ctx", "batch", "params",
           "train mem", "GFLOP/step", "gpu");
    for (int i = 0; i < tt_n_presets; i++) {
        const tt_preset *p = &tt_presets[i];
        char params[32], mem[32];
        fmt_count(params, sizeof params, p->n_params);
        double b = cpu_train_bytes(cpu, &p->cfg);
        if (b >= 1e9) snprintf(mem, sizeof mem, "%.1f GB", b / 1e9);
        else snprintf(mem, sizeof mem, "%.0f MB", b / 1e6);
        printf("%-9s %6d %7d %5d %5d %5d %13s %11s %10.2f  %s%s\n", p->name, p->cfg.n_layer, p->cfg.d_model, p->cfg.n_head,
               p->cfg.ctx, p->cfg.batch, params, mem, tt_config_step_flops(&p->cfg) / 1e9, gpu_fit[i],
               strcmp(p->name, DEFAULT_PRESET) == 0 ? "  (default)" : "");
    }
    printf("\ncpu       SIMD %s (%d floats per vector), %d threads\n", TT_ISA, TT_VW, threads);
    printf("webgpu    %s%s\n", gpu_rc == TT_OK ? "" : "unavailable: ", gpu_desc);
    if (gpu_detail[0]) printf("          %s\n", gpu_detail);
    printf("corpus    %s%s\n", corpus_dir, corpus_found ? "" : " (not found: install the `fortunes` package or pass --data)");
    free(gpu_fit);
    tt_backend_destroy(cpu);
    return 0;
}

/* ------------------------------------------------------------------ */
/* bench                                                               */
/* ------------------------------------------------------------------ */
/* `tinytrain bench`: steady-state time of one training step, the unit of
 * the public speed curve (scripts/bench/curve.sh, docs/BENCHMARKS.md).
 * Every backend and runtime (native, WASM under Node) runs the same thing:
 *   weights from --seed (tt_model_init_params), AdamW state zero;
 *   step s (0-based) trains on micro-batch i = the trainer's deterministic
 *   windows of the corpus (tt_batch_train, sequence (s*accum+i)*B ..);
 *   lr: linear warm-up over BENCH_LR_WARMUP steps to tt_default_lr, then
 *   constant (independent of the run length, so the loss after step k is
 *   the same whether a run stops at 50 or at 500).
 * The first --warmup steps (from init) are not timed: they hold the first
 * step (pipeline compilation, first-touch page faults, thread start-up) and
 * let clocks and caches settle. The --steps steps after them are timed one
 * by one; --min-time adds measured steps until their sum reaches S seconds
 * (short steps get more samples). A timed step = batch sampling on the host
 * + backend step + waiting for its loss on the host (step_result).
 * Output (--json): ONE JSON object, schema "tinytrain.bench/1", documented
 * field by field in docs/BENCHMARKS.md. Keep it stable: add fields, never
 * rename or remove them. */

#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>

#define BENCH_SCHEMA "tinytrain.bench/1"
#define BENCH_LR_WARMUP 100 /* the default run's warm-up: a sharper one makes early training unstable (grad-norm spikes of 100+) and per-step parity meaningless */
#define BENCH_DEFAULT_WARMUP 10
#define BENCH_DEFAULT_STEPS 40
#define BENCH_DEFAULT_MAX_STEPS 1000

static const int bench_loss_at[3] = {1, 10, 50};

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* value at quantile q of sorted x[0..n) (linear interpolation) */
static double quantile(const double *x, int64_t n, double q) {
    double pos = q * (double)(n - 1);
    int64_t i = (int64_t)pos;
    if (i >= n - 1) return x[n - 1];
    return x[i] + (pos - (double)i) * (x[i + 1] - x[i]);
}

/* strip leading/trailing blanks in place */
static char *trim(char *s) {
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r')) s[--n] = 0;
    return s;
}

/* CPU model name from /proc/cpuinfo ("" if unknown; works under Node too, NODERAWFS) */
static void bench_cpu_model(char *out, size_t cap) {
    out[0] = 0;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!colon) continue;
        *colon = 0;
        char *key = trim(line), *val = trim(colon + 1);
        if (strcmp(key, "model name") == 0 || strcmp(key, "Model") == 0 || strcmp(key, "Hardware") == 0) {
            snprintf(out, cap, "%s", val);
            break;
        }
    }
    fclose(f);
}

/* Commit: $TT_COMMIT, else .git/HEAD of the working directory or a parent
 * (a ref is resolved through .git/<ref> or .git/packed-refs), else "unknown". */
static void bench_commit(char *out, size_t cap) {
    const char *env = getenv("TT_COMMIT");
    if (env && *env) {
        snprintf(out, cap, "%s", env);
        return;
    }
    snprintf(out, cap, "unknown");
    char dir[1024] = ".";
    for (int up = 0; up < 8; up++) {
        char path[1200], line[256];
        snprintf(path, sizeof path, "%s/.git/HEAD", dir);
        FILE *f = fopen(path, "r");
        if (f) {
            char *l = fgets(line, sizeof line, f) ? trim(line) : NULL;
            fclose(f);
            if (!l) return;
            if (strncmp(l, "ref: ", 5) != 0) {
                snprintf(out, cap, "%.40s", l);
                return;
            }
            char ref[200];
            snprintf(ref, sizeof ref, "%s", l + 5);
            snprintf(path, sizeof path, "%s/.git/%s", dir, ref);
            if ((f = fopen(path, "r"))) {
                if (fgets(line, sizeof line, f)) snprintf(out, cap, "%.40s", trim(line));
                fclose(f);
                return;
            }
            snprintf(path, sizeof path, "%s/.git/packed-refs", dir);
            if ((f = fopen(path, "r"))) {
                while (fgets(line, sizeof line, f)) {
                    char *sp = strchr(line, ' ');
                    if (sp && strcmp(trim(sp + 1), ref) == 0) {
                        *sp = 0;
                        snprintf(out, cap, "%.40s", line);
                        break;
                    }
                }
                fclose(f);
            }
            return;
        }
        size_t n = strlen(dir);
        if (n + 4 >= sizeof dir) return;
        snprintf(dir + n, sizeof dir - n, "/..");
    }
}

/* Peak host memory in bytes and how it was measured. */
static double bench_peak_host(const char **source) {
#if defined(__EMSCRIPTEN__)
    *source = "wasm linear memory size (grows only)";
    return (double)__builtin_wasm_memory_size(0) * 65536.0;
#else
    struct rusage ru;
    *source = "getrusage ru_maxrss";
    if (getrusage(RUSAGE_SELF, &ru) != 0) return NAN;
    return (double)ru.ru_maxrss * 1024.0; /* KiB on Linux */
#endif
}

static void json_key_str(FILE *f, const char *key, const char *val) {
    fprintf(f, ",\"%s\":", key);
    json_str(f, val ? val : "", val ? strlen(val) : 0);
}

/* per-step bookkeeping of the bench loop */
typedef struct {
    int64_t warm, n, measured, cap;
    double *ms, t_last, first_ms, warm_ms, measured_s;
    float *loss_at;
    /* phase split of the measured steps (backend phase_times): ph[p*cap + i] */
    tt_backend *be;
    double *ph;
    int64_t n_ph;
    int ph_off;           /* 1: phase_times reported unavailable; stop asking */
    char ph_why[160];
} bench_rec;

/* The loss of step j (0-based) is on the host now. Returns 0 or an exit code. */
static int bench_record(bench_rec *r, int64_t j, float loss) {
    double now = tt_now(), dt = (now - r->t_last) * 1e3;
    r->t_last = now;
    if (!isfinite(loss)) return error_line(EXIT_FAIL, "bench: loss is not finite (%g) at step %lld", loss, (long long)j + 1);
    for (int i = 0; i < 3; i++)
        if (j + 1 == bench_loss_at[i]) r->loss_at[i] = loss;
    if (j == 0) r->first_ms = dt;
    if (j < r->warm) r->warm_ms += dt;
    else if (r->measured < r->cap) {
        r->ms[r->measured++] = dt;
        r->measured_s += dt * 1e-3;
        /* the backend's split of the step just read back (off the timed path:
         * the next step's clock started above) */
        if (!r->ph_off && r->be->vt->phase_times) {
            double p[3];
            tt_status st;
            tt_status_clear(&st);
            int rc = r->be->vt->phase_times(r->be, p, &st);
            if (rc == TT_OK) {
                for (int i = 0; i < 3; i++) r->ph[i * r->cap + r->n_ph] = p[i];
                r->n_ph++;
            } else if (rc == TT_EUNSUP) {
                r->ph_off = 1;
                snprintf(r->ph_why, sizeof r->ph_why, "%.150s", st.msg);
            }
        }
    }
    r->n = j + 1;
    return 0;
}

static int cmd_bench(int argc, char **argv) {
    opts o;
    memset(&o, 0, sizeof o);
    int rc = parse_opts("bench", bench_opts, argc, argv, 2, &o);
    if (rc == -1) {
        command_help("bench",
                     "Steady-state time of one training step on real text batches (default: the fortunes\n"
                     "collection): forward, loss, backward, grad-norm clip, AdamW, batch sampling and the loss\n"
                     "read back. Same weights and batches on every backend; losses after steps 1, 10, 50;\n"
                     "median and spread of the measured steps after warm-up; start-up reported separately.",
                     bench_opts);
        return 0;
    }
    if (rc) return rc;
    tt_model_config cfg;
    const char *preset_name = NULL;
    if ((rc = model_config(&o, NULL, DEFAULT_PRESET, &cfg, &preset_name))) return rc;
    int64_t steps = o.set[O_STEPS] ? o.steps : BENCH_DEFAULT_STEPS;
    int64_t warm = o.set[O_WARMUP_STEPS] ? o.bench_warmup : BENCH_DEFAULT_WARMUP;
    int64_t max_steps = o.set[O_MAX_STEPS] ? o.max_steps : BENCH_DEFAULT_MAX_STEPS;
    double min_time = o.set[O_MIN_TIME] ? o.min_time : 0.0;
    int accum = o.set[O_ACCUM] ? o.accum : 1;
    if (steps < 10 || steps > 1000000)
        return error_line(EXIT_USAGE, "bench needs --steps in 10..1000000 measured steps (got %lld)", (long long)steps);
    if (warm > 1000000) return error_line(EXIT_USAGE, "--warmup must be at most 1000000 (got %lld)", (long long)warm);
    if (max_steps < steps) max_steps = steps;
    tt_status st;
    tt_status_clear(&st);
    tt_train_config tc;
    tt_train_config_default(&tc, warm + max_steps);
    tc.sched = TT_SCHED_CONSTANT;
    tc.warmup = BENCH_LR_WARMUP;
    tc.lr = tt_default_lr(&cfg);
    tc.min_lr = tc.lr;
    tc.accum = accum;
    if (o.set[O_SEED]) tc.seed = o.seed;
    if (tt_train_config_validate(&tc, &st)) return error_line(EXIT_USAGE, "%s", st.msg);

    tt_corpus corpus;
    memset(&corpus, 0, sizeof corpus);
    double tc0 = tt_now();
    if (tt_corpus_load(o.data, cfg.ctx, &corpus, &st)) return error_line(EXIT_FAIL, "%s", st.msg);
    double corpus_ms = (tt_now() - tc0) * 1e3;
    tt_train_state s;
    memset(&s, 0, sizeof s);
    if (tt_state_init(&s, &cfg, &tc, &st)) {
        tt_corpus_free(&corpus);
        return error_line(EXIT_FAIL, "%s", st.msg);
    }

    const size_t row = (size_t)cfg.batch * (size_t)(cfg.ctx + 1);
    uint8_t *tok = malloc((size_t)accum * row);
    double *ms = malloc((size_t)(max_steps + 2) * sizeof *ms);
    double *ph = malloc((size_t)(max_steps + 2) * 3 * sizeof *ph);
    tt_backend *be = NULL;
    float loss_at[3] = {NAN, NAN, NAN};
    if (!tok || !ms || !ph) {
        rc = error_line(EXIT_FAIL, "out of memory");
        goto out;
    }
    int threads = o.set[O_THREADS] ? o.threads : tt_default_threads();
    double t0 = tt_now();
    if ((rc = make_backend(o.backend ? o.backend : "cpu", &cfg, threads, o.json, &be))) goto out;
    double t1 = tt_now();
    if (be->vt->set_state(be, s.params, s.m, s.v, &st)) {
        rc = error_line(EXIT_FAIL, "%s", st.msg);
        goto out;
    }
    double t2 = tt_now();
    int pipe = be->vt->step_result_prev != NULL;
    {
        const char *e = getenv("TT_TRAIN_PIPELINE"); /* the trainer's switch: 0 = synchronous */
        if (e && atoi(e) == 0) pipe = 0;
    }
    /* A step's time = the interval between its loss reaching the host and the
     * previous step's loss reaching it (step 1: from the start of its batch
     * sampling). Synchronous loop: sample, step, step_result, so this is the
     * step's own wall time. Pipelined loop (what the trainer does on a backend
     * with step_result_prev): step k+1 is sampled and submitted before the
     * loss of step k is read; the interval is then the steady-state time per
     * step of a loop that never lets the device idle. */
    bench_rec rec = {0};
    rec.warm = warm;
    rec.ms = ms;
    rec.cap = max_steps + 2;
    rec.loss_at = loss_at;
    rec.be = be;
    rec.ph = ph;
    if (!be->vt->phase_times) snprintf(rec.ph_why, sizeof rec.ph_why, "the %s backend does not measure phases", be->desc.name);
    rec.t_last = tt_now();
    float loss = NAN, gn = NAN;
    int64_t pending = -1; /* a submitted step whose loss has not been read */
    int64_t k = 0;
    for (;; k++) {
        if (rec.n >= warm && (rec.measured >= max_steps || (rec.measured >= steps && rec.measured_s >= min_time))) break;
        tt_optim_args opt = tt_optim_args_at(&tc, k);
        tt_step_tokens(&corpus, &tc, k, cfg.batch, cfg.ctx, tok);
        if (be->vt->step(be, tok, accum, &opt, &st)) {
            rc = error_line(EXIT_FAIL, "step %lld: %s", (long long)k + 1, st.msg);
            goto out;
        }
        int64_t done = -1;
        if (pipe && pending >= 0) {
            if (be->vt->step_result_prev(be, &loss, &gn, &st)) {
                rc = error_line(EXIT_FAIL, "step %lld: %s", (long long)pending + 1, st.msg);
                goto out;
            }
            done = pending;
            pending = k;
        } else if (pipe && k > 0) {
            pending = k; /* step 1 ran synchronously: from step 2 on, one step is always in flight */
        } else {
            if (be->vt->step_result(be, &loss, &gn, &st)) {
                rc = error_line(EXIT_FAIL, "step %lld: %s", (long long)k + 1, st.msg);
                goto out;
            }
            done = k;
        }
        if (done >= 0 && (rc = bench_record(&rec, done, loss))) goto out;
    }
    if (pending >= 0) {
        if (be->vt->step_result(be, &loss, &gn, &st)) {
            rc = error_line(EXIT_FAIL, "step %lld: %s", (long long)pending + 1, st.msg);
            goto out;
        }
        if ((rc = bench_record(&rec, pending, loss))) goto out;
    }
    int64_t measured = rec.measured;
    double first_ms = rec.first_ms, warm_ms = rec.warm_ms, measured_s = rec.measured_s;
    int64_t total = rec.n;
    double sum = 0;
    for (int64_t i = 0; i < measured; i++) sum += ms[i];
    qsort(ms, (size_t)measured, sizeof *ms, cmp_double);
    double med = quantile(ms, measured, 0.5), p10 = quantile(ms, measured, 0.1), p90 = quantile(ms, measured, 0.9);
    double tokens = (double)accum * cfg.batch * cfg.ctx, flops = tt_config_step_flops(&cfg) * accum;
    /* phase split: median of each phase over the measured steps that have one */
    double phase_med[3] = {NAN, NAN, NAN};
    int has_phase = rec.n_ph > 0 && !rec.ph_off;
    if (has_phase)
        for (int i = 0; i < 3; i++) {
            qsort(ph + (size_t)i * rec.cap, (size_t)rec.n_ph, sizeof *ph, cmp_double);
            phase_med[i] = quantile(ph + (size_t)i * rec.cap, rec.n_ph, 0.5);
        }
    else if (!rec.ph_why[0])
        snprintf(rec.ph_why, sizeof rec.ph_why, "the backend reported no phase times for the measured steps");
    const char *phase_src = !has_phase ? rec.ph_why
                            : strcmp(be->desc.name, "cpu") == 0
                                ? "host wall clock around the phases inside the backend's step (per-phase medians; "
                                  "batch sampling and the loss read back are outside them)"
                                : "GPU timestamp queries at the pass boundaries (per-phase medians of GPU time)";
    const char *mem_src = NULL;
    double peak_host = bench_peak_host(&mem_src);
    int is_cpu = strcmp(be->desc.name, "cpu") == 0;
#if defined(__EMSCRIPTEN__)
    const char *runtime = "wasm";
#else
    const char *runtime = "native";
#endif
    char cpu_model[256], commit[128], date[32], sysname[200] = "";
    bench_cpu_model(cpu_model, sizeof cpu_model);
    bench_commit(commit, sizeof commit);
    {
        time_t now = time(NULL);
        struct tm tmv;
        gmtime_r(&now, &tmv);
        strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tmv);
        struct utsname un;
        if (uname(&un) == 0) snprintf(sysname, sizeof sysname, "%.60s %.60s %.40s", un.sysname, un.release, un.machine);
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    const char *contains =
        pipe ? "one optimizer step on batch x ctx tokens (x accum micro-batches): host batch sampling from the corpus + "
               "forward + fused softmax/cross-entropy + backward + global grad-norm + clip + AdamW + the loss read back "
               "to the host; pipelined as in the trainer (step k+1 is submitted before the loss of step k is read): "
               "the time of a step is the interval between successive losses arriving on the host"
             : "one optimizer step on batch x ctx tokens (x accum micro-batches): host batch sampling from the corpus + "
               "forward + fused softmax/cross-entropy + backward + global grad-norm + clip + AdamW + the loss read back "
               "to the host (the step is complete when its loss is on the host; steps run back to back)";
    if (o.json) {
        printf("{\"schema\":\"%s\",\"kind\":\"result\",\"bench\":\"train_step\"", BENCH_SCHEMA);
        json_key_str(stdout, "label", o.label ? o.label : "");
        json_key_str(stdout, "preset", preset_name ? preset_name : "");
        fputs(",\"model\":", stdout);
        json_cfg(stdout, &cfg);
        json_key_str(stdout, "backend", be->desc.name);
        json_key_str(stdout, "runtime", runtime);
        json_key_str(stdout, "device", be->desc.device);
        printf(",\"threads\":%d,\"accum\":%d,\"tokens_per_step\":%.0f,\"seed\":%llu,\"lr\":", is_cpu ? threads : 0, accum,
               tokens, (unsigned long long)tc.seed);
        json_num(stdout, tc.lr);
        printf(",\"lr_warmup_steps\":%d,\"pipelined\":%s", BENCH_LR_WARMUP, pipe ? "true" : "false");
        json_key_str(stdout, "data", corpus.desc);
        printf(",\"data_hash\":\"%016llx\"", (unsigned long long)corpus.hash);
        printf(",\"steps_run\":%lld,\"warmup_steps\":%lld,\"measured_steps\":%lld,\"measured_s\":", (long long)total,
               (long long)warm, (long long)measured);
        json_num(stdout, measured_s);
        printf(",\"startup_ms\":{\"corpus\":%.3f,\"create\":%.3f,\"upload\":%.3f,\"first_step\":%.3f,\"warmup_total\":%.3f}",
               corpus_ms, (t1 - t0) * 1e3, (t2 - t1) * 1e3, first_ms, warm_ms);
        printf(",\"ms_per_step\":{\"median\":%.4f,\"mean\":%.4f,\"min\":%.4f,\"p10\":%.4f,\"p90\":%.4f,\"max\":%.4f}", med,
               sum / (double)measured, ms[0], p10, p90, ms[measured - 1]);
        printf(",\"tokens_per_s\":%.1f,\"gflop_per_step\":%.6f,\"gflops\":%.3f", tokens / (med * 1e-3), flops / 1e9,
               flops / (med * 1e-3) / 1e9);
        fputs(",\"loss\":{", stdout);
        for (int j = 0; j < 3; j++) {
            printf("%s\"%d\":", j ? "," : "", bench_loss_at[j]);
            json_num(stdout, loss_at[j]);
        }
        fputs("},\"final_loss\":", stdout);
        json_num(stdout, loss);
        fputs(",\"peak_host_bytes\":", stdout);
        json_num(stdout, peak_host);
        json_key_str(stdout, "peak_host_source", mem_src);
        /* device buffers the backend allocated at creation (null: a host backend) */
        if (is_cpu) fputs(",\"gpu_buffer_bytes\":null", stdout);
        else printf(",\"gpu_buffer_bytes\":%llu", (unsigned long long)be->desc.device_bytes);
        printf(",\"backend_host_bytes\":%llu", (unsigned long long)be->desc.host_bytes);
        if (has_phase) {
            fputs(",\"phase_ms\":{\"forward\":", stdout);
            json_num(stdout, phase_med[0]);
            fputs(",\"backward\":", stdout);
            json_num(stdout, phase_med[1]);
            fputs(",\"optimizer\":", stdout);
            json_num(stdout, phase_med[2]);
            printf(",\"steps\":%lld}", (long long)rec.n_ph);
        } else {
            fputs(",\"phase_ms\":null", stdout);
        }
        json_key_str(stdout, "phase_source", phase_src);
        fputs(",\"machine\":{\"cpu\":", stdout);
        json_str(stdout, cpu_model, strlen(cpu_model));
        printf(",\"cores\":%ld", cores);
        json_key_str(stdout, "isa", TT_ISA);
        printf(",\"simd_width\":%d", TT_VW);
        json_key_str(stdout, "os", sysname);
        fputs("}", stdout);
        json_key_str(stdout, "version", TT_VERSION);
        json_key_str(stdout, "commit", commit);
        json_key_str(stdout, "date", date);
        json_key_str(stdout, "step_contains", contains);
        fputs("}\n", stdout);
    } else {
        char params[32];
        fmt_count(params, sizeof params, tt_config_param_count(&cfg));
        printf("bench: %s (%s params: %d layers, d_model %d, %d heads, ctx %d, batch %d%s)\n",
               preset_name ? preset_name : "custom", params, cfg.n_layer, cfg.d_model, cfg.n_head, cfg.ctx, cfg.batch,
               accum > 1 ? ", accum" : "");
        printf("backend  %s (%s%s): %s\n", be->desc.name, runtime, pipe ? ", pipelined" : "", be->desc.device);
        printf("machine  %s, %ld cores, %s%s\n", cpu_model[0] ? cpu_model : "unknown cpu", cores, TT_ISA,
               is_cpu ? "" : " (host)");
        printf("data     %s, seed %llu, lr %g (warm-up %d steps, then constant)\n", corpus.desc,
               (unsigned long long)tc.seed, tc.lr, BENCH_LR_WARMUP);
        printf("a step   %s\n", contains);
        printf("start-up corpus %.1f ms, create %.1f ms, upload %.1f ms, first step %.1f ms, %lld warm-up steps %.1f ms\n",
               corpus_ms, (t1 - t0) * 1e3, (t2 - t1) * 1e3, first_ms, (long long)warm, warm_ms);
        printf("steady   %.3f ms/step median over %lld steps (min %.3f, p10 %.3f, p90 %.3f, max %.3f)\n", med,
               (long long)measured, ms[0], p10, p90, ms[measured - 1]);
        printf("rate     %.0f tokens/s, %.2f GFLOP/s (%.3f GFLOP per step)\n", tokens / (med * 1e-3),
               flops / (med * 1e-3) / 1e9, flops / 1e9);
        printf("loss     ");
        for (int j = 0; j < 3; j++) {
            if (isfinite(loss_at[j])) printf("step %d %.4f  ", bench_loss_at[j], loss_at[j]);
            else printf("step %d -  ", bench_loss_at[j]);
        }
        printf("(%lld steps run)\n", (long long)total);
        if (has_phase)
            printf("phases   forward %.3f ms, backward %.3f ms, optimizer %.3f ms (median over %lld steps; %s)\n",
                   phase_med[0], phase_med[1], phase_med[2], (long long)rec.n_ph, phase_src);
        else printf("phases   not measured: %s\n", phase_src);
        if (isfinite(peak_host)) printf("memory   peak host %.1f MB (%s)\n", peak_host / 1e6, mem_src);
        printf("memory   backend plan: host %.1f MB", be->desc.host_bytes / 1e6);
        if (!is_cpu) printf(", GPU buffers %.1f MB", be->desc.device_bytes / 1e6);
        printf("\n");
        printf("commit   %s, %s\n", commit, date);
    }
out:
    tt_backend_destroy(be);
    free(tok);
    free(ms);
    free(ph);
    tt_state_free(&s);
    tt_corpus_free(&corpus);
    return rc;
}

/* ------------------------------------------------------------------ */
/* profile: per-kernel time of one WebGPU training step (webgpu_profile.h).
 * Each dispatch site of the step (forward, backward, optimizer, n_micro = 1)
 * is timed alone: run `reps` times back to back in one submit, host clock
 * around a readback, minus an empty submit's cost. Rows aggregate sites by
 * kernel (or, --detail, by kernel and shape). The sum is not the step time:
 * a real step overlaps nothing, but it also skips the per-site submit cost;
 * `tinytrain bench` gives the step time. Default 20 reps: with 3, the H200
 * gpt2 profile read the forward sites (timed first) 30-70% high (attn_m_fwd
 * 14.9 vs 8.7 ms at 20 reps; the forward products above the same shapes
 * timed alone by tests/bench_matmul.c), docs/BENCHMARKS.md run 5. */
static int cmp_prof(const void *a, const void *b) {
    double x = ((const tt_webgpu_prof *)a)->ms, y = ((const tt_webgpu_prof *)b)->ms;
    return x > y ? -1 : x < y;
}

static int cmd_profile(int argc, char **argv) {
    opts o;
    memset(&o, 0, sizeof o);
    int rc = parse_opts("profile", profile_opts, argc, argv, 2, &o);
    if (rc == -1) {
        command_help("profile",
                     "Per-kernel time of one WebGPU training step (forward, backward, optimizer): every\n"
                     "dispatch site timed alone, summed per kernel, with GFLOP/s of matmuls and attention.\n"
                     "WebGPU only; `tinytrain bench` measures whole steps on every backend.",
                     profile_opts);
        return 0;
    }
    if (rc) return rc;
    tt_model_config cfg;
    const char *preset_name = NULL;
    if ((rc = model_config(&o, NULL, DEFAULT_PRESET, &cfg, &preset_name))) return rc;
    int reps = o.set[O_REPS] ? o.reps : 20;
    tt_status st;
    tt_status_clear(&st);
    tt_backend *be = NULL;
    if ((rc = make_backend("webgpu", &cfg, 1, 1, &be))) return rc;
    size_t P = be->layout.total;
    float *p = malloc(P * sizeof *p);
    tt_webgpu_prof prof[256];
    int n = 0;
    if (!p) {
        rc = error_line(EXIT_FAIL, "out of memory");
        goto out;
    }
    tt_model_init_params(&be->cfg, &be->layout, o.set[O_SEED] ? o.seed : 1337, p, NULL);
    tt_webgpu_profile_fn profile = (tt_webgpu_profile_fn)be->vt->get_proc(be, "webgpu.profile");
    if (be->vt->set_state(be, p, NULL, NULL, &st) || profile(be, reps, o.set[O_DETAIL], prof, 256, &n, &st)) {
        rc = error_line(EXIT_FAIL, "profile: %s", st.msg);
        goto out;
    }
    qsort(prof, (size_t)n, sizeof *prof, cmp_prof);
    double tot = 0;
    for (int i = 0; i < n; i++) tot += prof[i].ms;
    if (o.json) {
        printf("{\"schema\":\"tinytrain.profile/1\",\"preset\":");
        json_str(stdout, preset_name ? preset_name : "", preset_name ? strlen(preset_name) : 0);
        printf(",\"device\":");
        json_str(stdout, be->desc.device, strlen(be->desc.device));
        printf(",\"reps\":%d,\"sum_ms\":%.6f,\"kernels\":[", reps, tot);
        for (int i = 0; i < n; i++) {
            printf("%s{\"kernel\":\"%s\",\"detail\":", i ? "," : "", prof[i].kernel);
            json_str(stdout, prof[i].tag, strlen(prof[i].tag));
            printf(",\"sites\":%d,\"ms\":%.6f,\"gflop\":%.6f}", prof[i].sites, prof[i].ms, prof[i].gflop);
        }
        printf("]}\n");
    } else {
        printf("profile: %s (%lld params) on %s, each site run %d times back to back\n",
               preset_name ? preset_name : "custom", (long long)tt_config_param_count(&cfg), be->desc.device, reps);
        printf("  %-16s %-30s %5s %10s %6s %10s\n", "kernel", "detail", "sites", "ms/step", "share", "GFLOP/s");
        for (int i = 0; i < n; i++) {
            char gf[32] = "";
            if (prof[i].gflop > 0 && prof[i].ms > 0) snprintf(gf, sizeof gf, "%.1f", prof[i].gflop / prof[i].ms * 1e3);
            printf("  %-16s %-30s %5d %10.3f %5.1f%% %10s\n", prof[i].kernel, prof[i].tag, prof[i].sites, prof[i].ms,
                   100.0 * prof[i].ms / (tot > 0 ? tot : 1), gf);
        }
        printf("  sum of the sites: %.3f ms (not the step time: see tinytrain bench)\n", tot);
    }
out:
    free(p);
    tt_backend_destroy(be);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        printf("tinytrain %s (%s)\n", TT_VERSION, TT_ISA);
        return 0;
    }
    if (strcmp(cmd, "train") == 0) return cmd_train(argc, argv);
    if (strcmp(cmd, "sample") == 0) return cmd_sample(argc, argv);
    if (strcmp(cmd, "eval") == 0) return cmd_eval(argc, argv);
    if (strcmp(cmd, "info") == 0) return cmd_info(argc, argv);
    if (strcmp(cmd, "export") == 0) return cmd_export(argc, argv);
    if (strcmp(cmd, "bench") == 0) return cmd_bench(argc, argv);
    if (strcmp(cmd, "profile") == 0) return cmd_profile(argc, argv);
    return error_line(EXIT_USAGE, "unknown command '%s' (commands: train, sample, eval, info, export, bench, profile)",
                      cmd);
}
