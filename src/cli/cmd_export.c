/* cmd_export.c — `tinytrain export RUN OUTDIR`: the Hugging Face folder
 * (src/train/hf.h; a LoRA run: its weights merged; a BPE model: its
 * tokenizer's files, found beside the checkpoint); an OUTDIR ending in
 * .safetensors writes the weights file alone, with GPT-2 names; with
 * --adapter a LoRA run's adapters alone, as a peft folder (src/io/peft.h).
 * --merge-adapter DIR loads a peft folder onto RUN first (the option the
 * other commands call --adapter DIR; here --adapter names the output). */
#include "cli.h"

#include "io/fileio.h"
#include "train/hf.h"
#include "io/peft.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const opt_def export_opts[] = {
    {"ckpt", O_CKPT, 1, "RUN: a checkpoint or a run folder (default runs/" DEFAULT_PRESET "/" CKPT_NAME ")"},
    {"out", O_OUT, 1, "OUTDIR: the folder to write (default: hf/ beside the checkpoint); FILE.safetensors: weights only"},
    {"force", O_FORCE, 0, "replace a non-empty OUTDIR (never one holding a training checkpoint)"},
    {"adapter", O_ADAPTER, 0, "a LoRA run's adapters alone, as a peft folder at OUTDIR (default: adapter/ beside the checkpoint)"},
    {"merge-adapter", O_ADAPTER_IN, 1, "DIR: a peft LoRA adapter folder loaded onto RUN first (export: merged into the weights)"},
    {"help", O_HELP, 0, "this help"},
    {NULL, 0, 0, NULL}};

static const char *what = "Write a Hugging Face folder: config.json, model.safetensors (GPT-2 names),\n"
                          "generation_config.json and a byte-level tokenizer (docs/HUGGINGFACE.md).\n"
                          "RUN and OUTDIR may also come first: tinytrain export RUN OUTDIR [--force]";

/* RUN and OUTDIR may come as the first two plain arguments or as --ckpt / --out */
static int export_args(int argc, char **argv, opts *o, const char **pos) {
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    if (!rest) return error_line(EXIT_FAIL, "out of memory");
    int n = 0, np = 0, rc = 0;
    rest[n++] = argv[0];
    rest[n++] = argv[1];
    for (int i = 2; i < argc && !rc; i++) {
        if (strncmp(argv[i], "--", 2) != 0 && strcmp(argv[i], "-h") != 0) {
            if (np == 2) rc = error_line(EXIT_USAGE, "export takes RUN and OUTDIR; unexpected argument '%s'", argv[i]);
            else pos[np++] = argv[i];
            continue;
        }
        rest[n++] = argv[i];
        for (const opt_def *d = export_opts; d->name; d++) /* an option's value goes with it */
            if (d->has_arg && strcmp(argv[i] + 2, d->name) == 0 && i + 1 < argc) rest[n++] = argv[++i];
    }
    if (!rc) rc = command_args("export", what, export_opts, n, rest, o);
    free(rest);
    if (!rc && ((pos[0] && o->ckpt) || (pos[1] && o->out)))
        rc = error_line(EXIT_USAGE, "export: give RUN and OUTDIR either as arguments or as --ckpt / --out, not both");
    return rc;
}

