// SPDX-License-Identifier: Apache-2.0
/* The morgue: dead jobs listed, requeued and deleted, one or by filter. */
#include "args_read.h"
#include "auth.h"
#include "clock.h"
#include "commit.h"
#include "handlers.h"
#include "http.h"
#include "jbuf.h"
#include "job_json.h"
#include "reply.h"
#include "request.h"
#include "server.h"

#include "base/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <errno.h>

/* ---- the morgue ------------------------------------------------------------------------- */

static void morgue_reply(server *s, http_req *req, const principal *who, const store_rows *rows);

/* A page whose jobs' args were out of memory, once they are read. */
static void morgue_with_args(server *s, http_req *req, void *ctx, const store_rows *rows)
{
    if (req) morgue_reply(s, req, ctx, rows ? rows : &(store_rows){0});
    free(ctx);
}

void h_morgue(server *s, http_req *req, const principal *who, const char **args)
{
    (void)args;
    morgue_reply(s, req, who, NULL);
}

/* rows: the args read for the page's jobs out of memory (NULL: none yet). */
static void morgue_reply(server *s, http_req *req, const principal *who, const store_rows *rows)
{
    char tenant[QUERY_NAME_BUF], queue[QUERY_NAME_BUF], type[QUERY_NAME_BUF], sort[16], after[64];
    engine_morgue_filter f = {0};
    if (!req_query_name(req, "tenant", ENGINE_NAME, tenant, &f.tenant) ||
        !req_query_name(req, "queue", ENGINE_NAME, queue, &f.queue) ||
        !req_query_name(req, "type", ENGINE_TYPE, type, &f.type))
        return;
    if (who->role == ROLE_TENANT && who->tok) {
        if (f.tenant && strcmp(f.tenant, who->tok->tenant) != 0) {
            reply_error(req, TENQ_EFORBIDDEN, "tenant", "a tenant token sees only its own morgue");
            return;
        }
        f.tenant = who->tok->tenant;
    }
    engine_morgue_sort so = ENGINE_MORGUE_NEWEST;
    if (http_query_get(req, "sort", sort, sizeof sort)) {
        if (!strcmp(sort, "id"))
            so = ENGINE_MORGUE_BY_ID;
        else if (strcmp(sort, "finished") != 0) {
            reply_error(req, TENQ_EINVALID, "sort", "sort is finished or id");
            return;
        }
    }
    long long lim;
    if (!req_query_num(req, "limit", 50, 1, 1000, &lim)) return;
    engine_morgue_cursor cur = {0};
    if (http_query_get(req, "after", after, sizeof after)) {
        char *end;
        errno = 0;
        if (so == ENGINE_MORGUE_NEWEST) {
            cur.finished_at = strtoll(after, &end, 10);
            if (*end != '.') goto bad_cursor;
            cur.id = strtoull(end + 1, &end, 10);
        } else {
            cur.id = strtoull(after, &end, 10);
        }
        if (*end || errno || (!cur.id && !cur.finished_at)) {
        bad_cursor:
            reply_error(req, TENQ_EINVALID, "after", "after must be the next cursor of a page");
            return;
        }
    }
    engine_job **out = xmalloc((size_t)lim * sizeof(engine_job *));
    size_t n = engine_morgue_list(s->e, &f, so, &cur, (size_t)lim, out);
    uint64_t *missing = NULL;
    size_t nmiss = 0;
    for (size_t i = 0; i < n; i++) {
        engine_job_info in;
        engine_job_get(out[i], &in);
        if (srv_args_fill(&in, rows)) continue;
        if (!missing) missing = xmalloc(n * sizeof(*missing));
        missing[nmiss++] = in.id;
    }
    if (nmiss) { /* read them first; a second time round, the page moved: try again */
        free(out);
        if (rows)
            reply_error(req, TENQ_EUNAVAILABLE, NULL,
                        "the morgue changed while its args were "
                        "read; try again");
        else
            srv_with_args(s, req, missing, nmiss, morgue_with_args,
                          memcpy(xmalloc(sizeof(*who)), who, sizeof(*who)));
        free(missing);
        return;
    }
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_key(&b, "jobs");
    jb_arr(&b);
    engine_job_info last = {0};
    for (size_t i = 0; i < n; i++) {
        engine_job_get(out[i], &last);
        srv_args_fill(&last, rows);
        if (who->tok && !token_allows_queue(who->tok, last.queue)) continue;
        api_json_job(&b, &last, api_job_view(who) & ~JOB_VIEW_TOKEN, NULL, 0);
    }
    jb_arr_end(&b);
    jb_key(&b, "next");
    if ((long)n == lim && n) {
        char c[64];
        if (so == ENGINE_MORGUE_NEWEST)
            snprintf(c, sizeof c, "%lld.%llu", (long long)last.finished_at,
                     (unsigned long long)last.id);
        else
            snprintf(c, sizeof c, "%llu", (unsigned long long)last.id);
        jb_str(&b, c);
    } else {
        jb_null(&b);
    }
    jb_obj_end(&b);
    free(out);
    reply_json(req, 200, &b);
}

