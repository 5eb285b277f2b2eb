// SPDX-License-Identifier: Apache-2.0
/* Batches (SEMANTICS.md "Batches"): on_complete when every job of the batch
 * has finished, on_success when every one succeeded, on_death at the first
 * death; each callback submitted at most once, in the call whose outcome
 * made it due (so in that call's change list); fan-out while open; 409
 * batch_closed once closed; counters rebuilt by a load; a death remembered
 * (never on_success after one, not even when its job is requeued and
 * succeeds), in the death's change list and across a load. */
#include "engine_helpers.h"

#define T0 1700000000000LL

static engine_submit_req job_req(const char *tenant, const char *queue)
{
    engine_submit_req r = {0};
    r.tenant = tenant;
    r.queue = queue;
    r.type = "T";
    return r;
}

static engine_submit_req cb_req(const char *type)
{
    engine_submit_req r = {0};
    r.queue = "cb";
    r.type = type;
    r.args = "{\"x\":1}";
    r.args_len = 7;
    return r;
}

typedef struct made {
    uint64_t batch;
    uint64_t ids[64];
    size_t n;
} made;

/* A batch of n jobs of tenant t in queue q with the three callbacks. */
static made mk_batch(engine_t *e, int64_t now, size_t n, bool complete, bool success, bool death)
{
    made m = {0};
    engine_submit_req jobs[64];
    engine_submit_res res[64];
    for (size_t i = 0; i < n; i++) jobs[i] = job_req("t", "q");
    engine_submit_req c = cb_req("done"), s = cb_req("ok"), d = cb_req("died");
    const engine_submit_req *cbs[ENGINE_NCALLBACKS] = {complete ? &c : NULL, success ? &s : NULL,
                                                       death ? &d : NULL};
    engine_err err;
    size_t bad;
    int rc = engine_batch_create(e, now, "t", cbs, jobs, n, &m.batch, res, &bad, &err);
    ASSERT_MSG(rc == 0, "batch: %s", err.message);
    for (size_t i = 0; i < n; i++) {
        ASSERT(res[i].created);
        m.ids[i] = res[i].id;
    }
    m.n = n;
    return m;
}

static engine_batch_info binfo(engine_t *e, uint64_t id)
{
    engine_batch_info b;
    ASSERT(engine_batch_get(e, id, &b));
    return b;
}

/* Callback jobs of the batch in the change list, by kind. */
static void count_callbacks(engine_t *e, uint64_t batch, size_t counts[ENGINE_NCALLBACKS])
{
    size_t n;
    const engine_change *c = engine_changes(e, &n);
    for (size_t i = 0; i < n; i++) {
        if (c[i].kind != ENGINE_CH_JOB || !(c[i].fields & ENGINE_JF_NEW)) continue;
        engine_job_info in;
        engine_job_get(c[i].job, &in);
        if (in.batch == batch && in.batch_role > 0) counts[in.batch_role - 1]++;
    }
}

static void ack_all(engine_t *e, int64_t now, const made *m, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++) ack_ok(e, now, m->ids[i]);
}

/* Leases every ready job of q. */
static size_t lease_all(engine_t *e, int64_t now)
{
    uint64_t ids[256];
    return lease_q(e, now, "q", 256, ids);
}

