// SPDX-License-Identifier: Apache-2.0
/* One test per rule of SEMANTICS.md, named after the rule: keyed limits
 * (concurrency keys). */
#include "engine_helpers.h"

#define T0 1700000000000LL

static engine_submit_res sub_t(engine_t *e, const char *t, const char *q, const char *type,
                               sub_opts o)
{
    return submit_x(e, T0, t, q, type, o);
}

static size_t lease_many(engine_t *e, int64_t now, const char *const *qs, size_t nq, size_t max,
                         uint64_t *ids)
{
    engine_lease_req req = {.queues = qs, .n_queues = nq, .max = max, .worker = "w"};
    engine_job *out[256];
    size_t n = engine_lease(e, now, &req, out);
    for (size_t i = 0; i < n; i++) ids[i] = engine_job_id(out[i]);
    return n;
}

static void set_key(engine_t *e, const char *tenant, const char *key, uint32_t limit)
{
    engine_key_settings s;
    engine_key_settings_defaults(&s);
    s.concurrency = limit;
    engine_err err;
    if (engine_key_set(e, T0, tenant, key, &s, &err))
        test_fail(__FILE__, __LINE__, "key set: %s", err.message);
}

/* ---- the limit ----------------------------------------------------------------- */

TEST(key_limits_its_jobs_across_queues_and_types_of_the_tenant)
{
    engine_t *e = mk_engine();
    uint64_t ids[64];
    for (int i = 0; i < 4; i++) {
        ASSERT_EQ(sub_t(e, "t", "q1", "A", (sub_opts){CKEY("acct:1", 2)}).code, 0);
        ASSERT_EQ(sub_t(e, "t", "q2", "B", (sub_opts){CKEY("acct:1", 2)}).code, 0);
    }
    const char *qs[] = {"q1", "q2"};
    ASSERT_EQ(lease_many(e, T0, qs, 2, 10, ids), 2);
    ASSERT_EQ(lease_many(e, T0, qs, 2, 10, ids + 2), 0);
    engine_key_info ki;
    ASSERT(engine_key_info_get(e, T0, "t", "acct:1", &ki));
    ASSERT_EQ(ki.limit, 2);
    ASSERT_EQ(ki.active, 2);
    ASSERT_EQ(ki.held, 6);
    ASSERT_EQ(engine_keys_at_limit(e), 1);
    must_check(e, T0);
    ack_ok(e, T0, ids[0]);
    ASSERT_EQ(lease_many(e, T0, qs, 2, 10, ids + 2), 1);
    ASSERT_EQ(lease_many(e, T0, qs, 2, 10, ids + 3), 0);
    must_check(e, T0);
    engine_destroy(e);
}

TEST(key_is_per_tenant)
{
    engine_t *e = mk_engine();
    uint64_t ids[8];
    for (int i = 0; i < 3; i++) {
        SUB(e, T0, "a", "q", CKEY("k", 1));
        SUB(e, T0, "b", "q", CKEY("k", 1));
    }
    ASSERT_EQ(lease_q(e, T0, "q", 8, ids), 2);
    must_check(e, T0);
    engine_destroy(e);
}

TEST(key_at_its_limit_holds_only_its_jobs)
{
    engine_t *e = mk_engine();
    uint64_t k1 = SUB(e, T0, "t", "q", CKEY("busy", 1));
    for (int i = 0; i < 100; i++) SUB(e, T0, "t", "q", CKEY("busy", 1));
    uint64_t plain = SUB(e, T0, "t", "q");
    uint64_t other = SUB(e, T0, "t", "q", CKEY("idle", 1));
    uint64_t ids[8];
    ASSERT_EQ(lease_q(e, T0, "q", 8, ids), 3);
    ASSERT_EQ(ids[0], k1);
    ASSERT_EQ(ids[1], plain);
    ASSERT_EQ(ids[2], other);
    engine_counts c;
    ASSERT_EQ(engine_queue_get(e, T0, "q", NULL, &c), 0);
    ASSERT_EQ(c.ready, 100);
    ASSERT_EQ(c.eligible, 0);
    must_check(e, T0);
    engine_destroy(e);
}

