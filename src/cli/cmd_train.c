/* cmd_train.c — `tinytrain train`: options, the output folder, the run's
 * setup (train/run.h: resume, init-from and their checks), progress output
 * (terminal line, plain lines, JSON lines), Ctrl-C, the closing report and
 * sample. */
#include "cli.h"

#include "io/fileio.h"
#include "train/hf.h"
#include "train/options.h"
#include "train/run.h"
#include "train/runfile.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/stat.h>

/* The options of `train` beyond the training-option table (src/train/options.c,
 * whose names are also the web app's and the checkpoint's): where the data
 * comes from and the files go, and how progress is shown. */
static const opt_def train_opts[] = {
    {"data", O_DATA, 1, "text file or folder (default: the fortunes collection)"},
    {"out", O_OUT, 1, "output folder for checkpoint, CSV, SVG (default runs/<preset>)"},
    {"resume", O_RESUME, 1, "continue from a checkpoint"},
    {"init-from", O_INIT_FROM, 1, "start from the weights of a checkpoint, run folder or Hugging Face folder (fresh "
                                  "optimizer, schedule and step 0; the model shape is the source's)"},
    {"adapter", O_ADAPTER_IN, 1, "with --init-from: a peft LoRA adapter folder the run's adapters start from (its "
                                 "rank, alpha and targets)"},
    {"log-every", O_LOG_EVERY, 1, "plain progress line every N steps when not on a terminal"},
    {"sample-tokens", O_SAMPLE_TOKENS, 1, "tokens of sample text printed after training (default 400, 0 = none)"},
    {"json", O_JSON, 0, "JSON lines on stdout"},
    {"config", O_CONFIG, 1, "run file: a JSON object of training options (+ \"data\"); flags win over it"},
    {"print-config", O_PRINT_CONFIG, 0, "print the resolved options as a run file (for --config) and exit"},
    {"help", O_HELP, 0, "this help"},
    {NULL, 0, 0, NULL}};


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
    const tt_train_state *s;
} progress_ctx;

/* the run's corpus: bits per byte of a loss in nats per token (data.h) */
static const tt_corpus *g_corpus;
static double bpb(double loss) { return g_corpus ? tt_corpus_bpb(g_corpus, loss) : loss / log(2.0); }
/* ,"key":number on stdout */
static void jnum(const char *key, double x) {
    printf(",\"%s\":", key);
    json_num(stdout, x);
}

/* --target-val reached: one line (or a JSON event), once per run */
static void print_target(const progress_ctx *pc, const tt_progress *p) {
    const tt_train_state *s = pc->s;
    if (pc->json) {
        printf("{\"event\":\"target\",\"step\":%lld", (long long)s->target_step);
        jnum("target_val", s->target_val);
        jnum("val_loss", p->val_loss);
        jnum("val_bpb", bpb(p->val_loss));
        jnum("wall_s", s->target_s);
        fputs("}\n", stdout);
    } else {
        char dur[32];
        fmt_duration(dur, sizeof dur, s->target_s);
        printf("target reached: val loss %.4f (%.3f bpb) <= %g at step %lld, %s (%.1f s) into this run\n", p->val_loss,
               bpb(p->val_loss), s->target_val, (long long)s->target_step, dur, s->target_s);
    }
}

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
            jnum("bpb", bpb(p->loss));
            if (p->loss_scale > 0) { /* --precision f16: the loss scaler after the step */
                jnum("loss_scale", p->loss_scale);
                printf(",\"scale_good\":%lld,\"skipped\":%s,\"skipped_steps\":%lld", (long long)p->scale_good,
                       isfinite(p->grad_norm) ? "false" : "true", (long long)p->scale_skipped);
            }
            fputs("}\n", stdout);
            fflush(stdout);
            return pc->stop_at > 0 && p->step >= pc->stop_at;
        case TT_EV_EVAL:
            printf("{\"event\":\"eval\",\"step\":%lld,\"val_loss\":", (long long)p->step);
            json_num(stdout, p->val_loss);
            fputs(",\"best_val\":", stdout);
            json_num(stdout, p->best_val);
            printf(",\"best_val_step\":%lld", (long long)p->best_val_step);
            jnum("val_bpb", bpb(p->val_loss));
            jnum("best_val_bpb", bpb(p->best_val));
            fputs("}\n", stdout);
            if (p->target_hit) print_target(pc, p);
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
            printf("\rstep %lld/%lld | loss %.4f (%.3f bpb)%s | %s tok/s | ETA %s\033[K", (long long)p->step,
                   (long long)p->steps, p->loss, bpb(p->loss), val, rate, eta);
            pc->line_open = 1;
            fflush(stdout);
        } else if (p->step % pc->log_every == 0 || p->step == p->steps) {
            printf("step %lld/%lld  loss %.4f  lr %.3g  %s tok/s  ETA %s  bpb %.3f\n", (long long)p->step,
                   (long long)p->steps, p->loss, p->lr, rate, eta, bpb(p->loss));
            fflush(stdout);
        }
        return stop;
    } else if (p->event == TT_EV_EVAL) {
        clear_line(pc);
        printf("step %lld/%lld  val loss %.4f%s  (train %.4f)  val bpb %.3f\n", (long long)p->step, (long long)p->steps,
               p->val_loss, p->best_val_step == p->step ? "  best" : "", p->loss, bpb(p->val_loss));
        if (p->target_hit) print_target(pc, p);
        fflush(stdout);
    } else if (p->event == TT_EV_END) {
        clear_line(pc);
        fflush(stdout);
    }
    return 0;
}

