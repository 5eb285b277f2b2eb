// SPDX-License-Identifier: Apache-2.0
/* libtenq's in-process worker (tenq/worker.h) against a real `tenq serve`
 * (TENQ_BIN) on port 0 with a private SQLite file: outcomes, concurrency,
 * progress and stats, cancel, lost leases, stopping (from a signal handler,
 * with a grace period, twice), and the errors of the API. */
#include "runner.h"
#include "server_proc.h"

#include "tenq/tenq.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- a server per test ------------------------------------------------------------------------
 */

static tenq_client *client(void)
{
    tenq_options o;
    tenq_options_init(&o);
    const char *urls[] = {test_server_url};
    o.servers = urls;
    o.nservers = 1;
    tenq_client *c = NULL;
    ASSERT(tenq_client_new(&o, &c) == 0);
    return c;
}

static uint64_t submit(tenq_client *c, const char *queue, const char *type, const char *args)
{
    tenq_submit_req r = {0};
    r.tenant = "acme";
    r.queue = queue;
    r.type = type;
    r.args_json = args;
    tenq_submit_res res;
    ASSERT_MSG(tenq_submit(c, &r, &res) == 0, "submit: %s", tenq_errmsg(c));
    return res.id;
}

static void set_queue(tenq_client *c, const char *queue, const char *settings)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/queues/%s", queue);
    ASSERT_MSG(tenq_request(c, "PUT", path, settings, strlen(settings), NULL, NULL) == 0, "%s",
               tenq_errmsg(c));
}

/* Waits for the job to leave leased/running (or to finish with finished). */
static tenq_job *wait_done(tenq_client *c, uint64_t id, bool finished)
{
    int64_t until = test_now_ms() + 20000;
    for (;;) {
        tenq_job *j = NULL;
        ASSERT(tenq_status(c, id, &j) == 0);
        bool done = finished ? tenq_state_finished(j->state)
                             : j->state != TENQ_STATE_LEASED && j->state != TENQ_STATE_RUNNING &&
                                   j->state != TENQ_STATE_READY;
        if (done) return j;
        ASSERT_MSG(test_now_ms() < until, "job %llu still %s", (unsigned long long)id,
                   tenq_state_name(j->state));
        tenq_job_free(j);
        test_sleep_ms(20);
    }
}

/* ---- a worker on a thread ---------------------------------------------------------------------
 */

typedef struct running {
    tenq_worker *w;
    pthread_t th;
    int rc;
} running;

static tenq_worker *worker(const char *queue, unsigned concurrency, int64_t grace_ms)
{
    tenq_worker_options o;
    tenq_worker_options_init(&o);
    const char *urls[] = {test_server_url};
    const char *queues[] = {queue};
    o.servers = urls;
    o.nservers = 1;
    o.queues = queues;
    o.nqueues = 1;
    o.concurrency = concurrency;
    o.grace_ms = grace_ms;
    o.poll_ms = 5000;
    o.name = "test-worker";
    tenq_worker *w = NULL;
    int rc = tenq_worker_new(&o, &w);
    ASSERT_MSG(rc == 0, "tenq_worker_new: %s", tenq_worker_errmsg(w));
    return w;
}

static void *run_main(void *arg)
{
    running *r = arg;
    r->rc = tenq_worker_run(r->w);
    return NULL;
}

static void run_start(running *r, tenq_worker *w)
{
    r->w = w;
    r->rc = -999;
    ASSERT(pthread_create(&r->th, NULL, run_main, r) == 0);
}

/* Stops the worker and waits for tenq_worker_run(); returns its code. */
static int run_stop(running *r)
{
    tenq_worker_stop(r->w);
    pthread_join(r->th, NULL);
    int rc = r->rc;
    tenq_worker_free(r->w);
    r->w = NULL;
    return rc;
}

/* ---- handlers ------------------------------------------------------------------------------- */

static atomic_int busy, peak;

static tenq_result h_ok(tenq_task *t, void *ctx)
{
    (void)ctx;
    int now = atomic_fetch_add(&busy, 1) + 1;
    int p = atomic_load(&peak);
    while (now > p && !atomic_compare_exchange_weak(&peak, &p, now)) continue;
    test_sleep_ms(30);
    atomic_fetch_sub(&busy, 1);
    char r[256];
    snprintf(r, sizeof r, "{\"echo\":%s,\"slot\":%u}", tenq_task_job(t)->args_json,
             tenq_task_slot(t));
    return tenq_result_ok(r);
}

