// SPDX-License-Identifier: Apache-2.0
/* Tokens: held in memory by the SHA-256 of their secret (the secret itself is
 * never stored), with a role and optionally a list of queues (auth.h). */
#include "auth.h"

#include "base/hash.h"
#include "base/sha256.h"
#include "base/xalloc.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

bool auth_shows_token(const principal *who)
{
    return (who->role == ROLE_ADMIN || who->role == ROLE_WORKER) && !who->read_only;
}

bool auth_may_see_job(const principal *who, const char *tenant, const char *queue)
{
    if (!who->tok) return true;
    if (who->role == ROLE_TENANT && strcmp(who->tok->tenant, tenant) != 0) return false;
    return token_allows_queue(who->tok, queue);
}
