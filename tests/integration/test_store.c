// SPDX-License-Identifier: Apache-2.0
/* The store, against real SQLite files and a real PostgreSQL (started by
 * tests/with-pg.sh).  Every test runs on both backends. */
#include "engine_helpers.h"

#include "base/clock.h"
#include "store/schema.h"
#include "store/store.h"

#include <errno.h>
#include <libpq-fe.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define T0 1700000000000LL

/* ---- fixtures ---------------------------------------------------------------- */

static const char *pg_base(void)
{
    const char *u = getenv("TENQ_TEST_PG_URL");
    if (!u || !*u)
        test_fail(__FILE__, __LINE__,
                  "PostgreSQL is required: run this under tests/with-pg.sh (ctest does)");
    return u;
}

static void pg_exec(const char *url, const char *sql)
{
    PGconn *c = PQconnectdb(url);
    ASSERT_MSG(PQstatus(c) == CONNECTION_OK, "connect: %s", PQerrorMessage(c));
    PGresult *r = PQexec(c, sql);
    ASSERT_MSG(PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK,
               "%s: %s", sql, PQresultErrorMessage(r));
    PQclear(r);
    PQfinish(c);
}

/* The SQLite stores live in one folder per run of this program, made by the
 * parent before it forks the tests and removed when it exits. */
static char sqlite_base[] = "/tmp/tenq-store-XXXXXX";
static pid_t sqlite_base_owner;

static void remove_sqlite_base(void)
{
    if (getpid() != sqlite_base_owner) return; /* a forked test leaving */
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", sqlite_base);
    if (system(cmd) != 0) fprintf(stderr, "  could not remove %s\n", sqlite_base);
}

__attribute__((constructor)) static void make_sqlite_base(void)
{
    if (!mkdtemp(sqlite_base)) {
        perror("mkdtemp");
        exit(1);
    }
    sqlite_base_owner = getpid();
    atexit(remove_sqlite_base);
}

static void *keep(void *p);

/* A fresh, empty store URL for this backend. */
static char *fresh_url(const char *backend)
{
    static int counter;
    char *url = keep(malloc(1024));
    if (strcmp(backend, "sqlite") == 0) {
        char dir[64];
        snprintf(dir, sizeof dir, "%s/XXXXXX", sqlite_base);
        ASSERT(mkdtemp(dir));
        snprintf(url, 1024, "sqlite:%s/tenq.db", dir);
        return url;
    }
    const char *base = pg_base();
    char db[64], sql[128];
    snprintf(db, sizeof db, "t_%d_%d", (int)getpid(), ++counter);
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", db);
    pg_exec(base, sql);
    const char *slash = strrchr(base, '/');
    snprintf(url, 1024, "%.*s/%s", (int)(slash - base), base, db);
    return url;
}

static store_t *open_ok(const char *url, const store_opts *o)
{
    store_t *s = NULL;
    char err[512] = "";
    int rc = store_open(url, o, &s, err, sizeof err);
    ASSERT_MSG(rc == 0, "store_open(%s): %s (%d)", url, err, rc);
    return s;
}

static store_opts quiet_opts(void)
{
    store_opts o = {0};
    o.no_retention = true;
    return o;
}

static int commit_changes(store_t *s, engine_t *e)
{
    store_batch *b = store_batch_new();
    store_batch_changes(b, e);
    int rc = store_commit_wait(s, b);
    engine_changes_clear(e);
    return rc;
}

/* ---- deep copies of job records ----------------------------------------------- */

/* The copies live until the test's process ends; they stay reachable from
 * here, so LeakSanitizer reports only what the code under test loses. */
static void **kept;
static size_t n_kept, cap_kept;

static void *keep(void *p)
{
    if (n_kept == cap_kept) {
        cap_kept = cap_kept ? 2 * cap_kept : 256;
        kept = realloc(kept, cap_kept * sizeof *kept);
        ASSERT(kept);
    }
    kept[n_kept++] = p;
    return p;
}

static char *dupn(const char *s)
{
    return s ? keep(strdup(s)) : NULL;
}

static engine_job_info info_dup(const engine_job_info *in)
{
    engine_job_info o = *in;
    o.tenant = dupn(in->tenant);
    o.queue = dupn(in->queue);
    o.type = dupn(in->type);
    o.key = dupn(in->key);
    o.args = dupn(in->args);
    o.worker = dupn(in->worker);
    o.error = dupn(in->error);
    o.result = dupn(in->result);
    o.stats = dupn(in->stats);
    o.progress = dupn(in->progress);
    o.unique_key = dupn(in->unique_key);
    o.idempotency_key = dupn(in->idempotency_key);
    o.traceparent = dupn(in->traceparent);
    if (in->payloads) {
        engine_payload *p = keep(calloc(in->n_payloads + 1, sizeof *p));
        for (uint32_t i = 0; i < in->n_payloads; i++) {
            p[i] = in->payloads[i];
            p[i].data = dupn(in->payloads[i].data);
        }
        o.payloads = p;
    }
    return o;
}

