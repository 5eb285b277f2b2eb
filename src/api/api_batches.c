// SPDX-License-Identifier: Apache-2.0
/* Batches over HTTP: POST /v1/batches, POST /v1/batches/{id}/jobs, GET
 * /v1/batches/{id}, GET /v1/batches (docs/API.md, SEMANTICS.md "Batches").
 * Admin tokens see every batch; a tenant token its own tenant's only (any
 * other is not there: 404).  A request is taken whole or refused whole,
 * with the field at fault named ("jobs[3].queue", "on_death.type"). */
#include "admit.h"
#include "auth.h"
#include "clock.h"
#include "commit.h"
#include "handlers.h"
#include "http.h"
#include "jbuf.h"
#include "jobread.h"
#include "reply.h"
#include "request.h"
#include "request_keys.h"
#include "server.h"
#include "submit_json.h"

#include "base/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BATCH_JOBS_MAX 10000 /* jobs one request may carry (documented in API.md) */
#define BATCH_LIST_MAX 1000

static bool batch_visible(const principal *who, const char *tenant)
{
    if (!who->tok || who->role != ROLE_TENANT) return true;
    return strcmp(who->tok->tenant, tenant) == 0;
}

static void json_batch(jbuf *b, const engine_batch_info *x, bool hide)
{
    jb_obj(b);
    jb_kint(b, "id", (long long)x->id);
    jb_kstr(b, "tenant", x->tenant);
    jb_kstr(b, "status", x->closed_at ? "closed" : "open");
    jb_kint(b, "created_at", x->created_at);
    jb_key(b, "closed_at");
    if (x->closed_at)
        jb_int(b, x->closed_at);
    else
        jb_null(b);
    uint64_t pending = engine_batch_pending(x);
    jb_kint(b, "total", (long long)x->total);
    jb_kint(b, "pending", (long long)pending);
    jb_kint(b, "finished", (long long)(x->total - pending));
    jb_key(b, "progress");
    jb_num(b, x->total ? (double)(x->total - pending) / (double)x->total : 1.0);
    jb_key(b, "counts");
    jb_obj(b);
    for (int st = 0; st < ENGINE_NSTATES; st++)
        jb_kint(b, engine_state_name((engine_state)st), (long long)x->n[st]);
    jb_kint(b, "deleted", (long long)x->deleted);
    jb_obj_end(b);
    /* its jobs' deaths, ever: a batch that had one never fires on_success */
    jb_kint(b, "deaths", (long long)x->deaths);
    jb_key(b, "callbacks");
    jb_obj(b);
    for (int k = 0; k < ENGINE_NCALLBACKS; k++) {
        const engine_submit_req *r = x->callbacks[k];
        if (!r) continue;
        jb_key(b, engine_callback_name(k));
        jb_obj(b);
        jb_kstr(b, "queue", r->queue);
        jb_kstr(b, "type", r->type);
        if (!hide) jb_kraw(b, "args", r->args ? r->args : "{}");
        if (r->key) jb_kstr(b, "key", r->key);
        if (r->has_priority) jb_kint(b, "priority", r->priority);
        if (r->max_attempts) jb_kint(b, "max_attempts", r->max_attempts);
        if (r->timeout_ms) jb_kint(b, "timeout_ms", r->timeout_ms);
        jb_key(b, "job");
        if (x->callback_ids[k])
            jb_int(b, (long long)x->callback_ids[k]);
        else
            jb_null(b);
        jb_obj_end(b);
    }
    jb_obj_end(b);
    jb_obj_end(b);
}

/* 409 batch_closed: a conflict (the error table's status), in a word of its own. */
static void reply_closed(http_req *req, uint64_t id)
{
    reply_error_word(req, TENQ_ECONFLICT, "batch_closed", "id",
                     "batch %llu is closed: its jobs all finished and its callbacks were submitted",
                     (unsigned long long)id);
}

/* The jobs of a request, read whole. */
typedef struct jobs_in {
    engine_submit_req *reqs;
    engine_submit_res *res;
    char **mem;
    size_t n;
} jobs_in;

static void jobs_in_free(jobs_in *in)
{
    for (size_t i = 0; i < in->n; i++) free(in->mem[i]);
    free(in->mem);
    free(in->reqs);
    free(in->res);
}

/* Reads body.jobs; each job's tenant defaults to `tenant`.  False once
 * answered. */
