// SPDX-License-Identifier: Apache-2.0
/* What the server says of itself: stats (JSON), the longest lanes,
 * Prometheus metrics, health and readiness. */
#include "auth.h"
#include "clock.h"
#include "cron.h"
#include "handlers.h"
#include "http.h"
#include "jbuf.h"
#include "lead.h"
#include "rates.h"
#include "reply.h"
#include "request.h"
#include "server.h"
#include "serving.h"
#include "tls.h"
#include "tls.h"

#include "base/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- stats --------------------------------------------------------------------------------- */

static void stat_pair(void *ctx, const char *queue, const char *tenant, const engine_counts *c)
{
    api_list_ctx *l = ctx;
    if (!l->who->tok || strcmp(l->who->tok->tenant, tenant) != 0) return;
    if (!token_allows_queue(l->who->tok, queue)) return;
    jb_obj(l->b);
    jb_kstr(l->b, "name", queue);
    api_json_counts(l->b, c, srv_now(l->s));
    jb_obj_end(l->b);
}

static void stat_queue(void *ctx, const char *name, const engine_queue_settings *qs,
                       const engine_counts *c)
{
    (void)qs;
    api_list_ctx *l = ctx;
    if (l->who->tok && !token_allows_queue(l->who->tok, name)) return;
    jb_obj(l->b);
    jb_kstr(l->b, "name", name);
    api_json_counts(l->b, c, srv_now(l->s));
    api_json_rates(l->b, l->s, true, name);
    jb_obj_end(l->b);
}

/* "memory": what the jobs take against the budget, the args kept and read
 * back, and the load that brings the line in behind a serving leader. */
static void json_memory(jbuf *b, server *s)
{
    engine_memory m;
    engine_memory_usage(s->e, &m);
    engine_args_stats as;
    engine_args_usage(s->e, &as);
    jb_key(b, "memory");
    jb_obj(b);
    jb_kint(b, "budget", (long long)s->admit.budget);
    jb_kint(b, "jobs_budget", (long long)s->admit.jobs_budget);
    jb_kint(b, "jobs_bytes", (long long)m.bytes);
    jb_kint(b, "jobs", (long long)m.jobs);
    jb_kint(b, "args_budget", (long long)as.budget);
    jb_kint(b, "args_inline_bytes", (long long)as.inline_bytes);
    jb_kint(b, "args_cache_bytes", (long long)as.cache_bytes);
    jb_kint(b, "args_spilled_jobs", (long long)as.spilled);
    jb_kint(b, "args_read_ahead", (long long)s->args.rows_ahead);
    jb_kint(b, "args_misses", (long long)s->args.waited_jobs);
    jb_kint(b, "refused_overloaded", (long long)s->admit.refused_overloaded);
    jb_kint(b, "refused_quota", (long long)s->admit.refused_quota);
    jb_key(b, "loading");
    jb_bool(b, s->load_rest.active);
    jb_kint(b, "loaded_behind", (long long)s->load_rest.loaded);
    jb_obj_end(b);
}

void h_stats(server *s, http_req *req, const principal *who, const char **args)
{
    (void)args;
    int64_t now = srv_now(s);
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_kint(&b, "time", now);
    api_list_ctx l = {s, &b, who};
    jb_key(&b, "queues");
    jb_arr(&b);
    if (who->role == ROLE_TENANT && who->tok)
        engine_foreach_pair(s->e, now, stat_pair, &l);
    else
        engine_foreach_queue(s->e, now, stat_queue, &l);
    jb_arr_end(&b);
    if (who->role != ROLE_WORKER || !who->tok) {
        jb_key(&b, "tenants");
        jb_arr(&b);
        engine_foreach_tenant(s->e, now, api_list_tenant, &l);
        jb_arr_end(&b);
    }
    if (!who->tok || who->role == ROLE_ADMIN) {
        engine_counts tot;
        engine_totals(s->e, now, &tot);
        jb_key(&b, "totals");
        jb_obj(&b);
        api_json_counts(&b, &tot, now);
        api_json_rates(&b, s, true, "");
        jb_obj_end(&b);
        uint64_t tx, batches;
        store_counters(s->st, &tx, &batches);
        jb_key(&b, "server");
        jb_obj(&b);
        jb_kstr(&b, "store", store_backend(s->st));
        jb_kint(&b, "connections", (long long)http_server_connections(s->http));
        jb_kint(&b, "lease_waiters", (long long)s->waiters.n_lwait);
        jb_kint(&b, "commits", (long long)tx);
        jb_kint(&b, "batches", (long long)batches);
        jb_kint(&b, "requests", (long long)s->router.requests);
        jb_kint(&b, "uptime_ms", now - s->clock.wall0_ms);
        jb_obj_end(&b);
        jb_kint(&b, "keys", (long long)engine_key_count(s->e));
        jb_kint(&b, "keys_at_limit", (long long)engine_keys_at_limit(s->e));
        json_memory(&b, s);
    }
    jb_obj_end(&b);
    reply_json(req, 200, &b);
}

