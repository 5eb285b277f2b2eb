// SPDX-License-Identifier: Apache-2.0
/* Requests through the server's TLS: the input is sent, as a client would
 * send it, to a real http_server (src/api/http.c) on loopback twice, once
 * over a plain connection and once over a TLS connection (src/api/tls.c)
 * in TLS records whose size the input's first byte draws, then the client
 * ends its input (a half-close; over TLS its close_notify) and reads every
 * answer until the server closes.  Checked: both connections get the same
 * answers (Date headers aside), and the server is left with no connection.
 * So every path of the HTTP layer the request bytes reach runs over the TLS
 * transport too, read in pieces the records make, and TLS may not change
 * what the layer answers.  The handler answers each request with what it
 * was given (method, path, query, headers, body length).
 *
 * One server for the whole run, with a key and a self-signed certificate
 * made at start (written to a temporary folder for tls_server_new); the
 * client resumes its session, so most inputs cost no full handshake. */
#include "fuzz.h"

#include "api/http.h"
#include "api/tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static struct event_base *base;
static http_server *plain_srv, *tls_srv;
static tls_server *tls;
static int plain_port, tls_port;
static SSL_CTX *cctx;
static SSL_SESSION *session;

static void handler(void *ctx, http_req *r)
{
    (void)ctx;
    char body[2048];
    int n = snprintf(body, sizeof body, "%s %s ?%s body=%zu", r->method, r->path, r->query,
                     r->body_len);
    for (int i = 0; i < r->nheaders && n < (int)sizeof body - 200; i++)
        n += snprintf(body + n, sizeof body - (size_t)n, " [%.60s: %.60s]", r->headers[i].name,
                      r->headers[i].value);
    http_reply(r, 200, "text/plain", NULL, body, (size_t)n);
}

/* A P-256 key and a self-signed certificate, as PEM files in a folder of
 * their own. */
static void make_cert(char *cert, char *key, size_t len)
{
    char dir[] = "/tmp/tenq-fuzz-tls-XXXXXX";
    FUZZ_CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    snprintf(cert, len, "%s/c.pem", dir);
    snprintf(key, len, "%s/k.pem", dir);
    EVP_PKEY *pk = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    FUZZ_CHECK(pk && x, "key");
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600L * 24 * 365);
    X509_set_pubkey(x, pk);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"localhost", -1, -1,
                               0);
    X509_set_issuer_name(x, name);
    FUZZ_CHECK(X509_sign(x, pk, EVP_sha256()) > 0, "sign");
    FILE *f = fopen(cert, "w");
    FUZZ_CHECK(f && PEM_write_X509(f, x), "write the certificate");
    fclose(f);
    f = fopen(key, "w");
    FUZZ_CHECK(f && PEM_write_PrivateKey(f, pk, NULL, NULL, 0, NULL, NULL), "write the key");
    fclose(f);
    X509_free(x);
    EVP_PKEY_free(pk);
}

