// SPDX-License-Identifier: Apache-2.0
/* The worker's reporter thread: outcomes in batches, heartbeats (with
 * progress and cancellation), starts.  It alone frees tasks, so a task it
 * is talking about cannot vanish while the lock is down. */
#include "internal.h"
#include "base/clock.h"
#include "worker_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A batch stops growing at this many bytes of results and errors: the
 * server refuses bodies over 32 MiB. */
#define BATCH_BYTES (16u << 20)

typedef struct reporter {
    tenq_worker *w;
    tenq_client *c;
    int64_t backoff, next_try; /* for outcomes while the server is away */
    bool away;
    bool gave_up; /* past the grace period with the server away */
    tenq_task **batch;
    tenq_outcome *outs;
    tenq_outcome_res *res;
    size_t cap;
} reporter;

/* Takes a task out of the list in hand and frees it.  (mu) */
static void drop_task(tenq_worker *w, tenq_task *t)
{
    if (t->prev)
        t->prev->next = t->next;
    else
        w->hand = t->next;
    if (t->next) t->next->prev = t->prev;
    wk_task_free(t);
}

/* Puts tasks back at the front of the done queue, in their order.  (mu) */
static void requeue_front(tenq_worker *w, tenq_task **v, size_t n)
{
    for (size_t i = n; i-- > 0;) {
        v[i]->qnext = w->done.head;
        w->done.head = v[i];
        if (!w->done.tail) w->done.tail = v[i];
        w->done.n++;
    }
}

static bool grow(reporter *r, size_t n)
{
    if (n <= r->cap) return true;
    size_t cap = r->cap ? r->cap : 64;
    while (cap < n) cap *= 2;
    tenq_task **b = realloc(r->batch, cap * sizeof(*b));
    if (!b) return false;
    r->batch = b;
    tenq_outcome *o = realloc(r->outs, cap * sizeof(*o));
    if (!o) return false;
    r->outs = o;
    tenq_outcome_res *s = realloc(r->res, cap * sizeof(*s));
    if (!s) return false;
    r->res = s;
    r->cap = cap;
    return true;
}

/* The outcome of a finished task, pointing into it. */
static void outcome_of(const tenq_task *t, tenq_outcome *o)
{
    memset(o, 0, sizeof(*o));
    o->id = t->job.id;
    o->token = t->job.token;
    o->ok = t->res.ok;
    o->result_json = t->res.result_json;
    o->stats_json = t->stats;
    if (!t->res.ok) {
        o->fail.error = t->res.error;
        o->fail.has_retry_in = t->res.retry_in_ms >= 0;
        o->fail.retry_in_ms = t->res.retry_in_ms;
        o->fail.no_retry = t->res.no_retry;
        /* the handler stopped because the job was cancelled */
        o->fail.cancelled = t->cancel_seen || atomic_load(&t->stop) == TENQ_STOP_CANCELLED;
    }
}

/* Errors of a whole request that retrying may cure. */
static bool transient(tenq_client *c)
{
    int st = tenq_errstatus(c);
    return st == 0 || st == 408 || st == 429 || st >= 500;
}

/* Sends the waiting outcomes (as many as one request takes).  Called and
 * returns with mu held. */
