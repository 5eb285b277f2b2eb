// SPDX-License-Identifier: Apache-2.0
/* libtenq internals: the handle, and what each file offers the files above
 * it.  The sections go bottom-up: a file calls only what the sections
 * before its own offer (scripts/check-loops.py checks the folder has no
 * loop).  Not installed; the public contract is include/tenq/tenq.h. */
#ifndef TENQ_CLIENT_INTERNAL_H
#define TENQ_CLIENT_INTERNAL_H

#include "http.h"
#include "tls.h"
#include "base/jscan.h"
#include "tenq/tenq.h"

#include <stdarg.h>

/* The largest answer read (a page of 1,000 jobs with large args fits). */
#define TQ_BODY_MAX (512LL * 1024 * 1024)

struct tenq_client {
    tq_url *servers; /* the caller's, then leaders named by standbys (failover.c) */
    size_t nservers;
    size_t cur; /* the server tried first: the last one that answered */
    char *token;
    int connect_ms, request_ms;
    int failover_ms;              /* how long a call goes on through failures (failover.c) */
    uint32_t key_salt, key_count; /* this handle's request keys (jobs.c) */
    const char *request_key;      /* sent as Idempotency-Key by the call under way */
    bool sent;                    /* the last exchange sent (some of) its request */
    bool interrupted;             /* and was cut short by the abort fd */
    int fd;                       /* -1: no connection */
    tq_tls *tls;                  /* fd's TLS session (https); NULL: plain */
    tq_tls_ctx *tls_ctx;          /* made with the first https server */
    char *ca_file, *cert_file, *key_file; /* tenq_options' */
    size_t fd_server;                     /* the server fd talks to */
    int64_t fd_used_ms;                   /* when fd last carried an answer (now_ms) */
    int rcvtimeo_ms;                      /* fd's SO_RCVTIMEO; 0: none set */
    /* the last answer: bytes as read; body points into buf, NUL-terminated */
    char *buf;
    size_t blen, bcap;
    char *body;
    size_t body_len;
    int status;     /* of the last answer; 0: none */
    char err[1024]; /* tenq_errmsg */
    char field[64]; /* tenq_errfield; "" when none */
    /* A worker's thread sets an fd that interrupts its waits when it becomes
     * readable (the request then fails, its connection closed): how
     * tenq_worker_stop() ends a long poll at once.  Unset: none.  The wait
     * for an answer is interrupted only once it lasted abort_after_ms. */
    bool abort_set;
    int abort_fd;
    int abort_after_ms;
};

