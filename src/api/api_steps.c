// SPDX-License-Identifier: Apache-2.0
/* A job's durable steps (engine/steps.c): POST /v1/jobs/{id}/steps, where
 * the worker holding the job's lease stores a step or parks the job (a
 * sleep, a wait for an event, a child job), and GET /v1/jobs/{id}/steps.
 *
 * A step is answered once committed: a handler goes on past it only when
 * its result is durable.  A read of the steps waits for everything
 * uncommitted before it (a worker reading its job's steps right after its
 * lease, which may leave before the commit of the event that woke the job,
 * reads them whole) and reads the rows: results are the store's alone. */
#include "internal.h"

/* ---- POST /v1/jobs/{id}/steps ---------------------------------------------------- */

static const char *const step_fields[] = {"token",       "name",  "kind",       "result", "until",
                                          "duration_ms", "event", "timeout_ms", "job",    NULL};

/* The fields each kind takes besides token, name and kind. */
static const char *const kind_fields[ENGINE_NSTEP_KINDS][3] = {
    [ENGINE_STEP_RUN] = {"result", NULL, NULL},
    [ENGINE_STEP_SLEEP] = {"until", "duration_ms", NULL},
    [ENGINE_STEP_EVENT] = {"event", "timeout_ms", NULL},
    [ENGINE_STEP_CHILD] = {"job", NULL, NULL},
};

/* A field given that its kind does not take: 400 naming it. */
static bool fields_of_kind(http_req *req, json_t *body, engine_step_kind kind)
{
    for (size_t i = 3; step_fields[i]; i++) {
        const char *f = step_fields[i];
        json_t *v = json_object_get(body, f);
        if (!v || json_is_null(v)) continue;
        bool ok = false;
        for (size_t k = 0; k < 3 && kind_fields[kind][k]; k++)
            ok |= !strcmp(kind_fields[kind][k], f);
        if (!ok) {
            reply_error(req, TENQ_EINVALID, f, "%s is not a field of a step of kind %s", f,
                        engine_step_kind_name(kind));
            return false;
        }
    }
    return true;
}

static void write_answer(jbuf *b, uint64_t id, const char *name, engine_step_kind kind,
                         const engine_step_res *res)
{
    jb_obj(b);
    jb_kint(b, "id", (long long)id);
    jb_kstr(b, "name", name);
    jb_kstr(b, "kind", engine_step_kind_name(kind));
    jb_kint(b, "pos", res->pos);
    jb_kbool(b, "duplicate", res->duplicate);
    jb_kbool(b, "parked", res->parked);
    jb_kstr(b, "state", engine_state_name(res->state));
    if (res->parked && res->state == ENGINE_SCHEDULED) jb_kint(b, "run_at", res->run_at);
    if (kind == ENGINE_STEP_EVENT && !res->duplicate) {
        jb_kbool(b, "done", res->done);
        if (res->done) jb_kraw(b, "result", res->result ? res->result : "null");
    }
    if (res->child) jb_kint(b, "child", (long long)res->child);
    jb_obj_end(b);
}

