// SPDX-License-Identifier: Apache-2.0
/* libtenq against a real `tenq serve` (TENQ_BIN) on port 0 with a private
 * SQLite file, over real sockets: every call, errors, keep-alive, failover,
 * timeouts, and answers that are not HTTP. */
#include "runner.h"
#include "server_proc.h"

#include "tenq/tenq.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- a server per test ------------------------------------------------------------------------
 */

static tenq_client *client_failover(const char *const *urls, size_t n, const char *token,
                                    int failover_ms)
{
    tenq_options o;
    tenq_options_init(&o);
    o.servers = urls;
    o.nservers = n;
    o.token = token;
    o.connect_timeout_ms = 2000;
    o.request_timeout_ms = 10000;
    o.failover_ms = failover_ms;
    tenq_client *c = NULL;
    int rc = tenq_client_new(&o, &c);
    ASSERT_MSG(rc == 0, "tenq_client_new: %d %s", rc, tenq_errmsg(c));
    return c;
}

static tenq_client *client_for(const char *const *urls, size_t n, const char *token)
{
    return client_failover(urls, n, token, 0);
}

static tenq_client *client(void)
{
    const char *urls[] = {test_server_url};
    return client_for(urls, 1, NULL);
}

/* A port nothing listens on: bound, then closed. */
static int dead_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT(bind(fd, (struct sockaddr *)&a, sizeof a) == 0);
    socklen_t l = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &l);
    close(fd);
    return ntohs(a.sin_port);
}

static uint64_t submit(tenq_client *c, const char *queue, const char *type, const char *args)
{
    tenq_submit_req r = {0};
    r.tenant = "acme";
    r.queue = queue;
    r.type = type;
    r.args_json = args;
    tenq_submit_res res;
    int rc = tenq_submit(c, &r, &res);
    ASSERT_MSG(rc == 0, "submit: %s", tenq_errmsg(c));
    ASSERT(res.created);
    return res.id;
}

/* A lease request for one queue. */
static tenq_lease_req lease_of(const char *const *queue, unsigned max)
{
    tenq_lease_req lr = {0};
    lr.queues = queue;
    lr.nqueues = 1;
    lr.max = max;
    return lr;
}

/* ---- tests ------------------------------------------------------------------------------------
 */

TEST(options_and_bad_urls)
{
    tenq_client *c = NULL;
    ASSERT_EQ(tenq_client_new(NULL, &c), 0); /* the default server, nothing connected yet */
    tenq_client_free(c);
    tenq_client_free(NULL);
    const char *bad[] = {"http://127.0.0.1:7070", "ftp://x"};
    tenq_options o;
    tenq_options_init(&o);
    o.servers = bad;
    o.nservers = 2;
    ASSERT_EQ(tenq_client_new(&o, &c), TENQ_EINVALID);
    ASSERT(c != NULL);
    ASSERT(strstr(tenq_errmsg(c), "ftp://x") != NULL);
    tenq_client_free(c);
    ASSERT(tenq_errmsg(NULL) != NULL);
}

TEST(submit_status_wait_cancel)
{
    test_server_start(NULL);
    tenq_client *c = client();
    tenq_submit_req r = {0};
    r.tenant = "acme";
    r.queue = "reports";
    r.type = "DataReport.execute";
    r.args_json = "{\"report_id\": 42, \"b\": [1, 2]}";
    r.key = "report:42";
    r.has_priority = true;
    r.priority = 7;
    r.max_attempts = 3;
    tenq_submit_res res;
    ASSERT_EQ(tenq_submit(c, &r, &res), 0);
    ASSERT(res.id > 0 && res.created && !res.duplicate);
    ASSERT_EQ(res.state, TENQ_STATE_READY);
    ASSERT_STR(tenq_errmsg(c), "");
    ASSERT_EQ(tenq_errstatus(c), 201);

    tenq_job *j = NULL;
    ASSERT_EQ(tenq_status(c, res.id, &j), 0);
    ASSERT_EQ(j->id, res.id);
    ASSERT_STR(j->tenant, "acme");
    ASSERT_STR(j->queue, "reports");
    ASSERT_STR(j->type, "DataReport.execute");
    ASSERT_STR(j->key, "report:42");
    ASSERT_STR(j->args_json, "{\"b\":[1,2],\"report_id\":42}");
    ASSERT_EQ(j->priority, 7);
    ASSERT_EQ(j->max_attempts, 3);
    ASSERT_EQ(j->state, TENQ_STATE_READY);
    ASSERT(j->created_at > 0 && j->finished_at == 0);
    ASSERT(j->result_json == NULL && j->error == NULL && j->worker == NULL);
    ASSERT(strstr(j->json, "\"report_id\":42") != NULL);
    tenq_job_free(j);

    /* a wait on an unfinished job answers at its timeout, with the state */
    ASSERT_EQ(tenq_wait(c, res.id, 200, &j), 0);
    ASSERT_EQ(j->state, TENQ_STATE_READY);
    ASSERT(!tenq_state_finished(j->state));
    tenq_job_free(j);

    tenq_state st;
    bool requested = true;
    ASSERT_EQ(tenq_cancel(c, res.id, &st, &requested), 0);
    ASSERT_EQ(st, TENQ_STATE_CANCELLED);
    ASSERT(!requested);
    ASSERT_EQ(tenq_wait(c, res.id, 5000, &j), 0);
    ASSERT_EQ(j->state, TENQ_STATE_CANCELLED);
    ASSERT(tenq_state_finished(j->state));
    tenq_job_free(j);
    /* finished jobs cannot be cancelled */
    ASSERT_EQ(tenq_cancel(c, res.id, NULL, NULL), TENQ_ECONFLICT);
    ASSERT_EQ(tenq_errstatus(c), 409);
    ASSERT(strstr(tenq_errmsg(c), "cannot be cancelled") != NULL);

    ASSERT_EQ(tenq_status(c, 999999, &j), TENQ_ENOT_FOUND);
    ASSERT(j == NULL);
    ASSERT_STR(tenq_errmsg(c), "no job 999999");
    ASSERT_STR(tenq_errfield(c), "id");
    tenq_client_free(c);
    test_server_stop();
}

