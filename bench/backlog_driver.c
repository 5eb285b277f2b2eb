// SPDX-License-Identifier: Apache-2.0
/* The driver of `make bench-backlog` (bench/backlog.py): fills a queue with
 * jobs of a given args size, or drains part of it, against a running tenq
 * server with libtenq, and prints one JSON line.
 *
 *   backlog_driver fill  URL JOBS ARGS_BYTES        jobs in batches of 10,000, 10 tenants
 *   backlog_driver drain URL JOBS CONCURRENCY       lease 100 at a time (outcomes with the
 *                                                   next lease, as W5; the backlog is
 *                                                   there: no long poll), each timed
 *
 * The drain prints jobs/s and the lease round trips' p50, p99 and max (a
 * lease's answer may wait for a read of args out of memory). */
#include "tenq/tenq.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define QUEUE "backlog"
#define BATCH 10000
#define LEASE 100

static const char *url;

static double mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static tenq_client *client(void)
{
    tenq_options o;
    tenq_options_init(&o);
    const char *servers[1] = {url};
    o.servers = servers;
    o.nservers = 1;
    o.request_timeout_ms = 600000;
    tenq_client *c;
    if (tenq_client_new(&o, &c) != 0) {
        fprintf(stderr, "backlog_driver: no client\n");
        exit(1);
    }
    return c;
}

static void die(const char *what, tenq_client *c)
{
    fprintf(stderr, "backlog_driver: %s: %s\n", what, tenq_errmsg(c));
    exit(1);
}

static void fill(long n, long bytes)
{
    tenq_client *c = client();
    tenq_submit_req *reqs = calloc(BATCH, sizeof(*reqs));
    tenq_submit_res *res = calloc(BATCH, sizeof(*res));
    char *args = malloc((size_t)bytes + 32);
    /* {"p":"xxx...x"}: bytes long in all */
    long pad = bytes > 8 ? bytes - 8 : 1;
    memcpy(args, "{\"p\":\"", 6);
    memset(args + 6, 'x', (size_t)pad);
    memcpy(args + 6 + pad, "\"}", 3);
    static const char *tenants[10] = {"t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9"};
    double t0 = mono_ms();
    for (long at = 0; at < n; at += BATCH) {
        long m = n - at < BATCH ? n - at : BATCH;
        for (long i = 0; i < m; i++)
            reqs[i] = (tenq_submit_req){.tenant = tenants[(at + i) % 10],
                                        .queue = QUEUE,
                                        .type = "Blank",
                                        .args_json = args};
        if (tenq_submit_batch(c, reqs, (size_t)m, res) != 0) die("submit", c);
        for (long i = 0; i < m; i++)
            if (res[i].err) {
                fprintf(stderr, "backlog_driver: job refused: %s\n", res[i].message);
                exit(1);
            }
    }
    double t1 = mono_ms();
    printf("{\"filled\":%ld,\"args_bytes\":%ld,\"fill_jobs_per_s\":%.1f}\n", n, bytes,
           n / (t1 - t0) * 1000);
    free(args);
    free(reqs);
    free(res);
    tenq_client_free(c);
}

static atomic_long done;
static long target;
static double *lat;
static atomic_long nlat;
static long lat_cap;

static void *drainer(void *arg)
{
    (void)arg;
    tenq_client *c = client();
    const char *queues[1] = {QUEUE};
    tenq_lease_req lr = {
        .worker = "bench", .queues = queues, .nqueues = 1, .max = LEASE, .wait_ms = 0};
    tenq_outcome outs[LEASE];
    tenq_outcome_res res[LEASE];
    size_t nout = 0;
    while (atomic_load(&done) < target) {
        tenq_job *jobs = NULL;
        size_t n = 0;
        double t = mono_ms();
        if (tenq_lease_report(c, outs, nout, res, &lr, &jobs, &n) != 0) die("lease", c);
        long k = atomic_fetch_add(&nlat, 1);
        if (k < lat_cap) lat[k] = mono_ms() - t;
        atomic_fetch_add(&done, (long)nout);
        nout = 0;
        for (size_t i = 0; i < n; i++)
            outs[nout++] = (tenq_outcome){.id = jobs[i].id, .token = jobs[i].token, .ok = true};
        tenq_jobs_free(jobs, n);
        if (n == 0) break; /* the queue is empty */
    }
    if (nout && tenq_outcomes(c, outs, nout, res) != 0) die("outcomes", c);
    atomic_fetch_add(&done, (long)nout);
    tenq_client_free(c);
    return NULL;
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(const double *v, long n, double p)
{
    if (!n) return 0;
    long i = (long)ceil(p / 100.0 * (double)n) - 1;
    return v[i < 0 ? 0 : i];
}

static void drain(long n, int conc)
{
    target = n;
    lat_cap = n / LEASE * 2 + 1000;
    lat = calloc((size_t)lat_cap, sizeof(double));
    pthread_t th[64];
    double t0 = mono_ms();
    for (int i = 0; i < conc; i++) pthread_create(&th[i], NULL, drainer, NULL);
    for (int i = 0; i < conc; i++) pthread_join(th[i], NULL);
    double t1 = mono_ms();
    long m = atomic_load(&nlat) < lat_cap ? atomic_load(&nlat) : lat_cap;
    qsort(lat, (size_t)m, sizeof(double), cmpd);
    long d = atomic_load(&done);
    printf("{\"drained\":%ld,\"drain_jobs_per_s\":%.1f,\"lease_ms_p50\":%.3f,\"lease_ms_p99\":%.3f,"
           "\"lease_ms_max\":%.3f,\"leases\":%ld}\n",
           d, d / (t1 - t0) * 1000, pct(lat, m, 50), pct(lat, m, 99), m ? lat[m - 1] : 0, m);
    free(lat);
}

int main(int argc, char **argv)
{
    if (argc != 5 || (strcmp(argv[1], "fill") && strcmp(argv[1], "drain"))) {
        fprintf(stderr, "usage: backlog_driver fill URL JOBS ARGS_BYTES | drain URL JOBS "
                        "CONCURRENCY\n");
        return 2;
    }
    url = argv[2];
    long n = atol(argv[3]), x = atol(argv[4]);
    if (!strcmp(argv[1], "fill"))
        fill(n, x);
    else
        drain(n, x < 1 ? 1 : x > 64 ? 64 : (int)x);
    fflush(stdout);
    return 0;
}
