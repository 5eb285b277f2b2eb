// SPDX-License-Identifier: Apache-2.0
/* Tenants and queues: their settings and counts (GET, PUT). */
#include "auth.h"
#include "clock.h"
#include "commit.h"
#include "handlers.h"
#include "http.h"
#include "jbuf.h"
#include "rates.h"
#include "reply.h"
#include "request.h"
#include "server.h"

#include "base/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The settings of a struct as JSON members, one per row (base/settings.h). */
void api_settings_json(jbuf *b, const tq_setting *rows, size_t n, const void *settings)
{
    for (size_t i = 0; i < n; i++) {
        const tq_setting *r = &rows[i];
        long long v = engine_setting_get(r, settings);
        if (r->kind == TQ_SET_CHOICE)
            jb_kstr(b, r->name, tq_setting_word(r, v));
        else if (r->kind == TQ_SET_BOOL)
            jb_kbool(b, r->name, v != 0);
        else if (r->kind == TQ_SET_LIMIT && v == TQ_UNLIMITED)
            jb_kraw(b, r->name, "null");
        else
            jb_kint(b, r->name, v);
    }
}

/* The members of body that name a setting, read into *settings (the others
 * are left as they are); false once a refusal naming the field is sent.
 * The caller refuses unknown members first (setting_fields). */
bool api_settings_read(http_req *req, json_t *body, const tq_setting *rows, size_t n,
                       void *settings)
{
    for (size_t i = 0; i < n; i++) {
        const tq_setting *r = &rows[i];
        json_t *x = json_object_get(body, r->name);
        if (!x) continue;
        long long v = 0;
        bool ok;
        if (r->kind == TQ_SET_CHOICE) {
            ok = json_is_string(x) && (v = tq_setting_word_index(r, json_string_value(x))) >= 0;
        } else if (r->kind == TQ_SET_BOOL) {
            ok = json_is_boolean(x);
            v = json_is_true(x);
        } else if (r->kind == TQ_SET_LIMIT &&
                   (json_is_null(x) ||
                    (json_is_string(x) && !strcmp(json_string_value(x), "unlimited")))) {
            ok = true;
            v = TQ_UNLIMITED;
        } else {
            /* (a number, even one that reads as unlimited inside, is a number) */
            ok = json_is_integer(x) && (v = json_integer_value(x)) >= r->min && v <= r->max;
        }
        if (!ok) {
            char msg[256];
            tq_setting_range_text(r, msg, sizeof msg);
            reply_error(req, TENQ_EINVALID, r->name, "%s", msg);
            return false;
        }
        engine_setting_set(r, settings, v);
    }
    return true;
}

/* The names of the rows and then NULL, for req_only_fields (made once). */
const char *const *api_settings_fields(const tq_setting *rows, size_t n, const char *const **cache)
{
    if (!*cache) {
        const char **f = xcalloc(n + 1, sizeof(*f));
        for (size_t i = 0; i < n; i++) f[i] = rows[i].name;
        *cache = f;
    }
    return *cache;
}

/* GET /v1/settings: every setting of queues and tenants, as the table says
 * (the dashboard builds its forms from this). */
static void json_setting_rows(jbuf *b, const char *key, const tq_setting *rows, size_t n)
{
    jb_key(b, key);
    jb_arr(b);
    for (size_t i = 0; i < n; i++) {
        const tq_setting *r = &rows[i];
        jb_obj(b);
        jb_kstr(b, "name", r->name);
        jb_kstr(b, "kind", tq_setting_kind_name(r->kind));
        jb_kstr(b, "label", r->label);
        jb_kstr(b, "help", r->help);
        jb_key(b, "default");
        if (r->kind == TQ_SET_CHOICE)
            jb_str(b, tq_setting_word(r, r->def));
        else if (r->kind == TQ_SET_BOOL)
            jb_bool(b, r->def != 0);
        else if (r->kind == TQ_SET_LIMIT && r->def == TQ_UNLIMITED)
            jb_null(b);
        else
            jb_int(b, r->def);
        if (r->kind == TQ_SET_CHOICE) {
            jb_key(b, "choices");
            jb_arr(b);
            for (int k = 0; r->words[k]; k++) jb_str(b, r->words[k]);
            jb_arr_end(b);
        } else if (r->kind != TQ_SET_BOOL) {
            jb_kint(b, "min", r->min);
            jb_kint(b, "max", r->max);
        }
        jb_obj_end(b);
    }
    jb_arr_end(b);
}