TEST(submit_errors_local_and_remote)
{
    test_server_start(NULL);
    tenq_client *c = client();
    tenq_submit_req r = {0};
    tenq_submit_res res;
    r.tenant = "acme";
    r.queue = "q";
    r.type = "t";
    r.args_json = "{not json";
    ASSERT_EQ(tenq_submit(c, &r, &res), TENQ_EINVALID);
    ASSERT_EQ(res.err, TENQ_EINVALID);
    ASSERT_STR(tenq_errfield(c), "args");
    ASSERT_EQ(tenq_errstatus(c), 0); /* refused before sending */
    r.args_json = NULL;
    r.has_priority = true;
    r.priority = 100000;
    ASSERT_EQ(tenq_submit(c, &r, &res), TENQ_EINVALID);
    ASSERT_EQ(tenq_errstatus(c), 400);
    ASSERT_STR(tenq_errfield(c), "priority");
    ASSERT_STR(res.field, "priority");
    ASSERT(strstr(res.message, "priority") != NULL);
    r.has_priority = false;
    r.queue = NULL;
    ASSERT_EQ(tenq_submit(c, &r, &res), TENQ_EINVALID);
    /* JSON submits: unknown fields are the server's to refuse */
    ASSERT_EQ(
        tenq_submit_json(c, "{\"queue\":\"q\",\"type\":\"t\",\"tenant\":\"a\",\"bogus\":1}", &res),
        TENQ_EINVALID);
    ASSERT(strstr(tenq_errmsg(c), "bogus") != NULL);
    ASSERT_EQ(tenq_submit_json(c, "[1]", &res), TENQ_EINVALID);
    ASSERT_EQ(tenq_submit_json(c, "{\"queue\":\"q\",\"type\":\"t\",\"tenant\":\"a\"}", &res), 0);
    ASSERT(res.id > 0);
    tenq_client_free(c);
    test_server_stop();
}

TEST(dedup_and_idempotency_answers)
{
    test_server_start(NULL);
    tenq_client *c = client();
    tenq_submit_req r = {0};
    tenq_submit_res a, b;
    r.tenant = "acme";
    r.queue = "q";
    r.type = "t";
    r.unique_key = "u1";
    ASSERT_EQ(tenq_submit(c, &r, &a), 0);
    ASSERT_EQ(tenq_submit(c, &r, &b), 0);
    ASSERT_EQ(b.id, a.id);
    ASSERT(b.duplicate && !b.created);
    r.unique_key = NULL;
    r.idempotency_key = "idem-1";
    ASSERT_EQ(tenq_submit(c, &r, &a), 0);
    ASSERT_EQ(tenq_submit(c, &r, &b), 0);
    ASSERT_EQ(b.id, a.id);
    ASSERT(b.replayed && !b.created);
    tenq_client_free(c);
    test_server_stop();
}

TEST(batches_answer_per_index)
{
    test_server_start(NULL);
    tenq_client *c = client();
    enum { N = 2500 };
    tenq_submit_req *jobs = calloc(N, sizeof(*jobs));
    tenq_submit_res *res = calloc(N, sizeof(*res));
    for (int i = 0; i < N; i++) {
        jobs[i].tenant = "acme";
        jobs[i].queue = "bulk";
        jobs[i].type = "t";
        jobs[i].args_json = "{\"n\":1}";
    }
    jobs[7].type = NULL;                                  /* refused locally */
    jobs[9].max_attempts = 1000000;                       /* refused by the server */
    jobs[11].key = "bad \xff key";                        /* not UTF-8: refused locally */
    jobs[12].args_json = "{\"n\":";                       /* not JSON: refused locally */
    jobs[13].unique_key = "quote\" back\\slash \xc3\xa9"; /* escaped on the way */
    jobs[13].args_json = " {\"s\": \"a\\\"b\", \"x\": [1, 2.5e3]} "; /* sent as written */
    ASSERT_EQ(tenq_submit_batch(c, jobs, N, res), 0);
    ASSERT_STR(res[11].field, "key");
    ASSERT_STR(res[12].field, "args");
    /* the escaped unique key arrived exactly: the same key again is a duplicate */
    tenq_submit_res again;
    ASSERT_EQ(tenq_submit_batch(c, &jobs[13], 1, &again), 0);
    ASSERT_MSG(again.err == 0 && again.duplicate && again.id == res[13].id, "%s", again.message);
    uint64_t last = 0;
    for (int i = 0; i < N; i++) {
        if (i == 7 || i == 9 || i == 11 || i == 12) {
            ASSERT_EQ(res[i].err, TENQ_EINVALID);
            ASSERT(res[i].message[0]);
            continue;
        }
        ASSERT_MSG(res[i].err == 0, "job %d: %s", i, res[i].message);
        ASSERT(res[i].id > last); /* in submission order */
        last = res[i].id;
    }
    ASSERT_STR(res[9].field, "max_attempts");
    ASSERT_EQ(tenq_submit_batch(c, jobs, 0, res), TENQ_EINVALID);
    ASSERT_EQ(tenq_submit_batch(c, jobs, TENQ_BATCH_MAX + 1, res), TENQ_EINVALID);

    const char *texts[] = {"{\"tenant\":\"a\",\"queue\":\"q\",\"type\":\"t\"}",
                           "not json",
                           "{\"tenant\":\"a\",\"queue\":\"q\"}",
                           "[]",
                           NULL,
                           "{\"tenant\":\"a\",\"queue\":\"q\",\"type\":\"t2\",\"args\":[1]}"};
    tenq_submit_res r6[6];
    ASSERT_EQ(tenq_submit_batch_json(c, texts, 6, r6), 0);
    ASSERT(r6[0].err == 0 && r6[0].id > 0);
    ASSERT_EQ(r6[1].err, TENQ_EINVALID);
    ASSERT_EQ(r6[2].err, TENQ_EINVALID); /* the server's: no type */
    ASSERT_EQ(r6[3].err, TENQ_EINVALID);
    ASSERT_EQ(r6[4].err, TENQ_EINVALID);
    ASSERT(r6[5].err == 0 && r6[5].id > r6[0].id);
    free(jobs);
    free(res);
    tenq_client_free(c);
    test_server_stop();
}

