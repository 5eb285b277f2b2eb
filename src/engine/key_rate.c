// SPDX-License-Identifier: Apache-2.0
/* Rate keys (docs/SEMANTICS.md, "Rate keys"): a key's rate is a GCRA bucket
 * counted in units, as rate.c's are in starts.  With T = period / rate (us
 * a unit, rounded up) and B the burst in units, a start of cost c at `now`
 * is allowed when max(tat, now) + c*T - B*T <= now, and moves tat to
 * max(tat, now) + c*T: in any window of W ms at most B + W / T units
 * start.  A cost above B counts as B (a setting lowered below a job's
 * cost: the job then takes the whole burst).
 *
 * Held jobs leave the heaps, as a full key's do: each group that names
 * rate keys is closed (its RB_GROUP timer in rate.c's heap, out of its
 * node's heap of groups) while one of its keys cannot take the group's
 * cost, until the time it can.  Every start that takes from a key, and
 * every change of a key's rate, works out again when each group of the
 * key may go: O(groups of the key) a start, never a scan of jobs, and a
 * group in the heaps can always go.
 *
 * Across restarts a key's bucket counts as used up at the engine's start
 * (cfg.start_ms) when it gets its rate, whether it is loaded, made later or
 * given a rate later: its starts before the restart and after stay within
 * the bound together (long after the start, it is simply full).  For the same reason a
 * key no job names is kept (its RB_KEY timer) until its bucket is full
 * again, so that a job naming it next finds its bucket as it was. */
#include "internal.h"

#define US 1000

/* The rate in force for k: its setting's (own or prefix), else what its
 * jobs last gave; rate 0: none. */
static void rate_in_force(engine_t *e, tkey *k, uint32_t *rate, int64_t *period, uint32_t *burst)
{
    const key_setting *s = engine_key_setting_for(e, k->t, k->key, k->klen, KEY_RATE);
    k->rate_set = s;
    if (s) {
        *rate = s->s.rate;
        *period = s->s.rate_period_ms;
        *burst = s->s.rate_burst == ENGINE_UNLIMITED ? s->s.rate : s->s.rate_burst;
        return;
    }
    *rate = k->job_rate;
    *period = k->job_period ? k->job_period : 1000;
    *burst = k->job_burst ? k->job_burst : k->job_rate;
}

bool engine_key_rate_resolve(engine_t *e, int64_t now, tkey *k)
{
    uint32_t rate, burst;
    int64_t period;
    rate_in_force(e, k, &rate, &period, &burst);
    int64_t t = 0, tau = 0;
    if (rate) {
        int64_t period_us = period * US;
        t = (period_us + rate - 1) / rate;
        if (t < 1) t = 1;
        if (burst > TQ_RATE_BURST_MAX) burst = TQ_RATE_BURST_MAX;
        tau = ((int64_t)burst - 1) * t;
    }
    if (t == k->rb.t && tau == k->rb.tau) return false;
    bool had = k->rb.t != 0;
    k->rb.t = t;
    k->rb.tau = tau;
    k->burst = rate ? burst : 0;
    if (!t) {
        k->rb.tat = 0;
        return true;
    }
    /* a rate from none (a new key, a loaded one, a first setting) counts
     * as used up at the engine's start: a key may have started jobs
     * before a restart; long after the start it is full */
    if (!had) k->rb.tat = e->cfg.start_ms * US + tau + t;
    /* the starts made count under the new limit, but never for more than
     * a used-up bucket of it */
    int64_t most = now * US + tau + t;
    if (k->rb.tat > most) k->rb.tat = most;
    return true;
}

/* A start of cost c (clamped to the burst) may come at this us. */
static int64_t key_opens_us(const tkey *k, uint32_t c, int64_t now_us)
{
    if (c > k->burst) c = k->burst;
    int64_t tat = k->rb.tat > now_us ? k->rb.tat : now_us;
    return tat - (int64_t)(k->burst - c) * k->rb.t;
}

static uint32_t cost_of(const gkey *v)
{
    return v->given.cost ? v->given.cost : 1;
}

