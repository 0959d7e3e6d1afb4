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

#include "engine/inspect.h"

static const opt_def sample_opts[] = {
    {"ckpt", O_CKPT, 1, "checkpoint (default runs/" DEFAULT_PRESET "/" CKPT_NAME ")"},
    {"prompt", O_PROMPT, 1, "text to continue (default: a new line)"},
    {"ids", O_IDS, 1, "the prompt as token ids, comma-separated (prints one JSON object of ids)"},
    {"logits", O_LOGITS, 0, "with --ids: print the logits of every prompt position too (the --backend's forward)"},
    {"backend", O_BACKEND, 1, "with --ids: run the forward on cpu or webgpu (greedy, no KV cache; default: the CPU sampler)"},
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

/* --ids: token ids "1,2,3", each below vocab (*out malloc'd) */
static int parse_ids(const char *s, int vocab, tt_token **out, size_t *n) {
    size_t cap = 1;
    for (const char *p = s; *p; p++) cap += *p == ',';
    tt_token *v = malloc(cap * sizeof *v);
    if (!v) return error_line(EXIT_FAIL, "out of memory");
    size_t k = 0;
    const char *p = s;
    for (;;) {
        char *end = NULL;
        errno = 0;
        unsigned long x = *p >= '0' && *p <= '9' ? strtoul(p, &end, 10) : 0;
        if (!end || errno || (*end && *end != ',') || x >= (unsigned long)vocab) {
            free(v);
            return error_line(EXIT_USAGE, "--ids: '%.40s' is not a list of token ids in 0..%d separated by commas", s, vocab - 1);
        }
        v[k++] = (tt_token)x;
        if (!*end) break;
        p = end + 1;
    }
    *out = v;
    *n = k;
    return 0;
}

static void json_ids(const char *key, const tt_token *ids, size_t n) {
    printf(",\"%s\":[", key);
    for (size_t i = 0; i < n; i++) printf("%s%u", i ? "," : "", (unsigned)ids[i]);
    putchar(']');
}

typedef struct {
    tt_token *ids;
    size_t n, cap;
} id_sink;

static int on_id(void *user, tt_token tok) {
    id_sink *s = user;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 256;
        tt_token *p = realloc(s->ids, cap * sizeof *p);
        if (!p) return 1;
        s->ids = p, s->cap = cap;
    }
    s->ids[s->n++] = tok;
    return 0;
}

/* --ids on a backend: its forward (the inspect entry: the stream after the
 * last block) on the window (the last ctx tokens), the logits of a row in
 * double on the host (tt_logits_of_row), greedy argmax (lowest id on ties)
 * for each generated token by running the forward again. The backend's
 * model is the checkpoint's with ctx cut to the longest window used (wpe's
 * first rows: the same model on those positions, a smaller plan). */
