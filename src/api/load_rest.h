// SPDX-License-Identifier: Apache-2.0
/* Serving while loading (load_rest.c): after a start or a takeover the
 * leader serves once every job but the plain ones waiting in line is
 * loaded; those are brought in behind it, a page at a time, in fifo order
 * (docs/SEMANTICS.md, "Serving while loading"). */
#ifndef TENQ_API_LOAD_REST_H
#define TENQ_API_LOAD_REST_H

#include "http.h"
#include "store/store.h"

#include <stdbool.h>
#include <stdint.h>

struct server;
struct route;

typedef struct parked parked;

typedef struct load_rest_state {
    bool active;             /* plain jobs are still being brought in */
    uint64_t term;           /* the engine they go into */
    store_rest_cursor after; /* the last row read */
    uint64_t loaded;         /* plain jobs brought in by this load */
    int64_t started_ms;      /* when it began (the server's clock) */
    double last_seconds;     /* how long the last one took */
    parked *parked, *last;   /* requests waiting for it to end */
    uint64_t parked_total;
} load_rest_state;

/* Begins bringing in the plain jobs of the engine just installed. */
void srv_load_rest_start(struct server *s);
/* While the load goes on, a request that needs jobs it may not have
 * brought in yet (a submit naming depends_on, a cancel of a job not in
 * memory, a bulk action) waits for its end: true when req was parked (it
 * runs again, from the top, once the load ends). */
bool srv_load_rest_park(struct server *s, http_req *req, const struct route *rt, const char **args);
/* The leadership ended: parked requests are answered (307 or 503). */
void srv_load_rest_stop(struct server *s);

#endif
