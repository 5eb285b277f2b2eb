// SPDX-License-Identifier: Apache-2.0
/* A submit's answer: for each job, its id, state, whether it was a
 * duplicate or merged (and replayed), or why it was refused.  A batch
 * answers a list of objects ("jobs"), or, when the request asked for
 * "columns", one list per field (json_fields.c). */
#include "submit_json.h"

#include "json_fields.h"

#include "tenq/errors.h"

static bool made(const void *p)
{
    const engine_submit_res *r = p;
    return !r->code;
}
static void put_id(jbuf *b, const void *p)
{
    const engine_submit_res *r = p;
    jb_int(b, (long long)r->id);
}
static void put_state(jbuf *b, const void *p)
{
    const engine_submit_res *r = p;
    jb_str(b, engine_state_name(r->state));
}
static void put_duplicate(jbuf *b, const void *p)
{
    const engine_submit_res *r = p;
    jb_bool(b, r->duplicate);
}
static void put_merged(jbuf *b, const void *p)
{
    const engine_submit_res *r = p;
    jb_bool(b, r->merged);
}
static bool has_replayed(const void *p)
{
    const engine_submit_res *r = p;
    return !r->code && r->replayed;
}
static void put_replayed(jbuf *b, const void *p)
{
    (void)p;
    jb_bool(b, true);
}
static bool has_debounced(const void *p)
{
    const engine_submit_res *r = p;
    return !r->code && r->debounced;
}
static void put_debounced(jbuf *b, const void *p)
{
    (void)p;
    jb_bool(b, true);
}
static bool has_error(const void *p)
{
    const engine_submit_res *r = p;
    return r->code;
}
static void put_error(jbuf *b, const void *p)
{
    const engine_submit_res *r = p;
    jb_obj(b);
    jb_kstr(b, "code", tenq_err_word(r->code));
    jb_kstr(b, "message", r->err.message);
    if (r->err.field) jb_kstr(b, "field", r->err.field);
    jb_obj_end(b);
}

/* docs/API.md, "Submit": the fields of a job's answer, in this order. */
static const api_field fields[] = {
    {"id", made, put_id},
    {"state", made, put_state},
    {"duplicate", made, put_duplicate},
    {"merged", made, put_merged},
    {"replayed", has_replayed, put_replayed},
    {"debounced", has_debounced, put_debounced},
    {"error", has_error, put_error},
};
#define N_FIELDS (sizeof(fields) / sizeof(fields[0]))

void srv_write_submit_result(jbuf *b, const engine_submit_res *res)
{
    api_json_object(b, res, fields, N_FIELDS);
}

void api_json_submitted(jbuf *b, const engine_submit_res *res, size_t n, bool columns)
{
    api_json_items(b, res, n, sizeof(*res), fields, N_FIELDS, columns);
}
