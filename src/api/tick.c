// SPDX-License-Identifier: Apache-2.0
/* The engine's timers (tick.h): engine_tick when the next one comes due,
 * its changes collected like a handler's. */
#include "tick.h"

#include "args_read.h"
#include "clock.h"
#include "commit.h"
#include "server.h"
#include "serving.h"

#include <event2/event.h>
#include <time.h>

void srv_rearm_tick(server *s)
{
    srv_args_read_ahead(s); /* what the turn moved to the front (args_read.c) */
    int64_t next = engine_next_timer(s->e);
    if (next == INT64_MAX) {
        if (s->tick.at) event_del(s->tick.ev);
        s->tick.at = 0;
        return;
    }
    if (s->tick.at && s->tick.at <= next && event_pending(s->tick.ev, EV_TIMEOUT, NULL)) return;
    int64_t delay = next - srv_now(s);
    if (delay < 0) delay = 0;
    struct timeval tv = {(time_t)(delay / 1000), (suseconds_t)((delay % 1000) * 1000)};
    event_add(s->tick.ev, &tv);
    s->tick.at = next;
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    server *s = arg;
    s->tick.at = 0;
    if (srv_serving(s)) {
        engine_tick(s->e, srv_now(s));
        srv_collect(s);
    }
    srv_rearm_tick(s);
}

int srv_tick_start(server *s)
{
    s->tick.ev = evtimer_new(s->base, on_tick, s);
    return s->tick.ev ? 0 : -1;
}

void srv_tick_stop(server *s)
{
    event_del(s->tick.ev);
}

void srv_tick_free(server *s)
{
    if (s->tick.ev) event_free(s->tick.ev);
}
