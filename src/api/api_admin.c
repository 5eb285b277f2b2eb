/* Tenants, queues, the morgue, tokens, stats, metrics, health. */
#include "internal.h"

#include "base/hash.h"
#include "base/sha256.h"

#include <event2/event.h>
#include <math.h>

/* ---- rates: completed and failed per second over the last minute ----------------- */

static bool ring_eq(const void *item, const void *key)
{
    return strcmp(((const rate_ring *)item)->name, key) == 0;
}

static rate_ring *ring_get(server *s, bool queue, const char *name, bool create)
{
    htab *t = queue ? &s->rates_q : &s->rates_t;
    uint64_t h =
        hash_u64(hash_combine(0, (uint64_t)strlen(name)) ^ (uint64_t)(unsigned char)name[0]);
    for (const char *p = name; *p; p++) h = hash_combine(h, (uint64_t)(unsigned char)*p);
    rate_ring *r = htab_find(t, h, ring_eq, name);
    if (r || !create) return r;
    r = xcalloc(1, sizeof(*r));
    r->hash = h;
    r->name = xstrdup(name);
    htab_insert(t, h, r);
    /* A queue or tenant first seen after start was born since the last
     * sample, at zero: without this, work done in its first second would
     * never show as a rate. */
    if (s->rate_samples > 0) r->filled = 1;
    return r;
}

static void ring_push(rate_ring *r, uint64_t ok, uint64_t bad)
{
    r->head = (r->head + 1) % 61;
    r->ok[r->head] = ok;
    r->bad[r->head] = bad;
    if (r->filled < 61) r->filled++;
}

static void sample_queue(void *ctx, const char *name, const engine_queue_settings *qs,
                         const engine_counts *c)
{
    (void)qs;
    ring_push(ring_get(ctx, true, name, true), c->succeeded_total, c->failed_total);
}

static void sample_tenant(void *ctx, const char *name, const engine_tenant_settings *ts,
                          const engine_counts *c)
{
    (void)ts;
    ring_push(ring_get(ctx, false, name, true), c->succeeded_total, c->failed_total);
}

void rates_sample(server *s)
{
    engine_foreach_queue(s->e, srv_now(s), sample_queue, s);
    engine_foreach_tenant(s->e, srv_now(s), sample_tenant, s);
    /* the totals: "" is no queue's name */
    engine_counts tot;
    engine_totals(s->e, srv_now(s), &tot);
    ring_push(ring_get(s, true, "", true), tot.succeeded_total, tot.failed_total);
    s->rate_samples++;
}

void rates_get(server *s, bool queue, const char *name, double *ok, double *bad)
{
    *ok = *bad = 0;
    rate_ring *r = ring_get(s, queue, name, false);
    if (!r || r->filled < 2) return;
    int span = r->filled - 1;
    int old = (r->head - span + 61) % 61;
    /* counters restart when the engine is rebuilt: never report negative */
    if (r->ok[r->head] >= r->ok[old]) *ok = (double)(r->ok[r->head] - r->ok[old]) / span;
    if (r->bad[r->head] >= r->bad[old]) *bad = (double)(r->bad[r->head] - r->bad[old]) / span;
}

void rates_free(server *s)
{
    htab *ts[2] = {&s->rates_q, &s->rates_t};
    for (int k = 0; k < 2; k++) {
        for (size_t i = 0; i < htab_cap(ts[k]); i++) {
            rate_ring *r = ts[k]->slots[i].item;
            if (!r) continue;
            free(r->name);
            free(r);
        }
        htab_free(ts[k]);
    }
}

static void on_sample(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    rates_sample(arg);
}

void api_rates_start(server *s)
{
    s->sample_ev = event_new(s->base, -1, EV_PERSIST, on_sample, s);
    struct timeval tv = {1, 0};
    event_add(s->sample_ev, &tv);
    rates_sample(s);
}

/* ---- counts ----------------------------------------------------------------------- */

