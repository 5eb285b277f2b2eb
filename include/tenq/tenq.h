// SPDX-License-Identifier: Apache-2.0
/* libtenq — the C client of a tenq server.
 *
 * A thin layer over the HTTP/JSON protocol of docs/API.md: submit, read, wait
 * for and cancel jobs; lease and report them as a worker; and a generic
 * request for everything else (tenants, queues, the morgue, tokens, stats).
 *
 * Conventions, for every function below:
 * - Errors: 0 on success, or a negative TENQ_E* code of tenq/errors.h.  An
 *   error answered by the server keeps its meaning (404 -> TENQ_ENOT_FOUND,
 *   409 -> TENQ_ECONFLICT, ...); local failures are TENQ_ECONNECT (no server
 *   could be reached, or the connection broke), TENQ_ETIMEOUT,
 *   TENQ_EPROTOCOL (the answer was not HTTP/JSON as expected), TENQ_EINVALID
 *   (a bad argument, refused before anything was sent) and TENQ_ENOMEM.
 *   tenq_errmsg() says why.  On error, out-parameters are left NULL/0
 *   unless the function says otherwise.
 * - Threads: a tenq_client is used by one thread at a time (it holds one
 *   connection and one error message).  Distinct handles are independent;
 *   use one handle per thread.  Nothing here keeps global state.
 * - JSON crosses this API as NUL-terminated UTF-8 text ("args_json", ...).
 *   Text given to the library is checked to be well-formed JSON before it is
 *   sent (TENQ_EINVALID if not).
 * - Memory: "the caller frees with X" names the only way to release a
 *   pointer handed out; strings borrowed by the library (every const char *
 *   argument) are only read during the call.
 * - Times are milliseconds since the Unix epoch; 0 means "none" or "not yet".
 * - Connections: HTTP/1.1 keep-alive, one socket per handle, reused across
 *   calls and reopened transparently when the server closed an idle one.
 *   With several server URLs, a connection failure moves on to the next
 *   (servers sharing one PostgreSQL store are interchangeable).  A request
 *   is sent again only when it cannot have reached the server (or is a
 *   GET); TENQ_ECONNECT/TENQ_ETIMEOUT after sending leave open whether the
 *   server acted, which is what idempotency keys are for.  Sockets never
 *   raise SIGPIPE.
 *
 * Every public function is marked TENQ_API so that a shared build can export
 * exactly these; structs the caller fills are zero-initialised first
 * (`tenq_submit_req r = {0};`) so fields appended later default to "unset".
 */
#ifndef TENQ_TENQ_H
#define TENQ_TENQ_H

#include "tenq/errors.h"
#include "tenq/states.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef TENQ_API
#define TENQ_API __attribute__((visibility("default")))
#endif

#define TENQ_CLIENT_VERSION "0.1.0"

/* ---- the handle ----------------------------------------------------------------------------- */

typedef struct tenq_client tenq_client;

typedef struct tenq_options {
    /* sizeof(tenq_options), set by tenq_options_init(): a later library reads
     * only the fields this caller knew about. */
    size_t size;
    /* Server base URLs, "http://host:port" (the port defaults to 80; an
     * IPv6 host is written [::1]).  Tried in order; the one that answered
     * last is tried first next time.  NULL/0: "http://127.0.0.1:7070". */
    const char *const *servers;
    size_t nservers;
    /* Sent as "Authorization: Bearer <token>"; NULL: none. */
    const char *token;
    /* Per server tried; 0: 5000. */
    int connect_timeout_ms;
    /* Time to send a request and read its whole answer; 0: 30000.  Long
     * polls (tenq_wait, tenq_lease with wait_ms) add their wait to it. */
    int request_timeout_ms;
    /* Several servers: a call that meets a standby goes to the leader it
     * names; one that meets no server, a server that is away, or one that
     * answers 503 (a takeover under way, a reload), goes on to the next
     * server after a pause (50 ms doubling to 1 s) for up to this long
     * before it fails.  A request whose connection broke once sent goes
     * again only when that is harmless (reads, submits, which carry
     * idempotency keys, a worker's calls; not token creation or the
     * morgue's actions).  0: 15000; negative: never again. */
    int failover_ms;
    /* https:// servers: the PEM file of the CAs trusted to sign their
     * certificates, instead of the system's; NULL: the system's.  A
     * server's certificate must name the host of its URL (a DNS name, or
     * an IP address as a subjectAltName).  TENQ_ETLS when it does not
     * verify. */
    const char *ca_file;
    /* A client certificate for mutual TLS (both or neither): PEM files of
     * the certificate (and its chain) and of its key, without passphrase.
     * A server that accepts it maps it to a token (docs/operations.md). */
    const char *cert_file;
    const char *key_file;
} tenq_options;

