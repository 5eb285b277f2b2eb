// SPDX-License-Identifier: Apache-2.0
/* Reading requests and writing jobs: shared by the handlers. */
#include "internal.h"

#include <errno.h>
#include <math.h>

/* Appends "name" (a member's key, as sent) or "[i]" to the path at *n. */
static void path_add(char *path, size_t cap, size_t *n, bool key, const char *p, size_t len,
                     size_t i)
{
    int w = key ? snprintf(path + *n, cap - *n, "%s%.*s", *n ? "." : "", (int)len, p)
                : snprintf(path + *n, cap - *n, "[%zu]", i);
    if (w > 0) *n = *n + (size_t)w < cap ? *n + (size_t)w : cap - 1;
}

/* Whether the number token v is one jansson cannot hold: an integer beyond
 * 64 bits, or a real beyond a double. */
static bool number_too_big(tq_span v)
{
    char *buf = xmalloc(v.n + 1);
    memcpy(buf, v.p, v.n);
    buf[v.n] = 0;
    errno = 0;
    bool big;
    if (strpbrk(buf, ".eE")) {
        big = isinf(strtod(buf, NULL)) && errno == ERANGE;
    } else {
        (void)strtoll(buf, NULL, 10);
        big = errno == ERANGE;
    }
    free(buf);
    return big;
}

/* The path of the first number, from the value *it stands at on (in
 * document order, as jansson reads), that does not fit: "jobs[3].priority";
 * false when there is none.  One pass: each container is entered where it
 * stands, each byte read once (a refused body costs what its parse did). */
static bool big_number_path(tq_iter *it, char *path, size_t cap, size_t n, int depth)
{
    char c = it->p < it->e ? *it->p : 0;
    if (c == '{' || c == '[') {
        tq_iter in;
        tq_span k = {0};
        int rc;
        if (depth >= TQ_DEPTH_MAX || !tq_iter_enter(it, &in, c)) return false;
        for (size_t i = 0; (rc = c == '{' ? tq_obj_key(&in, &k) : tq_arr_step(&in)) > 0; i++) {
            size_t at = n;
            path_add(path, cap, &at, c == '{', k.p, k.n, i);
            if (big_number_path(&in, path, cap, at, depth + 1)) return true;
            path[n] = 0;
        }
        if (rc == 0) tq_iter_leave(it, &in);
        return false;
    }
    tq_span v;
    if (tq_iter_value(it, &v) < 0) return false;
    return (c == '-' || (c >= '0' && c <= '9')) && number_too_big(v);
}

json_t *req_body(http_req *req)
{
    if (req->body_len == 0) {
        reply_error(req, TENQ_EINVALID, NULL, "a JSON body is required");
        return NULL;
    }
    json_error_t jerr;
    json_t *v = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &jerr);
    if (!v) {
        /* a number too big for 64 bits is the field's fault: name it */
        char path[256] = "";
        const char *b = req->body, *e = req->body + req->body_len;
        while (b < e && (*b == ' ' || *b == '\t' || *b == '\n' || *b == '\r')) b++;
        tq_iter at = tq_iter_at((tq_span){b, (size_t)(e - b)});
        if (json_error_code(&jerr) == json_error_numeric_overflow &&
            big_number_path(&at, path, sizeof path, 0, 0) && *path) {
            reply_error(req, TENQ_EINVALID, path,
                        "%s: a number beyond what 64 bits hold (integers from -2^63 to 2^63-1)",
                        path);
            return NULL;
        }
        reply_error(req, TENQ_EINVALID, NULL, "malformed JSON at line %d column %d: %s", jerr.line,
                    jerr.column, jerr.text);
        return NULL;
    }
    if (!json_is_object(v)) {
        json_decref(v);
        reply_error(req, TENQ_EINVALID, NULL, "the body must be a JSON object");
        return NULL;
    }
    return v;
}

const char *obj_unknown_field(json_t *obj, const char *const *allowed)
{
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v)
    {
        bool ok = false;
        for (const char *const *a = allowed; *a && !ok; a++) ok = !strcmp(*a, k);
        if (!ok) return k;
    }
    return NULL;
}

bool req_only_fields(http_req *req, json_t *obj, const char *const *allowed)
{
    const char *k = obj_unknown_field(obj, allowed);
    if (k) reply_error(req, TENQ_EINVALID, k, "unknown field \"%s\"", k);
    return !k;
}

int obj_str(json_t *obj, const char *key, bool required, const char **out, engine_err *err)
{
    json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (!v || json_is_null(v)) {
        if (!required) return 0;
        engine_errf(err, TENQ_EINVALID, key, "%s is required", key);
        return TENQ_EINVALID;
    }
    if (!json_is_string(v)) {
        engine_errf(err, TENQ_EINVALID, key, "%s must be a string", key);
        return TENQ_EINVALID;
    }
    if (strlen(json_string_value(v)) != json_string_length(v)) {
        engine_errf(err, TENQ_EINVALID, key, "%s must not contain NUL characters", key);
        return TENQ_EINVALID;
    }
    *out = json_string_value(v);
    return 0;
}