/* ---- lanes ----------------------------------------------------------------------------------- */

static bool lane_visible(void *ctx, const char *tenant, const char *queue)
{
    return auth_may_see_job(ctx, tenant, queue);
}

void h_lanes(server *s, http_req *req, const principal *who, const char **args)
{
    (void)args;
    long long k;
    if (!req_query_num(req, "limit", 20, 1, 1000, &k)) return;
    engine_lane_info *lanes = xmalloc((size_t)k * sizeof(*lanes));
    size_t total;
    /* a tenant's view (lanes and their count) is its own lanes only */
    size_t n = engine_top_lanes(s->e, (size_t)k, lanes, who->tok ? lane_visible : NULL, (void *)who,
                                &total);
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_kint(&b, "lanes_total", (long long)total);
    jb_key(&b, "lanes");
    jb_arr(&b);
    for (size_t i = 0; i < n; i++) {
        jb_obj(&b);
        jb_kstr(&b, "tenant", lanes[i].tenant);
        jb_kstr(&b, "queue", lanes[i].queue);
        jb_kstr(&b, "key", lanes[i].key);
        jb_kint(&b, "length", (long long)lanes[i].length);
        jb_kint(&b, "head_id", (long long)lanes[i].head_id);
        jb_kstr(&b, "head_state", engine_state_name(lanes[i].head_state));
        jb_kint(&b, "head_run_at", lanes[i].head_run_at);
        jb_obj_end(&b);
    }
    jb_arr_end(&b);
    jb_obj_end(&b);
    free(lanes);
    reply_json(req, 200, &b);
}

/* ---- metrics (Prometheus text) ----------------------------------------------------------------
 */

static void metric_label(jbuf *b, const char *v)
{
    for (; *v; v++) {
        if (*v == '\\' || *v == '"')
            jb_printf(b, "\\%c", *v);
        else if (*v == '\n')
            jb_text(b, "\\n", 2);
        else
            jb_text(b, v, 1);
    }
}

