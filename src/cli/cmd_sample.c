/* cmd_sample.c — `tinytrain sample`: generation from a checkpoint (plain text or one JSON object); print_sample is shared with train. */
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

static const opt_def sample_opts[] = {
    {"ckpt", O_CKPT, 1, "checkpoint (default runs/" DEFAULT_PRESET "/" CKPT_NAME ")"},
    {"prompt", O_PROMPT, 1, "text to continue (default: a new line)"},
    {"temperature", O_TEMP, 1, "0 = greedy (default 0.8)"},
    {"top-k", O_TOPK, 1, "keep the k most likely bytes, 0 = all (default 40)"},
    {"top-p", O_TOPP, 1, "nucleus probability, 1 = off (default 0.95)"},
    {"tokens", O_TOKENS, 1, "bytes to generate (default 500)"},
    {"seed", O_SEED, 1, "sampling seed (default 1337)"},
    {"threads", O_THREADS, 1, "CPU threads for generation"},
    {"json", O_JSON, 0, "print one JSON object"},
    {"help", O_HELP, 0, "this help"},
    {NULL, 0, 0, NULL}};


typedef struct {
    int json;
    char *buf;
    size_t n, cap;
} sample_sink;

int on_token(void *user, tt_token tok) {
    sample_sink *ss = user;
    if (ss->json) {
        if (ss->n == ss->cap) {
            size_t cap = ss->cap ? ss->cap * 2 : 1024;
            char *p = realloc(ss->buf, cap);
            if (!p) return 1;
            ss->buf = p;
            ss->cap = cap;
        }
        ss->buf[ss->n++] = (char)tok;
    } else {
        fputc((int)tok, stdout);
        fflush(stdout);
    }
    return 0;
}

/* generate and print a sample (plain or JSON) */
int print_sample(const tt_model_config *cfg, const float *params, const char *prompt, const tt_sample_config *sc,
                        int threads, int json) {
    tt_status st;
    tt_status_clear(&st);
    if (cfg->vocab != TT_VOCAB)
        return error_line(EXIT_USAGE, "sample: text needs the model's tokenizer; this model has a vocabulary of %d, not bytes",
                          cfg->vocab);
    tt_sampler *smp = NULL;
    size_t np = prompt ? strlen(prompt) : 0;
    tt_token *ids = malloc((np ? np : 1) * sizeof *ids);
    if (!ids) return error_line(EXIT_FAIL, "out of memory");
    for (size_t i = 0; i < np; i++) ids[i] = (uint8_t)prompt[i]; /* byte-level: one token per byte */
    if (tt_sampler_create(cfg, params, threads, &smp, &st)) {
        free(ids);
        return error_line(EXIT_FAIL, "sampler: %s", st.msg);
    }
    sample_sink ss = {json, NULL, 0, 0};
    if (!json && np) {
        fputs(prompt, stdout);
        fflush(stdout);
    }
    int rc = tt_generate(smp, ids, np, sc, on_token, &ss, &st);
    tt_sampler_destroy(smp);
    free(ids);
    if (rc) {
        free(ss.buf);
        return error_line(EXIT_FAIL, "sampling: %s", st.msg);
    }
    if (json) {
        fputs("{\"event\":\"sample\",\"prompt\":", stdout);
        json_str(stdout, prompt ? prompt : "", np);
        fputs(",\"text\":", stdout);
        json_str(stdout, ss.buf ? ss.buf : "", ss.n);
        printf(",\"tokens\":%zu,\"seed\":%llu,\"temperature\":", ss.n, (unsigned long long)sc->seed);
        json_num(stdout, sc->temperature);
        printf(",\"top_k\":%d,\"top_p\":", sc->top_k);
        json_num(stdout, sc->top_p);
        fputs("}\n", stdout);
    } else {
        fputc('\n', stdout);
    }
    fflush(stdout);
    free(ss.buf);
    return 0;
}

int sampler_threads(const tt_model_config *cfg, const opts *o) {
    if (o->set[O_THREADS]) return o->threads;
    return cfg->d_model >= 256 ? TT_MIN(tt_default_threads(), 8) : 1;
}

const char *default_ckpt(void) { return "runs/" DEFAULT_PRESET "/" CKPT_NAME; }

int cmd_sample(int argc, char **argv) {
    opts o;
    int rc = command_args("sample", "Generate text from a checkpoint (streams bytes as they come).", sample_opts, argc, argv, &o);
    if (rc) return rc < 0 ? 0 : rc;
    tt_sample_config sc;
    tt_sample_config_default(&sc);
    if (o.set[O_TEMP]) sc.temperature = o.temperature;
    if (o.set[O_TOPK]) sc.top_k = o.top_k;
    if (o.set[O_TOPP]) sc.top_p = o.top_p;
    if (o.set[O_TOKENS]) sc.max_tokens = o.tokens;
    if (o.set[O_SEED]) sc.seed = o.seed;
    tt_status st;
    tt_status_clear(&st);
    if (tt_sample_config_validate(&sc, &st)) return error_line(EXIT_USAGE, "%s", st.msg);
    tt_train_state s;
    memset(&s, 0, sizeof s);
    if ((rc = load_ckpt(o.ckpt ? o.ckpt : default_ckpt(), &s))) return rc;
    rc = print_sample(&s.cfg, s.params, o.prompt, &sc, sampler_threads(&s.cfg, &o), o.json);
    tt_state_free(&s);
    return rc;
}

