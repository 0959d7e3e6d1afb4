/* runtok.c — a run's tokenizer and its files (runtok.h): loading from a
 * spec or a folder, copying the files into a run folder, finding and
 * checking the tokenizer of a checkpoint. */
#define _POSIX_C_SOURCE 200809L
#include "runtok.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/fileio.h"

const char *const tt_runtok_names[TT_RUNTOK_FILES] = {"tokenizer.json", "vocab.json", "merges.txt"};

static int is_file(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

static int is_dir(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

void tt_runtok_free(tt_runtok *rt) {
    tt_tokenizer_free(rt->tok);
    memset(rt, 0, sizeof *rt);
}

void tt_runtok_mark(const tt_runtok *rt, tt_train_state *s) {
    int bpe = rt->tok && tt_tokenizer_kind(rt->tok) == TT_TOK_BPE;
    s->tok_kind = bpe;
    s->tok_hash = bpe ? tt_tokenizer_hash(rt->tok) : 0;
}

static int byte_tok(tt_runtok *rt, tt_status *st) {
    memset(rt, 0, sizeof *rt);
    return tt_tokenizer_byte(&rt->tok, st);
}

/* a BPE tokenizer without merges whose id i is byte i (what hf.c writes for a byte model) */
static int byte_level(const tt_tokenizer *t) {
    if (tt_tokenizer_kind(t) != TT_TOK_BPE || tt_tokenizer_n_merges(t) != 0 || tt_tokenizer_vocab_size(t) != 256) return 0;
    for (int32_t i = 0; i < 256; i++) {
        size_t len = 0;
        const uint8_t *b = tt_tokenizer_token(t, i, &len);
        if (!b || len != 1 || b[0] != (uint8_t)i) return 0;
    }
    return 1;
}

int tt_runtok_load_dir(const char *dir, int *found, tt_runtok *rt, tt_status *st) {
    memset(rt, 0, sizeof *rt);
    *found = 0;
    char p[TT_RUNTOK_FILES][4100];
    int have[TT_RUNTOK_FILES];
    for (int i = 0; i < TT_RUNTOK_FILES; i++) {
        if (strlen(dir) > 4000) return tt_fail(st, TT_EINVAL, "tokenizer folder path too long");
        if ((size_t)snprintf(p[i], sizeof p[i], "%.4000s/%s", dir, tt_runtok_names[i]) >= sizeof p[i])
            return tt_fail(st, TT_EINVAL, "tokenizer folder path too long");
        have[i] = is_file(p[i]);
    }
    if (!have[0] && have[1] != have[2])
        return tt_fail(st, TT_EFORMAT, "'%.300s' holds %s without %s (a GPT-2 tokenizer needs both, or tokenizer.json)", dir,
                       have[1] ? "vocab.json" : "merges.txt", have[1] ? "merges.txt" : "vocab.json");
    if (!have[0] && !have[1]) return byte_tok(rt, st);
    TT_CHECK(tt_tokenizer_load(dir, &rt->tok, st));
    for (int i = 0; i < TT_RUNTOK_FILES; i++)
        if (have[i] && (i == 0 || (have[1] && have[2]))) memcpy(rt->files[i], p[i], sizeof p[i]);
    snprintf(rt->dir, sizeof rt->dir, "%.4000s", dir);
    if (byte_level(rt->tok)) { /* the byte-level tokenizer.json of a byte model's export: bytes */
        tt_runtok_free(rt);
        return byte_tok(rt, st);
    }
    *found = 1;
    return TT_OK;
}

int tt_runtok_load(const char *spec, tt_runtok *rt, tt_status *st) {
    memset(rt, 0, sizeof *rt);
    if (!spec || !*spec || strcmp(spec, "byte") == 0) return byte_tok(rt, st);
    if (is_dir(spec)) {
        int found = 0;
        TT_CHECK(tt_runtok_load_dir(spec, &found, rt, st));
        if (!found)
            return tt_fail(st, TT_EINVAL, "tokenizer: '%.300s' holds neither tokenizer.json nor vocab.json + merges.txt", spec);
        return TT_OK;
    }
    if (!is_file(spec))
        return tt_fail(st, TT_EINVAL, "tokenizer: '%.300s' is not byte, a tokenizer folder or a tokenizer.json file", spec);
    TT_CHECK(tt_tokenizer_load(spec, &rt->tok, st));
    if (tt_tokenizer_kind(rt->tok) == TT_TOK_BPE) snprintf(rt->files[0], sizeof rt->files[0], "%s", spec);
    return TT_OK;
}

static int copy_file(const char *from, const char *to, tt_status *st) {
    int fd;
    uint64_t size;
    char *buf = NULL;
    TT_CHECK(tt_open_regular(from, &fd, &size, st));
    if (tt_read_all(fd, size, &buf, st)) return tt_fail(st, st->code, "cannot read '%.300s'", from);
    int rc = tt_write_atomic_buf(to, buf, (size_t)size, st);
    free(buf);
    return rc;
}

int tt_runtok_save(const tt_runtok *rt, const char *dir, tt_status *st) {
    if (!rt->tok || tt_tokenizer_kind(rt->tok) != TT_TOK_BPE) return TT_OK;
    char to[4400];
    for (int i = 0; i < TT_RUNTOK_FILES; i++) {
        snprintf(to, sizeof to, "%s/%s", dir, tt_runtok_names[i]);
        if (!rt->files[i][0]) {
            if (unlink(to) != 0 && errno != ENOENT)
                return tt_fail(st, TT_EIO, "cannot remove the old '%.300s': %s", to, strerror(errno));
            continue;
        }
        if (tt_same_file(rt->files[i], to)) continue;
        TT_CHECK(copy_file(rt->files[i], to, st));
    }
    return TT_OK;
}

int tt_runtok_for_state(const char *path, const tt_train_state *s, tt_runtok *rt, tt_status *st) {
    memset(rt, 0, sizeof *rt);
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", path && *path ? path : ".");
    int hf = 0;
    if (is_dir(dir)) {
        char cfg[4400];
        snprintf(cfg, sizeof cfg, "%s/config.json", dir);
        hf = is_file(cfg);
    } else {
        char *sl = strrchr(dir, '/');
        if (!sl) snprintf(dir, sizeof dir, ".");
        else if (sl == dir) dir[1] = 0;
        else *sl = 0;
    }
    int found = 0;
    if (hf && s->cfg.vocab == TT_VOCAB) return byte_tok(rt, st); /* byte-level: the folder's tokenizer.json is bytes */
    if (hf || s->tok_kind) TT_CHECK(tt_runtok_load_dir(dir, &found, rt, st));
    else return byte_tok(rt, st);
    if (hf) { /* a Hugging Face folder: its own files decide (none: bytes, ids 0..255 of its vocabulary) */
        int32_t v = tt_tokenizer_vocab_size(rt->tok);
        if (found ? v != s->cfg.vocab : v > s->cfg.vocab) {
            tt_runtok_free(rt);
            return tt_fail(st, TT_EMISMATCH, "'%.300s': the model's vocabulary is %d but its tokenizer%s has %d ids", dir,
                           s->cfg.vocab, found ? "" : " (none: bytes)", (int)v);
        }
        return TT_OK;
    }
    if (!found)
        return tt_fail(st, TT_EIO, "'%.300s' was trained with a BPE tokenizer (hash %016llx) whose files are not beside it "
                                   "(tokenizer.json or vocab.json + merges.txt in '%.300s')",
                       path, (unsigned long long)s->tok_hash, dir);
    uint64_t h = tt_tokenizer_hash(rt->tok);
    if (h != s->tok_hash) {
        tt_runtok_free(rt);
        return tt_fail(st, TT_EMISMATCH, "the tokenizer files in '%.300s' are not the tokenizer '%.300s' was trained with "
                                         "(hash %016llx, the files' %016llx)",
                       dir, path, (unsigned long long)s->tok_hash, (unsigned long long)h);
    }
    return TT_OK;
}
