// SPDX-License-Identifier: Apache-2.0
/* The handle's one connection: connecting (with failover between servers),
 * sending a request, reading its answer.  A connected socket is blocking:
 * sends and the reads that must not wait say MSG_DONTWAIT, and waiting for
 * an answer is one recv() bounded by SO_RCVTIMEO, so the wake-up that brings
 * the answer also returns it (poll() then recv() is a system call more on
 * the path of every answer).  While a stop can interrupt the wait (a
 * worker's abort fd), it goes through poll() on both fds. */
#include "internal.h"
#include "base/clock.h"

#include "base/jscan.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* read_answer/send_all results besides 0 and TENQ_E* codes */
enum { R_LOST = 1, R_TIMEOUT = 2, R_ABORT = 3 };

void tq_disconnect(tenq_client *c)
{
    if (c->tls) {
        /* the session is kept, to resume at the next connection there */
        void *session = tq_tls_session(c->tls);
        if (session) {
            tq_url *u = &c->servers[c->fd_server];
            tq_tls_session_free(u->session);
            u->session = session;
        }
        tq_tls_free(c->tls);
        c->tls = NULL;
    }
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
}

/* Waits until fd is ready for events or the deadline passes: 1 ready (or in
 * error: the next call on fd tells), 0 timed out, -1 poll failed, -2 the
 * abort fd (-1: none) became readable at or after abort_from (a worker
 * stopping: see worker.c).  A ready fd wins over the abort fd. */
static int wait_fd(int fd, short events, int64_t deadline, int abort_fd, int64_t abort_from)
{
    for (;;) {
        int64_t now = tq_mono_ms(), left = deadline - now;
        if (left <= 0) return 0;
        bool watch = abort_fd >= 0 && now >= abort_from;
        if (abort_fd >= 0 && !watch && abort_from - now < left) left = abort_from - now;
        struct pollfd p[2] = {{fd, events, 0}, {abort_fd, POLLIN, 0}};
        int r = poll(p, watch ? 2 : 1, left > INT_MAX ? INT_MAX : (int)left);
        if (r > 0 && p[0].revents) return 1;
        if (r > 0) return -2;
        if (r < 0 && errno != EINTR) return -1;
    }
}

/* The fd that interrupts this handle's waits, or -1. */
static int abort_fd(const tenq_client *c)
{
    return c->abort_set ? c->abort_fd : -1;
}

int tq_tls_setup(tenq_client *c)
{
    if (c->tls_ctx) return 0;
    char why[512];
    if (tq_tls_ctx_new(c->ca_file, c->cert_file, c->key_file, &c->tls_ctx, why, sizeof why) != 0)
        return tq_seterr(c, TENQ_EINVALID, "TLS: %s", why);
    return 0;
}

/* The TLS handshake on a connected non-blocking socket, within the
 * deadline: 0 with c->tls set, or -1 with the reason in why and
 * *refused set when the handshake itself failed (a certificate not
 * trusted, a name not matched, a client certificate refused). */
static int tls_start(tenq_client *c, int fd, tq_url *u, int64_t deadline, int abort, char *why,
                     size_t wl, bool *refused)
{
    char r[300];
    if (!c->tls_ctx &&
        tq_tls_ctx_new(c->ca_file, c->cert_file, c->key_file, &c->tls_ctx, r, sizeof r) != 0) {
        snprintf(why, wl, "%s", r);
        *refused = true;
        return -1;
    }
    tq_tls *t = tq_tls_new(c->tls_ctx, fd, u->host, u->session);
    if (!t) {
        snprintf(why, wl, "out of memory");
        return -1;
    }
    for (;;) {
        int h = tq_tls_handshake(t, r, sizeof r);
        if (h == 1) break;
        int w = h == TQ_TLS_WANT_READ    ? wait_fd(fd, POLLIN, deadline, abort, 0)
                : h == TQ_TLS_WANT_WRITE ? wait_fd(fd, POLLOUT, deadline, abort, 0)
                                         : 2;
        if (w == 1) continue;
        if (w == 2) {
            snprintf(why, wl, "TLS handshake failed: %s", r);
            *refused = true;
        } else {
            snprintf(why, wl, "%s", w == 0 ? "TLS handshake timed out" : "interrupted");
        }
        tq_tls_free(t);
        return -1;
    }
    c->tls = t;
    return 0;
}

/* A connected socket to one server (with its TLS session for https), or
 * -1 with the reason in why (*refused: by TLS). */
