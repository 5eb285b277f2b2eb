// SPDX-License-Identifier: Apache-2.0
/* Rate limits: at most `rate` starts per period, per tenant (over every
 * queue), per queue, and per tenant in a queue, each with a burst.
 *
 * Each limit is a GCRA bucket (the "virtual scheduling" form of a token
 * bucket): one time, tat, in microseconds.  With T = period / rate (rounded
 * up, so never faster than the rate) and tau = (burst - 1) * T, a start at
 * `now` is allowed when tat - tau <= now, and moves tat to max(tat, now) + T.
 * In any window of length W that gives at most burst + W / T starts.
 *
 * A bucket that allows no more starts is closed until tat - tau: its tenant
 * or pair then has no room (tenant_has_room, pair_has_room), so its nodes
 * leave the scheduler's heaps as a full tenant's do, and a closed queue is
 * skipped by lease.  Closed buckets wait in one heap by the time they open
 * (e->rate_timers, which engine_tick serves and engine_next_timer reports):
 * a rate-limited tenant with a million ready jobs costs a lease nothing.
 *
 * Restarts: a bucket never used since the engine began counts as emptied
 * at cfg.start_ms (its tat is start + tau + T), so the starts before a
 * restart and after it together stay within the bound; the price is that
 * after a restart a limit's first start waits up to one T.  Such a bucket
 * is found closed at the lease that first asks it (engine_rate_allows).
 * Limits set in the engine's life (not loaded) begin full instead: nothing
 * started under them before.  A limit that changes counts the starts
 * already made under the new limit, but never as more than a used-up
 * bucket of it.
 *
 * Rate keys (keys.c) keep their buckets in their keys and use this heap
 * for their timers (engine_rate_timer_set): RB_KEY, a key no job names
 * kept until its bucket is full again; RB_GROUP, a group closed until its
 * keys allow its cost. */
#include "internal.h"

#define US_PER_MS 1000

typedef struct rate_limit {
    int64_t t;   /* emission interval, us; 0: no limit */
    int64_t tau; /* tolerance, us */
} rate_limit;

static inline bool rate_before(const rate_bucket *a, const rate_bucket *b)
{
    return a->until < b->until;
}
HEAP_DEFINE(rq, rate_bucket, hidx, rate_before)

static rate_limit make_limit(uint32_t rate, int64_t period_ms, uint32_t burst)
{
    rate_limit l = {0, 0};
    if (rate == ENGINE_UNLIMITED || rate == 0 || period_ms <= 0) return l;
    int64_t period_us = period_ms * US_PER_MS;
    l.t = (period_us + rate - 1) / rate;
    if (l.t < 1) l.t = 1;
    int64_t b = burst == ENGINE_UNLIMITED ? (int64_t)rate : (int64_t)burst;
    l.tau = b - 1 > INT64_MAX / 4 / l.t ? INT64_MAX / 4 : (b - 1) * l.t;
    return l;
}

static tenant *bucket_tenant(rate_bucket *b)
{
    return (tenant *)((char *)b - offsetof(tenant, rb));
}
static queue *bucket_queue(rate_bucket *b)
{
    return (queue *)((char *)b - offsetof(queue, rb));
}
static pair *bucket_pair(rate_bucket *b)
{
    return (pair *)((char *)b - offsetof(pair, rb));
}

/* The limit as the owner's settings say it (the bucket keeps a copy: the
 * lease path does no division). */
static rate_limit settings_limit(rate_bucket *b)
{
    switch ((rb_kind)b->kind) {
    case RB_TENANT: {
        const engine_tenant_settings *s = &bucket_tenant(b)->s;
        return make_limit(s->rate, s->rate_period_ms, s->rate_burst);
    }
    case RB_QUEUE: {
        const engine_queue_settings *s = &bucket_queue(b)->s;
        return make_limit(s->rate, s->rate_period_ms, s->rate_burst);
    }
    case RB_PAIR: {
        const engine_queue_settings *s = &bucket_pair(b)->q->s;
        return make_limit(s->tenant_rate, s->rate_period_ms, s->rate_burst);
    }
    default: return (rate_limit){b->t, b->tau}; /* keys.c keeps its own */
    }
}

void engine_rate_refresh(rate_bucket *b)
{
    rate_limit l = settings_limit(b);
    b->t = l.t;
    b->tau = l.tau;
}

static inline rate_limit limit_of(const rate_bucket *b)
{
    return (rate_limit){b->t, b->tau};
}

static int64_t tat_of(const engine_t *e, const rate_bucket *b, rate_limit l)
{
    return b->tat ? b->tat : e->cfg.start_ms * US_PER_MS + l.tau + l.t;
}

void engine_rate_init(rate_bucket *b, rb_kind kind)
{
    memset(b, 0, sizeof(*b));
    b->kind = (uint8_t)kind;
    b->hidx = HEAP_NONE;
}

