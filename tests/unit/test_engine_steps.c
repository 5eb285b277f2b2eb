// SPDX-License-Identifier: Apache-2.0
/* One test per rule of SEMANTICS.md, named after the rule: durable steps,
 * durable sleeps, waits for events and for child jobs. */
#include "engine_helpers.h"

#define T0 1700000000000LL

/* ---- a store of steps and events: what the change lists say ---------------------- */

typedef struct srow {
    engine_step_info x;
    char name[300], event[300];
    char *result, *error;
} srow;

typedef struct erow {
    engine_event_info x;
    char tenant[80], key[300];
    char *payload;
    bool gone;
} erow;

typedef struct mini {
    srow rows[4096];
    size_t n;
    erow ev[256];
    size_t nev;
    size_t attempts_suspended;
    uint32_t fields[4096]; /* ENGINE_CH_JOB fields by id, the last seen */
} mini;

static char *dup0(const char *s)
{
    return s ? strdup(s) : NULL;
}

static srow *row_at(mini *m, uint64_t job, uint32_t pos)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->rows[i].x.job_id == job && m->rows[i].x.pos == pos) return &m->rows[i];
    return NULL;
}

/* Takes the engine's changes into the mini store, and clears them. */
static void take(engine_t *e, mini *m)
{
    size_t n;
    const engine_change *c = engine_changes(e, &n);
    for (size_t i = 0; i < n; i++) {
        if (c[i].kind == ENGINE_CH_JOB && c[i].id < 4096) m->fields[c[i].id] |= c[i].fields;
        if (c[i].kind == ENGINE_CH_ATTEMPT && c[i].attempt->outcome == ENGINE_ATTEMPT_SUSPENDED)
            m->attempts_suspended++;
        if (c[i].kind == ENGINE_CH_STEP) {
            const engine_step_info *x = c[i].step;
            srow *r = row_at(m, x->job_id, x->pos);
            if (c[i].fields) { /* the end of a pending row */
                ASSERT_MSG(r && !r->x.done, "step %u of %llu ended but was not pending", x->pos,
                           (unsigned long long)x->job_id);
                r->x.done = true;
                r->x.finished_at = x->finished_at;
                r->x.child_state = x->child_state;
                r->x.size = x->size;
                free(r->result);
                r->result = dup0(x->result);
                r->error = dup0(x->error);
                continue;
            }
            ASSERT_MSG(!r, "step %u of %llu written twice", x->pos, (unsigned long long)x->job_id);
            r = &m->rows[m->n++];
            r->x = *x;
            snprintf(r->name, sizeof r->name, "%s", x->name);
            snprintf(r->event, sizeof r->event, "%s", x->event ? x->event : "");
            r->result = dup0(x->result);
            r->error = dup0(x->error);
        }
        if (c[i].kind == ENGINE_CH_EVENT) {
            erow *v = &m->ev[m->nev++];
            v->x = *c[i].event;
            snprintf(v->tenant, sizeof v->tenant, "%s", c[i].event->tenant);
            snprintf(v->key, sizeof v->key, "%s", c[i].event->key);
            v->payload = dup0(c[i].event->payload);
        }
        if (c[i].kind == ENGINE_CH_EVENT_GONE) {
            bool found = false;
            for (size_t k = 0; k < m->nev; k++)
                if (m->ev[k].x.id == c[i].id) found = m->ev[k].gone = true;
            ASSERT_MSG(found, "event %llu gone but never kept", (unsigned long long)c[i].id);
        }
    }
    engine_changes_clear(e);
}

static void mini_free(mini *m)
{
    for (size_t i = 0; i < m->n; i++) {
        free(m->rows[i].result);
        free(m->rows[i].error);
    }
    for (size_t i = 0; i < m->nev; i++) free(m->ev[i].payload);
    free(m);
}

/* A new engine from what a store would hold: a's resident jobs, the
 * mini store's steps (in job, pos order) and kept events. */
static engine_t *reload(engine_t *a, mini *m, int64_t now, uint64_t max_id)
{
    engine_t *b = mk_engine();
    engine_loading(b, true);
    engine_err err;
    for (uint64_t id = 1; id <= max_id; id++) {
        engine_job *j = engine_find(a, id);
        if (!j || engine_state_finished(engine_job_state(j))) continue;
        engine_job_info in;
        engine_job_get(j, &in);
        if (engine_load_job(b, now, &in, &err)) test_fail(__FILE__, __LINE__, "%s", err.message);
    }
    for (uint64_t id = 1; id <= max_id; id++)
        for (uint32_t pos = 0;; pos++) {
            srow *r = row_at(m, id, pos);
            if (!r) break;
            engine_step_info x = r->x;
            x.name = r->name;
            x.event = r->event[0] ? r->event : NULL;
            x.result = NULL; /* only its size is loaded */
            if (engine_load_step(b, now, &x, &err))
                test_fail(__FILE__, __LINE__, "%s", err.message);
        }
    engine_load_deps_done(b, now);
    for (size_t i = 0; i < m->nev; i++) {
        if (m->ev[i].gone) continue;
        engine_event_info x = m->ev[i].x;
        x.tenant = m->ev[i].tenant;
        x.key = m->ev[i].key;
        x.payload = m->ev[i].payload;
        if (engine_load_event(b, now, &x, &err)) test_fail(__FILE__, __LINE__, "%s", err.message);
    }
    engine_loading(b, false);
    engine_changes_clear(b);
    return b;
}

