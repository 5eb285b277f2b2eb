// SPDX-License-Identifier: Apache-2.0
/* Why a job waits (engine_job_wait): each reason SEMANTICS.md names, and
 * none once the job is handed out. */
#include "engine_helpers.h"

#define T0 1700000000000LL

static engine_wait wait_of(engine_t *e, uint64_t id)
{
    engine_wait w;
    engine_job_wait(engine_find(e, id), &w);
    return w;
}

TEST(a_ready_job_with_room_waits_for_a_worker_and_a_leased_one_waits_for_nothing)
{
    engine_t *e = mk_engine();
    uint64_t id = SUB(e, T0, "t", "q");
    ASSERT_EQ(wait_of(e, id).kind, ENGINE_WAIT_WORKER);
    ASSERT_STR(engine_wait_name(ENGINE_WAIT_WORKER), "worker");
    ASSERT_EQ(lease1(e, T0, "q"), id);
    ASSERT_EQ(wait_of(e, id).kind, ENGINE_WAIT_NONE);
    ASSERT(engine_wait_name(ENGINE_WAIT_NONE) == NULL);
    ack_ok(e, T0, id);
    ASSERT_EQ(wait_of(e, id).kind, ENGINE_WAIT_NONE);
    engine_destroy(e);
}

TEST(a_job_for_later_waits_until_its_run_at)
{
    engine_t *e = mk_engine();
    uint64_t id = SUB(e, T0, "t", "q", .run_at = T0 + 60000);
    engine_wait w = wait_of(e, id);
    ASSERT_EQ(w.kind, ENGINE_WAIT_SCHEDULED);
    ASSERT_EQ(w.until, T0 + 60000);
    engine_destroy(e);
}

TEST(a_failed_attempt_waits_in_backoff_until_its_retry)
{
    engine_t *e = mk_engine();
    uint64_t id = SUB(e, T0, "t", "q");
    lease1(e, T0, "q");
    fail_ok(e, T0, id, (engine_fail_req){.error = "x", .has_retry_in = true, .retry_in_ms = 5000});
    engine_wait w = wait_of(e, id);
    ASSERT_EQ(w.kind, ENGINE_WAIT_BACKOFF);
    ASSERT_EQ(w.until, T0 + 5000);
    engine_destroy(e);
}

TEST(a_job_behind_another_in_its_lane_names_the_lanes_head)
{
    engine_t *e = mk_engine();
    uint64_t first = SUB(e, T0, "t", "q", .key = "k");
    uint64_t second = SUB(e, T0, "t", "q", .key = "k");
    uint64_t third = SUB(e, T0, "t", "q", .key = "k");
    engine_wait w = wait_of(e, third);
    ASSERT_EQ(w.kind, ENGINE_WAIT_LANE);
    ASSERT_EQ(w.blocked_by, first);
    ASSERT_EQ(lease1(e, T0, "q"), first);
    ack_ok(e, T0, first);
    ASSERT_EQ(wait_of(e, second).kind, ENGINE_WAIT_WORKER);
    ASSERT_EQ(wait_of(e, third).blocked_by, second);
    engine_destroy(e);
}

TEST(a_tenant_at_its_slots_and_at_a_queues_cap_are_told_apart)
{
    engine_t *e = mk_engine();
    set_slots(e, "t", 1, 1);
    uint64_t a = SUB(e, T0, "t", "q");
    uint64_t b = SUB(e, T0, "t", "q");
    ASSERT_EQ(lease1(e, T0, "q"), a);
    engine_wait w = wait_of(e, b);
    ASSERT_EQ(w.kind, ENGINE_WAIT_TENANT_SLOTS);
    ASSERT_EQ(w.active, 1);
    ASSERT_EQ(w.limit, 1);
    /* 0 slots: the tenant is paused */
    set_slots(e, "u", 0, 1);
    uint64_t paused = SUB(e, T0, "u", "q");
    w = wait_of(e, paused);
    ASSERT_EQ(w.kind, ENGINE_WAIT_TENANT_SLOTS);
    ASSERT_EQ(w.limit, 0);
    /* the queue's per-tenant cap, with slots to spare */
    engine_queue_settings qs = queue_settings(e, "capped");
    qs.tenant_cap = 1;
    set_queue(e, "capped", qs);
    uint64_t c1 = SUB(e, T0, "v", "capped");
    uint64_t c2 = SUB(e, T0, "v", "capped");
    ASSERT_EQ(lease1(e, T0, "capped"), c1);
    w = wait_of(e, c2);
    ASSERT_EQ(w.kind, ENGINE_WAIT_TENANT_CAP);
    ASSERT_EQ(w.active, 1);
    ASSERT_EQ(w.limit, 1);
    must_check(e, T0);
    engine_destroy(e);
}
