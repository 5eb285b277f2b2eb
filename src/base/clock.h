// SPDX-License-Identifier: Apache-2.0
/* clock — the monotonic clock, for timeouts and intervals (it never jumps
 * with the wall clock), and the wall clock in ms, for timestamps. */
#ifndef TENQ_BASE_CLOCK_H
#define TENQ_BASE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t tq_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int64_t tq_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ms since the epoch */
static inline int64_t tq_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#endif
