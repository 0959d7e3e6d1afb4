/* tok_test.h — what the tokenizer tests share (tests/tok): a growable
 * string, GPT-2's byte-to-unicode map written out from its definition, and
 * small byte-level BPE tokenizers made from a list of merges, as a
 * tokenizer.json or as vocab.json + merges.txt. */
#ifndef TT_TOK_TEST_H
#define TT_TOK_TEST_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    char *p;
    size_t n, cap;
} sbuf;
void sb_put(sbuf *s, const void *d, size_t n);
void sb_str(sbuf *s, const char *z);
void sb_cp(sbuf *s, uint32_t cp);          /* a code point (< U+10000) as UTF-8 */
void sb_bl(sbuf *s, const char *t, size_t n); /* bytes in the byte-level alphabet, JSON-escaped */

/* the code point GPT-2's byte-to-unicode map gives byte b */
uint32_t byte_cp(int b);

typedef struct {
    const char *a, *b;
} pair_s;

/* A byte-level vocabulary: the 256 bytes (ids 0..255 in byte order), then
 * the tokens made by merges[] (pairs of byte strings, in rank order; ids
 * 256.. in that order), then "<|endoftext|>" (id 256 + n) if eot, as the
 * text of a tokenizer.json (merges as "a b" strings, or [a, b] pairs if
 * pair_form). free() it. */
char *make_tokenizer_json(const pair_s *merges, int n, int eot, int pair_form);
/* the same as vocab.json + merges.txt texts (free() both) */
void make_vocab_merges(const pair_s *merges, int n, int eot, char **vocab, char **mtxt);

#endif
