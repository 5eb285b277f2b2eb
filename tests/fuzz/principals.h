// SPDX-License-Identifier: Apache-2.0
/* Who asks, for the request readers' targets: an admin (no token), and a
 * tenant token for tenant "acme" limited to the queues "reports" and
 * "bench".  Every input is read as each. */
#ifndef TENQ_FUZZ_PRINCIPALS_H
#define TENQ_FUZZ_PRINCIPALS_H

#include "api/auth.h"
#include "api/jobread.h"
#include "api/request.h"
#include "api/request_read.h"

#include <jansson.h>
#include <string.h>

static char *fuzz_queues[] = {"reports", "bench"};
static const token fuzz_token = {
    .role = ROLE_TENANT, .tenant = "acme", .queues = fuzz_queues, .nqueues = 2};
static const principal fuzz_principals[2] = {{.role = ROLE_ADMIN},
                                             {.role = ROLE_TENANT, .tok = &fuzz_token}};

static inline bool fuzz_same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

/* The body as a handler's req_body reads it: an object, or NULL. */
static inline json_t *fuzz_body_tree(const char *text, size_t n)
{
    json_error_t jerr;
    json_t *v = n ? json_loadb(text, n, JSON_REJECT_DUPLICATES, &jerr) : NULL;
    if (v && !json_is_object(v)) {
        json_decref(v);
        v = NULL;
    }
    return v;
}

#endif
