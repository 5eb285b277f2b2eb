// SPDX-License-Identifier: Apache-2.0
/* Keyed limits: the keys jobs name now (GET /v1/keys) and the settings of
 * keys and key prefixes (GET, PUT, DELETE /v1/key-settings). */
#include "auth.h"
#include "clock.h"
#include "commit.h"
#include "handlers.h"
#include "http.h"
#include "jbuf.h"
#include "job_json.h"
#include "read_ctx.h"
#include "reply.h"
#include "request.h"
#include "server.h"

#include "base/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The tenant a request may see: its token's, or the query's (NULL: all);
 * false once refused. */
static bool tenant_scope(http_req *req, const principal *who, char buf[QUERY_NAME_BUF],
                         const char **tenant)
{
    if (!req_query_name(req, "tenant", ENGINE_NAME, buf, tenant)) return false;
    if (who->role == ROLE_TENANT && who->tok) {
        if (*tenant && strcmp(*tenant, who->tok->tenant) != 0) {
            reply_error(req, TENQ_EFORBIDDEN, "tenant", "this token sees tenant %s only",
                        who->tok->tenant);
            return false;
        }
        *tenant = who->tok->tenant;
    }
    return true;
}

/* A key's fields, in its object (left open). */
static void json_key_fields(jbuf *b, const engine_key_info *k)
{
    jb_obj(b);
    jb_kstr(b, "tenant", k->tenant);
    jb_kstr(b, "key", k->key);
    jb_key(b, "limit");
    if (k->limit == ENGINE_UNLIMITED)
        jb_null(b);
    else
        jb_int(b, k->limit);
    jb_kint(b, "active", k->active);
    jb_kint(b, "ready", (long long)k->ready);
    jb_kint(b, "held", (long long)k->held);
    jb_kbool(b, "at_limit", k->active >= k->limit || k->rate_until);
    jb_kstr(b, "setting", k->setting);
    jb_key(b, "rate");
    if (k->rate == ENGINE_UNLIMITED) {
        jb_null(b);
    } else {
        jb_obj(b);
        jb_kint(b, "rate", k->rate);
        jb_kint(b, "rate_period_ms", k->rate_period_ms);
        jb_kint(b, "rate_burst", k->rate_burst);
        jb_key(b, "until");
        if (k->rate_until)
            jb_int(b, k->rate_until);
        else
            jb_null(b);
        jb_kstr(b, "setting", k->rate_setting);
        jb_obj_end(b);
    }
}

static void json_key(jbuf *b, const engine_key_info *k)
{
    json_key_fields(b, k);
    jb_obj_end(b);
}

static void json_ids(jbuf *b, const char *name, const uint64_t *v, size_t n)
{
    jb_key(b, name);
    jb_arr(b);
    for (size_t i = 0; i < n; i++) jb_uint(b, v[i]);
    jb_arr_end(b);
}

/* GET /v1/keys: the keys resident jobs name, those at their limit first. */
void h_keys(server *s, http_req *req, const principal *who, const char **args)
{
    (void)args;
    char tbuf[QUERY_NAME_BUF], kbuf[QUERY_NAME_BUF];
    const char *tenant, *key;
    long long limit;
    bool at_limit;
    if (!tenant_scope(req, who, tbuf, &tenant) ||
        !req_query_name(req, "key", ENGINE_KEY, kbuf, &key) ||
        !req_query_num(req, "limit", 100, 1, 1000, &limit) ||
        !req_query_bool(req, "at_limit", &at_limit))
        return;
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    if (key) {
        if (!tenant) {
            reply_error(req, TENQ_EINVALID, "tenant", "a key is a tenant's: name the tenant");
            free(b.p);
            return;
        }
        engine_key_info k;
        bool found = engine_key_info_get(s->e, srv_now(s), tenant, key, &k);
        jb_kint(&b, "total", found);
        jb_key(&b, "keys");
        jb_arr(&b);
        if (found) {
            /* one key: who holds it and who waits, as the dashboard shows them */
            enum { SHOWN = 20 };
            uint64_t holders[SHOWN], ready[SHOWN];
            size_t nh, nr;
            engine_key_jobs(s->e, tenant, key, SHOWN, holders, &nh, ready, &nr);
            json_key_fields(&b, &k);
            json_ids(&b, "holders", holders, nh);
            json_ids(&b, "jobs", ready, nr);
            jb_obj_end(&b);
        }
        jb_arr_end(&b);
    } else {
        engine_key_info *v = xmalloc((size_t)limit * sizeof(*v));
        size_t total = 0;
        size_t n = engine_keys_list(s->e, srv_now(s), tenant, at_limit, (size_t)limit, v, &total);
        jb_kint(&b, "total", (long long)total);
        jb_key(&b, "keys");
        jb_arr(&b);
        for (size_t i = 0; i < n; i++) json_key(&b, &v[i]);
        jb_arr_end(&b);
        free(v);
    }
    jb_kint(&b, "keys_at_limit", (long long)engine_keys_at_limit(s->e));
    jb_obj_end(&b);
    reply_json(req, 200, &b);
}

