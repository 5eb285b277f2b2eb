// SPDX-License-Identifier: Apache-2.0
/* The PostgreSQL backend's writes.  A group of batches goes out in libpq's
 * pipeline mode: every statement of the group is sent, then one Sync, which
 * makes them one implicit transaction committed with one WAL flush; the
 * results are read after.  So a group costs one round trip, not one per job.
 * Job rows go as arrays, one statement for all inserts and one for all
 * updates; a group with many new rows sends them by COPY first, in an
 * explicit transaction the pipeline's last statement commits.  (Very large
 * groups are sent in chunks of 4,096 statements with a flush request in
 * between, so neither side's socket buffer can fill and deadlock the
 * pipeline.)  The first statement of every group is the fence. */
#include "pg.h"
#include "schema.h"

#include "base/xalloc.h"

#include <pthread.h>
#include <unistd.h>

/* Statements that write one row; job rows go many at a time (below). */

const char *const pg_stmt_name[PG_ST_N] = {"tenant",
                                           "queue",
                                           "idem",
                                           "token",
                                           "revoke",
                                           "fence",
                                           "idfloor",
                                           "request",
                                           "pause",
                                           "attempt",
                                           "sched",
                                           "sched_tick",
                                           "sched_del",
                                           "dep",
                                           "batch",
                                           "batch_job",
                                           "usage",
                                           "audit",
                                           "step",
                                           "step_done",
                                           "event",
                                           "event_del",
                                           "event_inbox_done",
                                           "key_set",
                                           "key_del"};
static const char *const stmt_sql[PG_ST_N] = {
    NULL,
    NULL,
    STORE_SQL_UPSERT_IDEM,
    STORE_SQL_INSERT_TOKEN,
    STORE_SQL_REVOKE_TOKEN,
    "SELECT tenq.fence(?1)",
    STORE_SQL_ID_FLOOR,
    STORE_SQL_INSERT_REQUEST,
    STORE_SQL_UPSERT_PAUSE,
    STORE_SQL_INSERT_ATTEMPT,
    STORE_SQL_UPSERT_SCHEDULE,
    STORE_SQL_TICK_SCHEDULE,
    STORE_SQL_DELETE_SCHEDULE,
    STORE_SQL_INSERT_DEP,
    STORE_SQL_UPSERT_BATCH,
    STORE_SQL_INSERT_BATCH_JOB,
    STORE_SQL_UPSERT_USAGE,
    STORE_SQL_INSERT_AUDIT,
    STORE_SQL_INSERT_STEP,
    STORE_SQL_STEP_DONE,
    STORE_SQL_INSERT_EVENT,
    STORE_SQL_DELETE_EVENT,
    "DELETE FROM tenq.event_inbox WHERE id = ?1",
    NULL,
    STORE_SQL_DELETE_KEY_SETTING,
};

#define CHUNK 4096

int pg_prepare_all(store_t *s, pg *p)
{
    if (p->prepared) return 0;
    /* This connection writes groups, loads and prunes: every row it looks
     * for it finds by key. Left to itself, the planner, seeing a small or
     * freshly filled table (stale statistics), hashed the whole table for
     * each group's UPDATE ... FROM unnest: 5 ms a group at 20,000 rows, the
     * whole cost of an ordered drain. */
    int rc = pg_run(s, p->w, "SET enable_hashjoin = off; SET enable_mergejoin = off", "settings");
    if (rc) return rc;
    for (int i = 0; i < PG_ST_N; i++) {
        char *sql = stmt_sql[i]         ? store_sql(stmt_sql[i], true)
                    : i == PG_ST_TENANT ? store_settings_upsert_sql(STORE_TENANTS, true)
                    : i == PG_ST_QUEUE  ? store_settings_upsert_sql(STORE_QUEUES, true)
                                        : store_settings_upsert_sql(STORE_KEYS, true);
        PGresult *res = PQprepare(p->w, pg_stmt_name[i], sql, 0, NULL);
        free(sql);
        bool ok = PQresultStatus(res) == PGRES_COMMAND_OK;
        int rc = ok ? 0 : pg_fail(s, p->w, res, "prepare");
        PQclear(res);
        if (rc) return rc;
    }
    p->prepared = true;
    return 0;
}

