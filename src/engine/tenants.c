// SPDX-License-Identifier: Apache-2.0
/* Tenants and queues: their settings (set and read), pauses, the counts
 * by state per tenant, queue and pair, and the totals. */
#include "internal.h"

int engine_tenant_set(engine_t *e, int64_t now, const char *name, const engine_tenant_settings *s,
                      engine_err *err)
{
    (void)now;
    if (engine_check_name(ENGINE_NAME, "name", name, err)) return TENQ_EINVALID;
    int rc = engine_tenant_settings_check(s, err);
    if (rc) return rc;
    tenant *t = engine_tenant_get_or_create(e, name);
    bool had_room = tenant_has_room(t);
    bool rate = t->s.rate != s->rate || t->s.rate_period_ms != s->rate_period_ms ||
                t->s.rate_burst != s->rate_burst;
    bool had_limit = t->s.rate != ENGINE_UNLIMITED;
    t->s = *s;
    engine_note_tenant(e, t);
    if (rate) engine_rate_changed(e, &t->rb, now, had_limit);
    if (had_room != tenant_has_room(t)) engine_tenant_room_changed(e, t);
    return 0;
}

static void counts_fill(engine_counts *o, const counters *c)
{
    memset(o, 0, sizeof(*o));
    o->ready = c->n[ENGINE_READY];
    o->scheduled = c->n[ENGINE_SCHEDULED];
    o->blocked = c->n[ENGINE_BLOCKED];
    o->waiting = c->n[ENGINE_WAITING];
    o->leased = c->n[ENGINE_LEASED];
    o->running = c->n[ENGINE_RUNNING];
    o->dead = c->n[ENGINE_DEAD];
    o->submitted_total = c->submitted;
    o->succeeded_total = c->succeeded;
    o->failed_total = c->failed;
    o->dead_total = c->dead;
    o->cancelled_total = c->cancelled;
    o->expired_total = c->expired;
    for (int s = 0; s < ENGINE_DEAD; s++) o->queued += c->n[s];
    o->queued_bytes = c->queued_bytes;
}

/* Lag: how long each tenant's next eligible job has been ready; the
 * oldest of those counts. */
static void node_eligible_add(engine_t *e, node *n, engine_counts *o)
{
    if (n->sidx == HEAP_NONE || n->sh->q->rb.until) return;
    o->eligible += n->n_ready;
    /* (a group is in its node's heap when its keys let its jobs go) */
    for (uint32_t i = 0; i < n->groups.n; i++) o->eligible += n->groups.a[i].g->n_ready;
    const job *j = engine_job_find(e, n->kid);
    if (o->oldest_eligible == 0 || j->ready_at < o->oldest_eligible)
        o->oldest_eligible = j->ready_at;
}

static void tenant_counts(engine_t *e, tenant *t, engine_counts *o)
{
    counts_fill(o, &t->c);
    o->rate_until = t->rb.until;
    DLIST_FOREACH(it, &t->ready_nodes)
    {
        node_eligible_add(e, DLIST_ITEM(it, node, in_tenant), o);
    }
}

static void pair_counts(engine_t *e, pair *p, engine_counts *o)
{
    counts_fill(o, &p->c);
    o->rate_until = p->rb.until;
    DLIST_FOREACH(it, &p->ready_nodes)
    {
        node_eligible_add(e, DLIST_ITEM(it, node, in_pair), o);
    }
}

static void queue_counts(engine_t *e, queue *q, engine_counts *o)
{
    counts_fill(o, &q->c);
    o->rate_until = q->rb.until;
    DLIST_FOREACH(it, &q->all_shards)
    {
        shard *sh = DLIST_ITEM(it, shard, in_queue);
        for (uint32_t i = 0; i < sh->nodes.n; i++) node_eligible_add(e, sh->nodes.a[i], o);
    }
}

int engine_tenant_get(engine_t *e, int64_t now, const char *name, engine_tenant_settings *s,
                      engine_counts *c)
{
    (void)now;
    tenant *t = engine_tenant_find(e, name);
    if (!t) return TENQ_ENOT_FOUND;
    if (s) *s = t->s;
    if (c) tenant_counts(e, t, c);
    return 0;
}

int engine_queue_set(engine_t *e, int64_t now, const char *name, const engine_queue_settings *s,
                     engine_err *err)
{
    (void)now;
    if (engine_check_name(ENGINE_NAME, "name", name, err)) return TENQ_EINVALID;
    int rc = engine_queue_settings_check(s, err);
    if (rc) return rc;
    queue *q = engine_queue_get_or_create(e, name);
    engine_queue_settings old = q->s;
    q->s = *s;
    engine_note_queue(e, q);
    bool rates = old.tenant_rate != s->tenant_rate || old.rate_period_ms != s->rate_period_ms ||
                 old.rate_burst != s->rate_burst;
    /* pairs met from now on under a per-tenant rate set now (not loaded)
     * had no start under it before: their buckets begin full */
    if (old.tenant_rate == ENGINE_UNLIMITED) q->pair_rates_fresh = !e->loading;
    if (old.tenant_cap != s->tenant_cap || old.paused != s->paused || rates) {
        DLIST_FOREACH(it, &q->pairs)
        {
            pair *p = DLIST_ITEM(it, pair, in_queue);
            if (rates) engine_rate_changed(e, &p->rb, now, old.tenant_rate != ENGINE_UNLIMITED);
            if (pair_room_under(p, &old) != pair_has_room(p)) engine_pair_room_changed(e, p);
        }
    }
    if (old.rate != s->rate || old.rate_period_ms != s->rate_period_ms ||
        old.rate_burst != s->rate_burst)
        engine_rate_changed(e, &q->rb, now, old.rate != ENGINE_UNLIMITED);
    if (old.order != s->order) engine_queue_reorder(e, q);
    if (old.aging_ms != s->aging_ms || old.aging_cap != s->aging_cap) engine_aging_rekey(e, q);
    return 0;
}

