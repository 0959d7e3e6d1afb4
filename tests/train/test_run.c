/* test_run.c — the run setup (train/run.h) that the CLI and the web API
 * share: a fresh run; resume from a checkpoint in memory, a file and a run
 * folder (the same state, the new length and its note, a finished run, the
 * text's identity and "go on anyway", options that differ from the
 * checkpoint, a bad option as a usage error, a Hugging Face folder refused);
 * init-from (weights, hash and name recorded, step 0, LoRA adapters on the
 * source as a frozen base, a shape asked for that differs refused); a text
 * too short for the model; the backend; the run's tokenizer (fresh, resume,
 * init-from, refusals). */
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "train/checkpoint.h"
#include "train/hf.h"
#include "rng.h"
#include "train/run.h"
#include "train/trainer.h"
#include "tok_test.h"
#include "tt_test.h"

/* words from a small list; seed picks the text */
static void make_text(tt_corpus *c, uint64_t seed, size_t len) {
    static const char *words[] = {"the", "cat", "sat", "on", "a", "mat", "and", "dog", "ran", "to", "see", "big"};
    char *t = malloc(len + 16);
    size_t n = 0;
    for (uint64_t i = 0; n < len; i++) {
        const char *w = words[tt_rand_below(seed, TT_STREAM_TEST, i, sizeof words / sizeof words[0])];
        size_t l = strlen(w);
        memcpy(t + n, w, l);
        n += l;
        t[n++] = i % 9 == 8 ? '\n' : ' ';
    }
    tt_status st;
    tt_status_clear(&st);
    CHECK_MSG(tt_corpus_from_memory((const uint8_t *)t, n, 8, c, &st) == TT_OK, "%s", st.msg);
    free(t);
}

static void options(tt_options *o, const char *text) {
    tt_status st;
    tt_status_clear(&st);
    tt_options_init(o);
    o->run.backend = 1; /* cpu */
    o->run.threads = 1;
    CHECK_MSG(tt_options_parse(o, text, &st) == TT_OK, "%s", st.msg);
}

/* plan + open (+ backend when be); returns the first failing status */
static int setup(tt_run *r, const char *opts, const tt_run_source *src, const tt_corpus *c, int be, tt_status *st) {
    tt_options o;
    options(&o, opts);
    tt_status_clear(st);
    int rc = tt_run_plan(r, &o, src, st);
    if (!rc) rc = tt_run_open(r, c, st);
    if (!rc && be && (!r->done || src->open_done)) rc = tt_run_make_backend(r, st);
    return rc;
}

/* a tiny run of 3 steps on c, saved to path; its bytes in *buf */
static void make_checkpoint(const tt_corpus *c, const char *path, uint8_t **buf, size_t *len) {
    tt_run r;
    tt_status st;
    tt_run_source src = {.kind = TT_RUN_FRESH};
    int rc = setup(&r, "preset=tiny steps=3 eval-every=0 eval-batches=1 seed=7", &src, c, 1, &st);
    CHECK_MSG(rc == TT_OK, "%s", st.msg);
    if (rc) return;
    tt_trainer t;
    memset(&t, 0, sizeof t);
    t.s = &r.s;
    t.corpus = c;
    t.be = r.be;
    t.ckpt_path = path;
    CHECK_MSG(tt_train_run(&t, NULL, &st) == TT_OK, "%s", st.msg);
    CHECK(r.s.step == 3);
    tt_run_close(&r);
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    if (!f) return;
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    *buf = malloc(*len);
    CHECK(fread(*buf, 1, *len, f) == *len);
    fclose(f);
}