/* Fills *o with the defaults above and sets o->size. */
TENQ_API void tenq_options_init(tenq_options *o);

/* Makes a handle; nothing is connected until the first call.  The options
 * and the strings they point to are copied.  On TENQ_ENOMEM *out is NULL;
 * on any other error (TENQ_EINVALID: a malformed URL) *out is still a handle
 * that serves only tenq_errmsg() and tenq_client_free().  In every case but
 * TENQ_ENOMEM the caller frees *out with tenq_client_free(). */
TENQ_API int tenq_client_new(const tenq_options *opts, tenq_client **out);
/* Closes the connection and frees the handle; NULL is a no-op. */
TENQ_API void tenq_client_free(tenq_client *c);

/* The last error on this handle: the server's message (with the field it
 * named), or the local reason; "" after a success.  Owned by the handle,
 * valid until the next call on it.  Never NULL (also for c == NULL). */
TENQ_API const char *tenq_errmsg(const tenq_client *c);
/* The field the server named in its last error, or NULL.  Owned by the
 * handle, valid until the next call on it. */
TENQ_API const char *tenq_errfield(const tenq_client *c);
/* The HTTP status of the last answer, or 0 when no answer came (a local
 * error).  Tells a server's refusal from a failure to reach it. */
TENQ_API int tenq_errstatus(const tenq_client *c);

/* Frees what the library handed out with "the caller frees with tenq_free";
 * NULL is a no-op. */
TENQ_API void tenq_free(void *p);

/* ---- job states ----------------------------------------------------------------------------- */

typedef enum tenq_state {
    TENQ_STATE_UNKNOWN = 0, /* a name this library does not know */
#define TENQ_STATE_ENUM_(name, word, abi, kind, finished, help) TENQ_STATE_##name = (abi),
    TENQ_STATE_TABLE(TENQ_STATE_ENUM_)
#undef TENQ_STATE_ENUM_
} tenq_state;

/* "ready", "dead", ...; "unknown" for TENQ_STATE_UNKNOWN.  A constant. */
TENQ_API const char *tenq_state_name(tenq_state s);
/* The state of that name, or TENQ_STATE_UNKNOWN. */
TENQ_API tenq_state tenq_state_parse(const char *name);
/* Finished (tenq/states.h): what tenq_wait() waits for. */
TENQ_API bool tenq_state_finished(tenq_state s);

/* ---- submitting ----------------------------------------------------------------------------- */

typedef struct tenq_submit_req {
    const char *tenant;    /* NULL: the tenant of a tenant token */
    const char *queue;     /* required */
    const char *type;      /* required */
    const char *args_json; /* any JSON; NULL: none */
    const char *key;       /* the lane; NULL: none */
    const char *unique_key;
    const char *idempotency_key;
    bool unique; /* dedup on a hash of type and args */
    bool has_priority;
    int priority;          /* -32768..32767, higher first */
    int64_t run_at;        /* 0: now */
    uint32_t max_attempts; /* 0: the queue's */
    bool has_score;
    double score;            /* merging queues: the payload's order */
    const char *traceparent; /* the caller's W3C trace context, handed out with the job */
    /* Keyed limits, debounce and expiry (docs/SEMANTICS.md, "Concurrency
     * keys" to "Expiry"): the keys as the API takes them, a JSON array
     * (["account:7"] or [{"key": "account:7", "limit": 3}]); NULL: none. */
    const char *concurrency_keys_json;
    const char *rate_keys_json;
    int64_t debounce_ms, debounce_max_ms; /* with key; 0: none */
    int64_t expire_at;                    /* ms since the epoch; 0: none */
    int64_t start_within_ms;              /* 0: none */
} tenq_submit_req;

