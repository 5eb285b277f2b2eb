// SPDX-License-Identifier: Apache-2.0
/* Workers: lease (long poll), start, heartbeat, ack, fail, batched outcomes. */
#include "auth.h"
#include "clock.h"
#include "commit.h"
#include "handlers.h"
#include "http.h"
#include "jbuf.h"
#include "jobread.h"
#include "lease.h"
#include "outcome_late.h"
#include "reply.h"
#include "request.h"
#include "request_read.h"
#include "server.h"
#include "serving.h"
#include "waiters.h"
#include "workers.h"

#include "base/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The job a worker call is about, if this principal may touch it; *held
 * false when it is not in memory (the store says whether it was). */
static bool worker_job(server *s, http_req *req, const principal *who, const char *seg,
                       uint64_t *id, bool *held)
{
    *id = req_path_id(req, seg);
    if (!*id) return false;
    engine_job *j = engine_find(s->e, *id);
    *held = j != NULL;
    if (j && !auth_may_see_job(who, engine_job_tenant(j), engine_job_queue(j))) {
        reply_error(req, TENQ_ENOT_FOUND, "id", "no job %llu", (unsigned long long)*id);
        return false;
    }
    return true;
}

static void state_reply(server *s, http_req *req, uint64_t id)
{
    engine_job *j = engine_find(s->e, id);
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_kint(&b, "id", (long long)id);
    if (j) {
        engine_job_info in;
        engine_job_get(j, &in);
        jb_kstr(&b, "state", engine_state_name(in.state));
        if (in.state == ENGINE_SCHEDULED) jb_kint(&b, "run_at", in.run_at);
    }
    jb_obj_end(&b);
    srv_commit_reply(s, req, 200, &b);
}

void h_start(server *s, http_req *req, const principal *who, const char **args)
{
    uint64_t id;
    bool held;
    if (!worker_job(s, req, who, args[0], &id, &held)) return;
    json_t *body = req_body(req);
    if (!body) return;
    static const char *const fields[] = {"token", NULL};
    long long tok = 0;
    bool has = false;
    if (req_only_fields(req, body, fields) &&
        req_int(req, body, "token", &tok, &has, 1, INT64_MAX)) {
        engine_err err;
        if (!has)
            reply_error(req, TENQ_EINVALID, "token", "token is required");
        else if (!held)
            late_refuse_call(s, req, who, id, (uint64_t)tok);
        else if (engine_start(s->e, srv_now(s), id, (uint64_t)tok, &err) != 0)
            reply_engine_err(req, &err);
        else
            state_reply(s, req, id);
    }
    json_decref(body);
}

void h_heartbeat(server *s, http_req *req, const principal *who, const char **args)
{
    uint64_t id;
    bool held;
    if (!worker_job(s, req, who, args[0], &id, &held)) return;
    json_t *body = req_body(req);
    if (!body) return;
    static const char *const fields[] = {"token", "progress", NULL};
    long long tok = 0;
    bool has = false;
    if (req_only_fields(req, body, fields) &&
        req_int(req, body, "token", &tok, &has, 1, INT64_MAX)) {
        char *progress = NULL;
        json_t *p = json_object_get(body, "progress");
        if (p && !json_is_null(p)) progress = canonical_json(p);
        int64_t until = 0, now = srv_now(s);
        bool cancel = false;
        engine_err err;
        if (!has) {
            reply_error(req, TENQ_EINVALID, "token", "token is required");
        } else if (progress && strlen(progress) > 65536) {
            reply_error(req, TENQ_ETOO_LARGE, "progress", "progress is larger than 64 KiB");
        } else if (!held) {
            late_refuse_call(s, req, who, id, (uint64_t)tok);
        } else if (engine_heartbeat(s->e, now, id, (uint64_t)tok, progress, &until, &cancel,
                                    &err) != 0) {
            reply_engine_err(req, &err);
        } else {
            jbuf b;
            jb_init(&b);
            jb_obj(&b);
            jb_kint(&b, "lease_until", until);
            jb_kint(&b, "lease_left_ms", until - now);
            jb_kbool(&b, "cancel", cancel);
            jb_obj_end(&b);
            srv_commit_reply(s, req, 200, &b);
        }
        free(progress);
    }
    json_decref(body);
}

