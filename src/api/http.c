// SPDX-License-Identifier: Apache-2.0
/* A small, strict HTTP/1.1 server.  See http.h for what and why. */
#include "http.h"
#include "http_parse.h"
#include "tls.h"

#include "api.h"
#include "base/clock.h"
#include "base/jscan.h"
#include "base/xalloc.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <sched.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

typedef enum { C_HEAD, C_BODY, C_CHUNK, C_HANDLING, C_CLOSING } cstate;

/* A connection reads into its own buffer (in[in_off, in_len)) with one
 * recv() when its socket is readable, and a body that does not fit there is
 * read straight into the request's body.  Replies wait in out until the end
 * of the loop's turn (the server's flush list), when they are written with
 * sendmsg(); only output the socket did not take waits for EV_WRITE.  This
 * replaced libevent's bufferevent, which cost an ioctl(FIONREAD) before
 * every read and two epoll_ctl() and a pass of the loop around every reply
 * (bench/RESULTS.md, "Fewer system calls a request"). */
typedef struct http_conn {
    http_server *srv;
    int fd;                  /* -1 once the socket is closed */
    struct event *rev, *wev; /* readable (added while reading), writable (while out waits) */
    struct evbuffer *out;    /* reply bytes not yet written */
    char *in;
    size_t in_off, in_len, in_cap;
    bool reading, writing; /* rev, wev added */
    bool flushing;         /* on the server's flush list */
    struct http_conn *fprev, *fnext;
    struct event *timer;
    cstate st;
    char peer[64];
    http_req req;
    char *head;
    char *body;
    size_t body_len, body_cap;
    size_t want;          /* C_BODY: bytes still to read */
    http_chunked chunked; /* C_CHUNK: the chunked body's reader */
    size_t scanned;       /* C_HEAD: bytes already searched for the blank line */
    bool started;         /* C_HEAD: a byte of the next request arrived */
    bool processing;      /* inside process(): replies only flag, process loops */
    bool dead;            /* socket gone while a handler holds the request */
    bool aborting;        /* inside on_abort: replies are ignored */
    bool close_after;
    bool peer_eof; /* the client sent all it will (a half-close): answer, then close */
    /* TLS (NULL: plain).  A read may wait for the socket to be writable and
     * a write for it to be readable (OpenSSL's want-read/want-write); a
     * write that must be retried offers tls_wlen bytes again. */
    tls_conn *tls;
    bool handshaking;
    bool sniffed;        /* the first byte was a handshake's */
    char peer_name[256]; /* the verified client certificate's common name, or "" */
    bool tls_read_wants_write, tls_write_wants_read;
    size_t tls_wlen;
    struct http_conn *prev, *next;
} http_conn;

struct http_server {
    struct event_base *base;
    struct evconnlistener *lis;
    http_limits lim;
    http_handler fn;
    void *ctx;
    http_conn *conns;
    size_t nconns;
    http_conn *flush; /* connections whose replies leave at the end of this turn */
    struct event *flush_ev;
    char date[40];
    time_t date_sec;
    int64_t last_dispatch_ns, yield_off_until_ns;
    bool yield_armed; /* the request being handled woke an idle server */
    bool closing;     /* stopping: every reply closes its connection */
    uint64_t n_yields, n_yields_slow;
    tls_server *tls; /* every connection speaks TLS; NULL: none does */
};

void http_limits_defaults(http_limits *l)
{
    l->max_header_bytes = 16 * 1024;
    l->max_headers = 100;
    l->max_body_bytes = 32u * 1024 * 1024;
    l->header_timeout_ms = 10000;
    l->body_timeout_ms = 60000;
    l->idle_timeout_ms = 60000;
    l->write_timeout_ms = 30000;
    l->max_connections = 10000;
    l->idle_yield = true;
}

const char *http_status_text(int status)
{
    switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 304: return "Not Modified";
    case 307: return "Temporary Redirect";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
    }
}

/* ---- connections -------------------------------------------------------------- */

static void flush_unlink(http_conn *c)
{
    if (!c->flushing) return;
    if (c->fprev)
        c->fprev->fnext = c->fnext;
    else
        c->srv->flush = c->fnext;
    if (c->fnext) c->fnext->fprev = c->fprev;
    c->fprev = c->fnext = NULL;
    c->flushing = false;
}

/* Closes the socket (the connection itself may live on: see conn_lost). */
static void conn_close_socket(http_conn *c)
{
    flush_unlink(c);
    if (c->rev) event_free(c->rev);
    if (c->wev) event_free(c->wev);
    c->rev = c->wev = NULL;
    c->reading = c->writing = false;
    tls_conn_free(c->tls); /* its close_notify, when the session is sound */
    c->tls = NULL;
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
    if (c->out) evbuffer_drain(c->out, evbuffer_get_length(c->out));
}

