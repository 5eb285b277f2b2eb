// SPDX-License-Identifier: Apache-2.0
/* Args out of memory, the server's side (args_read.c). */
#ifndef TENQ_API_ARGS_READ_H
#define TENQ_API_ARGS_READ_H

#include "http.h"
#include "store/store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct server server;

typedef struct args_read_state {
    int inflight;                /* reads ahead under way */
    uint64_t reads_ahead;        /* reads ahead issued */
    uint64_t rows_ahead;         /* args they brought back */
    uint64_t waits, waited_jobs; /* requests that waited for a read, and their jobs */
    uint64_t leased_spilled;     /* leased jobs whose args were out of memory */
} args_read_state;

/* Reads ahead what the engine wants (engine_args_wanted), when it wants
 * anything and fewer than two reads are under way.  Called at the end of
 * each turn that changed something, and when a read comes back. */
void srv_args_read_ahead(server *s);

/* What a request does once its jobs' args are read: rows holds them (also
 * in the engine's cache when it had room); req NULL: the request is gone
 * (or was answered with an error), free ctx only. */
typedef void (*args_then)(server *s, http_req *req, void *ctx, const store_rows *rows);
/* Reads the args of ids (after everything before is committed), then runs
 * then.  The caller does not answer req itself. */
void srv_with_args(server *s, http_req *req, const uint64_t *ids, size_t n, args_then then,
                   void *ctx);
/* A job shown without its args (args_missing) takes them from rows; false
 * when rows lack them. */
bool srv_args_fill(engine_job_info *in, const store_rows *rows);

#endif
