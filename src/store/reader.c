// SPDX-License-Identifier: Apache-2.0
/* The reader thread: reads of jobs (one by id, a page), of a job's
 * attempts, edges and steps, of request keys, of the inbox and reads of
 * their own, on their own connection, handed back through the event fd
 * (results.c) so that a slow query never stalls the caller's loop. */
#include "internal.h"
#include "schema.h"

#include "base/xalloc.h"

#include <string.h>

/* ---- the reader ------------------------------------------------------------------ */

static void request_row(void *ctx, const store_rowacc *acc, void *row)
{
    store_result *res = ctx;
    res->found = true;
    res->req.status = (int)acc->i64(row, 0);
    free((char *)res->req.answer);
    res->req.answer = xstrdup(acc->text(row, 1));
    res->req.fingerprint = (uint64_t)acc->i64(row, 2);
}

/* A row of attempts (STORE_ATTEMPT_COLUMNS), its strings kept with the rows. */
static void attempt_row(void *ctx, const store_rowacc *acc, void *row)
{
    store_result *res = ctx;
    if (res->natt == res->capatt) {
        res->capatt = res->capatt ? res->capatt * 2 : 8;
        res->att = xrealloc(res->att, res->capatt * sizeof(*res->att));
    }
    engine_attempt_info *a = &res->att[res->natt++];
    memset(a, 0, sizeof(*a));
#define I64(c) (acc->is_null(row, (c)) ? 0 : acc->i64(row, (c)))
#define TXT(c) (acc->is_null(row, (c)) ? NULL : rows_str(&res->rows, acc->text(row, (c))))
    a->job_id = (uint64_t)I64(0);
    a->token = (uint64_t)I64(1);
    a->attempt = (uint32_t)I64(2);
    a->worker = TXT(3);
    a->leased_at = I64(4);
    a->started_at = I64(5);
    a->finished_at = I64(6);
    int o = acc->is_null(row, 7) ? -1 : engine_attempt_outcome_parse(acc->text(row, 7));
    int st = acc->is_null(row, 8) ? -1 : engine_state_parse(acc->text(row, 8));
    if (o < 0 || st < 0) res->bad_att = true; /* a word this tenq does not know */
    a->outcome = o < 0 ? ENGINE_ATTEMPT_FAILED : (engine_attempt_outcome)o;
    a->job_state = st < 0 ? ENGINE_DEAD : (engine_state)st;
    a->error = TXT(9);
    a->stats = TXT(10);
#undef I64
#undef TXT
}

static int read_attempts(store_t *s, uint64_t id, store_result *res)
{
    int rc = s->be->query(s, id, NULL, &res->rows);
    if (rc || res->rows.n == 0) return rc; /* no job, no attempts */
    char idtext[24];
    snprintf(idtext, sizeof idtext, "%llu", (unsigned long long)id);
    const char *params[1] = {idtext};
    rc = s->be->select(s, true, STORE_SQL_GET_ATTEMPTS, 1, params, attempt_row, res);
    if (!rc) rc = store_read_steps(s, id, false, res); /* which attempt stored each step */
    if (!rc && res->bad_att) {
        store_set_err(s, "job %llu has an attempt with an unknown outcome or state",
                      (unsigned long long)id);
        rc = TENQ_ECORRUPT;
    }
    return rc;
}

/* A row of parents or children: id, state, result. */
static void dep_row(void *ctx, const store_rowacc *acc, void *row)
{
    store_result *res = ctx;
    if (res->ndep == res->capdep) {
        res->capdep = res->capdep ? res->capdep * 2 : 8;
        res->dep = xrealloc(res->dep, res->capdep * sizeof(*res->dep));
    }
    store_dep *d = &res->dep[res->ndep++];
    d->id = (uint64_t)acc->i64(row, 0);
    d->state = acc->is_null(row, 1) ? -1 : engine_state_parse(acc->text(row, 1));
    d->result = acc->is_null(row, 2) ? NULL : rows_str(&res->rows, acc->text(row, 2));
}

static void count_row(void *ctx, const store_rowacc *acc, void *row)
{
    ((store_result *)ctx)->ndep_total = (size_t)acc->i64(row, 0);
}

