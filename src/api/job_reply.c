// SPDX-License-Identifier: Apache-2.0
/* One job answered as GET /v1/jobs/{id} answers it (job_reply.h): the
 * handler (api_jobs.c) and a job wait that timed out (waiters.c). */
#include "job_reply.h"

#include "args_read.h"
#include "clock.h"
#include "jbuf.h"
#include "job_json.h"
#include "read_ctx.h"
#include "reply.h"
#include "request.h"
#include "server.h"

#include "base/xalloc.h"

#include <stdlib.h>

/* A finished job, read from the store for a request. */
typedef struct job_row_read {
    read_ctx held;
    server *srv;
    principal who;
    uint64_t id;
} job_row_read;

static void on_job_rows(void *ctx, int rc, const store_rows *rows)
{
    job_row_read *c = ctx;
    http_req *req = read_ctx_take(&c->held);
    if (req) {
        if (rc != 0) {
            reply_error(req, rc, NULL, "reading the job failed: %s", store_errmsg(c->srv->st));
        } else if (rows->n != 1 ||
                   !auth_may_see_job(&c->who, rows->jobs[0].tenant, rows->jobs[0].queue)) {
            reply_error(req, TENQ_ENOT_FOUND, "id", "no job %llu", (unsigned long long)c->id);
        } else {
            jbuf b;
            jb_init(&b);
            api_json_job(&b, &rows->jobs[0], api_job_view(&c->who), NULL, 0);
            reply_json(req, 200, &b);
        }
    }
    free(c);
}

/* A job the engine holds, answered from memory; its args read first when
 * they are out of memory (rows: what that read brought; NULL the first
 * time). */
typedef struct job_again {
    principal who;
    uint64_t id;
} job_again;

static void job_reply(server *s, http_req *req, const principal *who, uint64_t id,
                      const store_rows *rows);

static void job_with_args(server *s, http_req *req, void *ctx, const store_rows *rows)
{
    job_again *a = ctx;
    if (req) job_reply(s, req, &a->who, a->id, rows ? rows : &(store_rows){0});
    free(a);
}

static void job_reply(server *s, http_req *req, const principal *who, uint64_t id,
                      const store_rows *rows)
{
    engine_job *j = engine_find(s->e, id);
    engine_job_info in;
    if (j) engine_job_get(j, &in);
    if (!j || !auth_may_see_job(who, in.tenant, in.queue)) {
        reply_error(req, TENQ_ENOT_FOUND, "id", "no job %llu", (unsigned long long)id);
        return;
    }
    if (!srv_args_fill(&in, rows)) {
        if (rows) { /* read, and gone from the cache and the rows: its row changed */
            reply_error(req, TENQ_EUNAVAILABLE, NULL,
                        "job %llu's args could not be read; try "
                        "again",
                        (unsigned long long)id);
            return;
        }
        job_again *a = xcalloc(1, sizeof(*a));
        a->who = *who;
        a->id = id;
        srv_with_args(s, req, &id, 1, job_with_args, a);
        return;
    }
    engine_wait w;
    engine_job_wait(j, &w);
    jbuf b;
    jb_init(&b);
    api_json_job(&b, &in, api_job_view(who), &w, srv_now(s));
    reply_json(req, 200, &b);
}

void srv_reply_job(server *s, http_req *req, const principal *who, uint64_t id)
{
    if (engine_find(s->e, id)) {
        job_reply(s, req, who, id, NULL);
        return;
    }
    /* finished: its history is in the store */
    job_row_read *c = xcalloc(1, sizeof(*c));
    c->srv = s;
    c->who = *who;
    c->id = id;
    read_ctx_hold(&c->held, req);
    store_get_job(s->st, id, on_job_rows, c);
}

const engine_job_info *srv_read_job(server *s, http_req *req, int rc, const char *what, uint64_t id,
                                    const principal *who, const engine_job_info *stored,
                                    engine_job_info *buf)
{
    if (rc != 0) {
        reply_error(req, rc, NULL, "reading %s failed: %s", what, store_errmsg(s->st));
        return NULL;
    }
    engine_job *j = engine_find(s->e, id);
    if (j) engine_job_get(j, buf);
    const engine_job_info *job = j ? buf : stored;
    if (!job || !auth_may_see_job(who, job->tenant, job->queue)) {
        reply_error(req, TENQ_ENOT_FOUND, "id", "no job %llu", (unsigned long long)id);
        return NULL;
    }
    return job;
}

uint64_t srv_job_path_id(server *s, http_req *req, const principal *who, const char *arg)
{
    uint64_t id = req_path_id(req, arg);
    if (!id) return 0;
    engine_job *j = engine_find(s->e, id);
    if (j && !auth_may_see_job(who, engine_job_tenant(j), engine_job_queue(j))) {
        reply_error(req, TENQ_ENOT_FOUND, "id", "no job %llu", (unsigned long long)id);
        return 0;
    }
    return id;
}
