// SPDX-License-Identifier: Apache-2.0
/* One test per rule of SEMANTICS.md, named after the rule: dependencies (a
 * job that waits for its parents: depends_on, on_parent_failure). */
#include "engine_helpers.h"

#define T0 1700000000000LL

/* Every job has a type of its own, so that a test leases exactly the job
 * it means (a lease may name types). */
static int type_no;
static const char *fixed_type; /* set: every job has this type */
static const char *next_type(void)
{
    static char buf[16];
    if (fixed_type) return fixed_type;
    snprintf(buf, sizeof buf, "T%d", ++type_no);
    return buf;
}

#undef SUB
#define SUB(e, now, t, q, ...) usub((e), (now), (t), (q), (sub_opts){__VA_ARGS__}, __LINE__)
static uint64_t usub(engine_t *e, int64_t now, const char *t, const char *q, sub_opts o, int line)
{
    engine_submit_res r = submit_x(e, now, t, q, next_type(), o);
    if (r.code) test_fail(__FILE__, line, "submit failed: %s", r.err.message);
    return r.id;
}

/* Leases this job (by its type). */
static uint64_t lease_id(engine_t *e, int64_t now, uint64_t id)
{
    char type[16];
    snprintf(type, sizeof type, "%s", info_of(e, id).type);
    const char *qs[] = {"q"}, *types[] = {type};
    engine_lease_req req = {
        .queues = qs, .n_queues = 1, .types = types, .n_types = 1, .max = 1, .worker = "w"};
    engine_job *out[1];
    return engine_lease(e, now, &req, out) ? engine_job_id(out[0]) : 0;
}

/* Submits a job of tenant t in queue q depending on the ids (index < 0) or
 * earlier indexes; returns the whole answer. */
static engine_submit_res dsub(engine_t *e, int64_t now, const char *t, const char *q,
                              const char *key, engine_deps_policy policy, const uint64_t *ids,
                              uint32_t n)
{
    engine_dep_ref refs[ENGINE_PARENTS_MAX + 8];
    for (uint32_t i = 0; i < n; i++) refs[i] = (engine_dep_ref){.id = ids[i], .index = -1};
    engine_submit_req r = {.tenant = t, .queue = q, .type = next_type(), .key = key};
    r.depends_on = refs;
    r.n_depends_on = n;
    r.on_parent_failure = policy;
    engine_submit_res res;
    engine_submit(e, now, &r, &res);
    return res;
}

#define DSUB(e, now, key, policy, ...)                                                             \
    dsub_ok((e), (now), (key), (policy), (uint64_t[]){__VA_ARGS__},                                \
            sizeof((uint64_t[]){__VA_ARGS__}) / sizeof(uint64_t), __LINE__)
static uint64_t dsub_ok(engine_t *e, int64_t now, const char *key, engine_deps_policy policy,
                        const uint64_t *ids, uint32_t n, int line)
{
    engine_submit_res r = dsub(e, now, "a", "q", key, policy, ids, n);
    if (r.code) test_fail(__FILE__, line, "submit failed: %s", r.err.message);
    return r.id;
}

static void lease_ack(engine_t *e, int64_t now, uint64_t id)
{
    ASSERT_EQ(lease_id(e, now, id), id);
    ack_ok(e, now, id);
    engine_changes_clear(e);
}

static void lease_kill(engine_t *e, int64_t now, uint64_t id)
{
    ASSERT_EQ(lease_id(e, now, id), id);
    ASSERT_EQ(fail_ok(e, now, id, (engine_fail_req){.error = "boom", .no_retry = true}),
              ENGINE_DEAD);
}

