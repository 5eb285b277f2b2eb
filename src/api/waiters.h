// SPDX-License-Identifier: Apache-2.0
/* Requests that wait (waiters.c): lease long polls, woken when a queue gets
 * work, and job waits, answered when the job's final state is committed. */
#ifndef TENQ_API_WAITERS_H
#define TENQ_API_WAITERS_H

#include "auth.h"
#include "http.h"

#include "base/htab.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct server server;
struct event;

typedef struct lease_waiter {
    server *srv;
    http_req *req;
    principal who;
    char **queues;
    size_t nqueues;
    char **types;
    size_t ntypes;
    size_t max;
    char *worker;
    char *results; /* the answers to outcomes reported with the lease, or NULL */
    bool columns;  /* its jobs as columns (lease_json.c) */
    struct event *timer;
    struct lease_waiter *prev, *next;
} lease_waiter;

typedef struct job_waiter {
    server *srv;
    http_req *req;
    uint64_t id;
    principal who;
    struct event *timer;
    struct job_waiter *prev, *next;
} job_waiter;

typedef struct waiters_state {
    lease_waiter *lwait; /* oldest first */
    size_t n_lwait;
    /* srv_wake_leases is running: a lease's reply collected more wake-ups,
     * which wait here for the pass in progress (it walks the waiters) */
    bool waking;
    char **wake_later;
    size_t n_wake_later;
    htab jobs; /* job waiters by id (a list each) */
} waiters_state;

/* A request becomes a long poll (w and its fields taken); a job wait. */
void srv_lease_waiter_add(server *s, lease_waiter *w, int64_t wait_ms);
void srv_job_waiter_add(server *s, job_waiter *w, int64_t wait_ms);
/* The queue got work: its long polls lease, oldest first (commit_hooks). */
void srv_wake_leases(server *s, const char *queue);
/* Every long poll tries again (a new engine). */
void srv_wake_every_lease(server *s);
/* These jobs' final states are committed: their waiters get them from the
 * store (commit_hooks). */
void srv_jobs_finished(server *s, const uint64_t *ids, size_t n);
/* Every long poll answered now with no jobs (its results, if any); every job
 * waiter answered as a standby would (this server lost the jobs). */
void srv_end_lease_waiters(server *s);
void srv_end_job_waiters(server *s);
void srv_waiters_free(server *s);

#endif
