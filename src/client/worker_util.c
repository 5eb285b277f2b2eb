// SPDX-License-Identifier: Apache-2.0
/* What the worker's threads share: the log, a client for each thread, the
 * heartbeat interval, timed waits, and the stop (tenq_worker_stop, which
 * the leaser and the reporter also call when the worker cannot go on). */
#include "internal.h"
#include "base/clock.h"
#include "worker_int.h"

#include <errno.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

int64_t wk_heartbeat_every(int64_t lease_left_ms, int64_t lease_until)
{
    /* a third of the time the server says the lease has left; from a server
     * too old to say, its deadline by this machine's clock */
    int64_t left = lease_left_ms > 0 ? lease_left_ms : lease_until - tq_wall_ms();
    int64_t every = left / 3;
    return every < WK_HEARTBEAT_MIN_MS ? WK_HEARTBEAT_MIN_MS : every;
}

static const char *const level_names[] = {"debug", "info", "warn", "error"};

void wk_log(tenq_worker *w, tenq_log_level level, const char *fmt, ...)
{
    if (level < w->log_level) return;
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (w->log) {
        w->log(w->log_ctx, level, line);
        return;
    }
    /* one fprintf per line: stdio's lock keeps lines of threads whole */
    fprintf(stderr, "tenq worker: %s: %s\n", level_names[level], line);
}

tenq_client *wk_client(tenq_worker *w, int abort_fd, int abort_after_ms)
{
    tenq_options o;
    tenq_options_init(&o);
    o.servers = (const char *const *)w->servers;
    o.nservers = w->nservers;
    o.token = w->token;
    o.ca_file = w->ca_file;
    o.cert_file = w->cert_file;
    o.key_file = w->key_file;
    if (w->connect_ms > 0) o.connect_timeout_ms = w->connect_ms;
    if (w->request_ms > 0) o.request_timeout_ms = w->request_ms;
    /* a takeover is followed within a call; a server away longer is the
     * worker's own loop's to wait for (backing off, saying so in its log) */
    o.failover_ms = WK_FAILOVER_MS;
    tenq_client *c = NULL;
    int rc = tenq_client_new(&o, &c);
    if (rc != 0) {
        wk_log(w, TENQ_LOG_ERROR, "cannot make a client: %s",
               c ? tenq_errmsg(c) : tenq_err_message(rc));
        tenq_client_free(c);
        return NULL;
    }
    if (abort_fd >= 0) {
        c->abort_set = true;
        c->abort_fd = abort_fd;
        c->abort_after_ms = abort_after_ms;
    }
    return c;
}

void wk_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t until)
{
    if (until <= 0) {
        pthread_cond_wait(cv, mu);
        return;
    }
    /* the condvars are made with CLOCK_MONOTONIC (see tenq_worker_new) */
    struct timespec ts = {(time_t)(until / 1000), (long)(until % 1000) * 1000000};
    pthread_cond_timedwait(cv, mu, &ts);
}

void tenq_worker_stop(tenq_worker *w)
{
    if (!w) return;
    int saved = errno; /* a signal handler must leave errno as it was */
    atomic_fetch_add(&w->stops, 1);
    char b = 's';
    /* Full pipes already say "stop": a failed write changes nothing. */
    if (write(w->stop_pipe[1], &b, 1) < 0) (void)0;
    if (write(w->ctl_pipe[1], &b, 1) < 0) (void)0;
    errno = saved;
}