static void json_counts(jbuf *b, const engine_counts *c, int64_t now)
{
    jb_kint(b, "ready", (long long)c->ready);
    jb_kint(b, "scheduled", (long long)c->scheduled);
    jb_kint(b, "blocked", (long long)c->blocked);
    jb_kint(b, "leased", (long long)c->leased);
    jb_kint(b, "running", (long long)c->running);
    jb_kint(b, "dead", (long long)c->dead);
    jb_kint(b, "eligible", (long long)c->eligible);
    jb_kint(b, "lag_ms", c->oldest_eligible ? now - c->oldest_eligible : 0);
    jb_kint(b, "submitted_total", (long long)c->submitted_total);
    jb_kint(b, "succeeded_total", (long long)c->succeeded_total);
    jb_kint(b, "failed_total", (long long)c->failed_total);
    jb_kint(b, "dead_total", (long long)c->dead_total);
    jb_kint(b, "cancelled_total", (long long)c->cancelled_total);
}

static void json_rates(jbuf *b, server *s, bool queue, const char *name)
{
    double ok, bad;
    rates_get(s, queue, name, &ok, &bad);
    jb_key(b, "completed_per_s");
    jb_num(b, round(ok * 100) / 100);
    jb_key(b, "failed_per_s");
    jb_num(b, round(bad * 100) / 100);
}

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
    json_counts(b, c, srv_now(s));
    json_rates(b, s, false, name);
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

typedef struct list_ctx {
    server *s;
    jbuf *b;
    const principal *who;
} list_ctx;

