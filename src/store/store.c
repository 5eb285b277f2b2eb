/* The backend-independent part of the store: batches, the writer thread
 * (group commit), the reader thread, and handing results back. */
#include "internal.h"
#include "schema.h"

#include "base/clock.h"
#include "base/xalloc.h"

#include <errno.h>
#include <jansson.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

void store_set_err(store_t *s, const char *fmt, ...)
{
    pthread_mutex_lock(&s->err_lock);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->err, sizeof(s->err), fmt, ap);
    va_end(ap);
    pthread_mutex_unlock(&s->err_lock);
}

const char *store_errmsg(const store_t *s)
{
    return s->err;
}

const char *store_backend(const store_t *s)
{
    return s->be->name;
}

const char *store_where(const store_t *s)
{
    return s->where;
}

/* ---- names -------------------------------------------------------------- */

const char *store_order_name(engine_order o)
{
    return o == ENGINE_ORDER_FAIR ? "fair" : "fifo";
}
const char *store_delivery_name(engine_delivery d)
{
    return d == ENGINE_AT_MOST_ONCE ? "at-most-once" : "at-least-once";
}
const char *store_backoff_name(engine_backoff_kind b)
{
    return b == ENGINE_BACKOFF_FIXED         ? "fixed"
           : b == ENGINE_BACKOFF_EXPONENTIAL ? "exponential"
                                             : "default";
}
int store_order_parse(const char *s)
{
    return !s                       ? -1
           : strcmp(s, "fifo") == 0 ? ENGINE_ORDER_FIFO
           : strcmp(s, "fair") == 0 ? ENGINE_ORDER_FAIR
                                    : -1;
}
int store_delivery_parse(const char *s)
{
    if (!s) return -1;
    if (strcmp(s, "at-least-once") == 0) return ENGINE_AT_LEAST_ONCE;
    if (strcmp(s, "at-most-once") == 0) return ENGINE_AT_MOST_ONCE;
    return -1;
}
int store_backoff_parse(const char *s)
{
    if (!s) return -1;
    if (strcmp(s, "default") == 0) return ENGINE_BACKOFF_DEFAULT;
    if (strcmp(s, "fixed") == 0) return ENGINE_BACKOFF_FIXED;
    if (strcmp(s, "exponential") == 0) return ENGINE_BACKOFF_EXPONENTIAL;
    return -1;
}

/* ---- payloads as stored --------------------------------------------------- */

int store_payloads_parse(const char *text, engine_payload **out, uint32_t *n)
{
    *out = NULL;
    *n = 0;
    json_error_t jerr;
    json_t *arr = json_loads(text, JSON_DECODE_ANY, &jerr);
    if (!arr || !json_is_array(arr)) {
        json_decref(arr);
        return TENQ_ECORRUPT;
    }
    size_t cnt = json_array_size(arr);
    engine_payload *v = xcalloc(cnt ? cnt : 1, sizeof(*v));
    for (size_t i = 0; i < cnt; i++) {
        json_t *el = json_array_get(arr, i);
        json_t *p = json_object_get(el, "payload");
        json_t *sc = json_object_get(el, "score");
        if (!p || !json_is_number(sc)) {
            store_payloads_free(v, (uint32_t)i);
            json_decref(arr);
            return TENQ_ECORRUPT;
        }
        char *d = json_dumps(p, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
        v[i].data = d;
        v[i].len = (uint32_t)strlen(d);
        v[i].score = json_number_value(sc);
    }
    json_decref(arr);
    *out = v;
    *n = (uint32_t)cnt;
    return 0;
}

void store_payloads_free(engine_payload *p, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) free((char *)p[i].data);
    free(p);
}

/* ---- rows for reads ---------------------------------------------------------- */

engine_job_info *rows_add(rows_builder *rb)
{
    if (rb->n == rb->cap) {
        rb->cap = rb->cap ? rb->cap * 2 : 16;
        rb->v = xrealloc(rb->v, rb->cap * sizeof(*rb->v));
    }
    engine_job_info *j = &rb->v[rb->n++];
    memset(j, 0, sizeof(*j));
    return j;
}

void rows_keep(rows_builder *rb, void *p)
{
    if (rb->nmem == rb->capmem) {
        rb->capmem = rb->capmem ? rb->capmem * 2 : 64;
        rb->mem = xrealloc(rb->mem, rb->capmem * sizeof(void *));
    }
    rb->mem[rb->nmem++] = p;
}

const char *rows_str(rows_builder *rb, const char *s)
{
    if (!s) return NULL;
    char *c = xstrdup(s);
    rows_keep(rb, c);
    return c;
}

int rows_add_row(store_t *s, rows_builder *rb, const store_rowacc *acc, void *row)
{
    engine_job_info in;
    engine_payload *pl;
    char msg[256];
    int rc = store_row_to_job(acc, row, &in, &pl, msg, sizeof msg);
    if (rc) {
        store_set_err(s, "%s", msg);
        return rc;
    }
    engine_job_info *o = rows_add(rb);
    *o = in;
#define COPY(f) o->f = rows_str(rb, in.f)
    COPY(tenant);
    COPY(queue);
    COPY(type);
    COPY(key);
    COPY(args);
    COPY(worker);
    COPY(error);
    COPY(result);
    COPY(stats);
    COPY(progress);
    COPY(unique_key);
    COPY(idempotency_key);
    COPY(traceparent);
#undef COPY
    if (pl) {
        rows_keep(rb, pl);
        for (uint32_t k = 0; k < in.n_payloads; k++) rows_keep(rb, (void *)pl[k].data);
    }
    return 0;
}