TEST(worker_lease_start_heartbeat_ack)
{
    test_server_start(NULL);
    tenq_client *c = client();
    uint64_t id = submit(c, "work", "Echo", "{\"x\":1}");
    const char *queues[] = {"work"};
    tenq_lease_req lr = lease_of(queues, 10);
    lr.worker = "test/1";
    tenq_job *jobs = NULL;
    size_t n = 0;
    ASSERT_EQ(tenq_lease(c, &lr, &jobs, &n), 0);
    ASSERT_EQ(n, 1);
    ASSERT_EQ(jobs[0].id, id);
    ASSERT(jobs[0].token > 0 && jobs[0].lease_until > 0);
    ASSERT_EQ(jobs[0].lease_left_ms, 300000); /* the queue's lease_ms: the time left */
    ASSERT_EQ(jobs[0].state, TENQ_STATE_LEASED);
    ASSERT_EQ(jobs[0].attempt, 1); /* the first, as the attempt history counts */
    ASSERT_STR(jobs[0].args_json, "{\"x\":1}");
    ASSERT_STR(jobs[0].tenant, "acme");
    ASSERT_STR(jobs[0].type, "Echo");
    uint64_t tok = jobs[0].token;
    int64_t until0 = jobs[0].lease_until;
    tenq_jobs_free(jobs, n);

    /* nothing else: an empty lease after the wait */
    ASSERT_EQ(tenq_lease(c, &lr, &jobs, &n), 0);
    ASSERT(n == 0 && jobs == NULL);

    ASSERT_EQ(tenq_start(c, id, tok), 0);
    ASSERT_EQ(tenq_start(c, id, tok + 1), TENQ_ECONFLICT);
    ASSERT_STR(tenq_errfield(c), "token");
    int64_t until = 0;
    bool cancel = true;
    test_sleep_ms(5);
    ASSERT_EQ(tenq_heartbeat(c, id, tok, "{\"done\":0.5}", &until, &cancel), 0);
    ASSERT(until >= until0);
    ASSERT(!cancel);
    ASSERT_EQ(tenq_heartbeat(c, id, tok, "{oops", NULL, NULL), TENQ_EINVALID);
    /* the time left, as the server says it: one lease_ms from the heartbeat */
    int64_t left = 0;
    ASSERT_EQ(tenq_heartbeat_left(c, id, tok, NULL, &until, &left, &cancel), 0);
    ASSERT_EQ(left, 300000);
    tenq_job *j;
    ASSERT_EQ(tenq_status(c, id, &j), 0);
    ASSERT_EQ(j->state, TENQ_STATE_RUNNING);
    ASSERT_STR(j->progress_json, "{\"done\":0.5}");
    ASSERT_STR(j->worker, "test/1");
    tenq_job_free(j);
    /* a cancel reaches the worker through the heartbeat */
    tenq_state st;
    bool requested;
    ASSERT_EQ(tenq_cancel(c, id, &st, &requested), 0);
    ASSERT_EQ(st, TENQ_STATE_RUNNING);
    ASSERT(requested);
    ASSERT_EQ(tenq_heartbeat(c, id, tok, NULL, &until, &cancel), 0);
    ASSERT(cancel);
    /* the worker finished it anyway: succeeded */
    ASSERT_EQ(tenq_ack(c, id, tok, "{\"rows\":3}", "{\"ms\":12}"), 0);
    /* sent again (as after a lost answer): told it was applied */
    ASSERT_EQ(tenq_ack(c, id, tok, NULL, NULL), 0);
    ASSERT_EQ(tenq_ack(c, id, tok + 1, NULL, NULL), TENQ_ECONFLICT);
    ASSERT_EQ(tenq_wait(c, id, 5000, &j), 0);
    ASSERT_EQ(j->state, TENQ_STATE_SUCCEEDED);
    ASSERT_STR(j->result_json, "{\"rows\":3}");
    ASSERT_STR(j->stats_json, "{\"ms\":12}");
    ASSERT_EQ(j->attempts, 1);
    tenq_job_free(j);
    tenq_client_free(c);
    test_server_stop();
}

TEST(worker_fail_retry_and_morgue)
{
    test_server_start(NULL);
    tenq_client *c = client();
    uint64_t id = submit(c, "work", "Flaky", NULL);
    const char *queues[] = {"work"};
    const char *types[] = {"Flaky"};
    tenq_lease_req lr = lease_of(queues, 0);
    lr.types = types;
    lr.ntypes = 1;
    lr.wait_ms = 2000;
    tenq_job *jobs;
    size_t n;
    ASSERT_EQ(tenq_lease(c, &lr, &jobs, &n), 0);
    ASSERT_EQ(n, 1);
    uint64_t tok = jobs[0].token;
    tenq_jobs_free(jobs, n);
    tenq_fail_req f = {0};
    f.error = "disk full";
    f.has_retry_in = true;
    f.retry_in_ms = 0;
    tenq_state st;
    int64_t run_at = -1;
    ASSERT_EQ(tenq_fail(c, id, tok, &f, &st, &run_at), 0);
    ASSERT(st == TENQ_STATE_SCHEDULED || st == TENQ_STATE_READY);
    /* retried at once: the long poll sees it */
    ASSERT_EQ(tenq_lease(c, &lr, &jobs, &n), 0);
    ASSERT_EQ(n, 1);
    ASSERT_EQ(jobs[0].attempt, 2);
    ASSERT(jobs[0].token > tok);
    ASSERT_EQ(tenq_fail(c, id, tok, NULL, NULL, NULL), TENQ_ECONFLICT); /* stale token */
    tok = jobs[0].token;
    tenq_jobs_free(jobs, n);
    memset(&f, 0, sizeof f);
    f.error = "bad input";
    f.no_retry = true;
    ASSERT_EQ(tenq_fail(c, id, tok, &f, &st, NULL), 0);
    ASSERT_EQ(st, TENQ_STATE_DEAD);
    /* the same failure sent again (its answer lost): told it was applied;
     * another error under that token is not the same outcome */
    st = TENQ_STATE_READY;
    ASSERT_EQ(tenq_fail(c, id, tok, &f, &st, NULL), 0);
    ASSERT_EQ(st, TENQ_STATE_DEAD);
    f.error = "another error";
    ASSERT_EQ(tenq_fail(c, id, tok, &f, &st, NULL), TENQ_ECONFLICT);
    f.error = "bad input";
    tenq_job *j;
    ASSERT_EQ(tenq_wait(c, id, 1000, &j), 0);
    ASSERT_EQ(j->state, TENQ_STATE_DEAD);
    ASSERT_STR(j->error, "bad input");
    tenq_job_free(j);
    tenq_client_free(c);
    test_server_stop();
}

TEST(worker_outcomes_in_one_request)
{
    test_server_start(NULL);
    tenq_client *c = client();
    uint64_t a = submit(c, "w", "t", NULL), b = submit(c, "w", "t", NULL);
    const char *queues[] = {"w"};
    tenq_lease_req lr = lease_of(queues, 2);
    tenq_job *jobs;
    size_t n;
    ASSERT_EQ(tenq_lease(c, &lr, &jobs, &n), 0);
    ASSERT_EQ(n, 2);
    tenq_outcome oc[3] = {{0}};
    for (int i = 0; i < 2; i++) {
        oc[i].id = jobs[i].id;
        oc[i].token = jobs[i].token;
    }
    oc[0].ok = true;
    oc[0].result_json = "[1,2,3]";
    oc[1].ok = false;
    oc[1].fail.error = "nope";
    oc[1].fail.no_retry = true;
    oc[2].id = 424242;
    oc[2].token = 1;
    oc[2].ok = true;
    tenq_outcome_res res[3];
    ASSERT_EQ(tenq_outcomes(c, oc, 3, res), 0);
    tenq_jobs_free(jobs, n);
    ASSERT_EQ(res[0].err, 0);
    ASSERT_EQ(res[0].state, TENQ_STATE_SUCCEEDED);
    ASSERT_EQ(res[1].err, 0);
    ASSERT_EQ(res[1].state, TENQ_STATE_DEAD);
    ASSERT_EQ(res[2].err, TENQ_ENOT_FOUND);
    ASSERT(res[2].message[0]);
    tenq_job *j;
    ASSERT_EQ(tenq_status(c, oc[0].id == a ? a : b, &j), 0);
    ASSERT_STR(j->result_json, "[1,2,3]");
    tenq_job_free(j);
    oc[0].result_json = "[";
    ASSERT_EQ(tenq_outcomes(c, oc, 1, res), TENQ_EINVALID);
    ASSERT_EQ(tenq_outcomes(c, oc, 0, res), TENQ_EINVALID);
    tenq_client_free(c);
    test_server_stop();
}

