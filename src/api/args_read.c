// SPDX-License-Identifier: Apache-2.0
/* Args out of memory, the server's side (engine/args.c keeps them):
 * reading ahead what the engine will soon want, and answering a request
 * that needs a job's args that are not in memory (a lease, a read) once
 * they are read back.
 *
 * Reads go to the store's reader thread and only after everything handed
 * to the writer before them is committed (srv_after_commit), so a job's row
 * is there to read.  A read's rows go into the engine's cache; a request
 * that waited for them also takes them from the rows themselves, so an
 * answer never depends on the cache having had room. */
#include "args_read.h"

#include "clock.h"
#include "commit.h"
#include "read_ctx.h"
#include "reply.h"
#include "server.h"

#include "base/xalloc.h"

#include <stdlib.h>
#include <string.h>

#define READ_AHEAD_MAX      2048 /* ids in one read ahead */
#define READ_AHEAD_INFLIGHT 2    /* reads ahead at once */

/* ---- reading ahead ------------------------------------------------------------------- */

typedef struct ahead {
    server *s;
    uint64_t term; /* the engine the ids are of: another term's are dropped */
    uint64_t *ids;
    size_t n;
} ahead;

static void ahead_free(ahead *a)
{
    a->s->args.inflight--;
    free(a->ids);
    free(a);
}

static void put_rows(server *s, const store_rows *rows)
{
    for (size_t i = 0; i < rows->n; i++)
        engine_args_put(s->e, rows->jobs[i].id, rows->jobs[i].args, rows->jobs[i].args_len);
}

/* The ids a read did not return: their rows are gone (or not committed
 * yet: asked again later). */
static void unask_missing(server *s, const uint64_t *ids, size_t n, const store_rows *rows)
{
    for (size_t i = 0; i < n; i++) {
        bool found = false;
        for (size_t k = 0; k < rows->n && !found; k++) found = rows->jobs[k].id == ids[i];
        if (!found) engine_args_unasked(s->e, ids[i]);
    }
}

static void on_ahead_rows(void *ctx, int rc, const store_rows *rows)
{
    ahead *a = ctx;
    server *s = a->s;
    if (s->lead.leading && s->lead.term == a->term) {
        if (rc == 0) {
            put_rows(s, rows);
            s->args.rows_ahead += rows->n;
            if (rows->n < a->n) unask_missing(s, a->ids, a->n, rows);
        } else {
            for (size_t i = 0; i < a->n; i++) engine_args_unasked(s->e, a->ids[i]);
        }
    }
    ahead_free(a);
    srv_args_read_ahead(s); /* the next part of the window */
}

static void ahead_committed(server *s, http_req *req, void *ctx, int rc)
{
    (void)req;
    ahead *a = ctx;
    if (rc != 0 || !s->lead.leading || s->lead.term != a->term) {
        if (s->lead.leading && s->lead.term == a->term)
            for (size_t i = 0; i < a->n; i++) engine_args_unasked(s->e, a->ids[i]);
        ahead_free(a);
        return;
    }
    store_read_args(s->st, a->ids, a->n, on_ahead_rows, a);
}

void srv_args_read_ahead(server *s)
{
    if (!s->lead.leading || s->stopping || s->args.inflight >= READ_AHEAD_INFLIGHT) return;
    uint64_t buf[READ_AHEAD_MAX];
    size_t n = engine_args_wanted(s->e, srv_now(s), buf, READ_AHEAD_MAX);
    if (!n) return;
    ahead *a = xcalloc(1, sizeof(*a));
    a->s = s;
    a->term = s->lead.term;
    a->ids = xmalloc(n * sizeof(*buf));
    memcpy(a->ids, buf, n * sizeof(*buf));
    a->n = n;
    s->args.inflight++;
    s->args.reads_ahead++;
    srv_after_commit(s, NULL, ahead_committed, a);
}

/* ---- requests that wait for args --------------------------------------------------------
 */

typedef struct args_wait {
    server *s;
    uint64_t term;
    uint64_t *ids;
    size_t n;
    args_then then;
    void *ctx;
    read_ctx held; /* the request, while the read runs */
} args_wait;

static void wait_free(args_wait *w)
{
    free(w->ids);
    free(w);
}

static void on_wait_rows(void *ctx, int rc, const store_rows *rows)
{
    args_wait *w = ctx;
    server *s = w->s;
    http_req *req = read_ctx_take(&w->held);
    bool same = s->lead.leading && s->lead.term == w->term;
    if (same && rc == 0) put_rows(s, rows);
    if (!req) {
        w->then(s, NULL, w->ctx, NULL); /* gone: frees its ctx */
    } else if (rc != 0) {
        reply_error(req, rc, NULL, "reading jobs' args failed: %s", store_errmsg(s->st));
        w->then(s, NULL, w->ctx, NULL);
    } else if (!same) {
        reply_error(req, TENQ_EUNAVAILABLE, NULL, "the server reloaded its jobs; try again");
        w->then(s, NULL, w->ctx, NULL);
    } else {
        w->then(s, req, w->ctx, rows);
    }
    wait_free(w);
}

static void wait_committed(server *s, http_req *req, void *ctx, int rc)
{
    args_wait *w = ctx;
    if (!req || rc != 0) {
        if (req) reply_error(req, rc, NULL, "the store failed: %s", store_errmsg(s->st));
        w->then(s, NULL, w->ctx, NULL);
        wait_free(w);
        return;
    }
    read_ctx_hold(&w->held, req);
    store_read_args(s->st, w->ids, w->n, on_wait_rows, w);
}

void srv_with_args(server *s, http_req *req, const uint64_t *ids, size_t n, args_then then,
                   void *ctx)
{
    args_wait *w = xcalloc(1, sizeof(*w));
    w->s = s;
    w->term = s->lead.term;
    w->ids = xmalloc(n * sizeof(*ids));
    memcpy(w->ids, ids, n * sizeof(*ids));
    w->n = n;
    w->then = then;
    w->ctx = ctx;
    s->args.waits++;
    s->args.waited_jobs += n;
    srv_after_commit(s, req, wait_committed, w);
}

bool srv_args_fill(engine_job_info *in, const store_rows *rows)
{
    if (!in->args_missing) return true;
    for (size_t i = 0; rows && i < rows->n; i++) {
        if (rows->jobs[i].id != in->id) continue;
        in->args = rows->jobs[i].args;
        in->args_len = rows->jobs[i].args_len;
        in->args_missing = false;
        return true;
    }
    return false;
}
