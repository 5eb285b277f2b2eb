// SPDX-License-Identifier: Apache-2.0
/* Keyed limits: keys, groups, concurrency keys (docs/SEMANTICS.md,
 * "Concurrency keys"; rate keys: key_rate.c; settings: key_settings.c).
 *
 * A key is a string of a tenant (tkey).  As a concurrency key its limit is
 * how many of the jobs that name it may be leased or running at once,
 * across every queue and type of the tenant; the limit in force comes from
 * its settings (the key's own, else the longest prefix's), else from what
 * its last submit said (the job's limit, else its queue's
 * concurrency_limit).
 *
 * A job that names keys lives in a **group**: a node of its own under the
 * job's node (shard, tenant), one per set of keys (and what the jobs gave
 * for each).  A group holds its ready jobs in a ready heap like any node,
 * and sits in its node's heap of groups exactly when it has ready jobs,
 * every concurrency key it names has room (gkeys.full == 0) and its rate
 * keys allow its cost (gkeys.rb.until == 0); the node takes its front from
 * its own jobs and its best group, and is eligible as before.  So a key
 * that reaches its limit takes each of its groups out of its node's heap
 * (O(log n) a group: a key names a group per queue and type it is used
 * in), and the next lease never meets its jobs: nothing is skipped by
 * scanning.  A key that gets room back puts its groups back.
 *
 * Memory: a key and a group each take one allocation, counted in the
 * engine's memory (e->mem_bytes) while jobs name them; a job itself
 * carries nothing more (its keys are its group's). */
#include "internal.h"

/* ---- keys -------------------------------------------------------------------- */

static uint64_t tkey_hash(engine_t *e, const tenant *t, const char *key, size_t len)
{
    return hash_combine(t->hash ^ 0x7e7, hash_bytes(&e->hk, key, len));
}

typedef struct tkey_ref {
    const tenant *t;
    const char *key;
} tkey_ref;

static bool tkey_eq(const void *item, const void *key)
{
    const tkey *k = item;
    const tkey_ref *x = key;
    return k->t == x->t && strcmp(k->key, x->key) == 0;
}

tkey *engine_tkey_find(engine_t *e, const tenant *t, const char *key)
{
    tkey_ref x = {t, key};
    return htab_find(&e->tkeys, tkey_hash(e, t, key, strlen(key)), tkey_eq, &x);
}

static size_t tkey_mem(const tkey *k)
{
    return mem_chunk(sizeof(tkey) + k->klen + 1) + sizeof(htab_slot);
}

/* k reached its limit (full) or got room back: each of its groups counts
 * it, and leaves or joins its node's heap when that decides. */
static void key_full_changed(engine_t *e, tkey *k, bool full)
{
    e->keys_full += full ? 1 : (size_t)-1;
    DLIST_FOREACH(it, &k->groups)
    {
        gkey *gk = DLIST_ITEM(it, gkey, link);
        if (gk->rate) continue;
        node *g = gk->g;
        if (full) {
            if (g->keys->full++ == 0 && g->sidx != HEAP_NONE) engine_group_update(e, g);
        } else {
            if (--g->keys->full == 0 && g->n_ready) engine_group_update(e, g);
        }
    }
}

static uint32_t concurrency_in_force(engine_t *e, tkey *k, const key_setting **from)
{
    *from = engine_key_setting_for(e, k->t, k->key, k->klen, KEY_CONCURRENCY);
    return *from ? (*from)->s.concurrency : k->job_limit;
}

void engine_key_resolve(engine_t *e, int64_t now, tkey *k)
{
    const key_setting *from;
    uint32_t l = concurrency_in_force(e, k, &from);
    k->set = from;
    if (l != k->limit) {
        bool was_full = !key_has_room(k);
        k->limit = l;
        bool full = !key_has_room(k);
        if (full != was_full) key_full_changed(e, k, full);
    }
    if (engine_key_rate_resolve(e, now, k)) engine_key_rate_changed(e, now, k);
}

/* A key named by idle groups only is dormant: no resident job names it,
 * and unless its rate still counts starts (its timer runs until its bucket
 * is full) it is not shown nor counted. */
static bool key_dormant(const tkey *k)
{
    return k->refs > 0 && k->live == 0 && !k->rb.until;
}

/* After a change to k's groups or timer: the count of dormant keys. */
static void dormant_changed(engine_t *e, const tkey *k, bool was)
{
    bool now = key_dormant(k);
    if (now != was) e->keys_dormant += now ? 1 : (size_t)-1;
}

