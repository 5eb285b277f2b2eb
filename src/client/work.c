/* Workers: lease, start, heartbeat, ack, fail, and batched outcomes. */
#include "client/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *name_array(tenq_client *c, const char *field, const char *const *v, size_t n,
                          int *rc)
{
    json_t *a = json_array();
    if (!a) {
        *rc = tq_seterr(c, TENQ_ENOMEM, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *s = v[i] ? json_string(v[i]) : NULL;
        if (!s || json_array_append_new(a, s) != 0) {
            json_decref(a);
            *rc = tq_seterr(c, TENQ_EINVALID, "%s must hold UTF-8 names", field);
            snprintf(c->field, sizeof c->field, "%s", field);
            return NULL;
        }
    }
    return a;
}

int tenq_lease(tenq_client *c, const tenq_lease_req *req, tenq_job **jobs, size_t *n)
{
    *jobs = NULL;
    *n = 0;
    tq_clearerr(c);
    if (!req || !req->queues || req->nqueues == 0)
        return tq_seterr(c, TENQ_EINVALID, "a lease names at least one queue");
    int rc = 0;
    json_t *body = json_object(), *a = NULL;
    if (!body) return tq_seterr(c, TENQ_ENOMEM, "out of memory");
    bool bad = false;
    if ((rc = tq_put_str(c, body, "worker", req->worker)) != 0) goto out;
    json_t *q = name_array(c, "queues", req->queues, req->nqueues, &rc);
    if (!q) goto out;
    tq_jset(body, "queues", q, &bad);
    if (req->types && req->ntypes) {
        json_t *t = name_array(c, "types", req->types, req->ntypes, &rc);
        if (!t) goto out;
        tq_jset(body, "types", t, &bad);
    }
    tq_jset(body, "max", json_integer(req->max ? req->max : 1), &bad);
    tq_jset(body, "wait_ms", json_integer(req->wait_ms > 0 ? req->wait_ms : 0), &bad);
    if (bad) {
        rc = tq_seterr(c, TENQ_ENOMEM, "out of memory");
        goto out;
    }
    rc = tq_call_json(c, "POST", "/v1/lease", body, req->wait_ms > 0 ? req->wait_ms : 0, &a);
    body = NULL;
    if (rc != 0) goto out;
    json_t *list = json_object_get(a, "jobs");
    if (!json_is_array(list)) {
        rc = tq_seterr(c, TENQ_EPROTOCOL, "the lease answer has no jobs");
        goto out;
    }
    size_t m = json_array_size(list);
    if (m == 0) goto out;
    tenq_job *v = calloc(m, sizeof(tenq_job));
    if (!v) {
        rc = tq_seterr(c, TENQ_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < m; i++) {
        int jrc = tq_job_from_json(json_array_get(list, i), &v[i]);
        if (jrc != 0) {
            /* the jobs are leased already; they come back when their leases
             * expire, which is all a client could do about a bad answer */
            tenq_jobs_free(v, i);
            rc = tq_seterr(c, jrc, "a leased job in the answer is malformed");
            goto out;
        }
        v[i].state = TENQ_STATE_LEASED;
    }
    *jobs = v;
    *n = m;
out:
    json_decref(body);
    json_decref(a);
    return rc;
}

/* POST /v1/jobs/{id}/{verb} with body (stolen); the answer in *a. */
static int job_call(tenq_client *c, uint64_t id, const char *verb, json_t *body, json_t **a)
{
    char path[96];
    snprintf(path, sizeof path, "/v1/jobs/%llu/%s", (unsigned long long)id, verb);
    return tq_call_json(c, "POST", path, body, 0, a);
}

static json_t *token_body(tenq_client *c, uint64_t token)
{
    json_t *o = json_object();
    bool bad = !o;
    if (o) tq_jset(o, "token", json_integer((json_int_t)token), &bad);
    if (bad) {
        json_decref(o);
        tq_seterr(c, TENQ_ENOMEM, "out of memory");
        return NULL;
    }
    return o;
}

int tenq_start(tenq_client *c, uint64_t id, uint64_t token)
{
    tq_clearerr(c);
    json_t *o = token_body(c, token);
    if (!o) return TENQ_ENOMEM;
    return job_call(c, id, "start", o, NULL);
}

int tenq_heartbeat(tenq_client *c, uint64_t id, uint64_t token, const char *progress_json,
                   int64_t *lease_until, bool *cancel)
{
    if (lease_until) *lease_until = 0;
    if (cancel) *cancel = false;
    tq_clearerr(c);
    json_t *o = token_body(c, token), *a = NULL;
    if (!o) return TENQ_ENOMEM;
    int rc = tq_put_json(c, o, "progress", progress_json);
    if (rc != 0) {
        json_decref(o);
        return rc;
    }
    rc = job_call(c, id, "heartbeat", o, &a);
    if (rc != 0) return rc;
    if (lease_until) *lease_until = tq_jint(a, "lease_until");
    if (cancel) *cancel = json_is_true(json_object_get(a, "cancel"));
    json_decref(a);
    return 0;
}

int tenq_ack(tenq_client *c, uint64_t id, uint64_t token, const char *result_json,
             const char *stats_json)
{
    tq_clearerr(c);
    json_t *o = token_body(c, token);
    if (!o) return TENQ_ENOMEM;
    int rc;
    if ((rc = tq_put_json(c, o, "result", result_json)) != 0 ||
        (rc = tq_put_json(c, o, "stats", stats_json)) != 0) {
        json_decref(o);
        return rc;
    }
    return job_call(c, id, "ack", o, NULL);
}

/* The fields of a failure into o. */
static int fail_fields(tenq_client *c, json_t *o, const tenq_fail_req *f, const char *stats)
{
    int rc;
    bool bad = false;
    if (f) {
        if ((rc = tq_put_str(c, o, "error", f->error)) != 0) return rc;
        if (f->has_retry_in)
            tq_jset(o, "retry_in_ms", json_integer(f->retry_in_ms > 0 ? f->retry_in_ms : 0), &bad);
        if (f->no_retry) tq_jset(o, "retry", json_false(), &bad);
        if (f->cancelled) tq_jset(o, "cancelled", json_true(), &bad);
    }
    if ((rc = tq_put_json(c, o, "stats", stats)) != 0) return rc;
    return bad ? tq_seterr(c, TENQ_ENOMEM, "out of memory") : 0;
}

int tenq_fail(tenq_client *c, uint64_t id, uint64_t token, const tenq_fail_req *f,
              tenq_state *state, int64_t *run_at)
{
    if (state) *state = TENQ_STATE_UNKNOWN;
    if (run_at) *run_at = 0;
    tq_clearerr(c);
    json_t *o = token_body(c, token), *a = NULL;
    if (!o) return TENQ_ENOMEM;
    int rc = fail_fields(c, o, f, f ? f->stats_json : NULL);
    if (rc != 0) {
        json_decref(o);
        return rc;
    }
    rc = job_call(c, id, "fail", o, &a);
    if (rc != 0) return rc;
    if (state) *state = tenq_state_parse(json_string_value(json_object_get(a, "state")));
    if (run_at) *run_at = tq_jint(a, "run_at");
    json_decref(a);
    return 0;
}

int tenq_outcomes(tenq_client *c, const tenq_outcome *list, size_t n, tenq_outcome_res *res)
{
    tq_clearerr(c);
    if (!list || !res || n == 0 || n > TENQ_BATCH_MAX)
        return tq_seterr(c, TENQ_EINVALID, "outcomes come 1 to %d at a time", TENQ_BATCH_MAX);
    memset(res, 0, n * sizeof(*res));
    json_t *arr = json_array(), *body = json_object(), *a = NULL;
    int rc = 0;
    bool bad = !arr || !body;
    for (size_t i = 0; i < n && !bad && rc == 0; i++) {
        const tenq_outcome *oc = &list[i];
        json_t *o = json_object();
        if (!o || json_array_append_new(arr, o) != 0) {
            bad = true;
            break;
        }
        tq_jset(o, "id", json_integer((json_int_t)oc->id), &bad);
        tq_jset(o, "token", json_integer((json_int_t)oc->token), &bad);
        tq_jset(o, "ok", json_boolean(oc->ok), &bad);
        if (oc->ok) rc = tq_put_json(c, o, "result", oc->result_json);
        if (rc == 0) rc = fail_fields(c, o, oc->ok ? NULL : &oc->fail, oc->stats_json);
    }
    if (rc == 0 && !bad && json_object_set(body, "outcomes", arr) != 0) bad = true;
    json_decref(arr);
    if (rc == 0 && bad) rc = tq_seterr(c, TENQ_ENOMEM, "out of memory");
    if (rc != 0) {
        json_decref(body);
        return rc;
    }
    rc = tq_call_json(c, "POST", "/v1/outcomes", body, 0, &a);
    if (rc != 0) return rc;
    json_t *results = json_object_get(a, "results");
    if (json_array_size(results) != n) {
        json_decref(a);
        return tq_seterr(c, TENQ_EPROTOCOL, "the outcomes answer does not hold %zu results", n);
    }
    for (size_t i = 0; i < n; i++) {
        json_t *r = json_array_get(results, i), *e = json_object_get(r, "error");
        if (e)
            tq_item_error(e, &res[i].err, res[i].message, sizeof res[i].message, res[i].field,
                          sizeof res[i].field);
        else
            res[i].state = tenq_state_parse(json_string_value(json_object_get(r, "state")));
    }
    json_decref(a);
    return 0;
}
