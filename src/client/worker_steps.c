// SPDX-License-Identifier: Apache-2.0
/* Durable steps in a handler (tenq/worker.h): the job's steps read once,
 * when its lease says it has some, on a connection of the handler's slot;
 * each step stored before it is answered; a step that parks the job ends
 * the task's lease (nothing is reported, nothing heartbeats it).  Runs on
 * the handler's thread: the task's steps are its own. */
#include "internal.h"
#include "worker_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The handler's slot's client, made at its first step. */
static tenq_client *slot_client(tenq_task *t)
{
    tenq_worker *w = t->w;
    if (!w->slot_clients[t->slot]) w->slot_clients[t->slot] = wk_client(w, -1, 0);
    return w->slot_clients[t->slot];
}

static int fail_with(tenq_task *t, tenq_client *c, int rc)
{
    snprintf(t->err, sizeof t->err, "%s",
             c && *tenq_errmsg(c) ? tenq_errmsg(c) : tenq_err_message(rc));
    return rc;
}

/* The lease is gone (a stale token): the handler stops, its outcome is not
 * sent. */
static int lost(tenq_task *t, tenq_client *c, int rc)
{
    tenq_worker *w = t->w;
    pthread_mutex_lock(&w->mu);
    t->lost = true;
    wk_task_stop(t, TENQ_STOP_LOST);
    pthread_mutex_unlock(&w->mu);
    return fail_with(t, c, rc);
}

static void parked(tenq_task *t)
{
    pthread_mutex_lock(&t->w->mu);
    t->parked = true;
    pthread_mutex_unlock(&t->w->mu);
}

static bool stale(tenq_client *c, int rc)
{
    const char *f = tenq_errfield(c);
    return rc == TENQ_ECONFLICT && f && !strcmp(f, "token");
}

/* Reads the job's steps once (none to read when its lease said none). */
static int read_steps(tenq_task *t, tenq_client **cp)
{
    t->err[0] = 0;
    tenq_client *c = *cp = slot_client(t);
    if (!c) {
        snprintf(t->err, sizeof t->err, "cannot make a client");
        return TENQ_ENOMEM;
    }
    if (t->steps_read) return 0;
    if (t->job.steps) {
        tenq_step *v;
        size_t n;
        int rc = tenq_steps(c, t->job.id, &v, &n);
        if (rc) return fail_with(t, c, rc);
        t->steps = v;
        t->nsteps = t->capsteps = n;
    }
    t->steps_read = true;
    return 0;
}

static const tenq_step *find(const tenq_task *t, const char *name)
{
    for (size_t i = 0; i < t->nsteps; i++)
        if (t->steps[i].done && !strcmp(t->steps[i].name, name)) return &t->steps[i];
    return NULL;
}

/* Keeps a step this attempt stored (its strings copied); the kept one, or
 * NULL when out of memory. */
static const tenq_step *keep(tenq_task *t, const char *name, tenq_step_kind kind,
                             const char *result)
{
    if (t->nsteps == t->capsteps) {
        size_t cap = t->capsteps ? t->capsteps * 2 : 8;
        tenq_step *v = realloc(t->steps, cap * sizeof(*v));
        if (!v) return NULL;
        t->steps = v;
        t->capsteps = cap;
    }
    tenq_step *x = &t->steps[t->nsteps];
    memset(x, 0, sizeof(*x));
    x->name = strdup(name);
    x->result_json = strdup(result ? result : "null");
    if (!x->name || !x->result_json) {
        free(x->name);
        free(x->result_json);
        return NULL;
    }
    x->kind = kind;
    x->done = true;
    x->pos = (uint32_t)t->nsteps;
    t->nsteps++;
    return x;
}

int tenq_task_step_get(tenq_task *t, const char *name, const char **result_json)
{
    *result_json = NULL;
    tenq_client *c;
    int rc = read_steps(t, &c);
    if (rc) return rc;
    const tenq_step *x = name ? find(t, name) : NULL;
    if (!x) return TENQ_ENOT_FOUND;
    *result_json = x->result_json ? x->result_json : "null";
    return 0;
}

int tenq_task_step_put(tenq_task *t, const char *name, const char *result_json)
{
    tenq_client *c;
    int rc = read_steps(t, &c);
    if (rc) return rc;
    tenq_step_req r = {.name = name, .kind = TENQ_STEP_RUN, .result_json = result_json};
    tenq_step_res res;
    rc = tenq_step_store(c, t->job.id, t->job.token, &r, &res);
    if (rc) return stale(c, rc) ? lost(t, c, rc) : fail_with(t, c, rc);
    if (!find(t, name) && !keep(t, name, TENQ_STEP_RUN, result_json)) return TENQ_ENOMEM;
    return 0;
}

