/* common.c — what the commands share (cli.h): error and notice lines, option parsing and help, model / backend / checkpoint set-up, output folders, number formats, JSON on stdout. */
#include "cli.h"

#include "train/hf.h"
#include "io/peft.h"
#include "lora.h"

#include <fcntl.h>

#include "io/json.h"
#include "train/options.h"

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

int error_line(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int error_line(int code, const char *fmt, ...) {
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

void notice(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void notice(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fflush(stdout);
    fprintf(stderr, "tinytrain: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int parse_i64(const char *s, int64_t *v) {
    if (!s || !*s) return 0;
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (errno || *end) return 0;
    *v = x;
    return 1;
}

int parse_f32(const char *s, float *v) {
    if (!s || !*s) return 0;
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (*end) return 0;
    *v = (float)x; /* NaN / inf / overflow pass through: validation names them */
    return 1;
}

const char *opt_name(const opt_def *defs, int id) {
    for (const opt_def *d = defs; d->name; d++)
        if (d->id == id) return d->name;
    return "?";
}

int bad_value(const char *name, const char *val, const char *what) {
    return error_line(EXIT_USAGE, "invalid value '%s' for --%s (expected %s)", val, name, what);
}

int set_int(const char *name, const char *val, int lo, int hi, int *out) {
    int64_t x;
    if (!parse_i64(val, &x)) return bad_value(name, val, "an integer");
    if (x < lo || x > hi) return error_line(EXIT_USAGE, "--%s must be in %d..%d (got %s)", name, lo, hi, val);
    *out = (int)x;
    return 0;
}

void usage_opts(FILE *f, const opt_def *defs) {
    for (const opt_def *d = defs; d->name; d++) {
        char left[64];
        snprintf(left, sizeof left, "--%s%s", d->name, d->has_arg ? " X" : "");
        fprintf(f, "  %-20s %s\n", left, d->help);
    }
}

/* Parses argv[first..argc) against defs. Returns 0, or an exit code (help: -1). */
int parse_opts(const char *cmd, const opt_def *defs, int argc, char **argv, int first, opts *o) {
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
        case O_PHASES: break;
        case O_PIPELINE: rc = set_int(name, val, 0, 1, &o->pipeline); break;
        case O_TOPK: rc = set_int(name, val, 0, TT_TOK_MAX_VOCAB, &o->top_k); break;
        case O_SEED: {
            /* every seed a checkpoint can hold: 0 .. 2^64-1 */
            char *end = NULL;
            errno = 0;
            unsigned long long u = val[0] >= '0' && val[0] <= '9' ? strtoull(val, &end, 10) : 0;
            if (!end || *end || errno) rc = bad_value(name, val, "an integer in 0..18446744073709551615");
            else o->seed = (uint64_t)u;
            break;
        }
        case O_DATA:
        case O_OUT:
        case O_RESUME:
        case O_INIT_FROM:
        case O_ADAPTER_IN:
        case O_CKPT:
        case O_CONFIG:
            /* a path: never empty, never the next option swallowed by a missing value */
            if (!*val) rc = error_line(EXIT_USAGE, "--%s needs a path (got an empty string)", name);
            else if (!eq && strncmp(val, "--", 2) == 0)
                rc = error_line(EXIT_USAGE, "--%s needs a path, got the option '%.60s' (a path starting with -- can be "
                                            "given as --%s=PATH)", name, val, name);
            else if (d->id == O_DATA) o->data = val;
            else if (d->id == O_OUT) o->out = val;
            else if (d->id == O_RESUME) o->resume = val;
            else if (d->id == O_INIT_FROM) o->init_from = val;
            else if (d->id == O_CONFIG) o->config = val;
            else if (d->id == O_ADAPTER_IN) o->adapter = val;
            else o->ckpt = val;
            break;
        case O_PROMPT: o->prompt = val; break;
        case O_IDS: o->ids = val; break;
        case O_LOGITS: o->logits = 1; break;
        case O_BACKEND:
            if (strcmp(val, "cpu") && strcmp(val, "webgpu") && strcmp(val, "auto")) rc = bad_value(name, val, "cpu, webgpu or auto");
            o->backend = val;
            break;
        case O_JSON: o->json = 1; break;
        case O_PRINT_CONFIG: o->print_config = 1; break;
        case O_TABLE:
            if (o->n_table == (int)(sizeof o->table_name / sizeof o->table_name[0]))
                rc = error_line(EXIT_USAGE, "too many training options for '%s'", cmd);
            else o->table_name[o->n_table] = d->name, o->table_val[o->n_table++] = val;
            break;
        }
        if (rc) return rc;
    }
    return 0;
}

int command_args(const char *cmd, const char *what, const opt_def *defs, int argc, char **argv, opts *o) {
    memset(o, 0, sizeof *o);
    int rc = parse_opts(cmd, defs, argc, argv, 2, o);
    if (rc == -1) command_help(cmd, what, defs);
    return rc;
}

void command_help(const char *cmd, const char *what, const opt_def *defs) {
    printf("usage: tinytrain %s [options]\n%s\n\noptions:\n", cmd, what);
    usage_opts(stdout, defs);
}

/* ------------------------------------------------------------------ */
/* shared helpers                                                      */
/* ------------------------------------------------------------------ */

void preset_list(char *buf, size_t cap) {
    buf[0] = 0;
    for (int i = 0; i < tt_n_presets; i++) {
        size_t n = strlen(buf);
        snprintf(buf + n, cap - n, "%s%s", i ? ", " : "", tt_presets[i].name);
    }
}

/* Model config from --preset (or base) + overrides. Returns 0 or an exit code. */
int model_config(const opts *o, const tt_model_config *base, const char *default_preset, tt_model_config *cfg,
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

/* The command's O_TABLE options (dropout, LoRA, precision, ...) applied to
 * cfg and tc by the training option table's parser, ranges and defaults.
 * Returns 0 or an exit code (the line printed). */
int table_options(const opts *o, tt_model_config *cfg, tt_train_config *tc) {
    if (!o->n_table) return 0;
    tt_status st;
    tt_status_clear(&st);
    tt_options to;
    tt_options_init(&to);
    for (int i = 0; i < o->n_table; i++)
        if (tt_options_set(&to, o->table_name[i], o->table_val[i], &st)) return error_line(EXIT_USAGE, "%s", st.msg);
    tt_model_config c2;
    tt_train_config t2;
    if (tt_options_resolve(&to, cfg, tc, &c2, &t2, &st)) return error_line(EXIT_USAGE, "%s", st.msg);
    *cfg = c2, *tc = t2;
    return 0;
}

/* Creates the backend named kind (cpu | webgpu | auto). Returns 0 or an exit code. */
int make_backend(const char *kind, const tt_model_config *cfg, const tt_backend_opts *bo, int quiet, tt_backend **be) {
    tt_status st;
    tt_status_clear(&st);
    char why[400];
    if (tt_backend_create(kind, cfg, bo, be, why, sizeof why, &st)) {
        tt_backend_fail_line(kind, &st);
        return error_line(EXIT_FAIL, "%s", st.msg);
    }
    if (why[0] && !quiet) notice("%s", why);
    return 0;
}

static int load_base(const char *path, tt_train_state *s) {
    tt_status st;
    tt_status_clear(&st);
    struct stat sb;
    char inner[4200];
    if (path && stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        snprintf(inner, sizeof inner, "%s/%s", path, CKPT_NAME);
        if (stat(inner, &sb) != 0) { /* a Hugging Face folder */
            tt_hf_weights w;
            if (tt_hf_load(path, &w, &st)) return error_line(EXIT_FAIL, "cannot load '%s': %s", path, st.msg);
            int rc = tt_state_alloc(s, &w.cfg, &st);
            if (!rc) {
                memcpy(s->params, w.params, s->layout.total * sizeof(float));
                tt_train_config_default(&s->tc, 1);
            }
            tt_hf_weights_free(&w);
            return rc ? error_line(EXIT_FAIL, "%s", st.msg) : 0;
        }
        path = inner;
    }
    if (tt_checkpoint_load(path, s, &st)) {
        if (strstr(st.msg, path)) return error_line(EXIT_FAIL, "cannot load checkpoint: %s", st.msg);
        return error_line(EXIT_FAIL, "cannot load checkpoint '%s': %s", path, st.msg);
    }
    return 0;
}

/* The peft folder dir (io/peft.h) on the model in *s: *s becomes the LoRA
 * model of its base weights (a LoRA model's own adapters merged in first)
 * and the folder's adapters; what the state says of its run (step, train
 * config, corpus, tokenizer) stays. */
static int attach_adapter(const char *path, const char *dir, tt_train_state *s) {
    tt_status st;
    tt_status_clear(&st);
    const float *base = NULL;
    float *owned = NULL, *ad = NULL;
    tt_model_config bcfg = tt_lora_base_config(&s->cfg), cfg;
    tt_train_state n;
    memset(&n, 0, sizeof n);
    int rc = tt_hf_merged(s, &base, &owned, &st);
    if (rc) rc = error_line(EXIT_FAIL, "%s", st.msg);
    else if (tt_load_peft(dir, &bcfg, &cfg, &ad, &st))
        rc = error_line(EXIT_FAIL, "cannot load adapter '%s' onto '%s': %s", dir, path, st.msg);
    else if (tt_state_alloc(&n, &cfg, &st))
        rc = error_line(EXIT_FAIL, "%s", st.msg);
    if (!rc) {
        tt_lora_join(&n.layout, base, ad, n.params);
        n.tc = s->tc;
        n.step = s->step;
        n.corpus_hash = s->corpus_hash;
        n.corpus_bytes = s->corpus_bytes;
        n.tok_kind = s->tok_kind;
        n.tok_hash = s->tok_hash;
        n.tok_per_byte = s->tok_per_byte;
        memcpy(n.init_from, s->init_from, sizeof n.init_from);
        n.init_hash = s->init_hash;
        tt_state_free(s);
        *s = n;
    } else {
        tt_state_free(s);
    }
    tt_free(owned);
    tt_free(ad);
    return rc;
}

int load_ckpt(const char *path, const char *adapter, tt_train_state *s) {
    int rc = load_base(path, s);
    return rc || !adapter ? rc : attach_adapter(path, adapter, s);
}

int load_model(const char *path, const char *adapter, tt_train_state *s, tt_runtok *rt) {
    int rc = load_ckpt(path, adapter, s);
    if (rc) return rc;
    tt_status st;
    tt_status_clear(&st);
    if (tt_runtok_for_state(path, s, rt, &st)) {
        tt_state_free(s);
        return error_line(EXIT_FAIL, "%s", st.msg);
    }
    return 0;
}

/* mkdir -p */
int make_dirs(const char *path) {
    char buf[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf) {
        errno = n == 0 ? ENOENT : ENAMETOOLONG;
        return -1;
    }
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

const char *short_path(const char *path, char *buf, size_t cap) {
    size_t n = strlen(path);
    if (n < 200 || cap < 130) return path;
    snprintf(buf, cap, "%.60s...%s", path, path + n - 60);
    return buf;
}

/* The output folder exists (created: *created = 1) and is writable. */
int check_out_dir(const char *dir, int *created) {
    char sp[160];
    struct stat sb;
    *created = stat(dir, &sb) != 0;
    if (make_dirs(dir) != 0) {
        int e = errno;
        return error_line(EXIT_FAIL, "cannot create output folder '%s': %s", short_path(dir, sp, sizeof sp),
                          e ? strerror(e) : "invalid path");
    }
    char probe[4200];
    if ((size_t)snprintf(probe, sizeof probe, "%s/.tinytrain-write-test.%ld", dir, (long)getpid()) >= sizeof probe)
        return error_line(EXIT_FAIL, "output folder path too long: '%s'", short_path(dir, sp, sizeof sp));
    /* a fresh file, never a planted one or a link's target */
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, "x", 1) != 1 || close(fd) != 0) {
        int e = errno;
        if (fd >= 0) unlink(probe);
        return error_line(EXIT_FAIL, "output folder '%s' is not writable: %s", short_path(dir, sp, sizeof sp), strerror(e));
    }
    unlink(probe);
    return 0;
}

void fmt_duration(char *out, size_t cap, double s) {
    if (!isfinite(s) || s < 0) { snprintf(out, cap, "?"); return; }
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(out, cap, "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
    else snprintf(out, cap, "%ld:%02ld", t / 60, t % 60);
}

void fmt_rate(char *out, size_t cap, double x) {
    if (x >= 1e6) snprintf(out, cap, "%.2fM", x / 1e6);
    else if (x >= 1e3) snprintf(out, cap, "%.1fk", x / 1e3);
    else snprintf(out, cap, "%.0f", x);
}

void fmt_count(char *out, size_t cap, int64_t x) {
    char tmp[32];
    snprintf(tmp, sizeof tmp, "%lld", (long long)x);
    size_t n = strlen(tmp), j = 0;
    for (size_t i = 0; i < n && j + 2 < cap; i++) {
        out[j++] = tmp[i];
        if ((n - i - 1) % 3 == 0 && i + 1 < n && tmp[0] != '-') out[j++] = ',';
    }
    out[j] = 0;
}

/* JSON on a stream, through the one JSON writer (src/io/json) */
void json_str(FILE *f, const char *s, size_t n) {
    tt_jw w;
    tt_jw_init(&w);
    tt_jw_string(&w, s, n);
    if (!w.oom) fputs(w.buf, f);
    else fputs("\"\"", f);
    tt_jw_free(&w);
}

void json_num(FILE *f, double x) {
    if (isfinite(x)) fprintf(f, "%.9g", x);
    else fputs("null", f);
}

void json_key_str(FILE *f, const char *key, const char *val) {
    fprintf(f, ",\"%s\":", key);
    json_str(f, val ? val : "", val ? strlen(val) : 0);
}

void json_cfg(FILE *f, const tt_model_config *c) {
    fprintf(f, "{\"layers\":%d,\"d_model\":%d,\"heads\":%d,\"ctx\":%d,\"batch\":%d,\"vocab\":%d,\"params\":%lld}", c->n_layer,
            c->d_model, c->n_head, c->ctx, c->batch, c->vocab, (long long)tt_config_param_count(c));
}

