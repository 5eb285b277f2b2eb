// SPDX-License-Identifier: Apache-2.0
/* engine_check: a full recount of every invariant, for tests.  O(n). */
#include "internal.h"

#include <stdarg.h>

typedef struct chk {
    char *buf;
    size_t len;
    bool failed;
} chk;

static int fail(chk *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(chk *c, const char *fmt, ...)
{
    if (!c->failed && c->buf && c->len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->buf, c->len, fmt, ap);
        va_end(ap);
    }
    c->failed = true;
    return -1;
}

#define CHECK(c, cond, ...)                                                                        \
    do {                                                                                           \
        if (!(cond)) return fail((c), __VA_ARGS__);                                                \
    } while (0)

static bool counters_equal(const counters *a, const counters *b)
{
    for (int s = 0; s < ENGINE_SUCCEEDED; s++)
        if (a->n[s] != b->n[s]) return false;
    return a->queued_bytes == b->queued_bytes;
}

/* Recount storage, keyed by object pointer through a small side table. */
typedef struct recount {
    const void *key;
    counters c;
    uint32_t active;
} recount;

typedef struct rtab {
    htab t;
    recount **all;
    size_t n, cap;
    uint64_t batch_members; /* resident jobs of batches */
} rtab;

static bool rc_eq(const void *item, const void *key)
{
    return ((const recount *)item)->key == key;
}

static recount *rget(rtab *r, const void *key)
{
    uint64_t h = hash_u64((uint64_t)(uintptr_t)key);
    recount *x = htab_find(&r->t, h, rc_eq, key);
    if (x) return x;
    x = xcalloc(1, sizeof(*x));
    x->key = key;
    htab_insert(&r->t, h, x);
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 64;
        r->all = xrealloc(r->all, r->cap * sizeof(*r->all));
    }
    r->all[r->n++] = x;
    return x;
}

static void rfree(rtab *r)
{
    for (size_t i = 0; i < r->n; i++) free(r->all[i]);
    free(r->all);
    htab_free(&r->t);
}

static void collect_job(void *ctx, uint64_t id, void *item)
{
    (void)id;
    ptr_vec_push(ctx, item);
}

static int check_jobs_(engine_t *e, chk *c, int64_t now, rtab *rt, ptr_vec *all);

static int check_jobs(engine_t *e, chk *c, int64_t now, rtab *rt)
{
    ptr_vec all = {0};
    idtab_foreach(&e->jobs, collect_job, &all);
    int rc = check_jobs_(e, c, now, rt, &all);
    free(all.v);
    return rc;
}

