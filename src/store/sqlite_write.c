// SPDX-License-Identifier: Apache-2.0
/* The SQLite backend's writes: its statements (job rows one or JOB_ROWS at a
 * time, tenants, queues, keys, tokens), prepared once, and a group applied
 * in one transaction (sq_apply), or a chain's part in its open one. */
#include "sqlite.h"
#include "schema.h"

#include "base/xalloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const stmt_sql[ST_N] = {
    [ST_DEL_JOB] = STORE_SQL_DELETE_JOB,
    [ST_ID_FLOOR] = STORE_SQL_ID_FLOOR,
    [ST_IDEM] = STORE_SQL_UPSERT_IDEM,
    [ST_TOKEN] = STORE_SQL_INSERT_TOKEN,
    [ST_REQUEST] = STORE_SQL_INSERT_REQUEST,
    [ST_REVOKE] = STORE_SQL_REVOKE_TOKEN,
    [ST_PAUSE] = STORE_SQL_UPSERT_PAUSE,
    [ST_ATTEMPT] = STORE_SQL_INSERT_ATTEMPT,
    [ST_SCHEDULE] = STORE_SQL_UPSERT_SCHEDULE,
    [ST_SCHEDULE_TICK] = STORE_SQL_TICK_SCHEDULE,
    [ST_SCHEDULE_DELETE] = STORE_SQL_DELETE_SCHEDULE,
    [ST_DEP] = STORE_SQL_INSERT_DEP,
    [ST_BATCH] = STORE_SQL_UPSERT_BATCH,
    [ST_BATCH_JOB] = STORE_SQL_INSERT_BATCH_JOB,
    [ST_KEY_DEL] = STORE_SQL_DELETE_KEY_SETTING,
    [ST_AUDIT] = STORE_SQL_INSERT_AUDIT,
    [ST_STEP] = STORE_SQL_INSERT_STEP,
    [ST_STEP_DONE] = STORE_SQL_STEP_DONE,
    [ST_EVENT] = STORE_SQL_INSERT_EVENT,
    [ST_EVENT_DEL] = STORE_SQL_DELETE_EVENT,
    [ST_BEGIN] = "BEGIN IMMEDIATE",
    [ST_COMMIT] = "COMMIT",
};

/* Job rows go JOB_ROWS to a statement while a group has that many: a
 * statement's own cost (its cursors opened and closed, its program started
 * and halted, a dozen small allocations) was about as much as the row it
 * wrote (finishing a job: 7.0-8.4 us a row one at a time, 4.0-4.3 with 16
 * rows a statement, in a loop of statements against a fresh table). */
#define JOB_ROWS 16

/* A job statement's parameters: an insert's, one per column
 * (STORE_JC_INS_*); an update's, one per column it carries (STORE_JC_UPD_*,
 * ?1 the id). */
enum { INS_PARAMS = STORE_JOB_NINS, UPD_PARAMS = STORE_JOB_NUPD };

