// SPDX-License-Identifier: Apache-2.0
/* Engine lifecycle, lookups, the change list, lanes and ids (tenants and
 * queues: tenants.c). */
#include "internal.h"

#include <math.h>
#include <stdarg.h>

static const char *const state_names[] = {
#define STATE_NAME_(name, word, abi, kind, finished, help) #word,
    TENQ_STATE_TABLE(STATE_NAME_)
#undef STATE_NAME_
};

/* engine_state_finished: every FINAL row comes after every LIVE one. */
#define STATE_ORDER_(name, word, abi, kind, finished, help)                                        \
    _Static_assert((ENGINE_##name >= ENGINE_SUCCEEDED) == (0 TENQ_STATE_IF_FINAL(kind, +1)),       \
                   "tenq/states.h: the FINAL states last, from succeeded on");
TENQ_STATE_TABLE(STATE_ORDER_)
#undef STATE_ORDER_

const char *engine_state_name(engine_state s)
{
    return (unsigned)s < ENGINE_NSTATES ? state_names[s] : "unknown";
}

int engine_state_parse(const char *name)
{
    for (int i = 0; i < ENGINE_NSTATES; i++)
        if (strcmp(state_names[i], name) == 0) return i;
    return -1;
}

void engine_errf(engine_err *err, int code, const char *field, const char *fmt, ...)
{
    if (!err) return;
    err->code = code;
    err->field = field;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof(err->message), fmt, ap);
    va_end(ap);
}

/* ---- configuration ------------------------------------------------------ */

/* Ids the engine gives are multiples of id_step (then never one the store
 * gives: odd ones). */
static uint64_t id_round(const engine_t *e, uint64_t id)
{
    uint64_t step = e->cfg.id_step > 1 ? e->cfg.id_step : 1;
    return (id + step - 1) / step * step;
}

void engine_config_defaults(engine_config *c)
{
    memset(c, 0, sizeof(*c));
    c->seed = 0x7e11a5eedULL;
    engine_tenant_settings_defaults(&c->tenant_defaults);
    engine_queue_settings_defaults(&c->queue_defaults);
    c->strict_tenants = false;
    c->idempotency_ttl_ms = 24LL * 3600 * 1000;
    c->id_step = 1;
}

static bool hex_run(const char *s, size_t n, bool *zero)
{
    *zero = true;
    for (size_t i = 0; i < n; i++) {
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
        if (s[i] != '0') *zero = false;
    }
    return true;
}

bool engine_traceparent_valid(const char *s)
{
    static const size_t len[4] = {2, 32, 16, 2};
    bool zero;
    if (s[0] == 'f' && s[1] == 'f') return false; /* the version kept invalid */
    for (int i = 0; i < 4; i++) {
        if (!hex_run(s, len[i], &zero)) return false;
        if ((i == 1 || i == 2) && zero) return false;
        s += len[i];
        if (*s != (i < 3 ? '-' : 0)) return false;
        s += i < 3;
    }
    return true;
}

bool engine_name_valid(const char *s)
{
    if (!s) return false;
    size_t n = 0;
    for (; s[n]; n++) {
        char ch = s[n];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-';
        if (!ok || n >= ENGINE_NAME_MAX) return false;
    }
    return n >= 1;
}

/* 1 to max bytes, none a control character (nor a space, unless allowed). */
static bool text_valid(const char *s, size_t max, bool allow_space)
{
    if (!s) return false;
    size_t n = 0;
    for (; s[n]; n++) {
        unsigned char ch = (unsigned char)s[n];
        if (ch < 0x20 || ch == 0x7f || (!allow_space && ch == ' ')) return false;
        if (n >= max) return false;
    }
    return n >= 1;
}

bool engine_type_valid(const char *s)
{
    return text_valid(s, ENGINE_TYPE_MAX, false);
}

bool engine_key_valid(const char *s)
{
    return text_valid(s, ENGINE_KEY_MAX, true);
}

