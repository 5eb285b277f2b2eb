/* tenq serve: the loop, routing, "answer after commit", long polls, time. */
#include "internal.h"

#include "base/clock.h"
#include "base/hash.h"
#include "base/sha256.h"

#include <errno.h>
#include <event2/event.h>
#include <signal.h>
#include <stdarg.h>
#include <time.h>
#include <unistd.h>

/* ---- time ------------------------------------------------------------------
 * The engine's clock is the wall clock at start-up advanced by the monotonic
 * clock: a jump of the wall clock neither fires scheduled work early nor
 * expires leases early. */

int64_t srv_now(server *s)
{
    return s->wall0_ms + (tq_mono_ns() - s->mono0_ns) / 1000000;
}

/* ---- routes -------------------------------------------------------------------- */

static const route routes[] = {
    {"POST", "/v1/jobs", h_submit, ROLE_ADMIN | ROLE_TENANT},
    {"GET", "/v1/jobs", h_list_jobs, ROLE_ADMIN | ROLE_TENANT},
    {"GET", "/v1/jobs/{}", h_get_job, ROLES_ALL},
    {"GET", "/v1/jobs/{}/wait", h_wait_job, ROLE_ADMIN | ROLE_TENANT},
    {"POST", "/v1/jobs/{}/cancel", h_cancel, ROLE_ADMIN | ROLE_TENANT},
    {"POST", "/v1/lease", h_lease, ROLE_ADMIN | ROLE_WORKER},
    {"POST", "/v1/jobs/{}/start", h_start, ROLE_ADMIN | ROLE_WORKER},
    {"POST", "/v1/jobs/{}/heartbeat", h_heartbeat, ROLE_ADMIN | ROLE_WORKER},
    {"POST", "/v1/jobs/{}/ack", h_ack, ROLE_ADMIN | ROLE_WORKER},
    {"POST", "/v1/jobs/{}/fail", h_fail, ROLE_ADMIN | ROLE_WORKER},
    {"POST", "/v1/outcomes", h_outcomes, ROLE_ADMIN | ROLE_WORKER},
    {"GET", "/v1/tenants", h_tenants, ROLE_ADMIN | ROLE_TENANT},
    {"GET", "/v1/tenants/{}", h_tenant_get, ROLE_ADMIN | ROLE_TENANT},
    {"PUT", "/v1/tenants/{}", h_tenant_put, ROLE_ADMIN},
    {"GET", "/v1/queues", h_queues, ROLES_ALL},
    {"GET", "/v1/queues/{}", h_queue_get, ROLES_ALL},
    {"PUT", "/v1/queues/{}", h_queue_put, ROLE_ADMIN},
    {"GET", "/v1/morgue", h_morgue, ROLE_ADMIN | ROLE_TENANT},
    {"POST", "/v1/morgue/requeue", h_morgue_requeue_where, ROLE_ADMIN | ROLE_TENANT},
    {"POST", "/v1/morgue/delete", h_morgue_delete_where, ROLE_ADMIN | ROLE_TENANT},
    {"POST", "/v1/morgue/{}/requeue", h_morgue_requeue, ROLE_ADMIN | ROLE_TENANT},
    {"DELETE", "/v1/morgue/{}", h_morgue_delete, ROLE_ADMIN | ROLE_TENANT},
    {"GET", "/v1/tokens", h_tokens, ROLE_ADMIN},
    {"POST", "/v1/tokens", h_token_create, ROLE_ADMIN},
    {"DELETE", "/v1/tokens/{}", h_token_revoke, ROLE_ADMIN},
    {"GET", "/v1/stats", h_stats, ROLES_ALL},
    {"GET", "/v1/lanes", h_lanes, ROLE_ADMIN | ROLE_TENANT},
    {"GET", "/v1/whoami", h_whoami, ROLES_ALL},
    {"GET", "/metrics", h_metrics, ROLE_ADMIN},
    {"GET", "/healthz", h_healthz, 0},
    {"GET", "/readyz", h_readyz, 0},
    {"GET", "/", h_dashboard, 0},
    {"GET", "/ui/{}", h_dashboard, 0},
};

#define NROUTES  (sizeof(routes) / sizeof(routes[0]))
#define MAX_ARGS 4

/* Matches a path against a pattern; fills args with the {} segments
 * (pointers into buf).  The path is walked in place (one that does not fit
 * buf as cut to it) and copied only when it matches: every route is tried
 * in turn. */
static bool match(const char *pattern, const char *path, char *buf, size_t blen, const char **args)
{
    size_t n = strnlen(path, blen - 1), at[MAX_ARGS], alen[MAX_ARGS];
    const char *p = path, *e = path + n, *t = pattern;
    int na = 0;
    while (*t && p < e) {
        if (t[0] == '{' && t[1] == '}') {
            const char *end = memchr(p, '/', (size_t)(e - p));
            size_t len = end ? (size_t)(end - p) : (size_t)(e - p);
            if (len == 0 || na >= MAX_ARGS) return false;
            at[na] = (size_t)(p - path);
            alen[na++] = len;
            t += 2;
            p += len;
            if (p < e) { /* at a '/' */
                if (*t != '/') return false;
                p++;
                t++;
            }
            continue;
        }
        if (*t++ != *p++) return false;
    }
    if (*t || p < e) return false;
    memcpy(buf, path, n);
    buf[n] = 0;
    for (int i = 0; i < na; i++) {
        buf[at[i] + alen[i]] = 0; /* the '/' after it, or the end */
        args[i] = buf + at[i];
    }
    return true;
}

/* ---- replies --------------------------------------------------------------------- */

void reply_json(http_req *req, int status, jbuf *b)
{
    size_t len;
    char *body = jb_take(b, &len);
    http_reply(req, status, "application/json", NULL, body, len);
    free(body);
}

