/* test_train.c — the trainer (train.h, trainer.h, options.h): LR schedule
 * values and config validation; the option table (names, aliases, ranges,
 * derived defaults, resume checks); the loop state machine (hold, save
 * points, a new total, errors) against tt_train_run; EXACT RESUME (20 steps straight == 10 steps + save +
 * load into a fresh backend + 10 steps, bit for bit: losses, weights, AdamW
 * moments, validation history); the batch rule inside the loop; gradient
 * accumulation; best-validation tracking; stopping; the loss CSV/SVG. */
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "train/checkpoint.h"
#include "train/options.h"
#include "io/plot.h"
#include "rng.h"
#include "train/trainer.h"
#include "ckpt_test.h"
#include "tt_test.h"

/* ---------------- LR schedule + config ---------------- */

TT_TEST(test_lr_schedule) {
    tt_train_config tc;
    tt_train_config_default(&tc, 1000);
    CHECK(tt_train_config_validate(&tc, NULL) == TT_OK);
    /* documented defaults */
    CHECK(tc.lr == 1e-3f && tc.warmup == 50 && tc.sched == TT_SCHED_COSINE);
    CHECK_CLOSE(tc.min_lr, 1e-4, 1e-6, 0);
    CHECK(tc.beta1 == 0.9f && tc.beta2 == 0.95f && tc.eps == 1e-8f && tc.weight_decay == 0.1f && tc.clip == 1.0f);
    CHECK(tc.accum == 1 && tc.eval_every == 100 && tc.eval_batches == 8 && tc.seed == 1337);
    tt_train_config big;
    tt_train_config_default(&big, 100000);
    CHECK(big.warmup == 100);
    tt_train_config small;
    tt_train_config_default(&small, 10);
    CHECK(small.warmup == 0);
    CHECK(tt_lr_at(&small, 0) == small.lr); /* no warmup: peak at once */

    /* warmup: linear to the peak; then cosine to min_lr at the last step */
    tc.lr = 3e-3f;
    tc.min_lr = 2e-4f;
    tc.warmup = 40;
    tc.steps = 240;
    for (int64_t s = 0; s < tc.steps; s++) {
        double want;
        if (s < tc.warmup) want = 3e-3 * (double)(s + 1) / 40.0;
        else want = 2e-4 + (3e-3 - 2e-4) * 0.5 * (1.0 + cos(M_PI * (double)(s - 40) / (double)(240 - 40 - 1)));
        CHECK_CLOSE(tt_lr_at(&tc, s), want, 1e-6, 0);
    }
    CHECK_CLOSE(tt_lr_at(&tc, 39), 3e-3, 1e-7, 0);
    CHECK_CLOSE(tt_lr_at(&tc, 40), 3e-3, 1e-7, 0);
    CHECK_CLOSE(tt_lr_at(&tc, 239), 2e-4, 1e-6, 0);
    CHECK(tt_lr_at(&tc, 500) == tt_lr_at(&tc, 239)); /* past the end: the floor */
    for (int64_t s = 41; s < tc.steps; s++) CHECK(tt_lr_at(&tc, s) <= tt_lr_at(&tc, s - 1));
    tc.sched = TT_SCHED_CONSTANT;
    CHECK_CLOSE(tt_lr_at(&tc, 0), 3e-3 / 40, 1e-6, 0);
    for (int64_t s = 40; s < 300; s += 13) CHECK(tt_lr_at(&tc, s) == 3e-3f);
}