static tenq_result h_fail(tenq_task *t, void *ctx)
{
    (void)t;
    (void)ctx;
    return tenq_result_fail("not today", 60000);
}

static tenq_result h_dead(tenq_task *t, void *ctx)
{
    (void)t;
    (void)ctx;
    return tenq_result_no_retry("never");
}

static tenq_result h_bad_json(tenq_task *t, void *ctx)
{
    (void)t;
    (void)ctx;
    return tenq_result_ok("{not json");
}

TEST(outcomes_types_and_concurrency)
{
    test_server_start(NULL);
    tenq_client *c = client();
    uint64_t ok[12];
    for (int i = 0; i < 12; i++) {
        char args[32];
        snprintf(args, sizeof args, "{\"i\":%d}", i);
        ok[i] = submit(c, "wq", "Ok", args);
    }
    uint64_t fail = submit(c, "wq", "Fail", NULL), dead = submit(c, "wq", "Dead", NULL);
    uint64_t bad = submit(c, "wq", "Bad", NULL), other = submit(c, "wq", "Unhandled", NULL);
    tenq_worker *w = worker("wq", 3, 5000);
    ASSERT(tenq_worker_handle(w, "Ok", h_ok, NULL) == 0);
    ASSERT(tenq_worker_handle(w, "Fail", h_fail, NULL) == 0);
    ASSERT(tenq_worker_handle(w, "Dead", h_dead, NULL) == 0);
    ASSERT(tenq_worker_handle(w, "Bad", h_bad_json, NULL) == 0);
    running r;
    run_start(&r, w);
    for (int i = 0; i < 12; i++) {
        tenq_job *j = wait_done(c, ok[i], true);
        ASSERT_EQ(j->state, TENQ_STATE_SUCCEEDED);
        char want[32];
        snprintf(want, sizeof want, "{\"i\":%d}", i);
        ASSERT_MSG(strstr(j->result_json, want), "%s", j->result_json);
        ASSERT_STR(j->worker, "test-worker");
        tenq_job_free(j);
    }
    tenq_job *j = wait_done(c, fail, false);
    ASSERT_EQ(j->state, TENQ_STATE_SCHEDULED);
    ASSERT_STR(j->error, "not today");
    tenq_job_free(j);
    j = wait_done(c, dead, true);
    ASSERT_EQ(j->state, TENQ_STATE_DEAD);
    ASSERT_STR(j->error, "never");
    tenq_job_free(j);
    j = wait_done(c, bad, false);
    ASSERT_EQ(j->state, TENQ_STATE_SCHEDULED);
    ASSERT_MSG(!strncmp(j->error, "invalid result JSON", 19), "%s", j->error);
    tenq_job_free(j);
    /* a type without a handler is never leased */
    ASSERT(tenq_status(c, other, &j) == 0);
    ASSERT_EQ(j->state, TENQ_STATE_READY);
    tenq_job_free(j);
    tenq_worker_counts n;
    tenq_worker_counts_get(w, &n);
    ASSERT_EQ(n.leased, 15);
    ASSERT_EQ(n.succeeded, 12);
    ASSERT_EQ(n.failed, 3);
    ASSERT_EQ(run_stop(&r), 0);
    ASSERT_EQ(atomic_load(&peak), 3); /* three at once, never more */
    tenq_client_free(c);
}

/* ---- progress and stats ---- */

static tenq_result h_progress(tenq_task *t, void *ctx)
{
    (void)ctx;
    ASSERT(tenq_task_progress(t, "{\"step\":1}") == 0);
    ASSERT_EQ(tenq_task_progress(t, "{bad"), TENQ_EINVALID);
    /* the test sees the progress on the server before we return */
    tenq_client *c = client();
    int64_t until = test_now_ms() + 5000;
    for (;;) {
        tenq_job *j = NULL;
        ASSERT(tenq_status(c, tenq_task_job(t)->id, &j) == 0);
        bool seen = j->progress_json && !strcmp(j->progress_json, "{\"step\":1}");
        tenq_job_free(j);
        if (seen) break;
        ASSERT_MSG(test_now_ms() < until, "the progress did not reach the server");
        test_sleep_ms(20);
    }
    tenq_client_free(c);
    ASSERT_EQ(tenq_task_stats(t, "[1,2]"), TENQ_EINVALID); /* stats are an object */
    ASSERT_EQ(tenq_task_stats(t, "{bad"), TENQ_EINVALID);
    ASSERT(tenq_task_stats(t, "{\"rows\":42}") == 0);
    return tenq_result_ok("\"fine\"");
}

