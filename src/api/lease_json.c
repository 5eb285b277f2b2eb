// SPDX-License-Identifier: Apache-2.0
/* A lease's jobs in its answer: a list of objects ("jobs"), or, when the
 * worker asked for "columns", one list per field (json_fields.c). */
#include "lease_json.h"

#include "json_fields.h"

static void put_id(jbuf *b, const void *p)
{
    const engine_job_info *j = p;
    jb_int(b, (long long)j->id);
}
static void put_token(jbuf *b, const void *p)
{
    const engine_job_info *j = p;
    jb_int(b, (long long)j->token);
}
static void put_lease_until(jbuf *b, const void *p)
{
    const engine_job_info *j = p;
    jb_int(b, j->lease_until);
}
/* the time left, so that no worker needs a clock in step with the server's
 * (a lease is answered as granted: leased_at is now) */
static void put_lease_left(jbuf *b, const void *p)
{
    const engine_job_info *j = p;
    jb_int(b, j->lease_until - j->leased_at);
}
static void put_tenant(jbuf *b, const void *p)
{
    const engine_job_info *j = p;
    jb_str(b, j->tenant);
}
static void put_queue(jbuf *b, const void *p)
{
    const engine_job_info *j = p;
    jb_str(b, j->queue);
}
static void put_type(jbuf *b, const void *p)
{
    const engine_job_info *j = p;
    jb_str(b, j->type);
}
static void put_key(jbuf *b, const void *p)
{
    const engine_job_info *j = p;
    jb_str(b, j->key);
}
static bool has_args(const void *p)
{
    const engine_job_info *j = p;
    return !j->payloads;
}
static void put_args(jbuf *b, const void *p)
{
    const engine_job_info *j = p;
    jb_raw(b, j->args, j->args_len);
}
static bool has_payloads(const void *p)
{
    const engine_job_info *j = p;
    return j->payloads;
}
static void put_payloads(jbuf *b, const void *p)
{
    api_json_payloads(b, p);
}
void api_json_payloads(jbuf *b, const engine_job_info *j)
{
    jb_arr(b);
    for (uint32_t i = 0; i < j->n_payloads; i++) {
        jb_obj(b);
        jb_key(b, "payload");
        jb_raw(b, j->payloads[i].data, j->payloads[i].len);
        jb_key(b, "score");
        jb_num(b, j->payloads[i].score);
        jb_obj_end(b);
    }
    jb_arr_end(b);
}
static void put_priority(jbuf *b, const void *p)
{
    const engine_job_info *j = p;
    jb_int(b, j->priority);
}
static bool has_traceparent(const void *p)
{
    const engine_job_info *j = p;
    return j->traceparent;
}
static void put_traceparent(jbuf *b, const void *p)
{
    const engine_job_info *j = p;
    jb_str(b, j->traceparent);
}
static bool has_timeout(const void *p)
{
    const engine_job_info *j = p;
    return j->timeout_ms;
}
static void put_timeout(jbuf *b, const void *p)
{
    const engine_job_info *j = p;
    jb_int(b, j->timeout_ms);
}
static bool has_parents(const void *p)
{
    const engine_job_info *j = p;
    return j->n_parents;
}
static void put_parents(jbuf *b, const void *p)
{
    const engine_job_info *j = p;
    jb_arr(b);
    for (uint32_t i = 0; i < j->n_parents; i++) jb_int(b, (long long)j->parents[i]);
    jb_arr_end(b);
}
static bool has_batch(const void *p)
{
    const engine_job_info *j = p;
    return j->batch;
}
static void put_batch(jbuf *b, const void *p)
{
    const engine_job_info *j = p;
    jb_int(b, (long long)j->batch);
}
static bool has_callback(const void *p)
{
    const engine_job_info *j = p;
    return j->batch && j->batch_role > 0;
}
static void put_callback(jbuf *b, const void *p)
{
    const engine_job_info *j = p;
    jb_str(b, engine_callback_name(j->batch_role - 1));
}
static bool has_steps(const void *p)
{
    const engine_job_info *j = p;
    return j->n_steps;
}
static void put_steps(jbuf *b, const void *p)
{
    const engine_job_info *j = p;
    jb_int(b, j->n_steps);
}
static void put_attempt(jbuf *b, const void *p)
{
    const engine_job_info *j = p;
    jb_int(b, j->attempts ? j->attempts - 1 : 0);
}
static void put_max_attempts(jbuf *b, const void *p)
{
    const engine_job_info *j = p;
    jb_int(b, j->max_attempts);
}
static void put_run_at(jbuf *b, const void *p)
{
    const engine_job_info *j = p;
    jb_int(b, j->run_at);
}
static void put_created_at(jbuf *b, const void *p)
{
    const engine_job_info *j = p;
    jb_int(b, j->created_at);
}

/* docs/API.md, "Lease": the fields of a leased job, in this order. */
static const api_field fields[] = {
    {"id", NULL, put_id},
    {"token", NULL, put_token},
    {"lease_until", NULL, put_lease_until},
    {"lease_left_ms", NULL, put_lease_left},
    {"tenant", NULL, put_tenant},
    {"queue", NULL, put_queue},
    {"type", NULL, put_type},
    {"key", NULL, put_key},
    {"payloads", has_payloads, put_payloads},
    {"args", has_args, put_args},
    {"priority", NULL, put_priority},
    {"traceparent", has_traceparent, put_traceparent},
    {"timeout_ms", has_timeout, put_timeout},
    {"parents", has_parents, put_parents},
    {"batch", has_batch, put_batch},
    {"batch_callback", has_callback, put_callback},
    {"steps", has_steps, put_steps},
    {"attempt", NULL, put_attempt},
    {"max_attempts", NULL, put_max_attempts},
    {"run_at", NULL, put_run_at},
    {"created_at", NULL, put_created_at},
};
#define N_FIELDS (sizeof(fields) / sizeof(fields[0]))

void api_json_leased(jbuf *b, const engine_job_info *jobs, size_t n, bool columns)
{
    api_json_items(b, jobs, n, sizeof(*jobs), fields, N_FIELDS, columns);
}
