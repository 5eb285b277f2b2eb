// SPDX-License-Identifier: Apache-2.0
/* The store's clock: the caller's clock (the engine's `now`: the wall clock
 * read once, advanced by the monotonic clock), the latest time of it the
 * store has kept (tenq_info 'clock_ms', only ever raised), and retention's
 * clock, which runs no faster than the monotonic clock from that kept time.
 * docs/decisions/0023-a-clock-that-steps.md says why. */
#include "internal.h"
#include "schema.h"

#include "base/clock.h"

#include <stdio.h>
#include <time.h>

#define SQL_CLOCK_READ "SELECT CAST(value AS $I64) FROM $Stenq_info WHERE key = 'clock_ms'"
#define SQL_CLOCK_SAVE                                                                             \
    "INSERT INTO $Stenq_info (key, value) VALUES ('clock_ms', ?1) ON CONFLICT (key) DO UPDATE "    \
    "SET value = excluded.value WHERE CAST($Stenq_info.value AS $I64) < CAST(excluded.value AS "   \
    "$I64)"

static int64_t mono_ms(void)
{
    return tq_mono_ns() / 1000000;
}

void store_clock_init(store_t *s)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t wall = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    __atomic_store_n(&s->clock_off_ms, wall - mono_ms(), __ATOMIC_RELAXED);
    __atomic_store_n(&s->known_mono_ms, (int64_t)0, __ATOMIC_RELAXED);
}

void store_set_clock(store_t *s, int64_t wall0_ms, int64_t mono0_ns)
{
    __atomic_store_n(&s->clock_off_ms, wall0_ms - mono0_ns / 1000000, __ATOMIC_RELAXED);
}

int64_t store_now(const store_t *s)
{
    return mono_ms() + __atomic_load_n(&s->clock_off_ms, __ATOMIC_RELAXED);
}

static void known_row(void *ctx, const store_rowacc *acc, void *row)
{
    *(int64_t *)ctx = acc->is_null(row, 0) ? 0 : acc->i64(row, 0);
}

int store_clock_read(store_t *s, int64_t *known_ms)
{
    int64_t known = 0;
    pthread_mutex_lock(&s->db_lock);
    int rc = s->be->select(s, false, SQL_CLOCK_READ, 0, NULL, known_row, &known);
    pthread_mutex_unlock(&s->db_lock);
    if (rc < 0) return rc;
    *known_ms = known;
    /* retention runs from here: from the kept time, or (a store that kept
     * none: new, or from before it kept one) from the caller's clock now */
    int64_t m = mono_ms();
    pthread_mutex_lock(&s->lock);
    s->known_ms = known > 0 ? known : store_now(s);
    __atomic_store_n(&s->known_mono_ms, m, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&s->lock);
    return 0;
}

int64_t store_retention_clock(store_t *s)
{
    int64_t now = store_now(s);
    pthread_mutex_lock(&s->lock);
    int64_t known = s->known_ms, since = s->known_mono_ms;
    pthread_mutex_unlock(&s->lock);
    if (!since) return now; /* never read: the caller's clock alone (tools, tests) */
    int64_t bound = known + (mono_ms() - since);
    return bound < now ? bound : now;
}

int store_keep_clock(store_t *s)
{
    pthread_mutex_lock(&s->lock);
    uint64_t term = s->term;
    pthread_mutex_unlock(&s->lock);
    if (s->opts.elect && !term) return TENQ_ENOT_LEADER;
    pthread_mutex_lock(&s->db_lock);
    int rc = store_clock_save(s, term);
    pthread_mutex_unlock(&s->db_lock);
    return rc;
}

int store_clock_save(store_t *s, uint64_t term)
{
    char num[24];
    snprintf(num, sizeof num, "%lld", (long long)store_now(s));
    const char *params[1] = {num};
    int rc = s->be->tx_begin(s, term);
    if (rc) return rc;
    long n = s->be->tx_exec(s, SQL_CLOCK_SAVE, 1, params);
    rc = s->be->tx_end(s, n >= 0);
    return n < 0 ? (int)n : rc;
}
