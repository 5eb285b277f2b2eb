// SPDX-License-Identifier: Apache-2.0
/* Rate limits (rate.c): at most `rate` starts per period per queue, per
 * tenant and per tenant in a queue, with bursts; held exactly with a clock
 * the test drives; closed limits cost other tenants nothing; a restart
 * begins with its limits used up. */
#include "engine_helpers.h"

#define T0 1700000000000LL

static void queue_rate(engine_t *e, const char *q, uint32_t rate, uint32_t tenant_rate,
                       int64_t period, uint32_t burst)
{
    engine_queue_settings s = queue_settings(e, q);
    s.rate = rate;
    s.tenant_rate = tenant_rate;
    s.rate_period_ms = period;
    s.rate_burst = burst;
    set_queue(e, q, s);
}

static void tenant_rate(engine_t *e, const char *t, uint32_t rate, int64_t period, uint32_t burst)
{
    engine_tenant_settings s;
    engine_tenant_settings_defaults(&s);
    engine_tenant_get(e, T0, t, &s, NULL);
    s.rate = rate;
    s.rate_period_ms = period;
    s.rate_burst = burst;
    engine_err err;
    if (engine_tenant_set(e, T0, t, &s, &err)) test_fail(__FILE__, __LINE__, "%s", err.message);
}

static size_t lease_all(engine_t *e, int64_t now, const char *q)
{
    uint64_t ids[256];
    size_t got = 0, n;
    engine_tick(e, now);
    while ((n = lease_q(e, now, q, 256, ids)) > 0) {
        for (size_t i = 0; i < n; i++) ack_ok(e, now, ids[i]);
        got += n;
        engine_changes_clear(e);
    }
    return got;
}

static void submit_n(engine_t *e, const char *t, const char *q, int n)
{
    for (int i = 0; i < n; i++) SUB(e, T0, t, q);
    engine_changes_clear(e);
}

/* Why the first ready job among ids 1..max waits. */
static engine_wait first_ready_wait(engine_t *e, uint64_t max)
{
    engine_wait w = {0};
    for (uint64_t id = 1; id <= max; id++) {
        engine_job *j = engine_find(e, id);
        if (!j || engine_job_state(j) != ENGINE_READY) continue;
        engine_job_wait(j, &w);
        break;
    }
    return w;
}

TEST(a_queue_rate_of_1000_a_second_is_held_exactly)
{
    engine_t *e = mk_engine();
    queue_rate(e, "q", 1000, ENGINE_UNLIMITED, 1000, ENGINE_UNLIMITED);
    submit_n(e, "t", "q", 12000);
    size_t per_ms[5001] = {0}, total = 0;
    for (int64_t ms = 0; ms <= 5000; ms++) {
        per_ms[ms] = lease_all(e, T0 + ms, "q");
        total += per_ms[ms];
    }
    /* a burst of one period's worth, then exactly one start a millisecond */
    ASSERT_EQ(per_ms[0], 1000);
    for (int64_t ms = 1; ms <= 5000; ms++) ASSERT_EQ(per_ms[ms], 1);
    ASSERT_EQ(total, 6000);
    /* every second after the burst: exactly 1000 */
    for (int64_t from = 1; from + 1000 <= 5001; from += 250) {
        size_t n = 0;
        for (int64_t ms = from; ms < from + 1000; ms++) n += per_ms[ms];
        ASSERT_EQ(n, 1000);
    }
    must_check(e, T0 + 5000);
    engine_destroy(e);
}

