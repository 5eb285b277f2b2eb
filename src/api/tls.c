// SPDX-License-Identifier: Apache-2.0
/* The server's TLS on OpenSSL: see tls.h. */
#include "tls.h"

#include "base/xalloc.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct tls_server {
    SSL_CTX *ctx;
    char *cert, *key, *client_ca, *ciphers;
    bool client_required;
    tls_counts counts; /* the loop's thread only */
};

struct tls_conn {
    SSL *ssl;
    tls_server *srv;
    bool done;   /* handshake over */
    bool broken; /* a fatal error: no close_notify */
    char peer[256];
};

/* OpenSSL's reason for the last failure, its error queue emptied. */
static void ssl_reason(char *out, size_t len)
{
    unsigned long e = ERR_peek_last_error();
    const char *r = e ? ERR_reason_error_string(e) : NULL;
    snprintf(out, len, "%s", r ? r : "unknown reason");
    ERR_clear_error();
}

/* A file that must be readable: false with the reason in err. */
static bool readable(const char *flag, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "--%s %s: %s", flag, path, strerror(errno));
        return false;
    }
    fclose(f);
    return true;
}

/* Does the PEM file hold an encrypted key? */
static bool has_passphrase(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    char line[256];
    bool enc = false;
    while (!enc && fgets(line, sizeof line, f))
        enc = strstr(line, "ENCRYPTED") != NULL || strstr(line, "Proc-Type: 4,ENCRYPTED") != NULL;
    fclose(f);
    return enc;
}

static void fmt_time(const ASN1_TIME *t, char *out, size_t len)
{
    struct tm tm;
    if (!t || !ASN1_TIME_to_tm(t, &tm)) {
        snprintf(out, len, "?");
        return;
    }
    strftime(out, len, "%Y-%m-%d %H:%M:%SZ", &tm);
}

static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
    (void)buf;
    (void)size;
    (void)rwflag;
    (void)u;
    return 0; /* never prompt on the terminal: refused, with a clear error */
}

/* A context from the files, or NULL with err set. */
static SSL_CTX *make_ctx(const tls_server *t, char *err, size_t errlen)
{
    char why[256];
    if (!readable("tls-cert", t->cert, err, errlen) || !readable("tls-key", t->key, err, errlen))
        return NULL;
    if (*t->client_ca && !readable("tls-client-ca", t->client_ca, err, errlen)) return NULL;
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) {
        ssl_reason(why, sizeof why);
        snprintf(err, errlen, "cannot make a TLS context: %s", why);
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE |
                                 SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_COMPRESSION);
    /* partial writes: a write takes a record at a time; moving buffer: a
     * retried write may come from where out's bytes were moved to; and the
     * buffers of an idle connection are freed (10,000 of them, kept) */
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                              SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_read_ahead(ctx, 1);
    SSL_CTX_set_session_id_context(ctx, (const unsigned char *)"tenq", 4);
    SSL_CTX_set_num_tickets(ctx, 1);
    SSL_CTX_set_default_passwd_cb(ctx, no_passphrase);
    const char *ciphers = *t->ciphers ? t->ciphers : TLS_DEFAULT_CIPHERS;
    if (SSL_CTX_set_cipher_list(ctx, ciphers) != 1) {
        ssl_reason(why, sizeof why);
        snprintf(err, errlen, "--tls-ciphers %s: %s", ciphers, why);
        goto fail;
    }
    if (SSL_CTX_use_certificate_chain_file(ctx, t->cert) != 1) {
        ssl_reason(why, sizeof why);
        snprintf(err, errlen, "--tls-cert %s: not a PEM certificate (chain): %s", t->cert, why);
        goto fail;
    }
    X509 *x = SSL_CTX_get0_certificate(ctx);
    char when[64];
    if (X509_cmp_current_time(X509_get0_notAfter(x)) <= 0) {
        fmt_time(X509_get0_notAfter(x), when, sizeof when);
        snprintf(err, errlen, "--tls-cert %s: the certificate expired on %s", t->cert, when);
        goto fail;
    }
    if (X509_cmp_current_time(X509_get0_notBefore(x)) > 0) {
        fmt_time(X509_get0_notBefore(x), when, sizeof when);
        snprintf(err, errlen, "--tls-cert %s: the certificate is not valid before %s", t->cert,
                 when);
        goto fail;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, t->key, SSL_FILETYPE_PEM) != 1) {
        ssl_reason(why, sizeof why);
        if (strstr(why, "mismatch"))
            snprintf(err, errlen, "--tls-key %s is not the key of the certificate in --tls-cert %s",
                     t->key, t->cert);
        else if (has_passphrase(t->key))
            snprintf(err, errlen,
                     "--tls-key %s: the key has a passphrase; tenq reads keys without one "
                     "(openssl pkey -in KEY -out PLAIN, kept readable by tenq only)",
                     t->key);
        else
            snprintf(err, errlen, "--tls-key %s: not a PEM private key: %s", t->key, why);
        goto fail;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        ERR_clear_error();
        snprintf(err, errlen, "--tls-key %s is not the key of the certificate in --tls-cert %s",
                 t->key, t->cert);
        goto fail;
    }
    if (*t->client_ca) {
        STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(t->client_ca);
        if (!names || SSL_CTX_load_verify_locations(ctx, t->client_ca, NULL) != 1) {
            if (names) sk_X509_NAME_pop_free(names, X509_NAME_free);
            ssl_reason(why, sizeof why);
            snprintf(err, errlen, "--tls-client-ca %s: no PEM certificate in it: %s", t->client_ca,
                     why);
            goto fail;
        }
        SSL_CTX_set_client_CA_list(ctx, names);
        SSL_CTX_set_verify(
            ctx, SSL_VERIFY_PEER | (t->client_required ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0),
            NULL);
    }
    return ctx;