static int ids_on_backend(const opts *o, const tt_train_state *s, const tt_token *prompt, size_t np, int64_t n_gen) {
    const tt_model_config *cfg = &s->cfg;
    const int C = cfg->d_model, L = cfg->n_layer, V = cfg->vocab;
    size_t total = np + (size_t)n_gen;
    const int T = total < (size_t)cfg->ctx ? (int)total : cfg->ctx;
    tt_model_config one = *cfg;
    one.batch = 1;
    one.ctx = T;
    /* the parameters of `one`: wte, the first T rows of wpe, then the rest as they are (config.h's layout) */
    const size_t wte_n = (size_t)V * C, rest = s->layout.total - wte_n - (size_t)cfg->ctx * C;
    float *p1 = malloc((wte_n + (size_t)T * C + rest) * sizeof *p1);
    if (!p1) return error_line(EXIT_FAIL, "out of memory");
    memcpy(p1, s->params, (wte_n + (size_t)T * C) * sizeof *p1);
    memcpy(p1 + wte_n + (size_t)T * C, s->params + wte_n + (size_t)cfg->ctx * C, rest * sizeof *p1);
    tt_backend *be = NULL;
    tt_backend_opts bo = {.threads = o->set[O_THREADS] ? o->threads : 0};
    int rc = make_backend(o->backend ? o->backend : "cpu", &one, &bo, 1, &be);
    if (rc) {
        free(p1);
        return rc;
    }
    tt_status st;
    tt_status_clear(&st);
    size_t nrow = (size_t)T * C;
    tt_token *all = malloc(total * sizeof *all);
    float *resid = malloc(((size_t)L + 1) * nrow * sizeof(float)), *q = malloc((size_t)L * nrow * sizeof(float) + 4),
          *k = malloc((size_t)L * nrow * sizeof(float) + 4);
    double *x = malloc((size_t)C * sizeof(double)), *lg = malloc((size_t)V * sizeof(double));
    if (!all || !resid || !q || !k || !x || !lg) rc = error_line(EXIT_FAIL, "out of memory");
    if (!rc && be->vt->set_state(be, p1, NULL, NULL, &st)) rc = error_line(EXIT_FAIL, "%s", st.msg);
    if (!rc && !be->vt->inspect) rc = error_line(EXIT_FAIL, "the %s backend cannot run this forward", be->desc.name);
    if (rc) goto out;
    memcpy(all, prompt, np * sizeof *all);
    printf("{\"backend\":\"%s\",\"device\":", be->desc.name);
    json_str(stdout, be->desc.device, strlen(be->desc.device));
    json_ids("ids", prompt, np);
    for (size_t len = np; len == np || len < total; len++) { /* the forward on all[len - w .. len) */
        const int w = (int)(len < (size_t)T ? len : (size_t)T);
        const tt_token *win = all + len - w;
        if (be->vt->inspect(be, win, w, resid, q, k, &st)) {
            fputs("}\n", stdout);
            rc = error_line(EXIT_FAIL, "forward: %s", st.msg);
            goto out;
        }
        const float *last = resid + (size_t)L * w * C; /* the stream after the last block, (w, C) */
        if (len == np && o->logits) {
            fputs(",\"logits\":[", stdout);
            for (int t = 0; t < w; t++) {
                tt_logits_of_row(cfg, &s->layout, s->params, last + (size_t)t * C, x, lg);
                putchar(t ? ',' : '[');
                if (t) putchar('[');
                for (int v = 0; v < V; v++) printf("%s%.9g", v ? "," : "", lg[v]);
                putchar(']');
            }
            putchar(']');
            if (w < (int)np) printf(",\"logits_from\":%d", (int)np - w); /* the window: the last ctx positions */
        }
        if (len == total) break; /* no tokens to generate */
        tt_logits_of_row(cfg, &s->layout, s->params, last + (size_t)(w - 1) * C, x, lg);
        int best = 0;
        for (int v = 1; v < V; v++)
            if (lg[v] > lg[best]) best = v;
        all[len] = (tt_token)best;
    }
    json_ids("generated", all + np, (size_t)n_gen);
    fputs("}\n", stdout);
out:
    tt_backend_destroy(be);
    free(all), free(resid), free(q), free(k), free(x), free(lg), free(p1);
    return rc;
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
    if (o.ids && o.prompt) return error_line(EXIT_USAGE, "--ids and --prompt both give the prompt: pass one");
    if ((o.logits || o.backend) && !o.ids) return error_line(EXIT_USAGE, "--logits and --backend go with --ids");
    if (o.backend && sc.max_tokens > 0 && o.set[O_TEMP] && sc.temperature > 0.0f)
        return error_line(EXIT_USAGE, "generation on --backend is greedy: pass --temperature 0 (or leave --backend out)");
    if ((rc = load_ckpt(o.ckpt ? o.ckpt : default_ckpt(), &s))) return rc;
    if (o.ids) {
        tt_token *ids = NULL;
        size_t n = 0;
        if (!(rc = parse_ids(o.ids, s.cfg.vocab, &ids, &n))) {
            if (o.backend || o.logits) {
                rc = ids_on_backend(&o, &s, ids, n, sc.max_tokens);
            } else { /* the CPU sampler (KV cache), with the sampling options */
                tt_sampler *smp = NULL;
                id_sink out = {NULL, 0, 0};
                if (tt_sampler_create(&s.cfg, s.params, sampler_threads(&s.cfg, &o), &smp, &st) ||
                    tt_generate(smp, ids, n, &sc, on_id, &out, &st))
                    rc = error_line(EXIT_FAIL, "sampling: %s", st.msg);
                else {
                    printf("{\"backend\":\"cpu\"");
                    json_ids("ids", ids, n);
                    json_ids("generated", out.ids, out.n);
                    fputs("}\n", stdout);
                }
                tt_sampler_destroy(smp);
                free(out.ids);
            }
            free(ids);
        }
        tt_state_free(&s);
        return rc;
    }
    rc = print_sample(&s.cfg, s.params, o.prompt, &sc, sampler_threads(&s.cfg, &o), o.json);
    tt_state_free(&s);
    return rc;
}

