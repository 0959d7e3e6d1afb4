/* test_lora_attach.c — a LoRA fine-tune's starting checkpoint from a trained
 * base (tt_lora_attach): the base checkpoint's weights, fresh adapters, fresh
 * AdamW state, step 0, a new schedule and the new corpus's identity, so that
 * `tinytrain train --resume` fine-tunes it on that corpus.
 *
 * Without arguments (ctest): builds such a start from a fresh base, saves
 * it, loads it back and checks the base tensors are the base's bits, the
 * adapters the init's draws, the moments zero. With arguments it is the
 * tool tests/train/test_lora.sh uses where the CLI has no --init-from:
 *   test_lora_attach BASE_CKPT CORPUS OUT_CKPT RANK STEPS LR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/checkpoint.h"
#include "train/data.h"
#include "lora.h"
#include "model.h"
#include "tt_test.h"

static int make_start(const tt_train_state *base, const tt_corpus *corpus, int rank, int64_t steps, float lr,
                      tt_train_state *out, tt_status *st) {
    tt_model_config cfg = tt_lora_base_config(&base->cfg);
    cfg.lora_rank = rank;
    cfg.lora_targets = TT_LORA_ALL;
    cfg.lora_alpha = 8.0f;
    tt_train_config tc;
    tt_train_config_default(&tc, steps);
    tc.lr = lr;
    tc.min_lr = lr / 10.0f;
    tc.seed = base->tc.seed;
    tc.eval_every = TT_MAX((int64_t)1, steps / 4);
    TT_CHECK(tt_state_alloc(out, &cfg, st));
    out->tc = tc;
    int rc = tt_lora_attach(&cfg, base->params, tc.seed, out->params, st);
    out->corpus_hash = corpus ? corpus->hash : 0;
    out->corpus_bytes = corpus ? corpus->n : 0;
    if (rc) tt_state_free(out);
    return rc;
}

TT_TEST(start_checkpoint_round_trips) {
    tt_model_config bc = tt_preset_find("tiny")->cfg;
    tt_train_config tc;
    tt_train_config_default(&tc, 10);
    tt_train_state base, start, back;
    tt_status st;
    CHECK(tt_state_init(&base, &bc, &tc, &st) == TT_OK);
    CHECK_MSG(make_start(&base, NULL, 8, 50, 1e-2f, &start, &st) == TT_OK, "%s", st.msg);
    const char *path = "test_lora_attach.safetensors";
    CHECK_MSG(tt_checkpoint_save(path, &start, &st) == TT_OK, "%s", st.msg);
    CHECK_MSG(tt_checkpoint_load(path, &back, &st) == TT_OK, "%s", st.msg);
    size_t bt = back.layout.base_total, n = back.layout.total;
    CHECK(back.cfg.lora_rank == 8 && back.step == 0 && bt == base.layout.total);
    CHECK(memcmp(back.params, base.params, bt * sizeof(float)) == 0);
    float *init = malloc(n * sizeof *init);
    tt_model_init_params(&back.cfg, &back.layout, back.tc.seed, init, NULL);
    CHECK(memcmp(back.params + bt, init + bt, (n - bt) * sizeof *init) == 0);
    int zero = 1;
    for (size_t i = 0; i < n; i++) zero &= back.m[i] == 0.0f && back.v[i] == 0.0f;
    CHECK(zero);
    free(init);
    remove(path);
    tt_state_free(&base);
    tt_state_free(&start);
    tt_state_free(&back);
}

int main(int argc, char **argv) {
    if (argc == 7) {
        tt_status st;
        tt_train_state base, start;
        tt_corpus corpus;
        tt_status_clear(&st);
        if (tt_checkpoint_load(argv[1], &base, &st) || tt_corpus_load(argv[2], base.cfg.ctx, &corpus, &st) ||
            make_start(&base, &corpus, atoi(argv[4]), atoll(argv[5]), (float)atof(argv[6]), &start, &st) ||
            tt_checkpoint_save(argv[3], &start, &st)) {
            fprintf(stderr, "test_lora_attach: %s\n", st.msg);
            return 1;
        }
        return 0;
    }
    RUN(start_checkpoint_round_trips);
    return tt_test_summary();
}