/* k's last group in use went idle: its rate, if its bucket is not full,
 * keeps counting starts (as a key no group names). */
static void key_went_idle(engine_t *e, tkey *k)
{
    bool was = key_dormant(k);
    if (--k->live == 0) engine_key_rate_retire(e, k);
    dormant_changed(e, k, was);
}

static void key_back_in_use(engine_t *e, tkey *k)
{
    bool was = key_dormant(k);
    if (k->live++ == 0) engine_key_rate_unretire(e, k);
    dormant_changed(e, k, was);
}

static tkey *tkey_get(engine_t *e, tenant *t, const char *key, uint64_t hash, bool *fresh)
{
    tkey_ref x = {t, key};
    tkey *k = htab_find(&e->tkeys, hash, tkey_eq, &x);
    *fresh = k == NULL;
    if (k) return k;
    size_t len = strlen(key);
    k = xcalloc(1, sizeof(*k) + len + 1);
    k->t = t;
    k->klen = (uint32_t)len;
    memcpy(k->key, key, len + 1);
    k->hash = hash;
    k->limit = k->job_limit = ENGINE_UNLIMITED;
    engine_rate_init(&k->rb, RB_KEY);
    dlist_init(&k->groups);
    dlist_push_back(&t->keys, &k->in_tenant);
    if (htab_insert(&e->tkeys, k->hash, k) != 0) engine_oom();
    e->mem_bytes += tkey_mem(k);
    return k;
}

static void tkey_free(engine_t *e, tkey *k)
{
    htab_remove(&e->tkeys, k->hash, k);
    dlist_remove(&k->in_tenant);
    e->mem_bytes -= tkey_mem(k);
    free(k);
}

static void tkey_unref(engine_t *e, tkey *k)
{
    bool was = key_dormant(k);
    --k->refs;
    dormant_changed(e, k, was);
    if (k->refs > 0) return;
    /* no group names it, so no job holds it; a rate key stays until its
     * bucket is full again (its timer may run already) */
    if (!k->rb.until && !engine_key_rate_retire(e, k)) tkey_free(e, k);
}

void engine_key_rate_opened(engine_t *e, tkey *k)
{
    if (k->refs == 0)
        tkey_free(e, k);
    else if (k->live == 0) /* its timer ended: dormant now */
        e->keys_dormant++;
}

/* ---- groups ------------------------------------------------------------------ */

/* A group: its node, its keys, then what engine_job_get shows of them. */
static size_t group_size(uint32_t n, uint32_t nc)
{
    return sizeof(node) + sizeof(gkeys) + n * sizeof(gkey) + nc * sizeof(engine_limit_key) +
           (n - nc) * sizeof(engine_rate_key);
}

static size_t group_mem(const node *g)
{
    return mem_chunk(group_size(g->keys->n, g->keys->nc)) + sizeof(htab_slot);
}

/* What a group is made of: each key, and what the jobs gave for it. */
typedef struct group_key {
    const node *home;
    uint32_t n, nc;
    const char *name[2 * ENGINE_JOB_KEYS_MAX]; /* each key, and its tkey's hash */
    uint64_t khash[2 * ENGINE_JOB_KEYS_MAX];
    tkey *k[2 * ENGINE_JOB_KEYS_MAX];
    uint32_t limit[ENGINE_JOB_KEYS_MAX];
    engine_rate_key given[ENGINE_JOB_KEYS_MAX];
} group_key;

static bool rate_given_eq(const engine_rate_key *a, const engine_rate_key *b)
{
    return a->cost == b->cost && a->rate == b->rate && a->rate_period_ms == b->rate_period_ms &&
           a->rate_burst == b->rate_burst;
}

static bool group_eq(const void *item, const void *key)
{
    const node *g = item;
    const group_key *x = key;
    const gkeys *gs = g->keys;
    if (g->parent != x->home || gs->n != x->n || gs->nc != x->nc) return false;
    for (uint32_t i = 0; i < x->n; i++) {
        const tkey *k = gs->v[i].k;
        if (k->hash != x->khash[i] || strcmp(k->key, x->name[i]) != 0) return false;
        if (i < x->nc ? gs->v[i].limit != x->limit[i]
                      : !rate_given_eq(&gs->v[i].given, &x->given[i - x->nc]))
            return false;
    }
    return true;
}