void rows_free(rows_builder *rb)
{
    for (size_t i = 0; i < rb->nmem; i++) free(rb->mem[i]);
    free(rb->mem);
    free(rb->v);
    memset(rb, 0, sizeof(*rb));
}

/* ---- batches ------------------------------------------------------------------ */

store_batch *store_batch_new(void)
{
    return xcalloc(1, sizeof(store_batch));
}

void store_batch_free(store_batch *b)
{
    if (!b) return;
    free(b->ops);
    free(b->arena);
    free(b);
}

size_t store_batch_ops(const store_batch *b)
{
    return b->n;
}

static store_op *op_push(store_batch *b, op_kind k)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 16;
        b->ops = xrealloc(b->ops, b->cap * sizeof(store_op));
    }
    store_op *o = &b->ops[b->n++];
    memset(o, 0, sizeof(*o));
    o->kind = k;
    return o;
}

static soff arena_put(store_batch *b, const char *s, size_t len)
{
    if (b->alen + len + 1 > b->acap) {
        size_t nc = b->acap ? b->acap * 2 : 1024;
        while (nc < b->alen + len + 1) nc *= 2;
        b->arena = xrealloc(b->arena, nc);
        b->acap = nc;
    }
    soff o = (soff)b->alen;
    memcpy(b->arena + b->alen, s, len);
    b->arena[b->alen + len] = 0;
    b->alen += len + 1;
    return o;
}

static soff astr(store_batch *b, const char *s)
{
    return s ? arena_put(b, s, strlen(s)) : SNULL;
}

/* The payload list as stored: [{"payload":...,"score":...},...] */
static soff payloads_text(store_batch *b, const engine_payload *p, uint32_t n)
{
    size_t need = 2;
    for (uint32_t i = 0; i < n; i++) need += p[i].len + 48;
    char *buf = xmalloc(need + 1);
    size_t at = 0;
    buf[at++] = '[';
    for (uint32_t i = 0; i < n; i++) {
        if (i) buf[at++] = ',';
        memcpy(buf + at, "{\"payload\":", 11);
        at += 11;
        memcpy(buf + at, p[i].data, p[i].len);
        at += p[i].len;
        at += (size_t)snprintf(buf + at, need + 1 - at, ",\"score\":%.17g}", p[i].score);
    }
    buf[at++] = ']';
    soff o = arena_put(b, buf, at);
    free(buf);
    return o;
}

void store_batch_job(store_batch *b, const engine_job_info *j, uint32_t fields)
{
    store_op *o = op_push(b, (fields & ENGINE_JF_NEW) ? OP_JOB_INSERT : OP_JOB_UPDATE);
    job_row *r = &o->u.job;
    r->id = j->id;
    r->fields = fields;
    r->priority = j->priority;
    r->state = (uint8_t)j->state;
    r->cancel_requested = j->cancel_requested;
    r->attempts = j->attempts;
    r->max_attempts = j->max_attempts;
    r->run_at = j->run_at;
    r->created_at = j->created_at;
    r->ready_at = j->ready_at;
    r->leased_at = j->leased_at;
    r->started_at = j->started_at;
    r->finished_at = j->finished_at;
    r->lease_until = j->lease_until;
    r->token = j->token;
    r->merged_into = j->merged_into;
    r->lane_seq = j->lane_seq;
    bool all = fields & ENGINE_JF_NEW;
    r->tenant = all ? astr(b, j->tenant) : SNULL;
    r->queue = all ? astr(b, j->queue) : SNULL;
    r->type = all ? astr(b, j->type) : SNULL;
    r->key = all ? astr(b, j->key) : SNULL;
    r->unique_key = all ? astr(b, j->unique_key) : SNULL;
    r->idem_key = all ? astr(b, j->idempotency_key) : SNULL;
    r->traceparent = all ? astr(b, j->traceparent) : SNULL;
    r->args = all && j->args ? arena_put(b, j->args, j->args_len) : SNULL;
    r->payloads = (all || (fields & ENGINE_JF_PAYLOADS)) && j->payloads
                      ? payloads_text(b, j->payloads, j->n_payloads)
                      : SNULL;
    if (j->payloads == NULL && j->args == NULL && (fields & ENGINE_JF_PAYLOADS))
        r->payloads = arena_put(b, "[]", 2);
    r->worker = astr(b, j->worker);
    r->error = astr(b, j->error);
    r->progress = astr(b, j->progress);
    r->result = (all || (fields & ENGINE_JF_RESULT)) ? astr(b, j->result) : SNULL;
    r->stats = (all || (fields & ENGINE_JF_RESULT)) ? astr(b, j->stats) : SNULL;
}

void store_batch_job_delete(store_batch *b, uint64_t id)
{
    op_push(b, OP_JOB_DELETE)->u.id = id;
}

