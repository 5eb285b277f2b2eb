// SPDX-License-Identifier: Apache-2.0
/* tenq serve: start-up and stop (api_serve, api.h), the top of src/api: it
 * makes the server (server.h) and each subsystem's state, and registers the
 * calls that go up the layers (commit_hooks, load_rest_again).  The rest of
 * the loop: router.c (requests), commit.c (answers after commit), tick.c
 * (the engine's timers), waiters.c (long polls), lead.c and lead_loop.c
 * (the leadership). */
#include "server.h"

#include "admit.h"
#include "api.h"
#include "auth.h"
#include "clock.h"
#include "commit.h"
#include "cron.h"
#include "ingest.h"
#include "lead.h"
#include "lead_loop.h"
#include "load_rest.h"
#include "rates.h"
#include "request_keys.h"
#include "router.h"
#include "term_load.h"
#include "tick.h"
#include "tls.h"
#include "waiters.h"
#include "workers.h"

#include "base/xalloc.h"

#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- stopping ---------------------------------------------------------------------------------
 */

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    server *s = arg;
    if (s->stopping) {
        log_event(LOG_WARN, "stop", "second signal: exiting at once");
        _exit(1);
    }
    s->stopping = true;
    log_event(LOG_INFO, "stop", "signal=%d: no new connections; finishing what is in flight",
              (int)sig);
    http_server_stop_accepting(s->http);
    srv_end_lease_waiters(s);          /* long polls answer now */
    srv_load_rest_stop(s);             /* parked requests are told the server stops */
    srv_write_late_rows(s, INT64_MAX); /* a clean stop keeps every lease */
    srv_flush_now(s);
    srv_maybe_finish_stop(s);
}

/* SIGHUP: the certificate and key (and client CAs) read again; open
 * connections go on with what they were made with. */
static void on_hup(evutil_socket_t sig, short what, void *arg)
{
    (void)sig;
    (void)what;
    server *s = arg;
    char err[1024], desc[512];
    if (!s->tls) {
        log_event(LOG_INFO, "tls", "SIGHUP: nothing to reload (no --tls-cert)");
        return;
    }
    if (tls_server_reload(s->tls, err, sizeof err) != 0) {
        log_event(LOG_ERROR, "tls", "SIGHUP: kept the certificate in use: %s", err);
        return;
    }
    tls_server_describe(s->tls, desc, sizeof desc);
    log_event(LOG_INFO, "tls", "SIGHUP: reloaded; new connections get the %s", desc);
}

static void on_linger(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    server *s = arg;
    if (http_server_connections(s->http) == 0) event_base_loopexit(s->base, NULL);
}

/* After the handover, for --stop-linger: a request a client sent on a
 * connection it still holds is answered as a standby answers (the new
 * leader, or 503 not_leader: it changed nothing) and its connection closed,
 * rather than cut off at exit, which would leave the client unable to know
 * whether it was applied.  Ends once every connection is closed.  Nothing
 * runs on the engine meanwhile: its timers are off and every request is
 * refused before it reaches a handler. */
static void linger(server *s)
{
    s->lead.leading = false;
    srv_end_job_waiters(s);
    srv_tick_stop(s);
    event_del(s->rates.sample_ev);
    srv_ingest_stop(s);
    srv_commit_timers_off(s);
    if (s->cfg.stop_linger_ms <= 0 || http_server_connections(s->http) == 0) return;
    struct event *ev = event_new(s->base, -1, EV_PERSIST, on_linger, s);
    if (!ev) return;
    struct timeval every = {0, 10000};
    struct timeval until = {s->cfg.stop_linger_ms / 1000, (s->cfg.stop_linger_ms % 1000) * 1000};
    event_add(ev, &every);
    event_base_loopexit(s->base, &until);
    event_base_dispatch(s->base);
    event_free(ev);
}

static bool loopback(const char *host)
{
    return !strcmp(host, "127.0.0.1") || !strcmp(host, "::1") || !strncmp(host, "127.", 4) ||
           !strcmp(host, "localhost");
}