static int check_jobs_(engine_t *e, chk *c, int64_t now, rtab *rt, ptr_vec *allv)
{
    counters total = {0};
    size_t resident = 0, mem = 0, spilled = 0;
    for (size_t i = 0; i < allv->n; i++) {
        job *j = allv->v[i];
        engine_state s = (engine_state)j->state;
        mem += mem_job(job_inline_len(j));
        spilled += (j->flags & JF_ARGS_OUT) != 0;
        if (j->extra) mem += mem_chunk(sizeof(job_extra));
        if (j->in_lane) mem += mem_chunk(sizeof(lane_link));
        if (j->extra && j->extra->steps) mem += engine_steps_mem(j->extra->steps);
        for (uint32_t k = 0; j->extra && k < j->extra->pl.n; k++)
            mem += mem_payload(j->extra->pl.v[k].len);
        if (s >= ENGINE_SUCCEEDED) {
            CHECK(c, s < ENGINE_NSTATES, "job %llu has no state", (unsigned long long)j->id);
            bool listed = false;
            for (size_t g = 0; g < e->graveyard.n; g++) listed |= e->graveyard.v[g] == j;
            CHECK(c, listed, "finished job %llu is resident but not in the graveyard",
                  (unsigned long long)j->id);
            CHECK(c, j->hidx == HEAP_NONE, "finished job %llu is in a heap",
                  (unsigned long long)j->id);
            continue;
        }
        resident++;
        total.n[s]++;
        CHECK(c,
              !(j->flags & JF_IN_BATCH) ==
                  !(j->extra && j->extra->batch && j->extra->batch_role == ENGINE_BATCH_MEMBER),
              "job %llu: its batch flag and its batch disagree", (unsigned long long)j->id);
        if (j->flags & JF_IN_BATCH) {
            rget(rt, j->extra->batch)->c.n[s]++;
            rt->batch_members++;
        }
        pair *p = job_pair(j);
        rget(rt, p)->c.n[s]++;
        rget(rt, p->q)->c.n[s]++;
        rget(rt, p->t)->c.n[s]++;
        if (state_unfinished(s)) {
            uint64_t b = engine_job_data_bytes(j);
            total.queued_bytes += b;
            rget(rt, p)->c.queued_bytes += b;
            rget(rt, p->q)->c.queued_bytes += b;
            rget(rt, p->t)->c.queued_bytes += b;
        }
        if (j->flags & JF_HAS_PAYLOADS) {
            uint64_t b = 0;
            for (uint32_t i = 0; i < j->extra->pl.n; i++) b += j->extra->pl.v[i].len;
            CHECK(c, b == j->extra->pl.bytes, "job %llu: its payloads hold %llu bytes, not %llu",
                  (unsigned long long)j->id, (unsigned long long)b,
                  (unsigned long long)j->extra->pl.bytes);
        }
        if (s == ENGINE_LEASED || s == ENGINE_RUNNING) {
            rget(rt, p)->active++;
            rget(rt, p->t)->active++;
            CHECK(c, j->extra && j->hidx < e->leases.n && e->leases.a[j->hidx].j == j,
                  "leased job %llu is not in the lease heap", (unsigned long long)j->id);
            CHECK(c, j->extra->token > 0, "leased job %llu has no token",
                  (unsigned long long)j->id);
        } else if (s == ENGINE_READY) {
            CHECK(c, j->hidx == HEAP_NONE, "ready job %llu has a heap position",
                  (unsigned long long)j->id);
            rget(rt, j->node)->active++; /* ready count per node */
        } else if (s == ENGINE_SCHEDULED) {
            CHECK(c, j->hidx < e->timers.n && e->timers.a[j->hidx].j == j,
                  "scheduled job %llu is not in the timer heap", (unsigned long long)j->id);
        } else if (s == ENGINE_WAITING && job_parked(j) && j->extra->steps->until) {
            CHECK(c,
                  j->extra->steps->park == PARK_EVENT && j->hidx < e->waits.n &&
                      e->waits.a[j->hidx].j == j,
                  "job %llu waiting for an event is not in the waits heap",
                  (unsigned long long)j->id);
        } else {
            CHECK(c, j->hidx == HEAP_NONE, "%s job %llu is in a heap", engine_state_name(s),
                  (unsigned long long)j->id);
        }
        if (s == ENGINE_DEAD) {
            CHECK(c, j->extra && j->extra->dl, "dead job %llu is not in the morgue",
                  (unsigned long long)j->id);
        } else if (j->extra) {
            CHECK(c, !j->extra->dl, "%s job %llu has morgue links", engine_state_name(s),
                  (unsigned long long)j->id);
        }
        if (s == ENGINE_BLOCKED)
            CHECK(c, j->in_lane && j->in_lane->lane->head != j,
                  "blocked job %llu is not behind a lane head", (unsigned long long)j->id);
        if (j->in_lane && s <= ENGINE_RUNNING && s != ENGINE_BLOCKED && s != ENGINE_WAITING)
            CHECK(c, j->in_lane->lane->head == j, "%s job %llu is not its lane's head",
                  engine_state_name(s), (unsigned long long)j->id);
        {
            char why[160];
            CHECK(c, engine_deps_consistent(e, j, why, sizeof why), "%s", why);
        }
        if (j->flags & JF_IN_UNIQ)
            CHECK(c, s <= ENGINE_RUNNING && j->extra && j->extra->unique_key,
                  "job %llu is in the dedup table while %s", (unsigned long long)j->id,
                  engine_state_name(s));
    }
    CHECK(c, counters_equal(&total, &e->c), "global counters differ from a recount");
    {
        char why[200];
        size_t cache = 0;
        CHECK(c, engine_args_check(e, &cache, why, sizeof why), "%s", why);
        mem += cache;
        size_t ev = 0;
        CHECK(c, engine_steps_check(e, &ev, why, sizeof why), "%s", why);
        mem += ev;
    }
    {
        char why[200];
        CHECK(c, engine_expiry_check(e, why, sizeof why), "%s", why);
    }
    {
        char why[200];
        CHECK(c, engine_aging_check(e, why, sizeof why), "%s", why);
    }
    {
        char why[200];
        size_t keys = 0;
        CHECK(c, engine_keys_check_all(e, now, &keys, why, sizeof why), "%s", why);
        mem += keys;
    }
    CHECK(c, spilled == e->n_spilled, "%zu jobs spilled, counted %zu", spilled, e->n_spilled);
    CHECK(c, mem == e->mem_bytes, "the jobs' memory is counted %zu, a recount finds %zu",
          e->mem_bytes, mem);
    CHECK(c, resident + e->graveyard.n == e->n_jobs,
          "job count %zu, found %zu resident + %zu finished", e->n_jobs, resident, e->graveyard.n);
    return 0;
}