/* ---- calls ------------------------------------------------------------------------ */

static int step_run(engine_t *e, int64_t now, uint64_t id, const char *name, const char *result,
                    engine_step_res *res, engine_err *err)
{
    engine_step_req r = {.name = name, .kind = ENGINE_STEP_RUN, .result = result};
    r.result_len = result ? (uint32_t)strlen(result) : 0;
    return engine_step(e, now, id, token_of(e, id), &r, res, err);
}

#define STEP_OK(e, now, id, name, result) step_ok((e), (now), (id), (name), (result), __LINE__)
static engine_step_res step_ok(engine_t *e, int64_t now, uint64_t id, const char *name,
                               const char *result, int line)
{
    engine_step_res res;
    engine_err err;
    if (step_run(e, now, id, name, result, &res, &err))
        test_fail(__FILE__, line, "step %s: %s", name, err.message);
    return res;
}

static engine_step_res park_ok(engine_t *e, int64_t now, uint64_t id, engine_step_req r, int line)
{
    engine_step_res res;
    engine_err err;
    if (engine_step(e, now, id, token_of(e, id), &r, &res, &err))
        test_fail(__FILE__, line, "step %s: %s", r.name, err.message);
    return res;
}
#define SLEEP_OK(e, now, id, nm, t)                                                                \
    park_ok((e), (now), (id),                                                                      \
            (engine_step_req){.name = (nm), .kind = ENGINE_STEP_SLEEP, .until = (t)}, __LINE__)
#define WAIT_OK(e, now, id, nm, ky, tmo)                                                           \
    park_ok((e), (now), (id),                                                                      \
            (engine_step_req){                                                                     \
                .name = (nm), .kind = ENGINE_STEP_EVENT, .event = (ky), .timeout_ms = (tmo)},      \
            __LINE__)

static engine_event_res send_ok(engine_t *e, int64_t now, const char *tenant, const char *key,
                                const char *payload)
{
    engine_event_res res;
    engine_err err;
    uint64_t ids[16];
    int rc = engine_event_send(e, now, tenant, key, payload,
                               payload ? (uint32_t)strlen(payload) : 0, ids, 16, &res, &err);
    if (rc) test_fail(__FILE__, __LINE__, "event %s: %s", key, err.message);
    return res;
}

static engine_t *mk_window(int64_t window_ms)
{
    engine_config c;
    engine_config_defaults(&c);
    c.seed = 42;
    c.event_window_ms = window_ms;
    return engine_create(&c);
}

/* ---- steps ------------------------------------------------------------------------- */

TEST(steps_are_stored_under_the_lease_and_counted)
{
    engine_t *e = mk_engine();
    mini *m = calloc(1, sizeof *m);
    uint64_t id = SUB(e, T0, "t", "q");
    ASSERT(info_of(e, id).plain);
    ASSERT_EQ(lease1(e, T0, "q"), id);
    take(e, m);
    engine_step_res r = STEP_OK(e, T0 + 1, id, "fetch", "{\"rows\":3}");
    ASSERT_EQ(r.pos, 0);
    ASSERT(!r.duplicate && !r.parked);
    ASSERT_EQ(r.state, ENGINE_LEASED);
    must_check(e, T0 + 1);
    take(e, m);
    /* the first step makes the job's row go now: it is no longer plain */
    ASSERT(m->fields[id] & ENGINE_JF_STEPS);
    ASSERT(!info_of(e, id).plain);
    ASSERT_EQ(m->n, 1);
    ASSERT_STR(m->rows[0].name, "fetch");
    ASSERT_STR(m->rows[0].result, "{\"rows\":3}");
    ASSERT(m->rows[0].x.done);
    ASSERT_EQ(m->rows[0].x.token, token_of(e, id));
    ASSERT_EQ(m->rows[0].x.attempt, 1);
    ASSERT_EQ(m->rows[0].x.kind, ENGINE_STEP_RUN);
    r = STEP_OK(e, T0 + 2, id, "sum", NULL);
    ASSERT_EQ(r.pos, 1);
    ASSERT_EQ(info_of(e, id).n_steps, 2);
    take(e, m);
    ASSERT_EQ(m->n, 2);
    ASSERT(!(m->fields[id] & ENGINE_JF_RESULT));
    must_check(e, T0 + 2);
    engine_destroy(e);
    mini_free(m);
}

TEST(steps_a_name_sent_again_by_its_lease_is_stored_once)
{
    engine_t *e = mk_engine();
    mini *m = calloc(1, sizeof *m);
    uint64_t id = SUB(e, T0, "t", "q");
    lease1(e, T0, "q");
    STEP_OK(e, T0, id, "a", "1");
    take(e, m);
    engine_step_res r = STEP_OK(e, T0, id, "a", "1");
    ASSERT(r.duplicate);
    ASSERT_EQ(r.pos, 0);
    ASSERT_EQ(engine_change_count(e), 0); /* nothing changed */
    ASSERT_EQ(info_of(e, id).n_steps, 1);
    engine_destroy(e);
    mini_free(m);
}

