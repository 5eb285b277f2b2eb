// SPDX-License-Identifier: Apache-2.0
/* Quotas: how many unfinished jobs, and how many bytes of their args, a
 * tenant or a queue may hold (docs/SEMANTICS.md, "Quotas").
 *
 * Every tenant, queue and (queue, tenant) pair counts its unfinished jobs by
 * state (engine_set_state) and the bytes of their data (counters'
 * queued_bytes: a job's args, or its payloads on a merging queue), moved
 * when a job enters or leaves the unfinished states and when a payload
 * joins or leaves an unfinished job.  A request is admitted or refused
 * whole before any of it is submitted: engine_quota_admit counts what the
 * request would add per tenant and per queue, as if every job were new (a
 * duplicate or a merge adds less, never more). */
#include "internal.h"

uint64_t engine_job_data_bytes(const job *j)
{
    if (j->flags & JF_HAS_PAYLOADS) return j->extra->pl.bytes;
    if (j->flags & JF_ARGS_OUT) return engine_args_spilled_len(j);
    return strlen(j->args);
}

static void bytes_add(engine_t *e, job *j, int64_t d)
{
    pair *p = job_pair(j);
    p->c.queued_bytes += (uint64_t)d;
    p->q->c.queued_bytes += (uint64_t)d;
    p->t->c.queued_bytes += (uint64_t)d;
    e->c.queued_bytes += (uint64_t)d;
}

void engine_job_data_changed(engine_t *e, job *j, uint64_t before)
{
    if (!state_unfinished((engine_state)j->state)) return;
    uint64_t after = engine_job_data_bytes(j);
    if (after != before) bytes_add(e, j, (int64_t)(after - before));
}

void engine_quota_moved(engine_t *e, job *j, engine_state old, engine_state s)
{
    bool was = state_unfinished(old), is = state_unfinished(s);
    if (was == is) return;
    int64_t b = (int64_t)engine_job_data_bytes(j);
    bytes_add(e, j, is ? b : -b);
}

static uint64_t unfinished(const counters *c)
{
    uint64_t n = 0;
    for (int s = 0; s < ENGINE_DEAD; s++) n += c->n[s];
    return n;
}

/* ---- admitting a request ------------------------------------------------------- */

/* What a request adds to one tenant or one queue. */
typedef struct tally {
    bool is_queue;
    const char *name;
    uint64_t hash;
    uint64_t jobs, bytes;
} tally;

typedef struct tally_key {
    bool is_queue;
    const char *name;
} tally_key;

static bool tally_eq(const void *item, const void *key)
{
    const tally *t = item;
    const tally_key *k = key;
    return t->is_queue == k->is_queue && strcmp(t->name, k->name) == 0;
}

static tally *tally_get(engine_t *e, htab *h, ptr_vec *all, bool is_queue, const char *name)
{
    uint64_t hash = hash_bytes(&e->hk, name, strlen(name)) ^ (is_queue ? 0x51 : 0x7e);
    tally_key k = {is_queue, name};
    tally *t = htab_find(h, hash, tally_eq, &k);
    if (t) return t;
    t = xcalloc(1, sizeof(*t));
    t->is_queue = is_queue;
    t->name = name;
    t->hash = hash;
    if (htab_insert(h, hash, t) != 0) engine_oom();
    ptr_vec_push(all, t);
    return t;
}

