/* test_lora.c — LoRA on the CPU backend as a whole model (the loss and
 * gradients against the float64 reference are in test_model.c): the
 * reference's adapter gradients against finite differences, a zero
 * lora_b giving exactly the base model's loss (tt_lora_attach), the merged
 * model (tt_lora_merge) giving the LoRA model's loss, bit-identical LoRA
 * training across thread counts, the rank check, LoRA checkpoints and the
 * lora-targets words. test_model.c also steps a LoRA model (AdamW over the
 * adapters only, the base bit-identical). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cpu/backend_cpu.h"
#include "train/checkpoint.h"
#include "lora.h"
#include "train/options.h"
#include "model.h"
#include "ref64.h"
#include "rng.h"
#include "model_test.h"
#include "ckpt_test.h"
#include "io/safetensors.h"
#include "tt_test.h"

static tt_model_config lora_cfg(tt_model_config c, int rank, int targets) {
    c.lora_rank = rank;
    c.lora_targets = targets;
    c.lora_alpha = 8.0f;
    return c;
}

/* the reference's adapter gradients are the derivative of its loss */
TT_TEST(reference_adapter_grads_match_finite_differences) {
    tt_model_config c = lora_cfg((tt_model_config){1, 8, 2, 5, 2, TT_VOCAB, 0, 0, 0.0f, 0, 0.0f}, 2, TT_LORA_ALL);
    tt_layout lo;
    CHECK(tt_layout_build(&c, &lo, NULL) == TT_OK);
    float *p = tt_test_params(&c, &lo, 3);
    double *dp = ref_from_float(p, lo.total), *rg = ref_alloc(lo.total);
    tt_token *tok = tt_test_tokens(1, c.batch, c.ctx, 5);
    ref_gpt_loss_grad(&c, &lo, dp, tok, c.batch, rg);
    int checked = 0;
    for (int i = lo.n_base; i < lo.n_tensors; i++)
        for (size_t j = 0; j < lo.t[i].numel; j += 5) {
            size_t k = lo.t[i].offset + j;
            double x = dp[k], h = 1e-5;
            dp[k] = x + h;
            double lp = ref_gpt_loss_grad(&c, &lo, dp, tok, c.batch, NULL);
            dp[k] = x - h;
            double lm = ref_gpt_loss_grad(&c, &lo, dp, tok, c.batch, NULL);
            dp[k] = x;
            double fd = (lp - lm) / (2 * h);
            CHECK_MSG(fabs(fd - rg[k]) <= 1e-6 + 1e-4 * fabs(fd), "%s[%zu]: fd %.9g vs grad %.9g", lo.t[i].name, j, fd, rg[k]);
            checked++;
        }
    CHECK(checked > 50);
    free(p), free(dp), free(rg), free(tok);
    tt_layout_free(&lo);
}

/* attach: base weights copied, lora_b zero, so the loss is the base model's bit for bit;
 * merge: the merged base model computes the LoRA model's loss */