void store_batch_tenant(store_batch *b, const char *name, const engine_tenant_settings *s)
{
    store_op *o = op_push(b, OP_TENANT);
    o->u.tenant.name = astr(b, name);
    o->u.tenant.s = *s;
}

void store_batch_queue(store_batch *b, const char *name, const engine_queue_settings *s)
{
    store_op *o = op_push(b, OP_QUEUE);
    o->u.queue.name = astr(b, name);
    o->u.queue.s = *s;
}

void store_batch_idem(store_batch *b, const engine_idem_info *i)
{
    store_op *o = op_push(b, OP_IDEM);
    o->u.idem.tenant = astr(b, i->tenant);
    o->u.idem.key = astr(b, i->key);
    o->u.idem.id = i->id;
    o->u.idem.state = (uint8_t)i->state;
    o->u.idem.duplicate = i->duplicate;
    o->u.idem.merged = i->merged;
    o->u.idem.created_at = i->created_at;
}

void store_batch_token(store_batch *b, const store_token *t)
{
    store_op *o = op_push(b, OP_TOKEN);
    o->u.token.id = t->id;
    o->u.token.hash = astr(b, t->hash);
    o->u.token.role = astr(b, t->role);
    o->u.token.queues = astr(b, t->queues);
    o->u.token.created_at = t->created_at;
    o->u.token.revoked_at = t->revoked_at;
}

void store_batch_token_revoke(store_batch *b, int64_t id, int64_t at)
{
    store_op *o = op_push(b, OP_TOKEN_REVOKE);
    o->u.token.id = id;
    o->u.token.revoked_at = at;
}

void store_batch_changes(store_batch *b, engine_t *e)
{
    store_batch_changes_except(b, e, NULL, NULL);
}

void store_batch_changes_except(store_batch *b, engine_t *e, store_change_filter skip, void *ctx)
{
    size_t n;
    const engine_change *c = engine_changes(e, &n);
    for (size_t i = 0; i < n; i++) {
        if (skip && skip(ctx, &c[i])) continue;
        switch (c[i].kind) {
        case ENGINE_CH_JOB: {
            engine_job_info in;
            engine_job_get(c[i].job, &in);
            store_batch_job(b, &in, c[i].fields);
            break;
        }
        case ENGINE_CH_JOB_DELETED: store_batch_job_delete(b, c[i].id); break;
        case ENGINE_CH_TENANT: {
            engine_tenant_settings ts;
            if (engine_tenant_get(e, 0, c[i].name, &ts, NULL) == 0)
                store_batch_tenant(b, c[i].name, &ts);
            break;
        }
        case ENGINE_CH_QUEUE: {
            engine_queue_settings qs;
            if (engine_queue_get(e, 0, c[i].name, &qs, NULL) == 0)
                store_batch_queue(b, c[i].name, &qs);
            break;
        }
        case ENGINE_CH_IDEM: store_batch_idem(b, c[i].idem); break;
        case ENGINE_CH_WAKE: break;
        }
    }
}

/* ---- folding a group ------------------------------------------------------------ */

#include "base/hash.h"
#include "base/htab.h"

typedef struct fold_ent {
    uint64_t id;
    bool ins; /* in g->ins, else g->upd */
    size_t idx;
} fold_ent;

static bool fold_eq(const void *item, const void *key)
{
    return ((const fold_ent *)item)->id == *(const uint64_t *)key;
}

static void row_from(jrow *r, const store_batch *b, const job_row *x, bool all)
{
    r->id = x->id;
    r->fields |= x->fields;
    r->priority = x->priority;
    r->state = x->state;
    r->cancel_requested = x->cancel_requested;
    r->attempts = x->attempts;
    r->max_attempts = x->max_attempts;
    r->run_at = x->run_at;
    r->ready_at = x->ready_at;
    r->leased_at = x->leased_at;
    r->started_at = x->started_at;
    r->finished_at = x->finished_at;
    r->lease_until = x->lease_until;
    r->token = x->token;
    r->merged_into = x->merged_into;
    r->lane_seq = x->lane_seq;
    r->worker = bstr(b, x->worker);
    r->error = bstr(b, x->error);
    r->progress = bstr(b, x->progress);
    if (x->payloads != SNULL || all) r->payloads = bstr(b, x->payloads);
    if (x->result != SNULL || all) r->result = bstr(b, x->result);
    if (x->stats != SNULL || all) r->stats = bstr(b, x->stats);
    if (all) {
        r->created_at = x->created_at;
        r->tenant = bstr(b, x->tenant);
        r->queue = bstr(b, x->queue);
        r->type = bstr(b, x->type);
        r->key = bstr(b, x->key);
        r->args = bstr(b, x->args);
        r->unique_key = bstr(b, x->unique_key);
        r->idem_key = bstr(b, x->idem_key);
        r->traceparent = bstr(b, x->traceparent);
    }
}