/* The schema version (0: no tenq schema yet) or a negative error. */
typedef struct params {
    const char *v[32];
    char num[32][24];
    int n;
} params;

static void p_text(params *ps, const char *v)
{
    ps->v[ps->n++] = v;
}
static void p_i64(params *ps, long long v)
{
    snprintf(ps->num[ps->n], sizeof ps->num[0], "%lld", v);
    ps->v[ps->n] = ps->num[ps->n];
    ps->n++;
}
static void p_time(params *ps, long long v)
{
    if (v)
        p_i64(ps, v);
    else
        p_text(ps, NULL);
}
static void p_bool(params *ps, bool v)
{
    p_text(ps, v ? "true" : "false");
}

static void sink_i64(void *ctx, long long v)
{
    p_i64(ctx, v);
}
static void sink_text(void *ctx, const char *v)
{
    p_text(ctx, v);
}
static void sink_bool(void *ctx, bool v)
{
    p_bool(ctx, v);
}

/* Parameters of the statements that write one row: tenants, queues,
 * idempotency keys, tokens. */
static int op_params(const store_batch *b, const store_op *o, params *ps)
{
    ps->n = 0;
    switch (o->kind) {
    case OP_TENANT:
    case OP_QUEUE: {
        bool tenant = o->kind == OP_TENANT;
        p_text(ps, bstr(b, tenant ? o->u.tenant.name : o->u.queue.name));
        store_param_sink out = {sink_i64, sink_text, sink_bool, ps};
        store_settings_params(tenant ? STORE_TENANTS : STORE_QUEUES,
                              tenant ? (const void *)&o->u.tenant.s : (const void *)&o->u.queue.s,
                              &out);
        p_i64(ps, pg_now_ms());
        return tenant ? PG_ST_TENANT : PG_ST_QUEUE;
    }
    case OP_IDEM:
        p_text(ps, bstr(b, o->u.idem.tenant));
        p_text(ps, bstr(b, o->u.idem.key));
        p_i64(ps, (long long)o->u.idem.id);
        p_text(ps, engine_state_name((engine_state)o->u.idem.state));
        p_bool(ps, o->u.idem.duplicate);
        p_bool(ps, o->u.idem.merged);
        p_i64(ps, o->u.idem.created_at);
        return PG_ST_IDEM;
    case OP_TOKEN:
        p_i64(ps, o->u.token.id);
        p_text(ps, bstr(b, o->u.token.hash));
        p_text(ps, bstr(b, o->u.token.role));
        p_text(ps, bstr(b, o->u.token.queues));
        p_i64(ps, o->u.token.created_at);
        p_time(ps, o->u.token.revoked_at);
        p_bool(ps, o->u.token.hide_data);
        return PG_ST_TOKEN;
    case OP_TOKEN_REVOKE:
        p_i64(ps, o->u.token.id);
        p_i64(ps, o->u.token.revoked_at);
        return PG_ST_REVOKE;
    case OP_REQUEST:
        p_text(ps, bstr(b, o->u.request.scope));
        p_text(ps, bstr(b, o->u.request.key));
        p_i64(ps, (long long)o->u.request.fingerprint);
        p_i64(ps, o->u.request.status);
        p_text(ps, bstr(b, o->u.request.answer));
        p_i64(ps, o->u.request.created_at);
        return PG_ST_REQUEST;
    case OP_PAUSE:
        p_text(ps, bstr(b, o->u.pause.queue));
        p_text(ps, bstr(b, o->u.pause.tenant));
        p_bool(ps, o->u.pause.paused);
        p_i64(ps, pg_now_ms());
        return PG_ST_PAUSE;
    case OP_ATTEMPT:
        p_i64(ps, (long long)o->u.attempt.job_id);
        p_i64(ps, (long long)o->u.attempt.token);
        p_i64(ps, o->u.attempt.attempt);
        p_text(ps, bstr(b, o->u.attempt.worker));
        p_time(ps, o->u.attempt.leased_at);
        p_time(ps, o->u.attempt.started_at);
        p_i64(ps, o->u.attempt.finished_at);
        p_text(ps, engine_attempt_outcome_name(o->u.attempt.outcome));
        p_text(ps, engine_state_name((engine_state)o->u.attempt.job_state));
        p_text(ps, bstr(b, o->u.attempt.error));
        p_text(ps, bstr(b, o->u.attempt.stats));
        return PG_ST_ATTEMPT;
    case OP_DEP:
        p_i64(ps, (long long)o->u.dep.child);
        p_i64(ps, (long long)o->u.dep.parent);
        p_i64(ps, o->u.dep.pos);
        p_text(ps, engine_deps_policy_name((engine_deps_policy)o->u.dep.policy));
        return PG_ST_DEP;
    case OP_SCHEDULE:
    case OP_SCHEDULE_TICK:
    case OP_SCHEDULE_DELETE: {
        store_param_sink out = {sink_i64, sink_text, sink_bool, ps};
        store_schedule_params(b, o, &out);
        return o->kind == OP_SCHEDULE        ? PG_ST_SCHEDULE
               : o->kind == OP_SCHEDULE_TICK ? PG_ST_SCHEDULE_TICK
                                             : PG_ST_SCHEDULE_DELETE;
    }
    case OP_BATCH:
    case OP_BATCH_JOB: {
        store_param_sink out = {sink_i64, sink_text, sink_bool, ps};
        store_batch_params(b, o, &out);
        return o->kind == OP_BATCH ? PG_ST_BATCH : PG_ST_BATCH_JOB;
    }
    case OP_KEY_SETTING: {
        p_text(ps, bstr(b, o->u.keyset.tenant));
        p_text(ps, bstr(b, o->u.keyset.key));
        if (!o->u.keyset.set) return PG_ST_KEY_DEL;
        store_param_sink out = {sink_i64, sink_text, sink_bool, ps};
        store_settings_params(STORE_KEYS, &o->u.keyset.s, &out);
        p_i64(ps, pg_now_ms());
        return PG_ST_KEY_SET;
    }
    case OP_STEP:
    case OP_STEP_DONE:
    case OP_EVENT:
    case OP_EVENT_DELETE:
    case OP_EVENT_INBOX_DONE: {
        store_param_sink out = {sink_i64, sink_text, sink_bool, ps};
        store_step_params(b, o, &out);
        return o->kind == OP_STEP           ? PG_ST_STEP
               : o->kind == OP_STEP_DONE    ? PG_ST_STEP_DONE
               : o->kind == OP_EVENT        ? PG_ST_EVENT
               : o->kind == OP_EVENT_DELETE ? PG_ST_EVENT_DEL
                                            : PG_ST_EVENT_INBOX_DONE;
    }
    case OP_USAGE:
        p_text(ps, o->u.usage.queue ? "queue" : "tenant");
        p_text(ps, bstr(b, o->u.usage.name));
        p_i64(ps, (long long)o->u.usage.queued);
        p_i64(ps, (long long)o->u.usage.bytes);
        p_i64(ps, pg_now_ms());
        return PG_ST_USAGE;
    case OP_AUDIT: {
        store_param_sink out = {sink_i64, sink_text, sink_bool, ps};
        store_audit_params(b, o, &out);
        return PG_ST_AUDIT;
    }
    default: break;
    }
    return -1;
}

