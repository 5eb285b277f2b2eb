// SPDX-License-Identifier: Apache-2.0
/* tenq error codes, shared by the server, the client library and the CLI.
 *
 * One row per error: the enum name, its (negative) value, the HTTP status the
 * server answers with, the protocol's error word, and a message for people.
 * 0 is success; every function that can fail returns one of these.
 */
#ifndef TENQ_ERRORS_H
#define TENQ_ERRORS_H

#define TENQ_ERRNO_MAP(XX)                                                                         \
    XX(INVALID, -1, 400, "invalid", "invalid request")                                             \
    XX(UNAUTHENTICATED, -2, 401, "unauthenticated", "missing or unknown token")                    \
    XX(FORBIDDEN, -3, 403, "forbidden", "not allowed for this token")                              \
    XX(NOT_FOUND, -4, 404, "not_found", "no such object")                                          \
    XX(CONFLICT, -5, 409, "conflict", "stale token or wrong state")                                \
    XX(TOO_LARGE, -6, 413, "too_large", "too large")                                               \
    XX(RATE_LIMITED, -7, 429, "rate_limited", "too many requests")                                 \
    XX(OVERLOADED, -8, 429, "overloaded", "server overloaded")                                     \
    XX(UNAVAILABLE, -9, 503, "unavailable", "service unavailable")                                 \
    XX(NOMEM, -10, 500, "internal", "out of memory")                                               \
    XX(IO, -11, 503, "unavailable", "storage error")                                               \
    XX(NOSPACE, -12, 503, "unavailable", "storage full")                                           \
    XX(CORRUPT, -13, 500, "internal", "storage corrupt")                                           \
    XX(NOT_TENQ, -14, 500, "internal", "not a tenq database")                                      \
    XX(VERSION, -15, 500, "internal", "database from a newer tenq")                                \
    XX(CONNECT, -16, 503, "unavailable", "cannot connect")                                         \
    XX(TIMEOUT, -17, 504, "timeout", "timed out")                                                  \
    XX(PROTOCOL, -18, 502, "protocol", "malformed response")                                       \
    XX(CONSTRAINT, -19, 409, "conflict", "constraint violated")                                    \
    XX(INTERNAL, -20, 500, "internal", "internal error")                                           \
    XX(NOT_LEADER, -21, 503, "not_leader", "not the leader")                                       \
    XX(QUOTA_EXCEEDED, -22, 429, "quota_exceeded", "over a quota")                                 \
    XX(TLS, -23, 502, "tls", "TLS refused: a certificate not trusted or not accepted")

/* Exported from the shared libtenq (built with -fvisibility=hidden). */
#ifndef TENQ_API
#define TENQ_API __attribute__((visibility("default")))
#endif

typedef enum tenq_err {
    TENQ_OK = 0,
#define TENQ_ERR_ENUM_(name, val, http, word, msg) TENQ_E##name = (val),
    TENQ_ERRNO_MAP(TENQ_ERR_ENUM_)
#undef TENQ_ERR_ENUM_
} tenq_err;

/* The protocol's error word ("invalid", "not_found", ...); "ok" for 0. Never NULL. */
TENQ_API const char *tenq_err_word(int err);
/* A short message for people; never NULL. */
TENQ_API const char *tenq_err_message(int err);
/* The HTTP status for the error (200 for 0). */
TENQ_API int tenq_err_http_status(int err);
/* The symbolic name ("TENQ_EINVAL" style: "EINVALID"). */
TENQ_API const char *tenq_err_name(int err);

#endif
