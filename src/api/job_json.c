// SPDX-License-Identifier: Apache-2.0
/* A job as the API shows it (job_json.h): its fields, and why it waits. */
#include "job_json.h"

#include "lease_json.h"

#include <stdio.h>

unsigned api_job_view(const principal *who)
{
    return (auth_shows_token(who) ? JOB_VIEW_TOKEN : 0) | (who->hide_data ? JOB_VIEW_HIDE : 0);
}

static void time_field(jbuf *b, const char *k, int64_t v)
{
    jb_key(b, k);
    if (v)
        jb_int(b, v);
    else
        jb_null(b);
}

/* No lease for this long: "no worker has asked" rather than "waiting for one". */
#define WORKER_LATELY_MS 60000

static void json_ids(jbuf *b, const char *k, const uint64_t *ids, uint32_t n)
{
    jb_key(b, k);
    jb_arr(b);
    for (uint32_t i = 0; i < n; i++) jb_int(b, (long long)ids[i]);
    jb_arr_end(b);
}

/* "waiting": the reason, its figures, and a sentence for people. */
static void json_wait(jbuf *b, const engine_job_info *j, const engine_wait *w, int64_t now)
{
    const char *reason = engine_wait_name(w->kind);
    if (!reason) return;
    if (w->kind == ENGINE_WAIT_WORKER && (!w->asked_at || now - w->asked_at > WORKER_LATELY_MS))
        reason = API_WAIT_NO_WORKER;
    jb_key(b, "waiting");
    jb_obj(b);
    jb_kstr(b, "reason", reason);
    char msg[512];
    switch (w->kind) {
    case ENGINE_WAIT_SCHEDULED:
    case ENGINE_WAIT_BACKOFF:
        jb_kint(b, "until", w->until);
        if (w->kind == ENGINE_WAIT_SCHEDULED)
            snprintf(msg, sizeof msg, "scheduled: it becomes ready at its run_at");
        else
            snprintf(msg, sizeof msg,
                     "in backoff after attempt %u of %u failed: it is retried at "
                     "its run_at",
                     j->attempts, j->max_attempts);
        break;
    case ENGINE_WAIT_LANE:
        jb_kint(b, "blocked_by", (long long)w->blocked_by);
        snprintf(msg, sizeof msg, "its lane (key %.200s) runs job %llu first, in order",
                 j->key ? j->key : "", (unsigned long long)w->blocked_by);
        break;
    case ENGINE_WAIT_TENANT_SLOTS:
        jb_kint(b, "active", w->active);
        jb_kint(b, "limit", w->limit);
        if (w->limit == 0)
            snprintf(msg, sizeof msg, "tenant %.200s is paused (0 slots)", j->tenant);
        else
            snprintf(msg, sizeof msg, "tenant %.200s runs %u of its %u slots", j->tenant, w->active,
                     w->limit);
        break;
    case ENGINE_WAIT_TENANT_CAP:
        jb_kint(b, "active", w->active);
        jb_kint(b, "limit", w->limit);
        snprintf(msg, sizeof msg,
                 "tenant %.200s runs %u of the %u jobs queue %.200s allows one "
                 "tenant at once",
                 j->tenant, w->active, w->limit, j->queue);
        break;
    case ENGINE_WAIT_TENANT_RATE:
    case ENGINE_WAIT_QUEUE_RATE:
    case ENGINE_WAIT_PAIR_RATE:
        jb_kint(b, "until", w->until);
        if (w->kind == ENGINE_WAIT_TENANT_RATE)
            snprintf(msg, sizeof msg,
                     "tenant %.200s is at its rate limit: its next start may come at until",
                     j->tenant);
        else if (w->kind == ENGINE_WAIT_QUEUE_RATE)
            snprintf(msg, sizeof msg,
                     "queue %.200s is at its rate limit: its next start may come at until",
                     j->queue);
        else
            snprintf(msg, sizeof msg,
                     "tenant %.200s is at queue %.200s's per-tenant rate limit: its next start "
                     "there may come at until",
                     j->tenant, j->queue);
        break;
    case ENGINE_WAIT_QUEUE_PAUSED:
        snprintf(msg, sizeof msg, "queue %.200s is paused", j->queue);
        break;
    case ENGINE_WAIT_TENANT_PAUSED:
        snprintf(msg, sizeof msg, "queue %.200s is paused for tenant %.200s", j->queue, j->tenant);
        break;
    case ENGINE_WAIT_PARENTS: {
        json_ids(b, "parents", w->parents, w->n_parents);
        int at = snprintf(msg, sizeof msg, "waiting for %u parent%s to succeed:", w->n_parents,
                          w->n_parents == 1 ? "" : "s");
        for (uint32_t i = 0; i < w->n_parents && at > 0 && (size_t)at < sizeof msg - 32; i++)
            at += snprintf(msg + at, sizeof msg - (size_t)at, "%s %llu", i ? "," : "",
                           (unsigned long long)w->parents[i]);
        break;
    }
    case ENGINE_WAIT_CONCURRENCY_KEY:
        jb_kstr(b, "key", w->key);
        jb_kint(b, "active", w->active);
        jb_kint(b, "limit", w->limit);
        if (w->held_by) jb_kint(b, "held_by", (long long)w->held_by);
        snprintf(msg, sizeof msg,
                 "concurrency key %.200s runs %u of its %u jobs at once (job %llu holds it)",
                 w->key, w->active, w->limit, (unsigned long long)w->held_by);
        break;
    case ENGINE_WAIT_RATE_KEY:
        jb_kstr(b, "key", w->key);
        jb_kint(b, "until", w->until);
        snprintf(msg, sizeof msg,
                 "rate key %.200s allows its next start (of this job's cost) at until", w->key);
        break;
    case ENGINE_WAIT_SLEEP:
        jb_kint(b, "until", w->until);
        snprintf(msg, sizeof msg, "its handler sleeps: it goes on at until (its run_at)");
        break;
    case ENGINE_WAIT_EVENT:
        jb_kstr(b, "event", w->event);
        jb_key(b, "until");
        if (w->until)
            jb_int(b, w->until);
        else
            jb_null(b);
        snprintf(msg, sizeof msg, "its handler waits for event %.200s%s", w->event ? w->event : "",
                 w->until ? ", at most until until" : "");
        break;
    case ENGINE_WAIT_CHILD:
        jb_kint(b, "child", (long long)w->child);
        snprintf(msg, sizeof msg, "its handler waits for child job %llu to end",
                 (unsigned long long)w->child);
        break;
    default:
        if (w->asked_at) jb_kint(b, "asked_at", w->asked_at);
        if (!w->asked_at)
            snprintf(msg, sizeof msg,
                     "ready: no worker has asked for queue %.200s (type %.200s) since the server "
                     "started",
                     j->queue, j->type);
        else if (now - w->asked_at > WORKER_LATELY_MS)
            snprintf(msg, sizeof msg,
                     "ready: no worker has asked for queue %.200s (type %.200s) for %lld s",
                     j->queue, j->type, (long long)((now - w->asked_at) / 1000));
        else
            snprintf(msg, sizeof msg,
                     "ready: waiting for a worker to lease from queue %.200s (the last asked "
                     "%lld ms ago)",
                     j->queue, (long long)(now - w->asked_at));
        break;
    }
    jb_kstr(b, "message", msg);
    jb_obj_end(b);
}