TEST(steps_a_retry_gets_the_earlier_steps_and_may_not_store_them_again)
{
    engine_t *e = mk_engine();
    uint64_t id = SUB(e, T0, "t", "q");
    lease1(e, T0, "q");
    STEP_OK(e, T0, id, "one", "1");
    STEP_OK(e, T0, id, "two", "2");
    uint64_t t1 = token_of(e, id);
    ASSERT_EQ(fail_ok(e, T0, id, (engine_fail_req){.error = "x", .has_retry_in = true}),
              ENGINE_READY);
    ASSERT_EQ(lease1(e, T0 + 1, "q"), id);
    ASSERT_EQ(info_of(e, id).n_steps, 2); /* the lease says the worker has steps to read */
    engine_step_res res;
    engine_err err;
    ASSERT_EQ(step_run(e, T0 + 1, id, "one", "1", &res, &err), TENQ_ECONFLICT);
    ASSERT_STR(err.field, "name");
    ASSERT(strstr(err.message, "earlier attempt"));
    STEP_OK(e, T0 + 1, id, "three", "3");
    ASSERT_EQ(info_of(e, id).n_steps, 3);
    /* the first lease's token is stale now: its late step is refused */
    engine_step_req late = {.name = "four", .kind = ENGINE_STEP_RUN};
    ASSERT_EQ(engine_step(e, T0 + 2, id, t1, &late, &res, &err), TENQ_ECONFLICT);
    ASSERT_STR(err.field, "token");
    ASSERT_EQ(info_of(e, id).n_steps, 3);
    must_check(e, T0 + 2);
    engine_destroy(e);
}

TEST(steps_a_stale_token_is_refused_and_changes_nothing)
{
    engine_t *e = mk_engine();
    uint64_t id = SUB(e, T0, "t", "q");
    lease1(e, T0, "q");
    uint64_t tok = token_of(e, id);
    engine_tick(e, T0 + 400000); /* the lease expires */
    engine_changes_clear(e);
    engine_step_req r = {.name = "a", .kind = ENGINE_STEP_RUN};
    engine_step_res res;
    engine_err err;
    ASSERT_EQ(engine_step(e, T0 + 400001, id, tok, &r, &res, &err), TENQ_ECONFLICT);
    ASSERT_STR(err.field, "token");
    ASSERT_EQ(engine_step(e, T0 + 400001, 999, tok, &r, &res, &err), TENQ_ENOT_FOUND);
    ASSERT_EQ(engine_change_count(e), 0);
    ASSERT_EQ(info_of(e, id).n_steps, 0);
    ASSERT(info_of(e, id).plain);
    must_check(e, T0 + 400001);
    engine_destroy(e);
}

TEST(steps_limits_name_result_count_and_bytes)
{
    engine_t *e = mk_engine();
    engine_queue_settings qs = queue_settings(e, "q");
    qs.max_payload_bytes = 4u * 1024 * 1024;
    set_queue(e, "q", qs);
    uint64_t id = SUB(e, T0, "t", "q");
    lease1(e, T0, "q");
    engine_step_res res;
    engine_err err;
    ASSERT_EQ(step_run(e, T0, id, "", "1", &res, &err), TENQ_EINVALID);
    ASSERT_STR(err.field, "name");
    ASSERT_EQ(step_run(e, T0, id, "a\nb", "1", &res, &err), TENQ_EINVALID);
    char longname[300];
    memset(longname, 'n', 257);
    longname[257] = 0;
    ASSERT_EQ(step_run(e, T0, id, longname, "1", &res, &err), TENQ_EINVALID);
    longname[256] = 0;
    STEP_OK(e, T0, id, longname, "1");
    /* a result larger than the queue's max_payload_bytes */
    size_t big = 4u * 1024 * 1024 + 3;
    char *r = malloc(big + 1);
    memset(r, '1', big);
    r[big] = 0;
    ASSERT_EQ(step_run(e, T0, id, "big", r, &res, &err), TENQ_ETOO_LARGE);
    ASSERT_STR(err.field, "result");
    /* results of one job hold at most ENGINE_STEPS_BYTES_MAX */
    r[4u * 1024 * 1024] = 0;
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof name, "b%d", i);
        STEP_OK(e, T0, id, name, r);
    }
    ASSERT_EQ(step_run(e, T0, id, "b3", r, &res, &err), TENQ_ETOO_LARGE);
    ASSERT_STR(err.field, "result");
    free(r);
    /* and ENGINE_STEPS_MAX steps */
    for (uint32_t i = info_of(e, id).n_steps; i < ENGINE_STEPS_MAX; i++) {
        char name[16];
        snprintf(name, sizeof name, "s%u", i);
        STEP_OK(e, T0, id, name, "0");
    }
    ASSERT_EQ(step_run(e, T0, id, "one-more", "0", &res, &err), TENQ_ETOO_LARGE);
    ASSERT(strstr(err.message, "most a job stores"));
    ASSERT_EQ(info_of(e, id).n_steps, ENGINE_STEPS_MAX);
    must_check(e, T0);
    engine_destroy(e);
}

TEST(steps_stay_with_the_job_and_go_with_it)
{
    engine_t *e = mk_engine();
    uint64_t id = SUB(e, T0, "t", "q");
    lease1(e, T0, "q");
    STEP_OK(e, T0, id, "a", "[1,2]");
    engine_memory mem;
    engine_memory_usage(e, &mem);
    size_t with = mem.bytes;
    ack_ok(e, T0, id);
    engine_changes_clear(e);
    engine_memory_usage(e, &mem);
    ASSERT_EQ(mem.bytes, 0);
    ASSERT(with > 0);
    must_check(e, T0);
    engine_destroy(e);
}

