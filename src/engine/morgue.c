// SPDX-License-Identifier: Apache-2.0
/* The morgue: dead jobs, listed by tenant/queue/type, newest first or by id;
 * requeued or deleted one at a time or by filter.
 *
 * Each dead job sits in four ordered trees (all dead jobs and its tenant's,
 * each by id and by (finished_at, id)), so a page costs O(log n + page)
 * when filtering by tenant, and walks past non-matching jobs otherwise. */
#include "internal.h"

#define DL_JOB(n, member) (AVL_CONTAINER((n), dead_links, member)->j)

static int cmp_id(const job *a, const job *b)
{
    return a->id < b->id ? -1 : a->id > b->id;
}

static int cmp_fin(const job *a, const job *b)
{
    if (a->extra->finished_at != b->extra->finished_at)
        return a->extra->finished_at < b->extra->finished_at ? -1 : 1;
    return cmp_id(a, b);
}

int engine_dead_cmp_id(const avl_node *a, const avl_node *b)
{
    return cmp_id(DL_JOB(a, g_id), DL_JOB(b, g_id));
}
int engine_dead_cmp_fin(const avl_node *a, const avl_node *b)
{
    return cmp_fin(DL_JOB(a, g_fin), DL_JOB(b, g_fin));
}
int engine_dead_cmp_tid(const avl_node *a, const avl_node *b)
{
    return cmp_id(DL_JOB(a, t_id), DL_JOB(b, t_id));
}
int engine_dead_cmp_tfin(const avl_node *a, const avl_node *b)
{
    return cmp_fin(DL_JOB(a, t_fin), DL_JOB(b, t_fin));
}

void engine_morgue_insert(engine_t *e, job *j)
{
    job_extra *ex = engine_extra(e, j);
    ex->dl = xcalloc(1, sizeof(dead_links));
    ex->dl->j = j;
    tenant *t = job_tenant(j);
    avl_insert(&e->dead_by_id, &ex->dl->g_id);
    avl_insert(&e->dead_by_fin, &ex->dl->g_fin);
    avl_insert(&t->dead_by_id, &ex->dl->t_id);
    avl_insert(&t->dead_by_fin, &ex->dl->t_fin);
}

void engine_morgue_remove(engine_t *e, job *j)
{
    dead_links *dl = j->extra->dl;
    tenant *t = job_tenant(j);
    avl_remove(&e->dead_by_id, &dl->g_id);
    avl_remove(&e->dead_by_fin, &dl->g_fin);
    avl_remove(&t->dead_by_id, &dl->t_id);
    avl_remove(&t->dead_by_fin, &dl->t_fin);
    free(dl);
    j->extra->dl = NULL;
}

/* ---- listing ------------------------------------------------------------- */

typedef struct list_ctx {
    const tenant *t;
    const queue *q;
    const char *type;
} list_ctx;

static bool matches(const list_ctx *c, const job *j)
{
    if (c->q && job_queue(j) != c->q) return false;
    if (c->type && strcmp(j->node->sh->type, c->type) != 0) return false;
    return true;
}

#define KEY_CMP_FNS(member)                                                                        \
    static int key_id_##member(const void *key, const avl_node *n)                                 \
    {                                                                                              \
        const engine_morgue_cursor *c = key;                                                       \
        uint64_t id = DL_JOB(n, member)->id;                                                       \
        return c->id < id ? -1 : c->id > id;                                                       \
    }                                                                                              \
    static int key_fin_##member(const void *key, const avl_node *n)                                \
    {                                                                                              \
        const engine_morgue_cursor *c = key;                                                       \
        const job *j = DL_JOB(n, member);                                                          \
        if (c->finished_at != j->extra->finished_at)                                               \
            return c->finished_at < j->extra->finished_at ? -1 : 1;                                \
        return c->id < j->id ? -1 : c->id > j->id;                                                 \
    }
KEY_CMP_FNS(g_id)
KEY_CMP_FNS(g_fin)
KEY_CMP_FNS(t_id)
KEY_CMP_FNS(t_fin)