TT_TEST(attach_gives_base_loss_and_merge_gives_lora_loss) {
    tt_model_config bc = {2, 24, 3, 16, 2, TT_VOCAB, 0, 0, 0.0f, 0, 0.0f};
    tt_model_config lc = lora_cfg(bc, 4, TT_LORA_ALL);
    tt_backend *bb = tt_test_cpu_backend(&bc, 2), *lb = tt_test_cpu_backend(&lc, 2);
    if (!bb || !lb) return;
    tt_status st;
    float *bp = tt_test_params(&bc, &bb->layout, 11), *lp = malloc(lb->layout.total * sizeof *lp);
    CHECK(tt_lora_attach(&lc, bp, 99, lp, &st) == TT_OK);
    CHECK(memcmp(lp, bp, bb->layout.total * sizeof *bp) == 0);
    CHECK(lb->layout.base_total == bb->layout.total);
    /* the adapters are the init's draws for this seed */
    float *ip = malloc(lb->layout.total * sizeof *ip);
    tt_model_init_params(&lc, &lb->layout, 99, ip, NULL);
    size_t bt = lb->layout.base_total;
    CHECK(memcmp(lp + bt, ip + bt, (lb->layout.total - bt) * sizeof *ip) == 0);
    tt_token *tok = tt_test_tokens(1, lc.batch, lc.ctx, 13);
    float l0, l1, l2;
    CHECK(bb->vt->set_state(bb, bp, NULL, NULL, &st) == TT_OK && bb->vt->eval(bb, tok, bc.batch, &l0, &st) == TT_OK);
    CHECK(lb->vt->set_state(lb, lp, NULL, NULL, &st) == TT_OK && lb->vt->eval(lb, tok, lc.batch, &l1, &st) == TT_OK);
    CHECK_MSG(l0 == l1, "zero lora_b: loss %.9g vs base %.9g", l1, l0);
    /* non-zero adapters: merged vs unmerged */
    for (size_t i = bt; i < lb->layout.total; i++) lp[i] = 0.2f * (2.0f * tt_rand_uniform(17, TT_STREAM_TEST, i) - 1.0f);
    CHECK(lb->vt->set_state(lb, lp, NULL, NULL, &st) == TT_OK && lb->vt->eval(lb, tok, lc.batch, &l1, &st) == TT_OK);
    float *mp = malloc(bt * sizeof *mp);
    CHECK(tt_lora_merge(&lc, lp, mp, &st) == TT_OK);
    CHECK(bb->vt->set_state(bb, mp, NULL, NULL, &st) == TT_OK && bb->vt->eval(bb, tok, bc.batch, &l2, &st) == TT_OK);
    CHECK_MSG(l1 != l0, "adapters changed nothing");
    CHECK_MSG(fabs(l1 - l2) <= 2e-5 * fabs(l1), "merged loss %.9g vs LoRA loss %.9g", l2, l1);
    /* against the reference of the merge: W + s A B in double */
    double *dl = ref_from_float(lp, lb->layout.total), *dm = ref_from_float(mp, bt);
    double rl = ref_gpt_loss_grad(&lc, &lb->layout, dl, tok, lc.batch, NULL);
    double rm = ref_gpt_loss_grad(&bc, &bb->layout, dm, tok, bc.batch, NULL);
    CHECK_MSG(fabs(rl - rm) <= 1e-6 * fabs(rl), "reference: merged %.12g vs LoRA %.12g", rm, rl);
    /* attach refuses a config without LoRA */
    CHECK(tt_lora_attach(&bc, bp, 1, lp, &st) == TT_EINVAL);
    free(bp), free(lp), free(ip), free(tok), free(mp), free(dl), free(dm);
    tt_backend_destroy(bb);
    tt_backend_destroy(lb);
}

/* a few LoRA steps give the same bits on 1 and 3 threads, and lower the loss */
TT_TEST(lora_training_is_bit_identical_across_threads) {
    tt_model_config c = lora_cfg((tt_model_config){2, 32, 2, 24, 3, TT_VOCAB, 0, 0, 0.0f, 0, 0.0f}, 8, TT_LORA_ALL);
    float *out[2] = {NULL, NULL}, first = 0, last = 0;
    for (int k = 0; k < 2; k++) {
        tt_backend *be = tt_test_cpu_backend(&c, k ? 3 : 1);
        if (!be) return;
        tt_status st;
        float *p = malloc(be->layout.total * 4);
        tt_model_init_params(&c, &be->layout, 4, p, NULL);
        tt_token *tok = tt_test_tokens(1, c.batch, c.ctx, 31);
        CHECK(be->vt->set_state(be, p, NULL, NULL, &st) == TT_OK);
        for (int s = 1; s <= 20; s++) {
            tt_optim_args a = tt_test_optim_at(1e-2f, 1.0f, s);
            float loss, norm;
            CHECK(be->vt->step(be, tok, 1, &a, &st) == TT_OK);
            CHECK(be->vt->step_result(be, &loss, &norm, &st) == TT_OK);
            if (s == 1) first = loss;
            last = loss;
        }
        out[k] = malloc(be->layout.total * 4);
        CHECK(be->vt->get_state(be, out[k], NULL, NULL, &st) == TT_OK);
        if (k) CHECK(memcmp(out[0], out[1], be->layout.total * 4) == 0);
        CHECK_MSG(last < first - 0.1f, "LoRA steps: loss %.4f -> %.4f", first, last);
        free(p), free(tok);
        tt_backend_destroy(be);
    }
    free(out[0]), free(out[1]);
}

