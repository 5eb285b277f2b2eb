// SPDX-License-Identifier: Apache-2.0
/* Answering after commit: the batch being built from the engine's changes,
 * handed to the store's writer (flush), and the replies that wait for its
 * commit; leases and readiness written late (a lease is stored only
 * --lease-write-delay after it is granted, unless its job changes first);
 * what a failed commit does (writes refused, the engine reloaded under a new
 * term: lead.c).  See docs/ARCHITECTURE.md, "The commit pipeline".
 *
 * Below the waiters and the leadership's loop side: it reaches them through
 * the hooks server.c registers (commit_hooks). */
#include "commit.h"

#include "api.h"
#include "audit.h"
#include "clock.h"
#include "lead.h"
#include "reply.h"
#include "server.h"

#include "base/hash.h"
#include "base/xalloc.h"

#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

/* ---- answering after commit ---------------------------------------------------------- */

static pending *pending_new(http_req *req, int status, jbuf *b)
{
    pending *p = xcalloc(1, sizeof(*p));
    p->status = status;
    p->body = jb_take(b, &p->len);
    read_ctx_hold(&p->held, req);
    return p;
}

/* Answers a pending reply (or takes its step) and frees it. */
static void pending_finish(server *s, pending *p, int rc, const char *why)
{
    http_req *req = read_ctx_take(&p->held);
    if (p->then) {
        if (rc && req) {
            reply_error(req, rc, NULL, "not committed: %s", why);
            req = NULL;
        }
        p->then(s, req, p->ctx, rc);
    } else if (req) {
        if (rc == 0)
            http_reply(req, p->status, "application/json", NULL, p->body, p->len);
        else
            reply_error(req, rc, NULL, "not committed: %s", why);
    }
    free(p->body);
    free(p);
}

void srv_schedule_flush(server *s)
{
    if (!event_pending(s->commit.flush_ev, EV_TIMEOUT, NULL))
        event_active(s->commit.flush_ev, EV_TIMEOUT, 1);
}

/* Is a job final (for waiters)? */
static bool final_state(engine_state st)
{
    return engine_state_finished(st) || st == ENGINE_DEAD;
}

/* ---- rows written late (leases and readiness)
 * -------------------------------------------------------- Most jobs end within milliseconds of
 * their lease.  Writing the lease and then the end costs the store two row writes; so a lease is
 * written only lease_write_delay after it was granted, and not at all when its job ends (or changes
 * again) first: the later row carries the lease fields too.  A crash inside that window loses the
 * lease, which is safe (the job runs again under a new token, see SEMANTICS.md "Durability").
 * At-most-once leases are never deferred: they are answered only once stored.  A job becoming ready
 * (blocked -> ready when its lane moves on, scheduled -> ready when its time
 * comes) is deferred alike: recovery derives readiness from lanes and run_at,
 * so the stored "blocked" or "scheduled" loses nothing but ready_at. */

typedef struct late_row {
    uint64_t id;
    int64_t at;
    struct late_row *prev, *next;
} late_row;

static bool late_row_eq(const void *item, const void *key)
{
    return ((const late_row *)item)->id == *(const uint64_t *)key;
}

static late_row *late_row_find(server *s, uint64_t id)
{
    return s->commit.late_rows.len ? htab_find(&s->commit.late_rows, hash_u64(id), late_row_eq, &id)
                                   : NULL;
}

static void late_row_drop(server *s, late_row *d)
{
    htab_remove(&s->commit.late_rows, hash_u64(d->id), d);
    if (d->prev)
        d->prev->next = d->next;
    else
        s->commit.late_first = d->next;
    if (d->next)
        d->next->prev = d->prev;
    else
        s->commit.late_last = d->prev;
    free(d);
}

static void arm_late_rows(server *s)
{
    if (!s->commit.late_first || event_pending(s->commit.late_ev, EV_TIMEOUT, NULL)) return;
    int64_t due = s->commit.late_first->at + s->cfg.lease_write_delay_ms - srv_now(s);
    if (due < 1) due = 1;
    struct timeval tv = {(time_t)(due / 1000), (suseconds_t)((due % 1000) * 1000)};
    event_add(s->commit.late_ev, &tv);
}

