// SPDX-License-Identifier: Apache-2.0
/* Taking in what applications' transactions committed (PostgreSQL; see
 * docs/transactions.md and src/store/pg_txapi.h).
 *
 * tenq.submit writes a job, with its id, to tenq.inbox; tenq.complete and
 * tenq.fail write an outcome to tenq.tx_outcomes; each notifies tenq_inbox,
 * which reaches the leadership thread only once the transaction commits.
 * The leader then reads the rows (the reader thread), applies every rule of
 * a submit with the id the transaction gave, or the outcome under its
 * token, and deletes the rows in the commit that keeps what they made: a
 * leader that dies before that commit leaves them to the next one, and
 * one read waits for the commit of the one before, so a row is never taken
 * in twice.  A submit that makes no job of its own (a duplicate, a merge, an
 * idempotent replay) or that the engine refuses still leaves its id a job
 * row: merged into the job that took its place, or cancelled with the
 * reason.  A poll every --inbox-poll catches a notification that was lost
 * (a takeover, a dropped connection).
 *
 * Notifications cost the applications a lot (transactions that notify
 * commit one at a time), so they are asked for only while the leader is
 * idle (schema 15, decision 0025).  Phases:
 *   - idle: the flag tenq.inbox_hot is clear; every transaction notifies.
 *     A read that finds rows is followed by another once they are
 *     committed; a second read in a row that finds rows sets the flag.
 *   - hot: the flag is set; transactions send nothing, and the leader reads
 *     again after each take-in until a read finds nothing.
 *   - cooling: the flag was cleared, but a transaction that saw it set may
 *     still be open; its rows would come with no notification, so the
 *     leader reads again, every 1, 2, 4 ... COOL_MAX_MS, until the
 *     database says no such transaction is open (then one more read finds
 *     all they committed, and the leader is idle).
 * A new term starts cooling: the last leader may have left the flag set. */
#include "ingest.h"

#include "api.h"
#include "clock.h"
#include "commit.h"
#include "request.h"
#include "server.h"
#include "serving.h"

#include "base/xalloc.h"

#include <event2/event.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INGEST_MAX  10000 /* rows of each kind a read takes */
#define COOL_MAX_MS 64    /* the longest wait between reads while cooling */

enum { PHASE_IDLE, PHASE_HOT, PHASE_COOLING };

typedef struct ingest_ctx {
    server *s;
    uint64_t term;         /* the engine it was read for */
    store_inbox_flag flag; /* what the read did with tenq.inbox_hot */
} ingest_ctx;

static void on_committed(server *s, http_req *req, void *ctx, int rc)
{
    (void)req;
    free(ctx);
    s->ingest.busy = false;
    if (rc == 0) srv_ingest_kick(s); /* it found rows: there may be more */
}

/* The job row of a submit that made no job of its own: merged into the
 * job that took its place (target), or cancelled with the reason. */
static void record(server *s, const store_tx_job *j, const char *args, engine_state state,
                   uint64_t target, const char *error, int64_t now)
{
    engine_queue_settings qs;
    if (engine_queue_get(s->e, now, j->queue, &qs, NULL) != 0) engine_queue_settings_defaults(&qs);
    engine_job_info in;
    memset(&in, 0, sizeof in);
    in.id = j->id;
    in.tenant = j->tenant;
    in.queue = j->queue;
    in.type = j->type;
    in.key = j->key;
    in.args = args;
    in.args_len = (uint32_t)strlen(args);
    in.priority = j->priority;
    in.state = state;
    in.max_attempts = j->max_attempts ? j->max_attempts : qs.max_attempts;
    in.run_at = j->run_at > j->created_at ? j->run_at : j->created_at;
    in.created_at = j->created_at;
    in.finished_at = now;
    in.error = error;
    in.unique_key = j->unique_key;
    in.idempotency_key = j->idempotency_key;
    in.traceparent = j->traceparent;
    in.timeout_ms = j->timeout_ms;
    in.merged_into = target;
    in.lane_seq = j->id;
    in.concurrency_keys = j->concurrency_keys;
    in.n_concurrency_keys = j->n_concurrency_keys;
    in.rate_keys = j->rate_keys;
    in.n_rate_keys = j->n_rate_keys;
    in.expire_at = j->expire_at;
    store_batch_job(s->commit.batch, &in, ENGINE_JF_NEW);
}

