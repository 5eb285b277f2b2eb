// SPDX-License-Identifier: Apache-2.0
/* Request bodies written as JSON text, the caller's text checked before
 * it is sent. */
#include "internal.h"
#include "base/utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tq_buf_raw(tq_buf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

static void buf_escaped(tq_buf *b, const char *v, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    tq_buf_raw(b, "\"", 1);
    size_t run = 0; /* bytes that go as they are */
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)v[i];
        if (ch >= 0x20 && ch != '"' && ch != '\\') continue;
        tq_buf_raw(b, v + run, i - run);
        run = i + 1;
        char e[7] = {'\\', 0};
        size_t el = 2;
        switch (ch) {
        case '"': e[1] = '"'; break;
        case '\\': e[1] = '\\'; break;
        case '\n': e[1] = 'n'; break;
        case '\r': e[1] = 'r'; break;
        case '\t': e[1] = 't'; break;
        default:
            e[1] = 'u';
            e[2] = '0';
            e[3] = '0';
            e[4] = hex[ch >> 4];
            e[5] = hex[ch & 15];
            el = 6;
        }
        tq_buf_raw(b, e, el);
    }
    tq_buf_raw(b, v + run, n - run);
    tq_buf_raw(b, "\"", 1);
}

/* ,"key": (without the comma when first) */
static void buf_key(tq_buf *b, const char *key, bool first)
{
    if (!first) tq_buf_raw(b, ",", 1);
    buf_escaped(b, key, strlen(key));
    tq_buf_raw(b, ":", 1);
}

int tq_buf_str(tenq_client *c, tq_buf *b, const char *key, const char *v, bool first)
{
    if (!v) return 0;
    size_t n = strlen(v);
    if (!tq_utf8_valid(v, n)) return tq_refuse(c, key, "%s is not valid UTF-8", key);
    buf_key(b, key, first);
    buf_escaped(b, v, n);
    return 0;
}

int tq_buf_json(tenq_client *c, tq_buf *b, const char *key, const char *v)
{
    if (!v) return 0;
    size_t n = strlen(v);
    if (!tq_scan_valid(v, n)) return tq_refuse(c, key, "%s is not valid JSON", key);
    buf_key(b, key, false);
    tq_buf_raw(b, v, n);
    return 0;
}

void tq_buf_int(tq_buf *b, const char *key, long long v)
{
    char num[32];
    buf_key(b, key, false);
    tq_buf_raw(b, num, (size_t)snprintf(num, sizeof num, "%lld", v));
}

int tq_buf_names(tenq_client *c, tq_buf *b, const char *key, const char *const *v, size_t n)
{
    buf_key(b, key, false);
    tq_buf_raw(b, "[", 1);
    for (size_t i = 0; i < n; i++) {
        if (!v[i] || !tq_utf8_valid(v[i], strlen(v[i])))
            return tq_refuse(c, key, "%s must hold UTF-8 names", key);
        if (i) tq_buf_raw(b, ",", 1);
        buf_escaped(b, v[i], strlen(v[i]));
    }
    tq_buf_raw(b, "]", 1);
    return 0;
}