/* ---- many job rows in one statement ---------------------------------------------
 * Job rows go as arrays, one per column, unpacked with unnest(): one
 * statement inserts (or updates) thousands of rows, where one statement per
 * row would spend the server's time parsing, planning and replying. */

typedef struct abuf {
    char *p;
    size_t n, cap;
    bool first;
} abuf;

static void a_put(abuf *a, const char *s, size_t n)
{
    if (a->n + n + 1 > a->cap) {
        while (a->n + n + 1 > a->cap) a->cap = a->cap ? a->cap * 2 : 256;
        a->p = xrealloc(a->p, a->cap);
    }
    memcpy(a->p + a->n, s, n);
    a->n += n;
    a->p[a->n] = 0;
}

static void a_sep(abuf *a)
{
    if (a->first) {
        a_put(a, "{", 1);
        a->first = false;
    } else {
        a_put(a, ",", 1);
    }
}

static void a_i64(abuf *a, long long v)
{
    char num[24];
    a_sep(a);
    a_put(a, num, (size_t)snprintf(num, sizeof num, "%lld", v));
}

static void a_time(abuf *a, long long v)
{
    if (v) {
        a_i64(a, v);
    } else {
        a_sep(a);
        a_put(a, "NULL", 4);
    }
}

static void a_bool(abuf *a, bool v)
{
    a_sep(a);
    a_put(a, v ? "t" : "f", 1);
}

