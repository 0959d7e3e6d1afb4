/* test_webgpu_resume.c — checkpoints cross backends, and a device error in
 * the middle of training leaves a checkpoint that resumes:
 *   - a run trained N steps on backend A through tt_train_run (checkpoint
 *     written by the trainer) is loaded and continued on backend B, and the
 *     same checkpoint continued on A: every continued step's loss within the
 *     0.1% parity bar, the first N losses carried over bit for bit, and the
 *     two final files load with identical model and training configs; for
 *     A = WebGPU, B = CPU and the other way round;
 *   - the fault hook TT_WEBGPU_FAULT_AT_STEP (src/webgpu/step.c) makes a step
 *     fail with TT_EDEVICE: with the device gone (kind "lost") the trainer
 *     saves the last state downloaded from it (the periodic save) and says
 *     so; with the device still readable (kind "error") it saves the last
 *     completed step read back from it. Both checkpoints load and match the
 *     uninterrupted run's losses up to their step, and resume on the CPU.
 *   - with dropout 0.2, a GPU run stopped at a checkpoint and resumed from
 *     the file on a fresh WebGPU backend gives the uninterrupted run's
 *     losses and weights bit for bit (masks keyed by seed and step, the
 *     dropout read back from the checkpoint); resumed with another dropout
 *     it does not (the comparison sees the masks);
 *   - a LoRA run stopped at a checkpoint (the adapters' moments alone) and
 *     resumed on a fresh WebGPU backend, from that file and from it in the
 *     older form (zero moments for the base), gives the uninterrupted run's
 *     losses, weights and moments bit for bit.
 * Tiny preset, a generated corpus (no package needed), a few steps: lavapipe
 * is slow. Skips (exit 0) without a WebGPU library/adapter unless
 * TT_REQUIRE_WEBGPU=1. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "ckpt_test.h"
#include "gpu_test.h"
#include "train/checkpoint.h"
#include "train/trainer.h"
#include "tt_test.h"

#define N_FIRST 4 /* steps on backend A */
#define N_ALL 8   /* total steps */

static tt_model_config CFG;
static tt_corpus CORPUS;
static tt_backend *GPU, *CPU;
static char DIR_[512];

static tt_backend *make_gpu_or_skip(void) {
    return tt_gtest_backend_or_skip(&CFG);
}

static void train_config(tt_train_config *tc) {
    tt_train_config_default(tc, N_ALL);
    tc->lr = tt_default_lr(&CFG);
    tc->min_lr = tc->lr / 10.0f;
    tc->warmup = 2;
    tc->eval_every = 0; /* one validation at the end */
    tc->eval_batches = 1;
}

/* runs s on be until stop_at (0: the end), saving to path */
static int run(tt_train_state *s, tt_backend *be, const char *path, int64_t stop_at, int64_t save_every,
               tt_status *st) {
    tt_trainer tr;
    memset(&tr, 0, sizeof tr);
    tr.s = s;
    tr.corpus = &CORPUS;
    tr.be = be;
    tr.ckpt_path = path;
    tr.stop_at = stop_at;
    tr.save_every = save_every;
    int stopped = 0;
    return tt_train_run(&tr, &stopped, st);
}

static void path_of(char *buf, size_t cap, const char *name) { snprintf(buf, cap, "%s/%s", DIR_, name); }

static int same_model(const tt_model_config *a, const tt_model_config *b) {
    return a->n_layer == b->n_layer && a->d_model == b->d_model && a->n_head == b->n_head && a->ctx == b->ctx &&
           a->batch == b->batch && a->vocab == b->vocab;
}

static int same_train(const tt_train_config *a, const tt_train_config *b) {
    return a->steps == b->steps && a->lr == b->lr && a->min_lr == b->min_lr && a->warmup == b->warmup &&
           a->sched == b->sched && a->beta1 == b->beta1 && a->beta2 == b->beta2 && a->eps == b->eps &&
           a->weight_decay == b->weight_decay && a->clip == b->clip && a->accum == b->accum && a->seed == b->seed &&
           a->eval_every == b->eval_every && a->eval_batches == b->eval_batches;
}

