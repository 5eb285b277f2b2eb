// SPDX-License-Identifier: Apache-2.0
/* A lease request's body (POST /v1/lease) read as h_lease reads it
 * (src/api/jobread.c): lease_read_text in place, else jansson's tree and
 * lease_read; then the outcomes it reports, in place when the body was
 * read in place and they can be, else from the tree (src/api/
 * request_read.c), and the queue names checked.  Checked: what is read in
 * place is read alike from the tree (worker, queues, types, max, wait_ms,
 * whether outcomes came), and a body jansson refuses is refused whatever
 * the way; a refusal has a reason; a lease reads within its bounds. */
#include "fuzz.h"
#include "principals.h"

static bool same_names(char **a, size_t na, char **b, size_t nb)
{
    if (na != nb) return false;
    for (size_t i = 0; i < na; i++)
        if (strcmp(a[i], b[i])) return false;
    return true;
}

static void in_bounds(const lease_in *in)
{
    FUZZ_CHECK(in->nq >= 1 && in->nq <= MAX_QUEUES && in->nt <= MAX_QUEUES, "%zu queues %zu types",
               in->nq, in->nt);
    FUZZ_CHECK(in->max >= 1 && in->max <= LEASE_MAX && in->wait_ms >= 0 && in->wait_ms <= 3600000,
               "max %lld wait_ms %lld", in->max, in->wait_ms);
    for (size_t i = 0; i < in->nq; i++) {
        FUZZ_CHECK(in->queues[i][0] && strlen(in->queues[i]) <= ENGINE_TYPE_MAX, "queue %zu", i);
        (void)engine_name_valid(in->queues[i]);
        for (int p = 0; p < 2; p++)
            if (fuzz_principals[p].tok)
                (void)token_allows_queue(fuzz_principals[p].tok, in->queues[i]);
    }
}

/* The reported outcomes, as h_lease reads them: false when the request is
 * refused (req_body: the body is no JSON object jansson takes). */
static bool read_outcomes(const lease_in *in, bool from_text, json_t *body)
{
    tq_iter list;
    outcome_set os;
    if (from_text && tq_arr_begin(&list, in->outcomes) && outcome_set_read(&list, &os)) {
        FUZZ_CHECK(os.n >= 1 && !os.errs, "%zu outcomes in place", os.n);
        outcome_set_free(&os);
        return true;
    }
    if (!body) return false;
    engine_err err;
    if (outcome_set_read_tree(json_object_get(body, "outcomes"), &os, &err) != 0) {
        FUZZ_CHECK(err.message[0], "outcomes refused without a reason");
        return true;
    }
    FUZZ_CHECK(os.n >= 1 && os.errs, "%zu outcomes from the tree", os.n);
    outcome_set_free(&os);
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    lease_in a, t;
    bool text_ok = lease_read_text(text, size, &a);
    json_t *body = fuzz_body_tree(text, size);
    engine_err err;
    bool tree_ok = body && lease_read(body, &t, &err) == 0;
    if (body && !tree_ok) FUZZ_CHECK(err.message[0] && err.field, "refused without a reason");
    if (text_ok && !body) {
        /* jansson refuses the body (a duplicate key, a number too big inside
         * the outcomes, which the lease's reader does not look into): then
         * reading the outcomes in place must decline, and req_body refuse */
        FUZZ_CHECK(a.has_outcomes && !read_outcomes(&a, true, NULL),
                   "in place accepted a lease whose body jansson refuses");
        lease_in_free(&a);
        text_ok = false;
    }
    if (text_ok) {
        FUZZ_CHECK(tree_ok, "in place accepted a lease jansson's reader refuses");
        in_bounds(&a);
        FUZZ_CHECK(fuzz_same_str(a.worker, t.worker) && a.max == t.max && a.wait_ms == t.wait_ms &&
                       a.has_outcomes == t.has_outcomes,
                   "worker/max/wait_ms/outcomes differ");
        FUZZ_CHECK(same_names(a.queues, a.nq, t.queues, t.nq) &&
                       same_names(a.types, a.nt, t.types, t.nt),
                   "queues/types differ");
        if (a.has_outcomes) read_outcomes(&a, true, body);
        lease_in_free(&a);
    }
    if (tree_ok) {
        in_bounds(&t);
        if (!text_ok && t.has_outcomes) read_outcomes(&t, false, body);
        lease_in_free(&t);
    }
    json_decref(body);
    return 0;
}
