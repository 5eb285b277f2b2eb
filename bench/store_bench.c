// SPDX-License-Identifier: Apache-2.0
/* make bench-store: how fast the store commits, per backend.
 *
 * For batch sizes 1, 100 and 1,000: each batch inserts that many new jobs
 * and writes the matching state updates (the jobs of the previous batch
 * leased and acked: state, times, worker, token, result), as the server
 * would after a burst of submits and acks.  Batches are committed one after
 * another, each waited for (so this is the cost of a commit, not of group
 * commit across callers).  Prints
 *   store backend=B batch=N commits_per_s=X jobs_per_s=Y writes_per_s=Z
 * where jobs_per_s counts jobs inserted (each also updated once) and
 * writes_per_s counts row writes.  Then the start-up load of 1M unfinished
 * jobs:  store backend=B load_jobs=N load_s=X
 *
 * Usage: bench_store [sqlite|postgres|both] [load_jobs]; PostgreSQL comes
 * from TENQ_TEST_PG_URL (make bench-store starts a private one). */
#include "store/store.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *fresh(const char *backend, const char *tag)
{
    static char url[1024];
    if (strcmp(backend, "sqlite") == 0) {
        char dir[] = "/var/tmp/tenq-bench-XXXXXX"; /* a real disk, not tmpfs */
        if (!mkdtemp(dir)) {
            perror("mkdtemp");
            exit(1);
        }
        snprintf(url, sizeof url, "sqlite:%s/%s.db", dir, tag);
        return url;
    }
    const char *base = getenv("TENQ_TEST_PG_URL");
    if (!base) {
        fprintf(stderr, "bench_store: TENQ_TEST_PG_URL is not set (run via make bench-store)\n");
        exit(1);
    }
    PGconn *c = PQconnectdb(base);
    char sql[128];
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS bench_%s", tag);
    PQclear(PQexec(c, sql));
    snprintf(sql, sizeof sql, "CREATE DATABASE bench_%s", tag);
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        fprintf(stderr, "%s", PQresultErrorMessage(r));
        exit(1);
    }
    PQclear(r);
    PQfinish(c);
    const char *slash = strrchr(base, '/');
    snprintf(url, sizeof url, "%.*s/bench_%s", (int)(slash - base), base, tag);
    return url;
}

static store_t *open_store(const char *url)
{
    store_opts o = {0};
    o.no_retention = true;
    store_t *s;
    char err[512];
    if (store_open(url, &o, &s, err, sizeof err) != 0) {
        fprintf(stderr, "open %s: %s\n", url, err);
        exit(1);
    }
    return s;
}

static int64_t T = 1700000000000LL;

static void submit(engine_t *e, int n)
{
    for (int i = 0; i < n; i++) {
        engine_submit_req r = {.tenant = "acme",
                               .queue = "bench",
                               .type = "Bench.job",
                               .args = "{\"report_id\":42}",
                               .args_len = 15};
        engine_submit_res res;
        engine_submit(e, T, &r, &res);
    }
}

static void lease_ack(engine_t *e, int n)
{
    const char *qs[1] = {"bench"};
    engine_lease_req req = {.queues = qs, .n_queues = 1, .max = (size_t)n, .worker = "w-1"};
    engine_job **out = malloc(sizeof(engine_job *) * (size_t)n);
    size_t got = engine_lease(e, T, &req, out);
    for (size_t i = 0; i < got; i++) {
        engine_job_info in;
        engine_job_get(out[i], &in);
        engine_ack(e, T, in.id, in.token, "{\"ok\":true}", NULL, NULL);
    }
    free(out);
}

static void run_batches(const char *backend, int size)
{
    char tag[32];
    snprintf(tag, sizeof tag, "b%d", size);
    store_t *s = open_store(fresh(backend, tag));
    engine_config cfg;
    engine_config_defaults(&cfg);
    engine_t *e = engine_create(&cfg);
    /* warm up, and the first batch's jobs for the updates */
    submit(e, size);
    store_batch *b = store_batch_new();
    store_batch_changes(b, e);
    engine_changes_clear(e);
    store_commit_wait(s, b);
    int commits = 0;
    size_t writes = 0;
    double prep = 0;
    double t0 = now_s(), budget = size == 1 ? 3.0 : 5.0;
    while (now_s() - t0 < budget) {
        T++;
        double tp = now_s();
        lease_ack(e, size); /* the previous batch's jobs end */
        submit(e, size);    /* new ones arrive */
        b = store_batch_new();
        store_batch_changes(b, e);
        engine_changes_clear(e);
        writes += store_batch_ops(b);
        prep += now_s() - tp;
        if (store_commit_wait(s, b) != 0) {
            fprintf(stderr, "commit failed: %s\n", store_errmsg(s));
            exit(1);
        }
        commits++;
    }
    double secs = now_s() - t0;
    printf("store backend=%s batch=%d commits_per_s=%.0f jobs_per_s=%.0f writes_per_s=%.0f\n",
           backend, size, commits / secs, (double)commits * size / secs, (double)writes / secs);
    fprintf(stderr, "  (%.0f%% of the time preparing batches on the caller's thread)\n",
            100 * prep / secs);
    fflush(stdout);
    store_close(s);
    engine_destroy(e);
}

static void run_load(const char *backend, int n)
{
    const char *url = fresh(backend, "load");
    store_t *s = open_store(url);
    engine_config cfg;
    engine_config_defaults(&cfg);
    engine_t *e = engine_create(&cfg);
    double t0 = now_s();
    for (int done = 0; done < n; done += 10000) {
        for (int i = 0; i < 10000 && done + i < n; i++) {
            char key[32];
            snprintf(key, sizeof key, "lane-%d", (done + i) % 100000);
            engine_submit_req r = {.tenant = "acme",
                                   .queue = "bench",
                                   .type = "Bench.job",
                                   .args = "{\"report_id\":42}",
                                   .args_len = 15,
                                   .key = key};
            engine_submit_res res;
            engine_submit(e, T, &r, &res);
        }
        store_batch *b = store_batch_new();
        store_batch_changes(b, e);
        engine_changes_clear(e);
        if (store_commit_wait(s, b) != 0) {
            fprintf(stderr, "fill failed: %s\n", store_errmsg(s));
            exit(1);
        }
    }
    double fill = now_s() - t0;
    store_close(s);
    engine_destroy(e);
    s = open_store(url);
    e = engine_create(&cfg);
    store_load_stats st;
    if (store_load(s, e, T, &st) != 0) {
        fprintf(stderr, "load failed: %s\n", store_errmsg(s));
        exit(1);
    }
    printf("store backend=%s load_jobs=%zu load_s=%.2f\n", backend, st.jobs, st.seconds);
    fprintf(stderr, "  (filled %d jobs in %.1f s: %.0f inserts/s in batches of 10,000)\n", n, fill,
            n / fill);
    fflush(stdout);
    store_close(s);
    engine_destroy(e);
}

int main(int argc, char **argv)
{
    const char *which = argc > 1 ? argv[1] : "both";
    int load_n = argc > 2 ? atoi(argv[2]) : 1000000;
    const char *backends[2] = {"sqlite", "postgres"};
    for (int k = 0; k < 2; k++) {
        if (strcmp(which, "both") != 0 && strcmp(which, backends[k]) != 0) continue;
        int sizes[3] = {1, 100, 1000};
        for (int i = 0; i < 3; i++) run_batches(backends[k], sizes[i]);
        if (load_n > 0) run_load(backends[k], load_n);
    }
    return 0;
}