TEST(a_tenant_rate_of_one_a_minute_waits_a_minute_and_says_until_when)
{
    engine_t *e = mk_engine();
    tenant_rate(e, "slow", 1, 60000, ENGINE_UNLIMITED);
    submit_n(e, "slow", "q", 3);
    ASSERT_EQ(lease_all(e, T0, "q"), 1);
    uint64_t ids[4];
    engine_tick(e, T0 + 30000);
    ASSERT_EQ(lease_q(e, T0 + 30000, "q", 4, ids), 0);
    engine_counts c;
    engine_tenant_get(e, T0, "slow", NULL, &c);
    ASSERT_EQ(c.rate_until, T0 + 60000);
    ASSERT_EQ(c.eligible, 0);
    ASSERT_EQ(engine_next_timer(e), T0 + 60000);
    /* why the next job waits */
    engine_wait w = first_ready_wait(e, 3);
    ASSERT_EQ(w.kind, ENGINE_WAIT_TENANT_RATE);
    ASSERT_STR(engine_wait_name(w.kind), "tenant_rate");
    ASSERT_EQ(w.until, T0 + 60000);
    ASSERT_EQ(lease_all(e, T0 + 59999, "q"), 0);
    ASSERT_EQ(lease_all(e, T0 + 60000, "q"), 1);
    ASSERT_EQ(lease_all(e, T0 + 119999, "q"), 0);
    ASSERT_EQ(lease_all(e, T0 + 120000, "q"), 1);
    must_check(e, T0 + 120000);
    engine_destroy(e);
}

TEST(a_tenant_rate_counts_its_starts_in_every_queue)
{
    engine_t *e = mk_engine();
    tenant_rate(e, "t", 2, 1000, ENGINE_UNLIMITED);
    submit_n(e, "t", "a", 5);
    submit_n(e, "t", "b", 5);
    ASSERT_EQ(lease_all(e, T0, "a") + lease_all(e, T0, "b"), 2);
    ASSERT_EQ(lease_all(e, T0 + 499, "b"), 0);
    ASSERT_EQ(lease_all(e, T0 + 500, "b"), 1);
    engine_destroy(e);
}

TEST(a_queues_per_tenant_rate_limits_each_tenant_apart)
{
    engine_t *e = mk_engine();
    queue_rate(e, "q", ENGINE_UNLIMITED, 2, 1000, ENGINE_UNLIMITED);
    submit_n(e, "a", "q", 10);
    submit_n(e, "b", "q", 10);
    ASSERT_EQ(lease_all(e, T0, "q"), 4); /* 2 each */
    engine_wait w = first_ready_wait(e, 20);
    ASSERT_EQ(w.kind, ENGINE_WAIT_PAIR_RATE);
    ASSERT_STR(engine_wait_name(w.kind), "queue_tenant_rate");
    ASSERT_EQ(w.until, T0 + 500);
    ASSERT_EQ(lease_all(e, T0 + 500, "q"), 2);
    must_check(e, T0 + 500);
    engine_destroy(e);
}

TEST(a_rate_limited_tenant_with_a_backlog_costs_the_others_nothing)
{
    engine_t *e = mk_engine();
    tenant_rate(e, "big", 1, 60000, ENGINE_UNLIMITED);
    submit_n(e, "big", "q", 20000);
    ASSERT_EQ(lease_all(e, T0, "q"), 1);
    submit_n(e, "small", "q", 3);
    /* the big tenant's 19,999 ready jobs are out of the heaps: the small
     * tenant's come at once, in one lease */
    uint64_t ids[8];
    ASSERT_EQ(lease_q(e, T0 + 1, "q", 8, ids), 3);
    engine_counts c;
    engine_queue_get(e, T0, "q", NULL, &c);
    ASSERT_EQ(c.ready, 19999);
    ASSERT_EQ(c.eligible, 0);
    engine_destroy(e);
}

TEST(a_burst_lets_a_quiet_limit_start_several_at_once_then_holds_the_rate)
{
    engine_t *e = mk_engine();
    queue_rate(e, "q", 10, ENGINE_UNLIMITED, 1000, 3);
    submit_n(e, "t", "q", 50);
    ASSERT_EQ(lease_all(e, T0, "q"), 3);
    ASSERT_EQ(lease_all(e, T0 + 99, "q"), 0);
    ASSERT_EQ(lease_all(e, T0 + 100, "q"), 1);
    ASSERT_EQ(lease_all(e, T0 + 1000, "q"), 3); /* quiet 900 ms: the burst again, no more */
    engine_counts c;
    engine_queue_get(e, T0, "q", NULL, &c);
    ASSERT_EQ(c.rate_until, T0 + 1100);
    engine_destroy(e);
}

