// SPDX-License-Identifier: Apache-2.0
/* One test per rule of SEMANTICS.md, named after the rule. */
#include "engine_helpers.h"

#define T0 1700000000000LL

/* ---- names and validation ------------------------------------------------ */

TEST(names_follow_the_name_rules)
{
    ASSERT(engine_name_valid("acme"));
    ASSERT(engine_name_valid("A-z_0.9"));
    ASSERT(!engine_name_valid(""));
    ASSERT(!engine_name_valid("has space"));
    ASSERT(!engine_name_valid("slash/no"));
    ASSERT(!engine_name_valid("ünicode"));
    char long64[65], long65[66];
    memset(long64, 'a', 64);
    long64[64] = 0;
    memset(long65, 'a', 65);
    long65[65] = 0;
    ASSERT(engine_name_valid(long64));
    ASSERT(!engine_name_valid(long65));
}

static void expect_invalid(engine_t *e, sub_opts o, const char *tenant, const char *queue,
                           const char *type, int code, const char *field)
{
    size_t n0;
    engine_changes(e, &n0);
    engine_submit_res r = submit_x(e, T0, tenant, queue, type, o);
    ASSERT_EQ(r.code, code);
    ASSERT_STR(r.err.field, field);
    size_t n1;
    engine_changes(e, &n1);
    ASSERT_EQ(n1, n0); /* nothing changed */
}

TEST(bad_submit_names_the_field_and_changes_nothing)
{
    engine_t *e = mk_engine();
    expect_invalid(e, (sub_opts){0}, "bad tenant", "q", "T", TENQ_EINVALID, "tenant");
    expect_invalid(e, (sub_opts){0}, NULL, "q", "T", TENQ_EINVALID, "tenant");
    expect_invalid(e, (sub_opts){0}, "a", "", "T", TENQ_EINVALID, "queue");
    expect_invalid(e, (sub_opts){0}, "a", "q", "with space", TENQ_EINVALID, "type");
    expect_invalid(e, (sub_opts){0}, "a", "q", NULL, TENQ_EINVALID, "type");
    expect_invalid(e, (sub_opts){.key = "bad\nkey"}, "a", "q", "T", TENQ_EINVALID, "key");
    expect_invalid(e, (sub_opts){.priority = 40000}, "a", "q", "T", TENQ_EINVALID, "priority");
    expect_invalid(e, (sub_opts){.priority = -40000}, "a", "q", "T", TENQ_EINVALID, "priority");
    expect_invalid(e, (sub_opts){.run_at = -5}, "a", "q", "T", TENQ_EINVALID, "run_at");
    expect_invalid(e, (sub_opts){.run_at = T0 + 11LL * 366 * 86400000}, "a", "q", "T",
                   TENQ_EINVALID, "run_at");
    expect_invalid(e, (sub_opts){.max_attempts = 5000}, "a", "q", "T", TENQ_EINVALID,
                   "max_attempts");
    expect_invalid(e, (sub_opts){.unique_key = ""}, "a", "q", "T", TENQ_EINVALID, "unique_key");
    expect_invalid(e, (sub_opts){.idem = "x\x01"}, "a", "q", "T", TENQ_EINVALID, "idempotency_key");
    expect_invalid(e, (sub_opts){.has_score = true, .score = 1.0 / 0.0}, "a", "q", "T",
                   TENQ_EINVALID, "score");
    static const char *const bad_traces[] = {
        "",                                                         /* empty */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",     /* no flags */
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",  /* upper case */
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  /* trace id all 0 */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  /* parent id all 0 */
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  /* version ff */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x", /* trailing */
        "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  /* separator */
    };
    for (size_t i = 0; i < sizeof bad_traces / sizeof bad_traces[0]; i++)
        expect_invalid(e, (sub_opts){.traceparent = bad_traces[i]}, "a", "q", "T", TENQ_EINVALID,
                       "traceparent");
    char longkey[300];
    memset(longkey, 'k', 299);
    longkey[299] = 0;
    expect_invalid(e, (sub_opts){.key = longkey}, "a", "q", "T", TENQ_EINVALID, "key");
    /* nothing was created by all that */
    ASSERT_EQ(engine_tenant_get(e, T0, "a", NULL, NULL), TENQ_ENOT_FOUND);
    ASSERT_EQ(engine_queue_get(e, T0, "q", NULL, NULL), TENQ_ENOT_FOUND);
    must_check(e, T0);
    engine_destroy(e);
}

TEST(a_trace_context_is_kept_with_its_job)
{
    engine_t *e = mk_engine();
    const char *tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    uint64_t id = SUB(e, T0, "a", "q", .traceparent = tp);
    uint64_t plain = SUB(e, T0, "a", "q");
    engine_job_info in;
    engine_job_get(engine_find(e, id), &in);
    ASSERT_STR(in.traceparent, tp);
    engine_job_get(engine_find(e, plain), &in);
    ASSERT(in.traceparent == NULL);
    engine_destroy(e);
}