int engine_check_name(engine_name_kind kind, const char *field, const char *s, engine_err *err)
{
    static const struct {
        bool (*valid)(const char *);
        const char *rule;
    } rules[] = {
        [ENGINE_NAME] = {engine_name_valid, ENGINE_NAME_RULE},
        [ENGINE_TYPE] = {engine_type_valid, ENGINE_TYPE_RULE},
        [ENGINE_KEY] = {engine_key_valid, ENGINE_KEY_RULE},
    };
    if (rules[kind].valid(s)) return 0;
    engine_errf(err, TENQ_EINVALID, field, "%s: %s", field, rules[kind].rule);
    return TENQ_EINVALID;
}

/* ---- create / destroy --------------------------------------------------- */

engine_t *engine_create(const engine_config *cfg)
{
    engine_t *e = xcalloc(1, sizeof(*e));
    if (cfg)
        e->cfg = *cfg;
    else
        engine_config_defaults(&e->cfg);
    e->rng = e->cfg.seed;
    e->hk.k0 = hash_u64(e->cfg.seed ^ 0x5151);
    e->hk.k1 = hash_u64(e->cfg.seed ^ 0xa7a7);
    e->next_id = id_round(e, 1);
    dlist_init(&e->idem_order);
    dlist_init(&e->args_lru);
    dlist_init(&e->idle_groups);
    dlist_init(&e->kept_order);
    e->dead_by_id.cmp = engine_dead_cmp_id;
    e->dead_by_fin.cmp = engine_dead_cmp_fin;
    return e;
}

static void free_job_cb(void *ctx, uint64_t id, void *item)
{
    (void)id;
    engine_job_free(ctx, item);
}

void engine_destroy(engine_t *e)
{
    if (!e) return;
    engine_changes_clear(e);
    idtab_foreach(&e->jobs, free_job_cb, e);
    engine_args_free(e);
    engine_keys_free(e);
    engine_expiry_free(e);
    engine_steps_free(e);
    for (size_t i = 0; i < htab_cap(&e->lanes); i++) {
        free(e->lanes.slots[i].item);
    }
    for (size_t i = 0; i < htab_cap(&e->nodes); i++) {
        node *n = e->nodes.slots[i].item;
        if (!n) continue;
        ready_heap_free(&n->jobs);
        ready_heap_free(&n->rising);
        free(n->groups.a);
        free(n);
    }
    for (size_t i = 0; i < htab_cap(&e->shards); i++) {
        shard *s = e->shards.slots[i].item;
        if (!s) continue;
        heap_free(&s->nodes);
        free(s->type);
        free(s);
    }
    for (size_t i = 0; i < htab_cap(&e->pairs); i++) free(e->pairs.slots[i].item);
    for (size_t i = 0; i < htab_cap(&e->queues); i++) {
        queue *q = e->queues.slots[i].item;
        if (!q) continue;
        heap_free(&q->shards);
        free(q->name);
        free(q);
    }
    for (size_t i = 0; i < htab_cap(&e->tenants); i++) {
        tenant *t = e->tenants.slots[i].item;
        if (!t) continue;
        free(t->name);
        free(t);
    }
    for (size_t i = 0; i < htab_cap(&e->idem); i++) {
        idem_entry *ie = e->idem.slots[i].item;
        if (!ie) continue;
        free((char *)ie->info.key);
        free(ie);
    }
    idtab_free(&e->jobs);
    htab_free(&e->tenants);
    htab_free(&e->queues);
    htab_free(&e->shards);
    htab_free(&e->pairs);
    htab_free(&e->nodes);
    htab_free(&e->lanes);
    htab_free(&e->uniq);
    htab_free(&e->idem);
    jheap_free(&e->timers);
    jheap_free(&e->leases);
    jheap_free(&e->waits);
    heap_free(&e->rate_timers);
    heap_free(&e->aging);
    for (size_t i = 0; i < htab_cap(&e->workers); i++) free(e->workers.slots[i].item);
    htab_free(&e->workers);
    engine_stale_free(e);
    free(e->changes.v);
    free(e->graveyard.v);
    free(e->idem_graveyard.v);
    free(e->attempt_recs.v);
    free(e->deps_work.v);
    engine_batches_free(e);
    free(e->scratch.v);
    free(e);
}

/* ---- lookups ------------------------------------------------------------ */

static bool tenant_eq(const void *item, const void *key)
{
    return strcmp(((const tenant *)item)->name, key) == 0;
}

tenant *engine_tenant_find(engine_t *e, const char *name)
{
    uint64_t h = hash_bytes(&e->hk, name, strlen(name));
    return htab_find(&e->tenants, h, tenant_eq, name);
}

