// SPDX-License-Identifier: Apache-2.0
/* A lease granted now (lease.c), for POST /v1/lease and for a woken long
 * poll. */
#ifndef TENQ_API_LEASE_H
#define TENQ_API_LEASE_H

#include "auth.h"
#include "http.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct server server;

/* A lease for a request, answered now (false when nothing was eligible);
 * results: the text of a "results" list to answer with too, or NULL;
 * columns: the jobs as columns. */
bool srv_try_lease(server *s, http_req *req, const principal *who, char **queues, size_t nq,
                   char **types, size_t nt, size_t max, const char *worker, const char *results,
                   bool columns);
/* {"jobs":[]}, or {"columns":{}} (with the results list, when not NULL). */
void reply_no_jobs(http_req *req, const char *results, bool columns);

#endif
