// SPDX-License-Identifier: Apache-2.0
/* What clients send, read: a submitted job's fields, a worker's lease
 * request and its outcomes, from a jansson tree (every case, and the words of every
 * refusal) or in place from the request's text (the usual case, without a
 * tree).  See jobread.h. */
#include "jobread.h"

#include "jbuf.h"
#include "request.h"

#include "base/jreal.h"
#include "base/jscan.h"
#include "base/xalloc.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const job_fields[] = {"tenant",
                                         "queue",
                                         "type",
                                         "args",
                                         "key",
                                         "priority",
                                         "run_at",
                                         "unique_key",
                                         "unique",
                                         "idempotency_key",
                                         "max_attempts",
                                         "score",
                                         "traceparent",
                                         "timeout_ms",
                                         "depends_on",
                                         "on_parent_failure",
                                         "concurrency_keys",
                                         "rate_keys",
                                         "expire_at",
                                         "start_within_ms",
                                         "debounce_ms",
                                         "debounce_max_ms",
                                         NULL};
enum {
    F_TENANT,
    F_QUEUE,
    F_TYPE,
    F_ARGS,
    F_KEY,
    F_PRIORITY,
    F_RUN_AT,
    F_UNIQUE_KEY,
    F_UNIQUE,
    F_IDEM,
    F_MAX_ATTEMPTS,
    F_SCORE,
    F_TRACE,
    F_TIMEOUT,
    F_DEPENDS_ON,
    F_ON_PARENT_FAILURE,
    F_CONCURRENCY_KEYS,
    F_RATE_KEYS,
    F_EXPIRE_AT,
    F_START_WITHIN,
    F_DEBOUNCE,
    F_DEBOUNCE_MAX,
    F_N
};

#define RUN_AT_MAX (1LL << 53)

/* What a token allows: the tenant comes from a tenant token, and a token
 * may be limited to some queues.  False with err filled when refused. */
static bool job_who(const principal *who, engine_submit_req *r, engine_err *err)
{
    if (who->role == ROLE_TENANT && who->tok) {
        if (r->tenant && strcmp(r->tenant, who->tok->tenant) != 0) {
            engine_errf(err, TENQ_EFORBIDDEN, "tenant", "this token submits for tenant %s only",
                        who->tok->tenant);
            return false;
        }
        r->tenant = who->tok->tenant;
    }
    if (r->queue && who->tok && !token_allows_queue(who->tok, r->queue)) {
        engine_errf(err, TENQ_EFORBIDDEN, "queue", "this token may not use queue %s", r->queue);
        return false;
    }
    return true;
}

/* depends_on: a list of job ids, or {"index": i} for the job of an
 * earlier index of the same request; into a block of refs at the front of
 * *mem (which then holds the args after them). */
static bool read_depends_on(json_t *d, engine_dep_ref **refs, size_t *n, engine_err *err)
{
    *refs = NULL;
    *n = 0;
    if (!json_is_array(d)) {
        engine_errf(err, TENQ_EINVALID, "depends_on",
                    "depends_on must be a list of job ids or {\"index\": i} objects");
        return false;
    }
    size_t len = json_array_size(d);
    if (len > ENGINE_PARENTS_MAX) {
        engine_errf(err, TENQ_EINVALID, "depends_on", "a job depends on at most %d jobs, not %zu",
                    ENGINE_PARENTS_MAX, len);
        return false;
    }
    engine_dep_ref *v = xcalloc(len ? len : 1, sizeof(*v));
    for (size_t i = 0; i < len; i++) {
        json_t *x = json_array_get(d, i);
        if (json_is_integer(x) && json_integer_value(x) >= 1) {
            v[i] = (engine_dep_ref){.id = (uint64_t)json_integer_value(x), .index = -1};
            continue;
        }
        json_t *ix = json_is_object(x) ? json_object_get(x, "index") : NULL;
        if (ix && json_object_size(x) == 1 && json_is_integer(ix) && json_integer_value(ix) >= 0 &&
            json_integer_value(ix) < 100000) {
            v[i] = (engine_dep_ref){.index = (int32_t)json_integer_value(ix)};
            continue;
        }
        engine_errf(err, TENQ_EINVALID, "depends_on",
                    "depends_on[%zu] must be a job id (a positive integer) or {\"index\": i}, "
                    "an earlier job of this request",
                    i);
        free(v);
        return false;
    }
    *refs = v;
    *n = len;
    return true;
}

/* concurrency_keys: a list of {"key": k, "limit": n} (limit optional) or of
 * keys alone, into v[] (the keys point into the tree). */