/* --adapter: the peft folder (src/io/peft.h) */
static int export_adapter(const char *path, const char *adapter_in, const char *out) {
    char dir[4200];
    if (out) snprintf(dir, sizeof dir, "%s", out);
    else {
        snprintf(dir, sizeof dir, "%s", path);
        char *sl = strrchr(dir, '/');
        if (sl) snprintf(sl + 1, sizeof dir - (size_t)(sl + 1 - dir), "adapter");
        else snprintf(dir, sizeof dir, "adapter");
    }
    tt_train_state s;
    memset(&s, 0, sizeof s);
    int rc = load_ckpt(path, adapter_in, &s);
    if (rc) return rc;
    tt_status st;
    tt_status_clear(&st);
    if (s.cfg.lora_rank <= 0)
        rc = error_line(EXIT_FAIL, "export --adapter: '%s' is not a LoRA run (lora-rank 0); export it without --adapter", path);
    else if (tt_export_peft(dir, &s.cfg, s.params, NULL, &st))
        rc = error_line(EXIT_FAIL, "export --adapter to '%s': %s", dir, st.msg);
    else
        printf("wrote %s/ (peft LoRA adapter: rank %d, alpha %g, %lld parameters)\n", dir, s.cfg.lora_rank,
               (double)s.cfg.lora_alpha, (long long)tt_config_lora_count(&s.cfg));
    tt_state_free(&s);
    return rc;
}


int cmd_export(int argc, char **argv) {
    opts o;
    const char *pos[2] = {NULL, NULL};
    int rc = export_args(argc, argv, &o, pos);
    if (rc) return rc < 0 ? 0 : rc;
    const char *path = pos[0] ? pos[0] : o.ckpt ? o.ckpt : default_ckpt();
    if (o.set[O_ADAPTER]) return export_adapter(path, o.adapter, pos[1] ? pos[1] : o.out);
    char out[4200];
    if (pos[1] || o.out) snprintf(out, sizeof out, "%s", pos[1] ? pos[1] : o.out);
    else {
        snprintf(out, sizeof out, "%s", path);
        char *sl = strrchr(out, '/');
        if (sl) snprintf(sl + 1, sizeof out - (size_t)(sl + 1 - out), "hf");
        else snprintf(out, sizeof out, "hf");
    }
    size_t n = strlen(out);
    int single = n > 12 && strcmp(out + n - 12, ".safetensors") == 0;
    /* a weights-only export never replaces a training checkpoint (it could
     * no longer be resumed): neither the one it reads nor another one */
    if (single && tt_same_file(out, path))
        return error_line(EXIT_FAIL, "export: '%s' is the checkpoint being exported; choose another file", out);
    if (single && tt_checkpoint_probe(out) == TT_FILE_CHECKPOINT)
        return error_line(EXIT_FAIL, "export: '%s' is a training checkpoint; a weights-only export will not replace it "
                                     "(choose another --out)", out);
    tt_train_state s;
    memset(&s, 0, sizeof s);
    tt_runtok rt;
    if ((rc = load_model(path, o.adapter, &s, &rt))) return rc;
    int bpe = tt_tokenizer_kind(rt.tok) == TT_TOK_BPE;
    tt_status st;
    tt_status_clear(&st);
    tt_sample_config sc;
    tt_sample_config_default(&sc);
    const tt_hf_generation gen = {sc.temperature, sc.top_k, sc.top_p};
    char params[32];
    fmt_count(params, sizeof params, tt_config_param_count(&s.cfg) - tt_config_lora_count(&s.cfg));
    if (single ? tt_export_hf(out, &s, &st) : tt_hf_export_dir_tok(out, &s, &gen, &rt, o.set[O_FORCE], &st))
        rc = error_line(EXIT_FAIL, "export to '%s': %s", out, st.msg);
    else if (single)
        printf("wrote %s (%s parameters, Hugging Face GPT-2 names)\n", out, params);
    else
        printf("wrote %s/ (%s parameters%s): config.json, model.safetensors, generation_config.json, %s\nload it with "
               "AutoModelForCausalLM.from_pretrained(\"%s\") and AutoTokenizer.from_pretrained(\"%s\")\n",
               out, params, s.cfg.lora_rank ? ", LoRA adapters merged" : "",
               bpe ? "the BPE tokenizer's files, tokenizer_config.json, special_tokens_map.json"
                   : "tokenizer.json, tokenizer_config.json",
               out, out);
    tt_state_free(&s);
    tt_runtok_free(&rt);
    return rc;
}