/* N_FIRST steps on A -> checkpoint; continued on B and on A */
static void cross(tt_backend *A, tt_backend *B, const char *tag) {
    tt_status st;
    tt_train_config tc;
    train_config(&tc);
    char pa[600], pb[600], pc[600];
    path_of(pa, sizeof pa, "first.safetensors");
    path_of(pb, sizeof pb, "other.safetensors");
    path_of(pc, sizeof pc, "same.safetensors");
    tt_train_state s0, s1, s2, f1, f2;
    memset(&s1, 0, sizeof s1), memset(&s2, 0, sizeof s2), memset(&f1, 0, sizeof f1), memset(&f2, 0, sizeof f2);
    CHECK(tt_state_init(&s0, &CFG, &tc, &st) == TT_OK);
    int rc = run(&s0, A, pa, N_FIRST, 0, &st);
    if (rc) fprintf(stderr, "  %s: first run: %s\n", tag, st.msg);
    CHECK(rc == TT_OK && s0.step == N_FIRST);
    /* continue on the other backend, and on the same one, from the file */
    CHECK(tt_checkpoint_load(pa, &s1, &st) == TT_OK);
    CHECK(tt_checkpoint_load(pa, &s2, &st) == TT_OK);
    CHECK(s1.step == N_FIRST && s2.step == N_FIRST);
    rc = run(&s1, B, pb, 0, 0, &st);
    if (rc) fprintf(stderr, "  %s: continued on %s: %s\n", tag, B->desc.name, st.msg);
    CHECK(rc == TT_OK && s1.step == N_ALL);
    rc = run(&s2, A, pc, 0, 0, &st);
    if (rc) fprintf(stderr, "  %s: continued on %s: %s\n", tag, A->desc.name, st.msg);
    CHECK(rc == TT_OK && s2.step == N_ALL);
    if (s1.step == N_ALL && s2.step == N_ALL && s0.step == N_FIRST) {
        double worst = 0;
        int carried = 1;
        for (int i = 0; i < N_ALL; i++) {
            if (i < N_FIRST) {
                carried &= s1.loss_hist[i] == s0.loss_hist[i] && s2.loss_hist[i] == s0.loss_hist[i];
                continue;
            }
            double e = fabs((double)s1.loss_hist[i] - s2.loss_hist[i]) / fabs((double)s2.loss_hist[i]);
            if (e > worst) worst = e;
            CHECK(isfinite(s1.loss_hist[i]) && s1.loss_hist[i] < s0.loss_hist[0]); /* it still learns */
        }
        printf("  %s: steps %d..%d on %s vs %s: worst loss rel diff %.3g (step %d: %.9g vs %.9g)\n", tag, N_FIRST + 1,
               N_ALL, B->desc.name, A->desc.name, worst, N_ALL, s1.loss_hist[N_ALL - 1], s2.loss_hist[N_ALL - 1]);
        CHECK(carried);
        CHECK(worst <= 1e-3);
        CHECK(s1.n_val == 1 && s2.n_val == 1);
        if (s1.n_val == 1 && s2.n_val == 1) CHECK_CLOSE(s1.val_loss[0], s2.val_loss[0], 1e-3, 0);
    }
    /* the saved files: identical configs and step, both load */
    CHECK(tt_checkpoint_load(pb, &f1, &st) == TT_OK);
    CHECK(tt_checkpoint_load(pc, &f2, &st) == TT_OK);
    CHECK(f1.step == N_ALL && f2.step == N_ALL);
    CHECK(same_model(&f1.cfg, &f2.cfg) && same_model(&f1.cfg, &CFG));
    CHECK(same_train(&f1.tc, &f2.tc) && same_train(&f1.tc, &tc));
    CHECK(f1.corpus_hash == f2.corpus_hash && f1.corpus_hash == CORPUS.hash);
    if (f1.params && f2.params) {
        /* weights after the same steps on two backends: close */
        double dmax = 0, pmax = 0;
        for (size_t j = 0; j < f1.layout.total; j++) {
            double d = fabs((double)f1.params[j] - f2.params[j]);
            if (d > dmax) dmax = d;
            if (fabs(f2.params[j]) > pmax) pmax = fabs(f2.params[j]);
        }
        printf("  %s: final weights max |diff| %.3g (max |w| %.3g)\n", tag, dmax, pmax);
        CHECK(dmax <= 1e-3 * pmax);
    }
    tt_state_free(&s0), tt_state_free(&s1), tt_state_free(&s2), tt_state_free(&f1), tt_state_free(&f2);
}

