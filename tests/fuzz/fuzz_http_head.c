// SPDX-License-Identifier: Apache-2.0
/* The request head as a connection reads it (src/api/http.c, process()):
 * the bytes up to the first blank line, at most max_header_bytes, parsed in
 * place by http_parse_head with the default limits and with a small body
 * limit; then what the router and handlers ask of a parsed request (headers
 * by name, query parameters decoded).  A chunked body after the head goes
 * to http_chunked_read.  Checked: a refusal is one of the statuses the
 * contract names, with a reason; an acceptance points only into the head,
 * keeps the header limit, and never declares a body above the limit. */
#include "fuzz.h"

#include "api/http.h"
#include "api/http_parse.h"

#include <string.h>

static void count(void *ctx, const char *p, size_t n)
{
    (void)p;
    *(size_t *)ctx += n;
}

static void parse_once(const char *head, size_t hlen, const char *rest, size_t rest_len,
                       size_t max_body)
{
    http_limits lim;
    http_limits_defaults(&lim);
    char *h = malloc(hlen + 1);
    memcpy(h, head, hlen);
    h[hlen] = 0;
    http_req r;
    memset(&r, 0, sizeof r);
    http_head_info info;
    const char *msg = NULL;
    int st = http_parse_head(h, lim.max_headers, max_body, &r, &info, &msg);
    if (st) {
        FUZZ_CHECK(st == 400 || st == 413 || st == 417 || st == 431 || st == 501 || st == 505,
                   "status %d", st);
        FUZZ_CHECK(msg && *msg && http_status_text(st), "status %d without a reason", st);
        free(h);
        return;
    }
#define INSIDE(p) ((p) >= h && (p) < h + hlen + 1)
    FUZZ_CHECK(INSIDE(r.method) && INSIDE(r.path) && r.path[0] == '/', "request line");
    FUZZ_CHECK(r.query[0] == 0 || INSIDE(r.query), "query");
    FUZZ_CHECK(r.nheaders >= 0 && r.nheaders <= lim.max_headers, "%d headers", r.nheaders);
    for (int i = 0; i < r.nheaders; i++) {
        FUZZ_CHECK(INSIDE(r.headers[i].name) && INSIDE(r.headers[i].value) &&
                       r.headers[i].name[0] != 0,
                   "header %d", i);
        FUZZ_CHECK(http_header_get(&r, r.headers[i].name) != NULL, "header %s lost",
                   r.headers[i].name);
    }
#undef INSIDE
    FUZZ_CHECK(info.body == HTTP_BODY_NONE || info.body == HTTP_BODY_LENGTH ||
                   info.body == HTTP_BODY_CHUNKED,
               "body kind %d", (int)info.body);
    FUZZ_CHECK(info.length <= max_body, "a body of %zu over %zu", info.length, max_body);
    FUZZ_CHECK(info.body == HTTP_BODY_LENGTH || info.length == 0, "a length without a body");
    (void)http_header_get(&r, "idempotency-key");
    (void)http_header_get(&r, "authorization");
    /* every query parameter the query names, decoded into a small buffer and
     * a large one, as the handlers read them */
    const char *q = r.query;
    while (*q) {
        char name[64], small[4], big[1024];
        size_t n = strcspn(q, "=&");
        if (n < sizeof name) {
            memcpy(name, q, n);
            name[n] = 0;
            const char *a = http_query_get(&r, name, small, sizeof small);
            FUZZ_CHECK(!a || strlen(a) < sizeof small, "cut value too long");
            const char *b = http_query_get(&r, name, big, sizeof big);
            FUZZ_CHECK((a == NULL) == (b == NULL), "found once, not twice: %s", name);
            if (a && strlen(b) < sizeof big - 1)
                FUZZ_CHECK(strncmp(a, b, strlen(a)) == 0, "a cut value is not a prefix");
        }
        q += strcspn(q, "&");
        if (*q) q++;
    }
    if (info.body == HTTP_BODY_CHUNKED) {
        http_chunked k = {0};
        size_t used = 0, got = 0;
        int rc = http_chunked_read(&k, rest, rest_len, &used, 0, max_body, lim.max_header_bytes,
                                   count, &got, &msg);
        FUZZ_CHECK(used <= rest_len && got <= used && got <= max_body, "used %zu of %zu", used,
                   rest_len);
        FUZZ_CHECK(rc == 0 || rc == 1 || rc == 400 || rc == 413 || rc == 431, "rc %d", rc);
    }
    free(h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    http_limits lim;
    http_limits_defaults(&lim);
    const char *at = (const char *)data;
    const char *end = memmem(at, size, "\r\n\r\n", 4);
    if (!end) return 0;
    size_t hlen = (size_t)(end - at) + 4;
    if (hlen > lim.max_header_bytes) return 0; /* answered 431 before any parsing */
    parse_once(at, hlen, at + hlen, size - hlen, lim.max_body_bytes);
    parse_once(at, hlen, at + hlen, size - hlen, 100);
    return 0;
}