static bool read_ckeys(json_t *a, engine_limit_key *v, uint32_t *n, engine_err *err)
{
    *n = 0;
    if (!json_is_array(a)) {
        engine_errf(err, TENQ_EINVALID, "concurrency_keys",
                    "concurrency_keys must be a list of {\"key\": k, \"limit\": n} objects");
        return false;
    }
    if (json_array_size(a) > ENGINE_JOB_KEYS_MAX) {
        engine_errf(err, TENQ_EINVALID, "concurrency_keys",
                    "a job names at most %d concurrency keys, not %zu", ENGINE_JOB_KEYS_MAX,
                    json_array_size(a));
        return false;
    }
    for (uint32_t i = 0; i < json_array_size(a); i++) {
        json_t *x = json_array_get(a, i), *k = x, *l = NULL;
        if (json_is_object(x)) {
            const char *bad = obj_unknown_field(x, (const char *const[]){"key", "limit", NULL});
            if (bad) {
                engine_errf(err, TENQ_EINVALID, engine_ckey_field(i, 0), "%s: unknown field \"%s\"",
                            engine_ckey_field(i, 0), bad);
                return false;
            }
            k = json_object_get(x, "key");
            l = json_object_get(x, "limit");
        } else if (!json_is_string(x)) {
            engine_errf(err, TENQ_EINVALID, engine_ckey_field(i, 0),
                        "%s must be {\"key\": k, \"limit\": n} or a key", engine_ckey_field(i, 0));
            return false;
        }
        if (!json_is_string(k) || strlen(json_string_value(k)) != json_string_length(k)) {
            engine_errf(err, TENQ_EINVALID, engine_ckey_field(i, 1), "%s must be a string",
                        engine_ckey_field(i, 1));
            return false;
        }
        v[i].key = json_string_value(k);
        v[i].limit = 0;
        if (l && !json_is_null(l)) {
            if (!json_is_integer(l) || json_integer_value(l) < 1 ||
                json_integer_value(l) > TQ_KEY_LIMIT_MAX) {
                engine_errf(err, TENQ_EINVALID, engine_ckey_field(i, 2),
                            "%s must be an integer from 1 to %d", engine_ckey_field(i, 2),
                            TQ_KEY_LIMIT_MAX);
                return false;
            }
            v[i].limit = (uint32_t)json_integer_value(l);
        }
        (*n)++;
    }
    return true;
}

/* rate_keys: a list of {"key": k, "cost": c, "rate": r, "rate_period_ms":
 * p, "rate_burst": b} (all but the key optional) or of keys alone. */
static bool read_rkeys(json_t *a, engine_rate_key *v, uint32_t *n, engine_err *err)
{
    *n = 0;
    if (!json_is_array(a)) {
        engine_errf(err, TENQ_EINVALID, "rate_keys",
                    "rate_keys must be a list of {\"key\": k, \"cost\": n} objects");
        return false;
    }
    if (json_array_size(a) > ENGINE_JOB_KEYS_MAX) {
        engine_errf(err, TENQ_EINVALID, "rate_keys", "a job names at most %d rate keys, not %zu",
                    ENGINE_JOB_KEYS_MAX, json_array_size(a));
        return false;
    }
    static const char *const members[] = {"key",        "cost", "rate", "rate_period_ms",
                                          "rate_burst", NULL};
    static const long long lo[] = {0, 1, 1, 1, 1};
    static const long long hi[] = {0, TQ_KEY_LIMIT_MAX, TQ_UNLIMITED - 1, TQ_DAY_MS,
                                   TQ_RATE_BURST_MAX};
    for (uint32_t i = 0; i < json_array_size(a); i++) {
        json_t *x = json_array_get(a, i), *k = x;
        memset(&v[i], 0, sizeof v[i]);
        long long val[5] = {0};
        if (json_is_object(x)) {
            const char *bad = obj_unknown_field(x, members);
            if (bad) {
                engine_errf(err, TENQ_EINVALID, engine_rkey_field(i, 0), "%s: unknown field \"%s\"",
                            engine_rkey_field(i, 0), bad);
                return false;
            }
            k = json_object_get(x, "key");
            for (int m = 1; m < 5; m++) {
                json_t *y = json_object_get(x, members[m]);
                if (!y || json_is_null(y)) continue;
                if (!json_is_integer(y) || json_integer_value(y) < lo[m] ||
                    json_integer_value(y) > hi[m]) {
                    engine_errf(err, TENQ_EINVALID, engine_rkey_field(i, m + 1),
                                "%s must be an integer from %lld to %lld",
                                engine_rkey_field(i, m + 1), lo[m], hi[m]);
                    return false;
                }
                val[m] = json_integer_value(y);
            }
        } else if (!json_is_string(x)) {
            engine_errf(err, TENQ_EINVALID, engine_rkey_field(i, 0),
                        "%s must be {\"key\": k, \"cost\": n, ...} or a key",
                        engine_rkey_field(i, 0));
            return false;
        }
        if (!json_is_string(k) || strlen(json_string_value(k)) != json_string_length(k)) {
            engine_errf(err, TENQ_EINVALID, engine_rkey_field(i, 1), "%s must be a string",
                        engine_rkey_field(i, 1));
            return false;
        }
        v[i].key = json_string_value(k);
        v[i].cost = (uint32_t)val[1];
        v[i].rate = (uint32_t)val[2];
        v[i].rate_period_ms = val[3];
        v[i].rate_burst = (uint32_t)val[4];
        (*n)++;
    }
    return true;
}