int obj_int(json_t *obj, const char *key, long long min, long long max, long long *out,
            bool *present, engine_err *err)
{
    json_t *v = json_object_get(obj, key);
    if (present) *present = false;
    if (!v || json_is_null(v)) return 0;
    if (!json_is_integer(v)) {
        engine_errf(err, TENQ_EINVALID, key, "%s must be an integer", key);
        return TENQ_EINVALID;
    }
    long long n = json_integer_value(v);
    if (n < min || n > max) {
        engine_errf(err, TENQ_EINVALID, key, "%s must be between %lld and %lld", key, min, max);
        return TENQ_EINVALID;
    }
    *out = n;
    if (present) *present = true;
    return 0;
}

bool req_str(http_req *req, json_t *obj, const char *key, const char **out, bool required)
{
    engine_err err;
    if (obj_str(obj, key, required, out, &err) == 0) return true;
    reply_engine_err(req, &err);
    return false;
}

bool req_int(http_req *req, json_t *obj, const char *key, long long *out, bool *present,
             long long min, long long max)
{
    engine_err err;
    if (obj_int(obj, key, min, max, out, present, &err) == 0) return true;
    reply_engine_err(req, &err);
    return false;
}

bool req_bool(http_req *req, json_t *obj, const char *key, bool *out, bool *present)
{
    json_t *v = json_object_get(obj, key);
    if (present) *present = false;
    if (!v || json_is_null(v)) return true;
    if (!json_is_boolean(v)) {
        reply_error(req, TENQ_EINVALID, key, "%s must be true or false", key);
        return false;
    }
    *out = json_is_true(v);
    if (present) *present = true;
    return true;
}

bool req_no_null(http_req *req, json_t *obj)
{
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v)
    {
        if (!json_is_null(v)) continue;
        reply_error(req, TENQ_EINVALID, k,
                    "%s is null: leave it out (for every one), or give a value", k);
        return false;
    }
    return true;
}

bool req_name_ok(http_req *req, engine_name_kind kind, const char *field, const char *s)
{
    engine_err err;
    if (engine_check_name(kind, field, s, &err) == 0) return true;
    reply_engine_err(req, &err);
    return false;
}

bool req_name(http_req *req, json_t *obj, const char *key, engine_name_kind kind, const char **out)
{
    json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (!v) return true;
    if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v)) {
        reply_error(req, TENQ_EINVALID, key,
                    json_is_null(v) ? "%s is null: leave it out (for every one), or name one"
                                    : "%s must be a string",
                    key);
        return false;
    }
    *out = json_string_value(v);
    return req_name_ok(req, kind, key, *out);
}

bool req_query_name(http_req *req, const char *name, engine_name_kind kind,
                    char buf[QUERY_NAME_BUF], const char **out)
{
    /* a value cut to fit buf is longer than any name: the rule refuses it */
    *out = http_query_get(req, name, buf, QUERY_NAME_BUF);
    return !*out || req_name_ok(req, kind, name, *out);
}

char *canonical_json(const json_t *v)
{
    return json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
}

bool req_query_num(http_req *req, const char *name, long long dflt, long long lo, long long hi,
                   long long *out)
{
    char buf[32];
    *out = dflt;
    if (!http_query_get(req, name, buf, sizeof buf)) return true;
    char *end;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (errno || end == buf || *end || v < lo || v > hi) {
        reply_error(req, TENQ_EINVALID, name, "%s must be a whole number from %lld to %lld", name,
                    lo, hi);
        return false;
    }
    *out = v;
    return true;
}

bool auth_shows_token(const principal *who)
{
    return (who->role == ROLE_ADMIN || who->role == ROLE_WORKER) && !who->read_only;
}

bool auth_may_see_job(const principal *who, const char *tenant, const char *queue)
{
    if (!who->tok) return true;
    if (who->role == ROLE_TENANT && strcmp(who->tok->tenant, tenant) != 0) return false;
    return token_allows_queue(who->tok, queue);
}

uint64_t req_path_id(http_req *req, const char *seg)
{
    char *end;
    errno = 0;
    unsigned long long id = strtoull(seg, &end, 10);
    if (errno || *end || !*seg || id == 0 || seg[0] == '-' || seg[0] == '+') {
        reply_error(req, TENQ_ENOT_FOUND, "id", "no job %s", seg);
        return 0;
    }
    return id;
}