TEST(steps_of_many_jobs_in_one_request)
{
    test_server_start(NULL);
    tenq_client *c = client();
    submit(c, "ws", "t", NULL);
    submit(c, "ws", "t", NULL);
    const char *queues[] = {"ws"};
    tenq_lease_req lr = lease_of(queues, 2);
    tenq_job *jobs;
    size_t n;
    ASSERT_EQ(tenq_lease(c, &lr, &jobs, &n), 0);
    ASSERT_EQ(n, 2);
    tenq_step_item it[4];
    memset(it, 0, sizeof it);
    for (int i = 0; i < 2; i++) {
        it[i].id = jobs[i].id;
        it[i].token = jobs[i].token;
        it[i].step = (tenq_step_req){.name = "one", .kind = TENQ_STEP_RUN, .result_json = "[1]"};
    }
    it[2] = it[0]; /* again: a duplicate */
    it[3] = it[1];
    it[3].token++; /* not its lease */
    it[3].step.name = "two";
    tenq_step_item_res res[4];
    ASSERT_MSG(tenq_steps_store(c, it, 4, res) == 0, "%s", tenq_errmsg(c));
    ASSERT(res[0].err == 0 && res[1].err == 0 && res[2].err == 0);
    ASSERT(!res[0].res.duplicate && res[2].res.duplicate);
    ASSERT_EQ(res[0].res.pos, 0);
    ASSERT_EQ(res[1].res.state, TENQ_STATE_LEASED);
    ASSERT_EQ(res[3].err, TENQ_ECONFLICT);
    ASSERT_STR(res[3].field, "token");
    tenq_step *v;
    size_t k;
    ASSERT_EQ(tenq_steps(c, jobs[1].id, &v, &k), 0);
    ASSERT_EQ(k, 1);
    ASSERT_STR(v[0].result_json, "[1]");
    tenq_steps_free(v, k);
    /* a sleep in a batch parks its job */
    it[0].step = (tenq_step_req){.name = "nap", .kind = TENQ_STEP_SLEEP, .duration_ms = 60000};
    ASSERT_EQ(tenq_steps_store(c, it, 1, res), 0);
    ASSERT(res[0].err == 0 && res[0].res.parked && res[0].res.run_at > 0);
    ASSERT_EQ(res[0].res.state, TENQ_STATE_SCHEDULED);
    it[0].step.result_json = "[";
    it[0].step.kind = TENQ_STEP_RUN;
    ASSERT_EQ(tenq_steps_store(c, it, 1, res), TENQ_EINVALID);
    ASSERT_EQ(tenq_steps_store(c, it, 0, res), TENQ_EINVALID);
    tenq_jobs_free(jobs, n);
    tenq_client_free(c);
    test_server_stop();
}

TEST(worker_outcomes_with_the_next_lease)
{
    test_server_start(NULL);
    tenq_client *c = client();
    uint64_t ids[2];
    for (int i = 0; i < 2; i++) {
        tenq_submit_req r = {0};
        r.tenant = "acme";
        r.queue = "lr";
        r.type = "t";
        r.key = "k"; /* one lane: the second is leased only once the first is acked */
        tenq_submit_res res;
        ASSERT_EQ(tenq_submit(c, &r, &res), 0);
        ids[i] = res.id;
    }
    const char *queues[] = {"lr"};
    tenq_lease_req lr = lease_of(queues, 5);
    tenq_job *jobs;
    size_t n;
    ASSERT_EQ(tenq_lease_report(c, NULL, 0, NULL, &lr, &jobs, &n), 0); /* tenq_lease */
    ASSERT_EQ(n, 1);
    ASSERT_EQ(jobs[0].id, ids[0]);
    tenq_outcome oc[2] = {{0}};
    oc[0].id = oc[1].id = jobs[0].id;
    oc[0].token = jobs[0].token;
    oc[0].ok = true;
    oc[0].result_json = "{\"r\":1}";
    oc[1].token = jobs[0].token + 1;
    oc[1].ok = true;
    tenq_jobs_free(jobs, n);
    tenq_outcome_res res[2];
    const char *bad_queues[] = {"no good"};
    tenq_lease_req bad = lr;
    bad.queues = bad_queues;
    ASSERT_EQ(tenq_lease_report(c, oc, 1, res, &bad, &jobs, &n), TENQ_EINVALID);
    ASSERT_EQ(n, 0);
    ASSERT_EQ(tenq_lease_report(c, oc, TENQ_BATCH_MAX + 1, res, &lr, &jobs, &n), TENQ_EINVALID);
    tenq_job *j;
    ASSERT_EQ(tenq_status(c, ids[0], &j), 0);
    ASSERT_EQ(j->state, TENQ_STATE_LEASED); /* refused: nothing reported */
    tenq_job_free(j);
    ASSERT_EQ(tenq_lease_report(c, oc, 2, res, &lr, &jobs, &n), 0);
    ASSERT_EQ(res[0].err, 0);
    ASSERT_EQ(res[0].state, TENQ_STATE_SUCCEEDED);
    ASSERT_EQ(res[1].err, TENQ_ECONFLICT); /* its token is stale */
    ASSERT_EQ(n, 1);
    ASSERT_EQ(jobs[0].id, ids[1]);
    tenq_jobs_free(jobs, n);
    ASSERT_EQ(tenq_status(c, ids[0], &j), 0);
    ASSERT_STR(j->result_json, "{\"r\":1}");
    tenq_job_free(j);
    tenq_client_free(c);
    test_server_stop();
}

