// SPDX-License-Identifier: Apache-2.0
/* Operations in the engine: a queue paused whole or for one tenant (never
 * leased while paused, eligible again at once when resumed, noted for the
 * store), and server-side timeouts (an attempt fails at leased_at + timeout
 * whatever its heartbeats, never before). */
#include "engine_helpers.h"

#define T0 1700000000000LL

static void pause_tenant(engine_t *e, const char *q, const char *t, bool on)
{
    engine_err err;
    ASSERT_EQ(engine_pause_tenant(e, T0, q, t, on, &err), 0);
}

static size_t pause_changes(engine_t *e, const char **tenant, bool *paused)
{
    size_t n, found = 0;
    const engine_change *c = engine_changes(e, &n);
    for (size_t i = 0; i < n; i++)
        if (c[i].kind == ENGINE_CH_PAUSE) {
            found++;
            *tenant = c[i].tenant;
            *paused = c[i].fields != 0;
        }
    return found;
}

TEST(a_paused_queue_leases_nothing_and_resumes_where_it_was)
{
    engine_t *e = mk_engine();
    uint64_t a = SUB(e, T0, "t", "q");
    uint64_t b = SUB(e, T0, "u", "q");
    engine_queue_settings qs = queue_settings(e, "q");
    qs.paused = true;
    set_queue(e, "q", qs);
    engine_wait w;
    engine_job_wait(engine_find(e, a), &w);
    ASSERT_EQ(w.kind, ENGINE_WAIT_QUEUE_PAUSED);
    ASSERT_STR(engine_wait_name(w.kind), "queue_paused");
    uint64_t ids[4];
    ASSERT_EQ(lease_q(e, T0, "q", 4, ids), 0);
    engine_counts c;
    engine_queue_get(e, T0, "q", NULL, &c);
    ASSERT_EQ(c.eligible, 0);
    ASSERT_EQ(c.ready, 2);
    must_check(e, T0);
    qs.paused = false;
    set_queue(e, "q", qs);
    ASSERT_EQ(lease_q(e, T0, "q", 4, ids), 2);
    ASSERT_EQ(ids[0], a);
    ASSERT_EQ(ids[1], b);
    must_check(e, T0);
    engine_destroy(e);
}

TEST(a_queue_paused_for_one_tenant_serves_the_others_and_notes_the_change)
{
    engine_t *e = mk_engine();
    uint64_t a = SUB(e, T0, "held", "q");
    uint64_t b = SUB(e, T0, "free", "q");
    uint64_t other = SUB(e, T0, "held", "r"); /* another queue: not paused */
    engine_changes_clear(e);
    pause_tenant(e, "q", "held", true);
    const char *tenant = NULL;
    bool paused = false;
    ASSERT_EQ(pause_changes(e, &tenant, &paused), 1);
    ASSERT_STR(tenant, "held");
    ASSERT(paused);
    engine_changes_clear(e);
    pause_tenant(e, "q", "held", true); /* no change: nothing noted */
    ASSERT_EQ(pause_changes(e, &tenant, &paused), 0);
    ASSERT(engine_tenant_paused(e, "q", "held"));
    ASSERT(!engine_tenant_paused(e, "r", "held"));
    engine_wait w;
    engine_job_wait(engine_find(e, a), &w);
    ASSERT_EQ(w.kind, ENGINE_WAIT_TENANT_PAUSED);
    ASSERT_EQ(lease1(e, T0, "q"), b);
    ASSERT_EQ(lease1(e, T0, "q"), 0);
    ASSERT_EQ(lease1(e, T0, "r"), other);
    must_check(e, T0);
    pause_tenant(e, "q", "held", false);
    ASSERT_EQ(pause_changes(e, &tenant, &paused), 1);
    ASSERT(!paused);
    ASSERT_EQ(lease1(e, T0, "q"), a);
    must_check(e, T0);
    engine_destroy(e);
}

TEST(a_pause_made_before_any_job_holds_for_jobs_that_come_later)
{
    engine_t *e = mk_engine();
    pause_tenant(e, "q", "later", true);
    uint64_t a = SUB(e, T0, "later", "q");
    ASSERT_EQ(lease1(e, T0, "q"), 0);
    /* a slot freed elsewhere does not make the paused pair eligible */
    set_slots(e, "later", 5, 1);
    ASSERT_EQ(lease1(e, T0, "q"), 0);
    pause_tenant(e, "q", "later", false);
    ASSERT_EQ(lease1(e, T0, "q"), a);
    must_check(e, T0);
    engine_destroy(e);
}

