// SPDX-License-Identifier: Apache-2.0
/* Dependencies: a job that waits for other jobs (its parents) to succeed.
 *
 * A child names its parents at its submit; they exist before it, so no
 * cycle can be made.  The child is WAITING while `pending` (its parents
 * still unfinished) is above 0.  Each parent keeps the ids of its children,
 * so that its end costs O(1) per child (a find by id) and a release
 * O(log n) (the child enters its heaps), never a scan.  Both lists live in
 * the jobs' extra (job_deps): a job without dependencies carries nothing.
 *
 * The rule, which a load works out again from the store alone: a waiting
 * child's pending count is the number of its parents that are resident and
 * unfinished.  A parent that succeeds is done; one that dies, is cancelled
 * or merged is done for a child of policy run and cancels a child of
 * policy cancel (whose own children then see it cancelled, and so on: a
 * work list, not recursion, so a long chain costs no stack); one requeued
 * from the morgue is unfinished again, so children still waiting wait for
 * it anew (children already cancelled or released stay so: a release past
 * a dead parent is written at once, ENGINE_JF_RELEASED). */
#include "internal.h"

const char *engine_deps_policy_name(engine_deps_policy p)
{
    return p == ENGINE_DEPS_RUN ? "run" : "cancel";
}

int engine_deps_policy_parse(const char *name)
{
    if (!name) return -1;
    if (strcmp(name, "cancel") == 0) return ENGINE_DEPS_CANCEL;
    if (strcmp(name, "run") == 0) return ENGINE_DEPS_RUN;
    return -1;
}

static job_deps *deps_of(engine_t *e, job *j)
{
    job_extra *ex = engine_extra(e, j);
    if (!ex->deps) {
        ex->deps = xcalloc(1, sizeof(job_deps));
        ex->deps->e = e;
    }
    return ex->deps;
}

void engine_deps_free(job_deps *d)
{
    if (!d) return;
    free(d->parents);
    free(d->children);
    free(d);
}

static inline bool unfinished(const job *p)
{
    return p && p->state <= ENGINE_RUNNING;
}

int engine_deps_check(engine_t *e, const tenant *t, const uint64_t *ids, uint32_t n,
                      engine_deps_policy policy, uint32_t *pending, engine_err *err)
{
    *pending = 0;
    if (n > ENGINE_PARENTS_MAX) {
        engine_errf(err, TENQ_EINVALID, "depends_on", "a job depends on at most %d jobs, not %u",
                    ENGINE_PARENTS_MAX, n);
        return TENQ_EINVALID;
    }
    for (uint32_t i = 0; i < n; i++) {
        job *p = ids[i] ? engine_job_find(e, ids[i]) : NULL;
        if (!p || job_tenant(p) != t || p->state == ENGINE_NSTATES) {
            if (!p && ids[i] && ids[i] < e->next_id) {
                engine_errf(err, TENQ_ECONFLICT, "depends_on",
                            "depends_on[%u]: job %llu is not unfinished (it finished, or was "
                            "deleted): a job may depend only on unfinished or dead jobs",
                            i, (unsigned long long)ids[i]);
                return TENQ_ECONFLICT;
            }
            engine_errf(err, TENQ_ENOT_FOUND, "depends_on", "depends_on[%u]: no job %llu", i,
                        (unsigned long long)ids[i]);
            return TENQ_ENOT_FOUND;
        }
        if (unfinished(p)) {
            (*pending)++;
        } else if (p->state != ENGINE_SUCCEEDED && policy == ENGINE_DEPS_CANCEL) {
            engine_errf(err, TENQ_ECONFLICT, "depends_on",
                        "depends_on[%u]: job %llu is %s, and with on_parent_failure \"cancel\" "
                        "this job would be cancelled at once",
                        i, (unsigned long long)ids[i], engine_state_name((engine_state)p->state));
            return TENQ_ECONFLICT;
        }
    }
    return 0;
}

static void add_child(engine_t *e, job *p, uint64_t child)
{
    job_deps *d = deps_of(e, p);
    if (d->n_children == d->cap_children) {
        d->cap_children = d->cap_children ? d->cap_children * 2 : 4;
        d->children = xrealloc(d->children, d->cap_children * sizeof(uint64_t));
    }
    d->children[d->n_children++] = child;
}

void engine_deps_attach(engine_t *e, job *j, const uint64_t *ids, uint32_t n,
                        engine_deps_policy policy, uint32_t pending)
{
    job_deps *d = deps_of(e, j);
    d->parents = xmalloc((n ? n : 1) * sizeof(uint64_t));
    memcpy(d->parents, ids, n * sizeof(uint64_t));
    d->n_parents = n;
    d->pending = pending;
    d->policy = (uint8_t)policy;
    for (uint32_t i = 0; i < n; i++) {
        job *p = engine_job_find(e, ids[i]);
        if (p) add_child(e, p, j->id);
    }
}

/* Whether a parent in d is dead (resident, in the morgue): its child, released,
 * counted it as done (policy run).  At most ENGINE_PARENTS_MAX finds. */
static bool past_a_dead_parent(engine_t *e, const job_deps *d)
{
    for (uint32_t k = 0; k < d->n_parents; k++) {
        const job *p = engine_job_find(e, d->parents[k]);
        if (p && p->state == ENGINE_DEAD) return true;
    }
    return false;
}