TEST(deps_child_waits_until_parent_succeeds)
{
    engine_t *e = mk_engine();
    uint64_t p = SUB(e, T0, "a", "q");
    uint64_t c = DSUB(e, T0, NULL, ENGINE_DEPS_CANCEL, p);
    ASSERT_EQ(state_of(e, c), ENGINE_WAITING);
    engine_wait w;
    engine_job_wait(engine_find(e, c), &w);
    ASSERT_EQ(w.kind, ENGINE_WAIT_PARENTS);
    ASSERT_EQ(w.n_parents, 1);
    ASSERT_EQ(w.parents[0], p);
    ASSERT_STR(engine_wait_name(w.kind), "parents");
    engine_job_info pi = info_of(e, p), ci = info_of(e, c);
    ASSERT_EQ(pi.n_children, 1);
    ASSERT_EQ(pi.children[0], c);
    ASSERT_EQ(ci.n_parents, 1);
    ASSERT_EQ(ci.parents[0], p);
    engine_counts k;
    engine_queue_get(e, T0, "q", NULL, &k);
    ASSERT_EQ(k.waiting, 1);
    ASSERT_EQ(k.ready, 1);
    /* only the parent can be leased */
    uint64_t ids[4];
    ASSERT_EQ(lease_q(e, T0, "q", 4, ids), 1);
    ASSERT_EQ(ids[0], p);
    must_check(e, T0);
    ack_ok(e, T0 + 5, p);
    ASSERT_EQ(state_of(e, c), ENGINE_READY);
    must_check(e, T0 + 5);
    engine_changes_clear(e);
    ASSERT_EQ(lease1(e, T0 + 6, "q"), c);
    engine_queue_get(e, T0, "q", NULL, &k);
    ASSERT_EQ(k.waiting, 0);
    engine_destroy(e);
}

TEST(deps_two_parents_both_must_succeed)
{
    engine_t *e = mk_engine();
    uint64_t p1 = SUB(e, T0, "a", "q"), p2 = SUB(e, T0, "a", "q");
    uint64_t c = DSUB(e, T0, NULL, ENGINE_DEPS_CANCEL, p1, p2, p1); /* a repeat counts once */
    ASSERT_EQ(info_of(e, c).n_parents, 2);
    lease_ack(e, T0, p1);
    ASSERT_EQ(state_of(e, c), ENGINE_WAITING);
    engine_wait w;
    engine_job_wait(engine_find(e, c), &w);
    ASSERT_EQ(w.n_parents, 1);
    ASSERT_EQ(w.parents[0], p2);
    must_check(e, T0);
    lease_ack(e, T0, p2);
    ASSERT_EQ(state_of(e, c), ENGINE_READY);
    must_check(e, T0);
    engine_destroy(e);
}

TEST(deps_retries_of_a_parent_do_not_release_the_child)
{
    engine_t *e = mk_engine();
    uint64_t p = SUB(e, T0, "a", "q", .max_attempts = 3);
    uint64_t c = DSUB(e, T0, NULL, ENGINE_DEPS_CANCEL, p);
    ASSERT_EQ(lease1(e, T0, "q"), p);
    ASSERT_EQ(fail_ok(e, T0, p, (engine_fail_req){.error = "x", .has_retry_in = true}),
              ENGINE_READY);
    ASSERT_EQ(state_of(e, c), ENGINE_WAITING);
    ASSERT_EQ(lease1(e, T0 + 1, "q"), p); /* the parent again, never the child */
    engine_tick(e, T0 + 1 + 300000);      /* its lease expires: a failed attempt */
    ASSERT_EQ(state_of(e, p), ENGINE_SCHEDULED);
    ASSERT_EQ(state_of(e, c), ENGINE_WAITING);
    must_check(e, T0 + 300001);
    engine_destroy(e);
}

TEST(deps_parent_dies_policy_cancel_cancels_the_child)
{
    engine_t *e = mk_engine();
    uint64_t p = SUB(e, T0, "a", "q");
    uint64_t c = DSUB(e, T0, NULL, ENGINE_DEPS_CANCEL, p);
    lease_kill(e, T0, p);
    ASSERT_EQ(state_of(e, c), ENGINE_CANCELLED);
    ASSERT_STR(info_of(e, c).error, "cancelled: parent 1 is dead");
    must_check(e, T0);
    engine_changes_clear(e);
    ASSERT_EQ(engine_find(e, c), NULL);
    engine_destroy(e);
}

