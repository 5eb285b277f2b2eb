// SPDX-License-Identifier: Apache-2.0
/* libtenq's https on OpenSSL: see tls.h. */
#include "tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct tq_tls_ctx {
    SSL_CTX *ctx;
};

struct tq_tls {
    SSL *ssl;
    bool done, broken;
    char why[256]; /* why the last read or write failed */
};

static void reason(char *out, size_t len)
{
    unsigned long e = ERR_peek_last_error();
    const char *r = e ? ERR_reason_error_string(e) : NULL;
    snprintf(out, len, "%s", r ? r : "unknown reason");
    ERR_clear_error();
}

static bool readable(const char *what, const char *path, char *why, size_t wl)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, wl, "%s %s: %s", what, path, strerror(errno));
        return false;
    }
    fclose(f);
    return true;
}

static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
    (void)buf;
    (void)size;
    (void)rwflag;
    (void)u;
    return 0;
}

int tq_tls_ctx_new(const char *ca_file, const char *cert_file, const char *key_file,
                   tq_tls_ctx **out, char *why, size_t wl)
{
    *out = NULL;
    char r[256];
    if (!cert_file != !key_file) {
        snprintf(why, wl, "a client certificate needs both its certificate and its key file");
        return -1;
    }
    if ((ca_file && !readable("the CA file", ca_file, why, wl)) ||
        (cert_file && !readable("the client certificate", cert_file, why, wl)) ||
        (key_file && !readable("the client key", key_file, why, wl)))
        return -1;
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) {
        reason(r, sizeof r);
        snprintf(why, wl, "cannot make a TLS context: %s", r);
        return -1;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_IGNORE_UNEXPECTED_EOF |
                                 SSL_OP_NO_COMPRESSION);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_default_passwd_cb(ctx, no_passphrase);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    int ok = ca_file ? SSL_CTX_load_verify_locations(ctx, ca_file, NULL)
                     : SSL_CTX_set_default_verify_paths(ctx);
    if (ok != 1) {
        reason(r, sizeof r);
        snprintf(why, wl, "%s: %s", ca_file ? ca_file : "the system's CAs", r);
        goto fail;
    }
    if (cert_file) {
        if (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1) {
            reason(r, sizeof r);
            snprintf(why, wl, "the client certificate %s: %s", cert_file, r);
            goto fail;
        }
        if (SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) != 1 ||
            SSL_CTX_check_private_key(ctx) != 1) {
            reason(r, sizeof r);
            snprintf(why, wl, "the client key %s: %s", key_file,
                     strstr(r, "mismatch") ? "not the client certificate's key" : r);
            goto fail;
        }
    }
    tq_tls_ctx *x = calloc(1, sizeof(*x));
    if (!x) {
        snprintf(why, wl, "out of memory");
        goto fail;
    }
    x->ctx = ctx;
    *out = x;
    return 0;
fail:
    SSL_CTX_free(ctx);
    return -1;
}

void tq_tls_ctx_free(tq_tls_ctx *x)
{
    if (!x) return;
    SSL_CTX_free(x->ctx);
    free(x);
}

/* OpenSSL's socket BIO writes with write(), which raises SIGPIPE in the
 * application when the server has closed: libtenq's own writes say
 * MSG_NOSIGNAL, and so does this BIO, the socket BIO's but for its write. */
static BIO_METHOD *nosig;
static pthread_once_t nosig_once = PTHREAD_ONCE_INIT;

static int nosig_write(BIO *b, const char *buf, int len)
{
    int fd = -1;
    BIO_get_fd(b, &fd);
    BIO_clear_retry_flags(b);
    ssize_t n = send(fd, buf, (size_t)len, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        BIO_set_retry_write(b);
    return (int)n;
}

static void nosig_make(void)
{
    const BIO_METHOD *sock = BIO_s_socket();
    BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK | BIO_TYPE_DESCRIPTOR,
                                 "tenq socket");
    if (!m) return;
    BIO_meth_set_write(m, nosig_write);
    BIO_meth_set_read(m, BIO_meth_get_read(sock));
    BIO_meth_set_ctrl(m, BIO_meth_get_ctrl(sock));
    BIO_meth_set_create(m, BIO_meth_get_create(sock));
    BIO_meth_set_destroy(m, BIO_meth_get_destroy(sock));
    nosig = m;
}

