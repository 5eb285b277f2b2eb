// SPDX-License-Identifier: Apache-2.0
/* The bodies of POST /v1/jobs and POST /v1/outcomes (and a lease's
 * outcomes) read whole before anything is applied: pure functions over the
 * request's text or its jansson tree, so that the handlers (api_jobs.c,
 * api_work.c) only apply what was read, and tests and fuzzers (tests/fuzz)
 * call the readers alone.  See request_read.h. */
#include "request_read.h"

#include "request.h"

#include "base/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* ---- submits ------------------------------------------------------------------------------ */

void submit_in_free(submit_in *in)
{
    for (size_t i = 0; i < in->n; i++) free(in->mem[i]);
    free(in->mem);
    free(in->reqs);
    free(in->res);
    free(in->ok);
    memset(in, 0, sizeof(*in));
}

/* A batch's "columns": true, false or null; false when it is anything else. */
static bool text_columns(tq_iter *top, bool *columns)
{
    tq_span v;
    if (tq_iter_value(top, &v) < 0) return false;
    *columns = tq_span_true(v);
    return *columns || tq_span_null(v) || (v.n == 5 && !memcmp(v.p, "false", 5));
}

/* One walk reads and checks it all: a body whose first member is "jobs" is
 * a batch (the list, then at most "columns"), any other is one job. */
bool submit_read_text(const char *text, size_t len, long long max_job_bytes, const principal *who,
                      submit_in *in)
{
    tq_span body, k;
    tq_iter top, list;
    int rc;
    memset(in, 0, sizeof(*in));
    if (!tq_obj_outline(text, len, &body) || !tq_obj_begin(&top, body)) return false;
    bool batch = tq_obj_key(&top, &k) > 0 && k.n == 4 && !memcmp(k.p, "jobs", 4);
    if (!batch && (long long)len > max_job_bytes) return false;
    size_t n = 0, cap = batch ? 64 : 1;
    engine_submit_req *reqs = xmalloc(cap * sizeof(*reqs));
    char **mem = xmalloc(cap * sizeof(*mem));
    bool done = false;
    if (!batch) {
        tq_iter at = tq_iter_at(body);
        done = read_job_text(&at, who, &reqs[0], &mem[0]);
        n = done;
        if (done && at.p != body.p + body.n) done = false; /* {...}{...} */
    } else if (tq_iter_enter(&top, &list, '[')) {
        done = true;
        while (done && (rc = tq_arr_step(&list)) > 0) {
            if (n == SUBMIT_BATCH_MAX || *list.p != '{') {
                done = false;
                break;
            }
            if (n == cap) {
                cap *= 4;
                reqs = xrealloc(reqs, cap * sizeof(*reqs));
                mem = xrealloc(mem, cap * sizeof(*mem));
            }
            if (!read_job_text(&list, who, &reqs[n], &mem[n]))
                done = false;
            else
                n++;
        }
        if (done && rc == 0) tq_iter_leave(&top, &list);
        /* an empty list, a bad one, or anything but "columns" after it:
         * jansson words it */
        if (rc < 0 || n == 0) done = false;
        if (done && (rc = tq_obj_key(&top, &k)) != 0)
            done = rc > 0 && tq_key_is(k, "columns") && text_columns(&top, &in->columns) &&
                   tq_obj_key(&top, &k) == 0;
    }
    in->n = n;
    in->reqs = reqs;
    in->mem = mem;
    if (!done) {
        submit_in_free(in);
        return false;
    }
    in->batch = batch;
    in->res = xcalloc(n, sizeof(*in->res));
    return true;
}

submit_verdict submit_read_tree(json_t *body, size_t len, long long max_job_bytes,
                                const principal *who, submit_in *in, const char **other_key)
{
    memset(in, 0, sizeof(*in));
    *other_key = NULL;
    json_t *jobs = json_object_get(body, "jobs");
    if (!jobs) {
        if ((long long)len > max_job_bytes) return SUBMIT_TOO_LARGE;
        in->n = 1;
        in->reqs = xcalloc(1, sizeof(*in->reqs));
        in->res = xcalloc(1, sizeof(*in->res));
        in->ok = xcalloc(1, sizeof(*in->ok));
        in->mem = xcalloc(1, sizeof(*in->mem));
        in->ok[0] = read_job(body, who, &in->reqs[0], &in->mem[0], &in->res[0].err);
        if (!in->ok[0]) in->res[0].code = in->res[0].err.code;
        return SUBMIT_READ;
    }
    json_t *columns = json_object_get(body, "columns");
    if (json_object_size(body) != 1 + (columns != NULL)) {
        const char *k;
        json_t *v;
        json_object_foreach(body, k, v) if (strcmp(k, "jobs") && strcmp(k, "columns")) break;
        *other_key = k;
        return SUBMIT_NOT_ONLY_JOBS;
    }
    if (!json_is_array(jobs) || json_array_size(jobs) == 0 ||
        json_array_size(jobs) > SUBMIT_BATCH_MAX)
        return SUBMIT_BAD_JOBS;
    if (columns && !json_is_boolean(columns) && !json_is_null(columns)) return SUBMIT_BAD_COLUMNS;
    size_t n = json_array_size(jobs);
    in->n = n;
    in->batch = true;
    in->columns = json_is_true(columns);
    in->res = xcalloc(n, sizeof(*in->res));
    in->reqs = xcalloc(n, sizeof(*in->reqs));
    in->mem = xcalloc(n, sizeof(*in->mem));
    in->ok = xcalloc(n, sizeof(*in->ok));
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_array_get(jobs, i);
        if (!json_is_object(o)) {
            engine_errf(&in->res[i].err, TENQ_EINVALID, NULL, "job %zu is not an object", i);
            in->res[i].code = TENQ_EINVALID;
        } else if (!(in->ok[i] = read_job(o, who, &in->reqs[i], &in->mem[i], &in->res[i].err))) {
            in->res[i].code = in->res[i].err.code;
        }
    }
    return SUBMIT_READ;
}

