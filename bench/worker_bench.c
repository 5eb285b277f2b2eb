// SPDX-License-Identifier: Apache-2.0
/* make bench-worker: jobs drained by workers, end to end over HTTP.
 *
 * Each mode gets a fresh `tenq serve` on SQLite (fsync'd commits, as
 * bench_server), N blank jobs submitted in batches of 1,000 beforehand,
 * then a worker with 5 handlers at once; the time runs from the worker's
 * start to the last outcome the server took.
 *   lines      100,000 jobs: tenq work --lines --pool 5 with the C handler
 *              bench/lines_handler.c (answers each line at once)
 *   exec         5,000 jobs: tenq work --concurrency 5 -- /bin/true
 *   inprocess  100,000 jobs: libtenq's tenq_worker, concurrency 5, a C
 *              function that returns ok
 *   evloop     100,000 jobs: not a product, the measurement behind the
 *              worker's design (docs/ARCHITECTURE.md, "Worker"): one
 *              libevent thread, lease and outcome requests pipelined on two
 *              connections, handlers called inline, 5 jobs in hand at most
 * Prints  worker mode=M drain_jobs_per_s=X  per mode.
 *
 * Usage: bench_worker TENQ_BIN LINES_HANDLER [modes] [jobs]
 *   modes: a comma-separated subset of lines,exec,inprocess,evloop (default
 *   lines,exec,inprocess); jobs overrides the 100,000 (exec takes 1/20).
 */
#include "tenq/tenq.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CONCURRENCY 5
#define QUEUE       "bench"

static char url[64];
static int port;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, tenq_client *c)
{
    fprintf(stderr, "bench_worker: %s: %s\n", what, c ? tenq_errmsg(c) : "failed");
    exit(1);
}

static tenq_client *client(void)
{
    tenq_options o;
    tenq_options_init(&o);
    const char *u = url;
    o.servers = &u;
    o.nservers = 1;
    o.request_timeout_ms = 120000;
    tenq_client *c = NULL;
    if (tenq_client_new(&o, &c) != 0) die("client", c);
    return c;
}

/* ---- the server ---------------------------------------------------------------------------- */

static pid_t start_server(const char *bin, const char *dir, const char *tag)
{
    char port_file[512], store[512], log[512];
    snprintf(port_file, sizeof port_file, "%s/%s.port", dir, tag);
    snprintf(store, sizeof store, "sqlite:%s/%s.db", dir, tag);
    snprintf(log, sizeof log, "%s/%s.log", dir, tag);
    unlink(port_file);
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stdout) || !freopen(log, "w", stderr)) _exit(127);
        execl(bin, bin, "serve", "--listen", "127.0.0.1:0", "--store", store, "--port-file",
              port_file, "--log-level", "warn", (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 3000; i++) {
        FILE *f = fopen(port_file, "r");
        if (f) {
            int ok = fscanf(f, "%d", &port) == 1;
            fclose(f);
            if (ok) {
                snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
                return pid;
            }
        }
        usleep(10000);
    }
    fprintf(stderr, "the server did not start (see %s)\n", log);
    exit(1);
}

static void stop_pid(pid_t pid)
{
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
}

static void submit_blank(long jobs)
{
    tenq_client *c = client();
    static tenq_submit_req reqs[1000];
    static tenq_submit_res res[1000];
    for (int i = 0; i < 1000; i++) {
        memset(&reqs[i], 0, sizeof reqs[i]);
        reqs[i].tenant = "acme";
        reqs[i].queue = QUEUE;
        reqs[i].type = "Blank";
    }
    for (long sent = 0; sent < jobs; sent += 1000) {
        size_t n = jobs - sent < 1000 ? (size_t)(jobs - sent) : 1000;
        if (tenq_submit_batch(c, reqs, n, res) != 0) die("submit", c);
    }
    tenq_client_free(c);
}

/* succeeded_total of the bench queue */
static long succeeded(tenq_client *c)
{
    char *body = NULL;
    if (tenq_request(c, "GET", "/v1/queues/" QUEUE, NULL, 0, NULL, &body) != 0)
        die("queue stats", c);
    json_t *q = json_loads(body, 0, NULL);
    long n = (long)json_integer_value(json_object_get(q, "succeeded_total"));
    json_decref(q);
    tenq_free(body);
    return n;
}

static double wait_drained(long jobs, double t0)
{
    tenq_client *c = client();
    while (succeeded(c) < jobs) usleep(2000);
    double s = now_s() - t0;
    tenq_client_free(c);
    return s;
}

/* The server's requests and commits so far, on stderr: how well the
 * worker batched. */