int api_serve(const api_config *cfg)
{
    signal(SIGPIPE, SIG_IGN);
    log_setup(cfg->log_format, cfg->log_level);
    server *s = xcalloc(1, sizeof(*s));
    s->cfg = *cfg;
    int rc = 1;
    srv_clock_start(s);
    auth_init(&s->auth);
    /* the calls up the layers, to the layer that answers them */
    s->commit.hooks = (commit_hooks){srv_wake_leases, srv_jobs_finished, srv_step_down};
    s->load_rest.again = srv_on_request;

    char host[256];
    int port = 7070;
    snprintf(host, sizeof host, "%s", cfg->listen);
    char *colon = strrchr(host, ':');
    if (colon) {
        *colon = 0;
        port = atoi(colon + 1);
    }
    if (host[0] == '[') { /* [::1]:7070 */
        memmove(host, host + 1, strlen(host));
        char *rb = strchr(host, ']');
        if (rb) *rb = 0;
    }
    if (!strcmp(host, "localhost")) snprintf(host, sizeof host, "127.0.0.1");

    if (*cfg->admin_token && strlen(cfg->admin_token) < 16) {
        log_event(LOG_ERROR, "auth", "TENQ_ADMIN_TOKEN must be at least 16 characters");
        goto out;
    }
    char err[1024];
    /* the certificate before anything else: a bad one is told first */
    if (*cfg->tls_cert) {
        if (cfg->allow_plaintext) {
            log_event(LOG_ERROR, "listen",
                      "--allow-plaintext with --tls-cert: this server speaks TLS only; give one");
            goto out;
        }
        tls_config tc = {cfg->tls_cert, cfg->tls_key, cfg->tls_client_ca,
                         !strcmp(cfg->tls_client_auth, "require"), cfg->tls_ciphers};
        if (tls_server_new(&tc, &s->tls, err, sizeof err) != 0) {
            log_event(LOG_ERROR, "tls", "%s", err);
            goto out;
        }
    }
    /* this start's name in the store (lead.c makes it; the store's
     * connections carry it from the first) */
    char node[24];
    lead_node_name(node, sizeof node);
    store_opts so = {0};
    so.sync = !strcmp(cfg->sqlite_sync, "normal") ? STORE_SYNC_NORMAL : STORE_SYNC_FULL;
    /* a fault-injection seam for crash tests; not a setting */
    const char *delay = getenv("TENQ_TEST_COMMIT_DELAY_MS");
    if (delay) so.test_commit_delay_ms = atoi(delay);
    /* and one that holds a PostgreSQL transaction open at its commit */
    const char *sync_delay = getenv("TENQ_TEST_PG_SYNC_DELAY_MS");
    if (sync_delay) so.test_sync_delay_ms = atoi(sync_delay);
    so.writer_idle = strcmp(cfg->writer_priority, "normal") != 0;
    so.elect = true;
    so.node = node;
    so.request_key_ttl_ms = cfg->request_key_ttl_ms;
    so.audit_ttl_ms = cfg->audit_retention_ms;
    if (store_open(cfg->store, &so, &s->st, err, sizeof err) != 0) {
        log_event(LOG_ERROR, "store", "%s", err);
        goto out;
    }
    store_set_clock(s->st, s->clock.wall0_ms, s->clock.mono0_ns);
    if (cfg->data_dir_used) log_event(LOG_INFO, "data", "data-dir=%s", cfg->data_dir);
    log_event(LOG_INFO, "store", "backend=%s at=%s sync=%s writer=%s", store_backend(s->st),
              store_where(s->st),
              strcmp(store_backend(s->st), "sqlite") ? "commit" : cfg->sqlite_sync,
              store_writer_may_idle(s->st) ? "idle-when-quiet"
              : so.writer_idle ? "normal (idle priority needs CAP_SYS_NICE or RLIMIT_NICE 20)"
                               : "normal");
    {
        char why[160];
        admit_init(&s->admit, admit_budget_resolve(cfg->memory_budget, why, sizeof why),
                   (uint64_t)cfg->args_memory);
        log_event(LOG_INFO, "memory", "budget=%lluMiB (%s) jobs=%lluMiB args=%lluMiB",
                  (unsigned long long)(s->admit.budget >> 20), why,
                  (unsigned long long)(s->admit.jobs_budget >> 20),
                  (unsigned long long)(s->admit.args_budget >> 20));
    }
    s->e = srv_engine_new(s, 0); /* until this server leads */
    s->rkeys = rkeys_new();
    s->commit.batch = store_batch_new();

    s->base = event_base_new();
    if (!s->base) {
        log_event(LOG_ERROR, "listen", "cannot make an event loop");
        goto out;
    }
    http_limits lim;
    http_limits_defaults(&lim);
    lim.max_header_bytes = (size_t)cfg->max_header_bytes;
    lim.max_headers = (int)cfg->max_headers;
    lim.max_body_bytes = (size_t)(cfg->max_batch_bytes > cfg->max_job_bytes ? cfg->max_batch_bytes
                                                                            : cfg->max_job_bytes);
    lim.header_timeout_ms = (int)cfg->header_timeout_ms;
    lim.body_timeout_ms = (int)cfg->body_timeout_ms;
    lim.idle_timeout_ms = (int)cfg->idle_timeout_ms;
    lim.write_timeout_ms = (int)cfg->write_timeout_ms;
    lim.max_connections = (int)cfg->max_connections;
    lim.idle_yield = cfg->idle_yield;
    s->http = http_server_new(s->base, &lim, srv_on_request, s);
    if (!s->http) {
        log_event(LOG_ERROR, "listen", "cannot make the HTTP server");
        goto out;
    }
    if (s->tls) http_server_set_tls(s->http, s->tls);
    s->port = http_server_listen(s->http, host, port, err, sizeof err);
    if (s->port < 0) {
        log_event(LOG_ERROR, "listen", "%s", err);
        goto out;
    }
    int ticks = srv_tick_start(s);
    s->sig_term = evsignal_new(s->base, SIGTERM, on_signal, s);
    s->sig_int = evsignal_new(s->base, SIGINT, on_signal, s);
    if (srv_commit_start(s) != 0 || srv_rates_start(s) != 0 || srv_ingest_start(s) != 0 ||
        srv_cron_start(s) != 0 || ticks != 0 || !s->sig_term || !s->sig_int ||
        evsignal_add(s->sig_term, NULL) != 0 || evsignal_add(s->sig_int, NULL) != 0) {
        log_event(LOG_ERROR, "listen", "cannot set up the event loop's events");
        goto out;
    }
    /* Leads, or stands by: loads the jobs and tokens when it leads. */
    if (srv_lead_start(s, node, host) != 0) goto out;
    s->open_network = !loopback(host) && !cfg->allow_open_network;
    if (s->auth.by_hash.len == 0 && s->open_network) {
        log_event(LOG_ERROR, "auth",
                  "refusing to listen on %s with no tokens: anyone could do anything. Set "
                  "TENQ_ADMIN_TOKEN=<secret> (or create one with `tenq token create --role admin` "
                  "against a loopback server), or listen on 127.0.0.1",
                  host);
        goto out;
    }
    /* SIGHUP reloads (systemctl reload): never the signal's default, an exit */
    s->sig_hup = evsignal_new(s->base, SIGHUP, on_hup, s);
    if (!s->sig_hup || evsignal_add(s->sig_hup, NULL) != 0) {
        log_event(LOG_ERROR, "listen", "cannot set up the event loop's events");
        goto out;
    }
    if (s->tls) {
        char desc[512];
        tls_server_describe(s->tls, desc, sizeof desc);
        log_event(LOG_INFO, "tls", "https with the %s (SIGHUP reloads it)", desc);
    } else if (!loopback(host) && cfg->allow_plaintext) {
        log_event(LOG_INFO, "listen",
                  "plain HTTP beyond loopback (--allow-plaintext): a proxy in front is to "
                  "terminate TLS, and only it should reach %s:%d",
                  host, s->port);
    } else if (!loopback(host)) {
        log_event(LOG_WARN, "listen",
                  "PLAINTEXT: listening on %s:%d without TLS: tokens, job arguments and "
                  "results cross the network unencrypted. Give --tls-cert and --tls-key, or "
                  "--allow-plaintext when a proxy in front terminates TLS",
                  host, s->port);
    }
    srv_rearm_tick(s);
    log_event(LOG_INFO, "listen", "listening on %s:%d (%s; auth: %s)", host, s->port,
              s->tls ? "https" : "http", s->auth.by_hash.len ? "tokens" : "none, loopback only");
    printf("tenq: listening on %s:%d\n", host, s->port);
    fflush(stdout);
    if (*cfg->port_file) {
        char tmp[1100];
        snprintf(tmp, sizeof tmp, "%s.tmp", cfg->port_file);
        FILE *f = fopen(tmp, "w");
        if (f) {
            fprintf(f, "%d\n", s->port);
            fclose(f);
            rename(tmp, cfg->port_file);
        }
    }
    event_base_dispatch(s->base);
    rc = 0;
    /* every commit is in: a leader gives the leadership up now, so that a
     * standby takes over at once */
    lead_stop(s, true);
    linger(s);
out:
    lead_free(s);
    if (rc == 0) log_event(LOG_INFO, "stop", "stopped");
    if (s->http) http_server_free(s->http);
    srv_waiters_free(s);
    if (s->st) store_close(s->st);
    engine_destroy(s->e);
    admit_free(&s->admit);
    rkeys_free(s->rkeys);
    store_batch_free(s->commit.batch);
    rates_free(s);
    workers_free(s);
    auth_free(&s->auth);
    srv_ingest_free(s);
    srv_cron_free(s);
    srv_commit_free(s);
    srv_tick_free(s);
    if (s->rates.sample_ev) event_free(s->rates.sample_ev);
    if (s->sig_term) event_free(s->sig_term);
    if (s->sig_int) event_free(s->sig_int);
    if (s->sig_hup) event_free(s->sig_hup);
    tls_server_free(s->tls); /* after the connections made from it */
    if (s->base) event_base_free(s->base);
    free(s);
    return rc;
}
