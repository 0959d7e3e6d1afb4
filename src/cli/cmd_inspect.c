/* cmd_inspect.c — `tinytrain inspect RUN --prompt TEXT`: look inside a
 * trained model for one prompt (src/engine/inspect.h): the next-byte
 * probabilities at each position, every head's attention map and the logit
 * lens, as one JSON object (--json) or a short summary. RUN is a run folder
 * (its checkpoint.safetensors) or a checkpoint file; --adapter DIR loads a
 * peft LoRA folder onto it. The prompt is used as
 * given: an empty prompt or one longer than the model inspects (its context,
 * at most 128 bytes, TT_INSPECT_MAX_T) is refused with one line, never cut. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/inspect.h"
#include "io/json.h"

static const opt_def inspect_opts[] = {
    OPT_ADAPTER_IN,
    {"prompt", O_PROMPT, 1, "the text to look at (1 byte up to the model's context, at most 128)"},
    {"top", O_TOPK, 1, "next bytes listed per position, 1..16 (default 5)"},
    {"backend", O_BACKEND, 1, "cpu (default), webgpu or auto"},
    {"threads", O_THREADS, 1, "CPU threads"},
    {"json", O_JSON, 0, "print one JSON object (attention maps, next bytes, logit lens)"},
    {"help", O_HELP, 0, "this help"},
    {NULL, 0, 0, NULL}};

static const char *what = "Look inside a trained model for one prompt: next-byte probabilities, attention maps per layer\n"
                          "and head, and the logit lens. RUN is a run folder or a checkpoint file.";

/* a byte as a short readable token: 'a', '\n', ' ', '\xe9' */
static const char *show(int b, char buf[8]) {
    if (b == '\n') return "\\n";
    if (b == '\t') return "\\t";
    if (b >= 32 && b < 127) {
        buf[0] = (char)b;
        buf[1] = 0;
        return buf;
    }
    snprintf(buf, 8, "\\x%02x", b);
    return buf;
}

static void summary(const tt_inspect *r, int k) {
    const int T = r->T, L = r->L, NH = r->NH, V = r->V;
    char b1[8], b2[8];
    printf("prompt: %d byte%s, %d layer%s x %d head%s\n", T, T == 1 ? "" : "s", L, L == 1 ? "" : "s", NH,
           NH == 1 ? "" : "s");
    int by[TT_INSPECT_MAX_K];
    float pr[TT_INSPECT_MAX_K];
    const float *last = r->lens + ((size_t)L * T + T - 1) * V;
    tt_inspect_top(last, V, k, by, pr);
    printf("next byte after the prompt:");
    for (int i = 0; i < k; i++) printf("  '%s' %.1f%%", show(by[i], b1), 100.0 * pr[i]);
    printf("\nlogit lens at the last position (top-1 after each layer):\n");
    for (int l = 0; l <= L; l++) {
        tt_inspect_top(r->lens + ((size_t)l * T + T - 1) * V, V, 1, by, pr);
        char name[24];
        if (l) snprintf(name, sizeof name, "layer %d", l);
        printf("  %-9s '%s' %.1f%%\n", l ? name : "embedding", show(by[0], b1), 100.0 * pr[0]);
    }
    printf("strongest attention of the last position (layer.head -> byte):\n ");
    for (int l = 0; l < L; l++)
        for (int h = 0; h < NH; h++) {
            const float *a = r->attn + (((size_t)l * NH + h) * T + T - 1) * T;
            int j = 0;
            for (int i = 1; i < T; i++)
                if (a[i] > a[j]) j = i;
            printf(" %d.%d->'%s'@%d %.0f%%", l + 1, h + 1, show(r->tokens[j], b2), j, 100.0 * a[j]);
        }
    printf("\n(--json prints every map and position)\n");
}

int cmd_inspect(int argc, char **argv) {
    opts o;
    memset(&o, 0, sizeof o);
    const char *run = argc > 2 && strncmp(argv[2], "-", 1) != 0 ? argv[2] : NULL;
    int rc = parse_opts("inspect", inspect_opts, argc, argv, run ? 3 : 2, &o);
    if (rc == -1) {
        printf("usage: tinytrain inspect RUN --prompt TEXT [options]\n%s\n\noptions:\n", what);
        usage_opts(stdout, inspect_opts);
        return 0;
    }
    if (rc) return rc;
    if (!run) return error_line(EXIT_USAGE, "inspect needs a run folder or checkpoint (tinytrain inspect RUN --prompt TEXT)");
    if (!o.prompt) return error_line(EXIT_USAGE, "inspect needs --prompt TEXT");
    const size_t np = strlen(o.prompt);
    tt_status st;
    tt_status_clear(&st);
    if (np == 0) return error_line(EXIT_USAGE, "--prompt is empty: give at least one byte");
    int k = o.set[O_TOPK] ? o.top_k : 5;
    if (k < 1 || k > TT_INSPECT_MAX_K) return error_line(EXIT_USAGE, "--top must be in 1..%d (got %d)", TT_INSPECT_MAX_K, k);
    char path[4200];
    struct stat sb;
    if (stat(run, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        if ((size_t)snprintf(path, sizeof path, "%s/%s", run, CKPT_NAME) >= sizeof path)
            return error_line(EXIT_USAGE, "run folder path too long");
    } else {
        snprintf(path, sizeof path, "%s", run);
    }
    tt_train_state s;
    memset(&s, 0, sizeof s);
    if ((rc = load_ckpt(path, o.adapter, &s))) return rc;
    if (s.cfg.vocab != TT_VOCAB) {
        tt_state_free(&s);
        return error_line(EXIT_USAGE, "inspect: a text prompt needs the model's tokenizer; this model has a vocabulary of %d, not bytes",
                          s.cfg.vocab);
    }
    if (tt_inspect_check(&s.cfg, (int64_t)np, &st)) {
        tt_state_free(&s);
        return error_line(EXIT_USAGE, "--prompt: %s", st.msg);
    }
    tt_model_config one = s.cfg;
    one.batch = 1; /* one sequence: the smallest plan */
    tt_backend *be = NULL;
    tt_backend_opts bo = {.threads = o.set[O_THREADS] ? o.threads : sampler_threads(&s.cfg, &o)};
    if ((rc = make_backend(o.backend ? o.backend : "cpu", &one, &bo, o.json, &be))) {
        tt_state_free(&s);
        return rc;
    }
    tt_inspect r;
    memset(&r, 0, sizeof r);
    rc = be->vt->set_state(be, s.params, NULL, NULL, &st);
    tt_token *ids = rc ? NULL : malloc(np * sizeof *ids);
    if (!rc && !ids) rc = tt_fail(&st, TT_ENOMEM, "out of memory");
    for (size_t i = 0; ids && i < np; i++) ids[i] = (uint8_t)o.prompt[i]; /* byte-level: one token per byte */
    if (!rc) rc = tt_inspect_run(be, s.params, ids, (int)np, &r, &st);
    free(ids);
    tt_backend_destroy(be);
    tt_state_free(&s);
    if (rc) return error_line(EXIT_FAIL, "inspect: %s", st.msg);
    if (o.json) {
        tt_jw j;
        tt_jw_init(&j);
        tt_inspect_json(&r, k, &j);
        if (j.oom) rc = error_line(EXIT_FAIL, "out of memory writing the JSON");
        else printf("%s\n", j.buf);
        tt_jw_free(&j);
    } else {
        summary(&r, k);
    }
    tt_inspect_free(&r);
    return rc;
}
