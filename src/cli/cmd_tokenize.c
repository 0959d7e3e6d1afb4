/* cmd_tokenize.c — `tinytrain tokenize TOKENIZER`: the ids of a text as a
 * JSON array, or with --decode the text of a JSON array of ids, through the
 * tokenizer of src/tok (a Hugging Face folder, a tokenizer.json, or "byte").
 * The input is --text STR, --file F, or standard input. Decoding prints the
 * bytes exactly (no newline added), so `tokenize T --file F | tokenize T
 * --decode` gives F back. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#include "io/fileio.h"
#include "io/json.h"
#include "tok/tokenizer.h"

static void tokenize_help(void) {
    printf("usage: tinytrain tokenize TOKENIZER [--text STR | --file F] [--decode]\n\n"
           "The token ids of a text as a JSON array (as Hugging Face tokenizers encode it), or with --decode\n"
           "the text of a JSON array of ids. TOKENIZER is a Hugging Face folder (tokenizer.json, or\n"
           "vocab.json + merges.txt; GPT-2's byte-level BPE), a tokenizer.json file, or \"byte\" (one id per byte).\n"
           "Without --text or --file the input is read from standard input.\n\n"
           "options:\n"
           "  --text STR   the input\n"
           "  --file F     read the input from file F\n"
           "  --decode     the input is a JSON array of ids: print their text (the exact bytes, no newline added)\n"
           "  --help       this help\n");
}

static int read_stdin(char **buf, size_t *len) {
    size_t cap = 1 << 16, n = 0;
    char *p = malloc(cap + 1);
    if (!p) return -1;
    for (;;) {
        if (n == cap) {
            char *q = cap < SIZE_MAX / 4 ? realloc(p, 2 * cap + 1) : NULL;
            if (!q) {
                free(p);
                return -1;
            }
            p = q;
            cap *= 2;
        }
        size_t r = fread(p + n, 1, cap - n, stdin);
        n += r;
        if (r == 0) break;
    }
    if (ferror(stdin)) {
        free(p);
        return -2;
    }
    p[n] = 0;
    *buf = p;
    *len = n;
    return 0;
}

/* ids from a JSON array of integers (read as a stream: no tree is built) */
static int parse_ids(const char *buf, size_t len, const char *what, tt_tok_ids *ids) {
    tt_json_reader r;
    tt_status st;
    tt_status_clear(&st);
    tt_json_reader_init(&r, buf, len);
    tt_json_event e = tt_json_next(&r, &st);
    if (e == TT_JSON_ERROR) return error_line(EXIT_FAIL, "%s: %s", what, st.msg);
    if (e != TT_JSON_ARR_BEGIN) return error_line(EXIT_FAIL, "%s: --decode needs a JSON array of token ids", what);
    for (size_t k = 0;; k++) {
        e = tt_json_next(&r, &st);
        if (e == TT_JSON_ARR_END) break;
        if (e == TT_JSON_ERROR) return error_line(EXIT_FAIL, "%s: %s", what, st.msg);
        int64_t v;
        if (e != TT_JSON_NUMBER || tt_json_parse_i64(r.tok, r.tok_len, &v) || v < INT32_MIN || v > INT32_MAX)
            return error_line(EXIT_FAIL, "%s: element %zu of the array is not an integer token id", what, k);
        if (ids->n == ids->cap) {
            size_t cap = ids->cap ? 2 * ids->cap : 4096;
            int32_t *p = realloc(ids->ids, cap * sizeof *p);
            if (!p) return error_line(EXIT_FAIL, "out of memory");
            ids->ids = p;
            ids->cap = cap;
        }
        ids->ids[ids->n++] = (int32_t)v;
    }
    e = tt_json_next(&r, &st);
    if (e == TT_JSON_ERROR) return error_line(EXIT_FAIL, "%s: %s", what, st.msg);
    return 0;
}

