// SPDX-License-Identifier: Apache-2.0
/* libtenq over https against a real `tenq serve --tls-cert` (TENQ_BIN):
 * certificates made for the test by tests/lib/certs.sh (the openssl
 * command), real handshakes: calls and the worker over TLS, sessions
 * resumed, a CA that does not verify the server, a name the certificate
 * does not hold, client certificates (mutual TLS) of the right CA and of
 * another, plain HTTP to the TLS port, a failover list of both schemes. */
#include "runner.h"
#include "server_proc.h"

#include "tenq/tenq.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <stdint.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#define ADMIN "tls-test-admin-token-0123456789"

static char dir[64];
static char url[96];   /* https://localhost:PORT */
static char plain[96]; /* http://127.0.0.1:PORT (the same port) */

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
    char cmd[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    ASSERT_MSG(system(cmd) == 0, "failed: %s", cmd);
}

static const char *path(const char *name)
{
    static char buf[8][128];
    static int k;
    char *p = buf[k++ % 8];
    snprintf(p, 128, "%s/%s", dir, name);
    return p;
}

/* A CA, a server certificate for localhost and 127.0.0.1, one for another
 * name, another CA, and a CA of client certificates. */
static void make_certs(void)
{
    const char *src = getenv("TENQ_SOURCE_DIR");
    ASSERT_MSG(src && *src, "set TENQ_SOURCE_DIR to the source tree");
    snprintf(dir, sizeof dir, "/tmp/tenq-tls-XXXXXX");
    ASSERT(mkdtemp(dir) != NULL);
    char certs[512];
    snprintf(certs, sizeof certs, "sh %s/tests/lib/certs.sh", src);
    sh("%s ca %s ca && %s ca %s other_ca && %s ca %s client_ca", certs, dir, certs, dir, certs,
       dir);
    sh("%s leaf %s srv ca localhost DNS:localhost,IP:127.0.0.1", certs, dir);
    sh("%s leaf %s wronghost ca wronghost DNS:wronghost", certs, dir);
}

static void client_cert(const char *name, const char *ca, const char *cn)
{
    sh("sh %s/tests/lib/certs.sh leaf %s %s %s %s -", getenv("TENQ_SOURCE_DIR"), dir, name, ca, cn);
}

static void cleanup(void)
{
    if (dir[0]) sh("rm -rf %s", dir);
}

static void start(const char *cert, const char *const *more)
{
    char c[128], k[128];
    snprintf(c, sizeof c, "%s/%s.pem", dir, cert);
    snprintf(k, sizeof k, "%s/%s.key", dir, cert);
    const char *args[16] = {"--tls-cert", c, "--tls-key", k};
    int n = 4;
    for (int i = 0; more && more[i] && n < 15; i++) args[n++] = more[i];
    args[n] = NULL;
    test_server_start(args);
    const char *port = strrchr(test_server_url, ':') + 1;
    snprintf(url, sizeof url, "https://localhost:%s", port);
    snprintf(plain, sizeof plain, "http://127.0.0.1:%s", port);
}

static int open_client(const char *const *urls, size_t n, const char *ca, const char *cert,
                       const char *token, tenq_client **out)
{
    tenq_options o;
    tenq_options_init(&o);
    o.servers = urls;
    o.nservers = n;
    o.token = token;
    o.ca_file = ca;
    char c[128], k[128];
    if (cert) {
        snprintf(c, sizeof c, "%s/%s.pem", dir, cert);
        snprintf(k, sizeof k, "%s/%s.key", dir, cert);
        o.cert_file = c;
        o.key_file = k;
    }
    o.connect_timeout_ms = 5000;
    o.request_timeout_ms = 10000;
    return tenq_client_new(&o, out);
}

static tenq_client *client(const char *ca, const char *cert, const char *token)
{
    const char *urls[] = {url};
    tenq_client *c = NULL;
    int rc = open_client(urls, 1, ca, cert, token, &c);
    ASSERT_MSG(rc == 0, "tenq_client_new: %s", tenq_errmsg(c));
    return c;
}