const char *engine_ckey_field(uint32_t i, int part)
{
#define CK_FIELDS(n)                                                                               \
    {                                                                                              \
        "concurrency_keys[" #n "]", "concurrency_keys[" #n "].key",                                \
            "concurrency_keys[" #n "].limit"                                                       \
    }
    static const char *const f[ENGINE_JOB_KEYS_MAX][3] = {CK_FIELDS(0), CK_FIELDS(1), CK_FIELDS(2),
                                                          CK_FIELDS(3)};
#undef CK_FIELDS
    return i < ENGINE_JOB_KEYS_MAX && part >= 0 && part < 3 ? f[i][part] : "concurrency_keys";
}

const char *engine_rkey_field(uint32_t i, int part)
{
#define RK_FIELDS(n)                                                                               \
    {                                                                                              \
        "rate_keys[" #n "]", "rate_keys[" #n "].key", "rate_keys[" #n "].cost",                    \
            "rate_keys[" #n "].rate", "rate_keys[" #n "].rate_period_ms",                          \
            "rate_keys[" #n "].rate_burst"                                                         \
    }
    static const char *const f[ENGINE_JOB_KEYS_MAX][6] = {RK_FIELDS(0), RK_FIELDS(1), RK_FIELDS(2),
                                                          RK_FIELDS(3)};
#undef RK_FIELDS
    return i < ENGINE_JOB_KEYS_MAX && part >= 0 && part < 6 ? f[i][part] : "rate_keys";
}

static int check_rate_key(const engine_rate_key *x, uint32_t i, engine_err *err)
{
    const char *f = NULL;
    if (x->cost > TQ_KEY_LIMIT_MAX) {
        f = engine_rkey_field(i, 2);
        engine_errf(err, TENQ_EINVALID, f, "%s must be from 1 to %d", f, TQ_KEY_LIMIT_MAX);
    } else if (x->rate_period_ms < 0 || x->rate_period_ms > TQ_DAY_MS) {
        f = engine_rkey_field(i, 4);
        engine_errf(err, TENQ_EINVALID, f, "%s must be from 1 to %lld (a day)", f,
                    (long long)TQ_DAY_MS);
    } else if (x->rate_burst > TQ_RATE_BURST_MAX) {
        f = engine_rkey_field(i, 5);
        engine_errf(err, TENQ_EINVALID, f, "%s must be from 1 to %d", f, TQ_RATE_BURST_MAX);
    } else if (!x->rate && (x->rate_period_ms || x->rate_burst)) {
        f = engine_rkey_field(i, 3);
        engine_errf(err, TENQ_EINVALID, f, "%s is required with rate_period_ms or rate_burst", f);
    } else {
        uint32_t burst = x->rate_burst ? x->rate_burst : x->rate;
        uint32_t cost = x->cost ? x->cost : 1;
        if (x->rate && cost > burst) {
            f = engine_rkey_field(i, 2);
            engine_errf(err, TENQ_EINVALID, f,
                        "%s: a start of cost %u can never fit the key's burst of %u", f, cost,
                        burst);
        }
    }
    return f ? TENQ_EINVALID : 0;
}

int engine_keys_check(const engine_submit_req *r, engine_err *err)
{
    if (r->n_concurrency_keys > ENGINE_JOB_KEYS_MAX) {
        engine_errf(err, TENQ_EINVALID, "concurrency_keys",
                    "a job names at most %d concurrency keys, not %u", ENGINE_JOB_KEYS_MAX,
                    r->n_concurrency_keys);
        return TENQ_EINVALID;
    }
    if (r->n_rate_keys > ENGINE_JOB_KEYS_MAX) {
        engine_errf(err, TENQ_EINVALID, "rate_keys", "a job names at most %d rate keys, not %u",
                    ENGINE_JOB_KEYS_MAX, r->n_rate_keys);
        return TENQ_EINVALID;
    }
    for (int kind = 0; kind < 2; kind++) {
        uint32_t n = kind ? r->n_rate_keys : r->n_concurrency_keys;
        for (uint32_t i = 0; i < n; i++) {
            const char *key = kind ? r->rate_keys[i].key : r->concurrency_keys[i].key;
            const char *field = kind ? engine_rkey_field(i, 1) : engine_ckey_field(i, 1);
            if (!key) {
                engine_errf(err, TENQ_EINVALID, field, "%s is required", field);
                return TENQ_EINVALID;
            }
            if (engine_check_name(ENGINE_KEY, field, key, err)) return TENQ_EINVALID;
            for (uint32_t k = 0; k < i; k++) {
                const char *other = kind ? r->rate_keys[k].key : r->concurrency_keys[k].key;
                if (strcmp(other, key) == 0) {
                    engine_errf(err, TENQ_EINVALID, field, "%s: the job names key \"%s\" twice",
                                field, key);
                    return TENQ_EINVALID;
                }
            }
            if (!kind && r->concurrency_keys[i].limit > TQ_KEY_LIMIT_MAX) {
                engine_errf(err, TENQ_EINVALID, engine_ckey_field(i, 2), "%s must be from 1 to %d",
                            engine_ckey_field(i, 2), TQ_KEY_LIMIT_MAX);
                return TENQ_EINVALID;
            }
            if (kind && check_rate_key(&r->rate_keys[i], i, err)) return TENQ_EINVALID;
        }
    }
    return 0;
}

