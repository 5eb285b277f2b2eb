// SPDX-License-Identifier: Apache-2.0
/* The tenq driver of the peer benchmark (bench/peers/README.md, "The driver
 * contract"): runs one workload against a running tenq server with libtenq
 * and prints one JSON line.
 *
 * Workers are threads, each with its own client: lease up to `batch` jobs
 * (long poll), run each (a blank job: note its start and end), report all
 * outcomes in one request.  Concurrency 5 means 5 such threads.
 */
#include "tenq/tenq.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static struct {
    const char *system, *workload, *url;
    int concurrency;
    long jobs, interval_ms, flood, probe, keys, per_key, burst, backlog, measure, timeout_s, limit,
        work_ms;
    int w1_batch;
} opt = {.concurrency = 5,
         .w1_batch = 10000, /* W1: the server's largest batch, as graphile-worker gets 10,000 */
         .jobs = 100000,
         .interval_ms = 5,
         .flood = 50000,
         .probe = 200,
         .keys = 1000,
         .per_key = 20,
         .burst = 5,
         .limit = 3,
         .work_ms = 2,
         .backlog = 10000,
         .measure = 20000,
         .timeout_s = 1800};

static double mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void die(const char *what, tenq_client *c)
{
    fprintf(stderr, "tenq driver: %s: %s\n", what, c ? tenq_errmsg(c) : "");
    exit(1);
}

static tenq_client *client(void)
{
    tenq_options o;
    tenq_options_init(&o);
    const char *servers[1] = {opt.url};
    o.servers = servers;
    o.nservers = 1;
    o.ca_file = getenv("TENQ_CA_FILE"); /* tenq-tls: the CA of the server's certificate */
    o.request_timeout_ms = 120000;
    tenq_client *c;
    if (tenq_client_new(&o, &c) != 0) die("client", NULL);
    return c;
}

/* ---- what the handlers saw ------------------------------------------------ */

static atomic_long done;
static double *lat; /* W2, W3: start - submit of probe jobs */
static atomic_long nlat;
static double *lat_sent;        /* W2: the submit time of each lat[k], for TENQ_DRIVER_DUMP */
static double *k_start, *k_end; /* W4: by key * per_key + seq */
static atomic_long a_held, a_held_max;  /* W3: tenant A jobs leased and not yet reported */
static atomic_long *acct_held;          /* W6: each account's jobs leased, not yet reported */
static atomic_long acct_max, acct_over; /* W6: the most of one account at once; starts over */

/* Reads a number after "name": in a small JSON object, or returns -1. */
static double json_num(const char *json, const char *name)
{
    if (!json) return -1;
    char pat[32];
    snprintf(pat, sizeof pat, "\"%s\":", name);
    const char *p = strstr(json, pat);
    return p ? strtod(p + strlen(pat), NULL) : -1;
}

/* What a workload's handler reads from its jobs' args: a blank job's
 * handler reads nothing, as the other drivers' do. */
enum { READ_NONE, READ_SENT, READ_KEY, READ_ACCOUNT };

typedef struct worker_arg {
    const char *queue;
    unsigned batch;
    long stop_at; /* stop once this many are done (0: when told) */
    int reads;
} worker_arg;

static atomic_bool stop_workers;

