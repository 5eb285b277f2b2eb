// SPDX-License-Identifier: Apache-2.0
/* Durable steps: a handler's stored results, and the waits that park a job
 * between attempts (a sleep, an event, a child job).
 *
 * A job that stored a step carries a job_steps in its extra: how many steps,
 * their results' bytes, and a 64-bit hash of each name (a name's second
 * store is found without keeping the names); the results are rows of the
 * store alone, read with the job's steps.  A lease notes how many steps
 * were stored before it (n_before): a name stored since is this attempt's
 * own (sent again after a lost answer: answered as stored), one stored
 * before is an earlier attempt's (its result is in the job's steps).
 *
 * A parked job is not leased: its lease ended as an attempt "suspended",
 * its slot went back, and it stays its lane's head.  A sleep makes it
 * scheduled (the timer heap); a wait for an event makes it waiting, listed
 * under its (tenant, key) in e->evkeys and, with a timeout, in e->waits by
 * that time; a wait for a child makes it waiting, named by the child
 * (its job_steps' awaited_by).  Each is O(1) or O(log n) to start and to
 * end, and costs nothing to a lease: a parked job is in no ready heap.
 *
 * An event that woke no job is kept in e->evkeys with its payload until
 * cfg.event_window_ms passed (e->kept_order, by that time), and the first
 * wait for its key takes it.  Kept events and their keys count in the
 * jobs' memory (e->mem_bytes). */
#include "internal.h"

static const char *const kind_names[ENGINE_NSTEP_KINDS] = {"step", "sleep", "event", "child"};

const char *engine_step_kind_name(engine_step_kind k)
{
    return (unsigned)k < ENGINE_NSTEP_KINDS ? kind_names[k] : NULL;
}

int engine_step_kind_parse(const char *name)
{
    for (int i = 0; name && i < ENGINE_NSTEP_KINDS; i++)
        if (strcmp(kind_names[i], name) == 0) return i;
    return -1;
}

/* ---- the events' table: (tenant, key) -> jobs waiting, events kept --------- */

typedef struct ev_key {
    uint64_t hash;
    tenant *t;
    dlist waiters; /* job_steps (in_key), in the order they began to wait */
    dlist kept;    /* kept_event (in_key), oldest first */
    char key[];
} ev_key;

typedef struct kept_event {
    uint64_t id;
    int64_t created_at, expires_at;
    ev_key *k;
    dlink in_key, in_order;
    uint32_t len;
    char payload[];
} kept_event;

static size_t mem_evkey(const ev_key *k)
{
    return mem_chunk(sizeof(ev_key) + strlen(k->key) + 1);
}

static size_t mem_kept(uint32_t len)
{
    return mem_chunk(sizeof(kept_event) + len + 1);
}

typedef struct evk_lookup {
    const tenant *t;
    const char *key;
} evk_lookup;

static bool evk_eq(const void *item, const void *key)
{
    const ev_key *k = item;
    const evk_lookup *l = key;
    return k->t == l->t && strcmp(k->key, l->key) == 0;
}

static uint64_t evk_hash(engine_t *e, const tenant *t, const char *key)
{
    return hash_combine(t->hash ^ 0xe7e7, hash_bytes(&e->hk, key, strlen(key)));
}

static ev_key *evk_find(engine_t *e, tenant *t, const char *key)
{
    evk_lookup l = {t, key};
    return htab_find(&e->evkeys, evk_hash(e, t, key), evk_eq, &l);
}

static ev_key *evk_get(engine_t *e, tenant *t, const char *key)
{
    ev_key *k = evk_find(e, t, key);
    if (k) return k;
    size_t len = strlen(key);
    k = xmalloc(sizeof(*k) + len + 1);
    k->hash = evk_hash(e, t, key);
    k->t = t;
    dlist_init(&k->waiters);
    dlist_init(&k->kept);
    memcpy(k->key, key, len + 1);
    if (htab_insert(&e->evkeys, k->hash, k) != 0) engine_oom();
    e->mem_bytes += mem_evkey(k);
    return k;
}

static void evk_maybe_free(engine_t *e, ev_key *k)
{
    if (!dlist_empty(&k->waiters) || !dlist_empty(&k->kept)) return;
    htab_remove(&e->evkeys, k->hash, k);
    e->mem_bytes -= mem_evkey(k);
    free(k);
}