static void take_job(server *s, const store_tx_job *j, int64_t now)
{
    store_batch_inbox_done(s->commit.batch, j->id);
    if (engine_find(s->e, j->id)) return; /* taken in already */
    /* the args as the server keeps them: canonical JSON */
    json_error_t jerr;
    json_t *v = json_loads(j->args ? j->args : "{}", JSON_DECODE_ANY, &jerr);
    char *args = v ? canonical_json(v) : NULL;
    json_decref(v);
    engine_submit_req r;
    memset(&r, 0, sizeof r);
    r.id = j->id;
    r.tenant = j->tenant;
    r.queue = j->queue;
    r.type = j->type;
    r.key = j->key;
    r.args = args;
    r.args_len = args ? (uint32_t)strlen(args) : 0;
    r.has_priority = j->priority != 0;
    r.priority = j->priority;
    r.run_at = j->run_at;
    r.unique_key = j->unique_key;
    r.unique = j->unique;
    r.idempotency_key = j->idempotency_key;
    r.traceparent = j->traceparent;
    r.max_attempts = j->max_attempts;
    r.timeout_ms = j->timeout_ms;
    r.has_score = j->has_score;
    r.score = j->score;
    r.concurrency_keys = j->concurrency_keys;
    r.n_concurrency_keys = j->n_concurrency_keys;
    r.rate_keys = j->rate_keys;
    r.n_rate_keys = j->n_rate_keys;
    r.expire_at = j->expire_at;
    r.debounce_ms = j->debounce_ms;
    r.debounce_max_ms = j->debounce_max_ms;
    engine_submit_res res;
    int rc = args && !j->bad_options ? engine_submit(s->e, now, &r, &res) : TENQ_EINVALID;
    if (rc == 0 && !res.created) { /* a duplicate, a replay, a merge, a debounce */
        record(s, j, args, ENGINE_MERGED, res.id, NULL, now);
    } else if (rc) {
        char why[600];
        snprintf(why, sizeof why, "refused when taken in: %s",
                 !args            ? "args are not JSON"
                 : j->bad_options ? "its options are not readable"
                                  : res.err.message);
        log_event(LOG_WARN, "ingest", "job %llu: %s", (unsigned long long)j->id, why);
        record(s, j, args ? args : "{}", ENGINE_CANCELLED, 0, why, now);
    }
    free(args);
}

/* An outcome committed with an application's writes.  Refused by the
 * engine, a success means the engine went on without it (the lease ran out
 * here first): the store, which took it, is the truth, and the engine is
 * loaded again.  A refused failure changes nothing. */
static bool take_outcome(server *s, const store_tx_outcome *o, int64_t now)
{
    store_batch_tx_done(s->commit.batch, o->id, o->token);
    if (!engine_find(s->e, o->id)) return true; /* finished, and out of memory */
    engine_err err;
    int rc;
    if (o->ok) {
        rc = engine_ack(s->e, now, o->id, o->token, o->result, NULL, &err);
    } else {
        engine_fail_req f = {.error = o->error ? o->error : "failed in a transaction",
                             .has_retry_in = o->has_retry_in,
                             .retry_in_ms = o->retry_in_ms};
        engine_state st;
        rc = engine_fail(s->e, now, o->id, o->token, &f, &st, &err);
    }
    if (rc == 0 || !o->ok) return true;
    engine_job_info ji; /* acked already, under that token (by HTTP too)? */
    engine_job_get(engine_find(s->e, o->id), &ji);
    return ji.state == ENGINE_SUCCEEDED && ji.token == o->token;
}

/* An event sent in a transaction: delivered (or kept) as POST /v1/events
 * would, exactly once (its inbox row goes in the commit that delivers it);
 * one the engine refuses (a strict server without its tenant) is dropped,
 * logged. */
static void take_event(server *s, const store_tx_event *v, int64_t now)
{
    store_batch_event_inbox_done(s->commit.batch, v->id);
    json_error_t jerr;
    json_t *p = json_loads(v->payload ? v->payload : "null", JSON_DECODE_ANY, &jerr);
    char *payload = p ? canonical_json(p) : NULL;
    json_decref(p);
    engine_event_res res;
    engine_err err;
    int rc = payload ? engine_event_send(s->e, now, v->tenant, v->key, payload,
                                         (uint32_t)strlen(payload), NULL, 0, &res, &err)
                     : TENQ_EINVALID;
    if (rc)
        log_event(LOG_WARN, "ingest", "event %llu (%s of %s) refused when taken in: %s",
                  (unsigned long long)v->id, v->key ? v->key : "", v->tenant ? v->tenant : "",
                  payload ? err.message : "its payload is not JSON");
    free(payload);
}

/* After a read that found nothing: hot, it cools at once; cooling, it
 * looks again a little later; idle, it waits for a notification. */
