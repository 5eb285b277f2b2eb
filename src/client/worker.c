// SPDX-License-Identifier: Apache-2.0
/* The worker: options and handlers, the control thread (tenq_worker_run)
 * and how it stops, status. */
#include "internal.h"
#include "base/clock.h"
#include "worker_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

/* ---- options and handlers ------------------------------------------------------------------- */

void tenq_worker_options_init(tenq_worker_options *o)
{
    memset(o, 0, sizeof(*o));
    o->size = sizeof(*o);
    o->concurrency = 1;
    o->poll_ms = 30000;
    o->grace_ms = 30000;
    o->log_level = TENQ_LOG_INFO;
}

static char **copy_list(const char *const *v, size_t n, bool *bad)
{
    if (!v || !n) return NULL;
    char **out = calloc(n, sizeof(char *));
    if (!out) {
        *bad = true;
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        if (!v[i] || !(out[i] = strdup(v[i]))) *bad = true;
    return out;
}

static void free_list(char **v, size_t n)
{
    if (!v) return;
    for (size_t i = 0; i < n; i++) free(v[i]);
    free(v);
}

static int set_err(tenq_worker *w, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int set_err(tenq_worker *w, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->err, sizeof w->err, fmt, ap);
    va_end(ap);
    return code;
}

static int make_pipe(int p[2])
{
    return pipe2(p, O_CLOEXEC | O_NONBLOCK);
}

int tenq_worker_new(const tenq_worker_options *in, tenq_worker **out)
{
    *out = NULL;
    tenq_worker_options o;
    tenq_worker_options_init(&o);
    if (in) {
        size_t n = in->size && in->size < sizeof(o) ? in->size : sizeof(o);
        memcpy(&o, in, n);
        o.size = sizeof(o);
    }
    tenq_worker *w = calloc(1, sizeof(*w));
    if (!w) return TENQ_ENOMEM;
    w->stop_pipe[0] = w->stop_pipe[1] = w->ctl_pipe[0] = w->ctl_pipe[1] = -1;
    w->abandon_pipe[0] = w->abandon_pipe[1] = -1;
    atomic_init(&w->stops, 0);
    bool bad = false;
    w->nservers = o.servers ? o.nservers : 0;
    w->servers = copy_list(o.servers, w->nservers, &bad);
    w->nqueues = o.queues ? o.nqueues : 0;
    w->queues = copy_list(o.queues, w->nqueues, &bad);
    if (o.token && !(w->token = strdup(o.token))) bad = true;
    if (o.ca_file && !(w->ca_file = strdup(o.ca_file))) bad = true;
    if (o.cert_file && !(w->cert_file = strdup(o.cert_file))) bad = true;
    if (o.key_file && !(w->key_file = strdup(o.key_file))) bad = true;
    w->connect_ms = o.connect_timeout_ms;
    w->request_ms = o.request_timeout_ms;
    w->concurrency = o.concurrency ? o.concurrency : 1;
    w->poll_ms = o.poll_ms > 0 ? o.poll_ms : 30000;
    w->grace_ms = o.grace_ms > 0 ? o.grace_ms : 30000;
    w->log = o.log;
    w->log_ctx = o.log_ctx;
    w->log_level = o.log_level;
    if (o.name) {
        if (!(w->name = strdup(o.name))) bad = true;
    } else {
        char host[256] = "localhost";
        gethostname(host, sizeof host - 1);
        host[sizeof host - 1] = 0;
        char buf[300];
        snprintf(buf, sizeof buf, "%s/pid-%ld", host, (long)getpid());
        if (!(w->name = strdup(buf))) bad = true;
    }
    pthread_condattr_t ca;
    bool sync_ok = pthread_mutex_init(&w->mu, NULL) == 0 && pthread_condattr_init(&ca) == 0 &&
                   pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 &&
                   pthread_cond_init(&w->cv_run, &ca) == 0 &&
                   pthread_cond_init(&w->cv_lease, &ca) == 0 &&
                   pthread_cond_init(&w->cv_report, &ca) == 0;
    if (bad || !sync_ok || make_pipe(w->stop_pipe) != 0 || make_pipe(w->ctl_pipe) != 0 ||
        make_pipe(w->abandon_pipe) != 0) {
        tenq_worker_free(w);
        return TENQ_ENOMEM;
    }
    *out = w;
    if (!w->nqueues || w->nqueues > 64)
        return set_err(w, TENQ_EINVALID, "a worker leases from 1 to 64 queues");
    if (w->concurrency > TENQ_WORKER_MAX_CONCURRENCY)
        return set_err(w, TENQ_EINVALID, "concurrency is at most %d", TENQ_WORKER_MAX_CONCURRENCY);
    return 0;
}

void tenq_worker_free(tenq_worker *w)
{
    if (!w) return;
    free_list(w->servers, w->nservers);
    free_list(w->queues, w->nqueues);
    free(w->token);
    free(w->ca_file);
    free(w->cert_file);
    free(w->key_file);
    free(w->name);
    for (size_t i = 0; i < w->nhandlers; i++) free(w->handlers[i].type);
    free(w->handlers);
    for (tenq_task *t = w->hand, *nx; t; t = nx) {
        nx = t->next;
        wk_task_free(t);
    }
    int *fds[] = {w->stop_pipe, w->ctl_pipe, w->abandon_pipe};
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
        for (int k = 0; k < 2; k++)
            if (fds[i][k] >= 0) close(fds[i][k]);
    free(w->slot_fds);
    for (unsigned i = 0; w->slot_clients && i < w->concurrency; i++)
        tenq_client_free(w->slot_clients[i]);
    free(w->slot_clients);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv_run);
    pthread_cond_destroy(&w->cv_lease);
    pthread_cond_destroy(&w->cv_report);
    free(w);
}