TEST(key_order_among_keyed_and_plain_jobs_is_the_queues)
{
    engine_t *e = mk_engine();
    uint64_t a = SUB(e, T0, "t", "q", CKEY("x", 5));
    uint64_t b = SUB(e, T0, "t", "q");
    uint64_t c = SUB(e, T0, "t", "q", CKEY("y", 5), .priority = 3);
    uint64_t d = SUB(e, T0, "t", "q", CKEY("x", 5));
    uint64_t f = SUB(e, T0, "t", "q", .priority = 1);
    uint64_t ids[8];
    ASSERT_EQ(lease_q(e, T0, "q", 8, ids), 5);
    uint64_t want[5] = {c, f, a, b, d};
    for (int i = 0; i < 5; i++) ASSERT_EQ(ids[i], want[i]);
    must_check(e, T0);
    engine_destroy(e);
}

TEST(key_with_several_keys_runs_when_each_has_room)
{
    engine_t *e = mk_engine();
    const engine_limit_key both[2] = {{"user:1", 1}, {"acct:1", 2}};
    uint64_t j1 = SUB(e, T0, "t", "q", .ckeys = both, .n_ckeys = 2);
    uint64_t j2 = SUB(e, T0, "t", "q", CKEY("user:1", 1));
    uint64_t j3 = SUB(e, T0, "t", "q", CKEY("acct:1", 2));
    uint64_t j4 = SUB(e, T0, "t", "q", CKEY("acct:1", 2));
    uint64_t ids[8];
    ASSERT_EQ(lease_q(e, T0, "q", 8, ids), 2); /* j1 holds user:1, j3 fills acct:1 */
    ASSERT_EQ(ids[0], j1);
    ASSERT_EQ(ids[1], j3);
    engine_wait w;
    engine_job_wait(engine_find(e, j2), &w);
    ASSERT_EQ(w.kind, ENGINE_WAIT_CONCURRENCY_KEY);
    ASSERT_STR(w.key, "user:1");
    ASSERT_EQ(w.held_by, j1);
    ASSERT_EQ(w.active, 1);
    ASSERT_EQ(w.limit, 1);
    ASSERT_STR(engine_wait_name(w.kind), "concurrency_key");
    ack_ok(e, T0, j3);
    ASSERT_EQ(lease1(e, T0, "q"), j4);
    ack_ok(e, T0, j1);
    ASSERT_EQ(lease1(e, T0, "q"), j2);
    must_check(e, T0);
    engine_destroy(e);
}

TEST(key_names_in_any_order_are_one_group)
{
    engine_t *e = mk_engine();
    const engine_limit_key ab[2] = {{"a", 1}, {"b", 1}}, ba[2] = {{"b", 1}, {"a", 1}};
    uint64_t j1 = SUB(e, T0, "t", "q", .ckeys = ab, .n_ckeys = 2);
    SUB(e, T0, "t", "q", .ckeys = ba, .n_ckeys = 2);
    engine_job_info in = info_of(e, j1);
    ASSERT_EQ(in.n_concurrency_keys, 2);
    ASSERT_STR(in.concurrency_keys[0].key, "a");
    ASSERT_EQ(in.concurrency_keys[0].limit, 1);
    ASSERT(!in.plain);
    uint64_t ids[4];
    ASSERT_EQ(lease_q(e, T0, "q", 4, ids), 1);
    must_check(e, T0);
    engine_destroy(e);
}

TEST(key_limit_is_the_last_submits_or_its_queues)
{
    engine_t *e = mk_engine();
    engine_queue_settings qs = queue_settings(e, "q");
    qs.concurrency_limit = 3;
    set_queue(e, "q", qs);
    for (int i = 0; i < 6; i++) SUB(e, T0, "t", "q", CKEY("k", 0));
    engine_key_info ki;
    ASSERT(engine_key_info_get(e, T0, "t", "k", &ki));
    ASSERT_EQ(ki.limit, 3);
    ASSERT(ki.setting == NULL);
    uint64_t ids[8];
    ASSERT_EQ(lease_q(e, T0, "q", 8, ids), 3);
    SUB(e, T0, "t", "q", CKEY("k", 4)); /* a later submit says 4: one more may go */
    ASSERT(engine_key_info_get(e, T0, "t", "k", &ki));
    ASSERT_EQ(ki.limit, 4);
    ASSERT_EQ(lease_q(e, T0, "q", 8, ids), 1);
    SUB(e, T0, "t", "q", CKEY("k", 1)); /* lowered: nothing running is stopped */
    ASSERT_EQ(lease_q(e, T0, "q", 8, ids), 0);
    ASSERT(engine_key_info_get(e, T0, "t", "k", &ki));
    ASSERT_EQ(ki.active, 4);
    ASSERT_EQ(ki.limit, 1);
    must_check(e, T0);
    engine_destroy(e);
}