/* --print-config: the corpus as an absolute path, so the file gives the same
 * run wherever it is saved (recipes in the repository use relative paths). */
static int print_run_file(const tt_model_config *cfg, const tt_train_config *tc, const tt_run_config *run,
                          const tt_runtok *tok, const char *data) {
    char *abs = data ? realpath(data, NULL) : NULL;
    /* the tokenizer: where its files are (a BPE run's), made absolute too */
    const char *tp = tok->dir[0] ? tok->dir : tok->files[0];
    char *tabs = tt_tokenizer_kind(tok->tok) == TT_TOK_BPE && tp[0] ? realpath(tp, NULL) : NULL;
    tt_jw w;
    tt_jw_init(&w);
    tt_runfile_write_tok(&w, cfg, tc, run, tabs, abs ? abs : data);
    free(abs);
    free(tabs);
    int rc = w.oom ? error_line(EXIT_FAIL, "out of memory") : 0;
    if (!rc) fputs(w.buf, stdout);
    tt_jw_free(&w);
    return rc;
}

/* train's arguments: the CLI-only options above into *o, every other
 * --name VALUE through the training-option table into *to. Returns 0, -1
 * after printing --help, or an exit code. */
static int train_args(int argc, char **argv, opts *o, tt_options *to, char *file_data, size_t cap) {
    memset(o, 0, sizeof *o);
    tt_options_init(to);
    /* a run file first, wherever --config stands: flags win over it */
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *path = NULL;
        if (strncmp(a, "--config=", 9) == 0) path = a + 9;
        else if (strcmp(a, "--config") == 0 && i + 1 < argc) path = argv[++i];
        if (!path || !*path) continue; /* parse_opts reports a missing path */
        tt_status st;
        tt_status_clear(&st);
        if (tt_runfile_load(to, path, file_data, cap, &st)) return error_line(EXIT_USAGE, "%s", st.msg);
    }
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    if (!rest) return error_line(EXIT_FAIL, "out of memory");
    int n = 0, rc = 0;
    rest[n++] = argv[0];
    rest[n++] = argv[1];
    for (int i = 2; i < argc && !rc; i++) {
        const char *a = argv[i];
        char name[64] = "";
        if (strncmp(a, "--", 2) == 0) {
            size_t nl = strcspn(a + 2, "=");
            snprintf(name, sizeof name, "%.*s", (int)(nl < sizeof name ? nl : sizeof name - 1), a + 2);
        }
        const tt_option *opt = name[0] ? tt_option_find(name) : NULL;
        if (!opt || strcmp(opt->name, name) != 0) { /* CLI-only, unknown or not an option: parse_opts says */
            rest[n++] = argv[i];
            for (const opt_def *d = train_opts; d->name; d++) /* a CLI-only option's value goes with it */
                if (d->has_arg && strcmp(d->name, name) == 0 && !strchr(a, '=') && i + 1 < argc) rest[n++] = argv[++i];
            continue;
        }
        const char *eq = strchr(a, '='), *val = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        tt_status st;
        tt_status_clear(&st);
        if (!val) rc = error_line(EXIT_USAGE, "option --%s needs a value", name);
        else if (tt_options_set(to, name, val, &st)) rc = error_line(EXIT_USAGE, "%s", st.msg);
    }
    if (!rc) {
        rc = parse_opts("train", train_opts, n, rest, 2, o);
        if (rc == -1) {
            printf("usage: tinytrain train [options]\nTrain a model on a text file or folder (default: the fortunes collection), "
                   "saving the checkpoint,\nloss.csv and loss.svg to the output folder, then print a sample.\n\n"
                   "training options (the same names as the web app's and a checkpoint's):\n");
            for (int i = 0; i < tt_option_count(); i++) {
                const tt_option *t = tt_option_at(i);
                char left[64];
                snprintf(left, sizeof left, "--%s X", t->name);
                printf("  %-20s %s (default %s)\n", left, t->help, t->def);
            }
            printf("\noptions of the command:\n");
            usage_opts(stdout, train_opts);
        }
    }
    free(rest);
    return rc;
}

