// SPDX-License-Identifier: Apache-2.0
/* Reading what a client sent: a request's head, a chunked body (see
 * http_parse.h). */
#include "http_parse.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static bool is_tchar(unsigned char ch)
{
    return isalnum(ch) || strchr("!#$%&'*+-.^_`|~", ch) != NULL;
}

static bool ieq(const char *a, const char *b)
{
    return strcasecmp(a, b) == 0;
}

/* Does a comma-separated header value hold this token? */
static bool has_token(const char *v, const char *tok)
{
    size_t tl = strlen(tok);
    while (*v) {
        while (*v == ' ' || *v == '\t' || *v == ',') v++;
        const char *end = v;
        while (*end && *end != ',') end++;
        const char *e = end;
        while (e > v && (e[-1] == ' ' || e[-1] == '\t')) e--;
        if ((size_t)(e - v) == tl && strncasecmp(v, tok, tl) == 0) return true;
        v = end;
    }
    return false;
}

/* Parses the head in c->head (NUL-terminated, ends with CRLF CRLF).
 * Returns 0, or an HTTP status with *msg set. */
int http_parse_head(char *head, int max_headers, size_t max_body, http_req *r, http_head_info *info,
                    const char **msg)
{
    char *p = head;
    memset(info, 0, sizeof(*info));
    /* request line: METHOD SP target SP HTTP/1.x CRLF */
    char *sp1 = strchr(p, ' ');
    if (!sp1 || sp1 == p) return *msg = "bad request line", 400;
    *sp1 = 0;
    for (char *m = p; *m; m++)
        if (!is_tchar((unsigned char)*m)) return *msg = "bad method", 400;
    r->method = p;
    char *target = sp1 + 1;
    char *sp2 = strchr(target, ' ');
    char *eol = strstr(target, "\r\n");
    if (!sp2 || !eol || sp2 > eol) return *msg = "bad request line", 400;
    *sp2 = 0;
    *eol = 0;
    const char *ver = sp2 + 1;
    int minor;
    if (strcmp(ver, "HTTP/1.1") == 0)
        minor = 1;
    else if (strcmp(ver, "HTTP/1.0") == 0)
        minor = 0;
    else if (strncmp(ver, "HTTP/", 5) == 0 && isdigit((unsigned char)ver[5]) && ver[6] == '.' &&
             isdigit((unsigned char)ver[7]) && !ver[8])
        /* a well-formed version we do not speak; anything else after the
         * target (a space inside it, a third word) is a malformed line */
        return *msg = "only HTTP/1.0 and HTTP/1.1", 505;
    else
        return *msg = "bad request line", 400;
    if (target[0] != '/') return *msg = "the target must be a path", 400;
    for (char *t = target; *t; t++)
        if ((unsigned char)*t <= 0x20 || *t == 0x7f) return *msg = "bad target", 400;
    char *q = strchr(target, '?');
    if (q) {
        *q = 0;
        r->query = q + 1;
    } else {
        r->query = "";
    }
    r->path = target;
    /* headers */
    p = eol + 2;
    const char *cl = NULL, *te = NULL, *conn_hdr = NULL;
    bool expect_continue = false;
    while (!(p[0] == '\r' && p[1] == '\n')) {
        char *end = strstr(p, "\r\n");
        if (!end) return *msg = "bad header line", 400;
        *end = 0;
        if (*p == ' ' || *p == '\t') return *msg = "folded headers are not accepted", 400;
        char *colon = strchr(p, ':');
        if (!colon || colon == p) return *msg = "bad header line", 400;
        *colon = 0;
        for (char *n = p; *n; n++)
            if (!is_tchar((unsigned char)*n)) return *msg = "bad header name", 400;
        char *v = colon + 1;
        while (*v == ' ' || *v == '\t') v++;
        char *ve = v + strlen(v);
        while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t')) *--ve = 0;
        for (char *x = v; *x; x++)
            if (((unsigned char)*x < 0x20 && *x != '\t') || *x == 0x7f)
                return *msg = "bad header value", 400;
        if (r->nheaders >= max_headers || r->nheaders >= HTTP_MAX_HEADERS)
            return *msg = "too many headers", 431;
        r->headers[r->nheaders].name = p;
        r->headers[r->nheaders].value = v;
        r->nheaders++;
        if (ieq(p, "content-length")) {
            if (cl && strcmp(cl, v) != 0) return *msg = "differing Content-Length headers", 400;
            cl = v;
        } else if (ieq(p, "transfer-encoding")) {
            if (te) return *msg = "more than one Transfer-Encoding header", 400;
            te = v;
        } else if (ieq(p, "connection")) {
            conn_hdr = v;
        } else if (ieq(p, "expect")) {
            if (!ieq(v, "100-continue")) return *msg = "only Expect: 100-continue", 417;
            expect_continue = true;
        }
        p = end + 2;
    }
    if (cl && te) return *msg = "both Content-Length and Transfer-Encoding", 400;
    r->keep_alive = minor == 1 ? !(conn_hdr && has_token(conn_hdr, "close"))
                               : (conn_hdr && has_token(conn_hdr, "keep-alive"));
    if (te) {
        if (!ieq(te, "chunked")) return *msg = "only chunked transfer coding", 501;
        if (minor == 0) return *msg = "chunked in HTTP/1.0", 400;
        info->body = HTTP_BODY_CHUNKED;
    } else if (cl) {
        if (!*cl || strlen(cl) > 12) return *msg = "bad Content-Length", 400;
        for (const char *d = cl; *d; d++)
            if (!isdigit((unsigned char)*d)) return *msg = "bad Content-Length", 400;
        unsigned long long n = strtoull(cl, NULL, 10);
        if (n > max_body) return *msg = "the body is too large", 413;
        info->body = HTTP_BODY_LENGTH;
        info->length = (size_t)n;
    }
    info->expect_continue =
        expect_continue && (info->length > 0 || info->body == HTTP_BODY_CHUNKED);
    return 0;
}