int engine_keys_check_settings(engine_t *e, const tenant *t, const engine_submit_req *r,
                               engine_err *err)
{
    for (uint32_t i = 0; t && i < r->n_rate_keys; i++) {
        const engine_rate_key *x = &r->rate_keys[i];
        const key_setting *s = engine_key_setting_for(e, t, x->key, strlen(x->key), KEY_RATE);
        if (!s) continue;
        uint32_t burst = s->s.rate_burst == ENGINE_UNLIMITED ? s->s.rate : s->s.rate_burst;
        uint32_t cost = x->cost ? x->cost : 1;
        if (cost > burst) {
            engine_errf(err, TENQ_EINVALID, engine_rkey_field(i, 2),
                        "%s: a start of cost %u can never fit the burst of %u that key %s's "
                        "setting (%s) gives it",
                        engine_rkey_field(i, 2), cost, burst, x->key, s->key);
            return TENQ_EINVALID;
        }
    }
    return 0;
}

/* The keys of a submit in their text's order (concurrency keys, then rate
 * keys), so that a set of keys is one group whatever order jobs name them
 * in. */
static void sort_idx(uint32_t *order, uint32_t n, const char *(*key_at)(const void *, uint32_t),
                     const void *v)
{
    for (uint32_t i = 0; i < n; i++) {
        uint32_t at = i;
        while (at > 0 && strcmp(key_at(v, order[at - 1]), key_at(v, i)) > 0) {
            order[at] = order[at - 1];
            at--;
        }
        order[at] = i;
    }
}

static const char *ck_at(const void *v, uint32_t i)
{
    return ((const engine_limit_key *)v)[i].key;
}

static const char *rk_at(const void *v, uint32_t i)
{
    return ((const engine_rate_key *)v)[i].key;
}

/* What the last submit naming k said of its limit or rate (a setting
 * wins): k is resolved again when that changed; settings resolve their keys
 * when they change (key_settings.c). */
static void key_given_limit(engine_t *e, int64_t now, tkey *k, uint32_t limit, bool fresh)
{
    if (!fresh && k->job_limit == limit) return;
    k->job_limit = limit;
    engine_key_resolve(e, now, k);
}

static void key_given_rate(engine_t *e, int64_t now, tkey *k, const engine_rate_key *x, bool fresh)
{
    if (x->rate && (k->job_rate != x->rate || k->job_period != x->rate_period_ms ||
                    k->job_burst != x->rate_burst)) {
        k->job_rate = x->rate;
        k->job_period = x->rate_period_ms;
        k->job_burst = x->rate_burst;
        fresh = true;
    }
    if (fresh) engine_key_resolve(e, now, k);
}

