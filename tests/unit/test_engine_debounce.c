// SPDX-License-Identifier: Apache-2.0
/* One test per rule of SEMANTICS.md, named after the rule: debounce and
 * expiry. */
#include "engine_helpers.h"

#define T0 1700000000000LL

static engine_submit_res dsub(engine_t *e, int64_t now, const char *args, int64_t ms, int64_t max)
{
    engine_submit_req r = {.tenant = "t", .queue = "q", .type = "T", .key = "doc:1"};
    r.args = args;
    r.args_len = (uint32_t)strlen(args);
    r.debounce_ms = ms;
    r.debounce_max_ms = max;
    engine_submit_res res;
    engine_submit(e, now, &r, &res);
    return res;
}

static engine_submit_res xsub(engine_t *e, int64_t now, sub_opts o, int64_t expire_at,
                              int64_t within)
{
    engine_submit_req r = {.tenant = "t", .queue = "q", .type = "T", .key = o.key};
    r.expire_at = expire_at;
    r.start_within_ms = within;
    r.run_at = o.run_at;
    r.priority = o.priority;
    r.has_priority = o.priority != 0;
    r.depends_on = o.deps;
    r.n_depends_on = o.n_deps;
    engine_submit_res res;
    engine_submit(e, now, &r, &res);
    return res;
}

static const char *args_of(engine_t *e, uint64_t id)
{
    static char buf[256];
    engine_job_info in = info_of(e, id);
    snprintf(buf, sizeof buf, "%.*s", (int)in.args_len, in.args ? in.args : "");
    return buf;
}

/* ---- debounce ------------------------------------------------------------------- */

TEST(debounce_replaces_the_pending_job_and_moves_its_start)
{
    engine_t *e = mk_engine();
    engine_submit_res a = dsub(e, T0, "{\"v\":1}", 1000, 0);
    ASSERT_EQ(a.code, 0);
    ASSERT(a.created && !a.debounced);
    ASSERT_EQ(info_of(e, a.id).run_at, T0 + 1000);
    ASSERT(info_of(e, a.id).debounced);
    engine_submit_res b = dsub(e, T0 + 600, "{\"v\":2,\"longer\":\"args than before\"}", 1000, 0);
    ASSERT_EQ(b.code, 0);
    ASSERT(!b.created && b.debounced);
    ASSERT_EQ(b.id, a.id);
    ASSERT_STR(args_of(e, a.id), "{\"v\":2,\"longer\":\"args than before\"}");
    ASSERT_EQ(info_of(e, a.id).run_at, T0 + 1600);
    engine_tick(e, T0 + 1000); /* the first quiet period is not over */
    ASSERT_EQ(lease1(e, T0 + 1000, "q"), 0);
    engine_submit_res c = dsub(e, T0 + 1200, "{}", 1000, 0); /* shorter args */
    ASSERT_EQ(c.id, a.id);
    ASSERT_STR(args_of(e, a.id), "{}");
    must_check(e, T0 + 1200);
    engine_tick(e, T0 + 2200);
    ASSERT_EQ(lease1(e, T0 + 2200, "q"), a.id); /* once, for the three submits */
    /* leased: the next submit makes a job of its own, behind it in the lane */
    engine_submit_res d = dsub(e, T0 + 2300, "{\"v\":4}", 1000, 0);
    ASSERT(d.created && d.id != a.id);
    ASSERT_EQ(state_of(e, d.id), ENGINE_BLOCKED);
    ack_ok(e, T0 + 2400, a.id);
    ASSERT_EQ(state_of(e, d.id), ENGINE_SCHEDULED);
    size_t n;
    const engine_change *ch = engine_changes(e, &n);
    bool args_written = false;
    for (size_t i = 0; i < n; i++)
        if (ch[i].kind == ENGINE_CH_JOB && ch[i].id == a.id)
            args_written |= ch[i].fields & ENGINE_JF_ARGS;
    ASSERT(args_written);
    must_check(e, T0 + 2400);
    engine_destroy(e);
}

