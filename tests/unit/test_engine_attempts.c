// SPDX-License-Identifier: Apache-2.0
/* Attempt history (SEMANTICS.md "Attempt history"): every attempt that ends
 * without its job succeeding is reported once, as an ENGINE_CH_ATTEMPT
 * change holding its own fields as they were when it ended; a job that
 * succeeds at its first attempt reports none; the current and the
 * successful attempt are the job's own fields (engine_job_attempt). */
#include "engine_helpers.h"

#define T0 1700000000000LL

/* The attempts reported so far, copied out of the change lists. */
typedef struct rec {
    engine_attempt_info a;
    char worker[32], error[128], stats[64];
    bool has_error, has_stats;
} rec;

typedef struct history {
    rec v[32];
    size_t n;
} history;

/* Copies the attempts of the change list, then clears it (as the server
 * does after every request). */
static void take(engine_t *e, history *h)
{
    size_t n;
    const engine_change *c = engine_changes(e, &n);
    for (size_t i = 0; i < n; i++) {
        if (c[i].kind != ENGINE_CH_ATTEMPT) continue;
        ASSERT(h->n < 32);
        rec *r = &h->v[h->n++];
        memset(r, 0, sizeof *r);
        r->a = *c[i].attempt;
        ASSERT_EQ(c[i].id, r->a.job_id);
        snprintf(r->worker, sizeof r->worker, "%s", r->a.worker ? r->a.worker : "");
        r->has_error = r->a.error != NULL;
        r->has_stats = r->a.stats != NULL;
        snprintf(r->error, sizeof r->error, "%s", r->a.error ? r->a.error : "");
        snprintf(r->stats, sizeof r->stats, "%s", r->a.stats ? r->a.stats : "");
        r->a.worker = r->a.error = r->a.stats = NULL; /* freed with the list */
    }
    engine_changes_clear(e);
}

/* Each token at most once. */
static void once_each(const history *h)
{
    for (size_t i = 0; i < h->n; i++)
        for (size_t k = i + 1; k < h->n; k++)
            ASSERT_MSG(h->v[i].a.job_id != h->v[k].a.job_id || h->v[i].a.token != h->v[k].a.token,
                       "attempt with token %llu reported twice",
                       (unsigned long long)h->v[i].a.token);
}

static uint64_t lease_as(engine_t *e, int64_t now, const char *queue, const char *worker)
{
    const char *qs[1] = {queue};
    engine_lease_req req = {.queues = qs, .n_queues = 1, .max = 1, .worker = worker};
    engine_job *out[1];
    return engine_lease(e, now, &req, out) ? engine_job_id(out[0]) : 0;
}

TEST(a_first_attempt_that_succeeds_reports_no_attempt)
{
    engine_t *e = mk_engine();
    history h = {0};
    uint64_t id = SUB(e, T0, "t", "q");
    ASSERT_EQ(lease1(e, T0, "q"), id);
    ASSERT_EQ(engine_start(e, T0 + 1, id, token_of(e, id), NULL), 0);
    ack_ok(e, T0 + 2, id);
    engine_job_info in = info_of(e, id);
    take(e, &h);
    ASSERT_EQ(h.n, 0);
    engine_attempt_info own;
    ASSERT(engine_job_attempt(&in, &own));
    ASSERT_EQ(own.outcome, ENGINE_ATTEMPT_SUCCEEDED);
    ASSERT_EQ(own.attempt, 1);
    ASSERT_EQ(own.leased_at, T0);
    ASSERT_EQ(own.started_at, T0 + 1);
    ASSERT_EQ(own.finished_at, T0 + 2);
    engine_destroy(e);
}