node *engine_group_for(engine_t *e, int64_t now, node *home, const engine_queue_settings *qs,
                       const engine_limit_key *ck, uint32_t n_ck, const engine_rate_key *rk,
                       uint32_t n_rk)
{
    if (n_ck + n_rk == 0) return home;
    uint32_t co[ENGINE_JOB_KEYS_MAX], ro[ENGINE_JOB_KEYS_MAX];
    sort_idx(co, n_ck, ck_at, ck);
    sort_idx(ro, n_rk, rk_at, rk);
    group_key gk = {.home = home, .n = n_ck + n_rk, .nc = n_ck};
    /* the group is found by its keys' text: a key's own record is looked
     * up only for a new group */
    uint64_t h = hash_combine(home->hash, 0x6b657973);
    for (uint32_t i = 0; i < n_ck; i++) {
        const engine_limit_key *x = &ck[co[i]];
        gk.name[i] = x->key;
        gk.khash[i] = tkey_hash(e, home->t, x->key, strlen(x->key));
        gk.limit[i] = x->limit;
        h = hash_combine(h, gk.khash[i] ^ x->limit);
    }
    for (uint32_t i = 0; i < n_rk; i++) {
        const engine_rate_key *x = &rk[ro[i]];
        gk.name[n_ck + i] = x->key;
        gk.khash[n_ck + i] = tkey_hash(e, home->t, x->key, strlen(x->key));
        gk.given[i] = *x;
        gk.given[i].key = NULL;
        h = hash_combine(h, gk.khash[n_ck + i] ^ 0x7a7e ^ x->cost ^ (uint64_t)x->rate << 32);
    }
    node *g = htab_find(&e->groups, h, group_eq, &gk);
    if (g) {
        const gkeys *gs = g->keys;
        if (g->refs == 0) { /* idle: back in use */
            dlist_remove(&g->in_tenant);
            e->n_idle_groups--;
            for (uint32_t i = 0; i < gs->n; i++) key_back_in_use(e, gs->v[i].k);
        }
        for (uint32_t i = 0; i < n_ck; i++) {
            uint32_t l = ck[co[i]].limit;
            key_given_limit(e, now, gs->v[i].k, l ? l : qs->concurrency_limit, false);
        }
        for (uint32_t i = 0; i < n_rk; i++)
            key_given_rate(e, now, gs->v[n_ck + i].k, &rk[ro[i]], false);
        return g;
    }
    for (uint32_t i = 0; i < n_ck; i++) {
        bool fresh;
        tkey *k = gk.k[i] = tkey_get(e, home->t, gk.name[i], gk.khash[i], &fresh);
        uint32_t l = gk.limit[i];
        key_given_limit(e, now, k, l ? l : qs->concurrency_limit, fresh);
    }
    for (uint32_t i = 0; i < n_rk; i++) {
        bool fresh;
        tkey *k = gk.k[n_ck + i] =
            tkey_get(e, home->t, gk.name[n_ck + i], gk.khash[n_ck + i], &fresh);
        key_given_rate(e, now, k, &rk[ro[i]], fresh);
    }
    g = xcalloc(1, group_size(gk.n, gk.nc));
    g->sh = home->sh;
    g->t = home->t;
    g->p = home->p;
    g->hash = h;
    g->sidx = HEAP_NONE;
    g->aidx = HEAP_NONE;
    g->parent = home;
    home->refs++;
    gkeys *gs = (gkeys *)(g + 1);
    g->keys = gs;
    gs->hash = h;
    gs->n = (uint8_t)gk.n;
    gs->nc = (uint8_t)gk.nc;
    gs->cout = (engine_limit_key *)(void *)&gs->v[gk.n];
    gs->rout = (engine_rate_key *)(void *)&gs->cout[gk.nc];
    engine_rate_init(&gs->rb, RB_GROUP);
    for (uint32_t i = 0; i < gk.n; i++) {
        gkey *v = &gs->v[i];
        tkey *k = gk.k[i];
        v->k = k;
        v->g = g;
        v->rate = i >= gk.nc;
        bool was = key_dormant(k);
        k->refs++;
        if (k->live++ == 0) engine_key_rate_unretire(e, k);
        dormant_changed(e, k, was);
        dlist_push_back(&k->groups, &v->link);
        if (!v->rate) {
            v->limit = gk.limit[i];
            if (!key_has_room(k)) gs->full++;
            gs->cout[i] = (engine_limit_key){k->key, v->limit};
        } else {
            v->given = gk.given[i - gk.nc];
            gs->rout[i - gk.nc] = v->given;
            gs->rout[i - gk.nc].key = k->key;
        }
    }
    if (htab_insert(&e->groups, h, g) != 0) engine_oom();
    e->mem_bytes += group_mem(g);
    engine_group_rate_eval(e, now, g);
    return g;
}

/* Idle groups kept at most: a quarter of all groups, and at least this
 * many. */
#define IDLE_GROUPS_MIN 4096

