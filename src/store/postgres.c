// SPDX-License-Identifier: Apache-2.0
/* The PostgreSQL backend: a real server named by a connection string; every
 * object in the `tenq` schema.  This file opens and migrates, loads, reads
 * and runs retention's transactions (the driver); pg_conn.c connects and
 * words errors; pg_write.c writes; pg_copyout.c loads jobs by binary COPY;
 * pg_leader.c elects. */
#include "pg.h"
#include "schema.h"

#include "base/xalloc.h"

static int current_version(PGconn *c, char *errbuf, size_t errlen)
{
    PGresult *res = PQexec(c, "SELECT to_regclass('tenq.tenq_info') IS NOT NULL, "
                              "(SELECT count(*) FROM pg_tables WHERE schemaname = 'tenq')");
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        snprintf(errbuf, errlen, "postgres: %s", PQresultErrorMessage(res));
        PQclear(res);
        return TENQ_EIO;
    }
    bool has_info = PQgetvalue(res, 0, 0)[0] == 't';
    long tables = strtol(PQgetvalue(res, 0, 1), NULL, 10);
    PQclear(res);
    if (!has_info) {
        if (tables > 0) {
            snprintf(errbuf, errlen,
                     "the schema \"tenq\" in this database holds tables that are not tenq's");
            return TENQ_ENOT_TENQ;
        }
        return 0;
    }
    res = PQexec(c, "SELECT (SELECT value FROM tenq.tenq_info WHERE key = 'application'), "
                    "(SELECT max(version) FROM tenq.schema_version)");
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQgetisnull(res, 0, 0) ||
        strcmp(PQgetvalue(res, 0, 0), "tenq") != 0) {
        snprintf(errbuf, errlen, "the schema \"tenq\" is not a tenq database");
        PQclear(res);
        return TENQ_ENOT_TENQ;
    }
    int v = PQgetisnull(res, 0, 1) ? 0 : (int)strtol(PQgetvalue(res, 0, 1), NULL, 10);
    PQclear(res);
    return v;
}

static const store_driver pg_backend;

static void pg_free(pg *p)
{
    if (p->w) PQfinish(p->w);
    if (p->r) PQfinish(p->r);
    if (p->c) PQfinish(p->c);
    free(p);
}

int store_pg_open(store_t *s, const char *url, char *errbuf, size_t errlen)
{
    pg *p = xcalloc(1, sizeof(*p));
    snprintf(p->url, sizeof p->url, "%s", url);
    const char *node = s->opts.node ? s->opts.node : "";
    snprintf(p->app, sizeof p->app, "tenq%s%.40s", *node ? ":" : "", node);
    p->w = pg_connect(p, errbuf, errlen);
    if (!p->w) {
        free(p);
        return TENQ_ECONNECT;
    }
    snprintf(s->where, sizeof s->where, "%s:%s/%s", PQhost(p->w), PQport(p->w), PQdb(p->w));
    /* Two servers starting together must not migrate at once: the lock
     * first (CREATE SCHEMA IF NOT EXISTS is not safe from a race). */
    char tmp[256];
    int rc = pg_run(s, p->w,
                    "BEGIN; SELECT pg_advisory_xact_lock(7364746); "
                    "CREATE SCHEMA IF NOT EXISTS tenq;",
                    "locking the schema");
    if (rc) {
        snprintf(errbuf, errlen, "%s", s->err);
        pg_free(p);
        return rc;
    }
    int v = current_version(p->w, errbuf, errlen);
    int known = store_schema_versions();
    if (v >= 0 && v > known) {
        snprintf(errbuf, errlen,
                 "this database is from a newer tenq (schema version %d; this tenq knows up to "
                 "%d): upgrade tenq",
                 v, known);
        v = TENQ_EVERSION;
    }
    int target = s->opts.max_version > 0 ? s->opts.max_version : known;
    for (int m = v + 1; v >= 0 && m <= target; m++) {
        char *sql = store_schema_sql(m, true);
        rc = pg_run(s, p->w, sql, "migrating");
        free(sql);
        snprintf(tmp, sizeof tmp, "INSERT INTO tenq.schema_version VALUES (%d, %lld)", m,
                 (long long)pg_now_ms());
        if (!rc) rc = pg_run(s, p->w, tmp, "migrating");
        if (rc) {
            snprintf(errbuf, errlen, "migration to schema version %d failed: %s", m, s->err);
            v = rc;
        }
    }
    if (v < 0) {
        pg_run(s, p->w, "ROLLBACK", "rollback");
        pg_free(p);
        return v;
    }
    rc = pg_run(s, p->w, "COMMIT", "migrating");
    if (!rc) p->r = pg_connect(p, errbuf, errlen);
    if (rc || !p->r) {
        if (rc) snprintf(errbuf, errlen, "%s", s->err);
        pg_free(p);
        return rc ? rc : TENQ_ECONNECT;
    }
    s->be = &pg_backend;
    s->impl = p;
    return 0;
}

