// SPDX-License-Identifier: Apache-2.0
/* Connections to PostgreSQL (pg_connect, and the write connection made
 * again when lost: pg_ensure_connected), their errors as tenq's (pg_fail,
 * with the store's message), a statement run alone (pg_run), the wall
 * clock (pg_now_ms): what every file of the backend calls. */
#include "pg.h"
#include "schema.h"

#include <time.h>

int64_t pg_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- errors ------------------------------------------------------------------- */

static int map_result(PGconn *c, const PGresult *res)
{
    if (PQstatus(c) != CONNECTION_OK) return TENQ_ECONNECT;
    const char *code = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    if (!code) return TENQ_EIO;
    if (strcmp(code, STORE_PG_FENCE_STATE) == 0) return TENQ_ENOT_LEADER;
    if (strncmp(code, "23", 2) == 0) return TENQ_ECONSTRAINT;
    if (strcmp(code, "53100") == 0) return TENQ_ENOSPACE;
    if (strncmp(code, "53", 2) == 0) return TENQ_EUNAVAILABLE;
    if (strncmp(code, "57P", 3) == 0 || strncmp(code, "08", 2) == 0) return TENQ_ECONNECT;
    if (strncmp(code, "XX", 2) == 0) return TENQ_ECORRUPT;
    return TENQ_EIO;
}

int pg_fail(store_t *s, PGconn *c, const PGresult *res, const char *what)
{
    const char *msg = res ? PQresultErrorMessage(res) : "";
    if (!msg || !*msg) msg = PQerrorMessage(c);
    char clean[400];
    snprintf(clean, sizeof clean, "%s", msg ? msg : "");
    size_t n = strlen(clean);
    while (n && (clean[n - 1] == '\n' || clean[n - 1] == ' ')) clean[--n] = 0;
    store_set_err(s, "postgres: %s: %s", what, clean);
    return map_result(c, res);
}

int pg_run(store_t *s, PGconn *c, const char *sql, const char *what)
{
    PGresult *res = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(res);
    int rc = (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) ? 0 : pg_fail(s, c, res, what);
    PQclear(res);
    return rc;
}

/* ---- connecting ------------------------------------------------------------------- */

static void quiet(void *arg, const char *msg)
{
    (void)arg;
    (void)msg; /* NOTICEs ("schema already exists") are not for the log */
}

/* libpq's keywords before the URL (which may override them), then after it
 * (which it may not). */
static const char *const conn_defaults[][2] = {
    {"connect_timeout", "3"},     {"keepalives", "1"},       {"keepalives_idle", "10"},
    {"keepalives_interval", "3"}, {"keepalives_count", "3"}, {"tcp_user_timeout", "15000"},
};
#define N_DEFAULTS (sizeof conn_defaults / sizeof conn_defaults[0])

PGconn *pg_connect(const pg *p, char *errbuf, size_t errlen)
{
    const char *keys[N_DEFAULTS + 3], *vals[N_DEFAULTS + 3];
    size_t n = 0;
    for (; n < N_DEFAULTS; n++) {
        keys[n] = conn_defaults[n][0];
        vals[n] = conn_defaults[n][1];
    }
    keys[n] = "dbname";
    vals[n++] = p->url;
    keys[n] = "application_name";
    vals[n++] = p->app;
    keys[n] = vals[n] = NULL;
    PGconn *c = PQconnectdbParams(keys, vals, 1);
    if (PQstatus(c) != CONNECTION_OK) {
        snprintf(errbuf, errlen, "cannot connect to PostgreSQL: %s", PQerrorMessage(c));
        size_t len = strlen(errbuf);
        while (len && errbuf[len - 1] == '\n') errbuf[--len] = 0;
        PQfinish(c);
        return NULL;
    }
    PQsetNoticeProcessor(c, quiet, NULL);
    return c;
}

/* The write connection, connected again if it was lost (under db_lock). */
int pg_ensure_connected(store_t *s, pg *p)
{
    if (PQstatus(p->w) == CONNECTION_OK && PQpipelineStatus(p->w) == PQ_PIPELINE_OFF) return 0;
    /* A new connection, not PQreset: a connection lost inside a pipeline
     * stays in pipeline mode across PQreset, and every later synchronous
     * call on it fails ("not allowed in pipeline mode"). */
    char err[512];
    PGconn *c = pg_connect(p, err, sizeof err);
    p->prepared = false;
    if (!c) {
        store_set_err(s, "postgres: connection lost and not back yet: %s", err);
        return TENQ_ECONNECT;
    }
    PQfinish(p->w);
    p->w = c;
    return 0;
}
