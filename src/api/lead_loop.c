// SPDX-License-Identifier: Apache-2.0
/* The leadership, the loop's side (the thread's is lead.c): an engine
 * loaded under a new term begins to serve; a server that lost the store
 * steps down to standby; one whose leadership is not certain refuses
 * writes until it is (serving.h says which, to everyone else). */
#include "lead_loop.h"

#include "admit.h"
#include "api.h"
#include "auth_load.h"
#include "commit.h"
#include "cron.h"
#include "ingest.h"
#include "lead.h"
#include "load_rest.h"
#include "request_keys.h"
#include "server.h"
#include "term_load.h"
#include "tick.h"
#include "waiters.h"

void srv_detach(server *s, const char *why)
{
    log_event(LOG_WARN, "leader", "writes stop until the leadership is certain again: %s", why);
    /* unavailable, not "not leader": no other server refused these writes,
     * and on_commit steps down only on a real refusal */
    store_fail_pending(s->st, TENQ_EUNAVAILABLE);
    s->lead.resyncing = true;
    srv_drop_uncommitted(s, TENQ_ENOT_LEADER, "this server's leadership is not certain");
}

void srv_step_down(server *s, const char *why)
{
    log_event(LOG_WARN, "leader", "standby now: %s", why);
    store_fail_pending(s->st, TENQ_ENOT_LEADER);
    store_use_term(s->st, 0);
    s->lead.leading = false;
    s->lead.resyncing = false;
    srv_load_rest_stop(s);
    srv_drop_uncommitted(s, TENQ_ENOT_LEADER, "this server no longer leads the store");
    srv_end_lease_waiters(s);
    srv_end_job_waiters(s);
    srv_cron_clear(s);
    engine_destroy(s->e);
    s->e = srv_engine_new(s, 0); /* a standby's: empty, never written */
    s->lead.term = 0;
    srv_rearm_tick(s);
}

/* An engine loaded under a new term begins to serve (what was loaded with
 * it taken from t). */
static void install_term(server *s, term_load *t)
{
    engine_destroy(s->e);
    s->e = t->e;
    t->e = NULL;
    admit_forget(&s->admit); /* the new engine's usage is written whole */
    rkeys_free(s->rkeys);
    s->rkeys = rkeys_from_load(t->rkeys);
    t->rkeys = NULL;
    s->lead.term = t->term;
    store_use_term(s->st, t->term);
    store_clear_failure(s->st);
    store_batch_free(s->commit.batch);
    s->commit.batch = store_batch_new();
    s->lead.leading = true;
    s->lead.resyncing = false;
    srv_merge_tokens(s, t->tokens.v, t->tokens.n);
    s->lead.admin_token_refused = srv_ensure_admin_token(s) != 0;
    srv_cron_install(s, t->crons); /* after the engine: missed ticks submit into it */
    t->crons = NULL;
    log_event(LOG_INFO, "leader",
              "serving as the leader, term %llu: loaded jobs=%zu tenants=%zu "
              "queues=%zu seconds=%.2f",
              (unsigned long long)t->term, t->stats.jobs, t->stats.tenants, t->stats.queues,
              t->stats.seconds);
    srv_wake_every_lease(s); /* leases waiting may find work in the new state */
    srv_rearm_tick(s);
    srv_load_rest_start(s); /* the plain jobs waiting in line, while it serves */
}

/* The leadership's threads have news (lead_hooks.news). */
static void on_news(server *s)
{
    lead_news n;
    lead_take_news(s, &n);
    term_load *t = n.loaded;
    if (t) {
        install_term(s, t);
        term_load_free(t);
    } else if (s->lead.leading && n.leading != s->lead.term) {
        if (!n.leading && n.other)
            srv_step_down(s, "another server leads");
        else if (!s->lead.resyncing)
            srv_detach(s, n.leading ? "reloading under a new term" : n.why);
    }
    /* what applications' transactions committed: now, and after a new term */
    if (n.inbox || t) srv_ingest_kick(s);
}

int srv_lead_start(server *s, const char *node, const char *listen_host)
{
    static const lead_hooks hooks = {term_load_run, term_load_free, on_news};
    if (lead_open(s, node, listen_host, &hooks) != 0) return -1;
    if (lead_campaign_first(s)) {
        on_news(s);
        if (!s->lead.leading) {
            log_event(LOG_ERROR, "store", "loading failed: %s", store_errmsg(s->st));
            return -1;
        }
        if (s->lead.admin_token_refused) return -1;
    } else {
        /* a standby authenticates its own endpoints with the tokens as they
         * are now (the leader it may become loads them again) */
        if (srv_load_tokens(s) != 0 || srv_ensure_admin_token(s) != 0) return -1;
        on_news(s);
        char url[256];
        bool known = lead_leader(s, url, sizeof url);
        log_event(LOG_INFO, "leader", "standby (node %s); the leader is %s", lead_node(s),
                  known ? url : "not known yet");
    }
    return lead_run(s);
}
