// SPDX-License-Identifier: Apache-2.0
/* The calls a worker makes: lease, start, heartbeat, ack, fail, and batched
 * outcomes (the worker that makes them for you is worker*.c). */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct leased {
    tenq_job *got;
    size_t m, cap;
    bool oom;
} leased;

/* A leased job of the answer into l->got (tq_walk_list's each). */
static int lease_one(tq_iter *at, size_t k, void *ctx)
{
    leased *l = ctx;
    (void)k;
    if (!l->got || l->m == l->cap) {
        size_t cap = l->got ? l->cap * 2 : l->cap;
        tenq_job *g = realloc(l->got, cap * sizeof(tenq_job));
        if (!g) {
            l->oom = true;
            return -1;
        }
        l->got = g;
        l->cap = cap;
    }
    if (tq_job_read(at, &l->got[l->m]) != 0) return -1;
    l->got[l->m++].state = TENQ_STATE_LEASED;
    return 0;
}

/* A lease request's fields into b, the object left open. */
static int lease_text(tenq_client *c, const tenq_lease_req *req, tq_buf *b)
{
    if (!req || !req->queues || req->nqueues == 0)
        return tq_seterr(c, TENQ_EINVALID, "a lease names at least one queue");
    int rc;
    char head[64];
    tq_buf_raw(b, head,
               (size_t)snprintf(head, sizeof head, "{\"max\":%u", req->max ? req->max : 1));
    tq_buf_int(b, "wait_ms", req->wait_ms > 0 ? req->wait_ms : 0);
    if ((rc = tq_buf_str(c, b, "worker", req->worker, false)) ||
        (rc = tq_buf_names(c, b, "queues", req->queues, req->nqueues)) ||
        (req->types && req->ntypes && (rc = tq_buf_names(c, b, "types", req->types, req->ntypes))))
        return rc;
    return 0;
}

/* The jobs of a lease's answer (top: the answer's object). */
static int lease_answer(tenq_client *c, tq_iter *top, const tenq_lease_req *req, tenq_job **jobs,
                        size_t *n)
{
    leased l = {.cap = req->max ? req->max : 1};
    size_t count;
    if (tq_walk_list(top, "jobs", lease_one, &l, &count) != 0 || l.oom) {
        /* the jobs are leased already; they come back when their leases
         * expire, which is all a client could do about a bad answer */
        tenq_jobs_free(l.got, l.m);
        return l.oom ? tq_seterr(c, TENQ_ENOMEM, "out of memory")
                     : tq_seterr(c, TENQ_EPROTOCOL, "the lease answer is not a list of jobs");
    }
    *jobs = l.got;
    *n = l.m;
    return 0;
}

int tenq_lease(tenq_client *c, const tenq_lease_req *req, tenq_job **jobs, size_t *n)
{
    *jobs = NULL;
    *n = 0;
    tq_clearerr(c);
    tq_buf b = {0};
    tq_iter top;
    int rc = lease_text(c, req, &b);
    if (rc != 0) {
        free(b.p);
        return rc;
    }
    tq_buf_raw(&b, "}", 1);
    if ((rc = tq_post_walk(c, "/v1/lease", &b, req->wait_ms > 0 ? req->wait_ms : 0, &top)) != 0)
        return rc;
    return lease_answer(c, &top, req, jobs, n);
}

/* {"token":N as the start of a job call's body. */
static void token_open(tq_buf *b, uint64_t token)
{
    char head[48];
    tq_buf_raw(b, head,
               (size_t)snprintf(head, sizeof head, "{\"token\":%llu", (unsigned long long)token));
}

/* Closes b and POSTs it to /v1/jobs/{id}/{verb}; the answer in *a. */
static int job_call(tenq_client *c, uint64_t id, const char *verb, tq_buf *b, tq_span *a)
{
    char path[96];
    snprintf(path, sizeof path, "/v1/jobs/%llu/%s", (unsigned long long)id, verb);
    tq_buf_raw(b, "}", 1);
    return tq_post_buf(c, path, b, 0, a);
}