/* A step that may park the job: stored, or *parked.  A stale token after
 * a park whose answer was lost reads as parked too: either way the lease
 * is over and the handler returns. */
static int park_step(tenq_task *t, tenq_client *c, const tenq_step_req *r, tenq_step_res *res,
                     bool *was_parked)
{
    int rc = tenq_step_store(c, t->job.id, t->job.token, r, res);
    if (rc == 0 && res->parked) {
        parked(t);
        *was_parked = true;
        return 0;
    }
    if (rc && stale(c, rc)) {
        parked(t);
        *was_parked = true;
        return 0;
    }
    return rc ? fail_with(t, c, rc) : 0;
}

static int sleep_step(tenq_task *t, const char *name, int64_t duration_ms, int64_t until_ms,
                      bool *was_parked)
{
    *was_parked = false;
    tenq_client *c;
    int rc = read_steps(t, &c);
    if (rc) return rc;
    if (name && find(t, name)) return 0; /* slept already */
    tenq_step_req r = {
        .name = name, .kind = TENQ_STEP_SLEEP, .duration_ms = duration_ms, .until = until_ms};
    tenq_step_res res = {0};
    rc = park_step(t, c, &r, &res, was_parked);
    if (rc || *was_parked) return rc;
    return keep(t, name, TENQ_STEP_SLEEP, NULL) ? 0 : TENQ_ENOMEM; /* its time had passed */
}

int tenq_task_sleep(tenq_task *t, const char *name, int64_t duration_ms, bool *was_parked)
{
    return sleep_step(t, name, duration_ms > 0 ? duration_ms : 0, 0, was_parked);
}

int tenq_task_sleep_until(tenq_task *t, const char *name, int64_t until_ms, bool *was_parked)
{
    return sleep_step(t, name, 0, until_ms > 0 ? until_ms : 1, was_parked);
}

int tenq_task_wait_event(tenq_task *t, const char *name, const char *key, int64_t timeout_ms,
                         const char **payload_json, bool *was_parked)
{
    *payload_json = NULL;
    *was_parked = false;
    tenq_client *c;
    int rc = read_steps(t, &c);
    if (rc) return rc;
    const tenq_step *x = name ? find(t, name) : NULL;
    if (!x) {
        tenq_step_req r = {
            .name = name, .kind = TENQ_STEP_EVENT, .event = key, .timeout_ms = timeout_ms};
        tenq_step_res res = {0};
        rc = park_step(t, c, &r, &res, was_parked);
        if (rc || *was_parked) return rc;
        if (res.duplicate) {
            /* sent again, its first answer lost: the event it took is in
             * the job's steps (a duplicate's answer carries no result) */
            free(res.result_json);
            tenq_steps_free(t->steps, t->nsteps);
            t->steps = NULL;
            t->nsteps = t->capsteps = 0;
            t->steps_read = false;
            t->job.steps = 1;
            if ((rc = read_steps(t, &c))) return rc;
            if (!(x = find(t, name))) {
                snprintf(t->err, sizeof t->err, "event step %s was stored, and is not in the steps",
                         name);
                return TENQ_EPROTOCOL;
            }
        } else {
            /* a kept event, taken at once */
            x = keep(t, name, TENQ_STEP_EVENT, res.result_json);
            free(res.result_json);
            if (!x) return TENQ_ENOMEM;
        }
    }
    if (x->error) {
        snprintf(t->err, sizeof t->err, "waiting for event %s: %s", key ? key : "", x->error);
        return TENQ_ETIMEOUT;
    }
    *payload_json = x->result_json ? x->result_json : "null";
    return 0;
}

int tenq_task_run_child(tenq_task *t, const char *name, const tenq_submit_req *child,
                        const char **result_json, const char **error, bool *was_parked)
{
    *result_json = NULL;
    *error = NULL;
    *was_parked = false;
    tenq_client *c;
    int rc = read_steps(t, &c);
    if (rc) return rc;
    const tenq_step *x = name ? find(t, name) : NULL;
    if (!x) {
        tenq_step_req r = {.name = name, .kind = TENQ_STEP_CHILD, .child = child};
        tenq_step_res res = {0};
        return park_step(t, c, &r, &res, was_parked);
    }
    if (x->error)
        *error = x->error;
    else
        *result_json = x->result_json ? x->result_json : "null";
    return 0;
}

int tenq_task_steps(tenq_task *t, const tenq_step **steps, size_t *n)
{
    *steps = NULL;
    *n = 0;
    tenq_client *c;
    int rc = read_steps(t, &c);
    if (rc) return rc;
    *steps = t->steps;
    *n = t->nsteps;
    return 0;
}

const char *tenq_task_errmsg(const tenq_task *t)
{
    return t ? t->err : "";
}