void store_group_build(store_group *g, store_batch *const *batches, size_t n)
{
    memset(g, 0, sizeof(*g));
    size_t total = 0;
    for (size_t i = 0; i < n; i++) total += batches[i]->n;
    g->ins = xcalloc(total + 1, sizeof(jrow));
    g->upd = xcalloc(total + 1, sizeof(jrow));
    g->del = xcalloc(total + 1, sizeof(uint64_t));
    g->other = xcalloc(total + 1, sizeof(*g->other));
    g->other_b = xcalloc(total + 1, sizeof(*g->other_b));
    fold_ent *ents = xcalloc(total + 1, sizeof(fold_ent));
    size_t nent = 0;
    htab seen = {0};
    for (size_t i = 0; i < n; i++) {
        const store_batch *b = batches[i];
        for (size_t k = 0; k < b->n; k++) {
            const store_op *o = &b->ops[k];
            if (o->kind > OP_JOB_DELETE) {
                g->other[g->nother] = o;
                g->other_b[g->nother++] = b;
                continue;
            }
            uint64_t id = o->kind == OP_JOB_DELETE ? o->u.id : o->u.job.id;
            uint64_t h = hash_u64(id);
            fold_ent *f = htab_find(&seen, h, fold_eq, &id);
            if (o->kind == OP_JOB_DELETE) {
                if (f) (f->ins ? g->ins : g->upd)[f->idx].dropped = true;
                if (!f || !f->ins) g->del[g->ndel++] = id; /* never written: nothing to delete */
                if (f) htab_remove(&seen, h, f);
                continue;
            }
            if (f) {
                row_from(&(f->ins ? g->ins : g->upd)[f->idx], b, &o->u.job, false);
                continue;
            }
            bool ins = o->kind == OP_JOB_INSERT;
            jrow *r = ins ? &g->ins[g->nins] : &g->upd[g->nupd];
            row_from(r, b, &o->u.job, ins);
            f = &ents[nent++];
            f->id = id;
            f->ins = ins;
            f->idx = ins ? g->nins++ : g->nupd++;
            htab_insert(&seen, h, f);
        }
    }
    htab_free(&seen);
    free(ents);
}

void store_group_free(store_group *g)
{
    free(g->ins);
    free(g->upd);
    free(g->del);
    free(g->other);
    free(g->other_b);
    memset(g, 0, sizeof(*g));
}

/* ---- results back to the caller's thread ------------------------------------- */

static void post_result(store_t *s, store_result *r)
{
    pthread_mutex_lock(&s->lock);
    r->next = NULL;
    if (s->results_tail)
        s->results_tail->next = r;
    else
        s->results = r;
    s->results_tail = r;
    pthread_mutex_unlock(&s->lock);
    uint64_t one = 1;
    ssize_t w = write(s->efd, &one, sizeof one);
    (void)w; /* the counter cannot overflow in practice; a failed wake is retried by the next */
}

size_t store_dispatch(store_t *s)
{
    uint64_t cnt;
    ssize_t r = read(s->efd, &cnt, sizeof cnt);
    (void)r;
    pthread_mutex_lock(&s->lock);
    store_result *list = s->results;
    s->results = s->results_tail = NULL;
    pthread_mutex_unlock(&s->lock);
    size_t n = 0;
    while (list) {
        store_result *x = list;
        list = x->next;
        if (x->kind == 0) {
            if (x->seq == s->sync_seq) {
                s->sync_rc = x->rc;
                s->sync_done = true;
            }
            if (s->on_commit) s->on_commit(s->on_commit_ctx, x->seq, x->rc);
        } else {
            store_rows rows = {x->rows.v, x->rows.n};
            if (x->fn) x->fn(x->ctx, x->rc, &rows);
            rows_free(&x->rows);
        }
        free(x);
        n++;
    }
    return n;
}

int store_event_fd(const store_t *s)
{
    return s->efd;
}

void store_on_commit(store_t *s, store_commit_fn fn, void *ctx)
{
    s->on_commit = fn;
    s->on_commit_ctx = ctx;
}

uint64_t store_committed_seq(const store_t *s)
{
    return __atomic_load_n(&s->committed_seq, __ATOMIC_ACQUIRE);
}

bool store_failed(const store_t *s)
{
    store_t *m = (store_t *)s;
    pthread_mutex_lock(&m->lock);
    bool f = m->ok_epoch > m->epoch;
    pthread_mutex_unlock(&m->lock);
    return f;
}

void store_counters(const store_t *s, uint64_t *transactions, uint64_t *batches)
{
    store_t *m = (store_t *)s;
    pthread_mutex_lock(&m->lock);
    if (transactions) *transactions = m->n_transactions;
    if (batches) *batches = m->n_batches;
    pthread_mutex_unlock(&m->lock);
}

const double store_hist_bounds_us[STORE_HIST_BUCKETS] = {100,  200,  300,   500,   1000,
                                                         2000, 5000, 10000, 50000, 1e30};

void store_commit_timing(const store_t *s, store_timing *out)
{
    store_t *m = (store_t *)s;
    pthread_mutex_lock(&m->lock);
    *out = m->timing;
    pthread_mutex_unlock(&m->lock);
}

void store_fail_pending(store_t *s, int rc)
{
    pthread_mutex_lock(&s->lock);
    s->ok_epoch = s->epoch + 1;
    s->fail_rc = rc;
    pthread_mutex_unlock(&s->lock);
}

void store_use_term(store_t *s, uint64_t term)
{
    pthread_mutex_lock(&s->lock);
    s->term = term;
    pthread_mutex_unlock(&s->lock);
}

