/* bench_tokenizer.c — encoding throughput of tinytrain's tokenizer (src/tok)
 * on one thread: for each corpus file, REPS passes, each with a freshly
 * loaded tokenizer (an empty word cache, as a first tokenization of a corpus
 * has), timing encode alone (not loading, not reading the file). Prints one
 * JSON line per file: {"file","bytes","tokens","mb_s_best","mb_s_median"}.
 *   bench_tokenizer TOKENIZER FILE... [--reps N]
 * Run by bench/tokenizer.sh beside Hugging Face's tokenizers.js. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/fileio.h"
#include "tok/tokenizer.h"

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    int reps = 5;
    const char *tok_path = NULL;
    const char *files[64];
    int nf = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!tok_path) tok_path = argv[i];
        else if (nf < 64) files[nf++] = argv[i];
    }
    if (!tok_path || !nf || reps < 1 || reps > 100) {
        fprintf(stderr, "usage: bench_tokenizer TOKENIZER FILE... [--reps N]\n");
        return 2;
    }
    tt_status st;
    tt_status_clear(&st);
    for (int f = 0; f < nf; f++) {
        int fd;
        uint64_t size;
        char *text = NULL;
        if (tt_open_regular(files[f], &fd, &size, &st) || tt_read_all(fd, size, &text, &st)) {
            fprintf(stderr, "bench_tokenizer: cannot read %s: %s\n", files[f], st.msg);
            return 1;
        }
        double mbs[100];
        size_t tokens = 0;
        for (int r = 0; r < reps; r++) {
            tt_tokenizer *t = NULL;
            if (tt_tokenizer_load(tok_path, &t, &st)) {
                fprintf(stderr, "bench_tokenizer: %s\n", st.msg);
                return 1;
            }
            tt_tok_ids ids = {0};
            double t0 = tt_now();
            int rc = tt_tokenizer_encode(t, text, (size_t)size, &ids, &st);
            double dt = tt_now() - t0;
            if (rc) {
                fprintf(stderr, "bench_tokenizer: %s\n", st.msg);
                return 1;
            }
            tokens = ids.n;
            mbs[r] = (double)size / 1e6 / dt;
            tt_tok_ids_free(&ids);
            tt_tokenizer_free(t);
        }
        qsort(mbs, (size_t)reps, sizeof mbs[0], cmp_d);
        printf("{\"file\":\"%s\",\"bytes\":%llu,\"tokens\":%zu,\"mb_s_best\":%.3f,\"mb_s_median\":%.3f}\n", files[f],
               (unsigned long long)size, tokens, mbs[reps - 1], mbs[reps / 2]);
        free(text);
    }
    return 0;
}