void h_settings(server *s, http_req *req, const principal *who, const char **args)
{
    (void)s;
    (void)who;
    (void)args;
    jbuf b;
    jb_init(&b);
    api_json_settings(&b);
    reply_json(req, 200, &b);
}

void api_json_settings(jbuf *b)
{
    jb_obj(b);
    json_setting_rows(b, "queue", engine_queue_setting_rows, engine_queue_setting_count);
    json_setting_rows(b, "tenant", engine_tenant_setting_rows, engine_tenant_setting_count);
    json_setting_rows(b, "key", engine_key_setting_rows, engine_key_setting_count);
    jb_obj_end(b);
}

static void json_tenant(jbuf *b, server *s, const char *name, const engine_tenant_settings *ts,
                        const engine_counts *c)
{
    jb_obj(b);
    jb_kstr(b, "name", name);
    api_settings_json(b, engine_tenant_setting_rows, engine_tenant_setting_count, ts);
    jb_kint(b, "in_use", (long long)(c->leased + c->running));
    api_json_counts(b, c, srv_now(s));
    api_json_rates(b, s, false, name);
    jb_obj_end(b);
}

/* ---- tenants ----------------------------------------------------------------------- */

void api_list_tenant(void *ctx, const char *name, const engine_tenant_settings *ts,
                     const engine_counts *c)
{
    api_list_ctx *l = ctx;
    if (l->who->role == ROLE_TENANT && l->who->tok && strcmp(l->who->tok->tenant, name) != 0)
        return;
    json_tenant(l->b, l->s, name, ts, c);
}

void h_tenants(server *s, http_req *req, const principal *who, const char **args)
{
    (void)args;
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_key(&b, "tenants");
    jb_arr(&b);
    api_list_ctx l = {s, &b, who};
    engine_foreach_tenant(s->e, srv_now(s), api_list_tenant, &l);
    jb_arr_end(&b);
    jb_obj_end(&b);
    reply_json(req, 200, &b);
}

static bool tenant_visible(const principal *who, const char *name)
{
    return who->role != ROLE_TENANT || !who->tok || strcmp(who->tok->tenant, name) == 0;
}

static void tenant_reply(server *s, http_req *req, const char *name, bool commit)
{
    engine_tenant_settings ts;
    engine_counts c;
    if (engine_tenant_get(s->e, srv_now(s), name, &ts, &c) != 0) {
        reply_error(req, TENQ_ENOT_FOUND, "name", "no tenant %s", name);
        return;
    }
    jbuf b;
    jb_init(&b);
    json_tenant(&b, s, name, &ts, &c);
    if (commit)
        srv_commit_reply(s, req, 200, &b);
    else
        reply_json(req, 200, &b);
}

void h_tenant_get(server *s, http_req *req, const principal *who, const char **args)
{
    if (!tenant_visible(who, args[0])) {
        reply_error(req, TENQ_ENOT_FOUND, "name", "no tenant %s", args[0]);
        return;
    }
    tenant_reply(s, req, args[0], false);
}

void h_tenant_put(server *s, http_req *req, const principal *who, const char **args)
{
    (void)who;
    const char *name = args[0];
    if (!req_name_ok(req, ENGINE_NAME, "name", name)) return;
    json_t *body = req_body(req);
    if (!body) return;
    static const char *const *fields;
    engine_tenant_settings ts;
    if (engine_tenant_get(s->e, srv_now(s), name, &ts, NULL) != 0) {
        engine_tenant_settings_defaults(&ts);
        ts.slots = s->cfg.default_slots < 0 ? ENGINE_UNLIMITED : (uint32_t)s->cfg.default_slots;
        ts.weight = (uint32_t)s->cfg.default_weight;
    }
    const tq_setting *rows = engine_tenant_setting_rows;
    size_t n = engine_tenant_setting_count;
    if (!req_only_fields(req, body, api_settings_fields(rows, n, &fields)) ||
        !api_settings_read(req, body, rows, n, &ts)) {
        json_decref(body);
        return;
    }
    json_decref(body);
    engine_err err;
    if (engine_tenant_set(s->e, srv_now(s), name, &ts, &err) != 0) {
        reply_engine_err(req, &err);
        return;
    }
    tenant_reply(s, req, name, true);
}