TEST(progress_and_stats)
{
    test_server_start(NULL);
    tenq_client *c = client();
    uint64_t id = submit(c, "wp", "P", NULL);
    tenq_worker *w = worker("wp", 1, 5000);
    ASSERT(tenq_worker_handle(w, NULL, h_progress, NULL) == 0); /* every type */
    running r;
    run_start(&r, w);
    tenq_job *j = wait_done(c, id, true);
    ASSERT_EQ(j->state, TENQ_STATE_SUCCEEDED);
    ASSERT_STR(j->result_json, "\"fine\"");
    ASSERT_STR(j->stats_json, "{\"rows\":42}");
    tenq_job_free(j);
    ASSERT_EQ(run_stop(&r), 0);
    tenq_client_free(c);
}

/* ---- cancel and lost leases ---- */

static tenq_result h_wait_stop(tenq_task *t, void *ctx)
{
    atomic_int *seen = ctx;
    struct pollfd p = {tenq_task_stop_fd(t), POLLIN, 0};
    int64_t until = test_now_ms() + 10000;
    tenq_stop why;
    while ((why = tenq_task_stopping(t)) == TENQ_STOP_NONE && test_now_ms() < until)
        poll(&p, 1, 1000);
    atomic_store(seen, (int)why);
    return tenq_result_fail("stopped", TENQ_RETRY_BACKOFF);
}

TEST(cancel_reaches_the_handler)
{
    test_server_start(NULL);
    tenq_client *c = client();
    set_queue(c, "wc", "{\"lease_ms\":900}"); /* heartbeats every 300 ms */
    uint64_t id = submit(c, "wc", "C", NULL);
    atomic_int seen = 0;
    tenq_worker *w = worker("wc", 1, 5000);
    ASSERT(tenq_worker_handle(w, "C", h_wait_stop, &seen) == 0);
    running r;
    run_start(&r, w);
    tenq_job *j = NULL;
    for (int i = 0; i < 500; i++) {
        ASSERT(tenq_status(c, id, &j) == 0);
        bool running = j->state == TENQ_STATE_RUNNING;
        tenq_job_free(j);
        if (running) break;
        test_sleep_ms(10);
    }
    tenq_state st;
    bool requested;
    ASSERT(tenq_cancel(c, id, &st, &requested) == 0);
    ASSERT(requested);
    j = wait_done(c, id, true);
    ASSERT_EQ(j->state, TENQ_STATE_CANCELLED);
    tenq_job_free(j);
    ASSERT_EQ(atomic_load(&seen), TENQ_STOP_CANCELLED);
    ASSERT_EQ(run_stop(&r), 0);
    tenq_client_free(c);
}

TEST(lost_lease_reaches_the_handler)
{
    test_server_start(NULL);
    tenq_client *c = client();
    set_queue(c, "wl", "{\"lease_ms\":600}");
    uint64_t id = submit(c, "wl", "L", NULL);
    atomic_int seen = 0;
    tenq_worker *w = worker("wl", 1, 5000);
    ASSERT(tenq_worker_handle(w, "L", h_wait_stop, &seen) == 0);
    running r;
    run_start(&r, w);
    /* someone else ends the attempt: the worker's next heartbeat is refused */
    tenq_job *j = NULL;
    for (int i = 0; i < 500; i++) {
        ASSERT(tenq_status(c, id, &j) == 0);
        if (j->state == TENQ_STATE_RUNNING) break;
        tenq_job_free(j);
        j = NULL;
        test_sleep_ms(10);
    }
    ASSERT(j != NULL);
    tenq_fail_req f = {0};
    f.error = "taken away";
    f.no_retry = true;
    ASSERT(tenq_fail(c, id, j->token, &f, NULL, NULL) == 0);
    tenq_job_free(j);
    int64_t until = test_now_ms() + 5000;
    while (atomic_load(&seen) == 0 && test_now_ms() < until) test_sleep_ms(10);
    ASSERT_EQ(atomic_load(&seen), TENQ_STOP_LOST);
    test_sleep_ms(100);
    tenq_worker_counts n;
    tenq_worker_counts_get(w, &n);
    ASSERT_EQ(n.lost, 1);
    ASSERT_EQ(n.in_hand, 0); /* its outcome was dropped, not sent */
    ASSERT_EQ(run_stop(&r), 0);
    j = wait_done(c, id, true);
    ASSERT_STR(j->error, "taken away");
    tenq_job_free(j);
    tenq_client_free(c);
}