static kept_event *kept_add(engine_t *e, ev_key *k, uint64_t id, const char *payload, uint32_t len,
                            int64_t created_at, int64_t expires_at)
{
    kept_event *ke = xmalloc(sizeof(*ke) + len + 1);
    ke->id = id;
    ke->created_at = created_at;
    ke->expires_at = expires_at;
    ke->k = k;
    ke->len = len;
    memcpy(ke->payload, payload, len);
    ke->payload[len] = 0;
    dlist_push_back(&k->kept, &ke->in_key);
    /* by expires_at, from the tail: events come in that order */
    dlink *at = e->kept_order.head.prev;
    while (at != &e->kept_order.head &&
           DLIST_ITEM(at, kept_event, in_order)->expires_at > expires_at)
        at = at->prev;
    ke->in_order.prev = at;
    ke->in_order.next = at->next;
    at->next->prev = &ke->in_order;
    at->next = &ke->in_order;
    e->n_kept++;
    e->mem_bytes += mem_kept(len);
    return ke;
}

static void kept_drop(engine_t *e, kept_event *ke)
{
    ev_key *k = ke->k;
    dlist_remove(&ke->in_key);
    dlist_remove(&ke->in_order);
    e->n_kept--;
    e->mem_bytes -= mem_kept(ke->len);
    free(ke);
    evk_maybe_free(e, k);
}

/* The oldest event of the key still within its window, or NULL. */
static kept_event *kept_first(ev_key *k, int64_t now)
{
    DLIST_FOREACH(it, &k->kept)
    {
        kept_event *ke = DLIST_ITEM(it, kept_event, in_key);
        if (ke->expires_at > now) return ke;
    }
    return NULL;
}

size_t engine_events_kept(const engine_t *e)
{
    return e->n_kept;
}

size_t engine_event_waiters(const engine_t *e)
{
    return e->n_ev_waiting;
}

/* ---- records in the change list ------------------------------------------------ */

static char *put_str(char **at, const char *s, size_t n)
{
    if (!s) return NULL;
    char *p = memcpy(*at, s, n);
    p[n] = 0;
    *at += n + 1;
    return p;
}

/* A copy of x (its result of rlen bytes) listed as an ENGINE_CH_STEP
 * change: a new row, or (update) the end of a pending one. */
static engine_step_info *step_rec(engine_t *e, const engine_step_info *x, uint32_t rlen,
                                  bool update)
{
    if (e->loading) return NULL;
    size_t ln = x->name ? strlen(x->name) : 0, le = x->error ? strlen(x->error) : 0,
           lv = x->event ? strlen(x->event) : 0;
    engine_step_info *r = xmalloc(sizeof(*r) + (x->name ? ln + 1 : 0) + (x->result ? rlen + 1 : 0) +
                                  (x->error ? le + 1 : 0) + (x->event ? lv + 1 : 0));
    *r = *x;
    char *at = (char *)(r + 1);
    r->name = put_str(&at, x->name, ln);
    r->result = put_str(&at, x->result, rlen);
    r->error = put_str(&at, x->error, le);
    r->event = put_str(&at, x->event, lv);
    r->size = x->result ? rlen : 0;
    ptr_vec_push(&e->step_recs, r);
    engine_change *c = engine_change_push(e);
    c->kind = ENGINE_CH_STEP;
    c->id = x->job_id;
    c->fields = update;
    c->step = r;
    return r;
}

static void event_rec(engine_t *e, const kept_event *ke)
{
    if (e->loading) return;
    size_t lt = strlen(ke->k->t->name), lk = strlen(ke->k->key);
    engine_event_info *r = xmalloc(sizeof(*r) + lt + lk + ke->len + 3);
    char *at = (char *)(r + 1);
    r->id = ke->id;
    r->tenant = put_str(&at, ke->k->t->name, lt);
    r->key = put_str(&at, ke->k->key, lk);
    r->payload = put_str(&at, ke->payload, ke->len);
    r->len = ke->len;
    r->created_at = ke->created_at;
    r->expires_at = ke->expires_at;
    ptr_vec_push(&e->event_recs, r);
    engine_change *c = engine_change_push(e);
    c->kind = ENGINE_CH_EVENT;
    c->id = ke->id;
    c->event = r;
}

