// SPDX-License-Identifier: Apache-2.0
/* Routing (router.c): the route table, and every request's way to its
 * handler (handlers.h): the route matched, the token checked, writes
 * refused unless this server serves, the audit log's bracket. */
#ifndef TENQ_API_ROUTER_H
#define TENQ_API_ROUTER_H

#include "auth.h"
#include "http.h"

#include <stdint.h>

typedef struct server server;

/* A route's handler: args are the path's {} segments. */
typedef void (*route_fn)(server *s, http_req *req, const principal *who, const char **args);

/* Routes (router.c's table).  query: the query parameters the route
 * takes, space-separated (NULL: any); body: whether its handler reads a
 * JSON object (and refuses a member it does not know) or takes none (an
 * empty body, or {}).  The router refuses anything else before the
 * handler runs: a parameter not listed or given twice, a body to a route
 * that takes none (400, naming the parameter or member). */
typedef enum { BODY_NONE, BODY_JSON } route_body;
typedef struct route {
    const char *method;
    const char *pattern; /* "/v1/jobs/{}/ack": {} takes one segment */
    route_fn fn;
    int roles; /* role_kind bits, ROUTE_AUDIT, and what it needs of a load (LOAD_*) */
    const char *query;
    route_body body;
} route;
/* In a route's roles: a change the audit log records (audit.h). */
#define ROUTE_AUDIT 0x100

typedef struct router_state {
    uint64_t requests, errors; /* for /metrics */
} router_state;

/* Every request http.c reads (http_handler). */
void srv_on_request(void *ctx, http_req *req);

#endif
