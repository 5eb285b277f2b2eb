// SPDX-License-Identifier: Apache-2.0
/* Rates and counts as the API shows them (rates.c): completed and failed
 * jobs per second over the last minute, sampled each second into a ring
 * per queue, per tenant and in all; the counts of a queue or tenant as
 * JSON. */
#ifndef TENQ_API_RATES_H
#define TENQ_API_RATES_H

#include "jbuf.h"

#include "base/htab.h"
#include "engine/engine.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct server server;
struct event;

/* A ring of per-second samples of a counter pair, for rates. */
typedef struct rate_ring {
    uint64_t hash;
    char *name;
    uint64_t ok[61], bad[61];
    int head, filled;
} rate_ring;

typedef struct rates_state {
    struct event *sample_ev;  /* each second */
    htab by_queue, by_tenant; /* rate_ring ("" in by_queue: the totals) */
    uint64_t samples;         /* taken since start */
} rates_state;

/* The sampling timer (which also takes the history's samples, and writes
 * the quotas' usage for applications' transactions): 0, or -1 when it
 * cannot start. */
int srv_rates_start(server *s);
void rates_sample(server *s);
void rates_get(server *s, bool queue, const char *name, double *ok_per_s, double *bad_per_s);
void rates_free(server *s);

/* A queue's or tenant's counts as JSON members, and its rates. */
void api_json_counts(jbuf *b, const engine_counts *c, int64_t now);
void api_json_rates(jbuf *b, server *s, bool queue, const char *name);

#endif
