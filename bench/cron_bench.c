// SPDX-License-Identifier: Apache-2.0
/* make bench-cron: what 100,000 schedules cost the leader outside the
 * engine (schedules never enter it: src/api/cron.c submits each tick with
 * engine_submit like any request, so bench_engine's cycles are those of a
 * server with no schedules).
 *
 * N schedules (default 100,000; or the count given) of mixed expressions
 * in eight zones are parsed and given their next tick (what a load does),
 * then kept in a heap by next tick, as the server's timer keeps them, and
 * ticked through simulated hours: pop the due one, compute its next tick,
 * push it back.  It prints
 *   cron schedules=N load_us_per_schedule=X tick_ns=Y ticks=Z
 * where tick_ns is the time per tick spent finding the next one and keeping
 * the heap (the submit itself is an ordinary submit).
 */
#include "base/cron.h"
#include "base/heap.h"
#include "base/tzif.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct sched {
    tq_cron c;
    const tq_zone *z;
    int64_t next;
    uint32_t hidx;
} sched;

static bool less(const sched *a, const sched *b)
{
    return a->next < b->next || (a->next == b->next && a < b);
}
HEAP_DEFINE(sh, sched, hidx, less)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 100000;
    static const char *const zones[] = {"UTC",
                                        "Europe/Berlin",
                                        "America/New_York",
                                        "Asia/Kolkata",
                                        "Australia/Sydney",
                                        "America/Santiago",
                                        "Asia/Kathmandu",
                                        "Europe/London"};
    static const char *const exprs[] = {
        "*/5 * * * *", "0 * * * *", "30 2 * * *", "0 9 * * MON-FRI",   "15 */3 * * *",
        "@every 30s",  "@every 1m", "0 0 1 * *",  "*/10 8-18 * * 1-5", "@daily"};
    tq_zone *z[8];
    char err[256];
    for (int i = 0; i < 8; i++) {
        if (!(z[i] = tq_zone_load(zones[i], NULL, err, sizeof err))) {
            fprintf(stderr, "bench_cron: %s\n", err);
            return 1;
        }
    }
    sched *v = calloc(n, sizeof(*v));
    heap h = {0};
    int64_t start = (int64_t)time(NULL) * 1000;
    double t0 = now_s();
    for (size_t i = 0; i < n; i++) {
        if (tq_cron_parse(exprs[i % 10], &v[i].c, err, sizeof err)) return 1;
        v[i].z = z[(i / 10) % 8];
        v[i].next = tq_cron_next(&v[i].c, v[i].z, start);
        v[i].hidx = HEAP_NONE;
        sh_push(&h, &v[i]);
    }
    double load = now_s() - t0;
    /* tick through simulated time until at least 2M ticks */
    size_t ticks = 0;
    t0 = now_s();
    while (ticks < 2000000) {
        sched *s = sh_top(&h);
        s->next = tq_cron_next(&s->c, s->z, s->next);
        sh_fix(&h, s);
        ticks++;
    }
    double run = now_s() - t0;
    printf("cron schedules=%zu load_us_per_schedule=%.2f tick_ns=%.0f ticks=%zu simulated_s=%lld\n",
           n, load * 1e6 / (double)n, run * 1e9 / (double)ticks, ticks,
           (long long)((((sched *)sh_top(&h))->next - start) / 1000));
    heap_free(&h);
    free(v);
    for (int i = 0; i < 8; i++) tq_zone_free(z[i]);
    return 0;
}