bool read_job(json_t *o, const principal *who, engine_submit_req *r, char **args_out,
              engine_err *err)
{
    memset(r, 0, sizeof(*r));
    *args_out = NULL;
    const char *k = obj_unknown_field(o, job_fields);
    if (k) {
        engine_errf(err, TENQ_EINVALID, k, "unknown field \"%s\"", k);
        return false;
    }
#define STR(name, dst)                                                                             \
    do {                                                                                           \
        json_t *x = json_object_get(o, name);                                                      \
        if (x && !json_is_null(x)) {                                                               \
            if (!json_is_string(x) || strlen(json_string_value(x)) != json_string_length(x)) {     \
                engine_errf(err, TENQ_EINVALID, name, name " must be a string");                   \
                return false;                                                                      \
            }                                                                                      \
            dst = json_string_value(x);                                                            \
        }                                                                                          \
    } while (0)
#define INT(name, dst, lo, hi, has)                                                                \
    do {                                                                                           \
        json_t *x = json_object_get(o, name);                                                      \
        if (x && !json_is_null(x)) {                                                               \
            if (!json_is_integer(x) || json_integer_value(x) < (lo) ||                             \
                json_integer_value(x) > (hi)) {                                                    \
                engine_errf(err, TENQ_EINVALID, name,                                              \
                            name " must be an integer from %lld to %lld", (long long)(lo),         \
                            (long long)(hi));                                                      \
                return false;                                                                      \
            }                                                                                      \
            dst = json_integer_value(x);                                                           \
            has;                                                                                   \
        }                                                                                          \
    } while (0)
    STR("tenant", r->tenant);
    STR("queue", r->queue);
    STR("type", r->type);
    STR("key", r->key);
    STR("unique_key", r->unique_key);
    STR("idempotency_key", r->idempotency_key);
    STR("traceparent", r->traceparent);
    INT("priority", r->priority, ENGINE_PRIORITY_MIN, ENGINE_PRIORITY_MAX, r->has_priority = true);
    INT("run_at", r->run_at, 0, RUN_AT_MAX, (void)0);
    INT("max_attempts", r->max_attempts, 1, ENGINE_ATTEMPTS_MAX, (void)0);
    INT("timeout_ms", r->timeout_ms, 0, ENGINE_TIMEOUT_MAX_MS, (void)0);
    INT("expire_at", r->expire_at, 1, RUN_AT_MAX, (void)0);
    INT("start_within_ms", r->start_within_ms, 1, 3660LL * TQ_DAY_MS, (void)0);
    INT("debounce_ms", r->debounce_ms, 1, TQ_DAY_MS, (void)0);
    INT("debounce_max_ms", r->debounce_max_ms, 1, 7 * TQ_DAY_MS, (void)0);
    json_t *u = json_object_get(o, "unique");
    if (u && !json_is_null(u)) {
        if (!json_is_boolean(u)) {
            engine_errf(err, TENQ_EINVALID, "unique", "unique must be true or false");
            return false;
        }
        r->unique = json_is_true(u);
    }
    json_t *sc = json_object_get(o, "score");
    if (sc && !json_is_null(sc)) {
        if (!json_is_number(sc)) {
            engine_errf(err, TENQ_EINVALID, "score", "score must be a number");
            return false;
        }
        r->has_score = true;
        r->score = json_number_value(sc);
    }
    json_t *pf = json_object_get(o, "on_parent_failure");
    if (pf && !json_is_null(pf)) {
        int pol = json_is_string(pf) ? engine_deps_policy_parse(json_string_value(pf)) : -1;
        if (pol < 0) {
            engine_errf(err, TENQ_EINVALID, "on_parent_failure",
                        "on_parent_failure must be \"cancel\" or \"run\"");
            return false;
        }
        r->on_parent_failure = (engine_deps_policy)pol;
    }
#undef STR
#undef INT
    engine_limit_key ck[ENGINE_JOB_KEYS_MAX];
    uint32_t nck = 0;
    json_t *ckj = json_object_get(o, "concurrency_keys");
    if (ckj && !json_is_null(ckj) && !read_ckeys(ckj, ck, &nck, err)) return false;
    engine_rate_key rk[ENGINE_JOB_KEYS_MAX];
    uint32_t nrk = 0;
    json_t *rkj = json_object_get(o, "rate_keys");
    if (rkj && !json_is_null(rkj) && !read_rkeys(rkj, rk, &nrk, err)) return false;
    engine_dep_ref *refs = NULL;
    size_t nrefs = 0;
    json_t *d = json_object_get(o, "depends_on");
    if (d && !json_is_null(d) && !read_depends_on(d, &refs, &nrefs, err)) return false;
    if (!job_who(who, r, err)) {
        free(refs);
        return false;
    }
    json_t *a = json_object_get(o, "args");
    char *args = a ? canonical_json(a) : NULL;
    uint32_t args_len = args ? (uint32_t)strlen(args) : 0;
    if (!nrefs && !nck && !nrk) { /* the args alone (what a schedule keeps) */
        free(refs);
        *args_out = args;
        r->args = args;
        r->args_len = args_len;
        return true;
    }
    /* one block for the caller to free: the refs, the keys and their
     * texts, then the args (what the request's tree held is copied: the
     * job outlives it in a schedule's spec) */
    size_t rb = nrefs * sizeof(*refs), kb = nck * sizeof(*ck), rkb = nrk * sizeof(*rk), tb = 0;
    for (uint32_t i = 0; i < nck; i++) tb += strlen(ck[i].key) + 1;
    for (uint32_t i = 0; i < nrk; i++) tb += strlen(rk[i].key) + 1;
    char *block = xmalloc(rb + kb + rkb + tb + args_len + 1);
    if (rb) memcpy(block, refs, rb); /* (refs is NULL when there are none) */
    free(refs);
    char *at = block + rb + kb + rkb;
    for (uint32_t i = 0; i < nck; i++) {
        size_t n = strlen(ck[i].key) + 1;
        memcpy(at, ck[i].key, n);
        ck[i].key = at;
        at += n;
    }
    for (uint32_t i = 0; i < nrk; i++) {
        size_t n = strlen(rk[i].key) + 1;
        memcpy(at, rk[i].key, n);
        rk[i].key = at;
        at += n;
    }
    memcpy(block + rb, ck, kb);
    memcpy(block + rb + kb, rk, rkb);
    if (args) memcpy(at, args, args_len + 1);
    free(args);
    *args_out = block;
    if (a) {
        r->args = at;
        r->args_len = args_len;
    }
    if (nrefs) {
        r->depends_on = (const engine_dep_ref *)block;
        r->n_depends_on = (uint32_t)nrefs;
    }
    if (nck) {
        r->concurrency_keys = (const engine_limit_key *)(block + rb);
        r->n_concurrency_keys = nck;
    }
    if (nrk) {
        r->rate_keys = (const engine_rate_key *)(block + rb + kb);
        r->n_rate_keys = nrk;
    }
    return true;
}