/* The limit a tally would pass: 0, or the refusal. */
static int tally_check(engine_t *e, const tally *t, engine_err *err)
{
    const char *what = t->is_queue ? "queue" : "tenant";
    uint32_t max_jobs;
    int64_t max_bytes;
    const counters *c = NULL;
    if (t->is_queue) {
        const queue *q = engine_queue_find(e, t->name);
        const engine_queue_settings *s = q ? &q->s : &e->cfg.queue_defaults;
        max_jobs = s->max_queued;
        max_bytes = s->max_queued_bytes;
        c = q ? &q->c : NULL;
    } else {
        const tenant *tn = engine_tenant_find(e, t->name);
        const engine_tenant_settings *s = tn ? &tn->s : &e->cfg.tenant_defaults;
        max_jobs = s->max_queued;
        max_bytes = s->max_queued_bytes;
        c = tn ? &tn->c : NULL;
    }
    uint64_t jobs = c ? unfinished(c) : 0, bytes = c ? c->queued_bytes : 0;
    if (max_jobs != ENGINE_UNLIMITED && jobs + t->jobs > max_jobs) {
        engine_errf(err, TENQ_EQUOTA_EXCEEDED, "max_queued",
                    "%s %s holds %llu unfinished jobs of its max_queued %u; this request adds "
                    "%llu",
                    what, t->name, (unsigned long long)jobs, max_jobs, (unsigned long long)t->jobs);
        return TENQ_EQUOTA_EXCEEDED;
    }
    if (max_bytes > 0 && bytes + t->bytes > (uint64_t)max_bytes) {
        engine_errf(err, TENQ_EQUOTA_EXCEEDED, "max_queued_bytes",
                    "%s %s holds %llu bytes of args in unfinished jobs of its max_queued_bytes "
                    "%lld; this request adds %llu",
                    what, t->name, (unsigned long long)bytes, (long long)max_bytes,
                    (unsigned long long)t->bytes);
        return TENQ_EQUOTA_EXCEEDED;
    }
    return 0;
}

int engine_quota_admit(engine_t *e, const engine_submit_req *reqs, const bool *ok, size_t n,
                       engine_err *err)
{
    htab h = {0};
    ptr_vec all = {0};
    int rc = 0;
    tally *t = NULL, *q = NULL; /* the last job's: a run of one tenant's queue hashes once */
    for (size_t i = 0; i < n; i++) {
        const engine_submit_req *r = &reqs[i];
        if ((ok && !ok[i]) || !r->tenant || !r->queue) continue;
        uint64_t bytes = r->args ? r->args_len : 2;
        if (!t || strcmp(t->name, r->tenant) != 0) t = tally_get(e, &h, &all, false, r->tenant);
        t->jobs++;
        t->bytes += bytes;
        if (!q || strcmp(q->name, r->queue) != 0) q = tally_get(e, &h, &all, true, r->queue);
        q->jobs++;
        q->bytes += bytes;
    }
    for (size_t i = 0; i < all.n && !rc; i++) rc = tally_check(e, all.v[i], err);
    for (size_t i = 0; i < all.n; i++) free(all.v[i]);
    free(all.v);
    htab_free(&h);
    return rc;
}

size_t engine_job_memory_cost(const engine_submit_req *r)
{
    size_t len = r->args ? r->args_len : 2;
    size_t c = mem_job(len);
    if (r->unique || r->unique_key || r->idempotency_key || r->traceparent || r->timeout_ms ||
        r->n_depends_on)
        c += mem_chunk(sizeof(job_extra));
    if (r->key) c += mem_chunk(sizeof(lane_link));
    /* a new key each and a new group, at most */
    uint32_t nk = 0;
    for (uint32_t i = 0; i < r->n_concurrency_keys && i < ENGINE_JOB_KEYS_MAX; i++, nk++)
        c += mem_chunk(sizeof(tkey) +
                       (r->concurrency_keys[i].key ? strlen(r->concurrency_keys[i].key) : 0) + 1) +
             sizeof(htab_slot);
    for (uint32_t i = 0; i < r->n_rate_keys && i < ENGINE_JOB_KEYS_MAX; i++, nk++)
        c += mem_chunk(sizeof(tkey) + (r->rate_keys[i].key ? strlen(r->rate_keys[i].key) : 0) + 1) +
             sizeof(htab_slot);
    if (nk) c += mem_chunk(sizeof(node) + sizeof(gkeys) + nk * sizeof(gkey)) + sizeof(htab_slot);
    return c;
}
