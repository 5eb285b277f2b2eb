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
#include "admit.h"
#include "auth.h"
#include "clock.h"
#include "commit.h"
#include "handlers.h"
#include "jbuf.h"
#include "job_reply.h"
#include "jobread.h"
#include "outcome_late.h"
#include "read_ctx.h"
#include "reply.h"
#include "request.h"
#include "request_read.h"
#include "server.h"

#include "base/xalloc.h"

#include <stdlib.h>
#include <string.h>

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

/* engine_errf, and the code for a return */
#define REFUSE(err, code, ...) (engine_errf((err), (code), __VA_ARGS__), (code))

/* A field given that its kind does not take: 400 naming it. */
static int fields_of_kind(json_t *body, engine_step_kind kind, engine_err *err)
{
    for (size_t i = 3; step_fields[i]; i++) {
        const char *f = step_fields[i];
        json_t *v = json_object_get(body, f);
        if (!v || json_is_null(v)) continue;
        bool ok = false;
        for (size_t k = 0; k < 3 && kind_fields[kind][k]; k++)
            ok |= !strcmp(kind_fields[kind][k], f);
        if (!ok)
            return REFUSE(err, TENQ_EINVALID, f, "%s is not a field of a step of kind %s", f,
                          engine_step_kind_name(kind));
    }
    return 0;
}

/* A step as a request states it (its strings are the JSON object's, the
 * result and the child's args its own). */
typedef struct step_in {
    engine_step_req r;
    uint64_t token;
    char *result, *child_args;
} step_in;

static void step_in_free(step_in *in)
{
    free(in->result);
    free(in->child_args);
}

/* Reads a step of job j (NULL: not in hand) from o, the body of POST
 * /v1/jobs/{id}/steps or an item of POST /v1/steps (whose "id" skip names);
 * 0, or the refusal in err.  A child is checked against the quotas and the
 * memory budget as any submit. */