TT_TEST(test_run_sources) {
    tt_corpus a, b, tiny;
    make_text(&a, 1, 20000);
    make_text(&b, 2, 20000);
    make_text(&tiny, 3, 200); /* a validation split shorter than the tiny preset's context */
    char dir[512], path[700], run_dir[600];
    snprintf(dir, sizeof dir, "%s", tt_test_tmpdir());
    snprintf(run_dir, sizeof run_dir, "%s/run", dir);
    CHECK(mkdir(run_dir, 0755) == 0);
    snprintf(path, sizeof path, "%s/checkpoint.safetensors", run_dir);
    uint8_t *ck = NULL;
    size_t ck_len = 0;
    make_checkpoint(&a, path, &ck, &ck_len);
    if (!ck) return;
    tt_train_state saved;
    tt_status st;
    tt_status_clear(&st);
    CHECK(tt_checkpoint_load_mem(ck, ck_len, &saved, &st) == TT_OK);
    tt_run r;

    /* fresh: the options' model, step 0, a backend of that model */
    tt_run_source fresh = {.kind = TT_RUN_FRESH};
    CHECK_MSG(setup(&r, "preset=tiny steps=5", &fresh, &a, 1, &st) == TT_OK, "%s", st.msg);
    CHECK(r.preset && strcmp(r.preset, "tiny") == 0 && r.s.step == 0 && r.s.tc.steps == 5 && r.be && r.be->cfg.d_model == 48);
    tt_run_close(&r);
    CHECK(setup(&r, "preset=tiny", &fresh, &tiny, 0, &st) != TT_OK && strstr(st.msg, "too short"));
    tt_run_close(&r);
    CHECK(setup(&r, "preset=tiny steps=4 warmup=9", &fresh, &a, 0, &st) != TT_OK && r.bad_options);
    tt_run_close(&r);

    /* resume from memory: the checkpoint's state; a longer run says what its schedule becomes */
    tt_run_source res = {.kind = TT_RUN_RESUME, .bytes = ck, .len = ck_len};
    CHECK_MSG(setup(&r, "steps=6", &res, &a, 1, &st) == TT_OK, "%s", st.msg);
    CHECK(!r.done && r.s.step == 3 && r.s.tc.steps == 6 && r.s.tc.seed == 7 && r.s.tc.lr == saved.tc.lr);
    CHECK(memcmp(r.s.params, saved.params, saved.layout.total * sizeof(float)) == 0);
    CHECK(memcmp(r.s.m, saved.m, saved.layout.total * sizeof(float)) == 0);
    CHECK_MSG(strstr(r.note[1], "from 3 to 6 steps, which stretches") != NULL, "%s", r.note[1]);
    CHECK(r.be != NULL);
    tt_run_close(&r);
    /* at its last step: done, nothing built; unless the source asks for it */
    CHECK(setup(&r, "", &res, &a, 1, &st) == TT_OK && r.done && !r.be);
    tt_run_close(&r);
    res.open_done = 1;
    CHECK(setup(&r, "", &res, &a, 1, &st) == TT_OK && r.done && r.be && r.s.step == 3);
    tt_run_close(&r);
    res.open_done = 0;
    /* another text: a mismatch naming both; go on anyway when asked */
    CHECK(setup(&r, "steps=6", &res, &b, 0, &st) == TT_EMISMATCH);
    CHECK_MSG(strstr(st.msg, "corpus mismatch on resume: the checkpoint was trained on another text") != NULL, "%s", st.msg);
    char want[64];
    snprintf(want, sizeof want, "hash %016llx", (unsigned long long)b.hash);
    CHECK_MSG(strstr(st.msg, want) != NULL, "%s", st.msg);
    tt_run_close(&r);
    res.any_text = 1;
    CHECK(setup(&r, "steps=6", &res, &b, 0, &st) == TT_OK && r.s.step == 3);
    tt_run_close(&r);
    res.any_text = 0;
    /* the model and hyper-parameters are the checkpoint's */
    CHECK(setup(&r, "steps=6 lr=0.1", &res, &a, 0, &st) == TT_EMISMATCH && strstr(st.msg, "--lr 0.1"));
    tt_run_close(&r);
    CHECK(setup(&r, "steps=6 d-model=96 heads=3", &res, &a, 0, &st) == TT_EMISMATCH &&
          strstr(st.msg, "config mismatch on resume: checkpoint has layers 2, d_model 48"));
    tt_run_close(&r);
    CHECK(setup(&r, "steps=6 lora-rank=2", &res, &a, 0, &st) == TT_EMISMATCH && strstr(st.msg, "lora-rank"));
    tt_run_close(&r);
    CHECK(setup(&r, "steps=4 warmup=9", &res, &a, 0, &st) != TT_OK && r.bad_options);
    tt_run_close(&r);

    /* resume from a file and from its run folder: the same state */
    tt_run_source resf = {.kind = TT_RUN_RESUME, .path = path};
    CHECK_MSG(setup(&r, "steps=6", &resf, &a, 0, &st) == TT_OK && r.s.step == 3, "%s", st.msg);
    tt_run_close(&r);
    resf.path = run_dir;
    CHECK_MSG(setup(&r, "steps=6", &resf, &a, 0, &st) == TT_OK && r.s.step == 3, "%s", st.msg);
    tt_run_close(&r);
    /* a Hugging Face folder holds weights only: init-from, not resume */
    char hf[600];
    snprintf(hf, sizeof hf, "%s/hf", dir);
    const tt_hf_generation gen = {1.0f, 40, 0.9f};
    CHECK(tt_hf_export_dir(hf, &saved, &gen, 0, &st) == TT_OK);
    resf.path = hf;
    CHECK(setup(&r, "steps=6", &resf, &a, 0, &st) != TT_OK && strstr(st.msg, "Hugging Face folder"));
    tt_run_close(&r);

    /* init-from memory: the source's weights as a LoRA base, step 0, a fresh schedule, the source recorded */
    tt_run_source init = {.kind = TT_RUN_INIT_FROM, .bytes = ck, .len = ck_len, .name = "base.safetensors"};
    CHECK_MSG(setup(&r, "steps=5 lora-rank=2 batch=4", &init, &b, 1, &st) == TT_OK, "%s", st.msg);
    CHECK(r.s.step == 0 && r.s.tc.steps == 5 && r.s.cfg.lora_rank == 2 && r.s.cfg.batch == 4 && r.s.cfg.d_model == 48);
    CHECK(memcmp(r.s.params, saved.params, r.s.layout.base_total * sizeof(float)) == 0);
    CHECK(strcmp(r.s.init_from, "base.safetensors") == 0);
    CHECK(r.s.init_hash == tt_hf_hash(saved.params, saved.layout.base_total));
    tt_run_close(&r);
    /* from the Hugging Face folder: the same weights, the same hash */
    tt_run_source inith = {.kind = TT_RUN_INIT_FROM, .path = hf};
    CHECK_MSG(setup(&r, "steps=5", &inith, &b, 0, &st) == TT_OK, "%s", st.msg);
    CHECK(r.s.init_hash == tt_hf_hash(saved.params, saved.layout.base_total) && r.s.init_from[0] == '/');
    tt_run_close(&r);
    /* the shape asked for must be the source's */
    CHECK(setup(&r, "preset=small", &init, &b, 0, &st) == TT_EMISMATCH);
    CHECK_MSG(strstr(st.msg, "init-from: base.safetensors has layers 2, the run asks for 3") != NULL, "%s", st.msg);
    tt_run_close(&r);
    CHECK(setup(&r, "ctx=16", &init, &b, 0, &st) == TT_EMISMATCH && strstr(st.msg, "ctx 32, the run asks for 16"));
    tt_run_close(&r);
    /* a damaged source: one line, nothing built */
    tt_run_source bad = {.kind = TT_RUN_INIT_FROM, .bytes = ck, .len = 40};
    CHECK(setup(&r, "", &bad, &b, 0, &st) != TT_OK && strncmp(st.msg, "init-from: ", 11) == 0 && !r.s.params);
    tt_run_close(&r);

    tt_state_free(&saved);
    free(ck);
    tt_corpus_free(&a);
    tt_corpus_free(&b);
    tt_corpus_free(&tiny);
}