int tenq_start(tenq_client *c, uint64_t id, uint64_t token)
{
    tq_clearerr(c);
    tq_buf b = {0};
    token_open(&b, token);
    return job_call(c, id, "start", &b, NULL);
}

int tenq_heartbeat_left(tenq_client *c, uint64_t id, uint64_t token, const char *progress_json,
                        int64_t *lease_until, int64_t *lease_left_ms, bool *cancel)
{
    if (lease_until) *lease_until = 0;
    if (lease_left_ms) *lease_left_ms = 0;
    if (cancel) *cancel = false;
    tq_clearerr(c);
    tq_buf b = {0};
    tq_span a;
    token_open(&b, token);
    int rc = tq_buf_json(c, &b, "progress", progress_json);
    if (rc == 0) rc = job_call(c, id, "heartbeat", &b, &a);
    free(b.p);
    if (rc != 0) return rc;
    if (lease_until) *lease_until = tq_aint(a, "lease_until");
    if (lease_left_ms) *lease_left_ms = tq_aint(a, "lease_left_ms");
    if (cancel) *cancel = tq_atrue(a, "cancel");
    return 0;
}

int tenq_heartbeat(tenq_client *c, uint64_t id, uint64_t token, const char *progress_json,
                   int64_t *lease_until, bool *cancel)
{
    return tenq_heartbeat_left(c, id, token, progress_json, lease_until, NULL, cancel);
}

/* The fields of an ack (f NULL) or a failure, appended to b. */
static int outcome_fields(tenq_client *c, tq_buf *b, const char *result, const tenq_fail_req *f,
                          const char *stats)
{
    int rc = 0;
    if (!f) {
        rc = tq_buf_json(c, b, "result", result);
    } else {
        rc = tq_buf_str(c, b, "error", f->error, false);
        if (f->has_retry_in) tq_buf_int(b, "retry_in_ms", f->retry_in_ms > 0 ? f->retry_in_ms : 0);
        if (f->no_retry) tq_buf_raw(b, ",\"retry\":false", 14);
        if (f->cancelled) tq_buf_raw(b, ",\"cancelled\":true", 17);
    }
    return rc ? rc : tq_buf_json(c, b, "stats", stats);
}

int tenq_ack(tenq_client *c, uint64_t id, uint64_t token, const char *result_json,
             const char *stats_json)
{
    tq_clearerr(c);
    tq_buf b = {0};
    token_open(&b, token);
    int rc = outcome_fields(c, &b, result_json, NULL, stats_json);
    if (rc == 0) rc = job_call(c, id, "ack", &b, NULL);
    free(b.p);
    return rc;
}

int tenq_fail(tenq_client *c, uint64_t id, uint64_t token, const tenq_fail_req *f,
              tenq_state *state, int64_t *run_at)
{
    if (state) *state = TENQ_STATE_UNKNOWN;
    if (run_at) *run_at = 0;
    tq_clearerr(c);
    static const tenq_fail_req none;
    tq_buf b = {0};
    tq_span a;
    token_open(&b, token);
    int rc = outcome_fields(c, &b, NULL, f ? f : &none, f ? f->stats_json : NULL);
    if (rc == 0) rc = job_call(c, id, "fail", &b, &a);
    free(b.p);
    if (rc != 0) return rc;
    if (state) *state = tq_astate(a, "state");
    if (run_at) *run_at = tq_aint(a, "run_at");
    return 0;
}

typedef struct outcome_results {
    tenq_outcome_res *res;
    size_t n;
} outcome_results;

/* Result k of an outcomes answer: its state, or its error (tq_walk_list's
 * each); those past n are read and dropped (then the count is wrong). */
static int outcome_one(tq_iter *at, size_t k, void *ctx)
{
    outcome_results *o = ctx;
    static const char *const names[] = {"state"};
    tq_span v, e;
    if (tq_item_read(at, names, 1, &v, &e) != 0) return -1;
    if (k >= o->n) return 0;
    tenq_outcome_res *r = &o->res[k];
    if (e.p)
        tq_item_error(e, &r->err, r->message, sizeof r->message, r->field, sizeof r->field);
    else
        r->state = v.p ? tq_span_state(v) : TENQ_STATE_UNKNOWN;
    return 0;
}