/* ---- durable sleep ------------------------------------------------------------------ */

TEST(sleep_ends_the_attempt_frees_the_slot_and_resumes_on_time)
{
    engine_t *e = mk_engine();
    mini *m = calloc(1, sizeof *m);
    set_slots(e, "t", 1, 1);
    uint64_t a = SUB(e, T0, "t", "q"), b = SUB(e, T0, "t", "q");
    ASSERT_EQ(lease1(e, T0, "q"), a);
    ASSERT_EQ(lease1(e, T0, "q"), 0); /* the tenant's one slot is taken */
    STEP_OK(e, T0, a, "before", "1");
    engine_step_res r = SLEEP_OK(e, T0 + 1, a, "nap", T0 + 2001);
    ASSERT(r.parked);
    ASSERT_EQ(r.state, ENGINE_SCHEDULED);
    ASSERT_EQ(r.run_at, T0 + 2001);
    engine_wait w;
    engine_job_wait(engine_find(e, a), &w);
    ASSERT_EQ(w.kind, ENGINE_WAIT_SLEEP);
    ASSERT_EQ(w.until, T0 + 2001);
    ASSERT_STR(engine_wait_name(w.kind), "sleep");
    take(e, m);
    ASSERT_EQ(m->attempts_suspended, 1);
    ASSERT(m->rows[1].x.done);
    ASSERT_EQ(m->rows[1].x.kind, ENGINE_STEP_SLEEP);
    ASSERT_EQ(m->rows[1].x.until, T0 + 2001);
    /* the slot went back: the tenant's other job runs meanwhile */
    ASSERT_EQ(lease1(e, T0 + 2, "q"), b);
    ack_ok(e, T0 + 3, b);
    engine_tick(e, T0 + 2000);
    ASSERT_EQ(state_of(e, a), ENGINE_SCHEDULED);
    ASSERT_EQ(engine_next_timer(e), T0 + 2001);
    engine_tick(e, T0 + 2001);
    ASSERT_EQ(state_of(e, a), ENGINE_READY);
    ASSERT_EQ(lease1(e, T0 + 2001, "q"), a);
    /* not a failed attempt: the lease that resumes it has the same number */
    ASSERT_EQ(info_of(e, a).attempts, 1);
    ASSERT_EQ(info_of(e, a).n_steps, 2);
    engine_err err;
    ASSERT_EQ(step_run(e, T0 + 2001, a, "nap", NULL, &r, &err), TENQ_ECONFLICT);
    must_check(e, T0 + 2001);
    engine_destroy(e);
    mini_free(m);
}

TEST(sleep_keeps_the_lane)
{
    engine_t *e = mk_engine();
    uint64_t a = SUB(e, T0, "t", "q", .key = "k"), b = SUB(e, T0, "t", "q", .key = "k");
    ASSERT_EQ(lease1(e, T0, "q"), a);
    SLEEP_OK(e, T0, a, "nap", T0 + 1000);
    ASSERT_EQ(state_of(e, b), ENGINE_BLOCKED); /* behind its lane's head still */
    ASSERT_EQ(lease1(e, T0 + 1, "q"), 0);
    engine_tick(e, T0 + 1000);
    ASSERT_EQ(lease1(e, T0 + 1000, "q"), a);
    ack_ok(e, T0 + 1000, a);
    ASSERT_EQ(state_of(e, b), ENGINE_READY);
    must_check(e, T0 + 1000);
    engine_destroy(e);
}

TEST(sleep_of_a_time_past_does_not_park)
{
    engine_t *e = mk_engine();
    uint64_t a = SUB(e, T0, "t", "q");
    lease1(e, T0, "q");
    engine_step_res r = SLEEP_OK(e, T0 + 10, a, "nap", T0 + 5);
    ASSERT(!r.parked);
    ASSERT_EQ(state_of(e, a), ENGINE_LEASED);
    ASSERT_EQ(info_of(e, a).n_steps, 1);
    must_check(e, T0 + 10);
    engine_destroy(e);
}

TEST(sleep_is_refused_on_at_most_once_and_after_a_cancel)
{
    engine_t *e = mk_engine();
    engine_queue_settings qs = queue_settings(e, "amo");
    qs.delivery = ENGINE_AT_MOST_ONCE;
    set_queue(e, "amo", qs);
    uint64_t a = SUB(e, T0, "t", "amo");
    lease1(e, T0, "amo");
    engine_step_req r = {.name = "nap", .kind = ENGINE_STEP_SLEEP, .until = T0 + 100};
    engine_step_res res;
    engine_err err;
    ASSERT_EQ(engine_step(e, T0, a, token_of(e, a), &r, &res, &err), TENQ_ECONFLICT);
    ASSERT_STR(err.field, "kind");
    STEP_OK(e, T0, a, "plain-step", "1"); /* a step that does not park is fine */
    uint64_t b = SUB(e, T0, "t", "q");
    lease1(e, T0, "q");
    ASSERT_EQ(engine_cancel(e, T0, b, NULL, NULL), 0);
    ASSERT_EQ(engine_step(e, T0, b, token_of(e, b), &r, &res, &err), TENQ_ECONFLICT);
    ASSERT_STR(err.field, "state");
    ASSERT_EQ(state_of(e, b), ENGINE_LEASED);
    ASSERT_EQ(info_of(e, b).n_steps, 0);
    must_check(e, T0);
    engine_destroy(e);
}

