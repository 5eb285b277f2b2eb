// SPDX-License-Identifier: Apache-2.0
/* Requests made safe to send again: POST /v1/jobs with an Idempotency-Key
 * header.
 *
 * A client that lost the answer to a submit (a broken connection, a
 * takeover) cannot know whether its jobs were made; it sends the same
 * request again with the same key.  The first answer of a keyed request is
 * committed with its jobs (the store's `requests` table) and its key kept
 * in memory for --request-key-ttl; the same key again, with the same body,
 * is answered that first answer (read back from the store, with
 * Idempotent-Replayed: true) and makes nothing.  The same key with another
 * body is refused (409).  A key whose request is still being committed
 * waits for that commit.  A request answered with an error keeps no key:
 * it changed nothing, and sending it again does it again.
 *
 * Unlike a job's idempotency_key (one record a job, kept a day), this costs
 * one row and a few dozen bytes of memory a request, whatever the batch,
 * for minutes: every tenq library sends one with every submit. */
#include "request_keys.h"

#include "clock.h"
#include "commit.h"
#include "read_ctx.h"
#include "reply.h"
#include "request_read.h"
#include "server.h"
#include "submit_json.h"

#include "base/hash.h"
#include "base/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct rkey rkey;
struct rkey {
    uint64_t hash, fingerprint;
    int64_t created_at;
    bool pending; /* its request is not committed yet */
    struct rkey *older, *newer;
    char *key;
    char scope[]; /* then the key */
};

struct rkey_set {
    htab by_key;
    rkey *oldest, *newest;
};

static const hash_key fixed = {0x7465, 0x6e71}; /* fingerprints outlive the process */

static uint64_t key_hash(const char *scope, const char *key)
{
    uint64_t h = hash_bytes(&fixed, scope, strlen(scope));
    return hash_combine(h, hash_bytes(&fixed, key, strlen(key)));
}

typedef struct rkey_probe {
    const char *scope, *key;
} rkey_probe;

static bool rkey_eq(const void *item, const void *probe)
{
    const rkey *k = item;
    const rkey_probe *p = probe;
    return !strcmp(k->scope, p->scope) && !strcmp(k->key, p->key);
}

rkey_set *rkeys_new(void)
{
    return xcalloc(1, sizeof(rkey_set));
}

static void rkey_drop(rkey_set *set, rkey *k)
{
    htab_remove(&set->by_key, k->hash, k);
    if (k->older)
        k->older->newer = k->newer;
    else
        set->oldest = k->newer;
    if (k->newer)
        k->newer->older = k->older;
    else
        set->newest = k->older;
    free(k);
}

void rkeys_free(rkey_set *set)
{
    if (!set) return;
    while (set->oldest) rkey_drop(set, set->oldest);
    htab_free(&set->by_key);
    free(set);
}

static rkey *rkey_find(rkey_set *set, const char *scope, const char *key)
{
    rkey_probe p = {scope, key};
    return set->by_key.len ? htab_find(&set->by_key, key_hash(scope, key), rkey_eq, &p) : NULL;
}

/* Adds a key as the newest (created_at in the order of adding). */
static rkey *rkey_add(rkey_set *set, const char *scope, const char *key, uint64_t fp,
                      int64_t created_at)
{
    size_t ls = strlen(scope) + 1, lk = strlen(key) + 1;
    rkey *k = xcalloc(1, sizeof(*k) + ls + lk);
    memcpy(k->scope, scope, ls);
    k->key = k->scope + ls;
    memcpy(k->key, key, lk);
    k->hash = key_hash(scope, key);
    k->fingerprint = fp;
    k->created_at = created_at;
    k->older = set->newest;
    if (set->newest)
        set->newest->newer = k;
    else
        set->oldest = k;
    set->newest = k;
    htab_insert(&set->by_key, k->hash, k);
    return k;
}

/* Forgets the committed keys older than the TTL. */
static void rkeys_expire(rkey_set *set, int64_t before)
{
    while (set->oldest && set->oldest->created_at < before && !set->oldest->pending)
        rkey_drop(set, set->oldest);
}

/* ---- loads (the loader thread: rows into a set the loop installs) ---------------------- */

typedef struct loaded_key {
    store_request_key r;
    char *mem;
} loaded_key;

typedef struct loaded_keys {
    loaded_key *v;
    size_t n, cap;
} loaded_keys;

