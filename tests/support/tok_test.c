/* tok_test.c — the tokenizer tests' shared helpers (tok_test.h). */
#define _GNU_SOURCE
#include "tok_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* GPT-2's byte-to-unicode map, from its definition: the code point of byte b */
uint32_t byte_cp(int b) {
    int n = 0;
    for (int x = 0; x < 256; x++) {
        int printable = (x >= 0x21 && x <= 0x7e) || (x >= 0xa1 && x <= 0xac) || (x >= 0xae && x <= 0xff);
        if (x == b) return printable ? (uint32_t)x : 256u + (uint32_t)n;
        if (!printable) n++;
    }
    return 0;
}

void sb_put(sbuf *s, const void *d, size_t n) {
    if (s->n + n + 1 > s->cap) {
        s->cap = (s->n + n + 1) * 2;
        s->p = realloc(s->p, s->cap);
    }
    memcpy(s->p + s->n, d, n);
    s->n += n;
    s->p[s->n] = 0;
}
void sb_str(sbuf *s, const char *z) { sb_put(s, z, strlen(z)); }
void sb_cp(sbuf *s, uint32_t cp) { /* UTF-8 */
    char b[4];
    int n;
    if (cp < 0x80) b[0] = (char)cp, n = 1;
    else if (cp < 0x800) b[0] = (char)(0xC0 | cp >> 6), b[1] = (char)(0x80 | (cp & 63)), n = 2;
    else b[0] = (char)(0xE0 | cp >> 12), b[1] = (char)(0x80 | ((cp >> 6) & 63)), b[2] = (char)(0x80 | (cp & 63)), n = 3;
    sb_put(s, b, (size_t)n);
}
/* the byte-level text of bytes t[0..n) as a JSON string body (escaped) */
void sb_bl(sbuf *s, const char *t, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t cp = byte_cp((unsigned char)t[i]);
        if (cp == '"' || cp == '\\') sb_put(s, "\\", 1);
        sb_cp(s, cp);
    }
}

char *make_tokenizer_json(const pair_s *merges, int n, int eot, int pair_form) {
    sbuf s = {0};
    sb_str(&s, "{\"version\":\"1.0\",\"added_tokens\":[");
    if (eot) {
        char num[32];
        snprintf(num, sizeof num, "%d", 256 + n);
        sb_str(&s, "{\"id\":");
        sb_str(&s, num);
        sb_str(&s, ",\"content\":\"<|endoftext|>\",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,"
                   "\"normalized\":true,\"special\":true}");
    }
    sb_str(&s, "],\"normalizer\":null,\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false,"
               "\"trim_offsets\":true,\"use_regex\":true},\"post_processor\":null,\"decoder\":{\"type\":\"ByteLevel\"},"
               "\"model\":{\"type\":\"BPE\",\"dropout\":null,\"unk_token\":null,\"continuing_subword_prefix\":\"\","
               "\"end_of_word_suffix\":\"\",\"fuse_unk\":false,\"byte_fallback\":false,\"vocab\":{");
    for (int b = 0; b < 256; b++) {
        char c = (char)b, num[32];
        snprintf(num, sizeof num, "%d", b);
        sb_str(&s, b ? ",\"" : "\"");
        sb_bl(&s, &c, 1);
        sb_str(&s, "\":");
        sb_str(&s, num);
    }
    for (int i = 0; i < n; i++) {
        char num[32];
        snprintf(num, sizeof num, "%d", 256 + i);
        sb_str(&s, ",\"");
        sb_bl(&s, merges[i].a, strlen(merges[i].a));
        sb_bl(&s, merges[i].b, strlen(merges[i].b));
        sb_str(&s, "\":");
        sb_str(&s, num);
    }
    if (eot) {
        char num[32];
        snprintf(num, sizeof num, "%d", 256 + n);
        sb_str(&s, ",\"<|endoftext|>\":");
        sb_str(&s, num);
    }
    sb_str(&s, "},\"merges\":[");
    for (int i = 0; i < n; i++) {
        sb_str(&s, i ? "," : "");
        sb_str(&s, pair_form ? "[\"" : "\"");
        sb_bl(&s, merges[i].a, strlen(merges[i].a));
        sb_str(&s, pair_form ? "\",\"" : " ");
        sb_bl(&s, merges[i].b, strlen(merges[i].b));
        sb_str(&s, "\"");
        if (pair_form) sb_str(&s, "]");
    }
    sb_str(&s, "]}}");
    return s.p;
}

/* the same vocabulary as vocab.json + merges.txt */
void make_vocab_merges(const pair_s *merges, int n, int eot, char **vocab, char **mtxt) {
    char *tj = make_tokenizer_json(merges, n, eot, 0);
    char *v0 = strstr(tj, "\"vocab\":") + 8, *v1 = strstr(tj, "},\"merges\"") + 1;
    *vocab = strndup(v0, (size_t)(v1 - v0));
    sbuf m = {0};
    sb_str(&m, "#version: 0.2\n");
    for (int i = 0; i < n; i++) {
        sb_bl(&m, merges[i].a, strlen(merges[i].a));
        sb_str(&m, " ");
        sb_bl(&m, merges[i].b, strlen(merges[i].b));
        sb_str(&m, "\n");
    }
    *mtxt = m.p;
    free(tj);
}