TEST(sleep_cancelled_while_parked)
{
    engine_t *e = mk_engine();
    uint64_t a = SUB(e, T0, "t", "q");
    lease1(e, T0, "q");
    SLEEP_OK(e, T0, a, "nap", T0 + 1000);
    engine_state st;
    ASSERT_EQ(engine_cancel(e, T0 + 1, a, &st, NULL), 0);
    ASSERT_EQ(st, ENGINE_CANCELLED);
    must_check(e, T0 + 1);
    engine_changes_clear(e);
    engine_tick(e, T0 + 2000);
    must_check(e, T0 + 2000);
    engine_destroy(e);
}

/* ---- events -------------------------------------------------------------------------- */

TEST(event_wakes_the_job_waiting_for_it)
{
    engine_t *e = mk_window(60000);
    mini *m = calloc(1, sizeof *m);
    set_slots(e, "t", 1, 1);
    uint64_t a = SUB(e, T0, "t", "q"), b = SUB(e, T0, "t", "q");
    lease1(e, T0, "q");
    engine_step_res r = WAIT_OK(e, T0, a, "paid", "order-1", 0);
    ASSERT(r.parked);
    ASSERT_EQ(r.state, ENGINE_WAITING);
    ASSERT_EQ(engine_event_waiters(e), 1);
    engine_wait w;
    engine_job_wait(engine_find(e, a), &w);
    ASSERT_EQ(w.kind, ENGINE_WAIT_EVENT);
    ASSERT_STR(w.event, "order-1");
    ASSERT_EQ(lease1(e, T0, "q"), b); /* the slot went back */
    take(e, m);
    ASSERT(!m->rows[0].x.done);
    ASSERT_STR(m->rows[0].event, "order-1");
    /* another tenant's event of that key wakes nothing: events are per tenant */
    engine_event_res er = send_ok(e, T0 + 1, "other", "order-1", "{}");
    ASSERT_EQ(er.delivered, 0);
    ASSERT(er.kept);
    ASSERT_EQ(state_of(e, a), ENGINE_WAITING);
    er = send_ok(e, T0 + 2, "t", "order-1", "{\"amount\":5}");
    ASSERT_EQ(er.delivered, 1);
    ASSERT(!er.kept);
    ASSERT_EQ(state_of(e, a), ENGINE_READY);
    ASSERT_EQ(engine_event_waiters(e), 0);
    take(e, m);
    ASSERT(m->rows[0].x.done);
    ASSERT_STR(m->rows[0].result, "{\"amount\":5}");
    ASSERT_EQ(m->rows[0].error, NULL);
    ASSERT_EQ(m->rows[0].x.finished_at, T0 + 2);
    ack_ok(e, T0 + 3, b);
    ASSERT_EQ(lease1(e, T0 + 3, "q"), a);
    ASSERT_EQ(info_of(e, a).attempts, 1);
    must_check(e, T0 + 3);
    engine_destroy(e);
    mini_free(m);
}

TEST(event_wakes_every_job_waiting_for_its_key)
{
    engine_t *e = mk_window(60000);
    uint64_t ids[3];
    for (int i = 0; i < 3; i++) {
        ids[i] = SUB(e, T0, "t", "q");
        lease1(e, T0, "q");
        WAIT_OK(e, T0, ids[i], "w", "go", 5000);
    }
    must_check(e, T0);
    engine_event_res er = send_ok(e, T0 + 1, "t", "go", "1");
    ASSERT_EQ(er.delivered, 3);
    for (int i = 0; i < 3; i++) ASSERT_EQ(state_of(e, ids[i]), ENGINE_READY);
    /* their timeouts are gone with their waits */
    ASSERT_EQ(engine_next_timer(e), INT64_MAX);
    must_check(e, T0 + 1);
    engine_destroy(e);
}

TEST(event_wait_times_out)
{
    engine_t *e = mk_window(60000);
    mini *m = calloc(1, sizeof *m);
    uint64_t a = SUB(e, T0, "t", "q");
    lease1(e, T0, "q");
    WAIT_OK(e, T0, a, "w", "never", 3000);
    engine_wait w;
    engine_job_wait(engine_find(e, a), &w);
    ASSERT_EQ(w.until, T0 + 3000);
    ASSERT_EQ(engine_next_timer(e), T0 + 3000);
    take(e, m);
    engine_tick(e, T0 + 2999);
    ASSERT_EQ(state_of(e, a), ENGINE_WAITING);
    engine_tick(e, T0 + 3000);
    ASSERT_EQ(state_of(e, a), ENGINE_READY);
    take(e, m);
    ASSERT(m->rows[0].x.done);
    ASSERT_STR(m->rows[0].error, "timed out");
    ASSERT_EQ(m->rows[0].result, NULL);
    /* an event after the timeout wakes nothing and is kept */
    engine_event_res er = send_ok(e, T0 + 3001, "t", "never", "1");
    ASSERT_EQ(er.delivered, 0);
    ASSERT(er.kept);
    must_check(e, T0 + 3001);
    engine_destroy(e);
    mini_free(m);
}

