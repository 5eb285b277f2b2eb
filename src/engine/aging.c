// SPDX-License-Identifier: Apache-2.0
/* Priority aging (queue settings aging_ms and aging_cap; docs/SEMANTICS.md,
 * "Priority aging").
 *
 * A ready job of priority p below its queue's cap, waiting since w (its
 * run_at), ranks at time t as p + (t - w) / aging_ms, at most the cap.  Until
 * it reaches the cap, its order against other such jobs does not change with
 * time: it is the order of X = w - p * aging_ms, smaller first (jobs of one
 * priority keep their order: FIFO).  So these jobs wait in a second heap of
 * their node, `rising`, keyed by X, in a range of keys above every key of
 * the node's own heap (a job that has not reached the cap ranks below every
 * job at or above it, whose keys are the usual ones).  The first job of
 * `rising` is also the first to reach the cap, at X + cap * aging_ms: its
 * node waits in e->aging until then, when the jobs that reached the cap move
 * to the node's own heap under the cap's key (ranking with the jobs of that
 * priority by run_at) and carry JF_CAPPED while ready.  Nothing else is
 * re-keyed as time passes, so a decision stays O(log n); each job moves
 * once.  Against jobs of other queues a lease compares what each ranks as
 * now (engine_aging_rank). */
#include "internal.h"

/* X is kept as X + 2^47, below 2^48: |p * aging_ms| < 2^47 for every
 * priority and aging_ms up to 30 days, and run_at below 2^47 (year 6429). */
#define X_OFFSET (1LL << 47)
#define X_MAX    ((1ULL << 48) - 1)

static inline bool aging_on(const engine_queue_settings *s)
{
    return s->aging_ms > 0;
}

/* The first key above every key of jobs at or above the cap. */
static inline uint64_t rising_base(const engine_queue_settings *s)
{
    return (uint64_t)(ENGINE_PRIORITY_MAX - s->aging_cap + 1) << 48;
}

static uint64_t rising_key(const engine_queue_settings *s, const job *j)
{
    long long x = (long long)j->run_at - (long long)j->priority * s->aging_ms + X_OFFSET;
    if (x < 0) x = 0;
    if ((unsigned long long)x > X_MAX) x = (long long)X_MAX;
    return rising_base(s) + (uint64_t)x;
}

/* When the job of rising key k reaches the cap. */
static int64_t cap_at(const engine_queue_settings *s, uint64_t k)
{
    int64_t x = (int64_t)(k - rising_base(s)) - X_OFFSET;
    return x + s->aging_cap * s->aging_ms;
}

uint64_t engine_heap_key(const job *j, bool *rising)
{
    const engine_queue_settings *s = &j->node->sh->q->s;
    *rising = false;
    if (!aging_on(s) || j->priority >= s->aging_cap) return engine_pack_key(j->priority, j->run_at);
    if (j->flags & JF_CAPPED) return engine_pack_key((int)s->aging_cap, j->run_at);
    *rising = true;
    return rising_key(s, j);
}

uint64_t engine_aging_rank(const job *j, int64_t now)
{
    const engine_queue_settings *s = &j->node->sh->q->s;
    if (!aging_on(s) || j->priority >= s->aging_cap) return engine_pack_key(j->priority, j->run_at);
    int64_t waited = now > j->run_at ? now - j->run_at : 0;
    int64_t p = j->priority + waited / s->aging_ms;
    if ((j->flags & JF_CAPPED) || p > s->aging_cap) p = s->aging_cap;
    return engine_pack_key((int)p, j->run_at);
}

/* ---- nodes by when their first rising job reaches the cap --------------------- */

static inline bool cap_before(const node *a, const node *b)
{
    return a->cap_at < b->cap_at;
}
HEAP_DEFINE(ah, node, aidx, cap_before)