static void metric_counts(jbuf *b, const char *kind, const char *name, const engine_counts *c,
                          int64_t now)
{
#define METRIC_STATE_(sname, word, abi, skind, finished, help)                                     \
    TENQ_STATE_IF_LIVE(skind, {                                                                    \
        jb_printf(b, "tenq_%s_jobs{%s=\"", kind, kind);                                            \
        metric_label(b, name);                                                                     \
        jb_printf(b, "\",state=\"%s\"} %llu\n", #word, (unsigned long long)c->word);               \
    })
    TENQ_STATE_TABLE(METRIC_STATE_)
#undef METRIC_STATE_
    const char *totals[] = {"submitted", "succeeded", "failed", "dead", "cancelled", "expired"};
    uint64_t tv[] = {c->submitted_total, c->succeeded_total, c->failed_total,
                     c->dead_total,      c->cancelled_total, c->expired_total};
    for (int i = 0; i < 6; i++) {
        jb_printf(b, "tenq_%s_%s_total{%s=\"", kind, totals[i], kind);
        metric_label(b, name);
        jb_printf(b, "\"} %llu\n", (unsigned long long)tv[i]);
    }
    jb_printf(b, "tenq_%s_queued_bytes{%s=\"", kind, kind);
    metric_label(b, name);
    jb_printf(b, "\"} %llu\n", (unsigned long long)c->queued_bytes);
    jb_printf(b, "tenq_%s_lag_seconds{%s=\"", kind, kind);
    metric_label(b, name);
    jb_printf(b, "\"} %.3f\n",
              c->oldest_eligible ? (double)(now - c->oldest_eligible) / 1000.0 : 0);
}

/* A quota's limits (+Inf: none), beside the counts they bound. */
static void metric_quota(jbuf *b, const char *kind, const char *name, uint32_t max_queued,
                         int64_t max_bytes)
{
    jb_printf(b, "tenq_%s_max_queued{%s=\"", kind, kind);
    metric_label(b, name);
    if (max_queued == ENGINE_UNLIMITED)
        jb_printf(b, "\"} +Inf\n");
    else
        jb_printf(b, "\"} %u\n", max_queued);
    jb_printf(b, "tenq_%s_max_queued_bytes{%s=\"", kind, kind);
    metric_label(b, name);
    if (max_bytes <= 0)
        jb_printf(b, "\"} +Inf\n");
    else
        jb_printf(b, "\"} %lld\n", (long long)max_bytes);
}

static void metric_queue(void *ctx, const char *name, const engine_queue_settings *qs,
                         const engine_counts *c)
{
    api_list_ctx *l = ctx;
    metric_counts(l->b, "queue", name, c, srv_now(l->s));
    metric_quota(l->b, "queue", name, qs->max_queued, qs->max_queued_bytes);
}

static void metric_tenant(void *ctx, const char *name, const engine_tenant_settings *ts,
                          const engine_counts *c)
{
    api_list_ctx *l = ctx;
    metric_counts(l->b, "tenant", name, c, srv_now(l->s));
    jb_text(l->b, "tenq_tenant_slots{tenant=\"", 26);
    metric_label(l->b, name);
    if (ts->slots == ENGINE_UNLIMITED)
        jb_printf(l->b, "\"} +Inf\n");
    else
        jb_printf(l->b, "\"} %u\n", ts->slots);
    metric_quota(l->b, "tenant", name, ts->max_queued, ts->max_queued_bytes);
}

void h_metrics(server *s, http_req *req, const principal *who, const char **args)
{
    (void)who;
    (void)args;
    jbuf b;
    jb_init(&b);
    int64_t now = srv_now(s);
    api_list_ctx l = {s, &b, who};
    jb_printf(&b,
              "# HELP tenq_queue_jobs Jobs per queue by state.\n# TYPE tenq_queue_jobs gauge\n");
    engine_foreach_queue(s->e, now, metric_queue, &l);
    jb_printf(&b,
              "# HELP tenq_tenant_jobs Jobs per tenant by state.\n# TYPE tenq_tenant_jobs gauge\n");
    engine_foreach_tenant(s->e, now, metric_tenant, &l);
    uint64_t tx, batches;
    store_counters(s->st, &tx, &batches);
    uint64_t yields, yields_slow;
    http_server_yields(s->http, &yields, &yields_slow);
    jb_printf(&b,
              "# TYPE tenq_store_commits_total counter\ntenq_store_commits_total %llu\n"
              "# TYPE tenq_store_batches_total counter\ntenq_store_batches_total %llu\n"
              "# TYPE tenq_store_commit_failures_total counter\n"
              "tenq_store_commit_failures_total %llu\n"
              "# TYPE tenq_http_requests_total counter\ntenq_http_requests_total %llu\n"
              "# TYPE tenq_http_connections gauge\ntenq_http_connections %zu\n"
              "# TYPE tenq_lease_waiters gauge\ntenq_lease_waiters %zu\n"
              "# TYPE tenq_lanes gauge\ntenq_lanes %zu\n"
              "# HELP tenq_store_writer_idle 1 while the commit thread runs at idle priority "
              "(a quiet server).\n# TYPE tenq_store_writer_idle gauge\ntenq_store_writer_idle %d\n"
              "# HELP tenq_store_writer_raised_total Times the commit thread, at idle priority, "
              "waited for a CPU and was given normal priority back.\n"
              "# TYPE tenq_store_writer_raised_total counter\ntenq_store_writer_raised_total %llu\n"
              "# HELP tenq_http_idle_yields_total Yields of the CPU for requests that woke an "
              "idle server.\n# TYPE tenq_http_idle_yields_total counter\n"
              "tenq_http_idle_yields_total %llu\n"
              "# HELP tenq_http_idle_yields_slow_total Such yields that found the CPU busy "
              "(each stops them for a second).\n# TYPE tenq_http_idle_yields_slow_total counter\n"
              "tenq_http_idle_yields_slow_total %llu\n",
              (unsigned long long)tx, (unsigned long long)batches,
              (unsigned long long)s->commit.n_failed, (unsigned long long)s->router.requests,
              http_server_connections(s->http), s->waiters.n_lwait, engine_lane_count(s->e),
              store_writer_idle(s->st) ? 1 : 0, (unsigned long long)store_writer_raised(s->st),
              (unsigned long long)yields, (unsigned long long)yields_slow);
    jb_printf(&b,
              "# HELP tenq_keys Keys (concurrency keys) that resident jobs name.\n"
              "# TYPE tenq_keys gauge\ntenq_keys %zu\n"
              "# HELP tenq_keys_at_limit Such keys at their limit (their ready jobs held).\n"
              "# TYPE tenq_keys_at_limit gauge\ntenq_keys_at_limit %zu\n",
              engine_key_count(s->e), engine_keys_at_limit(s->e));
    if (s->tls) {
        tls_counts tc;
        tls_server_counts(s->tls, &tc);
        jb_printf(&b,
                  "# HELP tenq_tls_handshakes_total TLS handshakes by result: full, resumed "
                  "(a session resumed), failed.\n# TYPE tenq_tls_handshakes_total counter\n"
                  "tenq_tls_handshakes_total{result=\"full\"} %llu\n"
                  "tenq_tls_handshakes_total{result=\"resumed\"} %llu\n"
                  "tenq_tls_handshakes_total{result=\"failed\"} %llu\n",
                  (unsigned long long)tc.full, (unsigned long long)tc.resumed,
                  (unsigned long long)tc.failed);
    }
    store_timing tm;
    store_commit_timing(s->st, &tm);
    jb_printf(&b, "# HELP tenq_store_commit_seconds Time to write and sync a group commit.\n"
                  "# TYPE tenq_store_commit_seconds histogram\n");
    uint64_t cum = 0;
    for (int i = 0; i < STORE_HIST_BUCKETS; i++) {
        cum += tm.counts[i];
        if (i == STORE_HIST_BUCKETS - 1)
            jb_printf(&b, "tenq_store_commit_seconds_bucket{le=\"+Inf\"} %llu\n",
                      (unsigned long long)cum);
        else
            jb_printf(&b, "tenq_store_commit_seconds_bucket{le=\"%g\"} %llu\n",
                      store_hist_bounds_us[i] / 1e6, (unsigned long long)cum);
    }
    jb_printf(&b, "tenq_store_commit_seconds_sum %.6f\ntenq_store_commit_seconds_count %llu\n",
              tm.total_us / 1e6, (unsigned long long)cum);
    size_t nsched;
    uint64_t ticks, refused;
    srv_cron_counters(s, &nsched, &ticks, &refused);
    jb_printf(&b,
              "# HELP tenq_schedules Schedules (periodic jobs) this leader holds.\n"
              "# TYPE tenq_schedules gauge\ntenq_schedules %zu\n"
              "# HELP tenq_schedule_ticks_total Jobs submitted by schedules' ticks since this "
              "server began to lead.\n# TYPE tenq_schedule_ticks_total counter\n"
              "tenq_schedule_ticks_total %llu\n"
              "# HELP tenq_schedule_ticks_refused_total Ticks whose job the engine refused.\n"
              "# TYPE tenq_schedule_ticks_refused_total counter\n"
              "tenq_schedule_ticks_refused_total %llu\n",
              nsched, (unsigned long long)ticks, (unsigned long long)refused);
    jb_printf(&b,
              "# HELP tenq_batches Batches (groups of jobs with callbacks) this leader holds.\n"
              "# TYPE tenq_batches gauge\ntenq_batches %zu\n"
              "# HELP tenq_batches_open Batches still open (jobs pending).\n"
              "# TYPE tenq_batches_open gauge\ntenq_batches_open %zu\n"
              "# HELP tenq_batch_callbacks_total Callback jobs submitted since this server began "
              "to lead.\n# TYPE tenq_batch_callbacks_total counter\n"
              "tenq_batch_callbacks_total %llu\n",
              engine_batch_count(s->e), engine_batch_open_count(s->e),
              (unsigned long long)engine_batch_callbacks_made(s->e));
    jb_printf(&b,
              "# HELP tenq_event_waiters Jobs whose handler waits for an event.\n"
              "# TYPE tenq_event_waiters gauge\ntenq_event_waiters %zu\n"
              "# HELP tenq_events_kept Events that woke no job, kept for a later wait "
              "(--event-window).\n# TYPE tenq_events_kept gauge\ntenq_events_kept %zu\n",
              engine_event_waiters(s->e), engine_events_kept(s->e));
    jb_printf(&b,
              "# HELP tenq_leader 1 while this server leads its store and serves, else 0.\n"
              "# TYPE tenq_leader gauge\ntenq_leader %d\n"
              "# HELP tenq_leader_term The term this server leads under (0: none).\n"
              "# TYPE tenq_leader_term gauge\ntenq_leader_term %llu\n",
              srv_serving(s) ? 1 : 0, (unsigned long long)s->lead.term);
    engine_memory m;
    engine_memory_usage(s->e, &m);
    jb_printf(&b,
              "# HELP tenq_memory_budget_bytes What this server may use (--memory-budget).\n"
              "# TYPE tenq_memory_budget_bytes gauge\ntenq_memory_budget_bytes %llu\n"
              "# HELP tenq_memory_jobs_budget_bytes What its jobs may take of it; past it submits "
              "are refused (overloaded).\n"
              "# TYPE tenq_memory_jobs_budget_bytes gauge\ntenq_memory_jobs_budget_bytes %llu\n"
              "# HELP tenq_memory_jobs_bytes What the jobs in memory take (allocations and index "
              "entries).\n# TYPE tenq_memory_jobs_bytes gauge\ntenq_memory_jobs_bytes %zu\n"
              "# HELP tenq_memory_args_bytes Of which their args and payloads.\n"
              "# TYPE tenq_memory_args_bytes gauge\ntenq_memory_args_bytes %zu\n"
              "# HELP tenq_jobs_in_memory Jobs in memory (unfinished and dead).\n"
              "# TYPE tenq_jobs_in_memory gauge\ntenq_jobs_in_memory %zu\n"
              "# HELP tenq_submits_refused_total Submits refused whole, by reason.\n"
              "# TYPE tenq_submits_refused_total counter\n"
              "tenq_submits_refused_total{reason=\"quota_exceeded\"} %llu\n"
              "tenq_submits_refused_total{reason=\"overloaded\"} %llu\n",
              (unsigned long long)s->admit.budget, (unsigned long long)s->admit.jobs_budget,
              m.bytes, m.data_bytes, m.jobs, (unsigned long long)s->admit.refused_quota,
              (unsigned long long)s->admit.refused_overloaded);
    jb_printf(&b,
              "# HELP tenq_load_rest_active 1 while the plain jobs waiting in line are still "
              "being brought in behind the serving leader.\n"
              "# TYPE tenq_load_rest_active gauge\ntenq_load_rest_active %d\n"
              "# HELP tenq_load_rest_jobs Plain jobs the last such load brought in.\n"
              "# TYPE tenq_load_rest_jobs gauge\ntenq_load_rest_jobs %llu\n"
              "# HELP tenq_load_rest_parked_total Requests that waited for such a load to end.\n"
              "# TYPE tenq_load_rest_parked_total counter\ntenq_load_rest_parked_total %llu\n",
              s->load_rest.active ? 1 : 0, (unsigned long long)s->load_rest.loaded,
              (unsigned long long)s->load_rest.parked_total);
    engine_args_stats as;
    engine_args_usage(s->e, &as);
    jb_printf(&b,
              "# HELP tenq_args_budget_bytes Jobs' args kept in memory at most (--args-memory).\n"
              "# TYPE tenq_args_budget_bytes gauge\ntenq_args_budget_bytes %zu\n"
              "# HELP tenq_args_inline_bytes Args kept in their jobs.\n"
              "# TYPE tenq_args_inline_bytes gauge\ntenq_args_inline_bytes %zu\n"
              "# HELP tenq_args_cache_bytes Args of jobs out of memory, read back into the "
              "cache.\n# TYPE tenq_args_cache_bytes gauge\ntenq_args_cache_bytes %zu\n"
              "# TYPE tenq_args_cache_entries gauge\ntenq_args_cache_entries %zu\n"
              "# HELP tenq_args_spilled_jobs Jobs in memory whose args are in the store only.\n"
              "# TYPE tenq_args_spilled_jobs gauge\ntenq_args_spilled_jobs %zu\n"
              "# HELP tenq_args_reads_ahead_total Reads of args ahead of leases.\n"
              "# TYPE tenq_args_reads_ahead_total counter\ntenq_args_reads_ahead_total %llu\n"
              "# HELP tenq_args_read_ahead_total Args they brought back.\n"
              "# TYPE tenq_args_read_ahead_total counter\ntenq_args_read_ahead_total %llu\n"
              "# HELP tenq_args_leased_spilled_total Leased jobs whose args were out of memory "
              "(hits: found read ahead; the rest waited).\n"
              "# TYPE tenq_args_leased_spilled_total counter\n"
              "tenq_args_leased_spilled_total %llu\n"
              "# HELP tenq_args_waits_total Requests (leases, reads) that waited for a read of "
              "args, and their jobs (misses).\n# TYPE tenq_args_waits_total counter\n"
              "tenq_args_waits_total %llu\n# TYPE tenq_args_misses_total counter\n"
              "tenq_args_misses_total %llu\n",
              as.budget, as.inline_bytes, as.cache_bytes, as.cache_entries, as.spilled,
              (unsigned long long)s->args.reads_ahead, (unsigned long long)s->args.rows_ahead,
              (unsigned long long)s->args.leased_spilled, (unsigned long long)s->args.waits,
              (unsigned long long)s->args.waited_jobs);
    size_t len;
    char *body = jb_take(&b, &len);
    http_reply(req, 200, "text/plain; version=0.0.4", NULL, body, len);
    free(body);
}

/* This server's health and role (no token needed).  healthz (liveness):
 * 200 whenever the process answers, whatever its role or state -- its
 * status ("ok", "reloading" after a failed commit, "stopping") is in the
 * body: a leader that reloads serves reads and recovers by itself (a full
 * disk: once space returns), and a restart would fix nothing.  readyz
 * (readiness): 200 only on the leader that serves and takes writes; 503
 * while it reloads, stops, or stands by (for load balancers). */
static void health(server *s, http_req *req, bool ready)
{
    char url[256];
    bool other = lead_leader(s, url, sizeof url);
    const char *status = s->stopping ? "stopping" : s->lead.resyncing ? "reloading" : "ok";
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_kstr(&b, "status", status);
    jb_kstr(&b, "role", s->lead.leading ? "leader" : "standby");
    jb_kstr(&b, "store", store_backend(s->st));
    jb_kstr(&b, "node", lead_node(s));
    jb_kstr(&b, "advertise", lead_advertise(s));
    jb_kint(&b, "term", (long long)s->lead.term);
    if (s->lead.leading)
        jb_kstr(&b, "leader", lead_advertise(s));
    else if (other)
        jb_kstr(&b, "leader", url);
    else
        jb_kraw(&b, "leader", "null");
    /* a leader still bringing in the jobs waiting in line (load_rest.c) */
    jb_key(&b, "loading");
    jb_bool(&b, s->lead.leading && s->load_rest.active);
    jb_obj_end(&b);
    bool ok = !ready || (srv_serving(s) && !s->stopping);
    reply_json(req, ok ? 200 : 503, &b);
}

void h_healthz(server *s, http_req *req, const principal *who, const char **args)
{
    (void)who;
    (void)args;
    health(s, req, false);
}

void h_readyz(server *s, http_req *req, const principal *who, const char **args)
{
    (void)who;
    (void)args;
    health(s, req, true);
}