static void event_gone(engine_t *e, uint64_t id)
{
    if (e->loading) return;
    engine_change *c = engine_change_push(e);
    c->kind = ENGINE_CH_EVENT_GONE;
    c->id = id;
}

void engine_steps_changes_clear(engine_t *e)
{
    for (size_t i = 0; i < e->step_recs.n; i++) free(e->step_recs.v[i]);
    e->step_recs.n = 0;
    for (size_t i = 0; i < e->event_recs.n; i++) free(e->event_recs.v[i]);
    e->event_recs.n = 0;
}

/* ---- a job's steps ------------------------------------------------------------------ */

size_t engine_steps_mem(const job_steps *s)
{
    return mem_chunk(sizeof(job_steps)) + (s->cap ? mem_chunk(s->cap * sizeof(uint64_t)) : 0);
}

static job_steps *steps_of(engine_t *e, job *j)
{
    job_extra *ex = engine_extra(e, j);
    if (!ex->steps) {
        ex->steps = xcalloc(1, sizeof(job_steps));
        ex->steps->j = j;
        e->mem_bytes += mem_chunk(sizeof(job_steps));
    }
    return ex->steps;
}

static uint64_t name_hash(engine_t *e, const char *name)
{
    return hash_bytes(&e->hk, name, strlen(name));
}

static bool names_find(const job_steps *s, uint64_t h, uint32_t *at)
{
    for (uint32_t i = 0; i < s->n; i++)
        if (s->names[i] == h) {
            *at = i;
            return true;
        }
    return false;
}

static void names_push(engine_t *e, job_steps *s, uint64_t h)
{
    if (s->n == s->cap) {
        if (s->cap) e->mem_bytes -= mem_chunk(s->cap * sizeof(uint64_t));
        s->cap = s->cap ? s->cap * 2 : 4;
        s->names = xrealloc(s->names, s->cap * sizeof(uint64_t));
        e->mem_bytes += mem_chunk(s->cap * sizeof(uint64_t));
    }
    s->names[s->n++] = h;
}

static void unpark(engine_t *e, job *j)
{
    job_steps *s = j->extra->steps;
    if (s->park == PARK_EVENT) {
        ev_key *k = s->ek;
        dlist_remove(&s->in_key);
        s->ek = NULL;
        e->n_ev_waiting--;
        evk_maybe_free(e, k);
        if (j->state == ENGINE_WAITING) engine_wait_heap_remove(e, j);
    }
    s->park = PARK_NONE;
    s->until = 0;
    s->child = 0;
}

void engine_steps_free_job(engine_t *e, job_steps *s)
{
    if (s->park == PARK_EVENT) { /* only at engine_destroy: an ended job is unparked */
        dlist_remove(&s->in_key);
        e->n_ev_waiting--;
        evk_maybe_free(e, s->ek);
    }
    e->mem_bytes -= engine_steps_mem(s);
    free(s->names);
    free(s);
}

const char *engine_steps_event_key(const job_steps *s)
{
    return s->ek ? s->ek->key : NULL;
}

void engine_steps_leased(engine_t *e, job *j)
{
    (void)e;
    job_steps *s = j->extra->steps;
    s->n_before = s->n;
    s->park = PARK_NONE; /* a sleep made ready early (a bulk retry) */
    s->until = 0;
}

/* ---- parking and going on ------------------------------------------------------------- */

/* The lease ends without failing: the attempt is kept as suspended, and the
 * lease that resumes the job has its number again. */
static void end_lease(engine_t *e, job *j, int64_t now, engine_state after)
{
    engine_unplace(e, j);
    engine_release_slot(e, j);
    engine_attempt_ended(e, j, now, ENGINE_ATTEMPT_SUSPENDED, after, NULL);
    if (j->attempts) j->attempts--;
}

static void park_waiting(engine_t *e, job *j, uint8_t kind)
{
    job_steps *s = j->extra->steps;
    s->park = kind;
    engine_set_state(e, j, ENGINE_WAITING);
    engine_note_job(e, j, 0);
    if (kind == PARK_EVENT && s->until) engine_wait_heap_push(e, j, s->until);
}

