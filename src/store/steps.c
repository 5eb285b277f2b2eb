// SPDX-License-Identifier: Apache-2.0
/* Durable steps and kept events as rows (engine/steps.c): their operations
 * in a batch and the parameters of their statements, their load into the
 * engine, and a job's steps read on the reader thread.
 *
 * A step's row is written in the commit that stored it (ENGINE_CH_STEP); a
 * wait's end completes its row (OP_STEP_DONE) in the commit of that end.
 * A load reads the steps of the live jobs loaded first (a job with steps
 * is never plain: docs/schema.md) without their results, which only a read
 * of the job's steps brings back. */
#include "internal.h"
#include "schema.h"

#include "base/xalloc.h"

/* ---- batches ------------------------------------------------------------------ */

static soff put(store_batch *b, const char *s)
{
    return s ? store_arena_put(b, s, strlen(s)) : SNULL;
}

void store_batch_step(store_batch *b, const engine_step_info *x, bool update)
{
    store_op *o = store_op_push(b, update ? OP_STEP_DONE : OP_STEP);
    o->u.step.job_id = x->job_id;
    o->u.step.pos = x->pos;
    o->u.step.kind = (uint8_t)x->kind;
    o->u.step.done = x->done;
    o->u.step.result = x->result ? store_arena_put(b, x->result, x->size) : SNULL;
    o->u.step.size = x->result ? x->size : 0;
    o->u.step.error = put(b, x->error);
    o->u.step.finished_at = x->finished_at;
    o->u.step.child_state = (int8_t)(x->child_state >= 0 ? x->child_state : -1);
    if (update) return;
    o->u.step.name = put(b, x->name);
    o->u.step.token = x->token;
    o->u.step.attempt = x->attempt;
    o->u.step.created_at = x->created_at;
    o->u.step.event = put(b, x->event);
    o->u.step.until = x->until;
    o->u.step.child = x->child;
}

void store_batch_event(store_batch *b, const engine_event_info *x)
{
    store_op *o = store_op_push(b, OP_EVENT);
    o->u.event.id = x->id;
    o->u.event.tenant = put(b, x->tenant);
    o->u.event.key = put(b, x->key);
    o->u.event.payload = store_arena_put(b, x->payload, x->len);
    o->u.event.created_at = x->created_at;
    o->u.event.expires_at = x->expires_at;
}

void store_batch_event_delete(store_batch *b, uint64_t id)
{
    store_op_push(b, OP_EVENT_DELETE)->u.event.id = id;
}

void store_batch_event_inbox_done(store_batch *b, uint64_t id)
{
    store_op_push(b, OP_EVENT_INBOX_DONE)->u.event.id = id;
}

/* 0 is "none" for these columns: NULL. */
static void p_opt(const store_param_sink *out, long long v)
{
    if (v)
        out->i64(out->ctx, v);
    else
        out->text(out->ctx, NULL);
}

void store_step_params(const store_batch *b, const store_op *o, const store_param_sink *out)
{
    switch (o->kind) {
    case OP_STEP:
    case OP_STEP_DONE: {
        const char *cs = o->u.step.child_state >= 0
                             ? engine_state_name((engine_state)o->u.step.child_state)
                             : NULL;
        out->i64(out->ctx, (long long)o->u.step.job_id);
        out->i64(out->ctx, o->u.step.pos);
        if (o->kind == OP_STEP_DONE) {
            out->boolean(out->ctx, o->u.step.done);
            out->text(out->ctx, bstr(b, o->u.step.result));
            out->i64(out->ctx, o->u.step.size);
            out->text(out->ctx, bstr(b, o->u.step.error));
            p_opt(out, o->u.step.finished_at);
            out->text(out->ctx, cs);
            return;
        }
        out->text(out->ctx, bstr(b, o->u.step.name));
        out->text(out->ctx, engine_step_kind_name((engine_step_kind)o->u.step.kind));
        out->boolean(out->ctx, o->u.step.done);
        out->text(out->ctx, bstr(b, o->u.step.result));
        out->i64(out->ctx, o->u.step.size);
        out->text(out->ctx, bstr(b, o->u.step.error));
        out->i64(out->ctx, (long long)o->u.step.token);
        out->i64(out->ctx, o->u.step.attempt);
        out->i64(out->ctx, o->u.step.created_at);
        p_opt(out, o->u.step.finished_at);
        out->text(out->ctx, bstr(b, o->u.step.event));
        p_opt(out, o->u.step.until);
        p_opt(out, (long long)o->u.step.child);
        out->text(out->ctx, cs);
        return;
    }
    case OP_EVENT:
        out->i64(out->ctx, (long long)o->u.event.id);
        out->text(out->ctx, bstr(b, o->u.event.tenant));
        out->text(out->ctx, bstr(b, o->u.event.key));
        out->text(out->ctx, bstr(b, o->u.event.payload));
        out->i64(out->ctx, o->u.event.created_at);
        out->i64(out->ctx, o->u.event.expires_at);
        return;
    case OP_EVENT_DELETE:
    case OP_EVENT_INBOX_DONE: out->i64(out->ctx, (long long)o->u.event.id); return;
    default: return;
    }
}