tq_tls *tq_tls_new(tq_tls_ctx *x, int fd, const char *host, void *session)
{
    tq_tls *t = calloc(1, sizeof(*t));
    if (!t) return NULL;
    pthread_once(&nosig_once, nosig_make);
    t->ssl = SSL_new(x->ctx);
    BIO *bio = nosig ? BIO_new(nosig) : NULL;
    if (!t->ssl || !bio) {
        BIO_free(bio);
        goto fail;
    }
    BIO_set_fd(bio, fd, BIO_NOCLOSE);
    SSL_set_bio(t->ssl, bio, bio);
    unsigned char addr[16];
    bool ip = inet_pton(AF_INET, host, addr) == 1 || inet_pton(AF_INET6, host, addr) == 1;
    if (ip) {
        /* an address: the certificate must hold it (an IP subjectAltName) */
        if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(t->ssl), host) != 1) goto fail;
    } else {
        if (SSL_set1_host(t->ssl, host) != 1 || SSL_set_tlsext_host_name(t->ssl, host) != 1)
            goto fail;
    }
    if (session) SSL_set_session(t->ssl, session);
    SSL_set_connect_state(t->ssl);
    return t;
fail:
    ERR_clear_error();
    SSL_free(t->ssl);
    free(t);
    return NULL;
}

void tq_tls_free(tq_tls *t)
{
    if (!t) return;
    if (t->done && !t->broken) {
        ERR_clear_error();
        SSL_shutdown(t->ssl);
    }
    ERR_clear_error();
    SSL_free(t->ssl);
    free(t);
}

/* The result of an SSL call that returned r <= 0. */
static int outcome(tq_tls *t, int r, char *why, size_t wl)
{
    int e = SSL_get_error(t->ssl, r);
    if (e == SSL_ERROR_WANT_READ) return TQ_TLS_WANT_READ;
    if (e == SSL_ERROR_WANT_WRITE) return TQ_TLS_WANT_WRITE;
    if (e == SSL_ERROR_ZERO_RETURN) return 0;
    t->broken = true;
    if (e == SSL_ERROR_SYSCALL) {
        int err = errno;
        ERR_clear_error();
        if (why) snprintf(why, wl, "%s", err ? strerror(err) : "the server closed the connection");
        if (!err && r == 0) return 0;
        errno = err ? err : ECONNRESET;
        return TQ_TLS_FAIL;
    }
    if (why) {
        long v = SSL_get_verify_result(t->ssl);
        if (v != X509_V_OK)
            snprintf(why, wl, "certificate verify failed: %s", X509_verify_cert_error_string(v));
        else
            reason(why, wl);
    }
    ERR_clear_error();
    errno = ECONNRESET;
    return TQ_TLS_FAIL;
}

int tq_tls_handshake(tq_tls *t, char *why, size_t wl)
{
    ERR_clear_error();
    errno = 0;
    int r = SSL_do_handshake(t->ssl);
    if (r == 1) {
        t->done = true;
        return 1;
    }
    int o = outcome(t, r, why, wl);
    if (o == 0) {
        snprintf(why, wl, "the server closed the connection during the handshake");
        t->broken = true;
        return TQ_TLS_FAIL;
    }
    return o;
}

void *tq_tls_session(tq_tls *t)
{
    SSL_SESSION *s = t->done && !t->broken ? SSL_get1_session(t->ssl) : NULL;
    if (s && !SSL_SESSION_is_resumable(s)) {
        SSL_SESSION_free(s);
        return NULL;
    }
    return s;
}

void tq_tls_session_free(void *session)
{
    SSL_SESSION_free(session);
}

const char *tq_tls_why(const tq_tls *t)
{
    return t->why;
}

ssize_t tq_tls_read(tq_tls *t, void *buf, size_t n)
{
    ERR_clear_error();
    errno = 0;
    int r = SSL_read(t->ssl, buf, n > INT32_MAX ? INT32_MAX : (int)n);
    if (r > 0) return r;
    return outcome(t, r, t->why, sizeof t->why);
}

ssize_t tq_tls_write(tq_tls *t, const void *buf, size_t n)
{
    ERR_clear_error();
    errno = 0;
    int r = SSL_write(t->ssl, buf, n > INT32_MAX ? INT32_MAX : (int)n);
    if (r > 0) return r;
    int o = outcome(t, r, t->why, sizeof t->why);
    return o == 0 ? TQ_TLS_FAIL : o;
}

bool tq_tls_pending(tq_tls *t)
{
    return SSL_has_pending(t->ssl) == 1;
}
