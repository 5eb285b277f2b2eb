// SPDX-License-Identifier: Apache-2.0
/* One test per rule of SEMANTICS.md, named after the rule: the morgue (how jobs
 * get there, list, requeue, delete). */
#include "engine_helpers.h"

#define T0 1700000000000LL

/* ---- the morgue -------------------------------------------------------------------------- */

TEST(morgue_path_max_attempts)
{
    engine_t *e = mk_engine();
    uint64_t id = SUB(e, T0, "a", "q", .max_attempts = 3);
    int64_t now = T0;
    for (int i = 0; i < 3; i++) {
        engine_tick(e, now);
        ASSERT_EQ(lease1(e, now, "q"), id);
        engine_state s =
            fail_ok(e, now, id, (engine_fail_req){.error = "nope", .has_retry_in = true});
        ASSERT_EQ(s, i < 2 ? ENGINE_READY : ENGINE_DEAD);
    }
    engine_job_info in = info_of(e, id);
    ASSERT_EQ(in.attempts, 3);
    ASSERT_EQ(in.finished_at, now);
    engine_counts c;
    engine_queue_get(e, now, "q", NULL, &c);
    ASSERT_EQ(c.dead, 1);
    ASSERT_EQ(c.failed_total, 3);
    engine_destroy(e);
}

TEST(morgue_path_retry_false)
{
    engine_t *e = mk_engine();
    uint64_t id = SUB(e, T0, "a", "q");
    lease1(e, T0, "q");
    ASSERT_EQ(fail_ok(e, T0, id, (engine_fail_req){.error = "bad input", .no_retry = true}),
              ENGINE_DEAD);
    ASSERT_STR(info_of(e, id).error, "bad input");
    engine_destroy(e);
}

TEST(morgue_path_at_most_once_expired_lease)
{
    engine_t *e = mk_engine();
    engine_queue_settings s = queue_settings(e, "once");
    s.delivery = ENGINE_AT_MOST_ONCE;
    s.lease_ms = 1000;
    set_queue(e, "once", s);
    uint64_t id = SUB(e, T0, "a", "once");
    ASSERT_EQ(lease1(e, T0, "once"), id);
    engine_tick(e, T0 + 1000);
    ASSERT_EQ(state_of(e, id), ENGINE_DEAD);
    ASSERT_STR(info_of(e, id).error, "lease expired");
    ASSERT_EQ(lease1(e, T0 + 1000, "once"), 0); /* never handed out twice */
    engine_destroy(e);
}

TEST(morgue_path_at_most_once_failure)
{
    engine_t *e = mk_engine();
    engine_queue_settings s = queue_settings(e, "once");
    s.delivery = ENGINE_AT_MOST_ONCE;
    set_queue(e, "once", s);
    uint64_t id = SUB(e, T0, "a", "once");
    lease1(e, T0, "once");
    ASSERT_EQ(fail_ok(e, T0, id, (engine_fail_req){.error = "x", .has_retry_in = true}),
              ENGINE_DEAD);
    engine_destroy(e);
}

TEST(morgue_list_filters_sorts_and_pages)
{
    engine_t *e = mk_engine();
    uint64_t ids[12];
    for (int i = 0; i < 12; i++)
        ids[i] = kill_one(e, T0 + (11 - i) * 10, i % 2 ? "a" : "b", i % 3 ? "q1" : "q2",
                          i % 4 ? "X" : "Y");
    /* ids[11] died first (T0), ids[0] last */
    engine_job *out[20];
    size_t n = engine_morgue_list(e, NULL, ENGINE_MORGUE_NEWEST, NULL, 20, out);
    ASSERT_EQ(n, 12);
    ASSERT_EQ(engine_job_id(out[0]), ids[0]);
    ASSERT_EQ(engine_job_id(out[11]), ids[11]);
    n = engine_morgue_list(e, NULL, ENGINE_MORGUE_BY_ID, NULL, 20, out);
    for (size_t i = 1; i < n; i++) ASSERT(engine_job_id(out[i]) > engine_job_id(out[i - 1]));
    /* filter by tenant a and type X */
    engine_morgue_filter f = {.tenant = "a", .type = "X"};
    n = engine_morgue_list(e, &f, ENGINE_MORGUE_BY_ID, NULL, 20, out);
    size_t expect = 0;
    for (int i = 0; i < 12; i++) expect += (i % 2) && (i % 4);
    ASSERT_EQ(n, expect);
    for (size_t i = 0; i < n; i++) ASSERT_STR(engine_job_tenant(out[i]), "a");
    /* pages of 5 by newest with a cursor cover everything once */
    engine_morgue_cursor cur = {0};
    size_t total = 0;
    uint64_t seen_last = 0;
    for (;;) {
        n = engine_morgue_list(e, NULL, ENGINE_MORGUE_NEWEST, &cur, 5, out);
        if (!n) break;
        for (size_t i = 0; i < n; i++) {
            ASSERT(engine_job_id(out[i]) != seen_last);
            seen_last = engine_job_id(out[i]);
        }
        total += n;
        engine_job_info in;
        engine_job_get(out[n - 1], &in);
        cur.finished_at = in.finished_at;
        cur.id = in.id;
    }
    ASSERT_EQ(total, 12);
    engine_morgue_filter fq = {.queue = "q2"};
    ASSERT_EQ(engine_morgue_list(e, &fq, ENGINE_MORGUE_NEWEST, NULL, 20, out), 4);
    engine_morgue_filter fnone = {.tenant = "nobody"};
    ASSERT_EQ(engine_morgue_list(e, &fnone, ENGINE_MORGUE_NEWEST, NULL, 20, out), 0);
    engine_destroy(e);
}