static void time_field(jbuf *b, const char *k, int64_t v)
{
    jb_key(b, k);
    if (v)
        jb_int(b, v);
    else
        jb_null(b);
}

/* No lease for this long: "no worker has asked" rather than "waiting for one". */
#define WORKER_LATELY_MS 60000

static void json_ids(jbuf *b, const char *k, const uint64_t *ids, uint32_t n)
{
    jb_key(b, k);
    jb_arr(b);
    for (uint32_t i = 0; i < n; i++) jb_int(b, (long long)ids[i]);
    jb_arr_end(b);
}

/* "waiting": the reason, its figures, and a sentence for people. */
static void json_wait(jbuf *b, const engine_job_info *j, const engine_wait *w, int64_t now)
{
    const char *reason = engine_wait_name(w->kind);
    if (!reason) return;
    if (w->kind == ENGINE_WAIT_WORKER && (!w->asked_at || now - w->asked_at > WORKER_LATELY_MS))
        reason = API_WAIT_NO_WORKER;
    jb_key(b, "waiting");
    jb_obj(b);
    jb_kstr(b, "reason", reason);
    char msg[512];
    switch (w->kind) {
    case ENGINE_WAIT_SCHEDULED:
    case ENGINE_WAIT_BACKOFF:
        jb_kint(b, "until", w->until);
        if (w->kind == ENGINE_WAIT_SCHEDULED)
            snprintf(msg, sizeof msg, "scheduled: it becomes ready at its run_at");
        else
            snprintf(msg, sizeof msg,
                     "in backoff after attempt %u of %u failed: it is retried at "
                     "its run_at",
                     j->attempts, j->max_attempts);
        break;
    case ENGINE_WAIT_LANE:
        jb_kint(b, "blocked_by", (long long)w->blocked_by);
        snprintf(msg, sizeof msg, "its lane (key %.200s) runs job %llu first, in order",
                 j->key ? j->key : "", (unsigned long long)w->blocked_by);
        break;
    case ENGINE_WAIT_TENANT_SLOTS:
        jb_kint(b, "active", w->active);
        jb_kint(b, "limit", w->limit);
        if (w->limit == 0)
            snprintf(msg, sizeof msg, "tenant %.200s is paused (0 slots)", j->tenant);
        else
            snprintf(msg, sizeof msg, "tenant %.200s runs %u of its %u slots", j->tenant, w->active,
                     w->limit);
        break;
    case ENGINE_WAIT_TENANT_CAP:
        jb_kint(b, "active", w->active);
        jb_kint(b, "limit", w->limit);
        snprintf(msg, sizeof msg,
                 "tenant %.200s runs %u of the %u jobs queue %.200s allows one "
                 "tenant at once",
                 j->tenant, w->active, w->limit, j->queue);
        break;
    case ENGINE_WAIT_TENANT_RATE:
    case ENGINE_WAIT_QUEUE_RATE:
    case ENGINE_WAIT_PAIR_RATE:
        jb_kint(b, "until", w->until);
        if (w->kind == ENGINE_WAIT_TENANT_RATE)
            snprintf(msg, sizeof msg,
                     "tenant %.200s is at its rate limit: its next start may come at until",
                     j->tenant);
        else if (w->kind == ENGINE_WAIT_QUEUE_RATE)
            snprintf(msg, sizeof msg,
                     "queue %.200s is at its rate limit: its next start may come at until",
                     j->queue);
        else
            snprintf(msg, sizeof msg,
                     "tenant %.200s is at queue %.200s's per-tenant rate limit: its next start "
                     "there may come at until",
                     j->tenant, j->queue);
        break;
    case ENGINE_WAIT_QUEUE_PAUSED:
        snprintf(msg, sizeof msg, "queue %.200s is paused", j->queue);
        break;
    case ENGINE_WAIT_TENANT_PAUSED:
        snprintf(msg, sizeof msg, "queue %.200s is paused for tenant %.200s", j->queue, j->tenant);
        break;
    case ENGINE_WAIT_PARENTS: {
        json_ids(b, "parents", w->parents, w->n_parents);
        int at = snprintf(msg, sizeof msg, "waiting for %u parent%s to succeed:", w->n_parents,
                          w->n_parents == 1 ? "" : "s");
        for (uint32_t i = 0; i < w->n_parents && at > 0 && (size_t)at < sizeof msg - 32; i++)
            at += snprintf(msg + at, sizeof msg - (size_t)at, "%s %llu", i ? "," : "",
                           (unsigned long long)w->parents[i]);
        break;
    }
    case ENGINE_WAIT_SLEEP:
        jb_kint(b, "until", w->until);
        snprintf(msg, sizeof msg, "its handler sleeps: it goes on at until (its run_at)");
        break;
    case ENGINE_WAIT_EVENT:
        jb_kstr(b, "event", w->event);
        jb_key(b, "until");
        if (w->until)
            jb_int(b, w->until);
        else
            jb_null(b);
        snprintf(msg, sizeof msg, "its handler waits for event %.200s%s", w->event ? w->event : "",
                 w->until ? ", at most until until" : "");
        break;
    case ENGINE_WAIT_CHILD:
        jb_kint(b, "child", (long long)w->child);
        snprintf(msg, sizeof msg, "its handler waits for child job %llu to end",
                 (unsigned long long)w->child);
        break;
    default:
        if (w->asked_at) jb_kint(b, "asked_at", w->asked_at);
        if (!w->asked_at)
            snprintf(msg, sizeof msg,
                     "ready: no worker has asked for queue %.200s (type %.200s) since the server "
                     "started",
                     j->queue, j->type);
        else if (now - w->asked_at > WORKER_LATELY_MS)
            snprintf(msg, sizeof msg,
                     "ready: no worker has asked for queue %.200s (type %.200s) for %lld s",
                     j->queue, j->type, (long long)((now - w->asked_at) / 1000));
        else
            snprintf(msg, sizeof msg,
                     "ready: waiting for a worker to lease from queue %.200s (the last asked "
                     "%lld ms ago)",
                     j->queue, (long long)(now - w->asked_at));
        break;
    }
    jb_kstr(b, "message", msg);
    jb_obj_end(b);
}