tenant *engine_tenant_get_or_create(engine_t *e, const char *name)
{
    uint64_t h = hash_bytes(&e->hk, name, strlen(name));
    tenant *t = htab_find(&e->tenants, h, tenant_eq, name);
    if (t) return t;
    t = xcalloc(1, sizeof(*t));
    t->name = xstrdup(name);
    t->hash = h;
    t->s = e->cfg.tenant_defaults;
    engine_rate_init(&t->rb, RB_TENANT);
    engine_rate_refresh(&t->rb);
    dlist_init(&t->ready_nodes);
    dlist_init(&t->keys);
    dlist_init(&t->key_settings);
    t->dead_by_id.cmp = engine_dead_cmp_tid;
    t->dead_by_fin.cmp = engine_dead_cmp_tfin;
    if (htab_insert(&e->tenants, h, t) != 0) engine_oom();
    engine_note_tenant(e, t);
    return t;
}

static bool queue_eq(const void *item, const void *key)
{
    return strcmp(((const queue *)item)->name, key) == 0;
}

queue *engine_queue_find(engine_t *e, const char *name)
{
    uint64_t h = hash_bytes(&e->hk, name, strlen(name));
    return htab_find(&e->queues, h, queue_eq, name);
}

queue *engine_queue_get_or_create(engine_t *e, const char *name)
{
    uint64_t h = hash_bytes(&e->hk, name, strlen(name));
    queue *q = htab_find(&e->queues, h, queue_eq, name);
    if (q) return q;
    q = xcalloc(1, sizeof(*q));
    q->e = e;
    q->name = xstrdup(name);
    q->hash = h;
    q->s = e->cfg.queue_defaults;
    engine_rate_init(&q->rb, RB_QUEUE);
    engine_rate_refresh(&q->rb);
    dlist_init(&q->pairs);
    dlist_init(&q->all_shards);
    if (htab_insert(&e->queues, h, q) != 0) engine_oom();
    engine_note_queue(e, q);
    return q;
}

typedef struct shard_key {
    const queue *q;
    const char *type;
} shard_key;

static bool shard_eq(const void *item, const void *key)
{
    const shard *s = item;
    const shard_key *k = key;
    return s->q == k->q && strcmp(s->type, k->type) == 0;
}

static uint64_t shard_hash(engine_t *e, const queue *q, const char *type)
{
    return hash_combine(q->hash, hash_bytes(&e->hk, type, strlen(type)));
}

shard *engine_shard_find(engine_t *e, queue *q, const char *type)
{
    shard_key k = {q, type};
    return htab_find(&e->shards, shard_hash(e, q, type), shard_eq, &k);
}

static shard *shard_get(engine_t *e, queue *q, const char *type)
{
    uint64_t h = shard_hash(e, q, type);
    shard_key k = {q, type};
    shard *s = htab_find(&e->shards, h, shard_eq, &k);
    if (s) return s;
    s = xcalloc(1, sizeof(*s));
    s->q = q;
    s->type = xstrdup(type);
    s->hash = h;
    s->qidx = HEAP_NONE;
    dlist_push_back(&q->all_shards, &s->in_queue);
    if (htab_insert(&e->shards, h, s) != 0) engine_oom();
    return s;
}

typedef struct pair_key {
    const queue *q;
    const tenant *t;
} pair_key;

static bool pair_eq(const void *item, const void *key)
{
    const pair *p = item;
    const pair_key *k = key;
    return p->q == k->q && p->t == k->t;
}

pair *engine_pair_find(engine_t *e, const queue *q, const tenant *t)
{
    pair_key k = {q, t};
    return htab_find(&e->pairs, hash_combine(q->hash, t->hash), pair_eq, &k);
}

pair *engine_pair_get(engine_t *e, queue *q, tenant *t)
{
    uint64_t h = hash_combine(q->hash, t->hash);
    pair *p = engine_pair_find(e, q, t);
    if (p) return p;
    p = xcalloc(1, sizeof(*p));
    p->q = q;
    p->t = t;
    p->hash = h;
    engine_rate_init(&p->rb, RB_PAIR);
    engine_rate_refresh(&p->rb);            /* the queue's tenant_rate */
    if (q->pair_rates_fresh) p->rb.tat = 1; /* full: see engine_queue_set */
    dlist_init(&p->ready_nodes);
    dlist_push_back(&q->pairs, &p->in_queue);
    if (htab_insert(&e->pairs, h, p) != 0) engine_oom();
    return p;
}

