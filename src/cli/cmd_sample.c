/* cmd_sample.c — `tinytrain sample`: generation from a checkpoint (with --adapter, a peft LoRA folder loaded onto it; plain text or one JSON object); print_sample is shared with train. */
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
    OPT_ADAPTER_IN,
    {"prompt", O_PROMPT, 1, "text to continue (default: a new line)"},
    {"ids", O_IDS, 1, "the prompt as token ids, comma-separated (prints one JSON object of ids)"},
    {"logits", O_LOGITS, 0, "with --ids: print the logits of every prompt position too (the --backend's forward)"},
    {"backend", O_BACKEND, 1, "with --ids: run the forward on cpu or webgpu (greedy, no KV cache; default: the CPU sampler)"},
    {"temperature", O_TEMP, 1, "0 = greedy (default 0.8)"},
    {"top-k", O_TOPK, 1, "keep the k most likely tokens, 0 = all (default 40)"},
    {"top-p", O_TOPP, 1, "nucleus probability, 1 = off (default 0.95)"},
    {"tokens", O_TOKENS, 1, "tokens to generate: bytes for a byte-level model (default 500)"},
    {"seed", O_SEED, 1, "sampling seed (default 1337)"},
    {"threads", O_THREADS, 1, "CPU threads for generation"},
    {"json", O_JSON, 0, "print one JSON object"},
    {"help", O_HELP, 0, "this help"},
    {NULL, 0, 0, NULL}};


/* The sample's text: the bytes of each token as it comes; a BPE token may
 * end inside a UTF-8 character, so the bytes that may still be completed
 * wait for the next token (tt_utf8_complete) and are printed with it. */
typedef struct {
    int json;
    const tt_tokenizer *tok; /* NULL: byte-level (the token is the byte) */
    char *buf;               /* json: the whole text; else the bytes not printed yet */
    size_t n, cap, printed;
    size_t n_tokens;
} sample_sink;

static size_t tt_utf8_complete(const uint8_t *p, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint8_t c = p[i];
        size_t len = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 1;
        size_t k = 1;
        while (k < len && i + k < n && (p[i + k] & 0xC0) == 0x80) k++;
        if (k < len && i + k == n) return i; /* a character begun, not ended: wait */
        i += k == len ? len : 1;             /* a whole character, or a byte that cannot start or end one */
    }
    return n;
}

static int sink_put(sample_sink *ss, const uint8_t *b, size_t n) {
    if (ss->n + n > ss->cap) {
        size_t cap = ss->cap ? ss->cap : 1024;
        while (cap < ss->n + n) cap *= 2;
        char *p = realloc(ss->buf, cap);
        if (!p) return 1;
        ss->buf = p;
        ss->cap = cap;
    }
    memcpy(ss->buf + ss->n, b, n);
    ss->n += n;
    return 0;
}

/* plain output: print what completed since the last token (all of it at the end) */
static void sink_flush(sample_sink *ss, int all) {
    size_t k = all ? ss->n - ss->printed
                   : tt_utf8_complete((const uint8_t *)ss->buf + ss->printed, ss->n - ss->printed);
    if (!k) return;
    fwrite(ss->buf + ss->printed, 1, k, stdout);
    fflush(stdout);
    ss->printed += k;
    if (ss->printed == ss->n) ss->n = ss->printed = 0;
}

int on_token(void *user, tt_token tok) {
    sample_sink *ss = user;
    ss->n_tokens++;
    uint8_t byte = (uint8_t)tok;
    const uint8_t *b = &byte;
    size_t n = 1;
    if (ss->tok) b = tt_tokenizer_token(ss->tok, (int32_t)tok, &n);
    if (!b) n = 0; /* an id the tokenizer does not use: no text */
    if (n && sink_put(ss, b, n)) return 1;
    if (!ss->json) sink_flush(ss, !ss->tok);
    return 0;
}

/* generate and print a sample (plain or JSON): the prompt encoded with the
 * model's tokenizer (tok NULL or byte: one token per byte), the tokens
 * decoded as they come */