static void conn_free(http_conn *c)
{
    http_server *s = c->srv;
    if (c->prev)
        c->prev->next = c->next;
    else if (s->conns == c)
        s->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    s->nconns--;
    conn_close_socket(c);
    if (c->out) evbuffer_free(c->out);
    if (c->timer) event_free(c->timer);
    free(c->in);
    free(c->head);
    free(c->body);
    free(c);
}

/* Reading on or off (off: the buffer is full while a request is handled,
 * or the connection is closing). */
static void want_read(http_conn *c, bool on)
{
    if (on && c->peer_eof) return; /* nothing more will come */
    if (c->fd < 0 || on == c->reading) return;
    if (on)
        event_add(c->rev, NULL);
    else
        event_del(c->rev);
    c->reading = on;
    /* what the session holds already, the socket will not announce */
    if (on && c->tls && tls_has_pending(c->tls)) event_active(c->rev, EV_READ, 1);
}

static size_t in_avail(const http_conn *c)
{
    return c->in_len - c->in_off;
}

static const char *in_at(const http_conn *c)
{
    return c->in + c->in_off;
}

static void in_take(http_conn *c, size_t n)
{
    c->in_off += n;
    if (c->in_off == c->in_len) c->in_off = c->in_len = 0;
}

/* Room for n more body bytes (and the NUL after them). */
static void body_reserve(http_conn *c, size_t n)
{
    if (c->body_len + n + 1 <= c->body_cap) return;
    size_t cap = c->body_cap ? c->body_cap : 1024;
    while (cap < c->body_len + n + 1) cap *= 2;
    c->body = xrealloc(c->body, cap);
    c->body_cap = cap;
}

static void body_append(http_conn *c, const char *p, size_t n)
{
    body_reserve(c, n);
    memcpy(c->body + c->body_len, p, n);
    c->body_len += n;
    c->body[c->body_len] = 0;
}

/* ---- writing ----------------------------------------------------------------- */

static void conn_lost(http_conn *c);

/* TLS: writes what out holds through the session, a record (16 KiB) a
 * call, small replies together in one: 1 all written, TLS_WANT_WRITE or
 * TLS_WANT_READ (the rest waits), or TLS_FAIL. */
#define TLS_RECORD 16384
static int tls_flush(http_conn *c)
{
    while (evbuffer_get_length(c->out) > 0) {
        size_t len = evbuffer_get_length(c->out);
        size_t n = c->tls_wlen ? c->tls_wlen : len < TLS_RECORD ? len : TLS_RECORD;
        const unsigned char *p = evbuffer_pullup(c->out, (ev_ssize_t)n);
        ssize_t w = tls_write(c->tls, p, n);
        if (w > 0) {
            evbuffer_drain(c->out, (size_t)w);
            c->tls_wlen = 0;
            continue;
        }
        if (w == TLS_WANT_WRITE || w == TLS_WANT_READ) {
            c->tls_wlen = n; /* offered again, from where out holds them then */
            c->tls_write_wants_read = w == TLS_WANT_READ;
            return (int)w;
        }
        return TLS_FAIL;
    }
    return 1;
}

/* Waits for the socket to take more (at most write_timeout_ms without
 * progress). */
static void wait_writable(http_conn *c)
{
    if (c->writing) return;
    int ms = c->srv->lim.write_timeout_ms;
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    event_add(c->wev, &tv);
    c->writing = true;
}

/* Writes what out holds; what the socket does not take waits for EV_WRITE
 * (at most write_timeout_ms without progress).  A closing connection is
 * freed once its reply is out. */
static void conn_write(http_conn *c)
{
    if (c->tls) {
        int r = tls_flush(c);
        if (r == TLS_FAIL) {
            conn_lost(c);
            return;
        }
        if (r == TLS_WANT_WRITE) {
            wait_writable(c);
            return;
        }
        if (r == TLS_WANT_READ) {
            /* on_readable writes again; reading may be off meanwhile */
            if (c->fd >= 0 && !c->reading) event_add(c->rev, NULL);
            return;
        }
    }
    while (evbuffer_get_length(c->out) > 0) {
        struct evbuffer_iovec v[16];
        int nv = evbuffer_peek(c->out, -1, NULL, v, 16);
        if (nv > 16) nv = 16;
        struct iovec iov[16];
        for (int i = 0; i < nv; i++) iov[i] = (struct iovec){v[i].iov_base, v[i].iov_len};
        struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)nv};
        ssize_t w = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            evbuffer_drain(c->out, (size_t)w);
            continue;
        }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            wait_writable(c);
            return;
        }
        conn_lost(c); /* the peer is gone */
        return;
    }
    if (c->writing) {
        event_del(c->wev);
        c->writing = false;
    }
    if (c->st == C_CLOSING) conn_free(c);
}

