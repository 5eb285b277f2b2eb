// SPDX-License-Identifier: Apache-2.0
/* A submit's body (POST /v1/jobs: one job, or {"jobs": [...]}) read as
 * h_submit reads it (src/api/request_read.c): in place when it can, from
 * jansson's tree when not, for an admin and for a tenant token.  Checked:
 * what the in-place reader accepts, the tree reader accepts too and reads
 * the same jobs (every field, the canonical args) and the same answer's
 * form ("columns"); a refusal of the whole
 * request reads nothing; a job's refusal has a reason. */
#include "fuzz.h"
#include "principals.h"

#define MAX_JOB_BYTES 65536 /* --max-job-bytes, as small as it goes in tests */

static void same_job(const engine_submit_req *a, const engine_submit_req *b, size_t i)
{
    FUZZ_CHECK(fuzz_same_str(a->tenant, b->tenant) && fuzz_same_str(a->queue, b->queue) &&
                   fuzz_same_str(a->type, b->type) && fuzz_same_str(a->key, b->key) &&
                   fuzz_same_str(a->unique_key, b->unique_key) &&
                   fuzz_same_str(a->idempotency_key, b->idempotency_key) &&
                   fuzz_same_str(a->traceparent, b->traceparent),
               "job %zu: strings differ", i);
    FUZZ_CHECK(a->has_priority == b->has_priority && a->priority == b->priority &&
                   a->run_at == b->run_at && a->max_attempts == b->max_attempts &&
                   a->unique == b->unique && a->has_score == b->has_score &&
                   (a->score == b->score || (a->score != a->score && b->score != b->score)),
               "job %zu: numbers differ", i);
    FUZZ_CHECK(fuzz_same_str(a->args, b->args) && a->args_len == b->args_len,
               "job %zu: args differ: %s vs %s", i, a->args ? a->args : "(none)",
               b->args ? b->args : "(none)");
}

static void read_as(const char *text, size_t n, const principal *who)
{
    submit_in a, t;
    bool text_ok = submit_read_text(text, n, MAX_JOB_BYTES, who, &a);
    if (text_ok)
        FUZZ_CHECK(a.n >= 1 && a.n <= 10000 && a.ok == NULL && a.res, "in place: %zu jobs", a.n);
    else
        FUZZ_CHECK(a.n == 0 && !a.reqs && !a.mem, "a decline left something behind");
    json_t *body = fuzz_body_tree(text, n);
    submit_verdict v = SUBMIT_BAD_JOBS;
    const char *other = NULL;
    if (body) {
        v = submit_read_tree(body, n, MAX_JOB_BYTES, who, &t, &other);
        if (v == SUBMIT_READ) {
            FUZZ_CHECK(t.n >= 1 && t.n <= 10000 && t.ok && t.res, "tree: %zu jobs", t.n);
            for (size_t i = 0; i < t.n; i++)
                FUZZ_CHECK(t.ok[i] == (t.res[i].code == 0) && (t.ok[i] || t.res[i].err.message[0]),
                           "job %zu refused without a reason", i);
        } else {
            FUZZ_CHECK(t.n == 0 && !t.reqs, "a refusal read something");
            FUZZ_CHECK(v != SUBMIT_NOT_ONLY_JOBS || other, "which member?");
        }
    }
    if (text_ok) {
        FUZZ_CHECK(body && v == SUBMIT_READ, "in place accepted what jansson's reader refuses");
        FUZZ_CHECK(a.n == t.n && a.batch == t.batch, "in place %zu jobs, jansson %zu", a.n, t.n);
        FUZZ_CHECK(a.columns == t.columns, "in place columns %d, jansson %d", a.columns, t.columns);
        for (size_t i = 0; i < a.n; i++) {
            FUZZ_CHECK(t.ok[i], "in place accepted job %zu jansson's reader refuses: %s", i,
                       t.res[i].err.message);
            same_job(&a.reqs[i], &t.reqs[i], i);
        }
        submit_in_free(&a);
    }
    if (body && v == SUBMIT_READ) submit_in_free(&t);
    json_decref(body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (int i = 0; i < 2; i++) read_as((const char *)data, size, &fuzz_principals[i]);
    return 0;
}
