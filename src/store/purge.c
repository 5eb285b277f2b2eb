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

long store_purge_finished(store_t *s, const engine_job_filter *f, bool dry_run, long max)
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
        rc = s->be->tx_end(s, n >= 0);
    }
    pthread_mutex_unlock(&s->db_lock);
    return rc ? rc : n;
}
