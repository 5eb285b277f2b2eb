// SPDX-License-Identifier: Apache-2.0
/* Scheduling: which job runs next.
 *
 * Three levels of heaps, each element carrying its own heap position:
 *   queue->shards   shards (queue, type) keyed by their best node
 *   shard->nodes    nodes (shard, tenant) that are eligible, keyed by
 *                   fifo: their best job; fair: their pair's pass, then job
 *   node->jobs      ready jobs by priority desc, run_at, id
 * A lease takes the top of each requested queue (or of each requested
 * (queue, type) shard), so it costs O(log n) per job whatever the backlog.
 */
#include "internal.h"

/* ---- job heaps: 4-ary, keys inline -------------------------------------------- */

static inline bool jheap_less(const jheap_entry *a, const jheap_entry *b)
{
    return a->k < b->k || (a->k == b->k && a->id < b->id);
}

static void jh_place(jheap *h, uint32_t i, jheap_entry x)
{
    h->a[i] = x;
    x.j->hidx = i;
}

static void jh_up(jheap *h, uint32_t i)
{
    jheap_entry x = h->a[i];
    while (i > 0) {
        uint32_t p = (i - 1) / 4;
        if (!jheap_less(&x, &h->a[p])) break;
        jh_place(h, i, h->a[p]);
        i = p;
    }
    jh_place(h, i, x);
}

static void jh_down(jheap *h, uint32_t i)
{
    jheap_entry x = h->a[i];
    for (;;) {
        uint32_t c = 4 * i + 1;
        if (c >= h->n) break;
        uint32_t end = c + 4 < h->n ? c + 4 : h->n, best = c;
        for (uint32_t k = c + 1; k < end; k++)
            if (jheap_less(&h->a[k], &h->a[best])) best = k;
        if (!jheap_less(&h->a[best], &x)) break;
        jh_place(h, i, h->a[best]);
        i = best;
    }
    jh_place(h, i, x);
}

static void jh_push(jheap *h, job *j, uint64_t k)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 4;
        h->a = xrealloc(h->a, (size_t)h->cap * sizeof(jheap_entry));
    }
    h->a[h->n] = (jheap_entry){k, j->id, j};
    j->hidx = h->n++;
    jh_up(h, h->n - 1);
}

static inline job *jh_top(const jheap *h)
{
    return h->n ? h->a[0].j : NULL;
}

static void jh_remove(jheap *h, job *j)
{
    uint32_t i = j->hidx;
    j->hidx = HEAP_NONE;
    h->n--;
    if (i != h->n) {
        h->a[i] = h->a[h->n];
        h->a[i].j->hidx = i;
        if (i > 0 && jheap_less(&h->a[i], &h->a[(i - 1) / 4]))
            jh_up(h, i);
        else
            jh_down(h, i);
    }
    if (h->cap > 64 && h->n < h->cap / 4) {
        h->cap /= 2;
        h->a = xrealloc(h->a, (size_t)h->cap * sizeof(jheap_entry));
    }
}

static void jh_rekey(jheap *h, job *j, uint64_t k)
{
    uint32_t i = j->hidx;
    h->a[i].k = k;
    if (i > 0 && jheap_less(&h->a[i], &h->a[(i - 1) / 4]))
        jh_up(h, i);
    else
        jh_down(h, i);
}

/* ---- node heaps: untracked, with lazy deletion --------------------------------
 *
 * A lease pops a node's top; everything else that takes a ready job out of
 * its node (cancel, a re-key on requeue) leaves the entry where it is and
 * records (id, key) in e->stale; entries are dropped when they surface.
 * So sifting never writes into the jobs it moves, which at a large backlog
 * are cold.  The top of a node heap is always live. */

static inline bool ready_less(const ready_entry *a, const ready_entry *b)
{
    return a->k < b->k || (a->k == b->k && a->id < b->id);
}

static void nh_up(ready_heap *h, uint32_t i)
{
    ready_entry x = h->a[i];
    while (i > 0) {
        uint32_t p = (i - 1) / 4;
        if (!ready_less(&x, &h->a[p])) break;
        h->a[i] = h->a[p];
        i = p;
    }
    h->a[i] = x;
}