void api_json_ckeys(jbuf *b, const engine_job_info *j)
{
    if (j->n_concurrency_keys) {
        jb_key(b, "concurrency_keys");
        jb_arr(b);
        for (uint32_t i = 0; i < j->n_concurrency_keys; i++) {
            jb_obj(b);
            jb_kstr(b, "key", j->concurrency_keys[i].key);
            if (j->concurrency_keys[i].limit) jb_kint(b, "limit", j->concurrency_keys[i].limit);
            jb_obj_end(b);
        }
        jb_arr_end(b);
    }
    if (j->n_rate_keys) {
        jb_key(b, "rate_keys");
        jb_arr(b);
        for (uint32_t i = 0; i < j->n_rate_keys; i++) {
            const engine_rate_key *r = &j->rate_keys[i];
            jb_obj(b);
            jb_kstr(b, "key", r->key);
            jb_kint(b, "cost", r->cost ? r->cost : 1);
            if (r->rate) jb_kint(b, "rate", r->rate);
            if (r->rate_period_ms) jb_kint(b, "rate_period_ms", r->rate_period_ms);
            if (r->rate_burst) jb_kint(b, "rate_burst", r->rate_burst);
            jb_obj_end(b);
        }
        jb_arr_end(b);
    }
}

void api_json_job(jbuf *b, const engine_job_info *j, unsigned view, const engine_wait *wait,
                  int64_t now)
{
    bool show_token = view & JOB_VIEW_TOKEN, hide = view & JOB_VIEW_HIDE;
    jb_obj(b);
    jb_kint(b, "id", (long long)j->id);
    jb_kstr(b, "tenant", j->tenant);
    jb_kstr(b, "queue", j->queue);
    jb_kstr(b, "type", j->type);
    jb_kstr(b, "key", j->key);
    if (hide) {
        jb_kbool(b, "data_hidden", true);
    } else if (j->payloads) {
        jb_key(b, "payloads");
        api_json_payloads(b, j);
    } else {
        jb_key(b, "args");
        jb_raw(b, j->args, j->args_len);
    }
    jb_kint(b, "priority", j->priority);
    if (j->traceparent) jb_kstr(b, "traceparent", j->traceparent);
    if (j->timeout_ms) jb_kint(b, "timeout_ms", j->timeout_ms);
    if (j->n_concurrency_keys || j->n_rate_keys) api_json_ckeys(b, j);
    if (j->expire_at) jb_kint(b, "expire_at", j->expire_at);
    if (j->debounced) {
        jb_kbool(b, "debounced", true);
        if (j->debounce_until) jb_kint(b, "debounce_until", j->debounce_until);
    }
    if (j->n_parents) json_ids(b, "parents", j->parents, j->n_parents);
    if (j->n_steps) jb_kint(b, "steps", j->n_steps);
    if (j->awaited_by) jb_kint(b, "awaited_by", (long long)j->awaited_by);
    if (j->batch) {
        jb_kint(b, "batch", (long long)j->batch);
        if (j->batch_role > 0)
            jb_kstr(b, "batch_callback", engine_callback_name(j->batch_role - 1));
    }
    jb_kstr(b, "state", engine_state_name(j->state));
    jb_kint(b, "attempts", j->attempts);
    jb_kint(b, "max_attempts", j->max_attempts);
    jb_kint(b, "run_at", j->run_at);
    time_field(b, "created_at", j->created_at);
    time_field(b, "ready_at", j->ready_at);
    time_field(b, "leased_at", j->leased_at);
    time_field(b, "started_at", j->started_at);
    time_field(b, "finished_at", j->finished_at);
    jb_kstr(b, "worker", j->worker);
    jb_kstr(b, "error", j->error);
    if (!hide) jb_kraw(b, "result", j->result);
    jb_kraw(b, "stats", j->stats);
    if (!hide) jb_kraw(b, "progress", j->progress);
    jb_kstr(b, "unique_key", j->unique_key);
    jb_kstr(b, "idempotency_key", j->idempotency_key);
    time_field(b, "lease_until", j->lease_until);
    jb_kbool(b, "cancel_requested", j->cancel_requested);
    if (j->merged_into) jb_kint(b, "merged_into", (long long)j->merged_into);
    if (j->n_parents)
        jb_kstr(b, "on_parent_failure", engine_deps_policy_name(j->on_parent_failure));
    if (j->n_children) {
        /* a fan-out's parent may have 100,000: the first ones, and how many */
        json_ids(b, "children", j->children,
                 j->n_children < API_CHILDREN_SHOWN ? j->n_children : API_CHILDREN_SHOWN);
        jb_kint(b, "children_count", j->n_children);
    }
    if (show_token) jb_kint(b, "token", (long long)j->token);
    if (wait) json_wait(b, j, wait, now);
    jb_obj_end(b);
}