void h_step(server *s, http_req *req, const principal *who, const char **args)
{
    uint64_t id = req_path_id(req, args[0]);
    if (!id) return;
    engine_job *j = engine_find(s->e, id);
    if (j && !auth_may_see_job(who, engine_job_tenant(j), engine_job_queue(j))) {
        reply_error(req, TENQ_ENOT_FOUND, "id", "no job %llu", (unsigned long long)id);
        return;
    }
    json_t *body = req_body(req);
    if (!body) return;
    long long tok = 0, until = 0, duration = 0, timeout = 0;
    bool has_tok = false, has_until = false, has_duration = false, has_timeout = false;
    const char *name = NULL, *kind_word = NULL, *event = NULL;
    char *result = NULL, *child_args = NULL;
    engine_step_req r;
    memset(&r, 0, sizeof r);
    int64_t now = srv_now(s);
    if (!req_only_fields(req, body, step_fields) ||
        !req_int(req, body, "token", &tok, &has_tok, 1, INT64_MAX) ||
        !req_str(req, body, "name", &name, true) ||
        !req_str(req, body, "kind", &kind_word, false) ||
        !req_int(req, body, "until", &until, &has_until, 0, INT64_MAX) ||
        !req_int(req, body, "duration_ms", &duration, &has_duration, 0, ENGINE_RUN_AT_HORIZON_MS) ||
        !req_str(req, body, "event", &event, false) ||
        !req_int(req, body, "timeout_ms", &timeout, &has_timeout, 0, ENGINE_RUN_AT_HORIZON_MS))
        goto out;
    if (!has_tok) {
        reply_error(req, TENQ_EINVALID, "token", "token is required");
        goto out;
    }
    int kind = kind_word ? engine_step_kind_parse(kind_word) : ENGINE_STEP_RUN;
    if (kind < 0) {
        reply_error(req, TENQ_EINVALID, "kind", "kind must be step, sleep, event or child");
        goto out;
    }
    if (!fields_of_kind(req, body, (engine_step_kind)kind)) goto out;
    r.name = name;
    r.kind = (engine_step_kind)kind;
    switch (r.kind) {
    case ENGINE_STEP_RUN: {
        json_t *v = json_object_get(body, "result");
        if (v) {
            result = canonical_json(v);
            r.result = result;
            r.result_len = (uint32_t)strlen(result);
        }
        break;
    }
    case ENGINE_STEP_SLEEP:
        if (has_until == has_duration) {
            reply_error(req, TENQ_EINVALID, "until",
                        "a sleep takes until (ms since the epoch) or duration_ms, one of them");
            goto out;
        }
        r.until = has_until ? until : now + duration;
        break;
    case ENGINE_STEP_EVENT:
        if (!event) {
            reply_error(req, TENQ_EINVALID, "event", "event (the key to wait for) is required");
            goto out;
        }
        r.event = event;
        r.timeout_ms = timeout;
        break;
    case ENGINE_STEP_CHILD: {
        json_t *c = json_object_get(body, "job");
        engine_err err;
        if (!json_is_object(c)) {
            reply_error(req, TENQ_EINVALID, "job", "job (the child to submit) must be an object");
            goto out;
        }
        if (!read_job(c, who, &r.child, &child_args, &err)) {
            reply_error(req, err.code, "job", "job.%s: %s", err.field ? err.field : "",
                        err.message);
            goto out;
        }
        if (j && r.child.tenant && strcmp(r.child.tenant, engine_job_tenant(j)) != 0) {
            reply_error(req, TENQ_EINVALID, "job",
                        "job.tenant: a child job is its parent's tenant's (%s)",
                        engine_job_tenant(j));
            goto out;
        }
        if (!r.child.queue || !r.child.type) {
            reply_error(req, TENQ_EINVALID, "job", "job.%s is required",
                        r.child.queue ? "type" : "queue");
            goto out;
        }
        if (j) {
            /* a child counts against the quotas and the memory budget as any submit */
            engine_submit_req q = r.child;
            q.tenant = engine_job_tenant(j);
            if (admit_check(&s->admit, s->e, &q, NULL, 1, &err) != 0) {
                reply_engine_err(req, &err);
                goto out;
            }
        }
        break;
    }
    default: break;
    }
    if (!j) { /* not in hand: a stale token (or no such job), as the store says */
        late_refuse_call(s, req, who, id, (uint64_t)tok);
        goto out;
    }
    engine_step_res res;
    engine_err err;
    if (engine_step(s->e, now, id, (uint64_t)tok, &r, &res, &err) != 0) {
        reply_engine_err(req, &err);
        goto out;
    }
    jbuf b;
    jb_init(&b);
    write_answer(&b, id, name, r.kind, &res);
    srv_commit_reply(s, req, 200, &b);
out:
    free(result);
    free(child_args);
    json_decref(body);
}

/* ---- GET /v1/jobs/{id}/steps ------------------------------------------------------ */