TEST(key_setting_wins_and_takes_effect_at_once)
{
    engine_t *e = mk_engine();
    for (int i = 0; i < 10; i++) SUB(e, T0, "t", "q", CKEY("account:7", 1));
    for (int i = 0; i < 10; i++) SUB(e, T0, "t", "q", CKEY("account:8", 1));
    for (int i = 0; i < 10; i++) SUB(e, T0, "t", "q", CKEY("other", 1));
    uint64_t ids[32];
    ASSERT_EQ(lease_q(e, T0, "q", 32, ids), 3);
    set_key(e, "t", "account:*", 3); /* a prefix: both accounts, at once */
    ASSERT_EQ(lease_q(e, T0, "q", 32, ids), 4);
    set_key(e, "t", "account:7", 5); /* the key's own wins over the prefix */
    ASSERT_EQ(lease_q(e, T0, "q", 32, ids), 2);
    engine_key_info ki;
    ASSERT(engine_key_info_get(e, T0, "t", "account:7", &ki));
    ASSERT_EQ(ki.limit, 5);
    ASSERT_STR(ki.setting, "account:7");
    ASSERT(engine_key_info_get(e, T0, "t", "account:8", &ki));
    ASSERT_STR(ki.setting, "account:*");
    set_key(e, "t", "acc*", 7); /* a shorter prefix loses to the longer one */
    ASSERT(engine_key_info_get(e, T0, "t", "account:8", &ki));
    ASSERT_EQ(ki.limit, 3);
    must_check(e, T0);
    engine_err err;
    ASSERT_EQ(engine_key_delete(e, T0, "t", "account:7", &err), 0);
    ASSERT(engine_key_info_get(e, T0, "t", "account:7", &ki));
    ASSERT_EQ(ki.limit, 3); /* back to the prefix's */
    ASSERT_EQ(engine_key_delete(e, T0, "t", "account:7", &err), TENQ_ENOT_FOUND);
    /* the settings are changes, for the store */
    size_t n, found = 0;
    const engine_change *c = engine_changes(e, &n);
    for (size_t i = 0; i < n; i++) found += c[i].kind == ENGINE_CH_KEY_SETTING;
    ASSERT_EQ(found, 4);
    must_check(e, T0);
    engine_changes_clear(e);
    engine_destroy(e);
}

TEST(key_setting_null_leaves_the_limit_to_the_jobs)
{
    engine_t *e = mk_engine();
    set_key(e, "t", "k", ENGINE_UNLIMITED);
    for (int i = 0; i < 4; i++) SUB(e, T0, "t", "q", CKEY("k", 2));
    uint64_t ids[8];
    ASSERT_EQ(lease_q(e, T0, "q", 8, ids), 2);
    engine_key_settings s;
    ASSERT(engine_key_setting_get(e, "t", "k", &s));
    ASSERT_EQ(s.concurrency, ENGINE_UNLIMITED);
    engine_destroy(e);
}

TEST(key_settings_refuse_bad_input)
{
    engine_t *e = mk_engine();
    engine_key_settings s;
    engine_key_settings_defaults(&s);
    s.concurrency = 0;
    engine_err err;
    ASSERT_EQ(engine_key_set(e, T0, "t", "k", &s, &err), TENQ_EINVALID);
    ASSERT_STR(err.field, "concurrency");
    s.concurrency = 2;
    ASSERT_EQ(engine_key_set(e, T0, "t", "bad\nkey", &s, &err), TENQ_EINVALID);
    ASSERT_STR(err.field, "key");
    char name[32];
    for (int i = 0; i < ENGINE_KEY_PREFIXES_MAX; i++) {
        snprintf(name, sizeof name, "p%d:*", i);
        ASSERT_EQ(engine_key_set(e, T0, "t", name, &s, &err), 0);
    }
    ASSERT_EQ(engine_key_set(e, T0, "t", "one-more:*", &s, &err), TENQ_EINVALID);
    ASSERT_STR(err.field, "key");
    ASSERT_EQ(engine_key_set(e, T0, "t", "exact-keys-are-not-counted", &s, &err), 0);
    engine_changes_clear(e);
    engine_destroy(e);
}

