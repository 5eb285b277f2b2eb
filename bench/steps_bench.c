// SPDX-License-Identifier: Apache-2.0
/* make bench-steps: durable steps (docs/SEMANTICS.md, "Durable steps"), end
 * to end over HTTP with libtenq, each mode on a fresh `tenq serve` on SQLite
 * (fsync'd group commits, as bench_server and bench_worker).
 *
 *   steps    JOBS jobs (default 20,000) of 10 no-op steps each (a step's
 *            result is a small JSON number): THREADS client threads
 *            (default 128), each leasing 1 job at a time and storing its 10
 *            steps one request each (POST /v1/jobs/{id}/steps, answered once
 *            committed: concurrent steps share a commit), then acking it.
 *            Prints  steps steps_per_s=X (steps stored a second, the leases
 *            and acks included in the time) jobs_per_s=Y
 *   batched  5 x JOBS jobs of 10 no-op steps each: 5 threads, each leasing
 *            100 jobs at a time (with the outcomes of the last 100), then
 *            storing step k of all 100 in one POST /v1/steps, for k = 0..9
 *            (a worker that runs a batch of jobs side by side).  Prints
 *            batched steps_per_s=X jobs_per_s=Y
 *   onestep  W1 as bench/peers runs it (the tenq driver's loop: 5 threads,
 *            each leasing up to 100 jobs with the outcomes of the last
 *            batch, 100,000 jobs submitted in 10 requests beforehand), on a
 *            fresh server each: plain jobs, then jobs that each store one
 *            step (its result a small number) before their ack, the steps
 *            of a lease's batch in one POST /v1/steps (tenq_steps_store).
 *            Alternated RUNS times (default 3).  Prints  onestep
 *            plain_jobs_per_s=X onestep_jobs_per_s=Y ratio=Y/X (medians)
 *   parked   W1 (plain jobs, as onestep) beside 100,000 parked jobs (each
 *            waiting for an event that never comes, made beforehand) and on
 *            an idle server, alternated RUNS times.  Prints  parked
 *            idle_jobs_per_s=X parked_jobs_per_s=Y ratio=Y/X
 *   event    2,000 jobs each waiting for its own event; one worker thread
 *            long-polls the queue; events are sent 5 ms apart; the latency
 *            is from just before the send to the worker's lease of the job
 *            it woke, and to its read of the job's steps (the payload: a
 *            read that waits for the event's commit).  Prints  event
 *            wake_p50_ms=X p90_ms= p99_ms= max_ms=, then payload_p50_ms=...
 *
 * Usage: bench_steps TENQ_BIN [modes] (modes: comma-separated, default
 * steps,batched,onestep,parked,event).  JOBS, THREADS, RUNS, PARKED in the
 * environment override the defaults.
 */
#include "tenq/tenq.h"

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

#define QUEUE "bench"

static char url[64];
static const char *bin;
static char dir[256];

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static long env_long(const char *name, long dflt)
{
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 10) : dflt;
}

