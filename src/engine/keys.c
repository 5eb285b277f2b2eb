// SPDX-License-Identifier: Apache-2.0
/* Keyed limits: concurrency keys (docs/SEMANTICS.md, "Keyed limits").
 *
 * A key is a string of a tenant (tkey): its limit is how many of the jobs
 * that name it may be leased or running at once, across every queue and
 * type of the tenant.  Its limit in force comes from its settings (the
 * key's own, else the longest prefix's: key_setting), else from what its
 * last submit said (the job's limit, else its queue's concurrency_limit).
 *
 * A job that names keys lives in a **group**: a node of its own under the
 * job's node (shard, tenant), one per set of keys (and the limits the jobs
 * gave).  A group holds its ready jobs in a ready heap like any node, and
 * sits in its node's heap of groups exactly when it has ready jobs and
 * every key it names has room (gkeys.full == 0); the node takes its front
 * from its own jobs and its best group, and is eligible as before.  So a
 * key that reaches its limit takes each of its groups out of its node's
 * heap (O(log n) a group: a key names a group per queue and type it is
 * used in), and the next lease never meets its jobs: nothing is skipped by
 * scanning.  A key that gets room back puts its groups back.
 *
 * Memory: a key and a group each take one allocation, counted in the
 * engine's memory (e->mem_bytes) while jobs name them; a job itself
 * carries nothing more (its keys are its group's). */
#include "internal.h"

/* ---- settings ---------------------------------------------------------------- */

static uint64_t setting_hash(engine_t *e, const tenant *t, const char *key)
{
    return hash_combine(t->hash ^ 0x6b6579, hash_bytes(&e->hk, key, strlen(key)));
}

typedef struct setting_key {
    const tenant *t;
    const char *key;
} setting_key;

static bool setting_eq(const void *item, const void *key)
{
    const key_setting *s = item;
    const setting_key *k = key;
    return s->t == k->t && strcmp(s->key, k->key) == 0;
}

static key_setting *setting_find(engine_t *e, const tenant *t, const char *key)
{
    setting_key k = {t, key};
    return htab_find(&e->key_settings, setting_hash(e, t, key), setting_eq, &k);
}

static bool is_prefix_setting(const char *key, size_t len)
{
    return len > 0 && key[len - 1] == '*';
}

/* The limit in force for k: its own setting's, else the longest prefix's
 * that sets it, else its jobs'. */
static uint32_t limit_of(engine_t *e, tkey *k, const key_setting **from)
{
    *from = NULL;
    key_setting *own = setting_find(e, k->t, k->key);
    if (own && own->s.concurrency != ENGINE_UNLIMITED) {
        *from = own;
        return own->s.concurrency;
    }
    const key_setting *best = NULL;
    size_t best_len = 0;
    if (k->t->n_prefixes) {
        DLIST_FOREACH(it, &k->t->key_settings)
        {
            const key_setting *s = DLIST_ITEM(it, key_setting, in_tenant);
            if (!s->prefix || s->s.concurrency == ENGINE_UNLIMITED) continue;
            size_t plen = strlen(s->key) - 1;
            if (plen > k->klen || memcmp(s->key, k->key, plen) != 0) continue;
            if (!best || plen > best_len) {
                best = s;
                best_len = plen;
            }
        }
    }
    if (best) {
        *from = best;
        return best->s.concurrency;
    }
    return k->job_limit;
}

/* ---- keys -------------------------------------------------------------------- */

static uint64_t tkey_hash(engine_t *e, const tenant *t, const char *key, size_t len)
{
    return hash_combine(t->hash ^ 0x7e7, hash_bytes(&e->hk, key, len));
}

static bool tkey_eq(const void *item, const void *key)
{
    const tkey *k = item;
    const setting_key *x = key;
    return k->t == x->t && strcmp(k->key, x->key) == 0;
}

static tkey *tkey_find(engine_t *e, const tenant *t, const char *key)
{
    setting_key x = {t, key};
    return htab_find(&e->tkeys, tkey_hash(e, t, key, strlen(key)), tkey_eq, &x);
}

