// SPDX-License-Identifier: Apache-2.0
/* JSON read in place (base/jscan.h). */
#include "base/jscan.h"
#include "base/utf8.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char *ws(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
    return p;
}

char *tq_digits(char *end, unsigned long long v)
{
    do {
        *--end = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return end;
}

int tq_hexval(char ch)
{
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

/* The 4 hex digits at p (p + 4 <= e) as a code unit; -1 when not hex. */
static long hex4(const char *p)
{
    long v = 0;
    for (int i = 0; i < 4; i++) {
        int h = tq_hexval(p[i]);
        if (h < 0) return -1;
        v = v * 16 + h;
    }
    return v;
}

/* The \u escape at p ('\\' then 'u'; may be a surrogate pair) into *cp;
 * returns past it, NULL when malformed (bad hex, a lone surrogate, NUL). */
static const char *unicode_escape(const char *p, const char *e, uint32_t *cp)
{
    if (e - p < 6) return NULL;
    long u = hex4(p + 2);
    if (u <= 0 || (u >= 0xDC00 && u <= 0xDFFF)) return NULL;
    p += 6;
    if (u >= 0xD800 && u <= 0xDBFF) {
        if (e - p < 6 || p[0] != '\\' || p[1] != 'u') return NULL;
        long lo = hex4(p + 2);
        if (lo < 0xDC00 || lo > 0xDFFF) return NULL;
        u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
        p += 6;
    }
    *cp = (uint32_t)u;
    return p;
}

#define ONES  0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

/* Of the 8 bytes at p, the quotes, backslashes and control characters, as
 * the top bit of each byte of the result, in memory order from the lowest.
 * Bytes >= 0x80 are never marked and never borrow.  The borrow tricks may
 * also mark a byte above a marked one, never the lowest alone: the lowest
 * mark is always one of those. */
static uint64_t special8(uint64_t v)
{
    uint64_t q = v ^ (ONES * '"'), b = v ^ (ONES * '\\');
    return (((q - ONES) & ~q) | ((b - ONES) & ~b) | ((v - ONES * 0x20) & ~v)) & HIGHS;
}

static uint64_t load8(const char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

#if defined(__GNUC__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define WORDS 1 /* the lowest mark is the first byte in memory */
#endif

size_t tq_json_plain(const char *s, size_t n)
{
    size_t i = 0;
#ifdef WORDS
    for (; n - i >= 8; i += 8) {
        uint64_t m = special8(load8(s + i));
        if (m) return i + ((size_t)__builtin_ctzll(m) >> 3);
    }
#endif
    while (i < n && (unsigned char)s[i] >= 0x20 && s[i] != '"' && s[i] != '\\') i++;
    return i;
}

/* p at the opening quote: past the closing one, or NULL. */
static const char *skip_string(const char *p, const char *e)
{
    const char *start = ++p;
    unsigned char high = 0; /* any byte >= 0x80: then the UTF-8 check */
    while (p < e) {
#ifdef WORDS
        if (e - p >= 8) { /* straight to the next byte to look at (or >= 0x80) */
            uint64_t v = load8(p), m = special8(v) | (v & HIGHS);
            if (!m) {
                p += 8;
                continue;
            }
            p += __builtin_ctzll(m) >> 3;
        }
#endif
        unsigned char ch = (unsigned char)*p;
        if (ch == '"') {
            if (high && !tq_utf8_valid(start, (size_t)(p - start))) return NULL;
            return p + 1;
        }
        if (ch < 0x20) return NULL;
        high |= ch & 0x80;
        if (ch != '\\') {
            p++;
            continue;
        }
        if (p + 1 >= e) return NULL;
        switch (p[1]) {
        case '"':
        case '\\':
        case '/':
        case 'b':
        case 'f':
        case 'n':
        case 'r':
        case 't': p += 2; break;
        case 'u': {
            uint32_t cp;
            if (!(p = unicode_escape(p, e, &cp))) return NULL;
            break;
        }
        default: return NULL;
        }
    }
    return NULL;
}

static const char *skip_digits(const char *p, const char *e)
{
    const char *s = p;
    while (p < e && *p >= '0' && *p <= '9') p++;
    return p > s ? p : NULL;
}

static const char *skip_number(const char *p, const char *e)
{
    if (*p == '-') p++;
    if (p >= e) return NULL;
    if (*p == '0')
        p++;
    else if (!(p = skip_digits(p, e)))
        return NULL;
    if (p < e && *p == '.' && !(p = skip_digits(p + 1, e))) return NULL;
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < e && (*p == '+' || *p == '-')) p++;
        if (!(p = skip_digits(p, e))) return NULL;
    }
    return p;
}

static const char *skip_word(const char *p, const char *e, const char *w, size_t n)
{
    return (size_t)(e - p) >= n && !memcmp(p, w, n) ? p + n : NULL;
}

static const char *skip_value(const char *p, const char *e, int depth);

/* p at '{' or '[': past the matching close, or NULL. */
static const char *skip_container(const char *p, const char *e, int depth)
{
    if (depth >= TQ_DEPTH_MAX) return NULL;
    char close = *p == '{' ? '}' : ']';
    bool obj = *p == '{';
    p = ws(p + 1, e);
    if (p < e && *p == close) return p + 1;
    for (;;) {
        if (obj) {
            if (p >= e || *p != '"' || !(p = skip_string(p, e))) return NULL;
            p = ws(p, e);
            if (p >= e || *p != ':') return NULL;
            p = ws(p + 1, e);
        }
        if (!(p = skip_value(p, e, depth + 1))) return NULL;
        p = ws(p, e);
        if (p >= e) return NULL;
        if (*p == close) return p + 1;
        if (*p != ',') return NULL;
        p = ws(p + 1, e);
    }
}

static const char *skip_value(const char *p, const char *e, int depth)
{
    if (p >= e) return NULL;
    switch (*p) {
    case '"': return skip_string(p, e);
    case '{':
    case '[': return skip_container(p, e, depth);
    case 't': return skip_word(p, e, "true", 4);
    case 'f': return skip_word(p, e, "false", 5);
    case 'n': return skip_word(p, e, "null", 4);
    default: return *p == '-' || (*p >= '0' && *p <= '9') ? skip_number(p, e) : NULL;
    }
}

const char *tq_scan_value(const char *p, const char *e)
{
    return skip_value(p, e, 0);
}

/* The one value in s[0..n) into *v. */
static bool only_value(const char *s, size_t n, tq_span *v)
{
    const char *e = s + n, *p = ws(s, e), *end = skip_value(p, e, 0);
    if (!end || ws(end, e) != e) return false;
    *v = (tq_span){p, (size_t)(end - p)};
    return true;
}

bool tq_scan_valid(const char *s, size_t n)
{
    tq_span v;
    return only_value(s, n, &v);
}

bool tq_scan_object(const char *s, size_t n, tq_span *obj)
{
    return only_value(s, n, obj) && obj->p[0] == '{';
}

bool tq_obj_outline(const char *s, size_t n, tq_span *obj)
{
    const char *e = s + n, *p = ws(s, e);
    while (e > p && (e[-1] == ' ' || e[-1] == '\n' || e[-1] == '\r' || e[-1] == '\t')) e--;
    if (e - p < 2 || p[0] != '{' || e[-1] != '}') return false;
    *obj = (tq_span){p, (size_t)(e - p)};
    return true;
}

/* ---- walking ----------------------------------------------------------------------------------
 */

static bool begin(tq_iter *it, tq_span v, char open)
{
    if (v.n < 2 || v.p[0] != open) return false;
    *it = (tq_iter){v.p + 1, v.p + v.n - 1, true, 0};
    return true;
}

bool tq_obj_begin(tq_iter *it, tq_span v)
{
    return begin(it, v, '{');
}

bool tq_arr_begin(tq_iter *it, tq_span v)
{
    return begin(it, v, '[');
}

/* Past the separator before the next item: 1 at an item, 0 at the end. */
static int next_item(tq_iter *it)
{
    const char *p = ws(it->p, it->e);
    if (it->close) { /* entered: the end is the bracket, wherever it is */
        if (p >= it->e) return -1;
        if (*p == it->close) {
            it->p = it->e = p + 1;
            it->close = 0; /* and stays at the end */
            return 0;
        }
    } else if (p >= it->e) {
        return 0;
    }
    if (!it->first) {
        if (*p != ',') return -1;
        p = ws(p + 1, it->e);
    }
    it->first = false;
    it->p = p;
    return 1;
}

static int take_value(tq_iter *it, tq_span *val)
{
    const char *end = skip_value(it->p, it->e, 1);
    if (!end) return -1;
    *val = (tq_span){it->p, (size_t)(end - it->p)};
    it->p = end;
    return 1;
}

int tq_obj_key(tq_iter *it, tq_span *key)
{
    int r = next_item(it);
    if (r <= 0) return r;
    const char *p = it->p, *end = *p == '"' ? skip_string(p, it->e) : NULL;
    if (!end) return -1;
    *key = (tq_span){p + 1, (size_t)(end - p - 2)};
    p = ws(end, it->e);
    if (p >= it->e || *p != ':') return -1;
    it->p = ws(p + 1, it->e);
    return 1;
}

int tq_obj_next(tq_iter *it, tq_span *key, tq_span *val)
{
    int r = tq_obj_key(it, key);
    return r <= 0 ? r : take_value(it, val);
}

int tq_arr_step(tq_iter *it)
{
    return next_item(it);
}

int tq_arr_next(tq_iter *it, tq_span *val)
{
    int r = next_item(it);
    return r <= 0 ? r : take_value(it, val);
}

int tq_iter_value(tq_iter *it, tq_span *val)
{
    return take_value(it, val);
}

bool tq_iter_enter(tq_iter *it, tq_iter *in, char open)
{
    if (it->p >= it->e || *it->p != open) return false;
    *in = (tq_iter){it->p + 1, it->e, true, open == '{' ? '}' : ']'};
    return true;
}

void tq_iter_leave(tq_iter *it, const tq_iter *in)
{
    it->p = in->p;
}

tq_iter tq_iter_at(tq_span v)
{
    return (tq_iter){v.p, v.p + v.n, true, 0};
}

/* ---- values -----------------------------------------------------------------------------------
 */

static size_t put_utf8(char *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Decodes the checked string text s[0..n) (inside the quotes) into o,
 * which has room for n + 1 bytes (a decoded string is never longer). */
static size_t decode(const char *s, size_t n, char *o)
{
    const char *p = s, *e = s + n;
    size_t k = 0;
    while (p < e) {
        const char *bs = memchr(p, '\\', (size_t)(e - p));
        size_t run = (size_t)((bs ? bs : e) - p);
        memcpy(o + k, p, run);
        k += run;
        if (!bs) break;
        p = bs + 2;
        switch (bs[1]) {
        case 'b': o[k++] = '\b'; break;
        case 'f': o[k++] = '\f'; break;
        case 'n': o[k++] = '\n'; break;
        case 'r': o[k++] = '\r'; break;
        case 't': o[k++] = '\t'; break;
        case 'u': {
            uint32_t cp = '?';
            const char *q = unicode_escape(bs, e, &cp);
            p = q ? q : bs + 6; /* checked already: q is never NULL */
            k += put_utf8(o + k, cp);
            break;
        }
        default: o[k++] = bs[1]; /* " \ / */
        }
    }
    o[k] = 0;
    return k;
}

bool tq_key_is(tq_span key, const char *lit)
{
    size_t n = strlen(lit);
    /* an escape makes the text longer than what it stands for: a key of
     * lit's length or shorter matches only as it is, without an escape
     * (the text \u006a matches the name "j", not the name "\u006a") */
    if (key.n <= n) return key.n == n && !memcmp(key.p, lit, n) && !memchr(key.p, '\\', n);
    if (!memchr(key.p, '\\', key.n)) return false;
    char *d = malloc(key.n + 1);
    bool same = d && decode(key.p, key.n, d) == n && !memcmp(d, lit, n);
    free(d);
    return same;
}

bool tq_obj_get(tq_span obj, const char *name, tq_span *val)
{
    tq_iter it;
    tq_span k, v;
    bool found = false;
    if (!tq_obj_begin(&it, obj)) return false;
    while (tq_obj_next(&it, &k, &v) > 0)
        if (tq_key_is(k, name)) { /* the last of duplicate keys, as jansson */
            *val = v;
            found = true;
        }
    return found;
}

bool tq_span_null(tq_span v)
{
    return v.n == 4 && !memcmp(v.p, "null", 4);
}

bool tq_span_true(tq_span v)
{
    return v.n == 4 && !memcmp(v.p, "true", 4);
}

long long tq_span_int(tq_span v)
{
    /* up to 18 digits cannot overflow: read them here */
    const char *p = v.p, *e = v.p + v.n;
    bool neg = p < e && *p == '-';
    p += neg;
    if (p < e && e - p <= 18) {
        long long x = 0;
        while (p < e && *p >= '0' && *p <= '9') x = x * 10 + (*p++ - '0');
        if (p == e) return neg ? -x : x;
    }
    if (!v.n || !(v.p[0] == '-' || (v.p[0] >= '0' && v.p[0] <= '9'))) return 0;
    for (size_t i = 0; i < v.n; i++)
        if (v.p[i] == '.' || v.p[i] == 'e' || v.p[i] == 'E') return 0;
    char buf[32];
    if (v.n >= sizeof buf) return 0;
    memcpy(buf, v.p, v.n);
    buf[v.n] = 0;
    errno = 0;
    long long x = strtoll(buf, NULL, 10);
    return errno ? 0 : x;
}

char *tq_span_str(tq_span v, bool *bad)
{
    if (tq_span_null(v)) return NULL;
    if (v.n < 2 || v.p[0] != '"') {
        *bad = true;
        return NULL;
    }
    char *o = malloc(v.n - 1);
    if (!o) {
        *bad = true;
        return NULL;
    }
    tq_span_str_into(v, o);
    return o;
}

size_t tq_span_str_into(tq_span v, char *o)
{
    return decode(v.p + 1, v.n - 2, o);
}

void tq_span_str_to(tq_span v, char *buf, size_t len)
{
    if (!len) return;
    buf[0] = 0;
    if (v.n < 2 || v.p[0] != '"') return;
    if (v.n - 1 <= len) { /* fits as it is (a state, a code): no copy */
        decode(v.p + 1, v.n - 2, buf);
        return;
    }
    bool bad = false;
    char *s = tq_span_str(v, &bad);
    if (!s) return;
    size_t n = strlen(s);
    if (n >= len) { /* cut, and not inside a character */
        n = len - 1;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) n--;
    }
    memcpy(buf, s, n);
    buf[n] = 0;
    free(s);
}

void tq_obj_str_to(tq_span obj, const char *name, char *buf, size_t len)
{
    tq_span v = {0};
    tq_span_str_to(tq_obj_get(obj, name, &v) ? v : (tq_span){0}, buf, len);
}

char *tq_span_text(tq_span v, bool *bad)
{
    if (tq_span_null(v)) return NULL;
    char *o = malloc(v.n + 1);
    if (!o) {
        *bad = true;
        return NULL;
    }
    memcpy(o, v.p, v.n);
    o[v.n] = 0;
    return o;
}
