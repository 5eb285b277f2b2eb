// SPDX-License-Identifier: Apache-2.0
/* Tokens: held in memory by the SHA-256 of their secret (the secret itself is
 * never stored), with a role and optionally a list of queues. */
#include "internal.h"

#include "base/hash.h"
#include "base/sha256.h"

#include <sys/random.h>

static uint64_t hhash(const char *hex)
{
    uint64_t h = 0;
    memcpy(&h, hex, 8); /* already a uniform digest */
    return hash_u64(h);
}

static bool tok_eq(const void *item, const void *key)
{
    return strcmp(((const token *)item)->hash, key) == 0;
}

void auth_init(auth *a)
{
    memset(a, 0, sizeof(*a));
    a->next_id = 1;
}

static void tok_free(token *t)
{
    for (size_t i = 0; i < t->nqueues; i++) free(t->queues[i]);
    free(t->queues);
    free(t->queues_json);
    free(t);
}

void auth_free(auth *a)
{
    for (size_t i = 0; i < a->n; i++) tok_free(a->all[i]);
    free(a->all);
    htab_free(&a->by_hash);
    memset(a, 0, sizeof(*a));
}

bool auth_parse_role(const char *role, role_kind *kind, char *tenant)
{
    if (!role) return false;
    if (!strcmp(role, "admin")) {
        *kind = ROLE_ADMIN;
        return true;
    }
    if (!strcmp(role, "worker")) {
        *kind = ROLE_WORKER;
        return true;
    }
    if (!strncmp(role, "tenant:", 7) && engine_name_valid(role + 7)) {
        *kind = ROLE_TENANT;
        if (tenant) snprintf(tenant, ENGINE_NAME_MAX + 1, "%s", role + 7);
        return true;
    }
    if (!strcmp(role, "viewer") || (!strncmp(role, "viewer:", 7) && engine_name_valid(role + 7))) {
        *kind = ROLE_VIEWER;
        if (tenant) snprintf(tenant, ENGINE_NAME_MAX + 1, "%s", role[6] ? role + 7 : "");
        return true;
    }
    return false;
}

const char *auth_role_word(role_kind r)
{
    return r == ROLE_ADMIN    ? "admin"
           : r == ROLE_TENANT ? "tenant"
           : r == ROLE_WORKER ? "worker"
           : r == ROLE_VIEWER ? "viewer"
                              : "none";
}

void auth_role_text(const token *t, char *out, size_t len)
{
    snprintf(out, len, "%s%s%s", auth_role_word(t->role), t->tenant[0] ? ":" : "", t->tenant);
}

token *auth_add(auth *a, int64_t id, const char *hash, const char *role, const char *queues_json,
                int64_t created_at, bool hide_data)
{
    token *t = xcalloc(1, sizeof(*t));
    if (!auth_parse_role(role, &t->role, t->tenant) || strlen(hash) != 64) {
        free(t);
        return NULL;
    }
    t->id = id;
    memcpy(t->hash, hash, 65);
    t->created_at = created_at;
    t->hide_data = hide_data;
    if (queues_json) {
        json_t *arr = json_loads(queues_json, 0, NULL);
        if (json_is_array(arr)) {
            t->queues_json = xstrdup(queues_json);
            t->nqueues = json_array_size(arr);
            t->queues = xcalloc(t->nqueues + 1, sizeof(char *));
            for (size_t i = 0; i < t->nqueues; i++) {
                const char *q = json_string_value(json_array_get(arr, i));
                t->queues[i] = xstrdup(q ? q : "");
            }
        }
        json_decref(arr);
    }
    htab_insert(&a->by_hash, hhash(hash), t);
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 16;
        a->all = xrealloc(a->all, a->cap * sizeof(token *));
    }
    a->all[a->n++] = t;
    if (id >= a->next_id) a->next_id = id + 1;
    return t;
}

token *auth_find_secret(auth *a, const char *secret)
{
    char hex[65];
    sha256_hex(secret, strlen(secret), hex);
    return htab_find(&a->by_hash, hhash(hex), tok_eq, hex);
}

token *auth_find_id(auth *a, int64_t id)
{
    for (size_t i = 0; i < a->n; i++)
        if (a->all[i]->id == id && !a->all[i]->revoked) return a->all[i];
    return NULL;
}

token *auth_find_cert(auth *a, const char *cn, char *why, size_t wl)
{
    char *end = NULL;
    long long id = 0;
    if (strncmp(cn, "token:", 6) == 0 && cn[6] >= '1' && cn[6] <= '9')
        id = strtoll(cn + 6, &end, 10);
    if (id <= 0 || *end) {
        snprintf(why, wl,
                 "the client certificate (CN=%.64s) names no token: its common name must be "
                 "token:ID",
                 cn);
        return NULL;
    }
    token *t = auth_find_id(a, id);
    if (!t) snprintf(why, wl, "the client certificate's token %lld is unknown or revoked", id);
    return t;
}

void auth_revoke(auth *a, token *t)
{
    if (t->revoked) return;
    htab_remove(&a->by_hash, hhash(t->hash), t);
    t->revoked = true;
}

bool token_allows_queue(const token *t, const char *queue)
{
    if (!t || !t->queues) return true;
    for (size_t i = 0; i < t->nqueues; i++)
        if (!strcmp(t->queues[i], queue)) return true;
    return false;
}

void auth_new_secret(char out[64])
{
    uint8_t raw[32];
    size_t got = 0;
    while (got < sizeof raw) {
        ssize_t n = getrandom(raw + got, sizeof raw - got, 0);
        if (n > 0) got += (size_t)n;
    }
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    memcpy(out, "tq_", 3);
    size_t k = 3;
    for (size_t i = 0; i < sizeof raw; i += 3) {
        uint32_t v = (uint32_t)raw[i] << 16;
        if (i + 1 < sizeof raw) v |= (uint32_t)raw[i + 1] << 8;
        if (i + 2 < sizeof raw) v |= raw[i + 2];
        int chars = i + 2 < sizeof raw ? 4 : i + 1 < sizeof raw ? 3 : 2;
        for (int c = 0; c < chars; c++) out[k++] = b64[(v >> (18 - 6 * c)) & 63];
    }
    out[k] = 0;
}

/* ---- the store's tokens, and TENQ_ADMIN_TOKEN --------------------------------------------- */

/* ---- start-up -----------------------------------------------------------------------------------
 */

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
    if (!s->leading) {
        /* a standby knows it (its own endpoints) but cannot store it: the
         * leader it becomes stores it (id 0 until then) */
        if (!t) auth_add(&s->auth, 0, hex, "admin", NULL, srv_now(s), false);
        return 0;
    }
    store_token st = {s->auth.next_id, hex, "admin", NULL, srv_now(s), 0, false};
    store_batch_token(s->batch, &st);
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