static void nh_down(ready_heap *h, uint32_t i)
{
    ready_entry x = h->a[i];
    for (;;) {
        uint32_t c = 4 * i + 1;
        if (c >= h->n) break;
        uint32_t end = c + 4 < h->n ? c + 4 : h->n, best = c;
        for (uint32_t k = c + 1; k < end; k++)
            if (ready_less(&h->a[k], &h->a[best])) best = k;
        if (!ready_less(&h->a[best], &x)) break;
        h->a[i] = h->a[best];
        i = best;
    }
    h->a[i] = x;
}

static void nh_push(ready_heap *h, ready_entry x)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 4;
        h->a = xrealloc(h->a, (size_t)h->cap * sizeof(ready_entry));
    }
    h->a[h->n++] = x;
    nh_up(h, h->n - 1);
}

static void nh_pop(ready_heap *h)
{
    h->a[0] = h->a[--h->n];
    if (h->n) nh_down(h, 0);
    if (h->cap > 64 && h->n < h->cap / 4) {
        h->cap /= 2;
        h->a = xrealloc(h->a, (size_t)h->cap * sizeof(ready_entry));
    }
}

typedef struct stale_ent {
    uint64_t id, k;
} stale_ent;

static uint64_t stale_hash(uint64_t id, uint64_t k)
{
    return hash_u64(id ^ hash_u64(k));
}

static bool stale_eq(const void *item, const void *key)
{
    const stale_ent *a = item, *b = key;
    return a->id == b->id && a->k == b->k;
}

/* Takes the marker of (id, k) if there is one. */
static bool stale_take(engine_t *e, uint64_t id, uint64_t k)
{
    if (e->stale.len == 0) return false;
    stale_ent key = {id, k};
    uint64_t h = stale_hash(id, k);
    stale_ent *s = htab_find(&e->stale, h, stale_eq, &key);
    if (!s) return false;
    htab_remove(&e->stale, h, s);
    free(s);
    return true;
}

static void stale_add(engine_t *e, uint64_t id, uint64_t k)
{
    stale_ent *s = xmalloc(sizeof(*s));
    s->id = id;
    s->k = k;
    if (htab_insert(&e->stale, stale_hash(id, k), s) != 0) engine_oom();
}

/* Restores "the top is live", or empties the heap when nothing is. */
static void heap_prune(engine_t *e, ready_heap *h, bool empty)
{
    if (empty) {
        for (uint32_t i = 0; i < h->n; i++) stale_take(e, h->a[i].id, h->a[i].k);
        h->n = 0;
        if (h->cap > 64) {
            free(h->a);
            h->a = NULL;
            h->cap = 0;
        }
        return;
    }
    while (h->n && stale_take(e, h->a[0].id, h->a[0].k)) nh_pop(h);
}

/* Restores "each top is live" in n's heaps (its own and its rising jobs'),
 * or empties them when nothing is. */
static void node_prune(engine_t *e, node *n)
{
    heap_prune(e, &n->jobs, n->n_ready == 0);
    if (n->rising.n) heap_prune(e, &n->rising, n->n_ready == 0);
}

void engine_node_prune(engine_t *e, node *n)
{
    node_prune(e, n);
}

bool engine_stale_take(engine_t *e, uint64_t id, uint64_t k)
{
    return stale_take(e, id, k);
}

void engine_ready_entry_push(engine_t *e, ready_heap *h, ready_entry x)
{
    /* An identical entry left behind earlier is this one again. */
    if (!stale_take(e, x.id, x.k)) nh_push(h, x);
}

void engine_ready_entry_pop(ready_heap *h)
{
    nh_pop(h);
}

void engine_stale_free(engine_t *e)
{
    for (size_t i = 0; i < htab_cap(&e->stale); i++) free(e->stale.slots[i].item);
    htab_free(&e->stale);
}

void jheap_free(jheap *h)
{
    free(h->a);
    h->a = NULL;
    h->n = h->cap = 0;
}

void ready_heap_free(ready_heap *h)
{
    free(h->a);
    h->a = NULL;
    h->n = h->cap = 0;
}

/* ---- node and shard heaps -------------------------------------------------- */

/* Nodes compare on keys cached in the node, refreshed by node_update. */
static inline bool node_before(const node *a, const node *b)
{
    if (a->fair && a->pass != b->pass) return a->pass < b->pass;
    return a->k < b->k || (a->k == b->k && a->kid < b->kid);
}
HEAP_DEFINE(nq, node, sidx, node_before)

