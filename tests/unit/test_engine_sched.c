// SPDX-License-Identifier: Apache-2.0
/* One test per rule of SEMANTICS.md, named after the rule: slots, fifo and fair
 * order, priorities, type filters, stats. */
#include "engine_helpers.h"

#define T0 1700000000000LL

/* ---- slots ------------------------------------------------------------------ */

TEST(slots_limit_leased_and_running_jobs_per_tenant_across_queues)
{
    engine_t *e = mk_engine();
    set_slots(e, "a", 3, 1);
    for (int i = 0; i < 5; i++) {
        SUB(e, T0, "a", "q1");
        SUB(e, T0, "a", "q2");
    }
    uint64_t ids[10];
    ASSERT_EQ(lease_q(e, T0, "q1", 2, ids), 2);
    engine_start(e, T0, ids[0], token_of(e, ids[0]), NULL); /* running counts too */
    ASSERT_EQ(lease_q(e, T0, "q2", 5, ids + 2), 1);         /* one slot left */
    ASSERT_EQ(lease_q(e, T0, "q1", 5, ids + 3), 0);
    engine_tenant_settings s;
    engine_counts cnt;
    engine_tenant_get(e, T0, "a", &s, &cnt);
    ASSERT_EQ(cnt.leased + cnt.running, 3);
    ack_ok(e, T0, ids[1]);
    ASSERT_EQ(lease_q(e, T0, "q1", 5, ids + 3), 1); /* a slot came back */
    must_check(e, T0);
    engine_destroy(e);
}

TEST(slots_zero_pauses_the_tenant)
{
    engine_t *e = mk_engine();
    set_slots(e, "a", 0, 1);
    SUB(e, T0, "a", "q");
    uint64_t b = SUB(e, T0, "b", "q");
    ASSERT_EQ(lease1(e, T0, "q"), b);
    ASSERT_EQ(lease1(e, T0, "q"), 0);
    set_slots(e, "a", 1, 1);
    ASSERT(lease1(e, T0, "q") != 0);
    must_check(e, T0);
    engine_destroy(e);
}

TEST(slots_change_takes_effect_at_once_while_jobs_run)
{
    engine_t *e = mk_engine();
    set_slots(e, "a", 4, 1);
    for (int i = 0; i < 10; i++) SUB(e, T0, "a", "q");
    uint64_t ids[10];
    ASSERT_EQ(lease_q(e, T0, "q", 10, ids), 4);
    set_slots(e, "a", 2, 1); /* lowered below what runs: running jobs go on */
    must_check(e, T0);
    ack_ok(e, T0, ids[0]);
    ASSERT_EQ(lease1(e, T0, "q"), 0); /* 3 active, limit 2 */
    ack_ok(e, T0, ids[1]);
    ASSERT_EQ(lease1(e, T0, "q"), 0); /* 2 active, limit 2 */
    ack_ok(e, T0, ids[2]);
    ASSERT(lease1(e, T0, "q") != 0); /* 1 active: room for one */
    ASSERT_EQ(lease1(e, T0, "q"), 0);
    set_slots(e, "a", 5, 1); /* raised: room at once */
    ASSERT_EQ(lease_q(e, T0, "q", 10, ids), 3);
    must_check(e, T0);
    engine_destroy(e);
}

TEST(full_tenant_does_not_slow_or_block_other_tenants)
{
    engine_t *e = mk_engine();
    set_slots(e, "big", 1, 1);
    for (int i = 0; i < 20000; i++) SUB(e, T0, "big", "q", .priority = 10);
    ASSERT(lease1(e, T0, "q") != 0); /* big is now full */
    uint64_t small = SUB(e, T0 + 1, "small", "q");
    /* big's 19,999 higher-priority jobs are not eligible; small's is next */
    ASSERT_EQ(lease1(e, T0 + 1, "q"), small);
    must_check(e, T0 + 1);
    engine_destroy(e);
}