typedef struct node_key {
    const shard *sh;
    const tenant *t;
} node_key;

static bool node_eq(const void *item, const void *key)
{
    const node *n = item;
    const node_key *k = key;
    return n->sh == k->sh && n->t == k->t;
}

node *engine_node_get_or_create(engine_t *e, queue *q, const char *type, tenant *t)
{
    shard *sh = shard_get(e, q, type);
    uint64_t h = hash_combine(sh->hash, t->hash);
    node_key k = {sh, t};
    node *n = htab_find(&e->nodes, h, node_eq, &k);
    if (n) return n;
    n = xcalloc(1, sizeof(*n));
    n->sh = sh;
    n->t = t;
    n->p = engine_pair_get(e, q, t);
    n->hash = h;
    n->sidx = HEAP_NONE;
    n->aidx = HEAP_NONE;
    if (htab_insert(&e->nodes, h, n) != 0) engine_oom();
    return n;
}

void engine_node_unref(engine_t *e, node *n)
{
    if (--n->refs > 0) return;
    /* No job points here: the node has no ready jobs and is in no heap. */
    if (n->parent) {
        engine_group_idle(e, n);
        return;
    }
    htab_remove(&e->nodes, n->hash, n);
    ready_heap_free(&n->jobs);
    ready_heap_free(&n->rising);
    free(n->groups.a);
    free(n);
}

typedef struct lane_key {
    const tenant *t;
    const queue *q;
    const char *key;
} lane_key;

static bool lane_eq(const void *item, const void *key)
{
    const lane *l = item;
    const lane_key *k = key;
    return l->t == k->t && l->q == k->q && strcmp(l->key, k->key) == 0;
}

static uint64_t lane_hash(engine_t *e, const tenant *t, const queue *q, const char *key)
{
    return hash_combine(hash_combine(t->hash, q->hash), hash_bytes(&e->hk, key, strlen(key)));
}

lane *engine_lane_find(engine_t *e, tenant *t, queue *q, const char *key)
{
    lane_key k = {t, q, key};
    return htab_find(&e->lanes, lane_hash(e, t, q, key), lane_eq, &k);
}

lane *engine_lane_get_or_create(engine_t *e, tenant *t, queue *q, const char *key)
{
    uint64_t h = lane_hash(e, t, q, key);
    lane_key k = {t, q, key};
    lane *l = htab_find(&e->lanes, h, lane_eq, &k);
    if (l) return l;
    size_t klen = strlen(key);
    l = xcalloc(1, sizeof(*l) + klen + 1);
    l->t = t;
    l->q = q;
    memcpy(l->key, key, klen + 1);
    l->hash = h;
    if (htab_insert(&e->lanes, h, l) != 0) engine_oom();
    return l;
}

void engine_lane_unref(engine_t *e, lane *l)
{
    if (--l->refs > 0) return;
    htab_remove(&e->lanes, l->hash, l);
    free(l);
}

job *engine_job_find(engine_t *e, uint64_t id)
{
    return idtab_get(&e->jobs, id);
}

engine_job *engine_find(engine_t *e, uint64_t id)
{
    return engine_job_find(e, id);
}

uint64_t engine_job_id(const engine_job *j)
{
    return j->id;
}

engine_state engine_job_state(const engine_job *j)
{
    return (engine_state)j->state;
}

const char *engine_job_tenant(const engine_job *j)
{
    return j->node->t->name;
}

