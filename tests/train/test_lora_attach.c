/* test_lora_attach.c — a LoRA fine-tune's starting state from a trained base
 * (tt_lora_attach): the base's weights, fresh adapters, fresh AdamW state,
 * step 0 and a new schedule. Builds such a start from a fresh base, saves
 * it, loads it back and checks the base tensors are the base's bits, the
 * adapters the init's draws, the moments zero. (The CLI's LoRA start,
 * `train --init-from BASE --lora-rank R`, is tests/train/test_lora.sh.) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/checkpoint.h"
#include "lora.h"
#include "model.h"
#include "tt_test.h"

static int make_start(const tt_train_state *base, int rank, int64_t steps, float lr, tt_train_state *out, tt_status *st) {
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
    CHECK_MSG(make_start(&base, 8, 50, 1e-2f, &start, &st) == TT_OK, "%s", st.msg);
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
    for (size_t i = 0; i < tt_layout_train_count(&back.layout); i++) zero &= back.m[i] == 0.0f && back.v[i] == 0.0f;
    CHECK(zero);
    free(init);
    remove(path);
    tt_state_free(&base);
    tt_state_free(&start);
    tt_state_free(&back);
}

int main(void) {
    RUN(start_checkpoint_round_trips);
    return tt_test_summary();
}
