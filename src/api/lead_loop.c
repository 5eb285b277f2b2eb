// SPDX-License-Identifier: Apache-2.0
/* The leadership, the loop's side (the thread's is lead.c): an engine
 * loaded under a new term begins to serve; a server that lost the store
 * steps down to standby; one whose leadership is not certain refuses
 * writes until it is; a standby's answer names the leader. */
#include "internal.h"

#include <event2/event.h>
#include <time.h>
#include <unistd.h>
engine_t *srv_engine_new(server *s, uint64_t term)
{
    const api_config *cfg = &s->cfg;
    engine_config ec;
    engine_config_defaults(&ec);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ec.seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32) ^ term;
    ec.tenant_defaults.slots =
        cfg->default_slots < 0 ? ENGINE_UNLIMITED : (uint32_t)cfg->default_slots;
    ec.tenant_defaults.weight = (uint32_t)(cfg->default_weight ? cfg->default_weight : 1);
    ec.tenant_defaults.max_queued =
        cfg->default_max_queued < 0 ? ENGINE_UNLIMITED : (uint32_t)cfg->default_max_queued;
    ec.tenant_defaults.max_queued_bytes = cfg->default_max_queued_bytes;
    ec.args_budget = s->admit.args_budget;
    ec.event_window_ms = cfg->event_window_ms;
    ec.strict_tenants = cfg->strict_tenants;
    ec.token_floor = term << 32; /* above every token of every earlier term */
    /* applications' transactions number their jobs with odd ids */
    ec.id_step = store_has_inbox(s->st) ? 2 : 1;
    ec.start_ms = srv_now(s); /* rate limits count as used up at a (re)start */
    return engine_create(&ec);
}

void srv_detach(server *s, const char *why)
{
    log_event(LOG_WARN, "leader", "writes stop until the leadership is certain again: %s", why);
    /* unavailable, not "not leader": no other server refused these writes,
     * and on_commit steps down only on a real refusal */
    store_fail_pending(s->st, TENQ_EUNAVAILABLE);
    s->resyncing = true;
    srv_drop_uncommitted(s, TENQ_ENOT_LEADER, "this server's leadership is not certain");
}

void srv_step_down(server *s, const char *why)
{
    log_event(LOG_WARN, "leader", "standby now: %s", why);
    store_fail_pending(s->st, TENQ_ENOT_LEADER);
    store_use_term(s->st, 0);
    s->leading = false;
    s->resyncing = false;
    srv_load_rest_stop(s);
    srv_drop_uncommitted(s, TENQ_ENOT_LEADER, "this server no longer leads the store");
    while (s->lwait) srv_lease_waiter_end(s, s->lwait);
    srv_end_job_waiters(s);
    srv_cron_clear(s);
    engine_destroy(s->e);
    s->e = srv_engine_new(s, 0); /* a standby's: empty, never written */
    s->term = 0;
    srv_rearm_tick(s);
}

void srv_install(server *s, engine_t *e, uint64_t term, const store_load_stats *st,
                 const store_token *tokens, size_t ntokens, rkey_set *keys, void *crons)
{
    engine_destroy(s->e);
    s->e = e;
    admit_forget(&s->admit); /* the new engine's usage is written whole */
    rkeys_free(s->rkeys);
    s->rkeys = keys;
    s->term = term;
    store_use_term(s->st, term);
    store_clear_failure(s->st);
    store_batch_free(s->batch);
    s->batch = store_batch_new();
    s->leading = true;
    s->resyncing = false;
    srv_merge_tokens(s, tokens, ntokens);
    s->admin_token_refused = srv_ensure_admin_token(s) != 0;
    srv_cron_install(s, crons); /* after the engine: missed ticks submit into it */
    log_event(LOG_INFO, "leader",
              "serving as the leader, term %llu: loaded jobs=%zu tenants=%zu "
              "queues=%zu seconds=%.2f",
              (unsigned long long)term, st->jobs, st->tenants, st->queues, st->seconds);
    /* leases waiting may find work in the new state */
    for (lease_waiter *w = s->lwait; w; w = w->next)
        for (size_t i = 0; i < w->nqueues; i++) srv_wake_leases(s, w->queues[i]);
    srv_rearm_tick(s);
    srv_load_rest_start(s); /* the plain jobs waiting in line, while it serves */
}

bool srv_serving(server *s)
{
    return s->leading && !s->resyncing && lead_valid(s);
}

void srv_not_leader(server *s, http_req *req)
{
    char url[256];
    if (lead_leader(s, url, sizeof url)) {
        char hdrs[1200], body[600];
        snprintf(hdrs, sizeof hdrs, "Location: %s%s%s%s\r\nTenq-Leader: %s\r\n", url, req->path,
                 *req->query ? "?" : "", req->query, url);
        int n = snprintf(body, sizeof body,
                         "{\"error\":{\"code\":\"not_leader\",\"message\":\"this server is a "
                         "standby; the leader is %s\",\"leader\":\"%s\"}}",
                         url, url);
        http_reply(req, 307, "application/json", hdrs, body, (size_t)n);
        return;
    }
    static const char body[] = "{\"error\":{\"code\":\"not_leader\",\"message\":\"this server "
                               "does not lead the store, and no leader is known yet: try "
                               "again\"}}";
    http_reply(req, 503, "application/json", "Retry-After: 1\r\n", body, sizeof body - 1);
}