TEST(args_larger_than_max_payload_bytes_are_too_large)
{
    engine_t *e = mk_engine();
    engine_queue_settings s = queue_settings(e, "small");
    s.max_payload_bytes = 16;
    set_queue(e, "small", s);
    engine_changes_clear(e);
    expect_invalid(e, (sub_opts){.args = "{\"a\":\"0123456789abcdef\"}"}, "t", "small", "T",
                   TENQ_ETOO_LARGE, "args");
    ASSERT(SUB(e, T0, "t", "small", .args = "{\"a\":1}") > 0);
    engine_destroy(e);
}

TEST(tenant_is_created_on_first_use_with_defaults)
{
    engine_t *e = mk_engine();
    ASSERT_EQ(engine_tenant_get(e, T0, "new", NULL, NULL), TENQ_ENOT_FOUND);
    SUB(e, T0, "new", "q");
    engine_tenant_settings s;
    ASSERT_EQ(engine_tenant_get(e, T0, "new", &s, NULL), 0);
    ASSERT_EQ(s.slots, ENGINE_UNLIMITED);
    ASSERT_EQ(s.weight, 1);
    /* the store hears of the new tenant and queue */
    size_t n;
    const engine_change *c = engine_changes(e, &n);
    bool saw_t = false, saw_q = false;
    for (size_t i = 0; i < n; i++) {
        saw_t |= c[i].kind == ENGINE_CH_TENANT && strcmp(c[i].name, "new") == 0;
        saw_q |= c[i].kind == ENGINE_CH_QUEUE && strcmp(c[i].name, "q") == 0;
    }
    ASSERT(saw_t && saw_q);
    engine_destroy(e);
}

TEST(strict_tenants_refuses_unknown_tenants)
{
    engine_config c;
    engine_config_defaults(&c);
    c.strict_tenants = true;
    engine_t *e = engine_create(&c);
    engine_submit_res r = submit_x(e, T0, "ghost", "q", "T", (sub_opts){0});
    ASSERT_EQ(r.code, TENQ_ENOT_FOUND);
    ASSERT_STR(r.err.field, "tenant");
    set_slots(e, "ghost", 2, 1);
    r = submit_x(e, T0, "ghost", "q", "T", (sub_opts){0});
    ASSERT_EQ(r.code, 0);
    engine_destroy(e);
}

TEST(ids_increase_in_submission_order)
{
    engine_t *e = mk_engine();
    uint64_t last = 0;
    for (int i = 0; i < 100; i++) {
        uint64_t id = SUB(e, T0, i % 2 ? "a" : "b", i % 3 ? "q1" : "q2");
        ASSERT(id > last);
        last = id;
    }
    engine_destroy(e);
}

TEST(submit_many_answers_each_job_at_its_index)
{
    engine_t *e = mk_engine();
    engine_submit_req r[3] = {{.tenant = "a", .queue = "q", .type = "T"},
                              {.tenant = "a", .queue = "bad queue", .type = "T"},
                              {.tenant = "a", .queue = "q", .type = "T"}};
    engine_submit_res res[3];
    ASSERT_EQ(engine_submit_many(e, T0, r, 3, res), 2);
    ASSERT_EQ(res[0].code, 0);
    ASSERT_EQ(res[1].code, TENQ_EINVALID);
    ASSERT_STR(res[1].err.field, "queue");
    ASSERT_EQ(res[2].code, 0);
    ASSERT(res[2].id > res[0].id);
    ASSERT(res[0].created && res[2].created);
    engine_destroy(e);
}

/* ---- life of a job ----------------------------------------------------------- */

TEST(life_of_a_job_records_every_timestamp)
{
    engine_t *e = mk_engine();
    uint64_t id = SUB(e, T0, "a", "q", .args = "{\"x\":1}");
    ASSERT_EQ(state_of(e, id), ENGINE_READY);
    engine_job_info in = info_of(e, id);
    ASSERT_EQ(in.created_at, T0);
    ASSERT_EQ(in.ready_at, T0);
    ASSERT_STR(in.args, "{\"x\":1}");
    ASSERT_EQ(lease1(e, T0 + 10, "q"), id);
    in = info_of(e, id);
    ASSERT_EQ(in.state, ENGINE_LEASED);
    ASSERT_EQ(in.leased_at, T0 + 10);
    ASSERT_STR(in.worker, "w1");
    ASSERT_EQ(in.attempts, 1);
    ASSERT_EQ(in.lease_until, T0 + 10 + 300000);
    ASSERT_EQ(engine_start(e, T0 + 20, id, in.token, NULL), 0);
    in = info_of(e, id);
    ASSERT_EQ(in.state, ENGINE_RUNNING);
    ASSERT_EQ(in.started_at, T0 + 20);
    engine_changes_clear(e);
    ASSERT_EQ(engine_ack(e, T0 + 30, id, in.token, "{\"ok\":true}", "{\"rows\":3}", NULL), 0);
    in = info_of(e, id); /* still readable until the changes are cleared */
    ASSERT_EQ(in.state, ENGINE_SUCCEEDED);
    ASSERT_EQ(in.finished_at, T0 + 30);
    ASSERT_STR(in.result, "{\"ok\":true}");
    ASSERT_STR(in.stats, "{\"rows\":3}");
    size_t n;
    const engine_change *c = engine_changes(e, &n);
    ASSERT(n >= 1 && c[0].kind == ENGINE_CH_JOB && c[0].id == id);
    ASSERT(c[0].fields & ENGINE_JF_RESULT);
    engine_changes_clear(e);
    ASSERT(engine_find(e, id) == NULL); /* finished jobs leave memory */
    must_check(e, T0 + 30);
    engine_destroy(e);
}

