// SPDX-License-Identifier: Apache-2.0
/* The store's tokens into the server's (auth.c holds them), and the admin
 * token TENQ_ADMIN_TOKEN makes (auth_load.h). */
#include "auth_load.h"

#include "api.h"
#include "auth.h"
#include "clock.h"
#include "commit.h"
#include "server.h"

#include "base/sha256.h"
#include "base/xalloc.h"

#include <stdlib.h>
#include <string.h>

void token_list_add(void *ctx, const store_token *t)
{
    token_list *l = ctx;
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
    }
    store_token *c = &l->v[l->n++];
    *c = *t;
    c->hash = xstrdup(t->hash);
    c->role = xstrdup(t->role);
    c->queues = t->queues ? xstrdup(t->queues) : NULL;
}

void token_list_free(token_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free((char *)l->v[i].hash);
        free((char *)l->v[i].role);
        free((char *)l->v[i].queues);
    }
    free(l->v);
    *l = (token_list){0};
}

void srv_merge_tokens(server *s, const store_token *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        token *t = NULL;
        for (size_t k = 0; k < s->auth.n && !t; k++)
            if (s->auth.all[k]->id == v[i].id) t = s->auth.all[k];
        if (!t)
            t = auth_add(&s->auth, v[i].id, v[i].hash, v[i].role, v[i].queues, v[i].created_at,
                         v[i].hide_data);
        if (t && v[i].revoked_at) auth_revoke(&s->auth, t);
    }
}

int srv_ensure_admin_token(server *s)
{
    const char *secret = s->cfg.admin_token;
    if (!*secret) return 0;
    token *t = auth_find_secret(&s->auth, secret);
    if (t && t->role != ROLE_ADMIN) {
        log_event(LOG_ERROR, "auth", "TENQ_ADMIN_TOKEN is already a %s token",
                  auth_role_word(t->role));
        return -1;
    }
    if (t && t->id > 0) return 0;
    char hex[65];
    sha256_hex(secret, strlen(secret), hex);
    if (!s->lead.leading) {
        /* a standby knows it (its own endpoints) but cannot store it: the
         * leader it becomes stores it (id 0 until then) */
        if (!t) auth_add(&s->auth, 0, hex, "admin", NULL, srv_now(s), false);
        return 0;
    }
    store_token st = {s->auth.next_id, hex, "admin", NULL, srv_now(s), 0, false};
    store_batch_token(s->commit.batch, &st);
    srv_schedule_flush(s);
    if (t) {
        t->id = st.id;
        s->auth.next_id = st.id + 1;
    } else {
        auth_add(&s->auth, st.id, hex, "admin", NULL, st.created_at, false);
    }
    log_event(LOG_INFO, "auth", "created the admin token from TENQ_ADMIN_TOKEN (id %lld)",
              (long long)st.id);
    return 0;
}

int srv_load_tokens(server *s)
{
    token_list tl = {0};
    int rc = store_load_tokens(s->st, token_list_add, &tl);
    srv_merge_tokens(s, tl.v, tl.n);
    token_list_free(&tl);
    if (rc) log_event(LOG_ERROR, "store", "loading tokens: %s", store_errmsg(s->st));
    return rc;
}