TEST(batch_on_complete_and_on_success_fire_once_when_all_succeed)
{
    engine_t *e = mk_engine();
    made m = mk_batch(e, T0, 5, true, true, true);
    engine_changes_clear(e);
    ASSERT_EQ(lease_all(e, T0), 5);
    size_t counts[ENGINE_NCALLBACKS] = {0};
    ack_all(e, T0 + 1, &m, 0, 4);
    count_callbacks(e, m.batch, counts);
    ASSERT_EQ(counts[0] + counts[1] + counts[2], 0);
    engine_batch_info b = binfo(e, m.batch);
    ASSERT_EQ(b.closed_at, 0);
    ASSERT_EQ(engine_batch_pending(&b), 1);
    ASSERT_EQ(b.n[ENGINE_SUCCEEDED], 4);
    engine_changes_clear(e);
    /* the last ack: both callbacks in its change list */
    ack_all(e, T0 + 2, &m, 4, 5);
    count_callbacks(e, m.batch, counts);
    ASSERT_EQ(counts[ENGINE_CB_COMPLETE], 1);
    ASSERT_EQ(counts[ENGINE_CB_SUCCESS], 1);
    ASSERT_EQ(counts[ENGINE_CB_DEATH], 0);
    b = binfo(e, m.batch);
    ASSERT_EQ(b.closed_at, T0 + 2);
    ASSERT(b.callback_ids[ENGINE_CB_COMPLETE] != 0);
    ASSERT(b.callback_ids[ENGINE_CB_SUCCESS] != 0);
    ASSERT_EQ(b.callback_ids[ENGINE_CB_DEATH], 0);
    /* the callback job carries the batch, and its args are its spec's */
    engine_job_info cj = info_of(e, b.callback_ids[ENGINE_CB_COMPLETE]);
    ASSERT_EQ(cj.batch, m.batch);
    ASSERT_EQ(cj.batch_role, 1 + ENGINE_CB_COMPLETE);
    ASSERT_STR(cj.queue, "cb");
    ASSERT_STR(cj.type, "done");
    ASSERT_STR(cj.tenant, "t");
    ASSERT_STR(cj.args, "{\"x\":1}");
    engine_changes_clear(e);
    /* the callbacks finishing fire nothing more */
    const char *qs[1] = {"cb"};
    engine_lease_req req = {.queues = qs, .n_queues = 1, .max = 10, .worker = "w"};
    engine_job *out[10];
    ASSERT_EQ(engine_lease(e, T0 + 3, &req, out), 2);
    ack_ok(e, T0 + 4, engine_job_id(out[0]));
    ack_ok(e, T0 + 4, engine_job_id(out[1]));
    memset(counts, 0, sizeof counts);
    count_callbacks(e, m.batch, counts);
    ASSERT_EQ(counts[0] + counts[1] + counts[2], 0);
    b = binfo(e, m.batch);
    ASSERT_EQ(b.n[ENGINE_SUCCEEDED], 5); /* callbacks are not its jobs */
    ASSERT_EQ(b.total, 5);
    must_check(e, T0 + 5);
    must_check(e, T0 + 100);
    engine_changes_clear(e);
    engine_destroy(e);
}

TEST(batch_a_death_fires_on_death_once_and_on_complete_but_not_on_success)
{
    engine_t *e = mk_engine();
    made m = mk_batch(e, T0, 3, true, true, true);
    engine_changes_clear(e);
    ASSERT_EQ(lease_all(e, T0), 3);
    size_t counts[ENGINE_NCALLBACKS] = {0};
    ASSERT_EQ(fail_ok(e, T0 + 1, m.ids[0], (engine_fail_req){.error = "x", .no_retry = true}),
              ENGINE_DEAD);
    count_callbacks(e, m.batch, counts);
    ASSERT_EQ(counts[ENGINE_CB_DEATH], 1);
    ASSERT_EQ(counts[ENGINE_CB_COMPLETE], 0);
    engine_changes_clear(e);
    ASSERT_EQ(fail_ok(e, T0 + 2, m.ids[1], (engine_fail_req){.error = "x", .no_retry = true}),
              ENGINE_DEAD);
    count_callbacks(e, m.batch, counts);
    ASSERT_EQ(counts[ENGINE_CB_DEATH], 1); /* the second death fires nothing */
    engine_changes_clear(e);
    ack_ok(e, T0 + 3, m.ids[2]);
    count_callbacks(e, m.batch, counts);
    ASSERT_EQ(counts[ENGINE_CB_COMPLETE], 1);
    ASSERT_EQ(counts[ENGINE_CB_SUCCESS], 0);
    engine_batch_info b = binfo(e, m.batch);
    ASSERT(b.closed_at != 0);
    ASSERT_EQ(b.n[ENGINE_DEAD], 2);
    ASSERT_EQ(b.n[ENGINE_SUCCEEDED], 1);
    ASSERT_EQ(b.callback_ids[ENGINE_CB_SUCCESS], 0);
    must_check(e, T0 + 100);
    engine_changes_clear(e);
    engine_destroy(e);
}

TEST(batch_a_retry_is_not_a_death)
{
    engine_t *e = mk_engine();
    made m = mk_batch(e, T0, 1, true, true, true);
    engine_changes_clear(e);
    ASSERT_EQ(lease_all(e, T0), 1);
    ASSERT_EQ(fail_ok(e, T0 + 1, m.ids[0], (engine_fail_req){.error = "x"}), ENGINE_SCHEDULED);
    engine_batch_info b = binfo(e, m.batch);
    ASSERT_EQ(b.callback_ids[ENGINE_CB_DEATH], 0);
    ASSERT_EQ(b.closed_at, 0);
    ASSERT_EQ(b.n[ENGINE_SCHEDULED], 1);
    must_check(e, T0 + 100);
    engine_changes_clear(e);
    engine_destroy(e);
}