/* ---- in place ------------------------------------------------------------------------------
 *
 * The reader below gives what read_job gives, or declines: it takes the
 * shapes clients send (plain strings, integers that fit, args in any shape
 * whose strings and keys hold no escapes) and leaves everything else to
 * read_job, every refusal included, so both paths answer alike.  A test
 * holds it to read_job on generated and mutated bodies (tests/unit/
 * test_api_text.c).  Args come out in canonical_json's form: keys sorted,
 * no spaces, "-0" as 0, reals as jansson writes them. */

#define CANON_DEPTH 32 /* deeper args go to jansson (which takes 2048) */

/* A string token without escapes (its text is then what it stands for). */
static bool plain_string(tq_span v)
{
    return v.n >= 2 && v.p[0] == '"' && !memchr(v.p + 1, '\\', v.n - 2);
}

static bool is_real(tq_span v)
{
    for (size_t i = 0; i < v.n; i++)
        if (v.p[i] == '.' || v.p[i] == 'e' || v.p[i] == 'E') return true;
    return false;
}

/* An integer token (no fraction, no exponent) of at most 18 digits into
 * *out: it fits a long long whatever its digits. */
bool text_int(tq_span v, long long *out)
{
    size_t digits = v.n - (v.n && v.p[0] == '-');
    if (!v.n || digits == 0 || digits > 18 || is_real(v)) return false;
    if (!(v.p[0] == '-' || (v.p[0] >= '0' && v.p[0] <= '9'))) return false;
    long long x = 0;
    for (size_t i = v.p[0] == '-'; i < v.n; i++) x = x * 10 + (v.p[i] - '0');
    *out = v.p[0] == '-' ? -x : x;
    return true;
}

/* A real token as jansson reads it; false when it overflows (jansson
 * refuses those). */
static bool real_value(tq_span v, double *out)
{
    char buf[64];
    char *heap = NULL, *s = buf;
    if (v.n >= sizeof buf) s = heap = xmalloc(v.n + 1);
    memcpy(s, v.p, v.n);
    s[v.n] = 0;
    errno = 0;
    double d = strtod(s, NULL);
    bool ok = !(errno == ERANGE && isinf(d));
    free(heap);
    *out = d;
    return ok;
}

static int key_cmp(tq_span a, tq_span b)
{
    int c = memcmp(a.p, b.p, a.n < b.n ? a.n : b.n);
    return c ? c : (a.n > b.n) - (a.n < b.n);
}

typedef struct member {
    tq_span k, v;
} member;

static bool canon(jbuf *b, tq_span v, int depth);

