// SPDX-License-Identifier: Apache-2.0
/* Jobs: submit (one, a batch), status, wait, cancel. */
#include "internal.h"
#include "base/clock.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* ---- submitting -------------------------------------------------------------------------- */

/* Every submit goes with an Idempotency-Key header, made here, so that
 * sending it again (failover.c) never makes two jobs: the server answers a
 * request it has seen with its first answer.  One key a request, whatever
 * the batch: per-job keys (the jobs' own idempotency_key, kept a day) cost
 * the server a row and a record per job.  Keys are ordered by time ("tq1",
 * the ms clock, this handle's salt, a count). */
void tq_auto_key(tenq_client *c, char out[TQ_AUTO_KEY_LEN + 1])
{
    if (!c->key_salt) {
        uint32_t salt = 0;
        if (getrandom(&salt, sizeof salt, 0) != (ssize_t)sizeof salt)
            salt = (uint32_t)getpid() * 2654435761u ^ (uint32_t)time(NULL);
        c->key_salt = salt | 1;
    }
    unsigned long long ms = (unsigned long long)tq_wall_ms();
    snprintf(out, TQ_AUTO_KEY_LEN + 1, "tq1%011llx%08x%08x", ms & 0xfffffffffffULL, c->key_salt,
             c->key_count++);
}

/* POST /v1/jobs of b, with a request key of its own. */
static int post_jobs(tenq_client *c, tq_buf *b, tq_span *a, tq_iter *top)
{
    char key[TQ_AUTO_KEY_LEN + 1];
    tq_auto_key(c, key);
    c->request_key = key;
    int rc = top ? tq_post_walk(c, "/v1/jobs", b, 0, top) : tq_post_buf(c, "/v1/jobs", b, 0, a);
    c->request_key = NULL;
    return rc;
}

/* One job as JSON text appended to b (no tree, no dump). */
int tq_job_text(tenq_client *c, const tenq_submit_req *r, tq_buf *b)
{
    if (!r || !r->queue || !r->type)
        return tq_refuse(c, r && r->queue ? "type" : "queue", "a job needs a queue and a type");
    int rc = 0;
    tq_buf_raw(b, "{", 1);
    if ((rc = tq_buf_str(c, b, "queue", r->queue, true)) ||
        (rc = tq_buf_str(c, b, "type", r->type, false)) ||
        (rc = tq_buf_str(c, b, "tenant", r->tenant, false)) ||
        (rc = tq_buf_str(c, b, "key", r->key, false)) ||
        (rc = tq_buf_str(c, b, "unique_key", r->unique_key, false)) ||
        (rc = tq_buf_str(c, b, "idempotency_key", r->idempotency_key, false)) ||
        (rc = tq_buf_str(c, b, "traceparent", r->traceparent, false)) ||
        (rc = tq_buf_json(c, b, "args", r->args_json)) || /* checked, sent as written */
        (rc = tq_buf_json(c, b, "concurrency_keys", r->concurrency_keys_json)) ||
        (rc = tq_buf_json(c, b, "rate_keys", r->rate_keys_json)))
        return rc;
    if (r->debounce_ms) tq_buf_int(b, "debounce_ms", r->debounce_ms);
    if (r->debounce_max_ms) tq_buf_int(b, "debounce_max_ms", r->debounce_max_ms);
    if (r->expire_at) tq_buf_int(b, "expire_at", r->expire_at);
    if (r->start_within_ms) tq_buf_int(b, "start_within_ms", r->start_within_ms);
    if (r->unique) tq_buf_raw(b, ",\"unique\":true", 14);
    if (r->has_priority) tq_buf_int(b, "priority", r->priority);
    if (r->run_at) tq_buf_int(b, "run_at", r->run_at);
    if (r->max_attempts) tq_buf_int(b, "max_attempts", r->max_attempts);
    if (r->has_score) {
        if (!isfinite(r->score)) return tq_refuse(c, "score", "score must be a finite number");
        char num[64];
        tq_buf_raw(b, num, (size_t)snprintf(num, sizeof num, ",\"score\":%.17g", r->score));
    }
    tq_buf_raw(b, "}", 1);
    return b->oom ? tq_seterr(c, TENQ_ENOMEM, "out of memory") : 0;
}