/* Acks or fails job id with what was read; 0 or an error in err. */
static int outcome_apply(server *s, uint64_t id, outcome_in *in, engine_err *err)
{
    int64_t now = srv_now(s);
    if (in->ok) {
        if ((in->result && strlen(in->result) > (size_t)s->cfg.max_job_bytes) ||
            (in->stats && strlen(in->stats) > 65536)) {
            engine_errf(err, TENQ_ETOO_LARGE,
                        in->result && strlen(in->result) > (size_t)s->cfg.max_job_bytes ? "result"
                                                                                        : "stats",
                        "result or stats too large");
            return TENQ_ETOO_LARGE;
        }
    }
    if (!in->ok && in->stats && strlen(in->stats) > 65536) {
        engine_errf(err, TENQ_ETOO_LARGE, "stats", "stats larger than 65536 bytes");
        return TENQ_ETOO_LARGE;
    }
    in->f.error = in->error;
    in->f.stats = in->stats;
    engine_state st;
    int rc = in->ok ? engine_ack(s->e, now, id, in->token, in->result, in->stats, err)
                    : engine_fail(s->e, now, id, in->token, &in->f, &st, err);
    /* sent again (its answer was lost): answered as applied, which it was */
    return rc == TENQ_ECONFLICT && outcome_already_applied(s, id, in) ? 0 : rc;
}

/* An ack or fail of one job (POST /v1/jobs/{id}/ack or /fail).  A job not in
 * hand may have finished with this very outcome: the store says. */
static void single_outcome(server *s, http_req *req, const principal *who, const char *seg, bool ok)
{
    uint64_t id = req_path_id(req, seg);
    if (!id) return;
    engine_job *j = engine_find(s->e, id);
    if (j && !auth_may_see_job(who, engine_job_tenant(j), engine_job_queue(j))) {
        reply_error(req, TENQ_ENOT_FOUND, "id", "no job %llu", (unsigned long long)id);
        return;
    }
    json_t *body = req_body(req);
    if (!body) return;
    static const char *const ack_fields[] = {"token", "result", "stats", NULL};
    static const char *const fail_fields[] = {"token",     "error", "retry_in_ms", "retry",
                                              "cancelled", "stats", NULL};
    outcome_in in;
    engine_err err;
    if (!req_only_fields(req, body, ok ? ack_fields : fail_fields)) {
    } else if (outcome_read(body, ok, &in, &err) != 0) {
        reply_engine_err(req, &err);
    } else {
        if (!j)
            late_resolve_one(s, req, who, id, &in);
        else if (outcome_apply(s, id, &in, &err) != 0)
            reply_engine_err(req, &err);
        else
            state_reply(s, req, id);
        outcome_in_free(&in);
    }
    json_decref(body);
}

void h_ack(server *s, http_req *req, const principal *who, const char **args)
{
    single_outcome(s, req, who, args[0], true);
}

void h_fail(server *s, http_req *req, const principal *who, const char **args)
{
    single_outcome(s, req, who, args[0], false);
}

/* One outcome's answer in a batch: its state, or why it was refused. */
static void outcome_answer(server *s, jbuf *b, uint64_t id, int rc, const engine_err *err)
{
    jb_obj(b);
    if (id) jb_kint(b, "id", (long long)id);
    if (rc) {
        jb_key(b, "error");
        jb_obj(b);
        jb_kstr(b, "code", tenq_err_word(rc));
        jb_kstr(b, "message", err->message);
        if (err->field) jb_kstr(b, "field", err->field);
        jb_obj_end(b);
    } else {
        engine_job *j = engine_find(s->e, id);
        jb_kstr(b, "state", j ? engine_state_name(engine_job_state(j)) : "succeeded");
    }
    jb_obj_end(b);
}

/* A job a worker reports on: in hand and visible to it; 0 or an error. */
static int reported_job(server *s, const principal *who, uint64_t id, engine_err *err)
{
    engine_job *j = engine_find(s->e, id);
    if (!j || !auth_may_see_job(who, engine_job_tenant(j), engine_job_queue(j))) {
        engine_errf(err, TENQ_ENOT_FOUND, "id", "no job %llu in hand", (unsigned long long)id);
        return TENQ_ENOT_FOUND;
    }
    return 0;
}

/* Applies the outcomes read in order, their answers into b as a list;
 * frees them.  Those of jobs not in hand get a placeholder, and come back in
 * the late set (NULL: none) for late_resolve; an item read from a tree and
 * refused gets its refusal. */