const char *tenq_worker_errmsg(const tenq_worker *w)
{
    return w ? w->err : "no worker handle";
}

/* The rule of docs/SEMANTICS.md: 1-128 printable ASCII, no spaces. */
static bool type_ok(const char *t)
{
    size_t n = strlen(t);
    if (n == 0 || n > 128) return false;
    for (const char *p = t; *p; p++)
        if (*p <= ' ' || *p > '~') return false;
    return true;
}

int tenq_worker_handle(tenq_worker *w, const char *type, tenq_handler_fn fn, void *ctx)
{
    if (!w) return TENQ_EINVALID;
    w->err[0] = 0;
    if (w->ran) return set_err(w, TENQ_EINVALID, "handlers are registered before the run");
    if (!fn) return set_err(w, TENQ_EINVALID, "a handler needs a function");
    if (type && !type_ok(type)) return set_err(w, TENQ_EINVALID, "bad type name \"%.200s\"", type);
    size_t ntyped = 0;
    for (size_t i = 0; i < w->nhandlers; i++) {
        const char *h = w->handlers[i].type;
        if ((!h && !type) || (h && type && !strcmp(h, type)))
            return set_err(w, TENQ_EINVALID, "a handler for %s is registered already",
                           type ? type : "every type");
        if (h) ntyped++;
    }
    if (type && ntyped == 64) return set_err(w, TENQ_EINVALID, "at most 64 types");
    wk_handler *v = realloc(w->handlers, (w->nhandlers + 1) * sizeof(*v));
    if (!v) return set_err(w, TENQ_ENOMEM, "out of memory");
    w->handlers = v;
    wk_handler *h = &v[w->nhandlers];
    h->type = NULL;
    if (type && !(h->type = strdup(type))) return set_err(w, TENQ_ENOMEM, "out of memory");
    h->fn = fn;
    h->ctx = ctx;
    w->nhandlers++;
    /* the array moved: find the catch-all again */
    w->any = NULL;
    for (size_t i = 0; i < w->nhandlers; i++)
        if (!w->handlers[i].type) w->any = &w->handlers[i];
    return 0;
}

/* ---- stopping ------------------------------------------------------------------------------- */

/* Marks every running task as past the grace period.  (mu) */
static void shutdown_running(tenq_worker *w)
{
    for (tenq_task *t = w->hand; t; t = t->next)
        if (t->state == TK_RUNNING) wk_task_stop(t, TENQ_STOP_SHUTDOWN);
}

/* ---- the control thread --------------------------------------------------------------------- */

typedef struct threads {
    pthread_t leaser, reporter;
    pthread_t *runners;
    wk_runner_arg *args;
    unsigned nrunners;
    bool leaser_up, reporter_up;
} threads;

