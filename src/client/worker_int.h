// SPDX-License-Identifier: Apache-2.0
/* libtenq's worker: what its files share.  Not installed; the contract is
 * include/tenq/worker.h.
 *
 * Threads and who owns what:
 * - the caller of tenq_worker_run() is the control thread: it starts the
 *   others, turns tenq_worker_stop() into state changes, keeps the grace
 *   deadline and joins everyone (worker.c);
 * - one leaser thread (worker_lease.c) makes tasks from leases and queues
 *   them;
 * - `concurrency` runner threads (worker_run.c) take queued tasks and run
 *   their handlers;
 * - one reporter thread (worker_report.c) sends outcomes, heartbeats and
 *   starts, and is the only one that frees tasks.
 * Everything below marked (mu) is guarded by tenq_worker.mu.  A task's job
 * never changes after the lease; its result and stats belong to its runner
 * while it runs. */
#ifndef TENQ_CLIENT_WORKER_INT_H
#define TENQ_CLIENT_WORKER_INT_H

#include "base/utf8.h"
#include "tenq/tenq.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>

/* A handler runs this long before the server is told it began (POST
 * .../start): shorter jobs go from leased straight to their outcome,
 * which saves a request and a commit per job. */
#define WK_START_AFTER_MS       10
/* Progress is sent at most this often per job. */
#define WK_PROGRESS_EVERY_MS    500
/* Retries of a server that cannot be reached back off up to this. */
#define WK_BACKOFF_MAX_MS       5000
#define WK_FAILOVER_MS          1000 /* each call's own failover budget (failover.c) */
/* A stop interrupts a lease request only once it waited this long for its
 * answer: a lease answered at once is read, never lost (see conn.c). */
#define WK_LEASE_ABORT_AFTER_MS 50
/* With some slots free and handlers still running, the leaser waits up to
 * this long for more to free before it leases (see worker_lease.c). */
#define WK_LEASE_GATHER_MS      1
/* The shortest heartbeat interval, whatever the lease says. */
#define WK_HEARTBEAT_MIN_MS     100

enum { TK_QUEUED, TK_RUNNING, TK_DONE };

struct tenq_task {
    tenq_job job; /* owned; immutable after the lease */
    tenq_worker *w;
    unsigned slot;              /* (mu) the runner, when running */
    int state;                  /* (mu) TK_* */
    int64_t got_ms;             /* monotonic: leased */
    int64_t began_ms, ended_ms; /* (mu) monotonic: the handler ran */
    int64_t next_hb_ms;         /* (mu) monotonic: the next heartbeat */
    bool start_sent;            /* (mu) */
    bool lost;                  /* (mu) the lease is gone: report nothing */
    bool cancel_seen;           /* (mu) a heartbeat answered cancel: true */
    atomic_int stop;            /* tenq_stop */
    char *progress;             /* (mu) owned; the latest progress */
    bool progress_dirty;        /* (mu) not sent yet */
    int64_t progress_sent_ms;   /* (mu) */
    char *stats;                /* owned; set by the handler */
    tenq_result res;            /* set when done */
    /* durable steps (worker_steps.c; the handler's thread): the job's
     * steps read once, then kept with those this attempt stores */
    tenq_step *steps;
    size_t nsteps, capsteps;
    bool steps_read;
    bool parked;                   /* (mu) a step parked the job: no outcome, no heartbeat */
    char err[512];                 /* tenq_task_errmsg */
    struct tenq_task *prev, *next; /* (mu) the list of tasks in hand */
    struct tenq_task *qnext;       /* (mu) the ready or the done queue */
};

typedef struct wk_handler {
    char *type; /* owned; NULL: every type */
    tenq_handler_fn fn;
    void *ctx;
} wk_handler;

typedef struct wk_queue {
    tenq_task *head, *tail;
    size_t n;
} wk_queue;

struct tenq_worker {
    /* options, copied */
    char **servers;
    size_t nservers;
    char *token;
    char *ca_file, *cert_file, *key_file; /* https (tenq_worker_options) */
    int connect_ms, request_ms;
    char *name;
    char **queues;
    size_t nqueues;
    unsigned concurrency;
    int64_t poll_ms, grace_ms;
    tenq_log_fn log;
    void *log_ctx;
    tenq_log_level log_level;
    /* handlers */
    wk_handler *handlers;
    size_t nhandlers;
    wk_handler *any; /* points into handlers, or NULL */
    char err[512];
    bool ran;

