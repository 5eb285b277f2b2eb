// SPDX-License-Identifier: Apache-2.0
/* One test per rule of SEMANTICS.md, named after the rule: priority aging. */
#include "engine_helpers.h"

#define T0 1700000000000LL

static void set_aging(engine_t *e, const char *q, int64_t ms, int64_t cap)
{
    engine_queue_settings s = queue_settings(e, q);
    s.aging_ms = ms;
    s.aging_cap = cap;
    set_queue(e, q, s);
}

static uint64_t psub(engine_t *e, int64_t now, const char *t, int prio)
{
    return SUB(e, now, t, "q", .priority = prio, .run_at = now);
}

TEST(aging_off_keeps_strict_priority)
{
    engine_t *e = mk_engine();
    uint64_t low = psub(e, T0, "t", 0);
    uint64_t high = psub(e, T0 + 3600000, "t", 5);
    ASSERT_EQ(lease1(e, T0 + 3600000, "q"), high);
    ASSERT_EQ(lease1(e, T0 + 3600000, "q"), low);
    must_check(e, T0 + 3600000);
    engine_destroy(e);
}

TEST(aging_raises_a_waiting_job_one_step_per_aging_ms)
{
    engine_t *e = mk_engine();
    set_aging(e, "q", 1000, 100);
    uint64_t low = psub(e, T0, "t", 0);         /* ranks 0 + 6 at T0 + 6000 */
    uint64_t mid = psub(e, T0 + 6000, "t", 5);  /* ranks 5 */
    uint64_t high = psub(e, T0 + 6000, "t", 7); /* ranks 7 */
    must_check(e, T0 + 6000);
    ASSERT_EQ(lease1(e, T0 + 6000, "q"), high);
    ASSERT_EQ(lease1(e, T0 + 6000, "q"), low);
    ASSERT_EQ(lease1(e, T0 + 6000, "q"), mid);
    must_check(e, T0 + 6000);
    engine_destroy(e);
}

TEST(aging_never_reorders_jobs_of_one_priority)
{
    engine_t *e = mk_engine();
    set_aging(e, "q", 1000, 100);
    uint64_t id[20];
    for (int i = 0; i < 20; i++) id[i] = psub(e, T0 + i * 700, i % 2 ? "t" : "u", 3);
    uint64_t later_high = psub(e, T0 + 20 * 700, "t", 9);
    int64_t now = T0 + 30000;
    engine_tick(e, now);
    must_check(e, now);
    /* later_high ranks 25 now (9 + 16 s): between them; the 20, of one
     * priority, go first come first */
    int next = 0, high_at = -1;
    for (int k = 0; k < 21; k++) {
        uint64_t got = lease1(e, now, "q");
        if (got == later_high) {
            high_at = k;
            continue;
        }
        ASSERT_EQ(got, id[next]);
        next++;
    }
    ASSERT_EQ(next, 20);
    ASSERT_EQ(high_at, 12); /* ranks 25: after the 12 that rank above (33 - 0.7 i, i < 11.4) */
    engine_destroy(e);
}

TEST(aging_stops_at_the_cap_where_jobs_of_that_priority_go_first_come_first)
{
    engine_t *e = mk_engine();
    set_aging(e, "q", 1000, 3);
    uint64_t old_low = psub(e, T0, "t", 0);      /* reaches 3 at T0 + 3000, no further */
    uint64_t three = psub(e, T0 + 1000, "t", 3); /* priority 3, newer than old_low */
    uint64_t four = psub(e, T0 + 2000, "t", 4);  /* above the cap: never outranked */
    int64_t now = T0 + 600000;
    engine_tick(e, now);
    must_check(e, now);
    ASSERT_EQ(lease1(e, now, "q"), four);
    ASSERT_EQ(lease1(e, now, "q"), old_low); /* at the cap, older than `three` */
    ASSERT_EQ(lease1(e, now, "q"), three);
    engine_destroy(e);
}

