// SPDX-License-Identifier: Apache-2.0
/* tls — the server's TLS (OpenSSL), as a transport under http.c.
 *
 * A tls_server holds the context every new connection is made from: the
 * certificate chain and key, and optionally the CA that signs client
 * certificates (mutual TLS).  tls_server_reload (SIGHUP) reads the files
 * again into a new context and swaps it in only when they are good;
 * connections already open keep the context they were made from (OpenSSL
 * counts its references), so none is dropped, and the session ticket keys
 * are carried over, so a client resumes its session across a reload.
 *
 * TLS 1.2 and 1.3 only; TLS 1.2 with ECDHE and AEAD ciphers (tls-ciphers);
 * no renegotiation, no compression.  See docs/decisions/0028-tls.md.
 *
 * A tls_conn is one connection's session on a non-blocking socket.  Its
 * calls never block: they return what they did or what they wait for
 * (TLS_WANT_READ: the socket must become readable; TLS_WANT_WRITE:
 * writable), as OpenSSL's SSL_read/SSL_write do, in one place. */
#ifndef TENQ_API_TLS_H
#define TENQ_API_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct tls_server tls_server;
typedef struct tls_conn tls_conn;

typedef struct tls_config {
    const char *cert;      /* PEM: the certificate, then its chain */
    const char *key;       /* PEM: its private key (no passphrase) */
    const char *client_ca; /* PEM: CAs of client certificates, or NULL/"" (no mutual TLS) */
    bool client_required;  /* a client without a certificate fails the handshake */
    const char *ciphers;   /* TLS 1.2's list (OpenSSL's syntax); NULL/"": the default */
} tls_config;

/* The TLS 1.2 ciphers by default: ECDHE key exchange with AES-GCM or
 * ChaCha20-Poly1305 (TLS 1.3's suites are OpenSSL's defaults, all AEAD). */
#define TLS_DEFAULT_CIPHERS                                                                        \
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"     \
    "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"

/* Reads the files and makes the context: 0, or -1 with a message for
 * people in err (a file missing or unreadable, not PEM, a certificate
 * expired or not yet valid, a key that is not the certificate's, a key
 * with a passphrase, a bad cipher list).  The config's strings are
 * copied. */
int tls_server_new(const tls_config *cfg, tls_server **out, char *err, size_t errlen);
/* Reads the files again; 0 when the new context serves new connections,
 * -1 (err set) when they were refused and the old one still serves. */
int tls_server_reload(tls_server *t, char *err, size_t errlen);
void tls_server_free(tls_server *t);
/* What the certificate in use says, for the log: "CN=..., valid until ...". */
void tls_server_describe(const tls_server *t, char *out, size_t len);

/* Handshakes done, by kind, and failed. */
typedef struct tls_counts {
    uint64_t full, resumed, failed;
} tls_counts;
void tls_server_counts(const tls_server *t, tls_counts *c);

/* I/O results besides a count of bytes. */
enum { TLS_FAIL = -1, TLS_WANT_READ = -2, TLS_WANT_WRITE = -3 };

/* A session for a connected non-blocking socket, as the server's end. */
tls_conn *tls_conn_new(tls_server *t, int fd);
/* Sends close_notify when the session is sound (never waits) and frees;
 * the socket is the caller's. NULL is a no-op. */
void tls_conn_free(tls_conn *c);
/* Goes on with the handshake: 1 done, TLS_WANT_*, or TLS_FAIL (why set:
 * OpenSSL's reason, for the log). */
int tls_handshake(tls_conn *c, char *why, size_t wl);
/* Up to n bytes of the peer's data: > 0, 0 at the end of its input (its
 * close_notify, or its socket closed), TLS_WANT_*, TLS_FAIL. */
ssize_t tls_read(tls_conn *c, void *buf, size_t n);
/* Writes n bytes (at most one record's worth, 16 KiB, is sent a call):
 * how many, or TLS_WANT_*, TLS_FAIL.  After TLS_WANT_*, the next call
 * must offer at least the same n bytes again (they may have moved). */
ssize_t tls_write(tls_conn *c, const void *buf, size_t n);
/* Whether data is held inside the session (read from the socket, not yet
 * given out): the socket will not say so. */
bool tls_has_pending(tls_conn *c);
/* The verified client certificate's subject common name, or NULL (none,
 * or not yet known).  Owned by c. */
const char *tls_peer_name(const tls_conn *c);

#endif