static void send_outcomes(reporter *r)
{
    tenq_worker *w = r->w;
    size_t n = 0, bytes = 0;
    while (w->done.head && n < TENQ_BATCH_MAX && bytes < BATCH_BYTES) {
        if (!grow(r, n + 1)) break;
        tenq_task *t = wk_queue_pop(&w->done);
        if (t->lost || t->parked) {
            /* another worker has the job now; our outcome would be refused
             * (parked: its lease ended when a step parked it) */
            drop_task(w, t);
            continue;
        }
        bytes += 128 + (t->res.result_json ? strlen(t->res.result_json) : 0) +
                 (t->res.error ? strlen(t->res.error) : 0) + (t->stats ? strlen(t->stats) : 0);
        r->batch[n++] = t;
    }
    if (!n) return;
    for (size_t i = 0; i < n; i++) outcome_of(r->batch[i], &r->outs[i]);
    pthread_mutex_unlock(&w->mu);
    int rc = r->c ? tenq_outcomes(r->c, r->outs, n, r->res) : TENQ_ENOMEM;
    pthread_mutex_lock(&w->mu);
    if (rc != 0 && r->c && transient(r->c)) {
        requeue_front(w, r->batch, n);
        if (w->abandon) return;
        r->backoff = r->backoff ? r->backoff * 2 : 100;
        if (r->backoff > WK_BACKOFF_MAX_MS) r->backoff = WK_BACKOFF_MAX_MS;
        r->next_try = tq_mono_ms() + r->backoff;
        if (!r->away)
            wk_log(w, TENQ_LOG_WARN, "cannot report %zu outcome(s) (%s): keeping them, retrying",
                   w->done.n, tenq_errmsg(r->c));
        r->away = true;
        if (w->past_grace) {
            r->gave_up = true;
            wk_log(w, TENQ_LOG_ERROR,
                   "grace period over: %zu outcome(s) not reported; the server retries those "
                   "jobs when their leases expire",
                   w->done.n);
        }
        return;
    }
    if (r->away) wk_log(w, TENQ_LOG_INFO, "the server is back: outcomes reported");
    r->away = false;
    r->backoff = 0;
    r->next_try = 0;
    if (rc != 0) {
        /* refused as a whole, and retrying would not change that */
        wk_log(w, TENQ_LOG_ERROR, "%zu outcome(s) refused: %s", n,
               r->c ? tenq_errmsg(r->c) : "out of memory");
        for (size_t i = 0; i < n; i++) {
            w->counts.refused++;
            drop_task(w, r->batch[i]);
        }
        return;
    }
    for (size_t i = 0; i < n; i++) {
        tenq_task *t = r->batch[i];
        tenq_outcome_res *s = &r->res[i];
        if (s->err == TENQ_ETOO_LARGE && t->res.ok && t->res.result_json) {
            /* the work is done: say so without the result the server cannot keep */
            wk_log(w, TENQ_LOG_WARN, "job %llu: result refused (%s); acking without it",
                   (unsigned long long)t->job.id, s->message);
            free(t->res.result_json);
            t->res.result_json = NULL;
            free(t->stats);
            t->stats = strdup("{\"result_refused\":\"too large\"}");
            wk_queue_push(&w->done, t);
            continue;
        }
        if (s->err) {
            w->counts.refused++;
            wk_log(w, TENQ_LOG_WARN, "job %llu: outcome refused: %s", (unsigned long long)t->job.id,
                   s->message);
        } else if (t->res.ok) {
            w->counts.succeeded++;
            wk_log(w, TENQ_LOG_DEBUG, "job %llu: succeeded", (unsigned long long)t->job.id);
        } else {
            w->counts.failed++;
            wk_log(w, TENQ_LOG_DEBUG, "job %llu: %s: %s", (unsigned long long)t->job.id,
                   tenq_state_name(s->state), t->res.error ? t->res.error : "failed");
        }
        drop_task(w, t);
    }
}

/* The lease of t is gone (a 404 or a 409 from the server).  (mu) */
static void lease_lost(tenq_worker *w, tenq_task *t, const char *why)
{
    if (t->lost) return;
    t->lost = true;
    w->counts.lost++;
    wk_log(w, TENQ_LOG_WARN, "job %llu: lease lost (%s); stopping its handler",
           (unsigned long long)t->job.id, why);
    wk_task_stop(t, TENQ_STOP_LOST);
}

static bool gone(tenq_client *c, int rc)
{
    return tenq_errstatus(c) != 0 && (rc == TENQ_ECONFLICT || rc == TENQ_ENOT_FOUND);
}

/* Sends t's heartbeat (with its progress when new).  mu held. */
static void heartbeat(reporter *r, tenq_task *t)
{
    tenq_worker *w = r->w;
    uint64_t id = t->job.id, token = t->job.token;
    char *progress = NULL;
    if (t->progress_dirty && t->progress) progress = strdup(t->progress);
    bool sent_progress = progress != NULL;
    if (sent_progress) t->progress_dirty = false;
    int64_t now = tq_mono_ms();
    t->progress_sent_ms = now;
    /* until the answer: not again at once, whatever happens */
    t->next_hb_ms = now + 1000;
    pthread_mutex_unlock(&w->mu);
    int64_t until = 0, left = 0;
    bool cancel = false;
    int rc =
        r->c ? tenq_heartbeat_left(r->c, id, token, progress, &until, &left, &cancel) : TENQ_ENOMEM;
    pthread_mutex_lock(&w->mu);
    free(progress);
    now = tq_mono_ms();
    if (rc == 0) {
        t->next_hb_ms = now + wk_heartbeat_every(left, until);
        if (cancel && !t->cancel_seen) {
            t->cancel_seen = true;
            wk_log(w, TENQ_LOG_INFO, "job %llu: cancelled; stopping its handler",
                   (unsigned long long)id);
            wk_task_stop(t, TENQ_STOP_CANCELLED);
        }
        return;
    }
    if (sent_progress && !t->progress_dirty) t->progress_dirty = true;
    if (r->c && gone(r->c, rc)) {
        lease_lost(w, t, tenq_errmsg(r->c));
        return;
    }
    wk_log(w, TENQ_LOG_DEBUG, "job %llu: heartbeat failed: %s", (unsigned long long)id,
           r->c ? tenq_errmsg(r->c) : "out of memory");
}

