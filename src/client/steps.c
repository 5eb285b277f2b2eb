// SPDX-License-Identifier: Apache-2.0
/* Durable steps (docs/SEMANTICS.md, "Durable steps"): a job's steps read,
 * a step stored or the job parked, an event sent. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_words[] = {"step", "sleep", "event", "child"};

static tenq_step_kind kind_of(tq_span v)
{
    char w[16];
    tq_span_str_to(v, w, sizeof w);
    for (int k = 0; k < 4; k++)
        if (!strcmp(w, kind_words[k])) return (tenq_step_kind)k;
    return TENQ_STEP_RUN;
}

void tenq_steps_free(tenq_step *steps, size_t n)
{
    for (size_t i = 0; steps && i < n; i++) {
        free(steps[i].name);
        free(steps[i].result_json);
        free(steps[i].error);
        free(steps[i].event);
    }
    free(steps);
}

/* One step object into *x; false when out of memory or malformed. */
static bool step_from(tq_span o, tenq_step *x)
{
    memset(x, 0, sizeof(*x));
    tq_span v;
    bool bad = false;
#define GET(name) (tq_obj_get(o, name, &v))
    x->pos = GET("pos") ? (uint32_t)tq_span_int(v) : 0;
    x->name = GET("name") ? tq_span_str(v, &bad) : NULL;
    x->kind = GET("kind") ? kind_of(v) : TENQ_STEP_RUN;
    x->done = GET("done") && tq_span_true(v);
    if (GET("result") && !tq_span_null(v)) x->result_json = tq_span_text(v, &bad);
    if (GET("error") && !tq_span_null(v)) x->error = tq_span_str(v, &bad);
    x->attempt = GET("attempt") ? (uint32_t)tq_span_int(v) : 0;
    x->token = GET("token") ? (uint64_t)tq_span_int(v) : 0;
    x->created_at = GET("created_at") ? tq_span_int(v) : 0;
    x->finished_at = GET("finished_at") ? tq_span_int(v) : 0;
    if (GET("event") && !tq_span_null(v)) x->event = tq_span_str(v, &bad);
    x->until = GET("until") ? tq_span_int(v) : 0;
    x->child = GET("child") ? (uint64_t)tq_span_int(v) : 0;
    x->child_state = GET("child_state") ? tq_span_state(v) : TENQ_STATE_UNKNOWN;
#undef GET
    return !bad && x->name;
}

int tenq_steps(tenq_client *c, uint64_t id, tenq_step **steps, size_t *n)
{
    *steps = NULL;
    *n = 0;
    tq_clearerr(c);
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%llu/steps", (unsigned long long)id);
    tq_span a, list, el;
    int rc = tq_call_text(c, "GET", path, NULL, 0, 0, &a);
    if (rc != 0) return rc;
    tq_iter it;
    if (!tq_obj_get(a, "steps", &list) || !tq_arr_begin(&it, list))
        return tq_seterr(c, TENQ_EPROTOCOL, "the server's answer has no list of steps");
    size_t cap = 0, k = 0;
    tenq_step *v = NULL;
    int r;
    while ((r = tq_arr_next(&it, &el)) == 1) {
        if (k == cap) {
            cap = cap ? cap * 2 : 8;
            tenq_step *nv = realloc(v, cap * sizeof(*v));
            if (!nv) {
                tenq_steps_free(v, k);
                return tq_seterr(c, TENQ_ENOMEM, "out of memory");
            }
            v = nv;
        }
        if (!step_from(el, &v[k])) {
            tenq_steps_free(v, k + 1);
            return tq_seterr(c, TENQ_EPROTOCOL, "a step of the server's answer is malformed");
        }
        k++;
    }
    if (r < 0) {
        tenq_steps_free(v, k);
        return tq_seterr(c, TENQ_EPROTOCOL, "the server's list of steps is malformed");
    }
    *steps = v;
    *n = k;
    return 0;
}

/* A step's fields after its opening brace ("token" first) into b; 0 or the
 * refusal. */
static int step_text(tenq_client *c, uint64_t token, const tenq_step_req *r, tq_buf *b)
{
    if (!r || !r->name || (unsigned)r->kind > TENQ_STEP_CHILD)
        return tq_refuse(c, "name", "a step needs a name and a kind");
    char num[64];
    tq_buf_raw(b, num,
               (size_t)snprintf(num, sizeof num, "\"token\":%llu", (unsigned long long)token));
    int rc = tq_buf_str(c, b, "name", r->name, false);
    if (!rc && r->kind != TENQ_STEP_RUN) rc = tq_buf_str(c, b, "kind", kind_words[r->kind], false);
    switch (r->kind) {
    case TENQ_STEP_RUN:
        if (!rc) rc = tq_buf_json(c, b, "result", r->result_json ? r->result_json : "null");
        break;
    case TENQ_STEP_SLEEP:
        if (r->until)
            tq_buf_int(b, "until", r->until);
        else
            tq_buf_int(b, "duration_ms", r->duration_ms > 0 ? r->duration_ms : 0);
        break;
    case TENQ_STEP_EVENT:
        if (!rc) rc = tq_buf_str(c, b, "event", r->event, false);
        if (r->timeout_ms > 0) tq_buf_int(b, "timeout_ms", r->timeout_ms);
        break;
    case TENQ_STEP_CHILD:
        if (!r->child) rc = tq_refuse(c, "job", "a child step needs its job");
        if (!rc) {
            tq_buf_raw(b, ",\"job\":", 7);
            rc = tq_job_text(c, r->child, b);
        }
        break;
    }
    return rc;
}

