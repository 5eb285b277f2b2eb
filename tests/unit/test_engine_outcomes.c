// SPDX-License-Identifier: Apache-2.0
/* One test per rule of SEMANTICS.md, named after the rule: failures and retries
 * (backoff), cancel, leases and their tokens. */
#include "engine_helpers.h"

#define T0 1700000000000LL

/* ---- failures and retries ----------------------------------------------------------------- */

TEST(backoff_default_formula)
{
    engine_t *e = mk_engine();
    for (uint32_t attempt = 0; attempt < 6; attempt++) {
        uint64_t id = SUB(e, T0, "a", "q", .max_attempts = 100);
        lease1(e, T0, "q");
        /* fast-forward the attempt counter by failing with retry_in 0 */
        for (uint32_t k = 0; k < attempt; k++) {
            fail_ok(e, T0, id, (engine_fail_req){.error = "x", .has_retry_in = true});
            engine_tick(e, T0);
            ASSERT_EQ(lease1(e, T0, "q"), id);
        }
        fail_ok(e, T0, id, (engine_fail_req){.error = "x"});
        int64_t delay = info_of(e, id).run_at - T0;
        double a = attempt;
        int64_t lo = (int64_t)((a * a * a * a + 15) * 1000);
        int64_t hi = (int64_t)((a * a * a * a + 15 + 29 * (a + 1)) * 1000);
        ASSERT_MSG(delay >= lo && delay <= hi, "attempt %u: delay %lld not in [%lld, %lld]",
                   attempt, (long long)delay, (long long)lo, (long long)hi);
        engine_cancel(e, T0, id, NULL, NULL);
    }
    engine_destroy(e);
}

TEST(backoff_is_deterministic_given_the_seed)
{
    int64_t runs[2][5];
    for (int r = 0; r < 2; r++) {
        engine_t *e = mk_engine();
        for (int i = 0; i < 5; i++) {
            uint64_t id = SUB(e, T0, "a", "q");
            lease1(e, T0, "q");
            fail_ok(e, T0, id, (engine_fail_req){.error = "x"});
            runs[r][i] = info_of(e, id).run_at;
        }
        engine_destroy(e);
    }
    ASSERT(memcmp(runs[0], runs[1], sizeof runs[0]) == 0);
    bool differ = false;
    for (int i = 1; i < 5; i++) differ |= runs[0][i] != runs[0][0];
    ASSERT(differ); /* the jitter is there */
}

TEST(backoff_fixed_and_exponential_settings)
{
    engine_t *e = mk_engine();
    engine_queue_settings s = queue_settings(e, "fx");
    s.backoff = ENGINE_BACKOFF_FIXED;
    s.backoff_base_ms = 2500;
    set_queue(e, "fx", s);
    uint64_t id = SUB(e, T0, "a", "fx");
    lease1(e, T0, "fx");
    fail_ok(e, T0, id, (engine_fail_req){.error = "x"});
    ASSERT_EQ(info_of(e, id).run_at, T0 + 2500);
    s.backoff = ENGINE_BACKOFF_EXPONENTIAL;
    s.backoff_base_ms = 1000;
    s.backoff_max_ms = 3000;
    set_queue(e, "ex", s);
    uint64_t x = SUB(e, T0, "a", "ex", .max_attempts = 10);
    int64_t now = T0;
    int64_t expect[] = {1000, 2000, 3000, 3000};
    for (int k = 0; k < 4; k++) {
        ASSERT_EQ(lease1(e, now, "ex"), x);
        fail_ok(e, now, x, (engine_fail_req){.error = "x"});
        int64_t d = info_of(e, x).run_at - now;
        ASSERT_MSG(d >= expect[k] * 9 / 10 && d <= expect[k] * 11 / 10, "try %d: %lld", k,
                   (long long)d);
        now += d;
        engine_tick(e, now);
    }
    engine_destroy(e);
}

TEST(retry_in_ms_from_the_worker_overrides_backoff)
{
    engine_t *e = mk_engine();
    uint64_t id = SUB(e, T0, "a", "q");
    lease1(e, T0, "q");
    ASSERT_EQ(fail_ok(e, T0, id,
                      (engine_fail_req){.error = "x", .has_retry_in = true, .retry_in_ms = 1234}),
              ENGINE_SCHEDULED);
    ASSERT_EQ(info_of(e, id).run_at, T0 + 1234);
    ASSERT_STR(info_of(e, id).error, "x");
    engine_destroy(e);
}

