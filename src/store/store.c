// SPDX-License-Identifier: Apache-2.0
/* The store's front: opening a backend by its URL, the loads (jobs, tokens,
 * request keys) and the leadership calls.  Results go back to the caller's
 * loop in results.c, the store's error in err.c; batches are in batch.c
 * (changes.c, group.c), the writer thread in writer.c, the reader thread
 * in reader.c (its rows: rows.c), retention in retention.c. */
#include "internal.h"
#include "schema.h"

#include "base/clock.h"
#include "base/xalloc.h"

#include <errno.h>
#include <jansson.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

/* ---- load, prune ------------------------------------------------------------------- */

typedef struct pause_ctx {
    engine_t *e;
    int64_t now;
} pause_ctx;

static void pause_row(void *ctx, const store_rowacc *acc, void *row)
{
    pause_ctx *p = ctx;
    engine_pause_tenant(p->e, p->now, acc->text(row, 0), acc->text(row, 1), true, NULL);
}

static void dep_row(void *ctx, const store_rowacc *acc, void *row)
{
    pause_ctx *p = ctx;
    int policy = engine_deps_policy_parse(acc->text(row, 2));
    engine_load_dep(p->e, (uint64_t)acc->i64(row, 0), (uint64_t)acc->i64(row, 1),
                    policy < 0 ? ENGINE_DEPS_CANCEL : (engine_deps_policy)policy);
}

typedef struct key_setting_ctx {
    store_t *s;
    engine_t *e;
    int rc;
} key_setting_ctx;

static void key_setting_row(void *ctx, const store_rowacc *acc, void *row)
{
    key_setting_ctx *k = ctx;
    if (k->rc) return;
    engine_key_settings ks;
    engine_key_settings_defaults(&ks);
    char msg[200] = "";
    engine_err err = {0};
    const char *tenant = acc->text(row, 0), *key = acc->text(row, 1);
    k->rc = store_settings_from_row(STORE_KEYS, acc, row, &ks, msg, sizeof msg);
    if (!k->rc && engine_load_key_setting(k->e, tenant, key, &ks, &err) != 0) k->rc = TENQ_ECORRUPT;
    if (k->rc) store_set_err(k->s, "key %s of %s: %s", key, tenant, msg[0] ? msg : err.message);
}

typedef struct plain_ctx {
    store_t *s;
    engine_t *e;
    int64_t now;
    store_load_stats *st;
    int rc;
} plain_ctx;

static void plain_row(void *ctx, const store_rowacc *acc, void *row)
{
    plain_ctx *p = ctx;
    if (p->rc) return;
    engine_job_info in;
    store_row_mem m;
    char msg[256];
    p->rc = store_row_to_job(acc, row, &in, &m, msg, sizeof msg);
    engine_err err;
    if (!p->rc && engine_load_job(p->e, p->now, &in, &err) != 0) {
        snprintf(msg, sizeof msg, "job %llu: %s", (unsigned long long)in.id, err.message);
        p->rc = TENQ_ECORRUPT;
    }
    store_row_mem_free(&m);
    if (p->rc)
        store_set_err(p->s, "loading: %s", msg);
    else
        p->st->jobs++;
}

int store_load(store_t *s, engine_t *e, int64_t now, store_load_stats *st)
{
    store_load_stats local;
    if (!st) st = &local;
    int rc = store_load_first(s, e, now, st);
    if (rc) return rc;
    plain_ctx p = {s, e, now, st, 0};
    pthread_mutex_lock(&s->db_lock);
    engine_loading(e, true);
    rc = s->be->select(s, false,
                       "SELECT " STORE_JOB_COLUMNS " FROM $Sjobs WHERE live = 2 ORDER BY "
                       "-priority, run_at, id",
                       0, NULL, plain_row, &p);
    engine_loading(e, false);
    pthread_mutex_unlock(&s->db_lock);
    engine_changes_clear(e);
    return rc ? rc : p.rc;
}

int store_load_first(store_t *s, engine_t *e, int64_t now, store_load_stats *st)
{
    store_load_stats local;
    if (!st) st = &local;
    memset(st, 0, sizeof(*st));
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pthread_mutex_lock(&s->db_lock);
    engine_loading(e, true);
    int rc = s->be->load(s, e, now, st);
    pause_ctx pc = {e, now};
    /* the keys' settings: a key's limit in force before the first lease */
    if (!rc) {
        char *tmpl = store_settings_select_tmpl(STORE_KEYS);
        key_setting_ctx kc = {s, e, 0};
        rc = s->be->select(s, false, tmpl, 0, NULL, key_setting_row, &kc);
        free(tmpl);
        if (!rc) rc = kc.rc;
    }
    if (!rc) rc = s->be->select(s, false, STORE_SQL_LOAD_PAUSES, 0, NULL, pause_row, &pc);
    /* the edges, once every job is in: the waits are worked out from them */
    if (!rc) rc = s->be->select(s, false, STORE_SQL_LOAD_DEPS, 0, NULL, dep_row, &pc);
    /* the steps, and the waits under way, before the waits are worked out */
    if (!rc) rc = store_load_steps(s, e, now);
    if (!rc) engine_load_deps_done(e, now);
    if (!rc) rc = store_load_batches(s, e);
    engine_loading(e, false);
    pthread_mutex_unlock(&s->db_lock);
    engine_changes_clear(e);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    st->seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    return rc;
}