static bool read_jobs(http_req *req, json_t *body, const principal *who, const char *tenant,
                      jobs_in *in)
{
    memset(in, 0, sizeof(*in));
    json_t *list = json_object_get(body, "jobs");
    if (!json_is_array(list) || json_array_size(list) == 0 ||
        json_array_size(list) > BATCH_JOBS_MAX) {
        reply_error(req, TENQ_EINVALID, "jobs", "jobs must be an array of 1 to %d jobs",
                    BATCH_JOBS_MAX);
        return false;
    }
    size_t n = json_array_size(list);
    in->reqs = xcalloc(n, sizeof(*in->reqs));
    in->res = xcalloc(n, sizeof(*in->res));
    in->mem = xcalloc(n, sizeof(*in->mem));
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_array_get(list, i);
        engine_err err = {0};
        char field[96];
        if (!json_is_object(o)) {
            snprintf(field, sizeof field, "jobs[%zu]", i);
            reply_error(req, TENQ_EINVALID, field, "each job is an object");
            in->n = i;
            jobs_in_free(in);
            return false;
        }
        if (!read_job(o, who, &in->reqs[i], &in->mem[i], &err)) {
            snprintf(field, sizeof field, "jobs[%zu]%s%s", i, err.field ? "." : "",
                     err.field ? err.field : "");
            reply_error(req, err.code, field, "%s", err.message);
            in->n = i + 1;
            jobs_in_free(in);
            return false;
        }
        if (!in->reqs[i].tenant) in->reqs[i].tenant = tenant;
    }
    in->n = n;
    return true;
}

static void reply_engine_refusal(http_req *req, const engine_err *err, size_t bad)
{
    char field[96];
    if (bad != SIZE_MAX) {
        snprintf(field, sizeof field, "jobs[%zu]%s%s", bad, err->field ? "." : "",
                 err->field ? err->field : "");
        reply_error(req, err->code, field, "%s", err->message);
    } else {
        reply_engine_err(req, err);
    }
}

/* 201 with the batch's id (under `key`) and its jobs' answers. */
static void reply_made(server *s, http_req *req, const rkey_ctx *k, const char *key, uint64_t id,
                       const jobs_in *in)
{
    srv_wake_first(s);
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_kint(&b, key, (long long)id);
    api_json_submitted(&b, in->res, in->n, false);
    jb_obj_end(&b);
    srv_request_key_reply(s, req, k, 201, &b, NULL);
}

static const char *const create_fields[] = {"tenant",     "jobs",     "on_complete",
                                            "on_success", "on_death", NULL};

void h_batch_create(server *s, http_req *req, const principal *who, const char **args)
{
    rkey_ctx k;
    if (!srv_request_key_begin(s, req, who, args, h_batch_create, &k)) return;
    json_t *body = req_body(req);
    if (!body) return;
    if (!json_is_object(body)) {
        reply_error(req, TENQ_EINVALID, NULL, "the body must be a JSON object");
        json_decref(body);
        return;
    }
    if (!req_only_fields(req, body, create_fields)) {
        json_decref(body);
        return;
    }
    json_t *list = json_object_get(body, "jobs");
    if (!json_is_array(list) || json_array_size(list) == 0 ||
        json_array_size(list) > BATCH_JOBS_MAX) {
        reply_error(req, TENQ_EINVALID, "jobs", "jobs must be an array of 1 to %d jobs",
                    BATCH_JOBS_MAX);
        json_decref(body);
        return;
    }
    const char *tenant = NULL;
    if (!req_str(req, body, "tenant", &tenant, false)) {
        json_decref(body);
        return;
    }
    if (who->role == ROLE_TENANT && who->tok) {
        if (tenant && strcmp(tenant, who->tok->tenant) != 0) {
            reply_error(req, TENQ_EFORBIDDEN, "tenant", "this token submits for tenant %s only",
                        who->tok->tenant);
            json_decref(body);
            return;
        }
        tenant = who->tok->tenant;
    }
    if (!tenant) {
        /* an admin may leave it to the jobs: the first one's */
        json_t *first = json_array_get(json_object_get(body, "jobs"), 0);
        tenant = json_string_value(json_object_get(first, "tenant"));
    }
    if (!tenant) {
        reply_error(req, TENQ_EINVALID, "tenant", "a batch needs a tenant");
        json_decref(body);
        return;
    }
    if (!req_name_ok(req, ENGINE_NAME, "tenant", tenant)) {
        json_decref(body);
        return;
    }
    engine_submit_req cbs[ENGINE_NCALLBACKS];
    char *cb_mem[ENGINE_NCALLBACKS] = {0};
    const engine_submit_req *cbp[ENGINE_NCALLBACKS] = {0};
    bool ok = true;
    for (int c = 0; c < ENGINE_NCALLBACKS && ok; c++) {
        const char *name = engine_callback_name(c);
        json_t *o = json_object_get(body, name);
        if (!o || json_is_null(o)) continue;
        char field[96];
        engine_err err = {0};
        if (!json_is_object(o)) {
            reply_error(req, TENQ_EINVALID, name, "%s must be a job's spec (an object)", name);
            ok = false;
        } else if (!read_job(o, who, &cbs[c], &cb_mem[c], &err)) {
            snprintf(field, sizeof field, "%s%s%s", name, err.field ? "." : "",
                     err.field ? err.field : "");
            reply_error(req, err.code, field, "%s", err.message);
            ok = false;
        } else if (cbs[c].tenant && strcmp(cbs[c].tenant, tenant) != 0) {
            snprintf(field, sizeof field, "%s.tenant", name);
            reply_error(req, TENQ_EINVALID, field, "a callback is a job of the batch's tenant");
            ok = false;
        } else {
            cbs[c].tenant = NULL;
            cbp[c] = &cbs[c];
        }
    }
    jobs_in in = {0};
    if (ok && read_jobs(req, body, who, tenant, &in)) {
        engine_err err = {0};
        size_t bad = SIZE_MAX;
        uint64_t id = 0;
        int64_t now = srv_now(s);
        if (admit_check(&s->admit, s->e, in.reqs, NULL, in.n, &err) != 0) {
            reply_engine_err(req, &err); /* nothing made */
        } else if (engine_batch_create(s->e, now, tenant, cbp, in.reqs, in.n, &id, in.res, &bad,
                                       &err) != 0) {
            reply_engine_refusal(req, &err, bad);
        } else {
            reply_made(s, req, &k, "id", id, &in);
        }
        jobs_in_free(&in);
    }
    for (int c = 0; c < ENGINE_NCALLBACKS; c++) free(cb_mem[c]);
    json_decref(body);
}

