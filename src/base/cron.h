// SPDX-License-Identifier: Apache-2.0
/* cron — schedule expressions and their ticks, in a time zone.
 *
 * An expression is five fields, "minute hour day-of-month month
 * day-of-week", each a list of values, ranges (a-b) and steps (*\/n, a-b/n,
 * a/n); months and weekdays also by name (JAN-DEC, SUN-SAT, any case; day
 * of week 7 is Sunday too).  When both day fields are restricted (neither
 * starts with '*' or '?'), a day matches when either matches (Vixie cron's
 * rule); otherwise both must.  Or one of @yearly (@annually), @monthly,
 * @weekly, @daily (@midnight), @hourly, or "@every <duration>": a duration
 * of whole seconds like 30s, 5m, 1h30m, 2d (at least 1 s, at most 366 d).
 *
 * Ticks of a five-field expression are wall-clock minutes in the zone: a
 * wall time a fall-back repeats ticks once, at its first occurrence; one a
 * spring-forward gap skips ticks once, at the first instant after the gap
 * (every skipped minute of the gap lands there, and is one tick).  Ticks of
 * @every are the multiples of the duration since 1970-01-01 00:00 UTC,
 * whatever the zone.
 *
 * Pure: no clock reads, no allocation, no I/O. */
#ifndef TENQ_BASE_CRON_H
#define TENQ_BASE_CRON_H

#include "tzif.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TQ_CRON_EVERY_MAX_MS  (366LL * 86400 * 1000)
/* The furthest a next tick is looked for (an expression with no tick in
 * this long is refused). */
#define TQ_CRON_HORIZON_YEARS 12

typedef struct tq_cron {
    uint64_t minutes; /* bit n: minute n (0-59) */
    uint32_t hours;   /* 0-23 */
    uint32_t mdays;   /* 1-31 */
    uint16_t months;  /* 1-12 */
    uint8_t wdays;    /* 0-6, 0 = Sunday */
    bool mday_star, wday_star;
    int64_t every_ms; /* @every: the period; 0 for a five-field expression */
} tq_cron;

/* Parses text into *out: 0, or -1 with a message in err naming what is
 * wrong (which field, which value). */
int tq_cron_parse(const char *text, tq_cron *out, char *err, size_t errlen);
/* The first tick strictly after `after` (ms since the epoch, >= 0), in ms;
 * -1 when none comes within TQ_CRON_HORIZON_YEARS (never for a parsed
 * expression). */
int64_t tq_cron_next(const tq_cron *c, const tq_zone *z, int64_t after);

#endif
