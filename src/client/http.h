// SPDX-License-Identifier: Apache-2.0
/* client/http — the pure parts of libtenq's HTTP: server URLs, response
 * heads, and the protocol's error words.  No I/O here, so the unit tests
 * (tests/unit/test_client_http.c) can feed them any bytes. */
#ifndef TENQ_CLIENT_HTTP_H
#define TENQ_CLIENT_HTTP_H

#include <stdbool.h>
#include <stddef.h>

/* A response head larger than this is refused (the server's are tiny). */
#define TQ_HEAD_MAX (64 * 1024)

typedef struct tq_url {
    char host[256]; /* a name or an address; IPv6 without brackets */
    char port[8];
    char hostport[272]; /* for the Host header: "host:port", "[::1]:port" */
    bool tls;           /* https */
    void *session;      /* conn.c's: the TLS session to resume there, or NULL */
} tq_url;

/* "https" or "http", for messages. */
#define TQ_SCHEME(u) ((u)->tls ? "https" : "http")

/* Parses "http://host[:port][/]" or "https://..." (the scheme may be left
 * out: http; the port defaults to 80, 443 for https).  Returns 0, or
 * TENQ_EINVALID with *why set to a constant reason. */
int tq_url_parse(const char *url, tq_url *u, const char **why);

typedef struct tq_http_head {
    int status;               /* 100..999 */
    int minor;                /* HTTP/1.minor */
    long long content_length; /* -1: none given (the body runs to the close) */
    bool close;               /* the server closes the connection after this answer */
    size_t head_len;          /* bytes of the status line, headers and blank line */
} tq_http_head;

/* Parses the response head at the start of buf[0..len).  Returns 1 when the
 * head is complete (*h filled), 0 when more bytes are needed, or
 * TENQ_EPROTOCOL with *why set to a constant reason.  A status without a
 * body (1xx, 204, 304) gets content_length 0.  Chunked answers are refused:
 * the tenq server always sends Content-Length. */
int tq_http_head_parse(const char *buf, size_t len, tq_http_head *h, const char **why);

/* The TENQ_E* code for an error answer: by the protocol's error word when
 * known (word may be NULL), else by the HTTP status. */
int tq_err_from_answer(const char *word, int status);

#endif