static int step_read(server *s, const principal *who, json_t *o, engine_job *j, int64_t now,
                     const char *const *fields, step_in *in, engine_err *err)
{
    memset(in, 0, sizeof(*in));
    long long tok = 0, until = 0, duration = 0, timeout = 0;
    bool has_tok = false, has_until = false, has_duration = false, has_timeout = false;
    const char *name = NULL, *kind_word = NULL, *event = NULL;
    const char *unknown = obj_unknown_field(o, fields);
    if (unknown) return REFUSE(err, TENQ_EINVALID, unknown, "unknown field \"%s\"", unknown);
    int rc;
    if ((rc = obj_int(o, "token", 1, INT64_MAX, &tok, &has_tok, err)) ||
        (rc = obj_str(o, "name", true, &name, err)) ||
        (rc = obj_str(o, "kind", false, &kind_word, err)) ||
        (rc = obj_int(o, "until", 0, INT64_MAX, &until, &has_until, err)) ||
        (rc = obj_int(o, "duration_ms", 0, ENGINE_RUN_AT_HORIZON_MS, &duration, &has_duration,
                      err)) ||
        (rc = obj_str(o, "event", false, &event, err)) ||
        (rc = obj_int(o, "timeout_ms", 0, ENGINE_RUN_AT_HORIZON_MS, &timeout, &has_timeout, err)))
        return rc;
    if (!has_tok) return REFUSE(err, TENQ_EINVALID, "token", "token is required");
    int kind = kind_word ? engine_step_kind_parse(kind_word) : ENGINE_STEP_RUN;
    if (kind < 0)
        return REFUSE(err, TENQ_EINVALID, "kind", "kind must be step, sleep, event or child");
    if ((rc = fields_of_kind(o, (engine_step_kind)kind, err))) return rc;
    engine_step_req *r = &in->r;
    in->token = (uint64_t)tok;
    r->name = name;
    r->kind = (engine_step_kind)kind;
    switch (r->kind) {
    case ENGINE_STEP_RUN: {
        json_t *v = json_object_get(o, "result");
        if (v) {
            in->result = canonical_json(v);
            r->result = in->result;
            r->result_len = (uint32_t)strlen(in->result);
        }
        break;
    }
    case ENGINE_STEP_SLEEP:
        if (has_until == has_duration)
            return REFUSE(err, TENQ_EINVALID, "until",
                          "a sleep takes until (ms since the epoch) or duration_ms, one of "
                          "them");
        r->until = has_until ? until : now + duration;
        break;
    case ENGINE_STEP_EVENT:
        if (!event)
            return REFUSE(err, TENQ_EINVALID, "event", "event (the key to wait for) is required");
        r->event = event;
        r->timeout_ms = timeout;
        break;
    case ENGINE_STEP_CHILD: {
        json_t *c = json_object_get(o, "job");
        if (!json_is_object(c))
            return REFUSE(err, TENQ_EINVALID, "job", "job (the child to submit) must be an object");
        engine_err jerr;
        if (!read_job(c, who, &r->child, &in->child_args, &jerr))
            return REFUSE(err, jerr.code, "job", "job.%s: %s", jerr.field ? jerr.field : "",
                          jerr.message);
        if (j && r->child.tenant && strcmp(r->child.tenant, engine_job_tenant(j)) != 0)
            return REFUSE(err, TENQ_EINVALID, "job",
                          "job.tenant: a child job is its parent's tenant's (%s)",
                          engine_job_tenant(j));
        if (!r->child.queue || !r->child.type)
            return REFUSE(err, TENQ_EINVALID, "job", "job.%s is required",
                          r->child.queue ? "type" : "queue");
        if (j) {
            /* a child counts against the quotas and the memory budget as any submit */
            engine_submit_req q = r->child;
            q.tenant = engine_job_tenant(j);
            if ((rc = admit_check(&s->admit, s->e, &q, NULL, 1, err))) return rc;
        }
        break;
    }
    default: break;
    }
    return 0;
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
    uint64_t id = srv_job_path_id(s, req, who, args[0]);
    if (!id) return;
    engine_job *j = engine_find(s->e, id);
    json_t *body = req_body(req);
    if (!body) return;
    step_in in;
    engine_err err;
    engine_step_res res;
    if (step_read(s, who, body, j, srv_now(s), step_fields, &in, &err) != 0)
        reply_engine_err(req, &err);
    else if (!j) /* not in hand: a stale token (or no such job), as the store says */
        late_refuse_call(s, req, who, id, in.token);
    else if (engine_step(s->e, srv_now(s), id, in.token, &in.r, &res, &err) != 0)
        reply_engine_err(req, &err);
    else {
        jbuf b;
        jb_init(&b);
        write_answer(&b, id, in.r.name, in.r.kind, &res);
        srv_commit_reply(s, req, 200, &b);
    }
    step_in_free(&in);
    json_decref(body);
}

/* ---- POST /v1/steps: the steps of many jobs in one request ------------------------ */

static const char *const batch_item_fields[] = {"id",         "token", "name",        "kind",
                                                "result",     "until", "duration_ms", "event",
                                                "timeout_ms", "job",   NULL};

static void item_error(jbuf *b, uint64_t id, const char *name, const engine_err *err)
{
    jb_obj(b);
    if (id) jb_kint(b, "id", (long long)id);
    if (name) jb_kstr(b, "name", name);
    jb_key(b, "error");
    jb_obj(b);
    jb_kstr(b, "code", tenq_err_word(err->code));
    jb_kstr(b, "message", err->message);
    if (err->field) jb_kstr(b, "field", err->field);
    jb_obj_end(b);
    jb_obj_end(b);
}

/* 1 to 10,000 steps, each with its job's "id", stored (or parking their
 * jobs) in order, each answered on its own as POST /v1/jobs/{id}/steps
 * would answer it (a refusal as {"id", "name", "error"}); the answer comes
 * once they are committed, in one commit with whatever else is in it.  A
 * job not in hand is refused 409 on "token" (the single request reads the
 * store to tell a stale token from no job). */
