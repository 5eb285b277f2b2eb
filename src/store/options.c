// SPDX-License-Identifier: Apache-2.0
/* A job's keyed options as its row keeps them: the column `options`, a JSON
 * object of the fields a submit gave that name keys (docs/schema.md), NULL
 * when it gave none.  Written with the job's insert; read by every load and
 * every read of a row. */
#include "internal.h"

#include "base/xalloc.h"

#include <jansson.h>

static void put_int(json_t *x, const char *k, long long v)
{
    if (v) json_object_set_new(x, k, json_integer(v));
}

bool store_options_any(const engine_job_info *j)
{
    return j->n_concurrency_keys || j->n_rate_keys || j->expire_at || j->debounced;
}

char *store_options_text(const engine_job_info *j)
{
    if (!store_options_any(j)) return NULL;
    json_t *o = json_object();
    put_int(o, "expire_at", j->expire_at);
    if (j->debounced) json_object_set_new(o, "debounced", json_true());
    put_int(o, "debounce_until", j->debounce_until);
    if (j->n_concurrency_keys) {
        json_t *ck = json_array();
        for (uint32_t i = 0; i < j->n_concurrency_keys; i++) {
            json_t *x = json_object();
            json_object_set_new(x, "key", json_string(j->concurrency_keys[i].key));
            put_int(x, "limit", j->concurrency_keys[i].limit);
            json_array_append_new(ck, x);
        }
        json_object_set_new(o, "concurrency_keys", ck);
    }
    if (j->n_rate_keys) {
        json_t *rk = json_array();
        for (uint32_t i = 0; i < j->n_rate_keys; i++) {
            const engine_rate_key *r = &j->rate_keys[i];
            json_t *x = json_object();
            json_object_set_new(x, "key", json_string(r->key));
            put_int(x, "cost", r->cost);
            put_int(x, "rate", r->rate);
            put_int(x, "rate_period_ms", r->rate_period_ms);
            put_int(x, "rate_burst", r->rate_burst);
            json_array_append_new(rk, x);
        }
        json_object_set_new(o, "rate_keys", rk);
    }
    char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    if (!s) xalloc_die();
    return s;
}

/* A member of a stored key, or 0 (false when it is there and not an integer). */
static bool get_int(json_t *x, const char *k, long long *v)
{
    json_t *m = json_object_get(x, k);
    *v = m ? json_integer_value(m) : 0;
    return !m || json_is_integer(m);
}

/* A key's text into *text; NULL when it is not a string. */
static const char *take_key(json_t *x, char **text)
{
    json_t *k = json_object_get(x, "key");
    if (!json_is_string(k)) return NULL;
    size_t len = json_string_length(k);
    memcpy(*text, json_string_value(k), len + 1);
    const char *at = *text;
    *text += len + 1;
    return at;
}

/* The keys of a list into v (their texts copied into *text). */
static int read_keys(json_t *a, engine_limit_key *v, uint32_t *n, char **text)
{
    *n = 0;
    if (!json_is_array(a) || json_array_size(a) > ENGINE_JOB_KEYS_MAX) return TENQ_ECORRUPT;
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *x = json_array_get(a, i);
        long long l;
        if (!(v[i].key = take_key(x, text)) || !get_int(x, "limit", &l)) return TENQ_ECORRUPT;
        v[i].limit = (uint32_t)l;
        (*n)++;
    }
    return 0;
}

static int read_rate_keys(json_t *a, engine_rate_key *v, uint32_t *n, char **text)
{
    *n = 0;
    if (!json_is_array(a) || json_array_size(a) > ENGINE_JOB_KEYS_MAX) return TENQ_ECORRUPT;
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *x = json_array_get(a, i);
        long long c, r, p, b;
        if (!(v[i].key = take_key(x, text)) || !get_int(x, "cost", &c) || !get_int(x, "rate", &r) ||
            !get_int(x, "rate_period_ms", &p) || !get_int(x, "rate_burst", &b))
            return TENQ_ECORRUPT;
        v[i].cost = (uint32_t)c;
        v[i].rate = (uint32_t)r;
        v[i].rate_period_ms = p;
        v[i].rate_burst = (uint32_t)b;
        (*n)++;
    }
    return 0;
}

int store_options_parse(const char *text, engine_job_info *j, void **mem)
{
    *mem = NULL;
    json_error_t jerr;
    json_t *o = json_loads(text, 0, &jerr);
    if (!json_is_object(o)) {
        json_decref(o);
        return TENQ_ECORRUPT;
    }
    /* one block: the keys, then their texts (no longer than the row's) */
    size_t ckb = ENGINE_JOB_KEYS_MAX * sizeof(engine_limit_key);
    size_t rkb = ENGINE_JOB_KEYS_MAX * sizeof(engine_rate_key);
    char *block = xmalloc(ckb + rkb + strlen(text) + 1);
    engine_limit_key *ck = (engine_limit_key *)block;
    engine_rate_key *rk = (engine_rate_key *)(block + ckb);
    char *texts = block + ckb + rkb;
    int rc = 0;
    json_t *a = json_object_get(o, "concurrency_keys");
    if (a) rc = read_keys(a, ck, &j->n_concurrency_keys, &texts);
    if (!rc && j->n_concurrency_keys) j->concurrency_keys = ck;
    a = json_object_get(o, "rate_keys");
    if (!rc && a) rc = read_rate_keys(a, rk, &j->n_rate_keys, &texts);
    if (!rc && j->n_rate_keys) j->rate_keys = rk;
    long long v = 0;
    if (!rc && !get_int(o, "expire_at", &v)) rc = TENQ_ECORRUPT;
    j->expire_at = v;
    if (!rc && !get_int(o, "debounce_until", &v)) rc = TENQ_ECORRUPT;
    j->debounce_until = v;
    j->debounced = json_is_true(json_object_get(o, "debounced"));
    json_decref(o);
    if (rc) {
        free(block);
        j->concurrency_keys = NULL;
        j->n_concurrency_keys = 0;
        j->rate_keys = NULL;
        j->n_rate_keys = 0;
        return rc;
    }
    *mem = block;
    return 0;
}
