// SPDX-License-Identifier: Apache-2.0
/* The worker's leaser thread: tasks from leases, queued for the runners
 * (worker_run.c). */
#include "internal.h"
#include "base/clock.h"
#include "worker_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Errors that retrying cannot cure: the worker stops with them. */
static bool lease_fatal(int rc)
{
    return rc == TENQ_EUNAUTHENTICATED || rc == TENQ_EFORBIDDEN || rc == TENQ_EINVALID ||
           rc == TENQ_ENOT_FOUND;
}

/* Tasks from the leased jobs (taken over: jobs[i] is emptied), queued and
 * put in hand.  (mu) */
static void take_jobs(tenq_worker *w, tenq_job *jobs, size_t n)
{
    int64_t now = tq_mono_ms();
    for (size_t i = 0; i < n; i++) {
        tenq_task *t = calloc(1, sizeof(*t));
        if (!t) {
            /* the lease comes back to the queue when it expires */
            wk_log(w, TENQ_LOG_ERROR, "out of memory: job %llu left to its lease's expiry",
                   (unsigned long long)jobs[i].id);
            tq_job_clear(&jobs[i]);
            continue;
        }
        t->job = jobs[i];
        memset(&jobs[i], 0, sizeof jobs[i]);
        t->w = w;
        t->state = TK_QUEUED;
        t->got_ms = now;
        atomic_init(&t->stop, TENQ_STOP_NONE);
        /* a third of the lease passes before the first heartbeat */
        t->next_hb_ms = now + wk_heartbeat_every(t->job.lease_left_ms, t->job.lease_until);
        t->next = w->hand;
        if (w->hand) w->hand->prev = t;
        w->hand = t;
        wk_queue_push(&w->ready, t);
        w->counts.leased++;
    }
}

void *wk_leaser_main(void *arg)
{
    tenq_worker *w = arg;
    tenq_client *c = wk_client(w, w->stop_pipe[0], WK_LEASE_ABORT_AFTER_MS);
    const char **types = NULL;
    size_t ntypes = 0;
    int64_t backoff = 0;
    bool away = false;
    /* Without a catch-all, leases ask for the registered types only. */
    if (c && !w->any && (types = calloc(w->nhandlers, sizeof(char *))))
        for (size_t i = 0; i < w->nhandlers; i++) types[ntypes++] = w->handlers[i].type;
    if (!c || (!w->any && !types)) {
        pthread_mutex_lock(&w->mu);
        w->fatal = TENQ_ENOMEM;
        pthread_mutex_unlock(&w->mu);
        tenq_worker_stop(w);
        goto out;
    }
    pthread_mutex_lock(&w->mu);
    for (;;) {
        w->lease_want = 1;
        while (!w->stopping && wk_free_slots(w) == 0) pthread_cond_wait(&w->cv_lease, &w->mu);
        /* Slots free one by one as handlers return; a moment's wait for
         * the others makes one lease of several jobs out of several
         * leases of one (short jobs), and costs long jobs nothing. */
        struct timespec gather;
        clock_gettime(CLOCK_MONOTONIC, &gather);
        gather.tv_nsec += WK_LEASE_GATHER_MS * 1000000L;
        if (gather.tv_nsec >= 1000000000L) {
            gather.tv_sec++;
            gather.tv_nsec -= 1000000000L;
        }
        w->lease_want = w->concurrency;
        while (!w->stopping && wk_free_slots(w) < w->concurrency && w->nrunning)
            if (pthread_cond_timedwait(&w->cv_lease, &w->mu, &gather) != 0) break;
        w->lease_want = 0;
        if (w->stopping) break;
        unsigned max = wk_free_slots(w);
        if (max > 1000) max = 1000;
        pthread_mutex_unlock(&w->mu);
        tenq_lease_req req = {.worker = w->name,
                              .queues = (const char *const *)w->queues,
                              .nqueues = w->nqueues,
                              .types = types,
                              .ntypes = ntypes,
                              .max = max,
                              .wait_ms = w->poll_ms};
        tenq_job *jobs = NULL;
        size_t n = 0;
        int rc = tenq_lease(c, &req, &jobs, &n);
        pthread_mutex_lock(&w->mu);
        if (rc == 0) {
            if (away) wk_log(w, TENQ_LOG_INFO, "the server is back");
            away = false;
            backoff = 0;
            if (n) {
                take_jobs(w, jobs, n);
                pthread_cond_broadcast(&w->cv_run);
                /* new leases to heartbeat: the reporter plans again */
                if (w->report_wake) pthread_cond_signal(&w->cv_report);
            }
            free(jobs); /* its jobs were taken over */
            continue;
        }
        /* a stop interrupts the request before the control thread says so */
        if (w->stopping || atomic_load(&w->stops)) break;
        if (rc == TENQ_ETLS ||
            (lease_fatal(rc) && (tenq_errstatus(c) != 0 || rc == TENQ_EINVALID))) {
            /* a certificate that does not verify, or that the server
             * refuses, is configuration: retrying would not cure it */
            snprintf(w->err, sizeof w->err, "%s%s",
                     rc == TENQ_ETLS ? "" : "the server refuses leases: ", tenq_errmsg(c));
            wk_log(w, TENQ_LOG_ERROR, "%s", w->err);
            w->fatal = rc;
            pthread_mutex_unlock(&w->mu);
            tenq_worker_stop(w);
            pthread_mutex_lock(&w->mu);
            break;
        }
        /* away, overloaded, or a broken answer: retry, backing off */
        backoff = backoff ? backoff * 2 : 100;
        if (backoff > WK_BACKOFF_MAX_MS) backoff = WK_BACKOFF_MAX_MS;
        if (!away)
            wk_log(w, TENQ_LOG_WARN, "cannot lease (%s): retrying with backoff", tenq_errmsg(c));
        away = true;
        int64_t until = tq_mono_ms() + backoff;
        while (!w->stopping && tq_mono_ms() < until)
            wk_cond_wait_until(&w->cv_lease, &w->mu, until);
    }
    pthread_mutex_unlock(&w->mu);
out:
    free(types);
    tenq_client_free(c);
    pthread_mutex_lock(&w->mu);
    w->leaser_done = true;
    pthread_cond_broadcast(&w->cv_run);
    pthread_cond_signal(&w->cv_report);
    pthread_mutex_unlock(&w->mu);
    return NULL;
}
