// SPDX-License-Identifier: Apache-2.0
/*
 * bs_bench: the beanstalkd driver of the peer benchmark (bench/peers).
 *
 * Plain sockets and the beanstalkd text protocol (put, reserve-with-timeout,
 * delete, use, watch, ignore, stats).  Every worker is a thread with its own
 * connection, so that the client is never the bottleneck:
 *   - a worker sends "delete <previous id>" and "reserve-with-timeout" in one
 *     write (one round trip per job, the delete acknowledged before the next
 *     job is handed out);
 *   - bulk enqueue pipelines puts on one connection, WINDOW at a time
 *     (beanstalkd has no multi-put command).
 *
 *   bs_bench --workload W1|W2|W3|W4|W5|MEM --url beanstalk://127.0.0.1:PORT
 *            [--concurrency 5] [--jobs N] [--interval-ms 5]
 *            [--flood N --probe N] [--keys K --per-key J --burst B]
 *            [--backlog N --measure N] [--system NAME]
 *
 * Prints one JSON object on stdout (the contract of bench/peers/README.md).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define TUBE   "bench"
#define WINDOW 500

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "bs_bench: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

static double now_ms(void) /* ms with fraction, on the clock the tenq driver uses */
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- connection with buffered reads and writes ---- */

typedef struct {
    int fd;
    char in[65536];
    size_t in_len, in_pos;
    char *out;
    size_t out_len, out_cap;
} conn_t;

static char g_host[256] = "127.0.0.1";
static int g_port = 11300;

static conn_t *conn_open(void)
{
    conn_t *c = calloc(1, sizeof *c);
    if (!c) die("out of memory");
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    if (c->fd < 0) die("socket: %s", strerror(errno));
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)g_port)};
    if (inet_pton(AF_INET, g_host, &sa.sin_addr) != 1) die("bad host %s", g_host);
    if (connect(c->fd, (struct sockaddr *)&sa, sizeof sa) < 0)
        die("connect %s:%d: %s", g_host, g_port, strerror(errno));
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->out_cap = 1 << 16;
    c->out = malloc(c->out_cap);
    if (!c->out) die("out of memory");
    return c;
}

static void conn_close(conn_t *c)
{
    close(c->fd);
    free(c->out);
    free(c);
}

static void conn_flush(conn_t *c)
{
    size_t off = 0;
    while (off < c->out_len) {
        ssize_t n = write(c->fd, c->out + off, c->out_len - off);
        if (n < 0) {
            if (errno == EINTR) continue;
            die("write: %s", strerror(errno));
        }
        off += (size_t)n;
    }
    c->out_len = 0;
}

static void conn_printf(conn_t *c, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(c->out + c->out_len, c->out_cap - c->out_len, fmt, ap);
        va_end(ap);
        if (n < 0) die("vsnprintf");
        if (c->out_len + (size_t)n < c->out_cap) {
            c->out_len += (size_t)n;
            return;
        }
        if (c->out_len > 0) {
            conn_flush(c);
            continue;
        }
        c->out_cap *= 2;
        c->out = realloc(c->out, c->out_cap);
        if (!c->out) die("out of memory");
    }
}

static int conn_fill(conn_t *c)
{
    if (c->in_pos > 0) {
        memmove(c->in, c->in + c->in_pos, c->in_len - c->in_pos);
        c->in_len -= c->in_pos;
        c->in_pos = 0;
    }
    if (c->in_len == sizeof c->in) die("reply too long");
    for (;;) {
        ssize_t n = read(c->fd, c->in + c->in_len, sizeof c->in - c->in_len);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) die("read: %s", strerror(errno));
        if (n == 0) die("server closed the connection");
        c->in_len += (size_t)n;
        return 0;
    }
}

/* one reply line without "\r\n", into buf */
static void conn_line(conn_t *c, char *buf, size_t cap)
{
    for (;;) {
        char *s = c->in + c->in_pos;
        size_t avail = c->in_len - c->in_pos;
        char *e = memmem(s, avail, "\r\n", 2);
        if (e) {
            size_t n = (size_t)(e - s);
            if (n >= cap) die("reply line too long");
            memcpy(buf, s, n);
            buf[n] = 0;
            c->in_pos += n + 2;
            return;
        }
        conn_fill(c);
    }
}