/* Writes the late rows noted before `before` (all with INT64_MAX). */
void srv_write_late_rows(server *s, int64_t before)
{
    bool any = false;
    while (s->commit.late_first && s->commit.late_first->at < before) {
        late_row *d = s->commit.late_first;
        engine_job *j = engine_find(s->e, d->id);
        engine_state st = j ? engine_job_state(j) : ENGINE_DEAD;
        if (st == ENGINE_READY || st == ENGINE_LEASED || st == ENGINE_RUNNING) {
            engine_job_info in;
            engine_job_get(j, &in);
            store_batch_job(s->commit.batch, &in, 0);
            any = true;
        }
        late_row_drop(s, d);
    }
    if (any) srv_schedule_flush(s);
}

static void on_late_rows(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    server *s = arg;
    srv_write_late_rows(s, srv_now(s) - s->cfg.lease_write_delay_ms + 1);
    arm_late_rows(s);
}

void srv_drop_late_rows(server *s)
{
    while (s->commit.late_first) late_row_drop(s, s->commit.late_first);
}

/* Changes left out of the batch: fresh leases of at-least-once queues. */
static bool write_late(void *ctx, const engine_change *c)
{
    server *s = ctx;
    if (c->kind != ENGINE_CH_JOB) return false;
    late_row *d = late_row_find(s, c->id);
    engine_state st = engine_job_state(c->job);
    /* A job that became ready (its lane moved on, its time came) is deferred
     * the same way: recovery works readiness out again from lanes and run_at,
     * and most such jobs are leased and done within the delay. */
    bool lease_only = c->fields == 0 && (st == ENGINE_LEASED || st == ENGINE_READY) &&
                      s->cfg.lease_write_delay_ms > 0 && !s->stopping;
    if (lease_only && st == ENGINE_LEASED) {
        engine_queue_settings qs;
        if (engine_queue_get(s->e, 0, engine_job_queue(c->job), &qs, NULL) == 0 &&
            qs.delivery != ENGINE_AT_LEAST_ONCE)
            lease_only = false;
    }
    if (!lease_only) {
        if (d) late_row_drop(s, d); /* this row carries the lease fields too */
        return false;
    }
    if (!d) {
        d = xcalloc(1, sizeof(*d));
        d->id = c->id;
        d->at = srv_now(s);
        d->prev = s->commit.late_last;
        if (s->commit.late_last)
            s->commit.late_last->next = d;
        else
            s->commit.late_first = d;
        s->commit.late_last = d;
        htab_insert(&s->commit.late_rows, hash_u64(d->id), d);
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
            idvec *d = &s->commit.cur_done;
            if (d->n == d->cap) {
                d->cap = d->cap ? d->cap * 2 : 64;
                d->v = xrealloc(d->v, d->cap * sizeof(uint64_t));
            }
            d->v[d->n++] = c[i].id;
        }
    }
    store_batch_changes_except(s->commit.batch, s->e, write_late, s);
    engine_changes_clear(s->e);
    if (store_batch_ops(s->commit.batch)) srv_schedule_flush(s);
    arm_late_rows(s);
}