TEST(batch_cancelled_jobs_finish_it_without_success)
{
    engine_t *e = mk_engine();
    made m = mk_batch(e, T0, 2, true, true, false);
    engine_changes_clear(e);
    engine_state st;
    ASSERT_EQ(engine_cancel(e, T0 + 1, m.ids[0], &st, NULL), 0);
    ASSERT_EQ(st, ENGINE_CANCELLED);
    /* a leased one: a cancel is requested, the batch waits for its outcome */
    ASSERT_EQ(lease_all(e, T0 + 2), 1);
    ASSERT_EQ(engine_cancel(e, T0 + 3, m.ids[1], &st, NULL), 0);
    ASSERT_EQ(binfo(e, m.batch).closed_at, 0);
    size_t counts[ENGINE_NCALLBACKS] = {0};
    ASSERT_EQ(fail_ok(e, T0 + 4, m.ids[1], (engine_fail_req){.error = "stop", .cancelled = true}),
              ENGINE_CANCELLED);
    count_callbacks(e, m.batch, counts);
    ASSERT_EQ(counts[ENGINE_CB_COMPLETE], 1);
    ASSERT_EQ(counts[ENGINE_CB_SUCCESS], 0);
    engine_batch_info b = binfo(e, m.batch);
    ASSERT_EQ(b.n[ENGINE_CANCELLED], 2);
    ASSERT(b.closed_at != 0);
    must_check(e, T0 + 100);
    engine_changes_clear(e);
    engine_destroy(e);
}

TEST(batch_requeue_from_the_morgue_while_open_waits_again_and_on_death_stays_once)
{
    engine_t *e = mk_engine();
    made m = mk_batch(e, T0, 2, true, true, true);
    engine_changes_clear(e);
    ASSERT_EQ(lease_all(e, T0), 2);
    fail_ok(e, T0 + 1, m.ids[0], (engine_fail_req){.error = "x", .no_retry = true});
    uint64_t death_cb = binfo(e, m.batch).callback_ids[ENGINE_CB_DEATH];
    ASSERT(death_cb != 0);
    ASSERT_EQ(engine_morgue_requeue(e, T0 + 2, m.ids[0], NULL), 0);
    engine_batch_info b = binfo(e, m.batch);
    ASSERT_EQ(b.n[ENGINE_DEAD], 0);
    ASSERT_EQ(engine_batch_pending(&b), 2);
    ack_ok(e, T0 + 3, m.ids[1]);
    ASSERT_EQ(binfo(e, m.batch).closed_at, 0); /* waits for the requeued job */
    engine_changes_clear(e);
    /* it dies again: no second on_death */
    ASSERT_EQ(lease_all(e, T0 + 4), 1);
    size_t counts[ENGINE_NCALLBACKS] = {0};
    fail_ok(e, T0 + 5, m.ids[0], (engine_fail_req){.error = "x", .no_retry = true});
    count_callbacks(e, m.batch, counts);
    ASSERT_EQ(counts[ENGINE_CB_DEATH], 0);
    ASSERT_EQ(counts[ENGINE_CB_COMPLETE], 1);
    b = binfo(e, m.batch);
    ASSERT_EQ(b.callback_ids[ENGINE_CB_DEATH], death_cb);
    ASSERT(b.closed_at != 0);
    must_check(e, T0 + 100);
    engine_changes_clear(e);
    engine_destroy(e);
}

/* Whether the change list holds the batch's row (ENGINE_CH_BATCH). */
static bool batch_in_changes(engine_t *e, uint64_t batch)
{
    size_t n;
    const engine_change *c = engine_changes(e, &n);
    for (size_t i = 0; i < n; i++)
        if (c[i].kind == ENGINE_CH_BATCH && c[i].id == batch) return true;
    return false;
}