TEST(key_submit_refuses_bad_keys)
{
    engine_t *e = mk_engine();
    const engine_limit_key five[5] = {{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}, {"e", 1}};
    engine_submit_res r = sub_t(e, "t", "q", "T", (sub_opts){.ckeys = five, .n_ckeys = 5});
    ASSERT_EQ(r.code, TENQ_EINVALID);
    ASSERT_STR(r.err.field, "concurrency_keys");
    ASSERT(strstr(r.err.message, "at most 4") != NULL);
    char big[300];
    memset(big, 'k', 257);
    big[257] = 0;
    r = sub_t(e, "t", "q", "T", (sub_opts){CKEY(big, 1)});
    ASSERT_EQ(r.code, TENQ_EINVALID);
    ASSERT_STR(r.err.field, "concurrency_keys[0].key");
    const engine_limit_key twice[2] = {{"a", 1}, {"a", 2}};
    r = sub_t(e, "t", "q", "T", (sub_opts){.ckeys = twice, .n_ckeys = 2});
    ASSERT_EQ(r.code, TENQ_EINVALID);
    ASSERT_STR(r.err.field, "concurrency_keys[1].key");
    r = sub_t(e, "t", "q", "T", (sub_opts){CKEY("k", TQ_KEY_LIMIT_MAX + 1)});
    ASSERT_STR(r.err.field, "concurrency_keys[0].limit");
    ASSERT_EQ(engine_key_count(e), 0);
    must_check(e, T0);
    engine_destroy(e);
}

/* ---- the rest of a job's life ------------------------------------------------------ */

TEST(key_is_given_back_by_every_end_of_an_attempt)
{
    engine_t *e = mk_engine();
    engine_queue_settings qs = queue_settings(e, "q");
    qs.lease_ms = 1000;
    set_queue(e, "q", qs);
    uint64_t a = SUB(e, T0, "t", "q", CKEY("k", 1));
    uint64_t b = SUB(e, T0, "t", "q", CKEY("k", 1));
    uint64_t c = SUB(e, T0, "t", "q", CKEY("k", 1));
    ASSERT_EQ(lease1(e, T0, "q"), a);
    ASSERT_EQ(fail_ok(e, T0, a, (engine_fail_req){.error = "x", .no_retry = true}), ENGINE_DEAD);
    ASSERT_EQ(lease1(e, T0, "q"), b);
    engine_tick(e, T0 + 1000); /* its lease expires: a retry, later */
    ASSERT_EQ(lease1(e, T0 + 1000, "q"), c);
    engine_state st;
    ASSERT_EQ(engine_cancel(e, T0 + 1000, c, &st, NULL), 0);
    ASSERT_EQ(st, ENGINE_LEASED); /* a cancel asked for: it still holds the key */
    ASSERT_EQ(fail_ok(e, T0 + 1000, c, (engine_fail_req){.error = "stopped", .cancelled = true}),
              ENGINE_CANCELLED);
    engine_key_info ki;
    ASSERT(engine_key_info_get(e, T0, "t", "k", &ki));
    ASSERT_EQ(ki.active, 0);
    ASSERT_EQ(engine_morgue_requeue(e, T0 + 1000, a, NULL), 0);
    must_check(e, T0 + 1000);
    engine_changes_clear(e);
    must_check(e, T0 + 1000);
    engine_destroy(e);
}