void rkeys_collect(void *ctx, const store_request_key *r)
{
    loaded_keys *l = ctx;
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
    }
    loaded_key *k = &l->v[l->n++];
    k->r = *r;
    size_t ls = strlen(r->scope) + 1, lk = strlen(r->key) + 1;
    k->mem = xmalloc(ls + lk);
    memcpy(k->mem, r->scope, ls);
    memcpy(k->mem + ls, r->key, lk);
    k->r.scope = k->mem;
    k->r.key = k->mem + ls;
}

static int by_created(const void *a, const void *b)
{
    int64_t x = ((const loaded_key *)a)->r.created_at, y = ((const loaded_key *)b)->r.created_at;
    return x < y ? -1 : x > y;
}

rkey_set *rkeys_from_load(void *loaded)
{
    loaded_keys *l = loaded;
    rkey_set *set = rkeys_new();
    if (!l) return set;
    if (l->n) qsort(l->v, l->n, sizeof(*l->v), by_created);
    for (size_t i = 0; i < l->n; i++) {
        if (!rkey_find(set, l->v[i].r.scope, l->v[i].r.key))
            rkey_add(set, l->v[i].r.scope, l->v[i].r.key, l->v[i].r.fingerprint,
                     l->v[i].r.created_at);
        free(l->v[i].mem);
    }
    free(l->v);
    free(l);
    return set;
}

void *rkeys_load_new(void)
{
    return xcalloc(1, sizeof(loaded_keys));
}

void rkeys_load_free(void *loaded)
{
    loaded_keys *l = loaded;
    if (!l) return;
    for (size_t i = 0; i < l->n; i++) free(l->v[i].mem);
    free(l->v);
    free(l);
}

/* ---- requests ------------------------------------------------------------------------------ */

#define KEY_MAX 256

static bool key_valid(const char *k)
{
    size_t n = strlen(k);
    if (n == 0 || n > KEY_MAX) return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)k[i] < 0x21 || (unsigned char)k[i] == 0x7f) return false;
    return true;
}

typedef struct replay_ctx {
    read_ctx held; /* the request, while its first answer is read */
    server *srv;
    principal who;
    const char **args; /* argv's: the path's {} segments, copied (the router's are its own) */
    char *argv[4];
    rkey_again again; /* the handler, when the request is to be made anew */
    char *scope, *key;
    uint64_t fingerprint;
} replay_ctx;

static replay_ctx *replay_new(server *s, const principal *who, const char **args, rkey_again again,
                              const rkey_ctx *k)
{
    replay_ctx *c = xcalloc(1, sizeof(*c));
    c->srv = s;
    c->who = *who;
    for (int i = 0; i < 4 && args && args[i]; i++) c->argv[i] = xstrdup(args[i]);
    c->args = (const char **)c->argv;
    c->again = again;
    c->scope = xstrdup(k->scope);
    c->key = xstrdup(k->key);
    c->fingerprint = k->fingerprint;
    return c;
}

static void replay_free(replay_ctx *c)
{
    for (int i = 0; i < 4; i++) free(c->argv[i]);
    free(c->scope);
    free(c->key);
    free(c);
}

#define RANGE_TAG "range " /* a stored answer kept as an rkey_range (never JSON) */

/* A stored answer as it was sent: a range written out again, as columns
 * when it ends in " columns"; NULL when the answer is not a range. */
static char *unpack_answer(const char *answer, size_t *len)
{
    unsigned long long first, step;
    size_t n;
    char name[32], form[16] = "";
    if (strncmp(answer, RANGE_TAG, strlen(RANGE_TAG)) ||
        sscanf(answer + strlen(RANGE_TAG), "%llu %llu %zu %31s %15s", &first, &step, &n, name,
               form) < 4)
        return NULL;
    int state = engine_state_parse(name);
    if (state < 0 || n < 2 || n > SUBMIT_BATCH_MAX) return NULL;
    engine_submit_res *res = xcalloc(n, sizeof(*res));
    for (size_t i = 0; i < n; i++)
        res[i] = (engine_submit_res){
            .id = first + i * step, .state = (engine_state)state, .created = true};
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    api_json_submitted(&b, res, n, !strcmp(form, "columns"));
    jb_obj_end(&b);
    free(res);
    return jb_take(&b, len);
}