TEST(event_sent_before_the_wait_is_kept_for_the_window)
{
    engine_t *e = mk_window(10000);
    mini *m = calloc(1, sizeof *m);
    engine_event_res er = send_ok(e, T0, "t", "early", "{\"x\":1}");
    ASSERT(er.kept);
    ASSERT_EQ(er.expires_at, T0 + 10000);
    ASSERT_EQ(engine_events_kept(e), 1);
    take(e, m);
    ASSERT_EQ(m->nev, 1);
    uint64_t a = SUB(e, T0, "t", "q");
    lease1(e, T0, "q");
    engine_step_res r = WAIT_OK(e, T0 + 9999, a, "w", "early", 0);
    ASSERT(!r.parked); /* taken at once: the handler goes on */
    ASSERT(r.done);
    ASSERT_STR(r.result, "{\"x\":1}");
    ASSERT_EQ(state_of(e, a), ENGINE_LEASED);
    ASSERT_EQ(engine_events_kept(e), 0);
    take(e, m);
    ASSERT(m->ev[0].gone);
    ASSERT(m->rows[0].x.done);
    ASSERT_STR(m->rows[0].result, "{\"x\":1}");
    /* taken once: a second wait for the key parks */
    r = WAIT_OK(e, T0 + 9999, a, "w2", "early", 0);
    ASSERT(r.parked);
    must_check(e, T0 + 9999);
    engine_destroy(e);
    mini_free(m);
}

TEST(event_past_its_window_is_not_taken)
{
    engine_t *e = mk_window(10000);
    send_ok(e, T0, "t", "late", "1");
    uint64_t a = SUB(e, T0, "t", "q");
    lease1(e, T0, "q");
    engine_step_res r = WAIT_OK(e, T0 + 10000, a, "w", "late", 0);
    ASSERT(r.parked);
    engine_tick(e, T0 + 10000);
    ASSERT_EQ(engine_events_kept(e), 0);
    must_check(e, T0 + 10000);
    engine_destroy(e);
}

TEST(event_with_no_window_is_not_kept)
{
    engine_t *e = mk_engine();
    engine_event_res er = send_ok(e, T0, "t", "k", "1");
    ASSERT(!er.kept);
    ASSERT_EQ(er.delivered, 0);
    ASSERT_EQ(engine_change_count(e), 0);
    engine_destroy(e);
}

TEST(event_bad_input_changes_nothing)
{
    engine_t *e = mk_window(1000);
    engine_event_res res;
    engine_err err;
    ASSERT_EQ(engine_event_send(e, T0, "bad tenant", "k", "1", 1, NULL, 0, &res, &err),
              TENQ_EINVALID);
    ASSERT_STR(err.field, "tenant");
    ASSERT_EQ(engine_event_send(e, T0, "t", "", "1", 1, NULL, 0, &res, &err), TENQ_EINVALID);
    ASSERT_STR(err.field, "key");
    char *big = malloc(ENGINE_EVENT_MAX_BYTES + 2);
    memset(big, '1', ENGINE_EVENT_MAX_BYTES + 1);
    big[ENGINE_EVENT_MAX_BYTES + 1] = 0;
    ASSERT_EQ(
        engine_event_send(e, T0, "t", "k", big, ENGINE_EVENT_MAX_BYTES + 1, NULL, 0, &res, &err),
        TENQ_ETOO_LARGE);
    ASSERT_STR(err.field, "payload");
    free(big);
    ASSERT_EQ(engine_change_count(e), 0);
    uint64_t a = SUB(e, T0, "t", "q");
    lease1(e, T0, "q");
    engine_step_req r = {.name = "w", .kind = ENGINE_STEP_EVENT, .event = "", .timeout_ms = 1};
    engine_step_res sr;
    ASSERT_EQ(engine_step(e, T0, a, token_of(e, a), &r, &sr, &err), TENQ_EINVALID);
    ASSERT_STR(err.field, "event");
    r.event = "k";
    r.timeout_ms = -1;
    ASSERT_EQ(engine_step(e, T0, a, token_of(e, a), &r, &sr, &err), TENQ_EINVALID);
    ASSERT_STR(err.field, "timeout_ms");
    r.kind = 9;
    ASSERT_EQ(engine_step(e, T0, a, token_of(e, a), &r, &sr, &err), TENQ_EINVALID);
    ASSERT_STR(err.field, "kind");
    ASSERT_EQ(info_of(e, a).n_steps, 0);
    must_check(e, T0);
    engine_destroy(e);
}

TEST(event_waiting_job_cancelled)
{
    engine_t *e = mk_window(1000);
    mini *m = calloc(1, sizeof *m);
    uint64_t a = SUB(e, T0, "t", "q");
    lease1(e, T0, "q");
    WAIT_OK(e, T0, a, "w", "k", 5000);
    take(e, m);
    engine_state st;
    ASSERT_EQ(engine_cancel(e, T0 + 1, a, &st, NULL), 0);
    ASSERT_EQ(st, ENGINE_CANCELLED);
    ASSERT_EQ(engine_event_waiters(e), 0);
    take(e, m);
    ASSERT(m->rows[0].x.done);
    ASSERT_STR(m->rows[0].error, "cancelled");
    ASSERT_EQ(engine_next_timer(e), INT64_MAX);
    engine_event_res er = send_ok(e, T0 + 2, "t", "k", "1");
    ASSERT_EQ(er.delivered, 0);
    must_check(e, T0 + 2);
    engine_destroy(e);
    mini_free(m);
}

/* ---- children -------------------------------------------------------------------------- */