TEST(morgue_requeue_resets_attempts_and_runs_now)
{
    engine_t *e = mk_engine();
    uint64_t id = kill_one(e, T0, "a", "q", "T");
    ASSERT_EQ(engine_morgue_requeue(e, T0 + 100, id, NULL), 0);
    engine_job_info in = info_of(e, id);
    ASSERT_EQ(in.state, ENGINE_READY);
    ASSERT_EQ(in.attempts, 0);
    ASSERT_EQ(in.run_at, T0 + 100);
    ASSERT_EQ(in.finished_at, 0);
    ASSERT_EQ(lease1(e, T0 + 100, "q"), id);
    engine_err err;
    ASSERT_EQ(engine_morgue_requeue(e, T0, id, &err), TENQ_ECONFLICT); /* not dead now */
    ASSERT_EQ(engine_morgue_requeue(e, T0, 999999, &err), TENQ_ENOT_FOUND);
    engine_destroy(e);
}

TEST(morgue_requeue_of_a_lane_job_goes_to_the_end_of_its_lane)
{
    engine_t *e = mk_engine();
    uint64_t k1 = SUB(e, T0, "a", "q", .key = "L");
    uint64_t k2 = SUB(e, T0, "a", "q", .key = "L");
    lease1(e, T0, "q");
    fail_ok(e, T0, k1, (engine_fail_req){.error = "x", .no_retry = true});
    ASSERT_EQ(lease1(e, T0, "q"), k2);
    ASSERT_EQ(engine_morgue_requeue(e, T0, k1, NULL), 0);
    ASSERT_EQ(state_of(e, k1), ENGINE_BLOCKED); /* k2 holds the lane */
    ASSERT(info_of(e, k1).lane_seq > k2);
    ack_ok(e, T0, k2);
    ASSERT_EQ(lease1(e, T0, "q"), k1);
    must_check(e, T0);
    engine_destroy(e);
}

TEST(morgue_delete_one_and_by_filter)
{
    engine_t *e = mk_engine();
    uint64_t a = kill_one(e, T0, "a", "q", "T");
    kill_one(e, T0, "a", "q", "T");
    kill_one(e, T0, "b", "q", "T");
    engine_changes_clear(e);
    ASSERT_EQ(engine_morgue_delete(e, T0, a, NULL), 0);
    ASSERT(engine_find(e, a) == NULL);
    size_t n;
    const engine_change *c = engine_changes(e, &n);
    ASSERT_EQ(n, 1);
    ASSERT_EQ(c[0].kind, ENGINE_CH_JOB_DELETED);
    ASSERT_EQ(c[0].id, a);
    engine_morgue_filter f = {.tenant = "a"};
    ASSERT_EQ(engine_morgue_delete_where(e, T0, &f, 100), 1);
    engine_counts tot;
    engine_totals(e, T0, &tot);
    ASSERT_EQ(tot.dead, 1);
    ASSERT_EQ(engine_morgue_delete(e, T0, a, NULL), TENQ_ENOT_FOUND);
    must_check(e, T0);
    engine_destroy(e);
}

/* A job is listed once however often it changes, with every change's
 * fields; a deletion takes over its entry (the job is freed at once). */
TEST(a_job_is_listed_once_and_a_deletion_takes_over_its_entry)
{
    engine_t *e = mk_engine();
    uint64_t b = SUB(e, T0, "a", "other");
    uint64_t a = kill_one(e, T0, "a", "q", "T"); /* submitted, leased, dead */
    size_t n;
    const engine_change *c = engine_changes(e, &n);
    int listed = 0;
    for (size_t i = 0; i < n; i++)
        if (c[i].kind == ENGINE_CH_JOB && c[i].id == a) {
            listed++;
            ASSERT(c[i].fields & ENGINE_JF_NEW);
        }
    ASSERT_EQ(listed, 1);
    ASSERT_EQ(engine_morgue_delete(e, T0, a, NULL), 0);
    c = engine_changes(e, &n);
    int deleted = 0, as_job = 0, other = 0;
    for (size_t i = 0; i < n; i++) {
        if (c[i].id == a) {
            deleted += c[i].kind == ENGINE_CH_JOB_DELETED;
            as_job += c[i].kind == ENGINE_CH_JOB;
        }
        other += c[i].kind == ENGINE_CH_JOB && c[i].id == b;
    }
    ASSERT_EQ(deleted, 1);
    ASSERT_EQ(as_job, 0);
    ASSERT_EQ(other, 1);
    engine_changes_clear(e);
    must_check(e, T0);
    engine_destroy(e);
}

TEST(morgue_requeue_by_filter)
{
    engine_t *e = mk_engine();
    for (int i = 0; i < 5; i++) kill_one(e, T0, "a", "q", "T");
    for (int i = 0; i < 3; i++) kill_one(e, T0, "b", "q", "T");
    engine_morgue_filter f = {.tenant = "a"};
    ASSERT_EQ(engine_morgue_requeue_where(e, T0, &f, 3), 3); /* bounded */
    ASSERT_EQ(engine_morgue_requeue_where(e, T0, &f, 100), 2);
    engine_counts c;
    engine_tenant_get(e, T0, "a", NULL, &c);
    ASSERT_EQ(c.dead, 0);
    ASSERT_EQ(c.ready, 5);
    must_check(e, T0);
    engine_destroy(e);
}
