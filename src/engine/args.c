// SPDX-License-Identifier: Apache-2.0
/* Args out of memory past a budget (docs/decisions/0028-*.md).
 *
 * A job's args live in its own allocation (job.args) while the args budget
 * (cfg.args_budget) has room: up to three quarters of it.  Past that, a new
 * job's args are **spilled**: the job is allocated as a blank one, flagged
 * JF_ARGS_OUT, and keeps only the args' length (3 bytes where the text would
 * be); the text is in the store's row.  The rest of the budget is a cache of
 * spilled jobs' args (args_entry, by id):
 *   - a job submitted spilled keeps its text in the cache, pinned, until its
 *     row has been collected into a store batch (engine_changes_clear), so
 *     the row is written and a lease in the meantime finds the text;
 *   - the server reads ahead (engine_args_wanted, engine_args_put): the
 *     spilled jobs near the front of each node's ready order (the window
 *     grows with the node's recent leases), the next job of a ready lane
 *     head, and scheduled jobs due within ARGS_TIMER_HORIZON_MS;
 *   - an entry is dropped when its job ends, and evicted oldest first (a
 *     leased job's first) when the cache needs room.
 * A job whose args are neither inline nor cached says so in engine_job_get
 * (args_missing); the server reads its row before answering.  Nothing here
 * changes a rule of SEMANTICS.md: which job runs next never depends on
 * where its args are. */
#include "internal.h"

#define ARGS_SPILL_MIN        64         /* smaller args stay inline: a spill saves too little */
#define ARGS_SPILL_MAX        (1u << 24) /* the length must fit 3 bytes; larger args stay inline */
#define ARGS_WINDOW_MIN       16         /* jobs read ahead at the front of a node, at least */
#define ARGS_WINDOW_MAX       4096
#define ARGS_TIMER_HORIZON_MS 2000

typedef struct args_entry {
    uint64_t id;
    uint32_t len;
    uint16_t pins; /* >0: not to be evicted (a row not yet collected) */
    bool gone;     /* its job was freed while it was pinned */
    bool detached; /* its job's args were replaced while it was pinned: out of the
                      cache and its counts, freed when unpinned */
    bool in_lru;
    dlink lru;   /* in e->args_lru while unpinned: evicted from the front */
    char text[]; /* len bytes + NUL */
} args_entry;

static size_t entry_mem(uint32_t len)
{
    return mem_chunk(sizeof(args_entry) + len + 1) + sizeof(htab_slot);
}

uint32_t engine_args_spilled_len(const job *j)
{
    const unsigned char *p = (const unsigned char *)j->args;
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16;
}

static bool entry_eq(const void *item, const void *key)
{
    return ((const args_entry *)item)->id == *(const uint64_t *)key;
}

static args_entry *entry_find(const engine_t *e, uint64_t id)
{
    return htab_find(&e->args_cache, hash_u64(id), entry_eq, &id);
}

static void entry_drop(engine_t *e, args_entry *a)
{
    if (a->detached) {
        free(a);
        return;
    }
    htab_remove(&e->args_cache, hash_u64(a->id), a);
    if (a->in_lru) dlist_remove(&a->lru);
    e->args_cache_bytes -= entry_mem(a->len);
    e->mem_bytes -= entry_mem(a->len);
    free(a);
}

/* What the cache may hold now: the budget less what the inline args take. */
static size_t cache_room(const engine_t *e)
{
    size_t b = e->cfg.args_budget;
    return b > e->data_bytes ? b - e->data_bytes : 0;
}

static bool make_room(engine_t *e, size_t need)
{
    size_t room = cache_room(e);
    while (e->args_cache_bytes + need > room && !dlist_empty(&e->args_lru))
        entry_drop(e, DLIST_ITEM(e->args_lru.head.next, args_entry, lru));
    return e->args_cache_bytes + need <= room;
}

