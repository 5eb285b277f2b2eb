// SPDX-License-Identifier: Apache-2.0
/* Elections on PostgreSQL: which of the servers sharing a database leads it.
 *
 * The leader holds a session advisory lock (LEADER_LOCK) on its control
 * connection, and the row tenq.leader: its node, its URL, its term, and
 * until when it leads (expires_at, by the database's clock), which it
 * renews every so often.  A campaign takes the lock if it is free (a leader
 * that dies, kill -9 included, loses its connections and so the lock at
 * once) and then counts a new term in the row; a leader that stopped
 * renewing without dying (a pause, a stall) keeps its connections, so a
 * standby that finds its TTL passed ends them (pg_terminate_backend on its
 * application_name, "tenq:<node>"), and the next campaign wins.  A new term
 * takes the row FOR UPDATE, which waits for every write still under way
 * under the old term (tenq.fence holds the row FOR KEY SHARE in each write
 * transaction) and refuses every one after it.  A leader that resigns
 * expires its row and NOTIFYs tenq_leader, which every standby LISTENs to.
 *
 * Why a lock and a row: the lock notices a dead leader at once, which a TTL
 * alone would not (River and Oban wait for theirs, 15 and 30 s); the row
 * bounds a paused one, which a lock alone never releases; the term in the
 * row fences every write.  docs/decisions/0001-one-leader-per-store.md. */
#include "pg.h"
#include "schema.h"

#include <poll.h>
#include <stdio.h>
#include <string.h>

#define LEADER_LOCK  7364747
#define NOW_MS       "(extract(epoch from clock_timestamp()) * 1000)::bigint"
#define LOCK_TIMEOUT "2s" /* the wait of a new term for writes under the old one */

/* The control connection, made (and listening) when there is none or it
 * was lost.  A new one holds no lock: a campaign takes it again. */
static int control(store_t *s, pg *p)
{
    if (p->c && PQstatus(p->c) == CONNECTION_OK) return 0;
    if (p->c) PQfinish(p->c);
    char err[512];
    p->c = pg_connect(p, err, sizeof err);
    if (!p->c) {
        store_set_err(s, "postgres: %s", err);
        return TENQ_ECONNECT;
    }
    int rc = pg_run(s, p->c, "LISTEN tenq_leader; LISTEN tenq_inbox", "listening for the leader");
    if (rc) {
        PQfinish(p->c);
        p->c = NULL;
    }
    return rc;
}

/* One statement with text parameters on the control connection: 0 with
 * *out its result (the caller clears it), or the error. */
static int query(store_t *s, pg *p, const char *sql, int n, const char *const *v, PGresult **out,
                 const char *what)
{
    PGresult *res = PQexecParams(p->c, sql, n, NULL, v, NULL, NULL, 0);
    ExecStatusType st = PQresultStatus(res);
    if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
        int rc = pg_fail(s, p->c, res, what);
        const char *code = PQresultErrorField(res, PG_DIAG_SQLSTATE);
        if (code && !strcmp(code, "55P03")) rc = TENQ_ETIMEOUT; /* lock_timeout */
        PQclear(res);
        return rc;
    }
    *out = res;
    return 0;
}

/* Takes the leader's lock if it is free (or this session holds it: taken
 * once, however often asked): 1 taken, 0 held by another, or an error. */
static int try_lock(store_t *s, pg *p)
{
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT CASE WHEN EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND "
             "pid = pg_backend_pid() AND classid = 0 AND objid = %d AND objsubid = 1) THEN true "
             "ELSE pg_try_advisory_lock(%d) END",
             LEADER_LOCK, LEADER_LOCK);
    PGresult *res = NULL;
    int rc = query(s, p, sql, 0, NULL, &res, "taking the leader's lock");
    if (rc) return rc;
    rc = PQgetvalue(res, 0, 0)[0] == 't';
    PQclear(res);
    return rc;
}

static void copy_text(char *dst, size_t len, const char *v)
{
    snprintf(dst, len, "%s", v ? v : "");
}

