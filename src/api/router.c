// SPDX-License-Identifier: Apache-2.0
/* Routing: the route table (who may use a route, whether the audit log
 * records it, whether it waits for the jobs a load brings in), the path
 * matcher, authentication and roles, a standby's redirect. */
#include "router.h"

#include "audit.h"
#include "handlers.h"
#include "load_rest.h"
#include "reply.h"
#include "request.h"
#include "server.h"
#include "serving.h"
#include "tick.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* ---- routes -------------------------------------------------------------------- */

/* Each route with the query parameters it takes and whether it reads a
 * body (router.h, route).  ANY_QUERY is for the dashboard's pages, which
 * a browser opens with whatever query a link carries (a tracking tag), and
 * for liveness and readiness, which must never fail a probe while the
 * process answers (a probe configured with a query would restart it); they
 * read none.  tests/integration/test_protocol.py reads this table
 * (EveryRoute): every route is called with what it does not take. */
#define ANY_QUERY NULL
static const route routes[] = {
    {"POST", "/v1/jobs", h_submit, ROLE_ADMIN | ROLE_TENANT | LOAD_DEPS, "", BODY_JSON},
    {"GET", "/v1/jobs", h_list_jobs, ROLE_ADMIN | ROLE_TENANT,
     "tenant queue type state key args after_id limit", BODY_NONE},
    {"POST", "/v1/jobs/bulk", h_jobs_bulk, ROLE_ADMIN | ROLE_TENANT | ROUTE_AUDIT | LOAD_ALL, "",
     BODY_JSON},
    {"GET", "/v1/jobs/{}", h_get_job, ROLES_ALL, "", BODY_NONE},
    {"GET", "/v1/jobs/{}/wait", h_wait_job, ROLE_ADMIN | ROLE_TENANT, "timeout_ms", BODY_NONE},
    {"GET", "/v1/jobs/{}/attempts", h_job_attempts, ROLES_ALL, "", BODY_NONE},
    {"GET", "/v1/jobs/{}/parents", h_job_parents, ROLES_ALL, "", BODY_NONE},
    {"POST", "/v1/jobs/{}/cancel", h_cancel, ROLE_ADMIN | ROLE_TENANT | ROUTE_AUDIT | LOAD_JOB, "",
     BODY_NONE},
    {"GET", "/v1/jobs/{}/steps", h_job_steps, ROLES_ALL, "", BODY_NONE},
    {"POST", "/v1/jobs/{}/steps", h_step, ROLE_ADMIN | ROLE_WORKER, "", BODY_JSON},
    {"POST", "/v1/steps", h_steps_batch, ROLE_ADMIN | ROLE_WORKER, "", BODY_JSON},
    {"POST", "/v1/lease", h_lease, ROLE_ADMIN | ROLE_WORKER, "", BODY_JSON},
    {"POST", "/v1/jobs/{}/start", h_start, ROLE_ADMIN | ROLE_WORKER, "", BODY_JSON},
    {"POST", "/v1/jobs/{}/heartbeat", h_heartbeat, ROLE_ADMIN | ROLE_WORKER, "", BODY_JSON},
    {"POST", "/v1/jobs/{}/ack", h_ack, ROLE_ADMIN | ROLE_WORKER, "", BODY_JSON},
    {"POST", "/v1/jobs/{}/fail", h_fail, ROLE_ADMIN | ROLE_WORKER, "", BODY_JSON},
    {"POST", "/v1/outcomes", h_outcomes, ROLE_ADMIN | ROLE_WORKER, "", BODY_JSON},
    {"POST", "/v1/events", h_event_send, ROLE_ADMIN | ROLE_TENANT, "", BODY_JSON},
    {"GET", "/v1/settings", h_settings, ROLES_ALL, "", BODY_NONE},
    {"GET", "/v1/spec", h_spec, ROLES_ALL, "", BODY_NONE},
    {"GET", "/v1/tenants", h_tenants, ROLE_ADMIN | ROLE_TENANT, "", BODY_NONE},
    {"GET", "/v1/tenants/{}", h_tenant_get, ROLE_ADMIN | ROLE_TENANT, "", BODY_NONE},
    {"PUT", "/v1/tenants/{}", h_tenant_put, ROLE_ADMIN | ROUTE_AUDIT, "", BODY_JSON},
    {"GET", "/v1/queues", h_queues, ROLES_ALL, "", BODY_NONE},
    {"GET", "/v1/queues/{}", h_queue_get, ROLES_ALL, "", BODY_NONE},
    {"PUT", "/v1/queues/{}", h_queue_put, ROLE_ADMIN | ROUTE_AUDIT, "", BODY_JSON},
    {"POST", "/v1/queues/{}/pause", h_queue_pause, ROLE_ADMIN | ROLE_TENANT | ROUTE_AUDIT, "",
     BODY_JSON},
    {"POST", "/v1/queues/{}/resume", h_queue_resume, ROLE_ADMIN | ROLE_TENANT | ROUTE_AUDIT, "",
     BODY_JSON},
    {"GET", "/v1/schedules", h_schedules, ROLE_ADMIN | ROLE_TENANT, "tenant runs", BODY_NONE},
    {"GET", "/v1/schedules/{}", h_schedule_get, ROLE_ADMIN | ROLE_TENANT, "", BODY_NONE},
    {"PUT", "/v1/schedules/{}", h_schedule_put, ROLE_ADMIN | ROLE_TENANT | ROUTE_AUDIT, "",
     BODY_JSON},
    {"DELETE", "/v1/schedules/{}", h_schedule_delete, ROLE_ADMIN | ROLE_TENANT | ROUTE_AUDIT, "",
     BODY_NONE},
    {"POST", "/v1/schedules/{}/pause", h_schedule_pause, ROLE_ADMIN | ROLE_TENANT | ROUTE_AUDIT, "",
     BODY_NONE},
    {"POST", "/v1/schedules/{}/resume", h_schedule_resume, ROLE_ADMIN | ROLE_TENANT | ROUTE_AUDIT,
     "", BODY_NONE},
    {"POST", "/v1/batches", h_batch_create, ROLE_ADMIN | ROLE_TENANT | LOAD_DEPS, "", BODY_JSON},
    {"GET", "/v1/batches", h_batches, ROLE_ADMIN | ROLE_TENANT, "tenant limit before", BODY_NONE},
    {"GET", "/v1/batches/{}", h_batch_get, ROLE_ADMIN | ROLE_TENANT, "", BODY_NONE},
    {"POST", "/v1/batches/{}/jobs", h_batch_add, ROLE_ADMIN | ROLE_TENANT | LOAD_DEPS, "",
     BODY_JSON},
    {"GET", "/v1/morgue", h_morgue, ROLE_ADMIN | ROLE_TENANT, "tenant queue type sort limit after",
     BODY_NONE},
    {"POST", "/v1/morgue/requeue", h_morgue_requeue_where, ROLE_ADMIN | ROLE_TENANT | ROUTE_AUDIT,
     "", BODY_JSON},
    {"POST", "/v1/morgue/delete", h_morgue_delete_where, ROLE_ADMIN | ROLE_TENANT | ROUTE_AUDIT, "",
     BODY_JSON},
    {"POST", "/v1/morgue/{}/requeue", h_morgue_requeue, ROLE_ADMIN | ROLE_TENANT | ROUTE_AUDIT, "",
     BODY_NONE},
    {"DELETE", "/v1/morgue/{}", h_morgue_delete, ROLE_ADMIN | ROLE_TENANT | ROUTE_AUDIT, "",
     BODY_NONE},
    {"GET", "/v1/tokens", h_tokens, ROLE_ADMIN, "", BODY_NONE},
    {"POST", "/v1/tokens", h_token_create, ROLE_ADMIN | ROUTE_AUDIT, "", BODY_JSON},
    {"DELETE", "/v1/tokens/{}", h_token_revoke, ROLE_ADMIN | ROUTE_AUDIT, "", BODY_NONE},
    {"GET", "/v1/stats", h_stats, ROLES_ALL, "", BODY_NONE},
    {"GET", "/v1/stats/history", h_stats_history, ROLE_ADMIN, "", BODY_NONE},
    {"GET", "/v1/workers", h_workers, ROLE_ADMIN, "", BODY_NONE},
    {"GET", "/v1/lanes", h_lanes, ROLE_ADMIN | ROLE_TENANT, "limit", BODY_NONE},
    {"GET", "/v1/keys", h_keys, ROLE_ADMIN | ROLE_TENANT, "tenant key limit at_limit", BODY_NONE},
    {"GET", "/v1/key-settings", h_key_settings, ROLE_ADMIN | ROLE_TENANT, "tenant", BODY_NONE},
    {"PUT", "/v1/key-settings", h_key_setting_put, ROLE_ADMIN, "", BODY_JSON},
    {"DELETE", "/v1/key-settings", h_key_setting_delete, ROLE_ADMIN, "tenant key", BODY_NONE},
    {"GET", "/v1/whoami", h_whoami, ROLES_ALL, "", BODY_NONE},
    {"GET", "/v1/audit", h_audit, ROLE_ADMIN | ROLE_TENANT,
     "limit before token_id since until tenant method path", BODY_NONE},
    {"GET", "/metrics", h_metrics, ROLE_ADMIN, "", BODY_NONE},
    {"GET", "/healthz", h_healthz, 0, ANY_QUERY, BODY_NONE},
    {"GET", "/readyz", h_readyz, 0, ANY_QUERY, BODY_NONE},
    {"GET", "/", h_dashboard, 0, ANY_QUERY, BODY_NONE},
    {"GET", "/ui/{}", h_dashboard, 0, ANY_QUERY, BODY_NONE},
};

