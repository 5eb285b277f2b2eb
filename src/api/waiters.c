// SPDX-License-Identifier: Apache-2.0
/* Requests that wait: lease long polls (woken when a queue gets work) and
 * job waits (answered when the job's final state is committed).  The
 * commit pipeline calls in through its hooks (commit_hooks, set by
 * server.c): a queue got work, jobs finished. */
#include "waiters.h"

#include "jbuf.h"
#include "job_json.h"
#include "job_reply.h"
#include "lease.h"
#include "reply.h"
#include "server.h"
#include "serving.h"

#include "base/hash.h"
#include "base/xalloc.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct jw_slot {
    uint64_t id;
    job_waiter *head;
} jw_slot;

static bool jw_eq(const void *item, const void *key)
{
    return ((const jw_slot *)item)->id == *(const uint64_t *)key;
}

static bool has_waiter(server *s, uint64_t id)
{
    return s->waiters.jobs.len && htab_find(&s->waiters.jobs, hash_u64(id), jw_eq, &id) != NULL;
}

/* ---- lease long polls ------------------------------------------------------------------ */

static void lease_waiter_free(server *s, lease_waiter *w)
{
    if (w->prev)
        w->prev->next = w->next;
    else
        s->waiters.lwait = w->next;
    if (w->next) w->next->prev = w->prev;
    s->waiters.n_lwait--;
    event_free(w->timer);
    for (size_t i = 0; i < w->nqueues; i++) free(w->queues[i]);
    for (size_t i = 0; i < w->ntypes; i++) free(w->types[i]);
    free(w->queues);
    free(w->types);
    free(w->worker);
    free(w->results);
    free(w);
}

/* Frees a waiter and answers its request: no jobs (with its results). */
static void lease_waiter_end(server *s, lease_waiter *w)
{
    http_req *req = w->req;
    req->on_abort = NULL;
    char *results = w->results;
    bool columns = w->columns;
    w->results = NULL;
    lease_waiter_free(s, w);
    reply_no_jobs(req, results, columns);
    free(results);
}

static void lease_waiter_abort(http_req *req)
{
    lease_waiter *w = req->user;
    lease_waiter_free(w->srv, w);
}

static void on_lease_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    lease_waiter *w = arg;
    lease_waiter_end(w->srv, w);
}

void srv_lease_waiter_add(server *s, lease_waiter *w, int64_t wait_ms)
{
    w->srv = s;
    w->timer = evtimer_new(s->base, on_lease_timeout, w);
    if (!w->timer) xalloc_die(); /* libevent fails only when memory runs out */
    struct timeval tv = {(time_t)(wait_ms / 1000), (suseconds_t)((wait_ms % 1000) * 1000)};
    evtimer_add(w->timer, &tv);
    /* oldest first: append */
    w->next = NULL;
    w->prev = NULL;
    if (!s->waiters.lwait) {
        s->waiters.lwait = w;
    } else {
        lease_waiter *t = s->waiters.lwait;
        while (t->next) t = t->next;
        t->next = w;
        w->prev = t;
    }
    s->waiters.n_lwait++;
    w->req->user = w;
    w->req->on_abort = lease_waiter_abort;
    w->req->long_poll = true;
}

/* One pass over the waiters of a queue, oldest first. */
static void wake_queue(server *s, const char *queue)
{
    for (lease_waiter *w = s->waiters.lwait, *nx; w; w = nx) {
        nx = w->next;
        bool wants = false;
        for (size_t i = 0; i < w->nqueues && !wants; i++) wants = !strcmp(w->queues[i], queue);
        if (!wants) continue;
        http_req *req = w->req;
        req->on_abort = NULL;
        req->write_now = true; /* a worker waits on this: see send_reply */
        if (srv_try_lease(s, req, &w->who, w->queues, w->nqueues, w->types, w->ntypes, w->max,
                          w->worker, w->results, w->columns)) {
            /* the reply now waits for the commit; the waiter is done */
            nx = w->next;
            lease_waiter_free(s, w);
            continue;
        }
        req->write_now = false;
        req->user = w;
        req->on_abort = lease_waiter_abort;
        if (!w->ntypes) break; /* nothing eligible for this queue any more */
    }
}

void srv_wake_leases(server *s, const char *queue)
{
    if (!srv_serving(s)) return;
    if (s->waiters.waking) {
        /* from inside a pass (a lease's reply collected the engine's
         * changes): a nested pass would free waiters the outer one is
         * about to visit, so it waits for the outer pass to end */
        for (size_t i = 0; i < s->waiters.n_wake_later; i++)
            if (!strcmp(s->waiters.wake_later[i], queue)) return;
        s->waiters.wake_later =
            xrealloc(s->waiters.wake_later, (s->waiters.n_wake_later + 1) * sizeof(char *));
        s->waiters.wake_later[s->waiters.n_wake_later++] = xstrdup(queue);
        return;
    }
    s->waiters.waking = true;
    wake_queue(s, queue);
    while (s->waiters.n_wake_later > 0) {
        char *q = s->waiters.wake_later[--s->waiters.n_wake_later];
        if (!s->lead.resyncing) wake_queue(s, q);
        free(q);
    }
    free(s->waiters.wake_later);
    s->waiters.wake_later = NULL;
    s->waiters.waking = false;
}