/* ---- cancel ---------------------------------------------------------------------------- */

TEST(cancel_in_each_state)
{
    engine_t *e = mk_engine();
    uint64_t ready = SUB(e, T0, "a", "q");
    uint64_t sched = SUB(e, T0, "a", "q", .run_at = T0 + 1000);
    uint64_t head = SUB(e, T0, "a", "q2", .key = "L");
    uint64_t blocked = SUB(e, T0, "a", "q2", .key = "L");
    engine_state s;
    ASSERT_EQ(engine_cancel(e, T0, ready, &s, NULL), 0);
    ASSERT_EQ(s, ENGINE_CANCELLED);
    ASSERT_EQ(engine_cancel(e, T0, sched, &s, NULL), 0);
    ASSERT_EQ(s, ENGINE_CANCELLED);
    ASSERT_EQ(engine_cancel(e, T0, blocked, &s, NULL), 0);
    ASSERT_EQ(s, ENGINE_CANCELLED);
    ASSERT_EQ(engine_next_timer(e), INT64_MAX);
    /* leased: a request the worker hears about */
    ASSERT_EQ(lease1(e, T0, "q2"), head);
    ASSERT_EQ(engine_cancel(e, T0, head, &s, NULL), 0);
    ASSERT_EQ(s, ENGINE_LEASED);
    ASSERT(info_of(e, head).cancel_requested);
    bool cancel = false;
    int64_t until;
    ASSERT_EQ(engine_heartbeat(e, T0 + 1, head, token_of(e, head), NULL, &until, &cancel, NULL), 0);
    ASSERT(cancel);
    ASSERT_EQ(fail_ok(e, T0 + 2, head, (engine_fail_req){.cancelled = true}), ENGINE_CANCELLED);
    /* finished or dead: conflict */
    engine_err err;
    ASSERT_EQ(engine_cancel(e, T0, head, &s, &err), TENQ_ECONFLICT);
    uint64_t dead = kill_one(e, T0, "a", "q3", "T");
    ASSERT_EQ(engine_cancel(e, T0, dead, &s, &err), TENQ_ECONFLICT);
    ASSERT_EQ(engine_cancel(e, T0, 424242, &s, &err), TENQ_ENOT_FOUND);
    engine_counts c;
    engine_totals(e, T0, &c);
    ASSERT_EQ(c.cancelled_total, 4);
    must_check(e, T0 + 2);
    engine_destroy(e);
}

TEST(cancel_requested_then_lease_expiry_ends_cancelled_not_retried)
{
    engine_t *e = mk_engine();
    uint64_t id = SUB(e, T0, "a", "q");
    lease1(e, T0, "q");
    engine_cancel(e, T0, id, NULL, NULL);
    engine_tick(e, T0 + 300000);
    ASSERT_EQ(state_of(e, id), ENGINE_CANCELLED);
    ASSERT_EQ(lease1(e, T0 + 300000, "q"), 0);
    engine_destroy(e);
}

TEST(cancel_requested_then_ordinary_failure_is_not_retried)
{
    engine_t *e = mk_engine();
    uint64_t id = SUB(e, T0, "a", "q");
    lease1(e, T0, "q");
    engine_cancel(e, T0, id, NULL, NULL);
    ASSERT_EQ(fail_ok(e, T0, id, (engine_fail_req){.error = "oops"}), ENGINE_CANCELLED);
    engine_destroy(e);
}

/* ---- leases -------------------------------------------------------------------------- */

TEST(lease_expiry_is_a_failed_attempt_and_the_job_retries)
{
    engine_t *e = mk_engine();
    engine_queue_settings s = queue_settings(e, "q");
    s.lease_ms = 1000;
    s.backoff = ENGINE_BACKOFF_FIXED;
    s.backoff_base_ms = 0;
    set_queue(e, "q", s);
    set_slots(e, "a", 1, 1);
    uint64_t id = SUB(e, T0, "a", "q");
    ASSERT_EQ(lease1(e, T0, "q"), id);
    ASSERT_EQ(engine_next_timer(e), T0 + 1000);
    engine_tick(e, T0 + 999);
    ASSERT_EQ(state_of(e, id), ENGINE_LEASED);
    engine_tick(e, T0 + 1000);
    engine_job_info in = info_of(e, id);
    ASSERT_EQ(in.state, ENGINE_READY);
    ASSERT_STR(in.error, "lease expired");
    ASSERT_EQ(lease1(e, T0 + 1000, "q"), id); /* the slot came back too */
    ASSERT_EQ(info_of(e, id).attempts, 2);
    engine_destroy(e);
}