fail:
    SSL_CTX_free(ctx);
    return NULL;
}

static char *dup_or_empty(const char *s)
{
    return xstrdup(s ? s : "");
}

int tls_server_new(const tls_config *cfg, tls_server **out, char *err, size_t errlen)
{
    *out = NULL;
    tls_server *t = xcalloc(1, sizeof(*t));
    t->cert = dup_or_empty(cfg->cert);
    t->key = dup_or_empty(cfg->key);
    t->client_ca = dup_or_empty(cfg->client_ca);
    t->ciphers = dup_or_empty(cfg->ciphers);
    t->client_required = cfg->client_required;
    if (!*t->cert || !*t->key) {
        snprintf(err, errlen, "TLS needs both --tls-cert and --tls-key");
        tls_server_free(t);
        return -1;
    }
    if (!(t->ctx = make_ctx(t, err, errlen))) {
        tls_server_free(t);
        return -1;
    }
    *out = t;
    return 0;
}

int tls_server_reload(tls_server *t, char *err, size_t errlen)
{
    SSL_CTX *ctx = make_ctx(t, err, errlen);
    if (!ctx) return -1;
    /* the session ticket keys go on: a client resumes across the reload */
    unsigned char keys[80];
    if (SSL_CTX_get_tlsext_ticket_keys(t->ctx, keys, sizeof keys) == 1)
        SSL_CTX_set_tlsext_ticket_keys(ctx, keys, sizeof keys);
    /* connections made from the old context hold references to it */
    SSL_CTX_free(t->ctx);
    t->ctx = ctx;
    return 0;
}

void tls_server_free(tls_server *t)
{
    if (!t) return;
    SSL_CTX_free(t->ctx);
    free(t->cert);
    free(t->key);
    free(t->client_ca);
    free(t->ciphers);
    free(t);
}

void tls_server_describe(const tls_server *t, char *out, size_t len)
{
    X509 *x = SSL_CTX_get0_certificate(t->ctx);
    char subject[256] = "?", until[64];
    if (x) X509_NAME_oneline(X509_get_subject_name(x), subject, sizeof subject);
    fmt_time(x ? X509_get0_notAfter(x) : NULL, until, sizeof until);
    snprintf(out, len, "certificate %s, valid until %s%s%s", subject, until,
             *t->client_ca ? "; client certificates from the CAs in " : "",
             *t->client_ca ? t->client_ca : "");
}

void tls_server_counts(const tls_server *t, tls_counts *c)
{
    *c = t->counts;
}