TEST(deps_parent_dies_policy_run_counts_as_done)
{
    engine_t *e = mk_engine();
    uint64_t p1 = SUB(e, T0, "a", "q"), p2 = SUB(e, T0, "a", "q");
    uint64_t c = DSUB(e, T0, NULL, ENGINE_DEPS_RUN, p1, p2);
    ASSERT_EQ(info_of(e, c).on_parent_failure, ENGINE_DEPS_RUN);
    lease_kill(e, T0, p1);
    ASSERT_EQ(state_of(e, c), ENGINE_WAITING);
    must_check(e, T0);
    lease_ack(e, T0, p2);
    ASSERT_EQ(state_of(e, c), ENGINE_READY);
    must_check(e, T0);
    engine_destroy(e);
}

/* The fields a job's change carries in the change list (0: not there). */
static uint32_t change_fields(engine_t *e, uint64_t id)
{
    size_t n;
    const engine_change *c = engine_changes(e, &n);
    for (size_t i = 0; i < n; i++)
        if (c[i].kind == ENGINE_CH_JOB && c[i].id == id) return c[i].fields | 0x100u;
    return 0;
}

TEST(deps_a_release_past_a_dead_parent_is_written_at_once)
{
    /* A child released while a parent of it is dead (policy run) carries
     * ENGINE_JF_RELEASED, so that its row is not written late: the parent
     * requeued before it would make a load keep the child waiting.  A
     * release by successes alone is worked out again at a load: no flag. */
    engine_t *e = mk_engine();
    uint64_t p1 = SUB(e, T0, "a", "q"), p2 = SUB(e, T0, "a", "q");
    uint64_t c = DSUB(e, T0, NULL, ENGINE_DEPS_RUN, p1, p2);
    uint64_t ok1 = SUB(e, T0, "a", "q");
    uint64_t c2 = DSUB(e, T0, NULL, ENGINE_DEPS_RUN, ok1);
    engine_changes_clear(e);
    lease_kill(e, T0, p1); /* still waits for p2 */
    ASSERT_EQ(change_fields(e, c) & ENGINE_JF_RELEASED, 0);
    engine_changes_clear(e);
    ASSERT_EQ(lease_id(e, T0, p2), p2);
    ack_ok(e, T0, p2); /* released by a success, past p1 dead */
    ASSERT_EQ(state_of(e, c), ENGINE_READY);
    ASSERT(change_fields(e, c) & ENGINE_JF_RELEASED);
    engine_changes_clear(e);
    ASSERT_EQ(engine_morgue_requeue(e, T0 + 1, p1, NULL), 0);
    ASSERT_EQ(state_of(e, c), ENGINE_READY); /* released stays so */
    engine_changes_clear(e);
    ASSERT_EQ(lease_id(e, T0, ok1), ok1);
    ack_ok(e, T0, ok1);
    ASSERT_EQ(state_of(e, c2), ENGINE_READY);
    ASSERT(change_fields(e, c2) != 0);
    ASSERT_EQ(change_fields(e, c2) & ENGINE_JF_RELEASED, 0);
    must_check(e, T0 + 2);
    engine_changes_clear(e);
    engine_destroy(e);
}

TEST(deps_parent_cancelled_applies_the_policy)
{
    engine_t *e = mk_engine();
    uint64_t p = SUB(e, T0, "a", "q");
    uint64_t c1 = DSUB(e, T0, NULL, ENGINE_DEPS_CANCEL, p);
    uint64_t c2 = DSUB(e, T0, NULL, ENGINE_DEPS_RUN, p);
    engine_state st;
    ASSERT_EQ(engine_cancel(e, T0, p, &st, NULL), 0);
    ASSERT_EQ(st, ENGINE_CANCELLED);
    ASSERT_EQ(state_of(e, c1), ENGINE_CANCELLED);
    ASSERT_EQ(state_of(e, c2), ENGINE_READY);
    must_check(e, T0);
    engine_destroy(e);
}