static uint64_t submit(tenq_client *c, const char *queue)
{
    tenq_submit_req r = {0};
    r.tenant = "acme";
    r.queue = queue;
    r.type = "T";
    r.args_json = "{\"n\":1}";
    tenq_submit_res res;
    int rc = tenq_submit(c, &r, &res);
    ASSERT_MSG(rc == 0, "submit: %s", tenq_errmsg(c));
    return res.id;
}

/* A counter of the server's /metrics (a line "NAME VALUE"). */
static long long metric(tenq_client *c, const char *name)
{
    int status = 0;
    char *text = NULL;
    ASSERT_EQ(tenq_request(c, "GET", "/metrics", NULL, 0, &status, &text), 0);
    const char *at = strstr(text, name);
    ASSERT_MSG(at, "no %s in /metrics", name);
    long long v = atoll(at + strlen(name) + 1);
    tenq_free(text);
    return v;
}

TEST(calls_over_https_and_a_session_resumed)
{
    make_certs();
    atexit(cleanup);
    const char *more[] = {"--idle-timeout", "1s", NULL};
    start("srv", more);
    tenq_client *c = client(path("ca.pem"), NULL, NULL);
    uint64_t id = submit(c, "q");
    tenq_job *j = NULL;
    ASSERT_EQ(tenq_status(c, id, &j), 0);
    ASSERT_EQ(j->state, TENQ_STATE_READY);
    tenq_job_free(j);
    ASSERT_EQ(metric(c, "tenq_tls_handshakes_total{result=\"full\"}"), 1);
    /* the server closes the idle connection; the next one resumes */
    test_sleep_ms(1600);
    ASSERT_EQ(tenq_status(c, id, &j), 0);
    tenq_job_free(j);
    ASSERT_EQ(metric(c, "tenq_tls_handshakes_total{result=\"resumed\"}"), 1);
    ASSERT_EQ(metric(c, "tenq_tls_handshakes_total{result=\"full\"}"), 1);
    /* a big body both ways (records of 16 KiB) */
    tenq_submit_req *many = calloc(2000, sizeof(*many));
    char args[600];
    memset(args, 0, sizeof args);
    snprintf(args, sizeof args, "{\"pad\":\"%0500d\"}", 7);
    for (int i = 0; i < 2000; i++)
        many[i] =
            (tenq_submit_req){.tenant = "acme", .queue = "big", .type = "T", .args_json = args};
    tenq_submit_res *res = calloc(2000, sizeof(*res));
    ASSERT_MSG(tenq_submit_batch(c, many, 2000, res) == 0, "%s", tenq_errmsg(c));
    const char *qs[] = {"big"};
    tenq_lease_req lr = {.worker = "w", .queues = qs, .nqueues = 1, .max = 1000};
    tenq_job *jobs = NULL;
    size_t n = 0;
    ASSERT_EQ(tenq_lease(c, &lr, &jobs, &n), 0);
    ASSERT_EQ(n, 1000);
    ASSERT(strstr(jobs[999].args_json, "0000007") != NULL);
    tenq_jobs_free(jobs, n);
    free(many);
    free(res);
    tenq_client_free(c);
}

TEST(a_server_the_client_cannot_verify_is_refused_at_once)
{
    make_certs();
    atexit(cleanup);
    start("srv", NULL);
    /* another CA; the system's CAs (none of which signed ours) */
    const char *cas[] = {path("other_ca.pem"), NULL};
    for (int i = 0; i < 2; i++) {
        tenq_client *c = client(cas[i], NULL, NULL);
        tenq_job *j = NULL;
        int64_t t0 = test_now_ms();
        int rc = tenq_status(c, 1, &j);
        ASSERT_MSG(rc == TENQ_ETLS, "%d %s", rc, tenq_errmsg(c));
        ASSERT_MSG(strstr(tenq_errmsg(c), "certificate verify failed: unable to get local issuer "
                                          "certificate"),
                   "%s", tenq_errmsg(c));
        ASSERT_MSG(test_now_ms() - t0 < 3000, "a refused certificate is not retried");
        tenq_client_free(c);
    }
    /* a file that is not there: told when the handle is made */
    tenq_client *c = NULL;
    const char *urls[] = {url};
    ASSERT_EQ(open_client(urls, 1, "/nonexistent/ca.pem", NULL, NULL, &c), TENQ_EINVALID);
    ASSERT_MSG(strstr(tenq_errmsg(c), "/nonexistent/ca.pem: No such file or directory"), "%s",
               tenq_errmsg(c));
    tenq_client_free(c);
    /* plain HTTP to the TLS port */
    const char *purls[] = {plain};
    ASSERT_EQ(open_client(purls, 1, NULL, NULL, NULL, &c), 0);
    tenq_job *j = NULL;
    ASSERT_EQ(tenq_status(c, 1, &j), TENQ_EINVALID);
    ASSERT_MSG(strstr(tenq_errmsg(c), "this port speaks TLS"), "%s", tenq_errmsg(c));
    tenq_client_free(c);
}