/* ---- stopping ---- */

static tenq_worker *signalled;

static void on_usr1(int sig)
{
    (void)sig;
    tenq_worker_stop(signalled);
}

static tenq_result h_raise(tenq_task *t, void *ctx)
{
    (void)t;
    (void)ctx;
    raise(SIGUSR1); /* the worker stops while this job runs: it still finishes */
    test_sleep_ms(200);
    return tenq_result_ok("{\"finished\":true}");
}

TEST(stop_from_a_signal_handler_lets_the_job_finish)
{
    test_server_start(NULL);
    tenq_client *c = client();
    uint64_t id = submit(c, "ws", "S", NULL);
    submit(c, "ws", "S", NULL); /* never leased: the worker stopped */
    tenq_worker *w = worker("ws", 1, 5000);
    ASSERT(tenq_worker_handle(w, "S", h_raise, NULL) == 0);
    signalled = w;
    struct sigaction sa = {0};
    sa.sa_handler = on_usr1;
    ASSERT(sigaction(SIGUSR1, &sa, NULL) == 0);
    int64_t t0 = test_now_ms();
    ASSERT_EQ(tenq_worker_run(w), 0); /* on this thread: returns after the stop */
    ASSERT(test_now_ms() - t0 < 3000);
    tenq_job *j = NULL;
    ASSERT(tenq_status(c, id, &j) == 0);
    ASSERT_EQ(j->state, TENQ_STATE_SUCCEEDED);
    tenq_job_free(j);
    ASSERT(tenq_status(c, id + 1, &j) == 0);
    ASSERT_EQ(j->state, TENQ_STATE_READY);
    tenq_job_free(j);
    ASSERT_EQ(tenq_worker_run(w), TENQ_EINVALID); /* once */
    tenq_worker_free(w);
    tenq_client_free(c);
}

TEST(stop_before_run_returns_at_once)
{
    test_server_start(NULL);
    tenq_worker *w = worker("wb", 2, 5000);
    ASSERT(tenq_worker_handle(w, "X", h_ok, NULL) == 0);
    tenq_worker_stop(w);
    int64_t t0 = test_now_ms();
    ASSERT_EQ(tenq_worker_run(w), 0);
    ASSERT(test_now_ms() - t0 < 1000);
    tenq_worker_free(w);
}

TEST(grace_period_then_shutdown)
{
    test_server_start(NULL);
    tenq_client *c = client();
    uint64_t id = submit(c, "wg", "G", NULL);
    atomic_int seen = 0;
    tenq_worker *w = worker("wg", 1, 300);
    ASSERT(tenq_worker_handle(w, "G", h_wait_stop, &seen) == 0);
    running r;
    run_start(&r, w);
    tenq_job *j = NULL;
    for (int i = 0; i < 500; i++) {
        ASSERT(tenq_status(c, id, &j) == 0);
        bool running = j->state == TENQ_STATE_RUNNING;
        tenq_job_free(j);
        if (running) break;
        test_sleep_ms(10);
    }
    int64_t t0 = test_now_ms();
    ASSERT_EQ(run_stop(&r), 0);
    int64_t took = test_now_ms() - t0;
    ASSERT_MSG(took >= 250 && took < 3000, "took %lld ms", (long long)took);
    ASSERT_EQ(atomic_load(&seen), TENQ_STOP_SHUTDOWN);
    ASSERT(tenq_status(c, id, &j) == 0);
    ASSERT_EQ(j->state, TENQ_STATE_SCHEDULED);
    ASSERT_STR(j->error, "stopped");
    tenq_job_free(j);
    tenq_client_free(c);
}

static tenq_result h_slow(tenq_task *t, void *ctx)
{
    (void)t;
    atomic_int *n = ctx;
    atomic_fetch_add(n, 1);
    test_sleep_ms(300); /* the server goes away meanwhile */
    return tenq_result_ok(NULL);
}