static int read_leader(store_t *s, pg *p, store_leader *who)
{
    PGresult *res = NULL;
    int rc = query(s, p,
                   "SELECT term, coalesce(node, ''), coalesce(advertise, ''), coalesce(host, ''), "
                   "coalesce(pid, 0), coalesce(expires_at, 0) - " NOW_MS
                   " FROM tenq.leader WHERE id = 1",
                   0, NULL, &res, "reading the leader");
    if (rc) return rc;
    if (PQntuples(res) == 1) {
        who->term = strtoull(PQgetvalue(res, 0, 0), NULL, 10);
        copy_text(who->node, sizeof who->node, PQgetvalue(res, 0, 1));
        copy_text(who->advertise, sizeof who->advertise, PQgetvalue(res, 0, 2));
        copy_text(who->host, sizeof who->host, PQgetvalue(res, 0, 3));
        who->pid = atoi(PQgetvalue(res, 0, 4));
        who->expires_in_ms = strtoll(PQgetvalue(res, 0, 5), NULL, 10);
    }
    PQclear(res);
    return 0;
}

/* Ends every connection of the server `node` (a leader whose TTL passed):
 * its lock goes, and its writes under way are rolled back. */
static int evict(store_t *s, pg *p, const char *node, int *ended)
{
    char app[64];
    snprintf(app, sizeof app, "tenq:%.40s", node);
    const char *v[1] = {app};
    PGresult *res = NULL;
    int rc = query(s, p,
                   "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM "
                   "pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()",
                   1, v, &res, "ending the connections of a leader whose TTL passed");
    if (rc) return rc;
    *ended = atoi(PQgetvalue(res, 0, 0));
    PQclear(res);
    return 0;
}

/* A new term for `me`, committed.  from: 0 when a campaign just took the
 * lock, else the term `me` leads under, which must still be the row's. */