void store_clear_failure(store_t *s)
{
    pthread_mutex_lock(&s->lock);
    if (s->ok_epoch > s->epoch) s->epoch = s->ok_epoch;
    pthread_mutex_unlock(&s->lock);
}

/* ---- the writer: group commit ---------------------------------------------------- */

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reports each batch of arr[0..n) with its outcome (in the order handed
 * over) and frees them. */
static void post_batches(store_t *s, store_batch **arr, size_t n, size_t failed, int fail_rc,
                         int rc)
{
    for (size_t i = 0; i < n; i++) {
        store_result *r = xcalloc(1, sizeof(*r));
        r->kind = 0;
        r->seq = arr[i]->seq;
        r->rc = i < failed ? (fail_rc ? fail_rc : TENQ_EUNAVAILABLE) : rc;
        post_result(s, r);
        store_batch_free(arr[i]);
    }
}

/* ---- the writer's priority ---------------------------------------------------------
 * On a machine with few cores the writer's commit (SQLite's work, the
 * fsync's requests and their interrupts) lands beside whatever a commit's
 * own request woke: in the peer benchmark's pickup test, the worker that a
 * submit woke.  While the server is quiet the writer therefore waits for
 * work, and commits, at idle priority (SCHED_IDLE): any other thread that
 * wants the CPU runs first and a woken thread preempts it at once, while
 * the commit still runs as soon as a CPU is free.  When work comes faster
 * (more than one batch waiting, a chain, or batches less than 1 ms
 * apart on a moving average) it runs at normal priority, so a busy
 * server's commits never wait behind its clients.  (A rule on the share
 * of time spent waiting instead cost W4 a fifth of its rate: there the
 * workers wait on each commit, so the writer waits half the time too.)
 * And since a thread at idle priority gets next to nothing of a CPU that
 * normal threads keep busy (measured: acknowledgements 212 ms at the
 * median with four spinning processes on 2 cores, against 0.9 ms), the
 * caller keeps a watchdog: a batch not committed a few ms after it was handed over, with
 * the writer waiting for a CPU, gets the writer normal priority back for a
 * second (store_writer_check).  Returning a thread from SCHED_IDLE needs
 * CAP_SYS_NICE or an RLIMIT_NICE of 20; without either the writer stays at
 * normal priority (probed once, by a thread of its own, at open). */

/* Quiet: the writer waited this long for each batch, on a moving average. */
#define WRITER_QUIET_NS 1000000

static void *probe_main(void *arg)
{
    bool *ok = arg;
    struct sched_param sp = {0};
    *ok = pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp) == 0 &&
          pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp) == 0;
    return NULL;
}

/* Can this process return a thread from SCHED_IDLE to SCHED_OTHER? */
static bool may_leave_idle(void)
{
    bool ok = false;
    pthread_t t;
    if (pthread_create(&t, NULL, probe_main, &ok) != 0) return false;
    pthread_join(t, NULL);
    return ok;
}

/* Under s->lock; t: the writer (pthread_self() in the writer itself). */
static void writer_set_policy(store_t *s, pthread_t t, int policy)
{
    if (s->writer_policy == policy) return;
    struct sched_param sp = {0};
    if (pthread_setschedparam(t, policy, &sp) == 0)
        __atomic_store_n(&s->writer_policy, policy, __ATOMIC_RELAXED);
}

/* Under s->lock, with nothing to do: the priority to wait at. */
static void writer_rest(store_t *s)
{
    if (!s->writer_may_idle) return;
    bool quiet = s->writer_wait_ns > WRITER_QUIET_NS && tq_mono_ns() >= s->writer_normal_until_ns;
    writer_set_policy(s, pthread_self(), quiet ? SCHED_IDLE : SCHED_OTHER);
}

/* Is the writer thread runnable (waiting for a CPU, or on one)? */
static bool writer_runnable(const store_t *s)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", s->writer_tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return true;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return true;
    buf[n] = 0;
    const char *p = strrchr(buf, ')');
    return !p || p[1] != ' ' || p[2] == 'R';
}

bool store_writer_may_idle(const store_t *s)
{
    return s->writer_may_idle;
}

bool store_writer_idle(const store_t *s)
{
    return __atomic_load_n(&s->writer_policy, __ATOMIC_RELAXED) == SCHED_IDLE;
}

bool store_writer_check(store_t *s, uint64_t seq)
{
    bool again = false;
    pthread_mutex_lock(&s->lock);
    /* (a batch that failed is not committed either, but no longer waits) */
    bool waiting = (s->pending || s->writer_busy) && store_committed_seq(s) < seq;
    if (s->writer_policy == SCHED_IDLE && waiting && s->writer_tid) {
        if (writer_runnable(s)) {
            writer_set_policy(s, s->writer, SCHED_OTHER);
            s->writer_normal_until_ns = tq_mono_ns() + 1000000000;
            s->n_writer_raised++;
        } else {
            again = true;
        }
    }
    pthread_mutex_unlock(&s->lock);
    return again;
}

uint64_t store_writer_raised(const store_t *s)
{
    store_t *m = (store_t *)s;
    pthread_mutex_lock(&m->lock);
    uint64_t n = m->n_writer_raised;
    pthread_mutex_unlock(&m->lock);
    return n;
}

