// SPDX-License-Identifier: Apache-2.0
/* The engine's clock (clock.c): the wall clock at start-up advanced by the
 * monotonic clock, never behind the time the store kept (docs/SEMANTICS.md,
 * "The clock").  Every `now` the engine is given comes from srv_now. */
#ifndef TENQ_API_CLOCK_H
#define TENQ_API_CLOCK_H

#include <stdint.h>

typedef struct server server;

typedef struct srv_clock {
    /* wall0_ms (atomic: only ever raised, by the loader, srv_clock_at_least)
     * plus the monotonic time since mono0_ns */
    int64_t wall0_ms, mono0_ns;
} srv_clock;

/* Starts the clock at the wall clock's time now (server.c, first). */
void srv_clock_start(server *s);
/* Milliseconds since the epoch, by the engine's clock.  Any thread. */
int64_t srv_now(server *s);
/* Moves the engine's clock forward to at least `known` (the time the store
 * kept: a wall clock behind it went back while the server was down) and
 * tells the store.  Any thread. */
void srv_clock_at_least(server *s, int64_t known);

#endif
