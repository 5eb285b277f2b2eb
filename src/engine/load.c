// SPDX-License-Identifier: Apache-2.0
/* Recovery: jobs come back from the store in any resident state. */
#include "internal.h"

static char *dup_or_null(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

int engine_load_job(engine_t *e, int64_t now, const engine_job_info *in, engine_err *err)
{
    if (!engine_name_valid(in->tenant) || !engine_name_valid(in->queue) || !in->type ||
        !*in->type) {
        engine_errf(err, TENQ_EINVALID, "job", "job %llu has a bad tenant, queue or type",
                    (unsigned long long)in->id);
        return TENQ_EINVALID;
    }
    if (in->state > ENGINE_DEAD || in->id == 0) {
        engine_errf(err, TENQ_EINVALID, "state", "job %llu: only unfinished and dead jobs load",
                    (unsigned long long)in->id);
        return TENQ_EINVALID;
    }
    if (engine_job_find(e, in->id)) {
        engine_errf(err, TENQ_ECONFLICT, "id", "job %llu is loaded twice",
                    (unsigned long long)in->id);
        return TENQ_ECONFLICT;
    }
    tenant *t = engine_tenant_get_or_create(e, in->tenant);
    queue *q = engine_queue_get_or_create(e, in->queue);
    node *home = engine_node_get_or_create(e, q, in->type, t);
    if (in->n_concurrency_keys || in->n_rate_keys) {
        engine_submit_req kr = {.concurrency_keys = in->concurrency_keys,
                                .n_concurrency_keys = in->n_concurrency_keys,
                                .rate_keys = in->rate_keys,
                                .n_rate_keys = in->n_rate_keys};
        if (engine_keys_check(&kr, err)) return TENQ_EINVALID;
        home = engine_group_for(e, now, home, &q->s, in->concurrency_keys, in->n_concurrency_keys,
                                in->rate_keys, in->n_rate_keys);
    }
    bool has_pl = in->payloads != NULL || (!in->args && in->n_payloads == 0 && q->s.merge);
    /* A job keeps no args length (JSON text has no NUL): a stored row whose
     * args hold one anyway is cut there, so what is counted is what is kept. */
    job *j = in->args_missing /* left in the store: its length only (args.c) */
                 ? engine_job_alloc(e, in->id, home, NULL, in->args_len ? in->args_len : 2)
                 : engine_job_alloc(
                       e, in->id, home, has_pl ? NULL : (in->args ? in->args : "{}"),
                       has_pl ? 0 : (in->args ? (uint32_t)strnlen(in->args, in->args_len) : 2));
    j->priority = (int16_t)in->priority;
    j->attempts = (uint16_t)in->attempts;
    j->max_attempts = (uint16_t)(in->max_attempts ? in->max_attempts : q->s.max_attempts);
    j->run_at = in->run_at;
    j->created_at = in->created_at;
    j->ready_at = in->ready_at;
    if (in->cancel_requested) j->flags |= JF_CANCEL_REQ;
    bool need_x = has_pl || in->token || in->leased_at || in->started_at || in->finished_at ||
                  in->worker || in->error || in->progress || in->stats || in->unique_key ||
                  in->idempotency_key || in->traceparent || in->timeout_ms || in->expire_at ||
                  in->debounced || (in->lane_seq && in->lane_seq != in->id) ||
                  in->state == ENGINE_DEAD || in->state == ENGINE_LEASED ||
                  in->state == ENGINE_RUNNING;
    if (need_x) {
        job_extra *ex = engine_extra(e, j);
        ex->token = in->token;
        ex->leased_at = in->leased_at;
        ex->started_at = in->started_at;
        ex->finished_at = in->finished_at;
        ex->worker = in->worker ? engine_worker_intern(e, in->worker) : NULL;
        ex->error = dup_or_null(in->error);
        ex->progress = dup_or_null(in->progress);
        ex->stats = dup_or_null(in->stats);
        ex->unique_key = dup_or_null(in->unique_key);
        ex->idem_key = dup_or_null(in->idempotency_key);
        ex->traceparent = dup_or_null(in->traceparent);
        ex->timeout_ms = in->timeout_ms;
        ex->expire_at = in->expire_at;
        ex->debounced = in->debounced;
        ex->debounce_until = in->debounce_until;
        if (in->lane_seq && in->lane_seq != in->id) ex->lane_seq = in->lane_seq;
        if (has_pl) {
            j->flags |= JF_HAS_PAYLOADS;
            for (uint32_t i = 0; i < in->n_payloads; i++)
                engine_payload_add(e, &ex->pl, in->payloads[i].score, in->payloads[i].data,
                                   in->payloads[i].len);
        }
    }
    if (idtab_put(&e->jobs, j->id, j) != 0) engine_oom();
    engine_set_next_id(e, in->id + 1);
    if (in->lane_seq) engine_set_next_id(e, in->lane_seq + 1);
    if (in->key) {
        engine_lane_join(e, engine_lane_get_or_create(e, t, q, in->key), j);
    }
    switch (in->state) {
    case ENGINE_DEAD:
        if (!j->extra->finished_at) j->extra->finished_at = now;
        engine_set_state(e, j, ENGINE_DEAD);
        engine_morgue_insert(e, j);
        break;
    case ENGINE_LEASED:
    case ENGINE_RUNNING:
        if (j->in_lane) engine_lane_append(e, j->in_lane->lane, j);
        /* a stored deadline runs at most one lease length from the load: a
         * wall clock that went back while no server ran cannot keep a dead
         * worker's job for longer (SEMANTICS.md, "The clock") */
        j->extra->deadline = in->lease_until ? in->lease_until : now;
        if (j->extra->deadline > now + q->s.lease_ms) j->extra->deadline = now + q->s.lease_ms;
        engine_set_state(e, j, in->state);
        engine_lease_heap_push(e, j);
        engine_take_slot(e, j);
        break;
    case ENGINE_WAITING:
        /* for its parents: engine_load_deps_done counts them, once every
         * job and edge is loaded */
        engine_set_state(e, j, ENGINE_WAITING);
        if (j->in_lane) engine_lane_append(e, j->in_lane->lane, j);
        break;
    default:
        engine_set_state(e, j, ENGINE_BLOCKED);
        if (j->in_lane) engine_lane_append(e, j->in_lane->lane, j);
        if (!j->in_lane || j->in_lane->lane->head == j) {
            engine_make_runnable(e, j, now);
            /* A job that was ready keeps its ready_at: it has waited that long. */
            if (in->state == ENGINE_READY && j->state == ENGINE_READY && in->ready_at)
                j->ready_at = in->ready_at;
        }
        break;
    }
    if (j->state <= ENGINE_RUNNING) engine_uniq_add(e, j);
    /* one past its time expires at the next tick (or lease) */
    if (j->extra && j->extra->expire_at && j->state <= ENGINE_READY) engine_expiry_watch(e, j);
    return 0;
}