/* ------------------------------------------------------------------ */
/* the run: set up through train/run.h, trained by the loop, reported  */
/* ------------------------------------------------------------------ */

typedef struct {
    opts o;
    tt_options to;
    tt_run r;          /* the setup: state, backend */
    tt_corpus corpus;
    char out_dir[4096], ckpt_path[4200], csv_path[4200], svg_path[4200];
    int created_dir;   /* the output folder did not exist: removed again if the run writes nothing */
    tt_dir_lock_t lock;
    float init_val;    /* --init-from: the validation loss of the start weights */
} train_job;

/* The output folder: made, probed, locked and cleared of a killed save's
 * temporary files before anything slow; never a folder whose checkpoint
 * file is something else. Returns 0 or an exit code. */
static int open_out_dir(train_job *j) {
    const opts *o = &j->o;
    char *d = j->out_dir;
    size_t cap = sizeof j->out_dir;
    if (o->out) snprintf(d, cap, "%s", o->out);
    else if (o->resume) {
        snprintf(d, cap, "%s", o->resume);
        char *sl = strrchr(d, '/');
        if (sl == d) d[1] = 0; /* "/ckpt" -> "/" */
        else if (sl) *sl = 0;
        else snprintf(d, cap, ".");
    } else snprintf(d, cap, "runs/%s", j->r.preset ? j->r.preset : "custom");
    int rc = check_out_dir(d, &j->created_dir);
    if (rc) return rc;
    tt_status st;
    tt_status_clear(&st);
    /* the folder is this run's until it ends: a second run into it is refused */
    if (tt_dir_lock(d, &j->lock, &st)) return error_line(EXIT_FAIL, "%s", st.msg);
    snprintf(j->ckpt_path, sizeof j->ckpt_path, "%s/%s", d, CKPT_NAME);
    snprintf(j->csv_path, sizeof j->csv_path, "%s/loss.csv", d);
    snprintf(j->svg_path, sizeof j->svg_path, "%s/loss.svg", d);
    /* temporary files of a run killed during a save */
    static const char *const ours[] = {CKPT_NAME, "loss.csv", "loss.svg", ".tinytrain-write-test", "tokenizer.json",
                                       "vocab.json", "merges.txt"};
    int n = tt_remove_stale_tmp(d, ours, 7);
    if (n > 0 && !o->json) notice("removed %d temporary file%s left by an interrupted run in '%s'", n, n == 1 ? "" : "s", d);
    if (!o->resume && tt_checkpoint_probe(j->ckpt_path) == TT_FILE_OTHER)
        return error_line(EXIT_FAIL, "'%s' exists and is not a tinytrain training checkpoint (an export?); it will not be "
                                     "overwritten: choose another --out", j->ckpt_path);
    return 0;
}

/* The validation loss of the weights the run starts from, on its corpus */
static int init_eval(train_job *j) {
    tt_status st;
    tt_status_clear(&st);
    tt_backend *be = j->r.be;
    const tt_train_state *s = &j->r.s;
    tt_token *tok = malloc((size_t)s->cfg.batch * (size_t)(s->cfg.ctx + 1) * sizeof *tok);
    int rc = !tok                                              ? tt_fail(&st, TT_ENOMEM, "out of memory")
             : be->vt->set_state(be, s->params, NULL, NULL, &st) ? st.code
                                                                : tt_evaluate(be, &j->corpus, s->tc.eval_batches, tok, &j->init_val, &st);
    free(tok);
    return rc ? error_line(EXIT_FAIL, "init-from: evaluating the start weights: %s", st.msg) : 0;
}