static void put(char *sql, size_t cap, size_t *n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void put(char *sql, size_t cap, size_t *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(sql + *n, *n < cap ? cap - *n : 0, fmt, ap);
    va_end(ap);
    *n += k > 0 ? (size_t)k : 0;
}

/* A column an update does not carry that a row cannot be without. */
static bool needs_placeholder(const store_job_column *c)
{
    return !c->updated && strstr(c->type, "NOT NULL") && !strstr(c->type, "DEFAULT");
}

/* The SET list of an update, from the columns an update carries
 * (columns.h): the values are the parameters (one-row form) or the
 * conflicting row's (excluded.*); the hot form leaves out the columns an
 * index reads; a KEPT column's NULL keeps the stored value. */
static void put_set(char *sql, size_t cap, size_t *n, bool hot, bool excluded)
{
    bool first = true;
    int param = 1;
    for (int c = 1; c < STORE_JOB_NINS; c++) {
        const store_job_column *col = &store_job_columns[c];
        if (!col->updated) continue;
        param++;
        if (hot && !col->hot) continue;
        char val[64];
        if (excluded)
            snprintf(val, sizeof val, "excluded.%s", col->name);
        else
            snprintf(val, sizeof val, "?%d", param);
        if (col->kept)
            put(sql, cap, n, "%s%s = coalesce(%s, %s)", first ? "" : ", ", col->name, val,
                col->name);
        else
            put(sql, cap, n, "%s%s = %s", first ? "" : ", ", col->name, val);
        first = false;
    }
}

/* A row of values: its parameters from `at` on, then (an update's insert
 * side) a placeholder for each column an update does not carry that the
 * table needs (NOT NULL without a default). */
static void put_values(char *sql, size_t cap, size_t *n, int at, int params, bool placeholders)
{
    put(sql, cap, n, "(");
    for (int c = 1; c <= params; c++) put(sql, cap, n, "%s?%d", c > 1 ? ", " : "", at + c);
    for (int c = 0; placeholders && c < STORE_JOB_NINS; c++)
        if (needs_placeholder(&store_job_columns[c]))
            put(sql, cap, n, ", %s", store_job_columns[c].number ? "0" : "''");
    put(sql, cap, n, ")");
}

/* The job statements made from the table.  Updates of one row: an UPDATE
 * by id.  Inserts of one row, and of JOB_ROWS rows: one INSERT with that
 * many rows of values.  Updates of JOB_ROWS rows: an INSERT of rows whose
 * ids are there already, turned into updates by ON CONFLICT (SQLite's one
 * statement that updates many rows by their own values without a join).
 * Its insert side never runs for a job in the store; the columns an update
 * does not carry get placeholders there, and sq_apply checks that nothing
 * was inserted. */
static char *job_sql(int kind)
{
    size_t cap = 32768, n = 0;
    char *sql = xmalloc(cap);
    sql[0] = 0;
    if (kind == ST_UPD_JOB || kind == ST_UPD_HOT) {
        put(sql, cap, &n, "UPDATE jobs SET ");
        put_set(sql, cap, &n, kind == ST_UPD_HOT, false);
        put(sql, cap, &n, " WHERE id = ?1");
    } else if (kind == ST_INS_JOB || kind == ST_INS_ROWS) {
        put(sql, cap, &n, "INSERT INTO jobs (" STORE_JOB_INSERT_COLUMNS ") VALUES ");
        for (int r = 0; r < (kind == ST_INS_JOB ? 1 : JOB_ROWS); r++) {
            if (r) put(sql, cap, &n, ", ");
            put_values(sql, cap, &n, r * INS_PARAMS, INS_PARAMS, false);
        }
    } else {
        put(sql, cap, &n, "INSERT INTO jobs (");
        bool first = true;
        for (int c = 0; c < STORE_JOB_NINS; c++) {
            if (!store_job_columns[c].updated) continue;
            put(sql, cap, &n, "%s%s", first ? "" : ", ", store_job_columns[c].name);
            first = false;
        }
        for (int c = 0; c < STORE_JOB_NINS; c++)
            if (needs_placeholder(&store_job_columns[c]))
                put(sql, cap, &n, ", %s", store_job_columns[c].name);
        put(sql, cap, &n, ") VALUES ");
        for (int r = 0; r < JOB_ROWS; r++) {
            if (r) put(sql, cap, &n, ", ");
            put_values(sql, cap, &n, r * UPD_PARAMS, UPD_PARAMS, true);
        }
        put(sql, cap, &n, " ON CONFLICT (id) DO UPDATE SET ");
        put_set(sql, cap, &n, kind == ST_HOT_ROWS, true);
    }
    if (n >= cap) abort(); /* the sizes are fixed */
    return sql;
}

char *store_sqlite_job_sql(bool many, bool hot)
{
    return job_sql(many ? (hot ? ST_HOT_ROWS : ST_UPD_ROWS) : (hot ? ST_UPD_HOT : ST_UPD_JOB));
}

char *store_sqlite_insert_rows_sql(void)
{
    return job_sql(ST_INS_ROWS);
}

int sq_prepare_all(store_t *s, sq *q)
{
    for (int i = 0; i < ST_N; i++) {
        if (q->st[i]) continue;
        char *sql = stmt_sql[i]       ? store_sql(stmt_sql[i], false)
                    : i == ST_TENANT  ? store_settings_upsert_sql(STORE_TENANTS, false)
                    : i == ST_QUEUE   ? store_settings_upsert_sql(STORE_QUEUES, false)
                    : i == ST_KEY_SET ? store_settings_upsert_sql(STORE_KEYS, false)
                                      : job_sql(i);
        int rc = sqlite3_prepare_v3(q->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &q->st[i], NULL);
        free(sql);
        if (rc != SQLITE_OK) return sq_fail(s, q->db, rc, "prepare");
    }
    return 0;
}

static void bind_text(sqlite3_stmt *st, int i, const char *v)
{
    if (v)
        sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, i);
}