static void *writer_main(void *arg)
{
    store_t *s = arg;
    int64_t last_prune = 0;
    /* A chain (store_commit_part) applied so far, in a transaction left
     * open, with the write connection kept (db_lock held) until its end. */
    store_batch **chain = NULL;
    size_t nchain = 0, capchain = 0;
    double chain_us = 0;
    pthread_setname_np(pthread_self(), "tenq-writer");
    pthread_mutex_lock(&s->lock);
    s->writer_tid = (int)gettid();
    for (;;) {
        if (!s->pending && !s->stopping && !nchain) writer_rest(s);
        int64_t waited_from = tq_mono_ns();
        while (!s->pending && !s->stopping && nchain) pthread_cond_wait(&s->cond, &s->lock);
        while (!s->pending && !s->stopping) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_sec += 1;
            int w = pthread_cond_timedwait(&s->cond, &s->lock, &until);
            if (w == ETIMEDOUT && !s->pending) {
                /* retention only while healthy, and only by the leader */
                bool prune = s->ok_epoch <= s->epoch && (!s->opts.elect || s->term);
                uint64_t term = s->term;
                pthread_mutex_unlock(&s->lock);
                if (prune && !s->opts.no_retention && wall_ms() - last_prune >= 1000) {
                    /* Prune in small steps; stop as soon as work comes in. */
                    for (;;) {
                        pthread_mutex_lock(&s->db_lock);
                        long n = s->be->prune(s, wall_ms(), term);
                        pthread_mutex_unlock(&s->db_lock);
                        if (n < s->opts.retention_batch) break;
                        pthread_mutex_lock(&s->lock);
                        bool busy = s->pending || s->stopping;
                        pthread_mutex_unlock(&s->lock);
                        if (busy) break;
                    }
                    last_prune = wall_ms();
                }
                pthread_mutex_lock(&s->lock);
            }
        }
        if (!s->pending && s->stopping) break;
        int64_t took_at = tq_mono_ns();
        /* The batches waiting, up to the first of another term: one
         * transaction checks one term. */
        store_batch *list = s->pending, *last = list;
        while (last->next && last->next->term == list->term) last = last->next;
        /* more than one batch waiting, or a chain: work comes faster than
         * one commit at a time, which a busy server's clients wait on */
        if (list->next || list->more || nchain) writer_set_policy(s, pthread_self(), SCHED_OTHER);
        s->pending = last->next;
        if (!s->pending) s->pending_tail = NULL;
        last->next = NULL;
        uint64_t ok_epoch = s->ok_epoch;
        int fail_rc = s->fail_rc;
        if (s->opts.elect && list->term == 0) { /* made by no leader: never written */
            ok_epoch = UINT64_MAX;
            fail_rc = TENQ_ENOT_LEADER;
        }
        s->writer_busy = true;
        pthread_mutex_unlock(&s->lock);

        /* Batches from before a failure fail; the rest go in one transaction,
         * left open when the last of them says more of its chain follows. */
        size_t n = 0;
        for (store_batch *b = list; b; b = b->next) n++;
        store_batch **arr = xmalloc((n ? n : 1) * sizeof(*arr));
        size_t k = 0, live = 0;
        for (store_batch *b = list; b; b = b->next) arr[k++] = b;
        while (live < n && arr[live]->epoch < ok_epoch) live++;
        bool more = live < n && arr[n - 1]->more;
        int rc = 0;
        double us = 0;
        if (live < n && s->opts.test_commit_delay_ms > 0 && !more)
            usleep((useconds_t)s->opts.test_commit_delay_ms * 1000);
        if (live < n) {
            struct timespec ta, tb;
            clock_gettime(CLOCK_MONOTONIC, &ta);
            store_group g;
            store_group_build(&g, arr + live, n - live);
            g.term = list->term;
            if (!nchain) pthread_mutex_lock(&s->db_lock);
            rc = s->be->apply(s, &g, nchain == 0, !more);
            if (rc || !more) pthread_mutex_unlock(&s->db_lock);
            store_group_free(&g);
            clock_gettime(CLOCK_MONOTONIC, &tb);
            us = (double)(tb.tv_sec - ta.tv_sec) * 1e6 + (double)(tb.tv_nsec - ta.tv_nsec) / 1e3;
        }
        if (more && !rc) {
            /* Applied, not committed: the chain's end reports them all. */
            post_batches(s, arr, live, live, fail_rc, 0);
            if (nchain + n - live > capchain) {
                capchain = (nchain + n - live) * 2;
                chain = xrealloc(chain, capchain * sizeof(*chain));
            }
            for (size_t i = live; i < n; i++) chain[nchain++] = arr[i];
            chain_us += us;
            free(arr);
            pthread_mutex_lock(&s->lock);
            continue;
        }
        us += chain_us;
        chain_us = 0;
        pthread_mutex_lock(&s->lock);
        if (rc != 0) {
            /* Everything handed over so far was built on changes that were
             * not kept: it all fails until the caller has reloaded. */
            s->ok_epoch = s->epoch + 1;
            s->fail_rc = rc;
        } else if (live < n) {
            __atomic_store_n(&s->committed_seq, arr[n - 1]->seq, __ATOMIC_RELEASE);
            s->n_transactions++;
            s->n_batches += nchain + n - live;
            int k = 0;
            while (k < STORE_HIST_BUCKETS - 1 && us > store_hist_bounds_us[k]) k++;
            s->timing.counts[k]++;
            s->timing.total_us += us;
        }
        s->writer_busy = false;
        pthread_mutex_unlock(&s->lock);
        post_batches(s, chain, nchain, 0, fail_rc, rc);
        nchain = 0;
        post_batches(s, arr, n, live, fail_rc, rc);
        free(arr);
        pthread_mutex_lock(&s->lock);
        s->writer_wait_ns = 0.8 * s->writer_wait_ns + 0.2 * (double)(took_at - waited_from);
    }
    pthread_mutex_unlock(&s->lock);
    if (nchain) { /* stopped inside a chain (a caller that never ended it) */
        s->be->abandon(s);
        pthread_mutex_unlock(&s->db_lock);
        post_batches(s, chain, nchain, 0, 0, TENQ_EUNAVAILABLE);
    }
    free(chain);
    return NULL;
}