void engine_job_wait(const engine_job *j, engine_wait *out)
{
    memset(out, 0, sizeof(*out));
    switch ((engine_state)j->state) {
    case ENGINE_SCHEDULED:
        out->kind = j->attempts > 0 ? ENGINE_WAIT_BACKOFF : ENGINE_WAIT_SCHEDULED;
        if (job_parked(j)) out->kind = ENGINE_WAIT_SLEEP;
        out->until = j->run_at;
        return;
    case ENGINE_WAITING: {
        if (job_parked(j)) {
            const job_steps *st = j->extra->steps;
            if (st->park == PARK_CHILD) {
                out->kind = ENGINE_WAIT_CHILD;
                out->child = st->child;
            } else {
                out->kind = ENGINE_WAIT_EVENT;
                out->event = engine_steps_event_key(st);
                out->until = st->until;
            }
            return;
        }
        const job_deps *d = j->extra ? j->extra->deps : NULL;
        out->kind = ENGINE_WAIT_PARENTS;
        for (uint32_t k = 0; d && k < d->n_parents; k++) {
            const job *p = engine_job_find(d->e, d->parents[k]);
            if (p && p->state <= ENGINE_RUNNING && out->n_parents < ENGINE_PARENTS_MAX)
                out->parents[out->n_parents++] = p->id;
        }
        return;
    }
    case ENGINE_BLOCKED: {
        const lane *l = job_lane(j);
        out->kind = ENGINE_WAIT_LANE;
        out->blocked_by = l && l->head ? l->head->id : 0;
        return;
    }
    case ENGINE_READY: {
        const tenant *t = job_tenant(j);
        const pair *p = job_pair(j);
        if (t->active >= t->s.slots) {
            out->kind = ENGINE_WAIT_TENANT_SLOTS;
            out->active = t->active;
            out->limit = t->s.slots;
        } else if (t->rb.until) {
            out->kind = ENGINE_WAIT_TENANT_RATE;
            out->until = t->rb.until;
        } else if (p->q->s.paused) {
            out->kind = ENGINE_WAIT_QUEUE_PAUSED;
        } else if (p->paused) {
            out->kind = ENGINE_WAIT_TENANT_PAUSED;
        } else if (p->active >= p->q->s.tenant_cap) {
            out->kind = ENGINE_WAIT_TENANT_CAP;
            out->active = p->active;
            out->limit = p->q->s.tenant_cap;
        } else if (p->rb.until) {
            out->kind = ENGINE_WAIT_PAIR_RATE;
            out->until = p->rb.until;
        } else if (p->q->rb.until) {
            out->kind = ENGINE_WAIT_QUEUE_RATE;
            out->until = p->q->rb.until;
        } else if (j->node->keys && engine_keys_wait(p->q->e, j, out)) {
            /* its first key at its limit */
        } else {
            out->kind = ENGINE_WAIT_WORKER;
            const shard *sh = j->node->sh;
            out->asked_at = sh->asked_at > sh->q->asked_at ? sh->asked_at : sh->q->asked_at;
        }
        return;
    }
    default: return;
    }
}

const char *engine_wait_name(engine_wait_kind k)
{
    static const char *const names[] = {NULL,
                                        "scheduled",
                                        "backoff",
                                        "lane",
                                        "tenant_slots",
                                        "tenant_cap",
                                        "queue_paused",
                                        "tenant_paused",
                                        "tenant_rate",
                                        "queue_rate",
                                        "queue_tenant_rate",
                                        "worker",
                                        "parents",
                                        "sleep",
                                        "event",
                                        "child",
                                        "concurrency_key",
                                        "rate_key"};
    return (size_t)k < sizeof names / sizeof names[0] ? names[k] : NULL;
}

const char *engine_job_queue(const engine_job *j)
{
    return j->node->sh->q->name;
}

