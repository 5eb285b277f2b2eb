// SPDX-License-Identifier: Apache-2.0
/* The parts of HTTP/1.1 that read bytes a client sent: a request's head,
 * and a chunked body.  Pure functions over buffers (no connection, no I/O),
 * so that tests and fuzzers can feed them any bytes (tests/fuzz). */
#ifndef TENQ_API_HTTP_PARSE_H
#define TENQ_API_HTTP_PARSE_H

#include "http.h"

#include <stdbool.h>
#include <stddef.h>

/* What the head says of the body that follows. */
typedef enum { HTTP_BODY_NONE, HTTP_BODY_LENGTH, HTTP_BODY_CHUNKED } http_body_kind;

typedef struct http_head_info {
    http_body_kind body;
    size_t length;        /* HTTP_BODY_LENGTH: bytes to read */
    bool expect_continue; /* the client waits for 100 Continue before its body */
} http_head_info;

/* Parses a complete head (request line, headers, the blank line; head is
 * NUL-terminated just after it) in place: pieces are cut with NULs and r's
 * method, path, query, headers and keep_alive point into head.  At most
 * max_headers headers; a declared body larger than max_body is refused.
 * Returns 0, or the status to answer (400, 413, 417, 431, 501, 505) with
 * *msg saying why. */
int http_parse_head(char *head, int max_headers, size_t max_body, http_req *r, http_head_info *info,
                    const char **msg);

/* A chunked body being read.  Zero it to start. */
typedef struct http_chunked {
    int phase; /* internal */
    size_t want;
    size_t trailer_bytes;
} http_chunked;

/* Reads what it can of buf[0..len): the chunks' data goes to data(ctx,
 * bytes, n); *used tells how much of buf was taken (a line is taken only
 * once whole).  Returns 1 when the body is complete, 0 when it needs more
 * bytes, or the status to answer (400, 413, 431) with *msg.  body_so_far
 * and max_body bound the body, max_trailer the trailers. */
int http_chunked_read(http_chunked *k, const char *buf, size_t len, size_t *used,
                      size_t body_so_far, size_t max_body, size_t max_trailer,
                      void (*data)(void *ctx, const char *p, size_t n), void *ctx,
                      const char **msg);

#endif
