// SPDX-License-Identifier: Apache-2.0
/* The settings of keys (docs/SEMANTICS.md, "Concurrency keys", "Rate
 * keys"): for a key of a tenant, or for every key that begins with a
 * prefix ("account:*", at most ENGINE_KEY_PREFIXES_MAX a tenant).  Each
 * setting wins over what the jobs say; per setting, the key's own wins,
 * then the longest prefix that sets it.  Setting or deleting one re-reads
 * the keys it may change (keys.c, engine_key_resolve) and is noted as a
 * change for the store. */
#include "internal.h"

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

const key_setting *engine_key_setting_for(engine_t *e, const tenant *t, const char *key,
                                          size_t klen, engine_key_field f)
{
    if (dlist_empty(&t->key_settings)) return NULL; /* most tenants: no lookup */
    key_setting *own = setting_find(e, t, key);
    if (own && engine_key_settings_sets(&own->s, f)) return own;
    const key_setting *best = NULL;
    size_t best_len = 0;
    if (!t->n_prefixes) return NULL;
    DLIST_FOREACH(it, &t->key_settings)
    {
        const key_setting *s = DLIST_ITEM(it, key_setting, in_tenant);
        if (!s->prefix || !engine_key_settings_sets(&s->s, f)) continue;
        size_t plen = strlen(s->key) - 1;
        if (plen > klen || memcmp(s->key, key, plen) != 0) continue;
        if (!best || plen > best_len) {
            best = s;
            best_len = plen;
        }
    }
    return best;
}

bool engine_key_settings_sets(const engine_key_settings *s, engine_key_field f)
{
    return f == KEY_CONCURRENCY ? s->concurrency != ENGINE_UNLIMITED : s->rate != ENGINE_UNLIMITED;
}

/* The keys a setting may change: its key, or every key of the tenant. */
static void settings_apply(engine_t *e, int64_t now, tenant *t, const char *key, bool prefix)
{
    if (!prefix) {
        tkey *k = engine_tkey_find(e, t, key);
        if (k) engine_key_resolve(e, now, k);
        return;
    }
    DLIST_FOREACH(it, &t->keys)
    {
        engine_key_resolve(e, now, DLIST_ITEM(it, tkey, in_tenant));
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
    int rc = setting_args(e, tenant_name, key, err);
    if (rc) return rc;
    rc = engine_key_settings_check(s, err);
    if (rc) return rc;
    size_t len = strlen(key);
    bool prefix = key[len - 1] == '*';
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
    settings_apply(e, now, t, key, prefix);
    return 0;
}

int engine_load_key_setting(engine_t *e, const char *tenant, const char *key,
                            const engine_key_settings *s, engine_err *err)
{
    return engine_key_set(e, e->cfg.start_ms, tenant, key, s, err);
}

int engine_key_delete(engine_t *e, int64_t now, const char *tenant_name, const char *key,
                      engine_err *err)
{
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
    settings_apply(e, now, t, key, ks->prefix);
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

void engine_key_settings_free(engine_t *e)
{
    for (size_t i = 0; i < htab_cap(&e->key_settings); i++) free(e->key_settings.slots[i].item);
    htab_free(&e->key_settings);
    engine_keys_changes_clear(e);
    free(e->key_setting_graveyard.v);
}
