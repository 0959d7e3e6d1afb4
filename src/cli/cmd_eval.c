/* cmd_eval.c — `tinytrain eval`: validation loss of a checkpoint (with
 * --adapter, a peft LoRA folder loaded onto it) on a corpus,
 * per token and in bits per byte (data.h: the model's tokenizer decides what
 * a token is; a BPE model's corpus goes through the token cache beside the
 * checkpoint, or in /tmp where that folder cannot be written). */
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

static const opt_def eval_opts[] = {
    {"ckpt", O_CKPT, 1, "checkpoint (default runs/" DEFAULT_PRESET "/" CKPT_NAME ")"},
    OPT_ADAPTER_IN,
    {"data", O_DATA, 1, "text file or folder (default: the fortunes collection)"},
    {"batches", O_BATCHES, 1, "validation batches (default: the checkpoint's eval-batches)"},
    {"threads", O_THREADS, 1, "CPU threads"},
    {"backend", O_BACKEND, 1, "cpu | webgpu | auto (default cpu)"},
    {"json", O_JSON, 0, "print one JSON object"},
    {"help", O_HELP, 0, "this help"},
    {NULL, 0, 0, NULL}};


int cmd_eval(int argc, char **argv) {
    opts o;
    int rc = command_args("eval", "Mean validation loss of a checkpoint over fixed validation batches of a corpus.", eval_opts, argc, argv, &o);
    if (rc) return rc < 0 ? 0 : rc;
    tt_status st;
    tt_status_clear(&st);
    tt_train_state s;
    memset(&s, 0, sizeof s);
    const char *path = o.ckpt ? o.ckpt : default_ckpt();
    tt_runtok rt;
    if ((rc = load_model(path, o.adapter, &s, &rt))) return rc;
    tt_corpus c;
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", path);
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        char *sl = strrchr(dir, '/');
        if (!sl) snprintf(dir, sizeof dir, ".");
        else if (sl == dir) dir[1] = 0;
        else *sl = 0;
    }
    /* the token cache beside the model; a folder that cannot be written (a downloaded model): the temp folder */
    if (access(dir, W_OK) != 0) snprintf(dir, sizeof dir, "/tmp");
    if (tt_corpus_open(o.data, rt.tok, dir, s.cfg.ctx, NULL, NULL, &c, &st)) {
        tt_state_free(&s);
        tt_runtok_free(&rt);
        return error_line(EXIT_FAIL, "%s", st.msg);
    }
    tt_backend *be = NULL;
    tt_token *tok = NULL;
    int n = o.set[O_BATCHES] ? o.batches : (s.tc.eval_batches > 0 ? s.tc.eval_batches : 8);
    if ((rc = make_backend(o.backend ? o.backend : "cpu", &s.cfg, &(tt_backend_opts){.threads = o.set[O_THREADS] ? o.threads : 0}, 1, &be))) goto out;
    tok = malloc((size_t)s.cfg.batch * (size_t)(s.cfg.ctx + 1) * sizeof *tok);
    if (!tok) {
        rc = error_line(EXIT_FAIL, "out of memory");
        goto out;
    }
    float loss = NAN;
    if (be->vt->set_state(be, s.params, NULL, NULL, &st) || tt_evaluate(be, &c, n, tok, &loss, &st)) {
        rc = error_line(EXIT_FAIL, "eval: %s", st.msg);
        goto out;
    }
    int same = c.hash == s.corpus_hash;
    if (o.json) {
        fputs("{\"checkpoint\":", stdout);
        json_str(stdout, path, strlen(path));
        if (o.adapter) json_key_str(stdout, "adapter", o.adapter);
        printf(",\"step\":%lld,\"corpus\":", (long long)s.step);
        json_str(stdout, c.desc, strlen(c.desc));
        printf(",\"same_corpus\":%s,\"batches\":%d,\"tokens\":%lld,\"val_loss\":", same ? "true" : "false", n,
               (long long)n * s.cfg.batch * s.cfg.ctx);
        json_num(stdout, loss);
        fputs(",\"bits_per_byte\":", stdout);
        json_num(stdout, tt_corpus_bpb(&c, loss));
        printf(",\"tokenizer\":\"%s\",\"tokens_per_byte\":", tt_tokenizer_kind_name(rt.tok));
        json_num(stdout, tt_corpus_tok_per_byte(&c));
        fputs("}\n", stdout);
    } else {
        printf("%s%s%s (step %lld) on %s%s\nval loss %.4f%s (%.3f bits/byte) over %d batches x %d x %d %s\n", path,
               o.adapter ? " + adapter " : "", o.adapter ? o.adapter : "", (long long)s.step, c.desc, same ? "" : " (not the training corpus)", loss, c.tokens.count ? " per token" : "",
               tt_corpus_bpb(&c, loss), n, s.cfg.batch, s.cfg.ctx, c.tokens.count ? "tokens" : "bytes");
    }
out:
    free(tok);
    tt_backend_destroy(be);
    tt_corpus_free(&c);
    tt_state_free(&s);
    tt_runtok_free(&rt);
    return rc;
}

