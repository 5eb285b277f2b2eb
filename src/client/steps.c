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

int tenq_step_store(tenq_client *c, uint64_t id, uint64_t token, const tenq_step_req *r,
                    tenq_step_res *res)
{
    tenq_step_res local;
    if (!res) res = &local;
    memset(res, 0, sizeof(*res));
    tq_clearerr(c);
    if (!r || !r->name || (unsigned)r->kind > TENQ_STEP_CHILD)
        return tq_refuse(c, "name", "a step needs a name and a kind");
    tq_buf b = {0};
    char num[64];
    tq_buf_raw(&b, num,
               (size_t)snprintf(num, sizeof num, "{\"token\":%llu", (unsigned long long)token));
    int rc = tq_buf_str(c, &b, "name", r->name, false);
    if (!rc && r->kind != TENQ_STEP_RUN) rc = tq_buf_str(c, &b, "kind", kind_words[r->kind], false);
    switch (r->kind) {
    case TENQ_STEP_RUN:
        if (!rc) rc = tq_buf_json(c, &b, "result", r->result_json ? r->result_json : "null");
        break;
    case TENQ_STEP_SLEEP:
        if (r->until)
            tq_buf_int(&b, "until", r->until);
        else
            tq_buf_int(&b, "duration_ms", r->duration_ms > 0 ? r->duration_ms : 0);
        break;
    case TENQ_STEP_EVENT:
        if (!rc) rc = tq_buf_str(c, &b, "event", r->event, false);
        if (r->timeout_ms > 0) tq_buf_int(&b, "timeout_ms", r->timeout_ms);
        break;
    case TENQ_STEP_CHILD:
        if (!r->child) rc = tq_refuse(c, "job", "a child step needs its job");
        if (!rc) {
            tq_buf_raw(&b, ",\"job\":", 7);
            rc = tq_job_text(c, r->child, &b);
        }
        break;
    }
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
