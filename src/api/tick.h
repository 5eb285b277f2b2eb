// SPDX-License-Identifier: Apache-2.0
/* The engine's timers (tick.c): one event for the engine's next timer
 * (scheduled jobs coming due, leases expiring, rates, sleeps), rearmed at
 * the end of every turn that changed something. */
#ifndef TENQ_API_TICK_H
#define TENQ_API_TICK_H

#include <stdint.h>

typedef struct server server;
struct event;

typedef struct tick_state {
    struct event *ev;
    int64_t at; /* when it is armed for (0: not armed) */
} tick_state;

/* Its event made: 0, or -1. */
int srv_tick_start(server *s);
/* Arms the event for the engine's next timer (and reads ahead what the
 * turn moved to the front: args_read.h). */
void srv_rearm_tick(server *s);
void srv_tick_stop(server *s);
void srv_tick_free(server *s);

#endif