static void setup(void)
{
    signal(SIGPIPE, SIG_IGN); /* as tenq serve: a write to a closed socket fails */
    base = event_base_new();
    http_limits lim;
    http_limits_defaults(&lim);
    lim.idle_yield = false;
    lim.max_body_bytes = 1 << 20;
    char err[512], cert[128], key[128];
    plain_srv = http_server_new(base, &lim, handler, NULL);
    tls_srv = http_server_new(base, &lim, handler, NULL);
    make_cert(cert, key, sizeof cert);
    tls_config tc = {cert, key, NULL, false, NULL};
    FUZZ_CHECK(tls_server_new(&tc, &tls, err, sizeof err) == 0, "%s", err);
    http_server_set_tls(tls_srv, tls);
    plain_port = http_server_listen(plain_srv, "127.0.0.1", 0, err, sizeof err);
    tls_port = http_server_listen(tls_srv, "127.0.0.1", 0, err, sizeof err);
    FUZZ_CHECK(plain_port > 0 && tls_port > 0, "%s", err);
    cctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_verify(cctx, SSL_VERIFY_NONE, NULL); /* our own server; the name is not the point */
    SSL_CTX_set_mode(cctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    unlink(cert);
    unlink(key);
    *strrchr(cert, '/') = 0;
    rmdir(cert);
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int dial(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int rc = connect(fd, (struct sockaddr *)&a, sizeof a);
    FUZZ_CHECK(rc == 0 || errno == EINPROGRESS, "connect: %s", strerror(errno));
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* The answers, with each Date header's line dropped. */
typedef struct answer {
    char *p;
    size_t n, cap;
    bool reset; /* the connection was reset: what came may be cut short */
} answer;

static void put(answer *a, const char *p, size_t n)
{
    if (a->n + n + 1 > a->cap) {
        a->cap = (a->n + n + 1) * 2;
        a->p = realloc(a->p, a->cap);
    }
    memcpy(a->p + a->n, p, n);
    a->n += n;
    a->p[a->n] = 0;
}

static void drop_dates(answer *a)
{
    char *d;
    while (a->p && (d = strstr(a->p, "\r\nDate: ")) != NULL) {
        char *e = strstr(d + 2, "\r\n");
        FUZZ_CHECK(e, "a Date header without its end");
        memmove(d, e, a->n - (size_t)(e - a->p) + 1);
        a->n -= (size_t)(e - d);
    }
}

/* One turn of the server's loop, without waiting. */
static void turn(void)
{
    event_base_loop(base, EVLOOP_NONBLOCK | EVLOOP_ONCE);
}

static void run_plain(const uint8_t *data, size_t size, answer *out)
{
    int fd = dial(plain_port);
    size_t sent = 0;
    bool shut = false;
    int64_t until = now_ms() + 5000;
    for (;;) {
        FUZZ_CHECK(now_ms() < until, "plain: no end within 5 s");
        turn();
        if (sent < size) {
            ssize_t w = send(fd, data + sent, size - sent, MSG_NOSIGNAL);
            if (w > 0) sent += (size_t)w;
        } else if (!shut) {
            shutdown(fd, SHUT_WR);
            shut = true;
        }
        char buf[16384];
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n > 0) put(out, buf, (size_t)n);
        if (n == 0) break;
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
            out->reset = true;
            break;
        }
    }
    close(fd);
}

static void run_tls(const uint8_t *data, size_t size, size_t record, answer *out)
{
    int fd = dial(tls_port);
    SSL *ssl = SSL_new(cctx);
    SSL_set_fd(ssl, fd);
    if (session) SSL_set_session(ssl, session);
    SSL_set_connect_state(ssl);
    size_t sent = 0;
    bool shook = false, shut = false;
    int64_t until = now_ms() + 5000;
    for (;;) {
        FUZZ_CHECK(now_ms() < until, "tls: no end within 5 s");
        turn();
        ERR_clear_error();
        if (!shook) {
            int r = SSL_do_handshake(ssl);
            if (r != 1) {
                int e = SSL_get_error(ssl, r);
                FUZZ_CHECK(e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE,
                           "handshake failed: %d", e);
                continue;
            }
            shook = true;
        }
        if (sent < size) {
            size_t n = size - sent < record ? size - sent : record;
            int w = SSL_write(ssl, data + sent, (int)n);
            if (w > 0) sent += (size_t)w;
        } else if (!shut) {
            SSL_shutdown(ssl); /* close_notify: the end of the client's input */
            shut = true;
        }
        char buf[16384];
        int n = SSL_read(ssl, buf, sizeof buf);
        if (n > 0) {
            put(out, buf, (size_t)n);
            continue;
        }
        int e = SSL_get_error(ssl, n);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) continue;
        /* the server's close_notify, or its socket closed (or reset) */
        out->reset = e != SSL_ERROR_ZERO_RETURN && !(e == SSL_ERROR_SYSCALL && errno == 0);
        break;
    }
    SSL_SESSION *s = SSL_get1_session(ssl);
    if (s && SSL_SESSION_is_resumable(s)) {
        SSL_SESSION_free(session);
        session = s;
    } else {
        SSL_SESSION_free(s);
    }
    ERR_clear_error();
    SSL_free(ssl);
    close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!base) setup();
    if (size > 64 * 1024) return 0;
    /* the first byte draws the record size: 1 to 256 bytes, or whole */
    size_t record = size ? (data[0] == 0 ? 16384 : data[0]) : 16384;
    answer a = {0}, b = {0};
    run_plain(data, size, &a);
    run_tls(data, size, record, &b);
    /* the server closes its ends on its next turns */
    for (int i = 0;
         i < 100 && (http_server_connections(plain_srv) || http_server_connections(tls_srv)); i++)
        turn();
    FUZZ_CHECK(http_server_connections(plain_srv) == 0 && http_server_connections(tls_srv) == 0,
               "connections left: %zu plain, %zu tls", http_server_connections(plain_srv),
               http_server_connections(tls_srv));
    drop_dates(&a);
    drop_dates(&b);
    /* a server that closes with a request unread resets the connection,
     * which may cut either answer short: then only their starts agree */
    if (a.reset || b.reset) {
        size_t n = a.n < b.n ? a.n : b.n;
        a.n = b.n = n;
    }
    FUZZ_CHECK(a.n == b.n && (a.n == 0 || memcmp(a.p, b.p, a.n) == 0),
               "plain and TLS answered differently:\n--- plain (%zu)\n%.2000s\n--- tls (%zu)\n"
               "%.2000s",
               a.n, a.p ? a.p : "", b.n, b.p ? b.p : "");
    free(a.p);
    free(b.p);
    return 0;
}