static void pg_close(store_t *s)
{
    pg_free(s->impl);
}

/* ---- reading ------------------------------------------------------------------------ */

typedef struct pgrow {
    PGresult *res;
    int row;
} pgrow;

static bool acc_null(void *r, int c)
{
    pgrow *x = r;
    return PQgetisnull(x->res, x->row, c);
}
static long long acc_i64(void *r, int c)
{
    pgrow *x = r;
    const char *v = PQgetvalue(x->res, x->row, c);
    if (v[0] == 't') return 1; /* booleans */
    if (v[0] == 'f') return 0;
    return strtoll(v, NULL, 10);
}
static const char *acc_text(void *r, int c)
{
    pgrow *x = r;
    return PQgetvalue(x->res, x->row, c);
}
static const store_rowacc pg_acc = {acc_null, acc_i64, acc_text};

/* Every tenant's and queue's settings into the engine. */
static int load_settings(store_t *s, pg *p, engine_t *e, int64_t now, store_load_stats *st)
{
    for (int k = STORE_TENANTS; k <= STORE_QUEUES; k++) {
        char *sql = store_settings_select_sql((store_settings_kind)k, true);
        PGresult *res = PQexec(p->w, sql);
        free(sql);
        if (PQresultStatus(res) != PGRES_TUPLES_OK) {
            int rc = pg_fail(s, p->w, res, "loading settings");
            PQclear(res);
            return rc;
        }
        for (int i = 0; i < PQntuples(res); i++) {
            pgrow r = {res, i};
            const char *name = PQgetvalue(res, i, 0);
            engine_err err = {0};
            char msg[200] = "";
            int rc;
            if (k == STORE_TENANTS) {
                engine_tenant_settings ts;
                rc = store_settings_from_row(STORE_TENANTS, &pg_acc, &r, &ts, msg, sizeof msg);
                if (!rc && engine_tenant_set(e, now, name, &ts, &err) != 0) rc = TENQ_ECORRUPT;
                st->tenants += !rc;
            } else {
                engine_queue_settings qs;
                engine_queue_settings_defaults(&qs);
                rc = store_settings_from_row(STORE_QUEUES, &pg_acc, &r, &qs, msg, sizeof msg);
                if (!rc && engine_queue_set(e, now, name, &qs, &err) != 0) rc = TENQ_ECORRUPT;
                st->queues += !rc;
            }
            if (rc) {
                store_set_err(s, "%s %s: %s", k == STORE_TENANTS ? "tenant" : "queue", name,
                              msg[0] ? msg : err.message);
                PQclear(res);
                return rc;
            }
        }
        PQclear(res);
    }
    return 0;
}

