// SPDX-License-Identifier: Apache-2.0
/* The worker's leaser thread (tasks from leases) and runner threads
 * (handlers). */
#include "internal.h"
#include "base/clock.h"
#include "worker_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- the leaser ----------------------------------------------------------------------------- */

/* Capacity not taken by queued or running tasks.  (mu) */
static unsigned free_slots(const tenq_worker *w)
{
    size_t used = w->ready.n + w->nrunning;
    return used >= w->concurrency ? 0 : (unsigned)(w->concurrency - used);
}

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
    if (!c) {
        pthread_mutex_lock(&w->mu);
        w->fatal = TENQ_ENOMEM;
        pthread_mutex_unlock(&w->mu);
        tenq_worker_stop(w);
        goto out;
    }
    /* Without a catch-all, leases ask for the registered types only. */
    if (!w->any) {
        types = calloc(w->nhandlers, sizeof(char *));
        if (!types) {
            pthread_mutex_lock(&w->mu);
            w->fatal = TENQ_ENOMEM;
            pthread_mutex_unlock(&w->mu);
            tenq_worker_stop(w);
            goto out;
        }
        for (size_t i = 0; i < w->nhandlers; i++) types[ntypes++] = w->handlers[i].type;
    }
    pthread_mutex_lock(&w->mu);
    for (;;) {
        w->lease_want = 1;
        while (!w->stopping && free_slots(w) == 0) pthread_cond_wait(&w->cv_lease, &w->mu);
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
        while (!w->stopping && free_slots(w) < w->concurrency && w->nrunning)
            if (pthread_cond_timedwait(&w->cv_lease, &w->mu, &gather) != 0) break;
        w->lease_want = 0;
        if (w->stopping) break;
        unsigned max = free_slots(w);
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

/* ---- runners -------------------------------------------------------------------------------- */

static const wk_handler *handler_for(const tenq_worker *w, const char *type)
{
    for (size_t i = 0; i < w->nhandlers; i++)
        if (w->handlers[i].type && type && !strcmp(w->handlers[i].type, type))
            return &w->handlers[i];
    return w->any;
}

/* Makes the result safe to send: a result that is not JSON and an error
 * that is not UTF-8 would make the server refuse the whole batch.  (Stats
 * were checked when the handler set them: tenq_task_stats.) */
static void check_result(tenq_task *t)
{
    tenq_result *r = &t->res;
    if (r->parked && !t->parked) { /* tenq_result_parked() without a step that parked */
        *r = tenq_result_fail("the handler returned tenq_result_parked() but no step parked "
                              "the job",
                              TENQ_RETRY_BACKOFF);
    }
    if (r->ok && r->result_json) {
        if (!tq_scan_valid(r->result_json, strlen(r->result_json))) {
            free(r->result_json);
            *r = tenq_result_fail("invalid result JSON: the handler's result is not one JSON value",
                                  TENQ_RETRY_BACKOFF);
        }
    }
    if (!r->ok && r->error) {
        char *fixed = tq_utf8_fix(r->error, strlen(r->error));
        if (fixed) {
            free(r->error);
            r->error = fixed;
        }
    }
}

void *wk_runner_main(void *arg)
{
    wk_runner_arg *a = arg;
    tenq_worker *w = a->w;
    int fd = w->slot_fds[a->slot];
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->ready.head && !(w->stopping && w->leaser_done))
            pthread_cond_wait(&w->cv_run, &w->mu);
        tenq_task *t = wk_queue_pop(&w->ready);
        if (!t) break;
        t->state = TK_RUNNING;
        t->slot = a->slot;
        t->began_ms = tq_mono_ms();
        w->nrunning++;
        /* the reporter tells the server it began, if it runs long enough */
        if (w->report_wake > t->began_ms + WK_START_AFTER_MS) pthread_cond_signal(&w->cv_report);
        if (w->past_grace) wk_task_stop(t, TENQ_STOP_SHUTDOWN);
        pthread_mutex_unlock(&w->mu);

        /* a stop meant for the slot's previous task must not reach this one */
        uint64_t v;
        while (read(fd, &v, sizeof v) > 0) continue;
        if (atomic_load(&t->stop) != TENQ_STOP_NONE) {
            v = 1;
            if (write(fd, &v, sizeof v) < 0) (void)0;
        }
        const wk_handler *h = handler_for(w, t->job.type);
        if (h) {
            t->res = h->fn(t, h->ctx);
        } else {
            char msg[200];
            snprintf(msg, sizeof msg, "no handler for type %.150s", t->job.type);
            t->res = tenq_result_fail(msg, TENQ_RETRY_BACKOFF);
        }
        check_result(t);

        pthread_mutex_lock(&w->mu);
        t->state = TK_DONE;
        t->ended_ms = tq_mono_ms();
        w->nrunning--;
        wk_queue_push(&w->done, t);
        if (w->report_wake) pthread_cond_signal(&w->cv_report);
        /* wake the leaser only when it has what it waits for: a wake-up
         * costs more than the check */
        if (w->lease_want && free_slots(w) >= w->lease_want) pthread_cond_signal(&w->cv_lease);
    }
    w->runners_alive--;
    pthread_cond_signal(&w->cv_report);
    pthread_mutex_unlock(&w->mu);
    return NULL;
}