TEST(batch_a_death_then_requeued_and_succeeded_never_fires_on_success)
{
    /* A dies, is requeued from the morgue while the batch is open and
     * succeeds; B succeeds: on_complete, never on_success (the batch had a
     * death, whatever its job did after). */
    engine_t *e = mk_engine();
    made m = mk_batch(e, T0, 2, true, true, true);
    engine_changes_clear(e);
    ASSERT_EQ(lease_all(e, T0), 2);
    size_t counts[ENGINE_NCALLBACKS] = {0};
    ASSERT_EQ(fail_ok(e, T0 + 1, m.ids[0], (engine_fail_req){.error = "x", .no_retry = true}),
              ENGINE_DEAD);
    count_callbacks(e, m.batch, counts);
    ASSERT_EQ(counts[ENGINE_CB_DEATH], 1);
    engine_changes_clear(e);
    ASSERT_EQ(engine_morgue_requeue(e, T0 + 2, m.ids[0], NULL), 0);
    ASSERT_EQ(lease_all(e, T0 + 3), 1);
    ack_ok(e, T0 + 4, m.ids[0]);
    ack_ok(e, T0 + 5, m.ids[1]);
    count_callbacks(e, m.batch, counts);
    ASSERT_EQ(counts[ENGINE_CB_COMPLETE], 1);
    ASSERT_EQ(counts[ENGINE_CB_SUCCESS], 0);
    engine_batch_info b = binfo(e, m.batch);
    ASSERT(b.closed_at != 0);
    ASSERT_EQ(b.n[ENGINE_SUCCEEDED], 2);
    ASSERT_EQ(b.callback_ids[ENGINE_CB_SUCCESS], 0);
    must_check(e, T0 + 100);
    engine_changes_clear(e);
    engine_destroy(e);
}

TEST(batch_a_death_is_written_with_it_even_without_on_death)
{
    /* no on_death: the death still changes the batch's row, in the change
     * list of the death (so the store remembers it in the same commit) */
    engine_t *e = mk_engine();
    made m = mk_batch(e, T0, 2, true, true, false);
    engine_changes_clear(e);
    ASSERT_EQ(lease_all(e, T0), 2);
    fail_ok(e, T0 + 1, m.ids[0], (engine_fail_req){.error = "x", .no_retry = true});
    ASSERT(batch_in_changes(e, m.batch));
    ASSERT_EQ(binfo(e, m.batch).deaths, 1);
    engine_changes_clear(e);
    ASSERT_EQ(engine_morgue_requeue(e, T0 + 2, m.ids[0], NULL), 0);
    ASSERT_EQ(binfo(e, m.batch).deaths, 1); /* a requeue takes nothing back */
    ASSERT_EQ(lease_all(e, T0 + 3), 1);
    fail_ok(e, T0 + 4, m.ids[0], (engine_fail_req){.error = "x", .no_retry = true});
    ASSERT(batch_in_changes(e, m.batch));
    ASSERT_EQ(binfo(e, m.batch).deaths, 2); /* each death counts */
    engine_changes_clear(e);
    ASSERT_EQ(engine_morgue_requeue(e, T0 + 5, m.ids[0], NULL), 0);
    ASSERT_EQ(lease_all(e, T0 + 6), 1);
    ack_ok(e, T0 + 7, m.ids[0]);
    ack_ok(e, T0 + 8, m.ids[1]);
    engine_batch_info b = binfo(e, m.batch);
    ASSERT(b.closed_at != 0);
    ASSERT(b.callback_ids[ENGINE_CB_COMPLETE] != 0);
    ASSERT_EQ(b.callback_ids[ENGINE_CB_SUCCESS], 0);
    must_check(e, T0 + 100);
    engine_changes_clear(e);
    engine_destroy(e);
}

TEST(batch_on_death_refused_at_the_first_death_is_not_made_at_a_later_one)
{
    /* on_death is due at the first death only: refused then (its queue's
     * payload limit lowered since), a later death makes none */
    engine_t *e = mk_engine();
    made m = mk_batch(e, T0, 3, true, false, true);
    engine_changes_clear(e);
    engine_queue_settings qs = queue_settings(e, "cb");
    engine_queue_settings was = qs;
    qs.max_payload_bytes = 2;
    set_queue(e, "cb", qs);
    ASSERT_EQ(lease_all(e, T0), 3);
    fail_ok(e, T0 + 1, m.ids[0], (engine_fail_req){.error = "x", .no_retry = true});
    ASSERT_EQ(binfo(e, m.batch).callback_ids[ENGINE_CB_DEATH], 0);
    set_queue(e, "cb", was);
    engine_changes_clear(e);
    size_t counts[ENGINE_NCALLBACKS] = {0};
    fail_ok(e, T0 + 2, m.ids[1], (engine_fail_req){.error = "x", .no_retry = true});
    count_callbacks(e, m.batch, counts);
    ASSERT_EQ(counts[ENGINE_CB_DEATH], 0);
    ASSERT_EQ(binfo(e, m.batch).callback_ids[ENGINE_CB_DEATH], 0);
    ack_ok(e, T0 + 3, m.ids[2]);
    count_callbacks(e, m.batch, counts);
    ASSERT_EQ(counts[ENGINE_CB_COMPLETE], 1);
    ASSERT_EQ(counts[ENGINE_CB_DEATH], 0);
    must_check(e, T0 + 100);
    engine_changes_clear(e);
    engine_destroy(e);
}

