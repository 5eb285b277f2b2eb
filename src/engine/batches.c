// SPDX-License-Identifier: Apache-2.0
/* Batches: groups of jobs with callbacks (engine.h, "batches").
 *
 * A batch keeps counters of its jobs by state, moved by engine_set_state
 * (O(1) a change).  A change that may make a callback due puts the batch on
 * e->batch_due; engine_batches_settle, called at the end of every call that
 * may finish or kill a job, submits what is due, so that a callback job is
 * in the change list of the outcome that made it.  Batches stay in memory
 * for the engine's life (a few hundred bytes each), by id in e->batches. */
#include "internal.h"

static const char *const cb_names[ENGINE_NCALLBACKS] = {"on_complete", "on_success", "on_death"};

const char *engine_callback_name(int kind)
{
    return kind >= 0 && kind < ENGINE_NCALLBACKS ? cb_names[kind] : "unknown";
}

int engine_callback_parse(const char *name)
{
    for (int i = 0; name && i < ENGINE_NCALLBACKS; i++)
        if (!strcmp(name, cb_names[i])) return i;
    return -1;
}

static uint64_t pending_of(const uint64_t *n)
{
    return n[ENGINE_SCHEDULED] + n[ENGINE_WAITING] + n[ENGINE_BLOCKED] + n[ENGINE_READY] +
           n[ENGINE_LEASED] + n[ENGINE_RUNNING];
}

uint64_t engine_batch_pending(const engine_batch_info *b)
{
    return pending_of(b->n);
}