/* When g's rate keys allow its costs (ms; 0: now), and which key says so. */
static int64_t group_opens(const node *g, int64_t now, const tkey **why)
{
    const gkeys *gs = g->keys;
    int64_t now_us = now * US, until = 0;
    for (uint32_t i = gs->nc; i < gs->n; i++) {
        const tkey *k = gs->v[i].k;
        if (!k->rb.t) continue;
        int64_t us = key_opens_us(k, cost_of(&gs->v[i]), now_us);
        if (us <= now_us) continue;
        int64_t ms = (us + US - 1) / US;
        if (ms > until) {
            until = ms;
            if (why) *why = k;
        }
    }
    return until;
}

void engine_group_rate_eval(engine_t *e, int64_t now, node *g)
{
    gkeys *gs = g->keys;
    if (gs->n == gs->nc) return;
    int64_t until = group_opens(g, now, NULL);
    bool was = gs->rb.until != 0;
    if (until)
        engine_rate_timer_set(e, &gs->rb, until);
    else if (was)
        engine_rate_timer_clear(e, &gs->rb);
    if (was != (until != 0)) engine_group_update(e, g);
}

void engine_group_rate_opened(engine_t *e, node *g)
{
    engine_group_update(e, g);
}

/* Every group that names k as a rate key, its time worked out again. */
static void key_groups_eval(engine_t *e, int64_t now, tkey *k)
{
    DLIST_FOREACH(it, &k->groups)
    {
        gkey *v = DLIST_ITEM(it, gkey, link);
        if (v->rate) engine_group_rate_eval(e, now, v->g);
    }
}

void engine_key_rate_changed(engine_t *e, int64_t now, tkey *k)
{
    key_groups_eval(e, now, k);
}

void engine_keys_rate_take(engine_t *e, int64_t now, const job *j)
{
    const gkeys *gs = j->node->keys;
    int64_t now_us = now * US;
    for (uint32_t i = gs->nc; i < gs->n; i++) {
        tkey *k = gs->v[i].k;
        if (!k->rb.t) continue;
        uint32_t c = cost_of(&gs->v[i]);
        if (c > k->burst) c = k->burst;
        k->rb.tat = (k->rb.tat > now_us ? k->rb.tat : now_us) + (int64_t)c * k->rb.t;
    }
    for (uint32_t i = gs->nc; i < gs->n; i++)
        if (gs->v[i].k->rb.t) key_groups_eval(e, now, gs->v[i].k);
}

bool engine_keys_rate_wait(const job *j, engine_wait *out)
{
    const gkeys *gs = j->node->keys;
    if (!gs->rb.until) return false;
    const tkey *why = NULL;
    /* at the time it was closed until, the key that sets that time */
    group_opens(j->node, gs->rb.until - 1, &why);
    out->kind = ENGINE_WAIT_RATE_KEY;
    out->key = why ? why->key : gs->v[gs->nc].k->key;
    out->until = gs->rb.until;
    return true;
}

/* A key no group names: kept until its bucket is full again. */
bool engine_key_rate_retire(engine_t *e, tkey *k)
{
    if (!k->rb.t || k->rb.tat <= 0) return false;
    engine_rate_timer_set(e, &k->rb, (k->rb.tat + US - 1) / US);
    return true;
}

void engine_key_rate_unretire(engine_t *e, tkey *k)
{
    if (k->rb.until) engine_rate_timer_clear(e, &k->rb);
}

int64_t engine_key_rate_until(const tkey *k, int64_t now)
{
    if (!k->rb.t) return 0;
    int64_t us = key_opens_us(k, 1, now * US);
    return us > now * US ? (us + US - 1) / US : 0;
}

bool engine_keys_rate_check(engine_t *e, int64_t now, const node *g, char *why, size_t len)
{
    const gkeys *gs = g->keys;
    if (!engine_rate_check(e, &gs->rb)) {
        snprintf(why, len, "group of %s/%s/%s: its rate timer is wrong", g->sh->q->name,
                 g->sh->type, g->t->name);
        return false;
    }
    int64_t want = gs->n == gs->nc ? 0 : group_opens(g, now, NULL);
    /* a timer due now may wait for the next tick */
    bool ok = want > now ? gs->rb.until == want : gs->rb.until <= now;
    if (gs->rb.until > now) ok &= gs->rb.until == want;
    if (!ok) {
        snprintf(why, len, "group of %s/%s/%s: closed until %lld, its keys say %lld",
                 g->sh->q->name, g->sh->type, g->t->name, (long long)gs->rb.until, (long long)want);
        return false;
    }
    return true;
}