/* tokenizing a large corpus into the token cache: progress on stderr */
typedef struct {
    double last;
    int shown;
} tok_progress;

static void on_tok_progress(void *ctx, uint64_t done, uint64_t total, uint64_t tokens) {
    tok_progress *tp = ctx;
    if (total < (16u << 20)) return; /* small corpora take well under a second */
    double now = tt_now();
    if (done < total && now - tp->last < 0.5) return;
    tp->last = now;
    fprintf(stderr, "\rtinytrain: tokenizing the corpus: %.1f of %.1f MB, %llu tokens\033[K", done / 1e6, total / 1e6,
            (unsigned long long)tokens);
    fflush(stderr);
    tp->shown = 1;
}

/* Everything before the first step: the run's plan (source, options), then
 * --print-config, the output folder, the text, the state and the backend.
 * Returns 0 (ready), -1 (nothing to train: print-config, a finished
 * checkpoint; exit 0) or an exit code. */
static int setup(train_job *j) {
    const opts *o = &j->o;
    tt_status st;
    tt_status_clear(&st);
    tt_run_source src = {.kind = o->resume ? TT_RUN_RESUME : o->init_from ? TT_RUN_INIT_FROM : TT_RUN_FRESH,
                         .path = o->resume ? o->resume : o->init_from, .adapter = o->adapter};
    if (tt_run_plan(&j->r, &j->to, &src, &st)) return error_line(j->r.bad_options ? EXIT_USAGE : EXIT_FAIL, "%s", st.msg);
    if (o->print_config) { /* the resolved options as a run file; nothing runs */
        int rc = print_run_file(&j->r.cfg, &j->r.tc, &j->to.run, &j->r.tok, o->data);
        return rc ? rc : -1;
    }
    int rc = open_out_dir(j);
    if (rc) return rc;
    /* a BPE run resumed on a text file of another size: said before tokenizing it */
    struct stat sb;
    if (o->resume && j->r.s.tok_kind && o->data && stat(o->data, &sb) == 0 && S_ISREG(sb.st_mode) &&
        (uint64_t)sb.st_size != j->r.s.corpus_bytes)
        return error_line(EXIT_FAIL, "corpus mismatch on resume: the checkpoint was trained on another text (%llu bytes); "
                                     "'%s' has %llu bytes; resume on the text it was trained on",
                          (unsigned long long)j->r.s.corpus_bytes, o->data, (unsigned long long)sb.st_size);
    tok_progress tp = {0, 0};
    if (tt_corpus_open(o->data, j->r.tok.tok, j->out_dir, j->r.cfg.ctx, o->json ? NULL : on_tok_progress, &tp, &j->corpus,
                       &st)) {
        if (tp.shown) fputc('\n', stderr);
        return error_line(EXIT_FAIL, "%s", st.msg);
    }
    if (tp.shown) fputc('\n', stderr);
    g_corpus = &j->corpus;
    if (j->corpus.tokens.count && !o->json)
        notice("%s the token cache of %s (%.3f tokens per byte)", j->corpus.cache_built ? "built" : "reused", j->corpus.desc,
               tt_corpus_tok_per_byte(&j->corpus));
    if (tt_run_open(&j->r, &j->corpus, &st)) return error_line(EXIT_FAIL, "%s", st.msg);
    /* the tokenizer travels with the run: its files beside the checkpoint (train/runtok.h) */
    if (!j->r.done && tt_runtok_save(&j->r.tok, j->out_dir, &st)) return error_line(EXIT_FAIL, "%s", st.msg);
    if (j->r.done) {
        notice("checkpoint '%s' is already at step %lld of %lld; pass --steps N (more than %lld) to train further", o->resume,
               (long long)j->r.s.step, (long long)j->r.tc.steps, (long long)j->r.s.step);
        return -1;
    }
    for (int i = 0; i < 2; i++)
        if (j->r.note[i][0] && !o->json) notice("%s", j->r.note[i]);
    if (j->r.tok_note[0] && !o->json) notice("%s", j->r.tok_note);
    if (tt_run_make_backend(&j->r, &st)) return error_line(EXIT_FAIL, "%s", st.msg);
    if (j->r.backend_note[0] && !o->json) notice("%s", j->r.backend_note);
    return o->init_from ? init_eval(j) : 0;
}