static void bind_i64(sqlite3_stmt *st, int i, long long v)
{
    sqlite3_bind_int64(st, i, v);
}

/* 0 means "not yet": NULL in the table. */
static void bind_time(sqlite3_stmt *st, int i, long long v)
{
    if (v)
        sqlite3_bind_int64(st, i, v);
    else
        sqlite3_bind_null(st, i);
}

/* Row r at parameters o + 1 on (0 for the one-row statements): each
 * column by its kind (columns.h), an insert every one, an update those it
 * carries (the one-row hot form has no parameter for the last ones:
 * ignored). */
#define BIND_ID(st, i, r, f)       bind_i64(st, i, (long long)(r)->f);
#define BIND_NUM(st, i, r, f)      bind_i64(st, i, (long long)(r)->f);
#define BIND_TIME(st, i, r, f)     bind_time(st, i, (long long)(r)->f);
#define BIND_BOOL(st, i, r, f)     bind_i64(st, i, (r)->f);
#define BIND_STATE(st, i, r, f)    bind_text(st, i, engine_state_name((engine_state)(r)->f));
#define BIND_TEXT(st, i, r, f)     bind_text(st, i, (r)->f);
#define BIND_ARGS(st, i, r, f)     bind_text(st, i, (r)->f);
#define BIND_PAYLOADS(st, i, r, f) bind_text(st, i, (r)->f);
#define BIND_OPTIONS(st, i, r, f)  bind_text(st, i, (r)->f);
#define BIND_LIVE(st, i, r, f)     bind_time(st, i, group_row_live(r));
#define BIND_INS(column, type, kind, when, hot, field, flag)                                       \
    BIND_##kind(st, o + 1 + STORE_JC_INS_##column, r, field)
#define BIND_UPD(column, type, kind, when, hot, field, flag)                                       \
    if (STORE_JW_UPDATED(when)) BIND_##kind(st, o + 1 + STORE_JC_UPD_##column, r, field)

static void bind_insert(sqlite3_stmt *st, int o, const group_row *r)
{
    STORE_JOB_COLUMNS_TABLE(BIND_INS)
}

static void bind_update(sqlite3_stmt *st, int o, const group_row *r)
{
    STORE_JOB_COLUMNS_TABLE(BIND_UPD)
}

/* Parameters of a statement bound in order from `at` on. */
typedef struct bind_sink {
    sqlite3_stmt *st;
    int at;
} bind_sink;
static void sink_i64(void *ctx, long long v)
{
    bind_sink *k = ctx;
    bind_i64(k->st, k->at++, v);
}
static void sink_text(void *ctx, const char *v)
{
    bind_sink *k = ctx;
    bind_text(k->st, k->at++, v);
}
static void sink_bool(void *ctx, bool v)
{
    bind_sink *k = ctx;
    bind_i64(k->st, k->at++, v);
}

