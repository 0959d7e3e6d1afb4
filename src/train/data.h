/* data.h — the corpus: loading text (a file or a folder of files; the
 * default is the Debian/Ubuntu `fortunes` collection), validation, the
 * contiguous 90/10 train/validation split, and deterministic batches. */
#ifndef TT_DATA_H
#define TT_DATA_H

#include "config.h"

typedef struct {
    uint8_t *bytes;
    size_t n;        /* total bytes */
    size_t n_train;  /* train = [0, n_train), validation = [n_train, n) */
    uint64_t hash;   /* FNV-1a 64 of the bytes: identity checked on resume */
    char desc[256];  /* e.g. "fortunes (43 files, 5.1 MB)" */
} tt_corpus;

/* path NULL or "" = default corpus. ctx = T: both splits must hold at least
 * T+1 bytes (tt_corpus_check).
 * Errors: missing, empty, binary (NUL bytes / invalid UTF-8 heavy), too short. */
/* The largest corpus a build reads (the whole text is held in memory): a
 * quarter of wasm32's 4 GiB address space in the browser and under Node,
 * 64 GiB natively. */
#if defined(__EMSCRIPTEN__)
#define TT_CORPUS_MAX_BYTES ((uint64_t)1 << 30)
#else
#define TT_CORPUS_MAX_BYTES ((uint64_t)64 << 30)
#endif
int tt_corpus_load(const char *path, int ctx, tt_corpus *c, tt_status *st);
int tt_corpus_from_memory(const uint8_t *bytes, size_t n, int ctx, tt_corpus *c, tt_status *st);
void tt_corpus_free(tt_corpus *c);
/* The one length rule: both splits of c hold at least ctx+1 bytes (a model
 * with another ctx than the one c was loaded for is checked again). */
int tt_corpus_check(const tt_corpus *c, int ctx, tt_status *st);
/* Default corpus folder (fortunes). */
const char *tt_default_corpus_dir(void);

/* Training windows: out = (B, T+1) tokens for sequences first_seq .. first_seq+B-1. */
void tt_batch_train(const tt_corpus *c, uint64_t seed, int64_t first_seq, int B, int T, tt_token *out);
/* Validation batch k of the fixed validation set (evenly spaced windows). */
void tt_batch_val(const tt_corpus *c, int64_t k, int B, int T, tt_token *out);

#endif