/* An array element: quoted, with \ and " escaped; NULL unquoted. */
static void a_text(abuf *a, const char *v)
{
    a_sep(a);
    if (!v) {
        a_put(a, "NULL", 4);
        return;
    }
    a_put(a, "\"", 1);
    const char *run = v;
    for (const char *c = v; *c; c++) {
        if (*c != '"' && *c != '\\') continue;
        a_put(a, run, (size_t)(c - run));
        a_put(a, "\\", 1);
        run = c;
    }
    a_put(a, run, strlen(run));
    a_put(a, "\"", 1);
}

static void a_end(abuf *a)
{
    if (a->first) a_put(a, "{", 1);
    a_put(a, "}", 1);
}

#define INS_COLS STORE_JOB_NINS
#define UPD_COLS STORE_JOB_NUPD

/* The job statements, made once from the table (columns.h): an insert of
 * every column, and an update of those an update carries (a KEPT column's
 * NULL keeps the stored value), each from one array per column.  A row
 * completed in an application's transaction (tenq.complete) takes no
 * update but that same success; every row must be updated, or the group
 * fails (tenq.expect_rows) and the server reloads from the store. */
static char *sql_ins, *sql_upd;

static void a_str(abuf *a, const char *s)
{
    a_put(a, s, strlen(s));
}

static void put_arrays(abuf *a, bool insert)
{
    char num[48];
    int n = 0;
    for (int c = 0; c < STORE_JOB_NINS; c++) {
        const store_job_column *col = &store_job_columns[c];
        if (!insert && !col->updated) continue;
        snprintf(num, sizeof num, "%s$%d::%s[]", n ? ", " : "", n + 1, col->pgtype);
        a_str(a, num);
        n++;
    }
}

static void make_job_sql(void)
{
    abuf a = {0};
    a_str(&a, "INSERT INTO tenq.jobs (" STORE_JOB_INSERT_COLUMNS ") SELECT * FROM unnest(");
    put_arrays(&a, true);
    a_str(&a, ")");
    sql_ins = a.p;
    abuf u = {0};
    a_str(&u, "WITH u AS (SELECT * FROM unnest(");
    put_arrays(&u, false);
    a_str(&u, ") AS u(");
    bool first = true;
    for (int c = 0; c < STORE_JOB_NINS; c++) {
        if (!store_job_columns[c].updated) continue;
        if (!first) a_str(&u, ", ");
        a_str(&u, store_job_columns[c].name);
        first = false;
    }
    a_str(&u, ")), w AS (UPDATE tenq.jobs AS j SET ");
    first = true;
    for (int c = 1; c < STORE_JOB_NINS; c++) {
        const store_job_column *col = &store_job_columns[c];
        if (!col->updated) continue;
        char set[200];
        if (col->kept)
            snprintf(set, sizeof set, "%s%s = coalesce(u.%s, j.%s)", first ? "" : ", ", col->name,
                     col->name, col->name);
        else
            snprintf(set, sizeof set, "%s%s = u.%s", first ? "" : ", ", col->name, col->name);
        a_str(&u, set);
        first = false;
    }
    a_str(&u, " FROM u WHERE j.id = u.id AND (NOT j.done_in_tx OR (u.state = 'succeeded' AND "
              "u.lease_token = j.lease_token)) RETURNING 1) SELECT tenq.expect_rows((SELECT "
              "count(*) FROM w), (SELECT count(*) FROM u))");
    sql_upd = u.p;
}