bool engine_node_before(const node *a, const node *b)
{
    return node_before(a, b);
}

/* A node's groups compare on their front job, kept in the heap's entries
 * (and in the group, for its own checks). */
static inline bool gh_less(const gheap_entry *a, const gheap_entry *b)
{
    return a->k < b->k || (a->k == b->k && a->kid < b->kid);
}

static inline void gh_place(gheap *h, uint32_t i, gheap_entry x)
{
    h->a[i] = x;
    x.g->sidx = i;
}

static void gh_up(gheap *h, uint32_t i)
{
    gheap_entry x = h->a[i];
    while (i > 0) {
        uint32_t p = (i - 1) / 4;
        if (!gh_less(&x, &h->a[p])) break;
        gh_place(h, i, h->a[p]);
        i = p;
    }
    gh_place(h, i, x);
}

static void gh_down(gheap *h, uint32_t i)
{
    gheap_entry x = h->a[i];
    for (;;) {
        uint32_t c = 4 * i + 1;
        if (c >= h->n) break;
        uint32_t end = c + 4 < h->n ? c + 4 : h->n, best = c;
        for (uint32_t k = c + 1; k < end; k++)
            if (gh_less(&h->a[k], &h->a[best])) best = k;
        if (!gh_less(&h->a[best], &x)) break;
        gh_place(h, i, h->a[best]);
        i = best;
    }
    gh_place(h, i, x);
}

static void gh_push(gheap *h, node *g)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 4;
        h->a = xrealloc(h->a, (size_t)h->cap * sizeof(gheap_entry));
    }
    h->a[h->n] = (gheap_entry){g->k, g->kid, g};
    g->sidx = h->n++;
    gh_up(h, h->n - 1);
}

static void gh_remove(gheap *h, node *g)
{
    uint32_t i = g->sidx;
    g->sidx = HEAP_NONE;
    h->n--;
    if (i != h->n) {
        gh_place(h, i, h->a[h->n]);
        if (i > 0 && gh_less(&h->a[i], &h->a[(i - 1) / 4]))
            gh_up(h, i);
        else
            gh_down(h, i);
    }
    if (h->cap > 64 && h->n < h->cap / 4) {
        h->cap /= 2;
        h->a = xrealloc(h->a, (size_t)h->cap * sizeof(gheap_entry));
    }
}

/* g's front changed: its entry takes it, and moves. */
static void gh_rekey(gheap *h, node *g)
{
    uint32_t i = g->sidx;
    gheap_entry *x = &h->a[i];
    bool earlier = g->k < x->k || (g->k == x->k && g->kid < x->kid);
    x->k = g->k;
    x->kid = g->kid;
    if (earlier)
        gh_up(h, i);
    else
        gh_down(h, i);
}

bool engine_gheap_ordered(const gheap *h)
{
    for (uint32_t i = 1; i < h->n; i++)
        if (gh_less(&h->a[i], &h->a[(i - 1) / 4]) || h->a[i].g->sidx != i) return false;
    return h->n == 0 || h->a[0].g->sidx == 0;
}

static inline bool shard_before(const shard *a, const shard *b)
{
    return node_before(a->nodes.a[0], b->nodes.a[0]);
}
HEAP_DEFINE(sq, shard, qidx, shard_before)

/* Across queues the best job wins on (priority, run_at, id). */
/* Across queues the best job wins on what it ranks as now (its priority,
 * raised by aging where its queue ages), then run_at and id. */
static inline bool job_before(const job *a, const job *b, int64_t now)
{
    uint64_t ka = engine_aging_rank(a, now), kb = engine_aging_rank(b, now);
    return ka < kb || (ka == kb && a->id < b->id);
}

job_extra *engine_extra(engine_t *e, job *j)
{
    if (!j->extra) {
        j->extra = xcalloc(1, sizeof(job_extra));
        e->mem_bytes += mem_chunk(sizeof(job_extra));
    }
    return j->extra;
}

static inline void counters_add(counters *c, engine_state s, int d)
{
    c->n[s] += (uint64_t)(int64_t)d;
}