typedef struct load_ctx {
    store_token_fn tfn;
    store_request_fn rfn;
    void *ctx;
} load_ctx;

static void token_row(void *ctx, const store_rowacc *acc, void *row)
{
    load_ctx *l = ctx;
    store_token t = {acc->i64(row, 0),     acc->text(row, 1),
                     acc->text(row, 2),    acc->is_null(row, 3) ? NULL : acc->text(row, 3),
                     acc->i64(row, 4),     acc->is_null(row, 5) ? 0 : acc->i64(row, 5),
                     acc->i64(row, 6) != 0};
    l->tfn(l->ctx, &t);
}

int store_load_tokens(store_t *s, store_token_fn fn, void *ctx)
{
    load_ctx l = {fn, NULL, ctx};
    pthread_mutex_lock(&s->db_lock);
    int rc = s->be->select(
        s, false,
        "SELECT id, hash, role, queues, created_at, revoked_at, hide_data FROM $Stokens "
        "ORDER BY id",
        0, NULL, token_row, &l);
    pthread_mutex_unlock(&s->db_lock);
    return rc;
}

typedef struct sched_ctx {
    store_schedule_fn fn;
    void *ctx;
} sched_ctx;

static void schedule_row(void *ctx, const store_rowacc *a, void *row)
{
    sched_ctx *c = ctx;
    store_schedule x = {
        .name = a->text(row, 0),
        .tenant = a->text(row, 1),
        .cron = a->text(row, 2),
        .timezone = a->text(row, 3),
        .missed = a->text(row, 4),
        .queue = a->text(row, 5),
        .type = a->text(row, 6),
        .args = a->text(row, 7),
        .key = a->is_null(row, 8) ? NULL : a->text(row, 8),
        .priority = (int32_t)a->i64(row, 9),
        .unique_key = a->is_null(row, 10) ? NULL : a->text(row, 10),
        .unique = a->i64(row, 11) != 0,
        .max_attempts = (uint32_t)a->i64(row, 12),
        .timeout_ms = a->i64(row, 13),
        .paused = a->i64(row, 14) != 0,
        .last_tick = a->i64(row, 15),
        .next_tick = a->i64(row, 16),
        .created_at = a->i64(row, 17),
        .updated_at = a->i64(row, 18),
    };
    c->fn(c->ctx, &x);
}

int store_load_schedules(store_t *s, store_schedule_fn fn, void *ctx)
{
    sched_ctx c = {fn, ctx};
    pthread_mutex_lock(&s->db_lock);
    int rc = s->be->select(s, false, STORE_SQL_LOAD_SCHEDULES, 0, NULL, schedule_row, &c);
    pthread_mutex_unlock(&s->db_lock);
    return rc;
}

static void request_row(void *ctx, const store_rowacc *acc, void *row)
{
    load_ctx *l = ctx;
    store_request_key r = {
        acc->text(row, 0), acc->text(row, 1), (uint64_t)acc->i64(row, 2), 0, NULL,
        acc->i64(row, 3)};
    l->rfn(l->ctx, &r);
}

int store_load_requests(store_t *s, int64_t since, store_request_fn fn, void *ctx)
{
    load_ctx l = {NULL, fn, ctx};
    char num[24];
    snprintf(num, sizeof num, "%lld", (long long)since);
    const char *params[1] = {num};
    pthread_mutex_lock(&s->db_lock);
    int rc = s->be->select(s, false, STORE_SQL_LOAD_REQUESTS, 1, params, request_row, &l);
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
    long n = store_retention_step(s, now, term);
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

bool store_inbox_news(store_t *s)
{
    return s->be->inbox_news && s->be->inbox_news(s);
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
    if (s->opts.request_key_ttl_ms <= 0) s->opts.request_key_ttl_ms = 10 * 60 * 1000;
    if (s->opts.audit_ttl_ms <= 0) s->opts.audit_ttl_ms = 90LL * 24 * 3600 * 1000;
    pthread_mutex_init(&s->err_lock, NULL);
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->db_lock, NULL);
    pthread_mutex_init(&s->read_db_lock, NULL);
    /* the writer's timed waits go by the monotonic clock: a step of the
     * wall clock neither holds retention back nor hurries it */
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cond, &ca);
    pthread_condattr_destroy(&ca);
    pthread_cond_init(&s->read_cond, NULL);
    store_clock_init(s);
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
    s->writer_may_idle = s->opts.writer_idle && store_writer_may_leave_idle();
    int e = pthread_create(&s->writer, NULL, store_writer_main, s);
    if (e != 0) xthread_die("the store's writer thread", e);
    e = pthread_create(&s->reader, NULL, store_reader_main, s);
    if (e != 0) xthread_die("the store's reader thread", e);
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