static int read_deps(store_t *s, uint64_t id, store_result *res)
{
    int rc = s->be->query(s, id, NULL, &res->rows);
    if (rc || res->rows.n == 0) return rc;
    char idtext[24];
    snprintf(idtext, sizeof idtext, "%llu", (unsigned long long)id);
    const char *params[1] = {idtext};
    rc = s->be->select(s, true, STORE_SQL_GET_PARENTS, 1, params, dep_row, res);
    res->ndep_parents = res->ndep;
    if (!rc) rc = s->be->select(s, true, STORE_SQL_GET_CHILDREN, 1, params, dep_row, res);
    if (!rc) rc = s->be->select(s, true, STORE_SQL_COUNT_CHILDREN, 1, params, count_row, res);
    return rc;
}

typedef struct id_list {
    uint64_t *v;
    size_t n, cap;
    int policy; /* from the parents' rows */
} id_list;

static void id_row(void *ctx, const store_rowacc *acc, void *row)
{
    id_list *l = ctx;
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 8;
        l->v = xrealloc(l->v, l->cap * sizeof(uint64_t));
    }
    l->v[l->n++] = (uint64_t)acc->i64(row, 0);
    if (!acc->is_null(row, 1)) l->policy = engine_deps_policy_parse(acc->text(row, 1));
}

/* A job read from the store gets its parents and children, as the engine
 * shows them for a job it holds (the ids, kept with the rows). */
static int read_edges(store_t *s, rows_builder *rb, engine_job_info *j)
{
    char idtext[24];
    snprintf(idtext, sizeof idtext, "%llu", (unsigned long long)j->id);
    const char *params[1] = {idtext};
    id_list p = {0}, c = {0};
    int rc = s->be->select(s, true, STORE_SQL_GET_PARENT_IDS, 1, params, id_row, &p);
    if (!rc) rc = s->be->select(s, true, STORE_SQL_GET_CHILD_IDS, 1, params, id_row, &c);
    if (!rc && p.n) {
        rows_keep(rb, p.v);
        j->parents = p.v;
        j->n_parents = (uint32_t)p.n;
        j->on_parent_failure = p.policy == ENGINE_DEPS_RUN ? ENGINE_DEPS_RUN : ENGINE_DEPS_CANCEL;
    } else {
        free(p.v);
    }
    if (!rc && c.n) {
        rows_keep(rb, c.v);
        j->children = c.v;
        j->n_children = (uint32_t)c.n;
    } else {
        free(c.v);
    }
    return rc;
}

static void link_row(void *ctx, const store_rowacc *acc, void *row)
{
    engine_job_info *j = ctx;
    j->batch = (uint64_t)acc->i64(row, 0);
    j->batch_role = (int)acc->i64(row, 1);
}

/* A job's batch and role from its link (batch_jobs), when it has one. */
static void read_batch_link(store_t *s, engine_job_info *j)
{
    char idtext[24];
    snprintf(idtext, sizeof idtext, "%llu", (unsigned long long)j->id);
    const char *params[1] = {idtext};
    s->be->select(s, true, STORE_SQL_GET_BATCH_JOB, 1, params, link_row, j);
}

typedef struct links_ctx {
    rows_builder *rows; /* by id, highest first */
} links_ctx;

static void list_link_row(void *ctx, const store_rowacc *acc, void *row)
{
    links_ctx *l = ctx;
    uint64_t id = (uint64_t)acc->i64(row, 0);
    size_t lo = 0, hi = l->rows->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        engine_job_info *j = &l->rows->v[mid];
        if (j->id == id) {
            j->batch = (uint64_t)acc->i64(row, 1);
            j->batch_role = (int)acc->i64(row, 2);
            return;
        }
        if (j->id > id)
            lo = mid + 1;
        else
            hi = mid;
    }
}

/* The batches of a list's jobs (rows by id, highest first), in one query. */
static void read_batch_links_of(store_t *s, rows_builder *rows)
{
    if (rows->n == 0) return;
    size_t cap = 96 + rows->n * 22;
    char *sql = xmalloc(cap);
    size_t n = (size_t)snprintf(
        sql, cap, "SELECT job_id, batch_id, role FROM $Sbatch_jobs WHERE job_id IN (");
    for (size_t i = 0; i < rows->n; i++)
        n += (size_t)snprintf(sql + n, cap - n, "%s%llu", i ? "," : "",
                              (unsigned long long)rows->v[i].id);
    snprintf(sql + n, cap - n, ")");
    for (size_t i = 1; i < rows->n; i++)
        if (rows->v[i].id >= rows->v[i - 1].id) { /* not in order: none rather than wrong */
            free(sql);
            return;
        }
    links_ctx l = {rows};
    s->be->select(s, true, sql, 0, NULL, list_link_row, &l);
    free(sql);
}