TEST(batch_requeue_after_close_runs_and_fires_nothing)
{
    engine_t *e = mk_engine();
    made m = mk_batch(e, T0, 1, true, true, true);
    engine_changes_clear(e);
    ASSERT_EQ(lease_all(e, T0), 1);
    fail_ok(e, T0 + 1, m.ids[0], (engine_fail_req){.error = "x", .no_retry = true});
    engine_batch_info b = binfo(e, m.batch);
    ASSERT(b.closed_at != 0); /* its one job finished (dead): complete */
    ASSERT(b.callback_ids[ENGINE_CB_COMPLETE] != 0);
    ASSERT(b.callback_ids[ENGINE_CB_DEATH] != 0);
    ASSERT_EQ(b.callback_ids[ENGINE_CB_SUCCESS], 0);
    engine_changes_clear(e);
    ASSERT_EQ(engine_morgue_requeue(e, T0 + 2, m.ids[0], NULL), 0);
    ASSERT_EQ(lease_all(e, T0 + 3), 1);
    ack_ok(e, T0 + 4, m.ids[0]);
    size_t counts[ENGINE_NCALLBACKS] = {0};
    count_callbacks(e, m.batch, counts);
    ASSERT_EQ(counts[0] + counts[1] + counts[2], 0);
    b = binfo(e, m.batch);
    ASSERT_EQ(b.n[ENGINE_SUCCEEDED], 1); /* counted, fires nothing: closed */
    ASSERT_EQ(b.callback_ids[ENGINE_CB_SUCCESS], 0);
    must_check(e, T0 + 100);
    engine_changes_clear(e);
    engine_destroy(e);
}

TEST(batch_fan_out_from_a_running_job_keeps_it_open_then_closed_is_409)
{
    engine_t *e = mk_engine();
    made m = mk_batch(e, T0, 1, true, false, false);
    engine_changes_clear(e);
    ASSERT_EQ(lease_all(e, T0), 1);
    ASSERT_EQ(engine_start(e, T0, m.ids[0], token_of(e, m.ids[0]), NULL), 0);
    engine_submit_req more[3] = {job_req("t", "q"), job_req("t", "q"), job_req("t", "q")};
    engine_submit_res res[3];
    engine_err err;
    size_t bad;
    ASSERT_EQ(engine_batch_add(e, T0 + 1, m.batch, "t", more, 3, res, &bad, &err), 0);
    ack_ok(e, T0 + 2, m.ids[0]);
    engine_batch_info b = binfo(e, m.batch);
    ASSERT_EQ(b.closed_at, 0);
    ASSERT_EQ(b.total, 4);
    ASSERT_EQ(engine_batch_pending(&b), 3);
    ASSERT_EQ(lease_all(e, T0 + 3), 3);
    for (int i = 0; i < 3; i++) ack_ok(e, T0 + 4, res[i].id);
    b = binfo(e, m.batch);
    ASSERT(b.closed_at != 0);
    ASSERT_EQ(b.n[ENGINE_SUCCEEDED], 4);
    /* closed: 409 batch_closed, nothing made */
    size_t jobs_before = engine_change_count(e);
    ASSERT_EQ(engine_batch_add(e, T0 + 5, m.batch, "t", more, 1, res, &bad, &err), TENQ_ECONFLICT);
    ASSERT_STR(err.field, "batch_closed");
    ASSERT_EQ(engine_change_count(e), jobs_before);
    /* another tenant's batch is none of its own */
    ASSERT_EQ(engine_batch_add(e, T0 + 5, m.batch, "u", more, 1, res, &bad, &err), TENQ_ENOT_FOUND);
    must_check(e, T0 + 100);
    engine_changes_clear(e);
    engine_destroy(e);
}