static int connect_one(tenq_client *c, tq_url *u, int timeout_ms, int abort, char *why, size_t wl,
                       bool *refused)
{
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int g = getaddrinfo(u->host, u->port, &hints, &res);
    if (g != 0) {
        snprintf(why, wl, "%s", gai_strerror(g));
        return -1;
    }
    int64_t deadline = tq_mono_ms() + timeout_ms;
    int fd = -1;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            snprintf(why, wl, "%s", strerror(errno));
            continue;
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) break;
        int err = errno;
        if (err == EINPROGRESS) {
            int w = wait_fd(fd, POLLOUT, deadline, abort, 0);
            if (w == -2) {
                snprintf(why, wl, "interrupted");
                close(fd);
                fd = -1;
                break;
            }
            if (w == 1) {
                socklen_t l = sizeof err;
                if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l) != 0) err = errno;
                if (err == 0) break;
            } else {
                err = w == 0 ? ETIMEDOUT : errno;
            }
        }
        snprintf(why, wl, "%s", err == ETIMEDOUT ? "connect timed out" : strerror(err));
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd >= 0) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (u->tls) {
            /* a TLS socket stays non-blocking: its reads and writes wait in
             * poll() (tls_start, recv_wait, send_tls) */
            if (tls_start(c, fd, u, deadline, abort, why, wl, refused) != 0) {
                close(fd);
                fd = -1;
            }
            return fd;
        }
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
            snprintf(why, wl, "%s", strerror(errno));
            close(fd);
            fd = -1;
        }
    }
    return fd;
}

/* Connects to the first server that accepts, starting with the last one
 * that did. */
static int connect_any(tenq_client *c)
{
    char why[400], all[800];
    size_t al = 0;
    all[0] = 0;
    bool all_refused = true; /* by TLS: trying again will not help */
    for (size_t k = 0; k < c->nservers; k++) {
        size_t i = (c->cur + k) % c->nservers;
        bool refused = false;
        int fd =
            connect_one(c, &c->servers[i], c->connect_ms, abort_fd(c), why, sizeof why, &refused);
        all_refused = all_refused && refused;
        if (fd >= 0) {
            c->fd = fd;
            c->fd_server = i;
            c->cur = i;
            c->rcvtimeo_ms = 0;
            return 0;
        }
        if (al < sizeof all)
            al += (size_t)snprintf(all + al, sizeof all - al, "%s%s://%s (%s)", k ? ", " : "",
                                   TQ_SCHEME(&c->servers[i]), c->servers[i].hostport, why);
    }
    int code = all_refused ? TENQ_ETLS : TENQ_ECONNECT;
    if (c->nservers == 1)
        return tq_seterr(c, code, "cannot connect to %s://%s: %s", TQ_SCHEME(&c->servers[0]),
                         c->servers[0].hostport, why);
    return tq_seterr(c, code, "cannot connect to any server: %s", all);
}

/* Is a kept connection unusable?  Between requests the server sends nothing,
 * so anything readable is its close (or garbage): either way, reconnect.
 * Asked only of a connection idle for STALE_CHECK_MS: the server closes a
 * kept connection when it has been idle far longer (http_limits'
 * idle_timeout_ms) or when it stops, and a request sent on a connection it
 * had closed gets no byte back and is sent again on a new one (tq_exchange),
 * so the check saves a failed send, not a request; on a connection in use it
 * was a system call on the path of every request. */
#define STALE_CHECK_MS 1000
static bool conn_stale(tenq_client *c)
{
    struct pollfd p = {c->fd, POLLIN, 0};
    if (poll(&p, 1, 0) == 0) return false;
    if (!c->tls) return true;
    /* TLS: what came may be a record of the protocol's own (a session
     * ticket), which the session takes, leaving the connection good */
    char b;
    return tq_tls_read(c->tls, &b, 1) != TQ_TLS_WANT_READ;
}

/* TLS: sends a[0..na) then b[0..nb), a record at a time (both in one when
 * they fit), waiting in poll() while the socket takes nothing. */