void h_steps_batch(server *s, http_req *req, const principal *who, const char **args)
{
    (void)args;
    json_t *body = req_body(req);
    if (!body) return;
    static const char *const fields[] = {"steps", NULL};
    json_t *list = json_object_get(body, "steps");
    if (!req_only_fields(req, body, fields)) goto out;
    if (!json_is_array(list) || json_array_size(list) < 1 ||
        json_array_size(list) > SUBMIT_BATCH_MAX) {
        reply_error(req, TENQ_EINVALID, "steps", "steps must be a list of 1 to %d steps",
                    SUBMIT_BATCH_MAX);
        goto out;
    }
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_key(&b, "results");
    jb_arr(&b);
    int64_t now = srv_now(s);
    size_t i;
    json_t *o;
    json_array_foreach(list, i, o)
    {
        engine_err err;
        long long id = 0;
        bool has_id = false;
        if (!json_is_object(o)) {
            engine_errf(&err, TENQ_EINVALID, "steps", "steps[%zu] is not an object", i);
            item_error(&b, 0, NULL, &err);
            continue;
        }
        const char *name = json_string_value(json_object_get(o, "name"));
        if (obj_int(o, "id", 1, INT64_MAX, &id, &has_id, &err) != 0 || !has_id) {
            if (!has_id) engine_errf(&err, TENQ_EINVALID, "id", "id (the job's) is required");
            item_error(&b, 0, name, &err);
            continue;
        }
        engine_job *j = engine_find(s->e, (uint64_t)id);
        if (j && !auth_may_see_job(who, engine_job_tenant(j), engine_job_queue(j))) j = NULL;
        step_in in;
        engine_step_res res;
        if (step_read(s, who, o, j, now, batch_item_fields, &in, &err) != 0)
            item_error(&b, (uint64_t)id, name, &err);
        else if (!j) {
            engine_errf(&err, TENQ_ECONFLICT, "token",
                        "job %lld is not in hand under this token (its lease is over, or there "
                        "is no such job)",
                        id);
            item_error(&b, (uint64_t)id, name, &err);
        } else if (engine_step(s->e, now, (uint64_t)id, in.token, &in.r, &res, &err) != 0)
            item_error(&b, (uint64_t)id, name, &err);
        else
            write_answer(&b, (uint64_t)id, in.r.name, in.r.kind, &res);
        step_in_free(&in);
    }
    jb_arr_end(&b);
    jb_obj_end(&b);
    srv_commit_reply(s, req, 200, &b);
out:
    json_decref(body);
}

/* ---- GET /v1/jobs/{id}/steps ------------------------------------------------------ */

typedef struct steps_ctx {
    read_ctx held; /* the request, while the store reads */
    server *srv;
    principal who;
    uint64_t id;
} steps_ctx;

static void time_or_null(jbuf *b, const char *k, int64_t v)
{
    jb_key(b, k);
    if (v)
        jb_int(b, v);
    else
        jb_null(b);
}

static void json_step(jbuf *b, const engine_step_info *x, bool show_token, bool with_result)
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
    http_req *req = read_ctx_take(&c->held);
    server *s = c->srv;
    engine_job_info in;
    const engine_job_info *job =
        req ? srv_read_job(s, req, rc, "the steps", c->id, &c->who, rc ? NULL : st->job, &in)
            : NULL;
    if (!job) {
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
        json_step(&b, &st->v[i], show_token, !c->who.hide_data);
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
    read_ctx_hold(&c->held, req);
    store_get_steps(s->st, c->id, on_steps, c);
}

void h_job_steps(server *s, http_req *req, const principal *who, const char **args)
{
    uint64_t id = srv_job_path_id(s, req, who, args[0]);
    if (!id) return;
    steps_ctx *c = xcalloc(1, sizeof(*c));
    c->srv = s;
    c->who = *who;
    c->id = id;
    srv_after_commit(s, req, steps_after_commit, c);
}