TEST(debounce_moves_a_job_loaded_out_of_order)
{
    /* A job loaded after one of a later id page lives in the id table's
     * overflow: replacing its args moves it, and the table must then hold
     * it once, at its new place. */
    engine_t *e = mk_engine();
    engine_submit_res a = dsub(e, T0, "{\"v\":1}", 60000, 0);
    uint64_t other = SUB(e, T0, "t", "q");
    engine_job_info ia = info_of(e, a.id), io = info_of(e, other);
    io.id = a.id + 4096; /* another page of ids */
    engine_t *f = mk_engine();
    engine_loading(f, true);
    ASSERT_EQ(engine_load_job(f, T0, &io, NULL), 0);
    ASSERT_EQ(engine_load_job(f, T0, &ia, NULL), 0);
    engine_loading(f, false);
    engine_changes_clear(f);
    const char *longer = "{\"v\":2,\"and\":\"args much longer than the first ones were\"}";
    engine_submit_res b = dsub(f, T0 + 100, longer, 60000, 0);
    ASSERT(b.debounced);
    ASSERT_EQ(b.id, a.id);
    ASSERT_STR(args_of(f, a.id), longer);
    must_check(f, T0 + 100);
    engine_destroy(f);
    engine_destroy(e);
}

TEST(debounce_max_bounds_how_late_a_busy_key_runs)
{
    engine_t *e = mk_engine();
    engine_submit_res a = dsub(e, T0, "{}", 1000, 2500);
    for (int64_t t = T0 + 500; t < T0 + 4000; t += 500)
        ASSERT_EQ(dsub(e, t, "{}", 1000, 2500).id, a.id);
    /* the last submits could not push it past the first + 2500 ms */
    ASSERT_EQ(info_of(e, a.id).run_at, T0 + 2500);
    engine_tick(e, T0 + 2500);
    ASSERT_EQ(lease1(e, T0 + 2500, "q"), a.id);
    must_check(e, T0 + 2500);
    engine_destroy(e);
}

TEST(debounce_a_ready_job_waits_again_and_others_are_left_alone)
{
    engine_t *e = mk_engine();
    engine_submit_res a = dsub(e, T0, "{}", 100, 0);
    engine_tick(e, T0 + 100);
    ASSERT_EQ(state_of(e, a.id), ENGINE_READY); /* no worker took it yet */
    ASSERT_EQ(dsub(e, T0 + 150, "{\"late\":1}", 100, 0).id, a.id);
    ASSERT_EQ(state_of(e, a.id), ENGINE_SCHEDULED);
    /* a submit without debounce_ms into the lane makes its own job */
    uint64_t plain = SUB(e, T0 + 150, "t", "q", .key = "doc:1");
    ASSERT(plain != a.id);
    /* and a debounced one now finds that job at the tail: not debounced, so a new one */
    engine_submit_res b = dsub(e, T0 + 160, "{}", 100, 0);
    ASSERT(b.created);
    must_check(e, T0 + 160);
    engine_destroy(e);
}

TEST(debounce_on_a_merging_queue_merges_and_moves_the_start)
{
    engine_t *e = merge_engine();
    engine_submit_req r = {
        .tenant = "t", .queue = "m", .type = "T", .key = "K", .debounce_ms = 500};
    r.args = "{\"n\":1}";
    r.args_len = 7;
    engine_submit_res a, b;
    engine_submit(e, T0, &r, &a);
    r.args = "{\"n\":2}";
    engine_submit(e, T0 + 300, &r, &b);
    ASSERT_EQ(b.id, a.id);
    ASSERT(b.debounced);
    engine_job_info in = info_of(e, a.id);
    ASSERT_EQ(in.n_payloads, 2);
    ASSERT_EQ(in.run_at, T0 + 800);
    must_check(e, T0 + 300);
    engine_destroy(e);
}