/* Tenants, queues, idempotency keys, tokens. */
static void bind_other(sqlite3_stmt *st, const store_batch *b, const store_op *o)
{
    switch (o->kind) {
    case OP_TENANT:
    case OP_QUEUE: {
        bool tenant = o->kind == OP_TENANT;
        bind_text(st, 1, bstr(b, tenant ? o->u.tenant.name : o->u.queue.name));
        bind_sink k = {st, 2};
        store_param_sink out = {sink_i64, sink_text, sink_bool, &k};
        store_settings_params(tenant ? STORE_TENANTS : STORE_QUEUES,
                              tenant ? (const void *)&o->u.tenant.s : (const void *)&o->u.queue.s,
                              &out);
        bind_i64(st, k.at, sq_now_ms());
        break;
    }
    case OP_IDEM:
        bind_text(st, 1, bstr(b, o->u.idem.tenant));
        bind_text(st, 2, bstr(b, o->u.idem.key));
        bind_i64(st, 3, (long long)o->u.idem.id);
        bind_text(st, 4, engine_state_name((engine_state)o->u.idem.state));
        bind_i64(st, 5, o->u.idem.duplicate);
        bind_i64(st, 6, o->u.idem.merged);
        bind_i64(st, 7, o->u.idem.created_at);
        break;
    case OP_TOKEN:
        bind_i64(st, 1, o->u.token.id);
        bind_text(st, 2, bstr(b, o->u.token.hash));
        bind_text(st, 3, bstr(b, o->u.token.role));
        bind_text(st, 4, bstr(b, o->u.token.queues));
        bind_i64(st, 5, o->u.token.created_at);
        bind_time(st, 6, o->u.token.revoked_at);
        bind_i64(st, 7, o->u.token.hide_data);
        break;
    case OP_TOKEN_REVOKE:
        bind_i64(st, 1, o->u.token.id);
        bind_i64(st, 2, o->u.token.revoked_at);
        break;
    case OP_REQUEST:
        bind_text(st, 1, bstr(b, o->u.request.scope));
        bind_text(st, 2, bstr(b, o->u.request.key));
        bind_i64(st, 3, (long long)o->u.request.fingerprint);
        bind_i64(st, 4, o->u.request.status);
        bind_text(st, 5, bstr(b, o->u.request.answer));
        bind_i64(st, 6, o->u.request.created_at);
        break;
    case OP_PAUSE:
        bind_text(st, 1, bstr(b, o->u.pause.queue));
        bind_text(st, 2, bstr(b, o->u.pause.tenant));
        bind_i64(st, 3, o->u.pause.paused);
        bind_i64(st, 4, sq_now_ms());
        break;
    case OP_ATTEMPT:
        bind_i64(st, 1, (long long)o->u.attempt.job_id);
        bind_i64(st, 2, (long long)o->u.attempt.token);
        bind_i64(st, 3, o->u.attempt.attempt);
        bind_text(st, 4, bstr(b, o->u.attempt.worker));
        bind_time(st, 5, o->u.attempt.leased_at);
        bind_time(st, 6, o->u.attempt.started_at);
        bind_i64(st, 7, o->u.attempt.finished_at);
        bind_text(st, 8, engine_attempt_outcome_name(o->u.attempt.outcome));
        bind_text(st, 9, engine_state_name((engine_state)o->u.attempt.job_state));
        bind_text(st, 10, bstr(b, o->u.attempt.error));
        bind_text(st, 11, bstr(b, o->u.attempt.stats));
        break;
    case OP_DEP:
        bind_i64(st, 1, (long long)o->u.dep.child);
        bind_i64(st, 2, (long long)o->u.dep.parent);
        bind_i64(st, 3, o->u.dep.pos);
        bind_text(st, 4, engine_deps_policy_name((engine_deps_policy)o->u.dep.policy));
        break;
    case OP_SCHEDULE:
    case OP_SCHEDULE_TICK:
    case OP_SCHEDULE_DELETE: {
        bind_sink k = {st, 1};
        store_param_sink out = {sink_i64, sink_text, sink_bool, &k};
        store_schedule_params(b, o, &out);
        break;
    }
    case OP_BATCH:
    case OP_BATCH_JOB: {
        bind_sink k = {st, 1};
        store_param_sink out = {sink_i64, sink_text, sink_bool, &k};
        store_batch_params(b, o, &out);
        break;
    }
    case OP_KEY_SETTING: {
        bind_text(st, 1, bstr(b, o->u.keyset.tenant));
        bind_text(st, 2, bstr(b, o->u.keyset.key));
        if (!o->u.keyset.set) break;
        bind_sink k = {st, 3};
        store_param_sink out = {sink_i64, sink_text, sink_bool, &k};
        store_settings_params(STORE_KEYS, &o->u.keyset.s, &out);
        bind_i64(st, k.at, sq_now_ms());
        break;
    }
    case OP_STEP:
    case OP_STEP_DONE:
    case OP_EVENT:
    case OP_EVENT_DELETE: {
        bind_sink k = {st, 1};
        store_param_sink out = {sink_i64, sink_text, sink_bool, &k};
        store_step_params(b, o, &out);
        break;
    }
    case OP_AUDIT: {
        bind_sink k = {st, 1};
        store_param_sink out = {sink_i64, sink_text, sink_bool, &k};
        store_audit_params(b, o, &out);
        break;
    }
    default: break; /* job rows are bound by bind_insert and bind_update */
    }
}

