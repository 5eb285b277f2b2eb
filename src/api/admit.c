// SPDX-License-Identifier: Apache-2.0
/* Admission of submits: quotas and the memory budget (admit.h). */
#include "admit.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
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

void admit_init(admit_state *a, uint64_t budget)
{
    memset(a, 0, sizeof(*a));
    a->budget = budget;
    a->jobs_budget = budget / 100 * JOBS_SHARE_PCT;
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

int admit_check(admit_state *a, engine_t *e, const engine_submit_req *reqs, const bool *ok,
                size_t n, engine_err *err)
{
    engine_memory m;
    engine_memory_usage(e, &m);
    uint64_t cost = request_cost(reqs, ok, n);
    if (m.bytes + cost > a->jobs_budget) {
        a->refused_overloaded++;
        engine_errf(err, TENQ_EOVERLOADED, NULL,
                    "the server is at its memory budget: its jobs take %zu MiB of the %" PRIu64
                    " MiB they may; this request would add %" PRIu64
                    " KiB (submits resume as jobs finish)",
                    m.bytes >> 20, a->jobs_budget >> 20, (cost + 1023) >> 10);
        return TENQ_EOVERLOADED;
    }
    int rc = engine_quota_admit(e, reqs, ok, n, err);
    if (rc) a->refused_quota++;
    return rc;
}