static int start_threads(tenq_worker *w, threads *th)
{
    th->runners = calloc(w->concurrency, sizeof(pthread_t));
    th->args = calloc(w->concurrency, sizeof(wk_runner_arg));
    if (!th->runners || !th->args) return set_err(w, TENQ_ENOMEM, "out of memory");
    /* runners first: the leaser hands out work at once */
    for (unsigned i = 0; i < w->concurrency; i++) {
        th->args[i].w = w;
        th->args[i].slot = i;
        pthread_mutex_lock(&w->mu);
        w->runners_alive++;
        pthread_mutex_unlock(&w->mu);
        if (pthread_create(&th->runners[i], NULL, wk_runner_main, &th->args[i]) != 0) {
            pthread_mutex_lock(&w->mu);
            w->runners_alive--;
            pthread_mutex_unlock(&w->mu);
            return set_err(w, TENQ_EINTERNAL, "cannot start a runner thread");
        }
        th->nrunners++;
    }
    if (pthread_create(&th->reporter, NULL, wk_reporter_main, w) != 0)
        return set_err(w, TENQ_EINTERNAL, "cannot start the reporter thread");
    th->reporter_up = true;
    if (pthread_create(&th->leaser, NULL, wk_leaser_main, w) != 0)
        return set_err(w, TENQ_EINTERNAL, "cannot start the leaser thread");
    th->leaser_up = true;
    return 0;
}

/* Sets `stopping` and wakes every thread.  (mu) */
static void begin_stop(tenq_worker *w)
{
    w->stopping = true;
    pthread_cond_broadcast(&w->cv_run);
    pthread_cond_broadcast(&w->cv_lease);
    pthread_cond_broadcast(&w->cv_report);
}

/* Waits for stops and the grace deadline until the reporter is done. */
static void control_loop(tenq_worker *w)
{
    int64_t deadline = 0; /* the end of the grace period, once stopping */
    int seen = 0;         /* stops handled */
    for (;;) {
        pthread_mutex_lock(&w->mu);
        int stops = atomic_load(&w->stops);
        if (stops > seen && !w->stopping) {
            begin_stop(w);
            wk_log(w, TENQ_LOG_INFO, "stopping: no more leases; %zu job(s) in hand",
                   w->ready.n + w->nrunning + w->done.n);
        }
        if (w->stopping && !deadline) deadline = tq_mono_ms() + w->grace_ms;
        if (stops >= 2 && !w->abandon) {
            w->abandon = true;
            w->past_grace = true;
            shutdown_running(w);
            char b = 'a';
            if (write(w->abandon_pipe[1], &b, 1) < 0) (void)0;
            pthread_cond_broadcast(&w->cv_report);
            pthread_cond_broadcast(&w->cv_run);
            wk_log(w, TENQ_LOG_WARN, "stopping now: outcomes not reported are abandoned");
        }
        seen = stops;
        if (deadline && !w->past_grace && tq_mono_ms() >= deadline) {
            w->past_grace = true;
            shutdown_running(w);
            pthread_cond_broadcast(&w->cv_report);
            if (w->nrunning)
                wk_log(w, TENQ_LOG_WARN, "grace period over: stopping %zu running job(s)",
                       w->nrunning);
        }
        bool done = w->reporter_done;
        int64_t wait = -1;
        if (deadline && !w->past_grace) wait = deadline - tq_mono_ms();
        pthread_mutex_unlock(&w->mu);
        if (done) return;
        struct pollfd p = {w->ctl_pipe[0], POLLIN, 0};
        int r = poll(&p, 1, wait < 0 ? -1 : wait > INT_MAX ? INT_MAX : (int)wait);
        if (r > 0) {
            char buf[64];
            while (read(w->ctl_pipe[0], buf, sizeof buf) > 0) continue;
        }
    }
}

