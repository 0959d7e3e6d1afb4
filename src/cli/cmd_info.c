/* cmd_info.c — `tinytrain info`: presets with the backends' memory plans, the CPU ISA, the WebGPU adapter and which presets fit it. */
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

static const opt_def info_opts[] = {
    {"threads", O_THREADS, 1, "CPU threads to report"},
    {"json", O_JSON, 0, "print one JSON object"},
    {"help", O_HELP, 0, "this help"},
    {NULL, 0, 0, NULL}};


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

int cmd_info(int argc, char **argv) {
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

