/* fuzz_peft.c — libFuzzer target over the peft adapter reader
 * (tt_load_peft: adapter_config.json, adapter_model.safetensors, the
 * checks against a base). The input is the two files joined by one NUL
 * byte (config first; no NUL: the config alone, no safetensors file),
 * written into a temporary folder and read onto a fixed tiny base (2
 * layers, d_model 8). Built and run by scripts/fuzz.sh; not part of the
 * CMake test glob.
 *
 * It traps on broken contracts: a failed load returns a non-zero status
 * equal to st.code, a non-empty one-line message and no adapters; a
 * successful one gives tt_config_lora_count floats of a valid LoRA config
 * of the base's shape.
 *
 * With TT_FUZZ_MAKE_SEEDS=<dir> in the environment the binary writes seeds
 * (the folders tt_export_peft writes for the base: every target, and
 * c_attn + mlp.c_proj) into <dir> and exits. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/peft.h"
#include "model.h"

static void check(int ok) {
    if (!ok) __builtin_trap();
}

static const tt_model_config BASE = {.n_layer = 2, .d_model = 8, .n_head = 2, .ctx = 8, .batch = 1, .vocab = 16};
static char dir[64];

static void put(const char *name, const uint8_t *p, size_t n) {
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (!p) {
        unlink(path);
        return;
    }
    FILE *f = fopen(path, "wb");
    check(f && fwrite(p, 1, n, f) == n && fclose(f) == 0);
}

static uint8_t *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    check(f != NULL);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(*n + 1);
    check(b && fread(b, 1, *n, f) == *n);
    fclose(f);
    return b;
}

/* a seed: the folder tt_export_peft writes for the base with rank 2 on targets */
static void make_seed(const char *out, int targets, int k) {
    tt_model_config c = BASE;
    c.lora_rank = 2, c.lora_alpha = 4, c.lora_targets = targets;
    tt_layout lo;
    tt_status st = {0};
    check(!tt_layout_build(&c, &lo, &st));
    float *p = calloc(lo.total, sizeof *p);
    tt_model_init_params(&c, &lo, 7, p, NULL);
    for (size_t i = lo.base_total; i < lo.total; i++) p[i] += 0.01f * (float)(i % 7); /* lora_b nonzero */
    check(!tt_export_peft(dir, &c, p, NULL, &st));
    char path[160];
    size_t na, nb;
    snprintf(path, sizeof path, "%s/adapter_config.json", dir);
    uint8_t *a = slurp(path, &na);
    snprintf(path, sizeof path, "%s/adapter_model.safetensors", dir);
    uint8_t *b = slurp(path, &nb);
    snprintf(path, sizeof path, "%s/seed%d", out, k);
    FILE *f = fopen(path, "wb");
    check(f && fwrite(a, 1, na, f) == na && fputc(0, f) == 0 && fwrite(b, 1, nb, f) == nb && fclose(f) == 0);
    free(a), free(b), free(p);
    tt_layout_free(&lo);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    snprintf(dir, sizeof dir, "/tmp/fuzz_peft.XXXXXX");
    check(mkdtemp(dir) != NULL);
    const char *seeds = getenv("TT_FUZZ_MAKE_SEEDS");
    if (seeds) {
        make_seed(seeds, TT_LORA_ALL, 0);
        make_seed(seeds, 1 << TT_LORA_C_ATTN | 1 << TT_LORA_MLP_C_PROJ, 1);
        exit(0);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *nul = memchr(data, 0, size);
    size_t na = nul ? (size_t)(nul - data) : size;
    put("adapter_config.json", data, na);
    put("adapter_model.safetensors", nul ? nul + 1 : NULL, nul ? size - na - 1 : 0);
    tt_model_config cfg;
    float *ad = (float *)1;
    tt_status st = {0};
    int rc = tt_load_peft(dir, &BASE, &cfg, &ad, &st);
    if (rc) {
        check(rc == st.code && st.msg[0] != 0 && ad == NULL);
        for (const char *p = st.msg; *p; p++) check((unsigned char)*p >= 0x20);
    } else {
        tt_status vs = {0};
        check(ad != NULL && cfg.lora_rank > 0 && !tt_config_validate(&cfg, &vs));
        check(cfg.n_layer == BASE.n_layer && cfg.d_model == BASE.d_model && cfg.vocab == BASE.vocab);
        volatile float acc = 0;
        for (int64_t i = 0; i < tt_config_lora_count(&cfg); i++) acc += ad[i];
        (void)acc;
        tt_free(ad);
    }
    return 0;
}