/* ---- outcomes ----------------------------------------------------------------------------- */

#define OUTCOMES_MAX 10000

void outcome_set_free(outcome_set *os)
{
    for (size_t i = 0; i < os->n; i++) {
        outcome_in_free(&os->ins[i]);
        if (os->errs) free(os->errs[i]);
    }
    free(os->ins);
    free(os->ids);
    free(os->errs);
    memset(os, 0, sizeof(*os));
}

bool outcome_set_read(tq_iter *list, outcome_set *os)
{
    int rc;
    memset(os, 0, sizeof(*os));
    os->cap = 16;
    os->ins = xmalloc(os->cap * sizeof(*os->ins));
    os->ids = xmalloc(os->cap * sizeof(*os->ids));
    while ((rc = tq_arr_step(list)) > 0) {
        if (os->n == OUTCOMES_MAX) break;
        if (os->n == os->cap) {
            os->cap *= 4;
            os->ins = xrealloc(os->ins, os->cap * sizeof(*os->ins));
            os->ids = xrealloc(os->ids, os->cap * sizeof(*os->ids));
        }
        if (!outcome_read_text(list, &os->ins[os->n], &os->ids[os->n])) break;
        os->n++;
    }
    if (rc != 0 || os->n == 0) {
        outcome_set_free(os);
        return false;
    }
    return true;
}

int outcome_set_read_tree(json_t *list, outcome_set *os, engine_err *err)
{
    memset(os, 0, sizeof(*os));
    if (!json_is_array(list) || json_array_size(list) == 0 ||
        json_array_size(list) > OUTCOMES_MAX) {
        engine_errf(err, TENQ_EINVALID, "outcomes", "outcomes must be a list of 1 to 10,000");
        return TENQ_EINVALID;
    }
    static const char *const ofields[] = {"id",    "token",       "ok",    "result",    "stats",
                                          "error", "retry_in_ms", "retry", "cancelled", NULL};
    size_t n = json_array_size(list);
    os->n = os->cap = n;
    os->ins = xcalloc(n, sizeof(*os->ins));
    os->ids = xcalloc(n, sizeof(*os->ids));
    os->errs = xcalloc(n, sizeof(*os->errs));
    size_t i;
    json_t *o;
    json_array_foreach(list, i, o)
    {
        engine_err e = {0};
        int rc = 0;
        json_t *jid = json_object_get(o, "id"), *jok = json_object_get(o, "ok");
        if (!json_is_object(o)) {
            rc = TENQ_EINVALID;
            engine_errf(&e, rc, NULL, "outcome %zu is not an object", i);
        } else if (!json_is_integer(jid) || json_integer_value(jid) < 1) {
            rc = TENQ_EINVALID;
            engine_errf(&e, rc, "id", "id must be a job id");
        } else if (!json_is_boolean(jok)) {
            rc = TENQ_EINVALID;
            engine_errf(&e, rc, "ok", "ok must be true or false");
        } else {
            const char *k = obj_unknown_field(o, ofields);
            if (k) {
                rc = TENQ_EINVALID;
                engine_errf(&e, rc, k, "unknown field \"%s\"", k);
            }
            os->ids[i] = (uint64_t)json_integer_value(jid);
            if (!rc) rc = outcome_read(o, json_is_true(jok), &os->ins[i], &e);
        }
        if (rc) {
            os->errs[i] = xmalloc(sizeof(engine_err));
            *os->errs[i] = e;
            os->errs[i]->code = rc;
        }
    }
    return 0;
}

bool outcomes_read_text(const char *text, size_t len, outcome_set *os)
{
    tq_span body, k;
    tq_iter top, list;
    memset(os, 0, sizeof(*os));
    /* one walk reads and checks it all: {"outcomes": [...]} and nothing else */
    if (!tq_obj_outline(text, len, &body) || !tq_obj_begin(&top, body) ||
        tq_obj_key(&top, &k) <= 0 || k.n != 8 || memcmp(k.p, "outcomes", 8) ||
        !tq_iter_enter(&top, &list, '[') || !outcome_set_read(&list, os))
        return false;
    tq_iter_leave(&top, &list);
    if (tq_obj_key(&top, &k) != 0) {
        outcome_set_free(os);
        return false;
    }
    return true;
}