/* The first lines: what is trained, on what, where (a JSON start event with --json) */
static void print_start(const train_job *j) {
    const tt_train_state *s = &j->r.s;
    const tt_model_config *cfg = &s->cfg;
    const tt_train_config *tc = &s->tc;
    const char *preset = j->r.preset ? j->r.preset : "custom", *device = j->r.be->desc.device;
    char params[32];
    fmt_count(params, sizeof params, tt_config_param_count(cfg));
    int64_t tok_step = (int64_t)cfg->batch * cfg->ctx * tc->accum;
    if (j->o.json) {
        fputs("{\"event\":\"start\",\"model\":", stdout);
        json_cfg(stdout, cfg);
        printf(",\"preset\":");
        json_str(stdout, preset, strlen(preset));
        printf(",\"steps\":%lld,\"start_step\":%lld,\"lr\":", (long long)tc->steps, (long long)s->step);
        json_num(stdout, tc->lr);
        printf(",\"accum\":%d,\"seed\":%llu,\"tokens_per_step\":%lld,\"backend\":", tc->accum, (unsigned long long)tc->seed,
               (long long)tok_step);
        json_str(stdout, device, strlen(device));
        fputs(",\"corpus\":", stdout);
        json_str(stdout, j->corpus.desc, strlen(j->corpus.desc));
        printf(",\"tokenizer\":\"%s\",\"vocab\":%d", tt_tokenizer_kind_name(j->r.tok.tok), cfg->vocab);
        if (j->corpus.tokens.count)
            printf(",\"tokenizer_hash\":\"%016llx\",\"corpus_tokens\":%llu", (unsigned long long)s->tok_hash,
                   (unsigned long long)j->corpus.n_tok);
        jnum("val_tokens_per_byte", tt_corpus_tok_per_byte(&j->corpus));
        fputs(",\"out\":", stdout);
        json_str(stdout, j->out_dir, strlen(j->out_dir));
        if (s->init_from[0]) {
            fputs(",\"init_from\":", stdout);
            json_str(stdout, s->init_from, strlen(s->init_from));
            printf(",\"init_hash\":\"%016llx\",\"init_val_loss\":", (unsigned long long)s->init_hash);
            json_num(stdout, j->init_val);
        }
        fputs("}\n", stdout);
        return;
    }
    printf("tinytrain %s: %s model (%d layers, d_model %d, %d heads, ctx %d), %s params\n",
           j->o.resume ? "resuming" : "training", preset, cfg->n_layer, cfg->d_model, cfg->n_head, cfg->ctx, params);
    if (j->corpus.tokens.count)
        printf("  data    %s: %llu train / %llu validation tokens, %.3f tokens per byte\n"
               "  tokens  BPE, %d ids (hash %016llx); losses per token, bpb = loss x tokens/byte / ln 2\n",
               j->corpus.desc, (unsigned long long)j->corpus.n_tok_train,
               (unsigned long long)(j->corpus.n_tok - j->corpus.n_tok_train), tt_corpus_tok_per_byte(&j->corpus), cfg->vocab,
               (unsigned long long)s->tok_hash);
    else
        printf("  data    %s: %zu train / %zu validation bytes\n", j->corpus.desc, j->corpus.n_train,
               j->corpus.n - j->corpus.n_train);
    printf("  run     steps %lld..%lld, batch %d x %d%s = %lld tokens/step, lr %g (%s, warmup %lld), seed %llu\n",
           (long long)s->step + 1, (long long)tc->steps, cfg->batch, cfg->ctx, tc->accum > 1 ? " x accum" : "",
           (long long)tok_step, tc->lr, tc->sched == TT_SCHED_COSINE ? "cosine" : "constant", (long long)tc->warmup,
           (unsigned long long)tc->seed);
    if (s->init_from[0]) {
        printf("  init    %s (weights %016llx)", s->init_from, (unsigned long long)s->init_hash);
        if (isfinite(j->init_val)) printf(": val loss %.4f on this corpus at step 0", j->init_val);
        printf("\n");
    }
    printf("  backend %s\n  output  %s/ (%s, loss.csv, loss.svg%s)\n", device, j->out_dir, CKPT_NAME,
           j->corpus.tokens.count ? ", the tokenizer's files, the token cache" : "");
    fflush(stdout);
}