static late_set *outcome_set_apply(server *s, const principal *who, outcome_set *os, jbuf *b)
{
    late_set *late = NULL;
    jb_arr(b);
    for (size_t i = 0; i < os->n; i++) {
        const engine_err *refused = os->errs ? os->errs[i] : NULL;
        if (refused) {
            outcome_answer(s, b, os->ids[i], refused->code, refused);
            continue;
        }
        engine_err err = {0};
        int orc = reported_job(s, who, os->ids[i], &err);
        if (orc == TENQ_ENOT_FOUND && !engine_find(s->e, os->ids[i])) {
            late = late_note(late, b, os->ids[i], &os->ins[i]);
            continue;
        }
        if (!orc) orc = outcome_apply(s, os->ids[i], &os->ins[i], &err);
        outcome_answer(s, b, os->ids[i], orc, &err);
    }
    jb_arr_end(b);
    outcome_set_free(os);
    return late;
}

/* The same from a jansson tree: the refusal in err when list is not a list
 * of 1 to 10,000 (nothing applied); a bad item gets its own answer. */
static int outcome_tree_apply(server *s, const principal *who, json_t *list, jbuf *b,
                              late_set **late, engine_err *err)
{
    outcome_set os;
    *late = NULL;
    int rc = outcome_set_read_tree(list, &os, err);
    if (rc != 0) return rc;
    *late = outcome_set_apply(s, who, &os, b);
    return 0;
}

static void outcomes_reply(server *s, http_req *req, const principal *who, jbuf *b, late_set *late);

/* The batch read in place: true when applied and answered; false when
 * jansson must read it (nothing done yet). */
static bool outcomes_in_place(server *s, http_req *req, const principal *who)
{
    outcome_set os;
    if (!outcomes_read_text(req->body, req->body_len, &os)) return false;
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_key(&b, "results");
    late_set *late = outcome_set_apply(s, who, &os, &b);
    jb_obj_end(&b);
    outcomes_reply(s, req, who, &b, late);
    return true;
}

static void outcomes_late_done(server *s, http_req *req, char *text, void *ctx)
{
    (void)s;
    (void)ctx;
    if (req) http_reply(req, 200, "application/json", NULL, text, strlen(text));
    free(text);
}

/* The answer to POST /v1/outcomes, once its outcomes are committed (and
 * those of jobs not in hand read from the store). */
static void outcomes_reply(server *s, http_req *req, const principal *who, jbuf *b, late_set *late)
{
    if (late)
        late_resolve(s, req, who, late, jb_take(b, NULL), outcomes_late_done, NULL);
    else
        srv_commit_reply(s, req, 200, b);
}

void h_outcomes(server *s, http_req *req, const principal *who, const char **args)
{
    (void)args;
    if (outcomes_in_place(s, req, who)) return;
    json_t *body = req_body(req);
    if (!body) return;
    static const char *const fields[] = {"outcomes", NULL};
    if (!req_only_fields(req, body, fields)) {
        json_decref(body);
        return;
    }
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_key(&b, "results");
    engine_err err;
    late_set *late;
    if (outcome_tree_apply(s, who, json_object_get(body, "outcomes"), &b, &late, &err) != 0) {
        jb_free(&b);
        reply_engine_err(req, &err);
    } else {
        jb_obj_end(&b);
        outcomes_reply(s, req, who, &b, late);
    }
    json_decref(body);
}

/* ---- leases ---------------------------------------------------------------------------- */

/* The lease itself, once the request is checked (and the outcomes it
 * reported are committed): answered at once, or a long poll.  Takes in
 * and results (the answers to those outcomes, or NULL). */