static bool resolve(engine_t *e, const engine_morgue_filter *f, list_ctx *c)
{
    memset(c, 0, sizeof(*c));
    if (f && f->tenant && !(c->t = engine_tenant_find(e, f->tenant))) return false;
    if (f && f->queue && !(c->q = engine_queue_find(e, f->queue))) return false;
    if (f) c->type = f->type;
    return true;
}

size_t engine_morgue_list(engine_t *e, const engine_morgue_filter *f, engine_morgue_sort sort,
                          const engine_morgue_cursor *after, size_t limit, engine_job **out)
{
    list_ctx c;
    if (!resolve(e, f, &c) || limit == 0) return 0;
    bool has_cursor = after && (after->id || after->finished_at);
    size_t n = 0;
    avl_node *it;
    if (sort == ENGINE_MORGUE_NEWEST) {
        if (c.t) {
            it = has_cursor ? avl_lower_before(&c.t->dead_by_fin, key_fin_t_fin, after)
                            : avl_last(&c.t->dead_by_fin);
            for (; it && n < limit; it = avl_prev(it))
                if (matches(&c, DL_JOB(it, t_fin))) out[n++] = DL_JOB(it, t_fin);
        } else {
            it = has_cursor ? avl_lower_before(&e->dead_by_fin, key_fin_g_fin, after)
                            : avl_last(&e->dead_by_fin);
            for (; it && n < limit; it = avl_prev(it))
                if (matches(&c, DL_JOB(it, g_fin))) out[n++] = DL_JOB(it, g_fin);
        }
    } else {
        if (c.t) {
            it = has_cursor ? avl_upper_bound(&c.t->dead_by_id, key_id_t_id, after)
                            : avl_first(&c.t->dead_by_id);
            for (; it && n < limit; it = avl_next(it))
                if (matches(&c, DL_JOB(it, t_id))) out[n++] = DL_JOB(it, t_id);
        } else {
            it = has_cursor ? avl_upper_bound(&e->dead_by_id, key_id_g_id, after)
                            : avl_first(&e->dead_by_id);
            for (; it && n < limit; it = avl_next(it))
                if (matches(&c, DL_JOB(it, g_id))) out[n++] = DL_JOB(it, g_id);
        }
    }
    (void)key_fin_g_id;
    (void)key_fin_t_id;
    (void)key_id_g_fin;
    (void)key_id_t_fin;
    return n;
}

/* ---- requeue and delete ------------------------------------------------- */

static job *dead_job(engine_t *e, uint64_t id, engine_err *err)
{
    job *j = engine_job_find(e, id);
    if (!j) {
        engine_errf(err, TENQ_ENOT_FOUND, "id", "no job %llu", (unsigned long long)id);
        return NULL;
    }
    if (j->state != ENGINE_DEAD) {
        engine_errf(err, TENQ_ECONFLICT, "state", "job %llu is %s, not dead",
                    (unsigned long long)id, engine_state_name((engine_state)j->state));
        return NULL;
    }
    return j;
}