/* The training loop (train/loop.c) with progress output, Ctrl-C and the
 * stop rules of the run options. Returns 0 or an exit code. */
static int train_loop(train_job *j, progress_ctx *pc, int *stopped, double *wall) {
    const tt_run_config *run = &j->to.run;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESETHAND; /* a second Ctrl-C kills at once (the checkpoint write is atomic) */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    tt_trainer tr;
    memset(&tr, 0, sizeof tr);
    tr.s = &j->r.s;
    tr.corpus = &j->corpus;
    tr.be = j->r.be;
    tr.ckpt_path = j->ckpt_path;
    tr.csv_path = j->csv_path;
    tr.svg_path = j->svg_path;
    tr.save_every = run->save_every;
    tr.save_seconds = run->save_seconds;
    tr.no_pipeline = !run->pipeline;
    tr.target_val = run->target_val;
    tr.stop_at_target = run->stop_at_target;
    tr.progress = on_progress;
    tr.user = pc;
    tr.stop_flag = &g_stop;
    tr.stop_at = pc->stop_at; /* exact even when GPU steps overlap */
    tt_status st;
    tt_status_clear(&st);
    double t0 = tt_now();
    int trc = tt_train_run(&tr, stopped, &st);
    *wall = tt_now() - t0;
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    clear_line(pc);
    return trc ? error_line(EXIT_FAIL, "%s", st.msg) : 0;
}

/* The closing lines: how the run ended, what it saved, how to go on */
static void print_end(const train_job *j, int stopped, double wall) {
    const tt_train_state *s = &j->r.s;
    int64_t steps = s->tc.steps;
    float last_loss = s->step > 0 ? s->loss_hist[s->step - 1] : NAN;
    if (j->o.json) {
        printf("{\"event\":\"end\",\"step\":%lld,\"steps\":%lld,\"stopped\":%s,\"loss\":", (long long)s->step,
               (long long)steps, stopped ? "true" : "false");
        json_num(stdout, last_loss);
        fputs(",\"best_val\":", stdout);
        json_num(stdout, s->best_val);
        printf(",\"best_val_step\":%lld,\"wall_s\":", (long long)s->best_val_step);
        json_num(stdout, wall);
        fputs(",\"checkpoint\":", stdout);
        json_str(stdout, j->ckpt_path, strlen(j->ckpt_path));
        jnum("bpb", bpb(last_loss));
        jnum("best_val_bpb", bpb(s->best_val));
        if (s->target_step > 0) {
            printf(",\"target_step\":%lld", (long long)s->target_step);
            jnum("target_s", s->target_s);
        }
        fputs("}\n", stdout);
    } else {
        char dur[32];
        fmt_duration(dur, sizeof dur, wall);
        int at_target = j->to.run.stop_at_target && s->target_step > 0 && s->target_step == s->step;
        if (stopped)
            printf("%s at step %lld of %lld; saved %s\ncontinue with: tinytrain train --resume %s\n",
                   g_stop ? "interrupted" : at_target ? "stopped at the target (--stop-at-target)" : "stopped (--stop-after)",
                   (long long)s->step, (long long)steps, j->ckpt_path, j->ckpt_path);
        else
            printf("done: %lld steps in %s, final train loss %.4f (%.3f bpb), best val loss %.4f (%.3f bpb, step %lld)\n"
                   "saved %s, %s, %s\n",
                   (long long)s->step, dur, last_loss, bpb(last_loss), s->best_val, bpb(s->best_val),
                   (long long)s->best_val_step, j->ckpt_path, j->csv_path, j->svg_path);
        if (j->to.run.target_val > 0 && s->target_step == 0) printf("target val loss %g not reached\n", j->to.run.target_val);
    }
    fflush(stdout);
}

