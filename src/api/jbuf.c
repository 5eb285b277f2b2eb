// SPDX-License-Identifier: Apache-2.0
#include "jbuf.h"

#include "base/jscan.h"
#include "base/xalloc.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void jb_init(jbuf *b)
{
    memset(b, 0, sizeof(*b));
    b->first[0] = true;
}

void jb_free(jbuf *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}

void jb_reset(jbuf *b)
{
    b->n = 0;
    b->depth = 0;
    b->first[0] = true;
    b->after_key = false;
    if (b->p) b->p[0] = 0;
}

char *jb_take(jbuf *b, size_t *len)
{
    if (!b->p) {
        b->p = xmalloc(1);
        b->p[0] = 0;
    }
    char *p = b->p;
    if (len) *len = b->n;
    b->p = NULL;
    b->n = b->cap = 0;
    return p;
}

/* Room for n more bytes and the NUL after them. */
static void reserve(jbuf *b, size_t n)
{
    if (b->n + n + 1 <= b->cap) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + n + 1) cap *= 2;
    b->p = xrealloc(b->p, cap);
    b->cap = cap;
}

void jb_put(jbuf *b, const char *s, size_t n)
{
    reserve(b, n);
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void putc1(jbuf *b, char ch)
{
    reserve(b, 1);
    b->p[b->n++] = ch;
    b->p[b->n] = 0;
}

/* Before a value: a comma unless it is the first in its container, or it
 * follows a key. */
static void value(jbuf *b)
{
    if (b->after_key) {
        b->after_key = false;
        return;
    }
    if (!b->first[b->depth]) putc1(b, ',');
    b->first[b->depth] = false;
}

static void open(jbuf *b, char ch)
{
    value(b);
    putc1(b, ch);
    if (b->depth < JBUF_DEPTH - 1) b->depth++;
    b->first[b->depth] = true;
}

static void close_(jbuf *b, char ch)
{
    putc1(b, ch);
    if (b->depth > 0) b->depth--;
}

void jb_obj(jbuf *b)
{
    open(b, '{');
}
void jb_obj_end(jbuf *b)
{
    close_(b, '}');
}
void jb_arr(jbuf *b)
{
    open(b, '[');
}
void jb_arr_end(jbuf *b)
{
    close_(b, ']');
}

/* '"', then s[0..n) (nothing to escape in it), then tail[0..m): one
 * reservation for the usual string or key (a lease reply is mostly these) */
static void quoted_plain(jbuf *b, const char *s, size_t n, const char *tail, size_t m)
{
    reserve(b, n + 1 + m);
    char *o = b->p + b->n;
    o[0] = '"';
    memcpy(o + 1, s, n);
    memcpy(o + 1 + n, tail, m);
    b->n += n + 1 + m;
    b->p[b->n] = 0;
}

/* s[0..n) as a JSON string, and the ':' after it when it is a key. */
static void quoted(jbuf *b, const char *s, size_t n, bool key)
{
    size_t i = tq_json_plain(s, n);
    if (i == n) {
        quoted_plain(b, s, n, key ? "\":" : "\"", key ? 2 : 1);
        return;
    }
    putc1(b, '"');
    size_t run = 0;
    for (; i < n; i = run + tq_json_plain(s + run, n - run)) {
        unsigned char ch = (unsigned char)s[i];
        const char *esc;
        char tmp[8];
        if (ch == '"')
            esc = "\\\"";
        else if (ch == '\\')
            esc = "\\\\";
        else if (ch == '\n')
            esc = "\\n";
        else if (ch == '\r')
            esc = "\\r";
        else if (ch == '\t')
            esc = "\\t";
        else {
            snprintf(tmp, sizeof tmp, "\\u%04x", ch);
            esc = tmp;
        }
        jb_put(b, s + run, i - run);
        jb_put(b, esc, strlen(esc));
        run = i + 1;
    }
    jb_put(b, s + run, n - run);
    putc1(b, '"');
    if (key) putc1(b, ':');
}

void jb_key(jbuf *b, const char *k)
{
    value(b);
    quoted(b, k, strlen(k), true);
    b->after_key = true;
}

void jb_str(jbuf *b, const char *s)
{
    if (!s) {
        jb_null(b);
        return;
    }
    jb_strn(b, s, strlen(s));
}

void jb_strn(jbuf *b, const char *s, size_t n)
{
    value(b);
    quoted(b, s, n, false);
}

void jb_int(jbuf *b, long long v)
{
    char tmp[24], *end = tmp + sizeof tmp;
    value(b);
    char *p = tq_digits(end, v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v);
    if (v < 0) *--p = '-';
    jb_put(b, p, (size_t)(end - p));
}

void jb_uint(jbuf *b, unsigned long long v)
{
    char tmp[24], *end = tmp + sizeof tmp;
    value(b);
    char *p = tq_digits(end, v);
    jb_put(b, p, (size_t)(end - p));
}

void jb_num(jbuf *b, double v)
{
    char tmp[32];
    value(b);
    if (!isfinite(v)) {
        jb_put(b, "null", 4);
        return;
    }
    jb_put(b, tmp, (size_t)snprintf(tmp, sizeof tmp, "%.17g", v));
}

void jb_bool(jbuf *b, bool v)
{
    value(b);
    jb_put(b, v ? "true" : "false", v ? 4 : 5);
}

void jb_null(jbuf *b)
{
    value(b);
    jb_put(b, "null", 4);
}

void jb_raw(jbuf *b, const char *json, size_t len)
{
    if (!json) {
        jb_null(b);
        return;
    }
    value(b);
    jb_put(b, json, len);
}

void jb_text(jbuf *b, const char *s, size_t n)
{
    jb_put(b, s, n);
}

void jb_printf(jbuf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof tmp) {
        jb_put(b, tmp, (size_t)n);
        return;
    }
    char *big = xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    jb_put(b, big, (size_t)n);
    free(big);
}

void jb_kstr(jbuf *b, const char *k, const char *v)
{
    jb_key(b, k);
    jb_str(b, v);
}

void jb_kint(jbuf *b, const char *k, long long v)
{
    jb_key(b, k);
    jb_int(b, v);
}

void jb_kbool(jbuf *b, const char *k, bool v)
{
    jb_key(b, k);
    jb_bool(b, v);
}

void jb_kraw(jbuf *b, const char *k, const char *json)
{
    jb_key(b, k);
    jb_raw(b, json, json ? strlen(json) : 0);
}