unsigned api_job_view(const principal *who)
{
    return (auth_shows_token(who) ? JOB_VIEW_TOKEN : 0) | (who->hide_data ? JOB_VIEW_HIDE : 0);
}

void api_json_job(jbuf *b, const engine_job_info *j, unsigned view, const engine_wait *wait,
                  int64_t now)
{
    bool show_token = view & JOB_VIEW_TOKEN, hide = view & JOB_VIEW_HIDE;
    jb_obj(b);
    jb_kint(b, "id", (long long)j->id);
    jb_kstr(b, "tenant", j->tenant);
    jb_kstr(b, "queue", j->queue);
    jb_kstr(b, "type", j->type);
    jb_kstr(b, "key", j->key);
    if (hide) {
        jb_kbool(b, "data_hidden", true);
    } else if (j->payloads) {
        jb_key(b, "payloads");
        api_json_payloads(b, j);
    } else {
        jb_key(b, "args");
        jb_raw(b, j->args, j->args_len);
    }
    jb_kint(b, "priority", j->priority);
    if (j->traceparent) jb_kstr(b, "traceparent", j->traceparent);
    if (j->timeout_ms) jb_kint(b, "timeout_ms", j->timeout_ms);
    if (j->n_parents) json_ids(b, "parents", j->parents, j->n_parents);
    if (j->n_steps) jb_kint(b, "steps", j->n_steps);
    if (j->awaited_by) jb_kint(b, "awaited_by", (long long)j->awaited_by);
    if (j->batch) {
        jb_kint(b, "batch", (long long)j->batch);
        if (j->batch_role > 0)
            jb_kstr(b, "batch_callback", engine_callback_name(j->batch_role - 1));
    }
    jb_kstr(b, "state", engine_state_name(j->state));
    jb_kint(b, "attempts", j->attempts);
    jb_kint(b, "max_attempts", j->max_attempts);
    jb_kint(b, "run_at", j->run_at);
    time_field(b, "created_at", j->created_at);
    time_field(b, "ready_at", j->ready_at);
    time_field(b, "leased_at", j->leased_at);
    time_field(b, "started_at", j->started_at);
    time_field(b, "finished_at", j->finished_at);
    jb_kstr(b, "worker", j->worker);
    jb_kstr(b, "error", j->error);
    if (!hide) jb_kraw(b, "result", j->result);
    jb_kraw(b, "stats", j->stats);
    if (!hide) jb_kraw(b, "progress", j->progress);
    jb_kstr(b, "unique_key", j->unique_key);
    jb_kstr(b, "idempotency_key", j->idempotency_key);
    time_field(b, "lease_until", j->lease_until);
    jb_kbool(b, "cancel_requested", j->cancel_requested);
    if (j->merged_into) jb_kint(b, "merged_into", (long long)j->merged_into);
    if (j->n_parents)
        jb_kstr(b, "on_parent_failure", engine_deps_policy_name(j->on_parent_failure));
    if (j->n_children) {
        /* a fan-out's parent may have 100,000: the first ones, and how many */
        json_ids(b, "children", j->children,
                 j->n_children < API_CHILDREN_SHOWN ? j->n_children : API_CHILDREN_SHOWN);
        jb_kint(b, "children_count", j->n_children);
    }
    if (show_token) jb_kint(b, "token", (long long)j->token);
    if (wait) json_wait(b, j, wait, now);
    jb_obj_end(b);
}