TEST(debounce_keeps_quotas_and_memory_exact_with_args_out_of_memory)
{
    engine_config c;
    engine_config_defaults(&c);
    c.args_budget = 200; /* from the second job on, args of 64 bytes and more go out */
    engine_t *e = engine_create(&c);
    char big[128];
    snprintf(big, sizeof big, "{\"pad\":\"%0100d\"}", 0);
    SUB(e, T0, "t", "q", .args = big); /* fills what stays inline */
    engine_submit_res a = dsub(e, T0, big, 1000, 0);
    ASSERT(engine_job_spilled(engine_find(e, a.id)));
    must_check(e, T0);
    char big2[160];
    snprintf(big2, sizeof big2, "{\"pad\":\"%0130d\"}", 7);
    ASSERT_EQ(dsub(e, T0 + 10, big2, 1000, 0).id, a.id); /* its entry is pinned: replaced */
    ASSERT_STR(args_of(e, a.id), big2);
    must_check(e, T0 + 10);
    engine_changes_clear(e);
    must_check(e, T0 + 10);
    ASSERT_EQ(dsub(e, T0 + 20, "{}", 1000, 0).id, a.id); /* small: inline again */
    ASSERT(!engine_job_spilled(engine_find(e, a.id)));
    engine_counts qc;
    ASSERT_EQ(engine_queue_get(e, T0, "q", NULL, &qc), 0);
    ASSERT_EQ(qc.queued_bytes, strlen(big) + 2);
    must_check(e, T0 + 20);
    engine_changes_clear(e);
    must_check(e, T0 + 20);
    engine_destroy(e);
}

TEST(debounce_refuses_bad_input)
{
    engine_t *e = mk_engine();
    engine_submit_req r = {.tenant = "t", .queue = "q", .type = "T", .debounce_ms = 100};
    engine_submit_res res;
    ASSERT_EQ(engine_submit(e, T0, &r, &res), TENQ_EINVALID);
    ASSERT_STR(res.err.field, "debounce_ms"); /* without a key */
    r.key = "k";
    r.debounce_max_ms = 50;
    ASSERT_EQ(engine_submit(e, T0, &r, &res), TENQ_EINVALID);
    ASSERT_STR(res.err.field, "debounce_max_ms");
    r.debounce_max_ms = 0;
    r.debounce_ms = TQ_DAY_MS + 1;
    ASSERT_EQ(engine_submit(e, T0, &r, &res), TENQ_EINVALID);
    ASSERT_STR(res.err.field, "debounce_ms");
    r.debounce_ms = 0;
    r.expire_at = T0 + 10;
    r.start_within_ms = 10;
    ASSERT_EQ(engine_submit(e, T0, &r, &res), TENQ_EINVALID);
    ASSERT_STR(res.err.field, "start_within_ms");
    engine_destroy(e);
}

/* ---- expiry --------------------------------------------------------------------- */

TEST(expiry_a_job_not_started_by_its_time_ends_expired)
{
    engine_t *e = mk_engine();
    set_slots(e, "t", 0, 1); /* nothing runs */
    engine_submit_res a = xsub(e, T0, (sub_opts){0}, T0 + 1000, 0);
    engine_submit_res b = xsub(e, T0, (sub_opts){0}, 0, 500);
    ASSERT_EQ(info_of(e, b.id).expire_at, T0 + 500);
    ASSERT_EQ(engine_next_timer(e), T0 + 500);
    engine_tick(e, T0 + 499);
    ASSERT_EQ(state_of(e, b.id), ENGINE_READY);
    engine_tick(e, T0 + 500);
    ASSERT_EQ(state_of(e, b.id), ENGINE_EXPIRED);
    engine_job_info in = info_of(e, b.id);
    ASSERT_EQ(in.finished_at, T0 + 500);
    ASSERT(strstr(in.error, "expired") != NULL);
    engine_counts c;
    ASSERT_EQ(engine_tenant_get(e, T0, "t", NULL, &c), 0);
    ASSERT_EQ(c.expired_total, 1);
    ASSERT_EQ(c.ready, 1);
    must_check(e, T0 + 500);
    engine_changes_clear(e);
    ASSERT_EQ(state_of(e, b.id), -1); /* finished: out of memory, as any */
    /* a lease after its time never takes it, tick or not */
    set_slots(e, "t", ENGINE_UNLIMITED, 1);
    ASSERT_EQ(lease1(e, T0 + 1000, "q"), 0);
    ASSERT_EQ(state_of(e, a.id), ENGINE_EXPIRED);
    must_check(e, T0 + 1000);
    engine_destroy(e);
}

