// SPDX-License-Identifier: Apache-2.0
/* GET /v1/audit: the audit log's rows (written by audit.c), newest first. */
#include "auth.h"
#include "handlers.h"
#include "http.h"
#include "jbuf.h"
#include "read_ctx.h"
#include "reply.h"
#include "request.h"
#include "server.h"

#include "base/xalloc.h"

#include <stdlib.h>
#include <string.h>

typedef struct audit_ctx {
    read_ctx held; /* the request, while the store reads */
    bool hide;     /* a viewer that does not see data: no request bodies */
    uint32_t limit;
} audit_ctx;

static void on_rows(void *ctx, int rc, const store_audit_row *rows, size_t n)
{
    audit_ctx *c = ctx;
    http_req *req = read_ctx_take(&c->held);
    if (!req) {
        free(c);
        return;
    }
    if (rc) {
        reply_error(req, rc, NULL, "reading the audit log failed");
        free(c);
        return;
    }
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_key(&b, "entries");
    jb_arr(&b);
    for (size_t i = 0; i < n; i++) {
        const store_audit *a = &rows[i].a;
        jb_obj(&b);
        jb_kint(&b, "id", rows[i].id);
        jb_kint(&b, "at", a->at);
        jb_key(&b, "token_id");
        if (a->token_id)
            jb_int(&b, a->token_id);
        else
            jb_null(&b);
        jb_kstr(&b, "role", a->role);
        jb_kstr(&b, "tenant", a->tenant);
        jb_kstr(&b, "method", a->method);
        jb_kstr(&b, "path", a->path);
        jb_kint(&b, "status", a->status);
        jb_kstr(&b, "peer", a->peer);
        if (!c->hide) jb_kstr(&b, "detail", a->detail);
        jb_obj_end(&b);
    }
    jb_arr_end(&b);
    jb_key(&b, "next_before");
    if (n == c->limit && n)
        jb_int(&b, rows[n - 1].id);
    else
        jb_null(&b);
    jb_obj_end(&b);
    reply_json(req, 200, &b);
    free(c);
}

void h_audit(server *s, http_req *req, const principal *who, const char **args)
{
    (void)args;
    store_audit_query q = {0};
    long long limit, before, token_id, since, until;
    if (!req_query_num(req, "limit", 100, 1, 1000, &limit) ||
        !req_query_num(req, "before", 0, 0, INT64_MAX, &before) ||
        !req_query_num(req, "token_id", 0, 0, INT64_MAX, &token_id) ||
        !req_query_num(req, "since", 0, 0, INT64_MAX, &since) ||
        !req_query_num(req, "until", 0, 0, INT64_MAX, &until))
        return;
    char tenant[ENGINE_NAME_MAX + 1], method[16], path[512];
    q.tenant = http_query_get(req, "tenant", tenant, sizeof tenant);
    q.method = http_query_get(req, "method", method, sizeof method);
    q.path = http_query_get(req, "path", path, sizeof path);
    if (q.method && !*q.method) q.method = NULL;
    if (q.path && !*q.path) q.path = NULL;
    if (who->role == ROLE_TENANT && who->tok) {
        /* a tenant's entries are those its tokens made */
        if (q.tenant && strcmp(q.tenant, who->tok->tenant) != 0) {
            reply_error(req, TENQ_EFORBIDDEN, "tenant", "this token sees tenant %s only",
                        who->tok->tenant);
            return;
        }
        q.tenant = who->tok->tenant;
    }
    q.limit = (uint32_t)limit;
    q.before_id = before;
    q.token_id = token_id;
    q.since = since;
    q.until = until;
    audit_ctx *c = xcalloc(1, sizeof(*c));
    c->hide = who->hide_data;
    c->limit = q.limit;
    read_ctx_hold(&c->held, req);
    store_list_audit(s->st, &q, on_rows, c);
}