TEST(a_name_the_certificate_does_not_hold_is_refused)
{
    make_certs();
    atexit(cleanup);
    start("wronghost", NULL);
    tenq_client *c = client(path("ca.pem"), NULL, NULL);
    tenq_job *j = NULL;
    ASSERT_EQ(tenq_status(c, 1, &j), TENQ_ETLS);
    ASSERT_MSG(strstr(tenq_errmsg(c), "certificate verify failed: hostname mismatch"), "%s",
               tenq_errmsg(c));
    tenq_client_free(c);
}

TEST(a_client_certificate_for_a_token_and_one_from_another_ca)
{
    make_certs();
    atexit(cleanup);
    setenv("TENQ_ADMIN_TOKEN", ADMIN, 1);
    const char *more[] = {"--tls-client-ca", path("client_ca.pem"), NULL};
    start("srv", more);
    unsetenv("TENQ_ADMIN_TOKEN");
    tenq_client *admin = client(path("ca.pem"), NULL, ADMIN);
    int status = 0;
    char *text = NULL;
    ASSERT_EQ(
        tenq_request(admin, "POST", "/v1/tokens", "{\"role\":\"worker\"}", 17, &status, &text), 0);
    long long id = atoll(strstr(text, "\"id\":") + 5);
    tenq_free(text);
    char cn[32];
    snprintf(cn, sizeof cn, "token:%lld", id);
    client_cert("w", "client_ca", cn);
    client_cert("foreign", "other_ca", cn);
    uint64_t jid = submit(admin, "mq");

    tenq_client *w = client(path("ca.pem"), "w", NULL);
    ASSERT_EQ(tenq_request(w, "GET", "/v1/whoami", NULL, 0, &status, &text), 0);
    ASSERT_MSG(strstr(text, "\"role\":\"worker\""), "%s", text);
    tenq_free(text);
    const char *qs[] = {"mq"};
    tenq_lease_req lr = {.worker = "w", .queues = qs, .nqueues = 1, .max = 1};
    tenq_job *jobs = NULL;
    size_t n = 0;
    ASSERT_MSG(tenq_lease(w, &lr, &jobs, &n) == 0, "%s", tenq_errmsg(w));
    ASSERT_EQ(n, 1);
    ASSERT_EQ(jobs[0].id, jid);
    ASSERT_EQ(tenq_ack(w, jid, jobs[0].token, "{\"ok\":true}", NULL), 0);
    tenq_jobs_free(jobs, n);
    /* a worker token may not submit: the certificate's token holds */
    tenq_submit_req r = {.tenant = "acme", .queue = "mq", .type = "T"};
    tenq_submit_res res;
    ASSERT_EQ(tenq_submit(w, &r, &res), TENQ_EFORBIDDEN);
    tenq_client_free(w);

    tenq_client *f = client(path("ca.pem"), "foreign", NULL);
    ASSERT_EQ(tenq_request(f, "GET", "/v1/whoami", NULL, 0, &status, &text), TENQ_ETLS);
    ASSERT_MSG(strstr(tenq_errmsg(f), "refused the TLS connection: tlsv1 alert unknown ca"), "%s",
               tenq_errmsg(f));
    tenq_client_free(f);
    /* a key that is not the certificate's: told when the handle is made */
    sh("cp %s/foreign.key %s/mixed.key && cp %s/w.pem %s/mixed.pem", dir, dir, dir, dir);
    const char *urls[] = {url};
    ASSERT_EQ(open_client(urls, 1, path("ca.pem"), "mixed", NULL, &f), TENQ_EINVALID);
    ASSERT_MSG(strstr(tenq_errmsg(f), "not the client certificate's key"), "%s", tenq_errmsg(f));
    tenq_client_free(f);
    tenq_client_free(admin);
}