static bool canon_object(jbuf *b, tq_span v, int depth)
{
    member stack[16], *m = stack;
    size_t n = 0, cap = 16;
    tq_iter it;
    tq_span k, x;
    bool ok = tq_obj_begin(&it, v);
    int rc;
    while (ok && (rc = tq_obj_next(&it, &k, &x)) > 0) {
        if (memchr(k.p, '\\', k.n)) {
            ok = false;
            break;
        }
        if (n == cap) {
            cap *= 2;
            if (m == stack) {
                m = xmalloc(cap * sizeof(*m));
                memcpy(m, stack, sizeof stack);
            } else {
                m = xrealloc(m, cap * sizeof(*m));
            }
        }
        /* insertion in key order: args objects are small, and mostly sorted */
        size_t at = n;
        while (at > 0 && key_cmp(m[at - 1].k, k) > 0) at--;
        if (at > 0 && key_cmp(m[at - 1].k, k) == 0) {
            ok = false; /* a duplicate key: jansson refuses it */
            break;
        }
        memmove(m + at + 1, m + at, (n - at) * sizeof(*m));
        m[at] = (member){k, x};
        n++;
    }
    if (ok && rc < 0) ok = false;
    if (ok) {
        jb_put(b, "{", 1);
        for (size_t i = 0; i < n && ok; i++) {
            if (i) jb_put(b, ",", 1);
            jb_put(b, m[i].k.p - 1, m[i].k.n + 2); /* with its quotes */
            jb_put(b, ":", 1);
            ok = canon(b, m[i].v, depth + 1);
        }
        jb_put(b, "}", 1);
    }
    if (m != stack) free(m);
    return ok;
}

static bool canon(jbuf *b, tq_span v, int depth)
{
    if (depth > CANON_DEPTH || !v.n) return false;
    switch (v.p[0]) {
    case '{': return canon_object(b, v, depth);
    case '[': {
        tq_iter it;
        tq_span x;
        int rc;
        bool first = true;
        if (!tq_arr_begin(&it, v)) return false;
        jb_put(b, "[", 1);
        while ((rc = tq_arr_next(&it, &x)) > 0) {
            if (!first) jb_put(b, ",", 1);
            first = false;
            if (!canon(b, x, depth + 1)) return false;
        }
        jb_put(b, "]", 1);
        return rc == 0;
    }
    case '"':
        if (!plain_string(v)) return false;
        jb_put(b, v.p, v.n);
        return true;
    case 't':
    case 'f':
    case 'n': jb_put(b, v.p, v.n); return true;
    default:
        if (is_real(v)) {
            double d;
            char tmp[64];
            size_t n;
            /* the usual reals read and written exactly without jansson */
            if (tq_real_read(v.p, v.n, &d) && (n = tq_real_write(d, tmp)) > 0) {
                jb_put(b, tmp, n);
                return true;
            }
            if (!real_value(v, &d)) return false;
            /* jansson writes reals its own way (at 17 digits, a ".0" or an
             * exponent always there): ask it, for this one number */
            json_t *r = json_real(d);
            n = r ? json_dumpb(r, tmp, sizeof tmp,
                               JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(17))
                  : 0;
            json_decref(r);
            if (n == 0 || n > sizeof tmp) return false;
            jb_put(b, tmp, n);
            return true;
        }
        long long x;
        if (!text_int(v, &x)) return false; /* jansson decides what is too big */
        if (x == 0)
            jb_put(b, "0", 1); /* "-0" */
        else
            jb_put(b, v.p, v.n);
        return true;
    }
}