/* The answer for one job (of a single submit or of a batch). */
typedef struct tenq_submit_res {
    int err; /* 0, or why this job was refused */
    uint64_t id;
    tenq_state state;
    bool created;      /* a new job was made (false: duplicate, merged, replayed) */
    bool duplicate;    /* an unfinished job with the same unique key answered */
    bool merged;       /* the payload joined job `id` */
    bool replayed;     /* the answer of an earlier submit with this idempotency key */
    char message[256]; /* when err: the server's message */
    char field[64];    /* when err: the field at fault, or "" */
    bool debounced;    /* it replaced the pending job `id` of its key (debounce_ms) */
} tenq_submit_res;

/* Submits one job.  res (may be NULL) gets the answer; on error res->err
 * and res->message are set too. */
TENQ_API int tenq_submit(tenq_client *c, const tenq_submit_req *job, tenq_submit_res *res);
/* The same with the job as a JSON object text (the body of POST /v1/jobs). */
TENQ_API int tenq_submit_json(tenq_client *c, const char *job_json, tenq_submit_res *res);

#define TENQ_BATCH_MAX 10000

/* Submits n jobs (1..TENQ_BATCH_MAX) in one request; res is the caller's
 * array of n answers, in order.  Returns 0 when the server answered the
 * batch, even if some jobs were refused (see res[i].err); an error when the
 * whole request failed (then nothing was submitted, unless the connection
 * broke after sending: TENQ_ECONNECT/TENQ_ETIMEOUT leave that open). */
TENQ_API int tenq_submit_batch(tenq_client *c, const tenq_submit_req *jobs, size_t n,
                               tenq_submit_res *res);
/* The same with each job as a JSON object text.  A text that is not a JSON
 * object is refused locally at its index (res[i].err = TENQ_EINVALID) and
 * the others are sent. */
TENQ_API int tenq_submit_batch_json(tenq_client *c, const char *const *jobs_json, size_t n,
                                    tenq_submit_res *res);

/* ---- reading jobs -----------------------------------------------------------------------------
 */

/* A job as GET /v1/jobs/{id} or POST /v1/lease returns it.  Every pointer
 * is owned by the job (NULL when the server sent null or nothing); the
 * strings share one allocation, so they are freed only with the job
 * (tenq_job_free, tenq_jobs_free), never one by one. */
typedef struct tenq_job {
    uint64_t id;
    char *tenant, *queue, *type;
    char *key;
    tenq_state state; /* TENQ_STATE_LEASED for a leased job */
    int priority;
    uint32_t attempts; /* leases so far */
    uint32_t attempt;  /* this attempt, counted from 1 (= attempts), as
                        * GET /v1/jobs/{id}/attempts numbers it */
    uint32_t max_attempts;
    int64_t run_at, created_at, ready_at, leased_at, started_at, finished_at;
    int64_t lease_until; /* by the server's clock */
    /* a lease: the time it had left when the server answered, in ms (space
     * heartbeats by this, on a monotonic clock: clocks need not agree) */
    int64_t lease_left_ms;
    uint64_t token;  /* the lease's fencing token (lease; status with admin and worker tokens) */
    char *worker;    /* who ran it last */
    char *error;     /* the last failure */
    char *args_json; /* "null" when none; NULL on merging queues */
    char *payloads_json; /* merging queues: [{"payload": ..., "score": ...}, ...] */
    char *result_json, *stats_json, *progress_json;
    char *unique_key, *idempotency_key;
    char *traceparent; /* the submitter's W3C trace context, or NULL */
    bool cancel_requested;
    uint64_t merged_into; /* state merged: the job that took its payloads */
    char *json;           /* the whole job as JSON text (a lease's `attempt` as above) */
    /* steps its handler stored before (a lease; a status of a job in the
     * server's memory): read them with tenq_steps() (docs/SEMANTICS.md,
     * "Durable steps") */
    uint32_t steps;
} tenq_job;