static void error_body(jbuf *b, int err, const char *field, const char *msg)
{
    jb_obj(b);
    jb_key(b, "error");
    jb_obj(b);
    jb_kstr(b, "code", tenq_err_word(err));
    jb_kstr(b, "message", msg);
    if (field) jb_kstr(b, "field", field);
    jb_obj_end(b);
    jb_obj_end(b);
}

void reply_error(http_req *req, int err, const char *field, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    jbuf b;
    jb_init(&b);
    error_body(&b, err, field, msg);
    reply_json(req, tenq_err_http_status(err), &b);
}

void reply_engine_err(http_req *req, const engine_err *err)
{
    reply_error(req, err->code, err->field, "%s", err->message);
}

/* ---- answering after commit ---------------------------------------------------------- */

static void pending_abort(http_req *req)
{
    pending *p = req->user;
    p->req = NULL;
}

static pending *pending_new(http_req *req, int status, jbuf *b)
{
    pending *p = xcalloc(1, sizeof(*p));
    p->req = req;
    p->status = status;
    p->body = jb_take(b, &p->len);
    req->user = p;
    req->on_abort = pending_abort;
    return p;
}

/* Answers a pending reply (or takes its step) and frees it. */
static void pending_finish(server *s, pending *p, int rc, const char *why)
{
    if (p->req) p->req->on_abort = NULL;
    if (p->then) {
        if (p->req) p->req->user = NULL;
        if (rc && p->req) {
            reply_error(p->req, rc, NULL, "not committed: %s", why);
            p->req = NULL;
        }
        p->then(s, p->req, p->ctx, rc);
    } else if (p->req) {
        if (rc == 0)
            http_reply(p->req, p->status, "application/json", NULL, p->body, p->len);
        else
            reply_error(p->req, rc, NULL, "not committed: %s", why);
    }
    free(p->body);
    free(p);
}

static void flush_now(server *s);
static void watch_writer(server *s);

static void schedule_flush(server *s)
{
    if (!event_pending(s->flush_ev, EV_TIMEOUT, NULL)) event_active(s->flush_ev, EV_TIMEOUT, 1);
}

/* Is a job final (for waiters)? */
static bool final_state(engine_state st)
{
    return st == ENGINE_SUCCEEDED || st == ENGINE_CANCELLED || st == ENGINE_MERGED ||
           st == ENGINE_DEAD;
}

typedef struct jw_slot {
    uint64_t id;
    job_waiter *head;
} jw_slot;

static bool jw_eq(const void *item, const void *key)
{
    return ((const jw_slot *)item)->id == *(const uint64_t *)key;
}

static htab jw_index; /* id -> waiters (the server is a singleton per process) */

static bool has_waiter(uint64_t id)
{
    return jw_index.len && htab_find(&jw_index, hash_u64(id), jw_eq, &id) != NULL;
}

/* ---- leases written late --------------------------------------------------------
 * Most jobs end within milliseconds of their lease.  Writing the lease and
 * then the end costs the store two row writes; so a lease is written only
 * lease_write_delay after it was granted, and not at all when its job ends
 * (or changes again) first: the later row carries the lease fields too.  A
 * crash inside that window loses the lease, which is safe (the job runs again
 * under a new token, see SEMANTICS.md "Durability").  At-most-once leases are
 * never deferred: they are answered only once stored.  A job becoming ready
 * (blocked -> ready when its lane moves on, scheduled -> ready when its time
 * comes) is deferred alike: recovery derives readiness from lanes and run_at,
 * so the stored "blocked" or "scheduled" loses nothing but ready_at. */

typedef struct deferred_lease {
    uint64_t id;
    int64_t at;
    struct deferred_lease *prev, *next;
} deferred_lease;

static bool dl_eq(const void *item, const void *key)
{
    return ((const deferred_lease *)item)->id == *(const uint64_t *)key;
}

static deferred_lease *dl_find(server *s, uint64_t id)
{
    return s->deferred.len ? htab_find(&s->deferred, hash_u64(id), dl_eq, &id) : NULL;
}

static void dl_drop(server *s, deferred_lease *d)
{
    htab_remove(&s->deferred, hash_u64(d->id), d);
    if (d->prev)
        d->prev->next = d->next;
    else
        s->dfirst = d->next;
    if (d->next)
        d->next->prev = d->prev;
    else
        s->dlast = d->prev;
    free(d);
}

static void arm_defer(server *s)
{
    if (!s->dfirst || event_pending(s->defer_ev, EV_TIMEOUT, NULL)) return;
    int64_t due = s->dfirst->at + s->cfg.lease_write_delay_ms - srv_now(s);
    if (due < 1) due = 1;
    struct timeval tv = {(time_t)(due / 1000), (suseconds_t)((due % 1000) * 1000)};
    event_add(s->defer_ev, &tv);
}

/* Writes the deferred leases granted before `before` (all with INT64_MAX). */
static void write_deferred(server *s, int64_t before)
{
    bool any = false;
    while (s->dfirst && s->dfirst->at < before) {
        deferred_lease *d = s->dfirst;
        engine_job *j = engine_find(s->e, d->id);
        engine_state st = j ? engine_job_state(j) : ENGINE_DEAD;
        if (st == ENGINE_READY || st == ENGINE_LEASED || st == ENGINE_RUNNING) {
            engine_job_info in;
            engine_job_get(j, &in);
            store_batch_job(s->batch, &in, 0);
            any = true;
        }
        dl_drop(s, d);
    }
    if (any) schedule_flush(s);
}

static void on_defer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    server *s = arg;
    write_deferred(s, srv_now(s) - s->cfg.lease_write_delay_ms + 1);
    arm_defer(s);
}

static void drop_all_deferred(server *s)
{
    while (s->dfirst) dl_drop(s, s->dfirst);
}