TEST(bad_pauses_are_refused_and_change_nothing)
{
    engine_t *e = mk_engine();
    engine_err err;
    ASSERT_EQ(engine_pause_tenant(e, T0, "bad queue", "t", true, &err), TENQ_EINVALID);
    ASSERT_STR(err.field, "queue");
    ASSERT_EQ(engine_pause_tenant(e, T0, "q", "", true, &err), TENQ_EINVALID);
    ASSERT_STR(err.field, "tenant");
    ASSERT_EQ(engine_change_count(e), 0);
    engine_destroy(e);
}

TEST(an_attempt_fails_at_its_timeout_though_it_heartbeats_and_never_before)
{
    engine_t *e = mk_engine();
    engine_queue_settings qs = queue_settings(e, "q");
    qs.lease_ms = 3000;
    qs.timeout_ms = 5000;
    set_queue(e, "q", qs);
    uint64_t id = SUB(e, T0, "t", "q");
    ASSERT_EQ(lease1(e, T0, "q"), id);
    ASSERT_EQ(info_of(e, id).lease_until, T0 + 3000);
    uint64_t tok = token_of(e, id);
    int64_t until = 0;
    bool cancel;
    engine_err err;
    ASSERT_EQ(engine_heartbeat(e, T0 + 2500, id, tok, NULL, &until, &cancel, &err), 0);
    ASSERT_EQ(until, T0 + 5000); /* cut at the timeout, not T0 + 5500 */
    engine_tick(e, T0 + 4999);
    ASSERT_EQ(state_of(e, id), ENGINE_LEASED);
    ASSERT_EQ(engine_heartbeat(e, T0 + 4999, id, tok, NULL, &until, &cancel, &err), 0);
    ASSERT_EQ(until, T0 + 5000);
    ASSERT_EQ(engine_next_timer(e), T0 + 5000);
    engine_tick(e, T0 + 5000);
    ASSERT_EQ(state_of(e, id), ENGINE_SCHEDULED);
    engine_job_info in = info_of(e, id);
    ASSERT(strstr(in.error, "timed out") != NULL);
    ASSERT_EQ(in.attempts, 1);
    ASSERT_EQ(engine_heartbeat(e, T0 + 5001, id, tok, NULL, &until, &cancel, &err), TENQ_ECONFLICT);
    must_check(e, T0 + 5001);
    engine_destroy(e);
}

TEST(a_lapsed_lease_is_still_an_expiry_not_a_timeout)
{
    engine_t *e = mk_engine();
    engine_queue_settings qs = queue_settings(e, "q");
    qs.lease_ms = 1000;
    qs.timeout_ms = 60000;
    set_queue(e, "q", qs);
    uint64_t id = SUB(e, T0, "t", "q");
    lease1(e, T0, "q");
    engine_tick(e, T0 + 1000);
    ASSERT_STR(info_of(e, id).error, "lease expired");
    engine_destroy(e);
}

TEST(a_jobs_own_timeout_overrides_its_queues_and_is_checked)
{
    engine_t *e = mk_engine();
    engine_queue_settings qs = queue_settings(e, "q");
    qs.lease_ms = 3000;
    qs.timeout_ms = 60000;
    set_queue(e, "q", qs);
    uint64_t id = SUB(e, T0, "t", "q", .timeout_ms = 2000);
    ASSERT_EQ(info_of(e, id).timeout_ms, 2000);
    lease1(e, T0, "q");
    ASSERT_EQ(info_of(e, id).lease_until, T0 + 2000);
    engine_tick(e, T0 + 2000);
    ASSERT(strstr(info_of(e, id).error, "timed out") != NULL);
    /* below a third of the lease, or past 7 days: refused, nothing made */
    size_t before = engine_change_count(e);
    engine_submit_res r = submit_x(e, T0, "t", "q", "T", (sub_opts){.timeout_ms = 999});
    ASSERT_EQ(r.code, TENQ_EINVALID);
    ASSERT_STR(r.err.field, "timeout_ms");
    r = submit_x(e, T0, "t", "q", "T", (sub_opts){.timeout_ms = 8 * TQ_DAY_MS});
    ASSERT_EQ(r.code, TENQ_EINVALID);
    ASSERT_EQ(engine_change_count(e), before);
    engine_destroy(e);
}