/* The first answer, read back from the store: sent again as it was. */
static void on_answer(void *ctx, int rc, const store_request_key *r)
{
    replay_ctx *c = ctx;
    http_req *req = read_ctx_take(&c->held);
    if (!req) {
    } else if (rc != 0) {
        reply_error(req, rc, NULL, "reading the request's first answer failed: %s",
                    store_errmsg(c->srv->st));
    } else if (!r) { /* kept no more (its TTL passed meanwhile): a new request */
        c->again(c->srv, req, &c->who, c->args);
    } else {
        size_t len = 0;
        char *whole = unpack_answer(r->answer, &len);
        http_reply(req, r->status, "application/json", "Idempotent-Replayed: true\r\n",
                   whole ? whole : r->answer, whole ? len : strlen(r->answer));
        free(whole);
    }
    replay_free(c);
}

static void replay(replay_ctx *c, http_req *req)
{
    read_ctx_hold(&c->held, req);
    store_get_request(c->srv->st, c->scope, c->key, on_answer, c);
}

/* The key's first request was being committed: now it is, or it failed. */
static void after_first(server *s, http_req *req, void *ctx, int rc)
{
    replay_ctx *c = ctx;
    if (rc != 0) req = NULL; /* answered already */
    rkey *k = req ? rkey_find(s->rkeys, c->scope, c->key) : NULL;
    if (!req) {
        replay_free(c);
    } else if (!k) { /* the first failed: this one is the request now */
        c->again(s, req, &c->who, c->args);
        replay_free(c);
    } else {
        replay(c, req);
    }
}

bool srv_request_key_begin(server *s, http_req *req, const principal *who, const char **args,
                           rkey_again again, rkey_ctx *out)
{
    memset(out, 0, sizeof(*out));
    const char *key = http_header_get(req, "idempotency-key");
    if (!key) return true;
    if (!key_valid(key)) {
        reply_error(req, TENQ_EINVALID, "Idempotency-Key",
                    "the Idempotency-Key header must be 1 to %d printable characters", KEY_MAX);
        return false;
    }
    out->scope = who->role == ROLE_TENANT && who->tok ? who->tok->tenant : "";
    out->key = key;
    out->fingerprint = hash_bytes(&fixed, req->body ? req->body : "", req->body_len);
    rkeys_expire(s->rkeys, srv_now(s) - s->cfg.request_key_ttl_ms);
    rkey *k = rkey_find(s->rkeys, out->scope, key);
    if (!k) return true;
    if (k->fingerprint != out->fingerprint) {
        reply_error(req, TENQ_ECONFLICT, "Idempotency-Key",
                    "this Idempotency-Key was sent with another request");
        return false;
    }
    replay_ctx *c = replay_new(s, who, args, again, out);
    if (k->pending)
        srv_after_commit(s, req, after_first, c);
    else
        replay(c, req);
    return false;
}

typedef struct keyed_reply {
    char *scope, *key;
    int status;
    char *body;
    size_t len;
} keyed_reply;

static void keyed_committed(server *s, http_req *req, void *ctx, int rc)
{
    keyed_reply *r = ctx;
    rkey *k = rkey_find(s->rkeys, r->scope, r->key);
    if (rc != 0) {
        if (k && k->pending) rkey_drop(s->rkeys, k); /* nothing was kept */
    } else {
        if (k) k->pending = false;
        if (req) http_reply(req, r->status, "application/json", NULL, r->body, r->len);
    }
    free(r->scope);
    free(r->key);
    free(r->body);
    free(r);
}

void srv_request_key_reply(server *s, http_req *req, const rkey_ctx *k, int status, jbuf *b,
                           const rkey_range *range)
{
    if (!k->key) {
        srv_commit_reply(s, req, status, b);
        return;
    }
    keyed_reply *r = xcalloc(1, sizeof(*r));
    r->scope = xstrdup(k->scope);
    r->key = xstrdup(k->key);
    r->status = status;
    r->body = jb_take(b, &r->len);
    int64_t now = srv_now(s);
    char packed[96];
    if (range)
        snprintf(packed, sizeof packed, RANGE_TAG "%llu %llu %zu %s%s",
                 (unsigned long long)range->first, (unsigned long long)range->step, range->n,
                 engine_state_name(range->state), range->columns ? " columns" : "");
    store_request_key row = {k->scope, k->key, k->fingerprint, status, range ? packed : r->body,
                             now};
    store_batch_request(s->commit.batch, &row);
    rkey_add(s->rkeys, k->scope, k->key, k->fingerprint, now)->pending = true;
    srv_after_commit(s, req, keyed_committed, r);
}
