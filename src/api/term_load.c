// SPDX-License-Identifier: Apache-2.0
/* What a term serves with (term_load.h), loaded on the leadership's loader
 * thread: it reads only what never changes while the server runs (cfg, st,
 * the clock's origin). */
#include "term_load.h"

#include "clock.h"
#include "cron.h"
#include "request_keys.h"
#include "server.h"

#include "base/xalloc.h"

#include <stdlib.h>
#include <time.h>
#include <unistd.h>

engine_t *srv_engine_new(server *s, uint64_t term)
{
    const api_config *cfg = &s->cfg;
    engine_config ec;
    engine_config_defaults(&ec);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ec.seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32) ^ term;
    ec.tenant_defaults.slots =
        cfg->default_slots < 0 ? ENGINE_UNLIMITED : (uint32_t)cfg->default_slots;
    ec.tenant_defaults.weight = (uint32_t)(cfg->default_weight ? cfg->default_weight : 1);
    ec.tenant_defaults.max_queued =
        cfg->default_max_queued < 0 ? ENGINE_UNLIMITED : (uint32_t)cfg->default_max_queued;
    ec.tenant_defaults.max_queued_bytes = cfg->default_max_queued_bytes;
    ec.args_budget = s->admit.args_budget;
    ec.event_window_ms = cfg->event_window_ms;
    ec.strict_tenants = cfg->strict_tenants;
    ec.token_floor = term << 32; /* above every token of every earlier term */
    /* applications' transactions number their jobs with odd ids */
    ec.id_step = store_has_inbox(s->st) ? 2 : 1;
    ec.start_ms = srv_now(s); /* rate limits count as used up at a (re)start */
    return engine_create(&ec);
}

void *term_load_run(server *s, uint64_t term, int *rc)
{
    term_load *t = xcalloc(1, sizeof(*t));
    t->term = term;
    t->e = srv_engine_new(s, term);
    t->rkeys = rkeys_load_new();
    t->crons = cron_load_new();
    /* first the time the store kept: the clock never runs behind it, so that
     * deadlines stored by an earlier run keep their meaning (SEMANTICS.md) */
    int64_t known = 0;
    *rc = store_clock_read(s->st, &known);
    if (*rc == 0) srv_clock_at_least(s, known);
    if (*rc == 0) *rc = store_load_first(s->st, t->e, srv_now(s), &t->stats); /* then load_rest.c */
    if (*rc == 0) *rc = store_load_tokens(s->st, token_list_add, &t->tokens);
    if (*rc == 0) *rc = store_load_schedules(s->st, cron_collect, t->crons);
    if (*rc == 0)
        *rc = store_load_requests(s->st, srv_now(s) - s->cfg.request_key_ttl_ms, rkeys_collect,
                                  t->rkeys);
    return t;
}

void term_load_free(void *loaded)
{
    term_load *t = loaded;
    if (!t) return;
    engine_destroy(t->e);
    token_list_free(&t->tokens);
    rkeys_load_free(t->rkeys);
    cron_load_free(t->crons);
    free(t);
}