static void *worker(void *p)
{
    worker_arg *a = p;
    tenq_client *c = client();
    const char *queues[1] = {a->queue};
    tenq_lease_req lr = {
        .worker = "bench", .queues = queues, .nqueues = 1, .max = a->batch, .wait_ms = 1000};
    /* A batch's outcomes go with the next lease (tenq_lease_report: one
     * request a batch while there is work).  That lease does not wait: a
     * wait would hold back the outcomes' answer, and so the count of jobs
     * done, while the queue is empty, and long-polling with them made W2's
     * pickups slower (bench/RESULTS.md, "One request a batch"); when it
     * finds nothing, a plain long poll follows. */
    tenq_lease_req lr_now = lr;
    lr_now.wait_ms = 0;
    tenq_outcome *outs = calloc(a->batch, sizeof(*outs));
    tenq_outcome_res *res = calloc(a->batch, sizeof(*res));
    size_t nout = 0;
    while (!atomic_load(&stop_workers) && (!a->stop_at || atomic_load(&done) < a->stop_at)) {
        tenq_job *jobs = NULL;
        size_t n = 0;
        if (tenq_lease_report(c, outs, nout, res, nout ? &lr_now : &lr, &jobs, &n) != 0)
            die("lease", c);
        atomic_fetch_add(&done, (long)nout);
        nout = 0;
        long a_jobs = 0;
        long accts[1000];
        size_t nacct = 0;
        for (size_t i = 0; i < n; i++) {
            const char *args = jobs[i].args_json;
            if (jobs[i].tenant && !strcmp(jobs[i].tenant, "A")) a_jobs++;
            if (a->reads == READ_ACCOUNT) {
                /* held from the lease's answer until just before its outcome
                 * leaves, as W3's A: inside the server's hold of its slot */
                long acct = (long)json_num(args, "a");
                long held = atomic_fetch_add(&acct_held[acct], 1) + 1;
                if (held > opt.limit) atomic_fetch_add(&acct_over, 1);
                long m = atomic_load(&acct_max);
                while (held > m && !atomic_compare_exchange_weak(&acct_max, &m, held)) {
                }
                if (nacct < sizeof accts / sizeof accts[0]) accts[nacct++] = acct;
                usleep((useconds_t)(opt.work_ms * 1000)); /* the job's work */
                outs[i] = (tenq_outcome){.id = jobs[i].id, .token = jobs[i].token, .ok = true};
                continue;
            }
            if (a->reads == READ_NONE) {
                outs[i] = (tenq_outcome){.id = jobs[i].id, .token = jobs[i].token, .ok = true};
                continue;
            }
            double t = mono_ms();
            double sent = a->reads == READ_SENT ? json_num(args, "s") : -1;
            if (sent >= 0) {
                long k = atomic_fetch_add(&nlat, 1);
                lat[k] = t - sent;
                if (lat_sent) lat_sent[k] = sent;
            }
            double key = a->reads == READ_KEY ? json_num(args, "k") : -1;
            if (key >= 0) {
                long idx = (long)key * opt.per_key + (long)json_num(args, "q");
                k_start[idx] = t;
                k_end[idx] = mono_ms(); /* the blank job's work is nothing */
            }
            outs[i] = (tenq_outcome){.id = jobs[i].id, .token = jobs[i].token, .ok = true};
        }
        if (a_jobs) {
            long held = atomic_fetch_add(&a_held, a_jobs) + a_jobs;
            long m = atomic_load(&a_held_max);
            while (held > m && !atomic_compare_exchange_weak(&a_held_max, &m, held)) {
            }
        }
        /* A's jobs count as held from the lease's answer until just before
         * their outcome leaves: inside the time the server holds their slots
         * (from the lease until the outcome is committed), so a count above 3
         * here is a real excess, never an artefact of the outcome's round trip */
        if (a_jobs) atomic_fetch_sub(&a_held, a_jobs);
        for (size_t i = 0; i < nacct; i++) atomic_fetch_sub(&acct_held[accts[i]], 1);
        nout = n;
        tenq_jobs_free(jobs, n);
    }
    if (nout && tenq_outcomes(c, outs, nout, res) != 0) die("outcomes", c);
    atomic_fetch_add(&done, (long)nout);
    free(outs);
    free(res);
    tenq_client_free(c);
    return NULL;
}

typedef struct pool {
    pthread_t th[64];
    worker_arg arg;
    int n;
} pool;

static void pool_start(pool *p, const char *queue, unsigned batch, long stop_at, int reads)
{
    p->arg = (worker_arg){queue, batch, stop_at, reads};
    p->n = opt.concurrency;
    atomic_store(&stop_workers, false);
    for (int i = 0; i < p->n; i++) pthread_create(&p->th[i], NULL, worker, &p->arg);
}

static void pool_stop(pool *p)
{
    atomic_store(&stop_workers, true);
    for (int i = 0; i < p->n; i++) pthread_join(p->th[i], NULL);
}