/* After a finished run: a sample of the model (--sample-tokens bytes) */
static int closing_sample(const train_job *j) {
    const opts *o = &j->o;
    int64_t n_sample = o->set[O_SAMPLE_TOKENS] ? o->sample_tokens : 400;
    if (n_sample <= 0) return 0;
    const tt_train_state *s = &j->r.s;
    if (s->cfg.vocab != TT_VOCAB && (!j->r.tok.tok || tt_tokenizer_kind(j->r.tok.tok) != TT_TOK_BPE)) { /* text needs a tokenizer */
        if (!o->json) printf("\n(no closing sample: a model of vocabulary %d samples ids with tinytrain sample --ckpt %s --ids ...)\n",
                             s->cfg.vocab, j->ckpt_path);
        return 0;
    }
    tt_sample_config sc;
    tt_sample_config_default(&sc);
    sc.max_tokens = n_sample;
    sc.seed = s->tc.seed;
    if (!o->json) printf("\n--- sample (temperature %.1f, top-k %d, top-p %.2f) ---\n", sc.temperature, sc.top_k, sc.top_p);
    int rc = print_sample(&s->cfg, s->params, j->r.tok.tok, NULL, &sc, sampler_threads(&s->cfg, o), o->json);
    if (!rc && !o->json) printf("---\nmore: tinytrain sample --ckpt %s --prompt \"...\"\n", j->ckpt_path);
    return rc;
}

/* Frees the run; a run that failed before saving anything leaves no empty folder behind */
static void finish(train_job *j, int rc) {
    tt_run_close(&j->r);
    tt_corpus_free(&j->corpus);
    if (rc && rc != EXIT_INTERRUPTED && j->created_dir && j->ckpt_path[0] &&
        tt_checkpoint_probe(j->ckpt_path) == TT_FILE_ABSENT) {
        char lockf[4200];
        snprintf(lockf, sizeof lockf, "%s/.tinytrain.lock", j->out_dir);
        unlink(lockf);
        /* what this run wrote before it failed: the tokenizer's files, the token cache */
        for (int i = 0; i < TT_RUNTOK_FILES; i++) {
            snprintf(lockf, sizeof lockf, "%s/%s", j->out_dir, tt_runtok_names[i]);
            unlink(lockf);
        }
        DIR *d = opendir(j->out_dir);
        for (struct dirent *e; d && (e = readdir(d));) {
            size_t n = strlen(e->d_name);
            if (strncmp(e->d_name, "tokens-", 7) == 0 && n > 4 && strcmp(e->d_name + n - 4, ".bin") == 0) {
                snprintf(lockf, sizeof lockf, "%s/%s", j->out_dir, e->d_name);
                unlink(lockf);
            }
        }
        if (d) closedir(d);
        rmdir(j->out_dir); /* only if empty */
    }
    tt_dir_unlock(&j->lock);
}

int cmd_train(int argc, char **argv) {
    static train_job job; /* large (paths, options): not on the stack */
    static char file_data[4096]; /* "data" of the run file */
    train_job *j = &job;
    memset(j, 0, sizeof *j);
    j->lock.fd = -1;
    j->init_val = NAN;
    opts *o = &j->o;
    int rc = train_args(argc, argv, o, &j->to, file_data, sizeof file_data);
    if (rc) return rc < 0 ? 0 : rc;
    if (!o->data && file_data[0]) o->data = file_data;
    if (j->to.run.stop_at_target && !(j->to.run.target_val > 0) && !o->json && !o->print_config)
        notice("--stop-at-target has no effect without --target-val");
    if (o->adapter && !o->init_from)
        return error_line(EXIT_USAGE, "--adapter goes with --init-from (the base model the adapter adapts)");
    if (o->init_from && o->resume)
        return error_line(EXIT_USAGE, "--init-from starts a new run from other weights, --resume continues a run with its "
                                      "own: give one of them");

    rc = setup(j);
    if (rc) {
        finish(j, rc < 0 ? 0 : rc);
        return rc < 0 ? 0 : rc;
    }
    progress_ctx pc = {.json = o->json, .tty = !o->json && isatty(STDOUT_FILENO), .s = &j->r.s};
    if (j->to.run.stop_after > 0) pc.stop_at = j->r.s.step + j->to.run.stop_after;
    pc.log_every = o->set[O_LOG_EVERY] ? o->log_every : TT_MAX((int64_t)1, j->r.s.tc.steps / 50);
    print_start(j);
    int stopped = 0;
    double wall = 0;
    rc = train_loop(j, &pc, &stopped, &wall);
    tt_backend_destroy(j->r.be); /* the sample runs on the CPU */
    j->r.be = NULL;
    if (!rc) {
        print_end(j, stopped, wall);
        if (stopped) rc = g_stop ? EXIT_INTERRUPTED : 0;
        else rc = closing_sample(j);
    }
    finish(j, rc);
    return rc;
}
