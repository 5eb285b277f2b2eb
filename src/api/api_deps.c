// SPDX-License-Identifier: Apache-2.0
/* A job's dependencies: GET /v1/jobs/{id}/parents.
 *
 * Its parents, in the order it named them, each with its state and result
 * (what a child reads before it runs), and its children.  The edges are
 * rows of the store, so the answer waits for everything uncommitted to
 * commit (a submit answered before the request is then there) and reads
 * them; a parent or child the engine holds shows its state from memory
 * (the store's row may lag: readiness and leases are written late). */
#include "auth.h"
#include "commit.h"
#include "handlers.h"
#include "jbuf.h"
#include "job_json.h"
#include "job_reply.h"
#include "read_ctx.h"
#include "reply.h"
#include "request.h"
#include "server.h"

#include "base/xalloc.h"

#include <stdlib.h>

typedef struct deps_ctx {
    read_ctx held; /* the request, while the store reads */
    server *srv;
    principal who;
    uint64_t id;
} deps_ctx;

static void write_dep(server *s, jbuf *b, const store_dep *d, bool with_result)
{
    engine_job *j = engine_find(s->e, d->id);
    engine_job_info in;
    if (j) engine_job_get(j, &in);
    jb_obj(b);
    jb_kint(b, "id", (long long)d->id);
    int st = j ? (int)in.state : d->state;
    if (st >= 0)
        jb_kstr(b, "state", engine_state_name((engine_state)st));
    else
        jb_kstr(b, "state", "gone"); /* pruned by retention, or deleted from the morgue */
    if (with_result) jb_kraw(b, "result", j && in.result ? in.result : d->result);
    jb_obj_end(b);
}

static void on_deps(void *ctx, int rc, const store_deps *d)
{
    deps_ctx *c = ctx;
    http_req *req = read_ctx_take(&c->held);
    server *s = c->srv;
    engine_job_info in;
    const engine_job_info *job =
        req ? srv_read_job(s, req, rc, "the dependencies", c->id, &c->who, rc ? NULL : d->job, &in)
            : NULL;
    if (!job) {
        free(c);
        return;
    }
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_kint(&b, "id", (long long)job->id);
    jb_kstr(&b, "state", engine_state_name(job->state));
    jb_key(&b, "parents");
    jb_arr(&b);
    /* a parent's result, unless this token does not see jobs' data */
    for (size_t i = 0; i < d->n_parents; i++) write_dep(s, &b, &d->parents[i], !c->who.hide_data);
    jb_arr_end(&b);
    jb_key(&b, "children");
    jb_arr(&b);
    size_t shown = d->n_children < API_CHILDREN_SHOWN ? d->n_children : API_CHILDREN_SHOWN;
    for (size_t i = 0; i < shown; i++) write_dep(s, &b, &d->children[i], false);
    jb_arr_end(&b);
    jb_kint(&b, "children_count", (long long)d->children_total);
    jb_obj_end(&b);
    reply_json(req, 200, &b);
    free(c);
}

static void after_commit(server *s, http_req *req, void *ctx, int rc)
{
    deps_ctx *c = ctx;
    if (!req || rc) { /* gone, or answered with the commit's failure */
        free(c);
        return;
    }
    read_ctx_hold(&c->held, req);
    store_get_deps(s->st, c->id, on_deps, c);
}

void h_job_parents(server *s, http_req *req, const principal *who, const char **args)
{
    uint64_t id = srv_job_path_id(s, req, who, args[0]);
    if (!id) return;
    deps_ctx *c = xcalloc(1, sizeof(*c));
    c->srv = s;
    c->who = *who;
    c->id = id;
    srv_after_commit(s, req, after_commit, c);
}