TEST(a_restart_begins_with_its_limits_used_up)
{
    engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.start_ms = T0;
    engine_t *e = engine_create(&cfg);
    engine_loading(e, true); /* the limits come from the store, as at a restart */
    tenant_rate(e, "t", 10, 1000, ENGINE_UNLIMITED);
    queue_rate(e, "q", 4, ENGINE_UNLIMITED, 1000, ENGINE_UNLIMITED);
    queue_rate(e, "p", ENGINE_UNLIMITED, 2, 1000, ENGINE_UNLIMITED);
    engine_loading(e, false);
    submit_n(e, "t", "q", 20);
    ASSERT_EQ(lease_all(e, T0, "q"), 0);
    ASSERT_EQ(lease_all(e, T0 + 249, "q"), 0);
    ASSERT_EQ(lease_all(e, T0 + 250, "q"), 1); /* the queue's first start: T after the start */
    /* a loaded per-tenant rate: a tenant met later was maybe met before too */
    submit_n(e, "v", "p", 5);
    ASSERT_EQ(lease_all(e, T0 + 100, "p"), 0);
    ASSERT_EQ(lease_all(e, T0 + 500, "p"), 1);
    /* a limit set after the start (from none) begins full */
    queue_rate(e, "r", 4, ENGINE_UNLIMITED, 1000, ENGINE_UNLIMITED);
    submit_n(e, "u", "r", 10);
    ASSERT_EQ(lease_all(e, T0 + 10, "r"), 4);
    must_check(e, T0 + 5000);
    engine_destroy(e);
}

TEST(limits_change_live_closed_ones_open_or_move)
{
    engine_t *e = mk_engine();
    tenant_rate(e, "t", 1, 60000, ENGINE_UNLIMITED);
    submit_n(e, "t", "q", 5);
    ASSERT_EQ(lease_all(e, T0, "q"), 1);
    tenant_rate(e, "t", 1, 1000, ENGINE_UNLIMITED); /* faster: opens at T0 + 1000 */
    engine_counts c;
    engine_tenant_get(e, T0, "t", NULL, &c);
    ASSERT_EQ(c.rate_until, T0 + 1000);
    ASSERT_EQ(lease_all(e, T0 + 1000, "q"), 1);
    tenant_rate(e, "t", ENGINE_UNLIMITED, 1000, ENGINE_UNLIMITED); /* none: open at once */
    ASSERT_EQ(lease_all(e, T0 + 1000, "q"), 3);
    /* a limit set on a queue that ran freely is met at the next lease */
    submit_n(e, "t", "q", 5);
    queue_rate(e, "q", 2, ENGINE_UNLIMITED, 1000, ENGINE_UNLIMITED);
    ASSERT_EQ(lease_all(e, T0 + 1000, "q"), 2);
    must_check(e, T0 + 1000);
    engine_destroy(e);
}

TEST(bad_rates_are_refused_and_change_nothing)
{
    engine_t *e = mk_engine();
    engine_queue_settings qs;
    engine_queue_settings_defaults(&qs);
    engine_err err;
    qs.rate = 0;
    ASSERT_EQ(engine_queue_set(e, T0, "q", &qs, &err), TENQ_EINVALID);
    ASSERT_STR(err.field, "rate");
    engine_queue_settings_defaults(&qs);
    qs.rate_period_ms = 0;
    ASSERT_EQ(engine_queue_set(e, T0, "q", &qs, &err), TENQ_EINVALID);
    ASSERT_STR(err.field, "rate_period_ms");
    engine_queue_settings_defaults(&qs);
    qs.rate_burst = TQ_RATE_BURST_MAX + 1;
    ASSERT_EQ(engine_queue_set(e, T0, "q", &qs, &err), TENQ_EINVALID);
    ASSERT_STR(err.field, "rate_burst");
    ASSERT_EQ(engine_queue_get(e, T0, "q", NULL, NULL), TENQ_ENOT_FOUND);
    engine_tenant_settings ts;
    engine_tenant_settings_defaults(&ts);
    ts.rate = 0;
    ASSERT_EQ(engine_tenant_set(e, T0, "t", &ts, &err), TENQ_EINVALID);
    ASSERT_STR(err.field, "rate");
    ASSERT_EQ(engine_tenant_get(e, T0, "t", NULL, NULL), TENQ_ENOT_FOUND);
    engine_destroy(e);
}
