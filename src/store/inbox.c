// SPDX-License-Identifier: Apache-2.0
/* What applications' transactions committed for the leader to take in
 * (PostgreSQL, schema 8, pg_txapi.h): the jobs of tenq.inbox, the
 * outcomes of tenq.tx_outcomes and the events of tenq.event_inbox (schema
 * 24), read on the reader thread, oldest first.
 * The rows are deleted by the commit that applies them (group.c collects
 * the ids, pg_write.c deletes them in the group's transaction), so a leader
 * that dies before that commit leaves them for the next one. */
#include "internal.h"
#include "schema.h"

#include "base/xalloc.h"

#include <jansson.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SQL_READ_JOBS                                                                              \
    "SELECT id, tenant, queue, type, args, key, unique_key, is_unique::int, idempotency_key, "     \
    "run_at, priority, max_attempts, score::text, traceparent, created_at, timeout_ms, options "   \
    "FROM $Sinbox "                                                                                \
    "ORDER BY id LIMIT ?1"
#define SQL_READ_OUTCOMES                                                                          \
    "SELECT id, token, ok::int, result, error, retry_in_ms FROM $Stx_outcomes "                    \
    "ORDER BY created_at, id LIMIT ?1"
#define SQL_READ_EVENTS "SELECT id, tenant, key, payload FROM $Sevent_inbox ORDER BY id LIMIT ?1"
#define SQL_RAISE_IDS   "SELECT 1 FROM $Sraise_tx_ids(?1)"
#define SQL_HOT         "SELECT setval('$Sinbox_hot', 1, true)"
#define SQL_COOL        "SELECT $Sinbox_cool()::int"

bool store_has_inbox(const store_t *s)
{
    return s->be->inbox_news != NULL;
}

typedef struct inbox_read {
    rows_builder *keep; /* owns the strings */
    store_inbox *in;
    size_t cap_jobs, cap_outcomes, cap_events;
} inbox_read;

static const char *text_or_null(inbox_read *r, const store_rowacc *acc, void *row, int col)
{
    return acc->is_null(row, col) ? NULL : rows_str(r->keep, acc->text(row, col));
}

static void job_row(void *ctx, const store_rowacc *acc, void *row)
{
    inbox_read *r = ctx;
    store_inbox *in = r->in;
    if (in->njobs == r->cap_jobs) {
        r->cap_jobs = r->cap_jobs ? r->cap_jobs * 2 : 64;
        in->jobs = xrealloc(in->jobs, r->cap_jobs * sizeof(*in->jobs));
    }
    store_tx_job *j = &in->jobs[in->njobs++];
    memset(j, 0, sizeof(*j));
    j->id = (uint64_t)acc->i64(row, 0);
    j->tenant = text_or_null(r, acc, row, 1);
    j->queue = text_or_null(r, acc, row, 2);
    j->type = text_or_null(r, acc, row, 3);
    j->args = text_or_null(r, acc, row, 4);
    j->key = text_or_null(r, acc, row, 5);
    j->unique_key = text_or_null(r, acc, row, 6);
    j->unique = acc->i64(row, 7) != 0;
    j->idempotency_key = text_or_null(r, acc, row, 8);
    j->run_at = acc->is_null(row, 9) ? 0 : acc->i64(row, 9);
    j->priority = (int32_t)acc->i64(row, 10);
    j->max_attempts = acc->is_null(row, 11) ? 0 : (uint32_t)acc->i64(row, 11);
    j->has_score = !acc->is_null(row, 12);
    j->score = j->has_score ? strtod(acc->text(row, 12), NULL) : 0;
    j->traceparent = text_or_null(r, acc, row, 13);
    j->created_at = acc->i64(row, 14);
    j->timeout_ms = acc->is_null(row, 15) ? 0 : acc->i64(row, 15);
    if (!acc->is_null(row, 16)) {
        engine_job_info o;
        void *mem = NULL;
        memset(&o, 0, sizeof o);
        if (store_options_parse(acc->text(row, 16), &o, &mem) != 0) {
            j->bad_options = true;
            return;
        }
        if (mem) rows_keep(r->keep, mem);
        j->concurrency_keys = o.concurrency_keys;
        j->n_concurrency_keys = o.n_concurrency_keys;
        j->rate_keys = o.rate_keys;
        j->n_rate_keys = o.n_rate_keys;
        j->expire_at = o.expire_at;
        /* the debounce asked for (a job's row keeps what became of it) */
        json_t *x = json_loads(acc->text(row, 16), 0, NULL);
        j->debounce_ms = json_integer_value(json_object_get(x, "debounce_ms"));
        j->debounce_max_ms = json_integer_value(json_object_get(x, "debounce_max_ms"));
        json_decref(x);
    }
}