TEST(queue_tenant_cap_limits_a_tenant_within_one_queue)
{
    engine_t *e = mk_engine();
    engine_queue_settings s = queue_settings(e, "capped");
    s.tenant_cap = 2;
    set_queue(e, "capped", s);
    for (int i = 0; i < 5; i++) {
        SUB(e, T0, "a", "capped");
        SUB(e, T0, "a", "free");
    }
    uint64_t ids[10];
    ASSERT_EQ(lease_q(e, T0, "capped", 10, ids), 2);
    ASSERT_EQ(lease_q(e, T0, "free", 10, ids + 2), 5); /* other queues are not capped */
    uint64_t b = SUB(e, T0, "b", "capped");
    ASSERT_EQ(lease1(e, T0, "capped"), b); /* the cap is per tenant */
    s.tenant_cap = 3;
    set_queue(e, "capped", s);
    ASSERT_EQ(lease_q(e, T0, "capped", 10, ids), 1);
    must_check(e, T0);
    engine_destroy(e);
}

/* ---- order ------------------------------------------------------------------ */

TEST(fifo_order_is_priority_then_run_at_then_id_across_tenants)
{
    engine_t *e = mk_engine();
    uint64_t a1 = SUB(e, T0, "a", "q");
    uint64_t b1 = SUB(e, T0, "b", "q");
    uint64_t b_hi = SUB(e, T0 + 5, "b", "q", .priority = 5);
    uint64_t a_lo = SUB(e, T0 + 5, "a", "q", .priority = -1);
    uint64_t c_early = SUB(e, T0 + 5, "c", "q", .run_at = T0 + 6); /* scheduled */
    engine_tick(e, T0 + 10);
    /* c_early has run_at T0+6: later than a1/b1 (T0), earlier than nothing else at prio 0 */
    uint64_t ids[10];
    ASSERT_EQ(lease_q(e, T0 + 10, "q", 10, ids), 5);
    ASSERT_EQ(ids[0], b_hi);
    ASSERT_EQ(ids[1], a1);
    ASSERT_EQ(ids[2], b1);
    ASSERT_EQ(ids[3], c_early);
    ASSERT_EQ(ids[4], a_lo);
    engine_destroy(e);
}

TEST(priority_higher_runs_first)
{
    engine_t *e = mk_engine();
    uint64_t lo = SUB(e, T0, "a", "q", .priority = -100);
    uint64_t mid = SUB(e, T0, "a", "q");
    uint64_t hi = SUB(e, T0, "a", "q", .priority = 100);
    ASSERT_EQ(lease1(e, T0, "q"), hi);
    ASSERT_EQ(lease1(e, T0, "q"), mid);
    ASSERT_EQ(lease1(e, T0, "q"), lo);
    engine_destroy(e);
}

TEST(run_at_in_the_future_waits_until_due)
{
    engine_t *e = mk_engine();
    uint64_t id = SUB(e, T0, "a", "q", .run_at = T0 + 1000);
    ASSERT_EQ(state_of(e, id), ENGINE_SCHEDULED);
    ASSERT_EQ(engine_next_timer(e), T0 + 1000);
    ASSERT_EQ(lease1(e, T0 + 999, "q"), 0);
    engine_tick(e, T0 + 999);
    ASSERT_EQ(state_of(e, id), ENGINE_SCHEDULED);
    engine_tick(e, T0 + 1000);
    ASSERT_EQ(state_of(e, id), ENGINE_READY);
    ASSERT_EQ(info_of(e, id).ready_at, T0 + 1000);
    ASSERT_EQ(lease1(e, T0 + 1000, "q"), id);
    /* a run_at in the past means now */
    uint64_t past = SUB(e, T0 + 2000, "a", "q", .run_at = 5);
    ASSERT_EQ(state_of(e, past), ENGINE_READY);
    ASSERT_EQ(info_of(e, past).run_at, T0 + 2000);
    engine_destroy(e);
}

