// SPDX-License-Identifier: Apache-2.0
/* Jobs: submit, read, list, wait, cancel. */
#include "admit.h"
#include "auth.h"
#include "clock.h"
#include "commit.h"
#include "handlers.h"
#include "http.h"
#include "jbuf.h"
#include "job_json.h"
#include "job_reply.h"
#include "read_ctx.h"
#include "reply.h"
#include "request.h"
#include "request_keys.h"
#include "request_read.h"
#include "server.h"
#include "submit_json.h"
#include "waiters.h"

#include "base/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* A read from the store on behalf of a request: a list, a wait, a cancel. */
typedef struct job_read {
    read_ctx held;
    server *srv;
    principal who;
    uint64_t id;
    uint64_t committed_before; /* wait: read again if a commit landed meanwhile */
    int64_t timeout_ms;
    uint32_t limit;
} job_read;

static job_read *job_read_new(server *s, http_req *req, const principal *who)
{
    job_read *c = xcalloc(1, sizeof(*c));
    c->srv = s;
    c->who = *who;
    read_ctx_hold(&c->held, req);
    return c;
}

/* ---- submit ------------------------------------------------------------------------- */

#define HAND_OVER_JOBS 2000

/* True, with *r, when a batch's answer is a range (rkey_range). */
static bool answer_range(const engine_submit_res *res, size_t n, bool columns, rkey_range *r)
{
    if (n < 2 || res[1].id <= res[0].id) return false;
    *r = (rkey_range){res[0].id, res[1].id - res[0].id, n, res[0].state, columns};
    for (size_t i = 0; i < n; i++)
        if (res[i].code || !res[i].created || res[i].duplicate || res[i].merged ||
            res[i].replayed || res[i].state != r->state || res[i].id != r->first + i * r->step)
            return false;
    return true;
}

/* Submits the jobs `in` read (in->ok[i] false: in->res[i] holds the job's
 * refusal already; ok NULL: every job was read) and replies: the one job's
 * answer, or {"jobs": [...]} (or {"columns": {...}}) for a batch. */
static void submit_and_reply(server *s, http_req *req, const rkey_ctx *k, const submit_in *in)
{
    const engine_submit_req *reqs = in->reqs;
    const bool *ok = in->ok;
    size_t n = in->n;
    bool batch = in->batch;
    engine_submit_res *res = in->res;
    int64_t now = srv_now(s);
    bool any_created = false;
    engine_err refusal = {0};
    if (admit_check(&s->admit, s->e, reqs, ok, n, &refusal)) { /* nothing made */
        reply_engine_err(req, &refusal);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        /* a big batch goes to the writer in parts, written while the rest
         * is submitted (and committed with it: ARCHITECTURE.md) */
        if (i && i % HAND_OVER_JOBS == 0) srv_hand_over(s);
        if (ok && !ok[i]) continue;
        engine_submit_at(s->e, now, &reqs[i], res, i); /* depends_on may name res[0..i) */
        any_created |= res[i].created;
    }
    srv_wake_first(s);
    if (!batch && res[0].code) { /* one job: never handed over in parts */
        reply_engine_err(req, &res[0].err);
        return;
    }
    jbuf b;
    jb_init(&b);
    if (batch) {
        jb_obj(&b);
        api_json_submitted(&b, res, n, in->columns);
        jb_obj_end(&b);
    } else {
        srv_write_submit_result(&b, &res[0]);
    }
    rkey_range range;
    bool packed = batch && k->key && answer_range(res, n, in->columns, &range);
    srv_request_key_reply(s, req, k, any_created ? 201 : 200, &b, packed ? &range : NULL);
    srv_end_chain(s);
}

void h_submit(server *s, http_req *req, const principal *who, const char **args)
{
    rkey_ctx k;
    if (!srv_request_key_begin(s, req, who, args, h_submit, &k)) return;
    submit_in in;
    /* the usual body is read in place; jansson reads the rest and words
     * every refusal */
    if (submit_read_text(req->body, req->body_len, s->cfg.max_job_bytes, who, &in)) {
        submit_and_reply(s, req, &k, &in);
        submit_in_free(&in);
        return;
    }
    json_t *body = req_body(req);
    if (!body) return;
    const char *other;
    switch (submit_read_tree(body, req->body_len, s->cfg.max_job_bytes, who, &in, &other)) {
    case SUBMIT_TOO_LARGE:
        reply_error(
            req, TENQ_ETOO_LARGE, NULL,
            "a single job may be at most %lld bytes; send large batches as {\"jobs\": [...]}",
            s->cfg.max_job_bytes);
        break;
    case SUBMIT_NOT_ONLY_JOBS:
        reply_error(req, TENQ_EINVALID, other,
                    "a batch holds only \"jobs\" and \"columns\" (found \"%s\")", other);
        break;
    case SUBMIT_BAD_JOBS:
        reply_error(req, TENQ_EINVALID, "jobs", "jobs must be an array of 1 to 10,000 jobs");
        break;
    case SUBMIT_BAD_COLUMNS:
        reply_error(req, TENQ_EINVALID, "columns", "columns must be true or false");
        break;
    case SUBMIT_READ:
        submit_and_reply(s, req, &k, &in);
        submit_in_free(&in);
        break;
    }
    json_decref(body);
}

