// SPDX-License-Identifier: Apache-2.0
/* Attempt history: an attempt that ended without its job succeeding, copied
 * as it ended into an ENGINE_CH_ATTEMPT change (the job's fields are
 * overwritten by its next lease, maybe in the same change list); and the
 * attempt a job's own fields hold. */
#include "internal.h"

static const char *const outcome_names[ENGINE_ATTEMPT_NOUTCOMES] = {
    "failed", "expired", "timed_out", "cancelled", "succeeded", "leased", "running", "suspended"};

const char *engine_attempt_outcome_name(engine_attempt_outcome o)
{
    return (unsigned)o < ENGINE_ATTEMPT_NOUTCOMES ? outcome_names[o] : NULL;
}

int engine_attempt_outcome_parse(const char *name)
{
    for (int i = 0; name && i < ENGINE_ATTEMPT_NOUTCOMES; i++)
        if (strcmp(outcome_names[i], name) == 0) return i;
    return -1;
}

/* One block: the record, then its strings. */
static engine_attempt_info *record_new(const char *worker, const char *error, const char *stats)
{
    size_t lw = worker ? strlen(worker) + 1 : 0, le = error ? strlen(error) + 1 : 0,
           ls = stats ? strlen(stats) + 1 : 0;
    engine_attempt_info *a = xmalloc(sizeof(*a) + lw + le + ls);
    memset(a, 0, sizeof(*a));
    char *at = (char *)(a + 1);
    if (worker) {
        a->worker = memcpy(at, worker, lw);
        at += lw;
    }
    if (error) {
        a->error = memcpy(at, error, le);
        at += le;
    }
    if (stats) a->stats = memcpy(at, stats, ls);
    return a;
}

void engine_attempt_ended(engine_t *e, const job *j, int64_t now, engine_attempt_outcome outcome,
                          engine_state after, const char *stats)
{
    if (e->loading) return;
    const job_extra *ex = j->extra; /* a leased job always has one */
    /* a suspended attempt ended without an error: the job's is an earlier one's */
    engine_attempt_info *a =
        record_new(ex->worker, outcome == ENGINE_ATTEMPT_SUSPENDED ? NULL : ex->error, stats);
    a->job_id = j->id;
    a->token = ex->token;
    a->attempt = j->attempts;
    a->leased_at = ex->leased_at;
    a->started_at = ex->started_at;
    a->finished_at = now;
    a->outcome = outcome;
    a->job_state = after;
    ptr_vec_push(&e->attempt_recs, a);
    engine_change *c = engine_change_push(e);
    c->kind = ENGINE_CH_ATTEMPT;
    c->id = j->id;
    c->attempt = a;
}

void engine_attempts_clear(engine_t *e)
{
    for (size_t i = 0; i < e->attempt_recs.n; i++) free(e->attempt_recs.v[i]);
    e->attempt_recs.n = 0;
}

bool engine_job_attempt(const engine_job_info *j, engine_attempt_info *out)
{
    memset(out, 0, sizeof(*out));
    bool current = j->state == ENGINE_LEASED || j->state == ENGINE_RUNNING;
    if (!current && j->state != ENGINE_SUCCEEDED) return false;
    if (!j->token || !j->leased_at) return false; /* never leased (a loaded oddity) */
    out->job_id = j->id;
    out->token = j->token;
    out->attempt = j->attempts;
    out->worker = j->worker;
    out->leased_at = j->leased_at;
    out->started_at = j->started_at;
    out->job_state = j->state;
    if (current) {
        out->outcome = j->state == ENGINE_LEASED ? ENGINE_ATTEMPT_LEASED : ENGINE_ATTEMPT_RUNNING;
        return true; /* its error field is an earlier attempt's */
    }
    out->outcome = ENGINE_ATTEMPT_SUCCEEDED;
    out->finished_at = j->finished_at;
    out->stats = j->stats;
    return true;
}