static bool morgue_job(server *s, http_req *req, const principal *who, const char *seg,
                       uint64_t *id)
{
    *id = req_path_id(req, seg);
    if (!*id) return false;
    engine_job *j = engine_find(s->e, *id);
    if (!j || !auth_may_see_job(who, engine_job_tenant(j), engine_job_queue(j))) {
        reply_error(req, TENQ_ENOT_FOUND, "id", "no job %llu in the morgue",
                    (unsigned long long)*id);
        return false;
    }
    return true;
}

void h_morgue_requeue(server *s, http_req *req, const principal *who, const char **args)
{
    uint64_t id;
    if (!morgue_job(s, req, who, args[0], &id)) return;
    engine_err err;
    if (engine_morgue_requeue(s->e, srv_now(s), id, &err) != 0) {
        reply_engine_err(req, &err);
        return;
    }
    engine_job *j = engine_find(s->e, id);
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_kint(&b, "id", (long long)id);
    jb_kstr(&b, "state", j ? engine_state_name(engine_job_state(j)) : "merged");
    if (j && engine_job_state(j) == ENGINE_MERGED) {
        engine_job_info in;
        engine_job_get(j, &in);
        jb_kint(&b, "merged_into", (long long)in.merged_into);
    }
    jb_obj_end(&b);
    srv_commit_reply(s, req, 200, &b);
}

void h_morgue_delete(server *s, http_req *req, const principal *who, const char **args)
{
    uint64_t id;
    if (!morgue_job(s, req, who, args[0], &id)) return;
    engine_err err;
    if (engine_morgue_delete(s->e, srv_now(s), id, &err) != 0) {
        reply_engine_err(req, &err);
        return;
    }
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_kint(&b, "id", (long long)id);
    jb_kbool(&b, "deleted", true);
    jb_obj_end(&b);
    srv_commit_reply(s, req, 200, &b);
}

#define BULK_MAX 100000

static void morgue_bulk(server *s, http_req *req, const principal *who, bool requeue)
{
    json_t *body = req_body(req);
    if (!body) return;
    static const char *const fields[] = {"tenant", "queue", "type", "limit", NULL};
    engine_morgue_filter f = {0};
    long long limit = BULK_MAX;
    /* a filter left out means any: none may be null (an unset variable) */
    if (!req_only_fields(req, body, fields) || !req_no_null(req, body) ||
        !req_name(req, body, "tenant", ENGINE_NAME, &f.tenant) ||
        !req_name(req, body, "queue", ENGINE_NAME, &f.queue) ||
        !req_name(req, body, "type", ENGINE_TYPE, &f.type) ||
        !req_int(req, body, "limit", &limit, NULL, 1, BULK_MAX)) {
        json_decref(body);
        return;
    }
    if (who->role == ROLE_TENANT && who->tok) {
        if (f.tenant && strcmp(f.tenant, who->tok->tenant) != 0) {
            reply_error(req, TENQ_EFORBIDDEN, "tenant", "a tenant token acts on its own morgue");
            json_decref(body);
            return;
        }
        f.tenant = who->tok->tenant;
    }
    if (who->tok && who->tok->queues && !f.queue) {
        reply_error(req, TENQ_EINVALID, "queue", "this token is limited to queues: name one");
        json_decref(body);
        return;
    }
    if (f.queue && who->tok && !token_allows_queue(who->tok, f.queue)) {
        reply_error(req, TENQ_EFORBIDDEN, "queue", "this token may not use queue %s", f.queue);
        json_decref(body);
        return;
    }
    int64_t now = srv_now(s);
    size_t n = requeue ? engine_morgue_requeue_where(s->e, now, &f, (size_t)limit)
                       : engine_morgue_delete_where(s->e, now, &f, (size_t)limit);
    json_decref(body);
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_kint(&b, requeue ? "requeued" : "deleted", (long long)n);
    jb_obj_end(&b);
    srv_commit_reply(s, req, 200, &b);
}

void h_morgue_requeue_where(server *s, http_req *req, const principal *who, const char **args)
{
    (void)args;
    morgue_bulk(s, req, who, true);
}

void h_morgue_delete_where(server *s, http_req *req, const principal *who, const char **args)
{
    (void)args;
    morgue_bulk(s, req, who, false);
}
