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

typedef struct server server;

typedef struct parked parked;

/* What a route needs of the jobs a load brings in (the route table's
 * flags, router.c): every job (a bulk action); the job its path names, when
 * that one is not in memory (a cancel); the jobs its body names as parents,
 * when it names any (a submit with depends_on). */
#define LOAD_ALL  0x200
#define LOAD_JOB  0x400
#define LOAD_DEPS 0x800

/* Runs a parked request again, from the top (the router's srv_on_request,
 * registered at start: server.c). */
typedef void (*load_rest_again)(void *ctx, http_req *req);

typedef struct load_rest_state {
    bool active;             /* plain jobs are still being brought in */
    uint64_t term;           /* the engine they go into */
    store_rest_cursor after; /* the last row read */
    uint64_t loaded;         /* plain jobs brought in by this load */
    int64_t started_ms;      /* when it began (the server's clock) */
    double last_seconds;     /* how long the last one took */
    parked *parked, *last;   /* requests waiting for it to end */
    uint64_t parked_total;
    load_rest_again again;
} load_rest_state;

/* Begins bringing in the plain jobs of the engine just installed. */
void srv_load_rest_start(server *s);
/* While the load goes on, a request that needs jobs it may not have
 * brought in yet (needs: its route's LOAD_* bits; args: its path's
 * segments) waits for its end: true when req was parked (it runs again,
 * from the top, once the load ends). */
bool srv_load_rest_park(server *s, http_req *req, int needs, const char **args);
/* The leadership ended: parked requests are answered (307 or 503). */
void srv_load_rest_stop(server *s);

#endif
