/* cmd_export.c — `tinytrain export`: weights-only .safetensors with Hugging Face GPT-2 names
 * (a LoRA run: its weights merged), or with --adapter a LoRA run's adapters as a peft folder. */
#include "cli.h"

#include "fileio.h"
#include "peft.h"

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

static const opt_def export_opts[] = {
    {"ckpt", O_CKPT, 1, "checkpoint (default runs/" DEFAULT_PRESET "/" CKPT_NAME ")"},
    {"out", O_OUT, 1, "output .safetensors (default model.safetensors next to the checkpoint)"},
    {"adapter", O_ADAPTER, 0, "a LoRA run's adapters alone, as a peft folder at --out (default: adapter/ next to the checkpoint)"},
    {"help", O_HELP, 0, "this help"},
    {NULL, 0, 0, NULL}};

/* --adapter: the peft folder (src/io/peft.h) */
static int export_adapter(const char *path, const char *out) {
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
    int rc = load_ckpt(path, &s);
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
    int rc = command_args("export", "Write the weights with Hugging Face GPT-2 tensor names (model.safetensors).", export_opts, argc, argv, &o);
    if (rc) return rc < 0 ? 0 : rc;
    const char *path = o.ckpt ? o.ckpt : default_ckpt();
    if (o.set[O_ADAPTER]) return export_adapter(path, o.out);
    char out[4200];
    if (o.out) snprintf(out, sizeof out, "%s", o.out);
    else {
        snprintf(out, sizeof out, "%s", path);
        char *sl = strrchr(out, '/');
        if (sl) snprintf(sl + 1, sizeof out - (size_t)(sl + 1 - out), "model.safetensors");
        else snprintf(out, sizeof out, "model.safetensors");
    }
    /* a weights-only export never replaces a training checkpoint (it could
     * no longer be resumed): neither the one it reads nor another one */
    if (tt_same_file(out, path))
        return error_line(EXIT_FAIL, "export: --out '%s' is the checkpoint being exported; choose another file", out);
    if (tt_checkpoint_probe(out) == TT_FILE_CHECKPOINT)
        return error_line(EXIT_FAIL, "export: '%s' is a training checkpoint; a weights-only export will not replace it "
                                     "(choose another --out)", out);
    tt_train_state s;
    memset(&s, 0, sizeof s);
    if ((rc = load_ckpt(path, &s))) return rc;
    tt_status st;
    tt_status_clear(&st);
    if (tt_export_hf(out, &s, &st)) rc = error_line(EXIT_FAIL, "export to '%s': %s", out, st.msg);
    else printf("wrote %s (%lld parameters, Hugging Face GPT-2 names)\n", out, (long long)tt_config_param_count(&s.cfg));
    tt_state_free(&s);
    return rc;
}