/* ---- queues -------------------------------------------------------------------------- */

typedef struct pair_ctx {
    const char *queue, *tenant;
    engine_counts c;
    bool found;
} pair_ctx;

static void find_pair(void *ctx, const char *queue, const char *tenant, const engine_counts *c)
{
    pair_ctx *p = ctx;
    if (strcmp(queue, p->queue) == 0 && strcmp(tenant, p->tenant) == 0) {
        p->c = *c;
        p->found = true;
    }
}

typedef struct pauses_ctx {
    jbuf *b;
    const char *only; /* a tenant token: its own tenant only */
} pauses_ctx;

static void json_pause(void *ctx, const char *queue, const char *tenant)
{
    (void)queue;
    pauses_ctx *p = ctx;
    if (!p->only || strcmp(p->only, tenant) == 0) jb_str(p->b, tenant);
}

static void json_queue(jbuf *b, server *s, const principal *who, const char *name,
                       const engine_queue_settings *qs, const engine_counts *c)
{
    jb_obj(b);
    jb_kstr(b, "name", name);
    api_settings_json(b, engine_queue_setting_rows, engine_queue_setting_count, qs);
    jb_key(b, "paused_tenants");
    jb_arr(b);
    pauses_ctx pc = {b, who->role == ROLE_TENANT && who->tok ? who->tok->tenant : NULL};
    engine_foreach_pause(s->e, name, json_pause, &pc);
    jb_arr_end(b);
    if (who->role == ROLE_TENANT && who->tok) {
        /* a tenant sees its own jobs only */
        pair_ctx p = {name, who->tok->tenant, {0}, false};
        engine_foreach_pair(s->e, srv_now(s), find_pair, &p);
        api_json_counts(b, &p.c, srv_now(s));
    } else {
        api_json_counts(b, c, srv_now(s));
        api_json_rates(b, s, true, name);
    }
    jb_obj_end(b);
}

/* A tenant sees a queue its token names, or one where it has jobs: queue
 * names are other tenants' business otherwise. */
static bool tenant_sees_queue(server *s, const principal *who, const char *name)
{
    if (!who->tok) return true;
    if (!token_allows_queue(who->tok, name)) return false;
    if (who->role != ROLE_TENANT || who->tok->queues) return true;
    return engine_pair_exists(s->e, name, who->tok->tenant);
}

static void list_queue(void *ctx, const char *name, const engine_queue_settings *qs,
                       const engine_counts *c)
{
    api_list_ctx *l = ctx;
    if (!tenant_sees_queue(l->s, l->who, name)) return;
    json_queue(l->b, l->s, l->who, name, qs, c);
}

void h_queues(server *s, http_req *req, const principal *who, const char **args)
{
    (void)args;
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_key(&b, "queues");
    jb_arr(&b);
    api_list_ctx l = {s, &b, who};
    engine_foreach_queue(s->e, srv_now(s), list_queue, &l);
    jb_arr_end(&b);
    jb_obj_end(&b);
    reply_json(req, 200, &b);
}

static void queue_reply(server *s, http_req *req, const principal *who, const char *name,
                        bool commit)
{
    engine_queue_settings qs;
    engine_counts c;
    if (engine_queue_get(s->e, srv_now(s), name, &qs, &c) != 0 ||
        !tenant_sees_queue(s, who, name)) {
        reply_error(req, TENQ_ENOT_FOUND, "name", "no queue %s", name);
        return;
    }
    jbuf b;
    jb_init(&b);
    json_queue(&b, s, who, name, &qs, &c);
    if (commit)
        srv_commit_reply(s, req, 200, &b);
    else
        reply_json(req, 200, &b);
}

