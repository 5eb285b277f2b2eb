// SPDX-License-Identifier: Apache-2.0
/* Reading a request's parts (request.h): its JSON body, members of an
 * object, query parameters, path ids; each refusal answered 400 (or 404)
 * naming the field. */
#include "request.h"

#include "reply.h"

#include "base/jscan.h"
#include "base/xalloc.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

bool req_query_bool(http_req *req, const char *name, bool *out)
{
    char buf[8];
    *out = false;
    if (!http_query_get(req, name, buf, sizeof buf)) return true;
    if (!strcmp(buf, "true") || !strcmp(buf, "1")) {
        *out = true;
        return true;
    }
    if (!strcmp(buf, "false") || !strcmp(buf, "0")) return true;
    reply_error(req, TENQ_EINVALID, name, "%s must be true or false", name);
    return false;
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
