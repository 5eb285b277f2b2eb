// SPDX-License-Identifier: Apache-2.0
/* Throughput and depth over the last hour (history.c; GET
 * /v1/stats/history): one sample each 10 s of the totals' counters and
 * counts, so that a page opened now draws an hour. */
#ifndef TENQ_API_HISTORY_H
#define TENQ_API_HISTORY_H

#include "engine/engine.h"

#include <stdint.h>

typedef struct server server;

#define HISTORY_EVERY_S 10
#define HISTORY_N       361
typedef struct history_sample {
    int64_t t;
    uint64_t succeeded, failed; /* totals since start (rates come from two samples) */
    /* one count per LIVE state (tenq/states.h) */
#define HISTORY_COUNT_(name, word, abi, kind, finished, help)                                      \
    TENQ_STATE_IF_LIVE(kind, uint64_t word;)
    TENQ_STATE_TABLE(HISTORY_COUNT_)
#undef HISTORY_COUNT_
} history_sample;

typedef struct history_state {
    history_sample v[HISTORY_N]; /* a ring */
    int head, n;
} history_state;

/* A sample of the totals (rates.c calls it every HISTORY_EVERY_S). */
void history_push(server *s, const engine_counts *totals);

#endif
