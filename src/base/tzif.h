// SPDX-License-Identifier: Apache-2.0
/* tzif — time zones read from the system's TZif files (RFC 8536), without
 * the C library's TZ machinery: setenv("TZ")/tzset/localtime share one
 * process-wide state and are not safe in a server with threads.
 *
 * A zone is its transitions (UTC second at which the offset changes), the
 * local time types they lead to, and the footer's POSIX TZ rule, which
 * gives the offset past the last transition (version 2 files and later;
 * version 1 files are refused).  "UTC" is built in: it needs no file.
 *
 * Threads: a zone is read-only once made; any thread may use it.
 * Ownership: tq_zone_load and tq_zone_parse return a zone the caller frees
 * with tq_zone_free (NULL is fine). */
#ifndef TENQ_BASE_TZIF_H
#define TENQ_BASE_TZIF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tq_zone tq_zone;

#define TQ_ZONEINFO_DIR "/usr/share/zoneinfo"

/* Whether name is an IANA zone name as files are named: 1-128 of
 * A-Z a-z 0-9 _ + - / and no "." segment, no leading '/'. */
bool tq_zone_name_valid(const char *name);
/* Reads dir/name (dir NULL: $TZDIR, else TQ_ZONEINFO_DIR).  NULL with a
 * message in err (an invalid name, no such zone, a file that is not a
 * version 2+ TZif file). */
tq_zone *tq_zone_load(const char *name, const char *dir, char *err, size_t errlen);
/* The same from a file's bytes (tests). */
tq_zone *tq_zone_parse(const char *name, const unsigned char *data, size_t n, char *err,
                       size_t errlen);
/* A zone from a POSIX TZ rule alone, e.g. "CET-1CEST,M3.5.0,M10.5.0/3". */
tq_zone *tq_zone_posix(const char *name, const char *rule, char *err, size_t errlen);
void tq_zone_free(tq_zone *z);
const char *tq_zone_name(const tq_zone *z);

/* The offset from UTC (seconds east) in force at UTC second t. */
int32_t tq_zone_offset(const tq_zone *z, int64_t t);
/* The UTC second at which local wall-clock second `local` (seconds since
 * 1970-01-01 00:00 of the local calendar) happens.  A time that happens
 * twice (a fall-back repeats it) gives the first; a time that never happens
 * (a spring-forward gap skips it) gives the first instant after the gap,
 * and *in_gap is set (when not NULL). */
int64_t tq_zone_to_utc(const tq_zone *z, int64_t local, bool *in_gap);

/* The civil calendar (proleptic Gregorian), days since 1970-01-01. */
int64_t tq_days_from_civil(int64_t y, unsigned m, unsigned d);
void tq_civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d);
/* 0 = Sunday. */
unsigned tq_weekday(int64_t days);
unsigned tq_month_days(int64_t y, unsigned m);

#endif