static size_t tkey_mem(const tkey *k)
{
    return mem_chunk(sizeof(tkey) + k->klen + 1) + sizeof(htab_slot);
}

static node *gkey_group(const gkey *g);

/* k reached its limit (full) or got room back: each of its groups counts
 * it, and leaves or joins its node's heap when that decides. */
static void key_full_changed(engine_t *e, tkey *k, bool full)
{
    e->keys_full += full ? 1 : (size_t)-1;
    DLIST_FOREACH(it, &k->groups)
    {
        gkey *gk = DLIST_ITEM(it, gkey, link);
        node *g = gkey_group(gk);
        if (full) {
            if (g->keys->full++ == 0 && g->sidx != HEAP_NONE) engine_group_update(e, g);
        } else {
            if (--g->keys->full == 0 && g->n_ready) engine_group_update(e, g);
        }
    }
}

static void key_set_limit(engine_t *e, tkey *k, uint32_t limit)
{
    bool was_full = !key_has_room(k);
    k->limit = limit;
    bool full = !key_has_room(k);
    if (full != was_full) key_full_changed(e, k, full);
}

static void key_resolve(engine_t *e, tkey *k)
{
    const key_setting *from;
    uint32_t l = limit_of(e, k, &from);
    k->set = from;
    if (l != k->limit) key_set_limit(e, k, l);
}

static tkey *tkey_get(engine_t *e, tenant *t, const char *key, uint32_t job_limit)
{
    tkey *k = tkey_find(e, t, key);
    if (k) {
        if (k->job_limit != job_limit) {
            k->job_limit = job_limit;
            key_resolve(e, k);
        }
        return k;
    }
    size_t len = strlen(key);
    k = xcalloc(1, sizeof(*k) + len + 1);
    k->t = t;
    k->klen = (uint32_t)len;
    memcpy(k->key, key, len + 1);
    k->hash = tkey_hash(e, t, key, len);
    k->job_limit = job_limit;
    dlist_init(&k->groups);
    dlist_push_back(&t->keys, &k->in_tenant);
    const key_setting *from;
    k->limit = limit_of(e, k, &from);
    k->set = from;
    if (htab_insert(&e->tkeys, k->hash, k) != 0) engine_oom();
    e->mem_bytes += tkey_mem(k);
    return k;
}

static void tkey_unref(engine_t *e, tkey *k)
{
    if (--k->refs > 0) return;
    /* no group names it, so no job holds it: it has room */
    htab_remove(&e->tkeys, k->hash, k);
    dlist_remove(&k->in_tenant);
    e->mem_bytes -= tkey_mem(k);
    free(k);
}

/* ---- groups ------------------------------------------------------------------ */

static size_t group_size(uint32_t n)
{
    return sizeof(node) + sizeof(gkeys) + n * sizeof(gkey);
}

static size_t group_mem(const node *g)
{
    return mem_chunk(group_size(g->keys->n)) + sizeof(htab_slot);
}

static node *gkey_group(const gkey *g)
{
    return g->g;
}

typedef struct group_key {
    const node *home;
    uint32_t n;
    tkey *const *k;
    const uint32_t *limit;
} group_key;