void srv_wake_every_lease(server *s)
{
    for (lease_waiter *w = s->waiters.lwait; w; w = w->next)
        for (size_t i = 0; i < w->nqueues; i++) srv_wake_leases(s, w->queues[i]);
}

void srv_end_lease_waiters(server *s)
{
    while (s->waiters.lwait) lease_waiter_end(s, s->waiters.lwait);
}

/* ---- job waits -------------------------------------------------------------------------- */

static void jw_unlink(job_waiter *w)
{
    htab *index = &w->srv->waiters.jobs;
    uint64_t h = hash_u64(w->id);
    jw_slot *slot = htab_find(index, h, jw_eq, &w->id);
    if (!slot) return;
    if (w->prev)
        w->prev->next = w->next;
    else
        slot->head = w->next;
    if (w->next) w->next->prev = w->prev;
    if (!slot->head) {
        htab_remove(index, h, slot);
        free(slot);
    }
}

static void jw_free(job_waiter *w)
{
    jw_unlink(w);
    event_free(w->timer);
    free(w);
}

static void jw_abort(http_req *req)
{
    jw_free(req->user);
}

static void on_wait_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    job_waiter *w = arg;
    http_req *req = w->req;
    server *s = w->srv;
    principal who = w->who;
    uint64_t id = w->id;
    req->on_abort = NULL;
    jw_free(w);
    /* the job as it stands now, from memory or the store */
    srv_reply_job(s, req, &who, id);
}

void srv_job_waiter_add(server *s, job_waiter *w, int64_t wait_ms)
{
    w->srv = s;
    w->timer = evtimer_new(s->base, on_wait_timeout, w);
    if (!w->timer) xalloc_die();
    struct timeval tv = {(time_t)(wait_ms / 1000), (suseconds_t)((wait_ms % 1000) * 1000)};
    evtimer_add(w->timer, &tv);
    uint64_t h = hash_u64(w->id);
    jw_slot *slot = htab_find(&s->waiters.jobs, h, jw_eq, &w->id);
    if (!slot) {
        slot = xcalloc(1, sizeof(*slot));
        slot->id = w->id;
        htab_insert(&s->waiters.jobs, h, slot);
    }
    w->prev = NULL;
    w->next = slot->head;
    if (slot->head) slot->head->prev = w;
    slot->head = w;
    w->req->user = w;
    w->req->on_abort = jw_abort;
    w->req->long_poll = true;
}

/* A finished job whose waiters are answered from the store. */
typedef struct final_read {
    server *s;
    uint64_t id;
} final_read;

/* The job's final state is committed: every waiter gets it from the store. */
static void on_final_rows(void *ctx, int rc, const store_rows *rows)
{
    final_read *c = ctx;
    server *s = c->s;
    uint64_t id = c->id;
    free(c);
    char *bodies[4] = {NULL}; /* by api_job_view: with the lease token, without the data */
    size_t lens[4] = {0};
    for (unsigned t = 0; t < 4 && rc == 0 && rows->n == 1; t++) {
        jbuf b;
        jb_init(&b);
        api_json_job(&b, &rows->jobs[0], t, NULL, 0);
        bodies[t] = jb_take(&b, &lens[t]);
    }
    jw_slot *slot;
    while ((slot = htab_find(&s->waiters.jobs, hash_u64(id), jw_eq, &id)) && slot->head) {
        job_waiter *w = slot->head;
        http_req *req = w->req;
        bool visible = rc == 0 && rows->n == 1 &&
                       auth_may_see_job(&w->who, rows->jobs[0].tenant, rows->jobs[0].queue);
        unsigned t = api_job_view(&w->who);
        req->on_abort = NULL;
        jw_free(w);
        if (visible)
            http_reply(req, 200, "application/json", NULL, bodies[t], lens[t]);
        else
            reply_error(req, rc ? rc : TENQ_ENOT_FOUND, "id", "no job %llu",
                        (unsigned long long)id);
    }
    for (int t = 0; t < 4; t++) free(bodies[t]);
}

void srv_jobs_finished(server *s, const uint64_t *ids, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!has_waiter(s, ids[i])) continue;
        final_read *c = xcalloc(1, sizeof(*c));
        c->s = s;
        c->id = ids[i];
        store_get_job(s->st, ids[i], on_final_rows, c);
    }
}

/* Answers every job waiter: this server no longer has the jobs. */
void srv_end_job_waiters(server *s)
{
    job_waiter **all = NULL;
    size_t n = 0;
    for (size_t i = 0; i < htab_cap(&s->waiters.jobs); i++) {
        jw_slot *slot = s->waiters.jobs.slots[i].item;
        for (job_waiter *w = slot ? slot->head : NULL; w; w = w->next) {
            all = xrealloc(all, (n + 1) * sizeof(*all));
            all[n++] = w;
        }
    }
    for (size_t i = 0; i < n; i++) {
        http_req *req = all[i]->req;
        req->on_abort = NULL;
        jw_free(all[i]);
        srv_not_leader(s, req);
    }
    free(all);
}

void srv_waiters_free(server *s)
{
    while (s->waiters.lwait) lease_waiter_free(s, s->waiters.lwait);
    for (size_t i = 0; i < htab_cap(&s->waiters.jobs); i++) free(s->waiters.jobs.slots[i].item);
    htab_free(&s->waiters.jobs);
}