TEST(key_and_group_leave_memory_with_their_last_job)
{
    /* A key's group stays, idle, after its last job (the next job of the
     * key finds it): the key is no longer counted nor shown.  Idle groups
     * are kept up to a bound, the oldest freed first, so memory comes back. */
    engine_t *e = mk_engine();
    engine_memory m0;
    engine_memory_usage(e, &m0);
    uint64_t a = SUB(e, T0, "t", "q", CKEY("k", 1));
    ASSERT_EQ(engine_key_count(e), 1);
    ASSERT_EQ(lease1(e, T0, "q"), a);
    ack_ok(e, T0, a);
    engine_changes_clear(e);
    ASSERT_EQ(engine_key_count(e), 0);
    engine_key_info ki;
    ASSERT(!engine_key_info_get(e, T0, "t", "k", &ki));
    must_check(e, T0);
    engine_memory m1;
    engine_memory_usage(e, &m1);
    ASSERT(m1.bytes > m0.bytes); /* the idle group and its key */
    /* the same key again: its group back in use */
    uint64_t b = SUB(e, T0, "t", "q", CKEY("k", 1));
    ASSERT_EQ(engine_key_count(e), 1);
    ASSERT(engine_key_info_get(e, T0, "t", "k", &ki));
    ASSERT_EQ(lease1(e, T0, "q"), b);
    ack_ok(e, T0, b);
    engine_changes_clear(e);
    /* 5,000 more keys, each used once: at most 4,096 idle groups stay */
    char key[32];
    for (int i = 0; i < 5000; i++) {
        snprintf(key, sizeof key, "k%d", i);
        uint64_t id = SUB(e, T0, "t", "q", CKEY(key, 1));
        ASSERT_EQ(lease1(e, T0, "q"), id);
        ack_ok(e, T0, id);
        engine_changes_clear(e);
    }
    ASSERT_EQ(engine_key_count(e), 0);
    must_check(e, T0);
    engine_memory m2;
    engine_memory_usage(e, &m2);
    ASSERT(m2.bytes - m0.bytes <= 4096 * (m1.bytes - m0.bytes));
    ASSERT(m2.bytes - m0.bytes >= 4000 * (m1.bytes - m0.bytes) / 2);
    engine_destroy(e);
}

TEST(key_held_lane_head_keeps_its_lane_in_order)
{
    engine_t *e = mk_engine();
    uint64_t x = SUB(e, T0, "t", "q", CKEY("acct", 1));
    uint64_t l1 = SUB(e, T0, "t", "q", .key = "L", CKEY("acct", 1));
    uint64_t l2 = SUB(e, T0, "t", "q", .key = "L");
    ASSERT_EQ(lease1(e, T0, "q"), x);
    ASSERT_EQ(lease1(e, T0, "q"), 0); /* l1 waits for the key, l2 behind it */
    ASSERT_EQ(state_of(e, l2), ENGINE_BLOCKED);
    ack_ok(e, T0, x);
    ASSERT_EQ(lease1(e, T0, "q"), l1);
    ack_ok(e, T0, l1);
    ASSERT_EQ(lease1(e, T0, "q"), l2);
    must_check(e, T0);
    engine_destroy(e);
}

TEST(key_holds_in_fair_queues_and_tenants_take_turns)
{
    engine_t *e = mk_engine();
    engine_queue_settings qs = queue_settings(e, "f");
    qs.order = ENGINE_ORDER_FAIR;
    set_queue(e, "f", qs);
    for (int i = 0; i < 6; i++) SUB(e, T0, "a", "f", CKEY("k", 2));
    for (int i = 0; i < 6; i++) SUB(e, T0, "b", "f");
    uint64_t ids[16];
    ASSERT_EQ(lease_q(e, T0, "f", 6, ids), 6);
    int from_a = 0;
    for (int i = 0; i < 6; i++) from_a += strcmp(info_of(e, ids[i]).tenant, "a") == 0;
    ASSERT_EQ(from_a, 2); /* a's key allows 2; b takes the rest */
    must_check(e, T0);
    engine_destroy(e);
}

/* A job handed out to a lease that names types sees the same keys. */
TEST(key_holds_leases_that_name_types)
{
    engine_t *e = mk_engine();
    uint64_t a = sub_t(e, "t", "q", "A", (sub_opts){CKEY("k", 1)}).id;
    uint64_t b = sub_t(e, "t", "q", "B", (sub_opts){CKEY("k", 1)}).id;
    const char *qs[] = {"q"}, *tb[] = {"B"};
    engine_lease_req req = {
        .queues = qs, .n_queues = 1, .types = tb, .n_types = 1, .max = 4, .worker = "w"};
    engine_job *out[4];
    ASSERT_EQ(engine_lease(e, T0, &req, out), 1);
    ASSERT_EQ(engine_job_id(out[0]), b);
    ASSERT_EQ(lease1(e, T0, "q"), 0);
    ack_ok(e, T0, b);
    ASSERT_EQ(lease1(e, T0, "q"), a);
    must_check(e, T0);
    engine_destroy(e);
}

/* A load counts the leases it brings back before the first lease: no key
 * goes over its limit after a restart. */