TT_TEST(test_gpu_to_cpu) { cross(GPU, CPU, "webgpu -> cpu"); }
TT_TEST(test_cpu_to_gpu) { cross(CPU, GPU, "cpu -> webgpu"); }

/* A device error at the backend's step `at` (kind "lost" or "error"), saves
 * every 2 steps. ref: the losses of an uninterrupted run on the GPU. */
static void fault_case(const char *kind, int at, int64_t want_step, const char *want_msg, const float *ref) {
    tt_status st;
    setenv("TT_WEBGPU_FAULT_AT_STEP", at == 4 ? "4" : "5", 1);
    setenv("TT_WEBGPU_FAULT_KIND", kind, 1);
    tt_backend *be = NULL;
    int rc = tt_backend_webgpu_create(&CFG, NULL, &be, &st);
    unsetenv("TT_WEBGPU_FAULT_AT_STEP");
    unsetenv("TT_WEBGPU_FAULT_KIND");
    CHECK(rc == TT_OK);
    if (rc) return;
    tt_train_config tc;
    train_config(&tc);
    char path[600];
    path_of(path, sizeof path, "fault.safetensors");
    remove(path);
    tt_train_state s, l;
    memset(&l, 0, sizeof l);
    CHECK(tt_state_init(&s, &CFG, &tc, &st) == TT_OK);
    rc = run(&s, be, path, 0, 2, &st);
    printf("  fault (%s at %d): rc %d: %s\n", kind, at, rc, st.msg);
    CHECK(rc == TT_EDEVICE);
    CHECK(strstr(st.msg, "simulated by TT_WEBGPU_FAULT_AT_STEP") != NULL);
    CHECK_MSG(strstr(st.msg, want_msg) != NULL, "message lacks '%s'", want_msg);
    CHECK(strchr(st.msg, '\n') == NULL);
    tt_backend_destroy(be);
    /* the checkpoint: loads, holds the reported step, losses of the clean run */
    CHECK(tt_checkpoint_load(path, &l, &st) == TT_OK);
    CHECK(l.step == want_step);
    for (int64_t i = 0; i < l.step && l.step == want_step; i++) CHECK(l.loss_hist[i] == ref[i]);
    /* and it resumes on the CPU to the end */
    if (l.step == want_step) {
        rc = run(&l, CPU, path, 0, 0, &st);
        if (rc) fprintf(stderr, "  resume on cpu: %s\n", st.msg);
        CHECK(rc == TT_OK && l.step == N_ALL);
        if (l.step == N_ALL) CHECK_CLOSE(l.loss_hist[N_ALL - 1], ref[N_ALL - 1], 1e-3, 0);
    }
    tt_state_free(&s), tt_state_free(&l);
}

TT_TEST(test_device_faults) {
    tt_status st;
    tt_train_config tc;
    train_config(&tc);
    tt_train_state r;
    CHECK(tt_state_init(&r, &CFG, &tc, &st) == TT_OK);
    int rc = run(&r, GPU, NULL, 0, 0, &st); /* the uninterrupted reference */
    CHECK(rc == TT_OK && r.step == N_ALL);
    if (rc || r.step != N_ALL) return;
    /* pipelined loop, saves at 2, 4, 6: the 4th step() is submitted while
     * step 3 runs. Lost device: step 3 finished on the device but cannot be
     * read: the checkpoint is the save at step 2. */
    fault_case("lost", 4, 2, "holds step 2, the last state downloaded before the fault; steps 3..3 are lost",
               r.loss_hist);
    /* device still readable: step 3 (submitted, not yet read) is recovered */
    fault_case("error", 4, 3, "saved the last completed step 3 (read back from the device)", r.loss_hist);
    /* lost right after the save at step 4 (nothing in flight): step 4, nothing lost */
    fault_case("lost", 5, 4, "holds step 4, the last state downloaded before the fault", r.loss_hist);
    tt_state_free(&r);
}

