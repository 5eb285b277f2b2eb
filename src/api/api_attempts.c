// SPDX-License-Identifier: Apache-2.0
/* A job's attempt history: GET /v1/jobs/{id}/attempts.
 *
 * The attempts that ended without the job succeeding are rows of the store;
 * the current attempt (leased, running) and the one that succeeded are the
 * job's own fields, in memory while the job is resident, else its row.  So
 * the answer waits for everything uncommitted to commit (an attempt that
 * ended before the request is then in the store), reads the rows, and adds
 * the job's own attempt.  An attempt that ends while the rows are read
 * could be in neither: the job's lease is noted before, and when it moved
 * meanwhile, the read is made again (a few times at most). */
#include "auth.h"
#include "commit.h"
#include "handlers.h"
#include "jbuf.h"
#include "job_reply.h"
#include "read_ctx.h"
#include "reply.h"
#include "request.h"
#include "server.h"

#include "base/xalloc.h"

#include <stdlib.h>

#define ATTEMPTS_TRIES 4

typedef struct attempts_ctx {
    read_ctx held; /* the request, while the store reads */
    server *srv;
    principal who;
    uint64_t id;
    /* the job as the read began: resident? leased or running, under token? */
    bool resident, active;
    uint64_t token;
    int tries;
} attempts_ctx;

static bool job_active(const engine_job_info *in)
{
    return in->state == ENGINE_LEASED || in->state == ENGINE_RUNNING;
}

/* The job's lease now: whether it is resident, and leased under which token. */
static void note_lease(server *s, uint64_t id, bool *resident, bool *active, uint64_t *token)
{
    engine_job *j = engine_find(s->e, id);
    *resident = j != NULL;
    *active = false;
    *token = 0;
    if (!j) return;
    engine_job_info in;
    engine_job_get(j, &in);
    *active = job_active(&in);
    *token = in.token;
}

/* The names of the steps stored under the attempt's token, in order. */
static void write_attempt_steps(jbuf *b, const store_attempts *rows, uint64_t token)
{
    jb_key(b, "steps");
    jb_arr(b);
    for (size_t i = 0; rows && i < rows->n_steps; i++)
        if (rows->steps[i].token == token) jb_str(b, rows->steps[i].name);
    jb_arr_end(b);
}

static void write_attempt(jbuf *b, const engine_attempt_info *a, bool show_token,
                          const store_attempts *rows)
{
    jb_obj(b);
    jb_kint(b, "attempt", a->attempt);
    if (show_token) jb_kint(b, "token", (long long)a->token);
    jb_kstr(b, "worker", a->worker);
#define TIME(k, v)                                                                                 \
    do {                                                                                           \
        jb_key(b, k);                                                                              \
        if (v)                                                                                     \
            jb_int(b, v);                                                                          \
        else                                                                                       \
            jb_null(b);                                                                            \
    } while (0)
    TIME("leased_at", a->leased_at);
    TIME("started_at", a->started_at);
    TIME("finished_at", a->finished_at);
#undef TIME
    jb_kstr(b, "outcome", engine_attempt_outcome_name(a->outcome));
    jb_kstr(b, "job_state", engine_state_name(a->job_state));
    jb_kstr(b, "error", a->error);
    jb_kraw(b, "stats", a->stats);
    write_attempt_steps(b, rows, a->token);
    jb_obj_end(b);
}

static void reply_attempts(attempts_ctx *c, http_req *req, const engine_job_info *job,
                           const store_attempts *rows)
{
    engine_attempt_info own;
    bool has_own = engine_job_attempt(job, &own);
    bool show_token = auth_shows_token(&c->who);
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_kint(&b, "id", (long long)job->id);
    jb_kstr(&b, "state", engine_state_name(job->state));
    jb_key(&b, "attempts");
    jb_arr(&b);
    /* rows by token, the job's own in its place (once: a row wins) */
    for (size_t i = 0; i < rows->n; i++) {
        if (has_own && own.token < rows->v[i].token) {
            write_attempt(&b, &own, show_token, rows);
            has_own = false;
        }
        if (has_own && own.token == rows->v[i].token) has_own = false;
        write_attempt(&b, &rows->v[i], show_token, rows);
    }
    if (has_own) write_attempt(&b, &own, show_token, rows);
    jb_arr_end(&b);
    jb_obj_end(&b);
    reply_json(req, 200, &b);
}

static void attempts_read(server *s, http_req *req, attempts_ctx *c);

static void on_attempts(void *ctx, int rc, const store_attempts *rows)
{
    attempts_ctx *c = ctx;
    http_req *req = read_ctx_take(&c->held);
    server *s = c->srv;
    if (!req) {
        free(c);
        return;
    }
    if (rc != 0) {
        reply_error(req, rc, NULL, "reading the attempts failed: %s", store_errmsg(s->st));
        free(c);
        return;
    }
    bool resident, active;
    uint64_t token;
    note_lease(s, c->id, &resident, &active, &token);
    if ((resident != c->resident || active != c->active || token != c->token) &&
        ++c->tries < ATTEMPTS_TRIES) {
        attempts_read(s, req, c); /* an attempt may have ended meanwhile */
        return;
    }
    engine_job *j = engine_find(s->e, c->id);
    engine_job_info in;
    if (j) engine_job_get(j, &in);
    const engine_job_info *job = j ? &in : rows->job;
    if (!job || !auth_may_see_job(&c->who, job->tenant, job->queue)) {
        reply_error(req, TENQ_ENOT_FOUND, "id", "no job %llu", (unsigned long long)c->id);
    } else {
        reply_attempts(c, req, job, rows);
    }
    free(c);
}

static void after_commit(server *s, http_req *req, void *ctx, int rc)
{
    attempts_ctx *c = ctx;
    if (!req || rc) { /* gone, or answered with the commit's failure */
        free(c);
        return;
    }
    read_ctx_hold(&c->held, req);
    store_get_attempts(s->st, c->id, on_attempts, c);
}

/* Notes the job's lease, then reads once everything before is committed. */
static void attempts_read(server *s, http_req *req, attempts_ctx *c)
{
    note_lease(s, c->id, &c->resident, &c->active, &c->token);
    srv_after_commit(s, req, after_commit, c);
}

void h_job_attempts(server *s, http_req *req, const principal *who, const char **args)
{
    uint64_t id = srv_job_path_id(s, req, who, args[0]);
    if (!id) return;
    attempts_ctx *c = xcalloc(1, sizeof(*c));
    c->srv = s;
    c->who = *who;
    c->id = id;
    attempts_read(s, req, c);
}
