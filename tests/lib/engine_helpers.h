// SPDX-License-Identifier: Apache-2.0
/* Helpers for engine tests: short calls that assert success. */
#ifndef TENQ_TEST_ENGINE_HELPERS_H
#define TENQ_TEST_ENGINE_HELPERS_H

#include "runner.h"

#include "engine/engine.h"

static inline engine_t *mk_engine(void)
{
    engine_config c;
    engine_config_defaults(&c);
    c.seed = 42;
    return engine_create(&c);
}

static inline void must_check(engine_t *e, int64_t now)
{
    char buf[512];
    if (engine_check(e, now, buf, sizeof buf) != 0) test_fail(__FILE__, __LINE__, "%s", buf);
}

typedef struct sub_opts {
    uint64_t id; /* 0: the engine's next */
    const char *key, *args, *unique_key, *idem, *traceparent;
    int32_t priority;
    int64_t run_at;
    uint32_t max_attempts;
    int64_t timeout_ms;
    bool unique, has_score;
    double score;
    const engine_dep_ref *deps; /* depends_on */
    uint32_t n_deps;
    engine_deps_policy on_parent_failure;
    const engine_limit_key *ckeys; /* concurrency keys */
    uint32_t n_ckeys;
    const engine_rate_key *rate_keys;
    uint32_t n_rate_keys;
    int64_t expire_at, start_within_ms, debounce_ms, debounce_max_ms;
} sub_opts;

static inline engine_submit_res submit_x(engine_t *e, int64_t now, const char *tenant,
                                         const char *queue, const char *type, sub_opts o)
{
    engine_submit_req r = {0};
    r.id = o.id;
    r.tenant = tenant;
    r.queue = queue;
    r.type = type;
    r.key = o.key;
    r.args = o.args;
    r.args_len = o.args ? (uint32_t)strlen(o.args) : 0;
    r.has_priority = o.priority != 0;
    r.priority = o.priority;
    r.run_at = o.run_at;
    r.unique_key = o.unique_key;
    r.unique = o.unique;
    r.idempotency_key = o.idem;
    r.traceparent = o.traceparent;
    r.max_attempts = o.max_attempts;
    r.timeout_ms = o.timeout_ms;
    r.has_score = o.has_score;
    r.score = o.score;
    r.depends_on = o.deps;
    r.n_depends_on = o.n_deps;
    r.on_parent_failure = o.on_parent_failure;
    r.concurrency_keys = o.ckeys;
    r.n_concurrency_keys = o.n_ckeys;
    r.rate_keys = o.rate_keys;
    r.n_rate_keys = o.n_rate_keys;
    r.expire_at = o.expire_at;
    r.start_within_ms = o.start_within_ms;
    r.debounce_ms = o.debounce_ms;
    r.debounce_max_ms = o.debounce_max_ms;
    engine_submit_res res;
    engine_submit(e, now, &r, &res);
    return res;
}

#define SUB(e, now, t, q, ...) sub_ok((e), (now), (t), (q), (sub_opts){__VA_ARGS__}, __LINE__)
static inline uint64_t sub_ok(engine_t *e, int64_t now, const char *t, const char *q, sub_opts o,
                              int line)
{
    engine_submit_res r = submit_x(e, now, t, q, "T", o);
    if (r.code) test_fail(__FILE__, line, "submit failed: %s", r.err.message);
    return r.id;
}

/* Leases from one queue; returns the count, ids in out. */
static inline size_t lease_q(engine_t *e, int64_t now, const char *queue, size_t max, uint64_t *ids)
{
    const char *qs[1] = {queue};
    engine_lease_req req = {.queues = qs, .n_queues = 1, .max = max, .worker = "w1"};
    engine_job *out[256];
    size_t n = engine_lease(e, now, &req, out);
    for (size_t i = 0; i < n; i++) ids[i] = engine_job_id(out[i]);
    return n;
}

static inline uint64_t lease1(engine_t *e, int64_t now, const char *queue)
{
    uint64_t id = 0;
    return lease_q(e, now, queue, 1, &id) ? id : 0;
}

static inline uint64_t token_of(engine_t *e, uint64_t id)
{
    engine_job *j = engine_find(e, id);
    if (!j) return 0;
    engine_job_info in;
    engine_job_get(j, &in);
    return in.token;
}

static inline engine_job_info info_of(engine_t *e, uint64_t id)
{
    engine_job_info in;
    memset(&in, 0, sizeof in);
    engine_job *j = engine_find(e, id);
    if (j) engine_job_get(j, &in);
    return in;
}

static inline int state_of(engine_t *e, uint64_t id)
{
    engine_job *j = engine_find(e, id);
    return j ? (int)engine_job_state(j) : -1;
}

static inline void ack_ok(engine_t *e, int64_t now, uint64_t id)
{
    engine_err err;
    int rc = engine_ack(e, now, id, token_of(e, id), NULL, NULL, &err);
    if (rc) test_fail(__FILE__, __LINE__, "ack %llu: %s", (unsigned long long)id, err.message);
}

static inline engine_state fail_ok(engine_t *e, int64_t now, uint64_t id, engine_fail_req f)
{
    engine_err err;
    engine_state s;
    int rc = engine_fail(e, now, id, token_of(e, id), &f, &s, &err);
    if (rc) test_fail(__FILE__, __LINE__, "fail %llu: %s", (unsigned long long)id, err.message);
    return s;
}

/* Submits a job of the type, leases it and fails it with no retry: it dies. */
static inline uint64_t kill_one(engine_t *e, int64_t now, const char *t, const char *q,
                                const char *type)
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

/* One concurrency key (limit 0: not given) as sub_opts fields. */
#define CKEY(k, l) .ckeys = (const engine_limit_key[]){{(k), (l)}}, .n_ckeys = 1

static inline void set_slots(engine_t *e, const char *tenant, uint32_t slots, uint32_t weight)
{
    engine_tenant_settings s;
    engine_tenant_settings_defaults(&s);
    s.slots = slots;
    s.weight = weight;
    engine_err err;
    if (engine_tenant_set(e, 0, tenant, &s, &err)) test_fail(__FILE__, __LINE__, "%s", err.message);
}

static inline engine_queue_settings queue_settings(engine_t *e, const char *q)
{
    engine_queue_settings s;
    if (engine_queue_get(e, 0, q, &s, NULL) != 0) engine_queue_settings_defaults(&s);
    return s;
}

static inline void set_queue(engine_t *e, const char *q, engine_queue_settings s)
{
    engine_err err;
    if (engine_queue_set(e, 0, q, &s, &err)) test_fail(__FILE__, __LINE__, "%s", err.message);
}

/* An engine whose queue "m" merges; msub submits to its lane "K" (score 0: none). */
static inline engine_t *merge_engine(void)
{
    engine_t *e = mk_engine();
    engine_queue_settings s = queue_settings(e, "m");
    s.merge = true;
    set_queue(e, "m", s);
    return e;
}

static inline engine_submit_res msub(engine_t *e, int64_t now, const char *args, double score)
{
    return submit_x(e, now, "t", "m", "T",
                    (sub_opts){.key = "K", .args = args, .has_score = score != 0, .score = score});
}

#endif
