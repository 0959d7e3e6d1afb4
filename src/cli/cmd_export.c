/* cmd_export.c — `tinytrain export`: weights-only .safetensors with Hugging Face GPT-2 names. */
#include "cli.h"

#include "fileio.h"

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
    {"help", O_HELP, 0, "this help"},
    {NULL, 0, 0, NULL}};


int cmd_export(int argc, char **argv) {
    opts o;
    memset(&o, 0, sizeof o);
    int rc = parse_opts("export", export_opts, argc, argv, 2, &o);
    if (rc == -1) {
        command_help("export", "Write the weights with Hugging Face GPT-2 tensor names (model.safetensors).", export_opts);
        return 0;
    }
    if (rc) return rc;
    const char *path = o.ckpt ? o.ckpt : default_ckpt();
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