/* n bytes of data plus the trailing "\r\n" */
static void conn_data(conn_t *c, char *buf, size_t n)
{
    while (c->in_len - c->in_pos < n + 2) conn_fill(c);
    memcpy(buf, c->in + c->in_pos, n);
    buf[n] = 0;
    c->in_pos += n + 2;
}

static void expect(conn_t *c, const char *want)
{
    char line[256];
    conn_line(c, line, sizeof line);
    if (strncmp(line, want, strlen(want)) != 0) die("expected %s, got '%s'", want, line);
}

static void cmd_put(conn_t *c, const char *body)
{
    /* priority 1024, no delay, ttr 60 s */
    conn_printf(c, "put 1024 0 60 %zu\r\n%s\r\n", strlen(body), body);
}

/* a value from "stats" (YAML), or -1 */
static long stats_value(conn_t *c, const char *key)
{
    conn_printf(c, "stats\r\n");
    conn_flush(c);
    char line[256];
    conn_line(c, line, sizeof line);
    size_t n;
    if (sscanf(line, "OK %zu", &n) != 1) die("stats: '%s'", line);
    char *y = malloc(n + 3);
    conn_data(c, y, n);
    long v = -1;
    char pat[128];
    snprintf(pat, sizeof pat, "\n%s: ", key);
    char *p = strstr(y, pat);
    if (p) v = atol(p + strlen(pat));
    free(y);
    return v;
}

/* ---- workload state ---- */

enum { W1, W2, W3, W4, W5, WMEM };
static int g_w = -1;
static int g_conc = 5;
static long g_jobs = 100000, g_interval_ms = 5, g_flood = 50000, g_probe = 200;
static long g_keys = 1000, g_per_key = 20, g_burst = 5, g_backlog = 10000, g_measure = 20000;
static const char *g_system = "beanstalkd";

static long g_target;      /* jobs the workers process before stopping */
static int g_idle_timeout; /* reserve-with-timeout seconds: 0 in drains */
static atomic_long g_done; /* jobs finished */
static double g_t_last;    /* mono_s() when the last job of the target finished */
static double *g_lat;      /* W2: start - submit, per job; W3: B's waits */
static double *g_lat_sub;  /* W2 with BS_BENCH_DUMP: the submit time of each g_lat[k] */
static atomic_long g_lat_n;
static double *g_kstart, *g_kend; /* W4: per (key, seq) start and end */

static void handle(const char *body, double t_start)
{
    /* the "handler": blank; it records what the workload measures */
    if (body[0] == 'S') { /* "S <submit ms>": W2 job, W3 B job */
        double sub = atof(body + 2);
        long i = atomic_fetch_add(&g_lat_n, 1);
        g_lat[i] = t_start - sub;
        if (g_lat_sub) g_lat_sub[i] = sub;
    } else if (body[0] == 'K') { /* "K <key> <seq>" */
        long k = 0, q = 0;
        sscanf(body + 2, "%ld %ld", &k, &q);
        long i = k * g_per_key + q;
        g_kstart[i] = t_start;
        g_kend[i] = now_ms();
    }
}

