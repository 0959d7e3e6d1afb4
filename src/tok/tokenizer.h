/* tokenizer.h — text to token ids and back: the one tokenizer of the CLI and
 * the WebAssembly build. Owns two kinds behind one handle:
 *   byte  id = the byte's value, vocabulary 256 (tinytrain's own models);
 *   bpe   GPT-2's byte-level BPE, read from a Hugging Face folder
 *         (tokenizer.json, or vocab.json + merges.txt): the added (special)
 *         tokens are split off first (leftmost, longest), the rest is cut by
 *         GPT-2's pre-tokenizer (tt_pretok_next), each piece is mapped to
 *         byte-level symbols and merged by rank.
 * Ids are identical to Hugging Face tokenizers' for GPT-2's files
 * (tests/tok/test_gpt2_tokenizer.sh); decode(encode(x)) == x for any bytes x.
 *
 * Text is bytes: valid UTF-8 is tokenized as Hugging Face does; a byte that
 * is not part of valid UTF-8 is a character of class "other" on its own (its
 * own byte-level symbol), so any input encodes and decodes back exactly.
 *
 * A tokenizer is read-only once loaded except for its word cache: encode on
 * one thread at a time per tokenizer (load one per thread to encode in
 * parallel). Sizes of files are bounded only by memory; malformed files give
 * TT_EFORMAT with one line naming the file and the problem. */
#ifndef TT_TOK_TOKENIZER_H
#define TT_TOK_TOKENIZER_H

#include "config.h"

typedef enum { TT_TOK_BYTE = 0, TT_TOK_BPE = 1 } tt_tok_kind;

typedef struct tt_tokenizer tt_tokenizer;

/* A growable array of ids (encode appends to it). Zero-initialise; free with
 * tt_tok_ids_free. */
typedef struct {
    int32_t *ids;
    size_t n, cap;
} tt_tok_ids;
void tt_tok_ids_free(tt_tok_ids *v);

/* The largest vocabulary a tokenizer file may have: TT_TOK_MAX_VOCAB (config.h,
 * ids 0 .. 2^24 - 1), the models' limit too. */

/* ---- loading ---- */
/* The byte tokenizer. */
int tt_tokenizer_byte(tt_tokenizer **out, tt_status *st);
/* "byte"; a folder holding tokenizer.json (else vocab.json + merges.txt); or
 * a tokenizer.json file. */
int tt_tokenizer_load(const char *path, tt_tokenizer **out, tt_status *st);
/* From the bytes of a tokenizer.json (model BPE, pre-tokenizer ByteLevel
 * without prefix space, no normalizer; merges "a b" strings or [a, b]
 * pairs). name labels error messages (e.g. the file's path). */
int tt_tokenizer_from_json(const char *buf, size_t len, const char *name, tt_tokenizer **out, tt_status *st);
/* From the bytes of a vocab.json and a merges.txt (an optional first line
 * "#version: ...", then one "a b" per line). "<|endoftext|>", if in the
 * vocabulary, is the special token. */
int tt_tokenizer_from_vocab_merges(const char *vocab, size_t vocab_len, const char *merges, size_t merges_len,
                                   const char *name, tt_tokenizer **out, tt_status *st);
void tt_tokenizer_free(tt_tokenizer *t);

/* ---- facts ---- */
tt_tok_kind tt_tokenizer_kind(const tt_tokenizer *t);
const char *tt_tokenizer_kind_name(const tt_tokenizer *t); /* "byte" | "bpe" */
/* Number of ids: the largest id + 1 (256 for byte; 50257 for GPT-2). */
int32_t tt_tokenizer_vocab_size(const tt_tokenizer *t);
/* Number of merges (0 for byte). */
size_t tt_tokenizer_n_merges(const tt_tokenizer *t);
/* The id of "<|endoftext|>" (the document separator), or -1 (byte). */
int32_t tt_tokenizer_eot(const tt_tokenizer *t);
/* A stable 64-bit content hash of kind, vocabulary (each id's bytes), merges
 * in rank order and added tokens: the same tokenizer read from
 * tokenizer.json or vocab.json + merges.txt hashes the same. For cache keys. */
uint64_t tt_tokenizer_hash(const tt_tokenizer *t);
/* The bytes of token id (NULL and *len = 0 for an id out of range or
 * unused). Added tokens give their text. */
const uint8_t *tt_tokenizer_token(const tt_tokenizer *t, int32_t id, size_t *len);

/* ---- encode / decode ---- */
/* Appends the ids of text[0..len) to out. Special tokens in the text become
 * their ids. Only allocation can fail (TT_ENOMEM). */
int tt_tokenizer_encode(tt_tokenizer *t, const void *text, size_t len, tt_tok_ids *out, tt_status *st);
/* The bytes of ids[0..n) concatenated, into a new buffer *text (free() it;
 * NUL after the *len bytes). An id out of range or unused: TT_EINVAL naming
 * its position. */
int tt_tokenizer_decode(const tt_tokenizer *t, const int32_t *ids, size_t n, char **text, size_t *len,
                        tt_status *st);

/* ---- GPT-2's pre-tokenizer ----
 * The end of the piece that starts at s[pos] (pos < n) in s[0..n): the
 * semantics of the regular expression
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * (leftmost alternative first, greedy), with \p{L} / \p{N} the Unicode
 * general categories L* / N* and \s the White_Space property (as Hugging
 * Face tokenizers' ByteLevel pre-tokenizer and OpenAI's encoder). A byte of
 * invalid UTF-8 is a character of class other. */
size_t tt_pretok_next(const uint8_t *s, size_t n, size_t pos);

#endif
