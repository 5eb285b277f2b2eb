// SPDX-License-Identifier: Apache-2.0
/* http — a small, strict HTTP/1.1 server on libevent's loop and buffers.
 *
 * Why not evhttp: it cannot bound the time to receive a request head (a
 * client sending a byte a second keeps resetting its read timeout), count
 * headers, cap connections, or refuse Content-Length together with
 * Transfer-Encoding before reading a body.  Those are the limits a server
 * on the open network needs, so this layer enforces them itself.
 *
 * One request per connection at a time (pipelined requests wait their
 * turn), keep-alive, chunked request bodies, Expect: 100-continue, replies
 * that may be deferred (long polls): the handler keeps the request and
 * answers later with http_reply; if the client goes away first, on_abort is
 * called (a reply from inside it is ignored) and the request must not be
 * used after it returns.  A deferred request without on_abort stays valid
 * until its reply, which then just frees it.
 *
 * A client that half-closes (shutdown(SHUT_WR) after its requests) is
 * answered: the server stops reading, answers every request it read, then
 * closes.  A long poll (req->long_poll) is the exception: end of input
 * while it waits counts as the client gone (on_abort), since a client that
 * closed its socket looks the same and must not be handed jobs.
 */
#ifndef TENQ_API_HTTP_H
#define TENQ_API_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;

typedef struct http_server http_server;
typedef struct tls_server tls_server;
typedef struct http_req http_req;

typedef struct http_limits {
    size_t max_header_bytes; /* request line and headers (default 16 KiB) */
    int max_headers;         /* default 100 */
    size_t max_body_bytes;   /* default 32 MiB */
    int header_timeout_ms;   /* the whole head, from its first byte (10 s) */
    int body_timeout_ms;     /* the whole body (60 s) */
    int idle_timeout_ms;     /* keep-alive with no request (60 s) */
    int write_timeout_ms;    /* a client that does not read its reply (30 s) */
    int max_connections;     /* default 10,000 */
    bool idle_yield;         /* a request that wakes an idle server: see http.c (on) */
} http_limits;

void http_limits_defaults(http_limits *l);

typedef struct http_header {
    const char *name, *value;
} http_header;

#define HTTP_MAX_HEADERS 256

struct http_req {
    const char *method;
    const char *path;  /* decoded of nothing: the raw path without the query */
    const char *query; /* after '?', or "" */
    http_header headers[HTTP_MAX_HEADERS];
    int nheaders;
    const char *body; /* NUL-terminated copy; body_len bytes */
    size_t body_len;
    bool keep_alive;
    const char *peer;      /* "ip:port" */
    const char *peer_cert; /* TLS: the verified client certificate's common name, or NULL */
    int64_t start_ns;      /* monotonic, when the head was complete */
    /* for the handler */
    bool write_now; /* reply with a direct write (see send_reply) */
    void *user;
    void (*on_abort)(http_req *req);
    bool long_poll; /* a wait that the client's end of input ends (see above) */
    struct http_conn *conn;
};

/* Called for every complete request.  It must eventually call http_reply
 * (now or later), unless on_abort runs first. */
typedef void (*http_handler)(void *ctx, http_req *req);

http_server *http_server_new(struct event_base *base, const http_limits *lim, http_handler fn,
                             void *ctx);
/* Listens on host:port (port 0: any free port); returns the port, or -1
 * with a message in err. */
int http_server_listen(http_server *s, const char *host, int port, char *err, size_t errlen);
/* Every connection accepted from now on speaks TLS with tls's current
 * context (tls.h): the handshake within header_timeout_ms, then HTTP as
 * over a plain socket.  A client that sends plain HTTP instead is answered
 * 400 in plain HTTP and closed.  tls stays the caller's. */
void http_server_set_tls(http_server *s, tls_server *tls);
/* Stops accepting.  Connections stay open, so that a request a client sent
 * on one meanwhile is read and answered rather than cut off unanswered;
 * every reply from now on closes its connection. */
void http_server_stop_accepting(http_server *s);
/* Closes every connection (requests in flight are aborted) and frees. */
void http_server_free(http_server *s);
size_t http_server_connections(const http_server *s);
/* Yields made for requests that woke an idle server, and how many of them
 * found the CPU busy (which stops them for a second). */
void http_server_yields(const http_server *s, uint64_t *yields, uint64_t *slow);

/* A header's value (case-insensitive name), or NULL. */
const char *http_header_get(const http_req *r, const char *name);
/* Whether the client's input ended (a half-close, or a closed socket) while
 * the request was handled: a long poll must not begin for it. */
bool http_req_input_ended(const http_req *r);
/* A query parameter, decoded into buf (cut to fit; %00 is left as sent);
 * NULL when absent. */
const char *http_query_get(const http_req *r, const char *name, char *buf, size_t len);

/* Sends the reply and ends the request.  extra_headers: NULL or lines each
 * ending in "\r\n".  The body is copied. */
void http_reply(http_req *r, int status, const char *content_type, const char *extra_headers,
                const char *body, size_t len);
/* The same, and closes the connection after (errors at the protocol level). */
void http_reply_close(http_req *r, int status, const char *body, size_t len);

const char *http_status_text(int status);

#endif