/* The reply bytes just added to out leave at the end of this turn of the
 * loop, with the others (fewer context switches under load than a write
 * each: measured, about 10% of the drain rate on 2 cores). */
static void queue_write(http_conn *c)
{
    http_server *s = c->srv;
    if (c->flushing || c->writing || c->fd < 0) return;
    c->flushing = true;
    c->fprev = NULL;
    c->fnext = s->flush;
    if (s->flush) s->flush->fprev = c;
    s->flush = c;
    if (!event_pending(s->flush_ev, EV_TIMEOUT, NULL)) event_active(s->flush_ev, EV_TIMEOUT, 1);
}

static void on_flush(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    http_server *s = arg;
    while (s->flush) {
        http_conn *c = s->flush;
        flush_unlink(c);
        conn_write(c); /* may free c */
    }
}

static void on_readable(evutil_socket_t fd, short what, void *arg);
static bool tls_go(http_conn *c);

static void on_writable(evutil_socket_t fd, short what, void *arg)
{
    http_conn *c = arg;
    if (what & EV_TIMEOUT) {
        conn_lost(c); /* a reply nobody reads */
        return;
    }
    if (c->handshaking || c->tls_read_wants_write) {
        if (evbuffer_get_length(c->out) == 0) {
            event_del(c->wev);
            c->writing = false;
        }
        if (c->handshaking) {
            tls_go(c); /* may free c */
            return;
        }
        c->tls_read_wants_write = false;
        on_readable(fd, EV_READ, c); /* may free c */
        return;
    }
    conn_write(c);
}

static void arm(http_conn *c, int ms)
{
    if (ms <= 0) {
        event_del(c->timer);
        return;
    }
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    event_add(c->timer, &tv);
}

static void reset_request(http_conn *c)
{
    free(c->head);
    c->head = NULL;
    free(c->body);
    c->body = NULL;
    c->body_len = c->body_cap = 0;
    memset(&c->req, 0, sizeof(c->req));
    c->req.conn = c;
    c->scanned = 0;
    c->started = false;
    memset(&c->chunked, 0, sizeof c->chunked);
}