/* ---- a connection ------------------------------------------------------------------------ */

tls_conn *tls_conn_new(tls_server *t, int fd)
{
    SSL *ssl = SSL_new(t->ctx);
    if (!ssl) xalloc_die();
    if (SSL_set_fd(ssl, fd) != 1) xalloc_die();
    SSL_set_accept_state(ssl);
    tls_conn *c = xcalloc(1, sizeof(*c));
    c->ssl = ssl;
    c->srv = t;
    return c;
}

void tls_conn_free(tls_conn *c)
{
    if (!c) return;
    if (c->done && !c->broken) {
        ERR_clear_error();
        SSL_shutdown(c->ssl); /* close_notify, if the socket takes it now */
    }
    ERR_clear_error();
    SSL_free(c->ssl);
    free(c);
}

/* The verified client certificate's common name. */
static void peer_name(tls_conn *c)
{
    X509 *x = SSL_get0_peer_certificate(c->ssl);
    if (!x || SSL_get_verify_result(c->ssl) != X509_V_OK) return;
    X509_NAME *name = X509_get_subject_name(x);
    int i = X509_NAME_get_index_by_NID(name, NID_commonName, -1);
    if (i < 0) return;
    ASN1_STRING *s = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, i));
    int n = ASN1_STRING_length(s);
    const unsigned char *p = ASN1_STRING_get0_data(s);
    if (n <= 0 || (size_t)n >= sizeof c->peer || memchr(p, 0, (size_t)n)) return;
    memcpy(c->peer, p, (size_t)n);
    c->peer[n] = 0;
}

/* The result of an SSL call that returned r <= 0, as TLS_WANT_*, 0 (the
 * end of the peer's input) or TLS_FAIL. */
static int outcome(tls_conn *c, int r, char *why, size_t wl)
{
    int e = SSL_get_error(c->ssl, r);
    switch (e) {
    case SSL_ERROR_WANT_READ: return TLS_WANT_READ;
    case SSL_ERROR_WANT_WRITE: return TLS_WANT_WRITE;
    case SSL_ERROR_ZERO_RETURN: return 0;
    case SSL_ERROR_SYSCALL:
        c->broken = true;
        if (why) snprintf(why, wl, "%s", errno ? strerror(errno) : "the peer closed");
        ERR_clear_error();
        return errno == 0 && r == 0 ? 0 : TLS_FAIL;
    default:
        c->broken = true;
        if (why)
            ssl_reason(why, wl);
        else
            ERR_clear_error();
        return TLS_FAIL;
    }
}

int tls_handshake(tls_conn *c, char *why, size_t wl)
{
    ERR_clear_error();
    errno = 0;
    int r = SSL_do_handshake(c->ssl);
    if (r == 1) {
        c->done = true;
        peer_name(c);
        if (SSL_session_reused(c->ssl))
            c->srv->counts.resumed++;
        else
            c->srv->counts.full++;
        return 1;
    }
    int o = outcome(c, r, why, wl);
    if (o == TLS_WANT_READ || o == TLS_WANT_WRITE) return o;
    if (o == 0) snprintf(why, wl, "the client closed the connection");
    c->broken = true;
    c->srv->counts.failed++;
    return TLS_FAIL;
}

ssize_t tls_read(tls_conn *c, void *buf, size_t n)
{
    ERR_clear_error();
    errno = 0;
    int r = SSL_read(c->ssl, buf, n > INT32_MAX ? INT32_MAX : (int)n);
    if (r > 0) return r;
    return outcome(c, r, NULL, 0);
}

ssize_t tls_write(tls_conn *c, const void *buf, size_t n)
{
    ERR_clear_error();
    errno = 0;
    int r = SSL_write(c->ssl, buf, n > INT32_MAX ? INT32_MAX : (int)n);
    if (r > 0) return r;
    int o = outcome(c, r, NULL, 0);
    return o == 0 ? TLS_FAIL : o; /* a write cannot meet the end of input */
}

bool tls_has_pending(tls_conn *c)
{
    return SSL_has_pending(c->ssl) == 1;
}

const char *tls_peer_name(const tls_conn *c)
{
    return c->peer[0] ? c->peer : NULL;
}