/* dropout: stop at N_FIRST, resume from the file on a fresh backend */
TT_TEST(test_resume_dropout) {
    tt_status st;
    tt_train_config tc;
    train_config(&tc);
    tc.dropout = 0.2f;
    char path[600];
    path_of(path, sizeof path, "dropout.safetensors");
    tt_train_state r, s0, s1, s2;
    memset(&s1, 0, sizeof s1), memset(&s2, 0, sizeof s2);
    CHECK(tt_state_init(&r, &CFG, &tc, &st) == TT_OK);
    CHECK(tt_state_init(&s0, &CFG, &tc, &st) == TT_OK);
    int rc = run(&r, GPU, NULL, 0, 0, &st);
    if (rc) fprintf(stderr, "  uninterrupted: %s\n", st.msg);
    CHECK(rc == TT_OK && r.step == N_ALL);
    CHECK(run(&s0, GPU, path, N_FIRST, 0, &st) == TT_OK && s0.step == N_FIRST);
    tt_backend *fresh = make_gpu_or_skip();
    CHECK(tt_checkpoint_load(path, &s1, &st) == TT_OK && s1.step == N_FIRST);
    CHECK(tt_checkpoint_load(path, &s2, &st) == TT_OK);
    CHECK(s1.tc.dropout == 0.2f);
    rc = run(&s1, fresh, NULL, 0, 0, &st);
    if (rc) fprintf(stderr, "  resumed: %s\n", st.msg);
    CHECK(rc == TT_OK && s1.step == N_ALL);
    s2.tc.dropout = 0.25f; /* other masks from step N_FIRST on */
    CHECK(run(&s2, fresh, NULL, 0, 0, &st) == TT_OK && s2.step == N_ALL);
    if (r.step == N_ALL && s1.step == N_ALL && s2.step == N_ALL) {
        int same = 1, other_same = 1;
        for (int i = 0; i < N_ALL; i++) same &= s1.loss_hist[i] == r.loss_hist[i];
        for (int i = N_FIRST; i < N_ALL; i++) other_same &= s2.loss_hist[i] == r.loss_hist[i];
        printf("  dropout 0.2: resumed at %d on a fresh backend: losses %s, weights %s; resumed with 0.25: %s\n",
               N_FIRST, same ? "bit-identical" : "DIFFER",
               memcmp(s1.params, r.params, r.layout.total * sizeof(float)) == 0 ? "bit-identical" : "DIFFER",
               other_same ? "the same (masks not seen!)" : "differs");
        CHECK(same);
        CHECK(memcmp(s1.params, r.params, r.layout.total * sizeof(float)) == 0);
        CHECK(!other_same);
    }
    tt_backend_destroy(fresh);
    tt_state_free(&r), tt_state_free(&s0), tt_state_free(&s1), tt_state_free(&s2);
}

/* LoRA (the tiny model's base frozen, adapters on every target): stop at
 * N_FIRST, resume on a fresh backend from the file (moments of the adapters
 * alone) and from the same file rewritten in the older form (zero moments
 * for every base tensor): losses, weights and moments bit for bit */