TEST(failed_attempts_keep_their_own_fields_though_the_next_lease_comes_in_the_same_list)
{
    engine_t *e = mk_engine();
    history h = {0};
    uint64_t id = SUB(e, T0, "t", "q", .max_attempts = 5);
    ASSERT_EQ(lease_as(e, T0, "q", "w1"), id);
    uint64_t t1 = token_of(e, id);
    ASSERT_EQ(engine_start(e, T0 + 10, id, t1, NULL), 0);
    ASSERT_EQ(
        fail_ok(e, T0 + 20, id,
                (engine_fail_req){.error = "boom", .stats = "{\"n\":1}", .has_retry_in = true}),
        ENGINE_READY);
    /* leased again, by another worker, before the changes are read */
    ASSERT_EQ(lease_as(e, T0 + 30, "q", "w2"), id);
    uint64_t t2 = token_of(e, id);
    ASSERT(t2 > t1);
    ASSERT_EQ(fail_ok(e, T0 + 40, id, (engine_fail_req){.error = "again", .has_retry_in = true}),
              ENGINE_READY);
    take(e, &h);
    ASSERT_EQ(h.n, 2);
    rec *a = &h.v[0], *b = &h.v[1];
    ASSERT_EQ(a->a.job_id, id);
    ASSERT_EQ(a->a.token, t1);
    ASSERT_EQ(a->a.attempt, 1);
    ASSERT_STR(a->worker, "w1");
    ASSERT_EQ(a->a.leased_at, T0);
    ASSERT_EQ(a->a.started_at, T0 + 10);
    ASSERT_EQ(a->a.finished_at, T0 + 20);
    ASSERT_EQ(a->a.outcome, ENGINE_ATTEMPT_FAILED);
    ASSERT_EQ(a->a.job_state, ENGINE_READY);
    ASSERT_STR(a->error, "boom");
    ASSERT_STR(a->stats, "{\"n\":1}");
    ASSERT_EQ(b->a.token, t2);
    ASSERT_EQ(b->a.attempt, 2);
    ASSERT_STR(b->worker, "w2");
    ASSERT_EQ(b->a.leased_at, T0 + 30);
    ASSERT_EQ(b->a.started_at, 0); /* never started */
    ASSERT_EQ(b->a.finished_at, T0 + 40);
    ASSERT_STR(b->error, "again");
    ASSERT(!b->has_stats); /* its own stats: none, not the first attempt's */
    /* the third succeeds: the job's own fields, no report */
    ASSERT_EQ(lease_as(e, T0 + 50, "q", "w3"), id);
    engine_attempt_info own;
    engine_job_info in = info_of(e, id);
    ASSERT(engine_job_attempt(&in, &own));
    ASSERT_EQ(own.outcome, ENGINE_ATTEMPT_LEASED);
    ASSERT(own.error == NULL); /* the job's error is the last attempt's, not this one's */
    ASSERT_EQ(engine_start(e, T0 + 55, id, token_of(e, id), NULL), 0);
    in = info_of(e, id);
    ASSERT(engine_job_attempt(&in, &own));
    ASSERT_EQ(own.outcome, ENGINE_ATTEMPT_RUNNING);
    ASSERT_EQ(engine_ack(e, T0 + 60, id, token_of(e, id), NULL, "{\"n\":3}", NULL), 0);
    in = info_of(e, id);
    ASSERT(engine_job_attempt(&in, &own));
    ASSERT_EQ(own.outcome, ENGINE_ATTEMPT_SUCCEEDED);
    ASSERT_EQ(own.attempt, 3);
    ASSERT(own.token > t2);
    ASSERT_STR(own.worker, "w3");
    ASSERT_STR(own.stats, "{\"n\":3}");
    ASSERT(own.error == NULL);
    take(e, &h);
    ASSERT_EQ(h.n, 2);
    once_each(&h);
    engine_destroy(e);
}

TEST(an_expired_lease_is_an_expired_attempt)
{
    engine_t *e = mk_engine();
    history h = {0};
    engine_queue_settings qs = queue_settings(e, "q");
    qs.lease_ms = 1000;
    set_queue(e, "q", qs);
    uint64_t id = SUB(e, T0, "t", "q");
    ASSERT_EQ(lease1(e, T0, "q"), id);
    uint64_t t1 = token_of(e, id);
    take(e, &h);
    engine_tick(e, T0 + 999);
    take(e, &h);
    ASSERT_EQ(h.n, 0);
    engine_tick(e, T0 + 1000);
    take(e, &h);
    ASSERT_EQ(h.n, 1);
    ASSERT_EQ(h.v[0].a.outcome, ENGINE_ATTEMPT_EXPIRED);
    ASSERT_EQ(h.v[0].a.token, t1);
    ASSERT_EQ(h.v[0].a.finished_at, T0 + 1000);
    ASSERT_EQ(h.v[0].a.job_state, ENGINE_SCHEDULED); /* in backoff */
    ASSERT_STR(h.v[0].error, "lease expired");
    /* on an at-most-once queue the expiry kills the job */
    qs.delivery = ENGINE_AT_MOST_ONCE;
    set_queue(e, "amo", qs);
    uint64_t x = SUB(e, T0, "t", "amo");
    ASSERT_EQ(lease1(e, T0, "amo"), x);
    engine_tick(e, T0 + 1000);
    take(e, &h);
    ASSERT_EQ(h.n, 2);
    ASSERT_EQ(h.v[1].a.job_id, x);
    ASSERT_EQ(h.v[1].a.outcome, ENGINE_ATTEMPT_EXPIRED);
    ASSERT_EQ(h.v[1].a.job_state, ENGINE_DEAD);
    once_each(&h);
    engine_destroy(e);
}

