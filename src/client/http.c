// SPDX-License-Identifier: Apache-2.0
/* URLs, response heads and error words: see http.h. */
#include "http.h"

#include "tenq/errors.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int tq_url_parse(const char *url, tq_url *u, const char **why)
{
    memset(u, 0, sizeof(*u));
    if (!url || !*url) return *why = "empty server URL", TENQ_EINVALID;
    const char *p = url;
    if (!strncasecmp(p, "https://", 8)) {
        u->tls = true;
        p += 8;
    } else if (!strncasecmp(p, "http://", 7)) {
        p += 7;
    } else if (strstr(p, "://")) {
        return *why = "the URL must start with http:// or https://", TENQ_EINVALID;
    }
    const char *hs, *he, *rest;
    if (*p == '[') {
        hs = p + 1;
        he = strchr(hs, ']');
        if (!he) return *why = "unclosed [ in the host", TENQ_EINVALID;
        rest = he + 1;
    } else {
        hs = p;
        he = hs + strcspn(hs, ":/?#");
        rest = he;
    }
    size_t hl = (size_t)(he - hs);
    if (hl == 0) return *why = "no host in the URL", TENQ_EINVALID;
    if (hl >= sizeof u->host) return *why = "the host is too long", TENQ_EINVALID;
    for (const char *c = hs; c < he; c++)
        if ((unsigned char)*c <= ' ' || *c == '@' || *c == '[' || *c == ']' || *c == 0x7f)
            return *why = "bad character in the host", TENQ_EINVALID;
    memcpy(u->host, hs, hl);
    long port = u->tls ? 443 : 80;
    if (*rest == ':') {
        char *end;
        if (!isdigit((unsigned char)rest[1])) return *why = "bad port", TENQ_EINVALID;
        port = strtol(rest + 1, &end, 10);
        if (port < 1 || port > 65535 || end - rest > 6) return *why = "bad port", TENQ_EINVALID;
        rest = end;
    }
    if (*rest == '/') rest++;
    if (*rest) return *why = "a server URL has no path (use http(s)://host:port)", TENQ_EINVALID;
    snprintf(u->port, sizeof u->port, "%ld", port);
    bool v6 = strchr(u->host, ':') != NULL;
    snprintf(u->hostport, sizeof u->hostport, "%s%s%s:%ld", v6 ? "[" : "", u->host, v6 ? "]" : "",
             port);
    return 0;
}

/* ---- response heads ---------------------------------------------------------------------- */

static bool is_tchar(unsigned char ch)
{
    return isalnum(ch) || strchr("!#$%&'*+-.^_`|~", ch) != NULL;
}

/* Does the comma-separated value v[0..n) hold this token (any case)? */
static bool has_token(const char *v, size_t n, const char *tok)
{
    size_t tl = strlen(tok);
    size_t i = 0;
    while (i < n) {
        while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ',')) i++;
        size_t s = i;
        while (i < n && v[i] != ',') i++;
        size_t e = i;
        while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t')) e--;
        if (e - s == tl && strncasecmp(v + s, tok, tl) == 0) return true;
    }
    return false;
}

static bool name_is(const char *name, size_t n, const char *want)
{
    return strlen(want) == n && strncasecmp(name, want, n) == 0;
}

