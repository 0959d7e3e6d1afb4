/* fuzz_checkpoint.c — libFuzzer target over the checkpoint reader
 * (tt_checkpoint_load_mem: safetensors framing, JSON header, metadata,
 * tensor validation) and, on the same bytes, the bare JSON parser.
 * Built and run by scripts/fuzz.sh (clang -fsanitize=fuzzer,address,undefined);
 * not part of the CMake test glob.
 *
 * Besides "no crash, no out-of-bounds access, no leak", it traps on broken
 * contracts: a failed load must return a non-zero status equal to st.code,
 * a non-empty one-line message and an empty state; a successful load must
 * give a self-consistent state.
 *
 * With TT_FUZZ_MAKE_SEEDS=<dir> in the environment the binary writes a small
 * seed corpus (real checkpoints of a tiny model, an export, a few edge cases)
 * into <dir> and exits. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/checkpoint.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "train/train.h"

static void check(int ok) {
    if (!ok) __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tt_train_state s;
    tt_status st = {0};
    int rc = tt_checkpoint_load_mem(data, size, &s, &st);
    if (rc) {
        check(rc == st.code && st.msg[0] != 0);
        for (const char *p = st.msg; *p; p++) check((unsigned char)*p >= 0x20);
        check(!s.params && !s.m && !s.v && !s.loss_hist && !s.val_step && !s.layout.t);
    } else {
        check(s.params && s.m && s.v && s.layout.total == (size_t)tt_config_param_count(&s.cfg));
        check(s.step >= 0 && s.loss_cap >= s.step && (s.step == 0 || s.loss_hist));
        check(s.n_val >= 0 && s.n_val <= s.val_cap && s.best_val_step >= -1 && s.best_val_step <= s.step);
        /* touch everything that was loaded (ASan checks the bounds) */
        volatile float acc = 0;
        for (size_t i = 0; i < s.layout.total; i += 61) acc += s.params[i];
        for (size_t i = 0; i < tt_layout_train_count(&s.layout); i += 61) acc += s.m[i] + s.v[i]; /* the trainable range */
        for (int64_t i = 0; i < s.step; i++) acc += s.loss_hist[i];
        for (int64_t i = 0; i < s.n_val; i++) acc += s.val_loss[i] + (float)s.val_step[i];
        (void)acc;
        tt_state_free(&s);
    }
    tt_json_doc d;
    tt_status js = {0};
    if (tt_json_parse((const char *)data, size, 1 << 16, &d, &js) == 0) {
        check(d.n > 0);
        tt_json_free(&d);
    } else {
        check(js.msg[0] != 0);
    }
    return 0;
}

/* ---------------- seed corpus ---------------- */

static void put(const char *dir, const char *name, const void *b, size_t n) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    if (!f || fwrite(b, 1, n, f) != n) {
        fprintf(stderr, "cannot write %s\n", p);
        exit(1);
    }
    fclose(f);
}

static void *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *b = malloc((size_t)len + 1);
    if (fread(b, 1, (size_t)len, f) != (size_t)len) len = 0;
    fclose(f);
    *n = (size_t)len;
    return b;
}

static void make_seeds(const char *dir) {
    tt_model_config cfg = {1, 4, 1, 4, 1, TT_VOCAB, 0, 0, 0.0f, 0, 0.0f};
    tt_train_config tc;
    tt_train_config_default(&tc, 50);
    tt_train_state s;
    tt_status st = {0};
    if (tt_state_init(&s, &cfg, &tc, &st)) {
        fprintf(stderr, "seed state: %s\n", st.msg);
        exit(1);
    }
    for (size_t i = 0; i < tt_layout_train_count(&s.layout); i++) {
        s.m[i] = 0.001f * (float)(i % 17);
        s.v[i] = 1e-6f * (float)(i % 5);
    }
    char tmp[4096];
    const char *names[] = {"ckpt_step0.safetensors", "ckpt_step6.safetensors", "export.safetensors"};
    for (int k = 0; k < 3; k++) {
        if (k == 1) {
            for (int i = 0; i < 6; i++) {
                s.step = i + 1;
                tt_state_push_loss(&s, i == 3 ? NAN : 5.5f - 0.25f * (float)i, &st);
            }
            tt_state_push_val(&s, 0, 5.6f, &st);
            tt_state_push_val(&s, 5, 4.25f, &st);
            s.corpus_hash = 0x0123456789abcdefull;
            s.corpus_bytes = 4096;
        }
        snprintf(tmp, sizeof tmp, "%s/%s", dir, names[k]);
        int rc = k == 2 ? tt_export_hf(tmp, &s, &st) : tt_checkpoint_save(tmp, &s, &st);
        if (rc) {
            fprintf(stderr, "seed %s: %s\n", names[k], st.msg);
            exit(1);
        }
    }
    /* a truncated checkpoint and a few tiny hand-made files */
    size_t n = 0;
    snprintf(tmp, sizeof tmp, "%s/%s", dir, names[1]);
    uint8_t *b = slurp(tmp, &n);
    if (b && n > 64) put(dir, "truncated.safetensors", b, n - 37);
    free(b);
    static const char hdr1[] = "{\"__metadata__\":{\"format\":\"pt\"},\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    uint8_t small[256];
    size_t hn = sizeof hdr1 - 1;
    for (int i = 0; i < 8; i++) small[i] = (uint8_t)((uint64_t)hn >> (8 * i));
    memcpy(small + 8, hdr1, hn);
    memset(small + 8 + hn, 0x3f, 8);
    put(dir, "generic.safetensors", small, 8 + hn + 8);
    static const char js[] = "{\"a\":[1,-2.5e-3,\"\\u00e9\\ud83d\\ude00\",true,false,null,{}]}";
    put(dir, "json.txt", js, sizeof js - 1);
    tt_state_free(&s);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    const char *dir = getenv("TT_FUZZ_MAKE_SEEDS");
    if (dir && *dir) {
        make_seeds(dir);
        exit(0);
    }
    return 0;
}
