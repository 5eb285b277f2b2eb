// SPDX-License-Identifier: Apache-2.0
/* make bench-server: tenq serve end to end, over HTTP on loopback.
 *
 * drain:   100,000 blank jobs submitted in batches of 1,000, then drained by
 *          5 concurrent workers in this process (lease up to 100 at a time,
 *          acks sent back in one /v1/outcomes request).  Every submit and
 *          every outcome is committed (fsync'd) before it is answered.
 *          Prints  server store=B drain_jobs_per_s=X submit_jobs_per_s=Y
 * latency: 5 idle workers long-poll; 2,000 jobs are submitted 5 ms apart;
 *          each worker notes when it got the job.  Prints
 *          server store=B latency_p50_ms=X p99_ms=Y max_ms=Z
 *
 * singles: 16 connections each submitting one job a request, for 3 s,
 *          without and then with an Idempotency-Key header (a new key a
 *          request, as the libraries send), alternated 3 times on one
 *          server.  Prints  server store=B singles_per_s=X keyed_per_s=Y
 *          (the medians)
 *
 * Usage: bench_server TENQ_BIN [sqlite|postgres|both] [jobs]
 * BENCH_ONLY=drain|latency|singles runs one part.
 * PostgreSQL comes from TENQ_TEST_PG_URL (make bench-server starts one).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int port;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ---- a minimal keep-alive HTTP client --------------------------------------- */

typedef struct conn {
    int fd;
    char *buf;
    size_t cap;
} conn;

static void conn_open(conn *c)
{
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (connect(c->fd, (struct sockaddr *)&a, sizeof a) != 0) {
        perror("connect");
        exit(1);
    }
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (!c->buf) {
        c->cap = 1 << 20;
        c->buf = malloc(c->cap);
    }
}

static void write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) {
            perror("write");
            exit(1);
        }
        p += w;
        n -= (size_t)w;
    }
}

/* Sends a request with extra head lines (or ""), returns the status; the
 * body is in c->buf (NUL-ended). */
static int request_with(conn *c, const char *method, const char *path, const char *extra,
                        const char *body, size_t len)
{
    char head[512];
    int hn = snprintf(head, sizeof head,
                      "%s %s HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
                      "%sContent-Length: %zu\r\n\r\n",
                      method, path, extra, len);
    write_all(c->fd, head, (size_t)hn);
    if (len) write_all(c->fd, body, len);
    size_t have = 0, body_at = 0, clen = 0;
    for (;;) {
        if (have + 1 >= c->cap) {
            c->cap *= 2;
            c->buf = realloc(c->buf, c->cap);
        }
        ssize_t r = read(c->fd, c->buf + have, c->cap - have - 1);
        if (r <= 0) {
            fprintf(stderr, "read: %s\n", r ? strerror(errno) : "closed");
            exit(1);
        }
        have += (size_t)r;
        c->buf[have] = 0;
        if (!body_at) {
            char *e = strstr(c->buf, "\r\n\r\n");
            if (!e) continue;
            body_at = (size_t)(e - c->buf) + 4;
            char *cl = strcasestr(c->buf, "Content-Length:");
            clen = cl ? strtoul(cl + 15, NULL, 10) : 0;
        }
        if (have >= body_at + clen) break;
    }
    int status = atoi(c->buf + 9);
    memmove(c->buf, c->buf + body_at, clen);
    c->buf[clen] = 0;
    return status;
}

static int request(conn *c, const char *method, const char *path, const char *body, size_t len)
{
    return request_with(c, method, path, "", body, len);
}

/* ---- the server ------------------------------------------------------------------- */