static uint64_t hand_over(store_t *s, store_batch *b, bool more)
{
    b->more = more;
    pthread_mutex_lock(&s->lock);
    uint64_t seq = b->seq = ++s->next_seq; /* b may be gone once unlocked */
    b->epoch = s->epoch;
    b->term = s->term;
    b->next = NULL;
    if (s->pending_tail)
        s->pending_tail->next = b;
    else
        s->pending = b;
    s->pending_tail = b;
    pthread_cond_signal(&s->cond);
    pthread_mutex_unlock(&s->lock);
    return seq;
}

uint64_t store_commit(store_t *s, store_batch *b)
{
    return hand_over(s, b, false);
}

uint64_t store_commit_part(store_t *s, store_batch *b)
{
    return hand_over(s, b, store_can_chain(s));
}

bool store_can_chain(const store_t *s)
{
    return s->be->abandon != NULL;
}

int store_commit_wait(store_t *s, store_batch *b)
{
    s->sync_done = false;
    s->sync_seq = store_commit(s, b);
    while (!s->sync_done) {
        struct pollfd p = {.fd = s->efd, .events = POLLIN};
        poll(&p, 1, 100);
        store_dispatch(s);
    }
    return s->sync_rc;
}

/* ---- the reader ------------------------------------------------------------------ */

static void run_read(store_t *s, read_req *rq, store_result *res)
{
    pthread_mutex_lock(&s->read_db_lock);
    res->rc = s->be->query(s, rq->id, rq->id ? NULL : &rq->q, &res->rows);
    pthread_mutex_unlock(&s->read_db_lock);
}