TEST(batch_bad_input_changes_nothing)
{
    engine_t *e = mk_engine();
    engine_submit_req jobs[2] = {job_req("t", "q"), job_req("t", "q")};
    engine_submit_res res[2];
    engine_err err;
    size_t bad;
    uint64_t id;
    const engine_submit_req *none[ENGINE_NCALLBACKS] = {NULL, NULL, NULL};
    ASSERT_EQ(engine_batch_create(e, T0, "t", none, jobs, 0, &id, res, &bad, &err), TENQ_EINVALID);
    ASSERT_STR(err.field, "jobs");
    /* the second job is bad: the first is not made either */
    jobs[1].type = "";
    ASSERT_EQ(engine_batch_create(e, T0, "t", none, jobs, 2, &id, res, &bad, &err), TENQ_EINVALID);
    ASSERT_EQ(bad, 1);
    jobs[1].type = "T";
    jobs[1].unique = true;
    ASSERT_EQ(engine_batch_create(e, T0, "t", none, jobs, 2, &id, res, &bad, &err), TENQ_EINVALID);
    ASSERT_STR(err.field, "unique");
    jobs[1].unique = false;
    jobs[1].tenant = "u";
    ASSERT_EQ(engine_batch_create(e, T0, "t", none, jobs, 2, &id, res, &bad, &err), TENQ_EINVALID);
    ASSERT_STR(err.field, "tenant");
    jobs[1].tenant = "t";
    engine_submit_req cb = cb_req("");
    const engine_submit_req *cbs[ENGINE_NCALLBACKS] = {&cb, NULL, NULL};
    ASSERT_EQ(engine_batch_create(e, T0, "t", cbs, jobs, 2, &id, res, &bad, &err), TENQ_EINVALID);
    ASSERT_STR(err.field, "on_complete.type");
    ASSERT_EQ(bad, SIZE_MAX);
    ASSERT_EQ(engine_change_count(e), 0);
    ASSERT_EQ(engine_batch_count(e), 0);
    ASSERT_EQ(engine_batch_add(e, T0, 99, NULL, jobs, 1, res, &bad, &err), TENQ_ENOT_FOUND);
    /* merging queues take no batch jobs */
    engine_queue_settings s = queue_settings(e, "m");
    s.merge = true;
    set_queue(e, "m", s);
    engine_changes_clear(e);
    jobs[0].queue = "m";
    ASSERT_EQ(engine_batch_create(e, T0, "t", none, jobs, 2, &id, res, &bad, &err), TENQ_EINVALID);
    ASSERT_STR(err.field, "queue");
    ASSERT_EQ(bad, 0);
    ASSERT_EQ(engine_change_count(e), 0);
    engine_destroy(e);
}

TEST(batch_jobs_keep_their_tenants_slots)
{
    engine_t *e = mk_engine();
    set_slots(e, "t", 2, 1);
    made m = mk_batch(e, T0, 5, true, false, false);
    (void)m;
    engine_changes_clear(e);
    ASSERT_EQ(lease_all(e, T0), 2);
    engine_destroy(e);
}

TEST(batch_jobs_and_callbacks_keep_lanes_and_the_tenants_slots)
{
    engine_t *e = mk_engine();
    engine_submit_req jobs[3] = {job_req("t", "q"), job_req("t", "q"), job_req("t", "q")};
    jobs[0].key = jobs[1].key = "L"; /* one lane: one at a time, in order */
    engine_submit_req c = cb_req("done");
    c.key = "L2";
    const engine_submit_req *cbs[ENGINE_NCALLBACKS] = {&c, NULL, NULL};
    engine_submit_res res[3];
    uint64_t id;
    size_t bad;
    ASSERT_EQ(engine_batch_create(e, T0, "t", cbs, jobs, 3, &id, res, &bad, NULL), 0);
    ASSERT_EQ(res[1].state, ENGINE_BLOCKED);
    uint64_t got[8];
    ASSERT_EQ(lease_q(e, T0, "q", 8, got), 2); /* the lane's head and the keyless one */
    engine_batch_info b = binfo(e, id);
    ASSERT_EQ(b.n[ENGINE_BLOCKED], 1);
    ASSERT_EQ(b.n[ENGINE_LEASED], 2);
    ack_ok(e, T0 + 1, res[0].id);
    ASSERT_EQ(state_of(e, res[1].id), ENGINE_READY);
    ASSERT_EQ(lease1(e, T0 + 1, "q"), res[1].id);
    ack_ok(e, T0 + 2, res[1].id);
    /* the callback is a job like any: of the tenant, in its lane, under its slots */
    set_slots(e, "t", 1, 1);
    ack_ok(e, T0 + 3, res[2].id);
    b = binfo(e, id);
    engine_job_info cj = info_of(e, b.callback_ids[ENGINE_CB_COMPLETE]);
    ASSERT_STR(cj.key, "L2");
    ASSERT_EQ(lease1(e, T0 + 4, "cb"), cj.id);
    engine_submit_res other = submit_x(e, T0 + 4, "t", "cb", "T", (sub_opts){0});
    ASSERT_EQ(lease1(e, T0 + 4, "cb"), 0); /* its one slot is the callback's */
    (void)other;
    must_check(e, T0 + 5);
    engine_changes_clear(e);
    engine_destroy(e);
}

