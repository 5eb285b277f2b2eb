// SPDX-License-Identifier: Apache-2.0
/* A submit's answer: for each job, its id, state, whether it was a
 * duplicate or merged (and replayed), or why it was refused.  A batch
 * answers a list of objects ("jobs"), or, when the request asked for
 * "columns", one list per field ("columns"), which a client in a language
 * whose JSON objects are dear to make (Ruby, Python) reads in a fraction of
 * the time.  One table of fields serves both. */
#include "internal.h"

typedef struct submit_field {
    const char *name;
    bool (*has)(const engine_submit_res *r);
    void (*put)(jbuf *b, const engine_submit_res *r);
} submit_field;

static bool made(const engine_submit_res *r)
{
    return !r->code;
}
static void put_id(jbuf *b, const engine_submit_res *r)
{
    jb_int(b, (long long)r->id);
}
static void put_state(jbuf *b, const engine_submit_res *r)
{
    jb_str(b, engine_state_name(r->state));
}
static void put_duplicate(jbuf *b, const engine_submit_res *r)
{
    jb_bool(b, r->duplicate);
}
static void put_merged(jbuf *b, const engine_submit_res *r)
{
    jb_bool(b, r->merged);
}
static bool has_replayed(const engine_submit_res *r)
{
    return !r->code && r->replayed;
}
static void put_replayed(jbuf *b, const engine_submit_res *r)
{
    (void)r;
    jb_bool(b, true);
}
static bool has_error(const engine_submit_res *r)
{
    return r->code;
}
static void put_error(jbuf *b, const engine_submit_res *r)
{
    jb_obj(b);
    jb_kstr(b, "code", tenq_err_word(r->code));
    jb_kstr(b, "message", r->err.message);
    if (r->err.field) jb_kstr(b, "field", r->err.field);
    jb_obj_end(b);
}

/* docs/API.md, "Submit": the fields of a job's answer, in this order. */
static const submit_field fields[] = {
    {"id", made, put_id},
    {"state", made, put_state},
    {"duplicate", made, put_duplicate},
    {"merged", made, put_merged},
    {"replayed", has_replayed, put_replayed},
    {"error", has_error, put_error},
};
#define N_FIELDS (sizeof(fields) / sizeof(fields[0]))

void srv_write_submit_result(jbuf *b, const engine_submit_res *res)
{
    jb_obj(b);
    for (size_t f = 0; f < N_FIELDS; f++) {
        if (!fields[f].has(res)) continue;
        jb_key(b, fields[f].name);
        fields[f].put(b, res);
    }
    jb_obj_end(b);
}

void api_json_submitted(jbuf *b, const engine_submit_res *res, size_t n, bool columns)
{
    if (!columns) {
        jb_key(b, "jobs");
        jb_arr(b);
        for (size_t i = 0; i < n; i++) srv_write_submit_result(b, &res[i]);
        jb_arr_end(b);
        return;
    }
    /* a field some job has: its column, null for the jobs without it */
    jb_key(b, "columns");
    jb_obj(b);
    for (size_t f = 0; f < N_FIELDS; f++) {
        size_t any = 0;
        while (any < n && !fields[f].has(&res[any])) any++;
        if (any == n) continue;
        jb_key(b, fields[f].name);
        jb_arr(b);
        for (size_t i = 0; i < n; i++) {
            if (!fields[f].has(&res[i]))
                jb_null(b);
            else
                fields[f].put(b, &res[i]);
        }
        jb_arr_end(b);
    }
    jb_obj_end(b);
}