static int send_tls(tenq_client *c, const char *a, size_t na, const char *b, size_t nb,
                    int64_t deadline, int abort)
{
    char one[16384];
    if (nb && na + nb <= sizeof one) {
        memcpy(one, a, na);
        memcpy(one + na, b, nb);
        a = one;
        na += nb;
        nb = 0;
    }
    const char *p[2] = {a, b};
    size_t n[2] = {na, nb};
    for (int k = 0; k < 2; k++) {
        while (n[k] > 0) {
            size_t chunk = n[k] < sizeof one ? n[k] : sizeof one;
            ssize_t w = tq_tls_write(c->tls, p[k], chunk);
            if (w > 0) {
                p[k] += w;
                n[k] -= (size_t)w;
                continue;
            }
            if (w == TQ_TLS_FAIL) return R_LOST;
            int r = wait_fd(c->fd, w == TQ_TLS_WANT_READ ? POLLIN : POLLOUT, deadline, abort, 0);
            if (r == 0) return R_TIMEOUT;
            if (r == -2) return R_ABORT;
            if (r < 0) return R_LOST;
        }
    }
    return 0;
}

/* Sends a[0..na) then b[0..nb) (a request's head and body): one sendmsg
 * in the usual case, where two sends cost a system call more each
 * request. */
static int send_all(int fd, const char *a, size_t na, const char *b, size_t nb, int64_t deadline,
                    int abort)
{
    while (na + nb > 0) {
        struct iovec iov[2] = {{(void *)a, na}, {(void *)b, nb}};
        struct msghdr mh = {.msg_iov = na ? iov : iov + 1, .msg_iovlen = na && nb ? 2 : 1};
        ssize_t w = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            size_t took = (size_t)w < na ? (size_t)w : na;
            a += took;
            na -= took;
            b += (size_t)w - took;
            nb -= (size_t)w - took;
            continue;
        }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int r = wait_fd(fd, POLLOUT, deadline, abort, 0);
            if (r == 0) return R_TIMEOUT;
            if (r == -2) return R_ABORT;
            if (r < 0) return R_LOST;
            continue;
        }
        return R_LOST;
    }
    return 0;
}

/* Bounds the socket's blocking reads by ms (> 0): a bound longer than ms
 * would overrun the caller's deadline, and one far shorter would wake the
 * wait for nothing, so it is set only then (not on every request: a worker
 * alternates requests with and without a long poll).  false: it could not
 * be set (the caller then waits in poll()). */
static bool bound_reads(tenq_client *c, int64_t ms)
{
    if (ms > INT_MAX) ms = INT_MAX;
    if (c->rcvtimeo_ms > 0 && c->rcvtimeo_ms <= ms && c->rcvtimeo_ms >= ms / 2) return true;
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
    if (setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0) return false;
    c->rcvtimeo_ms = (int)ms;
    return true;
}

/* Reads what comes next into buf (up to len bytes), waiting until the
 * deadline: > 0 bytes read, 0 the server closed, -1 failed (errno set; EINTR
 * is retried here), or -R_TIMEOUT, -R_ABORT. */
static ssize_t recv_wait(tenq_client *c, char *buf, size_t len, int64_t deadline,
                         int64_t abort_from)
{
    int abort = abort_fd(c);
    while (c->tls) {
        ssize_t n = tq_tls_read(c->tls, buf, len);
        if (n >= 0) return n;
        if (n == TQ_TLS_FAIL) return -1;
        int r =
            wait_fd(c->fd, n == TQ_TLS_WANT_READ ? POLLIN : POLLOUT, deadline, abort, abort_from);
        if (r == 0) return -R_TIMEOUT;
        if (r == -2) return -R_ABORT;
        if (r < 0) return -1;
    }
    for (;;) {
        int64_t now = tq_mono_ms(), left = deadline - now;
        if (left <= 0) return -R_TIMEOUT;
        if ((abort < 0 || now < abort_from) &&
            bound_reads(c, abort >= 0 && abort_from - now < left ? abort_from - now : left)) {
            ssize_t n = recv(c->fd, buf, len, 0);
            if (n >= 0) return n;
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
            return -1;
        }
        ssize_t n = recv(c->fd, buf, len, MSG_DONTWAIT);
        if (n >= 0) return n;
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
        int r = wait_fd(c->fd, POLLIN, deadline, abort, abort_from);
        if (r == 0) return -R_TIMEOUT;
        if (r == -2) return -R_ABORT;
        if (r < 0) return -1;
    }
}

static int grow(tenq_client *c, size_t want)
{
    if (want <= c->bcap) return 0;
    size_t cap = c->bcap ? c->bcap : 16384;
    while (cap < want) cap *= 2;
    char *b = realloc(c->buf, cap);
    if (!b) return tq_seterr(c, TENQ_ENOMEM, "out of memory reading an answer");
    c->buf = b;
    c->bcap = cap;
    return 0;
}