static const int op_stmt[] = {
    [OP_JOB_INSERT] = ST_INS_JOB,
    [OP_JOB_UPDATE] = ST_UPD_JOB,
    [OP_JOB_DELETE] = ST_DEL_JOB,
    [OP_TENANT] = ST_TENANT,
    [OP_QUEUE] = ST_QUEUE,
    [OP_IDEM] = ST_IDEM,
    [OP_TOKEN] = ST_TOKEN,
    [OP_TOKEN_REVOKE] = ST_REVOKE,
    [OP_REQUEST] = ST_REQUEST,
    [OP_PAUSE] = ST_PAUSE,
    [OP_ATTEMPT] = ST_ATTEMPT,
    [OP_SCHEDULE] = ST_SCHEDULE,
    [OP_SCHEDULE_TICK] = ST_SCHEDULE_TICK,
    [OP_SCHEDULE_DELETE] = ST_SCHEDULE_DELETE,
    [OP_DEP] = ST_DEP,
    [OP_BATCH] = ST_BATCH,
    [OP_BATCH_JOB] = ST_BATCH_JOB,
    [OP_AUDIT] = ST_AUDIT,
    [OP_STEP] = ST_STEP,
    [OP_STEP_DONE] = ST_STEP_DONE,
    [OP_EVENT] = ST_EVENT,
    [OP_EVENT_DELETE] = ST_EVENT_DEL,
};

/* Steps one statement; on failure rolls back and says why. */
static int step(store_t *s, sq *q, sqlite3_stmt *st, const char *what)
{
    int src = sqlite3_step(st);
    sqlite3_reset(st);
    if (src == SQLITE_DONE) return 0;
    int rc = sq_fail(s, q->db, src, what);
    sq_exec(q->db, "ROLLBACK");
    return rc;
}

/* An update whose job is not in the store: a broken invariant (every
 * update follows its job's committed insert), refused rather than written
 * as a new row or skipped. */
static int missing(store_t *s, sq *q, long long id)
{
    store_set_err(s, "sqlite: updating jobs: job %lld is not in the store", id);
    sq_exec(q->db, "ROLLBACK");
    return TENQ_ECORRUPT;
}

/* Job rows of one kind on their way: JOB_ROWS at a time through the many
 * rows statement, the last few one by one (run_end). */
typedef struct row_run {
    int one, many;
    int n;
    const group_row *row[JOB_ROWS];
} row_run;

static bool run_update(const row_run *r)
{
    return r->one != ST_INS_JOB;
}

static void run_bind(sqlite3_stmt *st, const row_run *r, int i, int o)
{
    if (run_update(r))
        bind_update(st, o, r->row[i]);
    else
        bind_insert(st, o, r->row[i]);
}