/* Changes left out of the batch: fresh leases of at-least-once queues. */
static bool defer_change(void *ctx, const engine_change *c)
{
    server *s = ctx;
    if (c->kind != ENGINE_CH_JOB) return false;
    deferred_lease *d = dl_find(s, c->id);
    engine_state st = engine_job_state(c->job);
    /* A job that became ready (its lane moved on, its time came) is deferred
     * the same way: recovery works readiness out again from lanes and run_at,
     * and most such jobs are leased and done within the delay. */
    bool lease_only = c->fields == 0 && (st == ENGINE_LEASED || st == ENGINE_READY) &&
                      s->cfg.lease_write_delay_ms > 0 && !s->stopping;
    if (lease_only && st == ENGINE_LEASED) {
        engine_queue_settings qs;
        if (engine_queue_get(s->e, 0, engine_job_queue(c->job), &qs, NULL) == 0 &&
            qs.delivery == ENGINE_AT_MOST_ONCE)
            lease_only = false;
    }
    if (!lease_only) {
        if (d) dl_drop(s, d); /* this row carries the lease fields too */
        return false;
    }
    if (!d) {
        d = xcalloc(1, sizeof(*d));
        d->id = c->id;
        d->at = srv_now(s);
        d->prev = s->dlast;
        if (s->dlast)
            s->dlast->next = d;
        else
            s->dfirst = d;
        s->dlast = d;
        htab_insert(&s->deferred, hash_u64(d->id), d);
    }
    return true;
}

/* Moves the engine's changes into the batch being built; remembers which
 * jobs finished for waiters, and which queues got work for long polls. */
static void collect(server *s, char ***wake, size_t *nwake)
{
    size_t n;
    const engine_change *c = engine_changes(s->e, &n);
    *wake = NULL;
    *nwake = 0;
    if (n == 0) return;
    for (size_t i = 0; i < n; i++) {
        if (c[i].kind == ENGINE_CH_WAKE) {
            *wake = xrealloc(*wake, (*nwake + 1) * sizeof(char *));
            (*wake)[(*nwake)++] = xstrdup(c[i].name);
        } else if (c[i].kind == ENGINE_CH_JOB && final_state(engine_job_state(c[i].job))) {
            idvec *d = &s->cur_done;
            if (d->n == d->cap) {
                d->cap = d->cap ? d->cap * 2 : 64;
                d->v = xrealloc(d->v, d->cap * sizeof(uint64_t));
            }
            d->v[d->n++] = c[i].id;
        }
    }
    store_batch_changes_except(s->batch, s->e, defer_change, s);
    engine_changes_clear(s->e);
    if (store_batch_ops(s->batch)) schedule_flush(s);
    arm_defer(s);
}

static void wake_all(server *s, char **wake, size_t nwake)
{
    for (size_t i = 0; i < nwake; i++) {
        srv_wake_leases(s, wake[i]);
        free(wake[i]);
    }
    free(wake);
}

void srv_wake_first(server *s)
{
    size_t n, k = 0;
    const engine_change *c = engine_changes(s->e, &n);
    char *names[8];
    for (size_t i = 0; i < n && k < 8; i++)
        if (c[i].kind == ENGINE_CH_WAKE) names[k++] = xstrdup(c[i].name);
    /* a lease's reply collects the changes: names are copies (queues past
     * the eighth are woken when the changes are collected, as before) */
    for (size_t i = 0; i < k; i++) {
        srv_wake_leases(s, names[i]);
        free(names[i]);
    }
}

void srv_collect(server *s)
{
    char **wake;
    size_t nwake;
    collect(s, &wake, &nwake);
    wake_all(s, wake, nwake);
}

/* Is anything uncommitted, in the batch being built or handed over? */
static bool uncommitted(const server *s)
{
    return store_batch_ops(s->batch) > 0 || s->inflight_tail;
}

/* Queues p behind the batch being built, when it has changes, or else
 * behind the last batch handed over (there is one: uncommitted).  Nothing
 * of its own to commit, a reply may still rest on batches not committed
 * yet (an idempotent replay, say). */
static void pending_queue(server *s, pending *p)
{
    if (store_batch_ops(s->batch) > 0) {
        if (s->cur_tail)
            s->cur_tail->next = p;
        else
            s->cur = p;
        s->cur_tail = p;
        schedule_flush(s); /* ops may come from the handler itself (tokens) */
        return;
    }
    inflight *f = s->inflight_tail;
    if (f->replies_tail)
        f->replies_tail->next = p;
    else
        f->replies = p;
    f->replies_tail = p;
}

void srv_commit_reply(server *s, http_req *req, int status, jbuf *b)
{
    char **wake = NULL;
    size_t nwake = 0;
    if (engine_change_count(s->e)) collect(s, &wake, &nwake);
    if (uncommitted(s))
        pending_queue(s, pending_new(req, status, b));
    else
        reply_json(req, status, b);
    wake_all(s, wake, nwake);
}

void srv_after_commit(server *s, http_req *req, commit_then then, void *ctx)
{
    char **wake = NULL;
    size_t nwake = 0;
    if (engine_change_count(s->e)) collect(s, &wake, &nwake);
    if (uncommitted(s)) {
        pending *p = xcalloc(1, sizeof(*p));
        p->req = req;
        p->then = then;
        p->ctx = ctx;
        req->user = p;
        req->on_abort = pending_abort;
        pending_queue(s, p);
    } else {
        then(s, req, ctx, 0);
    }
    wake_all(s, wake, nwake);
}

void srv_commit_reply_now(server *s, http_req *req, int status, jbuf *b)
{
    /* the reply first: it waits for nothing, and a worker may be waiting
     * for it (collecting the changes into the batch comes after) */
    reply_json(req, status, b);
    char **wake = NULL;
    size_t nwake = 0;
    if (engine_change_count(s->e)) collect(s, &wake, &nwake);
    wake_all(s, wake, nwake);
}

/* Hands the batch being built to the writer, with the replies waiting for
 * it; more: a part of a chain (srv_hand_over), which may be empty only
 * when it ends one. */