static const char *date_header(http_server *s)
{
    time_t now = time(NULL);
    if (now != s->date_sec) {
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(s->date, sizeof s->date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
        s->date_sec = now;
    }
    return s->date;
}

static void process(http_conn *c);

typedef struct hbuf {
    char *p;
    size_t n, cap;
} hbuf;

static void hb_put(hbuf *h, const char *s)
{
    size_t n = strlen(s);
    if (n > h->cap - 1 - h->n) n = h->cap - 1 - h->n; /* extra headers are ours: short */
    memcpy(h->p + h->n, s, n);
    h->n += n;
}

/* A reply's head into buf (cap bytes); returns its length.  Written by hand:
 * snprintf's format walk was a fifth of a small reply's cost. */
static int reply_head(char *buf, size_t cap, int status, const char *date, size_t len,
                      const char *ctype, const char *extra, bool keep)
{
    hbuf h = {buf, 0, cap};
    char num[24], *end = num + sizeof num, *p = end;
    *--p = 0;
    size_t v = len;
    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    char code[5] = {(char)('0' + status / 100 % 10), (char)('0' + status / 10 % 10),
                    (char)('0' + status % 10), ' ', 0};
    hb_put(&h, "HTTP/1.1 ");
    hb_put(&h, code);
    hb_put(&h, http_status_text(status));
    hb_put(&h, "\r\nDate: ");
    hb_put(&h, date);
    hb_put(&h, "\r\nContent-Length: ");
    hb_put(&h, p);
    hb_put(&h, "\r\n");
    if (ctype) {
        hb_put(&h, "Content-Type: ");
        hb_put(&h, ctype);
        hb_put(&h, "\r\n");
    }
    if (extra) hb_put(&h, extra);
    if (!keep) hb_put(&h, "Connection: close\r\n");
    hb_put(&h, "\r\n");
    buf[h.n] = 0;
    return (int)h.n;
}

/* ---- a request that wakes an idle server ------------------------------------ */

/* When a request wakes a server that slept, the server has usually taken the
 * CPU from the client that sent it, before that client could block waiting
 * for the answer.  If the handler then wakes a long poll (a submit waking a
 * worker), the scheduler sees two threads on this CPU and puts the worker on
 * another one, which on a VM is an idle vCPU the host must schedule first:
 * tens to hundreds of µs, and the host's steal lands there.  So such a
 * request yields once before its handler (the client runs on to its read and
 * blocks; the worker is then woken onto this CPU) and once after the woken
 * reply leaves (the worker runs before the rest of the loop's turn).  Under
 * load the loop never sleeps a millisecond, so this never happens.  A yield
 * that took long means other threads want this CPU: yielding to them costs a
 * time slice, so yields stop for a second (bench/RESULTS.md, "A request that
 * wakes an idle server"). */
#define IDLE_WAKE_NS   1000000LL    /* the loop handled nothing this long */
#define YIELD_SLOW_NS  500000LL     /* a yield that took longer found the CPU busy */
#define YIELD_PAUSE_NS 1000000000LL /* and stops yields this long */

static void yield_once(http_server *s)
{
    int64_t t0 = tq_mono_ns();
    sched_yield();
    int64_t t1 = tq_mono_ns();
    s->n_yields++;
    if (t1 - t0 > YIELD_SLOW_NS) {
        s->n_yields_slow++;
        s->yield_off_until_ns = t1 + YIELD_PAUSE_NS;
        s->yield_armed = false;
    }
}

void http_server_yields(const http_server *s, uint64_t *yields, uint64_t *slow)
{
    *yields = s->n_yields;
    *slow = s->n_yields_slow;
}

/* Writes a reply; the connection carries on or closes after. */
static void send_reply(http_conn *c, int status, const char *ctype, const char *extra,
                       const char *body, size_t len, bool close)
{
    struct evbuffer *out = c->out;
    bool keep = !close && c->req.keep_alive && !c->close_after && !c->srv->closing;
    /* after a half-close: the last request read is answered with a close */
    if (c->peer_eof && !memmem(in_at(c), in_avail(c), "\r\n\r\n", 4)) keep = false;
    char head[1024];
    int hn = reply_head(head, sizeof head, status, date_header(c->srv), len, ctype, extra, keep);
    /* HEAD: the same head as GET, without the body */
    if (c->req.method && strcmp(c->req.method, "HEAD") == 0) len = 0;
    /* A reply to a request that waited (a long poll that work woke up) is
     * written at once, rather than on the next turn of the loop: it leaves
     * before whatever this turn does next (such as waking the store's writer
     * thread, which would take the CPU from the worker this reply wakes).
     * Other replies go out together at the end of the turn, which costs
     * fewer context switches under load (measured: direct writes for every
     * reply cut the drain rate by about 10% on 2 cores).  What the socket
     * does not take waits in out.  A reply that closes always goes through
     * out: the connection is freed once it is written (conn_write). */
    size_t sent = 0;
    if (c->tls && keep && c->req.write_now && evbuffer_get_length(out) == 0) {
        /* the same through the session: head and body in one record; what
         * it does not take (or a failure) is conn_write's, at the turn's end */
        evbuffer_add(out, head, (size_t)hn);
        if (len) evbuffer_add(out, body, len);
        sent = (size_t)hn + len;
        if (tls_flush(c) == 1 && c->srv->yield_armed) {
            c->srv->yield_armed = false;
            yield_once(c->srv);
        }
    } else if (keep && c->req.write_now && evbuffer_get_length(out) == 0) {
        struct iovec iov[2] = {{head, (size_t)hn}, {(void *)body, len}};
        struct msghdr mh = {.msg_iov = iov, .msg_iovlen = len ? 2 : 1};
        ssize_t w = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) sent = (size_t)w;
        if (w > 0 && c->srv->yield_armed) {
            c->srv->yield_armed = false;
            yield_once(c->srv); /* the worker this woke runs now */
        }
    }
    if (sent < (size_t)hn) {
        evbuffer_add(out, head + sent, (size_t)hn - sent);
        if (len) evbuffer_add(out, body, len);
    } else if (sent - (size_t)hn < len) {
        evbuffer_add(out, body + (sent - (size_t)hn), len - (sent - (size_t)hn));
    }
    if (evbuffer_get_length(out) > 0) queue_write(c);
    reset_request(c);
    if (!keep) {
        c->st = C_CLOSING;
        arm(c, c->srv->lim.write_timeout_ms);
        want_read(c, false);
        /* freed once the reply is out (conn_write) */
        return;
    }
    c->st = C_HEAD;
    arm(c, c->srv->lim.idle_timeout_ms);
    want_read(c, true);
    if (!c->processing) process(c);
}