/* "outcomes":[...] into b. */
static int outcomes_text(tenq_client *c, const tenq_outcome *list, size_t n, tq_buf *b)
{
    int rc = 0;
    tq_buf_raw(b, "\"outcomes\":[", 12);
    for (size_t i = 0; i < n && rc == 0; i++) {
        const tenq_outcome *oc = &list[i];
        char num[24], *end = num + sizeof num, *d;
        if (i) tq_buf_raw(b, ",", 1);
        tq_buf_raw(b, "{\"id\":", 6);
        d = tq_digits(end, oc->id);
        tq_buf_raw(b, d, (size_t)(end - d));
        tq_buf_raw(b, ",\"token\":", 9);
        d = tq_digits(end, oc->token);
        tq_buf_raw(b, d, (size_t)(end - d));
        tq_buf_raw(b, oc->ok ? ",\"ok\":true" : ",\"ok\":false", oc->ok ? 10 : 11);
        rc = outcome_fields(c, b, oc->result_json, oc->ok ? NULL : &oc->fail, oc->stats_json);
        tq_buf_raw(b, "}", 1);
    }
    tq_buf_raw(b, "]", 1);
    return rc;
}

/* The n answers of an outcomes answer's "results" into res. */
static int outcomes_answer(tenq_client *c, tq_iter *top, size_t n, tenq_outcome_res *res)
{
    outcome_results o = {res, n};
    size_t k;
    if (tq_walk_list(top, "results", outcome_one, &o, &k) != 0) k = SIZE_MAX;
    if (k != n) {
        memset(res, 0, n * sizeof(*res));
        return tq_seterr(c, TENQ_EPROTOCOL, "the answer does not hold %zu results", n);
    }
    return 0;
}

static int outcomes_check(tenq_client *c, const tenq_outcome *list, size_t n, tenq_outcome_res *res)
{
    if (!list || !res || n == 0 || n > TENQ_BATCH_MAX)
        return tq_seterr(c, TENQ_EINVALID, "outcomes come 1 to %d at a time", TENQ_BATCH_MAX);
    memset(res, 0, n * sizeof(*res));
    return 0;
}

int tenq_outcomes(tenq_client *c, const tenq_outcome *list, size_t n, tenq_outcome_res *res)
{
    tq_clearerr(c);
    int rc = outcomes_check(c, list, n, res);
    if (rc != 0) return rc;
    tq_buf b = {0};
    tq_buf_raw(&b, "{", 1);
    rc = outcomes_text(c, list, n, &b);
    tq_buf_raw(&b, "}", 1);
    if (rc != 0) {
        free(b.p);
        return rc;
    }
    tq_iter top;
    if ((rc = tq_post_walk(c, "/v1/outcomes", &b, 0, &top)) != 0) return rc;
    return outcomes_answer(c, &top, n, res);
}

int tenq_lease_report(tenq_client *c, const tenq_outcome *list, size_t n, tenq_outcome_res *res,
                      const tenq_lease_req *req, tenq_job **jobs, size_t *njobs)
{
    if (n == 0) return tenq_lease(c, req, jobs, njobs);
    *jobs = NULL;
    *njobs = 0;
    tq_clearerr(c);
    int rc = outcomes_check(c, list, n, res);
    if (rc != 0) return rc;
    tq_buf b = {0};
    if ((rc = lease_text(c, req, &b)) == 0) {
        tq_buf_raw(&b, ",", 1);
        rc = outcomes_text(c, list, n, &b);
    }
    tq_buf_raw(&b, "}", 1);
    if (rc != 0) {
        free(b.p);
        return rc;
    }
    tq_iter top, again;
    if ((rc = tq_post_walk(c, "/v1/lease", &b, req->wait_ms > 0 ? req->wait_ms : 0, &top)) != 0)
        return rc;
    again = top; /* two walks of the answer: its jobs, its results */
    if ((rc = outcomes_answer(c, &again, n, res)) != 0) return rc;
    return lease_answer(c, &top, req, jobs, njobs);
}
