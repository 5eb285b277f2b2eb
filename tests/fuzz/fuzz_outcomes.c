// SPDX-License-Identifier: Apache-2.0
/* A batch of outcomes (POST /v1/outcomes: {"outcomes": [...]}) read as
 * h_outcomes reads it (src/api/request_read.c): in place when it can, else
 * from jansson's tree; and each item as POST /v1/jobs/{id}/ack and /fail
 * read a body (outcome_read, src/api/jobread.c).  Checked: what is read in
 * place, the tree reader reads alike, item by item (id, token, ok, result,
 * stats, error, the failure's fields); a refused item has a reason. */
#include "fuzz.h"
#include "principals.h"

static void same_outcome(const outcome_in *a, const outcome_in *t, size_t i)
{
    FUZZ_CHECK(a->token == t->token && a->ok == t->ok, "outcome %zu: token/ok differ", i);
    FUZZ_CHECK(fuzz_same_str(a->result, t->result) && fuzz_same_str(a->stats, t->stats) &&
                   fuzz_same_str(a->error, t->error),
               "outcome %zu: result/stats/error differ", i);
    FUZZ_CHECK(a->f.has_retry_in == t->f.has_retry_in && a->f.retry_in_ms == t->f.retry_in_ms &&
                   a->f.no_retry == t->f.no_retry && a->f.cancelled == t->f.cancelled,
               "outcome %zu: failure fields differ", i);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    outcome_set a, t;
    bool text_ok = outcomes_read_text(text, size, &a);
    if (text_ok) FUZZ_CHECK(a.n >= 1 && a.n <= 10000 && !a.errs, "%zu in place", a.n);
    json_t *body = fuzz_body_tree(text, size);
    static const char *const fields[] = {"outcomes", NULL};
    engine_err err;
    bool tree_ok = body && !obj_unknown_field(body, fields) &&
                   outcome_set_read_tree(json_object_get(body, "outcomes"), &t, &err) == 0;
    if (text_ok) {
        FUZZ_CHECK(tree_ok, "in place accepted outcomes jansson's reader refuses");
        FUZZ_CHECK(a.n == t.n, "in place %zu, jansson %zu", a.n, t.n);
        for (size_t i = 0; i < a.n; i++) {
            FUZZ_CHECK(!t.errs[i], "in place accepted outcome %zu jansson's reader refuses: %s", i,
                       t.errs[i]->message);
            FUZZ_CHECK(a.ids[i] == t.ids[i], "outcome %zu: id differs", i);
            same_outcome(&a.ins[i], &t.ins[i], i);
        }
        outcome_set_free(&a);
    }
    if (tree_ok) {
        for (size_t i = 0; i < t.n; i++)
            FUZZ_CHECK(!t.errs[i] || (t.errs[i]->code && t.errs[i]->message[0]),
                       "outcome %zu refused without a reason", i);
        outcome_set_free(&t);
    }
    /* each item as the body of an ack and of a fail */
    json_t *list = body ? json_object_get(body, "outcomes") : NULL;
    size_t i;
    json_t *o;
    json_array_foreach(list, i, o)
    {
        if (!json_is_object(o) || i >= 64) continue;
        for (int ok = 0; ok < 2; ok++) {
            outcome_in in;
            if (outcome_read(o, ok, &in, &err) == 0) {
                FUZZ_CHECK(in.ok == ok && in.token >= 1, "an outcome read wrong");
                outcome_in_free(&in);
            } else {
                FUZZ_CHECK(err.message[0] && err.field, "refused without a reason");
            }
        }
    }
    json_decref(body);
    return 0;
}
