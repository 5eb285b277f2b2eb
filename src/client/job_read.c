// SPDX-License-Identifier: Apache-2.0
/* A job object of an answer into tenq_job: its members by a table, its
 * strings copied into one block; and freeing it. */
#include "internal.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A job's strings share one block, which j->json starts (tq_job_read). */
void tq_job_clear(tenq_job *j)
{
    free(j->json);
    char **strs[] = {&j->tenant,          &j->queue,       &j->type,          &j->key,
                     &j->worker,          &j->error,       &j->args_json,     &j->payloads_json,
                     &j->result_json,     &j->stats_json,  &j->progress_json, &j->unique_key,
                     &j->idempotency_key, &j->traceparent, &j->json};
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++) *strs[i] = NULL;
}

/* How each member of a job object lands in tenq_job. */
enum { F_STR, F_TEXT, F_RAW, F_I64, F_U64, F_INT, F_U32, F_BOOL, F_STATE, F_ATTEMPTS, F_ATTEMPT };
static const struct {
    const char *name;
    unsigned char len, kind;
    size_t off;
} job_fields[] = {
#define NAMED(name, kind, member)                                                                  \
    {                                                                                              \
        name, sizeof name - 1, kind, offsetof(tenq_job, member)                                    \
    }
#define FIELD(member, kind) NAMED(#member, kind, member)
    /* in the order the server writes a leased job's members: a walk finds
     * each one where the last one left off */
    FIELD(id, F_U64),
    FIELD(token, F_U64),
    FIELD(lease_until, F_I64),
    FIELD(lease_left_ms, F_I64),
    FIELD(tenant, F_STR),
    FIELD(queue, F_STR),
    FIELD(type, F_STR),
    FIELD(key, F_STR),
    NAMED("args", F_RAW, args_json),
    FIELD(priority, F_INT),
    FIELD(traceparent, F_STR),
    FIELD(steps, F_U32),
    NAMED("attempt", F_ATTEMPT, attempt),
    NAMED("attempts", F_ATTEMPTS, attempts),
    FIELD(max_attempts, F_U32),
    FIELD(run_at, F_I64),
    FIELD(created_at, F_I64),
    FIELD(ready_at, F_I64),
    FIELD(leased_at, F_I64),
    FIELD(started_at, F_I64),
    FIELD(finished_at, F_I64),
    FIELD(state, F_STATE),
    FIELD(worker, F_STR),
    FIELD(error, F_STR),
    NAMED("payloads", F_TEXT, payloads_json),
    NAMED("result", F_TEXT, result_json),
    NAMED("stats", F_TEXT, stats_json),
    NAMED("progress", F_TEXT, progress_json),
    FIELD(unique_key, F_STR),
    FIELD(idempotency_key, F_STR),
    FIELD(cancel_requested, F_BOOL),
    FIELD(merged_into, F_U64),
#undef FIELD
#undef NAMED
};
enum { NFIELDS = sizeof job_fields / sizeof job_fields[0] };

/* The field named k, looked for from `from` on (wrapping); NFIELDS when
 * none (a field newer than this library). */
static size_t field_of(tq_span k, size_t from)
{
    bool escaped = memchr(k.p, '\\', k.n) != NULL;
    for (size_t i = 0, f = from; i < NFIELDS; i++, f = f + 1 < NFIELDS ? f + 1 : 0) {
        if (escaped ? tq_key_is(k, job_fields[f].name)
                    : k.n == job_fields[f].len && !memcmp(k.p, job_fields[f].name, k.n))
            return f;
    }
    return NFIELDS;
}

/* The job's own copy of its JSON text (with a lease's `attempt`, the span
 * `attempt`, written as j->attempt: counted from 1) and of its strings, in
 * one block, which j->json starts: one allocation a job, freed by
 * tq_job_clear. */