static void flush_batch(server *s, bool more)
{
    inflight *f = xcalloc(1, sizeof(*f));
    f->replies = s->cur;
    f->replies_tail = s->cur_tail;
    f->done = s->cur_done;
    s->cur = s->cur_tail = NULL;
    memset(&s->cur_done, 0, sizeof s->cur_done);
    f->term = s->term;
    f->seq = more ? store_commit_part(s->st, s->batch) : store_commit(s->st, s->batch);
    s->batch = store_batch_new();
    s->last_seq = f->seq;
    watch_writer(s);
    if (s->inflight_tail)
        s->inflight_tail->next = f;
    else
        s->inflight = f;
    s->inflight_tail = f;
}

/* The store's writer waits and commits at idle priority while the server
 * is quiet (store_opts.writer_idle): if every CPU is kept busy, by our
 * clients or other processes, it may get none.  So a few ms after a batch
 * is handed over to an idle writer, store_writer_check gives it normal
 * priority back when it has not committed and waits for a CPU. */
#define WRITER_WATCH_MS 2

static void on_writer_watch(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    server *s = arg;
    if (store_writer_check(s->st, s->last_seq)) watch_writer(s);
}

static void watch_writer(server *s)
{
    if (!s->writer_watch_ev || !store_writer_idle(s->st)) return;
    if (evtimer_pending(s->writer_watch_ev, NULL)) return;
    struct timeval tv = {0, WRITER_WATCH_MS * 1000};
    evtimer_add(s->writer_watch_ev, &tv);
}

static void flush_now(server *s)
{
    if (store_batch_ops(s->batch) > 0) flush_batch(s, false);
}

void srv_hand_over(server *s)
{
    if (!store_can_chain(s->st)) return;
    srv_collect(s);
    if (store_batch_ops(s->batch) == 0) return;
    flush_batch(s, true);
    s->chain_open = true;
}

void srv_end_chain(server *s)
{
    if (!s->chain_open) return;
    s->chain_open = false;
    flush_batch(s, false);
}

static void on_flush(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    flush_now(arg);
}

static void maybe_finish_stop(server *s);
static void start_resync(server *s);

static void on_commit(void *ctx, uint64_t seq, int rc)
{
    server *s = ctx;
    inflight *f = s->inflight;
    if (!f || f->seq != seq) {
        log_event(LOG_ERROR, "commit", "seq=%llu arrived out of order", (unsigned long long)seq);
        return;
    }
    s->inflight = f->next;
    if (!s->inflight) s->inflight_tail = NULL;
    if (rc == 0)
        s->n_commits_ok++;
    else
        s->n_commits_failed++;
    for (pending *p = f->replies, *nx; p; p = nx) {
        nx = p->next;
        pending_finish(s, p, rc, store_errmsg(s->st));
    }
    if (rc == 0)
        for (size_t i = 0; i < f->done.n; i++)
            if (has_waiter(f->done.v[i])) srv_answer_waiters(s, f->done.v[i]);
    /* a batch of an earlier term (one that failed as its engine was
     * dropped) says nothing of this one */
    bool ours = f->term == s->term && s->leading;
    free(f->done.v);
    free(f);
    if (rc == TENQ_ENOT_LEADER && ours) {
        srv_step_down(s, "a write was refused: another server leads the store");
        lead_recheck(s);
    } else if (rc != 0 && ours && !s->resyncing) {
        log_event(LOG_ERROR, "store", "commit failed: %s; reloading from the store",
                  store_errmsg(s->st));
        start_resync(s);
    }
    maybe_finish_stop(s);
}

static void on_store_event(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    store_dispatch(((server *)arg)->st);
}

/* ---- the leadership: engines installed, reloads, stepping down (lead.c) ------------- */

static void rearm_tick(server *s);
static void lease_waiter_end(server *s, lease_waiter *w);
static void jw_free(job_waiter *w);

engine_t *srv_engine_new(const api_config *cfg, uint64_t term)
{
    engine_config ec;
    engine_config_defaults(&ec);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ec.seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32) ^ term;
    ec.tenant_defaults.slots =
        cfg->default_slots < 0 ? ENGINE_UNLIMITED : (uint32_t)cfg->default_slots;
    ec.tenant_defaults.weight = (uint32_t)(cfg->default_weight ? cfg->default_weight : 1);
    ec.strict_tenants = cfg->strict_tenants;
    ec.token_floor = term << 32; /* above every token of every earlier term */
    return engine_create(&ec);
}

/* What was not handed over yet rests on a state being dropped: its replies
 * get rc, and the leases waiting to be written go (they point into it). */
static void drop_uncommitted(server *s, int rc, const char *why)
{
    drop_all_deferred(s);
    for (pending *p = s->cur, *nx; p; p = nx) {
        nx = p->next;
        pending_finish(s, p, rc, why);
    }
    s->cur = s->cur_tail = NULL;
    s->cur_done.n = 0;
    store_batch_free(s->batch);
    s->batch = store_batch_new();
}

/* A commit failed: writes are refused (503) and reads go on from the engine
 * as it was.  Once every batch built on the lost changes has reported, the
 * leadership thread counts a new term and loads a new engine (srv_install). */
static void start_resync(server *s)
{
    s->resyncing = true;
    drop_uncommitted(s, TENQ_EUNAVAILABLE, "the store failed; reloading");
    event_active(s->resync_ev, EV_TIMEOUT, 1);
}

static void on_resync(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    server *s = arg;
    if (s->inflight) {
        /* wait until every batch built on the lost changes has reported */
        struct timeval tv = {0, 20000};
        event_add(s->resync_ev, &tv);
        return;
    }
    if (s->resyncing && s->leading) lead_reload(s);
}

void srv_detach(server *s, const char *why)
{
    log_event(LOG_WARN, "leader", "writes stop until the leadership is certain again: %s", why);
    store_fail_pending(s->st, TENQ_ENOT_LEADER);
    s->resyncing = true;
    drop_uncommitted(s, TENQ_ENOT_LEADER, "this server's leadership is not certain");
}