TEST(fair_order_tenants_take_turns_by_weight)
{
    engine_t *e = mk_engine();
    engine_queue_settings s = queue_settings(e, "f");
    s.order = ENGINE_ORDER_FAIR;
    set_queue(e, "f", s);
    set_slots(e, "heavy", ENGINE_UNLIMITED, 2);
    /* light submitted first: fifo would run all of them first */
    for (int i = 0; i < 30; i++) SUB(e, T0, "light", "f");
    for (int i = 0; i < 60; i++) SUB(e, T0 + 1, "heavy", "f");
    for (int i = 0; i < 30; i++) SUB(e, T0 + 2, "third", "f");
    int counts[3] = {0};
    uint64_t ids[60];
    ASSERT_EQ(lease_q(e, T0 + 3, "f", 40, ids), 40);
    for (int i = 0; i < 40; i++) {
        const char *t = engine_job_tenant(engine_find(e, ids[i]));
        counts[strcmp(t, "light") == 0 ? 0 : strcmp(t, "heavy") == 0 ? 1 : 2]++;
    }
    /* weights 1:2:1 over 40 picks: 10/20/10, give or take one turn */
    ASSERT_MSG(counts[0] >= 9 && counts[0] <= 11, "light %d", counts[0]);
    ASSERT_MSG(counts[1] >= 19 && counts[1] <= 21, "heavy %d", counts[1]);
    ASSERT_MSG(counts[2] >= 9 && counts[2] <= 11, "third %d", counts[2]);
    must_check(e, T0 + 3);
    engine_destroy(e);
}

TEST(fair_order_keeps_fifo_within_a_tenant)
{
    engine_t *e = mk_engine();
    engine_queue_settings s = queue_settings(e, "f");
    s.order = ENGINE_ORDER_FAIR;
    set_queue(e, "f", s);
    uint64_t a1 = SUB(e, T0, "a", "f");
    uint64_t a2 = SUB(e, T0, "a", "f");
    uint64_t a3 = SUB(e, T0, "a", "f", .priority = 3);
    uint64_t b1 = SUB(e, T0, "b", "f");
    uint64_t ids[4];
    ASSERT_EQ(lease_q(e, T0, "f", 4, ids), 4);
    /* a and b alternate; within a: priority, then id */
    uint64_t a_order[3], k = 0;
    for (int i = 0; i < 4; i++)
        if (ids[i] != b1) a_order[k++] = ids[i];
    ASSERT_EQ(a_order[0], a3);
    ASSERT_EQ(a_order[1], a1);
    ASSERT_EQ(a_order[2], a2);
    ASSERT(ids[0] == b1 || ids[1] == b1); /* b does not wait behind all of a */
    engine_destroy(e);
}

TEST(fair_order_idle_tenant_does_not_bank_turns)
{
    engine_t *e = mk_engine();
    engine_queue_settings s = queue_settings(e, "f");
    s.order = ENGINE_ORDER_FAIR;
    set_queue(e, "f", s);
    for (int i = 0; i < 100; i++) SUB(e, T0, "busy", "f");
    uint64_t ids[100];
    ASSERT_EQ(lease_q(e, T0, "f", 50, ids), 50);
    /* a tenant that was idle while busy ran 50 jobs gets its fair turn, not 50 */
    for (int i = 0; i < 20; i++) SUB(e, T0 + 1, "late", "f");
    ASSERT_EQ(lease_q(e, T0 + 1, "f", 10, ids), 10);
    int late = 0;
    for (int i = 0; i < 10; i++)
        late += strcmp(engine_job_tenant(engine_find(e, ids[i])), "late") == 0;
    ASSERT_MSG(late >= 4 && late <= 6, "late got %d of 10", late);
    engine_destroy(e);
}

