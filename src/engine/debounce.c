// SPDX-License-Identifier: Apache-2.0
/* Debounce (docs/SEMANTICS.md, "Debounce"): a submit with debounce_ms and a
 * key replaces the pending job of the key's lane (its tail, not leased yet,
 * itself made by a debounced submit, of the same type and keys) rather than
 * making a new one: the tail takes the submit's args (on a merging queue,
 * its payload joins), and its start moves to now + debounce_ms, but never
 * past debounce_until (its first submit + debounce_max_ms).  So a key
 * submitted again and again runs once per quiet period of debounce_ms.
 *
 * Replacing args: a job's args live in its own allocation (or, spilled,
 * in the store and the args cache: args.c), so new args of another length
 * move the job.  engine_job_set_args reallocates it and mends every
 * pointer to it a pending job has: the id table, its lane's links, the
 * dedup table and the change list (it is in no heap then: the caller
 * takes it out first).  Its new args go inline or out of memory by the
 * budget, as a new job's would; the quotas count the change. */
#include "internal.h"

/* Every pointer to a pending job that moved from `old` (its address before
 * the move, as a number: the block is freed) to `j`. */
static void relocated(engine_t *e, uintptr_t old, job *j)
{
    /* idtab_put adds: the old entry goes first (an id loaded out of order
     * lives in the table's overflow, where a second put would add a second
     * entry) */
    idtab_del(&e->jobs, j->id);
    if (idtab_put(&e->jobs, j->id, j) != 0) engine_oom();
    if (j->in_lane) {
        lane_link *l = j->in_lane;
        if (l->prev)
            l->prev->in_lane->next = j;
        else
            l->lane->head = j;
        if (l->next)
            l->next->in_lane->prev = j;
        else
            l->lane->tail = j;
    }
    if (j->noted) /* its entry in the change list (one at most) */
        for (size_t i = e->changes.n; i-- > 0;)
            if (e->changes.v[i].kind == ENGINE_CH_JOB && (uintptr_t)e->changes.v[i].job == old) {
                e->changes.v[i].job = j;
                break;
            }
}

job *engine_job_set_args(engine_t *e, job *j, const char *args, uint32_t len)
{
    uint64_t before = engine_job_data_bytes(j);
    bool in_uniq = (j->flags & JF_IN_UNIQ) != 0;
    if (in_uniq) engine_uniq_remove(e, j); /* hashed by its pointer's fields: back after */
    size_t old_inline = job_inline_len(j);
    if (j->flags & JF_ARGS_OUT)
        engine_args_forget(e, j);
    else
        e->data_bytes -= old_inline;
    e->mem_bytes -= mem_job(old_inline);
    bool out = engine_args_spill(e, j->node, len);
    uint32_t inline_len = out ? 2 : len;
    uintptr_t old = (uintptr_t)j;
    j = realloc(j, offsetof(job, args) + inline_len + 1);
    if (!j) engine_oom();
    if ((uintptr_t)j != old) relocated(e, old, j);
    e->mem_bytes += mem_job(inline_len);
    if (out) {
        engine_args_spilled(e, j, args, len);
    } else {
        if (len) memcpy(j->args, args, len); /* (args may be NULL when empty) */
        j->args[len] = 0;
        e->data_bytes += len;
    }
    if (in_uniq) engine_uniq_add(e, j);
    engine_job_data_changed(e, j, before);
    engine_note_job(e, j, ENGINE_JF_ARGS);
    return j;
}

bool engine_debounce_into(engine_t *e, int64_t now, job *tail, const engine_submit_req *r,
                          const char *args, uint32_t args_len, double score)
{
    engine_state st = (engine_state)tail->state;
    if (!tail->extra || !tail->extra->debounced ||
        (st != ENGINE_READY && st != ENGINE_SCHEDULED && st != ENGINE_BLOCKED))
        return false;
    /* a job whose handler stored steps has started for good (steps.c: its
     * steps belong to its args, and a parked one is not pending) */
    if (tail->extra->steps) return false;
    bool merge = job_queue(tail)->s.merge;
    if (merge && (tail->flags & JF_ARGS_OUT)) return false; /* takes no payloads */
    int64_t start = now + r->debounce_ms;
    /* (past its latest start, it is due: it keeps that start, its place) */
    if (tail->extra->debounce_until && start > tail->extra->debounce_until)
        start = tail->extra->debounce_until;
    if (st != ENGINE_BLOCKED) engine_unplace(e, tail); /* out of its heap while it changes */
    if (merge) {
        engine_ensure_payloads(e, tail);
        uint64_t before = tail->extra->pl.bytes;
        engine_payload_add(e, &tail->extra->pl, score, args, args_len);
        engine_job_data_changed(e, tail, before);
        engine_note_job(e, tail, ENGINE_JF_PAYLOADS);
    } else {
        tail = engine_job_set_args(e, tail, args, args_len);
    }
    tail->run_at = start;
    if (st != ENGINE_BLOCKED) engine_make_runnable(e, tail, now);
    engine_note_job(e, tail, 0);
    return true;
}
