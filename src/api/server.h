// SPDX-License-Identifier: Apache-2.0
/* The server: what `tenq serve` holds while it runs (server.c makes it).
 *
 * Each subsystem keeps its state in a struct of its own, declared in its
 * header with its functions, and held here as a member; a subsystem's
 * fields are its own file's, read elsewhere only where its header says.
 * The files of src/api call each other bottom-up only (no loop:
 * scripts/check-loops.py build); docs/ARCHITECTURE.md ("The API layer")
 * draws the order.  The few calls that must go up (the commit
 * pipeline waking long polls, the load re-running a parked request) go
 * through functions the layer above registers at start (server.c). */
#ifndef TENQ_API_SERVER_H
#define TENQ_API_SERVER_H

#include "admit.h"
#include "api.h"
#include "args_read.h"
#include "audit.h"
#include "auth.h"
#include "clock.h"
#include "commit.h"
#include "history.h"
#include "http.h"
#include "ingest.h"
#include "load_rest.h"
#include "rates.h"
#include "router.h"
#include "serving.h"
#include "tick.h"
#include "waiters.h"
#include "workers.h"

#include "engine/engine.h"
#include "store/store.h"

#include <stdbool.h>
#include <stdint.h>

struct event;
struct event_base;
struct tls_server;
struct cron_set;
struct rkey_set;

typedef struct server {
    api_config cfg;
    struct event_base *base;
    http_server *http;
    struct tls_server *tls; /* NULL: plain HTTP */
    int port;
    engine_t *e; /* the jobs: the store's while this server leads (a standby's is empty) */
    store_t *st;
    bool stopping;     /* a signal came: no new connections, finishing what is in flight */
    bool open_network; /* listening beyond loopback: tokens always required */

    srv_clock clock;           /* the engine's clock (clock.h) */
    auth auth;                 /* the tokens (auth.h; loaded by auth_load.c) */
    lead_state lead;           /* leading, under which term (serving.h; the thread: lead.h) */
    commit_state commit;       /* the batch being built and those handed over (commit.h) */
    audit_state audit;         /* the audited request being handled (audit.h) */
    waiters_state waiters;     /* long polls and job waits (waiters.h) */
    tick_state tick;           /* the engine's timers (tick.h) */
    router_state router;       /* requests counted (router.h) */
    rates_state rates;         /* rates over the last minute (rates.h) */
    history_state history;     /* the last hour of totals (history.h) */
    workers_state workers;     /* the workers seen (workers.h) */
    ingest_state ingest;       /* applications' transactions taken in (ingest.h) */
    struct rkey_set *rkeys;    /* request keys (request_keys.h) */
    struct cron_set *cron;     /* periodic jobs (cron.h) */
    admit_state admit;         /* quotas and the memory budget (admit.h) */
    args_read_state args;      /* args out of memory: reads (args_read.h) */
    load_rest_state load_rest; /* the plain jobs brought in while serving (load_rest.h) */

    struct event *sig_term, *sig_int, *sig_hup;
} server;

#endif