static const char *const add_fields[] = {"jobs", NULL};

void h_batch_add(server *s, http_req *req, const principal *who, const char **args)
{
    uint64_t id = req_path_id(req, args[0]);
    if (!id) return;
    rkey_ctx k;
    if (!srv_request_key_begin(s, req, who, args, h_batch_add, &k)) return;
    engine_batch_info x;
    if (!engine_batch_get(s->e, id, &x) || !batch_visible(who, x.tenant)) {
        reply_error(req, TENQ_ENOT_FOUND, "id", "no batch %llu", (unsigned long long)id);
        return;
    }
    if (x.closed_at) {
        reply_closed(req, id);
        return;
    }
    json_t *body = req_body(req);
    if (!body) return;
    if (!json_is_object(body)) {
        reply_error(req, TENQ_EINVALID, NULL, "the body must be a JSON object");
        json_decref(body);
        return;
    }
    jobs_in in;
    if (req_only_fields(req, body, add_fields) && read_jobs(req, body, who, x.tenant, &in)) {
        engine_err err = {0};
        size_t bad = SIZE_MAX;
        int rc = admit_check(&s->admit, s->e, in.reqs, NULL, in.n, &err);
        if (!rc)
            rc = engine_batch_add(s->e, srv_now(s), id, NULL, in.reqs, in.n, in.res, &bad, &err);
        if (rc == TENQ_EQUOTA_EXCEEDED || rc == TENQ_EOVERLOADED) {
            reply_engine_err(req, &err); /* nothing made */
        } else if (rc == TENQ_ECONFLICT && err.field && !strcmp(err.field, "batch_closed")) {
            reply_closed(req, id);
        } else if (rc) {
            reply_engine_refusal(req, &err, bad);
        } else {
            reply_made(s, req, &k, "batch", id, &in);
        }
        jobs_in_free(&in);
    }
    json_decref(body);
}

void h_batch_get(server *s, http_req *req, const principal *who, const char **args)
{
    uint64_t id = req_path_id(req, args[0]);
    if (!id) return;
    engine_batch_info x;
    if (!engine_batch_get(s->e, id, &x) || !batch_visible(who, x.tenant)) {
        reply_error(req, TENQ_ENOT_FOUND, "id", "no batch %llu", (unsigned long long)id);
        return;
    }
    jbuf b;
    jb_init(&b);
    json_batch(&b, &x, who->hide_data);
    reply_json(req, 200, &b);
}

void h_batches(server *s, http_req *req, const principal *who, const char **args)
{
    (void)args;
    char tbuf[QUERY_NAME_BUF];
    const char *tenant;
    if (!req_query_name(req, "tenant", ENGINE_NAME, tbuf, &tenant)) return;
    if (who->role == ROLE_TENANT && who->tok) {
        if (tenant && strcmp(tenant, who->tok->tenant) != 0) {
            reply_error(req, TENQ_EFORBIDDEN, "tenant", "this token sees tenant %s only",
                        who->tok->tenant);
            return;
        }
        tenant = who->tok->tenant;
    }
    long long limit, before;
    if (!req_query_num(req, "limit", 100, 1, BATCH_LIST_MAX, &limit) ||
        !req_query_num(req, "before", 0, 0, INT64_MAX, &before))
        return;
    uint64_t *ids = xcalloc((size_t)limit, sizeof(*ids));
    size_t n = engine_batch_list(s->e, tenant, (uint64_t)before, (size_t)limit, ids);
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_key(&b, "batches");
    jb_arr(&b);
    for (size_t i = 0; i < n; i++) {
        engine_batch_info x;
        if (engine_batch_get(s->e, ids[i], &x)) json_batch(&b, &x, who->hide_data);
    }
    jb_arr_end(&b);
    jb_key(&b, "next_before");
    if (n == (size_t)limit)
        jb_int(&b, (long long)ids[n - 1]);
    else
        jb_null(&b);
    jb_obj_end(&b);
    free(ids);
    reply_json(req, 200, &b);
}
