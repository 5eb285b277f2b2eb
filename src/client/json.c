/* JSON in and out of the library: request bodies written as text (caller
 * text checked before it is sent), answers read in place into structs. */
#include "client/internal.h"
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

void tq_job_clear(tenq_job *j)
{
    char **strs[] = {&j->tenant,          &j->queue,      &j->type,          &j->key,
                     &j->worker,          &j->error,      &j->args_json,     &j->payloads_json,
                     &j->result_json,     &j->stats_json, &j->progress_json, &j->unique_key,
                     &j->idempotency_key, &j->json};
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++) {
        free(*strs[i]);
        *strs[i] = NULL;
    }
}

/* How each member of a job object lands in tenq_job. */
enum { F_STR, F_TEXT, F_RAW, F_I64, F_U64, F_INT, F_U32, F_BOOL, F_STATE, F_ATTEMPTS, F_ATTEMPT };
static const struct {
    const char *name;
    unsigned char kind;
    size_t off;
} job_fields[] = {
#define FIELD(name, kind)                                                                          \
    {                                                                                              \
#name, kind, offsetof(tenq_job, name)                                                      \
    }
    FIELD(id, F_U64),
    FIELD(token, F_U64),
    FIELD(lease_until, F_I64),
    FIELD(tenant, F_STR),
    FIELD(queue, F_STR),
    FIELD(type, F_STR),
    FIELD(key, F_STR),
    {"args", F_RAW, offsetof(tenq_job, args_json)},
    FIELD(priority, F_INT),
    {"attempt", F_ATTEMPT, 0},
    {"attempts", F_ATTEMPTS, 0},
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
    {"payloads", F_TEXT, offsetof(tenq_job, payloads_json)},
    {"result", F_TEXT, offsetof(tenq_job, result_json)},
    {"stats", F_TEXT, offsetof(tenq_job, stats_json)},
    {"progress", F_TEXT, offsetof(tenq_job, progress_json)},
    FIELD(unique_key, F_STR),
    FIELD(idempotency_key, F_STR),
    FIELD(cancel_requested, F_BOOL),
    FIELD(merged_into, F_U64),
#undef FIELD
};

int tq_job_from_span(tq_span o, tenq_job *j)
{
    memset(j, 0, sizeof(*j));
    tq_iter it;
    if (!tq_obj_begin(&it, o)) return TENQ_EPROTOCOL;
    bool bad = false, has_state = false, has_lease = false, has_attempts = false;
    long long attempt = 0;
    tq_span k, v;
    int r;
    while (!bad && (r = tq_obj_next(&it, &k, &v)) > 0) {
        size_t f = 0, nf = sizeof job_fields / sizeof job_fields[0];
        while (f < nf && !tq_key_is(k, job_fields[f].name)) f++;
        if (f == nf) continue; /* a field newer than this library */
        char *at = (char *)j + job_fields[f].off;
        switch (job_fields[f].kind) {
        case F_STR:
        case F_TEXT:
        case F_RAW: { /* F_RAW keeps a null as "null" (args: tenq.h) */
            char **dst = (char **)at;
            free(*dst);
            unsigned kind = job_fields[f].kind;
            *dst = kind == F_STR                        ? tq_span_str(v, &bad)
                   : kind == F_TEXT || !tq_span_null(v) ? tq_span_text(v, &bad)
                                                        : strdup("null");
            if (kind == F_RAW && !*dst) bad = true;
            break;
        }
        case F_I64: *(int64_t *)at = tq_span_int(v); break;
        case F_U64: *(uint64_t *)at = (uint64_t)tq_span_int(v); break;
        case F_INT: *(int *)at = (int)tq_span_int(v); break;
        case F_U32: *(uint32_t *)at = (uint32_t)tq_span_int(v); break;
        case F_BOOL: *(bool *)at = tq_span_true(v); break;
        case F_STATE:
            j->state = tq_span_state(v);
            has_state = true;
            break;
        case F_ATTEMPTS:
            j->attempts = (uint32_t)tq_span_int(v);
            has_attempts = true;
            break;
        case F_ATTEMPT: attempt = tq_span_int(v); break;
        }
        if (job_fields[f].off == offsetof(tenq_job, lease_until)) has_lease = true;
    }
    if (r < 0 || !j->id) bad = true;
    /* a leased job's answer has no state: it is leased */
    if (!has_state) j->state = has_lease ? TENQ_STATE_LEASED : TENQ_STATE_UNKNOWN;
    if (has_attempts) {
        j->attempt = j->attempts ? j->attempts - 1 : 0;
    } else {
        j->attempt = (uint32_t)attempt;
        j->attempts = j->attempt + 1;
    }
    if (!bad) j->json = tq_span_text(o, &bad);
    if (bad) {
        tq_job_clear(j);
        /* a wrong type is the server's fault, a NULL from malloc ours; both
         * are rare enough that one code serves */
        return TENQ_EPROTOCOL;
    }
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

static const char *const state_names[] = {"unknown",   "scheduled", "blocked", "ready",
                                          "leased",    "running",   "dead",    "succeeded",
                                          "cancelled", "merged"};

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