TEST(an_attempt_past_its_timeout_is_a_timed_out_attempt)
{
    engine_t *e = mk_engine();
    history h = {0};
    engine_queue_settings qs = queue_settings(e, "q");
    qs.lease_ms = 3000;
    qs.timeout_ms = 5000;
    set_queue(e, "q", qs);
    uint64_t id = SUB(e, T0, "t", "q");
    ASSERT_EQ(lease_as(e, T0, "q", "slow"), id);
    uint64_t tok = token_of(e, id);
    int64_t until;
    bool cancel;
    ASSERT_EQ(engine_start(e, T0 + 5, id, tok, NULL), 0);
    ASSERT_EQ(engine_heartbeat(e, T0 + 2500, id, tok, "{\"p\":1}", &until, &cancel, NULL), 0);
    engine_tick(e, T0 + 5000);
    take(e, &h);
    ASSERT_EQ(h.n, 1);
    ASSERT_EQ(h.v[0].a.outcome, ENGINE_ATTEMPT_TIMED_OUT);
    ASSERT_EQ(h.v[0].a.token, tok);
    ASSERT_EQ(h.v[0].a.started_at, T0 + 5);
    ASSERT_STR(h.v[0].worker, "slow");
    ASSERT(strstr(h.v[0].error, "timed out") != NULL);
    engine_destroy(e);
}

TEST(an_attempt_stopped_by_a_cancel_is_a_cancelled_attempt)
{
    engine_t *e = mk_engine();
    history h = {0};
    /* the worker stops it and says so */
    uint64_t a = SUB(e, T0, "t", "q");
    ASSERT_EQ(lease1(e, T0, "q"), a);
    ASSERT_EQ(engine_start(e, T0 + 1, a, token_of(e, a), NULL), 0);
    engine_state st;
    ASSERT_EQ(engine_cancel(e, T0 + 2, a, &st, NULL), 0);
    ASSERT_EQ(st, ENGINE_RUNNING);
    take(e, &h);
    ASSERT_EQ(h.n, 0); /* a request ends nothing */
    ASSERT_EQ(fail_ok(e, T0 + 3, a, (engine_fail_req){.error = "stopped", .cancelled = true}),
              ENGINE_CANCELLED);
    take(e, &h);
    ASSERT_EQ(h.n, 1);
    ASSERT_EQ(h.v[0].a.outcome, ENGINE_ATTEMPT_CANCELLED);
    ASSERT_EQ(h.v[0].a.job_state, ENGINE_CANCELLED);
    ASSERT_STR(h.v[0].error, "stopped");
    /* its lease runs out after the request */
    engine_queue_settings qs = queue_settings(e, "q");
    qs.lease_ms = 1000;
    set_queue(e, "q", qs);
    uint64_t b = SUB(e, T0, "t", "q");
    ASSERT_EQ(lease1(e, T0, "q"), b);
    ASSERT_EQ(engine_cancel(e, T0 + 2, b, NULL, NULL), 0);
    engine_tick(e, T0 + 1000);
    take(e, &h);
    ASSERT_EQ(h.n, 2);
    ASSERT_EQ(h.v[1].a.job_id, b);
    ASSERT_EQ(h.v[1].a.outcome, ENGINE_ATTEMPT_CANCELLED);
    /* a cancelled job that is never leased has no attempt at all */
    uint64_t c = SUB(e, T0, "t", "q");
    ASSERT_EQ(engine_cancel(e, T0 + 2, c, NULL, NULL), 0);
    take(e, &h);
    ASSERT_EQ(h.n, 2);
    /* the worker finished it anyway: a success, reported by the job */
    uint64_t d = SUB(e, T0, "t", "q");
    ASSERT_EQ(lease1(e, T0, "q"), d);
    ASSERT_EQ(engine_cancel(e, T0 + 2, d, NULL, NULL), 0);
    ack_ok(e, T0 + 3, d);
    take(e, &h);
    ASSERT_EQ(h.n, 2);
    once_each(&h);
    engine_destroy(e);
}