TEST(deps_cancel_cascades_down_a_long_chain)
{
    engine_t *e = mk_engine();
    uint64_t root = SUB(e, T0, "a", "q");
    uint64_t prev = root;
    /* long enough that recursion would be a risk: a work list does it */
    for (int i = 0; i < 20000; i++) prev = DSUB(e, T0, NULL, ENGINE_DEPS_CANCEL, prev);
    uint64_t side = DSUB(e, T0, NULL, ENGINE_DEPS_RUN, root + 1); /* cancelled parent, run */
    ASSERT_EQ(engine_cancel(e, T0, root + 1, NULL, NULL), 0);
    ASSERT_EQ(state_of(e, root), ENGINE_READY);
    ASSERT_EQ(state_of(e, prev), ENGINE_CANCELLED);
    ASSERT_EQ(state_of(e, root + 10000), ENGINE_CANCELLED);
    ASSERT_EQ(state_of(e, side), ENGINE_READY);
    must_check(e, T0);
    engine_counts k;
    engine_queue_get(e, T0, "q", NULL, &k);
    ASSERT_EQ(k.waiting, 0);
    ASSERT_EQ(k.cancelled_total, 20000);
    engine_destroy(e);
}

TEST(deps_a_parent_with_many_children_releases_them_all)
{
    engine_t *e = mk_engine();
    uint64_t p = SUB(e, T0, "a", "q");
    fixed_type = "T";
    for (int i = 0; i < 100000; i++) DSUB(e, T0, NULL, ENGINE_DEPS_CANCEL, p);
    fixed_type = NULL;
    ASSERT_EQ(info_of(e, p).n_children, 100000);
    lease_ack(e, T0, p);
    engine_counts k;
    engine_queue_get(e, T0, "q", NULL, &k);
    ASSERT_EQ(k.ready, 100000);
    ASSERT_EQ(k.waiting, 0);
    must_check(e, T0);
    engine_destroy(e);
}

TEST(deps_requeue_from_the_morgue)
{
    engine_t *e = mk_engine();
    uint64_t p = SUB(e, T0, "a", "q"), other = SUB(e, T0, "a", "q");
    uint64_t cancelled = DSUB(e, T0, NULL, ENGINE_DEPS_CANCEL, p);
    uint64_t runs = DSUB(e, T0, NULL, ENGINE_DEPS_RUN, p, other);
    lease_kill(e, T0, p);
    ASSERT_EQ(state_of(e, cancelled), ENGINE_CANCELLED);
    ASSERT_EQ(state_of(e, runs), ENGINE_WAITING); /* for `other` still */
    engine_changes_clear(e);
    ASSERT_EQ(engine_morgue_requeue(e, T0 + 1, p, NULL), 0);
    /* the cancelled child stays cancelled (final); the waiting one waits for
     * the requeued parent again */
    ASSERT_EQ(engine_find(e, cancelled), NULL);
    engine_wait w;
    engine_job_wait(engine_find(e, runs), &w);
    ASSERT_EQ(w.n_parents, 2);
    must_check(e, T0 + 1);
    lease_ack(e, T0 + 1, p);
    ASSERT_EQ(state_of(e, runs), ENGINE_WAITING);
    lease_ack(e, T0 + 1, other);
    ASSERT_EQ(state_of(e, runs), ENGINE_READY);
    must_check(e, T0 + 1);
    engine_destroy(e);
}