static void wait_for_key(engine_t *e, job *j, tenant *t, const char *key)
{
    job_steps *s = j->extra->steps;
    s->ek = evk_get(e, t, key);
    dlist_push_back(&s->ek->waiters, &s->in_key);
    e->n_ev_waiting++;
}

/* The step a parked job waits for ends (an event, a timeout, its child's
 * end, or the job's own end): its row is completed. */
static void wait_done(engine_t *e, job *j, const char *result, const char *error, int child_state,
                      int64_t now)
{
    job_steps *s = j->extra->steps;
    uint32_t rlen = result ? (uint32_t)strlen(result) : 0;
    engine_step_info x = {.job_id = j->id,
                          .pos = s->wait_pos,
                          .kind = s->park == PARK_CHILD ? ENGINE_STEP_CHILD : ENGINE_STEP_EVENT,
                          .done = true,
                          .result = result,
                          .error = error,
                          .finished_at = now,
                          .child = s->park == PARK_CHILD ? s->child : 0,
                          .child_state = child_state};
    s->bytes += rlen;
    step_rec(e, &x, rlen, true);
}

/* A parked job goes on now (its lane's head all along). */
static void resume(engine_t *e, job *j, int64_t now)
{
    unpark(e, j);
    j->run_at = now;
    engine_make_runnable(e, j, now);
}

/* ---- a step ---------------------------------------------------------------------------- */

static int step_check(engine_t *e, int64_t now, job *j, const engine_step_req *r, bool *parks,
                      kept_event **take, engine_err *err)
{
    const queue *q = job_queue(j);
    const job_steps *s = j->extra->steps;
    *parks = false;
    *take = NULL;
    switch (r->kind) {
    case ENGINE_STEP_RUN: {
        uint32_t len = r->result ? r->result_len : 0;
        if (len > q->s.max_payload_bytes) {
            engine_errf(err, TENQ_ETOO_LARGE, "result",
                        "a step's result is %u bytes; this queue takes at most %u", len,
                        q->s.max_payload_bytes);
            return TENQ_ETOO_LARGE;
        }
        if ((s ? s->bytes : 0) + len > ENGINE_STEPS_BYTES_MAX) {
            engine_errf(err, TENQ_ETOO_LARGE, "result",
                        "job %llu's steps would hold %llu bytes of results; a job's steps hold at "
                        "most %u",
                        (unsigned long long)j->id, (unsigned long long)((s ? s->bytes : 0) + len),
                        ENGINE_STEPS_BYTES_MAX);
            return TENQ_ETOO_LARGE;
        }
        return 0;
    }
    case ENGINE_STEP_SLEEP:
        if (r->until < 0 || r->until > now + ENGINE_RUN_AT_HORIZON_MS) {
            engine_errf(err, TENQ_EINVALID, "until",
                        "until must be milliseconds since the epoch, at most 10 years ahead");
            return TENQ_EINVALID;
        }
        *parks = r->until > now;
        break;
    case ENGINE_STEP_EVENT: {
        if (engine_check_name(ENGINE_KEY, "event", r->event, err)) return TENQ_EINVALID;
        if (r->timeout_ms < 0 || r->timeout_ms > ENGINE_RUN_AT_HORIZON_MS) {
            engine_errf(err, TENQ_EINVALID, "timeout_ms",
                        "timeout_ms must be from 0 (none) to 10 years");
            return TENQ_EINVALID;
        }
        ev_key *k = evk_find(e, job_tenant(j), r->event);
        *take = k ? kept_first(k, now) : NULL;
        *parks = !*take;
        break;
    }
    case ENGINE_STEP_CHILD: {
        const engine_submit_req *c = &r->child;
        const char *bad = c->id                ? "id"
                          : c->idempotency_key ? "idempotency_key"
                          : c->unique          ? "unique"
                          : c->unique_key      ? "unique_key"
                          : c->n_depends_on    ? "depends_on"
                                               : NULL;
        if (bad) {
            engine_errf(err, TENQ_EINVALID, "job",
                        "job.%s: a child job is made once by its step, and takes no %s", bad, bad);
            return TENQ_EINVALID;
        }
        const queue *cq = c->queue ? engine_queue_find(e, c->queue) : NULL;
        if (cq && cq->s.merge) {
            engine_errf(err, TENQ_EINVALID, "job",
                        "job.queue: %s merges its jobs; a child job goes to a queue that does not",
                        cq->name);
            return TENQ_EINVALID;
        }
        *parks = true;
        break;
    }
    default:
        engine_errf(err, TENQ_EINVALID, "kind", "kind must be step, sleep, event or child");
        return TENQ_EINVALID;
    }
    if (*parks && q->s.delivery == ENGINE_AT_MOST_ONCE) {
        engine_errf(err, TENQ_ECONFLICT, "kind",
                    "job %llu is on an at-most-once queue: a %s would hand it out again",
                    (unsigned long long)j->id, engine_step_kind_name(r->kind));
        return TENQ_ECONFLICT;
    }
    if (*parks && (j->flags & JF_CANCEL_REQ)) {
        engine_errf(err, TENQ_ECONFLICT, "state",
                    "a cancel of job %llu was requested: stop it, and report it cancelled",
                    (unsigned long long)j->id);
        return TENQ_ECONFLICT;
    }
    return 0;
}

