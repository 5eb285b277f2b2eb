// SPDX-License-Identifier: Apache-2.0
/* Tokens (list, create, revoke) and who a token is (whoami). */
#include "auth.h"
#include "clock.h"
#include "commit.h"
#include "handlers.h"
#include "http.h"
#include "jbuf.h"
#include "reply.h"
#include "request.h"
#include "server.h"

#include "base/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sha256.h"

/* ---- tokens ------------------------------------------------------------------------------- */

static void json_token(jbuf *b, const token *t)
{
    jb_kint(b, "id", t->id);
    char role[ENGINE_NAME_MAX + 16];
    auth_role_text(t, role, sizeof role);
    jb_kstr(b, "role", role);
    jb_kraw(b, "queues", t->queues_json);
    jb_kbool(b, "hide_data", t->hide_data);
    jb_kint(b, "created_at", t->created_at);
}

void h_tokens(server *s, http_req *req, const principal *who, const char **args)
{
    (void)who;
    (void)args;
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_key(&b, "tokens");
    jb_arr(&b);
    for (size_t i = 0; i < s->auth.n; i++) {
        if (s->auth.all[i]->revoked) continue;
        jb_obj(&b);
        json_token(&b, s->auth.all[i]);
        jb_obj_end(&b);
    }
    jb_arr_end(&b);
    jb_obj_end(&b);
    reply_json(req, 200, &b);
}

void h_token_create(server *s, http_req *req, const principal *who, const char **args)
{
    (void)who;
    (void)args;
    json_t *body = req_body(req);
    if (!body) return;
    static const char *const fields[] = {"role", "queues", "hide_data", NULL};
    const char *role = NULL;
    if (!req_only_fields(req, body, fields) || !req_str(req, body, "role", &role, true)) {
        json_decref(body);
        return;
    }
    role_kind kind;
    if (!auth_parse_role(role, &kind, NULL)) {
        reply_error(req, TENQ_EINVALID, "role",
                    "role is admin, worker, tenant:NAME, viewer or viewer:NAME");
        json_decref(body);
        return;
    }
    json_t *hd = json_object_get(body, "hide_data");
    if (hd && !json_is_boolean(hd) && !json_is_null(hd)) {
        reply_error(req, TENQ_EINVALID, "hide_data", "hide_data is true or false");
        json_decref(body);
        return;
    }
    bool hide_data = json_is_true(hd);
    if (hide_data && kind != ROLE_VIEWER) {
        reply_error(req, TENQ_EINVALID, "hide_data", "hide_data is for viewer tokens only");
        json_decref(body);
        return;
    }
    char *queues = NULL;
    json_t *q = json_object_get(body, "queues");
    if (json_is_null(q)) { /* left out: every queue; a null is not read so */
        reply_error(req, TENQ_EINVALID, "queues",
                    "queues is null: leave it out (for every queue), or list some");
        json_decref(body);
        return;
    }
    if (q) {
        bool ok = json_is_array(q) && json_array_size(q) > 0 && json_array_size(q) <= 64;
        size_t i;
        json_t *v;
        json_array_foreach(q, i, v) ok =
            ok && json_is_string(v) && engine_name_valid(json_string_value(v));
        if (!ok) {
            reply_error(req, TENQ_EINVALID, "queues", "queues must be a list of queue names");
            json_decref(body);
            return;
        }
        queues = canonical_json(q);
    }
    char secret[64], hex[65];
    auth_new_secret(secret);
    sha256_hex(secret, strlen(secret), hex);
    store_token st = {s->auth.next_id, hex, role, queues, srv_now(s), 0, hide_data};
    token *t = auth_add(&s->auth, st.id, hex, role, queues, st.created_at, hide_data);
    store_batch_token(s->commit.batch, &st);
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    json_token(&b, t);
    jb_kstr(&b, "token", secret);
    jb_obj_end(&b);
    free(queues);
    json_decref(body);
    srv_commit_reply(s, req, 201, &b);
}

void h_token_revoke(server *s, http_req *req, const principal *who, const char **args)
{
    (void)who;
    char *end;
    long long id = strtoll(args[0], &end, 10);
    token *t = *end ? NULL : auth_find_id(&s->auth, id);
    if (!t) {
        reply_error(req, TENQ_ENOT_FOUND, "id", "no token %s", args[0]);
        return;
    }
    auth_revoke(&s->auth, t);
    store_batch_token_revoke(s->commit.batch, id, srv_now(s));
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_kint(&b, "id", id);
    jb_kbool(&b, "revoked", true);
    jb_obj_end(&b);
    srv_commit_reply(s, req, 200, &b);
}

/* ---- whoami ---------------------------------------------------------------------------------- */

void h_whoami(server *s, http_req *req, const principal *who, const char **args)
{
    (void)s;
    (void)args;
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    if (!who->tok) {
        /* no tokens: everyone is admin (loopback only) */
        jb_kstr(&b, "role", "admin");
        jb_key(&b, "token_id");
        jb_null(&b);
        jb_kbool(&b, "auth", false);
    } else {
        const token *t = who->tok;
        jb_kstr(&b, "role", auth_role_word(t->role));
        if (t->tenant[0]) jb_kstr(&b, "tenant", t->tenant);
        if (t->role == ROLE_VIEWER) {
            jb_kbool(&b, "read_only", true);
            jb_kbool(&b, "hide_data", t->hide_data);
        }
        jb_key(&b, "queues");
        if (t->queues) {
            jb_arr(&b);
            for (size_t i = 0; i < t->nqueues; i++) jb_str(&b, t->queues[i]);
            jb_arr_end(&b);
        } else
            jb_null(&b);
        jb_kint(&b, "token_id", t->id);
        jb_kbool(&b, "auth", true);
    }
    jb_obj_end(&b);
    reply_json(req, 200, &b);
}
