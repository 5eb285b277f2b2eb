/* Jobs: submit (one, a batch), status, wait, cancel. */
#include "client/internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- submitting -------------------------------------------------------------------------- */

/* The JSON object of one job; *out is a new reference. */
static int job_object(tenq_client *c, const tenq_submit_req *r, json_t **out)
{
    *out = NULL;
    if (!r || !r->queue || !r->type) {
        int rc = tq_seterr(c, TENQ_EINVALID, "a job needs a queue and a type");
        snprintf(c->field, sizeof c->field, "%s", r && r->queue ? "type" : "queue");
        return rc;
    }
    json_t *o = json_object();
    if (!o) return tq_seterr(c, TENQ_ENOMEM, "out of memory");
    bool bad = false;
    int rc = 0;
    if ((rc = tq_put_str(c, o, "tenant", r->tenant)) ||
        (rc = tq_put_str(c, o, "queue", r->queue)) || (rc = tq_put_str(c, o, "type", r->type)) ||
        (rc = tq_put_json(c, o, "args", r->args_json)) || (rc = tq_put_str(c, o, "key", r->key)) ||
        (rc = tq_put_str(c, o, "unique_key", r->unique_key)) ||
        (rc = tq_put_str(c, o, "idempotency_key", r->idempotency_key)))
        goto out;
    if (r->unique) tq_jset(o, "unique", json_true(), &bad);
    if (r->has_priority) tq_jset(o, "priority", json_integer(r->priority), &bad);
    if (r->run_at) tq_jset(o, "run_at", json_integer(r->run_at), &bad);
    if (r->max_attempts) tq_jset(o, "max_attempts", json_integer(r->max_attempts), &bad);
    if (r->has_score) tq_jset(o, "score", json_real(r->score), &bad);
    if (bad) rc = tq_seterr(c, TENQ_ENOMEM, "out of memory");
out:
    if (rc != 0)
        json_decref(o);
    else
        *out = o;
    return rc;
}

/* The same job as JSON text appended to b (the batch path: no tree, no dump). */
static int job_text(tenq_client *c, const tenq_submit_req *r, tq_buf *b)
{
    if (!r || !r->queue || !r->type) {
        int rc = tq_seterr(c, TENQ_EINVALID, "a job needs a queue and a type");
        snprintf(c->field, sizeof c->field, "%s", r && r->queue ? "type" : "queue");
        return rc;
    }
    int rc = 0;
    tq_buf_raw(b, "{", 1);
    if ((rc = tq_buf_str(c, b, "queue", r->queue, true)) ||
        (rc = tq_buf_str(c, b, "type", r->type, false)) ||
        (rc = tq_buf_str(c, b, "tenant", r->tenant, false)) ||
        (rc = tq_buf_str(c, b, "key", r->key, false)) ||
        (rc = tq_buf_str(c, b, "unique_key", r->unique_key, false)) ||
        (rc = tq_buf_str(c, b, "idempotency_key", r->idempotency_key, false)))
        return rc;
    if (r->args_json) { /* checked, then sent as the caller wrote it */
        json_t *a;
        if ((rc = tq_json_arg(c, "args", r->args_json, &a)) != 0) return rc;
        json_decref(a);
        tq_buf_raw(b, ",\"args\":", 8);
        tq_buf_raw(b, r->args_json, strlen(r->args_json));
    }
    char num[64];
    if (r->unique) tq_buf_raw(b, ",\"unique\":true", 14);
    if (r->has_priority)
        tq_buf_raw(b, num, (size_t)snprintf(num, sizeof num, ",\"priority\":%d", (int)r->priority));
    if (r->run_at)
        tq_buf_raw(b, num,
                   (size_t)snprintf(num, sizeof num, ",\"run_at\":%lld", (long long)r->run_at));
    if (r->max_attempts)
        tq_buf_raw(b, num,
                   (size_t)snprintf(num, sizeof num, ",\"max_attempts\":%lld",
                                    (long long)r->max_attempts));
    if (r->has_score) {
        if (!isfinite(r->score)) {
            rc = tq_seterr(c, TENQ_EINVALID, "score must be a finite number");
            snprintf(c->field, sizeof c->field, "score");
            return rc;
        }
        tq_buf_raw(b, num, (size_t)snprintf(num, sizeof num, ",\"score\":%.17g", r->score));
    }
    tq_buf_raw(b, "}", 1);
    return b->oom ? tq_seterr(c, TENQ_ENOMEM, "out of memory") : 0;
}

/* One job's answer: {"id", "state", ...} or {"error": {...}}. */
static void read_result(const json_t *a, tenq_submit_res *r)
{
    memset(r, 0, sizeof(*r));
    json_t *e = json_object_get(a, "error");
    if (e) {
        tq_item_error(e, &r->err, r->message, sizeof r->message, r->field, sizeof r->field);
        return;
    }
    r->id = (uint64_t)tq_jint(a, "id");
    r->state = tenq_state_parse(json_string_value(json_object_get(a, "state")));
    r->duplicate = json_is_true(json_object_get(a, "duplicate"));
    r->merged = json_is_true(json_object_get(a, "merged"));
    r->replayed = json_is_true(json_object_get(a, "replayed"));
    r->created = !r->duplicate && !r->merged && !r->replayed;
}

