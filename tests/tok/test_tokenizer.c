/* test_tokenizer.c — the tokenizer of src/tok on its own: the generated
 * Unicode classes and the UTF-8 decoder, GPT-2's pre-tokenizer (contractions,
 * numbers, whitespace runs and the lookahead rule, unicode letters and digits,
 * invalid UTF-8), the byte tokenizer, BPE on small hand-made vocabularies
 * (ranks, ties, the word cache, long words, a randomised comparison with the
 * textbook GPT-2 merge loop), added tokens, the content hash, loading from a
 * folder, decode(encode(x)) == x for any bytes, and every class of malformed
 * tokenizer.json / vocab.json / merges.txt (each a non-zero status and one
 * line naming the problem; random mutations never crash). The equality with
 * Hugging Face on GPT-2's real files is tests/tok/test_gpt2_tokenizer.sh. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/fileio.h"
#include "tok/tokenizer.h"
#include "tok/unicode.h"
#include "tok_test.h"
#include "tt_test.h"

/* ------------------------------------------------------------ helpers */

static uint32_t rng_state = 0x12345678u;
static uint32_t rnd(uint32_t n) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return rng_state % n;
}

static int one_line(const char *m) {
    if (!m || !m[0]) return 0;
    for (const char *p = m; *p; p++)
        if (*p == '\n' || *p == '\r') return 0;
    return 1;
}

static tt_tokenizer *load_json(const char *json) {
    tt_tokenizer *t = NULL;
    tt_status st;
    tt_status_clear(&st);
    int rc = tt_tokenizer_from_json(json, strlen(json), "test.json", &t, &st);
    CHECK_MSG(rc == TT_OK, "%s", st.msg);
    return t;
}

static int32_t bl_id(const tt_tokenizer *t, const char *bytes) {
    size_t n = strlen(bytes);
    for (int32_t id = 0; id < tt_tokenizer_vocab_size(t); id++) {
        size_t len;
        const uint8_t *p = tt_tokenizer_token(t, id, &len);
        if (p && len == n && memcmp(p, bytes, n) == 0) return id;
    }
    return -1;
}

/* the ids of text, as bytes of each token joined with '|' */
static char *encode_show(tt_tokenizer *t, const char *text, size_t len) {
    tt_tok_ids ids = {0};
    tt_status st;
    tt_status_clear(&st);
    CHECK(tt_tokenizer_encode(t, text, len, &ids, &st) == TT_OK);
    sbuf s = {0};
    sb_str(&s, "");
    for (size_t i = 0; i < ids.n; i++) {
        size_t n;
        const uint8_t *p = tt_tokenizer_token(t, ids.ids[i], &n);
        if (i) sb_str(&s, "|");
        sb_put(&s, p, n);
    }
    tt_tok_ids_free(&ids);
    return s.p;
}

static void check_round_trip(tt_tokenizer *t, const char *text, size_t len) {
    tt_tok_ids ids = {0};
    tt_status st;
    tt_status_clear(&st);
    CHECK(tt_tokenizer_encode(t, text, len, &ids, &st) == TT_OK);
    CHECK(ids.n <= len);
    char *back = NULL;
    size_t blen = 0;
    CHECK(tt_tokenizer_decode(t, ids.ids, ids.n, &back, &blen, &st) == TT_OK);
    CHECK_MSG(blen == len && memcmp(back, text, len) == 0, "round trip of %zu bytes gave %zu", len, blen);
    free(back);
    tt_tok_ids_free(&ids);
}

/* ------------------------------------------------------------ Unicode */

