// SPDX-License-Identifier: Apache-2.0
/* What a term serves with (term_load.c): a fresh engine, and from the store
 * the jobs loaded before serving, the tokens, the schedules and the request
 * keys.  The leadership's loader thread makes one (lead_hooks.load), the
 * loop installs it (install_term, lead_loop.c). */
#ifndef TENQ_API_TERM_LOAD_H
#define TENQ_API_TERM_LOAD_H

#include "auth_load.h"

#include "engine/engine.h"
#include "store/store.h"

#include <stdint.h>

typedef struct server server;

typedef struct term_load {
    uint64_t term;
    engine_t *e; /* NULL once installed */
    store_load_stats stats;
    token_list tokens; /* every token, revoked ones too */
    void *rkeys;       /* the request keys (rkeys_collect; NULL once installed) */
    void *crons;       /* the schedules (cron_collect; NULL once installed) */
} term_load;

/* A fresh engine whose fencing tokens start above every earlier term's (any
 * thread; term 0: a standby's, empty). */
engine_t *srv_engine_new(server *s, uint64_t term);
/* The loader thread's work (lead_hooks.load): a term_load, *rc 0 or the
 * store's error.  The engine's clock first moves up to the time the store
 * kept (srv_clock_at_least). */
void *term_load_run(server *s, uint64_t term, int *rc);
void term_load_free(void *loaded);

#endif