void engine_set_state(engine_t *e, job *j, engine_state s)
{
    pair *p = job_pair(j);
    engine_state old = (engine_state)j->state;
    if (old < ENGINE_SUCCEEDED) {
        counters_add(&p->c, old, -1);
        counters_add(&p->q->c, old, -1);
        counters_add(&p->t->c, old, -1);
        counters_add(&e->c, old, -1);
    }
    if (s < ENGINE_SUCCEEDED) {
        counters_add(&p->c, s, 1);
        counters_add(&p->q->c, s, 1);
        counters_add(&p->t->c, s, 1);
        counters_add(&e->c, s, 1);
    }
    j->state = (uint8_t)s;
    engine_quota_moved(e, j, old, s);
    if (j->flags & JF_IN_BATCH) engine_batch_job_moved(e, j, old, s);
}

/* ---- eligibility -------------------------------------------------------- */

static void shard_update(shard *sh)
{
    queue *q = sh->q;
    if (sh->nodes.n > 0) {
        if (sh->qidx == HEAP_NONE) {
            if (sq_push(&q->shards, sh) != 0) engine_oom();
        } else {
            sq_fix(&q->shards, sh);
        }
    } else if (sh->qidx != HEAP_NONE) {
        sq_remove(&q->shards, sh);
    }
}

/* A node's front: its own ready jobs' top, or its best group's, whichever
 * comes first (only called while it has either). */
static inline void node_front(node *n)
{
    if (n->n_ready) {
        const ready_entry *t = node_top(n);
        n->k = t->k;
        n->kid = t->id;
    }
    if (n->groups.n) {
        const gheap_entry *g = &n->groups.a[0];
        if (!n->n_ready || g->k < n->k || (g->k == n->k && g->kid < n->kid)) {
            n->k = g->k;
            n->kid = g->kid;
        }
    }
}

void engine_group_update(engine_t *e, node *g)
{
    node *n = g->parent;
    bool want = g->n_ready > 0 && g->keys->full == 0 && !g->keys->rb.until;
    if (want) {
        const ready_entry *t = node_top(g);
        uint64_t k = t->k, kid = t->id;
        if (g->sidx != HEAP_NONE && g->k == k && g->kid == kid) return; /* its node is as it was */
        g->k = k;
        g->kid = kid;
        if (g->sidx == HEAP_NONE)
            gh_push(&n->groups, g);
        else
            gh_rekey(&n->groups, g);
    } else if (g->sidx != HEAP_NONE) {
        gh_remove(&n->groups, g);
    } else {
        return; /* out, and out it stays */
    }
    engine_node_update(e, n);
}

void engine_node_update(engine_t *e, node *n)
{
    if (n->parent) {
        engine_group_update(e, n);
        return;
    }
    shard *sh = n->sh;
    queue *q = sh->q;
    bool want = (n->n_ready > 0 || n->groups.n > 0) && tenant_has_room(n->t) && pair_has_room(n->p);
    if (want) {
        node_front(n);
        n->fair = q->s.order == ENGINE_ORDER_FAIR;
        if (n->sidx == HEAP_NONE) {
            /* A tenant that comes back after idling starts at the queue's
             * clock, so it cannot claim the turns it did not use. */
            if (n->fair && n->p->n_eligible == 0 && n->p->pass < q->vclock) n->p->pass = q->vclock;
            n->pass = n->p->pass;
            n->p->n_eligible++;
            if (nq_push(&sh->nodes, n) != 0) engine_oom();
            engine_note_wake(e, q);
        } else {
            n->pass = n->p->pass;
            nq_fix(&sh->nodes, n);
        }
    } else if (n->sidx != HEAP_NONE) {
        nq_remove(&sh->nodes, n);
        n->p->n_eligible--;
    }
    shard_update(sh);
}

void engine_tenant_room_changed(engine_t *e, tenant *t)
{
    DLIST_FOREACH(it, &t->ready_nodes)
    {
        engine_node_update(e, DLIST_ITEM(it, node, in_tenant));
    }
}

void engine_pair_room_changed(engine_t *e, pair *p)
{
    DLIST_FOREACH(it, &p->ready_nodes)
    {
        engine_node_update(e, DLIST_ITEM(it, node, in_pair));
    }
}

