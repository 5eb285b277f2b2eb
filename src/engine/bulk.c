// SPDX-License-Identifier: Apache-2.0
/* Bulk actions on live jobs by filter: cancel, retry now, set priority.
 * A scan of every resident job (O(n)): an operator's action, not a hot
 * path.  The matches are gathered first, then changed, each as its single
 * action would (engine_cancel, a scheduled job made ready, a ready job put
 * back in line under its new priority). */
#include "internal.h"

static bool job_matches(const job *j, const engine_job_filter *f)
{
    if (f->states && !(f->states & (1u << j->state))) return false;
    if (f->tenant && strcmp(f->tenant, job_tenant(j)->name) != 0) return false;
    if (f->queue && strcmp(f->queue, job_queue(j)->name) != 0) return false;
    if (f->type && strcmp(f->type, j->node->sh->type) != 0) return false;
    if (f->key && (!job_lane(j) || strcmp(f->key, job_lane(j)->key) != 0)) return false;
    if (f->created_after && j->created_at < f->created_after) return false;
    if (f->created_before && j->created_at >= f->created_before) return false;
    return true;
}

uint32_t engine_bulk_states(engine_bulk_action a)
{
#define S(x) (1u << ENGINE_##x)
    switch (a) {
    case ENGINE_BULK_CANCEL: /* every state not finished (tenq/states.h) */
#define UNFINISHED_(name, word, abi, kind, finished, help) | ((finished) ? 0 : S(name))
        return 0 TENQ_STATE_TABLE(UNFINISHED_);
#undef UNFINISHED_
    case ENGINE_BULK_RETRY_NOW: return S(SCHEDULED);
    default: return S(SCHEDULED) | S(BLOCKED) | S(WAITING) | S(READY);
    }
#undef S
}

typedef struct gather {
    const engine_job_filter *f;
    uint32_t states;
    ptr_vec *out;
    size_t max;
} gather;

static void gather_one(void *ctx, uint64_t id, void *item)
{
    (void)id;
    gather *g = ctx;
    job *j = item;
    if (g->out->n >= g->max || !(g->states & (1u << j->state)) || !job_matches(j, g->f)) return;
    ptr_vec_push(g->out, j);
}

static int cmp_id(const void *a, const void *b)
{
    uint64_t x = (*(job *const *)a)->id, y = (*(job *const *)b)->id;
    return x < y ? -1 : x > y;
}

static bool apply(engine_t *e, int64_t now, job *j, engine_bulk_action a, int32_t priority)
{
    switch (a) {
    case ENGINE_BULK_CANCEL: return engine_cancel(e, now, j->id, NULL, NULL) == 0;
    case ENGINE_BULK_RETRY_NOW:
        engine_unplace(e, j);
        j->run_at = now;
        engine_make_runnable(e, j, now);
        return true;
    default: {
        if (j->priority == priority) return false;
        if (j->state != ENGINE_READY) {
            j->priority = (int16_t)priority;
            engine_note_job(e, j, 0);
            return true;
        }
        int64_t ready_at = j->ready_at; /* still in line since then */
        engine_unplace(e, j);
        j->priority = (int16_t)priority;
        engine_make_runnable(e, j, now);
        j->ready_at = ready_at;
        return true;
    }
    }
}

size_t engine_bulk(engine_t *e, int64_t now, const engine_job_filter *f, engine_bulk_action a,
                   int32_t priority, bool dry_run, size_t max, size_t *changed)
{
    ptr_vec v = {0};
    gather g = {f, engine_bulk_states(a), &v, max};
    if (f->states) g.states &= f->states;
    idtab_foreach(&e->jobs, gather_one, &g);
    if (v.n) qsort(v.v, v.n, sizeof(void *), cmp_id); /* (v.v is NULL when none matched) */
    size_t done = 0;
    for (size_t i = 0; i < v.n && !dry_run; i++) {
        job *j = v.v[i];
        /* an earlier change (a cancelled lane head) may have moved it */
        if (!(g.states & (1u << j->state))) continue;
        done += apply(e, now, j, a, priority);
    }
    size_t n = v.n;
    free(v.v);
    engine_batches_settle(e, now);
    if (changed) *changed = done;
    return n;
}