/* ---- pages of rows ---------------------------------------------------------------- */

typedef struct read_page {
    store_t *s;
    rows_builder *rows;
    int rc;
    bool with_args;
} read_page;

/* ---- args of jobs whose args are out of memory ------------------------------------ */

#define ARGS_READ_CHUNK 500 /* ids in one statement */

static void args_row(void *ctx, const store_rowacc *acc, void *row)
{
    rows_builder *rb = ctx;
    if (acc->is_null(row, 1)) return; /* payloads: never out of memory */
    engine_job_info *j = rows_add(rb);
    j->id = (uint64_t)acc->i64(row, 0);
    j->args = rows_str(rb, acc->text(row, 1));
    j->args_len = (uint32_t)strlen(j->args);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The ids in order, a statement for each chunk of them. */
static int read_args(store_t *s, uint64_t *ids, size_t n, rows_builder *rows)
{
    qsort(ids, n, sizeof(*ids), cmp_u64);
    char *sql = xmalloc(64 + ARGS_READ_CHUNK * 22);
    int rc = 0;
    for (size_t at = 0; at < n && !rc; at += ARGS_READ_CHUNK) {
        size_t m = n - at < ARGS_READ_CHUNK ? n - at : ARGS_READ_CHUNK;
        size_t len = (size_t)sprintf(sql, "SELECT id, args FROM $Sjobs WHERE id IN (");
        for (size_t i = 0; i < m; i++)
            len +=
                (size_t)sprintf(sql + len, "%s%llu", i ? "," : "", (unsigned long long)ids[at + i]);
        sprintf(sql + len, ")");
        rc = s->be->select(s, true, sql, 0, NULL, args_row, rows);
    }
    free(sql);
    return rc;
}

static void rest_row(void *ctx, const store_rowacc *acc, void *row)
{
    read_page *p = ctx;
    if (p->rc) return;
    p->rc = rows_add_row(p->s, p->rows, acc, row);
    engine_job_info *j = &p->rows->v[p->rows->n - 1];
    if (!p->rc && !p->with_args && !j->args && !j->payloads) { /* left in the store */
        j->args_missing = true;
        j->args_len = (uint32_t)acc->i64(row, STORE_JOB_NCOLS);
    }
}

static int read_rest(store_t *s, const read_req *rq, rows_builder *rows)
{
    const store_rest_cursor *c = &rq->rest_after;
    read_page p = {s, rows, 0, rq->rest_args};
    char sql[sizeof(STORE_SQL_REST_COLUMNS_NO_ARGS) + sizeof(STORE_SQL_REST_2) + 64];
    int rc = 0;
    for (int part = 1; part <= 2 && !rc && !p.rc && rows->n < rq->max; part++) {
        size_t n = (size_t)snprintf(sql, sizeof sql, "%s",
                                    rq->rest_args ? STORE_SQL_REST_COLUMNS
                                                  : STORE_SQL_REST_COLUMNS_NO_ARGS),
               left = rq->max - rows->n;
        if (part == 1)
            snprintf(sql + n, sizeof sql - n, STORE_SQL_REST_1, (long long)c->key,
                     (unsigned long long)c->id, left);
        else
            snprintf(sql + n, sizeof sql - n, STORE_SQL_REST_2, (long long)c->key, left);
        rc = s->be->select(s, true, sql, 0, NULL, rest_row, &p);
    }
    return rc ? rc : p.rc;
}

static void run_read(store_t *s, read_req *rq, store_result *res)
{
    pthread_mutex_lock(&s->read_db_lock);
    if (rq->rest) {
        res->rc = read_rest(s, rq, &res->rows);
    } else if (rq->ids) {
        res->rc = read_args(s, rq->ids, rq->nids, &res->rows);
    } else if (rq->xrun) {
        res->rc = rq->xrun(s, rq->ctx);
    } else if (rq->dfn) {
        res->rc = read_deps(s, rq->id, res);
    } else if (rq->afn) {
        res->rc = read_attempts(s, rq->id, res);
    } else if (rq->sfn) {
        res->rc = s->be->query(s, rq->id, NULL, &res->rows);
        if (!res->rc && res->rows.n == 1) res->rc = store_read_steps(s, rq->id, true, res);
    } else if (rq->ifn) {
        res->rc = store_inbox_run(s, rq->max, rq->floor, rq->flag, &res->inbox, &res->rows);
    } else if (rq->rfn) {
        const char *params[2] = {rq->scope, rq->key};
        res->rc = s->be->select(s, true, STORE_SQL_GET_REQUEST, 2, params, request_row, res);
    } else {
        res->rc = s->be->query(s, rq->id, rq->id ? NULL : &rq->q, &res->rows);
        if (!res->rc && rq->id && res->rows.n == 1)
            res->rc = read_edges(s, &res->rows, &res->rows.v[0]);
        /* one job read by id: its batch, if it has one */
        if (!res->rc && rq->id && res->rows.n == 1) read_batch_link(s, &res->rows.v[0]);
        if (!res->rc && !rq->id) read_batch_links_of(s, &res->rows);
    }
    pthread_mutex_unlock(&s->read_db_lock);
}

static void attempts_deliver(store_result *res);
static void deps_deliver(store_result *res);

/* A read's result on the caller's thread (store_dispatch): to its
 * callback, then what it read freed. */
static void deliver(store_result *x)
{
    if (x->xdone) {
        x->xdone(x->ctx, x->rc);
    } else if (x->dfn) {
        deps_deliver(x);
    } else if (x->afn) {
        attempts_deliver(x);
    } else if (x->sfn) {
        store_steps_deliver(x);
    } else if (x->ifn) {
        x->ifn(x->ctx, x->rc, &x->inbox);
        store_inbox_free(&x->inbox);
        rows_free(&x->rows);
    } else if (x->rfn) {
        x->rfn(x->ctx, x->rc, x->found ? &x->req : NULL);
        free((char *)x->req.answer);
    } else {
        store_rows rows = {x->rows.v, x->rows.n};
        if (x->fn) x->fn(x->ctx, x->rc, &rows);
        rows_free(&x->rows);
    }
}

void *store_reader_main(void *arg)
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
        res->deliver = deliver;
        res->fn = rq->fn;
        res->rfn = rq->rfn;
        res->ifn = rq->ifn;
        res->afn = rq->afn;
        res->dfn = rq->dfn;
        res->sfn = rq->sfn;
        res->xdone = rq->xdone;
        res->ctx = rq->ctx;
        run_read(s, rq, res);
        free(rq->qstrings);
        free(rq->ids);
        free(rq);
        store_post_result(s, res);
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

void store_read_own(store_t *s, int (*run)(store_t *, void *), void (*done)(void *, int), void *ctx)
{
    read_req *rq = xcalloc(1, sizeof(*rq));
    rq->xrun = run;
    rq->xdone = done;
    rq->ctx = ctx;
    read_enqueue(s, rq);
}

int store_read_own_sync(store_t *s, int (*run)(store_t *, void *), void (*done)(void *, int),
                        void *ctx)
{
    pthread_mutex_lock(&s->read_db_lock);
    int rc = run(s, ctx);
    pthread_mutex_unlock(&s->read_db_lock);
    done(ctx, rc);
    return rc;
}

void store_get_job(store_t *s, uint64_t id, store_rows_fn fn, void *ctx)
{
    read_enqueue(s, read_new(id ? id : UINT64_MAX, NULL, fn, ctx));
}

void store_list_jobs(store_t *s, const store_job_query *q, store_rows_fn fn, void *ctx)
{
    read_enqueue(s, read_new(0, q, fn, ctx));
}

store_rest_cursor store_rest_after(const engine_job_info *row)
{
    /* STORE_FIFO_KEY (schema.h), in C */
    return (store_rest_cursor){(32767 - (int64_t)row->priority) * (INT64_C(1) << 47) + row->run_at,
                               row->id};
}

void store_load_rest(store_t *s, store_rest_cursor after, size_t max, bool with_args,
                     store_rows_fn fn, void *ctx)
{
    read_req *rq = xcalloc(1, sizeof(*rq));
    rq->rest = true;
    rq->rest_args = with_args;
    rq->rest_after = after;
    rq->max = max;
    rq->fn = fn;
    rq->ctx = ctx;
    read_enqueue(s, rq);
}

void store_read_args(store_t *s, const uint64_t *ids, size_t n, store_rows_fn fn, void *ctx)
{
    read_req *rq = xcalloc(1, sizeof(*rq));
    rq->ids = xmalloc((n ? n : 1) * sizeof(*ids));
    memcpy(rq->ids, ids, n * sizeof(*ids));
    rq->nids = n;
    rq->fn = fn;
    rq->ctx = ctx;
    read_enqueue(s, rq);
}

void store_get_request(store_t *s, const char *scope, const char *key, store_request_read_fn fn,
                       void *ctx)
{
    read_req *rq = xcalloc(1, sizeof(*rq));
    size_t ls = strlen(scope) + 1, lk = strlen(key) + 1;
    rq->qstrings = xmalloc(ls + lk);
    memcpy(rq->qstrings, scope, ls);
    memcpy(rq->qstrings + ls, key, lk);
    rq->scope = rq->qstrings;
    rq->key = rq->qstrings + ls;
    rq->rfn = fn;
    rq->ctx = ctx;
    read_enqueue(s, rq);
}

void store_read_inbox(store_t *s, size_t max, uint64_t floor, store_inbox_flag flag,
                      store_inbox_fn fn, void *ctx)
{
    read_req *rq = xcalloc(1, sizeof(*rq));
    rq->ifn = fn;
    rq->max = max;
    rq->floor = floor;
    rq->flag = flag;
    rq->ctx = ctx;
    read_enqueue(s, rq);
}

void store_get_attempts(store_t *s, uint64_t id, store_attempts_fn fn, void *ctx)
{
    read_req *rq = read_new(id ? id : UINT64_MAX, NULL, NULL, ctx);
    rq->afn = fn;
    read_enqueue(s, rq);
}

static void attempts_deliver(store_result *res)
{
    store_attempts a = {res->rows.n == 1 && !res->rc ? &res->rows.v[0] : NULL, res->att,
                        res->rc ? 0 : res->natt, res->stp, res->rc ? 0 : res->nstp};
    res->afn(res->ctx, res->rc, &a);
    rows_free(&res->rows);
    free(res->att);
    res->att = NULL;
    free(res->stp);
    res->stp = NULL;
}

void store_get_steps(store_t *s, uint64_t id, store_steps_fn fn, void *ctx)
{
    read_req *rq = read_new(id ? id : UINT64_MAX, NULL, NULL, ctx);
    rq->sfn = fn;
    read_enqueue(s, rq);
}

int store_get_steps_sync(store_t *s, uint64_t id, store_steps_fn fn, void *ctx)
{
    store_result res = {0};
    read_req rq = {.id = id ? id : UINT64_MAX, .sfn = fn};
    run_read(s, &rq, &res);
    res.sfn = fn;
    res.ctx = ctx;
    int rc = res.rc;
    store_steps_deliver(&res);
    return rc;
}

int store_get_attempts_sync(store_t *s, uint64_t id, store_attempts_fn fn, void *ctx)
{
    store_result res = {0};
    read_req rq = {.id = id ? id : UINT64_MAX, .afn = fn};
    run_read(s, &rq, &res);
    res.afn = fn;
    res.ctx = ctx;
    int rc = res.rc;
    attempts_deliver(&res);
    return rc;
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

void store_get_deps(store_t *s, uint64_t id, store_deps_fn fn, void *ctx)
{
    read_req *rq = read_new(id ? id : UINT64_MAX, NULL, NULL, ctx);
    rq->dfn = fn;
    read_enqueue(s, rq);
}

static void deps_deliver(store_result *res)
{
    bool ok = res->rows.n == 1 && !res->rc;
    store_deps d = {ok ? &res->rows.v[0] : NULL,
                    res->dep,
                    ok ? res->ndep_parents : 0,
                    res->dep ? res->dep + res->ndep_parents : NULL,
                    ok ? res->ndep - res->ndep_parents : 0,
                    ok ? res->ndep_total : 0};
    res->dfn(res->ctx, res->rc, &d);
    rows_free(&res->rows);
    free(res->dep);
    res->dep = NULL;
}

int store_get_deps_sync(store_t *s, uint64_t id, store_deps_fn fn, void *ctx)
{
    store_result res = {0};
    read_req rq = {.id = id ? id : UINT64_MAX, .dfn = fn};
    run_read(s, &rq, &res);
    res.dfn = fn;
    res.ctx = ctx;
    int rc = res.rc;
    deps_deliver(&res);
    return rc;
}