    pthread_mutex_t mu;
    pthread_cond_t cv_run;    /* runners: a task is queued, or stopping */
    pthread_cond_t cv_lease;  /* leaser: capacity freed, or stopping */
    pthread_cond_t cv_report; /* reporter: an outcome, progress, or stopping */
    /* tenq_worker_stop() writes a byte to both: stop_pipe is never read
     * (it stays readable and so interrupts the leaser's long poll);
     * ctl_pipe wakes the control thread, which reads it empty. */
    int stop_pipe[2], ctl_pipe[2];
    /* written by the control thread on a second stop: interrupts the
     * reporter's request; never read */
    int abandon_pipe[2];
    atomic_int stops;           /* calls of tenq_worker_stop() */
    int *slot_fds;              /* eventfd per runner: tenq_task_stop_fd() */
    tenq_client **slot_clients; /* per runner, made at a handler's first step */
    bool stopping;              /* (mu) */
    bool past_grace;            /* (mu) */
    bool abandon;               /* (mu) a second stop */
    bool leaser_done;           /* (mu) */
    bool reporter_done;         /* (mu) */
    unsigned runners_alive;     /* (mu) */
    int fatal;                  /* (mu) the server refused leases for good */
    tenq_task *hand;            /* (mu) every task in hand */
    wk_queue ready;             /* (mu) leased, waiting for a runner */
    wk_queue done;              /* (mu) handler returned, outcome not reported */
    size_t nrunning;            /* (mu) */
    /* (mu) the free slots the waiting leaser needs to go on; 0: it is not
     * waiting for slots */
    unsigned lease_want;
    /* (mu) when the waiting reporter wakes by itself; 0 while it works.
     * Whoever gives it something to do sooner signals cv_report. */
    int64_t report_wake;
    tenq_worker_counts counts; /* (mu) */
};

/* Capacity not taken by queued or running tasks.  (mu) */
static inline unsigned wk_free_slots(const tenq_worker *w)
{
    size_t used = w->ready.n + w->nrunning;
    return used >= w->concurrency ? 0 : (unsigned)(w->concurrency - used);
}

/* The files, bottom-up: each calls only what the sections before its own
 * offer (and worker_task.c, what handlers see); worker.c, at the top,
 * starts the threads. */

/* ---- worker_queue.c: tasks in hand ---- */
void wk_queue_push(wk_queue *q, tenq_task *t);
tenq_task *wk_queue_pop(wk_queue *q);
/* Asks a task's handler to stop (first reason wins) and wakes it.  (mu) */
void wk_task_stop(tenq_task *t, tenq_stop why);
/* Frees a task and its strings (it must be out of every list). */
void wk_task_free(tenq_task *t);

/* ---- worker_util.c: what the threads share (and tenq_worker_stop) ---- */
void wk_log(tenq_worker *w, tenq_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* How long after an answer that granted or extended a lease the next
 * heartbeat is due (ms, on the monotonic clock): a third of the lease's time
 * left, as the server said, so that a step of the wall clock on either side
 * changes nothing. */
int64_t wk_heartbeat_every(int64_t lease_left_ms, int64_t lease_until);
/* A client for one of the worker's threads; abort_fd (-1: none)
 * interrupts its requests (waits for an answer after abort_after_ms).
 * NULL on failure (logged). */
tenq_client *wk_client(tenq_worker *w, int abort_fd, int abort_after_ms);
/* Waits on cv until the monotonic time `until` (<= 0: without limit). */
void wk_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t until);

/* ---- the threads' bodies ---- */
/* worker_lease.c */
void *wk_leaser_main(void *arg);
/* worker_run.c */
typedef struct wk_runner_arg {
    tenq_worker *w;
    unsigned slot;
} wk_runner_arg;
void *wk_runner_main(void *arg);
/* worker_report.c */
void *wk_reporter_main(void *arg);

#endif