static void error_reply(http_conn *c, int status, const char *msg)
{
    char body[512];
    const char *code = status == 413 || status == 431 ? "too_large"
                       : status == 408                ? "timeout"
                       : status == 503                ? "unavailable"
                                                      : "invalid";
    int n =
        snprintf(body, sizeof body, "{\"error\":{\"code\":\"%s\",\"message\":\"%s\"}}", code, msg);
    c->close_after = true;
    c->req.keep_alive = false;
    send_reply(c, status, "application/json", NULL, body, (size_t)n, true);
}

/* ---- the state machine -------------------------------------------------------- */

static void dispatch(http_conn *c)
{
    if (!c->body) {
        c->body = xmalloc(1);
        c->body[0] = 0;
    }
    c->req.body = c->body;
    c->req.body_len = c->body_len;
    c->req.peer = c->peer;
    c->req.peer_cert = c->peer_name[0] ? c->peer_name : NULL;
    c->req.conn = c;
    c->req.start_ns = tq_mono_ns();
    c->st = C_HANDLING;
    event_del(c->timer); /* a handler may wait as long as it needs (long polls) */
    http_server *s = c->srv;
    int64_t now = c->req.start_ns;
    bool woke = s->lim.idle_yield && now - s->last_dispatch_ns > IDLE_WAKE_NS &&
                now >= s->yield_off_until_ns;
    s->last_dispatch_ns = now;
    s->yield_armed = woke;
    if (woke) yield_once(s);
    s->fn(s->ctx, &c->req); /* may free c */
    s->yield_armed = false;
}

static void chunk_data(void *ctx, const char *p, size_t n)
{
    body_append(ctx, p, n);
}

static void process(http_conn *c)
{
    c->processing = true;
    const http_limits *lim = &c->srv->lim;
    for (;;) {
        if (c->st == C_HEAD) {
            size_t len = in_avail(c);
            if (len == 0) break;
            if (!c->started) {
                c->started = true;
                arm(c, lim->header_timeout_ms);
            }
            size_t from = c->scanned > 3 ? c->scanned - 3 : 0;
            const char *at = in_at(c);
            const char *end = memmem(at + from, len - from, "\r\n\r\n", 4);
            if (!end) {
                if (len > lim->max_header_bytes) {
                    error_reply(c, 431, "the request head is too large");
                    break;
                }
                c->scanned = len;
                break;
            }
            size_t hlen = (size_t)(end - at) + 4;
            if (hlen > lim->max_header_bytes) {
                error_reply(c, 431, "the request head is too large");
                break;
            }
            c->head = xmalloc(hlen + 1);
            memcpy(c->head, at, hlen);
            c->head[hlen] = 0;
            in_take(c, hlen);
            const char *msg = NULL;
            http_head_info info;
            int st = http_parse_head(c->head, lim->max_headers, lim->max_body_bytes, &c->req, &info,
                                     &msg);
            if (st) {
                error_reply(c, st, msg);
                break;
            }
            c->st = info.body == HTTP_BODY_CHUNKED ? C_CHUNK : C_BODY;
            c->want = info.length;
            memset(&c->chunked, 0, sizeof c->chunked);
            if (info.expect_continue) {
                evbuffer_add(c->out, "HTTP/1.1 100 Continue\r\n\r\n", 25);
                queue_write(c);
            }
            arm(c, lim->body_timeout_ms);
            continue;
        }
        if (c->st == C_BODY) {
            size_t have = in_avail(c);
            if (c->want) {
                size_t take = have < c->want ? have : c->want;
                if (take) body_append(c, in_at(c), take);
                in_take(c, take);
                c->want -= take;
                if (c->want) break;
            }
            dispatch(c);
            continue;
        }
        if (c->st == C_CHUNK) {
            const char *msg = NULL;
            size_t used;
            int rc =
                http_chunked_read(&c->chunked, in_at(c), in_avail(c), &used, c->body_len,
                                  lim->max_body_bytes, lim->max_header_bytes, chunk_data, c, &msg);
            in_take(c, used);
            if (rc == 0) break;
            if (rc != 1) {
                error_reply(c, rc, msg);
                break;
            }
            dispatch(c);
            continue;
        }
        break; /* C_HANDLING or C_CLOSING: wait */
    }
    c->processing = false;
    if (c->peer_eof && c->st != C_HANDLING && c->st != C_CLOSING) {
        /* after a half-close, a request not whole by now never will be */
        c->st = C_CLOSING;
        arm(c, c->srv->lim.write_timeout_ms);
    }
    if (c->st == C_CLOSING && evbuffer_get_length(c->out) == 0) conn_free(c);
}