static int pg_load(store_t *s, engine_t *e, int64_t now, store_load_stats *st)
{
    pg *p = s->impl;
    int rc = pg_ensure_connected(s, p);
    if (!rc) rc = pg_run(s, p->w, "BEGIN ISOLATION LEVEL REPEATABLE READ", "loading");
    if (!rc) rc = load_settings(s, p, e, now, st);
    if (rc) goto out;
    /* The jobs by binary COPY (pg_copyout.c): a million rows never sit in
     * memory twice, and none is parsed from text. */
    rc = pg_copy_jobs(s, p->w, e, now, &st->jobs);
    PGresult *res;
    if (rc) goto out;
    char q[256];
    snprintf(q, sizeof q,
             "SELECT tenant, key, job_id, state, duplicate, merged, created_at "
             "FROM tenq.idempotency WHERE created_at > %lld",
             (long long)(now - 24LL * 3600 * 1000));
    res = PQexec(p->w, q);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        rc = pg_fail(s, p->w, res, "loading idempotency keys");
        PQclear(res);
        goto out;
    }
    for (int i = 0; i < PQntuples(res); i++) {
        pgrow r = {res, i};
        int state = engine_state_parse(acc_text(&r, 3));
        engine_idem_info ii = {acc_text(&r, 0),
                               acc_text(&r, 1),
                               (uint64_t)acc_i64(&r, 2),
                               state < 0 ? ENGINE_READY : (engine_state)state,
                               acc_i64(&r, 4) != 0,
                               acc_i64(&r, 5) != 0,
                               acc_i64(&r, 6)};
        if (engine_load_idem(e, &ii, NULL) == 0) st->idem++;
    }
    PQclear(res);
    char *max_id = store_sql(STORE_SQL_MAX_ID, true);
    res = PQexec(p->w, max_id);
    free(max_id);
    if (PQresultStatus(res) == PGRES_TUPLES_OK)
        engine_set_next_id(e, (uint64_t)strtoll(PQgetvalue(res, 0, 0), NULL, 10) + 1);
    else
        rc = pg_fail(s, p->w, res, "reading the highest id");
    PQclear(res);
out:
    if (PQstatus(p->w) == CONNECTION_OK) pg_run(s, p->w, rc ? "ROLLBACK" : "COMMIT", "loading");
    return rc;
}

static int pg_select(store_t *s, bool read, const char *tmpl, int n, const char *const *params,
                     void (*row)(void *ctx, const store_rowacc *acc, void *row), void *ctx)
{
    pg *p = s->impl;
    int rc = read ? 0 : pg_ensure_connected(s, p);
    if (rc) return rc;
    PGconn *c = read ? p->r : p->w;
    if (read && PQstatus(c) != CONNECTION_OK) PQreset(c);
    char *sql = store_sql(tmpl, true);
    PGresult *res = PQexecParams(c, sql, n, NULL, params, NULL, NULL, 0);
    free(sql);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        rc = pg_fail(s, c, res, "query");
        PQclear(res);
        return rc;
    }
    for (int i = 0; i < PQntuples(res); i++) {
        pgrow r = {res, i};
        row(ctx, &pg_acc, &r);
    }
    PQclear(res);
    return 0;
}