static void server_counts(long jobs)
{
    tenq_client *c = client();
    char *body = NULL;
    if (tenq_request(c, "GET", "/v1/stats", NULL, 0, NULL, &body) == 0) {
        json_t *st = json_loads(body, 0, NULL), *srv = json_object_get(st, "server");
        long long req = json_integer_value(json_object_get(srv, "requests"));
        long long com = json_integer_value(json_object_get(srv, "commits"));
        fprintf(stderr, "  (server: %.2f requests and %.3f commits per job)\n",
                (double)req / (double)jobs, (double)com / (double)jobs);
        json_decref(st);
    }
    tenq_free(body);
    tenq_client_free(c);
}

/* ---- tenq work ------------------------------------------------------------------------------ */

static double run_work(const char *bin, char *const *handler_args, long jobs)
{
    char *argv[32];
    int n = 0;
    argv[n++] = (char *)bin;
    argv[n++] = "work";
    argv[n++] = "--server";
    argv[n++] = url;
    argv[n++] = "--queue";
    argv[n++] = QUEUE;
    for (int i = 0; handler_args[i]; i++) argv[n++] = handler_args[i];
    argv[n] = NULL;
    double t0 = now_s();
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stdout)) _exit(127);
        execv(bin, argv);
        _exit(127);
    }
    double s = wait_drained(jobs, t0);
    stop_pid(pid);
    return s;
}

/* ---- in-process ------------------------------------------------------------------------------ */

static tenq_result blank(tenq_task *t, void *ctx)
{
    (void)t;
    (void)ctx;
    return tenq_result_ok(NULL);
}

static void *run_worker(void *arg)
{
    if (tenq_worker_run(arg) != 0) fprintf(stderr, "run: %s\n", tenq_worker_errmsg(arg));
    return NULL;
}

static double run_inprocess(long jobs)
{
    tenq_worker_options o;
    tenq_worker_options_init(&o);
    const char *u = url, *q = QUEUE;
    o.servers = &u;
    o.nservers = 1;
    o.queues = &q;
    o.nqueues = 1;
    o.concurrency = CONCURRENCY;
    o.log_level = TENQ_LOG_WARN;
    tenq_worker *w = NULL;
    if (tenq_worker_new(&o, &w) != 0 || tenq_worker_handle(w, "Blank", blank, NULL) != 0) {
        fprintf(stderr, "worker: %s\n", tenq_worker_errmsg(w));
        exit(1);
    }
    double t0 = now_s();
    pthread_t th;
    pthread_create(&th, NULL, run_worker, w);
    double s = wait_drained(jobs, t0);
    tenq_worker_stop(w);
    pthread_join(th, NULL);
    tenq_worker_free(w);
    return s;
}

/* ---- the event-loop prototype ------------------------------------------------------------------
 */

typedef struct evw {
    struct event_base *base;
    struct evhttp_connection *lease_conn, *out_conn;
    bool leasing, reporting;
    long leased;
    json_t *pending;    /* outcomes not sent yet */
    unsigned pending_n; /* ... of them */
    unsigned sending_n; /* in the request in flight */
    long done, jobs;
} evw;

static void ev_pump(evw *e);

static struct evhttp_request *ev_request(evw *e, void (*cb)(struct evhttp_request *, void *),
                                         const char *body)
{
    struct evhttp_request *r = evhttp_request_new(cb, e);
    struct evkeyvalq *h = evhttp_request_get_output_headers(r);
    evhttp_add_header(h, "Host", "bench");
    evhttp_add_header(h, "Content-Type", "application/json");
    evbuffer_add(evhttp_request_get_output_buffer(r), body, strlen(body));
    return r;
}

static json_t *ev_answer(struct evhttp_request *r)
{
    if (!r || evhttp_request_get_response_code(r) != 200) {
        fprintf(stderr, "evloop: a request failed (%d)\n",
                r ? evhttp_request_get_response_code(r) : 0);
        exit(1);
    }
    struct evbuffer *b = evhttp_request_get_input_buffer(r);
    size_t n = evbuffer_get_length(b);
    return json_loadb((const char *)evbuffer_pullup(b, (ssize_t)n), n, 0, NULL);
}

static void ev_leased(struct evhttp_request *r, void *arg)
{
    evw *e = arg;
    e->leasing = false;
    json_t *a = ev_answer(r), *job;
    size_t i;
    json_array_foreach(json_object_get(a, "jobs"), i, job)
    {
        /* the handler, inline: a blank job succeeds at once */
        json_t *o = json_pack("{s:O,s:O,s:b}", "id", json_object_get(job, "id"), "token",
                              json_object_get(job, "token"), "ok", 1);
        json_array_append_new(e->pending, o);
        e->pending_n++;
        e->leased++;
    }
    json_decref(a);
    ev_pump(e);
}