int engine_morgue_requeue(engine_t *e, int64_t now, uint64_t id, engine_err *err)
{
    job *j = dead_job(e, id, err);
    if (!j) return err ? err->code : TENQ_ENOT_FOUND;
    queue *q = job_queue(j);
    lane *ln = job_lane(j);
    if (q->s.merge && ln && !(j->flags & JF_ARGS_OUT) && engine_can_merge_into(ln->tail, j->node)) {
        /* Merge rule: a requeued job joins the waiting job of its lane,
         * which then runs now with its attempts reset. */
        job *tail = ln->tail;
        engine_ensure_payloads(e, tail);
        engine_ensure_payloads(e, j);
        uint64_t before = tail->extra->pl.bytes;
        engine_payload_move_all(e, &tail->extra->pl, &j->extra->pl);
        engine_job_data_changed(e, tail, before);
        tail->attempts = 0;
        int64_t old_run_at = tail->run_at;
        if (tail->state == ENGINE_SCHEDULED) {
            engine_unplace(e, tail);
            tail->run_at = now;
            engine_make_runnable(e, tail, now);
        } else if (tail->state == ENGINE_READY) {
            tail->run_at = now;
            if (old_run_at != now) engine_ready_fix(e, tail, old_run_at);
        } else {
            tail->run_at = now;
        }
        engine_note_job(e, tail, ENGINE_JF_PAYLOADS);
        j->extra->merged_into = tail->id;
        engine_finish(e, j, ENGINE_MERGED, now);
        engine_note_job(e, j, ENGINE_JF_PAYLOADS);
        return 0;
    }
    engine_morgue_remove(e, j);
    j->attempts = 0;
    j->run_at = now;
    j->extra->expire_at = 0; /* an operator's requeue means: run it */
    j->flags &= ~JF_CANCEL_REQ;
    j->extra->finished_at = 0;
    if (ln) {
        /* Back in line at the end of its lane. */
        j->extra->lane_seq = engine_take_id(e);
        engine_set_state(e, j, ENGINE_BLOCKED);
        engine_lane_append(e, ln, j);
        if (ln->head == j) engine_make_runnable(e, j, now);
    } else {
        engine_set_state(e, j, ENGINE_BLOCKED);
        engine_make_runnable(e, j, now);
    }
    engine_uniq_add(e, j);
    engine_note_job(e, j, ENGINE_JF_LANE);
    engine_deps_requeued(e, j);
    return 0;
}

int engine_morgue_delete(engine_t *e, int64_t now, uint64_t id, engine_err *err)
{
    job *j = dead_job(e, id, err);
    if (!j) return err ? err->code : TENQ_ENOT_FOUND;
    engine_morgue_remove(e, j);
    engine_set_state(e, j, ENGINE_NSTATES); /* out of every count */
    idtab_del(&e->jobs, j->id);
    /* Already listed as changed (it died in the same request): that entry
     * becomes the deletion.  Searched for, as only such a job is noted. */
    engine_change *c = NULL;
    for (size_t i = e->changes.n; j->noted && !c && i-- > 0;)
        if (e->changes.v[i].kind == ENGINE_CH_JOB && e->changes.v[i].job == j) c = &e->changes.v[i];
    if (!c) c = engine_change_push(e);
    c->kind = ENGINE_CH_JOB_DELETED;
    c->job = NULL;
    c->id = j->id;
    c->fields = 0;
    engine_job_free(e, j);
    engine_batches_settle(e, now);
    return 0;
}

/* Collects up to max matching dead job ids, oldest death first. */
static size_t collect(engine_t *e, const engine_morgue_filter *f, size_t max, ptr_vec *ids)
{
    list_ctx c;
    ids->n = 0;
    if (!resolve(e, f, &c)) return 0;
    avl_node *it = c.t ? avl_first(&c.t->dead_by_fin) : avl_first(&e->dead_by_fin);
    while (it && ids->n < max) {
        job *j = c.t ? DL_JOB(it, t_fin) : DL_JOB(it, g_fin);
        if (matches(&c, j)) ptr_vec_push(ids, (void *)(uintptr_t)j->id);
        it = avl_next(it);
    }
    return ids->n;
}

size_t engine_morgue_requeue_where(engine_t *e, int64_t now, const engine_morgue_filter *f,
                                   size_t max)
{
    ptr_vec ids = {0};
    collect(e, f, max, &ids);
    size_t done = 0;
    for (size_t i = 0; i < ids.n; i++)
        done += engine_morgue_requeue(e, now, (uint64_t)(uintptr_t)ids.v[i], NULL) == 0;
    free(ids.v);
    return done;
}

size_t engine_morgue_delete_where(engine_t *e, int64_t now, const engine_morgue_filter *f,
                                  size_t max)
{
    ptr_vec ids = {0};
    collect(e, f, max, &ids);
    size_t done = 0;
    for (size_t i = 0; i < ids.n; i++)
        done += engine_morgue_delete(e, now, (uint64_t)(uintptr_t)ids.v[i], NULL) == 0;
    free(ids.v);
    return done;
}