void engine_queue_reorder(engine_t *e, queue *q)
{
    /* The keys of every node changed meaning: take them all out, put back. */
    DLIST_FOREACH(it, &q->all_shards)
    {
        shard *sh = DLIST_ITEM(it, shard, in_queue);
        while (sh->nodes.n > 0) {
            node *n = nq_pop(&sh->nodes);
            n->p->n_eligible--;
        }
        shard_update(sh);
    }
    DLIST_FOREACH(it, &q->pairs)
    {
        pair *p = DLIST_ITEM(it, pair, in_queue);
        p->pass = 0;
        DLIST_FOREACH(it2, &p->ready_nodes)
        {
            engine_node_update(e, DLIST_ITEM(it2, node, in_pair));
        }
    }
    q->vclock = 0;
}

void engine_take_slot(engine_t *e, job *j)
{
    tenant *t = job_tenant(j);
    pair *p = job_pair(j);
    bool t_had = tenant_has_room(t), p_had = pair_has_room(p);
    t->active++;
    p->active++;
    if (j->node->keys) engine_keys_take(e, j);
    if (t_had && !tenant_has_room(t)) engine_tenant_room_changed(e, t);
    if (p_had && !pair_has_room(p)) engine_pair_room_changed(e, p);
}

void engine_release_slot(engine_t *e, job *j)
{
    tenant *t = job_tenant(j);
    pair *p = job_pair(j);
    bool t_had = tenant_has_room(t), p_had = pair_has_room(p);
    t->active--;
    p->active--;
    if (j->node->keys) engine_keys_release(e, j);
    if (!t_had && tenant_has_room(t)) engine_tenant_room_changed(e, t);
    if (!p_had && pair_has_room(p)) engine_pair_room_changed(e, p);
}

/* ---- ready jobs ----------------------------------------------------------- */

/* A node is in its tenant's and pair's lists of ready nodes while it or
 * one of its groups has ready jobs. */
static inline uint32_t node_ready_all(const node *b)
{
    return b->n_ready + b->n_grp_ready;
}

static void ready_push(engine_t *e, job *j)
{
    node *n = j->node, *b = node_base(n);
    bool was_empty = n->n_ready == 0, b_was_empty = node_ready_all(b) == 0;
    bool rising;
    uint64_t k = engine_heap_key(j, &rising);
    ready_heap *h = rising ? &n->rising : &n->jobs;
    n->n_ready++;
    if (n != b) b->n_grp_ready++;
    /* An identical entry left behind earlier is this one again. */
    if (!stale_take(e, j->id, k)) nh_push(h, (ready_entry){k, j->id});
    if (rising && h->a[0].id == j->id) engine_aging_watch(e, n);
    if (e->n_spilled) engine_args_node_busy(e, n, false);
    if (b_was_empty) {
        dlist_push_back(&b->t->ready_nodes, &b->in_tenant);
        dlist_push_back(&b->p->ready_nodes, &b->in_pair);
    }
    const ready_entry *t = node_top(n);
    if (was_empty || (t->id == j->id && t->k == k)) engine_node_update(e, n);
}

static void ready_remove(engine_t *e, job *j)
{
    node *n = j->node, *b = node_base(n);
    bool rising;
    uint64_t k = engine_heap_key(j, &rising);
    ready_heap *h = rising ? &n->rising : &n->jobs;
    const ready_entry *t = node_top(n);
    bool was_front = t->id == j->id && t->k == k;
    bool was_top = h->a[0].id == j->id && h->a[0].k == k;
    j->flags &= (uint8_t)~JF_CAPPED; /* it ranks afresh when next ready */
    n->n_ready--;
    if (n != b) b->n_grp_ready--;
    if (was_top)
        nh_pop(h);
    else
        stale_add(e, j->id, k);
    node_prune(e, n);
    if (rising && was_top) engine_aging_watch(e, n);
    if (node_ready_all(b) == 0) {
        dlist_remove(&b->in_tenant);
        dlist_remove(&b->in_pair);
    }
    if (was_front) engine_node_update(e, n);
}

void engine_timer_push(engine_t *e, job *j)
{
    jh_push(&e->timers, j, (uint64_t)j->run_at);
}

void engine_lease_heap_push(engine_t *e, job *j)
{
    jh_push(&e->leases, j, (uint64_t)j->extra->deadline);
}

void engine_lease_heap_fix(engine_t *e, job *j)
{
    jh_rekey(&e->leases, j, (uint64_t)j->extra->deadline);
}