/* ---- errors (errmsg.c) ---- */
/* Sets the message and returns code (for `return tq_seterr(...)`). */
int tq_seterr(tenq_client *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* TENQ_EINVALID with the message set, naming the caller's field. */
int tq_refuse(tenq_client *c, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void tq_clearerr(tenq_client *c);

/* ---- JSON text written directly (json_write.c): every request body; a tree
 * built and dumped would cost more than the request.  A failed append (out of memory) sets oom and
 * appends nothing more; the text is then not to be sent. */
typedef struct tq_buf {
    char *p;
    size_t len, cap;
    bool oom;
} tq_buf;
void tq_buf_raw(tq_buf *b, const char *s, size_t n);
/* ,"key":"escaped value" (without the comma when first); TENQ_EINVALID
 * naming the field when v is not UTF-8.  Nothing when v is NULL. */
int tq_buf_str(tenq_client *c, tq_buf *b, const char *key, const char *v, bool first);
/* ,"key":v for JSON text v, checked (TENQ_EINVALID naming the field);
 * nothing when v is NULL. */
int tq_buf_json(tenq_client *c, tq_buf *b, const char *key, const char *v);
/* ,"key":v (key needs no escaping). */
void tq_buf_int(tq_buf *b, const char *key, long long v);
/* ,"key":["v0",...]; TENQ_EINVALID when a name is NULL or not UTF-8. */
int tq_buf_names(tenq_client *c, tq_buf *b, const char *key, const char *const *v, size_t n);

/* ---- answers (json_read.c) ---- */
/* Member name of the answer object a: an integer (0 when absent or not
 * one), a state (UNKNOWN when absent), or true. */
long long tq_aint(tq_span a, const char *name);
tenq_state tq_astate(tq_span a, const char *name);
/* A state name (a string span) as a state; UNKNOWN when it is none. */
tenq_state tq_span_state(tq_span v);
bool tq_atrue(tq_span a, const char *name);
/* The answer object top walked to its end (checking it all), the elements
 * of its array `name` handed to each (at: at the element, which each takes
 * or enters; k: its place); *count of them.  0, or TENQ_EPROTOCOL when the
 * answer is malformed, has no such array or more than one, or each refused
 * an element (answered nonzero). */
typedef int (*tq_each_fn)(tq_iter *at, size_t k, void *ctx);
int tq_walk_list(tq_iter *top, const char *name, tq_each_fn each, void *ctx, size_t *count);
/* An item object of such a list (at: at it; then past it): the members
 * named in names[0..n) into v[] ({0} when absent; the last of
 * duplicates), an "error" member into *e.  0, or -1 when malformed. */
int tq_item_read(tq_iter *at, const char *const *names, size_t n, tq_span *v, tq_span *e);
/* An error object {"code", "message", "field"}: its code (by the word,
 * else by status), message and field ("" when absent). */
int tq_error_read(tq_span e, int status, char *message, size_t mlen, char *field, size_t flen);
/* One item's error object (a batch's) into err/message/field: an unknown
 * word is TENQ_EINVALID, a missing message the code's own. */
void tq_item_error(tq_span e, int *err, char *message, size_t mlen, char *field, size_t flen);

/* ---- jobs in answers (job_read.c) ---- */
/* Fills *j from a job object (zeroing it first); 0 or TENQ_EPROTOCOL (also
 * when out of memory).  On error *j holds nothing to free. */
int tq_job_from_span(tq_span o, tenq_job *j);
/* The same for the job object at->p is at, walked (and checked) where it
 * stands; at is then past it. */
int tq_job_read(tq_iter *at, tenq_job *j);
/* Frees the strings of *j (not j itself). */
void tq_job_clear(tenq_job *j);

/* ---- the exchange (conn.c) ---- */
/* Sends one request and reads its answer into c->status and c->body.
 * Returns 0 when an answer came, whatever its status; else a local error
 * (TENQ_ECONNECT, TENQ_ETIMEOUT, TENQ_EPROTOCOL, TENQ_ENOMEM) with the
 * message set.  extra_ms lengthens the request timeout (long polls). */
int tq_exchange(tenq_client *c, const char *method, const char *path, const char *body, size_t len,
                int64_t extra_ms);
/* The TLS context, made now if it was not (https, or TLS options given):
 * 0, or TENQ_EINVALID with the message set (a file unreadable, ...). */
int tq_tls_setup(tenq_client *c);
/* Closes the connection (the next request opens a new one). */
void tq_disconnect(tenq_client *c);

/* ---- several servers (failover.c) ---- */
typedef enum { TQ_DONE, TQ_AGAIN_NOW, TQ_AGAIN_LATER } tq_next;
/* After an exchange (rc: tq_exchange's): whether the call is over, or goes
 * to the server now first in line (the leader a standby named, or the next
 * one), at once or after a pause.  *hops counts redirects in a row. */
tq_next tq_failover_next(tenq_client *c, int rc, const char *method, const char *path, int *hops);
/* Waits ms, or less when the handle's abort fd becomes readable: false
 * then (the call ends). */
bool tq_pause(tenq_client *c, int ms);

/* ---- calls (call.c) ---- */
/* tq_exchange, then a non-2xx answer becomes its error code with the
 * server's message and field set.  0 for a 2xx answer. */
int tq_call(tenq_client *c, const char *method, const char *path, const char *body, size_t len,
            int64_t extra_ms);
/* tq_call, and the answer object in *answer (may be NULL when not
 * needed): a span of c->body, good until the next request; a 2xx answer
 * that is not a JSON object is TENQ_EPROTOCOL. */
int tq_call_text(tenq_client *c, const char *method, const char *path, const char *body, size_t len,
                 int64_t extra_ms, tq_span *answer);
/* Sends b (then freed) as a POST to path, the answer object in *a (may be
 * NULL): tq_call_text, with TENQ_ENOMEM when b ran out of memory. */
int tq_post_buf(tenq_client *c, const char *path, tq_buf *b, int64_t extra_ms, tq_span *a);
/* tq_post_buf for the answers read whole in steps (leases, outcomes,
 * batches: a walk that enters what it reads checks each byte once, where
 * checking the text first would be a second pass): *top walks the answer
 * object, found by its braces alone.  The caller walks to its end (0),
 * which checks it; until then nothing in it is known to be JSON. */
int tq_post_walk(tenq_client *c, const char *path, tq_buf *b, int64_t extra_ms, tq_iter *top);

/* ---- jobs (jobs.c) ---- */
/* A request key of this handle (Idempotency-Key: a request sent again is
 * answered its first answer), ordered by time. */
#define TQ_AUTO_KEY_LEN 30
void tq_auto_key(tenq_client *c, char out[TQ_AUTO_KEY_LEN + 1]);
/* One job as JSON text appended to b; 0 or the refusal (a queue and a type
 * are required). */
int tq_job_text(tenq_client *c, const tenq_submit_req *r, tq_buf *b);

#endif
