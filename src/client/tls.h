// SPDX-License-Identifier: Apache-2.0
/* client/tls — libtenq's https (OpenSSL): a context per handle (the CAs it
 * trusts, its client certificate), a session per connection.  The calls
 * never wait: they say what they wait for, and conn.c waits (with the
 * handle's deadline and abort fd). */
#ifndef TENQ_CLIENT_TLS_H
#define TENQ_CLIENT_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct tq_tls_ctx tq_tls_ctx;
typedef struct tq_tls tq_tls;

/* ca_file: PEM CAs trusted instead of the system's (NULL: the system's);
 * cert_file and key_file: a client certificate for mutual TLS (both or
 * neither).  0, or -1 with the reason in why (a file unreadable, not PEM,
 * a key that is not the certificate's). */
int tq_tls_ctx_new(const char *ca_file, const char *cert_file, const char *key_file,
                   tq_tls_ctx **out, char *why, size_t wl);
void tq_tls_ctx_free(tq_tls_ctx *x);

/* Results besides counts of bytes. */
enum { TQ_TLS_FAIL = -1, TQ_TLS_WANT_READ = -2, TQ_TLS_WANT_WRITE = -3 };

/* A session for a connected non-blocking socket to host (a name or an
 * address: the certificate must name it), resuming *session when there is
 * one (a previous connection's to the same server). */
tq_tls *tq_tls_new(tq_tls_ctx *x, int fd, const char *host, void *session);
/* Sends close_notify when sound and frees (the socket is the caller's). */
void tq_tls_free(tq_tls *t);
/* 1 done, TQ_TLS_WANT_*, or TQ_TLS_FAIL with why: the certificate's
 * problem ("certificate verify failed: ...") or the alert the server sent. */
int tq_tls_handshake(tq_tls *t, char *why, size_t wl);
/* The session to resume next time (a reference the caller frees with
 * tq_tls_session_free), or NULL. */
void *tq_tls_session(tq_tls *t);
void tq_tls_session_free(void *session);
/* > 0 bytes; 0 the server closed; TQ_TLS_WANT_*; TQ_TLS_FAIL. */
ssize_t tq_tls_read(tq_tls *t, void *buf, size_t n);
ssize_t tq_tls_write(tq_tls *t, const void *buf, size_t n);
/* Why the last read or write failed (a server that refuses the client's
 * certificate says so in an alert that comes where the answer would). */
const char *tq_tls_why(const tq_tls *t);
/* Data held in the session that the socket will not announce. */
bool tq_tls_pending(tq_tls *t);

#endif