TEST(batch_deleting_a_dead_job_counts_it_deleted)
{
    engine_t *e = mk_engine();
    made m = mk_batch(e, T0, 2, true, true, false);
    engine_changes_clear(e);
    ASSERT_EQ(lease_all(e, T0), 2);
    fail_ok(e, T0 + 1, m.ids[0], (engine_fail_req){.error = "x", .no_retry = true});
    ASSERT_EQ(engine_morgue_delete(e, T0 + 2, m.ids[0], NULL), 0);
    engine_batch_info b = binfo(e, m.batch);
    ASSERT_EQ(b.n[ENGINE_DEAD], 0);
    ASSERT_EQ(b.deleted, 1);
    ASSERT_EQ(b.closed_at, 0);
    ack_ok(e, T0 + 3, m.ids[1]);
    b = binfo(e, m.batch);
    ASSERT(b.closed_at != 0);
    ASSERT(b.callback_ids[ENGINE_CB_COMPLETE] != 0);
    ASSERT_EQ(b.callback_ids[ENGINE_CB_SUCCESS], 0);
    must_check(e, T0 + 100);
    engine_changes_clear(e);
    engine_destroy(e);
}

/* ---- recovery ---------------------------------------------------------------------------- */

static char *dupn(const char *s)
{
    return s ? strdup(s) : NULL;
}

TEST(batch_load_rebuilds_counters_and_fires_each_callback_once_after)
{
    engine_t *e = mk_engine();
    made m = mk_batch(e, T0, 4, true, true, true);
    engine_changes_clear(e);
    ASSERT_EQ(lease_all(e, T0), 4);
    ack_ok(e, T0 + 1, m.ids[0]);
    fail_ok(e, T0 + 1, m.ids[1], (engine_fail_req){.error = "x", .no_retry = true});
    engine_changes_clear(e);
    engine_batch_info b = binfo(e, m.batch);
    uint64_t death_cb = b.callback_ids[ENGINE_CB_DEATH];
    ASSERT(death_cb != 0);

    /* a store's view: the batch's row, the resident jobs and their links */
    engine_t *f = mk_engine();
    engine_loading(f, true);
    engine_batch_info row = b;
    for (int s = 0; s < ENGINE_SUCCEEDED; s++) row.n[s] = 0; /* the row keeps final states only */
    ASSERT_EQ(engine_load_batch(f, &row, NULL), 0);
    uint64_t resident[] = {m.ids[1], m.ids[2], m.ids[3], death_cb};
    for (size_t i = 0; i < 4; i++) {
        engine_job_info in = info_of(e, resident[i]);
        engine_job_info c = in;
        c.tenant = dupn(in.tenant);
        c.queue = dupn(in.queue);
        c.type = dupn(in.type);
        ASSERT_EQ(engine_load_job(f, T0 + 2, &c, NULL), 0);
        ASSERT_EQ(engine_load_batch_job(f, in.id, in.batch, in.batch_role), 0);
        free((char *)c.tenant);
        free((char *)c.queue);
        free((char *)c.type);
    }
    engine_loading(f, false);
    engine_changes_clear(f);
    engine_batch_info g = binfo(f, m.batch);
    for (int s = 0; s < ENGINE_NSTATES; s++)
        ASSERT_MSG(g.n[s] == b.n[s], "state %s: %llu loaded, %llu before", engine_state_name(s),
                   (unsigned long long)g.n[s], (unsigned long long)b.n[s]);
    ASSERT_EQ(g.total, 4);
    ASSERT_EQ(info_of(f, death_cb).batch_role, 1 + ENGINE_CB_DEATH);
    /* the rest finish on the new engine: on_complete once, on_death not again */
    size_t counts[ENGINE_NCALLBACKS] = {0};
    fail_ok(f, T0 + 3, m.ids[2], (engine_fail_req){.error = "x", .no_retry = true});
    count_callbacks(f, m.batch, counts);
    ASSERT_EQ(counts[ENGINE_CB_DEATH], 0);
    engine_changes_clear(f);
    ack_ok(f, T0 + 4, m.ids[3]);
    count_callbacks(f, m.batch, counts);
    ASSERT_EQ(counts[ENGINE_CB_COMPLETE], 1);
    ASSERT_EQ(counts[ENGINE_CB_SUCCESS], 0);
    /* new batches number on */
    engine_changes_clear(f);
    made m2 = mk_batch(f, T0 + 5, 1, false, false, false);
    ASSERT(m2.batch > m.batch);
    must_check(f, T0 + 100);
    engine_changes_clear(f);
    engine_destroy(f);
    engine_destroy(e);
}