/* Frees a job from tenq_status()/tenq_wait() with its strings; NULL is a
 * no-op. */
TENQ_API void tenq_job_free(tenq_job *job);
/* Frees an array of n jobs from tenq_lease(); NULL is a no-op. */
TENQ_API void tenq_jobs_free(tenq_job *jobs, size_t n);

/* The job (another tenant's job is TENQ_ENOT_FOUND).  The caller frees *job
 * with tenq_job_free. */
TENQ_API int tenq_status(tenq_client *c, uint64_t id, tenq_job **job);
/* Waits up to timeout_ms (0: answer at once) for the job to finish, in long
 * polls of at most the server's --max-wait.  Returns 0 with the job whether
 * or not it finished: see tenq_state_finished(job->state).  The caller
 * frees *job with tenq_job_free. */
TENQ_API int tenq_wait(tenq_client *c, uint64_t id, int64_t timeout_ms, tenq_job **job);
/* Cancels a job: *state is cancelled at once, or stays leased/running with
 * *cancel_requested set.  Finished and dead jobs: TENQ_ECONFLICT.  Either
 * out-parameter may be NULL. */
TENQ_API int tenq_cancel(tenq_client *c, uint64_t id, tenq_state *state, bool *cancel_requested);

/* ---- durable steps (docs/SEMANTICS.md, "Durable steps") -----------------------------------
 * A handler stores each step's result under its lease; a later attempt reads
 * them back instead of running those steps again.  A worker's handler uses
 * the task's calls (tenq/worker.h: tenq_task_step_get, ...), which make
 * these. */

typedef enum tenq_step_kind {
    TENQ_STEP_RUN = 0, /* code the handler ran: its result */
    TENQ_STEP_SLEEP,   /* a durable sleep */
    TENQ_STEP_EVENT,   /* a wait for an event: its payload */
    TENQ_STEP_CHILD,   /* a child job awaited: its result or its error */
} tenq_step_kind;

/* A step as GET /v1/jobs/{id}/steps answers it.  Strings are owned by the
 * array (tenq_steps_free); NULL when none. */
typedef struct tenq_step {
    uint32_t pos;
    char *name;
    tenq_step_kind kind;
    bool done;         /* false while the job waits for it */
    char *result_json; /* its result (JSON text), or NULL */
    char *error;       /* EVENT: "timed out"; CHILD: the child's error */
    uint32_t attempt;  /* the attempt that stored it (1 = first) */
    uint64_t token;    /* its lease (admin and worker tokens) */
    int64_t created_at, finished_at;
    char *event;            /* EVENT: the key */
    int64_t until;          /* SLEEP: when the job resumes; EVENT: its timeout (0: none) */
    uint64_t child;         /* CHILD: the child's id */
    tenq_state child_state; /* CHILD, done: the state it ended in */
} tenq_step;

/* The job's steps, in order.  The caller frees *steps with
 * tenq_steps_free(*steps, *n). */
TENQ_API int tenq_steps(tenq_client *c, uint64_t id, tenq_step **steps, size_t *n);
TENQ_API void tenq_steps_free(tenq_step *steps, size_t n);

typedef struct tenq_step_req {
    const char *name; /* 1-256 bytes without control characters */
    tenq_step_kind kind;
    const char *result_json;      /* RUN: any JSON; NULL: null */
    int64_t duration_ms;          /* SLEEP: from now, on the server's clock ... */
    int64_t until;                /* ... or until this time (ms since the epoch), when not 0 */
    const char *event;            /* EVENT: the key */
    int64_t timeout_ms;           /* EVENT: 0: none */
    const tenq_submit_req *child; /* CHILD: the job (the parent's tenant) */
} tenq_step_req;