TEST(key_counts_loaded_leases_before_the_first_lease)
{
    engine_t *a = mk_engine();
    for (int i = 0; i < 5; i++) SUB(a, T0, "t", "q", CKEY("k", 2));
    uint64_t ids[8];
    ASSERT_EQ(lease_q(a, T0, "q", 8, ids), 2);
    engine_t *b = mk_engine();
    engine_loading(b, true);
    for (uint64_t id = 1; id <= 5; id++) {
        engine_job_info in = info_of(a, id);
        engine_err err;
        ASSERT_MSG(engine_load_job(b, T0 + 10, &in, &err) == 0, "%s", err.message);
    }
    engine_loading(b, false);
    engine_changes_clear(b);
    engine_key_info ki;
    ASSERT(engine_key_info_get(b, T0, "t", "k", &ki));
    ASSERT_EQ(ki.active, 2);
    ASSERT_EQ(ki.limit, 2);
    ASSERT_EQ(lease_q(b, T0 + 10, "q", 8, ids), 0);
    must_check(b, T0 + 10);
    engine_destroy(a);
    engine_destroy(b);
}

/* A key at its limit with a large backlog costs a lease nothing: its
 * groups are out of the heaps (the work of a lease does not grow). */
TEST(key_backlog_held_costs_leases_nothing)
{
    engine_t *e = mk_engine();
    for (int i = 0; i < 20000; i++) SUB(e, T0, "t", "q", CKEY("flood", 1));
    uint64_t first = lease1(e, T0, "q");
    ASSERT(first != 0);
    for (int i = 0; i < 1000; i++) SUB(e, T0, "t", "q", .priority = -1);
    uint64_t ids[256];
    size_t got = 0;
    for (int r = 0; r < 10; r++) got += lease_q(e, T0, "q", 100, ids);
    ASSERT_EQ(got, 1000);
    engine_counts c;
    ASSERT_EQ(engine_tenant_get(e, T0, "t", NULL, &c), 0);
    ASSERT_EQ(c.ready, 19999);
    ASSERT_EQ(c.eligible, 0);
    engine_destroy(e);
}

/* ---- rate keys ---------------------------------------------------------------------- */

#define RKEY(k, c, r, p, b)                                                                        \
    .rate_keys = (const engine_rate_key[]){{(k), (c), (r), (p), (b)}}, .n_rate_keys = 1

static void set_key_rate(engine_t *e, const char *tenant, const char *key, uint32_t rate,
                         int64_t period, uint32_t burst)
{
    engine_key_settings s;
    engine_key_settings_defaults(&s);
    s.rate = rate;
    s.rate_period_ms = period;
    s.rate_burst = burst;
    engine_err err;
    if (engine_key_set(e, T0, tenant, key, &s, &err))
        test_fail(__FILE__, __LINE__, "key set: %s", err.message);
}

TEST(rate_key_takes_each_start_s_cost_from_its_bucket)
{
    engine_t *e = mk_engine();
    /* 10 units a second (100 ms a unit), bursts of 10; each job costs 3 */
    for (int i = 0; i < 5; i++) SUB(e, T0, "t", "q", RKEY("api:7", 3, 10, 1000, 0));
    uint64_t ids[8];
    ASSERT_EQ(lease_q(e, T0, "q", 8, ids), 3); /* 9 of 10 units */
    uint64_t held = SUB(e, T0, "t", "q", .priority = -1, RKEY("api:7", 3, 10, 1000, 0));
    engine_wait w;
    engine_job_wait(engine_find(e, held), &w);
    ASSERT_EQ(w.kind, ENGINE_WAIT_RATE_KEY);
    ASSERT_STR(w.key, "api:7");
    ASSERT_EQ(w.until, T0 + 200); /* two more units: tat is T0 + 900, less 7 units' 700 */
    ASSERT_STR(engine_wait_name(w.kind), "rate_key");
    engine_key_info ki;
    ASSERT(engine_key_info_get(e, T0, "t", "api:7", &ki));
    ASSERT_EQ(ki.rate, 10);
    ASSERT_EQ(ki.rate_burst, 10);
    ASSERT_EQ(ki.held, 3);
    ASSERT_EQ(ki.rate_until, 0); /* one unit is left */
    engine_counts c;
    ASSERT_EQ(engine_tenant_get(e, T0, "t", NULL, &c), 0);
    ASSERT_EQ(c.eligible, 0);
    engine_tick(e, T0 + 199);
    ASSERT_EQ(lease_q(e, T0 + 199, "q", 8, ids), 0);
    must_check(e, T0 + 199);
    engine_tick(e, T0 + 200);
    ASSERT_EQ(lease_q(e, T0 + 200, "q", 8, ids), 1);
    engine_tick(e, T0 + 500);
    ASSERT_EQ(lease_q(e, T0 + 500, "q", 8, ids), 1);
    must_check(e, T0 + 500);
    engine_destroy(e);
}