#define NROUTES  (sizeof(routes) / sizeof(routes[0]))
#define MAX_ARGS 4

/* Matches a path against a pattern; fills args with the {} segments
 * (pointers into buf).  The path is walked in place (one that does not fit
 * buf as cut to it) and copied only when it matches: every route is tried
 * in turn. */
static bool match(const char *pattern, const char *path, char *buf, size_t blen, const char **args)
{
    size_t n = strnlen(path, blen - 1), at[MAX_ARGS], alen[MAX_ARGS];
    const char *p = path, *e = path + n, *t = pattern;
    int na = 0;
    while (*t && p < e) {
        if (t[0] == '{' && t[1] == '}') {
            const char *end = memchr(p, '/', (size_t)(e - p));
            size_t len = end ? (size_t)(end - p) : (size_t)(e - p);
            if (len == 0 || na >= MAX_ARGS) return false;
            at[na] = (size_t)(p - path);
            alen[na++] = len;
            t += 2;
            p += len;
            if (p < e) { /* at a '/' */
                if (*t != '/') return false;
                p++;
                t++;
            }
            continue;
        }
        if (*t++ != *p++) return false;
    }
    if (*t || p < e) return false;
    memcpy(buf, path, n);
    buf[n] = 0;
    for (int i = 0; i < na; i++) {
        buf[at[i] + alen[i]] = 0; /* the '/' after it, or the end */
        args[i] = buf + at[i];
    }
    return true;
}