int tenq_worker_run(tenq_worker *w)
{
    if (!w) return TENQ_EINVALID;
    w->err[0] = 0;
    if (w->ran) return set_err(w, TENQ_EINVALID, "a worker runs once");
    w->ran = true;
    if (!w->nhandlers) return set_err(w, TENQ_EINVALID, "no handler is registered");
    if (!w->nqueues) return set_err(w, TENQ_EINVALID, "a worker leases from 1 to 64 queues");
    int rc = 0;
    threads th = {0};
    w->slot_fds = calloc(w->concurrency, sizeof(int));
    w->slot_clients = calloc(w->concurrency, sizeof(tenq_client *));
    if (!w->slot_fds || !w->slot_clients) return set_err(w, TENQ_ENOMEM, "out of memory");
    for (unsigned i = 0; i < w->concurrency; i++) w->slot_fds[i] = -1;
    for (unsigned i = 0; i < w->concurrency; i++) {
        w->slot_fds[i] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (w->slot_fds[i] < 0) {
            rc = set_err(w, TENQ_EINTERNAL, "eventfd: %s", strerror(errno));
            goto out;
        }
    }
    wk_log(w, TENQ_LOG_INFO, "worker %s: %u slot(s), queue %s%s", w->name, w->concurrency,
           w->queues[0], w->nqueues > 1 ? " and more" : "");
    rc = start_threads(w, &th);
    if (rc != 0) {
        /* what started must still end: a stop ends it */
        tenq_worker_stop(w);
        pthread_mutex_lock(&w->mu);
        begin_stop(w);
        if (!th.leaser_up) w->leaser_done = true;
        pthread_cond_broadcast(&w->cv_run);
        pthread_mutex_unlock(&w->mu);
        if (!th.reporter_up) goto join;
    }
    control_loop(w);
join:
    if (th.leaser_up) pthread_join(th.leaser, NULL);
    for (unsigned i = 0; i < th.nrunners; i++) pthread_join(th.runners[i], NULL);
    if (th.reporter_up) pthread_join(th.reporter, NULL);
    if (rc == 0 && w->fatal) rc = w->fatal; /* its message is in w->err */
out:
    free(th.runners);
    free(th.args);
    if (w->slot_fds)
        for (unsigned i = 0; i < w->concurrency; i++)
            if (w->slot_fds[i] >= 0) close(w->slot_fds[i]);
    /* the array stays (tasks never outlive the run; free() releases it) */
    return rc;
}

/* ---- status --------------------------------------------------------------------------------- */

int tenq_worker_status(tenq_worker *w, char **text)
{
    *text = NULL;
    if (!w) return TENQ_EINVALID;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return TENQ_ENOMEM;
    pthread_mutex_lock(&w->mu);
    int64_t now = tq_mono_ms();
    size_t n = 0;
    for (tenq_task *t = w->hand; t; t = t->next) n++;
    fprintf(f, "%zu job(s) in hand%s\n", n, w->stopping ? " (stopping)" : "");
    for (tenq_task *t = w->hand; t; t = t->next) {
        static const char *const st[] = {"queued", "running", "reporting"};
        int64_t age = now - t->got_ms;
        int64_t ran = t->state == TK_QUEUED    ? 0
                      : t->state == TK_RUNNING ? now - t->began_ms
                                               : t->ended_ms - t->began_ms;
        fprintf(f,
                "job %llu  tenant=%s queue=%s type=%s key=%s attempt=%u state=%s age=%lld.%03llds "
                "ran=%lld.%03llds%s\n",
                (unsigned long long)t->job.id, t->job.tenant ? t->job.tenant : "-",
                t->job.queue ? t->job.queue : "-", t->job.type ? t->job.type : "-",
                t->job.key ? t->job.key : "-", t->job.attempt, st[t->state],
                (long long)(age / 1000), (long long)(age % 1000), (long long)(ran / 1000),
                (long long)(ran % 1000),
                atomic_load(&t->stop) == TENQ_STOP_CANCELLED ? " (cancelled)"
                : t->lost                                    ? " (lease lost)"
                                                             : "");
    }
    pthread_mutex_unlock(&w->mu);
    if (fclose(f) != 0) {
        free(buf);
        return TENQ_ENOMEM;
    }
    *text = buf;
    return 0;
}

void tenq_worker_counts_get(tenq_worker *w, tenq_worker_counts *out)
{
    memset(out, 0, sizeof(*out));
    if (!w) return;
    pthread_mutex_lock(&w->mu);
    *out = w->counts;
    out->running = w->nrunning;
    size_t n = 0;
    for (tenq_task *t = w->hand; t; t = t->next) n++;
    out->in_hand = n;
    pthread_mutex_unlock(&w->mu);
}