int engine_step(engine_t *e, int64_t now, uint64_t id, uint64_t token, const engine_step_req *r,
                engine_step_res *res, engine_err *err)
{
    engine_err local;
    if (!err) err = &local;
    memset(res, 0, sizeof(*res));
    res->child_state = ENGINE_NSTATES;
    job *j = engine_leased_job(e, id, token, err);
    if (!j) return err->code;
    if (engine_check_name(ENGINE_KEY, "name", r->name, err)) return TENQ_EINVALID;
    job_steps *s = j->extra->steps;
    uint64_t h = name_hash(e, r->name);
    uint32_t at;
    if (s && names_find(s, h, &at)) {
        if (at >= s->n_before) { /* this lease's, sent again: stored already */
            res->duplicate = true;
            res->pos = at;
            res->state = (engine_state)j->state;
            return 0;
        }
        engine_errf(err, TENQ_ECONFLICT, "name",
                    "step \"%s\" of job %llu was stored by an earlier attempt: its result is "
                    "in the job's steps",
                    r->name, (unsigned long long)j->id);
        return TENQ_ECONFLICT;
    }
    if (s && s->n >= ENGINE_STEPS_MAX) {
        engine_errf(err, TENQ_ETOO_LARGE, "name", "job %llu has %u steps, the most a job stores",
                    (unsigned long long)j->id, s->n);
        return TENQ_ETOO_LARGE;
    }
    bool parks;
    kept_event *take;
    int rc = step_check(e, now, j, r, &parks, &take, err);
    if (rc) return rc;

    uint64_t child = 0;
    if (r->kind == ENGINE_STEP_CHILD) {
        engine_submit_req c = r->child;
        c.tenant = job_tenant(j)->name;
        engine_submit_res cr;
        if (engine_submit(e, now, &c, &cr) != 0) {
            engine_errf(err, cr.code, "job", "job.%s", cr.err.message);
            return cr.code;
        }
        child = cr.id;
        job *cj = engine_job_find(e, child);
        steps_of(e, cj)->awaited_by = j->id;
        engine_note_job(e, cj, ENGINE_JF_STEPS);
        res->child = child;
        res->child_state = (engine_state)cj->state;
    }

    s = steps_of(e, j);
    bool first = s->n == 0;
    uint32_t pos = s->n;
    names_push(e, s, h);
    engine_step_info x = {.job_id = j->id,
                          .pos = pos,
                          .name = r->name,
                          .kind = r->kind,
                          .token = j->extra->token,
                          .attempt = j->attempts,
                          .created_at = now,
                          .child = child,
                          .child_state = -1};
    uint32_t rlen = 0;
    switch (r->kind) {
    case ENGINE_STEP_RUN:
        x.done = true;
        x.result = r->result;
        rlen = r->result ? r->result_len : 0;
        x.finished_at = now;
        break;
    case ENGINE_STEP_SLEEP:
        x.done = true;
        x.until = r->until;
        x.finished_at = now;
        break;
    case ENGINE_STEP_EVENT:
        x.event = r->event;
        x.until = r->timeout_ms ? now + r->timeout_ms : 0;
        if (take) {
            x.done = true;
            x.result = take->payload;
            rlen = take->len;
            x.finished_at = now;
        }
        break;
    default: break;
    }
    s->bytes += rlen;
    engine_step_info *rec = step_rec(e, &x, rlen, false);
    if (first) engine_note_job(e, j, ENGINE_JF_STEPS);
    res->pos = pos;
    if (take) {
        res->done = true;
        res->result = rec ? rec->result : NULL;
        event_gone(e, take->id);
        kept_drop(e, take);
    }
    if (parks) {
        end_lease(e, j, now, r->kind == ENGINE_STEP_SLEEP ? ENGINE_SCHEDULED : ENGINE_WAITING);
        s->wait_pos = pos;
        switch (r->kind) {
        case ENGINE_STEP_SLEEP:
            s->park = PARK_SLEEP;
            s->until = r->until;
            j->run_at = r->until;
            engine_make_runnable(e, j, now);
            break;
        case ENGINE_STEP_EVENT:
            s->until = x.until;
            wait_for_key(e, j, job_tenant(j), r->event);
            park_waiting(e, j, PARK_EVENT);
            break;
        default:
            s->child = child;
            park_waiting(e, j, PARK_CHILD);
            break;
        }
        /* it is leased again later: as a retry, never at or after its
         * expire_at (expiry.c) */
        if (j->extra->expire_at && !engine_expire_if_due(e, j, now)) engine_expiry_watch(e, j);
        res->parked = true;
    }
    res->state = (engine_state)j->state;
    res->run_at = j->run_at;
    return 0;
}