static void lease_go(server *s, http_req *req, const principal *who, lease_in *in, char *results)
{
    char wbuf[320];
    const char *worker = in->worker;
    if (!worker) {
        snprintf(wbuf, sizeof wbuf, "%s", req->peer);
        worker = wbuf;
    }
    workers_seen(s, worker, in->queues, in->nq);
    long long wait_ms = in->wait_ms;
    if (wait_ms > s->cfg.max_wait_ms) wait_ms = s->cfg.max_wait_ms;
    /* (after outcomes committed, the leadership may have gone meanwhile,
     * or a stop begun: a stopping server leases nothing) */
    bool serving = srv_serving(s) && !s->stopping;
    if (serving && srv_try_lease(s, req, who, in->queues, in->nq, in->types, in->nt,
                                 (size_t)in->max, worker, results, in->columns)) {
    } else if (wait_ms == 0 || s->stopping || !serving || http_req_input_ended(req)) {
        /* (input that ended while outcomes were committed: the client may be
         * gone, and a long poll must not hand it jobs) */
        reply_no_jobs(req, results, in->columns);
    } else {
        lease_waiter *w = xcalloc(1, sizeof(*w));
        w->req = req;
        w->who = *who;
        w->queues = in->queues;
        w->nqueues = in->nq;
        w->types = in->types;
        w->ntypes = in->nt;
        w->max = (size_t)in->max;
        w->worker = in->worker ? in->worker : xstrdup(worker);
        w->results = results;
        w->columns = in->columns;
        results = NULL;
        in->queues = in->types = NULL;
        in->nq = in->nt = 0;
        in->worker = NULL;
        srv_lease_waiter_add(s, w, wait_ms);
    }
    free(results);
    lease_in_free(in);
}

/* A lease that reported outcomes first: what is left once they are
 * committed. */
typedef struct lease_after {
    principal who;
    lease_in in;
    char *results;
} lease_after;

static void lease_after_commit(server *s, http_req *req, void *ctx, int rc)
{
    lease_after *la = ctx;
    if (req && rc == 0) {
        lease_go(s, req, &la->who, &la->in, la->results);
    } else {
        free(la->results);
        lease_in_free(&la->in);
    }
    free(la);
}

/* Outcomes of jobs not in hand were read from the store (and the others
 * committed): the lease goes on with every answer. */
static void lease_late_done(server *s, http_req *req, char *text, void *ctx)
{
    lease_after *la = ctx;
    la->results = text;
    lease_after_commit(s, req, la, req ? 0 : TENQ_EUNAVAILABLE);
}

void h_lease(server *s, http_req *req, const principal *who, const char **args)
{
    (void)args;
    lease_in in;
    json_t *body = NULL;
    /* the usual body is read in place; jansson reads the rest and words
     * every refusal */
    if (!lease_read_text(req->body, req->body_len, &in)) {
        body = req_body(req);
        if (!body) return;
        engine_err err;
        if (lease_read(body, &in, &err) != 0) {
            reply_engine_err(req, &err);
            json_decref(body);
            return;
        }
    }
    if (in.worker && strlen(in.worker) > 256) {
        reply_error(req, TENQ_EINVALID, "worker", "worker must be at most 256 characters");
        goto refused;
    }
    for (size_t i = 0; i < in.nq; i++) {
        if (!req_name_ok(req, ENGINE_NAME, "queues", in.queues[i])) goto refused;
        if (who->tok && !token_allows_queue(who->tok, in.queues[i])) {
            reply_error(req, TENQ_EFORBIDDEN, "queues", "this token may not lease from %s",
                        in.queues[i]);
            goto refused;
        }
    }
    for (size_t i = 0; i < in.nt; i++)
        if (!req_name_ok(req, ENGINE_TYPE, "types", in.types[i])) goto refused;
    if (!in.has_outcomes) {
        json_decref(body);
        lease_go(s, req, who, &in, NULL);
        return;
    }
    /* Outcomes reported with the lease: applied first (an ack frees its
     * slot and moves its lane on for this very lease), and the lease is
     * taken only once they are committed, so its answer acknowledges them
     * as POST /v1/outcomes would. */
    jbuf rb;
    jb_init(&rb);
    tq_iter list;
    outcome_set os;
    late_set *late = NULL;
    if (!body && tq_arr_begin(&list, in.outcomes) && outcome_set_read(&list, &os)) {
        late = outcome_set_apply(s, who, &os, &rb);
    } else {
        if (!body && !(body = req_body(req))) goto refused;
        engine_err err;
        if (outcome_tree_apply(s, who, json_object_get(body, "outcomes"), &rb, &late, &err) != 0) {
            jb_free(&rb);
            reply_engine_err(req, &err);
            goto refused;
        }
    }
    json_decref(body);
    lease_after *la = xcalloc(1, sizeof(*la));
    la->who = *who;
    la->in = in;
    la->in.outcomes = (tq_span){0}; /* their text goes with the request's body */
    if (late) {
        late_resolve(s, req, who, late, jb_take(&rb, NULL), lease_late_done, la);
        return;
    }
    la->results = jb_take(&rb, NULL);
    srv_after_commit(s, req, lease_after_commit, la);
    return;
refused:
    json_decref(body);
    lease_in_free(&in);
}
