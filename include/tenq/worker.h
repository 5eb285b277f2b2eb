// SPDX-License-Identifier: Apache-2.0
/* libtenq workers: run C functions as the handlers of job types.
 *
 *     tenq_worker_options o;
 *     tenq_worker_options_init(&o);
 *     o.queues = (const char *[]){"reports"};
 *     o.nqueues = 1;
 *     o.concurrency = 4;
 *     tenq_worker *w;
 *     if (tenq_worker_new(&o, &w) != 0) ...
 *     tenq_worker_handle(w, "Report.build", build_report, &app);
 *     tenq_worker_run(w);      // until tenq_worker_stop(w), e.g. from SIGTERM
 *     tenq_worker_free(w);
 *
 * What a worker does (docs/WORKER.md tells why):
 * - It runs `concurrency` handlers at once, each on its own thread.  One
 *   thread leases up to the free capacity in one request and long-polls
 *   when nothing is eligible, so an idle worker costs nothing and a job
 *   starts as soon as it is submitted.
 * - Another thread reports outcomes, all that are waiting in one request
 *   (POST /v1/outcomes), heartbeats every lease at a third of its length
 *   (with the progress a handler set), and tells the server a handler
 *   began when it runs for more than 10 ms.
 * - When the server is away, it retries with backoff and keeps the
 *   outcomes it holds until the server is back (the fencing token decides
 *   whether they still count).
 * - tenq_worker_stop(): no more leases; running handlers finish within the
 *   grace period (then tenq_task_stopping() says TENQ_STOP_SHUTDOWN); every
 *   outcome is reported; tenq_worker_run() returns.
 *
 * Threads: every thread of a worker has its own tenq_client.  Handlers run
 * concurrently on distinct threads; a handler sees its task only.  The
 * functions below may be called from any thread unless they say otherwise.
 * Errors, memory and JSON follow the conventions of tenq/tenq.h.
 */
#ifndef TENQ_WORKER_H
#define TENQ_WORKER_H

#include "tenq/tenq.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tenq_worker tenq_worker;
/* One job in hand, as its handler sees it.  Owned by the worker; valid
 * until the handler returns. */
typedef struct tenq_task tenq_task;

/* ---- outcomes ---------------------------------------------------------------------------------
 */

/* A failure retried after the queue's backoff. */
#define TENQ_RETRY_BACKOFF (-1)

/* What a handler returns.  Make it with the three functions below, which
 * copy their strings; the worker frees it. */
typedef struct tenq_result {
    bool ok;
    char *result_json;   /* ok: JSON text or NULL; owned by the result */
    char *error;         /* !ok: for people; owned by the result */
    int64_t retry_in_ms; /* !ok: retry after this, or TENQ_RETRY_BACKOFF */
    bool no_retry;       /* !ok: to the morgue now */
    bool parked;         /* a step parked the job: nothing is reported */
} tenq_result;

/* The job succeeded with this result (any JSON text; NULL: none).  Text
 * that is not JSON fails the job instead ("invalid result JSON"). */
TENQ_API tenq_result tenq_result_ok(const char *result_json);
/* The attempt failed; retried after retry_in_ms, or the queue's backoff
 * with TENQ_RETRY_BACKOFF. */
TENQ_API tenq_result tenq_result_fail(const char *error, int64_t retry_in_ms);
/* The job failed for good: to the morgue. */
TENQ_API tenq_result tenq_result_no_retry(const char *error);
/* What a handler returns when a step parked its job (a sleep, a wait for
 * an event or a child: *parked was set): its lease ended, nothing is
 * reported, and the job runs again when its wait is over. */
TENQ_API tenq_result tenq_result_parked(void);

/* A handler.  It runs on one of the worker's threads and returns the
 * outcome; ctx is what tenq_worker_handle() was given. */
typedef tenq_result (*tenq_handler_fn)(tenq_task *task, void *ctx);

/* ---- the task: what a handler may ask and tell ------------------------------------------------
 */

/* The job: id, token, tenant, queue, type, key, attempt, args_json (or
 * payloads_json), json (the whole job as the lease answered it), ... */
TENQ_API const tenq_job *tenq_task_job(const tenq_task *t);
/* Which of the worker's concurrency slots runs it: 0 .. concurrency-1.
 * A slot runs one task at a time, always on the same thread. */
TENQ_API unsigned tenq_task_slot(const tenq_task *t);
/* Records the job's progress (any JSON); sent with the next heartbeat,
 * within a second.  TENQ_EINVALID if progress_json is not JSON. */
TENQ_API int tenq_task_progress(tenq_task *t, const char *progress_json);
/* Stats to send with the outcome (any JSON object text; NULL: none).
 * TENQ_EINVALID if stats_json is not a JSON object. */