/* ---- events ------------------------------------------------------------------------------ */

int engine_event_send(engine_t *e, int64_t now, const char *tenant_name, const char *key,
                      const char *payload, uint32_t len, uint64_t *ids, size_t max_ids,
                      engine_event_res *res, engine_err *err)
{
    memset(res, 0, sizeof(*res));
    if (engine_check_name(ENGINE_NAME, "tenant", tenant_name, err)) return TENQ_EINVALID;
    if (engine_check_name(ENGINE_KEY, "key", key, err)) return TENQ_EINVALID;
    if (!payload) {
        payload = "null";
        len = 4;
    }
    if (len > ENGINE_EVENT_MAX_BYTES) {
        engine_errf(err, TENQ_ETOO_LARGE, "payload",
                    "payload is %u bytes; an event takes at most %u", len, ENGINE_EVENT_MAX_BYTES);
        return TENQ_ETOO_LARGE;
    }
    tenant *t = engine_tenant_find(e, tenant_name);
    if (!t && e->cfg.strict_tenants) {
        engine_errf(err, TENQ_ENOT_FOUND, "tenant", "no tenant named %s (the server is strict)",
                    tenant_name);
        return TENQ_ENOT_FOUND;
    }
    ev_key *k = t ? evk_find(e, t, key) : NULL;
    if (k && !dlist_empty(&k->waiters)) {
        /* every job waiting for it now takes it, in the order they began */
        ptr_vec *w = &e->scratch;
        w->n = 0;
        DLIST_FOREACH(it, &k->waiters) ptr_vec_push(w, DLIST_ITEM(it, job_steps, in_key)->j);
        char *text = xstrndup(payload, len);
        for (size_t i = 0; i < w->n; i++) {
            job *j = w->v[i];
            if (res->delivered < max_ids) ids[res->delivered] = j->id;
            res->delivered++;
            wait_done(e, j, text, NULL, -1, now);
            resume(e, j, now);
        }
        free(text);
        return 0;
    }
    if (e->cfg.event_window_ms <= 0) return 0;
    if (!t) t = engine_tenant_get_or_create(e, tenant_name);
    k = evk_get(e, t, key);
    kept_event *ke = kept_add(e, k, ++e->event_id, payload, len, now, now + e->cfg.event_window_ms);
    event_rec(e, ke);
    res->kept = true;
    res->expires_at = ke->expires_at;
    return 0;
}

/* ---- a job's end, time ------------------------------------------------------------------- */