static int check_lanes(engine_t *e, chk *c)
{
    for (size_t i = 0; i < htab_cap(&e->lanes); i++) {
        lane *l = e->lanes.slots[i].item;
        if (!l) continue;
        uint32_t n = 0, active = 0;
        uint64_t last_seq = 0;
        job *prev = NULL;
        for (job *j = l->head; j; j = lane_next(j)) {
            CHECK(c, j->in_lane, "lane %s: job %llu has no lane link", l->key,
                  (unsigned long long)j->id);
            CHECK(c, j->in_lane->prev == prev, "lane %s: broken links", l->key);
            CHECK(c, j->in_lane->lane == l, "lane %s: job %llu points elsewhere", l->key,
                  (unsigned long long)j->id);
            CHECK(c, j->state <= ENGINE_RUNNING, "lane %s holds %s job %llu", l->key,
                  engine_state_name((engine_state)j->state), (unsigned long long)j->id);
            uint64_t seq = j->extra && j->extra->lane_seq ? j->extra->lane_seq : j->id;
            CHECK(c, seq > last_seq, "lane %s out of order at job %llu", l->key,
                  (unsigned long long)j->id);
            last_seq = seq;
            if (j->state == ENGINE_LEASED || j->state == ENGINE_RUNNING) active++;
            if (j != l->head)
                CHECK(c, j->state == ENGINE_BLOCKED || j->state == ENGINE_WAITING,
                      "lane %s: job %llu behind the head is %s", l->key, (unsigned long long)j->id,
                      engine_state_name((engine_state)j->state));
            prev = j;
            n++;
        }
        CHECK(c, prev == l->tail, "lane %s: tail is wrong", l->key);
        CHECK(c, n == l->len, "lane %s: length %u, counted %u", l->key, l->len, n);
        CHECK(c, active <= 1, "lane %s has %u active jobs", l->key, active);
        CHECK(c, l->refs >= l->len, "lane %s: refs %u below length %u", l->key, l->refs, l->len);
    }
    return 0;
}