static pid_t start_server(const char *bin, const char *store, const char *dir)
{
    char port_file[512];
    snprintf(port_file, sizeof port_file, "%s/port", dir);
    unlink(port_file);
    pid_t pid = fork();
    if (pid == 0) {
        freopen("/dev/null", "w", stdout);
        char log[512];
        snprintf(log, sizeof log, "%s/server.log", dir);
        freopen(log, "w", stderr);
        execl(bin, bin, "serve", "--listen", "127.0.0.1:0", "--store", store, "--port-file",
              port_file, "--log-level", "warn", (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 3000; i++) {
        FILE *f = fopen(port_file, "r");
        if (f) {
            int ok = fscanf(f, "%d", &port) == 1;
            fclose(f);
            if (ok) return pid;
        }
        usleep(10000);
    }
    fprintf(stderr, "the server did not start (see %s/server.log)\n", dir);
    exit(1);
}

static void stop_server(pid_t pid)
{
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
}

/* ---- drain ------------------------------------------------------------------------ */

static atomic_long done;
static long total_jobs;

/* Collects the ids and tokens of a lease answer into outcomes JSON. */
static size_t outcomes_from_lease(const char *lease, char *out, size_t cap, int *njobs)
{
    size_t n = (size_t)snprintf(out, cap, "{\"outcomes\":[");
    *njobs = 0;
    const char *p = lease;
    while ((p = strstr(p, "{\"id\":"))) {
        unsigned long long id = strtoull(p + 6, NULL, 10);
        const char *t = strstr(p, "\"token\":");
        unsigned long long tok = strtoull(t + 8, NULL, 10);
        n += (size_t)snprintf(out + n, cap - n, "%s{\"id\":%llu,\"token\":%llu,\"ok\":true}",
                              *njobs ? "," : "", id, tok);
        (*njobs)++;
        p = t;
    }
    n += (size_t)snprintf(out + n, cap - n, "]}");
    return n;
}

static void *drain_worker(void *arg)
{
    int n = (int)(intptr_t)arg;
    conn c = {0};
    conn_open(&c);
    char body[256];
    int blen = snprintf(body, sizeof body,
                        "{\"worker\":\"bench-%d\",\"queues\":[\"bench\"],\"max\":100,"
                        "\"wait_ms\":200}",
                        n);
    char *outs = malloc(1 << 20);
    while (atomic_load(&done) < total_jobs) {
        if (request(&c, "POST", "/v1/lease", body, (size_t)blen) != 200) {
            fprintf(stderr, "lease failed: %s\n", c.buf);
            exit(1);
        }
        int got;
        size_t olen = outcomes_from_lease(c.buf, outs, 1 << 20, &got);
        if (!got) continue;
        if (request(&c, "POST", "/v1/outcomes", outs, olen) != 200) {
            fprintf(stderr, "outcomes failed: %s\n", c.buf);
            exit(1);
        }
        atomic_fetch_add(&done, got);
    }
    free(outs);
    close(c.fd);
    free(c.buf);
    return NULL;
}

static void run_drain(const char *bin, const char *store_name, const char *store, const char *dir,
                      long jobs)
{
    pid_t pid = start_server(bin, store, dir);
    conn c = {0};
    conn_open(&c);
    /* 1,000 blank jobs per request */
    size_t cap = 1000 * 64 + 64;
    char *batch = malloc(cap);
    size_t n = (size_t)snprintf(batch, cap, "{\"jobs\":[");
    for (int i = 0; i < 1000; i++)
        n += (size_t)snprintf(batch + n, cap - n,
                              "%s{\"tenant\":\"acme\",\"queue\":\"bench\",\"type\":\"Blank\"}",
                              i ? "," : "");
    n += (size_t)snprintf(batch + n, cap - n, "]}");
    double t0 = now_s();
    for (long sent = 0; sent < jobs; sent += 1000) {
        if (request(&c, "POST", "/v1/jobs", batch, n) != 201) {
            fprintf(stderr, "submit failed: %s\n", c.buf);
            exit(1);
        }
    }
    double submit_s = now_s() - t0;
    total_jobs = jobs;
    atomic_store(&done, 0);
    pthread_t th[5];
    t0 = now_s();
    for (int i = 0; i < 5; i++) pthread_create(&th[i], NULL, drain_worker, (void *)(intptr_t)i);
    for (int i = 0; i < 5; i++) pthread_join(th[i], NULL);
    double drain_s = now_s() - t0;
    printf("server store=%s drain_jobs_per_s=%.0f submit_jobs_per_s=%.0f\n", store_name,
           (double)jobs / drain_s, (double)jobs / submit_s);
    fflush(stdout);
    request(&c, "GET", "/v1/stats", NULL, 0);
    char *commits = strstr(c.buf, "\"commits\":");
    if (commits) fprintf(stderr, "  (%.60s)\n", commits);
    close(c.fd);
    free(c.buf);
    free(batch);
    stop_server(pid);
}

/* ---- latency ----------------------------------------------------------------------- */

static int64_t *lat_us;
static volatile int lat_warmup;
static atomic_int lat_n;
static int lat_total;

static void *latency_worker(void *arg)
{
    int n = (int)(intptr_t)arg;
    conn c = {0};
    conn_open(&c);
    char body[256];
    int blen =
        snprintf(body, sizeof body,
                 "{\"worker\":\"lat-%d\",\"queues\":[\"lat\"],\"max\":1,\"wait_ms\":1000}", n);
    char outs[512];
    while (atomic_load(&lat_n) < lat_total) {
        request(&c, "POST", "/v1/lease", body, (size_t)blen);
        int64_t got_at = now_us();
        const char *sent = strstr(c.buf, "\"sent\":");
        if (!sent) {
            int got;
            size_t olen = outcomes_from_lease(c.buf, outs, sizeof outs, &got);
            if (got) request(&c, "POST", "/v1/outcomes", outs, olen);
            continue;
        }
        int64_t t = strtoll(sent + 7, NULL, 10);
        int idx = atomic_fetch_add(&lat_n, 1);
        if (idx < lat_total) lat_us[idx] = got_at - t;
        int got;
        size_t olen = outcomes_from_lease(c.buf, outs, sizeof outs, &got);
        request(&c, "POST", "/v1/outcomes", outs, olen);
    }
    close(c.fd);
    free(c.buf);
    return NULL;
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void run_latency(const char *bin, const char *store_name, const char *store, const char *dir)
{
    pid_t pid = start_server(bin, store, dir);
    lat_total = 2000;
    lat_us = calloc((size_t)lat_total, sizeof(int64_t));
    atomic_store(&lat_n, 0);
    pthread_t th[5];
    for (int i = 0; i < 5; i++) pthread_create(&th[i], NULL, latency_worker, (void *)(intptr_t)i);
    usleep(200000); /* workers are now long-polling */
    conn c = {0};
    conn_open(&c);
    /* Warm up first, as a server that has been running: its WAL has wrapped
     * and commits overwrite blocks the file already has. */
    lat_warmup = 1;
    for (int i = 0; i < 1500; i++) {
        request(&c, "POST", "/v1/jobs",
                "{\"tenant\":\"acme\",\"queue\":\"lat\",\"type\":\"Blank\"}", 46);
        usleep(500);
    }
    usleep(200000);
    lat_warmup = 0;
    int64_t next = now_us();
    for (int i = 0; i < lat_total; i++) {
        while (now_us() < next) usleep(100);
        char body[256];
        int n = snprintf(body, sizeof body,
                         "{\"tenant\":\"acme\",\"queue\":\"lat\",\"type\":\"Blank\","
                         "\"args\":{\"sent\":%lld}}",
                         (long long)now_us());
        request(&c, "POST", "/v1/jobs", body, (size_t)n);
        next += 5000;
    }
    for (int i = 0; i < 5; i++) pthread_join(th[i], NULL);
    request(&c, "GET", "/metrics", NULL, 0);
    const char *h = strstr(c.buf, "tenq_store_commit_seconds_bucket");
    if (h) {
        fprintf(stderr, "  commit times (cumulative):");
        for (const char *p = h; (p = strstr(p, "_bucket{le=\"")); p++) {
            char le[16];
            unsigned long long n;
            if (sscanf(p, "_bucket{le=\"%15[^\"]\"} %llu", le, &n) == 2)
                fprintf(stderr, " <=%ss:%llu", le, n);
        }
        fprintf(stderr, "\n");
    }
    qsort(lat_us, (size_t)lat_total, sizeof(int64_t), cmp64);
    printf("server store=%s latency_p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f max_ms=%.3f\n", store_name,
           lat_us[lat_total / 2] / 1000.0, lat_us[lat_total * 90 / 100] / 1000.0,
           lat_us[lat_total * 99 / 100] / 1000.0, lat_us[lat_total - 1] / 1000.0);
    fflush(stdout);
    free(lat_us);
    close(c.fd);
    free(c.buf);
    stop_server(pid);
}

/* ---- singles ----------------------------------------------------------------------- */

#define SINGLES_CONNS 16
static atomic_long singles_sent;
static volatile int singles_stop;
static int singles_keyed;
static atomic_uint singles_seq;

static void *singles_worker(void *arg)
{
    (void)arg;
    conn c = {0};
    conn_open(&c);
    static const char job[] = "{\"tenant\":\"acme\",\"queue\":\"singles\",\"type\":\"Blank\"}";
    while (!singles_stop) {
        char extra[96] = "";
        if (singles_keyed) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            long long ms = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
            snprintf(extra, sizeof extra, "Idempotency-Key: tq1%011llx%08x%08x\r\n",
                     (unsigned long long)ms, 0x5eedu, atomic_fetch_add(&singles_seq, 1));
        }
        if (request_with(&c, "POST", "/v1/jobs", extra, job, sizeof job - 1) != 201) {
            fprintf(stderr, "submit failed: %s\n", c.buf);
            exit(1);
        }
        atomic_fetch_add(&singles_sent, 1);
    }
    close(c.fd);
    free(c.buf);
    return NULL;
}

static double singles_round(int keyed)
{
    singles_keyed = keyed;
    singles_stop = 0;
    atomic_store(&singles_sent, 0);
    pthread_t th[SINGLES_CONNS];
    double t0 = now_s();
    for (int i = 0; i < SINGLES_CONNS; i++) pthread_create(&th[i], NULL, singles_worker, NULL);
    usleep(3000000);
    singles_stop = 1;
    for (int i = 0; i < SINGLES_CONNS; i++) pthread_join(th[i], NULL);
    return (double)atomic_load(&singles_sent) / (now_s() - t0);
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void run_singles(const char *bin, const char *store_name, const char *store, const char *dir)
{
    pid_t pid = start_server(bin, store, dir);
    double plain[3], keyed[3];
    for (int r = 0; r < 3; r++) {
        plain[r] = singles_round(0);
        keyed[r] = singles_round(1);
        fprintf(stderr, "  round %d: %.0f plain, %.0f keyed\n", r + 1, plain[r], keyed[r]);
    }
    qsort(plain, 3, sizeof(double), cmpd);
    qsort(keyed, 3, sizeof(double), cmpd);
    printf("server store=%s singles_per_s=%.0f keyed_per_s=%.0f\n", store_name, plain[1], keyed[1]);
    fflush(stdout);
    stop_server(pid);
}

static const char *store_for(const char *name, const char *dir, char *buf, size_t len,
                             const char *tag)
{
    if (strcmp(name, "sqlite") == 0) {
        snprintf(buf, len, "sqlite:%s/%s.db", dir, tag);
        return buf;
    }
    const char *base = getenv("TENQ_TEST_PG_URL");
    if (!base) {
        fprintf(stderr, "postgres needs TENQ_TEST_PG_URL (make bench-server starts one)\n");
        exit(1);
    }
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "psql '%s' -qc 'DROP DATABASE IF EXISTS sb_%s' -c 'CREATE DATABASE sb_%s' "
             ">/dev/null 2>&1",
             base, tag, tag);
    if (system(cmd) != 0) {
        fprintf(stderr, "cannot create the database\n");
        exit(1);
    }
    const char *slash = strrchr(base, '/');
    snprintf(buf, len, "%.*s/sb_%s", (int)(slash - base), base, tag);
    return buf;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_server TENQ_BIN [sqlite|postgres|both] [jobs]\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    const char *which = argc > 2 ? argv[2] : "both";
    long jobs = argc > 3 ? atol(argv[3]) : 100000;
    char dir[] = "/var/tmp/tenq-sbench-XXXXXX"; /* a real disk: fsync costs what it costs */
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    const char *names[2] = {"sqlite", "postgres"};
    for (int i = 0; i < 2; i++) {
        if (strcmp(which, "both") != 0 && strcmp(which, names[i]) != 0) continue;
        char store[1024];
        const char *only = getenv("BENCH_ONLY"); /* drain, latency or singles */
        if (!only || !strcmp(only, "drain"))
            run_drain(argv[1], names[i], store_for(names[i], dir, store, sizeof store, "drain"),
                      dir, jobs);
        if (!only || !strcmp(only, "latency"))
            run_latency(argv[1], names[i], store_for(names[i], dir, store, sizeof store, "lat"),
                        dir);
        if (!only || !strcmp(only, "singles"))
            run_singles(argv[1], names[i], store_for(names[i], dir, store, sizeof store, "singles"),
                        dir);
    }
    if (getenv("BENCH_KEEP")) {
        fprintf(stderr, "  (server logs kept in %s)\n", dir);
        return 0;
    }
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) return 1;
    return 0;
}