void engine_group_idle(engine_t *e, node *g)
{
    const gkeys *gs = g->keys;
    for (uint32_t i = 0; i < gs->n; i++) key_went_idle(e, gs->v[i].k);
    /* the node's in_tenant link is free in a group: it holds the idle list */
    dlist_push_back(&e->idle_groups, &g->in_tenant);
    e->n_idle_groups++;
    size_t most = e->groups.len / 4 > IDLE_GROUPS_MIN ? e->groups.len / 4 : IDLE_GROUPS_MIN;
    while (e->n_idle_groups > most) {
        node *old = DLIST_ITEM(e->idle_groups.head.next, node, in_tenant);
        dlist_remove(&old->in_tenant);
        e->n_idle_groups--;
        engine_group_free(e, old);
    }
}

void engine_group_free(engine_t *e, node *g)
{
    node *home = g->parent;
    gkeys *gs = g->keys;
    e->mem_bytes -= group_mem(g);
    htab_remove(&e->groups, g->hash, g);
    if (gs->rb.until) engine_rate_timer_clear(e, &gs->rb);
    for (uint32_t i = 0; i < gs->n; i++) {
        dlist_remove(&gs->v[i].link);
        tkey_unref(e, gs->v[i].k);
    }
    ready_heap_free(&g->jobs);
    ready_heap_free(&g->rising);
    free(g);
    engine_node_unref(e, home);
}

/* ---- slots -------------------------------------------------------------------- */

void engine_keys_take(engine_t *e, const job *j)
{
    const gkeys *gs = j->node->keys;
    for (uint32_t i = 0; i < gs->nc; i++) {
        tkey *k = gs->v[i].k;
        bool had = key_has_room(k);
        k->active++;
        if (had && !key_has_room(k)) key_full_changed(e, k, true);
    }
}

void engine_keys_release(engine_t *e, const job *j)
{
    const gkeys *gs = j->node->keys;
    for (uint32_t i = 0; i < gs->nc; i++) {
        tkey *k = gs->v[i].k;
        bool had = key_has_room(k);
        k->active--;
        if (!had && key_has_room(k)) key_full_changed(e, k, false);
    }
}

/* A leased or running job that names k (for "why a job waits": O(leased)). */
static uint64_t key_holder(const engine_t *e, const tkey *k)
{
    for (uint32_t i = 0; i < e->leases.n; i++) {
        const job *j = e->leases.a[i].j;
        const gkeys *gs = j->node->keys;
        for (uint32_t x = 0; gs && x < gs->nc; x++)
            if (gs->v[x].k == k) return j->id;
    }
    return 0;
}

bool engine_keys_wait(engine_t *e, const job *j, engine_wait *out)
{
    const gkeys *gs = j->node->keys;
    for (uint32_t i = 0; i < gs->nc; i++) {
        const tkey *k = gs->v[i].k;
        if (key_has_room(k)) continue;
        out->kind = ENGINE_WAIT_CONCURRENCY_KEY;
        out->key = k->key;
        out->active = k->active;
        out->limit = k->limit;
        out->held_by = key_holder(e, k);
        return true;
    }
    return engine_keys_rate_wait(j, out);
}

/* ---- reading ------------------------------------------------------------------- */

static void key_info(const tkey *k, int64_t now, engine_key_info *o)
{
    memset(o, 0, sizeof(*o));
    o->tenant = k->t->name;
    o->key = k->key;
    o->limit = k->limit;
    o->active = k->active;
    o->setting = k->set ? k->set->key : NULL;
    o->rate = ENGINE_UNLIMITED;
    if (k->rb.t) {
        const key_setting *s = k->rate_set;
        o->rate = s ? s->s.rate : k->job_rate;
        o->rate_period_ms = s ? s->s.rate_period_ms : (k->job_period ? k->job_period : 1000);
        o->rate_burst = k->burst;
        o->rate_until = engine_key_rate_until(k, now);
        o->rate_setting = s ? s->key : NULL;
    }
    DLIST_FOREACH(it, &k->groups)
    {
        const gkey *v = DLIST_ITEM(it, gkey, link);
        o->ready += v->g->n_ready;
        if (v->rate ? v->g->keys->rb.until != 0 : !key_has_room(k)) o->held += v->g->n_ready;
    }
}

/* Whether resident jobs name k (or its rate still counts starts); a key of
 * idle groups alone is kept for them only. */
static bool key_shown(const tkey *k)
{
    return !key_dormant(k);
}