static void outcome_row(void *ctx, const store_rowacc *acc, void *row)
{
    inbox_read *r = ctx;
    store_inbox *in = r->in;
    if (in->noutcomes == r->cap_outcomes) {
        r->cap_outcomes = r->cap_outcomes ? r->cap_outcomes * 2 : 16;
        in->outcomes = xrealloc(in->outcomes, r->cap_outcomes * sizeof(*in->outcomes));
    }
    store_tx_outcome *o = &in->outcomes[in->noutcomes++];
    memset(o, 0, sizeof(*o));
    o->id = (uint64_t)acc->i64(row, 0);
    o->token = (uint64_t)acc->i64(row, 1);
    o->ok = acc->i64(row, 2) != 0;
    o->result = text_or_null(r, acc, row, 3);
    o->error = text_or_null(r, acc, row, 4);
    o->has_retry_in = !acc->is_null(row, 5);
    o->retry_in_ms = o->has_retry_in ? acc->i64(row, 5) : 0;
}

static void event_row(void *ctx, const store_rowacc *acc, void *row)
{
    inbox_read *r = ctx;
    store_inbox *in = r->in;
    if (in->nevents == r->cap_events) {
        r->cap_events = r->cap_events ? r->cap_events * 2 : 16;
        in->events = xrealloc(in->events, r->cap_events * sizeof(*in->events));
    }
    store_tx_event *v = &in->events[in->nevents++];
    v->id = (uint64_t)acc->i64(row, 0);
    v->tenant = text_or_null(r, acc, row, 1);
    v->key = text_or_null(r, acc, row, 2);
    v->payload = text_or_null(r, acc, row, 3);
}

static void ignore_row(void *ctx, const store_rowacc *acc, void *row)
{
    (void)ctx;
    (void)acc;
    (void)row;
}

static void cool_row(void *ctx, const store_rowacc *acc, void *row)
{
    ((store_inbox *)ctx)->cool = acc->i64(row, 0) != 0;
}

/* On the reader thread, under read_db_lock.  The flag first, so that a
 * read after clearing it sees every transaction that ended before. */
int store_inbox_run(store_t *s, size_t max, uint64_t floor, store_inbox_flag flag, store_inbox *in,
                    rows_builder *keep)
{
    memset(in, 0, sizeof(*in));
    if (!store_has_inbox(s)) return 0;
    int rc = 0;
    if (flag == STORE_INBOX_HOT) rc = s->be->select(s, true, SQL_HOT, 0, NULL, ignore_row, NULL);
    if (flag == STORE_INBOX_COOL) rc = s->be->select(s, true, SQL_COOL, 0, NULL, cool_row, in);
    if (rc) return rc;
    char num[24];
    snprintf(num, sizeof num, "%zu", max);
    const char *p[1] = {num};
    inbox_read r = {keep, in, 0, 0, 0};
    rc = s->be->select(s, true, SQL_READ_JOBS, 1, p, job_row, &r);
    if (!rc) rc = s->be->select(s, true, SQL_READ_OUTCOMES, 1, p, outcome_row, &r);
    if (!rc) rc = s->be->select(s, true, SQL_READ_EVENTS, 1, p, event_row, &r);
    if (!rc && floor) {
        snprintf(num, sizeof num, "%llu", (unsigned long long)floor);
        rc = s->be->select(s, true, SQL_RAISE_IDS, 1, p, ignore_row, NULL);
    }
    return rc;
}

void store_inbox_free(store_inbox *in)
{
    free(in->jobs);
    free(in->outcomes);
    free(in->events);
    memset(in, 0, sizeof(*in));
}
