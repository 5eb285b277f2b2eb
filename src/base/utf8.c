// SPDX-License-Identifier: Apache-2.0
/* Bytes into valid UTF-8 (see utf8.h). */
#include "base/utf8.h"

#include <stdlib.h>

/* The length of the valid UTF-8 sequence at s[0..n), or 0. */
static size_t seq_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned min;
    if (c < 0x80) return c ? 1 : 0;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
        min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        min = 0x10000;
    } else {
        return 0;
    }
    if (n < len) return 0;
    unsigned cp = c & (0x7fu >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    /* overlong forms, surrogates and code points past U+10FFFF */
    if (cp < min || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) return 0;
    return len;
}

char *tq_utf8_fix(const char *s, size_t n)
{
    /* each bad byte becomes 3 bytes (U+FFFD) at most */
    char *out = malloc(n * 3 + 1);
    if (!out) return NULL;
    const unsigned char *p = (const unsigned char *)s;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t l = seq_len(p + i, n - i);
        if (l) {
            for (size_t k = 0; k < l; k++) out[o++] = (char)p[i + k];
            i += l;
            continue;
        }
        out[o++] = (char)0xef;
        out[o++] = (char)0xbf;
        out[o++] = (char)0xbd;
        i++;
    }
    out[o] = 0;
    return out;
}

int tq_utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        if (p[i] >= 0x20 && p[i] < 0x80) { /* the common case */
            i++;
            continue;
        }
        size_t l = seq_len(p + i, n - i);
        if (!l) return 0;
        i += l;
    }
    return 1;
}