typedef struct tenq_step_res {
    uint32_t pos;
    bool duplicate;    /* stored already by this lease (an answer lost) */
    bool parked;       /* the lease ended: the job waits (state) */
    tenq_state state;  /* the job's state after */
    int64_t run_at;    /* SLEEP, parked: when it resumes */
    bool done;         /* EVENT: a kept event was taken at once: result_json */
    char *result_json; /* done: its payload; the caller frees it with tenq_free */
    uint64_t child;    /* CHILD: the child's id */
} tenq_step_res;

/* Stores a step of job id under its lease token, or parks the job (SLEEP,
 * EVENT, CHILD).  A stale token: TENQ_ECONFLICT (field "token"); a name an
 * earlier attempt stored: TENQ_ECONFLICT (field "name"). */
TENQ_API int tenq_step_store(tenq_client *c, uint64_t id, uint64_t token, const tenq_step_req *r,
                             tenq_step_res *res);
/* One step of a batch (tenq_steps_store): its job, its lease token, the step. */
typedef struct tenq_step_item {
    uint64_t id, token;
    tenq_step_req step;
} tenq_step_item;

typedef struct tenq_step_item_res {
    int err; /* 0, or why this step was refused (a job not in hand: TENQ_ECONFLICT, "token") */
    tenq_step_res res; /* err 0: its answer (an event taken at once: done, no result_json; read
                        * the job's steps) */
    char message[256];
    char field[64];
} tenq_step_item_res;

/* Stores n steps (1..TENQ_BATCH_MAX) of any jobs in one request (POST
 * /v1/steps), each as tenq_step_store would, answered once committed;
 * res is the caller's array of n answers, in order.  Returns 0 when the
 * server answered, even if some steps were refused (res[i].err). */
TENQ_API int tenq_steps_store(tenq_client *c, const tenq_step_item *items, size_t n,
                              tenq_step_item_res *res);
/* Sends an event of a tenant (NULL: the tenant of a tenant token): the jobs
 * waiting for its key go on with its payload (any JSON; NULL: null), or it
 * is kept for the server's --event-window.  *delivered gets how many jobs it
 * woke, *kept whether it was kept (either may be NULL).  Sent with a
 * request key: sent again it delivers nothing twice. */
TENQ_API int tenq_send_event(tenq_client *c, const char *tenant, const char *key,
                             const char *payload_json, size_t *delivered, bool *kept);

/* ---- workers -------------------------------------------------------------------------------- */

typedef struct tenq_lease_req {
    const char *worker; /* e.g. "host-1/pid-77"; NULL: the connection's address */
    const char *const *queues;
    size_t nqueues; /* 1..64 */
    const char *const *types;
    size_t ntypes;   /* 0: every type */
    unsigned max;    /* 1..1000; 0: 1 */
    int64_t wait_ms; /* long poll: answer as soon as a job is eligible, or after this */
} tenq_lease_req;

/* Leases up to req->max jobs.  *jobs is an array of *n jobs (NULL when
 * none came within wait_ms); the caller frees it with tenq_jobs_free(*jobs,
 * *n).  Each has id, token, lease_until, lease_left_ms, tenant, queue, type, key, attempt,
 * max_attempts, priority, run_at, created_at and args_json or
 * payloads_json. */
TENQ_API int tenq_lease(tenq_client *c, const tenq_lease_req *req, tenq_job **jobs, size_t *n);
/* The handler began: the job is running. */
TENQ_API int tenq_start(tenq_client *c, uint64_t id, uint64_t token);
/* Extends the lease, optionally recording progress (any JSON; NULL: none).
 * *lease_until gets the new deadline and *cancel whether the job was
 * cancelled (stop the handler and tenq_fail with cancelled).  Out-
 * parameters may be NULL.  A stale token: TENQ_ECONFLICT. */