TEST(batch_load_keeps_a_death_whose_job_was_requeued)
{
    /* A died and was requeued (pending again); the store's row keeps the
     * death: after a load, A and B succeed, on_complete fires, on_success
     * never does */
    engine_t *e = mk_engine();
    made m = mk_batch(e, T0, 2, true, true, true);
    engine_changes_clear(e);
    ASSERT_EQ(lease_all(e, T0), 2);
    fail_ok(e, T0 + 1, m.ids[0], (engine_fail_req){.error = "x", .no_retry = true});
    ASSERT_EQ(engine_morgue_requeue(e, T0 + 2, m.ids[0], NULL), 0);
    engine_changes_clear(e);
    engine_batch_info b = binfo(e, m.batch);
    ASSERT_EQ(b.deaths, 1);
    ASSERT_EQ(b.n[ENGINE_DEAD], 0);

    engine_t *f = mk_engine();
    engine_loading(f, true);
    engine_batch_info row = b;
    for (int s = 0; s < ENGINE_SUCCEEDED; s++) row.n[s] = 0; /* the row keeps final states only */
    ASSERT_EQ(engine_load_batch(f, &row, NULL), 0);
    uint64_t resident[] = {m.ids[0], m.ids[1], b.callback_ids[ENGINE_CB_DEATH]};
    for (size_t i = 0; i < 3; i++) {
        engine_job_info in = info_of(e, resident[i]);
        engine_job_info c = in;
        c.tenant = dupn(in.tenant);
        c.queue = dupn(in.queue);
        c.type = dupn(in.type);
        ASSERT_EQ(engine_load_job(f, T0 + 3, &c, NULL), 0);
        ASSERT_EQ(engine_load_batch_job(f, in.id, in.batch, in.batch_role), 0);
        free((char *)c.tenant);
        free((char *)c.queue);
        free((char *)c.type);
    }
    engine_loading(f, false);
    engine_changes_clear(f);
    ASSERT_EQ(binfo(f, m.batch).deaths, 1);
    ASSERT_EQ(lease_q(f, T0 + 4, "q", 10, (uint64_t[10]){0}), 1); /* A again; B kept its lease */
    size_t counts[ENGINE_NCALLBACKS] = {0};
    ack_ok(f, T0 + 5, m.ids[0]);
    ack_ok(f, T0 + 5, m.ids[1]);
    count_callbacks(f, m.batch, counts);
    ASSERT_EQ(counts[ENGINE_CB_COMPLETE], 1);
    ASSERT_EQ(counts[ENGINE_CB_SUCCESS], 0);
    ASSERT_EQ(counts[ENGINE_CB_DEATH], 0);
    must_check(f, T0 + 100);
    engine_changes_clear(f);
    engine_destroy(f);
    engine_destroy(e);
}

TEST(batch_of_many_jobs_costs_o1_per_finished_job)
{
    /* 20,000 jobs: each ack moves counters only (a scan per ack would be
     * 2e8 steps here, far beyond the test's time) */
    engine_t *e = mk_engine();
    enum { N = 20000 };
    engine_submit_req *jobs = calloc(N, sizeof *jobs);
    engine_submit_res *res = calloc(N, sizeof *res);
    for (size_t i = 0; i < N; i++) jobs[i] = job_req("t", "q");
    engine_submit_req c = cb_req("done");
    const engine_submit_req *cbs[ENGINE_NCALLBACKS] = {&c, NULL, NULL};
    uint64_t id;
    size_t bad;
    ASSERT_EQ(engine_batch_create(e, T0, "t", cbs, jobs, N, &id, res, &bad, NULL), 0);
    engine_changes_clear(e);
    size_t fired = 0;
    for (size_t done = 0; done < N;) {
        uint64_t ids[256];
        size_t n = lease_q(e, T0 + 1, "q", 256, ids);
        ASSERT(n > 0);
        for (size_t i = 0; i < n; i++) ack_ok(e, T0 + 2, ids[i]);
        done += n;
        size_t counts[ENGINE_NCALLBACKS] = {0};
        count_callbacks(e, id, counts);
        fired += counts[ENGINE_CB_COMPLETE];
        engine_changes_clear(e);
    }
    ASSERT_EQ(fired, 1);
    engine_batch_info b = binfo(e, id);
    ASSERT_EQ(b.n[ENGINE_SUCCEEDED], N);
    free(jobs);
    free(res);
    engine_destroy(e);
}