/* TLS: what the session gives, up to room bytes, as recv() would say it
 * (-1 with errno EAGAIN: nothing now).  Several records are read while
 * room is left; data the session still holds comes back through the read
 * event, made active, since the socket will not announce it. */
static ssize_t tls_fill(http_conn *c, char *dst, size_t room)
{
    size_t got = 0;
    ssize_t r = 0;
    while (got < room) {
        r = tls_read(c->tls, dst + got, room - got);
        if (r <= 0) break;
        got += (size_t)r;
    }
    if (r == TLS_WANT_WRITE) {
        c->tls_read_wants_write = true; /* on_writable reads again */
        wait_writable(c);
    }
    if (got > 0) {
        if (tls_has_pending(c->tls) && c->reading) event_active(c->rev, EV_READ, 1);
        return (ssize_t)got;
    }
    if (r == 0) return 0;
    errno = r == TLS_FAIL ? ECONNRESET : EAGAIN;
    return -1;
}

/* Reads what the socket holds: into the body when a body is being read and
 * nothing else waits in the buffer, else into the buffer (which grows up to
 * max_header_bytes + 64 KiB; full, reading stops until a request is taken
 * from it).  false: the connection is gone (the peer closed or the socket
 * failed). */
static bool conn_fill(http_conn *c)
{
    char *dst;
    size_t room;
    bool into_body = c->st == C_BODY && c->want > 0 && in_avail(c) == 0;
    if (into_body) {
        body_reserve(c, c->want < 16384 ? c->want : 16384);
        room = c->body_cap - c->body_len - 1;
        if (room > c->want) room = c->want;
        dst = c->body + c->body_len;
    } else {
        if (c->in_off) {
            memmove(c->in, c->in + c->in_off, in_avail(c));
            c->in_len -= c->in_off;
            c->in_off = 0;
        }
        size_t limit = c->srv->lim.max_header_bytes + 65536;
        if (c->in_cap - c->in_len < 2048 && c->in_cap < limit) {
            size_t cap = c->in_cap ? c->in_cap * 2 : 4096;
            c->in = xrealloc(c->in, cap < limit ? cap : limit);
            c->in_cap = cap < limit ? cap : limit;
        }
        room = c->in_cap - c->in_len;
        if (room == 0) {
            want_read(c, false);
            return true;
        }
        dst = c->in + c->in_len;
    }
    ssize_t n = c->tls ? tls_fill(c, dst, room) : recv(c->fd, dst, room, 0);
    if (n > 0) {
        if (into_body) {
            c->body_len += (size_t)n;
            c->body[c->body_len] = 0;
            c->want -= (size_t)n;
        } else {
            c->in_len += (size_t)n;
        }
        return true;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return true;
    if (n == 0 && !(c->st == C_HANDLING && c->req.long_poll)) {
        /* end of input: maybe only a half-close, so what was read is
         * answered (process closes once nothing whole is left) */
        want_read(c, false);
        c->peer_eof = true;
        return true;
    }
    conn_lost(c);
    return false;
}

/* ---- TLS: the handshake ------------------------------------------------------------------- */

/* A TLS port that was sent plain HTTP (a request line's first byte, where
 * a handshake record starts 0x16) answers it so, in plain HTTP, and closes:
 * the client learns why rather than seeing a connection reset. */
static void refuse_plain(http_conn *c)
{
    static const char msg[] =
        "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: 88\r\n"
        "Connection: close\r\n\r\n"
        "{\"error\":{\"code\":\"invalid\",\"message\":\"this port speaks TLS: use https:// "
        "to reach it\"}}\n";
    char sink[4096];
    while (recv(c->fd, sink, sizeof sink, MSG_DONTWAIT) > 0) {
    } /* read what came, so that the close sends no reset before the answer */
    ssize_t w = send(c->fd, msg, sizeof msg - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)w;
    shutdown(c->fd, SHUT_WR);
}

/* Goes on with a connection's handshake; false when the connection is
 * gone (failed, or refused). */
static bool tls_go(http_conn *c)
{
    if (!c->sniffed) {
        unsigned char first;
        ssize_t n = recv(c->fd, &first, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return true;
        if (n <= 0) {
            conn_free(c);
            return false;
        }
        c->sniffed = true;
        if (first != 0x16) { /* not a TLS handshake record */
            if (first >= 'A' && first <= 'Z') refuse_plain(c);
            log_event(LOG_DEBUG, "tls", "%s sent no TLS handshake%s", c->peer,
                      first >= 'A' && first <= 'Z' ? " (plain HTTP): refused" : "");
            conn_free(c);
            return false;
        }
    }
    char why[256];
    int r = tls_handshake(c->tls, why, sizeof why);
    if (r == 1) {
        c->handshaking = false;
        const char *name = tls_peer_name(c->tls);
        if (name) snprintf(c->peer_name, sizeof c->peer_name, "%s", name);
        arm(c, c->srv->lim.idle_timeout_ms);
        if (tls_has_pending(c->tls)) event_active(c->rev, EV_READ, 1); /* a request came along */
        return true;
    }
    if (r == TLS_WANT_WRITE) wait_writable(c);
    if (r == TLS_WANT_READ || r == TLS_WANT_WRITE) return true;
    log_event(LOG_DEBUG, "tls", "handshake with %s failed: %s", c->peer, why);
    conn_free(c);
    return false;
}

static void on_readable(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    http_conn *c = arg;
    if (c->handshaking) {
        tls_go(c); /* may free c; once done, the request comes as a read */
        return;
    }
    if (c->tls_write_wants_read) {
        c->tls_write_wants_read = false;
        if (!c->reading) event_del(c->rev);
        conn_write(c); /* may free c */
        return;
    }
    if (!conn_fill(c)) return;
    if (c->st == C_HANDLING || c->st == C_CLOSING) return; /* pipelined: later */
    process(c);                                            /* may free c */
}

/* The peer is gone (or the socket failed). */
static void conn_lost(http_conn *c)
{
    if (c->st == C_HANDLING) {
        conn_close_socket(c);
        event_del(c->timer);
        c->dead = true;
        if (c->req.on_abort) {
            c->aborting = true;
            c->req.on_abort(&c->req);
            conn_free(c);
        }
        /* else: freed when the handler replies */
        return;
    }
    conn_free(c);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    http_conn *c = arg;
    if (c->handshaking) {
        conn_free(c); /* a handshake not done within header_timeout_ms */
    } else if (c->st == C_HEAD && c->started) {
        error_reply(c, 408, "the request head took too long");
    } else if (c->st == C_BODY || c->st == C_CHUNK) {
        error_reply(c, 408, "the request body took too long");
    } else {
        conn_lost(c); /* idle keep-alive, or a reply nobody reads */
    }
}

/* libevent's constructors fail only when memory runs out: as xalloc does. */
static struct event *ev_made(struct event *ev)
{
    if (!ev) xalloc_die();
    return ev;
}

static void on_accept(struct evconnlistener *lis, evutil_socket_t fd, struct sockaddr *addr,
                      int alen, void *arg)
{
    (void)lis;
    (void)alen;
    http_server *s = arg;
    if (s->nconns >= (size_t)s->lim.max_connections && s->tls) {
        close(fd); /* no plain answer makes sense to a TLS client */
        return;
    }
    if (s->nconns >= (size_t)s->lim.max_connections) {
        static const char busy[] =
            "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
        ssize_t w = send(fd, busy, sizeof busy - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        (void)w;
        close(fd);
        return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    http_conn *c = xcalloc(1, sizeof(*c));
    c->srv = s;
    c->fd = fd;
    c->rev = ev_made(event_new(s->base, fd, EV_READ | EV_PERSIST, on_readable, c));
    c->wev = ev_made(event_new(s->base, fd, EV_WRITE | EV_PERSIST, on_writable, c));
    c->out = evbuffer_new();
    if (!c->out) xalloc_die();
    c->timer = ev_made(evtimer_new(s->base, on_timer, c));
    if (addr->sa_family == AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)addr;
        char ip[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip);
        snprintf(c->peer, sizeof c->peer, "%s:%d", ip, ntohs(in->sin_port));
    } else if (addr->sa_family == AF_INET6) {
        struct sockaddr_in6 *in = (struct sockaddr_in6 *)addr;
        char ip[INET6_ADDRSTRLEN];
        inet_ntop(AF_INET6, &in->sin6_addr, ip, sizeof ip);
        snprintf(c->peer, sizeof c->peer, "[%s]:%d", ip, ntohs(in->sin6_port));
    }
    c->next = s->conns;
    if (s->conns) s->conns->prev = c;
    s->conns = c;
    s->nconns++;
    reset_request(c);
    c->st = C_HEAD;
    if (s->tls) {
        /* the handshake, within the time a request's head has */
        c->tls = tls_conn_new(s->tls, fd);
        c->handshaking = true;
        want_read(c, true);
        arm(c, s->lim.header_timeout_ms);
        return;
    }
    want_read(c, true);
    arm(c, s->lim.idle_timeout_ms);
}

/* ---- public --------------------------------------------------------------------- */

http_server *http_server_new(struct event_base *base, const http_limits *lim, http_handler fn,
                             void *ctx)
{
    http_server *s = xcalloc(1, sizeof(*s));
    s->base = base;
    if (lim)
        s->lim = *lim;
    else
        http_limits_defaults(&s->lim);
    s->fn = fn;
    s->ctx = ctx;
    s->flush_ev = ev_made(event_new(base, -1, 0, on_flush, s));
    return s;
}

int http_server_listen(http_server *s, const char *host, int port, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    socklen_t slen;
    if (strchr(host, ':')) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((uint16_t)port);
        if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1) {
            snprintf(err, errlen, "bad listen address %s", host);
            return -1;
        }
        slen = sizeof *a;
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        a->sin_family = AF_INET;
        a->sin_port = htons((uint16_t)port);
        if (inet_pton(AF_INET, host, &a->sin_addr) != 1) {
            snprintf(err, errlen, "bad listen address %s (use an IP address)", host);
            return -1;
        }
        slen = sizeof *a;
    }
    s->lis =
        evconnlistener_new_bind(s->base, on_accept, s, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE,
                                1024, (struct sockaddr *)&ss, (int)slen);
    if (!s->lis) {
        snprintf(err, errlen, "cannot listen on %s:%d: %s", host, port, strerror(errno));
        return -1;
    }
    struct sockaddr_storage bound;
    socklen_t bl = sizeof bound;
    getsockname(evconnlistener_get_fd(s->lis), (struct sockaddr *)&bound, &bl);
    if (bound.ss_family == AF_INET) return ntohs(((struct sockaddr_in *)&bound)->sin_port);
    return ntohs(((struct sockaddr_in6 *)&bound)->sin6_port);
}

void http_server_set_tls(http_server *s, tls_server *tls)
{
    s->tls = tls;
}

void http_server_stop_accepting(http_server *s)
{
    if (s->lis) {
        evconnlistener_free(s->lis);
        s->lis = NULL;
    }
    s->closing = true;
}

void http_server_free(http_server *s)
{
    if (!s) return;
    if (s->lis) evconnlistener_free(s->lis);
    while (s->conns) {
        http_conn *c = s->conns;
        if (c->st == C_HANDLING && c->req.on_abort) {
            c->aborting = true;
            c->req.on_abort(&c->req);
        }
        conn_free(c);
    }
    event_free(s->flush_ev);
    free(s);
}

size_t http_server_connections(const http_server *s)
{
    return s->nconns;
}

const char *http_header_get(const http_req *r, const char *name)
{
    for (int i = 0; i < r->nheaders; i++)
        if (strcasecmp(r->headers[i].name, name) == 0) return r->headers[i].value;
    return NULL;
}

const char *http_query_get(const http_req *r, const char *name, char *buf, size_t len)
{
    size_t nl = strlen(name);
    const char *p = r->query;
    while (p && *p) {
        const char *amp = strchr(p, '&');
        const char *end = amp ? amp : p + strlen(p);
        const char *eq = memchr(p, '=', (size_t)(end - p));
        const char *kend = eq ? eq : end;
        if ((size_t)(kend - p) == nl && strncmp(p, name, nl) == 0) {
            size_t k = 0;
            for (const char *v = eq ? eq + 1 : end; v < end && k + 1 < len; v++) {
                if (*v == '+') {
                    buf[k++] = ' ';
                } else if (*v == '%' && v + 2 < end && tq_hexval(v[1]) >= 0 &&
                           tq_hexval(v[2]) >= 0 && (v[1] != '0' || v[2] != '0')) {
                    /* (%00 stays as sent: a NUL would cut the value short) */
                    buf[k++] = (char)(tq_hexval(v[1]) * 16 + tq_hexval(v[2]));
                    v += 2;
                } else {
                    buf[k++] = *v;
                }
            }
            buf[k] = 0;
            return buf;
        }
        p = amp ? amp + 1 : NULL;
    }
    return NULL;
}

bool http_req_input_ended(const http_req *r)
{
    return r->conn->peer_eof || r->conn->dead;
}

void http_reply(http_req *r, int status, const char *content_type, const char *extra_headers,
                const char *body, size_t len)
{
    http_conn *c = r->conn;
    if (c->aborting) return;
    if (c->dead) {
        conn_free(c);
        return;
    }
    send_reply(c, status, content_type, extra_headers, body, len, false);
}

void http_reply_close(http_req *r, int status, const char *body, size_t len)
{
    http_conn *c = r->conn;
    if (c->aborting) return;
    if (c->dead) {
        conn_free(c);
        return;
    }
    c->close_after = true;
    send_reply(c, status, "application/json", NULL, body, len, true);
}