static void fail_result(tenq_client *c, int rc, tenq_submit_res *r)
{
    memset(r, 0, sizeof(*r));
    r->err = rc;
    snprintf(r->message, sizeof r->message, "%.255s", c->err);
    snprintf(r->field, sizeof r->field, "%s", c->field);
}

/* Sends one job object (stolen). */
static int submit_one(tenq_client *c, json_t *job, tenq_submit_res *res)
{
    json_t *a = NULL;
    int rc = tq_call_json(c, "POST", "/v1/jobs", job, 0, &a);
    tenq_submit_res tmp;
    if (!res) res = &tmp;
    if (rc != 0) {
        fail_result(c, rc, res);
        return rc;
    }
    read_result(a, res);
    json_decref(a);
    if (!res->id) {
        rc = tq_seterr(c, TENQ_EPROTOCOL, "the submit answer has no id");
        fail_result(c, rc, res);
    }
    return rc;
}

int tenq_submit(tenq_client *c, const tenq_submit_req *job, tenq_submit_res *res)
{
    tq_clearerr(c);
    json_t *o;
    int rc = job_object(c, job, &o);
    if (rc != 0) {
        if (res) fail_result(c, rc, res);
        return rc;
    }
    return submit_one(c, o, res);
}

int tenq_submit_json(tenq_client *c, const char *job_json, tenq_submit_res *res)
{
    tq_clearerr(c);
    json_t *o = NULL;
    int rc = job_json ? tq_json_arg(c, "job", job_json, &o) : TENQ_EINVALID;
    if (rc == 0 && !json_is_object(o)) rc = TENQ_EINVALID;
    if (rc != 0) {
        json_decref(o);
        if (!c->err[0]) tq_seterr(c, rc, "a job is a JSON object");
        if (res) fail_result(c, rc, res);
        return rc;
    }
    return submit_one(c, o, res);
}

static int batch_results(tenq_client *c, int rc, json_t *a, size_t m, const size_t *idx,
                         tenq_submit_res *res);

/* Sends the objects in jobs (an array, stolen) for the indexes in idx;
 * results land at res[idx[k]]. */
static int send_batch(tenq_client *c, json_t *jobs, const size_t *idx, tenq_submit_res *res)
{
    size_t m = json_array_size(jobs);
    if (m == 0) {
        json_decref(jobs);
        return 0;
    }
    json_t *body = json_object();
    if (!body || json_object_set_new(body, "jobs", jobs) != 0) {
        json_decref(body);
        return tq_seterr(c, TENQ_ENOMEM, "out of memory");
    }
    json_t *a = NULL;
    int rc = tq_call_json(c, "POST", "/v1/jobs", body, 0, &a);
    return batch_results(c, rc, a, m, idx, res);
}

/* The answer a (released) of a batch of m jobs, into res[idx[k]]. */
static int batch_results(tenq_client *c, int rc, json_t *a, size_t m, const size_t *idx,
                         tenq_submit_res *res)
{
    if (rc != 0) {
        for (size_t k = 0; k < m; k++) fail_result(c, rc, &res[idx[k]]);
        return rc;
    }
    json_t *list = json_object_get(a, "jobs");
    if (json_array_size(list) != m) {
        json_decref(a);
        rc = tq_seterr(c, TENQ_EPROTOCOL, "the batch answer does not hold %zu results", m);
        for (size_t k = 0; k < m; k++) fail_result(c, rc, &res[idx[k]]);
        return rc;
    }
    for (size_t k = 0; k < m; k++) read_result(json_array_get(list, k), &res[idx[k]]);
    json_decref(a);
    return 0;
}

static int batch_check(tenq_client *c, size_t n, const void *jobs, tenq_submit_res *res)
{
    if (n == 0 || n > TENQ_BATCH_MAX || !jobs || !res)
        return tq_seterr(c, TENQ_EINVALID, "a batch holds 1 to %d jobs", TENQ_BATCH_MAX);
    return 0;
}

int tenq_submit_batch(tenq_client *c, const tenq_submit_req *jobs, size_t n, tenq_submit_res *res)
{
    tq_clearerr(c);
    int rc = batch_check(c, n, jobs, res);
    if (rc != 0) return rc;
    size_t *idx = malloc(n * sizeof(size_t));
    if (!idx) return tq_seterr(c, TENQ_ENOMEM, "out of memory");
    tq_buf b = {0};
    tq_buf_raw(&b, "{\"jobs\":[", 9);
    size_t m = 0;
    for (size_t i = 0; i < n && !b.oom; i++) {
        size_t mark = b.len;
        if (m) tq_buf_raw(&b, ",", 1);
        int jrc = job_text(c, &jobs[i], &b);
        if (jrc == TENQ_ENOMEM || b.oom) break;
        if (jrc != 0) { /* this job is answered here; the others go */
            b.len = mark;
            fail_result(c, jrc, &res[i]);
            continue;
        }
        idx[m++] = i;
    }
    tq_buf_raw(&b, "]}", 2);
    if (b.oom) {
        rc = tq_seterr(c, TENQ_ENOMEM, "out of memory");
    } else if (m) {
        tq_clearerr(c);
        json_t *a = NULL;
        rc = tq_call_text(c, "POST", "/v1/jobs", b.p, b.len, 0, &a);
        rc = batch_results(c, rc, a, m, idx, res);
    }
    free(b.p);
    free(idx);
    return rc;
}

