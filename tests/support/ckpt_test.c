/* ckpt_test.c — checkpoint files written by hand for the tests (ckpt_test.h). */
#include "ckpt_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/safetensors.h"
#include "train/checkpoint.h"

int tt_test_write_old_lora_checkpoint(const char *from, const char *to, float base_moment) {
    static const char *const group[3] = {"params.", "adam_m.", "adam_v."};
    tt_train_state s;
    tt_st_reader r;
    tt_status st = {0};
    if (tt_checkpoint_load(from, &s, &st)) {
        fprintf(stderr, "old-form checkpoint: %s\n", st.msg);
        return 1;
    }
    if (tt_st_open_file(&r, from, &st)) {
        fprintf(stderr, "old-form checkpoint: %s\n", st.msg);
        tt_state_free(&s);
        return 1;
    }
    const tt_layout *lo = &s.layout;
    const size_t n = lo->total, t0 = tt_layout_train0(lo);
    float *mv[2] = {malloc(n * sizeof(float)), malloc(n * sizeof(float))};
    tt_st_writer w;
    tt_st_writer_init(&w, to);
    char name[80];
    int rc = !mv[0] || !mv[1];
    for (int k = 0; k < 2 && !rc; k++) {
        for (size_t i = 0; i < t0; i++) mv[k][i] = base_moment;
        memcpy(mv[k] + t0, k ? s.v : s.m, (n - t0) * sizeof(float));
    }
    for (int g = 0; g < 3 && !rc; g++)
        for (int i = 0; i < lo->n_tensors && !rc; i++) {
            snprintf(name, sizeof name, "%s%s", group[g], lo->t[i].name);
            rc = tt_st_writer_add(&w, name, TT_ST_F32, lo->t[i].ndim, lo->t[i].shape, &st);
        }
    for (int k = 0; k < r.n_meta && !rc; k++) rc = tt_st_writer_meta(&w, r.meta[k].key, r.meta[k].value, &st);
    FILE *f = rc ? NULL : fopen(to, "wb");
    if (!rc && !f) rc = 1, snprintf(st.msg, sizeof st.msg, "cannot write %s", to);
    if (!rc) rc = tt_st_writer_begin(&w, f, &st);
    if (!rc) rc = tt_st_writer_data(&w, s.params, n * sizeof(float), &st);
    if (!rc) rc = tt_st_writer_data(&w, mv[0], n * sizeof(float), &st);
    if (!rc) rc = tt_st_writer_data(&w, mv[1], n * sizeof(float), &st);
    if (!rc) rc = tt_st_writer_end(&w, &st);
    if (f && fclose(f) && !rc) rc = 1, snprintf(st.msg, sizeof st.msg, "cannot close %s", to);
    if (rc) fprintf(stderr, "old-form checkpoint: %s\n", st.msg[0] ? st.msg : "out of memory");
    tt_st_writer_free(&w);
    free(mv[0]), free(mv[1]);
    tt_st_close(&r);
    tt_state_free(&s);
    return rc;
}

int tt_test_count_tensors(const char *path, const char *prefix, const char *contains) {
    tt_st_reader r;
    tt_status st = {0};
    if (tt_st_open_file(&r, path, &st)) return -1;
    int n = 0;
    for (int k = 0; k < r.n_tensors; k++)
        n += strncmp(r.t[k].name, prefix, strlen(prefix)) == 0 && (!contains || strstr(r.t[k].name, contains));
    tt_st_close(&r);
    return n;
}