TEST(changes_list_each_changed_job_once)
{
    engine_t *e = mk_engine();
    engine_changes_clear(e);
    uint64_t id = SUB(e, T0, "a", "q");
    lease1(e, T0, "q");
    engine_start(e, T0, id, token_of(e, id), NULL);
    size_t n, jobs = 0;
    const engine_change *c = engine_changes(e, &n);
    for (size_t i = 0; i < n; i++)
        if (c[i].kind == ENGINE_CH_JOB) {
            jobs++;
            ASSERT(c[i].fields & ENGINE_JF_NEW);
        }
    ASSERT_EQ(jobs, 1);
    engine_destroy(e);
}

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

/* ---- dedup and idempotency -------------------------------------------------------- */

TEST(dedup_returns_the_unfinished_job_within_the_window)
{
    engine_t *e = mk_engine();
    uint64_t id = SUB(e, T0, "a", "q", .unique_key = "u1");
    engine_submit_res r = submit_x(e, T0 + 10, "a", "q", "T", (sub_opts){.unique_key = "u1"});
    ASSERT_EQ(r.code, 0);
    ASSERT(r.duplicate && !r.created);
    ASSERT_EQ(r.id, id);
    /* other tenant or queue: not a duplicate */
    ASSERT(submit_x(e, T0, "b", "q", "T", (sub_opts){.unique_key = "u1"}).created);
    ASSERT(submit_x(e, T0, "a", "q2", "T", (sub_opts){.unique_key = "u1"}).created);
    /* still a duplicate while leased */
    lease1(e, T0, "q");
    ASSERT(submit_x(e, T0 + 20, "a", "q", "T", (sub_opts){.unique_key = "u1"}).duplicate);
    engine_destroy(e);
}

TEST(dedup_window_edges)
{
    engine_t *e = mk_engine();
    const int64_t W = 600000; /* the default window */
    uint64_t id = SUB(e, T0, "a", "q", .unique_key = "u", .run_at = T0 + 10 * W);
    engine_submit_res r = submit_x(e, T0 + W - 1, "a", "q", "T", (sub_opts){.unique_key = "u"});
    ASSERT(r.duplicate);
    ASSERT_EQ(r.id, id);
    r = submit_x(e, T0 + W, "a", "q", "T", (sub_opts){.unique_key = "u"});
    ASSERT(r.created && !r.duplicate); /* created exactly a window ago: no longer a duplicate */
    uint64_t second = r.id;
    r = submit_x(e, T0 + W + 1, "a", "q", "T", (sub_opts){.unique_key = "u"});
    ASSERT_EQ(r.id, second); /* the newest job holds the key now */
    must_check(e, T0 + W + 1);
    engine_destroy(e);
}

TEST(dedup_ends_when_the_job_finishes)
{
    engine_t *e = mk_engine();
    uint64_t id = SUB(e, T0, "a", "q", .unique_key = "u");
    lease1(e, T0, "q");
    ack_ok(e, T0, id);
    engine_changes_clear(e);
    engine_submit_res r = submit_x(e, T0 + 1, "a", "q", "T", (sub_opts){.unique_key = "u"});
    ASSERT(r.created);
    ASSERT(r.id != id);
    engine_destroy(e);
}

TEST(dedup_unique_true_hashes_type_and_args)
{
    engine_t *e = mk_engine();
    engine_submit_res a =
        submit_x(e, T0, "t", "q", "T", (sub_opts){.unique = true, .args = "{\"x\":1}"});
    engine_submit_res b =
        submit_x(e, T0, "t", "q", "T", (sub_opts){.unique = true, .args = "{\"x\":1}"});
    engine_submit_res c =
        submit_x(e, T0, "t", "q", "T", (sub_opts){.unique = true, .args = "{\"x\":2}"});
    engine_submit_res d =
        submit_x(e, T0, "t", "q", "U", (sub_opts){.unique = true, .args = "{\"x\":1}"});
    ASSERT(a.created && b.duplicate && c.created && d.created);
    ASSERT_EQ(a.id, b.id);
    ASSERT(strncmp(info_of(e, a.id).unique_key, "auto:", 5) == 0);
    engine_destroy(e);
}

