// SPDX-License-Identifier: Apache-2.0
/* Serving while loading (load_rest.h).
 *
 * The load before serving (store_load, on the leadership's thread) reads
 * the rows with live = 1: every job in flight, dead, keyed, unique, in a
 * batch, with parents or children, so that slots, lanes, dedup, merging,
 * dependencies and batches are exact from the first lease.  What it leaves
 * out are the plain jobs waiting in line (live = 2): no key, no unique key,
 * no batch, no edges, ready or scheduled.  Such a job touches no other job;
 * this file brings them into the serving engine, a page of PAGE rows at a
 * time on the store's reader thread, in fifo order, the next page asked
 * for before the last is put in.  A plain row changes only once its job is
 * in memory (nothing else acts on it), and a row whose job is in memory
 * already (made or taken in meanwhile) is passed over. */
#include "load_rest.h"

#include "api.h"
#include "clock.h"
#include "commit.h"
#include "server.h"
#include "tick.h"

#include "base/xalloc.h"

#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#define PAGE 5000

struct parked {
    server *s;
    http_req *req;
    parked *next, *prev;
};

static void unlink_parked(load_rest_state *l, parked *p)
{
    if (p->prev)
        p->prev->next = p->next;
    else
        l->parked = p->next;
    if (p->next)
        p->next->prev = p->prev;
    else
        l->last = p->prev;
}

static void parked_abort(http_req *req)
{
    parked *p = req->user;
    unlink_parked(&p->s->load_rest, p);
    free(p);
}

/* Runs the parked requests again, from the top (or answers them when the
 * leadership ended). */
static void release_parked(server *s)
{
    load_rest_state *l = &s->load_rest;
    parked *p = l->parked;
    l->parked = l->last = NULL;
    while (p) {
        parked *next = p->next;
        http_req *req = p->req;
        req->on_abort = NULL;
        req->user = NULL;
        free(p);
        l->again(s, req);
        p = next;
    }
}

static void ask_page(server *s);

static void on_page(void *ctx, int rc, const store_rows *rows)
{
    server *s = ctx;
    load_rest_state *l = &s->load_rest;
    if (!l->active || !s->lead.leading || s->lead.term != l->term) return; /* another engine now */
    if (rc != 0) {
        log_event(LOG_WARN, "load", "reading plain jobs failed (%s); trying again",
                  store_errmsg(s->st));
        ask_page(s);
        return;
    }
    bool last = rows->n < PAGE;
    if (!last) {
        const engine_job_info *r = &rows->jobs[rows->n - 1];
        l->after = store_rest_after(r);
        ask_page(s); /* read the next page while this one goes in */
    }
    int64_t now = srv_now(s);
    engine_loading(s->e, true);
    for (size_t i = 0; i < rows->n; i++) {
        const engine_job_info *in = &rows->jobs[i];
        if (engine_find(s->e, in->id)) continue;
        engine_err err;
        if (engine_load_job(s->e, now, in, &err) != 0) {
            log_event(LOG_ERROR, "load", "job %llu: %s", (unsigned long long)in->id, err.message);
            continue;
        }
        l->loaded++;
    }
    engine_loading(s->e, false);
    srv_collect(s); /* wakes the long polls of the queues that got jobs */
    srv_rearm_tick(s);
    if (!last) return;
    l->active = false;
    l->last_seconds = (double)(now - l->started_ms) / 1000.0;
    log_event(LOG_INFO, "load", "the jobs waiting in line are in: %llu more in %.2f s",
              (unsigned long long)l->loaded, l->last_seconds);
    release_parked(s);
}

static void ask_now(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    server *s = arg;
    /* args come along while at most half the args budget is taken; past
     * that they stay in the store and are read back ahead of need */
    engine_args_stats as;
    engine_args_usage(s->e, &as);
    bool with_args = !as.budget || as.inline_bytes < as.budget / 2;
    store_load_rest(s->st, s->load_rest.after, PAGE, with_args, on_page, s);
}

/* The next page; tests may space them (TENQ_TEST_LOAD_REST_DELAY_MS), to
 * act while a load goes on. */
static void ask_page(server *s)
{
    static int delay_ms = -1;
    if (delay_ms < 0) {
        const char *d = getenv("TENQ_TEST_LOAD_REST_DELAY_MS");
        delay_ms = d ? atoi(d) : 0;
    }
    if (!delay_ms) {
        ask_now(-1, 0, s);
        return;
    }
    struct timeval tv = {delay_ms / 1000, (delay_ms % 1000) * 1000};
    event_base_once(s->base, -1, EV_TIMEOUT, ask_now, s, &tv);
}

void srv_load_rest_start(server *s)
{
    load_rest_state *l = &s->load_rest;
    l->active = true;
    l->term = s->lead.term;
    l->after = STORE_REST_START;
    l->loaded = 0;
    l->started_ms = srv_now(s);
    ask_page(s);
}

/* Whether the request needs jobs a load may not have brought in. */
static bool needs_all_jobs(server *s, http_req *req, int needs, const char **args)
{
    if (needs & LOAD_ALL) return true; /* acts on every job a filter matches */
    if (needs & LOAD_JOB) {            /* a job not in memory may be one not in yet */
        uint64_t id = strtoull(args[0], NULL, 10);
        return !id || !engine_find(s->e, id);
    }
    if (needs & LOAD_DEPS)
        return req->body && memmem(req->body, req->body_len, "depends_on", 10) != NULL;
    return false;
}

bool srv_load_rest_park(server *s, http_req *req, int needs, const char **args)
{
    load_rest_state *l = &s->load_rest;
    if (!l->active || !needs || !needs_all_jobs(s, req, needs, args)) return false;
    parked *p = xcalloc(1, sizeof(*p));
    p->s = s;
    p->req = req;
    p->prev = l->last;
    if (l->last)
        l->last->next = p;
    else
        l->parked = p;
    l->last = p;
    req->user = p;
    req->on_abort = parked_abort;
    l->parked_total++;
    return true;
}

void srv_load_rest_stop(server *s)
{
    s->load_rest.active = false;
    release_parked(s); /* they find this server not leading, and are told so */
}