const char *pg_job_sql(bool insert)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, make_job_sql);
    return insert ? sql_ins : sql_upd;
}

static const char *const SQL_DEL = "DELETE FROM tenq.jobs WHERE id = ANY($1::bigint[])";

/* Where a row's values go: one array per column (`cols`, for the
 * statements above), or one line of COPY's text format (`line`). */
typedef struct rowsink {
    abuf *cols;
    abuf *line;
    int col;
} rowsink;

/* COPY text: tab between values, \N for NULL, a backslash before \, tab,
 * newline and carriage return (so "\." can never end the data early). */
static void line_text(abuf *a, const char *v)
{
    const char *run = v;
    for (const char *c = v; *c; c++) {
        const char *esc = *c == '\\'   ? "\\\\"
                          : *c == '\t' ? "\\t"
                          : *c == '\n' ? "\\n"
                          : *c == '\r' ? "\\r"
                                       : NULL;
        if (!esc) continue;
        a_put(a, run, (size_t)(c - run));
        a_put(a, esc, 2);
        run = c + 1;
    }
    a_put(a, run, strlen(run));
}

static void k_text(rowsink *k, const char *v)
{
    if (!k->line) {
        a_text(&k->cols[k->col++], v);
        return;
    }
    if (k->col++) a_put(k->line, "\t", 1);
    if (v)
        line_text(k->line, v);
    else
        a_put(k->line, "\\N", 2);
}

static void k_i64(rowsink *k, long long v)
{
    if (!k->line) {
        a_i64(&k->cols[k->col++], v);
        return;
    }
    char num[24];
    k_text(k, (snprintf(num, sizeof num, "%lld", v), num));
}

static void k_time(rowsink *k, long long v)
{
    if (v)
        k_i64(k, v);
    else if (k->line)
        k_text(k, NULL);
    else
        a_time(&k->cols[k->col++], 0);
}

static void k_bool(rowsink *k, bool v)
{
    if (k->line)
        k_text(k, v ? "t" : "f");
    else
        a_bool(&k->cols[k->col++], v);
}

/* A job's row: every column for an insert (STORE_JOB_INSERT_COLUMNS), the
 * ones an update carries for an update, in the table's order, each by its
 * kind (columns.h). */
#define PUT_ID(k, r, f)       k_i64(k, (long long)(r)->f);
#define PUT_NUM(k, r, f)      k_i64(k, (long long)(r)->f);
#define PUT_TIME(k, r, f)     k_time(k, (long long)(r)->f);
#define PUT_BOOL(k, r, f)     k_bool(k, (r)->f);
#define PUT_STATE(k, r, f)    k_text(k, engine_state_name((engine_state)(r)->f));
#define PUT_TEXT(k, r, f)     k_text(k, (r)->f);
#define PUT_ARGS(k, r, f)     k_text(k, (r)->f);
#define PUT_PAYLOADS(k, r, f) k_text(k, (r)->f);
#define PUT_OPTIONS(k, r, f)  k_text(k, (r)->f);
#define PUT_LIVE(k, r, f)     k_time(k, group_row_live(r));
#define PUT(column, type, kind, when, hot, field, flag)                                            \
    if (insert || STORE_JW_UPDATED(when)) PUT_##kind(k, r, field)

