/* main.c — the `tinytrain` command: usage and dispatch to the commands
 * (src/cli/cmd_<command>.c). Every bad input becomes one line "tinytrain:
 * error: ..." on stderr with exit code 2 (bad command line / option value)
 * or 1 (anything else); see cli.h. */
#include "cli.h"

#include <string.h>

void usage(FILE *f) {
    fprintf(f,
            "tinytrain %s — train small GPT language models on bytes, on the CPU or WebGPU\n\n"
            "usage: tinytrain <command> [options]\n\n"
            "commands:\n"
            "  train    train a model (default: preset " DEFAULT_PRESET " on the fortunes collection), then print a sample\n"
            "  sample   generate text from a checkpoint\n"
            "  eval     validation loss of a checkpoint on a corpus\n"
            "  info     presets, memory estimates, CPU ISA, WebGPU availability\n"
            "  export   weights-only .safetensors with Hugging Face GPT-2 names\n"
            "  bench    steady-state speed of one training step\n"
            "  profile  time of every WebGPU kernel of one training step\n"
            "  inspect  look inside a model for a prompt: next-byte probabilities, attention maps, logit lens\n"
            "  tokenize the token ids of a text (or --decode: the text of ids) with a Hugging Face tokenizer or \"byte\"\n\n"
            "`tinytrain <command> --help` lists the options of a command.\n\n"
            "environment:\n"
            "  TINYTRAIN_WEBGPU_LIB  path of the WebGPU library (Dawn's libwebgpu_wrapper.so; default: the npm\n"
            "                        package bun-webgpu-linux-x64 under node_modules next to the sources)\n"
            "  TT_WEBGPU_ROBUST=1    keep Dawn's bounds clamps and workgroup zero-fill (off natively: every kernel\n"
            "                        keeps its indices in bounds by construction, tested)\n"
            "  TT_WEBGPU_VERBOSE=1   print the WebGPU driver's messages\n",
            TT_VERSION);
}


int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        printf("tinytrain %s (%s)\n", TT_VERSION, TT_ISA);
        return 0;
    }
    if (strcmp(cmd, "train") == 0) return cmd_train(argc, argv);
    if (strcmp(cmd, "sample") == 0) return cmd_sample(argc, argv);
    if (strcmp(cmd, "eval") == 0) return cmd_eval(argc, argv);
    if (strcmp(cmd, "info") == 0) return cmd_info(argc, argv);
    if (strcmp(cmd, "export") == 0) return cmd_export(argc, argv);
    if (strcmp(cmd, "bench") == 0) return cmd_bench(argc, argv);
    if (strcmp(cmd, "profile") == 0) return cmd_profile(argc, argv);
    if (strcmp(cmd, "inspect") == 0) return cmd_inspect(argc, argv);
    if (strcmp(cmd, "tokenize") == 0) return cmd_tokenize(argc, argv);
    return error_line(EXIT_USAGE, "unknown command '%s' (commands: train, sample, eval, info, export, bench, profile, inspect, tokenize)",
                      cmd);
}