TENQ_API int tenq_heartbeat(tenq_client *c, uint64_t id, uint64_t token, const char *progress_json,
                            int64_t *lease_until, bool *cancel);
/* The same, with *lease_left_ms: the time the lease has left as the server
 * answered (0 from a server too old to say).  A worker spaces its heartbeats
 * by this on its monotonic clock, so that a step of either machine's wall
 * clock changes nothing. */
TENQ_API int tenq_heartbeat_left(tenq_client *c, uint64_t id, uint64_t token,
                                 const char *progress_json, int64_t *lease_until,
                                 int64_t *lease_left_ms, bool *cancel);
/* The job succeeded; result and stats are any JSON or NULL. */
TENQ_API int tenq_ack(tenq_client *c, uint64_t id, uint64_t token, const char *result_json,
                      const char *stats_json);

typedef struct tenq_fail_req {
    const char *error; /* for people; NULL: none */
    bool has_retry_in;
    int64_t retry_in_ms; /* with has_retry_in: retry after this, not the queue's backoff */
    bool no_retry;       /* to the morgue now */
    bool cancelled;      /* the worker stopped a cancelled job */
    const char *stats_json;
} tenq_fail_req;

/* The attempt failed (f may be NULL: a plain failure, retried by the
 * queue's backoff).  *state (may be NULL) gets scheduled, dead or cancelled,
 * and *run_at (may be NULL) the retry time when scheduled. */
TENQ_API int tenq_fail(tenq_client *c, uint64_t id, uint64_t token, const tenq_fail_req *f,
                       tenq_state *state, int64_t *run_at);

typedef struct tenq_outcome {
    uint64_t id, token;
    bool ok;                 /* an ack; else a fail */
    const char *result_json; /* ok: any JSON or NULL */
    const char *stats_json;
    tenq_fail_req fail; /* !ok (its stats_json is ignored: use the one above) */
} tenq_outcome;

typedef struct tenq_outcome_res {
    int err; /* 0, or why this outcome was refused */
    tenq_state state;
    char message[256];
    char field[64];
} tenq_outcome_res;

/* Reports n outcomes (1..TENQ_BATCH_MAX) in one request; res is the
 * caller's array of n answers, in order.  Returns 0 when the server
 * answered, even if some outcomes were refused (res[i].err). */
TENQ_API int tenq_outcomes(tenq_client *c, const tenq_outcome *list, size_t n,
                           tenq_outcome_res *res);
/* tenq_outcomes and then tenq_lease in one request (a worker's loop: report
 * what it ran, take what comes next).  The outcomes are applied first (an
 * ack's slot and lane are free for this lease) and the lease is taken once
 * they are committed, so an answer acknowledges them as tenq_outcomes does;
 * then it waits for jobs as tenq_lease does.  n may be 0 (tenq_lease).
 * After an error the outcomes may or may not be kept (the connection may
 * have failed after the commit): report them again; one already kept is
 * refused harmlessly (not_found). */
TENQ_API int tenq_lease_report(tenq_client *c, const tenq_outcome *list, size_t n,
                               tenq_outcome_res *res, const tenq_lease_req *req, tenq_job **jobs,
                               size_t *njobs);

/* ---- anything else -------------------------------------------------------------------------- */

/* Sends METHOD path (with its query string, already escaped) and a body
 * (NULL/0: none; else JSON, sent as application/json).  *status gets the
 * HTTP status (0 if no answer came) and *response the answer's body,
 * NUL-terminated (NULL if no answer came); the caller frees it with
 * tenq_free.  Returns 0 for a 2xx answer, the error the server named for
 * another status (with *status and *response still set), or a local
 * error.  status and response may be NULL. */
TENQ_API int tenq_request(tenq_client *c, const char *method, const char *path, const char *body,
                          size_t len, int *status, char **response);

#ifdef __cplusplus
}
#endif

/* Workers that run C functions as handlers: tenq_worker_*, tenq_task_*. */
#include "tenq/worker.h"

#endif