static bool copy_strings(tenq_job *j, tq_span whole, tq_span attempt, const tq_span *str)
{
    char num[24];
    int num_n = attempt.p ? snprintf(num, sizeof num, "%u", j->attempt) : 0;
    size_t need = whole.n + (size_t)num_n + 1;
    for (size_t f = 0; f < NFIELDS; f++)
        if (str[f].p) need += str[f].n + 1;
    char *block = malloc(need), *o = block;
    if (!block) return false;
    j->json = o;
    if (attempt.p) {
        size_t head = (size_t)(attempt.p - whole.p), tail = whole.n - head - attempt.n;
        memcpy(o, whole.p, head);
        memcpy(o + head, num, (size_t)num_n);
        memcpy(o + head + (size_t)num_n, attempt.p + attempt.n, tail);
        o += head + (size_t)num_n + tail;
    } else {
        memcpy(o, whole.p, whole.n);
        o += whole.n;
    }
    *o++ = 0;
    for (size_t f = 0; f < NFIELDS; f++) {
        tq_span v = str[f];
        if (!v.p) continue;
        char **dst = (char **)((char *)j + job_fields[f].off);
        *dst = o;
        if (job_fields[f].kind == F_STR) {
            o += tq_span_str_into(v, o) + 1;
        } else {
            memcpy(o, v.p, v.n);
            o[v.n] = 0;
            o += v.n + 1;
        }
    }
    return true;
}

int tq_job_read(tq_iter *at, tenq_job *j)
{
    memset(j, 0, sizeof(*j));
    const char *start = at->p;
    tq_iter it;
    if (!tq_iter_enter(at, &it, '{')) return TENQ_EPROTOCOL;
    bool bad = false, has_state = false, has_lease = false, has_attempts = false;
    long long attempt = 0;
    tq_span k, v, str[NFIELDS] = {{0}}, attempt_v = {0};
    size_t f, next = 0;
    int r;
    while (!bad && (r = tq_obj_next(&it, &k, &v)) > 0) {
        if ((f = field_of(k, next)) == NFIELDS) continue;
        next = f + 1 < NFIELDS ? f + 1 : 0;
        char *at_field = (char *)j + job_fields[f].off;
        switch (job_fields[f].kind) {
        case F_STR: /* a string or null */
            bad = !tq_span_null(v) && v.p[0] != '"';
            /* fall through */
        case F_TEXT: str[f] = tq_span_null(v) ? (tq_span){0} : v; break;
        case F_RAW: str[f] = v; break; /* args: a null stays "null" (tenq.h) */
        case F_I64: *(int64_t *)at_field = tq_span_int(v); break;
        case F_U64: *(uint64_t *)at_field = (uint64_t)tq_span_int(v); break;
        case F_INT: *(int *)at_field = (int)tq_span_int(v); break;
        case F_U32: *(uint32_t *)at_field = (uint32_t)tq_span_int(v); break;
        case F_BOOL: *(bool *)at_field = tq_span_true(v); break;
        case F_STATE:
            j->state = tq_span_state(v);
            has_state = true;
            break;
        case F_ATTEMPTS:
            j->attempts = (uint32_t)tq_span_int(v);
            has_attempts = true;
            break;
        case F_ATTEMPT:
            attempt = tq_span_int(v);
            attempt_v = v;
            break;
        }
        if (job_fields[f].off == offsetof(tenq_job, lease_until)) has_lease = true;
    }
    if (r < 0 || !j->id) bad = true;
    if (!bad) tq_iter_leave(at, &it);
    /* a leased job's answer has no state: it is leased */
    if (!has_state) j->state = has_lease ? TENQ_STATE_LEASED : TENQ_STATE_UNKNOWN;
    /* a lease's `attempt` counts the attempts before this one; the job's is
     * this one's number, counted from 1 as the attempt history counts */
    if (has_attempts) {
        j->attempt = j->attempts;
        attempt_v = (tq_span){0};
    } else {
        j->attempt = (uint32_t)(attempt >= 0 ? attempt + 1 : 1);
        j->attempts = j->attempt;
    }
    if (bad || !copy_strings(j, (tq_span){start, (size_t)(at->p - start)}, attempt_v, str)) {
        tq_job_clear(j);
        /* a wrong type is the server's fault, a NULL from malloc ours; both
         * are rare enough that one code serves */
        return TENQ_EPROTOCOL;
    }
    return 0;
}

int tq_job_from_span(tq_span o, tenq_job *j)
{
    tq_iter at = tq_iter_at(o);
    return tq_job_read(&at, j);
}

void tenq_job_free(tenq_job *job)
{
    if (!job) return;
    tq_job_clear(job);
    free(job);
}

void tenq_jobs_free(tenq_job *jobs, size_t n)
{
    if (!jobs) return;
    for (size_t i = 0; i < n; i++) tq_job_clear(&jobs[i]);
    free(jobs);
}
