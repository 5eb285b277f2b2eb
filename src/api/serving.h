// SPDX-License-Identifier: Apache-2.0
/* The leadership as the loop sees it (serving.c): whether this server leads
 * and serves now, and the answer of one that does not.  lead_loop.c moves
 * the state; every other file only reads it. */
#ifndef TENQ_API_SERVING_H
#define TENQ_API_SERVING_H

#include "http.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct server server;
struct lead;

typedef struct lead_state {
    struct lead *thread; /* the leadership's threads (lead.h) */
    /* leading: this server's engine is the store's, under term; resyncing:
     * it is being reloaded, or the leadership is not certain (writes
     * refused meanwhile) */
    bool leading, resyncing;
    uint64_t term;
    bool admin_token_refused; /* TENQ_ADMIN_TOKEN names another role's token */
} lead_state;

/* Leads, its engine current, its leadership certain: may change anything. */
bool srv_serving(server *s);
/* The answer of a server that does not lead: 307 to the leader, or 503. */
void srv_not_leader(server *s, http_req *req);

#endif