static bool str_eq(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void expect_same(const engine_job_info *a, const engine_job_info *b, bool with_result)
{
    unsigned long long id = (unsigned long long)a->id;
#define SAME_INT(f)                                                                                \
    ASSERT_MSG(a->f == b->f, "job %llu: " #f " %lld != %lld", id, (long long)a->f, (long long)b->f)
#define SAME_STR(f)                                                                                \
    ASSERT_MSG(str_eq(a->f, b->f), "job %llu: " #f " \"%s\" != \"%s\"", id,                        \
               a->f ? a->f : "(null)", b->f ? b->f : "(null)")
    SAME_INT(id);
    SAME_STR(tenant);
    SAME_STR(queue);
    SAME_STR(type);
    SAME_STR(key);
    SAME_STR(args);
    SAME_INT(priority);
    SAME_INT(state);
    SAME_INT(attempts);
    SAME_INT(max_attempts);
    SAME_INT(run_at);
    SAME_INT(created_at);
    SAME_INT(ready_at);
    SAME_INT(leased_at);
    SAME_INT(started_at);
    SAME_INT(finished_at);
    SAME_STR(worker);
    SAME_STR(error);
    if (with_result) {
        SAME_STR(result);
        SAME_STR(stats);
    }
    SAME_STR(progress);
    SAME_STR(unique_key);
    SAME_STR(idempotency_key);
    SAME_STR(traceparent);
    SAME_INT(token);
    SAME_INT(lease_until);
    SAME_INT(cancel_requested);
    SAME_INT(merged_into);
    SAME_INT(lane_seq);
    SAME_INT(n_payloads);
    ASSERT_MSG((a->payloads == NULL) == (b->payloads == NULL), "job %llu: payloads presence", id);
    for (uint32_t i = 0; i < a->n_payloads; i++) {
        ASSERT_MSG(str_eq(a->payloads[i].data, b->payloads[i].data), "job %llu payload %u", id, i);
        ASSERT_MSG(a->payloads[i].score == b->payloads[i].score, "job %llu score %u", id, i);
    }
#undef SAME_INT
#undef SAME_STR
}

typedef struct got {
    engine_job_info v[64];
    size_t n;
    int rc;
} got;

static void collect_rows(void *ctx, int rc, const store_rows *rows)
{
    got *g = ctx;
    g->rc = rc;
    for (size_t i = 0; i < rows->n && g->n < 64; i++) g->v[g->n++] = info_dup(&rows->jobs[i]);
}

static engine_job_info read_job(store_t *s, uint64_t id)
{
    got g = {0};
    ASSERT_EQ(store_get_job_sync(s, id, collect_rows, &g), 0);
    ASSERT_MSG(g.n == 1, "job %llu: %zu rows", (unsigned long long)id, g.n);
    return g.v[0];
}

/* Whether the store has a row for the job. */
static bool has_job(store_t *s, uint64_t id)
{
    got g = {0};
    ASSERT_EQ(store_get_job_sync(s, id, collect_rows, &g), 0);
    return g.n == 1;
}

/* Jobs in every state, with every field set somewhere. */
typedef struct world {
    engine_t *e;
    uint64_t ids[32];
    engine_job_info snap[32]; /* each job's last known fields */
    size_t n;
} world;

/* Records the fields of every job of the world still in memory. */
static void snapshot(world *w)
{
    for (size_t i = 0; i < w->n; i++) {
        engine_job *j = engine_find(w->e, w->ids[i]);
        if (!j) continue;
        engine_job_info in;
        engine_job_get(j, &in);
        w->snap[i] = info_dup(&in);
    }
}

static void add_id(world *w, uint64_t id)
{
    for (size_t i = 0; i < w->n; i++)
        if (w->ids[i] == id) return;
    w->ids[w->n++] = id;
}

static void populate(world *w, store_t *s)
{
    engine_t *e = w->e = mk_engine();
    set_slots(e, "acme", 10, 3);
    engine_queue_settings ms = queue_settings(e, "merging");
    ms.merge = true;
    ms.order = ENGINE_ORDER_FAIR;
    ms.tenant_cap = 4;
    ms.backoff = ENGINE_BACKOFF_EXPONENTIAL;
    set_queue(e, "merging", ms);
    engine_queue_settings qs = queue_settings(e, "reports");
    qs.lease_ms = 60000;
    qs.retention_ms = 5000;
    set_queue(e, "reports", qs);
    add_id(w, SUB(e, T0, "acme", "reports", .args = "{\"report\":42,\"name\":\"ü\"}", .priority = 7,
                  .unique_key = "u-1", .idem = "idem-1",
                  .traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
    add_id(w, SUB(e, T0, "acme", "reports", .run_at = T0 + 999999));              /* scheduled */
    add_id(w, SUB(e, T0, "acme", "reports", .key = "lane:1"));                    /* will lease */
    add_id(w, SUB(e, T0, "acme", "reports", .key = "lane:1", .max_attempts = 9)); /* blocked */
    add_id(w, SUB(e, T0, "beta", "reports", .args = "[1,2,3]"));
    engine_submit_res m =
        submit_x(e, T0, "acme", "merging", "Merge.it",
                 (sub_opts){.key = "K", .args = "{\"p\":1}", .has_score = true, .score = 2.5});
    submit_x(e, T0, "acme", "merging", "Merge.it",
             (sub_opts){.key = "K", .args = "{\"p\":0}", .has_score = true, .score = 1.25});
    add_id(w, m.id);
    /* leased, running with progress, cancel requested */
    uint64_t got_ids[8];
    size_t n = lease_q(e, T0 + 10, "reports", 3, got_ids);
    ASSERT_EQ(n, 3);
    for (size_t i = 0; i < n; i++) add_id(w, got_ids[i]);
    engine_start(e, T0 + 11, got_ids[1], token_of(e, got_ids[1]), NULL);
    engine_heartbeat(e, T0 + 12, got_ids[1], token_of(e, got_ids[1]), "{\"pct\":40}", NULL, NULL,
                     NULL);
    engine_cancel(e, T0 + 13, got_ids[2], NULL, NULL);
    /* succeeded with a result; dead with an error; cancelled */
    uint64_t ok = SUB(e, T0 + 20, "acme", "fast");
    lease1(e, T0 + 20, "fast");
    engine_ack(e, T0 + 21, ok, token_of(e, ok), "{\"rows\":3}", "{\"ms\":12}", NULL);
    add_id(w, ok);
    uint64_t dead = SUB(e, T0 + 20, "beta", "fast");
    lease1(e, T0 + 20, "fast");
    fail_ok(e, T0 + 22, dead, (engine_fail_req){.error = "boom: no such file", .no_retry = true});
    add_id(w, dead);
    uint64_t canc = SUB(e, T0 + 20, "beta", "fast", .run_at = T0 + 50000);
    engine_cancel(e, T0 + 23, canc, NULL, NULL);
    add_id(w, canc);
    /* a retry: attempt failed, scheduled with an error */
    uint64_t retry = SUB(e, T0 + 24, "gamma", "slow");
    lease1(e, T0 + 24, "slow");
    fail_ok(e, T0 + 25, retry,
            (engine_fail_req){.error = "try again", .has_retry_in = true, .retry_in_ms = 100000});
    add_id(w, retry);
    /* a lane job that died and was requeued behind a newer one: its lane_seq
     * moved and its finished_at was cleared (not an index-free update) */
    uint64_t l1 = SUB(e, T0 + 26, "gamma", "lanes", .key = "L");
    uint64_t l2 = SUB(e, T0 + 26, "gamma", "lanes", .key = "L");
    lease1(e, T0 + 26, "lanes");
    fail_ok(e, T0 + 27, l1, (engine_fail_req){.error = "x", .no_retry = true});
    add_id(w, l2);
    snapshot(w);                        /* finished jobs leave memory once committed */
    ASSERT_EQ(commit_changes(s, e), 0); /* the death is stored, then the requeue */
    ASSERT_EQ(engine_morgue_requeue(e, T0 + 28, l1, NULL), 0);
    add_id(w, l1);
    snapshot(w);
}

/* ---- the tests -------------------------------------------------------------- */

#define BOTH(name)                                                                                 \
    static void body_##name(const char *backend);                                                  \
    TEST_T(name##_sqlite, 120)                                                                     \
    {                                                                                              \
        body_##name("sqlite");                                                                     \
    }                                                                                              \
    TEST_T(name##_postgres, 120)                                                                   \
    {                                                                                              \
        body_##name("postgres");                                                                   \
    }                                                                                              \
    static void body_##name(const char *backend)

BOTH(round_trip_of_every_field)
{
    char *url = fresh_url(backend);
    store_opts o = quiet_opts();
    store_t *s = open_ok(url, &o);
    ASSERT_STR(store_backend(s), backend);
    world w = {0};
    populate(&w, s);
    ASSERT_EQ(commit_changes(s, w.e), 0);
    for (size_t i = 0; i < w.n; i++) {
        engine_job_info after = read_job(s, w.ids[i]);
        expect_same(&w.snap[i], &after, true);
    }
    /* nothing for an id that does not exist */
    got g = {0};
    ASSERT_EQ(store_get_job_sync(s, 999999, collect_rows, &g), 0);
    ASSERT_EQ(g.n, 0);
    /* pages, newest first, filtered, with a cursor */
    store_job_query q = {.tenant = "acme", .state = -1, .limit = 3};
    g = (got){0};
    ASSERT_EQ(store_list_jobs_sync(s, &q, collect_rows, &g), 0);
    ASSERT_EQ(g.n, 3);
    ASSERT(g.v[0].id > g.v[1].id && g.v[1].id > g.v[2].id);
    for (size_t i = 0; i < g.n; i++) ASSERT_STR(g.v[i].tenant, "acme");
    q.before_id = g.v[2].id;
    got g2 = {0};
    ASSERT_EQ(store_list_jobs_sync(s, &q, collect_rows, &g2), 0);
    ASSERT(g2.n > 0 && g2.v[0].id < g.v[2].id);
    store_job_query qd = {.state = ENGINE_DEAD, .limit = 10};
    got g3 = {0};
    ASSERT_EQ(store_list_jobs_sync(s, &qd, collect_rows, &g3), 0);
    ASSERT_EQ(g3.n, 1);
    ASSERT_STR(g3.v[0].error, "boom: no such file");
    store_close(s);
    engine_destroy(w.e);
}

/* A group this large goes to PostgreSQL by COPY, whose text format has its
 * own escapes: every byte must come back as it went. */
BOTH(a_large_group_keeps_every_byte)
{
    static const char *const nasty[] = {"tab\there", "new\nline", "cr\rlf\r\n", "back\\slash",
                                        "\\.",       "\\N",       "\\\\two",    "quote\"s",
                                        "ü and ✓",   "",          "NULL",       "end\\"};
    size_t nn = sizeof nasty / sizeof nasty[0];
    char *url = fresh_url(backend);
    store_opts o = quiet_opts();
    store_t *s = open_ok(url, &o);
    engine_t *e = mk_engine();
    uint64_t ids[300];
    char args[300][64];
    for (int i = 0; i < 300; i++) {
        snprintf(args[i], sizeof args[i], "{\"i\":%d,\"s\":\"a\\tb\\\\c\\u0001\"}", i);
        ids[i] = SUB(e, T0, "t", "q", .args = args[i]);
    }
    uint64_t leased[250];
    size_t n = lease_q(e, T0 + 1, "q", 250, leased);
    ASSERT_EQ(n, 250);
    bool dead[300] = {0};
    for (size_t i = 0; i < n; i++) {
        fail_ok(e, T0 + 2, leased[i],
                (engine_fail_req){.error = nasty[leased[i] % nn], .no_retry = true});
        dead[leased[i] - ids[0]] = true;
    }
    ASSERT_EQ(commit_changes(s, e), 0);
    store_close(s);
    s = open_ok(url, &o);
    for (int i = 0; i < 300; i++) {
        engine_job_info j = read_job(s, ids[i]);
        ASSERT_STR(j.args, args[i]);
        if (dead[i]) {
            ASSERT_EQ(j.state, ENGINE_DEAD);
            ASSERT_STR(j.error, nasty[ids[i] % nn]);
        } else {
            ASSERT_EQ(j.state, ENGINE_READY);
            ASSERT(j.error == NULL);
        }
    }
    store_close(s);
    engine_destroy(e);
}

/* SQLite writes job rows 16 a statement (inserts; updates; updates that
 * keep a job in its lane place), the last few of a group one at a time:
 * groups of 40 jobs go through all of them, and every field comes back as
 * the engine had it. */
BOTH(rows_written_many_a_statement_keep_every_field)
{
    enum { N = 40 };
    char *url = fresh_url(backend);
    store_opts o = quiet_opts();
    store_t *s = open_ok(url, &o);
    engine_t *e = mk_engine();
    uint64_t ids[N];
    char args[N][48], uniq[N][16];
    engine_job_info snap[N];
    for (int i = 0; i < N; i++) {
        snprintf(args[i], sizeof args[i], "{\"i\":%d,\"s\":\"x\\ny\"}", i);
        snprintf(uniq[i], sizeof uniq[i], "u%d", i);
        ids[i] =
            SUB(e, T0 + i, i % 3 ? "acme" : "beta", "q", .args = args[i], .priority = i % 5 - 2,
                .unique_key = i % 4 ? NULL : uniq[i], .max_attempts = (uint32_t)(2 + i % 3));
    }
    for (int step = 0; step < 3; step++) {
        if (step == 1) { /* leases and starts: they keep the jobs in place */
            uint64_t leased[N];
            ASSERT_EQ(lease_q(e, T0 + 100, "q", 37, leased), 37);
            for (int i = 0; i < 20; i++) {
                engine_start(e, T0 + 101, leased[i], token_of(e, leased[i]), NULL);
                engine_heartbeat(e, T0 + 101, leased[i], token_of(e, leased[i]), "{\"pct\":5}",
                                 NULL, NULL, NULL);
            }
        } else if (step == 2) { /* they move: finished, dead, retried */
            for (int i = 0; i < N; i++) {
                if (state_of(e, ids[i]) != ENGINE_LEASED && state_of(e, ids[i]) != ENGINE_RUNNING)
                    continue;
                if (i % 4 == 0)
                    fail_ok(e, T0 + 102, ids[i],
                            (engine_fail_req){.error = "no", .no_retry = true});
                else if (i % 4 == 1)
                    fail_ok(e, T0 + 102, ids[i],
                            (engine_fail_req){
                                .error = "later", .has_retry_in = true, .retry_in_ms = 5000});
                else
                    engine_ack(e, T0 + 103, ids[i], token_of(e, ids[i]), "{\"r\":1}", "{\"ms\":3}",
                               NULL);
            }
        }
        for (int i = 0; i < N; i++) { /* finished jobs leave memory once committed */
            engine_job *j = engine_find(e, ids[i]);
            if (!j) continue;
            engine_job_info in;
            engine_job_get(j, &in);
            snap[i] = info_dup(&in);
        }
        ASSERT_EQ(commit_changes(s, e), 0);
        for (int i = 0; i < N; i++) {
            engine_job_info after = read_job(s, ids[i]);
            expect_same(&snap[i], &after, true);
        }
    }
    store_close(s);
    engine_destroy(e);
}

/* An update whose job is not in the store breaks an invariant: SQLite
 * refuses the group (nothing of it is written) instead of inserting the row
 * (the 16-row form is an INSERT that turns into updates) or skipping it. */
TEST(an_update_of_a_job_not_in_the_store_is_refused_sqlite)
{
    for (int n = 1; n <= 16; n += 15) { /* the one-row form, the 16-row form */
        char *url = fresh_url("sqlite");
        store_opts o = quiet_opts();
        store_t *s = open_ok(url, &o);
        engine_t *e = mk_engine();
        uint64_t ids[16];
        for (int i = 0; i < n; i++) ids[i] = SUB(e, T0, "t", "q");
        engine_changes_clear(e); /* submitted, never written */
        uint64_t kept = SUB(e, T0, "t", "other");
        uint64_t leased[16];
        ASSERT_EQ(lease_q(e, T0 + 1, "q", (size_t)n, leased), (size_t)n);
        int rc = commit_changes(s, e);
        ASSERT_MSG(rc == TENQ_ECORRUPT, "%d rows: rc %d", n, rc);
        ASSERT(strstr(store_errmsg(s), "not in the store") != NULL);
        got g = {0};
        ASSERT_EQ(store_get_job_sync(s, kept, collect_rows, &g), 0);
        ASSERT_EQ(g.n, 0); /* the group's insert was rolled back with it */
        for (int i = 0; i < n; i++) {
            g = (got){0};
            ASSERT_EQ(store_get_job_sync(s, ids[i], collect_rows, &g), 0);
            ASSERT_EQ(g.n, 0);
        }
        store_close(s);
        engine_destroy(e);
    }
}

typedef struct async_ctx {
    int done;
    size_t n;
} async_ctx;

static void async_rows(void *ctx, int rc, const store_rows *rows)
{
    async_ctx *a = ctx;
    ASSERT_EQ(rc, 0);
    a->n = rows->n;
    a->done++;
}

BOTH(reads_run_on_their_own_thread_and_come_back_through_the_event_fd)
{
    char *url = fresh_url(backend);
    store_opts o = quiet_opts();
    store_t *s = open_ok(url, &o);
    world w = {0};
    populate(&w, s);
    ASSERT_EQ(commit_changes(s, w.e), 0);
    async_ctx a = {0};
    store_get_job(s, w.ids[0], async_rows, &a);
    store_job_query q = {.state = -1, .limit = 100};
    async_ctx b = {0};
    store_list_jobs(s, &q, async_rows, &b);
    for (int i = 0; i < 100 && (a.done == 0 || b.done == 0); i++) {
        struct pollfd p = {.fd = store_event_fd(s), .events = POLLIN};
        poll(&p, 1, 100);
        store_dispatch(s);
    }
    ASSERT_EQ(a.done, 1);
    ASSERT_EQ(a.n, 1);
    ASSERT_EQ(b.done, 1);
    ASSERT(b.n >= w.n);
    store_close(s);
    engine_destroy(w.e);
}

typedef struct commits {
    uint64_t seqs[4096];
    int rcs[4096];
    size_t n;
} commits;

static void on_commit(void *ctx, uint64_t seq, int rc)
{
    commits *c = ctx;
    c->seqs[c->n] = seq;
    c->rcs[c->n++] = rc;
}

static void drain(store_t *s, commits *c, size_t want)
{
    time_t deadline = time(NULL) + 60;
    while (c->n < want && time(NULL) < deadline) {
        struct pollfd p = {.fd = store_event_fd(s), .events = POLLIN};
        poll(&p, 1, 100);
        store_dispatch(s);
    }
    ASSERT_MSG(c->n == want, "%zu of %zu outcomes", c->n, want);
}

/* Hands the engine's changes over as a batch (more = false) or as a part
 * of a chain (more = true). */
static void hand(store_t *s, engine_t *e, bool more)
{
    store_batch *b = store_batch_new();
    store_batch_changes(b, e);
    engine_changes_clear(e);
    if (more)
        store_commit_part(s, b);
    else
        store_commit(s, b);
}

BOTH(batches_arriving_together_share_one_commit)
{
    char *url = fresh_url(backend);
    store_opts o = quiet_opts();
    store_t *s = open_ok(url, &o);
    commits c = {0};
    store_on_commit(s, on_commit, &c);
    engine_t *e = mk_engine();
    enum { N = 2000 };
    for (int i = 0; i < N; i++) {
        SUB(e, T0, "t", "q", .args = "{}");
        hand(s, e, false);
    }
    drain(s, &c, N);
    for (size_t i = 0; i < c.n; i++) {
        ASSERT_EQ(c.rcs[i], 0);
        ASSERT_EQ(c.seqs[i], i + 1); /* in order */
    }
    ASSERT_EQ(store_committed_seq(s), N);
    uint64_t tx, batches;
    store_counters(s, &tx, &batches);
    ASSERT_EQ(batches, N);
    fprintf(stderr, "  %s: %d batches in %llu transactions\n", backend, N, (unsigned long long)tx);
    ASSERT_MSG(tx < N / 4, "%llu transactions for %d batches: no group commit",
               (unsigned long long)tx, N);
    /* every row is there */
    store_job_query q = {.state = -1, .limit = 5};
    got g = {0};
    store_list_jobs_sync(s, &q, collect_rows, &g);
    ASSERT_EQ(g.v[0].id, N);
    store_close(s);
    engine_destroy(e);
}

/* A chain (a big request handed over in parts) is applied as its parts come
 * but committed only with its end, in one transaction: until then nothing of
 * it is reported or visible.  PostgreSQL takes no chains (measured: no gain
 * there, docs/decisions/0009): each part commits on its own, and the server
 * hands over no parts. */
BOTH(a_chain_commits_whole_at_its_end)
{
    char *url = fresh_url(backend);
    store_opts o = quiet_opts();
    store_t *s = open_ok(url, &o);
    commits c = {0};
    store_on_commit(s, on_commit, &c);
    engine_t *e = mk_engine();
    bool chains = strcmp(backend, "sqlite") == 0;
    ASSERT_EQ(store_can_chain(s), chains);
    uint64_t first = 0, last = 0;
    for (int part = 0; part < 3; part++) {
        for (int i = 0; i < 40; i++) {
            last = SUB(e, T0, "t", "q", .args = "{\"n\":1}");
            if (!first) first = last;
        }
        hand(s, e, true);
    }
    if (!chains) { /* each part committed on its own */
        drain(s, &c, 3);
        (void)read_job(s, first);
        store_close(s);
        engine_destroy(e);
        return;
    }
    usleep(300 * 1000); /* time for the writer to apply every part */
    store_dispatch(s);
    ASSERT_EQ(c.n, 0);
    got g = {0};
    store_get_job_sync(s, first, collect_rows, &g);
    ASSERT_EQ(g.n, 0); /* applied, not committed */
    uint64_t end = SUB(e, T0, "t", "q");
    hand(s, e, false);
    drain(s, &c, 4);
    for (size_t i = 0; i < c.n; i++) {
        ASSERT_EQ(c.rcs[i], 0);
        ASSERT_EQ(c.seqs[i], i + 1);
    }
    uint64_t tx, batches;
    store_counters(s, &tx, &batches);
    ASSERT_EQ(tx, 1);
    ASSERT_EQ(batches, 4);
    (void)read_job(s, first);
    (void)read_job(s, last);
    (void)read_job(s, end);
    /* a batch after the chain commits on its own */
    SUB(e, T0, "t", "q");
    hand(s, e, false);
    drain(s, &c, 5);
    ASSERT_EQ(c.rcs[4], 0);
    /* a chain may end with nothing left to write (the batch's last jobs
     * were all duplicates, say): the end still commits it */
    uint64_t alone = SUB(e, T0, "t", "q");
    hand(s, e, true);
    hand(s, e, false);
    drain(s, &c, 7);
    ASSERT_EQ(c.rcs[5], 0);
    ASSERT_EQ(c.rcs[6], 0);
    (void)read_job(s, alone);
    store_counters(s, &tx, &batches);
    ASSERT_EQ(tx, 3);
    store_close(s);
    engine_destroy(e);
}

/* Args of about 4 KB (a JSON string): a few of them fill a small write budget. */
static const char *big_args(void)
{
    static char big[4000];
    memset(big, 'x', sizeof big);
    big[0] = '"';
    big[sizeof big - 2] = '"';
    big[sizeof big - 1] = 0;
    return big;
}

/* A chain that fails keeps nothing, its first part included, and every part
 * and the end are reported failed; then, once the caller has reloaded, the
 * store takes the next batch.  at_commit: the disk fills before the commit
 * (the chain fails as it commits); else the second part is refused (it
 * inserts a job the store has already). */
static void a_chain_fails(bool at_commit)
{
    char *url = fresh_url("sqlite");
    store_opts o = quiet_opts();
    store_t *s = open_ok(url, &o);
    commits c = {0};
    store_on_commit(s, on_commit, &c);
    engine_t *e = mk_engine();
    uint64_t kept = SUB(e, T0, "t", "q");
    hand(s, e, false);
    drain(s, &c, 1);
    ASSERT_EQ(c.rcs[0], 0);
    uint64_t first = SUB(e, T0, "t", "q");
    for (int i = 0; i < 30; i++) SUB(e, T0, "t", "q", .args = "{\"n\":1}");
    hand(s, e, true);
    if (at_commit) {
        usleep(200 * 1000); /* part 1 is applied (and would be durable, were parts committed) */
        store_test_set_write_budget(s, 4096);
        const char *big = big_args();
        for (int i = 0; i < 100; i++) SUB(e, T0, "t", "q", .args = big);
        hand(s, e, true);
    } else {
        engine_job_info again;
        engine_job_get(engine_find(e, kept), &again);
        store_batch *b = store_batch_new();
        store_batch_job(b, &again, ENGINE_JF_NEW);
        store_commit_part(s, b);
    }
    SUB(e, T0, "t", "q");
    hand(s, e, false);
    drain(s, &c, 4);
    for (size_t i = 1; i < 4; i++) {
        if (at_commit)
            ASSERT_EQ(c.rcs[i], TENQ_ENOSPACE);
        else
            ASSERT_MSG(c.rcs[i] != 0, "part %zu reported committed", i);
    }
    store_test_set_write_budget(s, -1);
    store_clear_failure(s);
    uint64_t later = SUB(e, T0, "t", "q");
    hand(s, e, false);
    drain(s, &c, 5);
    ASSERT_EQ(c.rcs[4], 0);
    store_close(s);
    s = open_ok(url, &o);
    (void)read_job(s, kept);
    (void)read_job(s, later);
    got g = {0};
    store_get_job_sync(s, first, collect_rows, &g);
    ASSERT_EQ(g.n, 0);
    store_close(s);
    engine_destroy(e);
}

TEST(a_chain_whose_part_fails_keeps_nothing_of_it_sqlite)
{
    a_chain_fails(false);
}

TEST(a_chain_that_fails_keeps_nothing_of_it_sqlite)
{
    a_chain_fails(true);
}

BOTH(recovery_restores_every_state_lanes_slots_and_leases)
{
    char *url = fresh_url(backend);
    store_opts o = quiet_opts();
    store_t *s = open_ok(url, &o);
    world w = {0};
    populate(&w, s);
    ASSERT_EQ(commit_changes(s, w.e), 0);
    store_close(s);

    s = open_ok(url, &o);
    engine_t *b = mk_engine();
    store_load_stats st;
    ASSERT_EQ(store_load(s, b, T0 + 30, &st), 0);
    must_check(b, T0 + 30);
    size_t resident = 0;
    for (size_t i = 0; i < w.n; i++) {
        engine_job *ja = engine_find(w.e, w.ids[i]);
        engine_job *jb = engine_find(b, w.ids[i]);
        if (!ja) {
            ASSERT(!jb); /* finished: history only */
            continue;
        }
        ASSERT_MSG(jb, "job %llu did not come back", (unsigned long long)w.ids[i]);
        engine_job_info x, y;
        engine_job_get(ja, &x);
        engine_job_get(jb, &y);
        expect_same(&x, &y, false);
        resident++;
    }
    ASSERT_EQ(st.jobs, resident);
    ASSERT(st.tenants >= 3 && st.queues >= 4 && st.idem == 1);
    ASSERT(engine_next_id(b) >= engine_next_id(w.e));
    /* settings came back */
    engine_tenant_settings ts;
    ASSERT_EQ(engine_tenant_get(b, 0, "acme", &ts, NULL), 0);
    ASSERT_EQ(ts.slots, 10);
    ASSERT_EQ(ts.weight, 3);
    engine_queue_settings mq;
    ASSERT_EQ(engine_queue_get(b, 0, "merging", &mq, NULL), 0);
    ASSERT(mq.merge && mq.order == ENGINE_ORDER_FAIR && mq.tenant_cap == 4 &&
           mq.backoff == ENGINE_BACKOFF_EXPONENTIAL);
    /* leases live on: the leased job can still be acked with its token */
    uint64_t leased = 0;
    for (size_t i = 0; i < w.n && !leased; i++)
        if (state_of(w.e, w.ids[i]) == ENGINE_LEASED) leased = w.ids[i];
    ASSERT(leased);
    ASSERT_EQ(engine_ack(b, T0 + 31, leased, token_of(w.e, leased), NULL, NULL, NULL), 0);
    /* idempotency came back */
    engine_submit_res r =
        submit_x(b, T0 + 32, "acme", "reports", "T", (sub_opts){.idem = "idem-1"});
    ASSERT(r.replayed);
    ASSERT_EQ(r.id, w.ids[0]);
    must_check(b, T0 + 32);
    store_close(s);
    engine_destroy(b);
    engine_destroy(w.e);
}

BOTH(a_failed_batch_is_never_reported_committed)
{
    char *url = fresh_url(backend);
    store_opts o = quiet_opts();
    store_t *s = open_ok(url, &o);
    engine_t *e = mk_engine();
    uint64_t first = SUB(e, T0, "t", "q");
    ASSERT_EQ(commit_changes(s, e), 0);
    /* A batch that inserts the same id again violates the primary key. */
    store_batch *b = store_batch_new();
    uint64_t other = SUB(e, T0, "t", "q");
    store_batch_changes(b, e);
    engine_changes_clear(e);
    engine_job_info dupe = read_job(s, first);
    store_batch_job(b, &dupe, ENGINE_JF_NEW);
    int rc = store_commit_wait(s, b);
    ASSERT_EQ(rc, TENQ_ECONSTRAINT);
    ASSERT(strlen(store_errmsg(s)) > 0);
    ASSERT(store_failed(s));
    /* nothing of it was kept: the other job of that batch is not there */
    got g = {0};
    store_get_job_sync(s, other, collect_rows, &g);
    ASSERT_EQ(g.n, 0);
    /* later batches fail too until the caller has reloaded */
    SUB(e, T0, "t", "q");
    ASSERT_EQ(commit_changes(s, e), TENQ_ECONSTRAINT);
    store_clear_failure(s);
    /* the same in a group large enough to go by COPY (PostgreSQL) */
    b = store_batch_new();
    uint64_t many[250];
    for (int i = 0; i < 250; i++) many[i] = SUB(e, T0, "t", "q");
    store_batch_changes(b, e);
    engine_changes_clear(e);
    store_batch_job(b, &dupe, ENGINE_JF_NEW);
    ASSERT_EQ(store_commit_wait(s, b), TENQ_ECONSTRAINT);
    for (int i = 0; i < 250; i += 49) {
        g = (got){0};
        store_get_job_sync(s, many[i], collect_rows, &g);
        ASSERT_EQ(g.n, 0);
    }
    store_clear_failure(s);
    uint64_t after = SUB(e, T0, "t", "q");
    ASSERT_EQ(commit_changes(s, e), 0);
    (void)read_job(s, after);
    store_close(s);
    engine_destroy(e);
}

static void sqlite_exec(const char *path, const char *sql)
{
    sqlite3 *db;
    ASSERT_EQ(sqlite3_open(path, &db), SQLITE_OK);
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    ASSERT_MSG(rc == SQLITE_OK, "%s: %s", sql, msg ? msg : "");
    sqlite3_close(db);
}

/* Runs SQL on the test database whatever the backend ($S: the schema). */
static void raw_sql(const char *backend, const char *url, const char *sql)
{
    char buf[4096];
    size_t k = 0;
    for (const char *p = sql; *p && k < sizeof buf - 8; p++) {
        if (p[0] == '$' && p[1] == 'S') {
            if (strcmp(backend, "postgres") == 0) {
                memcpy(buf + k, "tenq.", 5);
                k += 5;
            }
            p++;
        } else {
            buf[k++] = *p;
        }
    }
    buf[k] = 0;
    if (strcmp(backend, "sqlite") == 0)
        sqlite_exec(url + 7, buf);
    else
        pg_exec(url, buf);
}

BOTH(migrations_upgrade_an_old_database)
{
    char *url = fresh_url(backend);
    store_opts o = quiet_opts();
    o.max_version = 1;
    store_t *s = open_ok(url, &o);
    store_close(s);
    /* rows written by the first layout */
    raw_sql(backend, url,
            "INSERT INTO $Squeues VALUES ('old', 'fifo', 'at-least-once', 300000, 25, 'default', "
            "1000, 3600000, false, 600000, 604800000, 1048576, NULL, 1);"
            "INSERT INTO $Sjobs (id, tenant, queue, type, key, args, priority, state, attempts, "
            "max_attempts, run_at, created_at, ready_at) VALUES "
            "(5, 'acme', 'old', 'T', 'L', '{\"a\":1}', 0, 'ready', 0, 25, 1, 1, 1),"
            "(6, 'acme', 'old', 'T', 'L', '{\"a\":2}', 0, 'blocked', 0, 25, 2, 2, NULL),"
            "(7, 'acme', 'old', 'T', NULL, '{}', 0, 'succeeded', 1, 25, 3, 3, 3);");
    o.max_version = 0;
    s = open_ok(url, &o);
    engine_t *e = mk_engine();
    store_load_stats st;
    ASSERT_EQ(store_load(s, e, T0, &st), 0);
    ASSERT_EQ(st.jobs, 2);
    ASSERT_EQ(state_of(e, 5), ENGINE_READY);
    ASSERT_EQ(state_of(e, 6), ENGINE_BLOCKED);
    ASSERT_EQ(info_of(e, 6).lane_seq, 6); /* backfilled */
    ASSERT_EQ(engine_next_id(e), 8);
    /* and the new columns work */
    ASSERT_EQ(lease1(e, T0, "old"), 5);
    ASSERT_EQ(commit_changes(s, e), 0);
    ASSERT_EQ(read_job(s, 5).state, ENGINE_LEASED);
    store_close(s);
    engine_destroy(e);
}

/* A column of jobs as a store describes it: its type's first word in
 * capitals, whether it is NOT NULL (a primary key is), whether it has a
 * default. */
typedef struct described {
    char name[64], type[32];
    bool notnull, dflt;
} described;

static size_t describe_jobs(const char *backend, const char *url, described *out, size_t max)
{
    size_t n = 0;
    if (strcmp(backend, "sqlite") == 0) {
        sqlite3 *db;
        sqlite3_stmt *st;
        ASSERT_EQ(sqlite3_open(url + 7, &db), SQLITE_OK);
        ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA table_info(jobs)", -1, &st, NULL), SQLITE_OK);
        while (sqlite3_step(st) == SQLITE_ROW && n < max) {
            described *d = &out[n++];
            snprintf(d->name, sizeof d->name, "%s", sqlite3_column_text(st, 1));
            snprintf(d->type, sizeof d->type, "%s", sqlite3_column_text(st, 2));
            d->notnull = sqlite3_column_int(st, 3) || sqlite3_column_int(st, 5);
            d->dflt = sqlite3_column_type(st, 4) != SQLITE_NULL;
        }
        sqlite3_finalize(st);
        sqlite3_close(db);
        return n;
    }
    PGconn *c = PQconnectdb(url);
    ASSERT_MSG(PQstatus(c) == CONNECTION_OK, "connect: %s", PQerrorMessage(c));
    PGresult *r = PQexec(c, "SELECT column_name, upper(data_type), is_nullable = 'NO', "
                            "column_default IS NOT NULL FROM information_schema.columns WHERE "
                            "table_schema = 'tenq' AND table_name = 'jobs'");
    ASSERT_MSG(PQresultStatus(r) == PGRES_TUPLES_OK, "%s", PQresultErrorMessage(r));
    for (int i = 0; i < PQntuples(r) && n < max; i++) {
        described *d = &out[n++];
        snprintf(d->name, sizeof d->name, "%s", PQgetvalue(r, i, 0));
        snprintf(d->type, sizeof d->type, "%s", PQgetvalue(r, i, 1));
        d->notnull = PQgetvalue(r, i, 2)[0] == 't';
        d->dflt = PQgetvalue(r, i, 3)[0] == 't';
    }
    PQclear(r);
    PQfinish(c);
    return n;
}

/* The table of job columns (store/columns.h) is the jobs table a store
 * has after every migration: the same columns, each of the type, NOT NULL
 * and default the row says; nothing more but PostgreSQL's done_in_tx
 * (applications' transactions: pg_txapi.h), which no statement of the
 * server's writes. */
BOTH(the_table_of_job_columns_is_the_stores_jobs_table)
{
    char *url = fresh_url(backend);
    store_opts o = quiet_opts();
    store_close(open_ok(url, &o));
    bool pg = strcmp(backend, "postgres") == 0;
    described have[64];
    size_t n = describe_jobs(backend, url, have, 64);
    bool seen[64] = {false};
    for (int c = 0; c < STORE_JOB_NINS; c++) {
        const store_job_column *col = &store_job_columns[c];
        char *want = store_sql(col->type, pg);
        char type[32];
        snprintf(type, sizeof type, "%.*s", (int)strcspn(want, " "), want);
        size_t k = 0;
        while (k < n && strcmp(have[k].name, col->name) != 0) k++;
        ASSERT_MSG(k < n, "the store has no column %s", col->name);
        seen[k] = true;
        ASSERT_MSG(strcmp(have[k].type, type) == 0, "%s: %s in the store, %s in the table",
                   col->name, have[k].type, type);
        ASSERT_MSG(have[k].notnull == (strstr(want, "NOT NULL") || strstr(want, "PRIMARY KEY")),
                   "%s: NOT NULL differs (the table says \"%s\")", col->name, want);
        ASSERT_MSG(have[k].dflt == (strstr(want, "DEFAULT") != NULL),
                   "%s: a default differs (the table says \"%s\")", col->name, want);
        free(want);
    }
    for (size_t k = 0; k < n; k++)
        ASSERT_MSG(seen[k] || (pg && strcmp(have[k].name, "done_in_tx") == 0),
                   "the store's column %s is not in the table of job columns", have[k].name);
}

/* ---- the limits of applications' transactions -------------------------------
 * The SQL an application calls in its own transaction (store/pg_txapi.h)
 * checks a job as the server would, and its limits come from the
 * server's (engine.h, a queue's defaults).  Each function is tried at
 * each limit and one past it, against the engine's own check of the same
 * job or event: the same verdict, in the same words where both word it. */

/* A job as tenq.problem and engine_submit_check take it. */
typedef struct tx_job {
    const char *tenant, *queue, *type, *args, *key, *unique_key, *idem;
    int64_t run_at;   /* ms, 0: none */
    int32_t priority; /* always given */
    uint32_t max_attempts;
    int64_t timeout_ms;
} tx_job;

static char *repeat_char(char ch, size_t n)
{
    char *s = keep(malloc(n + 1));
    memset(s, ch, n);
    s[n] = 0;
    return s;
}

/* Runs a query of one text value with text parameters: the value (kept;
 * "" for NULL: no problem), or "ERROR: " and the message. */
static const char *tx_query(PGconn *c, const char *sql, int n, const char *const *v)
{
    PGresult *r = PQexecParams(c, sql, n, NULL, v, NULL, NULL, 0);
    char *out = keep(malloc(4096));
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        snprintf(out, 4096, "ERROR: %s", PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY));
    else
        snprintf(out, 4096, "%s", PQgetisnull(r, 0, 0) ? "" : PQgetvalue(r, 0, 0));
    PQclear(r);
    return out;
}

static const char *sql_problem(PGconn *c, const tx_job *j)
{
    char run_at[32], prio[16], att[16], tmo[32];
    snprintf(run_at, sizeof run_at, "%lld", (long long)j->run_at);
    snprintf(prio, sizeof prio, "%d", j->priority);
    snprintf(att, sizeof att, "%u", j->max_attempts);
    snprintf(tmo, sizeof tmo, "%lld", (long long)j->timeout_ms);
    const char *v[10] = {j->tenant, j->queue,
                         j->type,   j->args ? j->args : "{}",
                         j->key,    j->unique_key,
                         j->idem,   j->run_at ? run_at : NULL,
                         prio,      j->max_attempts ? att : NULL};
    const char *p = tx_query(c,
                             "SELECT tenq.problem($1, $2, $3, $4::jsonb, $5, $6, $7, "
                             "to_timestamp($8::bigint / 1000.0), $9::int, $10::int, NULL, NULL, "
                             "NULL)",
                             10, v);
    if (*p || !j->timeout_ms) return p;
    const char *t[1] = {tmo};
    return tx_query(c, "SELECT tenq.timeout_problem($1::bigint, NULL)", 1, t);
}

static const char *c_problem(const tx_job *j)
{
    engine_t *e = mk_engine();
    engine_submit_req r = {.tenant = j->tenant,
                           .queue = j->queue,
                           .type = j->type,
                           .args = j->args,
                           .args_len = j->args ? (uint32_t)strlen(j->args) : 0,
                           .key = j->key,
                           .unique_key = j->unique_key,
                           .idempotency_key = j->idem,
                           .run_at = j->run_at,
                           .has_priority = true,
                           .priority = j->priority,
                           .max_attempts = j->max_attempts,
                           .timeout_ms = j->timeout_ms};
    engine_err err = {0};
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    int rc = engine_submit_check(e, now, &r, &err);
    engine_destroy(e);
    return rc ? keep(strdup(err.message)) : "";
}

/* The job's verdicts agree; and their words, when `words`. */
static void same_verdict(PGconn *c, const tx_job *j, bool words, const char *what)
{
    const char *sql = sql_problem(c, j), *eng = c_problem(j);
    ASSERT_MSG(!*sql == !*eng, "%s: the SQL says \"%s\", the server \"%s\"", what, sql, eng);
    if (words) ASSERT_MSG(strcmp(sql, eng) == 0, "%s: \"%s\" and \"%s\"", what, sql, eng);
}

/* One past a limit is refused, the limit itself taken, by both. */
static void at_limit(PGconn *c, tx_job at, tx_job past, bool words, const char *what)
{
    same_verdict(c, &at, words, what);
    ASSERT_MSG(!*sql_problem(c, &at), "%s: the limit itself is refused", what);
    same_verdict(c, &past, words, what);
    ASSERT_MSG(*sql_problem(c, &past), "%s: one past the limit is taken", what);
}

TEST_T(the_sql_of_transactions_checks_the_servers_limits_postgres, 120)
{
    char *url = fresh_url("postgres");
    store_opts o = quiet_opts();
    store_close(open_ok(url, &o));
    PGconn *c = PQconnectdb(url);
    ASSERT_MSG(PQstatus(c) == CONNECTION_OK, "connect: %s", PQerrorMessage(c));
    const tx_job ok = {.tenant = "acme", .queue = "q", .type = "t"};
    engine_queue_settings qs;
    engine_queue_settings_defaults(&qs);
    tx_job a = ok, b = ok;

    a.tenant = repeat_char('a', ENGINE_NAME_MAX), b.tenant = repeat_char('a', ENGINE_NAME_MAX + 1);
    at_limit(c, a, b, true, "tenant");
    a = ok, b = ok;
    a.queue = repeat_char('q', ENGINE_NAME_MAX), b.queue = repeat_char('q', ENGINE_NAME_MAX + 1);
    at_limit(c, a, b, true, "queue");
    a = ok, b = ok;
    a.type = repeat_char('t', ENGINE_TYPE_MAX), b.type = repeat_char('t', ENGINE_TYPE_MAX + 1);
    at_limit(c, a, b, true, "type");
    const char *key = repeat_char('k', ENGINE_KEY_MAX),
               *key1 = repeat_char('k', ENGINE_KEY_MAX + 1);
    a = ok, b = ok;
    a.key = key, b.key = key1;
    at_limit(c, a, b, true, "key");
    a = ok, b = ok;
    a.unique_key = key, b.unique_key = key1;
    at_limit(c, a, b, true, "unique_key");
    a = ok, b = ok;
    a.idem = key, b.idem = key1;
    at_limit(c, a, b, true, "idempotency_key");
    a = ok, b = ok;
    a.priority = ENGINE_PRIORITY_MAX, b.priority = ENGINE_PRIORITY_MAX + 1;
    at_limit(c, a, b, true, "priority");
    a.priority = ENGINE_PRIORITY_MIN, b.priority = ENGINE_PRIORITY_MIN - 1;
    at_limit(c, a, b, true, "priority");
    a = ok, b = ok;
    a.max_attempts = ENGINE_ATTEMPTS_MAX, b.max_attempts = ENGINE_ATTEMPTS_MAX + 1;
    at_limit(c, a, b, true, "max_attempts");
    /* run_at within a day of the horizon, on either side (the words differ:
     * SQL takes a timestamp) */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000, day = 24LL * 3600 * 1000;
    a = ok, b = ok;
    a.run_at = now + ENGINE_RUN_AT_HORIZON_MS - day,
    b.run_at = now + ENGINE_RUN_AT_HORIZON_MS + day;
    at_limit(c, a, b, false, "run_at");
    /* args as large as a queue takes by default (a JSON string), and one
     * byte more (the words differ: SQL names the queue) */
    char *args = repeat_char('x', qs.max_payload_bytes + 1);
    args[0] = '"', args[qs.max_payload_bytes - 1] = '"', args[qs.max_payload_bytes] = 0;
    char *args1 = repeat_char('x', qs.max_payload_bytes + 1);
    args1[0] = '"', args1[qs.max_payload_bytes] = '"';
    a = ok, b = ok;
    a.args = args, b.args = args1;
    at_limit(c, a, b, false, "args");
    /* a job's own timeout: from a third of the default lease to the most */
    a = ok, b = ok;
    a.timeout_ms = ENGINE_TIMEOUT_MAX_MS, b.timeout_ms = ENGINE_TIMEOUT_MAX_MS + 1;
    at_limit(c, a, b, true, "timeout_ms");
    a.timeout_ms = qs.lease_ms / 3, b.timeout_ms = qs.lease_ms / 3 - 1;
    at_limit(c, a, b, true, "timeout_ms");

    /* tenq.send_event: a tenant's name, a key, a payload as large as an
     * event takes (in a transaction rolled back) */
    struct {
        const char *tenant, *key;
        size_t payload;
        bool ok;
    } ev[] = {
        {repeat_char('a', ENGINE_NAME_MAX), "k", 2, true},
        {repeat_char('a', ENGINE_NAME_MAX + 1), "k", 2, false},
        {"acme", key, 2, true},
        {"acme", key1, 2, false},
        {"acme", "k", ENGINE_EVENT_MAX_BYTES, true},
        {"acme", "k", ENGINE_EVENT_MAX_BYTES + 1, false},
    };
    for (size_t i = 0; i < sizeof ev / sizeof ev[0]; i++) {
        char *payload = repeat_char('p', ev[i].payload);
        payload[0] = payload[ev[i].payload - 1] = '"';
        PQclear(PQexec(c, "BEGIN"));
        const char *v[3] = {ev[i].tenant, ev[i].key, payload};
        const char *sql = tx_query(c, "SELECT tenq.send_event($1, $2, $3::jsonb)::text", 3, v);
        PQclear(PQexec(c, "ROLLBACK"));
        engine_t *e = mk_engine();
        engine_err err = {0};
        engine_event_res res;
        int rc = engine_event_send(e, now, ev[i].tenant, ev[i].key, payload,
                                   (uint32_t)ev[i].payload, NULL, 0, &res, &err);
        engine_destroy(e);
        bool refused = strncmp(sql, "ERROR: ", 7) == 0;
        ASSERT_MSG(refused == !ev[i].ok && (rc != 0) == !ev[i].ok,
                   "event %zu: the SQL says \"%s\", the server \"%s\"", i, sql,
                   rc ? err.message : "");
        if (refused) {
            char want[300];
            snprintf(want, sizeof want, "ERROR: tenq.send_event: %s", err.message);
            ASSERT_MSG(strcmp(sql, want) == 0, "event %zu: \"%s\", not \"%s\"", i, sql, want);
        }
    }
    PQfinish(c);
}

/* Migration 17 gives batches made before it the deaths the store still
 * shows: the dead attempts of their jobs, their dead jobs deleted from the
 * morgue, and one at least when their on_death was made. */
BOTH(migration_17_counts_the_deaths_of_batches_made_before)
{
    char *url = fresh_url(backend);
    store_opts o = quiet_opts();
    o.max_version = 16;
    store_close(open_ok(url, &o));
    raw_sql(
        backend, url,
        "INSERT INTO $Sbatches (id, tenant, created_at, closed_at, total, succeeded, cancelled, "
        "merged, deleted, callbacks, on_complete_job, on_success_job, on_death_job) VALUES "
        "(1, 'acme', 1, 0, 3, 0, 0, 0, 1, '{}', 0, 0, 0),"
        "(2, 'acme', 1, 0, 1, 0, 0, 0, 0, '{}', 0, 0, 99),"
        "(3, 'acme', 1, 0, 1, 0, 0, 0, 0, '{}', 0, 0, 0);"
        "INSERT INTO $Sbatch_jobs (job_id, batch_id, role) VALUES (10, 1, 0), (11, 1, 0), "
        "(12, 1, 3), (13, 3, 0);"
        /* job 10 died twice (requeued between); 11 was retried; 12 is a
         * callback, not one of the batch's jobs; 13 died, of batch 3 */
        "INSERT INTO $Sattempts (job_id, token, attempt, finished_at, outcome, job_state) "
        "VALUES (10, 1, 1, 5, 'failed', 'dead'), (10, 2, 1, 6, 'expired', 'dead'), "
        "(11, 3, 1, 5, 'failed', 'scheduled'), (12, 4, 1, 5, 'failed', 'dead'), "
        "(13, 5, 1, 5, 'timed_out', 'dead');");
    o.max_version = 0;
    store_t *s = open_ok(url, &o);
    engine_t *e = mk_engine();
    store_load_stats st;
    ASSERT_EQ(store_load(s, e, T0, &st), 0);
    const uint64_t want[] = {0, 3, 1, 1};
    for (uint64_t id = 1; id <= 3; id++) {
        engine_batch_info b;
        ASSERT(engine_batch_get(e, id, &b));
        ASSERT_MSG(b.deaths == want[id], "batch %llu: %llu deaths, not %llu",
                   (unsigned long long)id, (unsigned long long)b.deaths,
                   (unsigned long long)want[id]);
    }
    store_close(s);
    engine_destroy(e);
}

BOTH(refuses_a_newer_schema_with_a_message)
{
    char *url = fresh_url(backend);
    store_opts o = quiet_opts();
    store_close(open_ok(url, &o));
    raw_sql(backend, url, "INSERT INTO $Sschema_version VALUES (99, 1)");
    store_t *s = NULL;
    char err[512];
    ASSERT_EQ(store_open(url, &o, &s, err, sizeof err), TENQ_EVERSION);
    ASSERT_MSG(strstr(err, "newer tenq") && strstr(err, "99"), "%s", err);
}

TEST(refuses_a_file_that_is_not_a_tenq_database_sqlite)
{
    char *url = fresh_url("sqlite");
    const char *path = url + 7;
    FILE *f = fopen(path, "w");
    for (int i = 0; i < 5000; i++) fputs("this is not a database\n", f);
    fclose(f);
    store_t *s = NULL;
    char err[512];
    store_opts o = quiet_opts();
    ASSERT_EQ(store_open(url, &o, &s, err, sizeof err), TENQ_ENOT_TENQ);
    ASSERT_MSG(strstr(err, "not a tenq database"), "%s", err);
    /* an SQLite file of some other application */
    unlink(path);
    sqlite_exec(path, "CREATE TABLE customers (id INTEGER PRIMARY KEY)");
    ASSERT_EQ(store_open(url, &o, &s, err, sizeof err), TENQ_ENOT_TENQ);
    ASSERT_MSG(strstr(err, "not a tenq database"), "%s", err);
}

TEST(refuses_a_schema_that_is_not_tenqs_postgres)
{
    char *url = fresh_url("postgres");
    pg_exec(url, "CREATE SCHEMA tenq; CREATE TABLE tenq.customers (id int)");
    store_t *s = NULL;
    char err[512];
    store_opts o = quiet_opts();
    ASSERT_EQ(store_open(url, &o, &s, err, sizeof err), TENQ_ENOT_TENQ);
    ASSERT_MSG(strstr(err, "not tenq"), "%s", err);
}

TEST(refuses_an_unknown_store_url)
{
    store_t *s = NULL;
    char err[512];
    ASSERT_EQ(store_open("mysql://x", NULL, &s, err, sizeof err), TENQ_EINVALID);
    ASSERT_MSG(strstr(err, "sqlite:PATH"), "%s", err);
    ASSERT_EQ(store_open("postgresql://127.0.0.1:1/none", NULL, &s, err, sizeof err),
              TENQ_ECONNECT);
}

BOTH(retention_prunes_old_finished_jobs_in_small_batches)
{
    char *url = fresh_url(backend);
    store_opts o = quiet_opts();
    o.retention_batch = 7;
    store_t *s = open_ok(url, &o);
    engine_t *e = mk_engine();
    engine_queue_settings qs = queue_settings(e, "short");
    qs.retention_ms = 1000;
    set_queue(e, "short", qs);
    engine_queue_settings keep = queue_settings(e, "forever");
    keep.retention_ms = 0;
    set_queue(e, "forever", keep);
    uint64_t old_done[20];
    for (int i = 0; i < 20; i++) {
        old_done[i] = SUB(e, T0, "t", "short");
        lease1(e, T0, "short");
        ack_ok(e, T0 + 10, old_done[i]);
    }
    uint64_t kept = SUB(e, T0, "t", "forever");
    lease1(e, T0, "forever");
    ack_ok(e, T0 + 10, kept);
    uint64_t waiting = SUB(e, T0, "t", "short");
    uint64_t dead = SUB(e, T0, "t", "short", .idem = "old-key");
    lease1(e, T0, "short");
    lease1(e, T0, "short");
    fail_ok(e, T0 + 10, dead, (engine_fail_req){.error = "x", .no_retry = true});
    uint64_t recent = SUB(e, T0 + 5000, "t", "short");
    lease1(e, T0 + 5000, "short");
    ack_ok(e, T0 + 5000, recent);
    ASSERT_EQ(commit_changes(s, e), 0);
    int64_t now = T0 + 5500;
    long total = 0, n;
    int steps = 0;
    while ((n = store_prune_now(s, now)) > 0) {
        ASSERT(n <= 7);
        total += n;
        steps++;
    }
    ASSERT_EQ(n, 0);
    ASSERT_EQ(total, 20);
    ASSERT(steps >= 3);
    got g = {0};
    store_get_job_sync(s, old_done[3], collect_rows, &g);
    ASSERT_EQ(g.n, 0);
    (void)read_job(s, kept);    /* retention 0 keeps forever */
    (void)read_job(s, waiting); /* unfinished */
    (void)read_job(s, dead);    /* in the morgue */
    (void)read_job(s, recent);  /* not old enough */
    /* idempotency keys older than a day go too */
    ASSERT_EQ(store_prune_now(s, T0 + 25LL * 3600 * 1000) >= 1, 1);
    engine_t *b = mk_engine();
    store_load_stats st;
    ASSERT_EQ(store_load(s, b, T0 + 10, &st), 0);
    ASSERT_EQ(st.idem, 0);
    store_close(s);
    engine_destroy(e);
    engine_destroy(b);
}

/* Sets the store's clock to read `at` now. */
static void clock_at(store_t *s, int64_t at)
{
    store_set_clock(s, at, tq_mono_ns());
}

/* The time the store kept, once the writer has kept one at or after `at`. */
static int64_t kept_time(store_t *s, int64_t at)
{
    int64_t known = 0;
    for (int i = 0; i < 500; i++) {
        ASSERT_EQ(store_clock_read(s, &known), 0);
        if (known >= at) return known;
        usleep(10000);
    }
    ASSERT_MSG(0, "the store kept no time at or after %lld (it has %lld)", (long long)at,
               (long long)known);
    return 0;
}

/* SEMANTICS.md, "The clock": the store keeps its caller's time (only ever
 * raised), and retention goes by that clock, never ahead of the kept time plus
 * the monotonic time since it was read: a clock stepped an hour ahead at a
 * start deletes nothing early. */
BOTH(the_clock_is_kept_and_retention_never_runs_ahead_of_it)
{
    char *url = fresh_url(backend);
    store_opts o = quiet_opts();
    store_t *s = open_ok(url, &o);
    int64_t now = store_now(s), known = 0; /* the wall clock at open */
    engine_t *e = mk_engine();
    engine_queue_settings qs = queue_settings(e, "half-hour");
    qs.retention_ms = 30 * 60 * 1000;
    set_queue(e, "half-hour", qs);
    uint64_t done = SUB(e, now - 60000, "t", "half-hour");
    lease1(e, now - 60000, "half-hour");
    ack_ok(e, now - 60000, done); /* finished a minute ago */
    ASSERT_EQ(commit_changes(s, e), 0);
    /* a leading writer keeps its time at once (then every 10 s, and at close) */
    known = kept_time(s, now - 2000);
    ASSERT(known < now + 5000);
    /* a clock set back is not kept: the kept time is only ever raised */
    clock_at(s, now - 3600000);
    store_close(s);
    s = open_ok(url, &o);
    clock_at(s, now - 3600000);
    ASSERT_EQ(store_clock_read(s, &known), 0);
    ASSERT(known >= now - 2000 && known < now + 5000); /* not an hour back */
    store_close(s);

    /* a start an hour ahead: retention's clock stays at the kept time plus
     * the time since it was read */
    s = open_ok(url, &o);
    clock_at(s, now + 3600000);
    ASSERT_EQ(store_clock_read(s, &known), 0);
    ASSERT(known < now + 5000);
    int64_t r = store_retention_clock(s);
    ASSERT_MSG(r >= known && r < known + 5000, "retention's clock %lld, kept %lld", (long long)r,
               (long long)known);
    ASSERT_EQ(store_prune_now(s, store_retention_clock(s)), 0);
    ASSERT(has_job(s, done));
    /* by the caller's clock alone (an hour ahead) it would have gone */
    ASSERT_EQ(store_prune_now(s, store_now(s)), 1);
    ASSERT(!has_job(s, done));
    /* and the time kept at close is the caller's, an hour ahead */
    store_close(s);
    s = open_ok(url, &o);
    ASSERT_EQ(store_clock_read(s, &known), 0);
    ASSERT(known >= now + 3600000);
    store_close(s);
    engine_destroy(e);
}

/* ---- attempt history ------------------------------------------------------------ */

/* How many rows of attempts the job has, counted by SQL of the test's own. */
static long attempt_rows(const char *backend, const char *url, uint64_t id)
{
    char sql[160];
    long n = -1;
    if (strcmp(backend, "sqlite") == 0) {
        snprintf(sql, sizeof sql, "SELECT count(*) FROM attempts WHERE job_id = %llu",
                 (unsigned long long)id);
        sqlite3 *db;
        sqlite3_stmt *st;
        ASSERT_EQ(sqlite3_open(url + 7, &db), SQLITE_OK);
        ASSERT_EQ(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
        ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
        n = (long)sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        sqlite3_close(db);
        return n;
    }
    snprintf(sql, sizeof sql, "SELECT count(*) FROM tenq.attempts WHERE job_id = %llu",
             (unsigned long long)id);
    PGconn *c = PQconnectdb(url);
    ASSERT_MSG(PQstatus(c) == CONNECTION_OK, "connect: %s", PQerrorMessage(c));
    PGresult *r = PQexec(c, sql);
    ASSERT_MSG(PQresultStatus(r) == PGRES_TUPLES_OK, "%s", PQresultErrorMessage(r));
    n = atol(PQgetvalue(r, 0, 0));
    PQclear(r);
    PQfinish(c);
    return n;
}

typedef struct got_attempts {
    bool job;
    engine_state state;
    size_t n;
    engine_attempt_info v[8];
    char err[8][32], worker[8][16], stats[8][32];
} got_attempts;

static void collect_attempts(void *ctx, int rc, const store_attempts *a)
{
    got_attempts *g = ctx;
    ASSERT_EQ(rc, 0);
    g->job = a->job != NULL;
    if (a->job) g->state = a->job->state;
    for (size_t i = 0; i < a->n && g->n < 8; i++) {
        size_t k = g->n++;
        g->v[k] = a->v[i];
        snprintf(g->err[k], sizeof g->err[k], "%s", a->v[i].error ? a->v[i].error : "-");
        snprintf(g->worker[k], sizeof g->worker[k], "%s", a->v[i].worker ? a->v[i].worker : "-");
        snprintf(g->stats[k], sizeof g->stats[k], "%s", a->v[i].stats ? a->v[i].stats : "-");
        g->v[k].error = g->v[k].worker = g->v[k].stats = NULL;
    }
}

static got_attempts read_attempts(store_t *s, uint64_t id)
{
    got_attempts g;
    memset(&g, 0, sizeof g);
    ASSERT_EQ(store_get_attempts_sync(s, id, collect_attempts, &g), 0);
    return g;
}

BOTH(attempts_are_kept_by_token_across_a_reopen_and_go_with_their_job)
{
    char *url = fresh_url(backend);
    store_opts o = quiet_opts();
    store_t *s = open_ok(url, &o);
    engine_t *e = mk_engine();
    engine_queue_settings qs = queue_settings(e, "short");
    qs.retention_ms = 1000;
    set_queue(e, "short", qs);
    /* a: fails twice, then succeeds, all in one batch (each failure's fields
     * as they were, though the next lease overwrote the job's) */
    uint64_t a = SUB(e, T0, "t", "short", .max_attempts = 5);
    ASSERT_EQ(lease1(e, T0, "short"), a);
    uint64_t t1 = token_of(e, a);
    fail_ok(e, T0 + 1, a,
            (engine_fail_req){.error = "first", .stats = "{\"n\":1}", .has_retry_in = true});
    ASSERT_EQ(lease1(e, T0 + 2, "short"), a);
    uint64_t t2 = token_of(e, a);
    fail_ok(e, T0 + 3, a, (engine_fail_req){.error = "second \"quoted\"", .has_retry_in = true});
    ASSERT_EQ(lease1(e, T0 + 4, "short"), a);
    ack_ok(e, T0 + 5, a);
    /* b: dies; c: dies and is deleted before anything of it is written */
    uint64_t b = kill_one(e, T0, "t", "short", "T");
    uint64_t c = kill_one(e, T0, "t", "short", "T");
    ASSERT_EQ(engine_morgue_delete(e, T0 + 6, c, NULL), 0);
    /* d: succeeds first time: no row */
    uint64_t d = SUB(e, T0, "t", "short");
    ASSERT_EQ(lease1(e, T0, "short"), d);
    ack_ok(e, T0 + 1, d);
    ASSERT_EQ(commit_changes(s, e), 0);

    got_attempts g = read_attempts(s, a);
    ASSERT(g.job);
    ASSERT_EQ(g.state, ENGINE_SUCCEEDED);
    ASSERT_EQ(g.n, 2);
    ASSERT_EQ(g.v[0].token, t1);
    ASSERT_EQ(g.v[0].attempt, 1);
    ASSERT_EQ(g.v[0].outcome, ENGINE_ATTEMPT_FAILED);
    ASSERT_EQ(g.v[0].job_state, ENGINE_READY);
    ASSERT_EQ(g.v[0].leased_at, T0);
    ASSERT_EQ(g.v[0].started_at, 0);
    ASSERT_EQ(g.v[0].finished_at, T0 + 1);
    ASSERT_STR(g.err[0], "first");
    ASSERT_STR(g.worker[0], "w1");
    ASSERT_STR(g.stats[0], "{\"n\":1}");
    ASSERT_EQ(g.v[1].token, t2);
    ASSERT_EQ(g.v[1].attempt, 2);
    ASSERT_STR(g.err[1], "second \"quoted\"");
    ASSERT_STR(g.stats[1], "-");
    ASSERT_EQ(read_attempts(s, b).n, 1);
    ASSERT_EQ(read_attempts(s, b).v[0].job_state, ENGINE_DEAD);
    ASSERT_EQ(attempt_rows(backend, url, c), 0);
    ASSERT_EQ(attempt_rows(backend, url, d), 0);
    got_attempts none = read_attempts(s, 999999);
    ASSERT(!none.job);
    ASSERT_EQ(none.n, 0);

    /* kept across a reopen */
    store_close(s);
    s = open_ok(url, &o);
    ASSERT_EQ(read_attempts(s, a).n, 2);
    /* the morgue's delete takes b's rows */
    engine_t *f = mk_engine();
    ASSERT_EQ(store_load(s, f, T0 + 10, NULL), 0);
    ASSERT_EQ(engine_morgue_delete(f, T0 + 10, b, NULL), 0);
    ASSERT_EQ(commit_changes(s, f), 0);
    ASSERT_EQ(attempt_rows(backend, url, b), 0);
    ASSERT_EQ(attempt_rows(backend, url, a), 2);
    /* retention takes a's with a */
    long n;
    while ((n = store_prune_now(s, T0 + 5000)) > 0) {
    }
    ASSERT_EQ(n, 0);
    ASSERT(!has_job(s, a));
    ASSERT_EQ(attempt_rows(backend, url, a), 0);
    store_close(s);
    engine_destroy(f);
    engine_destroy(e);
}

/* ---- dependencies --------------------------------------------------------------- */

/* How many edges name the job as their child, counted by SQL of the test's own. */
static long dep_rows(const char *backend, const char *url, uint64_t child)
{
    char sql[160];
    long n = -1;
    bool lite = strcmp(backend, "sqlite") == 0;
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %sjob_deps WHERE child_id = %llu",
             lite ? "" : "tenq.", (unsigned long long)child);
    if (lite) {
        sqlite3 *db;
        sqlite3_stmt *st;
        ASSERT_EQ(sqlite3_open(url + 7, &db), SQLITE_OK);
        ASSERT_EQ(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
        ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
        n = (long)sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        sqlite3_close(db);
        return n;
    }
    PGconn *c = PQconnectdb(url);
    ASSERT_MSG(PQstatus(c) == CONNECTION_OK, "connect: %s", PQerrorMessage(c));
    PGresult *r = PQexec(c, sql);
    ASSERT_MSG(PQresultStatus(r) == PGRES_TUPLES_OK, "%s", PQresultErrorMessage(r));
    n = atol(PQgetvalue(r, 0, 0));
    PQclear(r);
    PQfinish(c);
    return n;
}

typedef struct got_deps {
    bool job;
    size_t np, nc;
    uint64_t p[8], c[8];
    int ps[8], cs[8];
    char pres[8][32];
} got_deps;

static void collect_deps(void *ctx, int rc, const store_deps *d)
{
    got_deps *g = ctx;
    ASSERT_EQ(rc, 0);
    g->job = d->job != NULL;
    for (size_t i = 0; i < d->n_parents && g->np < 8; i++, g->np++) {
        g->p[g->np] = d->parents[i].id;
        g->ps[g->np] = d->parents[i].state;
        snprintf(g->pres[g->np], sizeof g->pres[0], "%s",
                 d->parents[i].result ? d->parents[i].result : "-");
    }
    for (size_t i = 0; i < d->n_children && g->nc < 8; i++, g->nc++) {
        g->c[g->nc] = d->children[i].id;
        g->cs[g->nc] = d->children[i].state;
    }
}

static got_deps read_deps(store_t *s, uint64_t id)
{
    got_deps g;
    memset(&g, 0, sizeof g);
    ASSERT_EQ(store_get_deps_sync(s, id, collect_deps, &g), 0);
    return g;
}

static uint64_t dep_sub(engine_t *e, const char *q, engine_deps_policy policy, const uint64_t *ids,
                        uint32_t n)
{
    engine_dep_ref refs[4];
    for (uint32_t i = 0; i < n; i++) refs[i] = (engine_dep_ref){.id = ids[i], .index = -1};
    engine_submit_res r = submit_x(
        e, T0, "t", q, "T", (sub_opts){.deps = refs, .n_deps = n, .on_parent_failure = policy});
    ASSERT_MSG(r.code == 0, "submit: %s", r.err.message);
    return r.id;
}

BOTH(dependencies_are_kept_with_their_child_and_a_load_rebuilds_the_waits)
{
    char *url = fresh_url(backend);
    store_opts o = quiet_opts();
    store_t *s = open_ok(url, &o);
    engine_t *e = mk_engine();
    engine_queue_settings qs = queue_settings(e, "short");
    qs.retention_ms = 1000;
    set_queue(e, "short", qs);
    uint64_t p1 = SUB(e, T0, "t", "short"), p2 = SUB(e, T0, "t", "long");
    uint64_t c = dep_sub(e, "long", ENGINE_DEPS_CANCEL, (uint64_t[]){p1, p2}, 2);
    uint64_t r = dep_sub(e, "long", ENGINE_DEPS_RUN, (uint64_t[]){p1}, 1);
    ASSERT_EQ(commit_changes(s, e), 0);
    ASSERT_EQ(dep_rows(backend, url, c), 2);
    ASSERT_EQ(lease1(e, T0, "short"), p1);
    ASSERT_EQ(engine_ack(e, T0 + 1, p1, token_of(e, p1), "{\"rows\":3}", NULL, NULL), 0);
    ASSERT_EQ(state_of(e, r), ENGINE_READY);
    /* a child made, run, killed and deleted in one group writes no edge;
     * one deleted from the morgue later loses its edges */
    uint64_t k = kill_one(e, T0, "t", "long", "K");
    uint64_t x = dep_sub(e, "xq", ENGINE_DEPS_RUN, &k, 1);
    uint64_t y = dep_sub(e, "yq", ENGINE_DEPS_RUN, &k, 1);
    ASSERT_EQ(lease1(e, T0, "xq"), x);
    fail_ok(e, T0, x, (engine_fail_req){.error = "x", .no_retry = true});
    ASSERT_EQ(engine_morgue_delete(e, T0, x, NULL), 0);
    ASSERT_EQ(lease1(e, T0, "yq"), y);
    fail_ok(e, T0, y, (engine_fail_req){.error = "y", .no_retry = true});
    ASSERT_EQ(commit_changes(s, e), 0);
    ASSERT_EQ(dep_rows(backend, url, x), 0);
    ASSERT_EQ(dep_rows(backend, url, y), 1);

    got_deps g = read_deps(s, c);
    ASSERT(g.job);
    ASSERT_EQ(g.np, 2);
    ASSERT_EQ(g.p[0], p1);
    ASSERT_EQ(g.ps[0], ENGINE_SUCCEEDED);
    ASSERT_STR(g.pres[0], "{\"rows\":3}");
    ASSERT_EQ(g.p[1], p2);
    ASSERT_EQ(g.ps[1], ENGINE_READY);
    g = read_deps(s, p1);
    ASSERT_EQ(g.np, 0);
    ASSERT_EQ(g.nc, 2);
    ASSERT_EQ(g.c[0], c);
    ASSERT_EQ(g.c[1], r);
    ASSERT(!read_deps(s, 999999).job);

    /* reopened and loaded: c waits for p2 only; r (stored waiting: its ready
     * row is written late by a server; here it was committed ready) runs */
    store_close(s);
    s = open_ok(url, &o);
    engine_t *f = mk_engine();
    ASSERT_EQ(store_load(s, f, T0 + 10, NULL), 0);
    must_check(f, T0 + 10);
    ASSERT_EQ(state_of(f, c), ENGINE_WAITING);
    engine_wait w;
    engine_job_wait(engine_find(f, c), &w);
    ASSERT_EQ(w.n_parents, 1);
    ASSERT_EQ(w.parents[0], p2);
    engine_job_info ci = info_of(f, c);
    ASSERT_EQ(ci.n_parents, 2);
    ASSERT_EQ(ci.parents[0], p1);
    ASSERT_EQ(info_of(f, p2).n_children, 1);
    ASSERT_EQ(state_of(f, r), ENGINE_READY);
    /* the morgue's delete takes y's edges */
    ASSERT_EQ(engine_morgue_delete(f, T0 + 10, y, NULL), 0);
    ASSERT_EQ(commit_changes(s, f), 0);
    ASSERT_EQ(dep_rows(backend, url, y), 0);
    /* retention prunes p1: c keeps its edge, the parent shows gone */
    long n;
    while ((n = store_prune_now(s, T0 + 5000)) > 0) {
    }
    ASSERT(!has_job(s, p1));
    ASSERT_EQ(dep_rows(backend, url, c), 2);
    g = read_deps(s, c);
    ASSERT_EQ(g.np, 2);
    ASSERT_EQ(g.ps[0], -1);
    /* p2 succeeds: c goes on, also after a load */
    ASSERT_EQ(lease1(f, T0 + 20, "long"), p2);
    ack_ok(f, T0 + 21, p2);
    ASSERT_EQ(state_of(f, c), ENGINE_READY);
    ASSERT_EQ(commit_changes(s, f), 0);
    engine_t *h = mk_engine();
    ASSERT_EQ(store_load(s, h, T0 + 30, NULL), 0);
    ASSERT_EQ(state_of(h, c), ENGINE_READY);
    must_check(h, T0 + 30);
    store_close(s);
    engine_destroy(h);
    engine_destroy(f);
    engine_destroy(e);
}

/* ---- durable steps ------------------------------------------------------------ */

static long count_rows(const char *backend, const char *url, const char *table, const char *where)
{
    char sql[256];
    long n = -1;
    bool lite = strcmp(backend, "sqlite") == 0;
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s%s WHERE %s", lite ? "" : "tenq.", table,
             where);
    if (lite) {
        sqlite3 *db;
        sqlite3_stmt *st;
        ASSERT_EQ(sqlite3_open(url + 7, &db), SQLITE_OK);
        ASSERT_EQ(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
        ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
        n = (long)sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        sqlite3_close(db);
        return n;
    }
    PGconn *c = PQconnectdb(url);
    ASSERT_MSG(PQstatus(c) == CONNECTION_OK, "connect: %s", PQerrorMessage(c));
    PGresult *r = PQexec(c, sql);
    ASSERT_MSG(PQresultStatus(r) == PGRES_TUPLES_OK, "%s", PQresultErrorMessage(r));
    n = atol(PQgetvalue(r, 0, 0));
    PQclear(r);
    PQfinish(c);
    return n;
}

typedef struct got_steps {
    bool job;
    size_t n;
    char name[8][32], result[8][64], error[8][32];
    bool done[8];
    int kind[8];
    uint64_t token[8], child[8];
} got_steps;

static void collect_steps(void *ctx, int rc, const store_steps *st)
{
    got_steps *g = ctx;
    ASSERT_EQ(rc, 0);
    g->job = st->job != NULL;
    for (size_t i = 0; i < st->n && g->n < 8; i++, g->n++) {
        const engine_step_info *x = &st->v[i];
        ASSERT_EQ(x->pos, i);
        snprintf(g->name[i], sizeof g->name[0], "%s", x->name);
        snprintf(g->result[i], sizeof g->result[0], "%s", x->result ? x->result : "-");
        snprintf(g->error[i], sizeof g->error[0], "%s", x->error ? x->error : "-");
        g->done[i] = x->done;
        g->kind[i] = x->kind;
        g->token[i] = x->token;
        g->child[i] = x->child;
    }
}

static got_steps read_steps(store_t *s, uint64_t id)
{
    got_steps g;
    memset(&g, 0, sizeof g);
    ASSERT_EQ(store_get_steps_sync(s, id, collect_steps, &g), 0);
    return g;
}

static void step_put(engine_t *e, uint64_t id, engine_step_req r)
{
    engine_step_res res;
    engine_err err;
    if (r.result) r.result_len = (uint32_t)strlen(r.result);
    int rc = engine_step(e, T0, id, token_of(e, id), &r, &res, &err);
    ASSERT_MSG(rc == 0, "step %s: %s", r.name, err.message);
}

BOTH(steps_and_kept_events_are_kept_and_a_load_parks_the_jobs_again)
{
    char *url = fresh_url(backend);
    store_opts o = quiet_opts();
    store_t *s = open_ok(url, &o);
    engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.seed = 42;
    cfg.event_window_ms = 60000;
    engine_t *e = engine_create(&cfg);
    uint64_t run = SUB(e, T0, "t", "qr"), ev = SUB(e, T0, "t", "q"), par = SUB(e, T0, "t", "q"),
             nap = SUB(e, T0, "t", "q");
    ASSERT_EQ(commit_changes(s, e), 0);
    uint64_t ids[4];
    ASSERT_EQ(lease_q(e, T0, "q", 4, ids), 3);
    ASSERT_EQ(lease1(e, T0, "qr"), run);
    step_put(e, run, (engine_step_req){.name = "one", .result = "{\"a\":\"\\u00e9t\\u00e9\"}"});
    step_put(e, run, (engine_step_req){.name = "two", .result = "[1,2]"});
    step_put(e, ev,
             (engine_step_req){
                 .name = "w", .kind = ENGINE_STEP_EVENT, .event = "paid", .timeout_ms = 5000});
    engine_step_req cr = {.name = "sub", .kind = ENGINE_STEP_CHILD};
    cr.child.queue = "kids";
    cr.child.type = "K";
    step_put(e, par, cr);
    uint64_t child = info_of(e, par).n_steps ? 0 : 0;
    for (uint64_t id = par + 1; id < engine_next_id(e); id++)
        if (info_of(e, id).awaited_by == par) child = id;
    ASSERT(child);
    step_put(e, nap,
             (engine_step_req){.name = "nap", .kind = ENGINE_STEP_SLEEP, .until = T0 + 9000});
    engine_event_res er;
    ASSERT_EQ(engine_event_send(e, T0, "t", "spare", "{\"x\":1}", 7, NULL, 0, &er, NULL), 0);
    ASSERT(er.kept);
    ASSERT_EQ(commit_changes(s, e), 0);
    ASSERT_EQ(count_rows(backend, url, "job_steps", "true"), 5);
    ASSERT_EQ(count_rows(backend, url, "events", "true"), 1);
    /* the jobs with steps are loaded first (live 1), the child too */
    ASSERT_EQ(count_rows(backend, url, "jobs", "live = 2"), 0);

    got_steps g = read_steps(s, run);
    ASSERT(g.job);
    ASSERT_EQ(g.n, 2);
    ASSERT_STR(g.name[0], "one");
    ASSERT_STR(g.result[0], "{\"a\":\"\\u00e9t\\u00e9\"}");
    ASSERT_STR(g.result[1], "[1,2]");
    ASSERT_EQ(g.token[0], token_of(e, run));
    ASSERT(g.done[0]);
    g = read_steps(s, par);
    ASSERT_EQ(g.n, 1);
    ASSERT(!g.done[0]);
    ASSERT_EQ(g.kind[0], ENGINE_STEP_CHILD);
    ASSERT_EQ(g.child[0], child);
    ASSERT(!read_steps(s, 999999).job);

    /* reopened and loaded: every wait is as it was */
    store_close(s);
    s = open_ok(url, &o);
    engine_t *f = engine_create(&cfg);
    ASSERT_EQ(store_load(s, f, T0 + 10, NULL), 0);
    must_check(f, T0 + 10);
    ASSERT_EQ(info_of(f, run).n_steps, 2);
    ASSERT_EQ(state_of(f, ev), ENGINE_WAITING);
    ASSERT_EQ(state_of(f, par), ENGINE_WAITING);
    ASSERT_EQ(state_of(f, nap), ENGINE_SCHEDULED);
    ASSERT_EQ(info_of(f, child).awaited_by, par);
    ASSERT_EQ(engine_events_kept(f), 1);
    ASSERT_EQ(engine_event_waiters(f), 1);
    engine_wait w;
    engine_job_wait(engine_find(f, ev), &w);
    ASSERT_EQ(w.kind, ENGINE_WAIT_EVENT);
    ASSERT_EQ(w.until, T0 + 5000);
    engine_job_wait(engine_find(f, nap), &w);
    ASSERT_EQ(w.kind, ENGINE_WAIT_SLEEP);
    /* the event comes: its payload completes the step, in the store too */
    ASSERT_EQ(engine_event_send(f, T0 + 11, "t", "paid", "{\"ok\":1}", 8, NULL, 0, &er, NULL), 0);
    ASSERT_EQ(er.delivered, 1);
    ASSERT_EQ(lease1(f, T0 + 11, "kids"), child);
    ASSERT_EQ(engine_ack(f, T0 + 12, child, token_of(f, child), "\"done\"", NULL, NULL), 0);
    ASSERT_EQ(state_of(f, par), ENGINE_READY);
    ASSERT_EQ(commit_changes(s, f), 0);
    g = read_steps(s, ev);
    ASSERT(g.done[0]);
    ASSERT_STR(g.result[0], "{\"ok\":1}");
    g = read_steps(s, par);
    ASSERT(g.done[0]);
    ASSERT_STR(g.result[0], "\"done\"");
    /* a later load finds the waits ended (the jobs' ready rows may lag) */
    engine_t *h = engine_create(&cfg);
    ASSERT_EQ(store_load(s, h, T0 + 20, NULL), 0);
    must_check(h, T0 + 20);
    ASSERT_EQ(state_of(h, ev), ENGINE_READY);
    ASSERT_EQ(state_of(h, par), ENGINE_READY);
    ASSERT_EQ(engine_event_waiters(h), 0);
    /* the kept event is taken by a wait, and its row goes in that commit */
    uint64_t late = SUB(h, T0 + 20, "t", "q2");
    ASSERT_EQ(lease1(h, T0 + 20, "q2"), late);
    engine_step_res res;
    engine_step_req wr = {.name = "w", .kind = ENGINE_STEP_EVENT, .event = "spare"};
    ASSERT_EQ(engine_step(h, T0 + 20, late, token_of(h, late), &wr, &res, NULL), 0);
    ASSERT(res.done);
    ASSERT_EQ(commit_changes(s, h), 0);
    ASSERT_EQ(count_rows(backend, url, "events", "true"), 0);
    /* a job's deletion deletes its steps; retention prunes expired events */
    ASSERT_EQ(engine_event_send(h, T0 + 21, "t", "old", "1", 1, NULL, 0, &er, NULL), 0);
    engine_tick(h, T0 + 400000); /* run's lease, loaded, expires; its retry comes */
    engine_tick(h, T0 + 500000);
    ASSERT_EQ(lease1(h, T0 + 500000, "qr"), run);
    fail_ok(h, T0 + 500000, run, (engine_fail_req){.error = "x", .no_retry = true});
    ASSERT_EQ(engine_morgue_delete(h, T0 + 500000, run, NULL), 0);
    ASSERT_EQ(commit_changes(s, h), 0);
    ASSERT_EQ(count_rows(backend, url, "job_steps", "true"), 4); /* 6 less run's two */
    ASSERT_EQ(count_rows(backend, url, "events", "true"), 1);
    while (store_prune_now(s, T0 + 21 + 60001) > 0) {
        /* until nothing is left to prune */
    }
    ASSERT_EQ(count_rows(backend, url, "events", "true"), 0);
    store_close(s);
    engine_destroy(h);
    engine_destroy(f);
    engine_destroy(e);
}

TEST(disk_full_fails_the_batch_cleanly_and_keeps_what_was_durable_sqlite)
{
    char *url = fresh_url("sqlite");
    store_opts o = quiet_opts();
    store_t *s = open_ok(url, &o);
    engine_t *e = mk_engine();
    uint64_t kept[50];
    for (int i = 0; i < 50; i++) kept[i] = SUB(e, T0, "t", "q", .args = "{\"n\":1}");
    ASSERT_EQ(commit_changes(s, e), 0);
    /* the disk fills: a big batch cannot be written */
    store_test_set_write_budget(s, 4096);
    const char *big = big_args();
    uint64_t lost[200];
    for (int i = 0; i < 200; i++) lost[i] = SUB(e, T0, "t", "q", .args = big);
    int rc = commit_changes(s, e);
    ASSERT_EQ(rc, TENQ_ENOSPACE);
    ASSERT_MSG(strstr(store_errmsg(s), "full"), "%s", store_errmsg(s));
    /* space comes back: after the caller reloads, writes go on */
    store_test_set_write_budget(s, -1);
    store_clear_failure(s);
    uint64_t later = SUB(e, T0, "t", "q");
    ASSERT_EQ(commit_changes(s, e), 0);
    store_close(s);
    /* everything reported durable is there, nothing of the failed batch */
    s = open_ok(url, &o);
    for (int i = 0; i < 50; i++) (void)read_job(s, kept[i]);
    (void)read_job(s, later);
    got g = {0};
    store_get_job_sync(s, lost[7], collect_rows, &g);
    ASSERT_EQ(g.n, 0);
    store_close(s);
    engine_destroy(e);
}

TEST(reconnects_when_postgres_comes_back_postgres)
{
    char *url = fresh_url("postgres");
    const char *dir = getenv("TENQ_TEST_PG_DIR");
    const char *src = getenv("TENQ_SOURCE_DIR");
    ASSERT_MSG(dir && src, "needs TENQ_TEST_PG_DIR and TENQ_SOURCE_DIR");
    store_opts o = quiet_opts();
    store_t *s = open_ok(url, &o);
    engine_t *e = mk_engine();
    SUB(e, T0, "t", "q");
    ASSERT_EQ(commit_changes(s, e), 0);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s/scripts/pgtmp.sh stop %s", src, dir);
    ASSERT_EQ(system(cmd), 0);
    SUB(e, T0, "t", "q");
    int rc = commit_changes(s, e);
    ASSERT_MSG(rc == TENQ_ECONNECT || rc == TENQ_EIO, "rc %d: %s", rc, store_errmsg(s));
    snprintf(cmd, sizeof cmd, "%s/scripts/pgtmp.sh resume %s", src, dir);
    ASSERT_EQ(system(cmd), 0);
    /* the caller reloads (which reconnects), then carries on */
    engine_t *b = mk_engine();
    int tries = 0;
    while (store_load(s, b, T0, NULL) != 0 && tries++ < 50) {
        engine_destroy(b);
        b = mk_engine();
        usleep(100000);
    }
    ASSERT(tries < 50);
    store_clear_failure(s);
    uint64_t id = SUB(b, T0, "t", "q");
    ASSERT_EQ(commit_changes(s, b), 0);
    ASSERT_EQ(read_job(s, id).id, id);
    store_close(s);
    engine_destroy(e);
    engine_destroy(b);
}

/* A counter of tenq.jobs in pg_stat_user_tables (seq_scan, n_tup_hot_upd...)
 * once every other session of this database (the store's, whose counts
 * arrive when it exits) is gone. */
static long long jobs_stat(const char *url, const char *column)
{
    PGconn *c = PQconnectdb(url);
    ASSERT_MSG(PQstatus(c) == CONNECTION_OK, "connect: %s", PQerrorMessage(c));
    long long n = -1;
    for (int tries = 0; tries < 100 && n < 0; tries++) {
        PGresult *r = PQexec(c, "SELECT count(*) FROM pg_stat_activity WHERE datname = "
                                "current_database() AND pid <> pg_backend_pid() AND "
                                "backend_type = 'client backend'");
        ASSERT(PQresultStatus(r) == PGRES_TUPLES_OK);
        bool alone = atoi(PQgetvalue(r, 0, 0)) == 0;
        PQclear(r);
        if (!alone) {
            usleep(50000);
            continue;
        }
        char sql[256];
        snprintf(sql, sizeof sql,
                 "SELECT pg_stat_clear_snapshot(); SELECT %s FROM pg_stat_user_tables WHERE "
                 "relid = 'tenq.jobs'::regclass",
                 column);
        r = PQexec(c, sql);
        ASSERT_MSG(PQresultStatus(r) == PGRES_TUPLES_OK, "%s", PQresultErrorMessage(r));
        n = atoll(PQgetvalue(r, 0, 0));
        PQclear(r);
    }
    PQfinish(c);
    ASSERT_MSG(n >= 0, "the store's session never went away");
    return n;
}

/* A freshly filled table has stale statistics; left to itself the planner
 * hashed the whole table for every group of updates (5 ms a group at 20,000
 * rows, the whole cost of an ordered drain). Updates go by primary key. */
TEST(updates_find_their_rows_by_key_not_by_scanning_the_table_postgres)
{
    char *url = fresh_url("postgres");
    store_opts o = quiet_opts();
    store_t *s = open_ok(url, &o);
    engine_t *e = mk_engine();
    for (int i = 0; i < 20000; i++) SUB(e, T0, "t", "q", .key = i % 2 ? "odd" : NULL);
    ASSERT_EQ(commit_changes(s, e), 0);
    store_close(s);
    long long before = jobs_stat(url, "seq_scan");
    s = open_ok(url, &o);
    int groups = 0;
    for (; groups < 20; groups++) {
        uint64_t ids[250];
        size_t n = lease_q(e, T0 + 1, "q", 250, ids);
        ASSERT(n > 0);
        for (size_t i = 0; i < n; i++) ack_ok(e, T0 + 2, ids[i]);
        ASSERT_EQ(commit_changes(s, e), 0);
    }
    store_close(s);
    long long after = jobs_stat(url, "seq_scan");
    ASSERT_MSG(after - before < groups / 4, "%lld sequential scans for %d groups of updates",
               after - before, groups);
    engine_destroy(e);
}

/* Opcodes of a statement's program that write an index entry. */
static int index_writes(sqlite3 *db, const char *tmpl)
{
    char *body = store_sql(tmpl, false);
    char sql[4096];
    snprintf(sql, sizeof sql, "EXPLAIN %s", body);
    free(body);
    sqlite3_stmt *st;
    ASSERT_MSG(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK, "%s", sqlite3_errmsg(db));
    int n = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *op = (const char *)sqlite3_column_text(st, 1);
        n += op && (!strcmp(op, "IdxInsert") || !strcmp(op, "IdxDelete"));
    }
    sqlite3_finalize(st);
    return n;
}

/* An update that keeps a job live in its lane place (a lease, a start, a
 * heartbeat) sets no column the indexes read, predicates included: SQLite
 * writes no index entry for it (migration 3 left `state` in the partial
 * indexes' predicates, and each such update rewrote two entries).  The one
 * index it may touch is jobs_plain's (priority and run_at), whose entries
 * only plain jobs have (live = 2), and a plain job's updates are never of
 * the hot form (group_row_hot): SQLite skips that index by its predicate. */
TEST(updates_of_live_jobs_write_no_index_entry_sqlite)
{
    char *url = fresh_url("sqlite");
    store_opts o = quiet_opts();
    store_close(open_ok(url, &o));
    sqlite3 *db;
    ASSERT_EQ(sqlite3_open(url + 7, &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "DROP INDEX jobs_plain", NULL, NULL, NULL), SQLITE_OK);
    char *hot = store_sqlite_job_sql(false, true), *full = store_sqlite_job_sql(false, false);
    ASSERT_EQ(index_writes(db, hot), 0);
    ASSERT(index_writes(db, full) > 0); /* a job that finishes moves */
    free(hot);
    free(full);
    /* the 16-row forms (an INSERT whose conflicts become updates): the hot
     * one writes no more index entries than its insert side, which a job in
     * the store never takes; the other one more */
    char *sql[3] = {store_sqlite_insert_rows_sql(), store_sqlite_job_sql(true, false),
                    store_sqlite_job_sql(true, true)};
    int w[3];
    for (int kind = 0; kind < 3; kind++) {
        w[kind] = index_writes(db, sql[kind]);
        free(sql[kind]);
    }
    ASSERT(w[0] > 0);
    ASSERT_EQ(w[2], w[0]);
    ASSERT(w[1] > w[0]);
    sqlite3_close(db);
}

/* The same on PostgreSQL: such updates are HOT (no index entry, the new row
 * in the same page), which a predicate reading `state` ruled out. */
TEST(updates_of_live_jobs_are_hot_postgres)
{
    char *url = fresh_url("postgres");
    store_opts o = quiet_opts();
    store_t *s = open_ok(url, &o);
    engine_t *e = mk_engine();
    /* keyed: a plain job's lease moves its row from live = 2 to 1 */
    for (int i = 0; i < 2000; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", i);
        SUB(e, T0, "t", "q", .key = key);
    }
    ASSERT_EQ(commit_changes(s, e), 0);
    store_close(s);
    long long before = jobs_stat(url, "n_tup_hot_upd");
    s = open_ok(url, &o);
    for (int g = 0; g < 10; g++) {
        uint64_t ids[100];
        ASSERT_EQ(lease_q(e, T0 + 1, "q", 100, ids), 100);
        ASSERT_EQ(commit_changes(s, e), 0);
    }
    store_close(s);
    long long hot = jobs_stat(url, "n_tup_hot_upd") - before;
    ASSERT_MSG(hot >= 100, "%lld of 1,000 lease updates were HOT", hot);
    engine_destroy(e);
}

/* ---- crashes ------------------------------------------------------------------ */

/* The child: commits batches of jobs (each batch: K inserts plus updates of
 * the previous batch's jobs) and reports each committed batch on the pipe.
 * Its ids continue from what the store already holds. */
static void crash_child(const char *url, int fd)
{
    store_opts o = quiet_opts();
    store_t *s = open_ok(url, &o);
    engine_t *e = mk_engine();
    ASSERT_EQ(store_load(s, e, T0, NULL), 0);
    int64_t now = T0;
    for (uint64_t round = 0;; round++) {
        uint64_t first = 0, last = 0;
        for (int k = 0; k < 25; k++) {
            char args[64];
            snprintf(args, sizeof args, "{\"round\":%llu}", (unsigned long long)round);
            uint64_t id = SUB(e, now, "t", "q", .args = args);
            if (!first) first = id;
            last = id;
        }
        uint64_t leased[25];
        size_t n = lease_q(e, now, "q", 10, leased);
        for (size_t i = 0; i < n; i++) ack_ok(e, now, leased[i]);
        store_batch *b = store_batch_new();
        store_batch_changes(b, e);
        engine_changes_clear(e);
        ASSERT_EQ(store_commit_wait(s, b), 0);
        char line[64];
        int len = snprintf(line, sizeof line, "%llu %llu\n", (unsigned long long)first,
                           (unsigned long long)last);
        ASSERT(write(fd, line, (size_t)len) == len);
        now++;
    }
}

BOTH(crash_at_random_points_loses_nothing_committed)
{
    char *url = fresh_url(backend);
    store_close(open_ok(url, NULL));
    srand((unsigned)test_seed());
    uint64_t max_reported = 0;
    for (int iter = 0; iter < 20; iter++) {
        int p[2];
        ASSERT(pipe(p) == 0);
        pid_t pid = fork();
        if (pid == 0) {
            close(p[0]);
            crash_child(url, p[1]);
            _exit(0);
        }
        close(p[1]);
        /* killed at a random point after its first commit (a loaded machine may take
         * longer than the whole window to open the store and load it) */
        uint64_t pairs[20000][2];
        size_t np = 0;
        FILE *f = fdopen(p[0], "r");
        unsigned long long a, b;
        if (fscanf(f, "%llu %llu", &a, &b) == 2) {
            pairs[np][0] = a;
            pairs[np][1] = b;
            np++;
        }
        usleep((useconds_t)(rand() % 200000));
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        /* what the child said was committed */
        while (np < 20000 && fscanf(f, "%llu %llu", &a, &b) == 2) {
            pairs[np][0] = a;
            pairs[np][1] = b;
            np++;
        }
        fclose(f);
        /* the database opens cleanly and holds every reported batch whole */
        store_opts o = quiet_opts();
        store_t *s = open_ok(url, &o);
        engine_t *e = mk_engine();
        ASSERT_EQ(store_load(s, e, T0, NULL), 0);
        must_check(e, T0);
        for (size_t i = 0; i < np; i++) {
            for (uint64_t id = pairs[i][0]; id <= pairs[i][1]; id += 8) {
                got g = {0};
                ASSERT_EQ(store_get_job_sync(s, id, collect_rows, &g), 0);
                ASSERT_MSG(g.n == 1, "iteration %d: committed job %llu is missing", iter,
                           (unsigned long long)id);
            }
            got g = {0};
            store_get_job_sync(s, pairs[i][1], collect_rows, &g);
            ASSERT_MSG(g.n == 1, "iteration %d: last job %llu of a batch is missing", iter,
                       (unsigned long long)pairs[i][1]);
            if (pairs[i][1] > max_reported) max_reported = pairs[i][1];
        }
        store_close(s);
        engine_destroy(e);
    }
    if (strcmp(backend, "sqlite") == 0) {
        sqlite3 *db;
        ASSERT_EQ(sqlite3_open(url + 7, &db), SQLITE_OK);
        sqlite3_stmt *st;
        ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
        ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
        ASSERT_STR((const char *)sqlite3_column_text(st, 0), "ok");
        sqlite3_finalize(st);
        sqlite3_close(db);
    }
    fprintf(stderr, "  %s: 20 kills, %llu jobs committed\n", backend,
            (unsigned long long)max_reported);
    ASSERT(max_reported > 100);
}

/* ---- leadership ----------------------------------------------------------------- */

static store_node node_named(const char *node, int64_t ttl_ms)
{
    return (store_node){node, "http://127.0.0.1:1", "test-host", (int)getpid(), ttl_ms};
}

static store_opts elect_opts(const char *node)
{
    store_opts o = quiet_opts();
    o.elect = true;
    o.node = node;
    return o;
}

BOTH(every_leadership_and_reload_gets_a_higher_term)
{
    char *url = fresh_url(backend);
    store_node me = node_named("00000000000000a1", 5000);
    store_opts o = elect_opts(me.node);
    uint64_t last = 0;
    for (int i = 0; i < 3; i++) {
        store_t *s = open_ok(url, &o);
        uint64_t t = 0, t2 = 0;
        store_leader who;
        ASSERT_EQ(store_campaign(s, &me, &t, &who), 1);
        ASSERT(t > last);
        ASSERT_EQ(store_new_term(s, &me, t, &t2), 0);
        ASSERT_EQ(t2, t + 1);
        last = t2;
        store_close(s);
    }
    ASSERT_EQ(last, 6);
}

/* A batch that no term stands behind is never written, on a store that
 * elects its leader; one under the current term is. */
BOTH(batches_go_only_under_a_term)
{
    char *url = fresh_url(backend);
    store_node me = node_named("00000000000000b1", 5000);
    store_opts o = elect_opts(me.node);
    store_t *s = open_ok(url, &o);
    engine_t *e = mk_engine();
    uint64_t id = SUB(e, T0, "t", "q");
    ASSERT_EQ(commit_changes(s, e), TENQ_ENOT_LEADER);
    ASSERT(!has_job(s, id));
    store_clear_failure(s);
    uint64_t t;
    store_leader who;
    ASSERT_EQ(store_campaign(s, &me, &t, &who), 1);
    store_use_term(s, t);
    id = SUB(e, T0, "t", "q");
    ASSERT_EQ(commit_changes(s, e), 0);
    ASSERT_EQ(read_job(s, id).id, id);
    store_close(s);
    engine_destroy(e);
}

TEST(a_second_server_on_one_file_is_refused_naming_the_first_sqlite)
{
    char *url = fresh_url("sqlite");
    store_opts o = quiet_opts();
    store_t *s = open_ok(url, &o);
    /* another process, as a second `tenq serve` would be */
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    pid_t pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0) {
        store_t *t = NULL;
        char err[512] = "";
        int rc = store_open(url, &o, &t, err, sizeof err);
        char msg[600];
        int n = snprintf(msg, sizeof msg, "%d %s", rc, err);
        ssize_t w = write(fds[1], msg, (size_t)n);
        (void)w;
        _exit(0);
    }
    close(fds[1]);
    char got[600] = "";
    ssize_t n = read(fds[0], got, sizeof got - 1);
    close(fds[0]);
    waitpid(pid, NULL, 0);
    ASSERT(n > 0);
    got[n] = 0;
    char want[64];
    snprintf(want, sizeof want, "%d ", TENQ_EUNAVAILABLE);
    ASSERT_MSG(strncmp(got, want, strlen(want)) == 0, "%s", got);
    snprintf(want, sizeof want, "in use by process %d", (int)getpid());
    ASSERT_MSG(strstr(got, want) != NULL, "%s", got);
    store_close(s);
    /* once the first is gone, the file opens */
    store_close(open_ok(url, &o));
}

TEST(a_term_that_cannot_be_stored_is_refused_sqlite)
{
    char *url = fresh_url("sqlite");
    store_node me = node_named("00000000000000c1", 5000);
    store_opts o = elect_opts(me.node);
    store_t *s = open_ok(url, &o);
    uint64_t t, t2 = 0;
    store_leader who;
    ASSERT_EQ(store_campaign(s, &me, &t, &who), 1);
    store_test_set_write_budget(s, 0);
    int rc = store_new_term(s, &me, t, &t2);
    ASSERT_MSG(rc == TENQ_ENOSPACE, "rc %d: %s", rc, store_errmsg(s));
    store_test_set_write_budget(s, -1);
    ASSERT_EQ(store_new_term(s, &me, t, &t2), 0);
    ASSERT_EQ(t2, t + 1); /* the refused one was never counted */
    store_close(s);
    s = open_ok(url, &o);
    ASSERT_EQ(store_campaign(s, &me, &t, &who), 1);
    ASSERT_EQ(t, t2 + 1);
    store_close(s);
}

/* Two servers on one database: one leads, the other knows who; once the
 * leader resigns the other leads under a higher term, and a write of the
 * old leader's, under its old term, is refused and leaves nothing. */
TEST(one_leader_at_a_time_and_its_old_term_is_fenced_postgres)
{
    char *url = fresh_url("postgres");
    store_node a = node_named("00000000000000d1", 5000), b = node_named("00000000000000d2", 5000);
    store_opts oa = elect_opts(a.node), ob = elect_opts(b.node);
    store_t *sa = open_ok(url, &oa), *sb = open_ok(url, &ob);
    uint64_t ta = 0, tb = 0;
    store_leader who;
    ASSERT_EQ(store_campaign(sa, &a, &ta, &who), 1);
    ASSERT_EQ(store_campaign(sb, &b, &tb, &who), 0);
    ASSERT_STR(who.node, a.node);
    ASSERT_STR(who.advertise, a.advertise);
    ASSERT_EQ(who.term, ta);
    ASSERT(who.expires_in_ms > 0 && who.expires_in_ms <= 5000);
    ASSERT(!who.evicted);
    ASSERT_EQ(store_renew(sa, &a, ta), 0);
    store_use_term(sa, ta);
    engine_t *e = mk_engine();
    uint64_t kept = SUB(e, T0, "t", "q");
    ASSERT_EQ(commit_changes(sa, e), 0);
    store_resign(sa, &a, ta);
    ASSERT_EQ(store_campaign(sb, &b, &tb, &who), 1);
    ASSERT(tb > ta);
    /* the old leader writes on, under its old term: refused, nothing kept */
    uint64_t lost = SUB(e, T0, "t", "q");
    int rc = commit_changes(sa, e);
    ASSERT_MSG(rc == TENQ_ENOT_LEADER, "rc %d: %s", rc, store_errmsg(sa));
    ASSERT(!has_job(sb, lost));
    ASSERT_EQ(read_job(sb, kept).id, kept);
    ASSERT_EQ(store_renew(sa, &a, ta), TENQ_ENOT_LEADER);
    uint64_t t2;
    ASSERT_EQ(store_new_term(sa, &a, ta, &t2), TENQ_ENOT_LEADER);
    store_close(sa);
    store_close(sb);
    engine_destroy(e);
}

/* An application's commit that notifies while the leader's control
 * connection runs a query (a renewal) reaches libpq with that query's
 * answer, which leaves the socket quiet: the wait must see it at once all
 * the same, not at the next renewal. */
TEST(a_notification_read_with_a_renewal_is_news_at_once_postgres)
{
    char *url = fresh_url("postgres");
    store_node me = node_named("00000000000000c7", 5000);
    store_opts o = elect_opts(me.node);
    store_t *s = open_ok(url, &o);
    uint64_t t = 0;
    store_leader who;
    ASSERT_EQ(store_campaign(s, &me, &t, &who), 1);
    ASSERT(!store_inbox_news(s));
    pg_exec(url, "NOTIFY tenq_inbox");
    usleep(200 * 1000); /* the leader's backend has sent it: the renewal reads it */
    ASSERT_EQ(store_renew(s, &me, t), 0);
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    int64_t t0 = tq_mono_ns();
    ASSERT_EQ(store_leader_wait(s, fds[0], 3000), 0);
    ASSERT(store_inbox_news(s));
    ASSERT_MSG(tq_mono_ns() - t0 < 1000000000LL, "the wait took %lld ms",
               (long long)((tq_mono_ns() - t0) / 1000000));
    /* taken once: the next wait sleeps its time */
    ASSERT_EQ(store_leader_wait(s, fds[0], 50), 0);
    ASSERT(!store_inbox_news(s));
    close(fds[0]);
    close(fds[1]);
    store_close(s);
}

/* A leader that stops renewing without dying keeps its connections (and
 * its lock): once its TTL has passed, a campaign ends them, and the next
 * one wins.  The stalled leader's writes are refused after. */
TEST(a_leader_past_its_ttl_is_evicted_postgres)
{
    char *url = fresh_url("postgres");
    store_node a = node_named("00000000000000e1", 1000), b = node_named("00000000000000e2", 1000);
    store_opts oa = elect_opts(a.node), ob = elect_opts(b.node);
    store_t *sa = open_ok(url, &oa), *sb = open_ok(url, &ob);
    uint64_t ta = 0, tb = 0;
    store_leader who;
    ASSERT_EQ(store_campaign(sa, &a, &ta, &who), 1);
    store_use_term(sa, ta);
    ASSERT_EQ(store_campaign(sb, &b, &tb, &who), 0);
    ASSERT(!who.evicted);
    usleep(1200 * 1000);
    ASSERT_EQ(store_campaign(sb, &b, &tb, &who), 0);
    ASSERT(who.evicted);
    int won = 0;
    for (int i = 0; i < 50 && won != 1; i++) {
        won = store_campaign(sb, &b, &tb, &who);
        if (won != 1) usleep(20000);
    }
    ASSERT_EQ(won, 1);
    ASSERT(tb > ta);
    engine_t *e = mk_engine();
    uint64_t lost = SUB(e, T0, "t", "q");
    int rc = commit_changes(sa, e);
    ASSERT_MSG(rc == TENQ_ENOT_LEADER || rc == TENQ_ECONNECT || rc == TENQ_EIO, "rc %d: %s", rc,
               store_errmsg(sa));
    store_clear_failure(sa);
    rc = commit_changes(sa, e); /* on a new connection: the fence */
    ASSERT_MSG(rc == TENQ_ENOT_LEADER, "rc %d: %s", rc, store_errmsg(sa));
    ASSERT(!has_job(sb, lost));
    ASSERT_EQ(store_renew(sa, &a, ta), TENQ_ENOT_LEADER);
    store_close(sa);
    store_close(sb);
    engine_destroy(e);
}

/* A job id is never handed out twice: after retention deleted the newest
 * jobs, and after the morgue's delete of the newest one, a load numbers
 * above every id the store ever had. */
BOTH(ids_are_never_reused_after_the_newest_jobs_are_deleted)
{
    char *url = fresh_url(backend);
    store_opts o = quiet_opts();
    store_t *s = open_ok(url, &o);
    engine_t *e = mk_engine();
    engine_queue_settings qs = queue_settings(e, "short");
    qs.retention_ms = 1000;
    set_queue(e, "short", qs);
    uint64_t last = 0;
    for (int i = 0; i < 3; i++) {
        last = SUB(e, T0, "t", "short");
        lease1(e, T0, "short");
        ack_ok(e, T0 + 10, last);
    }
    ASSERT_EQ(commit_changes(s, e), 0);
    ASSERT_EQ(store_prune_now(s, T0 + 5000), 3);
    engine_t *b = mk_engine();
    ASSERT_EQ(store_load(s, b, T0 + 5000, NULL), 0);
    uint64_t next = SUB(b, T0 + 5000, "t", "short", .max_attempts = 1);
    ASSERT_EQ(next, last + 1);
    lease1(b, T0 + 5000, "short");
    fail_ok(b, T0 + 5000, next, (engine_fail_req){.error = "x", .no_retry = true});
    ASSERT_EQ(commit_changes(s, b), 0);
    engine_err err;
    ASSERT_EQ(engine_morgue_delete(b, T0 + 5000, next, &err), 0);
    ASSERT_EQ(commit_changes(s, b), 0);
    ASSERT(!has_job(s, next));
    engine_t *c = mk_engine();
    ASSERT_EQ(store_load(s, c, T0 + 6000, NULL), 0);
    ASSERT_EQ(SUB(c, T0 + 6000, "t", "short"), next + 1);
    store_close(s);
    engine_destroy(e);
    engine_destroy(b);
    engine_destroy(c);
}