TEST(generic_requests)
{
    test_server_start(NULL);
    tenq_client *c = client();
    int status = 0;
    char *resp = NULL;
    const char *body = "{\"slots\": 3}";
    ASSERT_EQ(tenq_request(c, "PUT", "/v1/tenants/acme", body, strlen(body), &status, &resp), 0);
    ASSERT_EQ(status, 200);
    ASSERT(strstr(resp, "\"slots\":3") != NULL);
    tenq_free(resp);
    ASSERT_EQ(tenq_request(c, "GET", "/v1/queues/nope", NULL, 0, &status, &resp), TENQ_ENOT_FOUND);
    ASSERT_EQ(status, 404);
    ASSERT(strstr(resp, "not_found") != NULL); /* the error body is handed over too */
    tenq_free(resp);
    ASSERT_EQ(tenq_request(c, "GET", "/healthz", NULL, 0, NULL, NULL), 0);
    ASSERT_EQ(tenq_request(c, "GET", "no-slash", NULL, 0, &status, &resp), TENQ_EINVALID);
    ASSERT(status == 0 && resp == NULL);
    ASSERT_EQ(tenq_request(c, "GET", "/metrics", NULL, 0, &status, &resp), 0);
    ASSERT(strstr(resp, "tenq_store_commits_total") != NULL); /* any text, not only JSON */
    tenq_free(resp);
    tenq_client_free(c);
    test_server_stop();
}

/* Many calls on one handle use one connection. */
TEST(keep_alive_reuses_one_connection)
{
    test_server_start(NULL);
    tenq_client *c = client();
    for (int i = 0; i < 50; i++) submit(c, "q", "t", NULL);
    char *resp = NULL;
    ASSERT_EQ(tenq_request(c, "GET", "/v1/stats", NULL, 0, NULL, &resp), 0);
    ASSERT_MSG(strstr(resp, "\"connections\":1,") != NULL, "stats: %s", resp);
    tenq_free(resp);
    tenq_client_free(c);
    test_server_stop();
}

/* The server closes idle connections; the next call reconnects unseen.
 * Within a second of its last answer a connection is not checked before a
 * request (conn.c, STALE_CHECK_MS): the submit goes out on the closed
 * connection, gets no byte back, and is sent once more on a new one; the
 * server never saw the first, so each submit makes one job. */
TEST(reconnects_after_the_server_closed_an_idle_connection)
{
    const char *extra[] = {"--idle-timeout", "150ms", NULL};
    test_server_start(extra);
    tenq_client *c = client();
    submit(c, "q", "t", NULL);
    for (int i = 0; i < 3; i++) {
        test_sleep_ms(400);
        uint64_t id = submit(c, "q", "t", NULL);
        tenq_job *j;
        ASSERT_EQ(tenq_status(c, id, &j), 0);
        tenq_job_free(j);
    }
    test_sleep_ms(1300); /* and past the second: checked first, then a new connection */
    submit(c, "q", "t", NULL);
    char *resp = NULL;
    ASSERT_EQ(tenq_request(c, "GET", "/v1/jobs?queue=q&limit=100", NULL, 0, NULL, &resp), 0);
    int n = 0;
    for (const char *p = resp; (p = strstr(p, "\"id\":")) != NULL; p++) n++;
    ASSERT_MSG(n == 5, "%d jobs: %s", n, resp);
    tenq_free(resp);
    tenq_client_free(c);
    test_server_stop();
}

/* A server that went away between calls: the next call finds another. */
TEST(failover_to_the_next_server)
{
    test_server_start(NULL);
    char dead[64];
    snprintf(dead, sizeof dead, "http://127.0.0.1:%d", dead_port());
    const char *urls[] = {dead, test_server_url};
    tenq_client *c = client_for(urls, 2, NULL);
    uint64_t id = submit(c, "q", "t", NULL);
    tenq_job *j;
    ASSERT_EQ(tenq_status(c, id, &j), 0);
    tenq_job_free(j);
    tenq_client_free(c);

    /* every server down: tried again until the failover budget is spent,
     * then a connection error naming them */
    const char *none[] = {dead, dead};
    c = client_failover(none, 2, NULL, 600);
    int64_t t0 = test_now_ms();
    ASSERT_EQ(tenq_status(c, 1, &j), TENQ_ECONNECT);
    int64_t took = test_now_ms() - t0;
    ASSERT_MSG(took >= 550 && took < 3000, "gave up after %lld ms", (long long)took);
    ASSERT(strstr(tenq_errmsg(c), "cannot connect to any server") != NULL);
    ASSERT_EQ(tenq_errstatus(c), 0);
    tenq_client_free(c);

    /* the server stops while a handle holds a connection to it */
    const char *one[] = {test_server_url};
    c = client_failover(one, 1, NULL, -1);
    submit(c, "q", "t", NULL);
    test_server_stop();
    ASSERT_EQ(tenq_status(c, id, &j), TENQ_ECONNECT);
    tenq_client_free(c);
}

TEST(tokens_and_tenants)
{
    setenv("TENQ_ADMIN_TOKEN", "admin-secret-0123456789", 1);
    test_server_start(NULL);
    unsetenv("TENQ_ADMIN_TOKEN");
    const char *urls[] = {test_server_url};
    tenq_client *anon = client_for(urls, 1, NULL);
    tenq_job *j;
    ASSERT_EQ(tenq_status(anon, 1, &j), TENQ_EUNAUTHENTICATED);
    tenq_client *admin = client_for(urls, 1, "admin-secret-0123456789");
    char *resp = NULL;
    const char *body = "{\"role\":\"tenant:acme\"}";
    ASSERT_EQ(tenq_request(admin, "POST", "/v1/tokens", body, strlen(body), NULL, &resp), 0);
    char secret[128] = "";
    const char *p = strstr(resp, "\"token\":\"");
    ASSERT(p != NULL);
    sscanf(p + 9, "%127[^\"]", secret);
    tenq_free(resp);
    tenq_client *acme = client_for(urls, 1, secret);
    tenq_submit_req r = {0};
    r.queue = "q";
    r.type = "t";
    tenq_submit_res res;
    ASSERT_EQ(tenq_submit(acme, &r, &res), 0); /* the tenant comes from the token */
    r.tenant = "other";
    ASSERT_EQ(tenq_submit(acme, &r, &res), TENQ_EFORBIDDEN);
    ASSERT_EQ(tenq_submit(admin, &r, &res), 0);
    ASSERT_EQ(tenq_status(acme, res.id, &j), TENQ_ENOT_FOUND); /* another tenant's job */
    tenq_client_free(anon);
    tenq_client_free(admin);
    tenq_client_free(acme);
    test_server_stop();
}

/* ---- peers that are not a tenq server
 * ------------------------------------------------------------ */

/* A listening socket in a child that answers each connection with reply
 * (NULL: never answers); returns its port. */
static pid_t fake_pid;

static void fake_stop(void)
{
    if (fake_pid > 0) {
        kill(fake_pid, SIGKILL);
        waitpid(fake_pid, NULL, 0);
        fake_pid = 0;
    }
}

