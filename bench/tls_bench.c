// SPDX-License-Identifier: Apache-2.0
/* TLS handshakes a second against a `tenq serve --tls-cert` (make bench-tls,
 * bench/tls_handshakes.sh): THREADS clients each open a connection, shake
 * hands (resuming the session of their last connection with --resume), send
 * GET /healthz with Connection: close, read the answer (and so the session
 * tickets that come before it) and close, for SECONDS.  Prints one JSON line:
 * handshakes a second, the share resumed, and with --server-pid the server's
 * CPU time per handshake (its utime + stime from /proc, all threads).
 *
 *   bench_tls --port N --ca FILE [--seconds 10] [--threads 1] [--resume] [--server-pid PID]
 *   bench_tls --port N --plain ...   the same exchange with a plain server (no TLS) */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int port = 0, threads = 1;
static double seconds = 10;
static bool resume = false, plain = false;
static const char *ca = NULL;
static SSL_CTX *ctx;
static atomic_long n_done, n_resumed, n_failed;
static double t_end;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The server's CPU time so far, in seconds (utime + stime of /proc/PID/stat). */
static double cpu_of(long pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* after the command's name */
    unsigned long long ut = 0, st = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static int dial(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static void *run(void *arg)
{
    (void)arg;
    SSL_SESSION *sess = NULL;
    static const char req[] =
        "GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    while (now_s() < t_end) {
        int fd = dial();
        if (fd < 0) {
            atomic_fetch_add(&n_failed, 1);
            continue;
        }
        if (plain) { /* the same exchange over plain HTTP: what a connection costs without TLS */
            char buf[4096];
            bool ok = send(fd, req, sizeof req - 1, MSG_NOSIGNAL) > 0;
            ssize_t n;
            while (ok && (n = recv(fd, buf, sizeof buf, 0)) > 0) {
            }
            atomic_fetch_add(ok ? &n_done : &n_failed, 1);
            close(fd);
            continue;
        }
        SSL *ssl = SSL_new(ctx);
        SSL_set_fd(ssl, fd);
        SSL_set_tlsext_host_name(ssl, "localhost");
        SSL_set1_host(ssl, "localhost");
        if (resume && sess) SSL_set_session(ssl, sess);
        bool ok = SSL_connect(ssl) == 1 && SSL_write(ssl, req, sizeof req - 1) > 0;
        char buf[4096];
        while (ok && SSL_read(ssl, buf, sizeof buf) > 0) {
        }
        if (ok) {
            atomic_fetch_add(&n_done, 1);
            if (SSL_session_reused(ssl)) atomic_fetch_add(&n_resumed, 1);
            SSL_SESSION *s = SSL_get1_session(ssl);
            if (s && SSL_SESSION_is_resumable(s)) {
                SSL_SESSION_free(sess);
                sess = s;
            } else {
                SSL_SESSION_free(s);
            }
            SSL_shutdown(ssl);
        } else {
            atomic_fetch_add(&n_failed, 1);
        }
        ERR_clear_error();
        SSL_free(ssl);
        close(fd);
    }
    SSL_SESSION_free(sess);
    return NULL;
}

int main(int argc, char **argv)
{
    long server_pid = 0;
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(k, "--resume") || !strcmp(k, "--plain")) {
            *(k[2] == 'r' ? &resume : &plain) = true;
            continue;
        }
        if (!v) break;
        if (!strcmp(k, "--port"))
            port = atoi(v);
        else if (!strcmp(k, "--ca"))
            ca = v;
        else if (!strcmp(k, "--seconds"))
            seconds = atof(v);
        else if (!strcmp(k, "--threads"))
            threads = atoi(v);
        else if (!strcmp(k, "--server-pid"))
            server_pid = atol(v);
        else
            break;
        i++;
    }
    if (port <= 0 || (!ca && !plain) || threads < 1 || threads > 64) {
        fprintf(stderr,
                "usage: bench_tls --port N --ca FILE [--seconds S] [--threads T] [--resume] "
                "[--server-pid PID]\n");
        return 2;
    }
    ctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    if (!plain && SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1) {
        fprintf(stderr, "bench_tls: cannot read %s\n", ca);
        return 1;
    }
    double cpu0 = server_pid ? cpu_of(server_pid) : -1, t0 = now_s();
    t_end = t0 + seconds;
    pthread_t th[64];
    for (int i = 0; i < threads; i++) pthread_create(&th[i], NULL, run, NULL);
    for (int i = 0; i < threads; i++) pthread_join(th[i], NULL);
    double took = now_s() - t0, cpu1 = server_pid ? cpu_of(server_pid) : -1;
    long done = atomic_load(&n_done), resumed = atomic_load(&n_resumed);
    printf("{\"mode\": \"%s\", \"threads\": %d, \"seconds\": %.1f, \"connections\": %ld, "
           "\"per_s\": %.0f, \"resumed_share\": %.3f, \"failed\": %ld",
           plain    ? "plain"
           : resume ? "resumed"
                    : "full",
           threads, took, done, (double)done / took, done ? (double)resumed / (double)done : 0.0,
           atomic_load(&n_failed));
    if (cpu0 >= 0 && cpu1 >= 0 && done)
        printf(", \"server_cpu_us_per_connection\": %.0f", (cpu1 - cpu0) * 1e6 / (double)done);
    printf("}\n");
    SSL_CTX_free(ctx);
    return atomic_load(&n_failed) ? 1 : 0;
}
