// SPDX-License-Identifier: Apache-2.0
/* Admission: whether a submit may make jobs now (admit.c).
 *
 * Two limits, checked before anything of a request is applied, so that a
 * refusal makes nothing (docs/SEMANTICS.md, "Quotas and backpressure"):
 *   - the quotas of tenants and queues (max_queued, max_queued_bytes:
 *     engine_quota_admit): 429 quota_exceeded naming the limit;
 *   - the server's memory budget (--memory-budget): when the jobs in
 *     memory, with the request's, would take more than their share of it,
 *     429 overloaded.
 * Both answers carry Retry-After.  Leases, outcomes and reads are never
 * refused by either: they free what the submits took. */
#ifndef TENQ_API_ADMIT_H
#define TENQ_API_ADMIT_H

#include "base/hash.h"
#include "base/htab.h"
#include "engine/engine.h"
#include "store/store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Seconds a refused submit is told to wait (Retry-After). */
#define ADMIT_RETRY_AFTER_S 1

typedef struct admit_state {
    uint64_t budget;      /* --memory-budget, resolved at start (bytes) */
    uint64_t jobs_budget; /* what the jobs may take of it */
    uint64_t args_budget; /* of which their args at most (--args-memory: engine args.c) */
    uint64_t refused_quota, refused_overloaded; /* submits refused, for /metrics */
    htab published; /* what admit_publish wrote last, by tenant or queue */
    hash_key hk;    /* its names' hash (names come from clients) */
} admit_state;

/* The budget of a server given `flag` bytes (0: chosen from the machine:
 * the least of half its RAM, 80% of the cgroup's memory.max and 60% of
 * RLIMIT_AS); `why` says how it was chosen, for the start's log line. */
uint64_t admit_budget_resolve(long long flag, char *why, size_t len);
void admit_init(admit_state *a, uint64_t budget, uint64_t args_memory);

void admit_free(admit_state *a);

/* Writes into b what each tenant and queue with a quota holds, where it
 * changed since the last call (and all of it after admit_forget): what
 * PostgreSQL's check of applications' transactions reads
 * (tenq.queued_usage).  Returns the rows written. */
size_t admit_publish(admit_state *a, engine_t *e, store_batch *b);
/* A new engine (a new term): the next admit_publish writes everything. */
void admit_forget(admit_state *a);

/* 0 when what a request would add to the memory the jobs take (cost
 * bytes: a kept event) fits the budget, else TENQ_EOVERLOADED (counted). */
int admit_memory(admit_state *a, engine_t *e, uint64_t cost, engine_err *err);
/* 0 when the n requests (those ok[i] marks; ok NULL: all) may be
 * submitted now, else TENQ_EQUOTA_EXCEEDED or TENQ_EOVERLOADED with *err
 * filled, and the refusal counted. */
int admit_check(admit_state *a, engine_t *e, const engine_submit_req *reqs, const bool *ok,
                size_t n, engine_err *err);

#endif
