// SPDX-License-Identifier: Apache-2.0
/* A job's keyed options as its row keeps them: the column `options`, a JSON
 * object of the fields a submit gave that name keys (docs/schema.md), NULL
 * when it gave none.  Written with the job's insert; read by every load and
 * every read of a row. */
#include "internal.h"

#include "base/xalloc.h"

#include <jansson.h>

char *store_options_text(const engine_job_info *j)
{
    if (!j->n_concurrency_keys) return NULL;
    json_t *o = json_object();
    json_t *ck = json_array();
    for (uint32_t i = 0; i < j->n_concurrency_keys; i++) {
        json_t *x = json_object();
        json_object_set_new(x, "key", json_string(j->concurrency_keys[i].key));
        if (j->concurrency_keys[i].limit)
            json_object_set_new(x, "limit", json_integer(j->concurrency_keys[i].limit));
        json_array_append_new(ck, x);
    }
    json_object_set_new(o, "concurrency_keys", ck);
    char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    if (!s) xalloc_die();
    return s;
}

/* The keys of a list into v (their texts copied into *text). */
static int read_keys(json_t *a, engine_limit_key *v, uint32_t *n, char **text)
{
    *n = 0;
    if (!json_is_array(a) || json_array_size(a) > ENGINE_JOB_KEYS_MAX) return TENQ_ECORRUPT;
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *x = json_array_get(a, i), *k = json_object_get(x, "key");
        json_t *l = json_object_get(x, "limit");
        if (!json_is_string(k) || (l && !json_is_integer(l))) return TENQ_ECORRUPT;
        size_t len = json_string_length(k);
        memcpy(*text, json_string_value(k), len + 1);
        v[i].key = *text;
        *text += len + 1;
        v[i].limit = l ? (uint32_t)json_integer_value(l) : 0;
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
    char *block = xmalloc(ENGINE_JOB_KEYS_MAX * sizeof(engine_limit_key) + strlen(text) + 1);
    engine_limit_key *ck = (engine_limit_key *)block;
    char *texts = block + ENGINE_JOB_KEYS_MAX * sizeof(engine_limit_key);
    int rc = 0;
    json_t *a = json_object_get(o, "concurrency_keys");
    if (a) rc = read_keys(a, ck, &j->n_concurrency_keys, &texts);
    if (!rc && j->n_concurrency_keys) j->concurrency_keys = ck;
    json_decref(o);
    if (rc) {
        free(block);
        j->concurrency_keys = NULL;
        j->n_concurrency_keys = 0;
        return rc;
    }
    *mem = block;
    return 0;
}