TT_TEST(rank_larger_than_a_layer_is_refused) {
    tt_model_config c = lora_cfg((tt_model_config){1, 8, 2, 4, 1, TT_VOCAB, 0, 0, 0.0f, 0, 0.0f}, 9, 1 << TT_LORA_ATTN_C_PROJ);
    tt_status st;
    tt_backend *be = NULL;
    CHECK(tt_backend_cpu_create(&c, NULL, &be, &st) == TT_EINVAL && !be);
    CHECK(strstr(st.msg, "lora-rank 9") != NULL);
    c.lora_rank = 8;
    CHECK(tt_config_validate(&c, &st) == TT_OK);
}

/* a LoRA checkpoint round-trips (config with rank, alpha, targets; every
 * tensor) and holds AdamW moments for the adapters alone (the file: params +
 * 2 x adapters); one in the older form (zero moments for every base tensor)
 * loads the same, one with a non-zero base moment is refused in one line; a
 * model without LoRA writes no lora field */
TT_TEST(checkpoint_round_trip) {
    tt_model_config c = lora_cfg(tt_preset_find("tiny")->cfg, 3, 1 << TT_LORA_C_ATTN | 1 << TT_LORA_MLP_C_PROJ);
    c.lora_alpha = 5.5f;
    tt_train_config tc;
    tt_train_config_default(&tc, 10);
    tt_train_state s, r;
    tt_status st;
    CHECK(tt_state_init(&s, &c, &tc, &st) == TT_OK);
    const size_t P = s.layout.total, PT = tt_layout_train_count(&s.layout);
    const int n_ad = s.layout.n_tensors - s.layout.n_base;
    CHECK(tt_layout_train0(&s.layout) == s.layout.base_total && PT == (size_t)tt_config_lora_count(&c) && PT < P / 4);
    for (size_t i = 0; i < PT; i++) s.m[i] = (float)i * 1e-6f, s.v[i] = (float)i * 1e-9f;
    const char *path = "test_lora_ckpt.safetensors", *old = "test_lora_ckpt_old.safetensors";
    CHECK_MSG(tt_checkpoint_save(path, &s, &st) == TT_OK, "save: %s", st.msg);
    /* the file: params of every tensor, moments of the adapters only */
    CHECK(tt_test_count_tensors(path, "params.", NULL) == s.layout.n_tensors);
    CHECK(tt_test_count_tensors(path, "adam_m.", NULL) == n_ad && tt_test_count_tensors(path, "adam_m.", ".lora_") == n_ad);
    CHECK(tt_test_count_tensors(path, "adam_v.", NULL) == n_ad && tt_test_count_tensors(path, "adam_v.", ".lora_") == n_ad);
    tt_st_reader sr;
    CHECK(tt_st_open_file(&sr, path, &st) == TT_OK);
    CHECK_MSG(sr.data_len == 4 * (P + 2 * PT) && sr.file_size < 4 * (P + 2 * PT) + 65536,
              "file %llu bytes (data %llu) for %zu params and %zu adapter elements", (unsigned long long)sr.file_size,
              (unsigned long long)sr.data_len, P, PT);
    tt_st_close(&sr);
    CHECK_MSG(tt_checkpoint_load(path, &r, &st) == TT_OK, "load: %s", st.msg);
    CHECK(r.cfg.lora_rank == 3 && r.cfg.lora_alpha == 5.5f && r.cfg.lora_targets == c.lora_targets);
    CHECK(r.layout.total == s.layout.total && memcmp(r.params, s.params, s.layout.total * 4) == 0);
    CHECK(memcmp(r.m, s.m, PT * 4) == 0 && memcmp(r.v, s.v, PT * 4) == 0);
    tt_state_free(&r);
    /* the older form: moments for every tensor, the base's zero */
    CHECK(tt_test_write_old_lora_checkpoint(path, old, 0.0f) == 0);
    CHECK(tt_test_count_tensors(old, "adam_m.", NULL) == s.layout.n_tensors);
    CHECK_MSG(tt_checkpoint_load(old, &r, &st) == TT_OK, "load of the older form: %s", st.msg);
    CHECK(r.layout.total == P && memcmp(r.params, s.params, P * 4) == 0);
    CHECK(memcmp(r.m, s.m, PT * 4) == 0 && memcmp(r.v, s.v, PT * 4) == 0);
    CHECK(tt_checkpoint_save(path, &r, &st) == TT_OK); /* saved again: the new form */
    CHECK(tt_test_count_tensors(path, "adam_m.", NULL) == n_ad);
    tt_state_free(&r);
    /* a frozen base tensor with moments is not a state this build can hold */
    CHECK(tt_test_write_old_lora_checkpoint(path, old, 1e-3f) == 0);
    CHECK(tt_checkpoint_load(old, &r, &st) == TT_EFORMAT);
    CHECK_MSG(strstr(st.msg, "adam_m.wte.weight of the frozen base holds non-zero moments") && !strchr(st.msg, '\n') && !r.params &&
                  !r.m,
              "%s", st.msg);
    remove(old);
    tt_state_free(&s);
    tt_model_config b = tt_preset_find("tiny")->cfg;
    CHECK(tt_state_init(&s, &b, &tc, &st) == TT_OK);
    CHECK(tt_checkpoint_save(path, &s, &st) == TT_OK);
    FILE *f = fopen(path, "rb");
    static char head[1 << 16];
    CHECK(f && fseek(f, 8, SEEK_SET) == 0 && fread(head, 1, sizeof head - 1, f) > 0); /* after the header length */
    if (f) fclose(f);
    CHECK(strstr(head, "\\\"layers\\\"") != NULL && strstr(head, "lora") == NULL);
    tt_state_free(&s);
    remove(path);
    /* the option words */
    const tt_option *o = tt_option_find("lora-targets");
    int m = 0;
    CHECK(o && tt_option_set_parse(o, "c_proj", &m) == 0 && m == (1 << TT_LORA_ATTN_C_PROJ | 1 << TT_LORA_MLP_C_PROJ));
    CHECK(tt_option_set_parse(o, "all", &m) == 0 && m == TT_LORA_ALL);
    CHECK(tt_option_set_parse(o, "mlp.c_fc,c_attn", &m) == 0 && m == (1 << TT_LORA_C_FC | 1 << TT_LORA_C_ATTN));
    CHECK(tt_option_set_parse(o, "c_attn,", &m) != 0 && tt_option_set_parse(o, "q", &m) != 0);
    char buf[64];
    CHECK(strcmp(tt_option_set_text(o, TT_LORA_ALL, buf, sizeof buf), "c_attn,attn.c_proj,mlp.c_fc,mlp.c_proj") == 0);
    /* a LoRA run gets the table's defaults (alpha 8, every target); no rank: nothing of LoRA */
    tt_options to;
    tt_model_config mc;
    tt_train_config ttc;
    tt_options_init(&to);
    CHECK(tt_options_parse(&to, "preset=tiny lora-rank=4", &st) == TT_OK);
    CHECK(tt_options_resolve(&to, NULL, NULL, &mc, &ttc, &st) == TT_OK);
    CHECK(mc.lora_rank == 4 && mc.lora_alpha == 8.0f && mc.lora_targets == TT_LORA_ALL);
    tt_options_init(&to);
    CHECK(tt_options_parse(&to, "preset=tiny lora-alpha=16 lora-targets=c_fc", &st) == TT_OK);
    CHECK(tt_options_resolve(&to, NULL, NULL, &mc, &ttc, &st) == TT_OK);
    CHECK(mc.lora_rank == 0 && mc.lora_alpha == 0.0f && mc.lora_targets == 0);
    tt_options_init(&to);
    CHECK(tt_options_parse(&to, "preset=tiny lora-rank=49", &st) == TT_OK);
    CHECK(tt_options_resolve(&to, NULL, NULL, &mc, &ttc, &st) == TT_EINVAL && strstr(st.msg, "lora-rank 49") != NULL);
}

int main(void) {
    RUN(reference_adapter_grads_match_finite_differences);
    RUN(attach_gives_base_loss_and_merge_gives_lora_loss);
    RUN(lora_training_is_bit_identical_across_threads);
    RUN(rank_larger_than_a_layer_is_refused);
    RUN(checkpoint_round_trip);
    return tt_test_summary();
}