/* Answers every job waiter: this server no longer has the jobs. */
static void end_job_waiters(server *s)
{
    job_waiter **all = NULL;
    size_t n = 0;
    for (size_t i = 0; i < htab_cap(&jw_index); i++) {
        jw_slot *slot = jw_index.slots[i].item;
        for (job_waiter *w = slot ? slot->head : NULL; w; w = w->next) {
            all = xrealloc(all, (n + 1) * sizeof(*all));
            all[n++] = w;
        }
    }
    for (size_t i = 0; i < n; i++) {
        http_req *req = all[i]->req;
        req->on_abort = NULL;
        jw_free(all[i]);
        srv_not_leader(s, req);
    }
    free(all);
}

void srv_step_down(server *s, const char *why)
{
    log_event(LOG_WARN, "leader", "standby now: %s", why);
    store_fail_pending(s->st, TENQ_ENOT_LEADER);
    store_use_term(s->st, 0);
    s->leading = false;
    s->resyncing = false;
    drop_uncommitted(s, TENQ_ENOT_LEADER, "this server no longer leads the store");
    while (s->lwait) lease_waiter_end(s, s->lwait);
    end_job_waiters(s);
    engine_destroy(s->e);
    s->e = srv_engine_new(&s->cfg, 0); /* a standby's: empty, never written */
    s->term = 0;
    rearm_tick(s);
}

void srv_install(server *s, engine_t *e, uint64_t term, const store_load_stats *st,
                 const store_token *tokens, size_t ntokens)
{
    engine_destroy(s->e);
    s->e = e;
    s->term = term;
    store_use_term(s->st, term);
    store_clear_failure(s->st);
    store_batch_free(s->batch);
    s->batch = store_batch_new();
    s->leading = true;
    s->resyncing = false;
    srv_merge_tokens(s, tokens, ntokens);
    s->admin_token_refused = srv_ensure_admin_token(s) != 0;
    log_event(LOG_INFO, "leader",
              "serving as the leader, term %llu: loaded jobs=%zu tenants=%zu "
              "queues=%zu seconds=%.2f",
              (unsigned long long)term, st->jobs, st->tenants, st->queues, st->seconds);
    /* leases waiting may find work in the new state */
    for (lease_waiter *w = s->lwait; w; w = w->next)
        for (size_t i = 0; i < w->nqueues; i++) srv_wake_leases(s, w->queues[i]);
    rearm_tick(s);
}

bool srv_serving(server *s)
{
    return s->leading && !s->resyncing && lead_valid(s);
}

void srv_not_leader(server *s, http_req *req)
{
    char url[256];
    if (lead_leader(s, url, sizeof url)) {
        char hdrs[1200], body[600];
        snprintf(hdrs, sizeof hdrs, "Location: %s%s%s%s\r\nTenq-Leader: %s\r\n", url, req->path,
                 *req->query ? "?" : "", req->query, url);
        int n = snprintf(body, sizeof body,
                         "{\"error\":{\"code\":\"not_leader\",\"message\":\"this server is a "
                         "standby; the leader is %s\",\"leader\":\"%s\"}}",
                         url, url);
        http_reply(req, 307, "application/json", hdrs, body, (size_t)n);
        return;
    }
    static const char body[] = "{\"error\":{\"code\":\"not_leader\",\"message\":\"this server "
                               "does not lead the store, and no leader is known yet: try "
                               "again\"}}";
    http_reply(req, 503, "application/json", "Retry-After: 1\r\n", body, sizeof body - 1);
}

/* ---- ticks --------------------------------------------------------------------------- */

static void rearm_tick(server *s)
{
    int64_t next = engine_next_timer(s->e);
    if (next == INT64_MAX) {
        if (s->tick_at) event_del(s->tick_ev);
        s->tick_at = 0;
        return;
    }
    if (s->tick_at && s->tick_at <= next && event_pending(s->tick_ev, EV_TIMEOUT, NULL)) return;
    int64_t delay = next - srv_now(s);
    if (delay < 0) delay = 0;
    struct timeval tv = {(time_t)(delay / 1000), (suseconds_t)((delay % 1000) * 1000)};
    event_add(s->tick_ev, &tv);
    s->tick_at = next;
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    server *s = arg;
    s->tick_at = 0;
    if (srv_serving(s)) {
        engine_tick(s->e, srv_now(s));
        srv_collect(s);
    }
    rearm_tick(s);
}

/* ---- lease long polls ------------------------------------------------------------------ */

static void lease_waiter_free(server *s, lease_waiter *w)
{
    if (w->prev)
        w->prev->next = w->next;
    else
        s->lwait = w->next;
    if (w->next) w->next->prev = w->prev;
    s->n_lwait--;
    event_free(w->timer);
    for (size_t i = 0; i < w->nqueues; i++) free(w->queues[i]);
    for (size_t i = 0; i < w->ntypes; i++) free(w->types[i]);
    free(w->queues);
    free(w->types);
    free(w->worker);
    free(w->results);
    free(w);
}

/* Frees a waiter and answers its request: no jobs (with its results). */
static void lease_waiter_end(server *s, lease_waiter *w)
{
    http_req *req = w->req;
    req->on_abort = NULL;
    char *results = w->results;
    w->results = NULL;
    lease_waiter_free(s, w);
    reply_no_jobs(req, results);
    free(results);
}

static void lease_waiter_abort(http_req *req)
{
    lease_waiter *w = req->user;
    lease_waiter_free(w->srv, w);
}

void reply_no_jobs(http_req *req, const char *results)
{
    static const char empty[] = "{\"jobs\":[]}";
    if (!results) {
        http_reply(req, 200, "application/json", NULL, empty, sizeof empty - 1);
        return;
    }
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_key(&b, "jobs");
    jb_arr(&b);
    jb_arr_end(&b);
    jb_kraw(&b, "results", results);
    jb_obj_end(&b);
    reply_json(req, 200, &b);
}

