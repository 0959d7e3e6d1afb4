/* unicode.h — the Unicode facts the GPT-2 pre-tokenizer needs: the class of a
 * code point (letter = General_Category L*, number = N*, space = the
 * White_Space property, other) and strict UTF-8 decoding. The class table is
 * generated at build time from the Unicode Character Database (Debian's
 * `unicode-data`: UnicodeData.txt, PropList.txt) by src/tok/gen_unicode.py;
 * tt_unicode_version names the version it was made from. */
#ifndef TT_TOK_UNICODE_H
#define TT_TOK_UNICODE_H

#include <stddef.h>
#include <stdint.h>

enum { TT_UC_OTHER = 0, TT_UC_LETTER = 1, TT_UC_NUMBER = 2, TT_UC_SPACE = 3 };

extern const char tt_unicode_version[];
extern const uint8_t tt_uc_stage1[0x110000 >> 8];
extern const uint8_t tt_uc_stage2[][256];

/* The class of code point cp (TT_UC_OTHER beyond U+10FFFF). */
static inline int tt_uc_class(uint32_t cp) {
    if (cp >= 0x110000) return TT_UC_OTHER;
    return tt_uc_stage2[tt_uc_stage1[cp >> 8]][cp & 255];
}

/* Decodes the code point at s[0..n) (n >= 1): returns its length in bytes
 * (1-4) and sets *cp. Strict UTF-8 (no overlong forms, no surrogates, nothing
 * above U+10FFFF, no truncated sequence): an invalid byte is returned alone,
 * length 1, with *cp = 0x110000 (which is of class other). */
static inline int tt_utf8_decode(const uint8_t *s, size_t n, uint32_t *cp) {
    uint32_t c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    *cp = 0x110000;
    if (c < 0xC2 || c > 0xF4) return 1;
    if (c < 0xE0) {
        if (n < 2 || (s[1] & 0xC0) != 0x80) return 1;
        *cp = ((c & 0x1F) << 6) | (s[1] & 0x3F);
        return 2;
    }
    if (c < 0xF0) {
        if (n < 3 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80) return 1;
        uint32_t v = ((c & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
        if (v < 0x800 || (v >= 0xD800 && v <= 0xDFFF)) return 1;
        *cp = v;
        return 3;
    }
    if (n < 4 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80) return 1;
    uint32_t v = ((c & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) | ((uint32_t)(s[2] & 0x3F) << 6) | (s[3] & 0x3F);
    if (v < 0x10000 || v > 0x10FFFF) return 1;
    *cp = v;
    return 4;
}

#endif