TENQ_API int tenq_task_stats(tenq_task *t, const char *stats_json);

typedef enum tenq_stop {
    TENQ_STOP_NONE = 0,
    TENQ_STOP_CANCELLED, /* the job was cancelled: the worker reports it so */
    TENQ_STOP_LOST,      /* the lease is gone (expired, taken over): nothing counts */
    TENQ_STOP_SHUTDOWN,  /* the worker is stopping and the grace period is over */
} tenq_stop;

/* Whether the handler should stop, and why.  A handler that returns a
 * failure after TENQ_STOP_CANCELLED has its job reported cancelled; one
 * that succeeds anyway has it succeed. */
TENQ_API tenq_stop tenq_task_stopping(tenq_task *t);
/* An fd that becomes readable when tenq_task_stopping() may have changed,
 * for handlers that wait in poll(); tenq_task_stopping() reads it empty.
 * Owned by the worker. */
TENQ_API int tenq_task_stop_fd(const tenq_task *t);

/* ---- durable steps (docs/SEMANTICS.md, "Durable steps") --------------------------------------
 * A handler stores each step's result under its lease, and an attempt after
 * a failure (a crash, a lost lease, a deploy) gets it back instead of
 * running that step again:
 *
 *     const char *rows;
 *     int rc = tenq_task_step_get(t, "fetch", &rows);
 *     if (rc == TENQ_ENOT_FOUND) {          // not done by an earlier attempt
 *         char *got = fetch_rows(...);       // may run again if we die now
 *         rc = tenq_task_step_put(t, "fetch", got);
 *         ...
 *     }
 *
 * Names (1-256 bytes without control characters) must mean the same work on
 * every attempt.  A step that parks the job (a sleep, a wait for an event or
 * for a child job) ends the attempt: it sets *parked, and the handler
 * returns tenq_result_parked() at once; the job runs again from the start
 * when its wait is over, and the same calls then answer from the stored
 * steps without parking.  They run on the handler's thread, with a
 * connection of its slot's.  Errors: TENQ_ECONFLICT when the lease is gone
 * (return; nothing more counts), else the server's refusal or a failure to
 * reach it; tenq_task_errmsg() says why. */

/* The result of step `name` (JSON text owned by the task) when an earlier
 * attempt stored it: 0; TENQ_ENOT_FOUND when none did. */
TENQ_API int tenq_task_step_get(tenq_task *t, const char *name, const char **result_json);
/* Stores step `name`'s result (any JSON; NULL: null), answered once the
 * server committed it. */
TENQ_API int tenq_task_step_put(tenq_task *t, const char *name, const char *result_json);
/* A durable sleep of duration_ms (on the server's clock), or until until_ms
 * (ms since the epoch): *parked, or (a sleep done before, or a time past)
 * the handler goes on. */
TENQ_API int tenq_task_sleep(tenq_task *t, const char *name, int64_t duration_ms, bool *parked);
TENQ_API int tenq_task_sleep_until(tenq_task *t, const char *name, int64_t until_ms, bool *parked);
/* Waits for an event of the job's tenant with this key, at most timeout_ms
 * (0: none): *parked, or 0 with the event's payload (JSON text owned by the
 * task), or TENQ_ETIMEOUT when the wait timed out. */
TENQ_API int tenq_task_wait_event(tenq_task *t, const char *name, const char *key,
                                  int64_t timeout_ms, const char **payload_json, bool *parked);
/* Submits a child job (the job's tenant) once and waits for its end:
 * *parked, or 0 with the child's result (*result_json) when it succeeded or
 * its error (*error; result NULL) when it died or was cancelled; both
 * owned by the task.  A refused submit is its error (TENQ_EQUOTA_EXCEEDED
 * past a quota). */
TENQ_API int tenq_task_run_child(tenq_task *t, const char *name, const tenq_submit_req *child,
                                 const char **result_json, const char **error, bool *parked);
/* Every step of the job stored so far (by earlier attempts, then this
 * one), in order; owned by the task, valid until its next step call. */
TENQ_API int tenq_task_steps(tenq_task *t, const tenq_step **steps, size_t *n);
/* Why the task's last step call failed; "" otherwise.  Owned by the task. */
TENQ_API const char *tenq_task_errmsg(const tenq_task *t);

/* ---- the worker -------------------------------------------------------------------------------
 */

typedef enum tenq_log_level {
    TENQ_LOG_DEBUG = 0,
    TENQ_LOG_INFO,
    TENQ_LOG_WARN,
    TENQ_LOG_ERROR,
} tenq_log_level;

/* Receives one line of the worker's log (no newline).  Called from any of
 * the worker's threads, one call at a time per thread. */