TEST(server_away_then_second_stop_abandons)
{
    test_server_start(NULL);
    tenq_client *c = client();
    set_queue(c, "wa", "{\"lease_ms\":60000}");
    atomic_int ran = 0;
    tenq_worker *w = worker("wa", 1, 60000);
    ASSERT(tenq_worker_handle(w, "A", h_slow, &ran) == 0);
    running r;
    run_start(&r, w);
    /* the server goes away with the job leased: its outcome is kept */
    submit(c, "wa", "A", NULL);
    int64_t until = test_now_ms() + 5000;
    while (atomic_load(&ran) == 0 && test_now_ms() < until) test_sleep_ms(1);
    test_server_kill(SIGKILL);
    test_sleep_ms(600);
    tenq_worker_counts n;
    tenq_worker_counts_get(w, &n);
    ASSERT_EQ(n.in_hand, 1);
    tenq_worker_stop(w); /* graceful: would wait out the 60 s grace */
    test_sleep_ms(100);
    int64_t t0 = test_now_ms();
    ASSERT_EQ(run_stop(&r), 0); /* the second stop: at once */
    ASSERT(test_now_ms() - t0 < 2000);
    tenq_client_free(c);
}

/* ---- errors ---- */

/* ---- durable steps ---- */

static atomic_int ran_a, ran_b, ran_c, runs;

/* Steps a and b, then a failure on the first attempt; c on the second. */
static tenq_result h_steps(tenq_task *t, void *ctx)
{
    (void)ctx;
    atomic_fetch_add(&runs, 1);
    const char *a, *b;
    if (tenq_task_step_get(t, "a", &a) == TENQ_ENOT_FOUND) {
        atomic_fetch_add(&ran_a, 1);
        ASSERT_EQ(tenq_task_step_put(t, "a", "{\"n\":1}"), 0);
        a = "{\"n\":1}";
    }
    if (tenq_task_step_get(t, "b", &b) == TENQ_ENOT_FOUND) {
        atomic_fetch_add(&ran_b, 1);
        ASSERT_EQ(tenq_task_step_put(t, "b", "[2]"), 0);
        return tenq_result_fail("after b", 0); /* retried at once */
    }
    const char *c;
    if (tenq_task_step_get(t, "c", &c) == TENQ_ENOT_FOUND) {
        atomic_fetch_add(&ran_c, 1);
        ASSERT_EQ(tenq_task_step_put(t, "c", "3"), 0);
    }
    char out[256];
    snprintf(out, sizeof out, "{\"a\":%s,\"b\":%s}", a, b);
    return tenq_result_ok(out);
}

TEST(steps_run_once_across_attempts)
{
    test_server_start(NULL);
    tenq_client *c = client();
    uint64_t id = submit(c, "ws", "S", NULL);
    tenq_worker *w = worker("ws", 1, 5000);
    ASSERT(tenq_worker_handle(w, "S", h_steps, NULL) == 0);
    running r;
    run_start(&r, w);
    tenq_job *j = wait_done(c, id, true);
    ASSERT_EQ(j->state, TENQ_STATE_SUCCEEDED);
    ASSERT_STR(j->result_json, "{\"a\":{\"n\":1},\"b\":[2]}");
    ASSERT_EQ(j->attempts, 2);
    tenq_job_free(j);
    ASSERT_EQ(atomic_load(&runs), 2);
    ASSERT_EQ(atomic_load(&ran_a), 1);
    ASSERT_EQ(atomic_load(&ran_b), 1);
    ASSERT_EQ(atomic_load(&ran_c), 1);
    tenq_step *v;
    size_t n;
    ASSERT_EQ(tenq_steps(c, id, &v, &n), 0);
    ASSERT_EQ(n, 3);
    ASSERT_STR(v[0].name, "a");
    ASSERT_STR(v[1].result_json, "[2]");
    ASSERT_EQ(v[1].attempt, 1);
    ASSERT_EQ(v[2].attempt, 2);
    ASSERT(v[2].done && v[2].kind == TENQ_STEP_RUN);
    tenq_steps_free(v, n);
    ASSERT_EQ(run_stop(&r), 0);
    tenq_client_free(c);
}

static atomic_int park_runs;