static void ev_reported(struct evhttp_request *r, void *arg)
{
    evw *e = arg;
    json_decref(ev_answer(r));
    e->reporting = false;
    e->done += e->sending_n;
    e->sending_n = 0;
    if (e->done >= e->jobs) {
        event_base_loopbreak(e->base);
        return;
    }
    ev_pump(e);
}

/* Keeps one lease and one outcome request in flight when there is room. */
static void ev_pump(evw *e)
{
    if (!e->reporting && e->pending_n) {
        json_t *body = json_pack("{s:o}", "outcomes", e->pending);
        char *text = json_dumps(body, JSON_COMPACT);
        json_decref(body);
        e->pending = json_array();
        e->sending_n = e->pending_n;
        e->pending_n = 0;
        e->reporting = true;
        evhttp_make_request(e->out_conn, ev_request(e, ev_reported, text), EVHTTP_REQ_POST,
                            "/v1/outcomes");
        free(text);
    }
    /* Handlers return at once, and a job whose outcome waits to be sent
     * frees its slot (as in the library): every lease may ask for all. */
    if (!e->leasing && e->leased < e->jobs) {
        char body[160];
        snprintf(body, sizeof body,
                 "{\"worker\":\"evloop\",\"queues\":[\"" QUEUE "\"],\"max\":%d,\"wait_ms\":1000}",
                 CONCURRENCY);
        e->leasing = true;
        evhttp_make_request(e->lease_conn, ev_request(e, ev_leased, body), EVHTTP_REQ_POST,
                            "/v1/lease");
    }
}

static double run_evloop(long jobs)
{
    evw e = {0};
    e.base = event_base_new();
    e.lease_conn = evhttp_connection_base_new(e.base, NULL, "127.0.0.1", (unsigned short)port);
    e.out_conn = evhttp_connection_base_new(e.base, NULL, "127.0.0.1", (unsigned short)port);
    e.pending = json_array();
    e.jobs = jobs;
    double t0 = now_s();
    ev_pump(&e);
    event_base_dispatch(e.base);
    double s = now_s() - t0;
    json_decref(e.pending);
    evhttp_connection_free(e.lease_conn);
    evhttp_connection_free(e.out_conn);
    event_base_free(e.base);
    return s;
}

/* ---- main ------------------------------------------------------------------------------------ */

static bool wanted(const char *modes, const char *m)
{
    size_t n = strlen(m);
    for (const char *p = modes; (p = strstr(p, m)); p += n)
        if ((p == modes || p[-1] == ',') && (p[n] == 0 || p[n] == ',')) return true;
    return false;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_worker TENQ_BIN LINES_HANDLER [modes] [jobs]\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    const char *bin = argv[1], *handler = argv[2];
    const char *modes = argc > 3 ? argv[3] : "lines,exec,inprocess";
    long jobs = argc > 4 ? atol(argv[4]) : 100000;
    char dir[] = "/var/tmp/tenq-wbench-XXXXXX"; /* a real disk: fsync costs what it costs */
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    static const char *const all[] = {"lines", "exec", "inprocess", "evloop"};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        const char *m = all[i];
        if (!wanted(modes, m)) continue;
        long n = strcmp(m, "exec") == 0 ? jobs / 20 : jobs;
        pid_t server = start_server(bin, dir, m);
        submit_blank(n);
        double s;
        struct rusage r0, r1;
        getrusage(RUSAGE_SELF, &r0);
        if (!strcmp(m, "lines")) {
            char *args[] = {"--lines", "--pool", "5", "--", (char *)handler, NULL};
            s = run_work(bin, args, n);
        } else if (!strcmp(m, "exec")) {
            char *args[] = {"--concurrency", "5", "--", "/bin/true", NULL};
            s = run_work(bin, args, n);
        } else if (!strcmp(m, "inprocess")) {
            s = run_inprocess(n);
        } else {
            s = run_evloop(n);
        }
        getrusage(RUSAGE_SELF, &r1);
        double cpu = (double)(r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) +
                     (double)(r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) +
                     (double)(r1.ru_utime.tv_usec - r0.ru_utime.tv_usec) / 1e6 +
                     (double)(r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) / 1e6;
        printf("worker mode=%s drain_jobs_per_s=%.0f\n", m, (double)n / s);
        server_counts(n);
        fprintf(stderr, "  (%s: %.2f s; this process used %.2f s of CPU, %.1f us per job)\n", m, s,
                cpu, cpu * 1e6 / (double)n);
        fflush(stdout);
        stop_pid(server);
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return 0;
}