void h_queue_get(server *s, http_req *req, const principal *who, const char **args)
{
    queue_reply(s, req, who, args[0], false);
}

/* POST /v1/queues/{q}/pause and /resume, with {"tenant": t} for one tenant
 * (a tenant token: its own, by default).  Only an admin pauses a whole
 * queue.  The queue must exist (PUT makes one): a pause of a queue the
 * caller does not see is 404 and makes nothing. */
static void queue_pause(server *s, http_req *req, const principal *who, const char *name,
                        bool paused)
{
    if (!req_name_ok(req, ENGINE_NAME, "name", name)) return;
    const char *tenant = NULL;
    json_t *body = NULL;
    if (req->body_len) {
        static const char *const fields[] = {"tenant", NULL};
        if (!(body = req_body(req))) return;
        /* without a tenant the whole queue pauses: a null one (an unset
         * variable) is refused rather than read so */
        if (!req_only_fields(req, body, fields) ||
            !req_name(req, body, "tenant", ENGINE_NAME, &tenant))
            goto out;
    }
    if (who->role == ROLE_TENANT && who->tok) {
        if (tenant && strcmp(tenant, who->tok->tenant) != 0) {
            reply_error(req, TENQ_EFORBIDDEN, "tenant", "this token pauses tenant %s only",
                        who->tok->tenant);
            goto out;
        }
        if (!token_allows_queue(who->tok, name)) {
            reply_error(req, TENQ_EFORBIDDEN, "queue", "this token may not use queue %s", name);
            goto out;
        }
        tenant = who->tok->tenant;
    }
    engine_queue_settings q;
    if (engine_queue_get(s->e, srv_now(s), name, &q, NULL) != 0 ||
        !tenant_sees_queue(s, who, name)) {
        reply_error(req, TENQ_ENOT_FOUND, "name", "no queue %s (PUT /v1/queues/%s makes one)", name,
                    name);
        goto out;
    }
    engine_err err;
    int rc;
    if (tenant) {
        rc = engine_pause_tenant(s->e, srv_now(s), name, tenant, paused, &err);
    } else {
        q.paused = paused;
        rc = engine_queue_set(s->e, srv_now(s), name, &q, &err);
    }
    if (rc != 0)
        reply_engine_err(req, &err);
    else
        queue_reply(s, req, who, name, true);
out:
    json_decref(body);
}

void h_queue_pause(server *s, http_req *req, const principal *who, const char **args)
{
    queue_pause(s, req, who, args[0], true);
}

void h_queue_resume(server *s, http_req *req, const principal *who, const char **args)
{
    queue_pause(s, req, who, args[0], false);
}

void h_queue_put(server *s, http_req *req, const principal *who, const char **args)
{
    const char *name = args[0];
    if (!req_name_ok(req, ENGINE_NAME, "name", name)) return;
    json_t *body = req_body(req);
    if (!body) return;
    static const char *const *fields;
    engine_queue_settings q;
    if (engine_queue_get(s->e, srv_now(s), name, &q, NULL) != 0) engine_queue_settings_defaults(&q);
    const tq_setting *rows = engine_queue_setting_rows;
    size_t n = engine_queue_setting_count;
    if (!req_only_fields(req, body, api_settings_fields(rows, n, &fields)) ||
        !api_settings_read(req, body, rows, n, &q)) {
        json_decref(body);
        return;
    }
    json_decref(body);
    if (q.delivery == ENGINE_EXACTLY_ONCE && !store_has_inbox(s->st)) {
        reply_error(req, TENQ_EINVALID, "delivery",
                    "exactly-once needs PostgreSQL: a handler completes its job in its own "
                    "transaction there (docs/transactions.md)");
        return;
    }
    engine_err err;
    if (engine_queue_set(s->e, srv_now(s), name, &q, &err) != 0) {
        reply_engine_err(req, &err);
        return;
    }
    queue_reply(s, req, who, name, true);
}