/* A sleep, a wait for an event, a child: each parks the job once. */
static tenq_result h_park(tenq_task *t, void *ctx)
{
    (void)ctx;
    atomic_fetch_add(&park_runs, 1);
    bool parked;
    ASSERT_EQ(tenq_task_sleep(t, "nap", 300, &parked), 0);
    if (parked) return tenq_result_parked();
    char key[64];
    snprintf(key, sizeof key, "go-%llu", (unsigned long long)tenq_task_job(t)->id);
    const char *payload;
    ASSERT_EQ(tenq_task_wait_event(t, "go", key, 0, &payload, &parked), 0);
    if (parked) return tenq_result_parked();
    tenq_submit_req kid = {0};
    kid.queue = "wk";
    kid.type = "K";
    kid.args_json = payload;
    const char *result, *error;
    ASSERT_EQ(tenq_task_run_child(t, "kid", &kid, &result, &error, &parked), 0);
    if (parked) return tenq_result_parked();
    ASSERT(error == NULL);
    const char *late;
    /* a timeout: the wait ends without its event */
    int rc = tenq_task_wait_event(t, "never", "never", 200, &late, &parked);
    if (parked) return tenq_result_parked();
    ASSERT_EQ(rc, TENQ_ETIMEOUT);
    char out[256];
    snprintf(out, sizeof out, "{\"event\":%s,\"kid\":%s}", payload, result);
    return tenq_result_ok(out);
}

static tenq_result h_kid(tenq_task *t, void *ctx)
{
    (void)ctx;
    char out[128];
    snprintf(out, sizeof out, "{\"got\":%s}", tenq_task_job(t)->args_json);
    return tenq_result_ok(out);
}

TEST(sleep_event_and_child_park_the_job_and_it_resumes)
{
    test_server_start(NULL);
    tenq_client *c = client();
    uint64_t id = submit(c, "wq", "P", NULL);
    tenq_worker *w = worker("wq", 1, 5000);
    ASSERT(tenq_worker_handle(w, "P", h_park, NULL) == 0);
    tenq_worker *wk = worker("wk", 1, 5000);
    ASSERT(tenq_worker_handle(wk, "K", h_kid, NULL) == 0);
    running r, rk;
    run_start(&r, w);
    run_start(&rk, wk);
    /* after the sleep it waits for its event */
    int64_t until = test_now_ms() + 20000;
    for (;;) {
        tenq_job *j = NULL;
        ASSERT(tenq_status(c, id, &j) == 0);
        bool waiting = j->state == TENQ_STATE_WAITING;
        tenq_job_free(j);
        if (waiting) break;
        ASSERT_MSG(test_now_ms() < until, "the job never waited for its event");
        test_sleep_ms(20);
    }
    char key[64];
    snprintf(key, sizeof key, "go-%llu", (unsigned long long)id);
    size_t delivered = 0;
    bool kept = true;
    ASSERT_MSG(tenq_send_event(c, "acme", key, "{\"x\":1}", &delivered, &kept) == 0, "%s",
               tenq_errmsg(c));
    ASSERT_EQ(delivered, 1);
    ASSERT(!kept);
    tenq_job *j = wait_done(c, id, true);
    ASSERT_EQ(j->state, TENQ_STATE_SUCCEEDED);
    ASSERT_STR(j->result_json, "{\"event\":{\"x\":1},\"kid\":{\"got\":{\"x\":1}}}");
    ASSERT_EQ(j->attempts, 1); /* parked leases are not failed attempts */
    tenq_job_free(j);
    /* the first run, and one after each of the four waits */
    ASSERT_EQ(atomic_load(&park_runs), 5);
    tenq_step *v;
    size_t n;
    ASSERT_EQ(tenq_steps(c, id, &v, &n), 0);
    ASSERT_EQ(n, 4);
    ASSERT(v[0].kind == TENQ_STEP_SLEEP && v[1].kind == TENQ_STEP_EVENT &&
           v[2].kind == TENQ_STEP_CHILD && v[3].kind == TENQ_STEP_EVENT);
    ASSERT_STR(v[1].result_json, "{\"x\":1}");
    ASSERT_EQ(v[2].child_state, TENQ_STATE_SUCCEEDED);
    ASSERT_STR(v[3].error, "timed out");
    tenq_steps_free(v, n);
    ASSERT_EQ(run_stop(&r), 0);
    ASSERT_EQ(run_stop(&rk), 0);
    tenq_client_free(c);
}

/* An event step whose first answer was lost: the handler's own request
 * stored it (taking a kept event); the task's, sent again, is answered a
 * duplicate without the payload, which it reads back from the steps. */
