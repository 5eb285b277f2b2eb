// SPDX-License-Identifier: Apache-2.0
/* Admission of submits: quotas and the memory budget (admit.h). */
#include "admit.h"

#include "base/hash.h"
#include "base/xalloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* What the jobs may take of the budget: the rest is for connections,
 * request and answer buffers, the stores' caches and the allocator's own
 * slack. */
#define JOBS_SHARE_PCT 80

/* The cgroup (v2) memory.max of this process, or 0 when none is set. */
static uint64_t cgroup_max(void)
{
    FILE *f = fopen("/sys/fs/cgroup/memory.max", "r");
    if (!f) return 0;
    char buf[64] = "";
    uint64_t v = 0;
    if (fgets(buf, sizeof buf, f) && strncmp(buf, "max", 3) != 0) v = strtoull(buf, NULL, 10);
    fclose(f);
    return v;
}

uint64_t admit_budget_resolve(long long flag, char *why, size_t len)
{
    if (flag > 0) {
        snprintf(why, len, "--memory-budget");
        return (uint64_t)flag;
    }
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    uint64_t ram = pages > 0 && psize > 0 ? (uint64_t)pages * (uint64_t)psize : 1ULL << 30;
    uint64_t budget = ram / 2;
    snprintf(why, len, "half of the RAM (%" PRIu64 " MiB)", ram >> 20);
    uint64_t cg = cgroup_max();
    if (cg && cg / 10 * 8 < budget) {
        budget = cg / 10 * 8;
        snprintf(why, len, "80%% of the cgroup's memory.max (%" PRIu64 " MiB)", cg >> 20);
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        (uint64_t)rl.rlim_cur / 10 * 6 < budget) {
        budget = (uint64_t)rl.rlim_cur / 10 * 6;
        snprintf(why, len, "60%% of RLIMIT_AS (%" PRIu64 " MiB)", (uint64_t)rl.rlim_cur >> 20);
    }
    return budget;
}

void admit_init(admit_state *a, uint64_t budget, uint64_t args_memory)
{
    memset(a, 0, sizeof(*a));
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    a->hk.k0 = hash_u64((uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32));
    a->hk.k1 = hash_u64(a->hk.k0 ^ (uint64_t)ts.tv_sec);
    a->budget = budget;
    a->jobs_budget = budget / 100 * JOBS_SHARE_PCT;
    a->args_budget = args_memory ? args_memory : budget / 4;
}

/* What the requests would add to the jobs' memory, at most (as if every
 * one were a new job with its own extra fields). */
static uint64_t request_cost(const engine_submit_req *reqs, const bool *ok, size_t n)
{
    uint64_t c = 0;
    for (size_t i = 0; i < n; i++) {
        if (ok && !ok[i]) continue;
        c += engine_job_memory_cost(&reqs[i]);
    }
    return c;
}

/* ---- what applications' transactions check against --------------------------------- */

typedef struct usage_row {
    bool queue;
    uint64_t queued, bytes;
    char name[];
} usage_row;

typedef struct usage_key {
    bool queue;
    const char *name;
} usage_key;

static bool usage_eq(const void *item, const void *key)
{
    const usage_row *r = item;
    const usage_key *k = key;
    return r->queue == k->queue && strcmp(r->name, k->name) == 0;
}

typedef struct publish_ctx {
    admit_state *a;
    store_batch *b;
    size_t written;
} publish_ctx;

static void publish_one(publish_ctx *p, bool queue, const char *name, bool has_quota,
                        const engine_counts *c)
{
    if (!has_quota) return;
    uint64_t h = hash_bytes(&p->a->hk, name, strlen(name)) ^ (queue ? 0x9e37 : 0);
    usage_key k = {queue, name};
    usage_row *r = htab_find(&p->a->published, h, usage_eq, &k);
    if (r && r->queued == c->queued && r->bytes == c->queued_bytes) return;
    if (!r) {
        size_t len = strlen(name);
        r = xcalloc(1, sizeof(*r) + len + 1);
        r->queue = queue;
        memcpy(r->name, name, len + 1);
        if (htab_insert(&p->a->published, h, r) != 0) xalloc_die();
    }
    r->queued = c->queued;
    r->bytes = c->queued_bytes;
    store_batch_usage(p->b, queue, name, r->queued, r->bytes);
    p->written++;
}

static void publish_tenant(void *ctx, const char *name, const engine_tenant_settings *s,
                           const engine_counts *c)
{
    publish_one(ctx, false, name, s->max_queued != ENGINE_UNLIMITED || s->max_queued_bytes > 0, c);
}

static void publish_queue(void *ctx, const char *name, const engine_queue_settings *s,
                          const engine_counts *c)
{
    publish_one(ctx, true, name, s->max_queued != ENGINE_UNLIMITED || s->max_queued_bytes > 0, c);
}

size_t admit_publish(admit_state *a, engine_t *e, store_batch *b)
{
    publish_ctx p = {a, b, 0};
    engine_foreach_tenant(e, 0, publish_tenant, &p);
    engine_foreach_queue(e, 0, publish_queue, &p);
    return p.written;
}

void admit_forget(admit_state *a)
{
    for (size_t i = 0; i < htab_cap(&a->published); i++) free(a->published.slots[i].item);
    htab_free(&a->published);
    memset(&a->published, 0, sizeof(a->published));
}

void admit_free(admit_state *a)
{
    admit_forget(a);
}

int admit_memory(admit_state *a, engine_t *e, uint64_t cost, engine_err *err)
{
    engine_memory m;
    engine_memory_usage(e, &m);
    if (m.bytes + cost <= a->jobs_budget) return 0;
    a->refused_overloaded++;
    engine_errf(err, TENQ_EOVERLOADED, NULL,
                "the server is at its memory budget: its jobs take %zu MiB of the %" PRIu64
                " MiB they may; this request would add %" PRIu64
                " KiB (submits resume as jobs finish)",
                m.bytes >> 20, a->jobs_budget >> 20, (cost + 1023) >> 10);
    return TENQ_EOVERLOADED;
}

int admit_check(admit_state *a, engine_t *e, const engine_submit_req *reqs, const bool *ok,
                size_t n, engine_err *err)
{
    int rc = admit_memory(a, e, request_cost(reqs, ok, n), err);
    if (rc) return rc;
    rc = engine_quota_admit(e, reqs, ok, n, err);
    if (rc) a->refused_quota++;
    return rc;
}