static void on_lease_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    lease_waiter *w = arg;
    lease_waiter_end(w->srv, w);
}

void lease_waiter_add(server *s, lease_waiter *w, int64_t wait_ms)
{
    w->srv = s;
    w->timer = evtimer_new(s->base, on_lease_timeout, w);
    struct timeval tv = {(time_t)(wait_ms / 1000), (suseconds_t)((wait_ms % 1000) * 1000)};
    evtimer_add(w->timer, &tv);
    /* oldest first: append */
    w->next = NULL;
    w->prev = NULL;
    if (!s->lwait) {
        s->lwait = w;
    } else {
        lease_waiter *t = s->lwait;
        while (t->next) t = t->next;
        t->next = w;
        w->prev = t;
    }
    s->n_lwait++;
    w->req->user = w;
    w->req->on_abort = lease_waiter_abort;
}

/* One pass over the waiters of a queue, oldest first. */
static void wake_queue(server *s, const char *queue)
{
    for (lease_waiter *w = s->lwait, *nx; w; w = nx) {
        nx = w->next;
        bool wants = false;
        for (size_t i = 0; i < w->nqueues && !wants; i++) wants = !strcmp(w->queues[i], queue);
        if (!wants) continue;
        http_req *req = w->req;
        req->on_abort = NULL;
        req->write_now = true; /* a worker waits on this: see send_reply */
        if (try_lease(s, req, &w->who, w->queues, w->nqueues, w->types, w->ntypes, w->max,
                      w->worker, w->results)) {
            /* the reply now waits for the commit; the waiter is done */
            nx = w->next;
            lease_waiter_free(s, w);
            continue;
        }
        req->write_now = false;
        req->user = w;
        req->on_abort = lease_waiter_abort;
        if (!w->ntypes) break; /* nothing eligible for this queue any more */
    }
}

void srv_wake_leases(server *s, const char *queue)
{
    if (!srv_serving(s)) return;
    if (s->waking) {
        /* from inside a pass (a lease's reply collected the engine's
         * changes): a nested pass would free waiters the outer one is
         * about to visit, so it waits for the outer pass to end */
        for (size_t i = 0; i < s->n_wake_later; i++)
            if (!strcmp(s->wake_later[i], queue)) return;
        s->wake_later = xrealloc(s->wake_later, (s->n_wake_later + 1) * sizeof(char *));
        s->wake_later[s->n_wake_later++] = xstrdup(queue);
        return;
    }
    s->waking = true;
    wake_queue(s, queue);
    while (s->n_wake_later > 0) {
        char *q = s->wake_later[--s->n_wake_later];
        if (!s->resyncing) wake_queue(s, q);
        free(q);
    }
    free(s->wake_later);
    s->wake_later = NULL;
    s->waking = false;
}

/* ---- job waits -------------------------------------------------------------------------- */

static void jw_unlink(job_waiter *w)
{
    uint64_t h = hash_u64(w->id);
    jw_slot *slot = htab_find(&jw_index, h, jw_eq, &w->id);
    if (!slot) return;
    if (w->prev)
        w->prev->next = w->next;
    else
        slot->head = w->next;
    if (w->next) w->next->prev = w->prev;
    if (!slot->head) {
        htab_remove(&jw_index, h, slot);
        free(slot);
    }
}

static void jw_free(job_waiter *w)
{
    jw_unlink(w);
    event_free(w->timer);
    free(w);
}

static void jw_abort(http_req *req)
{
    jw_free(req->user);
}

static void on_wait_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    job_waiter *w = arg;
    http_req *req = w->req;
    server *s = w->srv;
    principal who = w->who;
    uint64_t id = w->id;
    req->on_abort = NULL;
    jw_free(w);
    /* the job as it stands now (h_get_job answers from memory or the store) */
    char idbuf[32];
    snprintf(idbuf, sizeof idbuf, "%llu", (unsigned long long)id);
    const char *args[1] = {idbuf};
    h_get_job(s, req, &who, args);
}

void job_waiter_add(server *s, job_waiter *w, int64_t wait_ms)
{
    w->srv = s;
    w->timer = evtimer_new(s->base, on_wait_timeout, w);
    struct timeval tv = {(time_t)(wait_ms / 1000), (suseconds_t)((wait_ms % 1000) * 1000)};
    evtimer_add(w->timer, &tv);
    uint64_t h = hash_u64(w->id);
    jw_slot *slot = htab_find(&jw_index, h, jw_eq, &w->id);
    if (!slot) {
        slot = xcalloc(1, sizeof(*slot));
        slot->id = w->id;
        htab_insert(&jw_index, h, slot);
    }
    w->prev = NULL;
    w->next = slot->head;
    if (slot->head) slot->head->prev = w;
    slot->head = w;
    w->req->user = w;
    w->req->on_abort = jw_abort;
}

/* The job's final state is committed: every waiter gets it from the store. */
static void on_final_rows(void *ctx, int rc, const store_rows *rows)
{
    read_ctx *c = ctx;
    server *s = c->srv;
    uint64_t id = c->id;
    free(c);
    char *bodies[2] = {NULL, NULL}; /* without and with the lease token */
    size_t lens[2] = {0, 0};
    for (int t = 0; t < 2 && rc == 0 && rows->n == 1; t++) {
        jbuf b;
        jb_init(&b);
        json_job(&b, &rows->jobs[0], JOB_FULL, t == 1);
        bodies[t] = jb_take(&b, &lens[t]);
    }
    jw_slot *slot;
    while ((slot = htab_find(&jw_index, hash_u64(id), jw_eq, &id)) && slot->head) {
        job_waiter *w = slot->head;
        http_req *req = w->req;
        bool visible = rc == 0 && rows->n == 1 &&
                       may_see_job(&w->who, rows->jobs[0].tenant, rows->jobs[0].queue);
        int t = shows_token(&w->who) ? 1 : 0;
        req->on_abort = NULL;
        jw_free(w);
        if (visible)
            http_reply(req, 200, "application/json", NULL, bodies[t], lens[t]);
        else
            reply_error(req, rc ? rc : TENQ_ENOT_FOUND, "id", "no job %llu",
                        (unsigned long long)id);
    }
    free(bodies[0]);
    free(bodies[1]);
    (void)s;
}

