// SPDX-License-Identifier: Apache-2.0
/* One test per rule of SEMANTICS.md, named after the rule: lanes. */
#include "engine_helpers.h"

#define T0 1700000000000LL

/* ---- lanes -------------------------------------------------------------------- */

TEST(lane_runs_one_at_a_time_in_submission_order)
{
    engine_t *e = mk_engine();
    uint64_t k1 = SUB(e, T0, "a", "q", .key = "order:1");
    uint64_t k2 = SUB(e, T0, "a", "q", .key = "order:1", .priority = 100);
    uint64_t k3 = SUB(e, T0, "a", "q", .key = "order:1");
    ASSERT_EQ(state_of(e, k2), ENGINE_BLOCKED);
    ASSERT_EQ(state_of(e, k3), ENGINE_BLOCKED);
    uint64_t ids[5];
    ASSERT_EQ(lease_q(e, T0, "q", 5, ids), 1); /* only the head */
    ASSERT_EQ(ids[0], k1);
    ack_ok(e, T0, k1);
    ASSERT_EQ(state_of(e, k2), ENGINE_READY);
    ASSERT_EQ(lease_q(e, T0, "q", 5, ids), 1);
    ASSERT_EQ(ids[0], k2);
    ack_ok(e, T0, k2);
    ASSERT_EQ(lease1(e, T0, "q"), k3);
    must_check(e, T0);
    engine_destroy(e);
}

TEST(lanes_with_different_keys_run_in_parallel)
{
    engine_t *e = mk_engine();
    for (int k = 0; k < 50; k++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", k);
        for (int i = 0; i < 3; i++) SUB(e, T0, "a", "q", .key = key);
    }
    uint64_t ids[256];
    ASSERT_EQ(lease_q(e, T0, "q", 200, ids), 50);
    ASSERT_EQ(engine_lane_count(e), 50);
    engine_lane_info top[3];
    ASSERT_EQ(engine_top_lanes(e, 3, top, NULL, NULL, NULL), 3);
    ASSERT_EQ(top[0].length, 3);
    ASSERT_EQ(top[0].head_state, ENGINE_LEASED);
    must_check(e, T0);
    engine_destroy(e);
}

TEST(lane_stays_blocked_during_retry_backoff)
{
    engine_t *e = mk_engine();
    uint64_t k1 = SUB(e, T0, "a", "q", .key = "L");
    uint64_t k2 = SUB(e, T0, "a", "q", .key = "L");
    ASSERT_EQ(lease1(e, T0, "q"), k1);
    engine_state s = fail_ok(
        e, T0, k1, (engine_fail_req){.error = "boom", .has_retry_in = true, .retry_in_ms = 5000});
    ASSERT_EQ(s, ENGINE_SCHEDULED);
    ASSERT_EQ(state_of(e, k2), ENGINE_BLOCKED);
    ASSERT_EQ(lease1(e, T0 + 4999, "q"), 0); /* k2 may not jump ahead */
    engine_tick(e, T0 + 5000);
    ASSERT_EQ(lease1(e, T0 + 5000, "q"), k1);
    ack_ok(e, T0 + 5000, k1);
    ASSERT_EQ(lease1(e, T0 + 5000, "q"), k2);
    must_check(e, T0 + 5000);
    engine_destroy(e);
}

TEST(lane_next_goes_ahead_after_death)
{
    engine_t *e = mk_engine();
    uint64_t k1 = SUB(e, T0, "a", "q", .key = "L");
    uint64_t k2 = SUB(e, T0, "a", "q", .key = "L");
    lease1(e, T0, "q");
    ASSERT_EQ(fail_ok(e, T0, k1, (engine_fail_req){.error = "fatal", .no_retry = true}),
              ENGINE_DEAD);
    ASSERT_EQ(state_of(e, k2), ENGINE_READY);
    ASSERT_EQ(lease1(e, T0, "q"), k2);
    engine_destroy(e);
}

TEST(lane_next_goes_ahead_after_cancel)
{
    engine_t *e = mk_engine();
    uint64_t k1 = SUB(e, T0, "a", "q", .key = "L");
    uint64_t k2 = SUB(e, T0, "a", "q", .key = "L");
    uint64_t k3 = SUB(e, T0, "a", "q", .key = "L");
    ASSERT_EQ(engine_cancel(e, T0, k2, NULL, NULL), 0); /* from the middle */
    ASSERT_EQ(engine_cancel(e, T0, k1, NULL, NULL), 0); /* the head */
    ASSERT_EQ(state_of(e, k3), ENGINE_READY);
    ASSERT_EQ(lease1(e, T0, "q"), k3);
    must_check(e, T0);
    engine_destroy(e);
}

TEST(lane_head_with_future_run_at_holds_the_lane)
{
    engine_t *e = mk_engine();
    uint64_t k1 = SUB(e, T0, "a", "q", .key = "L", .run_at = T0 + 100);
    uint64_t k2 = SUB(e, T0, "a", "q", .key = "L");
    ASSERT_EQ(state_of(e, k1), ENGINE_SCHEDULED);
    ASSERT_EQ(state_of(e, k2), ENGINE_BLOCKED);
    ASSERT_EQ(lease1(e, T0 + 50, "q"), 0);
    engine_tick(e, T0 + 100);
    ASSERT_EQ(lease1(e, T0 + 100, "q"), k1);
    engine_destroy(e);
}