TEST(rate_key_holds_only_its_jobs_and_a_cheaper_one_may_go_first)
{
    engine_t *e = mk_engine();
    uint64_t big = SUB(e, T0, "t", "q", RKEY("k", 4, 4, 1000, 0));
    ASSERT_EQ(lease1(e, T0, "q"), big); /* the whole burst */
    uint64_t b2 = SUB(e, T0, "t", "q", RKEY("k", 4, 4, 1000, 0));
    uint64_t small = SUB(e, T0, "t", "q", RKEY("k", 1, 4, 1000, 0));
    uint64_t plain = SUB(e, T0, "t", "q");
    ASSERT_EQ(lease1(e, T0, "q"), plain);
    engine_tick(e, T0 + 250); /* one unit back: the cheap job, not the dear one */
    ASSERT_EQ(lease1(e, T0 + 250, "q"), small);
    ASSERT_EQ(lease1(e, T0 + 250, "q"), 0);
    engine_tick(e, T0 + 1250);
    ASSERT_EQ(lease1(e, T0 + 1250, "q"), b2);
    must_check(e, T0 + 1250);
    engine_destroy(e);
}

TEST(rate_key_setting_wins_and_changes_at_once)
{
    engine_t *e = mk_engine();
    for (int i = 0; i < 6; i++) SUB(e, T0, "t", "q", RKEY("api:1", 1, 0, 0, 0));
    uint64_t ids[8];
    ASSERT_EQ(lease_q(e, T0, "q", 8, ids), 6); /* no rate given anywhere: no limit */
    for (int i = 0; i < 6; i++) SUB(e, T0, "t", "q", RKEY("api:1", 1, 0, 0, 0));
    set_key_rate(e, "t", "api:*", 2, 1000, ENGINE_UNLIMITED); /* a rate from none */
    ASSERT_EQ(lease_q(e, T0, "q", 8, ids), 2);
    engine_key_info ki;
    ASSERT(engine_key_info_get(e, T0, "t", "api:1", &ki));
    ASSERT_STR(ki.rate_setting, "api:*");
    ASSERT_EQ(ki.rate_until, T0 + 500);
    set_key_rate(e, "t", "api:1", 100, 1000, ENGINE_UNLIMITED); /* a faster one, its own */
    must_check(e, T0);
    engine_tick(e, T0 + 10);
    ASSERT_EQ(lease_q(e, T0 + 10, "q", 8, ids), 1);
    must_check(e, T0 + 10);
    engine_err err;
    ASSERT_EQ(engine_key_delete(e, T0 + 10, "t", "api:1", &err), 0); /* back to 2 a second */
    engine_tick(e, T0 + 20);
    ASSERT_EQ(lease_q(e, T0 + 20, "q", 8, ids), 0);
    must_check(e, T0 + 20);
    engine_changes_clear(e);
    engine_destroy(e);
}

TEST(rate_key_refuses_a_cost_above_the_burst)
{
    engine_t *e = mk_engine();
    engine_submit_res r = sub_t(e, "t", "q", "T", (sub_opts){RKEY("k", 6, 10, 1000, 5)});
    ASSERT_EQ(r.code, TENQ_EINVALID);
    ASSERT_STR(r.err.field, "rate_keys[0].cost");
    r = sub_t(e, "t", "q", "T", (sub_opts){RKEY("k", 11, 10, 1000, 0)});
    ASSERT_STR(r.err.field, "rate_keys[0].cost");
    set_key_rate(e, "t", "k", 10, 1000, 2);
    r = sub_t(e, "t", "q", "T", (sub_opts){RKEY("k", 3, 0, 0, 0)});
    ASSERT_EQ(r.code, TENQ_EINVALID);
    ASSERT_STR(r.err.field, "rate_keys[0].cost");
    ASSERT(strstr(r.err.message, "burst of 2") != NULL);
    r = sub_t(e, "t", "q", "T", (sub_opts){RKEY("k", 1, 0, 0, 5)});
    ASSERT_STR(r.err.field, "rate_keys[0].rate"); /* a burst without a rate */
    const engine_rate_key five[5] = {{"a", 1, 0, 0, 0},
                                     {"b", 1, 0, 0, 0},
                                     {"c", 1, 0, 0, 0},
                                     {"d", 1, 0, 0, 0},
                                     {"e", 1, 0, 0, 0}};
    r = sub_t(e, "t", "q", "T", (sub_opts){.rate_keys = five, .n_rate_keys = 5});
    ASSERT_STR(r.err.field, "rate_keys");
    ASSERT_EQ(engine_key_count(e), 0);
    engine_changes_clear(e);
    engine_destroy(e);
}