static void *worker(void *arg)
{
    (void)arg;
    conn_t *c = conn_open();
    conn_printf(c, "watch " TUBE "\r\nignore default\r\n");
    conn_flush(c);
    expect(c, "WATCHING");
    expect(c, "WATCHING");
    char line[256];
    static __thread char body[65536 + 3];
    unsigned long long prev = 0;
    for (;;) {
        if (atomic_load(&g_done) >= g_target) break;
        if (prev) conn_printf(c, "delete %llu\r\n", prev);
        conn_printf(c, "reserve-with-timeout %d\r\n", g_idle_timeout);
        conn_flush(c);
        if (prev) {
            expect(c, "DELETED");
            prev = 0;
        }
        conn_line(c, line, sizeof line);
        unsigned long long id;
        size_t n;
        if (sscanf(line, "RESERVED %llu %zu", &id, &n) == 2) {
            if (n > 65536) die("job too large");
            conn_data(c, body, n);
            double t = now_ms();
            handle(body, t);
            prev = id;
            if (atomic_fetch_add(&g_done, 1) + 1 == g_target) g_t_last = mono_s();
        } else if (strcmp(line, "TIMED_OUT") == 0 || strcmp(line, "DEADLINE_SOON") == 0) {
            if (g_idle_timeout == 0) usleep(200);
        } else {
            die("reserve: '%s'", line);
        }
    }
    if (prev) {
        conn_printf(c, "delete %llu\r\n", prev);
        conn_flush(c);
        expect(c, "DELETED");
    }
    conn_close(c);
    return NULL;
}

/* BS_BENCH_DUMP=FILE: W2's samples in the order they arrived, "submit_ms
 * latency_ms" a line (the format of the tenq driver's TENQ_DRIVER_DUMP), for
 * bench/peers/w2_paired.sh; not part of the results */
static void dump_latencies(long n)
{
    const char *path = getenv("BS_BENCH_DUMP");
    FILE *f = path ? fopen(path, "w") : NULL;
    if (!f) return;
    for (long k = 0; k < n; k++) fprintf(f, "%.4f %.4f\n", g_lat_sub ? g_lat_sub[k] : 0, g_lat[k]);
    fclose(f);
}

static pthread_t *g_threads;

static void workers_start(long target, int idle_timeout)
{
    g_target = target;
    g_idle_timeout = idle_timeout;
    atomic_store(&g_done, 0);
    g_threads = calloc((size_t)g_conc, sizeof *g_threads);
    for (int i = 0; i < g_conc; i++)
        if (pthread_create(&g_threads[i], NULL, worker, NULL) != 0) die("pthread_create");
}

static void workers_join(void)
{
    for (int i = 0; i < g_conc; i++) pthread_join(g_threads[i], NULL);
    free(g_threads);
}

/* bulk enqueue: pipelined puts, WINDOW outstanding at most */
typedef void (*body_fn)(long i, char *buf, size_t cap);

static void bulk_put(conn_t *c, long n, body_fn fn)
{
    char body[256], line[256];
    long sent = 0, acked = 0;
    while (acked < n) {
        while (sent < n && sent - acked < WINDOW) {
            fn(sent, body, sizeof body);
            cmd_put(c, body);
            sent++;
        }
        conn_flush(c);
        while (acked < sent) {
            conn_line(c, line, sizeof line);
            if (strncmp(line, "INSERTED", 8) != 0) die("put: '%s'", line);
            acked++;
        }
    }
}

static void body_blank(long i, char *buf, size_t cap)
{
    (void)i;
    snprintf(buf, cap, "{}");
}

static void body_a(long i, char *buf, size_t cap)
{
    (void)i;
    snprintf(buf, cap, "A");
}