void engine_job_get(const engine_job *j, engine_job_info *o)
{
    memset(o, 0, sizeof(*o));
    const job_extra *ex = j->extra;
    o->id = j->id;
    o->tenant = j->node->t->name;
    o->queue = j->node->sh->q->name;
    o->type = j->node->sh->type;
    o->key = j->in_lane ? j->in_lane->lane->key : NULL;
    if (j->flags & JF_HAS_PAYLOADS) {
        o->payloads = ex->pl.v;
        o->n_payloads = ex->pl.n;
    } else if (j->flags & JF_ARGS_OUT) {
        uint32_t len = 0;
        o->args = engine_args_cached(j->node->sh->q->e, j, &len);
        o->args_len = o->args ? len : engine_args_spilled_len(j);
        o->args_missing = !o->args;
    } else {
        o->args = j->args;
        o->args_len = strlen(j->args);
    }
    /* a job that names keys is loaded first: its keys' limits and counts
     * are exact from the first lease */
    o->plain = !j->in_lane && !(j->flags & JF_HAS_PAYLOADS) && !j->node->keys &&
               !(ex && (ex->unique_key || ex->batch || ex->deps || ex->steps));
    if (j->node->keys) {
        const gkeys *gs = j->node->keys;
        o->concurrency_keys = gs->nc ? gs->cout : NULL;
        o->n_concurrency_keys = gs->nc;
        o->rate_keys = gs->n > gs->nc ? gs->rout : NULL;
        o->n_rate_keys = gs->n - gs->nc;
    }
    o->priority = j->priority;
    o->state = (engine_state)j->state;
    o->attempts = j->attempts;
    o->max_attempts = j->max_attempts;
    o->run_at = j->run_at;
    o->created_at = j->created_at;
    o->ready_at = j->ready_at;
    o->token = j->extra ? j->extra->token : 0;
    o->cancel_requested = (j->flags & JF_CANCEL_REQ) != 0;
    o->lane_seq = j->id;
    if (ex) {
        o->leased_at = ex->leased_at;
        o->started_at = ex->started_at;
        o->finished_at = ex->finished_at;
        o->worker = ex->worker;
        o->error = ex->error;
        o->result = ex->result;
        o->stats = ex->stats;
        o->progress = ex->progress;
        o->unique_key = ex->unique_key;
        o->idempotency_key = ex->idem_key;
        o->traceparent = ex->traceparent;
        o->timeout_ms = ex->timeout_ms;
        o->merged_into = ex->merged_into;
        if (ex->lane_seq) o->lane_seq = ex->lane_seq;
        if (j->state == ENGINE_LEASED || j->state == ENGINE_RUNNING) o->lease_until = ex->deadline;
        if (ex->deps) {
            o->parents = ex->deps->parents;
            o->n_parents = ex->deps->n_parents;
            o->children = ex->deps->children;
            o->n_children = ex->deps->n_children;
            o->on_parent_failure = (engine_deps_policy)ex->deps->policy;
        }
        if (ex->batch) {
            o->batch = ex->batch->id;
            o->batch_role = ex->batch_role;
        }
        o->expire_at = ex->expire_at;
        o->debounced = ex->debounced;
        o->debounce_until = ex->debounce_until;
        if (ex->steps) {
            o->n_steps = ex->steps->n;
            o->awaited_by = ex->steps->awaited_by;
        }
    }
}

/* ---- changes ------------------------------------------------------------ */

void engine_loading(engine_t *e, bool on)
{
    e->loading = on;
}

engine_change *engine_change_push(engine_t *e)
{
    change_vec *v = &e->changes;
    if (v->n == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 256;
        v->v = xrealloc(v->v, v->cap * sizeof(*v->v));
    }
    engine_change *c = &v->v[v->n++];
    memset(c, 0, sizeof(*c));
    return c;
}

/* A job is listed once per change list; its fields gather in j->noted (a
 * byte, where an index into the list would take four) and are copied into
 * the list when it is read. */
void engine_note_job(engine_t *e, job *j, uint32_t fields)
{
    if (e->loading) return;
    if (j->noted) {
        j->noted |= (uint8_t)fields;
        return;
    }
    engine_change *c = engine_change_push(e);
    c->kind = ENGINE_CH_JOB;
    c->job = j;
    c->id = j->id;
    j->noted = (uint8_t)(JOB_NOTED | fields);
}

void engine_note_tenant(engine_t *e, tenant *t)
{
    if (t->chg) return;
    t->chg = true;
    engine_change *c = engine_change_push(e);
    c->kind = ENGINE_CH_TENANT;
    c->name = t->name;
}

void engine_note_queue(engine_t *e, queue *q)
{
    if (q->chg) return;
    q->chg = true;
    engine_change *c = engine_change_push(e);
    c->kind = ENGINE_CH_QUEUE;
    c->name = q->name;
}

void engine_note_pause(engine_t *e, pair *p)
{
    if (e->loading) return;
    engine_change *c = engine_change_push(e);
    c->kind = ENGINE_CH_PAUSE;
    c->name = p->q->name;
    c->tenant = p->t->name;
    c->fields = p->paused;
}

void engine_note_wake(engine_t *e, queue *q)
{
    if (q->wake) return;
    q->wake = true;
    engine_change *c = engine_change_push(e);
    c->kind = ENGINE_CH_WAKE;
    c->name = q->name;
}