void engine_make_runnable(engine_t *e, job *j, int64_t now)
{
    if (j->run_at > now) {
        engine_set_state(e, j, ENGINE_SCHEDULED);
        engine_timer_push(e, j);
    } else {
        j->ready_at = now;
        engine_set_state(e, j, ENGINE_READY);
        ready_push(e, j);
    }
    engine_note_job(e, j, 0);
}

void engine_unplace(engine_t *e, job *j)
{
    switch ((engine_state)j->state) {
    case ENGINE_READY: ready_remove(e, j); break;
    case ENGINE_SCHEDULED: jh_remove(&e->timers, j); break;
    case ENGINE_LEASED:
    case ENGINE_RUNNING: jh_remove(&e->leases, j); break;
    case ENGINE_DEAD: engine_morgue_remove(e, j); break;
    case ENGINE_WAITING:
        if (j->hidx != HEAP_NONE) jh_remove(&e->waits, j); /* an event's timeout */
        break;
    default: break;
    }
}

void engine_wait_heap_push(engine_t *e, job *j, int64_t until)
{
    jh_push(&e->waits, j, (uint64_t)until);
}

void engine_wait_heap_remove(engine_t *e, job *j)
{
    if (j->hidx != HEAP_NONE) jh_remove(&e->waits, j);
}

job *engine_wait_due(engine_t *e, int64_t now)
{
    if (!e->waits.n || (int64_t)e->waits.a[0].k > now) return NULL;
    job *j = e->waits.a[0].j;
    jh_remove(&e->waits, j);
    return j;
}

/* ---- lanes ------------------------------------------------------------------ */

void engine_lane_join(engine_t *e, lane *l, job *j)
{
    j->in_lane = xcalloc(1, sizeof(lane_link));
    e->mem_bytes += mem_chunk(sizeof(lane_link));
    j->in_lane->lane = l;
    l->refs++;
}

void engine_lane_append(engine_t *e, lane *l, job *j)
{
    (void)e;
    j->in_lane->prev = l->tail;
    j->in_lane->next = NULL;
    if (l->tail)
        l->tail->in_lane->next = j;
    else
        l->head = j;
    l->tail = j;
    l->len++;
}

static inline bool in_lane_list(const job *j)
{
    return j->in_lane && j->state <= ENGINE_RUNNING;
}

void engine_lane_unlink(engine_t *e, job *j, int64_t now)
{
    if (!in_lane_list(j)) return;
    lane_link *link = j->in_lane;
    lane *l = link->lane;
    bool was_head = l->head == j;
    if (link->prev)
        link->prev->in_lane->next = link->next;
    else
        l->head = link->next;
    if (link->next)
        link->next->in_lane->prev = link->prev;
    else
        l->tail = link->prev;
    link->prev = link->next = NULL;
    l->len--;
    if (was_head && l->head && l->head->state == ENGINE_BLOCKED)
        engine_make_runnable(e, l->head, now);
}

/* ---- lease ---------------------------------------------------------------- */

static void lease_one(engine_t *e, int64_t now, job *j, const char *worker)
{
    node *n = j->node;
    pair *p = n->p;
    queue *q = p->q;
    ready_remove(e, j);
    if (e->n_spilled) {
        engine_args_node_busy(e, n, true);
        engine_args_consumed(e, j);
    }
    engine_set_state(e, j, ENGINE_LEASED);
    job_extra *ex = engine_extra(e, j);
    /* Tokens grow with every lease of a job and never fall below the floor
     * of this run, so a token handed out before a crash is never handed out
     * again (see engine_config.token_floor). */
    ex->token = ex->token + 1 > e->cfg.token_floor ? ex->token + 1 : e->cfg.token_floor;
    j->attempts++;
    ex->leased_at = now;
    ex->started_at = 0;
    ex->deadline = engine_lease_deadline(j, now);
    if (!ex->worker || strcmp(ex->worker, worker) != 0) {
        if (ex->worker) engine_worker_release(e, ex->worker);
        ex->worker = engine_worker_intern(e, worker);
    }
    engine_lease_heap_push(e, j);
    if (ex->steps) engine_steps_leased(e, j);
    if (q->s.order == ENGINE_ORDER_FAIR) {
        if (p->pass > q->vclock) q->vclock = p->pass;
        p->pass += FAIR_STRIDE / n->t->s.weight;
        /* Every node of the pair moved back in line. */
        engine_pair_room_changed(e, p);
    }
    engine_take_slot(e, j);
    engine_rate_take(e, now, j);
    engine_note_job(e, j, 0);
}

