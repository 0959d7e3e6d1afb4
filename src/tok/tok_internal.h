/* tok_internal.h — the inside of a tt_tokenizer, shared by tokenizer.c
 * (encode, decode, hash, the byte kind) and tok_load.c (reading Hugging Face
 * files). Not for use outside src/tok. */
#ifndef TT_TOK_INTERNAL_H
#define TT_TOK_INTERNAL_H

#include "tok/tokenizer.h"

typedef struct {
    uint8_t *s;   /* the token's text (owned) */
    size_t len;
    int32_t id;
} tt_tok_added;

typedef struct {
    int32_t a, b, id; /* left id, right id, merged id */
    int live;         /* 0: a later merge of the same pair replaced it */
} tt_tok_merge;

/* one slot of the word cache */
typedef struct {
    uint64_t h;     /* 0: empty */
    uint32_t boff;  /* the word's bytes in wc_bytes */
    uint32_t ioff;  /* its ids in wc_ids */
    uint16_t blen, nid;
} tt_tok_wc_slot;

struct tt_tokenizer {
    tt_tok_kind kind;
    int32_t vocab_size;
    int32_t eot;
    uint64_t hash;
    /* id -> bytes: tok_bytes[tok_off[id] .. tok_off[id + 1]); tok_used[id] = 0 for an unused id */
    uint8_t *tok_bytes;
    size_t *tok_off;
    uint8_t *tok_used;
    int32_t byte_id[256]; /* the id of each single byte's symbol */
    /* merges in rank order, and (left, right) -> rank in an open-addressing map */
    tt_tok_merge *merges;
    size_t n_merges;
    uint64_t *pm_key; /* (a << 32) | b; UINT64_MAX = empty */
    int32_t *pm_rank;
    size_t pm_mask;
    /* added tokens, split off before pre-tokenization (leftmost, longest) */
    tt_tok_added *added;
    int n_added;
    uint8_t added_first[256]; /* 1 for a byte that starts an added token */
    int n_first;              /* how many bytes start one */
    uint8_t only_first;       /* that byte when n_first == 1 */
    /* the word cache (words of 2..255 bytes) and the merge workspace */
    tt_tok_wc_slot *wc;
    size_t wc_used;
    uint8_t *wc_bytes;
    size_t wc_bytes_n;
    int32_t *wc_ids;
    size_t wc_ids_n;
    int32_t *ws_sym, *ws_prev, *ws_next;
    uint64_t *ws_heap_key;
    int32_t *ws_heap_id;
    size_t ws_cap;
};

/* Allocates an empty tokenizer of kind (everything NULL / zero, eot -1). */
tt_tokenizer *tt_tok_alloc(tt_tok_kind kind);
/* After the tables are filled: the pair map, the single-byte ids, the added
 * tokens' first bytes, the word cache and the hash. */
int tt_tok_finish(tt_tokenizer *t, const char *name, tt_status *st);
/* The merge rank of (a, b) or -1. */
int32_t tt_tok_pair_rank(const tt_tokenizer *t, int32_t a, int32_t b);

#endif
