// SPDX-License-Identifier: Apache-2.0
/* One test per rule of SEMANTICS.md, named after the rule: recovery (a load
 * restores what a store kept). */
#include "engine_helpers.h"

#define T0 1700000000000LL

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

/* SEMANTICS.md, "The clock": a loaded lease runs at most its queue's lease_ms
 * from the load, whatever its stored deadline (a clock that went back while
 * no server ran would keep a dead worker's job for as long as it went back). */
TEST(recovery_a_loaded_lease_runs_at_most_one_lease_length)
{
    engine_t *a = mk_engine();
    engine_queue_settings qs = queue_settings(a, "q");
    qs.lease_ms = 10000;
    set_queue(a, "q", qs);
    uint64_t id = SUB(a, T0, "t", "q");
    uint64_t near = SUB(a, T0, "t", "q");
    ASSERT_EQ(lease1(a, T0, "q"), id);
    ASSERT_EQ(lease1(a, T0, "q"), near);
    snap s = take_snapshot(a, engine_next_id(a));
    engine_t *b = mk_engine();
    set_queue(b, "q", qs);
    int64_t back = T0 - 3600000; /* the wall clock went back an hour */
    for (size_t i = 0; i < s.n; i++) ASSERT_EQ(engine_load_job(b, back, &s.v[i], NULL), 0);
    ASSERT_EQ(info_of(b, id).lease_until, back + 10000);
    ASSERT_EQ(engine_next_timer(b), back + 10000);
    engine_tick(b, back + 9999);
    ASSERT_EQ(state_of(b, id), ENGINE_LEASED);
    engine_tick(b, back + 10000);
    ASSERT_EQ(state_of(b, id), ENGINE_SCHEDULED);
    ASSERT_STR(info_of(b, id).error, "lease expired");
    must_check(b, back + 10000);
    engine_destroy(b);
    /* a deadline within one lease length of the load is kept as it was */
    engine_t *c = mk_engine();
    set_queue(c, "q", qs);
    for (size_t i = 0; i < s.n; i++) ASSERT_EQ(engine_load_job(c, T0 + 4000, &s.v[i], NULL), 0);
    ASSERT_EQ(info_of(c, near).lease_until, T0 + 10000);
    must_check(c, T0 + 4000);
    snap_free(&s);
    engine_destroy(a);
    engine_destroy(c);
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