TEST(rate_key_begins_used_up_at_a_restart)
{
    engine_config c;
    engine_config_defaults(&c);
    c.start_ms = T0; /* the engine's life begins at T0 */
    engine_t *e = engine_create(&c);
    /* 5 a second (200 ms each), bursts of 5: as if a burst had just started */
    for (int i = 0; i < 3; i++) SUB(e, T0, "t", "q", RKEY("k", 1, 5, 1000, 0));
    ASSERT_EQ(lease1(e, T0, "q"), 0);
    engine_tick(e, T0 + 199);
    ASSERT_EQ(lease1(e, T0 + 199, "q"), 0);
    engine_tick(e, T0 + 200);
    ASSERT(lease1(e, T0 + 200, "q") != 0);
    ASSERT_EQ(lease1(e, T0 + 200, "q"), 0);
    must_check(e, T0 + 200);
    engine_destroy(e);
}

TEST(rate_key_no_job_names_is_kept_until_its_bucket_is_full)
{
    engine_t *e = mk_engine();
    uint64_t a = SUB(e, T0, "t", "q", RKEY("hourly", 1, 1, 3600000, 0));
    ASSERT_EQ(lease1(e, T0, "q"), a);
    ack_ok(e, T0, a);
    engine_changes_clear(e); /* no job names it now */
    ASSERT_EQ(engine_key_count(e), 1);
    must_check(e, T0);
    uint64_t b = SUB(e, T0 + 1000, "t", "q", RKEY("hourly", 1, 1, 3600000, 0));
    ASSERT_EQ(lease1(e, T0 + 1000, "q"), 0); /* the hour is not over */
    engine_tick(e, T0 + 3600000);
    ASSERT_EQ(lease1(e, T0 + 3600000, "q"), b);
    ack_ok(e, T0 + 3600000, b);
    engine_changes_clear(e);
    engine_tick(e, T0 + 7200000); /* full again: forgotten */
    ASSERT_EQ(engine_key_count(e), 0);
    must_check(e, T0 + 7200000);
    engine_destroy(e);
}

TEST(rate_key_and_concurrency_key_together)
{
    engine_t *e = mk_engine();
    const engine_limit_key ck[1] = {{"acct", 1}};
    const engine_rate_key rk[1] = {{"api", 1, 2, 1000, 0}};
    uint64_t id[4];
    for (int i = 0; i < 4; i++)
        id[i] = SUB(e, T0, "t", "q", .ckeys = ck, .n_ckeys = 1, .rate_keys = rk, .n_rate_keys = 1);
    ASSERT_EQ(lease1(e, T0, "q"), id[0]);
    ASSERT_EQ(lease1(e, T0, "q"), 0); /* the concurrency key */
    engine_job_info in = info_of(e, id[0]);
    ASSERT_EQ(in.n_rate_keys, 1);
    ASSERT_STR(in.rate_keys[0].key, "api");
    ASSERT_EQ(in.rate_keys[0].rate, 2);
    ASSERT_EQ(in.n_concurrency_keys, 1);
    ack_ok(e, T0, id[0]);
    ASSERT_EQ(lease1(e, T0, "q"), id[1]); /* the second unit of the burst */
    ack_ok(e, T0, id[1]);
    ASSERT_EQ(lease1(e, T0, "q"), 0); /* now the rate holds it */
    engine_wait w;
    engine_job_wait(engine_find(e, id[2]), &w);
    ASSERT_EQ(w.kind, ENGINE_WAIT_RATE_KEY);
    ASSERT_EQ(w.until, T0 + 500);
    must_check(e, T0);
    engine_destroy(e);
}
