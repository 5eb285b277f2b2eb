// SPDX-License-Identifier: Apache-2.0
/* JSON in and out of the library: request bodies written as text (caller
 * text checked before it is sent), answers read in place into structs. */
#include "internal.h"
#include "base/utf8.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

long long tq_aint(tq_span a, const char *name)
{
    tq_span v;
    return tq_obj_get(a, name, &v) ? tq_span_int(v) : 0;
}

tenq_state tq_span_state(tq_span v)
{
    char word[16];
    tq_span_str_to(v, word, sizeof word);
    return tenq_state_parse(word);
}

tenq_state tq_astate(tq_span a, const char *name)
{
    tq_span v;
    return tq_obj_get(a, name, &v) ? tq_span_state(v) : TENQ_STATE_UNKNOWN;
}

bool tq_atrue(tq_span a, const char *name)
{
    tq_span v;
    return tq_obj_get(a, name, &v) && tq_span_true(v);
}

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

/* The string members' text into one block after the job's own text, which
 * starts it (j->json): one allocation a job, freed by tq_job_clear. */
/* The job's own copy of its JSON text (with a lease's `attempt`, the span
 * `attempt`, written as j->attempt: counted from 1) and of its strings, in
 * one block. */
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

int tq_walk_list(tq_iter *top, const char *name, tq_each_fn each, void *ctx, size_t *count)
{
    tq_span k;
    tq_iter list;
    bool listed = false;
    int r;
    *count = 0;
    while ((r = tq_obj_key(top, &k)) > 0) {
        if (!tq_key_is(k, name)) { /* passed over, and so checked */
            if (tq_iter_value(top, &k) < 0) return TENQ_EPROTOCOL;
            continue;
        }
        if (listed || !tq_iter_enter(top, &list, '[')) return TENQ_EPROTOCOL; /* one list */
        listed = true;
        while ((r = tq_arr_step(&list)) > 0)
            if (each(&list, (*count)++, ctx) != 0) return TENQ_EPROTOCOL;
        if (r < 0) return TENQ_EPROTOCOL;
        tq_iter_leave(top, &list);
    }
    return r == 0 && listed ? 0 : TENQ_EPROTOCOL;
}

/* The item object at `at`: its members by the names in `names` (the last
 * of duplicates) into v, and whether it holds an error object (*e). */
int tq_item_read(tq_iter *at, const char *const *names, size_t n, tq_span *v, tq_span *e)
{
    tq_iter it;
    tq_span k, x;
    int r;
    *e = (tq_span){0};
    for (size_t i = 0; i < n; i++) v[i] = (tq_span){0};
    if (!tq_iter_enter(at, &it, '{')) return -1;
    while ((r = tq_obj_next(&it, &k, &x)) > 0) {
        if (tq_key_is(k, "error")) {
            *e = x;
            continue;
        }
        for (size_t i = 0; i < n; i++)
            if (tq_key_is(k, names[i])) v[i] = x;
    }
    if (r < 0) return -1;
    tq_iter_leave(at, &it);
    return 0;
}

int tq_error_read(tq_span e, int status, char *message, size_t mlen, char *field, size_t flen)
{
    char word[64];
    tq_obj_str_to(e, "code", word, sizeof word);
    tq_obj_str_to(e, "message", message, mlen);
    tq_obj_str_to(e, "field", field, flen);
    return tq_err_from_answer(word[0] ? word : NULL, status);
}