TEST(idempotency_key_returns_the_same_answer_for_24_hours)
{
    engine_t *e = mk_engine();
    engine_submit_res a = submit_x(e, T0, "t", "q", "T", (sub_opts){.idem = "c-77"});
    ASSERT(a.created);
    engine_changes_clear(e);
    engine_submit_res b = submit_x(e, T0 + 3600000, "t", "q", "T", (sub_opts){.idem = "c-77"});
    ASSERT_EQ(b.code, 0);
    ASSERT_EQ(b.id, a.id);
    ASSERT(b.replayed && !b.created);
    size_t n;
    engine_changes(e, &n);
    ASSERT_EQ(n, 0); /* a replay changes nothing */
    /* the same key for another tenant is another key */
    ASSERT(submit_x(e, T0, "u", "q", "T", (sub_opts){.idem = "c-77"}).created);
    /* after 24 hours it is forgotten */
    int64_t later = T0 + 24LL * 3600000;
    engine_tick(e, later);
    engine_submit_res c = submit_x(e, later, "t", "q", "T", (sub_opts){.idem = "c-77"});
    ASSERT(c.created);
    ASSERT(c.id != a.id);
    engine_destroy(e);
}

TEST(idempotency_key_survives_the_job_finishing)
{
    engine_t *e = mk_engine();
    engine_submit_res a = submit_x(e, T0, "t", "q", "T", (sub_opts){.idem = "k"});
    lease1(e, T0, "q");
    ack_ok(e, T0, a.id);
    engine_changes_clear(e);
    engine_submit_res b = submit_x(e, T0 + 5, "t", "q", "T", (sub_opts){.idem = "k"});
    ASSERT_EQ(b.id, a.id);
    ASSERT(b.replayed);
    engine_destroy(e);
}

/* ---- merging ----------------------------------------------------------------------- */

static engine_t *merge_engine(void)
{
    engine_t *e = mk_engine();
    engine_queue_settings s = queue_settings(e, "m");
    s.merge = true;
    set_queue(e, "m", s);
    return e;
}

static engine_submit_res msub(engine_t *e, int64_t now, const char *args, double score)
{
    return submit_x(e, now, "t", "m", "T",
                    (sub_opts){.key = "K", .args = args, .has_score = score != 0, .score = score});
}

TEST(merge_adds_the_payload_to_the_lanes_unleased_newest_job)
{
    engine_t *e = merge_engine();
    engine_submit_res a = msub(e, T0, "{\"n\":1}", 0);
    engine_submit_res b = msub(e, T0 + 1, "{\"n\":2}", 0);
    ASSERT(a.created && b.merged && !b.created);
    ASSERT_EQ(b.id, a.id);
    engine_job_info in = info_of(e, a.id);
    ASSERT(in.args == NULL);
    ASSERT_EQ(in.n_payloads, 2);
    ASSERT_STR(in.payloads[0].data, "{\"n\":1}");
    ASSERT(in.payloads[0].score == (double)T0); /* default score: submit time */
    ASSERT_STR(in.payloads[1].data, "{\"n\":2}");
    /* without a key nothing merges */
    engine_submit_res c = submit_x(e, T0, "t", "m", "T", (sub_opts){.args = "{}"});
    engine_submit_res d = submit_x(e, T0, "t", "m", "T", (sub_opts){.args = "{}"});
    ASSERT(c.created && d.created);
    engine_destroy(e);
}

TEST(merge_payloads_are_sorted_by_score)
{
    engine_t *e = merge_engine();
    engine_submit_res a = msub(e, T0, "\"c\"", 30);
    msub(e, T0, "\"a\"", 10);
    msub(e, T0, "\"b\"", 20);
    engine_job_info in = info_of(e, a.id);
    ASSERT_EQ(in.n_payloads, 3);
    ASSERT_STR(in.payloads[0].data, "\"a\"");
    ASSERT_STR(in.payloads[1].data, "\"b\"");
    ASSERT_STR(in.payloads[2].data, "\"c\"");
    engine_destroy(e);
}

TEST(merge_identical_payload_keeps_the_lowest_score)
{
    engine_t *e = merge_engine();
    engine_submit_res a = msub(e, T0, "\"x\"", 50);
    msub(e, T0, "\"y\"", 40);
    msub(e, T0, "\"x\"", 10); /* lower: x moves to the front */
    msub(e, T0, "\"x\"", 90); /* higher: ignored */
    engine_job_info in = info_of(e, a.id);
    ASSERT_EQ(in.n_payloads, 2);
    ASSERT_STR(in.payloads[0].data, "\"x\"");
    ASSERT(in.payloads[0].score == 10);
    ASSERT_STR(in.payloads[1].data, "\"y\"");
    engine_destroy(e);
}

TEST(merge_keeps_the_jobs_run_at_and_attempts)
{
    engine_t *e = merge_engine();
    engine_submit_res a =
        submit_x(e, T0, "t", "m", "T", (sub_opts){.key = "K", .run_at = T0 + 500});
    engine_submit_res b =
        submit_x(e, T0, "t", "m", "T", (sub_opts){.key = "K", .run_at = T0 + 99999, .args = "[2]"});
    ASSERT(b.merged);
    engine_job_info in = info_of(e, a.id);
    ASSERT_EQ(in.run_at, T0 + 500);
    ASSERT_EQ(in.attempts, 0);
    engine_destroy(e);
}