/* A port nothing listens on. */
static int dead_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT(bind(fd, (struct sockaddr *)&a, sizeof a) == 0);
    socklen_t l = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &l);
    close(fd);
    return ntohs(a.sin_port);
}

TEST(a_failover_list_of_http_and_https)
{
    make_certs();
    atexit(cleanup);
    start("srv", NULL);
    char dead[64], dead_tls[64];
    snprintf(dead, sizeof dead, "http://127.0.0.1:%d", dead_port());
    snprintf(dead_tls, sizeof dead_tls, "https://localhost:%d", dead_port());
    const char *lists[][3] = {{dead, url, NULL}, {url, dead, NULL}, {dead_tls, dead, url}};
    for (int i = 0; i < 3; i++) {
        tenq_client *c = NULL;
        ASSERT_EQ(open_client(lists[i], lists[i][2] ? 3 : 2, path("ca.pem"), NULL, NULL, &c), 0);
        submit(c, "mixed");
        tenq_client_free(c);
    }
}

/* ---- the worker over https --------------------------------------------------------------------
 */

static tenq_result h_echo(tenq_task *t, void *ctx)
{
    (void)ctx;
    return tenq_result_ok(tenq_task_job(t)->args_json);
}

static void *run(void *w)
{
    return (void *)(intptr_t)tenq_worker_run(w);
}

TEST(the_worker_over_https)
{
    make_certs();
    atexit(cleanup);
    start("srv", NULL);
    tenq_client *c = client(path("ca.pem"), NULL, NULL);
    uint64_t ids[20];
    for (int i = 0; i < 20; i++) ids[i] = submit(c, "wq");
    tenq_worker_options o;
    tenq_worker_options_init(&o);
    const char *urls[] = {url};
    const char *queues[] = {"wq"};
    o.servers = urls;
    o.nservers = 1;
    o.queues = queues;
    o.nqueues = 1;
    o.concurrency = 4;
    o.ca_file = path("ca.pem");
    tenq_worker *w = NULL;
    ASSERT_EQ(tenq_worker_new(&o, &w), 0);
    ASSERT_EQ(tenq_worker_handle(w, NULL, h_echo, NULL), 0);
    pthread_t th;
    ASSERT_EQ(pthread_create(&th, NULL, run, w), 0);
    int64_t until = test_now_ms() + 20000;
    for (int i = 0; i < 20; i++) {
        for (;;) {
            tenq_job *j = NULL;
            ASSERT_EQ(tenq_status(c, ids[i], &j), 0);
            bool done = j->state == TENQ_STATE_SUCCEEDED;
            tenq_job_free(j);
            if (done) break;
            ASSERT_MSG(test_now_ms() < until, "job %d not done", i);
            test_sleep_ms(20);
        }
    }
    tenq_worker_stop(w);
    void *rc;
    pthread_join(th, &rc);
    ASSERT_EQ((intptr_t)rc, 0);
    tenq_worker_free(w);

    /* a worker that cannot verify the server stops with the reason */
    o.ca_file = path("other_ca.pem");
    ASSERT_EQ(tenq_worker_new(&o, &w), 0);
    ASSERT_EQ(tenq_worker_handle(w, NULL, h_echo, NULL), 0);
    ASSERT_EQ(tenq_worker_run(w), TENQ_ETLS);
    ASSERT_MSG(strstr(tenq_worker_errmsg(w), "certificate verify failed"), "%s",
               tenq_worker_errmsg(w));
    tenq_worker_free(w);
    tenq_client_free(c);
}