static void wake_all(server *s, char **wake, size_t nwake)
{
    for (size_t i = 0; i < nwake; i++) {
        s->commit.hooks.wake(s, wake[i]);
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
        s->commit.hooks.wake(s, names[i]);
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
    return store_batch_ops(s->commit.batch) > 0 || s->commit.inflight_tail;
}

/* Queues p behind the batch being built, when it has changes, or else
 * behind the last batch handed over (there is one: uncommitted).  Nothing
 * of its own to commit, a reply may still rest on batches not committed
 * yet (an idempotent replay, say). */
static void pending_queue(server *s, pending *p)
{
    if (store_batch_ops(s->commit.batch) > 0) {
        if (s->commit.cur_tail)
            s->commit.cur_tail->next = p;
        else
            s->commit.cur = p;
        s->commit.cur_tail = p;
        srv_schedule_flush(s); /* ops may come from the handler itself (tokens) */
        return;
    }
    inflight *f = s->commit.inflight_tail;
    if (f->replies_tail)
        f->replies_tail->next = p;
    else
        f->replies = p;
    f->replies_tail = p;
}

/* A change the audit log records: its row in the change's commit. */
static void audit_note(server *s, http_req *req, int status)
{
    if (srv_audit_note(s, req, status, s->commit.batch)) srv_schedule_flush(s);
}

void srv_commit_reply(server *s, http_req *req, int status, jbuf *b)
{
    audit_note(s, req, status);
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
        p->then = then;
        p->ctx = ctx;
        if (req) read_ctx_hold(&p->held, req); /* NULL: a step of the server's own (ingest.c) */
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
    audit_note(s, req, status);
    reply_json(req, status, b);
    char **wake = NULL;
    size_t nwake = 0;
    if (engine_change_count(s->e)) collect(s, &wake, &nwake);
    wake_all(s, wake, nwake);
}

/* The store's writer waits and commits at idle priority while the server
 * is quiet (store_opts.writer_idle): if every CPU is kept busy, by our
 * clients or other processes, it may get none.  So a few ms after a batch
 * is handed over to an idle writer, store_writer_check gives it normal
 * priority back when it has not committed and waits for a CPU. */
#define WRITER_WATCH_MS 2

static void watch_writer(server *s);

static void on_writer_watch(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    server *s = arg;
    if (store_writer_check(s->st, s->commit.last_seq)) watch_writer(s);
}

static void watch_writer(server *s)
{
    if (!s->commit.writer_watch_ev || !store_writer_idle(s->st)) return;
    if (evtimer_pending(s->commit.writer_watch_ev, NULL)) return;
    struct timeval tv = {0, WRITER_WATCH_MS * 1000};
    evtimer_add(s->commit.writer_watch_ev, &tv);
}

/* Hands the batch being built to the writer, with the replies waiting for
 * it; more: a part of a chain (srv_hand_over), which may be empty only
 * when it ends one. */
static void flush_batch(server *s, bool more)
{
    inflight *f = xcalloc(1, sizeof(*f));
    f->replies = s->commit.cur;
    f->replies_tail = s->commit.cur_tail;
    f->done = s->commit.cur_done;
    s->commit.cur = s->commit.cur_tail = NULL;
    memset(&s->commit.cur_done, 0, sizeof s->commit.cur_done);
    f->term = s->lead.term;
    f->seq =
        more ? store_commit_part(s->st, s->commit.batch) : store_commit(s->st, s->commit.batch);
    s->commit.batch = store_batch_new();
    s->commit.last_seq = f->seq;
    watch_writer(s);
    if (s->commit.inflight_tail)
        s->commit.inflight_tail->next = f;
    else
        s->commit.inflight = f;
    s->commit.inflight_tail = f;
}

void srv_flush_now(server *s)
{
    if (store_batch_ops(s->commit.batch) > 0) flush_batch(s, false);
}

void srv_hand_over(server *s)
{
    if (!store_can_chain(s->st)) return;
    srv_collect(s);
    if (store_batch_ops(s->commit.batch) == 0) return;
    flush_batch(s, true);
    s->commit.chain_open = true;
}

void srv_end_chain(server *s)
{
    if (!s->commit.chain_open) return;
    s->commit.chain_open = false;
    flush_batch(s, false);
}

static void on_flush(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    srv_flush_now(arg);
}

/* What was not handed over yet rests on a state being dropped: its replies
 * get rc, and the leases waiting to be written go (they point into it). */
void srv_drop_uncommitted(server *s, int rc, const char *why)
{
    srv_drop_late_rows(s);
    for (pending *p = s->commit.cur, *nx; p; p = nx) {
        nx = p->next;
        pending_finish(s, p, rc, why);
    }
    s->commit.cur = s->commit.cur_tail = NULL;
    s->commit.cur_done.n = 0;
    store_batch_free(s->commit.batch);
    s->commit.batch = store_batch_new();
}

/* A commit failed: writes are refused (503) and reads go on from the engine
 * as it was.  Once every batch built on the lost changes has reported, the
 * leadership thread counts a new term and loads a new engine (install_term, lead_loop.c). */
static void start_resync(server *s)
{
    s->lead.resyncing = true;
    srv_drop_uncommitted(s, TENQ_EUNAVAILABLE, "the store failed; reloading");
    event_active(s->commit.resync_ev, EV_TIMEOUT, 1);
}

void srv_reload(server *s, const char *why)
{
    if (s->lead.resyncing || !s->lead.leading) return;
    log_event(LOG_WARN, "store", "%s; reloading from the store", why);
    start_resync(s);
}

static void on_resync(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    server *s = arg;
    if (s->commit.inflight) {
        /* wait until every batch built on the lost changes has reported */
        struct timeval tv = {0, 20000};
        event_add(s->commit.resync_ev, &tv);
        return;
    }
    if (s->lead.resyncing && s->lead.leading) lead_reload(s);
}

static void on_commit(void *ctx, uint64_t seq, int rc)
{
    server *s = ctx;
    inflight *f = s->commit.inflight;
    if (!f || f->seq != seq) {
        log_event(LOG_ERROR, "commit", "seq=%llu arrived out of order", (unsigned long long)seq);
        return;
    }
    s->commit.inflight = f->next;
    if (!s->commit.inflight) s->commit.inflight_tail = NULL;
    if (rc == 0)
        s->commit.n_ok++;
    else
        s->commit.n_failed++;
    for (pending *p = f->replies, *nx; p; p = nx) {
        nx = p->next;
        pending_finish(s, p, rc, store_errmsg(s->st));
    }
    if (rc == 0 && f->done.n) s->commit.hooks.finished(s, f->done.v, f->done.n);
    /* a batch of an earlier term (one that failed as its engine was
     * dropped) says nothing of this one */
    bool ours = f->term == s->lead.term && s->lead.leading;
    free(f->done.v);
    free(f);
    if (rc == TENQ_ENOT_LEADER && ours) {
        s->commit.hooks.refused(s, "a write was refused: another server leads the store");
        lead_recheck(s);
    } else if (rc != 0 && ours && !s->lead.resyncing) {
        log_event(LOG_ERROR, "store", "commit failed: %s; reloading from the store",
                  store_errmsg(s->st));
        start_resync(s);
    }
    srv_maybe_finish_stop(s);
}

static void on_store_event(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    store_dispatch(((server *)arg)->st);
}

void srv_maybe_finish_stop(server *s)
{
    if (!s->stopping) return;
    if (s->commit.inflight || s->commit.cur || store_batch_ops(s->commit.batch) > 0) return;
    event_base_loopexit(s->base, NULL);
}

/* ---- the events of this file ------------------------------------------------------------- */

int srv_commit_start(server *s)
{
    s->commit.flush_ev = event_new(s->base, -1, 0, on_flush, s);
    s->commit.writer_watch_ev = evtimer_new(s->base, on_writer_watch, s);
    s->commit.resync_ev = evtimer_new(s->base, on_resync, s);
    s->commit.late_ev = evtimer_new(s->base, on_late_rows, s);
    s->commit.store_ev =
        event_new(s->base, store_event_fd(s->st), EV_READ | EV_PERSIST, on_store_event, s);
    if (!s->commit.flush_ev || !s->commit.writer_watch_ev || !s->commit.resync_ev ||
        !s->commit.late_ev || !s->commit.store_ev || event_add(s->commit.store_ev, NULL) != 0)
        return -1;
    store_on_commit(s->st, on_commit, s);
    return 0;
}

/* A stopped server's: nothing more is written. */
void srv_commit_timers_off(server *s)
{
    event_del(s->commit.flush_ev);
    event_del(s->commit.writer_watch_ev);
    event_del(s->commit.resync_ev);
    event_del(s->commit.late_ev);
}

void srv_commit_free(server *s)
{
    if (s->commit.flush_ev) event_free(s->commit.flush_ev);
    if (s->commit.writer_watch_ev) event_free(s->commit.writer_watch_ev);
    if (s->commit.resync_ev) event_free(s->commit.resync_ev);
    if (s->commit.late_ev) event_free(s->commit.late_ev);
    if (s->commit.store_ev) event_free(s->commit.store_ev);
    srv_drop_late_rows(s);
    htab_free(&s->commit.late_rows);
}