int tenq_submit_batch_json(tenq_client *c, const char *const *jobs_json, size_t n,
                           tenq_submit_res *res)
{
    tq_clearerr(c);
    int rc = batch_check(c, n, jobs_json, res);
    if (rc != 0) return rc;
    json_t *arr = json_array();
    size_t *idx = malloc(n * sizeof(size_t));
    if (!arr || !idx) {
        json_decref(arr);
        free(idx);
        return tq_seterr(c, TENQ_ENOMEM, "out of memory");
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *o = NULL;
        int jrc = jobs_json[i] ? tq_json_arg(c, "job", jobs_json[i], &o) : TENQ_EINVALID;
        if (jrc == 0 && !json_is_object(o)) {
            tq_seterr(c, TENQ_EINVALID, "a job is a JSON object");
            jrc = TENQ_EINVALID;
        }
        if (jrc != 0) {
            json_decref(o);
            if (!jobs_json[i]) tq_seterr(c, TENQ_EINVALID, "no job text");
            fail_result(c, jrc, &res[i]);
            continue;
        }
        if (json_array_append_new(arr, o) != 0) {
            rc = tq_seterr(c, TENQ_ENOMEM, "out of memory");
            break;
        }
        idx[m++] = i;
    }
    if (rc == 0) {
        tq_clearerr(c);
        rc = send_batch(c, arr, idx, res);
    } else {
        json_decref(arr);
    }
    free(idx);
    return rc;
}

/* ---- reading --------------------------------------------------------------------------------- */

/* The job in the last answer; *job is malloc'd. */
static int answer_job(tenq_client *c, tenq_job **job)
{
    json_t *a = json_loadb(c->body, c->body_len, 0, NULL);
    tenq_job *j = calloc(1, sizeof(*j));
    int rc = j ? tq_job_from_json(a, j) : TENQ_ENOMEM;
    json_decref(a);
    if (rc == 0) {
        /* the text exactly as the server sent it */
        char *text = strdup(c->body);
        if (text) {
            free(j->json);
            j->json = text;
        }
        *job = j;
        return 0;
    }
    free(j);
    return tq_seterr(c, rc, rc == TENQ_ENOMEM ? "out of memory" : "the answer is not a job");
}

int tenq_status(tenq_client *c, uint64_t id, tenq_job **job)
{
    *job = NULL;
    tq_clearerr(c);
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%llu", (unsigned long long)id);
    int rc = tq_call(c, "GET", path, NULL, 0, 0);
    return rc ? rc : answer_job(c, job);
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int tenq_wait(tenq_client *c, uint64_t id, int64_t timeout_ms, tenq_job **job)
{
    *job = NULL;
    tq_clearerr(c);
    if (timeout_ms < 0) timeout_ms = 0;
    int64_t end = mono_ms() + timeout_ms;
    for (;;) {
        int64_t t0 = mono_ms(), left = end - t0;
        if (left < 0) left = 0;
        char path[96];
        snprintf(path, sizeof path, "/v1/jobs/%llu/wait?timeout_ms=%lld", (unsigned long long)id,
                 (long long)left);
        int rc = tq_call(c, "GET", path, NULL, 0, left);
        if (rc == 0) rc = answer_job(c, job);
        if (rc != 0) return rc;
        int64_t t1 = mono_ms();
        /* the server answers unfinished jobs at its own --max-wait: ask again */
        if (tenq_state_finished((*job)->state) || t1 >= end) return 0;
        tenq_job_free(*job);
        *job = NULL;
        if (t1 - t0 < 100) {
            /* an early answer we did not ask for: do not spin */
            struct timespec ts = {0, 100 * 1000000};
            nanosleep(&ts, NULL);
        }
    }
}

int tenq_cancel(tenq_client *c, uint64_t id, tenq_state *state, bool *cancel_requested)
{
    if (state) *state = TENQ_STATE_UNKNOWN;
    if (cancel_requested) *cancel_requested = false;
    tq_clearerr(c);
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%llu/cancel", (unsigned long long)id);
    json_t *a;
    int rc = tq_call_json(c, "POST", path, NULL, 0, &a);
    if (rc != 0) return rc;
    if (state) *state = tenq_state_parse(json_string_value(json_object_get(a, "state")));
    if (cancel_requested) *cancel_requested = json_is_true(json_object_get(a, "cancel_requested"));
    json_decref(a);
    return 0;
}