TEST(deps_a_child_with_a_lane)
{
    engine_t *e = mk_engine();
    uint64_t p = SUB(e, T0, "a", "q");
    uint64_t head = SUB(e, T0, "a", "q", .key = "k");
    uint64_t c = DSUB(e, T0, "k", ENGINE_DEPS_CANCEL, p); /* behind head in lane k */
    uint64_t after = SUB(e, T0, "a", "q", .key = "k");
    ASSERT_EQ(state_of(e, c), ENGINE_WAITING);
    ASSERT_EQ(state_of(e, after), ENGINE_BLOCKED);
    must_check(e, T0);
    /* the lane's head ends: the waiting child holds the lane (order kept) */
    lease_ack(e, T0, head);
    ASSERT_EQ(state_of(e, c), ENGINE_WAITING);
    ASSERT_EQ(state_of(e, after), ENGINE_BLOCKED);
    must_check(e, T0);
    lease_ack(e, T0, p);
    ASSERT_EQ(state_of(e, c), ENGINE_READY);
    lease_ack(e, T0, c);
    ASSERT_EQ(state_of(e, after), ENGINE_READY);
    must_check(e, T0);
    /* released behind a busy head: blocked, then ready in its turn */
    uint64_t p2 = SUB(e, T0, "a", "q");
    uint64_t h2 = SUB(e, T0, "a", "q", .key = "k2");
    uint64_t c2 = DSUB(e, T0, "k2", ENGINE_DEPS_CANCEL, p2);
    lease_ack(e, T0, after);
    lease_ack(e, T0, p2);
    ASSERT_EQ(state_of(e, c2), ENGINE_BLOCKED);
    lease_ack(e, T0, h2);
    ASSERT_EQ(state_of(e, c2), ENGINE_READY);
    must_check(e, T0);
    engine_destroy(e);
}

TEST(deps_slots_hold_a_released_child)
{
    engine_t *e = mk_engine();
    set_slots(e, "a", 1, 1);
    uint64_t p = SUB(e, T0, "a", "q"), busy = SUB(e, T0, "a", "q");
    uint64_t c = DSUB(e, T0, NULL, ENGINE_DEPS_CANCEL, p);
    lease_ack(e, T0, p);
    ASSERT_EQ(lease1(e, T0, "q"), busy);
    ASSERT_EQ(state_of(e, c), ENGINE_READY);
    ASSERT_EQ(lease1(e, T0, "q"), 0); /* the tenant's one slot is taken */
    engine_wait w;
    engine_job_wait(engine_find(e, c), &w);
    ASSERT_EQ(w.kind, ENGINE_WAIT_TENANT_SLOTS);
    engine_destroy(e);
}

TEST(deps_bad_input_changes_nothing)
{
    engine_t *e = mk_engine();
    uint64_t p = SUB(e, T0, "a", "q");
    uint64_t other = SUB(e, T0, "b", "q");
    uint64_t gone = SUB(e, T0, "a", "q");
    lease_ack(e, T0, p);
    lease_ack(e, T0, gone); /* finished and out of memory */
    uint64_t dead = kill_one(e, T0, "a", "q", "T");
    uint64_t live = SUB(e, T0, "a", "q");
    engine_changes_clear(e);
    engine_submit_res r;
    r = dsub(e, T0, "a", "q", NULL, ENGINE_DEPS_CANCEL, (uint64_t[]){999999}, 1);
    ASSERT_EQ(r.code, TENQ_ENOT_FOUND);
    ASSERT_STR(r.err.field, "depends_on");
    r = dsub(e, T0, "a", "q", NULL, ENGINE_DEPS_CANCEL, (uint64_t[]){other}, 1);
    ASSERT_EQ(r.code, TENQ_ENOT_FOUND); /* another tenant's: as if none */
    r = dsub(e, T0, "a", "q", NULL, ENGINE_DEPS_CANCEL, (uint64_t[]){live, gone}, 2);
    ASSERT_EQ(r.code, TENQ_ECONFLICT);
    r = dsub(e, T0, "a", "q", NULL, ENGINE_DEPS_CANCEL, (uint64_t[]){dead}, 1);
    ASSERT_EQ(r.code, TENQ_ECONFLICT);
    uint64_t many[ENGINE_PARENTS_MAX + 1];
    for (int i = 0; i <= ENGINE_PARENTS_MAX; i++) many[i] = live;
    r = dsub(e, T0, "a", "q", NULL, ENGINE_DEPS_CANCEL, many, ENGINE_PARENTS_MAX + 1);
    ASSERT_EQ(r.code, TENQ_EINVALID);
    r = dsub(e, T0, "new-tenant", "q", NULL, ENGINE_DEPS_CANCEL, (uint64_t[]){live}, 1);
    ASSERT_EQ(r.code, TENQ_ENOT_FOUND);
    ASSERT_EQ(engine_tenant_get(e, T0, "new-tenant", NULL, NULL), TENQ_ENOT_FOUND);
    engine_submit_req bad = {.tenant = "a", .queue = "q", .type = "T"};
    engine_dep_ref ref = {.index = 0};
    bad.depends_on = &ref;
    bad.n_depends_on = 1;
    ASSERT_EQ(engine_submit(e, T0, &bad, &r), TENQ_EINVALID); /* no earlier job */
    ASSERT_EQ(engine_change_count(e), 0);
    ASSERT_EQ(info_of(e, live).n_children, 0);
    /* a dead parent with policy run counts as done at once */
    uint64_t c = DSUB(e, T0, NULL, ENGINE_DEPS_RUN, dead);
    ASSERT_EQ(state_of(e, c), ENGINE_READY);
    must_check(e, T0);
    engine_destroy(e);
}