/* A socket listening on loopback (a fake server's), its port in *port. */
static int loopback_listener(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT(bind(fd, (struct sockaddr *)&a, sizeof a) == 0);
    ASSERT(listen(fd, 16) == 0);
    socklen_t l = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &l);
    *port = ntohs(a.sin_port);
    atexit(fake_stop);
    return fd;
}

static int fake_server(const char *reply)
{
    int port, fd = loopback_listener(&port);
    fake_pid = fork();
    if (fake_pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        for (;;) {
            int cfd = accept(fd, NULL, NULL);
            if (cfd < 0) continue;
            char buf[4096];
            ssize_t n = read(cfd, buf, sizeof buf);
            (void)n;
            if (!reply) {
                sleep(60);
                _exit(0);
            }
            ssize_t w = write(cfd, reply, strlen(reply));
            (void)w;
            close(cfd);
        }
    }
    close(fd);
    return port;
}

static tenq_client *fake_client(int port, int request_ms)
{
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
    const char *urls[] = {url};
    tenq_options o;
    tenq_options_init(&o);
    o.servers = urls;
    o.nservers = 1;
    o.request_timeout_ms = request_ms;
    o.failover_ms = -1; /* one answer each: what the fake says is what is tested */
    tenq_client *c;
    ASSERT_EQ(tenq_client_new(&o, &c), 0);
    return c;
}

/* A request or an answer read whole from fd (head, then Content-Length
 * bytes of body) into buf; its length, or -1. */
static ssize_t read_message(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    for (;;) {
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r <= 0) return -1;
        n += (size_t)r;
        buf[n] = 0;
        char *end = strstr(buf, "\r\n\r\n");
        if (!end) continue;
        const char *cl = strcasestr(buf, "content-length:");
        size_t body = cl && cl < end ? (size_t)atol(cl + 15) : 0;
        if (n >= (size_t)(end + 4 - buf) + body) return (ssize_t)n;
    }
}

/* A proxy in front of the server at port that loses the answer to the
 * first request it carries (the server got it and answered; the client
 * sees its connection close), then carries every connection faithfully. */
static int lossy_proxy(int port)
{
    int pport, fd = loopback_listener(&pport);
    fake_pid = fork();
    if (fake_pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        for (bool first = true;; first = false) {
            int cfd = accept(fd, NULL, NULL);
            if (cfd < 0) continue;
            int sfd = socket(AF_INET, SOCK_STREAM, 0);
            struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
            a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            if (connect(sfd, (struct sockaddr *)&a, sizeof a) != 0) _exit(1);
            static char buf[1 << 20];
            for (;;) { /* one request, its answer; again */
                ssize_t n = read_message(cfd, buf, sizeof buf);
                if (n <= 0 || write(sfd, buf, (size_t)n) != n) break;
                n = read_message(sfd, buf, sizeof buf);
                if (n <= 0 || first || write(cfd, buf, (size_t)n) != n) break;
            }
            close(sfd);
            close(cfd);
        }
    }
    close(fd);
    return pport;
}

/* Every submit is sent with a request key (Idempotency-Key): a submit whose
 * answer was lost on the way is sent again and makes one job, for a job
 * given as a struct and as JSON text. */
TEST(a_submit_sent_again_after_a_lost_answer_makes_one_job)
{
    test_server_start(NULL);
    tenq_client *direct = client();
    int port = atoi(strrchr(test_server_url, ':') + 1);
    for (int form = 0; form < 2; form++) {
        char url[64];
        snprintf(url, sizeof url, "http://127.0.0.1:%d", lossy_proxy(port));
        const char *urls[] = {url};
        tenq_client *c = client_for(urls, 1, NULL);
        tenq_submit_res res;
        char queue[32];
        snprintf(queue, sizeof queue, "lost-%d", form);
        if (form == 0) {
            tenq_submit_req r = {.tenant = "acme", .queue = queue, .type = "T"};
            ASSERT_EQ(tenq_submit(c, &r, &res), 0);
        } else {
            char text[128];
            snprintf(text, sizeof text, "{ \"tenant\":\"acme\",\"queue\":\"%s\",\"type\":\"T\"}",
                     queue);
            ASSERT_EQ(tenq_submit_json(c, text, &res), 0);
        }
        /* the first copy made the job; the second, sent with the same
         * request key, was answered the first answer */
        tenq_job *j;
        ASSERT_EQ(tenq_status(direct, res.id, &j), 0);
        ASSERT_STR(j->queue, queue);
        ASSERT(j->idempotency_key == NULL); /* the request's key, not the job's */
        tenq_job_free(j);
        char path[96];
        snprintf(path, sizeof path, "/v1/jobs?queue=%s", queue);
        int status;
        char *body;
        ASSERT_EQ(tenq_request(direct, "GET", path, NULL, 0, &status, &body), 0);
        size_t jobs = 0;
        for (const char *p = body; (p = strstr(p, "\"queue\"")); p++) jobs++;
        ASSERT_MSG(jobs == 1, "%zu jobs: %s", jobs, body);
        tenq_free(body);
        tenq_client_free(c);
        fake_stop();
    }
    /* a caller's own key is kept as given (and a trace context goes along) */
    const char *tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    tenq_submit_req r = {.tenant = "acme",
                         .queue = "own",
                         .type = "T",
                         .idempotency_key = "mine",
                         .traceparent = tp};
    tenq_submit_res res;
    ASSERT_EQ(tenq_submit(direct, &r, &res), 0);
    tenq_job *j;
    ASSERT_EQ(tenq_status(direct, res.id, &j), 0);
    ASSERT_STR(j->idempotency_key, "mine");
    ASSERT_STR(j->traceparent, tp);
    tenq_job_free(j);
    const char *queues[] = {"own"};
    tenq_lease_req lr = lease_of(queues, 1);
    tenq_job *leased = NULL;
    size_t n = 0;
    ASSERT_EQ(tenq_lease(direct, &lr, &leased, &n), 0);
    ASSERT_EQ(n, 1);
    ASSERT_STR(leased[0].traceparent, tp);
    tenq_jobs_free(leased, n);
    tenq_client_free(direct);
}

/* A fake standby: every request answered status (307 or 503) naming the
 * leader (NULL: none). */
static int fake_standby(int status, const char *leader)
{
    static char reply[1024];
    char body[512];
    int n = snprintf(body, sizeof body,
                     "{\"error\":{\"code\":\"not_leader\",\"message\":\"a standby\"%s%s%s}}",
                     leader ? ",\"leader\":\"" : "", leader ? leader : "", leader ? "\"" : "");
    snprintf(reply, sizeof reply, "HTTP/1.1 %d %s\r\nContent-Length: %d\r\n\r\n%s", status,
             status == 307 ? "Temporary Redirect" : "Service Unavailable", n, body);
    return fake_server(reply);
}

/* Standbys send a call to the leader they name, which joins the list; one
 * that names none is passed over for the next server; a redirect that
 * leads nowhere fails once the failover budget is spent. */