static int check_sched(engine_t *e, chk *c, rtab *rt)
{
    CHECK(c, engine_heap_check_jobs(&e->timers, 1), "timer heap is out of order");
    CHECK(c, engine_heap_check_jobs(&e->leases, 2), "lease heap is out of order");
    CHECK(c, engine_heap_check_jobs(&e->waits, 3), "waits heap is out of order");
    for (size_t i = 0; i < htab_cap(&e->tenants); i++) {
        tenant *t = e->tenants.slots[i].item;
        if (!t) continue;
        recount *r = rget(rt, t);
        CHECK(c, counters_equal(&r->c, &t->c), "tenant %s: counters differ from a recount",
              t->name);
        CHECK(c, r->active == t->active, "tenant %s: %u active, counted %u", t->name, t->active,
              r->active);
        CHECK(c, engine_rate_check(e, &t->rb), "tenant %s: rate timer is wrong", t->name);
    }
    for (size_t i = 0; i < htab_cap(&e->pairs); i++) {
        pair *p = e->pairs.slots[i].item;
        if (!p) continue;
        recount *r = rget(rt, p);
        CHECK(c, counters_equal(&r->c, &p->c), "pair %s/%s: counters differ", p->q->name,
              p->t->name);
        CHECK(c, r->active == p->active, "pair %s/%s: %u active, counted %u", p->q->name,
              p->t->name, p->active, r->active);
        CHECK(c, engine_rate_check(e, &p->rb), "pair %s/%s: rate timer is wrong", p->q->name,
              p->t->name);
    }
    for (size_t i = 0; i < htab_cap(&e->queues); i++) {
        queue *q = e->queues.slots[i].item;
        if (!q) continue;
        CHECK(c, counters_equal(&rget(rt, q)->c, &q->c), "queue %s: counters differ", q->name);
        CHECK(c, engine_heap_check_shards(&q->shards), "queue %s: shard heap out of order",
              q->name);
        CHECK(c, engine_rate_check(e, &q->rb), "queue %s: rate timer is wrong", q->name);
    }
    for (size_t i = 0; i < htab_cap(&e->shards); i++) {
        shard *sh = e->shards.slots[i].item;
        if (!sh) continue;
        CHECK(c, engine_heap_check_nodes(&sh->nodes), "shard %s/%s: node heap out of order",
              sh->q->name, sh->type);
        CHECK(c, (sh->nodes.n > 0) == (sh->qidx != HEAP_NONE),
              "shard %s/%s: in its queue's heap is wrong", sh->q->name, sh->type);
    }
    for (size_t i = 0; i < htab_cap(&e->groups); i++) {
        node *g = e->groups.slots[i].item;
        if (!g) continue;
        long live = engine_heap_check_node(e, g);
        CHECK(c, live >= 0 && (uint32_t)live == g->n_ready && rget(rt, g)->active == g->n_ready,
              "group of %s/%s/%s: %u ready, %ld live entries, %u ready jobs", g->sh->q->name,
              g->sh->type, g->t->name, g->n_ready, live, rget(rt, g)->active);
        CHECK(c, g->sh == g->parent->sh && g->t == g->parent->t && g->p == g->parent->p,
              "group of %s/%s/%s is not its node's", g->sh->q->name, g->sh->type, g->t->name);
        rget(rt, (const char *)g->parent + 1)->active += g->n_ready;
    }
    for (size_t i = 0; i < htab_cap(&e->nodes); i++) {
        node *n = e->nodes.slots[i].item;
        if (!n) continue;
        CHECK(c, !n->parent && !n->keys, "a group is indexed as a node");
        CHECK(c, rget(rt, (const char *)n + 1)->active == n->n_grp_ready,
              "node %s/%s/%s: its groups hold %u ready jobs, counted %u", n->sh->q->name,
              n->sh->type, n->t->name, rget(rt, (const char *)n + 1)->active, n->n_grp_ready);
        for (uint32_t k = 0; k < n->groups.n; k++) {
            const gheap_entry *x = &n->groups.a[k];
            CHECK(c, x->g->parent == n && x->g->sidx == k && x->k == x->g->k && x->kid == x->g->kid,
                  "node %s/%s/%s: its group heap is wrong", n->sh->q->name, n->sh->type,
                  n->t->name);
        }
        CHECK(c, engine_gheap_ordered(&n->groups), "node %s/%s/%s: its group heap is out of order",
              n->sh->q->name, n->sh->type, n->t->name);
        long live = engine_heap_check_node(e, n);
        CHECK(c, live >= 0, "node %s/%s/%s: heap is out of order or holds a wrong entry",
              n->sh->q->name, n->sh->type, n->t->name);
        CHECK(c, (uint32_t)live == n->n_ready && rget(rt, n)->active == n->n_ready,
              "node %s/%s/%s: %u ready, %ld live entries, %u ready jobs", n->sh->q->name,
              n->sh->type, n->t->name, n->n_ready, live, rget(rt, n)->active);
        bool want =
            (n->n_ready > 0 || n->groups.n > 0) && tenant_has_room(n->t) && pair_has_room(n->p);
        CHECK(c, want == (n->sidx != HEAP_NONE),
              "node %s/%s/%s: eligible=%d but in heap=%d (ready %u, tenant active %u/%u)",
              n->sh->q->name, n->sh->type, n->t->name, want, n->sidx != HEAP_NONE, n->n_ready,
              n->t->active, n->t->s.slots);
        CHECK(c, n->refs > 0, "node with no references is still indexed");
        if (n->sidx != HEAP_NONE) {
            uint64_t k = UINT64_MAX, kid = UINT64_MAX;
            if (n->n_ready) {
                k = node_top(n)->k;
                kid = node_top(n)->id;
            }
            if (n->groups.n) {
                const gheap_entry *g = &n->groups.a[0];
                if (g->k < k || (g->k == k && g->kid < kid)) {
                    k = g->k;
                    kid = g->kid;
                }
            }
            CHECK(c, n->k == k && n->kid == kid && n->pass == n->p->pass,
                  "node %s/%s/%s: cached key is stale", n->sh->q->name, n->sh->type, n->t->name);
        }
        bool listed_t = false, listed_p = false, ready = n->n_ready + n->n_grp_ready > 0;
        DLIST_FOREACH(it, &n->t->ready_nodes) listed_t |= it == &n->in_tenant;
        DLIST_FOREACH(it, &n->p->ready_nodes) listed_p |= it == &n->in_pair;
        CHECK(c, listed_t == ready && listed_p == ready, "node ready-list membership is wrong");
    }
    for (size_t i = 0; i < htab_cap(&e->pairs); i++) {
        pair *p = e->pairs.slots[i].item;
        if (!p) continue;
        uint32_t elig = 0;
        DLIST_FOREACH(it, &p->ready_nodes)
        {
            elig += DLIST_ITEM(it, node, in_pair)->sidx != HEAP_NONE;
        }
        CHECK(c, elig == p->n_eligible, "pair %s/%s: n_eligible %u, counted %u", p->q->name,
              p->t->name, p->n_eligible, elig);
    }
    CHECK(c, e->dead_by_id.len == e->c.n[ENGINE_DEAD], "morgue tree holds %zu, %llu dead",
          e->dead_by_id.len, (unsigned long long)e->c.n[ENGINE_DEAD]);
    return 0;
}