/* ---- the load -------------------------------------------------------------------- */

typedef struct load_ctx {
    store_t *s;
    engine_t *e;
    int64_t now;
    int rc;
} load_ctx;

#define I64(c) (acc->is_null(row, (c)) ? 0 : acc->i64(row, (c)))
#define TXT(c) (acc->is_null(row, (c)) ? NULL : acc->text(row, (c)))

static void step_row(void *ctx, const store_rowacc *acc, void *row)
{
    load_ctx *l = ctx;
    if (l->rc) return;
    int kind = engine_step_kind_parse(TXT(3));
    engine_step_info x = {.job_id = (uint64_t)I64(0),
                          .pos = (uint32_t)I64(1),
                          .name = TXT(2),
                          .kind = kind < 0 ? ENGINE_NSTEP_KINDS : (engine_step_kind)kind,
                          .done = I64(4) != 0,
                          .size = (uint32_t)I64(5),
                          .event = TXT(6),
                          .until = I64(7),
                          .child = (uint64_t)I64(8),
                          .token = (uint64_t)I64(9),
                          .child_state = -1};
    engine_err err;
    if (engine_load_step(l->e, l->now, &x, &err) != 0) {
        store_set_err(l->s, "loading steps: %s", err.message);
        l->rc = TENQ_ECORRUPT;
    }
}

static void event_row(void *ctx, const store_rowacc *acc, void *row)
{
    load_ctx *l = ctx;
    if (l->rc) return;
    const char *payload = TXT(3);
    engine_event_info x = {.id = (uint64_t)I64(0),
                           .tenant = TXT(1),
                           .key = TXT(2),
                           .payload = payload,
                           .len = payload ? (uint32_t)strlen(payload) : 0,
                           .created_at = I64(4),
                           .expires_at = I64(5)};
    engine_err err;
    if (engine_load_event(l->e, l->now, &x, &err) != 0) {
        store_set_err(l->s, "loading events: %s", err.message);
        l->rc = TENQ_ECORRUPT;
    }
}

static void max_row(void *ctx, const store_rowacc *acc, void *row)
{
    load_ctx *l = ctx;
    engine_load_event_id(l->e, (uint64_t)I64(0));
}

int store_load_steps(store_t *s, engine_t *e, int64_t now)
{
    load_ctx l = {s, e, now, 0};
    char nowtext[24];
    snprintf(nowtext, sizeof nowtext, "%lld", (long long)now);
    const char *params[1] = {nowtext};
    int rc = s->be->select(s, false, STORE_SQL_LOAD_STEPS, 0, NULL, step_row, &l);
    if (!rc) rc = s->be->select(s, false, STORE_SQL_MAX_EVENT, 0, NULL, max_row, &l);
    if (!rc) rc = s->be->select(s, false, STORE_SQL_LOAD_EVENTS, 1, params, event_row, &l);
    return rc ? rc : l.rc;
}

/* ---- a job's steps, read ------------------------------------------------------------ */

static void read_row(void *ctx, const store_rowacc *acc, void *row)
{
    store_result *res = ctx;
    if (res->nstp == res->capstp) {
        res->capstp = res->capstp ? res->capstp * 2 : 16;
        res->stp = xrealloc(res->stp, res->capstp * sizeof(*res->stp));
    }
    engine_step_info *x = &res->stp[res->nstp++];
    memset(x, 0, sizeof(*x));
#define KEEP(c) (acc->is_null(row, (c)) ? NULL : rows_str(&res->rows, acc->text(row, (c))))
    int kind = engine_step_kind_parse(TXT(3));
    int cs = acc->is_null(row, 15) ? -1 : engine_state_parse(acc->text(row, 15));
    x->job_id = (uint64_t)I64(0);
    x->pos = (uint32_t)I64(1);
    x->name = KEEP(2);
    x->kind = kind < 0 ? ENGINE_STEP_RUN : (engine_step_kind)kind;
    x->done = I64(4) != 0;
    x->result = KEEP(5);
    x->size = (uint32_t)I64(6);
    x->error = KEEP(7);
    x->token = (uint64_t)I64(8);
    x->attempt = (uint32_t)I64(9);
    x->created_at = I64(10);
    x->finished_at = I64(11);
    x->event = KEEP(12);
    x->until = I64(13);
    x->child = (uint64_t)I64(14);
    x->child_state = cs;
#undef KEEP
}

#undef I64
#undef TXT

int store_read_steps(store_t *s, uint64_t id, bool results, store_result *res)
{
    char idtext[24];
    snprintf(idtext, sizeof idtext, "%llu", (unsigned long long)id);
    const char *params[1] = {idtext};
    return s->be->select(s, true, results ? STORE_SQL_GET_STEPS : STORE_SQL_GET_STEP_NAMES, 1,
                         params, read_row, res);
}

void store_steps_deliver(store_result *res)
{
    store_steps st = {res->rows.n == 1 && !res->rc ? &res->rows.v[0] : NULL, res->stp,
                      res->rc ? 0 : res->nstp};
    res->sfn(res->ctx, res->rc, &st);
    rows_free(&res->rows);
    free(res->stp);
    res->stp = NULL;
}