void tq_item_error(tq_span e, int *err, char *message, size_t mlen, char *field, size_t flen)
{
    *err = tq_error_read(e, 0, message, mlen, field, flen);
    if (*err == TENQ_EPROTOCOL) *err = TENQ_EINVALID; /* an item error without a known word */
    if (!message[0]) snprintf(message, mlen, "%s", tenq_err_message(*err));
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

/* ---- states ------------------------------------------------------------------------------- */

/* By tenq_state (include/tenq/tenq.h); tests/cli/test_client_http.c checks
 * that every state the server's engine names is here. */
static const char *const state_names[] = {"unknown",   "scheduled", "blocked", "ready",
                                          "leased",    "running",   "dead",    "succeeded",
                                          "cancelled", "merged",    "waiting"};
_Static_assert(sizeof state_names / sizeof state_names[0] == TENQ_STATE_WAITING + 1,
               "a name for every tenq_state");

const char *tenq_state_name(tenq_state s)
{
    return (unsigned)s < sizeof state_names / sizeof state_names[0] ? state_names[s] : "unknown";
}

tenq_state tenq_state_parse(const char *name)
{
    for (unsigned i = 1; name && i < sizeof state_names / sizeof state_names[0]; i++)
        if (!strcmp(state_names[i], name)) return (tenq_state)i;
    return TENQ_STATE_UNKNOWN;
}

bool tenq_state_finished(tenq_state s)
{
    return s == TENQ_STATE_SUCCEEDED || s == TENQ_STATE_CANCELLED || s == TENQ_STATE_MERGED ||
           s == TENQ_STATE_DEAD;
}

void tq_buf_raw(tq_buf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

static void buf_escaped(tq_buf *b, const char *v, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    tq_buf_raw(b, "\"", 1);
    size_t run = 0; /* bytes that go as they are */
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)v[i];
        if (ch >= 0x20 && ch != '"' && ch != '\\') continue;
        tq_buf_raw(b, v + run, i - run);
        run = i + 1;
        char e[7] = {'\\', 0};
        size_t el = 2;
        switch (ch) {
        case '"': e[1] = '"'; break;
        case '\\': e[1] = '\\'; break;
        case '\n': e[1] = 'n'; break;
        case '\r': e[1] = 'r'; break;
        case '\t': e[1] = 't'; break;
        default:
            e[1] = 'u';
            e[2] = '0';
            e[3] = '0';
            e[4] = hex[ch >> 4];
            e[5] = hex[ch & 15];
            el = 6;
        }
        tq_buf_raw(b, e, el);
    }
    tq_buf_raw(b, v + run, n - run);
    tq_buf_raw(b, "\"", 1);
}

/* ,"key": (without the comma when first) */
static void buf_key(tq_buf *b, const char *key, bool first)
{
    if (!first) tq_buf_raw(b, ",", 1);
    buf_escaped(b, key, strlen(key));
    tq_buf_raw(b, ":", 1);
}

int tq_buf_str(tenq_client *c, tq_buf *b, const char *key, const char *v, bool first)
{
    if (!v) return 0;
    size_t n = strlen(v);
    if (!tq_utf8_valid(v, n)) return tq_refuse(c, key, "%s is not valid UTF-8", key);
    buf_key(b, key, first);
    buf_escaped(b, v, n);
    return 0;
}

int tq_buf_json(tenq_client *c, tq_buf *b, const char *key, const char *v)
{
    if (!v) return 0;
    size_t n = strlen(v);
    if (!tq_scan_valid(v, n)) return tq_refuse(c, key, "%s is not valid JSON", key);
    buf_key(b, key, false);
    tq_buf_raw(b, v, n);
    return 0;
}

void tq_buf_int(tq_buf *b, const char *key, long long v)
{
    char num[32];
    buf_key(b, key, false);
    tq_buf_raw(b, num, (size_t)snprintf(num, sizeof num, "%lld", v));
}

int tq_buf_names(tenq_client *c, tq_buf *b, const char *key, const char *const *v, size_t n)
{
    buf_key(b, key, false);
    tq_buf_raw(b, "[", 1);
    for (size_t i = 0; i < n; i++) {
        if (!v[i] || !tq_utf8_valid(v[i], strlen(v[i])))
            return tq_refuse(c, key, "%s must hold UTF-8 names", key);
        if (i) tq_buf_raw(b, ",", 1);
        buf_escaped(b, v[i], strlen(v[i]));
    }
    tq_buf_raw(b, "]", 1);
    return 0;
}