/* ---- what a route does not read ------------------------------------------------------------ */

/* Whether the space-separated list has the name k[0..n). */
static bool listed(const char *list, const char *k, size_t n)
{
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, " ");
        if (len == n && memcmp(p, k, n) == 0) return true;
        p += len + (p[len] == ' ');
    }
    return false;
}

/* A query parameter the route does not take, or one given twice, is
 * refused (400 naming it): a typo never passes silently, and a filter
 * never goes unread. */
static bool query_ok(http_req *req, const route *rt)
{
    if (!rt->query) return true;
    for (const char *p = req->query; *p;) {
        size_t seg = strcspn(p, "&"), kl = strcspn(p, "&=");
        const char *next = p + seg + (p[seg] == '&');
        if (seg == 0) { /* "a=1&&b=2", a trailing '&' */
            p = next;
            continue;
        }
        bool twice = false;
        for (const char *q = next; *q && !twice;) {
            size_t qs = strcspn(q, "&");
            twice = strcspn(q, "&=") == kl && memcmp(q, p, kl) == 0;
            q += qs + (q[qs] == '&');
        }
        if (!listed(rt->query, p, kl) || twice) {
            char name[80];
            snprintf(name, sizeof name, "%.*s", (int)(kl < 64 ? kl : 64), p);
            if (twice)
                reply_error(req, TENQ_EINVALID, name, "the query parameter %s is given twice",
                            name);
            else if (!*rt->query)
                reply_error(req, TENQ_EINVALID, name, "%s %s takes no query parameters (%s)",
                            rt->method, rt->pattern, name);
            else
                reply_error(req, TENQ_EINVALID, name, "unknown query parameter %s: %s %s takes %s",
                            name, rt->method, rt->pattern, rt->query);
            return false;
        }
        p = next;
    }
    return true;
}

/* A route that reads no body takes none, or an empty object (what some
 * clients send with every POST); anything else is refused, naming the
 * member when it is an object's. */
static bool no_body_ok(http_req *req, const route *rt)
{
    if (rt->body != BODY_NONE || req->body_len == 0) return true;
    json_error_t jerr;
    json_t *v = json_loadb(req->body, req->body_len, 0, &jerr);
    if (!v) { /* req_body words it (a number too big names its field) */
        json_decref(req_body(req));
        return false;
    }
    bool ok = json_is_object(v) && json_object_size(v) == 0;
    if (json_is_object(v) && !ok) {
        const char *k = json_object_iter_key(json_object_iter(v));
        reply_error(req, TENQ_EINVALID, k, "unknown field \"%s\": %s %s takes no body", k,
                    rt->method, rt->pattern);
    } else if (!ok) {
        reply_error(req, TENQ_EINVALID, NULL, "%s %s takes no body (or an empty object {})",
                    rt->method, rt->pattern);
    }
    json_decref(v);
    return ok;
}