char *canonical_text(tq_span v)
{
    jbuf b = {0};
    if (!canon(&b, v, 0)) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

/* The index of key k in names[0..n), or -1 (an escaped key is never one). */
static int name_at(const char *const *names, int n, tq_span k)
{
    for (int i = 0; i < n; i++)
        if (!strncmp(names[i], k.p, k.n) && names[i][k.n] == 0) return i;
    return -1;
}

bool read_job_text(tq_iter *obj, const principal *who, engine_submit_req *r, char **mem)
{
    memset(r, 0, sizeof(*r));
    *mem = NULL;
    tq_iter it;
    tq_span k, v, fv[F_N];
    unsigned seen = 0;
    int rc;
    if (!tq_iter_enter(obj, &it, '{')) return false;
    while ((rc = tq_obj_next(&it, &k, &v)) > 0) {
        int f = name_at(job_fields, F_N, k);
        if (f < 0 || (seen & (1u << f))) return false; /* unknown, escaped or twice */
        seen |= 1u << f;
        fv[f] = v;
    }
    if (rc < 0) return false;
    /* dependencies and keys: read_job's (rare, and lists to keep) */
    if (seen & ((1u << F_DEPENDS_ON) | (1u << F_ON_PARENT_FAILURE) | (1u << F_CONCURRENCY_KEYS) |
                (1u << F_RATE_KEYS) | (1u << F_EXPIRE_AT) | (1u << F_START_WITHIN) |
                (1u << F_DEBOUNCE) | (1u << F_DEBOUNCE_MAX)))
        return false;
    tq_iter_leave(obj, &it);
    /* one block: the canonical args, then each string with its NUL */
    jbuf b = {0};
    size_t at[F_N];
    long long x;
    if ((seen & (1u << F_ARGS)) && !canon(&b, fv[F_ARGS], 0)) goto decline;
    size_t args_len = b.n;
    if (b.p) jb_put(&b, "", 1); /* keep the args' NUL */
    for (int f = 0; f < F_N; f++) {
        if (!(seen & (1u << f)) || f == F_ARGS || tq_span_null(fv[f])) continue;
        v = fv[f];
        switch (f) {
        case F_PRIORITY:
            if (!text_int(v, &x) || x < ENGINE_PRIORITY_MIN || x > ENGINE_PRIORITY_MAX)
                goto decline;
            r->priority = (int32_t)x;
            r->has_priority = true;
            break;
        case F_RUN_AT:
            if (!text_int(v, &x) || x < 0 || x > RUN_AT_MAX) goto decline;
            r->run_at = x;
            break;
        case F_MAX_ATTEMPTS:
            if (!text_int(v, &x) || x < 1 || x > ENGINE_ATTEMPTS_MAX) goto decline;
            r->max_attempts = (uint32_t)x;
            break;
        case F_TIMEOUT:
            if (!text_int(v, &x) || x < 0 || x > ENGINE_TIMEOUT_MAX_MS) goto decline;
            r->timeout_ms = x;
            break;
        case F_UNIQUE:
            if (v.p[0] != 't' && v.p[0] != 'f') goto decline;
            r->unique = tq_span_true(v);
            break;
        case F_SCORE:
            if (v.p[0] != '-' && (v.p[0] < '0' || v.p[0] > '9')) goto decline;
            if (is_real(v)) {
                if (!real_value(v, &r->score)) goto decline;
            } else {
                if (!text_int(v, &x)) goto decline;
                r->score = (double)x;
            }
            r->has_score = true;
            break;
        default: /* the strings */
            if (!plain_string(v)) goto decline;
            at[f] = b.n;
            jb_put(&b, v.p + 1, v.n - 2);
            jb_put(&b, "", 1);
        }
    }
    /* b no longer moves: point into it */
    const char **strs[F_N] = {
        [F_TENANT] = &r->tenant,    [F_QUEUE] = &r->queue,           [F_TYPE] = &r->type,
        [F_KEY] = &r->key,          [F_UNIQUE_KEY] = &r->unique_key, [F_IDEM] = &r->idempotency_key,
        [F_TRACE] = &r->traceparent};
    for (int f = 0; f < F_N; f++)
        if (strs[f] && (seen & (1u << f)) && !tq_span_null(fv[f])) *strs[f] = b.p + at[f];
    if (seen & (1u << F_ARGS)) {
        r->args = b.p;
        r->args_len = (uint32_t)args_len;
    }
    engine_err err;
    if (!job_who(who, r, &err)) goto decline; /* read_job words the refusal */
    *mem = b.p;
    return true;
decline:
    free(b.p);
    memset(r, 0, sizeof(*r));
    return false;
}

/* ---- outcomes ------------------------------------------------------------------------------ */

void outcome_in_free(outcome_in *in)
{
    free(in->result);
    free(in->stats);
    free(in->error);
}

/* An outcome's fields from a JSON object, checked in the order that picks
 * which refusal a bad outcome gets; 0 or an error in err. */
static int outcome_fields(json_t *o, bool ok, outcome_in *in, engine_err *err)
{
    in->ok = ok;
    json_t *t = json_object_get(o, "token");
    if (!json_is_integer(t) || json_integer_value(t) < 1) {
        engine_errf(err, TENQ_EINVALID, "token", "token must be a positive integer");
        return TENQ_EINVALID;
    }
    in->token = (uint64_t)json_integer_value(t);
    if (ok) {
        json_t *r = json_object_get(o, "result");
        if (r && !json_is_null(r)) in->result = canonical_json(r);
    } else {
        json_t *e = json_object_get(o, "error");
        if (e && !json_is_null(e) && !json_is_string(e)) {
            engine_errf(err, TENQ_EINVALID, "error", "error must be a string");
            return TENQ_EINVALID;
        }
        if (e && json_is_string(e)) in->error = xstrdup(json_string_value(e));
        json_t *ri = json_object_get(o, "retry_in_ms");
        if (ri && !json_is_null(ri)) {
            if (!json_is_integer(ri) || json_integer_value(ri) < 0) {
                engine_errf(err, TENQ_EINVALID, "retry_in_ms",
                            "retry_in_ms must be an integer >= 0");
                return TENQ_EINVALID;
            }
            in->f.has_retry_in = true;
            in->f.retry_in_ms = json_integer_value(ri);
        }
        json_t *rt = json_object_get(o, "retry");
        if (rt && !json_is_null(rt)) {
            if (!json_is_boolean(rt)) {
                engine_errf(err, TENQ_EINVALID, "retry", "retry must be true or false");
                return TENQ_EINVALID;
            }
            in->f.no_retry = !json_is_true(rt);
        }
        json_t *c = json_object_get(o, "cancelled");
        if (c && !json_is_null(c)) {
            if (!json_is_boolean(c)) {
                engine_errf(err, TENQ_EINVALID, "cancelled", "cancelled must be true or false");
                return TENQ_EINVALID;
            }
            in->f.cancelled = json_is_true(c);
        }
    }
    json_t *sj = json_object_get(o, "stats");
    if (sj && !json_is_null(sj)) in->stats = canonical_json(sj);
    return 0;
}

int outcome_read(json_t *o, bool ok, outcome_in *in, engine_err *err)
{
    memset(in, 0, sizeof(*in));
    int rc = outcome_fields(o, ok, in, err);
    if (rc != 0) { /* a refusal keeps nothing (the error read before a bad retry_in_ms) */
        outcome_in_free(in);
        memset(in, 0, sizeof(*in));
    }
    return rc;
}

/* The same from an outcome's text in place, or false: then outcome_read
 * reads it (anything unusual, and every refusal). */
bool outcome_read_text(tq_iter *o, outcome_in *in, uint64_t *id)
{
    static const char *const names[] = {"id",    "token",       "ok",    "result",   "stats",
                                        "error", "retry_in_ms", "retry", "cancelled"};
    enum { O_ID, O_TOKEN, O_OK, O_RESULT, O_STATS, O_ERROR, O_RETRY_IN, O_RETRY, O_CANCELLED, O_N };
    tq_span fv[O_N], k, v;
    unsigned seen = 0;
    tq_iter it;
    int rc;
    memset(in, 0, sizeof(*in));
    if (!tq_iter_enter(o, &it, '{')) return false;
    while ((rc = tq_obj_next(&it, &k, &v)) > 0) {
        int f = name_at(names, O_N, k);
        if (f < 0 || (seen & (1u << f))) return false;
        seen |= 1u << f;
        fv[f] = v;
    }
    if (rc == 0) tq_iter_leave(o, &it);
    long long x;
#define HAS(f) ((seen & (1u << (f))) && !tq_span_null(fv[f]))
    if (rc < 0 || !HAS(O_ID) || !HAS(O_TOKEN) || !HAS(O_OK)) return false;
    if (!text_int(fv[O_ID], &x) || x < 1) return false;
    *id = (uint64_t)x;
    if (!text_int(fv[O_TOKEN], &x) || x < 1) return false;
    in->token = (uint64_t)x;
    if (fv[O_OK].p[0] != 't' && fv[O_OK].p[0] != 'f') return false;
    in->ok = tq_span_true(fv[O_OK]);
    /* every field is checked, used or not: what declines here, jansson reads */
    bool bad = false;
    if (HAS(O_RETRY_IN)) {
        if (!text_int(fv[O_RETRY_IN], &x) || x < 0) return false;
        in->f.has_retry_in = true;
        in->f.retry_in_ms = x;
    }
    if (HAS(O_RETRY)) {
        if (fv[O_RETRY].p[0] != 't' && fv[O_RETRY].p[0] != 'f') return false;
        in->f.no_retry = !tq_span_true(fv[O_RETRY]);
    }
    if (HAS(O_CANCELLED)) {
        if (fv[O_CANCELLED].p[0] != 't' && fv[O_CANCELLED].p[0] != 'f') return false;
        in->f.cancelled = tq_span_true(fv[O_CANCELLED]);
    }
    if (HAS(O_ERROR) && (fv[O_ERROR].p[0] != '"' || !(in->error = tq_span_str(fv[O_ERROR], &bad))))
        goto decline;
    if (HAS(O_RESULT) && !(in->result = canonical_text(fv[O_RESULT]))) goto decline;
    if (HAS(O_STATS) && !(in->stats = canonical_text(fv[O_STATS]))) goto decline;
#undef HAS
    if (in->ok) { /* an ack keeps none of a failure's fields */
        free(in->error);
        in->error = NULL;
        in->f = (engine_fail_req){0};
    } else {
        free(in->result);
        in->result = NULL;
    }
    return true;
decline:
    outcome_in_free(in);
    memset(in, 0, sizeof(*in));
    return false;
}

/* ---- lease requests --------------------------------------------------------------------- */

static const char *const lease_fields[] = {"worker",  "queues",   "types",   "max",
                                           "wait_ms", "outcomes", "columns", NULL};
enum { L_WORKER, L_QUEUES, L_TYPES, L_MAX, L_WAIT, L_OUTCOMES, L_COLUMNS, L_N };

void lease_in_free(lease_in *in)
{
    free(in->worker);
    for (size_t i = 0; i < in->nq; i++) free(in->queues[i]);
    for (size_t i = 0; i < in->nt; i++) free(in->types[i]);
    free(in->queues);
    free(in->types);
    memset(in, 0, sizeof(*in));
}

static void lease_defaults(lease_in *in)
{
    memset(in, 0, sizeof(*in));
    in->max = 1;
}

/* A list of names (queues, types) from the tree; 0 or the refusal. */
static int tree_names(json_t *body, const char *key, bool required, char ***out, size_t *n,
                      engine_err *err)
{
    json_t *a = json_object_get(body, key);
    if (!a && !required) return 0;
    if (!a || json_is_null(a)) {
        /* left out, types means every type: a null (an unset variable) is
         * not read so */
        engine_errf(err, TENQ_EINVALID, key,
                    required ? "%s is required" : "%s is null: leave it out (for every one)", key);
        return TENQ_EINVALID;
    }
    if (!json_is_array(a) || json_array_size(a) == 0 || json_array_size(a) > MAX_QUEUES) {
        engine_errf(err, TENQ_EINVALID, key, "%s must be a list of 1 to %d names", key, MAX_QUEUES);
        return TENQ_EINVALID;
    }
    size_t cnt = json_array_size(a);
    *out = xcalloc(cnt, sizeof(char *));
    for (size_t i = 0; i < cnt; i++) {
        const char *s = json_string_value(json_array_get(a, i));
        if (!s || !*s || strlen(s) > ENGINE_TYPE_MAX) {
            engine_errf(err, TENQ_EINVALID, key, "%s must hold names", key);
            return TENQ_EINVALID;
        }
        (*out)[(*n)++] = xstrdup(s);
    }
    return 0;
}

int lease_read(json_t *body, lease_in *in, engine_err *err)
{
    lease_defaults(in);
    const char *k = obj_unknown_field(body, lease_fields);
    if (k) {
        engine_errf(err, TENQ_EINVALID, k, "unknown field \"%s\"", k);
        return TENQ_EINVALID;
    }
    const char *worker;
    int rc = obj_str(body, "worker", false, &worker, err);
    if (!rc) rc = obj_int(body, "max", 1, LEASE_MAX, &in->max, NULL, err);
    if (!rc) rc = obj_int(body, "wait_ms", 0, 3600000, &in->wait_ms, NULL, err);
    if (!rc) rc = tree_names(body, "queues", true, &in->queues, &in->nq, err);
    if (!rc) rc = tree_names(body, "types", false, &in->types, &in->nt, err);
    json_t *c = json_object_get(body, "columns");
    if (!rc && c && !json_is_null(c) && !json_is_boolean(c)) {
        engine_errf(err, TENQ_EINVALID, "columns", "columns must be true or false");
        rc = TENQ_EINVALID;
    }
    in->columns = json_is_true(c);
    if (rc) {
        lease_in_free(in);
        return rc;
    }
    if (worker) in->worker = xstrdup(worker);
    json_t *o = json_object_get(body, "outcomes");
    in->has_outcomes = o && !json_is_null(o); /* checked where they are applied */
    return 0;
}

/* A list of plain names in place; false declines. */
static bool text_names(tq_span v, char ***out, size_t *n)
{
    tq_iter it;
    tq_span x;
    int rc;
    if (!tq_arr_begin(&it, v)) return false;
    char *names[MAX_QUEUES];
    size_t cnt = 0;
    bool ok = true;
    while (ok && (rc = tq_arr_next(&it, &x)) > 0) {
        ok = cnt < MAX_QUEUES && plain_string(x) && x.n > 2 && x.n - 2 <= ENGINE_TYPE_MAX;
        if (ok) names[cnt++] = xstrndup(x.p + 1, x.n - 2);
    }
    if (!ok || rc < 0 || cnt == 0) {
        for (size_t i = 0; i < cnt; i++) free(names[i]);
        return false;
    }
    *out = xmalloc(cnt * sizeof(char *));
    memcpy(*out, names, cnt * sizeof(char *));
    *n = cnt;
    return true;
}

bool lease_read_text(const char *text, size_t len, lease_in *in)
{
    tq_span body, k, v, fv[L_N];
    tq_iter it;
    unsigned seen = 0;
    int rc;
    lease_defaults(in);
    if (!tq_obj_outline(text, len, &body) || !tq_obj_begin(&it, body)) return false;
    while ((rc = tq_obj_next(&it, &k, &v)) > 0) {
        int f = name_at(lease_fields, L_N, k);
        if (f < 0 || (seen & (1u << f))) return false; /* unknown, escaped or twice */
        seen |= 1u << f;
        fv[f] = v;
    }
#define HAS(f) ((seen & (1u << (f))) && !tq_span_null(fv[f]))
    if (rc < 0 || !HAS(L_QUEUES)) return false;
    if ((seen & (1u << L_TYPES)) && !HAS(L_TYPES)) return false; /* null: lease_read refuses */
    if (HAS(L_MAX) && (!text_int(fv[L_MAX], &in->max) || in->max < 1 || in->max > LEASE_MAX))
        return false;
    if (HAS(L_WAIT) &&
        (!text_int(fv[L_WAIT], &in->wait_ms) || in->wait_ms < 0 || in->wait_ms > 3600000))
        return false;
    if (HAS(L_WORKER) && !plain_string(fv[L_WORKER])) return false;
    if (HAS(L_COLUMNS)) {
        in->columns = tq_span_true(fv[L_COLUMNS]);
        if (!in->columns && !(fv[L_COLUMNS].n == 5 && !memcmp(fv[L_COLUMNS].p, "false", 5)))
            return false;
    }
    if (!text_names(fv[L_QUEUES], &in->queues, &in->nq)) return false;
    if (HAS(L_TYPES) && !text_names(fv[L_TYPES], &in->types, &in->nt)) {
        lease_in_free(in);
        return false;
    }
    if (HAS(L_WORKER)) in->worker = xstrndup(fv[L_WORKER].p + 1, fv[L_WORKER].n - 2);
    if (HAS(L_OUTCOMES)) {
        in->has_outcomes = true;
        in->outcomes = fv[L_OUTCOMES];
    }
#undef HAS
    return true;
}
