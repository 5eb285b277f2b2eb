// SPDX-License-Identifier: Apache-2.0
/* The engine's clock (clock.h).
 *
 * The wall clock at start-up advanced by the monotonic clock: a jump of the
 * wall clock neither fires scheduled work early nor expires leases early.
 * It never runs behind the time the store kept (srv_clock_at_least, at each
 * load): deadlines stored by an earlier run stay on that run's clock when
 * the wall clock went back meanwhile (docs/SEMANTICS.md, "The clock"). */
#include "clock.h"

#include "api.h"
#include "server.h"

#include "base/clock.h"

#include <time.h>

void srv_clock_start(server *s)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    s->clock.wall0_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    s->clock.mono0_ns = tq_mono_ns();
}

int64_t srv_now(server *s)
{
    return __atomic_load_n(&s->clock.wall0_ms, __ATOMIC_RELAXED) +
           (tq_mono_ns() - s->clock.mono0_ns) / 1000000;
}

void srv_clock_at_least(server *s, int64_t known)
{
    int64_t behind = known - srv_now(s);
    if (behind <= 0) return;
    __atomic_add_fetch(&s->clock.wall0_ms, behind, __ATOMIC_RELAXED);
    store_set_clock(s->st, __atomic_load_n(&s->clock.wall0_ms, __ATOMIC_RELAXED),
                    s->clock.mono0_ns);
    log_event(LOG_WARN, "clock",
              "the wall clock is %lld ms behind the time the store last knew: it went back "
              "while no server ran; this server's clock goes on from the store's",
              (long long)behind);
}
