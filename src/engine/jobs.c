// SPDX-License-Identifier: Apache-2.0
/* The life of a job: submit, start, heartbeat, ack, fail, expiry, cancel. */
#include "internal.h"

#include <math.h>

/* ---- allocation ------------------------------------------------------------ */

job *engine_job_alloc(engine_t *e, uint64_t id, node *home, const char *args, uint32_t args_len)
{
    /* no text but a length: args left in the store by a load */
    bool out = args ? engine_args_spill(e, home, args_len) : args_len > 0;
    uint32_t inline_len = out ? 2 : args_len; /* a spilled job keeps its length there */
    job *j = xmalloc(offsetof(job, args) + inline_len + 1);
    memset(j, 0, offsetof(job, args));
    j->id = id;
    j->node = home;
    j->hidx = HEAP_NONE;
    j->state = ENGINE_NSTATES; /* not counted anywhere yet */
    home->refs++;
    e->mem_bytes += mem_job(inline_len);
    e->n_jobs++;
    if (out) {
        engine_args_spilled(e, j, args, args_len);
        return j;
    }
    if (args_len) memcpy(j->args, args, args_len);
    j->args[args_len] = 0;
    e->data_bytes += args_len;
    return j;
}

void engine_payload_free(engine_t *e, payload_vec *pv)
{
    for (uint32_t i = 0; i < pv->n; i++) {
        e->data_bytes -= pv->v[i].len;
        e->mem_bytes -= mem_payload(pv->v[i].len);
        free((char *)pv->v[i].data);
    }
    free(pv->v);
    free(pv->hashes);
    memset(pv, 0, sizeof(*pv));
}

void engine_job_free(engine_t *e, job *j)
{
    if (j->extra) {
        job_extra *ex = j->extra;
        if (ex->worker) engine_worker_release(e, ex->worker);
        free(ex->error);
        free(ex->result);
        free(ex->stats);
        free(ex->progress);
        free(ex->unique_key);
        free(ex->idem_key);
        free(ex->traceparent);
        engine_payload_free(e, &ex->pl);
        free(ex->dl);
        engine_deps_free(ex->deps);
        if (ex->steps) engine_steps_free_job(e, ex->steps);
        free(ex);
        e->mem_bytes -= mem_chunk(sizeof(job_extra));
    }
    size_t inline_len = job_inline_len(j);
    if (j->flags & JF_ARGS_OUT)
        engine_args_job_freed(e, j);
    else
        e->data_bytes -= inline_len;
    e->mem_bytes -= mem_job(inline_len);
    e->n_jobs--;
    if (j->in_lane) {
        engine_lane_unref(e, j->in_lane->lane);
        free(j->in_lane);
        e->mem_bytes -= mem_chunk(sizeof(lane_link));
    }
    engine_node_unref(e, j->node);
    free(j);
}

static void set_str(char **dst, const char *src)
{
    free(*dst);
    *dst = src ? xstrdup(src) : NULL;
}

/* ---- payloads (merging queues) ---------------------------------------------- */

static uint64_t payload_hash(engine_t *e, const char *data, uint32_t len)
{
    return hash_bytes(&e->hk, data, len);
}

static void payload_insert_at(engine_t *e, payload_vec *pv, uint32_t pos, engine_payload p,
                              uint64_t h)
{
    e->mem_bytes += mem_payload(p.len);
    if (pv->n == pv->cap) {
        pv->cap = pv->cap ? pv->cap * 2 : 4;
        pv->v = xrealloc(pv->v, pv->cap * sizeof(*pv->v));
        pv->hashes = xrealloc(pv->hashes, pv->cap * sizeof(*pv->hashes));
    }
    memmove(&pv->v[pos + 1], &pv->v[pos], (pv->n - pos) * sizeof(*pv->v));
    memmove(&pv->hashes[pos + 1], &pv->hashes[pos], (pv->n - pos) * sizeof(*pv->hashes));
    pv->v[pos] = p;
    pv->hashes[pos] = h;
    pv->n++;
    pv->bytes += p.len;
}

static void payload_remove_at(engine_t *e, payload_vec *pv, uint32_t pos)
{
    e->mem_bytes -= mem_payload(pv->v[pos].len);
    pv->bytes -= pv->v[pos].len;
    memmove(&pv->v[pos], &pv->v[pos + 1], (pv->n - pos - 1) * sizeof(*pv->v));
    memmove(&pv->hashes[pos], &pv->hashes[pos + 1], (pv->n - pos - 1) * sizeof(*pv->hashes));
    pv->n--;
}

/* First position whose score is greater than `score` (equal scores keep
 * their arrival order). */
