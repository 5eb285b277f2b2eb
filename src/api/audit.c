// SPDX-License-Identifier: Apache-2.0
/* The audit log: a row for every change made through the API, written in
 * the same commit as the change.
 *
 * Which routes are changes the log records is said once, in the route
 * table (ROUTE_AUDIT, router.c).  The router marks such a request while its
 * handler runs (srv_audit_begin, srv_audit_end); the handler's
 * srv_commit_reply (commit.c) puts the row into the batch being built
 * (srv_audit_note),
 * which holds the handler's changes, so that one commit writes both or
 * neither; a change committed by a transaction of its own (a bulk delete,
 * store_purge_finished) takes the row with srv_audit_take.  A request
 * refused (an error answer) changes nothing and writes no row.  GET
 * /v1/audit reads the log: api_audit.c. */
#include "audit.h"

#include "clock.h"
#include "server.h"

#include "base/utf8.h"
#include "base/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AUDIT_DETAIL_MAX 2048 /* bytes of the request's body kept */

void srv_audit_begin(server *s, http_req *req, const principal *who)
{
    s->audit.req = req;
    s->audit.who = *who;
}

void srv_audit_end(server *s)
{
    s->audit.req = NULL;
}

/* The row of the request being handled, when it is audited (and not
 * written yet); its strings malloc'd into mem[0..2]. */
static bool audit_fill(server *s, http_req *req, int status, store_audit *a, char *mem[3])
{
    if (!req || req != s->audit.req) return false;
    s->audit.req = NULL; /* one row a request */
    const principal *who = &s->audit.who;
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

bool srv_audit_note(server *s, http_req *req, int status, store_batch *into)
{
    store_audit a;
    char *mem[3];
    if (!audit_fill(s, req, status, &a, mem)) return false;
    store_batch_audit(into, &a); /* the arena copies the strings */
    for (int i = 0; i < 3; i++) free(mem[i]);
    return true;
}

const store_audit *srv_audit_take(server *s, http_req *req, int status, store_audit *a,
                                  char *mem[3])
{
    mem[0] = mem[1] = mem[2] = NULL;
    return audit_fill(s, req, status, a, mem) ? a : NULL;
}