TEST(expiry_a_lease_before_it_runs_and_a_retry_expires)
{
    engine_t *e = mk_engine();
    engine_submit_res a = xsub(e, T0, (sub_opts){0}, T0 + 1000, 0);
    ASSERT_EQ(lease1(e, T0 + 10, "q"), a.id);
    engine_tick(e, T0 + 1000); /* leased: it runs on */
    ASSERT_EQ(state_of(e, a.id), ENGINE_LEASED);
    /* failed after its time: no retry starts after its expire_at */
    ASSERT_EQ(fail_ok(e, T0 + 1500, a.id, (engine_fail_req){.error = "x"}), ENGINE_EXPIRED);
    engine_submit_res b = xsub(e, T0 + 1500, (sub_opts){0}, T0 + 3000, 0);
    ASSERT_EQ(lease1(e, T0 + 1500, "q"), b.id);
    ASSERT_EQ(fail_ok(e, T0 + 1600, b.id,
                      (engine_fail_req){.error = "x", .has_retry_in = true, .retry_in_ms = 5000}),
              ENGINE_SCHEDULED); /* waits for a retry it will never have */
    engine_tick(e, T0 + 3000);
    ASSERT_EQ(state_of(e, b.id), ENGINE_EXPIRED);
    must_check(e, T0 + 3000);
    engine_destroy(e);
}

TEST(expiry_in_a_lane_lets_the_next_go_and_cancels_children)
{
    engine_t *e = mk_engine();
    uint64_t head = SUB(e, T0, "t", "q", .key = "L");
    engine_submit_res mid = xsub(e, T0, (sub_opts){.key = "L"}, T0 + 100, 0);
    uint64_t last = SUB(e, T0, "t", "q", .key = "L");
    engine_dep_ref d = {.id = mid.id, .index = -1};
    uint64_t child = SUB(e, T0, "t", "q2", .deps = &d, .n_deps = 1);
    ASSERT_EQ(lease1(e, T0, "q"), head);
    engine_tick(e, T0 + 100); /* blocked behind the head: never started */
    ASSERT_EQ(state_of(e, mid.id), ENGINE_EXPIRED);
    ASSERT_EQ(state_of(e, child), ENGINE_CANCELLED);
    ack_ok(e, T0 + 200, head);
    ASSERT_EQ(lease1(e, T0 + 200, "q"), last);
    must_check(e, T0 + 200);
    engine_destroy(e);
}

TEST(expiry_given_in_the_past_ends_the_job_at_once)
{
    engine_t *e = mk_engine();
    engine_submit_res a = xsub(e, T0, (sub_opts){0}, T0 - 5, 0);
    ASSERT_EQ(a.code, 0);
    ASSERT_EQ(a.state, ENGINE_EXPIRED);
    must_check(e, T0);
    engine_destroy(e);
}

TEST(expiry_a_requeue_from_the_morgue_clears_it)
{
    engine_t *e = mk_engine();
    engine_submit_res a = xsub(e, T0, (sub_opts){0}, T0 + 100, 0);
    ASSERT_EQ(lease1(e, T0, "q"), a.id);
    fail_ok(e, T0, a.id, (engine_fail_req){.error = "x", .no_retry = true});
    ASSERT_EQ(engine_morgue_requeue(e, T0 + 500, a.id, NULL), 0);
    engine_tick(e, T0 + 600);
    ASSERT_EQ(lease1(e, T0 + 600, "q"), a.id);
    must_check(e, T0 + 600);
    engine_destroy(e);
}