TEST(heartbeat_extends_the_lease_and_carries_progress)
{
    engine_t *e = mk_engine();
    engine_queue_settings s = queue_settings(e, "q");
    s.lease_ms = 1000;
    set_queue(e, "q", s);
    uint64_t id = SUB(e, T0, "a", "q");
    lease1(e, T0, "q");
    int64_t until = 0;
    bool cancel = true;
    ASSERT_EQ(engine_heartbeat(e, T0 + 900, id, token_of(e, id), "0.4", &until, &cancel, NULL), 0);
    ASSERT_EQ(until, T0 + 1900);
    ASSERT(!cancel);
    ASSERT_STR(info_of(e, id).progress, "0.4");
    engine_tick(e, T0 + 1500);
    ASSERT_EQ(state_of(e, id), ENGINE_LEASED);
    engine_tick(e, T0 + 1900);
    ASSERT(state_of(e, id) != ENGINE_LEASED);
    engine_destroy(e);
}

TEST(stale_token_is_refused_and_changes_nothing)
{
    engine_t *e = mk_engine();
    engine_queue_settings s = queue_settings(e, "q");
    s.lease_ms = 1000;
    s.backoff = ENGINE_BACKOFF_FIXED;
    s.backoff_base_ms = 0;
    set_queue(e, "q", s);
    uint64_t id = SUB(e, T0, "a", "q");
    lease1(e, T0, "q");
    uint64_t old = token_of(e, id);
    engine_tick(e, T0 + 1000); /* the first worker froze; its lease expired */
    ASSERT_EQ(lease1(e, T0 + 1000, "q"), id);
    uint64_t fresh = token_of(e, id);
    ASSERT(fresh > old);
    engine_changes_clear(e);
    engine_err err;
    ASSERT_EQ(engine_ack(e, T0 + 1001, id, old, NULL, NULL, &err), TENQ_ECONFLICT);
    ASSERT_STR(err.field, "token");
    engine_fail_req f = {.error = "late"};
    ASSERT_EQ(engine_fail(e, T0 + 1001, id, old, &f, NULL, &err), TENQ_ECONFLICT);
    ASSERT_EQ(engine_heartbeat(e, T0 + 1001, id, old, NULL, NULL, NULL, &err), TENQ_ECONFLICT);
    ASSERT_EQ(engine_start(e, T0 + 1001, id, old, &err), TENQ_ECONFLICT);
    size_t n;
    engine_changes(e, &n);
    ASSERT_EQ(n, 0);
    ASSERT_EQ(state_of(e, id), ENGINE_LEASED);
    ASSERT_EQ(engine_ack(e, T0 + 1002, id, fresh, NULL, NULL, &err), 0);
    /* after the end, even the fresh token is refused */
    ASSERT_EQ(engine_ack(e, T0 + 1003, id, fresh, NULL, NULL, &err), TENQ_ECONFLICT);
    ASSERT_EQ(engine_ack(e, T0, 777777, 1, NULL, NULL, &err), TENQ_ENOT_FOUND);
    engine_destroy(e);
}

TEST(at_most_once_never_hands_a_job_out_twice)
{
    engine_t *e = mk_engine();
    engine_queue_settings s = queue_settings(e, "once");
    s.delivery = ENGINE_AT_MOST_ONCE;
    s.lease_ms = 100;
    set_queue(e, "once", s);
    for (int i = 0; i < 50; i++) SUB(e, T0, "a", "once");
    int handed[64] = {0};
    int64_t now = T0;
    for (int round = 0; round < 20; round++) {
        uint64_t ids[64];
        size_t n = lease_q(e, now, "once", 7, ids);
        for (size_t i = 0; i < n; i++) {
            handed[ids[i] % 64]++;
            if (ids[i] % 3 == 0)
                fail_ok(e, now, ids[i], (engine_fail_req){.error = "x", .has_retry_in = true});
            else if (ids[i] % 3 == 1)
                ack_ok(e, now, ids[i]);
            /* else: the worker vanishes and the lease expires */
        }
        now += 100;
        engine_tick(e, now);
        engine_changes_clear(e);
    }
    for (int i = 0; i < 64; i++) ASSERT(handed[i] <= 1);
    engine_destroy(e);
}
