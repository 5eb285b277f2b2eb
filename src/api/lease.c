// SPDX-License-Identifier: Apache-2.0
/* A lease granted now (lease.h): the engine's best jobs for the request,
 * answered before or after their commit as their queues' delivery says,
 * once their args are in memory.  POST /v1/lease (api_work.c) and a woken
 * long poll (waiters.c) both lease through here. */
#include "lease.h"

#include "api.h"
#include "args_read.h"
#include "clock.h"
#include "commit.h"
#include "jbuf.h"
#include "lease_json.h"
#include "reply.h"
#include "server.h"
#include "workers.h"

#include "base/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* Answers a lease with its jobs. */
static void lease_answer(server *s, http_req *req, const engine_job_info *in, size_t n,
                         const char *results, bool columns)
{
    bool stored_first = false; /* at-most-once and exactly-once: the lease is stored first */
    const char *last_queue = NULL;
    for (size_t i = 0; i < n; i++) {
        if (last_queue == in[i].queue) continue;
        engine_queue_settings qs;
        if (engine_queue_get(s->e, 0, in[i].queue, &qs, NULL) == 0 &&
            qs.delivery != ENGINE_AT_LEAST_ONCE)
            stored_first = true;
        last_queue = in[i].queue;
    }
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    api_json_leased(&b, in, n, columns);
    if (results) jb_kraw(&b, "results", results);
    jb_obj_end(&b);
    /* A lease acknowledges nothing of the client's: it may go out before its
     * commit, because a token is never handed out twice (token_floor) and an
     * unstored lease just means the job runs again.  At-most-once jobs are
     * the exception (never handed out twice), and exactly-once ones (the
     * store must hold the token a handler's transaction checks). */
    if (stored_first)
        srv_commit_reply(s, req, 200, &b);
    else
        srv_commit_reply_now(s, req, 200, &b);
}

/* A lease whose jobs' args were not all in memory: answered once they are
 * read, with the jobs still leased under the tokens it gave (a job that a
 * cancel ended meanwhile is left out). */
typedef struct lease_wait {
    uint64_t *ids, *tokens;
    char **cached; /* copies of the args that were in the cache (it may drop them meanwhile) */
    size_t n;
    char *results;
    bool columns;
} lease_wait;

static void lease_with_args(server *s, http_req *req, void *ctx, const store_rows *rows)
{
    lease_wait *w = ctx;
    if (req) {
        engine_job_info *in = xmalloc(w->n * sizeof(*in));
        size_t k = 0;
        for (size_t i = 0; i < w->n; i++) {
            engine_job *j = engine_find(s->e, w->ids[i]);
            if (!j) continue;
            engine_job_get(j, &in[k]);
            if ((in[k].state != ENGINE_LEASED && in[k].state != ENGINE_RUNNING) ||
                in[k].token != w->tokens[i])
                continue;
            if (in[k].args_missing && w->cached[i]) {
                in[k].args = w->cached[i];
                in[k].args_len = (uint32_t)strlen(w->cached[i]);
                in[k].args_missing = false;
            }
            if (!srv_args_fill(&in[k], rows)) {
                log_event(LOG_ERROR, "args", "job %llu: its row holds no args",
                          (unsigned long long)w->ids[i]);
                continue; /* its lease runs out and it is retried */
            }
            k++;
        }
        lease_answer(s, req, in, k, w->results, w->columns);
        free(in);
    }
    for (size_t i = 0; i < w->n; i++) free(w->cached[i]);
    free(w->cached);
    free(w->ids);
    free(w->tokens);
    free(w->results);
    free(w);
}

bool srv_try_lease(server *s, http_req *req, const principal *who, char **queues, size_t nq,
                   char **types, size_t nt, size_t max, const char *worker, const char *results,
                   bool columns)
{
    (void)who;
    engine_lease_req lr = {
        (const char *const *)queues, nq, (const char *const *)types, nt, max, worker};
    engine_job **out = xmalloc(max * sizeof(engine_job *));
    size_t got = engine_lease(s->e, srv_now(s), &lr, out);
    workers_leased(s, worker, got);
    if (got == 0) {
        free(out);
        return false;
    }
    engine_job_info *in = xmalloc(got * sizeof(*in));
    size_t missing = 0;
    for (size_t i = 0; i < got; i++) {
        engine_job_get(out[i], &in[i]);
        missing += in[i].args_missing;
        s->args.leased_spilled += engine_job_spilled(out[i]);
    }
    if (missing) { /* read them first (args_read.c) */
        lease_wait *w = xcalloc(1, sizeof(*w));
        w->ids = xmalloc(got * sizeof(uint64_t));
        w->tokens = xmalloc(got * sizeof(uint64_t));
        w->cached = xcalloc(got, sizeof(char *));
        uint64_t *want = xmalloc(missing * sizeof(uint64_t));
        for (size_t i = 0, m = 0; i < got; i++) {
            w->ids[i] = in[i].id;
            w->tokens[i] = in[i].token;
            if (in[i].args_missing)
                want[m++] = in[i].id;
            else if (engine_job_spilled(out[i]) && in[i].args)
                w->cached[i] = xstrndup(in[i].args, in[i].args_len);
        }
        w->n = got;
        w->results = results ? xstrdup(results) : NULL;
        w->columns = columns;
        srv_with_args(s, req, want, missing, lease_with_args, w);
        free(want);
    } else {
        lease_answer(s, req, in, got, results, columns);
    }
    free(in);
    free(out);
    return true;
}

void reply_no_jobs(http_req *req, const char *results, bool columns)
{
    static const char empty[] = "{\"jobs\":[]}", empty_columns[] = "{\"columns\":{}}";
    if (!results) {
        if (columns)
            http_reply(req, 200, "application/json", NULL, empty_columns, sizeof empty_columns - 1);
        else
            http_reply(req, 200, "application/json", NULL, empty, sizeof empty - 1);
        return;
    }
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    api_json_leased(&b, NULL, 0, columns);
    jb_kraw(&b, "results", results);
    jb_obj_end(&b);
    reply_json(req, 200, &b);
}
