/* cmd_bench.c — `tinytrain bench`: steady-state time of one training step (the unit of the speed curve), its statistics and its JSON record. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>

#include "train/hf.h"
#include "train/options.h"
#include "train/runtok.h"
#include "webgpu/webgpu_profile.h"

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
    {"init-from", O_INIT_FROM, 1, "the model of a Hugging Face folder or checkpoint (its shape, weights and tokenizer; --batch/--ctx apply)"},
    {"seed", O_SEED, 1, "seed for weights and batches (default 1337)"},
    {"label", O_LABEL, 1, "name of this cell in the JSON output (e.g. cpu-16t)"},
    {"pipeline", O_PIPELINE, 1, "1: overlap step k+1 with step k where the backend can, as training does (default); 0: synchronous steps"},
    {"phases", O_PHASES, 0, "also split each step into forward / backward / optimizer (WebGPU: GPU timestamps, which add pass boundaries)"},
    {"dropout", O_TABLE, 1, "dropout probability in the step, as in training (default 0)"},
    {"lora-rank", O_TABLE, 1, "LoRA adapters of this rank on a frozen base, as in a fine-tune (default 0: off)"},
    {"lora-alpha", O_TABLE, 1, "LoRA scale numerator (default 8)"},
    {"lora-targets", O_TABLE, 1, "projections with adapters (default all; see tinytrain train --help)"},
    {"precision", O_TABLE, 1, "f32 (default) or f16 mixed precision (WebGPU with shader-f16), as in training"},
    {"json", O_JSON, 0, "print one JSON object"},
    {"help", O_HELP, 0, "this help"},
    {NULL, 0, 0, NULL}};


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
 * (short steps get more samples). The steps are those of the training loop
 * itself (train/loop.c, as `tinytrain train` and the web app run it), with
 * no validation and no save point: a timed step = the loop's batch sampling
 * on the host + backend step + its loss read back and recorded.
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

/* The loss of step j (0-based) is on the host now. */
static void bench_record(bench_rec *r, int64_t j, float loss) {
    double now = tt_now(), dt = (now - r->t_last) * 1e3;
    r->t_last = now;
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
}

