/* cmd_train.c — `tinytrain train`: options, progress output (terminal line, plain lines, JSON lines), Ctrl-C, resume checks, the closing sample. */
#include "cli.h"

#include "fileio.h"

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

int cmd_train(int argc, char **argv) {
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
    int created_dir = 0; /* the output folder did not exist: removed again if the run writes nothing */
    tt_dir_lock_t lock = {-1};
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
        MISMATCH(O_SCHED, o.sched != (int)tc.sched, "%s", o.sched ? "constant" : "cosine", tc.sched ? "constant" : "cosine")
        MISMATCH(O_WD, o.wd != tc.weight_decay, "%g", o.wd, tc.weight_decay)
        MISMATCH(O_CLIP, o.clip != tc.clip, "%g", o.clip, tc.clip)
        MISMATCH(O_ACCUM, o.accum != tc.accum, "%d", o.accum, tc.accum)
        MISMATCH(O_SEED, o.seed != tc.seed, "%llu", (unsigned long long)o.seed, (unsigned long long)tc.seed)
#undef MISMATCH
        if (o.set[O_STEPS] && o.steps != tc.steps) old_steps = tc.steps;
        if (o.set[O_STEPS]) tc.steps = o.steps;
        /* the schedule from here on may change: a new length or warmup */
        if (o.set[O_WARMUP] && o.warmup != tc.warmup) {
            if (!o.json) notice("warmup changes from %lld to %lld steps from here on", (long long)tc.warmup, (long long)o.warmup);
            tc.warmup = o.warmup;
        } else if (tc.warmup > tc.steps && tc.steps >= 1) {
            if (!o.json) notice("the run is now shorter than its warmup: warmup %lld -> %lld steps", (long long)tc.warmup,
                                (long long)tc.steps);
            tc.warmup = tc.steps;
        }
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
    out_dir[0] = ckpt_path[0] = 0;
    if (o.out) snprintf(out_dir, sizeof out_dir, "%s", o.out);
    else if (resuming) {
        snprintf(out_dir, sizeof out_dir, "%s", o.resume);
        char *sl = strrchr(out_dir, '/');
        if (sl == out_dir) out_dir[1] = 0; /* "/ckpt" -> "/" */
        else if (sl) *sl = 0;
        else snprintf(out_dir, sizeof out_dir, ".");
    } else snprintf(out_dir, sizeof out_dir, "runs/%s", preset_name ? preset_name : DEFAULT_PRESET);
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
    }

    tt_backend *be = NULL;
    const char *bk = o.backend ? o.backend : "auto";
    if ((rc = make_backend(bk, &cfg, &(tt_backend_opts){.threads = o.set[O_THREADS] ? o.threads : 0}, o.json, &be))) goto done_corpus;

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