static batch *batch_find(const engine_t *e, uint64_t id)
{
    size_t lo = 0, hi = e->batches.n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        batch *b = e->batches.v[mid];
        if (b->id == id) return b;
        if (b->id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static char *dup_or_null(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

/* A copy of a callback's spec: the fields a callback keeps. */
static engine_submit_req *spec_copy(const engine_submit_req *r)
{
    engine_submit_req *c = xcalloc(1, sizeof(*c));
    c->queue = dup_or_null(r->queue);
    c->type = dup_or_null(r->type);
    c->key = dup_or_null(r->key);
    if (r->args) {
        char *a = xmalloc(r->args_len + 1);
        memcpy(a, r->args, r->args_len);
        a[r->args_len] = 0;
        c->args = a;
        c->args_len = r->args_len;
    }
    c->has_priority = r->has_priority;
    c->priority = r->priority;
    c->max_attempts = r->max_attempts;
    c->timeout_ms = r->timeout_ms;
    c->traceparent = dup_or_null(r->traceparent);
    return c;
}

static void spec_free(engine_submit_req *c)
{
    if (!c) return;
    free((char *)c->queue);
    free((char *)c->type);
    free((char *)c->key);
    free((char *)c->args);
    free((char *)c->traceparent);
    free(c);
}

static void batch_free(batch *b)
{
    for (int k = 0; k < ENGINE_NCALLBACKS; k++) spec_free(b->cb[k]);
    free(b);
}

void engine_batches_free(engine_t *e)
{
    for (size_t i = 0; i < e->batches.n; i++) batch_free(e->batches.v[i]);
    free(e->batches.v);
    free(e->batch_due.v);
    free(e->batch_chg.v);
}

static void note_batch(engine_t *e, batch *b)
{
    if (e->loading || b->chg) return;
    b->chg = true;
    ptr_vec_push(&e->batch_chg, b);
    engine_change *c = engine_change_push(e);
    c->kind = ENGINE_CH_BATCH;
    c->id = b->id;
}

void engine_batches_changes_clear(engine_t *e)
{
    for (size_t i = 0; i < e->batch_chg.n; i++) ((batch *)e->batch_chg.v[i])->chg = false;
    e->batch_chg.n = 0;
}

static void mark_due(engine_t *e, batch *b)
{
    if (b->due || e->loading) return;
    b->due = true;
    ptr_vec_push(&e->batch_due, b);
}

void engine_batch_job_moved(engine_t *e, job *j, engine_state old, engine_state s)
{
    batch *b = j->extra->batch;
    if (old < ENGINE_NSTATES) b->n[old]--;
    if (s < ENGINE_NSTATES)
        b->n[s]++;
    else
        b->deleted++;
    /* a death is history: kept whatever the job does after (a requeue from
     * the morgue), stored with the death (note_batch), so that on_success
     * never fires for a batch that had one, across restarts too */
    bool died = s == ENGINE_DEAD && !e->loading;
    if (died) b->deaths++;
    /* the stored counters: final states, deletions and deaths */
    if (died || s >= ENGINE_SUCCEEDED || old >= ENGINE_SUCCEEDED) note_batch(e, b);
    if (b->closed_at) return;
    /* on_death at the first death only: not again at a later one, even when
     * the first one's callback was refused */
    if (died && b->deaths == 1 && b->cb[ENGINE_CB_DEATH] && !b->cb_id[ENGINE_CB_DEATH]) {
        b->death = true;
        mark_due(e, b);
    }
    if (pending_of(b->n) == 0) mark_due(e, b);
}

/* Submits callback k of b; its job carries the batch. */
static void fire(engine_t *e, int64_t now, batch *b, int k)
{
    engine_submit_req r = *b->cb[k];
    r.tenant = b->t->name;
    engine_submit_res res;
    /* A refusal (its queue's settings changed since, a strict server lost
     * the tenant) leaves the callback unsubmitted: its id stays 0. */
    if (engine_submit(e, now, &r, &res) == 0 && res.created) {
        job *cj = engine_job_find(e, res.id);
        job_extra *ex = engine_extra(e, cj);
        ex->batch = b;
        ex->batch_role = (uint8_t)(1 + k);
        b->cb_id[k] = res.id;
        e->callbacks_made++;
    } else if (res.code == 0) {
        b->cb_id[k] = res.id; /* merged into or answered by a waiting job */
    }
    note_batch(e, b);
}

void engine_batches_settle_due(engine_t *e, int64_t now)
{
    /* callbacks may finish nothing, but a callback of one batch may be a
     * job of none: the list does not grow while it is walked */
    for (size_t i = 0; i < e->batch_due.n; i++) {
        batch *b = e->batch_due.v[i];
        b->due = false;
        if (b->closed_at) continue;
        if (b->death && !b->cb_id[ENGINE_CB_DEATH]) fire(e, now, b, ENGINE_CB_DEATH);
        b->death = false;
        if (pending_of(b->n) == 0 && b->total > 0) {
            if (b->cb[ENGINE_CB_COMPLETE]) fire(e, now, b, ENGINE_CB_COMPLETE);
            /* every job succeeded, and none ever died (a cancel or a merge
             * is final: n[SUCCEEDED] falls short of total for good) */
            if (b->cb[ENGINE_CB_SUCCESS] && b->n[ENGINE_SUCCEEDED] == b->total && !b->deaths)
                fire(e, now, b, ENGINE_CB_SUCCESS);
            b->closed_at = now;
            e->batches_open--;
            note_batch(e, b);
        }
    }
    e->batch_due.n = 0;
}

/* ---- checks ------------------------------------------------------------------ */

static int refuse(engine_err *err, int code, const char *field, const char *msg)
{
    engine_errf(err, code, field, "%s", msg);
    return code;
}

/* A job's depends_on: jobs by id, and earlier jobs of the same request by
 * index ({"index": k}, k < i), all checked before any job is made, so that
 * a batch is made whole or not at all. */
static int check_job_deps(engine_t *e, const char *tenant, const engine_submit_req *r, size_t i,
                          engine_err *err)
{
    if (!r->n_depends_on) return 0;
    if (r->on_parent_failure != ENGINE_DEPS_CANCEL && r->on_parent_failure != ENGINE_DEPS_RUN)
        return refuse(err, TENQ_EINVALID, "on_parent_failure",
                      "on_parent_failure must be \"cancel\" or \"run\"");
    if (r->n_depends_on > ENGINE_PARENTS_MAX) {
        engine_errf(err, TENQ_EINVALID, "depends_on", "a job depends on at most %d jobs, not %u",
                    ENGINE_PARENTS_MAX, r->n_depends_on);
        return TENQ_EINVALID;
    }
    uint64_t ids[ENGINE_PARENTS_MAX];
    uint32_t n = 0, pending;
    for (uint32_t k = 0; k < r->n_depends_on; k++) {
        const engine_dep_ref *d = &r->depends_on[k];
        if (d->index < 0) {
            ids[n++] = d->id;
        } else if ((size_t)d->index >= i) {
            engine_errf(err, TENQ_EINVALID, "depends_on",
                        "depends_on[%u]: index %d names no earlier job of this request", k,
                        d->index);
            return TENQ_EINVALID;
        }
    }
    return engine_deps_check(e, engine_tenant_find(e, tenant), ids, n, r->on_parent_failure,
                             &pending, err);
}

static int check_job(engine_t *e, int64_t now, const char *tenant, const engine_submit_req *r,
                     size_t i, engine_err *err)
{
    if (!r->tenant || strcmp(r->tenant, tenant))
        return refuse(err, TENQ_EINVALID, "tenant",
                      "every job of a batch is of the batch's tenant");
    if (r->unique || r->unique_key)
        return refuse(err, TENQ_EINVALID, r->unique ? "unique" : "unique_key",
                      "a job of a batch may not be unique");
    if (r->idempotency_key)
        return refuse(err, TENQ_EINVALID, "idempotency_key",
                      "a job of a batch takes no idempotency_key (send the request with an "
                      "Idempotency-Key header)");
    if (r->id) return refuse(err, TENQ_EINVALID, "id", "a job of a batch takes no id");
    if (r->debounce_ms)
        return refuse(err, TENQ_EINVALID, "debounce_ms",
                      "a job of a batch is always made: it takes no debounce_ms");
    int rc = engine_submit_check(e, now, r, err);
    if (!rc) rc = check_job_deps(e, tenant, r, i, err);
    if (rc) return rc;
    queue *q = engine_queue_find(e, r->queue);
    if (q && q->s.merge)
        return refuse(err, TENQ_EINVALID, "queue",
                      "a job of a batch may not go to a merging queue");
    return 0;
}

static int check_callback(engine_t *e, int64_t now, const char *tenant, int k,
                          const engine_submit_req *cb, engine_err *err)
{
    static const char *const fields[ENGINE_NCALLBACKS][4] = {
        {"on_complete", "on_complete.queue", "on_complete.type", "on_complete.args"},
        {"on_success", "on_success.queue", "on_success.type", "on_success.args"},
        {"on_death", "on_death.queue", "on_death.type", "on_death.args"},
    };
    engine_submit_req r = *cb;
    r.tenant = tenant;
    if (r.unique || r.unique_key || r.idempotency_key || r.id || r.run_at || r.has_score ||
        r.n_depends_on || r.n_concurrency_keys || r.n_rate_keys || r.expire_at ||
        r.start_within_ms || r.debounce_ms || r.debounce_max_ms)
        return refuse(err, TENQ_EINVALID, fields[k][0],
                      "a callback takes queue, type, args, key, priority, max_attempts, "
                      "timeout_ms and traceparent only");
    int rc = engine_submit_check(e, now, &r, err);
    if (rc && err) {
        const char *f = err->field;
        err->field = fields[k][0];
        for (int i = 1; i < 4; i++)
            if (f && !strcmp(f, fields[k][i] + strlen(fields[k][0]) + 1)) err->field = fields[k][i];
    }
    return rc;
}

/* Submits the checked jobs into b. */
static void add_jobs(engine_t *e, int64_t now, batch *b, const engine_submit_req *jobs, size_t n,
                     engine_submit_res *res)
{
    for (size_t i = 0; i < n; i++) {
        /* depends_on may name res[0..i) */
        if (engine_submit_at(e, now, &jobs[i], res, i) != 0 || !res[i].created) continue;
        job *j = engine_job_find(e, res[i].id);
        job_extra *ex = engine_extra(e, j);
        ex->batch = b;
        ex->batch_role = ENGINE_BATCH_MEMBER;
        j->flags |= JF_IN_BATCH;
        b->total++;
        b->n[j->state]++;
    }
    note_batch(e, b);
}

static int check_jobs(engine_t *e, int64_t now, const char *tenant, const engine_submit_req *jobs,
                      size_t n, size_t *bad, engine_err *err)
{
    for (size_t i = 0; i < n; i++) {
        int rc = check_job(e, now, tenant, &jobs[i], i, err);
        if (rc) {
            if (bad) *bad = i;
            return rc;
        }
    }
    return 0;
}

int engine_batch_create(engine_t *e, int64_t now, const char *tenant,
                        const engine_submit_req *const cbs[ENGINE_NCALLBACKS],
                        const engine_submit_req *jobs, size_t n, uint64_t *batch_id,
                        engine_submit_res *res, size_t *bad, engine_err *err)
{
    if (bad) *bad = SIZE_MAX;
    if (!tenant || !engine_name_valid(tenant))
        return refuse(err, TENQ_EINVALID, "tenant", "a batch needs a valid tenant");
    if (e->cfg.strict_tenants && !engine_tenant_find(e, tenant)) {
        engine_errf(err, TENQ_ENOT_FOUND, "tenant", "no tenant named %s (the server is strict)",
                    tenant);
        return TENQ_ENOT_FOUND;
    }
    if (n == 0) return refuse(err, TENQ_EINVALID, "jobs", "a batch needs at least one job");
    for (int k = 0; k < ENGINE_NCALLBACKS; k++) {
        int rc = cbs[k] ? check_callback(e, now, tenant, k, cbs[k], err) : 0;
        if (rc) return rc;
    }
    int rc = check_jobs(e, now, tenant, jobs, n, bad, err);
    if (rc) return rc;
    batch *b = xcalloc(1, sizeof(*b));
    if (e->next_batch_id == 0) e->next_batch_id = 1;
    b->id = e->next_batch_id++;
    b->t = engine_tenant_get_or_create(e, tenant);
    b->created_at = now;
    for (int k = 0; k < ENGINE_NCALLBACKS; k++)
        if (cbs[k]) b->cb[k] = spec_copy(cbs[k]);
    ptr_vec_push(&e->batches, b);
    e->batches_open++;
    add_jobs(e, now, b, jobs, n, res);
    if (batch_id) *batch_id = b->id;
    return 0;
}

int engine_batch_add(engine_t *e, int64_t now, uint64_t batch_id, const char *tenant,
                     const engine_submit_req *jobs, size_t n, engine_submit_res *res, size_t *bad,
                     engine_err *err)
{
    if (bad) *bad = SIZE_MAX;
    batch *b = batch_find(e, batch_id);
    if (!b || (tenant && strcmp(tenant, b->t->name))) {
        engine_errf(err, TENQ_ENOT_FOUND, "id", "no batch %llu", (unsigned long long)batch_id);
        return TENQ_ENOT_FOUND;
    }
    if (b->closed_at) {
        engine_errf(err, TENQ_ECONFLICT, "batch_closed",
                    "batch %llu is closed: its jobs all finished and its callbacks were submitted",
                    (unsigned long long)batch_id);
        return TENQ_ECONFLICT;
    }
    if (n == 0) return refuse(err, TENQ_EINVALID, "jobs", "add at least one job");
    int rc = check_jobs(e, now, b->t->name, jobs, n, bad, err);
    if (rc) return rc;
    add_jobs(e, now, b, jobs, n, res);
    return 0;
}

/* ---- reads ----------------------------------------------------------------------- */

static void fill(const batch *b, engine_batch_info *o)
{
    memset(o, 0, sizeof(*o));
    o->id = b->id;
    o->tenant = b->t->name;
    o->created_at = b->created_at;
    o->closed_at = b->closed_at;
    o->total = b->total;
    o->deleted = b->deleted;
    o->deaths = b->deaths;
    memcpy(o->n, b->n, sizeof(o->n));
    for (int k = 0; k < ENGINE_NCALLBACKS; k++) {
        o->callbacks[k] = b->cb[k];
        o->callback_ids[k] = b->cb_id[k];
    }
}

bool engine_batch_get(engine_t *e, uint64_t id, engine_batch_info *out)
{
    batch *b = batch_find(e, id);
    if (!b) return false;
    fill(b, out);
    return true;
}

size_t engine_batch_list(engine_t *e, const char *tenant, uint64_t before, size_t max,
                         uint64_t *ids)
{
    size_t got = 0;
    for (size_t i = e->batches.n; i-- > 0 && got < max;) {
        batch *b = e->batches.v[i];
        if (before && b->id >= before) continue;
        if (tenant && strcmp(tenant, b->t->name)) continue;
        ids[got++] = b->id;
    }
    return got;
}

size_t engine_batch_count(const engine_t *e)
{
    return e->batches.n;
}

size_t engine_batch_open_count(const engine_t *e)
{
    return e->batches_open;
}

uint64_t engine_batch_callbacks_made(const engine_t *e)
{
    return e->callbacks_made;
}

/* ---- recovery ----------------------------------------------------------------------- */

int engine_load_batch(engine_t *e, const engine_batch_info *in, engine_err *err)
{
    if (!in->id || !in->tenant || !engine_name_valid(in->tenant)) {
        engine_errf(err, TENQ_EINVALID, "batch", "batch %llu has a bad id or tenant",
                    (unsigned long long)in->id);
        return TENQ_EINVALID;
    }
    if (e->batches.n && ((batch *)e->batches.v[e->batches.n - 1])->id >= in->id) {
        engine_errf(err, TENQ_EINVALID, "batch", "batch %llu loaded out of order",
                    (unsigned long long)in->id);
        return TENQ_EINVALID;
    }
    batch *b = xcalloc(1, sizeof(*b));
    b->id = in->id;
    b->t = engine_tenant_get_or_create(e, in->tenant);
    b->created_at = in->created_at;
    b->closed_at = in->closed_at;
    b->total = in->total;
    b->deleted = in->deleted;
    b->deaths = in->deaths;
    for (int s = ENGINE_SUCCEEDED; s < ENGINE_NSTATES; s++) b->n[s] = in->n[s];
    for (int k = 0; k < ENGINE_NCALLBACKS; k++) {
        if (in->callbacks[k]) b->cb[k] = spec_copy(in->callbacks[k]);
        b->cb_id[k] = in->callback_ids[k];
    }
    ptr_vec_push(&e->batches, b);
    if (!b->closed_at) e->batches_open++;
    if (in->id >= e->next_batch_id) e->next_batch_id = in->id + 1;
    return 0;
}

int engine_load_batch_job(engine_t *e, uint64_t job_id, uint64_t batch_id, int role)
{
    job *j = engine_job_find(e, job_id);
    batch *b = batch_find(e, batch_id);
    if (!j || !b || role < 0 || role > ENGINE_NCALLBACKS) return TENQ_ENOT_FOUND;
    job_extra *ex = engine_extra(e, j);
    if (ex->batch) return 0; /* listed twice */
    ex->batch = b;
    ex->batch_role = (uint8_t)role;
    if (role == ENGINE_BATCH_MEMBER) {
        j->flags |= JF_IN_BATCH;
        if (j->state < ENGINE_NSTATES) b->n[j->state]++;
    }
    return 0;
}
