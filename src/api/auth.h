// SPDX-License-Identifier: Apache-2.0
/* Tokens and roles (auth.c): who may ask what.
 *
 * Tokens are held in memory by the SHA-256 of their secret (the secret
 * itself is never stored), each with a role and optionally a list of
 * queues; a request is made by a principal: a token, or everyone on a
 * server with no tokens.  Pure: no server, no store (the store's tokens
 * come in through auth_load.c). */
#ifndef TENQ_API_AUTH_H
#define TENQ_API_AUTH_H

#include "base/htab.h"
#include "engine/engine.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ROLE_VIEWER is a token's role only: a request made with one has the
 * role of its scope (ROLE_ADMIN for "viewer", ROLE_TENANT for
 * "viewer:NAME") with read_only set (router.c), so that every handler
 * scopes its reads as for those roles. */
typedef enum {
    ROLE_NONE = 0,
    ROLE_ADMIN = 1,
    ROLE_TENANT = 2,
    ROLE_WORKER = 4,
    ROLE_VIEWER = 8
} role_kind;
#define ROLES_ALL (ROLE_ADMIN | ROLE_TENANT | ROLE_WORKER)

typedef struct token {
    int64_t id;
    char hash[65];
    role_kind role;
    char tenant[ENGINE_NAME_MAX + 1]; /* ROLE_TENANT; ROLE_VIEWER: its scope ("": every tenant) */
    char **queues;                    /* NULL: every queue */
    size_t nqueues;
    char *queues_json;
    int64_t created_at;
    bool hide_data; /* a viewer that sees jobs without their args and results */
    bool revoked;   /* kept until exit: requests in flight may point here */
} token;

/* Who is asking: a token, or everyone (no tokens configured). */
typedef struct principal {
    role_kind role;
    const token *tok; /* NULL when no tokens exist */
    bool read_only;   /* a viewer: GET only */
    bool hide_data;   /* jobs shown without args, payloads, result, progress */
} principal;

/* The server's tokens (server.auth). */
typedef struct auth {
    htab by_hash;
    token **all;
    size_t n, cap;
    int64_t next_id;
} auth;

void auth_init(auth *a);
void auth_free(auth *a);
token *auth_add(auth *a, int64_t id, const char *hash, const char *role, const char *queues_json,
                int64_t created_at, bool hide_data);
token *auth_find_secret(auth *a, const char *secret);
token *auth_find_id(auth *a, int64_t id);
/* The token a verified client certificate stands for: its common name is
 * "token:ID" (mutual TLS).  NULL with the reason in why when it names none,
 * or one unknown or revoked. */
token *auth_find_cert(auth *a, const char *cn, char *why, size_t wl);
/* Revokes at once: the token no longer authenticates. */
void auth_revoke(auth *a, token *t);
/* Parses "admin", "worker", "tenant:NAME", "viewer", "viewer:NAME". */
bool auth_parse_role(const char *role, role_kind *kind, char *tenant);
/* A token's role as the API writes it ("tenant:acme", "viewer"), into out. */
void auth_role_text(const token *t, char *out, size_t len);
/* The role's word alone, for messages ("tenant", "viewer"). */
const char *auth_role_word(role_kind r);
bool token_allows_queue(const token *t, const char *queue);
/* A new random secret: "tq_" + 43 base64url characters. */
void auth_new_secret(char out[64]);

/* Admin and worker tokens see a job's lease token; tenants do not. */
bool auth_shows_token(const principal *who);
/* Whether the principal may see a job of this tenant and queue. */
bool auth_may_see_job(const principal *who, const char *tenant, const char *queue);

#endif