void engine_aging_watch(engine_t *e, node *n)
{
    if (n->rising.n == 0) {
        if (n->aidx != HEAP_NONE) ah_remove(&e->aging, n);
        return;
    }
    n->cap_at = cap_at(&n->sh->q->s, n->rising.a[0].k);
    if (n->aidx == HEAP_NONE) {
        if (ah_push(&e->aging, n) != 0) engine_oom();
    } else {
        ah_fix(&e->aging, n);
    }
}

int64_t engine_aging_next(const engine_t *e)
{
    const node *n = ah_top(&e->aging);
    return n ? n->cap_at : INT64_MAX;
}

/* n's rising jobs that reached the cap by now move to its own heap. */
static size_t cap_node(engine_t *e, node *n, int64_t now)
{
    const engine_queue_settings *s = &n->sh->q->s;
    size_t moved = 0;
    while (n->rising.n && cap_at(s, n->rising.a[0].k) <= now) {
        ready_entry x = n->rising.a[0];
        engine_ready_entry_pop(&n->rising);
        job *j = engine_job_find(e, x.id);
        j->flags |= JF_CAPPED;
        engine_ready_entry_push(
            e, &n->jobs, (ready_entry){engine_pack_key((int)s->aging_cap, j->run_at), j->id});
        engine_node_prune(e, n);
        moved++;
    }
    engine_aging_watch(e, n);
    if (moved) engine_node_update(e, n);
    return moved;
}

size_t engine_aging_tick(engine_t *e, int64_t now)
{
    size_t moved = 0;
    node *n;
    while ((n = ah_top(&e->aging)) && n->cap_at <= now) moved += cap_node(e, n, now);
    return moved;
}

/* ---- settings changed ------------------------------------------------------------ */

static void rekey_node(engine_t *e, node *n, ptr_vec *tmp)
{
    tmp->n = 0;
    ready_heap *hs[2] = {&n->jobs, &n->rising};
    for (int h = 0; h < 2; h++) {
        for (uint32_t i = 0; i < hs[h]->n; i++) {
            const ready_entry *x = &hs[h]->a[i];
            if (engine_stale_take(e, x->id, x->k)) continue; /* a job gone: its marker too */
            job *j = engine_job_find(e, x->id);
            j->flags &= (uint8_t)~JF_CAPPED;
            ptr_vec_push(tmp, j);
        }
        hs[h]->n = 0;
    }
    for (size_t i = 0; i < tmp->n; i++) {
        job *j = tmp->v[i];
        bool rising;
        uint64_t k = engine_heap_key(j, &rising);
        engine_ready_entry_push(e, rising ? &n->rising : &n->jobs, (ready_entry){k, j->id});
    }
    engine_aging_watch(e, n);
    engine_node_update(e, n);
}

void engine_aging_rekey(engine_t *e, queue *q)
{
    ptr_vec tmp = {0};
    /* groups first, then their nodes (a node's front reads its groups') */
    for (size_t i = 0; i < htab_cap(&e->groups); i++) {
        node *g = e->groups.slots[i].item;
        if (g && g->sh->q == q && (g->jobs.n || g->rising.n)) rekey_node(e, g, &tmp);
    }
    for (size_t i = 0; i < htab_cap(&e->nodes); i++) {
        node *n = e->nodes.slots[i].item;
        if (n && n->sh->q == q && (n->jobs.n || n->rising.n)) rekey_node(e, n, &tmp);
    }
    free(tmp.v);
}

/* ---- checks ---------------------------------------------------------------------- */

bool engine_aging_check(engine_t *e, char *why, size_t len)
{
    for (uint32_t i = 0; i < e->aging.n; i++) {
        const node *n = e->aging.a[i];
        if (n->aidx != i || !n->rising.n || n->cap_at != cap_at(&n->sh->q->s, n->rising.a[0].k) ||
            (i > 0 && cap_before(n, e->aging.a[(i - 1) / 2]))) {
            snprintf(why, len, "the aging heap is wrong at %u", i);
            return false;
        }
    }
    return true;
}