bool engine_key_info_get(engine_t *e, int64_t now, const char *tenant_name, const char *key,
                         engine_key_info *out)
{
    tenant *t = engine_tenant_find(e, tenant_name);
    tkey *k = t ? engine_tkey_find(e, t, key) : NULL;
    if (k && !key_shown(k)) k = NULL;
    if (k) key_info(k, now, out);
    return k != NULL;
}

static bool names_ckey(const job *j, const tkey *k)
{
    const gkeys *gs = j->node->keys;
    for (uint32_t x = 0; gs && x < gs->nc; x++)
        if (gs->v[x].k == k) return true;
    return false;
}

static bool has_id(const uint64_t *v, size_t n, uint64_t id)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] == id) return true;
    return false;
}

void engine_key_jobs(engine_t *e, const char *tenant_name, const char *key, size_t max,
                     uint64_t *holders, size_t *nh, uint64_t *ready, size_t *nr)
{
    *nh = *nr = 0;
    tenant *t = engine_tenant_find(e, tenant_name);
    tkey *k = t ? engine_tkey_find(e, t, key) : NULL;
    if (!k) return;
    for (uint32_t i = 0; i < e->leases.n && *nh < max; i++)
        if (names_ckey(e->leases.a[i].j, k)) holders[(*nh)++] = e->leases.a[i].j->id;
    DLIST_FOREACH(it, &k->groups)
    {
        const node *g = DLIST_ITEM(it, gkey, link)->g;
        /* the heap's entries, stale ones skipped: its jobs in no order */
        for (uint32_t x = 0; x < g->jobs.n && *nr < max; x++) {
            const job *j = engine_job_find(e, g->jobs.a[x].id);
            if (j && j->state == ENGINE_READY && j->node == g && !has_id(ready, *nr, j->id))
                ready[(*nr)++] = j->id;
        }
        if (*nr == max) break;
    }
}

static bool info_at_limit(const engine_key_info *a)
{
    return a->active >= a->limit || a->rate_until != 0;
}

/* Fullest first: at the limit, held jobs, active, then the key's text. */
static bool info_before(const engine_key_info *a, const engine_key_info *b)
{
    bool fa = info_at_limit(a) || a->held > 0, fb = info_at_limit(b) || b->held > 0;
    if (fa != fb) return fa;
    if (a->held != b->held) return a->held > b->held;
    if (a->active != b->active) return a->active > b->active;
    int c = strcmp(a->tenant, b->tenant);
    return c ? c < 0 : strcmp(a->key, b->key) < 0;
}

size_t engine_keys_list(engine_t *e, int64_t now, const char *tenant_name, bool at_limit_only,
                        size_t max, engine_key_info *out, size_t *total)
{
    size_t n = 0, all = 0;
    for (size_t i = 0; i < htab_cap(&e->tkeys); i++) {
        const tkey *k = e->tkeys.slots[i].item;
        if (!k || (tenant_name && strcmp(k->t->name, tenant_name) != 0) || !key_shown(k)) continue;
        engine_key_info x;
        key_info(k, now, &x);
        if (at_limit_only && !info_at_limit(&x)) continue;
        all++;
        if (max == 0 || (n == max && !info_before(&x, &out[n - 1]))) continue;
        size_t pos = n < max ? n : max - 1;
        while (pos > 0 && info_before(&x, &out[pos - 1])) {
            out[pos] = out[pos - 1];
            pos--;
        }
        out[pos] = x;
        if (n < max) n++;
    }
    if (total) *total = all;
    return n;
}

size_t engine_key_count(const engine_t *e)
{
    return e->tkeys.len - e->keys_dormant;
}

size_t engine_keys_at_limit(const engine_t *e)
{
    return e->keys_full;
}

void engine_keys_free(engine_t *e)
{
    for (size_t i = 0; i < htab_cap(&e->groups); i++) {
        node *g = e->groups.slots[i].item;
        if (!g) continue;
        ready_heap_free(&g->jobs);
        ready_heap_free(&g->rising);
        free(g);
    }
    htab_free(&e->groups);
    for (size_t i = 0; i < htab_cap(&e->tkeys); i++) free(e->tkeys.slots[i].item);
    htab_free(&e->tkeys);
    engine_key_settings_free(e);
}

/* ---- checks -------------------------------------------------------------------- */