/* The owner's eligibility follows the bucket's state. */
static void owner_changed(engine_t *e, rate_bucket *b)
{
    switch ((rb_kind)b->kind) {
    case RB_TENANT: engine_tenant_room_changed(e, bucket_tenant(b)); break;
    case RB_PAIR: engine_pair_room_changed(e, bucket_pair(b)); break;
    case RB_QUEUE:
        if (!b->until) engine_note_wake(e, bucket_queue(b));
        break;
    case RB_KEY:
        if (!b->until) engine_key_rate_opened(e, (tkey *)((char *)b - offsetof(tkey, rb)));
        break;
    case RB_GROUP:
        if (!b->until) {
            gkeys *gs = (gkeys *)((char *)b - offsetof(gkeys, rb));
            engine_group_rate_opened(e, (node *)gs - 1);
        }
        break;
    }
}

static void close_until(engine_t *e, rate_bucket *b, int64_t until_ms)
{
    bool was_open = !b->until;
    b->until = until_ms;
    if (b->hidx == HEAP_NONE) {
        if (rq_push(&e->rate_timers, b) != 0) engine_oom();
    } else {
        rq_fix(&e->rate_timers, b);
    }
    if (was_open) owner_changed(e, b);
}

static void open_bucket(engine_t *e, rate_bucket *b)
{
    if (!b->until) return;
    b->until = 0;
    if (b->hidx != HEAP_NONE) rq_remove(&e->rate_timers, b);
    owner_changed(e, b);
}

/* The ms at which a bucket with this tat allows a start again. */
static int64_t opens_at(int64_t tat, rate_limit l)
{
    int64_t us = tat - l.tau;
    return us <= 0 ? 0 : (us + US_PER_MS - 1) / US_PER_MS;
}

/* Whether b allows a start now; closes it when not. */
static bool allows(engine_t *e, rate_bucket *b, int64_t now)
{
    rate_limit l = limit_of(b);
    if (!l.t) return true;
    int64_t tat = tat_of(e, b, l);
    if (tat - l.tau <= now * US_PER_MS) return true;
    close_until(e, b, opens_at(tat, l));
    return false;
}

static void take(engine_t *e, rate_bucket *b, int64_t now)
{
    rate_limit l = limit_of(b);
    if (!l.t) return;
    int64_t now_us = now * US_PER_MS, tat = tat_of(e, b, l);
    b->tat = (tat > now_us ? tat : now_us) + l.t;
    if (b->tat - l.tau > now_us) close_until(e, b, opens_at(b->tat, l));
}

bool engine_rate_allows(engine_t *e, int64_t now, const job *j)
{
    pair *p = job_pair(j);
    /* every bucket is asked (each closes itself when it must) */
    bool ok = allows(e, &p->q->rb, now);
    ok &= allows(e, &p->t->rb, now);
    ok &= allows(e, &p->rb, now);
    return ok;
}

void engine_rate_take(engine_t *e, int64_t now, const job *j)
{
    pair *p = job_pair(j);
    take(e, &p->q->rb, now);
    take(e, &p->t->rb, now);
    take(e, &p->rb, now);
    if (j->node->keys && j->node->keys->n > j->node->keys->nc) engine_keys_rate_take(e, now, j);
}

void engine_rate_changed(engine_t *e, rate_bucket *b, int64_t now, bool had_limit)
{
    engine_rate_refresh(b);
    rate_limit l = limit_of(b);
    if (!l.t) {
        b->tat = 0;
        open_bucket(e, b);
        return;
    }
    if (e->loading)
        b->tat = 0; /* used up at the start (tat_of) */
    else if (!had_limit)
        b->tat = 1; /* full: long ago */
    /* the starts made count under the new limit, but never for more than
     * a used-up bucket of it (a faster rate opens sooner) */
    int64_t most = now * US_PER_MS + l.tau + l.t;
    if (b->tat > most) b->tat = most;
    int64_t tat = tat_of(e, b, l);
    if (tat - l.tau <= now * US_PER_MS)
        open_bucket(e, b);
    else
        close_until(e, b, opens_at(tat, l));
}

void engine_rate_timer_set(engine_t *e, rate_bucket *b, int64_t until_ms)
{
    b->until = until_ms < 1 ? 1 : until_ms; /* 0 means open */
    if (b->hidx == HEAP_NONE) {
        if (rq_push(&e->rate_timers, b) != 0) engine_oom();
    } else {
        rq_fix(&e->rate_timers, b);
    }
}

void engine_rate_timer_clear(engine_t *e, rate_bucket *b)
{
    b->until = 0;
    if (b->hidx != HEAP_NONE) rq_remove(&e->rate_timers, b);
}

size_t engine_rate_tick(engine_t *e, int64_t now)
{
    size_t n = 0;
    rate_bucket *b;
    while ((b = rq_top(&e->rate_timers)) && b->until <= now) {
        open_bucket(e, b);
        n++;
    }
    return n;
}

int64_t engine_rate_next(const engine_t *e)
{
    return e->rate_timers.n ? ((const rate_bucket *)e->rate_timers.a[0])->until : INT64_MAX;
}

bool engine_rate_check(const engine_t *e, const rate_bucket *b)
{
    if (!b->until) return b->hidx == HEAP_NONE;
    if (b->hidx >= e->rate_timers.n || e->rate_timers.a[b->hidx] != b) return false;
    return b->hidx == 0 || !rate_before(b, e->rate_timers.a[(b->hidx - 1) / 2]);
}