static int run_add(store_t *s, sq *q, row_run *r, const group_row *row)
{
    r->row[r->n++] = row;
    if (r->n < JOB_ROWS) return 0;
    sqlite3_stmt *st = q->st[r->many];
    bool update = run_update(r);
    for (int i = 0; i < JOB_ROWS; i++) run_bind(st, r, i, i * (update ? UPD_PARAMS : INS_PARAMS));
    r->n = 0;
    /* an update's insert side must not have run: it would leave the rowid */
    if (update) sqlite3_set_last_insert_rowid(q->db, 0);
    int rc = step(s, q, st, update ? "updating jobs" : "writing jobs");
    if (!rc && update && sqlite3_last_insert_rowid(q->db) != 0)
        rc = missing(s, q, sqlite3_last_insert_rowid(q->db));
    return rc;
}

static int run_end(store_t *s, sq *q, row_run *r)
{
    sqlite3_stmt *st = q->st[r->one];
    bool update = run_update(r);
    for (int i = 0; i < r->n; i++) {
        run_bind(st, r, i, 0);
        int rc = step(s, q, st, update ? "updating a job" : "writing a job");
        if (!rc && update && sqlite3_changes(q->db) == 0)
            rc = missing(s, q, (long long)r->row[i]->id);
        if (rc) return rc;
    }
    r->n = 0;
    return 0;
}

int sq_apply(store_t *s, const store_group *g, bool begin, bool commit)
{
    sq *q = s->impl;
    int rc = sq_prepare_all(s, q);
    if (rc) {
        if (!begin) sq_exec(q->db, "ROLLBACK");
        return rc;
    }
    int src = begin ? sqlite3_step(q->st[ST_BEGIN]) : SQLITE_DONE;
    if (begin) sqlite3_reset(q->st[ST_BEGIN]);
    if (src != SQLITE_DONE) return sq_fail(s, q->db, src, "begin");
    for (size_t i = 0; i < g->nother; i++) {
        if (g->other[i]->kind == OP_USAGE || g->other[i]->kind == OP_EVENT_INBOX_DONE)
            continue; /* for transactions: PostgreSQL's alone */
        const store_op *o = g->other[i];
        sqlite3_stmt *st =
            q->st[o->kind == OP_KEY_SETTING ? (o->u.keyset.set ? ST_KEY_SET : ST_KEY_DEL)
                                            : op_stmt[o->kind]];
        bind_other(st, g->other_b[i], g->other[i]);
        if ((rc = step(s, q, st, "writing"))) return rc;
    }
    row_run ins = {.one = ST_INS_JOB, .many = ST_INS_ROWS},
            upd = {.one = ST_UPD_JOB, .many = ST_UPD_ROWS},
            hot = {.one = ST_UPD_HOT, .many = ST_HOT_ROWS};
    for (size_t i = 0; i < g->nins && !rc; i++)
        if (!g->ins[i].dropped) rc = run_add(s, q, &ins, &g->ins[i]);
    for (size_t i = 0; i < g->nupd && !rc; i++)
        if (!g->upd[i].dropped)
            rc = run_add(s, q, group_row_hot(&g->upd[i]) ? &hot : &upd, &g->upd[i]);
    if (rc || (rc = run_end(s, q, &ins)) || (rc = run_end(s, q, &upd)) ||
        (rc = run_end(s, q, &hot)))
        return rc;
    if (g->ndel && (rc = step(s, q, q->st[ST_ID_FLOOR], "keeping the id floor"))) return rc;
    for (size_t i = 0; i < g->ndel; i++) {
        bind_i64(q->st[ST_DEL_JOB], 1, (long long)g->del[i]);
        if ((rc = step(s, q, q->st[ST_DEL_JOB], "deleting a job"))) return rc;
    }
    if (!commit) return 0;
    src = sqlite3_step(q->st[ST_COMMIT]);
    sqlite3_reset(q->st[ST_COMMIT]);
    if (src != SQLITE_DONE) {
        rc = sq_fail(s, q->db, src, "commit");
        sq_exec(q->db, "ROLLBACK");
        return rc;
    }
    return 0;
}

void sq_abandon(store_t *s)
{
    sq_exec(((sq *)s->impl)->db, "ROLLBACK");
}