TEST(fair_order_change_at_run_time)
{
    engine_t *e = mk_engine();
    for (int i = 0; i < 10; i++) SUB(e, T0, "a", "q");
    for (int i = 0; i < 10; i++) SUB(e, T0 + 1, "b", "q");
    engine_queue_settings s = queue_settings(e, "q");
    s.order = ENGINE_ORDER_FAIR;
    set_queue(e, "q", s);
    must_check(e, T0 + 2);
    uint64_t ids[4];
    lease_q(e, T0 + 2, "q", 4, ids);
    int b = 0;
    for (int i = 0; i < 4; i++) b += strcmp(engine_job_tenant(engine_find(e, ids[i])), "b") == 0;
    ASSERT_EQ(b, 2);
    engine_destroy(e);
}

TEST(type_filter_leases_only_those_types)
{
    engine_t *e = mk_engine();
    engine_submit_res x = submit_x(e, T0, "a", "q", "Mail.send", (sub_opts){0});
    engine_submit_res y = submit_x(e, T0, "a", "q", "Report.run", (sub_opts){.priority = 9});
    const char *qs[] = {"q"}, *types[] = {"Mail.send"};
    engine_lease_req req = {
        .queues = qs, .n_queues = 1, .types = types, .n_types = 1, .max = 5, .worker = "w"};
    engine_job *out[5];
    ASSERT_EQ(engine_lease(e, T0, &req, out), 1);
    ASSERT_EQ(engine_job_id(out[0]), x.id);
    ASSERT_EQ(lease1(e, T0, "q"), y.id);
    engine_destroy(e);
}

TEST(several_queues_in_one_lease_go_by_priority_then_age)
{
    engine_t *e = mk_engine();
    uint64_t old = SUB(e, T0, "a", "q1");
    uint64_t newer = SUB(e, T0 + 5, "a", "q2");
    uint64_t urgent = SUB(e, T0 + 9, "a", "q2", .priority = 1);
    const char *qs[] = {"q1", "q2", "unknown"};
    engine_lease_req req = {.queues = qs, .n_queues = 3, .max = 5, .worker = "w"};
    engine_job *out[5];
    ASSERT_EQ(engine_lease(e, T0 + 10, &req, out), 3);
    ASSERT_EQ(engine_job_id(out[0]), urgent);
    ASSERT_EQ(engine_job_id(out[1]), old);
    ASSERT_EQ(engine_job_id(out[2]), newer);
    engine_destroy(e);
}

/* ---- stats ---------------------------------------------------------------------------- */

TEST(stats_count_every_state_and_the_lag)
{
    engine_t *e = mk_engine();
    set_slots(e, "a", 2, 1);
    SUB(e, T0, "a", "q");
    SUB(e, T0 + 10, "a", "q");
    SUB(e, T0 + 20, "a", "q");
    SUB(e, T0, "a", "q", .run_at = T0 + 99999);
    SUB(e, T0, "a", "q", .key = "L");
    SUB(e, T0, "a", "q", .key = "L");
    kill_one(e, T0, "b", "q", "Dies");
    uint64_t ids[2];
    lease_q(e, T0 + 30, "q", 1, ids);
    engine_counts c;
    engine_queue_get(e, T0 + 100, "q", NULL, &c);
    ASSERT_EQ(c.leased, 1);
    ASSERT_EQ(c.ready, 3);
    ASSERT_EQ(c.scheduled, 1);
    ASSERT_EQ(c.blocked, 1);
    ASSERT_EQ(c.dead, 1);
    ASSERT_EQ(c.eligible, 3);
    ASSERT(c.oldest_eligible == T0);  /* lag = now - oldest */
    lease_q(e, T0 + 30, "q", 1, ids); /* a is now full: its ready jobs are not eligible */
    engine_queue_get(e, T0 + 100, "q", NULL, &c);
    ASSERT_EQ(c.eligible, 0);
    ASSERT_EQ(c.oldest_eligible, 0);
    engine_tenant_get(e, T0, "a", NULL, &c);
    ASSERT_EQ(c.leased, 2);
    engine_destroy(e);
}
