/* JSON in and out of the library: caller text checked before it is sent,
 * answers turned into structs. */
#include "client/internal.h"
#include "client/utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DUMP_FLAGS (JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17))

int tq_json_arg(tenq_client *c, const char *field, const char *text, json_t **out)
{
    json_error_t jerr;
    *out = json_loads(text, JSON_DECODE_ANY, &jerr);
    if (*out) return 0;
    c->status = 0;
    int rc = tq_seterr(c, TENQ_EINVALID, "%s is not valid JSON: %s (column %d)", field, jerr.text,
                       jerr.column);
    snprintf(c->field, sizeof c->field, "%s", field);
    return rc;
}

int tq_put_str(tenq_client *c, json_t *o, const char *key, const char *v)
{
    if (!v) return 0;
    json_t *s = json_string(v);
    if (!s) {
        int rc = tq_seterr(c, TENQ_EINVALID, "%s is not valid UTF-8", key);
        snprintf(c->field, sizeof c->field, "%s", key);
        return rc;
    }
    if (json_object_set_new(o, key, s) != 0) return tq_seterr(c, TENQ_ENOMEM, "out of memory");
    return 0;
}

int tq_put_json(tenq_client *c, json_t *o, const char *key, const char *v)
{
    if (!v) return 0;
    json_t *j;
    int rc = tq_json_arg(c, key, v, &j);
    if (rc != 0) return rc;
    if (json_object_set_new(o, key, j) != 0) return tq_seterr(c, TENQ_ENOMEM, "out of memory");
    return 0;
}

void tq_jset(json_t *o, const char *key, json_t *v, bool *bad)
{
    if (!v || json_object_set_new(o, key, v) != 0) *bad = true;
}

char *tq_jstr(const json_t *o, const char *key, bool *bad)
{
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return NULL;
    if (!json_is_string(v)) {
        *bad = true;
        return NULL;
    }
    char *s = strdup(json_string_value(v));
    if (!s) *bad = true;
    return s;
}

char *tq_jtext(const json_t *o, const char *key, bool *bad)
{
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return NULL;
    char *s = json_dumps(v, DUMP_FLAGS);
    if (!s) *bad = true;
    return s;
}

long long tq_jint(const json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? json_integer_value(v) : 0;
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

int tq_job_from_json(const json_t *o, tenq_job *j)
{
    memset(j, 0, sizeof(*j));
    if (!json_is_object(o) || !json_is_integer(json_object_get(o, "id"))) return TENQ_EPROTOCOL;
    bool bad = false;
    j->id = (uint64_t)tq_jint(o, "id");
    j->tenant = tq_jstr(o, "tenant", &bad);
    j->queue = tq_jstr(o, "queue", &bad);
    j->type = tq_jstr(o, "type", &bad);
    j->key = tq_jstr(o, "key", &bad);
    const char *st = json_string_value(json_object_get(o, "state"));
    /* a leased job's answer has no state: it is leased */
    j->state = st                                  ? tenq_state_parse(st)
               : json_object_get(o, "lease_until") ? TENQ_STATE_LEASED
                                                   : TENQ_STATE_UNKNOWN;
    j->priority = (int)tq_jint(o, "priority");
    if (json_object_get(o, "attempts")) {
        j->attempts = (uint32_t)tq_jint(o, "attempts");
        j->attempt = j->attempts ? j->attempts - 1 : 0;
    } else {
        j->attempt = (uint32_t)tq_jint(o, "attempt");
        j->attempts = j->attempt + 1;
    }
    j->max_attempts = (uint32_t)tq_jint(o, "max_attempts");
    j->run_at = tq_jint(o, "run_at");
    j->created_at = tq_jint(o, "created_at");
    j->ready_at = tq_jint(o, "ready_at");
    j->leased_at = tq_jint(o, "leased_at");
    j->started_at = tq_jint(o, "started_at");
    j->finished_at = tq_jint(o, "finished_at");
    j->lease_until = tq_jint(o, "lease_until");
    j->token = (uint64_t)tq_jint(o, "token");
    j->worker = tq_jstr(o, "worker", &bad);
    j->error = tq_jstr(o, "error", &bad);
    json_t *args = json_object_get(o, "args");
    if (args) {
        j->args_json = json_dumps(args, DUMP_FLAGS);
        if (!j->args_json) bad = true;
    }
    j->payloads_json = tq_jtext(o, "payloads", &bad);
    j->result_json = tq_jtext(o, "result", &bad);
    j->stats_json = tq_jtext(o, "stats", &bad);
    j->progress_json = tq_jtext(o, "progress", &bad);
    j->unique_key = tq_jstr(o, "unique_key", &bad);
    j->idempotency_key = tq_jstr(o, "idempotency_key", &bad);
    j->cancel_requested = json_is_true(json_object_get(o, "cancel_requested"));
    j->merged_into = (uint64_t)tq_jint(o, "merged_into");
    j->json = json_dumps(o, DUMP_FLAGS);
    if (!j->json) bad = true;
    if (bad) {
        tq_job_clear(j);
        /* a wrong type is the server's fault, a NULL from strdup ours; both
         * are rare enough that one code serves */
        return TENQ_EPROTOCOL;
    }
    return 0;
}

void tq_item_error(const json_t *e, int *err, char *message, size_t mlen, char *field, size_t flen)
{
    const char *word = json_string_value(json_object_get(e, "code"));
    const char *msg = json_string_value(json_object_get(e, "message"));
    const char *f = json_string_value(json_object_get(e, "field"));
    *err = tq_err_from_answer(word, 0);
    if (*err == TENQ_EPROTOCOL) *err = TENQ_EINVALID; /* an item error without a known word */
    snprintf(message, mlen, "%s", msg ? msg : tenq_err_message(*err));
    snprintf(field, flen, "%s", f ? f : "");
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

int tq_buf_str(tenq_client *c, tq_buf *b, const char *key, const char *v, bool first)
{
    if (!v) return 0;
    size_t n = strlen(v);
    if (!tq_utf8_valid(v, n)) {
        int rc = tq_seterr(c, TENQ_EINVALID, "%s is not valid UTF-8", key);
        snprintf(c->field, sizeof c->field, "%s", key);
        return rc;
    }
    if (!first) tq_buf_raw(b, ",", 1);
    buf_escaped(b, key, strlen(key));
    tq_buf_raw(b, ":", 1);
    buf_escaped(b, v, n);
    return 0;
}