TT_TEST(test_config_validation) {
    tt_train_config tc, bad;
    tt_train_config_default(&tc, 100);
    tt_status st;
#define BAD(stmt, word)                                                         \
    do {                                                                        \
        bad = tc;                                                               \
        stmt;                                                                   \
        tt_status_clear(&st);                                                   \
        CHECK_MSG(tt_train_config_validate(&bad, &st) == TT_EINVAL, "%s", #stmt); \
        CHECK_MSG(strstr(st.msg, word) != NULL, "'%s' not in '%s'", word, st.msg); \
        CHECK(strchr(st.msg, '\n') == NULL);                                    \
    } while (0)
    BAD(bad.steps = 0, "steps");
    BAD(bad.steps = -5, "steps");
    BAD(bad.lr = NAN, "learning rate");
    BAD(bad.lr = INFINITY, "learning rate");
    BAD(bad.lr = -INFINITY, "learning rate");
    BAD(bad.lr = 0.0f, "learning rate");
    BAD(bad.lr = -1e-3f, "learning rate");
    BAD(bad.min_lr = NAN, "min learning rate");
    BAD(bad.min_lr = 1.0f, "min learning rate");
    BAD(bad.warmup = -1, "warmup");
    BAD(bad.warmup = 101, "warmup");
    BAD(bad.beta1 = 1.0f, "beta1");
    BAD(bad.beta2 = NAN, "beta2");
    BAD(bad.eps = 0.0f, "eps");
    BAD(bad.weight_decay = -0.1f, "weight decay");
    BAD(bad.clip = NAN, "clip");
    BAD(bad.accum = 0, "accum");
    BAD(bad.eval_every = -1, "eval-every");
    BAD(bad.eval_batches = 0, "eval-batches");
    BAD(bad.sched = (tt_sched)7, "schedule");
#undef BAD
    tc.clip = 0.0f; /* clipping off is valid */
    CHECK(tt_train_config_validate(&tc, NULL) == TT_OK);
}

/* ---------------- training runs on the CPU backend ---------------- */

static const tt_model_config CFG = {2, 32, 2, 16, 4, TT_VOCAB, 0, 0, 0.0f, 0, 0.0f};

/* pseudo-English: words from a small list, sentences, newlines */
static void make_corpus(tt_corpus *c) {
    static const char *words[] = {"the", "cat", "sat", "on", "a", "mat", "and", "dog", "ran", "to", "see",
                                  "big", "red", "sun", "it", "was", "very", "warm", "today", "we", "go", "home"};
    size_t n = 0, cap = 40000;
    char *t = malloc(cap);
    for (uint64_t i = 0; n < cap - 16; i++) {
        const char *w = words[tt_rand_below(21, TT_STREAM_TEST, i, sizeof words / sizeof words[0])];
        size_t l = strlen(w);
        memcpy(t + n, w, l);
        n += l;
        uint64_t r = tt_rand_below(22, TT_STREAM_TEST, i, 10);
        t[n++] = r == 0 ? '.' : ' ';
        if (r == 0) t[n++] = '\n';
    }
    tt_status st;
    tt_status_clear(&st);
    CHECK(tt_corpus_from_memory((const uint8_t *)t, n, CFG.ctx, c, &st) == TT_OK);
    free(t);
}

static tt_backend *make_be(const tt_model_config *cfg) {
    tt_backend *be = NULL;
    tt_status st;
    tt_status_clear(&st);
    int rc = tt_backend_cpu_create(cfg, &(tt_backend_opts){.threads = 2}, &be, &st);
    CHECK_MSG(rc == TT_OK, "cpu backend: %s", st.msg);
    return be;
}

typedef struct {
    int64_t stop_at; /* stop when this step completes (0: never) */
    int n_step, n_eval, n_save, n_end, n_start;
    int64_t last_step;
    float last_val;
} cb_state;

static int cb(void *user, const tt_progress *p) {
    cb_state *c = user;
    switch (p->event) {
    case TT_EV_START: c->n_start++; break;
    case TT_EV_STEP:
        c->n_step++;
        CHECK(p->step == c->last_step + 1 || c->last_step == 0);
        c->last_step = p->step;
        CHECK(isfinite(p->loss) && p->loss > 0);
        CHECK(p->tokens_per_step == (int64_t)CFG.batch * CFG.ctx * (p->tokens_per_step / ((int64_t)CFG.batch * CFG.ctx)));
        return c->stop_at > 0 && p->step == c->stop_at;
    case TT_EV_EVAL: c->n_eval++; c->last_val = p->val_loss; break;
    case TT_EV_SAVE: c->n_save++; break;
    case TT_EV_END: c->n_end++; break;
    default: break;
    }
    return 0;
}

static void train_config(tt_train_config *tc, int64_t steps) {
    tt_train_config_default(tc, steps);
    tc->lr = 3e-3f; /* large enough that every step moves the weights visibly */
    tc->min_lr = 3e-4f;
    tc->warmup = 3;
    tc->eval_every = 4;
    tc->eval_batches = 2;
    tc->seed = 99;
}

/* 20 steps straight == 10 steps, save, load, 10 more: bit for bit (losses,
 * weights, moments, validation); with dropout and accumulation too, since
 * the masks are keyed by (seed, step, micro-batch) and the checkpoint keeps
 * the dropout. A LoRA model (adapters on its frozen base): the same, its
 * checkpoint holding the adapters' moments alone, and resumed as well from
 * that checkpoint rewritten in the older form (zero moments for every base
 * tensor). loss_out (20): the straight run's losses. */
static void exact_resume(const tt_model_config *cfg, float dropout, int accum, float *loss_out) {
    tt_corpus corpus;
    make_corpus(&corpus);
    tt_train_config tc;
    train_config(&tc, 20);
    tc.dropout = dropout;
    tc.accum = accum;
    tt_status st;
    tt_status_clear(&st);
    const int lora = cfg->lora_rank > 0;

    /* A: 20 steps straight */
    tt_train_state a;
    CHECK(tt_state_init(&a, cfg, &tc, &st) == TT_OK);
    tt_backend *be = make_be(cfg);
    if (!be) { tt_state_free(&a); tt_corpus_free(&corpus); return; }
    tt_trainer tr;
    memset(&tr, 0, sizeof tr);
    tr.s = &a;
    tr.corpus = &corpus;
    tr.be = be;
    cb_state ca = {0};
    tr.progress = cb;
    tr.user = &ca;
    int stopped = -1;
    CHECK(tt_train_run(&tr, &stopped, &st) == TT_OK);
    CHECK(stopped == 0);
    CHECK(a.step == 20);
    CHECK(ca.n_step == 20 && ca.n_eval == 5 && ca.n_end == 1 && ca.n_start == 1);
    CHECK(a.n_val == 5);
    tt_backend_destroy(be);

    /* B: 10 steps (same 20-step schedule), stopped, saved */
    const char *dir = tt_test_tmpdir();
    char ckpt[2][4200];
    snprintf(ckpt[0], sizeof ckpt[0], "%s/ckpt.safetensors", dir);
    snprintf(ckpt[1], sizeof ckpt[1], "%s/ckpt_old.safetensors", dir);
    tt_train_state b;
    CHECK(tt_state_init(&b, cfg, &tc, &st) == TT_OK);
    be = make_be(cfg);
    tr.s = &b;
    tr.be = be;
    tr.ckpt_path = ckpt[0];
    cb_state cbs = {0};
    cbs.stop_at = 10;
    tr.user = &cbs;
    CHECK(tt_train_run(&tr, &stopped, &st) == TT_OK);
    CHECK(stopped == 1);
    CHECK(b.step == 10);
    CHECK(cbs.n_save == 1);
    CHECK(access(ckpt[0], F_OK) == 0);
    tt_backend_destroy(be);
    tt_state_free(&b);
    const int n_moment = lora ? a.layout.n_tensors - a.layout.n_base : a.layout.n_tensors;
    CHECK(tt_test_count_tensors(ckpt[0], "adam_m.", NULL) == n_moment && tt_test_count_tensors(ckpt[0], "adam_v.", NULL) == n_moment);
    if (lora) CHECK(tt_test_write_old_lora_checkpoint(ckpt[0], ckpt[1], 0.0f) == 0);

    /* load into a fresh state and a fresh backend, run to the end */
    for (int form = 0; form < 1 + lora; form++) {
        tt_train_state c;
        tt_status_clear(&st);
        CHECK_MSG(tt_checkpoint_load(ckpt[form], &c, &st) == TT_OK, "load: %s", st.msg);
        if (st.code) break;
        CHECK(c.step == 10);
        CHECK(c.corpus_hash == corpus.hash);
        CHECK(c.tc.dropout == dropout && c.tc.accum == accum);
        be = make_be(cfg);
        tr.s = &c;
        tr.be = be;
        tr.ckpt_path = NULL;
        cb_state cc = {0};
        tr.user = &cc;
        CHECK(tt_train_run(&tr, &stopped, &st) == TT_OK);
        CHECK(stopped == 0 && c.step == 20 && cc.n_step == 10);

        /* bit-identical: losses, weights, moments (of the trainable range), validation history */
        CHECK(memcmp(a.loss_hist, c.loss_hist, 20 * sizeof(float)) == 0);
        const size_t bytes = a.layout.total * sizeof(float), mbytes = tt_layout_train_count(&a.layout) * sizeof(float);
        CHECK(memcmp(a.params, c.params, bytes) == 0);
        CHECK(memcmp(a.m, c.m, mbytes) == 0);
        CHECK(memcmp(a.v, c.v, mbytes) == 0);
        CHECK(a.n_val == c.n_val);
        if (a.n_val == c.n_val) {
            CHECK(memcmp(a.val_loss, c.val_loss, (size_t)a.n_val * sizeof(float)) == 0);
            CHECK(memcmp(a.val_step, c.val_step, (size_t)a.n_val * sizeof(int64_t)) == 0);
        }
        CHECK(a.best_val == c.best_val && a.best_val_step == c.best_val_step);
        tt_backend_destroy(be);
        tt_state_free(&c);
    }
    /* and training did something: the loss fell, the weights moved (LoRA:
     * the adapters, the base unchanged) */
    tt_train_state init;
    CHECK(tt_state_init(&init, cfg, &tc, &st) == TT_OK);
    const size_t t0 = tt_layout_train0(&a.layout), nt = a.layout.total - t0;
    size_t moved = 0;
    for (size_t i = t0; i < a.layout.total; i++) moved += a.params[i] != init.params[i];
    CHECK(moved > nt / 2);
    CHECK(memcmp(a.params, init.params, t0 * sizeof(float)) == 0);
    CHECK(a.loss_hist[19] < a.loss_hist[0] - (lora ? 0.0f : 0.5f));
    printf("  %sdropout %.1f, accum %d: loss %.4f -> %.4f over 20 steps; resumed run identical%s\n", lora ? "LoRA, " : "",
           (double)dropout, accum, a.loss_hist[0], a.loss_hist[19], lora ? " (and from the older form)" : "");
    if (loss_out) memcpy(loss_out, a.loss_hist, 20 * sizeof(float));
    remove(ckpt[1]);
    tt_state_free(&init);
    tt_state_free(&a);
    tt_corpus_free(&corpus);
}

TT_TEST(test_exact_resume) {
    float l[20];
    exact_resume(&CFG, 0.0f, 1, l);
}

TT_TEST(test_exact_resume_lora) {
    tt_model_config c = CFG;
    c.lora_rank = 4, c.lora_targets = TT_LORA_ALL, c.lora_alpha = 8.0f;
    exact_resume(&c, 0.0f, 1, NULL);
}

TT_TEST(test_exact_resume_dropout) {
    float l0[20], l1[20];
    exact_resume(&CFG, 0.2f, 2, l1);
    exact_resume(&CFG, 0.0f, 2, l0);
    /* the dropout went through the loop: the first step (same weights,
     * same batches) already reports another loss */
    CHECK_MSG(l1[0] != l0[0], "dropout 0.2 reported the loss of dropout 0 (%.6f)", (double)l0[0]);
}

/* The loop's batches follow the rule in train.h, with accumulation: the
 * reported loss of step 1 (before any update) is the mean of the backend's
 * eval loss on micro-batches of sequences 0..B-1 and B..2B-1. */
TT_TEST(test_accumulation_and_batch_rule) {
    tt_corpus corpus;
    make_corpus(&corpus);
    tt_status st;
    tt_status_clear(&st);
    tt_model_config half = CFG, full = CFG;
    half.batch = 4;
    full.batch = 8;
    tt_train_config tc;
    train_config(&tc, 3);
    tc.warmup = 0;
    tc.eval_every = 0;
    tc.eval_batches = 1;

    /* expected step-1 loss from eval on the initial weights */
    tt_train_state s0;
    CHECK(tt_state_init(&s0, &half, &tc, &st) == TT_OK);
    tt_backend *be = make_be(&half);
    if (!be) { tt_state_free(&s0); tt_corpus_free(&corpus); return; }
    CHECK(be->vt->set_state(be, s0.params, NULL, NULL, &st) == TT_OK);
    tt_token tok[8 * 17];
    float l0 = 0, l1 = 0;
    tt_batch_train(&corpus, tc.seed, 0, 4, 16, tok);
    CHECK(be->vt->eval(be, tok, 4, &l0, &st) == TT_OK);
    tt_batch_train(&corpus, tc.seed, 4, 4, 16, tok);
    CHECK(be->vt->eval(be, tok, 4, &l1, &st) == TT_OK);
    tt_backend_destroy(be);
    tt_state_free(&s0);

    /* accum 2 x batch 4 */
    tc.accum = 2;
    tt_train_state a;
    CHECK(tt_state_init(&a, &half, &tc, &st) == TT_OK);
    be = make_be(&half);
    tt_trainer tr;
    memset(&tr, 0, sizeof tr);
    tr.s = &a;
    tr.corpus = &corpus;
    tr.be = be;
    CHECK(tt_train_run(&tr, NULL, &st) == TT_OK);
    tt_backend_destroy(be);
    CHECK_CLOSE(a.loss_hist[0], 0.5 * ((double)l0 + l1), 1e-6, 0);

    /* accum 1 x batch 8: the same 8 sequences per step */
    tc.accum = 1;
    tt_train_state b;
    CHECK(tt_state_init(&b, &full, &tc, &st) == TT_OK);
    be = make_be(&full);
    tr.s = &b;
    tr.be = be;
    CHECK(tt_train_run(&tr, NULL, &st) == TT_OK);
    tt_backend_destroy(be);
    CHECK_CLOSE(b.loss_hist[0], a.loss_hist[0], 1e-6, 0);
    for (int i = 1; i < 3; i++) CHECK_CLOSE(b.loss_hist[i], a.loss_hist[i], 2e-3, 0);
    /* weights agree to float rounding amplified by a few AdamW steps (first updates are ~sign(g)) */
    size_t close = 0;
    for (size_t i = 0; i < a.layout.total; i++) close += fabsf(a.params[i] - b.params[i]) <= 1e-5f + 1e-3f * fabsf(b.params[i]);
    CHECK_MSG(close > a.layout.total * 99 / 100, "%zu of %zu weights agree", close, a.layout.total);
    tt_state_free(&a);
    tt_state_free(&b);
    tt_corpus_free(&corpus);
}

TT_TEST(test_best_val_and_curves) {
    tt_corpus corpus;
    make_corpus(&corpus);
    tt_status st;
    tt_status_clear(&st);
    tt_train_config tc;
    train_config(&tc, 12);
    tc.eval_every = 3;
    tc.eval_batches = 3;
    tt_train_state s;
    CHECK(tt_state_init(&s, &CFG, &tc, &st) == TT_OK);
    tt_backend *be = make_be(&CFG);
    if (!be) { tt_state_free(&s); tt_corpus_free(&corpus); return; }
    const char *dir = tt_test_tmpdir();
    char ckpt[4200], csv[4200], svg[4200];
    snprintf(ckpt, sizeof ckpt, "%s/c.safetensors", dir);
    snprintf(csv, sizeof csv, "%s/loss.csv", dir);
    snprintf(svg, sizeof svg, "%s/loss.svg", dir);
    tt_trainer tr;
    memset(&tr, 0, sizeof tr);
    tr.s = &s;
    tr.corpus = &corpus;
    tr.be = be;
    tr.ckpt_path = ckpt;
    tr.csv_path = csv;
    tr.svg_path = svg;
    tr.save_every = 5;
    cb_state c = {0};
    tr.progress = cb;
    tr.user = &c;
    CHECK(tt_train_run(&tr, NULL, &st) == TT_OK);
    CHECK(c.n_save == 3); /* steps 5, 10, and the end */
    CHECK(s.n_val == 4);
    float best = INFINITY;
    int64_t best_step = -1;
    for (int64_t i = 0; i < s.n_val; i++) {
        CHECK(s.val_step[i] == 3 * (i + 1));
        if (s.val_loss[i] < best) { best = s.val_loss[i]; best_step = s.val_step[i]; }
    }
    CHECK(s.best_val == best && s.best_val_step == best_step);
    CHECK(c.last_val == s.val_loss[s.n_val - 1]);
    /* the last validation used the final weights on the fixed batches */
    tt_token *tok = malloc(((size_t)CFG.batch * (CFG.ctx + 1)) * sizeof *tok);
    float again = NAN;
    CHECK(tt_evaluate(be, &corpus, 3, tok, &again, &st) == TT_OK);
    CHECK(again == s.val_loss[s.n_val - 1]);
    /* validation is a mean over the fixed batches */
    double sum = 0;
    for (int k = 0; k < 3; k++) {
        float l;
        tt_batch_val(&corpus, k, CFG.batch, CFG.ctx, tok);
        CHECK(be->vt->eval(be, tok, CFG.batch, &l, &st) == TT_OK);
        sum += l;
    }
    CHECK_CLOSE(again, sum / 3, 1e-6, 0);
    free(tok);
    tt_backend_destroy(be);

    /* CSV: header + one row per step, val at steps 3, 6, 9, 12; values as in the history */
    FILE *f = fopen(csv, "r");
    CHECK(f != NULL);
    if (f) {
        char line[256];
        CHECK(fgets(line, sizeof line, f) && strcmp(line, "step,train_loss,val_loss\n") == 0);
        int rows = 0, vals = 0;
        while (fgets(line, sizeof line, f)) {
            long long step;
            float tl, vl;
            int k = sscanf(line, "%lld,%g,%g", &step, &tl, &vl);
            CHECK(k >= 2);
            rows++;
            CHECK(step == rows);
            CHECK_CLOSE(tl, s.loss_hist[step - 1], 1e-5, 0);
            if (k == 3) {
                vals++;
                CHECK(step % 3 == 0);
                CHECK_CLOSE(vl, s.val_loss[step / 3 - 1], 1e-5, 0);
            }
        }
        CHECK(rows == 12 && vals == 4);
        fclose(f);
    }
    /* SVG: a complete document with both lines and the ln(256) baseline */
    f = fopen(svg, "r");
    CHECK(f != NULL);
    if (f) {
        static char doc[200000];
        size_t n = fread(doc, 1, sizeof doc - 1, f);
        doc[n] = 0;
        fclose(f);
        CHECK(strncmp(doc, "<?xml", 5) == 0 && strstr(doc, "<svg") && strstr(doc, "</svg>\n"));
        CHECK(strstr(doc, "stroke=\"#1f77b4\"") && strstr(doc, "stroke=\"#ff7f0e\""));
        CHECK(strstr(doc, "ln 256 = 5.545") != NULL);
        CHECK(strstr(doc, "nan") == NULL && strstr(doc, "inf") == NULL);
    }
    /* the checkpoint holds the history */
    tt_train_state l;
    CHECK(tt_checkpoint_load(ckpt, &l, &st) == TT_OK);
    CHECK(l.step == 12 && l.n_val == 4 && l.best_val == s.best_val && l.best_val_step == s.best_val_step);
    if (l.step == 12) CHECK(memcmp(l.loss_hist, s.loss_hist, 12 * sizeof(float)) == 0);
    tt_state_free(&l);
    tt_state_free(&s);
    tt_corpus_free(&corpus);
}

/* ---------------- the option table ---------------- */

TT_TEST(test_options) {
    tt_status st;
    tt_options o;
    tt_options_init(&o);
    tt_model_config cfg;
    tt_train_config tc;
    /* names, older names through aliases, later ones win */
    CHECK(tt_options_parse(&o, "preset=tiny steps=300 weight-decay=0.05 wd=0.02 n_layer=3 d_model=96 eval_every=7 sched=constant", &st) == TT_OK);
    CHECK_MSG(tt_options_resolve(&o, NULL, NULL, &cfg, &tc, &st) == TT_OK, "%s", st.msg);
    const tt_preset *tiny = tt_preset_find("tiny");
    CHECK(cfg.n_layer == 3 && cfg.d_model == 96 && cfg.n_head == tiny->cfg.n_head && cfg.ctx == tiny->cfg.ctx);
    CHECK(tc.steps == 300 && tc.weight_decay == 0.02f && tc.eval_every == 7 && tc.sched == TT_SCHED_CONSTANT);
    /* derived defaults: warmup from steps, lr from the model, the floor from lr */
    CHECK(tc.warmup == 15 && tc.lr == tt_default_lr(&cfg));
    CHECK(tc.min_lr == tc.lr / 10.0f);
    CHECK(tt_options_given(&o, "weight-decay") && tt_options_given(&o, "wd") && !tt_options_given(&o, "lr"));
    /* one range everywhere: what the parser refuses, validation refuses too */
    static const struct { const char *opt, *word; } bad[] = {
        {"accum=0", "accum"},       {"accum=65537", "accum"},   {"lr=0", "learning rate"}, {"lr=nan", "learning rate"},
        {"beta1=1", "beta1"},       {"steps=1.5", "steps"},     {"schedule=linear", "schedule"},
        {"eval-batches=0", "eval-batches"}, {"layers=257", "layers"}, {"seed=-1", "seed"},
        {"preset=nosuch", "preset"},  {"nope=1", "unknown option"}, {"lr", "name=value"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tt_options b;
        tt_options_init(&b);
        tt_status_clear(&st);
        CHECK_MSG(tt_options_parse(&b, bad[i].opt, &st) == TT_EINVAL, "%s accepted", bad[i].opt);
        CHECK_MSG(strstr(st.msg, bad[i].word) && !strchr(st.msg, '\n'), "%s: '%s'", bad[i].opt, st.msg);
    }
    tt_train_config v;
    tt_train_config_default(&v, 100);
    v.accum = 65537;
    CHECK(tt_train_config_validate(&v, &st) == TT_EINVAL && strstr(st.msg, "accum"));
    /* every option has a help text and is found by its name */
    for (int i = 0; i < tt_option_count(); i++) {
        const tt_option *opt = tt_option_at(i);
        CHECK(opt->help && opt->help[0] && tt_option_find(opt->name) == opt);
    }
    /* resume: options that must keep the checkpoint's value */
    tt_options r;
    tt_options_init(&r);
    CHECK(tt_options_parse(&r, "steps=900 eval-every=3", &st) == TT_OK);
    CHECK(tt_options_check_resume(&r, &tc, &st) == TT_OK);
    CHECK(tt_options_parse(&r, "weight-decay=0.5", &st) == TT_OK);
    CHECK(tt_options_check_resume(&r, &tc, &st) == TT_EMISMATCH && strstr(st.msg, "--weight-decay 0.5"));
    tt_model_config c2;
    tt_train_config t2;
    tt_options_init(&r);
    CHECK(tt_options_parse(&r, "steps=900", &st) == TT_OK);
    CHECK_MSG(tt_options_resolve(&r, &cfg, &tc, &c2, &t2, &st) == TT_OK, "%s", st.msg);
    CHECK(t2.steps == 900 && t2.warmup == tc.warmup && t2.lr == tc.lr && c2.d_model == cfg.d_model);
}

/* ---------------- the loop state machine ---------------- */

/* Runs L until an event in `until` (bit mask of tt_event); returns it. */
static int run_until(tt_loop *L, unsigned until, tt_progress *p) {
    tt_status st;
    for (int n = 0; n < 100000; n++) {
        tt_status_clear(&st);
        if (tt_loop_advance(L, p, &st) != TT_OK) {
            CHECK_MSG(0, "advance: %s", st.msg);
            return -1;
        }
        if (until >> p->event & 1) return (int)p->event;
    }
    return -1;
}

/* A run held half way (with a save point), a state read while held, then
 * released and given a larger total after it ended: the same losses, val
 * history and weights as tt_train_run of the larger total with a constant
 * schedule. Save points come at the save-every cadence. */
TT_TEST(test_loop_hold_and_more) {
    tt_corpus corpus;
    make_corpus(&corpus);
    tt_status st;
    tt_status_clear(&st);
    tt_train_config tc;
    train_config(&tc, 14);
    tc.sched = TT_SCHED_CONSTANT;
    tc.eval_every = 5;
    tt_train_state a, b;
    CHECK(tt_state_init(&a, &CFG, &tc, &st) == TT_OK);
    tt_backend *be = make_be(&CFG);
    if (!be) { tt_state_free(&a); tt_corpus_free(&corpus); return; }
    tt_trainer tr;
    memset(&tr, 0, sizeof tr);
    tr.s = &a;
    tr.corpus = &corpus;
    tr.be = be;
    CHECK(tt_train_run(&tr, NULL, &st) == TT_OK && a.step == 14);
    tt_backend_destroy(be);

    tc.steps = 10;
    CHECK(tt_state_init(&b, &CFG, &tc, &st) == TT_OK);
    be = make_be(&CFG);
    tr.s = &b;
    tr.be = be;
    tr.save_every = 4;
    tt_loop *L = NULL;
    CHECK(tt_loop_create(&tr, &L, &st) == TT_OK);
    if (!L) return;
    tt_progress p;
    const unsigned SAVE = 1u << TT_EV_SAVE, HOLD = 1u << TT_EV_HOLD, END = 1u << TT_EV_END, STEP = 1u << TT_EV_STEP;
    CHECK(run_until(L, SAVE, &p) == TT_EV_SAVE && p.step == 4 && !p.final && b.step == 4);
    CHECK(run_until(L, STEP, &p) == TT_EV_STEP && p.step == 5);
    tt_loop_hold(L, TT_HOLD_SAVE);
    CHECK(run_until(L, SAVE | HOLD, &p) == TT_EV_SAVE && b.step == 5 && b.n_val == 1); /* the eval due at 5 came first */
    CHECK(run_until(L, SAVE | HOLD, &p) == TT_EV_HOLD && tt_loop_in_flight(L) == 0);
    CHECK(run_until(L, ~0u, &p) == TT_EV_HOLD); /* held: repeats */
    CHECK(tt_loop_sync(L, &st) == TT_OK);
    tt_loop_hold(L, TT_HOLD_OFF);
    CHECK(run_until(L, SAVE, &p) == TT_EV_SAVE && p.step == 8);
    CHECK(run_until(L, SAVE | END, &p) == TT_EV_SAVE && p.final && b.step == 10);
    CHECK(run_until(L, ~0u, &p) == TT_EV_END && !p.stopped);
    CHECK(run_until(L, ~0u, &p) == TT_EV_END);
    CHECK(tt_loop_set_steps(L, 9, &st) == TT_EINVAL);
    CHECK(tt_loop_set_steps(L, 14, &st) == TT_OK);
    CHECK(run_until(L, END, &p) == TT_EV_END && b.step == 14);
    CHECK(memcmp(a.loss_hist, b.loss_hist, 14 * sizeof(float)) == 0);
    CHECK(memcmp(a.params, b.params, a.layout.total * sizeof(float)) == 0);
    /* the straight run evaluated at 5, 10 and 14; this one at 5, 10 (its end then) and 14 */
    CHECK(a.n_val == 3 && b.n_val == 3);
    if (a.n_val == 3 && b.n_val == 3) CHECK(memcmp(a.val_loss, b.val_loss, 3 * sizeof(float)) == 0);
    tt_loop_destroy(L);
    tt_backend_destroy(be);

    /* errors: the corpus rule (data.c), and a loop that failed stays failed */
    tt_model_config wide = CFG;
    wide.ctx = 8000;
    tt_train_state w;
    CHECK(tt_state_init(&w, &wide, &tc, &st) == TT_OK);
    be = make_be(&wide);
    tr.s = &w;
    tr.be = be;
    tt_status_clear(&st);
    CHECK(tt_loop_create(&tr, &L, &st) == TT_EINVAL && strstr(st.msg, "too short"));
    tt_backend_destroy(be);
    tt_state_free(&w);
    tt_state_free(&a);
    tt_state_free(&b);
    tt_corpus_free(&corpus);
}

TT_TEST(test_plot_edge_cases) {
    /* empty history, NaN values and huge outliers: still a valid document without nan/inf text */
    float tr[6] = {5.6f, NAN, 4.0f, INFINITY, 1e30f, 2.0f};
    int64_t vs[2] = {3, 6};
    float vl[2] = {NAN, 2.5f};
    tt_curve c = {tr, 6, vs, vl, 2, "a <title> & more"};
    char *svg = tt_plot_svg_string(&c);
    CHECK(svg != NULL);
    if (svg) {
        CHECK(strstr(svg, "nan") == NULL && strstr(svg, "inf") == NULL);
        CHECK(strstr(svg, "a &lt;title&gt; &amp; more") != NULL);
        CHECK(strstr(svg, "</svg>") != NULL);
        free(svg);
    }
    tt_curve e = {NULL, 0, NULL, NULL, 0, NULL};
    svg = tt_plot_svg_string(&e);
    CHECK(svg && strstr(svg, "</svg>"));
    free(svg);
    tt_status st;
    tt_status_clear(&st);
    CHECK(tt_plot_csv("/nonexistent-dir/x.csv", &c, &st) == TT_EIO);
    CHECK(strstr(st.msg, "/nonexistent-dir/x.csv") != NULL);
}

int main(void) {
    RUN(test_lr_schedule);
    RUN(test_config_validation);
    RUN(test_options);
    RUN(test_loop_hold_and_more);
    RUN(test_exact_resume);
    RUN(test_exact_resume_lora);
    RUN(test_exact_resume_dropout);
    RUN(test_accumulation_and_batch_rule);
    RUN(test_best_val_and_curves);
    RUN(test_plot_edge_cases);
    return tt_test_summary();
}