/* One job's answer: {"id", "state", ...} or {"error": {...}}. */
static void read_result(tq_span e, const tq_span *v, tenq_submit_res *r)
{
    memset(r, 0, sizeof(*r));
    if (e.p) {
        tq_item_error(e, &r->err, r->message, sizeof r->message, r->field, sizeof r->field);
        return;
    }
    r->id = (uint64_t)tq_span_int(v[0]);
    r->state = v[1].p ? tq_span_state(v[1]) : TENQ_STATE_UNKNOWN;
    r->duplicate = tq_span_true(v[2]);
    r->merged = tq_span_true(v[3]);
    r->replayed = tq_span_true(v[4]);
    r->debounced = tq_span_true(v[5]);
    r->created = !r->duplicate && !r->merged && !r->replayed && !r->debounced;
}

static const char *const result_names[] = {"id",     "state",    "duplicate",
                                           "merged", "replayed", "debounced"};
enum { NRESULT = sizeof result_names / sizeof result_names[0] };

typedef struct batch_answer {
    size_t m;
    const size_t *idx;
    tenq_submit_res *res;
} batch_answer;

/* Result k of a batch's answer into res[idx[k]] (tq_walk_list's each);
 * those past m are read and dropped (then the count is wrong). */
static int batch_one(tq_iter *at, size_t k, void *ctx)
{
    batch_answer *ba = ctx;
    tq_span v[NRESULT], e;
    if (tq_item_read(at, result_names, NRESULT, v, &e) != 0) return -1;
    if (k < ba->m) read_result(e, v, &ba->res[ba->idx[k]]);
    return 0;
}

static void fail_result(tenq_client *c, int rc, tenq_submit_res *r)
{
    memset(r, 0, sizeof(*r));
    r->err = rc;
    snprintf(r->message, sizeof r->message, "%.255s", c->err);
    snprintf(r->field, sizeof r->field, "%s", c->field);
}

/* A caller's job text appended to b, checked to be one JSON object. */
static int job_json_text(tenq_client *c, const char *text, tq_buf *b)
{
    tq_span o;
    if (!text) return tq_seterr(c, TENQ_EINVALID, "no job text");
    if (!tq_scan_object(text, strlen(text), &o))
        return tq_refuse(c, "job", "a job is one JSON object");
    tq_buf_raw(b, o.p, o.n);
    return b->oom ? tq_seterr(c, TENQ_ENOMEM, "out of memory") : 0;
}

/* The answer of a batch of m jobs (top walks it), into res[idx[k]]. */
static int batch_results(tenq_client *c, int rc, tq_iter *top, size_t m, const size_t *idx,
                         tenq_submit_res *res)
{
    if (rc != 0) {
        for (size_t k = 0; k < m; k++) fail_result(c, rc, &res[idx[k]]);
        return rc;
    }
    batch_answer ba = {m, idx, res};
    size_t k;
    if (tq_walk_list(top, "jobs", batch_one, &ba, &k) != 0 || k != m) {
        rc = tq_seterr(c, TENQ_EPROTOCOL, "the batch answer does not hold %zu results", m);
        for (k = 0; k < m; k++) fail_result(c, rc, &res[idx[k]]);
        return rc;
    }
    return 0;
}

static int batch_check(tenq_client *c, size_t n, const void *jobs, tenq_submit_res *res)
{
    if (n == 0 || n > TENQ_BATCH_MAX || !jobs || !res)
        return tq_seterr(c, TENQ_EINVALID, "a batch holds 1 to %d jobs", TENQ_BATCH_MAX);
    return 0;
}

/* Sends n jobs, each written into the batch by put (a struct or a text):
 * a job put refuses is answered at once in res, the others go in one
 * request. */
