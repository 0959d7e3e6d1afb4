/* cmd_info.c — `tinytrain info`: presets with the backends' memory plans, the CPU ISA, the WebGPU adapter and which presets fit it;
 * `tinytrain info FOLDER`: a model (Hugging Face folder, run folder or checkpoint) and what a full and a LoRA fine-tune of it
 * need in memory on the CPU and on WebGPU at the run's batch and ctx. */
#include "cli.h"

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

#include "train/hf.h"
#include "train/options.h"

static const opt_def info_opts[] = {
    {"threads", O_THREADS, 1, "CPU threads to report"},
    {"batch", O_BATCH, 1, "with FOLDER: sequences per micro-batch of the fine-tune (default: the model's)"},
    {"ctx", O_CTX, 1, "with FOLDER: context of the fine-tune (default: min(n_positions, 1024))"},
    {"lora-rank", O_TABLE, 1, "with FOLDER: the LoRA fine-tune's rank (default 8)"},
    {"lora-targets", O_TABLE, 1, "with FOLDER: the LoRA fine-tune's projections (default all)"},
    {"json", O_JSON, 0, "print one JSON object"},
    {"help", O_HELP, 0, "this help"},
    {NULL, 0, 0, NULL}};


/* ------------------------------------------------------------------ */
/* info                                                                */
/* ------------------------------------------------------------------ */

/* Host memory of a CPU training run: the CPU backend's exact plan (params,
 * grads, moments, activations, scratch) plus the trainer's own copy of
 * params and both moments of the trainable elements (the checkpointable
 * state, train.h). */
static double cpu_train_bytes(tt_backend *cpu, const tt_model_config *c) {
    uint64_t b = 0;
    tt_status st;
    tt_status_clear(&st);
    if (!cpu || cpu->vt->plan_bytes(cpu, c, &b, &st)) return NAN;
    return (double)b + 4.0 * ((double)tt_config_param_count(c) + 2.0 * (double)tt_config_train_count(c));
}

/* the tokenizer files a folder holds, as "a, b" ("" when none) */
static void tokenizer_files(const char *dir, char *out, size_t cap) {
    static const char *const names[] = {"tokenizer.json", "vocab.json", "merges.txt", "tokenizer_config.json"};
    size_t k = 0;
    out[0] = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char p[4400];
        struct stat sb;
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        if (stat(p, &sb) == 0 && k < cap) k += (size_t)snprintf(out + k, cap - k, "%s%s", k ? ", " : "", names[i]);
    }
}

static void fmt_bytes(char *out, size_t cap, double b) {
    if (!isfinite(b)) snprintf(out, cap, "-");
    else if (b >= 1e9) snprintf(out, cap, "%.2f GB", b / 1e9);
    else snprintf(out, cap, "%.0f MB", b / 1e6);
}