static tenq_result h_dup_event(tenq_task *t, void *ctx)
{
    (void)ctx;
    const tenq_job *job = tenq_task_job(t);
    tenq_client *c = client();
    tenq_step_req r = {.name = "ev", .kind = TENQ_STEP_EVENT, .event = "dup-key"};
    tenq_step_res res;
    ASSERT_MSG(tenq_step_store(c, job->id, job->token, &r, &res) == 0, "%s", tenq_errmsg(c));
    ASSERT(res.done && !res.parked);
    tenq_free(res.result_json);
    tenq_client_free(c);
    const char *payload;
    bool parked;
    ASSERT_EQ(tenq_task_wait_event(t, "ev", "dup-key", 0, &payload, &parked), 0);
    ASSERT(!parked);
    return tenq_result_ok(payload);
}

TEST(an_event_step_sent_again_reads_its_payload_back)
{
    test_server_start(NULL);
    tenq_client *c = client();
    size_t delivered = 1;
    bool kept = false;
    ASSERT_MSG(tenq_send_event(c, "acme", "dup-key", "{\"early\":true}", &delivered, &kept) == 0,
               "%s", tenq_errmsg(c));
    ASSERT(kept && delivered == 0);
    uint64_t id = submit(c, "wd", "D", NULL);
    tenq_worker *w = worker("wd", 1, 5000);
    ASSERT(tenq_worker_handle(w, "D", h_dup_event, NULL) == 0);
    running r;
    run_start(&r, w);
    tenq_job *j = wait_done(c, id, true);
    ASSERT_EQ(j->state, TENQ_STATE_SUCCEEDED);
    ASSERT_STR(j->result_json, "{\"early\":true}");
    tenq_job_free(j);
    ASSERT_EQ(run_stop(&r), 0);
    tenq_client_free(c);
}

TEST(api_errors)
{
    tenq_worker_options o;
    tenq_worker_options_init(&o);
    tenq_worker *w = NULL;
    ASSERT_EQ(tenq_worker_new(&o, &w), TENQ_EINVALID); /* no queue */
    ASSERT(strstr(tenq_worker_errmsg(w), "queue"));
    tenq_worker_free(w);
    const char *q[] = {"q"};
    o.queues = q;
    o.nqueues = 1;
    o.concurrency = TENQ_WORKER_MAX_CONCURRENCY + 1;
    ASSERT_EQ(tenq_worker_new(&o, &w), TENQ_EINVALID);
    tenq_worker_free(w);
    o.concurrency = 2;
    ASSERT_EQ(tenq_worker_new(&o, &w), 0);
    ASSERT_EQ(tenq_worker_run(w), TENQ_EINVALID); /* no handler */
    tenq_worker_free(w);
    ASSERT_EQ(tenq_worker_new(&o, &w), 0);
    ASSERT_EQ(tenq_worker_handle(w, "has space", h_ok, NULL), TENQ_EINVALID);
    ASSERT_EQ(tenq_worker_handle(w, "", h_ok, NULL), TENQ_EINVALID);
    ASSERT_EQ(tenq_worker_handle(w, "T", NULL, NULL), TENQ_EINVALID);
    ASSERT_EQ(tenq_worker_handle(w, "T", h_ok, NULL), 0);
    ASSERT_EQ(tenq_worker_handle(w, "T", h_ok, NULL), TENQ_EINVALID); /* twice */
    ASSERT_EQ(tenq_worker_handle(w, NULL, h_ok, NULL), 0);
    ASSERT_EQ(tenq_worker_handle(w, NULL, h_ok, NULL), TENQ_EINVALID);
    char *text = NULL;
    ASSERT_EQ(tenq_worker_status(w, &text), 0);
    ASSERT_STR(text, "0 job(s) in hand\n");
    tenq_free(text);
    tenq_worker_free(w);
    tenq_worker_free(NULL);
    tenq_worker_stop(NULL);
    tenq_result r = tenq_result_fail("x", -5);
    ASSERT_EQ(r.retry_in_ms, TENQ_RETRY_BACKOFF);
    free(r.error);
    r = tenq_result_no_retry(NULL);
    ASSERT(!r.ok && r.no_retry && !r.error);
    r = tenq_result_ok(NULL);
    ASSERT(r.ok && !r.result_json);
}
