/* data.h — the corpus: loading text (a file or a folder of files; the
 * default is the Debian/Ubuntu `fortunes` collection), validation, the
 * contiguous 90/10 train/validation split, and deterministic batches.
 *
 * Two forms, one set of rules: byte-level (the bytes in memory; a token is a
 * byte) and token data (a BPE tokenizer: the corpus tokenized once into the
 * token cache, tok/tokfile.h, which is mapped, not read whole). The split and
 * the batch rule are the same, counted in tokens. */
#ifndef TT_DATA_H
#define TT_DATA_H

#include "tok/tokfile.h"
#include "config.h"

typedef struct {
    uint8_t *bytes;  /* byte-level: the text; NULL for token data */
    size_t n;        /* total bytes */
    size_t n_train;  /* byte-level: train = [0, n_train), validation = [n_train, n) */
    uint64_t hash;   /* FNV-1a 64 of the bytes: identity checked on resume */
    char desc[256];  /* e.g. "fortunes (43 files, 5.1 MB)" */
    /* token data (tokens.count > 0): the ids, mapped; train = ids [0, n_tok_train),
     * validation = [n_tok_train, n_tok) */
    tt_tokfile tokens;
    uint64_t n_tok, n_tok_train;
    uint64_t val_bytes; /* bytes of the validation split's text (byte-level: n - n_train) */
    int cache_built;    /* tt_corpus_open: the token cache was (re)built, not reused */
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
/* The one length rule: both splits of c hold at least ctx+1 tokens (bytes
 * for byte-level; a model with another ctx than the one c was loaded for is
 * checked again). */
int tt_corpus_check(const tt_corpus *c, int ctx, tt_status *st);
/* The corpus of a run with tokenizer tok (NULL or byte: tt_corpus_load).
 * For a BPE tokenizer the text is tokenized once into the token cache
 * cache_dir/tokens-<16 hex of the corpus path>.bin (tok/tokfile.h: keyed by
 * the tokenizer's hash and the corpus's size and stamp; reused while both
 * hold, rebuilt when either changed) and mapped. A folder is read as
 * tt_corpus_load reads it (files joined; no document separator is invented).
 * progress (may be NULL) is called while the cache is built. */
int tt_corpus_open(const char *path, tt_tokenizer *tok, const char *cache_dir, int ctx, tt_tokfile_progress progress,
                   void *progress_ctx, tt_corpus *c, tt_status *st);
/* Bits per byte of a mean loss in nats per token on the validation split:
 * nats * (validation tokens / validation bytes) / ln 2 (byte-level: nats / ln 2);
 * a document separator counts as a token of no bytes. */
double tt_corpus_bpb(const tt_corpus *c, double nats);
/* Tokens per byte of the validation split (1 for byte-level). */
double tt_corpus_tok_per_byte(const tt_corpus *c);
/* Default corpus folder (fortunes). */
const char *tt_default_corpus_dir(void);

/* Training windows: out = (B, T+1) tokens for sequences first_seq .. first_seq+B-1. */
void tt_batch_train(const tt_corpus *c, uint64_t seed, int64_t first_seq, int B, int T, tt_token *out);
/* Validation batch k of the fixed validation set (evenly spaced windows). */
void tt_batch_val(const tt_corpus *c, int64_t k, int B, int T, tt_token *out);

#endif