static bool check_key(engine_t *e, tkey *k, size_t *full, size_t *dormant, char *why, size_t len)
{
    uint32_t refs = 0, live = 0;
    DLIST_FOREACH(it, &k->groups)
    {
        refs++;
        live += DLIST_ITEM(it, gkey, link)->g->refs > 0;
    }
    if (live != k->live) {
        snprintf(why, len, "key %s/%s: %u groups in use name it, counted %u", k->t->name, k->key,
                 live, k->live);
        return false;
    }
    *dormant += key_dormant(k);
    const key_setting *from;
    uint32_t want = concurrency_in_force(e, k, &from);
    /* a key no group in use names is kept only for its rate (its timer),
     * or for its idle groups */
    bool kept = refs == 0 && k->rb.until != 0;
    if (refs != k->refs || (refs == 0 && !kept) || want != k->limit || from != k->set ||
        !engine_rate_check(e, &k->rb) || (live && k->rb.until)) {
        snprintf(why, len, "key %s/%s: %u groups name it (refs %u), limit %u (wants %u)",
                 k->t->name, k->key, refs, k->refs, k->limit, want);
        return false;
    }
    *full += !key_has_room(k);
    uint32_t active = 0;
    for (uint32_t x = 0; x < e->leases.n; x++) {
        const gkeys *gs = e->leases.a[x].j->node->keys;
        for (uint32_t y = 0; gs && y < gs->nc; y++) active += gs->v[y].k == k;
    }
    if (active != k->active) {
        snprintf(why, len, "key %s/%s: %u active, counted %u", k->t->name, k->key, k->active,
                 active);
        return false;
    }
    return true;
}

static bool check_group(engine_t *e, int64_t now, node *g, char *why, size_t len)
{
    const gkeys *gs = g->keys;
    uint8_t f = 0;
    for (uint32_t x = 0; x < gs->n; x++) {
        if (x < gs->nc) f += !key_has_room(gs->v[x].k);
        if (gs->v[x].g != g || gs->v[x].rate != (x >= gs->nc)) {
            snprintf(why, len, "group %llx: a key's link is not its own",
                     (unsigned long long)g->hash);
            return false;
        }
    }
    bool want = g->n_ready > 0 && f == 0 && !gs->rb.until;
    const gheap *h = &g->parent->groups;
    bool in = g->sidx != HEAP_NONE && g->sidx < h->n && h->a[g->sidx].g == g;
    if (f != gs->full || want != in || (g->sidx != HEAP_NONE && !in) ||
        (g->refs == 0 && g->n_ready)) {
        snprintf(why, len,
                 "group of %s/%s/%s: %u keys full (counted %u), eligible %d, in heap %d, refs %u",
                 g->sh->q->name, g->sh->type, g->t->name, gs->full, f, want, in, g->refs);
        return false;
    }
    if (!engine_keys_rate_check(e, now, g, why, len)) return false;
    if (in && (g->k != node_top(g)->k || g->kid != node_top(g)->id)) {
        snprintf(why, len, "group of %s/%s/%s: cached front is stale", g->sh->q->name, g->sh->type,
                 g->t->name);
        return false;
    }
    return true;
}

bool engine_keys_check_all(engine_t *e, int64_t now, size_t *mem, char *why, size_t len)
{
    size_t m = 0, full = 0, dormant = 0, idle = 0, listed = 0;
    for (size_t i = 0; i < htab_cap(&e->tkeys); i++) {
        tkey *k = e->tkeys.slots[i].item;
        if (!k) continue;
        m += tkey_mem(k);
        if (!check_key(e, k, &full, &dormant, why, len)) return false;
    }
    if (full != e->keys_full || dormant != e->keys_dormant) {
        snprintf(why, len, "%zu keys at their limit, counted %zu; %zu dormant, counted %zu",
                 e->keys_full, full, e->keys_dormant, dormant);
        return false;
    }
    for (size_t i = 0; i < htab_cap(&e->groups); i++) {
        node *g = e->groups.slots[i].item;
        if (!g) continue;
        m += group_mem(g);
        idle += g->refs == 0;
        if (!check_group(e, now, g, why, len)) return false;
    }
    DLIST_FOREACH(it, &e->idle_groups)
    {
        listed++;
        if (DLIST_ITEM(it, node, in_tenant)->refs != 0) {
            snprintf(why, len, "a group in use is listed as idle");
            return false;
        }
    }
    if (idle != e->n_idle_groups || listed != idle) {
        snprintf(why, len, "%zu idle groups, counted %zu, listed %zu", e->n_idle_groups, idle,
                 listed);
        return false;
    }
    *mem = m;
    return true;
}