TEST(calls_follow_the_leader_a_standby_names)
{
    test_server_start(NULL);
    char standby[64];
    snprintf(standby, sizeof standby, "http://127.0.0.1:%d", fake_standby(307, test_server_url));
    const char *urls[] = {standby};
    tenq_client *c = client_for(urls, 1, NULL);
    uint64_t id = submit(c, "follow", "t", NULL);
    tenq_job *j;
    ASSERT_EQ(tenq_status(c, id, &j), 0);
    ASSERT_EQ(j->id, id);
    tenq_job_free(j);
    tenq_client_free(c);
    fake_stop();

    snprintf(standby, sizeof standby, "http://127.0.0.1:%d", fake_standby(503, NULL));
    const char *two[] = {standby, test_server_url};
    c = client_for(two, 2, NULL);
    ASSERT_EQ(tenq_status(c, id, &j), 0);
    tenq_job_free(j);
    tenq_client_free(c);
    fake_stop();

    char dead[64];
    snprintf(dead, sizeof dead, "http://127.0.0.1:%d", dead_port());
    snprintf(standby, sizeof standby, "http://127.0.0.1:%d", fake_standby(307, dead));
    c = client_failover(urls, 1, NULL, 500);
    int64_t t0 = test_now_ms();
    int rc = tenq_status(c, id, &j);
    ASSERT_MSG(rc == TENQ_ENOT_LEADER || rc == TENQ_ECONNECT, "rc %d: %s", rc, tenq_errmsg(c));
    ASSERT(test_now_ms() - t0 >= 450);
    tenq_client_free(c);
    fake_stop();
}

/* A child that accepts one connection, reads one request (its head, then
 * Content-Length bytes of body), hands the bytes back through a pipe
 * (*rd) and answers 200 {}; returns its port. */
static int capture_server(int *rd)
{
    int port, fd = loopback_listener(&port), p[2];
    ASSERT(pipe(p) == 0);
    fake_pid = fork();
    if (fake_pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int cfd = accept(fd, NULL, NULL);
        char buf[4096];
        size_t n = 0, want = 0;
        for (;;) {
            ssize_t r = read(cfd, buf + n, sizeof buf - 1 - n);
            if (r <= 0) _exit(1);
            n += (size_t)r;
            buf[n] = 0;
            char *end = strstr(buf, "\r\n\r\n"), *cl = strstr(buf, "Content-Length: ");
            if (end && !want)
                want = (size_t)(end + 4 - buf) + (cl ? strtoul(cl + 16, NULL, 10) : 0);
            if (want && n >= want) break;
        }
        ssize_t w = write(p[1], buf, n);
        static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}";
        w = write(cfd, ok, sizeof ok - 1);
        (void)w;
        _exit(0);
    }
    close(fd);
    close(p[1]);
    *rd = p[0];
    return port;
}

/* What the client writes, byte for byte: the head written by hand (no
 * snprintf) and the body in the same system call. */
