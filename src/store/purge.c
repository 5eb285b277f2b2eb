// SPDX-License-Identifier: Apache-2.0
/* Finished jobs deleted by filter (an operator's bulk delete), or counted
 * for a dry run.  Like retention: under the leader's term, the id floor
 * raised first, a bounded number of rows per call. */
#include "internal.h"
#include "schema.h"

#include <stdio.h>
#include <string.h>

#define MAX_PARAMS 12

typedef struct where {
    char sql[768];
    const char *params[MAX_PARAMS];
    char nums[3][24];
    int n;
} where;

static void add(where *w, const char *cond, const char *value)
{
    w->params[w->n++] = value;
    size_t len = strlen(w->sql);
    snprintf(w->sql + len, sizeof w->sql - len, " AND %s ?%d", cond, w->n);
}

static void add_num(where *w, const char *cond, long long v, int slot)
{
    snprintf(w->nums[slot], sizeof w->nums[slot], "%lld", v);
    add(w, cond, w->nums[slot]);
}

static void build(where *w, const engine_job_filter *f, long max)
{
    memset(w, 0, sizeof(*w));
    snprintf(w->sql, sizeof w->sql, "SELECT id FROM $Sjobs WHERE live IS NULL");
    if (f->tenant) add(w, "tenant =", f->tenant);
    if (f->queue) add(w, "queue =", f->queue);
    if (f->type) add(w, "type =", f->type);
    if (f->key) add(w, "key =", f->key);
    if (f->created_after) add_num(w, "created_at >=", f->created_after, 0);
    if (f->created_before) add_num(w, "created_at <", f->created_before, 1);
    if (f->states) {
        size_t len = strlen(w->sql);
        snprintf(w->sql + len, sizeof w->sql - len, " AND state IN (");
        bool first = true;
        for (int st = ENGINE_SUCCEEDED; st < ENGINE_NSTATES; st++) {
            if (!(f->states & (1u << st))) continue;
            len = strlen(w->sql);
            snprintf(w->sql + len, sizeof w->sql - len, "%s'%s'", first ? "" : ", ",
                     engine_state_name((engine_state)st));
            first = false;
        }
        len = strlen(w->sql);
        snprintf(w->sql + len, sizeof w->sql - len, ")");
    }
    snprintf(w->nums[2], sizeof w->nums[2], "%ld", max);
    w->params[w->n++] = w->nums[2];
    size_t len = strlen(w->sql);
    snprintf(w->sql + len, sizeof w->sql - len, " ORDER BY id LIMIT ?%d", w->n);
}

static void count_row(void *ctx, const store_rowacc *acc, void *row)
{
    *(long *)ctx = (long)acc->i64(row, 0);
}

/* The audit row of the purge, in its transaction. */
typedef struct audit_sink {
    const char *v[9];
    char num[3][24];
    int n;
} audit_sink;
static void a_i64(void *ctx, long long v)
{
    audit_sink *a = ctx;
    snprintf(a->num[a->n < 2 ? a->n : 2], sizeof a->num[0], "%lld", v);
    a->v[a->n] = a->num[a->n < 2 ? a->n : 2];
    a->n++;
}
static void a_text(void *ctx, const char *v)
{
    audit_sink *a = ctx;
    a->v[a->n++] = v;
}
static void a_bool(void *ctx, bool v)
{
    a_i64(ctx, v);
}

static long write_audit(store_t *s, const store_audit *audit)
{
    store_batch *b = store_batch_new();
    store_batch_audit(b, audit);
    audit_sink a = {{0}, {{0}}, 0};
    store_param_sink out = {a_i64, a_text, a_bool, &a};
    store_audit_params(b, &b->ops[0], &out);
    long n = s->be->tx_exec(s, STORE_SQL_INSERT_AUDIT, a.n, a.v);
    store_batch_free(b);
    return n;
}

long store_purge_finished(store_t *s, const engine_job_filter *f, bool dry_run, long max,
                          const store_audit *audit)
{
    pthread_mutex_lock(&s->lock);
    uint64_t term = s->term;
    pthread_mutex_unlock(&s->lock);
    if (s->opts.elect && !term) return TENQ_ENOT_LEADER;
    where w;
    build(&w, f, max);
    char sql[900];
    long n = 0;
    pthread_mutex_lock(&s->db_lock);
    if (dry_run) {
        snprintf(sql, sizeof sql, "SELECT count(*) FROM (%s) AS m", w.sql);
        int rc = s->be->select(s, false, sql, w.n, w.params, count_row, &n);
        pthread_mutex_unlock(&s->db_lock);
        return rc ? rc : n;
    }
    int rc = s->be->tx_begin(s, term);
    if (!rc) {
        snprintf(sql, sizeof sql, "DELETE FROM $Sjobs WHERE id IN (%s)", w.sql);
        n = s->be->tx_exec(s, STORE_SQL_ID_FLOOR, 0, NULL);
        if (n >= 0) n = s->be->tx_exec(s, sql, w.n, w.params);
        if (n >= 0 && audit) {
            long a = write_audit(s, audit);
            if (a < 0) n = a;
        }
        rc = s->be->tx_end(s, n >= 0);
    }
    pthread_mutex_unlock(&s->db_lock);
    return rc ? rc : n;
}