int cmd_bench(int argc, char **argv) {
    opts o;
    int rc = command_args("bench", "Steady-state time of one training step on real text batches (default: the fortunes\n"
                     "collection): forward, loss, backward, grad-norm clip, AdamW, batch sampling and the loss\n"
                     "read back. Same weights and batches on every backend; losses after steps 1, 10, 50;\n"
                     "median and spread of the measured steps after warm-up; start-up reported separately.", bench_opts, argc, argv, &o);
    if (rc) return rc < 0 ? 0 : rc;
    tt_model_config cfg;
    const char *preset_name = NULL;
    if ((rc = model_config(&o, NULL, DEFAULT_PRESET, &cfg, &preset_name))) return rc;
    tt_status st;
    tt_status_clear(&st);
    /* --init-from: the source's shape and weights (tt_hf_load_ctx), its
     * tokenizer for the batches (runtok.h), the run's batch and ctx */
    tt_hf_weights init;
    tt_runtok rt;
    memset(&init, 0, sizeof init);
    memset(&rt, 0, sizeof rt);
    if (o.init_from) {
        if (tt_hf_load_ctx(o.init_from, o.set[O_CTX] ? o.ctx : 0, &init, &st)) return error_line(EXIT_FAIL, "%s", st.msg);
        int found = 0;
        char dir[4200];
        snprintf(dir, sizeof dir, "%s", o.init_from);
        struct stat sb;
        if (stat(dir, &sb) == 0 && !S_ISDIR(sb.st_mode)) { /* a checkpoint file: its folder */
            char *slash = strrchr(dir, '/');
            if (slash) *slash = 0;
            else snprintf(dir, sizeof dir, ".");
        }
        if (tt_runtok_load_dir(dir, &found, &rt, &st)) {
            tt_hf_weights_free(&init);
            return error_line(EXIT_FAIL, "%s", st.msg);
        }
        int b = o.set[O_BATCH] ? o.batch : cfg.batch;
        cfg = init.cfg;
        cfg.batch = b;
        preset_name = NULL;
    }
    int64_t steps = o.set[O_STEPS] ? o.steps : BENCH_DEFAULT_STEPS;
    int64_t warm = o.set[O_WARMUP_STEPS] ? o.bench_warmup : BENCH_DEFAULT_WARMUP;
    int64_t max_steps = o.set[O_MAX_STEPS] ? o.max_steps : BENCH_DEFAULT_MAX_STEPS;
    double min_time = o.set[O_MIN_TIME] ? o.min_time : 0.0;
    int accum = o.set[O_ACCUM] ? o.accum : 1;
    if (steps < 10 || steps > 1000000)
        return error_line(EXIT_USAGE, "bench needs --steps in 10..1000000 measured steps (got %lld)", (long long)steps);
    if (warm > 1000000) return error_line(EXIT_USAGE, "--warmup must be at most 1000000 (got %lld)", (long long)warm);
    if (max_steps < steps) max_steps = steps;
    tt_train_config tc;
    /* two steps more than are ever run: the loop's last step would add a validation */
    tt_train_config_default(&tc, warm + max_steps + 2);
    tc.eval_every = 0;
    tc.sched = TT_SCHED_CONSTANT;
    tc.warmup = BENCH_LR_WARMUP;
    tc.lr = tt_default_lr(&cfg);
    tc.min_lr = tc.lr;
    tc.accum = accum;
    if (o.set[O_SEED]) tc.seed = o.seed;
    if (tt_train_config_validate(&tc, &st)) return error_line(EXIT_USAGE, "%s", st.msg);
    if ((rc = table_options(&o, &cfg, &tc))) return rc; /* dropout, LoRA, precision */

    tt_corpus corpus;
    memset(&corpus, 0, sizeof corpus);
    double tc0 = tt_now();
    char cache[] = "/tmp/tinytrain-bench-XXXXXX";
    int tokenized = rt.tok && tt_tokenizer_kind(rt.tok) == TT_TOK_BPE;
    if (tokenized && !mkdtemp(cache)) return error_line(EXIT_FAIL, "cannot create a folder for the token cache in /tmp");
    rc = tokenized ? tt_corpus_open(o.data, rt.tok, cache, cfg.ctx, NULL, NULL, &corpus, &st)
                   : tt_corpus_load(o.data, cfg.ctx, &corpus, &st);
    if (tokenized) { /* the cache is mapped: its file can go now */
        char f[4300];
        DIR *d = opendir(cache);
        for (struct dirent *e; d && (e = readdir(d));)
            if (e->d_name[0] != '.') snprintf(f, sizeof f, "%s/%s", cache, e->d_name), unlink(f);
        if (d) closedir(d);
        rmdir(cache);
    }
    if (rc) {
        tt_hf_weights_free(&init);
        tt_runtok_free(&rt);
        return error_line(EXIT_FAIL, "%s", st.msg);
    }
    double corpus_ms = (tt_now() - tc0) * 1e3;
    tt_train_state s;
    memset(&s, 0, sizeof s);
    if (tt_state_init(&s, &cfg, &tc, &st)) {
        tt_corpus_free(&corpus);
        tt_hf_weights_free(&init);
        tt_runtok_free(&rt);
        return error_line(EXIT_FAIL, "%s", st.msg);
    }
    if (init.params) { /* the base weights; adapters keep their init */
        memcpy(s.params, init.params, (size_t)tt_config_param_count(&init.cfg) * sizeof(float));
        tt_hf_weights_free(&init);
    }

    double *ms = malloc((size_t)(max_steps + 2) * sizeof *ms);
    double *ph = malloc((size_t)(max_steps + 2) * 3 * sizeof *ph);
    tt_backend *be = NULL;
    tt_loop *L = NULL;
    float loss_at[3] = {NAN, NAN, NAN}, loss = NAN;
    if (!ms || !ph) {
        rc = error_line(EXIT_FAIL, "out of memory");
        goto out;
    }
    int threads = o.set[O_THREADS] ? o.threads : tt_default_threads();
    double t0 = tt_now();
    if ((rc = make_backend(o.backend ? o.backend : "cpu", &cfg, &(tt_backend_opts){.threads = threads, .timestamps = o.set[O_PHASES], .dropout = tc.dropout > 0.0f, .precision = tc.precision}, o.json, &be))) goto out;
    /* the training loop (train/loop.c) with nothing but steps: no validation, no save point */
    tt_trainer tr;
    memset(&tr, 0, sizeof tr);
    tr.s = &s;
    tr.corpus = &corpus;
    tr.be = be;
    tr.no_pipeline = o.set[O_PIPELINE] && o.pipeline == 0;
    tt_progress p;
    if (tt_loop_create(&tr, &L, &st)) {
        rc = error_line(EXIT_FAIL, "%s", st.msg);
        goto out;
    }
    double t1 = tt_now();
    if (tt_loop_advance(L, &p, &st)) { /* START: the state goes to the backend */
        rc = error_line(EXIT_FAIL, "%s", st.msg);
        goto out;
    }
    double t2 = tt_now();
    int pipe = be->vt->step_result_prev != NULL && !tr.no_pipeline;
    /* A step's time = the interval between its loss reaching the host and the
     * previous step's loss reaching it (step 1: from the start of the loop's
     * first step). Synchronous loop: this is the step's own wall time.
     * Pipelined loop (a backend with step_result_prev): step k+1 is submitted
     * before the loss of step k is read; the interval is then the
     * steady-state time per step of a loop that never lets the device idle. */
    bench_rec rec = {0};
    rec.warm = warm;
    rec.ms = ms;
    rec.cap = max_steps + 2;
    rec.loss_at = loss_at;
    rec.be = be;
    rec.ph = ph;
    if (!be->vt->phase_times) snprintf(rec.ph_why, sizeof rec.ph_why, "the %s backend does not measure phases", be->desc.name);
    rec.t_last = tt_now();
    int stopping = 0;
    for (;;) {
        if (tt_loop_advance(L, &p, &st)) {
            rc = error_line(EXIT_FAIL, "bench: %s", st.msg);
            goto out;
        }
        if (p.event == TT_EV_STEP) {
            bench_record(&rec, p.step - 1, p.loss);
            loss = p.loss;
            if (!stopping && rec.n >= warm && (rec.measured >= max_steps || (rec.measured >= steps && rec.measured_s >= min_time))) {
                tt_loop_stop(L); /* the step in flight, if any, is still read and recorded */
                stopping = 1;
            }
        }
        if ((stopping && tt_loop_in_flight(L) == 0) || p.event == TT_EV_END) break;
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
    tt_cpu_model_name(cpu_model, sizeof cpu_model);
    snprintf(commit, sizeof commit, "%s", tt_build_commit);
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
        pipe ? "one optimizer step of the training loop (train/loop.c) on batch x ctx tokens (x accum micro-batches): "
               "host batch sampling from the corpus + forward + fused softmax/cross-entropy + backward + global "
               "grad-norm + clip + AdamW + the loss read back to the host and recorded; pipelined as in training (step "
               "k+1 is submitted before the loss of step k is read): the time of a step is the interval between "
               "successive losses arriving on the host"
             : "one optimizer step of the training loop (train/loop.c) on batch x ctx tokens (x accum micro-batches): "
               "host batch sampling from the corpus + forward + fused softmax/cross-entropy + backward + global "
               "grad-norm + clip + AdamW + the loss read back to the host and recorded (the step is complete when its "
               "loss is on the host; steps run back to back)";
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
        printf(",\"dropout\":%.6g,\"lora_rank\":%d,\"precision\":\"%s\"", (double)tc.dropout, cfg.lora_rank,
               tc.precision == TT_PRECISION_F16 ? "f16" : "f32");
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
    tt_loop_destroy(L);
    tt_backend_destroy(be);
    free(ms);
    free(ph);
    tt_state_free(&s);
    tt_corpus_free(&corpus);
    tt_runtok_free(&rt);
    return rc;
}