/* ---- reading a job ---------------------------------------------------------------------- */

void h_get_job(server *s, http_req *req, const principal *who, const char **args)
{
    uint64_t id = req_path_id(req, args[0]);
    if (id) srv_reply_job(s, req, who, id);
}

/* ---- listing ------------------------------------------------------------------------------ */

static void on_list_rows(void *ctx, int rc, const store_rows *rows)
{
    job_read *c = ctx;
    http_req *req = read_ctx_take(&c->held);
    server *s = c->srv;
    if (req) {
        if (rc != 0) {
            reply_error(req, rc, NULL, "listing failed: %s", store_errmsg(s->st));
        } else {
            jbuf b;
            jb_init(&b);
            jb_obj(&b);
            jb_key(&b, "jobs");
            jb_arr(&b);
            uint64_t last = 0;
            for (size_t i = 0; i < rows->n; i++) {
                const engine_job_info *in = &rows->jobs[i];
                last = in->id;
                if (!auth_may_see_job(&c->who, in->tenant, in->queue)) continue;
                /* an unfinished job's freshest state is in memory */
                engine_job *j = engine_find(s->e, in->id);
                engine_job_info live;
                if (j) {
                    engine_job_get(j, &live);
                    if (live.args_missing) { /* out of memory: the row has them */
                        live.args = in->args;
                        live.args_len = in->args_len;
                    }
                    in = &live;
                }
                api_json_job(&b, in, api_job_view(&c->who), NULL, 0);
            }
            jb_arr_end(&b);
            jb_key(&b, "next");
            if (rows->n == c->limit && last)
                jb_uint(&b, last);
            else
                jb_null(&b);
            jb_obj_end(&b);
            reply_json(req, 200, &b);
        }
    }
    free(c);
}

#define ARGS_SEARCH_MAX 1024 /* the text GET /v1/jobs?args= looks for */

void h_list_jobs(server *s, http_req *req, const principal *who, const char **args)
{
    (void)args;
    char tenant[QUERY_NAME_BUF], queue[QUERY_NAME_BUF], type[QUERY_NAME_BUF], key[QUERY_NAME_BUF];
    char state[32], argtext[ARGS_SEARCH_MAX + 2];
    store_job_query q = {0};
    q.state = -1;
    if (!req_query_name(req, "tenant", ENGINE_NAME, tenant, &q.tenant) ||
        !req_query_name(req, "queue", ENGINE_NAME, queue, &q.queue) ||
        !req_query_name(req, "type", ENGINE_TYPE, type, &q.type) ||
        !req_query_name(req, "key", ENGINE_KEY, key, &q.key))
        return;
    q.args = http_query_get(req, "args", argtext, sizeof argtext);
    if (q.args && strlen(q.args) > ARGS_SEARCH_MAX) { /* cut to fit: it would find more */
        reply_error(req, TENQ_EINVALID, "args", "args is a text of at most %d bytes",
                    ARGS_SEARCH_MAX);
        return;
    }
    if (q.args && !*q.args) q.args = NULL;
    if (q.args && who->hide_data) {
        /* a search of args would tell what this token may not see */
        reply_error(req, TENQ_EFORBIDDEN, "args", "this token does not see jobs' data");
        return;
    }
    if (http_query_get(req, "state", state, sizeof state)) {
        q.state = engine_state_parse(state);
        if (q.state < 0) {
            reply_error(req, TENQ_EINVALID, "state", "unknown state %s", state);
            return;
        }
    }
    long long after, lim;
    if (!req_query_num(req, "after_id", 0, 1, INT64_MAX, &after)) return;
    q.before_id = (uint64_t)after;
    if (!req_query_num(req, "limit", 50, 1, 1000, &lim)) return;
    q.limit = (uint32_t)lim;
    if (who->role == ROLE_TENANT && who->tok) {
        if (q.tenant && strcmp(q.tenant, who->tok->tenant) != 0) {
            reply_error(req, TENQ_EFORBIDDEN, "tenant", "a tenant token lists only its own jobs");
            return;
        }
        q.tenant = who->tok->tenant;
    }
    job_read *c = job_read_new(s, req, who);
    c->limit = q.limit;
    store_list_jobs(s->st, &q, on_list_rows, c);
}

/* ---- waiting ------------------------------------------------------------------------------ */

static bool is_final(engine_state st)
{
    return engine_state_finished(st) || st == ENGINE_DEAD;
}

