// SPDX-License-Identifier: Apache-2.0
/* Retention: finished jobs older than their queue's retention, idempotency
 * keys older than a day, request keys older than their TTL, audit rows
 * older than theirs (--audit-retention) and events kept past their
 * window, deleted a
 * few hundred rows a step, once for both backends.  Every step first
 * raises the id floor (ids are never used twice) and runs under the
 * leader's term, so a deposed leader deletes nothing. */
#include "internal.h"
#include "schema.h"

#include "base/xalloc.h"

#include <stdio.h>
#include <string.h>

typedef struct queue_cut {
    char name[ENGINE_NAME_MAX + 1];
    long long retention_ms;
} queue_cut;

typedef struct cuts {
    queue_cut *v;
    size_t n, cap;
} cuts;

static void cut_row(void *ctx, const store_rowacc *acc, void *row)
{
    cuts *c = ctx;
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 16;
        c->v = xrealloc(c->v, c->cap * sizeof(*c->v));
    }
    snprintf(c->v[c->n].name, sizeof c->v[c->n].name, "%s", acc->text(row, 0));
    c->v[c->n++].retention_ms = acc->i64(row, 1);
}

/* DELETE ... LIMIT left of rows older than `before`, with leading params. */
static long delete_old(store_t *s, const char *tmpl, const char *lead, long long before, long left)
{
    char cut[24], lim[24];
    snprintf(cut, sizeof cut, "%lld", before);
    snprintf(lim, sizeof lim, "%ld", left);
    const char *p3[3] = {lead, cut, lim};
    return s->be->tx_exec(s, tmpl, lead ? 3 : 2, lead ? p3 : p3 + 1);
}

long store_retention_step(store_t *s, int64_t now, uint64_t term)
{
    long limit = s->opts.retention_batch, done = 0, n = 0;
    int rc = s->be->tx_begin(s, term);
    if (rc) return rc;
    cuts c = {0};
    if ((n = s->be->tx_exec(s, STORE_SQL_ID_FLOOR, 0, NULL)) >= 0)
        n = s->be->select(s, false,
                          "SELECT name, retention_ms FROM $Squeues WHERE retention_ms > 0", 0, NULL,
                          cut_row, &c);
    for (size_t i = 0; n >= 0 && i < c.n && done < limit; i++) {
        n = delete_old(s, STORE_SQL_PRUNE_JOBS, c.v[i].name, now - c.v[i].retention_ms,
                       limit - done);
        done += n > 0 ? n : 0;
    }
    free(c.v);
    if (n >= 0 && done < limit) {
        n = delete_old(s, STORE_SQL_PRUNE_IDEM, NULL, now - 24LL * 3600 * 1000, limit - done);
        done += n > 0 ? n : 0;
    }
    if (n >= 0 && done < limit) {
        n = delete_old(s, STORE_SQL_PRUNE_REQUESTS, NULL, now - s->opts.request_key_ttl_ms,
                       limit - done);
        done += n > 0 ? n : 0;
    }
    if (n >= 0 && done < limit) {
        n = delete_old(s, STORE_SQL_PRUNE_AUDIT, NULL, now - s->opts.audit_ttl_ms, limit - done);
        done += n > 0 ? n : 0;
    }
    if (n >= 0 && done < limit) { /* events kept past their window (engine/steps.c) */
        n = delete_old(s, STORE_SQL_PRUNE_EVENTS, NULL, now, limit - done);
        done += n > 0 ? n : 0;
    }
    rc = s->be->tx_end(s, n >= 0);
    return n < 0 ? n : rc ? rc : done;
}
