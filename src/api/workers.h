// SPDX-License-Identifier: Apache-2.0
/* Workers as the server sees them (workers.c; GET /v1/workers): each name a
 * lease came from, when it last asked and for which queues, how many jobs
 * it was handed. */
#ifndef TENQ_API_WORKERS_H
#define TENQ_API_WORKERS_H

#include "base/htab.h"

#include <stddef.h>

typedef struct server server;

typedef struct workers_state {
    htab by_name; /* worker_seen (workers.c) */
} workers_state;

/* A lease request came from this worker, for these queues; it was handed n jobs. */
void workers_seen(server *s, const char *name, char *const *queues, size_t nq);
void workers_leased(server *s, const char *name, size_t n);
void workers_free(server *s);

#endif