TEST(a_dead_job_requeued_from_the_morgue_keeps_counting_tokens)
{
    engine_t *e = mk_engine();
    history h = {0};
    uint64_t id = SUB(e, T0, "t", "q", .max_attempts = 2);
    ASSERT_EQ(lease1(e, T0, "q"), id);
    fail_ok(e, T0 + 1, id, (engine_fail_req){.error = "one", .has_retry_in = true});
    ASSERT_EQ(lease1(e, T0 + 2, "q"), id);
    ASSERT_EQ(fail_ok(e, T0 + 3, id, (engine_fail_req){.error = "two"}), ENGINE_DEAD);
    engine_job_info in = info_of(e, id);
    engine_attempt_info own;
    ASSERT(!engine_job_attempt(&in, &own)); /* dead: its attempts are all rows */
    take(e, &h);
    ASSERT_EQ(h.n, 2);
    ASSERT_EQ(h.v[1].a.attempt, 2);
    ASSERT_EQ(h.v[1].a.job_state, ENGINE_DEAD);
    ASSERT_STR(h.v[1].error, "two");
    ASSERT_EQ(engine_morgue_requeue(e, T0 + 10, id, NULL), 0);
    in = info_of(e, id);
    ASSERT(!engine_job_attempt(&in, &own));
    take(e, &h);
    ASSERT_EQ(h.n, 2); /* a requeue is no attempt */
    ASSERT_EQ(lease1(e, T0 + 11, "q"), id);
    ack_ok(e, T0 + 12, id);
    in = info_of(e, id);
    ASSERT(engine_job_attempt(&in, &own));
    take(e, &h);
    ASSERT_EQ(h.n, 2);
    ASSERT_EQ(own.attempt, 1); /* counted afresh after the requeue */
    ASSERT(own.token > h.v[1].a.token && h.v[1].a.token > h.v[0].a.token);
    ASSERT_EQ(own.outcome, ENGINE_ATTEMPT_SUCCEEDED);
    once_each(&h);
    engine_destroy(e);
}

TEST(a_dead_job_deleted_in_the_same_list_still_reports_its_attempt)
{
    engine_t *e = mk_engine();
    history h = {0};
    uint64_t id = kill_one(e, T0, "t", "q", "T");
    ASSERT_EQ(engine_morgue_delete(e, T0 + 1, id, NULL), 0);
    size_t n;
    const engine_change *c = engine_changes(e, &n);
    bool deleted = false;
    for (size_t i = 0; i < n; i++) deleted |= c[i].kind == ENGINE_CH_JOB_DELETED && c[i].id == id;
    ASSERT(deleted);
    take(e, &h); /* the store writes the row, then the delete takes it away */
    ASSERT_EQ(h.n, 1);
    ASSERT_EQ(h.v[0].a.job_id, id);
    ASSERT_EQ(h.v[0].a.job_state, ENGINE_DEAD);
    engine_destroy(e);
}

TEST(loading_reports_no_attempt_and_outcome_words_round_trip)
{
    for (int o = 0; o < ENGINE_ATTEMPT_NOUTCOMES; o++) {
        const char *w = engine_attempt_outcome_name((engine_attempt_outcome)o);
        ASSERT(w != NULL);
        ASSERT_EQ(engine_attempt_outcome_parse(w), o);
    }
    ASSERT_EQ(engine_attempt_outcome_parse("nope"), -1);
    ASSERT(engine_attempt_outcome_name(ENGINE_ATTEMPT_NOUTCOMES) == NULL);
    engine_t *e = mk_engine();
    uint64_t id = SUB(e, T0, "t", "q");
    ASSERT_EQ(lease1(e, T0, "q"), id);
    engine_job_info in = info_of(e, id);
    engine_t *f = mk_engine();
    engine_loading(f, true);
    ASSERT_EQ(engine_load_job(f, T0, &in, NULL), 0);
    engine_loading(f, false);
    engine_changes_clear(f);
    /* the loaded lease expires in f: one attempt, with the loaded fields */
    history h = {0};
    engine_tick(f, in.lease_until);
    take(f, &h);
    ASSERT_EQ(h.n, 1);
    ASSERT_EQ(h.v[0].a.token, in.token);
    ASSERT_EQ(h.v[0].a.leased_at, T0);
    ASSERT_STR(h.v[0].worker, "w1");
    engine_destroy(f);
    engine_destroy(e);
}