static void list_tenant(void *ctx, const char *name, const engine_tenant_settings *ts,
                        const engine_counts *c)
{
    list_ctx *l = ctx;
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
    list_ctx l = {s, &b, who};
    engine_foreach_tenant(s->e, srv_now(s), list_tenant, &l);
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
        json_counts(b, &p.c, srv_now(s));
    } else {
        json_counts(b, c, srv_now(s));
        json_rates(b, s, true, name);
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
    list_ctx *l = ctx;
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
    list_ctx l = {s, &b, who};
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

/* ---- the morgue ------------------------------------------------------------------------- */

void h_morgue(server *s, http_req *req, const principal *who, const char **args)
{
    (void)args;
    char tenant[128], queue[128], type[256], sort[16], after[64];
    engine_morgue_filter f = {0};
    f.tenant = http_query_get(req, "tenant", tenant, sizeof tenant);
    f.queue = http_query_get(req, "queue", queue, sizeof queue);
    f.type = http_query_get(req, "type", type, sizeof type);
    if (who->role == ROLE_TENANT && who->tok) {
        if (f.tenant && strcmp(f.tenant, who->tok->tenant) != 0) {
            reply_error(req, TENQ_EFORBIDDEN, "tenant", "a tenant token sees only its own morgue");
            return;
        }
        f.tenant = who->tok->tenant;
    }
    engine_morgue_sort so = ENGINE_MORGUE_NEWEST;
    if (http_query_get(req, "sort", sort, sizeof sort)) {
        if (!strcmp(sort, "id"))
            so = ENGINE_MORGUE_BY_ID;
        else if (strcmp(sort, "finished") != 0) {
            reply_error(req, TENQ_EINVALID, "sort", "sort is finished or id");
            return;
        }
    }
    long long lim;
    if (!query_num(req, "limit", 50, 1, 1000, &lim)) return;
    engine_morgue_cursor cur = {0};
    if (http_query_get(req, "after", after, sizeof after)) {
        char *end;
        if (so == ENGINE_MORGUE_NEWEST) {
            cur.finished_at = strtoll(after, &end, 10);
            if (*end != '.') goto bad_cursor;
            cur.id = strtoull(end + 1, &end, 10);
        } else {
            cur.id = strtoull(after, &end, 10);
        }
        if (*end || (!cur.id && !cur.finished_at)) {
        bad_cursor:
            reply_error(req, TENQ_EINVALID, "after", "after must be the next cursor of a page");
            return;
        }
    }
    engine_job **out = xmalloc((size_t)lim * sizeof(engine_job *));
    size_t n = engine_morgue_list(s->e, &f, so, &cur, (size_t)lim, out);
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_key(&b, "jobs");
    jb_arr(&b);
    engine_job_info last = {0};
    for (size_t i = 0; i < n; i++) {
        engine_job_get(out[i], &last);
        if (who->tok && !token_allows_queue(who->tok, last.queue)) continue;
        json_job(&b, &last, JOB_FULL, false);
    }
    jb_arr_end(&b);
    jb_key(&b, "next");
    if ((long)n == lim && n) {
        char c[64];
        if (so == ENGINE_MORGUE_NEWEST)
            snprintf(c, sizeof c, "%lld.%llu", (long long)last.finished_at,
                     (unsigned long long)last.id);
        else
            snprintf(c, sizeof c, "%llu", (unsigned long long)last.id);
        jb_str(&b, c);
    } else {
        jb_null(&b);
    }
    jb_obj_end(&b);
    free(out);
    reply_json(req, 200, &b);
}

static bool morgue_job(server *s, http_req *req, const principal *who, const char *seg,
                       uint64_t *id)
{
    *id = path_id(req, seg);
    if (!*id) return false;
    engine_job *j = engine_find(s->e, *id);
    if (!j || !may_see_job(who, engine_job_tenant(j), engine_job_queue(j))) {
        reply_error(req, TENQ_ENOT_FOUND, "id", "no job %llu in the morgue",
                    (unsigned long long)*id);
        return false;
    }
    return true;
}

void h_morgue_requeue(server *s, http_req *req, const principal *who, const char **args)
{
    uint64_t id;
    if (!morgue_job(s, req, who, args[0], &id)) return;
    engine_err err;
    if (engine_morgue_requeue(s->e, srv_now(s), id, &err) != 0) {
        reply_engine_err(req, &err);
        return;
    }
    engine_job *j = engine_find(s->e, id);
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_kint(&b, "id", (long long)id);
    jb_kstr(&b, "state", j ? engine_state_name(engine_job_state(j)) : "merged");
    if (j && engine_job_state(j) == ENGINE_MERGED) {
        engine_job_info in;
        engine_job_get(j, &in);
        jb_kint(&b, "merged_into", (long long)in.merged_into);
    }
    jb_obj_end(&b);
    srv_commit_reply(s, req, 200, &b);
}

void h_morgue_delete(server *s, http_req *req, const principal *who, const char **args)
{
    uint64_t id;
    if (!morgue_job(s, req, who, args[0], &id)) return;
    engine_err err;
    if (engine_morgue_delete(s->e, srv_now(s), id, &err) != 0) {
        reply_engine_err(req, &err);
        return;
    }
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_kint(&b, "id", (long long)id);
    jb_kbool(&b, "deleted", true);
    jb_obj_end(&b);
    srv_commit_reply(s, req, 200, &b);
}

#define BULK_MAX 100000

static void morgue_bulk(server *s, http_req *req, const principal *who, bool requeue)
{
    json_t *body = parse_body(req);
    if (!body) return;
    static const char *const fields[] = {"tenant", "queue", "type", "limit", NULL};
    engine_morgue_filter f = {0};
    long long limit = BULK_MAX;
    if (!only_fields(req, body, fields) || !get_str(req, body, "tenant", &f.tenant, false) ||
        !get_str(req, body, "queue", &f.queue, false) ||
        !get_str(req, body, "type", &f.type, false) ||
        !get_int(req, body, "limit", &limit, NULL, 1, BULK_MAX)) {
        json_decref(body);
        return;
    }
    if (who->role == ROLE_TENANT && who->tok) {
        if (f.tenant && strcmp(f.tenant, who->tok->tenant) != 0) {
            reply_error(req, TENQ_EFORBIDDEN, "tenant", "a tenant token acts on its own morgue");
            json_decref(body);
            return;
        }
        f.tenant = who->tok->tenant;
    }
    if (who->tok && who->tok->queues && !f.queue) {
        reply_error(req, TENQ_EINVALID, "queue", "this token is limited to queues: name one");
        json_decref(body);
        return;
    }
    if (f.queue && who->tok && !token_allows_queue(who->tok, f.queue)) {
        reply_error(req, TENQ_EFORBIDDEN, "queue", "this token may not use queue %s", f.queue);
        json_decref(body);
        return;
    }
    int64_t now = srv_now(s);
    size_t n = requeue ? engine_morgue_requeue_where(s->e, now, &f, (size_t)limit)
                       : engine_morgue_delete_where(s->e, now, &f, (size_t)limit);
    json_decref(body);
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_kint(&b, requeue ? "requeued" : "deleted", (long long)n);
    jb_obj_end(&b);
    srv_commit_reply(s, req, 200, &b);
}

void h_morgue_requeue_where(server *s, http_req *req, const principal *who, const char **args)
{
    (void)args;
    morgue_bulk(s, req, who, true);
}

void h_morgue_delete_where(server *s, http_req *req, const principal *who, const char **args)
{
    (void)args;
    morgue_bulk(s, req, who, false);
}

/* ---- tokens ------------------------------------------------------------------------------- */

static void json_token(jbuf *b, const token *t)
{
    jb_kint(b, "id", t->id);
    char role[ENGINE_NAME_MAX + 16];
    snprintf(role, sizeof role, "%s%s",
             t->role == ROLE_ADMIN    ? "admin"
             : t->role == ROLE_WORKER ? "worker"
                                      : "tenant:",
             t->role == ROLE_TENANT ? t->tenant : "");
    jb_kstr(b, "role", role);
    jb_kraw(b, "queues", t->queues_json);
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
    json_t *body = parse_body(req);
    if (!body) return;
    static const char *const fields[] = {"role", "queues", NULL};
    const char *role = NULL;
    if (!only_fields(req, body, fields) || !get_str(req, body, "role", &role, true)) {
        json_decref(body);
        return;
    }
    role_kind kind;
    if (!auth_parse_role(role, &kind, NULL)) {
        reply_error(req, TENQ_EINVALID, "role", "role is admin, worker or tenant:NAME");
        json_decref(body);
        return;
    }
    char *queues = NULL;
    json_t *q = json_object_get(body, "queues");
    if (q && !json_is_null(q)) {
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
    store_token st = {s->auth.next_id, hex, role, queues, srv_now(s), 0};
    token *t = auth_add(&s->auth, st.id, hex, role, queues, st.created_at);
    store_batch_token(s->batch, &st);
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
    store_batch_token_revoke(s->batch, id, srv_now(s));
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_kint(&b, "id", id);
    jb_kbool(&b, "revoked", true);
    jb_obj_end(&b);
    srv_commit_reply(s, req, 200, &b);
}

/* ---- stats --------------------------------------------------------------------------------- */

static void stat_pair(void *ctx, const char *queue, const char *tenant, const engine_counts *c)
{
    list_ctx *l = ctx;
    if (!l->who->tok || strcmp(l->who->tok->tenant, tenant) != 0) return;
    if (!token_allows_queue(l->who->tok, queue)) return;
    jb_obj(l->b);
    jb_kstr(l->b, "name", queue);
    json_counts(l->b, c, srv_now(l->s));
    jb_obj_end(l->b);
}

static void stat_queue(void *ctx, const char *name, const engine_queue_settings *qs,
                       const engine_counts *c)
{
    (void)qs;
    list_ctx *l = ctx;
    if (l->who->tok && !token_allows_queue(l->who->tok, name)) return;
    jb_obj(l->b);
    jb_kstr(l->b, "name", name);
    json_counts(l->b, c, srv_now(l->s));
    json_rates(l->b, l->s, true, name);
    jb_obj_end(l->b);
}

void h_stats(server *s, http_req *req, const principal *who, const char **args)
{
    (void)args;
    int64_t now = srv_now(s);
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_kint(&b, "time", now);
    list_ctx l = {s, &b, who};
    jb_key(&b, "queues");
    jb_arr(&b);
    if (who->role == ROLE_TENANT && who->tok)
        engine_foreach_pair(s->e, now, stat_pair, &l);
    else
        engine_foreach_queue(s->e, now, stat_queue, &l);
    jb_arr_end(&b);
    if (who->role != ROLE_WORKER || !who->tok) {
        jb_key(&b, "tenants");
        jb_arr(&b);
        engine_foreach_tenant(s->e, now, list_tenant, &l);
        jb_arr_end(&b);
    }
    if (!who->tok || who->role == ROLE_ADMIN) {
        engine_counts tot;
        engine_totals(s->e, now, &tot);
        jb_key(&b, "totals");
        jb_obj(&b);
        json_counts(&b, &tot, now);
        json_rates(&b, s, true, "");
        jb_obj_end(&b);
        uint64_t tx, batches;
        store_counters(s->st, &tx, &batches);
        jb_key(&b, "server");
        jb_obj(&b);
        jb_kstr(&b, "store", store_backend(s->st));
        jb_kint(&b, "connections", (long long)http_server_connections(s->http));
        jb_kint(&b, "lease_waiters", (long long)s->n_lwait);
        jb_kint(&b, "commits", (long long)tx);
        jb_kint(&b, "batches", (long long)batches);
        jb_kint(&b, "requests", (long long)s->n_requests);
        jb_kint(&b, "uptime_ms", now - s->wall0_ms);
        jb_obj_end(&b);
    }
    jb_obj_end(&b);
    reply_json(req, 200, &b);
}

/* ---- lanes ----------------------------------------------------------------------------------- */

static bool lane_visible(void *ctx, const char *tenant, const char *queue)
{
    return may_see_job(ctx, tenant, queue);
}

void h_lanes(server *s, http_req *req, const principal *who, const char **args)
{
    (void)args;
    long long k;
    if (!query_num(req, "limit", 20, 1, 1000, &k)) return;
    engine_lane_info *lanes = xmalloc((size_t)k * sizeof(*lanes));
    size_t total;
    /* a tenant's view (lanes and their count) is its own lanes only */
    size_t n = engine_top_lanes(s->e, (size_t)k, lanes, who->tok ? lane_visible : NULL, (void *)who,
                                &total);
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_kint(&b, "lanes_total", (long long)total);
    jb_key(&b, "lanes");
    jb_arr(&b);
    for (size_t i = 0; i < n; i++) {
        jb_obj(&b);
        jb_kstr(&b, "tenant", lanes[i].tenant);
        jb_kstr(&b, "queue", lanes[i].queue);
        jb_kstr(&b, "key", lanes[i].key);
        jb_kint(&b, "length", (long long)lanes[i].length);
        jb_kint(&b, "head_id", (long long)lanes[i].head_id);
        jb_kstr(&b, "head_state", engine_state_name(lanes[i].head_state));
        jb_kint(&b, "head_run_at", lanes[i].head_run_at);
        jb_obj_end(&b);
    }
    jb_arr_end(&b);
    jb_obj_end(&b);
    free(lanes);
    reply_json(req, 200, &b);
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
        jb_kstr(&b, "role",
                t->role == ROLE_TENANT   ? "tenant"
                : t->role == ROLE_WORKER ? "worker"
                                         : "admin");
        if (t->role == ROLE_TENANT) jb_kstr(&b, "tenant", t->tenant);
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

/* ---- metrics (Prometheus text) ----------------------------------------------------------------
 */

static void metric_label(jbuf *b, const char *v)
{
    for (; *v; v++) {
        if (*v == '\\' || *v == '"')
            jb_printf(b, "\\%c", *v);
        else if (*v == '\n')
            jb_text(b, "\\n", 2);
        else
            jb_text(b, v, 1);
    }
}

static void metric_counts(jbuf *b, const char *kind, const char *name, const engine_counts *c,
                          int64_t now)
{
    static const char *const states[] = {"ready",  "scheduled", "blocked",
                                         "leased", "running",   "dead"};
    uint64_t v[] = {c->ready, c->scheduled, c->blocked, c->leased, c->running, c->dead};
    for (int i = 0; i < 6; i++) {
        jb_printf(b, "tenq_%s_jobs{%s=\"", kind, kind);
        metric_label(b, name);
        jb_printf(b, "\",state=\"%s\"} %llu\n", states[i], (unsigned long long)v[i]);
    }
    const char *totals[] = {"submitted", "succeeded", "failed", "dead", "cancelled"};
    uint64_t tv[] = {c->submitted_total, c->succeeded_total, c->failed_total, c->dead_total,
                     c->cancelled_total};
    for (int i = 0; i < 5; i++) {
        jb_printf(b, "tenq_%s_%s_total{%s=\"", kind, totals[i], kind);
        metric_label(b, name);
        jb_printf(b, "\"} %llu\n", (unsigned long long)tv[i]);
    }
    jb_printf(b, "tenq_%s_lag_seconds{%s=\"", kind, kind);
    metric_label(b, name);
    jb_printf(b, "\"} %.3f\n",
              c->oldest_eligible ? (double)(now - c->oldest_eligible) / 1000.0 : 0);
}

static void metric_queue(void *ctx, const char *name, const engine_queue_settings *qs,
                         const engine_counts *c)
{
    (void)qs;
    list_ctx *l = ctx;
    metric_counts(l->b, "queue", name, c, srv_now(l->s));
}

static void metric_tenant(void *ctx, const char *name, const engine_tenant_settings *ts,
                          const engine_counts *c)
{
    list_ctx *l = ctx;
    metric_counts(l->b, "tenant", name, c, srv_now(l->s));
    jb_text(l->b, "tenq_tenant_slots{tenant=\"", 26);
    metric_label(l->b, name);
    if (ts->slots == ENGINE_UNLIMITED)
        jb_printf(l->b, "\"} +Inf\n");
    else
        jb_printf(l->b, "\"} %u\n", ts->slots);
}

void h_metrics(server *s, http_req *req, const principal *who, const char **args)
{
    (void)who;
    (void)args;
    jbuf b;
    jb_init(&b);
    int64_t now = srv_now(s);
    list_ctx l = {s, &b, who};
    jb_printf(&b,
              "# HELP tenq_queue_jobs Jobs per queue by state.\n# TYPE tenq_queue_jobs gauge\n");
    engine_foreach_queue(s->e, now, metric_queue, &l);
    jb_printf(&b,
              "# HELP tenq_tenant_jobs Jobs per tenant by state.\n# TYPE tenq_tenant_jobs gauge\n");
    engine_foreach_tenant(s->e, now, metric_tenant, &l);
    uint64_t tx, batches;
    store_counters(s->st, &tx, &batches);
    uint64_t yields, yields_slow;
    http_server_yields(s->http, &yields, &yields_slow);
    jb_printf(&b,
              "# TYPE tenq_store_commits_total counter\ntenq_store_commits_total %llu\n"
              "# TYPE tenq_store_batches_total counter\ntenq_store_batches_total %llu\n"
              "# TYPE tenq_store_commit_failures_total counter\n"
              "tenq_store_commit_failures_total %llu\n"
              "# TYPE tenq_http_requests_total counter\ntenq_http_requests_total %llu\n"
              "# TYPE tenq_http_connections gauge\ntenq_http_connections %zu\n"
              "# TYPE tenq_lease_waiters gauge\ntenq_lease_waiters %zu\n"
              "# TYPE tenq_lanes gauge\ntenq_lanes %zu\n"
              "# HELP tenq_store_writer_idle 1 while the commit thread runs at idle priority "
              "(a quiet server).\n# TYPE tenq_store_writer_idle gauge\ntenq_store_writer_idle %d\n"
              "# HELP tenq_store_writer_raised_total Times the commit thread, at idle priority, "
              "waited for a CPU and was given normal priority back.\n"
              "# TYPE tenq_store_writer_raised_total counter\ntenq_store_writer_raised_total %llu\n"
              "# HELP tenq_http_idle_yields_total Yields of the CPU for requests that woke an "
              "idle server.\n# TYPE tenq_http_idle_yields_total counter\n"
              "tenq_http_idle_yields_total %llu\n"
              "# HELP tenq_http_idle_yields_slow_total Such yields that found the CPU busy "
              "(each stops them for a second).\n# TYPE tenq_http_idle_yields_slow_total counter\n"
              "tenq_http_idle_yields_slow_total %llu\n",
              (unsigned long long)tx, (unsigned long long)batches,
              (unsigned long long)s->n_commits_failed, (unsigned long long)s->n_requests,
              http_server_connections(s->http), s->n_lwait, engine_lane_count(s->e),
              store_writer_idle(s->st) ? 1 : 0, (unsigned long long)store_writer_raised(s->st),
              (unsigned long long)yields, (unsigned long long)yields_slow);
    store_timing tm;
    store_commit_timing(s->st, &tm);
    jb_printf(&b, "# HELP tenq_store_commit_seconds Time to write and sync a group commit.\n"
                  "# TYPE tenq_store_commit_seconds histogram\n");
    uint64_t cum = 0;
    for (int i = 0; i < STORE_HIST_BUCKETS; i++) {
        cum += tm.counts[i];
        if (i == STORE_HIST_BUCKETS - 1)
            jb_printf(&b, "tenq_store_commit_seconds_bucket{le=\"+Inf\"} %llu\n",
                      (unsigned long long)cum);
        else
            jb_printf(&b, "tenq_store_commit_seconds_bucket{le=\"%g\"} %llu\n",
                      store_hist_bounds_us[i] / 1e6, (unsigned long long)cum);
    }
    jb_printf(&b, "tenq_store_commit_seconds_sum %.6f\ntenq_store_commit_seconds_count %llu\n",
              tm.total_us / 1e6, (unsigned long long)cum);
    jb_printf(&b,
              "# HELP tenq_leader 1 while this server leads its store and serves, else 0.\n"
              "# TYPE tenq_leader gauge\ntenq_leader %d\n"
              "# HELP tenq_leader_term The term this server leads under (0: none).\n"
              "# TYPE tenq_leader_term gauge\ntenq_leader_term %llu\n",
              srv_serving(s) ? 1 : 0, (unsigned long long)s->term);
    size_t len;
    char *body = jb_take(&b, &len);
    http_reply(req, 200, "text/plain; version=0.0.4", NULL, body, len);
    free(body);
}

/* This server's health and role (no token needed): 200 while it answers,
 * whatever its role; 503 while it reloads or stops.  readyz: 200 only on
 * the leader that serves (for load balancers). */
static void health(server *s, http_req *req, bool ready)
{
    char url[256];
    bool other = lead_leader(s, url, sizeof url);
    const char *status = s->stopping ? "stopping" : s->resyncing ? "reloading" : "ok";
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_kstr(&b, "status", status);
    jb_kstr(&b, "role", s->leading ? "leader" : "standby");
    jb_kstr(&b, "store", store_backend(s->st));
    jb_kstr(&b, "node", lead_node(s));
    jb_kstr(&b, "advertise", lead_advertise(s));
    jb_kint(&b, "term", (long long)s->term);
    if (s->leading)
        jb_kstr(&b, "leader", lead_advertise(s));
    else if (other)
        jb_kstr(&b, "leader", url);
    else
        jb_kraw(&b, "leader", "null");
    jb_obj_end(&b);
    bool ok = ready ? srv_serving(s) && !s->stopping : !s->resyncing && !s->stopping;
    reply_json(req, ok ? 200 : 503, &b);
}

void h_healthz(server *s, http_req *req, const principal *who, const char **args)
{
    (void)who;
    (void)args;
    health(s, req, false);
}

void h_readyz(server *s, http_req *req, const principal *who, const char **args)
{
    (void)who;
    (void)args;
    health(s, req, true);
}