TEST(deps_submit_many_by_index)
{
    engine_t *e = mk_engine();
    engine_submit_req reqs[4] = {0};
    engine_dep_ref r1[] = {{.index = 0}}, r2[] = {{.index = 0}, {.index = 1}},
                   r3[] = {{.index = 3}};
    for (int i = 0; i < 4; i++)
        reqs[i] = (engine_submit_req){.tenant = "a", .queue = "q", .type = "T"};
    reqs[1].depends_on = r1;
    reqs[1].n_depends_on = 1;
    reqs[2].depends_on = r2;
    reqs[2].n_depends_on = 2;
    reqs[3].depends_on = r3; /* itself: not earlier */
    reqs[3].n_depends_on = 1;
    engine_submit_res res[4];
    ASSERT_EQ(engine_submit_many(e, T0, reqs, 4, res), 3);
    ASSERT_EQ(res[3].code, TENQ_EINVALID);
    ASSERT_EQ(state_of(e, res[0].id), ENGINE_READY);
    ASSERT_EQ(res[1].state, ENGINE_WAITING);
    ASSERT_EQ(res[2].state, ENGINE_WAITING);
    lease_ack(e, T0, res[0].id);
    ASSERT_EQ(state_of(e, res[1].id), ENGINE_READY);
    ASSERT_EQ(state_of(e, res[2].id), ENGINE_WAITING);
    lease_ack(e, T0, res[1].id);
    ASSERT_EQ(state_of(e, res[2].id), ENGINE_READY);
    must_check(e, T0);
    engine_destroy(e);
}

/* ---- recovery: the store keeps the jobs and the edges, not the counts ---- */

typedef struct edge {
    uint64_t child, parent;
    engine_deps_policy policy;
} edge;

/* Copies what a store would hold of the resident jobs of a (rows, in id
 * order: no lane here has a requeued job) and their edges into a new engine. */
