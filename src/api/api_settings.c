/* Tenants and queues: their settings and counts (GET, PUT). */
#include "internal.h"

static void json_tenant(jbuf *b, server *s, const char *name, const engine_tenant_settings *ts,
                        const engine_counts *c)
{
    jb_obj(b);
    jb_kstr(b, "name", name);
    jb_key(b, "slots");
    if (ts->slots == ENGINE_UNLIMITED)
        jb_null(b);
    else
        jb_int(b, ts->slots);
    jb_kint(b, "weight", ts->weight);
    jb_kint(b, "in_use", (long long)(c->leased + c->running));
    api_json_counts(b, c, srv_now(s));
    api_json_rates(b, s, false, name);
    jb_obj_end(b);
}

static void json_settings(jbuf *b, const engine_queue_settings *q)
{
    jb_kstr(b, "order", q->order == ENGINE_ORDER_FAIR ? "fair" : "fifo");
    jb_kstr(b, "delivery", q->delivery == ENGINE_AT_MOST_ONCE ? "at-most-once" : "at-least-once");
    jb_kint(b, "lease_ms", q->lease_ms);
    jb_kint(b, "max_attempts", q->max_attempts);
    jb_kstr(b, "backoff",
            q->backoff == ENGINE_BACKOFF_FIXED         ? "fixed"
            : q->backoff == ENGINE_BACKOFF_EXPONENTIAL ? "exponential"
                                                       : "default");
    jb_kint(b, "backoff_base_ms", q->backoff_base_ms);
    jb_kint(b, "backoff_max_ms", q->backoff_max_ms);
    jb_kbool(b, "merge", q->merge);
    jb_kint(b, "dedup_window_ms", q->dedup_window_ms);
    jb_kint(b, "retention_ms", q->retention_ms);
    jb_kint(b, "max_payload_bytes", q->max_payload_bytes);
    jb_key(b, "tenant_cap");
    if (q->tenant_cap == ENGINE_UNLIMITED)
        jb_null(b);
    else
        jb_int(b, q->tenant_cap);
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
    if (!engine_name_valid(name)) {
        reply_error(req, TENQ_EINVALID, "name", "tenant names are 1-64 of A-Z a-z 0-9 . _ -");
        return;
    }
    json_t *body = parse_body(req);
    if (!body) return;
    static const char *const fields[] = {"slots", "weight", NULL};
    engine_tenant_settings ts;
    if (engine_tenant_get(s->e, srv_now(s), name, &ts, NULL) != 0) {
        ts.slots = s->cfg.default_slots < 0 ? ENGINE_UNLIMITED : (uint32_t)s->cfg.default_slots;
        ts.weight = (uint32_t)s->cfg.default_weight;
    }
    long long weight = ts.weight;
    if (!only_fields(req, body, fields) ||
        !get_int(req, body, "weight", &weight, NULL, 1, ENGINE_WEIGHT_MAX)) {
        json_decref(body);
        return;
    }
    json_t *sl = json_object_get(body, "slots");
    if (sl) {
        if (json_is_null(sl) ||
            (json_is_string(sl) && !strcmp(json_string_value(sl), "unlimited"))) {
            ts.slots = ENGINE_UNLIMITED;
        } else if (json_is_integer(sl) && json_integer_value(sl) >= 0 &&
                   json_integer_value(sl) < ENGINE_UNLIMITED) {
            ts.slots = (uint32_t)json_integer_value(sl);
        } else {
            reply_error(req, TENQ_EINVALID, "slots",
                        "slots must be a number >= 0, or null for unlimited");
            json_decref(body);
            return;
        }
    }
    ts.weight = (uint32_t)weight;
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

static void json_queue(jbuf *b, server *s, const principal *who, const char *name,
                       const engine_queue_settings *qs, const engine_counts *c)
{
    jb_obj(b);
    jb_kstr(b, "name", name);
    json_settings(b, qs);
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

void h_queue_put(server *s, http_req *req, const principal *who, const char **args)
{
    const char *name = args[0];
    if (!engine_name_valid(name)) {
        reply_error(req, TENQ_EINVALID, "name", "queue names are 1-64 of A-Z a-z 0-9 . _ -");
        return;
    }
    json_t *body = parse_body(req);
    if (!body) return;
    static const char *const fields[] = {"order",
                                         "delivery",
                                         "lease_ms",
                                         "max_attempts",
                                         "backoff",
                                         "backoff_base_ms",
                                         "backoff_max_ms",
                                         "merge",
                                         "dedup_window_ms",
                                         "retention_ms",
                                         "max_payload_bytes",
                                         "tenant_cap",
                                         NULL};
    engine_queue_settings q;
    if (engine_queue_get(s->e, srv_now(s), name, &q, NULL) != 0) engine_queue_settings_defaults(&q);
    long long lease = q.lease_ms, attempts = q.max_attempts, base = q.backoff_base_ms,
              bmax = q.backoff_max_ms, dedup = q.dedup_window_ms, ret = q.retention_ms,
              maxp = q.max_payload_bytes;
    bool merge = q.merge;
    const char *order = NULL, *delivery = NULL, *backoff = NULL;
    const long long big = 1LL << 50;
    bool ok = only_fields(req, body, fields) && get_str(req, body, "order", &order, false) &&
              get_str(req, body, "delivery", &delivery, false) &&
              get_str(req, body, "backoff", &backoff, false) &&
              get_int(req, body, "lease_ms", &lease, NULL, 0, big) &&
              get_int(req, body, "max_attempts", &attempts, NULL, 0, big) &&
              get_int(req, body, "backoff_base_ms", &base, NULL, 0, big) &&
              get_int(req, body, "backoff_max_ms", &bmax, NULL, 0, big) &&
              get_int(req, body, "dedup_window_ms", &dedup, NULL, 0, big) &&
              get_int(req, body, "retention_ms", &ret, NULL, 0, big) &&
              get_int(req, body, "max_payload_bytes", &maxp, NULL, 0, big) &&
              get_bool(req, body, "merge", &merge, NULL);
    if (!ok) {
        json_decref(body);
        return;
    }
    if (order) {
        if (!strcmp(order, "fifo"))
            q.order = ENGINE_ORDER_FIFO;
        else if (!strcmp(order, "fair"))
            q.order = ENGINE_ORDER_FAIR;
        else
            q.order = (engine_order)-1;
    }
    if (delivery) {
        if (!strcmp(delivery, "at-least-once"))
            q.delivery = ENGINE_AT_LEAST_ONCE;
        else if (!strcmp(delivery, "at-most-once"))
            q.delivery = ENGINE_AT_MOST_ONCE;
        else
            q.delivery = (engine_delivery)-1;
    }
    if (backoff) {
        if (!strcmp(backoff, "default"))
            q.backoff = ENGINE_BACKOFF_DEFAULT;
        else if (!strcmp(backoff, "fixed"))
            q.backoff = ENGINE_BACKOFF_FIXED;
        else if (!strcmp(backoff, "exponential"))
            q.backoff = ENGINE_BACKOFF_EXPONENTIAL;
        else
            q.backoff = (engine_backoff_kind)-1;
    }
    q.lease_ms = lease;
    q.max_attempts = (uint32_t)(attempts > UINT32_MAX ? UINT32_MAX : attempts);
    q.backoff_base_ms = base;
    q.backoff_max_ms = bmax;
    q.dedup_window_ms = dedup;
    q.retention_ms = ret;
    q.max_payload_bytes = (uint32_t)(maxp > UINT32_MAX ? UINT32_MAX : maxp);
    q.merge = merge;
    json_t *cap = json_object_get(body, "tenant_cap");
    if (cap) {
        if (json_is_null(cap)) {
            q.tenant_cap = ENGINE_UNLIMITED;
        } else if (json_is_integer(cap) && json_integer_value(cap) >= 0 &&
                   json_integer_value(cap) < ENGINE_UNLIMITED) {
            q.tenant_cap = (uint32_t)json_integer_value(cap);
        } else {
            reply_error(req, TENQ_EINVALID, "tenant_cap", "tenant_cap must be a number or null");
            json_decref(body);
            return;
        }
    }
    json_decref(body);
    engine_err err;
    if (engine_queue_set(s->e, srv_now(s), name, &q, &err) != 0) {
        reply_engine_err(req, &err);
        return;
    }
    queue_reply(s, req, who, name, true);
}