TT_TEST(test_resume_lora) {
    tt_status st;
    tt_train_config tc;
    train_config(&tc);
    tt_model_config c = CFG;
    c.lora_rank = 4, c.lora_targets = TT_LORA_ALL, c.lora_alpha = 8.0f;
    char path[2][600];
    path_of(path[0], sizeof path[0], "lora.safetensors");
    path_of(path[1], sizeof path[1], "lora_old.safetensors");
    tt_backend *a = tt_gtest_backend_or_skip(&c), *b = tt_gtest_backend_or_skip(&c);
    tt_train_state r, s0;
    CHECK(tt_state_init(&r, &c, &tc, &st) == TT_OK);
    CHECK(tt_state_init(&s0, &c, &tc, &st) == TT_OK);
    int rc = run(&r, a, NULL, 0, 0, &st);
    if (rc) fprintf(stderr, "  uninterrupted: %s\n", st.msg);
    CHECK(rc == TT_OK && r.step == N_ALL);
    CHECK(run(&s0, a, path[0], N_FIRST, 0, &st) == TT_OK && s0.step == N_FIRST);
    const int n_ad = r.layout.n_tensors - r.layout.n_base;
    CHECK(tt_test_count_tensors(path[0], "adam_m.", NULL) == n_ad && tt_test_count_tensors(path[0], "adam_v.", NULL) == n_ad);
    CHECK(tt_test_write_old_lora_checkpoint(path[0], path[1], 0.0f) == 0);
    const size_t mbytes = tt_layout_train_count(&r.layout) * sizeof(float);
    for (int form = 0; form < 2; form++) {
        tt_train_state s1;
        memset(&s1, 0, sizeof s1);
        CHECK(tt_checkpoint_load(path[form], &s1, &st) == TT_OK && s1.step == N_FIRST);
        rc = run(&s1, b, NULL, 0, 0, &st);
        if (rc) fprintf(stderr, "  resumed: %s\n", st.msg);
        CHECK(rc == TT_OK && s1.step == N_ALL);
        if (r.step == N_ALL && s1.step == N_ALL) {
            const int same = memcmp(s1.loss_hist, r.loss_hist, N_ALL * sizeof(float)) == 0 &&
                             memcmp(s1.params, r.params, r.layout.total * sizeof(float)) == 0 &&
                             memcmp(s1.m, r.m, mbytes) == 0 && memcmp(s1.v, r.v, mbytes) == 0;
            printf("  LoRA: resumed at %d on a fresh backend from the %s form: losses, weights, moments %s\n", N_FIRST,
                   form ? "older" : "current", same ? "bit-identical" : "DIFFER");
            CHECK(same);
        }
        tt_state_free(&s1);
    }
    remove(path[1]);
    tt_backend_destroy(a), tt_backend_destroy(b);
    tt_state_free(&r), tt_state_free(&s0);
}

int main(void) {
    const tt_preset *pr = tt_preset_find("tiny");
    if (!pr) return 1;
    CFG = pr->cfg;
    GPU = make_gpu_or_skip();
    tt_status st;
    if (tt_backend_cpu_create(&CFG, &(tt_backend_opts){.threads = 0}, &CPU, &st)) {
        fprintf(stderr, "cpu backend: %s\n", st.msg);
        return 1;
    }
    /* a generated text corpus of ~60 kB */
    snprintf(DIR_, sizeof DIR_, "%s", tt_test_tmpdir());
    char cpath[600];
    path_of(cpath, sizeof cpath, "text.txt");
    FILE *f = fopen(cpath, "w");
    if (!f) return 1;
    static const char *words[] = {"the", "cat", "sat", "on", "a", "mat", "and", "dog", "ran", "to", "see", "big", "red",
                                  "sun", "it", "was", "very", "warm", "today", "we", "go", "home", "quick", "brown"};
    for (int i = 0; i < 2500; i++)
        fprintf(f, "%s %s %s number %d.\n", words[i % 24], words[(i * 7 + 3) % 24], words[(i * 13 + 5) % 24], i);
    fclose(f);
    if (tt_corpus_load(cpath, CFG.ctx, &CORPUS, &st)) {
        fprintf(stderr, "corpus: %s\n", st.msg);
        return 1;
    }
    printf("tiny: webgpu on %s vs %s\n", GPU->desc.device, CPU->desc.device);
    RUN(test_gpu_to_cpu);
    RUN(test_cpu_to_gpu);
    RUN(test_device_faults);
    RUN(test_resume_dropout);
    RUN(test_resume_lora);
    tt_backend_destroy(GPU);
    tt_backend_destroy(CPU);
    tt_corpus_free(&CORPUS);
    return tt_test_summary();
}