TEST(merge_into_a_leased_job_makes_a_new_job_behind_it)
{
    engine_t *e = merge_engine();
    engine_submit_res a = msub(e, T0, "1", 0);
    ASSERT_EQ(lease1(e, T0, "m"), a.id);
    engine_submit_res b = msub(e, T0 + 1, "2", 0);
    engine_submit_res c = msub(e, T0 + 2, "3", 0);
    ASSERT(b.created && c.merged);
    ASSERT_EQ(c.id, b.id);
    ASSERT_EQ(state_of(e, b.id), ENGINE_BLOCKED);
    engine_destroy(e);
}

TEST(merge_failed_job_takes_the_waiting_payloads_and_keeps_its_run_at_and_attempts)
{
    engine_t *e = merge_engine();
    engine_submit_res a = msub(e, T0, "1", 0);
    lease1(e, T0, "m");
    engine_submit_res b = msub(e, T0 + 1, "2", 0);
    engine_changes_clear(e);
    fail_ok(e, T0 + 2, a.id,
            (engine_fail_req){.error = "x", .has_retry_in = true, .retry_in_ms = 1000});
    engine_job_info in = info_of(e, a.id);
    ASSERT_EQ(in.state, ENGINE_SCHEDULED);
    ASSERT_EQ(in.run_at, T0 + 1002);
    ASSERT_EQ(in.attempts, 1);
    ASSERT_EQ(in.n_payloads, 2);
    ASSERT_STR(in.payloads[1].data, "2");
    engine_job_info bi = info_of(e, b.id);
    ASSERT_EQ(bi.state, ENGINE_MERGED);
    ASSERT_EQ(bi.merged_into, a.id);
    must_check(e, T0 + 2);
    engine_changes_clear(e);
    ASSERT(engine_find(e, b.id) == NULL);
    engine_destroy(e);
}

TEST(merge_death_sends_the_lowest_payload_to_the_morgue_and_the_rest_back)
{
    engine_t *e = merge_engine();
    engine_submit_res a = msub(e, T0, "\"low\"", 1);
    msub(e, T0, "\"mid\"", 2);
    msub(e, T0, "\"high\"", 3);
    lease1(e, T0, "m");
    fail_ok(e, T0 + 1, a.id, (engine_fail_req){.error = "fatal", .no_retry = true});
    engine_job_info dead = info_of(e, a.id);
    ASSERT_EQ(dead.state, ENGINE_DEAD);
    ASSERT_EQ(dead.n_payloads, 1);
    ASSERT_STR(dead.payloads[0].data, "\"low\"");
    /* the rest came back as a new job with attempts reset */
    uint64_t next = lease1(e, T0 + 1, "m");
    ASSERT(next != 0 && next != a.id);
    engine_job_info in = info_of(e, next);
    ASSERT_EQ(in.n_payloads, 2);
    ASSERT_STR(in.payloads[0].data, "\"mid\"");
    ASSERT_STR(in.payloads[1].data, "\"high\"");
    ASSERT_EQ(in.attempts, 1); /* this lease is its first attempt */
    must_check(e, T0 + 1);
    engine_destroy(e);
}

TEST(merge_death_rest_joins_the_waiting_job)
{
    engine_t *e = merge_engine();
    engine_submit_res a = msub(e, T0, "\"a1\"", 1);
    msub(e, T0, "\"a2\"", 2);
    lease1(e, T0, "m");
    engine_submit_res w = msub(e, T0, "\"w\"", 5); /* waits behind the leased job */
    fail_ok(e, T0 + 1, a.id, (engine_fail_req){.error = "fatal", .no_retry = true});
    engine_job_info in = info_of(e, w.id);
    ASSERT_EQ(in.state, ENGINE_READY);
    ASSERT_EQ(in.n_payloads, 2);
    ASSERT_STR(in.payloads[0].data, "\"a2\"");
    ASSERT_STR(in.payloads[1].data, "\"w\"");
    must_check(e, T0 + 1);
    engine_destroy(e);
}

TEST(merge_requeue_joins_the_waiting_job_with_run_at_now_and_attempts_reset)
{
    engine_t *e = merge_engine();
    engine_submit_res a = msub(e, T0, "\"dead\"", 1);
    lease1(e, T0, "m");
    fail_ok(e, T0, a.id, (engine_fail_req){.error = "x", .no_retry = true});
    engine_submit_res w = submit_x(e, T0 + 1, "t", "m", "T",
                                   (sub_opts){.key = "K", .args = "\"w\"", .run_at = T0 + 50000});
    ASSERT_EQ(state_of(e, w.id), ENGINE_SCHEDULED);
    ASSERT_EQ(engine_morgue_requeue(e, T0 + 10, a.id, NULL), 0);
    engine_job_info in = info_of(e, w.id);
    ASSERT_EQ(in.state, ENGINE_READY);
    ASSERT_EQ(in.run_at, T0 + 10);
    ASSERT_EQ(in.attempts, 0);
    ASSERT_EQ(in.n_payloads, 2);
    ASSERT_STR(in.payloads[0].data, "\"dead\"");
    ASSERT_EQ(info_of(e, a.id).state, ENGINE_MERGED);
    ASSERT_EQ(info_of(e, a.id).merged_into, w.id);
    must_check(e, T0 + 10);
    engine_destroy(e);
}