void engine_steps_ended(engine_t *e, job *j, int64_t now)
{
    job_steps *s = j->extra ? j->extra->steps : NULL;
    if (!s) return;
    if (s->park == PARK_EVENT || s->park == PARK_CHILD) {
        /* its wait ends with it (a cancel): the step is done, a child
         * awaited is cancelled too */
        if (s->park == PARK_CHILD) ptr_vec_push(&e->steps_work, (void *)(uintptr_t)s->child);
        wait_done(e, j, NULL, engine_state_name((engine_state)j->state), -1, now);
        unpark(e, j);
    } else if (s->park) {
        unpark(e, j);
    }
    if (s->awaited_by) {
        job *p = engine_job_find(e, s->awaited_by);
        const job_steps *ps = p && p->extra ? p->extra->steps : NULL;
        if (p && p->state == ENGINE_WAITING && ps && ps->park == PARK_CHILD && ps->child == j->id) {
            bool ok = j->state == ENGINE_SUCCEEDED;
            const char *error = NULL;
            if (!ok)
                error = j->state == ENGINE_DEAD && j->extra->error
                            ? j->extra->error
                            : engine_state_name((engine_state)j->state);
            wait_done(e, p, ok ? j->extra->result : NULL, error, j->state, now);
            resume(e, p, now);
        }
    }
    if (e->steps_busy) return;
    e->steps_busy = true;
    while (e->steps_work.n) {
        uint64_t cid = (uint64_t)(uintptr_t)e->steps_work.v[--e->steps_work.n];
        job *c = engine_job_find(e, cid);
        if (!c || c->state > ENGINE_RUNNING) continue;
        job_extra *cx = engine_extra(e, c);
        if (c->state == ENGINE_LEASED || c->state == ENGINE_RUNNING) {
            c->flags |= JF_CANCEL_REQ; /* its worker hears it at its next heartbeat */
            engine_note_job(e, c, 0);
            continue;
        }
        free(cx->error);
        cx->error = xstrdup("cancelled: the job that awaited it ended");
        engine_finish(e, c, ENGINE_CANCELLED, now); /* its own child: through the list */
    }
    e->steps_busy = false;
}

size_t engine_steps_tick(engine_t *e, int64_t now)
{
    size_t changed = 0;
    job *j;
    while ((j = engine_wait_due(e, now))) {
        wait_done(e, j, NULL, "timed out", -1, now);
        resume(e, j, now);
        changed++;
    }
    while (!dlist_empty(&e->kept_order)) {
        kept_event *ke = DLIST_ITEM(e->kept_order.head.next, kept_event, in_order);
        if (ke->expires_at > now) break;
        kept_drop(e, ke); /* its row goes by retention */
    }
    return changed;
}

int64_t engine_steps_next(const engine_t *e)
{
    int64_t t = e->waits.n ? (int64_t)e->waits.a[0].k : INT64_MAX;
    if (!dlist_empty(&e->kept_order)) { /* its memory goes back when its window passes */
        const kept_event *ke = DLIST_ITEM(e->kept_order.head.next, kept_event, in_order);
        if (ke->expires_at < t) t = ke->expires_at;
    }
    return t;
}

/* ---- recovery ----------------------------------------------------------------------------- */

int engine_load_step(engine_t *e, int64_t now, const engine_step_info *x, engine_err *err)
{
    (void)now;
    if (!x->name || (unsigned)x->kind >= ENGINE_NSTEP_KINDS) {
        engine_errf(err, TENQ_EINVALID, "step", "job %llu: a step without a name or kind",
                    (unsigned long long)x->job_id);
        return TENQ_EINVALID;
    }
    job *j = engine_job_find(e, x->job_id);
    if (!j) return 0; /* not resident */
    job_steps *s = steps_of(e, j);
    names_push(e, s, name_hash(e, x->name));
    s->bytes += x->size;
    /* a lease that goes on across the load: the steps of earlier ones are not its own */
    if ((j->state == ENGINE_LEASED || j->state == ENGINE_RUNNING) && x->token != j->extra->token)
        s->n_before = s->n;
    if (s->park == PARK_SLEEP) s->park = PARK_NONE; /* a later step: that sleep ended */
    if (x->kind == ENGINE_STEP_SLEEP && j->state == ENGINE_SCHEDULED && x->until == j->run_at) {
        s->park = PARK_SLEEP;
        s->until = x->until;
        return 0;
    }
    if (x->done || j->state != ENGINE_WAITING || s->park) return 0;
    /* a wait under way: the job parks again as it was */
    if (x->kind == ENGINE_STEP_EVENT && x->event && engine_key_valid(x->event)) {
        s->wait_pos = x->pos;
        s->until = x->until;
        wait_for_key(e, j, job_tenant(j), x->event);
        s->park = PARK_EVENT;
        if (s->until) engine_wait_heap_push(e, j, s->until);
    } else if (x->kind == ENGINE_STEP_CHILD && x->child) {
        job *c = engine_job_find(e, x->child);
        if (!c || c->state > ENGINE_DEAD) return 0; /* ended: released by the load */
        steps_of(e, c)->awaited_by = j->id;
        s->wait_pos = x->pos;
        s->child = x->child;
        s->park = PARK_CHILD;
    }
    return 0;
}