int engine_queue_get(engine_t *e, int64_t now, const char *name, engine_queue_settings *s,
                     engine_counts *c)
{
    (void)now;
    queue *q = engine_queue_find(e, name);
    if (!q) return TENQ_ENOT_FOUND;
    if (s) *s = q->s;
    if (c) queue_counts(e, q, c);
    return 0;
}

void engine_foreach_tenant(engine_t *e, int64_t now, engine_tenant_fn fn, void *ctx)
{
    (void)now;
    for (size_t i = 0; i < htab_cap(&e->tenants); i++) {
        tenant *t = e->tenants.slots[i].item;
        if (!t) continue;
        engine_counts c;
        tenant_counts(e, t, &c);
        fn(ctx, t->name, &t->s, &c);
    }
}

void engine_foreach_queue(engine_t *e, int64_t now, engine_queue_fn fn, void *ctx)
{
    (void)now;
    for (size_t i = 0; i < htab_cap(&e->queues); i++) {
        queue *q = e->queues.slots[i].item;
        if (!q) continue;
        engine_counts c;
        queue_counts(e, q, &c);
        fn(ctx, q->name, &q->s, &c);
    }
}

int engine_pause_tenant(engine_t *e, int64_t now, const char *queue_name, const char *tenant_name,
                        bool paused, engine_err *err)
{
    (void)now;
    if (engine_check_name(ENGINE_NAME, "queue", queue_name, err) ||
        engine_check_name(ENGINE_NAME, "tenant", tenant_name, err))
        return TENQ_EINVALID;
    if (e->cfg.strict_tenants && !engine_tenant_find(e, tenant_name)) {
        engine_errf(err, TENQ_ENOT_FOUND, "tenant", "no tenant %s", tenant_name);
        return TENQ_ENOT_FOUND;
    }
    pair *p = engine_pair_get(e, engine_queue_get_or_create(e, queue_name),
                              engine_tenant_get_or_create(e, tenant_name));
    if (p->paused == paused) return 0;
    bool had = pair_has_room(p);
    p->paused = paused;
    if (had != pair_has_room(p)) engine_pair_room_changed(e, p);
    engine_note_pause(e, p);
    return 0;
}

bool engine_tenant_paused(engine_t *e, const char *queue_name, const char *tenant_name)
{
    queue *q = engine_queue_find(e, queue_name);
    tenant *t = engine_tenant_find(e, tenant_name);
    if (!q || !t) return false;
    pair *p = engine_pair_find(e, q, t);
    return p && p->paused;
}

void engine_foreach_leased(engine_t *e, engine_leased_fn fn, void *ctx)
{
    for (uint32_t i = 0; i < e->leases.n; i++) {
        const job *j = e->leases.a[i].j;
        fn(ctx, j->extra->worker, j->id);
    }
}

void engine_foreach_pause(engine_t *e, const char *queue_name, engine_pause_fn fn, void *ctx)
{
    queue *q = engine_queue_find(e, queue_name);
    if (!q) return;
    DLIST_FOREACH(it, &q->pairs)
    {
        pair *p = DLIST_ITEM(it, pair, in_queue);
        if (p->paused) fn(ctx, q->name, p->t->name);
    }
}

bool engine_pair_exists(engine_t *e, const char *queue_name, const char *tenant_name)
{
    queue *q = engine_queue_find(e, queue_name);
    tenant *t = engine_tenant_find(e, tenant_name);
    if (!q || !t) return false;
    return engine_pair_find(e, q, t) != NULL;
}

void engine_foreach_pair(engine_t *e, int64_t now, engine_pair_fn fn, void *ctx)
{
    (void)now;
    for (size_t i = 0; i < htab_cap(&e->pairs); i++) {
        pair *p = e->pairs.slots[i].item;
        if (!p) continue;
        engine_counts c;
        pair_counts(e, p, &c);
        fn(ctx, p->q->name, p->t->name, &c);
    }
}

void engine_totals(engine_t *e, int64_t now, engine_counts *o)
{
    (void)now;
    counts_fill(o, &e->c);
    for (size_t i = 0; i < htab_cap(&e->queues); i++) {
        queue *q = e->queues.slots[i].item;
        if (!q) continue;
        engine_counts c;
        queue_counts(e, q, &c);
        o->eligible += c.eligible;
        if (c.oldest_eligible &&
            (o->oldest_eligible == 0 || c.oldest_eligible < o->oldest_eligible))
            o->oldest_eligible = c.oldest_eligible;
    }
}