static uint32_t payload_pos(const payload_vec *pv, double score)
{
    uint32_t lo = 0, hi = pv->n;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (pv->v[mid].score <= score)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Adds a payload, or lowers the score of an identical one already there:
 * an identical payload keeps the lowest score.  Takes ownership of nothing;
 * copies data when it is new. */
static void payload_add_owned(engine_t *e, payload_vec *pv, double score, char *data, uint32_t len,
                              uint64_t h)
{
    for (uint32_t i = 0; i < pv->n; i++) {
        if (pv->hashes[i] == h && pv->v[i].len == len && memcmp(pv->v[i].data, data, len) == 0) {
            if (score < pv->v[i].score) {
                engine_payload p = pv->v[i];
                payload_remove_at(e, pv, i);
                p.score = score;
                payload_insert_at(e, pv, payload_pos(pv, score), p, h);
            }
            e->data_bytes -= len;
            free(data);
            return;
        }
    }
    engine_payload p = {score, data, len};
    payload_insert_at(e, pv, payload_pos(pv, score), p, h);
}

void engine_payload_add(engine_t *e, payload_vec *pv, double score, const char *data, uint32_t len)
{
    char *copy = xstrndup(data, len);
    e->data_bytes += len;
    payload_add_owned(e, pv, score, copy, len, payload_hash(e, data, len));
}

/* Moves every payload of `from` into `to` (from ends empty). */
void engine_payload_move_all(engine_t *e, payload_vec *to, payload_vec *from)
{
    for (uint32_t i = 0; i < from->n; i++) {
        e->mem_bytes -= mem_payload(from->v[i].len); /* counted again where it lands */
        payload_add_owned(e, to, from->v[i].score, (char *)from->v[i].data, from->v[i].len,
                          from->hashes[i]);
    }
    free(from->v);
    free(from->hashes);
    memset(from, 0, sizeof(*from));
}

/* Turns a job's args into its first payload (a merge queue's jobs carry
 * payloads; jobs from before the queue merged carry args). */
void engine_ensure_payloads(engine_t *e, job *j)
{
    if (j->flags & JF_HAS_PAYLOADS) return;
    job_extra *ex = engine_extra(e, j);
    engine_payload_add(e, &ex->pl, (double)j->created_at, j->args, strlen(j->args));
    j->flags |= JF_HAS_PAYLOADS;
}

/* ---- dedup ------------------------------------------------------------------ */

typedef struct uniq_key {
    const tenant *t;
    const queue *q;
    const char *key;
} uniq_key;

static bool uniq_eq(const void *item, const void *key)
{
    const job *j = item;
    const uniq_key *k = key;
    return job_tenant(j) == k->t && job_queue(j) == k->q &&
           strcmp(j->extra->unique_key, k->key) == 0;
}

static uint64_t uniq_hash(engine_t *e, const tenant *t, const queue *q, const char *key)
{
    return hash_combine(hash_combine(t->hash, q->hash) ^ 0x55,
                        hash_bytes(&e->hk, key, strlen(key)));
}

static job *uniq_find(engine_t *e, tenant *t, queue *q, const char *key)
{
    uniq_key k = {t, q, key};
    return htab_find(&e->uniq, uniq_hash(e, t, q, key), uniq_eq, &k);
}

void engine_uniq_remove(engine_t *e, job *j)
{
    if (!(j->flags & JF_IN_UNIQ)) return;
    htab_remove(&e->uniq, uniq_hash(e, job_tenant(j), job_queue(j), j->extra->unique_key), j);
    j->flags &= ~JF_IN_UNIQ;
}

void engine_uniq_add(engine_t *e, job *j)
{
    if (!j->extra || !j->extra->unique_key || (j->flags & JF_IN_UNIQ)) return;
    job *old = uniq_find(e, job_tenant(j), job_queue(j), j->extra->unique_key);
    if (old) {
        if (old->created_at > j->created_at) return; /* the newer one keeps the key */
        engine_uniq_remove(e, old);
    }
    if (htab_insert(&e->uniq, uniq_hash(e, job_tenant(j), job_queue(j), j->extra->unique_key), j))
        engine_oom();
    j->flags |= JF_IN_UNIQ;
}

/* ---- idempotency ---------------------------------------------------------------- */

typedef struct idem_key {
    const tenant *t;
    const char *key;
} idem_key;

static bool idem_eq(const void *item, const void *key)
{
    const idem_entry *ie = item;
    const idem_key *k = key;
    return ie->t == k->t && strcmp(ie->info.key, k->key) == 0;
}

static uint64_t idem_hash(engine_t *e, const tenant *t, const char *key)
{
    return hash_combine(t->hash ^ 0x1de, hash_bytes(&e->hk, key, strlen(key)));
}

static idem_entry *idem_find(engine_t *e, tenant *t, const char *key)
{
    idem_key k = {t, key};
    return htab_find(&e->idem, idem_hash(e, t, key), idem_eq, &k);
}

static void idem_drop(engine_t *e, idem_entry *ie)
{
    htab_remove(&e->idem, ie->hash, ie);
    dlist_remove(&ie->in_order);
    if (ie->in_chg) {
        ptr_vec_push(&e->idem_graveyard, ie);
    } else {
        free((char *)ie->info.key);
        free(ie);
    }
}

static idem_entry *idem_add(engine_t *e, tenant *t, const char *key, const engine_submit_res *r,
                            int64_t created_at)
{
    idem_entry *ie = xcalloc(1, sizeof(*ie));
    ie->t = t;
    ie->hash = idem_hash(e, t, key);
    ie->info.tenant = t->name;
    ie->info.key = xstrdup(key);
    ie->info.id = r->id;
    ie->info.state = r->state;
    ie->info.duplicate = r->duplicate;
    ie->info.merged = r->merged;
    ie->info.created_at = created_at;
    if (htab_insert(&e->idem, ie->hash, ie) != 0) engine_oom();
    /* Keep the expiry list sorted even when recovery loads out of order. */
    dlink *at = e->idem_order.head.prev;
    while (at != &e->idem_order.head &&
           DLIST_ITEM(at, idem_entry, in_order)->info.created_at > created_at)
        at = at->prev;
    ie->in_order.prev = at;
    ie->in_order.next = at->next;
    at->next->prev = &ie->in_order;
    at->next = &ie->in_order;
    return ie;
}

static void idem_note(engine_t *e, idem_entry *ie)
{
    if (ie->in_chg) return;
    ie->in_chg = true;
    engine_change *c = engine_change_push(e);
    c->kind = ENGINE_CH_IDEM;
    c->idem = &ie->info;
    c->name = ie->t->name;
}

int engine_load_idem(engine_t *e, const engine_idem_info *i, engine_err *err)
{
    if (!engine_name_valid(i->tenant) || !i->key || !*i->key) {
        engine_errf(err, TENQ_EINVALID, "idempotency_key", "bad idempotency record");
        return TENQ_EINVALID;
    }
    tenant *t = engine_tenant_get_or_create(e, i->tenant);
    idem_entry *old = idem_find(e, t, i->key);
    if (old) idem_drop(e, old);
    engine_submit_res r = {0};
    r.id = i->id;
    r.state = i->state;
    r.duplicate = i->duplicate;
    r.merged = i->merged;
    idem_add(e, t, i->key, &r, i->created_at);
    return 0;
}

/* ---- validation ------------------------------------------------------------- */

static int submit_check(engine_t *e, int64_t now, const engine_submit_req *r,
                        const engine_queue_settings *qs, engine_err *err)
{
    (void)e;
    static const struct {
        const char *field;
        size_t at;
        engine_name_kind kind;
        bool required;
    } names[] = {
        {"tenant", offsetof(engine_submit_req, tenant), ENGINE_NAME, true},
        {"queue", offsetof(engine_submit_req, queue), ENGINE_NAME, true},
        {"type", offsetof(engine_submit_req, type), ENGINE_TYPE, true},
        {"key", offsetof(engine_submit_req, key), ENGINE_KEY, false},
        {"unique_key", offsetof(engine_submit_req, unique_key), ENGINE_KEY, false},
        {"idempotency_key", offsetof(engine_submit_req, idempotency_key), ENGINE_KEY, false},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = *(const char *const *)((const char *)r + names[i].at);
        if (!v && names[i].required) {
            engine_errf(err, TENQ_EINVALID, names[i].field, "%s is required", names[i].field);
            return TENQ_EINVALID;
        }
        if (v && engine_check_name(names[i].kind, names[i].field, v, err)) return TENQ_EINVALID;
    }
    if (r->args && r->args_len > qs->max_payload_bytes) {
        engine_errf(err, TENQ_ETOO_LARGE, "args", "args are %u bytes; this queue takes at most %u",
                    r->args_len, qs->max_payload_bytes);
        return TENQ_ETOO_LARGE;
    }
    if (r->has_priority &&
        (r->priority < ENGINE_PRIORITY_MIN || r->priority > ENGINE_PRIORITY_MAX)) {
        engine_errf(err, TENQ_EINVALID, "priority", "priority must be between %d and %d",
                    ENGINE_PRIORITY_MIN, ENGINE_PRIORITY_MAX);
        return TENQ_EINVALID;
    }
    if (r->run_at < 0 || r->run_at > now + ENGINE_RUN_AT_HORIZON_MS) {
        engine_errf(err, TENQ_EINVALID, "run_at",
                    "run_at must be milliseconds since the epoch, at most 10 years ahead");
        return TENQ_EINVALID;
    }
    if (r->traceparent && !engine_traceparent_valid(r->traceparent)) {
        engine_errf(err, TENQ_EINVALID, "traceparent",
                    "traceparent must be a W3C trace context: "
                    "00-<32 hex digits>-<16 hex digits>-<2 hex digits>, lowercase, ids not all 0");
        return TENQ_EINVALID;
    }
    if (r->max_attempts > ENGINE_ATTEMPTS_MAX) {
        engine_errf(err, TENQ_EINVALID, "max_attempts", "max_attempts must be between 1 and %d",
                    ENGINE_ATTEMPTS_MAX);
        return TENQ_EINVALID;
    }
    if (r->timeout_ms &&
        (r->timeout_ms < qs->lease_ms / 3 || r->timeout_ms > ENGINE_TIMEOUT_MAX_MS)) {
        engine_errf(err, TENQ_EINVALID, "timeout_ms",
                    "timeout_ms must be from a third of the queue's lease (%lld ms: workers "
                    "heartbeat that often) to 7 days, or 0 for the queue's",
                    (long long)(qs->lease_ms / 3));
        return TENQ_EINVALID;
    }
    if (r->has_score && !isfinite(r->score)) {
        engine_errf(err, TENQ_EINVALID, "score", "score must be a finite number");
        return TENQ_EINVALID;
    }
    int rc = engine_timing_check(now, r, err);
    return rc ? rc : engine_keys_check(r, err);
}

/* The unique key of `unique: true`: a hash of type and args with a fixed key,
 * so that it is the same after a restart. */
static void auto_unique_key(const engine_submit_req *r, char out[40])
{
    static const hash_key fixed = {0x74656e7175756e69ULL, 0x717565206b657921ULL};
    const char *args = r->args ? r->args : "{}";
    size_t alen = r->args ? r->args_len : 2;
    size_t tlen = strlen(r->type);
    char *buf = xmalloc(tlen + 1 + alen);
    memcpy(buf, r->type, tlen);
    buf[tlen] = 0;
    memcpy(buf + tlen + 1, args, alen);
    uint64_t h = hash_bytes(&fixed, buf, tlen + 1 + alen);
    free(buf);
    snprintf(out, 40, "auto:%016llx", (unsigned long long)h);
}

/* ---- submit ---------------------------------------------------------------- */

bool engine_can_merge_into(const job *tail, const node *home)
{
    /* a job whose args are out of memory takes no payloads (a queue turned
     * merging after its jobs spilled): the next submit makes a job */
    /* nor a job that stored steps: it is part way through (steps.c) */
    return tail && tail->node == home && !(tail->flags & JF_ARGS_OUT) &&
           !(tail->extra && tail->extra->steps) &&
           (tail->state == ENGINE_READY || tail->state == ENGINE_SCHEDULED ||
            tail->state == ENGINE_BLOCKED) &&
           (!(tail->flags & JF_HAS_PAYLOADS) || tail->extra->pl.n < ENGINE_MERGE_MAX_PAYLOADS);
}

static void counters_bump(engine_t *e, pair *p, size_t off)
{
    *(uint64_t *)((char *)&p->c + off) += 1;
    *(uint64_t *)((char *)&p->q->c + off) += 1;
    *(uint64_t *)((char *)&p->t->c + off) += 1;
    *(uint64_t *)((char *)&e->c + off) += 1;
}
#define BUMP(e, p, field) counters_bump((e), (p), offsetof(counters, field))

int engine_submit_check(engine_t *e, int64_t now, const engine_submit_req *r, engine_err *err)
{
    queue *q = r->queue ? engine_queue_find(e, r->queue) : NULL;
    int rc = submit_check(e, now, r, q ? &q->s : &e->cfg.queue_defaults, err);
    if (rc) return rc;
    if (e->cfg.strict_tenants && !engine_tenant_find(e, r->tenant)) {
        engine_errf(err, TENQ_ENOT_FOUND, "tenant", "no tenant named %s (the server is strict)",
                    r->tenant);
        return TENQ_ENOT_FOUND;
    }
    return 0;
}

/* A submit's parents as ids, without repeats (index refs resolved from the
 * answers of the earlier requests of the same submit_many). */
static int deps_resolve(const engine_submit_req *r, const engine_submit_res *earlier,
                        size_t n_earlier, uint64_t *ids, uint32_t *n, engine_err *err)
{
    *n = 0;
    if (r->on_parent_failure != ENGINE_DEPS_CANCEL && r->on_parent_failure != ENGINE_DEPS_RUN) {
        engine_errf(err, TENQ_EINVALID, "on_parent_failure",
                    "on_parent_failure must be \"cancel\" or \"run\"");
        return TENQ_EINVALID;
    }
    if (r->n_depends_on > ENGINE_PARENTS_MAX) {
        engine_errf(err, TENQ_EINVALID, "depends_on", "a job depends on at most %d jobs, not %u",
                    ENGINE_PARENTS_MAX, r->n_depends_on);
        return TENQ_EINVALID;
    }
    for (uint32_t i = 0; i < r->n_depends_on; i++) {
        const engine_dep_ref *d = &r->depends_on[i];
        uint64_t id = d->id;
        if (d->index >= 0) {
            if ((size_t)d->index >= n_earlier) {
                engine_errf(err, TENQ_EINVALID, "depends_on",
                            "depends_on[%u]: index %d names no earlier job of this request", i,
                            d->index);
                return TENQ_EINVALID;
            }
            if (earlier[d->index].code != 0) {
                engine_errf(err, TENQ_ECONFLICT, "depends_on",
                            "depends_on[%u]: the job at index %d was refused", i, d->index);
                return TENQ_ECONFLICT;
            }
            id = earlier[d->index].id;
        } else if (id == 0) {
            engine_errf(err, TENQ_EINVALID, "depends_on", "depends_on[%u]: no job 0", i);
            return TENQ_EINVALID;
        }
        bool seen = false;
        for (uint32_t k = 0; k < *n && !seen; k++) seen = ids[k] == id;
        if (!seen) ids[(*n)++] = id;
    }
    return 0;
}

static int submit_one(engine_t *e, int64_t now, const engine_submit_req *r, engine_submit_res *res,
                      const engine_submit_res *earlier, size_t n_earlier);

int engine_submit(engine_t *e, int64_t now, const engine_submit_req *r, engine_submit_res *res)
{
    return submit_one(e, now, r, res, NULL, 0);
}

int engine_submit_at(engine_t *e, int64_t now, const engine_submit_req *r, engine_submit_res *res,
                     size_t i)
{
    return submit_one(e, now, r, &res[i], res, i);
}

static int submit_one(engine_t *e, int64_t now, const engine_submit_req *r, engine_submit_res *res,
                      const engine_submit_res *earlier, size_t n_earlier)
{
    memset(res, 0, sizeof(*res));
    engine_err *err = &res->err;
    queue *q = r->queue ? engine_queue_find(e, r->queue) : NULL;
    const engine_queue_settings *qs = q ? &q->s : &e->cfg.queue_defaults;
    int rc = submit_check(e, now, r, qs, err);
    if (rc) return res->code = rc;
    if (r->id && engine_job_find(e, r->id)) {
        engine_errf(err, TENQ_ECONFLICT, "id", "job %llu exists already",
                    (unsigned long long)r->id);
        return res->code = TENQ_ECONFLICT;
    }
    tenant *t = engine_tenant_find(e, r->tenant);
    if (!t && e->cfg.strict_tenants) {
        engine_errf(err, TENQ_ENOT_FOUND, "tenant", "no tenant named %s (the server is strict)",
                    r->tenant);
        return res->code = TENQ_ENOT_FOUND;
    }
    /* Idempotent replay: the first answer again, creating nothing. */
    if (r->idempotency_key && t) {
        idem_entry *ie = idem_find(e, t, r->idempotency_key);
        if (ie && ie->info.created_at + e->cfg.idempotency_ttl_ms > now) {
            res->id = ie->info.id;
            res->state = ie->info.state;
            res->duplicate = ie->info.duplicate;
            res->merged = ie->info.merged;
            res->replayed = true;
            job *cur = engine_job_find(e, ie->info.id);
            if (cur) res->state = (engine_state)cur->state;
            return 0;
        }
        if (ie) idem_drop(e, ie);
    }
    uint64_t parents[ENGINE_PARENTS_MAX];
    uint32_t n_parents = 0, pending = 0;
    if (r->n_depends_on) {
        rc = deps_resolve(r, earlier, n_earlier, parents, &n_parents, err);
        if (!rc)
            rc = engine_deps_check(e, t, parents, n_parents, r->on_parent_failure, &pending, err);
        if (rc) return res->code = rc;
    }
    if (r->n_rate_keys && (rc = engine_keys_check_settings(e, t, r, err))) return res->code = rc;
    if (!t) t = engine_tenant_get_or_create(e, r->tenant);
    if (!q) q = engine_queue_get_or_create(e, r->queue);

    char autokey[40];
    const char *ukey = r->unique_key;
    if (!ukey && r->unique) {
        auto_unique_key(r, autokey);
        ukey = autokey;
    }
    const char *args = r->args ? r->args : "{}";
    uint32_t args_len = r->args ? r->args_len : 2;
    double score = r->has_score ? r->score : (double)now;

    job *found = ukey ? uniq_find(e, t, q, ukey) : NULL;
    if (found && now - found->created_at < q->s.dedup_window_ms) {
        res->id = found->id;
        res->state = (engine_state)found->state;
        res->duplicate = true;
        goto answered;
    }

    node *home = engine_node_get_or_create(e, q, r->type, t);
    if (r->n_concurrency_keys || r->n_rate_keys)
        home = engine_group_for(e, now, home, &q->s, r->concurrency_keys, r->n_concurrency_keys,
                                r->rate_keys, r->n_rate_keys);
    lane *ln = r->key ? engine_lane_find(e, t, q, r->key) : NULL;
    if (r->debounce_ms && ln && ln->tail && ln->tail->node == home) {
        job *tail = ln->tail;
        if (engine_debounce_into(e, now, tail, r, args, args_len, score)) {
            tail = ln->tail; /* (moved, when its args took another size) */
            BUMP(e, home->p, submitted);
            res->id = tail->id;
            res->state = (engine_state)tail->state;
            res->debounced = true;
            goto answered;
        }
    }
    if (q->s.merge && ln && !n_parents && engine_can_merge_into(ln->tail, home)) {
        job *tail = ln->tail;
        engine_ensure_payloads(e, tail);
        uint64_t before = tail->extra->pl.bytes;
        engine_payload_add(e, &tail->extra->pl, score, args, args_len);
        engine_job_data_changed(e, tail, before);
        engine_note_job(e, tail, ENGINE_JF_PAYLOADS);
        BUMP(e, home->p, submitted);
        res->id = tail->id;
        res->state = (engine_state)tail->state;
        res->merged = true;
        goto answered;
    }

    job *j = engine_job_alloc(e, r->id ? r->id : engine_take_id(e), home, q->s.merge ? NULL : args,
                              q->s.merge ? 0 : args_len);
    if (r->id) {
        engine_set_next_id(e, r->id + 1);
        /* a given id says nothing of when it came: its lane place is now */
        if (r->key) engine_extra(e, j)->lane_seq = engine_take_id(e);
    }
    j->created_at = now;
    j->run_at = r->run_at > now ? r->run_at : now;
    if (r->debounce_ms && j->run_at < now + r->debounce_ms) j->run_at = now + r->debounce_ms;
    int64_t expire_at = r->expire_at         ? r->expire_at
                        : r->start_within_ms ? now + r->start_within_ms
                                             : 0;
    if (r->debounce_ms || expire_at) {
        job_extra *ex = engine_extra(e, j);
        ex->debounced = r->debounce_ms != 0;
        ex->debounce_until = r->debounce_max_ms ? now + r->debounce_max_ms : 0;
        ex->expire_at = expire_at;
    }
    j->priority = (int16_t)(r->has_priority ? r->priority : 0);
    j->max_attempts = (uint16_t)(r->max_attempts ? r->max_attempts : q->s.max_attempts);
    if (q->s.merge) {
        job_extra *ex = engine_extra(e, j);
        engine_payload_add(e, &ex->pl, score, args, args_len);
        j->flags |= JF_HAS_PAYLOADS;
    }
    if (ukey || r->idempotency_key || r->traceparent || r->timeout_ms) {
        job_extra *ex = engine_extra(e, j);
        ex->timeout_ms = r->timeout_ms;
        if (ukey) ex->unique_key = xstrdup(ukey);
        if (r->idempotency_key) ex->idem_key = xstrdup(r->idempotency_key);
        if (r->traceparent) ex->traceparent = xstrdup(r->traceparent);
    }
    if (idtab_put(&e->jobs, j->id, j) != 0) engine_oom();
    if (found) engine_uniq_remove(e, found);
    if (ukey) engine_uniq_add(e, j);
    if (r->key) {
        if (!ln) ln = engine_lane_get_or_create(e, t, q, r->key);
        engine_lane_join(e, ln, j);
        engine_lane_append(e, ln, j);
    }
    if (n_parents) engine_deps_attach(e, j, parents, n_parents, r->on_parent_failure, pending);
    if (pending) {
        engine_set_state(e, j, ENGINE_WAITING);
        engine_note_job(e, j, 0);
    } else if (ln && ln->head != j) {
        engine_set_state(e, j, ENGINE_BLOCKED);
        engine_note_job(e, j, 0);
    } else {
        engine_make_runnable(e, j, now);
    }
    engine_note_job(e, j, ENGINE_JF_NEW);
    BUMP(e, home->p, submitted);
    if (expire_at) {
        engine_expiry_watch(e, j);
        engine_expire_if_due(e, j, now); /* given an expire_at already past */
    }
    res->id = j->id;
    res->state = (engine_state)j->state;
    res->created = true;

answered:
    if (r->idempotency_key) idem_note(e, idem_add(e, t, r->idempotency_key, res, now));
    return 0;
}

size_t engine_submit_many(engine_t *e, int64_t now, const engine_submit_req *reqs, size_t n,
                          engine_submit_res *res)
{
    size_t ok = 0;
    for (size_t i = 0; i < n; i++) ok += submit_one(e, now, &reqs[i], &res[i], res, i) == 0;
    return ok;
}

/* ---- finishing ----------------------------------------------------------------- */

void engine_finish(engine_t *e, job *j, engine_state s, int64_t now)
{
    bool was_unfinished = j->state <= ENGINE_RUNNING;
    if (j->state == ENGINE_LEASED || j->state == ENGINE_RUNNING) {
        engine_unplace(e, j);
        engine_release_slot(e, j);
    } else {
        engine_unplace(e, j);
    }
    engine_lane_unlink(e, j, now);
    engine_uniq_remove(e, j);
    engine_extra(e, j)->finished_at = now;
    pair *p = job_pair(j);
    if (s == ENGINE_SUCCEEDED) BUMP(e, p, succeeded);
    if (s == ENGINE_CANCELLED) BUMP(e, p, cancelled);
    if (s == ENGINE_EXPIRED) BUMP(e, p, expired);
    engine_set_state(e, j, s);
    engine_note_job(e, j, 0);
    ptr_vec_push(&e->graveyard, j);
    if (was_unfinished) {
        engine_steps_ended(e, j, now);
        engine_deps_ended(e, j, now);
    }
}

/* ---- worker calls --------------------------------------------------------------- */

job *engine_leased_job(engine_t *e, uint64_t id, uint64_t token, engine_err *err)
{
    job *j = engine_job_find(e, id);
    if (!j) {
        engine_errf(err, TENQ_ENOT_FOUND, "id", "no job %llu", (unsigned long long)id);
        return NULL;
    }
    /* A token that holds no lease now is stale, whatever ended its lease
     * (an outcome, its expiry, a cancel): one answer, 409 on "token". */
    if (j->state != ENGINE_LEASED && j->state != ENGINE_RUNNING) {
        engine_errf(err, TENQ_ECONFLICT, "token", "stale token %llu: job %llu is %s, not leased",
                    (unsigned long long)token, (unsigned long long)id,
                    engine_state_name((engine_state)j->state));
        return NULL;
    }
    if (token != j->extra->token) {
        engine_errf(
            err, TENQ_ECONFLICT, "token", "stale token %llu: job %llu is leased with token %llu",
            (unsigned long long)token, (unsigned long long)id, (unsigned long long)j->extra->token);
        return NULL;
    }
    return j;
}

int engine_start(engine_t *e, int64_t now, uint64_t id, uint64_t token, engine_err *err)
{
    job *j = engine_leased_job(e, id, token, err);
    if (!j) return err ? err->code : TENQ_ECONFLICT;
    if (j->state == ENGINE_RUNNING) return 0;
    j->extra->started_at = now;
    engine_set_state(e, j, ENGINE_RUNNING);
    engine_note_job(e, j, 0);
    return 0;
}

int engine_heartbeat(engine_t *e, int64_t now, uint64_t id, uint64_t token, const char *progress,
                     int64_t *lease_until, bool *cancel, engine_err *err)
{
    job *j = engine_leased_job(e, id, token, err);
    if (!j) return err ? err->code : TENQ_ECONFLICT;
    j->extra->deadline = engine_lease_deadline(j, now);
    engine_lease_heap_fix(e, j);
    if (progress) set_str(&j->extra->progress, progress);
    if (lease_until) *lease_until = j->extra->deadline;
    if (cancel) *cancel = (j->flags & JF_CANCEL_REQ) != 0;
    engine_note_job(e, j, 0);
    return 0;
}

int engine_ack(engine_t *e, int64_t now, uint64_t id, uint64_t token, const char *result,
               const char *stats, engine_err *err)
{
    job *j = engine_leased_job(e, id, token, err);
    if (!j) return err ? err->code : TENQ_ECONFLICT;
    set_str(&j->extra->result, result);
    set_str(&j->extra->stats, stats);
    engine_finish(e, j, ENGINE_SUCCEEDED, now);
    engine_note_job(e, j, ENGINE_JF_RESULT);
    engine_batches_settle(e, now);
    return 0;
}

static int64_t job_timeout(const job *j)
{
    int64_t t = j->extra ? j->extra->timeout_ms : 0;
    return t ? t : job_queue(j)->s.timeout_ms;
}

int64_t engine_lease_deadline(const job *j, int64_t now)
{
    int64_t d = now + job_queue(j)->s.lease_ms, t = job_timeout(j);
    if (t && j->extra->leased_at + t < d) d = j->extra->leased_at + t;
    return d;
}

int64_t engine_backoff_ms(engine_t *e, const queue *q, uint32_t attempt)
{
    const engine_queue_settings *s = &q->s;
    int64_t ms;
    switch (s->backoff) {
    case ENGINE_BACKOFF_FIXED: ms = s->backoff_base_ms; break;
    case ENGINE_BACKOFF_EXPONENTIAL: {
        double v = (double)s->backoff_base_ms * pow(2.0, attempt > 60 ? 60 : attempt);
        if (v > (double)s->backoff_max_ms) v = (double)s->backoff_max_ms;
        /* +-10% jitter so that a crowd of failures does not retry in step */
        double jitter = ((double)(engine_rand(e) % 2001) / 1000.0 - 1.0) * 0.1;
        ms = (int64_t)(v * (1.0 + jitter));
        break;
    }
    default: {
        /* attempt^4 + 15 + rand(0..29) * (attempt + 1) seconds */
        double a = attempt;
        double sec = a * a * a * a + 15.0 + (double)(engine_rand(e) % 30) * (a + 1.0);
        ms = (int64_t)(sec * 1000.0);
        break;
    }
    }
    if (ms < 0) ms = 0;
    if (ms > ENGINE_RUN_AT_HORIZON_MS) ms = ENGINE_RUN_AT_HORIZON_MS;
    return ms;
}

/* Merge rule: when a job fails while newer jobs of its lane wait (not
 * leased: they are blocked behind it), their payloads join it. */
static void absorb_waiting(engine_t *e, job *j, int64_t now)
{
    if (!(j->flags & JF_HAS_PAYLOADS) || !j->in_lane || !job_queue(j)->s.merge || j->extra->steps)
        return;
    job *k;
    while ((k = lane_next(j)) && k->state == ENGINE_BLOCKED && k->node == j->node &&
           !(k->flags & JF_ARGS_OUT) && j->extra->pl.n < ENGINE_MERGE_MAX_PAYLOADS) {
        engine_ensure_payloads(e, k);
        uint64_t j_before = j->extra->pl.bytes, k_before = k->extra->pl.bytes;
        engine_payload_move_all(e, &j->extra->pl, &k->extra->pl);
        engine_job_data_changed(e, j, j_before);
        engine_job_data_changed(e, k, k_before);
        k->extra->merged_into = j->id;
        engine_finish(e, k, ENGINE_MERGED, now);
        engine_note_job(e, k, ENGINE_JF_PAYLOADS);
        engine_note_job(e, j, ENGINE_JF_PAYLOADS);
    }
}

/* The end of an attempt that did not succeed (fail or lease expiry).  The
 * job is leased or running and still holds its slot. */
static engine_state attempt_end(engine_t *e, job *j, int64_t now, const engine_fail_req *f)
{
    queue *q = job_queue(j);
    set_str(&j->extra->error, f->error ? f->error : "failed");
    if (f->stats) set_str(&j->extra->stats, f->stats);
    engine_note_job(e, j, f->stats ? ENGINE_JF_RESULT : 0);
    if (f->cancelled || (j->flags & JF_CANCEL_REQ)) {
        engine_finish(e, j, ENGINE_CANCELLED, now);
        return ENGINE_CANCELLED;
    }
    BUMP(e, job_pair(j), failed);
    engine_unplace(e, j);
    engine_release_slot(e, j);
    if (f->no_retry || q->s.delivery == ENGINE_AT_MOST_ONCE || j->attempts >= j->max_attempts) {
        engine_kill(e, j, now, NULL);
        return ENGINE_DEAD;
    }
    int64_t delay = f->has_retry_in ? f->retry_in_ms : engine_backoff_ms(e, q, j->attempts - 1u);
    if (delay < 0) delay = 0;
    if (delay > ENGINE_RUN_AT_HORIZON_MS) delay = ENGINE_RUN_AT_HORIZON_MS;
    j->run_at = now + delay;
    absorb_waiting(e, j, now);
    /* The job stays its lane's head: the lane is blocked until it ends. */
    engine_make_runnable(e, j, now);
    /* a retry never starts at or after its expire_at: watched again */
    if (j->extra->expire_at && !engine_expire_if_due(e, j, now)) engine_expiry_watch(e, j);
    return (engine_state)j->state;
}

/* attempt_end, kept in the job's attempt history (attempts.c). */
static engine_state attempt_failed(engine_t *e, job *j, int64_t now, const engine_fail_req *f,
                                   engine_attempt_outcome outcome)
{
    engine_state s = attempt_end(e, j, now, f);
    engine_attempt_ended(e, j, now, s == ENGINE_CANCELLED ? ENGINE_ATTEMPT_CANCELLED : outcome, s,
                         f->stats);
    return s;
}

int engine_fail(engine_t *e, int64_t now, uint64_t id, uint64_t token, const engine_fail_req *f,
                engine_state *state_out, engine_err *err)
{
    job *j = engine_leased_job(e, id, token, err);
    if (!j) return err ? err->code : TENQ_ECONFLICT;
    if (f->error && strlen(f->error) > 65536) {
        engine_errf(err, TENQ_ETOO_LARGE, "error", "error is longer than 65536 bytes");
        return TENQ_ETOO_LARGE;
    }
    if (f->has_retry_in && (f->retry_in_ms < 0 || f->retry_in_ms > ENGINE_RUN_AT_HORIZON_MS)) {
        engine_errf(err, TENQ_EINVALID, "retry_in_ms", "retry_in_ms must be 0 to 10 years");
        return TENQ_EINVALID;
    }
    engine_state s = attempt_failed(e, j, now, f, ENGINE_ATTEMPT_FAILED);
    engine_batches_settle(e, now);
    if (state_out) *state_out = s;
    return 0;
}

/* ---- time --------------------------------------------------------------------- */

size_t engine_tick(engine_t *e, int64_t now)
{
    size_t changed = 0;
    job *j;
    while ((j = engine_timer_due(e, now))) {
        /* Out of the timer heap already; its run_at has come, so this
         * makes it ready (it keeps run_at for the fifo order). */
        engine_make_runnable(e, j, now);
        changed++;
    }
    while ((j = engine_lease_due(e, now))) {
        char why[96] = "lease expired";
        engine_attempt_outcome outcome = ENGINE_ATTEMPT_EXPIRED;
        int64_t t = job_timeout(j);
        if (t && now >= j->extra->leased_at + t) {
            snprintf(why, sizeof why, "timed out: still running %lld ms after its lease",
                     (long long)t);
            outcome = ENGINE_ATTEMPT_TIMED_OUT;
        }
        engine_fail_req f = {.error = why};
        attempt_failed(e, j, now, &f, outcome);
        changed++;
    }
    changed += engine_rate_tick(e, now);
    changed += engine_expiry_tick(e, now);
    changed += engine_aging_tick(e, now);
    changed += engine_steps_tick(e, now);
    while (!dlist_empty(&e->idem_order)) {
        idem_entry *ie = DLIST_ITEM(e->idem_order.head.next, idem_entry, in_order);
        if (ie->info.created_at + e->cfg.idempotency_ttl_ms > now) break;
        idem_drop(e, ie);
    }
    engine_batches_settle(e, now);
    return changed;
}

/* ---- cancel ------------------------------------------------------------------- */

int engine_cancel(engine_t *e, int64_t now, uint64_t id, engine_state *state_out, engine_err *err)
{
    job *j = engine_job_find(e, id);
    if (!j) {
        engine_errf(err, TENQ_ENOT_FOUND, "id", "no job %llu", (unsigned long long)id);
        return TENQ_ENOT_FOUND;
    }
    switch ((engine_state)j->state) {
    case ENGINE_SCHEDULED:
    case ENGINE_BLOCKED:
    case ENGINE_WAITING:
    case ENGINE_READY: engine_finish(e, j, ENGINE_CANCELLED, now); break;
    case ENGINE_LEASED:
    case ENGINE_RUNNING:
        j->flags |= JF_CANCEL_REQ;
        engine_note_job(e, j, 0);
        break;
    default:
        engine_errf(err, TENQ_ECONFLICT, "state", "job %llu is %s and cannot be cancelled",
                    (unsigned long long)id, engine_state_name((engine_state)j->state));
        return TENQ_ECONFLICT;
    }
    engine_batches_settle(e, now);
    if (state_out) *state_out = (engine_state)j->state;
    return 0;
}

/* ---- death ---------------------------------------------------------------------- */

/* Merge rule at death: only the lowest-scored payload goes to the morgue; the
 * rest join the next waiting job of the lane, or else go back to the queue
 * as a new job at the end of the lane, with attempts reset. */
static void split_at_death(engine_t *e, job *j, int64_t now)
{
    payload_vec *pv = &j->extra->pl;
    payload_vec rest = {0};
    uint64_t j_before = pv->bytes;
    rest.cap = rest.n = pv->n - 1;
    rest.v = xmalloc(rest.cap * sizeof(*rest.v));
    rest.hashes = xmalloc(rest.cap * sizeof(*rest.hashes));
    memcpy(rest.v, pv->v + 1, rest.n * sizeof(*rest.v));
    memcpy(rest.hashes, pv->hashes + 1, rest.n * sizeof(*rest.hashes));
    pv->n = 1;
    rest.bytes = pv->bytes - pv->v[0].len;
    pv->bytes = pv->v[0].len;
    engine_job_data_changed(e, j, j_before);
    engine_note_job(e, j, ENGINE_JF_PAYLOADS);
    job *k = lane_next(j);
    if (k && k->state == ENGINE_BLOCKED && k->node == j->node && !(k->flags & JF_ARGS_OUT)) {
        engine_ensure_payloads(e, k);
        uint64_t k_before = k->extra->pl.bytes;
        engine_payload_move_all(e, &k->extra->pl, &rest);
        engine_job_data_changed(e, k, k_before);
        k->attempts = 0;
        engine_note_job(e, k, ENGINE_JF_PAYLOADS);
        return;
    }
    job *l = engine_job_alloc(e, engine_take_id(e), j->node, NULL, 0);
    job_extra *ex = engine_extra(e, l);
    ex->pl = rest;
    l->flags |= JF_HAS_PAYLOADS;
    l->created_at = now;
    l->run_at = now;
    l->priority = j->priority;
    l->max_attempts = j->max_attempts;
    if (idtab_put(&e->jobs, l->id, l) != 0) engine_oom();
    if (j->in_lane) {
        engine_lane_join(e, j->in_lane->lane, l);
        engine_lane_append(e, j->in_lane->lane, l);
    }
    if (l->in_lane && l->in_lane->lane->head != l) {
        engine_set_state(e, l, ENGINE_BLOCKED);
        engine_note_job(e, l, 0);
    } else {
        engine_make_runnable(e, l, now);
    }
    engine_note_job(e, l, ENGINE_JF_NEW | ENGINE_JF_PAYLOADS);
}

void engine_kill(engine_t *e, job *j, int64_t now, const char *error)
{
    job_extra *ex = engine_extra(e, j);
    if (error) set_str(&ex->error, error);
    if ((j->flags & JF_HAS_PAYLOADS) && ex->pl.n > 1) split_at_death(e, j, now);
    engine_lane_unlink(e, j, now);
    engine_uniq_remove(e, j);
    ex->finished_at = now;
    BUMP(e, job_pair(j), dead);
    bool was_unfinished = j->state <= ENGINE_RUNNING;
    engine_set_state(e, j, ENGINE_DEAD);
    engine_morgue_insert(e, j);
    engine_note_job(e, j, 0);
    if (was_unfinished) {
        engine_steps_ended(e, j, now);
        engine_deps_ended(e, j, now);
    }
}
