// SPDX-License-Identifier: Apache-2.0
/* The audit log: a row for every change made through the API, written in
 * the same commit as the change, and GET /v1/audit.
 *
 * Which routes are changes the log records is said once, in the route
 * table (ROUTE_AUDIT, router.c).  The router marks such a request while its
 * handler runs (srv_audit_begin, srv_audit_end); the handler's
 * srv_commit_reply (commit.c) puts the row into the batch being built,
 * which holds the handler's changes, so that one commit writes both or
 * neither; a change committed by a transaction of its own (a bulk delete,
 * store_purge_finished) takes the row with srv_audit_take.  A request
 * refused (an error answer) changes nothing and writes no row. */
#include "internal.h"

#include "base/utf8.h"

#define AUDIT_DETAIL_MAX 2048 /* bytes of the request's body kept */

void srv_audit_begin(server *s, http_req *req, const principal *who)
{
    s->audit_req = req;
    s->audit_who = *who;
}

void srv_audit_end(server *s)
{
    s->audit_req = NULL;
}

/* The row of the request being handled, when it is audited (and not
 * written yet); its strings malloc'd into mem[0..2]. */
static bool audit_fill(server *s, http_req *req, int status, store_audit *a, char *mem[3])
{
    if (!req || req != s->audit_req) return false;
    s->audit_req = NULL; /* one row a request */
    const principal *who = &s->audit_who;
    const token *t = who->tok;
    char role[ENGINE_NAME_MAX + 16];
    if (t)
        auth_role_text(t, role, sizeof role);
    else
        snprintf(role, sizeof role, "admin"); /* a server with no tokens */
    size_t n = req->body_len < AUDIT_DETAIL_MAX ? req->body_len : AUDIT_DETAIL_MAX;
    /* cut at a character's start; bytes that are not UTF-8 (a body no
     * handler read) are replaced: the row must be valid text */
    while (n > 0 && n < req->body_len && ((unsigned char)req->body[n] & 0xC0) == 0x80) n--;
    mem[0] = n ? tq_utf8_fix(req->body, n) : NULL;
    mem[1] = tq_utf8_fix(req->path, strlen(req->path));
    mem[2] = xstrdup(role);
    if (!mem[1] || (n && !mem[0])) xalloc_die();
    *a = (store_audit){
        .at = srv_now(s),
        .token_id = t ? t->id : 0,
        .role = mem[2],
        .tenant = t && t->role == ROLE_TENANT ? t->tenant : NULL,
        .method = req->method,
        .path = mem[1],
        .status = status,
        .peer = req->peer,
        .detail = mem[0],
    };
    return true;
}

void srv_audit_note(server *s, http_req *req, int status)
{
    store_audit a;
    char *mem[3];
    if (!audit_fill(s, req, status, &a, mem)) return;
    store_batch_audit(s->batch, &a); /* the arena copies the strings */
    for (int i = 0; i < 3; i++) free(mem[i]);
    srv_schedule_flush(s);
}

const store_audit *srv_audit_take(server *s, http_req *req, int status, store_audit *a,
                                  char *mem[3])
{
    mem[0] = mem[1] = mem[2] = NULL;
    return audit_fill(s, req, status, a, mem) ? a : NULL;
}

/* ---- GET /v1/audit ----------------------------------------------------------------------------
 */

typedef struct audit_ctx {
    http_req *req; /* NULL once the client left */
    bool hide;     /* a viewer that does not see data: no request bodies */
    uint32_t limit;
} audit_ctx;

static void audit_abort(http_req *req)
{
    audit_ctx *c = req->user;
    c->req = NULL;
}

static void on_rows(void *ctx, int rc, const store_audit_row *rows, size_t n)
{
    audit_ctx *c = ctx;
    http_req *req = c->req;
    if (!req) {
        free(c);
        return;
    }
    req->on_abort = NULL;
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
    c->req = req;
    c->hide = who->hide_data;
    c->limit = q.limit;
    req->user = c;
    req->on_abort = audit_abort;
    store_list_audit(s->st, &q, on_rows, c);
}