static engine_step_res child_ok(engine_t *e, int64_t now, uint64_t id, const char *name,
                                const char *queue, int line)
{
    engine_step_req r = {.name = name, .kind = ENGINE_STEP_CHILD};
    r.child.queue = queue;
    r.child.type = "Child";
    r.child.args = "{\"n\":1}";
    r.child.args_len = 7;
    return park_ok(e, now, id, r, line);
}
#define CHILD_OK(e, now, id, name, queue) child_ok((e), (now), (id), (name), (queue), __LINE__)

TEST(child_is_submitted_once_and_its_result_resumes_the_parent)
{
    engine_t *e = mk_engine();
    mini *m = calloc(1, sizeof *m);
    uint64_t p = SUB(e, T0, "t", "q");
    lease1(e, T0, "q");
    engine_step_res r = CHILD_OK(e, T0, p, "sub", "kids");
    ASSERT(r.parked);
    ASSERT(r.child);
    ASSERT_EQ(r.state, ENGINE_WAITING);
    engine_job_info ci = info_of(e, r.child);
    ASSERT_STR(ci.tenant, "t");
    ASSERT_STR(ci.queue, "kids");
    ASSERT_EQ(ci.awaited_by, p);
    ASSERT(!ci.plain); /* loaded first: its parent waits for it */
    engine_wait w;
    engine_job_wait(engine_find(e, p), &w);
    ASSERT_EQ(w.kind, ENGINE_WAIT_CHILD);
    ASSERT_EQ(w.child, r.child);
    take(e, m);
    ASSERT(m->fields[r.child] & ENGINE_JF_STEPS);
    ASSERT_EQ(m->rows[0].x.child, r.child);
    ASSERT(!m->rows[0].x.done);
    ASSERT_EQ(lease1(e, T0 + 1, "kids"), r.child);
    engine_err err;
    ASSERT_EQ(engine_ack(e, T0 + 2, r.child, token_of(e, r.child), "{\"ok\":true}", NULL, &err), 0);
    ASSERT_EQ(state_of(e, p), ENGINE_READY);
    take(e, m);
    ASSERT(m->rows[0].x.done);
    ASSERT_STR(m->rows[0].result, "{\"ok\":true}");
    ASSERT_EQ(m->rows[0].x.child_state, ENGINE_SUCCEEDED);
    ASSERT_EQ(lease1(e, T0 + 3, "q"), p);
    ASSERT_EQ(info_of(e, p).attempts, 1);
    must_check(e, T0 + 3);
    engine_destroy(e);
    mini_free(m);
}

TEST(child_that_dies_resumes_the_parent_with_its_error)
{
    engine_t *e = mk_engine();
    mini *m = calloc(1, sizeof *m);
    uint64_t p = SUB(e, T0, "t", "q");
    lease1(e, T0, "q");
    engine_step_res r = CHILD_OK(e, T0, p, "sub", "kids");
    lease1(e, T0, "kids");
    take(e, m);
    fail_ok(e, T0 + 1, r.child, (engine_fail_req){.error = "boom", .no_retry = true});
    ASSERT_EQ(state_of(e, r.child), ENGINE_DEAD);
    ASSERT_EQ(state_of(e, p), ENGINE_READY);
    take(e, m);
    ASSERT_STR(m->rows[0].error, "boom");
    ASSERT_EQ(m->rows[0].x.child_state, ENGINE_DEAD);
    must_check(e, T0 + 1);
    engine_destroy(e);
    mini_free(m);
}

TEST(child_cancelled_with_its_parent)
{
    engine_t *e = mk_engine();
    uint64_t p1 = SUB(e, T0, "t", "q"), p2 = SUB(e, T0, "t", "q");
    lease1(e, T0, "q");
    lease1(e, T0, "q");
    engine_step_res r1 = CHILD_OK(e, T0, p1, "sub", "kids"); /* not leased */
    engine_step_res r2 = CHILD_OK(e, T0, p2, "sub", "kids");
    ASSERT_EQ(lease1(e, T0, "kids"), r1.child);
    ASSERT_EQ(lease1(e, T0, "kids"), r2.child);
    /* p1's child, leased: its cancel is requested; p2's grandchild chain */
    engine_step_res g = CHILD_OK(e, T0, r2.child, "grand", "kids2");
    ASSERT_EQ(state_of(e, r2.child), ENGINE_WAITING);
    ASSERT_EQ(engine_cancel(e, T0 + 1, p1, NULL, NULL), 0);
    ASSERT_EQ(state_of(e, p1), ENGINE_CANCELLED);
    ASSERT(info_of(e, r1.child).cancel_requested);
    ASSERT_EQ(engine_cancel(e, T0 + 1, p2, NULL, NULL), 0);
    ASSERT_EQ(state_of(e, r2.child), ENGINE_CANCELLED);
    ASSERT_EQ(state_of(e, g.child), ENGINE_CANCELLED); /* down the chain */
    must_check(e, T0 + 1);
    engine_changes_clear(e);
    must_check(e, T0 + 1);
    engine_destroy(e);
}

