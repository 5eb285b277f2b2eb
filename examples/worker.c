// SPDX-License-Identifier: Apache-2.0
/* An in-process tenq worker: a C function is the handler of the type
 * "Example.greet".  The program submits a few jobs, runs them on two
 * threads, waits for each to finish, and stops the worker.
 *
 *     cc worker.c $(pkg-config --cflags --libs tenq) -o worker
 *     ./worker [SERVER_URL] [JOBS]
 *
 * SERVER_URL defaults to TENQ_SERVER, then http://127.0.0.1:7070; the
 * token, if any, is TENQ_TOKEN.  Exits 0 when every job succeeded with the
 * expected result.  Ctrl-C stops the worker (a second one abandons what is
 * not reported yet). */
#include <tenq/tenq.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QUEUE "example"
#define TYPE  "Example.greet"

static tenq_worker *the_worker; /* for the signal handler */

/* The handler: runs on one of the worker's threads, once per job. */
static tenq_result greet(tenq_task *task, void *ctx)
{
    const char *greeting = ctx;
    const tenq_job *job = tenq_task_job(task);
    if (!job->args_json) return tenq_result_no_retry("no args");
    /* a real handler would do its work here, and may report progress */
    tenq_task_progress(task, "0.5");
    char result[512];
    int n = snprintf(result, sizeof result, "{\"greeting\":\"%s\",\"args\":%s,\"attempt\":%u}",
                     greeting, job->args_json, job->attempt);
    if (n < 0 || (size_t)n >= sizeof result) return tenq_result_no_retry("args too long");
    return tenq_result_ok(result);
}

static void on_signal(int sig)
{
    (void)sig;
    tenq_worker_stop(the_worker); /* async-signal-safe */
}

typedef struct waiter {
    const char *server;
    uint64_t *ids;
    int n;
    int succeeded;
} waiter;

/* Waits for every job (on its own client: a client is one thread's), then
 * stops the worker. */
static void *wait_all(void *arg)
{
    waiter *wt = arg;
    tenq_options o;
    tenq_options_init(&o);
    o.servers = &wt->server;
    o.nservers = 1;
    o.token = getenv("TENQ_TOKEN");
    tenq_client *c = NULL;
    if (tenq_client_new(&o, &c) == 0) {
        for (int i = 0; i < wt->n; i++) {
            tenq_job *job = NULL;
            int rc = tenq_wait(c, wt->ids[i], 60000, &job);
            if (rc != 0) {
                fprintf(stderr, "worker example: wait %llu: %s\n", (unsigned long long)wt->ids[i],
                        tenq_errmsg(c));
                continue;
            }
            printf("job %llu: %s %s\n", (unsigned long long)job->id, tenq_state_name(job->state),
                   job->result_json ? job->result_json : "");
            if (job->state == TENQ_STATE_SUCCEEDED && job->result_json &&
                strstr(job->result_json, "\"greeting\":\"hello\""))
                wt->succeeded++;
            tenq_job_free(job);
        }
    }
    tenq_client_free(c);
    tenq_worker_stop(the_worker);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *server = argc > 1 ? argv[1] : getenv("TENQ_SERVER");
    if (!server || !*server) server = "http://127.0.0.1:7070";
    int n = argc > 2 ? atoi(argv[2]) : 5;
    if (n < 1 || n > 1000) n = 5;
    int status = 1;
    tenq_client *c = NULL;
    uint64_t *ids = calloc((size_t)n, sizeof(uint64_t));
    pthread_t th;
    bool waiting = false;

    /* submit the jobs */
    tenq_options co;
    tenq_options_init(&co);
    co.servers = &server;
    co.nservers = 1;
    co.token = getenv("TENQ_TOKEN");
    if (!ids || tenq_client_new(&co, &c) != 0) {
        fprintf(stderr, "worker example: %s\n", c ? tenq_errmsg(c) : "out of memory");
        goto out;
    }
    for (int i = 0; i < n; i++) {
        char args[64];
        snprintf(args, sizeof args, "{\"name\":\"world-%d\"}", i);
        tenq_submit_req r = {0};
        r.tenant = "example";
        r.queue = QUEUE;
        r.type = TYPE;
        r.args_json = args;
        tenq_submit_res res;
        if (tenq_submit(c, &r, &res) != 0) {
            fprintf(stderr, "worker example: submit: %s\n", tenq_errmsg(c));
            goto out;
        }
        ids[i] = res.id;
    }

    /* the worker: two handlers at once on the example queue */
    tenq_worker_options o;
    tenq_worker_options_init(&o);
    const char *queues[] = {QUEUE};
    o.servers = &server;
    o.nservers = 1;
    o.token = getenv("TENQ_TOKEN");
    o.queues = queues;
    o.nqueues = 1;
    o.concurrency = 2;
    o.grace_ms = 10000;
    if (tenq_worker_new(&o, &the_worker) != 0 ||
        tenq_worker_handle(the_worker, TYPE, greet, "hello") != 0) {
        fprintf(stderr, "worker example: %s\n",
                the_worker ? tenq_worker_errmsg(the_worker) : "out of memory");
        goto out;
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    waiter wt = {server, ids, n, 0};
    if (pthread_create(&th, NULL, wait_all, &wt) != 0) goto out;
    waiting = true;
    int rc = tenq_worker_run(the_worker);
    pthread_join(th, NULL);
    waiting = false;
    if (rc != 0) {
        fprintf(stderr, "worker example: %s\n", tenq_worker_errmsg(the_worker));
        goto out;
    }
    printf("%d of %d jobs succeeded\n", wt.succeeded, n);
    status = wt.succeeded == n ? 0 : 1;
out:
    if (waiting) {
        tenq_worker_stop(the_worker);
        pthread_join(th, NULL);
    }
    tenq_worker_free(the_worker);
    tenq_client_free(c);
    free(ids);
    return status;
}