/* Each batch's resident counts are its jobs' (looked up only for batches
 * that count some: a batch that counts none but has some shows in the
 * total); its counts add up to its total; an open batch has no on_complete
 * job; none is left due; every dead or deleted job counts a death. */
static int check_batches(engine_t *e, chk *c, rtab *rt)
{
    uint64_t counted = 0;
    for (size_t i = 0; i < e->batches.n; i++) {
        batch *b = e->batches.v[i];
        CHECK(c, i == 0 || ((batch *)e->batches.v[i - 1])->id < b->id, "batches out of order");
        uint64_t sum = b->deleted, resident = 0;
        for (int s = 0; s < ENGINE_NSTATES; s++) {
            sum += b->n[s];
            if (s <= ENGINE_DEAD) resident += b->n[s];
        }
        CHECK(c, sum == b->total, "batch %llu: counts add up to %llu of %llu",
              (unsigned long long)b->id, (unsigned long long)sum, (unsigned long long)b->total);
        CHECK(c, b->closed_at || !b->cb_id[ENGINE_CB_COMPLETE],
              "open batch %llu has its on_complete job", (unsigned long long)b->id);
        CHECK(c, !b->due, "batch %llu is left due", (unsigned long long)b->id);
        CHECK(c, b->deaths >= b->n[ENGINE_DEAD] + b->deleted,
              "batch %llu counts %llu deaths, has %llu dead and %llu deleted",
              (unsigned long long)b->id, (unsigned long long)b->deaths,
              (unsigned long long)b->n[ENGINE_DEAD], (unsigned long long)b->deleted);
        if (!resident) continue;
        counted += resident;
        recount *r = rget(rt, b);
        for (int s = 0; s <= ENGINE_DEAD; s++)
            CHECK(c, r->c.n[s] == b->n[s], "batch %llu counts %llu %s jobs, has %llu",
                  (unsigned long long)b->id, (unsigned long long)b->n[s],
                  engine_state_name((engine_state)s), (unsigned long long)r->c.n[s]);
    }
    size_t open = 0;
    for (size_t i = 0; i < e->batches.n; i++) open += !((batch *)e->batches.v[i])->closed_at;
    CHECK(c, open == e->batches_open, "%zu batches open, %zu counted", open, e->batches_open);
    CHECK(c, counted == rt->batch_members, "batches count %llu resident jobs, there are %llu",
          (unsigned long long)counted, (unsigned long long)rt->batch_members);
    return 0;
}

int engine_check(engine_t *e, int64_t now, char *buf, size_t len)
{
    chk c = {buf, len, false};
    rtab rt = {0};
    if (buf && len) buf[0] = 0;
    int rc = check_jobs(e, &c, now, &rt);
    if (!rc) rc = check_lanes(e, &c);
    if (!rc) rc = check_sched(e, &c, &rt);
    if (!rc) rc = check_batches(e, &c, &rt);
    rfree(&rt);
    return rc;
}