/* Reads one answer into c->buf, c->body and c->status.  Returns 0, R_LOST
 * (*got: whether any byte came), R_TIMEOUT, or TENQ_EPROTOCOL/TENQ_ENOMEM
 * with the message set.  *close_after: the connection cannot carry another
 * request. */
static int read_answer(tenq_client *c, int64_t deadline, bool *got, bool *close_after)
{
    int64_t abort_from = tq_mono_ms() + c->abort_after_ms;
    const tq_url *u = &c->servers[c->fd_server];
    tq_http_head h;
    size_t start = 0; /* where the head being read begins (after any 1xx) */
    bool have_head = false;
    c->blen = 0;
    for (;;) {
        if (!have_head && c->blen > start) {
            const char *why;
            int r = tq_http_head_parse(c->buf + start, c->blen - start, &h, &why);
            if (r < 0)
                return tq_seterr(c, TENQ_EPROTOCOL, "bad answer from %s://%s: %s", TQ_SCHEME(u),
                                 u->hostport, why);
            if (r == 1 && h.status < 200) {
                start += h.head_len; /* 100 Continue and the like: no body, skip */
                continue;
            }
            if (r == 1) {
                have_head = true;
                if (h.content_length > TQ_BODY_MAX)
                    return tq_seterr(c, TENQ_EPROTOCOL, "the answer from %s://%s is too large",
                                     TQ_SCHEME(u), u->hostport);
                if (h.content_length >= 0 &&
                    grow(c, start + h.head_len + (size_t)h.content_length + 1) != 0)
                    return TENQ_ENOMEM;
            }
        }
        if (have_head && h.content_length >= 0 &&
            c->blen - start - h.head_len >= (size_t)h.content_length)
            break;
        if (have_head && h.content_length < 0 && c->blen - start - h.head_len > TQ_BODY_MAX)
            return tq_seterr(c, TENQ_EPROTOCOL, "the answer from %s://%s is too large",
                             TQ_SCHEME(u), u->hostport);
        if (c->bcap - c->blen < 4097 && grow(c, c->blen + 16384) != 0) return TENQ_ENOMEM;
        /* A request aborted once the server may have acted on it could lose
         * what it answers (a lease): abort only after abort_after_ms, when a
         * lease answered at once would have come, and so the server is
         * waiting in a long poll. */
        ssize_t n = recv_wait(c, c->buf + c->blen, c->bcap - c->blen - 1, deadline, abort_from);
        if (n > 0) {
            c->blen += (size_t)n;
            *got = true;
            continue;
        }
        if (n == 0) {
            if (have_head && h.content_length < 0) break; /* the body ran to the close */
            errno = ECONNRESET;
            return R_LOST;
        }
        if (n == -R_TIMEOUT) return R_TIMEOUT;
        if (n == -R_ABORT) return R_ABORT;
        return R_LOST;
    }
    c->body = c->buf + start + h.head_len;
    size_t avail = c->blen - start - h.head_len;
    c->body_len = h.content_length >= 0 ? (size_t)h.content_length : avail;
    /* bytes past the answer were never asked for: do not trust the stream */
    *close_after = h.close || avail > c->body_len;
    c->body[c->body_len] = 0;
    c->status = h.status;
    return 0;
}

/* Appends s (n bytes) at *o. */
static void put(char **o, const char *s, size_t n)
{
    memcpy(*o, s, n);
    *o += n;
}
#define PUT_LIT(o, lit) put(o, lit, sizeof(lit) - 1)

/* A request's head (malloc'd, NUL-terminated; its length in *hl), written
 * by hand: three snprintf calls were most of a small request's work in
 * the client. */