TEST(aging_reaching_the_cap_reorders_across_tenants_at_that_time)
{
    /* tenant a's job rises; tenant b's sits at the cap.  Before a's job
     * reaches the cap b's goes first; once it has, a's (older) does. */
    engine_t *e = mk_engine();
    set_aging(e, "q", 1000, 3);
    uint64_t a1 = psub(e, T0, "a", 0);
    uint64_t b1 = psub(e, T0 + 1000, "b", 3);
    uint64_t b2 = psub(e, T0 + 2000, "b", 3);
    engine_tick(e, T0 + 2500);
    ASSERT_EQ(lease1(e, T0 + 2500, "q"), b1); /* a1 ranks 2.5 */
    must_check(e, T0 + 2500);
    /* at T0 + 3000 a1 reaches 3: older than b2.  The lease itself sees it,
     * even before a tick */
    ASSERT_EQ(engine_next_timer(e) <= T0 + 3000, 1);
    ASSERT_EQ(lease1(e, T0 + 3000, "q"), a1);
    ASSERT_EQ(lease1(e, T0 + 3000, "q"), b2);
    must_check(e, T0 + 3000);
    engine_destroy(e);
}

TEST(aging_ranks_across_queues_by_the_priority_reached)
{
    engine_t *e = mk_engine();
    set_aging(e, "q", 1000, 100);
    uint64_t aged = psub(e, T0, "t", 0);
    uint64_t other = SUB(e, T0 + 5000, "t", "r", .priority = 4, .run_at = T0 + 5000);
    const char *qs[2] = {"r", "q"};
    engine_lease_req req = {.queues = qs, .n_queues = 2, .max = 1, .worker = "w"};
    engine_job *out[1];
    /* at T0 + 3000 the aged job ranks 3: below the other queue's 4 */
    ASSERT_EQ(engine_lease(e, T0 + 5000, &req, out), 1); /* ranks 5 now */
    ASSERT_EQ(engine_job_id(out[0]), aged);
    ASSERT_EQ(engine_lease(e, T0 + 5000, &req, out), 1);
    ASSERT_EQ(engine_job_id(out[0]), other);
    must_check(e, T0 + 5000);
    engine_destroy(e);
}

TEST(aging_set_or_cleared_reorders_the_ready_jobs)
{
    engine_t *e = mk_engine();
    uint64_t low = psub(e, T0, "t", 0);
    uint64_t high = psub(e, T0 + 5000, "t", 2);
    must_check(e, T0 + 10000);
    set_aging(e, "q", 1000, 100); /* low ranks 10, high 7 */
    must_check(e, T0 + 10000);
    engine_tick(e, T0 + 10000);
    set_aging(e, "q", 0, 32767); /* back to plain priority */
    must_check(e, T0 + 10000);
    set_aging(e, "q", 1000, 100);
    ASSERT_EQ(lease1(e, T0 + 10000, "q"), low);
    ASSERT_EQ(lease1(e, T0 + 10000, "q"), high);
    engine_destroy(e);
}

TEST(aging_applies_within_a_keys_group)
{
    engine_t *e = mk_engine();
    set_aging(e, "q", 1000, 100);
    const engine_limit_key ck[1] = {{"acct", 1}};
    uint64_t low = SUB(e, T0, "t", "q", .priority = 0, .run_at = T0, .ckeys = ck, .n_ckeys = 1);
    uint64_t high =
        SUB(e, T0 + 8000, "t", "q", .priority = 5, .run_at = T0 + 8000, .ckeys = ck, .n_ckeys = 1);
    uint64_t plain = psub(e, T0 + 8000, "t", 6);
    must_check(e, T0 + 8000);
    ASSERT_EQ(lease1(e, T0 + 8000, "q"), low); /* ranks 8 */
    ASSERT_EQ(lease1(e, T0 + 8000, "q"), plain);
    ack_ok(e, T0 + 8000, low);
    ASSERT_EQ(lease1(e, T0 + 8000, "q"), high);
    must_check(e, T0 + 8000);
    engine_destroy(e);
}

TEST(aging_settings_out_of_range_are_refused_naming_the_field)
{
    engine_t *e = mk_engine();
    engine_queue_settings s = queue_settings(e, "q");
    engine_err err;
    s.aging_cap = 40000;
    ASSERT_EQ(engine_queue_set(e, 0, "q", &s, &err), TENQ_EINVALID);
    ASSERT_STR(err.field, "aging_cap");
    s = queue_settings(e, "q");
    s.aging_ms = 31 * 24 * 3600 * 1000LL;
    ASSERT_EQ(engine_queue_set(e, 0, "q", &s, &err), TENQ_EINVALID);
    ASSERT_STR(err.field, "aging_ms");
    engine_destroy(e);
}