enum { K_SIZE, K_DATA, K_DATA_END, K_TRAILER };

/* A CRLF-terminated line of at most max bytes at p[0..len) into buf: its
 * length with the CRLF, 0 when it is not whole yet, -1 when too long. */
static long take_line(const char *p, size_t len, char *buf, size_t max)
{
    const char *e = memmem(p, len, "\r\n", 2);
    if (!e) return len > max ? -1 : 0;
    size_t n = (size_t)(e - p);
    if (n >= max) return -1;
    memcpy(buf, p, n);
    buf[n] = 0;
    return (long)n + 2;
}

int http_chunked_read(http_chunked *k, const char *buf, size_t len, size_t *used,
                      size_t body_so_far, size_t max_body, size_t max_trailer,
                      void (*data)(void *ctx, const char *p, size_t n), void *ctx, const char **msg)
{
    size_t at = 0;
    int rc = 0;
    for (;;) {
        char line[1024];
        const char *p = buf + at;
        size_t have = len - at;
        if (k->phase == K_SIZE) {
            long n = take_line(p, have, line, 128 - 1);
            if (n < 0) rc = (*msg = "bad chunk size", 400);
            if (n <= 0) break;
            at += (size_t)n;
            char *semi = strchr(line, ';'); /* extensions are ignored */
            if (semi) *semi = 0;
            if (!*line || strlen(line) > 8) {
                rc = (*msg = "bad chunk size", 400);
                break;
            }
            for (char *d = line; *d && !rc; d++)
                if (!isxdigit((unsigned char)*d)) rc = (*msg = "bad chunk size", 400);
            if (rc) break;
            size_t size = strtoul(line, NULL, 16);
            if (body_so_far + size > max_body) {
                rc = (*msg = "the body is too large", 413);
                break;
            }
            k->want = size;
            k->phase = size ? K_DATA : K_TRAILER;
        } else if (k->phase == K_DATA) {
            if (!have) break;
            size_t take = have < k->want ? have : k->want;
            data(ctx, p, take);
            body_so_far += take;
            at += take;
            k->want -= take;
            if (k->want) break;
            k->phase = K_DATA_END;
        } else if (k->phase == K_DATA_END) {
            if (have < 2) break;
            if (p[0] != '\r' || p[1] != '\n') {
                rc = (*msg = "bad chunk end", 400);
                break;
            }
            at += 2;
            k->phase = K_SIZE;
        } else {
            long n = take_line(p, have, line, sizeof line - 1);
            if (n < 0) rc = (*msg = "bad trailer", 400);
            if (n <= 0) break;
            at += (size_t)n;
            k->trailer_bytes += (size_t)n;
            if (k->trailer_bytes > max_trailer) {
                rc = (*msg = "trailers too large", 431);
                break;
            }
            if (n == 2) { /* the blank line: done (trailers are dropped) */
                rc = 1;
                break;
            }
        }
    }
    *used = at;
    return rc;
}