void srv_answer_waiters(server *s, uint64_t id)
{
    read_ctx *c = xcalloc(1, sizeof(*c));
    c->srv = s;
    c->id = id;
    store_get_job(s->st, id, on_final_rows, c);
}

bool srv_has_waiter(uint64_t id)
{
    return has_waiter(id);
}

/* ---- requests ----------------------------------------------------------------------------- */

static void on_request(void *ctx, http_req *req)
{
    server *s = ctx;
    s->n_requests++;
    char buf[1024];
    const char *args[MAX_ARGS] = {0};
    const route *rt = NULL;
    bool path_known = false;
    /* HEAD is GET without the body (http.c drops it) */
    const char *method = strcmp(req->method, "HEAD") == 0 ? "GET" : req->method;
    for (size_t i = 0; i < NROUTES; i++) {
        if (!match(routes[i].pattern, req->path, buf, sizeof buf, args)) continue;
        path_known = true;
        if (strcmp(routes[i].method, method) == 0) {
            rt = &routes[i];
            break;
        }
    }
    if (!rt) {
        s->n_errors++;
        if (path_known) {
            char body[512];
            int n = snprintf(body, sizeof body,
                             "{\"error\":{\"code\":\"invalid\",\"message\":\"%.32s is not "
                             "allowed on this path\"}}",
                             req->method);
            http_reply(req, 405, "application/json", NULL, body, (size_t)n);
        } else
            reply_error(req, TENQ_ENOT_FOUND, NULL, "no such endpoint: %s %s", req->method,
                        req->path);
        return;
    }
    /* A standby has no jobs: the leader answers (every route but health,
     * readiness and metrics, which are this server's own). */
    if (!s->leading && rt->fn != h_healthz && rt->fn != h_readyz && rt->fn != h_metrics) {
        srv_not_leader(s, req);
        return;
    }
    principal who = {ROLE_ADMIN, NULL};
    /* Tokens are required once any exists, and always off loopback (revoking
     * the last token must not open the server to the network). */
    if (rt->roles && (s->auth.by_hash.len > 0 || s->open_network)) {
        const char *h = http_header_get(req, "authorization");
        if (!h || strncasecmp(h, "Bearer ", 7) != 0) {
            s->n_errors++;
            reply_error(req, TENQ_EUNAUTHENTICATED, NULL,
                        "this server needs a token: Authorization: Bearer <token>");
            return;
        }
        const token *t = auth_find_secret(&s->auth, h + 7);
        if (!t) {
            s->n_errors++;
            reply_error(req, TENQ_EUNAUTHENTICATED, NULL, "unknown or revoked token");
            return;
        }
        who.role = t->role;
        who.tok = t;
        if (!(rt->roles & t->role)) {
            s->n_errors++;
            reply_error(req, TENQ_EFORBIDDEN, NULL, "a %s token may not do this",
                        t->role == ROLE_TENANT   ? "tenant"
                        : t->role == ROLE_WORKER ? "worker"
                                                 : "admin");
            return;
        }
    }
    bool mutating = strcmp(method, "GET") != 0;
    if (mutating && (s->stopping || !srv_serving(s))) {
        if (s->stopping || s->resyncing)
            reply_error(req, TENQ_EUNAVAILABLE, NULL,
                        s->stopping ? "the server is stopping" : "the store failed; reloading");
        else
            reply_error(req, TENQ_ENOT_LEADER, NULL,
                        "this server's leadership is not certain now; try again");
        return;
    }
    rt->fn(s, req, &who, args);
    rearm_tick(s);
}

/* ---- stopping ---------------------------------------------------------------------------------
 */

static void maybe_finish_stop(server *s)
{
    if (!s->stopping) return;
    if (s->inflight || s->cur || store_batch_ops(s->batch) > 0) return;
    event_base_loopexit(s->base, NULL);
}

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
    /* long polls answer now */
    while (s->lwait) lease_waiter_end(s, s->lwait);
    write_deferred(s, INT64_MAX); /* a clean stop keeps every lease */
    flush_now(s);
    maybe_finish_stop(s);
}

/* ---- start-up -----------------------------------------------------------------------------------
 */

void srv_merge_tokens(server *s, const store_token *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        token *t = NULL;
        for (size_t k = 0; k < s->auth.n && !t; k++)
            if (s->auth.all[k]->id == v[i].id) t = s->auth.all[k];
        if (!t) t = auth_add(&s->auth, v[i].id, v[i].hash, v[i].role, v[i].queues, v[i].created_at);
        if (t && v[i].revoked_at) auth_revoke(&s->auth, t);
    }
}

static bool loopback(const char *host)
{
    return !strcmp(host, "127.0.0.1") || !strcmp(host, "::1") || !strncmp(host, "127.", 4) ||
           !strcmp(host, "localhost");
}

int srv_ensure_admin_token(server *s)
{
    const char *secret = s->cfg.admin_token;
    if (!*secret) return 0;
    token *t = auth_find_secret(&s->auth, secret);
    if (t && t->role != ROLE_ADMIN) {
        log_event(LOG_ERROR, "auth", "TENQ_ADMIN_TOKEN is already a %s token",
                  t->role == ROLE_TENANT ? "tenant" : "worker");
        return -1;
    }
    if (t && t->id > 0) return 0;
    char hex[65];
    sha256_hex(secret, strlen(secret), hex);
    if (!s->leading) {
        /* a standby knows it (its own endpoints) but cannot store it: the
         * leader it becomes stores it (id 0 until then) */
        if (!t) auth_add(&s->auth, 0, hex, "admin", NULL, srv_now(s));
        return 0;
    }
    store_token st = {s->auth.next_id, hex, "admin", NULL, srv_now(s), 0};
    store_batch_token(s->batch, &st);
    schedule_flush(s);
    if (t) {
        t->id = st.id;
        s->auth.next_id = st.id + 1;
    } else {
        auth_add(&s->auth, st.id, hex, "admin", NULL, st.created_at);
    }
    log_event(LOG_INFO, "auth", "created the admin token from TENQ_ADMIN_TOKEN (id %lld)",
              (long long)st.id);
    return 0;
}