/* ---- requests ----------------------------------------------------------------------------- */

void srv_on_request(void *ctx, http_req *req)
{
    server *s = ctx;
    s->router.requests++;
    char buf[1024];
    const char *args[MAX_ARGS] = {0};
    const route *rt = NULL;
    bool path_known = false;
    /* HEAD is GET without the body (http.c drops it) */
    const char *method = strcmp(req->method, "HEAD") == 0 ? "GET" : req->method;
    for (size_t i = 0; i < NROUTES; i++) {
        if (!match(routes[i].pattern, req->path, buf, sizeof buf, args)) continue;
        path_known = true;
        if (strcmp(routes[i].method, method) == 0) {
            rt = &routes[i];
            break;
        }
    }
    if (!rt) {
        s->router.errors++;
        if (path_known) {
            char body[512];
            int n = snprintf(body, sizeof body,
                             "{\"error\":{\"code\":\"invalid\",\"message\":\"%.32s is not "
                             "allowed on this path\"}}",
                             req->method);
            http_reply(req, 405, "application/json", NULL, body, (size_t)n);
        } else
            reply_error(req, TENQ_ENOT_FOUND, NULL, "no such endpoint: %s %s", req->method,
                        req->path);
        return;
    }
    /* A standby has no jobs: the leader answers (every route but health,
     * readiness and metrics, which are this server's own). */
    if (!s->lead.leading && rt->fn != h_healthz && rt->fn != h_readyz && rt->fn != h_metrics) {
        srv_not_leader(s, req);
        return;
    }
    principal who = {.role = ROLE_ADMIN};
    /* Tokens are required once any exists, and always off loopback (revoking
     * the last token must not open the server to the network). */
    if (rt->roles && (s->auth.by_hash.len > 0 || s->open_network)) {
        const char *h = http_header_get(req, "authorization");
        const token *t = NULL;
        if (h && strncasecmp(h, "Bearer ", 7) == 0) {
            t = auth_find_secret(&s->auth, h + 7);
            if (!t) {
                s->router.errors++;
                reply_error(req, TENQ_EUNAUTHENTICATED, NULL, "unknown or revoked token");
                return;
            }
        } else if (req->peer_cert) {
            /* mutual TLS: the certificate names the token it stands for */
            char why[200];
            t = auth_find_cert(&s->auth, req->peer_cert, why, sizeof why);
            if (!t) {
                s->router.errors++;
                reply_error(req, TENQ_EUNAUTHENTICATED, NULL, "%s", why);
                return;
            }
        } else {
            s->router.errors++;
            reply_error(req, TENQ_EUNAUTHENTICATED, NULL,
                        "this server needs a token: Authorization: Bearer <token>");
            return;
        }
        who.tok = t;
        who.role = t->role;
        if (t->role == ROLE_VIEWER) {
            /* reads what an admin, or its tenant, reads; changes nothing */
            who.role = t->tenant[0] ? ROLE_TENANT : ROLE_ADMIN;
            who.read_only = true;
            who.hide_data = t->hide_data;
            if (strcmp(method, "GET") != 0) {
                s->router.errors++;
                reply_error(req, TENQ_EFORBIDDEN, NULL,
                            "a viewer token reads only: it may not %s %s", req->method, req->path);
                return;
            }
        }
        if (!(rt->roles & who.role)) {
            s->router.errors++;
            reply_error(req, TENQ_EFORBIDDEN, NULL, "a %s token may not do this",
                        auth_role_word(t->role));
            return;
        }
    }
    if (!query_ok(req, rt) || !no_body_ok(req, rt)) {
        s->router.errors++;
        return;
    }
    bool mutating = strcmp(method, "GET") != 0;
    if (mutating && (s->stopping || !srv_serving(s))) {
        if (s->stopping || s->lead.resyncing)
            reply_error(req, TENQ_EUNAVAILABLE, NULL,
                        s->stopping ? "the server is stopping" : "the store failed; reloading");
        else
            reply_error(req, TENQ_ENOT_LEADER, NULL,
                        "this server's leadership is not certain now; try again");
        return;
    }
    /* runs again once the load is done */
    if (srv_load_rest_park(s, req, rt->roles & (LOAD_ALL | LOAD_JOB | LOAD_DEPS), args)) return;
    if (rt->roles & ROUTE_AUDIT) srv_audit_begin(s, req, &who);
    rt->fn(s, req, &who, args);
    srv_audit_end(s);
    srv_rearm_tick(s);
}
