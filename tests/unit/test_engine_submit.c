// SPDX-License-Identifier: Apache-2.0
/* One test per rule of SEMANTICS.md, named after the rule: names and validation, a
 * job's life and its changes, dedup and idempotency keys, merging, settings. */
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

/* ---- ids given elsewhere (jobs from applications' transactions) ------------------------- */

static engine_t *engine_with_step_2(void)
{
    engine_config c;
    engine_config_defaults(&c);
    c.seed = 42;
    c.id_step = 2;
    return engine_create(&c);
}

TEST(with_id_step_2_the_engine_gives_even_ids_and_takes_odd_ones_it_is_given)
{
    engine_t *e = engine_with_step_2();
    uint64_t a = SUB(e, T0, "t", "q");
    uint64_t b = SUB(e, T0, "t", "q");
    ASSERT_EQ(a % 2, 0);
    ASSERT_EQ(b, a + 2);
    ASSERT_EQ(SUB(e, T0, "t", "q", .id = 1001), 1001);
    /* the engine's next id passes the id it was given, still even */
    uint64_t c = SUB(e, T0, "t", "q");
    ASSERT(c > 1001);
    ASSERT_EQ(c % 2, 0);
    ASSERT_EQ(SUB(e, T0, "t", "q", .id = 7), 7); /* an older odd id is free too */
    ASSERT_EQ(info_of(e, 7).state, ENGINE_READY);
    must_check(e, T0);
    engine_destroy(e);
}

TEST(an_id_given_that_exists_is_refused_and_changes_nothing)
{
    engine_t *e = engine_with_step_2();
    ASSERT_EQ(SUB(e, T0, "t", "q", .id = 1001), 1001);
    uint64_t next = engine_next_id(e);
    engine_submit_res r = submit_x(e, T0, "t", "q", "T", (sub_opts){.id = 1001, .args = "{}"});
    ASSERT_EQ(r.code, TENQ_ECONFLICT);
    ASSERT_STR(r.err.field, "id");
    ASSERT_EQ(engine_next_id(e), next);
    uint64_t ids[4];
    ASSERT_EQ(lease_q(e, T0, "q", 4, ids), 1);
    must_check(e, T0);
    engine_destroy(e);
}

TEST(a_lanes_jobs_with_given_ids_run_in_the_order_taken_in_not_by_id)
{
    engine_t *e = engine_with_step_2();
    ASSERT_EQ(SUB(e, T0, "t", "q", .id = 1011, .key = "k"), 1011);
    ASSERT_EQ(SUB(e, T0, "t", "q", .id = 1003, .key = "k"), 1003);
    uint64_t own = SUB(e, T0, "t", "q", .key = "k");
    ASSERT_EQ(lease1(e, T0, "q"), 1011);
    ack_ok(e, T0, 1011);
    ASSERT_EQ(lease1(e, T0, "q"), 1003);
    ack_ok(e, T0, 1003);
    ASSERT_EQ(lease1(e, T0, "q"), own);
    must_check(e, T0);
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
    engine_tenant_settings ts;
    engine_tenant_settings_defaults(&ts);
    ts.slots = 5;
    ts.weight = 0;
    ASSERT_EQ(engine_tenant_set(e, 0, "t", &ts, &err), TENQ_EINVALID);
    ASSERT_STR(err.field, "weight");
    engine_destroy(e);
}