static void after_empty(server *s)
{
    s->ingest.streak = 0;
    if (s->ingest.phase == PHASE_HOT || s->ingest.again) {
        srv_ingest_kick(s);
    } else if (s->ingest.phase == PHASE_COOLING) {
        int ms = s->ingest.backoff_ms;
        s->ingest.backoff_ms = ms < COOL_MAX_MS ? ms * 2 : COOL_MAX_MS;
        struct timeval tv = {0, (suseconds_t)ms * 1000};
        event_add(s->ingest.retry_ev, &tv);
    }
}

static void on_inbox(void *ctx, int rc, const store_inbox *in)
{
    ingest_ctx *c = ctx;
    server *s = c->s;
    if (rc || c->term != s->lead.term || !srv_serving(s) || s->stopping) {
        if (rc) log_event(LOG_WARN, "ingest", "reading the inbox failed: %s", store_errmsg(s->st));
        /* it may have set the flag: the next read (the poll's) clears it */
        s->ingest.phase = PHASE_COOLING;
        s->ingest.streak = 0;
        free(c);
        s->ingest.busy = false;
        return; /* the poll, or the next term's install, reads again */
    }
    if (c->flag == STORE_INBOX_HOT) s->ingest.phase = PHASE_HOT;
    if (c->flag == STORE_INBOX_COOL) {
        s->ingest.phase = in->cool ? PHASE_IDLE : PHASE_COOLING;
        if (in->cool) s->ingest.backoff_ms = 1;
    }
    if (in->njobs == 0 && in->noutcomes == 0 && in->nevents == 0) {
        free(c);
        s->ingest.busy = false;
        after_empty(s);
        return;
    }
    s->ingest.streak++;
    int64_t now = srv_now(s);
    for (size_t i = 0; i < in->njobs; i++) take_job(s, &in->jobs[i], now);
    bool agree = true;
    for (size_t i = 0; i < in->noutcomes; i++) agree &= take_outcome(s, &in->outcomes[i], now);
    for (size_t i = 0; i < in->nevents; i++) take_event(s, &in->events[i], now);
    srv_wake_first(s);
    srv_after_commit(s, NULL, on_committed, c);
    srv_schedule_flush(s);
    if (!agree) srv_reload(s, "a job completed in a transaction had moved on here");
}

/* What the next read does with the flag. */
static store_inbox_flag next_flag(server *s)
{
    if (s->ingest.term != s->lead.term) { /* the last leader may have left it set */
        s->ingest.term = s->lead.term;
        s->ingest.phase = PHASE_COOLING;
        s->ingest.streak = 0;
        s->ingest.backoff_ms = 1;
    }
    switch (s->ingest.phase) {
    case PHASE_HOT: return s->ingest.streak ? STORE_INBOX_KEEP : STORE_INBOX_COOL;
    case PHASE_COOLING: return s->ingest.streak >= 2 ? STORE_INBOX_HOT : STORE_INBOX_COOL;
    default: return s->ingest.streak >= 2 ? STORE_INBOX_HOT : STORE_INBOX_KEEP;
    }
}

void srv_ingest_kick(server *s)
{
    if (!s->ingest.ev) return; /* no inbox here */
    if (s->ingest.busy) {
        s->ingest.again = true;
        return;
    }
    if (!srv_serving(s) || s->stopping) return;
    event_del(s->ingest.retry_ev);
    ingest_ctx *c = xcalloc(1, sizeof(*c));
    c->s = s;
    c->term = s->lead.term;
    c->flag = next_flag(s);
    s->ingest.busy = true;
    s->ingest.again = false;
    store_read_inbox(s->st, INGEST_MAX, engine_next_id(s->e), c->flag, on_inbox, c);
}

static void on_poll(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    srv_ingest_kick(arg);
}

void srv_ingest_stop(server *s)
{
    if (s->ingest.ev) event_del(s->ingest.ev);
    if (s->ingest.retry_ev) event_del(s->ingest.retry_ev);
}

int srv_ingest_start(server *s)
{
    if (!store_has_inbox(s->st)) return 0;
    s->ingest.ev = event_new(s->base, -1, EV_PERSIST, on_poll, s);
    s->ingest.retry_ev = evtimer_new(s->base, on_poll, s);
    if (!s->ingest.ev || !s->ingest.retry_ev) return -1;
    s->ingest.backoff_ms = 1;
    long long ms = s->cfg.inbox_poll_ms > 0 ? s->cfg.inbox_poll_ms : 1000;
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)((ms % 1000) * 1000)};
    return event_add(s->ingest.ev, &tv);
}

void srv_ingest_free(server *s)
{
    if (s->ingest.ev) event_free(s->ingest.ev);
    if (s->ingest.retry_ev) event_free(s->ingest.retry_ev);
    s->ingest.ev = s->ingest.retry_ev = NULL;
}