typedef void (*tenq_log_fn)(void *ctx, tenq_log_level level, const char *line);

#define TENQ_WORKER_MAX_CONCURRENCY 4096

typedef struct tenq_worker_options {
    size_t size; /* set by tenq_worker_options_init */
    /* the server, as in tenq_options */
    const char *const *servers;
    size_t nservers;
    const char *token;
    int connect_timeout_ms;
    int request_timeout_ms;
    /* Shown as the job's worker; NULL: "HOST/pid-PID". */
    const char *name;
    /* The queues to lease from (1..64; required). */
    const char *const *queues;
    size_t nqueues;
    /* Handlers running at once; 0: 1.  At most TENQ_WORKER_MAX_CONCURRENCY. */
    unsigned concurrency;
    /* The longest lease long poll; 0: 30000. */
    int64_t poll_ms;
    /* After tenq_worker_stop(): how long running handlers may go on before
     * they are told TENQ_STOP_SHUTDOWN, and how long undelivered outcomes
     * are retried after that; 0: 30000. */
    int64_t grace_ms;
    /* Where log lines go, and the least level sent; NULL: stderr. */
    tenq_log_fn log;
    void *log_ctx;
    tenq_log_level log_level; /* default TENQ_LOG_INFO */
    /* https, as in tenq_options: trusted CAs (NULL: the system's), a client
     * certificate and its key for mutual TLS. */
    const char *ca_file;
    const char *cert_file;
    const char *key_file;
} tenq_worker_options;

/* Fills *o with the defaults above and sets o->size. */
TENQ_API void tenq_worker_options_init(tenq_worker_options *o);

/* Makes a worker; nothing is contacted before tenq_worker_run().  The
 * options and their strings are copied.  On TENQ_ENOMEM *out is NULL; on
 * any other error (TENQ_EINVALID) *out is a handle that serves only
 * tenq_worker_errmsg() and tenq_worker_free().  The caller frees *out with
 * tenq_worker_free(). */
TENQ_API int tenq_worker_new(const tenq_worker_options *o, tenq_worker **out);
/* Frees a worker that is not running; NULL is a no-op. */
TENQ_API void tenq_worker_free(tenq_worker *w);
/* Why the last call on w failed; "" otherwise.  Owned by w. */
TENQ_API const char *tenq_worker_errmsg(const tenq_worker *w);

/* Runs fn for jobs of this type (NULL: every type without a handler of its
 * own).  Leases ask for the registered types only, unless a NULL-type
 * handler is there.  Before tenq_worker_run() only.  TENQ_EINVALID: a bad
 * type name, a type registered twice, or more than 64 types. */
TENQ_API int tenq_worker_handle(tenq_worker *w, const char *type, tenq_handler_fn fn, void *ctx);

/* Runs the worker on the calling thread (and its own) until
 * tenq_worker_stop(); returns when the handlers have returned and every
 * outcome is reported (or the grace period is over with the server away).
 * A server that cannot be reached is retried, never an error.  Returns 0,
 * or: TENQ_EINVALID (no handler), TENQ_EUNAUTHENTICATED/TENQ_EFORBIDDEN/
 * TENQ_EINVALID when the server refuses the worker's leases (the message
 * says why), TENQ_ENOMEM, TENQ_EINTERNAL (a thread could not start).  Once
 * per worker. */
TENQ_API int tenq_worker_run(tenq_worker *w);

/* Stops a worker: no more leases; running handlers finish (within the
 * grace period); outcomes are reported.  A second call abandons the
 * outcomes not yet reported (the server retries those jobs when their
 * leases expire) and makes tenq_worker_run() return once the handlers
 * have.  Async-signal-safe; may come before tenq_worker_run(). */
TENQ_API void tenq_worker_stop(tenq_worker *w);

/* Every job in hand, one line each: id, tenant, queue, type, state
 * (queued, running, reporting) and age.  The caller frees *text with
 * tenq_free. */
TENQ_API int tenq_worker_status(tenq_worker *w, char **text);

typedef struct tenq_worker_counts {
    uint64_t leased;    /* jobs leased */
    uint64_t succeeded; /* outcomes the server took: acks */
    uint64_t failed;    /* ... and failures (cancelled ones too) */
    uint64_t refused;   /* outcomes the server refused (stale token, ...) */
    uint64_t lost;      /* jobs whose lease was gone before the outcome */
    size_t in_hand;     /* leased and not reported yet */
    size_t running;
} tenq_worker_counts;

/* The worker's counts so far. */
TENQ_API void tenq_worker_counts_get(tenq_worker *w, tenq_worker_counts *out);

#ifdef __cplusplus
}
#endif

#endif