static int bump(store_t *s, pg *p, const store_node *me, uint64_t from, uint64_t *term)
{
    char from_s[24], pid_s[24], ttl_s[24];
    snprintf(from_s, sizeof from_s, "%llu", (unsigned long long)from);
    snprintf(pid_s, sizeof pid_s, "%d", me->pid);
    snprintf(ttl_s, sizeof ttl_s, "%lld", (long long)me->ttl_ms);
    const char *v[6] = {me->node, me->advertise, me->host, pid_s, ttl_s, from_s};
    int rc = pg_run(s, p->c, "BEGIN; SET LOCAL lock_timeout = '" LOCK_TIMEOUT "'", "new term");
    PGresult *res = NULL;
    if (!rc)
        rc = query(s, p, "SELECT term, coalesce(node, '') FROM tenq.leader WHERE id = 1 FOR UPDATE",
                   0, NULL, &res, "new term");
    if (!rc &&
        (PQntuples(res) != 1 || (from && (strtoull(PQgetvalue(res, 0, 0), NULL, 10) != from ||
                                          strcmp(PQgetvalue(res, 0, 1), me->node) != 0)))) {
        store_set_err(s, "postgres: term %llu is over: another server leads",
                      (unsigned long long)from);
        rc = TENQ_ENOT_LEADER;
    }
    PQclear(res);
    res = NULL;
    if (!rc)
        rc = query(s, p,
                   "UPDATE tenq.leader SET term = term + 1, node = $1, advertise = $2, host = $3, "
                   "pid = $4, elected_at = CASE WHEN $6::text = '0' THEN " NOW_MS
                   " ELSE elected_at END, renewed_at = " NOW_MS ", expires_at = " NOW_MS
                   " + $5::bigint WHERE id = 1 RETURNING term",
                   6, v, &res, "new term");
    if (!rc) *term = strtoull(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    if (!rc) rc = pg_run(s, p->c, "COMMIT", "new term");
    if (rc && PQstatus(p->c) == CONNECTION_OK) pg_run(s, p->c, "ROLLBACK", "rollback");
    return rc; /* TENQ_ETIMEOUT: a write under the old term held the row */
}

int pg_campaign(store_t *s, const store_node *me, uint64_t *term, store_leader *who)
{
    pg *p = s->impl;
    int rc = control(s, p);
    if (rc) return rc;
    int got = try_lock(s, p);
    if (got < 0) return got;
    if (!got) {
        if ((rc = read_leader(s, p, who)) != 0) return rc;
        int ended = 0;
        if (who->node[0] && who->expires_in_ms <= 0 && strcmp(who->node, me->node) != 0 &&
            (rc = evict(s, p, who->node, &ended)) != 0)
            return rc;
        who->evicted = ended > 0;
        return 0;
    }
    /* Ours: count a new term.  Should a write of the last leader hold the
     * row past the lock timeout (a leader stalled inside a transaction),
     * its connections are ended and the term counted again. */
    for (int attempt = 0; attempt < 3; attempt++) {
        rc = bump(s, p, me, 0, term);
        if (rc != TENQ_ETIMEOUT) break;
        int ended = 0;
        if (read_leader(s, p, who) == 0 && who->node[0] && strcmp(who->node, me->node) != 0)
            evict(s, p, who->node, &ended);
    }
    if (rc) {
        if (PQstatus(p->c) == CONNECTION_OK) pg_run(s, p->c, "SELECT pg_advisory_unlock_all()", "");
        return rc;
    }
    return 1;
}

int pg_new_term(store_t *s, const store_node *me, uint64_t term, uint64_t *next)
{
    pg *p = s->impl;
    if (!p->c || PQstatus(p->c) != CONNECTION_OK) {
        store_set_err(s, "postgres: the leader's connection was lost");
        return TENQ_ENOT_LEADER;
    }
    int rc = bump(s, p, me, term, next);
    return rc == TENQ_ECONNECT || rc == TENQ_EIO ? TENQ_ENOT_LEADER : rc;
}

int pg_renew(store_t *s, const store_node *me, uint64_t term)
{
    pg *p = s->impl;
    if (!p->c || PQstatus(p->c) != CONNECTION_OK) {
        store_set_err(s, "postgres: the leader's connection was lost");
        return TENQ_ENOT_LEADER;
    }
    char term_s[24], ttl_s[24];
    snprintf(term_s, sizeof term_s, "%llu", (unsigned long long)term);
    snprintf(ttl_s, sizeof ttl_s, "%lld", (long long)me->ttl_ms);
    const char *v[3] = {term_s, me->node, ttl_s};
    PGresult *res = NULL;
    int rc = query(s, p,
                   "UPDATE tenq.leader SET renewed_at = " NOW_MS ", expires_at = " NOW_MS
                   " + $3::bigint WHERE id = 1 AND term = $1 AND node = $2",
                   3, v, &res, "renewing the leadership");
    if (rc) return TENQ_ENOT_LEADER; /* the lock went with the connection, if it is lost */
    bool kept = strcmp(PQcmdTuples(res), "1") == 0;
    PQclear(res);
    if (!kept) {
        store_set_err(s, "postgres: term %llu is over: another server leads",
                      (unsigned long long)term);
        return TENQ_ENOT_LEADER;
    }
    return 0;
}

void pg_resign(store_t *s, const store_node *me, uint64_t term)
{
    pg *p = s->impl;
    if (!p->c || PQstatus(p->c) != CONNECTION_OK) return;
    char term_s[24];
    snprintf(term_s, sizeof term_s, "%llu", (unsigned long long)term);
    const char *v[2] = {term_s, me->node};
    PGresult *res = NULL;
    if (pg_run(s, p->c, "BEGIN", "resigning") == 0 &&
        query(s, p,
              "UPDATE tenq.leader SET expires_at = " NOW_MS " WHERE id = 1 AND term = $1 AND "
              "node = $2",
              2, v, &res, "resigning") == 0) {
        PQclear(res);
        pg_run(s, p->c, "NOTIFY tenq_leader", "resigning");
        pg_run(s, p->c, "COMMIT", "resigning");
    } else if (PQstatus(p->c) == CONNECTION_OK) {
        pg_run(s, p->c, "ROLLBACK", "rollback");
    }
    pg_run(s, p->c, "SELECT pg_advisory_unlock_all()", "resigning");
}

/* The notifications libpq has read: 1 when one is news of the leadership. */
static int take_notifies(pg *p)
{
    int news = 0;
    PGnotify *n;
    while ((n = PQnotifies(p->c)) != NULL) {
        /* an application's commit (tenq_inbox) is no news of the leadership */
        if (!strcmp(n->relname, "tenq_inbox"))
            p->inbox_news = true;
        else
            news = 1;
        PQfreemem(n);
    }
    return news;
}

int pg_leader_wait(store_t *s, int wake_fd, int ms)
{
    pg *p = s->impl;
    bool have = p->c && PQstatus(p->c) == CONNECTION_OK;
    /* first those that came in during this connection's last query (a
     * renewal): read with its answer, they leave the socket quiet */
    if (have) {
        int news = take_notifies(p);
        if (news || p->inbox_news) return news;
    }
    struct pollfd f[2] = {{wake_fd, POLLIN, 0}, {have ? PQsocket(p->c) : -1, POLLIN, 0}};
    if (poll(f, 2, ms) <= 0 || !have) return !have;
    if (!f[1].revents) return 0;
    if (!PQconsumeInput(p->c) || PQstatus(p->c) != CONNECTION_OK) return 1;
    return take_notifies(p);
}

bool pg_inbox_news(store_t *s)
{
    pg *p = s->impl;
    bool news = p->inbox_news;
    p->inbox_news = false;
    return news;
}