typedef struct steps_ctx {
    server *srv;
    http_req *req; /* NULL once the client left */
    principal who;
    uint64_t id;
} steps_ctx;

static void steps_abort(http_req *req)
{
    steps_ctx *c = req->user;
    c->req = NULL;
}

static void time_or_null(jbuf *b, const char *k, int64_t v)
{
    jb_key(b, k);
    if (v)
        jb_int(b, v);
    else
        jb_null(b);
}

void api_json_step(jbuf *b, const engine_step_info *x, bool show_token, bool with_result)
{
    jb_obj(b);
    jb_kint(b, "pos", x->pos);
    jb_kstr(b, "name", x->name);
    jb_kstr(b, "kind", engine_step_kind_name(x->kind));
    jb_kbool(b, "done", x->done);
    if (with_result) jb_kraw(b, "result", x->result);
    jb_kint(b, "size", x->size);
    jb_kstr(b, "error", x->error);
    jb_kint(b, "attempt", x->attempt);
    if (show_token) jb_kint(b, "token", (long long)x->token);
    jb_kint(b, "created_at", x->created_at);
    time_or_null(b, "finished_at", x->finished_at);
    if (x->kind == ENGINE_STEP_SLEEP) jb_kint(b, "until", x->until);
    if (x->kind == ENGINE_STEP_EVENT) {
        jb_kstr(b, "event", x->event);
        time_or_null(b, "until", x->until);
    }
    if (x->kind == ENGINE_STEP_CHILD) {
        jb_kint(b, "child", (long long)x->child);
        jb_kstr(b, "child_state",
                x->child_state >= 0 ? engine_state_name((engine_state)x->child_state) : NULL);
    }
    jb_obj_end(b);
}

static void on_steps(void *ctx, int rc, const store_steps *st)
{
    steps_ctx *c = ctx;
    http_req *req = c->req;
    server *s = c->srv;
    if (!req) {
        free(c);
        return;
    }
    req->on_abort = NULL;
    req->user = NULL;
    c->req = NULL;
    if (rc != 0) {
        reply_error(req, rc, NULL, "reading the steps failed: %s", store_errmsg(s->st));
        free(c);
        return;
    }
    engine_job *j = engine_find(s->e, c->id);
    engine_job_info in;
    if (j) engine_job_get(j, &in);
    const engine_job_info *job = j ? &in : st->job;
    if (!job || !auth_may_see_job(&c->who, job->tenant, job->queue)) {
        reply_error(req, TENQ_ENOT_FOUND, "id", "no job %llu", (unsigned long long)c->id);
        free(c);
        return;
    }
    bool show_token = auth_shows_token(&c->who);
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_kint(&b, "id", (long long)job->id);
    jb_kstr(&b, "state", engine_state_name(job->state));
    jb_key(&b, "steps");
    jb_arr(&b);
    for (size_t i = 0; i < st->n; i++) /* a viewer that hides data sees no result */
        api_json_step(&b, &st->v[i], show_token, !c->who.hide_data);
    jb_arr_end(&b);
    jb_obj_end(&b);
    reply_json(req, 200, &b);
    free(c);
}

static void steps_after_commit(server *s, http_req *req, void *ctx, int rc)
{
    steps_ctx *c = ctx;
    if (!req || rc) {
        free(c);
        return;
    }
    c->req = req;
    req->user = c;
    req->on_abort = steps_abort;
    store_get_steps(s->st, c->id, on_steps, c);
}

void h_job_steps(server *s, http_req *req, const principal *who, const char **args)
{
    uint64_t id = req_path_id(req, args[0]);
    if (!id) return;
    engine_job *j = engine_find(s->e, id);
    if (j && !auth_may_see_job(who, engine_job_tenant(j), engine_job_queue(j))) {
        reply_error(req, TENQ_ENOT_FOUND, "id", "no job %llu", (unsigned long long)id);
        return;
    }
    steps_ctx *c = xcalloc(1, sizeof(*c));
    c->srv = s;
    c->who = *who;
    c->id = id;
    srv_after_commit(s, req, steps_after_commit, c);
}