static args_entry *entry_add(engine_t *e, uint64_t id, const char *text, uint32_t len, bool pin)
{
    args_entry *a = xmalloc(sizeof(*a) + len + 1);
    a->id = id;
    a->len = len;
    a->pins = pin;
    a->gone = false;
    a->detached = false;
    a->in_lru = !pin;
    memcpy(a->text, text, len);
    a->text[len] = 0;
    if (htab_insert(&e->args_cache, hash_u64(id), a) != 0) engine_oom();
    if (!pin) dlist_push_back(&e->args_lru, &a->lru);
    e->args_cache_bytes += entry_mem(len);
    e->mem_bytes += entry_mem(len);
    return a;
}

/* ---- spilling ------------------------------------------------------------------------ */

bool engine_args_spill(engine_t *e, const node *home, uint32_t len)
{
    (void)home;
    if (!e->cfg.args_budget || len < ARGS_SPILL_MIN || len >= ARGS_SPILL_MAX) return false;
    return e->data_bytes + len > e->cfg.args_budget / 4 * 3;
}

void engine_args_spilled(engine_t *e, job *j, const char *text, uint32_t len)
{
    unsigned char *p = (unsigned char *)j->args;
    p[0] = (unsigned char)len;
    p[1] = (unsigned char)(len >> 8);
    p[2] = (unsigned char)(len >> 16);
    j->flags |= JF_ARGS_OUT;
    e->n_spilled++;
    if (e->loading || !text) return; /* its row has it */
    /* until its row is collected: pinned, whatever the cache holds */
    args_entry *a = entry_add(e, j->id, text, len, true);
    ptr_vec_push(&e->args_pinned, a);
}

void engine_args_job_freed(engine_t *e, job *j)
{
    e->n_spilled--;
    args_entry *a = entry_find(e, j->id);
    if (a && !a->pins)
        entry_drop(e, a);
    else if (a)
        a->gone = true; /* pinned: dropped at the clear that unpins it */
}

void engine_args_forget(engine_t *e, job *j)
{
    j->flags &= ~(JF_ARGS_OUT | JF_ARGS_ASKED);
    e->n_spilled--;
    args_entry *a = entry_find(e, j->id);
    if (!a) return;
    if (!a->pins) {
        entry_drop(e, a);
        return;
    }
    /* pinned (in e->args_pinned until the changes are cleared): out of the
     * cache now, so that the job's new args may take its id */
    htab_remove(&e->args_cache, hash_u64(a->id), a);
    e->args_cache_bytes -= entry_mem(a->len);
    e->mem_bytes -= entry_mem(a->len);
    a->detached = a->gone = true;
}

void engine_args_changes_cleared(engine_t *e)
{
    for (size_t i = 0; i < e->args_pinned.n; i++) {
        args_entry *a = e->args_pinned.v[i];
        if (--a->pins) continue;
        if (a->gone) {
            entry_drop(e, a);
            continue;
        }
        dlist_push_back(&e->args_lru, &a->lru);
        a->in_lru = true;
    }
    e->args_pinned.n = 0;
    make_room(e, 0);
}

const char *engine_args_cached(engine_t *e, const job *j, uint32_t *len)
{
    args_entry *a = entry_find(e, j->id);
    if (!a) return NULL;
    *len = a->len;
    return a->text;
}

void engine_args_consumed(engine_t *e, const job *j)
{
    args_entry *a = entry_find(e, j->id);
    if (!a || !a->in_lru) return;
    /* handed out: the first to go when room is needed */
    dlist_remove(&a->lru);
    dlink *first = e->args_lru.head.next;
    a->lru.next = first;
    a->lru.prev = &e->args_lru.head;
    first->prev = &a->lru;
    e->args_lru.head.next = &a->lru;
}

/* ---- reading ahead ------------------------------------------------------------------- */

void engine_args_node_busy(engine_t *e, node *n, bool leased)
{
    if (!e->n_spilled) return;
    if (leased && n->recent < UINT16_MAX) n->recent++;
    if (n->args_dirty) return;
    n->args_dirty = true;
    n->refs++; /* held until read ahead (engine_node_unref) */
    ptr_vec_push(&e->args_dirty, n);
}

