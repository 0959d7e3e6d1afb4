/* cmd_train.c — `tinytrain train`: options, progress output (terminal line, plain lines, JSON lines), Ctrl-C, resume checks, the closing sample. */
#include "cli.h"

#include "io/fileio.h"
#include "train/hf.h"
#include "train/options.h"
#include "train/runfile.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* The options of `train` beyond the training-option table (src/train/options.c,
 * whose names are also the web app's and the checkpoint's): where the data
 * comes from and the files go, and how progress is shown. */
static const opt_def train_opts[] = {
    {"data", O_DATA, 1, "text file or folder (default: the fortunes collection)"},
    {"out", O_OUT, 1, "output folder for checkpoint, CSV, SVG (default runs/<preset>)"},
    {"resume", O_RESUME, 1, "continue from a checkpoint"},
    {"init-from", O_INIT_FROM, 1, "start from the weights of a checkpoint, run folder or Hugging Face folder (fresh "
                                  "optimizer, schedule and step 0; the model shape is the source's)"},
    {"log-every", O_LOG_EVERY, 1, "plain progress line every N steps when not on a terminal"},
    {"sample-tokens", O_SAMPLE_TOKENS, 1, "bytes of sample text printed after training (default 400, 0 = none)"},
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

/* bits per byte of a loss in nats per byte (byte-level tokens) */
static double bpb(double loss) { return loss / log(2.0); }
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
                          const char *data) {
    char *abs = data ? realpath(data, NULL) : NULL;
    tt_jw w;
    tt_jw_init(&w);
    tt_runfile_write(&w, cfg, tc, run, abs ? abs : data);
    free(abs);
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

/* --init-from: the source's shape is the run's; the first difference, named */
static int init_shape(const char *path, const tt_model_config *src, const tt_model_config *run) {
    const struct {
        const char *name;
        int src, run;
    } f[] = {{"layers", src->n_layer, run->n_layer}, {"d-model", src->d_model, run->d_model},
             {"heads", src->n_head, run->n_head}, {"ctx", src->ctx, run->ctx}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (f[i].src != f[i].run)
            return error_line(EXIT_FAIL, "init-from: %s has %s %d, the run asks for %d", path, f[i].name, f[i].src, f[i].run);
    return 0;
}

/* The validation loss of the weights the run starts from, on its corpus */
static int init_eval(tt_backend *be, const tt_train_state *s, const tt_corpus *c, float *loss) {
    tt_status st;
    tt_status_clear(&st);
    uint8_t *tok = malloc((size_t)s->cfg.batch * (size_t)(s->cfg.ctx + 1));
    int rc = !tok                                                      ? tt_fail(&st, TT_ENOMEM, "out of memory")
             : be->vt->set_state(be, s->params, NULL, NULL, &st) ? st.code
                                                                        : tt_evaluate(be, c, s->tc.eval_batches, tok, loss, &st);
    free(tok);
    return rc ? error_line(EXIT_FAIL, "init-from: evaluating the start weights: %s", st.msg) : 0;
}

int cmd_train(int argc, char **argv) {
    opts o;
    tt_options to;
    static char file_data[4096]; /* "data" of the run file */
    int rc = train_args(argc, argv, &o, &to, file_data, sizeof file_data);
    if (rc) return rc < 0 ? 0 : rc;
    if (!o.data && file_data[0]) o.data = file_data;
    if (to.run.stop_at_target && !(to.run.target_val > 0) && !o.json && !o.print_config)
        notice("--stop-at-target has no effect without --target-val");

    tt_status st;
    tt_status_clear(&st);
    tt_train_state s;
    memset(&s, 0, sizeof s);
    tt_model_config cfg;
    tt_train_config tc;
    const char *preset_name = NULL;
    int resuming = o.resume != NULL;
    int created_dir = 0; /* the output folder did not exist: removed again if the run writes nothing */
    tt_dir_lock_t lock = {-1};
    int64_t old_steps = 0; /* resume with another --steps: the schedule the checkpoint was trained with */
    tt_hf_weights init;    /* --init-from: the weights the run starts from */
    memset(&init, 0, sizeof init);
    float init_val = NAN;
    if (o.init_from && resuming)
        return error_line(EXIT_USAGE, "--init-from starts a new run from other weights, --resume continues a run with its "
                                      "own: give one of them");
    if (o.init_from && tt_hf_load(o.init_from, &init, &st)) return error_line(EXIT_FAIL, "init-from: %s", st.msg);

    if (resuming) {
        if ((rc = load_ckpt(o.resume, &s))) return rc;
        /* the model and the hyper-parameters are the checkpoint's: a different explicit value is a mismatch;
         * the length, the warmup and the eval cadence may change */
        tt_model_config want;
        if (tt_options_check_resume(&to, &s.tc, &st) || tt_options_resolve(&to, &s.cfg, &s.tc, &want, &tc, &st)) {
            rc = error_line(EXIT_FAIL, "%s", st.msg);
            goto done;
        }
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
        if (want.lora_rank != h->lora_rank || (h->lora_rank > 0 && (want.lora_targets != h->lora_targets ||
                                                                     want.lora_alpha != h->lora_alpha))) {
            rc = error_line(EXIT_FAIL,
                            "config mismatch on resume: checkpoint has lora-rank %d, lora-alpha %g; requested lora-rank %d, "
                            "lora-alpha %g (a LoRA run on a trained model starts with --init-from)",
                            h->lora_rank, (double)h->lora_alpha, want.lora_rank, (double)want.lora_alpha);
            goto done;
        }
        cfg = s.cfg;
        preset_name = preset_of(&cfg);
        if (tc.steps != s.tc.steps) old_steps = s.tc.steps;
        if (tc.warmup != s.tc.warmup && !o.json) {
            if (tt_options_given(&to, "warmup"))
                notice("warmup changes from %lld to %lld steps from here on", (long long)s.tc.warmup, (long long)tc.warmup);
            else
                notice("the run is now shorter than its warmup: warmup %lld -> %lld steps", (long long)s.tc.warmup,
                       (long long)tc.warmup);
        }
    } else {
        if (o.init_from) { /* the shape asked for (a preset, shape options) must be the source's */
            tt_model_config want = to.preset[0] ? tt_preset_find(to.preset)->cfg : init.cfg;
            if (tt_options_given(&to, "layers")) want.n_layer = to.model.n_layer;
            if (tt_options_given(&to, "d-model")) want.d_model = to.model.d_model;
            if (tt_options_given(&to, "heads")) want.n_head = to.model.n_head;
            if (tt_options_given(&to, "ctx")) want.ctx = to.model.ctx;
            if ((rc = init_shape(o.init_from, &init.cfg, &want))) goto done;
        }
        if (tt_options_resolve(&to, o.init_from ? &init.cfg : NULL, NULL, &cfg, &tc, &st)) {
            rc = error_line(EXIT_USAGE, "%s", st.msg);
            goto done;
        }
        preset_name = to.preset[0] ? to.preset : preset_of(&cfg);
        if (tt_options_given(&to, "layers") || tt_options_given(&to, "d-model") || tt_options_given(&to, "heads") ||
            tt_options_given(&to, "ctx") || tt_options_given(&to, "batch"))
            preset_name = preset_of(&cfg);
        if (!preset_name) preset_name = "custom";
    }

    if (o.print_config) { /* the resolved options as a run file; nothing runs */
        rc = print_run_file(&cfg, &tc, &to.run, o.data);
        goto done;
    }

    /* output folder: checked before anything slow */
    char out_dir[4096], ckpt_path[4200], csv_path[4200], svg_path[4200];
    out_dir[0] = ckpt_path[0] = 0;
    if (o.out) snprintf(out_dir, sizeof out_dir, "%s", o.out);
    else if (resuming) {
        snprintf(out_dir, sizeof out_dir, "%s", o.resume);
        char *sl = strrchr(out_dir, '/');
        if (sl == out_dir) out_dir[1] = 0; /* "/ckpt" -> "/" */
        else if (sl) *sl = 0;
        else snprintf(out_dir, sizeof out_dir, ".");
    } else snprintf(out_dir, sizeof out_dir, "runs/%s", preset_name ? preset_name : "custom");
    if ((rc = check_out_dir(out_dir, &created_dir))) goto done;
    /* the folder is this run's until it ends: a second run into it is refused */
    if (tt_dir_lock(out_dir, &lock, &st)) {
        rc = error_line(EXIT_FAIL, "%s", st.msg);
        goto done;
    }
    snprintf(ckpt_path, sizeof ckpt_path, "%s/%s", out_dir, CKPT_NAME);
    snprintf(csv_path, sizeof csv_path, "%s/loss.csv", out_dir);
    snprintf(svg_path, sizeof svg_path, "%s/loss.svg", out_dir);
    {
        /* temporary files of a run killed during a save */
        static const char *const ours[] = {CKPT_NAME, "loss.csv", "loss.svg", ".tinytrain-write-test"};
        int n = tt_remove_stale_tmp(out_dir, ours, 4);
        if (n > 0 && !o.json) notice("removed %d temporary file%s left by an interrupted run in '%s'", n, n == 1 ? "" : "s",
                                     out_dir);
    }
    if (!resuming && tt_checkpoint_probe(ckpt_path) == TT_FILE_OTHER &&
        !(o.resume && tt_same_file(o.resume, ckpt_path))) {
        rc = error_line(EXIT_FAIL, "'%s' exists and is not a tinytrain training checkpoint (an export?); it will not be "
                                   "overwritten: choose another --out", ckpt_path);
        goto done;
    }

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
        if (o.init_from) {
            /* the base tensors lead the layout; LoRA adapters (when asked for) keep the fresh init
             * tt_state_init gave them (lora_a drawn, lora_b zero: the model starts as the source).
             * HOOK(h-lora-cpu): tt_lora_attach, if it lands, replaces nothing here but goes after this copy. */
            memcpy(s.params, init.params, s.layout.base_total * sizeof(float));
            char full[PATH_MAX];
            snprintf(s.init_from, sizeof s.init_from, "%s", realpath(o.init_from, full) ? full : o.init_from);
            s.init_hash = init.hash;
            tt_hf_weights_free(&init);
        }
    }

    tt_backend *be = NULL;
    if ((rc = make_backend(tt_run_backend(&to.run), &cfg, &(tt_backend_opts){.threads = to.run.threads, .dropout = s.tc.dropout > 0.0f}, o.json, &be)))
        goto done_corpus;

    if (o.init_from && (rc = init_eval(be, &s, &corpus, &init_val))) {
        tt_backend_destroy(be);
        goto done_corpus;
    }

    progress_ctx pc = {.json = o.json, .tty = !o.json && isatty(STDOUT_FILENO), .log_every = 1, .s = &s};
    if (to.run.stop_after > 0) pc.stop_at = s.step + to.run.stop_after;
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
            if (s.init_from[0]) {
                fputs(",\"init_from\":", stdout);
                json_str(stdout, s.init_from, strlen(s.init_from));
                printf(",\"init_hash\":\"%016llx\",\"init_val_loss\":", (unsigned long long)s.init_hash);
                json_num(stdout, init_val);
            }
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
            if (s.init_from[0]) {
                printf("  init    %s (weights %016llx)", s.init_from, (unsigned long long)s.init_hash);
                if (isfinite(init_val)) printf(": val loss %.4f on this corpus at step 0", init_val);
                printf("\n");
            }
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
    tr.save_every = to.run.save_every;
    tr.save_seconds = to.run.save_seconds;
    tr.no_pipeline = !to.run.pipeline;
    tr.target_val = to.run.target_val;
    tr.stop_at_target = to.run.stop_at_target;
    tr.progress = on_progress;
    tr.user = &pc;
    tr.stop_flag = &g_stop;
    tr.stop_at = to.run.stop_after > 0 ? s.step + to.run.stop_after : 0; /* exact even when GPU steps overlap */
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
        jnum("bpb", s.step > 0 ? bpb(s.loss_hist[s.step - 1]) : NAN);
        jnum("best_val_bpb", bpb(s.best_val));
        if (s.target_step > 0) {
            printf(",\"target_step\":%lld", (long long)s.target_step);
            jnum("target_s", s.target_s);
        }
        fputs("}\n", stdout);
    } else {
        char dur[32];
        fmt_duration(dur, sizeof dur, wall);
        float last_loss = s.step > 0 ? s.loss_hist[s.step - 1] : NAN;
        int at_target = to.run.stop_at_target && s.target_step > 0 && s.target_step == s.step;
        if (stopped)
            printf("%s at step %lld of %lld; saved %s\ncontinue with: tinytrain train --resume %s\n",
                   g_stop ? "interrupted" : at_target ? "stopped at the target (--stop-at-target)" : "stopped (--stop-after)",
                   (long long)s.step, (long long)tc.steps, ckpt_path, ckpt_path);
        else
            printf("done: %lld steps in %s, final train loss %.4f (%.3f bpb), best val loss %.4f (%.3f bpb, step %lld)\n"
                   "saved %s, %s, %s\n",
                   (long long)s.step, dur, last_loss, bpb(last_loss), s.best_val, bpb(s.best_val),
                   (long long)s.best_val_step, ckpt_path, csv_path, svg_path);
        if (to.run.target_val > 0 && s.target_step == 0)
            printf("target val loss %g not reached\n", to.run.target_val);
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
    tt_hf_weights_free(&init);
    tt_state_free(&s);
    if (rc && rc != EXIT_INTERRUPTED && created_dir && ckpt_path[0] &&
        tt_checkpoint_probe(ckpt_path) == TT_FILE_ABSENT) {
        /* a run that failed before saving anything leaves no empty folder behind */
        char lockf[4200];
        snprintf(lockf, sizeof lockf, "%s/.tinytrain.lock", out_dir);
        unlink(lockf);
        rmdir(out_dir); /* only if empty */
    }
    tt_dir_unlock(&lock);
    return rc;
}