static int pg_query(store_t *s, uint64_t id, const store_job_query *jq, rows_builder *rows)
{
    pg *p = s->impl;
    if (PQstatus(p->r) != CONNECTION_OK) PQreset(p->r);
    char sql[1024];
    const char *vals[10];
    char nums[3][24];
    int nv = 0;
    if (id) {
        snprintf(nums[0], sizeof nums[0], "%llu", (unsigned long long)id);
        vals[nv++] = nums[0];
        snprintf(sql, sizeof sql, "SELECT " STORE_JOB_COLUMNS " FROM tenq.jobs WHERE id = $1");
    } else {
        int n = snprintf(sql, sizeof sql, "SELECT " STORE_JOB_COLUMNS " FROM tenq.jobs WHERE true");
        const char *cols[4] = {"tenant", "queue", "type", "key"};
        const char *src[4] = {jq->tenant, jq->queue, jq->type, jq->key};
        for (int i = 0; i < 4; i++) {
            if (!src[i]) continue;
            vals[nv++] = src[i];
            n += snprintf(sql + n, sizeof sql - (size_t)n, " AND %s = $%d", cols[i], nv);
        }
        if (jq->state >= 0) {
            vals[nv++] = engine_state_name((engine_state)jq->state);
            n += snprintf(sql + n, sizeof sql - (size_t)n, " AND state = $%d", nv);
        }
        if (jq->args) {
            vals[nv++] = jq->args;
            n += snprintf(sql + n, sizeof sql - (size_t)n,
                          " AND strpos(coalesce(args, payloads), $%d) > 0", nv);
        }
        if (jq->before_id) {
            snprintf(nums[1], sizeof nums[1], "%llu", (unsigned long long)jq->before_id);
            vals[nv++] = nums[1];
            n += snprintf(sql + n, sizeof sql - (size_t)n, " AND id < $%d", nv);
        }
        snprintf(nums[2], sizeof nums[2], "%u", jq->limit ? jq->limit : 100);
        vals[nv++] = nums[2];
        snprintf(sql + n, sizeof sql - (size_t)n, " ORDER BY id DESC LIMIT $%d", nv);
    }
    PGresult *res = PQexecParams(p->r, sql, nv, NULL, vals, NULL, NULL, 0);
    if (PQresultStatus(res) != PGRES_TUPLES_OK && PQstatus(p->r) != CONNECTION_OK) {
        /* The server restarted since the last read: reads are safe to retry. */
        PQclear(res);
        PQreset(p->r);
        res = PQexecParams(p->r, sql, nv, NULL, vals, NULL, NULL, 0);
    }
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        int rc = pg_fail(s, p->r, res, "query");
        PQclear(res);
        return rc;
    }
    int rc = 0;
    for (int i = 0; i < PQntuples(res) && !rc; i++) {
        pgrow r = {res, i};
        rc = rows_add_row(s, rows, &pg_acc, &r);
    }
    PQclear(res);
    return rc;
}

static int pg_tx_begin(store_t *s, uint64_t term)
{
    pg *p = s->impl;
    int rc = pg_ensure_connected(s, p);
    if (!rc) rc = pg_prepare_all(s, p);
    if (!rc) rc = pg_run(s, p->w, "BEGIN", "begin");
    if (rc || !term) return rc;
    char tbuf[24];
    snprintf(tbuf, sizeof tbuf, "%llu", (unsigned long long)term);
    rc = pg_fence(s, p, tbuf);
    if (rc) pg_run(s, p->w, "ROLLBACK", "rollback");
    return rc;
}

static long pg_tx_exec(store_t *s, const char *tmpl, int n, const char *const *params)
{
    pg *p = s->impl;
    char *sql = store_sql(tmpl, true);
    PGresult *r = PQexecParams(p->w, sql, n, NULL, params, NULL, NULL, 0);
    free(sql);
    long rc = PQresultStatus(r) == PGRES_COMMAND_OK ? strtol(PQcmdTuples(r), NULL, 10)
                                                    : pg_fail(s, p->w, r, "writing");
    PQclear(r);
    return rc;
}

static int pg_tx_end(store_t *s, bool commit)
{
    pg *p = s->impl;
    int rc = pg_run(s, p->w, commit ? "COMMIT" : "ROLLBACK", "commit");
    if (rc && PQstatus(p->w) == CONNECTION_OK) pg_run(s, p->w, "ROLLBACK", "rollback");
    return rc;
}

static const store_driver pg_backend = {
    .name = "postgres",
    .apply = pg_apply,
    .load = pg_load,
    .select = pg_select,
    .query = pg_query,
    .tx_begin = pg_tx_begin,
    .tx_exec = pg_tx_exec,
    .tx_end = pg_tx_end,
    .campaign = pg_campaign,
    .new_term = pg_new_term,
    .renew = pg_renew,
    .resign = pg_resign,
    .leader_wait = pg_leader_wait,
    .inbox_news = pg_inbox_news,
    .close = pg_close,
};