const engine_change *engine_changes(engine_t *e, size_t *n)
{
    for (size_t i = 0; i < e->changes.n; i++) {
        engine_change *c = &e->changes.v[i];
        if (c->kind == ENGINE_CH_JOB) c->fields = c->job->noted & ~JOB_NOTED;
    }
    *n = e->changes.n;
    return e->changes.v;
}

size_t engine_change_count(const engine_t *e)
{
    return e->changes.n;
}

void engine_changes_clear(engine_t *e)
{
    for (size_t i = 0; i < e->changes.n; i++) {
        engine_change *c = &e->changes.v[i];
        switch (c->kind) {
        case ENGINE_CH_JOB: c->job->noted = 0; break;
        case ENGINE_CH_TENANT: {
            tenant *t = engine_tenant_find(e, c->name);
            if (t) t->chg = false;
            break;
        }
        case ENGINE_CH_QUEUE:
        case ENGINE_CH_WAKE: {
            queue *q = engine_queue_find(e, c->name);
            if (q) q->chg = q->wake = false;
            break;
        }
        case ENGINE_CH_IDEM: {
            idem_entry *ie = (idem_entry *)((char *)c->idem - offsetof(idem_entry, info));
            ie->in_chg = false;
            break;
        }
        default: break;
        }
    }
    if (e->batch_chg.n) engine_batches_changes_clear(e);
    if (e->key_setting_graveyard.n) engine_keys_changes_clear(e);
    e->changes.n = 0;
    for (size_t i = 0; i < e->graveyard.n; i++) {
        job *j = e->graveyard.v[i];
        if (idtab_get(&e->jobs, j->id) == j) idtab_del(&e->jobs, j->id);
        engine_job_free(e, j);
    }
    e->graveyard.n = 0;
    for (size_t i = 0; i < e->idem_graveyard.n; i++) {
        idem_entry *ie = e->idem_graveyard.v[i];
        free((char *)ie->info.key);
        free(ie);
    }
    e->idem_graveyard.n = 0;
    engine_attempts_clear(e);
    engine_steps_changes_clear(e);
    if (e->args_pinned.n) engine_args_changes_cleared(e);
}

/* ---- lanes and ids ------------------------------------------------------ */

size_t engine_top_lanes(engine_t *e, size_t k, engine_lane_info *out, engine_lane_filter keep,
                        void *ctx, size_t *total)
{
    /* A small sorted insertion over all lanes: O(lanes * k) with k tiny. */
    size_t n = 0, all = 0;
    for (size_t i = 0; i < htab_cap(&e->lanes); i++) {
        lane *l = e->lanes.slots[i].item;
        if (!l || l->len == 0) continue;
        if (keep && !keep(ctx, l->t->name, l->q->name)) continue;
        all++;
        if (k == 0 || (n == k && l->len <= out[n - 1].length)) continue;
        size_t pos = n < k ? n : k - 1;
        while (pos > 0 && out[pos - 1].length < l->len) {
            out[pos] = out[pos - 1];
            pos--;
        }
        engine_lane_info *o = &out[pos];
        o->tenant = l->t->name;
        o->queue = l->q->name;
        o->key = l->key;
        o->length = l->len;
        o->head_id = l->head->id;
        o->head_state = (engine_state)l->head->state;
        o->head_run_at = l->head->run_at;
        if (n < k) n++;
    }
    if (total) *total = all;
    return n;
}

size_t engine_lane_count(const engine_t *e)
{
    return e->lanes.len;
}

void engine_set_next_id(engine_t *e, uint64_t next_id)
{
    next_id = id_round(e, next_id);
    if (next_id > e->next_id) e->next_id = next_id;
}

uint64_t engine_next_id(const engine_t *e)
{
    return e->next_id;
}

uint64_t engine_take_id(engine_t *e)
{
    uint64_t id = e->next_id;
    e->next_id += e->cfg.id_step > 1 ? e->cfg.id_step : 1;
    return id;
}

void engine_memory_usage(const engine_t *e, engine_memory *m)
{
    m->jobs = e->n_jobs;
    m->data_bytes = e->data_bytes;
    m->bytes = e->mem_bytes;
}