int print_sample(const tt_model_config *cfg, const float *params, const tt_tokenizer *tok, const char *prompt,
                 const tt_sample_config *sc, int threads, int json) {
    tt_status st;
    tt_status_clear(&st);
    int bpe = tok && tt_tokenizer_kind(tok) == TT_TOK_BPE;
    if (!bpe && cfg->vocab != TT_VOCAB)
        return error_line(EXIT_USAGE, "sample: text needs the model's tokenizer; this model has a vocabulary of %d, not bytes",
                          cfg->vocab);
    if (bpe && tt_tokenizer_vocab_size(tok) != cfg->vocab)
        return error_line(EXIT_FAIL, "sample: the tokenizer has %d ids, the model a vocabulary of %d",
                          (int)tt_tokenizer_vocab_size(tok), cfg->vocab);
    tt_sampler *smp = NULL;
    size_t np = prompt ? strlen(prompt) : 0;
    tt_token *ids = NULL;
    size_t n_ids = 0;
    if (bpe) {
        tt_tok_ids v = {0};
        /* an empty prompt starts a new document: <|endoftext|> (else a line end) */
        const char *text = np ? prompt : tt_tokenizer_eot(tok) >= 0 ? "" : "\n";
        if (!np && tt_tokenizer_eot(tok) >= 0) {
            int32_t e = tt_tokenizer_eot(tok);
            v.ids = malloc(sizeof *v.ids);
            if (v.ids) v.ids[0] = e, v.n = v.cap = 1;
            else tt_fail(&st, TT_ENOMEM, "out of memory");
        } else {
            tt_tokenizer_encode((tt_tokenizer *)tok, text, strlen(text), &v, &st);
        }
        if (st.code) {
            tt_tok_ids_free(&v);
            return error_line(EXIT_FAIL, "sample: %s", st.msg);
        }
        ids = malloc((v.n ? v.n : 1) * sizeof *ids);
        for (size_t i = 0; ids && i < v.n; i++) ids[i] = (tt_token)v.ids[i];
        n_ids = v.n;
        tt_tok_ids_free(&v);
    } else {
        ids = malloc((np ? np : 1) * sizeof *ids);
        for (size_t i = 0; ids && i < np; i++) ids[i] = (uint8_t)prompt[i]; /* byte-level: one token per byte */
        n_ids = np;
    }
    if (!ids) return error_line(EXIT_FAIL, "out of memory");
    if (tt_sampler_create(cfg, params, threads, &smp, &st)) {
        free(ids);
        return error_line(EXIT_FAIL, "sampler: %s", st.msg);
    }
    sample_sink ss = {json, bpe ? tok : NULL, NULL, 0, 0, 0, 0};
    if (!json && np) {
        fputs(prompt, stdout);
        fflush(stdout);
    }
    int rc = tt_generate(smp, ids, n_ids, sc, on_token, &ss, &st);
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
        printf(",\"tokens\":%zu,\"seed\":%llu,\"temperature\":", ss.n_tokens, (unsigned long long)sc->seed);
        json_num(stdout, sc->temperature);
        printf(",\"top_k\":%d,\"top_p\":", sc->top_k);
        json_num(stdout, sc->top_p);
        fputs("}\n", stdout);
    } else {
        sink_flush(&ss, 1);
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
    int rc = command_args("sample", "Generate text from a checkpoint with the model's tokenizer (streams text as it comes).", sample_opts, argc, argv, &o);
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
    tt_runtok rt;
    memset(&rt, 0, sizeof rt);
    /* ids need no tokenizer; text needs the model's (beside its checkpoint) */
    if ((rc = o.ids ? load_ckpt(o.ckpt ? o.ckpt : default_ckpt(), o.adapter, &s)
               : load_model(o.ckpt ? o.ckpt : default_ckpt(), o.adapter, &s, &rt)))
        return rc;
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
    rc = print_sample(&s.cfg, s.params, rt.tok, o.prompt, &sc, sampler_threads(&s.cfg, &o), o.json);
    tt_state_free(&s);
    tt_runtok_free(&rt);
    return rc;
}