TEST(a_queues_timeout_below_a_third_of_its_lease_is_refused)
{
    engine_t *e = mk_engine();
    engine_queue_settings qs;
    engine_queue_settings_defaults(&qs);
    qs.lease_ms = 30000;
    qs.timeout_ms = 9999;
    engine_err err;
    ASSERT_EQ(engine_queue_set(e, T0, "q", &qs, &err), TENQ_EINVALID);
    ASSERT_STR(err.field, "timeout_ms");
    ASSERT_EQ(engine_queue_get(e, T0, "q", NULL, NULL), TENQ_ENOT_FOUND);
    qs.timeout_ms = 10000;
    ASSERT_EQ(engine_queue_set(e, T0, "q", &qs, &err), 0);
    engine_destroy(e);
}

TEST(a_loaded_job_keeps_its_timeout_and_a_loaded_lease_its_cut_deadline)
{
    engine_t *e = mk_engine();
    uint64_t id = SUB(e, T0, "t", "q", .timeout_ms = 200000);
    lease1(e, T0, "q");
    engine_job_info in = info_of(e, id);
    engine_t *f = mk_engine();
    engine_err err;
    ASSERT_EQ(engine_load_job(f, T0, &in, &err), 0);
    ASSERT_EQ(info_of(f, id).timeout_ms, 200000);
    ASSERT_EQ(info_of(f, id).lease_until, T0 + 200000);
    engine_tick(f, T0 + 200000);
    ASSERT(strstr(info_of(f, id).error, "timed out") != NULL);
    engine_destroy(f);
    engine_destroy(e);
}

TEST(bulk_actions_touch_matching_jobs_only_and_a_dry_run_nothing)
{
    engine_t *e = mk_engine();
    uint64_t a = SUB(e, T0, "t", "q", .key = "k");
    uint64_t b = SUB(e, T0, "t", "q", .key = "k"); /* blocked behind a */
    uint64_t c = SUB(e, T0, "u", "q");
    uint64_t later = SUB(e, T0, "t", "q", .run_at = T0 + 60000);
    engine_job_filter f = {.tenant = "t", .queue = "q"};
    size_t changed = 9;
    ASSERT_EQ(engine_bulk(e, T0, &f, ENGINE_BULK_CANCEL, 0, true, 100, &changed), 3);
    ASSERT_EQ(changed, 0);
    ASSERT_EQ(state_of(e, a), ENGINE_READY);
    /* retry now: only the scheduled one */
    ASSERT_EQ(engine_bulk(e, T0 + 5, &f, ENGINE_BULK_RETRY_NOW, 0, false, 100, &changed), 1);
    ASSERT_EQ(state_of(e, later), ENGINE_READY);
    ASSERT_EQ(info_of(e, later).run_at, T0 + 5);
    /* priority: a ready job keeps its place in time */
    int64_t ready_at = info_of(e, c).ready_at;
    engine_job_filter fu = {.tenant = "u"};
    ASSERT_EQ(engine_bulk(e, T0 + 9, &fu, ENGINE_BULK_PRIORITY, 7, false, 100, &changed), 1);
    ASSERT_EQ(info_of(e, c).priority, 7);
    ASSERT_EQ(info_of(e, c).ready_at, ready_at);
    ASSERT_EQ(lease1(e, T0 + 9, "q"), c);
    /* cancel by lane key: the head and the job behind it, in lane order */
    engine_job_filter fk = {.key = "k"};
    ASSERT_EQ(engine_bulk(e, T0 + 10, &fk, ENGINE_BULK_CANCEL, 0, false, 100, &changed), 2);
    ASSERT_EQ(changed, 2);
    ASSERT_EQ(state_of(e, a), ENGINE_CANCELLED);
    ASSERT_EQ(state_of(e, b), ENGINE_CANCELLED);
    ASSERT_EQ(state_of(e, later), ENGINE_READY);
    must_check(e, T0 + 10);
    engine_destroy(e);
}