TEST(requests_go_out_as_http_asks)
{
    for (int with_body = 0; with_body < 2; with_body++) {
        int rd, port = capture_server(&rd);
        char url[64], want[1024], got[4096];
        snprintf(url, sizeof url, "127.0.0.1:%d", port);
        const char *body = "{\"slots\":3}";
        if (with_body)
            snprintf(want, sizeof want,
                     "PUT /v1/tenants/acme HTTP/1.1\r\nHost: %s\r\nUser-Agent: libtenq/%s\r\n"
                     "Accept: application/json\r\nAuthorization: Bearer sekrit\r\n"
                     "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                     url, TENQ_CLIENT_VERSION, strlen(body), body);
        else
            snprintf(want, sizeof want,
                     "GET /v1/stats HTTP/1.1\r\nHost: %s\r\nUser-Agent: libtenq/%s\r\n"
                     "Accept: application/json\r\n\r\n",
                     url, TENQ_CLIENT_VERSION);
        char full[80];
        snprintf(full, sizeof full, "http://%s", url);
        const char *urls[] = {full};
        tenq_client *c = client_for(urls, 1, with_body ? "sekrit" : NULL);
        int status = 0;
        ASSERT_EQ(
            tenq_request(c, with_body ? "PUT" : "GET", with_body ? "/v1/tenants/acme" : "/v1/stats",
                         with_body ? body : NULL, with_body ? strlen(body) : 0, &status, NULL),
            0);
        ASSERT_EQ(status, 200);
        size_t n = 0;
        ssize_t r;
        while ((r = read(rd, got + n, sizeof got - 1 - n)) > 0) n += (size_t)r;
        got[n] = 0;
        ASSERT_MSG(!strcmp(got, want), "sent:\n%s\nwanted:\n%s", got, want);
        close(rd);
        tenq_client_free(c);
        fake_stop();
    }
}

TEST(a_silent_server_times_out)
{
    tenq_client *c = fake_client(fake_server(NULL), 300);
    tenq_job *j;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ASSERT_EQ(tenq_status(c, 1, &j), TENQ_ETIMEOUT);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    ASSERT_MSG(ms >= 250 && ms < 3000, "timed out after %.0f ms", ms);
    ASSERT(strstr(tenq_errmsg(c), "no answer") != NULL);
    tenq_client_free(c);
    fake_stop();
}

/* A fake server answering every request with 200 and this JSON body. */
static tenq_client *fake_json(const char *body)
{
    static char reply[1024];
    snprintf(reply, sizeof reply, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n%s", strlen(body),
             body);
    return fake_client(fake_server(reply), 2000);
}

/* Answers read in place: what a lease, an outcome batch and a submit batch
 * refuse, and that a refused lease hands back nothing. */
TEST(malformed_work_answers_are_protocol_errors)
{
    const char *q[] = {"q"};
    tenq_lease_req lr = {.queues = q, .nqueues = 1, .max = 5};
    const char *bad_leases[] = {
        "{\"jobs\":[{\"id\":1,\"token\":2},{\"tenant\":\"no id\"}]}", /* the second job */
        "{\"jobs\":{}}",
        "{\"work\":[]}",
        "{\"jobs\":[{\"id\":1,\"queue\":7}]}",
        "{\"jobs\":[{\"id\":1,\"tenant\":\"\\ud800\"}]}", /* a lone surrogate */
        "{\"jobs\":[]} trailing"};
    for (size_t i = 0; i < sizeof bad_leases / sizeof bad_leases[0]; i++) {
        tenq_client *c = fake_json(bad_leases[i]);
        tenq_job *jobs = (tenq_job *)1;
        size_t n = 7;
        ASSERT_MSG(tenq_lease(c, &lr, &jobs, &n) == TENQ_EPROTOCOL, "took %s", bad_leases[i]);
        ASSERT(jobs == NULL && n == 0);
        tenq_client_free(c);
        fake_stop();
    }
    /* an empty lease is no error */
    tenq_client *c = fake_json(" { \"jobs\" : [ ] } ");
    tenq_job *jobs;
    size_t n = 7;
    ASSERT_EQ(tenq_lease(c, &lr, &jobs, &n), 0);
    ASSERT(jobs == NULL && n == 0);
    tenq_client_free(c);
    fake_stop();

    /* two outcomes, one result: refused as a whole */
    tenq_outcome oc[2] = {{.id = 1, .token = 2, .ok = true}, {.id = 3, .token = 4, .ok = true}};
    tenq_outcome_res res[2];
    c = fake_json("{\"results\":[{\"id\":1,\"state\":\"succeeded\"}]}");
    ASSERT_EQ(tenq_outcomes(c, oc, 2, res), TENQ_EPROTOCOL);
    ASSERT(strstr(tenq_errmsg(c), "2 results") != NULL);
    tenq_client_free(c);
    fake_stop();
    /* per item: a state, and an error with its words decoded */
    c = fake_json("{\"results\":[{\"id\":1,\"state\":\"succeeded\"},{\"error\":{\"code\":"
                  "\"conflict\",\"message\":\"stale \\\"token\\\"\",\"field\":\"token\"}}]}");
    ASSERT_EQ(tenq_outcomes(c, oc, 2, res), 0);
    ASSERT_EQ(res[0].state, TENQ_STATE_SUCCEEDED);
    ASSERT_EQ(res[1].err, TENQ_ECONFLICT);
    ASSERT_STR(res[1].message, "stale \"token\"");
    ASSERT_STR(res[1].field, "token");
    tenq_client_free(c);
    fake_stop();

    /* a submit batch answered with too few results */
    tenq_submit_req sr[2] = {{.queue = "q", .type = "t"}, {.queue = "q", .type = "t"}};
    tenq_submit_res sres[2];
    c = fake_json("{\"jobs\":[{\"id\":5,\"state\":\"ready\"}]}");
    ASSERT_EQ(tenq_submit_batch(c, sr, 2, sres), TENQ_EPROTOCOL);
    ASSERT_EQ(sres[0].err, TENQ_EPROTOCOL);
    ASSERT_EQ(sres[1].err, TENQ_EPROTOCOL);
    tenq_client_free(c);
    fake_stop();
}

TEST(answers_that_are_not_http_or_not_json)
{
    tenq_client *c = fake_client(fake_server("SSH-2.0-OpenSSH_9.2\r\n"), 2000);
    tenq_job *j;
    ASSERT_EQ(tenq_status(c, 1, &j), TENQ_EPROTOCOL);
    tenq_client_free(c);
    fake_stop();

    c = fake_client(fake_server("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"), 2000);
    ASSERT_EQ(tenq_status(c, 1, &j), TENQ_EPROTOCOL);
    tenq_state st;
    ASSERT_EQ(tenq_cancel(c, 1, &st, NULL), TENQ_EPROTOCOL);
    ASSERT(strstr(tenq_errmsg(c), "not a JSON object") != NULL);
    tenq_client_free(c);
    fake_stop();

    /* cut short: fewer bytes than Content-Length, then the close */
    c = fake_client(fake_server("HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n{\"id\":"), 2000);
    ASSERT_EQ(tenq_status(c, 1, &j), TENQ_ECONNECT);
    ASSERT(strstr(tenq_errmsg(c), "cut short") != NULL);
    tenq_client_free(c);
    fake_stop();

    /* an error from something else than tenq (a proxy): by its status */
    c = fake_client(fake_server("HTTP/1.1 502 Bad Gateway\r\nContent-Length: 3\r\n\r\nbad"), 2000);
    ASSERT_EQ(tenq_status(c, 1, &j), TENQ_EPROTOCOL);
    ASSERT_EQ(tenq_errstatus(c), 502);
    ASSERT(strstr(tenq_errmsg(c), "HTTP 502") != NULL);
    tenq_client_free(c);
    fake_stop();

    /* no Content-Length: the body runs to the close */
    c = fake_client(fake_server("HTTP/1.0 200 OK\r\n\r\n{\"status\":\"ok\"}"), 2000);
    char *resp = NULL;
    ASSERT_EQ(tenq_request(c, "GET", "/healthz", NULL, 0, NULL, &resp), 0);
    ASSERT_STR(resp, "{\"status\":\"ok\"}");
    tenq_free(resp);
    tenq_client_free(c);
    fake_stop();
}

/* Waits longer than the server's --max-wait are several long polls, and a
 * long poll may outlast the request timeout by its own wait. */
TEST(long_waits_span_several_polls)
{
    const char *extra[] = {"--max-wait", "300ms", NULL};
    test_server_start(extra);
    const char *urls[] = {test_server_url};
    tenq_options o;
    tenq_options_init(&o);
    o.servers = urls;
    o.nservers = 1;
    o.request_timeout_ms = 500;
    tenq_client *c;
    ASSERT_EQ(tenq_client_new(&o, &c), 0);
    uint64_t id = submit(c, "q", "t", NULL);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    tenq_job *j;
    ASSERT_EQ(tenq_wait(c, id, 1200, &j), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    ASSERT_MSG(ms >= 1100 && ms < 5000, "waited %.0f ms", ms);
    ASSERT_EQ(j->state, TENQ_STATE_READY);
    tenq_job_free(j);
    /* another process cancels it while we wait */
    pid_t pid = fork();
    if (pid == 0) {
        test_sleep_ms(700);
        tenq_client *c2 = client();
        int rc = tenq_cancel(c2, id, NULL, NULL);
        tenq_client_free(c2);
        _exit(rc == 0 ? 0 : 1);
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ASSERT_EQ(tenq_wait(c, id, 10000, &j), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    ASSERT_EQ(j->state, TENQ_STATE_CANCELLED);
    ASSERT_MSG(ms >= 600 && ms < 5000, "waited %.0f ms", ms);
    tenq_job_free(j);
    int st;
    ASSERT(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    /* a lease long poll outlasts a shorter request timeout */
    tenq_client_free(c);
    o.request_timeout_ms = 100;
    ASSERT_EQ(tenq_client_new(&o, &c), 0);
    const char *queues[] = {"empty"};
    tenq_lease_req lr = lease_of(queues, 0);
    lr.wait_ms = 250;
    tenq_job *jobs;
    size_t n;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ASSERT_MSG(tenq_lease(c, &lr, &jobs, &n) == 0, "lease: %s", tenq_errmsg(c));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    ASSERT_EQ(n, 0);
    ASSERT_MSG(ms >= 200, "the lease answered after %.0f ms", ms);
    tenq_client_free(c);
    test_server_stop();
}
