// SPDX-License-Identifier: Apache-2.0
/* Routing: the route table (who may use a route, and whether the audit log
 * records it), the path matcher, authentication and roles, a standby's
 * redirect; the error replies every handler uses. */
#include "internal.h"

#include <stdarg.h>
/* ---- routes -------------------------------------------------------------------- */

static const route routes[] = {
    {"POST", "/v1/jobs", h_submit, ROLE_ADMIN | ROLE_TENANT},
    {"GET", "/v1/jobs", h_list_jobs, ROLE_ADMIN | ROLE_TENANT},
    {"POST", "/v1/jobs/bulk", h_jobs_bulk, ROLE_ADMIN | ROLE_TENANT | ROUTE_AUDIT},
    {"GET", "/v1/jobs/{}", h_get_job, ROLES_ALL},
    {"GET", "/v1/jobs/{}/wait", h_wait_job, ROLE_ADMIN | ROLE_TENANT},
    {"GET", "/v1/jobs/{}/attempts", h_job_attempts, ROLES_ALL},
    {"GET", "/v1/jobs/{}/parents", h_job_parents, ROLES_ALL},
    {"POST", "/v1/jobs/{}/cancel", h_cancel, ROLE_ADMIN | ROLE_TENANT | ROUTE_AUDIT},
    {"POST", "/v1/lease", h_lease, ROLE_ADMIN | ROLE_WORKER},
    {"POST", "/v1/jobs/{}/start", h_start, ROLE_ADMIN | ROLE_WORKER},
    {"POST", "/v1/jobs/{}/heartbeat", h_heartbeat, ROLE_ADMIN | ROLE_WORKER},
    {"POST", "/v1/jobs/{}/ack", h_ack, ROLE_ADMIN | ROLE_WORKER},
    {"POST", "/v1/jobs/{}/fail", h_fail, ROLE_ADMIN | ROLE_WORKER},
    {"POST", "/v1/outcomes", h_outcomes, ROLE_ADMIN | ROLE_WORKER},
    {"GET", "/v1/settings", h_settings, ROLES_ALL},
    {"GET", "/v1/tenants", h_tenants, ROLE_ADMIN | ROLE_TENANT},
    {"GET", "/v1/tenants/{}", h_tenant_get, ROLE_ADMIN | ROLE_TENANT},
    {"PUT", "/v1/tenants/{}", h_tenant_put, ROLE_ADMIN | ROUTE_AUDIT},
    {"GET", "/v1/queues", h_queues, ROLES_ALL},
    {"GET", "/v1/queues/{}", h_queue_get, ROLES_ALL},
    {"PUT", "/v1/queues/{}", h_queue_put, ROLE_ADMIN | ROUTE_AUDIT},
    {"POST", "/v1/queues/{}/pause", h_queue_pause, ROLE_ADMIN | ROLE_TENANT | ROUTE_AUDIT},
    {"POST", "/v1/queues/{}/resume", h_queue_resume, ROLE_ADMIN | ROLE_TENANT | ROUTE_AUDIT},
    {"GET", "/v1/schedules", h_schedules, ROLE_ADMIN | ROLE_TENANT},
    {"GET", "/v1/schedules/{}", h_schedule_get, ROLE_ADMIN | ROLE_TENANT},
    {"PUT", "/v1/schedules/{}", h_schedule_put, ROLE_ADMIN | ROLE_TENANT | ROUTE_AUDIT},
    {"DELETE", "/v1/schedules/{}", h_schedule_delete, ROLE_ADMIN | ROLE_TENANT | ROUTE_AUDIT},
    {"POST", "/v1/schedules/{}/pause", h_schedule_pause, ROLE_ADMIN | ROLE_TENANT | ROUTE_AUDIT},
    {"POST", "/v1/schedules/{}/resume", h_schedule_resume, ROLE_ADMIN | ROLE_TENANT | ROUTE_AUDIT},
    {"POST", "/v1/batches", h_batch_create, ROLE_ADMIN | ROLE_TENANT},
    {"GET", "/v1/batches", h_batches, ROLE_ADMIN | ROLE_TENANT},
    {"GET", "/v1/batches/{}", h_batch_get, ROLE_ADMIN | ROLE_TENANT},
    {"POST", "/v1/batches/{}/jobs", h_batch_add, ROLE_ADMIN | ROLE_TENANT},
    {"GET", "/v1/morgue", h_morgue, ROLE_ADMIN | ROLE_TENANT},
    {"POST", "/v1/morgue/requeue", h_morgue_requeue_where, ROLE_ADMIN | ROLE_TENANT | ROUTE_AUDIT},
    {"POST", "/v1/morgue/delete", h_morgue_delete_where, ROLE_ADMIN | ROLE_TENANT | ROUTE_AUDIT},
    {"POST", "/v1/morgue/{}/requeue", h_morgue_requeue, ROLE_ADMIN | ROLE_TENANT | ROUTE_AUDIT},
    {"DELETE", "/v1/morgue/{}", h_morgue_delete, ROLE_ADMIN | ROLE_TENANT | ROUTE_AUDIT},
    {"GET", "/v1/tokens", h_tokens, ROLE_ADMIN},
    {"POST", "/v1/tokens", h_token_create, ROLE_ADMIN | ROUTE_AUDIT},
    {"DELETE", "/v1/tokens/{}", h_token_revoke, ROLE_ADMIN | ROUTE_AUDIT},
    {"GET", "/v1/stats", h_stats, ROLES_ALL},
    {"GET", "/v1/stats/history", h_stats_history, ROLE_ADMIN},
    {"GET", "/v1/workers", h_workers, ROLE_ADMIN},
    {"GET", "/v1/lanes", h_lanes, ROLE_ADMIN | ROLE_TENANT},
    {"GET", "/v1/whoami", h_whoami, ROLES_ALL},
    {"GET", "/v1/audit", h_audit, ROLE_ADMIN | ROLE_TENANT},
    {"GET", "/metrics", h_metrics, ROLE_ADMIN},
    {"GET", "/healthz", h_healthz, 0},
    {"GET", "/readyz", h_readyz, 0},
    {"GET", "/", h_dashboard, 0},
    {"GET", "/ui/{}", h_dashboard, 0},
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

/* ---- replies --------------------------------------------------------------------- */

void reply_json(http_req *req, int status, jbuf *b)
{
    size_t len;
    char *body = jb_take(b, &len);
    http_reply(req, status, "application/json", NULL, body, len);
    free(body);
}

static void error_body(jbuf *b, int err, const char *field, const char *msg)
{
    jb_obj(b);
    jb_key(b, "error");
    jb_obj(b);
    jb_kstr(b, "code", tenq_err_word(err));
    jb_kstr(b, "message", msg);
    if (field) jb_kstr(b, "field", field);
    jb_obj_end(b);
    jb_obj_end(b);
}

void reply_error(http_req *req, int err, const char *field, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    jbuf b;
    jb_init(&b);
    error_body(&b, err, field, msg);
    reply_json(req, tenq_err_http_status(err), &b);
}

void reply_engine_err(http_req *req, const engine_err *err)
{
    reply_error(req, err->code, err->field, "%s", err->message);
}

/* ---- requests ----------------------------------------------------------------------------- */

void srv_on_request(void *ctx, http_req *req)
{
    server *s = ctx;
    s->n_requests++;
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
        s->n_errors++;
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
    if (!s->leading && rt->fn != h_healthz && rt->fn != h_readyz && rt->fn != h_metrics) {
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
                s->n_errors++;
                reply_error(req, TENQ_EUNAUTHENTICATED, NULL, "unknown or revoked token");
                return;
            }
        } else if (req->peer_cert) {
            /* mutual TLS: the certificate names the token it stands for */
            char why[200];
            t = auth_find_cert(&s->auth, req->peer_cert, why, sizeof why);
            if (!t) {
                s->n_errors++;
                reply_error(req, TENQ_EUNAUTHENTICATED, NULL, "%s", why);
                return;
            }
        } else {
            s->n_errors++;
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
                s->n_errors++;
                reply_error(req, TENQ_EFORBIDDEN, NULL,
                            "a viewer token reads only: it may not %s %s", req->method, req->path);
                return;
            }
        }
        if (!(rt->roles & who.role)) {
            s->n_errors++;
            reply_error(req, TENQ_EFORBIDDEN, NULL, "a %s token may not do this",
                        auth_role_word(t->role));
            return;
        }
    }
    bool mutating = strcmp(method, "GET") != 0;
    if (mutating && (s->stopping || !srv_serving(s))) {
        if (s->stopping || s->resyncing)
            reply_error(req, TENQ_EUNAVAILABLE, NULL,
                        s->stopping ? "the server is stopping" : "the store failed; reloading");
        else
            reply_error(req, TENQ_ENOT_LEADER, NULL,
                        "this server's leadership is not certain now; try again");
        return;
    }
    if (rt->roles & ROUTE_AUDIT) srv_audit_begin(s, req, &who);
    rt->fn(s, req, &who, args);
    srv_audit_end(s);
    srv_rearm_tick(s);
}