/* ---- failures, retries, the morgue --------------------------------------------------- */

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

static uint64_t kill_one(engine_t *e, int64_t now, const char *t, const char *q, const char *type)
{
    engine_submit_res r = submit_x(e, now, t, q, type, (sub_opts){0});
    ASSERT_EQ(r.code, 0);
    const char *qs[] = {q}, *types[] = {type};
    engine_lease_req req = {
        .queues = qs, .n_queues = 1, .types = types, .n_types = 1, .max = 1, .worker = "w"};
    engine_job *out[1];
    ASSERT_EQ(engine_lease(e, now, &req, out), 1);
    ASSERT_EQ(engine_job_id(out[0]), r.id);
    fail_ok(e, now, r.id, (engine_fail_req){.error = "x", .no_retry = true});
    return r.id;
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

/* ---- settings ---------------------------------------------------------------------------- */

TEST(queue_settings_are_checked_field_by_field)
{
    engine_t *e = mk_engine();
    engine_queue_settings s;
    engine_queue_settings_defaults(&s);
    engine_err err;
    ASSERT_EQ(engine_queue_settings_check(&s, &err), 0);
    s.lease_ms = 5;
    ASSERT_EQ(engine_queue_set(e, 0, "q", &s, &err), TENQ_EINVALID);
    ASSERT_STR(err.field, "lease_ms");
    engine_queue_settings_defaults(&s);
    s.max_attempts = 0;
    ASSERT_EQ(engine_queue_set(e, 0, "q", &s, &err), TENQ_EINVALID);
    ASSERT_STR(err.field, "max_attempts");
    engine_queue_settings_defaults(&s);
    s.tenant_cap = 0;
    ASSERT_EQ(engine_queue_set(e, 0, "q", &s, &err), TENQ_EINVALID);
    ASSERT_STR(err.field, "tenant_cap");
    ASSERT_EQ(engine_queue_get(e, 0, "q", NULL, NULL), TENQ_ENOT_FOUND);
    engine_tenant_settings ts = {5, 0};
    ASSERT_EQ(engine_tenant_set(e, 0, "t", &ts, &err), TENQ_EINVALID);
    ASSERT_STR(err.field, "weight");
    engine_destroy(e);
}

/* ---- recovery ----------------------------------------------------------------------------- */

typedef struct snap {
    engine_job_info *v;
    size_t n;
} snap;

/* Deep copies of every resident job, sorted by lane_seq, as a store would. */
static int cmp_seq(const void *a, const void *b)
{
    const engine_job_info *x = a, *y = b;
    return x->lane_seq < y->lane_seq ? -1 : x->lane_seq > y->lane_seq;
}

static char *dupn(const char *s)
{
    return s ? strdup(s) : NULL;
}

static snap take_snapshot(engine_t *e, uint64_t max_id)
{
    snap s = {calloc(max_id + 1, sizeof(engine_job_info)), 0};
    for (uint64_t id = 1; id <= max_id; id++) {
        engine_job *j = engine_find(e, id);
        if (!j || engine_state_finished(engine_job_state(j))) continue;
        engine_job_info *in = &s.v[s.n++];
        engine_job_get(j, in);
        in->tenant = dupn(in->tenant);
        in->queue = dupn(in->queue);
        in->type = dupn(in->type);
        in->key = dupn(in->key);
        in->args = dupn(in->args);
        in->worker = dupn(in->worker);
        in->error = dupn(in->error);
        in->progress = dupn(in->progress);
        in->unique_key = dupn(in->unique_key);
        in->idempotency_key = dupn(in->idempotency_key);
        in->result = in->stats = NULL;
        if (in->n_payloads) {
            engine_payload *p = calloc(in->n_payloads, sizeof *p);
            for (uint32_t i = 0; i < in->n_payloads; i++) {
                p[i] = in->payloads[i];
                p[i].data = dupn(in->payloads[i].data);
            }
            in->payloads = p;
        }
    }
    qsort(s.v, s.n, sizeof *s.v, cmp_seq);
    return s;
}

static void snap_free(snap *s)
{
    for (size_t i = 0; i < s->n; i++) {
        engine_job_info *in = &s->v[i];
        const char *strs[] = {in->tenant,     in->queue,          in->type,  in->key,
                              in->args,       in->worker,         in->error, in->progress,
                              in->unique_key, in->idempotency_key};
        for (size_t k = 0; k < sizeof strs / sizeof *strs; k++) free((char *)strs[k]);
        if (in->n_payloads) {
            engine_payload *p = (engine_payload *)in->payloads;
            for (uint32_t k = 0; k < in->n_payloads; k++) free((char *)p[k].data);
            free(p);
        }
    }
    free(s->v);
}

TEST(recovery_restores_every_state_lanes_slots_and_leases)
{
    engine_t *a = merge_engine();
    set_slots(a, "t", 3, 1);
    engine_queue_settings qs = queue_settings(a, "q");
    qs.lease_ms = 10000;
    set_queue(a, "q", qs);
    uint64_t l1 = SUB(a, T0, "t", "q", .key = "L");
    uint64_t l2 = SUB(a, T0, "t", "q", .key = "L");
    uint64_t sched = SUB(a, T0, "t", "q", .run_at = T0 + 5000);
    uint64_t ready = SUB(a, T0, "t", "q", .args = "{\"r\":1}", .unique_key = "u");
    uint64_t running = SUB(a, T0, "t", "q");
    engine_submit_res m = msub(a, T0, "\"p1\"", 1);
    msub(a, T0, "\"p2\"", 2);
    uint64_t dead = kill_one(a, T0, "x", "q9", "T");
    const char *qn[] = {"q"};
    engine_lease_req req = {.queues = qn, .n_queues = 1, .max = 2, .worker = "w7"};
    engine_job *out[2];
    ASSERT_EQ(engine_lease(a, T0 + 1, &req, out), 2); /* l1 and ready (run_at T0, ids first) */
    ASSERT_EQ(engine_job_id(out[0]), l1);
    uint64_t second = engine_job_id(out[1]);
    ASSERT_EQ(second, ready);
    ASSERT_EQ(engine_lease(a, T0 + 1, &req, out), 1); /* slots 3 */
    ASSERT_EQ(engine_job_id(out[0]), running);
    engine_start(a, T0 + 2, running, token_of(a, running), NULL);
    engine_heartbeat(a, T0 + 3, running, token_of(a, running), "{\"p\":0.5}", NULL, NULL, NULL);
    engine_cancel(a, T0 + 3, ready, NULL, NULL);
    must_check(a, T0 + 3);

    snap s = take_snapshot(a, engine_next_id(a));
    engine_t *b = mk_engine();
    engine_tenant_settings ts;
    engine_tenant_get(a, 0, "t", &ts, NULL);
    engine_tenant_set(b, 0, "t", &ts, NULL);
    engine_queue_settings mq = queue_settings(a, "m");
    set_queue(b, "m", mq);
    set_queue(b, "q", qs);
    for (size_t i = 0; i < s.n; i++) {
        engine_err err;
        ASSERT_MSG(engine_load_job(b, T0 + 4, &s.v[i], &err) == 0, "%s", err.message);
    }
    engine_changes_clear(b);
    must_check(b, T0 + 4);
    /* every job came back with the same fields */
    for (size_t i = 0; i < s.n; i++) {
        engine_job_info x = info_of(a, s.v[i].id), y = info_of(b, s.v[i].id);
        ASSERT_EQ(x.state, y.state);
        ASSERT_EQ(x.token, y.token);
        ASSERT_EQ(x.attempts, y.attempts);
        ASSERT_EQ(x.lease_until, y.lease_until);
        ASSERT_EQ(x.run_at, y.run_at);
        ASSERT_EQ(x.n_payloads, y.n_payloads);
        ASSERT_EQ(x.cancel_requested, y.cancel_requested);
        ASSERT_EQ(x.created_at, y.created_at);
        ASSERT_EQ(x.started_at, y.started_at);
    }
    ASSERT_EQ(state_of(b, l2), ENGINE_BLOCKED);
    ASSERT_EQ(state_of(b, dead), ENGINE_DEAD);
    ASSERT_EQ(state_of(b, sched), ENGINE_SCHEDULED);
    ASSERT_STR(info_of(b, running).progress, "{\"p\":0.5}");
    ASSERT(engine_next_id(b) >= engine_next_id(a));
    /* slots in use came back: t is full */
    ASSERT_EQ(lease1(b, T0 + 5, "m"), 0);
    /* a lease lives on: the worker can still heartbeat and ack */
    int64_t until;
    bool cancel;
    ASSERT_EQ(engine_heartbeat(b, T0 + 5, ready, token_of(a, ready), NULL, &until, &cancel, NULL),
              0);
    ASSERT(cancel);
    ASSERT_EQ(engine_ack(b, T0 + 6, l1, token_of(a, l1), NULL, NULL, NULL), 0);
    ASSERT_EQ(state_of(b, l2), ENGINE_READY); /* the lane moved on */
    ASSERT_EQ(lease1(b, T0 + 6, "q"), l2);
    /* dedup came back: u is still held by the (cancel-requested) ready job */
    ASSERT(submit_x(b, T0 + 7, "t", "q", "T", (sub_opts){.unique_key = "u"}).duplicate);
    /* the merge job still merges */
    ASSERT(msub(b, T0 + 7, "\"p3\"", 3).merged);
    ASSERT_EQ(info_of(b, m.id).n_payloads, 3);
    must_check(b, T0 + 7);
    snap_free(&s);
    engine_destroy(a);
    engine_destroy(b);
}

TEST(recovery_expired_leases_expire_at_the_next_tick)
{
    engine_t *a = mk_engine();
    uint64_t id = SUB(a, T0, "t", "q");
    lease1(a, T0, "q");
    snap s = take_snapshot(a, engine_next_id(a));
    engine_t *b = mk_engine();
    int64_t later = T0 + 400000; /* the server was down past the deadline */
    ASSERT_EQ(engine_load_job(b, later, &s.v[0], NULL), 0);
    ASSERT_EQ(engine_next_timer(b), T0 + 300000);
    engine_tick(b, later);
    engine_job_info in = info_of(b, id);
    ASSERT_EQ(in.state, ENGINE_SCHEDULED);
    ASSERT_STR(in.error, "lease expired");
    must_check(b, later);
    snap_free(&s);
    engine_destroy(a);
    engine_destroy(b);
}

/* A job keeps no args length: a stored row whose args hold a NUL (JSON text
 * never does) is cut there, and the engine's count of args bytes stays true
 * from load to the job's end. */
TEST(recovery_cuts_args_at_a_nul_and_counts_what_it_kept)
{
    engine_t *a = mk_engine();
    uint64_t id = SUB(a, T0, "t", "q");
    snap s = take_snapshot(a, engine_next_id(a));
    char *args = malloc(9);
    memcpy(args, "{}\0{\"x\":1}", 9);
    free((char *)s.v[0].args);
    s.v[0].args = args;
    s.v[0].args_len = 9;
    engine_t *b = mk_engine();
    ASSERT_EQ(engine_load_job(b, T0 + 1, &s.v[0], NULL), 0);
    engine_memory m;
    engine_memory_usage(b, &m);
    ASSERT_EQ(m.data_bytes, 2);
    engine_job_info in = info_of(b, id);
    ASSERT_EQ(in.args_len, 2);
    ASSERT_STR(in.args, "{}");
    ASSERT_EQ(lease1(b, T0 + 2, "q"), id);
    ASSERT_EQ(engine_ack(b, T0 + 3, id, token_of(b, id), NULL, NULL, NULL), 0);
    engine_changes_clear(b); /* frees the finished job */
    engine_memory_usage(b, &m);
    ASSERT_EQ(m.data_bytes, 0);
    must_check(b, T0 + 3);
    snap_free(&s);
    engine_destroy(a);
    engine_destroy(b);
}

TEST(recovery_restores_idempotency_keys)
{
    engine_t *b = mk_engine();
    engine_idem_info ii = {
        .tenant = "t", .key = "k1", .id = 55, .state = ENGINE_READY, .created_at = T0};
    ASSERT_EQ(engine_load_idem(b, &ii, NULL), 0);
    engine_submit_res r = submit_x(b, T0 + 10, "t", "q", "T", (sub_opts){.idem = "k1"});
    ASSERT(r.replayed);
    ASSERT_EQ(r.id, 55);
    engine_destroy(b);
}

TEST(token_floor_never_repeats_a_token_across_runs)
{
    engine_config c;
    engine_config_defaults(&c);
    c.token_floor = 1ULL << 32; /* run 1 */
    engine_t *a = engine_create(&c);
    uint64_t id = SUB(a, T0, "t", "q");
    snap s = take_snapshot(a, engine_next_id(a)); /* stored: ready, never leased */
    ASSERT_EQ(lease1(a, T0, "q"), id);
    uint64_t first = token_of(a, id);
    ASSERT_EQ(first, 1ULL << 32);
    /* the server died before the lease was stored; run 2 has a higher floor */
    c.token_floor = 2ULL << 32;
    engine_t *b = engine_create(&c);
    ASSERT_EQ(engine_load_job(b, T0 + 1, &s.v[0], NULL), 0);
    ASSERT_EQ(lease1(b, T0 + 1, "q"), id);
    uint64_t second = token_of(b, id);
    ASSERT(second > first);
    engine_err err;
    ASSERT_EQ(engine_ack(b, T0 + 2, id, first, NULL, NULL, &err), TENQ_ECONFLICT);
    ASSERT_EQ(engine_ack(b, T0 + 2, id, second, NULL, NULL, &err), 0);
    /* within a run tokens keep growing by one */
    uint64_t id2 = SUB(b, T0 + 3, "t", "q", .max_attempts = 5);
    lease1(b, T0 + 3, "q");
    uint64_t t1 = token_of(b, id2);
    fail_ok(b, T0 + 3, id2, (engine_fail_req){.error = "x", .has_retry_in = true});
    engine_tick(b, T0 + 3);
    lease1(b, T0 + 3, "q");
    ASSERT_EQ(token_of(b, id2), t1 + 1);
    snap_free(&s);
    engine_destroy(a);
    engine_destroy(b);
}