static char *request_head(const char *method, const char *path, const char *hostport,
                          const char *token, const char *key, bool has_body, size_t len, size_t *hl)
{
    static const char ua[] =
        "\r\nUser-Agent: libtenq/" TENQ_CLIENT_VERSION "\r\nAccept: application/json\r\n";
    size_t nm = strlen(method), np = strlen(path), nh = strlen(hostport);
    size_t nt = token ? strlen(token) : 0, nk = key ? strlen(key) : 0;
    char *head = malloc(nm + np + nh + nt + nk + sizeof ua + 200);
    if (!head) return NULL;
    char *o = head, digits[24], *d = tq_digits(digits + sizeof digits, len);
    put(&o, method, nm);
    PUT_LIT(&o, " ");
    put(&o, path, np);
    PUT_LIT(&o, " HTTP/1.1\r\nHost: ");
    put(&o, hostport, nh);
    PUT_LIT(&o, ua);
    if (token) {
        PUT_LIT(&o, "Authorization: Bearer ");
        put(&o, token, nt);
        PUT_LIT(&o, "\r\n");
    }
    if (key) {
        PUT_LIT(&o, "Idempotency-Key: ");
        put(&o, key, nk);
        PUT_LIT(&o, "\r\n");
    }
    if (has_body) {
        PUT_LIT(&o, "Content-Type: application/json\r\nContent-Length: ");
        put(&o, d, (size_t)(digits + sizeof digits - d));
        PUT_LIT(&o, "\r\n");
    }
    PUT_LIT(&o, "\r\n");
    *o = 0;
    *hl = (size_t)(o - head);
    return head;
}

int tq_exchange(tenq_client *c, const char *method, const char *path, const char *body, size_t len,
                int64_t extra_ms)
{
    c->status = 0;
    c->body = NULL;
    c->body_len = 0;
    c->sent = c->interrupted = false;
    bool has_body = body != NULL || (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0 &&
                                     strcmp(method, "DELETE") != 0);
    /* an idempotent request may be sent again when its connection broke
     * before any answer; others only when the break was a kept connection
     * that the server had closed (it closes idle ones only, so the request
     * never reached it) */
    bool idempotent = !strcmp(method, "GET") || !strcmp(method, "HEAD");
    char *head = NULL;
    int rc = 0;
    for (int attempt = 0;; attempt++) {
        bool reused = c->fd >= 0;
        if (reused && tq_mono_ms() - c->fd_used_ms > STALE_CHECK_MS && conn_stale(c)) {
            tq_disconnect(c);
            reused = false;
        }
        if (c->fd < 0 && (rc = connect_any(c)) != 0) goto out;
        const tq_url *u = &c->servers[c->fd_server];
        free(head);
        size_t hl;
        head =
            request_head(method, path, u->hostport, c->token, c->request_key, has_body, len, &hl);
        if (!head) {
            rc = tq_seterr(c, TENQ_ENOMEM, "out of memory");
            goto out;
        }
        int64_t deadline = tq_mono_ms() + c->request_ms + (extra_ms > 0 ? extra_ms : 0);
        bool got = false, close_after = false;
        c->sent = true;
        int r = c->tls ? send_tls(c, head, hl, body, len, deadline, abort_fd(c))
                       : send_all(c->fd, head, hl, body, len, deadline, abort_fd(c));
        if (r == 0) r = read_answer(c, deadline, &got, &close_after);
        if (r == 0) {
            if (close_after)
                tq_disconnect(c);
            else
                c->fd_used_ms = tq_mono_ms();
            goto out;
        }
        int err = errno;
        /* a TLS alert where the answer was to be: the server refused this
         * client (its certificate), after a handshake that looked done */
        char alert[256] = "";
        if (c->tls && strstr(tq_tls_why(c->tls), "alert"))
            snprintf(alert, sizeof alert, "%s", tq_tls_why(c->tls));
        tq_disconnect(c);
        if (r == R_LOST && *alert) {
            rc = tq_seterr(c, TENQ_ETLS, "%s://%s refused the TLS connection: %s", TQ_SCHEME(u),
                           u->hostport, alert);
            goto out;
        }
        if (r == R_LOST && !got && attempt == 0 && (reused || idempotent)) continue;
        c->interrupted = r == R_ABORT;
        if (r == R_ABORT)
            rc = tq_seterr(c, TENQ_ETIMEOUT, "interrupted (the worker is stopping)");
        else if (r == R_TIMEOUT)
            rc = tq_seterr(c, TENQ_ETIMEOUT, "no answer from %s://%s within %lld ms", TQ_SCHEME(u),
                           u->hostport, (long long)c->request_ms + (extra_ms > 0 ? extra_ms : 0));
        else if (r == R_LOST)
            rc = tq_seterr(c, TENQ_ECONNECT, "lost the connection to %s://%s: %s", TQ_SCHEME(u),
                           u->hostport, got ? "the answer was cut short" : strerror(err));
        else
            rc = r;
        goto out;
    }
out:
    free(head);
    return rc;
}