/* W4 order: bursts of g_burst consecutive jobs of one key, keys round-robin */
static void body_key(long i, char *buf, size_t cap)
{
    long burst = g_burst < g_per_key ? g_burst : g_per_key;
    long per_round = g_keys * burst;
    long round = i / per_round, r = i % per_round;
    long key = r / burst, seq = round * burst + r % burst;
    snprintf(buf, cap, "K %ld %ld", key, seq);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(const double *s, long n, double p) /* nearest rank */
{
    if (n <= 0) return 0;
    long r = (long)ceil(p / 100.0 * (double)n);
    if (r < 1) r = 1;
    if (r > n) r = n;
    return s[r - 1];
}

static void print_head(const char *w)
{
    printf("{\"system\": \"%s\", \"workload\": \"%s\", \"concurrency\": %d, \"driver_note\": "
           "\"C client (bs_bench): %d threads, one connection each, delete+reserve-with-timeout in "
           "one "
           "write; bulk = pipelined put, %d in flight\"",
           g_system, w, g_conc, g_conc, WINDOW);
}

static long argl(const char *s)
{
    char *e;
    long v = strtol(s, &e, 10);
    if (*e) die("not a number: %s", s);
    return v;
}

int main(int argc, char **argv)
{
    const char *wl = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) die("missing value for %s", a);
        i++;
        if (!strcmp(a, "--workload"))
            wl = v;
        else if (!strcmp(a, "--url")) {
            const char *p = strstr(v, "://");
            p = p ? p + 3 : v;
            const char *colon = strrchr(p, ':');
            if (!colon) die("url needs host:port");
            snprintf(g_host, sizeof g_host, "%.*s", (int)(colon - p), p);
            g_port = atoi(colon + 1);
        } else if (!strcmp(a, "--concurrency"))
            g_conc = (int)argl(v);
        else if (!strcmp(a, "--jobs"))
            g_jobs = argl(v);
        else if (!strcmp(a, "--interval-ms"))
            g_interval_ms = argl(v);
        else if (!strcmp(a, "--flood"))
            g_flood = argl(v);
        else if (!strcmp(a, "--probe"))
            g_probe = argl(v);
        else if (!strcmp(a, "--keys"))
            g_keys = argl(v);
        else if (!strcmp(a, "--per-key"))
            g_per_key = argl(v);
        else if (!strcmp(a, "--burst"))
            g_burst = argl(v);
        else if (!strcmp(a, "--backlog"))
            g_backlog = argl(v);
        else if (!strcmp(a, "--measure"))
            g_measure = argl(v);
        else if (!strcmp(a, "--system"))
            g_system = v;
        else
            die("unknown option %s", a);
    }
    if (!wl) die("--workload is required");
    const char *names[] = {"W1", "W2", "W3", "W4", "W5", "MEM"};
    for (int i = 0; i < 6; i++)
        if (!strcmp(wl, names[i])) g_w = i;
    if (g_w < 0) die("unknown workload %s", wl);

    conn_t *p = conn_open(); /* the producer */
    conn_printf(p, "use " TUBE "\r\n");
    conn_flush(p);
    expect(p, "USING");

    switch (g_w) {
    case W1: {
        double t0 = mono_s();
        bulk_put(p, g_jobs, body_blank);
        double t1 = mono_s();
        long ready = stats_value(p, "current-jobs-ready");
        if (ready != g_jobs) die("expected %ld ready jobs, stats says %ld", g_jobs, ready);
        double t2 = mono_s();
        workers_start(g_jobs, 0);
        workers_join();
        double t3 = mono_s();
        if (stats_value(p, "current-jobs-ready") != 0) die("jobs left after the drain");
        print_head("W1");
        printf(", \"jobs\": %ld, \"enqueue_jobs_per_s\": %.1f, \"drain_jobs_per_s\": %.1f, "
               "\"ms_per_job\": %.4f, \"enqueue_note\": \"pipelined put, %d in flight\"}\n",
               g_jobs, g_jobs / (t1 - t0), g_jobs / (t3 - t2), (t3 - t2) * 1e3 / g_jobs, WINDOW);
        break;
    }
    case W2: {
        g_lat = calloc((size_t)g_jobs, sizeof *g_lat);
        if (getenv("BS_BENCH_DUMP")) g_lat_sub = calloc((size_t)g_jobs, sizeof *g_lat_sub);
        workers_start(g_jobs, 1);
        usleep(200 * 1000); /* let the workers connect and block in reserve */
        double t0 = mono_s();
        char body[64];
        for (long i = 0; i < g_jobs; i++) {
            double due = t0 + i * g_interval_ms / 1e3;
            double d = due - mono_s();
            if (d > 0) usleep((useconds_t)(d * 1e6));
            snprintf(body, sizeof body, "S %.3f", now_ms());
            cmd_put(p, body);
            conn_flush(p);
            expect(p, "INSERTED");
        }
        workers_join();
        long n = atomic_load(&g_lat_n);
        dump_latencies(n);
        qsort(g_lat, (size_t)n, sizeof *g_lat, cmp_double);
        print_head("W2");
        printf(", \"jobs\": %ld, \"interval_ms\": %ld, \"p50_ms\": %.3f, \"p90_ms\": %.3f, "
               "\"p99_ms\": %.3f, \"max_ms\": %.3f}\n",
               n, g_interval_ms, pct(g_lat, n, 50), pct(g_lat, n, 90), pct(g_lat, n, 99),
               n ? g_lat[n - 1] : 0.0);
        break;
    }
    case W3: {
        g_lat = calloc((size_t)g_probe, sizeof *g_lat);
        workers_start(g_flood + g_probe, 1);
        usleep(200 * 1000);
        double t0 = mono_s();
        bulk_put(p, g_flood, body_a);
        char body[64];
        for (long i = 0; i < g_probe; i++) {
            snprintf(body, sizeof body, "S %.3f", now_ms());
            cmd_put(p, body);
            conn_flush(p);
            expect(p, "INSERTED");
        }
        workers_join();
        double t1 = g_t_last;
        long n = atomic_load(&g_lat_n);
        qsort(g_lat, (size_t)n, sizeof *g_lat, cmp_double);
        print_head("W3");
        printf(", \"tenant_slots\": \"not supported\", \"a_jobs\": %ld, \"b_jobs\": %ld, "
               "\"b_wait_p50_ms\": %.3f, \"b_wait_p99_ms\": %.3f, \"b_wait_max_ms\": %.3f, "
               "\"total_jobs_per_s\": %.1f, \"note\": \"one shared FIFO tube\"}\n",
               g_flood, n, pct(g_lat, n, 50), pct(g_lat, n, 99), n ? g_lat[n - 1] : 0.0,
               (g_flood + g_probe) / (t1 - t0));
        break;
    }
    case W4: {
        long total = g_keys * g_per_key;
        g_kstart = calloc((size_t)total, sizeof(double));
        g_kend = calloc((size_t)total, sizeof(double));
        bulk_put(p, total, body_key);
        double t0 = mono_s();
        workers_start(total, 0);
        workers_join();
        double t1 = mono_s();
        long viol = 0, missing = 0;
        for (long k = 0; k < g_keys; k++)
            for (long q = 0; q < g_per_key; q++) {
                long i = k * g_per_key + q;
                if (g_kstart[i] == 0) {
                    missing++;
                    continue;
                }
                if (q > 0 && (g_kstart[i] < g_kend[i - 1] || g_kstart[i] < g_kstart[i - 1])) viol++;
            }
        if (missing) die("%ld W4 jobs never ran", missing);
        print_head("W4");
        printf(", \"ordered\": false, \"ordering\": \"not supported (run unordered)\", "
               "\"keys\": %ld, \"per_key\": %ld, \"jobs\": %ld, \"jobs_per_s\": %.1f, "
               "\"order_violations\": %ld}\n",
               g_keys, g_per_key, total, total / (t1 - t0), viol);
        break;
    }
    case W5: {
        double t0 = mono_s();
        bulk_put(p, g_backlog, body_blank);
        double t1 = mono_s();
        long m = g_measure < g_backlog ? g_measure : g_backlog;
        workers_start(m, 0);
        workers_join();
        double t2 = mono_s();
        print_head("W5");
        printf(", \"backlog\": %ld, \"measured_jobs\": %ld, \"fill_jobs_per_s\": %.1f, "
               "\"drain_jobs_per_s\": %.1f}\n",
               g_backlog, m, g_backlog / (t1 - t0), m / (t2 - t1));
        break;
    }
    case WMEM: {
        double t0 = mono_s();
        bulk_put(p, g_jobs, body_blank);
        double t1 = mono_s();
        long ready = stats_value(p, "current-jobs-ready");
        if (ready != g_jobs) die("expected %ld ready jobs, stats says %ld", g_jobs, ready);
        print_head("MEM");
        printf(", \"jobs\": %ld, \"enqueue_jobs_per_s\": %.1f}\n", g_jobs, g_jobs / (t1 - t0));
        break;
    }
    }
    conn_close(p);
    return 0;
}