static void wait_register(server *s, http_req *req, const principal *who, uint64_t id,
                          int64_t timeout_ms)
{
    job_waiter *w = xcalloc(1, sizeof(*w));
    w->req = req;
    w->id = id;
    w->who = *who;
    srv_job_waiter_add(s, w, timeout_ms);
}

static void on_wait_rows(void *ctx, int rc, const store_rows *rows)
{
    job_read *c = ctx;
    server *s = c->srv;
    http_req *req = read_ctx_take(&c->held);
    if (!req) {
        free(c);
        return;
    }
    if (rc != 0) {
        reply_error(req, rc, NULL, "reading the job failed: %s", store_errmsg(s->st));
    } else if (rows->n != 1 ||
               !auth_may_see_job(&c->who, rows->jobs[0].tenant, rows->jobs[0].queue)) {
        reply_error(req, TENQ_ENOT_FOUND, "id", "no job %llu", (unsigned long long)c->id);
    } else if (is_final(rows->jobs[0].state) || c->timeout_ms == 0) {
        jbuf b;
        jb_init(&b);
        api_json_job(&b, &rows->jobs[0], api_job_view(&c->who), NULL, 0);
        reply_json(req, 200, &b);
    } else if (engine_find(s->e, c->id)) {
        wait_register(s, req, &c->who, c->id, c->timeout_ms);
    } else if (store_committed_seq(s->st) != c->committed_before) {
        /* a commit landed while we read: it may hold the final state */
        c->committed_before = store_committed_seq(s->st);
        read_ctx_hold(&c->held, req);
        store_get_job(s->st, c->id, on_wait_rows, c);
        return;
    } else {
        /* its final state is on the way to the store */
        wait_register(s, req, &c->who, c->id, c->timeout_ms);
    }
    free(c);
}

void h_wait_job(server *s, http_req *req, const principal *who, const char **args)
{
    uint64_t id = req_path_id(req, args[0]);
    if (!id) return;
    long long timeout;
    if (!req_query_num(req, "timeout_ms", 30000, 0, 86400000, &timeout)) return;
    if (timeout > s->cfg.max_wait_ms) timeout = s->cfg.max_wait_ms;
    engine_job *j = engine_find(s->e, id);
    if (j) {
        engine_job_info in;
        engine_job_get(j, &in);
        if (!auth_may_see_job(who, in.tenant, in.queue)) {
            reply_error(req, TENQ_ENOT_FOUND, "id", "no job %llu", (unsigned long long)id);
            return;
        }
        if (is_final(in.state) || timeout == 0) {
            srv_reply_job(s, req, who, id);
            return;
        }
        wait_register(s, req, who, id, timeout);
        return;
    }
    job_read *c = job_read_new(s, req, who);
    c->id = id;
    c->timeout_ms = timeout;
    c->committed_before = store_committed_seq(s->st);
    store_get_job(s->st, id, on_wait_rows, c);
}

/* ---- cancel ------------------------------------------------------------------------------- */

static void on_cancel_rows(void *ctx, int rc, const store_rows *rows)
{
    job_read *c = ctx;
    http_req *req = read_ctx_take(&c->held);
    if (req) {
        if (rc != 0)
            reply_error(req, rc, NULL, "reading the job failed");
        else if (rows->n != 1 ||
                 !auth_may_see_job(&c->who, rows->jobs[0].tenant, rows->jobs[0].queue))
            reply_error(req, TENQ_ENOT_FOUND, "id", "no job %llu", (unsigned long long)c->id);
        else
            reply_error(req, TENQ_ECONFLICT, "state", "job %llu is %s and cannot be cancelled",
                        (unsigned long long)c->id, engine_state_name(rows->jobs[0].state));
    }
    free(c);
}

void h_cancel(server *s, http_req *req, const principal *who, const char **args)
{
    uint64_t id = req_path_id(req, args[0]);
    if (!id) return;
    engine_job *j = engine_find(s->e, id);
    if (!j) {
        job_read *c = job_read_new(s, req, who);
        c->id = id;
        store_get_job(s->st, id, on_cancel_rows, c);
        return;
    }
    if (!auth_may_see_job(who, engine_job_tenant(j), engine_job_queue(j))) {
        reply_error(req, TENQ_ENOT_FOUND, "id", "no job %llu", (unsigned long long)id);
        return;
    }
    engine_state st;
    engine_err err;
    if (engine_cancel(s->e, srv_now(s), id, &st, &err) != 0) {
        reply_engine_err(req, &err);
        return;
    }
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_kint(&b, "id", (long long)id);
    jb_kstr(&b, "state", engine_state_name(st));
    jb_kbool(&b, "cancel_requested", st != ENGINE_CANCELLED);
    jb_obj_end(&b);
    srv_commit_reply(s, req, 200, &b);
}
