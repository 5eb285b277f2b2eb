// SPDX-License-Identifier: Apache-2.0
/* The audit log's reads: a page of rows, newest first, on the reader
 * thread.  Rows are written by the writer (OP_AUDIT, in the commit of the
 * change they record) and by a purge (purge.c), and pruned by retention. */
#include "internal.h"
#include "schema.h"

#include "base/xalloc.h"

#include <stdio.h>
#include <string.h>

typedef struct audit_read {
    store_audit_query q;
    char *tenant, *method, *path; /* the query's strings, owned */
    store_audit_fn fn;
    void *ctx;
    store_audit_row *rows;
    size_t n, cap;
    char **mem; /* the rows' strings */
    size_t nmem, capmem;
} audit_read;

static const char *keep(audit_read *r, const store_rowacc *acc, void *row, int col)
{
    if (acc->is_null(row, col)) return NULL;
    if (r->nmem == r->capmem) {
        r->capmem = r->capmem ? r->capmem * 2 : 64;
        r->mem = xrealloc(r->mem, r->capmem * sizeof(char *));
    }
    return r->mem[r->nmem++] = xstrdup(acc->text(row, col));
}

static void audit_row(void *ctx, const store_rowacc *acc, void *row)
{
    audit_read *r = ctx;
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 32;
        r->rows = xrealloc(r->rows, r->cap * sizeof(*r->rows));
    }
    store_audit_row *o = &r->rows[r->n++];
    memset(o, 0, sizeof(*o));
    o->id = acc->i64(row, 0);
    o->a.at = acc->i64(row, 1);
    o->a.token_id = acc->is_null(row, 2) ? 0 : acc->i64(row, 2);
    o->a.role = keep(r, acc, row, 3);
    o->a.tenant = keep(r, acc, row, 4);
    o->a.method = keep(r, acc, row, 5);
    o->a.path = keep(r, acc, row, 6);
    o->a.status = (int)acc->i64(row, 7);
    o->a.peer = keep(r, acc, row, 8);
    o->a.detail = keep(r, acc, row, 9);
}

static int run(store_t *s, void *ctx)
{
    audit_read *r = ctx;
    const store_audit_query *q = &r->q;
    char sql[800], num[6][24];
    const char *params[10];
    int n = 0, k = 0;
    size_t at = (size_t)snprintf(sql, sizeof sql,
                                 "SELECT " STORE_AUDIT_COLUMNS " FROM $Saudit WHERE 1 = 1");
#define NUM(v)   (snprintf(num[k], sizeof num[k], "%lld", (long long)(v)), params[n++] = num[k++], n)
#define ADD(...) (at += (size_t)snprintf(sql + at, sizeof sql - at, __VA_ARGS__))
    if (q->before_id > 0) ADD(" AND id < ?%d", NUM(q->before_id));
    if (q->token_id > 0) ADD(" AND token_id = ?%d", NUM(q->token_id));
    if (q->since > 0) ADD(" AND at >= ?%d", NUM(q->since));
    if (q->until > 0) ADD(" AND at < ?%d", NUM(q->until));
    if (r->tenant && !*r->tenant) ADD(" AND tenant IS NULL");
    if (r->tenant && *r->tenant) {
        params[n++] = r->tenant;
        ADD(" AND tenant = ?%d", n);
    }
    if (r->method) {
        params[n++] = r->method;
        ADD(" AND method = ?%d", n);
    }
    if (r->path) {
        int len = NUM(strlen(r->path));
        params[n++] = r->path;
        ADD(" AND substr(path, 1, ?%d) = ?%d", len, n);
    }
    ADD(" ORDER BY id DESC LIMIT ?%d", NUM(q->limit ? q->limit : 100));
#undef NUM
#undef ADD
    return s->be->select(s, true, sql, n, params, audit_row, r);
}

static void done(void *ctx, int rc)
{
    audit_read *r = ctx;
    r->fn(r->ctx, rc, r->rows, rc ? 0 : r->n);
    for (size_t i = 0; i < r->nmem; i++) free(r->mem[i]);
    free(r->mem);
    free(r->rows);
    free(r->tenant);
    free(r->method);
    free(r->path);
    free(r);
}

static audit_read *audit_read_new(const store_audit_query *q, store_audit_fn fn, void *ctx)
{
    audit_read *r = xcalloc(1, sizeof(*r));
    r->q = *q;
    r->tenant = q->tenant ? xstrdup(q->tenant) : NULL;
    r->method = q->method ? xstrdup(q->method) : NULL;
    r->path = q->path ? xstrdup(q->path) : NULL;
    r->fn = fn;
    r->ctx = ctx;
    return r;
}

void store_list_audit(store_t *s, const store_audit_query *q, store_audit_fn fn, void *ctx)
{
    store_read_own(s, run, done, audit_read_new(q, fn, ctx));
}

int store_list_audit_sync(store_t *s, const store_audit_query *q, store_audit_fn fn, void *ctx)
{
    return store_read_own_sync(s, run, done, audit_read_new(q, fn, ctx));
}