typedef struct want {
    uint64_t *ids;
    size_t n, max;
} want;

static void want_job(engine_t *e, want *w, job *j)
{
    if (!j || !(j->flags & JF_ARGS_OUT) || (j->flags & JF_ARGS_ASKED) || w->n >= w->max) return;
    if (entry_find(e, j->id)) return;
    j->flags |= JF_ARGS_ASKED;
    w->ids[w->n++] = j->id;
}

/* The first entries of a 4-ary heap of (key, id, ...) entries in order,
 * without touching the rest: a small binary heap of positions (the
 * children of i are 4i+1..4i+4).  Both the ready heaps (ready_entry) and the
 * timer heap (jheap_entry) begin with the key and the id. */
typedef struct heap_walk {
    const char *base; /* the entries */
    size_t stride, n; /* an entry's size, how many */
    uint32_t *a;      /* positions to visit, the best first */
    size_t len, cap;
} heap_walk;

static bool walk_less(const heap_walk *w, uint32_t x, uint32_t y)
{
    const uint64_t *a = (const uint64_t *)(w->base + x * w->stride);
    const uint64_t *b = (const uint64_t *)(w->base + y * w->stride);
    return a[0] != b[0] ? a[0] < b[0] : a[1] < b[1];
}

static void walk_push(heap_walk *w, uint32_t v)
{
    if (w->len == w->cap) {
        w->cap = w->cap ? w->cap * 2 : 64;
        w->a = xrealloc(w->a, w->cap * sizeof(*w->a));
    }
    size_t i = w->len++;
    while (i > 0 && walk_less(w, v, w->a[(i - 1) / 2])) {
        w->a[i] = w->a[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    w->a[i] = v;
}

static void walk_start(heap_walk *w, const void *base, size_t stride, size_t n)
{
    w->base = base;
    w->stride = stride;
    w->n = n;
    w->len = 0;
    if (n) walk_push(w, 0);
}

/* The next position in the heap's order, or -1 at its end. */
static long walk_next(heap_walk *w)
{
    if (!w->len) return -1;
    uint32_t top = w->a[0], v = w->a[--w->len];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= w->len) break;
        if (c + 1 < w->len && walk_less(w, w->a[c + 1], w->a[c])) c++;
        if (!walk_less(w, w->a[c], v)) break;
        w->a[i] = w->a[c];
        i = c;
    }
    if (w->len) w->a[i] = v;
    for (uint32_t c = 4 * top + 1; c <= 4 * top + 4 && c < w->n; c++) walk_push(w, c);
    return (long)top;
}

static void want_node(engine_t *e, want *w, node *n, heap_walk *hw)
{
    const ready_heap *h = &n->jobs;
    size_t window = ARGS_WINDOW_MIN + 4u * n->recent;
    if (window > ARGS_WINDOW_MAX) window = ARGS_WINDOW_MAX;
    n->recent /= 2;
    size_t seen = 0;
    /* its own heap first, then its jobs still rising to the cap (aging.c) */
    for (int part = 0; part < 2; part++, h = &n->rising) {
        walk_start(hw, h->a, sizeof(*h->a), h->n);
        long i;
        for (; seen < window && w->n < w->max && (i = walk_next(hw)) >= 0; seen++) {
            job *j = engine_job_find(e, h->a[i].id);
            if (!j || j->state != ENGINE_READY || j->node != n) continue; /* a stale entry */
            want_job(e, w, j);
            want_job(e, w, lane_next(j)); /* what its lane runs next */
        }
    }
}

/* Scheduled jobs due within the horizon, soonest first. */
static void want_timers(engine_t *e, want *w, int64_t now, heap_walk *hw)
{
    const jheap *h = &e->timers;
    walk_start(hw, h->a, sizeof(*h->a), h->n);
    long i;
    for (size_t seen = 0; seen < ARGS_WINDOW_MAX && w->n < w->max && (i = walk_next(hw)) >= 0;
         seen++) {
        if ((int64_t)h->a[i].k > now + ARGS_TIMER_HORIZON_MS) break;
        want_job(e, w, h->a[i].j);
    }
}