int tenq_step_store(tenq_client *c, uint64_t id, uint64_t token, const tenq_step_req *r,
                    tenq_step_res *res)
{
    tenq_step_res local;
    if (!res) res = &local;
    memset(res, 0, sizeof(*res));
    tq_clearerr(c);
    tq_buf b = {0};
    tq_buf_raw(&b, "{", 1);
    int rc = step_text(c, token, r, &b);
    if (rc) {
        free(b.p);
        return rc;
    }
    tq_buf_raw(&b, "}", 1);
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%llu/steps", (unsigned long long)id);
    tq_span a, v;
    rc = tq_post_buf(c, path, &b, 0, &a);
    if (rc != 0) return rc;
    res->pos = (uint32_t)tq_aint(a, "pos");
    res->duplicate = tq_atrue(a, "duplicate");
    res->parked = tq_atrue(a, "parked");
    res->state = tq_astate(a, "state");
    res->run_at = tq_aint(a, "run_at");
    res->done = tq_atrue(a, "done");
    res->child = (uint64_t)tq_aint(a, "child");
    if (res->done && tq_obj_get(a, "result", &v)) {
        bool bad = false;
        res->result_json = tq_span_text(v, &bad);
        if (!res->result_json && !bad) res->result_json = strdup("null");
        if (!res->result_json) return tq_seterr(c, TENQ_ENOMEM, "out of memory");
    }
    return 0;
}

typedef struct step_results {
    tenq_step_item_res *res;
    size_t n;
} step_results;

/* Result k of a steps answer (tq_walk_list's each): the step's answer, or
 * its error.  (A kept event's payload is not read here: an event step
 * taken at once in a batch reads it from the job's steps.) */
static int step_one(tq_iter *at, size_t k, void *ctx)
{
    step_results *o = ctx;
    static const char *const names[] = {"pos",    "duplicate", "parked", "state",
                                        "run_at", "done",      "child"};
    tq_span v[7], e;
    if (tq_item_read(at, names, 7, v, &e) != 0) return -1;
    if (k >= o->n) return 0;
    tenq_step_item_res *r = &o->res[k];
    if (e.p) {
        tq_item_error(e, &r->err, r->message, sizeof r->message, r->field, sizeof r->field);
        return 0;
    }
    r->res.pos = v[0].p ? (uint32_t)tq_span_int(v[0]) : 0;
    r->res.duplicate = v[1].p && tq_span_true(v[1]);
    r->res.parked = v[2].p && tq_span_true(v[2]);
    r->res.state = v[3].p ? tq_span_state(v[3]) : TENQ_STATE_UNKNOWN;
    r->res.run_at = v[4].p ? tq_span_int(v[4]) : 0;
    r->res.done = v[5].p && tq_span_true(v[5]);
    r->res.child = v[6].p ? (uint64_t)tq_span_int(v[6]) : 0;
    return 0;
}

int tenq_steps_store(tenq_client *c, const tenq_step_item *items, size_t n, tenq_step_item_res *res)
{
    tq_clearerr(c);
    if (!items || !res || n == 0 || n > TENQ_BATCH_MAX)
        return tq_seterr(c, TENQ_EINVALID, "steps come 1 to %d at a time", TENQ_BATCH_MAX);
    memset(res, 0, n * sizeof(*res));
    tq_buf b = {0};
    tq_buf_raw(&b, "{\"steps\":[", 10);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        char num[48];
        tq_buf_raw(&b, num,
                   (size_t)snprintf(num, sizeof num, "%s{\"id\":%llu,", i ? "," : "",
                                    (unsigned long long)items[i].id));
        rc = step_text(c, items[i].token, &items[i].step, &b);
        tq_buf_raw(&b, "}", 1);
    }
    tq_buf_raw(&b, "]}", 2);
    if (rc) {
        free(b.p);
        return rc;
    }
    tq_iter top;
    if ((rc = tq_post_walk(c, "/v1/steps", &b, 0, &top)) != 0) return rc;
    step_results o = {res, n};
    size_t k;
    if (tq_walk_list(&top, "results", step_one, &o, &k) != 0) k = SIZE_MAX;
    if (k != n) {
        memset(res, 0, n * sizeof(*res));
        return tq_seterr(c, TENQ_EPROTOCOL, "the answer does not hold %zu results", n);
    }
    return 0;
}

int tenq_send_event(tenq_client *c, const char *tenant, const char *key, const char *payload_json,
                    size_t *delivered, bool *kept)
{
    if (delivered) *delivered = 0;
    if (kept) *kept = false;
    tq_clearerr(c);
    if (!key) return tq_refuse(c, "key", "an event needs a key");
    tq_buf b = {0};
    tq_buf_raw(&b, "{", 1);
    int rc = tq_buf_str(c, &b, "key", key, true);
    if (!rc) rc = tq_buf_str(c, &b, "tenant", tenant, false);
    if (!rc) rc = tq_buf_json(c, &b, "payload", payload_json);
    if (rc) {
        free(b.p);
        return rc;
    }
    tq_buf_raw(&b, "}", 1);
    char rkey[TQ_AUTO_KEY_LEN + 1];
    tq_auto_key(c, rkey);
    c->request_key = rkey; /* sent again (failover), it delivers nothing twice */
    tq_span a;
    rc = tq_post_buf(c, "/v1/events", &b, 0, &a);
    c->request_key = NULL;
    if (rc != 0) return rc;
    if (delivered) *delivered = (size_t)tq_aint(a, "delivered");
    if (kept) *kept = tq_atrue(a, "kept");
    return 0;
}