/* Waits until `n` jobs are done. */
static void wait_done(long n)
{
    double deadline = mono_ms() + (double)opt.timeout_s * 1000;
    while (atomic_load(&done) < n) {
        if (mono_ms() > deadline) {
            fprintf(stderr, "tenq driver: timed out with %ld of %ld jobs done\n",
                    atomic_load(&done), n);
            exit(1);
        }
        usleep(1000);
    }
}

/* ---- submitting ------------------------------------------------------------- */

/* Submits n jobs in requests of `per` jobs; args_for(i, buf) writes job i's
 * args (NULL: blank jobs). */
static void bulk(tenq_client *c, const char *tenant, const char *queue, long n, int per,
                 void (*args_for)(long i, char *buf), const char *(*key_for)(long i, char *buf))
{
    tenq_submit_req *reqs = calloc((size_t)per, sizeof(*reqs));
    tenq_submit_res *res = calloc((size_t)per, sizeof(*res));
    char(*abuf)[64] = calloc((size_t)per, 64);
    char(*kbuf)[32] = calloc((size_t)per, 32);
    for (long at = 0; at < n; at += per) {
        long m = n - at < per ? n - at : per;
        for (long i = 0; i < m; i++) {
            reqs[i] = (tenq_submit_req){.tenant = tenant, .queue = queue, .type = "Blank"};
            if (args_for) {
                args_for(at + i, abuf[i]);
                reqs[i].args_json = abuf[i];
            }
            if (key_for) reqs[i].key = key_for(at + i, kbuf[i]);
        }
        if (tenq_submit_batch(c, reqs, (size_t)m, res) != 0) die("submit", c);
        for (long i = 0; i < m; i++)
            if (res[i].err) {
                fprintf(stderr, "tenq driver: job refused: %s\n", res[i].message);
                exit(1);
            }
    }
    free(reqs);
    free(res);
    free(abuf);
    free(kbuf);
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(double *v, long n, int p)
{
    if (n == 0) return 0;
    long i = (long)ceil((double)p / 100.0 * (double)n) - 1;
    if (i < 0) i = 0;
    return v[i];
}

static void head(void)
{
    printf("{\"system\":\"%s\",\"workload\":\"%s\",\"concurrency\":%d,\"driver_note\":\"C, "
           "libtenq: POST /v1/jobs with 10,000 jobs a request in W1 (graphile-worker's add_jobs "
           "gets 10,000 too), 1,000 elsewhere; %d worker threads, each leasing up to its batch "
           "and reporting its outcomes with its next lease (POST /v1/lease with outcomes, which "
           "does not wait; a plain long poll when it finds nothing)\"",
           opt.system, opt.workload, opt.concurrency, opt.concurrency);
}

/* ---- workloads ---------------------------------------------------------------- */

static void w4_args(long i, char *buf);
static const char *w4_key(long i, char *buf);
static long w4_count;
static long *w4_order_k, *w4_order_q;

static void w4_args(long i, char *buf)
{
    snprintf(buf, 64, "{\"k\":%ld,\"q\":%ld}", w4_order_k[i], w4_order_q[i]);
}

static const char *w4_key(long i, char *buf)
{
    snprintf(buf, 32, "k%ld", w4_order_k[i]);
    return buf;
}

/* W6: job i of account w6_acct[i]: {"a": account}, concurrency key
 * account:<a> with the limit */
static long *w6_acct;
static char w6_limit_key[64];

static void put(tenq_client *c, const char *path, const char *body)
{
    int status;
    if (tenq_request(c, "PUT", path, body, strlen(body), &status, NULL) != 0) die(path, c);
}

/* TENQ_DRIVER_DUMP=FILE: W2's samples in the order they arrived, "submit_ms latency_ms" a
 * line, to see when the slow ones happen (a tool for looking, not part of the results) */
static void dump_latencies(long n)
{
    const char *path = getenv("TENQ_DRIVER_DUMP");
    FILE *f = path ? fopen(path, "w") : NULL;
    if (!f) return;
    for (long k = 0; k < n; k++) fprintf(f, "%.4f %.4f\n", lat_sent[k], lat[k]);
    fclose(f);
}

static void run(void)
{
    tenq_client *c = client();
    pool p;
    if (!strcmp(opt.workload, "W1")) {
        long n = opt.jobs;
        double t0 = mono_ms();
        bulk(c, "acme", "bench", n, opt.w1_batch, NULL, NULL);
        double t1 = mono_ms();
        pool_start(&p, "bench", 100, n, READ_NONE);
        wait_done(n);
        double t2 = mono_ms();
        pool_stop(&p);
        head();
        printf(",\"jobs\":%ld,\"enqueue_jobs_per_s\":%.1f,\"drain_jobs_per_s\":%.1f,"
               "\"ms_per_job\":%.4f}\n",
               n, n / (t1 - t0) * 1000, n / (t2 - t1) * 1000, (t2 - t1) / n);
    } else if (!strcmp(opt.workload, "W2")) {
        long n = opt.jobs;
        lat = calloc((size_t)n, sizeof(double));
        if (getenv("TENQ_DRIVER_DUMP")) lat_sent = calloc((size_t)n, sizeof(double));
        /* the submit's round trip too: what an idle server's answer costs the
         * submitter (not a peer column; see bench/RESULTS.md) */
        double *rt = calloc((size_t)n, sizeof(double));
        pool_start(&p, "lat", 1, 0, READ_SENT);
        usleep(500000);
        double t0 = mono_ms();
        for (long i = 0; i < n; i++) {
            double due = t0 + (double)(i * opt.interval_ms);
            double d = due - mono_ms(); /* one sleep, as the other drivers do */
            if (d > 0) usleep((useconds_t)(d * 1000));
            char args[64];
            snprintf(args, sizeof args, "{\"s\":%.4f}", mono_ms());
            tenq_submit_req r = {
                .tenant = "acme", .queue = "lat", .type = "Blank", .args_json = args};
            double ts = mono_ms();
            if (tenq_submit(c, &r, NULL) != 0) die("submit", c);
            rt[i] = mono_ms() - ts;
        }
        wait_done(n);
        pool_stop(&p);
        dump_latencies(n);
        qsort(rt, (size_t)n, sizeof(double), cmpd);
        qsort(lat, (size_t)n, sizeof(double), cmpd);
        head();
        printf(",\"jobs\":%ld,\"interval_ms\":%ld,\"p50_ms\":%.4f,\"p90_ms\":%.4f,\"p99_ms\":%.4f,"
               "\"max_ms\":%.4f,\"submit_p50_ms\":%.4f,\"submit_p99_ms\":%.4f}\n",
               n, opt.interval_ms, pct(lat, n, 50), pct(lat, n, 90), pct(lat, n, 99), lat[n - 1],
               pct(rt, n, 50), pct(rt, n, 99));
        free(rt);
    } else if (!strcmp(opt.workload, "W3")) {
        long a = opt.flood, b = opt.probe;
        lat = calloc((size_t)b, sizeof(double));
        /* what a tenq user does for this: A gets 3 slots, and the queue takes
         * tenants in turns (fair order), so B need not wait behind A's flood */
        put(c, "/v1/tenants/A", "{\"slots\":3}");
        put(c, "/v1/queues/shared", "{\"order\":\"fair\"}");
        pool_start(&p, "shared", 1, 0, READ_SENT);
        usleep(500000);
        double t0 = mono_ms();
        bulk(c, "A", "shared", a, 1000, NULL, NULL);
        for (long i = 0; i < b; i++) {
            char args[64];
            snprintf(args, sizeof args, "{\"s\":%.4f}", mono_ms());
            tenq_submit_req r = {
                .tenant = "B", .queue = "shared", .type = "Blank", .args_json = args};
            if (tenq_submit(c, &r, NULL) != 0) die("submit", c);
        }
        wait_done(a + b);
        double t1 = mono_ms();
        pool_stop(&p);
        long nb = atomic_load(&nlat);
        qsort(lat, (size_t)nb, sizeof(double), cmpd);
        head();
        printf(
            ",\"tenant_slots\":\"supported\",\"a_jobs\":%ld,\"b_jobs\":%ld,\"b_wait_p50_ms\":%.3f,"
            "\"b_wait_p99_ms\":%.3f,\"b_wait_max_ms\":%.3f,\"total_jobs_per_s\":%.1f,"
            "\"a_max_running\":%ld,\"note\":\"tenant A limited to 3 slots; one queue, fair order "
            "between tenants; A never held more than %ld jobs at once\"}\n",
            a, nb, pct(lat, nb, 50), pct(lat, nb, 99), nb ? lat[nb - 1] : 0,
            (a + b) / (t1 - t0) * 1000, atomic_load(&a_held_max), atomic_load(&a_held_max));
    } else if (!strcmp(opt.workload, "W4")) {
        long keys = opt.keys, per = opt.per_key, burst = opt.burst < per ? opt.burst : per;
        w4_count = keys * per;
        w4_order_k = calloc((size_t)w4_count, sizeof(long));
        w4_order_q = calloc((size_t)w4_count, sizeof(long));
        k_start = calloc((size_t)w4_count, sizeof(double));
        k_end = calloc((size_t)w4_count, sizeof(double));
        long at = 0;
        for (long round = 0; round * burst < per; round++)
            for (long k = 0; k < keys; k++)
                for (long j = 0; j < burst; j++) {
                    long q = round * burst + j;
                    if (q >= per) continue;
                    w4_order_k[at] = k;
                    w4_order_q[at] = q;
                    at++;
                }
        bulk(c, "acme", "ordered", w4_count, 1000, w4_args, w4_key);
        double t0 = mono_ms();
        pool_start(&p, "ordered", 100, w4_count, READ_KEY);
        wait_done(w4_count);
        double t1 = mono_ms();
        pool_stop(&p);
        long viol = 0;
        for (long k = 0; k < keys; k++)
            for (long q = 1; q < per; q++) {
                double st = k_start[k * per + q], pst = k_start[k * per + q - 1],
                       pen = k_end[k * per + q - 1];
                if (st < pen || st < pst) viol++;
            }
        head();
        printf(",\"ordered\":true,\"ordering\":\"key = lane: one job of a key at a time, in "
               "submission order\",\"keys\":%ld,\"per_key\":%ld,\"jobs\":%ld,\"jobs_per_s\":%.1f,"
               "\"order_violations\":%ld}\n",
               keys, per, w4_count, w4_count / (t1 - t0) * 1000, viol);
    } else if (!strcmp(opt.workload, "W6")) {
        long accts = opt.keys, per = opt.per_key, burst = opt.burst < per ? opt.burst : per;
        long n = accts * per;
        w6_acct = calloc((size_t)n, sizeof(long));
        acct_held = calloc((size_t)accts, sizeof(atomic_long));
        long at = 0;
        for (long round = 0; round * burst < per; round++)
            for (long k = 0; k < accts; k++)
                for (long j = 0; j < burst && round * burst + j < per; j++) w6_acct[at++] = k;
        /* the limit as a key setting of every account:* key (one PUT), the
         * jobs naming their account's key alone */
        snprintf(w6_limit_key, sizeof w6_limit_key,
                 "{\"tenant\":\"acme\",\"key\":\"account:*\",\"concurrency\":%ld}", opt.limit);
        put(c, "/v1/key-settings", w6_limit_key);
        tenq_submit_req *reqs = calloc(1000, sizeof(*reqs));
        tenq_submit_res *res = calloc(1000, sizeof(*res));
        char(*abuf)[32] = calloc(1000, 32);
        char(*kbuf)[48] = calloc(1000, 48);
        for (long from = 0; from < n; from += 1000) {
            long m = n - from < 1000 ? n - from : 1000;
            for (long i = 0; i < m; i++) {
                snprintf(abuf[i], 32, "{\"a\":%ld}", w6_acct[from + i]);
                snprintf(kbuf[i], 48, "[\"account:%ld\"]", w6_acct[from + i]);
                reqs[i] = (tenq_submit_req){.tenant = "acme",
                                            .queue = "accounts",
                                            .type = "Blank",
                                            .args_json = abuf[i],
                                            .concurrency_keys_json = kbuf[i]};
            }
            if (tenq_submit_batch(c, reqs, (size_t)m, res) != 0) die("submit", c);
            for (long i = 0; i < m; i++)
                if (res[i].err) {
                    fprintf(stderr, "tenq driver: job refused: %s\n", res[i].message);
                    exit(1);
                }
        }
        free(reqs);
        free(res);
        free(abuf);
        free(kbuf);
        double t0 = mono_ms();
        /* one job at a time per worker thread, as the peers' concurrency 5 */
        pool_start(&p, "accounts", 1, n, READ_ACCOUNT);
        wait_done(n);
        double t1 = mono_ms();
        pool_stop(&p);
        head();
        printf(",\"limited\":true,\"limiting\":\"concurrency key account:N, limit %ld (a key "
               "setting of account:*)\",\"accounts\":%ld,\"per_account\":%ld,\"limit\":%ld,"
               "\"work_ms\":%ld,\"jobs\":%ld,\"jobs_per_s\":%.1f,\"max_at_once\":%ld,"
               "\"over_limit\":%ld}\n",
               opt.limit, accts, per, opt.limit, opt.work_ms, n, n / (t1 - t0) * 1000,
               atomic_load(&acct_max), atomic_load(&acct_over));
    } else if (!strcmp(opt.workload, "W5")) {
        long bl = opt.backlog, m = opt.measure < bl ? opt.measure : bl;
        double t0 = mono_ms();
        bulk(c, "acme", "backlog", bl, 10000, NULL, NULL);
        double t1 = mono_ms();
        pool_start(&p, "backlog", 100, m, READ_NONE);
        wait_done(m);
        double t2 = mono_ms();
        pool_stop(&p);
        head();
        printf(",\"backlog\":%ld,\"measured_jobs\":%ld,\"fill_jobs_per_s\":%.1f,"
               "\"drain_jobs_per_s\":%.1f}\n",
               bl, m, bl / (t1 - t0) * 1000, m / (t2 - t1) * 1000);
    } else if (!strcmp(opt.workload, "MEM")) {
        long n = opt.jobs;
        double t0 = mono_ms();
        bulk(c, "acme", "mem", n, 10000, NULL, NULL);
        double t1 = mono_ms();
        head();
        printf(",\"jobs\":%ld,\"enqueue_jobs_per_s\":%.1f,\"store_note\":\"the jobs stay in the "
               "server's memory (its scheduler) and in its store\"}\n",
               n, n / (t1 - t0) * 1000);
    } else {
        fprintf(stderr, "tenq driver: unknown workload %s\n", opt.workload);
        exit(2);
    }
    fflush(stdout);
    tenq_client_free(c);
}

int main(int argc, char **argv)
{
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--system"))
            opt.system = v;
        else if (!strcmp(k, "--workload"))
            opt.workload = v;
        else if (!strcmp(k, "--url"))
            opt.url = v;
        else if (!strcmp(k, "--concurrency"))
            opt.concurrency = atoi(v);
        else if (!strcmp(k, "--jobs"))
            opt.jobs = atol(v);
        else if (!strcmp(k, "--interval-ms"))
            opt.interval_ms = atol(v);
        else if (!strcmp(k, "--flood"))
            opt.flood = atol(v);
        else if (!strcmp(k, "--probe"))
            opt.probe = atol(v);
        else if (!strcmp(k, "--keys"))
            opt.keys = atol(v);
        else if (!strcmp(k, "--per-key"))
            opt.per_key = atol(v);
        else if (!strcmp(k, "--burst"))
            opt.burst = atol(v);
        else if (!strcmp(k, "--limit"))
            opt.limit = atol(v);
        else if (!strcmp(k, "--work-ms"))
            opt.work_ms = atol(v);
        else if (!strcmp(k, "--backlog"))
            opt.backlog = atol(v);
        else if (!strcmp(k, "--measure"))
            opt.measure = atol(v);
        else if (!strcmp(k, "--timeout"))
            opt.timeout_s = atol(v);
        else if (!strcmp(k, "--w1-batch"))
            opt.w1_batch = atoi(v);
        else {
            fprintf(stderr, "tenq driver: unknown option %s\n", k);
            return 2;
        }
    }
    if (!opt.system || !opt.workload || !opt.url || opt.concurrency < 1 || opt.concurrency > 64) {
        fprintf(stderr, "usage: driver --system S --workload W --url URL [--concurrency N] ...\n");
        return 2;
    }
    run();
    return 0;
}