#define LEASE_MAX_QUEUES 64

size_t engine_lease(engine_t *e, int64_t now, const engine_lease_req *req, engine_job **out)
{
    queue *qs[LEASE_MAX_QUEUES];
    size_t nq = 0;
    for (size_t i = 0; i < req->n_queues && nq < LEASE_MAX_QUEUES; i++) {
        queue *q = engine_queue_find(e, req->queues[i]);
        if (!q) continue;
        bool dup = false;
        for (size_t k = 0; k < nq; k++) dup |= qs[k] == q;
        if (!dup) qs[nq++] = q;
    }
    if (nq == 0) return 0;
    /* when a worker last asked, for "why a job waits" */
    for (size_t k = 0; k < nq && !req->n_types; k++) qs[k]->asked_at = now;
    if (req->max == 0) return 0;
    /* jobs that aged to their cap by now rank as such (a tick may not have come) */
    engine_aging_tick(e, now);
    /* With a type filter the candidates are (queue, type) shards. */
    ptr_vec *sv = &e->scratch;
    sv->n = 0;
    size_t shard_start[LEASE_MAX_QUEUES + 1];
    if (req->n_types) {
        for (size_t k = 0; k < nq; k++) {
            shard_start[k] = sv->n;
            for (size_t i = 0; i < req->n_types; i++) {
                shard *sh = engine_shard_find(e, qs[k], req->types[i]);
                if (!sh) continue;
                sh->asked_at = now;
                ptr_vec_push(sv, sh);
            }
        }
        shard_start[nq] = sv->n;
    }
    const char *worker = req->worker ? req->worker : "";
    size_t got = 0;
    while (got < req->max) {
        job *best = NULL;
        for (size_t k = 0; k < nq; k++) {
            node *cand = NULL;
            if (qs[k]->rb.until) continue; /* its rate allows no start yet */
            if (!req->n_types) {
                shard *sh = sq_top(&qs[k]->shards);
                if (sh) cand = nq_top(&sh->nodes);
            } else {
                for (size_t i = shard_start[k]; i < shard_start[k + 1]; i++) {
                    shard *sh = sv->v[i];
                    node *top = nq_top(&sh->nodes);
                    if (top && (!cand || node_before(top, cand))) cand = top;
                }
            }
            if (!cand) continue;
            job *j = engine_job_find(e, cand->kid); /* its front: a job of its own or a group's */
            if (!best || job_before(j, best, now)) best = j;
        }
        if (!best) break;
        /* past its expire_at: ends expired rather than running (a tick late) */
        if (best->extra && best->extra->expire_at && engine_expire_if_due(e, best, now)) continue;
        if (!engine_rate_allows(e, now, best)) continue; /* closed what did not allow it */
        lease_one(e, now, best, worker);
        out[got++] = best;
    }
    return got;
}

/* ---- time ------------------------------------------------------------------ */

int64_t engine_next_timer(const engine_t *e)
{
    int64_t t = INT64_MAX;
    if (e->timers.n) t = (int64_t)e->timers.a[0].k;
    if (e->leases.n && (int64_t)e->leases.a[0].k < t) t = (int64_t)e->leases.a[0].k;
    if (engine_rate_next(e) < t) t = engine_rate_next(e);
    if (engine_expiry_next(e) < t) t = engine_expiry_next(e);
    if (engine_aging_next(e) < t) t = engine_aging_next(e);
    if (engine_steps_next(e) < t) t = engine_steps_next(e);
    if (!dlist_empty(&e->idem_order)) {
        const idem_entry *ie = DLIST_ITEM(e->idem_order.head.next, idem_entry, in_order);
        int64_t due = ie->info.created_at + e->cfg.idempotency_ttl_ms;
        if (due < t) t = due;
    }
    return t;
}

job *engine_timer_due(engine_t *e, int64_t now)
{
    job *j = jh_top(&e->timers);
    if (!j || j->run_at > now) return NULL;
    jh_remove(&e->timers, j);
    return j;
}