int cmd_tokenize(int argc, char **argv) {
    const char *tok_path = NULL, *text = NULL, *file = NULL;
    int decode = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            tokenize_help();
            return 0;
        }
        if (strcmp(a, "--decode") == 0) decode = 1;
        else if (strcmp(a, "--text") == 0 || strcmp(a, "--file") == 0) {
            if (i + 1 >= argc) return error_line(EXIT_USAGE, "option %s needs a value", a);
            if (text || file) return error_line(EXIT_USAGE, "give one input: --text or --file");
            if (a[2] == 't') text = argv[++i];
            else file = argv[++i];
        } else if (strncmp(a, "--", 2) == 0)
            return error_line(EXIT_USAGE, "unknown option '%s' for 'tokenize' (see tinytrain tokenize --help)", a);
        else if (tok_path)
            return error_line(EXIT_USAGE, "unexpected argument '%s' for 'tokenize' (one TOKENIZER; the text goes after --text)", a);
        else tok_path = a;
    }
    if (!tok_path)
        return error_line(EXIT_USAGE, "tokenize needs a TOKENIZER: a Hugging Face folder, a tokenizer.json or \"byte\" "
                                      "(see tinytrain tokenize --help)");
    tt_status st;
    tt_status_clear(&st);
    tt_tokenizer *tok = NULL;
    if (tt_tokenizer_load(tok_path, &tok, &st)) return error_line(EXIT_FAIL, "%s", st.msg);

    char *buf = NULL;
    size_t len = 0;
    const char *what = "--text";
    int rc = 0;
    if (text) {
        len = strlen(text);
    } else if (file) {
        int fd;
        uint64_t size;
        what = file;
        if (tt_open_regular(file, &fd, &size, &st) || tt_read_all(fd, size, &buf, &st))
            rc = error_line(EXIT_FAIL, "cannot read '%s'%s%s", file, st.msg[0] ? ": " : "", st.msg);
        len = (size_t)size;
    } else {
        what = "standard input";
        int r = read_stdin(&buf, &len);
        if (r) rc = error_line(EXIT_FAIL, r == -1 ? "out of memory reading standard input" : "cannot read standard input");
    }
    const char *in = text ? text : buf;
    tt_tok_ids ids = {0};
    if (!rc && decode) {
        rc = parse_ids(in, len, what, &ids);
        char *out = NULL;
        size_t n = 0;
        if (!rc && tt_tokenizer_decode(tok, ids.ids, ids.n, &out, &n, &st)) rc = error_line(EXIT_FAIL, "%s: %s", what, st.msg);
        if (!rc && n && fwrite(out, 1, n, stdout) != n) rc = error_line(EXIT_FAIL, "cannot write the output");
        free(out);
    } else if (!rc) {
        if (tt_tokenizer_encode(tok, in, len, &ids, &st)) rc = error_line(EXIT_FAIL, "%s", st.msg);
        else {
            tt_jw w;
            tt_jw_init(&w);
            tt_jw_raw(&w, "[", 1);
            for (size_t i = 0; i < ids.n; i++) {
                char num[16], *p = num + sizeof num;
                uint32_t v = (uint32_t)ids.ids[i]; /* ids are >= 0 */
                do *--p = (char)('0' + v % 10);
                while (v /= 10);
                if (i) *--p = ',';
                tt_jw_raw(&w, p, (size_t)(num + sizeof num - p));
            }
            tt_jw_raw(&w, "]\n", 2);
            if (w.oom) rc = error_line(EXIT_FAIL, "out of memory");
            else if (fwrite(w.buf, 1, w.len, stdout) != w.len) rc = error_line(EXIT_FAIL, "cannot write the output");
            tt_jw_free(&w);
        }
    }
    if (!rc && fflush(stdout) != 0) rc = error_line(EXIT_FAIL, "cannot write the output");
    tt_tok_ids_free(&ids);
    free(buf);
    tt_tokenizer_free(tok);
    return rc;
}