static int submit_many(tenq_client *c, size_t n, const void *jobs, tenq_submit_res *res,
                       int (*put)(tenq_client *c, const void *jobs, size_t i, tq_buf *b))
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
        int jrc = put(c, jobs, i, &b);
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
        tq_iter top;
        rc = post_jobs(c, &b, NULL, &top);
        rc = batch_results(c, rc, &top, m, idx, res);
    }
    free(b.p);
    free(idx);
    return rc;
}

static int put_req(tenq_client *c, const void *jobs, size_t i, tq_buf *b)
{
    const tenq_submit_req *r = jobs;
    return tq_job_text(c, r ? &r[i] : NULL, b);
}

static int put_text(tenq_client *c, const void *jobs, size_t i, tq_buf *b)
{
    return job_json_text(c, ((const char *const *)jobs)[i], b);
}

/* Sends one job, written by put (job[0]); its answer into *res (may be
 * NULL). */
static int submit_one(tenq_client *c, const void *job, tenq_submit_res *res,
                      int (*put)(tenq_client *c, const void *jobs, size_t i, tq_buf *b))
{
    tq_clearerr(c);
    tenq_submit_res tmp;
    if (!res) res = &tmp;
    tq_buf b = {0};
    tq_span a;
    int rc = put(c, job, 0, &b);
    if (rc == 0) rc = post_jobs(c, &b, &a, NULL);
    free(b.p); /* a refused job's text; tq_post_buf left it empty */
    if (rc != 0) {
        fail_result(c, rc, res);
        return rc;
    }
    tq_iter at = tq_iter_at(a);
    tq_span v[NRESULT], e;
    if (tq_item_read(&at, result_names, NRESULT, v, &e) == 0)
        read_result(e, v, res);
    else
        memset(res, 0, sizeof(*res));
    if (!res->id) {
        rc = tq_seterr(c, TENQ_EPROTOCOL, "the submit answer has no id");
        fail_result(c, rc, res);
    }
    return rc;
}

int tenq_submit(tenq_client *c, const tenq_submit_req *job, tenq_submit_res *res)
{
    return submit_one(c, job, res, put_req);
}

int tenq_submit_json(tenq_client *c, const char *job_json, tenq_submit_res *res)
{
    return submit_one(c, &job_json, res, put_text);
}

int tenq_submit_batch(tenq_client *c, const tenq_submit_req *jobs, size_t n, tenq_submit_res *res)
{
    return submit_many(c, n, jobs, res, put_req);
}

int tenq_submit_batch_json(tenq_client *c, const char *const *jobs_json, size_t n,
                           tenq_submit_res *res)
{
    return submit_many(c, n, jobs_json, res, put_text);
}

/* ---- reading --------------------------------------------------------------------------------- */

/* The job in the last answer; *job is malloc'd. */
static int answer_job(tenq_client *c, tenq_job **job)
{
    tq_span a;
    tenq_job *j = calloc(1, sizeof(*j));
    int rc = !j                                          ? TENQ_ENOMEM
             : !tq_scan_object(c->body, c->body_len, &a) ? TENQ_EPROTOCOL
                                                         : tq_job_from_span(a, j);
    if (rc == 0) {
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

int tenq_wait(tenq_client *c, uint64_t id, int64_t timeout_ms, tenq_job **job)
{
    *job = NULL;
    tq_clearerr(c);
    if (timeout_ms < 0) timeout_ms = 0;
    int64_t end = tq_mono_ms() + timeout_ms;
    for (;;) {
        int64_t t0 = tq_mono_ms(), left = end - t0;
        if (left < 0) left = 0;
        char path[96];
        snprintf(path, sizeof path, "/v1/jobs/%llu/wait?timeout_ms=%lld", (unsigned long long)id,
                 (long long)left);
        int rc = tq_call(c, "GET", path, NULL, 0, left);
        if (rc == 0) rc = answer_job(c, job);
        if (rc != 0) return rc;
        int64_t t1 = tq_mono_ms();
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
    tq_span a;
    int rc = tq_call_text(c, "POST", path, NULL, 0, 0, &a);
    if (rc != 0) return rc;
    if (state) *state = tq_astate(a, "state");
    if (cancel_requested) *cancel_requested = tq_atrue(a, "cancel_requested");
    return 0;
}
