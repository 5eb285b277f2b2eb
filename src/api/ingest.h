// SPDX-License-Identifier: Apache-2.0
/* Applications' transactions (ingest.c; PostgreSQL): what they committed to
 * the inbox is read and taken in now, if this server leads and serves, and
 * then every --inbox-poll in case a notification was lost. */
#ifndef TENQ_API_INGEST_H
#define TENQ_API_INGEST_H

#include <stdbool.h>
#include <stdint.h>

typedef struct server server;
struct event;

typedef struct ingest_state {
    struct event *ev, *retry_ev; /* NULL: no inbox here */
    bool busy, again;
    int phase;      /* idle, hot or cooling (ingest.c) */
    int streak;     /* reads in a row that found rows */
    int backoff_ms; /* until the next read while cooling */
    uint64_t term;  /* the term of the last read */
} ingest_state;

int srv_ingest_start(server *s);
void srv_ingest_kick(server *s);
void srv_ingest_stop(server *s); /* its timers off */
void srv_ingest_free(server *s);

#endif