int engine_load_event(engine_t *e, int64_t now, const engine_event_info *ev, engine_err *err)
{
    if (!engine_name_valid(ev->tenant) || !engine_key_valid(ev->key) || !ev->payload) {
        engine_errf(err, TENQ_EINVALID, "event", "event %llu has a bad tenant, key or payload",
                    (unsigned long long)ev->id);
        return TENQ_EINVALID;
    }
    if (ev->id > e->event_id) e->event_id = ev->id;
    if (ev->expires_at <= now) return 0;
    ev_key *k = evk_get(e, engine_tenant_get_or_create(e, ev->tenant), ev->key);
    kept_add(e, k, ev->id, ev->payload, ev->len, ev->created_at, ev->expires_at);
    return 0;
}

void engine_load_event_id(engine_t *e, uint64_t max_id)
{
    if (max_id > e->event_id) e->event_id = max_id;
}

/* ---- checks, freeing ------------------------------------------------------------------------ */

bool engine_steps_check(engine_t *e, size_t *mem, char *why, size_t len)
{
    size_t waiters = 0, kept = 0;
    *mem = 0;
    for (size_t i = 0; i < htab_cap(&e->evkeys); i++) {
        ev_key *k = e->evkeys.slots[i].item;
        if (!k) continue;
        *mem += mem_evkey(k);
        if (dlist_empty(&k->waiters) && dlist_empty(&k->kept)) {
            snprintf(why, len, "event key %s is kept with nothing in it", k->key);
            return false;
        }
        DLIST_FOREACH(it, &k->waiters)
        {
            job_steps *s = DLIST_ITEM(it, job_steps, in_key);
            job *j = s->j;
            if (s->park != PARK_EVENT || s->ek != k || j->state != ENGINE_WAITING ||
                j->extra->steps != s) {
                snprintf(why, len, "job %llu is listed waiting for event %s but is not",
                         (unsigned long long)j->id, k->key);
                return false;
            }
            waiters++;
        }
        DLIST_FOREACH(it, &k->kept)
        {
            kept_event *ke = DLIST_ITEM(it, kept_event, in_key);
            if (ke->k != k) {
                snprintf(why, len, "kept event %llu is in another key's list",
                         (unsigned long long)ke->id);
                return false;
            }
            *mem += mem_kept(ke->len);
            kept++;
        }
    }
    if (waiters != e->n_ev_waiting || kept != e->n_kept) {
        snprintf(why, len, "%zu jobs wait for events and %zu are kept; counted %zu and %zu",
                 waiters, kept, e->n_ev_waiting, e->n_kept);
        return false;
    }
    int64_t last = INT64_MIN;
    size_t n = 0;
    DLIST_FOREACH(it, &e->kept_order)
    {
        kept_event *ke = DLIST_ITEM(it, kept_event, in_order);
        if (ke->expires_at < last) {
            snprintf(why, len, "kept events are out of order at %llu", (unsigned long long)ke->id);
            return false;
        }
        last = ke->expires_at;
        n++;
    }
    if (n != e->n_kept) {
        snprintf(why, len, "%zu kept events in order, %zu kept", n, e->n_kept);
        return false;
    }
    return true;
}

void engine_steps_free(engine_t *e)
{
    while (!dlist_empty(&e->kept_order))
        kept_drop(e, DLIST_ITEM(e->kept_order.head.next, kept_event, in_order));
    for (size_t i = 0; i < htab_cap(&e->evkeys); i++) {
        ev_key *k = e->evkeys.slots[i].item;
        if (k) free(k);
    }
    htab_free(&e->evkeys);
    engine_steps_changes_clear(e);
    free(e->step_recs.v);
    free(e->event_recs.v);
    free(e->steps_work.v);
}
