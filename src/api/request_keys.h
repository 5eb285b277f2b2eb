// SPDX-License-Identifier: Apache-2.0
/* Requests sent with an Idempotency-Key (request_keys.c): the first answer
 * kept with the request's commit, and sent again for the same key. */
#ifndef TENQ_API_REQUEST_KEYS_H
#define TENQ_API_REQUEST_KEYS_H

#include "auth.h"
#include "http.h"
#include "jbuf.h"

#include "engine/engine.h"
#include "store/store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct server server;

/* The keys kept (server.rkeys). */
typedef struct rkey_set rkey_set;

/* A request's key once read (key NULL: none). */
typedef struct rkey_ctx {
    const char *scope, *key;
    uint64_t fingerprint;
} rkey_ctx;

/* The handler to run a request again from the top (its route's). */
typedef void (*rkey_again)(server *s, http_req *req, const principal *who, const char **args);

/* Reads the header: false when it answered the request itself (a replay of
 * the first answer, a wait for it, a refusal), else fills *k (k->key NULL:
 * no key).  again runs the request anew when the first one failed. */
bool srv_request_key_begin(server *s, http_req *req, const principal *who, const char **args,
                           rkey_again again, rkey_ctx *k);

/* A batch whose every job was made, in one state, with ids a step apart:
 * its answer is kept as this range (a few bytes) instead of ~60 bytes a job,
 * and in the form it was sent in (columns or not). */
typedef struct rkey_range {
    uint64_t first, step;
    size_t n;
    engine_state state;
    bool columns;
} rkey_range;
/* Answers a submit like srv_commit_reply, keeping its answer under the key
 * with its commit. */
void srv_request_key_reply(server *s, http_req *req, const rkey_ctx *k, int status, jbuf *b,
                           const rkey_range *range);

rkey_set *rkeys_new(void);
void rkeys_free(rkey_set *set);
/* The loader thread collects a store's keys (rkeys_load_new, rkeys_collect
 * as a store_request_fn), the loop makes the set from them
 * (rkeys_from_load, which frees what it takes). */
void *rkeys_load_new(void);
void rkeys_collect(void *ctx, const store_request_key *r);
void rkeys_load_free(void *loaded);
rkey_set *rkeys_from_load(void *loaded);

#endif