TT_TEST(unicode_classes) {
    static const struct {
        uint32_t cp;
        int cls;
    } cases[] = {
        {'a', TT_UC_LETTER},   {'Z', TT_UC_LETTER},   {'5', TT_UC_NUMBER},     {' ', TT_UC_SPACE},
        {'\t', TT_UC_SPACE},   {'\n', TT_UC_SPACE},   {0x0B, TT_UC_SPACE},     {0x0C, TT_UC_SPACE},
        {'\r', TT_UC_SPACE},   {0x1C, TT_UC_OTHER},   {'\'', TT_UC_OTHER},     {'_', TT_UC_OTHER},
        {0x85, TT_UC_SPACE},   /* NEL: White_Space (JavaScript's \s says no) */
        {0xFEFF, TT_UC_OTHER}, /* BOM: not White_Space (JavaScript's \s says yes) */
        {0xA0, TT_UC_SPACE},   {0x1680, TT_UC_SPACE}, {0x2000, TT_UC_SPACE},   {0x200A, TT_UC_SPACE},
        {0x200B, TT_UC_OTHER}, {0x2028, TT_UC_SPACE}, {0x2029, TT_UC_SPACE},   {0x202F, TT_UC_SPACE},
        {0x205F, TT_UC_SPACE}, {0x3000, TT_UC_SPACE}, {0xE9, TT_UC_LETTER},    {0x3A9, TT_UC_LETTER},
        {0x4E00, TT_UC_LETTER}, {0x9FA5, TT_UC_LETTER}, {0xAC00, TT_UC_LETTER}, {0x3042, TT_UC_LETTER},
        {0x20000, TT_UC_LETTER}, /* CJK extension B: a range of UnicodeData.txt (First/Last) */
        {0x663, TT_UC_NUMBER}, {0x967, TT_UC_NUMBER}, {0xFF15, TT_UC_NUMBER},  {0x216B, TT_UC_NUMBER}, /* Nl */
        {0xBD, TT_UC_NUMBER},  {0x2460, TT_UC_NUMBER}, /* No */
        {0x301, TT_UC_OTHER},  /* a combining mark (Mn) */
        {0x1F600, TT_UC_OTHER}, {0xE000, TT_UC_OTHER}, {0x10FFFF, TT_UC_OTHER}, {0x110000, TT_UC_OTHER},
        {0x2B5, TT_UC_LETTER}, /* Lm */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK_MSG(tt_uc_class(cases[i].cp) == cases[i].cls, "U+%04X: class %d, want %d", (unsigned)cases[i].cp,
                  tt_uc_class(cases[i].cp), cases[i].cls);
    /* counts of the whole table: every White_Space code point, and plenty of letters and numbers */
    int n[4] = {0};
    for (uint32_t cp = 0; cp < 0x110000; cp++) n[tt_uc_class(cp)]++;
    CHECK_MSG(n[TT_UC_SPACE] == 25, "%d White_Space code points (Unicode has 25)", n[TT_UC_SPACE]);
    CHECK(n[TT_UC_LETTER] > 130000);
    CHECK(n[TT_UC_NUMBER] > 1500);
    CHECK(strlen(tt_unicode_version) >= 5);
}

TT_TEST(utf8_decode) {
    static const struct {
        const char *s;
        int len;
        uint32_t cp;
    } cases[] = {
        {"A", 1, 'A'},
        {"\xC3\xA9", 2, 0xE9},
        {"\xE4\xB8\xAD", 3, 0x4E2D},
        {"\xF0\x9F\x98\x80", 4, 0x1F600},
        {"\xF4\x8F\xBF\xBF", 4, 0x10FFFF},
        {"\xC0\x80", 1, 0x110000},         /* overlong */
        {"\xC1\xBF", 1, 0x110000},         /* overlong */
        {"\xE0\x80\x80", 1, 0x110000},     /* overlong */
        {"\xF0\x80\x80\x80", 1, 0x110000}, /* overlong */
        {"\xED\xA0\x80", 1, 0x110000},     /* a surrogate */
        {"\xF4\x90\x80\x80", 1, 0x110000}, /* above U+10FFFF */
        {"\xF5\x80\x80\x80", 1, 0x110000},
        {"\x80", 1, 0x110000},             /* a lone continuation byte */
        {"\xC3", 1, 0x110000},             /* truncated */
        {"\xE4\xB8", 1, 0x110000},         /* truncated */
        {"\xC3\x41", 1, 0x110000},         /* no continuation */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint32_t cp = 0;
        int l = tt_utf8_decode((const uint8_t *)cases[i].s, strlen(cases[i].s), &cp);
        CHECK_MSG(l == cases[i].len && cp == cases[i].cp, "case %zu: len %d cp %X", i, l, (unsigned)cp);
    }
}

/* ------------------------------------------------------------ pre-tokenizer */

static char *pieces(const char *s, size_t n) {
    sbuf b = {0};
    sb_str(&b, "");
    for (size_t pos = 0; pos < n;) {
        size_t e = tt_pretok_next((const uint8_t *)s, n, pos);
        if (e <= pos || e > n) {
            sb_str(&b, "<BAD END>");
            break;
        }
        if (pos) sb_str(&b, "|");
        sb_put(&b, s + pos, e - pos);
        pos = e;
    }
    return b.p;
}

TT_TEST(pretokenizer) {
    /* the pieces of the regular expression (what JavaScript's engine gives
     * for the same pattern, where its \s and White_Space agree) */
    static const char *const cases[][2] = {
        {"Hello world", "Hello| world"},
        {"don't", "don|'t"},
        {"I'll we've they're she'd I'm it's", "I|'ll| we|'ve| they|'re| she|'d| I|'m| it|'s"},
        {"'S 'T 'Re", "'|S| '|T| '|Re"}, /* contractions are lower case only */
        {"abc123 456", "abc|123| 456"},
        {"3.14", "3|.|14"},
        {"a  b", "a| | b"},
        {"a   b", "a|  | b"},
        {"a\n\nb", "a|\n|\n|b"},
        {"\n\n", "\n\n"},
        {"a \n b", "a| \n| b"},
        {"hi  ", "hi|  "},
        {"hi \t", "hi| \t"},
        {"a\t\tb", "a|\t|\t|b"},
        {"café", "café"},
        {" café", " café"},
        {"x\xd9\xa3\xd9\xa4 \xd9\xa3", "x|\xd9\xa3\xd9\xa4| \xd9\xa3"}, /* Arabic-Indic digits */
        {"中文字", "中文字"},
        {"日本語 テキスト", "日本語| テキスト"},
        {"e\xcc\x81", "e|\xcc\x81"},          /* a combining mark is neither letter nor number */
        {"a\xc2\xa0" "b", "a|\xc2\xa0|b"},    /* U+00A0 is a space, but not the " ?" */
        {"!!! ...", "!!!| ..."},
        {"?'s", "?'|s"},
        {"''s", "''|s"},
        {" 's", " '|s"},
        {"'", "'"},
        {"  ", "  "},
        {" ", " "},
        {"Ⅻ½ ①2", "Ⅻ½| ①2"},                 /* Nl and No are numbers */
        {"naïve—really?!", "naïve|—|really|?!"},
        {"\xe3\x80\x80\xe3\x80\x80x", "\xe3\x80\x80|\xe3\x80\x80|x"},
        {"x \xe2\x80\xa8", "x| \xe2\x80\xa8"},
        {"a\xc2\x85\xc2\x85" "b", "a|\xc2\x85|\xc2\x85|b"},  /* U+0085 is White_Space */
        {"a\xef\xbb\xbf" "b", "a|\xef\xbb\xbf|b"},           /* U+FEFF is not */
        {" \xef\xbb\xbf", " \xef\xbb\xbf"},
        {"a\xff\xfe" "b", "a|\xff\xfe|b"},                   /* invalid UTF-8: other */
        {" \xff", " \xff"},
        {"\xe4\xb8", "\xe4\xb8"},                            /* truncated: two bytes of class other */
        {"\xe4\xb8x", "\xe4\xb8|x"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = pieces(cases[i][0], strlen(cases[i][0]));
        CHECK_MSG(strcmp(got, cases[i][1]) == 0, "case %zu: got '%s', want '%s'", i, got, cases[i][1]);
        free(got);
    }
    /* random bytes: pieces cover the text, each at least one byte, and a
     * piece never ends inside a valid UTF-8 character */
    for (int k = 0; k < 2000; k++) {
        uint8_t s[64], boundary[65] = {0};
        size_t n = 1 + rnd(64);
        for (size_t i = 0; i < n; i++) s[i] = (uint8_t)(rnd(3) ? (uint32_t)(uint8_t)"a '\n1\xc3\xa9\xe3\x80\x80!"[rnd(12)] : rnd(256));
        for (size_t i = 0; i < n;) {
            uint32_t cp;
            boundary[i] = 1;
            i += (size_t)tt_utf8_decode(s + i, n - i, &cp);
        }
        boundary[n] = 1;
        for (size_t pos = 0; pos < n;) {
            size_t e = tt_pretok_next(s, n, pos);
            CHECK(e > pos && e <= n);
            if (e <= pos || e > n) break;
            CHECK(boundary[e]);
            pos = e;
        }
    }
}

/* ------------------------------------------------------------ byte tokenizer */

TT_TEST(byte_tokenizer) {
    tt_tokenizer *t = NULL;
    tt_status st;
    tt_status_clear(&st);
    CHECK(tt_tokenizer_byte(&t, &st) == TT_OK);
    CHECK(tt_tokenizer_kind(t) == TT_TOK_BYTE);
    CHECK(strcmp(tt_tokenizer_kind_name(t), "byte") == 0);
    CHECK(tt_tokenizer_vocab_size(t) == 256);
    CHECK(tt_tokenizer_eot(t) == -1);
    CHECK(tt_tokenizer_n_merges(t) == 0);
    const char text[] = "h\xc3\xa9<|endoftext|>\x00\xff";
    tt_tok_ids ids = {0};
    CHECK(tt_tokenizer_encode(t, text, sizeof text - 1, &ids, &st) == TT_OK);
    CHECK(ids.n == sizeof text - 1);
    for (size_t i = 0; i < ids.n && i < sizeof text - 1; i++) CHECK(ids.ids[i] == (unsigned char)text[i]);
    for (int b = 0; b < 256; b++) {
        size_t len;
        const uint8_t *p = tt_tokenizer_token(t, b, &len);
        CHECK(p && len == 1 && p[0] == b);
    }
    size_t len;
    CHECK(tt_tokenizer_token(t, 256, &len) == NULL && len == 0);
    CHECK(tt_tokenizer_token(t, -1, &len) == NULL);
    check_round_trip(t, text, sizeof text - 1);
    /* the hash: stable for the kind, not the BPE one */
    tt_tokenizer *t2 = NULL;
    CHECK(tt_tokenizer_load("byte", &t2, &st) == TT_OK);
    CHECK(t2 && tt_tokenizer_hash(t) == tt_tokenizer_hash(t2));
    tt_tokenizer_free(t2);
    tt_tok_ids_free(&ids);
    tt_tokenizer_free(t);
}

/* ------------------------------------------------------------ BPE */

static const pair_s small_merges[] = {
    {"a", "b"},   /* 256 "ab"   rank 0 */
    {"ab", "c"},  /* 257 "abc"  rank 1 */
    {" ", "a"},   /* 258 " a"   rank 2: after "a b", so " ab" is " " + "ab" */
    {"a", "a"},   /* 259 "aa"   rank 3 */
    {" ", "ab"},  /* 260 " ab"  rank 4 */
    {"c", "d"},   /* 261 "cd"   rank 5 */
    {"b", "cd"},  /* 262 "bcd"  rank 6 */
    {"x", "y"},   /* 263 "xy"   rank 7 */
    {" a", "x"},  /* 264 " ax"  rank 8 */
};
#define N_SMALL ((int)(sizeof small_merges / sizeof small_merges[0]))

TT_TEST(bpe_small) {
    char *json = make_tokenizer_json(small_merges, N_SMALL, 1, 0);
    tt_tokenizer *t = load_json(json);
    free(json);
    if (!t) return;
    CHECK(tt_tokenizer_kind(t) == TT_TOK_BPE);
    CHECK(strcmp(tt_tokenizer_kind_name(t), "bpe") == 0);
    CHECK(tt_tokenizer_vocab_size(t) == 256 + N_SMALL + 1);
    CHECK(tt_tokenizer_n_merges(t) == (size_t)N_SMALL);
    CHECK(tt_tokenizer_eot(t) == 256 + N_SMALL);
    static const char *const cases[][2] = {
        {"abc", "abc"},
        {"ab", "ab"},
        {"abcd", "abc|d"},          /* "ab c" (rank 1) before "c d" (rank 5) */
        {"bcd", "bcd"},
        {"abcd abcd", "abc|d| |abc|d"}, /* "a b", "ab c" (ranks 0, 1) before " ab" (rank 4) */
        {"aaa", "aa|a"},            /* equal ranks: the leftmost first */
        {"aaaa", "aa|aa"},
        {"aaaaa", "aa|aa|a"},
        {" ax", " ax"},
        {" axy", " a|xy"},          /* "x y" (rank 7) before " a x" (rank 8) */
        {"a<|endoftext|>b", "a|<|endoftext|>|b"},
        {"<|endoftext|><|endoftext|>", "<|endoftext|>|<|endoftext|>"},
        {"ab <|endoftext", "ab| |<|||e|n|d|o|f|t|e|x|t"}, /* not the whole token: plain text */
        {"<|endoftext|> ab", "<|endoftext|>| ab"},
        {"ab  <|endoftext|>", "ab| | |<|endoftext|>"}, /* the text before a special token ends there */
        {"", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (int rep = 0; rep < 2; rep++) { /* the second time from the word cache */
            char *got = encode_show(t, cases[i][0], strlen(cases[i][0]));
            CHECK_MSG(strcmp(got, cases[i][1]) == 0, "case %zu (pass %d): got '%s', want '%s'", i, rep, got, cases[i][1]);
            free(got);
        }
        check_round_trip(t, cases[i][0], strlen(cases[i][0]));
    }
    /* ids, not just their text: the special token is its own id, not the bytes' */
    tt_tok_ids ids = {0};
    tt_status st;
    tt_status_clear(&st);
    CHECK(tt_tokenizer_encode(t, "<|endoftext|>", 13, &ids, &st) == TT_OK);
    CHECK(ids.n == 1 && ids.ids[0] == tt_tokenizer_eot(t));
    /* encode appends */
    CHECK(tt_tokenizer_encode(t, "abc", 3, &ids, &st) == TT_OK);
    CHECK(ids.n == 2 && ids.ids[1] == bl_id(t, "abc"));
    tt_tok_ids_free(&ids);
    /* a word longer than the cache takes (255 bytes) */
    char longw[1000];
    for (int i = 0; i < 999; i++) longw[i] = "abcd"[i % 4];
    longw[999] = 0;
    char *got = encode_show(t, longw, 999);
    sbuf want = {0};
    for (int i = 0; i < 249; i++) sb_str(&want, "abc|d|");
    sb_str(&want, "abc");
    CHECK_MSG(strcmp(got, want.p) == 0, "a long word: %.60s...", got);
    free(got);
    free(want.p);
    /* decode errors */
    int32_t bad[] = {1, 2, 999999};
    char *txt = NULL;
    size_t n = 0;
    CHECK(tt_tokenizer_decode(t, bad, 3, &txt, &n, &st) == TT_EINVAL && txt == NULL);
    CHECK(strstr(st.msg, "position 2") != NULL && one_line(st.msg));
    int32_t neg[] = {-1};
    CHECK(tt_tokenizer_decode(t, neg, 1, &txt, &n, &st) == TT_EINVAL);
    tt_tokenizer_free(t);
}

/* The textbook GPT-2 loop (OpenAI's encoder.py bpe()): while a pair has a
 * rank, take the lowest-ranked pair and merge all its occurrences left to
 * right. ranks[a][b] over a small id space. */
static size_t reference_bpe(const int32_t *rank_of, const int32_t *merged_of, int V, const uint8_t *w, size_t n,
                            const int32_t *byte_id, int32_t *out) {
    int32_t *word = malloc(n * sizeof *word), *nw = malloc(n * sizeof *nw);
    size_t m = n;
    for (size_t i = 0; i < n; i++) word[i] = byte_id[w[i]];
    while (m > 1) {
        int32_t best = -1;
        size_t bi = 0;
        for (size_t i = 0; i + 1 < m; i++) {
            int32_t r = rank_of[word[i] * V + word[i + 1]];
            if (r >= 0 && (best < 0 || r < best)) best = r, bi = i;
        }
        if (best < 0) break;
        int32_t a = word[bi], b = word[bi + 1], ab = merged_of[a * V + b];
        size_t k = 0;
        for (size_t i = 0; i < m;) {
            if (i + 1 < m && word[i] == a && word[i + 1] == b) {
                nw[k++] = ab;
                i += 2;
            } else nw[k++] = word[i++];
        }
        memcpy(word, nw, k * sizeof *word);
        m = k;
    }
    memcpy(out, word, m * sizeof *word);
    free(word);
    free(nw);
    return m;
}

TT_TEST(bpe_random_vs_reference) {
    /* random merges over the letters a..d, each of two existing tokens into a
     * new one (so every merge's parts are older than it, as in a trained BPE) */
    enum { NM = 300 };
    char *tokens[4 + NM];
    int nt = 4;
    for (int i = 0; i < 4; i++) tokens[i] = strndup("abcd" + i, 1);
    pair_s merges[NM];
    int nm = 0;
    while (nm < NM) {
        const char *a = tokens[rnd((uint32_t)nt)], *b = tokens[rnd((uint32_t)nt)];
        if (strlen(a) + strlen(b) > 12) continue;
        char ab[32];
        snprintf(ab, sizeof ab, "%s%s", a, b);
        int dup = 0;
        for (int i = 0; i < nt; i++) dup |= strcmp(tokens[i], ab) == 0;
        if (dup) continue;
        merges[nm++] = (pair_s){a, b};
        tokens[nt++] = strdup(ab);
    }
    char *json = make_tokenizer_json(merges, nm, 0, 1);
    tt_tokenizer *t = load_json(json);
    free(json);
    if (!t) return;
    int V = tt_tokenizer_vocab_size(t);
    int32_t *rank_of = malloc((size_t)V * V * sizeof *rank_of), *merged_of = malloc((size_t)V * V * sizeof *merged_of);
    for (int i = 0; i < V * V; i++) rank_of[i] = merged_of[i] = -1;
    for (int r = 0; r < nm; r++) {
        int32_t a = bl_id(t, merges[r].a), b = bl_id(t, merges[r].b);
        rank_of[a * V + b] = r;
        merged_of[a * V + b] = 256 + r;
    }
    int32_t byte_id[256];
    for (int b = 0; b < 256; b++) byte_id[b] = b;
    uint8_t w[600];
    int32_t want[600];
    int bad = 0;
    for (int k = 0; k < 3000 && bad < 5; k++) {
        size_t n = 1 + rnd(k % 10 == 0 ? 600 : 24); /* some beyond the word cache's 255 bytes */
        uint32_t letters = 1 + rnd(4);
        for (size_t i = 0; i < n; i++) w[i] = (uint8_t)('a' + rnd(letters));
        size_t m = reference_bpe(rank_of, merged_of, V, w, n, byte_id, want);
        for (int rep = 0; rep < 2; rep++) {
            tt_tok_ids ids = {0};
            tt_status st;
            CHECK(tt_tokenizer_encode(t, w, n, &ids, &st) == TT_OK);
            int same = ids.n == m && memcmp(ids.ids, want, m * sizeof *want) == 0;
            if (!same) bad++;
            CHECK_MSG(same, "word %.*s: %zu ids vs the reference's %zu", (int)n, (const char *)w, ids.n, m);
            tt_tok_ids_free(&ids);
        }
    }
    free(rank_of);
    free(merged_of);
    for (int i = 0; i < nt; i++) free(tokens[i]);
    tt_tokenizer_free(t);
}

TT_TEST(round_trip_any_bytes) {
    char *json = make_tokenizer_json(small_merges, N_SMALL, 1, 0);
    tt_tokenizer *t = load_json(json);
    free(json);
    tt_tokenizer *b = NULL;
    tt_status st;
    CHECK(tt_tokenizer_byte(&b, &st) == TT_OK);
    if (!t || !b) return;
    static const char *const pool[] = {"a", "b", "c", "d", "ab", " ", "  ", "\n", "\t", "'s", "'", "<|endoftext|>",
                                       "<|", "x", "y", "1", "\xc3\xa9", "\xe4\xb8\xad", "\xf0\x9f\x98\x80", "\xcc\x81",
                                       "\xc2\xa0", "\xe3\x80\x80", "\xc2\x85", "!", "."};
    char text[4096];
    for (int k = 0; k < 1500; k++) {
        size_t n = 0, want = rnd(k % 50 == 0 ? 4000 : 200);
        while (n < want) {
            if (rnd(5) == 0) text[n++] = (char)rnd(256); /* any byte, invalid UTF-8 included */
            else {
                const char *p = pool[rnd(sizeof pool / sizeof pool[0])];
                size_t l = strlen(p);
                if (n + l > sizeof text) break;
                memcpy(text + n, p, l);
                n += l;
            }
        }
        check_round_trip(t, text, n);
        check_round_trip(b, text, n);
    }
    tt_tokenizer_free(t);
    tt_tokenizer_free(b);
}

/* ------------------------------------------------------------ added tokens, hash, files */

TT_TEST(added_tokens_longest) {
    char *json = make_tokenizer_json(small_merges, N_SMALL, 0, 0);
    /* two added tokens, one the prefix of the other */
    char *p = strstr(json, "\"added_tokens\":[]");
    CHECK(p != NULL);
    if (!p) return;
    sbuf s = {0};
    sb_put(&s, json, (size_t)(p - json));
    sb_str(&s, "\"added_tokens\":[{\"id\":300,\"content\":\"<a>\",\"special\":true},{\"id\":301,\"content\":\"<a>b\","
               "\"special\":false}]");
    sb_str(&s, p + strlen("\"added_tokens\":[]"));
    free(json);
    tt_tokenizer *t = load_json(s.p);
    free(s.p);
    if (!t) return;
    CHECK(tt_tokenizer_vocab_size(t) == 302);
    CHECK(tt_tokenizer_eot(t) == -1);
    tt_tok_ids ids = {0};
    tt_status st;
    CHECK(tt_tokenizer_encode(t, "x<a>bc<a>c<a", 12, &ids, &st) == TT_OK);
    int32_t want[] = {'x', 301, 'c', 300, 'c', '<', 'a'};
    CHECK(ids.n == 7 && memcmp(ids.ids, want, sizeof want) == 0);
    size_t n;
    CHECK(tt_tokenizer_token(t, 280, &n) == NULL); /* ids 265..299 are unused */
    int32_t hole[] = {280};
    char *txt;
    CHECK(tt_tokenizer_decode(t, hole, 1, &txt, &n, &st) == TT_EINVAL);
    tt_tok_ids_free(&ids);
    tt_tokenizer_free(t);
}

static int write_file(const char *dir, const char *name, const char *text) {
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    tt_status st;
    return tt_write_atomic_buf(path, text, strlen(text), &st);
}

TT_TEST(hash_and_files) {
    char *tj = make_tokenizer_json(small_merges, N_SMALL, 1, 0);
    char *tj_pairs = make_tokenizer_json(small_merges, N_SMALL, 1, 1);
    char *vocab, *merges;
    make_vocab_merges(small_merges, N_SMALL, 1, &vocab, &merges);
    tt_tokenizer *a = load_json(tj), *b = load_json(tj_pairs), *c = NULL, *d = NULL, *e = NULL, *f = NULL;
    tt_status st;
    tt_status_clear(&st);
    CHECK_MSG(tt_tokenizer_from_vocab_merges(vocab, strlen(vocab), merges, strlen(merges), "mem", &c, &st) == TT_OK, "%s",
              st.msg);
    if (!a || !b || !c) return;
    CHECK(tt_tokenizer_eot(c) == tt_tokenizer_eot(a));
    CHECK(tt_tokenizer_hash(a) == tt_tokenizer_hash(b));
    CHECK(tt_tokenizer_hash(a) == tt_tokenizer_hash(c));
    /* another merge order, or one merge fewer: another hash */
    pair_s swapped[N_SMALL];
    memcpy(swapped, small_merges, sizeof swapped);
    pair_s tmp = swapped[5];
    swapped[5] = swapped[7];
    swapped[7] = tmp;
    char *tj2 = make_tokenizer_json(swapped, N_SMALL, 1, 0);
    char *tj3 = make_tokenizer_json(small_merges, N_SMALL - 1, 1, 0);
    d = load_json(tj2);
    e = load_json(tj3);
    if (d) CHECK(tt_tokenizer_hash(d) != tt_tokenizer_hash(a));
    if (e) CHECK(tt_tokenizer_hash(e) != tt_tokenizer_hash(a));
    tt_tokenizer *byte = NULL;
    CHECK(tt_tokenizer_byte(&byte, &st) == TT_OK);
    CHECK(tt_tokenizer_hash(byte) != tt_tokenizer_hash(a));
    /* the same ids from each form */
    const char *text = "abcd abcd<|endoftext|> aaax\n\n";
    char *sa = encode_show(a, text, strlen(text)), *sc = encode_show(c, text, strlen(text));
    CHECK(strcmp(sa, sc) == 0);
    free(sa);
    free(sc);
    /* folders: tokenizer.json first, else vocab.json + merges.txt; a tokenizer.json file */
    const char *dir = tt_test_tmpdir();
    char sub[900], sub2[900], file[1024];
    snprintf(sub, sizeof sub, "%s/json", dir);
    snprintf(sub2, sizeof sub2, "%s/vm", dir);
    mkdir(sub, 0755);
    mkdir(sub2, 0755);
    CHECK(write_file(sub, "tokenizer.json", tj) == TT_OK);
    CHECK(write_file(sub2, "vocab.json", vocab) == TT_OK);
    CHECK(write_file(sub2, "merges.txt", merges) == TT_OK);
    CHECK_MSG(tt_tokenizer_load(sub, &f, &st) == TT_OK, "%s", st.msg);
    if (f) CHECK(tt_tokenizer_hash(f) == tt_tokenizer_hash(a));
    tt_tokenizer_free(f);
    f = NULL;
    CHECK_MSG(tt_tokenizer_load(sub2, &f, &st) == TT_OK, "%s", st.msg);
    if (f) CHECK(tt_tokenizer_hash(f) == tt_tokenizer_hash(a));
    tt_tokenizer_free(f);
    f = NULL;
    snprintf(file, sizeof file, "%s/tokenizer.json", sub);
    CHECK_MSG(tt_tokenizer_load(file, &f, &st) == TT_OK, "%s", st.msg);
    tt_tokenizer_free(f);
    f = NULL;
    /* a folder with neither; a path that does not exist; nothing */
    CHECK(tt_tokenizer_load(dir, &f, &st) == TT_EIO && f == NULL && strstr(st.msg, "no tokenizer.json") && one_line(st.msg));
    snprintf(file, sizeof file, "%s/nope", dir);
    CHECK(tt_tokenizer_load(file, &f, &st) == TT_EIO && strstr(st.msg, "cannot open") && one_line(st.msg));
    CHECK(tt_tokenizer_load("", &f, &st) == TT_EINVAL && one_line(st.msg));
    /* vocab.json without merges.txt */
    remove(strcat(strcpy(file, sub2), "/merges.txt"));
    CHECK(tt_tokenizer_load(sub2, &f, &st) == TT_EIO && one_line(st.msg));
    free(tj);
    free(tj_pairs);
    free(tj2);
    free(tj3);
    free(vocab);
    free(merges);
    tt_tokenizer_free(a);
    tt_tokenizer_free(b);
    tt_tokenizer_free(c);
    tt_tokenizer_free(d);
    tt_tokenizer_free(e);
    tt_tokenizer_free(byte);
}

/* ------------------------------------------------------------ malformed files */

/* json with the first occurrence of `from` replaced by `to` */
static char *edit(const char *json, const char *from, const char *to) {
    const char *p = strstr(json, from);
    CHECK_MSG(p != NULL, "'%s' not in the test file", from);
    if (!p) return strdup(json);
    sbuf s = {0};
    sb_put(&s, json, (size_t)(p - json));
    sb_str(&s, to);
    sb_str(&s, p + strlen(from));
    return s.p;
}

TT_TEST(malformed_tokenizer_json) {
    char *good = make_tokenizer_json(small_merges, N_SMALL, 1, 0);
    static const struct {
        const char *from, *to, *want;
        int code;
    } cases[] = {
        {"{\"version\"", "[\"version\"", "JSON", TT_EFORMAT},
        {"\"model\":{", "\"modelx\":{", "no \"model\" object", TT_EFORMAT},
        {"\"type\":\"BPE\"", "\"type\":\"WordPiece\"", "model WordPiece is not supported", TT_EUNSUP},
        {"\"normalizer\":null", "\"normalizer\":{\"type\":\"NFC\"}", "normalizer NFC is not supported", TT_EUNSUP},
        {"\"type\":\"ByteLevel\",\"add_prefix_space\":false", "\"type\":\"Metaspace\",\"add_prefix_space\":false",
         "pre_tokenizer Metaspace is not supported", TT_EUNSUP},
        {"\"pre_tokenizer\":{", "\"pre_tokenizerx\":{", "pre_tokenizer (absent) is not supported", TT_EUNSUP},
        {"\"add_prefix_space\":false", "\"add_prefix_space\":true", "add_prefix_space true", TT_EUNSUP},
        {"\"use_regex\":true", "\"use_regex\":false", "use_regex false", TT_EUNSUP},
        {"\"decoder\":{\"type\":\"ByteLevel\"}", "\"decoder\":{\"type\":\"WordPiece\"}", "decoder WordPiece", TT_EUNSUP},
        {"\"dropout\":null", "\"dropout\":0.1", "dropout", TT_EUNSUP},
        {"\"byte_fallback\":false", "\"byte_fallback\":true", "byte_fallback true", TT_EUNSUP},
        {"\"end_of_word_suffix\":\"\"", "\"end_of_word_suffix\":\"</w>\"", "end_of_word_suffix", TT_EUNSUP},
        {"\"lstrip\":false", "\"lstrip\":true", "lstrip true is not supported", TT_EUNSUP},
        {"\"vocab\":{", "\"vocab\":[{", "JSON", TT_EFORMAT},
        {"\"vocab\":{\"", "\"vocab\":7,\"x\":{\"", "vocabulary is not an object", TT_EFORMAT},
        {"\"!\":33", "\"!\":0.5", "not an integer", TT_EFORMAT},
        {"\"!\":33", "\"!\":-3", "id -3", TT_EFORMAT},
        {"\"!\":33", "\"!\":99999999", "id 99999999", TT_EFORMAT},
        {"\"!\":33", "\"!\":1", "the same id 1", TT_EFORMAT},
        {"\"!\":33", "\"\\u2581a\":33", "not in GPT-2's byte-level alphabet", TT_EFORMAT},
        {"\"!\":33", "\"\":33", "is empty", TT_EFORMAT},
        {"\"!\":33,", "", "no token for byte 0x21", TT_EFORMAT},
        {"\"merges\":[", "\"merges\":{\"x\":[", "JSON", TT_EFORMAT},
        {"\"merges\":[", "\"mergesx\":[", "model.merges is missing", TT_EFORMAT},
        {"\"merges\":[\"a b\"", "\"merges\":[\"ab\"", "merge 1 is neither", TT_EFORMAT},
        {"\"merges\":[\"a b\"", "\"merges\":[\"a b c\"", "merge 1 is neither", TT_EFORMAT},
        {"\"merges\":[\"a b\"", "\"merges\":[\"a  b\"", "merge 1 is neither", TT_EFORMAT},
        {"\"merges\":[\"a b\"", "\"merges\":[[\"a\",\"b\",\"c\"]", "merge 1 is neither", TT_EFORMAT},
        {"\"merges\":[\"a b\"", "\"merges\":[[\"a\",2]", "merge 1 is neither", TT_EFORMAT},
        {"\"merges\":[\"a b\"", "\"merges\":[\"a\\u2581 b\"", "its left part is not in the vocabulary", TT_EFORMAT},
        {"\"merges\":[\"a b\"", "\"merges\":[\"a zz\"", "its right part is not in the vocabulary", TT_EFORMAT},
        {"\"merges\":[\"a b\"", "\"merges\":[\"b a\"", "merge 1 ('b' 'a'): the merged token is not in the vocabulary",
         TT_EFORMAT},
        {"\"content\":\"<|endoftext|>\"", "\"content\":\"\"", "added token is empty", TT_EFORMAT},
        {"{\"id\":265,", "{\"id\":\"x\",", "lacks an integer \"id\"", TT_EFORMAT},
        {"{\"id\":265,", "{\"id\":3,", "id 3 is the added token", TT_EFORMAT},
        {"\"added_tokens\":[", "\"added_tokens\":{\"a\":[", "JSON", TT_EFORMAT},
        {"\"added_tokens\":[", "\"added_tokens\":7,\"x\":[", "added_tokens is not an array", TT_EFORMAT},
        {"}}", "}", "JSON", TT_EFORMAT},
        {"}}", "}}}", "JSON", TT_EFORMAT},
        {"\"vocab\":{\"", "\"vocab\":{\"\\x\":1,\"", "JSON", TT_EFORMAT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *bad = edit(good, cases[i].from, cases[i].to);
        tt_tokenizer *t = (tt_tokenizer *)1;
        tt_status st;
        tt_status_clear(&st);
        int rc = tt_tokenizer_from_json(bad, strlen(bad), "bad.json", &t, &st);
        CHECK_MSG(rc == cases[i].code && t == NULL && one_line(st.msg) && strstr(st.msg, cases[i].want) &&
                      strncmp(st.msg, "bad.json: ", 10) == 0,
                  "case %zu: rc %d, message '%s' (want %d, '%s')", i, rc, st.msg, cases[i].code, cases[i].want);
        free(bad);
    }
    /* truncated at every length (a tenth of them) and empty */
    size_t n = strlen(good);
    for (size_t l = 0; l < n; l += 1 + rnd(20)) {
        tt_tokenizer *t = NULL;
        tt_status st;
        int rc = tt_tokenizer_from_json(good, l, "cut.json", &t, &st);
        CHECK_MSG(rc != TT_OK && t == NULL && one_line(st.msg), "cut at %zu: rc %d", l, rc);
    }
    /* random mutations: never a crash; an error is one line, a success a usable tokenizer */
    char *m = malloc(n + 1);
    for (int k = 0; k < 3000; k++) {
        memcpy(m, good, n + 1);
        for (int j = 1 + (int)rnd(4); j > 0; j--) m[rnd((uint32_t)n)] = (char)(rnd(2) ? rnd(256) : (uint32_t)(uint8_t)"{}[]\",:0 \\"[rnd(11)]);
        tt_tokenizer *t = NULL;
        tt_status st;
        tt_status_clear(&st);
        int rc = tt_tokenizer_from_json(m, n, "mut.json", &t, &st);
        if (rc) CHECK_MSG(t == NULL && one_line(st.msg), "mutation %d: '%s'", k, st.msg);
        else {
            check_round_trip(t, "abcd <|endoftext|> xy\n", 22);
            tt_tokenizer_free(t);
        }
    }
    free(m);
    free(good);
}

TT_TEST(malformed_vocab_merges) {
    char *vocab, *merges;
    make_vocab_merges(small_merges, N_SMALL, 1, &vocab, &merges);
    static const struct {
        int in_merges;
        const char *from, *to, *want;
    } cases[] = {
        {0, "{", "[", "vocab.json: JSON"},
        {0, "\"!\":33", "\"!\":33,\"!\":1", "duplicate key"},
        {0, "\"!\":33", "\"\\n1\":1,\"\\n1\":2,\"!\":33", "duplicate key"}, /* a key with a line end: one line still */
        {0, "\"!\":33", "\"!\":\"0\"", "not an integer"},
        {0, ":265}", ":265", "vocab.json: JSON"},
        {1, "a b\n", "a\n", "merges.txt: line 2 is not two tokens separated by one space: 'a'"},
        {1, "a b\n", "a b c\n", "line 2 is not two tokens"},
        {1, "a b\n", " a b\n", "line 2 is not two tokens"},
        {1, "a b\n", "a b \n", "line 2 is not two tokens"},
        {1, "a b\n", "a b\nq\n", "line 3 is not two tokens"},
        {1, "a b\n", "a zz\n", "merges.txt: merge 1 ('a' 'zz'): its right part is not in the vocabulary"},
        {1, "a b\n", "b a\n", "the merged token is not in the vocabulary"},
        {1, "a b\n", "a b\n#version: 0.2\n", "merge 2 ('#version:' '0.2'): its left part"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *v = cases[i].in_merges ? strdup(vocab) : edit(vocab, cases[i].from, cases[i].to);
        char *m = cases[i].in_merges ? edit(merges, cases[i].from, cases[i].to) : strdup(merges);
        tt_tokenizer *t = (tt_tokenizer *)1;
        tt_status st;
        tt_status_clear(&st);
        int rc = tt_tokenizer_from_vocab_merges(v, strlen(v), m, strlen(m), "", &t, &st);
        CHECK_MSG(rc == TT_EFORMAT && t == NULL && one_line(st.msg) && strstr(st.msg, cases[i].want),
                  "case %zu: rc %d, '%s' (want '%s')", i, rc, st.msg, cases[i].want);
        free(v);
        free(m);
    }
    /* a vocab.json that is not an object */
    {
        tt_tokenizer *t = NULL;
        tt_status st;
        CHECK(tt_tokenizer_from_vocab_merges("[7]", 3, merges, strlen(merges), "", &t, &st) == TT_EFORMAT &&
              strstr(st.msg, "vocab.json: the vocabulary is not an object"));
    }
    /* a NUL byte inside merges.txt */
    char m2[64] = "#version: 0.2\na b\n";
    m2[15] = 0;
    tt_tokenizer *t = NULL;
    tt_status st;
    CHECK(tt_tokenizer_from_vocab_merges(vocab, strlen(vocab), m2, 18, "d", &t, &st) == TT_EFORMAT &&
          strstr(st.msg, "d/merges.txt: line 2 holds a NUL byte"));
    /* accepted: no #version line, CRLF line ends, blank lines, no final newline */
    char *m3 = edit(merges, "#version: 0.2\n", "");
    char *m4 = edit(m3, "a b\n", "a b\r\n\n");
    m4[strlen(m4) - 1] = 0;
    CHECK_MSG(tt_tokenizer_from_vocab_merges(vocab, strlen(vocab), m4, strlen(m4), "", &t, &st) == TT_OK, "%s", st.msg);
    if (t) CHECK(tt_tokenizer_n_merges(t) == (size_t)N_SMALL);
    tt_tokenizer_free(t);
    free(m3);
    free(m4);
    free(vocab);
    free(merges);
}

int main(void) {
    RUN(unicode_classes);
    RUN(utf8_decode);
    RUN(pretokenizer);
    RUN(byte_tokenizer);
    RUN(bpe_small);
    RUN(bpe_random_vs_reference);
    RUN(round_trip_any_bytes);
    RUN(added_tokens_longest);
    RUN(hash_and_files);
    RUN(malformed_tokenizer_json);
    RUN(malformed_vocab_merges);
    return tt_test_summary();
}
