/* tokfile.h — the token cache: a corpus tokenized once, streamed, into a
 * file of token ids, then mapped (not read whole) for training, so a corpus
 * larger than memory works. Owns the file format, the streamed build (chunks
 * cut only where tokenizing the pieces apart gives the same ids as the whole:
 * before a whitespace byte that follows a non-space character, preferring
 * line ends; never inside an added token), its key check and its integrity
 * check.
 *
 * The file (little-endian):
 *   0   "TTTOKENS"            magic
 *   8   u32 version (1)       12  u32 width: 2 (u16 ids, vocabulary <= 65536) or 4 (u32)
 *   16  u32 vocab size        20  u32 0
 *   24  u64 tokenizer hash    (tt_tokenizer_hash)
 *   32  u64 corpus bytes      40  u64 corpus stamp (the caller's key, e.g. tt_tokfile_key_of_file)
 *   48  u64 corpus hash       FNV-1a 64 of the corpus bytes (as tt_corpus.hash)
 *   56  u64 token count       64  u64 checksum of the ids
 *   72..119 zero              120 u64 FNV-1a 64 of bytes 0..119
 *   128 the ids: count × width bytes, nothing after them
 * Opening checks all of it (the ids' checksum and that every id is below the
 * vocabulary size: one sequential pass), so a damaged file is refused, never
 * trained on. The file is written atomically (io/fileio.h): a killed build
 * leaves the old file or none. Natively the ids are mapped read-only (mmap);
 * in the WebAssembly build they are read into memory. */
#ifndef TT_TOK_TOKFILE_H
#define TT_TOK_TOKFILE_H

#include "tok/tokenizer.h"

#define TT_TOKFILE_VERSION 1
#define TT_TOKFILE_HEADER 128

/* What the cache was made from, without reading it: its size and a stamp
 * (for a file: a hash of size, modification time and inode). */
typedef struct {
    uint64_t bytes;
    uint64_t stamp;
} tt_tokfile_key;

/* The key of a corpus file (TT_EIO if it cannot be stat'ed). */
int tt_tokfile_key_of_file(const char *path, tt_tokfile_key *key, tt_status *st);

/* The corpus as a stream of bytes: read() fills buf with up to cap bytes and
 * returns how many (0 at the end) or -1 with st set; close() (may be NULL)
 * releases ctx. */
typedef struct {
    int64_t (*read)(void *ctx, uint8_t *buf, size_t cap, tt_status *st);
    void (*close)(void *ctx);
    void *ctx;
} tt_tok_source;

/* A source reading a file (refuses anything but a regular file). */
int tt_tok_source_file(const char *path, tt_tok_source *src, tt_status *st);
void tt_tok_source_close(tt_tok_source *src);

typedef void (*tt_tokfile_progress)(void *ctx, uint64_t bytes_done, uint64_t bytes_total, uint64_t tokens);

typedef struct {
    size_t chunk_bytes;            /* bytes read per step; 0 = 4 MiB */
    size_t max_chunk_bytes;        /* the longest stretch without a safe cut; 0 = 64 MiB */
    tt_tokfile_progress progress;  /* called after each chunk; may be NULL */
    void *progress_ctx;
} tt_tokfile_build_opts;

/* Tokenizes src (key->bytes bytes: a different count is an error, the
 * corpus changed underway) into path, atomically. opts may be NULL. A
 * stretch without a safe cut longer than max_chunk_bytes (64 MiB) is cut at
 * a character boundary (its ids there may differ from a one-piece encode;
 * decode still gives the bytes back). */
int tt_tokfile_build(const char *path, tt_tokenizer *tok, const tt_tok_source *src, const tt_tokfile_key *key,
                     const tt_tokfile_build_opts *opts, tt_status *st);

typedef struct {
    const void *ids;      /* count ids of width bytes each, little-endian */
    uint64_t count;
    int width;            /* 2 or 4 */
    int32_t vocab_size;
    uint64_t tok_hash, corpus_bytes, corpus_stamp, corpus_hash;
    /* private */
    void *base;
    size_t len;
    int mapped;
} tt_tokfile;

static inline uint32_t tt_tokfile_id(const tt_tokfile *f, uint64_t i) {
    return f->width == 2 ? ((const uint16_t *)f->ids)[i] : ((const uint32_t *)f->ids)[i];
}

/* Opens and checks a token cache. tok_hash / key: what it must have been
 * made from (key NULL: any corpus). TT_EIO: absent or unreadable;
 * TT_EFORMAT: not a token cache or damaged ("... delete it"); TT_EMISMATCH:
 * made from another tokenizer or another corpus (stale). */
int tt_tokfile_open(const char *path, uint64_t tok_hash, const tt_tokfile_key *key, tt_tokfile *f, tt_status *st);
void tt_tokfile_close(tt_tokfile *f);

/* Opens path if it is current, else (absent or stale) builds it from src and
 * opens it; *built says which. A damaged file is an error, not rebuilt. src
 * is read only when building. */
int tt_tokfile_ensure(const char *path, tt_tokenizer *tok, const tt_tok_source *src, const tt_tokfile_key *key,
                      const tt_tokfile_build_opts *opts, tt_tokfile *f, int *built, tt_status *st);

#endif