int tq_http_head_parse(const char *buf, size_t len, tq_http_head *h, const char **why)
{
    memset(h, 0, sizeof(*h));
    h->content_length = -1;
    /* find the end of the head first: nothing is judged on a partial line */
    size_t end = 0;
    bool found = false;
    for (size_t i = 0; i < len && !found; i++) {
        if (buf[i] != '\n') continue;
        if (i + 1 < len && buf[i + 1] == '\n') {
            end = i + 2;
            found = true;
        } else if (i + 2 < len && buf[i + 1] == '\r' && buf[i + 2] == '\n') {
            end = i + 3;
            found = true;
        }
    }
    if (!found) {
        /* a bad status line is reported at once, not after 64 KiB */
        size_t k = len < 7 ? len : 7;
        if (memcmp(buf, "HTTP/1.", k) != 0) return *why = "not an HTTP/1.x answer", TENQ_EPROTOCOL;
        if (len > TQ_HEAD_MAX) return *why = "the answer's head is too large", TENQ_EPROTOCOL;
        return 0;
    }
    if (end > TQ_HEAD_MAX) return *why = "the answer's head is too large", TENQ_EPROTOCOL;
    h->head_len = end;
    /* status line: HTTP/1.x SP 3DIGIT [SP reason] */
    const char *p = buf;
    const char *eol = memchr(p, '\n', end);
    size_t ll = (size_t)(eol - p);
    if (ll && p[ll - 1] == '\r') ll--;
    if (ll < 12 || memcmp(p, "HTTP/1.", 7) != 0 || !isdigit((unsigned char)p[7]) || p[8] != ' ' ||
        !isdigit((unsigned char)p[9]) || !isdigit((unsigned char)p[10]) ||
        !isdigit((unsigned char)p[11]) || (ll > 12 && p[12] != ' '))
        return *why = "bad status line", TENQ_EPROTOCOL;
    h->minor = p[7] - '0';
    h->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
    if (h->status < 100) return *why = "bad status code", TENQ_EPROTOCOL;
    bool keep_alive = false, chunked = false, other_te = false;
    /* header lines */
    p = eol + 1;
    for (;;) {
        eol = memchr(p, '\n', (size_t)(buf + end - p));
        ll = (size_t)(eol - p);
        if (ll && p[ll - 1] == '\r') ll--;
        if (ll == 0) break; /* the blank line */
        if (*p == ' ' || *p == '\t') return *why = "folded header line", TENQ_EPROTOCOL;
        const char *colon = memchr(p, ':', ll);
        if (!colon || colon == p) return *why = "bad header line", TENQ_EPROTOCOL;
        size_t nl = (size_t)(colon - p);
        for (size_t i = 0; i < nl; i++)
            if (!is_tchar((unsigned char)p[i])) return *why = "bad header name", TENQ_EPROTOCOL;
        const char *v = colon + 1, *ve = p + ll;
        while (v < ve && (*v == ' ' || *v == '\t')) v++;
        while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t')) ve--;
        size_t vl = (size_t)(ve - v);
        if (name_is(p, nl, "content-length")) {
            if (vl == 0 || vl > 15) return *why = "bad Content-Length", TENQ_EPROTOCOL;
            long long n = 0;
            for (size_t i = 0; i < vl; i++) {
                if (!isdigit((unsigned char)v[i]))
                    return *why = "bad Content-Length", TENQ_EPROTOCOL;
                n = n * 10 + (v[i] - '0');
            }
            if (h->content_length >= 0 && h->content_length != n)
                return *why = "differing Content-Length headers", TENQ_EPROTOCOL;
            h->content_length = n;
        } else if (name_is(p, nl, "transfer-encoding")) {
            if (has_token(v, vl, "chunked"))
                chunked = true;
            else if (!has_token(v, vl, "identity"))
                other_te = true;
        } else if (name_is(p, nl, "connection")) {
            if (has_token(v, vl, "close")) h->close = true;
            if (has_token(v, vl, "keep-alive")) keep_alive = true;
        }
        p = eol + 1;
    }
    if (h->minor == 0 && !keep_alive) h->close = true;
    bool no_body = h->status < 200 || h->status == 204 || h->status == 304;
    if (no_body) {
        h->content_length = 0;
        return 1;
    }
    if (chunked || other_te) {
        if (h->content_length >= 0)
            return *why = "both Content-Length and Transfer-Encoding", TENQ_EPROTOCOL;
        return *why = "chunked answers are not supported (expected Content-Length)", TENQ_EPROTOCOL;
    }
    if (h->content_length < 0) h->close = true; /* the body runs to the close */
    return 1;
}

/* ---- errors -------------------------------------------------------------------------------- */

int tq_err_from_answer(const char *word, int status)
{
    /* the words of errors.h; where several rows share one, the first is the
     * one the server means ("unavailable", "conflict"), except "internal" */
    static const int codes[] = {
#define CODE_(name, val, http, w, msg) TENQ_E##name,
        TENQ_ERRNO_MAP(CODE_)
#undef CODE_
    };
    if (word && *word) {
        if (!strcmp(word, "internal")) return TENQ_EINTERNAL;
        for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
            if (!strcmp(tenq_err_word(codes[i]), word)) return codes[i];
    }
    switch (status) {
    case 400: return TENQ_EINVALID;
    case 401: return TENQ_EUNAUTHENTICATED;
    case 403: return TENQ_EFORBIDDEN;
    case 404: return TENQ_ENOT_FOUND;
    case 408: return TENQ_ETIMEOUT;
    case 409: return TENQ_ECONFLICT;
    case 413:
    case 431: return TENQ_ETOO_LARGE;
    case 429: return TENQ_EOVERLOADED;
    case 502: return TENQ_EPROTOCOL;
    case 503: return TENQ_EUNAVAILABLE;
    case 504: return TENQ_ETIMEOUT;
    default: break;
    }
    if (status >= 500) return TENQ_EINTERNAL;
    if (status >= 400) return TENQ_EINVALID;
    return TENQ_EPROTOCOL; /* an answer that is neither success nor error */
}