/* `info FOLDER`: the model and the memory of a full and a LoRA fine-tune */
static int info_model(const char *path, const opts *o) {
    tt_status st;
    tt_status_clear(&st);
    tt_hf_weights w;
    if (tt_hf_load_ctx(path, o->set[O_CTX] ? o->ctx : 0, &w, &st)) return error_line(EXIT_FAIL, "cannot load '%s': %s", path, st.msg);
    tt_model_config full = w.cfg;
    if (o->set[O_BATCH]) full.batch = o->batch;
    tt_model_config lora = full;
    lora.lora_rank = 8, lora.lora_targets = TT_LORA_ALL, lora.lora_alpha = 8.0f;
    tt_train_config tc;
    tt_train_config_default(&tc, 1);
    int trc = table_options(o, &lora, &tc); /* the LoRA options */
    if (trc) {
        tt_hf_weights_free(&w);
        return trc;
    }
    int rc = tt_config_validate(&full, &st) ? error_line(EXIT_USAGE, "invalid model: %s", st.msg) : 0;
    if (!rc && lora.lora_rank > 0 && tt_config_validate(&lora, &st)) rc = error_line(EXIT_USAGE, "invalid LoRA: %s", st.msg);
    if (rc) {
        tt_hf_weights_free(&w);
        return rc;
    }
    int threads = o->set[O_THREADS] ? o->threads : tt_default_threads();
    tt_backend *cpu = NULL, *gpu = NULL;
    tt_backend_create("cpu", &tt_probe_config, &(tt_backend_opts){.threads = threads}, &cpu, NULL, 0, &st);
    tt_status gs;
    tt_status_clear(&gs);
    int gpu_rc = tt_backend_create("webgpu", &tt_probe_config, NULL, &gpu, NULL, 0, &gs);
    const tt_model_config *run[2] = {&full, &lora};
    double cpu_b[2], gpu_b[2];
    char gpu_why[2][600];
    for (int i = 0; i < 2; i++) {
        /* CPU: the backend's plan (a frozen base without grads or moments) + the trainer's params, m and v */
        cpu_b[i] = cpu_train_bytes(cpu, run[i]);
        gpu_b[i] = NAN;
        gpu_why[i][0] = 0;
        uint64_t b = 0;
        tt_status fs;
        tt_status_clear(&fs);
        if (gpu_rc) snprintf(gpu_why[i], sizeof gpu_why[i], "%s", gs.msg);
        else if (gpu->vt->plan_bytes(gpu, run[i], &b, &fs)) snprintf(gpu_why[i], sizeof gpu_why[i], "%s", fs.msg);
        else gpu_b[i] = (double)b;
    }
    tt_backend_destroy(cpu);
    tt_backend_destroy(gpu);
    char toks[200];
    struct stat sb;
    int is_dir = stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
    if (is_dir) tokenizer_files(path, toks, sizeof toks);
    else toks[0] = 0;
    const int64_t P = tt_config_param_count(&full), PL = tt_config_lora_count(&lora);
    if (o->json) {
        fputs("{\"path\":", stdout);
        json_str(stdout, path, strlen(path));
        fputs(",\"source\":", stdout);
        json_str(stdout, w.from_checkpoint ? "checkpoint" : "huggingface", w.from_checkpoint ? 10 : 11);
        fputs(",\"model\":", stdout);
        json_cfg(stdout, &full);
        printf(",\"activation\":\"%s\",\"layer_norm_epsilon\":%.9g,\"n_positions\":%d,\"dtype\":", tt_act_name(full.act),
               (double)tt_config_ln_eps(&full), w.n_positions ? w.n_positions : full.ctx);
        json_str(stdout, w.dtype ? w.dtype : "F32", strlen(w.dtype ? w.dtype : "F32"));
        fputs(",\"tokenizer_files\":", stdout);
        json_str(stdout, toks, strlen(toks));
        printf(",\"lora_adapters\":{\"rank\":%d,\"targets\":%d,\"params\":%lld}", lora.lora_rank, lora.lora_targets, (long long)PL);
        const char *kind[2] = {"full", "lora"};
        for (int i = 0; i < 2; i++) {
            printf(",\"%s\":{\"cpu_bytes\":", kind[i]);
            json_num(stdout, cpu_b[i]);
            fputs(",\"webgpu_bytes\":", stdout);
            json_num(stdout, gpu_b[i]);
            if (gpu_why[i][0]) {
                fputs(",\"webgpu_why\":", stdout);
                json_str(stdout, gpu_why[i], strlen(gpu_why[i]));
            }
            putchar('}');
        }
        fputs("}\n", stdout);
    } else {
        char pc[32], pl[32];
        fmt_count(pc, sizeof pc, P);
        fmt_count(pl, sizeof pl, PL);
        printf("%s: %s\n", path, w.from_checkpoint ? "a tinytrain checkpoint" : "a Hugging Face GPT-2 folder");
        printf("  shape      %d layers, d_model %d, %d heads, ctx %d", full.n_layer, full.d_model, full.n_head, full.ctx);
        if (w.n_positions) printf(" (n_positions %d)", w.n_positions);
        printf("\n  params     %s (%s)\n  activation %s, layer_norm_epsilon %g\n  vocab      %d%s\n", pc,
               w.dtype ? w.dtype : "F32", tt_act_name(full.act), (double)tt_config_ln_eps(&full), full.vocab,
               full.vocab == TT_VOCAB ? " (bytes)" : "");
        if (is_dir) printf("  tokenizer  %s\n", toks[0] ? toks : "no tokenizer files");
        printf("memory of a fine-tune at batch %d, ctx %d (parameters, gradients, AdamW moments, activations):\n", full.batch,
               full.ctx);
        const char *label[2] = {"full", "LoRA"};
        for (int i = 0; i < 2; i++) {
            char cb[32], gb[32];
            fmt_bytes(cb, sizeof cb, cpu_b[i]);
            fmt_bytes(gb, sizeof gb, gpu_b[i]);
            if (i) printf("  %-5s rank %d (%s trainable): cpu %s, webgpu %s", label[i], lora.lora_rank, pl, cb, gb);
            else printf("  %-5s cpu %s, webgpu %s", label[i], cb, gb);
            if (gpu_why[i][0]) printf(" (%s)", gpu_why[i]);
            putchar('\n');
        }
    }
    tt_hf_weights_free(&w);
    return 0;
}

int cmd_info(int argc, char **argv) {
    opts o;
    memset(&o, 0, sizeof o);
    const char *model = argc > 2 && strncmp(argv[2], "-", 1) != 0 ? argv[2] : NULL;
    int rc = parse_opts("info", info_opts, argc, argv, model ? 3 : 2, &o);
    if (rc == -1) {
        printf("usage: tinytrain info [FOLDER] [options]\nPresets, memory estimates, the CPU's SIMD ISA, threads and WebGPU "
               "availability; with FOLDER (a Hugging Face GPT-2 folder, a run folder or a checkpoint) the model and what a "
               "full and a LoRA fine-tune of it need in memory.\n\noptions:\n");
        usage_opts(stdout, info_opts);
        return 0;
    }
    if (rc) return rc;
    if (model) return info_model(model, &o);
    if (o.set[O_BATCH] || o.set[O_CTX] || o.n_table) return error_line(EXIT_USAGE, "--batch, --ctx and --lora-* go with FOLDER");
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