TEST(child_bad_specs_are_refused_and_make_nothing)
{
    engine_t *e = mk_engine();
    engine_queue_settings qs = queue_settings(e, "m");
    qs.merge = true;
    set_queue(e, "m", qs);
    uint64_t p = SUB(e, T0, "t", "q");
    lease1(e, T0, "q");
    uint64_t next = engine_next_id(e);
    engine_step_req r = {.name = "sub", .kind = ENGINE_STEP_CHILD};
    r.child.queue = "kids";
    r.child.type = "C";
    r.child.unique = true;
    engine_step_res res;
    engine_err err;
    ASSERT_EQ(engine_step(e, T0, p, token_of(e, p), &r, &res, &err), TENQ_EINVALID);
    ASSERT_STR(err.field, "job");
    r.child.unique = false;
    r.child.queue = "m";
    ASSERT_EQ(engine_step(e, T0, p, token_of(e, p), &r, &res, &err), TENQ_EINVALID);
    r.child.queue = "bad queue";
    ASSERT_EQ(engine_step(e, T0, p, token_of(e, p), &r, &res, &err), TENQ_EINVALID);
    ASSERT_STR(err.field, "job");
    ASSERT(strstr(err.message, "job.queue"));
    ASSERT_EQ(engine_next_id(e), next);
    ASSERT_EQ(state_of(e, p), ENGINE_LEASED);
    ASSERT_EQ(info_of(e, p).n_steps, 0);
    must_check(e, T0);
    engine_destroy(e);
}

/* ---- recovery -------------------------------------------------------------------------------- */

TEST(steps_load_rebuilds_steps_waits_and_kept_events)
{
    engine_t *a = mk_window(60000);
    mini *m = calloc(1, sizeof *m);
    uint64_t run = SUB(a, T0, "t", "q"), ev = SUB(a, T0, "t", "q"), nap = SUB(a, T0, "t", "q"),
             par = SUB(a, T0, "t", "q");
    for (int i = 0; i < 4; i++) lease1(a, T0, "q");
    STEP_OK(a, T0, run, "one", "1");
    STEP_OK(a, T0, run, "two", "22");
    WAIT_OK(a, T0, ev, "w", "key", 5000);
    SLEEP_OK(a, T0, nap, "nap", T0 + 3000);
    engine_step_res c = CHILD_OK(a, T0, par, "sub", "kids");
    send_ok(a, T0, "t", "spare", "{\"kept\":1}");
    take(a, m);
    engine_t *b = reload(a, m, T0 + 1, c.child);
    must_check(b, T0 + 1);
    ASSERT_EQ(info_of(b, run).n_steps, 2);
    ASSERT_EQ(state_of(b, ev), ENGINE_WAITING);
    ASSERT_EQ(state_of(b, par), ENGINE_WAITING);
    ASSERT_EQ(state_of(b, nap), ENGINE_SCHEDULED);
    engine_wait w;
    engine_job_wait(engine_find(b, nap), &w);
    ASSERT_EQ(w.kind, ENGINE_WAIT_SLEEP);
    engine_job_wait(engine_find(b, ev), &w);
    ASSERT_EQ(w.kind, ENGINE_WAIT_EVENT);
    ASSERT_EQ(w.until, T0 + 5000);
    ASSERT_EQ(info_of(b, c.child).awaited_by, par);
    ASSERT_EQ(engine_events_kept(b), 1);
    /* the reloaded engine goes on as the first would */
    engine_event_res er = send_ok(b, T0 + 2, "t", "key", "7");
    ASSERT_EQ(er.delivered, 1);
    ASSERT_EQ(state_of(b, ev), ENGINE_READY);
    uint64_t other = SUB(b, T0 + 2, "t", "q2");
    lease1(b, T0 + 2, "q2");
    engine_step_res r = WAIT_OK(b, T0 + 2, other, "w", "spare", 0);
    ASSERT(r.done);
    ASSERT_STR(r.result, "{\"kept\":1}");
    ASSERT_EQ(lease1(b, T0 + 2, "kids"), c.child);
    ack_ok(b, T0 + 3, c.child);
    ASSERT_EQ(state_of(b, par), ENGINE_READY);
    /* run's retry: its two steps were an earlier attempt's */
    engine_tick(b, T0 + 400000);
    uint64_t ids[8];
    size_t n = lease_q(b, T0 + 400000, "q", 8, ids);
    ASSERT(n >= 1);
    engine_step_res res;
    engine_err err;
    ASSERT_EQ(step_run(b, T0 + 400000, run, "two", "22", &res, &err), TENQ_ECONFLICT);
    must_check(b, T0 + 400000);
    engine_destroy(a);
    engine_destroy(b);
    mini_free(m);
}

TEST(steps_load_a_wait_that_ended_before_the_job_row_was_written)
{
    /* the event's step row is written at once, the job's ready row late:
     * the store says waiting, the step says done -- the job goes on */
    engine_t *a = mk_window(60000);
    mini *m = calloc(1, sizeof *m);
    uint64_t ev = SUB(a, T0, "t", "q");
    lease1(a, T0, "q");
    WAIT_OK(a, T0, ev, "w", "key", 0);
    take(a, m);
    engine_t *snap = reload(a, m, T0, ev); /* the job as stored: waiting */
    send_ok(a, T0 + 1, "t", "key", "1");
    take(a, m); /* the step's row is done */
    engine_t *b = reload(snap, m, T0 + 2, ev);
    must_check(b, T0 + 2);
    ASSERT_EQ(state_of(b, ev), ENGINE_READY);
    ASSERT_EQ(engine_event_waiters(b), 0);
    engine_destroy(a);
    engine_destroy(snap);
    engine_destroy(b);
    mini_free(m);
}