static void json_setting(jbuf *b, const char *tenant, const char *key,
                         const engine_key_settings *ks)
{
    jb_obj(b);
    jb_kstr(b, "tenant", tenant);
    jb_kstr(b, "key", key);
    api_settings_json(b, engine_key_setting_rows, engine_key_setting_count, ks);
    jb_obj_end(b);
}

static void setting_row(void *ctx, const char *tenant, const char *key,
                        const engine_key_settings *ks)
{
    json_setting(ctx, tenant, key, ks);
}

/* GET /v1/key-settings: the settings of keys and prefixes. */
void h_key_settings(server *s, http_req *req, const principal *who, const char **args)
{
    (void)args;
    char tbuf[QUERY_NAME_BUF];
    const char *tenant;
    if (!tenant_scope(req, who, tbuf, &tenant)) return;
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_key(&b, "settings");
    jb_arr(&b);
    engine_foreach_key_setting(s->e, tenant, setting_row, &b);
    jb_arr_end(&b);
    jb_obj_end(&b);
    reply_json(req, 200, &b);
}

/* PUT /v1/key-settings {"tenant", "key", <settings>}: sets the settings of
 * a key, or of every key with a prefix ("account:*"), whole (a setting left
 * out is null: the jobs'). */
void h_key_setting_put(server *s, http_req *req, const principal *who, const char **args)
{
    (void)who;
    (void)args;
    json_t *body = req_body(req);
    if (!body) return;
    static const char *const *fields;
    static const char **all; /* tenant, key, then the settings */
    if (!all) {
        const char *const *f =
            api_settings_fields(engine_key_setting_rows, engine_key_setting_count, &fields);
        all = xcalloc(engine_key_setting_count + 3, sizeof(*all));
        all[0] = "tenant";
        all[1] = "key";
        for (size_t i = 0; f[i]; i++) all[i + 2] = f[i];
    }
    const char *tenant, *key;
    engine_key_settings ks;
    engine_key_settings_defaults(&ks);
    if (!req_only_fields(req, body, all) || !req_name(req, body, "tenant", ENGINE_NAME, &tenant) ||
        !req_name(req, body, "key", ENGINE_KEY, &key) ||
        !api_settings_read(req, body, engine_key_setting_rows, engine_key_setting_count, &ks)) {
        json_decref(body);
        return;
    }
    if (!tenant || !key) {
        reply_error(req, TENQ_EINVALID, tenant ? "key" : "tenant", "%s is required",
                    tenant ? "key" : "tenant");
        json_decref(body);
        return;
    }
    engine_err err;
    if (engine_key_set(s->e, srv_now(s), tenant, key, &ks, &err) != 0) {
        reply_engine_err(req, &err);
        json_decref(body);
        return;
    }
    jbuf b;
    jb_init(&b);
    json_setting(&b, tenant, key, &ks);
    json_decref(body);
    srv_commit_reply(s, req, 200, &b);
}

/* DELETE /v1/key-settings?tenant=&key=: the key's limit goes back to the
 * next setting (a prefix) or to its jobs. */
void h_key_setting_delete(server *s, http_req *req, const principal *who, const char **args)
{
    (void)who;
    (void)args;
    char tbuf[QUERY_NAME_BUF], kbuf[QUERY_NAME_BUF];
    const char *tenant, *key;
    if (!req_query_name(req, "tenant", ENGINE_NAME, tbuf, &tenant) ||
        !req_query_name(req, "key", ENGINE_KEY, kbuf, &key))
        return;
    if (!tenant || !key) {
        reply_error(req, TENQ_EINVALID, tenant ? "key" : "tenant", "%s is required",
                    tenant ? "key" : "tenant");
        return;
    }
    engine_err err;
    if (engine_key_delete(s->e, srv_now(s), tenant, key, &err) != 0) {
        reply_engine_err(req, &err);
        return;
    }
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_kstr(&b, "tenant", tenant);
    jb_kstr(&b, "key", key);
    jb_kbool(&b, "deleted", true);
    jb_obj_end(&b);
    srv_commit_reply(s, req, 200, &b);
}