static void write_row(rowsink *k, const group_row *r, bool insert)
{
    k->col = 0;
    STORE_JOB_COLUMNS_TABLE(PUT)
    if (k->line) a_put(k->line, "\n", 1);
}

#define ROWS_PER_STATEMENT 5000

/* Sends the rows as statements of up to ROWS_PER_STATEMENT rows; returns how
 * many statements were sent, or -1. */
static long send_rows(pg *p, const group_row *rows, size_t n, bool insert)
{
    int ncols = insert ? INS_COLS : UPD_COLS;
    abuf cols[INS_COLS];
    long sent = 0;
    size_t i = 0;
    while (i < n) {
        memset(cols, 0, sizeof cols);
        for (int c = 0; c < ncols; c++) cols[c].first = true;
        size_t in_stmt = 0;
        for (; i < n && in_stmt < ROWS_PER_STATEMENT; i++) {
            if (rows[i].dropped) continue;
            rowsink k = {.cols = cols};
            write_row(&k, &rows[i], insert);
            in_stmt++;
        }
        if (in_stmt) {
            const char *vals[INS_COLS];
            for (int c = 0; c < ncols; c++) {
                a_end(&cols[c]);
                vals[c] = cols[c].p;
            }
            int ok = PQsendQueryParams(p->w, pg_job_sql(insert), ncols, NULL, vals, NULL, NULL, 0);
            if (!ok) sent = -1;
            if (ok) sent++;
        }
        for (int c = 0; c < ncols; c++) free(cols[c].p);
        if (sent < 0) return -1;
    }
    return sent;
}

/* Queues a statement without parameters: 1, or -1. */
static long send_plain(pg *p, const char *sql)
{
    return PQsendQueryParams(p->w, sql, 0, NULL, NULL, NULL, NULL, 0) ? 1 : -1;
}

/* The rows of the inbox taken in, and of tx_outcomes applied: one
 * statement each, or none. */
static long send_tx_done(pg *p, const store_group *g)
{
    long sent = 0;
    if (g->ninbox) {
        abuf a = {.first = true};
        for (size_t i = 0; i < g->ninbox; i++) a_i64(&a, (long long)g->inbox_done[i]);
        a_end(&a);
        const char *v[1] = {a.p};
        int ok = PQsendQueryParams(p->w, "DELETE FROM tenq.inbox WHERE id = ANY($1::bigint[])", 1,
                                   NULL, v, NULL, NULL, 0);
        free(a.p);
        if (!ok) return -1;
        sent++;
    }
    if (g->ntx) {
        abuf ids = {.first = true}, toks = {.first = true};
        for (size_t i = 0; i < g->ntx; i++) {
            a_i64(&ids, (long long)g->tx_id[i]);
            a_i64(&toks, (long long)g->tx_token[i]);
        }
        a_end(&ids);
        a_end(&toks);
        const char *v[2] = {ids.p, toks.p};
        int ok = PQsendQueryParams(p->w,
                                   "DELETE FROM tenq.tx_outcomes WHERE (id, token) IN (SELECT * "
                                   "FROM unnest($1::bigint[], $2::bigint[]))",
                                   2, NULL, v, NULL, NULL, 0);
        free(ids.p);
        free(toks.p);
        if (!ok) return -1;
        sent++;
    }
    return sent;
}

static long send_deletes(pg *p, const uint64_t *ids, size_t n)
{
    if (n == 0) return 0;
    abuf a = {.first = true};
    for (size_t i = 0; i < n; i++) a_i64(&a, (long long)ids[i]);
    a_end(&a);
    const char *v[1] = {a.p};
    int ok = PQsendQueryParams(p->w, SQL_DEL, 1, NULL, v, NULL, NULL, 0);
    free(a.p);
    return ok ? 1 : -1;
}