job *engine_lease_due(engine_t *e, int64_t now)
{
    job *j = jh_top(&e->leases);
    if (!j || j->extra->deadline > now) return NULL;
    return j;
}

/* ---- worker names ------------------------------------------------------------ */

static bool worker_eq(const void *item, const void *key)
{
    return strcmp(((const worker_name *)item)->name, key) == 0;
}

const char *engine_worker_intern(engine_t *e, const char *name)
{
    size_t len = strlen(name);
    uint64_t h = hash_bytes(&e->hk, name, len);
    worker_name *w = htab_find(&e->workers, h, worker_eq, name);
    if (!w) {
        w = xmalloc(sizeof(*w) + len + 1);
        w->hash = h;
        w->refs = 0;
        memcpy(w->name, name, len + 1);
        if (htab_insert(&e->workers, h, w) != 0) engine_oom();
    }
    w->refs++;
    return w->name;
}

void engine_worker_release(engine_t *e, const char *name)
{
    worker_name *w = (worker_name *)(name - offsetof(worker_name, name));
    if (--w->refs > 0) return;
    htab_remove(&e->workers, w->hash, w);
    free(w);
}

/* ---- checks (check.c uses these to verify heap positions) ---------------- */

long engine_heap_check_node(engine_t *e, node *n)
{
    long a = engine_heap_check_entries(e, n, &n->jobs, false);
    long b = engine_heap_check_entries(e, n, &n->rising, true);
    return a < 0 || b < 0 ? -1 : a + b;
}

long engine_heap_check_entries(engine_t *e, node *n, const ready_heap *h, bool rising)
{
    long live = 0;
    htab seen = {0};
    for (uint32_t i = 0; i < h->n; i++) {
        const ready_entry *x = &h->a[i];
        if (i > 0 && ready_less(x, &h->a[(i - 1) / 4])) live = -1;
        stale_ent key = {x->id, x->k};
        bool stale = htab_find(&e->stale, stale_hash(x->id, x->k), stale_eq, &key) != NULL;
        if (i == 0 && stale) live = -1; /* the top must be live */
        if (live < 0) break;
        if (stale) continue;
        job *j = engine_job_find(e, x->id);
        bool r = false;
        if (!j || j->state != ENGINE_READY || j->node != n || engine_heap_key(j, &r) != x->k ||
            r != rising || htab_find(&seen, hash_u64(x->id), stale_eq, &key)) {
            live = -1;
            break;
        }
        stale_ent *mark = xmalloc(sizeof *mark);
        *mark = key;
        htab_insert(&seen, hash_u64(x->id), mark);
        live++;
    }
    for (size_t i = 0; i < htab_cap(&seen); i++) free(seen.slots[i].item);
    htab_free(&seen);
    return live;
}

bool engine_heap_check_jobs(const jheap *h, int kind)
{
    for (uint32_t i = 0; i < h->n; i++) {
        const jheap_entry *x = &h->a[i];
        const job *j = x->j;
        if (j->hidx != i || x->id != j->id) return false;
        uint64_t want = kind == 1   ? (uint64_t)j->run_at
                        : kind == 2 ? (uint64_t)j->extra->deadline
                                    : (uint64_t)j->extra->steps->until;
        if (x->k != want) return false;
        if (i > 0 && jheap_less(x, &h->a[(i - 1) / 4])) return false;
    }
    return true;
}

bool engine_heap_check_nodes(const heap *h)
{
    for (uint32_t i = 0; i < h->n; i++) {
        const node *n = h->a[i];
        if (n->sidx != i) return false;
        if (i > 0 && node_before(n, h->a[(i - 1) / 2])) return false;
    }
    return true;
}

bool engine_heap_check_shards(const heap *h)
{
    for (uint32_t i = 0; i < h->n; i++) {
        const shard *s = h->a[i];
        if (s->qidx != i) return false;
        if (i > 0 && shard_before(s, h->a[(i - 1) / 2])) return false;
    }
    return true;
}

/* Re-key a ready job whose priority or run_at changed. */
/* Re-key a ready job whose run_at changed (old_run_at: its previous run_at). */
void engine_ready_fix(engine_t *e, job *j, int64_t old_run_at)
{
    int64_t now_run = j->run_at;
    j->run_at = old_run_at;
    ready_remove(e, j);
    j->run_at = now_run;
    ready_push(e, j);
}