static void die(const char *what, tenq_client *c)
{
    fprintf(stderr, "bench_steps: %s: %s\n", what, c ? tenq_errmsg(c) : "failed");
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

static pid_t start_server(const char *tag)
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
        int port;
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

static double server_cpu_s; /* the CPU time of the last server stopped */

/* With BENCH_THREADS set: the CPU time of each of the server's threads. */
static void thread_cpu(pid_t pid)
{
    if (!getenv("BENCH_THREADS")) return;
    char cmd[200];
    snprintf(cmd, sizeof cmd,
             "for t in /proc/%d/task/*; do echo \"$(cat $t/comm) $(cut -d' ' -f14,15 $t/stat)\"; "
             "done >&2",
             (int)pid);
    if (system(cmd) != 0) return;
}

static void stop_pid(pid_t pid)
{
    if (getenv("BENCH_THREADS")) {
        char cmd[200];
        snprintf(cmd, sizeof cmd,
                 "curl -s %s/metrics | grep -E '^tenq_store_commit(s_total|_seconds_(sum|count))' "
                 ">&2",
                 url);
        if (system(cmd) != 0) fprintf(stderr, "(no metrics)\n");
    }
    thread_cpu(pid);
    kill(pid, SIGTERM);
    struct rusage ru;
    wait4(pid, NULL, 0, &ru);
    server_cpu_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                   (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static void submit_blank(const char *queue, long jobs, size_t per)
{
    tenq_client *c = client();
    tenq_submit_req *reqs = calloc(per, sizeof(*reqs));
    tenq_submit_res *res = calloc(per, sizeof(*res));
    for (size_t i = 0; i < per; i++) {
        reqs[i].tenant = "acme";
        reqs[i].queue = queue;
        reqs[i].type = "Blank";
    }
    for (long sent = 0; sent < jobs; sent += (long)per) {
        size_t n = jobs - sent < (long)per ? (size_t)(jobs - sent) : per;
        if (tenq_submit_batch(c, reqs, n, res) != 0) die("submit", c);
    }
    free(reqs);
    free(res);
    tenq_client_free(c);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- steps: 10 no-op steps a job ------------------------------------------------------------ */

static bool steps_as_submits;
static atomic_long jobs_left, steps_done;

static void *steps_worker(void *p)
{
    (void)p;
    tenq_client *c = client();
    const char *queues[1] = {QUEUE};
    tenq_lease_req lr = {.worker = "bench", .queues = queues, .nqueues = 1, .max = 1};
    static const char *names[10] = {"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9"};
    tenq_outcome out;
    tenq_outcome_res ores;
    size_t nout = 0;
    while (atomic_fetch_sub(&jobs_left, 1) > 0) {
        tenq_job *jobs = NULL;
        size_t n = 0;
        if (tenq_lease_report(c, &out, nout, &ores, &lr, &jobs, &n) != 0) die("lease", c);
        nout = 0;
        if (n == 0) {
            atomic_fetch_add(&jobs_left, 1);
            continue;
        }
        for (int i = 0; i < 10; i++) {
            char result[16];
            snprintf(result, sizeof result, "%d", i);
            if (steps_as_submits) { /* the ceiling: a committed request as small */
                tenq_submit_req one = {.tenant = "acme", .queue = "side", .type = "Blank"};
                tenq_submit_res sres;
                if (tenq_submit(c, &one, &sres) != 0) die("submit", c);
            } else {
                tenq_step_req r = {.name = names[i], .kind = TENQ_STEP_RUN, .result_json = result};
                tenq_step_res res;
                if (tenq_step_store(c, jobs[0].id, jobs[0].token, &r, &res) != 0) die("step", c);
            }
            atomic_fetch_add(&steps_done, 1);
        }
        out = (tenq_outcome){.id = jobs[0].id, .token = jobs[0].token, .ok = true};
        nout = 1;
        tenq_jobs_free(jobs, n);
    }
    if (nout && tenq_outcomes(c, &out, 1, &ores) != 0) die("ack", c);
    tenq_client_free(c);
    return NULL;
}

/* steps_per_s of JOBS jobs of 10 steps on a fresh server (as_submits: each
 * step a one-job submit instead, a request committed as a step is). */
static double steps_run(bool as_submits)
{
    long jobs = env_long("JOBS", 20000), threads = env_long("THREADS", 128);
    pid_t pid = start_server(as_submits ? "steps-ceiling" : "steps");
    submit_blank(QUEUE, jobs, 1000);
    atomic_store(&jobs_left, jobs);
    atomic_store(&steps_done, 0);
    steps_as_submits = as_submits;
    pthread_t *t = calloc((size_t)threads, sizeof(*t));
    double t0 = now_ms();
    for (long i = 0; i < threads; i++) pthread_create(&t[i], NULL, steps_worker, NULL);
    for (long i = 0; i < threads; i++) pthread_join(t[i], NULL);
    double s = (now_ms() - t0) / 1e3;
    free(t);
    stop_pid(pid);
    double rate = (double)atomic_load(&steps_done) / s;
    printf("%s steps_per_s=%.0f jobs_per_s=%.0f server_cpu_us_per_step=%.1f (%ld jobs x 10 "
           "steps, %ld threads; the server's CPU from its start, the submits included)\n",
           as_submits ? "ceiling" : "steps", rate, (double)jobs / s,
           server_cpu_s * 1e6 / (double)atomic_load(&steps_done), jobs, threads);
    fflush(stdout);
    return rate;
}

/* Steps one request each, then the same loop with a one-job submit in each
 * step's place (what a committed request costs here: the ceiling). */
static void mode_steps(void)
{
    double steps = steps_run(false), ceiling = steps_run(true);
    printf("steps ratio_to_ceiling=%.3f\n", steps / ceiling);
    fflush(stdout);
}

/* ---- batched: 10 steps a job, a worker's batch of jobs at a time ---------------------------- */

static void *batched_worker(void *p)
{
    (void)p;
    tenq_client *c = client();
    const char *queues[1] = {QUEUE};
    tenq_lease_req lr = {.worker = "bench", .queues = queues, .nqueues = 1, .max = 100};
    static const char *names[10] = {"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9"};
    static const char *results[10] = {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"};
    tenq_outcome outs[100];
    tenq_outcome_res ores[100];
    tenq_step_item items[100];
    tenq_step_item_res ires[100];
    size_t nout = 0;
    for (;;) {
        tenq_job *jobs = NULL;
        size_t n = 0;
        if (tenq_lease_report(c, outs, nout, ores, &lr, &jobs, &n) != 0) die("lease", c);
        nout = 0;
        if (n == 0) break;
        for (int s = 0; s < 10; s++) { /* step s of every job of the batch: one request */
            for (size_t i = 0; i < n; i++)
                items[i] = (tenq_step_item){
                    jobs[i].id,
                    jobs[i].token,
                    {.name = names[s], .kind = TENQ_STEP_RUN, .result_json = results[s]}};
            if (tenq_steps_store(c, items, n, ires) != 0) die("steps", c);
            atomic_fetch_add(&steps_done, (long)n);
        }
        for (size_t i = 0; i < n; i++)
            outs[nout++] = (tenq_outcome){.id = jobs[i].id, .token = jobs[i].token, .ok = true};
        tenq_jobs_free(jobs, n);
    }
    tenq_client_free(c);
    return NULL;
}

static void mode_batched(void)
{
    long jobs = env_long("JOBS", 20000) * 5;
    pid_t pid = start_server("batched");
    submit_blank(QUEUE, jobs, 10000);
    atomic_store(&steps_done, 0);
    pthread_t t[5];
    double t0 = now_ms();
    for (int i = 0; i < 5; i++) pthread_create(&t[i], NULL, batched_worker, NULL);
    for (int i = 0; i < 5; i++) pthread_join(t[i], NULL);
    double s = (now_ms() - t0) / 1e3;
    stop_pid(pid);
    printf("batched steps_per_s=%.0f jobs_per_s=%.0f server_cpu_us_per_step=%.1f (%ld jobs x 10 "
           "steps, 5 threads, 100 jobs a lease, a step of each in one POST /v1/steps)\n",
           (double)atomic_load(&steps_done) / s, (double)jobs / s,
           server_cpu_s * 1e6 / (double)atomic_load(&steps_done), jobs);
    fflush(stdout);
}

/* ---- W1 as the peers' tenq driver runs it, with or without a step a job --------------------- */

#define W1_JOBS    100000
#define W1_SUBMIT  10000 /* jobs a submit request */
#define W1_BATCH   100   /* jobs a lease, as the peers' driver */
#define W1_THREADS 5

static atomic_long w1_done;

/* What a batch does besides its lease and its outcomes: nothing, store a
 * step for each of its jobs, or submit one blank job to another queue (one
 * more commit a batch, the least there is: the ceiling of a step). */
typedef enum { W1_PLAIN, W1_STEP, W1_COMMIT } w1_mode;

typedef struct w1_arg {
    w1_mode mode;
} w1_arg;

static void *w1_worker(void *p)
{
    w1_arg *a = p;
    tenq_client *c = client();
    const char *queues[1] = {QUEUE};
    tenq_lease_req lr = {
        .worker = "bench", .queues = queues, .nqueues = 1, .max = W1_BATCH, .wait_ms = 1000};
    tenq_lease_req lr_now = lr;
    lr_now.wait_ms = 0;
    tenq_outcome *outs = calloc(W1_BATCH, sizeof(*outs));
    tenq_outcome_res *res = calloc(W1_BATCH, sizeof(*res));
    tenq_step_item *items = calloc(W1_BATCH, sizeof(*items));
    tenq_step_item_res *ires = calloc(W1_BATCH, sizeof(*ires));
    size_t nout = 0;
    while (atomic_load(&w1_done) < W1_JOBS) {
        tenq_job *jobs = NULL;
        size_t n = 0;
        if (tenq_lease_report(c, outs, nout, res, nout ? &lr_now : &lr, &jobs, &n) != 0)
            die("lease", c);
        atomic_fetch_add(&w1_done, (long)nout);
        nout = 0;
        if (a->mode == W1_COMMIT && n) {
            tenq_submit_req one = {.tenant = "acme", .queue = "side", .type = "Blank"};
            tenq_submit_res sres;
            if (tenq_submit(c, &one, &sres) != 0) die("submit", c);
        }
        if (a->mode == W1_STEP && n) {
            /* each job's step, stored (committed) before its ack: the
             * batch's in one POST /v1/steps */
            for (size_t i = 0; i < n; i++)
                items[i] =
                    (tenq_step_item){jobs[i].id,
                                     jobs[i].token,
                                     {.name = "only", .kind = TENQ_STEP_RUN, .result_json = "1"}};
            if (tenq_steps_store(c, items, n, ires) != 0) die("steps", c);
            for (size_t i = 0; i < n; i++)
                if (ires[i].err) die(ires[i].message, NULL);
        }
        for (size_t i = 0; i < n; i++)
            outs[nout++] = (tenq_outcome){.id = jobs[i].id, .token = jobs[i].token, .ok = true};
        tenq_jobs_free(jobs, n);
    }
    if (nout && tenq_outcomes(c, outs, nout, res) != 0) die("outcomes", c);
    free(outs);
    free(res);
    free(items);
    free(ires);
    tenq_client_free(c);
    return NULL;
}

/* The W1 drain (jobs/s) of W1_JOBS jobs submitted beforehand. */
static double self_cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static double w1_drain(w1_mode mode)
{
    submit_blank(QUEUE, W1_JOBS, W1_SUBMIT);
    double c0 = self_cpu_s();
    atomic_store(&w1_done, 0);
    pthread_t t[W1_THREADS];
    w1_arg a = {mode};
    double t0 = now_ms();
    for (int i = 0; i < W1_THREADS; i++) pthread_create(&t[i], NULL, w1_worker, &a);
    for (int i = 0; i < W1_THREADS; i++) pthread_join(t[i], NULL);
    double secs = (now_ms() - t0) / 1e3;
    if (getenv("BENCH_THREADS"))
        fprintf(stderr, "drain %.3f s, the workers' CPU %.3f s\n", secs, self_cpu_s() - c0);
    return W1_JOBS / secs;
}

static void mode_onestep(void)
{
    int runs = (int)env_long("RUNS", 3);
    double plain[16], one[16], commit[16];
    for (int r = 0; r < runs && r < 16; r++) {
        pid_t pid = start_server("w1-plain");
        plain[r] = w1_drain(W1_PLAIN);
        stop_pid(pid);
        double cpu_plain = server_cpu_s;
        pid = start_server("w1-onestep");
        one[r] = w1_drain(W1_STEP);
        stop_pid(pid);
        double cpu_one = server_cpu_s;
        pid = start_server("w1-commit");
        commit[r] = w1_drain(W1_COMMIT);
        stop_pid(pid);
        printf("onestep run %d: plain %.0f jobs/s, one step %.0f jobs/s, one more commit a batch "
               "%.0f jobs/s; the server's CPU a job (submit included): %.1f us, %.1f us, %.1f us\n",
               r + 1, plain[r], one[r], commit[r], cpu_plain * 1e6 / W1_JOBS,
               cpu_one * 1e6 / W1_JOBS, server_cpu_s * 1e6 / W1_JOBS);
        fflush(stdout);
    }
    double p = median(plain, runs), o = median(one, runs), c = median(commit, runs);
    printf("onestep plain_jobs_per_s=%.0f onestep_jobs_per_s=%.0f ratio=%.3f "
           "commit_jobs_per_s=%.0f ratio_to_commit=%.3f\n",
           p, o, o / p, c, o / c);
    fflush(stdout);
}

/* ---- parked: W1 beside 100,000 jobs waiting for events -------------------------------------- */

static void park_jobs(long n)
{
    submit_blank("parked", n, 10000);
    tenq_client *c = client();
    const char *queues[1] = {"parked"};
    tenq_lease_req lr = {.worker = "parker", .queues = queues, .nqueues = 1, .max = 1000};
    long parked = 0;
    while (parked < n) {
        tenq_job *jobs = NULL;
        size_t k = 0;
        if (tenq_lease(c, &lr, &jobs, &k) != 0) die("lease", c);
        for (size_t i = 0; i < k; i++) {
            char key[64];
            snprintf(key, sizeof key, "never-%llu", (unsigned long long)jobs[i].id);
            tenq_step_req r = {.name = "wait", .kind = TENQ_STEP_EVENT, .event = key};
            tenq_step_res res;
            if (tenq_step_store(c, jobs[i].id, jobs[i].token, &r, &res) != 0 || !res.parked)
                die("park", c);
        }
        parked += (long)k;
        tenq_jobs_free(jobs, k);
    }
    tenq_client_free(c);
}

static void mode_parked(void)
{
    int runs = (int)env_long("RUNS", 3);
    long nparked = env_long("PARKED", 100000);
    double idle[16], busy[16];
    for (int r = 0; r < runs && r < 16; r++) {
        pid_t pid = start_server("w1-idle");
        idle[r] = w1_drain(W1_PLAIN);
        stop_pid(pid);
        pid = start_server("w1-parked");
        park_jobs(nparked);
        busy[r] = w1_drain(W1_PLAIN);
        stop_pid(pid);
        printf("parked run %d: idle %.0f jobs/s, beside %ld parked %.0f jobs/s\n", r + 1, idle[r],
               nparked, busy[r]);
        fflush(stdout);
    }
    double i = median(idle, runs), b = median(busy, runs);
    printf("parked idle_jobs_per_s=%.0f parked_jobs_per_s=%.0f ratio=%.3f\n", i, b, b / i);
    fflush(stdout);
}

/* ---- event: send to the lease of the job it woke -------------------------------------------- */

#define EV_JOBS 2000

static double *ev_sent;          /* by index: when its event was sent */
static double *ev_lat, *ev_read; /* to its lease; to its handler's read of the payload */
static atomic_long ev_got;

static void *ev_worker(void *p)
{
    (void)p;
    tenq_client *c = client();
    const char *queues[1] = {"ev"};
    tenq_lease_req lr = {
        .worker = "waker", .queues = queues, .nqueues = 1, .max = 100, .wait_ms = 1000};
    while (atomic_load(&ev_got) < EV_JOBS) {
        tenq_job *jobs = NULL;
        size_t k = 0;
        if (tenq_lease(c, &lr, &jobs, &k) != 0) die("lease", c);
        double t = now_ms();
        tenq_outcome outs[100];
        tenq_outcome_res res[100];
        for (size_t i = 0; i < k; i++) {
            outs[i] = (tenq_outcome){.id = jobs[i].id, .token = jobs[i].token, .ok = true};
            long idx = strtol(strstr(jobs[i].args_json, ":") + 1, NULL, 10); /* {"i":N} */
            long at = atomic_fetch_add(&ev_got, 1);
            ev_lat[at] = t - ev_sent[idx];
            /* the handler reads its steps: the wait's payload (a read that
             * waits for the event's commit) */
            tenq_step *v;
            size_t nv;
            if (tenq_steps(c, jobs[i].id, &v, &nv) != 0 || nv != 1 || !v[0].done) die("steps", c);
            tenq_steps_free(v, nv);
            ev_read[at] = now_ms() - ev_sent[idx];
        }
        if (k && tenq_outcomes(c, outs, k, res) != 0) die("ack", c);
        tenq_jobs_free(jobs, k);
    }
    tenq_client_free(c);
    return NULL;
}

static void mode_event(void)
{
    pid_t pid = start_server("event");
    tenq_client *c = client();
    /* EV_JOBS jobs, each parked on its own event */
    tenq_submit_req *reqs = calloc(EV_JOBS, sizeof(*reqs));
    tenq_submit_res *sres = calloc(EV_JOBS, sizeof(*sres));
    char(*args)[32] = calloc(EV_JOBS, sizeof(*args));
    for (int i = 0; i < EV_JOBS; i++) {
        snprintf(args[i], sizeof args[i], "{\"i\":%d}", i);
        reqs[i] = (tenq_submit_req){
            .tenant = "acme", .queue = "ev", .type = "Wait", .args_json = args[i]};
    }
    if (tenq_submit_batch(c, reqs, EV_JOBS, sres) != 0) die("submit", c);
    const char *queues[1] = {"ev"};
    tenq_lease_req lr = {.worker = "parker", .queues = queues, .nqueues = 1, .max = 1000};
    for (long parked = 0; parked < EV_JOBS;) {
        tenq_job *jobs = NULL;
        size_t k = 0;
        if (tenq_lease(c, &lr, &jobs, &k) != 0) die("lease", c);
        for (size_t i = 0; i < k; i++) {
            char key[64];
            long idx = strtol(strstr(jobs[i].args_json, ":") + 1, NULL, 10);
            snprintf(key, sizeof key, "ev-%ld", idx);
            tenq_step_req r = {.name = "wait", .kind = TENQ_STEP_EVENT, .event = key};
            tenq_step_res res;
            if (tenq_step_store(c, jobs[i].id, jobs[i].token, &r, &res) != 0 || !res.parked)
                die("park", c);
        }
        parked += (long)k;
        tenq_jobs_free(jobs, k);
    }
    ev_sent = calloc(EV_JOBS, sizeof(*ev_sent));
    ev_lat = calloc(EV_JOBS, sizeof(*ev_lat));
    ev_read = calloc(EV_JOBS, sizeof(*ev_read));
    atomic_store(&ev_got, 0);
    pthread_t t;
    pthread_create(&t, NULL, ev_worker, NULL);
    usleep(200000); /* the worker long-polls */
    for (int i = 0; i < EV_JOBS; i++) {
        char key[64];
        snprintf(key, sizeof key, "ev-%d", i);
        size_t delivered = 0;
        ev_sent[i] = now_ms();
        if (tenq_send_event(c, "acme", key, "1", &delivered, NULL) != 0 || delivered != 1)
            die("event", c);
        usleep(5000);
    }
    pthread_join(t, NULL);
    qsort(ev_lat, EV_JOBS, sizeof(*ev_lat), cmp_double);
    qsort(ev_read, EV_JOBS, sizeof(*ev_read), cmp_double);
    printf("event wake_p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f max_ms=%.3f (to the lease of the job "
           "it woke; %d events 5 ms apart)\n",
           ev_lat[EV_JOBS / 2], ev_lat[EV_JOBS * 9 / 10], ev_lat[EV_JOBS * 99 / 100],
           ev_lat[EV_JOBS - 1], EV_JOBS);
    printf("event payload_p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f max_ms=%.3f (to the handler's read "
           "of the payload, GET /v1/jobs/{id}/steps, which waits for the event's commit)\n",
           ev_read[EV_JOBS / 2], ev_read[EV_JOBS * 9 / 10], ev_read[EV_JOBS * 99 / 100],
           ev_read[EV_JOBS - 1]);
    fflush(stdout);
    free(reqs);
    free(sres);
    free(args);
    tenq_client_free(c);
    stop_pid(pid);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_steps TENQ_BIN [steps,batched,onestep,parked,event]\n");
        return 2;
    }
    bin = argv[1];
    const char *modes = argc > 2 ? argv[2] : "steps,batched,onestep,parked,event";
    snprintf(dir, sizeof dir, "/tmp/tenq-bench-steps-XXXXXX");
    if (!mkdtemp(dir)) die("mkdtemp", NULL);
    signal(SIGPIPE, SIG_IGN);
    char *m = strdup(modes), *save = NULL;
    for (char *tok = strtok_r(m, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (!strcmp(tok, "steps"))
            mode_steps();
        else if (!strcmp(tok, "batched"))
            mode_batched();
        else if (!strcmp(tok, "onestep"))
            mode_onestep();
        else if (!strcmp(tok, "parked"))
            mode_parked();
        else if (!strcmp(tok, "event"))
            mode_event();
        else
            die(tok, NULL);
    }
    free(m);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) return 1;
    return 0;
}