/* Inserts this many rows or more go by COPY (cheaper to parse than arrays:
 * measured: docs/decisions/0010), inside an explicit transaction that the
 * pipeline's last statement commits; fewer go in the pipeline's one round
 * trip. */
#define COPY_MIN_ROWS 200

static const char *const SQL_COPY = "COPY tenq.jobs (" STORE_JOB_INSERT_COLUMNS ") FROM STDIN";

static size_t live_rows(const group_row *rows, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += !rows[i].dropped;
    return k;
}

/* Sends the rows with COPY, in the transaction already begun. */
static int copy_rows(store_t *s, pg *p, const group_row *rows, size_t n)
{
    PGresult *res = PQexec(p->w, SQL_COPY);
    if (PQresultStatus(res) != PGRES_COPY_IN) {
        int rc = pg_fail(s, p->w, res, "copy");
        PQclear(res);
        return rc;
    }
    PQclear(res);
    abuf a = {0};
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) {
        if (rows[i].dropped) continue;
        rowsink k = {.line = &a};
        write_row(&k, &rows[i], true);
        if (a.n >= 256 * 1024) {
            ok = PQputCopyData(p->w, a.p, (int)a.n) == 1;
            a.n = 0;
        }
    }
    if (ok && a.n) ok = PQputCopyData(p->w, a.p, (int)a.n) == 1;
    free(a.p);
    if (PQputCopyEnd(p->w, ok ? NULL : "tenq: sending the rows failed") != 1) ok = false;
    res = PQgetResult(p->w);
    int rc = ok && PQresultStatus(res) == PGRES_COMMAND_OK ? 0 : pg_fail(s, p->w, res, "copy");
    PQclear(res);
    while ((res = PQgetResult(p->w)) != NULL) PQclear(res);
    return rc;
}

