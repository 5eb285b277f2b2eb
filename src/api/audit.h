// SPDX-License-Identifier: Apache-2.0
/* The audit log's rows (audit.c): a row for every change the route table
 * marks (ROUTE_AUDIT, router.h), in the commit of the change. */
#ifndef TENQ_API_AUDIT_H
#define TENQ_API_AUDIT_H

#include "auth.h"
#include "http.h"

#include "store/store.h"

#include <stdbool.h>

typedef struct server server;

typedef struct audit_state {
    http_req *req; /* the request being handled, when its route is audited */
    principal who; /* and who made it */
} audit_state;

/* The router brackets an audited route's handler with begin and end. */
void srv_audit_begin(server *s, http_req *req, const principal *who);
void srv_audit_end(server *s);
/* The audited request req answered status: its row written into `into`
 * (the batch being built: srv_commit_reply); false when req is not audited
 * (or its row is written already). */
bool srv_audit_note(server *s, http_req *req, int status, store_batch *into);
/* The same into *a, for a change committed by a transaction of its own;
 * NULL when the request is not audited (mem: its strings, freed by the
 * caller). */
const store_audit *srv_audit_take(server *s, http_req *req, int status, store_audit *a,
                                  char *mem[3]);

#endif