/* Tells the server that t's handler began.  mu held. */
static void start(reporter *r, tenq_task *t)
{
    tenq_worker *w = r->w;
    uint64_t id = t->job.id, token = t->job.token;
    t->start_sent = true; /* best effort: once */
    pthread_mutex_unlock(&w->mu);
    int rc = r->c ? tenq_start(r->c, id, token) : TENQ_ENOMEM;
    pthread_mutex_lock(&w->mu);
    if (rc != 0 && r->c && gone(r->c, rc)) lease_lost(w, t, tenq_errmsg(r->c));
}

/* What to do next: the task and the action (0 none, 1 heartbeat, 2 start),
 * or when to look again (*wake, monotonic).  (mu) */
static tenq_task *next_due(tenq_worker *w, int64_t now, int *action, int64_t *wake)
{
    *action = 0;
    *wake = now + 60000;
    for (tenq_task *t = w->hand; t; t = t->next) {
        if (t->lost || t->parked) continue;
        int64_t hb = t->next_hb_ms;
        if (t->progress_dirty && t->progress_sent_ms + WK_PROGRESS_EVERY_MS < hb)
            hb = t->progress_sent_ms + WK_PROGRESS_EVERY_MS;
        if (hb <= now) {
            *action = 1;
            return t;
        }
        if (hb < *wake) *wake = hb;
        if (t->state == TK_RUNNING && !t->start_sent) {
            int64_t at = t->began_ms + WK_START_AFTER_MS;
            if (at <= now) {
                *action = 2;
                return t;
            }
            if (at < *wake) *wake = at;
        }
    }
    return NULL;
}

/* Whether the reporter's work is over.  (mu) */
static bool finished(const reporter *r)
{
    const tenq_worker *w = r->w;
    if (w->abandon) return true;
    if (!w->stopping || !w->leaser_done || w->runners_alive) return false;
    return !w->done.head || r->gave_up;
}

void *wk_reporter_main(void *arg)
{
    reporter r = {0};
    r.w = arg;
    tenq_worker *w = r.w;
    r.c = wk_client(w, w->abandon_pipe[0], 0);
    pthread_mutex_lock(&w->mu);
    if (!r.c && !w->fatal) {
        w->fatal = TENQ_ENOMEM;
        pthread_mutex_unlock(&w->mu);
        tenq_worker_stop(w);
        pthread_mutex_lock(&w->mu);
    }
    for (;;) {
        if (w->abandon) break;
        int64_t now = tq_mono_ms();
        if (w->done.head && now >= r.next_try && !r.gave_up) {
            send_outcomes(&r);
            continue;
        }
        if (finished(&r)) break;
        int action;
        int64_t wake;
        tenq_task *t = next_due(w, now, &action, &wake);
        if (action == 1) {
            heartbeat(&r, t);
            continue;
        }
        if (action == 2) {
            start(&r, t);
            continue;
        }
        if (w->done.head && !r.gave_up && r.next_try < wake) wake = r.next_try;
        w->report_wake = wake;
        wk_cond_wait_until(&w->cv_report, &w->mu, wake);
        w->report_wake = 0;
    }
    w->reporter_done = true;
    pthread_mutex_unlock(&w->mu);
    /* the control thread waits for this */
    char b = 'r';
    if (write(w->ctl_pipe[1], &b, 1) < 0) (void)0;
    tenq_client_free(r.c);
    free(r.batch);
    free(r.outs);
    free(r.res);
    return NULL;
}