/* the run's tokenizer: a fresh run takes the option's (vocabulary = the tokenizer's), the text must be
 * in its tokens, the checkpoint names it and resume finds it beside the checkpoint; another one, or a
 * BPE checkpoint in memory without its files, is refused */
TT_TEST(test_run_tokenizer) {
    static const pair_s merges[] = {{"t", "h"}, {"th", "e"}, {" ", "the"}, {"a", "n"}, {"s", "a"}, {"sa", "t"}};
    const char *dir = tt_test_tmpdir();
    char tdir[4200], rdir[4200], text[4200], ckpt[4400], opts[4400];
    snprintf(tdir, sizeof tdir, "%s/tok", dir);
    snprintf(rdir, sizeof rdir, "%s/run", dir);
    snprintf(text, sizeof text, "%s/text.txt", dir);
    snprintf(ckpt, sizeof ckpt, "%s/checkpoint.safetensors", rdir);
    CHECK(mkdir(tdir, 0777) == 0 && mkdir(rdir, 0777) == 0);
    char *json = make_tokenizer_json(merges, 6, 1, 0);
    char p[4400];
    snprintf(p, sizeof p, "%s/tokenizer.json", tdir);
    FILE *f = fopen(p, "wb");
    CHECK(f != NULL);
    if (!f) return;
    fputs(json, f);
    fclose(f);
    free(json);
    tt_corpus bytes;
    make_text(&bytes, 5, 20000);
    f = fopen(text, "wb");
    fwrite(bytes.bytes, 1, bytes.n, f);
    fclose(f);

    tt_run r;
    tt_status st;
    tt_run_source fresh = {.kind = TT_RUN_FRESH};
    snprintf(opts, sizeof opts, "preset=tiny steps=3 eval-every=0 eval-batches=1 tokenizer=%s", tdir);
    CHECK(setup(&r, opts, &fresh, &bytes, 0, &st) == TT_EINVAL);
    CHECK_MSG(strstr(st.msg, "another tokenizer") != NULL, "%s", st.msg);
    CHECK(r.cfg.vocab == 256 + 6 + 1 && tt_tokenizer_kind(r.tok.tok) == TT_TOK_BPE);
    tt_corpus c;
    CHECK_MSG(tt_corpus_open(text, r.tok.tok, rdir, r.cfg.ctx, NULL, NULL, &c, &st) == TT_OK, "%s", st.msg);
    CHECK_MSG(tt_run_open(&r, &c, &st) == TT_OK, "%s", st.msg);
    CHECK(r.s.tok_kind == 1 && r.s.tok_hash == tt_tokenizer_hash(r.tok.tok) && r.s.cfg.vocab == 263);
    CHECK(tt_runtok_save(&r.tok, rdir, &st) == TT_OK);
    r.s.corpus_hash = c.hash; /* as the loop records it */
    r.s.corpus_bytes = c.n;
    CHECK(tt_checkpoint_save(ckpt, &r.s, &st) == TT_OK);
    uint64_t h = r.s.tok_hash;
    tt_run_close(&r);

    /* resume: from the run folder and the file, the tokenizer beside it */
    tt_run_source res = {.kind = TT_RUN_RESUME, .path = rdir};
    CHECK_MSG(setup(&r, "steps=5", &res, &c, 0, &st) == TT_OK, "%s", st.msg);
    CHECK(tt_tokenizer_hash(r.tok.tok) == h && r.s.tok_kind == 1);
    tt_run_close(&r);
    res.path = ckpt;
    CHECK_MSG(setup(&r, "steps=5", &res, &c, 0, &st) == TT_OK, "%s", st.msg);
    tt_run_close(&r);
    CHECK(setup(&r, "steps=5 tokenizer=byte", &res, &c, 0, &st) == TT_EMISMATCH);
    CHECK_MSG(strstr(st.msg, "tokenizer mismatch on resume") != NULL, "%s", st.msg);
    tt_run_close(&r);
    /* in memory: the files are not there */
    f = fopen(ckpt, "rb");
    fseek(f, 0, SEEK_END);
    size_t len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(len);
    CHECK(fread(buf, 1, len, f) == len);
    fclose(f);
    tt_run_source mem = {.kind = TT_RUN_RESUME, .bytes = buf, .len = len};
    CHECK(setup(&r, "steps=5", &mem, &c, 0, &st) == TT_EINVAL);
    CHECK_MSG(strstr(st.msg, "run folder") != NULL, "%s", st.msg);
    tt_run_close(&r);
    /* init-from the run: its tokenizer comes along; a byte text is refused */
    tt_run_source init = {.kind = TT_RUN_INIT_FROM, .path = rdir};
    CHECK_MSG(setup(&r, "steps=2", &init, &c, 0, &st) == TT_OK, "%s", st.msg);
    CHECK_MSG(tt_tokenizer_hash(r.tok.tok) == h && r.s.tok_kind == 1 && r.s.tok_hash == h, "%d %d %llx %llx", (int)tt_tokenizer_kind(r.tok.tok), r.s.tok_kind, (unsigned long long)r.s.tok_hash, (unsigned long long)h);
    tt_run_close(&r);
    CHECK(setup(&r, "steps=2", &init, &bytes, 0, &st) == TT_EINVAL);
    tt_run_close(&r);
    free(buf);
    tt_corpus_free(&c);
    tt_corpus_free(&bytes);
}

int main(void) {
    RUN(test_run_sources);
    RUN(test_run_tokenizer);
    return tt_test_summary();
}