static bool group_eq(const void *item, const void *key)
{
    const node *g = item;
    const group_key *x = key;
    if (g->parent != x->home || g->keys->n != x->n) return false;
    for (uint32_t i = 0; i < x->n; i++)
        if (g->keys->v[i].k != x->k[i] || g->keys->v[i].limit != x->limit[i]) return false;
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

int engine_keys_check(const engine_submit_req *r, engine_err *err)
{
    if (r->n_concurrency_keys > ENGINE_JOB_KEYS_MAX) {
        engine_errf(err, TENQ_EINVALID, "concurrency_keys",
                    "a job names at most %d concurrency keys, not %u", ENGINE_JOB_KEYS_MAX,
                    r->n_concurrency_keys);
        return TENQ_EINVALID;
    }
    for (uint32_t i = 0; i < r->n_concurrency_keys; i++) {
        const engine_limit_key *x = &r->concurrency_keys[i];
        const char *key_field = engine_ckey_field(i, 1), *limit_field = engine_ckey_field(i, 2);
        if (!x->key) {
            engine_errf(err, TENQ_EINVALID, key_field, "%s is required", key_field);
            return TENQ_EINVALID;
        }
        if (engine_check_name(ENGINE_KEY, key_field, x->key, err)) return TENQ_EINVALID;
        if (x->limit > TQ_KEY_LIMIT_MAX) {
            engine_errf(err, TENQ_EINVALID, limit_field, "%s must be from 1 to %d", limit_field,
                        TQ_KEY_LIMIT_MAX);
            return TENQ_EINVALID;
        }
        for (uint32_t k = 0; k < i; k++) {
            if (strcmp(r->concurrency_keys[k].key, x->key) == 0) {
                engine_errf(err, TENQ_EINVALID, key_field, "%s: the job names key \"%s\" twice",
                            key_field, x->key);
                return TENQ_EINVALID;
            }
        }
    }
    return 0;
}

node *engine_group_for(engine_t *e, node *home, const engine_queue_settings *qs,
                       const engine_limit_key *ck, uint32_t n_ck)
{
    if (n_ck == 0) return home;
    /* in the order of the keys' text, so that a set of keys is one group
     * whatever order its jobs name them in */
    uint32_t order[ENGINE_JOB_KEYS_MAX];
    for (uint32_t i = 0; i < n_ck; i++) {
        uint32_t at = i;
        while (at > 0 && strcmp(ck[order[at - 1]].key, ck[i].key) > 0) {
            order[at] = order[at - 1];
            at--;
        }
        order[at] = i;
    }
    tkey *ks[ENGINE_JOB_KEYS_MAX];
    uint32_t limits[ENGINE_JOB_KEYS_MAX];
    uint64_t h = hash_combine(home->hash, 0x6b657973);
    for (uint32_t i = 0; i < n_ck; i++) {
        const engine_limit_key *x = &ck[order[i]];
        limits[i] = x->limit;
        /* the last submit that names a key says its limit (a setting wins) */
        ks[i] = tkey_get(e, home->t, x->key, x->limit ? x->limit : qs->concurrency_limit);
        h = hash_combine(h, ks[i]->hash ^ limits[i]);
    }
    group_key gk = {home, n_ck, ks, limits};
    node *g = htab_find(&e->groups, h, group_eq, &gk);
    if (g) return g;
    g = xcalloc(1, group_size(n_ck));
    g->sh = home->sh;
    g->t = home->t;
    g->p = home->p;
    g->hash = h;
    g->sidx = HEAP_NONE;
    g->parent = home;
    home->refs++;
    gkeys *gs = (gkeys *)(g + 1);
    g->keys = gs;
    gs->hash = h;
    gs->n = (uint8_t)n_ck;
    for (uint32_t i = 0; i < n_ck; i++) {
        gkey *v = &gs->v[i];
        v->k = ks[i];
        v->g = g;
        v->limit = limits[i];
        ks[i]->refs++;
        dlist_push_back(&ks[i]->groups, &v->link);
        if (!key_has_room(ks[i])) gs->full++;
        gs->out[i] = (engine_limit_key){ks[i]->key, limits[i]};
    }
    if (htab_insert(&e->groups, h, g) != 0) engine_oom();
    e->mem_bytes += group_mem(g);
    return g;
}

void engine_group_free(engine_t *e, node *g)
{
    node *home = g->parent;
    e->mem_bytes -= group_mem(g);
    htab_remove(&e->groups, g->hash, g);
    for (uint32_t i = 0; i < g->keys->n; i++) {
        dlist_remove(&g->keys->v[i].link);
        tkey_unref(e, g->keys->v[i].k);
    }
    ready_heap_free(&g->jobs);
    free(g);
    engine_node_unref(e, home);
}

/* ---- slots -------------------------------------------------------------------- */

void engine_keys_take(engine_t *e, const job *j)
{
    const gkeys *gs = j->node->keys;
    for (uint32_t i = 0; i < gs->n; i++) {
        tkey *k = gs->v[i].k;
        bool had = key_has_room(k);
        k->active++;
        if (had && !key_has_room(k)) key_full_changed(e, k, true);
    }
}

void engine_keys_release(engine_t *e, const job *j)
{
    const gkeys *gs = j->node->keys;
    for (uint32_t i = 0; i < gs->n; i++) {
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
        for (uint32_t x = 0; gs && x < gs->n; x++)
            if (gs->v[x].k == k) return j->id;
    }
    return 0;
}

bool engine_keys_wait(engine_t *e, const job *j, engine_wait *out)
{
    const gkeys *gs = j->node->keys;
    for (uint32_t i = 0; gs && i < gs->n; i++) {
        const tkey *k = gs->v[i].k;
        if (key_has_room(k)) continue;
        out->kind = ENGINE_WAIT_CONCURRENCY_KEY;
        out->key = k->key;
        out->active = k->active;
        out->limit = k->limit;
        out->held_by = key_holder(e, k);
        return true;
    }
    return false;
}

/* ---- settings: set, delete, load ------------------------------------------------ */

/* The keys a setting may change: its key, or every key of the tenant. */
static void settings_apply(engine_t *e, tenant *t, const char *key, bool prefix)
{
    if (!prefix) {
        tkey *k = tkey_find(e, t, key);
        if (k) key_resolve(e, k);
        return;
    }
    DLIST_FOREACH(it, &t->keys)
    {
        key_resolve(e, DLIST_ITEM(it, tkey, in_tenant));
    }
}

static void setting_note(engine_t *e, key_setting *ks, bool set)
{
    engine_change *c = engine_change_push(e);
    c->kind = ENGINE_CH_KEY_SETTING;
    c->tenant = ks->t->name;
    c->name = ks->key;
    c->fields = set;
    c->key_settings = &ks->s;
}

static int setting_args(engine_t *e, const char *tenant_name, const char *key, engine_err *err)
{
    if (engine_check_name(ENGINE_NAME, "tenant", tenant_name, err) ||
        engine_check_name(ENGINE_KEY, "key", key, err))
        return TENQ_EINVALID;
    if (e->cfg.strict_tenants && !e->loading && !engine_tenant_find(e, tenant_name)) {
        engine_errf(err, TENQ_ENOT_FOUND, "tenant", "no tenant %s", tenant_name);
        return TENQ_ENOT_FOUND;
    }
    return 0;
}

int engine_key_set(engine_t *e, int64_t now, const char *tenant_name, const char *key,
                   const engine_key_settings *s, engine_err *err)
{
    (void)now;
    int rc = setting_args(e, tenant_name, key, err);
    if (rc) return rc;
    rc = engine_key_settings_check(s, err);
    if (rc) return rc;
    size_t len = strlen(key);
    bool prefix = is_prefix_setting(key, len);
    tenant *t = engine_tenant_find(e, tenant_name);
    key_setting *ks = t ? setting_find(e, t, key) : NULL;
    if (!ks && prefix && t && t->n_prefixes >= ENGINE_KEY_PREFIXES_MAX) {
        engine_errf(err, TENQ_EINVALID, "key",
                    "a tenant keeps at most %d settings of key prefixes (\"prefix*\")",
                    ENGINE_KEY_PREFIXES_MAX);
        return TENQ_EINVALID;
    }
    if (!t) t = engine_tenant_get_or_create(e, tenant_name);
    if (!ks) {
        ks = xcalloc(1, sizeof(*ks) + len + 1);
        ks->t = t;
        ks->prefix = prefix;
        memcpy(ks->key, key, len + 1);
        ks->hash = setting_hash(e, t, key);
        if (htab_insert(&e->key_settings, ks->hash, ks) != 0) engine_oom();
        dlist_push_back(&t->key_settings, &ks->in_tenant);
        t->n_prefixes += prefix;
    }
    ks->s = *s;
    if (!e->loading) setting_note(e, ks, true);
    settings_apply(e, t, key, prefix);
    return 0;
}

int engine_load_key_setting(engine_t *e, const char *tenant, const char *key,
                            const engine_key_settings *s, engine_err *err)
{
    return engine_key_set(e, 0, tenant, key, s, err);
}

int engine_key_delete(engine_t *e, int64_t now, const char *tenant_name, const char *key,
                      engine_err *err)
{
    (void)now;
    int rc = setting_args(e, tenant_name, key, err);
    if (rc) return rc;
    tenant *t = engine_tenant_find(e, tenant_name);
    key_setting *ks = t ? setting_find(e, t, key) : NULL;
    if (!ks) {
        engine_errf(err, TENQ_ENOT_FOUND, "key", "tenant %s has no setting of key %s", tenant_name,
                    key);
        return TENQ_ENOT_FOUND;
    }
    htab_remove(&e->key_settings, ks->hash, ks);
    dlist_remove(&ks->in_tenant);
    t->n_prefixes -= ks->prefix;
    ks->gone = true;
    setting_note(e, ks, false);
    ptr_vec_push(&e->key_setting_graveyard, ks);
    settings_apply(e, t, key, ks->prefix);
    return 0;
}

bool engine_key_setting_get(engine_t *e, const char *tenant_name, const char *key,
                            engine_key_settings *s)
{
    tenant *t = engine_tenant_find(e, tenant_name);
    key_setting *ks = t ? setting_find(e, t, key) : NULL;
    if (ks && s) *s = ks->s;
    return ks != NULL;
}

void engine_foreach_key_setting(engine_t *e, const char *tenant_name, engine_key_setting_fn fn,
                                void *ctx)
{
    for (size_t i = 0; i < htab_cap(&e->key_settings); i++) {
        const key_setting *ks = e->key_settings.slots[i].item;
        if (!ks || (tenant_name && strcmp(ks->t->name, tenant_name) != 0)) continue;
        fn(ctx, ks->t->name, ks->key, &ks->s);
    }
}

void engine_keys_changes_clear(engine_t *e)
{
    for (size_t i = 0; i < e->key_setting_graveyard.n; i++) free(e->key_setting_graveyard.v[i]);
    e->key_setting_graveyard.n = 0;
}

/* ---- reading ------------------------------------------------------------------- */

static void key_info(const tkey *k, engine_key_info *o)
{
    memset(o, 0, sizeof(*o));
    o->tenant = k->t->name;
    o->key = k->key;
    o->limit = k->limit;
    o->active = k->active;
    o->setting = k->set ? k->set->key : NULL;
    DLIST_FOREACH(it, &k->groups)
    {
        o->ready += gkey_group(DLIST_ITEM(it, gkey, link))->n_ready;
    }
    o->held = key_has_room(k) ? 0 : o->ready;
}

bool engine_key_info_get(engine_t *e, const char *tenant_name, const char *key,
                         engine_key_info *out)
{
    tenant *t = engine_tenant_find(e, tenant_name);
    tkey *k = t ? tkey_find(e, t, key) : NULL;
    if (k) key_info(k, out);
    return k != NULL;
}

/* Fullest first: held jobs, then active, then the key's text. */
static bool info_before(const engine_key_info *a, const engine_key_info *b)
{
    bool fa = a->held > 0 || a->active >= a->limit, fb = b->held > 0 || b->active >= b->limit;
    if (fa != fb) return fa;
    if (a->held != b->held) return a->held > b->held;
    if (a->active != b->active) return a->active > b->active;
    int c = strcmp(a->tenant, b->tenant);
    return c ? c < 0 : strcmp(a->key, b->key) < 0;
}

size_t engine_keys_list(engine_t *e, const char *tenant_name, bool at_limit_only, size_t max,
                        engine_key_info *out, size_t *total)
{
    size_t n = 0, all = 0;
    for (size_t i = 0; i < htab_cap(&e->tkeys); i++) {
        const tkey *k = e->tkeys.slots[i].item;
        if (!k || (tenant_name && strcmp(k->t->name, tenant_name) != 0)) continue;
        if (at_limit_only && key_has_room(k)) continue;
        all++;
        engine_key_info x;
        key_info(k, &x);
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
    return e->tkeys.len;
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
        free(g);
    }
    htab_free(&e->groups);
    for (size_t i = 0; i < htab_cap(&e->tkeys); i++) free(e->tkeys.slots[i].item);
    htab_free(&e->tkeys);
    for (size_t i = 0; i < htab_cap(&e->key_settings); i++) free(e->key_settings.slots[i].item);
    htab_free(&e->key_settings);
    engine_keys_changes_clear(e);
    free(e->key_setting_graveyard.v);
}

/* ---- checks -------------------------------------------------------------------- */

bool engine_keys_check_all(engine_t *e, size_t *mem, char *why, size_t len)
{
    size_t m = 0, full = 0;
    for (size_t i = 0; i < htab_cap(&e->tkeys); i++) {
        tkey *k = e->tkeys.slots[i].item;
        if (!k) continue;
        m += tkey_mem(k);
        uint32_t refs = 0;
        DLIST_FOREACH(it, &k->groups) refs++;
        const key_setting *from;
        uint32_t want = limit_of(e, k, &from);
        if (refs != k->refs || refs == 0 || want != k->limit || from != k->set) {
            snprintf(why, len, "key %s/%s: %u groups name it (refs %u), limit %u (wants %u)",
                     k->t->name, k->key, refs, k->refs, k->limit, want);
            return false;
        }
        full += !key_has_room(k);
        uint32_t active = 0;
        for (uint32_t x = 0; x < e->leases.n; x++) {
            const gkeys *gs = e->leases.a[x].j->node->keys;
            for (uint32_t y = 0; gs && y < gs->n; y++) active += gs->v[y].k == k;
        }
        if (active != k->active) {
            snprintf(why, len, "key %s/%s: %u active, counted %u", k->t->name, k->key, k->active,
                     active);
            return false;
        }
    }
    if (full != e->keys_full) {
        snprintf(why, len, "%zu keys at their limit, counted %zu", e->keys_full, full);
        return false;
    }
    for (size_t i = 0; i < htab_cap(&e->groups); i++) {
        node *g = e->groups.slots[i].item;
        if (!g) continue;
        m += group_mem(g);
        uint8_t f = 0;
        for (uint32_t x = 0; x < g->keys->n; x++) {
            f += !key_has_room(g->keys->v[x].k);
            if (gkey_group(&g->keys->v[x]) != g) {
                snprintf(why, len, "group %llx: a key's link is not its own",
                         (unsigned long long)g->hash);
                return false;
            }
        }
        bool want = g->n_ready > 0 && f == 0;
        const heap *h = &g->parent->groups;
        bool in = g->sidx != HEAP_NONE && g->sidx < h->n && h->a[g->sidx] == g;
        if (f != g->keys->full || want != in || (g->sidx != HEAP_NONE && !in) || g->refs == 0) {
            snprintf(why, len,
                     "group of %s/%s/%s: %u keys full (counted %u), eligible %d, in heap %d, "
                     "refs %u",
                     g->sh->q->name, g->sh->type, g->t->name, g->keys->full, f, want, in, g->refs);
            return false;
        }
        if (in && (g->k != g->jobs.a[0].k || g->kid != g->jobs.a[0].id)) {
            snprintf(why, len, "group of %s/%s/%s: cached front is stale", g->sh->q->name,
                     g->sh->type, g->t->name);
            return false;
        }
        if (in && g->sidx > 0) {
            const node *p = h->a[(g->sidx - 1) / 2];
            if (g->k < p->k || (g->k == p->k && g->kid < p->kid)) {
                snprintf(why, len, "groups of %s/%s/%s out of order", g->sh->q->name, g->sh->type,
                         g->t->name);
                return false;
            }
        }
    }
    *mem = m;
    return true;
}