void engine_deps_release(engine_t *e, job *j, int64_t now)
{
    lane *l = job_lane(j);
    if (l && l->head != j) {
        engine_set_state(e, j, ENGINE_BLOCKED);
        engine_note_job(e, j, 0);
    } else {
        engine_make_runnable(e, j, now);
    }
    /* A release is worked out again at a load from the parents' rows, so a
     * ready row may be written late (api/commit.c) -- unless a parent is
     * dead: requeued before that row, it would make the child wait again
     * at a load, where it is released for good.  Its row goes now. */
    const job_deps *d = j->extra ? j->extra->deps : NULL;
    if (d && d->policy == ENGINE_DEPS_RUN && past_a_dead_parent(e, d))
        engine_note_job(e, j, ENGINE_JF_RELEASED);
}

static void ended_one(engine_t *e, job *p, int64_t now)
{
    job_deps *d = p->extra->deps;
    bool ok = p->state == ENGINE_SUCCEEDED;
    for (uint32_t i = 0; i < d->n_children; i++) {
        job *c = engine_job_find(e, d->children[i]);
        /* a parked child (steps.c) was released before: no parent holds it */
        if (!c || c->state != ENGINE_WAITING || job_parked(c)) continue;
        job_deps *cd = c->extra->deps;
        if (ok || cd->policy == ENGINE_DEPS_RUN) {
            if (cd->pending > 0 && --cd->pending == 0) engine_deps_release(e, c, now);
            continue;
        }
        char why[128];
        snprintf(why, sizeof why, "cancelled: parent %llu is %s", (unsigned long long)p->id,
                 engine_state_name((engine_state)p->state));
        job_extra *ex = engine_extra(e, c);
        free(ex->error);
        ex->error = xstrdup(why);
        cd->pending = 0;
        engine_finish(e, c, ENGINE_CANCELLED, now); /* its children: through the list */
    }
}

void engine_deps_ended(engine_t *e, job *j, int64_t now)
{
    if (!j->extra || !j->extra->deps || !j->extra->deps->n_children) return;
    ptr_vec_push(&e->deps_work, j);
    if (e->deps_busy) return;
    e->deps_busy = true;
    while (e->deps_work.n) {
        job *p = e->deps_work.v[--e->deps_work.n];
        ended_one(e, p, now);
    }
    e->deps_busy = false;
}

void engine_deps_requeued(engine_t *e, job *j)
{
    if (!j->extra || !j->extra->deps) return;
    job_deps *d = j->extra->deps;
    for (uint32_t i = 0; i < d->n_children; i++) {
        job *c = engine_job_find(e, d->children[i]);
        if (c && c->state == ENGINE_WAITING && !job_parked(c)) c->extra->deps->pending++;
    }
}

/* ---- recovery ---------------------------------------------------------------- */

void engine_load_dep(engine_t *e, uint64_t child, uint64_t parent, engine_deps_policy policy)
{
    job *c = engine_job_find(e, child);
    if (c) {
        job_deps *d = deps_of(e, c);
        d->parents = xrealloc(d->parents, (d->n_parents + 1) * sizeof(uint64_t));
        d->parents[d->n_parents++] = parent;
        d->policy = (uint8_t)policy;
    }
    job *p = engine_job_find(e, parent);
    if (p) add_child(e, p, child);
}

static void collect_waiting(void *ctx, uint64_t id, void *item)
{
    (void)id;
    job *j = item;
    if (j->state == ENGINE_WAITING && !job_parked(j)) ptr_vec_push(ctx, j);
}

/* Jobs the store holds as waiting are loaded off every heap (load.c): here
 * each counts its parents unfinished and waits, or goes on.  The store may
 * say waiting of a job already released (its ready row is written late,
 * see api/commit.c): it is released again here, by the same rule. */
void engine_load_deps_done(engine_t *e, int64_t now)
{
    ptr_vec w = {0};
    idtab_foreach(&e->jobs, collect_waiting, &w);
    for (size_t i = 0; i < w.n; i++) {
        job *j = w.v[i];
        job_deps *d = j->extra ? j->extra->deps : NULL;
        uint32_t pending = 0;
        for (uint32_t k = 0; d && k < d->n_parents; k++)
            pending += unfinished(engine_job_find(e, d->parents[k]));
        if (d) d->pending = pending;
        if (!pending) engine_deps_release(e, j, now);
    }
    free(w.v);
}

bool engine_deps_consistent(engine_t *e, const job *j, char *why, size_t len)
{
    const job_deps *d = j->extra ? j->extra->deps : NULL;
    if (j->state != ENGINE_WAITING || job_parked(j)) return true;
    if (!d || !d->pending) {
        snprintf(why, len, "waiting job %llu has no pending parent", (unsigned long long)j->id);
        return false;
    }
    uint32_t n = 0;
    for (uint32_t k = 0; k < d->n_parents; k++) n += unfinished(engine_job_find(e, d->parents[k]));
    if (n != d->pending) {
        snprintf(why, len, "waiting job %llu counts %u pending parents, has %u",
                 (unsigned long long)j->id, d->pending, n);
        return false;
    }
    return true;
}
