// SPDX-License-Identifier: Apache-2.0
/* Batches in the store: their callbacks' specs as JSON text, and their
 * rows and job links loaded into the engine (store_load). */
#include "internal.h"

#include "base/xalloc.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

char *store_callbacks_json(const engine_submit_req *const cbs[ENGINE_NCALLBACKS])
{
    json_t *o = json_object();
    for (int k = 0; k < ENGINE_NCALLBACKS; k++) {
        const engine_submit_req *r = cbs[k];
        if (!r) continue;
        json_t *c = json_object();
        json_object_set_new(c, "queue", json_string(r->queue ? r->queue : ""));
        json_object_set_new(c, "type", json_string(r->type ? r->type : ""));
        json_t *args = r->args ? json_loadb(r->args, r->args_len, JSON_DECODE_ANY, NULL) : NULL;
        json_object_set_new(c, "args", args ? args : json_object());
        if (r->key) json_object_set_new(c, "key", json_string(r->key));
        if (r->has_priority) json_object_set_new(c, "priority", json_integer(r->priority));
        if (r->max_attempts) json_object_set_new(c, "max_attempts", json_integer(r->max_attempts));
        if (r->timeout_ms) json_object_set_new(c, "timeout_ms", json_integer(r->timeout_ms));
        if (r->traceparent) json_object_set_new(c, "traceparent", json_string(r->traceparent));
        json_object_set_new(o, engine_callback_name(k), c);
    }
    char *text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    if (!text) xalloc_die();
    return text;
}

static char *str_of(json_t *c, const char *key)
{
    const char *s = json_string_value(json_object_get(c, key));
    return s ? xstrdup(s) : NULL;
}

int store_callbacks_parse(const char *text, engine_submit_req *cbs[ENGINE_NCALLBACKS])
{
    memset(cbs, 0, sizeof(*cbs) * ENGINE_NCALLBACKS);
    json_t *o = text ? json_loads(text, 0, NULL) : NULL;
    if (!json_is_object(o)) {
        json_decref(o);
        return TENQ_ECORRUPT;
    }
    for (int k = 0; k < ENGINE_NCALLBACKS; k++) {
        json_t *c = json_object_get(o, engine_callback_name(k));
        if (!json_is_object(c)) continue;
        engine_submit_req *r = xcalloc(1, sizeof(*r));
        r->queue = str_of(c, "queue");
        r->type = str_of(c, "type");
        r->key = str_of(c, "key");
        r->traceparent = str_of(c, "traceparent");
        json_t *args = json_object_get(c, "args");
        char *a = args ? json_dumps(args, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY) : NULL;
        if (a) {
            r->args = a;
            r->args_len = (uint32_t)strlen(a);
        }
        json_t *p = json_object_get(c, "priority");
        if (json_is_integer(p)) {
            r->has_priority = true;
            r->priority = (int32_t)json_integer_value(p);
        }
        r->max_attempts = (uint32_t)json_integer_value(json_object_get(c, "max_attempts"));
        r->timeout_ms = json_integer_value(json_object_get(c, "timeout_ms"));
        cbs[k] = r;
    }
    json_decref(o);
    return 0;
}

void store_callbacks_free(engine_submit_req *cbs[ENGINE_NCALLBACKS])
{
    for (int k = 0; k < ENGINE_NCALLBACKS; k++) {
        engine_submit_req *r = cbs[k];
        if (!r) continue;
        free((char *)r->queue);
        free((char *)r->type);
        free((char *)r->key);
        free((char *)r->traceparent);
        free((char *)r->args);
        free(r);
        cbs[k] = NULL;
    }
}

/* ---- load ---------------------------------------------------------------------------- */

typedef struct batch_load {
    store_t *s;
    engine_t *e;
    int rc;
} batch_load;

static void batchrow_read(void *ctx, const store_rowacc *a, void *row)
{
    batch_load *l = ctx;
    if (l->rc) return;
    engine_batch_info x;
    memset(&x, 0, sizeof(x));
    x.id = (uint64_t)a->i64(row, 0);
    x.tenant = a->text(row, 1);
    x.created_at = a->i64(row, 2);
    x.closed_at = a->i64(row, 3);
    x.total = (uint64_t)a->i64(row, 4);
    x.n[ENGINE_SUCCEEDED] = (uint64_t)a->i64(row, 5);
    x.n[ENGINE_CANCELLED] = (uint64_t)a->i64(row, 6);
    x.n[ENGINE_MERGED] = (uint64_t)a->i64(row, 7);
    x.deleted = (uint64_t)a->i64(row, 8);
    engine_submit_req *cbs[ENGINE_NCALLBACKS];
    if (store_callbacks_parse(a->text(row, 9), cbs) != 0) {
        store_set_err(l->s, "batch %llu has callbacks that are not a JSON object",
                      (unsigned long long)x.id);
        l->rc = TENQ_ECORRUPT;
        return;
    }
    for (int k = 0; k < ENGINE_NCALLBACKS; k++) {
        x.callbacks[k] = cbs[k];
        x.callback_ids[k] = (uint64_t)a->i64(row, 10 + k);
    }
    x.deaths = (uint64_t)a->i64(row, 10 + ENGINE_NCALLBACKS);
    x.n[ENGINE_EXPIRED] = (uint64_t)a->i64(row, 11 + ENGINE_NCALLBACKS);
    engine_err err;
    if (engine_load_batch(l->e, &x, &err) != 0) {
        store_set_err(l->s, "%s", err.message);
        l->rc = TENQ_ECORRUPT;
    }
    store_callbacks_free(cbs);
}

static void batch_job_row(void *ctx, const store_rowacc *a, void *row)
{
    batch_load *l = ctx;
    engine_load_batch_job(l->e, (uint64_t)a->i64(row, 0), (uint64_t)a->i64(row, 1),
                          (int)a->i64(row, 2));
}

int store_load_batches(store_t *s, engine_t *e)
{
    batch_load l = {s, e, 0};
    int rc = s->be->select(s, false, STORE_SQL_LOAD_BATCHES, 0, NULL, batchrow_read, &l);
    if (!rc) rc = l.rc;
    if (!rc) rc = s->be->select(s, false, STORE_SQL_LOAD_BATCH_JOBS, 0, NULL, batch_job_row, &l);
    return rc;
}