static void *reader_main(void *arg)
{
    store_t *s = arg;
    pthread_setname_np(pthread_self(), "tenq-reader");
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (!s->reads && !s->stopping) pthread_cond_wait(&s->read_cond, &s->lock);
        if (!s->reads && s->stopping) break;
        read_req *rq = s->reads;
        s->reads = rq->next;
        if (!s->reads) s->reads_tail = NULL;
        pthread_mutex_unlock(&s->lock);
        store_result *res = xcalloc(1, sizeof(*res));
        res->kind = 1;
        res->fn = rq->fn;
        res->ctx = rq->ctx;
        run_read(s, rq, res);
        free(rq->qstrings);
        free(rq);
        post_result(s, res);
        pthread_mutex_lock(&s->lock);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static read_req *read_new(uint64_t id, const store_job_query *q, store_rows_fn fn, void *ctx)
{
    read_req *rq = xcalloc(1, sizeof(*rq));
    rq->id = id;
    rq->fn = fn;
    rq->ctx = ctx;
    if (q) {
        rq->q = *q;
        /* copy the strings: the caller's may not outlive the call */
        size_t need = 0;
        const char *src[4] = {q->tenant, q->queue, q->type, q->key};
        for (int i = 0; i < 4; i++) need += src[i] ? strlen(src[i]) + 1 : 0;
        rq->qstrings = xmalloc(need ? need : 1);
        char *at = rq->qstrings;
        const char **dst[4] = {&rq->q.tenant, &rq->q.queue, &rq->q.type, &rq->q.key};
        for (int i = 0; i < 4; i++) {
            if (!src[i]) continue;
            size_t l = strlen(src[i]) + 1;
            memcpy(at, src[i], l);
            *dst[i] = at;
            at += l;
        }
    }
    return rq;
}

static void read_enqueue(store_t *s, read_req *rq)
{
    pthread_mutex_lock(&s->lock);
    if (s->reads_tail)
        s->reads_tail->next = rq;
    else
        s->reads = rq;
    s->reads_tail = rq;
    pthread_cond_signal(&s->read_cond);
    pthread_mutex_unlock(&s->lock);
}

void store_get_job(store_t *s, uint64_t id, store_rows_fn fn, void *ctx)
{
    read_enqueue(s, read_new(id ? id : UINT64_MAX, NULL, fn, ctx));
}

void store_list_jobs(store_t *s, const store_job_query *q, store_rows_fn fn, void *ctx)
{
    read_enqueue(s, read_new(0, q, fn, ctx));
}

static int read_sync(store_t *s, read_req *rq)
{
    store_result res = {0};
    run_read(s, rq, &res);
    store_rows rows = {res.rows.v, res.rows.n};
    rq->fn(rq->ctx, res.rc, &rows);
    rows_free(&res.rows);
    int rc = res.rc;
    free(rq->qstrings);
    free(rq);
    return rc;
}

int store_get_job_sync(store_t *s, uint64_t id, store_rows_fn fn, void *ctx)
{
    return read_sync(s, read_new(id ? id : UINT64_MAX, NULL, fn, ctx));
}

int store_list_jobs_sync(store_t *s, const store_job_query *q, store_rows_fn fn, void *ctx)
{
    return read_sync(s, read_new(0, q, fn, ctx));
}

/* ---- load, prune ------------------------------------------------------------------- */

int store_load(store_t *s, engine_t *e, int64_t now, store_load_stats *st)
{
    store_load_stats local;
    if (!st) st = &local;
    memset(st, 0, sizeof(*st));
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pthread_mutex_lock(&s->db_lock);
    int rc = s->be->load(s, e, now, st);
    pthread_mutex_unlock(&s->db_lock);
    engine_changes_clear(e);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    st->seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    return rc;
}

int store_load_tokens(store_t *s, store_token_fn fn, void *ctx)
{
    pthread_mutex_lock(&s->db_lock);
    int rc = s->be->load_tokens(s, fn, ctx);
    pthread_mutex_unlock(&s->db_lock);
    return rc;
}

long store_prune_now(store_t *s, int64_t now)
{
    pthread_mutex_lock(&s->lock);
    uint64_t term = s->term;
    pthread_mutex_unlock(&s->lock);
    if (s->opts.elect && !term) return TENQ_ENOT_LEADER;
    pthread_mutex_lock(&s->db_lock);
    long n = s->be->prune(s, now, term);
    pthread_mutex_unlock(&s->db_lock);
    return n;
}

/* ---- leadership (store.h; each backend keeps its own connections) --------------------- */

int store_campaign(store_t *s, const store_node *me, uint64_t *term, store_leader *who)
{
    memset(who, 0, sizeof(*who));
    return s->be->campaign(s, me, term, who);
}

int store_new_term(store_t *s, const store_node *me, uint64_t term, uint64_t *next)
{
    return s->be->new_term(s, me, term, next);
}

int store_renew(store_t *s, const store_node *me, uint64_t term)
{
    return s->be->renew(s, me, term);
}

void store_resign(store_t *s, const store_node *me, uint64_t term)
{
    s->be->resign(s, me, term);
}

int store_leader_wait(store_t *s, int wake_fd, int ms)
{
    return s->be->leader_wait(s, wake_fd, ms);
}

/* ---- open and close ---------------------------------------------------------------- */

static bool has_prefix(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

int store_open(const char *url, const store_opts *opts, store_t **out, char *errbuf, size_t errlen)
{
    *out = NULL;
    store_t *s = xcalloc(1, sizeof(*s));
    if (opts) s->opts = *opts;
    if (s->opts.retention_batch <= 0) s->opts.retention_batch = 1000;
    pthread_mutex_init(&s->err_lock, NULL);
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->db_lock, NULL);
    pthread_mutex_init(&s->read_db_lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    pthread_cond_init(&s->read_cond, NULL);
    s->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    int rc;
    if (s->efd < 0) {
        snprintf(errbuf, errlen, "eventfd: %s", strerror(errno));
        rc = TENQ_EIO;
    } else if (has_prefix(url, "postgresql://") || has_prefix(url, "postgres://")) {
        rc = store_pg_open(s, url, errbuf, errlen);
    } else if (has_prefix(url, "sqlite:")) {
        rc = store_sqlite_open(s, url + 7, errbuf, errlen);
    } else if (strchr(url, ':') == NULL) {
        rc = store_sqlite_open(s, url, errbuf, errlen);
    } else {
        snprintf(errbuf, errlen,
                 "unknown store \"%s\": use sqlite:PATH or a postgresql:// connection string", url);
        rc = TENQ_EINVALID;
    }
    if (rc != 0) {
        if (s->efd >= 0) close(s->efd);
        free(s);
        return rc;
    }
    s->writer_policy = SCHED_OTHER;
    s->writer_may_idle = s->opts.writer_idle && may_leave_idle();
    pthread_create(&s->writer, NULL, writer_main, s);
    pthread_create(&s->reader, NULL, reader_main, s);
    *out = s;
    return 0;
}

void store_close(store_t *s)
{
    if (!s) return;
    pthread_mutex_lock(&s->lock);
    s->stopping = true;
    pthread_cond_broadcast(&s->cond);
    pthread_cond_broadcast(&s->read_cond);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->writer, NULL);
    pthread_join(s->reader, NULL);
    store_dispatch(s); /* run the callbacks of what finished meanwhile */
    s->be->close(s);
    close(s->efd);
    pthread_mutex_destroy(&s->err_lock);
    pthread_mutex_destroy(&s->lock);
    pthread_mutex_destroy(&s->db_lock);
    pthread_mutex_destroy(&s->read_db_lock);
    pthread_cond_destroy(&s->cond);
    pthread_cond_destroy(&s->read_cond);
    free(s);
}