size_t engine_args_wanted(engine_t *e, int64_t now, uint64_t *ids, size_t max)
{
    if (!e->n_spilled) return 0;
    want w = {ids, 0, max};
    heap_walk hw = {0};
    size_t i = 0;
    for (; i < e->args_dirty.n && w.n < w.max; i++) {
        node *n = e->args_dirty.v[i];
        n->args_dirty = false;
        want_node(e, &w, n, &hw);
        engine_node_unref(e, n);
    }
    if (i) {
        memmove(e->args_dirty.v, e->args_dirty.v + i, (e->args_dirty.n - i) * sizeof(void *));
        e->args_dirty.n -= i;
    }
    if (now >= e->args_timers_at) {
        want_timers(e, &w, now, &hw);
        e->args_timers_at = now + ARGS_TIMER_HORIZON_MS / 4;
    }
    free(hw.a);
    return w.n;
}

bool engine_args_put(engine_t *e, uint64_t id, const char *text, uint32_t len)
{
    job *j = engine_job_find(e, id);
    if (!j || !(j->flags & JF_ARGS_OUT)) return false;
    j->flags &= ~JF_ARGS_ASKED;
    if (entry_find(e, id)) return true;
    if (!make_room(e, entry_mem(len))) return false;
    entry_add(e, id, text, len, false);
    return true;
}

bool engine_job_spilled(const job *j)
{
    return (j->flags & JF_ARGS_OUT) != 0;
}

void engine_args_unasked(engine_t *e, uint64_t id)
{
    job *j = engine_job_find(e, id);
    if (j) j->flags &= ~JF_ARGS_ASKED;
}

void engine_args_usage(const engine_t *e, engine_args_stats *st)
{
    st->budget = e->cfg.args_budget;
    st->inline_bytes = e->data_bytes;
    st->cache_bytes = e->args_cache_bytes;
    st->cache_entries = e->args_cache.len;
    st->spilled = e->n_spilled;
}

void engine_args_free(engine_t *e)
{
    for (size_t i = 0; i < htab_cap(&e->args_cache); i++) free(e->args_cache.slots[i].item);
    htab_free(&e->args_cache);
    free(e->args_pinned.v);
    for (size_t i = 0; i < e->args_dirty.n; i++) ((node *)e->args_dirty.v[i])->args_dirty = false;
    free(e->args_dirty.v);
}

bool engine_args_check(engine_t *e, size_t *mem, char *why, size_t len)
{
    size_t bytes = 0, in_lru = 0, lru = 0;
    for (size_t i = 0; i < htab_cap(&e->args_cache); i++) {
        const args_entry *a = e->args_cache.slots[i].item;
        if (!a) continue;
        bytes += entry_mem(a->len);
        in_lru += a->in_lru;
        const job *j = engine_job_find(e, a->id);
        if (!a->gone && (!j || !(j->flags & JF_ARGS_OUT) || engine_args_spilled_len(j) != a->len)) {
            snprintf(why, len, "args entry %llu: no spilled job of %u bytes has it",
                     (unsigned long long)a->id, a->len);
            return false;
        }
        if (a->in_lru == (a->pins > 0)) {
            snprintf(why, len, "args entry %llu: %u pins, %s the eviction list",
                     (unsigned long long)a->id, a->pins, a->in_lru ? "in" : "not in");
            return false;
        }
    }
    DLIST_FOREACH(it, &e->args_lru) lru++;
    if (bytes != e->args_cache_bytes || lru != in_lru) {
        snprintf(why, len, "args cache: %zu bytes counted, %zu found; %zu in the list of %zu",
                 e->args_cache_bytes, bytes, lru, in_lru);
        return false;
    }
    *mem = bytes;
    return true;
}