/* Reads the results of `count` queued statements; the first error wins. */
static int read_results(store_t *s, PGconn *c, size_t count, int rc)
{
    for (size_t i = 0; i < count; i++) {
        PGresult *res;
        bool first = true;
        while ((res = PQgetResult(c)) != NULL) {
            ExecStatusType st = PQresultStatus(res);
            if (first && rc == 0 && st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
                rc = st == PGRES_PIPELINE_ABORTED ? TENQ_EIO : pg_fail(s, c, res, "writing");
            first = false;
            PQclear(res);
        }
        if (PQstatus(c) != CONNECTION_OK) return rc ? rc : pg_fail(s, c, NULL, "writing");
    }
    return rc;
}

/* The fence on its own, inside a transaction already begun: 0, or
 * TENQ_ENOT_LEADER when the term is over (tenq.fence). */
int pg_fence(store_t *s, pg *p, const char *term)
{
    const char *v[1] = {term};
    PGresult *res = PQexecPrepared(p->w, pg_stmt_name[PG_ST_FENCE], 1, v, NULL, NULL, 0);
    int rc = PQresultStatus(res) == PGRES_TUPLES_OK ? 0 : pg_fail(s, p->w, res, "fence");
    PQclear(res);
    return rc;
}

int pg_apply(store_t *s, const store_group *g, bool begin, bool commit)
{
    (void)begin; /* no chains here (no .abandon): every group begins and commits */
    (void)commit;
    pg *p = s->impl;
    int rc = pg_ensure_connected(s, p);
    if (!rc) rc = pg_prepare_all(s, p);
    if (rc) return rc;
    bool copy = live_rows(g->ins, g->nins) >= COPY_MIN_ROWS;
    char term[24];
    snprintf(term, sizeof term, "%llu", (unsigned long long)g->term);
    const char *fence_arg[1] = {term};
    if (copy) {
        rc = pg_run(s, p->w, "BEGIN", "begin");
        if (!rc && g->term) rc = pg_fence(s, p, term);
        if (!rc) rc = copy_rows(s, p, g->ins, g->nins);
        if (rc) {
            if (PQstatus(p->w) == CONNECTION_OK) pg_run(s, p->w, "ROLLBACK", "rollback");
            return rc;
        }
    }
    if (!PQenterPipelineMode(p->w)) {
        rc = pg_fail(s, p->w, NULL, "pipeline");
        if (copy) pg_run(s, p->w, "ROLLBACK", "rollback");
        return rc;
    }
    params ps;
    long sent = 0;
    /* First in the transaction: the term still leads (tenq.fence). */
    if (!copy && g->term) {
        if (!PQsendQueryPrepared(p->w, pg_stmt_name[PG_ST_FENCE], 1, fence_arg, NULL, NULL, 0))
            rc = pg_fail(s, p->w, NULL, "sending");
        else
            sent++;
    }
    for (size_t i = 0; i < g->nother && !rc; i++) {
        int st = op_params(g->other_b[i], g->other[i], &ps);
        if (!PQsendQueryPrepared(p->w, pg_stmt_name[st], ps.n, ps.v, NULL, NULL, 0))
            rc = pg_fail(s, p->w, NULL, "sending");
        else
            sent++;
        if (sent == CHUNK) {
            /* Let the server flush what it has answered so far. */
            if (!PQsendFlushRequest(p->w) || PQflush(p->w) != 0)
                rc = pg_fail(s, p->w, NULL, "sending");
            else
                rc = read_results(s, p->w, (size_t)sent, 0);
            sent = 0;
        }
    }
    /* Each step queues its statements (k of them) or fails the group. */
#define STEP(expr)                                                                                 \
    do {                                                                                           \
        long k = rc ? 0 : (expr);                                                                  \
        if (k < 0)                                                                                 \
            rc = pg_fail(s, p->w, NULL, "sending");                                                \
        else                                                                                       \
            sent += k;                                                                             \
    } while (0)
    STEP(copy ? 0 : send_rows(p, g->ins, g->nins, true));
    STEP(send_rows(p, g->upd, g->nupd, false));
    if (g->ndel)
        STEP(PQsendQueryPrepared(p->w, pg_stmt_name[PG_ST_ID_FLOOR], 0, NULL, NULL, NULL, 0) ? 1
                                                                                             : -1);
    STEP(send_deletes(p, g->del, g->ndel));
    STEP(send_tx_done(p, g));
    STEP(copy ? send_plain(p, "COMMIT") : 0);
#undef STEP
    if (s->opts.test_sync_delay_ms > 0 && !rc) {
        /* the crash tests' seam: every statement run, the commit not asked */
        if (PQsendFlushRequest(p->w)) PQflush(p->w);
        usleep((useconds_t)s->opts.test_sync_delay_ms * 1000);
    }
    /* Always end with a Sync, even after an error: it closes the pipeline and
     * commits the group as one implicit transaction (or ends the explicit one
     * COPY began, whose COMMIT is the last statement). */
    if (!PQpipelineSync(p->w) && !rc) rc = pg_fail(s, p->w, NULL, "sync");
    rc = read_results(s, p->w, (size_t)sent, rc);
    PGresult *res;
    while (PQstatus(p->w) == CONNECTION_OK && (res = PQgetResult(p->w)) != NULL) {
        ExecStatusType st = PQresultStatus(res);
        /* an error here is the implicit transaction's commit failing */
        if (st == PGRES_FATAL_ERROR && !rc) rc = pg_fail(s, p->w, res, "commit");
        PQclear(res);
        if (st == PGRES_PIPELINE_SYNC) break;
    }
    if (PQstatus(p->w) != CONNECTION_OK) {
        if (!rc) rc = pg_fail(s, p->w, NULL, "commit");
        return rc;
    }
    PQexitPipelineMode(p->w);
    if (rc && PQtransactionStatus(p->w) != PQTRANS_IDLE) pg_run(s, p->w, "ROLLBACK", "rollback");
    return rc;
}