int api_serve(const api_config *cfg)
{
    signal(SIGPIPE, SIG_IGN);
    log_setup(cfg->log_format, cfg->log_level);
    server *s = xcalloc(1, sizeof(*s));
    s->cfg = *cfg;
    int rc = 1;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    s->wall0_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    s->mono0_ns = tq_mono_ns();
    auth_init(&s->auth);

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
    /* this start's name in the store (lead.c makes it; the store's
     * connections carry it from the first) */
    char node[24];
    lead_node_name(node, sizeof node);
    store_opts so = {0};
    so.sync = !strcmp(cfg->sqlite_sync, "normal") ? STORE_SYNC_NORMAL : STORE_SYNC_FULL;
    /* a fault-injection seam for crash tests; not a setting */
    const char *delay = getenv("TENQ_TEST_COMMIT_DELAY_MS");
    if (delay) so.test_commit_delay_ms = atoi(delay);
    so.writer_idle = strcmp(cfg->writer_priority, "normal") != 0;
    so.elect = true;
    so.node = node;
    char err[512];
    if (store_open(cfg->store, &so, &s->st, err, sizeof err) != 0) {
        log_event(LOG_ERROR, "store", "%s", err);
        goto out;
    }
    log_event(LOG_INFO, "store", "backend=%s at=%s sync=%s writer=%s", store_backend(s->st),
              store_where(s->st),
              strcmp(store_backend(s->st), "sqlite") ? "commit" : cfg->sqlite_sync,
              store_writer_may_idle(s->st) ? "idle-when-quiet"
              : so.writer_idle ? "normal (idle priority needs CAP_SYS_NICE or RLIMIT_NICE 20)"
                               : "normal");
    s->e = srv_engine_new(&s->cfg, 0); /* until this server leads */
    s->batch = store_batch_new();

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
    s->http = http_server_new(s->base, &lim, on_request, s);
    s->port = http_server_listen(s->http, host, port, err, sizeof err);
    if (s->port < 0) {
        log_event(LOG_ERROR, "listen", "%s", err);
        goto out;
    }
    s->flush_ev = event_new(s->base, -1, 0, on_flush, s);
    s->writer_watch_ev = evtimer_new(s->base, on_writer_watch, s);
    s->tick_ev = evtimer_new(s->base, on_tick, s);
    s->resync_ev = evtimer_new(s->base, on_resync, s);
    s->defer_ev = evtimer_new(s->base, on_defer, s);
    s->store_ev =
        event_new(s->base, store_event_fd(s->st), EV_READ | EV_PERSIST, on_store_event, s);
    s->sig_term = evsignal_new(s->base, SIGTERM, on_signal, s);
    s->sig_int = evsignal_new(s->base, SIGINT, on_signal, s);
    if (!s->flush_ev || !s->writer_watch_ev || !s->tick_ev || !s->resync_ev || !s->defer_ev ||
        !s->store_ev || !s->sig_term || !s->sig_int || event_add(s->store_ev, NULL) != 0 ||
        evsignal_add(s->sig_term, NULL) != 0 || evsignal_add(s->sig_int, NULL) != 0) {
        log_event(LOG_ERROR, "listen", "cannot set up the event loop's events");
        goto out;
    }
    store_on_commit(s->st, on_commit, s);
    /* Leads, or stands by: loads the jobs and tokens when it leads. */
    if (lead_start(s, node, host) != 0) goto out;
    s->open_network = !loopback(host) && !cfg->allow_open_network;
    if (s->auth.by_hash.len == 0 && s->open_network) {
        log_event(LOG_ERROR, "auth",
                  "refusing to listen on %s with no tokens: anyone could do anything. Set "
                  "TENQ_ADMIN_TOKEN=<secret> (or create one with `tenq token create --role admin` "
                  "against a loopback server), or listen on 127.0.0.1",
                  host);
        goto out;
    }
    extern void api_rates_start(server * s);
    api_rates_start(s);
    rearm_tick(s);
    log_event(LOG_INFO, "listen", "listening on %s:%d (auth: %s)", host, s->port,
              s->auth.by_hash.len ? "tokens" : "none, loopback only");
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
out:
    /* every commit is in: a leader gives the leadership up now, so that a
     * standby takes over at once */
    lead_stop(s, rc == 0);
    if (rc == 0) log_event(LOG_INFO, "stop", "stopped");
    if (s->http) http_server_free(s->http);
    while (s->lwait) lease_waiter_free(s, s->lwait);
    if (s->st) store_close(s->st);
    engine_destroy(s->e);
    store_batch_free(s->batch);
    rates_free(s);
    auth_free(&s->auth);
    if (s->flush_ev) event_free(s->flush_ev);
    if (s->writer_watch_ev) event_free(s->writer_watch_ev);
    if (s->tick_ev) event_free(s->tick_ev);
    if (s->resync_ev) event_free(s->resync_ev);
    if (s->defer_ev) event_free(s->defer_ev);
    drop_all_deferred(s);
    htab_free(&s->deferred);
    if (s->store_ev) event_free(s->store_ev);
    if (s->sample_ev) event_free(s->sample_ev);
    if (s->sig_term) event_free(s->sig_term);
    if (s->sig_int) event_free(s->sig_int);
    for (size_t i = 0; i < htab_cap(&jw_index); i++) free(jw_index.slots[i].item);
    htab_free(&jw_index);
    if (s->base) event_base_free(s->base);
    free(s);
    return rc;
}