static engine_t *reload(engine_t *a, int64_t now, uint64_t max_id, uint64_t stale_waiting)
{
    engine_t *b = mk_engine();
    edge *edges = calloc(max_id * ENGINE_PARENTS_MAX + 1, sizeof(edge));
    size_t ne = 0;
    engine_loading(b, true);
    for (uint64_t id = 1; id <= max_id; id++) {
        engine_job *j = engine_find(a, id);
        if (!j || engine_state_finished(engine_job_state(j))) continue;
        engine_job_info in;
        engine_job_get(j, &in);
        if (id == stale_waiting) in.state = ENGINE_WAITING; /* its ready row written late */
        for (uint32_t k = 0; k < in.n_parents; k++)
            edges[ne++] = (edge){id, in.parents[k], in.on_parent_failure};
        engine_err err;
        if (engine_load_job(b, now, &in, &err)) test_fail(__FILE__, __LINE__, "%s", err.message);
    }
    for (size_t i = 0; i < ne; i++)
        engine_load_dep(b, edges[i].child, edges[i].parent, edges[i].policy);
    engine_load_deps_done(b, now);
    engine_loading(b, false);
    engine_changes_clear(b);
    free(edges);
    return b;
}

TEST(deps_load_rebuilds_the_waits_from_the_store)
{
    engine_t *a = mk_engine();
    uint64_t p1 = SUB(a, T0, "a", "q"), p2 = SUB(a, T0, "a", "q"), p3 = SUB(a, T0, "a", "q");
    uint64_t c = DSUB(a, T0, NULL, ENGINE_DEPS_CANCEL, p1, p2);
    uint64_t g = DSUB(a, T0, NULL, ENGINE_DEPS_CANCEL, c); /* grandchild */
    uint64_t r = DSUB(a, T0, NULL, ENGINE_DEPS_RUN, p3);
    lease_ack(a, T0, p1); /* finished: gone from memory, and from the load */
    lease_ack(a, T0, p3); /* r released: ready, its row still "waiting" */
    ASSERT_EQ(state_of(a, r), ENGINE_READY);
    engine_t *b = reload(a, T0 + 10, r, r);
    must_check(b, T0 + 10);
    ASSERT_EQ(state_of(b, c), ENGINE_WAITING);
    ASSERT_EQ(state_of(b, g), ENGINE_WAITING);
    ASSERT_EQ(state_of(b, r), ENGINE_READY);
    engine_wait w;
    engine_job_wait(engine_find(b, c), &w);
    ASSERT_EQ(w.n_parents, 1);
    ASSERT_EQ(w.parents[0], p2);
    ASSERT_EQ(info_of(b, c).n_parents, 2);
    ASSERT_EQ(info_of(b, p2).n_children, 1);
    /* the rebuilt engine goes on as the old one would */
    uint64_t ids[4];
    ASSERT_EQ(lease_q(b, T0 + 10, "q", 4, ids), 2); /* p2 and r */
    ack_ok(b, T0 + 11, p2);
    ASSERT_EQ(state_of(b, c), ENGINE_READY);
    ASSERT_EQ(state_of(b, g), ENGINE_WAITING);
    ASSERT_EQ(lease1(b, T0 + 12, "q"), c);
    ASSERT_EQ(fail_ok(b, T0 + 12, c, (engine_fail_req){.error = "x", .no_retry = true}),
              ENGINE_DEAD);
    ASSERT_EQ(state_of(b, g), ENGINE_CANCELLED);
    must_check(b, T0 + 12);
    engine_destroy(a);
    engine_destroy(b);
}

TEST(deps_load_of_a_waiting_child_in_a_lane)
{
    engine_t *a = mk_engine();
    uint64_t p = SUB(a, T0, "a", "q");
    uint64_t c = DSUB(a, T0, "k", ENGINE_DEPS_CANCEL, p); /* the lane's head, waiting */
    uint64_t after = SUB(a, T0, "a", "q", .key = "k");
    engine_t *b = reload(a, T0, after, 0);
    must_check(b, T0);
    ASSERT_EQ(state_of(b, c), ENGINE_WAITING);
    ASSERT_EQ(state_of(b, after), ENGINE_BLOCKED);
    ASSERT_EQ(lease1(b, T0, "q"), p);
    ack_ok(b, T0, p);
    ASSERT_EQ(state_of(b, c), ENGINE_READY);
    must_check(b, T0);
    engine_destroy(a);
    engine_destroy(b);
}
